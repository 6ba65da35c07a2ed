/* trace_writer.h: the last stage of the pipeline, turning spans into a file
 * that the Perfetto UI opens.
 *
 * The format comes from the output path: ".fxt" (Fuchsia trace format, the
 * default), ".json" (Chrome trace event format), and either of them followed
 * by ".gz" for gzip (zlib, level 3) or ".zst" for zstd (libzstd, level 3,
 * one frame with its content checksum). Anything else is refused by
 * rv_trace_writer_open with a message listing the accepted endings. The path
 * "-" (RV_TRACE_STDOUT) is standard output, written as FXT, uncompressed.
 *
 * Nothing half-written is ever left at the output path: the writer works on a
 * temporary file in the same directory (so an unwritable directory fails at
 * open, before any recording starts) and renames it into place on commit.
 * rv_trace_writer_abort removes the temporary file. The temporary file is
 * 0600 while it is written and carries this process's owner record
 * (util/leftovers.h) as an extended attribute where the filesystem allows
 * one, so that a later run removes it if this one is killed. Standard
 * output has no temporary file: open refuses a terminal and a descriptor that is closed
 * or read-only, the trace goes out as the buffer fills (256 KiB at a time),
 * and after an abort the reader has a stream cut short (what was flushed).
 *
 * Timestamps are nanoseconds from the start of the trace. The caller (the
 * trace builder) is responsible for nesting: spans of one thread are either
 * disjoint or nested, and when a parent and its child begin at the same
 * timestamp the parent is written first.
 *
 * This module is not: a trace model, a sorter, or a place that knows about
 * samples or symbols. It writes what it is given, in the order given.
 */
#ifndef RV_WRITE_TRACE_WRITER_H
#define RV_WRITE_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

enum rv_trace_format {
	RV_TRACE_FXT,
	RV_TRACE_JSON,
};

enum rv_trace_compression {
	RV_TRACE_PLAIN,
	RV_TRACE_GZIP,
	RV_TRACE_ZSTD,
};

/* The output path that means standard output. */
#define RV_TRACE_STDOUT "-"

/* Parses the output path's ending ("-": FXT, plain); returns 0 and sets
 * *format and *compression, or a negative code with a message naming the
 * accepted endings. */
int rv_trace_format_from_path(const char *path, enum rv_trace_format *format,
			      enum rv_trace_compression *compression, struct rv_error *err);

enum rv_arg_kind {
	RV_ARG_INT,	/* int64 */
	RV_ARG_UINT,	/* uint64 */
	RV_ARG_POINTER, /* an address, shown in hex */
	RV_ARG_STRING,
};

struct rv_arg {
	const char *name;
	enum rv_arg_kind kind;
	union {
		int64_t i;
		uint64_t u;
		const char *s;
	};
};

struct rv_trace_writer;

/* Creates the temporary file next to `path` (or checks that standard output
 * can take the trace) and writes the file's preamble (FXT: magic record,
 * initialization record with 1e9 ticks per second). */
int rv_trace_writer_open(struct rv_trace_writer **out, const char *path, struct rv_error *err);

/* Names a process (FXT: kernel object of type process, koid = pid). */
int rv_trace_writer_process(struct rv_trace_writer *w, uint32_t pid, const char *name,
			    struct rv_error *err);

/* Names a thread (FXT: kernel object of type thread, koid = tid, with a
 * "process" koid argument = pid). The track is named after it. */
int rv_trace_writer_thread(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			   struct rv_error *err);

/* A span [begin_ns, end_ns] on the thread's track (FXT: duration complete
 * event; JSON: "X" event). Up to 15 arguments; nr_args 0 costs no bytes. */
int rv_trace_writer_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			 uint64_t begin_ns, uint64_t end_ns, const struct rv_arg *args,
			 size_t nr_args, struct rv_error *err);

/* The same span in a category (FXT: the event's category; JSON: its "cat"
 * field), which Perfetto shows and filters by: the trace builder puts
 * kernel code and the kernel's placeholders in RV_TRACE_CATEGORY_KERNEL.
 * NULL or "" is no category (FXT: the empty string; JSON: no "cat"), which
 * is what rv_trace_writer_span writes. */
#define RV_TRACE_CATEGORY_KERNEL "kernel"

int rv_trace_writer_category_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				  const char *category, const char *name, uint64_t begin_ns,
				  uint64_t end_ns, const struct rv_arg *args, size_t nr_args,
				  struct rv_error *err);

/* The same span with its nesting depth on the thread's track (0: outermost;
 * the trace builder's stack position). FXT ignores it; JSON uses it to
 * order what the nanoseconds cannot: equal times are written a fraction of
 * a nanosecond apart, a deeper span beginning later and ending earlier
 * (json.c), so that readers that compute or tie-break times keep the
 * nesting. rv_trace_writer_category_span is depth 0. */
