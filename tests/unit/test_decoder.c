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
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
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

/* ---- kernel scope ---- */

struct frames_seen {
	size_t samples, frames, kernel_frames;
};

static int count_frames(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct frames_seen *s = ctx;

	if (ev->kind != RV_EVENT_STACK_SAMPLE)
		return 0;
	s->samples++;
	s->frames += ev->stack.nr_frames;
	for (size_t i = 0; i < ev->stack.nr_frames; i++)
		s->kernel_frames += ev->stack.frames[i].kernel;
	return 0;
}

/* A PERF_RECORD_SAMPLE of IP, TID, TIME and CALLCHAIN. */
static void write_sample(struct rv_perf_writer *w, uint64_t time, const uint64_t *chain, size_t nr)
{
	uint64_t rec[32];
	struct perf_event_header *h = (void *)rec;
	struct rv_error err = { 0 };
	size_t n = 1;

	cr_assert_lt(nr + 5, 32);
	rec[n++] = chain[nr - 1] < PERF_CONTEXT_MAX ? chain[nr - 1] : 0x401000; /* ip */
	rec[n++] = 100ull << 32 | 100;						/* pid, tid */
	rec[n++] = time;
	rec[n++] = nr;
	for (size_t i = 0; i < nr; i++)
		rec[n++] = chain[i];
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(n * 8);
	cr_assert_eq(rv_perf_writer_write(w, h, &err), 0, "%s", err.message);
}

/* Without kernel scope a sample keeps its user frames, and one that is all
 * kernel (a kernel thread's) is dropped: no kernel address reaches the
 * trace. With it, all of them come. */
Test(decoder, kernel_frames_only_with_kernel_scope)
{
	static const uint64_t in_syscall[] = { PERF_CONTEXT_KERNEL,
					       0xffffffff81000010ull,
					       0xffffffff81000200ull,
					       PERF_CONTEXT_USER,
					       0x401010,
					       0x401100 };
	static const uint64_t kernel_only[] = { PERF_CONTEXT_KERNEL, 0xffffffff81000300ull };
	static const uint64_t user_only[] = { PERF_CONTEXT_USER, 0x401020, 0x401100 };
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_period = 100000,
					.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
						       PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN };
	struct rv_perf_writer *w;
	struct rv_error err = { 0 };
	uint64_t id = 1;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/rv-decoder-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", &id, 1, &err), 0, "%s",
		     err.message);
	write_sample(w, 1000, in_syscall, 6);
	write_sample(w, 2000, kernel_only, 2);
	write_sample(w, 3000, user_only, 3);
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	for (int kernel = 0; kernel < 2; kernel++) {
		struct rv_decoder_options o = { .path = path, .include_kernel = kernel };
		struct frames_seen seen = { 0 };
		struct rv_decoder *d;

		cr_assert_eq(rv_decoder_open(&d, &o, &err), 0, "%s", err.message);
		cr_assert_eq(rv_decoder_run(d, count_frames, &seen, &err), 0, "%s", err.message);
		rv_decoder_free(d);
		cr_assert_eq(seen.samples, kernel ? 3 : 2);
		cr_assert_eq(seen.frames, kernel ? 4 + 1 + 2 : 2 + 2);
		cr_assert_eq(seen.kernel_frames, kernel ? 3 : 0);
	}
	unlink(path);
}
