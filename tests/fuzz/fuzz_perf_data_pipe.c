/* fuzz_perf_data_pipe.c: perf.data in pipe mode (perf record -o -): the
 * fuzzed bytes are the stream after its 16-byte header (magic and size,
 * which the harness adds so that every input is read as a pipe), so the
 * attributes, event names and features come from HEADER_ATTR,
 * EVENT_UPDATE and HEADER_FEATURE records in the stream; then every record
 * goes through its parser (perf_walk.h). Seeds: the file harness's
 * captures turned into pipe streams by `perf inject -o -`, without their
 * header. */
#include <stdlib.h>
#include <string.h>

#include "capture/perf_data_internal.h"
#include "perf_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t header_size = PD_PIPE_HEADER_SIZE;
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	uint8_t *stream = malloc(PD_PIPE_HEADER_SIZE + size);

	if (!stream)
		return 0;
	memcpy(stream, PD_MAGIC, 8);
	memcpy(stream + 8, &header_size, sizeof(header_size));
	if (size)
		memcpy(stream + PD_PIPE_HEADER_SIZE, data, size);
	if (!rv_perf_reader_open_buffer(&r, stream, PD_PIPE_HEADER_SIZE + size, "fuzz.pipe",
					&err)) {
		fuzz_perf_walk(r);
		rv_perf_reader_free(r);
	}
	free(stream);
	return 0;
}
