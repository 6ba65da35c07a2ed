/* test_pt_engine.c: the PT engine (pt_engine.h) against a simulated kernel
 * (tests/support/fake_kernel.h). The fake hands out memory for each event's
 * mmap page, data ring and AUX area, and the tests play the kernel: they
 * write sideband records into the data ring and real Intel PT bytes (from
 * ../shared/pt-corpus) round the AUX area, moving data_head and aux_head as
 * the kernel does (aux_head masked in snapshot mode, as the PT driver reports
 * it; free-running and bounded by aux_tail in full mode). The capture the
 * engine writes is read back with rv_perf_reader. Not here: extraction corner
 * cases (test_aux_snapshot.c).
 */
#include <criterion/criterion.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "fake_kernel.h"
#include "record/perf_attr_ext.h"
#include "record/pt_attr.h"
#include "record/pt_engine.h"
#include "test_env.h"
#include "test_files.h"

#define PT_TYPE 42

/* ---- the world around ---- */

/* Real PT from the corpus: foo's trace, read whole. */
static uint8_t *real_pt(size_t *size)
{
	const char *path = "../shared/pt-corpus/foo/trace.pt";
	FILE *f = fopen(path, "rb");

	if (!f) {
		if (under_ci())
			cr_assert_fail("%s is missing; CI needs the pt-corpus", path);
		cr_skip_test("%s is missing (the pt-corpus is not installed)", path);
	}
	uint8_t *data = malloc(1 << 20);
	cr_assert_not_null(data);
	*size = fread(data, 1, 1 << 20, f);
	fclose(f);
	cr_assert(*size > 20000);
	return data;
}

struct world {
	char dir[64];
	char capture[128];
	struct fake_kernel fake;
	struct rv_pt_ops ops;
	struct perf_event_attr pt, sb, sib;
	struct rv_perf_writer *writer;
	struct rv_pt_engine_config config;
	pid_t tid;
};

/* A temporary directory holding a fake /proc for process 4242 (two threads,
 * one executable mapping) and the capture. */
static void world_init(struct world *w, enum rv_pt_mode mode, uint64_t aux_bytes)
{
	memset(w, 0, sizeof(*w));
	strcpy(w->dir, "/tmp/rv-pt-engine-XXXXXX");
	cr_assert_not_null(mkdtemp(w->dir));
	fake_proc_write(w->dir, 4242, "target",
			"00400000-00427000 r-xp 00000000 08:01 1234 /usr/bin/target\n"
			"00627000-00628000 rw-p 00027000 08:01 1234 /usr/bin/target\n"
			"7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]\n");
	snprintf(w->capture, sizeof(w->capture), "%s/perf.data", w->dir);
	cr_assert_eq(rv_perf_writer_open(&w->writer, w->capture, NULL), 0);

	uint64_t sample_type =
		PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
	w->pt = (struct perf_event_attr){ .type = PT_TYPE,
					  .size = sizeof(w->pt),
					  .config = 1 | (1 << 10) | (1 << 13),
					  .sample_period = 1,
					  .sample_type = sample_type,
					  .exclude_kernel = 1,
					  .exclude_hv = 1,
					  .sample_id_all = 1 };
	w->sb = (struct perf_event_attr){ .type = PERF_TYPE_SOFTWARE,
					  .size = sizeof(w->sb),
					  .config = PERF_COUNT_SW_DUMMY,
					  .sample_period = 1,
					  .sample_type = sample_type,
					  .exclude_kernel = 1,
					  .exclude_hv = 1,
					  .mmap = 1,
					  .mmap2 = 1,
					  .comm = 1,
					  .task = 1,
					  .sample_id_all = 1 };
	w->fake.time_shift = 10;
	w->fake.time_mult = 1500;
	w->fake.time_zero = 123456789;
	w->ops = fake_kernel_ops(&w->fake);
	w->tid = 4242;
	w->config = (struct rv_pt_engine_config){
		.pt_attr = &w->pt,
		.pt_name = "intel_pt//u",
		.sideband_attr = &w->sb,
		.sideband_name = "dummy:u",
		.tids = &w->tid,
		.nr_tids = 1,
		.pids = &w->tid,
		.nr_pids = 1,
		.mode = mode,
		.aux_bytes = aux_bytes,
		.data_pages = 4,
		.pmu_type = PT_TYPE,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 1,
		.max_nonturbo_ratio = 24,
		.root = w->dir,
		.capture = w->writer,
		.ops = &w->ops,
	};
}

