/* test_builder.c: stack samples diffed into spans, written and read back with
 * the strict FXT reader. Addresses without mappings are named "0x..." by the
 * symbolizer, and each is its own function, which keeps these tests about
 * the builder alone. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder_fixture.h"
#include "test_env.h"

/* stack: root first, as a test reads best; the event wants leaf first. */
static void sample_fp(struct builder_fixture *f, uint32_t tid, uint64_t time,
		      const uint64_t *root_first, size_t n, bool caller_unseen)
{
	struct rv_frame frames[32] = { 0 };
	struct rv_event ev = {
		.kind = RV_EVENT_STACK_SAMPLE, .pid = 100, .tid = tid, .time = time
	};

	for (size_t i = 0; i < n; i++) {
		frames[i].addr = root_first[n - 1 - i];
		frames[i].kernel = false;
		frames[i].is_ip = true; /* look up exactly this address */
	}
	ev.stack.frames = frames;
	ev.stack.nr_frames = n;
	ev.stack.interval_ns = 10;
	ev.stack.caller_unseen = caller_unseen;
	builder_fixture_add(f, &ev);
}

static void sample(struct builder_fixture *f, uint32_t tid, uint64_t time,
		   const uint64_t *root_first, size_t n)
{
	sample_fp(f, tid, time, root_first, n, false);
}

Test(builder, consecutive_stacks_become_nested_spans)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	/* main=0x1000, a=0x2000, b=0x3000, c=0x4000 */
	const uint64_t s1[] = { 0x1000, 0x2000 };
	const uint64_t s2[] = { 0x1000, 0x2000, 0x3000 };
	const uint64_t s3[] = { 0x1000, 0x4000 };
	const uint64_t s4[] = { 0x1000 };

	builder_fixture_open(&f);
	sample(&f, 100, 1000, s1, 2);
	sample(&f, 100, 1010, s2, 3);
	sample(&f, 100, 1020, s2, 3);
	sample(&f, 100, 1030, s3, 2);
	sample(&f, 100, 1040, s4, 1);
	t = builder_fixture_finish(&f);

	cr_assert_eq(t->nr_spans, 4);
	cr_assert_eq(trace_span(t, "0x1000", 0)->begin_ns, 0);
	cr_assert_eq(trace_span(t, "0x1000", 0)->end_ns, 50, "the last sample lasts its interval");
	cr_assert_eq(trace_span(t, "0x2000", 0)->begin_ns, 0);
	cr_assert_eq(trace_span(t, "0x2000", 0)->end_ns, 30);
	cr_assert_eq(trace_span(t, "0x3000", 0)->begin_ns, 10);
	cr_assert_eq(trace_span(t, "0x3000", 0)->end_ns, 30);
	cr_assert_eq(trace_span(t, "0x4000", 0)->begin_ns, 30);
	cr_assert_eq(trace_span(t, "0x4000", 0)->end_ns, 40);
	cr_assert_str_eq(fxt_span_parent(t, trace_span(t, "0x3000", 0))->name, "0x2000");
	cr_assert_str_eq(fxt_span_parent(t, trace_span(t, "0x4000", 0))->name, "0x1000");
	cr_assert_null(fxt_span_parent(t, trace_span(t, "0x1000", 0)));
	builder_fixture_close(&f, t);
}

Test(builder, same_function_again_after_a_different_one_is_a_new_span)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t a[] = { 0x1000, 0x2000 };
	const uint64_t b[] = { 0x1000, 0x3000 };

	builder_fixture_open(&f);
	sample(&f, 100, 0, a, 2);
	sample(&f, 100, 10, b, 2);
	sample(&f, 100, 20, a, 2);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x2000"), 2);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x1000"), 1);
	builder_fixture_close(&f, t);
}

