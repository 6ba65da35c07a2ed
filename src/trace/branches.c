/* branches.c: call stacks from branches (Intel PT decoded here, or imported
 * from perf script), with the rules builder.h lists: batches of events that
 * share a timestamp, calls and returns, tail calls and unwinds, placeholders
 * for untraced time, stacks set aside while the kernel runs, trace errors.
 *
 * A thread's stacks live in its one frame array (thread_state.stack): the
 * active stack is the last segment, the stacks set aside by kernel entries
 * are the segments below it, so that a frame's parent for the writer's
 * nesting order is always the frame below it in the array.
 *
 * Not here: sampled stacks (builder.c), symbol lookup (the symbolizer), file
 * formats (the writer).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/builder_internal.h"
#include "util/array.h"

#define KERNEL_START BUILDER_KERNEL_START

/* A batch this long is handled at its own time rather than spread: the
 * clock is too coarse for spreading to mean anything, and the memory a batch
 * holds stays bounded. */
#define MAX_BATCH 65536

/* Kernel entries nest a few deep (syscall, interrupt, NMI); a stream that
 * enters more often than it leaves keeps what is beyond this on one stack. */
#define MAX_STACKS 16

static const char NAME_UNKNOWN[] = "[unknown]";
static const char NAME_UNTRACED[] = "[untraced]";
static const char NAME_KERNEL[] = "[kernel]";
static const char NAME_RETURNED[] = "[returned]";
static const char NAME_GAP[] = "[trace gap]";

/* A function as far as the stack rules care. */
struct function {
	const char *name;
	uint64_t start, end; /* [start, end); end 0 when the size is unknown */
	bool known;	     /* a symbol covers it; else all unknown code is one function */
};

/* One end of a branch, resolved to its function only when a rule needs it. */
struct target {
	uint64_t ip;
	const char *sym; /* from the event (perf script); NULL: ask the symbolizer */
	uint64_t sym_start;
	bool resolved;
	struct function fn;
};

static void target_init(struct target *tg, uint64_t ip, const char *sym, uint64_t sym_start)
{
	tg->ip = ip;
	tg->sym = sym;
	tg->sym_start = sym_start;
	tg->resolved = false;
}

static struct segment *active_segment(const struct thread_state *t)
{
	return t->br.seg;
}

static bool stack_empty(const struct thread_state *t)
{
	return t->depth == active_segment(t)->base;
}

/* The active stack is the kernel's (see struct segment). */
static bool in_kernel(const struct thread_state *t)
{
	return t->br.nr_segs && active_segment(t)->kernel;
}

static struct open_frame *top_frame(const struct thread_state *t)
{
	return &t->stack[t->depth - 1];
}

/* The events whose time the batch spreads: all of them. magic-trace spreads
 * over calls only, which leaves a call and its return in one batch a
 * zero-length span, and a frame ended by a jump (a tail call, a longjmp) at
 * the time it began, which a reader may take for its parent's sibling. Every
 * branch taking its share keeps each span a length and the order of events
 * that nesting needs. flush_batch counts on it: the batch's ith event is
 * its share taken_calls + i, and the batch's calls are taken_calls and
 * its waiting events (struct branch_state). */
static bool takes_share(void)
{
	return true;
}

/* Fills e with the symbolizer's function at ip, as the rules take it, its
 * frame not yet made. */
static __attribute__((noinline)) void lookup_function_slow(struct rv_builder *b,
							   struct builder_function_entry *e,
							   uint32_t pid, uint64_t ip)
{
	struct rv_symbol sym;

	rv_symbolizer_lookup(b->symbolizer, pid, ip, &sym);
	/* Code no symbol covers is named by where it is ("libfoo.so+0x1038",
	 * or the address itself), though for the rules it is all one
	 * unknown function. */
	*e = (struct builder_function_entry){
		.ip = ip, .epoch = b->epoch, .pid = pid, .frame.name = sym.name
	};
	if (sym.known) {
		e->frame.identity = e->frame.lo = sym.start;
		/* A size that does not cover the address (kallsyms guesses)
		 * is no size: the start is compared instead. */
		if (sym.size && ip - sym.start < sym.size)
			e->frame.hi = sym.start + sym.size;
		e->frame.flags = FRAME_KNOWN;
	}
}

/* The builder's cache entry of the symbolizer's function at ip
 * (builder_internal.h), filled if it did not hold it. */
static inline struct builder_function_entry *function_entry(struct rv_builder *b, uint32_t pid,
							    uint64_t ip)
{
	struct builder_function_entry *e = &b->functions[builder_cache_slot(ip)];

	if (e->ip != ip || e->pid != pid || e->epoch != b->epoch)
		lookup_function_slow(b, e, pid, ip);
	return e;
}

/* frame_entry's way when e, ip's entry, does not hold the function at ip
 * in pid with its frame made: makes the rest of the frame,
 * builder_push_frame's for a frame of the function, after looking the
 * function up if need be (function_entry, which fills e). */
static __attribute__((noinline)) void
frame_entry_slow(struct rv_builder *b, struct builder_function_entry *e, uint32_t pid, uint64_t ip)
{
	struct open_frame *f = &e->frame;

	function_entry(b, pid, ip);
	f->addr = builder_frame_addr(f->lo);
	builder_source_at(b, pid, f->addr, &f->file, &f->line);
	/* hot_call's frames: user code, no category */
	f->span_function =
		rv_trace_writer_function(b->writer, NULL, f->name, f->addr, f->file, f->line);
	/* what builder_frame_self_time would find, for the frames hot_call
	 * pushes */
	f->self_generation = builder_self_memo(b, f->name, &f->self_slot) ? b->self_generation : 0;
	e->frame_epoch = b->epoch;
}

/* The builder's cache entry of the function at ip with the frame that a
 * call of the hot path pushes made (but its begin): one test for both. */
static inline struct builder_function_entry *frame_entry(struct rv_builder *b, uint32_t pid,
							 uint64_t ip)
{
	struct builder_function_entry *e = &b->functions[builder_cache_slot(ip)];

	if (e->ip != ip || e->pid != pid || e->frame_epoch != b->epoch)
		frame_entry_slow(b, e, pid, ip);
	return e;
}

/* The symbolizer's function at ip, as the rules take it, through the
 * builder's cache. */
static inline void lookup_function(struct rv_builder *b, uint32_t pid, uint64_t ip,
				   struct function *fn)
{
	const struct open_frame *f = &function_entry(b, pid, ip)->frame;

	fn->name = f->name;
	fn->start = f->lo;
	fn->end = f->hi;
	fn->known = f->flags & FRAME_KNOWN;
}

