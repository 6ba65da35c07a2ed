/* test_perf_data.c: the perf.data module, written and read back, with Linux
 * perf as the independent oracle in both directions (perf reads what we
 * write; we read what perf records), and corrupt files that must give clean
 * errors. Not here: what the records mean for a trace (the decoder's tests).
 */
#include <criterion/criterion.h>

#include "capture/perf_data.h"
#include "perf_names.h"
#include "capture/perf_data_internal.h"
#include "test_env.h"
#include "test_files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifdef __x86_64__
#include <asm/perf_regs.h>
#endif

#define RECORD_FINISHED_ROUND 68
#define RECORD_AUXTRACE	      71

/* ---- building records ---- */

struct rec {
	uint64_t words[8192];
	size_t len;
};

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	return r;
}

static void rec_begin(struct rec *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header *h = (struct perf_event_header *)r->words;

	memset(r->words, 0, sizeof(r->words));
	h->type = type;
	h->misc = misc;
	r->len = sizeof(*h);
}

static void rec_put(struct rec *r, const void *p, size_t n)
{
	if (n == 0)
		return;
	cr_assert_leq(r->len + n, sizeof(r->words));
	memcpy((uint8_t *)r->words + r->len, p, n);
	r->len += n;
}

static void rec_u64(struct rec *r, uint64_t v)
{
	rec_put(r, &v, sizeof(v));
}

static void rec_u32x2(struct rec *r, uint32_t a, uint32_t b)
{
	rec_put(r, &a, sizeof(a));
	rec_put(r, &b, sizeof(b));
}

static void rec_string(struct rec *r, const char *s)
{
	rec_put(r, s, strlen(s) + 1);
	r->len = (r->len + 7) / 8 * 8;
}

static struct perf_event_header *rec_done(struct rec *r)
{
	struct perf_event_header *h = (struct perf_event_header *)r->words;

	r->len = (r->len + 7) / 8 * 8;
	h->size = (uint16_t)r->len;
	return h;
}

struct sid {
	uint32_t pid, tid, cpu;
	uint64_t time, id, stream_id;
};

/* The sample_id_all trailer, in the kernel's order. */
static void rec_sample_id(struct rec *r, uint64_t type, const struct sid *s)
{
	if (type & PERF_SAMPLE_TID)
		rec_u32x2(r, s->pid, s->tid);
	if (type & PERF_SAMPLE_TIME)
		rec_u64(r, s->time);
	if (type & PERF_SAMPLE_ID)
		rec_u64(r, s->id);
	if (type & PERF_SAMPLE_STREAM_ID)
		rec_u64(r, s->stream_id);
	if (type & PERF_SAMPLE_CPU)
		rec_u32x2(r, s->cpu, 0);
	if (type & PERF_SAMPLE_IDENTIFIER)
		rec_u64(r, s->id);
}

static const struct perf_event_header *build_comm(struct rec *r, uint64_t type, uint32_t pid,
						  uint32_t tid, const char *comm,
						  const struct sid *s)
{
	rec_begin(r, PERF_RECORD_COMM, 0);
	rec_u32x2(r, pid, tid);
	rec_string(r, comm);
	rec_sample_id(r, type, s);
	return rec_done(r);
}

static const struct perf_event_header *build_task(struct rec *r, uint32_t kind, uint64_t type,
						  uint32_t pid, uint32_t ppid, uint32_t tid,
						  uint32_t ptid, uint64_t time, const struct sid *s)
{
	rec_begin(r, kind, 0);
	rec_u32x2(r, pid, ppid);
	rec_u32x2(r, tid, ptid);
	rec_u64(r, time);
	rec_sample_id(r, type, s);
	return rec_done(r);
}

static const struct perf_event_header *build_mmap2_prot(struct rec *r, uint64_t type, uint32_t pid,
							uint32_t tid, uint64_t addr, uint64_t len,
							uint64_t pgoff, uint32_t prot,
							const char *file, const struct sid *s)
{
	rec_begin(r, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	rec_u32x2(r, pid, tid);
	rec_u64(r, addr);
	rec_u64(r, len);
	rec_u64(r, pgoff);
	rec_u32x2(r, 8, 1);    /* maj, min */
	rec_u64(r, 12345);     /* ino */
	rec_u64(r, 0);	       /* ino_generation */
	rec_u32x2(r, prot, 2); /* MAP_PRIVATE */
	rec_string(r, file);
	rec_sample_id(r, type, s);
	return rec_done(r);
}

static const struct perf_event_header *build_mmap2(struct rec *r, uint64_t type, uint32_t pid,
						   uint32_t tid, uint64_t addr, uint64_t len,
						   uint64_t pgoff, const char *file,
						   const struct sid *s)
{
	return build_mmap2_prot(r, type, pid, tid, addr, len, pgoff, 5 /* r-x */, file, s);
}

struct sample_spec {
	uint64_t ip, time, id, period;
	uint32_t pid, tid, cpu;
	uint64_t nr_callchain;
	const uint64_t *callchain;
	uint64_t regs_abi, nr_regs;
	const uint64_t *regs;
	uint64_t stack_size, dyn_size;
	const void *stack;
};

static const struct perf_event_header *build_sample(struct rec *r, uint64_t type,
						    const struct sample_spec *s)
{
	cr_assert_eq(type & ~(uint64_t)(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
					PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
					PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
					PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER),
		     0, "build_sample does not know every sample_type bit asked for");
	rec_begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	if (type & PERF_SAMPLE_IDENTIFIER)
		rec_u64(r, s->id);
	if (type & PERF_SAMPLE_IP)
		rec_u64(r, s->ip);
	if (type & PERF_SAMPLE_TID)
		rec_u32x2(r, s->pid, s->tid);
	if (type & PERF_SAMPLE_TIME)
		rec_u64(r, s->time);
	if (type & PERF_SAMPLE_ID)
		rec_u64(r, s->id);
	if (type & PERF_SAMPLE_CPU)
		rec_u32x2(r, s->cpu, 0);
	if (type & PERF_SAMPLE_PERIOD)
		rec_u64(r, s->period);
	if (type & PERF_SAMPLE_CALLCHAIN) {
		rec_u64(r, s->nr_callchain);
		rec_put(r, s->callchain, s->nr_callchain * 8);
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		rec_u64(r, s->regs_abi);
		if (s->regs_abi)
			rec_put(r, s->regs, s->nr_regs * 8);
	}
	if (type & PERF_SAMPLE_STACK_USER) {
		rec_u64(r, s->stack_size);
		if (s->stack_size) {
			rec_put(r, s->stack, s->stack_size);
			rec_u64(r, s->dyn_size);
		}
	}
	return rec_done(r);
}

/* ---- helpers ---- */

/* Compares our per-type record counts with the "Aggregated stats" that
 * `perf report -D` prints. */
static void check_counts_against_perf(const char *path, const long *counts, size_t nr_types)
{
	int status;
	char *out = run_command(&status, NULL, "perf report -D -i '%s' 2>/dev/null", path);
	const char *stats = strstr(out, "Aggregated stats:");
	long total = -1, ours = 0, matched = 0;
	char *line, *save = NULL;

	cr_assert_eq(status, 0, "perf report -D failed on %s", path);
	cr_assert_not_null(stats, "perf report -D printed no stats");
	for (size_t t = 0; t < nr_types; t++)
		ours += counts[t];
	line = strtok_r((char *)stats, "\n", &save); /* "Aggregated stats:" */
	while ((line = strtok_r(NULL, "\n", &save))) {
		char name[64];
		long n;
		size_t t;

		if (strstr(line, " stats:"))
			break; /* per-event stats follow */
		if (sscanf(line, " %63s events: %ld", name, &n) != 2)
			continue;
		if (strcmp(name, "TOTAL") == 0) {
			total = n;
			continue;
		}
		for (t = 0; t < nr_types; t++)
			if (perf_record_type_name((uint32_t)t) &&
			    !strcmp(perf_record_type_name((uint32_t)t), name))
				break;
		cr_assert_lt(t, nr_types, "perf counts %s records, which the test does not know",
			     name);
		cr_expect_eq(counts[t], n, "%s records: we read %ld, perf counted %ld", name,
			     counts[t], n);
		matched += n;
	}
	cr_assert_eq(total, ours, "perf counted %ld records in total, we read %ld", total, ours);
	cr_assert_eq(matched, ours, "per-type counts of perf add up to %ld, we read %ld", matched,
		     ours);
	free(out);
}

/* perf's complaints about a file's structure go to stderr. */
static void check_perf_quiet(const char *path, const char *perf_command)
{
	int status;
	char *err =
		run_command(&status, NULL, "perf %s -i '%s' 2>&1 >/dev/null", perf_command, path);
	static const char *const bad[] = { "arning",  "WARNING",    "rror",  "ERROR",
					   "ailed",   "nexpected",  "Can't", "corrupt",
					   "invalid", "unsupported" };

	cr_assert_eq(status, 0, "perf %s failed on %s:\n%s", perf_command, path, err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_null(strstr(err, bad[i]), "perf %s complains about %s:\n%s", perf_command,
			       path, err);
	free(err);
}

/* Reads every record, parsing samples and sample_id trailers; returns the
 * final status (0 at a clean end) and counts per type. */
static int walk_file(struct rv_perf_reader *r, long *counts, size_t nr_types, long *samples_ok,
		     struct rv_error *err)
{
	struct rv_perf_record rec;
	long iterations = 0;
	int ret;

	while ((ret = rv_perf_reader_next(r, &rec, err)) == 1) {
		cr_assert_lt(++iterations, 10000000, "the record walk does not end");
		cr_assert_geq(rec.header->size, 8);
		if (counts && rec.header->type < nr_types)
			counts[rec.header->type]++;
		if (rec.header->type == PERF_RECORD_SAMPLE) {
			struct rv_perf_sample s;
			struct rv_error serr = { 0 };

			if (rv_perf_reader_parse_sample(r, rec.header, &s, &serr) == 0) {
				if (samples_ok)
					(*samples_ok)++;
				for (uint64_t i = 0; i < s.nr_callchain; i++)
					(void)*(volatile const uint64_t *)&s.callchain[i];
				if (s.stack_user_size)
					(void)*(volatile const uint8_t *)&s
						.stack_user[s.stack_user_size - 1];
			} else {
				cr_assert_neq(serr.message[0], '\0');
			}
		} else {
			struct rv_perf_sample_id id;
			struct rv_error serr = { 0 };

			if (rv_perf_reader_parse_sample_id(r, rec.header, &id, &serr))
				cr_assert_neq(serr.message[0], '\0');
		}
		if (rec.payload_size)
			(void)*(volatile const uint8_t *)((const uint8_t *)rec.payload +
							  rec.payload_size - 1);
	}
	return ret;
}

/* ---- the round trip ---- */

#define RT_TYPE_A                                                                                  \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |    \
	 PERF_SAMPLE_STACK_USER)
#define RT_TYPE_B    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID)
#define RT_REGS_MASK ((1ULL << 6) | (1ULL << 7) | (1ULL << 8))

struct written {
	uint8_t *bytes[16];
	size_t nr;
	uint8_t payload[16];
};

static void keep(struct written *w, const struct perf_event_header *h)
{
	cr_assert_lt(w->nr, 16);
	w->bytes[w->nr] = malloc(h->size);
	cr_assert_not_null(w->bytes[w->nr]);
	memcpy(w->bytes[w->nr], h, h->size);
	w->nr++;
}

static void self_exe(char *path, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", path, size - 1);

	cr_assert_gt(n, 0);
	path[n] = '\0';
}

static void round_trip_attrs(struct perf_event_attr *a, struct perf_event_attr *b)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->sample_period = 100000;
	a->sample_type = RT_TYPE_A;
	a->sample_regs_user = RT_REGS_MASK;
	a->sample_stack_user = 64;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	memset(b, 0, sizeof(*b));
	b->type = PERF_TYPE_SOFTWARE;
	b->config = PERF_COUNT_SW_DUMMY;
	b->sample_period = 1;
	b->sample_type = RT_TYPE_B;
	b->sample_id_all = 1;
}

