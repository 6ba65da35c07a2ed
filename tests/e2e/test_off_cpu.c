/* test_off_cpu.c: off-CPU time in sampled traces, against target programs
 * that measure themselves (tests/targets/sleepwork.c): a sample never
 * stands for time its thread spent off the CPU. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/perf_data.h"
#include "decode/off_cpu.h"
#include "harness.h"
#include "sample_filter.h"

/* The number after `key ` in a program's output. */
static unsigned long long output_value(const char *out, const char *key)
{
	char line[64];
	const char *p;

	snprintf(line, sizeof(line), "%s ", key);
	p = strstr(out, line);
	cr_assert(p, "the program prints %s: %s", key, out);
	return strtoull(p + strlen(line), NULL, 10);
}

static bool is_off_cpu(const struct fxt_span *s)
{
	return !strncmp(s->name, "[off-cpu", 8);
}

/* Whether an off-CPU span named name (NULL: any) lies between a and b. */
static bool off_cpu_between(const struct fxt_trace *t, const struct fxt_span *a,
			    const struct fxt_span *b, const char *name)
{
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (s->tid == a->tid && is_off_cpu(s) && (!name || !strcmp(s->name, name)) &&
		    s->begin_ns >= a->end_ns && s->end_ns <= b->begin_ns)
			return true;
	}
	return false;
}

Test(off_cpu, work_between_sleeps_is_one_span_a_round_and_cpu_time_only, .timeout = 120)
{
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const options[] = { "--sampling", NULL };
	const struct fxt_span **work;
	size_t n = 0, rounds = 1, sleeps;
	unsigned long long cpu_ns, calls, total = 0;

	require_root("off_cpu");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/sleepwork", NULL, 60, &r);
	calls = output_value(r.out, "count work");
	cpu_ns = output_value(r.out, "work_cpu_ns");
	cr_assert_eq(calls, 40);
	work = calloc(t->nr_spans + 1, sizeof(*work));
	cr_assert(work);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (strcmp(s->name, "work"))
			continue;
		work[n++] = s;
		total += s->end_ns - s->begin_ns;
	}
	cr_assert_geq(n, 38, "%zu work spans", n);
	/* a span in file order ends before the next begins: spans end in order */
	for (size_t i = 1; i < n; i++) {
		cr_assert_geq(work[i]->begin_ns, work[i - 1]->end_ns);
		/* rounds are the spans a sleep separates; within one, only the
		 * scheduler (preempted) can take the thread off the CPU */
		if (off_cpu_between(t, work[i - 1], work[i], "[off-cpu: sleeping]"))
			rounds++;
		else
			cr_assert(off_cpu_between(t, work[i - 1], work[i], NULL),
				  "work spans %zu and %zu are apart without an off-CPU span", i - 1,
				  i);
	}
	cr_assert(rounds >= 38 && rounds <= 42, "%zu rounds of work (40 calls)", rounds);
	sleeps = fxt_count_spans(t, FXT_ANY, FXT_ANY, "[off-cpu: sleeping]");
	cr_assert_geq(sleeps, 38, "%zu sleeps drawn of 40", sleeps);
	cr_assert(total * 3 >= cpu_ns * 2 && total * 2 <= cpu_ns * 3,
		  "work spans last %llu ns in all, its CPU time was %llu ns", total, cpu_ns);
	cr_assert(strstr(r.err, "CPU time"), "the summary says what self time is: %s", r.err);
	free(work);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(off_cpu, a_thread_blocked_in_pthread_join_shows_no_cpu_frame, .timeout = 120)
{
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	const char *const options[] = { "--sampling", "--multi-thread", NULL };
	const char *const args[] = { "join", NULL };
	const struct fxt_span *block = NULL;
	unsigned long long tid, waited;

	require_root("off_cpu");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/sleepwork", args, 60, &r);
	tid = output_value(r.out, "main_tid");
	waited = output_value(r.out, "join_end_ns") - output_value(r.out, "join_begin_ns");
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "crunch"), 0, "the thread is sampled");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, tid, "crunch"), 0,
		     "the main thread never runs crunch");
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (s->tid == tid && is_off_cpu(s) &&
		    (!block || s->end_ns - s->begin_ns > block->end_ns - block->begin_ns))
			block = s;
	}
	cr_assert(block, "the main thread's wait is an off-CPU span");
	cr_assert_str_eq(block->name, "[off-cpu: sleeping]");
	cr_assert_geq((block->end_ns - block->begin_ns) * 10, waited * 9,
		      "the wait of %llu ns is drawn as %llu ns off the CPU", waited,
		      (unsigned long long)(block->end_ns - block->begin_ns));
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (s->tid == tid && !is_off_cpu(s))
			cr_assert(s->end_ns <= block->begin_ns || s->begin_ns >= block->end_ns,
				  "%s [%llu, %llu] runs while the main thread is blocked", s->name,
				  (unsigned long long)s->begin_ns, (unsigned long long)s->end_ns);
	}
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* The switches in a sampling capture (switch_state's records, only the
 * recorded threads'): out (preempted or not) and in. */
static void count_switches(const char *path, size_t *outs, size_t *ins)
{
	struct rv_perf_reader *reader;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	int got;

	*outs = *ins = 0;
	cr_assert_eq(rv_perf_reader_open(&reader, path, &err), 0, "%s", err.message);
	while ((got = rv_perf_reader_next(reader, &rec, &err)) > 0) {
		struct rv_perf_sample s;
		struct rv_switch_state raw;

		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(reader, rec.header, &s, &err), 0, "%s",
			     err.message);
		if (!s.attr || !s.attr->name || strcmp(s.attr->name, RV_SWITCH_STATE_EVENT) ||
		    s.raw_size < sizeof(raw))
			continue;
		memcpy(&raw, s.raw, sizeof(raw));
		if (raw.kind == RV_SWITCH_IN)
			++*ins;
		else
			++*outs;
	}
	cr_assert_eq(got, 0, "%s", err.message);
	rv_perf_reader_free(reader);
}