/* resolve's way for a branch end with perf script's text, or none. */
static __attribute__((noinline)) void resolve_named(struct target *tg)
{
	struct function *fn = &tg->fn;

	*fn = (struct function){ .name = NAME_UNKNOWN };
	if (tg->sym) {
		/* perf script's text: trusted as given */
		if (tg->sym[0] && strcmp(tg->sym, "[unknown]")) {
			fn->name = tg->sym;
			fn->start = tg->sym_start;
			fn->known = true;
			/* no start (perf's garbage offset): known by its name */
			if (!fn->start)
				fn->start = BUILDER_NAME_TAG | (uintptr_t)tg->sym;
		}
	}
}

/* Inline: the address alone (PT) is every call's, and most returns'. */
static inline const struct function *resolve(struct step *s, struct target *tg)
{
	if (!tg->resolved) {
		tg->resolved = true;
		if (!tg->sym && tg->ip)
			lookup_function(s->b, s->t->pid, tg->ip, &tg->fn);
		else
			resolve_named(tg);
	}
	return &tg->fn;
}

/* Whether f is a function of known size (never a placeholder: push gives
 * those no range) and ip is in it. */
static inline bool frame_spans(const struct open_frame *f, uint64_t ip)
{
	return f->hi && ip >= f->lo && ip < f->hi;
}

/* Whether `tg` is in f's function: a range compare for a function of known
 * size, which is every jump inside a function traced with binaries. */
static inline __attribute__((always_inline)) bool
frame_has(struct step *s, const struct open_frame *f, struct target *tg)
{
	const struct function *fn;

	if (f->flags & FRAME_PLACEHOLDER)
		return false;
	if (f->hi)
		return frame_spans(f, tg->ip);
	fn = resolve(s, tg);
	if (!fn->known)
		return !(f->flags & FRAME_KNOWN);
	return (f->flags & FRAME_KNOWN) && f->lo == fn->start;
}

/* The index of the nearest frame below the top (in the active stack) whose
 * function `tg` is in the middle of, or -1. A function's first byte is a call
 * or a tail call, never a place to unwind to; unknown code is never one. */
static long deeper_frame(struct step *s, struct target *tg)
{
	const struct thread_state *t = s->t;
	const struct function *fn = resolve(s, tg);
	size_t base = active_segment(t)->base;

	if (!fn->known || tg->ip == fn->start || t->depth < base + 2)
		return -1;
	for (size_t i = t->depth - 1; i-- > base;) {
		const struct open_frame *f = &t->stack[i];

		if ((f->flags & (FRAME_KNOWN | FRAME_PLACEHOLDER)) == FRAME_KNOWN &&
		    f->lo == fn->start)
			return (long)i;
	}
	return -1;
}

/* account's way when the thread has a top frame (a pop's, a call's of
 * the hot path, on a stack that is not empty). */
static inline int account_top(struct step *s)
{
	struct thread_state *t = s->t;

	if (!(top_frame(t)->flags & FRAME_PLACEHOLDER) && s->now > t->br.since &&
	    builder_frame_self_time(s->b, top_frame(t), s->now - t->br.since))
		return builder_out_of_memory(s->err);
	t->br.since = s->now;
	return 0;
}

/* Self time: the top frame ran from when it became the top until now. */
static inline int account(struct step *s)
{
	if (!s->t->depth) {
		s->t->br.since = s->now;
		return 0;
	}
	return account_top(s);
}

/* Pushes a frame that begins now, or, inferred, at the active stack's
 * create_time, taking the stack's orphans as the spans it held. hot_call
 * restates it for a plain call: keep the two alike. */
static int push(struct step *s, const char *name, uint64_t lo, uint64_t hi, unsigned flags)
{
	struct thread_state *t = s->t;
	struct segment *seg = active_segment(t);
	uint64_t begin = flags & FRAME_INFERRED ? seg->create_time : s->now;
	struct open_frame *f;
	int ret = account(s);

	if (ret)
		return ret;
	if (builder_push_frame(s->b, t, lo, name, begin) ||
	    ((flags & (FRAME_KERNEL | FRAME_PLACEHOLDER)) == FRAME_KERNEL &&
	     builder_mark_kernel(s->b, name)))
		return builder_out_of_memory(s->err);
	f = top_frame(t);
	f->lo = lo;
	f->hi = hi;
	f->flags = flags;
	/* the stack is the kernel's when its bottom frame is kernel code */
	if (t->depth - 1 == seg->base && !(flags & FRAME_PLACEHOLDER))
		seg->kernel = flags & FRAME_KERNEL;
	if (!(flags & FRAME_INFERRED))
		return 0;
	s->b->stats.inferred++;
	if (t->depth - 1 != seg->base || !seg->nr_orphans)
		return 0;
	if (f->cap_held < seg->nr_orphans) {
		struct pending_span *grown = realloc(f->held, seg->nr_orphans * sizeof(*grown));

		if (!grown)
			return builder_out_of_memory(s->err);
		f->held = grown;
		f->cap_held = seg->nr_orphans;
	}
	memcpy(f->held, seg->orphans, seg->nr_orphans * sizeof(*f->held));
	f->nr_held = seg->nr_orphans;
	seg->nr_orphans = 0;
	return 0;
}

/* Whether execution lands on `tg`'s function's first byte: the function
 * is entered there and then, whatever brought it there. */
static bool at_entry(struct step *s, struct target *tg)
{
	const struct function *fn = resolve(s, tg);

	return fn->known && tg->ip == fn->start;
}

/* Pushes `tg`'s function. A frame that would be inferred (the stack is
 * empty) but lands on its function's first byte is entered now, a call
 * whose instruction the trace did not see (perf script's "tr strt" at
 * main+0x0, execve's return to _start): nothing of it ran before. */
static int push_target(struct step *s, struct target *tg, unsigned flags)
{
	const struct function *fn = resolve(s, tg);

	if ((flags & FRAME_INFERRED) && at_entry(s, tg)) {
		flags &= ~FRAME_INFERRED;
		s->b->stats.calls++;
	}
	if (tg->ip >= KERNEL_START)
		flags |= FRAME_KERNEL;
	return push(s, fn->name, fn->start, fn->end, flags | (fn->known ? FRAME_KNOWN : 0));
}

/* A placeholder for untraced time; `kernel`: the kernel's time (a system
 * call, an interrupt, or untraced time while in the kernel). */
static int push_placeholder(struct step *s, const char *name, bool kernel)
{
	return push(s, name, 0, 0, FRAME_PLACEHOLDER | (kernel ? FRAME_KERNEL : 0));
}

