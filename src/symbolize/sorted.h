/* sorted.h: the one binary search of src/symbolize, over arrays of structs
 * sorted by a uint64_t field (symbols and ranges by start, mappings by end).
 * Inline, because the PT decoding threads' function lookups go through it.
 *
 * Not here: sorting, or what a caller makes of the index it gets.
 */
#ifndef RV_SYMBOLIZE_SORTED_H
#define RV_SYMBOLIZE_SORTED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The index of the first of the nr items (stride bytes apart, each with its
 * key at byte offset key_offset, in ascending key order) whose key is above
 * `key`: one past the last item whose key is at or below it (0: none is). */
static inline size_t rv_sorted_upper(const void *items, size_t nr, size_t stride, size_t key_offset,
				     uint64_t key)
{
	const char *base;
	size_t lo = 0, hi = nr;

	if (!nr)
		return 0; /* items may be NULL: no pointer arithmetic on it */
	base = (const char *)items + key_offset;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;

		memcpy(&k, base + mid * stride, sizeof(k));
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
