/* test_builder_calls.c: exact calls (the uprobe engine's entries and exits)
 * and kernel spans into spans, written and read back with the strict FXT
 * reader, which also checks that every thread's spans nest.
 *
 * Functions are named by the events' sym, so that these tests are about the
 * builder's stack rules alone. Stack pointers follow x86-64: an exit's sp is
 * its function's entry sp + 8. Times start at 1000 (the trace's zero). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder_fixture.h"

#define PID 100

/* A function's entry address: its name's first bytes, so that each name has
 * its own. */
static uint64_t addr_of(const char *name)
{
	uint64_t a = 0x400000;

	for (const char *p = name; *p; p++)
		a = a * 31 + (unsigned char)*p;
	return a & 0xffffffffffull;
}

static void enter(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *fn,
		  uint64_t sp)
{
	struct rv_event ev = { .kind = RV_EVENT_CALL_ENTER, .pid = PID, .tid = tid, .time = time };

	ev.call.addr = addr_of(fn);
	ev.call.sym = fn;
	ev.call.sp = sp;
	builder_fixture_add(f, &ev);
}

/* The exit of fn entered at entry_sp (0: sp unknown). */
static void leave(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *fn,
		  uint64_t entry_sp)
{
	struct rv_event ev = { .kind = RV_EVENT_CALL_EXIT, .pid = PID, .tid = tid, .time = time };

	ev.call.addr = addr_of(fn);
	ev.call.sym = fn;
	ev.call.sp = entry_sp ? entry_sp + 8 : 0;
	builder_fixture_add(f, &ev);
}

static void kernel(struct builder_fixture *f, uint32_t tid, uint64_t time, bool begin,
		   enum rv_kernel_kind kind, const char *name, const struct rv_event_arg *args,
		   size_t nr_args)
{
	struct rv_event ev = { .kind = begin ? RV_EVENT_KERNEL_BEGIN : RV_EVENT_KERNEL_END,
			       .pid = PID,
			       .tid = tid,
			       .time = time };

	ev.kernel.kind = kind;
	ev.kernel.name = name;
	ev.kernel.args = args;
	ev.kernel.nr_args = nr_args;
	builder_fixture_add(f, &ev);
}

static const struct rv_event_arg *syscall_args(uint64_t nr, int64_t ret)
{
	static struct rv_event_arg args[2];

	args[0] = (struct rv_event_arg){ "nr", RV_EVENT_ARG_UINT, nr };
	args[1] = (struct rv_event_arg){ "ret", RV_EVENT_ARG_INT, (uint64_t)ret };
	return args;
}

static void syscall_begin(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *name,
			  uint64_t nr)
{
	kernel(f, tid, time, true, RV_KERNEL_SYSCALL, name, syscall_args(nr, 0), 1);
}

static void syscall_end(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *name,
			uint64_t nr, int64_t ret)
{
	kernel(f, tid, time, false, RV_KERNEL_SYSCALL, name, syscall_args(nr, ret), 2);
}

static void thread_exit(struct builder_fixture *f, uint32_t tid, uint64_t time)
{
	struct rv_event ev = { .kind = RV_EVENT_THREAD_EXIT, .pid = PID, .tid = tid, .time = time };

	builder_fixture_add(f, &ev);
}

static bool inferred(const struct fxt_span *s)
{
	const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, "inferred_start_time");

	return a && a->type == FXT_ARG_STRING && !strcmp(a->s, "true");
}

Test(builder_calls, calls_nest_by_entry_and_exit)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "a", 900);
	enter(&f, 100, 1020, "b", 800);
	leave(&f, 100, 1030, "b", 800);
	enter(&f, 100, 1040, "c", 800);
	leave(&f, 100, 1050, "c", 800);
	leave(&f, 100, 1060, "a", 900);
	leave(&f, 100, 1100, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.calls, 4);
	cr_assert_eq(bs.returns, 4);
	cr_assert_eq(bs.unwinds, 0);
	cr_assert_eq(bs.inferred, 0);
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 4);
	expect_span(t, "main", 0, 0, 100, NULL);
	expect_span(t, "a", 0, 10, 60, "main");
	expect_span(t, "b", 0, 20, 30, "a");
	expect_span(t, "c", 0, 40, 50, "a");
	cr_assert_not(inferred(trace_span(t, "main", 0)));
	{
		const struct fxt_span *m = trace_span(t, "main", 0);

		/* its entry (no mapping here, so no source line) */
		cr_assert_eq(m->nr_args, 1, "a call's span has its address alone");
		cr_assert_str_eq(m->args[0].name, "address");
		cr_assert_eq(m->args[0].type, FXT_ARG_POINTER);
		cr_assert_eq(m->args[0].u, addr_of("main"));
	}
	builder_fixture_close(&f, t);
}

