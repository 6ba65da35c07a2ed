/* target.c: starting, attaching to and following target processes; see target.h. */
#define RV_LOG_DOMAIN "target"
#include "record/target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/picker.h"
#include "util/inherit.h"
#include "util/log.h"
#include "util/program.h"

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000;
}

int rv_target_spawn(struct rv_target *t, char *const argv[], struct rv_error *err)
{
	char path[PATH_MAX];
	int status, ret, errpipe[2], child_errno = 0;
	pid_t pid;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < sizeof(t->pidfds) / sizeof(t->pidfds[0]); i++)
		t->pidfds[i] = -1;
	ret = rv_program_find(argv[0], path, sizeof(path), err);
	if (ret)
		return ret;
	if (pipe2(errpipe, O_CLOEXEC))
		return rv_error_set(err, errno, "cannot create a pipe: %s", strerror(errno));

	pid = fork();
	if (pid < 0) {
		ret = errno;
		close(errpipe[0]);
		close(errpipe[1]);
		return rv_error_set(err, ret, "cannot start '%s': %s", argv[0], strerror(ret));
	}
	if (pid == 0) {
		/* The child: stop at exec (PTRACE_TRACEME turns a successful execve
		 * into a SIGTRAP stop), or report why exec failed through the pipe. */
		close(errpipe[0]);
		/* rearview blocks the signals it waits for and ignores SIGPIPE;
		 * the program must not inherit that, but the mask and SIGPIPE's
		 * disposition rearview was started with (util/inherit.h).
		 * Restored once traced: a Ctrl-C that came since the fork then
		 * stops the child for rearview (which got it too, and passes it
		 * on to the program once it runs) instead of killing it before
		 * it started. */
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0) {
			rv_inherit_restore();
			execv(path, argv);
		}
		child_errno = errno;
		if (write(errpipe[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(errpipe[1]);
	/* Waited for before the pipe is read: a child stopped at a signal
	 * before its exec waits for rearview. */
	for (;;) {
		if (waitpid(pid, &status, 0) != pid) {
			if (errno == EINTR)
				continue;
			ret = errno;
			close(errpipe[0]);
			return rv_error_set(err, ret, "cannot wait for '%s': %s", argv[0],
					    strerror(ret));
		}
		if (!WIFSTOPPED(status) || WSTOPSIG(status) == SIGTRAP)
			break;
		/* a signal before the exec (the child is still rearview's
		 * code): dropped; a stop signal rearview got too is passed on
		 * to the program by the session */
		rv_debug("signal %d before '%s' started, not delivered", WSTOPSIG(status), argv[0]);
		if (ptrace(PTRACE_CONT, pid, NULL, NULL)) {
			ret = errno;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(errpipe[0]);
			return rv_error_set(err, ret, "cannot start '%s': %s", argv[0],
					    strerror(ret));
		}
	}
	/* After the exec the pipe is closed (O_CLOEXEC); a failed exec wrote
	 * its errno there and exited. */
	if (read(errpipe[0], &child_errno, sizeof(child_errno)) == (ssize_t)sizeof(child_errno)) {
		close(errpipe[0]);
		return rv_error_set(err, child_errno, "cannot run '%s': %s", argv[0],
				    strerror(child_errno));
	}
	close(errpipe[0]);
	if (!WIFSTOPPED(status)) {
		return rv_error_set(err, ECHILD, "'%s' ended before it started (status 0x%x)",
				    argv[0], status);
	}
	t->pids[0] = pid;
	t->nr_pids = 1;
	t->spawned = true;
	rv_debug("started '%s' as pid %d, stopped at its first instruction", path, (int)pid);
	return 0;
}

int rv_target_release(struct rv_target *t, struct rv_error *err)
{
	if (!t->spawned || t->released)
		return 0;
	if (ptrace(PTRACE_DETACH, t->pids[0], NULL, NULL))
		return rv_error_set(err, errno, "cannot start the traced program: %s",
				    strerror(errno));
	t->released = true;
	return 0;
}

void rv_target_kill(struct rv_target *t)
{
	int status;

	if (!t->spawned || t->exited)
		return;
	kill(t->pids[0], SIGKILL);
	while (waitpid(t->pids[0], &status, 0) < 0 && errno == EINTR)
		;
	t->exited = true;
	t->exit_status = status;
}

int rv_target_attach(struct rv_target *t, const pid_t *pids, size_t nr_pids, struct rv_error *err)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < sizeof(t->pidfds) / sizeof(t->pidfds[0]); i++)
		t->pidfds[i] = -1;
	if (nr_pids > sizeof(t->pids) / sizeof(t->pids[0]))
		return rv_error_set(err, E2BIG, "too many processes");
	for (size_t i = 0; i < nr_pids; i++) {
		if (kill(pids[i], 0) && errno == ESRCH) {
			for (size_t j = 0; j < i; j++)
				close(t->pidfds[j]);
			return rv_error_set(err, ESRCH,
					    "no process with PID %d (list processes with 'ps ax', "
					    "or run 'rearview attach' without -p to choose one)",
					    (int)pids[i]);
		}
		t->pids[i] = pids[i];
		t->pidfds[i] = open_pidfd(pids[i]);
	}
	t->nr_pids = nr_pids;
	return 0;
}

