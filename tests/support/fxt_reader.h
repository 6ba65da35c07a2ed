/* fxt_reader.h: a strict reader of Fuchsia trace format (FXT) files, for tests.
 *
 * It was written from the format's specification
 * (fuchsia.dev/fuchsia-src/reference/tracing/trace-format) and not from
 * rearview's writer, so that a test that reads the writer's output back with
 * it checks the writer against the specification, not against itself. It
 * shares no code with src/.
 *
 * Strict means: any deviation from the specification is an error that names
 * the byte offset of the offending record and what is wrong with it. The file
 * must begin with the magic record; every record must fit the file and have
 * exactly the size its fields imply; reserved bits must be zero; string and
 * thread references must name entries defined earlier in the file; inline
 * streams must be zero-padded; argument sizes must match their types; event,
 * record and argument types must be known; an initialization record must come
 * before the first event. Beyond the letter of the specification, strings
 * (other than kernel object names, which the specification allows to be any
 * bytes) must be valid UTF-8 without NUL bytes, a duration end must match an
 * open duration begin of the same thread and name, and the spans of each
 * thread must nest the way Perfetto requires (see fxt_read_buffer). Traces
 * that switch between several providers are refused as unsupported.
 *
 * This is not: a general-purpose or streaming reader (the whole file is
 * loaded into memory), or a trace processor (async and flow events are
 * reported as raw events, not linked).
 *
 * Offsets in error messages and in the model are byte offsets in the FXT
 * stream, i.e. after gzip decompression for a compressed file.
 */
#ifndef RV_TESTS_FXT_READER_H
#define RV_TESTS_FXT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Wildcard for the pid and tid parameters of the query helpers below. */
#define FXT_ANY UINT64_MAX

/* "No span" in the span links (parent, first_child, next_sibling). */
#define FXT_NONE (-1L)

enum fxt_arg_type {
	FXT_ARG_NULL = 0,
	FXT_ARG_INT32 = 1,
	FXT_ARG_UINT32 = 2,
	FXT_ARG_INT64 = 3,
	FXT_ARG_UINT64 = 4,
	FXT_ARG_DOUBLE = 5,
	FXT_ARG_STRING = 6,
	FXT_ARG_POINTER = 7,
	FXT_ARG_KOID = 8,
	FXT_ARG_BOOL = 9,
	FXT_ARG_BLOB = 10,
};

/* One argument. Only the value field matching `type` is meaningful. */
struct fxt_arg {
	const char *name;
	enum fxt_arg_type type;
	int64_t i;		   /* INT32, INT64 */
	uint64_t u;		   /* UINT32, UINT64, POINTER, KOID */
	double d;		   /* DOUBLE */
	bool b;			   /* BOOL */
	const char *s;		   /* STRING, NUL-terminated */
	size_t s_len;		   /* STRING, bytes without the terminator */
	const unsigned char *blob; /* BLOB */
	size_t blob_size;	   /* BLOB */
};

enum fxt_event_type {
	FXT_EVENT_INSTANT = 0,
	FXT_EVENT_COUNTER = 1,
	FXT_EVENT_DURATION_BEGIN = 2,
	FXT_EVENT_DURATION_END = 3,
	FXT_EVENT_DURATION_COMPLETE = 4,
	FXT_EVENT_ASYNC_BEGIN = 5,
	FXT_EVENT_ASYNC_INSTANT = 6,
	FXT_EVENT_ASYNC_END = 7,
	FXT_EVENT_FLOW_BEGIN = 8,
	FXT_EVENT_FLOW_STEP = 9,
	FXT_EVENT_FLOW_END = 10,
};

/* One event record, as written (every event type). */
struct fxt_event {
	enum fxt_event_type type;
	uint64_t pid, tid;
	const char *category, *name; /* "" for an empty string ref */
	uint64_t ts;		     /* ticks */
	uint64_t end;		     /* DURATION_COMPLETE: end ticks, else 0 */
	uint64_t id;		     /* COUNTER: counter id; ASYNC_*, FLOW_*: correlation id */
	const struct fxt_arg *args;
	size_t nr_args;
	size_t offset; /* of the record */
	size_t size;   /* of the record, bytes */
};