Test(builder_calls, recursion_ends_by_stack_pointer)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "fib", 900);
	enter(&f, 100, 1020, "fib", 850);
	enter(&f, 100, 1030, "fib", 800);
	leave(&f, 100, 1040, "fib", 800);
	enter(&f, 100, 1050, "fib", 800);
	leave(&f, 100, 1060, "fib", 800);
	leave(&f, 100, 1070, "fib", 850);
	leave(&f, 100, 1080, "fib", 900);
	leave(&f, 100, 1090, "main", 1000);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fib"), 4);
	expect_span(t, "fib", 0, 30, 40, "fib");
	expect_span(t, "fib", 1, 50, 60, "fib");
	expect_span(t, "fib", 2, 20, 70, "fib");
	expect_span(t, "fib", 3, 10, 80, "main");
	builder_fixture_close(&f, t);
}

/* f calls setjmp, then a -> b -> c; c longjmps back into f, and f returns:
 * its exit ends the three frames the longjmp skipped, with f. */
Test(builder_calls, one_exit_ends_the_frames_a_longjmp_skipped)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1100);
	enter(&f, 100, 1010, "f", 1000);
	enter(&f, 100, 1020, "a", 990);
	enter(&f, 100, 1030, "b", 980);
	enter(&f, 100, 1040, "c", 970);
	leave(&f, 100, 1050, "f", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.unwinds, 3);
	leave(&f, 100, 1060, "main", 1100);
	t = builder_fixture_finish(&f);
	expect_span(t, "f", 0, 10, 50, "main");
	expect_span(t, "a", 0, 20, 50, "f");
	expect_span(t, "b", 0, 30, 50, "a");
	expect_span(t, "c", 0, 40, 50, "b");
	expect_span(t, "main", 0, 0, 60, NULL);
	builder_fixture_close(&f, t);
}

/* After the longjmp into f, f calls d at a's level: the skipped frames (a
 * too, whose place d takes) end when d is entered. */
Test(builder_calls, a_call_after_a_longjmp_ends_the_skipped_frames)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1100);
	enter(&f, 100, 1010, "f", 1000);
	enter(&f, 100, 1020, "a", 990);
	enter(&f, 100, 1030, "b", 980);
	enter(&f, 100, 1040, "c", 970);
	enter(&f, 100, 1050, "d", 990);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.unwinds, 3);
	leave(&f, 100, 1060, "d", 990);
	leave(&f, 100, 1070, "f", 1000);
	leave(&f, 100, 1080, "main", 1100);
	t = builder_fixture_finish(&f);
	expect_span(t, "a", 0, 20, 50, "f");
	expect_span(t, "c", 0, 40, 50, "b");
	expect_span(t, "d", 0, 50, 60, "f");
	expect_span(t, "f", 0, 10, 70, "main");
	builder_fixture_close(&f, t);
}

/* a tail-calls t (jmp: the same entry sp); the kernel's chained uretprobes
 * give t's exit, then a's, with the same sp. */
Test(builder_calls, a_tail_call_keeps_its_caller_until_both_exits)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "a", 900);
	enter(&f, 100, 1020, "tail", 900);
	leave(&f, 100, 1030, "tail", 900);
	leave(&f, 100, 1031, "a", 900);
	leave(&f, 100, 1040, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.inferred, 0);
	cr_assert_eq(bs.unwinds, 0);
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 3);
	expect_span(t, "a", 0, 10, 31, "main");
	expect_span(t, "tail", 0, 20, 30, "a");
	builder_fixture_close(&f, t);
}

