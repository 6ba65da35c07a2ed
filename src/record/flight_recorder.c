/* flight_recorder.c: a byte ring of whole records; see flight_recorder.h.
 *
 * Each entry is an 8-byte prefix {u32 length, u32 kind} and the record. An
 * entry never wraps: when it does not fit before the end of the buffer, a
 * "skip" prefix marks the rest of the buffer unused and the entry goes to the
 * start. The ring is full when tail has caught up with head and count > 0.
 *
 * In a file, the header page is kept so that it never names bytes being
 * written: evictions move head (and count) before the new entry is written
 * over what they freed, and tail moves only once the entry is whole.
 */
#include "record/flight_recorder.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/private_file.h"

enum { ENTRY_RECORD = 1, ENTRY_SKIP = 2 };

struct entry_prefix {
	uint32_t length; /* record bytes after the prefix (ENTRY_SKIP: unused) */
	uint32_t kind;
};

/* The ring's size: capacity rounded down to whole 8-byte words, 64 at least. */
static size_t ring_capacity(size_t capacity)
{
	capacity &= ~(size_t)7;
	return capacity < 64 ? 64 : capacity;
}

int rv_flight_recorder_init(struct rv_flight_recorder *fr, size_t capacity)
{
	memset(fr, 0, sizeof(*fr));
	capacity = ring_capacity(capacity);
	fr->buf = malloc(capacity);
	if (!fr->buf)
		return -ENOMEM;
	fr->capacity = capacity;
	return 0;
}

/* The bookkeeping into the file's header, in this order: count and head
 * first (what was evicted is gone before its bytes are reused), tail last
 * (a new entry counts once it is whole). */
static void sync_head(struct rv_flight_recorder *fr)
{
	if (!fr->file)
		return;
	__atomic_store_n(&fr->file->count, fr->count, __ATOMIC_RELEASE);
	__atomic_store_n(&fr->file->head, fr->head, __ATOMIC_RELEASE);
}

static void sync_tail(struct rv_flight_recorder *fr)
{
	if (!fr->file)
		return;
	__atomic_store_n(&fr->file->tail, fr->tail, __ATOMIC_RELEASE);
	__atomic_store_n(&fr->file->count, fr->count, __ATOMIC_RELEASE);
}

int rv_flight_recorder_init_file(struct rv_flight_recorder *fr, size_t capacity, const char *path)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct rv_error ignored = { 0 };
	void *map;
	int fd, e;

	memset(fr, 0, sizeof(*fr));
	capacity = ring_capacity(capacity);
	fr->path = strdup(path);
	if (!fr->path)
		return -ENOMEM;
	/* a killed run's file in a --working-directory used again goes; 0600
	 * whatever was there, a symbolic link refused */
	fd = rv_private_file_create(path, &ignored);
	if (fd < 0) {
		free(fr->path);
		fr->path = NULL;
		return fd;
	}
	fr->file_bytes = page + capacity;
	if (ftruncate(fd, (off_t)fr->file_bytes)) {
		e = -errno;
		goto fail;
	}
	map = mmap(NULL, fr->file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		e = -errno;
		goto fail;
	}
	close(fd);
	fr->file = map;
	fr->buf = (uint8_t *)map + page;
	fr->capacity = capacity;
	fr->file->ring_offset = page;
	fr->file->capacity = capacity;
	memcpy(fr->file->magic, RV_FLIGHT_FILE_MAGIC, sizeof(fr->file->magic));
	return 0;
fail:
	close(fd);
	unlink(path);
	free(fr->path);
	fr->path = NULL;
	return e;
}

void rv_flight_recorder_destroy(struct rv_flight_recorder *fr)
{
	if (fr->file) {
		munmap(fr->file, fr->file_bytes);
		unlink(fr->path);
	} else {
		free(fr->buf);
	}
	free(fr->path);
	memset(fr, 0, sizeof(*fr));
}

