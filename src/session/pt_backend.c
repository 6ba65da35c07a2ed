/* pt_backend.c: the Intel PT backend of a recording session: the plan
 * (record/pt_plan.h) opened by the PT engine, the gate's uprobes in each
 * slot's PT group (resume, pause, AUX samples), the AUX area as a snapshot
 * ring, the vdso kept for the decoder. See backend.h.
 *
 * Who opens the gate's uprobes in the PT group: the gate (rv_gate_attach,
 * with each site's attr, group_fd, cpu and event_pid), not the engine. The
 * gate must count the events on each probe and attach its program with a
 * cookie per event, and it can only do that for events it opens; the
 * engine, given no siblings, opens the PT and sideband events, and says
 * which fd leads each slot's group. The uprobes that take AUX samples are
 * then redirected into their slot's ring (PERF_EVENT_IOC_SET_OUTPUT) and
 * declared in the capture, so that their samples are kept.
 *
 * On a kernel that cannot pause Intel PT (no aux_pause), --filter records
 * everything, and every window the gate closes is written into the capture
 * as a mark (capture/marks.h) in the capture's clock, for the decoder to
 * apply (decode/pt_capture.h). The gate's times are CLOCK_MONOTONIC, the
 * capture's the TSC through the perf mmap page's conversion: the offset
 * between them is measured once, before the target runs.
 *
 * Snapshots on Linux 6.13+ (plan pause_snapshots): the trigger's uprobe,
 * or every window's STOP, pauses Intel PT in the kernel at the hit, and the
 * gate holds START and trigger hits off (bpf/gate.h: the hold). When its
 * record arrives the engine disables the PT events, which publishes where
 * the trace ends, copies each AUX area whole and enables them again: the
 * paused one stays paused (record/pt_engine.h says why). A --min-duration
 * window's copy then releases the gate, and the next START resumes PT. A
 * --trigger with --multi-snapshot arms the slot's resume event for the
 * thread that hit it; the drain that sees it fire writes the time PT stayed
 * paused as a mark (RV_MARK_FLAG_PAUSED) and releases the gate. The copy
 * holds everything written since the previous one: decoding keeps only the
 * kept windows (their marks carry RV_MARK_FLAG_APPLY).
 *
 * Before Linux 6.13 a trigger's snapshot is the same copy, but of a PT that
 * kept running: it is taken when the gate's record reaches user space, and
 * the run says how late each one was.
 *
 * Kernel scope: kernel code is saved once every event is open and every BPF
 * object of the session (the gate) is loaded and attached, so that the
 * copies hold the kernel as the trace will find it: first the watch for
 * what changes from then on (record/bpf_images.h: KSYMBOL, BPF_EVENT and
 * TEXT_POKE from every CPU, drained into the capture with the engine's
 * rings, each program a BPF_EVENT announces saved then), then the code of
 * every BPF program loaded (DIR/bpf_images), then kcore (DIR/kcore_dir).
 *
 * Not here: the loop (session.c), the engine's or the gate's own work.
 */
#define RV_LOG_DOMAIN "record"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/perf_data.h"
#include "record/bpf_images.h"
#include "record/pt_plan.h"
#include "session/backend.h"
#include "util/log.h"
#include "util/private_file.h"
#include "util/proc.h"

#define SIDEBAND_PAGES 128 /* per slot: 512 KiB of sideband ring */
/* Back-to-back reads of the TSC and CLOCK_MONOTONIC; the tightest pair wins. */
#define CLOCK_PAIRS 16