/* An entry of a function whose exits are probed at its return sites. */
static void enter_sites(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *fn,
			uint64_t sp)
{
	struct rv_event ev = { .kind = RV_EVENT_CALL_ENTER, .pid = PID, .tid = tid, .time = time };

	ev.call.addr = addr_of(fn);
	ev.call.sym = fn;
	ev.call.sp = sp;
	ev.call.exits_at_sites = true;
	builder_fixture_add(f, &ev);
}

/* Return-site probes: a direct tail call gives the caller's exit at the
 * jump, then the callee's entry at the same sp, its sibling. */
Test(builder_calls, a_tail_call_at_return_sites_ends_its_caller_at_the_jump)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter_sites(&f, 100, 1000, "main", 1000);
	enter_sites(&f, 100, 1010, "a", 900);
	leave(&f, 100, 1020, "a", 900);
	enter_sites(&f, 100, 1020, "tail", 900);
	leave(&f, 100, 1030, "tail", 900);
	leave(&f, 100, 1040, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.inferred, 0);
	cr_assert_eq(bs.unwinds, 0);
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 3);
	expect_span(t, "a", 0, 10, 20, "main");
	expect_span(t, "tail", 0, 20, 30, "main");
	builder_fixture_close(&f, t);
}

/* Return-site probes do not see an indirect tail call (jmp *%rax): the
 * callee's entry at the caller's entry sp ends the caller, which never
 * stays open over its caller's later calls. */
Test(builder_calls, an_entry_at_the_sp_of_a_frame_with_return_sites_ends_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter_sites(&f, 100, 1000, "main", 1000);
	enter_sites(&f, 100, 1010, "thunk", 900);
	enter_sites(&f, 100, 1020, "target", 900); /* jumped to, not called */
	leave(&f, 100, 1030, "target", 900);
	enter_sites(&f, 100, 1040, "next", 900);
	leave(&f, 100, 1050, "next", 900);
	leave(&f, 100, 1060, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.inferred, 0);
	cr_assert_eq(bs.unwinds, 1, "thunk ended without an exit");
	t = builder_fixture_finish(&f);
	cr_assert_eq(t->nr_spans, 4);
	expect_span(t, "thunk", 0, 10, 20, "main");
	expect_span(t, "target", 0, 20, 30, "main");
	expect_span(t, "next", 0, 40, 50, "main");
	builder_fixture_close(&f, t);
}

/* A handler on the thread's own stack runs below the interrupted frames. */
Test(builder_calls, a_signal_handler_on_the_stack_nests)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 0x7ffc1000);
	enter(&f, 100, 1010, "work", 0x7ffc0f00);
	enter(&f, 100, 1020, "on_signal", 0x7ffc0a00); /* below a signal frame */
	enter(&f, 100, 1030, "count", 0x7ffc0900);
	leave(&f, 100, 1040, "count", 0x7ffc0900);
	leave(&f, 100, 1050, "on_signal", 0x7ffc0a00);
	enter(&f, 100, 1060, "step", 0x7ffc0e00);
	leave(&f, 100, 1070, "step", 0x7ffc0e00);
	leave(&f, 100, 1080, "work", 0x7ffc0f00);
	leave(&f, 100, 1090, "main", 0x7ffc1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.unwinds, 0);
	cr_assert_eq(bs.inferred, 0);
	t = builder_fixture_finish(&f);
	expect_span(t, "on_signal", 0, 20, 50, "work");
	expect_span(t, "count", 0, 30, 40, "on_signal");
	expect_span(t, "step", 0, 60, 70, "work");
	expect_span(t, "work", 0, 10, 80, "main");
	builder_fixture_close(&f, t);
}

/* A handler on a sigaltstack far above the thread's stack: its frames and
 * their exits must not end the interrupted frames, whose stack pointers are
 * all below theirs; after it, the interrupted code goes on as before. */