static const uint64_t rt_callchain_a[] = { PERF_CONTEXT_USER, 0x401234, 0x401100, 0x400f00 };
static const uint64_t rt_callchain_b[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000010ULL,
					   PERF_CONTEXT_USER, 0x401500 };
static const uint64_t rt_regs[] = { 0x7ffd0010, 0x7ffd0000, 0x401234 };
static const char *const rt_argv[] = { "rearview", "run", "--", "/bin/true" };

/* Writes the round-trip file at path and keeps a copy of every record. */
static uint64_t write_round_trip(const char *path, struct written *kept)
{
	static const uint64_t ids_a[] = { 101, 102 }, ids_b[] = { 201 };
	struct perf_event_attr a, b;
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct rec *r = rec_new();
	uint8_t stack[64];
	char exe[4096];
	uint64_t expected_size = 0;
	const struct perf_event_header *h;
	struct sid sid_a = { .pid = 100, .tid = 100, .cpu = 1, .time = 10, .id = 101 };
	struct sid sid_b = { .pid = 100, .tid = 100, .cpu = 0, .time = 20, .id = 201 };
	struct rv_perf_meta meta = {
		.hostname = "testhost",
		.argc = 4,
		.argv = rt_argv,
		.clockid = CLOCK_MONOTONIC,
		.sample_time_first_ns = 30,
		.sample_time_last_ns = 50,
	};
	struct sample_spec s1 = {
		.id = 101,
		.ip = 0x401234,
		.pid = 100,
		.tid = 100,
		.time = 30,
		.cpu = 1,
		.period = 100000,
		.nr_callchain = 4,
		.callchain = rt_callchain_a,
		.regs_abi = PERF_SAMPLE_REGS_ABI_64,
		.nr_regs = 3,
		.regs = rt_regs,
		.stack_size = 64,
		.dyn_size = 40,
		.stack = stack,
	};
	struct sample_spec s2 = {
		.id = 102,
		.ip = 0xffffffff81000010ULL,
		.pid = 100,
		.tid = 101,
		.time = 40,
		.cpu = 0,
		.period = 100001,
		.nr_callchain = 4,
		.callchain = rt_callchain_b,
		.regs_abi = PERF_SAMPLE_REGS_ABI_NONE,
		.stack_size = 0,
	};
	struct sample_spec s3 = { .id = 201, .pid = 100, .tid = 101, .time = 50 };

	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)(i * 7 + 1);
	self_exe(exe, sizeof(exe));
	round_trip_attrs(&a, &b);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &a, "cpu-clock", ids_a, 2, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &b, "dummy", ids_b, 1, &err), 0, "%s", err.message);

#define WRITE(hdr)                                                                                 \
	do {                                                                                       \
		h = (hdr);                                                                         \
		keep(kept, h);                                                                     \
		expected_size += h->size;                                                          \
		cr_assert_eq(rv_perf_writer_write(w, h, &err), 0, "%s", err.message);              \
	} while (0)

	WRITE(build_comm(r, RT_TYPE_A, 100, 100, "roundtrip", &sid_a));
	WRITE(build_mmap2(r, RT_TYPE_A, 100, 100, 0x400000, 0x10000, 0, exe, &sid_a));
	WRITE(build_task(r, PERF_RECORD_FORK, RT_TYPE_B, 100, 100, 101, 100, 20, &sid_b));
	WRITE(build_sample(r, RT_TYPE_A, &s1));
	WRITE(build_sample(r, RT_TYPE_A, &s2));
	WRITE(build_sample(r, RT_TYPE_B, &s3));

	/* An AUXTRACE record: 13 bytes of trace, padded to 16 in the file. */
	rec_begin(r, RECORD_AUXTRACE, 0);
	rec_u64(r, 16);	    /* size, padding included */
	rec_u64(r, 0x1000); /* offset */
	rec_u64(r, 0xabc);  /* reference */
	rec_u32x2(r, 0, 101);
	rec_u32x2(r, 1, 0);
	h = rec_done(r);
	keep(kept, h);
	for (int i = 0; i < 13; i++)
		kept->payload[i] = (uint8_t)(0xa0 + i);
	cr_assert_eq(rv_perf_writer_write_payload(w, h, kept->payload, 13, &err), 0, "%s",
		     err.message);
	expected_size += h->size + 16;

	sid_b.time = 60;
	WRITE(build_task(r, PERF_RECORD_EXIT, RT_TYPE_B, 100, 100, 101, 100, 60, &sid_b));
	rec_begin(r, RECORD_FINISHED_ROUND, 0);
	WRITE(rec_done(r));
#undef WRITE

	cr_assert_eq(rv_perf_writer_data_size(w), expected_size);
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	free(r);
	return expected_size;
}

static void free_written(struct written *kept)
{
	for (size_t i = 0; i < kept->nr; i++)
		free(kept->bytes[i]);
}

/* The build id readelf reports for a file, as bytes; 0 when it has none. */
static size_t readelf_build_id(const char *path, uint8_t *id)
{
	int status;
	char *out = run_command(&status, NULL, "readelf -n '%s' 2>/dev/null", path);
	const char *p = strstr(out, "Build ID: ");
	size_t n = 0;

	if (p) {
		p += strlen("Build ID: ");
		while (n < 20 && sscanf(p, "%2hhx", &id[n]) == 1) {
			n++;
			p += 2;
		}
	}
	free(out);
	return n;
}

Test(perf_data, round_trip_every_field)
{
	char dir[64], path[128], exe[4096];
	struct written kept = { 0 };
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	struct perf_event_attr a, b;
	const char *const *argv;
	struct utsname uts;
	uint64_t size;
	const uint64_t *times;
	size_t i = 0;
	int ret;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/rt.data", dir);
	write_round_trip(path, &kept);
	round_trip_attrs(&a, &b);
	a.size = b.size = sizeof(a);

	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
	cr_assert_eq(memcmp(&rv_perf_reader_attr(r, 0)->attr, &a, sizeof(a)), 0);
	cr_assert_eq(memcmp(&rv_perf_reader_attr(r, 1)->attr, &b, sizeof(b)), 0);
	cr_assert_null(rv_perf_reader_attr(r, 2));
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "cpu-clock");
	cr_assert_str_eq(rv_perf_reader_attr(r, 1)->name, "dummy");
	cr_assert_eq(rv_perf_reader_attr(r, 0)->nr_ids, 2);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->ids[0], 101);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->ids[1], 102);
	cr_assert_eq(rv_perf_reader_attr(r, 1)->nr_ids, 1);
	cr_assert_eq(rv_perf_reader_attr(r, 1)->ids[0], 201);
	cr_assert_eq(rv_perf_reader_attr_for_id(r, 102), rv_perf_reader_attr(r, 0));
	cr_assert_eq(rv_perf_reader_attr_for_id(r, 201), rv_perf_reader_attr(r, 1));
	cr_assert_null(rv_perf_reader_attr_for_id(r, 999));

	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		cr_assert_lt(i, kept.nr, "more records read than written");
		cr_assert_eq(rec.header->size, ((struct perf_event_header *)kept.bytes[i])->size);
		cr_assert_eq(memcmp(rec.header, kept.bytes[i], rec.header->size), 0,
			     "record %zu differs", i);
		if (rec.header->type == RECORD_AUXTRACE) {
			cr_assert_eq(rec.payload_size, 16);
			cr_assert_eq(memcmp(rec.payload, kept.payload, 13), 0);
			cr_assert_eq(((const uint8_t *)rec.payload)[13], 0);
			cr_assert_eq(((const uint8_t *)rec.payload)[15], 0);
		} else {
			cr_assert_null(rec.payload);
			cr_assert_eq(rec.payload_size, 0);
		}
		i++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(i, kept.nr);

	/* Samples, field by field. */
	{
		struct rv_perf_sample s;
		const struct perf_event_header *h1 = (const void *)kept.bytes[3];
		const struct perf_event_header *h2 = (const void *)kept.bytes[4];
		const struct perf_event_header *h3 = (const void *)kept.bytes[5];

		cr_assert_eq(rv_perf_reader_parse_sample(r, h1, &s, &err), 0, "%s", err.message);
		cr_assert_eq(s.attr, rv_perf_reader_attr(r, 0));
		cr_assert_eq(s.sample_type, RT_TYPE_A);
		cr_assert_eq(s.id, 101);
		cr_assert_eq(s.ip, 0x401234);
		cr_assert_eq(s.pid, 100);
		cr_assert_eq(s.tid, 100);
		cr_assert_eq(s.time, 30);
		cr_assert_eq(s.cpu, 1);
		cr_assert_eq(s.period, 100000);
		cr_assert_eq(s.nr_callchain, 4);
		cr_assert_eq(memcmp(s.callchain, rt_callchain_a, sizeof(rt_callchain_a)), 0);
		cr_assert_eq(s.regs_user_abi, PERF_SAMPLE_REGS_ABI_64);
		cr_assert_eq(s.regs_user_mask, RT_REGS_MASK);
		cr_assert_eq(memcmp(s.regs_user, rt_regs, sizeof(rt_regs)), 0);
		cr_assert_eq(s.stack_user_size, 40);
		for (int k = 0; k < 64; k++)
			cr_assert_eq(s.stack_user[k], (uint8_t)(k * 7 + 1));
		cr_assert_eq(s.raw_size, 0);
		cr_assert_null(s.aux);

		cr_assert_eq(rv_perf_reader_parse_sample(r, h2, &s, &err), 0, "%s", err.message);
		cr_assert_eq(s.id, 102);
		cr_assert_eq(s.attr, rv_perf_reader_attr(r, 0));
		cr_assert_eq(s.tid, 101);
		cr_assert_eq(s.period, 100001);
		cr_assert_eq(memcmp(s.callchain, rt_callchain_b, sizeof(rt_callchain_b)), 0);
		cr_assert_eq(s.regs_user_abi, 0);
		cr_assert_null(s.regs_user);
		cr_assert_eq(s.stack_user_size, 0);
		cr_assert_null(s.stack_user);

		cr_assert_eq(rv_perf_reader_parse_sample(r, h3, &s, &err), 0, "%s", err.message);
		cr_assert_eq(s.attr, rv_perf_reader_attr(r, 1));
		cr_assert_eq(s.sample_type, RT_TYPE_B);
		cr_assert_eq(s.id, 201);
		cr_assert_eq(s.ip, 0);
		cr_assert_eq(s.time, 50);
		cr_assert_eq(s.nr_callchain, 0);
	}

	/* sample_id trailers of the other records. */
	{
		struct rv_perf_sample_id id;

		cr_assert_eq(
			rv_perf_reader_parse_sample_id(r, (const void *)kept.bytes[0], &id, &err),
			0, "%s", err.message);
		cr_assert(id.valid);
		cr_assert_eq(id.pid, 100);
		cr_assert_eq(id.tid, 100);
		cr_assert_eq(id.time, 10);
		cr_assert_eq(id.cpu, 1);
		cr_assert_eq(id.id, 101);
		cr_assert_eq(
			rv_perf_reader_parse_sample_id(r, (const void *)kept.bytes[7], &id, &err),
			0, "%s", err.message);
		cr_assert(id.valid);
		cr_assert_eq(id.time, 60);
		cr_assert_eq(id.id, 201);
		cr_assert_eq(id.cpu, 0, "attr B records no cpu");
		/* perf's own records never carry a trailer */
		cr_assert_eq(
			rv_perf_reader_parse_sample_id(r, (const void *)kept.bytes[8], &id, &err),
			0);
		cr_assert_not(id.valid);
		cr_assert_lt(
			rv_perf_reader_parse_sample_id(r, (const void *)kept.bytes[3], &id, &err),
			0, "a sample has no trailer");
	}

	/* Features. */
	cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_HOSTNAME), "testhost");
	cr_assert_eq(uname(&uts), 0);
	cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_OSRELEASE), uts.release);
	cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_ARCH), uts.machine);
	cr_assert_not_null(strstr(rv_perf_reader_feature_string(r, RV_FEAT_VERSION), "rearview"));
	cr_assert_eq(rv_perf_reader_cmdline(r, &argv), 4);
	for (int k = 0; k < 4; k++)
		cr_assert_str_eq(argv[k], rt_argv[k]);
	cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_CLOCKID));
	cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_NRCPUS));
	cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_TOTAL_MEM));
	cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_EVENT_DESC));
	cr_assert(rv_perf_reader_has_feature(r, RV_FEAT_AUXTRACE));
	cr_assert_not(rv_perf_reader_has_feature(r, RV_FEAT_TRACING_DATA));
	cr_assert_null(rv_perf_reader_feature_string(r, RV_FEAT_TRACING_DATA));
	times = rv_perf_reader_feature_data(r, RV_FEAT_SAMPLE_TIME, &size);
	cr_assert_not_null(times);
	cr_assert_eq(size, 16);
	cr_assert_eq(times[0], 30);
	cr_assert_eq(times[1], 50);
	{
		const uint8_t *index = rv_perf_reader_feature_data(r, RV_FEAT_AUXTRACE, &size);
		uint64_t nr, offset, sz;

		cr_assert_eq(size, 24);
		memcpy(&nr, index, 8);
		memcpy(&offset, index + 8, 8);
		memcpy(&sz, index + 16, 8);
		cr_assert_eq(nr, 1);
		cr_assert_eq(sz, 48, "perf's index entry holds the record's own size");
		/* the index points at the AUXTRACE record */
		{
			size_t file_size;
			uint8_t *bytes = read_whole(path, &file_size);

			cr_assert_leq(offset + sz, file_size);
			cr_assert_eq(memcmp(bytes + offset, kept.bytes[6], 48), 0);
			free(bytes);
		}
	}

	/* HEADER_BUILD_ID names the mapped executable with readelf's build id. */
	{
		const uint8_t *table = rv_perf_reader_feature_data(r, RV_FEAT_BUILD_ID, &size);
		uint8_t expected[20];
		size_t expected_size;
		bool found = false;

		self_exe(exe, sizeof(exe));
		expected_size = readelf_build_id(exe, expected);
		cr_assert_gt(expected_size, 0, "the test binary has no build id");
		cr_assert_not_null(table);
		for (uint64_t pos = 0; pos + 36 <= size;) {
			uint16_t entry_size;

			memcpy(&entry_size, table + pos + 6, 2);
			cr_assert_geq(entry_size, 36);
			cr_assert_leq(pos + entry_size, size);
			if (strcmp((const char *)table + pos + 36, exe) == 0) {
				cr_assert_eq(table[pos + 32], expected_size);
				cr_assert_eq(memcmp(table + pos + 12, expected, expected_size), 0);
				found = true;
			}
			pos += entry_size;
		}
		cr_assert(found, "no build id entry for %s", exe);
	}

	rv_perf_reader_free(r);
	free_written(&kept);
	remove_tree(dir);
}

