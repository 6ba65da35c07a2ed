/* builder.c: stacks to spans; see builder.h. */
#define RV_LOG_DOMAIN "builder"
#include "trace/builder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/callchain.h"
#include "trace/builder_internal.h"
#include "util/array.h"
#include "util/log.h"

/* Without switch records, a thread whose next sample comes more than this
 * many nominal intervals after its last was off the CPU in between (a
 * running thread is sampled every interval; a VM's timer may be a few late):
 * its stack ends one interval after its last sample. */
#define OFF_CPU_GAP_INTERVALS 4
/* A function span's arguments: address, file, line */
#define FUNCTION_ARGS 3

static size_t hash_u64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	return (size_t)v;
}

int rv_builder_new(struct rv_builder **out, struct rv_symbolizer *symbolizer,
		   struct rv_trace_writer *writer, struct rv_error *err)
{
	struct rv_builder *b = calloc(1, sizeof(*b));

	*out = NULL;
	if (!b)
		return rv_error_set(err, ENOMEM, "out of memory");
	b->symbolizer = symbolizer;
	b->writer = writer;
	rv_intern_init(&b->names);
	b->cap_threads = 64;
	b->threads = calloc(b->cap_threads, sizeof(*b->threads));
	b->cap_self = 1024;
	b->self = calloc(b->cap_self, sizeof(*b->self));
	b->self_generation = 1;
	b->epoch = 1;
	if (!b->threads || !b->self) {
		rv_builder_free(b);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	*out = b;
	return 0;
}

/* ---- tables ---- */

static struct thread_state *find_slot(struct thread_state *table, size_t cap, uint32_t tid)
{
	size_t i = hash_u64(tid) & (cap - 1);

	while (table[i].used && table[i].tid != tid)
		i = (i + 1) & (cap - 1);
	return &table[i];
}

/* builder_thread's way past the thread of the last event. */
struct thread_state *builder_thread_slow(struct rv_builder *b, uint32_t pid, uint32_t tid)
{
	struct thread_state *t;

	t = find_slot(b->threads, b->cap_threads, tid);
	if (t->used)
		return b->last_thread = t;
	b->last_thread = NULL;
	if ((b->nr_threads + 1) * 2 > b->cap_threads) {
		size_t cap = b->cap_threads * 2;
		struct thread_state *grown = calloc(cap, sizeof(*grown));

		if (!grown)
			return NULL;
		for (size_t i = 0; i < b->cap_threads; i++)
			if (b->threads[i].used)
				*find_slot(grown, cap, b->threads[i].tid) = b->threads[i];
		free(b->threads);
		b->threads = grown;
		b->cap_threads = cap;
		t = find_slot(b->threads, b->cap_threads, tid);
	}
	memset(t, 0, sizeof(*t));
	t->used = true;
	t->pid = pid;
	t->tid = tid;
	b->nr_threads++;
	return b->last_thread = t;
}

struct thread_state *builder_find_thread(struct rv_builder *b, uint32_t tid)
{
	struct thread_state *t = find_slot(b->threads, b->cap_threads, tid);

	return t->used ? t : NULL;
}

/* The function's slot in the self-time table, added if new; NULL when out
 * of memory. */
static struct self_time_slot *self_slot(struct rv_builder *b, const char *name)
{
	size_t i;

