/* fuzz_gate_records.c: the gate's BPF ring-buffer records (--filter,
 * --trigger windows: record/gate.h) as its poll parses them
 * (rv_gate_record_parse), each copied out of the ring first as libbpf hands
 * it over, so that ASan sees a read past one. Seeds: records.h framing of
 * struct rv_gate_event, of each type, and of wrong lengths. */
#include <stdlib.h>
#include <string.h>

#include "record/gate.h"
#include "records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_record rec;
	size_t pos = 0;

	while (fuzz_next_record(data, size, &pos, &rec)) {
		uint8_t *copy = malloc(rec.size ? rec.size : 1);
		struct rv_gate_record r;

		if (!copy)
			break;
		memcpy(copy, rec.bytes, rec.size);
		if (!rv_gate_record_parse(copy, rec.size, &r))
			sink += r.time_ns + r.duration_ns + r.pid + r.probe + r.slow + r.fired;
		free(copy);
	}
	return 0;
}
