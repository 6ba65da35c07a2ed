/* raw_pt.h: a raw Intel PT dump (the AUX bytes alone, as `perf script`
 * leaves them out of perf.data or a hardware debugger writes them) decoded
 * over flat code images given at their load addresses.
 *
 * There is no sideband: the trace is one thread (pid 1, tid 1), its times
 * are TSC ticks, and tracing is taken to have been filtered to the images'
 * span (IA32_RTIT_ADDR0 in filter mode) unless another range is given.
 * Without symbols all code is one unknown function to the trace builder, so
 * no jump can change a stack: jumps are not looked at.
 *
 * How much of the trace did not decode (a wrong image or load address
 * makes most of it fail): counted in branch packets (TNT, TIP, TIP.PGE,
 * TIP.PGD, FUP: what decoding turns into branches), not in bytes, because
 * PSB+ headers and timing packets decode to nothing either way and a trace
 * with long stretches of them (recorded in a VM, or filtered) would make a
 * byte count look better than the decode was. A packet did not decode when
 * it lies in a stretch of decoding that ended in a decode error, from where
 * that stretch began (the first PSB, a TIP.PGE, or the PSB decoding resumed
 * at after an earlier error), or in the stretch skipped after the error (up
 * to the next PSB). Code that does not fit the trace decodes for a while
 * before the decoder notices (a conditional branch takes any TNT bit), so
 * what came before an error in its stretch is not trusted either; a stretch
 * that ends where tracing stops (TIP.PGD) or at an overflow decoded. With
 * the right images the errors of a damaged trace cost their stretches
 * only: five flipped bytes in pt-corpus/mruby lose well under 1%; the wrong
 * image or address loses 86-99% of every corpus trace. Overflows are the
 * hardware's loss, not the decode's, and are not counted.
 *
 * Not here: the packet decoding (pt_decoder.h), perf.data captures
 * (pt_capture.h), what is said to the user (decoder.c, render.c).
 */
#ifndef RV_DECODE_RAW_PT_H
#define RV_DECODE_RAW_PT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/pt_decoder.h"
#include "util/error.h"

struct rv_raw_pt_image {
	const char *path;
	uint64_t addr;
};

struct rv_raw_pt_options {
	const char *path; /* the dump */
	const struct rv_raw_pt_image *images;
	size_t nr_images;
	const char *cpu;	 /* FAMILY/MODEL/STEPPING for errata; NULL: none */
	uint64_t addr_filter[2]; /* [begin, end) traced; both 0: the images' span */
	unsigned jobs;		 /* decoding threads, at least 1 */
	uint64_t chunk_bytes;	 /* 0: the decoder's default */
	bool count_packets;	 /* count the packets first (for --stats) */
	/* which walker decodes (rv_pt_decode_options.decoder) */
	enum rv_pt_decoder_choice decoder;
	/* the sink's batch form (events.h), with the sink's ctx; NULL: none */
	rv_event_batch_fn sink_batch;
};

/* What of the trace decoded (see the top of this file); counted only when
 * decoding met an error (both 0 otherwise: nothing was skipped). */
struct rv_raw_pt_coverage {
	uint64_t branch_packets;    /* from the first PSB on */
	uint64_t undecoded_packets; /* of those, in stretches skipped after an error */
};

/* Checks the images before anything is decoded, each refused in words
 * naming it: a file that cannot be read, is empty or is not a regular file
 * (a directory), an address whose end (address + size) wraps past 2^64,
 * two images that overlap (both named). sizes[i] is image i's size. */
int rv_raw_pt_check_images(const struct rv_raw_pt_image *images, size_t nr_images, uint64_t *sizes,
			   struct rv_error *err);

/* Decodes the dump into sink. Files that cannot be read (an empty or
 * missing dump, bad images: rv_raw_pt_check_images), a dump without a
 * single PSB (not raw Intel PT) and a CPU that cannot be read are errors in
 * words. stats is filled (and *packets with count_packets, *coverage when
 * not NULL) even when the sink fails. */
int rv_raw_pt_decode(const struct rv_raw_pt_options *options, rv_pt_sink_fn sink, void *ctx,
		     struct rv_pt_stats *stats, uint64_t *packets,
		     struct rv_raw_pt_coverage *coverage, struct rv_error *err);

#endif
