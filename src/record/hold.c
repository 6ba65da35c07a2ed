/* hold.c: holding a target still while its probes are released; see hold.h.
 *
 * Not here: the probes themselves (the engines), the target's lifetime
 * (target.c).
 */
#define RV_LOG_DOMAIN "hold"
#include "record/hold.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec pause = { 0, ms * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

/* A thread's state letter from /proc/PID/task/TID/stat ('?' when gone). */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[96], buf[512], *paren;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	len = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (len <= 0)
		return '?';
	buf[len] = '\0';
	/* the name may hold spaces and parentheses: the state follows the last ')' */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] ? paren[2] : '?';
}

/* Calls visit for each thread of pid; false when pid has no task directory. */
static bool for_each_thread(pid_t pid, bool (*visit)(void *ctx, pid_t tid), void *ctx)
{
	char path[64];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((de = readdir(dir))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (!visit(ctx, (pid_t)tid))
			break;
	}
	closedir(dir);
	return true;
}

struct still_check {
	pid_t pid;
	bool all_still;
};

static bool check_still(void *ctx, pid_t tid)
{
	struct still_check *c = ctx;
	char state = thread_state(c->pid, tid);

	/* stopped, traced, dead, or gone */
	if (state != 'T' && state != 't' && state != 'Z' && state != 'X' && state != '?') {
		c->all_still = false;
		return false;
	}
	return true;
}

static bool process_still(pid_t pid)
{
	struct still_check c = { .pid = pid, .all_still = true };

	return !for_each_thread(pid, check_still, &c) || c.all_still;
}

/* ---- SIGSTOP / SIGCONT ---- */

static bool hold_by_sigstop(struct rv_hold *h, pid_t pid, unsigned long long deadline)
{
	if (process_still(pid))
		return false; /* stopped already (or gone): not ours to continue */
	if (h->nr_stopped >= sizeof(h->stopped) / sizeof(h->stopped[0]) || kill(pid, SIGSTOP))
		return false;
	h->stopped[h->nr_stopped++] = pid;
	while (!process_still(pid) && now_ms() < deadline)
		sleep_ms(2);
	return true;
}

/* ---- ptrace seize and interrupt ---- */

static bool has_thread(const struct rv_hold *h, pid_t tid)
{
	for (size_t i = 0; i < h->nr_threads; i++)
		if (h->threads[i].tid == tid)
			return true;
	return false;
}

static bool add_thread(struct rv_hold *h, pid_t tid)
{
	if (h->nr_threads == h->cap_threads) {
		size_t cap = h->cap_threads ? h->cap_threads * 2 : 16;
		struct rv_hold_thread *grown = realloc(h->threads, cap * sizeof(*grown));

		if (!grown)
			return false;
		h->threads = grown;
		h->cap_threads = cap;
	}
	h->threads[h->nr_threads++] = (struct rv_hold_thread){ .tid = tid };
	return true;
}

struct seize_scan {
	struct rv_hold *h;
	size_t added;
	int first_error; /* errno of a seize refused outright */
};

static bool seize_thread(void *ctx, pid_t tid)
{
	struct seize_scan *scan = ctx;

	if (has_thread(scan->h, tid))
		return true;
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACECLONE)) {
		if (errno != ESRCH && !scan->first_error)
			scan->first_error = errno;
		return true; /* gone, or a thread we hold already through a clone event */
	}
	if (!add_thread(scan->h, tid)) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return true;
	}
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	scan->added++;
	return true;
}

/* Waits for thread i's stop; a new thread it reports (a clone) is added,
 * already attached, and waited for in turn. false on timeout. */
