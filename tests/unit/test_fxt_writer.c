/* test_fxt_writer.c: the FXT writer checked against the format specification.
 *
 * Two suites. "fxt_reader" proves that the strict reader in tests/support
 * really is strict, on byte vectors built by hand from the specification's
 * record layouts. "fxt_writer" drives the writer's public API
 * (write/trace_writer.h) and reads every file back with that reader, so a
 * writer that strays from the specification fails here with the reader's
 * message (record offset and field).
 *
 * Not here: the JSON writer (test_json_writer.c), or anything about where
 * the spans come from.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "test_files.h"
#include "write/trace_writer.h"
#include "../support/fxt_reader.h"
#include "fxt_expect.h"

#define MAGIC_WORD 0x0016547846040010ull

/* ---- byte vectors, built from the specification ---- */

struct fxt_buf {
	unsigned char *bytes;
	size_t len, cap;
};

static void put_bytes(struct fxt_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->bytes = realloc(b->bytes, b->cap);
		cr_assert_not_null(b->bytes);
	}
	memcpy(b->bytes + b->len, p, n);
	b->len += n;
}

static void put_word(struct fxt_buf *b, uint64_t w)
{
	unsigned char le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(w >> (8 * i));
	put_bytes(b, le, 8);
}

static uint64_t get_word(const struct fxt_buf *b, size_t at)
{
	uint64_t w = 0;

	for (int i = 7; i >= 0; i--)
		w = (w << 8) | b->bytes[at + i];
	return w;
}

static void set_word(struct fxt_buf *b, size_t at, uint64_t w)
{
	for (int i = 0; i < 8; i++)
		b->bytes[at + i] = (unsigned char)(w >> (8 * i));
}

/* A zero-padded stream. */
static void put_stream(struct fxt_buf *b, const char *s, size_t len)
{
	static const unsigned char zeros[8];

	put_bytes(b, s, len);
	if (len % 8)
		put_bytes(b, zeros, 8 - len % 8);
}

/* Starts a record whose size field rec_end fills in. */
static size_t rec_begin(struct fxt_buf *b, uint64_t header)
{
	size_t at = b->len;

	put_word(b, header);
	return at;
}

static void rec_end(struct fxt_buf *b, size_t at)
{
	uint64_t words = (b->len - at) / 8;

	set_word(b, at, get_word(b, at) | (words << 4));
}

static void rec_magic(struct fxt_buf *b)
{
	put_word(b, MAGIC_WORD);
}

static void rec_init(struct fxt_buf *b, uint64_t ticks_per_second)
{
	put_word(b, 1 | (2 << 4));
	put_word(b, ticks_per_second);
}

static void rec_string(struct fxt_buf *b, unsigned index, const char *s)
{
	size_t len = strlen(s);
	size_t at = rec_begin(b, 2 | ((uint64_t)index << 16) | ((uint64_t)len << 32));

	put_stream(b, s, len);
	rec_end(b, at);
}

static void rec_thread(struct fxt_buf *b, unsigned index, uint64_t pid, uint64_t tid)
{
	put_word(b, 3 | (3 << 4) | ((uint64_t)index << 16));
	put_word(b, pid);
	put_word(b, tid);
}

static uint64_t event_header(unsigned type, unsigned nr_args, unsigned thread_ref,
			     unsigned category_ref, unsigned name_ref)
{
	return 4 | ((uint64_t)type << 16) | ((uint64_t)nr_args << 20) |
	       ((uint64_t)thread_ref << 24) | ((uint64_t)category_ref << 32) |
	       ((uint64_t)name_ref << 48);
}

static void rec_complete(struct fxt_buf *b, unsigned thread_ref, unsigned name_ref, uint64_t begin,
			 uint64_t end)
{
	size_t at = rec_begin(b, event_header(4, 0, thread_ref, 1, name_ref));

	put_word(b, begin);
	put_word(b, end);
	rec_end(b, at);
}

static void rec_duration(struct fxt_buf *b, unsigned type, unsigned thread_ref, unsigned name_ref,
			 uint64_t ts)
{
	size_t at = rec_begin(b, event_header(type, 0, thread_ref, 1, name_ref));

	put_word(b, ts);
	rec_end(b, at);
}

/* magic, 1 GHz initialization, strings 1..4, thread slot 1 = 10/11. */
static void preamble(struct fxt_buf *b)
{
	rec_magic(b);
	rec_init(b, 1000000000);
	rec_string(b, 1, "cat");
	rec_string(b, 2, "main");
	rec_string(b, 3, "child");
	rec_string(b, 4, "process");
	rec_thread(b, 1, 10, 11);
}

static struct fxt_trace *read_ok(const struct fxt_buf *b)
{
	struct fxt_trace *t = NULL;
	char err[1024] = "";
	int ret = fxt_read_buffer(b->bytes, b->len, &t, err, sizeof(err));

	cr_assert_eq(ret, 0, "the reader refused a valid vector: %s", err);
	cr_assert_not_null(t);
	return t;
}

/* The vector must be refused with a message containing every fragment. */
static void read_fails(const struct fxt_buf *b, const char *fragment1, const char *fragment2)
{
	struct fxt_trace *t = NULL;
	char err[1024] = "";
	int ret = fxt_read_buffer(b->bytes, b->len, &t, err, sizeof(err));

	cr_assert_lt(ret, 0, "the reader accepted an invalid vector (expected: %s)", fragment1);
	cr_assert_null(t);
	cr_assert_not_null(strstr(err, fragment1), "message '%s' lacks '%s'", err, fragment1);
	if (fragment2)
		cr_assert_not_null(strstr(err, fragment2), "message '%s' lacks '%s'", err,
				   fragment2);
}

static void gzip_bytes(const unsigned char *in, size_t len, struct fxt_buf *out)
{
	z_stream zs = { 0 };
	unsigned char chunk[4096];
	int ret;

	cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (unsigned)len;
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof(chunk);
		ret = deflate(&zs, Z_FINISH);
		cr_assert(ret == Z_OK || ret == Z_STREAM_END);
		put_bytes(out, chunk, sizeof(chunk) - zs.avail_out);
	} while (ret != Z_STREAM_END);
	deflateEnd(&zs);
}

/* ---- the reader on hand-made vectors ---- */

Test(fxt_reader, reads_zstd_and_refuses_a_truncated_one)
{
	struct fxt_buf b = { 0 }, z = { 0 };
	struct fxt_trace *t;
	size_t bound, n;

	preamble(&b);
	rec_complete(&b, 1, 2, 5, 10);
	bound = ZSTD_compressBound(b.len);
	z.bytes = malloc(bound);
	n = ZSTD_compress(z.bytes, bound, b.bytes, b.len, 3);
	cr_assert(!ZSTD_isError(n), "%s", ZSTD_getErrorName(n));
	z.len = n;
	t = read_ok(&z);
	cr_assert(t->compressed);
	cr_assert_eq(t->size, b.len);
	cr_assert_eq(fxt_count_spans(t, 10, 11, "main"), 1);
	fxt_trace_free(t);
	z.len -= 5;
	read_fails(&z, "zstd", NULL);
	free(b.bytes);
	free(z.bytes);
}

Test(fxt_reader, reads_a_valid_vector_into_the_model)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;
	const struct fxt_span *s;
	const struct fxt_arg *a;
	size_t at;
	double d = 2.5;
	uint64_t dbits;

	preamble(&b);
	/* process 10 "proc" (inline name), thread 11 "thr" with process=10 */
	at = rec_begin(&b, 7 | (1 << 16) | ((uint64_t)(0x8000 | 4) << 24));
	put_word(&b, 10);
	put_stream(&b, "proc", 4);
	rec_end(&b, at);
	at = rec_begin(&b, 7 | (2 << 16) | ((uint64_t)(0x8000 | 3) << 24) | (1ull << 40));
	put_word(&b, 11);
	put_stream(&b, "thr", 3);
	put_word(&b, 8 | (2 << 4) | (4 << 16)); /* koid argument named by index 4 */
	put_word(&b, 10);
	rec_end(&b, at);
	/* complete span "main" [100, 900] with every argument type */
	at = rec_begin(&b, event_header(4, 7, 1, 1, 2));
	put_word(&b, 100);
	put_word(&b, 1 | (2 << 4) | (0x8001ull << 16) | ((uint64_t)(uint32_t)-7 << 32));
	put_stream(&b, "i", 1);
	put_word(&b, 4 | (3 << 4) | (0x8001ull << 16));
	put_stream(&b, "u", 1);
	put_word(&b, UINT64_MAX);
	memcpy(&dbits, &d, sizeof(d));
	put_word(&b, 5 | (2 << 4) | (2ull << 16));
	put_word(&b, dbits);
	put_word(&b, 6 | (3 << 4) | (0x8001ull << 16) | (0x8005ull << 32));
	put_stream(&b, "s", 1);
	put_stream(&b, "hello", 5);
	put_word(&b, 7 | (3 << 4) | (0x8001ull << 16));
	put_stream(&b, "p", 1);
	put_word(&b, 0xdeadbeef);
	put_word(&b, 9 | (2 << 4) | (0x8001ull << 16) | (1ull << 32));
	put_stream(&b, "b", 1);
	put_word(&b, 0 | (1 << 4) | (3ull << 16));
	put_word(&b, 900);
	rec_end(&b, at);
	/* child, inline thread and inline name */
	at = rec_begin(&b, event_header(4, 0, 0, 0, 0x8000 | 2));
	put_word(&b, 200);
	put_word(&b, 10);
	put_word(&b, 11);
	put_stream(&b, "ch", 2);
	put_word(&b, 300);
	rec_end(&b, at);
	/* instant and counter */
	rec_duration(&b, 0, 1, 3, 250);
	at = rec_begin(&b, event_header(1, 1, 1, 1, 3));
	put_word(&b, 260);
	put_word(&b, 3 | (3 << 4) | (0x8001ull << 16));
	put_stream(&b, "v", 1);
	put_word(&b, 42);
	put_word(&b, 77);
	rec_end(&b, at);

	t = read_ok(&b);
	cr_assert_eq(t->ticks_per_second, 1000000000);
	cr_assert_str_eq(fxt_process_name(t, 10), "proc");
	cr_assert_str_eq(fxt_thread_name(t, 10, 11), "thr");
	cr_assert_null(fxt_thread_name(t, 12, 11));
	cr_assert_eq(t->nr_spans, 2);
	s = fxt_find_span(t, 10, 11, "main", 0);
	cr_assert_not_null(s);
	cr_assert_eq(s->begin_ns, 100);
	cr_assert_eq(s->end_ns, 900);
	cr_assert_str_eq(s->category, "cat");
	cr_assert_eq(s->depth, 0);
	cr_assert_eq(s->nr_args, 7);
	a = fxt_find_arg(s->args, s->nr_args, "i");
	cr_assert(a && a->type == FXT_ARG_INT32 && a->i == -7);
	a = fxt_find_arg(s->args, s->nr_args, "u");
	cr_assert(a && a->type == FXT_ARG_UINT64 && a->u == UINT64_MAX);
	a = fxt_find_arg(s->args, s->nr_args, "main");
	cr_assert(a && a->type == FXT_ARG_DOUBLE && a->d == 2.5);
	a = fxt_find_arg(s->args, s->nr_args, "s");
	cr_assert(a && a->type == FXT_ARG_STRING);
	cr_assert_str_eq(a->s, "hello");
	a = fxt_find_arg(s->args, s->nr_args, "p");
	cr_assert(a && a->type == FXT_ARG_POINTER && a->u == 0xdeadbeef);
	a = fxt_find_arg(s->args, s->nr_args, "b");
	cr_assert(a && a->type == FXT_ARG_BOOL && a->b);
	a = fxt_find_arg(s->args, s->nr_args, "child");
	cr_assert(a && a->type == FXT_ARG_NULL);
	s = fxt_find_span(t, 10, 11, "ch", 0);
	cr_assert_not_null(s);
	cr_assert_eq(s->depth, 1);
	cr_assert_eq(fxt_span_parent(t, s), fxt_find_span(t, 10, 11, "main", 0));
	cr_assert_eq(t->nr_instants, 1);
	cr_assert_eq(t->instants[0].ts_ns, 250);
	cr_assert_eq(t->nr_counters, 1);
	cr_assert_eq(t->counters[0].id, 77);
	cr_assert_eq(t->stats.inline_thread_refs, 1);
	fxt_trace_free(t);
	free(b.bytes);
}

