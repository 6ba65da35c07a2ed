/* pt_walkers.h: whether two decodes of one buffer, one by libipt's block
 * decoder (ref) and one by the fast walker (got), counted the same: every
 * count of rv_pt_stats but libipt's blocks (whose cut the fast walker does
 * not share) and the chunks (which follow chunk_bytes), the error sites, and
 * each walker's share of the bytes.
 *
 * Header-only: the fuzz harnesses (tests/fuzz) use it too, and they link no
 * tests/support objects.
 *
 * Not here: the events (each caller keeps its own lists).
 */
#ifndef RV_TESTS_PT_WALKERS_H
#define RV_TESTS_PT_WALKERS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "decode/pt_decoder.h"

/* False when they counted the same; true with the first difference in
 * words in text. */
static inline bool pt_walkers_stats_differ(const struct rv_pt_stats *ref,
					   const struct rv_pt_stats *got, char *text, size_t size)
{
#define SAME(field)                                                                                \
	do {                                                                                       \
		if (got->field != ref->field) {                                                    \
			snprintf(text, size, #field " %" PRIu64 ", libipt's %" PRIu64,             \
				 (uint64_t)got->field, (uint64_t)ref->field);                      \
			return true;                                                               \
		}                                                                                  \
	} while (0)
	SAME(bytes);
	SAME(insns);
	SAME(calls);
	SAME(returns);
	SAME(jumps);
	SAME(syscalls);
	SAME(interrupts);
	SAME(errors);
	SAME(overflows);
	SAME(nomap);
	SAME(skipped_bytes);
	SAME(first_time);
	SAME(last_time);
	SAME(nr_sites);
#undef SAME
	for (size_t i = 0; i < ref->nr_sites; i++) {
		const struct rv_pt_error_site *a = &ref->sites[i], *b = &got->sites[i];

		if (a->offset != b->offset || a->ip != b->ip || a->code != b->code) {
			snprintf(text, size,
				 "error %zu at offset %" PRIu64 " ip %#" PRIx64
				 " (%s), libipt's at "
				 "offset %" PRIu64 " ip %#" PRIx64 " (%s)",
				 i, b->offset, b->ip, rv_pt_strerror(b->code), a->offset, a->ip,
				 rv_pt_strerror(a->code));
			return true;
		}
	}
	if (ref->fast_bytes || ref->handoffs || ref->libipt_bytes != ref->bytes) {
		snprintf(text, size,
			 "libipt's decode counted %" PRIu64 " fast bytes, %" PRIu64
			 " handoffs, %" PRIu64 " of %" PRIu64 " bytes as libipt's",
			 ref->fast_bytes, ref->handoffs, ref->libipt_bytes, ref->bytes);
		return true;
	}
	if (got->fast_bytes + got->libipt_bytes != got->bytes) {
		snprintf(text, size, "fast %" PRIu64 " + libipt %" PRIu64 " bytes, of %" PRIu64,
			 got->fast_bytes, got->libipt_bytes, got->bytes);
		return true;
	}
	return false;
}

#endif
