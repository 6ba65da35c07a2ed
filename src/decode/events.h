/* events.h: the one stream of events that decoders produce and the trace
 * builder consumes, in time order per thread.
 *
 * Each decoder (samples, Intel PT, perf script text, function records) turns its
 * capture into these, so that the builder needs to know nothing about where
 * they came from.
 */
#ifndef RV_DECODE_EVENTS_H
#define RV_DECODE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rv_error;

enum rv_event_kind {
	RV_EVENT_STACK_SAMPLE, /* a sampled call stack */
	RV_EVENT_THREAD_NAME,  /* a thread got (or changed) its name */
	RV_EVENT_THREAD_EXIT,  /* a thread ended */
	RV_EVENT_LOST,	       /* records the kernel could not deliver */
	RV_EVENT_BRANCH,       /* a control transfer the trace recorded (PT, perf script) */
	RV_EVENT_TRACE_ERROR,  /* the decoder lost its place: overflow or decode error */
	RV_EVENT_WINDOW,       /* a --filter window of the thread ended (the gate's mark) */
	RV_EVENT_TRIGGER,      /* a --trigger hit on the thread */
	RV_EVENT_CALL_ENTER,   /* a traced function was entered (exact: uprobe engine) */
	RV_EVENT_CALL_EXIT,    /* a traced function returned (exact: uprobe engine) */
	RV_EVENT_KERNEL_BEGIN, /* the thread began a kernel activity: syscall, irq, off-CPU */
	RV_EVENT_KERNEL_END,   /* ... and ended it */
	RV_EVENT_INSTANT,      /* a point event on the thread's track (a page fault) */
	RV_EVENT_THREAD_START, /* a thread (or process) was made (FORK): pid, tid */
	RV_EVENT_EXTRA,	       /* a sample of an --events event (a page fault, a tracepoint) */
};

/* What a kernel span (RV_EVENT_KERNEL_BEGIN/END) stands for. */
enum rv_kernel_kind {
	RV_KERNEL_SYSCALL,  /* a system call, named after it ("read") */
	RV_KERNEL_IRQ,	    /* a hardware interrupt handler ran on the thread's CPU */
	RV_KERNEL_OFF_CPU,  /* the thread was switched out; the name says why */
	RV_KERNEL_FUNCTION, /* a kernel function (fentry/kprobe), named after it */
};

/* What a branch did, as perf script's "flags" field names it. */
enum rv_branch_kind {
	RV_BRANCH_NONE,	     /* no transfer: only trace begin or end (see flags) */
	RV_BRANCH_CALL,	     /* call (near or far) */
	RV_BRANCH_RETURN,    /* ret */
	RV_BRANCH_JUMP,	     /* jmp, direct or indirect */
	RV_BRANCH_COND,	     /* jcc taken */
	RV_BRANCH_SYSCALL,   /* syscall/sysenter: user to kernel */
	RV_BRANCH_SYSRET,    /* sysret/sysexit: kernel to user */
	RV_BRANCH_INTERRUPT, /* hardware interrupt, exception or fault ("hw int") */
	RV_BRANCH_SOFT_INT,  /* int n, int3, into ("int") */
	RV_BRANCH_IRET,	     /* iret */
	RV_BRANCH_TX_ABORT,  /* a TSX transaction aborted */
};

/* Flags of a branch (perf's PERF_IP_FLAG_TRACE_BEGIN, _TRACE_END, _ASYNC,
 * _IN_TX). A branch whose destination was not traced carries TRACE_END and
 * to == 0 ("tr end syscall": the kernel is out of scope); the first branch
 * after tracing resumed carries TRACE_BEGIN and from == 0 when the place it
 * resumed from is unknown. */
#define RV_BRANCH_TRACE_BEGIN (1u << 0)
#define RV_BRANCH_TRACE_END   (1u << 1)
#define RV_BRANCH_ASYNC	      (1u << 2) /* not caused by the instruction at from */
#define RV_BRANCH_IN_TX	      (1u << 3) /* inside a TSX transaction */

/* One end of a branch: the address, and what the producer knows of its
 * symbol. A decoder with binaries leaves sym NULL and the builder asks the
 * symbolizer; an import of text (perf script) gives the name it read and the
 * function's start (ip - symoff) as sym_start; "[unknown]" in the text is
 * sym "[unknown]" with sym_start = ip. Strings live as long as the producer. */
struct rv_branch_end {
	uint64_t ip; /* 0: unknown or not traced */
	const char *sym;
	uint64_t sym_start;
	const char *dso; /* NULL when not known */
};

/* A number shown with a kernel span or an instant ("nr", "ret", "address"). */
enum rv_event_arg_kind {
	RV_EVENT_ARG_UINT,
	RV_EVENT_ARG_INT, /* value holds an int64_t */
	RV_EVENT_ARG_HEX, /* an address or a bit mask, shown in hex */
};

struct rv_event_arg {
	/* a string literal: the trace writer knows a span's strings by their
	 * address (rv_trace_writer_interned_span), so a name must never be
	 * freed, nor its bytes change, while a trace is written */
	const char *name;
	enum rv_event_arg_kind kind;
	uint64_t value;
};

struct rv_frame {
	uint64_t addr;
	bool kernel;
	/* addr is an instruction pointer (the leaf, or where user code entered the
	 * kernel) rather than a return address; return addresses are looked up at
	 * addr - 1 so that they land in the calling function. */
	bool is_ip;
	/* The function as the producer names it, when it does (perf script
	 * text: its addresses are another machine's, so nothing is looked
	 * up; "[unknown]" where perf knew no name); NULL: the builder names
	 * addr with the symbolizer. Lives until rv_builder_add returns. */
	const char *sym;
};

