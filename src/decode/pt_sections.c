/* pt_sections.c: the registry of what libipt's images and section caches
 * hold (see pt_sections.h), and the address map of a snapshot.
 *
 * The registry is the one piece of mutable state of the process here: the
 * images it describes are handed around as libipt's own pointers (options,
 * resolve hooks, per-thread copies), so there is no context to hang it on.
 * Two hash tables keyed by pointer: section caches to their ids' ranges
 * (indexed by isid, which libipt hands out from 1 up), images to their
 * ordered lists.
 *
 * Not here: libipt's own bookkeeping, which this follows and does not
 * replace.
 */
#include "decode/pt_sections.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/array.h"

/* ---- a hash table from pointers to pointers ---- */

struct ptr_slot {
	const void *key; /* NULL: empty (so NULL is never a key) */
	void *value;
};

struct ptr_map {
	struct ptr_slot *slots;
	size_t cap, nr; /* cap: 0 or a power of two, at most half full */
};

static size_t home_slot(const struct ptr_map *m, const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 32) & (m->cap - 1);
}

static void *map_get(const struct ptr_map *m, const void *key)
{
	if (!m->cap || !key)
		return NULL;
	for (size_t i = home_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key)
			return m->slots[i].value;
		if (!m->slots[i].key)
			return NULL;
	}
}

static void map_insert(struct ptr_map *m, const void *key, void *value)
{
	size_t i = home_slot(m, key);

	while (m->slots[i].key)
		i = (i + 1) & (m->cap - 1);
	m->slots[i] = (struct ptr_slot){ key, value };
	m->nr++;
}

/* Adds key (which must not be there). Returns 0, or -1 when memory is short. */
static int map_put(struct ptr_map *m, const void *key, void *value)
{
	if (2 * (m->nr + 1) > m->cap) {
		struct ptr_map bigger = { .cap = m->cap ? 2 * m->cap : 16 };

		bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
		if (!bigger.slots)
			return -1;
		for (size_t i = 0; i < m->cap; i++)
			if (m->slots[i].key)
				map_insert(&bigger, m->slots[i].key, m->slots[i].value);
		free(m->slots);
		*m = bigger;
	}
	map_insert(m, key, value);
	return 0;
}

/* Removes key and returns its value (NULL when it was not there). The
 * slots after it that would no longer be found move back into the gap. */
