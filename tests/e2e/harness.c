/* harness.c: process plumbing for the end-to-end tests; see harness.h. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *build_path(const char *rel)
{
	static char buffers[8][4096];
	static int next;
	const char *build = getenv("RV_BUILD");
	char *out = buffers[next++ % 8];

	snprintf(out, sizeof(buffers[0]), "%s/%s", build && *build ? build : "build", rel);
	return out;
}

void make_test_dir(char *out, size_t size)
{
	snprintf(out, size, "/tmp/rearview-e2e-XXXXXX");
	if (!mkdtemp(out))
		abort();
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void cleanup_dir(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
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

pid_t start_process_input(char *const argv[], const char *stdin_text, int *out_fd, int *err_fd)
{
	pid_t pid;
	int in_fd = -1;

	if (stdin_text) {
		in_fd = temp_fd();
		if (write(in_fd, stdin_text, strlen(stdin_text)) != (ssize_t)strlen(stdin_text))
			abort();
		lseek(in_fd, 0, SEEK_SET);
	}
	*out_fd = temp_fd();
	*err_fd = temp_fd();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		int devnull = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);

		setpgid(0, 0);
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

bool under_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}
