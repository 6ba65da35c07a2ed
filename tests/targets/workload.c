/* workload.c: a fixed amount of CPU work through chains of nested calls, for
 * the benchmarks. Prints the time its own work took (elapsed, and its
 * thread's CPU time, which counts what the kernel does in its context at each
 * sample), so that the cost of recording it can be measured without counting
 * the recorder's start-up and shutdown. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long leaf(unsigned long x)
{
	for (int i = 0; i < 2000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) static unsigned long level(int depth, unsigned long x)
{
	if (depth == 0)
		return leaf(x);
	x = level(depth - 1, x);
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

int main(int argc, char **argv)
{
	unsigned long calls = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
	struct timespec start, end, cpu_start, cpu_end;
	unsigned long x = 1;

	clock_gettime(CLOCK_MONOTONIC, &start);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
	for (unsigned long i = 0; i < calls; i++)
		x = level((int)(i % 24), x);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_end);
	clock_gettime(CLOCK_MONOTONIC, &end);
	sink = x;
	printf("elapsed_ns %lld\n", (long long)(end.tv_sec - start.tv_sec) * 1000000000ll +
					    (end.tv_nsec - start.tv_nsec));
	printf("thread_cpu_ns %lld\n",
	       (long long)(cpu_end.tv_sec - cpu_start.tv_sec) * 1000000000ll +
		       (cpu_end.tv_nsec - cpu_start.tv_nsec));
	return 0;
}
