/* aux_snapshot.c: the trace's extent in an AUX area; see aux_snapshot.h.
 *
 * Positions are kept as a free-running count ("virtual head") so that every
 * snapshot's offset is where its first byte sits modulo the area size, and
 * offsets grow from one snapshot to the next. When aux_head is masked the
 * count advances by the least number of bytes consistent with what the area
 * shows.
 */
#include "record/aux_snapshot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

int rv_aux_snapshot_state_init(struct rv_aux_snapshot_state *s, size_t ref_size)
{
	memset(s, 0, sizeof(*s));
	if (ref_size) {
		s->ref = malloc(ref_size);
		if (!s->ref)
			return -ENOMEM;
	}
	s->ref_size = ref_size;
	return 0;
}

void rv_aux_snapshot_state_destroy(struct rv_aux_snapshot_state *s)
{
	free(s->ref);
	memset(s, 0, sizeof(*s));
}

/* The newest `take` bytes ending at position pos, as at most two ranges. */
static void set_ranges(struct rv_aux_snapshot *out, uint64_t area_size, uint64_t pos, uint64_t take)
{
	uint64_t start = (pos - take) & (area_size - 1);

	out->size = take;
	out->nr_ranges = 0;
	if (take == 0)
		return;
	if (start + take <= area_size) {
		out->ranges[0] = (struct rv_aux_range){ start, take };
		out->nr_ranges = 1;
		return;
	}
	out->ranges[0] = (struct rv_aux_range){ start, area_size - start };
	out->ranges[1] = (struct rv_aux_range){ 0, take - (area_size - start) };
	out->nr_ranges = 2;
}

/* Pages start zeroed: trace between the write position and the end of the
 * area (looking at its last RV_AUX_FIRST_WRAP_BYTES) can only be there if the
 * writer went round. Bytes before pos are this lap's and prove nothing; bytes
 * rather than words, so that a head a few bytes from the end still finds the
 * previous lap's last bytes. */
static bool written_past(const uint8_t *area, uint64_t area_size, uint64_t pos)
{
	uint64_t from = pos;

	if (area_size > RV_AUX_FIRST_WRAP_BYTES && from < area_size - RV_AUX_FIRST_WRAP_BYTES)
		from = area_size - RV_AUX_FIRST_WRAP_BYTES;
	for (uint64_t at = from; at < area_size; at++)
		if (area[at])
			return true;
	return false;
}

/* Compares (or, with copy, stores) the ref_size bytes ending at end_pos. */
static bool ref_differs(uint8_t *ref, size_t ref_size, const uint8_t *area, uint64_t area_size,
			uint64_t end_pos, bool copy)
{
	uint64_t start = (end_pos - ref_size) & (area_size - 1);
	uint64_t first = area_size - start < ref_size ? area_size - start : ref_size;

	if (copy) {
		memcpy(ref, area + start, first);
		memcpy(ref + first, area, ref_size - first);
		return false;
	}
	return memcmp(ref, area + start, first) || memcmp(ref + first, area, ref_size - first);
}

/* Whether more than area_size - ref_size bytes were written since the
 * previous snapshot: the writer stopped inside the reference bytes, or
 * overwrote them. */
static bool lapped_since(const struct rv_aux_snapshot_state *s, const uint8_t *area,
			 uint64_t area_size, uint64_t pos)
{
	uint64_t mask = area_size - 1;
	uint64_t prev_pos = s->head & mask;
	uint64_t into = (pos - (prev_pos - s->ref_size)) & mask;

	if (into > 0 && into < s->ref_size)
		return true;
	return ref_differs(s->ref, s->ref_size, area, area_size, prev_pos, false);
}

int rv_aux_snapshot_find(struct rv_aux_snapshot_state *s, const struct rv_aux_snapshot_request *req,
			 struct rv_aux_snapshot *out)
{
	const uint8_t *area = req->area;
	uint64_t size = req->area_size;
	uint64_t mask = size - 1;
	uint64_t pos = req->aux_head & mask;
	uint64_t end, fresh; /* new free-running head; bytes new since the previous snapshot */

	memset(out, 0, sizeof(*out));
	if (!is_power_of_two(size) || s->ref_size > size / 4)
		return -EINVAL;
	if (req->free_running) {
		uint64_t prev = s->have_prev ? s->head : 0;

		if (req->aux_head < prev)
			return -EINVAL;
		end = req->aux_head;
		fresh = end - prev;
		out->wrapped = end > size;
		out->lapped = s->have_prev && fresh > size;
	} else {
		uint64_t prev_pos = s->head & mask;
		uint64_t delta = (pos - prev_pos) & mask;
		bool crossed = s->have_prev && pos < prev_pos;

		out->wrapped = s->wrapped || crossed || written_past(area, size, pos);
		if (!out->wrapped) {
			/* Never filled: the count is the position itself. */
			end = pos;
			fresh = pos - (s->have_prev ? prev_pos : 0);
		} else if (!s->have_prev) {
			end = pos + size;
			fresh = size;
		} else if (s->ref_valid) {
			out->lapped = lapped_since(s, area, size, pos);
			if (out->lapped)
				end = s->head + (delta > size - s->ref_size ? delta : delta + size);
			else
				end = s->head + delta;
			fresh = out->lapped ? size : delta;
		} else {
			/* No reference: whether the writer went round again since
			 * cannot be told, so the whole area is taken (as perf
			 * does), and the count moves as little as it can. */
			if (s->wrapped || crossed)
				end = s->head + delta;
			else
				end = s->head + delta + size;
			fresh = size;
		}
	}
	uint64_t held = out->wrapped ? size : (end < size ? end : size);
	uint64_t take = req->since_previous ? (fresh < held ? fresh : held) : held;

	if (req->max_bytes && take > req->max_bytes) {
		take = req->max_bytes;
		out->capped = true;
	}
	set_ranges(out, size, pos, take);
	out->offset = end - take;

	s->head = end;
	s->have_prev = true;
	s->wrapped = out->wrapped;
	if (s->ref_size) {
		ref_differs(s->ref, s->ref_size, area, size, pos, true);
		s->ref_valid = true;
	}
	return 0;
}

void rv_aux_snapshot_copy(const void *area, const struct rv_aux_snapshot *snap, void *dst)
{
	uint8_t *to = dst;

	for (size_t i = 0; i < snap->nr_ranges; i++) {
		memcpy(to, (const uint8_t *)area + snap->ranges[i].start, snap->ranges[i].size);
		to += snap->ranges[i].size;
	}
}

int rv_aux_span(uint64_t area_size, uint64_t from, uint64_t to, struct rv_aux_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	if (!is_power_of_two(area_size) || to < from || to - from > area_size)
		return -EINVAL;
	set_ranges(out, area_size, to & (area_size - 1), to - from);
	out->offset = from;
	return 0;
}
