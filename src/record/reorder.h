/* reorder.h: puts records read from several ordered streams (per-CPU ring
 * buffers, and the recorder's own records) into one time order, by a k-way
 * merge.
 *
 * Each stream is in time order on its own (a CPU's ring is written in
 * order), but a pass over the rings reads them one after the other, so
 * records of different streams interleave across passes. The caller notes
 * the clock before each pass; everything stamped before the previous pass
 * began has certainly been read, so rv_reorder_release can hand on, merged,
 * every record older than that.
 *
 * Order guaranteed: records are released in (time, arrival) order, each
 * stream's records among themselves and across streams, as long as no
 * record arrives after one with a later time was released. A record that
 * arrives out of order within its stream (a BPF program preempted between
 * reserving its place in a ring and stamping it) is put back in its place
 * among that stream's records not yet released (insertion from the newest:
 * the cost is the displacement). A record that arrives stamped before the
 * newest time already released (it was committed later than a whole pass)
 * cannot go back: it is released at the next release, after records with
 * later times, and counted (rv_reorder_late); records of one thread still
 * come out in their order, since a thread makes no record while one of its
 * own is uncommitted.
 *
 * Not here: what to do with released records; the caller's sink decides.
 */
#ifndef RV_RECORD_REORDER_H
#define RV_RECORD_REORDER_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct rv_reorder_entry {
	uint64_t time;
	uint64_t seq; /* arrival order, so equal times keep it */
	size_t offset;
	uint32_t size;
};

/* One stream's records not yet released, in time order; their bytes in an
 * arena in arrival order. */
struct rv_reorder_stream {
	struct rv_reorder_entry *entries;
	size_t nr_entries, cap_entries;
	size_t next; /* during a release: the first not yet handed on */
	uint8_t *arena;
	size_t arena_used, arena_cap;
};

struct rv_reorder {
	struct rv_reorder_stream *streams;
	size_t nr_streams;
	size_t *heap;	/* streams by their next record, during a release */
	uint8_t *spare; /* where kept records are compacted (swapped with an arena) */
	size_t spare_cap;
	uint64_t next_seq;
	uint64_t released_time; /* the newest time released so far */
	uint64_t late;		/* records that arrived older than released_time */
};

typedef int (*rv_reorder_sink)(void *ctx, const struct perf_event_header *rec, uint64_t time);

/* nr_streams >= 1; -ENOMEM on allocation failure. */
int rv_reorder_init(struct rv_reorder *ro, size_t nr_streams);
void rv_reorder_destroy(struct rv_reorder *ro);

/* Copies a record of stream `stream` in (rec->size bytes); -ENOMEM on
 * allocation failure, -EINVAL for a stream out of range. */
int rv_reorder_push(struct rv_reorder *ro, size_t stream, const struct perf_event_header *rec,
		    uint64_t time);

/* Hands the records stamped before `before` to sink in (time, arrival)
 * order, and keeps the rest. UINT64_MAX releases everything. Stops at the
 * first sink error (the record it refused is kept). */
int rv_reorder_release(struct rv_reorder *ro, uint64_t before, rv_reorder_sink sink, void *ctx);

/* Records held (not yet released). */
size_t rv_reorder_held(const struct rv_reorder *ro);

/* Records that arrived stamped before a time already released. */
uint64_t rv_reorder_late(const struct rv_reorder *ro);

#endif
