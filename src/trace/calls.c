/* calls.c: call stacks from exact calls (the uprobe engine's function entries
 * and exits), with the kernel's spans (system calls, off-CPU time, interrupts,
 * kernel functions) nested in the user call that was open on the same thread,
 * by the rules builder.h lists under "exact calls".
 *
 * A thread's frames live in thread_state.stack as every builder's do, in one
 * segment of the branch state (so that its create_time, the orphans written
 * after an inferred parent, windows and the thread's end work as for
 * branches); calls[i] holds what exact calls need of stack[i]: the entry's
 * stack pointer and address, or the kernel span's kind and arguments.
 *
 * Kernel frames are only ever above the innermost user frame: user code that
 * runs (an entry or an exit) means every kernel activity of the thread is
 * over, and a record that said so was lost.
 *
 * Not here: sampled stacks (builder.c), branches (branches.c), names (the
 * events' or the symbolizer's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/builder_internal.h"

static const char NAME_UNKNOWN[] = "[unknown]";

/* The stack pointer at a function's entry is 8 below the one after its
 * return (x86-64: the return address). */
#define RETURN_ADDRESS_BYTES 8

static size_t stack_base(const struct thread_state *t)
{
	return t->br.segs[0].base;
}

static bool is_user(const struct thread_state *t, size_t i)
{
	return t->calls[i].kind == CALL_FRAME_USER;
}

/* The innermost user frame at or below index `from`, or -1. */
static long innermost_user(const struct thread_state *t, long from)
{
	for (long i = from; i >= (long)stack_base(t); i--)
		if (is_user(t, (size_t)i))
			return i;
	return -1;
}

/* The innermost user frame with a stack pointer at or below index `from`,
 * or -1. */
static long innermost_with_sp(const struct thread_state *t, long from)
{
	long i = innermost_user(t, from);

	if (i >= 0 && !t->calls[i].sp)
		i = t->calls[i].below;
	return i;
}

/* Self time: the top frame ran from when it became the top until now
 * (off-CPU time is nobody's). */
static int account(struct step *s)
{
	struct thread_state *t = s->t;

	if (t->depth > stack_base(t) && !(t->stack[t->depth - 1].flags & FRAME_OFF_CPU) &&
	    s->now > t->br.since &&
	    builder_frame_self_time(s->b, &t->stack[t->depth - 1], s->now - t->br.since))
		return builder_out_of_memory(s->err);
	t->br.since = s->now;
	return 0;
}

/* Pushes a frame beginning now; its calls[] entry is returned for the caller
 * to fill. */
static struct call_frame *push(struct step *s, uint64_t identity, const char *name, unsigned flags)
{
	struct thread_state *t = s->t;

	if (account(s))
		return NULL;
	if (builder_push_frame(s->b, t, identity, name, s->now)) {
		builder_out_of_memory(s->err);
		return NULL;
	}
	t->stack[t->depth - 1].flags = flags;
	if (t->cap_calls < t->cap) {
		struct call_frame *grown = realloc(t->calls, t->cap * sizeof(*grown));

		if (!grown) {
			t->depth--;
			builder_out_of_memory(s->err);
			return NULL;
		}
		t->calls = grown;
		t->cap_calls = t->cap;
	}
	memset(&t->calls[t->depth - 1], 0, sizeof(t->calls[0]));
	return &t->calls[t->depth - 1];
}

/* Ends the top frame now, with its arguments if it is a kernel span. */
static int pop(struct step *s)
{
	struct thread_state *t = s->t;
	size_t top = t->depth - 1;
	int ret = account(s);

	if (ret)
		return ret;
	if (is_user(t, top))
		return builder_close_top(s->b, t, s->now, s->err);
	return builder_close_top_args(s->b, t, s->now, &t->calls[top].args, s->err);
}

/* Ends the frames above index k; user frames among them count as unwound
 * (a longjmp, an exception or a lost exit skipped them). */
static int end_above(struct step *s, long k)
{
	if (k < (long)stack_base(s->t) - 1)
		k = (long)stack_base(s->t) - 1;
	while ((long)s->t->depth > k + 1) {
		int ret;

		if (is_user(s->t, s->t->depth - 1))
			s->b->stats.unwinds++;
		ret = pop(s);
		if (ret)
			return ret;
	}
	return 0;
}

/* User code runs: the kernel spans still open (above the innermost user
 * frame) are over. */
