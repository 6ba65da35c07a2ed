/* test_probe_cost.c: what `rearview run --backend uprobe` says of the
 * probes' own cost, on tests/targets/fncalls (fib(20): 21,891 calls it
 * counts itself): the summary's overhead line holds every call probed, times
 * the cost measured at start, and a total and a share that agree with them;
 * the hint names fib exactly when its rate over the trace is above 100k
 * calls a second.
 *
 * Not here: the calibration's and the summary's units
 * (tests/unit/test_probe_cost.c, test_probe_summary.c), the status line's
 * (test_fn_live.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt_reader.h"
#include "harness.h"

/* "1.234 s", "56.7 ms", "8.9 us", "950 ns" at text: the time in ns and the
 * text after it. */
static double parse_time(const char *text, const char **end)
{
	char *rest;
	double v = strtod(text, &rest);

	cr_assert_neq(rest, text, "no number at \"%.40s\"", text);
	if (!strncmp(rest, " s", 2))
		v *= 1e9, rest += 2;
	else if (!strncmp(rest, " ms", 3))
		v *= 1e6, rest += 3;
	else if (!strncmp(rest, " us", 3))
		v *= 1e3, rest += 3;
	else if (!strncmp(rest, " ns", 3))
		rest += 3;
	else
		cr_assert_fail("no unit at \"%.40s\"", rest);
	*end = rest;
	return v;
}

/* "21,891" at text */
static unsigned long parse_count(const char *text, const char **end)
{
	unsigned long n = 0;

	cr_assert(*text >= '0' && *text <= '9', "no count at \"%.40s\"", text);
	for (; (*text >= '0' && *text <= '9') || *text == ','; text++)
		if (*text != ',')
			n = n * 10 + (unsigned long)(*text - '0');
	*end = text;
	return n;
}

static const char *after(const char *text, const char *needle)
{
	const char *at = strstr(text, needle);

	cr_assert_not_null(at, "no \"%s\" in:\n%s", needle, text);
	return at + strlen(needle);
}

Test(probe_cost, the_summary_says_calls_times_the_measured_cost, .timeout = 180)
{
	static const char *const options[] = { "--backend",   "uprobe", "--full-execution",
					       "--functions", "fib",	NULL };
	static const char *const args[] = { "--only", "fib", "--fib", "20", NULL };
	const char *p;
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	double overhead, recorded, each, covered, percent, rate;
	unsigned long calls;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, options, NULL, "tests/targets/fncalls", args, 150, &r);
	cr_assert(strstr(r.out, "count fib 21891\n"), "%s", r.out);
	cr_assert(strstr(r.err, ", 0 lost"), "the test needs every record:\n%s", r.err);

	/* rearview: probe overhead: at least X, P% of the T recorded (N calls x
	 * C, ...); the times below include it */
	p = after(r.err, "rearview: probe overhead: at least ");
	overhead = parse_time(p, &p);
	p = after(p, ", ");
	percent = strtod(p, NULL);
	p = after(p, "% of the ");
	recorded = parse_time(p, &p);
	p = after(p, " recorded (");
	calls = parse_count(p, &p);
	p = after(p, " calls x ");
	each = parse_time(p, &p);
	cr_assert(strstr(p, "); the times below include it\n"), "%s", r.err);
	cr_assert(strstr(r.err, "rearview: top functions by self time (their probes' cost "
				"included), CPU time only:\n"),
		  "%s", r.err);

	cr_assert_eq(calls, 21891, "every call of fib was probed:\n%s", r.err);
	/* an entry probe and a uretprobe: more than 10 ns, less than 100 us */
	cr_assert(each > 10 && each < 100000, "%s", r.err);
	/* the total is calls x cost, as printed (the cost to 2-3 digits) */
	cr_assert(fabs(overhead - calls * each) <= 0.05 * overhead, "%.0f ns vs %lu x %.0f ns:\n%s",
		  overhead, calls, each, r.err);
	cr_assert(recorded > 0);
	cr_assert(fabs(percent - 100.0 * overhead / recorded) <= 1.0, "%.0f%% vs %.0f / %.0f:\n%s",
		  percent, overhead, recorded, r.err);

	/* the hint, exactly when fib's rate over the trace is above 100k a
	 * second */
	covered = parse_time(after(r.err, "rearview: the trace covers "), &p);
	rate = 21891 * 1e9 / covered;
	if (rate > 100000 * 1.01)
		cr_assert(strstr(r.err, "rearview: hint: fib was called "), "%.0f a second:\n%s",
			  rate, r.err);
	else if (rate < 100000 * 0.99)
		cr_assert_null(strstr(r.err, "rearview: hint:"), "%.0f a second:\n%s", rate, r.err);
	cr_log_info("fib(20): %lu calls x %.0f ns = %.1f ms of %.1f ms recorded, %.0f calls a "
		    "second",
		    calls, each, overhead / 1e6, recorded / 1e6, rate);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
