/* intern.h: a string pool: one copy per distinct value, kept until the pool
 * goes. The symbolizer's names, perf script's, the function decoder's, the
 * trace builder's copies of event names, the --dry-run plan's text.
 *
 * Callers may compare pooled strings by pointer: the same value always
 * yields the same pointer. Strings are never freed one by one; the pool goes
 * away with its owner.
 *
 * This is not a general-purpose map: it only answers "the pooled copy of this".
 */
#ifndef RV_UTIL_INTERN_H
#define RV_UTIL_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct rv_intern_slot;
struct rv_intern_chunk;

struct rv_intern {
	struct rv_intern_slot *slots;
	size_t capacity; /* a power of two, or 0 before the first string */
	size_t count;
	struct rv_intern_chunk *chunks; /* the one being filled first */
};

void rv_intern_init(struct rv_intern *pool);
void rv_intern_destroy(struct rv_intern *pool);

/* The pooled copy of s[0..len) (which need not be terminated), NULL only when
 * memory runs out. */
const char *rv_intern_n(struct rv_intern *pool, const char *s, size_t len);
const char *rv_intern(struct rv_intern *pool, const char *s);

#endif