Test(builder_calls, a_sigaltstack_handler_above_leaves_the_frames_below_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 0x7ffc1000);
	enter(&f, 100, 1010, "work", 0x7ffc0f00);
	enter(&f, 100, 1020, "on_signal", 0x7fff5000);
	enter(&f, 100, 1030, "count", 0x7fff4f00);
	leave(&f, 100, 1040, "count", 0x7fff4f00);
	enter(&f, 100, 1045, "count", 0x7fff4f00);
	leave(&f, 100, 1048, "count", 0x7fff4f00);
	leave(&f, 100, 1050, "on_signal", 0x7fff5000);
	enter(&f, 100, 1060, "step", 0x7ffc0e00);
	leave(&f, 100, 1070, "step", 0x7ffc0e00);
	leave(&f, 100, 1080, "work", 0x7ffc0f00);
	leave(&f, 100, 1090, "main", 0x7ffc1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.unwinds, 0);
	cr_assert_eq(bs.inferred, 0);
	t = builder_fixture_finish(&f);
	expect_span(t, "on_signal", 0, 20, 50, "work");
	expect_span(t, "count", 0, 30, 40, "on_signal");
	expect_span(t, "count", 1, 45, 48, "on_signal");
	expect_span(t, "step", 0, 60, 70, "work");
	expect_span(t, "work", 0, 10, 80, "main");
	expect_span(t, "main", 0, 0, 90, NULL);
	builder_fixture_close(&f, t);
}

/* A handler on a sigaltstack below the stack (a malloc'd one) nests too, and
 * a handler that leaves by siglongjmp is ended by the next exit of the
 * interrupted stack. */
Test(builder_calls, a_sigaltstack_handler_below_and_a_siglongjmp_out_of_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 0x7ffc1000);
	enter(&f, 100, 1010, "work", 0x7ffc0f00);
	enter(&f, 100, 1020, "on_signal", 0x5555a000);
	leave(&f, 100, 1030, "on_signal", 0x5555a000);
	enter(&f, 100, 1040, "on_signal", 0x5555a000);
	enter(&f, 100, 1045, "bail_out", 0x5555900); /* siglongjmps into main */
	leave(&f, 100, 1060, "main", 0x7ffc1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.unwinds, 3);
	t = builder_fixture_finish(&f);
	expect_span(t, "on_signal", 0, 20, 30, "work");
	expect_span(t, "on_signal", 1, 40, 60, "work");
	expect_span(t, "bail_out", 0, 45, 60, "on_signal");
	expect_span(t, "work", 0, 10, 60, "main");
	builder_fixture_close(&f, t);
}

/* Tracing began inside main and run (attach): their exits have no entry.
 * They become spans from the thread's first event, written before what
 * they hold. */
Test(builder_calls, an_exit_without_its_entry_is_inferred_from_the_first_event)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "step", 800);
	leave(&f, 100, 1010, "step", 800);
	enter(&f, 100, 1020, "step", 800);
	leave(&f, 100, 1030, "step", 800);
	leave(&f, 100, 1040, "run", 900);
	enter(&f, 100, 1050, "report", 900);
	leave(&f, 100, 1060, "report", 900);
	leave(&f, 100, 1070, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.inferred, 2);
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 70, NULL);
	expect_span(t, "run", 0, 0, 40, "main");
	/* (file order: the second step was written first; the first waited for
	 * its inferred parents) */
	expect_span(t, "step", 0, 20, 30, "run");
	expect_span(t, "step", 1, 0, 10, "run");
	expect_span(t, "report", 0, 50, 60, "main");
	cr_assert(inferred(trace_span(t, "main", 0)));
	cr_assert(inferred(trace_span(t, "run", 0)));
	cr_assert_not(inferred(trace_span(t, "step", 1)));
	builder_fixture_close(&f, t);
}

/* An exit without its entry inside an open frame (a lost entry) nests in it. */
Test(builder_calls, an_exit_without_its_entry_nests_in_the_open_frame)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "a", 900);
	leave(&f, 100, 1020, "a", 900);
	leave(&f, 100, 1030, "lost", 900);
	leave(&f, 100, 1040, "main", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "lost", 0, 0, 30, "main");
	expect_span(t, "a", 0, 10, 20, "lost");
	cr_assert(inferred(trace_span(t, "lost", 0)));
	builder_fixture_close(&f, t);
}

