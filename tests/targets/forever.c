/* forever.c: runs until it is killed, calling busy_loop_body over and over,
 * so that rearview can attach to it, detach, and leave it running. Prints its
 * pid and "ready" once running; with "exit-after N" it exits by itself after N
 * milliseconds of work with status 3. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile unsigned long iterations;

__attribute__((noinline)) void busy_loop_body(void)
{
	for (int i = 0; i < 100000; i++)
		sink = sink * 31 + (unsigned long)i;
	iterations++;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double limit = argc > 2 && !strcmp(argv[1], "exit-after") ? atof(argv[2]) : -1;
	double start = now_ms();

	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		busy_loop_body();
		if (limit >= 0 && now_ms() - start > limit)
			return 3;
	}
}