static inline __attribute__((always_inline)) int pop(struct step *s)
{
	int ret = account_top(s);

	return ret ? ret : builder_close_top(s->b, s->t, s->now, s->err);
}

/* Ends the frames above index (longjmp, exceptions, sigreturn). */
static int unwind_to(struct step *s, size_t index)
{
	while (s->t->depth > index + 1) {
		int ret = pop(s);

		if (ret)
			return ret;
		s->b->stats.unwinds++;
	}
	return 0;
}

/* A frame that takes the top's place (a tail call, ret+call) was entered as
 * the top was: a signal handler's tail callee returns to the restorer too. */
static int replace_top(struct step *s, struct target *tg)
{
	unsigned entered = top_frame(s->t)->flags & FRAME_ASYNC;
	int ret = pop(s);

	return ret ? ret : push_target(s, tg, entered);
}

enum otherwise {
	OTHERWISE_REPLACE, /* `to` was reached by a ret or jmp from the top's function */
	OTHERWISE_PUSH,	   /* `to` runs on top of the stack (a signal handler) */
};

/* Brings the stack in line with execution continuing at `tg`. */
static int land(struct step *s, struct target *tg, enum otherwise otherwise, bool infer_if_empty)
{
	long deeper;

	if (!tg->ip)
		return 0;
	if (stack_empty(s->t))
		return push_target(s, tg, infer_if_empty ? FRAME_INFERRED : 0);
	if (frame_has(s, top_frame(s->t), tg))
		return 0;
	deeper = deeper_frame(s, tg);
	if (deeper >= 0)
		return unwind_to(s, (size_t)deeper);
	if (otherwise == OTHERWISE_REPLACE)
		return replace_top(s, tg);
	return push_target(s, tg, FRAME_ASYNC);
}

static int on_return(struct step *s, struct target *from, struct target *to, bool traced)
{
	struct thread_state *t = s->t;
	bool entered_async = false;
	int ret;

	s->b->stats.returns++;
	if (stack_empty(t)) {
		/* Called before the stack's start: it ran since then, as a guess. */
		const struct function *fn = resolve(s, from);
		struct pending_span span = {
			.name = fn->name,
			.addr = fn->start,
			.begin = active_segment(t)->create_time,
			.end = s->now,
			.inferred = true,
			.kernel = from->ip >= KERNEL_START,
		};

		builder_source(s->b, t, &span);

		s->b->stats.inferred++;
		ret = builder_settle(s->b, t, &span, NULL, 0, t->depth, s->err);
	} else {
		entered_async = top_frame(t)->flags & FRAME_ASYNC;
		ret = pop(s);
	}
	if (ret)
		return ret;
	if (!traced)
		return push_placeholder(s, NAME_RETURNED, in_kernel(t));
	/* A handler's ret goes to a restorer nobody called: it runs on top. */
	return land(s, to, entered_async ? OTHERWISE_PUSH : OTHERWISE_REPLACE, true);
}

static int on_jump(struct step *s, struct target *to)
{
	const struct function *fn;
	long deeper;

	if (!to->ip)
		return 0;
	if (stack_empty(s->t))
		return push_target(s, to, FRAME_INFERRED);
	if (frame_has(s, top_frame(s->t), to))
		return 0;
	fn = resolve(s, to);
	if (fn->known && to->ip == fn->start) {
		s->b->stats.tail_calls++;
		return replace_top(s, to);
	}
	deeper = deeper_frame(s, to);
	if (deeper >= 0)
		return unwind_to(s, (size_t)deeper);
	return replace_top(s, to);
}

static int enter_kernel(struct step *s, struct target *to)
{
	struct branch_state *br = &s->t->br;
	struct segment *seg;

	if (br->nr_segs == MAX_STACKS)
		return push_target(s, to, 0);
	if (br->nr_segs == br->cap_segs) {
		size_t cap = br->cap_segs * 2;
		struct segment *grown = realloc(br->segs, cap * sizeof(*grown));

		if (!grown)
			return builder_out_of_memory(s->err);
		memset(grown + br->cap_segs, 0, (cap - br->cap_segs) * sizeof(*grown));
		br->segs = grown;
		br->cap_segs = cap;
	}
	seg = &br->segs[br->nr_segs++];
	br->seg = seg;
	seg->base = s->t->depth;
	seg->create_time = s->now;
	seg->nr_orphans = 0;
	seg->kernel = true;
	return push_target(s, to, 0);
}

/* Drops the active segment (already empty): its orphans go where a span
 * standing at its base goes now. */
static int pop_segment(struct step *s)
{
	struct branch_state *br = &s->t->br;
	struct segment *dead = &br->segs[--br->nr_segs];
	int ret = 0;

	br->seg = dead - 1;
	for (size_t i = 0; !ret && i < dead->nr_orphans; i++)
		ret = builder_settle(s->b, s->t, &dead->orphans[i], NULL, 0, dead->base, s->err);
	dead->nr_orphans = 0;
	return ret;
}

static int end_active_stack(struct step *s)
{
	while (!stack_empty(s->t)) {
		int ret = pop(s);

		if (ret)
			return ret;
	}
	return 0;
}

/* Ends every kernel stack now, interrupts nested in it too: execution is
 * in user space. */
static int end_kernel(struct step *s)
{
	struct thread_state *t = s->t;

	while (in_kernel(t)) {
		int ret = end_active_stack(s);

		if (ret)
			return ret;
		if (t->br.nr_segs == 1) {
			active_segment(t)->kernel = false;
			break;
		}
		ret = pop_segment(s);
		if (ret)
			return ret;
	}
	return 0;
}

/* Execution is seen in user space (an iret or sysret, the trace resuming
 * in user code after a gap, any branch out of the kernel): the kernel's
 * stacks end now, and `to` continues the user stack they were set aside
 * from; a user function that ran before the trace began (the first stack
 * was the kernel's) is inferred under them. */
static int return_to_user(struct step *s, struct target *to)
{
	int ret = end_kernel(s);

	return ret ? ret : land(s, to, OTHERWISE_PUSH, true);
}

/* An iret or sysret: into the kernel (an interrupt returning to the code it
 * interrupted, whose stack continues), or out of the trace (to user code
 * not traced: the kernel is over, and user time begins). Into user code it
 * is return_to_user's. */
static int leave_kernel(struct step *s, struct target *to, bool traced)
{
	int ret;

	if (!traced) {
		ret = end_kernel(s);
		return ret ? ret : push_placeholder(s, NAME_UNTRACED, false);
	}
	if (!in_kernel(s->t))
		return land(s, to, OTHERWISE_PUSH, true);
	ret = end_active_stack(s);
	if (!ret && s->t->br.nr_segs > 1)
		ret = pop_segment(s);
	if (ret)
		return ret;
	return land(s, to, OTHERWISE_PUSH, true);
}

