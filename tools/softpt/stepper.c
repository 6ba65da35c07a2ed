/* stepper.c: the ptrace loop behind softpt.
 *
 * Every thread alternates between two states. In user space it has a pending
 * instruction (ip0), decoded before each PTRACE_SINGLESTEP, and the stop that
 * follows tells where it went. In the kernel (after a system call retired or
 * a caught signal was delivered) the next single-step stop is the return to
 * user space, before any user instruction executed there.
 */
#include "stepper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct thread {
	pid_t tid, pid, parent_tid;
	bool started; /* thread_begin was reported */
	bool in_user; /* executing user code (else: in the kernel) */
	uint64_t ip0; /* the pending instruction when in_user */
	struct insn_info insn;
	uint64_t step_start_ns;
	int mem_fd; /* the process's /proc/PID/mem, shared by its threads */
};

struct stepper {
	const struct stepper_ops *ops;
	void *ctx;
	struct insn_cache *cache;
	struct thread *threads;
	size_t nr_threads, cap_threads;
	pid_t leader;
	int mem_fd;
	struct stepper_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct thread *find_thread(struct stepper *s, pid_t tid)
{
	for (size_t i = 0; i < s->nr_threads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static struct thread *add_thread(struct stepper *s, pid_t tid, pid_t pid, pid_t parent_tid)
{
	if (s->nr_threads == s->cap_threads) {
		size_t cap = s->cap_threads ? s->cap_threads * 2 : 8;
		struct thread *t = realloc(s->threads, cap * sizeof(*t));
		if (!t)
			return NULL;
		s->threads = t;
		s->cap_threads = cap;
	}
	struct thread *t = &s->threads[s->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	t->parent_tid = parent_tid;
	return t;
}

static void remove_thread(struct stepper *s, struct thread *t)
{
	*t = s->threads[--s->nr_threads];
}

static int read_ip(pid_t tid, uint64_t *ip)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user_regs_struct, rip), 0);
	if (v == -1 && errno)
		return -1;
	*ip = (uint64_t)v;
	return 0;
}

static long syscall_number(pid_t tid)
{
	errno = 0;
	long v = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user_regs_struct, orig_rax), 0);
	return v == -1 && errno ? -1 : v;
}

/* Decodes the thread's pending instruction, from the cache when it can. */
static int prepare(struct stepper *s, struct thread *t, struct rv_error *err)
{
	const struct insn_info *info = insn_cache_find(s->cache, t->ip0);

	if (!info) {
		uint8_t code[16];
		ssize_t n = pread(s->mem_fd, code, sizeof(code), (off_t)t->ip0);
		if (n < 0) {
			/* The instruction may end right at the end of its mapping. */
			size_t to_page_end = 4096 - (t->ip0 & 4095);
			n = pread(s->mem_fd, code, to_page_end, (off_t)t->ip0);
		}
		if (n <= 0)
			return rv_error_set(
				err, EIO, "cannot read the instruction at 0x%llx of thread %d: %s",
				(unsigned long long)t->ip0, t->tid,
				n < 0 ? strerror(errno) : "nothing there");
		info = insn_cache_decode(s->cache, t->ip0, code, (size_t)n);
		if (!info)
			return rv_error_set(err, EILSEQ,
					    "cannot decode the instruction at 0x%llx of thread %d",
					    (unsigned long long)t->ip0, t->tid);
	}
	t->insn = *info;
	return 0;
}

static int step(struct stepper *s, struct thread *t, int sig, struct rv_error *err)
{
	if (t->in_user && t->insn.cls == PTGEN_SYSCALL)
		t->step_start_ns = now_ns();
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, sig) < 0) {
		if (errno == ESRCH) /* killed meanwhile; its exit is reported next */
			return 0;
		return rv_error_set(err, EIO, "cannot single-step thread %d: %s", t->tid,
				    strerror(errno));
	}
	s->stats.steps++;
	return 0;
}

static int open_mem(struct stepper *s, pid_t pid, struct rv_error *err)
{
	char path[64];

	if (s->mem_fd >= 0)
		close(s->mem_fd);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	s->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->mem_fd < 0)
		return rv_error_set(err, EIO, "cannot open %s: %s", path, strerror(errno));
	return 0;
}

static bool changes_mappings(long nr)
{
	switch (nr) {
	case SYS_mmap:
	case SYS_munmap:
	case SYS_mprotect:
	case SYS_mremap:
	case SYS_shmat:
	case SYS_shmdt:
	case SYS_remap_file_pages:
	case SYS_pkey_mprotect:
		return true;
	default:
		return false;
	}
}

/* The system call at ip0 retired: report it and whatever it changed. */
static int retire_syscall(struct stepper *s, struct thread *t, struct rv_error *err)
{
	uint64_t ns = now_ns() - t->step_start_ns;
	long nr = syscall_number(t->tid);

	t->in_user = false;
	if (s->ops->retire(s->ctx, t->tid, t->ip0, &t->insn, 0, ns))
		return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	if (changes_mappings(nr)) {
		insn_cache_clear(s->cache);
		if (s->ops->maps_changed(s->ctx, t->pid, false))
			return rv_error_set(err, EIO, "recording the mappings of %d failed",
					    t->pid);
	}
	return 0;
}

