/* builder_internal.h: what the trace builder's files share (private to
 * src/trace/): the per-thread state, the open stack of frames, and the one
 * place where an ended frame becomes a span (builder_close_top), which keeps
 * the writer's nesting invariant for every way of building stacks: sampled
 * stacks (builder.c), branches (branches.c) and exact calls (calls.c).
 *
 * Not a second contract: callers outside src/trace/ use builder.h only.
 */
#ifndef RV_TRACE_BUILDER_INTERNAL_H
#define RV_TRACE_BUILDER_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/callchain.h"
#include "util/intern.h"
#include "trace/builder.h"

/* The lowest kernel address on x86-64 (the canonical high half). */
#define BUILDER_KERNEL_START 0xffff800000000000ull

/* The identity of a frame its producer names (a sample's frame.sym, a
 * branch end's sym without a known start: perf script text): the builder's
 * pooled copy of the name with a tag no canonical x86-64 address and no
 * stack cut marker has (bits 47-62 are 0x8000), and bit 63 set for kernel
 * code. Names are pooled once, so equal names give equal identities. */
#define BUILDER_NAME_TAG    0x4000000000000000ull
#define BUILDER_NAME_KERNEL 0x8000000000000000ull
#define BUILDER_NAME_MASK   0x7fff800000000000ull

static inline bool builder_is_named(uint64_t identity)
{
	return (identity & BUILDER_NAME_MASK) == BUILDER_NAME_TAG;
}

/* Arguments of a span (the kernel spans of exact calls: a syscall's "nr" and
 * "ret"), as the events gave them; names live as long as the producer. */
#define SPAN_MAX_ARGS 2

struct span_args {
	uint8_t nr;
	uint8_t kind[SPAN_MAX_ARGS]; /* enum rv_event_arg_kind */
	const char *name[SPAN_MAX_ARGS];
	uint64_t value[SPAN_MAX_ARGS];
};

/* A span that has ended but waits to be written, because a frame that will
 * be written later began at the same time and must come first. */
struct pending_span {
	const char *name;
	uint64_t begin, end;
	/* the function's address and source (open_frame's), for the span's
	 * arguments; addr 0: none */
	uint64_t addr;
	const char *file; /* the symbolizer's; NULL: DWARF does not say */
	int32_t line;
	bool inferred; /* its begin is a guess: it was running when the trace began */
	bool kernel;   /* kernel code or a kernel placeholder: category "kernel" */
	struct span_args args;
	uint32_t depth; /* its place on the thread's stack when it ended (builder_settle
			 * sets it; 0 elsewhere): the JSON writer's order of equal times */
};

enum {
	FRAME_KNOWN = 1 << 0,	    /* a symbol covers the function: lo is its start */
	FRAME_PLACEHOLDER = 1 << 1, /* "[syscall]" etc.: untraced time, ends at TRACE_BEGIN */
	FRAME_INFERRED = 1 << 2,    /* begins at its stack's create_time, as a guess */
	FRAME_ASYNC = 1 << 3,	    /* entered without a call (a signal handler) */
	FRAME_OFF_CPU = 1 << 4,	    /* exact calls: the thread was off the CPU (no self time) */
	FRAME_KERNEL = 1 << 5,	    /* kernel code, or the kernel's time ("[syscall read]") */
};

struct open_frame {
	uint64_t identity; /* samples: the function's start (or the address itself) */
	const char *name;
	uint64_t begin;
	/* Branches: the function is [lo, hi); hi is 0 when its size is unknown,
	 * and then lo (the start) is compared. */
	uint64_t lo, hi;
	/* The function's address, which the span shows with its source line
	 * (builder_write_span): its start when a symbol covers it, else
	 * where it was seen (samples) or entered (exact calls); 0 for
	 * placeholders, kernel spans of exact calls and unknown code of
	 * branches (builder_push_frame sets it to the identity) */
	uint64_t addr;
	/* Where addr is in the source (rv_symbolizer_source), looked up when
	 * the frame is pushed, while the process's mappings are those it ran
	 * with (an exec may replace them before the span ends); NULL: unknown */
	const char *file;
	int32_t line;
	unsigned flags; /* FRAME_* */
	/* The writer's handle (rv_trace_writer_function) of its span's name,
	 * addr, file and line with no category, which a frame of user code
	 * entered by a call of the hot path has (hot_call); 0: none, its
	 * span is written field by field */
	uint32_t span_function;
	/* The function's slot in the self-time table, while self_generation
	 * is the table's (builder_frame_self_time); 0: not looked up */
	size_t self_slot;
	uint64_t self_generation;
	/* Closed descendants that began when this frame did, in the order they
	 * must be written after it: nr_held of held's cap_held. A push sets
	 * every field before held (branches.c copies them in one go), and
	 * held and cap_held only of a frame never used before. */
	size_t nr_held;
	struct pending_span *held;
	size_t cap_held;
};