Test(builder_calls, an_exit_without_sp_ends_the_innermost_call)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 0);
	enter(&f, 100, 1010, "a", 0);
	leave(&f, 100, 1020, "a", 0);
	leave(&f, 100, 1030, "main", 0);
	t = builder_fixture_finish(&f);
	expect_span(t, "a", 0, 10, 20, "main");
	expect_span(t, "main", 0, 0, 30, NULL);
	builder_fixture_close(&f, t);
}

Test(builder_calls, a_syscall_nests_in_the_user_call_with_its_arguments)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *s;
	const struct fxt_arg *nr, *ret;
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "read_file", 900);
	syscall_begin(&f, 100, 1020, "read", 0);
	syscall_end(&f, 100, 1030, "read", 0, 42);
	syscall_begin(&f, 100, 1040, "read", 0);
	syscall_end(&f, 100, 1050, "read", 0, -11);
	leave(&f, 100, 1060, "read_file", 900);
	leave(&f, 100, 1070, "main", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.kernel_spans, 2);
	t = builder_fixture_finish(&f);
	expect_span(t, "read", 0, 20, 30, "read_file");
	expect_span(t, "read", 1, 40, 50, "read_file");
	cr_assert_str_eq(trace_span(t, "read", 1)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "read_file", 0)->category, "");
	s = trace_span(t, "read", 0);
	cr_assert_eq(s->nr_args, 2, "nr and ret, nr once");
	nr = fxt_find_arg(s->args, s->nr_args, "nr");
	ret = fxt_find_arg(s->args, s->nr_args, "ret");
	cr_assert(nr && ret);
	cr_assert_eq(nr->type, FXT_ARG_UINT32, "%s", fxt_arg_type_name(nr->type));
	cr_assert_eq(nr->u, 0);
	cr_assert_eq(ret->type, FXT_ARG_INT32, "%s", fxt_arg_type_name(ret->type));
	cr_assert_eq(ret->i, 42);
	s = trace_span(t, "read", 1);
	ret = fxt_find_arg(s->args, s->nr_args, "ret");
	cr_assert(ret);
	cr_assert_eq(ret->i, -11);
	builder_fixture_close(&f, t);
}

/* A sleep: the thread is switched out inside the system call. Off-CPU time
 * is not self time. */
Test(builder_calls, off_cpu_nests_in_the_syscall_it_slept_in)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *s;
	const struct fxt_arg *state;
	struct rv_event_arg out = { "state", RV_EVENT_ARG_HEX, 1 };
	struct rv_top_function top[4];
	size_t n;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "nap", 1000);
	syscall_begin(&f, 100, 1010, "clock_nanosleep", 230);
	kernel(&f, 100, 1020, true, RV_KERNEL_OFF_CPU, "[off-cpu: sleeping]", &out, 1);
	kernel(&f, 100, 2020, false, RV_KERNEL_OFF_CPU, "[off-cpu]", NULL, 0);
	syscall_end(&f, 100, 2030, "clock_nanosleep", 230, 0);
	leave(&f, 100, 2040, "nap", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "clock_nanosleep", 0, 10, 1030, "nap");
	expect_span(t, "[off-cpu: sleeping]", 0, 20, 1020, "clock_nanosleep");
	/* the kernel's code, not its waiting */
	cr_assert_str_eq(trace_span(t, "clock_nanosleep", 0)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "[off-cpu: sleeping]", 0)->category, "");
	s = trace_span(t, "[off-cpu: sleeping]", 0);
	state = fxt_find_arg(s->args, s->nr_args, "state");
	cr_assert(state);
	cr_assert_eq(state->type, FXT_ARG_POINTER);
	cr_assert_eq(state->u, 1);
	/* nap: 10 before and 10 after the call; the call: 10 before and 10
	 * after the thread slept */
	n = rv_builder_top_functions(f.b, top, 4);
	cr_assert_eq(n, 2, "off-CPU time is not self time");
	cr_assert_str_eq(top[0].name, "clock_nanosleep");
	cr_assert_eq(top[0].self_ns, 20);
	cr_assert_str_eq(top[1].name, "nap");
	cr_assert_eq(top[1].self_ns, 20);
	builder_fixture_close(&f, t);
}

