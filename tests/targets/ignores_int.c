/* ignores_int.c: a program that ignores SIGINT, as a server that wants a
 * harder stop does, for rearview's wait for a program that runs on after
 * Ctrl-C. Prints its pid and "ready" once SIGINT is ignored and it runs,
 * then calls work_round over and over for the milliseconds given (default
 * 60000, so that a test that fails leaves nothing running for long), and
 * on its own exit prints "count work_round N" and exits with status 4. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) void work_round(void)
{
	for (int i = 0; i < 100000; i++)
		sink = sink * 31 + (unsigned long)i;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 60000, start;
	unsigned long rounds = 0;

	signal(SIGINT, SIG_IGN);
	start = now_ms();
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	while (now_ms() - start < limit) {
		work_round();
		rounds++;
	}
	printf("count work_round %lu\n", rounds);
	return 4;
}