static void world_finish(struct world *w)
{
	struct rv_error err = { 0 };
	struct rv_perf_meta meta = { .clockid = -1, .cpuid = "GenuineIntel,6,140,1" };

	cr_assert_eq(rv_perf_writer_finish(w->writer, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w->writer);
	w->writer = NULL;
}

static void world_destroy(struct world *w)
{
	rv_perf_writer_free(w->writer);
	remove_tree(w->dir);
}

/* The records of the capture, as types and AUXTRACE payloads. */
struct readback {
	uint32_t types[256];
	size_t nr;
	uint8_t *aux[16];
	uint64_t aux_size[16], aux_offset[16];
	size_t nr_aux;
};

/* Reads the capture at path into rb; cut: a capture flushed as it grows and
 * not finished, whose records end with the error that says so. */
static void read_back_as(const char *path, struct readback *rb, bool cut)
{
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	int got;

	memset(rb, 0, sizeof(*rb));
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		cr_assert(rb->nr < 256);
		rb->types[rb->nr++] = rec.header->type;
		if (rec.header->type == RV_PERF_RECORD_AUXTRACE) {
			struct rv_perf_auxtrace a;

			cr_assert(rb->nr_aux < 16);
			cr_assert_eq(rv_perf_auxtrace_parse(rec.header, &a, &err), 0);
			cr_assert(rec.payload_size >= a.size);
			rb->aux[rb->nr_aux] = malloc(a.size ? a.size : 1);
			memcpy(rb->aux[rb->nr_aux], rec.payload, a.size);
			rb->aux_size[rb->nr_aux] = a.size;
			rb->aux_offset[rb->nr_aux] = a.offset;
			cr_assert_eq(a.idx, 0);
			cr_assert_eq(a.tid, 4242);
			rb->nr_aux++;
		}
	}
	if (cut) {
		cr_assert_lt(got, 0);
		cr_assert_not_null(strstr(err.message, "the capture was cut"), "%s", err.message);
	} else {
		cr_assert_eq(got, 0, "%s", err.message);
	}
	rv_perf_reader_free(r);
}

static void read_back(const char *path, struct readback *rb)
{
	read_back_as(path, rb, false);
}

static void free_readback(struct readback *rb)
{
	for (size_t i = 0; i < rb->nr_aux; i++)
		free(rb->aux[i]);
}

static size_t find_type(const struct readback *rb, uint32_t type, size_t from)
{
	for (size_t i = from; i < rb->nr; i++)
		if (rb->types[i] == type)
			return i;
	return SIZE_MAX;
}

/* Records the kernel writes for the thread: ITRACE_START on the PT event,
 * an MMAP2 on the sideband event. */
static void kernel_sideband(struct world *w, struct fake_event *pt, struct fake_event *sb)
{
	struct rv_synth synth = { .sample_type = w->pt.sample_type, .sample_id_all = true };
	struct rv_synth_id id = { .pid = 4242, .tid = 4242, .time = 200, .id = pt->id };
	uint8_t rec[4096 + PATH_MAX];

	cr_assert(rv_synth_itrace_start(&synth, rec, sizeof(rec), 4242, 4242, &id));
	fake_kernel_record(pt, rec);
	id.id = sb->id;
	id.time = 300;
	cr_assert(rv_synth_mmap2(&synth, rec, sizeof(rec), 4242, 4242, 0x7f0000000000, 0x20000, 0,
				 8, 1, 99, PROT_READ | PROT_EXEC, MAP_PRIVATE, "/usr/lib/libc.so.6",
				 PERF_RECORD_MISC_USER, &id));
	/* The sideband event writes into the PT event's ring (SET_OUTPUT). */
	cr_assert_eq(sb->output_fd, FAKE_FD0 + (int)(pt - w->fake.ev));
	fake_kernel_record(pt, rec);
}

static void kernel_aux_record(struct world *w, struct fake_event *pt, uint64_t offset,
			      uint64_t size, uint64_t flags)
{
	struct rv_synth synth = { .sample_type = w->pt.sample_type, .sample_id_all = true };
	struct rv_synth_id id = { .pid = 4242, .tid = 4242, .time = 400, .id = pt->id };
	uint8_t rec[256];

	cr_assert(rv_synth_aux(&synth, rec, sizeof(rec), offset, size, flags, &id));
	fake_kernel_record(pt, rec);
}

