/* test_pt_backend_snapshots.c: the Intel PT backend's snapshots of a PT the
 * kernel paused (Linux 6.13's aux_pause), end to end through pt_backend.c
 * and the gating module, on the simulated kernel (tests/support/fake_kernel).
 *
 * The backend is driven through its ops table (rv_pt_backend) as the session
 * loop drives it: rv_gating_collect, the backend's poll, rv_gating_apply with
 * the backend's mark and snapshot. The gate is a simulated one behind
 * gating's gate interface (rv_gating_new_on): it opens the in-group uprobe
 * events the backend asks for in the simulated kernel, and a hit is what the
 * BPF program does (bpf/gate.bpf.c): refused while the gate holds, else the
 * event fires (its overflow pauses or resumes PT in the kernel), the hold is
 * taken and the record is written. The target is a child that sleeps; the
 * trace is the test's own bytes, written round the 4 MiB AUX area as the
 * hardware writes it.
 *
 * Shown: a --trigger snapshot is the whole 4 MiB area in the capture, byte
 * for byte, ending at the hit; with --multi-snapshot the resume event is
 * armed after the copy, the gate stays held until the resume sample is read,
 * the paused time is marked from the trigger to the resume, and the second
 * snapshot is whole; a resume that never comes is said at the end, one
 * that only the end's drain reads is marked all the same; with
 * --min-duration a kept window's mark has APPLY and the hold is released
 * once the area is copied. Every recording is then decoded with the
 * walker --decoder chose.
 *
 * Not here: the engine's own work (test_pt_engine.c), decoding paused
 * snapshots (test_pt_engine_decode.c), the BPF gate (test_gate.c).
 */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/auxtrace.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "record/perf_attr_ext.h"
#include "render/render.h"
#include "session/backend.h"
#include "session/gating.h"
#include "session/session.h"
#include "fake_kernel.h"
#include "sysfs_root.h"
#include "test_files.h"

#define AREA	  (4u << 20) /* --snapshot-size's default */
#define MAX_SITES 8

/* ---- the simulated gate ---- */

struct fake_gate {
	struct fake_kernel *k;
	struct rv_pt_ops ops;
	enum rv_gate_role role[MAX_SITES];
	int fd[MAX_SITES];
	size_t nr;
	int records[2]; /* a pipe, readable while records wait */
	struct rv_gate_record queue[16];
	size_t nr_queue;
	bool held;
	int releases, refused;
	/* the simulated kernel when the hold was last released */
	int disables_at_release, resumes_at_release;
	bool pt_paused_at_release;
	uint64_t window_start; /* the open window's START (CLOCK_MONOTONIC) */
};

static int fg_attach(void *ctx, const struct rv_gate_site *sites, size_t nr, struct rv_error *err)
{
	struct fake_gate *g = ctx;

	cr_assert_leq(nr, MAX_SITES);
	for (size_t i = 0; i < nr; i++) {
		struct perf_event_attr attr;

		cr_assert_not_null(sites[i].attr, "every Intel PT gate site is in a PT group");
		cr_assert_geq(sites[i].group_fd, FAKE_FD0, "in the PT event's group");
		/* as rv_gate_attach opens it */
		attr = *sites[i].attr;
		attr.size = sizeof(attr);
		attr.config2 = sites[i].offset;
		if (!attr.sample_period)
			attr.sample_period = 1;
		/* in-group uprobes are opened enabled, to follow their leader,
		 * which is disabled until the engine starts; the simulated
		 * kernel wants events opened disabled, so: opened disabled,
		 * enabled below, before the leader is */
		cr_assert(!attr.disabled, "an in-group uprobe follows its leader");
		attr.disabled = 1;
		g->fd[i] = g->ops.perf_event_open(g->ops.ctx, &attr, sites[i].event_pid,
						  sites[i].cpu, sites[i].group_fd, 0);
		cr_assert_geq(g->fd[i], 0);
		g->role[i] = sites[i].role;
		cr_assert_eq(g->ops.ioctl(g->ops.ctx, g->fd[i], PERF_EVENT_IOC_ENABLE, 0), 0);
	}
	g->nr = nr;
	return 0;
}