static int on_trace_begin(struct step *s, struct target *to)
{
	struct thread_state *t = s->t;

	if (!stack_empty(t) && (top_frame(t)->flags & FRAME_PLACEHOLDER)) {
		int ret = pop(s);

		if (ret)
			return ret;
	}
	if (!to->ip)
		return 0;
	/* resumed in user code after the kernel: the kernel is over */
	if (to->ip < KERNEL_START && in_kernel(t))
		return return_to_user(s, to);
	/* resumed in the kernel under user code: a kernel entry */
	if (to->ip >= KERNEL_START && !in_kernel(t) && !stack_empty(t))
		return enter_kernel(s, to);
	if (stack_empty(t) && t->br.fresh)
		return push_target(s, to, FRAME_INFERRED); /* a call at a first byte */
	if (stack_empty(t)) {
		s->b->stats.calls += at_entry(s, to);
		return push_target(s, to, 0);
	}
	return land(s, to, OTHERWISE_PUSH, false);
}

/* The placeholder for time the trace left to the kernel, untraced. */
static int push_untraced(struct step *s, const struct batched_event *e)
{
	const char *name;

	if (in_kernel(s->t))
		return push_placeholder(s, NAME_UNTRACED, true);
	switch (e->kind) {
	case RV_BRANCH_SYSCALL:
		name = builder_syscall_name(s->b, s->t->pid, e->from_ip);
		if (!name)
			return builder_out_of_memory(s->err);
		return push_placeholder(s, name, true);
	case RV_BRANCH_INTERRUPT:
	case RV_BRANCH_SOFT_INT:
		return push_placeholder(s, NAME_KERNEL, true);
	default:
		if (e->flags & RV_BRANCH_ASYNC)
			return push_placeholder(s, NAME_KERNEL, true);
		return push_placeholder(s, NAME_UNTRACED, false);
	}
}

/* Ends every frame of every stack now; the thread's next event starts
 * afresh. */
static int close_all(struct step *s)
{
	struct branch_state *br = &s->t->br;
	struct segment *bottom;
	int ret;

	if (!br->active)
		return 0;
	for (;;) {
		ret = end_active_stack(s);
		if (!ret && br->nr_segs > 1)
			ret = pop_segment(s);
		else if (!ret)
			break;
		if (ret)
			return ret;
	}
	/* No inferred parent can come any more. */
	bottom = &br->segs[0];
	for (size_t i = 0; !ret && i < bottom->nr_orphans; i++)
		ret = builder_write_span(s->b, s->t, &bottom->orphans[i], s->err);
	bottom->nr_orphans = 0;
	br->nr_segs = 0;
	br->seg = NULL;
	br->active = false;
	return ret;
}

static int on_error(struct step *s, const struct batched_event *e)
{
	struct branch_state *br = &s->t->br;
	char name[256];
	int ret;

	s->b->stats.errors++;
	if (e->overflow)
		snprintf(name, sizeof(name), "[overflow]");
	else
		snprintf(name, sizeof(name), "[decode error: %s]", e->message);
	ret = rv_trace_writer_instant(s->b->writer, s->t->pid, s->t->tid, name,
				      builder_rel(s->b, s->now), NULL, 0, s->err);
	if (!ret)
		ret = close_all(s);
	br->in_gap = true;
	br->gap_begin = s->now;
	br->have_error = true;
	br->error_time = s->now;
	return ret;
}

static int start_stack(struct step *s)
{
	struct branch_state *br = &s->t->br;

	if (!br->cap_segs) {
		br->segs = calloc(4, sizeof(*br->segs));
		if (!br->segs)
			return builder_out_of_memory(s->err);
		br->cap_segs = 4;
	}
	br->nr_segs = 1;
	br->seg = &br->segs[0];
	br->segs[0].base = s->t->depth;
	br->segs[0].create_time = s->now;
	br->segs[0].nr_orphans = 0;
	br->active = true;
	br->fresh = true;
	br->since = s->now;
	return 0;
}

/* Whether a branch to `to` leaves the kernel for user code, or user code
 * (open frames of it) for the kernel. */
static bool crosses(const struct thread_state *t, uint64_t to)
{
	if (to < KERNEL_START)
		return in_kernel(t);
	return !in_kernel(t) && !stack_empty(t);
}

static int on_branch(struct step *s, const struct batched_event *e)
{
	const unsigned both = RV_BRANCH_TRACE_BEGIN | RV_BRANCH_TRACE_END;
	bool traced = !(e->flags & RV_BRANCH_TRACE_END);
	struct target from, to;

	/* Set field by field: the function stays unwritten until a rule
	 * resolves it (most branches never need `from`'s). */
	target_init(&from, e->from_ip, e->from_sym, e->from_start);
	target_init(&to, e->to_ip, e->to_sym, e->to_start);

	s->b->stats.branches++;
	if ((e->flags & both) == both)
		return 0; /* nothing ran traced */
	if (e->flags & RV_BRANCH_TRACE_BEGIN)
		return on_trace_begin(s, &to);
	if (traced && to.ip && crosses(s->t, to.ip)) {
		s->b->stats.calls += e->kind == RV_BRANCH_CALL;
		s->b->stats.returns += e->kind == RV_BRANCH_RETURN;
		/* out of the kernel into user code, however (sysret, iret, a
		 * return); from user code into the kernel, however */
		if (to.ip < KERNEL_START)
			return return_to_user(s, &to);
		return enter_kernel(s, &to);
	}
	switch (e->kind) {
	case RV_BRANCH_CALL:
		s->b->stats.calls++;
		if (!to.ip)
			return push_placeholder(s, NAME_UNTRACED, in_kernel(s->t));
		return push_target(s, &to, 0);
	case RV_BRANCH_RETURN:
		return on_return(s, &from, &to, traced);
	case RV_BRANCH_SYSRET:
	case RV_BRANCH_IRET:
		return leave_kernel(s, &to, traced);
	default:
		break;
	}
	if (!traced)
		return push_untraced(s, e);
	if ((e->kind == RV_BRANCH_SYSCALL || e->kind == RV_BRANCH_INTERRUPT ||
	     e->kind == RV_BRANCH_SOFT_INT || (e->flags & RV_BRANCH_ASYNC)) &&
	    to.ip >= KERNEL_START)
		return enter_kernel(s, &to);
	if (e->kind == RV_BRANCH_NONE)
		return 0;
	return on_jump(s, &to); /* JUMP, COND, TX_ABORT, and int/syscall to user code */
}

