/* test_decoder.c: the one way into decoding (decode/decoder.h): a perf.data
 * is opened once and told apart by what it declares. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "decode/decoder.h"
#include "functions.h"

/* A perf.data at a new path holding one attribute and no records. */
static void capture(char *path, size_t size, const struct perf_event_attr *attr, const char *name)
{
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	uint64_t id = 1;
	int fd;

	snprintf(path, size, "/tmp/rv-decoder-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&w, path, false, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, attr, name, &id, 1, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
}

static int open_kind(const char *path, enum rv_capture_kind *kind, struct rv_error *err)
{
	struct rv_decoder_options o = { .path = path };
	struct rv_decoder *d;
	int ret = rv_decoder_open(&d, &o, err);

	if (!ret) {
		*kind = rv_decoder_kind(d);
		rv_decoder_free(d);
	}
	return ret;
}

Test(decoder, a_sampling_event_makes_a_capture_of_samples)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						       PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN };
	struct rv_error err = { 0 };
	enum rv_capture_kind kind = RV_CAPTURE_AUTO;
	char path[64];

	capture(path, sizeof(path), &attr, "cpu-clock");
	cr_assert_eq(open_kind(path, &kind, &err), 0, "%s", err.message);
	cr_assert_eq(kind, RV_CAPTURE_SAMPLES);
	unlink(path);
}

Test(decoder, the_function_tracers_event_makes_a_function_capture)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_BPF_OUTPUT,
					.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
						       PERF_SAMPLE_TIME | PERF_SAMPLE_RAW };
	struct rv_error err = { 0 };
	enum rv_capture_kind kind = RV_CAPTURE_AUTO;
	char path[64];

	capture(path, sizeof(path), &attr, RV_FN_EVENT_NAME);
	cr_assert_eq(open_kind(path, &kind, &err), 0, "%s", err.message);
	cr_assert_eq(kind, RV_CAPTURE_FUNCTIONS);
	unlink(path);
}

Test(decoder, an_intel_pt_event_is_read_as_pt_and_its_missing_trace_said)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = 8, .sample_type = 0 };
	struct rv_error err = { 0 };
	enum rv_capture_kind kind = RV_CAPTURE_AUTO;
	char path[64];

	capture(path, sizeof(path), &attr, "intel_pt//u");
	cr_assert_lt(open_kind(path, &kind, &err), 0);
	cr_assert(strstr(err.message, "no Intel PT trace"), "%s", err.message);
	unlink(path);
}

Test(decoder, a_capture_of_sideband_alone_is_refused_in_words)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_DUMMY,
					.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						       PERF_SAMPLE_TIME };
	struct rv_error err = { 0 };
	enum rv_capture_kind kind = RV_CAPTURE_AUTO;
	char path[64];

	capture(path, sizeof(path), &attr, "dummy:u");
	cr_assert_eq(open_kind(path, &kind, &err), -ENOTSUP);
	cr_assert(strstr(err.message, "nothing to decode"), "%s", err.message);
	cr_assert(strstr(err.message, path), "it names the file: %s", err.message);
	unlink(path);
}

Test(decoder, what_is_not_a_capture_is_an_error_naming_it)
{
	struct rv_error err = { 0 };
	enum rv_capture_kind kind;

	cr_assert_lt(open_kind("/nonexistent/perf.data", &kind, &err), 0);
	cr_assert(strstr(err.message, "/nonexistent/perf.data"), "%s", err.message);
}
