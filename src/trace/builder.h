/* builder.h: the trace builder, which turns the event stream into spans.
 *
 * For sampled stacks it does what magic-trace's sampling mode does: each
 * thread's consecutive stacks are compared from the root, frames that
 * disappeared end and frames that appeared begin, at the sample's time. Each
 * frame is one function (named by the symbolizer); a sample stands for the
 * time until the thread's next sample, and the last one for its nominal
 * interval. One track per thread, named "comm [pid/tid]". A stack that was
 * cut short by unwinding (its root is a function in the middle of the open
 * stack) is completed from the open stack rather than read as a return to it.
 *
 * It also keeps what the summary needs: time covered and self time by
 * function.
 *
 * Spans are handed to the writer as complete spans when they end, in an order
 * that keeps them nested for a reader that sorts by begin time: a child that
 * begins at the same time as its parent is held back until the parent has
 * been written.
 *
 * Not here: decoding or symbol lookup logic, and file formats.
 */
#ifndef RV_TRACE_BUILDER_H
#define RV_TRACE_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "decode/events.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"
#include "write/trace_writer.h"

struct rv_builder;

int rv_builder_new(struct rv_builder **out, struct rv_symbolizer *symbolizer,
		   struct rv_trace_writer *writer, struct rv_error *err);

/* Events must come in time order for each thread. */
int rv_builder_add(struct rv_builder *b, const struct rv_event *event, struct rv_error *err);

/* Ends every open span at the end of its thread's last sample. */
int rv_builder_finish(struct rv_builder *b, struct rv_error *err);

struct rv_function_time {
	const char *name;
	uint64_t self_ns;
};

struct rv_builder_stats {
	uint64_t spans;
	uint64_t threads;
	uint64_t samples;
	uint64_t lost;
	uint64_t first_time, last_time; /* capture clock; first_time is the trace's zero */
	uint64_t self_ns;		/* self time of all functions together */
	uint64_t grafted;		/* truncated stacks completed from the open stack */
	uint64_t skipped_callers;	/* callers a frame-pointer walk skipped, restored */
};

void rv_builder_stats(const struct rv_builder *b, struct rv_builder_stats *out);

/* The n functions with the most self time, most first; returns how many were
 * filled. */
size_t rv_builder_top_functions(const struct rv_builder *b, struct rv_function_time *out, size_t n);

void rv_builder_free(struct rv_builder *b);

#endif
