/* trace_writer.c: the trace writer's front (see trace_writer.h): picks the
 * format from the output path, owns the output file, and hands each call to
 * the FXT or JSON encoder.
 *
 * The output is a temporary file next to the final path, written through a
 * buffer of our own (no system call per event) and, for ".gz" paths, through
 * zlib's deflate with a gzip wrapper, for ".zst" paths through libzstd's
 * streaming compressor. Commit puts it into place (put_in_place); abort
 * removes it.
 * "-" is a duplicate of standard output, with SIGPIPE held back while it is
 * written (a reader that went away is an error to report, not the end of
 * rearview with its probes and temporary files left). A failed write (a full disk) is remembered,
 * and every later call reports the same error, so the caller may check as often as it likes.
 *
 * This is not an encoder: record layouts live in fxt.c and json.c.
 */
#define RV_LOG_DOMAIN "write"

#include "write/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/array.h"
#include "util/leftovers.h"
#include "util/log.h"
#include "util/map.h"
#include "write/writer_internal.h"

#define GZIP_BUFFER_SIZE (128 * 1024)
/* windowBits 15 plus 16 asks deflate for a gzip header and trailer. */
#define GZIP_WINDOW_BITS (15 + 16)
/* Trace records repeat a lot, so fast levels already shrink them well; the
 * higher levels cost several times the time of writing the trace. */
#define GZIP_LEVEL 3
/* zstd's default level, magic-trace's too: several times faster than gzip's
 * level 3 for a smaller file. */
#define ZSTD_LEVEL 3
#define MAX_ARGS   15

/* A function rv_trace_writer_function gave a handle: its spans' fields but
 * their thread, times and depth, and (FXT) the words fxt.c laid out for its
 * first span, which the rest repeat with their own thread and times. */
struct writer_function {
	uint64_t header; /* the record's first word, with thread index 0 */
	/* the words after the begin, as rv_fxt_write_function stores them:
	 * the address's header and value, the file's and the line's headers */
	unsigned char arg_words[4 * 8];
	uint32_t record_bytes; /* 0: not laid out yet */
	int32_t line;
	const char *category, *name, *file;
	uint64_t address;
};

#define FUNCTION_INDEX_MIN_SLOTS 256

enum writer_state {
	WRITER_OPEN,
	WRITER_COMMITTED,
	WRITER_ABORTED,
};

struct rv_trace_writer {
	char *path;
	char *temp_path;
	bool temp_created;
	enum rv_trace_format format;
	enum writer_state state;
	struct rv_out out;
	struct rv_fxt *fxt;
	/* The fast ways write while out.used is below this: RV_OUT_BUFFER_SIZE
	 * (below it, the buffer has room for any record) once a span gave fast
	 * its last thread, while the writer is FXT, open and has not failed;
	 * else 0. */
	size_t fast_below;
	struct rv_fxt_fast fast; /* FXT: what fxt.c keeps for the fast ways */
	struct rv_json json;
	uint64_t spans;
	uint64_t instants;
	/* the functions by handle - 1, and their handles by the function's
	 * fields (open addressing, 0: an empty slot; cap a power of two) */
	struct writer_function *functions;
	size_t nr_functions, cap_functions;
	uint32_t *function_index;
	size_t cap_function_index;
	bool failed;
	struct rv_error failure; /* the first output failure, repeated to later calls */
	bool private_file;	 /* 0600 (else the umask's mode): rv_trace_writer_set_private */
	bool to_stdout;		 /* path "-": out.fd is a duplicate of standard output */
};

static bool ends_with(const char *s, size_t length, const char *suffix)
{
	size_t suffix_length = strlen(suffix);

	return length >= suffix_length &&
	       !memcmp(s + length - suffix_length, suffix, suffix_length);
}

#define ACCEPTED_ENDINGS                                                                           \
	".fxt, .json, either followed by .gz or .zst to compress it (.fxt.zst), or - for "         \
	"standard output"

int rv_trace_format_from_path(const char *path, enum rv_trace_format *format,
			      enum rv_trace_compression *compression, struct rv_error *err)
{
	static const struct {
		const char *suffix;
		enum rv_trace_format format;
		enum rv_trace_compression compression;
	} endings[] = {
		{ ".fxt", RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ ".fxt.gz", RV_TRACE_FXT, RV_TRACE_GZIP },
		{ ".fxt.zst", RV_TRACE_FXT, RV_TRACE_ZSTD },
		{ ".json", RV_TRACE_JSON, RV_TRACE_PLAIN },
		{ ".json.gz", RV_TRACE_JSON, RV_TRACE_GZIP },
		{ ".json.zst", RV_TRACE_JSON, RV_TRACE_ZSTD },
	};
	size_t length, i;

