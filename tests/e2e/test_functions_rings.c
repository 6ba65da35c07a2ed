/* test_functions_rings.c: the function tracer's records on their way out,
 * live: losses counted once (a forced loss through a tiny ring: the run's
 * warning, `rearview decode --stats` and what the capture is short of agree
 * exactly), the default flight recorder keeping the newest records at 48
 * bytes each, and `perf script` showing every record of a kept capture. The
 * target (fncalls --only fib) counts its own calls. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/functions.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "harness.h"
#include "test_env.h"

/* A line's number after prefix in text ("count fib 465"); fails without one. */
static uint64_t value_after(const char *text, const char *prefix)
{
	const char *at = strstr(text, prefix);

	cr_assert_not_null(at, "no '%s' in:\n%s", prefix, text);
	return strtoull(at + strlen(prefix), NULL, 10);
}

/* The function records of a capture, and the losses its LOST records say. */
static void read_capture(const char *path, uint64_t *records, uint64_t *lost)
{
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	int ret;

	*records = *lost = 0;
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct rv_perf_sample s;
		uint64_t n;

		if (rec.header->type == PERF_RECORD_LOST_SAMPLES) {
			memcpy(&n, (const uint8_t *)rec.header + 8, sizeof(n));
			*lost += n;
			continue;
		}
		if (rec.header->type == PERF_RECORD_LOST) {
			memcpy(&n, (const uint8_t *)rec.header + 16, sizeof(n));
			*lost += n;
			continue;
		}
		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &s, &err), 0, "%s",
			     err.message);
		if (s.attr && s.attr->name && !strcmp(s.attr->name, RV_FN_EVENT_NAME)) {
			cr_assert_eq(s.raw_size, 52, "a 48-byte record, padded as the kernel pads");
			(*records)++;
		}
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	rv_perf_reader_free(r);
}

/* `rearview run -v --backend uprobe --functions fib OPTIONS --working-directory
 * DIR/capture -o DIR/t.fxt -- fncalls --only fib --fib N`, with the rings of
 * ring_bytes (NULL: the default). */
static void record_fib(const char *dir, const char *extra, const char *n, const char *ring_bytes,
		       struct proc_result *r)
{
	char capture[128], out[128];
	char *argv[24];
	size_t i = 0;

	snprintf(capture, sizeof(capture), "%s/capture", dir);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	argv[i++] = (char *)build_path("rearview");
	argv[i++] = "run";
	argv[i++] = "-v";
	argv[i++] = "--backend";
	argv[i++] = "uprobe";
	argv[i++] = "--functions";
	argv[i++] = "fib";
	if (extra) {
		argv[i++] = (char *)extra;
		if (!strcmp(extra, "--snapshot-size"))
			argv[i++] = "64K";
	}
	argv[i++] = "--working-directory";
	argv[i++] = capture;
	argv[i++] = "-o";
	argv[i++] = out;
	argv[i++] = "--";
	argv[i++] = (char *)build_path("tests/targets/fncalls");
	argv[i++] = "--only";
	argv[i++] = "fib";
	argv[i++] = "--fib";
	argv[i++] = (char *)n;
	argv[i] = NULL;
	cr_assert_lt(i, sizeof(argv) / sizeof(argv[0]));
	if (ring_bytes)
		setenv(RV_FN_RING_ENV, ring_bytes, 1);
	run_process(argv, 90, r);
	unsetenv(RV_FN_RING_ENV);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
}

/* A one-page ring holds 73 records: most of fib(20)'s 2 x 21,891 are lost,
 * and the run, the capture and decode --stats say how many, the same. */
Test(functions_rings, a_forced_loss_is_counted_once_and_everywhere_the_same, .timeout = 120)
{
	char dir[64], capture[128];
	struct proc_result r;
	uint64_t calls, records, lost_in_capture, warned, stats;
	char *out;
	int status;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	record_fib(dir, "--full-execution", "20", "4096", &r);
	calls = value_after(r.out, "count fib ");
	cr_assert_eq(calls, 21891);
	warned = value_after(r.err, "warning: ");
	cr_assert(strstr(r.err, "records were lost"), "%s", r.err);
	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	read_capture(capture, &records, &lost_in_capture);
	out = run_command(&status, NULL, "'%s' decode --stats '%s/capture' -o '%s/d.fxt' 2>&1",
			  build_path("rearview"), dir, dir);
	cr_assert_eq(status, 0, "%s", out);
	stats = value_after(out, "\nlost ");
	free(out);
	cr_assert_gt(warned, 0, "a one-page ring loses records: %s", r.err);
	cr_assert_lt(records, 2 * calls);
	cr_assert_eq(warned, 2 * calls - records, "the warning says what the capture is short of");
	cr_assert_eq(lost_in_capture, warned, "the capture's LOST records say the same");
	cr_assert_eq(stats, warned, "decode --stats says the same");
	cleanup_dir(dir);
}