struct rv_backend_state {
	struct rv_session *s;
	struct rv_target *target;
	struct rv_gating *gating;
	struct rv_pt_plan plan;
	struct rv_pt_slots slots;
	struct rv_pt_engine *engine;
	struct rv_perf_writer *capture;
	struct rv_gate_site *gate_sites;
	size_t nr_gate_sites;
	struct rv_bpf_saver *bpf; /* kernel scope: BPF programs and text changes */
	/* --filter windows and --trigger hits become marks in the capture */
	bool marks;
	int64_t clock_offset; /* CLOCK_MONOTONIC + this = the capture's clock */
	uint64_t nr_marks;
	/* pause_snapshots with a resume: the trigger's time (CLOCK_MONOTONIC)
	 * while PT waits to be resumed */
	bool resuming;
	uint64_t paused_at;
	uint64_t gaps, gap_ns_max;
	uint64_t late_ns_max; /* before 6.13: the latest user-space snapshot */
	struct rv_pt_record_stats stats;
	char capture_path[PATH_MAX + 32];
	char note[160];
	/* --events: siblings in each slot's PT group, writing into its ring */
	struct perf_event_attr extra_attrs[RV_MAX_EXTRA_EVENTS];
	struct rv_pt_sibling extra[RV_MAX_EXTRA_EVENTS];
};

/* --events as the engine's siblings: in each slot's PT group (on its thread,
 * or its CPU with the target's inheritance), on the PT event's clock, their
 * samples written into the capture beside the sideband. */
static size_t extra_siblings(struct rv_backend_state *b)
{
	const struct rv_extra_events *set = &b->s->extra_events;

	for (size_t i = 0; i < set->nr; i++) {
		rv_extra_event_attr_in_group(&set->events[i], b->s->opts->include_kernel,
					     &b->plan.pt, &b->extra_attrs[i]);
		b->extra[i] = (struct rv_pt_sibling){ .attr = &b->extra_attrs[i],
						      .name = set->events[i].name };
	}
	return set->nr;
}

/* The engine's siblings are --events only (the gate opens its own probes). */
static int attach_extra(void *ctx, int perf_fd, size_t sibling_index, struct rv_error *err)
{
	return 0;
}

/* --dry-run: the --events siblings of each slot. */
static int describe_extra(const struct rv_session *s, const struct rv_pt_plan *plan,
			  const struct rv_pt_slots *slots, struct rv_dry_run_plan *dp,
			  struct rv_error *err)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < s->extra_events.nr; i++) {
		for (size_t k = 0; !ret && k < rv_pt_slots_count(slots); k++) {
			char label[RV_EXTRA_NAME_MAX + 96];
			struct rv_dry_run_event ev = { .label = label,
						       .group = -1,
						       .cpu = rv_pt_slot_cpu(slots, k),
						       .pid = rv_pt_slot_pid(slots, k) };

			snprintf(label, sizeof(label),
				 "--events %s, in slot %zu's intel_pt group, output to its ring",
				 s->extra_events.events[i].name, k);
			rv_extra_event_attr_in_group(&s->extra_events.events[i],
						     s->opts->include_kernel, &plan->pt, &ev.attr);
			ret = rv_dry_run_add_event(dp, &ev, err);
		}
	}
	return ret;
}

static void warn_about_plan(const struct rv_pt_plan *plan)
{
	for (size_t i = 0; i < plan->warnings.count; i++)
		rv_warn("%s", plan->warnings.text[i]);
	if (plan->ungated)
		rv_note("--filter: this kernel cannot pause Intel PT (aux_pause needs Linux "
			"6.13); recording everything, the windows are applied while decoding");
	if (plan->trigger_snapshot)
		rv_note("--trigger: this kernel cannot pause Intel PT at the hit (aux_pause needs "
			"Linux 6.13), so the snapshot is taken in user space when the gate's "
			"record wakes rearview: it ends that late after the hit (usually well "
			"under a millisecond; a loaded machine can delay it by a scheduling "
			"period or more) and holds what ran in between; the run says how late "
			"each one was");
}

static int pt_describe(struct rv_session *s, const char *exe, pid_t pid,
		       const struct rv_gate_sites *sites, struct rv_dry_run_plan *dp,
		       struct rv_error *err)
{
	struct rv_backend_state *b = calloc(1, sizeof(*b));
	int ret;

