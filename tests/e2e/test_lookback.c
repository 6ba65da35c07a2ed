/* test_lookback.c: DWARF sampling unwound as samples arrive: the default
 * flight recorder holds tens of seconds of a busy thread and the summary
 * says what it holds of the recording; a stack deeper than the copy is drawn
 * under a [stack cut] frame with one main a stretch on the CPU (from call chains, and from a
 * raw-stack capture); perf's tools read the capture's call chains. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt_reader.h"
#include "harness.h"

static double seconds_of(const char *text)
{
	double value = atof(text);
	const char *unit = text;

	while (*unit && (*unit == '.' || (*unit >= '0' && *unit <= '9')))
		unit++;
	if (!strncmp(unit, " ms", 3))
		return value / 1e3;
	if (!strncmp(unit, " us", 3))
		return value / 1e6;
	if (!strncmp(unit, " min", 4))
		return value * 60;
	return value; /* " s" */
}

/* The first span of `name` to the end of its last, in seconds. */
static double spread_s(const struct fxt_trace *t, const char *name)
{
	size_t n = fxt_count_spans(t, FXT_ANY, FXT_ANY, name);
	uint64_t first = UINT64_MAX, last = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, name, i);

		if (s->begin_ns < first)
			first = s->begin_ns;
		if (s->end_ns > last)
			last = s->end_ns;
	}
	return n ? (double)(last - first) / 1e9 : 0;
}

static bool has_ancestor(const struct fxt_trace *t, const struct fxt_span *s, const char *name)
{
	for (const struct fxt_span *p = fxt_span_parent(t, s); p; p = fxt_span_parent(t, p))
		if (!strncmp(p->name, name, strlen(name)))
			return true;
	return false;
}

Test(lookback, the_default_recorder_holds_30_s_of_a_busy_thread, .timeout = 240)
{
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const args[] = { "40000", NULL };
	const char *holds;
	double ran_s, held_s, recorded_s;

	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, NULL, "tests/targets/busy_for", args, 200, &r);
	cr_assert(strstr(r.out, "ran ms: "), "%s", r.out);
	ran_s = atof(strstr(r.out, "ran ms: ") + 8) / 1e3;
	cr_assert_geq(ran_s, 40.0);
	cr_assert_geq(spread_s(t, "spin_round"), 30.0,
		      "the trace holds spin_round over %.1f s of the %.1f s it ran",
		      spread_s(t, "spin_round"), ran_s);
	cr_assert_leq(spread_s(t, "spin_round"), ran_s + 1.0);
	/* the summary says what the trace holds against how long it recorded */
	holds = strstr(r.err, "rearview: the trace holds ");
	cr_assert_not_null(holds, "%s", r.err);
	holds += strlen("rearview: the trace holds ");
	if (!strncmp(holds, "all ", 4)) {
		recorded_s = seconds_of(holds + 4);
		held_s = recorded_s;
	} else {
		cr_assert(!strncmp(holds, "the last ", 9), "%s", r.err);
		held_s = seconds_of(holds + 9);
		cr_assert_not_null(strstr(holds, " of "), "%s", r.err);
		recorded_s = seconds_of(strstr(holds, " of ") + 4);
		cr_assert(strstr(holds, "--snapshot-size for more"), "%s", r.err);
	}
	cr_assert_geq(held_s, 30.0, "%s", r.err);
	cr_assert_geq(recorded_s, ran_s - 0.5, "%s", r.err);
	cr_assert_leq(recorded_s, ran_s + 10.0, "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* A small recorder ages samples out: the summary says how much of the
 * recording the trace holds, how many samples aged out, and what to do. */
Test(lookback, a_small_recorder_says_what_aged_out, .timeout = 60)
{
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const options[] = { "--snapshot-size", "64K", NULL };
	const char *const args[] = { "2000", NULL };
	const char *holds;

	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, options, NULL, "tests/targets/busy_for", args, 50, &r);
	holds = strstr(r.err, "rearview: the trace holds the last ");
	cr_assert_not_null(holds, "%s", r.err);
	cr_assert_lt(seconds_of(holds + strlen("rearview: the trace holds the last ")), 1.9, "%s",
		     r.err);
	cr_assert(strstr(holds, "older samples aged out of the flight recorder"), "%s", r.err);
	cr_assert(strstr(holds, "--snapshot-size for more"), "%s", r.err);
	cr_assert_lt(spread_s(t, "spin_round"), 1.9);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* Whether the thread's off-CPU span ends at time ns (it came back then). */
static bool back_on_cpu_at(const struct fxt_trace *t, uint64_t tid, uint64_t ns)
{
	for (size_t i = 0; i < t->nr_spans; i++)
		if (t->spans[i].tid == tid && t->spans[i].end_ns == ns &&
		    !strncmp(t->spans[i].name, "[off-cpu", 8))
			return true;
	return false;
}

/* The thread's spans of name after its first begin only where it came back
 * to the CPU (a switch out ends the open frames, test_off_cpu): none is a
 * false root made by a cut stack. Returns how many there are. */
static size_t check_resumed_only(const struct fxt_trace *t, const char *name, const char *label)
{
	size_t n = fxt_count_spans(t, FXT_ANY, FXT_ANY, name);

	for (size_t i = 1; i < n; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, name, i);

		cr_assert(back_on_cpu_at(t, s->tid, s->begin_ns),
			  "%s: a second %s at %llu ns, not where the thread came back to the CPU",
			  label, name, (unsigned long long)s->begin_ns);
	}
	return n;
}