Test(perf_data, writer_rules)
{
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct rec *r = rec_new();
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE };
	struct stat st;
	struct perf_event_header *h;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/w.data", dir);
	umask(022);

	/* every capture is private: kernel data, and other processes' memory */
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	/* an unfinished file is removed */
	rv_perf_writer_free(w);
	cr_assert_neq(access(path, F_OK), 0);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	/* a file without events is no perf.data */
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), -EINVAL);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, NULL, NULL, 0, &err), 0, "%s", err.message);

	/* records must be 8-byte multiples */
	rec_begin(r, PERF_RECORD_COMM, 0);
	h = rec_done(r);
	h->size = 12;
	cr_assert_eq(rv_perf_writer_write(w, h, &err), -EINVAL);
	cr_assert_not_null(strstr(err.message, "multiple of 8"));
	h->size = 4;
	cr_assert_eq(rv_perf_writer_write(w, h, &err), -EINVAL);
	/* a payload's size field must count its padding */
	rec_begin(r, RECORD_AUXTRACE, 0);
	rec_u64(r, 13);
	rec_u64(r, 0);
	rec_u64(r, 0);
	rec_u64(r, 0);
	rec_u64(r, 0);
	h = rec_done(r);
	cr_assert_eq(rv_perf_writer_write_payload(w, h, "0123456789abc", 13, &err), -EINVAL);
	cr_assert_not_null(strstr(err.message, "16"), "%s", err.message);
	/* only AUXTRACE-like records carry payloads */
	rec_begin(r, PERF_RECORD_COMM, 0);
	rec_u64(r, 16);
	h = rec_done(r);
	cr_assert_eq(rv_perf_writer_write_payload(w, h, "0123456789abcdef", 16, &err), -EINVAL);
	cr_assert_eq(rv_perf_writer_data_size(w), 0, "rejected records were written");

	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	cr_assert_lt(rv_perf_writer_finish(w, NULL, &err), 0, "finishing twice");
	rec_begin(r, RECORD_FINISHED_ROUND, 0);
	cr_assert_lt(rv_perf_writer_write(w, rec_done(r), &err), 0, "writing after finish");
	rv_perf_writer_free(w);
	cr_assert_eq(access(path, F_OK), 0, "a finished file must stay");

	/* the unnamed software event got perf's name for it */
	{
		struct rv_perf_reader *rd;

		cr_assert_eq(rv_perf_reader_open(&rd, path, &err), 0, "%s", err.message);
		cr_assert_str_eq(rv_perf_reader_attr(rd, 0)->name, "cpu-clock");
		rv_perf_reader_free(rd);
	}
	free(r);
	remove_tree(dir);
}

Test(perf_data, large_stream_is_buffered_and_exact)
{
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_perf_reader *rd;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	struct rec *r = rec_new();
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME };
	static uint8_t big_payload[3 << 20];
	const long n = 200000;
	long seen = 0;
	int ret;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/big.data", dir);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", NULL, 0, &err), 0);
	for (long i = 0; i < n; i++) {
		struct sample_spec s = { .ip = 0x1000 + (uint64_t)i, .time = (uint64_t)i };

		cr_assert_eq(rv_perf_writer_write(w, build_sample(r, attr.sample_type, &s), &err),
			     0, "%s", err.message);
		if (i == n / 2) {
			/* a payload larger than the write buffer */
			rec_begin(r, RECORD_AUXTRACE, 0);
			rec_u64(r, sizeof(big_payload));
			rec_u64(r, 0);
			rec_u64(r, 0);
			rec_u64(r, 0);
			rec_u64(r, 0);
			for (size_t k = 0; k < sizeof(big_payload); k++)
				big_payload[k] = (uint8_t)(k * 13);
			cr_assert_eq(rv_perf_writer_write_payload(w, rec_done(r), big_payload,
								  sizeof(big_payload), &err),
				     0, "%s", err.message);
		}
	}
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	cr_assert_eq(rv_perf_reader_open(&rd, path, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(rd, &rec, &err)) == 1) {
		struct rv_perf_sample s;

		if (rec.header->type == RECORD_AUXTRACE) {
			cr_assert_eq(rec.payload_size, sizeof(big_payload));
			cr_assert_eq(memcmp(rec.payload, big_payload, sizeof(big_payload)), 0);
			continue;
		}
		cr_assert_eq(rv_perf_reader_parse_sample(rd, rec.header, &s, &err), 0, "%s",
			     err.message);
		cr_assert_eq(s.ip, 0x1000 + (uint64_t)seen);
		cr_assert_eq(s.time, (uint64_t)seen);
		seen++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_eq(seen, n);
	rv_perf_reader_free(rd);
	free(r);
	remove_tree(dir);
}

/* ---- perf reads what we write ---- */

#define ORACLE_TYPE                                                                                \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |  \
	 PERF_SAMPLE_PERIOD)

Test(perf_data, perf_script_prints_what_we_wrote)
{
	static const uint64_t ids[] = { 7 };
	char dir[64], path[128];
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	struct rec *r = rec_new();
	struct perf_event_attr attr = { 0 };
	struct sid sid = { .pid = 4242, .tid = 4242, .time = 999000000, .id = 7 };
	long counts[128] = { 0 };
	char *out, *line, *save = NULL;
	int status, nr_lines = 0;
	const int nr_samples = 5;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/oracle.data", dir);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 250000;
	attr.sample_type = ORACLE_TYPE;
	attr.sample_id_all = 1;
	attr.disabled = 1;
	attr.exclude_kernel = 1;

	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", ids, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_write(w, build_comm(r, ORACLE_TYPE, 4242, 4242, "oracle", &sid),
					  &err),
		     0);
	counts[PERF_RECORD_COMM]++;
	for (int i = 0; i < nr_samples; i++) {
		struct sample_spec s = {
			.ip = 0x401000 + 16 * (uint64_t)i,
			.pid = 4242,
			.tid = 4242 + (uint32_t)(i % 2),
			.time = 1000000000ULL + 1000ULL * (uint64_t)i + 7,
			.id = 7,
			.cpu = (uint32_t)i % 2,
			.period = 250000,
		};

		cr_assert_eq(rv_perf_writer_write(w, build_sample(r, ORACLE_TYPE, &s), &err), 0);
		counts[PERF_RECORD_SAMPLE]++;
	}
	sid.time = 1000009000;
	cr_assert_eq(rv_perf_writer_write(w,
					  build_task(r, PERF_RECORD_EXIT, ORACLE_TYPE, 4242, 1,
						     4242, 1, sid.time, &sid),
					  &err),
		     0);
	counts[PERF_RECORD_EXIT]++;
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	out = run_command(&status, NULL, "perf script -i '%s' -F pid,tid,time,ip 2>&1", path);
	cr_assert_eq(status, 0, "perf script failed:\n%s", out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned int pid, tid;
		unsigned long long sec, usec, ip;
		uint64_t want_time = 1000000000ULL + 1000ULL * (uint64_t)nr_lines + 7;

		cr_assert_eq(sscanf(line, " %u/%u %llu.%llu: %llx", &pid, &tid, &sec, &usec, &ip),
			     5, "unexpected perf script line: '%s'", line);
		cr_assert_lt(nr_lines, nr_samples, "more lines than samples: '%s'", line);
		cr_assert_eq(pid, 4242);
		cr_assert_eq(tid, 4242 + (unsigned int)(nr_lines % 2));
		cr_assert_eq(sec, want_time / 1000000000ULL);
		cr_assert_eq(usec, want_time % 1000000000ULL / 1000, "line '%s'", line);
		cr_assert_eq(ip, 0x401000 + 16ULL * (unsigned int)nr_lines);
		nr_lines++;
	}
	cr_assert_eq(nr_lines, nr_samples);
	free(out);
	check_counts_against_perf(path, counts, 128);
	check_perf_quiet(path, "report --stdio");
	check_perf_quiet(path, "script");
	free(r);
	remove_tree(dir);
}

