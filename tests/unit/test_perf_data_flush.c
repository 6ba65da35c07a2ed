/* test_perf_data_flush.c: a perf.data flushed as it grows. After every
 * flush the file reads back with every record so far; a recorder killed at
 * any byte of a flush's writes (replayed here from the writer's own writes,
 * cut at every byte) leaves a file that reads back at least the previous
 * flush's records, each one exact, and says it was cut; perf itself reads a
 * flushed capture. Not here: the recorders that flush (tests/e2e/test_killed.c).
 */
#include <criterion/criterion.h>

#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "test_env.h"
#include "test_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A flush's chunk, small so that records cross it often. */
#define CHUNK_BYTES 8192

/* ---- records: COMM records whose tid counts them ---- */

struct comm_record {
	struct perf_event_header header;
	uint32_t pid, tid;
	char comm[16];
};

static struct comm_record comm_record(uint32_t n)
{
	struct comm_record r;

	memset(&r, 0, sizeof(r));
	r.header.type = PERF_RECORD_COMM;
	r.header.size = sizeof(r);
	r.pid = 1000;
	r.tid = n;
	snprintf(r.comm, sizeof(r.comm), "thread-%u", n % 100000);
	return r;
}

/* An AUXTRACE record with `size` bytes of trace, each byte its offset's
 * low byte xor n: larger than a chunk, it makes the writer make room. */
struct aux_record {
	struct perf_event_header header;
	uint64_t size, offset, reference;
	uint32_t idx, tid, cpu, reserved;
};

static void write_aux(struct rv_perf_writer *w, uint32_t n, uint64_t size)
{
	struct aux_record r;
	uint8_t *trace = malloc(size);
	struct rv_error err = { 0 };

	cr_assert_not_null(trace);
	for (uint64_t i = 0; i < size; i++)
		trace[i] = (uint8_t)(i ^ n);
	memset(&r, 0, sizeof(r));
	r.header.type = RV_PERF_RECORD_AUXTRACE;
	r.header.size = sizeof(r);
	r.size = (size + 7) / 8 * 8;
	r.tid = n;
	cr_assert_eq(rv_perf_writer_write_payload(w, &r.header, trace, size, &err), 0, "%s",
		     err.message);
	free(trace);
}

/* Reads records from a reader: each must be the next expected one (a COMM
 * of tid n, an AUXTRACE of tid n, or padding between flushes); returns how
 * many were, and the result of the last rv_perf_reader_next. */
static size_t read_back(struct rv_perf_reader *r, const uint32_t *aux_sizes, int *last,
			struct rv_error *err)
{
	struct rv_perf_record rec;
	size_t n = 0;

	while ((*last = rv_perf_reader_next(r, &rec, err)) == 1) {
		if (rec.header->type == RV_PERF_RECORD_FINISHED_ROUND)
			continue;
		if (aux_sizes && aux_sizes[n]) {
			const struct aux_record *a = (const void *)rec.header;
			const uint8_t *trace = rec.payload;

			cr_assert_eq(rec.header->type, RV_PERF_RECORD_AUXTRACE, "record %zu", n);
			cr_assert_eq(a->tid, n);
			cr_assert_eq(rec.payload_size, (aux_sizes[n] + 7) / 8 * 8);
			for (uint64_t i = 0; i < aux_sizes[n]; i += 997)
				cr_assert_eq(trace[i], (uint8_t)(i ^ n), "record %zu byte %llu", n,
					     (unsigned long long)i);
		} else {
			struct comm_record want = comm_record((uint32_t)n);

			cr_assert_eq(rec.header->size, sizeof(want),
				     "record %zu: type %u size %u at %llu", n, rec.header->type,
				     rec.header->size, (unsigned long long)rec.file_offset);
			cr_assert_eq(memcmp(rec.header, &want, sizeof(want)), 0, "record %zu", n);
		}
		n++;
	}
	return n;
}

static void add_event(struct rv_perf_writer *w)
{
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_DUMMY,
					.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
					.sample_id_all = 1 };
	uint64_t id = 42;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "flushed-event", &id, 1, &err), 0, "%s",
		     err.message);
}

static struct rv_perf_writer *open_flushing(const char *path)
{
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	const char *argv[] = { "rearview", "run", "--full-execution" };
	struct rv_perf_meta meta = { .argc = 3, .argv = argv, .clockid = -1 };

	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_flush_as_it_grows(w, &meta, CHUNK_BYTES, 0, &err), 0, "%s",
		     err.message);
	return w;
}