	(void)exe;
	if (!b)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_pt_plan_build(&b->plan, s->opts, &s->pt_pmu, s->root, sites, err);
	if (!ret) {
		warn_about_plan(&b->plan);
		ret = rv_pt_slots_build(&b->slots, &b->plan, s->machine.nr_cpus,
					pid > 0 ? &pid : NULL, pid > 0 ? 1 : 0, err);
	}
	if (!ret)
		ret = rv_pt_plan_describe(&b->plan, &b->slots, sites, pid, dp, err);
	if (!ret)
		ret = describe_extra(s, &b->plan, &b->slots, dp, err);
	for (int cpu = 0; !ret && b->plan.scope != RV_SCOPE_USER && cpu < s->machine.nr_cpus;
	     cpu++) {
		/* the watch of save_kernel_code */
		struct rv_dry_run_event ev = {
			.label = "BPF programs and kernel text changes (KSYMBOL, BPF_EVENT, "
				 "TEXT_POKE), every task",
			.group = -1,
			.cpu = cpu,
			.pid = -1,
		};

		rv_bpf_watch_attr(&b->plan.sideband, &ev.attr);
		ret = rv_dry_run_add_event(dp, &ev, err);
	}
	free(b);
	return ret;
}

/* ---- the vdso, for the decoder ---- */

/* Copies process pid's [vdso] into dir/vdso.so, as softpt does; a process
 * without one (or gone) is not an error: the decoder then lists it missing. */
static int save_vdso(pid_t pid, const char *dir, struct rv_error *err)
{
	char path[PATH_MAX + 32];
	uint64_t start, end;
	struct rv_error ignored = { 0 };
	bool written;
	FILE *out;
	void *buf;
	int fd;

	if (!rv_proc_find_vdso(pid, &start, &end))
		return 0;
	buf = malloc(end - start);
	if (!buf)
		return rv_error_set(err, ENOMEM, "out of memory for the vdso");
	if (rv_proc_read_memory(pid, start, buf, end - start, &ignored)) {
		free(buf);
		rv_debug("cannot read the vdso of process %d; its code will be missing", (int)pid);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/vdso.so", dir);
	fd = rv_private_file_create(path, err);
	if (fd < 0) {
		free(buf);
		return fd;
	}
	errno = 0;
	out = fdopen(fd, "w");
	if (!out)
		close(fd);
	written = out && fwrite(buf, 1, end - start, out) == end - start;
	if (out && fclose(out))
		written = false;
	free(buf);
	if (!written)
		return rv_error_set(err, errno ? errno : EIO, "cannot write '%s': %s", path,
				    strerror(errno ? errno : EIO));
	return 0;
}

/* ---- the gate in the PT groups ---- */

/* The gate's sites: in-group ones once per slot (after the engine opened the
 * PT events), plain ones once. */
static int attach_gate(struct rv_backend_state *b, struct rv_error *err)
{
	const struct rv_pt_plan *p = &b->plan;
	size_t nr_slots = rv_pt_slots_count(&b->slots), n = 0;

	b->gate_sites = calloc(p->nr_gate * nr_slots + p->nr_gate, sizeof(*b->gate_sites));
	if (!b->gate_sites)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t k = 0; k < p->nr_gate; k++) {
		const struct rv_pt_plan_gate *g = &p->gate[k];

		for (size_t i = 0; g->in_group && i < nr_slots; i++) {
			int leader = rv_pt_engine_pt_fd(b->engine, i);

			if (leader < 0)
				return rv_error_set(err, EIO,
						    "the Intel PT event of slot %zu is not open; "
						    "cannot put the gate in its group",
						    i);
			b->gate_sites[n++] = (struct rv_gate_site){
				.role = g->role,
				.path = g->site->path,
				.offset = g->site->offset,
				.attr = &g->attr,
				.event_pid = rv_pt_slot_pid(&b->slots, i),
				.cpu = rv_pt_slot_cpu(&b->slots, i),
				.group_fd = leader,
			};
		}
		if (!g->in_group)
			b->gate_sites[n++] = (struct rv_gate_site){ .role = g->role,
								    .path = g->site->path,
								    .offset = g->site->offset,
								    .group_fd = -1,
								    .cpu = -1 };
	}
	b->nr_gate_sites = n;
	return rv_gating_attach(b->gating, b->gate_sites, n, err);
}

