/* ratio.c: spends twice as long in work_long as in work_short, both called
 * from main, and prints how often it called each. The two functions run the
 * same loop, work_long for twice the iterations, so the ratio of their time is
 * 2 by construction, whatever the machine's speed. */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(unsigned long iterations)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < iterations; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

__attribute__((noinline)) void work_long(unsigned long unit)
{
	spin(2 * unit);
	__asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
}

__attribute__((noinline)) void work_short(unsigned long unit)
{
	spin(unit);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 200;
	unsigned long unit = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000000;
	unsigned long long_calls = 0, short_calls = 0;

	for (unsigned long r = 0; r < rounds; r++) {
		work_long(unit);
		long_calls++;
		work_short(unit);
		short_calls++;
	}
	printf("work_long calls: %lu\nwork_short calls: %lu\n", long_calls, short_calls);
	return 0;
}
