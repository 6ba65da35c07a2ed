/* threads4.c: four threads, each spending its time in its own worker function
 * (worker_0 .. worker_3), while the main thread waits. Prints each thread's
 * tid and call count. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long rounds = 150;

__attribute__((noinline)) static void spin(void)
{
	static __thread volatile unsigned long x;

	for (unsigned long i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ul + 1;
}

#define WORKER(n)                                                                                  \
	__attribute__((noinline)) void *worker_##n(void *arg)                                      \
	{                                                                                          \
		unsigned long calls = 0;                                                           \
		for (unsigned long r = 0; r < rounds; r++, calls++)                                \
			spin();                                                                    \
		printf("worker_" #n " tid %ld calls %lu\n", (long)syscall(SYS_gettid), calls);     \
		return arg;                                                                        \
	}

WORKER(0)
WORKER(1)
WORKER(2)
WORKER(3)

int main(int argc, char **argv)
{
	void *(*workers[4])(void *) = { worker_0, worker_1, worker_2, worker_3 };
	pthread_t threads[4];

	if (argc > 1)
		rounds = strtoul(argv[1], NULL, 10);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&threads[i], NULL, workers[i], NULL))
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
