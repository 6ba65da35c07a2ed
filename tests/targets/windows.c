/* windows.c: a target for the gate (--filter request_begin,request_end,
 * --trigger on_trigger, --min-duration). It counts, by itself, what the gate
 * must count, and prints it at exit:
 *
 *   windows=W slow=S nested=N triggers=T unmatched=U main_windows=M
 *
 * W: outermost request_begin..request_end windows, S: of which longer than
 * THRESHOLD_US by this program's own clock, N: request_begin calls inside a
 * window (recursion), T: on_trigger calls, U: request_end calls outside any
 * window, M: windows opened by the main thread.
 *
 * Usage: windows THRESHOLD_US THREADS ITERATIONS
 * THREADS workers (the main thread is the first) each run ITERATIONS windows:
 * every fourth sleeps 4 * THRESHOLD_US (slow), the others return at once
 * (fast), every third recurses into two nested request_begin calls, and
 * on_trigger runs inside every other window and outside every fifth. With 2+
 * threads, a last phase checks that window state is per thread: while the main
 * thread is inside a window, a second thread calls request_end (unmatched for
 * it) and then runs its own window (not a nested one).
 *
 * Window state here is per thread, as the gate's is. Slow and fast windows are
 * far apart in length, so that the gate and this program classify them alike.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct counts {
	unsigned long windows, slow, nested, triggers, unmatched;
};

static unsigned long threshold_ns = 1000000;
static unsigned long iterations = 40;

static __thread unsigned depth;
static __thread unsigned long window_start_ns;
static __thread struct counts *mine;

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

static void sleep_ns(unsigned long ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ul), (long)(ns % 1000000000ul) };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void request_begin(void)
{
	if (depth++ == 0)
		window_start_ns = now_ns();
	else
		mine->nested++;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void request_end(void)
{
	if (depth == 0) {
		mine->unmatched++;
	} else if (--depth == 0) {
		mine->windows++;
		if (now_ns() - window_start_ns > threshold_ns)
			mine->slow++;
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void on_trigger(void)
{
	mine->triggers++;
	__asm__ volatile("" ::: "memory");
}

/* Recursion inside a window: each level is a nested request. */
__attribute__((noinline)) void handle_nested(int levels)
{
	if (levels == 0)
		return;
	request_begin();
	handle_nested(levels - 1);
	request_end();
}

static void run_windows(struct counts *c)
{
	mine = c;
	for (unsigned long i = 0; i < iterations; i++) {
		request_begin();
		if (i % 3 == 1)
			handle_nested(2);
		if (i % 2 == 0)
			on_trigger();
		if (i % 4 == 0)
			sleep_ns(4 * threshold_ns);
		request_end();
		if (i % 5 == 0)
			on_trigger();
	}
}

static struct counts thread_counts[64];
static sem_t main_inside, second_done;

static void *worker(void *arg)
{
	run_windows(arg);
	return NULL;
}

static void *second_thread(void *arg)
{
	mine = arg;
	sem_wait(&main_inside);
	request_end();	 /* the main thread's window is not this thread's */
	request_begin(); /* a window of its own, not a nested request */
	request_end();
	sem_post(&second_done);
	return NULL;
}

int main(int argc, char **argv)
{
	struct counts total = { 0 }, main_counts = { 0 }, second = { 0 };
	unsigned long nr_threads = 2;
	pthread_t threads[64], helper;

	if (argc != 4) {
		fprintf(stderr, "usage: windows THRESHOLD_US THREADS ITERATIONS\n");
		return 2;
	}
	threshold_ns = strtoul(argv[1], NULL, 10) * 1000ul;
	nr_threads = strtoul(argv[2], NULL, 10);
	iterations = strtoul(argv[3], NULL, 10);
	if (nr_threads < 1 || nr_threads > 63)
		return 2;

	for (unsigned long t = 1; t < nr_threads; t++)
		if (pthread_create(&threads[t], NULL, worker, &thread_counts[t]))
			return 1;
	run_windows(&main_counts);
	for (unsigned long t = 1; t < nr_threads; t++)
		pthread_join(threads[t], NULL);

	if (nr_threads >= 2) {
		sem_init(&main_inside, 0, 0);
		sem_init(&second_done, 0, 0);
		if (pthread_create(&helper, NULL, second_thread, &second))
			return 1;
		mine = &main_counts;
		request_begin();
		sem_post(&main_inside);
		sem_wait(&second_done);
		sleep_ns(4 * threshold_ns);
		request_end();
		pthread_join(helper, NULL);
	}

	thread_counts[0] = main_counts;
	thread_counts[nr_threads] = second;
	for (unsigned long t = 0; t <= nr_threads; t++) {
		total.windows += thread_counts[t].windows;
		total.slow += thread_counts[t].slow;
		total.nested += thread_counts[t].nested;
		total.triggers += thread_counts[t].triggers;
		total.unmatched += thread_counts[t].unmatched;
	}
	printf("windows=%lu slow=%lu nested=%lu triggers=%lu unmatched=%lu main_windows=%lu\n",
	       total.windows, total.slow, total.nested, total.triggers, total.unmatched,
	       main_counts.windows);
	return 0;
}
