/* map.c: pointers by 64-bit key; see map.h. */
#include "util/map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The slot holding key, or the free one where it would go (m->cap > 0). */
static size_t probe(const struct rv_map *m, uint64_t key)
{
	size_t at = rv_mix64(key) & (m->cap - 1);

	while (m->slots[at].value && m->slots[at].key != key)
		at = (at + 1) & (m->cap - 1);
	return at;
}

void *rv_map_get(const struct rv_map *m, uint64_t key)
{
	return m->cap ? m->slots[probe(m, key)].value : NULL;
}

int rv_map_put(struct rv_map *m, uint64_t key, void *value)
{
	size_t at;

	if ((m->nr + 1) * 2 > m->cap) {
		struct rv_map old = *m;

		m->cap = old.cap ? old.cap * 2 : 64;
		m->slots = calloc(m->cap, sizeof(*m->slots));
		if (!m->slots) {
			*m = old;
			return -ENOMEM;
		}
		for (size_t i = 0; i < old.cap; i++) {
			if (old.slots[i].value)
				m->slots[probe(m, old.slots[i].key)] = old.slots[i];
		}
		free(old.slots);
	}
	at = probe(m, key);
	if (!m->slots[at].value)
		m->nr++;
	m->slots[at] = (struct rv_map_slot){ key, value };
	return 0;
}

void rv_map_remove(struct rv_map *m, uint64_t key)
{
	size_t mask = m->cap - 1, at;

	if (!m->cap || !m->slots[at = probe(m, key)].value)
		return;
	m->slots[at].value = NULL;
	m->nr--;
	/* Linear probing: re-place the rest of the cluster so no chain breaks. */
	for (size_t i = (at + 1) & mask; m->slots[i].value; i = (i + 1) & mask) {
		struct rv_map_slot moved = m->slots[i];

		m->slots[i].value = NULL;
		m->slots[probe(m, moved.key)] = moved;
	}
}

void rv_map_destroy(struct rv_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
