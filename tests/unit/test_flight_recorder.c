/* test_flight_recorder.c: the ring keeps exactly the newest records that fit,
 * checked against a simple model over many random sizes. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "record/flight_recorder.h"

struct fake_record {
	struct perf_event_header header;
	uint64_t serial;
	uint8_t fill[2048];
};

static void make(struct fake_record *r, uint64_t serial, uint16_t size)
{
	memset(r, 0, sizeof(*r));
	r->header.type = PERF_RECORD_SAMPLE;
	r->header.size = size;
	r->serial = serial;
	memset(r->fill, (int)(serial & 0xff), size - 16);
}

Test(flight_recorder, keeps_newest_records_in_order)
{
	struct rv_flight_recorder fr;
	const size_t capacity = 4096;
	uint16_t sizes[5000];
	struct fake_record rec;

	srand(7);
	cr_assert_eq(rv_flight_recorder_init(&fr, capacity), 0);
	for (uint64_t serial = 0; serial < 5000; serial++) {
		size_t cursor = 0, visited = 0, expect_bytes = 0, used = 0;
		const struct perf_event_header *h;
		uint64_t first_kept;

		sizes[serial] = (uint16_t)(16 + 8 * (rand() % 60));
		make(&rec, serial, sizes[serial]);
		rv_flight_recorder_push(&fr, &rec.header);

		/* Everything held is a suffix of what was pushed, ends with the newest
		 * record, and is intact. */
		first_kept = serial + 1 - fr.count;
		while ((h = rv_flight_recorder_next(&fr, &cursor, &visited))) {
			const struct fake_record *got = (const void *)h;
			uint64_t want = first_kept + visited - 1;

			cr_assert_eq(got->serial, want);
			cr_assert_eq(h->size, sizes[want]);
			for (size_t i = 0; i < h->size - 16u; i++)
				cr_assert_eq(got->fill[i], (uint8_t)(want & 0xff));
			expect_bytes += h->size;
			used += h->size + 8;
		}
		cr_assert_eq(visited, fr.count);
		cr_assert_eq(rv_flight_recorder_bytes(&fr), expect_bytes);
		cr_assert_leq(used, capacity);
		/* It would not have fit one more older record (allowing for the
		 * space lost at the wrap). */
		if (first_kept > 0)
			cr_assert_gt(used + sizes[first_kept - 1] + 8, capacity - 8 * 60 - 16);
	}
	cr_assert_eq(fr.evicted_records + fr.count, 5000);
	rv_flight_recorder_destroy(&fr);
}

Test(flight_recorder, oversized_record_is_dropped_and_counted)
{
	struct rv_flight_recorder fr;
	struct fake_record rec;

	cr_assert_eq(rv_flight_recorder_init(&fr, 256), 0);
	make(&rec, 1, 64);
	rv_flight_recorder_push(&fr, &rec.header);
	make(&rec, 2, 512);
	rv_flight_recorder_push(&fr, &rec.header);
	cr_assert_eq(fr.oversized_records, 1);
	cr_assert_eq(fr.count, 1);
	rv_flight_recorder_destroy(&fr);
}

Test(flight_recorder, empty_iterates_nothing)
{
	struct rv_flight_recorder fr;
	size_t cursor = 0, visited = 0;

	cr_assert_eq(rv_flight_recorder_init(&fr, 1024), 0);
	cr_assert_null(rv_flight_recorder_next(&fr, &cursor, &visited));
	rv_flight_recorder_destroy(&fr);
}
