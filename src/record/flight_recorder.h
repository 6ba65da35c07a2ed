/* flight_recorder.h: the last N bytes of perf records, oldest evicted first.
 *
 * This is what makes sampling a flight recorder: samples stream in for as
 * long as the target runs, and only the most recent `capacity` bytes survive
 * to be written at exit or Ctrl-C. Records are copied in whole and evicted in
 * whole; one larger than the capacity is counted and dropped.
 *
 * The ring may live in a file of the capture directory, mapped shared
 * (rv_flight_recorder_init_file): its bytes and its bookkeeping (head, tail,
 * count, in a header page) are then in the file at every instant, kept in
 * an order that lets rv_flight_file_read take what a recorder killed left
 * (the records whole and in order, a record being written left out).
 *
 * Not here: ordering (records are held in arrival order; the sampling engine
 * sorts them by time when it writes them) or sideband, which is kept whole
 * elsewhere.
 */
#ifndef RV_RECORD_FLIGHT_RECORDER_H
#define RV_RECORD_FLIGHT_RECORDER_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The header page of a ring file. */
struct rv_flight_file_header {
	char magic[8];	      /* RV_FLIGHT_FILE_MAGIC */
	uint64_t ring_offset; /* where the ring starts in the file: a page */
	uint64_t capacity;
	uint64_t head, tail, count; /* as in struct rv_flight_recorder */
};

#define RV_FLIGHT_FILE_MAGIC "RVFLIGHT"

struct rv_flight_recorder {
	uint8_t *buf;
	size_t capacity; /* bytes, a multiple of 8 */
	size_t head;	 /* offset of the oldest entry */
	size_t tail;	 /* offset where the next entry goes */
	size_t count;	 /* entries held */
	uint64_t evicted_records;
	uint64_t evicted_bytes;
	uint64_t oversized_records;
	/* a ring in a file: its mapping (header page first), NULL in memory */
	struct rv_flight_file_header *file;
	size_t file_bytes;
	char *path;
};

int rv_flight_recorder_init(struct rv_flight_recorder *fr, size_t capacity);

/* The same, in a file created at path (mode 0600, an existing one
 * truncated), mapped shared; destroy unmaps it and removes the file.
 * -errno. */
int rv_flight_recorder_init_file(struct rv_flight_recorder *fr, size_t capacity, const char *path);

void rv_flight_recorder_destroy(struct rv_flight_recorder *fr);

/* Makes fr hold what rest holds (records and counts; the same capacity),
 * and empties rest: a snapshot took some records. A file-backed ring stays
 * in its file (emptied first, so that a recorder killed meanwhile leaves an
 * empty ring rather than a torn one). */
void rv_flight_recorder_take(struct rv_flight_recorder *fr, struct rv_flight_recorder *rest);

/* The records of a ring file a recorder left (killed), oldest first: fn is
 * called with each, whole and 8-byte aligned, until it returns nonzero
 * (which is returned). A record the recorder was writing, or anything that
 * does not hold together, ends the walk: the records before it are given.
 * Errors (no such file, not a ring file) are described in err. */
int rv_flight_file_read(const char *path, int (*fn)(void *ctx, const struct perf_event_header *rec),
			void *ctx, struct rv_error *err);

/* Copies the record (header->size bytes, a multiple of 8) in, evicting the
 * oldest records as needed. */
void rv_flight_recorder_push(struct rv_flight_recorder *fr, const struct perf_event_header *rec);

/* Iteration from oldest to newest: start with *cursor = 0 and call until it
 * returns NULL. */
const struct perf_event_header *rv_flight_recorder_next(const struct rv_flight_recorder *fr,
							size_t *cursor, size_t *visited);

/* Bytes of records held (not counting bookkeeping). */
size_t rv_flight_recorder_bytes(const struct rv_flight_recorder *fr);

#endif
