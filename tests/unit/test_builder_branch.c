/* test_builder_branch.c: call stacks from branch events (the rules in
 * trace/builder.h), written through the real writer and read back with the
 * strict FXT reader, which also checks that spans nest the way Perfetto
 * needs.
 *
 * Most tests give each branch end its symbol and function start, as the perf
 * script import does, from a made-up table of functions; the last ones use a
 * real binary and the symbolizer, as the PT decoder does. Times are on the
 * capture clock; the trace's zero is the first event's time.
 */
#include <criterion/criterion.h>
#include <Zydis/Zydis.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder_fixture.h"
#include "trace/builder_internal.h" /* builder_cache_slot */
#include "test_env.h"

#define PID 100
#define TID 100

/* The made-up functions: each 0x1000 bytes from its start. */
static const struct {
	const char *name;
	uint64_t start;
} functions[] = {
	{ "main", 0x401000 },
	{ "foo", 0x402000 },
	{ "bar", 0x403000 },
	{ "baz", 0x404000 },
	{ "a", 0x405000 },
	{ "b", 0x406000 },
	{ "c", 0x407000 },
	{ "d", 0x408000 },
	{ "e", 0x409000 },
	{ "g", 0x40a000 },
	{ "caller", 0x40b000 },
	{ "foo@plt", 0x400100 },
	{ "work", 0x40c000 },
	{ "handler", 0x40d000 },
	{ "helper", 0x40e000 },
	{ "__restore_rt", 0x7f0000001000 },
	{ "__cxa_throw", 0x7f0000002000 },
	{ "_Unwind_RaiseException", 0x7f0000003000 },
	{ "__libc_start_call_main", 0x7f0000004000 },
	{ "entry_SYSCALL_64", 0xffffffff81000000 },
	{ "do_syscall_64", 0xffffffff81001000 },
	{ "ksys_read", 0xffffffff81002000 },
	{ "asm_common_interrupt", 0xffffffff81003000 },
	{ "handle_irq", 0xffffffff81004000 },
	{ "asm_exc_page_fault", 0xffffffff81005000 },
	{ "exc_page_fault", 0xffffffff81006000 },
	{ "[unknown]", 0 },
};

/* An address off bytes into a function, with the symbol as perf script
 * gives it. */
static struct rv_branch_end at(const char *name, uint64_t off)
{
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
		if (!strcmp(functions[i].name, name))
			return (struct rv_branch_end){ .ip = functions[i].start + off,
						       .sym = functions[i].name,
						       .sym_start = functions[i].start };
	}
	cr_assert_fail("no function %s in the test's table", name);
	return (struct rv_branch_end){ 0 };
}

static const struct rv_branch_end nowhere = { 0 };

static void branch_on(struct builder_fixture *f, uint32_t tid, uint64_t time,
		      enum rv_branch_kind kind, uint32_t flags, struct rv_branch_end from,
		      struct rv_branch_end to)
{
	struct rv_event ev = { .kind = RV_EVENT_BRANCH, .pid = PID, .tid = tid, .time = time };

	ev.branch.kind = kind;
	ev.branch.flags = flags;
	ev.branch.from = from;
	ev.branch.to = to;
	builder_fixture_add(f, &ev);
}

static void branch(struct builder_fixture *f, uint64_t time, enum rv_branch_kind kind,
		   uint32_t flags, struct rv_branch_end from, struct rv_branch_end to)
{
	branch_on(f, TID, time, kind, flags, from, to);
}

static void call(struct builder_fixture *f, uint64_t time, struct rv_branch_end from,
		 struct rv_branch_end to)
{
	branch(f, time, RV_BRANCH_CALL, 0, from, to);
}

static void ret(struct builder_fixture *f, uint64_t time, struct rv_branch_end from,
		struct rv_branch_end to)
{
	branch(f, time, RV_BRANCH_RETURN, 0, from, to);
}

static void jump(struct builder_fixture *f, uint64_t time, struct rv_branch_end from,
		 struct rv_branch_end to)
{
	branch(f, time, RV_BRANCH_JUMP, 0, from, to);
}

/* "tr strt": tracing (re)starts at `to`. */
static void trace_begin(struct builder_fixture *f, uint64_t time, struct rv_branch_end to)
{
	branch(f, time, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, nowhere, to);
}

static void trace_error(struct builder_fixture *f, uint64_t time, const char *message,
			bool overflow)
{
	struct rv_event ev = { .kind = RV_EVENT_TRACE_ERROR, .pid = PID, .tid = TID, .time = time };
	char copy[128];

	/* The builder must not keep the producer's message. */
	snprintf(copy, sizeof(copy), "%s", message);
	ev.error.message = copy;
	ev.error.offset = UINT64_MAX;
	ev.error.overflow = overflow;
	builder_fixture_add(f, &ev);
	memset(copy, 'x', sizeof(copy) - 1);
}

static bool inferred(const struct fxt_trace *t, const char *name, size_t nth)
{
	const struct fxt_span *s = trace_span(t, name, nth);
	const struct fxt_arg *arg = fxt_find_arg(s->args, s->nr_args, "inferred_start_time");
	const struct fxt_arg *addr = fxt_find_arg(s->args, s->nr_args, "address");

	/* a function's address (no DWARF here: no file), and for an inferred
	 * one that it is */
	cr_assert_eq(s->nr_args, (addr != NULL) + (arg != NULL), "%s #%zu: other arguments", name,
		     nth);
	if (!arg)
		return false;
	cr_assert_eq(arg->type, FXT_ARG_STRING);
	cr_assert_str_eq(arg->s, "true");
	return true;
}

Test(builder_branch, calls_and_returns_nest_with_exact_times)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 1000, at("main", 0x10));
	call(&f, 1010, at("main", 0x20), at("foo", 0));
	call(&f, 1020, at("foo", 0x8), at("bar", 0));
	ret(&f, 1030, at("bar", 0x40), at("foo", 0xd));
	ret(&f, 1040, at("foo", 0x50), at("main", 0x25));
	call(&f, 1050, at("main", 0x30), at("baz", 0));
	ret(&f, 1060, at("baz", 0x10), at("main", 0x35));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	cr_assert_eq(t->nr_spans, 4);
	expect_span(t, "main", 0, 0, 60, NULL);
	expect_span(t, "foo", 0, 10, 40, "main");
	expect_span(t, "bar", 0, 20, 30, "foo");
	expect_span(t, "baz", 0, 50, 60, "main");
	cr_assert(inferred(t, "main", 0), "main ran before the trace began");
	cr_assert_not(inferred(t, "foo", 0));
	cr_assert_eq(stats.calls, 3);
	cr_assert_eq(stats.returns, 3);
	cr_assert_eq(stats.branches, 7);
	cr_assert_eq(stats.unwinds, 0);
	builder_fixture_close(&f, t);
}

Test(builder_branch, calls_that_share_a_timestamp_are_spread_over_the_interval)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 1000, at("main", 0x10));
	/* three calls at 2000; time moves on to 2300: 300 / 3 = 100 ns each,
	 * at 2000, 2100, 2200 (1000, 1100, 1200 from the zero) */
	call(&f, 2000, at("main", 0x20), at("a", 0));
	call(&f, 2000, at("a", 0x20), at("b", 0));
	call(&f, 2000, at("b", 0x20), at("c", 0));
	/* three returns at 2300; time moves on to 3000: event i at
	 * 2300 + i * 700 / 3, i.e. 2300, 2300 + 233, 2300 + 1400 / 3 = 2766 */
	ret(&f, 2300, at("c", 0x40), at("b", 0x25));
	ret(&f, 2300, at("b", 0x40), at("a", 0x25));
	ret(&f, 2300, at("a", 0x40), at("main", 0x25));
	/* the last batch: no later time; each function entered takes 1 ns
	 * (3000, 3001), and finish ends what is open after them, at 3002 */
	call(&f, 3000, at("main", 0x30), at("d", 0));
	call(&f, 3000, at("d", 0x30), at("e", 0));
	t = builder_fixture_finish(&f);
	expect_span(t, "a", 0, 1000, 1766, "main");
	expect_span(t, "b", 0, 1100, 1533, "a");
	expect_span(t, "c", 0, 1200, 1300, "b");
	expect_span(t, "d", 0, 2000, 2002, "main");
	expect_span(t, "e", 0, 2001, 2002, "d");
	expect_span(t, "main", 0, 0, 2002, NULL);
	builder_fixture_close(&f, t);
}

/* Untraced time of none (the trace resumes at the time it stopped, PT's
 * "[returned]" between a return out of the filter and the next TIP.PGE at
 * one timestamp) draws no placeholder: it would sit at its parent's end,
 * where Perfetto takes it for the parent's sibling. Untraced time of some
 * length still does. */
Test(builder_branch, a_placeholder_of_no_time_is_not_written)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	call(&f, 20, at("work", 0x20), at("foo", 0));
	branch(&f, 30, RV_BRANCH_RETURN, RV_BRANCH_TRACE_END, at("foo", 0x10), nowhere);
	trace_begin(&f, 30, at("work", 0x25));
	ret(&f, 30, at("work", 0x50), at("main", 0x25));
	/* three events at 30, the next at 31: all three at 30 */
	call(&f, 31, at("main", 0x30), at("foo", 0));
	branch(&f, 50, RV_BRANCH_RETURN, RV_BRANCH_TRACE_END, at("foo", 0x10), nowhere);
	trace_begin(&f, 60, at("main", 0x35));
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "[returned]"), 1,
		     "only the untraced 10 ns get a placeholder");
	expect_span(t, "[returned]", 0, 50, 60, "main");
	expect_span(t, "work", 0, 10, 30, "main");
	expect_span(t, "foo", 0, 20, 30, "work");
	builder_fixture_close(&f, t);
}

/* Calls that the spread gives no time (more events at one timestamp than
 * nanoseconds to the next) are written, and one that begins and ends with
 * its parent comes after the parent in the file: a reader that sorts by
 * begin keeps it inside (the strict reader nests as Perfetto does). */
Test(builder_branch, a_zero_length_call_comes_after_its_zero_length_parent)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *a, *b;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	/* five events at 100 and the next at 101: event i at 100 + i * 1 / 5,
	 * so a, b and their returns, and c's call, all at 100 (a zero-length
	 * sibling of a at 100 would read as b's child: Perfetto stacks
	 * zero-length slices of one time) */
	call(&f, 100, at("main", 0x20), at("a", 0));
	call(&f, 100, at("a", 0x20), at("b", 0));
	ret(&f, 100, at("b", 0x40), at("a", 0x25));
	ret(&f, 100, at("a", 0x40), at("main", 0x25));
	call(&f, 100, at("main", 0x30), at("c", 0));
	call(&f, 101, at("c", 0x40), at("d", 0));
	ret(&f, 110, at("d", 0x40), at("c", 0x45));
	ret(&f, 120, at("c", 0x50), at("main", 0x45));
	t = builder_fixture_finish(&f);
	a = fxt_find_span(t, FXT_ANY, FXT_ANY, "a", 0);
	b = fxt_find_span(t, FXT_ANY, FXT_ANY, "b", 0);
	cr_assert(a && b);
	cr_assert_eq(a->begin_ns, 100);
	cr_assert_eq(a->end_ns, 100);
	cr_assert_eq(b->begin_ns, 100);
	cr_assert_eq(b->end_ns, 100);
	cr_assert_lt(a->offset, b->offset,
		     "a, b's parent with the same begin and end, is written first");
	expect_span(t, "a", 0, 100, 100, "main");
	expect_span(t, "b", 0, 100, 100, "a");
	expect_span(t, "c", 0, 100, 120, "main");
	expect_span(t, "d", 0, 101, 110, "c");
	builder_fixture_close(&f, t);
}

