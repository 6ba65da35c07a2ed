/* test_pt_live.c: `rearview run --backend pt` on real Intel PT hardware: each
 * PT target (tests/pt) recorded whole (--full-execution), and its trace must
 * hold exactly the calls the program counted itself. Also --filter with PT:
 * the gated target's outside-only function must be absent.
 *
 * Machines without the intel_pt PMU (ours, CI's: AMD CPUs in VMs) skip these
 * tests and say why; the PT engine's code runs in the unit tests there, on fake
 * sysfs trees and a simulated kernel (pt_pmu, pt_attr, pt_engine, dry_run).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "program_counts.h"

#define INTEL_PT "/sys/bus/event_source/devices/intel_pt"

static void require_intel_pt(void)
{
	if (access(INTEL_PT, F_OK))
		cr_skip_test("this machine has no Intel PT (no %s): live PT recording needs PT "
			     "hardware; the PT engine is tested without it by the pt_pmu, "
			     "pt_attr, pt_engine and dry_run unit tests",
			     INTEL_PT);
	if (geteuid())
		cr_skip_test("live PT recording needs root");
}

/* rearview run --backend pt EXTRA... -o DIR/t.fxt -- PROGRAM ARGS... */
static struct fxt_trace *record(const char *dir, char *const *extra, const char *program,
				char *const *args, struct proc_result *r)
{
	static const char *const pt[] = { "--backend", "pt", NULL };

	return rearview_run(dir, pt, (const char *const *)extra, program, (const char *const *)args,
			    120, r);
}

static void check_program(const char *program)
{
	char *extra[] = { "--full-execution", NULL };
	char *args[] = { NULL };
	char dir[64], why[256];
	struct proc_result r;
	struct fxt_trace *t;
	long checked;

	require_intel_pt();
	make_test_dir(dir, sizeof(dir));
	t = record(dir, extra, program, args, &r);
	checked = pc_check_trace(r.out, t, why, sizeof(why));
	cr_assert_geq(checked, 0, "%s: %s", program, why);
	cr_assert_gt(checked, 0, "%s printed no counts:\n%s", program, r.out);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(pt_live, recursion, .timeout = 180)
{
	check_program("tests/pt/recursion");
}

Test(pt_live, fnptr, .timeout = 180)
{
	check_program("tests/pt/fnptr");
}

Test(pt_live, longjmp, .timeout = 180)
{
	check_program("tests/pt/longjmp");
}

Test(pt_live, signals, .timeout = 180)
{
	check_program("tests/pt/signals");
}

Test(pt_live, two_threads, .timeout = 180)
{
	char *extra[] = { "--full-execution", "--multi-thread", NULL };
	char *args[] = { NULL };
	char dir[64], why[256];
	struct proc_result r;
	struct fxt_trace *t;

	require_intel_pt();
	make_test_dir(dir, sizeof(dir));
	t = record(dir, extra, "tests/pt/two_threads", args, &r);
	cr_assert_geq(pc_check_trace(r.out, t, why, sizeof(why)), 0, "%s", why);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(pt_live, exceptions, .timeout = 180)
{
	check_program("tests/pt/exceptions");
}

Test(pt_live, filter_windows, .timeout = 180)
{
	char *extra[] = { "--filter", "request_begin,request_end", NULL };
	char *args[] = { "windows", "8", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_intel_pt();
	make_test_dir(dir, sizeof(dir));
	t = record(dir, extra, "tests/targets/gated", args, &r);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "slow_work"), 0, "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0, "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