static int fg_site_fd(const void *ctx, size_t i)
{
	const struct fake_gate *g = ctx;

	return i < g->nr ? g->fd[i] : -1;
}

static int fg_windows_fd(const void *ctx)
{
	return -1;
}

static int fg_records_fd(const void *ctx)
{
	const struct fake_gate *g = ctx;

	return g->records[0];
}

static int fg_poll(void *ctx, int timeout_ms, rv_gate_record_fn fn, void *fn_ctx,
		   struct rv_error *err)
{
	struct fake_gate *g = ctx;
	char buf[64];
	size_t n = g->nr_queue;

	while (read(g->records[0], buf, sizeof(buf)) > 0)
		;
	for (size_t i = 0; i < n; i++)
		if (fn(&g->queue[i], fn_ctx))
			break;
	g->nr_queue = 0;
	return (int)n;
}

static int fg_release(void *ctx, struct rv_error *err)
{
	struct fake_gate *g = ctx;
	struct fake_event *pt = &g->k->ev[0];

	g->held = false;
	g->releases++;
	g->disables_at_release = g->k->disables;
	g->resumes_at_release = g->k->resumes;
	g->pt_paused_at_release = pt->paused;
	return 0;
}

static int fg_counts(const void *ctx, struct rv_gate_counts *out, struct rv_error *err)
{
	const struct fake_gate *g = ctx;

	memset(out, 0, sizeof(*out));
	out->held = (uint64_t)g->refused;
	return 0;
}

static void fg_free(void *ctx)
{
	struct fake_gate *g = ctx;

	close(g->records[0]);
	close(g->records[1]);
}

static int site_of(const struct fake_gate *g, enum rv_gate_role role)
{
	for (size_t i = 0; i < g->nr; i++)
		if (g->role[i] == role)
			return g->fd[i];
	cr_assert_fail("the backend set no %s site", rv_gate_role_name(role));
	return -1;
}

static void put_record(struct fake_gate *g, const struct rv_gate_record *r)
{
	cr_assert_lt(g->nr_queue, sizeof(g->queue) / sizeof(g->queue[0]));
	g->queue[g->nr_queue++] = *r;
	cr_assert_eq(write(g->records[1], "r", 1), 1);
}

/* The target's thread tid hits the trigger at CLOCK_MONOTONIC `now` (perf
 * time perf_now): the gate program's decision. Returns whether it fired. */
static bool hit_trigger(struct fake_gate *g, pid_t pid, pid_t tid, uint64_t now, uint64_t perf_now)
{
	if (g->held) {
		g->refused++;
		return false;
	}
	cr_assert(fake_kernel_overflow(g->k, site_of(g, RV_GATE_TRIGGER), tid, perf_now));
	g->held = true;
	put_record(g, &(struct rv_gate_record){ .type = RV_GATE_REC_TRIGGER,
						.time_ns = now,
						.pid = (uint32_t)pid,
						.tid = (uint32_t)tid,
						.fired = true });
	return true;
}

static bool hit_start(struct fake_gate *g, pid_t tid, uint64_t now, uint64_t perf_now)
{
	if (g->held) {
		g->refused++;
		return false;
	}
	cr_assert(fake_kernel_overflow(g->k, site_of(g, RV_GATE_START), tid, perf_now));
	g->window_start = now;
	return true;
}

/* STOP pauses PT at every window's end; a window longer than min_ns is kept
 * (fired) and taken the hold. */
static void hit_stop(struct fake_gate *g, pid_t pid, pid_t tid, uint64_t now, uint64_t perf_now,
		     uint64_t min_ns)
{
	bool slow = now - g->window_start > min_ns;

	cr_assert(fake_kernel_overflow(g->k, site_of(g, RV_GATE_STOP), tid, perf_now));
	if (slow)
		g->held = true;
	put_record(g, &(struct rv_gate_record){ .type = RV_GATE_REC_WINDOW_END,
						.time_ns = now,
						.duration_ns = now - g->window_start,
						.pid = (uint32_t)pid,
						.tid = (uint32_t)tid,
						.slow = slow,
						.fired = slow });
}

/* ---- a session around the backend ---- */

