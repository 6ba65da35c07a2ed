/* bytes.c: bytes appended to a growing or a fixed buffer, and records built
 * in one; see bytes.h. */
#include "capture/bytes.h"

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/array.h"

void rv_bytes_init_fixed(struct rv_bytes *b, void *buf, size_t size)
{
	b->data = buf;
	b->len = 0;
	b->cap = buf ? size : 0;
	b->fixed = true;
	b->failed = false;
}

void rv_bytes_put(struct rv_bytes *b, const void *p, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (n > b->cap - b->len && (b->fixed || n > SIZE_MAX - b->len ||
				    rv_array_reserve(&b->data, &b->cap, b->len + n, 1, 256))) {
		b->failed = true;
		return;
	}
	if (p)
		memcpy(b->data + b->len, p, n);
	else
		memset(b->data + b->len, 0, n);
	b->len += n;
}

void rv_bytes_pad_to(struct rv_bytes *b, size_t alignment)
{
	rv_bytes_put(b, NULL, (alignment - b->len % alignment) % alignment);
}

void rv_bytes_destroy(struct rv_bytes *b)
{
	if (!b->fixed)
		free(b->data);
	memset(b, 0, sizeof(*b));
}

void rv_record_begin(struct rv_bytes *b, void *buf, size_t buf_size, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	rv_bytes_init_fixed(b, buf,
			    buf_size < RV_RECORD_MAX_BYTES ? buf_size : RV_RECORD_MAX_BYTES);
	rv_bytes_put(b, &h, sizeof(h));
}

size_t rv_record_end(struct rv_bytes *b)
{
	uint16_t size;

	if (b->failed)
		return 0;
	size = (uint16_t)b->len;
	memcpy(b->data + offsetof(struct perf_event_header, size), &size, sizeof(size));
	return b->len;
}
