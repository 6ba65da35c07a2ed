/* builder.h: the trace builder, which turns the event stream into spans.
 *
 * For sampled stacks it does what magic-trace's sampling mode does: each
 * thread's consecutive stacks are compared from the root, frames that
 * disappeared end and frames that appeared begin, at the sample's time. Each
 * frame is one function (named by the symbolizer); a sample stands for the
 * time until the thread's next sample, and the last one for its nominal
 * interval. One track per thread, named "comm [pid/tid]". A stack that was
 * cut short by unwinding (its root is a function in the middle of the open
 * stack) is completed from the open stack rather than read as a return to it.
 *
 * Off-CPU time of sampled threads (RV_EVENT_KERNEL_BEGIN/END of kind
 * RV_KERNEL_OFF_CPU with kernel.sampled: context switch records):
 * - A switch out (BEGIN) ends the thread's open frames at its time; its last
 *   sample's leaf gets the time until then as self time. An off-CPU span
 *   named by the event ("[off-cpu: sleeping]"), with the event's "state"
 *   argument and "function", the innermost frame that was open, begins there
 *   on the thread's track, when the thread has been sampled and has run
 *   (a sample or a switch in) since it last left; else nothing is drawn.
 * - A switch in (END) ends that span. At the thread's next sample, the frames
 *   it shares from the root with the stack it left (the last one sampled,
 *   when it ran without a sample since) begin at the latest switch in;
 *   the rest at the sample; the time between is the new leaf's self time (at
 *   most two intervals, as between samples).
 * - A sample while a span is open (its switch in was lost) ends the span
 *   then; a switch in while a stack is open (its switch out was lost) ends
 *   the stack one interval after its last sample.
 * - Samples whose capture records no switches (stack.switches_recorded
 *   false: perf record without --switch-events, older captures): a thread's
 *   next sample more than OFF_CPU_GAP_INTERVALS (4) nominal intervals after
 *   its last ends its stack one interval after that last sample (counted in
 *   gaps_ended); no off-CPU span is drawn.
 * - The thread's exit, a window's end, a snapshot and rv_builder_finish (at
 *   the trace's last time) end an open off-CPU span; after the first three
 *   the thread's switches draw nothing until it is sampled again (switches
 *   outside --filter windows, the exiting thread's last switch).
 *
 * For branches (RV_EVENT_BRANCH, RV_EVENT_TRACE_ERROR: Intel PT decoded here
 * or imported from perf script) it keeps each thread's call stack with
 * magic-trace's rules (docs: reference/magic-trace.md section 4), each frame
 * one function, named by the event's sym when given (perf script: sym and
 * sym_start are trusted, nothing is looked up) or else by the symbolizer
 * (where no symbol covers the address: the symbolizer's "module+0xOFFSET" or
 * "0xADDRESS", or "[unknown]" from perf script text):
 * - Time: a thread's events that share a timestamp are a batch; when a later
 *   time t' comes the batch's events get t + i*(t'-t)/n, in order (magic-trace
 *   spreads calls only, which makes zero-length spans and frames that end when
 *   they begin). A thread's last batch spreads up to its exit's time. A
 *   trace error is no batch's member: it is taken at its own time (the last
 *   timing packet before it), and the batch before it spreads up to it.
 *   With nothing to spread over (the batch is stamped with the error, or it
 *   is the thread's last at the end of the trace) the batch keeps its time,
 *   but for 1 ns for each frame entered there, so that every frame keeps a
 *   length; the error, or the end, follows them. A batch of more than 65536
 *   events, and any batch in a thread whose stamps never differ (a raw trace
 *   without timing packets: its stamps are only an order) take 1 ns an
 *   event, and an error or the end the nanosecond after the last.
 * - CALL pushes `to`'s function ("[untraced]" when to.ip is 0). RETURN pops,
 *   then `to` must be in the new top's function; if it is in the middle of a
 *   deeper frame's function, the frames above that one end (longjmp,
 *   exceptions); else the top is replaced (magic-trace's ret+call heuristic),
 *   or, when the popped frame was entered asynchronously (a signal handler),
 *   `to` is pushed on top (__restore_rt). A RETURN on an empty stack makes an
 *   inferred span for `from`'s function from the stack's create_time.
 * - JUMP, COND and TX_ABORT out of the top frame's function: to a function's
 *   first byte is a tail call (the top is replaced); into the middle of a
 *   deeper frame's function unwinds to it; else the top is replaced. Jumps
 *   inside the top frame's function cost a range compare (no lookup).
 * - TRACE_END (kernel not traced) pushes a placeholder, which TRACE_BEGIN
 *   pops: from user code, "[syscall NAME]" for a SYSCALL (NAME from the
 *   number the code at `from` puts in eax: decode/syscall_number.h, read once
 *   per call site through the symbolizer; "[syscall]" when it does not show),
 *   "[kernel]" for an INTERRUPT, SOFT_INT or async branch, "[returned]" for a
 *   RETURN (after its pop), "[untraced]" else; in the kernel, "[untraced]".
 *   TRACE_BEGIN then resumes in the top frame, unwinds to a deeper one, or
 *   pushes `to` (a signal handler).
 * - Into the kernel (SYSCALL, INTERRUPT, SOFT_INT or an async branch to a
 *   kernel address; any branch from user code to a kernel address; a
 *   TRACE_BEGIN at a kernel address over user frames) the user stack is set
 *   aside and a kernel one started above it, so the kernel's frames nest in
 *   the user function that was running; an entry in the kernel (a nested
 *   interrupt) sets that one aside the same way. IRET or SYSRET into the
 *   kernel ends the innermost. Execution seen in user space (any event whose
 *   `to` is a user address: SYSRET, IRET, TRACE_BEGIN after a gap, a return)
 *   ends every kernel stack at once, and the user stack continues (a first
 *   stack that was the kernel's gets its user function inferred under it).
 *   An untraced SYSRET or IRET ends them too, and "[untraced]" follows.
 * - Whenever a stack is empty and `to` must be on it, `to`'s function is
 *   pushed with an inferred begin at the stack's create_time (the thread's
 *   first event, or the kernel entry): such spans carry one argument,
 *   inferred_start_time = "true" (besides a function's arguments, below).
 *   But a `to` at its function's first byte (a TRACE_BEGIN at perf script's
 *   main+0x0, execve's return to _start) enters the function then: it
 *   begins at the event's time, not inferred, and counts as a call in the
 *   stats.
 * - A trace error writes an instant "[overflow]" or "[decode error: MSG]" at
 *   its time, ends every frame (set-aside stacks too) then, and a span
 *   "[trace gap]" runs from then to the thread's next event, which starts
 *   afresh; the events at the error's exact time that come after it move 1
 *   ns later (magic-trace #155), and spread from there.
 * Self time goes to the top frame (placeholders excluded). TSX transactions
 * are not replayed: IN_TX branches are taken as they come. Because of the
 * batches, a thread's last events are in the spans and self time (and some
 * in the stats) only once its time moves on, it exits, or rv_builder_finish
 * is called.
 *
 * For exact calls (RV_EVENT_CALL_ENTER/EXIT, RV_EVENT_KERNEL_BEGIN/END,
 * RV_EVENT_INSTANT: the uprobe engine's records) each thread has one stack
 * of user calls with kernel spans nested in them; events are taken at their
 * own times (a thread's event older than its last is taken at the last):
 * - CALL_ENTER pushes the function, named by sym, else by the symbolizer at
 *   addr, and remembers its entry sp. An entry whose sp is below the innermost
 *   call's, or equal to it (a tail call: the kernel's chained uretprobes give
 *   both exits), nests: a callee, or a signal handler on the thread's stack.
 *   But when the innermost call's exits are probed at its return sites
 *   (call.exits_at_sites), an entry at its sp ends it first: it left by an
 *   indirect jump (a tail call through a pointer) that gave no exit.
 *   One whose sp is above it but not above the outermost frame of that
 *   frame's run (the frames down to the first whose sp is lower than the one
 *   above it: one stack) is on the same stack: the frames of the run whose sp
 *   is below the entry's, and those at the entry's sp under them, are over
 *   (a longjmp skipped them; this call takes their place) and end first. An
 *   entry above the whole run is on another stack (a handler on a
 *   sigaltstack) and nests: it starts a run of its own.
 * - CALL_EXIT with sp ends the function that returns, the innermost frame
 *   whose entry sp is sp - 8 (of several, the one entered at addr), and
 *   every frame above it (a longjmp or an exception skipped them; counted as
 *   unwinds). Only an exit ends the frames entered before it: a handler on a
 *   sigaltstack returns to its own entry sp, so the frames it interrupted
 *   stay open however their sp compares. With no such frame the function was
 *   entered before the stack began: the frames of the top run whose sp is
 *   below the exit's end, and the function gets an inferred span (named by
 *   sym or addr; "[unknown]" with neither). With sp 0 the innermost call
 *   ends. (Not told apart: a longjmp into a function that then tail-calls
 *   ends it at the tail call, and its own exit is then inferred.)
 * - Inferred spans (an exit or a kernel END without its beginning) begin at
 *   the stack's create_time (its first event), or at the begin of the frame
 *   they end inside, whichever is later, and carry inferred_start_time.
 * - User code that runs (an entry, an exit) means every kernel span of the
 *   thread is over: those still open end first (their end was lost).
 * - KERNEL_BEGIN pushes a kernel span on the same thread's stack, so it nests
 *   in the call open there (an off-CPU span in the system call it slept in);
 *   a system call or off-CPU span still open ends first (they do not nest in
 *   their own kind). KERNEL_END ends the innermost open span of its kind
 *   and those above it. Any event of the thread other than the end of its
 *   off-CPU span ends that span: the thread runs. Off-CPU time is not self
 *   time. Spans show the BEGIN's arguments, then the END's not given yet.
 * - INSTANT writes an instant event with its arguments.
 * - The thread's exit, a --filter window's end, a snapshot and
 *   rv_builder_finish end what is open; the next event starts afresh.
 *
 * Span arguments of functions (magic-trace's; Perfetto shows them in the
 * slice's details), in every kind of trace: "address", a pointer, the
 * function's start when a symbol covers it, else the address it was seen at
 * (a sample's frame) or entered at (an exact call); and, for user code whose
 * file has DWARF line information (its own or a separate debug file),
 * "file" and "line": the line-table row of that address (for a function's
 * start, the line of its opening brace, where clang and gcc put it). Looked
 * up when the frame is pushed (while the process's mappings are those it
 * ran with), once per function and process (rv_symbolizer_source caches
 * them). Not there: on placeholders,
 * gaps, windows, off-CPU and other kernel spans of exact calls, and branch
 * frames of code no symbol covers (they are one unknown function);
 * magic-trace's "symbol" (the span's name already) and "col".
 *
 * An --events sample (RV_EVENT_EXTRA, any kind of trace) is an instant on the
 * track of the thread that took it, named after the event ("page-faults",
 * "sched:sched_switch"), at its own time, with arguments: "ip" (a user
 * address; kernel addresses are left out unless the kernel is in the trace,
 * that is when the symbolizer names them), "symbol" (the function at ip, when
 * one is known), "addr" (a page fault's address; only when not 0), "count"
 * (the events it stands for: its period), "cpu" and "tid". An instant rather
 * than a counter track: each sample is one occurrence at one place in the
 * code (a fault, a switch), and the place is what the reader wants; a counter
 * of ones would only draw the same times as steps. It touches no stack: the
 * thread's spans go on as if it were not there.
 *
 * Spans of kernel code (branch frames at kernel addresses, sampled kernel
 * frames, exact calls' kernel spans but off-CPU ones) and the kernel's
 * placeholders ("[syscall NAME]", "[kernel]", "[untraced]" in the kernel)
 * are written in the category RV_TRACE_CATEGORY_KERNEL; the others in none.
 *
 * It also keeps what the summary needs: time covered and self time by
 * function (time on the CPU: off-CPU spans are never self time).
 *
 * Spans are handed to the writer as complete spans when they end, in an order
 * that keeps them nested for a reader that sorts by begin time: a child that
 * begins at the same time as its parent is held back until the parent has
 * been written (and a frame that began at its stack's create_time until no
 * inferred parent can come). Each goes with its depth (its stack position
 * when it ended: rv_trace_writer_nested_span), which the JSON writer turns
 * into sub-nanosecond order for equal times.
 *
 * Zero-length spans (begin == end: calls the spread left no time, a late
 * event taken at its thread's last time) are written like the others, so a
 * child that begins and ends with its parent comes after it. Readers place
 * them by time: Perfetto nests one in what is open at its time but takes
 * one at its parent's end for the parent's next sibling, and a second one
 * at the same time for the first one's child. A zero-length placeholder
 * (untraced time of none: "[returned]" where the trace resumes at the time
 * it stopped) is not written: it shows nothing, and mostly sits at its
 * parent's end.
 *
 * Names events bring (branch and call syms, kernel span and argument names,
 * thread names) are copied into the builder's own pool when it keeps them
 * past rv_builder_add, so a producer's strings need only live until it
 * returns; the symbolizer's (which names the rest) live as long as it.
 *
 * Not here: decoding or symbol lookup logic, and file formats.
 */