/* Functions whose addresses the engine-like captures sample; perf must name
 * them from the executable, found through our MMAP2 and build id. */
__attribute__((noinline, used)) static int perf_data_test_leaf(volatile int *x)
{
	for (int i = 0; i < 8; i++)
		*x += i;
	return *x;
}

__attribute__((noinline, used)) static int perf_data_test_middle(volatile int *x)
{
	return perf_data_test_leaf(x) * 3 + 1;
}

__attribute__((noinline, used)) static int perf_data_test_root(volatile int *x)
{
	return perf_data_test_middle(x) * 5 + 2;
}

struct exe_mapping {
	uint64_t start, end, pgoff;
	char path[4096];
};

/* The executable mapping that holds `address`, from /proc/self/maps. */
static void find_mapping(const void *address, struct exe_mapping *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[8192];
	uint64_t a = (uint64_t)(uintptr_t)address;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int path_at = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &path_at) < 4)
			continue;
		if (a < start || a >= end)
			continue;
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		snprintf(m->path, sizeof(m->path), "%s", line + path_at);
		m->path[strcspn(m->path, "\n")] = '\0';
		fclose(f);
		return;
	}
	fclose(f);
	cr_assert_fail("no mapping holds %p", address);
}

#define ENGINE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

static void engine_attr(struct perf_event_attr *attr, uint64_t sample_type)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_freq = 4000;
	attr->freq = 1;
	attr->sample_type = sample_type;
	attr->sample_id_all = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->disabled = 1;
	attr->exclude_kernel = 1;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->task = 1;
}

/* Writes the sideband the sampling engine writes: COMM, MMAP2 of the test
 * executable, a thread's FORK and EXIT around the samples. */
struct engine_file {
	struct rv_perf_writer *w;
	struct rec *r;
	long counts[128];
	uint32_t pid;
	uint64_t ids[64];
	size_t nr_ids;
};

static void engine_begin(struct engine_file *ef, const char *path, uint64_t sample_type)
{
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	struct exe_mapping m;
	struct sid sid;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	memset(ef, 0, sizeof(*ef));
	ef->r = rec_new();
	ef->pid = (uint32_t)getpid();
	ef->nr_ids = cpus > 1 ? (size_t)(cpus < 64 ? cpus : 64) : 2;
	for (size_t i = 0; i < ef->nr_ids; i++)
		ef->ids[i] = 5000 + i;
	engine_attr(&attr, sample_type);
	cr_assert_eq(rv_perf_writer_open(&ef->w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(ef->w, &attr, "cpu-clock", ef->ids, ef->nr_ids, &err),
		     0, "%s", err.message);
	sid = (struct sid){ .pid = ef->pid, .tid = ef->pid, .time = 1000, .id = ef->ids[0] };
	cr_assert_eq(rv_perf_writer_write(ef->w,
					  build_comm(ef->r, sample_type, ef->pid, ef->pid,
						     "perfdata-test", &sid),
					  &err),
		     0);
	ef->counts[PERF_RECORD_COMM]++;
	find_mapping((const void *)(uintptr_t)perf_data_test_leaf, &m);
	cr_assert_eq(rv_perf_writer_write(ef->w,
					  build_mmap2(ef->r, sample_type, ef->pid, ef->pid, m.start,
						      m.end - m.start, m.pgoff, m.path, &sid),
					  &err),
		     0);
	ef->counts[PERF_RECORD_MMAP2]++;
	sid.time = 1100;
	cr_assert_eq(rv_perf_writer_write(ef->w,
					  build_task(ef->r, PERF_RECORD_FORK, sample_type, ef->pid,
						     ef->pid, ef->pid + 1, ef->pid, 1100, &sid),
					  &err),
		     0);
	ef->counts[PERF_RECORD_FORK]++;
}

static void engine_sample(struct engine_file *ef, uint64_t sample_type, struct sample_spec *s)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_perf_writer_write(ef->w, build_sample(ef->r, sample_type, s), &err), 0,
		     "%s", err.message);
	ef->counts[PERF_RECORD_SAMPLE]++;
}

static void engine_finish(struct engine_file *ef, uint64_t sample_type, uint64_t last_time)
{
	static const char *const argv[] = { "rearview", "run", "--sampling", "--", "x" };
	struct rv_error err = { 0 };
	struct sid sid = {
		.pid = ef->pid, .tid = ef->pid + 1, .time = last_time + 10, .id = ef->ids[1]
	};
	struct rv_perf_meta meta = { .argc = 5,
				     .argv = argv,
				     .clockid = CLOCK_MONOTONIC,
				     .sample_time_first_ns = 2000,
				     .sample_time_last_ns = last_time };

	cr_assert_eq(rv_perf_writer_write(ef->w,
					  build_task(ef->r, PERF_RECORD_EXIT, sample_type, ef->pid,
						     ef->pid, ef->pid + 1, ef->pid, sid.time, &sid),
					  &err),
		     0);
	ef->counts[PERF_RECORD_EXIT]++;
	cr_assert_eq(rv_perf_writer_finish(ef->w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(ef->w);
	free(ef->r);
}

static const char *after(const char *haystack, const char *needle)
{
	const char *p = strstr(haystack, needle);

	return p ? p + strlen(needle) : NULL;
}

Test(perf_data, perf_reads_the_sampling_engines_file)
{
	char dir[64], path[128];
	struct engine_file ef;
	char *out;
	int status;
	uint64_t leaf = (uint64_t)(uintptr_t)perf_data_test_leaf + 4;
	uint64_t middle = (uint64_t)(uintptr_t)perf_data_test_middle + 5;
	uint64_t root = (uint64_t)(uintptr_t)perf_data_test_root + 5;
	const uint64_t chain[] = { PERF_CONTEXT_USER, leaf, middle, root };
	const int nr_samples = 40;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/engine.data", dir);
	engine_begin(&ef, path, ENGINE_TYPE);
	for (int i = 0; i < nr_samples; i++) {
		struct sample_spec s = {
			.id = ef.ids[(size_t)i % ef.nr_ids],
			.ip = leaf,
			.pid = ef.pid,
			.tid = ef.pid + (uint32_t)(i % 2),
			.time = 2000 + 1000 * (uint64_t)i,
			.cpu = (uint32_t)((size_t)i % ef.nr_ids),
			.period = 250000,
			.nr_callchain = 4,
			.callchain = chain,
		};

		engine_sample(&ef, ENGINE_TYPE, &s);
	}
	engine_finish(&ef, ENGINE_TYPE, 2000 + 1000 * (uint64_t)(nr_samples - 1));

	check_counts_against_perf(path, ef.counts, 128);
	check_perf_quiet(path, "report --stdio");
	check_perf_quiet(path, "script");

	/* perf names our functions: it mapped the ips through MMAP2 to the ELF */
	out = run_command(&status, NULL,
			  "perf report -i '%s' --stdio --no-children --sort sym 2>&1", path);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_not_null(strstr(out, "perf_data_test_leaf"), "perf report:\n%s", out);
	cr_assert_not_null(strstr(out, "of event 'cpu-clock'"), "perf report:\n%s", out);
	cr_assert_not_null(strstr(out, "Samples: 40"), "perf report:\n%s", out);
	free(out);
	out = run_command(&status, NULL, "perf script -i '%s' -F tid,ip,sym 2>&1", path);
	cr_assert_eq(status, 0, "%s", out);
	{
		const char *p = after(out, "perf_data_test_leaf");

		p = p ? after(p, "perf_data_test_middle") : NULL;
		p = p ? after(p, "perf_data_test_root") : NULL;
		cr_assert_not_null(p, "perf script shows no leaf/middle/root chain:\n%s", out);
	}
	free(out);
	/* perf finds the executable's build id in HEADER_BUILD_ID */
	{
		struct exe_mapping m;
		uint8_t id[20];
		char hex[41] = "", want[4200];
		size_t n;

		find_mapping((const void *)(uintptr_t)perf_data_test_leaf, &m);
		n = readelf_build_id(m.path, id);
		cr_assert_gt(n, 0);
		for (size_t i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		snprintf(want, sizeof(want), "%s %s", hex, m.path);
		out = run_command(&status, NULL, "perf buildid-list -i '%s' 2>&1", path);
		cr_assert_eq(status, 0, "%s", out);
		cr_assert_not_null(strstr(out, want), "perf buildid-list:\n%s\nwanted: %s", out,
				   want);
		free(out);
	}
	/* perf's header view reads our features */
	out = run_command(&status, NULL, "perf report -i '%s' --header-only 2>&1", path);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_not_null(strstr(out, "cmdline : rearview run --sampling -- x"), "%s", out);
	cr_assert_not_null(strstr(out, "event : name = cpu-clock"), "%s", out);
	cr_assert_not_null(strstr(out, "clockid: monotonic"), "%s", out);
	cr_assert_not_null(strstr(out, "reference time"), "HEADER_CLOCK_DATA:\n%s", out);
	cr_assert_not_null(strstr(out, "time of first sample"), "%s", out);
	cr_assert_not_null(strstr(out, "cpuid : "), "%s", out);
	cr_assert_not_null(strstr(out, "total memory : "), "%s", out);
	{
		char want[128];
		struct utsname uts;

		snprintf(want, sizeof(want), "nrcpus online : %ld\n",
			 sysconf(_SC_NPROCESSORS_ONLN));
		cr_assert_not_null(strstr(out, want), "%s", out);
		snprintf(want, sizeof(want), "nrcpus avail : %ld\n", sysconf(_SC_NPROCESSORS_CONF));
		cr_assert_not_null(strstr(out, want), "%s", out);
		cr_assert_eq(uname(&uts), 0);
		snprintf(want, sizeof(want), "hostname : %s\n", uts.nodename);
		cr_assert_not_null(strstr(out, want), "%s", out);
		snprintf(want, sizeof(want), "os release : %s\n", uts.release);
		cr_assert_not_null(strstr(out, want), "%s", out);
	}
	free(out);
	remove_tree(dir);
}

#ifdef __x86_64__
/* Registers and stack as the kernel would capture them for a dwarf-mode
 * sample, taken from this process inside perf_data_test_dwarf_leaf. */
#define CAPTURED_STACK_MAX 16384
struct captured {
	uint64_t ip, sp, bp;
	uint64_t stack_len;
	uint8_t stack[CAPTURED_STACK_MAX];
};

/* Copies the live stack above sp, which holds the callers' frames and their
 * sanitizer redzones: byte by byte, uninstrumented. */
__attribute__((noinline, no_sanitize_address)) static void copy_stack(struct captured *c)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t limit = c->sp;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && c->sp >= start && c->sp < end)
			limit = end;
	}
	if (f)
		fclose(f);
	c->stack_len = limit - c->sp < CAPTURED_STACK_MAX ? limit - c->sp : CAPTURED_STACK_MAX;
	c->stack_len &= ~7ULL;
	for (uint64_t i = 0; i < c->stack_len; i++)
		c->stack[i] = ((volatile const uint8_t *)(uintptr_t)c->sp)[i];
}