/* One of a thread's call stacks in the frame array: the active one is the
 * last; the others were set aside by a syscall or an interrupt that the trace
 * followed into the kernel. */
struct segment {
	size_t base;	      /* index of its first frame in thread_state.stack */
	uint64_t create_time; /* when it started: the inferred begin of its bottom frames */
	/* The kernel runs on it: a kernel entry started it, or (the first
	 * segment) its bottom frame is kernel code. Execution seen in user
	 * space ends it. */
	bool kernel;
	/* Bottom frames that ended and began at create_time, waiting for a frame
	 * inferred to have begun then (their parent) or for the stack's end. */
	struct pending_span *orphans;
	size_t nr_orphans, cap_orphans;
};

/* A branch or trace error, as the rules take it. */
struct batched_event {
	uint64_t from_ip, to_ip, from_start, to_start;
	const char *from_sym, *to_sym;
	const char *message; /* trace error */
	uint8_t kind;	     /* enum rv_branch_kind */
	uint8_t flags;	     /* RV_BRANCH_* */
	bool error, overflow;
};

/* What a batched branch keeps beyond the addresses: perf script's symbols.
 * Most events (Intel PT decoded here) have none. */
struct batched_extra {
	uint64_t from_start, to_start;
	const char *from_sym, *to_sym;
};

/* A branch waiting for its batch's time to be known, in a third of the room:
 * a batch without timing packets runs to MAX_BATCH events, and is written
 * once and read once. Trace errors are never batched: each is taken at its
 * own time. */
struct packed_event {
	uint64_t from_ip, to_ip;
	uint32_t extra; /* 1 + index in branch_state.extra, or 0: none */
	uint8_t kind, flags;
};

struct branch_state {
	bool active;	     /* segs[0] exists: the thread has a stack since create_time */
	bool fresh;	     /* no event handled since the stack (re)started */
	bool in_gap;	     /* after a trace error, until the next event */
	bool have_error;     /* error_time is valid */
	uint64_t gap_begin;  /* the error's time */
	uint64_t error_time; /* of the last error (magic-trace #155) */
	uint64_t last_time;  /* of the last event handled */
	uint64_t since;	     /* when the top frame last changed, for self time */
	/* Whether the thread's stamps are times: a trace without timing
	 * packets stamps every event alike, and its stamps are only an order. */
	bool stamped;	      /* first_stamp is valid */
	bool clock_runs;      /* an event was stamped other than first_stamp */
	uint64_t first_stamp; /* the time of the thread's first branch or error */
	struct segment *segs;
	size_t nr_segs, cap_segs;
	/* the active segment, segs[nr_segs - 1] (NULL without one): asked of
	 * every event, and kept rather than found */
	struct segment *seg;
	/* The events sharing batch_time: those up to the first call were taken
	 * when they came, the rest wait in batch for the next time. */
	bool batch_open;
	uint64_t batch_time;
	/* calls among the events already taken (0 or 1); the batch's calls
	 * are these and its waiting events (every event takes a share:
	 * branches.c's takes_share) */
	size_t taken_calls;
	/* The first nr_early of the nr_batch waiting events are calls taken
	 * early, before their time is known (branches.c, early_call): the top
	 * nr_early frames, which wait for their begin, as the frame below
	 * them for its self time. The others are batch[nr_early, nr_batch). */
	size_t nr_early;
	struct packed_event *batch;
	size_t nr_batch, cap_batch;
	struct batched_extra *extra; /* of the batch's events that have any */
	size_t nr_extra, cap_extra;
};

