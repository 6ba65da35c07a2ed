/* pt_decoder.h: Intel PT packets to branch events, with libipt's block
 * decoder or the fast walker that does its work again on libipt's query
 * decoder (options.decoder; the events are the same).
 *
 * One call decodes one trace buffer (a per-thread or per-CPU AUX buffer, or a
 * raw dump) against a libipt image and hands the events, in trace order, to a
 * sink: RV_EVENT_BRANCH for every call, return, jump, syscall, interrupt and
 * trace begin/end, RV_EVENT_TRACE_ERROR for an overflow or a decode error
 * (after which decoding resumes at the next PSB). Times are the capture's
 * clock: TSC converted by the capture's TIME_CONV, refined by MTC and CYC
 * where the trace has them (libipt's timing), or raw TSC ticks when there is
 * no conversion.
 *
 * The branches are those `perf script --itrace=be` shows for the trace, with
 * perf's flags: every taken branch (a not-taken jcc is none), its kind from
 * the instruction (call, return, jmp, jcc, syscall, sysret, int, iret; far
 * ones by their near kind); "tr strt" (RV_BRANCH_NONE, TRACE_BEGIN, from 0)
 * where tracing is enabled (TIP.PGE), where it resumes after an overflow,
 * and where decoding (re)starts at a PSB: the buffer's first one, or the one
 * after an error (perf begins nothing there); "tr end KIND" (TRACE_END, to
 * 0) for the branch that left tracing (a syscall whose destination is not
 * traced), "tr end async" (RV_BRANCH_NONE, ASYNC|TRACE_END, from the
 * interrupted address) for an interrupt, fault or signal out of traced code;
 * "hw int" (RV_BRANCH_INTERRUPT, ASYNC) for one that lands in traced code;
 * "tx abrt" for a TSX abort, and IN_TX on branches inside a transaction. An
 * overflow is an error event (overflow set) at the address the decoder had
 * reached, followed by the trace begin where tracing resumed. The time of a
 * branch is that of the packet that decided it (TNT, TIP), or of the last one
 * before it for branches that need none (direct calls and jumps); an event's
 * is its packet's; a PSB+'s timing counts from its FUP's address on. That is
 * perf's time to the nanosecond with TSC and MTC timing; with CYC, libipt
 * and perf estimate the cycles' time differently (by some tens of ns).
 *
 * Parallel decoding: the buffer is cut at PSB packets into chunks of at least
 * chunk_bytes (boundaries depend only on the buffer and chunk_bytes, never on
 * the number of jobs); chunks are decoded by `jobs` threads and their events
 * handed to the sink in buffer order, with the instructions a chunk ran past
 * its end (up to the next chunk's first IP) dropped at the seam, so the sink
 * sees the same events, times included, whatever `jobs` and chunk_bytes are
 * (an error met past a chunk's last packet resumes at the next PSB, which a
 * plain libipt walk would skip). The memory held is a few chunks' events per
 * job, whatever the buffer's length. Each thread decodes with its own copy
 * of an image (libipt's lookups reorder an image's sections, so one image
 * cannot serve two threads): built by options.populate when it is set, else
 * with rv_pt_sections_copy (pt_sections.h), which shares the sections (and
 * their locks); a read-memory callback set on an image is not copied, so
 * code read through one decodes with jobs <= 1 only.
 *
 * Not here: where buffers, images and threads come from (pt_capture.h), what
 * the events mean for call stacks (trace/builder.h), symbols.
 */
#ifndef RV_DECODE_PT_DECODER_H
#define RV_DECODE_PT_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "capture/auxtrace.h"
#include "decode/events.h"
#include "util/error.h"

/* The sink: called from the decoding thread that called rv_pt_decode, in
 * buffer order. A negative return stops decoding and is returned. */
typedef int (*rv_pt_sink_fn)(void *ctx, const struct rv_event *ev, struct rv_error *err);

/* A batch of events for the sink's batch form, and what the decoder knows
 * of them, so that a sink can take a batch whole instead of looking at each
 * event. Every event of a batch is of one task (pid and tid). A flag that
 * is false says nothing (it is not known to hold), never the opposite. */
struct rv_pt_batch {
	const struct rv_event *events;
	size_t n;	    /* at least 1 */
	bool branches_only; /* every event is a RV_EVENT_BRANCH */
	bool ordered;	    /* no event's time is below the one before it */
	/* every branch's from.ip and to.ip ORed together (so none is above it) */
	uint64_t ip_bits;
};

/* The sink's batch form: the same as handing batch->events[0], [1], ...
 * [n - 1] to the sink one by one (same ctx, same order), as events.h's
 * rv_event_batch_fn, with what is known of them. Returns 0, or negative
 * (err set): the events after the one that failed were not taken. */