Test(builder_branch, returns_and_jumps_in_a_batch_take_their_share_so_every_span_has_a_length)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	/* 4 events at 90 over [90, 120): event i at 90 + i * 30 / 4, i.e. 90,
	 * 97 (30 / 4 = 7), 105 (60 / 4 = 15), 112 (90 / 4 = 22). Spreading
	 * calls only would leave b's return at b's call: a zero-length b. */
	call(&f, 90, at("main", 0x20), at("a", 0));
	call(&f, 90, at("a", 0x20), at("b", 0));
	ret(&f, 90, at("b", 0x30), at("a", 0x25));
	call(&f, 90, at("a", 0x30), at("c", 0));
	ret(&f, 120, at("c", 0x30), at("a", 0x35));
	ret(&f, 130, at("a", 0x40), at("main", 0x35));
	/* a call, a tail call and a return at 200 over [200, 230): 10 ns each.
	 * Spreading calls only would end d where it began, at 200. */
	call(&f, 200, at("main", 0x40), at("d", 0));
	jump(&f, 200, at("d", 0x30), at("e", 0));
	ret(&f, 200, at("e", 0x30), at("main", 0x45));
	call(&f, 230, at("main", 0x50), at("baz", 0));
	ret(&f, 240, at("baz", 0x10), at("main", 0x55));
	t = builder_fixture_finish(&f);
	expect_span(t, "a", 0, 90, 130, "main");
	expect_span(t, "b", 0, 97, 105, "a");
	expect_span(t, "c", 0, 112, 120, "a");
	expect_span(t, "d", 0, 200, 210, "main");
	expect_span(t, "e", 0, 210, 220, "main");
	expect_span(t, "baz", 0, 230, 240, "main");
	expect_span(t, "main", 0, 0, 240, NULL);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert_gt(t->spans[i].end_ns, t->spans[i].begin_ns, "%s has no length",
			     t->spans[i].name);
	builder_fixture_close(&f, t);
}

/* Batches of 1 to 8 events (a power of two or not) over intervals their
 * counts do not divide: event k of n at k * interval / n, rounded down. */
Test(builder_branch, a_batch_of_any_length_spreads_as_the_exact_quotient)
{
	static const char *const names[] = { "a", "b", "c", "d", "e", "g", "foo", "bar" };
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	for (uint64_t n = 1; n <= 8; n++) {
		uint64_t time = 10000 * n;

		/* n calls at time, spread over 997 ns; their returns at
		 * time + 997, spread over 991 ns (up to the next round) */
		call(&f, time, at("main", 0x20), at(names[0], 0));
		for (uint64_t k = 1; k < n; k++)
			call(&f, time, at(names[k - 1], 0x20), at(names[k], 0));
		for (uint64_t k = n; k-- > 1;)
			ret(&f, time + 997, at(names[k], 0x30), at(names[k - 1], 0x25));
		ret(&f, time + 997, at(names[0], 0x30), at("main", 0x25));
		jump(&f, time + 997 + 991, at("main", 0x28), at("main", 0x2c));
	}
	t = builder_fixture_finish(&f);
	for (uint64_t n = 1; n <= 8; n++) {
		uint64_t time = 10000 * n;

		for (uint64_t k = 0; k < n; k++)
			expect_span(t, names[k], n - 1 - k, time + k * 997 / n,
				    time + 997 + (n - 1 - k) * 991 / n, k ? names[k - 1] : "main");
	}
	builder_fixture_close(&f, t);
}

/* 35000 calls of foo and their returns, all at 1000, then main's return at
 * 1000000. A batch holds 65536 events besides the one taken when it opened:
 * the first 65537 events (call #j is event 2j, its return 2j + 1) are a batch
 * with no later time known, 1 ns each: event i at 1000 + i, and call #32768,
 * the last of them, at 66536. The 4463 events left are a batch of their own,
 * spread to 1000000. */
static struct fxt_trace *full_batch(struct builder_fixture *f)
{
	builder_fixture_open(f);
	trace_begin(f, 0, at("main", 0x10));
	for (int i = 0; i < 35000; i++) {
		call(f, 1000, at("main", 0x20), at("foo", 0));
		ret(f, 1000, at("foo", 0x10), at("main", 0x25));
	}
	ret(f, 1000000, at("main", 0x30), at("__libc_start_call_main", 0x7a));
	return builder_fixture_finish(f);
}

Test(builder_branch, a_batch_too_long_to_spread_takes_a_nanosecond_per_event)
{
	struct builder_fixture f;
	struct fxt_trace *t = full_batch(&f);
	uint64_t j = 0, last_end = 0;

	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "foo"), 35000);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (strcmp(s->name, "foo"))
			continue;
		if (j < 32768) {
			cr_assert_eq(s->begin_ns, 1000 + 2 * j, "foo #%llu", (unsigned long long)j);
			cr_assert_eq(s->end_ns, 1000 + 2 * j + 1, "foo #%llu",
				     (unsigned long long)j);
		} else if (j == 32768) {
			cr_assert_eq(s->begin_ns, 66536);
		}
		/* in order, and before the next time */
		cr_assert_geq(s->begin_ns, last_end, "foo #%llu", (unsigned long long)j);
		cr_assert_lt(s->end_ns, 1000000, "foo #%llu", (unsigned long long)j);
		last_end = s->end_ns;
		j++;
	}
	expect_span(t, "main", 0, 0, 1000000, "__libc_start_call_main");
	builder_fixture_close(&f, t);
}

Test(builder_branch, the_events_after_a_full_batch_come_after_its_last_nanosecond)
{
	struct builder_fixture f;
	struct fxt_trace *t = full_batch(&f);
	/* The full batch took [1000, 1000 + 65537); the rest begins at 66537:
	 * event i of 4463 at 66537 + i * (1000000 - 66537) / 4463. Return #32768
	 * is its event 0, call and return #(32768 + m) its events 2m - 1, 2m. */
	const uint64_t t0 = 66537, span_ns = 1000000 - t0, n = 4463;

	expect_span(t, "foo", 32768, 66536, 66537, "main");
	for (uint64_t m = 1; m <= 2231; m++) {
		const struct fxt_span *s = trace_span(t, "foo", 32768 + m);

		cr_assert_eq(s->begin_ns, t0 + (2 * m - 1) * span_ns / n, "foo #%llu",
			     (unsigned long long)(32768 + m));
		cr_assert_eq(s->end_ns, t0 + 2 * m * span_ns / n, "foo #%llu",
			     (unsigned long long)(32768 + m));
	}
	/* 66537 + 209 (933463 / 4463 = 209 rest 696), and the last return at
	 * 66537 + 4462 * 933463 / 4463 = 999790 */
	cr_assert_eq(trace_span(t, "foo", 32769)->begin_ns, 66746);
	cr_assert_eq(trace_span(t, "foo", 34999)->end_ns, 999790);
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_plt_jump_and_a_tail_call_replace_the_top)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("caller", 0));
	call(&f, 20, at("caller", 0x10), at("foo@plt", 0));
	jump(&f, 21, at("foo@plt", 0), at("foo", 0)); /* the PLT stub's jmp *GOT */
	jump(&f, 30, at("foo", 0x60), at("bar", 0));  /* foo ends in a tail call */
	ret(&f, 40, at("bar", 0x20), at("caller", 0x15));
	ret(&f, 50, at("caller", 0x30), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "caller", 0, 10, 50, "main");
	expect_span(t, "foo@plt", 0, 20, 21, "caller");
	expect_span(t, "foo", 0, 21, 30, "caller");
	expect_span(t, "bar", 0, 30, 40, "caller");
	cr_assert_eq(stats.tail_calls, 2);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "caller"), 1);
	builder_fixture_close(&f, t);
}

Test(builder_branch, jumps_inside_a_function_change_nothing)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	for (uint64_t i = 0; i < 100; i++) {
		branch(&f, 11 + i, RV_BRANCH_COND, 0, at("foo", 0x30), at("foo", 0x10));
		jump(&f, 11 + i, at("foo", 0x40), at("foo", 0x50));
	}
	ret(&f, 200, at("foo", 0x60), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	cr_assert_eq(t->nr_spans, 2);
	expect_span(t, "foo", 0, 10, 200, "main");
	cr_assert_eq(stats.tail_calls, 0);
	cr_assert_eq(stats.branches, 203);
	builder_fixture_close(&f, t);
}

Test(builder_branch, returns_above_the_first_frame_infer_their_callers)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	/* The trace begins inside foo, called by bar, called by main. */
	ret(&f, 100, at("foo", 0x30), at("bar", 0x10));
	ret(&f, 150, at("bar", 0x40), at("main", 0x8));
	call(&f, 200, at("main", 0x10), at("baz", 0));
	ret(&f, 250, at("baz", 0x10), at("main", 0x15));
	ret(&f, 300, at("main", 0x80), at("__libc_start_call_main", 0x7a));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "__libc_start_call_main", 0, 0, 200, NULL);
	expect_span(t, "main", 0, 0, 200, "__libc_start_call_main");
	expect_span(t, "bar", 0, 0, 50, "main");
	expect_span(t, "foo", 0, 0, 0, "bar");
	expect_span(t, "baz", 0, 100, 150, "main");
	cr_assert(inferred(t, "foo", 0));
	cr_assert(inferred(t, "bar", 0));
	cr_assert(inferred(t, "main", 0));
	cr_assert(inferred(t, "__libc_start_call_main", 0));
	cr_assert_not(inferred(t, "baz", 0));
	cr_assert_eq(stats.inferred, 4);
	builder_fixture_close(&f, t);
}