/* What exact calls (calls.c) keep of each frame of a thread's stack, at the
 * frame's index in thread_state.stack. */
enum { CALL_FRAME_USER = -1 }; /* else the frame is a kernel span: its rv_kernel_kind */

struct call_frame {
	int kind;	     /* CALL_FRAME_USER, or an enum rv_kernel_kind */
	uint64_t addr;	     /* user: the function's entry, as the event gave it */
	uint64_t sp;	     /* user: the stack pointer at entry; 0 when not known */
	bool exits_at_sites; /* user: the event's call.exits_at_sites */
	/* user frames with sp: the nearest such frame below (-1: none), and
	 * the first frame of the run of such frames, up to this one, whose sp
	 * never grows from one to the next (one stack: a handler on a
	 * sigaltstack above it starts another run) */
	long below, run_start;
	struct span_args args; /* kernel: the BEGIN's arguments */
};

struct thread_state {
	uint32_t pid, tid;
	bool used;	    /* the hash slot is taken */
	bool named;	    /* the track's current name has been written */
	bool counted;	    /* counted in stats.threads */
	bool process_named; /* (main thread) the process's name has been written */
	char name[32];
	struct open_frame *stack;
	size_t depth, cap;
	/* stack[0, used_frames) have their held lists set (NULL or owned);
	 * the rest of cap is unwritten memory, so that growing the stack
	 * touches no page a frame does not use */
	size_t used_frames;
	uint64_t last_time; /* of the last sample */
	uint64_t last_interval;
	const char *last_leaf; /* leaf function of the last sample, for self time */
	bool has_sample;
	/* Sampled stacks and context switches (builder.c's off-CPU rules) */
	bool sampled;	      /* the thread has had a stack sample: its off-CPU spans show */
	bool ran;	      /* sampled or switched in since it last left the CPU */
	bool off_cpu;	      /* switched out: the off-CPU span below is open */
	uint64_t off_begin;   /* when it left */
	const char *off_name; /* the span's name (interned) */
	uint64_t off_state;   /* its "state" argument, when off_has_state */
	bool off_has_state;
	const char *off_where; /* the innermost function open when it left, or NULL */
	uint64_t resumed_at;   /* when it came back, until its next sample; 0: not pending */
	struct left_frame {
		uint64_t identity;
		const char *name;
	} * left_stack; /* the frames open when it left, root first */
	size_t nr_left, cap_left;
	/* Samples: the user frames but the leaf of the thread's last whole
	 * (not cut) stack, root first: a cut stack is drawn under them
	 * (trace/builder.c, place_cut_stack). */
	uint64_t *callers;
	size_t nr_callers, cap_callers;
	struct branch_state br;
	/* Exact calls: the thread's events are calls and kernel spans, its
	 * stack lives in br (one segment) with calls[i] beside stack[i]. */
	bool exact;
	struct call_frame *calls;
	size_t cap_calls;
};

struct self_time_slot {
	const char *name;
	uint64_t ns;
	uint64_t calls; /* exact calls entered */
	bool kernel;	/* kernel code (builder_mark_kernel) */
};

/* The symbolizer's answers the builder keeps for the rest of one call of
 * rv_builder_add, _add_batch or _finish (while epoch is the builder's),
 * when mappings cannot change (builder.h): a trace asks the same few
 * addresses over and over. Direct-mapped by address; epoch 0: empty. */
#define BUILDER_CACHE_SLOTS 256

static inline size_t builder_cache_slot(uint64_t addr)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 56) & (BUILDER_CACHE_SLOTS - 1);
}

/* rv_symbolizer_source's file and line of addr in pid */
struct builder_source_entry {
	uint64_t addr, epoch;
	uint32_t pid;
	int32_t line;
	const char *file;
};

