/* test_fn_stream.c: the function tracer's flight recorder of 48-byte
 * records: it keeps exactly the newest capacity / 48, counts what aged out,
 * and gives them back in time order (arrival order for equal times) with
 * their CPUs, at every fill level around the wrap. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "record/fn_engine.h"
#include "record/fn_stream.h"

static struct rv_fn_record rec(uint64_t time, uint32_t arg)
{
	return (struct rv_fn_record){ .time = time,
				      .type = RV_FN_ENTER,
				      .flags = RV_FN_FLAG_IN_WINDOW,
				      .tid = 7,
				      .arg = arg };
}

Test(fn_flight, holds_capacity_over_48_records)
{
	struct rv_fn_flight f;

	cr_assert_eq(sizeof(struct rv_fn_record), 48, "the record is 48 bytes");
	cr_assert_eq(rv_fn_flight_init(&f, 64 << 20), 0);
	cr_assert_eq(f.capacity, (64u << 20) / 48, "64 MiB hold 1,398,101 records");
	rv_fn_flight_destroy(&f);
	cr_assert_eq(rv_fn_flight_init(&f, 10), 0);
	cr_assert_eq(f.capacity, 1, "at least one");
	rv_fn_flight_destroy(&f);
}

/* Two CPUs' streams drained alternately in bursts, each in time order: for
 * every number of records pushed into a ring of 10, the newest 10 come back
 * sorted, with their CPUs, and the rest are counted as aged out. */
Test(fn_flight, keeps_the_newest_in_time_order_at_every_fill)
{
	for (uint32_t pushed = 0; pushed <= 35; pushed++) {
		struct rv_fn_flight f;
		uint64_t last = 0;
		size_t n = 0;

		cr_assert_eq(rv_fn_flight_init(&f, 10 * sizeof(struct rv_fn_record)), 0);
		for (uint32_t i = 0; i < pushed; i++) {
			/* bursts of 3 from CPU 0 (times 100i), then CPU 1 (100i - 50) */
			uint32_t cpu = (i / 3) % 2 ? 1023 : 0; /* the highest CPU fits too */
			struct rv_fn_record r = rec(100ull * i - (cpu ? 250 : 0) + 1000, i);

			rv_fn_flight_push(&f, &r, cpu);
		}
		cr_assert_eq(f.count, pushed < 10 ? pushed : 10);
		cr_assert_eq(f.evicted, pushed > 10 ? pushed - 10 : 0);
		cr_assert_eq(rv_fn_flight_sort(&f), 0);
		for (size_t i = 0; i < f.count; i++) {
			uint32_t cpu = 99;
			struct rv_fn_record back;
			const struct rv_fn_record *r = &back;

			cr_assert(rv_fn_flight_get(&f, i, &back, &cpu));
			cr_assert_eq(back.flags, RV_FN_FLAG_IN_WINDOW, "the flags as pushed");
			cr_assert_geq(r->time, last, "pushed %u, at %zu", pushed, i);
			last = r->time;
			cr_assert_geq(r->arg + 10, pushed, "one of the newest (pushed %u)", pushed);
			cr_assert_eq(cpu, (r->arg / 3) % 2 ? 1023 : 0, "its CPU travels with it");
			n++;
		}
		cr_assert(!rv_fn_flight_get(&f, f.count, &(struct rv_fn_record){ 0 },
					    &(uint32_t){ 0 }));
		cr_assert_eq(n, f.count);
		rv_fn_flight_destroy(&f);
	}
}

Test(fn_flight, equal_times_keep_arrival_order_across_the_wrap)
{
	struct rv_fn_flight f;

	cr_assert_eq(rv_fn_flight_init(&f, 8 * sizeof(struct rv_fn_record)), 0);
	for (uint32_t i = 0; i < 13; i++) {
		struct rv_fn_record r = rec(5, i);

		rv_fn_flight_push(&f, &r, 0);
	}
	cr_assert_eq(rv_fn_flight_sort(&f), 0);
	for (size_t i = 0; i < 8; i++) {
		struct rv_fn_record back;
		uint32_t cpu;

		cr_assert(rv_fn_flight_get(&f, i, &back, &cpu));
		cr_assert_eq(back.arg, 5 + i);
	}
	rv_fn_flight_destroy(&f);
}

