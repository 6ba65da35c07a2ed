/* fn_stream.h: the function tracer's records on their way from its BPF ring
 * buffers (one per CPU, fn_engine.h) into the capture.
 *
 * A drain reads every ring once (libbpf's ring_buffer, which follows the
 * kernel's ring protocol; each record's length is checked against struct
 * rv_fn_record before it is trusted, others are counted and skipped) and
 * counts, per function, the calls drained. Then:
 * - with full_execution, each record goes into its CPU's stream of the
 *   sampling engine's reorder buffer (rv_sample_engine_push_output), which
 *   merges the per-CPU streams and the sideband by time into the capture;
 * - otherwise into a flight recorder of 48-byte records (struct
 *   rv_fn_flight: the last flight_bytes / 48 records, older ones aged out
 *   and counted), which rv_fn_stream_finish sorts once by time and hands
 *   the engine as the source its stop writes from.
 * The records the rings lost (the engine's per-CPU counts, read without a
 * system call) become, at each drain, one PERF_RECORD_LOST_SAMPLES per CPU
 * that lost some since the last drain (rv_sample_engine_add_lost): the run's
 * count and the capture's are the same number.
 *
 * Records are drained in ring order, which is time order per CPU except for
 * a record stamped late (reorder.h says what becomes of it).
 *
 * Not here: the rings themselves (fn_engine.h), writing the capture
 * (sample_engine.h), what records mean (src/decode/fn_decoder.h).
 */
#ifndef RV_RECORD_FN_STREAM_H
#define RV_RECORD_FN_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../bpf/functions.h"
#include "record/sample_engine.h"
#include "util/error.h"

/* ---- the flight recorder of records ---- */

/* The last `capacity` records, oldest overwritten first, 48 bytes each:
 * a record's CPU (below RV_FN_MAX_CPUS) is kept in its flags'
 * RV_FN_FLAG_CPU_MASK bits while it waits here. */
struct rv_fn_flight {
	struct rv_fn_record *records;
	size_t capacity;
	size_t head;	  /* index of the oldest */
	size_t count;	  /* records held */
	uint64_t evicted; /* records aged out */
	uint32_t *order;  /* after rv_fn_flight_sort: indices by time */
	size_t next;	  /* the source's position in order */
};

/* Room for capacity_bytes / sizeof(struct rv_fn_record) records (at least
 * one); -ENOMEM when it cannot be had. */
int rv_fn_flight_init(struct rv_fn_flight *f, uint64_t capacity_bytes);
void rv_fn_flight_destroy(struct rv_fn_flight *f);
void rv_fn_flight_push(struct rv_fn_flight *f, const struct rv_fn_record *r, uint32_t cpu);
/* Orders what is held by (time, age): once, before it is read; -ENOMEM. */
int rv_fn_flight_sort(struct rv_fn_flight *f);
/* After the sort: the i-th record in time order (i < count) as it was
 * pushed, and its CPU; false past the end. */
bool rv_fn_flight_get(const struct rv_fn_flight *f, size_t i, struct rv_fn_record *out,
		      uint32_t *cpu);

/* ---- the stream ---- */

struct rv_fn_stream_config {
	const int *ring_fds; /* indexed by CPU */
	size_t nr_rings;
	struct rv_sample_engine *engine;
	bool full_execution;
	uint64_t flight_bytes; /* not full_execution: the flight recorder's size */
	/* Records each CPU's ring lost so far (rv_fn_engine_lost). */
	uint64_t (*lost)(void *ctx, uint32_t cpu);
	void *lost_ctx;
	/* Calls drained per function index (a RV_FN_ENTER record's arg),
	 * nr_funcs of them, and in all; the caller owns them. */
	uint64_t *calls;
	size_t nr_funcs;
	uint64_t *calls_total;
};

struct rv_fn_stream_stats {
	uint64_t records;   /* drained */
	uint64_t malformed; /* of the wrong size: skipped */
	uint64_t lost;	    /* the rings refused (full), as written into the capture */
	uint64_t evicted;   /* aged out of the flight recorder */
	uint64_t kept;	    /* in the flight recorder at the end */
};

struct rv_fn_stream;

int rv_fn_stream_open(struct rv_fn_stream **out, const struct rv_fn_stream_config *config,
		      struct rv_error *err);

/* Reads every ring once (see the top). */
int rv_fn_stream_drain(struct rv_fn_stream *s, struct rv_error *err);

/* The last drain, once the programs no longer record; without
 * full_execution, the flight recorder sorted and given to the engine as its
 * source (the engine's stop then writes it). */
int rv_fn_stream_finish(struct rv_fn_stream *s, struct rv_error *err);

/* One record as a ring hands it over (its bytes and their length, unchecked)
 * from CPU cpu's ring: what a drain does with each (length checked, counted,
 * kept). Public for the fuzz harness (tests/fuzz), which has no ring.
 * Returns 0, or with full_execution the engine's error (inside a drain,
 * which holds the err it is reported in). */
int rv_fn_stream_take(struct rv_fn_stream *s, uint32_t cpu, const void *data, size_t size);

void rv_fn_stream_stats(const struct rv_fn_stream *s, struct rv_fn_stream_stats *out);

void rv_fn_stream_free(struct rv_fn_stream *s);

/* The instruction pointer a record's sample shows (perf script): the
 * function's address for entries and exits, 0 (a kernel sample) for
 * kernel records. */
uint64_t rv_fn_record_ip(const struct rv_fn_record *r);

#endif