/* A duration: one duration-complete event, or a matched begin/end pair. */
struct fxt_span {
	uint64_t pid, tid;
	const char *category, *name;
	uint64_t begin, end;	    /* ticks */
	uint64_t begin_ns, end_ns;  /* the same in nanoseconds */
	const struct fxt_arg *args; /* of a begin/end pair: the begin's, then the end's */
	size_t nr_args;
	size_t offset;	   /* of the complete event, or of the begin event */
	size_t end_offset; /* of the end event; == offset for a complete event */
	bool complete;	   /* from a duration-complete event */
	/* From the nesting check: depth 0 is a root; links are indices into
	 * trace->spans; children are in (begin, file order). The roots of one
	 * thread are linked as siblings too, so from fxt_first_root() the
	 * next_sibling links walk a thread's top-level spans in time order. */
	unsigned depth;
	long parent, first_child, next_sibling;
};

struct fxt_instant {
	uint64_t pid, tid;
	const char *category, *name;
	uint64_t ts, ts_ns;
	const struct fxt_arg *args;
	size_t nr_args;
	size_t offset;
};

struct fxt_counter {
	uint64_t pid, tid;
	const char *category, *name;
	uint64_t ts, ts_ns;
	uint64_t id;
	const struct fxt_arg *args;
	size_t nr_args;
	size_t offset;
};

/* A kernel object record (record type 7). Names may be any bytes. */
struct fxt_kobject {
	unsigned obj_type; /* ZX_OBJ_TYPE_*: 1 process, 2 thread */
	uint64_t koid;
	const char *name;
	const struct fxt_arg *args;
	size_t nr_args;
	size_t offset;
};

/* Named processes and threads, from kernel objects of type 1 and 2. A later
 * record for the same koid renames it. */
struct fxt_process {
	uint64_t koid;
	const char *name;
	size_t offset;
};

struct fxt_thread {
	uint64_t koid;
	uint64_t pid;	  /* the "process" koid argument, when present */
	bool has_process; /* whether the record had one */
	const char *name;
	size_t offset;
};

struct fxt_stats {
	size_t records;
	size_t records_by_type[16];
	size_t events_by_type[11];
	size_t string_redefinitions; /* string records replacing a defined index */
	size_t thread_redefinitions; /* thread records replacing a defined index */
	size_t indexed_string_refs;  /* non-empty string refs by index ... */
	size_t inline_string_refs;   /* ... and inline */
	size_t indexed_thread_refs;  /* thread refs by index (events) ... */
	size_t inline_thread_refs;   /* ... and inline */
};

struct fxt_arena;

struct fxt_trace {
	uint64_t ticks_per_second; /* from the initialization record */
	bool compressed;	   /* the file was gzip or zstd */
	size_t size;		   /* bytes of FXT, after decompression */

	struct fxt_event *events; /* every event record, in file order */
	size_t nr_events;
	struct fxt_span *spans; /* in file order of their (first) record */
	size_t nr_spans;
	struct fxt_span *unterminated; /* begins never ended (no depth/links) */
	size_t nr_unterminated;
	struct fxt_instant *instants;
	size_t nr_instants;
	struct fxt_counter *counters;
	size_t nr_counters;
	struct fxt_kobject *objects; /* every kernel object record, in file order */
	size_t nr_objects;
	struct fxt_process *processes;
	size_t nr_processes;
	struct fxt_thread *threads;
	size_t nr_threads;

	struct fxt_stats stats;

	struct fxt_arena *arena; /* private: owns every string and argument */
};