Test(pt_engine, snapshot_mode_writes_perfs_layout_and_the_newest_trace)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;
	struct rv_pt_record_stats stats;
	struct readback rb;
	size_t pt_size;
	uint8_t *pt_bytes = real_pt(&pt_size);
	const uint64_t area = 16384;

	world_init(&w, RV_PT_SNAPSHOT, area);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	struct fake_event *pt = &w.fake.ev[0], *sb = &w.fake.ev[1];
	cr_assert_eq(pt->attr.type, PT_TYPE);
	cr_assert_eq(pt->pid, 4242);
	cr_assert_eq(pt->cpu, -1);
	cr_assert_eq(pt->aux_prot, PROT_READ, "snapshot mode maps the AUX area read-only");
	cr_assert_eq(sb->attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	cr_assert(pt->enabled && sb->enabled);

	/* The trace goes round the area once and a half: the snapshot is its
	 * newest 16 KiB. */
	kernel_sideband(&w, pt, sb);
	size_t first = area + area / 2 + 123;
	fake_kernel_trace(pt, pt_bytes, first);
	kernel_aux_record(&w, pt, 0, first, PERF_AUX_FLAG_OVERWRITE);
	cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
	cr_assert(pt->enabled, "tracing resumes after a snapshot");
	cr_assert_geq(w.fake.disables, 1);

	/* Then 5000 more bytes: the second snapshot is exactly those. */
	fake_kernel_trace(pt, pt_bytes + first, 5000);
	cr_assert_eq(rv_pt_engine_stop(e, true, &err), 0, "%s", err.message);
	cr_assert(!pt->enabled);
	rv_pt_engine_stats(e, &stats);
	cr_assert_eq(stats.snapshots, 2);
	cr_assert_eq(stats.aux_bytes, area + 5000);
	rv_pt_engine_free(e);
	world_finish(&w);

	read_back(w.capture, &rb);
	cr_assert_eq(rb.types[0], RV_PERF_RECORD_TIME_CONV, "TIME_CONV comes first");
	cr_assert_eq(rb.types[1], RV_PERF_RECORD_AUXTRACE_INFO, "then AUXTRACE_INFO");
	cr_assert_eq(rb.types[2], PERF_RECORD_COMM, "then the synthesized thread");
	cr_assert_eq(rb.types[3], PERF_RECORD_MMAP2, "and its executable mappings");
	cr_assert_eq(rb.types[4], PERF_RECORD_MMAP2);
	cr_assert_eq(rb.types[5], RV_PERF_RECORD_FINISHED_ROUND);
	size_t itrace = find_type(&rb, PERF_RECORD_ITRACE_START, 0);
	size_t aux = find_type(&rb, PERF_RECORD_AUX, 0);
	size_t auxtrace = find_type(&rb, RV_PERF_RECORD_AUXTRACE, 0);
	cr_assert(itrace < aux && aux < auxtrace && auxtrace != SIZE_MAX,
		  "sideband, then the AUX record, then the trace");
	cr_assert_eq(rb.nr_aux, 2);
	cr_assert_eq(rb.aux_size[0], area);
	cr_assert_eq(memcmp(rb.aux[0], pt_bytes + first - area, area), 0,
		     "the first snapshot is the newest 16 KiB of the trace");
	cr_assert_eq(rb.aux_offset[0] % area, (first - area) % area);
	cr_assert_eq(rb.aux_size[1], 5000);
	cr_assert_eq(memcmp(rb.aux[1], pt_bytes + first, 5000), 0,
		     "the second snapshot is what came after the first");
	cr_assert_eq(rb.aux_offset[1], rb.aux_offset[0] + area);
	free_readback(&rb);

	/* The AUXTRACE_INFO says snapshot mode, per-thread, and the PMU's ratios. */
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	cr_assert_eq(rv_perf_reader_open(&r, w.capture, &err), 0, "%s", err.message);
	bool seen = false;
	while (rv_perf_reader_next(r, &rec, &err) == 1) {
		struct rv_intel_pt_info info;
		struct rv_perf_time_conv tc;

		if (rec.header->type == RV_PERF_RECORD_TIME_CONV) {
			cr_assert_eq(rv_perf_time_conv_parse(rec.header, &tc, &err), 0);
			cr_assert_eq(tc.time_shift, 10);
			cr_assert_eq(tc.time_mult, 1500);
			cr_assert_eq(tc.time_zero, 123456789);
			cr_assert(tc.cap_user_time_zero);
		}
		if (rec.header->type != RV_PERF_RECORD_AUXTRACE_INFO)
			continue;
		cr_assert_eq(rv_intel_pt_info_parse(rec.header, &info, &err), 0);
		cr_assert_eq(info.pmu_type, PT_TYPE);
		cr_assert_eq(info.snapshot_mode, 1);
		cr_assert_eq(info.per_cpu_mmaps, 0);
		cr_assert_eq(info.time_mult, 1500);
		cr_assert_eq(info.tsc_ctc_ratio_n, 100);
		cr_assert_eq(info.max_non_turbo_ratio, 24);
		seen = true;
	}
	cr_assert(seen);
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 2);
	cr_assert_eq(rv_perf_reader_attr(r, 0)->attr.type, PT_TYPE);
	rv_perf_reader_free(r);
	world_destroy(&w);
	free(pt_bytes);
}

Test(pt_engine, full_mode_drains_every_byte_once)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;
	struct readback rb;
	size_t pt_size;
	uint8_t *pt_bytes = real_pt(&pt_size);
	const uint64_t area = 8192;

	world_init(&w, RV_PT_FULL, area);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	struct fake_event *pt = &w.fake.ev[0];
	struct perf_event_mmap_page *pg = pt->ring;
	cr_assert_eq(pt->aux_prot, PROT_READ | PROT_WRITE, "full mode maps the AUX area writable");
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);

	/* Uneven pieces, each as much as the hardware may write before the
	 * reader frees room, crossing the end of the area many times. */
	size_t done = 0, chunks[] = { 100, 8192, 3000, 5000, 7777, 1, 8000, 4096 };
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		fake_kernel_trace(pt, pt_bytes + done, chunks[i]);
		done += chunks[i];
		cr_assert_eq(rv_pt_engine_poll(e, 0, &err), 0, "%s", err.message);
		cr_assert_eq(pg->aux_tail, done, "aux_tail follows what was drained");
	}
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_free(e);
	world_finish(&w);

	read_back(w.capture, &rb);
	/* AUXTRACE sizes count the zero padding to 8 bytes (PT's PAD packets),
	 * as perf writes them; offsets count the trace only. */
	uint64_t at = 0;
	for (size_t i = 0; i < rb.nr_aux; i++) {
		uint64_t end = i + 1 < rb.nr_aux ? rb.aux_offset[i + 1] : done;
		uint64_t len = end - at;

		cr_assert_eq(rb.aux_offset[i], at, "piece %zu starts where the last ended", i);
		cr_assert_eq(rb.aux_size[i], (len + 7) & ~7ull, "piece %zu's size", i);
		cr_assert_eq(memcmp(rb.aux[i], pt_bytes + at, len), 0, "piece %zu differs", i);
		for (uint64_t k = len; k < rb.aux_size[i]; k++)
			cr_assert_eq(rb.aux[i][k], 0, "piece %zu's padding", i);
		at = end;
	}
	cr_assert_eq(at, done, "every byte once: %llu of %zu", (unsigned long long)at, done);
	cr_assert_eq(rb.nr_aux, sizeof(chunks) / sizeof(chunks[0]));
	free_readback(&rb);
	world_destroy(&w);
	free(pt_bytes);
}

