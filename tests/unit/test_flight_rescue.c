/* test_flight_rescue.c: a flight recorder kept in a file, read back as a
 * killed recorder leaves it (after every push, and with the push's entry
 * written but not yet counted), and a killed capture rebuilt from the ring
 * and the sideband flushed as it grows (record/flight_rescue.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "record/flight_recorder.h"
#include "record/flight_rescue.h"
#include "test_files.h"

struct fake_sample {
	struct perf_event_header header;
	uint32_t pid, tid; /* PERF_SAMPLE_TID */
	uint64_t time;	   /* PERF_SAMPLE_TIME */
	uint64_t fill[64];
};

static struct fake_sample sample(uint64_t serial, uint16_t size)
{
	struct fake_sample s;

	memset(&s, 0, sizeof(s));
	s.header.type = PERF_RECORD_SAMPLE;
	s.header.size = size;
	s.pid = s.tid = 77;
	s.time = 1000 + 10 * serial;
	for (size_t i = 0; i < (size_t)(size - 24) / 8; i++)
		s.fill[i] = serial;
	return s;
}

struct collected {
	uint64_t times[4096];
	size_t nr;
};

static int collect(void *ctx, const struct perf_event_header *rec)
{
	struct collected *c = ctx;
	const struct fake_sample *s = (const void *)rec;

	cr_assert_lt(c->nr, 4096);
	cr_assert_eq(rec->type, PERF_RECORD_SAMPLE);
	for (size_t i = 0; i < (rec->size - 24u) / 8; i++)
		cr_assert_eq(s->fill[i], (s->time - 1000) / 10, "a torn record was given");
	c->times[c->nr++] = s->time;
	return 0;
}

/* The ring's records, oldest first, from memory. */
static void in_memory(const struct rv_flight_recorder *fr, struct collected *c)
{
	size_t cursor = 0, visited = 0;
	const struct perf_event_header *h;

	c->nr = 0;
	while ((h = rv_flight_recorder_next(fr, &cursor, &visited)))
		c->times[c->nr++] = ((const struct fake_sample *)(const void *)h)->time;
}

static void copy_file(const char *from, const char *to)
{
	size_t size;
	void *data = read_whole(from, &size);
	FILE *f = fopen(to, "wb");

	cr_assert_not_null(data);
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, size, f), size);
	fclose(f);
	free(data);
}