static void *map_remove(struct ptr_map *m, const void *key)
{
	size_t mask = m->cap - 1, i;
	void *value;

	if (!m->cap || !key)
		return NULL;
	for (i = home_slot(m, key); m->slots[i].key != key; i = (i + 1) & mask)
		if (!m->slots[i].key)
			return NULL;
	value = m->slots[i].value;
	for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
		size_t home = home_slot(m, m->slots[j].key);

		/* j's entry may move to i unless its home lies in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i] = (struct ptr_slot){ NULL, NULL };
	if (!--m->nr) {
		free(m->slots);
		*m = (struct ptr_map){ 0 };
	}
	return value;
}

/* ---- the registry ---- */

struct known_id {
	uint64_t vaddr, size;
	bool known;
};

struct cache_ids {
	struct known_id *ids; /* by isid */
	size_t nr, cap;
};

struct image_sections {
	struct rv_pt_section *v;
	size_t nr, cap;
	uint64_t generation;
	bool opaque;
};

static struct {
	pthread_mutex_t lock;
	struct ptr_map caches, images;
	uint64_t last_generation;
} registry = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void new_generation(struct image_sections *s)
{
	s->generation = ++registry.last_generation;
}

static void make_opaque(struct image_sections *s)
{
	free(s->v);
	s->v = NULL;
	s->nr = s->cap = 0;
	s->opaque = true;
	new_generation(s);
}

/* image's entry, made (empty, with a new generation) when it has none;
 * NULL when memory is short. Called locked. */
static struct image_sections *image_entry(const struct pt_image *image)
{
	struct image_sections *s = map_get(&registry.images, image);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (map_put(&registry.images, image, s)) {
		free(s);
		return NULL;
	}
	new_generation(s);
	return s;
}

/* What rv_pt_sections_add_file remembered of (iscache, isid); NULL when
 * nothing. Called locked. */
static const struct known_id *find_id(const struct pt_image_section_cache *iscache, int isid)
{
	const struct cache_ids *c = map_get(&registry.caches, iscache);

	if (!c || isid < 0 || (size_t)isid >= c->nr || !c->ids[isid].known)
		return NULL;
	return &c->ids[isid];
}

struct pt_image *rv_pt_image_alloc(const char *name)
{
	struct pt_image *image = pt_image_alloc(name);
	struct image_sections *s;

	if (!image)
		return NULL;
	pthread_mutex_lock(&registry.lock);
	/* One that is there was a freed image's, never forgotten. */
	s = image_entry(image);
	if (s) {
		free(s->v);
		*s = (struct image_sections){ 0 };
		new_generation(s);
	}
	pthread_mutex_unlock(&registry.lock);
	if (!s) {
		pt_image_free(image);
		return NULL;
	}
	return image;
}

/* The bytes libipt maps for a file section: none when the offset is past
 * the end (libipt refuses it). */
static bool file_section_size(const char *file, uint64_t offset, uint64_t size, uint64_t *out)
{
	struct stat st;
	uint64_t length;

	if (stat(file, &st) || st.st_size < 0)
		return false;
	length = (uint64_t)st.st_size;
	if (length <= offset)
		return false;
	*out = size < length - offset ? size : length - offset;
	return true;
}

int rv_pt_sections_add_file(struct pt_image_section_cache *iscache, const char *file,
			    uint64_t offset, uint64_t size, uint64_t vaddr)
{
	int isid = pt_iscache_add_file(iscache, file, offset, size, vaddr);
	struct cache_ids *c;
	uint64_t real_size;
	int ret = isid;

	if (isid < 0)
		return isid;
	if (!file_section_size(file, offset, size, &real_size))
		return -pte_bad_file;
	pthread_mutex_lock(&registry.lock);
	c = map_get(&registry.caches, iscache);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || map_put(&registry.caches, iscache, c)) {
			free(c);
			c = NULL;
		}
	}
	if (!c || rv_array_reserve(&c->ids, &c->cap, (size_t)isid + 1, sizeof(*c->ids), 64)) {
		ret = -pte_nomem;
	} else {
		if ((size_t)isid >= c->nr) {
			memset(c->ids + c->nr, 0, ((size_t)isid + 1 - c->nr) * sizeof(*c->ids));
			c->nr = (size_t)isid + 1;
		}
		c->ids[isid] = (struct known_id){ vaddr, real_size, true };
	}
	pthread_mutex_unlock(&registry.lock);
	return ret;
}

int rv_pt_sections_add_cached(struct pt_image *image, struct pt_image_section_cache *iscache,
			      int isid)
{
	struct image_sections *s;
	const struct known_id *id;
	int ret;

	if (!image || !iscache)
		return pt_image_add_cached(image, iscache, isid, NULL);
	pthread_mutex_lock(&registry.lock);
	s = image_entry(image);
	id = find_id(iscache, isid);
	if (!s || (id && !s->opaque && rv_array_grow(&s->v, &s->cap, s->nr, sizeof(*s->v), 16))) {
		pthread_mutex_unlock(&registry.lock);
		return -pte_nomem;
	}
	ret = pt_image_add_cached(image, iscache, isid, NULL);
	if (ret >= 0 && !s->opaque) {
		if (id) {
			s->v[s->nr++] =
				(struct rv_pt_section){ id->vaddr, id->size, isid, iscache };
			new_generation(s);
		} else {
			make_opaque(s);
		}
	}
	pthread_mutex_unlock(&registry.lock);
	return ret;
}