/* --full-execution's capture flushed as it grows (perf_data.h): after every
 * drain and flush the file holds every byte of trace drained so far, in
 * AUXTRACE records larger than a flush's chunk. */
Test(pt_engine, full_mode_flushed_as_it_grows_reads_back_after_every_flush)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;
	struct rv_perf_meta meta = { .clockid = -1, .cpuid = "GenuineIntel,6,140,1" };
	size_t pt_size, done = 0;
	uint8_t *pt_bytes = real_pt(&pt_size);
	const uint64_t area = 8192;
	size_t chunks[] = { 100, 8192, 3000, 5000, 7777, 1, 4096 };

	world_init(&w, RV_PT_FULL, area);
	cr_assert_eq(rv_perf_writer_flush_as_it_grows(w.writer, &meta, 4096, 0, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		struct readback rb;
		uint64_t at = 0;

		cr_assert_leq(done + chunks[i], pt_size, "%zu + %zu of %zu", done, chunks[i],
			      pt_size);
		fake_kernel_trace(&w.fake.ev[0], pt_bytes + done, chunks[i]);
		done += chunks[i];
		cr_assert_eq(rv_pt_engine_poll(e, 0, &err), 0, "%s", err.message);
		cr_assert_eq(rv_perf_writer_flush(w.writer, &err), 0, "%s", err.message);
		read_back_as(w.capture, &rb, true);
		for (size_t k = 0; k < rb.nr_aux; k++) {
			cr_assert_eq(rb.aux_offset[k], at, "after flush %zu, piece %zu", i, k);
			cr_assert_eq(
				memcmp(rb.aux[k], pt_bytes + at,
				       k + 1 < rb.nr_aux ? rb.aux_offset[k + 1] - at : done - at),
				0, "after flush %zu, piece %zu differs", i, k);
			at = k + 1 < rb.nr_aux ? rb.aux_offset[k + 1] : done;
		}
		cr_assert_eq(at, done, "after flush %zu: %llu bytes of trace of %zu", i,
			     (unsigned long long)at, done);
		free_readback(&rb);
	}
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_free(e);
	world_finish(&w);
	{
		struct readback rb;

		read_back(w.capture, &rb);
		cr_assert_eq(rb.nr_aux, sizeof(chunks) / sizeof(chunks[0]));
		free_readback(&rb);
	}
	world_destroy(&w);
	free(pt_bytes);
}

Test(pt_engine, truncated_aux_records_are_counted)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;
	struct rv_pt_record_stats stats;

	world_init(&w, RV_PT_FULL, 8192);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	struct fake_event *pt = &w.fake.ev[0];
	kernel_aux_record(&w, pt, 0, 4096, 0);
	kernel_aux_record(&w, pt, 4096, 4096, PERF_AUX_FLAG_TRUNCATED);
	kernel_aux_record(&w, pt, 8192, 100, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL);
	/* LOST: header, id, count, then the trailer {pid,tid}{time}{identifier}. */
	struct {
		struct perf_event_header header;
		uint64_t id, lost, trailer[3];
	} lost = { .header = { .type = PERF_RECORD_LOST, .size = sizeof(lost) },
		   .id = pt->id,
		   .lost = 7 };
	fake_kernel_record(pt, &lost);
	cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
	rv_pt_engine_stats(e, &stats);
	cr_assert_eq(stats.truncated, 2);
	cr_assert_eq(stats.lost_records, 7);
	cr_assert_eq(stats.sideband_records, 4);
	rv_pt_engine_free(e);
	world_destroy(&w);
}

struct attached {
	int fds[4];
	size_t nr;
};

static int record_attach(void *ctx, int perf_fd, size_t index, struct rv_error *err)
{
	struct attached *a = ctx;

	cr_assert_eq(index, 0);
	a->fds[a->nr++] = perf_fd;
	return 0;
}

static void open_fails(int error, bool aux_action, const char *expect)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e = NULL;

	world_init(&w, RV_PT_SNAPSHOT, 16384);
	if (aux_action) {
		uint32_t start_paused = 1;

		cr_assert_geq(w.pt.size, 120);
		memcpy((uint8_t *)&w.pt + 116, &start_paused, sizeof(start_paused));
	}
	w.fake.fail_errno = error;
	w.fake.fail_at = 0;
	int ret = rv_pt_engine_open(&e, &w.config, &err);
	cr_assert_eq(ret, -error);
	cr_assert_null(e);
	cr_assert(strstr(err.message, expect), "message '%s' lacks '%s'", err.message, expect);
	for (int i = 0; i < w.fake.nr; i++)
		cr_assert(!w.fake.ev[i].open, "event %d left open", i);
	world_destroy(&w);
}

