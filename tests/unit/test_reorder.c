/* test_reorder.c: records from several rings come out in time order, and only
 * those before the watermark. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "record/reorder.h"

struct timed {
	struct perf_event_header header;
	uint64_t time;
	uint64_t pad[3];
};

struct collected {
	uint64_t times[10000];
	size_t n;
};

static int collect(void *ctx, const struct perf_event_header *rec, uint64_t time)
{
	struct collected *c = ctx;
	const struct timed *t = (const void *)rec;

	cr_assert_eq(t->time, time, "the record travels with its time");
	c->times[c->n++] = time;
	return 0;
}

Test(reorder, releases_in_time_order_up_to_the_watermark)
{
	struct rv_reorder ro;
	static struct collected out;
	uint64_t watermark = 0;

	rv_reorder_init(&ro);
	srand(3);
	out.n = 0;
	for (int pass = 0; pass < 50; pass++) {
		/* Four "CPUs", each in order, interleaved by pass. */
		for (int cpu = 0; cpu < 4; cpu++) {
			for (int i = 0; i < 40; i++) {
				struct timed t = { 0 };

				t.header.size = sizeof(t);
				t.time = (uint64_t)pass * 1000 + (uint64_t)(rand() % 1000);
				cr_assert_eq(rv_reorder_push(&ro, &t.header, t.time), 0);
			}
		}
		cr_assert_eq(rv_reorder_release(&ro, watermark, collect, &out), 0);
		for (size_t i = 0; i < ro.nr_entries; i++)
			cr_assert_geq(ro.entries[i].time, watermark, "only later records are kept");
		for (size_t i = 0; i < out.n; i++)
			cr_assert_lt(out.times[i], watermark, "only earlier records are released");
		watermark = (uint64_t)pass * 1000;
	}
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 50 * 4 * 40);
	for (size_t i = 1; i < out.n; i++)
		cr_assert_leq(out.times[i - 1], out.times[i], "at %zu", i);
	rv_reorder_destroy(&ro);
}

Test(reorder, equal_times_keep_arrival_order)
{
	struct rv_reorder ro;
	static struct collected out;
	struct timed t = { 0 };

	rv_reorder_init(&ro);
	out.n = 0;
	t.header.size = sizeof(t);
	for (int i = 0; i < 100; i++) {
		t.time = 5;
		t.pad[0] = (uint64_t)i;
		cr_assert_eq(rv_reorder_push(&ro, &t.header, 5), 0);
	}
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 100);
	rv_reorder_destroy(&ro);
}
