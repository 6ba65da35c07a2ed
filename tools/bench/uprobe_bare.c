/* uprobe_bare.c: a bare uprobe+uretprobe pair on one function of a program,
 * with a BPF program that only counts (bpf/bench_count.bpf.c): the yardstick
 * that bench/run holds the function tracer's per-call cost to.
 *
 *   uprobe_bare FUNCTION -- CMD [ARGS...]
 *
 * Starts CMD held before exec, attaches the pair to FUNCTION (a symbol of
 * CMD's executable, resolved by libbpf) for CMD's process, lets it run, and
 * prints `entries N returns N` on stderr once it has exited; exits with its
 * status. The probes follow the one task (no inherit): enough for the
 * single-threaded loop bench/run times.
 *
 * Not a test and not part of rearview.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bench_count.skel.h"

/* The child waits on gate[0] until the probes are in place; an EOF without a
 * byte means the parent gave up, and it exits without running CMD. */
static pid_t start_held(char **argv, int *release)
{
	int gate[2];
	pid_t pid;

	if (pipe(gate))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char go;

		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(126);
		close(gate[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "uprobe_bare: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	*release = gate[1];
	return pid;
}

static int attach(struct bench_count_bpf *skel, pid_t pid, const char *path, const char *function)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = function, .retprobe = false);
	LIBBPF_OPTS(bpf_uprobe_opts, exit, .func_name = function, .retprobe = true);

	skel->links.count_entry =
		bpf_program__attach_uprobe_opts(skel->progs.count_entry, pid, path, 0, &entry);
	if (!skel->links.count_entry)
		return -errno;
	skel->links.count_return =
		bpf_program__attach_uprobe_opts(skel->progs.count_return, pid, path, 0, &exit);
	if (!skel->links.count_return)
		return -errno;
	return 0;
}

/* CMD's executable as exec will find it: a path, or the first match in PATH. */
static int find_program(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return access(out, X_OK) ? -errno : 0;
	}
	while (path && *path) {
		size_t n = strcspn(path, ":");

		if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, path, name) < size &&
		    !access(out, X_OK))
			return 0;
		path += n + (path[n] == ':');
	}
	return -ENOENT;
}

int main(int argc, char **argv)
{
	struct bench_count_bpf *skel;
	char program[4096];
	int release = -1, status = 0, ret;
	pid_t pid;

	if (argc < 4 || strcmp(argv[2], "--")) {
		fprintf(stderr, "usage: uprobe_bare FUNCTION -- CMD [ARGS...]\n");
		return 2;
	}
	ret = find_program(argv[3], program, sizeof(program));
	if (ret) {
		fprintf(stderr, "uprobe_bare: cannot find %s: %s\n", argv[3], strerror(-ret));
		return 2;
	}
	skel = bench_count_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "uprobe_bare: cannot load the BPF program: %s (run as root)\n",
			strerror(errno));
		return 1;
	}
	pid = start_held(argv + 3, &release);
	if (pid < 0) {
		fprintf(stderr, "uprobe_bare: cannot start %s: %s\n", argv[3], strerror(errno));
		bench_count_bpf__destroy(skel);
		return 1;
	}
	ret = attach(skel, pid, program, argv[1]);
	if (ret) {
		fprintf(stderr, "uprobe_bare: cannot attach to %s in %s: %s\n", argv[1], program,
			strerror(-ret));
		close(release); /* the child exits without running CMD */
		waitpid(pid, &status, 0);
		bench_count_bpf__destroy(skel);
		return 1;
	}
	if (write(release, "x", 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		bench_count_bpf__destroy(skel);
		return 1;
	}
	close(release);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = 1 << 8;
			break;
		}
	fprintf(stderr, "entries %llu returns %llu\n", (unsigned long long)skel->bss->entries,
		(unsigned long long)skel->bss->returns);
	bench_count_bpf__destroy(skel);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
