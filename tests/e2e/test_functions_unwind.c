/* test_functions_unwind.c: the function tracer's return-site probes on
 * programs that leave frames without returning from them: a C++ exception
 * (tests/targets/unwind_throw), a longjmp (unwind_longjmp) and a ucontext
 * stack switch (unwind_ucontext), each over three traced frames and caught in
 * a fourth, every function of the program traced. Under tracing each program
 * must print what it prints bare and exit the same way (a uretprobe on any
 * of those frames makes the C++ one terminate); the trace must hold exactly
 * the calls each program counted, the abandoned frames ending no later than
 * the first call after the catch, and tail calls (one conditional) ending
 * their caller where they jump; no span may be a ".cold" piece, and the
 * constant-argument clone GCC made (checked with nm) shows as itself, with
 * its suffix.
 *
 * Not here: the exit finder's units (tests/unit/test_fn_exits.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt_reader.h"
#include "harness.h"
#include "program_counts.h"

#define ROUNDS "300"

/* One unwinding target: where the unwinding ends and what its clone of scale
 * is called in a trace and in nm. */
struct unwind_target {
	const char *program;	  /* under the build directory */
	const char *catcher;	  /* span that catches */
	const char *first_level;  /* its child the unwinding abandons */
	const char *after_catch;  /* the first call after the catch, catcher's child */
	const char *clone_span;	  /* scale's clone, as the trace names it */
	const char *clone_symbol; /* and as nm does */
	long count_lines;	  /* "count" lines the program prints */
};

static const struct unwind_target throw_target = {
	.program = "tests/targets/unwind_throw",
	.catcher = "catcher(int)",
	.first_level = "level1(int)",
	.after_catch = "on_caught(int)",
	.clone_span = "scale(int, int) [clone .constprop.0]",
	.clone_symbol = "_ZL5scaleii.constprop.0",
	.count_lines = 6,
};

static const struct unwind_target longjmp_target = {
	.program = "tests/targets/unwind_longjmp",
	.catcher = "catcher",
	.first_level = "level1",
	.after_catch = "on_caught",
	.clone_span = "scale.constprop.0",
	.clone_symbol = "scale.constprop.0",
	.count_lines = 11,
};

/* run_task is where the switched-to stack's frames are abandoned; the first
 * call after it returns is main's after_switch, so the catch is checked as
 * "task_body ends before after_switch begins" (below). */
static const struct unwind_target ucontext_target = {
	.program = "tests/targets/unwind_ucontext",
	.catcher = "run_task",
	.first_level = "task_body",
	.after_catch = NULL,
	.clone_span = "scale.constprop.0",
	.clone_symbol = "scale.constprop.0",
	.count_lines = 6,
};

/* The number on the program's line "PREFIX N"; asserts there is one. */
static unsigned long program_value(const char *out, const char *prefix)
{
	const char *at = strstr(out, prefix);

	cr_assert_not_null(at, "no \"%s\" line in:\n%s", prefix, out);
	return strtoul(at + strlen(prefix), NULL, 10);
}

static size_t spans_named(const struct fxt_trace *t, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_spans; i++)
		n += !strcmp(t->spans[i].name, name);
	return n;
}

static const char *parent_name(const struct fxt_trace *t, const struct fxt_span *s)
{
	const struct fxt_span *p = fxt_span_parent(t, s);

	return p ? p->name : "(none: top level)";
}

/* Whether `nm exe` lists symbol. */
static bool nm_has(const char *exe, const char *symbol)
{
	char cmd[4200], line[1024];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s'", exe);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		char *name = strrchr(line, ' ');

		line[strcspn(line, "\n")] = '\0';
		if (name && !strcmp(name + 1, symbol))
			found = true;
	}
	pclose(p);
	return found;
}

/* No span is an out-of-line piece: ".cold" in no name. */
static void assert_no_cold_span(const struct fxt_trace *t)
{
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert_null(strstr(t->spans[i].name, ".cold"), "a span named %s",
			       t->spans[i].name);
}

/* Every after_catch span is the catcher's child, after the abandoned
 * first_level sibling has ended; abandoned frames never outlive the catch. */
static void assert_unwound_at_the_catch(const struct fxt_trace *t, const struct unwind_target *u)
{
	size_t seen = 0;

	for (size_t i = 0; u->after_catch && i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i], *catcher, *c, *level = NULL;

		if (strcmp(s->name, u->after_catch))
			continue;
		seen++;
		cr_assert_str_eq(parent_name(t, s), u->catcher, "%s is under %s", s->name,
				 parent_name(t, s));
		catcher = fxt_span_parent(t, s);
		fxt_for_each_child(t, catcher, c)
		{
			if (!strcmp(c->name, u->first_level))
				level = c;
		}
		cr_assert_not_null(level, "no %s under the %s of %s", u->first_level, u->catcher,
				   s->name);
		cr_assert_leq(level->end_ns, s->begin_ns,
			      "the abandoned %s ends at %llu ns, after %s began at %llu ns",
			      level->name, (unsigned long long)level->end_ns, s->name,
			      (unsigned long long)s->begin_ns);
		cr_assert_eq(fxt_span_nr_children(t, catcher), 2, "%s has %zu children", u->catcher,
			     fxt_span_nr_children(t, catcher));
	}
	if (u->after_catch)
		cr_assert_gt(seen, 0, "no %s in the trace", u->after_catch);
}

