/* unwind_longjmp.c: a C target whose longjmp crosses traced frames, for the
 * function tracer's return-site probes.
 *
 * Each round, catcher(i) sets a jump buffer and calls level1 -> level2 ->
 * level3 -> thrower(i), and thrower longjmps back on every third i: level1,
 * level2, level3 and thrower never return then, and catcher calls
 * on_caught, the first traced call after the jump. The longjmp's path calls
 * a cold function first (before_jump), so GCC moves it out of line
 * ("thrower.cold", part of thrower). scale is always called with factor 7, so GCC makes
 * "scale.constprop.0" of it (mk/unwind.mk checks both with nm). pick_step
 * ends in tail calls (jmp odd_step, jmp even_step), and cond_pick, written
 * in assembly, in a conditional one (jne odd_step; jmp even_step). It
 * prints
 *
 *   count F N     F was called N times (tests/support/program_counts.h)
 *   caught N      longjmps caught
 *   sum S         what the rounds computed
 *
 * and exits 0. Argument: the rounds (300).
 *
 * This is not a benchmark.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long n_catcher, n_level1, n_level2, n_level3, n_thrower, n_on_caught, n_scale,
	n_before_jump, n_pick_step, n_odd_step, n_even_step;
unsigned long n_cond_pick; /* counted by cond_pick, in assembly */
static jmp_buf catch_point;
volatile long unwind_sink;

/* cold: the block that calls it is never expected to run, which is what
 * makes GCC move it out of line */
__attribute__((noinline, cold)) void before_jump(int v)
{
	n_before_jump++;
	unwind_sink = unwind_sink + v;
}

__attribute__((noinline)) int thrower(int v)
{
	n_thrower++;
	if (v % 3 == 0) {
		before_jump(v);
		longjmp(catch_point, v + 1);
	}
	return v + 1;
}

__attribute__((noinline)) int level3(int v)
{
	n_level3++;
	return thrower(v) * 2 + 1;
}

__attribute__((noinline)) int level2(int v)
{
	n_level2++;
	return level3(v) * 3 + 1;
}

__attribute__((noinline)) int level1(int v)
{
	n_level1++;
	return level2(v) * 5 + 1;
}

__attribute__((noinline)) void on_caught(int code)
{
	n_on_caught++;
	unwind_sink = unwind_sink + code;
}

__attribute__((noinline)) long catcher(int v)
{
	volatile int code;

	n_catcher++;
	code = setjmp(catch_point);
	if (!code)
		return level1(v);
	on_caught(code);
	return -code;
}

__attribute__((noinline)) static int scale(int v, int factor)
{
	n_scale++;
	return v * factor + (v >> 3);
}

__attribute__((noinline)) int odd_step(int v)
{
	n_odd_step++;
	return v * 3 + 1;
}

__attribute__((noinline)) int even_step(int v)
{
	n_even_step++;
	return v / 2;
}

/* Tail calls, one of them conditional (GCC: jne odd_step; jmp even_step). */
__attribute__((noinline)) int pick_step(int v)
{
	n_pick_step++;
	if (v & 1)
		return odd_step(v);
	return even_step(v);
}

/* pick_step with a conditional tail call, which neither GCC nor clang makes
 * here: it leaves by jne when v is odd, else by jmp. */
int cond_pick(int v);
__asm__(".text\n"
	".globl cond_pick\n"
	".type cond_pick, @function\n"
	"cond_pick:\n"
	"	addq $1, n_cond_pick(%rip)\n"
	"	testl $1, %edi\n"
	"	jne odd_step\n"
	"	jmp even_step\n"
	".size cond_pick, .-cond_pick\n");

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	long sum = 0;

	for (int i = 0; i < rounds; i++) {
		sum += catcher(i);
		sum += scale(i, 7);
		sum += pick_step(i);
		sum += cond_pick(i + 1);
	}
	printf("count catcher %lu\ncount level1 %lu\ncount level2 %lu\ncount level3 %lu\n"
	       "count thrower %lu\ncount before_jump %lu\ncount on_caught %lu\n"
	       "count pick_step %lu\ncount cond_pick %lu\ncount odd_step %lu\n"
	       "count even_step %lu\n"
	       "clone scale %lu\ncaught %lu\nsum %ld\n",
	       n_catcher, n_level1, n_level2, n_level3, n_thrower, n_before_jump, n_on_caught,
	       n_pick_step, n_cond_pick, n_odd_step, n_even_step, n_scale, n_on_caught, sum);
	return 0;
}
