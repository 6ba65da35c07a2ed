/* render.h: a capture turned into a trace file, and the summary printed after
 * it. Shared by every command that ends with a trace (run, attach, decode).
 *
 * Not here: recording.
 */
#ifndef RV_CMD_RENDER_H
#define RV_CMD_RENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"
#include "write/trace_writer.h"

struct rv_render_options {
	const char *capture_path;
	bool include_kernel;	    /* name kernel frames from /proc/kallsyms */
	const char *recording_note; /* e.g. "10000 Hz on cpu-clock"; may be NULL */
	uint64_t lost_while_recording;
};

/* Decodes the capture (stack samples, or the uprobe engine's function
 * records: told apart by the capture's event names), builds the spans,
 * writes and commits the trace, and prints the summary on stderr. On error
 * the trace is aborted (nothing is left at its path). */
int rv_render(const struct rv_render_options *ro, struct rv_trace_writer *writer,
	      struct rv_error *err);

struct rv_builder;
struct rv_pt_capture;
struct rv_pt_stats;
struct rv_func_decoder_stats;
struct rv_symbolizer;

/* Decodes a function-tracer capture (decode/func_decoder.h) into builder,
 * from the capture's first time as the trace's zero, says what it skipped,
 * and finishes the builder (rv_builder_finish: its open spans point to the
 * decoder's names). A damaged capture is a warning: the events before the
 * damage stand. stats (may be NULL) is filled even when decoding fails part
 * way. */
int rv_render_function_capture(const char *capture_path, struct rv_symbolizer *symbolizer,
			       struct rv_builder *builder, struct rv_func_decoder_stats *stats,
			       struct rv_error *err);

/* Decodes every buffer of a PT capture into builder (from the capture's first
 * time as the trace's zero), says so when it applied --filter windows (an
 * ungated recording's), and warns, once each, about damage and missing
 * binaries. With packets non-NULL, counts the capture's packets first (for
 * --stats). stats is filled even when decoding fails part way. */
int rv_render_pt_capture(struct rv_pt_capture *capture, struct rv_builder *builder,
			 struct rv_pt_stats *stats, uint64_t *packets, struct rv_error *err);

/* The summary on stderr after a trace is written: what it covers (samples,
 * branches' calls, or exact calls and kernel spans), the top functions by
 * self time, where the file is and how to open it. ro may be NULL (no
 * recording behind the trace: decode). */
void rv_render_summary(const struct rv_builder *b, const struct rv_trace_writer *w,
		       const struct rv_render_options *ro);

#endif
