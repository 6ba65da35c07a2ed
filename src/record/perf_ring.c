/* perf_ring.c: draining a perf event's data ring; see perf_ring.h. */
#include "record/perf_ring.h"

#include <errno.h>
#include <string.h>

int rv_perf_ring_drain(const struct rv_perf_ring *r, const char *what, rv_perf_ring_fn fn,
		       void *ctx, struct rv_error *err)
{
	struct perf_event_mmap_page *page = r->base;
	const uint8_t *data = (const uint8_t *)r->base + r->page_size;
	uint64_t size = r->data_bytes;
	uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = page->data_tail;
	int ret = 0;

	while (tail < head) {
		uint64_t offset = tail & (size - 1);
		size_t first = (size_t)(size - offset); /* bytes before the area's end */
		struct perf_event_header hdr;
		const struct perf_event_header *rec;

		if (first >= sizeof(hdr)) {
			memcpy(&hdr, data + offset, sizeof(hdr));
		} else {
			memcpy(&hdr, data + offset, first);
			memcpy((uint8_t *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail || (hdr.size & 7)) {
			/* The kernel never writes this: stop trusting the ring. */
			ret = rv_error_set(err, EIO, "corrupt record in %s (size %u at byte %llu)",
					   what, hdr.size, (unsigned long long)tail);
			tail = head;
			break;
		}
		if (hdr.size <= first) {
			rec = (const void *)(data + offset);
		} else {
			memcpy(r->copy, data + offset, first);
			memcpy(r->copy + first, data, hdr.size - first);
			rec = (const void *)r->copy;
		}
		ret = fn(ctx, rec, err);
		tail += hdr.size;
		if (ret)
			break;
	}
	__atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}
