/* test_aux_snapshot.c: snapshot extraction from AUX areas (aux_snapshot.h)
 * against a writer that emulates the kernel: a numbered byte stream goes
 * round a zeroed ring of the area's size, and aux_head is reported as Intel
 * PT reports it in snapshot mode (the position within the area), or as a
 * free-running count. Whatever was written, the extracted bytes must be the
 * newest bytes of the stream, in order, for every position of the head.
 * Not here: the engine that reads aux_head from the kernel (test_pt_engine.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/aux_snapshot.h"

/* The writer: byte i of the stream is never 0, as PT data in the last
 * 4 KiB of a filled area is never all zeros. */
struct ring {
	uint8_t *area;
	uint64_t size;
	uint64_t total; /* bytes written so far */
};

static uint8_t stream_byte(uint64_t i)
{
	return (uint8_t)(i % 251 + 1);
}

static void ring_init(struct ring *r, uint64_t size)
{
	r->area = calloc(1, size);
	cr_assert_not_null(r->area);
	r->size = size;
	r->total = 0;
}

static void ring_write(struct ring *r, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++, r->total++)
		r->area[r->total & (r->size - 1)] = stream_byte(r->total);
}

static struct rv_aux_snapshot_request request(const struct ring *r, bool free_running)
{
	return (struct rv_aux_snapshot_request){
		.area = r->area,
		.area_size = r->size,
		.aux_head = free_running ? r->total : r->total & (r->size - 1),
		.free_running = free_running,
		.since_previous = true,
	};
}

/* The snapshot's bytes must be stream bytes [from, from + snap->size). */
static void check_bytes(const struct ring *r, const struct rv_aux_snapshot *snap, uint64_t from,
			const char *what)
{
	uint8_t *copy = malloc(snap->size ? snap->size : 1);
	uint64_t sum = 0;

	cr_assert_not_null(copy);
	for (size_t i = 0; i < snap->nr_ranges; i++) {
		cr_assert(snap->ranges[i].size > 0, "%s: empty range", what);
		cr_assert(snap->ranges[i].start + snap->ranges[i].size <= r->size,
			  "%s: range past the area", what);
		sum += snap->ranges[i].size;
	}
	cr_assert_eq(sum, snap->size, "%s: ranges sum to %llu, size %llu", what,
		     (unsigned long long)sum, (unsigned long long)snap->size);
	rv_aux_snapshot_copy(r->area, snap, copy);
	for (uint64_t i = 0; i < snap->size; i++)
		cr_assert_eq(copy[i], stream_byte(from + i),
			     "%s: byte %llu of %llu is not stream byte %llu", what,
			     (unsigned long long)i, (unsigned long long)snap->size,
			     (unsigned long long)(from + i));
	/* The offset says where the first byte sits in the area. */
	cr_assert_eq(snap->offset & (r->size - 1), from & (r->size - 1),
		     "%s: offset %llu does not point at the first byte", what,
		     (unsigned long long)snap->offset);
	free(copy);
}

/* One snapshot after `total` bytes: the last min(total, size) of them. */
static void check_single(uint64_t size, uint64_t total, bool free_running, size_t ref_size)
{
	struct rv_aux_snapshot_state st;
	struct rv_aux_snapshot snap;
	struct ring r;
	char what[128];

	ring_init(&r, size);
	ring_write(&r, total);
	cr_assert_eq(rv_aux_snapshot_state_init(&st, ref_size), 0);
	struct rv_aux_snapshot_request req = request(&r, free_running);
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	uint64_t want = total < size ? total : size;
	snprintf(what, sizeof(what), "size %llu, %llu written, %s head", (unsigned long long)size,
		 (unsigned long long)total, free_running ? "free-running" : "masked");
	cr_assert_eq(snap.size, want, "%s: %llu bytes, want %llu", what,
		     (unsigned long long)snap.size, (unsigned long long)want);
	cr_assert_eq(snap.wrapped, total > size || (!free_running && total == size && size > 0),
		     "%s: wrapped is %d", what, snap.wrapped);
	check_bytes(&r, &snap, total - want, what);
	if (free_running)
		cr_assert_eq(snap.offset, total - want, "%s: offset %llu", what,
			     (unsigned long long)snap.offset);
	else
		cr_assert(snap.offset <= total - want, "%s: offset %llu is in the future", what,
			  (unsigned long long)snap.offset);
	rv_aux_snapshot_state_destroy(&st);
	free(r.area);
}

Test(aux_snapshot, every_head_alignment_small_ring)
{
	for (uint64_t total = 0; total <= 64 * 5 + 1; total++) {
		check_single(64, total, false, 0);
		check_single(64, total, true, 0);
	}
}