struct world {
	struct fake_kernel fake;
	struct rv_pt_ops ops;
	struct fake_gate fg;
	struct rv_options opts;
	struct rv_session s;
	struct rv_target target;
	struct rv_gating *gating;
	struct rv_backend_state *b;
	struct rv_error err;
	char dir[PATH_MAX];
	pid_t child;
	struct fake_event *pt;
	char *stderr_text; /* what stop said */
};

static int act_mark(void *ctx, const struct rv_mark *mark, struct rv_error *err)
{
	return rv_pt_backend.mark(ctx, mark, err);
}

static int act_snapshot(void *ctx, const struct rv_gating_snapshot *what, size_t *taken,
			struct rv_error *err)
{
	return rv_pt_backend.snapshot(ctx, what, taken, err);
}

static void world_open(struct world *w, const char *trigger, char *filter_start, char *filter_stop,
		       bool multi, uint64_t min_ns)
{
	static char *argv[] = { "sleep", NULL };
	struct rv_gate_sites sites = { 0 };

	memset(w, 0, sizeof(*w));
	w->fake = (struct fake_kernel){ .time_shift = 10, .time_mult = 1024, .tsc = 1000000 };
	w->ops = fake_kernel_ops(&w->fake);
	make_temp_dir(w->dir, sizeof(w->dir), "rv-ptsnap");
	w->opts = (struct rv_options){ .command = RV_CMD_RUN,
				       .timer = RV_TIMER_NORMAL,
				       .argv = argv,
				       .argc = 1,
				       .no_follow = true,
				       .trigger = trigger,
				       .filter_start = filter_start,
				       .filter_stop = filter_stop,
				       .multi_snapshot = multi,
				       .min_duration_ns = min_ns,
				       /* not the default, so that finish is
					* seen to pass it on */
				       .decoder = RV_PT_DECODER_LIBIPT };
	w->s.opts = &w->opts;
	w->s.root = sysfs_tree("icelake");
	w->s.machine.nr_cpus = 1;
	w->s.engine = RV_ENGINE_PT;
	w->s.pt_ops = &w->ops;
	snprintf(w->s.capture_dir, sizeof(w->s.capture_dir), "%s", w->dir);
	cr_assert_eq(rv_pt_pmu_discover(&w->s.pt_pmu, w->s.root, &w->err), 0, "%s", w->err.message);
	w->fake.pt_type = w->s.pt_pmu.type;

	/* the target: a child of one thread that waits to be killed */
	w->child = fork();
	cr_assert_geq(w->child, 0);
	if (!w->child) {
		/* gone with the test, whatever assertion ends it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	w->target.pids[0] = w->child;
	w->target.nr_pids = 1;
	w->target.pidfds[0] = -1;

	if (trigger) {
		sites.trigger = true;
		snprintf(sites.at.path, sizeof(sites.at.path), "/usr/bin/server");
		sites.at.offset = 0x1200;
	}
	if (filter_start) {
		sites.filter = true;
		snprintf(sites.start.path, sizeof(sites.start.path), "/usr/bin/server");
		sites.start.offset = 0x1130;
		sites.stop = sites.start;
		sites.stop.offset = 0x1190;
	}
	w->fg.k = &w->fake;
	w->fg.ops = w->ops;
	cr_assert_eq(pipe2(w->fg.records, O_NONBLOCK | O_CLOEXEC), 0);
	struct rv_gating_gate_ops gate = { .ctx = &w->fg,
					   .attach = fg_attach,
					   .site_fd = fg_site_fd,
					   .windows_fd = fg_windows_fd,
					   .records_fd = fg_records_fd,
					   .poll = fg_poll,
					   .release = fg_release,
					   .counts = fg_counts,
					   .free = fg_free };
	cr_assert_eq(rv_gating_new_on(&w->gating, &w->opts, &sites, true, &gate, &w->err), 0, "%s",
		     w->err.message);
	cr_assert_eq(rv_pt_backend.open(&w->s, &w->target, w->gating, &w->b, &w->err), 0, "%s",
		     w->err.message);
	cr_assert_eq(rv_pt_backend.start(w->b, &w->err), 0, "%s", w->err.message);
	w->pt = &w->fake.ev[0];
	cr_assert_eq(w->pt->attr.type, w->fake.pt_type, "the first event is Intel PT's");
	cr_assert(w->pt->enabled);
}

/* One turn of the session's loop: the gate's records, the backend's rings,
 * then the gate's decisions. Returns whether the recording is complete. */
static bool world_turn(struct world *w)
{
	struct rv_gating_actions actions = { .ctx = w->b,
					     .mark = act_mark,
					     .snapshot = act_snapshot };
	bool done = false;

	cr_assert_eq(rv_gating_collect(w->gating, &w->err), 0, "%s", w->err.message);
	cr_assert_eq(rv_pt_backend.poll(w->b, &w->err), 0, "%s", w->err.message);
	cr_assert_eq(rv_gating_apply(w->gating, &actions, &done, &w->err), 0, "%s", w->err.message);
	return done;
}

/* Stops and finishes the capture, keeping what stop said on stderr. */
static void world_close(struct world *w)
{
	struct rv_render_options ro;
	char path[PATH_MAX + 32];
	int saved = dup(STDERR_FILENO), fd;

	snprintf(path, sizeof(path), "%s/stderr", w->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	dup2(fd, STDERR_FILENO);
	int ret = rv_pt_backend.stop(w->b, rv_gating_keep_rest(w->gating), &w->err);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	cr_assert_eq(ret, 0, "%s", w->err.message);
	w->stderr_text = read_whole(path, NULL);
	cr_assert_eq(rv_pt_backend.finish(w->b, &ro, &w->err), 0, "%s", w->err.message);
	cr_assert_eq(ro.decode.decoder, RV_PT_DECODER_LIBIPT,
		     "the recording is decoded with --decoder's walker");
	rv_pt_backend.free(w->b);
	rv_gating_free(w->gating);
	kill(w->child, SIGKILL);
	waitpid(w->child, NULL, 0);
}

/* What the capture holds: its AUX bytes in order and its marks. */
struct kept {
	uint8_t *aux;
	size_t aux_size, nr_auxtrace;
	struct rv_mark marks[8];
	char names[8][64];
	size_t nr_marks;
};

static void read_capture(const struct world *w, struct kept *k)
{
	char path[PATH_MAX + 32];
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	int got;

	memset(k, 0, sizeof(*k));
	snprintf(path, sizeof(path), "%s/perf.data", w->dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		struct rv_perf_auxtrace a;
		struct rv_perf_sample sample;

		if (rec.header->type == RV_PERF_RECORD_AUXTRACE) {
			cr_assert_eq(rv_perf_auxtrace_parse(rec.header, &a, &err), 0);
			cr_assert_eq(a.tid, (uint32_t)w->child, "the slot's thread");
			k->aux = realloc(k->aux, k->aux_size + a.size);
			cr_assert_not_null(k->aux);
			memcpy(k->aux + k->aux_size, rec.payload, a.size);
			k->aux_size += a.size;
			k->nr_auxtrace++;
		} else if (rec.header->type == PERF_RECORD_SAMPLE &&
			   rv_perf_reader_parse_sample(r, rec.header, &sample, &err) == 0 &&
			   rv_sample_is_mark(&sample)) {
			cr_assert_lt(k->nr_marks, 8);
			cr_assert_eq(rv_mark_parse(&sample, &k->marks[k->nr_marks], &err), 0);
			snprintf(k->names[k->nr_marks], sizeof(k->names[0]), "%s",
				 k->marks[k->nr_marks].name);
			k->marks[k->nr_marks].name = k->names[k->nr_marks];
			k->nr_marks++;
		}
	}
	cr_assert_eq(got, 0, "%s", err.message);
	rv_perf_reader_free(r);
}

/* n bytes of trace that no other stretch repeats (a counter, per byte). */
static uint8_t *pattern(size_t n, uint32_t seed)
{
	uint8_t *p = malloc(n);

	cr_assert_not_null(p);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
	return p;
}

static void world_free(struct world *w)
{
	free(w->stderr_text);
	remove_tree(w->dir);
}

/* ---- the tests ---- */

/* --trigger: the whole 4 MiB area, the last bytes before the hit last; the
 * hardware writes nothing after it; the hold is released after the copy. */
Test(pt_backend_snapshots, trigger_writes_the_whole_area, .timeout = 120)
{
	struct world w;
	struct kept k;
	uint8_t *before = pattern(AREA / 2, 1), *trace = pattern(AREA, 2), after[4096];

	world_open(&w, "on_trigger", NULL, NULL, false, 0);
	cr_assert(!w.pt->paused, "a --trigger run traces from the start");
	cr_assert_eq(fake_kernel_trace(w.pt, before, AREA / 2), AREA / 2);
	cr_assert_eq(fake_kernel_trace(w.pt, trace, AREA), AREA, "a lap: the area overwritten");
	cr_assert(hit_trigger(&w.fg, w.child, w.child, 1000000000, 2000000000));
	cr_assert(w.pt->paused, "the trigger's uprobe paused PT in the kernel");
	memset(after, 0xa5, sizeof(after));
	cr_assert_eq(fake_kernel_trace(w.pt, after, sizeof(after)), 0);
	cr_assert_eq(w.fg.releases, 0);
	cr_assert(world_turn(&w), "the first trigger ends the recording");
	cr_assert_eq(w.fg.releases, 1, "the hold released once the area was copied");
	cr_assert_gt(w.fg.disables_at_release, 0, "after the copy (its DISABLE)");
	world_close(&w);

	read_capture(&w, &k);
	cr_assert_eq(k.aux_size, AREA, "the whole area, not %zu bytes", k.aux_size);
	cr_assert_eq(memcmp(k.aux, trace, AREA), 0, "the area as the hardware last wrote it");
	cr_assert_eq(k.nr_marks, 1);
	cr_assert_eq(k.marks[0].kind, RV_MARK_TRIGGER);
	cr_assert(k.marks[0].flags & RV_MARK_FLAG_SNAPSHOT);
	free(k.aux);
	free(before);
	free(trace);
	world_free(&w);
}

/* The slot's resume event: the cpu-clock sibling with aux_resume. */
static struct fake_event *resume_event(struct world *w, int *fd)
{
	for (int i = 0; i < w->fake.nr; i++)
		if (w->fake.ev[i].attr.type == PERF_TYPE_SOFTWARE &&
		    rv_attr_aux_resume(&w->fake.ev[i].attr)) {
			*fd = FAKE_FD0 + i;
			return &w->fake.ev[i];
		}
	cr_assert_fail("no resume event in the PT group");
	return NULL;
}

static const struct rv_mark *find_mark(const struct kept *k, enum rv_mark_kind kind, uint32_t flag,
				       size_t nth)
{
	for (size_t i = 0; i < k->nr_marks; i++)
		if (k->marks[i].kind == kind && (k->marks[i].flags & flag) == flag && !nth--)
			return &k->marks[i];
	return NULL;
}

/* --trigger --multi-snapshot: the resume event armed after the copy, the
 * hold kept until the resume is read, the gap marked from the trigger to
 * the resume, the second snapshot whole; a resume that never comes is said
 * at the end. */
Test(pt_backend_snapshots, multi_snapshot_resumes_marks_the_gap_then_releases, .timeout = 120)
{
	struct world w;
	struct kept k;
	uint8_t *one = pattern(AREA, 3), *two = pattern(AREA, 4), gap[4096];
	const uint64_t resumed_at = 3000000000;
	struct fake_event *resume;
	const struct rv_mark *first, *second, *paused;
	int resume_fd;

	world_open(&w, "on_trigger", NULL, NULL, true, 0);
	resume = resume_event(&w, &resume_fd);
	cr_assert(!resume->enabled, "off until armed");
	cr_assert_eq(fake_kernel_trace(w.pt, one, AREA), AREA);
	cr_assert(hit_trigger(&w.fg, w.child, w.child, 1000000000, 2000000000));
	cr_assert(w.pt->paused);
	cr_assert(!world_turn(&w), "--multi-snapshot: the recording goes on");
	cr_assert_eq(w.fake.refreshes, 1, "the resume event armed after the copy");
	cr_assert(resume->enabled);
	cr_assert(w.pt->paused && w.pt->enabled, "copied, still paused");
	cr_assert(w.fg.held && w.fg.releases == 0, "the gate held until PT resumes");

	/* paused: the hardware writes nothing, the gate refuses the trigger */
	memset(gap, 0x5a, sizeof(gap));
	cr_assert_eq(fake_kernel_trace(w.pt, gap, sizeof(gap)), 0);
	cr_assert(!hit_trigger(&w.fg, w.child, w.child, 1500000000, 2500000000));
	cr_assert(!world_turn(&w));
	cr_assert_eq(w.fg.releases, 0, "no resume read yet, no release");

	/* the thread runs again: the resume event's overflow resumes PT */
	cr_assert(fake_kernel_overflow(&w.fake, resume_fd, w.child, resumed_at));
	cr_assert(!w.pt->paused);
	cr_assert_eq(w.fg.releases, 0, "released only once the resume is read");
	cr_assert(!world_turn(&w));
	cr_assert_eq(w.fg.releases, 1, "the resume read, the gate released");
	cr_assert_eq(w.fg.resumes_at_release, 1);
	cr_assert(!w.fg.pt_paused_at_release);

	cr_assert_eq(fake_kernel_trace(w.pt, two, AREA), AREA);
	cr_assert(hit_trigger(&w.fg, w.child, w.child, 4000000000, 5000000000));
	cr_assert(!world_turn(&w));
	cr_assert_eq(w.fake.refreshes, 2, "armed again after the second copy");
	cr_assert_eq(w.fg.releases, 1, "held: the thread has not run again");
	world_close(&w);
	cr_assert_not_null(strstr(w.stderr_text, "did not run again before the end"), "%s",
			   w.stderr_text);
	cr_assert_not_null(strstr(w.stderr_text, "Intel PT resumed 1 time after a snapshot copy"),
			   "%s", w.stderr_text);

	read_capture(&w, &k);
	cr_assert_eq(k.aux_size, 2 * (size_t)AREA, "each snapshot whole, not %zu bytes",
		     k.aux_size);
	cr_assert_eq(memcmp(k.aux, one, AREA), 0, "the first snapshot");
	cr_assert_eq(memcmp(k.aux + AREA, two, AREA), 0, "the second, nothing of the gap");
	first = find_mark(&k, RV_MARK_TRIGGER, RV_MARK_FLAG_SNAPSHOT, 0);
	second = find_mark(&k, RV_MARK_TRIGGER, RV_MARK_FLAG_SNAPSHOT, 1);
	paused = find_mark(&k, RV_MARK_WINDOW, RV_MARK_FLAG_PAUSED, 0);
	cr_assert(first && second && paused, "two triggers and the gap marked (%zu marks)",
		  k.nr_marks);
	cr_assert_null(find_mark(&k, RV_MARK_WINDOW, RV_MARK_FLAG_PAUSED, 1), "one gap");
	cr_assert_str_eq(paused->name, RV_MARK_PAUSED_NAME);
	cr_assert_eq(paused->tid, (uint32_t)w.child);
	cr_assert_eq(paused->time, resumed_at, "the gap ends at the resume sample");
	cr_assert(first->time < paused->time && paused->time < second->time);
	cr_assert_eq(paused->duration_ns, paused->time - first->time,
		     "the gap begins at the trigger that paused PT");
	free(k.aux);
	free(one);
	free(two);
	world_free(&w);
}

/* --min-duration: PT paused outside windows; a fast window dropped; a slow
 * one kept: its mark has APPLY, its area copied whole and the hold released
 * after the copy, PT left paused for the next START. */
Test(pt_backend_snapshots, min_duration_keeps_a_slow_window_and_releases_after_the_copy,
     .timeout = 120)
{
	static char start[] = "request_begin", stop[] = "request_end";
	struct world w;
	struct kept k;
	uint8_t *fast = pattern(4096, 5), *slow = pattern(AREA, 6);
	const struct rv_mark *m;
	int disables;

	world_open(&w, NULL, start, stop, false, 1000000);
	cr_assert(w.pt->paused, "paused until a window starts");
	cr_assert_eq(fake_kernel_trace(w.pt, fast, 4096), 0);

	cr_assert(hit_start(&w.fg, w.child, 1000000000, 2000000000));
	cr_assert(!w.pt->paused);
	cr_assert_eq(fake_kernel_trace(w.pt, fast, 4096), 4096);
	hit_stop(&w.fg, w.child, w.child, 1000001000, 2000001000, 1000000);
	cr_assert(w.pt->paused && !w.fg.held);
	disables = w.fake.disables;
	cr_assert(!world_turn(&w), "a fast window is not kept");
	cr_assert_eq(w.fake.disables, disables, "nor copied");
	cr_assert_eq(w.fg.releases, 0);

	cr_assert(hit_start(&w.fg, w.child, 2000000000, 3000000000));
	cr_assert_eq(fake_kernel_trace(w.pt, slow, AREA), AREA);
	hit_stop(&w.fg, w.child, w.child, 2005000000, 3005000000, 1000000);
	cr_assert(w.pt->paused && w.fg.held);
	cr_assert(!hit_start(&w.fg, w.child, 2006000000, 3006000000), "held off until copied");
	cr_assert(w.pt->paused);
	cr_assert(world_turn(&w), "the first slow window ends the recording");
	cr_assert_eq(w.fg.releases, 1);
	cr_assert_gt(w.fg.disables_at_release, disables, "released after the copy");
	cr_assert(w.fg.pt_paused_at_release, "PT stays paused: the next START resumes it");
	cr_assert_eq(w.fake.refreshes, 0, "nothing armed: no resume event");
	world_close(&w);

	read_capture(&w, &k);
	cr_assert_eq(k.aux_size, AREA, "the whole area, not %zu bytes", k.aux_size);
	cr_assert_eq(memcmp(k.aux, slow, AREA), 0);
	cr_assert_eq(k.nr_marks, 1, "the kept window only");
	m = &k.marks[0];
	cr_assert_eq(m->kind, RV_MARK_WINDOW);
	cr_assert_eq(m->flags & (RV_MARK_FLAG_SLOW | RV_MARK_FLAG_SNAPSHOT | RV_MARK_FLAG_APPLY),
		     RV_MARK_FLAG_SLOW | RV_MARK_FLAG_SNAPSHOT | RV_MARK_FLAG_APPLY);
	cr_assert_eq(m->duration_ns, 5000000);
	free(k.aux);
	free(fast);
	free(slow);
	world_free(&w);
}

/* --multi-snapshot: PT resumed after the last copy, its resume sample read
 * only by the end's drain: the gap is marked all the same, and the end
 * does not say that PT stayed paused. */
Test(pt_backend_snapshots, a_resume_read_at_the_end_is_marked, .timeout = 120)
{
	struct world w;
	struct kept k;
	uint8_t *one = pattern(AREA, 7);
	const uint64_t resumed_at = 3000000000;
	const struct rv_mark *paused;
	int resume_fd;

	world_open(&w, "on_trigger", NULL, NULL, true, 0);
	resume_event(&w, &resume_fd);
	cr_assert_eq(fake_kernel_trace(w.pt, one, AREA), AREA);
	cr_assert(hit_trigger(&w.fg, w.child, w.child, 1000000000, 2000000000));
	cr_assert(!world_turn(&w));
	cr_assert(fake_kernel_overflow(&w.fake, resume_fd, w.child, resumed_at));
	world_close(&w);
	cr_assert_null(strstr(w.stderr_text, "did not run again"), "%s", w.stderr_text);
	cr_assert_not_null(strstr(w.stderr_text, "Intel PT resumed 1 time after a snapshot copy"),
			   "%s", w.stderr_text);

	read_capture(&w, &k);
	cr_assert_eq(k.aux_size, AREA);
	paused = find_mark(&k, RV_MARK_WINDOW, RV_MARK_FLAG_PAUSED, 0);
	cr_assert_not_null(paused, "the gap marked (%zu marks)", k.nr_marks);
	cr_assert_eq(paused->time, resumed_at);
	free(k.aux);
	free(one);
	world_free(&w);
}
