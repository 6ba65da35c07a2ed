/* test_pt_engine_decode.c: what the PT engine writes, decoded.
 *
 * softpt traces build/tests/pt/recursion (genuine Intel PT of a real run, and
 * its ground truth). The test replays that run through the PT engine
 * (pt_engine.h) against a simulated kernel (tests/support/fake_kernel.h):
 * the process's threads and mappings in a fake /proc, the run's PT bytes
 * written into the AUX area,
 * as (1) one snapshot, (2) full mode drained in pieces that cut packets and
 * PSB intervals (so a decoder that decoded each piece on its own would lose
 * most of the trace), and (3) a PERF_SAMPLE_AUX sample of a gate's sibling
 * event (an in-kernel snapshot) with no AUXTRACE record at all. Each capture
 * must decode (pt_capture.h) to softpt's ground truth, calls for calls, with
 * no error and no byte skipped; `build/rearview decode --stats` must count
 * the same instructions, calls and returns as on softpt's own capture; and
 * Linux perf (`perf script --itrace=cr`) must read the snapshot and full
 * captures without a complaint and print the same branches as for softpt's.
 *
 * And snapshots of a PT the kernel paused (Linux 6.13's aux_pause, as the
 * simulated kernel models it): (4) a 4 MiB snapshot at a trigger, written
 * whole (4 MiB, not a 60 KiB AUX sample), ending at the hit, and (5)
 * --multi-snapshot: the run's trace in two snapshots with PT paused between
 * them until the armed resume event fired; the time it stayed paused,
 * marked as the backend marks it, is a gap the decoded trace shows, and
 * the two snapshots decode to the truth.
 *
 * Not here: the engine's own bookkeeping (test_pt_engine.c), the decoder
 * on softpt's captures (test_pt_capture.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <intel-pt.h>

#include "capture/auxtrace.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/pt_capture.h"
#include "fake_kernel.h"
#include "softpt_reference.h"
#include "record/perf_attr_ext.h"
#include "record/pt_attr.h"
#include "record/pt_engine.h"
#include "test_env.h"
#include "test_files.h"

/* ---- the environment ---- */

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "re"), *out = fopen(to, "we");
	size_t n;

	cr_assert(in && out, "cannot copy %s to %s", from, to);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	cr_assert_eq(fclose(out), 0);
}

/* Runs argv with stdout to out_path and stderr to err_path; the exit status. */
static int run(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(out, 1);
		dup2(err, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = calloc(1, 1 << 22);
	size_t n;

	cr_assert(f && text, "cannot read %s", path);
	n = fread(text, 1, (1 << 22) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* ---- softpt's run: the reference ---- */

/* The calls in softpt's ground truth of its run in dir. */
static uint64_t truth_calls(const char *dir)
{
	char path[PATH_MAX + 32], line[512];
	uint64_t calls = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ground-truth.txt", dir);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		calls += !strncmp(line, "call ", 5);
	fclose(f);
	cr_assert_gt(calls, 100);
	return calls;
}

/* ---- one capture through the engine ---- */

/* A gate would attach its BPF programs here; the simulation has none. */
static int attach_nothing(void *ctx, int perf_fd, size_t sibling, struct rv_error *err)
{
	return 0;
}

enum how { SNAPSHOT, FULL_PIECES, FULL_MID_PACKET, AUX_SAMPLE, TRIGGER_4MIB, MULTI_SNAPSHOT };

#define GAP_NS 2500000 /* how long PT stays paused in MULTI_SNAPSHOT */

/* PSB, PSBEND: a PSB+ with tracing off, then PAD (zeros) up to the run's
 * trace in TRIGGER_4MIB's filler, so that the area decodes from its first
 * byte. */
static const uint8_t psb_plus[] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,
				    0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x23 };

/* The gap as the backend writes it (pt_backend.c, resumed). */
static void write_gap_mark(struct rv_perf_writer *w, pid_t tid, uint64_t resumed_at)
{
	uint64_t record[RV_MARK_MAX_RECORD / 8], id = RV_MARK_ID;
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	struct rv_mark gap = { .kind = RV_MARK_WINDOW,
			       .flags = RV_MARK_FLAG_PAUSED,
			       .pid = (uint32_t)tid,
			       .tid = (uint32_t)tid,
			       .time = resumed_at,
			       .duration_ns = GAP_NS,
			       .name = RV_MARK_PAUSED_NAME };

	rv_mark_attr(&attr, false, 0);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, RV_MARK_EVENT_NAME, &id, 1, &err), 0, "%s",
		     err.message);
	rv_mark_record(record, &gap);
	cr_assert_eq(rv_perf_writer_write(w, (const void *)record, &err), 0, "%s", err.message);
}