Test(pt_engine, open_errors_say_what_to_do)
{
	open_fails(EACCES, false, "perf_event_paranoid");
	open_fails(EPERM, false, "run rearview as root");
	open_fails(EINVAL, true, "Linux 6.13");
	open_fails(EOPNOTSUPP, false, "does not support");
	open_fails(EBUSY, false, "busy");
	open_fails(ENOENT, false, "--backend sample");
}

Test(pt_engine, a_failing_sibling_closes_everything)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e = NULL;

	world_init(&w, RV_PT_SNAPSHOT, 16384);
	w.sib = (struct perf_event_attr){ .type = 8,
					  .size = sizeof(w.sib),
					  .sample_period = 1,
					  .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_AUX,
					  .aux_sample_size = 4096 };
	struct rv_pt_sibling sib = { .attr = &w.sib, .name = "stop" };
	w.config.siblings = &sib;
	w.config.nr_siblings = 1;
	w.config.attach = NULL;
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), -EINVAL, "no attach callback");
	struct attached att = { 0 };
	w.config.attach = record_attach;
	w.config.attach_ctx = &att;
	w.fake.fail_errno = EINVAL;
	w.fake.fail_at = 1; /* the sibling */
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), -EINVAL);
	cr_assert(strstr(err.message, "PERF_SAMPLE_AUX"), "%s", err.message);
	for (int i = 0; i < w.fake.nr; i++)
		cr_assert(!w.fake.ev[i].open, "event %d left open", i);
	world_destroy(&w);
}

Test(pt_engine, siblings_join_the_group_and_their_aux_samples_are_kept)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;
	struct rv_pt_record_stats stats;
	struct attached att = { 0 };

	world_init(&w, RV_PT_SNAPSHOT, 16384);
	w.sib = (struct perf_event_attr){ .type = 8,
					  .size = sizeof(w.sib),
					  .sample_period = 1,
					  .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
							 PERF_SAMPLE_AUX,
					  .sample_id_all = 1,
					  .aux_sample_size = 4096 };
	struct rv_pt_sibling sib = { .attr = &w.sib, .name = "probe:stop" };
	w.config.siblings = &sib;
	w.config.nr_siblings = 1;
	w.config.attach = record_attach;
	w.config.attach_ctx = &att;
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	struct fake_event *pt = &w.fake.ev[0], *s = &w.fake.ev[1];
	cr_assert_eq(s->group_fd, FAKE_FD0, "the sibling is in the PT event's group");
	cr_assert_eq(att.nr, 1);
	cr_assert_eq(att.fds[0], FAKE_FD0 + 1);
	cr_assert_eq(s->output_fd, FAKE_FD0, "its samples go to the PT event's ring");
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);

	/* An in-kernel snapshot: {id}{pid,tid}{size}{data}. */
	uint64_t sample[2 + 1 + 1 + 1 + 64];
	struct perf_event_header *h = (void *)sample;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(8 * (1 + 1 + 1 + 1 + 64));
	sample[1] = s->id;
	sample[2] = 4242ull | 4242ull << 32;
	sample[3] = 512;
	memset(&sample[4], 0x99, 512);
	fake_kernel_record(pt, sample);
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_stats(e, &stats);
	cr_assert_eq(stats.aux_samples, 1);
	cr_assert_eq(stats.aux_sample_bytes, 512);
	rv_pt_engine_free(e);
	world_finish(&w);

	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	bool seen = false;
	cr_assert_eq(rv_perf_reader_open(&r, w.capture, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_reader_nr_attrs(r), 3);
	while (rv_perf_reader_next(r, &rec, &err) == 1) {
		struct rv_perf_sample smp;

		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &smp, &err), 0, "%s",
			     err.message);
		cr_assert_eq(smp.aux_size, 512);
		cr_assert_eq(smp.tid, 4242);
		cr_assert_str_eq(smp.attr->name, "probe:stop");
		seen = true;
	}
	cr_assert(seen, "the AUX sample is in the capture as the kernel wrote it");
	rv_perf_reader_free(r);
	world_destroy(&w);
}

Test(pt_engine, bad_sizes_are_refused)
{
	struct world w;
	struct rv_error err = { 0 };
	struct rv_pt_engine *e;

	world_init(&w, RV_PT_SNAPSHOT, 3 * 4096);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), -EINVAL);
	cr_assert(strstr(err.message, "power-of-two"), "%s", err.message);
	w.config.aux_bytes = 16384;
	w.config.data_pages = 3;
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), -EINVAL);
	cr_assert_eq(w.fake.nr, 0, "nothing opened");
	world_destroy(&w);
}

