/* tailcall.c: PT target, built at -O2 so that the compiler turns the last
 * call of dispatch() into a jmp (mk/pt-targets.mk checks the object code): the
 * tail-called functions are entered without a call and return straight to
 * dispatch's caller. Functions reached by calls are printed as
 * `count FUNCTION N`, the tail-called ones as `entered FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long dispatch_calls, even_entries, odd_entries;

__attribute__((noinline)) int tail_even(int x)
{
	even_entries++;
	__asm__ volatile("" ::: "memory");
	return x / 2;
}

__attribute__((noinline)) int tail_odd(int x)
{
	odd_entries++;
	__asm__ volatile("" ::: "memory");
	return 3 * x + 1;
}

/* Both branches end in a sibling call: the jmp is the last instruction. */
__attribute__((noinline)) int dispatch(int x)
{
	dispatch_calls++;
	if (x % 2 == 0)
		return tail_even(x);
	return tail_odd(x);
}

int main(int argc, char **argv)
{
	int walks = argc > 1 ? atoi(argv[1]) : 1; /* more for a longer trace */
	int steps = 0;

	/* The Collatz walk from 27 takes 111 steps. */
	for (int walk = 0; walk < walks; walk++) {
		int x = 27;
		while (x != 1) {
			x = dispatch(x);
			steps++;
		}
	}
	printf("steps %d\n", steps);
	printf("count dispatch %lu\n", dispatch_calls);
	printf("entered tail_even %lu\n", even_entries);
	printf("entered tail_odd %lu\n", odd_entries);
	return 0;
}