static void engine_capture(const struct softpt_reference *ref, enum how how, const char *dir)
{
	char path[PATH_MAX + 64], capture[PATH_MAX + 80];
	/* softpt's clock, so that the sideband's times and the trace's agree;
	 * TSCs before the trace's first: the synthesized mappings come first */
	struct fake_kernel fake = { .time_shift = (uint16_t)ref->tc.time_shift,
				    .time_mult = (uint32_t)ref->tc.time_mult,
				    .time_zero = ref->tc.time_zero,
				    .tsc_step = 10 };
	struct rv_pt_ops ops = fake_kernel_ops(&fake);
	struct rv_perf_writer *w;
	struct rv_pt_engine *e;
	struct rv_error err = { 0 };
	pid_t tid = (pid_t)ref->pid;
	/* A gate's STOP event: its samples carry the AUX area's newest bytes. */
	struct perf_event_attr sib = { .type = PERF_TYPE_SOFTWARE,
				       .size = sizeof(sib),
				       .config = PERF_COUNT_SW_DUMMY,
				       .sample_period = 1,
				       .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
						      PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						      PERF_SAMPLE_CPU | PERF_SAMPLE_AUX,
				       .exclude_kernel = 1,
				       .exclude_hv = 1,
				       .sample_id_all = 1,
				       .aux_sample_size = 65536 - 4096 };
	struct rv_pt_sibling sibling = { .attr = &sib, .name = "probe:stop" };
	uint64_t aux_bytes = how == TRIGGER_4MIB ? 4u << 20 : 64 * 1024;
	/* the gate's trigger uprobe, as the plan makes it on 6.13+: aux_pause */
	struct perf_event_attr trig = { .type = PERF_TYPE_SOFTWARE,
					.size = sizeof(trig),
					.config = PERF_COUNT_SW_DUMMY,
					.sample_period = 1,
					.sample_type = RV_PT_SAMPLE_TYPE,
					.exclude_kernel = 1,
					.exclude_hv = 1,
					.sample_id_all = 1 };
	struct rv_pt_sibling trigger = { .attr = &trig, .name = "uprobe:trigger" };
	struct perf_event_attr resume;
	uint64_t hit = ref->tc.time_zero + 1000000;

	cr_assert_lt(ref->trace_size, aux_bytes / 2, "the run's trace is larger than expected");
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
		.tids = &tid,
		.nr_tids = 1,
		.pids = &tid,
		.nr_pids = 1,
		.mode = how == FULL_PIECES || how == FULL_MID_PACKET ? RV_PT_FULL : RV_PT_SNAPSHOT,
		.aux_bytes = how == FULL_PIECES || how == FULL_MID_PACKET ? 4096 : aux_bytes,
		.data_pages = 64,
		.pmu_type = (uint32_t)ref->info.pmu_type,
		.tsc_ctc_ratio_n = (uint32_t)ref->info.tsc_ctc_ratio_n,
		.tsc_ctc_ratio_d = (uint32_t)ref->info.tsc_ctc_ratio_d,
		.max_nonturbo_ratio = (uint32_t)ref->info.max_non_turbo_ratio,
		.root = path,
		.capture = w,
		.ops = &ops,
	};
	if (how == AUX_SAMPLE) {
		config.siblings = &sibling;
		config.nr_siblings = 1;
		config.attach = attach_nothing;
	}
	if (how == TRIGGER_4MIB || how == MULTI_SNAPSHOT) {
		rv_attr_set_aux_action(&trig, RV_AUX_PAUSE);
		config.siblings = &trigger;
		config.nr_siblings = 1;
		config.attach = attach_nothing;
	}
	if (how == MULTI_SNAPSHOT) {
		rv_pt_resume_attr(&resume, RV_SCOPE_USER, false);
		config.resume_attr = &resume;
	}
	cr_assert_eq(rv_pt_engine_open(&e, &config, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_engine_start(e, &err), 0, "%s", err.message);
	struct fake_event *pt = &fake.ev[0];

	switch (how) {
	case SNAPSHOT:
		fake_kernel_trace(pt, ref->trace, ref->trace_size);
		cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
		break;
	case FULL_PIECES:
	case FULL_MID_PACKET: {
		/* Pieces of about 333 and 1001 bytes through a 4 KiB area, so
		 * that PSB intervals are cut and AUXTRACE records padded to 8
		 * bytes. The hardware stops between packets (it flushes them
		 * whole when disabled), so the kernel's aux_head is at a packet
		 * boundary; FULL_MID_PACKET cuts packets too. */
		struct pt_config pc;
		struct pt_packet_decoder *d;
		struct pt_packet pkt;
		uint64_t off = 0, last = 0;
		size_t at = 0, k = 0;

		pt_config_init(&pc);
		pc.begin = ref->trace;
		pc.end = ref->trace + ref->trace_size;
		d = pt_pkt_alloc_decoder(&pc);
		cr_assert_not_null(d);
		cr_assert_geq(pt_pkt_sync_set(d, 0), 0);
		while (at < ref->trace_size) {
			size_t want = k % 2 ? 1001 : 333, piece;

			if (how == FULL_PIECES) {
				/* the last packet boundary at or before at + want */
				while (last < at + want && off < ref->trace_size) {
					last = off;
					if (pt_pkt_next(d, &pkt, sizeof(pkt)) < 0)
						off = ref->trace_size;
					else
						cr_assert_geq(pt_pkt_get_offset(d, &off), 0);
				}
				piece = (off <= at + want ? off : last) - at;
				if (!piece)
					piece = off - at;
			} else {
				piece = want < ref->trace_size - at ? want : ref->trace_size - at;
			}
			fake_kernel_trace(pt, ref->trace + at, piece);
			at += piece;
			k++;
			cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
		}
		pt_pkt_free_decoder(d);
		break;
	}
	case TRIGGER_4MIB: {
		/* PAD until the run's trace ends the area exactly: 4 MiB in all */
		size_t filler = aux_bytes - ref->trace_size;
		uint8_t *pad = calloc(1, filler);
		uint8_t after[4096];
		int trig_fd = FAKE_FD0 + 1;

		cr_assert_not_null(pad);
		memcpy(pad, psb_plus, sizeof(psb_plus));
		cr_assert_eq(fake_kernel_trace(pt, pad, filler), filler);
		free(pad);
		cr_assert_eq(fake_kernel_trace(pt, ref->trace, ref->trace_size), ref->trace_size);
		/* the trigger hit: its uprobe's overflow pauses PT in the kernel */
		cr_assert(fake_kernel_overflow(&fake, trig_fd, tid, hit));
		cr_assert(pt->paused);
		memset(after, 0xa5, sizeof(after));
		cr_assert_eq(fake_kernel_trace(pt, after, sizeof(after)), 0,
			     "the hardware writes nothing after the trigger");
		cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
		cr_assert(pt->enabled && pt->paused, "re-enabled after the copy, still paused");
		cr_assert_eq(fake.resumes, 0);
		break;
	}
	case MULTI_SNAPSHOT: {
		/* the run twice, one snapshot each (its trace has one PSB: it
		 * cannot be cut in two that decode alone) */
		size_t cut = ref->trace_size;
		int trig_fd = FAKE_FD0 + 1, resume_fd = FAKE_FD0 + 2;
		struct rv_pt_resume r;

		cr_assert(fake.ev[2].attr.type == PERF_TYPE_SOFTWARE &&
			  rv_attr_aux_resume(&fake.ev[2].attr));
		cr_assert_eq(fake_kernel_trace(pt, ref->trace, cut), cut);
		cr_assert(fake_kernel_overflow(&fake, trig_fd, tid, hit));
		cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
		/* paused: the resume event is off until armed */
		cr_assert(!fake_kernel_overflow(&fake, resume_fd, tid, hit + 1));
		cr_assert_eq(fake_kernel_trace(pt, ref->trace, 64), 0);
		cr_assert_eq(rv_pt_engine_resume(e, 0, tid, &err), 0, "%s", err.message);
		cr_assert_eq(fake.refreshes, 1, "a per-thread slot is refreshed once");
		cr_assert(fake_kernel_overflow(&fake, resume_fd, tid, hit + GAP_NS));
		cr_assert(!pt->paused && !fake.ev[2].enabled,
			  "one overflow resumed PT and disabled the event again");
		cr_assert(!fake_kernel_overflow(&fake, resume_fd, tid, hit + GAP_NS + 1));
		cr_assert_eq(rv_pt_engine_drain(e, &err), 0, "%s", err.message);
		cr_assert(rv_pt_engine_take_resume(e, &r));
		cr_assert_eq(r.tid, tid);
		cr_assert_eq(r.time, hit + GAP_NS);
		cr_assert(!rv_pt_engine_take_resume(e, &r));
		write_gap_mark(w, tid, hit + GAP_NS);
		cr_assert_eq(fake_kernel_trace(pt, ref->trace, ref->trace_size), ref->trace_size);
		cr_assert(fake_kernel_overflow(&fake, trig_fd, tid, hit + 2 * GAP_NS));
		cr_assert_eq(rv_pt_engine_snapshot(e, &err), 0, "%s", err.message);
		break;
	}
	case AUX_SAMPLE: {
		/* {id}{ip}{pid,tid}{time}{cpu,res}{size}{data} */
		size_t data = (ref->trace_size + 7) & ~(size_t)7;
		size_t size = 8 + 6 * 8 + data;
		uint64_t *s = calloc(1, size);
		struct perf_event_header *h = (void *)s;

		cr_assert_lt(size, 65536);
		fake_kernel_trace(pt, ref->trace, ref->trace_size);
		h->type = PERF_RECORD_SAMPLE;
		h->misc = PERF_RECORD_MISC_USER;
		h->size = (uint16_t)size;
		s[1] = fake.ev[1].id;
		s[2] = 0x401000;
		s[3] = (uint64_t)ref->pid | (uint64_t)ref->pid << 32;
		s[4] = ref->tc.time_zero + 1000000;
		s[5] = 0;
		s[6] = data;
		memcpy(&s[7], ref->trace, ref->trace_size);
		fake_kernel_record(pt, s);
		free(s);
		break;
	}
	}
	cr_assert_eq(rv_pt_engine_stop(e, false, &err), 0, "%s", err.message);
	struct rv_pt_record_stats stats;
	rv_pt_engine_stats(e, &stats);
	if (how == AUX_SAMPLE) {
		cr_assert_eq(stats.aux_samples, 1);
		cr_assert_eq(stats.snapshots, 0, "the sample is the only trace");
	} else if (how == TRIGGER_4MIB) {
		cr_assert_eq(stats.snapshots, 1);
		cr_assert_eq(stats.aux_bytes, 4u << 20, "the whole 4 MiB, not %llu bytes",
			     (unsigned long long)stats.aux_bytes);
	} else if (how == MULTI_SNAPSHOT) {
		cr_assert_eq(stats.snapshots, 2);
		cr_assert_eq(stats.aux_bytes, 2 * ref->trace_size, "each snapshot whole, once");
		cr_assert_eq(stats.resume_samples, 1);
	} else {
		cr_assert_geq(stats.aux_bytes, ref->trace_size);
		if (how != SNAPSHOT)
			cr_assert_gt(stats.snapshots, 5);
	}
	rv_pt_engine_free(e);
	struct rv_perf_meta meta = { .clockid = -1, .cpuid = ref->cpuid };
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	snprintf(path, sizeof(path), "%s/vdso.so", ref->dir);
	snprintf(capture, sizeof(capture), "%s/vdso.so", dir);
	copy_file(path, capture);
}

