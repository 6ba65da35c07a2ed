/* qsort_callback.c: PT target. libc's qsort calls back into this program's
 * comparator: calls from inside libc into the executable and returns from it,
 * across objects. Prints its own call counts as `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long compare_calls;

__attribute__((noinline)) static int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	compare_calls++;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40;
	int values[256];
	unsigned seed = 12345;

	if (n < 1 || n > 256)
		return 2;
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		values[i] = (int)(seed >> 16) % 1000;
	}
	qsort(values, (size_t)n, sizeof(values[0]), compare_ints);
	for (int i = 1; i < n; i++)
		if (values[i - 1] > values[i])
			return 3;
	printf("smallest %d largest %d\n", values[0], values[n - 1]);
	printf("count compare_ints %lu\n", compare_calls);
	return 0;
}
