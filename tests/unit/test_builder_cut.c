/* test_builder_cut.c: stacks the sample's copy cut (ev.stack.cut_bytes) are
 * drawn under a "[stack cut: N KiB copied]" frame below the thread's outer
 * frames, never as roots of their own that end the open frames. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <string.h>

#include "builder_fixture.h"
#include "capture/callchain.h"

#define CUT_4K "[stack cut: 4 KiB copied]"

/* stack: root first; cut_bytes 0 for a whole stack. */
static void sample(struct builder_fixture *f, uint64_t time, const uint64_t *root_first, size_t n,
		   uint32_t cut_bytes)
{
	struct rv_frame frames[32] = { 0 };
	struct rv_event ev = {
		.kind = RV_EVENT_STACK_SAMPLE, .pid = 100, .tid = 100, .time = time
	};

	for (size_t i = 0; i < n; i++) {
		frames[i].addr = root_first[n - 1 - i];
		frames[i].kernel = false;
		frames[i].is_ip = true;
	}
	ev.stack.frames = frames;
	ev.stack.nr_frames = n;
	ev.stack.interval_ns = 10;
	ev.stack.cut_bytes = cut_bytes;
	builder_fixture_add(f, &ev);
}

/* main=0x1000 with a=0x2000 (and its b=0x3000) or c=0x4000 under it; a
 * recursion of r=0x5000 with leaf s=0x6000, cut by the copy. */
Test(builder_cut, a_cut_stack_stays_under_the_outer_frames_and_main_is_one_span)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t whole1[] = { 0x1000, 0x2000, 0x3000 };
	const uint64_t whole2[] = { 0x1000, 0x4000 };
	const uint64_t cut[] = { 0x5000, 0x5000, 0x5000, 0x6000 };
	const struct fxt_span *span;

	builder_fixture_open(&f);
	sample(&f, 1000, whole1, 3, 0);
	sample(&f, 1010, whole2, 2, 0);
	sample(&f, 1020, cut, 4, 4096);
	sample(&f, 1030, cut, 4, 4096);
	sample(&f, 1040, whole2, 2, 0);
	sample(&f, 1050, cut, 4, 4096);
	t = builder_fixture_finish(&f);

	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x1000"), 1,
		     "main stays open across the cut stacks: one span");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, CUT_4K), 2,
		     "two runs of cut samples, one [stack cut] span each");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, CUT_4K, 0);
	cr_assert_not_null(span);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, "0x1000", "under main");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x5000"), 6,
		     "the cut stack's frames as they are, twice");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, "0x5000", 0);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, CUT_4K,
			 "the cut stack's outermost frame is no root");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x4000"), 2);
	builder_fixture_close(&f, t);
}

Test(builder_cut, a_thread_whose_first_stack_is_cut_gets_the_cut_frame_as_its_root)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t cut[] = { 0x5000, 0x6000 };
	const struct fxt_span *span;

	builder_fixture_open(&f);
	sample(&f, 1000, cut, 2, 6000);
	sample(&f, 1010, cut, 2, 6000);
	t = builder_fixture_finish(&f);
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, "[stack cut: 5.9 KiB copied]", 0);
	cr_assert_not_null(span, "the size in KiB, with a decimal when it is not whole");
	cr_assert_null(fxt_span_parent(t, span));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, NULL), 3);
	builder_fixture_close(&f, t);
}

Test(builder_cut, stacks_cut_are_counted)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;
	const uint64_t whole[] = { 0x1000, 0x2000 };
	const uint64_t cut[] = { 0x5000, 0x6000 };

	builder_fixture_open(&f);
	sample(&f, 1000, whole, 2, 0);
	sample(&f, 1010, cut, 2, 4096);
	sample(&f, 1020, cut, 2, 4096);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.stacks_cut, 2);
	cr_assert_eq(bs.samples, 3);
	t = builder_fixture_finish(&f);
	builder_fixture_close(&f, t);
}

/* A sample in main itself leaves main among the callers; a recursion that is
 * open when the copy starts cutting it goes on above its first frame. */
Test(builder_cut, a_sample_in_main_and_an_open_recursion_keep_the_callers)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const uint64_t in_work[] = { 0x1000, 0x2000 };
	const uint64_t in_main[] = { 0x1000 };
	const uint64_t recursing[] = { 0x1000, 0x5000, 0x5000, 0x6000 };
	const uint64_t cut[] = { 0x5000, 0x5000, 0x6000 };
	const struct fxt_span *span;

	builder_fixture_open(&f);
	sample(&f, 1000, in_work, 2, 0);
	sample(&f, 1010, in_main, 1, 0);
	sample(&f, 1020, cut, 3, 4096);
	sample(&f, 1030, in_main, 1, 0);
	sample(&f, 1040, recursing, 4, 0);
	sample(&f, 1050, cut, 3, 4096);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x1000"), 1, "one main");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, CUT_4K, 0);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, "0x1000");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, CUT_4K, 1);
	cr_assert_not_null(span);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, "0x1000",
			 "above the recursion's first frame, not below its deepest");
	builder_fixture_close(&f, t);
}

/* A stack whose unwinding stopped at a caller without call frame information
 * (a lazy-binding trampoline in a printf) is incomplete too: drawn under
 * "[unwinding stopped]" under main, which does not end, and counted apart
 * from the cuts. */
Test(builder_cut, a_stack_whose_unwinding_stopped_stays_under_the_outer_frames)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;
	const uint64_t whole[] = { 0x1000, 0x2000 };
	const uint64_t stopped[] = { 0x7000, 0x8000 };
	const struct fxt_span *span;

	builder_fixture_open(&f);
	sample(&f, 1000, whole, 2, 0);
	sample(&f, 1010, stopped, 2, RV_STACK_UNWIND_STOPPED);
	sample(&f, 1020, whole, 2, 0);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.stacks_stopped, 1);
	cr_assert_eq(bs.stacks_cut, 0);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x1000"), 1, "one main");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, "[unwinding stopped]", 0);
	cr_assert_not_null(span);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, "0x1000");
	span = fxt_find_span(t, FXT_ANY, FXT_ANY, "0x7000", 0);
	cr_assert_str_eq(fxt_span_parent(t, span)->name, "[unwinding stopped]");
	builder_fixture_close(&f, t);
}