static int end_kernel_spans(struct step *s)
{
	long user = innermost_user(s->t, (long)s->t->depth - 1);

	return end_above(s, user >= 0 ? user : (long)stack_base(s->t) - 1);
}

static void add_args(struct span_args *to, const struct rv_event_arg *args, size_t nr)
{
	for (size_t i = 0; i < nr && to->nr < SPAN_MAX_ARGS; i++) {
		bool given = false;

		if (!args[i].name)
			continue;
		for (size_t j = 0; j < to->nr && !given; j++)
			given = !strcmp(to->name[j], args[i].name);
		if (given)
			continue;
		to->name[to->nr] = args[i].name;
		to->kind[to->nr] = (uint8_t)args[i].kind;
		to->value[to->nr] = args[i].value;
		to->nr++;
	}
}

/* A span that ends now but began before anything the thread's stack shows:
 * from the stack's create_time, or from the begin of the frame it runs in.
 * It is the parent of the spans that began then and have ended (the
 * stack's orphans, or those its frame holds), so they are written after it. */
static int infer_span(struct step *s, const char *name, uint64_t addr, const struct span_args *args,
		      bool kernel)
{
	struct thread_state *t = s->t;
	struct segment *seg = &t->br.segs[0];
	size_t pos = t->depth;
	struct pending_span span = {
		.name = name, .addr = addr, .begin = seg->create_time, .end = s->now
	};
	struct pending_span *held = NULL;
	size_t nr_held = 0;
	int ret;

	if (pos > seg->base && t->stack[pos - 1].begin > span.begin)
		span.begin = t->stack[pos - 1].begin;
	span.inferred = true;
	span.kernel = kernel;
	builder_source(s->b, t, &span);
	if (args)
		span.args = *args;
	if (pos == seg->base && span.begin == seg->create_time) {
		held = seg->orphans;
		nr_held = seg->nr_orphans;
		seg->orphans = NULL;
		seg->nr_orphans = seg->cap_orphans = 0;
	} else if (pos > seg->base && t->stack[pos - 1].begin == span.begin) {
		struct open_frame *parent = &t->stack[pos - 1];

		held = parent->held;
		nr_held = parent->nr_held;
		parent->held = NULL;
		parent->nr_held = parent->cap_held = 0;
	}
	ret = account(s);
	if (!ret)
		ret = builder_settle(s->b, t, &span, held, nr_held, pos, s->err);
	free(held);
	s->b->stats.inferred++;
	return ret;
}

/* The run of frames on one stack that frame i (with sp) belongs to, and the
 * frame below it with sp. */
static void link_frame(struct thread_state *t, size_t i)
{
	struct call_frame *c = &t->calls[i];

	c->below = innermost_with_sp(t, (long)i - 1);
	if (!c->sp)
		c->run_start = -1;
	else if (c->below >= 0 && t->calls[c->below].sp >= c->sp)
		c->run_start = t->calls[c->below].run_start;
	else
		c->run_start = (long)i;
}

static int on_call_enter(struct step *s, const struct rv_event *ev)
{
	struct thread_state *t = s->t;
	uint64_t sp = ev->call.sp;
	struct rv_symbol sym;
	const char *name = ev->call.sym;
	struct call_frame *c;
	long top;
	int ret = end_kernel_spans(s);

	if (ret)
		return ret;
	top = innermost_with_sp(t, (long)t->depth - 1);
	if (sp && top >= 0 && sp == t->calls[top].sp && t->calls[top].exits_at_sites) {
		/* The innermost frame's stack is gone and no exit said so: it
		 * left by an indirect jump (a tail call through a pointer,
		 * which return-site probes do not see); this call takes its
		 * place. */
		ret = end_above(s, top - 1);
		if (ret)
			return ret;
	} else if (sp && top >= 0 && sp > t->calls[top].sp) {
		long start = t->calls[top].run_start;

		/* Entered above the innermost frame: on the same stack (within
		 * its run) the frames below sp are over (a longjmp skipped
		 * them), and so are those at sp under them (the longjmp went
		 * to their caller, and this is a new call). (An innermost frame
		 * at sp made a tail call: it stays, its exit comes after this
		 * one's.) Above the whole run, it is another stack (a handler on
		 * a sigaltstack), which nests. */
		if (sp <= t->calls[start].sp) {
			long k = top;

			while (t->calls[k].sp < sp)
				k = t->calls[k].below;
			/* (below the run's start sp is lower: the loop ends there) */
			while (k >= 0 && t->calls[k].sp == sp)
				k = t->calls[k].below;
			ret = end_above(s, k);
			if (ret)
				return ret;
		}
	}
	if (!name) {
		rv_symbolizer_lookup(s->b->symbolizer, ev->pid, ev->call.addr, &sym);
		name = sym.name;
	}
	c = push(s, ev->call.addr, name, 0);
	if (!c)
		return -ENOMEM;
	c->kind = CALL_FRAME_USER;
	c->addr = ev->call.addr;
	c->sp = sp;
	c->exits_at_sites = ev->call.exits_at_sites;
	link_frame(t, t->depth - 1);
	s->b->stats.calls++;
	if (builder_count_call(s->b, t->stack[t->depth - 1].name))
		return builder_out_of_memory(s->err);
	return 0;
}