Test(builder_branch, longjmp_into_a_frame_three_deeper_ends_the_frames_above_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("a", 0)); /* a calls setjmp, then b */
	call(&f, 20, at("a", 0x20), at("b", 0));
	call(&f, 30, at("b", 0x20), at("c", 0));
	call(&f, 40, at("c", 0x20), at("d", 0));
	/* d's longjmp lands after a's setjmp call: a is 3 frames below d */
	jump(&f, 50, at("d", 0x90), at("a", 0x25));
	ret(&f, 60, at("a", 0x40), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "a", 0, 10, 60, "main");
	expect_span(t, "b", 0, 20, 50, "a");
	expect_span(t, "c", 0, 30, 50, "b");
	expect_span(t, "d", 0, 40, 50, "c");
	cr_assert_eq(stats.unwinds, 3);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "a"), 1);
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_cxx_exception_unwinds_to_the_landing_pad)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("a", 0)); /* try { b(); } catch ... */
	call(&f, 20, at("a", 0x20), at("b", 0));
	call(&f, 30, at("b", 0x20), at("c", 0));
	call(&f, 40, at("c", 0x20), at("__cxa_throw", 0));
	call(&f, 50, at("__cxa_throw", 0x20), at("_Unwind_RaiseException", 0));
	/* the personality routine found a's handler: uw_install_context jumps */
	jump(&f, 60, at("_Unwind_RaiseException", 0x300), at("a", 0x80));
	call(&f, 70, at("a", 0x84), at("foo", 0)); /* __cxa_begin_catch, say */
	ret(&f, 80, at("foo", 0x10), at("a", 0x89));
	ret(&f, 90, at("a", 0x90), at("main", 0x25));
	/* the same through a ret (__builtin_eh_return's epilogue) */
	call(&f, 100, at("main", 0x30), at("a", 0));
	call(&f, 110, at("a", 0x20), at("b", 0));
	call(&f, 120, at("b", 0x20), at("_Unwind_RaiseException", 0));
	ret(&f, 130, at("_Unwind_RaiseException", 0x310), at("a", 0x80));
	ret(&f, 140, at("a", 0x90), at("main", 0x35));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "a", 0, 10, 90, "main");
	expect_span(t, "b", 0, 20, 60, "a");
	expect_span(t, "c", 0, 30, 60, "b");
	expect_span(t, "__cxa_throw", 0, 40, 60, "c");
	expect_span(t, "_Unwind_RaiseException", 0, 50, 60, "__cxa_throw");
	expect_span(t, "foo", 0, 70, 80, "a");
	expect_span(t, "a", 1, 100, 140, "main");
	expect_span(t, "b", 1, 110, 130, "a");
	expect_span(t, "_Unwind_RaiseException", 1, 120, 130, "b");
	cr_assert_eq(stats.unwinds, 4 + 1);
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_signal_handler_runs_on_the_interrupted_function_user_only)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;
	const struct fxt_span *s;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	/* a syscall; the signal is delivered on its way back */
	branch(&f, 20, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("work", 0x30), nowhere);
	trace_begin(&f, 30, at("handler", 0));
	call(&f, 35, at("handler", 0x10), at("helper", 0));
	ret(&f, 36, at("helper", 0x10), at("handler", 0x15));
	ret(&f, 40, at("handler", 0x40), at("__restore_rt", 0));
	branch(&f, 41, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("__restore_rt", 0x7),
	       nowhere); /* rt_sigreturn */
	trace_begin(&f, 50, at("work", 0x32));
	ret(&f, 60, at("work", 0x50), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "work", 0, 10, 60, "main");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1, "the stack stayed intact");
	expect_span(t, "[syscall]", 0, 20, 30, "work");
	expect_span(t, "handler", 0, 30, 40, "work");
	expect_span(t, "helper", 0, 35, 36, "handler");
	expect_span(t, "__restore_rt", 0, 40, 50, "work");
	expect_span(t, "[syscall]", 1, 41, 50, "__restore_rt");
	cr_assert_eq(stats.unwinds, 1, "sigreturn ends __restore_rt");
	s = trace_span(t, "main", 0);
	cr_assert_eq(s->end_ns, 60);
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_signal_handler_that_ends_in_a_tail_call_returns_to_the_restorer)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	branch(&f, 20, RV_BRANCH_NONE, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC, at("work", 0x30),
	       nowhere);
	trace_begin(&f, 30, at("handler", 0));
	jump(&f, 35, at("handler", 0x10), at("helper", 0));
	ret(&f, 40, at("helper", 0x40), at("__restore_rt", 0));
	branch(&f, 41, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("__restore_rt", 0x7), nowhere);
	trace_begin(&f, 50, at("work", 0x30));
	ret(&f, 60, at("work", 0x50), at("main", 0x25));
	t = builder_fixture_finish(&f);
	expect_span(t, "work", 0, 10, 60, "main");
	/* the kernel delivered the signal: untraced kernel time */
	expect_span(t, "[kernel]", 0, 20, 30, "work");
	expect_span(t, "handler", 0, 30, 35, "work");
	expect_span(t, "helper", 0, 35, 40, "work");
	expect_span(t, "__restore_rt", 0, 40, 50, "work");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1);
	builder_fixture_close(&f, t);
}

Test(builder_branch, an_untraced_syscall_is_a_placeholder_without_self_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_top_function top[4];
	size_t n;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	branch(&f, 20, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("work", 0x30), nowhere);
	trace_begin(&f, 70, at("work", 0x32));
	ret(&f, 80, at("work", 0x50), at("main", 0x25));
	/* an interrupt (async, untraced) */
	branch(&f, 90, RV_BRANCH_NONE, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC, at("main", 0x28),
	       nowhere);
	trace_begin(&f, 95, at("main", 0x28));
	/* a ret into code out of the filter */
	call(&f, 100, at("main", 0x30), at("foo", 0));
	branch(&f, 110, RV_BRANCH_RETURN, RV_BRANCH_TRACE_END, at("foo", 0x10), nowhere);
	trace_begin(&f, 120, at("main", 0x35));
	t = builder_fixture_finish(&f);
	n = rv_builder_top_functions(f.b, top, 4);
	expect_span(t, "[syscall]", 0, 20, 70, "work");
	expect_span(t, "work", 0, 10, 80, "main");
	expect_span(t, "[kernel]", 0, 90, 95, "main");
	expect_span(t, "foo", 0, 100, 110, "main");
	expect_span(t, "[returned]", 0, 110, 120, "main");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	/* work ran 10 + 10 ns; the syscall's 50 ns are nobody's self time, nor
	 * the untraced 5 and 10 ns */
	cr_assert_eq(n, 3);
	cr_assert_str_eq(top[0].name, "main");
	cr_assert_eq(top[0].self_ns, 10 + 10 + 5);
	cr_assert_str_eq(top[1].name, "work");
	cr_assert_eq(top[1].self_ns, 20);
	cr_assert_str_eq(top[2].name, "foo");
	cr_assert_eq(top[2].self_ns, 10);
	builder_fixture_close(&f, t);
}

Test(builder_branch, traced_kernel_entries_run_on_their_own_stacks)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	branch(&f, 20, RV_BRANCH_SYSCALL, 0, at("work", 0x30), at("entry_SYSCALL_64", 0));
	call(&f, 21, at("entry_SYSCALL_64", 0x40), at("do_syscall_64", 0));
	call(&f, 22, at("do_syscall_64", 0x40), at("ksys_read", 0));
	/* a hardware interrupt inside the syscall: a third stack */
	branch(&f, 23, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("ksys_read", 0x10),
	       at("asm_common_interrupt", 0));
	call(&f, 24, at("asm_common_interrupt", 0x10), at("handle_irq", 0));
	ret(&f, 25, at("handle_irq", 0x10), at("asm_common_interrupt", 0x15));
	branch(&f, 26, RV_BRANCH_IRET, 0, at("asm_common_interrupt", 0x80), at("ksys_read", 0x10));
	ret(&f, 27, at("ksys_read", 0x30), at("do_syscall_64", 0x45));
	ret(&f, 28, at("do_syscall_64", 0x60), at("entry_SYSCALL_64", 0x45));
	branch(&f, 29, RV_BRANCH_SYSRET, 0, at("entry_SYSCALL_64", 0x90), at("work", 0x32));
	/* a hardware interrupt in user code */
	branch(&f, 30, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("work", 0x40),
	       at("asm_common_interrupt", 0));
	call(&f, 31, at("asm_common_interrupt", 0x10), at("handle_irq", 0));
	ret(&f, 32, at("handle_irq", 0x10), at("asm_common_interrupt", 0x15));
	branch(&f, 33, RV_BRANCH_IRET, 0, at("asm_common_interrupt", 0x80), at("work", 0x40));
	ret(&f, 40, at("work", 0x50), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "work", 0, 10, 40, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 20, 29, "work");
	expect_span(t, "do_syscall_64", 0, 21, 28, "entry_SYSCALL_64");
	expect_span(t, "ksys_read", 0, 22, 27, "do_syscall_64");
	expect_span(t, "asm_common_interrupt", 0, 23, 26, "ksys_read");
	expect_span(t, "handle_irq", 0, 24, 25, "asm_common_interrupt");
	expect_span(t, "asm_common_interrupt", 1, 30, 33, "work");
	expect_span(t, "handle_irq", 1, 31, 32, "asm_common_interrupt");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "ksys_read"), 1);
	cr_assert_eq(stats.unwinds, 0);
	builder_fixture_close(&f, t);
}

Test(builder_branch, kernel_entries_that_never_return_stay_nested)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	/* a stream that enters the kernel 100 times and never leaves it */
	for (uint64_t i = 0; i < 100; i++)
		branch(&f, 10 + i, RV_BRANCH_SYSCALL, 0, at("main", 0x30),
		       at("entry_SYSCALL_64", 0));
	trace_error(&f, 200, "overflow", true);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "entry_SYSCALL_64"), 100);
	cr_assert_eq(trace_span(t, "entry_SYSCALL_64", 0)->end_ns, 200);
	cr_assert_eq(trace_span(t, "main", 0)->end_ns, 200);
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_trace_that_starts_in_a_syscall_infers_the_user_caller)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	/* The first event is in the kernel; nothing was set aside. */
	ret(&f, 100, at("ksys_read", 0x30), at("do_syscall_64", 0x45));
	ret(&f, 110, at("do_syscall_64", 0x60), at("entry_SYSCALL_64", 0x45));
	branch(&f, 120, RV_BRANCH_SYSRET, 0, at("entry_SYSCALL_64", 0x90), at("work", 0x32));
	ret(&f, 130, at("work", 0x50), at("main", 0x25));
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 30, NULL);
	expect_span(t, "work", 0, 0, 30, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 0, 20, "work");
	expect_span(t, "do_syscall_64", 0, 0, 10, "entry_SYSCALL_64");
	expect_span(t, "ksys_read", 0, 0, 0, "do_syscall_64");
	cr_assert(inferred(t, "work", 0));
	builder_fixture_close(&f, t);
}

/* The category every span of the trace named name carries ("" for none). */
static void expect_category(const struct fxt_trace *t, const char *name, const char *category)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		if (strcmp(t->spans[i].name, name))
			continue;
		n++;
		cr_assert_str_eq(t->spans[i].category, category, "%s in \"%s\", not \"%s\"", name,
				 t->spans[i].category, category);
	}
	cr_assert_gt(n, 0, "no span %s", name);
}

/* issue 17: the kernel entries of a trace that resumes in user space after
 * each (perf script's "tr strt") end there; main is one span, not a
 * staircase of main > kernel > main > kernel > main. */
Test(builder_branch, a_resume_in_user_space_ends_the_kernel_entry)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 1000, at("main", 0));
	branch(&f, 1010, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("main", 0x10),
	       at("asm_exc_page_fault", 0));
	trace_begin(&f, 1100, at("main", 0x10));
	branch(&f, 1130, RV_BRANCH_SYSCALL, 0, at("main", 0x30), at("entry_SYSCALL_64", 0));
	trace_begin(&f, 1200, at("main", 0x32));
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 3);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	expect_span(t, "main", 0, 0, 200, NULL);
	expect_span(t, "asm_exc_page_fault", 0, 10, 100, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 130, 200, "main");
	expect_category(t, "main", "");
	expect_category(t, "asm_exc_page_fault", "kernel");
	expect_category(t, "entry_SYSCALL_64", "kernel");
	builder_fixture_close(&f, t);
}

/* Interrupts nest in the kernel they interrupt, and all of it ends when
 * user code is seen again, after a gap in the kernel. */
Test(builder_branch, nested_interrupts_end_with_the_kernel_in_user_space)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	branch(&f, 20, RV_BRANCH_SYSCALL, 0, at("work", 0x30), at("entry_SYSCALL_64", 0));
	call(&f, 21, at("entry_SYSCALL_64", 0x40), at("do_syscall_64", 0));
	branch(&f, 22, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("do_syscall_64", 0x10),
	       at("asm_common_interrupt", 0));
	call(&f, 23, at("asm_common_interrupt", 0x10), at("handle_irq", 0));
	/* a fault inside the interrupt handler */
	branch(&f, 24, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("handle_irq", 0x10),
	       at("asm_exc_page_fault", 0));
	call(&f, 25, at("asm_exc_page_fault", 0x10), at("exc_page_fault", 0));
	/* tracing stops in the kernel (a PGD), and resumes in user code */
	branch(&f, 26, RV_BRANCH_NONE, RV_BRANCH_TRACE_END, at("exc_page_fault", 0x8), nowhere);
	trace_begin(&f, 40, at("work", 0x32));
	ret(&f, 50, at("work", 0x50), at("main", 0x25));
	/* an interrupt in user code, returning by iret */
	branch(&f, 60, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("main", 0x28),
	       at("asm_common_interrupt", 0));
	branch(&f, 61, RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC, at("asm_common_interrupt", 0x8),
	       at("asm_exc_page_fault", 0));
	branch(&f, 62, RV_BRANCH_IRET, 0, at("asm_exc_page_fault", 0x80),
	       at("asm_common_interrupt", 0x8));
	branch(&f, 63, RV_BRANCH_IRET, 0, at("asm_common_interrupt", 0x80), at("main", 0x28));
	ret(&f, 70, at("main", 0x40), at("__libc_start_call_main", 0x10));
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	expect_span(t, "main", 0, 0, 70, "__libc_start_call_main");
	expect_span(t, "work", 0, 10, 50, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 20, 40, "work");
	expect_span(t, "do_syscall_64", 0, 21, 40, "entry_SYSCALL_64");
	expect_span(t, "asm_common_interrupt", 0, 22, 40, "do_syscall_64");
	expect_span(t, "handle_irq", 0, 23, 40, "asm_common_interrupt");
	expect_span(t, "asm_exc_page_fault", 0, 24, 40, "handle_irq");
	expect_span(t, "exc_page_fault", 0, 25, 40, "asm_exc_page_fault");
	/* kernel time the trace did not see */
	expect_span(t, "[untraced]", 0, 26, 40, "exc_page_fault");
	expect_category(t, "[untraced]", "kernel");
	expect_span(t, "asm_common_interrupt", 1, 60, 63, "main");
	expect_span(t, "asm_exc_page_fault", 1, 61, 62, "asm_common_interrupt");
	expect_category(t, "asm_common_interrupt", "kernel");
	expect_category(t, "work", "");
	builder_fixture_close(&f, t);
}