	if (!path || !*path)
		return rv_error_set(err, EINVAL,
				    "no trace path given: use a name ending in " ACCEPTED_ENDINGS);
	if (!strcmp(path, RV_TRACE_STDOUT)) {
		*format = RV_TRACE_FXT;
		*compression = RV_TRACE_PLAIN;
		return 0;
	}
	length = strlen(path);
	for (i = 0; i < sizeof(endings) / sizeof(endings[0]); i++) {
		if (ends_with(path, length, endings[i].suffix)) {
			*format = endings[i].format;
			*compression = endings[i].compression;
			return 0;
		}
	}
	return rv_error_set(err, EINVAL,
			    "unknown trace format for '%s': use a name ending in " ACCEPTED_ENDINGS,
			    path);
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t written = write(fd, p, n);

		if (written < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (written == 0)
			return -EIO;
		p += written;
		n -= (size_t)written;
	}
	return 0;
}

/* write_all to the output, counted. Standard output may be a pipe whose
 * reader is gone: SIGPIPE is held back for the write (and taken if it came),
 * so that it fails with EPIPE instead of ending rearview. */
static int out_write(struct rv_out *out, const unsigned char *p, size_t n)
{
	sigset_t pipe_only, before, pending;
	struct timespec now = { 0, 0 };
	bool was_pending;
	int r;

	if (out->fd != out->stdout_fd) {
		r = write_all(out->fd, p, n);
		if (!r)
			out->written += n;
		return r;
	}
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_only, &before);
	sigpending(&pending);
	was_pending = sigismember(&pending, SIGPIPE);
	r = write_all(out->fd, p, n);
	if (r == -EPIPE && !was_pending && !sigismember(&before, SIGPIPE))
		sigtimedwait(&pipe_only, NULL, &now);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	if (!r)
		out->written += n;
	return r;
}

static int zstd_and_write(struct rv_out *out, const unsigned char *data, size_t n,
			  ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { data, n, 0 };

	for (;;) {
		ZSTD_outBuffer zout = { out->zbuf, GZIP_BUFFER_SIZE, 0 };
		size_t left = ZSTD_compressStream2(out->zstd, &zout, &in, mode);
		int r;

		if (ZSTD_isError(left))
			return -EIO;
		if (zout.pos) {
			r = out_write(out, out->zbuf, zout.pos);
			if (r < 0)
				return r;
		}
		/* continue: done once the input is taken; end: once the frame
		 * is flushed whole */
		if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
			return 0;
	}
}

