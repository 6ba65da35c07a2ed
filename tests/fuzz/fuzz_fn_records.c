/* fuzz_fn_records.c: the uprobe backend's BPF ring-buffer records as user
 * space takes them (record/fn_stream.h: rv_fn_stream_take, what each
 * ring's drain does with a record), into a flight recorder small enough
 * to wrap, then its counts. A record's bytes are copied out of the ring
 * first, as libbpf hands them over, so that ASan sees any read past one.
 * (What the records become in a capture is read by the decoder: the
 * decode harness's uprobe seeds.) Seeds: records.h framing of
 * struct rv_fn_record, of each type, and of wrong lengths. */
#include <stdlib.h>
#include <string.h>

#include "../../bpf/functions.h"
#include "record/fn_stream.h"
#include "records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NR_FUNCS 8

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t calls[NR_FUNCS] = { 0 }, calls_total = 0;
	struct rv_fn_stream_config config = {
		.flight_bytes = 4 * sizeof(struct rv_fn_record),
		.calls = calls,
		.nr_funcs = NR_FUNCS,
		.calls_total = &calls_total,
	};
	struct rv_fn_stream *s;
	struct rv_fn_stream_stats stats;
	struct rv_error err = { 0 };
	struct fuzz_record rec;
	size_t pos = 0;

	if (rv_fn_stream_open(&s, &config, &err))
		abort();
	while (fuzz_next_record(data, size, &pos, &rec)) {
		uint8_t *copy = malloc(rec.size ? rec.size : 1);

		if (!copy)
			break;
		memcpy(copy, rec.bytes, rec.size);
		if (rec.size == sizeof(struct rv_fn_record))
			sink += rv_fn_record_ip((const struct rv_fn_record *)(const void *)copy);
		rv_fn_stream_take(s, rec.tag % RV_FN_MAX_CPUS, copy, rec.size);
		free(copy);
	}
	rv_fn_stream_stats(s, &stats);
	sink += stats.records + stats.malformed + stats.kept + stats.evicted + calls_total;
	rv_fn_stream_free(s);
	return 0;
}
