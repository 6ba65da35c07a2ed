/* syscall_loop.c: PT target. System calls in a loop (getpid and write), each
 * one leaving user space: user-only tracing stops at every syscall and starts
 * again where it returns. Prints its own call counts as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned long round_calls;

__attribute__((noinline)) static long one_round(int fd)
{
	static const char byte = 'x';
	long pid = getpid();

	round_calls++;
	if (write(fd, &byte, 1) != 1)
		return -1;
	return pid;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 60;
	int fd = open("/dev/null", O_WRONLY);
	long pid_sum = 0;

	if (fd < 0)
		return 2;
	for (int i = 0; i < rounds; i++) {
		long pid = one_round(fd);

		if (pid < 0)
			return 3;
		pid_sum += pid;
	}
	close(fd);
	printf("pid matches %d\n", pid_sum == (long)rounds * getpid());
	printf("count one_round %lu\n", round_calls);
	return 0;
}