/* A trace that resumes in the kernel under user code (after an untraced
 * system call began), or a plain branch from user code to a kernel
 * address: a kernel entry like any other, over when user code runs. */
Test(builder_branch, a_resume_in_the_kernel_under_user_code_enters_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("work", 0));
	branch(&f, 20, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("work", 0x30), nowhere);
	trace_begin(&f, 25, at("ksys_read", 0x10));
	ret(&f, 28, at("ksys_read", 0x30), at("do_syscall_64", 0x45));
	branch(&f, 30, RV_BRANCH_SYSRET, 0, at("do_syscall_64", 0x90), at("work", 0x32));
	/* a jmp into the kernel (perf script without the kind) and a ret out */
	jump(&f, 40, at("work", 0x40), at("entry_SYSCALL_64", 0));
	ret(&f, 45, at("entry_SYSCALL_64", 0x60), at("work", 0x42));
	ret(&f, 50, at("work", 0x50), at("main", 0x25));
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work"), 1);
	expect_span(t, "work", 0, 10, 50, "main");
	expect_span(t, "[syscall]", 0, 20, 25, "work");
	/* ksys_read returns into do_syscall_64, running since the entry */
	expect_span(t, "do_syscall_64", 0, 25, 30, "work");
	expect_span(t, "ksys_read", 0, 25, 28, "do_syscall_64");
	cr_assert(inferred(t, "do_syscall_64", 0));
	expect_span(t, "entry_SYSCALL_64", 0, 40, 45, "work");
	expect_category(t, "[syscall]", "kernel");
	expect_category(t, "do_syscall_64", "kernel");
	builder_fixture_close(&f, t);
}

/* Kernel-only tracing: each system call's sysret leaves the trace for user
 * time (not the kernel's), and the next entry starts a kernel stack again. */
Test(builder_branch, a_kernel_only_trace_leaves_to_untraced_user_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("ksys_read", 0x10));
	ret(&f, 10, at("ksys_read", 0x30), at("do_syscall_64", 0x45));
	branch(&f, 20, RV_BRANCH_SYSRET, RV_BRANCH_TRACE_END, at("do_syscall_64", 0x90), nowhere);
	trace_begin(&f, 30, at("entry_SYSCALL_64", 0));
	call(&f, 35, at("entry_SYSCALL_64", 0x40), at("do_syscall_64", 0));
	branch(&f, 40, RV_BRANCH_SYSRET, RV_BRANCH_TRACE_END, at("entry_SYSCALL_64", 0x90),
	       nowhere);
	trace_begin(&f, 50, at("entry_SYSCALL_64", 0));
	t = builder_fixture_finish(&f);
	/* (the inferred one is written last) */
	expect_span(t, "do_syscall_64", 1, 0, 20, NULL);
	expect_span(t, "ksys_read", 0, 0, 10, "do_syscall_64");
	expect_span(t, "[untraced]", 0, 20, 30, NULL);
	expect_span(t, "entry_SYSCALL_64", 0, 30, 40, NULL);
	expect_span(t, "do_syscall_64", 0, 35, 40, "entry_SYSCALL_64");
	expect_span(t, "[untraced]", 1, 40, 50, NULL);
	expect_category(t, "[untraced]", "");
	expect_category(t, "do_syscall_64", "kernel");
	builder_fixture_close(&f, t);
}

/* Which spans are the kernel's: kernel code and the placeholders for the
 * kernel's untraced time; not user code, gaps, or untraced user code. */
Test(builder_branch, kernel_spans_carry_the_kernel_category)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	branch(&f, 10, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, at("main", 0x20), nowhere);
	trace_begin(&f, 20, at("main", 0x22));
	branch(&f, 30, RV_BRANCH_INTERRUPT, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC, at("main", 0x24),
	       nowhere);
	trace_begin(&f, 40, at("main", 0x24));
	call(&f, 50, at("main", 0x30), at("foo", 0));
	branch(&f, 60, RV_BRANCH_RETURN, RV_BRANCH_TRACE_END, at("foo", 0x10), nowhere);
	trace_begin(&f, 70, at("main", 0x35));
	branch(&f, 80, RV_BRANCH_JUMP, RV_BRANCH_TRACE_END, at("main", 0x38), nowhere);
	trace_begin(&f, 90, at("main", 0x40));
	branch(&f, 100, RV_BRANCH_SYSCALL, 0, at("main", 0x50), at("entry_SYSCALL_64", 0));
	trace_error(&f, 110, "overflow", true);
	trace_begin(&f, 120, at("main", 0x60));
	t = builder_fixture_finish(&f);
	expect_category(t, "main", "");
	expect_category(t, "foo", "");
	expect_category(t, "[syscall]", "kernel");
	expect_span(t, "[kernel]", 0, 30, 40, "main");
	expect_category(t, "[kernel]", "kernel");
	expect_category(t, "[returned]", "");
	expect_category(t, "[untraced]", "");
	expect_category(t, "entry_SYSCALL_64", "kernel");
	expect_category(t, "[trace gap]", "");
	builder_fixture_close(&f, t);
}

Test(builder_branch, overflow_and_decode_error_close_everything_and_restart_cleanly)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	call(&f, 20, at("foo", 0x20), at("bar", 0));
	branch(&f, 25, RV_BRANCH_SYSCALL, 0, at("bar", 0x30), at("entry_SYSCALL_64", 0));
	trace_error(&f, 30, "overflow", true);
	/* resynchronised at the error's timestamp: the begin 1 ns after the
	 * error, at 31 (not spread with the error over [30, 40)) */
	trace_begin(&f, 30, at("bar", 0x40));
	ret(&f, 40, at("bar", 0x50), at("foo", 0x25));
	trace_error(&f, 50, "no memory mapped at 0x1234", false);
	trace_begin(&f, 60, at("main", 0x28));
	call(&f, 70, at("main", 0x30), at("baz", 0));
	ret(&f, 80, at("baz", 0x10), at("main", 0x35));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	cr_assert_eq(stats.errors, 2);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[overflow]", 0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 30);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[decode error: no memory mapped at 0x1234]",
				  0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 50);
	/* everything open ended at the overflow, the kernel stack and the user one */
	expect_span(t, "main", 0, 0, 30, NULL);
	expect_span(t, "foo", 0, 10, 30, "main");
	expect_span(t, "bar", 0, 20, 30, "foo");
	expect_span(t, "entry_SYSCALL_64", 0, 25, 30, "bar");
	expect_span(t, "[trace gap]", 0, 30, 31, NULL);
	/* restarted in bar, then returned above it into foo */
	expect_span(t, "foo", 1, 31, 50, NULL);
	expect_span(t, "bar", 1, 31, 40, "foo");
	cr_assert(inferred(t, "bar", 1));
	cr_assert(inferred(t, "foo", 1));
	expect_span(t, "[trace gap]", 1, 50, 60, NULL);
	expect_span(t, "main", 1, 60, 80, NULL);
	expect_span(t, "baz", 0, 70, 80, "main");
	builder_fixture_close(&f, t);
}

Test(builder_branch, an_event_that_the_spreading_leaves_at_the_errors_time_moves_1ns_later)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	/* 3 events at 20 over [20, 22): 20, 20 + 2 / 3 = 20, 20 + 4 / 3 = 21;
	 * the begin at the overflow's time moves to 21 (magic-trace #155) */
	trace_error(&f, 20, "overflow", true);
	trace_begin(&f, 20, at("foo", 0x10));
	call(&f, 20, at("foo", 0x20), at("bar", 0));
	ret(&f, 22, at("bar", 0x10), at("foo", 0x25));
	ret(&f, 30, at("foo", 0x30), at("main", 0x25));
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[overflow]", 0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 20);
	expect_span(t, "main", 0, 0, 20, NULL);
	expect_span(t, "foo", 0, 10, 20, "main");
	expect_span(t, "[trace gap]", 0, 20, 21, NULL);
	expect_span(t, "main", 1, 21, 30, NULL);
	expect_span(t, "foo", 1, 21, 30, "main");
	expect_span(t, "bar", 0, 21, 22, "foo");
	cr_assert(inferred(t, "foo", 1));
	cr_assert(inferred(t, "main", 1));
	builder_fixture_close(&f, t);
}

/* issue 19: an error that shares its timestamp with the branches before it
 * (PT: no timing packet between them; perf script prints them with one time)
 * is drawn at that time. Spreading it with them over the time to the next
 * event put it at 20 + (1000 - 20) / 3 * 2 = 673, and foo and main absorbed
 * the time the error lost. */
Test(builder_branch, an_error_is_drawn_at_its_time_not_spread_with_its_batch)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	call(&f, 12, at("foo", 0x20), at("bar", 0));
	call(&f, 14, at("bar", 0x20), at("baz", 0));
	ret(&f, 20, at("baz", 0x10), at("bar", 0x25));
	ret(&f, 20, at("bar", 0x30), at("foo", 0x25));
	trace_error(&f, 20, "overflow", true);
	trace_begin(&f, 1000, at("foo", 0x30));
	ret(&f, 1010, at("foo", 0x40), at("main", 0x25));
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[overflow]", 0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 20, "the overflow at %llu, not at 20",
		     (unsigned long long)marker->ts_ns);
	/* the returns before it, stamped 20, are at 20: nothing to spread over */
	expect_span(t, "baz", 0, 14, 20, "bar");
	expect_span(t, "bar", 0, 12, 20, "foo");
	expect_span(t, "foo", 0, 10, 20, "main");
	expect_span(t, "main", 0, 0, 20, NULL);
	expect_span(t, "[trace gap]", 0, 20, 1000, NULL);
	expect_span(t, "foo", 1, 1000, 1010, "main");
	expect_span(t, "main", 1, 1000, 1010, NULL);
	builder_fixture_close(&f, t);
}

/* Functions entered among the branches that share the error's stamp (a
 * softpt overflow: the calls perf decodes up to the lost stretch) take 1 ns
 * each, so that they keep a length and their nesting, and the error comes
 * after them; the branches after the error at its time begin 1 ns after it
 * (the gap needs a length: magic-trace #155), not spread with it. */
Test(builder_branch, functions_entered_at_an_errors_stamp_keep_a_length_before_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	/* foo at 100, bar at 101, bar's return and the error at 102 */
	call(&f, 100, at("main", 0x20), at("foo", 0));
	call(&f, 100, at("foo", 0x20), at("bar", 0));
	ret(&f, 100, at("bar", 0x30), at("foo", 0x25));
	trace_error(&f, 100, "no memory mapped at 0x1234", false);
	/* resynchronised before the next timing packet: at 103, spread over
	 * [103, 301): 103 and 202 */
	trace_begin(&f, 100, at("foo", 0x40));
	call(&f, 100, at("foo", 0x50), at("baz", 0));
	ret(&f, 301, at("baz", 0x10), at("foo", 0x55));
	ret(&f, 400, at("foo", 0x60), at("main", 0x25));
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[decode error: no memory mapped at 0x1234]",
				  0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 102, "the error at %llu, not at 102",
		     (unsigned long long)marker->ts_ns);
	expect_span(t, "main", 0, 0, 102, NULL);
	expect_span(t, "foo", 0, 100, 102, "main");
	expect_span(t, "bar", 0, 101, 102, "foo");
	expect_span(t, "[trace gap]", 0, 102, 103, NULL);
	expect_span(t, "foo", 1, 103, 400, "main");
	expect_span(t, "baz", 0, 202, 301, "foo");
	cr_assert(inferred(t, "foo", 1));
	builder_fixture_close(&f, t);
}