int rv_pt_sections_copy(struct pt_image *copy, const struct pt_image *source)
{
	struct image_sections *to, *from;
	int ignored = 0;

	if (!copy || !source || copy == source)
		return pt_image_copy(copy, source);
	pthread_mutex_lock(&registry.lock);
	from = map_get(&registry.images, source);
	to = image_entry(copy);
	if (!to || (from && !from->opaque && !to->opaque &&
		    rv_array_reserve(&to->v, &to->cap, to->nr + from->nr, sizeof(*to->v), 16))) {
		pthread_mutex_unlock(&registry.lock);
		return -pte_nomem;
	}
	if (!from || from->opaque) {
		ignored = pt_image_copy(copy, source);
		if (ignored >= 0 && !to->opaque)
			make_opaque(to);
	} else {
		size_t added = 0;

		for (size_t i = 0; i < from->nr; i++) {
			const struct rv_pt_section *s = &from->v[i];

			if (pt_image_add_cached(copy, s->iscache, s->isid, NULL) < 0)
				ignored++;
			else if (!to->opaque)
				to->v[to->nr + added++] = *s;
		}
		to->nr += added;
		if (added)
			new_generation(to);
	}
	pthread_mutex_unlock(&registry.lock);
	return ignored;
}

void rv_pt_image_free(struct pt_image *image)
{
	struct image_sections *s;

	if (!image)
		return;
	pthread_mutex_lock(&registry.lock);
	s = map_remove(&registry.images, image);
	pthread_mutex_unlock(&registry.lock);
	if (s)
		free(s->v);
	free(s);
	pt_image_free(image);
}

void rv_pt_sections_forget_iscache(const struct pt_image_section_cache *iscache)
{
	struct cache_ids *c;

	if (!iscache)
		return;
	pthread_mutex_lock(&registry.lock);
	c = map_remove(&registry.caches, iscache);
	for (size_t i = 0; c && i < registry.images.cap; i++) {
		struct image_sections *s = registry.images.slots[i].value;

		for (size_t j = 0; s && j < s->nr; j++) {
			if (s->v[j].iscache == iscache) {
				make_opaque(s);
				break;
			}
		}
	}
	pthread_mutex_unlock(&registry.lock);
	if (c)
		free(c->ids);
	free(c);
}

/* ---- snapshots and their address map ---- */

/* Whether libipt can match an address in s at all. */
static bool holds_bytes(const struct rv_pt_section *s)
{
	return s->size && s->vaddr + s->size > s->vaddr;
}

struct by_start {
	uint64_t vaddr;
	size_t index;
};

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int compare_start(const void *a, const void *b)
{
	return compare_u64(&((const struct by_start *)a)->vaddr,
			   &((const struct by_start *)b)->vaddr);
}

/* A max-heap of section indices: the newest section on top. */
static void heap_push(size_t *heap, size_t *nr, size_t index)
{
	size_t i = (*nr)++;

	while (i && heap[(i - 1) / 2] < index) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = index;
}

static void heap_pop(size_t *heap, size_t *nr)
{
	size_t last = heap[--*nr], i = 0;

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= *nr)
			break;
		if (child + 1 < *nr && heap[child + 1] > heap[child])
			child++;
		if (heap[child] <= last)
			break;
		heap[i] = heap[child];
		i = child;
	}
	if (*nr)
		heap[i] = last;
}

/* The pieces of sections[0..nr) into pieces (room for 2 nr), a sweep over
 * the sections' ends: between two consecutive ends, the newest section
 * that covers the stretch holds it. Returns how many, or SIZE_MAX when
 * memory is short. */
static size_t address_map(const struct rv_pt_section *sections, size_t nr,
			  struct rv_pt_section_piece *pieces)
{
	uint64_t *ends = malloc(2 * nr * sizeof(*ends) + 1);
	struct by_start *starts = malloc(nr * sizeof(*starts) + 1);
	size_t *heap = malloc(nr * sizeof(*heap) + 1);
	size_t nr_ends = 0, nr_starts = 0, nr_heap = 0, nr_pieces = 0, next = 0;

