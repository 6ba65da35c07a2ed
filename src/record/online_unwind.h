/* online_unwind.h: DWARF-mode samples unwound as they arrive, on a thread of
 * rearview's own, and turned into call-chain samples of a few hundred bytes.
 *
 * The sampling engine hands over each raw DWARF sample it drains (registers
 * and a copy of the user stack, about 8 KiB) and the target's sideband that
 * says what is mapped (MMAP2, and COMM for exec), each with its time, in the
 * order it reads them: time order within one ring, but rings are drained one
 * after another, so a mapping made on one CPU can be read after samples taken
 * later on another. Nothing is unwound until the engine releases a time
 * (rv_online_unwind_release): then what was pushed stamped before it is
 * taken in time order. The thread replays the sideband into a symbolizer of
 * its own (one libdwfl session per process, reused; each mapping's module
 * reported once) and unwinds each sample against the mappings as of that
 * sample (symbolize/unwind). What comes out is the same sample in
 * PERF_SAMPLE_CALLCHAIN form: the kernel's part of the chain as the kernel
 * gave it, then PERF_CONTEXT_USER and the unwound user frames (the IP first),
 * without registers or stack. A stack the copy cut ends with rearview's cut
 * marker (capture/callchain.h), an address perf's tools show as an unknown
 * frame; so does one whose unwinding stopped inside the copy after the IP
 * (RV_STACK_UNWIND_STOPPED). A stack of its IP alone carries no marker.
 *
 * The queue of samples waiting for the thread is bounded (bytes). A sample
 * that finds it full is not dropped: it is kept with its IP alone as its user
 * chain, and counted (not_unwound). Samples come out in the order they were
 * unwound: time order within each release.
 *
 * Not here: where the chains go (the engine's flight recorder or reorder
 * buffer), nor the capture's attribute (the engine writes it without
 * REGS_USER and STACK_USER).
 */
#ifndef RV_RECORD_ONLINE_UNWIND_H
#define RV_RECORD_ONLINE_UNWIND_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The most user frames a chain keeps. */
#define RV_ONLINE_UNWIND_MAX_FRAMES 256

/* The layout of the raw samples: the engine's sample_type, which must be
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD|CALLCHAIN|REGS_USER|STACK_USER, and its
 * attr.sample_regs_user. */
struct rv_online_unwind_config {
	uint64_t regs_mask;
	size_t max_queued_bytes; /* raw samples waiting; 0: a default of 32 MiB */
};

struct rv_online_unwind_stats {
	uint64_t queued;	/* samples handed to the thread */
	uint64_t unwound;	/* samples the thread unwound (at least the IP) */
	uint64_t not_unwound;	/* samples kept with their IP alone: the queue was full */
	uint64_t failed;	/* samples unwound to their IP only (no CFI, bad registers) */
	uint64_t cut;		/* samples whose stack the copy cut */
	uint64_t stopped;	/* samples whose unwinding stopped inside the copy, at a
				 * caller no call frame information described (marked
				 * like a cut: RV_STACK_UNWIND_STOPPED) */
	uint64_t bad;		/* raw samples too malformed to read, dropped and counted */
	uint64_t unwind_ns;	/* the thread's wall time unwinding and building chains */
	uint64_t thread_cpu_ns; /* the thread's CPU time */
	uint64_t max_queued_bytes_seen;
};

struct rv_online_unwind;

/* Starts the thread. */
int rv_online_unwind_new(struct rv_online_unwind **out, const struct rv_online_unwind_config *c,
			 struct rv_error *err);

/* A raw DWARF sample of the engine's layout, drained from stream `stream`,
 * at `time`. Copied. */
int rv_online_unwind_push_sample(struct rv_online_unwind *u, const struct perf_event_header *rec,
				 size_t stream, uint64_t time, struct rv_error *err);

/* A sideband record of a target stamped `time` (MMAP2 and COMM matter,
 * others are ignored), applied before the samples stamped at or after it.
 * Copied. */
int rv_online_unwind_push_sideband(struct rv_online_unwind *u, const struct perf_event_header *rec,
				   uint64_t time, struct rv_error *err);

/* Everything stamped before `until` has been pushed: the thread may unwind
 * it, in time order. What is stamped later waits for a later release (or
 * rv_online_unwind_flush, which releases everything). */
void rv_online_unwind_release(struct rv_online_unwind *u, uint64_t until);

/* Hands each finished chain sample to fn, in the order pushed, and forgets
 * it (fn copies what it keeps). A negative return of fn stops and is
 * returned. */
typedef int (*rv_online_unwind_fn)(void *ctx, const struct perf_event_header *rec, size_t stream,
				   uint64_t time);
int rv_online_unwind_take(struct rv_online_unwind *u, rv_online_unwind_fn fn, void *ctx);

/* The time of the oldest sample pushed but not yet taken (UINT64_MAX: none),
 * so that a time-ordered writer releases nothing after it. */
uint64_t rv_online_unwind_oldest(struct rv_online_unwind *u);

/* Releases everything pushed so far and waits until the thread has unwound
 * it. */
void rv_online_unwind_flush(struct rv_online_unwind *u);

void rv_online_unwind_stats(struct rv_online_unwind *u, struct rv_online_unwind_stats *out);

/* Stops the thread (what is queued is dropped) and frees everything. */
void rv_online_unwind_free(struct rv_online_unwind *u);

/* ---- the record transformation, for tests ---- */

/* The parts of a raw DWARF sample the unwinder needs, pointing into it. */
struct rv_raw_dwarf_sample {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t nr_chain;
	const uint64_t *chain; /* the kernel's chain (unaligned-safe: read with memcpy) */
	uint64_t regs_abi;     /* 0: no user registers (a kernel thread) */
	const uint8_t *regs;   /* popcount(regs_mask) u64 values */
	uint64_t stack_size;   /* bytes valid at stack (dyn_size) */
	uint64_t stack_asked;  /* bytes the event asked for (the copy's room) */
	const uint8_t *stack;
};

/* Reads a raw sample of the layout above; -EINVAL when it is short or its
 * sizes run past its end. */
int rv_raw_dwarf_sample_parse(const struct perf_event_header *rec, uint64_t regs_mask,
			      struct rv_raw_dwarf_sample *out);

/* Builds into out (size bytes) the call-chain sample of raw: its fixed
 * fields, the kernel part of its chain (up to PERF_CONTEXT_USER), then, when
 * nr_user > 0, PERF_CONTEXT_USER, user[0..nr_user) and, with cut_bytes, the
 * cut marker of a stack cut after cut_bytes copied bytes. Returns the
 * record's size, 0 when it does not fit. */
size_t rv_chain_sample_build(void *out, size_t size, const struct perf_event_header *raw,
			     const struct rv_raw_dwarf_sample *parsed, const uint64_t *user,
			     size_t nr_user, uint32_t cut_bytes);

#endif
