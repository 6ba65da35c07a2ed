/* perf_ring.h: reading a perf event's data ring as the kernel writes it.
 *
 * A ring is the event's mapping: the perf_event_mmap_page, then a data area of
 * a power-of-two size that the kernel fills from data_head while the reader
 * consumes from data_tail. Records are 8-byte aligned; one that crosses the end
 * of the area is copied whole into a buffer of the caller's before it is
 * handed over, so that every record reaches the callback contiguous.
 *
 * Used by the sampling engine and the Intel PT engine alike. Not here: what a
 * record means, opening or mapping events, the AUX area (aux_snapshot.h).
 */
#ifndef RV_RECORD_PERF_RING_H
#define RV_RECORD_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The largest record the kernel writes (its size is a u16): the size of the
 * copy buffer a ring needs. */
#define RV_PERF_RING_MAX_RECORD 65536

struct rv_perf_ring {
	void *base;	   /* the mapping: the mmap page, then the data area */
	size_t page_size;  /* bytes of the mmap page (the system page size) */
	size_t data_bytes; /* bytes of the data area: a power of two */
	uint8_t *copy;	   /* RV_PERF_RING_MAX_RECORD bytes of the caller's */
};

/* Called for each record, in the ring's order; rec is valid only during the
 * call. Returns 0 to go on, or a negative errno with err set to stop. */
typedef int (*rv_perf_ring_fn)(void *ctx, const struct perf_event_header *rec,
			       struct rv_error *err);

/* Hands every record from data_tail to data_head to fn, then publishes the
 * new data_tail (release), so the kernel may reuse the space.
 * Returns 0; or fn's failure, with data_tail moved past the record it failed
 * on; or -EIO when a header is corrupt (smaller than a header, not a multiple
 * of 8, or reaching past data_head): the rest of the ring cannot be parsed,
 * data_tail moves to data_head and err says "corrupt record in <what> ...". */
int rv_perf_ring_drain(const struct rv_perf_ring *r, const char *what, rv_perf_ring_fn fn,
		       void *ctx, struct rv_error *err);

#endif
