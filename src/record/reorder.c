/* reorder.c: a k-way merge of per-stream time-ordered records; see
 * reorder.h.
 *
 * A release builds a binary min-heap of the streams whose next record is
 * older than the watermark, keyed by that record's (time, seq), and pops
 * from it: O(log k) a record, no sort of what is held. What each stream
 * keeps is then compacted into the spare arena, which becomes its arena:
 * two buffers that live as long as the recording rather than a fresh one
 * per release.
 */
#include "record/reorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

int rv_reorder_init(struct rv_reorder *ro, size_t nr_streams)
{
	memset(ro, 0, sizeof(*ro));
	if (nr_streams == 0)
		nr_streams = 1;
	ro->streams = calloc(nr_streams, sizeof(*ro->streams));
	ro->heap = calloc(nr_streams, sizeof(*ro->heap));
	if (!ro->streams || !ro->heap) {
		rv_reorder_destroy(ro);
		return -ENOMEM;
	}
	ro->nr_streams = nr_streams;
	return 0;
}

void rv_reorder_destroy(struct rv_reorder *ro)
{
	for (size_t i = 0; ro->streams && i < ro->nr_streams; i++) {
		free(ro->streams[i].entries);
		free(ro->streams[i].arena);
	}
	free(ro->streams);
	free(ro->heap);
	free(ro->spare);
	memset(ro, 0, sizeof(*ro));
}

static size_t padded(uint32_t size)
{
	return ((size_t)size + 7) & ~(size_t)7;
}

static int entry_before(const struct rv_reorder_entry *x, const struct rv_reorder_entry *y)
{
	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

int rv_reorder_push(struct rv_reorder *ro, size_t stream, const struct perf_event_header *rec,
		    uint64_t time)
{
	struct rv_reorder_stream *s;
	struct rv_reorder_entry e;
	size_t at;

	if (stream >= ro->nr_streams)
		return -EINVAL;
	s = &ro->streams[stream];
	if (rv_array_reserve(&s->arena, &s->arena_cap, s->arena_used + padded(rec->size), 1,
			     1 << 16) ||
	    rv_array_grow(&s->entries, &s->cap_entries, s->nr_entries, sizeof(*s->entries), 256))
		return -ENOMEM;
	e = (struct rv_reorder_entry){
		.time = time, .seq = ro->next_seq++, .offset = s->arena_used, .size = rec->size
	};
	memcpy(s->arena + s->arena_used, rec, rec->size);
	s->arena_used += padded(rec->size);
	if (time < ro->released_time)
		ro->late++;
	/* In order nearly always: the loop runs only for a late record. */
	at = s->nr_entries;
	while (at > 0 && s->entries[at - 1].time > time) {
		s->entries[at] = s->entries[at - 1];
		at--;
	}
	s->entries[at] = e;
	s->nr_entries++;
	return 0;
}

/* ---- the heap of streams by their next record ---- */

static const struct rv_reorder_entry *head_of(const struct rv_reorder *ro, size_t stream)
{
	const struct rv_reorder_stream *s = &ro->streams[stream];

	return &s->entries[s->next];
}

static void sift_down(struct rv_reorder *ro, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, t;

		if (l < n && entry_before(head_of(ro, ro->heap[l]), head_of(ro, ro->heap[m])))
			m = l;
		if (r < n && entry_before(head_of(ro, ro->heap[r]), head_of(ro, ro->heap[m])))
			m = r;
		if (m == i)
			return;
		t = ro->heap[i];
		ro->heap[i] = ro->heap[m];
		ro->heap[m] = t;
		i = m;
	}
}

/* Keeps a stream's records from s->next on: entries to the front, their
 * bytes compacted into the spare arena, which is swapped in. */
static int keep_rest(struct rv_reorder *ro, struct rv_reorder_stream *s)
{
	size_t kept = s->nr_entries - s->next, bytes = 0;
	uint8_t *old;
	size_t old_cap;

	if (s->next == 0)
		return 0;
	if (kept == 0) {
		s->nr_entries = s->next = 0;
		s->arena_used = 0;
		return 0;
	}
	if (ro->spare_cap < s->arena_used) {
		uint8_t *grown = realloc(ro->spare, s->arena_used);

		if (!grown)
			return -ENOMEM;
		ro->spare = grown;
		ro->spare_cap = s->arena_used;
	}
	for (size_t i = s->next; i < s->nr_entries; i++) {
		struct rv_reorder_entry *e = &s->entries[i];

		memcpy(ro->spare + bytes, s->arena + e->offset, e->size);
		e->offset = bytes;
		bytes += padded(e->size);
	}
	memmove(s->entries, s->entries + s->next, kept * sizeof(*s->entries));
	s->nr_entries = kept;
	s->next = 0;
	s->arena_used = bytes;
	old = s->arena;
	old_cap = s->arena_cap;
	s->arena = ro->spare;
	s->arena_cap = ro->spare_cap;
	ro->spare = old;
	ro->spare_cap = old_cap;
	return 0;
}

int rv_reorder_release(struct rv_reorder *ro, uint64_t before, rv_reorder_sink sink, void *ctx)
{
	size_t n = 0;
	int ret = 0;

	for (size_t i = 0; i < ro->nr_streams; i++) {
		struct rv_reorder_stream *s = &ro->streams[i];

		s->next = 0;
		if (s->nr_entries && s->entries[0].time < before)
			ro->heap[n++] = i;
	}
	for (size_t i = n / 2; i-- > 0;)
		sift_down(ro, n, i);
	while (n) {
		struct rv_reorder_stream *s = &ro->streams[ro->heap[0]];
		const struct rv_reorder_entry *e = &s->entries[s->next];

		ret = sink(ctx,
			   (const struct perf_event_header *)(const void *)(s->arena + e->offset),
			   e->time);
		if (ret)
			break;
		if (e->time > ro->released_time)
			ro->released_time = e->time;
		s->next++;
		if (s->next == s->nr_entries || s->entries[s->next].time >= before)
			ro->heap[0] = ro->heap[--n];
		sift_down(ro, n, 0);
	}
	for (size_t i = 0; i < ro->nr_streams; i++) {
		int kept = keep_rest(ro, &ro->streams[i]);

		if (kept && !ret)
			ret = kept;
	}
	return ret;
}

size_t rv_reorder_held(const struct rv_reorder *ro)
{
	size_t held = 0;

	for (size_t i = 0; i < ro->nr_streams; i++)
		held += ro->streams[i].nr_entries;
	return held;
}

uint64_t rv_reorder_late(const struct rv_reorder *ro)
{
	return ro->late;
}