typedef int (*rv_pt_batch_fn)(void *ctx, const struct rv_pt_batch *batch, struct rv_error *err);

/* What task runs, and in which address space, at `time` on the buffer's CPU:
 * called when a chunk starts, whenever tracing is enabled again (a context
 * switch happens while tracing is off), and when the decoder's time reaches
 * *until: the time (the capture's clock) from which the image may differ
 * (kernel code changed by a TEXT_POKE, a BPF program loaded or unloaded);
 * the decoder sets it to UINT64_MAX before the call, for an answer that
 * holds on. An image changed so is taken between two blocks of libipt's,
 * so code runs with the bytes of the time of the packet before it. Called
 * from several threads at once; must only read (or lock). Returns 0, or
 * negative with err set to stop decoding. */
typedef int (*rv_pt_resolve_fn)(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid,
				struct pt_image **image, uint64_t *until, struct rv_error *err);

/* Adds the code of `image` (one the options or resolve gave) to `copy` once
 * more, from the same files, through `iscache`: rv_pt_sections_add_file and
 * rv_pt_sections_add_cached (pt_sections.h), mapping for mapping. With
 * jobs > 1, each decoding thread builds its images so, with a section cache
 * of its own, because libipt locks a section for every instruction it reads
 * on its event paths (the walks to a TIP.PGD, FUP or MODE.Exec) and threads
 * sharing sections spend more time contending for those locks than decoding
 * (mruby x20: twice the CPU time with two threads, and a longer run than
 * with one). Called from the decoding threads, once per thread and image;
 * must only read the caller's state. Returns 0, or negative with err set to
 * stop. */
typedef int (*rv_pt_populate_fn)(void *ctx, const struct pt_image *image, struct pt_image *copy,
				 struct pt_image_section_cache *iscache, struct rv_error *err);

/* The code around one address that one function holds (see
 * rv_pt_function_at_fn). */
struct rv_pt_function_span {
	uint64_t start, end;  /* [start, end): every address in it is in the function */
	uint64_t from, until; /* the times (the capture's clock) the answer holds over */
};

/* Which walker decodes (--decoder). */
enum rv_pt_decoder_choice {
	/* The default: the cached walk on libipt's query decoder (pt_fast.h),
	 * which hands a chunk it does not model (a decode error, TSX,
	 * PTWRITE, paging or VMCS events, code it cannot read) to libipt's
	 * block decoder: the events are the same either way. */
	RV_PT_DECODER_FAST = 0,
	RV_PT_DECODER_LIBIPT, /* libipt's block decoder alone (--decoder libipt) */
};

/* Which code around `addr`, in task pid's code at `time` (the capture's
 * clock), is in addr's function; false when no function holds addr. A jump
 * from addr that stays inside [start, end) cannot change a call stack, so
 * it is counted (stats.jumps) but not handed to the sink, which spares the
 * sequential part of decoding most of its events (taken conditional
 * branches are most of a trace's branches); one that leaves it goes on.
 * Each decoding thread keeps the last answer, for as long as [from, until)
 * holds: most jumps stay in the function of the one before. Called from the
 * decoding threads; must only read, and must be sure: a jump between
 * functions (a tail call) that is dropped is lost from the trace. */
typedef bool (*rv_pt_function_at_fn)(void *ctx, uint32_t pid, uint64_t time, uint64_t addr,
				     struct rv_pt_function_span *out);

struct rv_pt_decode_options {
	/* CPU and timing (from the capture's cpuid and AUXTRACE_INFO, or
	 * --cpu for raw dumps): cpu (errata are applied from it), mtc_freq,
	 * nom_freq, cpuid_0x15_eax/ebx, addr_filter. begin/end/buffer are set
	 * by the decoder, and so are the block decoder's flags; BDM70's
	 * workaround is always on (a PSB+ between TIP.PGD and TIP.PGE may hold
	 * a FUP, which would make a chunk starting there fail). */
	struct pt_config config;
	const struct rv_perf_time_conv *time_conv; /* NULL: times are TSC ticks */

	/* Fixed task and image, used when resolve is NULL. */
	uint32_t pid, tid;
	struct pt_image *image;
	rv_pt_resolve_fn resolve;
	void *resolve_ctx;

	/* The section cache the images' code was added through
	 * (rv_pt_sections_add_file + rv_pt_sections_add_cached). The decoder
	 * reads the last instruction of a block from it to tell a taken
	 * conditional branch from a fall-through and to name far transfers.
	 * Code from sections without an id (pt_image_add_file, the image's
	 * read callback) cannot be read: there a conditional branch counts as
	 * taken unless the next block starts 2 or 6 bytes after it, and an
	 * unknown transfer is a jump. */
	struct pt_image_section_cache *iscache;