Test(builder, children_that_begin_with_their_parent_are_written_after_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	/* The whole chain begins at the first sample; the deepest frames end
	 * first. The strict reader fails on a child written before its parent. */
	const uint64_t deep[] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	const uint64_t shallow[] = { 0x1000, 0x2000 };

	builder_fixture_open(&f);
	sample(&f, 100, 0, deep, 4);
	sample(&f, 100, 10, shallow, 2);
	sample(&f, 100, 20, deep, 4);
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 6);
	cr_assert_eq(trace_span(t, "0x4000", 0)->depth, 3);
	cr_assert_eq(trace_span(t, "0x4000", 1)->depth, 3);
	builder_fixture_close(&f, t);
}

Test(builder, threads_get_their_own_named_tracks)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t s[] = { 0x1000, 0x2000 };
	struct rv_event name = { .kind = RV_EVENT_THREAD_NAME, .pid = 100, .tid = 101 };
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	name.thread.name = "worker";
	builder_fixture_add(&f, &name);
	sample(&f, 100, 0, s, 2);
	sample(&f, 101, 5, s, 2);
	sample(&f, 100, 10, s, 2);
	sample(&f, 101, 15, s, 2);
	rv_builder_stats(f.b, &stats);
	t = builder_fixture_finish(&f);
	cr_assert_eq(stats.threads, 2);
	cr_assert_eq(fxt_count_spans(t, 100, 100, "0x2000"), 1);
	cr_assert_eq(fxt_count_spans(t, 100, 101, "0x2000"), 1);
	cr_assert_str_eq(fxt_thread_name(t, 100, 101), "worker [100/101]");
	builder_fixture_close(&f, t);
}

/* The threads the capture names (COMM, FORK) that no sample put on a track
 * are counted, for the summary's "not recorded" (the main thread excepted:
 * without --multi-thread it is the one recorded). */
Test(builder, threads_named_but_not_sampled_are_counted)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t s[] = { 0x1000, 0x2000 };
	struct rv_event name = { .kind = RV_EVENT_THREAD_NAME, .pid = 100, .tid = 101 };
	struct rv_event fork_ev = { .kind = RV_EVENT_THREAD_START, .pid = 100, .tid = 102 };
	struct rv_event fork_main = { .kind = RV_EVENT_THREAD_START, .pid = 200, .tid = 200 };
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	name.thread.name = "worker";
	builder_fixture_add(&f, &name);
	builder_fixture_add(&f, &fork_ev);
	builder_fixture_add(&f, &fork_main);
	sample(&f, 100, 0, s, 2);
	sample(&f, 100, 10, s, 2);
	rv_builder_stats(f.b, &stats);
	t = builder_fixture_finish(&f);
	cr_assert_eq(stats.threads, 1);
	cr_assert_eq(stats.untracked_threads, 2, "101 and 102, not the main threads");
	cr_assert_eq(t->nr_threads, 1);
	builder_fixture_close(&f, t);
}

/* A leaf in the kernel is marked as kernel code in the top functions. */
Test(builder, kernel_leaves_are_marked)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_frame frames[2] = {
		{ .addr = 0xffffffff81000100ull, .kernel = true, .is_ip = true },
		{ .addr = 0x1000, .is_ip = true }
	};
	struct rv_event ev = { .kind = RV_EVENT_STACK_SAMPLE, .pid = 100, .tid = 100 };
	struct rv_top_function top[4];
	size_t n;

	builder_fixture_open(&f);
	ev.stack.frames = frames;
	ev.stack.nr_frames = 2;
	ev.stack.interval_ns = 10;
	for (uint64_t time = 0; time <= 30; time += 10) {
		ev.time = time;
		builder_fixture_add(&f, &ev);
	}
	ev.stack.frames = frames + 1;
	ev.stack.nr_frames = 1;
	ev.time = 40;
	builder_fixture_add(&f, &ev);
	ev.time = 45; /* gives the root its 5 ns */
	builder_fixture_add(&f, &ev);
	n = rv_builder_top_functions(f.b, top, 4);
	t = builder_fixture_finish(&f);
	cr_assert_eq(n, 2);
	cr_assert(top[0].kernel, "%s is kernel code", top[0].name);
	cr_assert_eq(top[0].self_ns, 40);
	cr_assert(!top[1].kernel, "%s is not", top[1].name);
	/* and in the trace: the kernel category */
	cr_assert_str_eq(trace_span(t, "0xffffffff81000100", 0)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "0x1000", 0)->category, "");
	builder_fixture_close(&f, t);
}