Test(fxt_reader, reads_gzip_and_refuses_a_truncated_one)
{
	struct fxt_buf b = { 0 }, z = { 0 };
	struct fxt_trace *t;

	preamble(&b);
	rec_complete(&b, 1, 2, 5, 10);
	gzip_bytes(b.bytes, b.len, &z);
	t = read_ok(&z);
	cr_assert(t->compressed);
	cr_assert_eq(t->size, b.len);
	cr_assert_eq(fxt_count_spans(t, 10, 11, "main"), 1);
	fxt_trace_free(t);
	z.len -= 5;
	read_fails(&z, "gzip", "truncated");
	free(b.bytes);
	free(z.bytes);
}

Test(fxt_reader, refuses_a_bad_or_missing_magic_record)
{
	struct fxt_buf b = { 0 }, empty = { 0 };

	preamble(&b);
	b.bytes[5] ^= 1;
	read_fails(&b, "magic", NULL);
	b.len = 0;
	rec_init(&b, 1000000000);
	rec_magic(&b);
	read_fails(&b, "magic", NULL);
	put_bytes(&empty, "", 0);
	read_fails(&empty, "magic", NULL);
	free(b.bytes);
	free(empty.bytes);
}

Test(fxt_reader, refuses_a_record_larger_than_the_file)
{
	struct fxt_buf b = { 0 };
	size_t at;

	preamble(&b);
	at = b.len;
	rec_complete(&b, 1, 2, 5, 10);
	set_word(&b, at, get_word(&b, at) + (1 << 4)); /* 4 words declared, 3 present */
	read_fails(&b, "offset 112 ", "only 24 bytes are left");
	free(b.bytes);
}

Test(fxt_reader, refuses_a_zero_size_and_a_truncated_tail)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	put_word(&b, 4 | event_header(4, 0, 1, 1, 2)); /* size 0 */
	read_fails(&b, "size is 0", "offset 112 ");
	b.len -= 8;
	put_bytes(&b, "\x01\x02\x03", 3);
	read_fails(&b, "truncated record at offset 112", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_a_record_with_more_words_than_its_fields)
{
	struct fxt_buf b = { 0 };
	size_t at;

	preamble(&b);
	at = rec_begin(&b, event_header(4, 0, 1, 1, 2));
	put_word(&b, 5);
	put_word(&b, 10);
	put_word(&b, 0); /* one word too many */
	rec_end(&b, at);
	read_fails(&b, "has 4 words but its fields take 3", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_dangling_and_forward_string_refs)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_complete(&b, 1, 7, 5, 10);
	read_fails(&b, "string index 7", "offset 112 ");
	b.len = 0;
	preamble(&b);
	rec_complete(&b, 1, 9, 5, 10);
	rec_string(&b, 9, "late");
	read_fails(&b, "string index 9", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_a_dangling_thread_ref)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_complete(&b, 2, 2, 5, 10);
	read_fails(&b, "thread index 2", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_reserved_bits_and_bad_padding)
{
	struct fxt_buf b = { 0 };
	size_t at;

	preamble(&b);
	at = b.len;
	rec_string(&b, 5, "x");
	set_word(&b, at, get_word(&b, at) | (1ull << 50));
	read_fails(&b, "reserved bits", "offset 112 ");

	b.len = 0;
	preamble(&b);
	at = b.len;
	rec_string(&b, 5, "xy");
	b.bytes[at + 8 + 5] = 'z'; /* inside the padding */
	read_fails(&b, "padding", NULL);

	b.len = 0;
	preamble(&b);
	put_word(&b, 3 | (3 << 4) | (1 << 16) | (1ull << 30)); /* thread record */
	put_word(&b, 1);
	put_word(&b, 2);
	read_fails(&b, "reserved bits", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_unknown_event_and_record_types)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_duration(&b, 11, 1, 2, 5);
	read_fails(&b, "unknown event type 11", NULL);
	b.len = 0;
	preamble(&b);
	put_word(&b, 12 | (1 << 4));
	read_fails(&b, "unknown record type 12", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_argument_sizes_that_do_not_match_their_type)
{
	struct fxt_buf b = { 0 };
	size_t at;

	/* int64 argument declaring 1 word: its value word would be taken
	 * from outside the argument. */
	preamble(&b);
	at = rec_begin(&b, event_header(4, 1, 1, 1, 2));
	put_word(&b, 5);
	put_word(&b, 3 | (1 << 4) | (2ull << 16));
	put_word(&b, 10);
	rec_end(&b, at);
	read_fails(&b, "argument value", NULL);

	/* int32 argument declaring 2 words */
	b.len = 0;
	preamble(&b);
	at = rec_begin(&b, event_header(4, 1, 1, 1, 2));
	put_word(&b, 5);
	put_word(&b, 1 | (2 << 4) | (2ull << 16));
	put_word(&b, 0);
	put_word(&b, 10);
	rec_end(&b, at);
	read_fails(&b, "declares 2 words but its fields take 1", NULL);

	/* three arguments announced, two present */
	b.len = 0;
	preamble(&b);
	at = rec_begin(&b, event_header(0, 3, 1, 1, 2));
	put_word(&b, 5);
	put_word(&b, 1 | (1 << 4) | (2ull << 16));
	put_word(&b, 1 | (1 << 4) | (3ull << 16));
	rec_end(&b, at);
	read_fails(&b, "argument 2 of 3", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_an_event_before_the_initialization_record)
{
	struct fxt_buf b = { 0 };

	rec_magic(&b);
	rec_string(&b, 1, "cat");
	rec_string(&b, 2, "main");
	rec_thread(&b, 1, 10, 11);
	rec_complete(&b, 1, 2, 5, 10);
	read_fails(&b, "initialization", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_invalid_utf8_in_a_string_record)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_string(&b, 5, "ab\xc3(");
	read_fails(&b, "UTF-8", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_improper_nesting)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_complete(&b, 1, 2, 0, 10);
	rec_complete(&b, 1, 3, 5, 15);
	read_fails(&b, "improperly nested span 'child'", "in 'main'");
	free(b.bytes);
}

Test(fxt_reader, refuses_a_child_written_before_its_parent_at_the_same_time)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;

	preamble(&b);
	rec_complete(&b, 1, 2, 0, 10);
	rec_complete(&b, 1, 3, 0, 5);
	t = read_ok(&b);
	cr_assert_eq(fxt_find_span(t, 10, 11, "child", 0)->depth, 1);
	fxt_trace_free(t);

	b.len = 0;
	preamble(&b);
	rec_complete(&b, 1, 3, 0, 5);
	rec_complete(&b, 1, 2, 0, 10);
	read_fails(&b, "improperly nested span 'main'", "in 'child'");
	free(b.bytes);
}

/* Zero-length spans the way Perfetto's slice tracker places them: inside
 * what is open at their time; a second one at the same time inside the
 * first (zero-length slices of one time stack); one at its enclosing span's
 * end beside it (a slice that ends as the next begins is over). */
Test(fxt_reader, places_zero_length_spans_as_perfetto_does)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;

	preamble(&b);
	rec_complete(&b, 1, 2, 0, 10); /* main */
	rec_complete(&b, 1, 3, 5, 5);  /* child */
	rec_complete(&b, 1, 4, 5, 5);
	rec_complete(&b, 1, 3, 10, 10);
	t = read_ok(&b);
	cr_assert_eq(fxt_find_span(t, 10, 11, "child", 0)->depth, 1);
	cr_assert_eq(t->spans[fxt_find_span(t, 10, 11, "child", 0)->parent].begin, 0);
	cr_assert_eq(fxt_find_span(t, 10, 11, "process", 0)->depth, 2, "stacked on the first");
	cr_assert_eq(fxt_find_span(t, 10, 11, "child", 1)->depth, 0, "at main's end: beside it");
	fxt_trace_free(t);
	free(b.bytes);
}

Test(fxt_reader, nests_touching_spans_as_siblings_and_separates_threads)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;
	const struct fxt_span *root, *child;
	size_t n = 0;

	preamble(&b);
	rec_thread(&b, 2, 10, 12);
	rec_complete(&b, 1, 2, 0, 100);
	rec_complete(&b, 2, 2, 50, 150); /* overlaps, but on another thread */
	rec_complete(&b, 1, 3, 0, 40);
	rec_complete(&b, 1, 3, 40, 100);
	t = read_ok(&b);
	root = fxt_find_span(t, 10, 11, "main", 0);
	cr_assert_eq(fxt_span_nr_children(t, root), 2);
	fxt_for_each_child(t, root, child)
	{
		cr_assert_eq(child->depth, 1);
		cr_assert_eq(child->begin, n++ ? 40 : 0);
	}
	cr_assert_eq(fxt_find_span(t, 10, 12, "main", 0)->depth, 0);
	cr_assert_eq(fxt_sum_durations_ns(t, 10, 11, "child"), 100);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 2);
	fxt_trace_free(t);
	free(b.bytes);
}

