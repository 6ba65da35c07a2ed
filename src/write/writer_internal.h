/* writer_internal.h: what the trace writer's pieces share inside src/write/.
 *
 * trace_writer.c owns the output (a buffered file descriptor, optionally
 * through gzip or zstd) and dispatches each call to an encoder: fxt.c or
 * json.c. The
 * encoders build records directly in the output buffer, so that a span costs
 * no allocation and no system call.
 *
 * This is not a public interface: only files in src/write/ include it.
 */
#ifndef RV_WRITE_WRITER_INTERNAL_H
#define RV_WRITE_WRITER_INTERNAL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "util/error.h"
#include "write/trace_writer.h"

/* The output goes to the file in blocks of this size, each at an offset
 * that is a multiple of it (but the last), which the page cache takes in
 * large folios: fewer pages to allocate and account than for writes that
 * straddle page boundaries. Large enough to hold the biggest FXT record
 * many times over, small enough to stay in cache. */
#define RV_OUT_BUFFER_SIZE (256 * 1024)
/* The most a writer takes or reserves at once: the biggest FXT record
 * (4095 words). A record that runs past RV_OUT_BUFFER_SIZE stays whole in
 * the buffer, whose block is then written before the next is taken. */
#define RV_OUT_TAKE_MAX (4095 * 8)
/* Bytes the buffer has after its RV_OUT_BUFFER_SIZE + RV_OUT_TAKE_MAX,
 * which no record takes: a writer may store past the end of what it took,
 * up to 24 bytes (rv_fxt_write_function), and those bytes are then not the
 * output's. */
#define RV_OUT_SLACK 32

struct rv_out {
	int fd;
	int stdout_fd; /* fd when it is standard output's duplicate, else -1 */
	enum rv_trace_compression compression;
	bool zstream_ready;
	z_stream zstream;
	ZSTD_CStream *zstd;  /* RV_TRACE_ZSTD */
	unsigned char *zbuf; /* compressed bytes on their way to fd */
	unsigned char *buf;
	size_t used;
	uint64_t flushed; /* bytes handed to write() or the compressor so far */
	uint64_t written; /* bytes written to fd: the file's size once finished */
	int error;	  /* first errno of a failed write, sticky; 0 when fine */
};

/* Hands the buffered bytes to the file (through the compressor). On failure
 * it records out->error, drops the buffered bytes and returns -errno; later
 * writes go to the buffer and are dropped again, so that encoders need not
 * check every step: the caller checks out->error once per call. */
int rv_out_flush(struct rv_out *out);

/* rv_out_flush of the buffer's first RV_OUT_BUFFER_SIZE bytes (it holds at
 * least as many), which keeps those after them. */
int rv_out_flush_block(struct rv_out *out);

/* Room for up to n bytes (n <= RV_OUT_TAKE_MAX) at the end of the output,
 * without committing them; rv_out_advance commits. */
static inline unsigned char *rv_out_reserve(struct rv_out *out, size_t n)
{
	(void)n; /* below RV_OUT_BUFFER_SIZE, the buffer has room for any */
	if (out->used >= RV_OUT_BUFFER_SIZE)
		rv_out_flush_block(out);
	return out->buf + out->used;
}

static inline void rv_out_advance(struct rv_out *out, size_t n)
{
	out->used += n;
}

/* A pointer to n bytes (n <= RV_OUT_TAKE_MAX) at the end of the output,
 * which the caller fills; the bytes count as written. */
static inline unsigned char *rv_out_take(struct rv_out *out, size_t n)
{
	unsigned char *p = rv_out_reserve(out, n);

	rv_out_advance(out, n);
	return p;
}

static inline void rv_out_write(struct rv_out *out, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n > 0) {
		size_t chunk = n < RV_OUT_TAKE_MAX ? n : RV_OUT_TAKE_MAX;

		memcpy(rv_out_take(out, chunk), p, chunk);
		p += chunk;
		n -= chunk;
	}
}