/* Processes with tracks, by pid, named after their main thread (or their
 * first thread with a track when the main thread has none). */
Test(builder, processes_are_listed_by_pid_with_their_names)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event name = { .kind = RV_EVENT_THREAD_NAME };
	struct rv_event ev = { .kind = RV_EVENT_STACK_SAMPLE };
	struct rv_frame frames[1] = { { .addr = 0x1000, .is_ip = true } };
	struct rv_builder_process p[4];
	const struct {
		uint32_t pid, tid;
		const char *name;
	} threads[] = { { 300, 300, "child" },
			{ 100, 100, "make" },
			{ 200, 201, "cc1-worker" },
			{ 100, 102, "make-thread" } };

	builder_fixture_open(&f);
	for (size_t i = 0; i < 4; i++) {
		name.pid = threads[i].pid;
		name.tid = threads[i].tid;
		name.thread.name = threads[i].name;
		builder_fixture_add(&f, &name);
		ev.pid = threads[i].pid;
		ev.tid = threads[i].tid;
		ev.time = 10 * i;
		ev.stack.frames = frames;
		ev.stack.nr_frames = 1;
		ev.stack.interval_ns = 10;
		builder_fixture_add(&f, &ev);
	}
	cr_assert_eq(rv_builder_processes(f.b, p, 4), 3);
	cr_assert(p[0].pid == 100 && !strcmp(p[0].name, "make"), "%u %s", p[0].pid, p[0].name);
	cr_assert(p[1].pid == 200 && !strcmp(p[1].name, "cc1-worker"), "%u %s", p[1].pid,
		  p[1].name);
	cr_assert(p[2].pid == 300 && !strcmp(p[2].name, "child"), "%u %s", p[2].pid, p[2].name);
	cr_assert_eq(rv_builder_processes(f.b, p, 1), 3, "the count, whatever fits");
	cr_assert_eq(p[0].pid, 100);
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_processes, 3);
	builder_fixture_close(&f, t);
}

Test(builder, thread_exit_ends_its_spans_and_self_time_is_accounted)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t a[] = { 0x1000, 0x2000 };
	const uint64_t b[] = { 0x1000, 0x3000 };
	struct rv_event exit_ev = {
		.kind = RV_EVENT_THREAD_EXIT, .pid = 100, .tid = 100, .time = 60
	};
	struct rv_top_function top[4];
	size_t n;

	builder_fixture_open(&f);
	sample(&f, 100, 0, a, 2);
	sample(&f, 100, 10, a, 2);
	sample(&f, 100, 20, a, 2);
	sample(&f, 100, 30, b, 2);
	builder_fixture_add(&f, &exit_ev);
	n = rv_builder_top_functions(f.b, top, 4);
	t = builder_fixture_finish(&f);
	cr_assert_eq(trace_span(t, "0x1000", 0)->end_ns, 60, "open spans end at the exit");
	cr_assert_eq(n, 2);
	cr_assert_str_eq(top[0].name, "0x2000");
	cr_assert_eq(top[0].self_ns, 30);
	/* 30 ns until the exit is more than twice the 10 ns interval: the thread
	 * was off the CPU, so only one interval counts as self time. */
	cr_assert_eq(top[1].self_ns, 10);
	builder_fixture_close(&f, t);
}

