/* test_decode_windows.c: --filter windows applied while decoding (issue 5).
 * On a kernel without aux_pause the PT engine records everything and writes
 * the gate's windows into the capture as marks; `rearview decode` must then
 * keep each thread's trace inside its windows only, end its stacks at each
 * window's end and draw the window around what ran in it.
 *
 * The capture is softpt's (genuine PT) of tests/pt/windows_pt, whose
 * outside_work only runs outside its request_begin..request_end windows. The
 * windows are the times of the request_begin and request_end calls as the
 * decoder itself times them (what the gate's uprobes would have seen), added
 * to a copy of the capture as marks. The trace must then hold one window span
 * per window, slow_work and fast_work only inside them, no outside_work, and
 * nothing outside a window at all; it must nest strictly (the FXT reader),
 * decode the same on one thread as on two, and the capture without marks must
 * still show outside_work (so that the checks can fail).
 *
 * Not here: the clock conversion of the gate's times (tests/unit/test_pt_windows.c).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "decode/pt_capture.h"
#include "harness.h"
#include "test_files.h"
#include "symbolize/symbolizer.h"

#define SOFTPT_TIMEOUT_S 240
#define DECODE_TIMEOUT_S 120
#define ROUNDS		 4
#define MAX_CALLS	 64
#define WINDOW_NAME	 "request_begin"
#define WINDOW_SPAN	 "[window " WINDOW_NAME "]"

/* The times the decoder gives the calls of request_begin and request_end. */
struct call_times {
	struct rv_symbolizer *symbolizer;
	uint32_t pid, tid;
	uint64_t begin[MAX_CALLS], end[MAX_CALLS];
	size_t nr_begin, nr_end;
};

static int collect_calls(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct call_times *ct = ctx;
	struct rv_symbol sym;

	(void)err;
	if (ev->kind != RV_EVENT_BRANCH || ev->branch.kind != RV_BRANCH_CALL || !ev->branch.to.ip)
		return 0;
	rv_symbolizer_lookup(ct->symbolizer, ev->pid, ev->branch.to.ip, &sym);
	if (!sym.known || sym.start != ev->branch.to.ip)
		return 0;
	if (!strcmp(sym.name, "request_begin") && ct->nr_begin < MAX_CALLS)
		ct->begin[ct->nr_begin++] = ev->time;
	else if (!strcmp(sym.name, "request_end") && ct->nr_end < MAX_CALLS)
		ct->end[ct->nr_end++] = ev->time;
	else
		return 0;
	ct->pid = ev->pid;
	ct->tid = ev->tid;
	return 0;
}

static void run_softpt(const char *dir)
{
	const char *target = build_path("tests/pt/windows_pt");
	struct proc_result *r = calloc(1, sizeof(*r));
	char rounds[16];

	cr_assert_not_null(r);
	cr_assert(file_exists(target),
		  "%s is not built: make it with `make %s` (windows_pt is in PT_STATIC, "
		  "mk/pt-targets.mk)",
		  target, target);
	cr_assert(file_exists(build_path("softpt")), "%s is not built", build_path("softpt"));
	snprintf(rounds, sizeof(rounds), "%d", ROUNDS);
	char *argv[] = { (char *)build_path("softpt"),
			 "-q",
			 "--timer-resolution",
			 "low",
			 "--psb-period",
			 "0",
			 "-o",
			 (char *)dir,
			 "--",
			 (char *)target,
			 rounds,
			 NULL };
	run_process(argv, SOFTPT_TIMEOUT_S, r);
	cr_assert_eq(r->exit_code, 0, "softpt failed (%d): %s", r->exit_code, r->err);
	cr_assert(strstr(r->out, "windows=4 slow=1 fast=3 outside=5"), "windows_pt printed: %s",
		  r->out);
	free(r);
}