static int deflate_and_write(struct rv_out *out, const unsigned char *data, size_t n, int flush)
{
	z_stream *z = &out->zstream;

	z->next_in = (Bytef *)data;
	z->avail_in = (uInt)n;
	for (;;) {
		size_t produced;
		int zr, r;

		z->next_out = out->zbuf;
		z->avail_out = GZIP_BUFFER_SIZE;
		zr = deflate(z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		produced = GZIP_BUFFER_SIZE - z->avail_out;
		if (produced) {
			r = out_write(out, out->zbuf, produced);
			if (r < 0)
				return r;
		}
		if (flush == Z_FINISH ? zr == Z_STREAM_END : z->avail_out != 0)
			return 0;
		if (zr == Z_BUF_ERROR && produced == 0)
			return -EIO;
	}
}

int rv_out_flush(struct rv_out *out)
{
	int r;

	if (out->error) {
		out->used = 0;
		return -out->error;
	}
	if (!out->used)
		return 0;
	if (out->compression == RV_TRACE_GZIP)
		r = deflate_and_write(out, out->buf, out->used, Z_NO_FLUSH);
	else if (out->compression == RV_TRACE_ZSTD)
		r = zstd_and_write(out, out->buf, out->used, ZSTD_e_continue);
	else
		r = out_write(out, out->buf, out->used);
	out->flushed += out->used;
	out->used = 0;
	if (r < 0)
		out->error = -r;
	return r;
}

int rv_out_flush_block(struct rv_out *out)
{
	size_t rest = out->used - RV_OUT_BUFFER_SIZE;
	int r;

	out->used = RV_OUT_BUFFER_SIZE;
	r = rv_out_flush(out);
	if (r < 0)
		return r;
	memcpy(out->buf, out->buf + RV_OUT_BUFFER_SIZE, rest);
	out->used = rest;
	return 0;
}

static int out_finish(struct rv_out *out)
{
	int r = rv_out_flush(out);

	if (r < 0)
		return r;
	if (out->compression == RV_TRACE_GZIP)
		r = deflate_and_write(out, NULL, 0, Z_FINISH);
	else if (out->compression == RV_TRACE_ZSTD)
		r = zstd_and_write(out, NULL, 0, ZSTD_e_end);
	if (r < 0)
		out->error = -r;
	return r;
}

static void out_release(struct rv_out *out)
{
	if (out->zstream_ready)
		deflateEnd(&out->zstream);
	out->zstream_ready = false;
	ZSTD_freeCStream(out->zstd);
	out->zstd = NULL;
	free(out->buf);
	free(out->zbuf);
	out->buf = NULL;
	out->zbuf = NULL;
	if (out->fd >= 0)
		close(out->fd);
	out->fd = -1;
}

/* Remembers an output failure so that every later call repeats it. */
static int fail(struct rv_trace_writer *w, int code, struct rv_error *err)
{
	if (w->to_stdout)
		rv_error_set(&w->failure, code, "cannot write the trace to standard output: %s%s",
			     strerror(code),
			     code == EPIPE ? " (the program reading it ended before the trace)"
					   : "");
	else if (code == ENOSPC)
		rv_error_set(
			&w->failure, code,
			"cannot write the trace to '%s': %s; free some space or choose another "
			"path with -o",
			w->path, strerror(code));
	else
		rv_error_set(&w->failure, code, "cannot write the trace to '%s': %s", w->path,
			     strerror(code));
	w->failed = true;
	w->fast_below = 0;
	if (err)
		*err = w->failure;
	return -code;
}

static inline int check_usable(struct rv_trace_writer *w, struct rv_error *err)
{
	if (!w)
		return rv_error_set(err, EINVAL, "no trace writer");
	if (w->failed) {
		if (err)
			*err = w->failure;
		return -w->failure.code;
	}
	if (w->state != WRITER_OPEN)
		return rv_error_set(err, EINVAL, "the trace '%s' was already %s", w->path,
				    w->state == WRITER_COMMITTED ? "written" : "abandoned");
	return 0;
}

static int check_args(const char *what, const char *name, const struct rv_arg *args, size_t nr_args,
		      struct rv_error *err)
{
	size_t i;

	if (nr_args > MAX_ARGS)
		return rv_error_set(err, EINVAL,
				    "%s '%s' has %zu arguments; a trace event holds at most %d",
				    what, name ? name : "", nr_args, MAX_ARGS);
	if (nr_args && !args)
		return rv_error_set(err, EINVAL, "%s '%s' has %zu arguments but no array of them",
				    what, name ? name : "", nr_args);
	for (i = 0; i < nr_args; i++) {
		switch (args[i].kind) {
		case RV_ARG_INT:
		case RV_ARG_UINT:
		case RV_ARG_POINTER:
		case RV_ARG_STRING:
			break;
		default:
			return rv_error_set(err, EINVAL,
					    "argument '%s' of %s '%s' has unknown kind %d",
					    args[i].name ? args[i].name : "", what,
					    name ? name : "", (int)args[i].kind);
		}
	}
	return 0;
}

/* After an encoder call: an output failure wins over anything else. */
static int finish_call(struct rv_trace_writer *w, int r, struct rv_error *err)
{
	if (w->out.error)
		return fail(w, w->out.error, err);
	return r;
}

static int cannot_write(const char *path, int code, struct rv_error *err)
{
	return rv_error_set(err, code,
			    "cannot write the trace to '%s': %s; choose another path with -o", path,
			    strerror(code));
}

/* The process's umask, from /proc/self/status (umask(2) can only read it by
 * changing it, which other threads would see); 022 when it does not say. */
static mode_t current_umask(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	mode_t mask = 022;

	if (!f)
		return mask;
	while (fgets(line, sizeof(line), f)) {
		unsigned int value;

		if (sscanf(line, "Umask: %o", &value) == 1) {
			mask = (mode_t)(value & 0777);
			break;
		}
	}
	fclose(f);
	return mask;
}

static int create_temp_file(struct rv_trace_writer *w, struct rv_error *err)
{
	const char *slash = strrchr(w->path, '/');
	const char *base = slash ? slash + 1 : w->path;
	struct rv_error unmarked = { 0 };
	struct stat st;

	if (stat(w->path, &st) == 0 && S_ISDIR(st.st_mode))
		return rv_error_set(
			err, EISDIR,
			"cannot write the trace to '%s': it is a directory; choose another "
			"path with -o",
			w->path);
	if (asprintf(&w->temp_path, "%.*s.%s.XXXXXX", (int)(base - w->path), w->path, base) < 0) {
		w->temp_path = NULL;
		return rv_error_set(err, ENOMEM, "out of memory for the trace writer");
	}
	/* with whose it is, for a later run to remove it if this one is
	 * killed (made so that no kill leaves it without: util/leftovers.h) */
	w->out.fd = rv_leftovers_create_file(w->temp_path, &unmarked);
	if (w->out.fd < 0)
		return cannot_write(w->path, -w->out.fd, err);
	w->temp_created = true;
	if (unmarked.code)
		rv_debug("'%s' has no owner record (%s): if rearview is killed, remove it by "
			 "hand",
			 w->temp_path, unmarked.message);
	return 0;
}

/* "-": a duplicate of standard output (closed at commit like a file, and
 * never mistaken for another descriptor), checked before anything records. */
static int open_stdout(struct rv_trace_writer *w, struct rv_error *err)
{
	int flags = fcntl(STDOUT_FILENO, F_GETFL);

	if (flags < 0)
		return rv_error_set(err, EBADF,
				    "-o -: standard output is closed; give it a pipe or a file "
				    "(rearview ... -o - | gzip > trace.fxt.gz)");
	if ((flags & O_ACCMODE) == O_RDONLY)
		return rv_error_set(
			err, EBADF,
			"-o -: standard output is open for reading only; give it a pipe "
			"or a file");
	if (isatty(STDOUT_FILENO))
		return rv_error_set(
			err, ENOTTY,
			"-o - writes the binary trace to standard output, which is a "
			"terminal: pipe it (rearview ... -o - | gzip > trace.fxt.gz) or "
			"use -o FILE");
	w->out.fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (w->out.fd < 0)
		return rv_error_set(err, errno, "-o -: cannot use standard output: %s",
				    strerror(errno));
	w->out.stdout_fd = w->out.fd;
	w->to_stdout = true;
	return 0;
}

static int init_output(struct rv_trace_writer *w, enum rv_trace_compression compression,
		       struct rv_error *err)
{
	struct rv_out *out = &w->out;

	out->compression = compression;
	out->buf = malloc(RV_OUT_BUFFER_SIZE + RV_OUT_TAKE_MAX + RV_OUT_SLACK);
	if (!out->buf)
		return rv_error_set(err, ENOMEM, "out of memory for the trace writer");
	if (compression == RV_TRACE_PLAIN)
		return 0;
	out->zbuf = malloc(GZIP_BUFFER_SIZE);
	if (!out->zbuf)
		return rv_error_set(err, ENOMEM, "out of memory for the trace writer");
	if (compression == RV_TRACE_ZSTD) {
		out->zstd = ZSTD_createCStream();
		if (!out->zstd ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(out->zstd, ZSTD_c_compressionLevel,
							ZSTD_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(out->zstd, ZSTD_c_checksumFlag, 1)))
			return rv_error_set(err, ENOMEM, "cannot start zstd compression for '%s'",
					    w->path);
		return 0;
	}
	if (deflateInit2(&out->zstream, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return rv_error_set(err, ENOMEM, "cannot start gzip compression for '%s'", w->path);
	out->zstream_ready = true;
	return 0;
}

int rv_trace_writer_open(struct rv_trace_writer **out, const char *path, struct rv_error *err)
{
	static const char *const compression_names[] = { "", " (gzip)", " (zstd)" };
	struct rv_trace_writer *w;
	enum rv_trace_compression compression;
	int r;

	if (!out)
		return rv_error_set(err, EINVAL, "no place to return the trace writer");
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return rv_error_set(err, ENOMEM, "out of memory for the trace writer");
	w->out.fd = -1;
	w->out.stdout_fd = -1;
	w->state = WRITER_OPEN;
	r = rv_trace_format_from_path(path, &w->format, &compression, err);
	if (r < 0)
		goto fail;
	w->path = strdup(path);
	if (!w->path) {
		r = rv_error_set(err, ENOMEM, "out of memory for the trace writer");
		goto fail;
	}
	r = strcmp(path, RV_TRACE_STDOUT) ? create_temp_file(w, err) : open_stdout(w, err);
	if (r < 0)
		goto fail;
	r = init_output(w, compression, err);
	if (r < 0)
		goto fail;
	if (w->format == RV_TRACE_FXT) {
		r = rv_fxt_open(&w->fxt, &w->out, &w->fast, err);
		if (r < 0)
			goto fail;
	} else {
		rv_json_open(&w->json, &w->out);
	}
	rv_debug("writing %s trace%s to '%s' through '%s'",
		 w->format == RV_TRACE_FXT ? "FXT" : "JSON", compression_names[compression],
		 w->path, w->to_stdout ? "standard output" : w->temp_path);
	*out = w;
	return 0;

fail:
	rv_trace_writer_free(w);
	return r;
}

int rv_trace_writer_process(struct rv_trace_writer *w, uint32_t pid, const char *name,
			    struct rv_error *err)
{
	int r = check_usable(w, err);

	if (r < 0)
		return r;
	if (w->format == RV_TRACE_FXT)
		r = rv_fxt_process(w->fxt, pid, name, err);
	else
		rv_json_process(&w->json, pid, name);
	return finish_call(w, r, err);
}

int rv_trace_writer_thread(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			   struct rv_error *err)
{
	int r = check_usable(w, err);

	if (r < 0)
		return r;
	if (w->format == RV_TRACE_FXT)
		r = rv_fxt_thread(w->fxt, pid, tid, name, err);
	else
		rv_json_thread(&w->json, pid, tid, name);
	return finish_call(w, r, err);
}

int rv_trace_writer_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			 uint64_t begin_ns, uint64_t end_ns, const struct rv_arg *args,
			 size_t nr_args, struct rv_error *err)
{
	return rv_trace_writer_category_span(w, pid, tid, NULL, name, begin_ns, end_ns, args,
					     nr_args, err);
}

int rv_trace_writer_category_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				  const char *category, const char *name, uint64_t begin_ns,
				  uint64_t end_ns, const struct rv_arg *args, size_t nr_args,
				  struct rv_error *err)
{
	return rv_trace_writer_nested_span(w, pid, tid, category, name, begin_ns, end_ns, 0, args,
					   nr_args, err);
}

static inline int write_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
			     const char *category, const char *name, uint64_t begin_ns,
			     uint64_t end_ns, uint32_t depth, const struct rv_arg *args,
			     size_t nr_args, bool interned, struct rv_error *err)
{
	int r = check_usable(w, err);

	if (r < 0)
		return r;
	if (end_ns < begin_ns)
		return rv_error_set(err, EINVAL,
				    "span '%s' ends (%" PRIu64 " ns) before it begins (%" PRIu64
				    " ns)",
				    name ? name : "", end_ns, begin_ns);
	if (nr_args) {
		r = check_args("span", name, args, nr_args, err);
		if (r < 0)
			return r;
	}
	if (w->format == RV_TRACE_FXT)
		r = rv_fxt_span(w->fxt, pid, tid, category, name, begin_ns, end_ns, args, nr_args,
				interned, err);
	else
		rv_json_span(&w->json, pid, tid, category, name, begin_ns, end_ns, depth, args,
			     nr_args);
	if (r == 0)
		w->spans++;
	return finish_call(w, r, err);
}