static int handle(struct rv_builder *b, struct thread_state *t, const struct batched_event *e,
		  uint64_t now, struct rv_error *err)
{
	struct step s = { .b = b, .t = t, .now = now, .err = err };
	struct branch_state *br = &t->br;
	int ret = builder_ensure_track(b, t, err);

	if (ret)
		return ret;
	br->last_time = now;
	if (br->in_gap) {
		struct pending_span gap = { .name = NAME_GAP, .begin = br->gap_begin, .end = now };

		br->in_gap = false;
		if (now > gap.begin) {
			ret = builder_write_span(b, t, &gap, err);
			if (ret)
				return ret;
		}
	}
	if (e->error)
		return on_error(&s, e);
	if (!br->active) {
		ret = start_stack(&s);
		if (ret)
			return ret;
	}
	ret = on_branch(&s, e);
	br->fresh = false;
	return ret;
}

/* The trace's last time follows the events taken. */
static inline void note_last_time(struct rv_builder *b, uint64_t now)
{
	if (now > b->stats.last_time)
		b->stats.last_time = now;
}

/* The time a trace error is taken at (take), which the trace's last time
 * follows: after the last error, 1 ns after it at the earliest. A batch's
 * events need no such check: a batch opens after the last error's time
 * (add_branch) and an error closes it (flush_before) before it is taken. */
static inline uint64_t take_time(struct rv_builder *b, const struct branch_state *br, uint64_t now)
{
	if (br->have_error && now <= br->error_time)
		now = br->error_time + 1; /* magic-trace #155 */
	note_last_time(b, now);
	return now;
}

/* Pushes a frame of the function of the cache entry e that begins at
 * `begin` (hot_call's, take_early's): the entry's frame, copied in one go
 * after what the caller did before (account), so that none of its fields
 * is held across it. */
static inline __attribute__((always_inline)) int push_entry(struct thread_state *t,
							    const struct builder_function_entry *e,
							    uint64_t begin, struct rv_error *err)
{
	struct open_frame *f = builder_new_frame(t);

	if (!f)
		return builder_out_of_memory(err);
	memcpy(f, &e->frame, offsetof(struct open_frame, held));
	f->begin = begin;
	return 0;
}

/* A call in user code on a user stack that is not empty: push_target's
 * and push's rules for it, restated without what cannot apply (an
 * inferred frame, kernel code, a stack's bottom frame); push says so too.
 * test_builder_branch.c's a_million_jumps_inside_a_function_..., and
 * unknown_code_from_perf_script_is_one_function fail when the frame's
 * range or FRAME_KNOWN differ from push's, and
 * functions_sharing_a_cache_slot_show_their_own_source when its address
 * or source does, or the writer's handle of them (span_function). */
static inline __attribute__((always_inline)) int hot_call(struct step *s, uint64_t to_ip,
							  const char *to_sym, uint64_t to_start)
{
	const char *file;
	struct target to;
	const struct function *fn;
	uint64_t addr;
	int32_t line;
	int ret;

	if (!to_sym) {
		/* resolve's answer, with the frame's address and source
		 * kept beside it in the cache entry (builder_push_frame's) */
		struct builder_function_entry *e = frame_entry(s->b, s->t->pid, to_ip);

		ret = account_top(s);
		return ret ? ret : push_entry(s->t, e, s->now, s->err);
	}
	target_init(&to, to_ip, to_sym, to_start);
	fn = resolve(s, &to);
	addr = builder_frame_addr(fn->start);
	builder_source_at(s->b, s->t->pid, addr, &file, &line);
	ret = account_top(s);
	if (ret)
		return ret;
	if (builder_push_frame_as(s->t, fn->start, fn->name, s->now, fn->start, fn->end, addr, file,
				  line, fn->known ? FRAME_KNOWN : 0, 0))
		return builder_out_of_memory(s->err);
	return 0;
}

/* A return in user code: the top frame ends, and execution goes on in the
 * frame below when it is the function returned to (land's rule, asked
 * first), else as land says. */
static inline __attribute__((always_inline)) int hot_return(struct step *s, uint64_t to_ip,
							    const char *to_sym, uint64_t to_start)
{
	struct thread_state *t = s->t;
	bool entered_async = top_frame(t)->flags & FRAME_ASYNC;
	struct step slow;
	struct target to;
	int ret = pop(s);

	if (ret)
		return ret;
	/* frame_has's way for a frame of known size, before the target is
	 * made (most returns land in such a frame) */
	if (!stack_empty(t) && frame_spans(top_frame(t), to_ip))
		return 0;
	/* the step copied, for the rules it is handed to: the hot path's
	 * stays in registers */
	slow = *s;
	target_init(&to, to_ip, to_sym, to_start);
	if (!stack_empty(t) && frame_has(&slow, top_frame(t), &to))
		return 0;
	return land(&slow, &to, entered_async ? OTHERWISE_PUSH : OTHERWISE_REPLACE, true);
}

/* The hot paths, on an event's fields before it is copied for the rules:
 * a jump or jcc inside the top frame's function of known size changes
 * nothing; a call or a return in user code that stays there, on a thread
 * whose stack runs, is handle's and on_branch's rules with nothing but the
 * kind left to decide (hot_call, hot_return). False when the event is none
 * of them; else *ret is taken's result. `now` is take_time's. */
static inline __attribute__((always_inline)) bool
take_hot(struct rv_builder *b, struct thread_state *t, unsigned kind, unsigned flags,
	 uint64_t to_ip, const char *to_sym, uint64_t to_start, uint64_t now, struct rv_error *err,
	 int *ret)
{
	struct branch_state *br = &t->br;
	struct step s;
	const struct open_frame *top;

	if (flags || !br->active || br->in_gap || stack_empty(t))
		return false;
	top = top_frame(t);
	switch (kind) {
	case RV_BRANCH_COND:
	case RV_BRANCH_JUMP:
		if (!frame_spans(top, to_ip))
			return false;
		br->last_time = now;
		b->stats.branches++;
		*ret = 0;
		return true;
	case RV_BRANCH_CALL:
	case RV_BRANCH_RETURN:
		break;
	default:
		return false;
	}
	/* in_kernel's question, of a stack that runs: it has a segment */
	if (!to_ip || to_ip >= KERNEL_START || !t->named || active_segment(t)->kernel)
		return false;
	s = (struct step){ .b = b, .t = t, .now = now, .err = err };
	br->last_time = now;
	br->fresh = false;
	b->stats.branches++;
	if (kind == RV_BRANCH_CALL) {
		b->stats.calls++;
		*ret = hot_call(&s, to_ip, to_sym, to_start);
	} else {
		b->stats.returns++;
		*ret = hot_return(&s, to_ip, to_sym, to_start);
	}
	return true;
}

