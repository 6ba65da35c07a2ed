/* sample_decoder.h: a sampling capture (perf.data of stack samples) turned
 * into the event stream of events.h.
 *
 * Mappings found in the capture feed the symbolizer, so that stacks can be
 * named; raw DWARF-mode samples (registers and a stack copy: perf's, or
 * rearview's with --keep-raw-stacks) are unwound here with
 * symbolize/unwind.h; call chains (frame pointers, or DWARF stacks rearview
 * unwound while recording) are split at the kernel's PERF_CONTEXT markers
 * into kernel and user frames, and a chain whose walk skipped the leaf's
 * caller (a sample in a prologue or at a return: the code at the sample's IP
 * says so) is marked (rv_event.stack.caller_unseen). A stack the copy cut
 * (rearview's cut marker ending the chain, capture/callchain.h, or an unwind
 * that needed memory above a full copy) is marked with the bytes copied
 * (rv_event.stack.cut_bytes).
 *
 * Context switches become off-CPU spans (RV_EVENT_KERNEL_BEGIN/END of kind
 * RV_KERNEL_OFF_CPU, kernel.sampled): a switch out begins one, named by
 * decode/off_cpu.h from its reason, with the state as an argument; a switch
 * in ends it. rearview's sampling engine writes them as samples of its
 * RV_SWITCH_STATE_EVENT (struct rv_switch_state, bpf/sample_filter.h: the
 * thread its raw data names, which for a switch in is not the one that ran
 * when it was written; "[off-cpu: preempted]" for a preemption). Where that
 * program could not run, and in captures made before, the switches are
 * PERF_RECORD_SWITCH_CPU_WIDE records (PERF_RECORD_SWITCH in captures of
 * `perf record --switch-events`), named by the reason an
 * RV_SWITCH_STATE_EVENT sample (kind RV_SWITCH_REASON) gave on the same CPU
 * just before ("[off-cpu: preempted]" when the record's misc says PREEMPT,
 * "[off-cpu: blocked]" when nothing says why). Those samples make no event
 * of their own. Stack samples say whether the capture records switches
 * (stack.switches_recorded: their attribute's context_switch, or an
 * RV_SWITCH_STATE_EVENT attribute in the capture).
 *
 * Samples of an --events event (an attribute rv_extra_event_attr_is_extra
 * says is one: record/extra_events.h) become RV_EVENT_EXTRA, named after
 * their attribute.
 *
 * Works for captures written by rearview and by `perf record -g` alike, as
 * long as samples carry TID and TIME. Records are taken in file order, which
 * rearview writes in time order.
 *
 * Not here: spans. That is the trace builder's job.
 */
#ifndef RV_DECODE_SAMPLE_DECODER_H
#define RV_DECODE_SAMPLE_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/perf_data.h"

#include "decode/events.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"

struct rv_sample_decoder;

struct rv_sample_decoder_stats {
	uint64_t records;
	uint64_t samples;
	uint64_t lost;
	uint64_t marks;			/* the gate's windows and triggers (capture/marks.h) */
	uint64_t unwind_failures;	/* DWARF samples left with just their IP */
	uint64_t switches;		/* context switch records read (off-CPU events) */
	uint64_t extra;			/* --events samples (RV_EVENT_EXTRA) */
	uint64_t first_time, last_time; /* of samples; 0 when none */
};

/* Decodes the capture reader reads (borrowed: it must outlive the decoder),
 * from where it stands. */
int rv_sample_decoder_open(struct rv_sample_decoder **out, struct rv_perf_reader *reader,
			   struct rv_symbolizer *symbolizer, struct rv_error *err);

/* 1: *event is set and valid until the next call; 0: end of capture;
 * negative: the capture is damaged from here on (err says where). */
int rv_sample_decoder_next(struct rv_sample_decoder *d, struct rv_event *event,
			   struct rv_error *err);

void rv_sample_decoder_stats(const struct rv_sample_decoder *d,
			     struct rv_sample_decoder_stats *out);

/* Whether a frame-pointer walk from a sample whose leaf's code starts with
 * these bytes skipped the leaf's caller: %rbp does not yet (at `push %rbp`
 * or `mov %rsp,%rbp` of the prologue, or at an endbr64 before them) or no
 * longer (at `ret`, after `pop %rbp`) point at the leaf's own frame, so the
 * walk starts from the caller's frame and finds the caller's caller. */
bool rv_fp_walk_skips_caller(const uint8_t *code, size_t len);

void rv_sample_decoder_free(struct rv_sample_decoder *d);

#endif