int rv_trace_writer_nested_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				const char *category, const char *name, uint64_t begin_ns,
				uint64_t end_ns, uint32_t depth, const struct rv_arg *args,
				size_t nr_args, struct rv_error *err)
{
	return write_span(w, pid, tid, category, name, begin_ns, end_ns, depth, args, nr_args,
			  false, err);
}

int rv_trace_writer_interned_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid,
				  const char *category, const char *name, uint64_t begin_ns,
				  uint64_t end_ns, uint32_t depth, const struct rv_arg *args,
				  size_t nr_args, struct rv_error *err)
{
	return write_span(w, pid, tid, category, name, begin_ns, end_ns, depth, args, nr_args, true,
			  err);
}

const char rv_arg_address[] = "address", rv_arg_file[] = "file", rv_arg_line[] = "line";

size_t rv_function_args(const struct rv_function_span *span, struct rv_arg *args)
{
	if (!span->address)
		return 0;
	args[0] = (struct rv_arg){ .name = rv_arg_address,
				   .kind = RV_ARG_POINTER,
				   .u = span->address };
	if (!span->file)
		return 1;
	args[1] = (struct rv_arg){ .name = rv_arg_file, .kind = RV_ARG_STRING, .s = span->file };
	args[2] = (struct rv_arg){ .name = rv_arg_line, .kind = RV_ARG_INT, .i = span->line };
	return 3;
}

