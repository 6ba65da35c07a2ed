/* test_reorder.c: the k-way merge of per-CPU streams: records come out in
 * (time, arrival) order, only those before the watermark, at every
 * interleaving of arrivals and releases; a record stamped late within its
 * stream goes back in its place, one older than what was released is
 * released next and counted; bytes survive the arenas' compaction. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/reorder.h"

struct timed {
	struct perf_event_header header;
	uint64_t time;
	uint64_t pad[3]; /* pad[0]: an identity; pad[1]: the stream */
};

struct collected {
	uint64_t times[10000];
	uint64_t ids[10000];
	size_t n;
	size_t fail_at; /* the sink refuses the record at this count (0: never) */
};

static int collect(void *ctx, const struct perf_event_header *rec, uint64_t time)
{
	struct collected *c = ctx;
	const struct timed *t = (const void *)rec;

	cr_assert_eq(t->time, time, "the record travels with its time");
	cr_assert_eq(rec->size, sizeof(*t));
	if (c->fail_at && c->n + 1 == c->fail_at)
		return -EIO;
	c->times[c->n] = time;
	c->ids[c->n++] = t->pad[0];
	return 0;
}

static void push(struct rv_reorder *ro, size_t stream, uint64_t time, uint64_t id)
{
	struct timed t = { .header = { .size = sizeof(t) }, .time = time, .pad = { id, stream } };

	cr_assert_eq(rv_reorder_push(ro, stream, &t.header, time), 0);
}

Test(reorder, releases_in_time_order_up_to_the_watermark)
{
	struct rv_reorder ro;
	static struct collected out;
	uint64_t watermark = 0;

	cr_assert_eq(rv_reorder_init(&ro, 4), 0);
	srand(3);
	out.n = 0;
	for (int pass = 0; pass < 50; pass++) {
		/* Four "CPUs" interleaved by pass; each stream's records even out
		 * of order within the pass, which insertion puts right. */
		for (int cpu = 0; cpu < 4; cpu++)
			for (int i = 0; i < 40; i++)
				push(&ro, (size_t)cpu,
				     (uint64_t)pass * 1000 + (uint64_t)(rand() % 1000), 0);
		cr_assert_eq(rv_reorder_release(&ro, watermark, collect, &out), 0);
		for (size_t s = 0; s < ro.nr_streams; s++)
			for (size_t i = 0; i < ro.streams[s].nr_entries; i++)
				cr_assert_geq(ro.streams[s].entries[i].time, watermark,
					      "only later records are kept");
		for (size_t i = 0; i < out.n; i++)
			cr_assert_lt(out.times[i], watermark, "only earlier records are released");
		watermark = (uint64_t)pass * 1000;
	}
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 50 * 4 * 40);
	cr_assert_eq(rv_reorder_held(&ro), 0);
	cr_assert_eq(rv_reorder_late(&ro), 0);
	for (size_t i = 1; i < out.n; i++)
		cr_assert_leq(out.times[i - 1], out.times[i], "at %zu", i);
	rv_reorder_destroy(&ro);
}

Test(reorder, equal_times_keep_arrival_order_across_streams)
{
	struct rv_reorder ro;
	static struct collected out;

	cr_assert_eq(rv_reorder_init(&ro, 3), 0);
	out.n = 0;
	for (uint64_t i = 0; i < 99; i++)
		push(&ro, (size_t)(i % 3), 5, i);
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 99);
	for (uint64_t i = 0; i < 99; i++)
		cr_assert_eq(out.ids[i], i);
	rv_reorder_destroy(&ro);
}

/* Three streams of three records each, ordered per stream, with ties
 * between streams; every order of arrival (the 1680 interleavings) and a
 * release after every arrival at the watermark the arrivals allow: the
 * oldest time still to come from any stream. */
Test(reorder, every_interleaving_merges_into_one_order)
{
	static const uint64_t times[3][3] = { { 1, 4, 7 }, { 1, 2, 7 }, { 3, 4, 5 } };
	static struct collected out;
	size_t interleavings = 0;

	for (unsigned code = 0; code < 19683; code++) { /* 3^9 sequences of streams */
		unsigned c = code, count[3] = { 0, 0, 0 }, seq[9];
		struct rv_reorder ro;
		size_t next[3] = { 0, 0, 0 };
		bool valid = true;

		for (int i = 0; i < 9; i++, c /= 3) {
			seq[i] = c % 3;
			if (++count[seq[i]] > 3)
				valid = false;
		}
		if (!valid)
			continue;
		interleavings++;
		cr_assert_eq(rv_reorder_init(&ro, 3), 0);
		out.n = 0;
		for (int i = 0; i < 9; i++) {
			unsigned s = seq[i];
			uint64_t watermark = UINT64_MAX;

			push(&ro, s, times[s][next[s]], s * 10 + next[s]);
			next[s]++;
			for (int k = 0; k < 3; k++)
				if (next[k] < 3 && times[k][next[k]] < watermark)
					watermark = times[k][next[k]];
			cr_assert_eq(rv_reorder_release(&ro, watermark, collect, &out), 0);
		}
		cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
		cr_assert_eq(out.n, 9, "code %u", code);
		cr_assert_eq(rv_reorder_late(&ro), 0, "code %u", code);
		for (size_t i = 1; i < out.n; i++) {
			cr_assert_leq(out.times[i - 1], out.times[i], "code %u at %zu", code, i);
			/* a stream's own records stay in their order */
			for (size_t j = 0; j < i; j++)
				if (out.ids[j] / 10 == out.ids[i] / 10)
					cr_assert_lt(out.ids[j], out.ids[i], "code %u", code);
		}
		rv_reorder_destroy(&ro);
	}
	cr_assert_eq(interleavings, 1680);
}