__attribute__((noinline, used)) static int perf_data_test_dwarf_leaf(struct captured *c)
{
	uint64_t ip, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	c->ip = ip;
	c->sp = sp;
	c->bp = bp;
	copy_stack(c);
	return (int)(c->stack_len & 3) + 1;
}

__attribute__((noinline, used)) static int perf_data_test_dwarf_middle(struct captured *c)
{
	return perf_data_test_dwarf_leaf(c) * 3 + (int)(c->ip & 1);
}

__attribute__((noinline, used)) static int perf_data_test_dwarf_root(struct captured *c)
{
	return perf_data_test_dwarf_middle(c) * 5 + (int)(c->sp & 1);
}

Test(perf_data, perf_unwinds_the_sampling_engines_dwarf_file)
{
	const uint64_t type = ENGINE_TYPE | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	const uint64_t regs_mask = ((1ULL << PERF_REG_X86_64_MAX) - 1) &
				   ~((1ULL << PERF_REG_X86_DS) | (1ULL << PERF_REG_X86_ES) |
				     (1ULL << PERF_REG_X86_FS) | (1ULL << PERF_REG_X86_GS));
	char dir[64], path[128];
	struct engine_file ef;
	struct captured *c = calloc(1, sizeof(*c));
	uint64_t regs[PERF_REG_X86_64_MAX];
	size_t nr_regs = 0;
	char *out;
	int status;

	require_tool("perf", "linux-perf");
	cr_assert_not_null(c);
	cr_assert_gt(perf_data_test_dwarf_root(c), 0);
	cr_assert_gt(c->stack_len, 512);
	for (int reg = 0; reg < PERF_REG_X86_64_MAX; reg++) {
		if (!(regs_mask & (1ULL << reg)))
			continue;
		regs[nr_regs++] = reg == PERF_REG_X86_IP   ? c->ip
				  : reg == PERF_REG_X86_SP ? c->sp
				  : reg == PERF_REG_X86_BP ? c->bp
							   : 0;
	}

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/dwarf.data", dir);
	{
		struct perf_event_attr attr;
		struct rv_error err = { 0 };
		struct exe_mapping m;
		struct sid sid;
		struct sample_spec s = { 0 };

		memset(&ef, 0, sizeof(ef));
		ef.r = rec_new();
		ef.pid = (uint32_t)getpid();
		ef.nr_ids = 2;
		ef.ids[0] = 77;
		ef.ids[1] = 78;
		engine_attr(&attr, type);
		attr.sample_regs_user = regs_mask;
		attr.sample_stack_user = CAPTURED_STACK_MAX;
		attr.exclude_callchain_user = 1;
		cr_assert_eq(rv_perf_writer_open(&ef.w, path, &err), 0, "%s", err.message);
		cr_assert_eq(rv_perf_writer_add_attr(ef.w, &attr, "cpu-clock", ef.ids, 2, &err), 0);
		sid = (struct sid){ .pid = ef.pid, .tid = ef.pid, .time = 1000, .id = 77 };
		cr_assert_eq(rv_perf_writer_write(
				     ef.w,
				     build_comm(ef.r, type, ef.pid, ef.pid, "perfdata-test", &sid),
				     &err),
			     0);
		ef.counts[PERF_RECORD_COMM]++;
		/* Every segment of the executable, as perf record --call-graph dwarf
		 * records them (mmap_data): the unwinder reads .eh_frame_hdr from a
		 * read-only segment, not from the text. */
		find_mapping((const void *)(uintptr_t)c->ip, &m);
		{
			FILE *f = fopen("/proc/self/maps", "r");
			char line[8192];

			cr_assert_not_null(f);
			while (fgets(line, sizeof(line), f)) {
				unsigned long long start, end, pgoff;
				char perms[8];
				int path_at = 0;
				uint32_t prot;

				if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end,
					   perms, &pgoff, &path_at) < 4 ||
				    !path_at)
					continue;
				line[strcspn(line, "\n")] = '\0';
				if (strcmp(line + path_at, m.path) != 0)
					continue;
				prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) |
				       (perms[2] == 'x' ? 4 : 0);
				cr_assert_eq(rv_perf_writer_write(
						     ef.w,
						     build_mmap2_prot(ef.r, type, ef.pid, ef.pid,
								      start, end - start, pgoff,
								      prot, m.path, &sid),
						     &err),
					     0);
				ef.counts[PERF_RECORD_MMAP2]++;
			}
			fclose(f);
		}
		for (int i = 0; i < 3; i++) {
			s = (struct sample_spec){
				.id = ef.ids[i % 2],
				.ip = c->ip,
				.pid = ef.pid,
				.tid = ef.pid,
				.time = 2000 + 1000 * (uint64_t)i,
				.cpu = (uint32_t)(i % 2),
				.period = 250000,
				.nr_callchain = 0,
				.regs_abi = PERF_SAMPLE_REGS_ABI_64,
				.nr_regs = nr_regs,
				.regs = regs,
				.stack_size = CAPTURED_STACK_MAX,
				.dyn_size = c->stack_len,
				.stack = c->stack,
			};
			engine_sample(&ef, type, &s);
		}
		{
			struct rv_perf_meta meta = { .clockid = CLOCK_MONOTONIC };

			cr_assert_eq(rv_perf_writer_finish(ef.w, &meta, &err), 0, "%s",
				     err.message);
		}
		rv_perf_writer_free(ef.w);
		free(ef.r);
	}

	check_counts_against_perf(path, ef.counts, 128);
	check_perf_quiet(path, "script");
	out = run_command(&status, NULL, "perf script -i '%s' -F ip,sym 2>&1", path);
	cr_assert_eq(status, 0, "%s", out);
	{
		const char *p = after(out, "perf_data_test_dwarf_leaf");

		p = p ? after(p, "perf_data_test_dwarf_middle") : NULL;
		p = p ? after(p, "perf_data_test_dwarf_root") : NULL;
		cr_assert_not_null(p, "perf did not unwind leaf/middle/root from our stack:\n%s",
				   out);
	}
	free(out);

	/* and our reader hands back the same registers and stack */
	{
		struct rv_perf_reader *rd;
		struct rv_perf_record rec;
		struct rv_perf_sample s;
		struct rv_error err = { 0 };
		int nr = 0, ret;

		cr_assert_eq(rv_perf_reader_open(&rd, path, &err), 0, "%s", err.message);
		while ((ret = rv_perf_reader_next(rd, &rec, &err)) == 1) {
			if (rec.header->type != PERF_RECORD_SAMPLE)
				continue;
			cr_assert_eq(rv_perf_reader_parse_sample(rd, rec.header, &s, &err), 0, "%s",
				     err.message);
			cr_assert_eq(s.regs_user_abi, PERF_SAMPLE_REGS_ABI_64);
			cr_assert_eq(s.regs_user_mask, regs_mask);
			cr_assert_eq(memcmp(s.regs_user, regs, nr_regs * 8), 0);
			cr_assert_eq(s.stack_user_size, c->stack_len);
			cr_assert_eq(memcmp(s.stack_user, c->stack, c->stack_len), 0);
			nr++;
		}
		cr_assert_eq(ret, 0, "%s", err.message);
		cr_assert_eq(nr, 3);
		rv_perf_reader_free(rd);
	}
	free(c);
	remove_tree(dir);
}
#endif

/* ---- we read what perf records ---- */

static void read_perf_recording(const char *call_graph, bool dwarf)
{
	char dir[64], path[128];
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	long counts[128] = { 0 };
	long samples = 0, with_callchain = 0, with_stack = 0;
	char *out;
	int status, ret;

	require_tool("perf", "linux-perf");
	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	out = run_command(&status, NULL,
			  "perf record -e cpu-clock -F 2000 %s -o '%s' -- "
			  "dd if=/dev/zero of=/dev/null bs=4k count=1000000 2>&1",
			  call_graph, path);
	cr_assert_eq(status, 0, "perf record failed:\n%s", out);
	free(out);

	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_geq(rv_perf_reader_nr_attrs(r), 1);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "cpu-clock");
	cr_assert_not_null(rv_perf_reader_feature_string(r, RV_FEAT_HOSTNAME));
	{
		const char *const *argv;
		int argc = rv_perf_reader_cmdline(r, &argv);

		cr_assert_geq(argc, 3);
		cr_assert_str_eq(argv[1], "record");
	}
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		if (rec.header->type < 128)
			counts[rec.header->type]++;
		if (rec.header->type == PERF_RECORD_SAMPLE) {
			struct rv_perf_sample s;

			cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &s, &err), 0, "%s",
				     err.message);
			cr_assert_str_eq(s.attr->name, "cpu-clock");
			cr_assert_neq(s.pid, 0);
			cr_assert_neq(s.time, 0);
			samples++;
			if (s.nr_callchain > 0) {
				with_callchain++;
				cr_assert_geq(s.callchain[0], PERF_CONTEXT_MAX,
					      "callchains start with a context marker");
			}
			if (s.stack_user_size > 0 && s.regs_user_abi == PERF_SAMPLE_REGS_ABI_64)
				with_stack++;
		} else if (rec.header->type < 64) {
			struct rv_perf_sample_id id;

			cr_assert_eq(rv_perf_reader_parse_sample_id(r, rec.header, &id, &err), 0,
				     "%s", err.message);
			cr_assert_eq(id.valid, rv_perf_reader_attr(r, 0)->attr.sample_id_all);
			/* records perf synthesizes at start carry time 0 */
			if (rec.header->type == PERF_RECORD_EXIT)
				cr_assert_neq(id.time, 0);
		}
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	cr_assert_gt(samples, 50, "too few samples to judge");
	/* In dwarf mode the kernel leaves user frames out of the callchain:
	 * samples taken in user mode have none, and a user stack instead. */
	if (dwarf) {
		cr_assert_gt(with_callchain, 0);
		cr_assert_gt(with_stack, samples / 2, "%ld of %ld samples have a user stack",
			     with_stack, samples);
	} else {
		cr_assert_gt(with_callchain, samples * 9 / 10,
			     "%ld of %ld samples have a callchain", with_callchain, samples);
		cr_assert_eq(with_stack, 0);
	}
	rv_perf_reader_free(r);
	check_counts_against_perf(path, counts, 128);
	remove_tree(dir);
}