/* rv_symbolizer_lookup's function at ip in pid, as branches.c's rules take
 * it (struct function there), in the frame a call of the hot path pushes
 * for it: its name, identity and range, and FRAME_KNOWN. Once such a frame
 * is pushed (frame_epoch), the rest of it but its begin and its held list:
 * its address and that address's source as builder_push_frame makes them
 * of its start, the writer's handle of its span (span_function) and its
 * slot in the self-time table, as self_memo knew it then (self_slot and
 * self_generation). */
struct builder_function_entry {
	uint64_t ip, epoch;
	uint64_t frame_epoch; /* the epoch the frame was made in; 0: not made */
	uint32_t pid;
	struct open_frame frame;
};

struct rv_builder {
	struct rv_symbolizer *symbolizer;
	uint64_t epoch; /* one more at each call of the builder; from 1 */
	struct builder_source_entry sources[BUILDER_CACHE_SLOTS];
	struct builder_function_entry functions[BUILDER_CACHE_SLOTS];
	struct rv_trace_writer *writer;
	/* copies of the names events bring (perf script's symbols, kernel span
	 * and argument names): they outlive the producer */
	struct rv_intern names;
	struct thread_state *threads;
	size_t nr_threads, cap_threads;	  /* open addressing, cap a power of two */
	struct thread_state *last_thread; /* the last one looked up, or NULL */
	struct self_time_slot *self;
	size_t nr_self, cap_self;
	uint64_t self_generation; /* one more each time the table is rebuilt; from 1 */
	/* The slots builder_frame_self_time looked up, by name (a pointer:
	 * names are the symbolizer's or pooled), while generation is the
	 * table's: a function called again finds its slot here. */
	struct {
		const char *name;
		size_t slot;
		uint64_t generation;
	} self_memo[BUILDER_CACHE_SLOTS];
	uint64_t base; /* the trace's zero on the capture clock */
	bool have_base;
	struct rv_builder_stats stats;
	/* --events samples drawn, by name (trace/extra.c) */
	struct rv_builder_extra_count extra[RV_BUILDER_MAX_EXTRA];
	size_t nr_extra;
	/* the current sample's functions, root first */
	struct {
		uint64_t identity;
		const char *name;
		bool known; /* identity is a symbol's start */
	} * path;
	size_t cap_path;
	/* The names of untraced system calls by where they were made
	 * (syscall_sites.c): open addressing, cap a power of two. */
	struct syscall_site {
		uint64_t ip; /* 0: the slot is free */
		uint32_t pid;
		const char *function; /* the symbolizer's name of the code read */
		const char *name;     /* "[syscall read]" (interned), or "[syscall]" */
	} * sites;
	size_t nr_sites, cap_sites;
};

/* The thread's state, created on first use; NULL when memory runs out.
 * Pointers into the table are valid until the next call (it may grow). */
struct thread_state *builder_thread_slow(struct rv_builder *b, uint32_t pid, uint32_t tid);

static inline struct thread_state *builder_thread(struct rv_builder *b, uint32_t pid, uint32_t tid)
{
	/* Events come in long runs of one thread. */
	if (b->last_thread && b->last_thread->tid == tid)
		return b->last_thread;
	return builder_thread_slow(b, pid, tid);
}

/* The thread's state if it exists, else NULL. */
struct thread_state *builder_find_thread(struct rv_builder *b, uint32_t tid);

/* A capture time as the trace's time (nanoseconds from its first event). */
static inline uint64_t builder_rel(const struct rv_builder *b, uint64_t time)
{
	return time > b->base ? time - b->base : 0;
}

/* Writes the thread's track (and process) names if not yet written
 * (builder_name_track writes them). */
int builder_name_track(struct rv_builder *b, struct thread_state *t, struct rv_error *err);

static inline int builder_ensure_track(struct rv_builder *b, struct thread_state *t,
				       struct rv_error *err)
{
	return t->named ? 0 : builder_name_track(b, t, err);
}

int builder_add_self_time(struct rv_builder *b, const char *name, uint64_t ns);

/* builder_frame_self_time when neither the frame nor self_memo knows the
 * function's slot. */
int builder_frame_self_time_slow(struct rv_builder *b, struct open_frame *f, uint64_t ns);

/* Whether self_memo knows the slot of the function of that name in the
 * self-time table as it is now; *slot is it. */
