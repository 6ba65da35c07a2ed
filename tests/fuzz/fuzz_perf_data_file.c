/* fuzz_perf_data_file.c: perf.data in file mode (perf record -o FILE):
 * the fuzzed bytes are the file, opened from memory at exactly their length
 * (rv_perf_reader_open_buffer, so that ASan sees a read past the end) and
 * read through every record's parser (perf_walk.h). Seeds: rearview's
 * sampling and uprobe captures and softpt's PT captures (file mode). */
#include <stddef.h>
#include <stdint.h>

#include "capture/perf_data_internal.h"
#include "perf_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };

	if (rv_perf_reader_open_buffer(&r, data, size, "fuzz.data", &err))
		return 0;
	fuzz_perf_walk(r);
	rv_perf_reader_free(r);
	return 0;
}