/* rv_trace_writer_function_span when rv_fxt_function_span_fast cannot
 * write it: every check, and the encoder's full way. */
static __attribute__((noinline)) int function_span_checked(struct rv_trace_writer *w,
							   const struct rv_function_span *span,
							   struct rv_error *err)
{
	int r = check_usable(w, err);

	if (r < 0)
		return r;
	if (span->end_ns < span->begin_ns)
		return rv_error_set(err, EINVAL,
				    "span '%s' ends (%" PRIu64 " ns) before it begins (%" PRIu64
				    " ns)",
				    span->name ? span->name : "", span->end_ns, span->begin_ns);
	/* the arguments are rv_function_args': nothing to check */
	if (w->format == RV_TRACE_FXT) {
		r = rv_fxt_function_span(w->fxt, span, err);
	} else {
		struct rv_arg args[RV_FUNCTION_ARGS];
		size_t n = rv_function_args(span, args);

		rv_json_span(&w->json, span->pid, span->tid, span->category, span->name,
			     span->begin_ns, span->end_ns, span->depth, n ? args : NULL, n);
	}
	if (r == 0)
		w->spans++;
	r = finish_call(w, r, err);
	if (r == 0 && w->fxt) /* fast knows the span's thread now */
		w->fast_below = RV_OUT_BUFFER_SIZE;
	return r;
}