void rv_flight_recorder_take(struct rv_flight_recorder *fr, struct rv_flight_recorder *rest)
{
	if (!fr->file) {
		rv_flight_recorder_destroy(fr);
		*fr = *rest;
		memset(rest, 0, sizeof(*rest));
		return;
	}
	fr->head = fr->tail = fr->count = 0;
	sync_head(fr);
	sync_tail(fr);
	memcpy(fr->buf, rest->buf, fr->capacity < rest->capacity ? fr->capacity : rest->capacity);
	fr->head = rest->head;
	fr->count = rest->count;
	fr->evicted_records = rest->evicted_records;
	fr->evicted_bytes = rest->evicted_bytes;
	fr->oversized_records = rest->oversized_records;
	sync_head(fr);
	fr->tail = rest->tail;
	sync_tail(fr);
	rv_flight_recorder_destroy(rest);
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
	if (fr->count == 0) {
		fr->head = fr->tail = 0;
		sync_head(fr);
		sync_tail(fr);
		return;
	}
	sync_head(fr);
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
	sync_tail(fr);
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

/* ---- reading what a recorder killed left ---- */

int rv_flight_file_read(const char *path, int (*fn)(void *ctx, const struct perf_event_header *rec),
			void *ctx, struct rv_error *err)
{
	struct rv_flight_file_header h;
	struct stat st;
	uint8_t *map, *ring;
	uint64_t *copy = NULL;
	size_t offset, walked = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return rv_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) || (uint64_t)st.st_size < sizeof(h)) {
		close(fd);
		return rv_error_set(err, EINVAL, "'%s' is not a flight recorder's file", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return rv_error_set(err, errno, "cannot map '%s': %s", path, strerror(errno));
	memcpy(&h, map, sizeof(h));
	if (memcmp(h.magic, RV_FLIGHT_FILE_MAGIC, sizeof(h.magic)) || h.ring_offset < sizeof(h) ||
	    h.ring_offset > (uint64_t)st.st_size || h.capacity % 8 || h.capacity < 64 ||
	    h.capacity > (uint64_t)st.st_size - h.ring_offset || h.head >= h.capacity ||
	    h.tail >= h.capacity || h.head % 8 || h.tail % 8) {
		munmap(map, (size_t)st.st_size);
		return rv_error_set(err, EINVAL,
				    "'%s' is not a flight recorder's file, or its header is "
				    "corrupt",
				    path);
	}
	ring = map + h.ring_offset;
	copy = malloc(65536);
	if (!copy) {
		munmap(map, (size_t)st.st_size);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	/* From head to tail; all the way round when the ring is full. */
	offset = (size_t)h.head;
	while (h.count && walked < h.capacity) {
		struct entry_prefix p;
		struct perf_event_header rec;

		if (walked && offset == h.tail)
			break;
		if (offset + sizeof(p) > h.capacity) {
			walked += h.capacity - offset;
			offset = 0;
			continue;
		}
		memcpy(&p, ring + offset, sizeof(p));
		if (p.kind == ENTRY_SKIP) {
			walked += h.capacity - offset;
			offset = 0;
			continue;
		}
		if (p.kind != ENTRY_RECORD || p.length < sizeof(rec) || p.length % 8 ||
		    p.length > 65528 || p.length > h.capacity - offset - sizeof(p))
			break; /* a torn or corrupt entry: what came before stands */
		memcpy(&rec, ring + offset + sizeof(p), sizeof(rec));
		if (rec.size != p.length)
			break;
		memcpy(copy, ring + offset + sizeof(p), p.length);
		ret = fn(ctx, (const struct perf_event_header *)(void *)copy);
		if (ret)
			break;
		offset += sizeof(p) + p.length;
		walked += sizeof(p) + p.length;
		if (offset == h.capacity)
			offset = 0;
		if (offset == h.tail)
			break;
	}
	free(copy);
	munmap(map, (size_t)st.st_size);
	return ret;
}