/* The uprobes that take AUX samples write into their slot's ring, and are
 * declared in the capture, so that their samples are kept and decoded. The
 * gate's in-group events are in the PT engine's kernel, as its groups are. */
static int keep_aux_samples(struct rv_backend_state *b, struct rv_error *err)
{
	const struct rv_pt_ops *o = rv_pt_engine_ops(b->engine);
	size_t nr_slots = rv_pt_slots_count(&b->slots);
	uint64_t *ids = calloc(nr_slots, sizeof(*ids));
	int ret = 0;

	if (!ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t k = 0, at = 0; !ret && k < b->plan.nr_gate; k++) {
		const struct rv_pt_plan_gate *g = &b->plan.gate[k];
		size_t nr_ids = 0;

		if (!g->in_group) {
			at++;
			continue;
		}
		for (size_t i = 0; !ret && i < nr_slots; i++, at++) {
			int fd = rv_gating_site_fd(b->gating, at);

			if (at >= b->nr_gate_sites || fd < 0)
				ret = rv_error_set(err, EIO, "the gate lost the event of site %zu",
						   at);
			if (!ret && g->uprobe_role == RV_UPROBE_SAMPLE_AUX)
				ret = -o->ioctl(o->ctx, fd, PERF_EVENT_IOC_SET_OUTPUT,
						(unsigned long)rv_pt_engine_pt_fd(b->engine, i));
			if (!ret)
				ret = -o->ioctl(o->ctx, fd, PERF_EVENT_IOC_ID,
						(unsigned long)&ids[nr_ids++]);
			if (ret > 0)
				ret = rv_error_set(err, ret,
						   "cannot send the %s uprobe's AUX samples to the "
						   "Intel PT ring: %s",
						   rv_gate_role_name(g->role), strerror(ret));
		}
		if (!ret && g->uprobe_role == RV_UPROBE_SAMPLE_AUX) {
			struct perf_event_attr attr = g->attr;
			char name[64];

			attr.type = b->plan.uprobe.type;
			snprintf(name, sizeof(name), "uprobe:%s",
				 g->role == RV_GATE_TRIGGER ? "trigger" : "slow_window");
			ret = rv_perf_writer_add_attr(b->capture, &attr, name, ids, nr_ids, err);
		}
	}
	free(ids);
	return ret;
}

/* Measures the offset from CLOCK_MONOTONIC (the gate's times) to the
 * capture's clock, and declares the marks event in the capture. Without a
 * TSC conversion the windows and hits are only counted, with a warning. */
static int prepare_marks(struct rv_backend_state *b, struct rv_error *err)
{
	const struct rv_pt_ops *o = rv_pt_engine_ops(b->engine);
	struct rv_pt_clock_pair pairs[CLOCK_PAIRS];
	struct rv_perf_time_conv tc;
	struct perf_event_attr attr;
	uint64_t id = RV_MARK_ID, spread;
	int ret;

	if (!rv_pt_engine_time_conv(b->engine, &tc)) {
		rv_warn("the kernel gives no TSC conversion (cap_user_time_zero), so the gate's "
			"windows and hits cannot be placed in the trace; they are only counted");
		return 0;
	}
	for (size_t i = 0; i < CLOCK_PAIRS; i++) {
		pairs[i].monotonic_before = o->clock_ns(o->ctx);
		pairs[i].tsc = o->read_tsc(o->ctx);
		pairs[i].monotonic_after = o->clock_ns(o->ctx);
	}
	b->clock_offset = rv_pt_clock_offset(&tc, pairs, CLOCK_PAIRS, &spread);
	if (spread == UINT64_MAX) {
		rv_warn("CLOCK_MONOTONIC went backwards while it was measured against the TSC; "
			"the gate's windows and hits are only counted");
		return 0;
	}
	rv_debug("the capture's clock is CLOCK_MONOTONIC %+lld ns (within %llu ns)",
		 (long long)b->clock_offset, (unsigned long long)(spread / 2 + 1));
	rv_mark_attr(&attr, false, 0);
	ret = rv_perf_writer_add_attr(b->capture, &attr, RV_MARK_EVENT_NAME, &id, 1, err);
	if (!ret)
		b->marks = true;
	return ret;
}