/* A program preempted between reserving its place in a ring and stamping
 * the record: the ring holds 10, 30, 20; the merge still gives 10, 20, 30,
 * whether the late one arrives in the same pass or the one after. */
Test(reorder, a_record_stamped_late_goes_back_in_its_place)
{
	struct rv_reorder ro;
	static struct collected out;

	cr_assert_eq(rv_reorder_init(&ro, 2), 0);
	out.n = 0;
	push(&ro, 0, 10, 1);
	push(&ro, 0, 30, 3);
	push(&ro, 1, 25, 9);
	push(&ro, 0, 20, 2);
	cr_assert_eq(rv_reorder_release(&ro, 15, collect, &out), 0);
	cr_assert_eq(out.n, 1);
	push(&ro, 0, 18, 4); /* later still, but not yet released past */
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	{
		static const uint64_t want[] = { 1, 4, 2, 9, 3 };

		cr_assert_eq(out.n, 5);
		for (size_t i = 0; i < 5; i++)
			cr_assert_eq(out.ids[i], want[i], "at %zu", i);
	}
	cr_assert_eq(rv_reorder_late(&ro), 0);
	rv_reorder_destroy(&ro);
}

/* Committed after a whole pass: older than what was released already. It
 * cannot go back; it comes out at the next release, first, and is counted. */
Test(reorder, a_record_older_than_the_released_is_released_next_and_counted)
{
	struct rv_reorder ro;
	static struct collected out;

	cr_assert_eq(rv_reorder_init(&ro, 2), 0);
	out.n = 0;
	push(&ro, 0, 10, 1);
	push(&ro, 0, 20, 2);
	push(&ro, 1, 40, 4);
	cr_assert_eq(rv_reorder_release(&ro, 25, collect, &out), 0);
	cr_assert_eq(out.n, 2);
	push(&ro, 1, 15, 3);
	cr_assert_eq(rv_reorder_late(&ro), 1);
	cr_assert_eq(rv_reorder_release(&ro, 30, collect, &out), 0);
	cr_assert_eq(out.n, 3);
	cr_assert_eq(out.ids[2], 3);
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 4);
	cr_assert_eq(out.ids[3], 4);
	rv_reorder_destroy(&ro);
}

/* A sink that fails keeps the record it refused: the next release starts
 * there. */
Test(reorder, a_refused_record_is_kept)
{
	struct rv_reorder ro;
	static struct collected out;

	cr_assert_eq(rv_reorder_init(&ro, 2), 0);
	out.n = 0;
	for (uint64_t i = 0; i < 10; i++)
		push(&ro, (size_t)(i % 2), 100 + i, i);
	out.fail_at = 4;
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), -EIO);
	cr_assert_eq(out.n, 3);
	cr_assert_eq(rv_reorder_held(&ro), 7);
	out.fail_at = 0;
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, collect, &out), 0);
	cr_assert_eq(out.n, 10);
	for (uint64_t i = 0; i < 10; i++)
		cr_assert_eq(out.ids[i], i);
	rv_reorder_destroy(&ro);
}

struct bytes_seen {
	size_t n;
	uint64_t last_time;
};

/* Records of every size keep their bytes through many compactions. */
static int check_bytes(void *ctx, const struct perf_event_header *rec, uint64_t time)
{
	struct bytes_seen *b = ctx;
	const uint8_t *p = (const uint8_t *)rec;

	cr_assert_geq(time, b->last_time);
	b->last_time = time;
	cr_assert_eq(rec->misc, (uint16_t)(time & 0xffff));
	for (size_t i = sizeof(*rec); i < rec->size; i++)
		cr_assert_eq(p[i], (uint8_t)(time + i), "byte %zu of the record at %lu", i,
			     (unsigned long)time);
	b->n++;
	return 0;
}

Test(reorder, bytes_survive_compaction)
{
	struct rv_reorder ro;
	struct bytes_seen seen = { 0 };
	uint8_t buf[4096];
	uint64_t time = 1;

	cr_assert_eq(rv_reorder_init(&ro, 3), 0);
	srand(7);
	for (int pass = 0; pass < 200; pass++) {
		for (int i = 0; i < 20; i++, time++) {
			struct perf_event_header *h = (void *)buf;
			size_t size = 8 + 8 * (size_t)(rand() % 300);

			h->type = PERF_RECORD_SAMPLE;
			h->misc = (uint16_t)(time & 0xffff);
			h->size = (uint16_t)size;
			for (size_t k = sizeof(*h); k < size; k++)
				buf[k] = (uint8_t)(time + k);
			cr_assert_eq(rv_reorder_push(&ro, (size_t)(rand() % 3), h, time), 0);
		}
		cr_assert_eq(rv_reorder_release(&ro, time - 10, check_bytes, &seen), 0);
	}
	cr_assert_eq(rv_reorder_release(&ro, UINT64_MAX, check_bytes, &seen), 0);
	cr_assert_eq(seen.n, 4000);
	rv_reorder_destroy(&ro);
}

Test(reorder, a_stream_out_of_range_is_refused)
{
	struct rv_reorder ro;
	struct timed t = { .header = { .size = sizeof(t) } };

	cr_assert_eq(rv_reorder_init(&ro, 2), 0);
	cr_assert_eq(rv_reorder_push(&ro, 2, &t.header, 1), -EINVAL);
	cr_assert_eq(rv_reorder_held(&ro), 0);
	rv_reorder_destroy(&ro);
}