/* Reads a whole FXT file, plain, gzip-compressed (detected by its first two
 * bytes, 1f 8b) or zstd-compressed (its first four, 28 b5 2f fd). Returns 0 and sets *out, to be
 * freed with fxt_trace_free; or a negative errno code with a message in err (which may be NULL). */
int fxt_read_file(const char *path, struct fxt_trace **out, char *err, size_t err_len);

/* Same, from memory; data is not referenced after the call.
 *
 * After the records, spans are checked the way Perfetto nests them: the spans
 * of each thread, in file order, are stable-sorted by begin time and pushed
 * on a stack; spans that ended at or before the new span's begin are popped
 * first (but a zero-length span is not popped by a zero-length span at its
 * time: Perfetto stacks those, the later inside the earlier); a span that
 * begins while another is open must end no later than it.
 * A violation ("improperly nested span") is an error. This also catches a
 * child written before its parent when both begin at the same time. */
int fxt_read_buffer(const void *data, size_t size, struct fxt_trace **out, char *err,
		    size_t err_len);

void fxt_trace_free(struct fxt_trace *trace);

/* Converts ticks to nanoseconds with the trace's ticks per second. */
uint64_t fxt_ticks_to_ns(const struct fxt_trace *trace, uint64_t ticks);

/* Name of a process or thread from its kernel object record, or NULL. A
 * thread matches when its koid is tid and its "process" argument is pid (any
 * process, even none, when pid is FXT_ANY). */
const char *fxt_process_name(const struct fxt_trace *trace, uint64_t pid);
const char *fxt_thread_name(const struct fxt_trace *trace, uint64_t pid, uint64_t tid);
const struct fxt_thread *fxt_find_thread(const struct fxt_trace *trace, uint64_t pid, uint64_t tid);

/* Queries over spans; pid and tid may be FXT_ANY, name may be NULL (any). */
size_t fxt_count_spans(const struct fxt_trace *trace, uint64_t pid, uint64_t tid, const char *name);
uint64_t fxt_sum_durations_ns(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
			      const char *name);
/* The earliest begin and the latest end of all spans (no spans: UINT64_MAX
 * and 0). */
void fxt_spans_extent(const struct fxt_trace *trace, uint64_t *first_ns, uint64_t *last_ns);
/* The nth (from 0) matching span in file order, or NULL. */
const struct fxt_span *fxt_find_span(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
				     const char *name, size_t nth);
size_t fxt_count_instants(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
			  const char *name);
const struct fxt_instant *fxt_find_instant(const struct fxt_trace *trace, uint64_t pid,
					   uint64_t tid, const char *name, size_t nth);

/* The earliest top-level span of a thread (pid and tid exact), or NULL. */
const struct fxt_span *fxt_first_root(const struct fxt_trace *trace, uint64_t pid, uint64_t tid);

/* Span tree navigation; NULL when there is none. */
const struct fxt_span *fxt_span_parent(const struct fxt_trace *trace, const struct fxt_span *span);
const struct fxt_span *fxt_span_first_child(const struct fxt_trace *trace,
					    const struct fxt_span *span);
const struct fxt_span *fxt_span_next_sibling(const struct fxt_trace *trace,
					     const struct fxt_span *span);
size_t fxt_span_nr_children(const struct fxt_trace *trace, const struct fxt_span *span);

/* for (child = first child; child; child = next sibling) */
#define fxt_for_each_child(trace, span, child)                                                     \
	for ((child) = fxt_span_first_child((trace), (span)); (child);                             \
	     (child) = fxt_span_next_sibling((trace), (child)))

/* The argument named `name`, or NULL. */
const struct fxt_arg *fxt_find_arg(const struct fxt_arg *args, size_t nr_args, const char *name);

const char *fxt_arg_type_name(enum fxt_arg_type type);
const char *fxt_event_type_name(enum fxt_event_type type);

/* Prints the model (threads, then each thread's span tree) for debugging a
 * failing test. */
void fxt_trace_dump(const struct fxt_trace *trace, FILE *out);

#endif
