/* pt_query_lockstep.h: libipt's query decoder and rearview's packet layer
 * (decode/pt_query.h) driven in lock step over the same bytes, every
 * answer compared: statuses, taken bits, IPs, events (byte for byte),
 * offsets, sync offsets and time. The driver follows the statuses as a
 * walker does: an event when one is pending, else a conditional or an
 * indirect query chosen by a seeded pseudo-random sequence (the other one
 * after -pte_bad_query). rearview's layer may decline (rv_pq_init, or
 * RV_PQ_UNMODELLED from any call): the run stops there, agreeing so far.
 *
 * Header-only: the fuzz harnesses (tests/fuzz) use it too, and they link no
 * tests/support objects.
 *
 * Not here: the walk over the answers (pt_fast.c, test_pt_decoder.c).
 */
#ifndef RV_TESTS_PT_QUERY_LOCKSTEP_H
#define RV_TESTS_PT_QUERY_LOCKSTEP_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "decode/pt_query.h"

struct pq_lockstep {
	uint64_t calls; /* calls answered alike, both decoders' */
	bool declined;	/* rearview's layer declined (at calls) */
	bool differ;	/* an answer differed: text says which */
	char text[256];
};

/* The next pseudo-random number of *state (xorshift64). */
static inline uint64_t pq_lockstep_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#define PQ_DIFFER(out, ...)                                                                        \
	do {                                                                                       \
		(out)->differ = true;                                                              \
		snprintf((out)->text, sizeof((out)->text), __VA_ARGS__);                           \
		goto done;                                                                         \
	} while (0)

/* Drives both decoders over config's buffer from the PSB at offset, for at
 * most max_calls queries, choosing with seed (not 0); rearview's layer
 * checks the buffer whole first or not (rv_pq_init). Fills *out; false
 * when the decoders could not be set up. */
static inline bool pq_lockstep_run(const struct pt_config *config, uint64_t offset, bool whole,
				   uint64_t seed, uint64_t max_calls, struct pq_lockstep *out)
{
	struct pt_config qconfig = *config;
	struct pt_query_decoder *lib;
	struct rv_pq *own = malloc(sizeof(*own));
	uint64_t ip_lib = 0x5a5a5a5a, ip_own = 0x5a5a5a5a, state = seed;
	/* last: the query that said -pte_bad_query (1 cond, 2 indirect; -1:
	 * both did, one after the other) */
	int a, b, last = 0;

	memset(out, 0, sizeof(*out));
	memset(&qconfig.flags, 0, sizeof(qconfig.flags));
	lib = pt_qry_alloc_decoder(&qconfig);
	if (!lib || !own) {
		pt_qry_free_decoder(lib);
		free(own);
		return false;
	}
	if (!rv_pq_init(own, config, whole)) {
		out->declined = true;
		goto done;
	}
	a = pt_qry_sync_set(lib, &ip_lib, offset);
	b = rv_pq_sync_set(own, &ip_own, offset);
	for (const char *call = "sync_set";; out->calls++) {
		uint64_t off_lib = 0, off_own = 0, tsc_lib = 1, tsc_own = 1;
		uint32_t mtc_lib = 1, mtc_own = 1, cyc_lib = 1, cyc_own = 1;
		int ra, rb;

		if (b == RV_PQ_UNMODELLED) {
			out->declined = true;
			break;
		}
		if (a != b)
			PQ_DIFFER(out, "%s at call %" PRIu64 ": status %d, libipt's %d", call,
				  out->calls, b, a);
		if (ip_lib != ip_own)
			PQ_DIFFER(out,
				  "%s at call %" PRIu64 ": ip %#" PRIx64 ", libipt's %#" PRIx64,
				  call, out->calls, ip_own, ip_lib);
		ra = pt_qry_get_offset(lib, &off_lib);
		rb = rv_pq_get_offset(own, &off_own);
		if (ra != rb || off_lib != off_own)
			PQ_DIFFER(out,
				  "after %s at call %" PRIu64 ": offset %#" PRIx64
				  " (%d), libipt's %#" PRIx64 " (%d)",
				  call, out->calls, off_own, rb, off_lib, ra);
		ra = pt_qry_get_sync_offset(lib, &off_lib);
		rb = rv_pq_get_sync_offset(own, &off_own);
		if (ra != rb || off_lib != off_own)
			PQ_DIFFER(out,
				  "after %s at call %" PRIu64 ": sync offset %#" PRIx64
				  ", libipt's %#" PRIx64,
				  call, out->calls, off_own, off_lib);
		ra = pt_qry_time(lib, &tsc_lib, &mtc_lib, &cyc_lib);
		rb = rv_pq_time(own, &tsc_own, &mtc_own, &cyc_own);
		if (ra != rb || tsc_lib != tsc_own || mtc_lib != mtc_own || cyc_lib != cyc_own)
			PQ_DIFFER(out,
				  "after %s at call %" PRIu64 ": time %d %" PRIu64
				  ", libipt's %d %" PRIu64,
				  call, out->calls, rb, tsc_own, ra, tsc_lib);
		if (out->calls >= max_calls || last < 0)
			break;
		if (a < 0 && a != -pte_bad_query)
			break;
		if (a >= 0 && (a & pts_event_pending)) {
			struct pt_event ev_lib, ev_own;

			memset(&ev_lib, 0xa5, sizeof(ev_lib));
			memset(&ev_own, 0xa5, sizeof(ev_own));
			call = "event";
			a = pt_qry_event(lib, &ev_lib, sizeof(ev_lib));
			b = rv_pq_event(own, &ev_own);
			if (a == b && memcmp(&ev_lib, &ev_own, sizeof(ev_lib)))
				PQ_DIFFER(out,
					  "event at call %" PRIu64
					  ": type %d, libipt's %d (or its fields)",
					  out->calls, ev_own.type, ev_lib.type);
			last = 0;
			continue;
		}
		int pick = last ? 3 - last : 1 + (int)(pq_lockstep_rand(&state) % 2);

		if (pick == 1) {
			int taken_lib = -1, taken_own = -1;

			call = "cond_branch";
			a = pt_qry_cond_branch(lib, &taken_lib);
			b = rv_pq_cond_branch(own, &taken_own);
			if (a == b && taken_lib != taken_own)
				PQ_DIFFER(out,
					  "cond_branch at call %" PRIu64 ": taken %d, libipt's %d",
					  out->calls, taken_own, taken_lib);
		} else {
			call = "indirect_branch";
			a = pt_qry_indirect_branch(lib, &ip_lib);
			b = rv_pq_indirect_branch(own, &ip_own);
		}
		if (a == -pte_bad_query)
			last = last ? -1 : pick; /* both refused: nothing left to ask */
		else
			last = 0;
	}
done:
	pt_qry_free_decoder(lib);
	free(own);
	return true;
}

#undef PQ_DIFFER

#endif