int rv_trace_writer_nested_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				const char *category, const char *name, uint64_t begin_ns,
				uint64_t end_ns, uint32_t depth, const struct rv_arg *args,
				size_t nr_args, struct rv_error *err);

/* rv_trace_writer_nested_span for a caller whose strings (category, name,
 * argument names and string values) each stay at their address with the
 * same bytes for as long as the writer is written to: interned names and
 * string literals (the trace builder's spans). FXT then knows a string it
 * has indexed by its address alone, without reading it again; the file is
 * the same byte for byte. */
int rv_trace_writer_interned_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				  const char *category, const char *name, uint64_t begin_ns,
				  uint64_t end_ns, uint32_t depth, const struct rv_arg *args,
				  size_t nr_args, struct rv_error *err);

/* A function's span as the trace builder writes most of them: an interned
 * span (the same promise about its strings) with the arguments "address"
 * (a pointer) and, when file is not NULL, "file" and "line"; or with no
 * arguments at all when address is 0 (and file NULL). The file is
 * byte for byte the one rv_trace_writer_interned_span writes with those
 * arguments; the writer has no arguments to build or check (FXT: a span
 * like the function's last one is its words again). */
struct rv_function_span {
	uint32_t pid, tid;
	const char *category; /* NULL: none */
	const char *name;
	uint64_t begin_ns, end_ns;
	uint32_t depth;	  /* rv_trace_writer_nested_span's */
	uint64_t address; /* 0: no arguments */
	const char *file; /* NULL: no "file" and "line" */
	int32_t line;
};

int rv_trace_writer_function_span(struct rv_trace_writer *w, const struct rv_function_span *span,
				  struct rv_error *err);

/* A function whose spans share everything but their thread, times and
 * depth: its category, name, address, file and line as in struct
 * rv_function_span (with the same promise about its strings), for
 * rv_trace_writer_function_span_of. The same function is given the same
 * handle again. Returns the handle (not 0), valid while w is; 0 when w is
 * NULL or memory runs out (then its spans go through
 * rv_trace_writer_function_span). */
uint32_t rv_trace_writer_function(struct rv_trace_writer *w, const char *category, const char *name,
				  uint64_t address, const char *file, int32_t line);

/* The thread argument of rv_trace_writer_function_span_of. */
static inline uint64_t rv_trace_thread(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

/* rv_trace_writer_function_span of a span of the function w gave the
 * handle `function` for (not 0) on the thread rv_trace_thread(pid, tid),
 * byte for byte, with nothing to compare (FXT: the function's words again,
 * once its first span laid them out). */
int rv_trace_writer_function_span_of(struct rv_trace_writer *w, uint32_t function, uint64_t thread,
				     uint64_t begin_ns, uint64_t end_ns, uint32_t depth,
				     struct rv_error *err);

/* A zero-length marker on the thread's track (FXT: instant event, thread
 * scope; JSON: "i" event). */
int rv_trace_writer_instant(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			    uint64_t ts_ns, const struct rv_arg *args, size_t nr_args,
			    struct rv_error *err);

/* Flushes, closes and renames the temporary file to the output path
 * (standard output: flushes it, and leaves it open). The writer stays valid
 * for the getters below until rv_trace_writer_free. */
int rv_trace_writer_commit(struct rv_trace_writer *w, struct rv_error *err);

/* Removes the temporary file; nothing appears at the output path. */
void rv_trace_writer_abort(struct rv_trace_writer *w);

/* The temporary file being written (NULL when there is none), for a
 * caller that must remove it from another thread just before _exit. */
const char *rv_trace_writer_temp_path(const struct rv_trace_writer *w);

/* Frees the writer; aborts it first if it was neither committed nor aborted. */
void rv_trace_writer_free(struct rv_trace_writer *w);

struct rv_trace_writer_stats {
	uint64_t spans;		   /* span calls */
	uint64_t instants;	   /* instant calls */
	uint64_t bytes;		   /* bytes of trace written, before compression */
	uint64_t file_bytes;	   /* bytes written to the file (after compression):
				    * its size once committed */
	uint64_t strings;	   /* distinct strings interned (FXT) */
	uint64_t inline_strings;   /* strings written inline because the table was full */
	uint64_t thread_evictions; /* thread-table slots reused (FXT, >255 threads) */
};

void rv_trace_writer_stats(const struct rv_trace_writer *w, struct rv_trace_writer_stats *out);

/* The committed file gets mode 0600 instead of the mode the umask gives a
 * new file (0666 less the umask): for traces of what the invoking user could
 * not read otherwise (any recording, which needs root; kernel data; a
 * capture others may not read). */
void rv_trace_writer_set_private(struct rv_trace_writer *w);

const char *rv_trace_writer_path(const struct rv_trace_writer *w);

#endif