Test(fxt_reader, matches_begin_and_end_per_thread)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;
	const struct fxt_span *outer, *inner;

	preamble(&b);
	rec_thread(&b, 2, 10, 12);
	rec_duration(&b, 2, 1, 2, 0);
	rec_duration(&b, 2, 2, 2, 1); /* another thread, left open */
	rec_duration(&b, 2, 1, 3, 5);
	rec_duration(&b, 3, 1, 0, 7); /* end with an empty name */
	rec_duration(&b, 3, 1, 2, 9);
	t = read_ok(&b);
	cr_assert_eq(t->nr_spans, 2);
	outer = fxt_find_span(t, 10, 11, "main", 0);
	inner = fxt_find_span(t, 10, 11, "child", 0);
	cr_assert(outer && inner);
	cr_assert(!outer->complete);
	cr_assert_eq(outer->begin, 0);
	cr_assert_eq(outer->end, 9);
	cr_assert_eq(inner->end, 7);
	cr_assert_eq(fxt_span_parent(t, inner), outer);
	cr_assert_eq(t->nr_unterminated, 1);
	cr_assert_eq(t->unterminated[0].tid, 12);
	fxt_trace_free(t);

	b.len = 0;
	preamble(&b);
	rec_duration(&b, 3, 1, 2, 9);
	read_fails(&b, "no open duration begin", NULL);
	free(b.bytes);
}

Test(fxt_reader, follows_string_and_thread_redefinitions)
{
	struct fxt_buf b = { 0 };
	struct fxt_trace *t;

	preamble(&b);
	rec_complete(&b, 1, 2, 0, 10);
	rec_string(&b, 2, "again");
	rec_thread(&b, 1, 20, 21);
	rec_complete(&b, 1, 2, 0, 10);
	t = read_ok(&b);
	cr_assert_str_eq(t->spans[0].name, "main");
	cr_assert_eq(t->spans[0].tid, 11);
	cr_assert_str_eq(t->spans[1].name, "again");
	cr_assert_eq(t->spans[1].pid, 20);
	cr_assert_eq(t->spans[1].tid, 21);
	cr_assert_eq(t->stats.string_redefinitions, 1);
	cr_assert_eq(t->stats.thread_redefinitions, 1);
	fxt_trace_free(t);
	free(b.bytes);
}

Test(fxt_reader, refuses_a_complete_event_that_ends_before_it_begins)
{
	struct fxt_buf b = { 0 };

	preamble(&b);
	rec_complete(&b, 1, 2, 10, 9);
	read_fails(&b, "before it begins", NULL);
	free(b.bytes);
}

Test(fxt_reader, refuses_a_thread_object_whose_process_is_not_a_koid)
{
	struct fxt_buf b = { 0 };
	size_t at;

	preamble(&b);
	at = rec_begin(&b, 7 | (2 << 16) | (2ull << 24) | (1ull << 40));
	put_word(&b, 11);
	put_word(&b, 4 | (2 << 4) | (4 << 16));
	put_word(&b, 10);
	rec_end(&b, at);
	read_fails(&b, "not a koid", NULL);
	free(b.bytes);
}

Test(fxt_reader, reads_a_file_and_names_it_in_errors)
{
	char path[] = "/tmp/rv-fxt-reader-XXXXXX";
	struct fxt_buf b = { 0 };
	struct fxt_trace *t = NULL;
	char err[1024] = "";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	preamble(&b);
	rec_complete(&b, 1, 2, 0, 10);
	cr_assert_eq(write(fd, b.bytes, b.len), (ssize_t)b.len);
	cr_assert_eq(fxt_read_file(path, &t, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(t->nr_spans, 1);
	fxt_trace_free(t);
	cr_assert_eq(ftruncate(fd, 12), 0);
	close(fd);
	cr_assert_lt(fxt_read_file(path, &t, err, sizeof(err)), 0);
	cr_assert_not_null(strstr(err, path), "%s", err);
	unlink(path);
	cr_assert_eq(fxt_read_file(path, &t, err, sizeof(err)), -ENOENT);
	free(b.bytes);
}

/* ---- the writer, read back with the reader ---- */

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_size;
}

static struct fxt_buf slurp(const char *path)
{
	struct fxt_buf b = { 0 };
	unsigned char chunk[65536];
	FILE *f = fopen(path, "rb");
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		put_bytes(&b, chunk, n);
	fclose(f);
	return b;
}

static struct rv_trace_writer *open_writer(const char *path)
{
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_open(&w, path, &err), 0, "open %s: %s", path, err.message);
	cr_assert_not_null(w);
	return w;
}

static void commit(struct rv_trace_writer *w)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_commit(w, &err), 0, "commit: %s", err.message);
}

static void span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
		 uint64_t begin, uint64_t end)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_span(w, pid, tid, name, begin, end, NULL, 0, &err), 0,
		     "span %s: %s", name, err.message);
}

static void name_process(struct rv_trace_writer *w, uint32_t pid, const char *name)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_process(w, pid, name, &err), 0, "%s", err.message);
}

static void name_thread(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_thread(w, pid, tid, name, &err), 0, "%s", err.message);
}

static struct fxt_trace *read_back(const char *path)
{
	struct fxt_trace *t = NULL;
	char err[1024] = "";
	int ret = fxt_read_file(path, &t, err, sizeof(err));

	cr_assert_eq(ret, 0, "the writer's file does not follow the FXT specification: %s", err);
	return t;
}

Test(fxt_writer, starts_with_the_magic_and_initialization_records)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct fxt_trace *t;
	struct fxt_buf b;
	static const unsigned char magic[8] = { 0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00 };

	commit(w);
	rv_trace_writer_free(w);
	b = slurp(path);
	cr_assert_geq(b.len, 24);
	cr_assert_eq(memcmp(b.bytes, magic, 8), 0, "the file does not begin with the magic record");
	/* initialization record: type 1, 2 words, then ticks per second */
	cr_assert_eq(get_word(&b, 8), 0x21, "word at offset 8 is 0x%" PRIx64, get_word(&b, 8));
	cr_assert_eq(get_word(&b, 16), 1000000000, "ticks per second %" PRIu64, get_word(&b, 16));
	t = read_back(path);
	cr_assert_eq(t->ticks_per_second, 1000000000);
	cr_assert_eq(t->nr_spans, 0);
	fxt_trace_free(t);
	free(b.bytes);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, names_processes_and_threads_with_kernel_objects)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	const struct fxt_thread *th;
	struct fxt_trace *t;

	name_process(w, 100, "prøcess");
	name_thread(w, 100, 100, "main");
	name_thread(w, 100, 101, "worker 1");
	name_process(w, 200, "other");
	name_thread(w, 200, 201, "main");
	span(w, 100, 101, "f", 10, 20);
	span(w, 200, 201, "f", 10, 20);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_str_eq(fxt_process_name(t, 100), "prøcess");
	cr_assert_str_eq(fxt_process_name(t, 200), "other");
	cr_assert_str_eq(fxt_thread_name(t, 100, 100), "main");
	cr_assert_str_eq(fxt_thread_name(t, 100, 101), "worker 1");
	cr_assert_str_eq(fxt_thread_name(t, 200, 201), "main");
	th = fxt_find_thread(t, 100, 101);
	cr_assert(th && th->has_process && th->pid == 100,
		  "thread 101 lacks its \"process\" koid argument");
	for (size_t i = 0; i < t->nr_objects; i++)
		cr_assert(t->objects[i].obj_type == 1 || t->objects[i].obj_type == 2,
			  "kernel object of type %u", t->objects[i].obj_type);
	cr_assert_eq(fxt_find_span(t, 100, 101, "f", 0)->pid, 100);
	cr_assert_eq(fxt_find_span(t, 200, 201, "f", 0)->tid, 201);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, writes_nested_spans_with_their_times)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	const struct fxt_span *root, *a, *b, *c;
	struct fxt_trace *t;

	name_process(w, 7, "p");
	name_thread(w, 7, 8, "t");
	span(w, 7, 8, "main", 1000, 5000);
	span(w, 7, 8, "a", 1000, 2000);
	span(w, 7, 8, "b", 1100, 1234);
	span(w, 7, 8, "c", 2000, 5000);
	span(w, 7, 8, "main", 6000, 1000000000123ull);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, 5);
	cr_assert_eq(t->stats.events_by_type[FXT_EVENT_DURATION_COMPLETE], 5,
		     "spans should be duration complete events");
	root = fxt_find_span(t, 7, 8, "main", 0);
	a = fxt_find_span(t, 7, 8, "a", 0);
	b = fxt_find_span(t, 7, 8, "b", 0);
	c = fxt_find_span(t, 7, 8, "c", 0);
	cr_assert(root && a && b && c);
	cr_assert_eq(root->begin_ns, 1000);
	cr_assert_eq(root->end_ns, 5000);
	cr_assert_eq(b->begin_ns, 1100);
	cr_assert_eq(b->end_ns, 1234);
	cr_assert_eq(root->depth, 0);
	cr_assert_eq(a->depth, 1);
	cr_assert_eq(b->depth, 2);
	cr_assert_eq(c->depth, 1);
	cr_assert_eq(fxt_span_parent(t, b), a);
	cr_assert_eq(fxt_span_first_child(t, root), a);
	cr_assert_eq(fxt_span_next_sibling(t, a), c);
	cr_assert_eq(fxt_first_root(t, 7, 8), root);
	cr_assert_eq(fxt_span_next_sibling(t, root), fxt_find_span(t, 7, 8, "main", 1));
	cr_assert_null(fxt_span_next_sibling(t, fxt_find_span(t, 7, 8, "main", 1)));
	cr_assert_eq(fxt_find_span(t, 7, 8, "main", 1)->end_ns, 1000000000123ull);
	cr_assert_eq(fxt_sum_durations_ns(t, 7, 8, "main"), 4000 + 1000000000123ull - 6000);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, writes_instants_with_arguments)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg args[] = {
		{ .name = "why", .kind = RV_ARG_STRING, .s = "trigger" },
		{ .name = "n", .kind = RV_ARG_UINT, .u = 3 },
	};
	struct rv_error err = { 0 };
	const struct fxt_instant *in;
	const struct fxt_arg *a;
	struct fxt_trace *t;

	span(w, 7, 8, "main", 1000, 5000);
	cr_assert_eq(rv_trace_writer_instant(w, 7, 8, "mark", 1500, args, 2, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_trace_writer_instant(w, 7, 9, "lone", 77, NULL, 0, &err), 0, "%s",
		     err.message);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_instants, 2);
	cr_assert_eq(t->stats.events_by_type[FXT_EVENT_INSTANT], 2);
	in = fxt_find_instant(t, 7, 8, "mark", 0);
	cr_assert_not_null(in);
	cr_assert_eq(in->ts_ns, 1500);
	cr_assert_eq(in->nr_args, 2);
	a = fxt_find_arg(in->args, in->nr_args, "why");
	cr_assert(a && a->type == FXT_ARG_STRING);
	cr_assert_str_eq(a->s, "trigger");
	a = fxt_find_arg(in->args, in->nr_args, "n");
	cr_assert(a && (a->type == FXT_ARG_UINT32 || a->type == FXT_ARG_UINT64) && a->u == 3);
	in = fxt_find_instant(t, 7, 9, "lone", 0);
	cr_assert(in && in->ts_ns == 77 && in->nr_args == 0);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