static bool wait_thread_stop(struct rv_hold *h, size_t i, unsigned long long deadline)
{
	for (;;) {
		int status = 0;
		pid_t r = waitpid(h->threads[i].tid, &status, __WALL | WNOHANG);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			h->threads[i].tid = 0; /* gone, or never ours */
			return true;
		}
		if (r == 0) {
			if (now_ms() >= deadline)
				return false;
			sleep_ms(1);
			continue;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			h->threads[i].tid = 0;
			return true;
		}
		if (!WIFSTOPPED(status))
			continue;
		if ((status >> 16) == PTRACE_EVENT_CLONE) {
			unsigned long child = 0;

			if (!ptrace(PTRACE_GETEVENTMSG, h->threads[i].tid, NULL, &child) && child &&
			    !has_thread(h, (pid_t)child))
				add_thread(h, (pid_t)child); /* its own first stop comes */
		} else if ((status >> 16) == 0) {
			/* a signal came first: the thread is still; the signal
			 * is given back when it goes */
			h->threads[i].resume_signal = WSTOPSIG(status);
		}
		return true;
	}
}

/* false when the process cannot be seized at all. */
static bool hold_by_ptrace(struct rv_hold *h, pid_t pid, unsigned long long deadline)
{
	size_t first = h->nr_threads;
	struct seize_scan scan = { .h = h };

	do {
		scan.added = 0;
		if (!for_each_thread(pid, seize_thread, &scan))
			return h->nr_threads > first;
	} while (scan.added && now_ms() < deadline);
	if (h->nr_threads == first)
		return false;
	if (scan.first_error)
		rv_debug("some threads of process %d could not be seized: %s", (int)pid,
			 strerror(scan.first_error));
	/* threads added by clone events are appended and waited for too */
	for (size_t i = first; i < h->nr_threads; i++)
		if (h->threads[i].tid && !wait_thread_stop(h, i, deadline))
			rv_debug("thread %d did not stop in time", (int)h->threads[i].tid);
	return true;
}

size_t rv_hold_begin(struct rv_hold *h, const struct rv_target *t, int timeout_ms)
{
	return rv_hold_begin_also(h, t, NULL, 0, timeout_ms);
}

size_t rv_hold_begin_also(struct rv_hold *h, const struct rv_target *t, const pid_t *others,
			  size_t nr_others, int timeout_ms)
{
	unsigned long long deadline = now_ms() + (unsigned long long)timeout_ms;
	size_t held = 0;

	memset(h, 0, sizeof(*h));
	/* the target's children: their parent is the target, which must not
	 * see them stop, so seized or left be */
	for (size_t i = 0; i < nr_others; i++)
		if (others[i] > 0 && !kill(others[i], 0) && hold_by_ptrace(h, others[i], deadline))
			held++;
	for (size_t i = 0; i < t->nr_pids; i++) {
		pid_t pid = t->pids[i];

		if (t->exited || kill(pid, 0))
			continue;
		/* A child of ours is stopped the plain way: it is nobody else's
		 * to see; another's process is seized, which no parent sees. */
		if (!t->spawned && hold_by_ptrace(h, pid, deadline))
			held++;
		else if (hold_by_sigstop(h, pid, deadline))
			held++;
	}
	return held;
}

void rv_hold_end(struct rv_hold *h)
{
	for (size_t i = 0; i < h->nr_threads; i++) {
		struct rv_hold_thread *th = &h->threads[i];

		if (!th->tid)
			continue;
		/* A thread detaches only once stopped: one that was slow to stop
		 * (a long system call) gets a little longer. */
		if (ptrace(PTRACE_DETACH, th->tid, NULL, (void *)(uintptr_t)th->resume_signal) &&
		    errno == ESRCH && wait_thread_stop(h, i, now_ms() + 200)) {
			th = &h->threads[i]; /* a clone it reported may have moved them */
			if (th->tid)
				ptrace(PTRACE_DETACH, th->tid, NULL,
				       (void *)(uintptr_t)th->resume_signal);
		}
	}
	for (size_t i = 0; i < h->nr_stopped; i++)
		kill(h->stopped[i], SIGCONT);
	free(h->threads);
	memset(h, 0, sizeof(*h));
}

/* ---- releasing probes ---- */

struct release_job {
	rv_hold_release_fn release;
	void *ctx;
	int done_fd;
};