#ifndef RV_TRACE_BUILDER_H
#define RV_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "decode/events.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"
#include "write/trace_writer.h"

struct rv_builder;

int rv_builder_new(struct rv_builder **out, struct rv_symbolizer *symbolizer,
		   struct rv_trace_writer *writer, struct rv_error *err);

/* The trace's zero on the capture clock, for producers that hand over one
 * thread after another (a thread decoded later may have begun earlier than the
 * first event seen). Without it the first event's time is the zero; times
 * before the zero are clamped to it. Call before the first event. */
void rv_builder_set_base(struct rv_builder *b, uint64_t time);

/* Events must come in time order for each thread. The symbolizer's
 * mappings may change between calls of rv_builder_add, _add_batch and
 * _finish, never during one: the builder keeps the symbolizer's answers
 * for the rest of the call it is in. */
int rv_builder_add(struct rv_builder *b, const struct rv_event *event, struct rv_error *err);

/* rv_builder_add of events[0, n), in order (an rv_event_batch_fn): stops
 * at the first that fails. */
int rv_builder_add_batch(struct rv_builder *b, const struct rv_event *events, size_t n,
			 struct rv_error *err);

/* Ends every open span at the end of its thread's last sample, or at its
 * last branch event. */
int rv_builder_finish(struct rv_builder *b, struct rv_error *err);

