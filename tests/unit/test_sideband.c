/* test_sideband.c: COMM, FORK, EXIT and LOST records into events, and records cut
 * short at every length, which are skipped without reading past their end
 * (each record is copied into a buffer of exactly its size, so that
 * AddressSanitizer sees any byte read beyond it). */
#include <criterion/criterion.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/sideband.h"

/* A record of `size` bytes (header included) with `body` after the header,
 * in a buffer of its own size. */
static struct perf_event_header *record(uint32_t type, uint16_t misc, const void *body,
					size_t body_size, size_t size)
{
	struct perf_event_header *h = malloc(size);
	size_t copy = size - sizeof(*h) < body_size ? size - sizeof(*h) : body_size;

	cr_assert_not_null(h);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)size;
	memcpy(h + 1, body, copy);
	return h;
}

static struct rv_symbolizer *symbolizer(void)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *s = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_symbolizer_new(&s, &so, &err), 0, "%s", err.message);
	return s;
}

Test(sideband, comm_names_a_thread)
{
	struct {
		uint32_t pid, tid;
		char name[16];
	} body = { 10, 11, "worker-thread" };
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_event ev = { 0 };
	struct rv_error err = { 0 };
	struct perf_event_header *h = record(PERF_RECORD_COMM, 0, &body, sizeof(body),
					     sizeof(struct perf_event_header) + sizeof(body));

	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_NAME);
	cr_assert(ev.pid == 10 && ev.tid == 11);
	cr_assert_str_eq(ev.thread.name, "worker-thread");
	free(h);
	rv_symbolizer_free(sb.symbolizer);
}

Test(sideband, a_long_comm_is_cut_to_the_name_buffer)
{
	char body[8 + 64];
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_event ev = { 0 };
	struct rv_error err = { 0 };
	struct perf_event_header *h;

	memset(body, 'x', sizeof(body)); /* no NUL at all */
	h = record(PERF_RECORD_COMM, 0, body, sizeof(body), sizeof(*h) + sizeof(body));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert_eq(strlen(ev.thread.name), sizeof(sb.comm) - 1);
	free(h);
	rv_symbolizer_free(sb.symbolizer);
}

Test(sideband, fork_starts_a_thread)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} body = { 20, 20, 22, 20, 777 };
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_event ev = { 0 };
	struct rv_error err = { 0 };
	struct perf_event_header *h;

	h = record(PERF_RECORD_FORK, 0, &body, sizeof(body), sizeof(*h) + sizeof(body));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_START);
	cr_assert(ev.pid == 20 && ev.tid == 22 && ev.time == 777);
	free(h);
	/* cut short: no event, nothing read past the end */
	for (size_t size = sizeof(*h); size < sizeof(*h) + sizeof(body); size++) {
		memset(&ev, 0, sizeof(ev));
		h = record(PERF_RECORD_FORK, 0, &body, sizeof(body), size);
		cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 0, "size %zu", size);
		free(h);
	}
	rv_symbolizer_free(sb.symbolizer);
}

Test(sideband, exit_and_lost_records)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} exit_body = { 20, 1, 21, 1, 123456 };
	uint64_t lost_body[2] = { 7 /* id */, 42 };
	uint64_t lost_samples = 5;
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_event ev = { 0 };
	struct rv_error err = { 0 };
	struct perf_event_header *h;

	h = record(PERF_RECORD_EXIT, 0, &exit_body, sizeof(exit_body),
		   sizeof(*h) + sizeof(exit_body));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_EXIT);
	cr_assert(ev.pid == 20 && ev.tid == 21 && ev.time == 123456);
	free(h);

	memset(&ev, 0, sizeof(ev));
	h = record(PERF_RECORD_LOST, 0, lost_body, sizeof(lost_body), sizeof(*h) + 16);
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert(ev.kind == RV_EVENT_LOST && ev.lost.count == 42);
	free(h);

	memset(&ev, 0, sizeof(ev));
	h = record(PERF_RECORD_LOST_SAMPLES, 0, &lost_samples, 8, sizeof(*h) + 8);
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	cr_assert(ev.kind == RV_EVENT_LOST && ev.lost.count == 5);
	free(h);
	cr_assert_eq(lost, 47, "the sum of what LOST and LOST_SAMPLES said");
	rv_symbolizer_free(sb.symbolizer);
}