Test(builder, a_stack_cut_short_by_unwinding_is_completed)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;
	const uint64_t full[] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	const uint64_t cut[] = { 0x3000, 0x4000 }; /* unwinding stopped at 0x3000 */
	const uint64_t other_root[] = { 0x9000, 0x4000 };

	builder_fixture_open(&f);
	sample(&f, 100, 0, full, 4);
	sample(&f, 100, 10, cut, 2);
	sample(&f, 100, 20, full, 4);
	rv_builder_stats(f.b, &stats);
	cr_assert_eq(stats.grafted, 1);
	/* A root that is nowhere on the open stack is a real change of stack. */
	sample(&f, 100, 30, other_root, 2);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x1000"), 1, "main was not cut");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x3000"), 1);
	cr_assert_eq(trace_span(t, "0x3000", 0)->end_ns, 30);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x9000"), 1);
	cr_assert_eq(trace_span(t, "0x9000", 0)->depth, 0);
	builder_fixture_close(&f, t);
}

Test(builder, a_frame_pointer_sample_at_a_function_entry_gets_its_caller_back)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;
	const uint64_t in_caller[] = { 0x1000, 0x2000 };
	/* At 0x3000's first byte its frame is not set up: the walk skips 0x2000.
	 * Unmapped addresses are each their own "function", so the leaf address
	 * equals its identity, which is what an entry looks like. */
	const uint64_t at_entry[] = { 0x1000, 0x3000 };

	builder_fixture_open(&f);
	sample_fp(&f, 100, 0, in_caller, 2, false);
	sample_fp(&f, 100, 10, at_entry, 2, true);
	sample_fp(&f, 100, 20, in_caller, 2, false);
	rv_builder_stats(f.b, &stats);
	t = builder_fixture_finish(&f);
	/* Unmapped addresses are not known symbols: nothing is restored for them. */
	cr_assert_eq(stats.skipped_callers, 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x2000"), 2);
	builder_fixture_close(&f, t);
}

Test(builder, entry_caller_restored_with_real_symbols)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;
	const char *binary = build_path("tests/targets/ratio");
	const uint64_t base = 0x555555554000ull;
	uint64_t main_at, long_at, spin_at;

	builder_fixture_open(&f);
	cr_assert_eq(rv_symbolizer_add_mapping(f.sym, 100, base, 0x10000, 0, true, binary, &f.err),
		     0);
	main_at = base + nm_symbol(binary, "main", NULL);
	long_at = base + nm_symbol(binary, "work_long", NULL);
	spin_at = base + nm_symbol(binary, "spin", NULL);
	{
		const uint64_t in_long[] = { main_at + 20, long_at + 8 };
		const uint64_t at_spin_entry[] = { main_at + 20, spin_at };
		const uint64_t in_spin[] = { main_at + 20, long_at + 8, spin_at + 8 };

		/* the sample decoder reads spin's first byte (push %rbp) and
		 * says the walk skipped the caller */
		sample_fp(&f, 100, 0, in_long, 2, false);
		sample_fp(&f, 100, 10, at_spin_entry, 2, true);
		sample_fp(&f, 100, 20, in_spin, 3, false);
	}
	rv_builder_stats(f.b, &stats);
	t = builder_fixture_finish(&f);
	cr_assert_eq(stats.skipped_callers, 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work_long"), 1,
		     "work_long goes on through the sample at spin's entry");
	cr_assert_str_eq(fxt_span_parent(t, trace_span(t, "spin", 0))->name, "work_long");
	cr_assert_eq(trace_span(t, "spin", 0)->begin_ns, 10);
	builder_fixture_close(&f, t);
}

