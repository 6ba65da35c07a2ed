/* harness.c: process plumbing for the end-to-end tests; see harness.h. */
#include "harness.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_files.h"

void make_test_dir(char *out, size_t size)
{
	make_temp_dir(out, size, "rearview-e2e");
}

void cleanup_dir(const char *dir)
{
	remove_tree(dir);
}

static int temp_fd(void)
{
	char name[] = "/tmp/rearview-e2e-out-XXXXXX";
	int fd = mkstemp(name);

	if (fd < 0)
		abort();
	unlink(name);
	return fd;
}

pid_t start_process(char *const argv[], int *out_fd, int *err_fd)
{
	return start_process_input(argv, NULL, out_fd, err_fd);
}

void default_stop_signals(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

/* argv in its own process group, in_fd (closed here; -1: /dev/null) its
 * standard input, its output to new temporary files. */
static pid_t spawn(char *const argv[], int in_fd, int *out_fd, int *err_fd)
{
	pid_t pid;

	*out_fd = temp_fd();
	*err_fd = temp_fd();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		int devnull = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		default_stop_signals();
		dup2(devnull, 0);
		dup2(*out_fd, 1);
		dup2(*err_fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	if (in_fd >= 0)
		close(in_fd);
	return pid;
}

pid_t start_process_input(char *const argv[], const char *stdin_text, int *out_fd, int *err_fd)
{
	int in_fd = -1;

	if (stdin_text) {
		in_fd = temp_fd();
		if (write(in_fd, stdin_text, strlen(stdin_text)) != (ssize_t)strlen(stdin_text))
			abort();
		lseek(in_fd, 0, SEEK_SET);
	}
	return spawn(argv, in_fd, out_fd, err_fd);
}

pid_t start_process_piped(char *const argv[], int *in_write, int *out_fd, int *err_fd)
{
	int in[2];

	/* close-on-exec: the child keeps only its stdin's copy of the read end,
	 * and none of the write end, so that closing *in_write is its EOF */
	if (pipe2(in, O_CLOEXEC))
		abort();
	*in_write = in[1];
	return spawn(argv, in[0], out_fd, err_fd);
}

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
}

void finish_process(pid_t pid, int out_fd, int err_fd, int timeout_s, struct proc_result *r)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int status = 0;

	memset(r, 0, sizeof(*r));
	for (int waited = 0;; waited += 20) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid)
			break;
		if (waited >= timeout_s * 1000) {
			r->timed_out = true;
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		nanosleep(&pause, NULL);
	}
	r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	slurp(out_fd, r->out, sizeof(r->out));
	slurp(err_fd, r->err, sizeof(r->err));
}

void run_process(char *const argv[], int timeout_s, struct proc_result *r)
{
	int out_fd, err_fd;
	pid_t pid = start_process(argv, &out_fd, &err_fd);

	finish_process(pid, out_fd, err_fd, timeout_s, r);
}

struct fxt_trace *rearview_run(const char *dir, const char *const *base_options,
			       const char *const *options, const char *program,
			       const char *const *args, int timeout_s, struct proc_result *r)
{
	const char *const *lists[] = { base_options, options };
	char out[PATH_MAX], err[512];
	char *argv[64];
	size_t a = 0;
	struct fxt_trace *t = NULL;

	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	for (size_t l = 0; l < 2; l++)
		for (const char *const *o = lists[l]; o && *o; o++) {
			cr_assert_lt(a, 56, "too many options");
			argv[a++] = (char *)*o;
		}
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--";
	argv[a++] = (char *)build_path(program);
	for (; args && *args; args++) {
		cr_assert_lt(a, 63, "too many arguments");
		argv[a++] = (char *)*args;
	}
	argv[a] = NULL;
	run_process(argv, timeout_s, r);
	cr_assert(!r->timed_out, "rearview run %s did not finish within %d s:\n%s", program,
		  timeout_s, r->err);
	cr_assert_eq(r->exit_code, 0, "rearview run %s failed (%d):\n%s", program, r->exit_code,
		     r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	return t;
}

bool read_line_timeout(int fd, char *line, size_t size, int timeout_s)
{
	size_t n = 0;

	while (n + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		if (poll(&p, 1, timeout_s * 1000) <= 0)
			return false;
		if (read(fd, &c, 1) != 1)
			return false;
		if (c == '\n')
			break;
		line[n++] = c;
	}
	line[n] = '\0';
	return true;
}

size_t count_lines(const char *text)
{
	size_t n = 0;

	for (const char *p = text; *p; p++)
		if (*p == '\n')
			n++;
	if (*text && text[strlen(text) - 1] != '\n')
		n++;
	return n;
}

bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Whether what fd's file holds so far has needle in its first 64 KiB. */
static bool output_has(int fd, const char *needle)
{
	static char text[65536];
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	text[n > 0 ? n : 0] = '\0';
	return strstr(text, needle) != NULL;
}

/* Whether pid has exited, without reaping it. */
static bool has_exited(pid_t pid)
{
	siginfo_t info = { 0 };

	return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       info.si_pid == pid;
}

int wait_for_output(pid_t pid, int fd, const char *needle, int timeout_s)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	for (int waited = 0; waited <= timeout_s * 1000; waited += 20) {
		bool exited = pid > 0 && has_exited(pid);

		if (output_has(fd, needle))
			return 1;
		if (exited)
			return 0;
		nanosleep(&pause, NULL);
	}
	return -1;
}

