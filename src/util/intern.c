/* intern.c: the string pool; see intern.h.
 *
 * Strings are packed into large chunks and found again through an
 * open-addressing table of (hash, length, pointer), so interning a name costs
 * one hash and usually one comparison.
 */
#include "util/intern.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE (256 * 1024)
#define MIN_SLOTS  1024

struct rv_intern_slot {
	const char *str; /* NULL: empty */
	uint32_t hash;
	uint32_t len;
};

struct rv_intern_chunk {
	struct rv_intern_chunk *next;
	size_t used, size;
	char data[];
};

static uint32_t hash_bytes(const char *s, size_t len)
{
	/* FNV-1a, then a final mix so that the low bits used as index are spread. */
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

void rv_intern_init(struct rv_intern *pool)
{
	memset(pool, 0, sizeof(*pool));
}

void rv_intern_destroy(struct rv_intern *pool)
{
	struct rv_intern_chunk *c = pool->chunks;

	while (c) {
		struct rv_intern_chunk *next = c->next;

		free(c);
		c = next;
	}
	free(pool->slots);
	memset(pool, 0, sizeof(*pool));
}

static char *copy_into_chunk(struct rv_intern *pool, const char *s, size_t len)
{
	struct rv_intern_chunk *c = pool->chunks;
	char *copy;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > CHUNK_SIZE / 4 ? len + 1 : CHUNK_SIZE;
		struct rv_intern_chunk *fresh = malloc(sizeof(*fresh) + size);

		if (!fresh)
			return NULL;
		fresh->used = 0;
		fresh->size = size;
		if (c && size != CHUNK_SIZE) {
			/* A long string gets a chunk of its own, kept behind the
			 * current one so the current one keeps filling up. */
			fresh->next = c->next;
			c->next = fresh;
		} else {
			fresh->next = c;
			pool->chunks = fresh;
		}
		c = fresh;
	}
	copy = c->data + c->used;
	memcpy(copy, s, len);
	copy[len] = '\0';
	c->used += len + 1;
	return copy;
}

static int grow(struct rv_intern *pool)
{
	size_t capacity = pool->capacity ? pool->capacity * 2 : MIN_SLOTS;
	struct rv_intern_slot *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < pool->capacity; i++) {
		const struct rv_intern_slot *old = &pool->slots[i];
		size_t at;

		if (!old->str)
			continue;
		at = old->hash & (capacity - 1);
		while (slots[at].str)
			at = (at + 1) & (capacity - 1);
		slots[at] = *old;
	}
	free(pool->slots);
	pool->slots = slots;
	pool->capacity = capacity;
	return 0;
}

const char *rv_intern_n(struct rv_intern *pool, const char *s, size_t len)
{
	uint32_t hash;
	size_t at;
	char *copy;

	if (len > UINT32_MAX)
		return NULL;
	if ((pool->count + 1) * 2 > pool->capacity && grow(pool))
		return NULL;
	hash = hash_bytes(s, len);
	at = hash & (pool->capacity - 1);
	for (;;) {
		struct rv_intern_slot *slot = &pool->slots[at];

		if (!slot->str)
			break;
		if (slot->hash == hash && slot->len == len && memcmp(slot->str, s, len) == 0)
			return slot->str;
		at = (at + 1) & (pool->capacity - 1);
	}
	copy = copy_into_chunk(pool, s, len);
	if (!copy)
		return NULL;
	pool->slots[at].str = copy;
	pool->slots[at].hash = hash;
	pool->slots[at].len = (uint32_t)len;
	pool->count++;
	return copy;
}

const char *rv_intern(struct rv_intern *pool, const char *s)
{
	return rv_intern_n(pool, s, strlen(s));
}