Test(pt_engine, kernel_files_are_private_copies)
{
	struct world w;
	struct rv_error err = { 0 };
	char path[256];
	struct stat st;

	world_init(&w, RV_PT_SNAPSHOT, 16384);
	snprintf(path, sizeof(path), "%s/proc/kallsyms", w.dir);
	fake_write_text(path, "ffffffff81000000 T _text\nffffffff81001000 T _stext\n"
			      "ffffffff81002000 T start_kernel\nffffffff81003000 T _etext\n");
	snprintf(path, sizeof(path), "%s/proc/modules", w.dir);
	fake_write_text(path, "kvm 1000 0 - Live 0xffffffffc0000000\n");

	/* A kcore with the kernel's text in one segment and unrelated memory
	 * in another: only the text between _stext and _etext is kept. */
	Elf64_Ehdr eh = { .e_type = ET_CORE,
			  .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT,
			  .e_phoff = sizeof(Elf64_Ehdr),
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phnum = 2 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	Elf64_Phdr ph[2] = {
		{ .p_type = PT_LOAD,
		  .p_offset = 4096,
		  .p_vaddr = 0xffffffff81000000,
		  .p_filesz = 0x4000,
		  .p_memsz = 0x4000 },
		{ .p_type = PT_LOAD,
		  .p_offset = 4096 + 0x4000,
		  .p_vaddr = 0xffff888000000000,
		  .p_filesz = 0x1000,
		  .p_memsz = 0x1000 },
	};
	snprintf(path, sizeof(path), "%s/proc/kcore", w.dir);
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(ph, sizeof(ph), 1, f);
	fseek(f, 4096, SEEK_SET);
	for (int i = 0; i < 0x5000; i++)
		fputc(i / 4096 + 1, f);
	fclose(f);

	cr_assert_eq(rv_pt_engine_copy_kernel_files(w.dir, w.dir, &err), 0, "%s", err.message);
	static const char *const names[] = { "kallsyms", "modules", "kcore" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/kcore_dir/%s", w.dir, names[i]);
		cr_assert_eq(stat(path, &st), 0, "%s missing", path);
		cr_assert_eq(st.st_mode & 0777, 0600, "%s is not private", path);
	}
	snprintf(path, sizeof(path), "%s/kcore_dir/kcore", w.dir);
	f = fopen(path, "rb");
	cr_assert_not_null(f);
	Elf64_Ehdr oh;
	Elf64_Phdr oph;
	cr_assert_eq(fread(&oh, sizeof(oh), 1, f), 1);
	cr_assert_eq(oh.e_phnum, 1);
	cr_assert_eq(fread(&oph, sizeof(oph), 1, f), 1);
	cr_assert_eq(oph.p_vaddr, 0xffffffff81001000);
	cr_assert_eq(oph.p_filesz, 0x2000);
	fseek(f, (long)oph.p_offset, SEEK_SET);
	cr_assert_eq(fgetc(f), 2, "the text's bytes, from its second page");
	fclose(f);
	world_destroy(&w);
}

/* ---- pausing and resuming (Linux 6.13's aux_pause, as fake_kernel.h models it) ---- */

static int attach_none(void *ctx, int perf_fd, size_t index, struct rv_error *err)
{
	return 0;
}

/* The trigger's uprobe (here a software event: the fake does not care) with
 * aux_pause, and the resume sibling, in world w's PT group. */
static void add_pause_and_resume(struct world *w, struct perf_event_attr *resume, bool inherit)
{
	static struct rv_pt_sibling trigger;

	w->sib = (struct perf_event_attr){ .type = PERF_TYPE_SOFTWARE,
					   .size = sizeof(w->sib),
					   .config = PERF_COUNT_SW_DUMMY,
					   .sample_period = 1,
					   .sample_type = RV_PT_SAMPLE_TYPE,
					   .sample_id_all = 1,
					   .inherit = inherit };
	rv_attr_set_aux_action(&w->sib, RV_AUX_PAUSE);
	trigger = (struct rv_pt_sibling){ .attr = &w->sib, .name = "uprobe:trigger" };
	w->config.siblings = &trigger;
	w->config.nr_siblings = 1;
	w->config.attach = attach_none;
	rv_pt_resume_attr(resume, RV_SCOPE_USER, inherit);
	w->config.resume_attr = resume;
}

Test(pt_engine, a_paused_pt_is_read_by_disabling_and_resumes_only_when_armed)
{
	struct world w;
	struct perf_event_attr resume;
	struct rv_pt_engine *e;
	struct rv_error err = { 0 };
	struct rv_pt_record_stats st;
	struct rv_pt_resume r;
	uint8_t bytes[1000];
	struct fake_event *pt, *trig, *res;
	struct perf_event_mmap_page *pg;

	world_init(&w, RV_PT_SNAPSHOT, 65536);
	add_pause_and_resume(&w, &resume, false);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	pt = &w.fake.ev[0];
	trig = &w.fake.ev[1];
	res = &w.fake.ev[2];
	pg = pt->ring;
	cr_assert(pt->enabled && trig->enabled && !res->enabled,
		  "the resume event stays off when the group is enabled");
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7 + 1);

	/* snapshot mode: the hardware's position is not published as it goes */
	cr_assert_eq(fake_kernel_trace(pt, bytes, sizeof(bytes)), sizeof(bytes));
	cr_assert_eq(pg->aux_head, 0);
	/* the trigger's overflow pauses; a pause publishes nothing */
	cr_assert(fake_kernel_overflow(&w.fake, FAKE_FD0 + 1, w.tid, 5000));
	cr_assert(pt->paused);
	cr_assert_eq(pg->aux_head, 0);
	cr_assert_eq(fake_kernel_trace(pt, bytes, 100), 0, "paused: nothing written");
	/* the copy: disabling publishes aux_head; re-enabled, PT stays paused */
	cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
	cr_assert_eq(pg->aux_head, sizeof(bytes));
	cr_assert(pt->enabled && pt->paused);
	rv_pt_engine_stats(e, &st);
	cr_assert_eq(st.aux_bytes, sizeof(bytes));
	cr_assert_eq(st.snapshots, 1);
	/* DISABLE then ENABLE by hand: still paused (pt_config_start) */
	cr_assert_eq(w.ops.ioctl(w.ops.ctx, FAKE_FD0, PERF_EVENT_IOC_DISABLE, 0), 0);
	cr_assert_eq(w.ops.ioctl(w.ops.ctx, FAKE_FD0, PERF_EVENT_IOC_ENABLE, 0), 0);
	cr_assert(pt->paused);
	cr_assert_eq(fake_kernel_trace(pt, bytes, 100), 0);
	/* the resume event fires only once armed, once */
	cr_assert(!fake_kernel_overflow(&w.fake, FAKE_FD0 + 2, w.tid, 6000));
	cr_assert_eq(rv_pt_engine_resume(e, 0, w.tid, &err), 0, "%s", err.message);
	cr_assert_eq(w.fake.refreshes, 1);
	cr_assert(res->enabled);
	cr_assert(!rv_pt_engine_take_resume(e, &r), "nothing until a drain sees it");
	cr_assert(fake_kernel_overflow(&w.fake, FAKE_FD0 + 2, w.tid, 7000));
	cr_assert(!pt->paused && !res->enabled, "resumed, and the limit disabled it");
	cr_assert(!fake_kernel_overflow(&w.fake, FAKE_FD0 + 2, w.tid, 8000));
	cr_assert_eq(w.fake.resumes, 1);
	cr_assert_eq(fake_kernel_trace(pt, bytes, 100), 100, "tracing again");
	cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
	cr_assert(rv_pt_engine_take_resume(e, &r));
	cr_assert_eq(r.slot, 0);
	cr_assert_eq(r.tid, w.tid);
	cr_assert_eq(r.time, 7000);
	cr_assert(!rv_pt_engine_take_resume(e, &r));
	rv_pt_engine_stats(e, &st);
	cr_assert_eq(st.resume_samples, 1);

	/* a stopped group's siblings do not fire */
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	cr_assert(!fake_kernel_overflow(&w.fake, FAKE_FD0 + 1, w.tid, 9000));
	cr_assert(!pt->paused);
	rv_pt_engine_free(e);
	world_finish(&w);
	world_destroy(&w);
}