/* ---- decoding ---- */

struct counts {
	uint64_t calls, returns, errors;
	uint64_t paused, paused_ns; /* WINDOW events of RV_MARK_PAUSED_NAME */
	struct rv_pt_stats stats;
	struct rv_pt_capture_info info;
};

static int count(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct counts *c = ctx;

	if (ev->kind == RV_EVENT_BRANCH && ev->branch.kind == RV_BRANCH_CALL)
		c->calls++;
	if (ev->kind == RV_EVENT_BRANCH && ev->branch.kind == RV_BRANCH_RETURN)
		c->returns++;
	if (ev->kind == RV_EVENT_TRACE_ERROR)
		c->errors++;
	if (ev->kind == RV_EVENT_WINDOW && ev->gate.name &&
	    !strcmp(ev->gate.name, RV_MARK_PAUSED_NAME)) {
		c->paused++;
		c->paused_ns += ev->gate.duration_ns;
	}
	return 0;
}

static void decode_lib(const char *dir, struct counts *c)
{
	struct rv_pt_capture_options o = { .path = dir, .jobs = 2 };
	struct rv_pt_capture *cap;
	struct rv_error err = { 0 };

	memset(c, 0, sizeof(*c));
	cr_assert_eq(rv_pt_capture_open(&cap, &o, NULL, &err), 0, "%s: %s", dir, err.message);
	cr_assert_eq(rv_pt_capture_decode(cap, count, c, &c->stats, &err), 0, "%s", err.message);
	rv_pt_capture_info(cap, &c->info);
	rv_pt_capture_free(cap);
}