int rv_trace_writer_function_span(struct rv_trace_writer *w, const struct rv_function_span *span,
				  struct rv_error *err)
{
	/* Most spans: nothing to check but the times, and nothing that can
	 * fail (the fast way neither flushes nor adds strings or threads). */
	if (w && w->out.used < w->fast_below && span->end_ns >= span->begin_ns &&
	    rv_fxt_function_span_fast(&w->fast, span)) {
		w->spans++;
		return 0;
	}
	return function_span_checked(w, span, err);
}

static size_t function_home(const char *category, const char *name, uint64_t address,
			    const char *file, int32_t line, size_t mask)
{
	uint64_t h = rv_mix64((uintptr_t)name) ^ address ^ (uintptr_t)file << 1 ^
		     (uintptr_t)category << 2 ^ (uint32_t)line;

	return (size_t)rv_mix64(h) & mask;
}

/* Doubles the index of functions (or makes its first); -ENOMEM. */
static int grow_function_index(struct rv_trace_writer *w)
{
	size_t cap = w->cap_function_index ? w->cap_function_index * 2 : FUNCTION_INDEX_MIN_SLOTS;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (size_t k = 0; k < w->nr_functions; k++) {
		const struct writer_function *fn = &w->functions[k];
		size_t i = function_home(fn->category, fn->name, fn->address, fn->file, fn->line,
					 cap - 1);

		while (index[i])
			i = (i + 1) & (cap - 1);
		index[i] = (uint32_t)(k + 1);
	}
	free(w->function_index);
	w->function_index = index;
	w->cap_function_index = cap;
	return 0;
}

uint32_t rv_trace_writer_function(struct rv_trace_writer *w, const char *category, const char *name,
				  uint64_t address, const char *file, int32_t line)
{
	size_t i;

	if (!w || w->nr_functions >= UINT32_MAX - 1)
		return 0;
	if ((w->nr_functions + 1) * 2 > w->cap_function_index && grow_function_index(w))
		return 0;
	for (i = function_home(category, name, address, file, line, w->cap_function_index - 1);
	     w->function_index[i]; i = (i + 1) & (w->cap_function_index - 1)) {
		const struct writer_function *fn = &w->functions[w->function_index[i] - 1];

		if (fn->name == name && fn->category == category && fn->address == address &&
		    fn->file == file && fn->line == line)
			return w->function_index[i];
	}
	if (w->nr_functions == w->cap_functions &&
	    rv_array_grow(&w->functions, &w->cap_functions, w->nr_functions, sizeof(*w->functions),
			  64))
		return 0;
	w->functions[w->nr_functions] = (struct writer_function){
		.address = address, .category = category, .name = name, .file = file, .line = line
	};
	w->function_index[i] = (uint32_t)++w->nr_functions;
	return w->function_index[i];
}