static void *release_thread(void *arg)
{
	struct release_job *job = arg;
	uint64_t one = 1;

	job->release(job->ctx);
	if (write(job->done_fd, &one, sizeof(one)) < 0)
		rv_debug("cannot signal the end of the release: %s", strerror(errno));
	return NULL;
}

/* Reads pending signals; true when one asks to stop. */
static bool stop_requested(int fd)
{
	struct signalfd_siginfo info;
	bool stop = false;

	while (fd >= 0 && read(fd, &info, sizeof(info)) == (ssize_t)sizeof(info))
		if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM ||
		    info.ssi_signo == SIGHUP)
			stop = true;
	return stop;
}

void rv_hold_release(const struct rv_target *t, size_t nr_probes, rv_hold_release_fn release,
		     void *ctx, int stop_fd, struct rv_hold_result *out)
{
	rv_hold_release_also(t, NULL, 0, nr_probes, release, ctx, stop_fd, out);
}

void rv_hold_release_also(const struct rv_target *t, const pid_t *others, size_t nr_others,
			  size_t nr_probes, rv_hold_release_fn release, void *ctx, int stop_fd,
			  struct rv_hold_result *out)
{
	unsigned long long start = now_ms(), held_at = 0;
	struct release_job *job = malloc(sizeof(*job));
	bool noticed = false;
	struct rv_hold hold;
	pthread_t thread;

	memset(out, 0, sizeof(*out));
	memset(&hold, 0, sizeof(hold));
	if (job) {
		*job = (struct release_job){ .release = release, .ctx = ctx };
		job->done_fd = eventfd(0, EFD_CLOEXEC);
	}
	if (!job || job->done_fd < 0 || pthread_create(&thread, NULL, release_thread, job)) {
		/* no thread: release here, unguarded */
		if (job && job->done_fd >= 0)
			close(job->done_fd);
		free(job);
		release(ctx);
		out->finished = true;
		out->elapsed_ms = now_ms() - start;
		return;
	}
	for (;;) {
		struct pollfd fds[2] = { { .fd = job->done_fd, .events = POLLIN },
					 { .fd = stop_fd, .events = POLLIN } };
		unsigned long long elapsed = now_ms() - start;
		long wait_ms = 100;

		if (!out->held)
			wait_ms =
				elapsed < RV_HOLD_GRACE_MS ? (long)(RV_HOLD_GRACE_MS - elapsed) : 0;
		else if (!noticed && elapsed < RV_HOLD_NOTICE_MS)
			wait_ms = (long)(RV_HOLD_NOTICE_MS - elapsed);
		if (poll(fds, stop_fd >= 0 ? 2 : 1, (int)wait_ms) < 0 && errno != EINTR)
			sleep_ms(1);
		if (fds[0].revents & POLLIN) {
			out->finished = true;
			break;
		}
		if ((fds[1].revents & POLLIN) && stop_requested(stop_fd))
			out->interrupted = true;
		elapsed = now_ms() - start;
		if (!out->held && (elapsed >= RV_HOLD_GRACE_MS || out->interrupted)) {
			out->held = true;
			held_at = now_ms();
			if (rv_hold_begin_also(&hold, t, others, nr_others, 500))
				rv_debug("holding the target still while %zu probes are released",
					 nr_probes);
		}
		if (!noticed && elapsed >= RV_HOLD_NOTICE_MS) {
			rv_note("detaching %zu probes...", nr_probes);
			noticed = true;
		}
		if (out->held && now_ms() - held_at >= RV_HOLD_MAX_MS)
			break;
	}
	if (out->held)
		rv_hold_end(&hold);
	if (out->finished) {
		pthread_join(thread, NULL);
		close(job->done_fd);
		free(job);
	} else {
		/* the kernel still holds the release: it ends on its own, later */
		pthread_detach(thread);
		rv_warn("the kernel has not released the probes after %llu ms; they go when the "
			"program next stops or exits",
			now_ms() - start);
	}
	out->elapsed_ms = now_ms() - start;
}