/* With --min-duration each slow window is a snapshot of the flight recorder,
 * which takes a thread's records by time and thread: a switch in, written
 * while the task leaving runs, is the thread's the record names. Each slow
 * window sleeps (4 ms) and comes back within the window
 * (tests/targets/windows.c). */
Test(off_cpu, a_window_snapshot_keeps_the_switches_in, .timeout = 120)
{
	const char *options[] = { "--sampling",		 "--filter", "request_begin,request_end",
				  "--min-duration",	 "2ms",	     "--multi-snapshot",
				  "--working-directory", NULL,	     NULL };
	const char *const args[] = { "1000", "1", "12", NULL };
	char dir[64], work[96], capture[128];
	struct proc_result r;
	struct fxt_trace *t;
	const char *slow_text;
	size_t outs, ins;
	unsigned long slow;

	require_root("off_cpu");
	make_test_dir(dir, sizeof(dir));
	snprintf(work, sizeof(work), "%s/work", dir);
	options[7] = work;
	t = rearview_run(dir, NULL, options, "tests/targets/windows", args, 60, &r);
	fxt_trace_free(t);
	slow_text = strstr(r.out, "slow=");
	cr_assert(slow_text, "%s", r.out);
	slow = strtoul(slow_text + 5, NULL, 10);
	cr_assert_geq(slow, 1, "%s", r.out);
	snprintf(capture, sizeof(capture), "%s/perf.data", work);
	count_switches(capture, &outs, &ins);
	cr_assert_geq(outs, slow, "a switch out for each slow window's sleep: %zu, %lu windows",
		      outs, slow);
	cr_assert_geq(ins, slow, "a switch in after each slow window's sleep: %zu, %lu windows",
		      ins, slow);
	cleanup_dir(dir);
}
