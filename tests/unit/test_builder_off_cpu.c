/* test_builder_off_cpu.c: the builder's off-CPU rules for sampled stacks:
 * a switch out ends the thread's frames and begins an off-CPU span, a switch
 * in ends it and the frames it returned into begin again then; without
 * switch records a gap of more than four intervals ends the stack one
 * interval after its last sample. Addresses without mappings are named
 * "0x..." by the symbolizer, each its own function. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

#include "builder_fixture.h"

#define PID 100

/* stack: root first; the event wants leaf first. 10 ns interval. */
static void sample_cut(struct builder_fixture *f, uint64_t time, const uint64_t *root_first,
		       size_t n, bool switches, uint32_t cut_bytes)
{
	struct rv_frame frames[16];
	struct rv_event ev = {
		.kind = RV_EVENT_STACK_SAMPLE, .pid = PID, .tid = PID, .time = time
	};

	for (size_t i = 0; i < n; i++)
		frames[i] = (struct rv_frame){ .addr = root_first[n - 1 - i], .is_ip = true };
	ev.stack.frames = frames;
	ev.stack.nr_frames = n;
	ev.stack.interval_ns = 10;
	ev.stack.switches_recorded = switches;
	ev.stack.cut_bytes = cut_bytes;
	builder_fixture_add(f, &ev);
}

static void sample(struct builder_fixture *f, uint64_t time, const uint64_t *root_first, size_t n,
		   bool switches)
{
	sample_cut(f, time, root_first, n, switches, 0);
}

static void switch_out(struct builder_fixture *f, uint64_t time, const char *name, uint64_t state)
{
	struct rv_event_arg arg = { "state", RV_EVENT_ARG_HEX, state };
	struct rv_event ev = {
		.kind = RV_EVENT_KERNEL_BEGIN, .pid = PID, .tid = PID, .time = time
	};

	ev.kernel.kind = RV_KERNEL_OFF_CPU;
	ev.kernel.name = name;
	ev.kernel.args = &arg;
	ev.kernel.nr_args = 1;
	ev.kernel.sampled = true;
	builder_fixture_add(f, &ev);
}

static void switch_in(struct builder_fixture *f, uint64_t time)
{
	struct rv_event ev = { .kind = RV_EVENT_KERNEL_END, .pid = PID, .tid = PID, .time = time };

	ev.kernel.kind = RV_KERNEL_OFF_CPU;
	ev.kernel.name = "[off-cpu]";
	ev.kernel.sampled = true;
	builder_fixture_add(f, &ev);
}

static const struct fxt_arg *arg(const struct fxt_span *s, const char *name)
{
	for (size_t i = 0; i < s->nr_args; i++)
		if (!strcmp(s->args[i].name, name))
			return &s->args[i];
	return NULL;
}