/* Makes the words fxt.c laid out for a span of the function (shape) the
 * function's own: those rv_fxt_write_function stores after the begin. */
static void lay_out_function(struct writer_function *fn, const struct rv_fxt_function_shape *shape)
{
	/* the header, the begin, the words kept and the end: the longest
	 * function record */
	unsigned char record[2 * 8 + sizeof(fn->arg_words) + 8];

	rv_fxt_write_function(record, shape, 0, 0, 0, fn->address);
	fn->header = shape->header;
	memcpy(fn->arg_words, record + 2 * 8, sizeof(fn->arg_words));
	fn->record_bytes = (uint32_t)shape->words * 8;
}

/* rv_trace_writer_function_span_of when the function's words are not known
 * or its fast way cannot write them: rv_trace_writer_function_span's way,
 * and the words fxt.c laid out for the span (it keeps them by the name,
 * where another name may take their place) become the function's. */
static __attribute__((noinline)) int
function_span_of_slow(struct rv_trace_writer *w, struct writer_function *fn, uint64_t thread,
		      uint64_t begin_ns, uint64_t end_ns, uint32_t depth, struct rv_error *err)
{
	const struct rv_function_span span = {
		.pid = (uint32_t)(thread >> 32),
		.tid = (uint32_t)thread,
		.category = fn->category,
		.name = fn->name,
		.begin_ns = begin_ns,
		.end_ns = end_ns,
		.depth = depth,
		.address = fn->address,
		.file = fn->file,
		.line = fn->line,
	};
	int r = function_span_checked(w, &span, err);

	if (r == 0 && w->fxt && !fn->record_bytes) {
		const struct rv_fxt_function_shape *shape =
			&w->fast.function_shapes[rv_fxt_function_shape_slot(span.name)];

		if (rv_fxt_function_shape_fits(shape, &span))
			lay_out_function(fn, shape);
	}
	return r;
}

int rv_trace_writer_function_span_of(struct rv_trace_writer *w, uint32_t function, uint64_t thread,
				     uint64_t begin_ns, uint64_t end_ns, uint32_t depth,
				     struct rv_error *err)
{
	struct writer_function *fn = &w->functions[(size_t)function - 1];
	size_t used = w->out.used, bytes = fn->record_bytes;
	unsigned char *p;

	/* rv_fxt_write_function with the function's words, where it has them
	 * and the span is on the last span's thread, with room in the buffer:
	 * nothing is written but its record, and nothing can fail */
	if (used >= w->fast_below || thread != w->fast.last_thread_key || end_ns < begin_ns ||
	    !bytes)
		return function_span_of_slow(w, fn, thread, begin_ns, end_ns, depth, err);
	p = w->out.buf + used;
	rv_put_word(p, fn->header | w->fast.last_thread_bits);
	rv_put_word(p + 8, begin_ns);
	memcpy(p + 16, fn->arg_words, sizeof(fn->arg_words));
	rv_put_word(p + bytes - 8, end_ns);
	w->out.used = used + bytes;
	w->spans++;
	return 0;
}

int rv_trace_writer_instant(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
			    uint64_t ts_ns, const struct rv_arg *args, size_t nr_args,
			    struct rv_error *err)
{
	int r = check_usable(w, err);

	if (r < 0)
		return r;
	r = check_args("instant", name, args, nr_args, err);
	if (r < 0)
		return r;
	if (w->format == RV_TRACE_FXT)
		r = rv_fxt_instant(w->fxt, pid, tid, name, ts_ns, args, nr_args, err);
	else
		rv_json_instant(&w->json, pid, tid, name, ts_ns, args, nr_args);
	if (r == 0)
		w->instants++;
	return finish_call(w, r, err);
}

/* Puts the finished file at temp into place at path, as rename(2) does
 * (-errno as it fails). Over a regular file the two are exchanged
 * (RENAME_EXCHANGE) and the old one, now at temp, is unlinked: replacing a
 * file by rename(2) makes ext4 start writing the new file to disk at once
 * (its auto_da_alloc), and the next run's replacing of that file waits until
 * the writing is done (60 to 130 ms for the 300 MB trace of a 30 MB capture
 * decoded again at once). Either way the path names the old file or the new
 * one at every moment. A kill between the exchange and the unlink leaves
 * the old file at temp, where the next run's sweep removes it if rearview
 * made it (it is marked as the partial trace it once was). */