static void check_int_arg(const struct fxt_span *s, const char *name, int64_t value)
{
	const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, name);

	cr_assert_not_null(a, "argument %s is missing", name);
	cr_assert(a->type == FXT_ARG_INT32 || a->type == FXT_ARG_INT64,
		  "argument %s is a %s, not a signed integer", name, fxt_arg_type_name(a->type));
	cr_assert_eq(a->i, value, "argument %s is %" PRId64 ", not %" PRId64, name, a->i, value);
}

static void check_uint_arg(const struct fxt_span *s, const char *name, uint64_t value)
{
	const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, name);

	cr_assert_not_null(a, "argument %s is missing", name);
	cr_assert(a->type == FXT_ARG_UINT32 || a->type == FXT_ARG_UINT64,
		  "argument %s is a %s, not an unsigned integer", name, fxt_arg_type_name(a->type));
	cr_assert_eq(a->u, value, "argument %s is %" PRIu64 ", not %" PRIu64, name, a->u, value);
}

Test(fxt_writer, writes_all_four_argument_kinds)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg args[] = {
		{ .name = "small", .kind = RV_ARG_INT, .i = -5 },
		{ .name = "min", .kind = RV_ARG_INT, .i = INT64_MIN },
		{ .name = "big", .kind = RV_ARG_INT, .i = (int64_t)1 << 40 },
		{ .name = "u", .kind = RV_ARG_UINT, .u = 4000000000u },
		{ .name = "umax", .kind = RV_ARG_UINT, .u = UINT64_MAX },
		{ .name = "addr", .kind = RV_ARG_POINTER, .u = 0x7f12345678abull },
		{ .name = "file", .kind = RV_ARG_STRING, .s = "main.c:42" },
		{ .name = "empty", .kind = RV_ARG_STRING, .s = "" },
	};
	size_t nr = sizeof(args) / sizeof(args[0]);
	struct rv_error err = { 0 };
	const struct fxt_span *s;
	const struct fxt_arg *a;
	struct fxt_trace *t;

	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "f", 10, 20, args, nr, &err), 0, "%s",
		     err.message);
	/* the same argument names and values again, now interned */
	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "f", 30, 40, args, nr, &err), 0, "%s",
		     err.message);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	for (size_t k = 0; k < 2; k++) {
		s = fxt_find_span(t, 1, 2, "f", k);
		cr_assert_not_null(s);
		cr_assert_eq(s->nr_args, nr);
		check_int_arg(s, "small", -5);
		check_int_arg(s, "min", INT64_MIN);
		check_int_arg(s, "big", (int64_t)1 << 40);
		check_uint_arg(s, "u", 4000000000u);
		check_uint_arg(s, "umax", UINT64_MAX);
		a = fxt_find_arg(s->args, s->nr_args, "addr");
		cr_assert(a && a->type == FXT_ARG_POINTER, "a pointer argument must be written as "
							   "an FXT pointer (type 7)");
		cr_assert_eq(a->u, 0x7f12345678abull);
		a = fxt_find_arg(s->args, s->nr_args, "file");
		cr_assert(a && a->type == FXT_ARG_STRING);
		cr_assert_str_eq(a->s, "main.c:42");
		a = fxt_find_arg(s->args, s->nr_args, "empty");
		cr_assert(a && a->type == FXT_ARG_STRING);
		cr_assert_str_eq(a->s, "");
	}
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

/* A function span's arguments as the trace builder gives them (address,
 * file, line): the file's name is a string record once, then a reference;
 * each span costs its 24 bytes and 32 for the arguments. */
Test(fxt_writer, function_span_arguments_cost_32_bytes)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg args[] = {
		{ .name = "address", .kind = RV_ARG_POINTER, .u = 0x55d0c0de1130ull },
		{ .name = "file", .kind = RV_ARG_STRING, .s = "/src/project/lib/parse.c" },
		{ .name = "line", .kind = RV_ARG_INT, .i = 1234 },
	};
	struct rv_trace_writer_stats ws;
	struct rv_error err = { 0 };
	struct fxt_trace *t;
	uint64_t before, strings;

	/* the first span defines the strings */
	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "parse", 0, 1, args, 3, &err), 0, "%s",
		     err.message);
	rv_trace_writer_stats(w, &ws);
	before = ws.bytes;
	strings = ws.strings;
	for (uint64_t i = 1; i <= 1000; i++)
		cr_assert_eq(
			rv_trace_writer_span(w, 1, 2, "parse", 2 * i, 2 * i + 1, args, 3, &err), 0,
			"%s", err.message);
	rv_trace_writer_stats(w, &ws);
	cr_assert_eq(ws.strings, strings, "no string written again");
	cr_assert_eq((ws.bytes - before) / 1000, 24 + 32, "%llu bytes a span",
		     (unsigned long long)((ws.bytes - before) / 1000));
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, 1001);
	for (size_t k = 0; k < t->nr_spans; k += 500) {
		const struct fxt_span *s = &t->spans[k];
		const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, "address");

		cr_assert(a && a->type == FXT_ARG_POINTER && a->u == 0x55d0c0de1130ull);
		a = fxt_find_arg(s->args, s->nr_args, "file");
		cr_assert(a && a->type == FXT_ARG_STRING);
		cr_assert_str_eq(a->s, "/src/project/lib/parse.c");
		check_int_arg(s, "line", 1234);
	}
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, takes_fifteen_arguments_and_refuses_sixteen)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg args[16];
	char names[16][16];
	struct rv_error err = { 0 };
	struct fxt_trace *t;
	const struct fxt_span *s;

	for (int i = 0; i < 16; i++) {
		snprintf(names[i], sizeof(names[i]), "a%d", i);
		args[i] = (struct rv_arg){ .name = names[i], .kind = RV_ARG_INT, .i = i * 11 };
	}
	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "f", 10, 20, args, 15, &err), 0, "%s",
		     err.message);
	cr_assert_lt(rv_trace_writer_span(w, 1, 2, "g", 30, 40, args, 16, &err), 0,
		     "16 arguments cannot be encoded in FXT; the call must fail, not drop one");
	cr_assert_neq(err.message[0], '\0');
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	s = fxt_find_span(t, 1, 2, "f", 0);
	cr_assert_eq(s->nr_args, 15);
	for (int i = 0; i < 15; i++)
		check_int_arg(s, names[i], i * 11);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "g"), 0);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

/* Writes `count` spans of an interned name after a fixed setup. */
static off_t size_with_spans(const char *dir, const char *file, unsigned count)
{
	char *path = path_join(dir, file);
	struct rv_trace_writer *w = open_writer(path);
	struct rv_trace_writer_stats stats;
	struct fxt_trace *t;
	off_t size;

	name_process(w, 1, "p");
	name_thread(w, 1, 2, "t");
	span(w, 1, 2, "interned", 0, 5);
	for (unsigned i = 1; i <= count; i++)
		span(w, 1, 2, "interned", 10ull * i, 10ull * i + 5);
	commit(w);
	rv_trace_writer_stats(w, &stats);
	rv_trace_writer_free(w);
	size = file_size(path);
	cr_assert_eq(stats.bytes, (uint64_t)size, "stats.bytes %" PRIu64 " but the file has %lld",
		     stats.bytes, (long long)size);
	cr_assert_eq(stats.spans, count + 1);
	t = read_back(path);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "interned"), count + 1);
	fxt_trace_free(t);
	free(path);
	return size;
}

Test(fxt_writer, costs_24_bytes_per_span_without_arguments)
{
	char *dir = new_temp_dir("rv-fxt-writer");
	off_t one = size_with_spans(dir, "one.fxt", 0);
	off_t many = size_with_spans(dir, "many.fxt", 1000);

	cr_assert_eq(many - one, 24 * 1000,
		     "1000 more spans cost %lld bytes, %.2f per span instead of 24",
		     (long long)(many - one), (double)(many - one) / 1000);
	free_temp_dir(dir);
}

Test(fxt_writer, attributes_spans_right_with_more_than_255_threads)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	enum { NR_THREADS = 300, ROUNDS = 3 };
	struct fxt_trace *t;
	char name[32];

	for (unsigned p = 0; p < 3; p++) {
		snprintf(name, sizeof(name), "proc%u", p);
		name_process(w, 50 + p, name);
	}
	for (unsigned i = 0; i < NR_THREADS; i++) {
		snprintf(name, sizeof(name), "thread%u", i);
		name_thread(w, 50 + i % 3, 1000 + i, name);
	}
	/* round-robin, so that every round revisits evicted thread slots */
	for (unsigned r = 0; r < ROUNDS; r++) {
		for (unsigned i = 0; i < NR_THREADS; i++) {
			snprintf(name, sizeof(name), "t%u", 1000 + i);
			span(w, 50 + i % 3, 1000 + i, name, 100000ull * r + i,
			     100000ull * r + i + 50);
		}
	}
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, NR_THREADS * ROUNDS);
	cr_assert(t->stats.thread_redefinitions > 0 || t->stats.inline_thread_refs > 0,
		  "300 threads cannot fit 255 thread slots without reuse or inline threads");
	for (size_t k = 0; k < t->nr_spans; k++) {
		const struct fxt_span *s = &t->spans[k];

		snprintf(name, sizeof(name), "t%" PRIu64, s->tid);
		cr_assert_str_eq(s->name, name,
				 "span '%s' at offset %zu is attributed to tid %" PRIu64, s->name,
				 s->offset, s->tid);
		cr_assert_eq(s->pid, 50 + (s->tid - 1000) % 3, "span '%s' has pid %" PRIu64,
			     s->name, s->pid);
	}
	for (unsigned i = 0; i < NR_THREADS; i++) {
		snprintf(name, sizeof(name), "thread%u", i);
		cr_assert_eq(fxt_count_spans(t, 50 + i % 3, 1000 + i, NULL), ROUNDS);
		cr_assert_not_null(fxt_thread_name(t, 50 + i % 3, 1000 + i), "thread %u unnamed",
				   1000 + i);
		cr_assert_str_eq(fxt_thread_name(t, 50 + i % 3, 1000 + i), name);
	}
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

