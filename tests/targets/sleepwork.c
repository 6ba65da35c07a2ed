/* sleepwork.c: a thread that alternates work on the CPU with sleeps, for the
 * off-CPU rules of sampled traces.
 *
 * Default: work() computes for WORK_MS of its thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), then the thread nanosleeps SLEEP_MS, ROUNDS
 * times. Prints "count work N" and "work_cpu_ns T" (the CPU time spent in
 * work, all rounds).
 *
 * "join": the main thread starts a thread that runs crunch() for JOIN_MS of
 * its CPU time and blocks in pthread_join until it ends. Prints
 * "main_tid T", "join_begin_ns B", "join_end_ns E" (CLOCK_MONOTONIC: when
 * the main thread began and ended waiting) and "crunch_cpu_ns C".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS	 40
#define WORK_MS	 5
#define SLEEP_MS 20
#define JOIN_MS	 300

static uint64_t now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* Computes until the thread has used ms of CPU time; returns the CPU time
 * it took. */
__attribute__((noinline)) static uint64_t compute_for(uint64_t ms)
{
	uint64_t start = now(CLOCK_THREAD_CPUTIME_ID), x = sink, t;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		sink = x;
		t = now(CLOCK_THREAD_CPUTIME_ID);
	} while (t - start < ms * 1000000ull);
	return t - start;
}

__attribute__((noinline)) static uint64_t work(void)
{
	return compute_for(WORK_MS);
}

__attribute__((noinline)) static void *crunch(void *arg)
{
	uint64_t *cpu_ns = arg;

	*cpu_ns = compute_for(JOIN_MS);
	return NULL;
}

static int join_mode(void)
{
	pthread_t thread;
	uint64_t cpu_ns = 0, begin, end;

	printf("main_tid %ld\n", (long)syscall(SYS_gettid));
	if (pthread_create(&thread, NULL, crunch, &cpu_ns))
		return 1;
	begin = now(CLOCK_MONOTONIC);
	pthread_join(thread, NULL);
	end = now(CLOCK_MONOTONIC);
	printf("join_begin_ns %llu\njoin_end_ns %llu\ncrunch_cpu_ns %llu\n",
	       (unsigned long long)begin, (unsigned long long)end, (unsigned long long)cpu_ns);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec pause = { 0, SLEEP_MS * 1000000l };
	uint64_t cpu_ns = 0;
	unsigned calls = 0;

	if (argc > 1 && !strcmp(argv[1], "join"))
		return join_mode();
	for (int i = 0; i < ROUNDS; i++) {
		cpu_ns += work();
		calls++;
		nanosleep(&pause, NULL);
	}
	printf("count work %u\nwork_cpu_ns %llu\n", calls, (unsigned long long)cpu_ns);
	return 0;
}
