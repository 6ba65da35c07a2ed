/* busy2.c: a busy target for the stopping tests: two threads (main and one
 * more) call spin_round over and over until the process is killed, and
 * spin_round calls spin_step thousands of times: a probe on spin_round
 * (placed before or after the target started) always has a return pending
 * on both threads' stacks while probes keep firing. Prints "PID ready" once
 * both threads run; with "exit-after MS" exits by itself with status 3
 * after MS milliseconds. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_ulong calls;
static atomic_int second_running;
static volatile unsigned long sink;

__attribute__((noinline)) void spin_step(unsigned long seed)
{
	for (int i = 0; i < 200; i++)
		sink = sink * 31 + seed + (unsigned long)i;
	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
}

__attribute__((noinline)) void spin_round(unsigned long seed)
{
	for (unsigned long i = 0; i < 5000; i++)
		spin_step(seed + i);
}

__attribute__((noinline)) static void *second_thread(void *arg)
{
	atomic_store(&second_running, 1);
	for (unsigned long i = 0;; i++)
		spin_round(i);
	return arg;
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
	pthread_t thread;

	if (pthread_create(&thread, NULL, second_thread, NULL))
		return 1;
	while (!atomic_load(&second_running))
		spin_step(0);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	for (unsigned long i = 0;; i++) {
		spin_round(i);
		if (limit >= 0 && now_ms() - start > limit)
			return 3;
	}
}
