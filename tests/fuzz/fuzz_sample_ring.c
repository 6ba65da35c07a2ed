/* fuzz_sample_ring.c: the sampling backend's perf ring as user space reads
 * it: the fuzzed bytes are a ring's data area from data_tail to data_head
 * (the first two bytes place the tail, so records wrap the end of the area
 * too), drained by rv_perf_ring_drain as the sampling engine drains each
 * CPU's ring, each record handed where the engine's DWARF mode hands it
 * (sample_engine.c, accept_record: records shorter than a header and its
 * sample_id trailer dropped, raw samples to the online unwinder stamped
 * with their TIME, the targets' sideband to it stamped with its
 * trailer's), then everything released, unwound and taken
 * (record/online_unwind.h). Seeds: tools/fuzz-seeds writes MMAP2 of
 * /proc/self/exe (this harness's own code, with its call frame
 * information), COMM, and raw DWARF samples of the engine's layout. */
#include <stdlib.h>
#include <string.h>

#include "record/online_unwind.h"
#include "record/perf_ring.h"
#include "symbolize/unwind.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PAGE	   4096
#define DATA_BYTES 65536
/* The engine's sample_id trailer (pid, tid, time, cpu, res, id) and where
 * its raw samples keep TIME (after IDENTIFIER, IP, TID). */
#define TRAILER_BYTES 32
#define TRAILER_TIME  8
#define SAMPLE_TIME   32

static volatile uint64_t sink;
static uint8_t *ring_copy;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsetenv("DEBUGINFOD_URLS");
	ring_copy = malloc(RV_PERF_RING_MAX_RECORD);
	if (!ring_copy)
		abort();
	return 0;
}

static uint64_t load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int accept(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct rv_online_unwind *u = ctx;
	const uint8_t *bytes = (const uint8_t *)rec;

	if (rec->size < sizeof(*rec) + TRAILER_BYTES)
		return 0;
	if (rec->type == PERF_RECORD_SAMPLE)
		return rv_online_unwind_push_sample(u, rec, 0, load_u64(bytes + SAMPLE_TIME), err);
	switch (rec->type) {
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PERF_RECORD_MMAP:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return 0; /* counted or handled by the engine, not unwound */
	default:
		return rv_online_unwind_push_sideband(
			u, rec, load_u64(bytes + rec->size - TRAILER_BYTES + TRAILER_TIME), err);
	}
}

static int take(void *ctx, const struct perf_event_header *rec, size_t stream, uint64_t time)
{
	const uint8_t *bytes = (const uint8_t *)rec;

	/* The whole chain sample: ASan checks that it is as long as it says. */
	sink += bytes[rec->size - 1] + time;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_online_unwind_config config = { .regs_mask = RV_UNWIND_X86_64_REGS_MASK,
						  .max_queued_bytes = 256 * 1024 };
	struct rv_online_unwind *u;
	struct perf_event_mmap_page *page;
	struct rv_perf_ring ring = { .page_size = PAGE, .data_bytes = DATA_BYTES };
	struct rv_error err = { 0 };
	uint64_t tail;
	uint8_t *area;

	if (size < 2)
		return 0;
	tail = ((uint64_t)data[0] | (uint64_t)data[1] << 8) & ~7ull;
	data += 2;
	size -= 2;
	if (size > DATA_BYTES)
		size = DATA_BYTES;
	ring.base = aligned_alloc(PAGE, PAGE + DATA_BYTES);
	if (!ring.base)
		return 0;
	ring.copy = ring_copy;
	memset(ring.base, 0, PAGE);
	page = ring.base;
	area = (uint8_t *)ring.base + PAGE;
	for (size_t i = 0; i < size; i++)
		area[(tail + i) % DATA_BYTES] = data[i];
	page->data_tail = tail;
	page->data_head = tail + size;
	if (rv_online_unwind_new(&u, &config, &err))
		abort();
	rv_perf_ring_drain(&ring, "the fuzzed ring", accept, u, &err);
	rv_online_unwind_flush(u);
	rv_online_unwind_take(u, take, NULL);
	rv_online_unwind_free(u);
	free(ring.base);
	return 0;
}
