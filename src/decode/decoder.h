/* decoder.h: the one way into decoding: a capture opened once, its kind
 * recognised once, its events handed over in order.
 *
 * Kinds: a perf.data (a file, a capture directory, perf's DIR/data, a FIFO or
 * standard input "-") is read once and told apart by what it declares: the
 * function tracer's event (RV_FN_EVENT_NAME) makes it a function capture, an
 * AUXTRACE_INFO record, an AUXTRACE index or an intel_pt event an Intel PT
 * capture, an event that samples a capture of stack samples (rearview's
 * sampling, or `perf record -g`); one with only sideband is refused.
 * perf script text and raw PT dumps carry no header to tell them by, so the
 * caller says when the input is one of those.
 *
 * The trace's zero (rv_decoder_first_time) is known once the decoder is
 * open: a --filter window begins before the first record it holds, and its
 * mark comes after them, so a capture with marks is read once ahead for the
 * earliest beginning (through the same open reader, not a second open).
 *
 * Events go to a sink, on the calling thread, in time order per thread (PT
 * buffers are decoded on several threads and handed over in order, which is
 * why this is a push and not a pull). A capture damaged part way is not an
 * error: decoding stops there, the events before it stand, and
 * rv_decoder_report says where. An event's strings live until the sink
 * returns; a sink that keeps them copies them (the trace builder interns
 * them). Names the decoder's symbolizer hands out live as long as the
 * decoder.
 *
 * Kernel names (symbolize/kernel_syms.h), with include_kernel: the
 * capture's own kallsyms and module list (DIR/kcore_dir/{kallsyms,modules})
 * when it has them, else, for a capture this process has just recorded on
 * this machine (live) or one recorded in this boot (its build-id list gives
 * the running kernel's, and its kernel MMAP starts at the running _text),
 * /proc/kallsyms and /proc/modules; modules' .ko files under
 * /lib/modules/RELEASE (this machine's release when live or in this boot,
 * else the capture's, where this machine has that directory); vmlinux.
 * Without include_kernel nothing at a kernel address reaches the sink: a
 * sample keeps its user frames (one with none is dropped), and PT's kernel
 * part is untraced time (pt_capture.h).
 *
 * vmlinux is refused (open fails, saying what to give instead) when it is
 * not an ELF file, or its GNU build id is not the one the capture's
 * build-id list gives its kernel, or, for a live capture without one, the
 * running kernel's.
 *
 * Not here: the formats themselves (sample_decoder.h, fn_decoder.h,
 * pt_capture.h, pt_decoder.h, perf_script.h), spans, printing.
 */
#ifndef RV_DECODE_DECODER_H
#define RV_DECODE_DECODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/events.h"
#include "decode/fn_decoder.h"
#include "decode/perf_script.h"
#include "decode/pt_capture.h"
#include "decode/pt_decoder.h"
#include "decode/raw_pt.h"
#include "decode/sample_decoder.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"

enum rv_capture_kind {
	RV_CAPTURE_AUTO,	/* a perf.data: told apart by what it declares */
	RV_CAPTURE_SAMPLES,	/* stack samples */
	RV_CAPTURE_FUNCTIONS,	/* the function tracer's records (--backend uprobe) */
	RV_CAPTURE_PT,		/* Intel PT */
	RV_CAPTURE_PERF_SCRIPT, /* `perf script` text: branches, sampled stacks, events */
	RV_CAPTURE_RAW_PT,	/* raw PT packets with flat code images */
};