Test(perf_data, reads_perf_record_with_frame_pointers, .timeout = 120)
{
	read_perf_recording("-g", false);
}

Test(perf_data, reads_perf_record_with_dwarf, .timeout = 120)
{
	read_perf_recording("--call-graph dwarf,4096", true);
}

/* ---- corrupt and truncated files ---- */

static uint8_t *round_trip_bytes(size_t *size)
{
	char dir[64], path[128];
	struct written kept = { 0 };
	uint8_t *bytes;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/rt.data", dir);
	write_round_trip(path, &kept);
	free_written(&kept);
	bytes = read_whole(path, size);
	remove_tree(dir);
	return bytes;
}

/* Opens a copy of exactly `size` bytes (so ASan sees any overrun) and walks
 * it; returns the open's or the walk's status. */
static int open_and_walk(const uint8_t *bytes, size_t size, long *records, struct rv_error *err)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct rv_perf_reader *r;
	long counts[128] = { 0 };
	int ret;

	cr_assert_not_null(copy);
	memcpy(copy, bytes, size);
	rv_error_clear(err);
	ret = rv_perf_reader_open_buffer(&r, copy, size, "corrupt.data", err);
	if (ret == 0) {
		for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
			const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

			for (size_t k = 0; k < a->nr_ids; k++)
				(void)*(volatile const uint64_t *)&a->ids[k];
			if (a->name)
				(void)strlen(a->name);
		}
		ret = walk_file(r, counts, 128, NULL, err);
		rv_perf_reader_free(r);
	}
	if (records) {
		*records = 0;
		for (int t = 0; t < 128; t++)
			*records += counts[t];
	}
	if (ret < 0)
		cr_assert_neq(err->message[0], '\0', "an error without a message");
	free(copy);
	return ret;
}

struct layout {
	uint64_t attr_size, attrs_offset, attrs_size, data_offset, data_size;
};

static struct layout layout_of(const uint8_t *bytes)
{
	struct layout l;

	memcpy(&l.attr_size, bytes + 16, 8);
	memcpy(&l.attrs_offset, bytes + 24, 8);
	memcpy(&l.attrs_size, bytes + 32, 8);
	memcpy(&l.data_offset, bytes + 40, 8);
	memcpy(&l.data_size, bytes + 48, 8);
	return l;
}

Test(perf_data, truncated_at_every_length, .timeout = 120)
{
	size_t size;
	uint8_t *bytes = round_trip_bytes(&size);
	struct layout l = layout_of(bytes);
	struct rv_error err;
	long records, all_records;

	cr_assert_eq(open_and_walk(bytes, size, &all_records, &err), 0, "%s", err.message);
	cr_assert_eq(all_records, 9);
	for (size_t len = 0; len < size; len++) {
		int ret = open_and_walk(bytes, len, &records, &err);

		/* Cut inside the data section, the attributes (at the end) are
		 * gone: the open must fail. */
		if (len < l.attrs_offset + l.attrs_size)
			cr_assert_lt(ret, 0, "a file cut at %zu of %zu bytes opened", len, size);
		else
			cr_assert_eq(ret, 0, "cut at %zu: %s", len, err.message);
	}
	free(bytes);
}

Test(perf_data, truncated_data_keeps_the_records_before)
{
	size_t size, block_len, cut_len;
	uint8_t *bytes = round_trip_bytes(&size);
	struct layout l = layout_of(bytes);
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err;
	uint64_t ids_start, v;
	uint16_t s0, s1;
	uint8_t *cut;
	int ret, n = 0;

	/* Lay the file out as perf record does (ids and attributes before the
	 * data), then cut it inside its third record. */
	memcpy(&ids_start, bytes + l.attrs_offset + l.attr_size - 16, 8);
	cr_assert_lt(ids_start, l.attrs_offset);
	block_len = size - ids_start;
	memcpy(&s0, bytes + l.data_offset + 6, 2);
	memcpy(&s1, bytes + l.data_offset + s0 + 6, 2);
	cut_len = 104 + block_len + s0 + s1 + 12;
	cut = malloc(cut_len);
	cr_assert_not_null(cut);
	memcpy(cut, bytes, 104);
	memcpy(cut + 104, bytes + ids_start, block_len);
	memcpy(cut + 104 + block_len, bytes + l.data_offset, s0 + s1 + 12);
	v = l.attrs_offset - ids_start + 104;
	memcpy(cut + 24, &v, 8);
	v = 104 + block_len;
	memcpy(cut + 40, &v, 8);
	for (uint64_t i = 0; i < l.attrs_size / l.attr_size; i++) {
		uint8_t *ids =
			cut + l.attrs_offset - ids_start + 104 + i * l.attr_size + l.attr_size - 16;

		memcpy(&v, ids, 8);
		v = v - ids_start + 104;
		memcpy(ids, &v, 8);
	}

	cr_assert_eq(rv_perf_reader_open_buffer(&r, cut, cut_len, "cut.data", &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->ids[1], 102);
	cr_assert_not(rv_perf_reader_has_feature(r, RV_FEAT_HOSTNAME), "features are cut off");
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1)
		n++;
	cr_assert_lt(ret, 0);
	cr_assert_eq(n, 2, "the intact records come first");
	cr_assert_not_null(strstr(err.message, "truncated"), "%s", err.message);
	cr_assert_eq(rv_perf_reader_next(r, &rec, &err), ret, "errors are sticky");
	rv_perf_reader_free(r);

	/* cut exactly between records: the walk says the section is cut short */
	cr_assert_eq(rv_perf_reader_open_buffer(&r, cut, cut_len - 12, "cut.data", &err), 0);
	n = 0;
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1)
		n++;
	cr_assert_lt(ret, 0);
	cr_assert_eq(n, 2);
	cr_assert_not_null(strstr(err.message, "cut short"), "%s", err.message);
	rv_perf_reader_free(r);
	free(cut);
	free(bytes);
}

static void expect_open_error(const uint8_t *bytes, size_t size, const char *what)
{
	struct rv_error err;

	cr_assert_lt(open_and_walk(bytes, size, NULL, &err), 0, "%s was accepted", what);
}

Test(perf_data, corrupt_headers_are_refused)
{
	size_t size;
	uint8_t *bytes = round_trip_bytes(&size);
	uint8_t *bad = malloc(size);
	struct rv_error err;
	const uint64_t values[] = { 0,
				    1,
				    7,
				    8,
				    79,
				    80,
				    81,
				    4000,
				    UINT64_MAX / 2,
				    UINT64_MAX,
				    (uint64_t)size,
				    (uint64_t)size - 1 };

	cr_assert_not_null(bad);
#define WITH(offset, value, what)                                                                  \
	do {                                                                                       \
		uint64_t v_ = (value);                                                             \
		memcpy(bad, bytes, size);                                                          \
		memcpy(bad + (offset), &v_, 8);                                                    \
		(void)open_and_walk(bad, size, NULL, &err);                                        \
		(void)(what);                                                                      \
	} while (0)

	/* every header field set to hostile values: never a crash */
	for (size_t field = 8; field < 104; field += 8)
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++)
			WITH(field, values[v], "header field");

	memcpy(bad, bytes, size);
	memcpy(bad, "PERFILE3", 8);
	expect_open_error(bad, size, "a bad magic");
	memcpy(bad, "2ELIFREP", 8);
	expect_open_error(bad, size, "a byte-swapped file");
	memset(bad, 0, 104);
	expect_open_error(bad, size, "an unfinished file");
	{
		uint64_t v;

		memcpy(bad, bytes, size);
		v = 0;
		memcpy(bad + 16, &v, 8);
		expect_open_error(bad, size, "attr_size 0");
		memcpy(bad, bytes, size);
		v = 7;
		memcpy(bad + 16, &v, 8);
		expect_open_error(bad, size, "attr_size 7");
		memcpy(bad, bytes, size);
		v = UINT64_MAX - 8;
		memcpy(bad + 24, &v, 8);
		expect_open_error(bad, size, "attrs beyond the file");
		memcpy(bad, bytes, size);
		v = 8;
		memcpy(bad + 40, &v, 8);
		expect_open_error(bad, size, "data inside the header");
		memcpy(bad, bytes, size);
		v = UINT64_MAX - 50;
		memcpy(bad + 48, &v, 8);
		expect_open_error(bad, size, "data size that overflows");
		memcpy(bad, bytes, size);
		v = 16;
		memcpy(bad + 8, &v, 8);
		expect_open_error(bad, size, "a pipe header");
	}
	expect_open_error(bytes, 0, "an empty file");
	expect_open_error(bytes, 50, "a file shorter than its header");

	/* wild feature sections only lose the feature */
	{
		struct layout l = layout_of(bytes);
		uint64_t table = l.data_offset + l.data_size, v = UINT64_MAX - 3;
		struct rv_perf_reader *r;
		uint8_t *copy = malloc(size);

		cr_assert_not_null(copy);
		memcpy(copy, bytes, size);
		memcpy(copy + table, &v, 8); /* first feature (BUILD_ID) offset */
		cr_assert_eq(rv_perf_reader_open_buffer(&r, copy, size, "f.data", &err), 0, "%s",
			     err.message);
		cr_assert_not(rv_perf_reader_has_feature(r, RV_FEAT_BUILD_ID));
		cr_assert_str_eq(rv_perf_reader_feature_string(r, RV_FEAT_HOSTNAME), "testhost");
		rv_perf_reader_free(r);
		free(copy);
	}
#undef WITH
	free(bad);
	free(bytes);
}

