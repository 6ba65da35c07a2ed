/* sideband.h: the records around a capture's samples that the sampling and
 * function-tracing decoders read alike.
 *
 * MMAP and MMAP2 give the symbolizer the process's mappings (kernel text
 * excepted: kallsyms names it); an exec's COMM also makes it forget the
 * process's old ones, and a FORK of a new process gives it its parent's
 * mappings and name (a thread-name event for its main thread); a FORK of a
 * thread becomes a thread-start event. COMM, EXIT, LOST and LOST_SAMPLES
 * become events. A record too short for its fields, or a mapping that does
 * not parse, is skipped: every byte is read within the record the reader
 * handed over.
 *
 * rv_sideband_next is the record loop both decoders share: they read the
 * samples it stops at.
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
	/* Processes' names by pid (direct-mapped, a collision replaces), so
	 * that a forked child, which has no COMM until it renames itself or
	 * execs, is named as its parent. */
	struct {
		uint32_t pid;
		char name[16];
	} names[256];
	/* The decoder's counters (never NULL): records read by
	 * rv_sideband_next, samples the kernel said it lost. */
	uint64_t *records, *lost;
	/* rv_sideband_next stops at context switch records (PERF_RECORD_SWITCH,
	 * SWITCH_CPU_WIDE) with RV_SIDEBAND_SWITCH; false: they are passed over */
	bool switches;
};

/* Sets sb up to read reader's records, naming mappings in symbolizer and
 * counting into the decoder's records and lost. */
void rv_sideband_init(struct rv_sideband *sb, struct rv_perf_reader *reader,
		      struct rv_symbolizer *symbolizer, uint64_t *records, uint64_t *lost);

/* Reads record h (not a SAMPLE) into *ev, which the caller zeroed: 1 when it
 * is an event, 0 when it made none (a mapping, a record of another type, or
 * one too short), negative when adding a mapping failed (err set). ev's
 * thread name stays valid until the next COMM. */
int rv_sideband_record(struct rv_sideband *sb, const struct perf_event_header *h,
		       struct rv_event *ev, struct rv_error *err);

/* A rearview:gate mark (capture/marks.h) in sample s as a window or trigger
 * event: 1 and *ev set when s is a mark, 0 when it is not, negative when
 * the mark is damaged (err says how). ev's name points into the sample. */
int rv_sideband_mark(const struct rv_perf_sample *s, struct rv_event *ev, struct rv_error *err);

/* rv_sideband_next found a sample, for the decoder to read. */
#define RV_SIDEBAND_SAMPLE 2
/* ... a context switch record (only when sb->switches). */
#define RV_SIDEBAND_SWITCH 3

/* The next record of sb's reader that means something: 1 and *ev set for a
 * sideband event (the records that make none are passed over);
 * RV_SIDEBAND_SAMPLE (or RV_SIDEBAND_SWITCH) and the record in *rec for a
 * sample (a switch), with *ev zeroed for the caller to fill; 0 at the end; negative when the
 * capture is damaged from here on (err says where) or a mapping could not be added. */
int rv_sideband_next(struct rv_sideband *sb, struct rv_perf_record *rec, struct rv_event *ev,
		     struct rv_error *err);

#endif