struct rv_top_function {
	const char *name;
	uint64_t self_ns;
	uint64_t calls; /* exact calls (function entries) of it; 0 in other traces */
	bool kernel;	/* kernel code: a sample's kernel frame, a kernel span, PT in the kernel */
};

struct rv_builder_stats {
	uint64_t spans;
	uint64_t threads;
	/* threads other than their process's first that the capture names
	 * (COMM, FORK) but that got no track: left out of the recording, or
	 * never on a CPU while it ran */
	uint64_t untracked_threads;
	uint64_t samples;
	uint64_t lost;
	uint64_t first_time, last_time; /* capture clock; first_time is the trace's zero */
	uint64_t self_ns;		/* self time of all functions together */
	uint64_t grafted;		/* truncated stacks completed from the open stack */
	uint64_t skipped_callers;	/* callers a frame-pointer walk skipped, restored */
	uint64_t late_samples;		/* samples older than their thread's last, taken at it */
	uint64_t off_cpu_spans;		/* sampled threads' off-CPU spans drawn (switch records) */
	uint64_t gaps_ended;		/* stacks ended at a gap in samples (no switch records) */
	uint64_t stacks_cut;		/* samples the copy cut, under [stack cut] */
	uint64_t stacks_stopped;	/* samples whose unwinding stopped early, under
					 * [unwinding stopped] */
	/* branches */
	uint64_t branches;   /* RV_EVENT_BRANCH events taken */
	uint64_t calls;	     /* CALL branches (and functions entered at their first
			      * byte with no caller seen: a trace begin at main+0x0),
			      * or CALL_ENTER events */
	uint64_t returns;    /* RETURN branches, or CALL_EXIT events */
	uint64_t inferred;   /* spans whose begin was inferred */
	uint64_t errors;     /* trace errors (overflows included) */
	uint64_t unwinds;    /* frames ended by an unwind (longjmp, exceptions, sigreturn) */
	uint64_t tail_calls; /* jumps to a function's first byte that replaced the top */
	/* exact calls */
	uint64_t exact_events; /* call, kernel and instant events taken */
	uint64_t kernel_spans; /* kernel spans begun, or inferred from their end */
	uint64_t instants;     /* instant events written (page faults) */
	uint64_t extra_events; /* --events samples drawn (instants) */
	/* the gate */
	uint64_t windows;   /* --filter windows drawn */
	uint64_t triggers;  /* --trigger hits marked */
	uint64_t snapshots; /* segments ended by a snapshot */
};