Test(aux_snapshot, every_head_alignment_page_ring)
{
	/* Not wrapped, wrapped once, wrapped many times: every position. */
	for (uint64_t lap = 0; lap < 3; lap++)
		for (uint64_t at = 0; at < 4096; at++)
			check_single(4096, lap * 4096 * (lap + 1) + at, false, 0);
	check_single(4096, 4096, false, 0);
	check_single(4096, 4096, true, 0);
	check_single(4096, 1000 * 4096, false, 0);
}

Test(aux_snapshot, ring_larger_than_the_first_wrap_window)
{
	/* 16 KiB: only the last 4 KiB prove a wrap; a head inside them must not
	 * mistake this lap's bytes for an earlier lap's. */
	static const uint64_t totals[] = { 0,	  1,	 7,	8,     4095,  12287, 12288,
					   12289, 16383, 16384, 16385, 20000, 32768, 40961 };

	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		check_single(16384, totals[i], false, 0);
		check_single(16384, totals[i], true, 0);
	}
	for (uint64_t at = 12280; at < 16384; at++)
		check_single(16384, at, false, 0);
}

/* Snapshots one after another with random amounts between them: each gives
 * exactly what is new, or the whole area (lapped) when more than the area
 * less the reference was written. */
static void check_sequence(uint64_t size, size_t ref_size, bool free_running, unsigned seed)
{
	struct rv_aux_snapshot_state st;
	struct ring r;
	uint64_t prev_total = 0, prev_offset = 0;
	bool first = true;

	ring_init(&r, size);
	cr_assert_eq(rv_aux_snapshot_state_init(&st, ref_size), 0);
	for (int round = 0; round < 400; round++) {
		struct rv_aux_snapshot snap;
		char what[160];
		uint64_t n;

		seed = seed * 1103515245u + 12345u;
		switch ((seed >> 16) % 4) {
		case 0:
			n = 0;
			break;
		case 1:
			n = (seed >> 8) % (size / 2);
			break;
		case 2:
			n = (seed >> 8) % size;
			break;
		default:
			n = (seed >> 8) % (size * 3);
			break;
		}
		ring_write(&r, n);
		struct rv_aux_snapshot_request req = request(&r, free_running);
		cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
		snprintf(what, sizeof(what),
			 "size %llu ref %zu %s, round %d: %llu written after %llu",
			 (unsigned long long)size, ref_size, free_running ? "free" : "masked",
			 round, (unsigned long long)n, (unsigned long long)prev_total);

		uint64_t held = r.total < size ? r.total : size;
		uint64_t want;
		if (free_running || r.total <= size)
			want = n < held ? n : held; /* exact */
		else if (!ref_size)
			want = size; /* full, no reference: the whole area */
		else if (first)
			want = held;
		else
			want = n <= size - ref_size ? n : size;
		cr_assert_eq(snap.size, want, "%s: %llu bytes, want %llu", what,
			     (unsigned long long)snap.size, (unsigned long long)want);
		check_bytes(&r, &snap, r.total - want, what);
		if (ref_size && !free_running && !first && r.total > size)
			cr_assert_eq(snap.lapped, n > size - ref_size, "%s: lapped %d", what,
				     snap.lapped);
		if (free_running)
			cr_assert_eq(snap.lapped, !first && n > size, "%s: lapped %d", what,
				     snap.lapped);
		/* Offsets move forward with the stream. */
		cr_assert(snap.offset + snap.size >= prev_offset, "%s: offset went back", what);
		prev_offset = snap.offset + snap.size;
		prev_total = r.total;
		first = false;
	}
	rv_aux_snapshot_state_destroy(&st);
	free(r.area);
}

Test(aux_snapshot, sequences_with_reference)
{
	for (unsigned seed = 1; seed <= 8; seed++) {
		check_sequence(64, 8, false, seed);
		check_sequence(4096, 512, false, seed);
	}
}

Test(aux_snapshot, sequences_without_reference)
{
	for (unsigned seed = 1; seed <= 8; seed++) {
		check_sequence(64, 0, false, seed);
		check_sequence(4096, 0, false, seed);
	}
}

Test(aux_snapshot, sequences_free_running)
{
	for (unsigned seed = 1; seed <= 8; seed++) {
		check_sequence(64, 0, true, seed);
		check_sequence(4096, 0, true, seed);
	}
}

Test(aux_snapshot, nothing_new_when_the_head_has_not_moved)
{
	struct rv_aux_snapshot_state st;
	struct rv_aux_snapshot snap;
	struct ring r;

	ring_init(&r, 4096);
	cr_assert_eq(rv_aux_snapshot_state_init(&st, 512), 0);
	ring_write(&r, 10000);
	struct rv_aux_snapshot_request req = request(&r, false);
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	cr_assert_eq(snap.size, 4096);
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	cr_assert_eq(snap.size, 0);
	cr_assert_eq(snap.nr_ranges, 0);
	/* Exactly one lap later the head is back where it was: the reference
	 * shows that the whole area is new. */
	ring_write(&r, 4096);
	req = request(&r, false);
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	cr_assert_eq(snap.size, 4096);
	cr_assert(snap.lapped);
	check_bytes(&r, &snap, r.total - 4096, "one lap");
	rv_aux_snapshot_state_destroy(&st);
	free(r.area);
}

