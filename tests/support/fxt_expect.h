/* fxt_expect.h: Criterion assertions on a trace read back with the strict
 * FXT reader: a span that must be there, and where it must be. On a failure
 * the whole trace is printed to stderr, which is what one needs to see; two
 * traces that must hold the same events.
 *
 * Not here: reading the format (fxt_reader.h, which asserts nothing).
 */
#ifndef RV_TESTS_FXT_EXPECT_H
#define RV_TESTS_FXT_EXPECT_H

#include <stddef.h>
#include <stdint.h>

#include "fxt_reader.h"

/* The nth span named name, on any thread; fails the test (printing the
 * trace) when there is none. */
const struct fxt_span *trace_span(const struct fxt_trace *t, const char *name, size_t nth);

/* The nth span named name lasts [begin, end] and is a child of a span
 * named parent (NULL: at the top of its stack). On a mismatch the trace is
 * printed and the test fails. */
void expect_span(const struct fxt_trace *t, const char *name, size_t nth, uint64_t begin,
		 uint64_t end, const char *parent);

/* Traces a and b hold the same spans and instants, in the same order, with
 * the same threads, names, categories, times and arguments (what two writes
 * of one capture must give); the first difference fails the test, named
 * with `what` ("run and decode"). Kernel-object names are not compared. */
void expect_same_events(const struct fxt_trace *a, const struct fxt_trace *b, const char *what);

#endif
