/* test_events.c: --events end to end, against tests/targets/touchpages.c,
 * which counts its own page faults and naps: each fault of the pages it
 * touches is an instant "page-faults" in touch_pages on its thread, with each
 * backend this machine has; each nap a switch out; events this machine
 * lacks, or that do not exist, are refused before anything runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define PAGES 2000
#define NAPS  40

/* The number after `key ` in a program's output. */
static long long output_value(const char *out, const char *key)
{
	char line[64];
	const char *p;

	snprintf(line, sizeof(line), "%s ", key);
	p = strstr(out, line);
	cr_assert(p, "the program prints %s: %s", key, out);
	return strtoll(p + strlen(line), NULL, 10);
}

/* Instants named name on thread tid whose "symbol" is function (NULL: any). */
static size_t instants_in(const struct fxt_trace *t, uint64_t tid, const char *name,
			  const char *function)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_instants; i++) {
		const struct fxt_instant *in = &t->instants[i];
		const struct fxt_arg *sym;

		if (in->tid != tid || strcmp(in->name, name))
			continue;
		sym = fxt_find_arg(in->args, in->nr_args, "symbol");
		if (function && (!sym || sym->type != FXT_ARG_STRING || strcmp(sym->s, function)))
			continue;
		n++;
	}
	return n;
}

/* The target touched PAGES fresh pages: as many page-fault instants in
 * touch_pages, within 5%, each with the faulting address. */