	/* How threads get images with sections of their own (see
	 * rv_pt_populate_fn); NULL: copies that share the sections. */
	rv_pt_populate_fn populate;
	void *populate_ctx;

	/* NULL: every jump goes to the sink. */
	rv_pt_function_at_fn function_at;
	void *function_at_ctx;

	/* No jump can change a call stack (code without symbols, which is all
	 * one unknown function to the trace builder): no jump is looked at,
	 * handed to the sink or counted in stats.jumps, except one that ends
	 * tracing. (Blocks still end at jumps: through a loop of direct jumps
	 * libipt's block would recurse until the stack overflows.) */
	bool ignore_jumps;

	/* Which walker. With max_insns, libipt's decodes everything,
	 * whatever this says (the count stops at the end of one of its
	 * blocks). */
	enum rv_pt_decoder_choice decoder;

	/* decoding threads, the calling one included; 0 or 1, or a buffer of
	 * one chunk: it only */
	unsigned jobs;
	size_t chunk_bytes; /* 0: the default (256 KiB) */

	/* Stop after this many instructions (0: no limit; decoding is then
	 * on the calling thread only); for tests. */
	uint64_t max_insns;

	/* The sink's batch form (rv_pt_batch_fn), called with the sink's ctx
	 * from the same thread in the same order, a few hundred events at a
	 * time; NULL: every event goes to the sink, which is needed either
	 * way. */
	rv_pt_batch_fn sink_batch;
};

/* Where decoding failed, for --stats and warnings. */
struct rv_pt_error_site {
	uint64_t offset; /* in the buffer */
	uint64_t ip;	 /* 0 if unknown */
	int code;	 /* libipt's pte_* (negative), or 0 for an overflow */
};

#define RV_PT_MAX_ERROR_SITES 64

struct rv_pt_stats {
	uint64_t bytes;	 /* of trace decoded */
	uint64_t chunks; /* PSB-delimited pieces decoded */
	uint64_t insns;	 /* instructions (blocks' ninsn summed) */
	uint64_t blocks; /* libipt's blocks: how it cuts them depends on the state
			  * of its block caches, so with threads this count varies */
	/* branch events: jumps are jmp and jcc, interrupts hw int and int */
	uint64_t calls, returns, jumps, syscalls, interrupts;
	uint64_t errors;	/* decode errors, overflows not included */
	uint64_t overflows;	/* OVF packets */
	uint64_t nomap;		/* errors that were code missing from the image */
	uint64_t skipped_bytes; /* trace between an error and the next PSB */
	/* Which walker decoded the bytes (fast_bytes + libipt_bytes == bytes):
	 * a chunk the fast walker handed over counts as libipt's. */
	uint64_t fast_bytes, libipt_bytes;
	uint64_t handoffs;		/* chunks the fast walker handed to the block decoder */
	uint64_t cache_bytes;		/* the fast walker's caches at their largest, summed
					 * over the decoding threads */
	uint64_t first_time, last_time; /* capture clock of the first and last event; 0 if none */
	struct rv_pt_error_site sites[RV_PT_MAX_ERROR_SITES]; /* the first errors */
	size_t nr_sites;
};

/* Adds b's counts to a (sites appended while there is room; times widened). */
void rv_pt_stats_merge(struct rv_pt_stats *a, const struct rv_pt_stats *b);

/* Decodes buf[0, size). stats is filled (zeroed first) also on error. A
 * buffer with no PSB gives no events and stats.skipped_bytes == size. Errors
 * inside the trace are events, not failures; the return is negative only when
 * the sink or resolve failed, or on allocation failure. */
int rv_pt_decode(const void *buf, size_t size, const struct rv_pt_decode_options *options,
		 rv_pt_sink_fn sink, void *sink_ctx, struct rv_pt_stats *stats,
		 struct rv_error *err);

/* Packets in buf (a pass with libipt's packet decoder, resyncing at the next
 * PSB after a bad packet); for --stats. */
uint64_t rv_pt_count_packets(const void *buf, size_t size, const struct pt_config *config);

/* The offset of the first PSB packet's bytes in buf[from, size) (the
 * pattern only: whether a valid PSB+ follows is not checked); size if
 * none. */
size_t rv_pt_next_psb_pattern(const uint8_t *buf, size_t size, size_t from);

/* Bytes of a PSB packet. */
#define RV_PT_PSB_BYTES 16

/* Fills config->cpu from "FAMILY/MODEL/STEPPING" (decimal or 0x hex, as
 * --cpu takes it) or from perf's cpuid string "GenuineIntel,6,78,3", and
 * config->errata from libipt's table. */
int rv_pt_cpu_parse(const char *text, struct pt_config *config, struct rv_error *err);

/* libipt's error text for a pte_* code, in words for the user. */
const char *rv_pt_strerror(int code);

#endif