/* A function span on thread tid of process 1, and the thread slots reused
 * since the writer was opened. */
static uint64_t function_span_on(struct rv_trace_writer *w, uint32_t tid, uint64_t ts)
{
	static const char name[] = "work";
	struct rv_function_span fs = {
		.pid = 1,
		.tid = tid,
		.name = name,
		.begin_ns = ts,
		.end_ns = ts + 1,
		.address = 0x401000,
	};
	struct rv_trace_writer_stats stats;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_function_span(w, &fs, &err), 0, "%s", err.message);
	rv_trace_writer_stats(w, &stats);
	return stats.thread_evictions;
}

/* With the thread table full, a new thread takes the slot of the thread
 * whose last span is the oldest, however many spans in a row the others
 * had (the writer counts runs of spans on one thread, not spans). */
Test(fxt_writer, reuses_the_slot_of_the_thread_used_longest_ago)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	uint64_t ts = 0;

	for (uint32_t tid = 1; tid <= 255; tid++)
		for (int k = 0; k < 3; k++)
			cr_assert_eq(function_span_on(w, tid, ts++), 0);
	/* thread 1 again, in a run: thread 2 is now the one used longest ago */
	for (int k = 0; k < 4; k++)
		cr_assert_eq(function_span_on(w, 1, ts++), 0);
	cr_assert_eq(function_span_on(w, 256, ts++), 1);
	cr_assert_eq(function_span_on(w, 1, ts++), 1, "thread 1's slot was given away");
	cr_assert_eq(function_span_on(w, 3, ts++), 1, "thread 3's slot was given away");
	cr_assert_eq(function_span_on(w, 2, ts++), 2, "thread 2 kept a slot");
	commit(w);
	rv_trace_writer_free(w);
	fxt_trace_free(read_back(path));
	free(path);
	free_temp_dir(dir);
}

/* A function span once the writer has failed, been committed or been
 * abandoned is refused like any other call, however like the last span it
 * is. */
Test(fxt_writer, refuses_function_spans_after_a_failure_commit_or_abort)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_function_span fs = { .pid = 1, .tid = 2, .name = "f", .address = 0x401000 };
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };
	int saved = dup(STDOUT_FILENO), fds[2], ret = 0;

	/* a reader that is gone: the flush fails, and so does every span after */
	cr_assert_eq(pipe(fds), 0);
	dup2(fds[1], STDOUT_FILENO);
	close(fds[1]);
	close(fds[0]);
	cr_assert_eq(rv_trace_writer_open(&w, "-", &err), 0, "%s", err.message);
	for (uint64_t k = 0; k < 100000 && ret == 0; k++) {
		fs.begin_ns = fs.end_ns = k;
		ret = rv_trace_writer_function_span(w, &fs, &err);
	}
	dup2(saved, STDOUT_FILENO);
	cr_assert_eq(ret, -EPIPE, "%d", ret);
	for (int k = 0; k < 3; k++) {
		err = (struct rv_error){ 0 };
		cr_assert_eq(rv_trace_writer_function_span(w, &fs, &err), -EPIPE);
		cr_assert(strstr(err.message, "standard output"), "%s", err.message);
	}
	rv_trace_writer_free(w);

	for (int abort = 0; abort < 2; abort++) {
		w = open_writer(path);
		fs.begin_ns = fs.end_ns = 0;
		for (int k = 0; k < 3; k++)
			cr_assert_eq(rv_trace_writer_function_span(w, &fs, &err), 0, "%s",
				     err.message);
		if (abort)
			rv_trace_writer_abort(w);
		else
			commit(w);
		err = (struct rv_error){ 0 };
		cr_assert_eq(rv_trace_writer_function_span(w, &fs, &err), -EINVAL);
		cr_assert(strstr(err.message, abort ? "abandoned" : "written"), "%s", err.message);
		rv_trace_writer_free(w);
	}
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, keeps_names_right_beyond_32767_strings)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	enum { NR_NAMES = 40000 };
	static const unsigned again[] = { 0, 1, 32766, 32767, 39999, 20000, 0 };
	size_t nr_again = sizeof(again) / sizeof(again[0]);
	struct fxt_trace *t;
	char name[32];

	name_thread(w, 3, 4, "busy");
	for (unsigned i = 0; i < NR_NAMES; i++) {
		snprintf(name, sizeof(name), "function_%05u", i);
		span(w, 3, 4, name, 10ull * i, 10ull * i + 5);
	}
	/* names interned long ago, whose table slots may have been reused */
	for (size_t k = 0; k < nr_again; k++) {
		snprintf(name, sizeof(name), "function_%05u", again[k]);
		span(w, 3, 4, name, 10ull * (NR_NAMES + k), 10ull * (NR_NAMES + k) + 5);
	}
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, NR_NAMES + nr_again);
	cr_assert(t->stats.string_redefinitions > 0 || t->stats.inline_string_refs > 0,
		  "40000 names cannot fit 32767 string slots without reuse or inline strings");
	for (size_t k = 0; k < t->nr_spans; k++) {
		const struct fxt_span *s = &t->spans[k];
		unsigned expected = k < NR_NAMES ? (unsigned)k : again[k - NR_NAMES];

		snprintf(name, sizeof(name), "function_%05u", expected);
		cr_assert_str_eq(s->name, name, "span %zu at offset %zu", k, s->offset);
		cr_assert(s->pid == 3 && s->tid == 4);
		cr_assert_eq(s->begin_ns, 10ull * k);
	}
	cr_assert_str_eq(fxt_thread_name(t, 3, 4), "busy");
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

static void category_span(struct rv_trace_writer *w, const char *category, const char *name,
			  uint64_t begin, uint64_t end, const struct rv_arg *args, size_t nr_args)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_category_span(w, 1, 2, category, name, begin, end, args,
						   nr_args, &err),
		     0, "span %s: %s", name, err.message);
}

/* Categories by reference, inline (once the string table is full), with
 * and without arguments; none is the empty string. */
Test(fxt_writer, writes_span_categories)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg arg = { .name = "nr", .kind = RV_ARG_UINT, .u = 7 };
	enum { NR_NAMES = 33000 };
	struct fxt_trace *t;
	char name[32];

	name_thread(w, 1, 2, "t");
	category_span(w, RV_TRACE_CATEGORY_KERNEL, "entry_SYSCALL_64", 10, 20, NULL, 0);
	category_span(w, "kernel", "[syscall read]", 30, 40, &arg, 1);
	category_span(w, NULL, "main", 50, 60, NULL, 0);
	category_span(w, "", "work", 70, 80, &arg, 1);
	span(w, 1, 2, "plain", 90, 100);
	for (unsigned i = 0; i < NR_NAMES; i++) {
		snprintf(name, sizeof(name), "function_%05u", i);
		span(w, 1, 2, name, 1000ull + 10 * i, 1000ull + 10 * i + 5);
	}
	/* a table full by now: these strings go inline */
	category_span(w, "late category", "late name", 400000, 400010, NULL, 0);
	category_span(w, "late category 2", "late name 2", 400020, 400030, &arg, 1);
	category_span(w, "kernel", "late kernel", 400040, 400050, NULL, 0);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, 5 + NR_NAMES + 3);
	cr_assert_gt(t->stats.inline_string_refs, 0, "the table never filled");
	cr_assert_str_eq(trace_span(t, "entry_SYSCALL_64", 0)->category, "kernel");
	cr_assert_str_eq(trace_span(t, "[syscall read]", 0)->category, "kernel");
	cr_assert_eq(trace_span(t, "[syscall read]", 0)->nr_args, 1);
	cr_assert_str_eq(trace_span(t, "main", 0)->category, "");
	cr_assert_str_eq(trace_span(t, "work", 0)->category, "");
	cr_assert_str_eq(trace_span(t, "plain", 0)->category, "");
	cr_assert_str_eq(trace_span(t, "function_00000", 0)->category, "");
	cr_assert_str_eq(trace_span(t, "late name", 0)->category, "late category");
	cr_assert_str_eq(trace_span(t, "late name 2", 0)->category, "late category 2");
	cr_assert_eq(trace_span(t, "late name 2", 0)->args[0].u, 7);
	cr_assert_str_eq(trace_span(t, "late kernel", 0)->category, "kernel");
	cr_assert_eq(trace_span(t, "late kernel", 0)->begin_ns, 400040);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, writes_gzip_for_fxt_gz)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt.gz");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_trace_writer_stats stats;
	struct fxt_trace *t;
	struct fxt_buf b;

	name_thread(w, 1, 2, "t");
	for (unsigned i = 0; i < 5000; i++)
		span(w, 1, 2, i % 2 ? "odd" : "even", 10ull * i, 10ull * i + 5);
	commit(w);
	rv_trace_writer_stats(w, &stats);
	rv_trace_writer_free(w);

	b = slurp(path);
	cr_assert(b.len > 2 && b.bytes[0] == 0x1f && b.bytes[1] == 0x8b, "not a gzip file");
	t = read_back(path);
	cr_assert(t->compressed);
	cr_assert_eq(stats.bytes, t->size, "stats.bytes %" PRIu64 " but %zu bytes of FXT",
		     stats.bytes, t->size);
	cr_assert_lt(b.len, t->size / 4, "5000 repetitive spans compress to %zu of %zu bytes",
		     b.len, t->size);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "odd"), 2500);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "even"), 2500);
	fxt_trace_free(t);
	free(b.bytes);
	free(path);
	free_temp_dir(dir);
}

/* .gz and .zst: what the file holds is compressed, the reader gets the
 * spans back, and stats.file_bytes is the file's size where stats.bytes
 * is the FXT's. */
Test(fxt_writer, writes_zstd_for_fxt_zst_and_counts_the_file_bytes)
{
	static const char *const names[] = { "t.fxt.zst", "t.fxt.gz", "t.fxt" };
	char *dir = new_temp_dir("rv-fxt-writer");

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *path = path_join(dir, names[i]);
		struct rv_trace_writer *w = open_writer(path);
		struct rv_trace_writer_stats stats;
		struct fxt_trace *t;
		struct fxt_buf b;

		name_thread(w, 1, 2, "t");
		for (unsigned k = 0; k < 5000; k++)
			span(w, 1, 2, k % 2 ? "odd" : "even", 10ull * k, 10ull * k + 5);
		commit(w);
		rv_trace_writer_stats(w, &stats);
		rv_trace_writer_free(w);

		b = slurp(path);
		cr_assert_eq(stats.file_bytes, b.len, "%s: file_bytes %" PRIu64 ", file %zu",
			     names[i], stats.file_bytes, b.len);
		t = read_back(path);
		cr_assert_eq(stats.bytes, t->size, "%s", names[i]);
		if (i == 0)
			cr_assert(b.len > 4 && !memcmp(b.bytes, "\x28\xb5\x2f\xfd", 4),
				  "not a zstd frame");
		if (i < 2)
			cr_assert_lt(b.len, t->size / 4, "%s: %zu of %zu bytes", names[i], b.len,
				     t->size);
		else
			cr_assert_eq(b.len, t->size);
		cr_assert_eq(t->compressed, i < 2);
		cr_assert_eq(fxt_count_spans(t, 1, 2, "odd"), 2500);
		fxt_trace_free(t);
		free(b.bytes);
		free(path);
	}
	free_temp_dir(dir);
}

