/* array.h: growing a heap array that a struct owns (items, count, capacity),
 * the one way every module does it.
 *
 * Not here: the arrays' contents or their lifetimes.
 */
#ifndef RV_UTIL_ARRAY_H
#define RV_UTIL_ARRAY_H

#include <stddef.h>

/* Makes room for at least `needed` items of item_size bytes in *items,
 * whose room is *capacity items: doubles it (from `first` when empty) until
 * it is enough. Leaves both unchanged on failure. Returns 0, or -ENOMEM when
 * memory is short or the size would overflow. */
int rv_array_reserve(void *items, size_t *capacity, size_t needed, size_t item_size, size_t first);

/* Room for one item more than count: rv_array_reserve(..., count + 1, ...). */
static inline int rv_array_grow(void *items, size_t *capacity, size_t count, size_t item_size,
				size_t first)
{
	return rv_array_reserve(items, capacity, count + 1, item_size, first);
}

#endif
