/* fn_live.h: the status line of a function-tracing run on a terminal,
 * rewritten in place about once a second while it records, so that a run
 * the probes slow down says so as it happens:
 *
 *   rearview: recording 12 s: 1,234,567 calls/s; hottest: fib 97%, work 2%, main 0%
 *
 * elapsed time since recording began; calls per second over the last
 * interval; the three functions with the most calls so far, with their share
 * of all calls so far. The line starts with \r, is cleared (ESC [K) before
 * it is written and cut to the terminal's width, so that it never wraps;
 * finish clears it, so that the next message starts on a clean line. When
 * the output is not a terminal nothing is ever written.
 *
 * Times are nanoseconds of any one monotonic clock (the caller's: tests give
 * their own); counts are cumulative since recording began.
 *
 * Not here: counting calls (the function tracer's data path), the summary
 * after the run (render/probe_summary.h).
 */
#ifndef RV_SESSION_FN_LIVE_H
#define RV_SESSION_FN_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/error.h"

#define RV_FN_LIVE_INTERVAL_NS 1000000000ull
#define RV_FN_LIVE_HOTTEST     3

struct rv_fn_live_config {
	FILE *out;	  /* where the line goes (stderr) */
	bool is_terminal; /* isatty(fileno(out)): false means never write */
	unsigned columns; /* the terminal's width; 0: 80 */
	size_t nr_functions;
	/* nr_functions names, borrowed: they must outlive the line */
	const char *const *names;
	uint64_t start_ns; /* when recording began */
};

struct rv_fn_live;

/* NULL config->names is allowed when nr_functions is 0. */
int rv_fn_live_create(struct rv_fn_live **out, const struct rv_fn_live_config *config,
		      struct rv_error *err);

/* Whether a tick at now_ns would write (an interval has passed since the
 * last line, or since the start): lets the caller skip reading its counts. */
bool rv_fn_live_due(const struct rv_fn_live *l, uint64_t now_ns);

/* Writes the line if it is due. calls: nr_functions cumulative counts, or
 * NULL when the caller has none per function (the line then names no
 * function); total: every call so far. Returns whether it wrote. */
bool rv_fn_live_tick(struct rv_fn_live *l, uint64_t now_ns, const uint64_t *calls, uint64_t total);

/* Clears the line if one was written; later ticks write nothing. */
void rv_fn_live_finish(struct rv_fn_live *l);

/* NULL-safe; does not clear the line (finish does). */
void rv_fn_live_free(struct rv_fn_live *l);

#endif