/* Whether the branch ev of thread t, which waits in its batch behind the
 * batch's first event and calls taken early only, is a call that take_hot
 * would take (hot_call, with no name from the event: to_sym, add_branch's)
 * when the batch is flushed. Such a call is taken now (take_early) but for
 * what needs its time, which flush_batch gives it (time_early): the batch's
 * calls into a recursion are most of its waiting events, and are then never
 * copied. The thread's state asked here is the one the flush would find:
 * those calls change none of it, and whatever else reads or changes the
 * thread's stack flushes its batch first; but a sampled thread's switch
 * out ends its stack without that, and takes no call early. The function
 * is the one mapped when the call came, as for the batch's first event,
 * where a batched call's is the one mapped when the batch is flushed (in a
 * later call of the builder when its next time comes in that one). */
static inline __attribute__((always_inline)) bool
early_call(const struct thread_state *t, const struct rv_event *ev, const char *to_sym)
{
	const struct branch_state *br = &t->br;
	uint64_t to_ip = ev->branch.to.ip;

	/* after a call taken early the state is the one it was taken in (but
	 * for the track's name, which a rename may take back) */
	return ev->branch.kind == RV_BRANCH_CALL && !ev->branch.flags &&
	       br->nr_batch == br->nr_early && to_ip && to_ip < KERNEL_START && !to_sym &&
	       t->named &&
	       (br->nr_early ||
		(br->active && !br->in_gap && !t->has_sample && !stack_empty(t) && !in_kernel(t)));
}

/* take_hot's and hot_call's way for an early call (early_call), but for
 * what needs its time: the frame's begin, the self time of the frame
 * below it, and the thread's last time (time_early). */
static inline __attribute__((always_inline)) int
take_early(struct rv_builder *b, struct thread_state *t, uint64_t to_ip, struct rv_error *err)
{
	struct builder_function_entry *e = frame_entry(b, t->pid, to_ip);

	t->br.fresh = false;
	t->br.nr_early++;
	t->br.nr_batch++;
	b->stats.branches++;
	b->stats.calls++;
	return push_entry(t, e, 0, err);
}

/* What take_early left for the time `now` of the early call whose frame is
 * f: its begin, and account's self time of the frame below it, the top
 * since `since`. The caller makes the thread's since and last time the
 * last early call's (the compiler cannot keep them in registers across
 * the self-time table's sums). */
static inline int time_early(struct rv_builder *b, struct open_frame *f, uint64_t now,
			     uint64_t since, struct rv_error *err)
{
	struct open_frame *below = f - 1;

	if (!(below->flags & FRAME_PLACEHOLDER) && now > since &&
	    builder_frame_self_time(b, below, now - since))
		return builder_out_of_memory(err);
	f->begin = now;
	return 0;
}

/* Takes one event at its time (after spreading). */
static int take(struct rv_builder *b, struct thread_state *t, const struct batched_event *e,
		uint64_t now, struct rv_error *err)
{
	int ret;

	now = take_time(b, &t->br, now);
	if (!e->error &&
	    take_hot(b, t, e->kind, e->flags, e->to_ip, e->to_sym, e->to_start, now, err, &ret))
		return ret;
	return handle(b, t, e, now, err);
}

/* The time over which the batch spreads when the next event comes at
 * next_time. No later time to spread to (the thread's last batch, or one too
 * long to hold): a nanosecond each keeps the order that nesting needs. */
static uint64_t spread_until(const struct branch_state *br, uint64_t next_time)
{
	return next_time > br->batch_time ? next_time - br->batch_time
					  : br->taken_calls + br->nr_batch;
}

/* The batch's ith waiting event. */
static inline void unpack(const struct branch_state *br, size_t i, struct batched_event *e)
{
	const struct packed_event *p = &br->batch[i];

	*e = (struct batched_event){
		.from_ip = p->from_ip, .to_ip = p->to_ip, .kind = p->kind, .flags = p->flags
	};
	if (p->extra) {
		const struct batched_extra *x = &br->extra[p->extra - 1];

		e->from_start = x->from_start;
		e->to_start = x->to_start;
		e->from_sym = x->from_sym;
		e->to_sym = x->to_sym;
	}
}

/* take of the batch's ith waiting event, unpacked only for the rules, at
 * `now`: after the last error (take_time's rule holds for a batch), and
 * the caller notes the trace's last time. */
static inline __attribute__((always_inline)) int take_packed(struct rv_builder *b,
							     struct thread_state *t, size_t i,
							     uint64_t now, struct rv_error *err)
{
	const struct packed_event *p = &t->br.batch[i];
	const struct batched_extra *x = p->extra ? &t->br.extra[p->extra - 1] : NULL;
	struct batched_event e;
	int ret;

	if (take_hot(b, t, p->kind, p->flags, p->to_ip, x ? x->to_sym : NULL, x ? x->to_start : 0,
		     now, err, &ret))
		return ret;
	unpack(&t->br, i, &e);
	return handle(b, t, &e, now, err);
}

static void close_batch(struct branch_state *br)
{
	br->nr_extra = 0;
	br->nr_batch = 0;
	br->nr_early = 0;
	br->batch_open = false;
}

/* From share k's time `at` (and what is left of k * remainder / divisor)
 * to share k + 1's (flush_batch). */
static inline void next_share(uint64_t *at, uint64_t *left, uint64_t quotient, uint64_t remainder,
			      uint64_t divisor)
{
	*at += quotient;
	*left += remainder;
	if (*left >= divisor) {
		*left -= divisor;
		++*at;
	}
}

/* Takes the batched events spread over [batch_time, batch_time + span), and
 * closes the batch. The batch's first event, taken when it came, had the
 * batch's time, as it would now. */
