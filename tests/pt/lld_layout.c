/* lld_layout.c: PT target linked with lld, which lays out its read-only
 * segment and its code in one file page, so the code's file offset is not
 * its address's offset in its page (p_vaddr - p_offset differs by a page
 * between the two PT_LOAD segments). Whoever finds a mapping's load bias
 * through the first segment that holds the mapped file offset, not the
 * executable one, places every function a page off.
 *
 * big() is longer than a page (most of it jumped over), then come finish()
 * and enter(), which tail-calls finish() (-O2; mk/pt-targets.mk checks the
 * jmp). A page off, enter and finish both fall inside big(), and the tail
 * call would be taken for a jump inside one function and lost. Printed:
 * `count enter N`, `count big N`, `entered finish N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long big_calls, enter_calls, finish_entries;

__attribute__((noinline, aligned(16))) int big(int x)
{
	big_calls++;
	__asm__ volatile("jmp 1f\n\t.fill 0x1100, 1, 0x90\n1:" ::: "memory");
	return x + 1;
}

__attribute__((noinline, aligned(16))) int finish(int x)
{
	finish_entries++;
	__asm__ volatile("" ::: "memory");
	return 2 * x;
}

__attribute__((noinline, aligned(16))) int enter(int x)
{
	enter_calls++;
	__asm__ volatile("" ::: "memory");
	return finish(x + 1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	int sum = 0;

	for (int i = 0; i < rounds; i++)
		sum += enter(i) + big(i);
	printf("sum %d\n", sum);
	printf("count enter %lu\n", enter_calls);
	printf("count big %lu\n", big_calls);
	printf("entered finish %lu\n", finish_entries);
	return 0;
}
