/* aux_snapshot.h: where the trace is in an AUX area, worked out from the
 * area's bytes and its aux_head, without touching the kernel.
 *
 * Snapshot mode (the AUX area mapped read-only) lets the hardware overwrite
 * its ring forever. The kernel then reports in aux_head only where the
 * hardware is writing: for Intel PT it is an offset within the area (the PT
 * driver hands perf_aux_output_end its ToPA position), so how many times the
 * ring went round is not known. What was written since the last snapshot is
 * worked out here from three clues, as perf does it:
 *   - once the area has been filled it stays full (the state remembers it);
 *   - pages start zeroed, so a non-zero byte between the write position and
 *     the end of the area (in its last 4 KiB) means the writer went round;
 *   - a reference copy of the newest bytes at the previous snapshot: if they
 *     changed, or the writer stopped inside them, more than a whole area was
 *     written since (and the snapshot takes the whole area).
 * Without a reference (ref_size 0), a full area always gives the whole area.
 *
 * A snapshot is at most two byte ranges of the area, oldest first (two when
 * it crosses the end of the area). Its `offset` is the position of its first
 * byte in a free-running count of the bytes the area received, as far as it
 * can be known (offset modulo the area size is where the first byte sits);
 * it is what PERF_RECORD_AUXTRACE carries.
 *
 * Full mode (writable area, aux_tail honoured) has free-running heads and
 * tails: rv_aux_span splits [tail, head) into the area's ranges.
 *
 * Not here: reading aux_head from the mmap page, disabling the event, or
 * writing records. No system calls.
 */
#ifndef RV_RECORD_AUX_SNAPSHOT_H
#define RV_RECORD_AUX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How far back from the end of the area the first-wrap clue looks. */
#define RV_AUX_FIRST_WRAP_BYTES 4096

/* A run of bytes of the area: [start, start + size), start < area size. */
struct rv_aux_range {
	uint64_t start, size;
};

/* Where a snapshot's bytes are. */
struct rv_aux_snapshot {
	struct rv_aux_range ranges[2]; /* oldest first */
	size_t nr_ranges;	       /* 0: nothing new */
	uint64_t size;		       /* sum of the ranges */
	uint64_t offset;	       /* PERF_RECORD_AUXTRACE's offset */
	bool wrapped; /* the area had been filled: the snapshot may start mid-packet */
	bool lapped;  /* more than the area was written since the previous snapshot: bytes lost */
	bool capped;  /* max_bytes cut the snapshot */
};

/* What is known of one AUX area between snapshots. */
struct rv_aux_snapshot_state {
	uint64_t head;	 /* free-running position at the previous snapshot */
	bool have_prev;	 /* a snapshot was taken before */
	bool wrapped;	 /* the area has been filled at least once */
	uint8_t *ref;	 /* the ref_size bytes before head at the previous snapshot */
	size_t ref_size; /* 0: no reference kept */
	bool ref_valid;
};

/* ref_size: bytes of reference to keep (perf keeps two PSB periods); 0 for
 * none. Returns 0 or -ENOMEM. */
int rv_aux_snapshot_state_init(struct rv_aux_snapshot_state *s, size_t ref_size);
void rv_aux_snapshot_state_destroy(struct rv_aux_snapshot_state *s);

struct rv_aux_snapshot_request {
	const void *area;    /* the mapped AUX area */
	uint64_t area_size;  /* a power of two */
	uint64_t aux_head;   /* as read from the mmap page */
	bool free_running;   /* aux_head counts every byte ever written (else: masked) */
	bool since_previous; /* only what is new since the previous snapshot (perf's way);
			      * else the whole trace the area holds */
	uint64_t max_bytes;  /* keep only the newest max_bytes; 0: no limit */
};

/* Works out the snapshot ending at aux_head and records it in the state
 * (the next snapshot starts where this one ended). Returns 0, or -EINVAL
 * when area_size is not a power of two, or the reference is larger than a
 * quarter of the area. With a free-running head the answer is exact. */
int rv_aux_snapshot_find(struct rv_aux_snapshot_state *s, const struct rv_aux_snapshot_request *req,
			 struct rv_aux_snapshot *out);

/* Copies a snapshot's bytes, oldest first, into dst (snap->size bytes). */
void rv_aux_snapshot_copy(const void *area, const struct rv_aux_snapshot *snap, void *dst);

/* The ranges of [from, to) in a free-running count, for full mode: 0 and
 * *out set (offset = from), or -EINVAL when to < from, the span is longer
 * than the area or area_size is not a power of two. */
int rv_aux_span(uint64_t area_size, uint64_t from, uint64_t to, struct rv_aux_snapshot *out);

#endif
