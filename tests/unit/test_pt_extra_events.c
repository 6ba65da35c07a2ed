/* test_pt_extra_events.c: --events with Intel PT, through the simulated
 * kernel (tests/support/fake_kernel.h).
 *
 * softpt traces build/tests/pt/recursion; its PT bytes go through the PT
 * engine in snapshot mode with a page-faults event as the slot's sibling
 * (the PT backend's setup: in the PT group, on its clock, output to its
 * ring), into whose ring the test, playing the kernel, writes the event's
 * samples: one before the trace begins (aged out of a snapshot) and three
 * inside it. The capture must declare the event, and decode to the same
 * branches as without it plus an RV_EVENT_EXTRA for each sample inside the
 * trace, in time order among its thread's branches, with the sample's ip,
 * address and CPU.
 *
 * Not here: the engine (test_pt_engine.c), the decoder on its own
 * (test_pt_capture.c), drawing (test_extra_events.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/pt_capture.h"
#include "fake_kernel.h"
#include "softpt_reference.h"
#include "record/extra_events.h"
#include "record/pt_engine.h"
#include "test_env.h"
#include "test_files.h"

static int attach_nothing(void *ctx, int perf_fd, size_t sibling, struct rv_error *err)
{
	return 0;
}

/* One of the event's samples, as the kernel writes it (RV_EXTRA_SAMPLE_TYPE). */
struct extra_sample {
	struct perf_event_header h;
	uint64_t id, ip;
	uint32_t pid, tid;
	uint64_t time, addr;
	uint32_t cpu, res;
};

/* The run through the engine, with the page-faults sibling, and samples at
 * `times` (nr of them; none: the capture without samples). */
