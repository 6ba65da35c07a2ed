/* flight_recorder.h: the last N bytes of perf records, oldest evicted first.
 *
 * This is what makes sampling a flight recorder: samples stream in for as
 * long as the target runs, and only the most recent `capacity` bytes survive
 * to be written at exit or Ctrl-C. Records are copied in whole and evicted in
 * whole; one larger than the capacity is counted and dropped.
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

struct rv_flight_recorder {
	uint8_t *buf;
	size_t capacity; /* bytes, a multiple of 8 */
	size_t head;	 /* offset of the oldest entry */
	size_t tail;	 /* offset where the next entry goes */
	size_t count;	 /* entries held */
	uint64_t evicted_records;
	uint64_t evicted_bytes;
	uint64_t oversized_records;
};

int rv_flight_recorder_init(struct rv_flight_recorder *fr, size_t capacity);
void rv_flight_recorder_destroy(struct rv_flight_recorder *fr);

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
