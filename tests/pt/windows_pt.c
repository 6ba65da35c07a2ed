/* windows_pt.c: a PT target for --filter windows applied while decoding
 * (tests/e2e/test_decode_windows.c). Each of N rounds runs outside_work, then
 * a request_begin..request_end window around slow_work (every fourth round)
 * or fast_work. Between outside_work and the window, and after it, main spins
 * by itself (no calls), so that the trace's clock moves on between what runs
 * outside a window and what runs inside it, even at a coarse PT timer
 * resolution. It prints what it did:
 *
 *   windows=W slow=S fast=F outside=O
 *
 * Usage: windows_pt [N]   (default 4)
 */
#include <stdio.h>
#include <stdlib.h>

#define PAD_ITERATIONS 2000

static volatile unsigned long sink;

/* Spins in the caller's frame. */
static inline __attribute__((always_inline)) void pad(void)
{
	for (unsigned i = 0; i < PAD_ITERATIONS; i++)
		sink += i;
}

__attribute__((noinline)) void request_begin(void)
{
	sink++;
}

__attribute__((noinline)) void request_end(void)
{
	sink++;
}

__attribute__((noinline)) void leaf(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		sink += i * 3u;
}

__attribute__((noinline)) void slow_work(void)
{
	for (int i = 0; i < 4; i++)
		leaf(500);
}

__attribute__((noinline)) void fast_work(void)
{
	leaf(200);
}

__attribute__((noinline)) void outside_work(void)
{
	leaf(300);
	leaf(300);
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4;
	unsigned long slow = 0, fast = 0, outside = 0;

	for (unsigned long i = 0; i < n; i++) {
		outside_work();
		outside++;
		pad();
		request_begin();
		if (i % 4 == 0) {
			slow_work();
			slow++;
		} else {
			fast_work();
			fast++;
		}
		request_end();
		pad();
	}
	outside_work();
	outside++;
	printf("windows=%lu slow=%lu fast=%lu outside=%lu\n", n, slow, fast, outside);
	return 0;
}