/* A PT decoder reports an error with the last timing packet's time, the
 * batch it ends having come at an earlier one: the batch spreads up to the
 * error, the error is at its time, and decoding resumes (a PSB whose TSC
 * says no time passed) 1 ns after it, not halfway to the next time. */
Test(builder_branch, a_batch_before_an_error_spreads_up_to_it_and_the_resume_follows_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	/* 10, 20, 30 (the error's 40 - 10 = 30 over 3) */
	call(&f, 10, at("main", 0x20), at("foo", 0));
	call(&f, 10, at("foo", 0x20), at("bar", 0));
	ret(&f, 10, at("bar", 0x30), at("foo", 0x25));
	trace_error(&f, 40, "overflow", true);
	trace_begin(&f, 40, at("main", 0x30));
	ret(&f, 90, at("main", 0x40), at("__libc_start_call_main", 0x7a));
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[overflow]", 0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 40);
	expect_span(t, "bar", 0, 20, 30, "foo");
	expect_span(t, "foo", 0, 10, 40, "main");
	expect_span(t, "main", 0, 0, 40, NULL);
	expect_span(t, "[trace gap]", 0, 40, 41, NULL);
	expect_span(t, "main", 1, 41, 90, "__libc_start_call_main");
	builder_fixture_close(&f, t);
}

/* A raw trace without timing packets stamps every event alike (0): its
 * stamps say nothing but the order, each branch counts 1 ns, and an error
 * takes the nanosecond after the branches before it rather than squeezing
 * them into its stamp (zero-length spans in a trace without time). */
Test(builder_branch, in_a_trace_without_timing_an_error_comes_after_its_branches)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 0, at("main", 0x20), at("foo", 0));
	call(&f, 0, at("foo", 0x20), at("bar", 0));
	trace_error(&f, 0, "no memory mapped at 0x1234", false);
	trace_begin(&f, 0, at("foo", 0x40));
	call(&f, 0, at("foo", 0x50), at("baz", 0));
	ret(&f, 0, at("baz", 0x10), at("foo", 0x55));
	trace_error(&f, 0, "overflow", true);
	trace_begin(&f, 0, at("main", 0x30));
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[decode error: no memory mapped at 0x1234]",
				  0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 3);
	expect_span(t, "main", 0, 0, 3, NULL);
	expect_span(t, "foo", 0, 1, 3, "main");
	expect_span(t, "bar", 0, 2, 3, "foo");
	expect_span(t, "[trace gap]", 0, 3, 4, NULL);
	/* 4, 5, 6, and the overflow at 7 */
	expect_span(t, "baz", 0, 5, 6, "foo");
	expect_span(t, "foo", 1, 4, 7, NULL);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[overflow]", 0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 7);
	expect_span(t, "[trace gap]", 1, 7, 8, NULL);
	builder_fixture_close(&f, t);
}

/* The thread's last branches share a stamp and no later time comes: they
 * are at that stamp, and the trace ends there (a nanosecond for each would
 * have run it on past the input by as many). */
Test(builder_branch, the_trace_ends_at_its_last_stamp)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	call(&f, 20, at("foo", 0x20), at("bar", 0));
	call(&f, 30, at("bar", 0x20), at("baz", 0));
	ret(&f, 100, at("baz", 0x10), at("bar", 0x25));
	branch(&f, 100, RV_BRANCH_COND, 0, at("bar", 0x30), at("bar", 0x10));
	ret(&f, 100, at("bar", 0x40), at("foo", 0x25));
	ret(&f, 100, at("foo", 0x40), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "baz", 0, 30, 100, "bar");
	expect_span(t, "bar", 0, 20, 100, "foo");
	expect_span(t, "foo", 0, 10, 100, "main");
	expect_span(t, "main", 0, 0, 100, NULL);
	cr_assert_eq(stats.last_time - stats.first_time, 100, "the trace covers %llu ns",
		     (unsigned long long)(stats.last_time - stats.first_time));
	builder_fixture_close(&f, t);
}

/* issue 19: "tr strt" exactly at a function's first byte (perf script's
 * _start+0x0, main+0x0) enters the function then: a call, at the trace
 * begin's time, not a frame that was running before the trace began. */
Test(builder_branch, a_trace_begin_at_a_functions_first_byte_is_a_call)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 100, at("main", 0));
	call(&f, 110, at("main", 0x20), at("foo", 0));
	ret(&f, 120, at("foo", 0x10), at("main", 0x25));
	ret(&f, 130, at("main", 0x30), at("__libc_start_call_main", 0x7a));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "main", 0, 0, 30, "__libc_start_call_main");
	cr_assert_not(inferred(t, "main", 0), "main was entered when the trace began");
	/* its caller ran before: that one is a guess */
	expect_span(t, "__libc_start_call_main", 0, 0, 30, NULL);
	cr_assert(inferred(t, "__libc_start_call_main", 0));
	cr_assert_eq(stats.calls, 2, "the trace begin at main's entry is a call");
	cr_assert_eq(stats.inferred, 1);
	builder_fixture_close(&f, t);
}

/* The same for a trace that resumes at a function's entry after a gap, and
 * in the middle of one (inferred, as before). */
Test(builder_branch, a_trace_begin_at_a_functions_first_byte_after_a_gap_is_a_call)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), at("foo", 0));
	trace_error(&f, 20, "overflow", true);
	trace_begin(&f, 50, at("bar", 0));
	ret(&f, 60, at("bar", 0x10), at("foo", 0x30));
	ret(&f, 70, at("foo", 0x40), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	cr_assert(inferred(t, "main", 0), "main ran before the trace began");
	expect_span(t, "[trace gap]", 0, 20, 50, NULL);
	expect_span(t, "bar", 0, 50, 60, "foo");
	cr_assert_not(inferred(t, "bar", 0), "bar was entered when the trace resumed");
	expect_span(t, "foo", 1, 50, 70, "main");
	cr_assert(inferred(t, "foo", 1));
	cr_assert(inferred(t, "main", 1));
	cr_assert_eq(stats.calls, 2);
	cr_assert_eq(stats.inferred, 3);
	builder_fixture_close(&f, t);
}

/* A process's first instruction: the kernel's execve returns to _start's
 * first byte, which begins then, however the trace shows it (a sysret out
 * of a traced kernel, a trace that resumes there). */
Test(builder_branch, user_code_entered_at_a_functions_first_byte_from_the_kernel_begins_then)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	ret(&f, 100, at("do_syscall_64", 0x60), at("entry_SYSCALL_64", 0x45));
	branch(&f, 120, RV_BRANCH_SYSRET, 0, at("entry_SYSCALL_64", 0x90), at("main", 0));
	call(&f, 130, at("main", 0x20), at("foo", 0));
	ret(&f, 140, at("foo", 0x10), at("main", 0x25));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "entry_SYSCALL_64", 0, 0, 20, NULL);
	cr_assert(inferred(t, "entry_SYSCALL_64", 0));
	expect_span(t, "main", 0, 20, 40, NULL);
	cr_assert_not(inferred(t, "main", 0), "main begins where the kernel left for it");
	cr_assert_eq(stats.calls, 2, "main's entry and foo's call");
	builder_fixture_close(&f, t);
}

/* A kernel-only trace resumes after untraced user time on an empty stack:
 * at a function's first byte that is a call too. */
Test(builder_branch, a_trace_begin_at_a_first_byte_on_an_emptied_stack_counts_as_a_call)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("ksys_read", 0x10));
	ret(&f, 10, at("ksys_read", 0x30), at("do_syscall_64", 0x45));
	branch(&f, 20, RV_BRANCH_SYSRET, RV_BRANCH_TRACE_END, at("do_syscall_64", 0x90), nowhere);
	trace_begin(&f, 30, at("entry_SYSCALL_64", 0));
	branch(&f, 40, RV_BRANCH_SYSRET, RV_BRANCH_TRACE_END, at("entry_SYSCALL_64", 0x90),
	       nowhere);
	trace_begin(&f, 50, at("entry_SYSCALL_64", 0x10));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	expect_span(t, "entry_SYSCALL_64", 0, 30, 40, NULL);
	cr_assert_not(inferred(t, "entry_SYSCALL_64", 0));
	cr_assert_eq(stats.calls, 1, "entry_SYSCALL_64 entered at 30, not at 50 (its middle)");
	builder_fixture_close(&f, t);
}

Test(builder_branch, trace_begin_into_an_empty_stack)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	trace_begin(&f, 100, at("foo", 0x10));
	ret(&f, 150, at("foo", 0x20), at("main", 0x25));
	branch(&f, 160, RV_BRANCH_NONE, RV_BRANCH_TRACE_END | RV_BRANCH_ASYNC, at("main", 0x28),
	       nowhere);
	trace_begin(&f, 170, at("main", 0x28));
	call(&f, 180, at("main", 0x30), at("bar", 0));
	t = builder_fixture_finish(&f);
	/* bar, entered at the last event, takes its nanosecond */
	expect_span(t, "main", 0, 0, 81, NULL);
	expect_span(t, "foo", 0, 0, 50, "main");
	/* an interrupt, untraced */
	expect_span(t, "[kernel]", 0, 60, 70, "main");
	expect_span(t, "bar", 0, 80, 81, "main");
	cr_assert(inferred(t, "foo", 0), "the thread's first event: foo was running");
	cr_assert(inferred(t, "main", 0));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	builder_fixture_close(&f, t);
}

Test(builder_branch, two_threads_interleaved_keep_their_own_stacks_and_batches)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event name = { .kind = RV_EVENT_THREAD_NAME, .pid = PID, .tid = 101 };
	struct rv_event exit_ev = { .kind = RV_EVENT_THREAD_EXIT, .pid = PID, .tid = 101 };

	builder_fixture_open(&f);
	name.thread.name = "worker";
	builder_fixture_add(&f, &name);
	branch_on(&f, 100, 0, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, nowhere, at("main", 0x10));
	branch_on(&f, 101, 5, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, nowhere, at("work", 0x10));
	branch_on(&f, 100, 100, RV_BRANCH_CALL, 0, at("main", 0x20), at("a", 0));
	branch_on(&f, 100, 100, RV_BRANCH_CALL, 0, at("a", 0x20), at("b", 0));
	branch_on(&f, 101, 110, RV_BRANCH_CALL, 0, at("work", 0x20), at("a", 0));
	branch_on(&f, 101, 120, RV_BRANCH_RETURN, 0, at("a", 0x30), at("work", 0x25));
	branch_on(&f, 100, 200, RV_BRANCH_RETURN, 0, at("b", 0x30), at("a", 0x25));
	branch_on(&f, 101, 130, RV_BRANCH_CALL, 0, at("work", 0x30), at("c", 0));
	branch_on(&f, 100, 210, RV_BRANCH_RETURN, 0, at("a", 0x30), at("main", 0x25));
	exit_ev.time = 140;
	builder_fixture_add(&f, &exit_ev);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, PID, 100, NULL), 3);
	cr_assert_eq(fxt_count_spans(t, PID, 101, NULL), 3);
	cr_assert_eq(fxt_find_span(t, PID, 100, "a", 0)->begin_ns, 100);
	cr_assert_eq(fxt_find_span(t, PID, 100, "b", 0)->begin_ns, 150, "spread to t'=200");
	cr_assert_eq(fxt_find_span(t, PID, 100, "b", 0)->end_ns, 200);
	cr_assert_eq(fxt_find_span(t, PID, 100, "main", 0)->end_ns, 210);
	cr_assert_eq(fxt_find_span(t, PID, 101, "a", 0)->begin_ns, 110);
	cr_assert_eq(fxt_find_span(t, PID, 101, "a", 0)->end_ns, 120);
	cr_assert_eq(fxt_find_span(t, PID, 101, "c", 0)->begin_ns, 130);
	cr_assert_eq(fxt_find_span(t, PID, 101, "c", 0)->end_ns, 140, "ended at the exit");
	cr_assert_eq(fxt_find_span(t, PID, 101, "work", 0)->begin_ns, 5);
	cr_assert_eq(fxt_find_span(t, PID, 101, "work", 0)->end_ns, 140);
	cr_assert_str_eq(fxt_thread_name(t, PID, 101), "worker [100/101]");
	builder_fixture_close(&f, t);
}