static inline bool builder_self_memo(const struct rv_builder *b, const char *name, size_t *slot)
{
	const size_t at = builder_cache_slot((uintptr_t)name);

	if (b->self_memo[at].name != name || b->self_memo[at].generation != b->self_generation)
		return false;
	*slot = b->self_memo[at].slot;
	return true;
}

/* builder_add_self_time for an open frame's function: its slot is looked up
 * once while the table stays as it is (inline: twice an event, and the
 * slot is almost always known). */
static inline int builder_frame_self_time(struct rv_builder *b, struct open_frame *f, uint64_t ns)
{
	if (f->self_generation != b->self_generation) {
		size_t slot;

		if (!builder_self_memo(b, f->name, &slot))
			return builder_frame_self_time_slow(b, f, ns);
		f->self_slot = slot;
		f->self_generation = b->self_generation;
	}
	b->self[f->self_slot].ns += ns;
	return 0;
}

/* One more exact call of the function (for rv_builder_most_called). */
int builder_count_call(struct rv_builder *b, const char *name);

/* The function is kernel code (a kernel frame of a sample, a kernel span,
 * PT in the kernel): the summary marks it. */
int builder_mark_kernel(struct rv_builder *b, const char *name);

/* Writes one span now (no nesting bookkeeping); inferred spans get the
 * argument inferred_start_time; a span with an address gets "address" and,
 * where DWARF has them, "file" and "line". */
int builder_write_span(struct rv_builder *b, const struct thread_state *t,
		       const struct pending_span *span, struct rv_error *err);

/* builder_source_at when the cache does not hold addr: asks the symbolizer
 * and fills e. */
void builder_source_slow(struct rv_builder *b, struct builder_source_entry *e, uint32_t pid,
			 uint64_t addr);

/* The file and line of user code at addr in process pid (rv_symbolizer_source's;
 * NULL and 0 when unknown, and for addr 0). */
static inline void builder_source_at(struct rv_builder *b, uint32_t pid, uint64_t addr,
				     const char **file, int32_t *line)
{
	struct builder_source_entry *e = &b->sources[builder_cache_slot(addr)];

	if (!addr) {
		*file = NULL;
		*line = 0;
		return;
	}
	if (e->addr != addr || e->pid != pid || e->epoch != b->epoch)
		builder_source_slow(b, e, pid, addr);
	*file = e->file;
	*line = e->line;
}

/* Doubles t's frame array; -ENOMEM. */
int builder_grow_stack(struct thread_state *t);

/* The address a frame of this identity shows (open_frame.addr): the
 * identity, but 0 for a stack-cut marker and a name. */
static inline uint64_t builder_frame_addr(uint64_t identity)
{
	uint32_t cut;

	return rv_stack_cut_parse(identity, &cut) || builder_is_named(identity) ? 0 : identity;
}

/* A frame on top of t's stack with only its held list set (empty, its
 * room kept from the frame that stood there); NULL on allocation failure. */
static inline struct open_frame *builder_new_frame(struct thread_state *t)
{
	struct open_frame *f;

	/* a frame used before is in the array, its room kept (used_frames
	 * never passes cap): one test where the stack was as deep before */
	if (t->depth >= t->used_frames) {
		if (t->depth == t->cap && builder_grow_stack(t))
			return NULL;
		t->stack[t->depth].held = NULL;
		t->stack[t->depth].cap_held = 0;
		t->used_frames = t->depth + 1;
	}
	f = &t->stack[t->depth++];
	f->nr_held = 0;
	return f;
}

/* Pushes a frame with every field given but the held list (empty) and the
 * self-time slot (not looked up); -ENOMEM on allocation failure. */
static inline int builder_push_frame_as(struct thread_state *t, uint64_t identity, const char *name,
					uint64_t begin, uint64_t lo, uint64_t hi, uint64_t addr,
					const char *file, int32_t line, unsigned flags,
					uint32_t span_function)
{
	struct open_frame *f = builder_new_frame(t);

	if (!f)
		return -ENOMEM;
	f->identity = identity;
	f->name = name;
	f->begin = begin;
	f->lo = lo;
	f->hi = hi;
	f->addr = addr;
	f->file = file;
	f->line = line;
	f->flags = flags;
	f->span_function = span_function;
	f->self_generation = 0;
	return 0;
}