static int flush_batch(struct rv_builder *b, struct thread_state *t, uint64_t span,
		       struct rv_error *err)
{
	struct branch_state *br = &t->br;
	/* Share k of the batch's ncalls is at k * span / ncalls, worked out
	 * without overflow (k < ncalls <= MAX_BATCH + 1) as k * quotient +
	 * k * remainder / ncalls. Every event takes a share (takes_share):
	 * the batch's ith is share taken_calls + i, and both terms are
	 * carried from one share to the next rather than worked out for
	 * each, the second by adding remainder to what is left of the
	 * division (less than ncalls, as remainder is), which carries at
	 * most 1. A batch whose only event was taken when it came has
	 * nothing to work out. */
	const size_t nr_early = br->nr_early;
	const size_t early = t->depth - nr_early; /* the first early call's frame */
	/* read once: nothing here moves the frames */
	struct open_frame *const frames = t->stack;
	uint64_t since = br->since;
	uint64_t ncalls = br->nr_batch ? br->taken_calls + br->nr_batch : 0;
	uint64_t divisor = ncalls ? ncalls : 1;
	uint64_t quotient = ncalls ? span / ncalls : 0, remainder = ncalls ? span % ncalls : 0;
	uint64_t at = br->batch_time, left = 0; /* share k's time, and what is left over */
	uint64_t now = at;
	int ret = 0;
	size_t i;

	if (br->taken_calls) /* 0 or 1 */
		next_share(&at, &left, quotient, remainder, divisor);
	/* the calls taken early come first */
	for (i = 0; i < nr_early; i++) {
		if (i)
			next_share(&at, &left, quotient, remainder, divisor);
		ret = time_early(b, &frames[early + i], at, since, err);
		since = now = at;
		if (ret)
			break;
	}
	if (nr_early)
		br->since = br->last_time = now;
	for (; i < br->nr_batch && !ret; i++) {
		if (i)
			next_share(&at, &left, quotient, remainder, divisor);
		now = at;
		ret = take_packed(b, t, i, now, err);
	}
	if (br->nr_batch)
		note_last_time(b, now);
	close_batch(br);
	return ret;
}

/* Whether the top frame began at `now` (an event taken then entered it). */
static bool entered_at(const struct thread_state *t, uint64_t now)
{
	return t->br.active && !stack_empty(t) && top_frame(t)->begin == now;
}

/* Takes the batched events at the batch's time, with nothing to spread
 * over (a trace error stamped with them comes next), and closes the batch:
 * an event that enters a frame moves the time on by 1 ns, so that no frame
 * is left without a length, and the others share it. *end is the time after
 * them: the batch's own when no frame began in it. */
static int flush_batch_at_stamp(struct rv_builder *b, struct thread_state *t, uint64_t *end,
				struct rv_error *err)
{
	struct branch_state *br = &t->br;
	const size_t early = t->depth - br->nr_early;
	/* the top before the calls taken early is below them */
	uint64_t now = br->batch_time + (br->nr_early ? t->stack[early - 1].begin == br->batch_time
						      : entered_at(t, br->batch_time));
	int ret = 0;
	size_t i;

	for (i = 0; i < br->nr_early && !ret; i++) {
		note_last_time(b, now);
		ret = time_early(b, &t->stack[early + i], now, br->since, err);
		br->since = br->last_time = now;
		now++; /* its frame entered then */
	}
	for (; i < br->nr_batch && !ret; i++) {
		note_last_time(b, now);
		ret = take_packed(b, t, i, now, err);
		now += entered_at(t, now);
	}
	close_batch(br);
	*end = now;
	return ret;
}

static void copy_event(struct batched_event *e, const struct rv_event *ev)
{
	memset(e, 0, sizeof(*e));
	if (ev->kind == RV_EVENT_TRACE_ERROR) {
		e->error = true;
		e->overflow = ev->error.overflow;
		e->message = ev->error.message ? ev->error.message : "unknown error";
		return;
	}
	e->kind = (uint8_t)ev->branch.kind;
	e->flags = (uint8_t)ev->branch.flags;
	e->from_ip = ev->branch.from.ip;
	e->from_sym = ev->branch.from.sym;
	e->from_start = ev->branch.from.sym_start;
	e->to_ip = ev->branch.to.ip;
	e->to_sym = ev->branch.to.sym;
	e->to_start = ev->branch.to.sym_start;
}

/* Keeps the branch ev in the batch (packed); `plain`: it brings no names
 * (add_branch's). Inline: half the events of a trace with timing are
 * batched. */
static inline __attribute__((always_inline)) int
batch_event(struct branch_state *br, const struct rv_event *ev, bool plain, struct rv_error *err)
{
	const struct rv_branch_end *from = &ev->branch.from, *to = &ev->branch.to;
	struct packed_event *p;
	bool extra;

	/* the room checked here, grown by a call only when full (the
	 * slots of calls taken early stay unwritten) */
	if (br->nr_batch >= br->cap_batch &&
	    rv_array_grow(&br->batch, &br->cap_batch, br->nr_batch, sizeof(*br->batch), 64))
		return builder_out_of_memory(err);
	p = &br->batch[br->nr_batch];
	*p = (struct packed_event){ .from_ip = from->ip,
				    .to_ip = to->ip,
				    .kind = (uint8_t)ev->branch.kind,
				    .flags = (uint8_t)ev->branch.flags };
	extra = (!plain && (from->sym || to->sym)) || from->sym_start || to->sym_start;
	if (extra) {
		if (br->nr_extra == br->cap_extra &&
		    rv_array_grow(&br->extra, &br->cap_extra, br->nr_extra, sizeof(*br->extra), 16))
			return builder_out_of_memory(err);
		br->extra[br->nr_extra] = (struct batched_extra){ .from_start = from->sym_start,
								  .to_start = to->sym_start,
								  .from_sym = from->sym,
								  .to_sym = to->sym };
		p->extra = (uint32_t)++br->nr_extra;
	}
	br->nr_batch++;
	return 0;
}

/* Notes the thread's clock: its stamps are times once two of them differ.
 * A trace without timing packets (a raw trace from a VM) stamps every event
 * alike, and its events only have an order. */
static void note_stamp(struct branch_state *br, uint64_t time)
{
	if (br->clock_runs)
		return;
	if (!br->stamped) {
		br->stamped = true;
		br->first_stamp = time;
	} else if (time != br->first_stamp) {
		br->clock_runs = true;
	}
}

/* Ends the batch before something at `time` that is no branch (a trace
 * error, the thread's end); *after is when that comes. The batch spreads up
 * to a later time; stamped with it, it is taken at that time, but for 1 ns
 * for each frame entered there, and *after follows them. Without a time of
 * its own (the thread's stamps never differ, or the batch was moved past
 * the stamp: a batch too long to hold, an error before it) the batch takes
 * 1 ns an event, as where no later time is known, and *after the
 * nanosecond after its last. */
static int flush_before(struct rv_builder *b, struct thread_state *t, uint64_t time,
			uint64_t *after, struct rv_error *err)
{
	struct branch_state *br = &t->br;
	int ret;

	*after = time;
	if (!br->batch_open)
		return 0;
	if (br->clock_runs && time > br->batch_time)
		return flush_batch(b, t, time - br->batch_time, err);
	if (br->clock_runs && time == br->batch_time)
		return flush_batch_at_stamp(b, t, after, err);
	ret = flush_batch(b, t, spread_until(br, br->batch_time), err);
	*after = br->last_time + 1;
	return ret;
}