Test(builder_branch, unknown_code_from_perf_script_is_one_function)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_branch_end unknown1 = { .ip = 0x7f0000100010, .sym = "[unknown]" };
	struct rv_branch_end unknown2 = { .ip = 0x7f0000200020, .sym = "[unknown]" };

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	call(&f, 10, at("main", 0x20), unknown1);
	jump(&f, 20, unknown1, unknown2);
	branch(&f, 21, RV_BRANCH_COND, 0, unknown2, unknown1);
	call(&f, 30, unknown2, at("foo", 0));
	ret(&f, 40, at("foo", 0x10), unknown2);
	ret(&f, 50, unknown1, at("main", 0x25));
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "[unknown]"), 1);
	expect_span(t, "[unknown]", 0, 10, 50, "main");
	expect_span(t, "foo", 0, 30, 40, "[unknown]");
	builder_fixture_close(&f, t);
}

/* A function's span costs its 24 bytes and its address's 16 (a pointer
 * argument); placeholders have none. */
Test(builder_branch, spans_are_small_with_their_address)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_trace_writer_stats ws;
	uint64_t before;

	builder_fixture_open(&f);
	trace_begin(&f, 0, at("main", 0x10));
	rv_trace_writer_stats(f.w, &ws);
	before = ws.bytes;
	for (uint64_t i = 0; i < 10000; i++) {
		call(&f, 10 + 2 * i, at("main", 0x20), at(i % 2 ? "foo" : "bar", 0));
		ret(&f, 11 + 2 * i, at(i % 2 ? "foo" : "bar", 0x10), at("main", 0x25));
	}
	t = builder_fixture_finish(&f);
	rv_trace_writer_stats(f.w, &ws);
	cr_assert_eq(t->nr_spans, 10001);
	cr_assert_leq((ws.bytes - before) / 10000, 24 + 16, "%llu bytes per call",
		      (unsigned long long)((ws.bytes - before) / 10000));
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *sp = &t->spans[i];

		if (!strcmp(sp->name, "main"))
			continue;
		cr_assert_eq(sp->nr_args, 1, "%s has %zu arguments", sp->name, sp->nr_args);
		cr_assert_str_eq(sp->args[0].name, "address");
		cr_assert_eq(sp->args[0].type, FXT_ARG_POINTER);
		cr_assert_eq(sp->args[0].u, at(sp->name, 0).ip, "%s at %#llx", sp->name,
			     (unsigned long long)sp->args[0].u);
	}
	builder_fixture_close(&f, t);
}

/* ---- through the symbolizer, with a real binary ---- */

struct real_function {
	uint64_t start, size;
};

static struct rv_branch_end in(const struct real_function *fn, uint64_t off)
{
	cr_assert_lt(off, fn->size);
	return (struct rv_branch_end){ .ip = fn->start + off };
}

static void map_ratio(struct builder_fixture *f, struct real_function *main_fn,
		      struct real_function *long_fn, struct real_function *spin_fn)
{
	const char *binary = built_target("ratio");
	const uint64_t base = 0x555555554000ull;

	cr_assert_eq(
		rv_symbolizer_add_mapping(f->sym, PID, base, 0x10000, 0, true, binary, &f->err), 0);
	main_fn->start = base + nm_symbol(binary, "main", &main_fn->size);
	long_fn->start = base + nm_symbol(binary, "work_long", &long_fn->size);
	spin_fn->start = base + nm_symbol(binary, "spin", &spin_fn->size);
}

/* The address and size of ratio's .plt section (which no symbol covers). */
static uint64_t plt_section(struct real_function *plt)
{
	char cmd[512], line[256];
	FILE *p;
	uint64_t addr = 0;

	snprintf(cmd, sizeof(cmd), "readelf -SW %s", build_path("tests/targets/ratio"));
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a, off, size;
		char name[64], type[64];
		const char *rest = strchr(line, ']');

		if (rest &&
		    sscanf(rest + 1, "%63s %63s %llx %llx %llx", name, type, &a, &off, &size) ==
			    5 &&
		    !strcmp(name, ".plt")) {
			addr = a;
			plt->size = size;
		}
	}
	pclose(p);
	cr_assert_neq(addr, 0, "no .plt in ratio");
	return addr;
}

Test(builder_branch, addresses_only_are_named_by_the_symbolizer)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s, plt;
	struct rv_branch_end kernel = { .ip = 0xffffffff81000000ull };
	/* libc's printf, where no mapping covers it */
	struct rv_branch_end printf_fn = { .ip = 0x7f0000010000ull };
	struct rv_branch_end printf_ret = { .ip = 0x7f0000010040ull };
	uint64_t plt_offset;
	char plt_name[64];

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	/* the second PLT entry (the first is the resolver's); the mapping
	 * starts at the file's offset 0, so the offset is the address's */
	plt_offset = plt_section(&plt) + 0x10;
	plt.start = 0x555555554000ull + plt_offset - 0x10;
	snprintf(plt_name, sizeof(plt_name), "ratio+0x%llx", (unsigned long long)plt_offset);
	trace_begin(&f, 0, in(&m, 4));
	call(&f, 10, in(&m, 8), in(&l, 0));
	call(&f, 20, in(&l, 4), in(&s, 0));
	branch(&f, 25, RV_BRANCH_COND, 0, in(&s, 8), in(&s, 4));
	ret(&f, 30, in(&s, s.size - 1), in(&l, 9));
	/* an untraced syscall, and a kernel address without kallsyms */
	branch(&f, 35, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, in(&l, 10), nowhere);
	trace_begin(&f, 36, in(&l, 10));
	branch(&f, 37, RV_BRANCH_SYSCALL, 0, in(&l, 10), kernel);
	branch(&f, 38, RV_BRANCH_SYSRET, 0, kernel, in(&l, 12));
	ret(&f, 40, in(&l, 12), in(&m, 12));
	/* a call through the PLT into a library nothing maps: all unknown
	 * code is one function, which keeps the name it was entered by */
	call(&f, 50, in(&m, 16), in(&plt, 0x10));
	jump(&f, 60, in(&plt, 0x16), printf_fn);
	ret(&f, 70, printf_ret, in(&m, 20));
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 70, NULL);
	expect_span(t, "work_long", 0, 10, 40, "main");
	expect_span(t, "spin", 0, 20, 30, "work_long");
	expect_span(t, "[syscall]", 0, 35, 36, "work_long");
	/* a kernel address without kallsyms is named by the address */
	expect_span(t, "0xffffffff81000000", 0, 37, 38, "work_long");
	expect_span(t, plt_name, 0, 50, 70, "main");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "0x7f0000010000"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "[unknown]"), 0);
	cr_assert_eq(t->nr_spans, 6);
	builder_fixture_close(&f, t);
}

/* The line of the opening brace of the definition whose signature line holds
 * `signature`, in tests/targets/SOURCE. */
static int brace_line(const char *source, const char *signature)
{
	char path[256], line[512];
	int n = 0, at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "tests/targets/%s", source);
	f = fopen(path, "r");
	cr_assert(f, "cannot read %s (run the tests from the repository root)", path);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (at) {
			cr_assert_eq(line[0], '{', "%s:%d is not the brace", path, n);
			break;
		}
		if (strstr(line, signature) && !strchr(line, ';'))
			at = n;
	}
	fclose(f);
	cr_assert(at, "no %s in %s", signature, path);
	return n;
}

static void expect_source(const struct fxt_span *sp, uint64_t addr, const char *signature)
{
	const struct fxt_arg *a = fxt_find_arg(sp->args, sp->nr_args, "address");
	const struct fxt_arg *file = fxt_find_arg(sp->args, sp->nr_args, "file");
	const struct fxt_arg *line = fxt_find_arg(sp->args, sp->nr_args, "line");
	size_t len;

	cr_assert(a && a->type == FXT_ARG_POINTER, "%s has no address", sp->name);
	cr_assert_eq(a->u, addr, "%s at %#llx, not %#llx", sp->name, (unsigned long long)a->u,
		     (unsigned long long)addr);
	cr_assert(file && file->type == FXT_ARG_STRING, "%s has no file", sp->name);
	len = strlen(file->s);
	cr_assert(len >= 7 && !strcmp(file->s + len - 7, "ratio.c"), "%s is in %s", sp->name,
		  file->s);
	cr_assert(line && line->type == FXT_ARG_INT32, "%s has no line", sp->name);
	cr_assert_eq(line->i, brace_line("ratio.c", signature), "%s at line %lld", sp->name,
		     (long long)line->i);
}

/* PT's function spans show the function's address and, from the binary's
 * DWARF, its file and the line of its opening brace; a placeholder shows
 * nothing. */
Test(builder_branch, function_spans_show_their_address_and_source_line)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	trace_begin(&f, 0, in(&m, 4));
	call(&f, 10, in(&m, 8), in(&l, 0));
	call(&f, 20, in(&l, 4), in(&s, 0));
	ret(&f, 30, in(&s, s.size - 1), in(&l, 9));
	branch(&f, 35, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END, in(&l, 10), nowhere);
	trace_begin(&f, 36, in(&l, 10));
	ret(&f, 40, in(&l, 12), in(&m, 12));
	t = builder_fixture_finish(&f);
	expect_source(trace_span(t, "work_long", 0), l.start, "void work_long(");
	expect_source(trace_span(t, "spin", 0), s.start, "static void spin(");
	expect_source(trace_span(t, "main", 0), m.start, "int main(");
	cr_assert_eq(trace_span(t, "[syscall]", 0)->nr_args, 0, "a placeholder shows nothing");
	builder_fixture_close(&f, t);
}

/* A function of known size is [start, start + size): a return or a jump to
 * the byte after its last leaves it. In ratio, main is followed by _fini
 * (no size): a return to there replaces main with it (land's way), and a
 * jump there is a tail call. Events at 30 end the traces later. */
Test(builder_branch, the_byte_after_a_function_is_not_in_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;
	struct rv_branch_end after;

	for (int jumps = 0; jumps < 2; jumps++) {
		builder_fixture_open(&f);
		map_ratio(&f, &m, &l, &s);
		after = (struct rv_branch_end){ .ip = m.start + m.size };
		trace_begin(&f, 0, in(&m, 4));
		call(&f, 10, in(&m, 8), in(&l, 0));
		if (jumps) {
			ret(&f, 15, in(&l, 9), in(&m, 12));
			jump(&f, 20, in(&m, 16), after);
		} else {
			ret(&f, 20, in(&l, 9), after);
		}
		jump(&f, 30, in(&m, 20), in(&m, 24));
		t = builder_fixture_finish(&f);
		for (size_t i = 0; i < t->nr_spans; i++) {
			if (!strcmp(t->spans[i].name, "main") && !t->spans[i].begin_ns)
				cr_assert_eq(t->spans[i].end_ns, 20, "%s: main ends at %llu",
					     jumps ? "a jump" : "a return",
					     (unsigned long long)t->spans[i].end_ns);
		}
		cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "_fini"), 1, "%s",
			     jumps ? "a jump" : "a return");
		builder_fixture_close(&f, t);
	}
}