/* A task's frames are under run_task and over before main's next call. */
static void assert_switched_frames_end_with_run_task(const struct fxt_trace *t)
{
	size_t seen = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (!strcmp(s->name, "task_body")) {
			const struct fxt_span *run = fxt_span_parent(t, s);

			cr_assert_str_eq(parent_name(t, s), "run_task");
			cr_assert_leq(s->end_ns, run->end_ns);
			seen++;
		}
		if (!strcmp(s->name, "abandon"))
			cr_assert_str_eq(parent_name(t, s), "task_step");
		if (!strcmp(s->name, "task_step"))
			cr_assert_str_eq(parent_name(t, s), "task_body");
		if (!strcmp(s->name, "after_switch"))
			cr_assert_str_eq(parent_name(t, s), "main");
	}
	cr_assert_gt(seen, 0);
}

/* The program bare, then under --backend uprobe with every function traced:
 * the same output and status, and a trace of exactly its calls; more (may
 * be NULL) checks the trace further. */
static void check_target(const struct unwind_target *u,
			 void (*more)(const struct fxt_trace *t, const char *out))
{
	static const char *const uprobe[] = { "--backend", "uprobe", "--full-execution", NULL };
	const char *args[] = { ROUNDS, NULL };
	const char *exe = build_path(u->program);
	char dir[64], why[256] = "";
	struct proc_result *bare = malloc(sizeof(*bare)), *traced = malloc(sizeof(*traced));
	struct fxt_trace *t;
	long checked;

	require_root("function tracer");
	require_tool("nm", "binutils");
	cr_assert_not_null(bare);
	cr_assert_not_null(traced);
	cr_assert(nm_has(exe, u->clone_symbol), "GCC made no %s in %s", u->clone_symbol, exe);
	char *argv[] = { (char *)exe, ROUNDS, NULL };
	run_process(argv, 60, bare);
	cr_assert_eq(bare->exit_code, 0, "%s bare: status %d\n%s%s", u->program, bare->exit_code,
		     bare->out, bare->err);

	make_test_dir(dir, sizeof(dir));
	/* rearview exits with the program's status: 0 is asserted there */
	t = rearview_run(dir, uprobe, NULL, u->program, args, 120, traced);
	cr_assert_str_eq(traced->out, bare->out, "traced, the program printed\n%s\nbare:\n%s",
			 traced->out, bare->out);
	checked = pc_check_trace(traced->out, t, why, sizeof(why));
	if (checked < 0)
		fxt_trace_dump(t, stderr);
	cr_assert_eq(checked, u->count_lines, "%s\nprogram output:\n%s\nrearview:\n%s", why,
		     traced->out, traced->err);
	cr_assert_eq(spans_named(t, u->clone_span), program_value(traced->out, "clone scale "),
		     "spans of %s", u->clone_span);
	assert_no_cold_span(t);
	assert_unwound_at_the_catch(t, u);
	if (more)
		more(t, traced->out);
	fxt_trace_free(t);
	cleanup_dir(dir);
	free(bare);
	free(traced);
}

/* A tail call ends its caller where it jumps: the callee is the caller's
 * sibling, under main, and the caller has no children; cond_pick's jne
 * leaves only when taken (else its jmp does), so exactly one exit each. */
static void check_tail_calls(const struct fxt_trace *t, const char *out)
{
	size_t callees = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (!strcmp(s->name, "odd_step") || !strcmp(s->name, "even_step")) {
			cr_assert_str_eq(parent_name(t, s), "main", "%s is under %s", s->name,
					 parent_name(t, s));
			callees++;
		}
		if (!strcmp(s->name, "pick_step") || !strcmp(s->name, "cond_pick"))
			cr_assert_eq(fxt_span_nr_children(t, s), 0, "%s has %zu children", s->name,
				     fxt_span_nr_children(t, s));
	}
	cr_assert_eq(callees, program_value(out, "count pick_step ") +
				      program_value(out, "count cond_pick "));
}

static void check_switches(const struct fxt_trace *t, const char *out)
{
	cr_assert_eq(program_value(out, "abandoned "), 150);
	assert_switched_frames_end_with_run_task(t);
}

Test(functions_unwind, a_cpp_exception_through_traced_frames_runs_as_bare, .timeout = 180)
{
	check_target(&throw_target, NULL);
}

/* The same through one perf link per probe (kernels without uprobe_multi). */
Test(functions_unwind, a_cpp_exception_runs_as_bare_through_perf_links, .timeout = 180)
{
	cr_assert_eq(setenv("REARVIEW_UPROBE_MULTI", "0", 1), 0);
	check_target(&throw_target, NULL);
}

Test(functions_unwind, a_longjmp_over_traced_frames_runs_as_bare, .timeout = 180)
{
	check_target(&longjmp_target, check_tail_calls);
}

Test(functions_unwind, a_ucontext_stack_switch_under_traced_frames_runs_as_bare, .timeout = 180)
{
	check_target(&ucontext_target, check_switches);
}

/* What the return sites are for: the same C++ program under uretprobes
 * terminates at its first throw (the unwinder finds the kernel's trampoline
 * where a return address was). If this ever passes, uretprobes no longer
 * break exceptions and --exits uretprobe's help should say so. */
Test(functions_unwind, uretprobes_break_the_same_cpp_program, .timeout = 120)
{
	char dir[64], out[128];
	struct proc_result *r = malloc(sizeof(*r));

	require_root("function tracer");
	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "uprobe",
			 "--exits",
			 "uretprobe",
			 "--functions",
			 "level*,check*",
			 "-o",
			 out,
			 "--",
			 (char *)build_path(throw_target.program),
			 ROUNDS,
			 NULL };
	run_process(argv, 60, r);
	cr_assert(!r->timed_out, "%s", r->err);
	cr_assert(strstr(r->out, "terminate"), "the program did not terminate:\n%s\n%s", r->out,
		  r->err);
	cleanup_dir(dir);
	free(r);
}