Test(builder_off_cpu, a_switch_out_ends_the_frames_and_the_same_frames_resume_at_the_switch_in)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *off;
	/* main=0x1000, work=0x2000 */
	const uint64_t work[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	sample(&f, 10, work, 2, true);
	sample(&f, 20, work, 2, true);
	switch_out(&f, 25, "[off-cpu: sleeping]", 1);
	switch_in(&f, 100);
	sample(&f, 104, work, 2, true);
	sample(&f, 114, work, 2, true);
	cr_assert_eq(builder_fixture_self_ns(&f, "0x2000"), 25 + 4 + 10,
		     "self time: until the switch out, from the switch in");
	t = builder_fixture_finish(&f);

	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x2000"), 2, "work is two spans");
	cr_assert_eq(trace_span(t, "0x2000", 0)->begin_ns, 0);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 25, "it ends when the thread leaves");
	cr_assert_eq(trace_span(t, "0x1000", 0)->end_ns, 25);
	cr_assert_eq(trace_span(t, "0x2000", 1)->begin_ns, 100,
		     "the frames it left resume when it comes back");
	cr_assert_eq(trace_span(t, "0x1000", 1)->begin_ns, 100);
	cr_assert_eq(trace_span(t, "0x2000", 1)->end_ns, 124);
	off = trace_span(t, "[off-cpu: sleeping]", 0);
	cr_assert_eq(off->begin_ns, 25);
	cr_assert_eq(off->end_ns, 100);
	cr_assert_eq(off->depth, 0, "on the thread's track, between its frames");
	cr_assert(arg(off, "function"), "it names where the thread blocked");
	cr_assert_str_eq(arg(off, "function")->s, "0x2000");
	cr_assert(arg(off, "state") && arg(off, "state")->u == 1);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, frames_not_open_when_it_left_begin_at_the_sample)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t before[] = { 0x1000, 0x2000 };
	const uint64_t after[] = { 0x1000, 0x3000 };

	builder_fixture_open(&f);
	sample(&f, 0, before, 2, true);
	switch_out(&f, 5, "[off-cpu: disk]", 2);
	switch_in(&f, 50);
	sample(&f, 56, after, 2, true);
	t = builder_fixture_finish(&f);
	cr_assert_eq(trace_span(t, "0x1000", 1)->begin_ns, 50, "main resumes at the switch in");
	cr_assert_eq(trace_span(t, "0x3000", 0)->begin_ns, 56, "a new callee at its sample");
	cr_assert_eq(trace_span(t, "[off-cpu: disk]", 0)->end_ns, 50);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, a_thread_never_sampled_gets_no_off_cpu_span)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	switch_in(&f, 0); /* it was off the CPU before the trace */
	switch_out(&f, 5, "[off-cpu: sleeping]", 1);
	switch_in(&f, 50);
	sample(&f, 52, work, 2, true);
	switch_out(&f, 60, "[off-cpu: sleeping]", 1);
	switch_in(&f, 90);
	switch_out(&f, 95, "[off-cpu: preempted]", 0); /* ran, unsampled */
	switch_in(&f, 99);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[off-cpu: sleeping]"), 1,
		     "only after the thread showed in the trace");
	cr_assert_eq(trace_span(t, "[off-cpu: sleeping]", 0)->begin_ns, 60);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[off-cpu: preempted]"), 1,
		     "a switch in is a run, sampled or not");
	cr_assert_eq(trace_span(t, "0x2000", 0)->begin_ns, 52);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 60);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, an_off_cpu_span_open_at_the_exit_ends_there)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };
	struct rv_event exit_ev = {
		.kind = RV_EVENT_THREAD_EXIT, .pid = PID, .tid = PID, .time = 80
	};

	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	switch_out(&f, 8, "[off-cpu: dead]", 0x20);
	builder_fixture_add(&f, &exit_ev);
	t = builder_fixture_finish(&f);
	cr_assert_eq(trace_span(t, "[off-cpu: dead]", 0)->end_ns, 80);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 8);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, without_switch_records_a_gap_of_more_than_four_intervals_ends_the_stack)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	sample(&f, 0, work, 2, false);
	sample(&f, 10, work, 2, false);
	sample(&f, 50, work, 2, false);	 /* 40 ns: four intervals, still running */
	sample(&f, 100, work, 2, false); /* 50 ns: it was off the CPU */
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x2000"), 2);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 60, "one interval after its last sample");
	cr_assert_eq(trace_span(t, "0x2000", 1)->begin_ns, 100);
	cr_assert_eq(fxt_count_spans(t, PID, PID, NULL), 4, "and no off-CPU span: no reason known");
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, with_switch_records_a_gap_alone_does_not_end_the_stack)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	sample(&f, 100, work, 2, true); /* the thread did not leave: samples were late */
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x2000"), 1);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 110);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, after_a_window_or_the_exit_switches_draw_nothing_until_a_sample)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };
	struct rv_event window = { .kind = RV_EVENT_WINDOW, .pid = PID, .tid = PID, .time = 20 };
	struct rv_event exit_ev = {
		.kind = RV_EVENT_THREAD_EXIT, .pid = PID, .tid = PID, .time = 90
	};

	window.gate.name = "start,stop";
	window.gate.duration_ns = 20;
	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	sample(&f, 10, work, 2, true);
	builder_fixture_add(&f, &window);
	switch_out(&f, 30, "[off-cpu: sleeping]", 1); /* outside the window */
	switch_in(&f, 40);
	sample(&f, 50, work, 2, true); /* in the next window */
	switch_out(&f, 55, "[off-cpu: sleeping]", 1);
	switch_in(&f, 60);
	sample(&f, 62, work, 2, true);
	builder_fixture_add(&f, &exit_ev);
	switch_out(&f, 95, "[off-cpu: dead]", 0x10);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[off-cpu: sleeping]"), 1);
	cr_assert_eq(trace_span(t, "[off-cpu: sleeping]", 0)->begin_ns, 55);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[off-cpu: dead]"), 0);
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, a_run_too_short_for_a_sample_keeps_the_stack_it_left)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	switch_out(&f, 5, "[off-cpu: preempted]", 0);
	switch_in(&f, 20);
	switch_out(&f, 24, "[off-cpu: preempted]", 0); /* 4 ns on the CPU, unsampled */
	switch_in(&f, 40);
	sample(&f, 43, work, 2, true);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[off-cpu: preempted]"), 2);
	cr_assert_eq(trace_span(t, "0x2000", 1)->begin_ns, 40,
		     "work resumes at the latest switch in");
	cr_assert(arg(trace_span(t, "[off-cpu: preempted]", 1), "function"));
	cr_assert_str_eq(arg(trace_span(t, "[off-cpu: preempted]", 1), "function")->s, "0x2000");
	builder_fixture_close(&f, t);
}