/* ---- kernel code, as the trace will find it ---- */

static int write_record(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct rv_backend_state *b = ctx;

	return rv_perf_writer_write(b->capture, rec, err);
}

/* The watch, the BPF programs loaded now, then kcore: after the gate is
 * attached (see the top of this file). */
static int save_kernel_code(struct rv_backend_state *b, struct rv_error *err)
{
	const struct rv_session *s = b->s;
	int nr_cpus = (int)s->machine.nr_cpus;
	struct perf_event_attr attr;
	uint64_t *ids = calloc(nr_cpus > 0 ? (size_t)nr_cpus : 1, sizeof(*ids));
	size_t nr_ids = 0;
	int ret;

	if (!ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_bpf_saver_open(&b->bpf, s->capture_dir, err);
	if (!ret)
		ret = rv_bpf_saver_watch(b->bpf, &b->plan.sideband, nr_cpus, &attr, ids, err);
	for (int i = 0; !ret && i < nr_cpus; i++)
		if (ids[i])
			ids[nr_ids++] = ids[i];
	if (!ret)
		ret = rv_perf_writer_add_attr(b->capture, &attr, "dummy:k", ids, nr_ids, err);
	free(ids);
	if (!ret)
		ret = rv_bpf_saver_save_loaded(b->bpf, err);
	if (!ret)
		ret = rv_pt_engine_copy_kernel_files(NULL, s->capture_dir, err);
	return ret;
}

/* ---- the interface ---- */

static int pt_open(struct rv_session *s, struct rv_target *target, struct rv_gating *gating,
		   struct rv_backend_state **out, struct rv_error *err)
{
	struct rv_backend_state *b = calloc(1, sizeof(*b));
	const struct rv_pt_plan *plan;
	int ret;

	*out = b;
	if (!b)
		return rv_error_set(err, ENOMEM, "out of memory");
	b->s = s;
	b->target = target;
	b->gating = gating;
	plan = &b->plan;
	ret = rv_pt_plan_build(&b->plan, s->opts, &s->pt_pmu, s->root,
			       gating ? rv_gating_sites(gating) : NULL, err);
	if (!ret)
		ret = rv_pt_slots_build(&b->slots, plan, s->machine.nr_cpus, target->pids,
					target->nr_pids, err);
	if (ret)
		return ret;
	warn_about_plan(plan);
	snprintf(b->capture_path, sizeof(b->capture_path), "%s/perf.data", s->capture_dir);
	ret = rv_perf_writer_open(&b->capture, b->capture_path, err);
	/* TSC-based times: no clock recorded, as at finish */
	if (!ret)
		ret = rv_session_flush_capture(s, b->capture, -1, err);
	if (!ret) {
		const struct rv_pt_slots *sl = &b->slots;
		struct rv_pt_engine_config config = {
			.pt_attr = &plan->pt,
			.pt_name = plan->scope == RV_SCOPE_USER	    ? "intel_pt//u"
				   : plan->scope == RV_SCOPE_KERNEL ? "intel_pt//k"
								    : "intel_pt//",
			.sideband_attr = &plan->sideband,
			.sideband_name = plan->scope == RV_SCOPE_USER ? "dummy:u" : "dummy",
			.tids = sl->nr_cpus ? NULL : sl->tids,
			.nr_tids = sl->nr_cpus ? 0 : sl->nr_tids,
			.cpus = sl->nr_cpus ? sl->cpus : NULL,
			.nr_cpus = sl->nr_cpus,
			.cpu_pid = sl->cpu_pid,
			.pids = target->pids,
			.nr_pids = target->nr_pids,
			.mode = plan->mode,
			.aux_bytes = plan->aux_bytes,
			.data_pages = SIDEBAND_PAGES,
			.pmu_type = s->pt_pmu.type,
			.tsc_ctc_ratio_n = s->pt_pmu.tsc_art_num,
			.tsc_ctc_ratio_d = s->pt_pmu.tsc_art_den,
			.max_nonturbo_ratio = s->pt_pmu.max_nonturbo_ratio,
			.capture = b->capture,
			.ops = s->pt_ops,
			.resume_attr = plan->resume ? &plan->resume_attr : NULL,
		};

		config.nr_siblings = extra_siblings(b);
		if (config.nr_siblings) {
			config.siblings = b->extra;
			config.attach = attach_extra;
		}
		ret = rv_pt_engine_open(&b->engine, &config, err);
	}
	if (!ret && plan->nr_gate)
		ret = attach_gate(b, err);
	if (!ret && plan->scope != RV_SCOPE_USER)
		ret = save_kernel_code(b, err);
	if (!ret && target->nr_pids)
		ret = save_vdso(target->pids[0], s->capture_dir, err);
	return ret;
}

static int pt_start(struct rv_backend_state *b, struct rv_error *err)
{
	const struct rv_pt_plan *plan = &b->plan;
	int ret = rv_pt_engine_start(b->engine, err);

	if (!ret && plan->nr_gate)
		ret = keep_aux_samples(b, err);
	if (!ret && plan->nr_gate)
		ret = prepare_marks(b, err);
	if (!ret)
		rv_debug("recording %zu process%s with Intel PT (%s mode, %llu KiB per %s)",
			 b->target->nr_pids, b->target->nr_pids == 1 ? "" : "es",
			 plan->mode == RV_PT_FULL ? "full" : "snapshot",
			 (unsigned long long)(plan->aux_bytes >> 10),
			 plan->per_cpu ? "CPU" : "thread");
	return ret;
}

static size_t pt_pollfds(const struct rv_backend_state *b, struct pollfd *fds, size_t max)
{
	return rv_pt_engine_pollfds(b->engine, fds, max);
}

/* The resume a drain saw: the time PT stayed paused becomes a mark (in the
 * capture's clock: the resume sample's time is perf's), and the gate may
 * take the next snapshot. */
static int resumed(struct rv_backend_state *b, struct rv_error *err)
{
	uint64_t record[RV_MARK_MAX_RECORD / 8];
	struct rv_pt_resume r;
	int ret = 0;

	while (!ret && rv_pt_engine_take_resume(b->engine, &r)) {
		uint64_t from = rv_pt_clock_from_monotonic(b->paused_at, b->clock_offset);
		struct rv_mark gap = {
			.kind = RV_MARK_WINDOW,
			.flags = RV_MARK_FLAG_PAUSED,
			.pid = b->target->nr_pids ? (uint32_t)b->target->pids[0] : 0,
			.tid = (uint32_t)r.tid,
			.time = r.time,
			.duration_ns = r.time > from ? r.time - from : 0,
			.name = RV_MARK_PAUSED_NAME,
		};

		b->resuming = false;
		b->gaps++;
		if (gap.duration_ns > b->gap_ns_max)
			b->gap_ns_max = gap.duration_ns;
		if (b->marks) {
			rv_mark_record(record, &gap);
			b->nr_marks++;
			ret = rv_perf_writer_write(b->capture, (const void *)record, err);
		}
		if (!ret)
			ret = rv_gating_release(b->gating, err);
	}
	return ret;
}

static int pt_poll(struct rv_backend_state *b, struct rv_error *err)
{
	int ret = rv_pt_engine_drain(b->engine, err);

	if (!ret && b->resuming)
		ret = resumed(b, err);
	if (!ret && b->bpf)
		ret = rv_bpf_saver_drain(b->bpf, write_record, b, err);
	/* --full-execution: what was drained, flushed every second */
	if (!ret)
		ret = rv_perf_writer_flush_if_due(b->capture, err);
	return ret;
}

/* A window the gate closed (with --min-duration only the longer ones) or a
 * trigger hit, as a mark in the capture's clock. Recorded ungated, a window
 * is one that decoding applies. */
static int pt_mark(struct rv_backend_state *b, const struct rv_mark *mark, struct rv_error *err)
{
	uint64_t record[RV_MARK_MAX_RECORD / 8];
	struct rv_mark in_capture = *mark;

	if (!b->marks)
		return 0;
	in_capture.time = rv_pt_clock_from_monotonic(mark->time, b->clock_offset);
	if (mark->kind == RV_MARK_WINDOW &&
	    (b->plan.ungated || (b->plan.pause_snapshots && (mark->flags & RV_MARK_FLAG_SNAPSHOT))))
		in_capture.flags |= RV_MARK_FLAG_APPLY;
	rv_mark_record(record, &in_capture);
	b->nr_marks++;
	return rv_perf_writer_write(b->capture, (const void *)record, err);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The copy of a PT the kernel paused (see the top), then its resume or the
 * gate's release. */
static int paused_snapshot(struct rv_backend_state *b, const struct rv_gating_snapshot *what,
			   struct rv_error *err)
{
	size_t slot;
	int ret = rv_pt_engine_snapshot(b->engine, err);

	if (ret)
		return ret;
	if (!what->trigger || !b->plan.resume)
		return rv_gating_release(b->gating, err);
	slot = rv_pt_engine_slot_of(b->engine, what->tid, (int)what->cpu);
	if (slot == SIZE_MAX) {
		rv_warn("--trigger: thread %d hit the trigger outside the threads traced; its "
			"Intel PT cannot be resumed",
			(int)what->tid);
		return rv_gating_release(b->gating, err);
	}
	b->paused_at = what->time_ns;
	b->resuming = true;
	return rv_pt_engine_resume(b->engine, slot, what->tid, err);
}

/* A trigger's or a kept window's snapshot: the copy of a PT the kernel
 * paused (Linux 6.13+), the copy of a running PT (a trigger before 6.13),
 * or the kernel's AUX sample (a window before 6.13). */
static int pt_snapshot(struct rv_backend_state *b, const struct rv_gating_snapshot *what,
		       size_t *taken, struct rv_error *err)
{
	int ret;

	*taken = 0;
	rv_debug("gate: %s", what->trigger ? "trigger" : "slow window");
	if (b->plan.pause_snapshots) {
		ret = paused_snapshot(b, what, err);
		*taken = !ret;
		return ret;
	}
	if (what->trigger && b->plan.trigger_snapshot) {
		uint64_t now = monotonic_ns();

		ret = rv_pt_engine_snapshot(b->engine, err);
		if (!ret && now > what->time_ns && now - what->time_ns > b->late_ns_max)
			b->late_ns_max = now - what->time_ns;
		*taken = !ret;
		return ret;
	}
	return 0;
}

/* The end is a snapshot of its own unless windows or triggers were the
 * snapshots asked for (a --trigger that never fired keeps the end). */
static int pt_stop(struct rv_backend_state *b, bool keep_rest, struct rv_error *err)
{
	int ret = rv_pt_engine_stop(b->engine, keep_rest, err);

	/* the end's drain may hold the last resume: its gap is marked too */
	if (!ret && b->resuming)
		ret = resumed(b, err);
	if (!ret && b->bpf) {
		struct rv_bpf_saver_stats st;

		ret = rv_bpf_saver_drain(b->bpf, write_record, b, err);
		rv_bpf_saver_stats(b->bpf, &st);
		rv_debug("BPF programs: %llu saved (%llu functions, %llu bytes of code), %llu "
			 "without JIT code, %llu gone before they could be saved; %llu KSYMBOL, "
			 "BPF_EVENT and TEXT_POKE records",
			 (unsigned long long)st.programs, (unsigned long long)st.functions,
			 (unsigned long long)st.bytes, (unsigned long long)st.not_jited,
			 (unsigned long long)st.lost, (unsigned long long)st.records);
		rv_bpf_saver_free(b->bpf);
		b->bpf = NULL;
	}
	if (b->marks)
		rv_debug("%llu --filter windows and --trigger hits written into the capture",
			 (unsigned long long)b->nr_marks);
	if (b->gaps)
		rv_note("Intel PT resumed %llu time%s after a snapshot copy; it stayed paused "
			"at most %.3f ms (marked in the trace)",
			(unsigned long long)b->gaps, b->gaps == 1 ? "" : "s",
			(double)b->gap_ns_max / 1e6);
	if (b->resuming)
		rv_note("--multi-snapshot: the thread that hit the last trigger did not run "
			"again before the end, so Intel PT stayed paused after its snapshot");
	if (b->late_ns_max)
		rv_note("--trigger: the user-space snapshots ended up to %.3f ms after their hit",
			(double)b->late_ns_max / 1e6);
	rv_pt_engine_stats(b->engine, &b->stats);
	return ret;
}

static int pt_finish(struct rv_backend_state *b, struct rv_render_options *out,
		     struct rv_error *err)
{
	const struct rv_session *s = b->s;
	const struct rv_pt_record_stats *stats = &b->stats;
	bool min_duration = s->opts->filter_start && s->opts->min_duration_ns;
	int ret;

	rv_pt_engine_free(b->engine);
	b->engine = NULL;
	ret = rv_session_finish_capture(s, b->capture, -1, err);
	rv_perf_writer_free(b->capture);
	b->capture = NULL;
	if (ret)
		return ret;
	if (stats->truncated || stats->lost_records)
		rv_warn("Intel PT lost data while recording (%llu truncated buffers, %llu lost "
			"sideband records); a larger --snapshot-size or --timer-resolution low "
			"loses less",
			(unsigned long long)stats->truncated,
			(unsigned long long)stats->lost_records);
	if (stats->lapped)
		rv_debug("%llu snapshots found the buffer overwritten since the one before",
			 (unsigned long long)stats->lapped);
	/* (the engine counts --events samples with the gate's AUX samples) */
	if (stats->aux_bytes + stats->aux_sample_bytes == 0 &&
	    (stats->aux_samples == 0 || b->s->extra_events.nr))
		return rv_error_set(err, ENODATA,
				    "Intel PT recorded no trace (%s); nothing to write",
				    min_duration ? "no window lasted longer than --min-duration"
						 : "the program ran no traced code while recorded");
	snprintf(b->note, sizeof(b->note), "Intel PT, %s, %llu KiB of trace",
		 b->plan.mode == RV_PT_FULL ? "full execution" : "snapshot",
		 (unsigned long long)((stats->aux_bytes + stats->aux_sample_bytes) >> 10));
	*out = (struct rv_render_options){
		.decode = { .path = b->capture_path,
			    .include_kernel = s->opts->include_kernel,
			    .vmlinux = s->opts->vmlinux,
			    .decoder = s->opts->decoder,
			    .live = true,
			    .progress = isatty(STDERR_FILENO) },
		.recorded = true,
		.recording_note = b->note,
		.main_thread_only = !s->opts->multi_thread,
	};
	return 0;
}

static void pt_free(struct rv_backend_state *b)
{
	if (!b)
		return;
	rv_bpf_saver_free(b->bpf);
	rv_pt_engine_free(b->engine);
	rv_perf_writer_free(b->capture);
	free(b->gate_sites);
	free(b);
}

const struct rv_backend_ops rv_pt_backend = {
	.description = "Intel PT",
	.describe = pt_describe,
	.open = pt_open,
	.start = pt_start,
	.pollfds = pt_pollfds,
	.poll = pt_poll,
	.mark = pt_mark,
	.snapshot = pt_snapshot,
	.stop = pt_stop,
	.finish = pt_finish,
	.free = pt_free,
	.outside_windows = "Intel PT ran only inside them",
	.capture_hint = "perf script --itrace=cr -i",
};
