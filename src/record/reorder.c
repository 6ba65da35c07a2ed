/* reorder.c: time-ordering of records from several rings; see reorder.h. */
#include "record/reorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

void rv_reorder_init(struct rv_reorder *ro)
{
	memset(ro, 0, sizeof(*ro));
}

void rv_reorder_destroy(struct rv_reorder *ro)
{
	free(ro->arena);
	free(ro->spare);
	free(ro->entries);
	memset(ro, 0, sizeof(*ro));
}

int rv_reorder_push(struct rv_reorder *ro, const struct perf_event_header *rec, uint64_t time)
{
	struct rv_reorder_entry *e;

	if (rv_array_reserve(&ro->arena, &ro->arena_cap, ro->arena_used + rec->size, 1, 1 << 20) ||
	    rv_array_grow(&ro->entries, &ro->cap_entries, ro->nr_entries, sizeof(*ro->entries),
			  4096))
		return -ENOMEM;
	e = &ro->entries[ro->nr_entries++];
	e->time = time;
	e->seq = ro->next_seq++;
	e->offset = ro->arena_used;
	e->size = rec->size;
	memcpy(ro->arena + ro->arena_used, rec, rec->size);
	ro->arena_used += (rec->size + 7) & ~7u;
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	const struct rv_reorder_entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int rv_reorder_release(struct rv_reorder *ro, uint64_t before, rv_reorder_sink sink, void *ctx)
{
	size_t released = 0, kept_bytes = 0;
	int ret = 0;

	if (ro->nr_entries == 0)
		return 0;
	qsort(ro->entries, ro->nr_entries, sizeof(*ro->entries), compare_entries);
	while (released < ro->nr_entries && ro->entries[released].time < before) {
		const struct rv_reorder_entry *e = &ro->entries[released];

		ret = sink(ctx,
			   (const struct perf_event_header *)(const void *)(ro->arena + e->offset),
			   e->time);
		if (ret)
			break;
		released++;
	}
	if (released == 0)
		return ret;
	/* Compact what is kept into the spare arena, in time order, and swap: two
	 * arenas that live as long as the recording, rather than a fresh one per
	 * release (which would fault in new pages every time). */
	if (released < ro->nr_entries) {
		if (ro->spare_cap < ro->arena_cap) {
			uint8_t *grown = realloc(ro->spare, ro->arena_cap);

			if (!grown)
				return -ENOMEM;
			ro->spare = grown;
			ro->spare_cap = ro->arena_cap;
		}
		for (size_t i = released; i < ro->nr_entries; i++) {
			struct rv_reorder_entry *e = &ro->entries[i];

			memcpy(ro->spare + kept_bytes, ro->arena + e->offset, e->size);
			e->offset = kept_bytes;
			kept_bytes += (e->size + 7) & ~7u;
		}
		{
			uint8_t *old_arena = ro->arena;
			size_t old_cap = ro->arena_cap;

			ro->arena = ro->spare;
			ro->arena_cap = ro->spare_cap;
			ro->spare = old_arena;
			ro->spare_cap = old_cap;
		}
		memmove(ro->entries, ro->entries + released,
			(ro->nr_entries - released) * sizeof(*ro->entries));
	}
	ro->nr_entries -= released;
	ro->arena_used = kept_bytes;
	return ret;
}