Test(builder_off_cpu, frames_do_not_resume_from_before_a_snapshot)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t work[] = { 0x1000, 0x2000 };
	struct rv_event hit = { .kind = RV_EVENT_TRIGGER, .pid = PID, .tid = PID, .time = 25 };

	hit.gate.name = "work";
	hit.gate.snapshot = true;
	builder_fixture_open(&f);
	sample(&f, 0, work, 2, true);
	switch_out(&f, 5, "[off-cpu: sleeping]", 1);
	switch_in(&f, 20);
	builder_fixture_add(&f, &hit);
	sample(&f, 30, work, 2, true);
	t = builder_fixture_finish(&f);
	cr_assert_eq(trace_span(t, "0x2000", 1)->begin_ns, 30, "a segment continues nothing");
	builder_fixture_close(&f, t);
}

/* A stack the copy cut, first after the thread came back: it goes under the
 * frames the thread left (resumed at the switch in), not under a [stack cut]
 * root of its own. */
Test(builder_off_cpu, a_cut_stack_after_a_switch_resumes_under_the_frames_left)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *cut, *main_again;
	/* main=0x1000, descend=0x5000, spin=0x6000 */
	const uint64_t whole[] = { 0x1000, 0x5000 };
	const uint64_t deep[] = { 0x5000, 0x5000, 0x6000 };

	builder_fixture_open(&f);
	sample(&f, 0, whole, 2, true);
	sample_cut(&f, 10, deep, 3, true, 4096);
	switch_out(&f, 15, "[off-cpu: preempted]", 0);
	switch_in(&f, 50);
	sample_cut(&f, 55, deep, 3, true, 4096);
	sample_cut(&f, 65, deep, 3, true, 4096);
	t = builder_fixture_finish(&f);

	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x1000"), 2, "main before and after");
	main_again = trace_span(t, "0x1000", 1);
	cr_assert_eq(main_again->begin_ns, 50, "main resumes at the switch in");
	cr_assert_eq(fxt_count_spans(t, PID, PID, "[stack cut: 4 KiB copied]"), 2);
	cut = trace_span(t, "[stack cut: 4 KiB copied]", 1);
	cr_assert_eq(fxt_span_parent(t, cut), main_again,
		     "under the frames the thread left, resumed: %s",
		     fxt_span_parent(t, cut) ? fxt_span_parent(t, cut)->name : "a root");
	cr_assert_eq(cut->begin_ns, 50, "its outer frames came back at the switch in");
	builder_fixture_close(&f, t);
}
