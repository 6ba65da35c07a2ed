/* busy_for.c: one thread busy on the CPU for the milliseconds given (default
 * 1000), in rounds of spin_round called from main, for the flight recorder's
 * look-back: prints how many rounds it ran and for how long, by its own
 * clock. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void spin_round(void)
{
	for (int i = 0; i < 100000; i++)
		sink = sink * 31 + (unsigned long)i;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 1000, start = now_ms(), ran;
	unsigned long rounds = 0;

	while ((ran = now_ms() - start) < ms) {
		spin_round();
		rounds++;
	}
	printf("rounds: %lu\nran ms: %.0f\n", rounds, ran);
	return 0;
}
