/* render.h: a capture turned into a trace file, and what is said after it:
 * decoder (decode/decoder.h) -> builder -> writer, the decoder's findings
 * (damage, missing binaries, skipped records) as warnings, --stats, and the
 * summary: what the trace covers, the processes in it (and the children
 * not recorded), what the recording left out (the threads other than the
 * main one without --multi-thread, the functions matched but not probed and
 * why), the probes' cost in a traced run, the top functions by self time
 * (long C++ names shortened, render/short_name.h; kernel code marked "[k]"),
 * where the file is and how to open it. Each line of the summary is a
 * function of its own in render.c. Shared by every command that ends
 * with a trace (run and attach through the session, decode).
 *
 * Not here: recording, decoding or call-stack rules.
 */
#ifndef RV_RENDER_RENDER_H
#define RV_RENDER_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/decoder.h"
#include "util/error.h"
#include "write/trace_writer.h"

/* A function --functions matched but did not probe, and why. */
struct rv_render_skip {
	const char *name;   /* as its symbol table spells it */
	const char *reason; /* the same text for every function skipped for one reason */
	const char *note;   /* of this one (what an IFUNC resolves to here), or NULL */
};

struct rv_render_options {
	struct rv_decoder_options decode; /* what to decode, and how */
	/* A recording just made (run, attach): the summary says how it was
	 * recorded and what was lost, and warns when it holds nothing. */
	bool recorded;
	const char *recording_note; /* e.g. "dwarf, 10000 Hz on cpu-clock"; may be NULL */
	uint64_t lost_while_recording;
	/* --backend uprobe: what a probe pair cost a call when recording began
	 * (record/probe_cost.h), in ns; 0: not measured. The summary gives the
	 * overhead it makes (render/probe_summary.h). */
	double probe_ns_per_call;
	/* --backend uprobe: exits were probed at the return sites (the default),
	 * whose uprobes the kernel single-steps; the summary then names
	 * --exits uretprobe when the probes took most of the run. */
	bool probe_exits_at_sites;
	/* --backend uprobe: the calls probed and how long it recorded (a
	 * flight recorder's trace holds only the last of them); 0: the trace's
	 * calls and span */
	uint64_t probed_calls;
	uint64_t recording_ns; /* also sampling: how long it recorded */
	/* Recorded without --multi-thread: the summary counts the process's
	 * other threads the capture names (they were left out). */
	bool main_thread_only;
	/* --backend uprobe: what --functions matched but did not probe; the
	 * summary gives the count, and per reason a few names. */
	const struct rv_render_skip *skipped;
	size_t nr_skipped;
	/* Sampling: samples that aged out of the flight recorder (the summary
	 * says what the trace holds of the recording), and samples kept with
	 * their IP alone because the online unwinder fell behind. */
	uint64_t aged_out;
	uint64_t not_unwound;
	/* Children of the recorded processes that are not in the trace, and
	 * why ("--no-follow"); the summary says so. */
	uint64_t children_not_recorded;
	const char *children_not_recorded_why;
	bool stats; /* --stats: the decoder's counts on standard output */
};

/* --stats' line on which walker decoded how much of a PT trace (after its
 * "decoded by" label), for decoder, the walker chosen: each walker's bytes
 * with their share, and the chunks the fast walker handed to libipt's block
 * decoder (--decoder libipt: libipt's bytes alone, unless the counts say the
 * fast walker decoded some). Written into out (cut short to fit,
 * NUL-terminated), and returned. */
const char *rv_pt_walkers_text(const struct rv_pt_stats *s, enum rv_pt_decoder_choice decoder,
			       char *out, size_t size);

/* Decodes the capture, builds the spans, writes and commits the trace, and
 * prints what it found and the summary on stderr. On error the trace is
 * aborted (nothing is left at its path). */
int rv_render(const struct rv_render_options *ro, struct rv_trace_writer *writer,
	      struct rv_error *err);

#endif