/* `rearview decode --stats DIR`: its "instructions", "calls", "returns" and
 * "errors" lines. */
struct cli_stats {
	uint64_t instructions, calls, returns, errors, skipped;
};

static uint64_t stat_line(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	while ((p = strstr(p, name))) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n, NULL, 10);
		p += n;
	}
	cr_assert_fail("no '%s' line in:\n%s", name, text);
	return 0;
}

static void decode_cli(const char *dir, struct cli_stats *s)
{
	char exe[PATH_MAX], out[PATH_MAX + 16], errp[PATH_MAX + 16], fxt[PATH_MAX + 16];

	snprintf(exe, sizeof(exe), "%s/rearview", build_dir());
	snprintf(out, sizeof(out), "%s/decode.out", dir);
	snprintf(errp, sizeof(errp), "%s/decode.err", dir);
	snprintf(fxt, sizeof(fxt), "%s/trace.fxt", dir);
	char *argv[] = { exe, "decode", "--stats", "-o", fxt, (char *)dir, NULL };
	int status = run(argv, out, errp);
	char *text = read_text(out), *errs = read_text(errp);

	cr_assert_eq(status, 0, "rearview decode %s failed (%d): %s", dir, status, errs);
	s->instructions = stat_line(text, "instructions");
	s->calls = stat_line(text, "calls");
	s->returns = stat_line(text, "returns");
	s->errors = stat_line(text, "errors");
	s->skipped = stat_line(text, "skipped bytes");
	free(text);
	free(errs);
}