/* The frame that returns when the stack pointer becomes sp: the innermost
 * whose entry sp is sp - 8, the one entered at addr if several are (a tail
 * call's chained exits). Runs are searched from the top; in a run, frames
 * further down have larger stack pointers. -1 if none. */
static long returning_frame(const struct thread_state *t, uint64_t sp, uint64_t addr)
{
	uint64_t target = sp - RETURN_ADDRESS_BYTES;
	long j = innermost_with_sp(t, (long)t->depth - 1), same_sp = -1;

	while (j >= 0) {
		const struct call_frame *c = &t->calls[j];

		if (c->sp == target && (!addr || c->addr == addr))
			return j;
		if (c->sp == target && same_sp < 0)
			same_sp = j;
		if (c->sp <= target)
			j = c->below;
		else
			j = t->calls[c->run_start].below;
	}
	return same_sp;
}

static int infer_call(struct step *s, const struct rv_event *ev)
{
	const char *name = ev->call.sym;
	struct rv_symbol sym;

	if (!name && ev->call.addr) {
		rv_symbolizer_lookup(s->b->symbolizer, ev->pid, ev->call.addr, &sym);
		name = sym.name;
	}
	return infer_span(s, name ? name : NAME_UNKNOWN, ev->call.addr, NULL, false);
}

static int on_call_exit(struct step *s, const struct rv_event *ev)
{
	struct thread_state *t = s->t;
	uint64_t sp = ev->call.sp;
	long k;
	int ret = end_kernel_spans(s);

	if (ret)
		return ret;
	s->b->stats.returns++;
	if (!sp)
		k = innermost_user(t, (long)t->depth - 1);
	else if (sp > RETURN_ADDRESS_BYTES)
		k = returning_frame(t, sp, ev->call.addr);
	else
		k = -1;
	if (k >= 0) {
		ret = end_above(s, k);
		return ret ? ret : pop(s);
	}
	if (sp) {
		/* The function was entered before the stack began. On its stack
		 * (the top run) the frames below sp are over too. */
		long top = innermost_with_sp(t, (long)t->depth - 1), last = -1;

		for (long j = top; j >= 0 && t->calls[j].sp < sp; j = t->calls[j].below) {
			last = j;
			if (j == t->calls[top].run_start)
				break;
		}
		if (last >= 0) {
			ret = end_above(s, last - 1);
			if (ret)
				return ret;
		}
	}
	return infer_call(s, ev);
}

/* The innermost open kernel span of that kind, or -1. */
static long open_kernel_span(const struct thread_state *t, enum rv_kernel_kind kind)
{
	for (long i = (long)t->depth - 1; i >= (long)stack_base(t) && !is_user(t, (size_t)i); i--)
		if (t->calls[i].kind == (int)kind)
			return i;
	return -1;
}

static int on_kernel_begin(struct step *s, const struct rv_event *ev)
{
	enum rv_kernel_kind kind = ev->kernel.kind;
	struct call_frame *c;
	long stale = -1;

	/* System calls and off-CPU time do not nest in their own kind: one
	 * still open lost its end. */
	if (kind == RV_KERNEL_SYSCALL || kind == RV_KERNEL_OFF_CPU)
		stale = open_kernel_span(s->t, kind);
	if (stale >= 0) {
		int ret = end_above(s, stale - 1);

		if (ret)
			return ret;
	}
	c = push(s, 0, ev->kernel.name ? ev->kernel.name : NAME_UNKNOWN,
		 kind == RV_KERNEL_OFF_CPU ? FRAME_OFF_CPU : FRAME_KERNEL);
	if (!c)
		return -ENOMEM;
	c->kind = (int)kind;
	c->below = c->run_start = -1;
	add_args(&c->args, ev->kernel.args, ev->kernel.nr_args);
	s->b->stats.kernel_spans++;
	/* off-CPU time is nobody's self time: nothing to mark */
	if (kind != RV_KERNEL_OFF_CPU &&
	    builder_mark_kernel(s->b, ev->kernel.name ? ev->kernel.name : NAME_UNKNOWN))
		return -ENOMEM;
	return 0;
}