bool wait_for_text(int fd, const char *needle, int timeout_s)
{
	return wait_for_output(0, fd, needle, timeout_s) == 1;
}

long long proc_cpu_ms(pid_t pid)
{
	char path[64], line[1024];
	unsigned long long utime, stime;
	const char *after_comm;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	/* "PID (COMM) STATE ...": utime and stime are the 14th and 15th
	 * fields; COMM may hold spaces, so count from its closing parenthesis. */
	after_comm = ok ? strrchr(line, ')') : NULL;
	if (!after_comm ||
	    sscanf(after_comm + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
		   &stime) != 2)
		return -1;
	return (long long)((utime + stime) * 1000 / (unsigned long long)sysconf(_SC_CLK_TCK));
}

bool wait_for_cpu(pid_t pid, long long cpu_ms, int timeout_s)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long long start = proc_cpu_ms(pid);

	if (start < 0)
		return false;
	for (int waited = 0; waited <= timeout_s * 1000; waited += 10) {
		long long now = proc_cpu_ms(pid);

		if (now < 0)
			return false;
		if (now - start >= cpu_ms)
			return true;
		nanosleep(&pause, NULL);
	}
	return false;
}

/* The system call pid's main thread is blocked in, or -1 (running, or gone). */
static long blocked_in_syscall(pid_t pid)
{
	char path[64], line[256];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr;
}

bool wait_until_polling(pid_t pid, int timeout_s)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	for (int waited = 0; waited <= timeout_s * 1000; waited += 10) {
		long nr = blocked_in_syscall(pid);

		if (nr == SYS_poll || nr == SYS_ppoll)
			return true;
		nanosleep(&pause, NULL);
	}
	return false;
}

char proc_state(pid_t pid, int *tracer)
{
	char path[64], line[256], state = '?';
	FILE *f;

	*tracer = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6))
			sscanf(line, "State: %c", &state);
		if (!strncmp(line, "TracerPid:", 10))
			*tracer = atoi(line + 10);
	}
	fclose(f);
	return state;
}

char wait_until_running_untraced(pid_t pid, int *tracer, int timeout_s)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	char state = proc_state(pid, tracer);

	for (int waited = 0; waited < timeout_s * 1000; waited += 20) {
		if ((state == 'R' || state == 'S') && *tracer == 0)
			break;
		nanosleep(&pause, NULL);
		state = proc_state(pid, tracer);
	}
	return state;
}

pid_t start_forever(int *pipe_read)
{
	int fds[2];
	pid_t pid, parent = getpid();
	char line[64];

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* it dies with the test, whichever way the test ends (a failed
		 * assertion, a timeout) */
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != parent)
			_exit(127);
		dup2(fds[1], 1);
		close(fds[0]);
		execl(build_path("tests/targets/forever"), "forever", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	cr_assert(read_line_timeout(fds[0], line, sizeof(line), 10), "forever did not start");
	cr_assert(strstr(line, "ready"), "forever said '%s', not that it is ready", line);
	*pipe_read = fds[0];
	return pid;
}

void require_root(const char *tests)
{
	if (geteuid() == 0)
		return;
	cr_assert(!under_ci(), "the %s tests need root (BPF and uprobes); CI runs as root", tests);
	cr_skip_test("the %s tests need root (BPF and uprobes)", tests);
}

bool perf_available(void)
{
	if (access("/usr/bin/perf", X_OK) == 0)
		return true;
	cr_assert(!under_ci(),
		  "/usr/bin/perf is missing (Debian's linux-perf is a test dependency)");
	return false;
}

void sleep_ms(long ms)
{
	struct timespec pause = { ms / 1000, (ms % 1000) * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

bool wait_child_exit(pid_t pid, long limit_ms, int *status)
{
	struct timespec now;
	long long until_ms;
	int ignored;

	clock_gettime(CLOCK_MONOTONIC, &now);
	until_ms = now.tv_sec * 1000ll + now.tv_nsec / 1000000 + limit_ms;
	for (;;) {
		if (waitpid(pid, status ? status : &ignored, WNOHANG) == pid)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec * 1000ll + now.tv_nsec / 1000000 >= until_ms)
			return false;
		sleep_ms(1);
	}
}