static int resume_user(struct stepper *s, struct thread *t, uint64_t ip, struct rv_error *err)
{
	t->in_user = true;
	t->ip0 = ip;
	if (s->ops->resume(s->ctx, t->tid, ip))
		return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	return 0;
}

/* The pending instruction completed and the thread went to ip (a system
 * call: it is in the kernel, ip is where it will come back). */
static int retire_pending(struct stepper *s, struct thread *t, uint64_t ip, struct rv_error *err)
{
	if (t->insn.cls == PTGEN_SYSCALL)
		return retire_syscall(s, t, err);
	if (s->ops->retire(s->ctx, t->tid, t->ip0, &t->insn, ip, 0))
		return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	t->ip0 = ip;
	return 0;
}

/* A single-step stop: the pending instruction executed, or the thread came
 * back from the kernel. */
static int on_step(struct stepper *s, struct thread *t, struct rv_error *err)
{
	uint64_t ip;

	if (read_ip(t->tid, &ip))
		return errno == ESRCH
			       ? 0
			       : rv_error_set(err, EIO, "cannot read thread %d's registers: %s",
					      t->tid, strerror(errno));
	if (!t->in_user) {
		if (resume_user(s, t, ip, err))
			return -1;
	} else if (ip == t->ip0 && t->insn.rep_string) {
		/* One more iteration of a REP string instruction: not retired yet. */
	} else {
		if (retire_pending(s, t, ip, err))
			return -1;
		/* A system call: the stop is its return to user space. */
		if (!t->in_user && resume_user(s, t, ip, err))
			return -1;
	}
	if (prepare(s, t, err))
		return -1;
	return step(s, t, 0, err);
}

/* The value of a "Name:" line of /proc/PID/status, or false. */
static bool status_field(pid_t pid, const char *name, char *value, size_t size)
{
	char path[64], line[256];
	size_t len = strlen(name);
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, len) == 0 && line[len] == ':') {
			snprintf(value, size, "%s", line + len + 1);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static bool signal_caught(pid_t pid, int sig)
{
	char value[64];

	if (sig < 1 || sig > 64 || !status_field(pid, "SigCgt", value, sizeof(value)))
		return false;
	return (strtoull(value, NULL, 16) >> (sig - 1)) & 1;
}

/* A signal is about to be delivered to the thread. Only caught signals
 * change the user-space flow; the others are passed on unseen, as PT would
 * not see the interrupt that posted them either. */
static int on_signal(struct stepper *s, struct thread *t, int sig, struct rv_error *err)
{
	uint64_t ip;

	s->stats.signals++;
	if (!t->started || read_ip(t->tid, &ip))
		return step(s, t, sig, err);
	if (t->in_user && ip != t->ip0) {
		/* The pending instruction completed before the signal came. */
		if (retire_pending(s, t, ip, err) || (t->in_user && prepare(s, t, err)))
			return -1;
	}
	if (t->in_user && signal_caught(t->pid, sig)) {
		t->in_user = false;
		if (s->ops->async(s->ctx, t->tid, t->ip0))
			return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	}
	return step(s, t, sig, err);
}

static int begin_thread(struct stepper *s, struct thread *t, struct rv_error *err)
{
	uint64_t ip;

	if (read_ip(t->tid, &ip))
		return rv_error_set(err, EIO, "cannot read thread %d's registers: %s", t->tid,
				    strerror(errno));
	t->started = true;
	t->in_user = true;
	t->ip0 = ip;
	s->stats.threads++;
	if (s->ops->thread_begin(s->ctx, t->pid, t->tid, t->parent_tid, ip))
		return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	if (prepare(s, t, err))
		return -1;
	return step(s, t, 0, err);
}

static int on_exec(struct stepper *s, struct thread *t, struct rv_error *err)
{
	uint64_t ip;

	if (open_mem(s, t->pid, err))
		return -1;
	insn_cache_clear(s->cache);
	if (!t->started) {
		if (s->ops->maps_changed(s->ctx, t->pid, true))
			return rv_error_set(err, EIO, "recording the mappings of %d failed",
					    t->pid);
		return begin_thread(s, t, err);
	}
	/* The program executed another one: execve retired into a new image. */
	if (t->in_user && retire_syscall(s, t, err))
		return -1;
	if (s->ops->maps_changed(s->ctx, t->pid, true))
		return rv_error_set(err, EIO, "recording the mappings of %d failed", t->pid);
	if (read_ip(t->tid, &ip))
		return rv_error_set(err, EIO, "cannot read thread %d's registers: %s", t->tid,
				    strerror(errno));
	if (resume_user(s, t, ip, err) || prepare(s, t, err))
		return -1;
	return step(s, t, 0, err);
}

static int on_thread_exit(struct stepper *s, struct thread *t, struct rv_error *err)
{
	if (t->started && t->in_user) {
		if (t->insn.cls == PTGEN_SYSCALL) {
			/* exit or exit_group: the system call never returned. */
			t->in_user = false;
			if (s->ops->retire(s->ctx, t->tid, t->ip0, &t->insn, 0,
					   now_ns() - t->step_start_ns))
				return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
		} else if (s->ops->async(s->ctx, t->tid, t->ip0)) {
			/* Killed in user space (another thread ended the process). */
			return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
		}
	}
	if (t->started && s->ops->thread_end(s->ctx, t->pid, t->tid))
		return rv_error_set(err, EIO, "recording thread %d failed", t->tid);
	remove_thread(s, t);
	return 0;
}

static int pid_of(pid_t tid, pid_t fallback)
{
	char value[64];

	return status_field(tid, "Tgid", value, sizeof(value)) ? atoi(value) : fallback;
}

static int loop(struct stepper *s, int *exit_status, struct rv_error *err)
{
	for (;;) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL);

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				return 0;
			return rv_error_set(err, EIO, "waitpid: %s", strerror(errno));
		}
		struct thread *t = find_thread(s, tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == s->leader)
				*exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
								 : 128 + WTERMSIG(status);
			if (t && on_thread_exit(s, t, err))
				return -1;
			if (tid == s->leader)
				return 0;
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		if (!t) {
			/* A new thread's first stop can come before its creator's event. */
			t = add_thread(s, tid, pid_of(tid, s->leader), 0);
			if (!t)
				return rv_error_set(err, ENOMEM, "out of memory");
		}
		int sig = WSTOPSIG(status), event = status >> 16;
		int rc;
		if (event == PTRACE_EVENT_CLONE) {
			unsigned long new_tid;
			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &new_tid) == 0) {
				struct thread *child = find_thread(s, (pid_t)new_tid);
				if (!child)
					child = add_thread(s, (pid_t)new_tid, t->pid, t->tid);
				else if (!child->started)
					child->parent_tid = t->tid;
				if (!child)
					return rv_error_set(err, ENOMEM, "out of memory");
				t = find_thread(s, tid); /* the table may have moved */
			}
			rc = step(s, t, 0, err);
		} else if (event == PTRACE_EVENT_EXEC) {
			rc = on_exec(s, t, err);
		} else if (event) {
			rc = step(s, t, 0, err);
		} else if (!t->started && sig == SIGSTOP && tid != s->leader) {
			if (!t->parent_tid)
				t->parent_tid = t->pid;
			rc = begin_thread(s, t, err);
		} else if (sig == SIGTRAP && t->started) {
			rc = on_step(s, t, err);
		} else {
			rc = on_signal(s, t, sig, err);
		}
		if (rc)
			return -1;
	}
}

