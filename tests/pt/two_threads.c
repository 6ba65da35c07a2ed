/* two_threads.c: PT target. Two threads created with pthread_create, each
 * calling its own counted function, joined by main: softpt must follow the
 * clone and keep one trace per thread. Prints its own call counts as
 * `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long work_a_calls, work_b_calls;
static int rounds = 30;

__attribute__((noinline)) static unsigned long work_a(unsigned long x)
{
	work_a_calls++;
	return x * 7 + 1;
}

__attribute__((noinline)) static unsigned long work_b(unsigned long x)
{
	work_b_calls++;
	return x * 11 + 3;
}

static void *thread_a(void *arg)
{
	unsigned long x = 1;

	for (int i = 0; i < rounds; i++)
		x = work_a(x);
	*(unsigned long *)arg = x;
	return NULL;
}

static void *thread_b(void *arg)
{
	unsigned long x = 2;

	for (int i = 0; i < rounds + 5; i++)
		x = work_b(x);
	*(unsigned long *)arg = x;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	unsigned long result_a = 0, result_b = 0;

	if (argc > 1)
		rounds = atoi(argv[1]);
	if (pthread_create(&a, NULL, thread_a, &result_a) ||
	    pthread_create(&b, NULL, thread_b, &result_b))
		return 2;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("results %lx %lx\n", result_a, result_b);
	printf("count work_a %lu\n", work_a_calls);
	printf("count work_b %lu\n", work_b_calls);
	return 0;
}