void rv_builder_stats(const struct rv_builder *b, struct rv_builder_stats *out);

/* The n functions with the most self time, most first; returns how many were
 * filled. */
size_t rv_builder_top_functions(const struct rv_builder *b, struct rv_top_function *out, size_t n);

/* The n functions with the most exact calls, most first (ties by name). */
size_t rv_builder_most_called(const struct rv_builder *b, struct rv_top_function *out, size_t n);

/* --events samples drawn, by event name, in the order the names came. */
#define RV_BUILDER_MAX_EXTRA 16

struct rv_builder_extra_count {
	const char *name; /* lives as long as the builder */
	uint64_t samples; /* instants drawn */
	uint64_t events;  /* the events they stand for (their counts) */
};

/* Fills up to n, returns how many names there are. Names beyond
 * RV_BUILDER_MAX_EXTRA are counted under the last ("other events"). */
size_t rv_builder_extra_counts(const struct rv_builder *b, struct rv_builder_extra_count *out,
			       size_t n);

/* A process with a track in the trace, named as its main thread was last
 * (or as its first thread with a track when the main thread has none). */
struct rv_builder_process {
	uint32_t pid;
	char name[32];
};

/* The processes with a track, by pid: fills up to n, returns how many there
 * are. */
size_t rv_builder_processes(const struct rv_builder *b, struct rv_builder_process *out, size_t n);

void rv_builder_free(struct rv_builder *b);

#endif