struct rv_decoder_options {
	const char *path;	   /* the capture, the text ("-": standard input), the dump */
	enum rv_capture_kind kind; /* AUTO, PERF_SCRIPT or RAW_PT */
	bool include_kernel;	   /* name (and for PT decode) kernel code */
	bool live;		   /* recorded just now, here: /proc/kallsyms is its kernel's */
	/* Intel PT */
	const char *vmlinux;  /* kernel names; PT: code where the capture has no kcore */
	unsigned jobs;	      /* decoding threads; 0: one per online CPU */
	uint64_t chunk_bytes; /* 0: the decoder's default */
	bool progress;	      /* draw progress on stderr (a terminal) */
	bool count_packets;   /* for --stats: a separate pass over the packets */
	/* PT and raw PT: which walker (--decoder) */
	enum rv_pt_decoder_choice decoder;
	/* raw PT */
	const struct rv_raw_pt_image *images;
	size_t nr_images;
	const char *cpu;	 /* FAMILY/MODEL/STEPPING for errata; NULL: none */
	uint64_t addr_filter[2]; /* [begin, end) traced; both 0: the images' span */
};

struct rv_decoder;

/* Opens the capture and everything it needs (its symbolizer included). A
 * capture that cannot be opened at all is an error in words; files it names
 * that are missing are not (rv_decoder_report lists them). */
int rv_decoder_open(struct rv_decoder **out, const struct rv_decoder_options *options,
		    struct rv_error *err);

enum rv_capture_kind rv_decoder_kind(const struct rv_decoder *d);

/* The symbolizer that names the capture's code (mappings fed by decoding:
 * valid for names only once rv_decoder_run has run, or is running). Owned by
 * the decoder, and kept alive by it; the names it hands out live as long. */
struct rv_symbolizer *rv_decoder_symbolizer(struct rv_decoder *d);

/* The trace's zero on the capture clock; 0 when the first event's time is. */
uint64_t rv_decoder_first_time(const struct rv_decoder *d);

typedef int (*rv_event_sink_fn)(void *ctx, const struct rv_event *event, struct rv_error *err);

/* Hands every event to sink. Returns 0 (damage included: see the report), or
 * the sink's error, or an error that stopped decoding before anything, or,
 * for a raw PT trace, an error when it met decode errors and not one
 * instruction decoded (naming the images: they do not fit the trace); the
 * events handed over then are not worth a trace. */
int rv_decoder_run(struct rv_decoder *d, rv_event_sink_fn sink, void *ctx, struct rv_error *err);

/* rv_decoder_run, with the sink's batch form (events.h; NULL: none), which
 * producers that have many events at once use (Intel PT: captures and raw
 * traces). */
int rv_decoder_run_batches(struct rv_decoder *d, rv_event_sink_fn sink, rv_event_batch_fn batch,
			   void *ctx, struct rv_error *err);

/* What decoding found, for the caller to tell the user. */
struct rv_decoder_report {
	enum rv_capture_kind kind;
	/* Where the capture is damaged (decoding stopped there), or NULL. */
	const char *damage;
	/* PT: binaries that were missing, and --filter windows applied while
	 * decoding (a recording that could not pause PT). */
	const struct rv_pt_missing *missing;
	size_t nr_missing;
	uint64_t windows_applied;
	/* what the kernel's names lacked (symbolizer.h), once the trace named
	 * kernel code: a --vmlinux that could not be placed, modules without
	 * a readable .ko; NULL when nothing */
	const char *kernel_names;
	/* raw PT: no symbols, so jumps were not looked at */
	bool jumps_ignored;
	/* PT and raw PT: when most of the trace did not decode, a sentence
	 * saying how much, measured as raw_pt.h says (a capture: the bytes
	 * skipped after decode errors, against all), and what to check;
	 * else NULL */
	const char *undecoded;
	/* the kind's own counts: the one that matches kind is filled */
	struct rv_pt_stats pt; /* PT, raw PT */
	uint64_t packets;      /* with count_packets */
	struct rv_sample_decoder_stats samples;
	struct rv_fn_decoder_stats functions;
	struct rv_perf_script_stats perf_script;
};

/* Valid until the decoder is freed (it points into it). */
void rv_decoder_report(const struct rv_decoder *d, struct rv_decoder_report *out);

void rv_decoder_free(struct rv_decoder *d);

#endif