static void call_times(const char *dir, struct call_times *ct)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_pt_capture_options co = { .path = dir, .jobs = 1 };
	struct rv_pt_capture *c = NULL;
	struct rv_pt_stats stats;
	struct rv_error err = { 0 };

	memset(ct, 0, sizeof(*ct));
	cr_assert_eq(rv_symbolizer_new(&ct->symbolizer, &so, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_capture_open(&c, &co, ct->symbolizer, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_capture_decode(c, collect_calls, ct, &stats, &err), 0, "%s",
		     err.message);
	rv_pt_capture_free(c);
	rv_symbolizer_free(ct->symbolizer);
	ct->symbolizer = NULL;
	cr_assert_eq(ct->nr_begin, ROUNDS, "request_begin called %zu times in the trace",
		     ct->nr_begin);
	cr_assert_eq(ct->nr_end, ROUNDS, "request_end called %zu times in the trace", ct->nr_end);
	for (size_t i = 0; i < ROUNDS; i++) {
		cr_assert_lt(ct->begin[i], ct->end[i], "window %zu ends before it begins", i);
		if (i)
			cr_assert_lt(ct->end[i - 1], ct->begin[i], "windows %zu and %zu overlap",
				     i - 1, i);
	}
}

/* Copies the capture at in/perf.data to out/perf.data with a window mark per
 * window (as session/pt_backend.c writes them), and the vdso beside it. */
static void copy_with_marks(const char *in, const char *out, const struct call_times *ct,
			    bool apply)
{
	char in_path[512], out_path[512];
	struct rv_perf_reader *r = NULL;
	struct rv_perf_writer *w = NULL;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	struct perf_event_attr attr;
	uint64_t id = RV_MARK_ID;
	int got;

	snprintf(in_path, sizeof(in_path), "%s/perf.data", in);
	snprintf(out_path, sizeof(out_path), "%s/perf.data", out);
	cr_assert_eq(rv_perf_reader_open(&r, in_path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_open(&w, out_path, &err), 0, "%s", err.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		cr_assert_eq(rv_perf_writer_add_attr(w, &a->attr, a->name, a->ids, a->nr_ids, &err),
			     0, "%s", err.message);
	}
	rv_mark_attr(&attr, false, 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, RV_MARK_EVENT_NAME, &id, 1, &err), 0, "%s",
		     err.message);
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		if (rec.payload)
			got = rv_perf_writer_write_payload(w, rec.header, rec.payload,
							   rec.payload_size, &err);
		else
			got = rv_perf_writer_write(w, rec.header, &err);
		cr_assert_eq(got, 0, "%s", err.message);
	}
	cr_assert_eq(got, 0, "%s", err.message);
	for (size_t i = 0; i < ROUNDS; i++) {
		uint64_t record[RV_MARK_MAX_RECORD / 8];
		/* the window opened as request_begin was called: its call is in it */
		struct rv_mark mark = {
			.kind = RV_MARK_WINDOW,
			.flags = apply ? RV_MARK_FLAG_APPLY : 0,
			.pid = ct->pid,
			.tid = ct->tid,
			.time = ct->end[i],
			.duration_ns = ct->end[i] - ct->begin[i] + 1,
			.name = WINDOW_NAME,
		};

		rv_mark_record(record, &mark);
		cr_assert_eq(rv_perf_writer_write(w, (const void *)record, &err), 0, "%s",
			     err.message);
	}
	if (!apply) {
		/* a gated recording's trigger hit, at the second window's end */
		uint64_t record[RV_MARK_MAX_RECORD / 8];
		struct rv_mark hit = { .kind = RV_MARK_TRIGGER,
				       .flags = RV_MARK_FLAG_SNAPSHOT,
				       .pid = ct->pid,
				       .tid = ct->tid,
				       .time = ct->end[1],
				       .name = "request_end" };

		rv_mark_record(record, &hit);
		cr_assert_eq(rv_perf_writer_write(w, (const void *)record, &err), 0, "%s",
			     err.message);
	}
	struct rv_perf_meta meta = {
		.cpuid = rv_perf_reader_feature_string(r, RV_FEAT_CPUID),
		.clockid = -1,
	};
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	rv_perf_reader_free(r);

	char vdso_in[512], vdso_out[512];
	snprintf(vdso_in, sizeof(vdso_in), "%s/vdso.so", in);
	snprintf(vdso_out, sizeof(vdso_out), "%s/vdso.so", out);
	cr_assert_eq(link(vdso_in, vdso_out), 0, "cannot link %s", vdso_in);
}

/* `rearview decode DIR -o DIR/name --jobs JOBS [--chunk-size 1K]`; its stderr
 * in *note (malloc'd) when note is not NULL. */
static struct fxt_trace *decode(const char *dir, const char *name, const char *jobs, bool chunked,
				char **note)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char out[512], err[256];
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 (char *)dir,
			 "-o",
			 out,
			 "--jobs",
			 (char *)jobs,
			 chunked ? "--chunk-size" : NULL,
			 "1K",
			 NULL };

	cr_assert_not_null(r);
	snprintf(out, sizeof(out), "%s/%s", dir, name);
	run_process(argv, DECODE_TIMEOUT_S, r);
	cr_assert_eq(r->exit_code, 0, "rearview decode failed (%d): %s", r->exit_code, r->err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s: %s", out, err);
	if (note)
		cr_assert_not_null(*note = strdup(r->err));
	free(r);
	return t;
}

static bool is_window(const struct fxt_span *s)
{
	return !strcmp(s->name, WINDOW_SPAN);
}

/* The window span s is in (s itself or an ancestor), or NULL. */
static const struct fxt_span *window_of(const struct fxt_trace *t, const struct fxt_span *s)
{
	while (s && !is_window(s))
		s = fxt_span_parent(t, s);
	return s;
}

