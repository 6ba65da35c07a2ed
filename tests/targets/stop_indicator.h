/* stop_indicator.h: the body of the stop_* targets, for --trigger '.' and the
 * site specs (FILE:LINE:COL, addr:, symbol:). The file that includes it
 * defines INDICATOR, the stop indicator function it calls.
 *
 * Usage: stop_X N   N rounds of before_stop (4 ms of CPU) then the stop
 *                   indicator; after the first, after_stop runs for 30 ms,
 *                   once; at exit it prints "stops=N first=F second=S",
 *                   F and S the calls of first_call and second_call (made
 *                   on one line, once per round)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static void burn(unsigned long ns)
{
	unsigned long end = now_ns() + ns;

	while (now_ns() < end)
		for (int i = 0; i < 200; i++)
			sink += (unsigned long)i * 2654435761u;
}

static unsigned long firsts, seconds;

__attribute__((noinline)) void first_call(void)
{
	firsts++;
}

__attribute__((noinline)) void second_call(void)
{
	seconds++;
}

__attribute__((noinline)) void before_stop(void)
{
	burn(4000000);
}

__attribute__((noinline)) void after_stop(void)
{
	burn(30000000);
}

int main(int argc, char **argv)
{
	unsigned long n, stops = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	n = strtoul(argv[1], NULL, 10);
	for (unsigned long i = 0; i < n; i++) {
		before_stop();
		/* two calls on one line, two columns of it (test_sites) */
		/* clang-format off */
		first_call(); second_call(); /* COLUMNS */
		/* clang-format on */
		INDICATOR();
		stops++;
		if (i == 0)
			after_stop();
	}
	printf("stops=%lu first=%lu second=%lu\n", stops, firsts, seconds);
	return 0;
}
