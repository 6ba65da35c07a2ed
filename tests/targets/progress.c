/* progress.c: calls tick() over and over, as busy as it can, and says how
 * many times it has so far: "calls N" every 50 ms of its own clock, flushed
 * at once, so that a test that kills its recorder knows a lower bound of
 * the calls made before any moment. Exits with status 0 after the
 * milliseconds given as its argument (default 20000), printing "done N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;
static unsigned long calls;

__attribute__((noinline)) void tick(void)
{
	for (int i = 0; i < 2000; i++)
		sink = sink * 31 + (unsigned long)i;
	calls++;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 20000;
	double start = now_ms(), next = start;

	for (;;) {
		double now;

		tick();
		now = now_ms();
		if (now >= next) {
			printf("calls %lu\n", calls);
			fflush(stdout);
			next = now + 50;
		}
		if (now - start > limit)
			break;
	}
	printf("done %lu\n", calls);
	return 0;
}