/* A trace error is drawn at its own time, the last timing packet before it
 * (all the input says), and ends the batch (flush_before). What comes after
 * it at its time begins 1 ns later (see builder_add_branch). */
static int take_error(struct rv_builder *b, struct thread_state *t, const struct rv_event *ev,
		      struct rv_error *err)
{
	struct branch_state *br = &t->br;
	uint64_t now;
	struct batched_event e;
	int ret;

	note_stamp(br, ev->time);
	ret = flush_before(b, t, ev->time, &now, err);
	if (ret)
		return ret;
	copy_event(&e, ev);
	/* out of order (which the caller must not do): at the last time */
	return take(b, t, &e, now > br->last_time ? now : br->last_time, err);
}

/* builder_add_branch's way for a branch (no trace error) of thread t;
 * inline in both of its callers, a call of the builder's for each event
 * and one for a run of them, whose events are `plain`: the caller knows
 * they bring no names (builder_plain_branch), and the rules' ways for a
 * name are left out of its copy. */
static inline __attribute__((always_inline)) int add_branch(struct rv_builder *b,
							    struct thread_state *t,
							    const struct rv_event *ev, bool plain,
							    struct rv_error *err)
{
	struct branch_state *br = &t->br;
	uint64_t time = ev->time;
	/* the start goes with the name: without one the rules never read it */
	const char *to_sym = plain ? NULL : ev->branch.to.sym;
	uint64_t to_start = plain ? 0 : ev->branch.to.sym_start;
	struct batched_event one;
	uint64_t now; /* the batch's time, after the last error */
	bool call;
	int ret;

	note_stamp(br, time);
	call = takes_share();
	if (br->batch_open && time <= br->batch_time) {
		/* The batch's first event has the batch's time whatever comes
		 * after it: taken when it came, not copied, as is one that
		 * opens the batch (below). */
		if (br->nr_batch || br->taken_calls + call > 1)
			goto wait;
		now = br->batch_time;
	} else {
		/* mostly a batch whose only event was taken when it came:
		 * nothing to close (close_batch's fields are as it leaves
		 * them) but itself, which opens again at once */
		if (br->batch_open && br->nr_batch &&
		    (ret = flush_batch(b, t, spread_until(br, time), err)))
			return ret;
		br->batch_open = true;
		/* out of order (which the caller must not do): at the last time */
		now = time > br->last_time ? time : br->last_time;
		/* after an error at this time: 1 ns after it, so that the gap
		 * has a length (magic-trace #155), and the batch spreads from
		 * there. Every event of the batch is then after the error
		 * (take_time's rule, which the batch's events skip), as an
		 * error closes the batch before it is taken. */
		if (br->have_error && now <= br->error_time)
			now = br->error_time + 1;
		br->batch_time = now;
		br->taken_calls = 0;
	}
	note_last_time(b, now);
	br->taken_calls += call;
	/* take's way, on the event before it is copied */
	if (take_hot(b, t, (uint8_t)ev->branch.kind, (uint8_t)ev->branch.flags, ev->branch.to.ip,
		     to_sym, to_start, now, err, &ret))
		return ret;
	copy_event(&one, ev);
	return handle(b, t, &one, now, err);
wait: /* behind the batch's first event, for the batch's time */
	ret = early_call(t, ev, to_sym) ? take_early(b, t, ev->branch.to.ip, err)
					: batch_event(br, ev, plain, err);
	if (ret)
		return ret;
	if (br->nr_batch >= MAX_BATCH) {
		ret = flush_batch(b, t, spread_until(br, br->batch_time), err);
		/* the next event comes after the last nanosecond taken */
		br->last_time++;
		return ret;
	}
	return 0;
}

int builder_add_branch(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);

	if (!t)
		return builder_out_of_memory(err);
	if (ev->kind == RV_EVENT_TRACE_ERROR)
		return take_error(b, t, ev, err);
	return add_branch(b, t, ev, false, err);
}

int builder_add_branch_run(struct rv_builder *b, const struct rv_event *evs, size_t n,
			   size_t *taken, struct rv_error *err)
{
	/* one thread's: builder_thread's answer for the first is every one's;
	 * and builder_plain_branch's but for the base, set once for all */
	struct thread_state *t = builder_thread(b, evs[0].pid, evs[0].tid);
	const uint32_t tid = evs[0].tid;
	const struct rv_event *ev = evs, *end = evs + n;

	if (!t)
		return builder_out_of_memory(err);
	do {
		int ret = add_branch(b, t, ev, true, err);

		if (ret)
			return ret;
		/* both names in one test (plain branches have neither) */
	} while (++ev < end && ev->tid == tid && ev->kind == RV_EVENT_BRANCH &&
		 !((uintptr_t)ev->branch.from.sym | (uintptr_t)ev->branch.to.sym));
	*taken = (size_t)(ev - evs);
	return 0;
}

int builder_flush_branches(struct rv_builder *b, struct thread_state *t, struct rv_error *err)
{
	uint64_t after;

	return flush_before(b, t, t->br.batch_time, &after, err);
}

int builder_end_branches(struct rv_builder *b, struct thread_state *t, uint64_t end,
			 struct rv_error *err)
{
	struct branch_state *br = &t->br;
	struct step s = { .b = b, .t = t, .err = err };
	uint64_t after;
	int ret = flush_before(b, t, end, &after, err);

	if (ret)
		return ret;
	s.now = after > br->last_time ? after : br->last_time;
	if (s.now > b->stats.last_time)
		b->stats.last_time = s.now;
	if (br->in_gap) {
		struct pending_span gap = { .name = NAME_GAP,
					    .begin = br->gap_begin,
					    .end = s.now };

		br->in_gap = false;
		if (s.now > gap.begin) {
			ret = builder_write_span(b, t, &gap, err);
			if (ret)
				return ret;
		}
	}
	return close_all(&s);
}

int builder_begin_stack(struct rv_builder *b, struct thread_state *t, uint64_t now,
			struct rv_error *err)
{
	struct step s = { .b = b, .t = t, .now = now, .err = err };

	return t->br.active ? 0 : start_stack(&s);
}

void builder_free_branches(struct branch_state *br)
{
	free(br->extra);
	free(br->batch);
	for (size_t i = 0; i < br->cap_segs; i++)
		free(br->segs[i].orphans);
	free(br->segs);
}
