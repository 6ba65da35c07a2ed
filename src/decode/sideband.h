/* sideband.h: the records around a capture's samples that the sampling and
 * function-tracing decoders read alike.
 *
 * MMAP and MMAP2 give the symbolizer the process's mappings (kernel text
 * excepted: kallsyms names it); an exec's COMM also makes it forget the
 * process's old ones. COMM, EXIT, LOST and LOST_SAMPLES become events. A
 * record too short for its fields, or a mapping that does not parse, is
 * skipped: every byte is read within the record the reader handed over.
 *
 * Not here: samples (each decoder's own), and PT captures' sideband, which
 * pt_capture reads up front to build images and timelines.
 */
#ifndef RV_DECODE_SIDEBAND_H
#define RV_DECODE_SIDEBAND_H

#include <stdint.h>

#include "capture/perf_data.h"
#include "decode/events.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"

struct rv_sideband {
	struct rv_perf_reader *reader;	  /* the records' sample_id, for their times; NULL: 0 */
	struct rv_symbolizer *symbolizer; /* the mappings go there */
	char comm[32];			  /* the last COMM's name: its event points here */
	uint64_t lost;			  /* samples the kernel said it lost, in all */
};

/* Reads record h (not a SAMPLE) into *ev, which the caller zeroed: 1 when it
 * is an event, 0 when it made none (a mapping, a record of another type, or
 * one too short), negative when adding a mapping failed (err set). ev's
 * thread name stays valid until the next COMM. */
int rv_sideband_record(struct rv_sideband *sb, const struct perf_event_header *h,
		       struct rv_event *ev, struct rv_error *err);

#endif
