/* perf_data_internal.h: entry points of the perf.data module that are not part
 * of its public contract, for its own tests and its own other files
 * (auxtrace.c).
 *
 * Opening from memory lets the robustness tests hand the reader a buffer of
 * exactly the file's length, so that AddressSanitizer sees any read past its
 * end (a read past the end of an mmap'd file inside its last page is silent).
 */
#ifndef RV_CAPTURE_PERF_DATA_INTERNAL_H
#define RV_CAPTURE_PERF_DATA_INTERNAL_H

#include <string.h>

#include "capture/perf_data.h"

/* Unaligned little-endian loads from records (perf.data is read on the
 * machine that wrote it or one of the same byte order). */
static inline uint64_t rv_load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t rv_load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Like rv_perf_reader_open, over `size` bytes at `data`, which the caller keeps
 * valid and unchanged until rv_perf_reader_free. `name` is used in messages. */
int rv_perf_reader_open_buffer(struct rv_perf_reader **out, const void *data, size_t size,
			       const char *name, struct rv_error *err);

/* Whether an AUXTRACE_INFO record has been written: AUXTRACE buffers may only
 * follow one (auxtrace.c). */
bool rv_perf_writer_has_auxtrace_info(const struct rv_perf_writer *w);

#endif