Test(perf_data, corrupt_records_give_clean_errors)
{
	size_t size;
	uint8_t *bytes = round_trip_bytes(&size);
	struct layout l = layout_of(bytes);
	uint8_t *bad = malloc(size);
	struct rv_error err;
	long records;
	uint16_t s0;
	uint64_t second = l.data_offset;

	cr_assert_not_null(bad);
	memcpy(&s0, bytes + l.data_offset + 6, 2);
	second += s0;

	/* a record whose size runs past the end of the data section */
	memcpy(bad, bytes, size);
	{
		uint16_t huge = 0xfff8;

		memcpy(bad + second + 6, &huge, 2);
	}
	cr_assert_lt(open_and_walk(bad, size, &records, &err), 0);
	cr_assert_eq(records, 1, "the record before the bad one is read");
	cr_assert_not_null(strstr(err.message, "offset"), "%s", err.message);
	{
		char want[32];

		snprintf(want, sizeof(want), "%llu", (unsigned long long)second);
		cr_assert_not_null(strstr(err.message, want), "the message names the offset: %s",
				   err.message);
	}

	/* a record of size 0 and of size 4: no endless loop */
	for (uint16_t bad_size = 0; bad_size < 8; bad_size += 4) {
		memcpy(bad, bytes, size);
		memcpy(bad + second + 6, &bad_size, 2);
		cr_assert_lt(open_and_walk(bad, size, &records, &err), 0);
		cr_assert_eq(records, 1);
	}

	/* an AUXTRACE record whose payload runs past the end */
	{
		uint64_t pos = l.data_offset;

		memcpy(bad, bytes, size);
		while (pos < l.data_offset + l.data_size) {
			struct perf_event_header h;

			memcpy(&h, bad + pos, 8);
			if (h.type == RECORD_AUXTRACE) {
				uint64_t big = 1ULL << 40;

				memcpy(bad + pos + 8, &big, 8);
				break;
			}
			pos += h.size;
		}
		cr_assert_lt(pos, l.data_offset + l.data_size);
		cr_assert_lt(open_and_walk(bad, size, &records, &err), 0);
		cr_assert_eq(records, 6);
	}

	/* samples whose lengths overflow: a clean parse error each */
	{
		struct rv_perf_reader *r;
		struct rv_perf_record rec;
		struct rv_perf_sample s;
		struct rec *rb = rec_new();
		const struct perf_event_header *h;
		uint64_t *words;
		uint8_t *copy = malloc(size);

		cr_assert_not_null(copy);
		memcpy(copy, bytes, size);
		cr_assert_eq(rv_perf_reader_open_buffer(&r, copy, size, "rt.data", &err), 0);
		do {
			cr_assert_eq(rv_perf_reader_next(r, &rec, &err), 1);
		} while (rec.header->type != PERF_RECORD_SAMPLE);
		memcpy(rb->words, rec.header, rec.header->size);
		h = (const void *)rb->words;
		words = rb->words + 1;
		/* IDENTIFIER IP TID TIME CPU PERIOD, then the callchain's nr */
		{
			const uint64_t nrs[] = { 1000, 1ULL << 61, UINT64_MAX, UINT64_MAX / 8 + 1 };

			for (size_t k = 0; k < sizeof(nrs) / sizeof(nrs[0]); k++) {
				memcpy(rb->words, rec.header, rec.header->size);
				words[6] = nrs[k];
				cr_assert_lt(rv_perf_reader_parse_sample(r, h, &s, &err), 0,
					     "callchain nr %llu accepted",
					     (unsigned long long)nrs[k]);
				cr_assert_not_null(strstr(err.message, "callchain"), "%s",
						   err.message);
			}
		}
		/* one entry too many shifts every later field: still an error */
		memcpy(rb->words, rec.header, rec.header->size);
		words[6] = 5;
		cr_assert_lt(rv_perf_reader_parse_sample(r, h, &s, &err), 0);
		/* the stack's dyn_size larger than its size */
		memcpy(rb->words, rec.header, rec.header->size);
		rb->words[rec.header->size / 8 - 1] = 1000;
		cr_assert_lt(rv_perf_reader_parse_sample(r, h, &s, &err), 0);
		/* a record too short for its fields, at every length */
		for (uint16_t len = 8; len < rec.header->size; len += 8) {
			memcpy(rb->words, rec.header, rec.header->size);
			memcpy((uint8_t *)rb->words + 6, &len, sizeof(len));
			cr_assert_lt(rv_perf_reader_parse_sample(r, h, &s, &err), 0,
				     "a sample cut to %u bytes parsed", len);
		}
		/* an id no event has */
		memcpy(rb->words, rec.header, rec.header->size);
		words[0] = 424242;
		cr_assert_lt(rv_perf_reader_parse_sample(r, h, &s, &err), 0);
		cr_assert_not_null(strstr(err.message, "424242"), "%s", err.message);
		rv_perf_reader_free(r);
		free(copy);
		free(rb);
	}
	free(bad);
	free(bytes);
}

Test(perf_data, random_corruption_never_crashes, .timeout = 300)
{
	size_t size;
	uint8_t *bytes = round_trip_bytes(&size);
	uint8_t *bad = malloc(size);
	struct rv_error err;
	uint64_t state = 0x9e3779b97f4a7c15ULL;

	cr_assert_not_null(bad);
	for (int round = 0; round < 3000; round++) {
		int flips = 1 + round % 8;

		memcpy(bad, bytes, size);
		for (int f = 0; f < flips; f++) {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			/* aim at the header, the data and the tail alike */
			bad[state % size] ^= (uint8_t)(1u << ((state >> 32) % 8));
			if (round % 3 == 0)
				bad[(state >> 16) % size] = (uint8_t)(state >> 40);
		}
		(void)open_and_walk(bad, size, NULL, &err);
	}
	free(bad);
	free(bytes);
}

