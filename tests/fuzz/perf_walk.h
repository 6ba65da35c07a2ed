/* perf_walk.h: every record of an opened perf.data handed to the parser its
 * kind has (samples by their attribute, sideband, Intel PT's records,
 * marks), as the decoders call them, and the header's features read
 * through their accessors: the perf.data harnesses' common body.
 *
 * Not here: opening (each harness opens its own layout) or decoding.
 */
#ifndef RV_FUZZ_PERF_WALK_H
#define RV_FUZZ_PERF_WALK_H

#include "capture/perf_data.h"

/* Reads r to its end or its first corrupt record, then once more after a
 * rewind (the decoders' second pass); returns the records read. */
size_t fuzz_perf_walk(struct rv_perf_reader *r);

#endif
