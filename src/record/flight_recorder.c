/* flight_recorder.c: a byte ring of whole records; see flight_recorder.h.
 *
 * Each entry is an 8-byte prefix {u32 length, u32 kind} and the record. An
 * entry never wraps: when it does not fit before the end of the buffer, a
 * "skip" prefix marks the rest of the buffer unused and the entry goes to the
 * start. The ring is full when tail has caught up with head and count > 0.
 */
#include "record/flight_recorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { ENTRY_RECORD = 1, ENTRY_SKIP = 2 };

struct entry_prefix {
	uint32_t length; /* record bytes after the prefix (ENTRY_SKIP: unused) */
	uint32_t kind;
};

int rv_flight_recorder_init(struct rv_flight_recorder *fr, size_t capacity)
{
	memset(fr, 0, sizeof(*fr));
	capacity &= ~(size_t)7;
	if (capacity < 64)
		capacity = 64;
	fr->buf = malloc(capacity);
	if (!fr->buf)
		return -ENOMEM;
	fr->capacity = capacity;
	return 0;
}

void rv_flight_recorder_destroy(struct rv_flight_recorder *fr)
{
	free(fr->buf);
	memset(fr, 0, sizeof(*fr));
}

static struct entry_prefix *prefix_at(const struct rv_flight_recorder *fr, size_t offset)
{
	return (struct entry_prefix *)(void *)(fr->buf + offset);
}

/* Drops the oldest entry (following a skip marker first, which is not an entry). */
static void evict_oldest(struct rv_flight_recorder *fr)
{
	struct entry_prefix *p;

	if (fr->head + sizeof(*p) > fr->capacity || prefix_at(fr, fr->head)->kind == ENTRY_SKIP)
		fr->head = 0;
	p = prefix_at(fr, fr->head);
	fr->evicted_records++;
	fr->evicted_bytes += p->length;
	fr->head += sizeof(*p) + p->length;
	if (fr->head == fr->capacity)
		fr->head = 0;
	fr->count--;
	if (fr->count == 0)
		fr->head = fr->tail = 0;
}

void rv_flight_recorder_push(struct rv_flight_recorder *fr, const struct perf_event_header *rec)
{
	size_t need = sizeof(struct entry_prefix) + rec->size;
	struct entry_prefix *p;

	if (need > fr->capacity || (rec->size & 7) || rec->size < sizeof(*rec)) {
		fr->oversized_records++;
		return;
	}
	for (;;) {
		if (fr->count == 0) {
			fr->head = fr->tail = 0;
			break;
		}
		if (fr->tail > fr->head) {
			/* Free space: [tail, capacity) and [0, head). */
			if (fr->capacity - fr->tail >= need)
				break;
			if (fr->capacity - fr->tail >= sizeof(*p))
				prefix_at(fr, fr->tail)->kind = ENTRY_SKIP;
			fr->tail = 0;
			continue;
		}
		/* tail <= head: free space is [tail, head), empty when they meet. */
		if (fr->head - fr->tail >= need && fr->tail != fr->head)
			break;
		evict_oldest(fr);
	}
	p = prefix_at(fr, fr->tail);
	p->length = rec->size;
	p->kind = ENTRY_RECORD;
	memcpy(fr->buf + fr->tail + sizeof(*p), rec, rec->size);
	fr->tail += need;
	if (fr->tail == fr->capacity)
		fr->tail = 0;
	fr->count++;
}

const struct perf_event_header *rv_flight_recorder_next(const struct rv_flight_recorder *fr,
							size_t *cursor, size_t *visited)
{
	size_t offset;
	const struct entry_prefix *p;

	if (*visited >= fr->count)
		return NULL;
	offset = *visited == 0 ? fr->head : *cursor;
	if (offset + sizeof(*p) > fr->capacity || prefix_at(fr, offset)->kind == ENTRY_SKIP)
		offset = 0;
	p = prefix_at(fr, offset);
	*cursor = offset + sizeof(*p) + p->length;
	if (*cursor == fr->capacity)
		*cursor = 0;
	(*visited)++;
	return (const struct perf_event_header *)(const void *)(fr->buf + offset + sizeof(*p));
}

size_t rv_flight_recorder_bytes(const struct rv_flight_recorder *fr)
{
	size_t cursor = 0, visited = 0, total = 0;
	const struct perf_event_header *h;

	while ((h = rv_flight_recorder_next(fr, &cursor, &visited)))
		total += h->size;
	return total;
}
