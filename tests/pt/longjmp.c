/* longjmp.c: PT target. longjmp from three frames down back to main's setjmp,
 * so that calls are left without their returns: a return-compression stack
 * that kept those frames would mispredict the next returns. Prints its own
 * call counts as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long outer_calls, middle_calls, inner_calls, after_calls;

__attribute__((noinline)) static void inner(jmp_buf *target, int round)
{
	inner_calls++;
	if (round % 4 != 3)
		longjmp(*target, round + 1);
}

__attribute__((noinline)) static void middle(jmp_buf *target, int round)
{
	middle_calls++;
	inner(target, round);
	__asm__ volatile("" ::: "memory"); /* keeps the call a call, not a jmp */
}

__attribute__((noinline)) static void outer(jmp_buf *target, int round)
{
	outer_calls++;
	middle(target, round);
	__asm__ volatile("" ::: "memory");
}

/* Called after each longjmp: its return is the first one a decoder must
 * match against what is really on the stack. */
__attribute__((noinline)) static int after_jump(int value)
{
	after_calls++;
	return value * 2;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	volatile long total = 0;

	for (volatile int round = 0; round < rounds; round++) {
		jmp_buf target;
		int value = setjmp(target);

		if (value == 0)
			outer(&target, round);
		total += after_jump(value);
	}
	printf("total %ld\n", (long)total);
	printf("count outer %lu\n", outer_calls);
	printf("count middle %lu\n", middle_calls);
	printf("count inner %lu\n", inner_calls);
	printf("count after_jump %lu\n", after_calls);
	return 0;
}
