/* builder_fixture.h: a trace builder for its unit tests (test_builder*.c):
 * a symbolizer without mappings (an address is named "0x..." and is its own
 * function, unless a test adds a mapping), the real trace writer into a
 * temporary .fxt, and the trace read back with the strict FXT reader, which
 * also checks that every thread's spans nest as Perfetto needs.
 *
 * Failures are Criterion assertions.
 *
 * Not here: the events each test feeds the builder (each test file makes
 * its own kind: samples, branches, calls), the FXT format (fxt_reader.h),
 * assertions on the trace (fxt_expect.h, included).
 */
#ifndef RV_TESTS_BUILDER_FIXTURE_H
#define RV_TESTS_BUILDER_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "fxt_expect.h"
#include "fxt_reader.h"
#include "trace/builder.h"

struct builder_fixture {
	char path[64]; /* the trace, /tmp/rv-builder-XXXXXX.fxt */
	struct rv_symbolizer *sym;
	struct rv_trace_writer *w;
	struct rv_builder *b;
	struct rv_error err;
};

void builder_fixture_open(struct builder_fixture *f);

/* rv_builder_add, which must succeed. */
void builder_fixture_add(struct builder_fixture *f, const struct rv_event *ev);

/* Finishes the builder, commits the trace and reads it back (freed by
 * builder_fixture_close). */
struct fxt_trace *builder_fixture_finish(struct builder_fixture *f);

/* The self time rv_builder_top_functions gives the function called name,
 * among the first 8 it lists; 0 when it is not there. */
uint64_t builder_fixture_self_ns(struct builder_fixture *f, const char *name);

/* Frees everything and removes the trace; t may be NULL. */
void builder_fixture_close(struct builder_fixture *f, struct fxt_trace *t);

#endif
