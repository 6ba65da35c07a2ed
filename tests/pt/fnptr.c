/* fnptr.c: PT target. Calls through function pointers (indirect calls, each
 * one a TIP packet) chosen at run time from a table, so the compiler cannot
 * turn them into direct calls. Prints its own call counts as
 * `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long add_calls, sub_calls, mul_calls, apply_calls;

__attribute__((noinline)) static long op_add(long a, long b)
{
	add_calls++;
	return a + b;
}

__attribute__((noinline)) static long op_sub(long a, long b)
{
	sub_calls++;
	return a - b;
}

__attribute__((noinline)) static long op_mul(long a, long b)
{
	mul_calls++;
	return a * b;
}

typedef long (*binary_op)(long, long);

/* The table is volatile so that every call reads its target from memory. */
static binary_op volatile operations[] = { op_add, op_sub, op_mul, op_add };

__attribute__((noinline)) static long apply(binary_op op, long a, long b)
{
	apply_calls++;
	return op(a, b);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 25;
	long acc = 1;

	for (int i = 0; i < rounds; i++) {
		acc = operations[i % 4](acc, i) & 0xffff;
		acc = apply(operations[(i + 1) % 4], acc, 3) & 0xffff;
	}
	printf("acc %ld\n", acc);
	printf("count op_add %lu\n", add_calls);
	printf("count op_sub %lu\n", sub_calls);
	printf("count op_mul %lu\n", mul_calls);
	printf("count apply %lu\n", apply_calls);
	return 0;
}
