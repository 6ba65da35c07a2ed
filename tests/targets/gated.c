/* gated.c: a target for the gate with the sampling engine: it burns CPU in
 * functions that only ever run inside a request_begin..request_end window,
 * or only outside one, or only before or after the first on_trigger call, so
 * that a trace taken with --filter, --min-duration or --trigger shows which
 * samples were kept. It prints what it did at exit:
 *
 *   windows=W slow=S triggers=T
 *
 * Usage: gated windows N   N windows, every fourth slow (slow_work, 30 ms of
 *                          CPU), the others fast (fast_work, 0.2 ms); between
 *                          windows outside_work runs for 2 ms
 *        gated trigger N   N rounds of before_trigger (4 ms) then on_trigger;
 *                          after the first on_trigger, after_first_trigger
 *                          runs for 30 ms, once
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

/* Burns CPU for ns nanoseconds, in the caller's frame. */
static inline __attribute__((always_inline)) void burn(unsigned long ns)
{
	unsigned long end = now_ns() + ns;

	while (now_ns() < end)
		for (int i = 0; i < 200; i++)
			sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) void request_begin(void)
{
	sink++;
}

__attribute__((noinline)) void request_end(void)
{
	sink++;
}

__attribute__((noinline)) void on_trigger(void)
{
	sink++;
}

__attribute__((noinline)) void slow_work(void)
{
	burn(30000000);
}

__attribute__((noinline)) void fast_work(void)
{
	burn(200000);
}

__attribute__((noinline)) void outside_work(void)
{
	burn(2000000);
}

__attribute__((noinline)) void before_trigger(void)
{
	burn(4000000);
}

__attribute__((noinline)) void after_first_trigger(void)
{
	burn(30000000);
}

int main(int argc, char **argv)
{
	unsigned long n, windows = 0, slow = 0, triggers = 0;

	if (argc != 3 || (strcmp(argv[1], "windows") && strcmp(argv[1], "trigger"))) {
		fprintf(stderr, "usage: gated windows|trigger N\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 10);
	if (!strcmp(argv[1], "windows")) {
		for (unsigned long i = 0; i < n; i++) {
			outside_work();
			request_begin();
			if (i % 4 == 0) {
				slow_work();
				slow++;
			} else {
				fast_work();
			}
			request_end();
			windows++;
		}
		outside_work();
	} else {
		for (unsigned long i = 0; i < n; i++) {
			before_trigger();
			on_trigger();
			triggers++;
			if (i == 0)
				after_first_trigger();
		}
	}
	printf("windows=%lu slow=%lu triggers=%lu\n", windows, slow, triggers);
	return 0;
}
