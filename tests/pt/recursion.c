/* recursion.c: PT target. Recursion 200 frames deep, three times: deeper than
 * the 64-entry return-compression stack of Intel PT, so that the returns of
 * the outer frames can only be decoded from TIP packets. Prints its own call
 * counts as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long descend_calls;
static unsigned long bottom_calls;

__attribute__((noinline)) static int bottom(int depth)
{
	bottom_calls++;
	return depth;
}

/* Not a tail call: the addition after the recursive call keeps every frame. */
__attribute__((noinline)) static int descend(int depth, int limit)
{
	descend_calls++;
	if (depth == limit)
		return bottom(depth);
	return descend(depth + 1, limit) + 1;
}

int main(int argc, char **argv)
{
	int limit = argc > 1 ? atoi(argv[1]) : 200;
	long sum = 0;

	for (int round = 0; round < 3; round++)
		sum += descend(1, limit);
	printf("sum %ld\n", sum);
	printf("count descend %lu\n", descend_calls);
	printf("count bottom %lu\n", bottom_calls);
	return 0;
}