/* "-": standard output (here a pipe), whole; refused read-only; a reader
 * gone is an error, not the end of the process by SIGPIPE. */
Test(fxt_writer, writes_to_standard_output)
{
	struct rv_trace_writer *w = NULL;
	struct rv_trace_writer_stats stats;
	struct rv_error err = { 0 };
	struct fxt_trace *t = NULL;
	int saved = dup(STDOUT_FILENO), fds[2], ret;
	static unsigned char got[65536];
	char msg[256];
	ssize_t n;

	cr_assert_eq(pipe(fds), 0);
	dup2(fds[1], STDOUT_FILENO);
	close(fds[1]);
	cr_assert_eq(rv_trace_writer_open(&w, "-", &err), 0, "%s", err.message);
	name_thread(w, 1, 2, "t");
	span(w, 1, 2, "piped", 10, 20);
	commit(w);
	rv_trace_writer_stats(w, &stats);
	cr_assert_null(rv_trace_writer_temp_path(w));
	rv_trace_writer_free(w);
	dup2(saved, STDOUT_FILENO);
	n = read(fds[0], got, sizeof(got));
	cr_assert_gt(n, 0);
	cr_assert_eq((uint64_t)n, stats.file_bytes);
	cr_assert_eq(fxt_read_buffer(got, (size_t)n, &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "piped"), 1);
	fxt_trace_free(t);

	/* the reader is gone: EPIPE, reported; this process lives on */
	cr_assert_eq(pipe(fds), 0);
	dup2(fds[1], STDOUT_FILENO);
	close(fds[1]);
	close(fds[0]);
	w = NULL;
	cr_assert_eq(rv_trace_writer_open(&w, "-", &err), 0, "%s", err.message);
	span(w, 1, 2, "lost", 10, 20);
	ret = rv_trace_writer_commit(w, &err);
	rv_trace_writer_free(w);
	dup2(saved, STDOUT_FILENO);
	cr_assert_eq(ret, -EPIPE);
	cr_assert(strstr(err.message, "standard output") && strstr(err.message, "ended"), "%s",
		  err.message);

	/* read-only */
	dup2(open("/dev/null", O_RDONLY | O_CLOEXEC), STDOUT_FILENO);
	w = NULL;
	ret = rv_trace_writer_open(&w, "-", &err);
	dup2(saved, STDOUT_FILENO);
	cr_assert_lt(ret, 0);
	cr_assert(strstr(err.message, "reading only"), "%s", err.message);
	cr_assert_null(w);

	/* a terminal: the binary trace would land on the screen */
	{
		int master = posix_openpt(O_RDWR | O_NOCTTY), slave;

		cr_assert_geq(master, 0);
		cr_assert_eq(grantpt(master), 0);
		cr_assert_eq(unlockpt(master), 0);
		slave = open(ptsname(master), O_RDWR | O_NOCTTY);
		cr_assert_geq(slave, 0);
		dup2(slave, STDOUT_FILENO);
		w = NULL;
		ret = rv_trace_writer_open(&w, "-", &err);
		dup2(saved, STDOUT_FILENO);
		close(slave);
		close(master);
		cr_assert_lt(ret, 0);
		cr_assert(strstr(err.message, "terminal") && strstr(err.message, "-o FILE"), "%s",
			  err.message);
		cr_assert_null(w);
	}
	close(saved);
}

Test(fxt_writer, leaves_nothing_at_the_path_before_commit_or_after_abort)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct fxt_trace *t;

	cr_assert_str_eq(rv_trace_writer_path(w), path);
	span(w, 1, 2, "f", 0, 10);
	cr_assert(!exists(path), "the output path exists before commit");
	commit(w);
	cr_assert(exists(path));
	cr_assert_eq(dir_entries(dir), 1, "a temporary file was left beside the trace");
	rv_trace_writer_free(w);
	t = read_back(path);
	fxt_trace_free(t);
	unlink(path);

	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	rv_trace_writer_abort(w);
	rv_trace_writer_free(w);
	cr_assert(!exists(path), "abort left a file at the output path");
	cr_assert_eq(dir_entries(dir), 0, "abort left a temporary file");

	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	rv_trace_writer_free(w); /* neither committed nor aborted */
	cr_assert(!exists(path));
	cr_assert_eq(dir_entries(dir), 0, "free without commit left a temporary file");
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, replaces_an_existing_file_only_on_commit)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w;
	struct fxt_trace *t;
	struct fxt_buf b;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs("old contents", f);
	fclose(f);
	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	rv_trace_writer_abort(w);
	rv_trace_writer_free(w);
	b = slurp(path);
	cr_assert(b.len == 12 && memcmp(b.bytes, "old contents", 12) == 0,
		  "abort damaged the existing file");
	free(b.bytes);
	cr_assert_eq(dir_entries(dir), 1);

	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	b = slurp(path);
	cr_assert_eq(b.len, 12, "the existing file changed before commit");
	free(b.bytes);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(t->nr_spans, 1);
	fxt_trace_free(t);
	cr_assert_eq(dir_entries(dir), 1, "the replaced file or the temporary one was left");

	/* and again, over a trace it wrote (an exchange, then the old one
	 * removed) */
	w = open_writer(path);
	span(w, 1, 2, "g", 0, 10);
	span(w, 1, 2, "g", 20, 30);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "g"), 2);
	cr_assert_eq(fxt_count_spans(t, 1, 2, "f"), 0);
	fxt_trace_free(t);
	cr_assert_eq(dir_entries(dir), 1, "the replaced trace was left");
	free(path);
	free_temp_dir(dir);
}

/* Commit replaces what rename(2) replaces, and only that: another name of
 * the old file keeps it, a symbolic link is replaced (not what it points
 * to), a directory (made after open, which refuses one) is refused and
 * left as it was. */
Test(fxt_writer, commit_replaces_as_rename_does)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt"),
	     *other = path_join(dir, "other"), *target = path_join(dir, "target"),
	     *inside = path_join(path, "kept");
	struct rv_trace_writer *w;
	struct rv_error err = { 0 };
	struct fxt_trace *t;
	struct fxt_buf b;
	struct stat st;
	FILE *f = fopen(path, "w");
	int ret;

	/* a file with a second name */
	cr_assert_not_null(f);
	fputs("old contents", f);
	fclose(f);
	cr_assert_eq(link(path, other), 0, "%s", strerror(errno));
	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(t->nr_spans, 1);
	fxt_trace_free(t);
	b = slurp(other);
	cr_assert(b.len == 12 && memcmp(b.bytes, "old contents", 12) == 0,
		  "the old file's other name lost it");
	free(b.bytes);
	cr_assert_eq(dir_entries(dir), 2);
	unlink(other);
	unlink(path);

	/* a symbolic link */
	f = fopen(target, "w");
	cr_assert_not_null(f);
	fputs("target", f);
	fclose(f);
	cr_assert_eq(symlink("target", path), 0, "%s", strerror(errno));
	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	commit(w);
	rv_trace_writer_free(w);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISREG(st.st_mode), "the link was not replaced by the trace");
	b = slurp(target);
	cr_assert(b.len == 6 && memcmp(b.bytes, "target", 6) == 0, "the link's target changed");
	free(b.bytes);
	cr_assert_eq(dir_entries(dir), 2);
	unlink(target);
	unlink(path);

	/* a directory, made there after open refused one */
	w = open_writer(path);
	span(w, 1, 2, "f", 0, 10);
	cr_assert_eq(mkdir(path, 0700), 0);
	f = fopen(inside, "w");
	cr_assert_not_null(f);
	fclose(f);
	ret = rv_trace_writer_commit(w, &err);
	rv_trace_writer_free(w);
	cr_assert_lt(ret, 0);
	cr_assert(strstr(err.message, "cannot put the trace in place"), "%s", err.message);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISDIR(st.st_mode) && exists(inside), "the directory was moved or changed");
	cr_assert_eq(dir_entries(dir), 1, "the temporary file was left");
	unlink(inside);
	rmdir(path);
	free(inside);
	free(target);
	free(other);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, fails_at_open_in_an_unwritable_place)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *file = path_join(dir, "plain"),
	     *under_file = path_join(file, "t.fxt");
	static const char *const paths[] = {
		"/nonexistent-rearview-dir/t.fxt",
		"/proc/rearview-test.fxt", /* not writable even by root */
	};
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };
	FILE *f = fopen(file, "w");

	cr_assert_not_null(f);
	fclose(f);
	for (size_t i = 0; i < 2; i++) {
		w = NULL;
		memset(&err, 0, sizeof(err));
		cr_assert_lt(rv_trace_writer_open(&w, paths[i], &err), 0, "open %s succeeded",
			     paths[i]);
		cr_assert_neq(err.message[0], '\0', "no message for %s", paths[i]);
		if (w)
			rv_trace_writer_free(w);
	}
	w = NULL;
	memset(&err, 0, sizeof(err));
	cr_assert_lt(rv_trace_writer_open(&w, under_file, &err), 0);
	cr_assert_neq(err.message[0], '\0');
	if (w)
		rv_trace_writer_free(w);
	free(under_file);
	free(file);
	free_temp_dir(dir);
}

