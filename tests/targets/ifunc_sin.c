/* ifunc_sin.c: calls libm's sin, an IFUNC, until killed: a target for what
 * the summary and --functions say of an IFUNC (what it resolves to in the
 * running process). Prints "PID ready" once it has called it. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) void crunch(double x)
{
	for (int i = 0; i < 1000; i++)
		sink += sin(x + i);
}

int main(void)
{
	crunch(0.5);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	for (unsigned long i = 0;; i++)
		crunch((double)i);
}