/* Per CPU, the group is inherited: the kernel refuses PERF_EVENT_IOC_REFRESH
 * (_perf_event_refresh), so the engine enables the resume event and
 * disables it at the sample of the thread that was paused. (The fake has
 * one event per CPU, not one per inherited thread.) */
Test(pt_engine, an_inherited_group_is_resumed_by_enabling_until_the_thread_fires)
{
	static const int cpus[] = { 0, 1 };
	struct world w;
	struct perf_event_attr resume;
	struct rv_pt_engine *e;
	struct rv_error err = { 0 };
	struct rv_pt_resume r;
	struct fake_event *pt1, *res1;
	int res1_fd = -1;

	world_init(&w, RV_PT_SNAPSHOT, 65536);
	w.pt.inherit = 1;
	w.sb.inherit = 1;
	w.config.tids = NULL;
	w.config.nr_tids = 0;
	w.config.cpus = cpus;
	w.config.nr_cpus = 2;
	w.config.cpu_pid = 4242;
	add_pause_and_resume(&w, &resume, true);
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_slot_of(e, 4243, 1), 1);
	pt1 = fake_kernel_event(&w.fake, rv_pt_engine_pt_fd(e, 1));
	for (int i = 0; i < w.fake.nr; i++)
		if (w.fake.ev[i].cpu == 1 && rv_attr_aux_resume(&w.fake.ev[i].attr))
			res1_fd = FAKE_FD0 + i;
	cr_assert_geq(res1_fd, 0);
	res1 = fake_kernel_event(&w.fake, res1_fd);
	cr_assert_eq(w.ops.ioctl(w.ops.ctx, res1_fd, PERF_EVENT_IOC_REFRESH, 1), -EINVAL,
		     "the kernel refuses to refresh an inherited event");

	/* thread 4243 hits the trigger on CPU 1 */
	cr_assert(fake_kernel_overflow(&w.fake, rv_pt_engine_pt_fd(e, 1) + 1, 4243, 100));
	cr_assert(pt1->paused);
	cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_resume(e, 1, 4243, &err), 0, "%s", err.message);
	cr_assert_eq(w.fake.refreshes, 0);
	cr_assert(res1->enabled);
	/* another thread's overflow on that CPU: not the paused one's */
	cr_assert(fake_kernel_overflow(&w.fake, res1_fd, 4244, 200));
	cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
	cr_assert(!rv_pt_engine_take_resume(e, &r));
	cr_assert(res1->enabled, "still armed for thread 4243");
	cr_assert(fake_kernel_overflow(&w.fake, res1_fd, 4243, 300));
	cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
	cr_assert(rv_pt_engine_take_resume(e, &r));
	cr_assert_eq(r.slot, 1);
	cr_assert_eq(r.tid, 4243);
	cr_assert_eq(r.time, 300);
	cr_assert(!res1->enabled, "disabled by the engine once the thread fired");

	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_free(e);
	world_finish(&w);
	world_destroy(&w);
}