/* Many functions, each called with its own self time: every one gets its
 * own, however the builder remembers where each one's total is. */
Test(builder_branch, each_of_many_functions_keeps_its_own_self_time)
{
	enum { N = 1000 };
	struct builder_fixture f;
	struct fxt_trace *t;
	static char names[N][16];
	static struct rv_top_function top[N + 8];
	uint64_t time = 0;
	size_t n, seen = 0;

	builder_fixture_open(&f);
	trace_begin(&f, time, at("main", 0x10));
	/* twice: the second round after the table of totals has grown */
	for (size_t i = 0; i < 2 * N; i++) {
		size_t j = i % N;
		struct rv_branch_end fn = { .ip = 0x500000 + j * 0x100,
					    .sym = names[j],
					    .sym_start = 0x500000 + j * 0x100 };
		struct rv_branch_end back = fn;

		snprintf(names[j], sizeof(names[j]), "f%zu", j);
		back.ip += 0x10;
		call(&f, time += 10, at("main", 0x20), fn);
		ret(&f, time += 1 + j, back, at("main", 0x25));
	}
	t = builder_fixture_finish(&f);
	n = rv_builder_top_functions(f.b, top, N + 8);
	for (size_t i = 0; i < n; i++) {
		unsigned long k;

		if (sscanf(top[i].name, "f%lu", &k) != 1)
			continue;
		cr_assert_eq(top[i].self_ns, 2 * (1 + k), "%s ran %llu ns on its own, not %lu",
			     top[i].name, (unsigned long long)top[i].self_ns, 2 * (1 + k));
		seen++;
	}
	cr_assert_eq(seen, N);
	builder_fixture_close(&f, t);
}

/* Functions the symbolizer names, called again in later calls of the
 * builder: each keeps its own self time, however the builder remembers
 * where each one's total is (a frame of the hot path takes it from its
 * function's cache entry, filled again at each call). */
Test(builder_branch, functions_called_again_keep_their_own_self_time)
{
	enum { ROUNDS = 4 };
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;
	uint64_t time = 0, main_ns, long_ns, spin_ns;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	trace_begin(&f, time, in(&m, 4));
	for (int i = 0; i < ROUNDS; i++) {
		call(&f, time += 10, in(&m, 8), in(&l, 0));
		call(&f, time += 2, in(&l, 4), in(&s, 0));
		ret(&f, time += 3, in(&s, 4), in(&l, 8));
		ret(&f, time += 4, in(&l, 9), in(&m, 12));
	}
	t = builder_fixture_finish(&f);
	main_ns = builder_fixture_self_ns(&f, "main");
	long_ns = builder_fixture_self_ns(&f, "work_long");
	spin_ns = builder_fixture_self_ns(&f, "spin");
	cr_assert_eq(main_ns, 10 * ROUNDS, "main ran %llu ns on its own",
		     (unsigned long long)main_ns);
	cr_assert_eq(long_ns, (2 + 4) * ROUNDS, "work_long ran %llu ns on its own",
		     (unsigned long long)long_ns);
	cr_assert_eq(spin_ns, 3 * ROUNDS, "spin ran %llu ns on its own",
		     (unsigned long long)spin_ns);
	builder_fixture_close(&f, t);
}

/* Calls the symbolizer names that wait in a batch behind its first event
 * are taken when they come, before their time is known (branches.c's
 * early calls), and get it when the batch is flushed: their spans and
 * self times are those of calls taken at their share of the batch, the
 * recursion's too, and so is what comes after them in the batch. Fails
 * when an early frame's begin, or the self time of the frame below it,
 * is not its share's. */
Test(builder_branch, calls_named_by_the_symbolizer_in_a_batch_take_their_share_of_its_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	trace_begin(&f, 0, in(&m, 4));
	/* four events at 1000, the next time 1400: 100 ns each */
	call(&f, 1000, in(&m, 8), in(&l, 0));
	call(&f, 1000, in(&l, 4), in(&s, 0));
	call(&f, 1000, in(&s, 4), in(&s, 0));
	ret(&f, 1000, in(&s, 8), in(&s, 6));
	ret(&f, 1400, in(&s, 8), in(&l, 8));
	ret(&f, 1500, in(&l, 9), in(&m, 12));
	t = builder_fixture_finish(&f);
	expect_span(t, "work_long", 0, 1000, 1500, "main");
	expect_span(t, "spin", 0, 1200, 1300, "spin");
	expect_span(t, "spin", 1, 1100, 1400, "work_long");
	cr_assert_eq(builder_fixture_self_ns(&f, "main"), 1000);
	cr_assert_eq(builder_fixture_self_ns(&f, "work_long"), 100 + 100);
	cr_assert_eq(builder_fixture_self_ns(&f, "spin"), 100 + 100 + 100);
	builder_fixture_close(&f, t);
}

/* The same calls with a trace error at their stamp: each function entered
 * there keeps 1 ns (flush_batch_at_stamp), the early calls too, and the
 * error follows them. */
Test(builder_branch, calls_named_by_the_symbolizer_at_an_errors_stamp_keep_a_length)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;
	const struct fxt_instant *marker;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	trace_begin(&f, 0, in(&m, 4));
	call(&f, 1000, in(&m, 8), in(&l, 0));
	call(&f, 1000, in(&l, 4), in(&s, 0));
	call(&f, 1000, in(&s, 4), in(&s, 0));
	trace_error(&f, 1000, "no memory mapped at 0x1234", false);
	t = builder_fixture_finish(&f);
	marker = fxt_find_instant(t, FXT_ANY, FXT_ANY, "[decode error: no memory mapped at 0x1234]",
				  0);
	cr_assert(marker);
	cr_assert_eq(marker->ts_ns, 1003, "the error at %llu, not at 1003",
		     (unsigned long long)marker->ts_ns);
	expect_span(t, "spin", 0, 1002, 1003, "spin");
	expect_span(t, "spin", 1, 1001, 1003, "work_long");
	expect_span(t, "work_long", 0, 1000, 1003, "main");
	cr_assert_eq(builder_fixture_self_ns(&f, "work_long"), 1);
	cr_assert_eq(builder_fixture_self_ns(&f, "spin"), 1 + 1);
	builder_fixture_close(&f, t);
}

/* The builder keeps the symbolizer's answers only for the call it is in
 * (builder.h): code mapped between two calls is named by its mapping
 * from the next call on, and its span shows its source. */
Test(builder_branch, code_mapped_between_calls_of_the_builder_is_named_from_then_on)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const char *binary;
	const uint64_t base = 0x555555554000ull;
	struct real_function m, l;
	char unmapped[32], caller[32];

	builder_fixture_open(&f);
	binary = built_target("ratio");
	m.start = base + nm_symbol(binary, "main", &m.size);
	l.start = base + nm_symbol(binary, "work_long", &l.size);
	snprintf(unmapped, sizeof(unmapped), "0x%llx", (unsigned long long)l.start);
	/* unknown code is named by where it was entered */
	snprintf(caller, sizeof(caller), "0x%llx", (unsigned long long)m.start + 4);
	trace_begin(&f, 0, in(&m, 4));
	call(&f, 10, in(&m, 8), in(&l, 0));
	ret(&f, 20, in(&l, 9), in(&m, 12));
	cr_assert_eq(rv_symbolizer_add_mapping(f.sym, PID, base, 0x10000, 0, true, binary, &f.err),
		     0);
	call(&f, 30, in(&m, 8), in(&l, 0));
	ret(&f, 40, in(&l, 9), in(&m, 12));
	t = builder_fixture_finish(&f);
	expect_span(t, unmapped, 0, 10, 20, caller);
	expect_span(t, "work_long", 0, 30, 40, caller);
	expect_source(trace_span(t, "work_long", 0), l.start, "void work_long(");
	builder_fixture_close(&f, t);
}

/* Two processes with the same addresses, mapped differently, in one batch:
 * each is named by its own mappings. */
Test(builder_branch, one_batch_names_each_process_by_its_own_mappings)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;
	struct rv_event evs[6];
	char unmapped[32];
	const uint32_t other = PID + 1;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	snprintf(unmapped, sizeof(unmapped), "0x%llx", (unsigned long long)l.start);
	for (size_t i = 0; i < 6; i++) {
		uint32_t pid = i % 2 ? other : PID;

		evs[i] = (struct rv_event){
			.kind = RV_EVENT_BRANCH, .pid = pid, .tid = pid, .time = 10 * i
		};
		switch (i / 2) {
		case 0:
			evs[i].branch.kind = RV_BRANCH_NONE;
			evs[i].branch.flags = RV_BRANCH_TRACE_BEGIN;
			evs[i].branch.to = in(&m, 4);
			break;
		case 1:
			evs[i].branch.kind = RV_BRANCH_CALL;
			evs[i].branch.from = in(&m, 8);
			evs[i].branch.to = in(&l, 0);
			break;
		default:
			evs[i].branch.kind = RV_BRANCH_RETURN;
			evs[i].branch.from = in(&l, 9);
			evs[i].branch.to = in(&m, 12);
			break;
		}
	}
	cr_assert_eq(rv_builder_add_batch(f.b, evs, 6, &f.err), 0, "%s", f.err.message);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work_long"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, unmapped), 1);
	cr_assert_eq(trace_span(t, "work_long", 0)->pid, PID);
	expect_source(trace_span(t, "work_long", 0), l.start, "void work_long(");
	builder_fixture_close(&f, t);
}

/* work_long and spin mapped (from two mappings of ratio) where their starts
 * share a slot of the builder's cache of functions (builder_internal.h),
 * and called in turn in one batch: each call's span shows its own
 * function's address and source, whatever the slot held before. */
Test(builder_branch, functions_sharing_a_cache_slot_show_their_own_source)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const char *binary;
	const uint64_t base = 0x555555554000ull;
	uint64_t other = base + 0x100000, s_off;
	struct real_function m, l, s;
	struct rv_event evs[9];
	size_t n = 0;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	binary = built_target("ratio");
	s_off = s.start - base;
	while (builder_cache_slot(other + s_off) != builder_cache_slot(l.start))
		other += 0x10000;
	s.start = other + s_off;
	cr_assert_eq(rv_symbolizer_add_mapping(f.sym, PID, other, 0x10000, 0, true, binary, &f.err),
		     0);
	evs[n++] = (struct rv_event){ .kind = RV_EVENT_BRANCH,
				      .branch = { .kind = RV_BRANCH_NONE,
						  .flags = RV_BRANCH_TRACE_BEGIN,
						  .to = in(&m, 4) } };
	for (size_t i = 0; i < 4; i++) {
		const struct real_function *fn = i % 2 ? &s : &l;

		evs[n++] = (struct rv_event){
			.kind = RV_EVENT_BRANCH,
			.branch = { .kind = RV_BRANCH_CALL, .from = in(&m, 8), .to = in(fn, 0) }
		};
		evs[n++] = (struct rv_event){
			.kind = RV_EVENT_BRANCH,
			.branch = { .kind = RV_BRANCH_RETURN, .from = in(fn, 2), .to = in(&m, 12) }
		};
	}
	for (size_t i = 0; i < n; i++) {
		evs[i].pid = evs[i].tid = PID;
		evs[i].time = 10 * i;
	}
	cr_assert_eq(rv_builder_add_batch(f.b, evs, n, &f.err), 0, "%s", f.err.message);
	t = builder_fixture_finish(&f);
	for (size_t i = 0; i < 2; i++) {
		expect_source(trace_span(t, "work_long", i), l.start, "void work_long(");
		expect_source(trace_span(t, "spin", i), s.start, "static void spin(");
	}
	builder_fixture_close(&f, t);
}