/* Attached to a thread asleep in a system call: the switch-in and the
 * syscall's exit come without their beginnings. */
Test(builder_calls, kernel_ends_without_their_beginnings_are_inferred)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_span *s;

	builder_fixture_open(&f);
	kernel(&f, 100, 1000, false, RV_KERNEL_OFF_CPU, "[off-cpu]", NULL, 0);
	syscall_end(&f, 100, 1010, "read", 0, 7);
	leave(&f, 100, 1020, "main", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 20, NULL);
	expect_span(t, "read", 0, 0, 10, "main");
	expect_span(t, "[off-cpu]", 0, 0, 0, "read");
	s = trace_span(t, "read", 0);
	cr_assert(inferred(s));
	cr_assert_str_eq(s->category, "kernel");
	cr_assert_str_eq(trace_span(t, "[off-cpu]", 0)->category, "");
	cr_assert_eq(s->nr_args, 3, "inferred_start_time, nr, ret");
	cr_assert_eq(fxt_find_arg(s->args, s->nr_args, "ret")->i, 7);
	cr_assert_eq(fxt_find_arg(s->args, s->nr_args, "nr")->u, 0);
	builder_fixture_close(&f, t);
}

Test(builder_calls, a_page_fault_is_an_instant_with_its_arguments)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *in;
	const struct rv_event_arg args[] = {
		{ "address", RV_EVENT_ARG_HEX, 0x7f0000001000 },
		{ "ip", RV_EVENT_ARG_HEX, 0x401234 },
		{ "error_code", RV_EVENT_ARG_HEX, 6 },
	};
	struct rv_event ev = { .kind = RV_EVENT_INSTANT, .pid = PID, .tid = 100, .time = 1010 };
	struct rv_builder_stats bs;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "touch", 1000);
	ev.instant.name = "[page fault]";
	ev.instant.args = args;
	ev.instant.nr_args = 3;
	builder_fixture_add(&f, &ev);
	leave(&f, 100, 1020, "touch", 1000);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.instants, 1);
	t = builder_fixture_finish(&f);
	cr_assert_eq(fxt_count_instants(t, PID, 100, "[page fault]"), 1);
	in = fxt_find_instant(t, PID, 100, "[page fault]", 0);
	cr_assert_eq(in->ts_ns, 10);
	cr_assert_eq(in->nr_args, 3);
	cr_assert_eq(fxt_find_arg(in->args, in->nr_args, "address")->u, 0x7f0000001000);
	cr_assert_eq(fxt_find_arg(in->args, in->nr_args, "ip")->u, 0x401234);
	cr_assert_eq(fxt_find_arg(in->args, in->nr_args, "error_code")->u, 6);
	cr_assert_eq(fxt_find_arg(in->args, in->nr_args, "ip")->type, FXT_ARG_POINTER);
	builder_fixture_close(&f, t);
}

/* exit_group never returns: the thread's exit ends it and the calls under it. */
Test(builder_calls, the_thread_exit_ends_its_open_frames)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 101, 1005, "worker", 5000);
	enter(&f, 100, 1010, "quit", 900);
	syscall_begin(&f, 100, 1020, "exit_group", 231);
	thread_exit(&f, 100, 1030);
	leave(&f, 101, 1040, "worker", 5000);
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 30, NULL);
	expect_span(t, "quit", 0, 10, 30, "main");
	expect_span(t, "exit_group", 0, 20, 30, "quit");
	cr_assert_eq(fxt_find_arg(trace_span(t, "exit_group", 0)->args,
				  trace_span(t, "exit_group", 0)->nr_args, "nr")
			     ->u,
		     231, "an open span keeps its BEGIN's arguments");
	expect_span(t, "worker", 0, 5, 40, NULL);
	cr_assert_eq(trace_span(t, "worker", 0)->tid, 101);
	builder_fixture_close(&f, t);
}

