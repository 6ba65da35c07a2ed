/* array.c: growing owned heap arrays; see array.h. */
#include "util/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int rv_array_reserve(void *items, size_t *capacity, size_t needed, size_t item_size, size_t first)
{
	void **array = items;
	size_t cap = *capacity ? *capacity : (first ? first : 1);
	void *grown;

	if (needed <= *capacity)
		return 0;
	if (!item_size)
		return -ENOMEM;
	while (cap < needed) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	if (cap > SIZE_MAX / item_size)
		return -ENOMEM;
	grown = realloc(*array, cap * item_size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*capacity = cap;
	return 0;
}