	if ((b->nr_self + 1) * 2 > b->cap_self) {
		size_t cap = b->cap_self * 2;
		struct self_time_slot *grown = calloc(cap, sizeof(*grown));

		if (!grown)
			return NULL;
		for (size_t j = 0; j < b->cap_self; j++) {
			if (!b->self[j].name)
				continue;
			i = hash_u64((uintptr_t)b->self[j].name) & (cap - 1);
			while (grown[i].name)
				i = (i + 1) & (cap - 1);
			grown[i] = b->self[j];
		}
		free(b->self);
		b->self = grown;
		b->cap_self = cap;
		b->self_generation++;
	}
	i = hash_u64((uintptr_t)name) & (b->cap_self - 1);
	while (b->self[i].name && b->self[i].name != name)
		i = (i + 1) & (b->cap_self - 1);
	if (!b->self[i].name) {
		b->self[i].name = name;
		b->nr_self++;
	}
	return &b->self[i];
}

int builder_add_self_time(struct rv_builder *b, const char *name, uint64_t ns)
{
	struct self_time_slot *slot = self_slot(b, name);

	if (!slot)
		return -ENOMEM;
	slot->ns += ns;
	return 0;
}

int builder_frame_self_time_slow(struct rv_builder *b, struct open_frame *f, uint64_t ns)
{
	struct self_time_slot *slot = self_slot(b, f->name);
	const size_t at = builder_cache_slot((uintptr_t)f->name);

	if (!slot)
		return -ENOMEM;
	b->self_memo[at].name = f->name;
	b->self_memo[at].slot = (size_t)(slot - b->self);
	b->self_memo[at].generation = b->self_generation;
	f->self_slot = b->self_memo[at].slot;
	f->self_generation = b->self_generation;
	slot->ns += ns;
	return 0;
}

int builder_mark_kernel(struct rv_builder *b, const char *name)
{
	struct self_time_slot *slot = self_slot(b, name);

	if (!slot)
		return -ENOMEM;
	slot->kernel = true;
	return 0;
}

int builder_count_call(struct rv_builder *b, const char *name)
{
	struct self_time_slot *slot = self_slot(b, name);

	if (!slot)
		return -ENOMEM;
	slot->calls++;
	return 0;
}

/* ---- writing spans ---- */

/* builder_ensure_track's way when the track's name is not written. */
int builder_name_track(struct rv_builder *b, struct thread_state *t, struct rv_error *err)
{
	char track[96];
	int ret;

	struct thread_state *main_thread;

	main_thread = t->tid == t->pid ? t : find_slot(b->threads, b->cap_threads, t->pid);
	if (!main_thread->used)
		main_thread = NULL;
	/* A new thread carries its process's name until it renames itself (the
	 * kernel reports COMM only for exec and renames). */
	if (!t->name[0] && main_thread)
		snprintf(t->name, sizeof(t->name), "%s", main_thread->name);
	snprintf(track, sizeof(track), "%s [%u/%u]", t->name[0] ? t->name : "?", t->pid, t->tid);
	/* Name the process too, even when its main thread never ran while sampled. */
	if (!main_thread || !main_thread->process_named) {
		const char *process =
			main_thread && main_thread->name[0] ? main_thread->name : t->name;

		ret = rv_trace_writer_process(b->writer, t->pid, process[0] ? process : "?", err);
		if (ret)
			return ret;
		if (main_thread)
			main_thread->process_named = true;
	}
	ret = rv_trace_writer_thread(b->writer, t->pid, t->tid, track, err);
	if (ret)
		return ret;
	t->named = true;
	if (!t->counted) {
		t->counted = true;
		b->stats.threads++;
	}
	return 0;
}

/* magic-trace's arguments of a function's span: its address, and where it
 * is in the source when DWARF says (not magic-trace's "col": the column of
 * a function's first instruction is its opening brace's, and would cost
 * every span 8 more bytes). The strings are the symbolizer's (the FXT
 * writer interns them: a file's name is written once). */
static size_t function_args(const struct pending_span *span, struct rv_arg *args)
{
	size_t n = 0;

	args[n++] = (struct rv_arg){ .name = "address", .kind = RV_ARG_POINTER, .u = span->addr };
	if (!span->file)
		return n;
	args[n++] = (struct rv_arg){ .name = "file", .kind = RV_ARG_STRING, .s = span->file };
	args[n++] = (struct rv_arg){ .name = "line", .kind = RV_ARG_INT, .i = span->line };
	return n;
}

int builder_write_span(struct rv_builder *b, const struct thread_state *t,
		       const struct pending_span *span, struct rv_error *err)
{
	struct rv_arg args[1 + FUNCTION_ARGS + SPAN_MAX_ARGS];
	size_t n = 0;

	if (!span->inferred && !span->args.nr)
		return builder_write_function_span(b, t, span->name, span->addr, span->file,
						   span->line, span->kernel, span->begin, span->end,
						   span->depth, err);
	if (span->addr)
		n += function_args(span, args);
	if (span->inferred)
		args[n++] = (struct rv_arg){ .name = "inferred_start_time",
					     .kind = RV_ARG_STRING,
					     .s = "true" };
	for (size_t i = 0; i < span->args.nr && i < SPAN_MAX_ARGS; i++, n++) {
		args[n].name = span->args.name[i];
		switch ((enum rv_event_arg_kind)span->args.kind[i]) {
		case RV_EVENT_ARG_INT:
			args[n].kind = RV_ARG_INT;
			args[n].i = (int64_t)span->args.value[i];
			break;
		case RV_EVENT_ARG_HEX:
			args[n].kind = RV_ARG_POINTER;
			args[n].u = span->args.value[i];
			break;
		default:
			args[n].kind = RV_ARG_UINT;
			args[n].u = span->args.value[i];
			break;
		}
	}
	b->stats.spans++;
	/* Every string of a span outlives the writer's use of it, as
	 * rv_trace_writer_interned_span requires: the symbolizer's (freed after
	 * the trace is written), the builder's pool's, or a literal (the
	 * events' argument names, events.h). */
	return rv_trace_writer_interned_span(
		b->writer, t->pid, t->tid, span->kernel ? RV_TRACE_CATEGORY_KERNEL : NULL,
		span->name, builder_rel(b, span->begin), builder_rel(b, span->end), span->depth,
		n ? args : NULL, n, err);
}

static int append_pending(struct pending_span **list, size_t *nr, size_t *cap,
			  const struct pending_span *span)
{
	if (*nr == *cap) {
		size_t grown_cap = *cap ? *cap * 2 : 4;
		struct pending_span *grown = realloc(*list, grown_cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		*list = grown;
		*cap = grown_cap;
	}
	(*list)[(*nr)++] = *span;
	return 0;
}

/* Every span in a held list began when its holder did, so a span and what it
 * held always go to the same place, in order:
 * - the bottom frame of a branch stack that began at the stack's create_time
 *   becomes an orphan: a frame inferred to have begun then may still be pushed
 *   under it (a return above the first frame), and must be written first;
 * - a span that began with the frame below it is held by that frame;
 * - anything else is written now. */
int builder_settle(struct rv_builder *b, struct thread_state *t, struct pending_span *span,
		   const struct pending_span *held, size_t nr_held, size_t pos,
		   struct rv_error *err)
{
	struct segment *seg = t->br.nr_segs ? &t->br.segs[t->br.nr_segs - 1] : NULL;
	int ret = 0;

	span->depth = builder_depth_of(pos);

	if (builder_written_now(t, span->begin, pos)) {
		ret = builder_write_span(b, t, span, err);
		for (size_t i = 0; !ret && i < nr_held; i++)
			ret = builder_write_span(b, t, &held[i], err);
		return ret;
	}
	if (seg && pos == seg->base && span->begin == seg->create_time) {
		ret = append_pending(&seg->orphans, &seg->nr_orphans, &seg->cap_orphans, span);
		for (size_t i = 0; !ret && i < nr_held; i++)
			ret = append_pending(&seg->orphans, &seg->nr_orphans, &seg->cap_orphans,
					     &held[i]);
	} else {
		struct open_frame *parent = &t->stack[pos - 1];

		ret = append_pending(&parent->held, &parent->nr_held, &parent->cap_held, span);
		for (size_t i = 0; !ret && i < nr_held; i++)
			ret = append_pending(&parent->held, &parent->nr_held, &parent->cap_held,
					     &held[i]);
	}
	return ret ? rv_error_set(err, ENOMEM, "out of memory") : 0;
}

int builder_close_top_args(struct rv_builder *b, struct thread_state *t, uint64_t end,
			   const struct span_args *args, struct rv_error *err)
{
	struct open_frame *f = &t->stack[--t->depth];
	struct pending_span span;
	int ret;

	/* A placeholder stands for untraced time; with none ("[returned]"
	 * between two events at one time) it has nothing to show, and where
	 * it would be drawn is not where it is: at its parent's end Perfetto
	 * takes it for the parent's next sibling (builder.h). */
	if ((f->flags & FRAME_PLACEHOLDER) && end == f->begin && !f->nr_held)
		return 0;
	/* Most frames: a function's (or a placeholder), written now with
	 * nothing it held, and no pending span to make of it. The same rule
	 * as builder_close_top's inline way (builder_internal.h), which leaves
	 * placeholders here: keep the two alike. */
	if (!args && !f->nr_held && !(f->flags & FRAME_INFERRED) &&
	    builder_written_now(t, f->begin, t->depth))
		return builder_write_function_span(b, t, f->name, f->addr, f->file, f->line,
						   f->flags & FRAME_KERNEL, f->begin, end,
						   builder_depth_of(t->depth), err);

	/* Filled field by field: the argument arrays stay untouched (the hot
	 * path of branches has none). */
	span.name = f->name;
	span.addr = f->addr;
	span.file = f->file;
	span.line = f->line;
	span.begin = f->begin;
	span.end = end;
	span.inferred = f->flags & FRAME_INFERRED;
	span.kernel = f->flags & FRAME_KERNEL;
	if (args)
		span.args = *args;
	else
		span.args.nr = 0;
	ret = builder_settle(b, t, &span, f->held, f->nr_held, t->depth, err);
	f->nr_held = 0;
	return ret;
}

void builder_source(struct rv_builder *b, const struct thread_state *t, struct pending_span *span)
{
	builder_source_at(b, t->pid, span->addr, &span->file, &span->line);
}

void builder_source_slow(struct rv_builder *b, struct builder_source_entry *e, uint32_t pid,
			 uint64_t addr)
{
	struct rv_source src;

	e->file = NULL;
	e->line = 0;
	if (rv_symbolizer_source(b->symbolizer, pid, addr, &src)) {
		e->file = src.file;
		e->line = src.line;
	}
	e->addr = addr;
	e->pid = pid;
	e->epoch = b->epoch;
}

int builder_grow_stack(struct thread_state *t)
{
	size_t cap = t->cap ? t->cap * 2 : 32;
	struct open_frame *grown = realloc(t->stack, cap * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	t->stack = grown;
	t->cap = cap;
	return 0;
}

/* Closes the thread's last sample: its leaf gets the time until this sample
 * as self time. A gap of more than twice the nominal interval means the thread
 * was off the CPU (sampling only sees running threads), so then only the
 * nominal interval counts: self time is time on the CPU. */
static int account_previous(struct rv_builder *b, struct thread_state *t, uint64_t now)
{
	uint64_t elapsed;

	if (!t->has_sample || !t->last_leaf)
		return 0;
	elapsed = now > t->last_time ? now - t->last_time : 0;
	if (elapsed > 2 * t->last_interval)
		elapsed = t->last_interval;
	return builder_add_self_time(b, t->last_leaf, elapsed);
}

/* The frames a thread has open, root first: its stack, or, back on the CPU
 * before its first sample, the frames it left (resume_stack begins again
 * those the sample shares with them). */
static bool opens_left(const struct thread_state *t)
{
	return !t->depth && t->resumed_at && t->nr_left;
}

static size_t open_depth(const struct thread_state *t)
{
	return opens_left(t) ? t->nr_left : t->depth;
}

static uint64_t open_identity(const struct thread_state *t, size_t d)
{
	return opens_left(t) ? t->left_stack[d].identity : t->stack[d].identity;
}

static const char *open_name(const struct thread_state *t, size_t d)
{
	return opens_left(t) ? t->left_stack[d].name : t->stack[d].name;
}

/* For a frame-pointer sample whose walk skipped the leaf's caller (the path
 * reads ..., grandcaller, leaf; the sample decoder tells from the code at the
 * leaf's IP): when the grandcaller is on the thread's open stack with a frame
 * above it that is not the leaf, that frame is the caller the walk could not
 * see, and it is put back. Returns 1 if a frame was inserted before the
 * leaf. */
static size_t restore_skipped_caller(struct rv_builder *b, const struct thread_state *t, size_t n)
{
	uint64_t grandcaller = b->path[n - 2].identity;
	size_t depth, open = open_depth(t);

	if (open < 2 || !b->path[n - 1].known)
		return 0;
	for (depth = open - 1; depth > 0; depth--)
		if (open_identity(t, depth - 1) == grandcaller)
			break;
	if (depth == 0 || open_identity(t, depth) == b->path[n - 1].identity)
		return 0;
	b->path[n] = b->path[n - 1];
	b->path[n - 1].identity = open_identity(t, depth);
	b->path[n - 1].name = open_name(t, depth);
	b->path[n - 1].known = true;
	b->stats.skipped_callers++;
	return 1;
}

/* A stack whose unwinding stopped early (a sample in a prologue or an
 * epilogue, where frame pointers or call frame information cannot see the
 * caller) starts in the middle of the real stack. When its root function is
 * on the thread's open stack but is not its root, the sample is taken to be
 * that stack cut short, and the missing outer frames are put back; otherwise
 * every such sample would end the outer spans and begin new ones. Returns how
 * many frames were put in front of the path. */
static size_t graft_truncated_stack(struct rv_builder *b, const struct thread_state *t, size_t n)
{
	size_t depth, open = open_depth(t);

	if (n == 0 || open == 0 || open_identity(t, 0) == b->path[0].identity)
		return 0;
	for (depth = open - 1; depth > 0; depth--)
		if (open_identity(t, depth) == b->path[0].identity)
			break;
	if (depth == 0)
		return 0;
	memmove(b->path + depth, b->path, n * sizeof(*b->path));
	for (size_t i = 0; i < depth; i++) {
		b->path[i].identity = open_identity(t, i);
		b->path[i].name = open_name(t, i);
		b->path[i].known = true;
	}
	b->stats.grafted++;
	return depth;
}

/* ---- off-CPU time of sampled threads (context switch records) ---- */

static int end_thread(struct rv_builder *b, struct thread_state *t, uint64_t end,
		      struct rv_error *err);

/* Writes the thread's open off-CPU span, ending at end. It sits on the
 * thread's track between its frames (which ended when it left), so nothing
 * nests in it or holds it back. */
static int write_off_cpu(struct rv_builder *b, struct thread_state *t, uint64_t end,
			 struct rv_error *err)
{
	struct rv_arg args[2];
	size_t n = 0;
	int ret;

	t->off_cpu = false;
	if (end < t->off_begin)
		end = t->off_begin;
	ret = builder_ensure_track(b, t, err);
	if (ret)
		return ret;
	if (t->off_has_state)
		args[n++] = (struct rv_arg){ .name = "state",
					     .kind = RV_ARG_POINTER,
					     .u = t->off_state };
	if (t->off_where)
		args[n++] = (struct rv_arg){ .name = "function",
					     .kind = RV_ARG_STRING,
					     .s = t->off_where };
	b->stats.spans++;
	b->stats.off_cpu_spans++;
	if (end > b->stats.last_time)
		b->stats.last_time = end;
	return rv_trace_writer_span(b->writer, t->pid, t->tid, t->off_name,
				    builder_rel(b, t->off_begin), builder_rel(b, end),
				    n ? args : NULL, n, err);
}

/* The thread left the CPU at ev's time: its last sample's leaf ran until then
 * (self time), its frames end then (and are remembered for its return; after
 * a run too short for a sample, the ones remembered before stay), and an
 * off-CPU span begins, named by ev,
 * when the trace shows the thread (it has been sampled) and it ran since it
 * last left. */
static int leave_cpu(struct rv_builder *b, struct thread_state *t, const struct rv_event *ev,
		     struct rv_error *err)
{
	uint64_t now = ev->time;
	int ret;

	if (t->off_cpu) {
		ret = write_off_cpu(b, t, now, err); /* its switch in was not recorded */
		if (ret)
			return ret;
	}
	if (!t->resumed_at) {
		/* (a run without a sample leaves the stack it left before: the
		 * thread is still in it, as far as the trace knows) */
		t->nr_left = 0;
		t->off_where = NULL;
	}
	t->resumed_at = 0;
	if (t->has_sample) {
		if (now < t->last_time)
			now = t->last_time;
		if (t->last_leaf && builder_add_self_time(b, t->last_leaf, now - t->last_time))
			return rv_error_set(err, ENOMEM, "out of memory");
		if (t->depth && rv_array_reserve(&t->left_stack, &t->cap_left, t->depth,
						 sizeof(*t->left_stack), 32))
			return rv_error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < t->depth; i++)
			t->left_stack[i] =
				(struct left_frame){ t->stack[i].identity, t->stack[i].name };
		t->nr_left = t->depth;
		t->off_where = t->depth ? t->stack[t->depth - 1].name : NULL;
		while (t->depth) {
			ret = builder_close_top(b, t, now, err);
			if (ret)
				return ret;
		}
		t->has_sample = false;
		t->last_leaf = NULL;
		if (now > b->stats.last_time)
			b->stats.last_time = now;
	}
	if (t->sampled && t->ran) {
		t->off_cpu = true;
		t->off_begin = now;
		t->off_name = ev->kernel.name ? ev->kernel.name : "[off-cpu]";
		t->off_has_state = false;
		for (size_t i = 0; i < ev->kernel.nr_args; i++)
			if (ev->kernel.args[i].name && !strcmp(ev->kernel.args[i].name, "state")) {
				t->off_state = ev->kernel.args[i].value;
				t->off_has_state = true;
			}
	}
	t->ran = false;
	return 0;
}

/* The thread came back to the CPU at now: its off-CPU span ends, and its next
 * sample's frames that were open when it left begin now. A stack still open
 * (its switch out was not recorded) ends one interval after its last
 * sample. */
static int return_to_cpu(struct rv_builder *b, struct thread_state *t, uint64_t now,
			 struct rv_error *err)
{
	int ret;

	if (t->off_cpu) {
		ret = write_off_cpu(b, t, now, err);
		if (ret)
			return ret;
	}
	if (t->has_sample && now > t->last_time + t->last_interval) {
		ret = end_thread(b, t, t->last_time + t->last_interval, err);
		if (ret)
			return ret;
	}
	t->ran = true;
	if (!t->has_sample)
		t->resumed_at = now;
	return 0;
}

/* The first sample after the thread came back (its stack is empty, n
 * frames named in b->path): the frames it shares from the root with the
 * stack it left are the ones it returned into, and begin when it came back;
 * the time until this sample is its leaf's (self time, at most two
 * intervals, as between samples). The caller pushes the rest. */
static int resume_stack(struct rv_builder *b, struct thread_state *t, const struct rv_event *ev,
			size_t n, struct rv_error *err)
{
	uint64_t back = t->resumed_at, elapsed = ev->time > back ? ev->time - back : 0;
	size_t same = 0;

	t->resumed_at = 0;
	while (same < n && same < t->nr_left &&
	       t->left_stack[same].identity == b->path[same].identity)
		same++;
	t->nr_left = 0;
	for (size_t i = 0; i < same; i++)
		if (builder_push_frame(b, t, b->path[i].identity, b->path[i].name, back))
			return rv_error_set(err, ENOMEM, "out of memory");
	if (elapsed > 2 * ev->stack.interval_ns)
		elapsed = ev->stack.interval_ns;
	if (n && builder_add_self_time(b, b->path[n - 1].name, elapsed))
		return rv_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* What the thread's switches told before a window's end, a snapshot or its
 * exit: nothing after continues it (its frames do not resume from before,
 * and its switches draw nothing until it is sampled again). */
static void forget_switches(struct thread_state *t)
{
	t->sampled = false;
	t->resumed_at = 0;
	t->nr_left = 0;
}

static int on_off_cpu(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);

	if (!t)
		return rv_error_set(err, ENOMEM, "out of memory");
	if (ev->kernel.kind != RV_KERNEL_OFF_CPU)
		return 0;
	if (ev->kind == RV_EVENT_KERNEL_BEGIN)
		return leave_cpu(b, t, ev, err);
	return return_to_cpu(b, t, ev->time, err);
}

/* A stack the sample's copy cut (ev->stack.cut_bytes): its frames are the
 * inner end of the real stack, and its outermost frame is no root. It is
 * drawn under a "[stack cut: N KiB copied]" frame, which stands for the
 * frames the copy did not reach, and that frame under the callers the
 * thread's last whole stack had (t->callers: its user frames but the leaf,
 * see note_callers) as far as they are open (open_depth), and above the
 * first of them that runs the cut stack's outermost function (a recursion
 * goes on where it was open); or above an open [stack cut] frame when the
 * previous sample was cut too. So the open frames around it do not end, and
 * the cut stack makes no root of its own. A stack whose unwinding stopped
 * inside the copy (RV_STACK_UNWIND_STOPPED: a caller without call frame
 * information) is placed the same way under an "[unwinding stopped]" frame.
 * Returns the frames put in front of the path. */
static size_t place_cut_stack(struct rv_builder *b, const struct thread_state *t, size_t n,
			      uint32_t cut_bytes, bool *failed)
{
	size_t depth = open_depth(t), keep = 0;
	char name[64];
	const char *kept;
	bool after_cut = false;

	if (cut_bytes == RV_STACK_UNWIND_STOPPED)
		snprintf(name, sizeof(name), "[unwinding stopped]");
	else if (cut_bytes % 1024 == 0)
		snprintf(name, sizeof(name), "[stack cut: %u KiB copied]", cut_bytes / 1024);
	else
		snprintf(name, sizeof(name), "[stack cut: %.1f KiB copied]", cut_bytes / 1024.0);
	kept = rv_intern(&b->names, name);
	if (!kept) {
		*failed = true;
		return 0;
	}
	for (size_t d = 0; d < depth && !after_cut; d++) {
		uint32_t bytes;

		if (rv_stack_cut_parse(open_identity(t, d), &bytes)) {
			keep = d;
			after_cut = true;
		}
	}
	if (!after_cut)
		while (keep < depth && keep < t->nr_callers &&
		       open_identity(t, keep) == t->callers[keep] &&
		       (!n || t->callers[keep] != b->path[0].identity))
			keep++;
	memmove(b->path + keep + 1, b->path, n * sizeof(*b->path));
	for (size_t i = 0; i < keep; i++) {
		b->path[i].identity = open_identity(t, i);
		b->path[i].name = open_name(t, i);
		b->path[i].known = true;
	}
	b->path[keep].identity = rv_stack_cut_marker(cut_bytes);
	b->path[keep].name = kept;
	b->path[keep].known = false;
	if (cut_bytes == RV_STACK_UNWIND_STOPPED)
		b->stats.stacks_stopped++;
	else
		b->stats.stacks_cut++;
	return keep + 1;
}

/* A whole stack (path[0..n), leaf last, its first nr_user frames user
 * ones): its user frames but the leaf are the thread's callers now, unless
 * its user frames are the callers' first ones (a sample in main itself
 * leaves main among the callers). */
static int note_callers(struct thread_state *t, const struct rv_builder *b, size_t nr_user)
{
	size_t nr = nr_user ? nr_user - 1 : 0, same = 0;

	while (same < nr_user && same < t->nr_callers && t->callers[same] == b->path[same].identity)
		same++;
	if (nr_user && same == nr_user)
		return 0;

	if (nr > t->cap_callers) {
		uint64_t *grown = realloc(t->callers, nr * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->callers = grown;
		t->cap_callers = nr;
	}
	for (size_t i = 0; i < nr; i++)
		t->callers[i] = b->path[i].identity;
	t->nr_callers = nr;
	return 0;
}

static int on_stack(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);
	size_t n = ev->stack.nr_frames, common = 0;
	struct rv_event late;
	int ret;

	if (!t)
		return rv_error_set(err, ENOMEM, "out of memory");
	if (t->has_sample && ev->time < t->last_time) {
		/* A sample that reached the capture after later ones (its CPU
		 * was stopped between stamping and writing it, which a VM's
		 * vCPU can be for milliseconds): taken at the thread's last
		 * time, so that spans still nest. */
		late = *ev;
		late.time = t->last_time;
		ev = &late;
		b->stats.late_samples++;
	}
	if (t->br.batch_open) {
		ret = builder_flush_branches(b, t, err);
		if (ret)
			return ret;
	}
	ret = builder_ensure_track(b, t, err);
	if (ret)
		return ret;
	if (t->off_cpu) {
		/* running again, though its switch in was not recorded */
		ret = return_to_cpu(b, t, ev->time, err);
		if (ret)
			return ret;
	}
	if (!ev->stack.switches_recorded && t->has_sample &&
	    ev->time - t->last_time > OFF_CPU_GAP_INTERVALS * t->last_interval) {
		ret = end_thread(b, t, t->last_time + t->last_interval, err);
		if (ret)
			return ret;
		b->stats.gaps_ended++;
	}
	/* room for the frames a cut stack or a graft puts in front */
	if (n + open_depth(t) + 2 > b->cap_path) {
		void *grown = realloc(b->path, (n + open_depth(t) + 2) * sizeof(*b->path));

		if (!grown)
			return rv_error_set(err, ENOMEM, "out of memory");
		b->path = grown;
		b->cap_path = n + open_depth(t) + 2;
	}
	/* Name the frames, root first. */
	for (size_t i = 0; i < n; i++) {
		const struct rv_frame *f = &ev->stack.frames[n - 1 - i];
		uint64_t lookup = f->is_ip || f->addr == 0 ? f->addr : f->addr - 1;
		struct rv_symbol sym;

		if (f->sym) {
			/* named by the producer (text from another machine) */
			const char *kept = rv_intern(&b->names, f->sym);

			if (!kept)
				return rv_error_set(err, ENOMEM, "out of memory");
			b->path[i].identity = BUILDER_NAME_TAG | (uintptr_t)kept |
					      (f->kernel ? BUILDER_NAME_KERNEL : 0);
			b->path[i].name = kept;
			b->path[i].known = strcmp(kept, "[unknown]") != 0;
			continue;
		}
		rv_symbolizer_lookup(b->symbolizer, ev->pid, lookup, &sym);
		b->path[i].identity = sym.known ? sym.start : f->addr;
		b->path[i].name = sym.name;
		b->path[i].known = sym.known;
	}
	if (ev->stack.cut_bytes) {
		bool failed = false;

		n += place_cut_stack(b, t, n, ev->stack.cut_bytes, &failed);
		if (failed)
			return rv_error_set(err, ENOMEM, "out of memory");
	} else {
		size_t nr_user = 0, added;

		for (size_t i = 0; i < n; i++)
			nr_user += !ev->stack.frames[i].kernel;
		if (ev->stack.caller_unseen && n >= 2 && !ev->stack.frames[0].kernel) {
			added = restore_skipped_caller(b, t, n);
			n += added;
			nr_user += added;
		}
		added = graft_truncated_stack(b, t, n);
		n += added;
		nr_user += added;
		if (note_callers(t, b, nr_user))
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	while (common < n && common < t->depth &&
	       t->stack[common].identity == b->path[common].identity)
		common++;
	while (t->depth > common) {
		ret = builder_close_top(b, t, ev->time, err);
		if (ret)
			return ret;
	}
	if (t->resumed_at && t->depth == 0) {
		ret = resume_stack(b, t, ev, n, err);
		if (ret)
			return ret;
		common = t->depth;
	}
	for (size_t i = common; i < n; i++) {
		if (builder_push_frame(b, t, b->path[i].identity, b->path[i].name, ev->time))
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	if (account_previous(b, t, ev->time))
		return rv_error_set(err, ENOMEM, "out of memory");
	t->sampled = true;
	t->ran = true;
	t->has_sample = true;
	t->last_time = ev->time;
	t->last_interval = ev->stack.interval_ns;
	t->last_leaf = n ? b->path[n - 1].name : NULL;
	if (n && ev->stack.frames[0].kernel && builder_mark_kernel(b, t->last_leaf))
		return rv_error_set(err, ENOMEM, "out of memory");
	b->stats.samples++;
	if (ev->time > b->stats.last_time)
		b->stats.last_time = ev->time;
	return 0;
}

static int end_thread(struct rv_builder *b, struct thread_state *t, uint64_t end,
		      struct rv_error *err)
{
	int ret;

	t->resumed_at = 0;
	t->nr_left = 0;
	if (t->off_cpu) {
		ret = write_off_cpu(b, t, end, err);
		if (ret)
			return ret;
	}
	if (t->has_sample) {
		if (account_previous(b, t, end))
			return rv_error_set(err, ENOMEM, "out of memory");
		if (end > b->stats.last_time)
			b->stats.last_time = end;
	}
	while (t->depth) {
		ret = builder_close_top(b, t, end, err);
		if (ret)
			return ret;
	}
	t->has_sample = false;
	t->last_leaf = NULL;
	return 0;
}

static bool has_branches(const struct thread_state *t)
{
	return t->br.active || t->br.batch_open || t->br.in_gap;
}

void rv_builder_set_base(struct rv_builder *b, uint64_t time)
{
	b->base = time;
	b->have_base = true;
	b->stats.first_time = time;
}

/* Ends the sampled stacks and the exact calls of every thread at `time` (a
 * snapshot's end: the next samples or calls start a new segment, and continue
 * nothing). */
static int end_segment(struct rv_builder *b, uint64_t time, struct rv_error *err)
{
	for (size_t i = 0; i < b->cap_threads; i++) {
		struct thread_state *t = &b->threads[i];
		int ret;

		if (!t->used)
			continue;
		if (t->exact && has_branches(t)) {
			ret = builder_end_calls(b, t, time, err);
			if (ret)
				return ret;
		}
		forget_switches(t); /* the next segment starts afresh */
		if (!t->has_sample && !t->off_cpu)
			continue;
		ret = end_thread(b, t, time > t->last_time ? time : t->last_time, err);
		if (ret)
			return ret;
	}
	b->stats.snapshots++;
	return 0;
}

/* A window is a span around what ran in it: its thread's sampled stack, or
 * its branch stacks, end with it (nothing comes between windows: the kernel
 * drops the samples, the PT decoder the branches of an ungated recording),
 * and the next window's trace starts afresh. A trigger hit is an instant. */
static int on_gate(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);
	char name[320];
	int ret;

	if (!t)
		return rv_error_set(err, ENOMEM, "out of memory");
	if (!b->have_base) {
		b->base = ev->kind == RV_EVENT_WINDOW && ev->time > ev->gate.duration_ns
				  ? ev->time - ev->gate.duration_ns
				  : ev->time;
		b->have_base = true;
		b->stats.first_time = b->base;
	}
	ret = builder_ensure_track(b, t, err);
	if (ret)
		return ret;
	if (ev->kind == RV_EVENT_WINDOW) {
		uint64_t begin =
			ev->time > ev->gate.duration_ns ? ev->time - ev->gate.duration_ns : 0;
		/* A sample taken while STOP's program ran (after the time it
		 * read) is in the window: the window ends after it, so that
		 * what it holds nests in it. */
		uint64_t end = t->has_sample && t->last_time > ev->time ? t->last_time : ev->time;
		bool exact = t->exact && t->br.active;

		if (has_branches(t) && t->br.last_time > end)
			end = t->br.last_time;
		/* Exact calls began no earlier than their stack: a window that
		 * says it began later (its mark is damaged) still holds them. */
		if (exact && t->br.segs[0].create_time < begin)
			begin = t->br.segs[0].create_time;

		if (t->has_sample || t->off_cpu) {
			ret = end_thread(b, t, end, err);
			if (ret)
				return ret;
		}
		/* outside windows it shows again once sampled in one */
		forget_switches(t);
		if (has_branches(t) && !exact) {
			ret = builder_end_branches(b, t, end, err);
			if (ret)
				return ret;
		}
		snprintf(name, sizeof(name), "[window %s]", ev->gate.name);
		if (begin < b->base)
			begin = b->base;
		b->stats.windows++;
		b->stats.spans++;
		ret = rv_trace_writer_span(b->writer, t->pid, t->tid, name, builder_rel(b, begin),
					   builder_rel(b, end), NULL, 0, err);
		/* Exact calls end after the window is written: the spans that
		 * began with their stack (perhaps with the window) are still
		 * held (settle), and come after it. */
		if (!ret && has_branches(t) && t->exact)
			ret = builder_end_calls(b, t, end, err);
	} else {
		snprintf(name, sizeof(name), "[%s %s]",
			 ev->gate.snapshot ? "snapshot at" : "trigger", ev->gate.name);
		b->stats.triggers++;
		ret = rv_trace_writer_instant(b->writer, t->pid, t->tid, name,
					      builder_rel(b, ev->time), NULL, 0, err);
	}
	if (!ret && ev->gate.snapshot)
		ret = end_segment(b, ev->time, err);
	if (ev->time > b->stats.last_time)
		b->stats.last_time = ev->time;
	return ret;
}

/* Whether an event of this kind is the trace's content, whose first one is
 * the trace's zero (sideband and gate marks are not; a window sets the zero
 * to its beginning in on_gate). */
static bool sets_base(enum rv_event_kind kind)
{
	switch (kind) {
	case RV_EVENT_THREAD_NAME:
	case RV_EVENT_THREAD_START:
	case RV_EVENT_THREAD_EXIT:
	case RV_EVENT_LOST:
	case RV_EVENT_WINDOW:
	case RV_EVENT_TRIGGER:
		return false;
	default:
		return true;
	}
}

/* Kernel span arguments kept from one event (spans show SPAN_MAX_ARGS). */
#define KEPT_ARGS 8

/* A name the builder keeps: its own copy, so that the producer's may go.
 * False when memory ran out. */
static bool keep_name(struct rv_builder *b, const char **name)
{
	if (!*name)
		return true;
	*name = rv_intern(&b->names, *name);
	return *name != NULL;
}

/* ev with every producer's name that the builder keeps past this call
 * replaced by its own copy (in *copy, with the arguments in args). Events
 * without such names are handed back as they are. */
static const struct rv_event *keep_names(struct rv_builder *b, const struct rv_event *ev,
					 struct rv_event *copy, struct rv_event_arg *args)
{
	bool ok = true;

	switch (ev->kind) {
	case RV_EVENT_BRANCH:
		if (!ev->branch.from.sym && !ev->branch.to.sym)
			return ev;
		*copy = *ev;
		ok = keep_name(b, &copy->branch.from.sym) && keep_name(b, &copy->branch.to.sym);
		break;
	case RV_EVENT_CALL_ENTER:
	case RV_EVENT_CALL_EXIT:
		if (!ev->call.sym)
			return ev;
		*copy = *ev;
		ok = keep_name(b, &copy->call.sym);
		break;
	case RV_EVENT_KERNEL_BEGIN:
	case RV_EVENT_KERNEL_END:
		*copy = *ev;
		ok = keep_name(b, &copy->kernel.name);
		if (copy->kernel.nr_args > KEPT_ARGS)
			copy->kernel.nr_args = KEPT_ARGS;
		for (size_t i = 0; ok && i < copy->kernel.nr_args; i++) {
			args[i] = ev->kernel.args[i];
			ok = keep_name(b, &args[i].name);
		}
		copy->kernel.args = args;
		break;
	default:
		return ev;
	}
	return ok ? copy : NULL;
}

/* rv_builder_add's way for any event. */
static int add_event(struct rv_builder *b, const struct rv_event *event, struct rv_error *err)
{
	struct rv_event copy;
	struct rv_event_arg args[KEPT_ARGS];
	const struct rv_event *ev = keep_names(b, event, &copy, args);
	struct thread_state *t;
	int ret;

	if (!ev)
		return rv_error_set(err, ENOMEM, "out of memory keeping the trace's names");

	if (!b->have_base && sets_base(ev->kind)) {
		b->base = ev->time;
		b->have_base = true;
		b->stats.first_time = ev->time;
	}
	switch (ev->kind) {
	case RV_EVENT_STACK_SAMPLE:
		return on_stack(b, ev, err);
	case RV_EVENT_BRANCH:
	case RV_EVENT_TRACE_ERROR:
		return builder_add_branch(b, ev, err);
	case RV_EVENT_CALL_ENTER:
	case RV_EVENT_CALL_EXIT:
	case RV_EVENT_KERNEL_BEGIN:
	case RV_EVENT_KERNEL_END:
		if (ev->kernel.sampled)
			return on_off_cpu(b, ev, err);
		return builder_add_call(b, ev, err);
	case RV_EVENT_INSTANT:
		return builder_add_call(b, ev, err);
	case RV_EVENT_EXTRA:
		return builder_add_extra(b, ev, err);
	case RV_EVENT_THREAD_NAME:
		t = builder_thread(b, ev->pid, ev->tid);
		if (!t)
			return rv_error_set(err, ENOMEM, "out of memory");
		if (strcmp(t->name, ev->thread.name)) {
			snprintf(t->name, sizeof(t->name), "%s", ev->thread.name);
			t->named = false; /* rename the track if it was already written */
			if (t->tid == t->pid)
				t->process_named = false;
			if (t->counted)
				return builder_ensure_track(b, t, err);
		}
		return 0;
	case RV_EVENT_THREAD_START:
		/* known, for the threads the summary says were left out */
		return builder_thread(b, ev->pid, ev->tid)
			       ? 0
			       : rv_error_set(err, ENOMEM, "out of memory");
	case RV_EVENT_THREAD_EXIT:
		t = builder_find_thread(b, ev->tid);
		if (!t)
			return 0;
		if (has_branches(t)) {
			/* The thread ran until it exited. */
			ret = t->exact ? builder_end_calls(b, t, ev->time, err)
				       : builder_end_branches(b, t, ev->time, err);
			if (ret)
				return ret;
		}
		/* its last switch out, after the exit record, draws nothing */
		forget_switches(t);
		if (!t->has_sample)
			return t->off_cpu ? end_thread(b, t, ev->time, err) : 0;
		/* The thread ran until it exited, or at least through its last sample. */
		return end_thread(
			b, t, ev->time > t->last_time ? ev->time : t->last_time + t->last_interval,
			err);
	case RV_EVENT_LOST:
		b->stats.lost += ev->lost.count;
		return 0;
	case RV_EVENT_WINDOW:
	case RV_EVENT_TRIGGER:
		return on_gate(b, ev, err);
	}
	return 0;
}

/* A call of the builder's begins: the symbolizer's answers stay as they
 * are until it returns (builder.h), and no longer. */
static void begin_call(struct rv_builder *b)
{
	b->epoch++;
}

int rv_builder_add(struct rv_builder *b, const struct rv_event *event, struct rv_error *err)
{
	begin_call(b);
	if (builder_plain_branch(b, event))
		return builder_add_branch(b, event, err);
	return add_event(b, event, err);
}

int rv_builder_add_batch(struct rv_builder *b, const struct rv_event *events, size_t n,
			 struct rv_error *err)
{
	begin_call(b);
	for (size_t i = 0; i < n;) {
		/* a run of one thread's plain branches, in one call */
		size_t taken = 1;
		int ret = builder_plain_branch(b, &events[i])
				  ? builder_add_branch_run(b, events + i, n - i, &taken, err)
				  : add_event(b, &events[i], err);

		if (ret)
			return ret;
		i += taken;
	}
	return 0;
}

int rv_builder_finish(struct rv_builder *b, struct rv_error *err)
{
	begin_call(b);
	for (size_t i = 0; i < b->cap_threads; i++) {
		struct thread_state *t = &b->threads[i];
		int ret;

		if (!t->used)
			continue;
		if (has_branches(t)) {
			/* Open frames end with the thread's last event. */
			ret = t->exact ? builder_end_calls(b, t, t->br.last_time, err)
				       : builder_end_branches(b, t, t->br.last_time, err);
			if (ret)
				return ret;
		}
		if (!t->has_sample && t->off_cpu) {
			/* off the CPU until the trace's end */
			ret = end_thread(b, t, b->stats.last_time, err);
			if (ret)
				return ret;
		}
		if (!t->has_sample)
			continue;
		ret = end_thread(b, t, t->last_time + t->last_interval, err);
		if (ret)
			return ret;
	}
	return 0;
}

void rv_builder_stats(const struct rv_builder *b, struct rv_builder_stats *out)
{
	*out = b->stats;
	/* the functions' self times, summed here rather than at each one's
	 * sum (twice an event of branches) */
	out->self_ns = 0;
	for (size_t i = 0; b->self && i < b->cap_self; i++)
		out->self_ns += b->self[i].ns;
	out->untracked_threads = 0;
	for (size_t i = 0; b->threads && i < b->cap_threads; i++) {
		const struct thread_state *t = &b->threads[i];

		if (t->used && t->tid != t->pid && !t->counted)
			out->untracked_threads++;
	}
}

static int compare_pid(const void *x, const void *y)
{
	const uint32_t *a = x, *c = y;

	return *a < *c ? -1 : *a > *c;
}

size_t rv_builder_processes(const struct rv_builder *b, struct rv_builder_process *out, size_t n)
{
	uint32_t *pids = calloc(b->nr_threads ? b->nr_threads : 1, sizeof(*pids));
	size_t nr = 0, distinct = 0;

	if (!pids)
		return 0;
	for (size_t i = 0; i < b->cap_threads && nr < b->nr_threads; i++)
		if (b->threads[i].used && b->threads[i].counted)
			pids[nr++] = b->threads[i].pid;
	qsort(pids, nr, sizeof(*pids), compare_pid);
	for (size_t i = 0; i < nr; i++) {
		const struct thread_state *named = NULL, *t;

		if (distinct && pids[i] == pids[distinct - 1])
			continue;
		pids[distinct] = pids[i];
		if (distinct < n) {
			t = find_slot((struct thread_state *)b->threads, b->cap_threads, pids[i]);
			if (t->used && t->pid == pids[i] && t->name[0])
				named = t;
			for (size_t k = 0; !named && k < b->cap_threads; k++)
				if (b->threads[k].used && b->threads[k].counted &&
				    b->threads[k].pid == pids[i])
					named = &b->threads[k];
			out[distinct].pid = pids[i];
			snprintf(out[distinct].name, sizeof(out[distinct].name), "%s",
				 named && named->name[0] ? named->name : "?");
		}
		distinct++;
	}
	free(pids);
	return distinct;
}

static int compare_self(const void *x, const void *y)
{
	const struct rv_top_function *a = x, *c = y;

	if (a->self_ns != c->self_ns)
		return a->self_ns > c->self_ns ? -1 : 1;
	return strcmp(a->name, c->name);
}

static int compare_calls(const void *x, const void *y)
{
	const struct rv_top_function *a = x, *c = y;

	if (a->calls != c->calls)
		return a->calls > c->calls ? -1 : 1;
	return strcmp(a->name, c->name);
}

static size_t top_by(const struct rv_builder *b, struct rv_top_function *out, size_t n,
		     int (*compare)(const void *, const void *))
{
	struct rv_top_function *all = malloc((b->nr_self ? b->nr_self : 1) * sizeof(*all));
	size_t count = 0;

	if (!all)
		return 0;
	for (size_t i = 0; i < b->cap_self; i++)
		if (b->self[i].name)
			all[count++] =
				(struct rv_top_function){ b->self[i].name, b->self[i].ns,
							  b->self[i].calls, b->self[i].kernel };
	qsort(all, count, sizeof(*all), compare);
	if (count > n)
		count = n;
	memcpy(out, all, count * sizeof(*out));
	free(all);
	return count;
}

size_t rv_builder_top_functions(const struct rv_builder *b, struct rv_top_function *out, size_t n)
{
	return top_by(b, out, n, compare_self);
}

size_t rv_builder_most_called(const struct rv_builder *b, struct rv_top_function *out, size_t n)
{
	return top_by(b, out, n, compare_calls);
}

void rv_builder_free(struct rv_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->threads && i < b->cap_threads; i++) {
		struct thread_state *t = &b->threads[i];

		if (!t->used)
			continue;
		for (size_t j = 0; j < t->used_frames; j++)
			free(t->stack[j].held);
		free(t->stack);
		free(t->left_stack);
		free(t->callers);
		free(t->calls);
		builder_free_branches(&t->br);
	}
	free(b->threads);
	free(b->self);
	free(b->path);
	builder_free_syscall_sites(b);
	rv_intern_destroy(&b->names);
	free(b);
}
