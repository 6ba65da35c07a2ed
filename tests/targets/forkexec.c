/* forkexec.c: a program that makes processes, for following children
 * (tests/e2e/test_follow.c). Every process says who it is and counts its own
 * work, so a trace can be checked process by process:
 *
 *   process NAME PID   this process (named NAME with prctl) is PID
 *   pid PID count F N  process PID called F N times
 *
 * Modes (first argument):
 *   (none) [R]     "fe-parent": parent_work R times (default 60), then forks
 *                  two children that exec this program as "child-a R" and
 *                  "child-b R", waits for both, and exits with 0 when both did
 *   child-a R      "fe-child-a": child_a_work R times
 *   child-b R      "fe-child-b": child_b_work R times
 *   fork N         "fe-fork": forks a child that calls probed_call N times
 *                  (without exec); the parent calls probed_call N/2 times after
 *                  the child exited
 *   fork-exec N    "fe-forkexec": forks a child that execs "child-a N" and
 *                  waits for it; the parent calls probed_call once
 *   leave          "fe-leave": forks a child that execs "linger", waits for
 *                  its "process" line, and exits without waiting for it
 *   linger         "fe-linger": child_a_work until killed, or 10 s at most
 *                  (it outlives its parent: the test ends it)
 *
 * Each *_work call spins a fixed number of rounds (about a millisecond). The
 * counted functions are noinline and external, so every call in the source is
 * a call in the binary. It dies with its parent (PR_SET_PDEATHSIG), so a
 * test that is killed leaves nothing behind.
 */
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define COUNTED __attribute__((noinline, used))

static volatile unsigned long sink;

COUNTED void spin(void)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < 400000; i++)
		x = x * 6364136223846793005ul + 1;
	sink = x;
}

COUNTED void parent_work(void)
{
	spin();
}

COUNTED void child_a_work(void)
{
	spin();
}

COUNTED void child_b_work(void)
{
	spin();
}

COUNTED void probed_call(void)
{
	sink++;
}

static void name_process(const char *name)
{
	prctl(PR_SET_NAME, name, 0, 0, 0);
	if (strcmp(name, "fe-linger"))
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	printf("process %s %d\n", name, (int)getpid());
	fflush(stdout);
}

static void report(const char *function, unsigned long n)
{
	printf("pid %d count %s %lu\n", (int)getpid(), function, n);
	fflush(stdout);
}

static unsigned long number(const char *text, unsigned long fallback)
{
	return text ? strtoul(text, NULL, 10) : fallback;
}

static pid_t exec_child(const char *mode, const char *rounds)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "forkexec", mode, rounds, (char *)NULL);
		perror("exec");
		_exit(127);
	}
	return pid;
}

static int wait_ok(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int parent(unsigned long rounds)
{
	char text[32];
	unsigned long n;
	pid_t a, b;
	int ok;

	name_process("fe-parent");
	for (n = 0; n < rounds; n++)
		parent_work();
	report("parent_work", n);
	snprintf(text, sizeof(text), "%lu", rounds);
	a = exec_child("child-a", text);
	b = exec_child("child-b", text);
	ok = wait_ok(a);
	ok = wait_ok(b) && ok;
	return ok ? 0 : 1;
}

static int child(const char *name, void (*work)(void), const char *function, unsigned long rounds)
{
	unsigned long n;

	name_process(name);
	for (n = 0; n < rounds; n++)
		work();
	report(function, n);
	return 0;
}

static int fork_only(unsigned long calls)
{
	unsigned long n;
	pid_t pid;

	name_process("fe-fork");
	pid = fork();
	if (pid == 0) {
		for (n = 0; n < calls; n++)
			probed_call();
		report("probed_call", n);
		_exit(0);
	}
	if (!wait_ok(pid))
		return 1;
	for (n = 0; n < calls / 2; n++)
		probed_call();
	report("probed_call", n);
	return 0;
}

static int fork_exec(const char *rounds)
{
	int ok;

	name_process("fe-forkexec");
	ok = wait_ok(exec_child("child-a", rounds));
	probed_call();
	report("probed_call", 1);
	return ok ? 0 : 1;
}

static int leave(void)
{
	char line[64];
	int fds[2];
	pid_t pid;
	FILE *from;

	name_process("fe-leave");
	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		execl("/proc/self/exe", "forkexec", "linger", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	from = fdopen(fds[0], "r");
	if (pid < 0 || !from || !fgets(line, sizeof(line), from))
		return 1;
	fputs(line, stdout);
	return 0;
}

static int linger(void)
{
	struct timespec start, now;

	name_process("fe-linger");
	fclose(stdout); /* the parent read its line: nothing holds the pipe open */
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		child_a_work();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 10);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *value = argc > 2 ? argv[2] : NULL;

	if (!strcmp(mode, "child-a"))
		return child("fe-child-a", child_a_work, "child_a_work", number(value, 60));
	if (!strcmp(mode, "child-b"))
		return child("fe-child-b", child_b_work, "child_b_work", number(value, 60));
	if (!strcmp(mode, "fork"))
		return fork_only(number(value, 100));
	if (!strcmp(mode, "leave"))
		return leave();
	if (!strcmp(mode, "linger"))
		return linger();
	if (!strcmp(mode, "fork-exec"))
		return fork_exec(value ? value : "5");
	if (argc > 1 && strspn(mode, "0123456789") != strlen(mode)) {
		fprintf(stderr, "usage: forkexec [ROUNDS] | child-a R | child-b R | fork N | "
				"fork-exec R | leave | linger\n");
		return 2;
	}
	return parent(number(argc > 1 ? mode : NULL, 60));
}