	if (!ends || !starts || !heap) {
		free(ends);
		free(starts);
		free(heap);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < nr; i++) {
		if (!holds_bytes(&sections[i]))
			continue;
		ends[nr_ends++] = sections[i].vaddr;
		ends[nr_ends++] = sections[i].vaddr + sections[i].size;
		starts[nr_starts++] = (struct by_start){ sections[i].vaddr, i };
	}
	qsort(ends, nr_ends, sizeof(*ends), compare_u64);
	qsort(starts, nr_starts, sizeof(*starts), compare_start);
	for (size_t k = 0; k + 1 < nr_ends; k++) {
		uint64_t at = ends[k], until = ends[k + 1];

		if (at == until)
			continue;
		while (next < nr_starts && starts[next].vaddr <= at)
			heap_push(heap, &nr_heap, starts[next++].index);
		while (nr_heap && sections[heap[0]].vaddr + sections[heap[0]].size <= at)
			heap_pop(heap, &nr_heap);
		if (!nr_heap)
			continue;
		if (nr_pieces && pieces[nr_pieces - 1].section == heap[0] &&
		    pieces[nr_pieces - 1].end == at)
			pieces[nr_pieces - 1].end = until;
		else
			pieces[nr_pieces++] = (struct rv_pt_section_piece){ at, until, heap[0] };
	}
	free(ends);
	free(starts);
	free(heap);
	return nr_pieces;
}

int rv_pt_sections_get(const struct pt_image *image, struct rv_pt_section_list *out)
{
	const struct image_sections *s;
	struct rv_pt_section_piece *pieces;
	size_t nr;

	*out = (struct rv_pt_section_list){ 0 };
	pthread_mutex_lock(&registry.lock);
	s = map_get(&registry.images, image);
	if (!s || s->opaque) {
		pthread_mutex_unlock(&registry.lock);
		return -1;
	}
	nr = s->nr;
	/* the sections, then room for the pieces: at most 2 nr - 1 */
	out->sections = malloc(nr * sizeof(*out->sections) + 2 * nr * sizeof(*pieces) + 1);
	if (!out->sections) {
		pthread_mutex_unlock(&registry.lock);
		return -2;
	}
	if (nr)
		memcpy(out->sections, s->v, nr * sizeof(*out->sections));
	out->nr = nr;
	out->generation = s->generation;
	pthread_mutex_unlock(&registry.lock);

	pieces = (struct rv_pt_section_piece *)(out->sections + nr);
	out->nr_pieces = address_map(out->sections, nr, pieces);
	if (out->nr_pieces == SIZE_MAX) {
		free(out->sections);
		*out = (struct rv_pt_section_list){ 0 };
		return -2;
	}
	out->pieces = pieces;
	return 0;
}

uint64_t rv_pt_sections_generation(const struct pt_image *image)
{
	const struct image_sections *s;
	uint64_t generation;

	pthread_mutex_lock(&registry.lock);
	s = map_get(&registry.images, image);
	generation = s && !s->opaque ? s->generation : 0;
	pthread_mutex_unlock(&registry.lock);
	return generation;
}

/* The rule itself, for a list without pieces. */
static const struct rv_pt_section *scan_for(const struct rv_pt_section_list *list, uint64_t addr,
					    uint64_t *end)
{
	for (size_t i = list->nr; i-- > 0;) {
		const struct rv_pt_section *s = &list->sections[i];
		uint64_t until;

		if (!holds_bytes(s) || addr < s->vaddr || addr - s->vaddr >= s->size)
			continue;
		until = s->vaddr + s->size;
		for (size_t j = i + 1; j < list->nr; j++) {
			const struct rv_pt_section *later = &list->sections[j];

			if (holds_bytes(later) && later->vaddr > addr && later->vaddr < until)
				until = later->vaddr;
		}
		*end = until;
		return s;
	}
	return NULL;
}

const struct rv_pt_section *rv_pt_section_at(const struct rv_pt_section_list *list, uint64_t addr,
					     uint64_t *end)
{
	size_t low = 0, high;

	if (!list->pieces)
		return scan_for(list, addr, end);
	/* the first piece that begins after addr */
	high = list->nr_pieces;
	while (low < high) {
		size_t mid = low + (high - low) / 2;

		if (list->pieces[mid].begin <= addr)
			low = mid + 1;
		else
			high = mid;
	}
	if (!low || addr >= list->pieces[low - 1].end)
		return NULL;
	*end = list->pieces[low - 1].end;
	return &list->sections[list->pieces[low - 1].section];
}