Test(builder_calls, finish_ends_what_is_open_at_the_last_event)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event ev = { .kind = RV_EVENT_INSTANT, .pid = PID, .tid = 100, .time = 1030 };

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1010, "loop", 900);
	kernel(&f, 100, 1020, true, RV_KERNEL_IRQ, "[irq 24]", NULL, 0);
	ev.instant.name = "[page fault]";
	builder_fixture_add(&f, &ev); /* at 1030 */
	t = builder_fixture_finish(&f);
	expect_span(t, "main", 0, 0, 30, NULL);
	expect_span(t, "loop", 0, 10, 30, "main");
	expect_span(t, "[irq 24]", 0, 20, 30, "loop");
	builder_fixture_close(&f, t);
}

/* A kernel span whose end was lost ends when user code runs again; a
 * syscall does not nest in a syscall. */
Test(builder_calls, user_code_ends_kernel_spans_whose_end_was_lost)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	syscall_begin(&f, 100, 1010, "write", 1);
	syscall_begin(&f, 100, 1020, "read", 0);
	enter(&f, 100, 1030, "a", 900);
	kernel(&f, 100, 1040, true, RV_KERNEL_OFF_CPU, "[off-cpu: preempted]", NULL, 0);
	leave(&f, 100, 1050, "a", 900); /* the switch-in was lost */
	leave(&f, 100, 1060, "main", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "write", 0, 10, 20, "main");
	expect_span(t, "read", 0, 20, 30, "main");
	expect_span(t, "a", 0, 30, 50, "main");
	expect_span(t, "[off-cpu: preempted]", 0, 40, 50, "a");
	builder_fixture_close(&f, t);
}

/* Interrupts nest in whatever runs; off-CPU time ends with any event of its
 * thread (the switch-in was lost). */
Test(builder_calls, irqs_nest_and_any_event_ends_off_cpu_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct rv_event_arg handled = { "ret", RV_EVENT_ARG_INT, 1 };

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	syscall_begin(&f, 100, 1010, "read", 0);
	kernel(&f, 100, 1020, true, RV_KERNEL_IRQ, "[irq 11]", NULL, 0);
	kernel(&f, 100, 1030, false, RV_KERNEL_IRQ, "[irq 11]", &handled, 1);
	kernel(&f, 100, 1040, true, RV_KERNEL_OFF_CPU, "[off-cpu: disk]", NULL, 0);
	syscall_end(&f, 100, 1050, "read", 0, 1);
	leave(&f, 100, 1060, "main", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "[irq 11]", 0, 20, 30, "read");
	cr_assert_eq(fxt_find_arg(trace_span(t, "[irq 11]", 0)->args,
				  trace_span(t, "[irq 11]", 0)->nr_args, "ret")
			     ->i,
		     1);
	expect_span(t, "[off-cpu: disk]", 0, 40, 50, "read");
	expect_span(t, "read", 0, 10, 50, "main");
	builder_fixture_close(&f, t);
}

/* A --filter window ends the calls in it; the next window starts afresh. */
Test(builder_calls, a_window_ends_the_calls_in_it)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event w = { .kind = RV_EVENT_WINDOW, .pid = PID, .tid = 100, .time = 1050 };

	builder_fixture_open(&f);
	rv_builder_set_base(f.b, 990);
	enter(&f, 100, 1000, "request", 900);
	enter(&f, 100, 1010, "parse", 800);
	w.gate.name = "request";
	w.gate.duration_ns = 60;
	builder_fixture_add(&f, &w);
	leave(&f, 100, 2000, "parse", 800);
	leave(&f, 100, 2010, "request", 900);
	t = builder_fixture_finish(&f);
	expect_span(t, "[window request]", 0, 0, 60, NULL);
	expect_span(t, "request", 0, 10, 60, "[window request]");
	expect_span(t, "parse", 0, 20, 60, "request");
	/* after the window: exits of what was entered before it */
	expect_span(t, "request", 1, 1010, 1020, NULL);
	expect_span(t, "parse", 1, 1010, 1010, "request");
	cr_assert(inferred(trace_span(t, "request", 1)));
	builder_fixture_close(&f, t);
}