Test(perf_data_flush, every_flush_reads_back_whole)
{
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct stat st;
	size_t written = 0;

	make_temp_dir(dir, sizeof(dir), "rv-flush");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	umask(022);
	w = open_flushing(path);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "a capture is private whatever the umask");
	add_event(w);
	for (int round = 0; round < 12; round++) {
		struct rv_perf_reader *r;
		struct rv_perf_flush_info info;
		int last;

		/* from one record to several chunks' worth between flushes */
		for (int i = 0; i < round * round * 7 + 1; i++) {
			struct comm_record c = comm_record((uint32_t)written++);

			cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s",
				     err.message);
		}
		cr_assert_eq(rv_perf_writer_flush(w, &err), 0, "%s", err.message);
		cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "after flush %d: %s", round,
			     err.message);
		cr_assert_eq(read_back(r, NULL, &last, &err), written, "after flush %d", round);
		cr_assert_lt(last, 0, "a capture not finished ends with why");
		cr_assert_not_null(strstr(err.message, "the capture was cut"), "%s", err.message);
		cr_assert(rv_perf_reader_flush_info(r, &info));
		cr_assert_geq(info.flushes, (uint64_t)round + 1);
		cr_assert_eq(info.data_bytes, rv_perf_writer_data_size(w));
		cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "flushed-event");
		cr_assert_eq(rv_perf_reader_cmdline(r, &(const char *const *){ NULL }), 3);
		rv_perf_reader_free(r);
	}
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	{
		struct rv_perf_reader *r;
		struct rv_perf_flush_info info;
		int last;
		uint64_t expected_end;

		cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
		cr_assert_eq(read_back(r, NULL, &last, &err), written);
		cr_assert_eq(last, 0, "a finished capture ends cleanly: %s", err.message);
		cr_assert_not(rv_perf_reader_flush_info(r, &info));
		/* finish packs what follows the data and cuts the file there */
		cr_assert_eq(stat(path, &st), 0);
		expected_end = (uint64_t)st.st_size;
		cr_assert_lt(expected_end, sizeof(struct pd_file_header) + written * 32 + 65536,
			     "the finished file keeps %llu bytes of gaps",
			     (unsigned long long)expected_end);
		rv_perf_reader_free(r);
	}
	remove_tree(dir);
}

/* ---- a flush cut at every byte ---- */

struct write_log {
	struct {
		uint64_t offset;
		uint8_t *data;
		size_t size;
	} * writes;
	size_t nr, cap, bytes;
};

static void log_write(void *ctx, uint64_t offset, const void *data, size_t size)
{
	struct write_log *l = ctx;

	if (l->nr == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->writes = realloc(l->writes, l->cap * sizeof(*l->writes));
		cr_assert_not_null(l->writes);
	}
	l->writes[l->nr].offset = offset;
	l->writes[l->nr].data = malloc(size);
	cr_assert_not_null(l->writes[l->nr].data);
	memcpy(l->writes[l->nr].data, data, size);
	l->writes[l->nr].size = size;
	l->nr++;
	l->bytes += size;
}

static void log_clear(struct write_log *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->writes[i].data);
	l->nr = 0;
	l->bytes = 0;
}

/* The file after the first `bytes` bytes of the log's writes, over base. */
static size_t replay(const struct write_log *l, const uint8_t *base, size_t base_size, size_t bytes,
		     uint8_t *out, size_t out_cap)
{
	size_t size = base_size;

	memcpy(out, base, base_size);
	for (size_t i = 0; i < l->nr && bytes; i++) {
		size_t n = l->writes[i].size < bytes ? l->writes[i].size : bytes;

		cr_assert_leq(l->writes[i].offset + n, out_cap);
		if (l->writes[i].offset > size)
			memset(out + size, 0, (size_t)l->writes[i].offset - size);
		memcpy(out + l->writes[i].offset, l->writes[i].data, n);
		if (l->writes[i].offset + n > size)
			size = (size_t)(l->writes[i].offset + n);
		bytes -= n;
	}
	return size;
}

/* Whether a SIGKILL can stop the writes after `bytes` of them: between two
 * writes, or inside one at a page boundary of the file (the kernel copies a
 * write page by page and looks for a fatal signal in between; within a page
 * a write is whole or not at all). */
static bool killable_at(const struct write_log *l, size_t bytes)
{
	size_t at = 0;

	for (size_t i = 0; i < l->nr; i++) {
		if (bytes == at)
			return true;
		if (bytes < at + l->writes[i].size)
			return (l->writes[i].offset + (bytes - at)) % 4096 == 0;
		at += l->writes[i].size;
	}
	return true;
}

/* Replays the log cut at every byte where a SIGKILL can cut it, over base:
 * each cut file reads back at least `before` records, exactly, and at most
 * `after`, and says it was cut when it holds fewer. */
