/* fuzz_perf_script.c: `perf script` text (rearview decode --perf-script):
 * the fuzzed bytes as the text, read through a stdio stream over memory as
 * the importer reads a file, every event taken, then its counts and its
 * "nothing to draw" check. Seeds: tests/data/perf_script and the text of
 * softpt captures (branches) and of sampling captures (stacks). */
#include <stdio.h>

#include "decode/perf_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_perf_script *p;
	struct rv_perf_script_stats stats;
	struct rv_error err = { 0 };
	struct rv_event ev;
	FILE *in;

	if (!size)
		return 0; /* fmemopen refuses an empty buffer */
	in = fmemopen((void *)data, size, "r");
	if (!in)
		return 0;
	if (!rv_perf_script_open(&p, in, "fuzz.txt", &err)) {
		while (rv_perf_script_next(p, &ev, &err) > 0)
			sink += ev.time;
		rv_perf_script_stats(p, &stats);
		rv_perf_script_check_any(p, &err);
		rv_perf_script_free(p);
	}
	fclose(in);
	return 0;
}