/* deepstack recurses 64 levels of 1 KiB: deeper than any copy asked here. */
static void check_cut(const char *const *options, const char *label)
{
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const args[] = { "1500", NULL };
	const char *cut = "[stack cut: 4 KiB copied]";
	size_t n_cut, n_spin;

	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, options, NULL, "tests/targets/deepstack", args, 90, &r);
	cr_assert(strstr(r.out, "deep rounds: "), "%s", r.out);
	cr_assert_gt(atol(strstr(r.out, "deep rounds: ") + 13), 0);
	n_cut = fxt_count_spans(t, FXT_ANY, FXT_ANY, cut);
	n_spin = fxt_count_spans(t, FXT_ANY, FXT_ANY, "deep_spin");
	cr_assert_gt(n_cut, 0, "%s: no %s span:\n%s", label, cut, r.err);
	cr_assert_gt(n_spin, 0, "%s", label);
	for (size_t i = 0; i < n_spin; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, "deep_spin", i);

		cr_assert(has_ancestor(t, s, "[stack cut: "),
			  "%s: deep_spin at %llu ns is not "
			  "under [stack cut]",
			  label, (unsigned long long)s->begin_ns);
	}
	/* (the loader's own deep frames may be cut before main: only the
	 * recursion's are checked for main) */
	for (size_t i = 0; i < n_spin; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, "deep_spin", i);

		cr_assert(has_ancestor(t, s, "main"), "%s: deep_spin at %llu ns is not under main",
			  label, (unsigned long long)s->begin_ns);
	}
	/* one main, resumed only where the thread came back to the CPU, not a
	 * false one per run of cut samples */
	cr_assert_gt(check_resumed_only(t, "main", label), 0, "%s", label);
	check_resumed_only(t, "__libc_start_main", label);
	cr_assert(strstr(r.err, "samples had stacks deeper than the copy"), "%s: %s", label, r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(lookback, a_stack_deeper_than_the_copy_is_drawn_under_a_cut_frame, .timeout = 120)
{
	const char *const options[] = { "--callgraph-mode", "dwarf,4096", NULL };

	check_cut(options, "call chains");
}

Test(lookback, a_raw_stack_capture_shows_the_cut_too, .timeout = 120)
{
	const char *const options[] = { "--callgraph-mode", "dwarf,4096", "--full-execution",
					"--keep-raw-stacks", NULL };

	check_cut(options, "raw stacks");
}

static void perf_script(const char *capture, struct proc_result *r)
{
	char *argv[] = { "/usr/bin/perf", "script", "-i", (char *)capture, NULL };

	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "perf script failed: %s", r->err);
}

Test(lookback, perf_script_reads_the_captures_call_chains, .timeout = 180)
{
	char dir[64], work[128], capture[160];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const ratio_args[] = { "20", "1000000", NULL };
	const char *const deep_args[] = { "500", NULL };
	const char *const options[] = { "--working-directory", work, NULL };
	const char *const deep_options[] = { "--working-directory", work, "--callgraph-mode",
					     "dwarf,4096", NULL };
	const char *chain;

	if (!perf_available())
		return;
	make_test_dir(dir, sizeof(dir));
	snprintf(work, sizeof(work), "%s/work", dir);
	snprintf(capture, sizeof(capture), "%s/perf.data", work);
	t = rearview_run(dir, options, NULL, "tests/targets/ratio", ratio_args, 60, &r);
	fxt_trace_free(t);
	perf_script(capture, &r);
	/* a sample in spin shows its callers, as perf prints a chain: one frame a
	 * line, leaf first */
	chain = strstr(r.out, " spin+");
	cr_assert_not_null(chain, "%.2000s", r.out);
	cr_assert(strstr(chain, " work_long+") || strstr(chain, " work_short+"), "%.2000s", chain);
	cr_assert(strstr(chain, " main+"), "%.2000s", chain);

	/* a cut chain ends with an unknown frame, and perf keeps the chain */
	t = rearview_run(dir, deep_options, NULL, "tests/targets/deepstack", deep_args, 60, &r);
	fxt_trace_free(t);
	perf_script(capture, &r);
	chain = strstr(r.out, " deep_spin+");
	cr_assert_not_null(chain, "%.2000s", r.out);
	cr_assert(strstr(chain, " descend+"), "%.2000s", chain);
	cr_assert(strstr(chain, "5256435400001000 [unknown]"), "the cut marker: %.3000s", chain);
	cleanup_dir(dir);
}

Test(lookback, dry_run_shows_the_stack_size_and_bad_sizes_are_refused, .timeout = 60)
{
	struct proc_result r;
	char *dry[] = { (char *)build_path("rearview"),
			"run",
			"--dry-run",
			"--callgraph-mode",
			"dwarf,1001",
			"--",
			"/bin/true",
			NULL };
	char *too_big[] = { (char *)build_path("rearview"),
			    "run",
			    "--callgraph-mode",
			    "dwarf,65529",
			    "--",
			    "/bin/true",
			    NULL };
	char *raw[] = {
		(char *)build_path("rearview"), "run", "--keep-raw-stacks", "--", "/bin/true", NULL
	};

	run_process(dry, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.out, "sample_stack_user = 1008"), "rounded up to 8: %s", r.out);
	cr_assert(strstr(r.out, "dwarf,1008: unwound as sampled, kept as call chains"), "%s",
		  r.out);
	run_process(too_big, 30, &r);
	cr_assert_neq(r.exit_code, 0);
	cr_assert(strstr(r.err, "65528"), "%s", r.err);
	run_process(raw, 30, &r);
	cr_assert_neq(r.exit_code, 0);
	cr_assert(strstr(r.err, "--full-execution"), "%s", r.err);
}