/* A 64 KiB flight recorder holds 65536 / 48 = 1365 records: the capture has
 * exactly those, the newest, and what aged out makes up the rest. */
Test(functions_rings, the_flight_recorder_keeps_the_newest_records_at_48_bytes, .timeout = 120)
{
	char dir[64], capture[128];
	struct proc_result r;
	uint64_t calls, records, lost, kept, aged;
	const char *line;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	record_fib(dir, "--snapshot-size", "20", NULL, &r);
	calls = value_after(r.out, "count fib ");
	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	read_capture(capture, &records, &lost);
	cr_assert_eq(lost, 0, "%s", r.err);
	cr_assert_eq(records, 65536 / sizeof(struct rv_fn_record), "%s", r.err);
	line = strstr(r.err, "the flight recorder kept the last ");
	cr_assert_not_null(line, "-v says what aged out:\n%s", r.err);
	kept = value_after(line, "kept the last ");
	aged = value_after(line, " records (");
	cr_assert_eq(kept, records);
	cr_assert_eq(kept + aged, 2 * calls, "every record was kept or aged out");
	cleanup_dir(dir);
}

static size_t count_lines_with(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* perf shows every record as a bpf-output sample of the named event. */
Test(functions_rings, perf_script_shows_every_record, .timeout = 120)
{
	char dir[64];
	struct proc_result r;
	uint64_t calls;
	char *out;
	int status;

	require_root("function tracer");
	require_tool("perf", "linux-perf");
	make_test_dir(dir, sizeof(dir));
	record_fib(dir, "--full-execution", "12", NULL, &r);
	calls = value_after(r.out, "count fib ");
	cr_assert_eq(calls, 465);
	out = run_command(&status, NULL, "perf script -i '%s/capture/perf.data' 2>&1", dir);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_eq(count_lines_with(out, RV_FN_EVENT_NAME ":"), 2 * calls, "%s", out);
	cr_assert_eq(count_lines_with(out, "BPF output: 0000:"), 2 * calls, "%s", out);
	cr_assert_eq(count_lines_with(out, "fncalls "), 2 * calls, "each on the traced thread");
	free(out);
	cleanup_dir(dir);
}

/* The capture's first time as a reader would find it in a pass: the
 * earliest sample, or a window's begin (its mark's time less its length). */
static uint64_t scanned_first_time(const char *path, uint64_t *last)
{
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	uint64_t first = 0;

	*last = 0;
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while (rv_perf_reader_next(r, &rec, &err) == 1) {
		struct rv_perf_sample s;
		struct rv_mark mark;
		uint64_t t;

		if (rec.header->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(rv_perf_reader_parse_sample(r, rec.header, &s, &err), 0, "%s",
			     err.message);
		t = s.time;
		if (s.time > *last)
			*last = s.time;
		if (rv_sample_is_mark(&s) && !rv_mark_parse(&s, &mark, &err) &&
		    mark.kind == RV_MARK_WINDOW)
			t = mark.time - mark.duration_ns;
		if (!first || t < first)
			first = t;
	}
	rv_perf_reader_free(r);
	return first;
}

/* With --filter the windows' marks may begin before any record: the
 * recorder writes the capture's range (HEADER_SAMPLE_TIME) as a pass over
 * it would find it, and the decoder's first time is that, with no pass. */
Test(functions_rings, the_capture_knows_its_first_time, .timeout = 120)
{
	char dir[64], capture[128];
	struct proc_result r;
	struct rv_perf_reader *reader;
	struct rv_error err = { 0 };
	const uint64_t *range;
	uint64_t size = 0, first, last;
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "uprobe",
			 "--full-execution",
			 "--filter",
			 "window_start,window_stop",
			 "--working-directory",
			 capture,
			 "-o",
			 NULL,
			 "--",
			 (char *)build_path("tests/targets/fncalls"),
			 "--only",
			 "fib,windows",
			 "--windows",
			 "3",
			 NULL };
	char out[128];

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	snprintf(capture, sizeof(capture), "%s/capture", dir);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	argv[10] = out;
	run_process(argv, 90, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	snprintf(capture, sizeof(capture), "%s/capture/perf.data", dir);
	first = scanned_first_time(capture, &last);
	cr_assert_gt(first, 0);
	cr_assert_eq(rv_perf_reader_open(&reader, capture, &err), 0, "%s", err.message);
	range = rv_perf_reader_feature_data(reader, RV_FEAT_SAMPLE_TIME, &size);
	cr_assert_not_null(range, "the capture has HEADER_SAMPLE_TIME");
	cr_assert_geq(size, 16);
	cr_assert_eq(range[0], first, "the first time a pass finds");
	cr_assert_eq(range[1], last, "the last sample's time");
	cr_assert_eq(rv_marks_first_time(reader), first);
	rv_perf_reader_free(reader);
	cleanup_dir(dir);
}