Test(fn_flight, the_sample_ip_is_the_function_for_calls_only)
{
	struct rv_fn_record r = { .type = RV_FN_EXIT, .addr = 0x401000 };

	cr_assert_eq(rv_fn_record_ip(&r), 0x401000);
	r.type = RV_FN_PAGE_FAULT;
	cr_assert_eq(rv_fn_record_ip(&r), 0, "kernel records show as the kernel's");
}

/* Each CPU's ring: 8 MiB, halved on machines of many CPUs to stay within
 * 64 MiB in all, never below 1 MiB; a size asked for rounded up to a power
 * of two of pages. */
Test(fn_rings, ring_sizes_stay_within_the_machine)
{
	struct rv_fn_engine_config c = { .nr_rings = 2 };

	cr_assert_eq(rv_fn_ring_bytes(&c), 8u << 20);
	c.nr_rings = 8;
	cr_assert_eq(rv_fn_ring_bytes(&c), 8u << 20);
	c.nr_rings = 16;
	cr_assert_eq(rv_fn_ring_bytes(&c), 4u << 20);
	c.nr_rings = 1024;
	cr_assert_eq(rv_fn_ring_bytes(&c), 1u << 20);
	c.ring_bytes = 4096;
	cr_assert_eq(rv_fn_ring_bytes(&c), 4096);
	c.ring_bytes = 5000;
	cr_assert_eq(rv_fn_ring_bytes(&c), 8192);
	c.ring_bytes = 1;
	cr_assert_eq(rv_fn_ring_bytes(&c), 4096, "a page at least");
}

/* What a ring's drain does with each record (rv_fn_stream_take, which the
 * fuzz harness also calls): a record of any other length than 48 bytes is
 * counted as malformed and kept nowhere; the others are counted, their
 * entries counted per function (an index past the table only in all), and
 * held by the flight recorder, which keeps the newest. */
Test(fn_stream, takes_records_of_48_bytes_and_counts_the_rest)
{
	uint64_t calls[2] = { 0 }, total = 0;
	struct rv_fn_stream_config config = { .flight_bytes = 3 * sizeof(struct rv_fn_record),
					      .calls = calls,
					      .nr_funcs = 2,
					      .calls_total = &total };
	struct rv_fn_stream *s;
	struct rv_fn_stream_stats stats;
	struct rv_error err = { 0 };
	uint8_t bytes[64] = { 0 };

	cr_assert_eq(rv_fn_stream_open(&s, &config, &err), 0, "%s", err.message);
	for (uint32_t i = 0; i < 4; i++) {
		struct rv_fn_record r = rec(100 + i, i % 3);

		cr_assert_eq(rv_fn_stream_take(s, i, &r, sizeof(r)), 0);
	}
	cr_assert_eq(rv_fn_stream_take(s, 0, bytes, 47), 0);
	cr_assert_eq(rv_fn_stream_take(s, 0, bytes, 49), 0);
	cr_assert_eq(rv_fn_stream_take(s, 0, bytes, 0), 0);
	rv_fn_stream_stats(s, &stats);
	cr_assert_eq(stats.records, 4);
	cr_assert_eq(stats.malformed, 3);
	cr_assert_eq(stats.kept, 3, "the flight recorder holds three");
	cr_assert_eq(stats.evicted, 1);
	cr_assert_eq(calls[0], 2, "arg 0 at records 0 and 3");
	cr_assert_eq(calls[1], 1);
	cr_assert_eq(total, 4, "arg 2 is past the table: counted in all only");
	rv_fn_stream_free(s);
}