/* The length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF) at s, which has avail > 0 bytes; 0
 * when the bytes there are not one. */
static inline size_t rv_utf8_sequence_length(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (avail < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* The arguments of a function's span (rv_trace_writer_function_span), by
 * these names, which the FXT encoder knows by their address; returns how
 * many (0, 1 or 3). */
#define RV_FUNCTION_ARGS 3
extern const char rv_arg_address[], rv_arg_file[], rv_arg_line[];
size_t rv_function_args(const struct rv_function_span *span, struct rv_arg *args);

/* FXT encoder (fxt.c). rv_fxt_open writes the preamble. Every function
 * returns 0 or a negative errno for failures of its own (memory); output
 * failures are left in out->error for the caller to report. */
struct rv_fxt;

/* A function span's words as fxt.c laid them out for its first span (all
 * its strings indexed), by the name's address (direct-mapped): a span like
 * it is these words again with its own thread, times and address. */
struct rv_fxt_function_shape {
	const char *name;     /* NULL: an empty slot */
	const char *category; /* NULL: none */
	const char *file;     /* NULL: no "file" and "line" */
	int32_t line;	      /* 0 without a file */
	uint8_t kind;	      /* 1: no arguments, 2: the address, 3: file and line too */
	uint8_t words;
	uint64_t header; /* the record's first word, with thread index 0 */
	uint64_t address_header, file_header, line_header;
};

#define RV_FXT_FUNCTION_SHAPES 512

/* What rv_fxt_function_span_fast reads, kept up to date by fxt.c in a place
 * the writer owns (rv_fxt_open), so that its fast way finds the last
 * thread without a pointer to follow. */
struct rv_fxt_fast {
	struct rv_out *out;
	uint64_t last_thread_key;  /* rv_trace_thread of the last span's thread */
	uint8_t last_thread_index; /* its index in the thread table; 0: none */
	uint64_t last_thread_bits; /* last_thread_index's bits in a record's header */
	struct rv_fxt_function_shape function_shapes[RV_FXT_FUNCTION_SHAPES];
};

static inline size_t rv_fxt_function_shape_slot(const char *name)
{
	return (size_t)(((uintptr_t)name * 0x9e3779b97f4a7c15ULL) >> 55) &
	       (RV_FXT_FUNCTION_SHAPES - 1);
}

/* A function span's kind: 1 without arguments, 2 with its address only, 3
 * with its file and line too (rv_function_args). */
static inline unsigned rv_function_kind(const struct rv_function_span *span)
{
	return !span->address ? 1 : !span->file ? 2 : 3;
}

/* A thread index's bits in a record's header. */
static inline uint64_t rv_fxt_thread_bits(uint8_t thread)
{
	return (uint64_t)thread << 24;
}

static inline void rv_put_word(unsigned char *p, uint64_t word)
{
	uint64_t le = htole64(word);

	memcpy(p, &le, sizeof(le));
}

/* Whether a function span has the shape's words. */
static inline bool rv_fxt_function_shape_fits(const struct rv_fxt_function_shape *shape,
					      const struct rv_function_span *span)
{
	return shape->name == span->name && shape->category == span->category &&
	       shape->file == span->file && shape->line == (span->file ? span->line : 0) &&
	       shape->kind == rv_function_kind(span);
}

/* Writes a span through its shape at p, shape->words words taken from the
 * output: header, begin, [address's header and value, [file's and line's
 * headers]], end. Every word of the longest record is stored, and then the
 * end at its place, over those a shorter record does not have, so that the
 * kind costs no branch: up to 24 bytes past the record (RV_OUT_SLACK). */
static inline void rv_fxt_write_function(unsigned char *p,
					 const struct rv_fxt_function_shape *shape, uint8_t thread,
					 uint64_t begin_ns, uint64_t end_ns, uint64_t address)
{
	rv_put_word(p, shape->header | rv_fxt_thread_bits(thread));
	rv_put_word(p + 8, begin_ns);
	rv_put_word(p + 16, shape->address_header);
	rv_put_word(p + 24, address);
	rv_put_word(p + 32, shape->file_header);
	rv_put_word(p + 40, shape->line_header);
	rv_put_word(p + ((size_t)shape->words - 1) * 8, end_ns);
}

/* rv_fxt_function_span's common case, inline in the writer's front, for a
 * span whose words are those of the shape cached for its name
 * (rv_fxt_function_shape_fits), on the last span's thread, given that f
 * has one and out->used is below RV_OUT_BUFFER_SIZE (room for any record):
 * nothing is written but its record, and nothing can fail. false: nothing
 * written; the caller then takes rv_fxt_function_span. */
static inline bool rv_fxt_function_span_fast(struct rv_fxt_fast *f,
					     const struct rv_function_span *span)
{
	const struct rv_fxt_function_shape *shape =
		&f->function_shapes[rv_fxt_function_shape_slot(span->name)];
	struct rv_out *out = f->out;

	if (!rv_fxt_function_shape_fits(shape, span) ||
	    f->last_thread_key != rv_trace_thread(span->pid, span->tid))
		return false;
	rv_fxt_write_function(out->buf + out->used, shape, f->last_thread_index, span->begin_ns,
			      span->end_ns, span->address);
	out->used += (size_t)shape->words * 8;
	return true;
}

/* fast: zeroed, then kept up to date while the encoder is written to */
int rv_fxt_open(struct rv_fxt **out_fxt, struct rv_out *out, struct rv_fxt_fast *fast,
		struct rv_error *err);
int rv_fxt_process(struct rv_fxt *fxt, uint32_t pid, const char *name, struct rv_error *err);
int rv_fxt_thread(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *name,
		  struct rv_error *err);
/* category: NULL or "" for none; interned: every string stays at its
 * address with the same bytes while the writer is written to
 * (rv_trace_writer_interned_span) */
int rv_fxt_span(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *category,
		const char *name, uint64_t begin_ns, uint64_t end_ns, const struct rv_arg *args,
		size_t nr_args, bool interned, struct rv_error *err);
/* rv_fxt_span (interned) of a function's span, with rv_function_args. */
int rv_fxt_function_span(struct rv_fxt *fxt, const struct rv_function_span *span,
			 struct rv_error *err);
int rv_fxt_instant(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
		   const struct rv_arg *args, size_t nr_args, struct rv_error *err);
/* Fills the FXT-specific fields: strings, inline_strings, thread_evictions. */
void rv_fxt_stats(const struct rv_fxt *fxt, struct rv_trace_writer_stats *stats);
void rv_fxt_free(struct rv_fxt *fxt);

/* Chrome JSON encoder (json.c). It keeps no state but whether an event was
 * written, so it needs no allocation. */
struct rv_json {
	struct rv_out *out;
	bool wrote_event;
};

void rv_json_open(struct rv_json *json, struct rv_out *out);
void rv_json_process(struct rv_json *json, uint32_t pid, const char *name);
void rv_json_thread(struct rv_json *json, uint32_t pid, uint32_t tid, const char *name);
/* category: NULL or "" for none (no "cat" field) */
/* depth: trace_writer.h's rv_trace_writer_nested_span */
void rv_json_span(struct rv_json *json, uint32_t pid, uint32_t tid, const char *category,
		  const char *name, uint64_t begin_ns, uint64_t end_ns, uint32_t depth,
		  const struct rv_arg *args, size_t nr_args);
void rv_json_instant(struct rv_json *json, uint32_t pid, uint32_t tid, const char *name,
		     uint64_t ts_ns, const struct rv_arg *args, size_t nr_args);
/* Writes what closes the document; nothing may be written after it. */
void rv_json_close(struct rv_json *json);

#endif
