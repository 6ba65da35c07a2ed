/* reorder.h: puts records read from several per-CPU ring buffers into time
 * order.
 *
 * Each ring is in time order on its own, but a pass over the rings reads them
 * one after the other, so records of different CPUs interleave across passes.
 * The recorder notes the clock before each pass; everything stamped before the
 * previous pass began has certainly been read, so it can be released in order.
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

struct rv_reorder {
	uint8_t *arena;
	size_t arena_used, arena_cap;
	uint8_t *spare; /* the other arena: kept records are compacted into it */
	size_t spare_cap;
	struct rv_reorder_entry *entries;
	size_t nr_entries, cap_entries;
	uint64_t next_seq;
};

typedef int (*rv_reorder_sink)(void *ctx, const struct perf_event_header *rec, uint64_t time);

void rv_reorder_init(struct rv_reorder *ro);
void rv_reorder_destroy(struct rv_reorder *ro);

/* Copies a record in; -ENOMEM on allocation failure. */
int rv_reorder_push(struct rv_reorder *ro, const struct perf_event_header *rec, uint64_t time);

/* Hands the records stamped before `before` to sink in time order, and keeps
 * the rest. UINT64_MAX releases everything. Stops at the first sink error. */
int rv_reorder_release(struct rv_reorder *ro, uint64_t before, rv_reorder_sink sink, void *ctx);

#endif