static void expect_page_faults(const char *const *options)
{
	char dir[64], pages[16];
	const char *const args[] = { "pages", pages, NULL };
	struct proc_result r;
	struct fxt_trace *t;
	long long tid, faults;
	size_t n;
	const struct fxt_instant *in;

	snprintf(pages, sizeof(pages), "%d", PAGES);
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 90, &r);
	tid = output_value(r.out, "main_tid");
	faults = output_value(r.out, "touch_faults");
	cr_assert_eq(output_value(r.out, "touched_pages"), PAGES);
	n = instants_in(t, (uint64_t)tid, "page-faults", "touch_pages");
	cr_assert(n * 20 >= PAGES * 19 && n * 20 <= PAGES * 21,
		  "%zu page-fault instants in touch_pages for %d pages touched (getrusage "
		  "counted %lld faults)",
		  n, PAGES, faults);
	in = fxt_find_instant(t, FXT_ANY, (uint64_t)tid, "page-faults", 0);
	cr_assert(in);
	cr_assert(fxt_find_arg(in->args, in->nr_args, "ip"), "a user fault has its ip");
	cr_assert(fxt_find_arg(in->args, in->nr_args, "count"));
	cr_assert(strstr(r.err, "page-faults "), "the summary counts them: %s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(events, page_faults_of_touched_pages_with_sampling, .timeout = 150)
{
	const char *const options[] = { "--sampling", "--events", "page-faults", NULL };

	require_root("events");
	expect_page_faults(options);
}

Test(events, page_faults_of_touched_pages_with_the_uprobe_backend, .timeout = 150)
{
	const char *const options[] = { "--backend", "uprobe",	    "--functions", "touch_pages",
					"--events",  "page-faults", NULL };

	require_root("events");
	expect_page_faults(options);
}

Test(events, page_faults_with_full_execution_and_a_period, .timeout = 150)
{
	char dir[64], pages[16];
	const char *const options[] = { "--sampling", "--full-execution", "--events",
					"page-faults/period=10", NULL };
	const char *const args[] = { "pages", pages, NULL };
	struct proc_result r;
	struct fxt_trace *t;
	long long tid;
	size_t n;
	const struct fxt_instant *in;
	const struct fxt_arg *count;

	require_root("events");
	snprintf(pages, sizeof(pages), "%d", PAGES);
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 90, &r);
	tid = output_value(r.out, "main_tid");
	n = instants_in(t, (uint64_t)tid, "page-faults", "touch_pages");
	cr_assert(n * 10 * 20 >= PAGES * 19 && n * 10 * 20 <= PAGES * 21,
		  "%zu instants of every 10th fault for %d pages", n, PAGES);
	in = fxt_find_instant(t, FXT_ANY, (uint64_t)tid, "page-faults", 0);
	count = in ? fxt_find_arg(in->args, in->nr_args, "count") : NULL;
	cr_assert(count && count->u == 10, "each stands for 10 faults");
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* Each nap is a switch out of the main thread: at least NAPS of them, and
 * not many more (the program does nothing else that sleeps). */
static void expect_switches(const char *event)
{
	char dir[64], naps[16];
	const char *const options[] = { "--sampling", "--events", event, NULL };
	const char *const args[] = { "sleeps", naps, NULL };
	struct proc_result r;
	struct fxt_trace *t;
	long long tid;
	size_t n;

	snprintf(naps, sizeof(naps), "%d", NAPS);
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 90, &r);
	tid = output_value(r.out, "main_tid");
	cr_assert_eq(output_value(r.out, "naps"), NAPS);
	n = instants_in(t, (uint64_t)tid, event, NULL);
	cr_assert(n >= NAPS && n <= 2 * NAPS, "%zu %s instants for %d naps", n, event, NAPS);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(events, sched_switch_tracepoint_on_a_program_that_naps, .timeout = 150)
{
	require_root("events");
	expect_switches("sched:sched_switch");
}

Test(events, context_switches_on_a_program_that_naps, .timeout = 150)
{
	require_root("events");
	expect_switches("context-switches");
}

Test(events, the_flight_recorder_ages_them_out_with_the_samples, .timeout = 150)
{
	char dir[64];
	/* fp: DWARF samples of this program's faults overflow the rings now and
	 * then, which is another matter */
	const char *const options[] = { "--sampling",  "--callgraph-mode",
					"fp",	       "--snapshot-size",
					"64K",	       "--events",
					"page-faults", NULL };
	const char *const args[] = { "pages", "20000", NULL };
	struct proc_result r;
	struct fxt_trace *t;
	long long tid;
	size_t n;
	uint64_t first_span = UINT64_MAX;
	size_t older = 0;

	require_root("events");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 90, &r);
	tid = output_value(r.out, "main_tid");
	n = instants_in(t, (uint64_t)tid, "page-faults", NULL);
	cr_assert_gt(n, 0, "the last faults are kept");
	cr_assert_lt(n, 20000, "a 64 KiB recorder cannot hold 20,000 faults: the oldest aged out");
	for (size_t i = 0; i < t->nr_spans; i++)
		if (t->spans[i].begin_ns < first_span)
			first_span = t->spans[i].begin_ns;
	cr_assert_neq(first_span, UINT64_MAX, "samples are kept");
	for (size_t i = 0; i < t->nr_instants; i++)
		older += t->instants[i].ts_ns < first_span;
	/* Both kinds age out of one recorder: the instants older than the
	 * oldest sample kept are those of the one sampling period before it,
	 * 100 us of the program's CPU time, in which it takes a few faults
	 * (each costs it microseconds: 18 at most in 18 runs on a loaded
	 * machine). Counted, not timed: under load that period stretches over
	 * many milliseconds of wall time (a run whose three oldest faults came
	 * 45 ms before its oldest sample, when the program was preempted). */
	cr_assert_leq(older, 64,
		      "%zu of the %zu instants are from before the oldest sample (at %llu ns)",
		      older, t->nr_instants, (unsigned long long)first_span);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

static void expect_refusal(const char *events, const char *says)
{
	char dir[64], out[128];
	struct proc_result r;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	{
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "--events",
				 (char *)events,
				 "-o",
				 out,
				 "--",
				 (char *)built_target("touchpages"),
				 NULL };

		run_process(argv, 30, &r);
	}
	cr_assert_neq(r.exit_code, 0, "--events %s is refused", events);
	cr_assert_eq(count_lines(r.err), 1, "one line: %s", r.err);
	cr_assert(strstr(r.err, says), "'%s' does not say '%s'", r.err, says);
	cr_assert(!strstr(r.out, "main_tid"), "the program never ran: %s", r.out);
	cr_assert(!file_exists(out), "no trace");
	cleanup_dir(dir);
}

Test(events, unknown_events_are_refused_up_front)
{
	expect_refusal("page-faults,no-such-event", "unknown --events event 'no-such-event'");
	expect_refusal("sched:no_such_tracepoint", "no tracepoint 'sched:no_such_tracepoint'");
}

Test(events, hardware_events_need_the_pmu_this_machine_may_lack, .timeout = 60)
{
	if (access("/sys/bus/event_source/devices/cpu", F_OK) == 0) {
		/* a machine with a CPU PMU records them */
		char dir[64];
		const char *const options[] = { "--sampling", "--events", "cache-misses", NULL };
		const char *const args[] = { "pages", "100", NULL };
		struct proc_result r;
		struct fxt_trace *t;

		require_root("events");
		make_test_dir(dir, sizeof(dir));
		t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 60, &r);
		fxt_trace_free(t);
		cleanup_dir(dir);
		return;
	}
	expect_refusal("branch-misses", "--events branch-misses is a hardware event");
	expect_refusal("cache-misses", "no CPU PMU");
}

