/* test_gated.c: `rearview run` with the gate on the sampling engine:
 * --filter, --min-duration, --trigger and --multi-snapshot on the gated
 * target, which burns CPU in functions that run only inside windows, only
 * outside them, or only before or after a trigger, and says what it did. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt_reader.h"
#include "harness.h"

#define WINDOW	 "[window request_begin]"
#define SNAPSHOT "[snapshot at on_trigger]"

struct counts {
	unsigned long windows, slow, triggers;
};

static struct counts program_counts(const struct proc_result *r)
{
	struct counts c = { 0 };
	const char *line = strstr(r->out, "windows=");

	cr_assert(line, "the target printed no counts:\n%s", r->out);
	cr_assert_eq(
		sscanf(line, "windows=%lu slow=%lu triggers=%lu", &c.windows, &c.slow, &c.triggers),
		3);
	return c;
}

/* Runs rearview run OPTIONS... -o DIR/t.fxt -- gated MODE N. */
static struct fxt_trace *record(const char *dir, const char *const *options, const char *mode,
				const char *n, struct proc_result *r)
{
	const char *const args[] = { mode, n, NULL };

	return rearview_run(dir, NULL, options, "tests/targets/gated", args, 120, r);
}

static bool inside(const struct fxt_trace *t, const struct fxt_span *s, const char *name)
{
	for (const struct fxt_span *p = fxt_span_parent(t, s); p; p = fxt_span_parent(t, p))
		if (!strcmp(p->name, name))
			return true;
	return false;
}

/* Every span named `name` is nested in a window span. */
static size_t assert_in_windows(const struct fxt_trace *t, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (strcmp(s->name, name))
			continue;
		n++;
		cr_assert(inside(t, s, WINDOW), "%s at %llu ns is outside every window", name,
			  (unsigned long long)s->begin_ns);
	}
	return n;
}

Test(gated, filter_keeps_only_samples_inside_windows, .timeout = 180)
{
	const char *options[] = { "--filter", "request_begin,request_end", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	struct counts c;

	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, "windows", "12", &r);
	c = program_counts(&r);
	cr_assert_eq(c.windows, 12);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), c.windows, "%s", r.err);
	cr_assert_gt(assert_in_windows(t, "slow_work"), 0);
	assert_in_windows(t, "fast_work");
	/* 13 x 2 ms of CPU outside any window, not one sample of it kept */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0);
	cr_assert(strstr(r.err, "12 windows"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(gated, min_duration_keeps_only_slow_windows, .timeout = 180)
{
	const char *options[] = { "--filter", "request_begin,request_end", "--min-duration",
				  "15ms",     "--multi-snapshot",	   NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	struct counts c;

	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, "windows", "12", &r);
	c = program_counts(&r);
	cr_assert_eq(c.slow, 3);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), c.slow, "%s", r.err);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (!strcmp(s->name, WINDOW))
			cr_assert_geq(s->end_ns - s->begin_ns, 15000000, "a window of %llu ns kept",
				      (unsigned long long)(s->end_ns - s->begin_ns));
	}
	cr_assert_gt(assert_in_windows(t, "slow_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fast_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(gated, min_duration_without_multi_snapshot_keeps_the_first, .timeout = 180)
{
	const char *options[] = { "--filter", "request_begin,request_end", "--min-duration", "15ms",
				  NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, "windows", "12", &r);
	cr_assert_eq(program_counts(&r).slow, 3);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), 1, "%s", r.err);
	cr_assert_gt(assert_in_windows(t, "slow_work"), 0);
	cr_assert(strstr(r.err, "snapshot taken"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(gated, trigger_keeps_what_came_before_it, .timeout = 180)
{
	const char *options[] = { "--trigger", "on_trigger", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const struct fxt_instant *hit;

	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, "trigger", "4", &r);
	cr_assert_eq(program_counts(&r).triggers, 4);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, SNAPSHOT), 1, "%s", r.err);
	hit = fxt_find_instant(t, FXT_ANY, FXT_ANY, SNAPSHOT, 0);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "before_trigger"), 0);
	/* 30 ms of CPU right after the first hit, none of it kept */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "after_first_trigger"), 0);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert_leq(t->spans[i].end_ns, hit->ts_ns, "%s ends after the snapshot",
			      t->spans[i].name);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(gated, multi_snapshot_makes_a_segment_per_trigger, .timeout = 180)
{
	const char *options[] = { "--trigger", "on_trigger", "--multi-snapshot", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	uint64_t hits[16];
	size_t nr_hits = 0;
	struct counts c;

	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, "trigger", "4", &r);
	c = program_counts(&r);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, SNAPSHOT), c.triggers, "%s", r.err);
	for (size_t i = 0; i < t->nr_instants && nr_hits < 16; i++)
		if (!strcmp(t->instants[i].name, SNAPSHOT))
			hits[nr_hits++] = t->instants[i].ts_ns;
	/* Each segment ends at its hit: no span runs across one, and every
	 * segment holds the work that led to its hit. */
	for (size_t h = 0; h < nr_hits; h++) {
		uint64_t from = h ? hits[h - 1] : 0;
		bool work = false;

		for (size_t i = 0; i < t->nr_spans; i++) {
			const struct fxt_span *s = &t->spans[i];

			cr_assert(!(s->begin_ns < hits[h] && s->end_ns > hits[h]),
				  "%s runs across the snapshot at %llu ns", s->name,
				  (unsigned long long)hits[h]);
			if (!strcmp(s->name, "before_trigger") && s->begin_ns >= from &&
			    s->end_ns <= hits[h])
				work = true;
		}
		cr_assert(work, "no before_trigger in segment %zu", h + 1);
	}
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(gated, a_site_that_does_not_exist_is_refused, .timeout = 60)
{
	char dir[64], out[128];

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--filter",
			 "request_begn,request_end",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/gated"),
			 "windows",
			 "1",
			 NULL };
	struct proc_result r;

	run_process(argv, 60, &r);
	cr_assert_neq(r.exit_code, 0);
	cr_assert(strstr(r.err, "request_begn"), "%s", r.err);
	cr_assert(strstr(r.err, "--filter START"), "%s", r.err);
	/* the program never ran, and no trace was left */
	cr_assert_null(strstr(r.out, "windows="), "%s", r.out);
	cr_assert(!file_exists(out));
	cleanup_dir(dir);
}