static void engine_capture(const struct softpt_reference *ref, const char *dir,
			   const uint64_t *times, size_t nr)
{
	char path[PATH_MAX + 64], capture[PATH_MAX + 80];
	struct fake_kernel fake = { .time_shift = (uint16_t)ref->tc.time_shift,
				    .time_mult = (uint32_t)ref->tc.time_mult,
				    .time_zero = ref->tc.time_zero,
				    .tsc_step = 10 };
	struct rv_pt_ops ops = fake_kernel_ops(&fake);
	struct rv_extra_events set = { 0 };
	struct rv_perf_writer *w;
	struct rv_pt_engine *e;
	struct rv_error err = { 0 };
	struct perf_event_attr extra_attr;
	struct rv_pt_sibling sibling = { .attr = &extra_attr, .name = "page-faults" };
	pid_t tid = (pid_t)ref->pid;

	cr_assert_eq(rv_extra_events_parse("page-faults", &set, &err), 0);
	rv_extra_event_attr_in_group(&set.events[0], false, &ref->pt_attr, &extra_attr);
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/root", dir);
	mkdir(path, 0700);
	fake_proc_write(path, (pid_t)ref->pid, "recursion", ref->maps);
	snprintf(capture, sizeof(capture), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_writer_open(&w, capture, &err), 0, "%s", err.message);

	struct rv_pt_engine_config config = {
		.pt_attr = &ref->pt_attr,
		.pt_name = "intel_pt//u",
		.sideband_attr = &ref->sb_attr,
		.sideband_name = "dummy:u",
		.siblings = &sibling,
		.nr_siblings = 1,
		.attach = attach_nothing,
		.tids = &tid,
		.nr_tids = 1,
		.pids = &tid,
		.nr_pids = 1,
		.mode = RV_PT_SNAPSHOT,
		.aux_bytes = 64 * 1024,
		.data_pages = 64,
		.pmu_type = (uint32_t)ref->info.pmu_type,
		.tsc_ctc_ratio_n = (uint32_t)ref->info.tsc_ctc_ratio_n,
		.tsc_ctc_ratio_d = (uint32_t)ref->info.tsc_ctc_ratio_d,
		.max_nonturbo_ratio = (uint32_t)ref->info.max_non_turbo_ratio,
		.root = path,
		.capture = w,
		.ops = &ops,
	};
	cr_assert_lt(ref->trace_size, config.aux_bytes / 2);
	cr_assert_eq(rv_pt_engine_open(&e, &config, &err), 0, "%s", err.message);
	/* the kernel's view: the sibling is in the PT group, writes into its
	 * ring, on its clock */
	struct fake_event *pt = &fake.ev[0], *sib = &fake.ev[1];
	cr_assert_eq(sib->attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(sib->attr.config, PERF_COUNT_SW_PAGE_FAULTS);
	cr_assert_eq(sib->group_fd, FAKE_FD0, "in the PT event's group");
	cr_assert_eq(sib->output_fd, FAKE_FD0, "its records go to the PT event's ring");
	cr_assert_eq(sib->attr.use_clockid, ref->pt_attr.use_clockid, "the PT event's clock");
	cr_assert_eq(sib->attr.inherit, ref->pt_attr.inherit);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	for (size_t i = 0; i < nr; i++) {
		struct extra_sample s = {
			{ PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, sizeof(s) },
			sib->id,
			0x401000 + i,
			ref->pid,
			ref->pid,
			times[i],
			0x7f0000000000 + 4096 * i,
			1,
			0,
		};

		fake_kernel_record(pt, &s);
	}
	fake_kernel_trace(pt, ref->trace, ref->trace_size);
	cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	rv_pt_engine_free(e);
	struct rv_perf_meta meta = { .clockid = -1, .cpuid = ref->cpuid };
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	snprintf(path, sizeof(path), "%s/vdso.so", ref->dir);
	snprintf(capture, sizeof(capture), "%s/vdso.so", dir);
	{
		size_t size;
		void *vdso = read_whole(path, &size);

		cr_assert(vdso);
		write_file(capture, vdso, size);
		free(vdso);
	}
}

/* What decoding hands the sink: branches counted, extra events kept with
 * the times of the thread's events around each. */
struct seen {
	uint64_t branches, calls;
	uint64_t first, last; /* of the branches */
	uint64_t last_time;   /* of the thread's latest event */
	size_t nr_extra;
	struct rv_event extra[8];
	uint64_t before[8]; /* the time of the event before each extra */
	/* each extra's name, copied: the event's lives only as long as the
	 * capture (events.h) */
	char names[8][32];
	bool out_of_order;
};

static int sink(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct seen *s = ctx;

	if (ev->kind == RV_EVENT_BRANCH) {
		s->branches++;
		s->calls += ev->branch.kind == RV_BRANCH_CALL;
		if (!s->first || ev->time < s->first)
			s->first = ev->time;
		if (ev->time > s->last)
			s->last = ev->time;
	}
	if (ev->kind == RV_EVENT_EXTRA) {
		cr_assert_lt(s->nr_extra, 8);
		s->before[s->nr_extra] = s->last_time;
		snprintf(s->names[s->nr_extra], sizeof(s->names[0]), "%s", ev->extra.name);
		s->extra[s->nr_extra++] = *ev;
	}
	if (ev->kind == RV_EVENT_BRANCH || ev->kind == RV_EVENT_EXTRA) {
		if (ev->time < s->last_time)
			s->out_of_order = true;
		s->last_time = ev->time;
	}
	return 0;
}

static void decode(const char *dir, struct seen *s)
{
	struct rv_pt_capture_options o = { .path = dir, .jobs = 1 };
	struct rv_pt_capture *cap;
	struct rv_pt_stats stats;
	struct rv_error err = { 0 };

	memset(s, 0, sizeof(*s));
	cr_assert_eq(rv_pt_capture_open(&cap, &o, NULL, &err), 0, "%s: %s", dir, err.message);
	cr_assert_eq(rv_pt_capture_decode(cap, sink, s, &stats, &err), 0, "%s", err.message);
	rv_pt_capture_free(cap);
}

Test(pt_extra_events, samples_of_a_sibling_come_in_time_order_and_age_out_with_the_snapshot,
     .timeout = 300)
{
	struct softpt_reference ref;
	struct seen plain, with;
	char dir[PATH_MAX + 16], dir2[PATH_MAX + 16], data[PATH_MAX + 64];
	uint64_t times[4];
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	bool declared = false;

	softpt_reference_make(&ref, "rv-ptextra");
	snprintf(dir, sizeof(dir), "%s/plain", ref.dir);
	engine_capture(&ref, dir, NULL, 0);
	decode(dir, &plain);
	cr_assert_gt(plain.branches, 100);
	cr_assert_lt(plain.first, plain.last);

	times[0] = plain.first > 1000000 ? plain.first - 1000000 : 1; /* before the trace */
	for (size_t i = 1; i < 4; i++)
		times[i] = plain.first + (plain.last - plain.first) * i / 4;
	snprintf(dir2, sizeof(dir2), "%s/extra", ref.dir);
	engine_capture(&ref, dir2, times, 4);

	snprintf(data, sizeof(data), "%s/perf.data", dir2);
	cr_assert_eq(rv_perf_reader_open(&r, data, &err), 0, "%s", err.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if (a->name && !strcmp(a->name, "page-faults")) {
			declared = true;
			cr_assert(rv_extra_event_attr_is_extra(&a->attr));
		}
	}
	rv_perf_reader_free(r);
	cr_assert(declared, "the capture declares the event");

	decode(dir2, &with);
	cr_assert_eq(with.branches, plain.branches, "the samples change no branch");
	cr_assert_eq(with.calls, plain.calls);
	cr_assert_eq(with.nr_extra, 3, "%zu extra events: the one before the trace aged out",
		     with.nr_extra);
	cr_assert(!with.out_of_order, "the thread's events come in time order");
	for (size_t i = 0; i < 3; i++) {
		const struct rv_event *ev = &with.extra[i];

		cr_assert_str_eq(with.names[i], "page-faults");
		cr_assert_eq(ev->tid, ref.pid);
		cr_assert_eq(ev->time, times[i + 1]);
		cr_assert_eq(ev->extra.ip, 0x401000 + i + 1);
		cr_assert_eq(ev->extra.addr, 0x7f0000000000 + 4096 * (i + 1));
		cr_assert_eq(ev->extra.count, 1);
		cr_assert_eq(ev->extra.cpu, 1);
		cr_assert(with.before[i] > plain.first,
			  "extra %zu comes among the branches, not before them", i);
	}
	softpt_reference_free(&ref);
}