static int put_in_place(const char *temp, const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    renameat2(AT_FDCWD, temp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		/* something other than a file put at path since lstat (a
		 * directory) goes back, and rename(2) says what it says */
		if (lstat(temp, &st) == 0 && !S_ISREG(st.st_mode)) {
			if (renameat2(AT_FDCWD, temp, AT_FDCWD, path, RENAME_EXCHANGE) < 0)
				return -errno;
		} else {
			if (unlink(temp) < 0)
				rv_debug("cannot remove the trace '%s' replaced (now '%s'): %s",
					 path, temp, strerror(errno));
			return 0;
		}
	}
	return rename(temp, path) < 0 ? -errno : 0;
}

static void remove_temp_file(struct rv_trace_writer *w)
{
	w->fast_below = 0;
	out_release(&w->out);
	if (w->temp_created && unlink(w->temp_path) < 0 && errno != ENOENT)
		rv_debug("cannot remove '%s': %s", w->temp_path, strerror(errno));
	w->state = WRITER_ABORTED;
}

int rv_trace_writer_commit(struct rv_trace_writer *w, struct rv_error *err)
{
	int r = check_usable(w, err);
	int code;

	if (r < 0)
		return r;
	w->fast_below = 0; /* nothing more is written */
	if (w->format == RV_TRACE_JSON)
		rv_json_close(&w->json);
	out_finish(&w->out);
	if (w->out.error) {
		r = fail(w, w->out.error, err);
		remove_temp_file(w);
		return r;
	}
	if (w->to_stdout) {
		code = close(w->out.fd) < 0 ? errno : 0;
		w->out.fd = -1;
		if (code)
			return fail(w, code, err);
		out_release(&w->out);
		w->state = WRITER_COMMITTED;
		rv_debug("wrote the trace to standard output: %" PRIu64 " spans, %" PRIu64
			 " instants, %" PRIu64 " bytes",
			 w->spans, w->instants, w->out.written);
		return 0;
	}
	/* made 0600 (rv_leftovers_create_file); a trace of what anyone may
	 * see gets the mode any new file of the user's gets. */
	if (!w->private_file && fchmod(w->out.fd, 0666 & ~current_umask()) < 0)
		rv_debug("cannot give '%s' the umask's mode: %s", w->temp_path, strerror(errno));
	code = close(w->out.fd) < 0 ? errno : 0;
	w->out.fd = -1;
	if (code) {
		r = fail(w, code, err);
		remove_temp_file(w);
		return r;
	}
	if ((code = -put_in_place(w->temp_path, w->path))) {
		r = rv_error_set(&w->failure, code,
				 "cannot put the trace in place at '%s': %s; choose another path "
				 "with -o",
				 w->path, strerror(code));
		w->failed = true;
		if (err)
			*err = w->failure;
		remove_temp_file(w);
		return r;
	}
	out_release(&w->out);
	w->state = WRITER_COMMITTED;
	rv_debug("wrote '%s': %" PRIu64 " spans, %" PRIu64 " instants, %" PRIu64 " bytes (%" PRIu64
		 " before compression)",
		 w->path, w->spans, w->instants, w->out.written, w->out.flushed);
	return 0;
}

void rv_trace_writer_abort(struct rv_trace_writer *w)
{
	if (!w || w->state != WRITER_OPEN)
		return;
	remove_temp_file(w);
}

const char *rv_trace_writer_temp_path(const struct rv_trace_writer *w)
{
	return w && w->state == WRITER_OPEN && w->temp_created ? w->temp_path : NULL;
}

void rv_trace_writer_free(struct rv_trace_writer *w)
{
	if (!w)
		return;
	if (w->state == WRITER_OPEN)
		remove_temp_file(w);
	rv_fxt_free(w->fxt);
	free(w->functions);
	free(w->function_index);
	free(w->temp_path);
	free(w->path);
	free(w);
}

void rv_trace_writer_stats(const struct rv_trace_writer *w, struct rv_trace_writer_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	out->spans = w->spans;
	out->instants = w->instants;
	out->bytes = w->out.flushed + w->out.used;
	out->file_bytes = w->out.written;
	if (w->fxt)
		rv_fxt_stats(w->fxt, out);
}

void rv_trace_writer_set_private(struct rv_trace_writer *w)
{
	w->private_file = true;
}

const char *rv_trace_writer_path(const struct rv_trace_writer *w)
{
	return w ? w->path : NULL;
}
