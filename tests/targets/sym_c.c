/* sym_c.c: a target for the symbolizer and unwinder tests.
 *
 * It prints where its functions are ("name 0xADDR" lines, then "end"), so a
 * test knows the truth whatever ASLR did, then calls
 * main -> sym_c_outer -> sym_c_middle -> inner_static -> sym_c_deepest
 * and stops itself with SIGSTOP in sym_c_deepest, so the test can read its
 * mappings, registers and stack. Lines the tests look for carry a comment
 * "LINE:<name>"; the tests find them by reading this file.
 *
 * This is not a workload: it does nothing worth tracing.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

volatile int sym_c_sink;
static void *deepest_return_address;

__attribute__((noinline, noclone)) int sym_c_deepest(int x)
{
	deepest_return_address = __builtin_return_address(0);
	printf("call_site %p\nend\n", deepest_return_address);
	fflush(stdout);
	raise(SIGSTOP);
	sym_c_sink += x;
	return x + 1;
}

__attribute__((noinline, noclone)) static int inner_static(int x)
{
	int r = sym_c_deepest(x * 3); /* LINE:call_deepest */

	sym_c_sink += r;
	return r + 1;
}

__attribute__((noinline, noclone)) int sym_c_middle(int x)
{ /* LINE:middle_start */
	int r = inner_static(x + 2);

	sym_c_sink += r;
	return r + 1;
}

__attribute__((noinline, noclone)) int sym_c_outer(int x)
{
	int r = sym_c_middle(x - 1);

	sym_c_sink += r;
	return r + 1;
}

int main(int argc, char **argv)
{
	printf("sym_c_deepest %p\n", (void *)&sym_c_deepest);
	printf("inner_static %p\n", (void *)&inner_static);
	printf("sym_c_middle %p\n", (void *)&sym_c_middle);
	printf("sym_c_outer %p\n", (void *)&sym_c_outer);
	printf("main %p\n", (void *)&main);
	/* In libc: a shared library whose text is not its first PT_LOAD. */
	printf("strerror %p\n", (void *)&strerror);
	return sym_c_outer(argc) > 0 ? 0 : 1;
}