Test(builder_branch, a_million_jumps_inside_a_function_make_no_span_and_no_lookup)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct real_function m, l, s;
	struct rv_symbolizer_stats before, after;
	struct rv_builder_stats stats;

	builder_fixture_open(&f);
	map_ratio(&f, &m, &l, &s);
	trace_begin(&f, 0, in(&m, 4));
	call(&f, 10, in(&m, 8), in(&l, 0));
	call(&f, 20, in(&l, 4), in(&s, 0));
	jump(&f, 99, in(&s, 8), in(&s, 4)); /* the calls are handled now */
	rv_symbolizer_stats(f.sym, &before);
	for (uint64_t i = 0; i < 1000000; i++)
		branch(&f, 100 + i / 8, i % 3 ? RV_BRANCH_COND : RV_BRANCH_JUMP, 0,
		       in(&s, 8 + i % 5), in(&s, 4 + i % 7));
	rv_symbolizer_stats(f.sym, &after);
	ret(&f, 200000, in(&s, s.size - 1), in(&l, 9));
	ret(&f, 200010, in(&l, 12), in(&m, 12));
	t = builder_fixture_finish(&f);
	rv_builder_stats(f.b, &stats);
	cr_assert_eq(t->nr_spans, 3);
	expect_span(t, "spin", 0, 20, 200000, "work_long");
	cr_assert_eq(after.lookups, before.lookups,
		     "a jump inside the top's function looks nothing up");
	cr_assert_eq(stats.branches, 1000006);
	builder_fixture_close(&f, t);
}

/* ---- untraced system calls named by their number ---- */

/* Maps the running libc's code for PID as this process maps it, and
 * returns the address of its function `name` (libc's own, asked of libc:
 * under AddressSanitizer the process's `read` is the sanitizer's). */
static uint64_t map_libc_function(struct builder_fixture *f, const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn = libc ? dlsym(libc, name) : NULL;
	Dl_info info;
	char line[1024];
	FILE *maps;
	size_t mapped = 0;
	char *file;

	cr_assert_not_null(fn, "no %s in this process's libc", name);

	cr_assert(dladdr(fn, &info) && info.dli_fname, "no file for %s", name);
	/* maps names the file by its real path (/usr/lib for /lib) */
	file = realpath(info.dli_fname, NULL);
	cr_assert_not_null(file, "%s: %s", info.dli_fname, strerror(errno));
	maps = fopen("/proc/self/maps", "r");
	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, pgoff;
		char perms[8], path[512] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &start, &end, perms, &pgoff,
			   path) < 4 ||
		    perms[2] != 'x' || strcmp(path, file))
			continue;
		cr_assert_eq(rv_symbolizer_add_mapping(f->sym, PID, start, end - start, pgoff, true,
						       path, &f->err),
			     0);
		mapped++;
	}
	fclose(maps);
	cr_assert_gt(mapped, 0, "%s is not mapped executable", file);
	free(file);
	dlclose(libc);
	return (uint64_t)(uintptr_t)fn;
}

/* The address of the first `syscall` instruction of the function at fn,
 * decoded from this process's memory. */
static uint64_t first_syscall(uint64_t fn)
{
	ZydisDecoder decoder;
	ZydisDecodedInstruction insn;
	const uint8_t *code = (const uint8_t *)(uintptr_t)fn;

	cr_assert(ZYAN_SUCCESS(
		ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)));
	for (size_t at = 0; at < 256; at += insn.length) {
		cr_assert(ZYAN_SUCCESS(
			ZydisDecoderDecodeInstruction(&decoder, NULL, code + at, 15, &insn)));
		if (insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL)
			return fn + at;
	}
	cr_assert_fail("no syscall in the first 256 bytes of the function at %#llx",
		       (unsigned long long)fn);
	return 0;
}

/* The symbolizer's name of the function at fn (libc's own, "read" or an
 * alias). */
static const char *function_name(struct builder_fixture *f, uint64_t fn)
{
	struct rv_symbol sym;

	rv_symbolizer_lookup(f->sym, PID, fn, &sym);
	cr_assert(sym.known, "no symbol at %#llx", (unsigned long long)fn);
	return sym.name;
}

/* main calls fn, whose first syscall runs untraced from time + 2 to
 * time + 12, and fn returns. */
static void untraced_syscall(struct builder_fixture *f, uint64_t time, uint64_t fn)
{
	uint64_t ip = first_syscall(fn);

	call(f, time, at("main", 0x20), (struct rv_branch_end){ .ip = fn });
	branch(f, time + 2, RV_BRANCH_SYSCALL, RV_BRANCH_TRACE_END,
	       (struct rv_branch_end){ .ip = ip }, nowhere);
	trace_begin(f, time + 12, (struct rv_branch_end){ .ip = ip + 2 });
	ret(f, time + 15, (struct rv_branch_end){ .ip = ip + 2 }, at("main", 0x25));
}

/* libc's own wrappers, as the running system has them: read (xor eax,
 * eax), write and getpid (mov eax, imm), and syscall(), whose number comes
 * from its argument and is not known. */
Test(builder_branch, untraced_syscalls_of_libc_are_named_by_their_number)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	uint64_t read_fn, write_fn, getpid_fn, syscall_fn;

	builder_fixture_open(&f);
	read_fn = map_libc_function(&f, "read");
	write_fn = map_libc_function(&f, "write");
	getpid_fn = map_libc_function(&f, "getpid");
	syscall_fn = map_libc_function(&f, "syscall");
	trace_begin(&f, 0, at("main", 0x10));
	untraced_syscall(&f, 10, read_fn);
	untraced_syscall(&f, 30, read_fn);
	untraced_syscall(&f, 50, write_fn);
	untraced_syscall(&f, 70, getpid_fn);
	untraced_syscall(&f, 90, syscall_fn);
	t = builder_fixture_finish(&f);
	expect_span(t, "[syscall read]", 0, 12, 22, function_name(&f, read_fn));
	expect_span(t, "[syscall read]", 1, 32, 42, function_name(&f, read_fn));
	expect_span(t, "[syscall write]", 0, 52, 62, function_name(&f, write_fn));
	expect_span(t, "[syscall getpid]", 0, 72, 82, function_name(&f, getpid_fn));
	expect_span(t, "[syscall]", 0, 92, 102, function_name(&f, syscall_fn));
	expect_category(t, "[syscall read]", "kernel");
	expect_category(t, "[syscall]", "kernel");
	builder_fixture_close(&f, t);
}

/* The events a_batch_is_taken_as_its_events_one_by_one feeds: runs of one
 * thread's branches broken by another thread's, by a branch with perf
 * script's names (whose call stays open to the end: its name must be the
 * builder's copy) and by a trace error; events sharing a time, and the
 * first event setting the base. */
static size_t mixed_events(struct rv_event *evs, const struct real_function *m,
			   const struct real_function *l, const struct real_function *s,
			   const char *caller, const char *callee)
{
	const uint32_t other = TID + 1;
	size_t n = 0;

#define ADD(tid_, time_, kind_, flags_, from_, to_)                                                \
	evs[n++] = (struct rv_event)                                                               \
	{                                                                                          \
		.kind = RV_EVENT_BRANCH, .pid = PID, .tid = (tid_), .time = (time_), .branch = {   \
			.kind = (kind_),                                                           \
			.flags = (flags_),                                                         \
			.from = (from_),                                                           \
			.to = (to_)                                                                \
		}                                                                                  \
	}
	const struct rv_branch_end none = { 0 };

	ADD(TID, 100, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, none, in(m, 4));
	ADD(TID, 100, RV_BRANCH_CALL, 0, in(m, 8), in(l, 0));
	ADD(TID, 100, RV_BRANCH_JUMP, 0, in(l, 2), in(l, 5));
	ADD(other, 110, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, none, in(m, 4));
	ADD(other, 110, RV_BRANCH_CALL, 0, in(m, 8), in(s, 0));
	ADD(TID, 120, RV_BRANCH_RETURN, 0, in(l, 9), in(m, 12));
	ADD(TID, 120, RV_BRANCH_CALL, 0, in(m, 16), in(l, 0));
	evs[n - 1].branch.from.sym = caller;
	evs[n - 1].branch.to.sym = callee;
	evs[n - 1].branch.to.sym_start = l->start;
	ADD(TID, 120, RV_BRANCH_JUMP, 0, in(l, 2), in(l, 5));
	evs[n++] = (struct rv_event){ .kind = RV_EVENT_TRACE_ERROR,
				      .pid = PID,
				      .tid = other,
				      .time = 130,
				      .error = { .message = "lost", .offset = UINT64_MAX } };
	ADD(other, 140, RV_BRANCH_NONE, RV_BRANCH_TRACE_BEGIN, none, in(s, 3));
	ADD(other, 140, RV_BRANCH_RETURN, 0, in(s, 6), in(m, 12));
	ADD(TID, 150, RV_BRANCH_CALL, 0, in(l, 7), in(s, 0));
	ADD(TID, 150, RV_BRANCH_RETURN, 0, in(s, 6), in(l, 9));
	ADD(TID, 160, RV_BRANCH_JUMP, 0, in(l, 9), in(l, 2));
#undef ADD
	return n;
}

/* The file a fixture's trace was written to, whole (freed by the caller). */
static char *trace_bytes(const struct builder_fixture *f, size_t *size)
{
	FILE *fp = fopen(f->path, "rb");
	char *buf;
	long len;

	cr_assert(fp, "%s", f->path);
	cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	cr_assert_gt(len, 0);
	rewind(fp);
	buf = malloc((size_t)len);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)len, fp), (size_t)len);
	fclose(fp);
	*size = (size_t)len;
	return buf;
}

/* rv_builder_add_batch is rv_builder_add of each event in turn (builder.h):
 * the same trace, to the byte, through the runs of plain branches it takes
 * in one call (builder_add_branch_run) and the events it cannot. */
Test(builder_branch, a_batch_is_taken_as_its_events_one_by_one)
{
	struct builder_fixture one, all;
	struct fxt_trace *t_one, *t_all;
	struct real_function m, l, s;
	struct rv_event evs[32];
	char caller[2][16] = { "caller", "caller" }, callee[2][16] = { "callee", "callee" };
	char *bytes_one, *bytes_all;
	size_t n, size_one, size_all;

	builder_fixture_open(&one);
	builder_fixture_open(&all);
	map_ratio(&one, &m, &l, &s);
	map_ratio(&all, &m, &l, &s);
	n = mixed_events(evs, &m, &l, &s, caller[0], callee[0]);
	for (size_t i = 0; i < n; i++)
		builder_fixture_add(&one, &evs[i]);
	mixed_events(evs, &m, &l, &s, caller[1], callee[1]);
	cr_assert_eq(rv_builder_add_batch(all.b, evs, n, &all.err), 0, "%s", all.err.message);
	/* the caller's text is its own again once the call returns */
	strcpy(caller[0], "reused");
	strcpy(callee[0], "reused");
	strcpy(caller[1], "reused");
	strcpy(callee[1], "reused");
	t_one = builder_fixture_finish(&one);
	t_all = builder_fixture_finish(&all);
	cr_assert_eq(fxt_count_spans(t_one, FXT_ANY, FXT_ANY, "callee"), 1);
	cr_assert_gt(fxt_count_spans(t_one, FXT_ANY, FXT_ANY, "work_long"), 0);
	cr_assert_gt(fxt_count_spans(t_one, FXT_ANY, FXT_ANY, "spin"), 0);
	cr_assert_eq(t_one->nr_threads, 2);
	bytes_one = trace_bytes(&one, &size_one);
	bytes_all = trace_bytes(&all, &size_all);
	cr_assert_eq(size_all, size_one);
	cr_assert(!memcmp(bytes_all, bytes_one, size_one), "the batch's trace differs");
	free(bytes_one);
	free(bytes_all);
	builder_fixture_close(&one, t_one);
	builder_fixture_close(&all, t_all);
}