Test(flight_rescue, a_ring_file_reads_back_as_a_killed_recorder_left_it)
{
	char dir[64], ring[128], torn[128];
	struct rv_flight_recorder fr;
	struct rv_error err = { 0 };
	struct stat st;

	make_temp_dir(dir, sizeof(dir), "rv-flight-file");
	snprintf(ring, sizeof(ring), "%s/flight.ring", dir);
	snprintf(torn, sizeof(torn), "%s/torn.ring", dir);
	umask(022);
	cr_assert_eq(rv_flight_recorder_init_file(&fr, 2048, ring), 0);
	cr_assert_eq(stat(ring, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	srand(11);
	for (uint64_t serial = 0; serial < 600; serial++) {
		struct fake_sample s = sample(serial, (uint16_t)(24 + 8 * (rand() % 40)));
		struct rv_flight_file_header before = *fr.file;
		struct collected want, got = { .nr = 0 }, partial = { .nr = 0 };

		rv_flight_recorder_push(&fr, &s.header);
		in_memory(&fr, &want);
		cr_assert_eq(rv_flight_file_read(ring, collect, &got, &err), 0, "%s", err.message);
		cr_assert_eq(got.nr, want.nr,
			     "after push %llu: %zu records of %zu (head %llu tail %llu count %llu)",
			     (unsigned long long)serial, got.nr, want.nr,
			     (unsigned long long)fr.head, (unsigned long long)fr.tail,
			     (unsigned long long)fr.count);
		cr_assert_eq(memcmp(got.times, want.times, want.nr * sizeof(want.times[0])), 0);

		/* killed with the new entry written, before tail counted it:
		 * the records before it, but those its room evicted */
		copy_file(ring, torn);
		{
			FILE *f = fopen(torn, "r+b");
			struct rv_flight_file_header h;

			cr_assert_not_null(f);
			cr_assert_eq(fread(&h, sizeof(h), 1, f), 1);
			/* head and count as the evictions left them */
			h.tail = before.tail;
			h.count = fr.count - 1;
			fseek(f, 0, SEEK_SET);
			cr_assert_eq(fwrite(&h, sizeof(h), 1, f), 1);
			fclose(f);
		}
		cr_assert_eq(rv_flight_file_read(torn, collect, &partial, &err), 0, "%s",
			     err.message);
		cr_assert_eq(partial.nr, want.nr - 1, "killed in push %llu: %zu records of %zu",
			     (unsigned long long)serial, partial.nr, want.nr - 1);
		cr_assert_eq(memcmp(partial.times, want.times, partial.nr * sizeof(want.times[0])),
			     0);
	}
	rv_flight_recorder_destroy(&fr);
	cr_assert_neq(access(ring, F_OK), 0, "the ring's file is removed with it");
	remove_tree(dir);
}

Test(flight_rescue, a_killed_capture_is_rebuilt_in_time_order)
{
	char dir[64], path[160];
	struct rv_flight_recorder fr;
	struct rv_perf_writer *rescue, *unfinished;
	struct rv_error err = { 0 };
	struct rv_flight_rescue_report report;
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
					.sample_id_all = 1 };
	const char *argv[] = { "rearview", "run", "--", "prog" };
	struct rv_perf_meta meta = { .argc = 4, .argv = argv, .clockid = -1 };
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	uint64_t last = 0, id = 5;
	size_t samples = 0, comms = 0;
	int got;

	make_temp_dir(dir, sizeof(dir), "rv-flight-rescue");
	/* what the recorder had when it was killed: an unfinished capture,
	 * the sideband flushed, the ring */
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_writer_open(&unfinished, path, &err), 0, "%s", err.message);
	snprintf(path, sizeof(path), "%s/%s", dir, RV_FLIGHT_RESCUE_FILE);
	cr_assert_eq(rv_perf_writer_open(&rescue, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_flush_as_it_grows(rescue, &meta, 0, 0, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_writer_add_attr(rescue, &attr, "cpu-clock", &id, 1, &err), 0);
	for (uint32_t i = 0; i < 10; i++) {
		struct {
			struct perf_event_header header;
			uint32_t pid, tid;
			char comm[16];
			uint32_t id_pid, id_tid;
			uint64_t id_time;
		} comm = { .header = { .type = PERF_RECORD_COMM, .size = sizeof(comm) },
			   .pid = 77,
			   .tid = 77,
			   .id_pid = 77,
			   .id_tid = 77,
			   .id_time = 1005 + 100 * i };

		snprintf(comm.comm, sizeof(comm.comm), "name%u", i);
		cr_assert_eq(rv_perf_writer_write(rescue, &comm.header, &err), 0, "%s",
			     err.message);
	}
	cr_assert_eq(rv_perf_writer_flush(rescue, &err), 0, "%s", err.message);
	snprintf(path, sizeof(path), "%s/%s", dir, RV_FLIGHT_RING_FILE);
	cr_assert_eq(rv_flight_recorder_init_file(&fr, 1 << 16, path), 0);
	for (uint64_t serial = 0; serial < 100; serial++) {
		struct fake_sample s = sample(serial, 24 + 8 * (serial % 5));

		rv_flight_recorder_push(&fr, &s.header);
	}
	/* SIGKILL: nothing more happens; the mappings and files stay */
	munmap(fr.file, fr.file_bytes);
	free(fr.path);

	/* DIR/perf.data names it as DIR does */
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_flight_rescue(path, &report, &err), 0, "%s", err.message);
	cr_assert(report.rescued);
	cr_assert_eq(report.samples, 100);
	cr_assert_eq(report.sideband, 10);
	cr_assert_eq(report.flushed.flushes, 1);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_str_eq(rv_perf_reader_attr(r, 0)->name, "cpu-clock");
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct rv_perf_sample s;
		struct rv_perf_sample_id sid;
		uint64_t time;

		if (rec.header->type == PERF_RECORD_SAMPLE) {
			cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &s, &err), 0);
			time = s.time;
			samples++;
		} else {
			cr_assert_eq(rec.header->type, PERF_RECORD_COMM);
			cr_assert_eq(rv_perf_reader_parse_sample_id(r, rec.header, &sid, &err), 0);
			time = sid.time;
			comms++;
		}
		cr_assert_geq(time, last, "records out of time order");
		last = time;
	}
	cr_assert_eq(got, 0, "the rebuilt capture is whole: %s", err.message);
	cr_assert_eq(samples, 100);
	cr_assert_eq(comms, 10);
	rv_perf_reader_free(r);
	snprintf(path, sizeof(path), "%s/%s", dir, RV_FLIGHT_RING_FILE);
	cr_assert_neq(access(path, F_OK), 0, "the ring's file is gone once rebuilt");
	/* a second decode finds an ordinary capture */
	cr_assert_eq(rv_flight_rescue(dir, &report, &err), 0, "%s", err.message);
	cr_assert_not(report.rescued);
	/* the writers a killed recorder never freed: their files are gone */
	rv_perf_writer_free(rescue);
	rv_perf_writer_free(unfinished);
	remove_tree(dir);
}