Test(fxt_writer, chooses_the_format_by_extension)
{
	static const struct {
		const char *path;
		int ok;
		enum rv_trace_format format;
		enum rv_trace_compression compression;
	} cases[] = {
		{ "trace.fxt", 1, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "dir.d/trace.fxt.gz", 1, RV_TRACE_FXT, RV_TRACE_GZIP },
		{ "trace.fxt.zst", 1, RV_TRACE_FXT, RV_TRACE_ZSTD },
		{ "trace.json", 1, RV_TRACE_JSON, RV_TRACE_PLAIN },
		{ "/tmp/x.json.gz", 1, RV_TRACE_JSON, RV_TRACE_GZIP },
		{ "/tmp/x.json.zst", 1, RV_TRACE_JSON, RV_TRACE_ZSTD },
		{ "-", 1, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace.txt", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace.gz", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace.zst", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace.fxt.bz2", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "trace.fxt.json.txt", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "fxt", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
		{ "--", 0, RV_TRACE_FXT, RV_TRACE_PLAIN },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum rv_trace_format format = (enum rv_trace_format)99;
		enum rv_trace_compression compression = (enum rv_trace_compression)99;
		struct rv_error err = { 0 };
		int ret = rv_trace_format_from_path(cases[i].path, &format, &compression, &err);

		if (cases[i].ok) {
			cr_assert_eq(ret, 0, "%s: %s", cases[i].path, err.message);
			cr_assert_eq(format, cases[i].format, "%s", cases[i].path);
			cr_assert_eq(compression, cases[i].compression, "%s", cases[i].path);
		} else {
			cr_assert_lt(ret, 0, "%s was accepted", cases[i].path);
			cr_assert(strstr(err.message, ".fxt") && strstr(err.message, ".json") &&
					  strstr(err.message, ".zst"),
				  "message for %s does not name the accepted endings: %s",
				  cases[i].path, err.message);
		}
	}
}

Test(fxt_writer, refuses_an_unknown_extension_at_open_and_creates_nothing)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "trace.txt");
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };

	cr_assert_lt(rv_trace_writer_open(&w, path, &err), 0);
	cr_assert(strstr(err.message, ".fxt"), "%s", err.message);
	if (w)
		rv_trace_writer_free(w);
	cr_assert_eq(dir_entries(dir), 0);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, counts_what_it_wrote)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_trace_writer_stats stats;
	struct rv_error err = { 0 };

	span(w, 1, 2, "a", 0, 10);
	span(w, 1, 2, "b", 10, 20);
	span(w, 1, 2, "a", 20, 30);
	cr_assert_eq(rv_trace_writer_instant(w, 1, 2, "i", 5, NULL, 0, &err), 0);
	commit(w);
	rv_trace_writer_stats(w, &stats);
	cr_assert_eq(stats.spans, 3);
	cr_assert_eq(stats.instants, 1);
	cr_assert_eq(stats.bytes, (uint64_t)file_size(path));
	cr_assert_geq(stats.strings, 3, "a, b and i are distinct strings");
	cr_assert_eq(stats.inline_strings, 0);
	cr_assert_eq(stats.thread_evictions, 0);
	rv_trace_writer_free(w);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, interns_a_repeated_name_once)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct fxt_trace *t;

	for (unsigned i = 0; i < 100; i++)
		span(w, 1, 2, "repeated", 10ull * i, 10ull * i + 5);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(t->stats.inline_string_refs, 0, "names should go through the string table");
	cr_assert_leq(t->stats.records_by_type[2], 3, "%zu string records for one name",
		      t->stats.records_by_type[2]);
	cr_assert_eq(t->stats.inline_thread_refs, 0, "threads should go through the thread table");
	cr_assert_eq(t->stats.records_by_type[3], 1, "%zu thread records for one thread",
		     t->stats.records_by_type[3]);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, writes_a_parent_and_child_that_begin_together_in_order)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct fxt_trace *t;

	span(w, 1, 2, "parent", 100, 200);
	span(w, 1, 2, "child", 100, 150);
	span(w, 1, 2, "empty", 150, 150);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(fxt_find_span(t, 1, 2, "child", 0)->depth, 1);
	cr_assert_eq(fxt_find_span(t, 1, 2, "empty", 0)->depth, 1);
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, keeps_long_and_unusual_names)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	char *long_name = malloc(5001);
	struct fxt_trace *t;

	memset(long_name, 'x', 5000);
	long_name[5000] = '\0';
	span(w, 1, 2, long_name, 0, 10);
	span(w, 1, 2, "", 10, 20);
	span(w, 1, 2, "std::vector<int>::push_back(int const&) [clone .cold] \u2713", 20, 30);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(t->nr_spans, 3);
	cr_assert_str_eq(t->spans[0].name, long_name);
	cr_assert_str_eq(t->spans[1].name, "");
	cr_assert_str_eq(t->spans[2].name,
			 "std::vector<int>::push_back(int const&) [clone .cold] \u2713");
	fxt_trace_free(t);
	free(long_name);
	free(path);
	free_temp_dir(dir);
}

/* FXT strings are UTF-8 by specification; symbol names are arbitrary bytes. */
Test(fxt_writer, keeps_strings_valid_utf8_when_names_are_not)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_arg arg = { .name = "v\xc0\xaf", .kind = RV_ARG_STRING, .s = "x\xed\xa0\x80y" };
	struct rv_error err = { 0 };
	struct fxt_trace *t;

	name_thread(w, 1, 2,
		    "thr\x80"
		    "ead");
	span(w, 1, 2, "bad\xff\xfe utf8\xc3", 30, 40);
	cr_assert_eq(rv_trace_writer_span(w, 1, 2, "g", 50, 60, &arg, 1, &err), 0, "%s",
		     err.message);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_eq(strncmp(t->spans[0].name, "bad", 3), 0, "%s", t->spans[0].name);
	cr_assert_not_null(strstr(t->spans[0].name, " utf8"), "%s", t->spans[0].name);
	cr_assert_eq(t->spans[1].nr_args, 1);
	cr_assert_eq(t->spans[1].args[0].name[0], 'v');
	cr_assert_eq(t->spans[1].args[0].s[0], 'x');
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

/* Longer than the format's 32000-byte string limit: an error, or a valid
 * file; never a corrupt one. */
Test(fxt_writer, survives_a_name_longer_than_the_format_allows)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct rv_error err = { 0 };
	char *huge_name = malloc(40001);
	struct fxt_trace *t;
	int ret;

	memset(huge_name, 'y', 40000);
	huge_name[40000] = '\0';
	span(w, 1, 2, "before", 0, 10);
	ret = rv_trace_writer_span(w, 1, 2, huge_name, 40, 50, NULL, 0, &err);
	span(w, 1, 2, "after", 60, 70);
	commit(w);
	rv_trace_writer_free(w);

	t = read_back(path);
	cr_assert_str_eq(t->spans[0].name, "before");
	if (ret == 0) {
		cr_assert_eq(t->nr_spans, 3);
		cr_assert_eq(strncmp(t->spans[1].name, huge_name, 1000), 0);
	} else {
		cr_assert_neq(err.message[0], '\0');
		cr_assert_eq(t->nr_spans, 2);
	}
	cr_assert_str_eq(t->spans[t->nr_spans - 1].name, "after");
	fxt_trace_free(t);
	free(huge_name);
	free(path);
	free_temp_dir(dir);
}

Test(fxt_writer, attributes_spans_of_unnamed_threads)
{
	char *dir = new_temp_dir("rv-fxt-writer"), *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	struct fxt_trace *t;

	span(w, 4000000000u, 4000000001u, "f", 0, 10);
	span(w, 9, 9, "g", 0, 10);
	commit(w);
	rv_trace_writer_free(w);
	t = read_back(path);
	cr_assert_eq(fxt_count_spans(t, 4000000000u, 4000000001u, "f"), 1);
	cr_assert_eq(fxt_count_spans(t, 9, 9, "g"), 1);
	cr_assert_null(fxt_thread_name(t, 9, 9));
	fxt_trace_free(t);
	free(path);
	free_temp_dir(dir);
}

static uint64_t scramble(uint64_t k)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull;

	x = (x ^ x >> 29) * 0xbf58476d1ce4e5b9ull;
	return x ^ x >> 32;
}

/* Span k of writes_interned_spans_as_any_span's sequence: its name,
 * category and arguments (returns how many), chosen so that names come back
 * with arguments of another shape (more or fewer, a line that no longer
 * fits 32 bits, a string value at another address) as well as the same. */
static size_t mixed_span(uint64_t k, char **names, size_t nr_names, const char **name,
			 const char **category, struct rv_arg *args)
{
	static const char *const files[] = { "/src/a.c", "/src/b.c" };
	uint64_t x = scramble(k);
	int64_t line = (x >> 30) % 4 == 0 ? -((int64_t)1 << 33) : (int64_t)((x >> 28) % 2);
	const struct rv_arg all[] = {
		{ .name = "address", .kind = RV_ARG_POINTER, .u = 0x401000 + (x >> 10) % 64 },
		{ .name = "file", .kind = RV_ARG_STRING, .s = files[(x >> 36) % 2] },
		{ .name = "line", .kind = RV_ARG_INT, .i = line },
		{ .name = "count", .kind = RV_ARG_UINT, .u = (x >> 26) % 4 == 0 ? UINT64_MAX : 7 },
		{ .name = "inferred_start_time", .kind = RV_ARG_STRING, .s = "true" },
		{ .name = "ret", .kind = RV_ARG_INT, .i = -1 },
		{ .name = "extra", .kind = RV_ARG_STRING, .s = names[0] },
	};
	size_t nr = (x >> 40) % 8;

	*name = k < nr_names ? names[k] : names[(x >> 50) % 16];
	*category = (x >> 45) % 4 == 0 ? RV_TRACE_CATEGORY_KERNEL : NULL;
	memcpy(args, all, nr * sizeof(*args));
	return nr;
}

/* The interned call writes what the other writes, byte for byte, whatever
 * the spans' shapes, beyond the string table's 32767 entries (inline
 * names), with instants of a caller's buffer between them. */