Test(events, dry_run_lists_them_and_opens_nothing, .timeout = 60)
{
	struct proc_result r;
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--sampling",
			 "--dry-run",
			 "--events",
			 "page-faults,sched:sched_switch/period=3",
			 "--",
			 (char *)built_target("touchpages"),
			 NULL };

	run_process(argv, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.out, "--events page-faults, the command's process"), "%s", r.out);
	cr_assert(strstr(r.out, "--events sched:sched_switch, the command's process"), "%s", r.out);
	cr_assert(strstr(r.out, "config = 0x2 (page-faults)"), "%s", r.out);
	cr_assert(strstr(r.out, "sample_period = 3"), "%s", r.out);
	cr_assert(
		strstr(r.out, "extra events (--events): page-faults, sched:sched_switch/period=3"),
		"%s", r.out);
	cr_assert(!strstr(r.out, "main_tid"), "the program never ran: %s", r.out);
}

/* The pid forkexec printed for process NAME ("process NAME PID"). */
static uint64_t process_pid(const char *out, const char *name)
{
	char key[64];

	snprintf(key, sizeof(key), "process %s", name);
	return (uint64_t)output_value(out, key);
}

static size_t process_instants(const struct fxt_trace *t, uint64_t pid, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_instants; i++)
		n += t->instants[i].pid == pid && !strcmp(t->instants[i].name, name);
	return n;
}

Test(events, children_inherit_them_when_followed_and_not_otherwise, .timeout = 150)
{
	char dir[64];
	const char *const follow[] = { "--sampling", "--events", "page-faults", NULL };
	const char *const no_follow[] = { "--sampling", "--no-follow", "--events", "page-faults",
					  NULL };
	struct proc_result r;
	struct fxt_trace *t;

	require_root("events");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, follow, "tests/targets/forkexec", NULL, 90, &r);
	cr_assert_gt(process_instants(t, process_pid(r.out, "fe-parent"), "page-faults"), 0);
	/* Either child will do: under a heavy load the engine now and then
	 * misses a short-lived child's records altogether (its COMM too: see
	 * follow::sampling_gives_each_process_its_track), which is not the
	 * events' doing. A child's faults can only come from inheriting. */
	cr_assert_gt(process_instants(t, process_pid(r.out, "fe-child-a"), "page-faults") +
			     process_instants(t, process_pid(r.out, "fe-child-b"), "page-faults"),
		     0, "the children's faults: they inherit the event: %s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);

	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, no_follow, "tests/targets/forkexec", NULL, 90, &r);
	cr_assert_gt(process_instants(t, process_pid(r.out, "fe-parent"), "page-faults"), 0);
	cr_assert_eq(process_instants(t, process_pid(r.out, "fe-child-a"), "page-faults"), 0,
		     "--no-follow: the children's samples are not kept");
	cr_assert_eq(process_instants(t, process_pid(r.out, "fe-child-b"), "page-faults"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(events, perf_script_reads_a_capture_with_a_tracepoint, .timeout = 120)
{
	char dir[64], work[96];
	const char *const options[] = { "--sampling",
					"--working-directory",
					work,
					"--events",
					"sched:sched_switch,page-faults",
					NULL };
	const char *const args[] = { "sleeps", "5", NULL };
	struct proc_result r;
	struct fxt_trace *t;
	char *out;
	int status;

	require_root("events");
	require_tool("perf", "linux-perf");
	make_test_dir(dir, sizeof(dir));
	snprintf(work, sizeof(work), "%s/capture", dir);
	t = rearview_run(dir, NULL, options, "tests/targets/touchpages", args, 60, &r);
	fxt_trace_free(t);
	out = run_command(&status, NULL, "perf script -i %s/perf.data 2>&1", work);
	cr_assert_eq(status, 0, "perf script: %s", out);
	cr_assert(strstr(out, "sched:sched_switch:"), "perf script shows the tracepoint: %s", out);
	cr_assert(strstr(out, "page-faults:"), "and the software event: %s", out);
	free(out);
	cleanup_dir(dir);
}
