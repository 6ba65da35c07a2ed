/* unwind_ucontext.c: a C target that switches stacks with makecontext and
 * swapcontext under traced frames, for the function tracer's return-site
 * probes.
 *
 * Each round, run_task(i) makes a fresh context on a stack of its own for
 * task_body(i) and switches to it. task_body calls task_step -> task_leaf;
 * on every other i task_step then calls abandon, which switches back to
 * run_task's context for good: task_body, task_step and abandon never return
 * (their stack is reused by the next round), as frames a longjmp skips. On
 * the other rounds task_body returns, and its context's uc_link resumes
 * run_task. run_task then returns, and main calls after_switch. scale is
 * always called with factor 7, so GCC makes "scale.constprop.0" of it. It
 * prints
 *
 *   count F N     F was called N times (tests/support/program_counts.h)
 *   abandoned N   rounds whose task never returned
 *   sum S         what the rounds computed
 *
 * and exits 0. Argument: the rounds (300).
 *
 * This is not a benchmark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define TASK_STACK_BYTES (64 * 1024)

static unsigned long n_run_task, n_task_body, n_task_step, n_task_leaf, n_abandon, n_after_switch,
	n_scale;
static ucontext_t caller_context, task_context, dead_context;
static char task_stack[TASK_STACK_BYTES] __attribute__((aligned(16)));
static long task_result;
volatile long unwind_sink;

__attribute__((noinline)) void abandon(void)
{
	n_abandon++;
	/* back to run_task, never to return here */
	swapcontext(&dead_context, &caller_context);
}

__attribute__((noinline)) int task_leaf(int v)
{
	n_task_leaf++;
	return v * 3 + 1;
}

__attribute__((noinline)) int task_step(int v)
{
	int r;

	n_task_step++;
	r = task_leaf(v);
	if (v % 2 == 0)
		abandon();
	return r + 1;
}

__attribute__((noinline)) void task_body(int v)
{
	n_task_body++;
	task_result = task_step(v) * 2;
}

__attribute__((noinline)) void run_task(int v)
{
	n_run_task++;
	task_result = -1;
	if (getcontext(&task_context)) {
		perror("getcontext");
		exit(1);
	}
	task_context.uc_stack.ss_sp = task_stack;
	task_context.uc_stack.ss_size = sizeof(task_stack);
	task_context.uc_link = &caller_context;
	makecontext(&task_context, (void (*)(void))task_body, 1, v);
	if (swapcontext(&caller_context, &task_context)) {
		perror("swapcontext");
		exit(1);
	}
}

__attribute__((noinline)) void after_switch(long r)
{
	n_after_switch++;
	unwind_sink = unwind_sink + r;
}

__attribute__((noinline)) static int scale(int v, int factor)
{
	n_scale++;
	return v * factor + (v >> 3);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	long sum = 0;

	for (int i = 0; i < rounds; i++) {
		run_task(i);
		after_switch(task_result);
		sum += task_result + scale(i, 7);
	}
	printf("count run_task %lu\ncount task_body %lu\ncount task_step %lu\n"
	       "count task_leaf %lu\ncount abandon %lu\ncount after_switch %lu\n"
	       "clone scale %lu\nabandoned %lu\nsum %ld\n",
	       n_run_task, n_task_body, n_task_step, n_task_leaf, n_abandon, n_after_switch,
	       n_scale, n_abandon, sum);
	return 0;
}