Test(aux_snapshot, cap_keeps_the_newest_bytes)
{
	struct rv_aux_snapshot_state st;
	struct rv_aux_snapshot snap;
	struct ring r;

	for (uint64_t total = 0; total < 64 * 3; total += 5) {
		for (uint64_t cap = 1; cap <= 80; cap += 7) {
			ring_init(&r, 64);
			ring_write(&r, total);
			cr_assert_eq(rv_aux_snapshot_state_init(&st, 0), 0);
			struct rv_aux_snapshot_request req = request(&r, false);
			req.max_bytes = cap;
			cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
			uint64_t held = total < 64 ? total : 64;
			uint64_t want = held < cap ? held : cap;
			cr_assert_eq(snap.size, want);
			cr_assert_eq(snap.capped, held > cap);
			check_bytes(&r, &snap, total - want, "capped");
			rv_aux_snapshot_state_destroy(&st);
			free(r.area);
		}
	}
}

Test(aux_snapshot, whole_trace_instead_of_what_is_new)
{
	struct rv_aux_snapshot_state st;
	struct rv_aux_snapshot snap;
	struct ring r;

	ring_init(&r, 64);
	cr_assert_eq(rv_aux_snapshot_state_init(&st, 8), 0);
	ring_write(&r, 20);
	struct rv_aux_snapshot_request req = request(&r, false);
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	ring_write(&r, 10);
	req = request(&r, false);
	req.since_previous = false;
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	cr_assert_eq(snap.size, 30);
	check_bytes(&r, &snap, 0, "whole, not wrapped");
	ring_write(&r, 100);
	req = request(&r, false);
	req.since_previous = false;
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	cr_assert_eq(snap.size, 64);
	check_bytes(&r, &snap, r.total - 64, "whole, wrapped");
	rv_aux_snapshot_state_destroy(&st);
	free(r.area);
}

Test(aux_snapshot, bad_requests)
{
	struct rv_aux_snapshot_state st;
	struct rv_aux_snapshot snap;
	uint8_t area[64] = { 0 };

	cr_assert_eq(rv_aux_snapshot_state_init(&st, 32), 0);
	struct rv_aux_snapshot_request req = { .area = area, .area_size = 48, .aux_head = 3 };
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), -EINVAL);
	req.area_size = 64; /* a 32-byte reference is more than a quarter */
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), -EINVAL);
	rv_aux_snapshot_state_destroy(&st);

	cr_assert_eq(rv_aux_snapshot_state_init(&st, 0), 0);
	req = (struct rv_aux_snapshot_request){
		.area = area, .area_size = 64, .aux_head = 100, .free_running = true
	};
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), 0);
	req.aux_head = 99; /* a free-running head never goes back */
	cr_assert_eq(rv_aux_snapshot_find(&st, &req, &snap), -EINVAL);
	rv_aux_snapshot_state_destroy(&st);
}

Test(aux_snapshot, spans_for_full_mode)
{
	struct rv_aux_snapshot s;

	cr_assert_eq(rv_aux_span(64, 10, 30, &s), 0);
	cr_assert_eq(s.nr_ranges, 1);
	cr_assert_eq(s.ranges[0].start, 10);
	cr_assert_eq(s.ranges[0].size, 20);
	cr_assert_eq(s.offset, 10);

	cr_assert_eq(rv_aux_span(64, 60, 70, &s), 0);
	cr_assert_eq(s.nr_ranges, 2);
	cr_assert_eq(s.ranges[0].start, 60);
	cr_assert_eq(s.ranges[0].size, 4);
	cr_assert_eq(s.ranges[1].start, 0);
	cr_assert_eq(s.ranges[1].size, 6);
	cr_assert_eq(s.offset, 60);

	cr_assert_eq(rv_aux_span(64, 128, 192, &s), 0); /* exactly a full area */
	cr_assert_eq(s.nr_ranges, 1);
	cr_assert_eq(s.ranges[0].start, 0);
	cr_assert_eq(s.ranges[0].size, 64);

	cr_assert_eq(rv_aux_span(64, 5, 5, &s), 0);
	cr_assert_eq(s.nr_ranges, 0);
	cr_assert_eq(rv_aux_span(64, 5, 70, &s), -EINVAL);
	cr_assert_eq(rv_aux_span(64, 9, 5, &s), -EINVAL);
	cr_assert_eq(rv_aux_span(96, 0, 5, &s), -EINVAL);
}
