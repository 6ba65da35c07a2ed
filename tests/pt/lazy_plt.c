/* lazy_plt.c: PT target, linked with -z lazy: the first call of getppid()
 * through the PLT goes through the dynamic linker's resolver
 * (_dl_runtime_resolve, which calls _dl_fixup and jumps to getppid), the
 * second goes straight from the PLT to libc. Prints its own call counts as
 * `count FUNCTION N`.
 *
 * Not a benchmark: it stays small because softpt single-steps it. */
#include <stdio.h>
#include <unistd.h>

static unsigned long ask_calls;

/* The only caller of getppid in this program, so that its first call is the
 * one that binds the PLT slot. */
__attribute__((noinline)) static long ask_parent(void)
{
	long parent = getppid();

	ask_calls++;
	return parent;
}

int main(void)
{
	long first = ask_parent();
	long second = ask_parent();

	printf("same parent %d\n", first == second);
	printf("count ask_parent %lu\n", ask_calls);
	return 0;
}
