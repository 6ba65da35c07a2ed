/* bytes.h: bytes appended one field after another, for what the capture
 * module lays out itself: the bodies of perf.data's header features (a heap
 * buffer that grows) and records (the caller's buffer, of a fixed size, with
 * the perf_event_header's size filled in at the end).
 *
 * A put that does not fit (memory is short, or a fixed buffer is full) marks
 * the buffer failed, and every later put does nothing: a builder checks once,
 * at the end. Values are stored in the machine's byte order, as perf.data's
 * are.
 *
 * Not here: what the bytes mean (perf_data_write.c, build_id.c, synth.c,
 * auxtrace.c).
 */
#ifndef RV_CAPTURE_BYTES_H
#define RV_CAPTURE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A zeroed struct rv_bytes is an empty heap buffer. */
struct rv_bytes {
	uint8_t *data;
	size_t len, cap;
	bool fixed; /* data is the caller's: never grown, never freed */
	bool failed;
};

/* Fills the caller's `size` bytes at buf (none when buf is NULL). */
void rv_bytes_init_fixed(struct rv_bytes *b, void *buf, size_t size);

/* Appends n bytes from p, or n zeros when p is NULL. */
void rv_bytes_put(struct rv_bytes *b, const void *p, size_t n);

/* Zeros up to the next multiple of alignment. */
void rv_bytes_pad_to(struct rv_bytes *b, size_t alignment);

/* Frees a heap buffer's bytes; either way the buffer is empty again. */
void rv_bytes_destroy(struct rv_bytes *b);

static inline void rv_bytes_put_u8(struct rv_bytes *b, uint8_t v)
{
	rv_bytes_put(b, &v, sizeof(v));
}

static inline void rv_bytes_put_u32(struct rv_bytes *b, uint32_t v)
{
	rv_bytes_put(b, &v, sizeof(v));
}

static inline void rv_bytes_put_u64(struct rv_bytes *b, uint64_t v)
{
	rv_bytes_put(b, &v, sizeof(v));
}

/* The largest record: its size is a u16 and a multiple of 8. */
#define RV_RECORD_MAX_BYTES 65528

/* Starts a record in the caller's buf of buf_size bytes (no alignment
 * needed): its perf_event_header, whose size rv_record_end fills in. */
void rv_record_begin(struct rv_bytes *b, void *buf, size_t buf_size, uint32_t type, uint16_t misc);

/* The record's size in bytes, now in its header; 0 when it did not fit in
 * the buffer or in RV_RECORD_MAX_BYTES. The caller's fields keep it a
 * multiple of 8. */
size_t rv_record_end(struct rv_bytes *b);

#endif