/* `perf script --itrace=cr`: its branch lines; no complaint on stderr. */
static size_t perf_branches(const char *dir, const char *name)
{
	char data[PATH_MAX + 16], out[PATH_MAX + 32], errp[PATH_MAX + 32];
	size_t lines = 0;

	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(out, sizeof(out), "%s/%s.perf.out", dir, name);
	snprintf(errp, sizeof(errp), "%s/%s.perf.err", dir, name);
	char *argv[] = { "perf", "script", "-i", data, "--itrace=cr", NULL };
	int status = run(argv, out, errp);
	char *text = read_text(out), *errs = read_text(errp);

	if (status == 127 && getenv("CI") && !strcmp(getenv("CI"), "true"))
		cr_assert_fail("perf is not installed; CI needs it");
	if (status == 127) {
		free(text);
		free(errs);
		cr_skip_test("perf is not installed");
	}
	cr_assert_eq(status, 0, "perf script on %s failed (%d): %s", name, status, errs);
	cr_assert_null(strcasestr(errs, "error"), "perf script on %s: %s", name, errs);
	cr_assert_null(strcasestr(errs, "warning"), "perf script on %s: %s", name, errs);
	for (const char *p = text; (p = strstr(p, "branches:")); p++)
		lines++;
	free(text);
	free(errs);
	return lines;
}