/* --min-duration on the simulated kernel: PT opens paused, START (aux_resume)
 * and STOP (aux_pause) are the gate's uprobes; the gate's decisions are
 * played by the test (a hit it refuses is no overflow). A fast window is
 * dropped (no copy: the next START resumes over it), a slow one is copied
 * with what came since the last copy; while the copy is held, a START is
 * refused and PT stays paused, so the copy ends at the slow window's STOP.
 * Had that START fired (no hold), PT would have run on into the copy. */
static uint64_t window(struct world *w, int start_fd, int stop_fd, const uint8_t *bytes, size_t n)
{
	struct fake_event *pt = &w->fake.ev[0];
	size_t written;

	cr_assert(fake_kernel_overflow(&w->fake, start_fd, w->tid, 1));
	cr_assert(!pt->paused, "START resumed");
	written = fake_kernel_trace(pt, bytes, n);
	cr_assert(fake_kernel_overflow(&w->fake, stop_fd, w->tid, 2));
	cr_assert(pt->paused, "STOP paused");
	return written;
}

static void min_duration_run(bool hold, uint64_t *copied)
{
	struct world w;
	static struct rv_pt_sibling sibs[2];
	struct perf_event_attr start, stop;
	struct rv_pt_engine *e;
	struct rv_error err = { 0 };
	struct rv_pt_record_stats st;
	uint8_t fast[300], slow[2000], after[500];
	struct fake_event *pt;

	world_init(&w, RV_PT_SNAPSHOT, 65536);
	rv_attr_set_aux_action(&w.pt, RV_AUX_START_PAUSED);
	start = (struct perf_event_attr){ .type = PERF_TYPE_SOFTWARE,
					  .size = sizeof(start),
					  .config = PERF_COUNT_SW_DUMMY,
					  .sample_period = 1,
					  .sample_id_all = 1 };
	stop = start;
	rv_attr_set_aux_action(&start, RV_AUX_RESUME);
	rv_attr_set_aux_action(&stop, RV_AUX_PAUSE);
	sibs[0] = (struct rv_pt_sibling){ .attr = &start, .name = "uprobe:start" };
	sibs[1] = (struct rv_pt_sibling){ .attr = &stop, .name = "uprobe:stop" };
	w.config.siblings = sibs;
	w.config.nr_siblings = 2;
	w.config.attach = attach_none;
	memset(fast, 0x11, sizeof(fast));
	memset(slow, 0x22, sizeof(slow));
	memset(after, 0x33, sizeof(after));
	cr_assert_eq(rv_pt_engine_open(&e, &w.config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	pt = &w.fake.ev[0];
	cr_assert(pt->enabled && pt->paused, "aux_start_paused: nothing before a window");
	cr_assert_eq(fake_kernel_trace(pt, after, 100), 0);

	/* a fast window: dropped, nothing copied */
	cr_assert_eq(window(&w, FAKE_FD0 + 1, FAKE_FD0 + 2, fast, sizeof(fast)), sizeof(fast));
	/* a slow one: the gate keeps it; another thread's START comes before
	 * the copy */
	cr_assert_eq(window(&w, FAKE_FD0 + 1, FAKE_FD0 + 2, slow, sizeof(slow)), sizeof(slow));
	if (!hold)
		cr_assert(fake_kernel_overflow(&w.fake, FAKE_FD0 + 1, w.tid + 1, 3));
	cr_assert_eq(fake_kernel_trace(pt, after, sizeof(after)), hold ? 0 : sizeof(after));
	cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
	rv_pt_engine_stats(e, &st);
	*copied = st.aux_bytes;
	cr_assert_eq(st.snapshots, 1);
	if (hold) {
		/* released: the next window runs and is copied alone */
		cr_assert(pt->paused, "still paused after the copy");
		cr_assert_eq(window(&w, FAKE_FD0 + 1, FAKE_FD0 + 2, slow, sizeof(slow)),
			     sizeof(slow));
		cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
		rv_pt_engine_stats(e, &st);
		cr_assert_eq(st.snapshots, 2);
		cr_assert_eq(st.aux_bytes - *copied, sizeof(slow), "only what is new");
	}
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_free(e);
	world_finish(&w);
	world_destroy(&w);
}

Test(pt_engine, min_duration_copies_end_at_the_stop_while_the_gate_holds_starts_off)
{
	uint64_t held, raced;

	min_duration_run(true, &held);
	cr_assert_eq(held, 300 + 2000, "the fast and the slow window, nothing after the STOP");
	min_duration_run(false, &raced);
	cr_assert_eq(raced, 300 + 2000 + 500, "without the hold, PT ran on into the copy");
}