static void check_every_cut(const struct write_log *l, const uint8_t *base, size_t base_size,
			    size_t before, size_t after, const uint32_t *aux_sizes)
{
	size_t cap = base_size;
	uint8_t *file;
	size_t cuts = 0;

	for (size_t i = 0; i < l->nr; i++)
		if (l->writes[i].offset + l->writes[i].size > cap)
			cap = (size_t)(l->writes[i].offset + l->writes[i].size);
	file = malloc(cap);
	cr_assert_not_null(file);
	for (size_t bytes = 0; bytes <= l->bytes; bytes++) {
		struct rv_perf_reader *r;
		struct rv_error err = { 0 };
		size_t size, n;
		int last;

		if (!killable_at(l, bytes))
			continue;
		size = replay(l, base, base_size, bytes, file, cap);
		cr_assert_eq(rv_perf_reader_open_buffer(&r, file, size, "cut", &err), 0,
			     "cut after %zu of %zu bytes written: %s", bytes, l->bytes,
			     err.message);
		n = read_back(r, aux_sizes, &last, &err);
		cr_assert_geq(n, before, "cut after %zu of %zu bytes: %zu records of %zu (%s)",
			      bytes, l->bytes, n, before, err.message);
		cr_assert_leq(n, after);
		if (n < after)
			cr_assert_lt(last, 0, "cut after %zu bytes: records lost without a word",
				     bytes);
		if (last < 0)
			cr_assert_not_null(strstr(err.message, "the capture was cut"),
					   "cut after %zu bytes: %s", bytes, err.message);
		rv_perf_reader_free(r);
		cuts++;
	}
	cr_assert_gt(cuts, 1);
	free(file);
}

Test(perf_data_flush, killed_at_every_byte_of_a_flush)
{
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct write_log log = { 0 };
	uint32_t aux_sizes[4096] = { 0 };
	uint8_t *base;
	size_t base_size, written = 0, flushed;

	make_temp_dir(dir, sizeof(dir), "rv-flush-cut");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	w = open_flushing(path);
	add_event(w);
	for (int i = 0; i < 40; i++) {
		struct comm_record c = comm_record((uint32_t)written++);

		cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s", err.message);
	}
	cr_assert_eq(rv_perf_writer_flush(w, &err), 0, "%s", err.message);

	/* Each phase: the file as a flush left it, then the writes of the
	 * next, cut everywhere. A few records (a chunk shorter than the old
	 * table, padded); many (flushes of full chunks on their own); a trace
	 * larger than a chunk (room made for it); attributes added with no
	 * record; and finish. */
	for (int phase = 0; phase < 5; phase++) {
		flushed = written;
		base = read_whole(path, &base_size);
		cr_assert_not_null(base);
		pd_writer_watch_writes(w, log_write, &log);
		if (phase == 0) {
			struct comm_record c = comm_record((uint32_t)written++);

			cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s",
				     err.message);
		} else if (phase == 1) {
			for (int i = 0; i < 700; i++) {
				struct comm_record c = comm_record((uint32_t)written++);

				cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s",
					     err.message);
			}
		} else if (phase == 2) {
			struct comm_record c = comm_record((uint32_t)written++);

			cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s",
				     err.message);
			aux_sizes[written] = 3 * CHUNK_BYTES + 5;
			write_aux(w, (uint32_t)written++, 3 * CHUNK_BYTES + 5);
			c = comm_record((uint32_t)written++);
			cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s",
				     err.message);
		} else if (phase == 3) {
			add_event(w);
		}
		if (phase < 4)
			cr_assert_eq(rv_perf_writer_flush(w, &err), 0, "%s", err.message);
		else
			cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
		pd_writer_watch_writes(w, NULL, NULL);
		cr_assert_gt(log.bytes, 0, "phase %d wrote nothing", phase);
		check_every_cut(&log, base, base_size, flushed, written, aux_sizes);
		log_clear(&log);
		free(base);
	}
	free(log.writes);
	rv_perf_writer_free(w);
	remove_tree(dir);
}

Test(perf_data_flush, perf_reads_a_flushed_capture)
{
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	char *out;
	int status;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-flush-perf");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	w = open_flushing(path);
	add_event(w);
	for (uint32_t i = 0; i < 3000; i++) {
		struct comm_record c = comm_record(i);

		cr_assert_eq(rv_perf_writer_write(w, &c.header, &err), 0, "%s", err.message);
	}
	cr_assert_eq(rv_perf_writer_flush(w, &err), 0, "%s", err.message);
	/* the file as a recorder killed now would leave it */
	out = run_command(&status, NULL, "perf report -i '%s' --header-only 2>&1", path);
	cr_assert_eq(status, 0, "perf report failed on a flushed capture:\n%s", out);
	cr_assert_not_null(strstr(out, "cmdline : rearview run --full-execution"), "%s", out);
	free(out);
	out = run_command(&status, NULL, "perf script -i '%s' --show-task-events 2>&1 | wc -l",
			  path);
	cr_assert_eq(status, 0, "perf script failed on a flushed capture:\n%s", out);
	cr_assert_geq(strtol(out, NULL, 10), 3000, "perf script shows %s lines", out);
	free(out);
	rv_perf_writer_free(w);
	remove_tree(dir);
}