static void check(enum how how, const char *name)
{
	struct softpt_reference *ref = calloc(1, sizeof(*ref));
	char dir[PATH_MAX + 16];
	struct counts want, got;
	struct cli_stats cli_want, cli_got;
	uint64_t truth;

	cr_assert_not_null(ref);
	softpt_reference_make(ref, "rv-ptdec");
	truth = truth_calls(ref->dir);
	snprintf(dir, sizeof(dir), "%s/%s", ref->dir, name);
	engine_capture(ref, how, dir);

	decode_lib(ref->dir, &want);
	cr_assert_eq(want.calls, truth, "softpt's own capture");
	decode_lib(dir, &got);
	cr_assert_eq(got.info.buffers, how == MULTI_SNAPSHOT ? 2 : 1, "%s: stretches of trace",
		     name);
	cr_assert_eq(got.info.snapshot, how != FULL_PIECES && how != FULL_MID_PACKET);
	if (how == MULTI_SNAPSHOT) {
		cr_assert_eq(got.paused, 1, "%s: the gap is in the trace", name);
		cr_assert_eq(got.paused_ns, GAP_NS);
	} else {
		cr_assert_eq(got.paused, 0);
	}
	cr_assert_eq(got.errors, 0, "%s: %" PRIu64 " errors", name, got.errors);
	cr_assert_eq(got.stats.skipped_bytes, 0, "%s: bytes skipped", name);
	if (how == MULTI_SNAPSHOT) {
		/* the run twice: each snapshot whole */
		cr_assert_eq(got.calls, 2 * truth,
			     "%s: %" PRIu64 " calls, the truth %" PRIu64 " twice", name, got.calls,
			     truth);
		cr_assert_eq(got.returns, 2 * want.returns);
		cr_assert_eq(got.stats.insns, 2 * want.stats.insns);
		softpt_reference_free(ref);
		free(ref);
		return;
	}
	cr_assert_eq(got.calls, truth, "%s: %" PRIu64 " calls, the truth %" PRIu64, name, got.calls,
		     truth);
	cr_assert_eq(got.returns, want.returns, "%s: %" PRIu64 " returns, softpt's %" PRIu64, name,
		     got.returns, want.returns);
	cr_assert_eq(got.stats.insns, want.stats.insns);

	decode_cli(ref->dir, &cli_want);
	decode_cli(dir, &cli_got);
	cr_assert_eq(cli_got.instructions, cli_want.instructions,
		     "%s: rearview decode counts %" PRIu64 " instructions, %" PRIu64
		     " on softpt's capture",
		     name, cli_got.instructions, cli_want.instructions);
	cr_assert_eq(cli_got.calls, cli_want.calls);
	cr_assert_eq(cli_got.returns, cli_want.returns);
	cr_assert_eq(cli_got.errors, 0);
	cr_assert_eq(cli_got.skipped, 0);

	if (how == AUX_SAMPLE) {
		/* perf 6.1 reads it (it attributes the sample's trace to no
		 * task without the group in the header); only no complaint */
		perf_branches(dir, name);
	} else if (how == SNAPSHOT || how == FULL_PIECES || how == TRIGGER_4MIB) {
		size_t perf_want = perf_branches(ref->dir, "softpt");
		size_t perf_got = perf_branches(dir, name);

		cr_assert_gt(perf_want, 2 * truth);
		cr_assert_eq(perf_got, perf_want,
			     "%s: perf script prints %zu branches, %zu for "
			     "softpt's capture",
			     name, perf_got, perf_want);
	}
	softpt_reference_free(ref);
	free(ref);
}

Test(pt_engine_decode, snapshot, .timeout = 300)
{
	check(SNAPSHOT, "snapshot");
}

Test(pt_engine_decode, full_mode_in_pieces, .timeout = 300)
{
	check(FULL_PIECES, "full");
}

/* rearview joins the pieces without their padding: a packet cut in two is
 * whole again (perf cannot: it decodes the padding as PAD packets). */
Test(pt_engine_decode, full_mode_cut_mid_packet, .timeout = 300)
{
	check(FULL_MID_PACKET, "midpacket");
}

Test(pt_engine_decode, aux_sample, .timeout = 300)
{
	check(AUX_SAMPLE, "sample");
}

/* A trigger's snapshot is as large as --snapshot-size: 4 MiB, ending at the
 * hit, where the kernel paused PT. */
Test(pt_engine_decode, trigger_snapshot_of_4_mib, .timeout = 300)
{
	check(TRIGGER_4MIB, "trigger");
}

Test(pt_engine_decode, multi_snapshot_with_the_paused_gap, .timeout = 300)
{
	check(MULTI_SNAPSHOT, "multi");
}