static int on_kernel_end(struct step *s, const struct rv_event *ev)
{
	struct thread_state *t = s->t;
	long k = open_kernel_span(t, ev->kernel.kind);
	struct span_args args = { 0 };
	int ret;

	if (k < 0) {
		/* Began before the stack did. */
		add_args(&args, ev->kernel.args, ev->kernel.nr_args);
		s->b->stats.kernel_spans++;
		return infer_span(s, ev->kernel.name ? ev->kernel.name : NAME_UNKNOWN, 0, &args,
				  ev->kernel.kind != RV_KERNEL_OFF_CPU);
	}
	ret = end_above(s, k);
	if (ret)
		return ret;
	add_args(&t->calls[k].args, ev->kernel.args, ev->kernel.nr_args);
	return pop(s);
}

static int on_instant(struct step *s, const struct rv_event *ev)
{
	struct rv_arg args[8];
	size_t n = 0;

	for (size_t i = 0; i < ev->instant.nr_args && n < sizeof(args) / sizeof(args[0]); i++) {
		const struct rv_event_arg *a = &ev->instant.args[i];

		if (!a->name)
			continue;
		args[n].name = a->name;
		if (a->kind == RV_EVENT_ARG_INT) {
			args[n].kind = RV_ARG_INT;
			args[n].i = (int64_t)a->value;
		} else {
			args[n].kind = a->kind == RV_EVENT_ARG_HEX ? RV_ARG_POINTER : RV_ARG_UINT;
			args[n].u = a->value;
		}
		n++;
	}
	s->b->stats.instants++;
	return rv_trace_writer_instant(s->b->writer, s->t->pid, s->t->tid,
				       ev->instant.name ? ev->instant.name : NAME_UNKNOWN,
				       builder_rel(s->b, s->now), n ? args : NULL, n, s->err);
}

int builder_add_call(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);
	struct step s = { .b = b, .t = t, .now = ev->time, .err = err };
	long off_cpu;
	int ret;

	if (!t)
		return builder_out_of_memory(err);
	if (t->br.active && !t->exact)
		return 0; /* a thread of branches: its stack is theirs */
	/* out of order (which the producer must not do): at the last time */
	if (s.now < t->br.last_time)
		s.now = t->br.last_time;
	ret = builder_ensure_track(b, t, err);
	if (!ret && !t->br.active) {
		ret = builder_begin_stack(b, t, s.now, err);
		t->exact = true;
	}
	if (ret)
		return ret;
	t->br.last_time = s.now;
	if (s.now > b->stats.last_time)
		b->stats.last_time = s.now;
	b->stats.exact_events++;
	/* Anything but its end says the thread runs: off-CPU time is over. */
	off_cpu = open_kernel_span(t, RV_KERNEL_OFF_CPU);
	if (off_cpu >= 0 &&
	    !(ev->kind == RV_EVENT_KERNEL_END && ev->kernel.kind == RV_KERNEL_OFF_CPU)) {
		ret = end_above(&s, off_cpu - 1);
		if (ret)
			return ret;
	}
	switch (ev->kind) {
	case RV_EVENT_CALL_ENTER:
		return on_call_enter(&s, ev);
	case RV_EVENT_CALL_EXIT:
		return on_call_exit(&s, ev);
	case RV_EVENT_KERNEL_BEGIN:
		return on_kernel_begin(&s, ev);
	case RV_EVENT_KERNEL_END:
		return on_kernel_end(&s, ev);
	case RV_EVENT_INSTANT:
		return on_instant(&s, ev);
	default:
		return 0;
	}
}

int builder_end_calls(struct rv_builder *b, struct thread_state *t, uint64_t end,
		      struct rv_error *err)
{
	struct step s = { .b = b, .t = t, .err = err };
	int ret;

	s.now = end > t->br.last_time ? end : t->br.last_time;
	if (!t->br.active)
		return 0;
	while (t->depth > stack_base(t)) {
		ret = pop(&s);
		if (ret)
			return ret;
	}
	/* the thread's later events come after this end */
	t->br.last_time = s.now;
	/* the orphans, and the stack's end */
	return builder_end_branches(b, t, s.now, err);
}