Test(builder, a_late_sample_is_taken_at_its_threads_last_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;
	const uint64_t a[] = { 0x1000, 0x2000 };
	const uint64_t b[] = { 0x1000, 0x3000 };

	builder_fixture_open(&f);
	sample(&f, 100, 1000, a, 2);
	sample(&f, 100, 1030, a, 2);
	sample(&f, 100, 1010, b, 2); /* written after the one at 1030 */
	sample(&f, 100, 1040, a, 2);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.late_samples, 1);
	t = builder_fixture_finish(&f); /* the strict reader refuses spans that do not nest */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x2000"), 2);
	cr_assert_eq(trace_span(t, "0x3000", 0)->begin_ns, 30);
	cr_assert_eq(trace_span(t, "0x3000", 0)->end_ns, 40);
	for (size_t i = 0; i < 2; i++) {
		const struct fxt_span *s = trace_span(t, "0x2000", i);

		cr_assert(s->end_ns <= 30 || s->begin_ns >= 40, "0x2000 [%llu, %llu]",
			  (unsigned long long)s->begin_ns, (unsigned long long)s->end_ns);
	}
	builder_fixture_close(&f, t);
}

static void gate_event(struct builder_fixture *f, enum rv_event_kind kind, uint64_t time,
		       uint64_t duration, bool snapshot)
{
	struct rv_event ev = { .kind = kind, .pid = 100, .tid = 100, .time = time };

	ev.gate.name = kind == RV_EVENT_WINDOW ? "request_begin" : "on_trigger";
	ev.gate.duration_ns = duration;
	ev.gate.snapshot = snapshot;
	builder_fixture_add(f, &ev);
}

Test(builder, a_window_holds_its_samples_and_a_snapshot_ends_a_segment)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;
	const uint64_t a[] = { 0x1000, 0x2000 };
	const struct fxt_span *w;

	builder_fixture_open(&f);
	rv_builder_set_base(f.b, 900);
	sample(&f, 100, 1000, a, 2);
	sample(&f, 100, 1010, a, 2);
	gate_event(&f, RV_EVENT_WINDOW, 1050, 150, false); /* [900, 1050] */
	sample(&f, 100, 2000, a, 2);
	gate_event(&f, RV_EVENT_TRIGGER, 2005, 0, true);
	sample(&f, 100, 3000, a, 2);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.windows, 1);
	cr_assert_eq(bs.triggers, 1);
	cr_assert_eq(bs.snapshots, 1);
	t = builder_fixture_finish(&f);
	w = trace_span(t, "[window request_begin]", 0);
	cr_assert_eq(w->begin_ns, 0);
	cr_assert_eq(w->end_ns, 150);
	/* the samples in the window end with it, nested in it */
	cr_assert_eq(trace_span(t, "0x1000", 0)->end_ns, 150);
	cr_assert_str_eq(fxt_span_parent(t, trace_span(t, "0x1000", 0))->name, w->name);
	/* the snapshot ends the next segment's spans; the one after starts anew */
	cr_assert_eq(trace_span(t, "0x1000", 1)->begin_ns, 1100);
	cr_assert_eq(trace_span(t, "0x1000", 1)->end_ns, 1105);
	cr_assert_eq(trace_span(t, "0x1000", 2)->begin_ns, 2100);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at on_trigger]"), 1);
	builder_fixture_close(&f, t);
}

/* A sample taken while STOP's program ran comes after the time the window
 * mark says it ended: the window ends after it, and everything still nests. */
Test(builder, a_sample_after_the_window_mark_stays_in_the_window)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t a[] = { 0x1000, 0x2000 };
	const struct fxt_span *w;

	builder_fixture_open(&f);
	rv_builder_set_base(f.b, 900);
	sample(&f, 100, 1000, a, 2);
	sample(&f, 100, 1052, a, 2);
	gate_event(&f, RV_EVENT_WINDOW, 1050, 150, false); /* [900, 1050], sample at 1052 */
	t = builder_fixture_finish(&f); /* the strict reader refuses spans that do not nest */
	w = trace_span(t, "[window request_begin]", 0);
	cr_assert_eq(w->begin_ns, 0);
	cr_assert_eq(w->end_ns, 152);
	cr_assert_str_eq(fxt_span_parent(t, trace_span(t, "0x1000", 0))->name, w->name);
	builder_fixture_close(&f, t);
}