Test(builder_calls, a_late_event_is_taken_at_its_threads_last_time)
{
	struct builder_fixture f;
	struct fxt_trace *t;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	enter(&f, 100, 1020, "a", 900);
	leave(&f, 100, 1010, "a", 900);
	leave(&f, 100, 1030, "main", 1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "a", 0, 20, 20, "main");
	expect_span(t, "main", 0, 0, 30, NULL);
	builder_fixture_close(&f, t);
}

/* Names come from the symbolizer when the event has none: an address no
 * mapping covers is named by itself. An exit that names nothing is
 * "[unknown]". */
Test(builder_calls, functions_without_sym_are_named_by_the_symbolizer)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event ev = { .kind = RV_EVENT_CALL_ENTER, .pid = PID, .tid = 100, .time = 1000 };

	builder_fixture_open(&f);
	ev.call.addr = 0x1234;
	ev.call.sp = 1000;
	builder_fixture_add(&f, &ev);
	ev.kind = RV_EVENT_CALL_EXIT;
	ev.time = 1010;
	ev.call.sp = 1008;
	builder_fixture_add(&f, &ev);
	ev.time = 1020;
	ev.call.addr = 0;
	ev.call.sp = 2008;
	builder_fixture_add(&f, &ev);
	t = builder_fixture_finish(&f);
	expect_span(t, "0x1234", 0, 0, 10, "[unknown]");
	expect_span(t, "[unknown]", 0, 0, 20, NULL);
	builder_fixture_close(&f, t);
}

/* Every thread has its own stack and track. */
Test(builder_calls, threads_have_their_own_stacks)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_event name = { .kind = RV_EVENT_THREAD_NAME, .pid = PID, .tid = 101 };

	builder_fixture_open(&f);
	name.thread.name = "worker";
	builder_fixture_add(&f, &name);
	enter(&f, 100, 1000, "main", 0x7ffc1000);
	enter(&f, 101, 1001, "work", 0x7f001000);
	enter(&f, 100, 1002, "wait", 0x7ffc0f00);
	leave(&f, 101, 1003, "work", 0x7f001000);
	leave(&f, 100, 1004, "wait", 0x7ffc0f00);
	leave(&f, 100, 1005, "main", 0x7ffc1000);
	t = builder_fixture_finish(&f);
	expect_span(t, "work", 0, 1, 3, NULL);
	expect_span(t, "wait", 0, 2, 4, "main");
	cr_assert_eq(trace_span(t, "work", 0)->tid, 101);
	cr_assert_str_eq(fxt_thread_name(t, PID, 101), "worker [100/101]");
	builder_fixture_close(&f, t);
}

/* The summary's hints (render/probe_summary.h) name the most-called
 * functions: each entry counts once, recursion included. */
Test(builder_calls, most_called_counts_every_entry)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	struct rv_top_function most[4];
	size_t n;

	builder_fixture_open(&f);
	enter(&f, 100, 1000, "main", 1000);
	for (int i = 0; i < 3; i++) {
		enter(&f, 100, 1010 + 20 * i, "a", 900);
		enter(&f, 100, 1015 + 20 * i, "a", 800); /* recursion */
		leave(&f, 100, 1020 + 20 * i, "a", 800);
		leave(&f, 100, 1025 + 20 * i, "a", 900);
	}
	enter(&f, 100, 1080, "b", 900);
	leave(&f, 100, 1085, "b", 900);
	leave(&f, 100, 1100, "main", 1000);
	n = rv_builder_most_called(f.b, most, 4);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(most[0].name, "a");
	cr_assert_eq(most[0].calls, 6);
	cr_assert_str_eq(most[1].name, "b"); /* ties by name */
	cr_assert_eq(most[1].calls, 1);
	cr_assert_str_eq(most[2].name, "main");
	cr_assert_eq(most[2].calls, 1);
	/* by self time: a ran 3 x (10 + 5) ns of its own, main 100 - 45 - 5 */
	cr_assert_eq(rv_builder_top_functions(f.b, most, 1), 1);
	cr_assert_str_eq(most[0].name, "main");
	cr_assert_eq(most[0].self_ns, 50);
	cr_assert_eq(most[0].calls, 1, "the top by self time carries the calls too");
	t = builder_fixture_finish(&f);
	builder_fixture_close(&f, t);
}