static void check_inside_windows(const struct fxt_trace *t, const char *name, size_t expected)
{
	size_t n = fxt_count_spans(t, FXT_ANY, FXT_ANY, name);

	cr_assert_eq(n, expected, "%zu %s spans, expected %zu", n, name, expected);
	for (size_t i = 0; i < n; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, name, i);
		const struct fxt_span *w = window_of(t, s);

		cr_assert_not_null(w, "%s span %zu [%" PRIu64 ", %" PRIu64 "] is in no window",
				   name, i, s->begin_ns, s->end_ns);
		cr_assert(s->begin_ns > w->begin_ns && s->end_ns <= w->end_ns,
			  "%s span %zu [%" PRIu64 ", %" PRIu64
			  "] is not inside its window [%" PRIu64 ", %" PRIu64 "]",
			  name, i, s->begin_ns, s->end_ns, w->begin_ns, w->end_ns);
	}
}

Test(decode_windows, softpt_capture, .timeout = 600)
{
	char dir[256], raw[320], marked[320], drawn[320], *note = NULL, a[400], b[400];
	struct call_times ct;
	struct fxt_trace *plain, *t, *two;

	make_test_dir(dir, sizeof(dir));
	snprintf(raw, sizeof(raw), "%s/raw", dir);
	snprintf(marked, sizeof(marked), "%s/marked", dir);
	snprintf(drawn, sizeof(drawn), "%s/drawn", dir);
	cr_assert_eq(mkdir(raw, 0755), 0);
	cr_assert_eq(mkdir(marked, 0755), 0);
	cr_assert_eq(mkdir(drawn, 0755), 0);
	run_softpt(raw);
	call_times(raw, &ct);
	copy_with_marks(raw, marked, &ct, true);
	copy_with_marks(raw, drawn, &ct, false);

	/* Without marks: everything, outside_work included. */
	plain = decode(raw, "plain.fxt", "1", false, NULL);
	cr_assert_eq(fxt_count_spans(plain, FXT_ANY, FXT_ANY, "outside_work"), ROUNDS + 1);
	cr_assert_eq(fxt_count_spans(plain, FXT_ANY, FXT_ANY, WINDOW_SPAN), 0);

	t = decode(marked, "windows.fxt", "1", false, &note);
	cr_assert(strstr(note, "--filter windows applied while decoding: 4 windows, the kernel "
			       "could not pause Intel PT"),
		  "no note about the windows: %s", note);
	free(note);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW_SPAN), ROUNDS, "%zu window spans",
		     fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW_SPAN));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0,
		     "outside_work ran outside the windows but is in the trace");
	check_inside_windows(t, "slow_work", 1);
	check_inside_windows(t, "fast_work", ROUNDS - 1);
	check_inside_windows(t, "request_begin", ROUNDS);
	/* Every span of the thread is a window or inside one. */
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert_not_null(window_of(t, &t->spans[i]),
				   "%s [%" PRIu64 ", %" PRIu64 "] is outside every window",
				   t->spans[i].name, t->spans[i].begin_ns, t->spans[i].end_ns);
	/* The windows are where the marks put them (the trace's zero is the first
	 * window's begin, or the trace's start if earlier). */
	for (size_t i = 0; i < ROUNDS; i++) {
		const struct fxt_span *w = fxt_find_span(t, FXT_ANY, FXT_ANY, WINDOW_SPAN, i);

		cr_assert_eq(w->end_ns - w->begin_ns, ct.end[i] - ct.begin[i] + 1,
			     "window %zu lasts %" PRIu64 " ns", i, w->end_ns - w->begin_ns);
	}

	/* Decoding in pieces on two threads gives the same file. */
	two = decode(marked, "windows-2.fxt", "2", true, NULL);
	fxt_trace_free(two);
	fxt_trace_free(decode(marked, "windows-1.fxt", "1", true, NULL));
	snprintf(a, sizeof(a), "%s/windows-1.fxt", marked);
	snprintf(b, sizeof(b), "%s/windows-2.fxt", marked);
	size_t na, nb;
	char *da = read_whole(a, &na), *db = read_whole(b, &nb);
	cr_assert(na == nb && !memcmp(da, db, na), "decoding on two threads changed the trace");
	free(da);
	free(db);

	/* A gated recording's marks are drawn, nothing left out: the windows,
	 * the trigger hit, and outside_work as without marks. */
	fxt_trace_free(t);
	t = decode(drawn, "drawn.fxt", "1", false, &note);
	cr_assert_null(strstr(note, "applied while decoding"), "%s", note);
	free(note);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW_SPAN), ROUNDS);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"),
		     fxt_count_spans(plain, FXT_ANY, FXT_ANY, "outside_work"));
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at request_end]"), 1);

	fxt_trace_free(plain);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
