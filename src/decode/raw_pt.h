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
 * Not here: the packet decoding (pt_decoder.h), perf.data captures
 * (pt_capture.h).
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
};

/* Decodes the dump into sink. Files that cannot be read, images that
 * overlap and a CPU that cannot be read are errors in words. stats is filled
 * (and *packets with count_packets) even when the sink fails. */
int rv_raw_pt_decode(const struct rv_raw_pt_options *options, rv_pt_sink_fn sink, void *ctx,
		     struct rv_pt_stats *stats, uint64_t *packets, struct rv_error *err);

#endif