/* Pushes a frame (no range; flags FRAME_KERNEL for an identity at a kernel
 * address, else 0; addr builder_frame_addr's, and its source line); -ENOMEM
 * on allocation failure. Inline: every call of a traced function pushes
 * one. */
static inline int builder_push_frame(struct rv_builder *b, struct thread_state *t,
				     uint64_t identity, const char *name, uint64_t begin)
{
	uint64_t addr = builder_frame_addr(identity);
	const char *file;
	int32_t line;

	builder_source_at(b, t->pid, addr, &file, &line);
	/* a sampled kernel frame (the identity is its address or start) */
	return builder_push_frame_as(t, identity, name, begin, 0, 0, addr, file, line,
				     builder_is_named(identity)
					     ? (identity & BUILDER_NAME_KERNEL ? FRAME_KERNEL : 0)
				     : identity >= BUILDER_KERNEL_START ? FRAME_KERNEL
									: 0,
				     0);
}

/* Fills span's file and line from its addr, in t's process (a span made
 * without a frame: an inferred one). rv_symbolizer_source caches them, so a
 * function costs one line lookup per process. */
void builder_source(struct rv_builder *b, const struct thread_state *t, struct pending_span *span);

static inline uint32_t builder_depth_of(size_t pos)
{
	return pos > UINT32_MAX ? UINT32_MAX : (uint32_t)pos;
}

/* builder_written_now with the frame at pos given, &t->stack[pos], whose
 * frame below is read only when pos > 0: the frame that a caller has at
 * hand (builder_close_top's), not found again. */
static inline bool builder_written_now_at(const struct thread_state *t, uint64_t begin, size_t pos,
					  const struct open_frame *at)
{
	if (t->br.nr_segs) {
		const struct segment *seg = t->br.seg;

		if (pos == seg->base && begin == seg->create_time)
			return false;
	}
	return !(pos > 0 && at[-1].begin == begin);
}

/* Whether a span that began at `begin` and stood at pos is written now:
 * neither an orphan nor held (see builder_settle). */
static inline bool builder_written_now(const struct thread_state *t, uint64_t begin, size_t pos)
{
	return builder_written_now_at(t, begin, pos, pos ? &t->stack[pos] : NULL);
}

/* builder_write_span of a span with no arguments but a function's (most
 * spans), which the writer has a way for. */
static inline int builder_write_function_span(struct rv_builder *b, const struct thread_state *t,
					      const char *name, uint64_t addr, const char *file,
					      int32_t line, bool kernel, uint64_t begin,
					      uint64_t end, uint32_t depth, struct rv_error *err)
{
	struct rv_function_span fs = {
		.pid = t->pid,
		.tid = t->tid,
		.category = kernel ? RV_TRACE_CATEGORY_KERNEL : NULL,
		.name = name,
		.begin_ns = builder_rel(b, begin),
		.end_ns = builder_rel(b, end),
		.depth = depth,
		.address = addr,
		.file = file,
		.line = line,
	};

	b->stats.spans++;
	return rv_trace_writer_function_span(b->writer, &fs, err);
}

/* Ends the top frame of t at `end` for a frame that shows arguments (args
 * may be NULL): writes it, or holds it for a frame that must be written
 * first (see settle in builder.c). */
int builder_close_top_args(struct rv_builder *b, struct thread_state *t, uint64_t end,
			   const struct span_args *args, struct rv_error *err);

/* The same without arguments. Inline: every return of a traced function
 * ends one. Most frames, a function's entered by a call of the hot path
 * (span_function) written now with nothing it held, are written here:
 * builder_close_top_args's rule for them, restated (it keeps the others
 * to itself). test_builder.c's
 * children_that_begin_with_their_parent_are_written_after_it fails when
 * the two disagree on what they hold or when they are written. Only such
 * a call's frame has a span_function (branches.c, push_entry), and it is
 * never inferred nor a placeholder, whose flags are not asked here. */