Test(perf_data, reader_errors_name_the_problem)
{
	char dir[64], path[160];
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	FILE *f;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/missing.data", dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), -ENOENT);
	cr_assert_not_null(strstr(err.message, "missing.data"), "%s", err.message);
	snprintf(path, sizeof(path), "%s/empty.data", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_lt(rv_perf_reader_open(&r, path, &err), 0);
	cr_assert_not_null(strstr(err.message, "empty"), "%s", err.message);
	snprintf(path, sizeof(path), "%s/text.data", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("this is not a perf.data file, not at all, no\n", f);
	fclose(f);
	cr_assert_lt(rv_perf_reader_open(&r, path, &err), 0);
	cr_assert_not_null(strstr(err.message, "not a perf.data file"), "%s", err.message);

	/* perf's directory layout: DIR/data */
	{
		char sub[128], data[192];
		struct written kept = { 0 };

		snprintf(sub, sizeof(sub), "%s/capture", dir);
		cr_assert_eq(mkdir(sub, 0700), 0);
		snprintf(data, sizeof(data), "%s/data", sub);
		write_round_trip(data, &kept);
		free_written(&kept);
		cr_assert_eq(rv_perf_reader_open(&r, sub, &err), 0, "%s", err.message);
		cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
		rv_perf_reader_free(r);
	}
	remove_tree(dir);
}

/* ---- layouts: every sample field, ids by position, attribute sizes ---- */

/* A perf.data in memory with one attribute of `attr_bytes` bytes (its size
 * field set to `declared`), ids, and the given records. */
static uint8_t *craft_file(const struct perf_event_attr *attr, size_t attr_bytes, uint32_t declared,
			   const uint64_t *ids, size_t nr_ids, const void *records,
			   size_t records_len, size_t *size)
{
	size_t attr_size = attr_bytes + 16;
	size_t ids_at = 104 + attr_size, data_at = ids_at + nr_ids * 8;
	uint8_t *f = calloc(1, data_at + records_len);
	uint64_t v;

	cr_assert_not_null(f);
	memcpy(f, "PERFILE2", 8);
	v = 104;
	memcpy(f + 8, &v, 8);
	v = attr_size;
	memcpy(f + 16, &v, 8);
	v = 104;
	memcpy(f + 24, &v, 8); /* attrs */
	v = attr_size;
	memcpy(f + 32, &v, 8);
	v = data_at;
	memcpy(f + 40, &v, 8); /* data */
	v = records_len;
	memcpy(f + 48, &v, 8);
	memcpy(f + 104, attr, attr_bytes < sizeof(*attr) ? attr_bytes : sizeof(*attr));
	memcpy(f + 104 + offsetof(struct perf_event_attr, size), &declared, 4);
	v = ids_at;
	memcpy(f + 104 + attr_bytes, &v, 8);
	v = nr_ids * 8;
	memcpy(f + 104 + attr_bytes + 8, &v, 8);
	memcpy(f + ids_at, ids, nr_ids * 8);
	memcpy(f + data_at, records, records_len);
	*size = data_at + records_len;
	return f;
}

static void check_every_field(uint64_t read_format)
{
	const uint64_t all = (uint64_t)PERF_SAMPLE_WEIGHT_STRUCT * 2 - 1;
	struct perf_event_attr attr = { 0 };
	struct rec *r = rec_new();
	struct rv_perf_reader *rd;
	struct rv_perf_record rec;
	struct rv_perf_sample s;
	struct rv_error err = { 0 };
	static const uint64_t ids[] = { 31 };
	const uint8_t raw[12] = "raw-payload";
	const uint8_t stack[16] = "stack-contents!";
	const uint8_t aux[8] = "aux-data";
	uint8_t *file;
	size_t size, raw_at = 0;

	attr.type = PERF_TYPE_SOFTWARE;
	attr.sample_type = all;
	attr.read_format = read_format;
	attr.branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX;
	attr.sample_regs_user = 0x7;
	attr.sample_regs_intr = 0x3;
	attr.sample_stack_user = 16;

	rec_begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rec_u64(r, 31);	      /* IDENTIFIER */
	rec_u64(r, 0x1111);   /* IP */
	rec_u32x2(r, 10, 11); /* TID */
	rec_u64(r, 123456);   /* TIME */
	rec_u64(r, 0xadd7);   /* ADDR */
	rec_u64(r, 31);	      /* ID */
	rec_u64(r, 77);	      /* STREAM_ID */
	rec_u32x2(r, 3, 0);   /* CPU */
	rec_u64(r, 4000);     /* PERIOD */
	if (read_format & PERF_FORMAT_GROUP) {
		rec_u64(r, 2);	/* nr */
		rec_u64(r, 99); /* time_enabled */
		for (int i = 0; i < 2; i++) {
			rec_u64(r, 1000 + (uint64_t)i); /* value */
			rec_u64(r, 31);			/* id */
			rec_u64(r, 0);			/* lost */
		}
	} else {
		rec_u64(r, 1000); /* value */
		rec_u64(r, 99);	  /* time_enabled */
		rec_u64(r, 31);	  /* id */
		rec_u64(r, 0);	  /* lost */
	}
	rec_u64(r, 2); /* CALLCHAIN */
	rec_u64(r, PERF_CONTEXT_USER);
	rec_u64(r, 0x1111);
	{
		uint32_t raw_size = sizeof(raw);

		raw_at = r->len;
		rec_put(r, &raw_size, 4); /* RAW: 4 + 12 = 16 */
		rec_put(r, raw, sizeof(raw));
	}
	rec_u64(r, 2); /* BRANCH_STACK nr */
	rec_u64(r, 5); /* hw_idx */
	for (int i = 0; i < 6; i++)
		rec_u64(r, 0xb000 + (uint64_t)i);
	rec_u64(r, PERF_SAMPLE_REGS_ABI_64); /* REGS_USER */
	rec_u64(r, 0xa1);
	rec_u64(r, 0xa2);
	rec_u64(r, 0xa3);
	rec_u64(r, sizeof(stack)); /* STACK_USER */
	rec_put(r, stack, sizeof(stack));
	rec_u64(r, 12);			     /* dyn_size */
	rec_u64(r, 0x3e16);		     /* WEIGHT */
	rec_u64(r, 0xda7a);		     /* DATA_SRC */
	rec_u64(r, 0x7a);		     /* TRANSACTION */
	rec_u64(r, PERF_SAMPLE_REGS_ABI_64); /* REGS_INTR */
	rec_u64(r, 0xb1);
	rec_u64(r, 0xb2);
	rec_u64(r, 0xf00d);	 /* PHYS_ADDR */
	rec_u64(r, 0xc6);	 /* CGROUP */
	rec_u64(r, 4096);	 /* DATA_PAGE_SIZE */
	rec_u64(r, 2 << 20);	 /* CODE_PAGE_SIZE */
	rec_u64(r, sizeof(aux)); /* AUX */
	rec_put(r, aux, sizeof(aux));
	rec_done(r);

	file = craft_file(&attr, sizeof(attr), sizeof(attr), ids, 1, r->words, r->len, &size);
	cr_assert_eq(rv_perf_reader_open_buffer(&rd, file, size, "fields.data", &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_reader_next(rd, &rec, &err), 1, "%s", err.message);
	cr_assert_eq(rv_perf_reader_parse_sample(rd, rec.header, &s, &err), 0, "%s", err.message);
	cr_assert_eq(s.id, 31);
	cr_assert_eq(s.ip, 0x1111);
	cr_assert_eq(s.pid, 10);
	cr_assert_eq(s.tid, 11);
	cr_assert_eq(s.time, 123456);
	cr_assert_eq(s.addr, 0xadd7);
	cr_assert_eq(s.stream_id, 77);
	cr_assert_eq(s.cpu, 3);
	cr_assert_eq(s.period, 4000);
	cr_assert_eq(s.nr_callchain, 2);
	cr_assert_eq(s.callchain[1], 0x1111);
	cr_assert_eq(s.raw_size, 12);
	cr_assert_eq(memcmp(s.raw, raw, 12), 0);
	cr_assert_eq(s.regs_user_abi, PERF_SAMPLE_REGS_ABI_64);
	cr_assert_eq(s.regs_user[0], 0xa1);
	cr_assert_eq(s.regs_user[2], 0xa3);
	cr_assert_eq(s.stack_user_size, 12);
	cr_assert_eq(memcmp(s.stack_user, stack, 16), 0);
	cr_assert_eq(s.aux_size, 8);
	cr_assert_eq(memcmp(s.aux, aux, 8), 0);
	cr_assert_eq(rv_perf_reader_next(rd, &rec, &err), 0);
	rv_perf_reader_free(rd);

	/* RAW must keep what follows it aligned, as the kernel pads it */
	{
		struct rec *bad = rec_new();
		uint32_t odd = 13;

		memcpy(bad->words, r->words, r->len);
		memcpy((uint8_t *)bad->words + raw_at, &odd, 4);
		cr_assert_eq(rv_perf_reader_open_buffer(&rd, file, size, "fields.data", &err), 0);
		cr_assert_lt(rv_perf_reader_parse_sample(rd, (const void *)bad->words, &s, &err),
			     0);
		cr_assert_not_null(strstr(err.message, "raw"), "%s", err.message);
		rv_perf_reader_free(rd);
		free(bad);
	}

	/* a field the kernel has not defined yet cannot be skipped */
	attr.sample_type |= (uint64_t)PERF_SAMPLE_WEIGHT_STRUCT << 1;
	free(file);
	file = craft_file(&attr, sizeof(attr), sizeof(attr), ids, 1, r->words, r->len, &size);
	cr_assert_eq(rv_perf_reader_open_buffer(&rd, file, size, "fields.data", &err), 0);
	cr_assert_eq(rv_perf_reader_next(rd, &rec, &err), 1);
	cr_assert_eq(rv_perf_reader_parse_sample(rd, rec.header, &s, &err), -ENOTSUP);
	cr_assert_not_null(strstr(err.message, "newer perf"), "%s", err.message);
	rv_perf_reader_free(rd);
	free(file);
	free(r);
}

Test(perf_data, every_sample_field_in_order)
{
	check_every_field(PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID |
			  PERF_FORMAT_LOST);
	check_every_field(PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID | PERF_FORMAT_LOST);
}

Test(perf_data, attributes_of_older_and_newer_perf)
{
	struct perf_event_attr attr = { 0 };
	struct rec *r = rec_new();
	static const uint64_t ids[] = { 5, 6 };
	struct rv_perf_reader *rd;
	struct rv_perf_record rec;
	struct rv_perf_sample s;
	struct rv_error err = { 0 };
	uint8_t *file;
	size_t size;
	const struct {
		size_t bytes;
		uint32_t declared;
	} sizes[] = {
		{ PERF_ATTR_SIZE_VER0, 0 }, /* perf's first ABI had no size */
		{ PERF_ATTR_SIZE_VER0, PERF_ATTR_SIZE_VER0 },
		{ PERF_ATTR_SIZE_VER3, PERF_ATTR_SIZE_VER3 },
		{ sizeof(attr), sizeof(attr) },
		{ sizeof(attr) + 8, sizeof(attr) + 8 }, /* a newer perf (config3) */
		{ sizeof(attr) + 64, sizeof(attr) + 64 },
	};

	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ID;
	attr.sample_period = 1234;
	rec_begin(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rec_u64(r, 0x4040);
	rec_u32x2(r, 1, 2);
	rec_u64(r, 6);
	rec_done(r);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		file = craft_file(&attr, sizes[i].bytes, sizes[i].declared, ids, 2, r->words,
				  r->len, &size);
		if (sizes[i].bytes > sizeof(attr))
			memset(file + 104 + sizeof(attr), 0x5a, sizes[i].bytes - sizeof(attr));
		cr_assert_eq(rv_perf_reader_open_buffer(&rd, file, size, "abi.data", &err), 0,
			     "attr of %zu bytes: %s", sizes[i].bytes, err.message);
		cr_assert_eq(rv_perf_reader_attr(rd, 0)->attr.size, sizeof(attr));
		cr_assert_eq(rv_perf_reader_attr(rd, 0)->attr.sample_period, 1234);
		cr_assert_eq(rv_perf_reader_attr(rd, 0)->attr.sample_type, attr.sample_type);
		cr_assert_eq(rv_perf_reader_attr(rd, 0)->nr_ids, 2);
		cr_assert_eq(rv_perf_reader_attr(rd, 0)->ids[1], 6);
		if (sizes[i].bytes < PERF_ATTR_SIZE_VER3)
			cr_assert_eq(rv_perf_reader_attr(rd, 0)->attr.sample_regs_user, 0,
				     "what an old attribute lacks reads as zero");
		cr_assert_eq(rv_perf_reader_next(rd, &rec, &err), 1, "%s", err.message);
		cr_assert_eq(rv_perf_reader_parse_sample(rd, rec.header, &s, &err), 0, "%s",
			     err.message);
		cr_assert_eq(s.ip, 0x4040);
		cr_assert_eq(s.id, 6);
		rv_perf_reader_free(rd);
		free(file);
	}
	/* a size field larger than the entries holding it is corrupt */
	file = craft_file(&attr, sizeof(attr), sizeof(attr) + 8, ids, 2, r->words, r->len, &size);
	cr_assert_lt(rv_perf_reader_open_buffer(&rd, file, size, "abi.data", &err), 0);
	free(file);
	free(r);
}

Test(perf_data, sample_ids_found_by_position)
{
	char dir[64], path[128];
	const uint64_t type_x = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
				PERF_SAMPLE_CPU;
	const uint64_t type_y = type_x | PERF_SAMPLE_PERIOD;
	static const uint64_t ids_x[] = { 11 }, ids_y[] = { 22 };
	struct perf_event_attr x = { .type = PERF_TYPE_SOFTWARE,
				     .sample_type = type_x,
				     .sample_id_all = 1 };
	struct perf_event_attr y = { .type = PERF_TYPE_SOFTWARE,
				     .sample_type = type_y,
				     .sample_id_all = 1 };
	struct rv_perf_writer *w;
	struct rv_perf_reader *rd;
	struct rv_perf_sample s;
	struct rv_perf_sample_id sid;
	struct rv_error err = { 0 };
	struct rec *r = rec_new();
	uint8_t *sample_y, *comm_x;

	make_temp_dir(dir, sizeof(dir), "rv-perf-data");
	snprintf(path, sizeof(path), "%s/pos.data", dir);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &x, "x", ids_x, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &y, "y", ids_y, 1, &err), 0);
	rec_begin(r, PERF_RECORD_SAMPLE, 0);
	rec_u64(r, 0x10);   /* IP */
	rec_u32x2(r, 1, 2); /* TID */
	rec_u64(r, 3);	    /* TIME */
	rec_u64(r, 0xadd);  /* ADDR */
	rec_u64(r, 22);	    /* ID */
	rec_u64(r, 0x57);   /* STREAM_ID */
	rec_u32x2(r, 1, 0); /* CPU */
	rec_u64(r, 500);    /* PERIOD */
	sample_y = malloc(rec_done(r)->size);
	memcpy(sample_y, r->words, r->len);
	cr_assert_eq(rv_perf_writer_write(w, (const void *)sample_y, &err), 0);
	{
		struct sid t = {
			.pid = 1, .tid = 2, .time = 9, .id = 11, .stream_id = 0x58, .cpu = 1
		};

		build_comm(r, type_x, 1, 2, "x", &t);
		comm_x = malloc(r->len);
		memcpy(comm_x, r->words, r->len);
		cr_assert_eq(rv_perf_writer_write(w, (const void *)comm_x, &err), 0);
	}
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	cr_assert_eq(rv_perf_reader_open(&rd, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_reader_parse_sample(rd, (const void *)sample_y, &s, &err), 0, "%s",
		     err.message);
	cr_assert_str_eq(s.attr->name, "y");
	cr_assert_eq(s.id, 22);
	cr_assert_eq(s.addr, 0xadd);
	cr_assert_eq(s.stream_id, 0x57);
	cr_assert_eq(s.period, 500);
	cr_assert_eq(rv_perf_reader_parse_sample_id(rd, (const void *)comm_x, &sid, &err), 0, "%s",
		     err.message);
	cr_assert(sid.valid);
	cr_assert_eq(sid.id, 11);
	cr_assert_eq(sid.stream_id, 0x58);
	cr_assert_eq(sid.time, 9);
	cr_assert_eq(sid.cpu, 1);
	cr_assert_eq(sid.tid, 2);
	rv_perf_reader_free(rd);

	/* events whose ids sit at different places cannot be told apart */
	x.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ID;
	y.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ID;
	x.sample_id_all = y.sample_id_all = 0;
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &x, "x", ids_x, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &y, "y", ids_y, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_write(w, (const void *)sample_y, &err), 0);
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	cr_assert_eq(rv_perf_reader_open(&rd, path, &err), 0, "%s", err.message);
	cr_assert_lt(rv_perf_reader_parse_sample(rd, (const void *)sample_y, &s, &err), 0);
	cr_assert_not_null(strstr(err.message, "cannot tell"), "%s", err.message);
	/* without sample_id_all there is no trailer to read */
	cr_assert_eq(rv_perf_reader_parse_sample_id(rd, (const void *)comm_x, &sid, &err), 0);
	cr_assert_not(sid.valid);
	rv_perf_reader_free(rd);
	free(sample_y);
	free(comm_x);
	free(r);
	remove_tree(dir);
}
