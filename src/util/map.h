/* map.h: pointers by 64-bit key (a pid, a pooled string's or an object's
 * address), with open addressing and linear probing: the symbolizer's
 * processes and files, the unwinder's sessions.
 *
 * Not here: ordering or iteration order guarantees; walk the slots to visit
 * every value (an empty slot's value is NULL).
 */
#ifndef RV_UTIL_MAP_H
#define RV_UTIL_MAP_H

#include <stddef.h>
#include <stdint.h>

struct rv_map_slot {
	uint64_t key;
	void *value; /* NULL: a free slot */
};

struct rv_map {
	struct rv_map_slot *slots;
	size_t cap, nr; /* cap: a power of two, or 0 */
};

/* A good spread of the bits of x (splitmix64's finisher). */
static inline uint64_t rv_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* The value under key, or NULL. */
void *rv_map_get(const struct rv_map *m, uint64_t key);

/* Puts value (not NULL) under key, replacing what was there. Returns 0, or
 * -ENOMEM (m unchanged). */
int rv_map_put(struct rv_map *m, uint64_t key, void *value);

/* Forgets key (the value is the caller's). */
void rv_map_remove(struct rv_map *m, uint64_t key);

/* Frees the slots (not the values) and empties m. */
void rv_map_destroy(struct rv_map *m);

#endif