/* Every type cut at every length short of its fields makes no event, and
 * reads nothing past the record. */
Test(sideband, records_cut_short_make_no_event)
{
	static const struct {
		uint32_t type;
		size_t need; /* body bytes the event needs */
	} types[] = {
		{ PERF_RECORD_COMM, 9 },  { PERF_RECORD_EXIT, 24 },
		{ PERF_RECORD_LOST, 16 }, { PERF_RECORD_LOST_SAMPLES, 8 },
		{ PERF_RECORD_MMAP, 64 }, { PERF_RECORD_MMAP2, 64 },
		{ PERF_RECORD_FORK, 8 },
	};
	uint8_t body[64];
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_error err = { 0 };

	memset(body, 0x41, sizeof(body));
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		for (size_t len = 0; len < types[i].need; len++) {
			struct rv_event ev = { 0 };
			struct perf_event_header *h =
				record(types[i].type, 0, body, sizeof(body),
				       sizeof(struct perf_event_header) + len);

			cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 0,
				     "type %u with %zu bytes of body", types[i].type, len);
			cr_assert_eq(ev.kind, 0, "no event from type %u with %zu bytes",
				     types[i].type, len);
			free(h);
		}
	}
	cr_assert_eq(lost, 0);
	rv_symbolizer_free(sb.symbolizer);
}

/* A forked process starts with its parent's mappings and name: one thread-name
 * event for its main thread; a new thread makes none. */
Test(sideband, fork_gives_a_child_its_parents_name_and_mappings)
{
	struct {
		uint32_t pid, tid;
		char name[16];
	} comm = { 30, 30, "parent-name" };
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} fork_body = { 31, 30, 31, 30, 99 }, thread_body = { 30, 30, 32, 30, 100 };
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t records = 0, lost = 0;
	struct rv_sideband sb = { .symbolizer = symbolizer(), .records = &records, .lost = &lost };
	struct rv_event ev = { 0 };
	struct rv_error err = { 0 };
	struct rv_symbol sym;
	struct perf_event_header *h;

	cr_assert_gt(len, 0);
	exe[len] = '\0';
	cr_assert_eq(
		rv_symbolizer_add_mapping(sb.symbolizer, 30, 0x400000, 0x1000, 0, true, exe, &err),
		0, "%s", err.message);
	h = record(PERF_RECORD_COMM, 0, &comm, sizeof(comm), sizeof(*h) + sizeof(comm));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1);
	free(h);

	memset(&ev, 0, sizeof(ev));
	h = record(PERF_RECORD_FORK, 0, &fork_body, sizeof(fork_body),
		   sizeof(*h) + sizeof(fork_body));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1, "%s", err.message);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_NAME);
	cr_assert(ev.pid == 31 && ev.tid == 31);
	cr_assert_str_eq(ev.thread.name, "parent-name");
	free(h);
	rv_symbolizer_lookup(sb.symbolizer, 31, 0x400010, &sym);
	cr_assert_not_null(strstr(sym.module, "unit-tests"),
			   "the child maps its parent's files: %s", sym.module);

	memset(&ev, 0, sizeof(ev));
	h = record(PERF_RECORD_FORK, 0, &thread_body, sizeof(thread_body),
		   sizeof(*h) + sizeof(thread_body));
	cr_assert_eq(rv_sideband_record(&sb, h, &ev, &err), 1, "%s", err.message);
	cr_assert_eq(ev.kind, RV_EVENT_THREAD_START, "a thread starts; no mappings of its own");
	cr_assert(ev.pid == 30 && ev.tid == 32);
	free(h);
	rv_symbolizer_free(sb.symbolizer);
}