struct rv_event {
	enum rv_event_kind kind;
	uint32_t pid, tid;
	uint64_t time; /* nanoseconds, the capture's clock */
	union {
		struct {
			const struct rv_frame *frames; /* leaf first */
			size_t nr_frames;
			uint64_t interval_ns; /* nominal time one sample stands for */
			/* the user frames come from a frame-pointer walk that
			 * started at the caller's frame (the sample was in the
			 * leaf's prologue, or at its return), so the leaf's caller
			 * is missing between frames[0] and frames[1]; the builder
			 * puts it back from the thread's open stack */
			bool caller_unseen;
			/* the capture records context switches (off-CPU spans,
			 * kernel.sampled, come between samples); false: the
			 * builder guesses off-CPU time from gaps in the samples */
			bool switches_recorded;
			/* the user stack was deeper than the sample's copy:
			 * frames end where the copy did, after cut_bytes
			 * bytes (0: not cut); the builder draws them under a
			 * "[stack cut]" frame, never as a root of their own.
			 * RV_STACK_UNWIND_STOPPED (capture/callchain.h): the
			 * unwinding stopped inside the copy, where no call frame
			 * information described a caller; drawn under an
			 * "[unwinding stopped]" frame the same way */
			uint32_t cut_bytes;
		} stack;
		struct {
			const char *name;
		} thread;
		struct {
			uint64_t count;
		} lost;
		struct {
			enum rv_branch_kind kind;
			uint32_t flags; /* RV_BRANCH_* */
			struct rv_branch_end from, to;
		} branch;
		struct {
			const char *name;     /* the window's or trigger's sites */
			uint64_t duration_ns; /* window: it began this long before `time` */
			bool slow;	      /* window: longer than --min-duration */
			bool snapshot;	      /* a snapshot was taken here: nothing after it
					       * continues what came before */
		} gate;
		struct {
			/* CALL_ENTER: the function's first instruction (as the
			 * process maps it); the builder names it with the
			 * symbolizer unless sym is given. CALL_EXIT: addr is the
			 * function returned from, 0 when not known. */
			uint64_t addr;
			const char *sym; /* NULL: look addr up */
			/* The stack pointer at the function's first instruction
			 * (CALL_ENTER) or just after its return (CALL_EXIT, so
			 * entry sp + 8 on x86-64). An exit ends every open call
			 * of the thread whose entry sp is below its sp: frames
			 * a longjmp or an exception skipped end with it. 0:
			 * unknown, match the innermost call instead. */
			uint64_t sp;
			/* CALL_ENTER: every way the function leaves by a
			 * direct instruction gives an exit (return-site
			 * probes), so a later entry at its entry sp means it
			 * left unseen (an indirect tail call). false: its
			 * exit may come after such an entry's (uretprobes). */
			bool exits_at_sites;
		} call;
		struct {
			enum rv_kernel_kind kind;
			const char *name; /* "read", "[off-cpu: sleeping]", "[irq 24]" */
			/* Shown on the span: the BEGIN's, then those of the END
			 * whose names the BEGIN did not give (a syscall: "nr"
			 * from both, "ret" from the END; off-CPU: "state"). */
			const struct rv_event_arg *args;
			size_t nr_args;
			/* an off-CPU span of a sampling capture (context switch
			 * records): it lies between the thread's stack samples,
			 * which it ends, rather than nesting in exact calls */
			bool sampled;
		} kernel;
		struct {
			const char *name;		 /* "[page fault]" */
			const struct rv_event_arg *args; /* "address", "ip", "error_code" */
			size_t nr_args;
		} instant;
		struct {
			/* A sample of an --events event (record/extra_events.h)
			 * on the thread that took it: pid, tid, time. The
			 * event's name as the capture names it ("page-faults",
			 * "sched:sched_switch"); lives as long as the producer. */
			const char *name;
			/* where the thread was when it happened (the faulting
			 * instruction; in the kernel for a tracepoint); 0 when
			 * unknown */
			uint64_t ip;
			bool kernel; /* ip is in the kernel */
			/* the sample's data address (a page fault's faulting
			 * address); 0: none */
			uint64_t addr;
			/* the events this sample stands for (its period): 1
			 * unless the event was sampled every N-th (/period=N) */
			uint64_t count;
			uint32_t cpu; /* the CPU it happened on */
		} extra;
		struct {
			const char *message; /* "overflow", "no memory mapped at 0x...", ... */
			uint64_t offset;     /* in the trace buffer; UINT64_MAX if unknown */
			uint64_t ip;	     /* where the decoder was, 0 if unknown */
			bool overflow;	     /* the hardware dropped packets (PT OVF) */
		} error;
	};
};

/* A sink that takes events in batches: the same as handing it events[0],
 * events[1], ... events[n - 1] one by one through its per-event sink (same
 * ctx, same order), without a call for each. Producers that have many
 * events at once (a decoded page of Intel PT) use it where the consumer
 * gives one; the per-event sink stays for everything else. The events, and
 * the strings they point to, live until the call returns. Returns 0, or
 * negative (err set): events after the one that failed were not taken. */
typedef int (*rv_event_batch_fn)(void *ctx, const struct rv_event *events, size_t n,
				 struct rv_error *err);

#endif