Test(fxt_writer, writes_interned_spans_as_any_span)
{
	enum { NR_NAMES = 34000, NR_SPANS = 100000 };
	char *dir = new_temp_dir("rv-fxt-writer");
	char *paths[2] = { path_join(dir, "plain.fxt"), path_join(dir, "interned.fxt") };
	char **names = calloc(NR_NAMES, sizeof(*names));
	struct rv_trace_writer_stats stats[2];
	struct fxt_buf files[2];
	const char *name, *category;
	struct rv_arg args[8];
	struct fxt_trace *t;
	size_t nr;

	cr_assert_not_null(names);
	for (size_t i = 0; i < NR_NAMES; i++)
		cr_assert_gt(asprintf(&names[i], "function_%05zu", i), 0);
	for (int interned = 0; interned < 2; interned++) {
		struct rv_trace_writer *w = open_writer(paths[interned]);
		struct rv_error err = { 0 };
		char buffer[32];
		int ret;

		for (uint64_t k = 0; k < NR_SPANS; k++) {
			nr = mixed_span(k, names, NR_NAMES, &name, &category, args);
			if (interned)
				ret = rv_trace_writer_interned_span(w, 1, 2, category, name, 10 * k,
								    10 * k + 5, 0, nr ? args : NULL,
								    nr, &err);
			else
				ret = rv_trace_writer_nested_span(w, 1, 2, category, name, 10 * k,
								  10 * k + 5, 0, nr ? args : NULL,
								  nr, &err);
			cr_assert_eq(ret, 0, "span %" PRIu64 ": %s", k, err.message);
			if (k % 997)
				continue;
			snprintf(buffer, sizeof(buffer), "mark %" PRIu64, k % 3);
			cr_assert_eq(
				rv_trace_writer_instant(w, 1, 2, buffer, 10 * k + 5, NULL, 0, &err),
				0, "%s", err.message);
		}
		commit(w);
		rv_trace_writer_stats(w, &stats[interned]);
		rv_trace_writer_free(w);
		files[interned] = slurp(paths[interned]);
	}
	cr_assert_gt(stats[1].inline_strings, 0, "names beyond the table are inline");
	cr_assert_eq(stats[0].inline_strings, stats[1].inline_strings);
	cr_assert_eq(stats[0].strings, stats[1].strings);
	cr_assert_eq(files[0].len, files[1].len);
	cr_assert_eq(memcmp(files[0].bytes, files[1].bytes, files[0].len), 0,
		     "the interned spans' file differs");

	/* and it is what was given */
	t = read_back(paths[1]);
	cr_assert_eq(t->nr_spans, NR_SPANS);
	for (uint64_t k = 0; k < NR_SPANS; k += 7) {
		const struct fxt_span *s = &t->spans[k];

		nr = mixed_span(k, names, NR_NAMES, &name, &category, args);
		cr_assert_str_eq(s->name, name, "span %" PRIu64, k);
		cr_assert_str_eq(s->category, category ? category : "", "span %" PRIu64, k);
		cr_assert_eq(s->nr_args, nr, "span %" PRIu64, k);
		for (size_t i = 0; i < nr; i++) {
			const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, args[i].name);

			cr_assert_not_null(a, "span %" PRIu64 " has no %s", k, args[i].name);
			if (args[i].kind == RV_ARG_STRING)
				cr_assert_str_eq(a->s, args[i].s, "span %" PRIu64, k);
			else if (args[i].kind == RV_ARG_INT)
				cr_assert_eq(a->i, args[i].i, "span %" PRIu64 " %s", k, a->name);
			else
				cr_assert_eq(a->u, args[i].u, "span %" PRIu64 " %s", k, a->name);
		}
	}
	fxt_trace_free(t);
	for (int i = 0; i < 2; i++) {
		free(files[i].bytes);
		free(paths[i]);
	}
	for (size_t i = 0; i < NR_NAMES; i++)
		free(names[i]);
	free(names);
	free_temp_dir(dir);
}

/* Span k of writes_function_spans_as_any_span's sequence: a function's span
 * (returns true; without an address, its file NULL or not, a line that
 * changes, a negative one, a name that has no index)
 * or, for the same names, a span of another shape in args (returns false,
 * *nr set); on one of 300 threads, more than the thread table holds, half
 * of them in runs on one thread. */
static bool function_or_other(uint64_t k, char **names, size_t nr_names,
			      struct rv_function_span *fs, struct rv_arg *args, size_t *nr)
{
	static const char *const files[] = { "/src/a.c", "/src/b.c" };
	uint64_t x = scramble(k);
	/* any thread, or runs of 8 spans on one (the writer's quick way) */
	uint32_t thread = k % 64 < 32 ? (uint32_t)((x >> 8) % 300) : (uint32_t)(k / 8 % 300);

	*fs = (struct rv_function_span){
		.pid = 1 + thread / 100,
		.tid = 1000 + thread,
		.category = (x >> 45) % 4 == 0 ? RV_TRACE_CATEGORY_KERNEL : NULL,
		/* names again: 16 with an index, 16 inline (beyond the table) */
		.name = k < nr_names	? names[k]
			: (x >> 49) % 2 ? names[(x >> 50) % 16]
					: names[nr_names - 1 - (x >> 50) % 16],
		.begin_ns = 10 * k,
		.end_ns = 10 * k + 5,
		.address = (x >> 10) % 7 ? 0x401000 + (x >> 10) % 64 : 0,
		.file = (x >> 36) % 3 && (x >> 10) % 7 ? files[(x >> 36) % 2] : NULL,
		.line = (x >> 30) % 8 == 0 ? -7 : (int32_t)((x >> 28) % 3),
	};
	if ((x >> 40) % 5)
		return true;
	args[0] = (struct rv_arg){ .name = "address", .kind = RV_ARG_POINTER, .u = fs->address };
	args[1] = (struct rv_arg){ .name = "inferred_start_time",
				   .kind = RV_ARG_STRING,
				   .s = "true" };
	args[2] = (struct rv_arg){ .name = "line", .kind = RV_ARG_INT, .i = fs->line };
	*nr = 1 + (x >> 20) % 3;
	return false;
}

/* rv_trace_writer_function_span, and _function_span_of with the function's
 * handle, write what a span with its arguments (or none) written any other
 * way is, byte for byte (FXT and JSON), among spans of other shapes for the
 * same names, beyond the string table's 32767 entries and the thread
 * table's 255 threads. */
Test(fxt_writer, writes_function_spans_as_any_span)
{
	enum { NR_NAMES = 34000, NR_SPANS = 100000 };
	static const char *const endings[] = { ".fxt", ".json" };
	char *dir = new_temp_dir("rv-fxt-writer");
	char **names = calloc(NR_NAMES, sizeof(*names));

	cr_assert_not_null(names);
	for (size_t i = 0; i < NR_NAMES; i++)
		cr_assert_gt(asprintf(&names[i], "function_%05zu", i), 0);
	for (size_t e = 0; e < 2; e++) {
		struct rv_trace_writer_stats stats[3];
		struct fxt_buf files[3];
		char *paths[3];

		/* 0: as any span; 1: rv_trace_writer_function_span; 2: by handle */
		for (int function = 0; function < 3; function++) {
			struct rv_trace_writer *w;
			struct rv_error err = { 0 };

			cr_assert_gt(
				asprintf(&paths[function], "%s/%d%s", dir, function, endings[e]),
				0);
			w = open_writer(paths[function]);
			for (uint64_t k = 0; k < NR_SPANS; k++) {
				struct rv_function_span fs;
				struct rv_arg args[3];
				size_t nr = 0;
				int ret;

				if (!function_or_other(k, names, NR_NAMES, &fs, args, &nr)) {
					ret = rv_trace_writer_interned_span(
						w, fs.pid, fs.tid, fs.category, fs.name,
						fs.begin_ns, fs.end_ns, 0, args, nr, &err);
				} else if (function == 1) {
					ret = rv_trace_writer_function_span(w, &fs, &err);
				} else if (function == 2) {
					uint32_t handle = rv_trace_writer_function(
						w, fs.category, fs.name, fs.address, fs.file,
						fs.line);

					cr_assert_neq(handle, 0);
					ret = rv_trace_writer_function_span_of(
						w, handle, rv_trace_thread(fs.pid, fs.tid),
						fs.begin_ns, fs.end_ns, fs.depth, &err);
				} else {
					args[0] = (struct rv_arg){ .name = "address",
								   .kind = RV_ARG_POINTER,
								   .u = fs.address };
					args[1] = (struct rv_arg){ .name = "file",
								   .kind = RV_ARG_STRING,
								   .s = fs.file };
					args[2] = (struct rv_arg){ .name = "line",
								   .kind = RV_ARG_INT,
								   .i = fs.line };
					nr = !fs.address ? 0 : fs.file ? 3 : 1;
					ret = rv_trace_writer_nested_span(
						w, fs.pid, fs.tid, fs.category, fs.name,
						fs.begin_ns, fs.end_ns, 0, nr ? args : NULL, nr,
						&err);
				}
				cr_assert_eq(ret, 0, "span %" PRIu64 ": %s", k, err.message);
			}
			commit(w);
			rv_trace_writer_stats(w, &stats[function]);
			rv_trace_writer_free(w);
			files[function] = slurp(paths[function]);
		}
		for (int i = 0; i < 3; i++)
			cr_assert_eq(stats[i].spans, NR_SPANS);
		if (e == 0) {
			cr_assert_gt(stats[1].inline_strings, 0,
				     "names beyond the table are inline");
			cr_assert_gt(stats[1].thread_evictions, 0);
		}
		for (int i = 1; i < 3; i++) {
			cr_assert_eq(files[0].len, files[i].len, "%s, way %d", endings[e], i);
			cr_assert_eq(memcmp(files[0].bytes, files[i].bytes, files[0].len), 0,
				     "the function spans' %s file differs (way %d)", endings[e], i);
		}
		for (int i = 0; i < 3; i++) {
			free(files[i].bytes);
			free(paths[i]);
		}
	}
	for (size_t i = 0; i < NR_NAMES; i++)
		free(names[i]);
	free(names);
	free_temp_dir(dir);
}

/* A function's handle is the same for the same fields, another for any
 * field that differs; a writer that is not there gives none. */
Test(fxt_writer, function_handles_name_one_function_each)
{
	static const char name[] = "f", other_name[] = "g", file[] = "/src/a.c",
			  other_file[] = "/src/b.c";
	char *dir = new_temp_dir("rv-fxt-writer");
	char *path = path_join(dir, "t.fxt");
	struct rv_trace_writer *w = open_writer(path);
	uint32_t f = rv_trace_writer_function(w, NULL, name, 0x401000, file, 7);
	const uint32_t others[] = {
		rv_trace_writer_function(w, RV_TRACE_CATEGORY_KERNEL, name, 0x401000, file, 7),
		rv_trace_writer_function(w, NULL, other_name, 0x401000, file, 7),
		rv_trace_writer_function(w, NULL, name, 0x401001, file, 7),
		rv_trace_writer_function(w, NULL, name, 0x401000, other_file, 7),
		rv_trace_writer_function(w, NULL, name, 0x401000, file, 8),
	};

	cr_assert_neq(f, 0);
	/* more than the index's first slots, so that it grows */
	for (uint64_t k = 0; k < 1000; k++)
		cr_assert_neq(rv_trace_writer_function(w, NULL, name, 0x500000 + k, file, 1), 0);
	cr_assert_eq(rv_trace_writer_function(w, NULL, name, 0x401000, file, 7), f);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		cr_assert_neq(others[i], 0);
		cr_assert_neq(others[i], f, "field %zu", i);
		for (size_t j = 0; j < i; j++)
			cr_assert_neq(others[i], others[j], "fields %zu and %zu", i, j);
	}
	cr_assert_eq(rv_trace_writer_function(NULL, NULL, name, 0x401000, file, 7), 0);
	commit(w);
	rv_trace_writer_free(w);
	free(path);
	free_temp_dir(dir);
}
