/* sample_decoder.h: a sampling capture (perf.data of stack samples) turned
 * into the event stream of events.h.
 *
 * Mappings found in the capture feed the symbolizer, so that stacks can be
 * named; DWARF-mode samples (registers and a stack copy) are unwound here with
 * decode/unwind.h; frame-pointer call chains are split at the kernel's
 * PERF_CONTEXT markers into kernel and user frames.
 *
 * Works for captures written by rearview and by `perf record -g` alike, as
 * long as samples carry TID and TIME. Records are taken in file order, which
 * rearview writes in time order.
 *
 * Not here: spans. That is the trace builder's job.
 */
#ifndef RV_DECODE_SAMPLE_DECODER_H
#define RV_DECODE_SAMPLE_DECODER_H

#include <stdint.h>

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
	uint64_t first_time, last_time; /* of samples; 0 when none */
};

int rv_sample_decoder_open(struct rv_sample_decoder **out, const char *capture_path,
			   struct rv_symbolizer *symbolizer, struct rv_error *err);

/* 1: *event is set and valid until the next call; 0: end of capture;
 * negative: the capture is damaged from here on (err says where). */
int rv_sample_decoder_next(struct rv_sample_decoder *d, struct rv_event *event,
			   struct rv_error *err);

void rv_sample_decoder_stats(const struct rv_sample_decoder *d,
			     struct rv_sample_decoder_stats *out);

/* The earliest time of a capture with gate marks (capture/marks.h): a
 * window's beginning comes before its first sample, and its mark after its
 * last one; 0 for other captures, whose first sample is the earliest. */
uint64_t rv_sample_decoder_first_time(const char *capture_path);

void rv_sample_decoder_free(struct rv_sample_decoder *d);

#endif