int stepper_run(char *const argv[], const struct stepper_ops *ops, void *ctx, int *exit_status,
		struct stepper_stats *stats, struct rv_error *err)
{
	struct stepper s = { .ops = ops, .ctx = ctx, .mem_fd = -1 };
	int exec_pipe[2], status;

	*exit_status = 0;
	s.cache = insn_cache_new();
	if (!s.cache)
		return rv_error_set(err, EIO, "cannot set up the x86-64 instruction decoder");
	if (pipe2(exec_pipe, O_CLOEXEC)) {
		insn_cache_free(s.cache);
		return rv_error_set(err, EIO, "pipe: %s", strerror(errno));
	}
	pid_t pid = fork();
	if (pid < 0) {
		insn_cache_free(s.cache);
		return rv_error_set(err, EIO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(exec_pipe[0]);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		int e = errno;
		if (write(exec_pipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(exec_pipe[1]);
	s.leader = pid;

	int rc = -1;
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		rv_error_set(err, EIO, "the command did not start");
		goto out;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, 0,
		   PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)) {
		rv_error_set(err, EIO, "cannot trace the command: %s", strerror(errno));
		goto out;
	}
	if (!add_thread(&s, pid, pid, 0)) {
		rv_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (ptrace(PTRACE_CONT, pid, 0, 0)) {
		rv_error_set(err, EIO, "cannot start the command: %s", strerror(errno));
		goto out;
	}
	rc = loop(&s, exit_status, err);
	if (rc == 0 && s.stats.threads == 0) {
		int e = 0;
		if (read(exec_pipe[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
			rc = rv_error_set(err, EIO, "cannot run %s: %s", argv[0], strerror(e));
		else
			rc = rv_error_set(err, EIO, "%s exited before it started", argv[0]);
	}
out:
	if (rc) {
		kill(pid, SIGKILL);
		while (waitpid(-1, &status, __WALL) > 0)
			;
	}
	close(exec_pipe[0]);
	if (s.mem_fd >= 0)
		close(s.mem_fd);
	s.stats.decoded = insn_cache_decoded(s.cache);
	if (stats)
		*stats = s.stats;
	insn_cache_free(s.cache);
	free(s.threads);
	return rc;
}