/* The kernel's flag for its own threads (include/linux/sched.h). */
#define PF_KTHREAD 0x00200000u

bool rv_target_is_kernel_thread(pid_t pid)
{
	char path[64], line[1024];
	unsigned long flags = 0;
	const char *paren;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	len = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[len] = '\0';
	/* the name in parentheses may hold anything, ')' too: the fields
	 * after it are state, ppid, pgrp, session, tty_nr, tpgid, flags */
	paren = strrchr(line, ')');
	if (!paren || sscanf(paren + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return (flags & PF_KTHREAD) != 0;
}

int rv_target_refuse_kernel_threads(const pid_t *pids, size_t nr_pids, struct rv_error *err)
{
	for (size_t i = 0; i < nr_pids; i++) {
		char comm[64];

		if (!rv_target_is_kernel_thread(pids[i]))
			continue;
		rv_target_comm(pids[i], comm, sizeof(comm));
		return rv_error_set(err, EINVAL,
				    "%d (%s) is a kernel thread: it runs only kernel code, with no "
				    "program of its own, and rearview records the kernel only "
				    "with --trace-include-kernel (as root); add it, or attach to a "
				    "user process (list them with 'ps ax', or run 'rearview "
				    "attach' without -p to choose one)",
				    (int)pids[i], comm);
	}
	return 0;
}

bool rv_target_poll_exit(struct rv_target *t)
{
	int status;

	if (t->exited)
		return true;
	if (t->spawned) {
		pid_t r = waitpid(t->pids[0], &status, WNOHANG);

		if (r == t->pids[0] && (WIFEXITED(status) || WIFSIGNALED(status))) {
			t->exited = true;
			t->exit_status = status;
		}
		return t->exited;
	}
	for (size_t i = 0; i < t->nr_pids; i++) {
		if (kill(t->pids[i], 0) == 0 || errno != ESRCH) {
			/* A zombie still answers kill(0); check its state. */
			char path[64], state = '?';
			FILE *f;

			snprintf(path, sizeof(path), "/proc/%d/stat", (int)t->pids[i]);
			f = fopen(path, "re");
			if (f) {
				int scanned = fscanf(f, "%*d (%*[^)]) %c", &state);

				fclose(f);
				if (scanned == 1 && state != 'Z' && state != 'X')
					return false;
			}
		}
	}
	t->exited = true;
	return true;
}

int rv_target_wait(struct rv_target *t)
{
	int status;

	if (!t->spawned || t->exited)
		return 0;
	while (waitpid(t->pids[0], &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	t->exited = true;
	t->exit_status = status;
	return 0;
}

/* ---- the end: waiting for a spawned program, within reason ---- */

enum wait_result {
	WAIT_EXITED,	/* the program exited (reaped, t->exit_status) */
	WAIT_SIGNALLED, /* a stop signal came on stop_fd */
	WAIT_TIMEOUT,	/* deadline_ms passed */
};

bool rv_target_read_stop_signals(int fd, int *which)
{
	struct signalfd_siginfo info;
	bool stop = false;

	if (fd < 0)
		return false;
	while (read(fd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
		if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM ||
		    info.ssi_signo == SIGHUP) {
			stop = true;
			*which = (int)info.ssi_signo;
		}
	}
	return stop;
}

/* Waits for the spawned program's exit or a stop signal on stop_fd (-1:
 * none), until deadline_ms (CLOCK_MONOTONIC; 0: no deadline). */
static enum wait_result wait_exit_or_signal(struct rv_target *t, int stop_fd,
					    unsigned long long deadline_ms, int *which)
{
	for (;;) {
		unsigned long long now;
		int timeout_ms = 100, ready;

		if (rv_target_poll_exit(t))
			return WAIT_EXITED;
		now = now_ms();
		if (deadline_ms && now >= deadline_ms)
			return WAIT_TIMEOUT;
		if (deadline_ms && deadline_ms - now < (unsigned long long)timeout_ms)
			timeout_ms = (int)(deadline_ms - now);
		if (stop_fd < 0) {
			struct timespec pause = { 0, 10 * 1000 * 1000 };

			nanosleep(&pause, NULL);
			continue;
		}
		/* the program's exit wakes this too: SIGCHLD is read there */
		ready = poll(&(struct pollfd){ .fd = stop_fd, .events = POLLIN }, 1, timeout_ms);
		if (ready < 0 && errno != EINTR)
			stop_fd = -1; /* not a descriptor to wait on: wait by the clock */
		else if (ready > 0 && rv_target_read_stop_signals(stop_fd, which))
			return WAIT_SIGNALLED;
	}
}

/* A stop signal (which) ended the wait: a second one within
 * RV_TARGET_KILL_WINDOW_MS kills the program, else it is left running. */
static void stop_waiting(struct rv_target *t, int stop_fd, int which)
{
	pid_t pid = t->pids[0];
	int again = 0;

	switch (wait_exit_or_signal(t, stop_fd, now_ms() + RV_TARGET_KILL_WINDOW_MS, &again)) {
	case WAIT_EXITED:
		return; /* it went by itself (the terminal's Ctrl-C reached it too) */
	case WAIT_SIGNALLED:
		kill(pid, SIGKILL);
		/* bounded: a process in an uninterruptible sleep dies when it
		 * wakes */
		if (wait_exit_or_signal(t, -1, now_ms() + RV_TARGET_KILL_WAIT_MS, &again) ==
		    WAIT_EXITED) {
			rv_note("killed %d", (int)pid);
			return;
		}
		rv_note("sent SIGKILL to %d, which has not exited yet: not waiting for it",
			(int)pid);
		break;
	case WAIT_TIMEOUT:
		rv_note("%s: not waiting for %d, which runs on (end it with `kill %d`)",
			strsignal(which), (int)pid, (int)pid);
		break;
	}
	t->left_running = which;
}

void rv_target_end(struct rv_target *t, int stop_signal, int stop_fd)
{
	if (t->spawned && t->released && !t->exited) {
		unsigned long long quiet_from = now_ms();
		enum wait_result r = WAIT_TIMEOUT;
		int which = 0;

		if (stop_signal) {
			unsigned long long until =
				(t->stop_signal_ms ? t->stop_signal_ms : now_ms()) +
				RV_TARGET_GRACE_MS;

			r = wait_exit_or_signal(t, stop_fd, until, &which);
			/* only rearview was signalled (a program of the
			 * terminal's got it too, and had its time): pass it on,
			 * once */
			if (r == WAIT_TIMEOUT && !kill(t->pids[0], stop_signal))
				quiet_from = now_ms();
		}
		if (r == WAIT_TIMEOUT)
			r = wait_exit_or_signal(t, stop_fd, quiet_from + RV_TARGET_QUIET_MS,
						&which);
		if (r == WAIT_TIMEOUT) {
			char comm[64];

			rv_target_comm(t->pids[0], comm, sizeof(comm));
			rv_note("waiting for %s [%d] to exit (Ctrl-C %sto stop "
				"waiting and leave it running; twice %sto kill it)",
				comm, (int)t->pids[0], stop_signal ? "again " : "",
				stop_signal ? "more " : "");
			r = wait_exit_or_signal(t, stop_fd, 0, &which);
		}
		if (r == WAIT_SIGNALLED)
			stop_waiting(t, stop_fd, which);
	}
	for (size_t i = 0; i < t->nr_pids; i++) {
		if (t->pidfds[i] >= 0)
			close(t->pidfds[i]);
		t->pidfds[i] = -1;
	}
}

int rv_exit_code_from_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

void rv_target_comm(pid_t pid, char *out, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(out, size, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)size, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* ---- choosing a process interactively ---- */

struct process_line {
	pid_t pid;
	char text[256];
};

static int list_processes(struct process_line **out, size_t *count)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	struct process_line *lines = NULL;
	size_t n = 0, cap = 0;
	pid_t self = getpid();

	if (!proc)
		return -errno;
	while ((de = readdir(proc))) {
		char path[64], cmdline[200];
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		FILE *f;
		size_t len;

		if (*end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		len = fread(cmdline, 1, sizeof(cmdline) - 1, f);
		fclose(f);
		if (len == 0)
			continue; /* kernel threads have no command line */
		for (size_t i = 0; i < len; i++)
			if (cmdline[i] == '\0' || cmdline[i] == '\n')
				cmdline[i] = ' ';
		cmdline[len] = '\0';
		if (n == cap) {
			struct process_line *grown;

			cap = cap ? cap * 2 : 256;
			grown = realloc(lines, cap * sizeof(*lines));
			if (!grown) {
				free(lines);
				closedir(proc);
				return -ENOMEM;
			}
			lines = grown;
		}
		lines[n].pid = (pid_t)pid;
		snprintf(lines[n].text, sizeof(lines[n].text), "%7ld  %s", pid, cmdline);
		n++;
	}
	closedir(proc);
	*out = lines;
	*count = n;
	return 0;
}

int rv_target_pick(pid_t *pid, int stop_fd, struct rv_error *err)
{
	static const struct rv_pick_question question = {
		.noun = "process",
		.question = "Record which process?",
		.fzf_prompt = "process to record> ",
		.otherwise = "use -p PID",
	};
	struct process_line *lines = NULL;
	const char **texts;
	size_t n = 0, chosen;
	int ret = list_processes(&lines, &n);

	if (ret)
		return rv_error_set(err, -ret, "cannot list processes: %s", strerror(-ret));
	if (n == 0) {
		free(lines);
		return rv_error_set(err, ESRCH, "no processes to record");
	}
	texts = malloc(n * sizeof(*texts));
	if (!texts) {
		free(lines);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		texts[i] = lines[i].text;
	ret = rv_pick(&question, texts, n, stop_fd, &chosen, err);
	if (!ret)
		*pid = lines[chosen].pid;
	free(texts);
	free(lines);
	return ret;
}