static inline int builder_close_top(struct rv_builder *b, struct thread_state *t, uint64_t end,
				    struct rv_error *err)
{
	const struct open_frame *f = &t->stack[t->depth - 1];

	if (f->span_function && !f->nr_held &&
	    builder_written_now_at(t, f->begin, t->depth - 1, f)) {
		t->depth--;
		b->stats.spans++;
		return rv_trace_writer_function_span_of(
			b->writer, f->span_function, rv_trace_thread(t->pid, t->tid),
			builder_rel(b, f->begin), builder_rel(b, end), builder_depth_of(t->depth),
			err);
	}
	return builder_close_top_args(b, t, end, NULL, err);
}

/* Places a closed span (and the spans it held, all with its begin time) that
 * stood at stack index pos, which becomes its depth: held by the frame
 * below, kept as an orphan of the active segment, or written. */
int builder_settle(struct rv_builder *b, struct thread_state *t, struct pending_span *span,
		   const struct pending_span *held, size_t nr_held, size_t pos,
		   struct rv_error *err);

/* branches.c */

/* Takes an RV_EVENT_BRANCH or RV_EVENT_TRACE_ERROR into its thread's batch. */
int builder_add_branch(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err);

/* Whether rv_builder_add takes ev as builder_add_branch does, whatever
 * the builder holds (most events): a branch without perf script's names,
 * once the base is set (no branch sets it). */
static inline bool builder_plain_branch(const struct rv_builder *b, const struct rv_event *ev)
{
	return ev->kind == RV_EVENT_BRANCH && b->have_base && !ev->branch.from.sym &&
	       !ev->branch.to.sym;
}

/* builder_add_branch of evs[0], [1], ... up to the first that is no plain
 * branch (builder_plain_branch) of evs[0]'s thread (its tid) or evs[n - 1]
 * (evs[0] must be one), in one call, the thread looked up once. *taken: how
 * many were taken, when it returns 0. */
int builder_add_branch_run(struct rv_builder *b, const struct rv_event *evs, size_t n,
			   size_t *taken, struct rv_error *err);

/* Handles the thread's batched events (the last batch gets its own time). */
int builder_flush_branches(struct rv_builder *b, struct thread_state *t, struct rv_error *err);

/* Ends the thread's branch stacks at `end` (its exit, or the end of the
 * trace) after flushing its batch; the next event starts afresh. */
int builder_end_branches(struct rv_builder *b, struct thread_state *t, uint64_t end,
			 struct rv_error *err);

void builder_free_branches(struct branch_state *br);

/* Starts the thread's stack at `now` if it has none (also for exact calls):
 * one segment whose create_time is now. */
int builder_begin_stack(struct rv_builder *b, struct thread_state *t, uint64_t now,
			struct rv_error *err);

/* syscall_sites.c */

/* The name of the span that stands for an untraced system call made by the
 * `syscall` instruction at ip in process pid: "[syscall NAME]" when the code
 * there shows its number (decode/syscall_number.h), else "[syscall]". Lives
 * as long as the builder; NULL only when memory runs out. */
const char *builder_syscall_name(struct rv_builder *b, uint32_t pid, uint64_t ip);

void builder_free_syscall_sites(struct rv_builder *b);

/* calls.c */

/* Takes an RV_EVENT_CALL_ENTER, CALL_EXIT, KERNEL_BEGIN, KERNEL_END or INSTANT. */
int builder_add_call(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err);

/* extra.c */

/* An RV_EVENT_EXTRA: an instant on its thread's track (builder.h). */
int builder_add_extra(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err);

/* Ends every open frame of an exact-call thread at `end` (or its last event,
 * if later); the next event starts afresh. */
int builder_end_calls(struct rv_builder *b, struct thread_state *t, uint64_t end,
		      struct rv_error *err);

/* The event being handled (branches.c, calls.c). */
struct step {
	struct rv_builder *b;
	struct thread_state *t;
	uint64_t now;
	struct rv_error *err;
};

static inline int builder_out_of_memory(struct rv_error *err)
{
	return rv_error_set(err, ENOMEM, "out of memory");
}

#endif
