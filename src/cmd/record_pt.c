/* record_pt.c: a recording session on the Intel PT engine; see record_pt.h.
 *
 * Who opens the gate's uprobes in the PT group: the gate (rv_gate_attach, with
 * each site's attr, group_fd, cpu and event_pid), not the engine. The gate
 * must count the events on each probe and attach its program with a cookie
 * per event, and it can only do that for events it opens; the engine, given
 * no siblings, opens the PT and sideband events. The session learns each
 * slot's PT fd by passing the engine an ops table that wraps the kernel's and
 * notes the fd of every intel_pt event it opens; the uprobes that take AUX
 * samples are then redirected into their slot's ring (PERF_EVENT_IOC_SET_OUTPUT)
 * and declared in the capture, so that their samples are kept.
 *
 * On a kernel that cannot pause Intel PT (no aux_pause), --filter records
 * everything, and every window the gate closes is written into the capture
 * as a mark (capture/marks.h) in the capture's clock, for the decoder to apply
 * (decode/pt_capture.h). The gate's times are CLOCK_MONOTONIC, the capture's
 * the TSC through the perf mmap page's conversion: the offset between them is
 * measured once, before the target runs.
 *
 * Not here: the engine's or the gate's own work; choosing the engine.
 */
#define RV_LOG_DOMAIN "record"
#include "cmd/record_pt.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/perf_data.h"
#include "cmd/render.h"
#include "decode/pt_capture.h"
#include "symbolize/symbolizer.h"
#include "trace/builder.h"
#include "util/log.h"

#define MAX_SLOTS      1024
#define SIDEBAND_PAGES 128 /* per slot: 512 KiB of sideband ring */
#define POLL_MS	       100
/* Back-to-back reads of the TSC and CLOCK_MONOTONIC; the tightest pair wins. */
#define CLOCK_PAIRS 16

/* ---- the plan ---- */

static int plan_timing(const struct rv_options *opts, enum rv_pt_timing *out, struct rv_error *err)
{
	switch (opts->timer) {
	case RV_TIMER_LOW:
		*out = RV_PT_TIMING_LOW;
		return 0;
	case RV_TIMER_NORMAL:
		*out = RV_PT_TIMING_NORMAL;
		return 0;
	case RV_TIMER_HIGH:
		*out = RV_PT_TIMING_HIGH;
		return 0;
	case RV_TIMER_CUSTOM:
		*out = RV_PT_TIMING_CUSTOM;
		return 0;
	case RV_TIMER_SAMPLE:
		break;
	}
	return rv_error_set(
		err, EINVAL,
		"--timer-resolution sample:HZ sets a sampling rate; Intel PT takes low, "
		"normal, high or custom:... (or use --backend sample)");
}

static int add_gate(struct rv_pt_plan *plan, const struct rv_session *s, enum rv_gate_role role,
		    const struct rv_probe_site *site, bool in_group, enum rv_uprobe_role urole,
		    struct rv_error *err)
{
	struct rv_pt_plan_gate *g = &plan->gate[plan->nr_gate];
	struct rv_uprobe_request req = {
		.path = site->path,
		.file_offset = site->offset,
		.role = urole,
		.aux_sample_size = plan->aux_bytes,
		.aux_buffer_size = plan->aux_bytes,
	};
	int ret;

	*g = (struct rv_pt_plan_gate){ .role = role, .site = site, .in_group = in_group };
	if (in_group) {
		g->uprobe_role = urole;
		ret = rv_uprobe_attr(&g->attr, &plan->uprobe, &req, err);
		if (!ret && plan->per_cpu)
			g->attr.inherit = 1;
		if (!ret)
			ret = rv_aux_rules_check(&g->attr, &plan->pt, &s->pt_pmu, err);
		if (ret)
			return ret;
	}
	plan->nr_gate++;
	return 0;
}

int rv_pt_plan_build(struct rv_pt_plan *plan, const struct rv_session *s,
		     const struct rv_gating_sites *sites, struct rv_error *err)
{
	const struct rv_options *opts = s->opts;
	bool pause = rv_pt_pmu_has_aux_pause(&s->pt_pmu);
	bool filter = sites && sites->filter, trigger = sites && sites->trigger;
	struct rv_pt_request req = { 0 };
	struct rv_sideband_request sb = { 0 };
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = plan_timing(opts, &plan->timing, err);
	if (ret)
		return ret;
	plan->scope = opts->kernel_only	     ? RV_SCOPE_KERNEL
		      : opts->include_kernel ? RV_SCOPE_USER_KERNEL
					     : RV_SCOPE_USER;
	plan->mode = opts->full_execution ? RV_PT_FULL : RV_PT_SNAPSHOT;
	plan->aux_bytes = opts->snapshot_size_bytes ? opts->snapshot_size_bytes : RV_PT_DEFAULT_AUX;
	plan->per_cpu = opts->multi_thread;
	plan->start_paused = filter && pause;
	plan->ungated = filter && !pause;
	plan->trigger_snapshot = trigger && !pause && plan->mode == RV_PT_SNAPSHOT;

	req.timing = plan->timing;
	req.custom_terms = opts->timer_custom;
	req.scope = plan->scope;
	req.start_paused = plan->start_paused;
	ret = rv_pt_attr_build(&plan->pt, &s->pt_pmu, &req, &plan->warnings, err);
	if (ret)
		return ret;
	sb.scope = plan->scope;
	sb.context_switch = plan->per_cpu;
	rv_sideband_attr(&plan->sideband, &sb);
	if (plan->per_cpu) {
		/* per-CPU events on the process follow the threads it creates */
		plan->pt.inherit = 1;
		plan->sideband.inherit = 1;
	}
	if (!filter && !trigger)
		return 0;
	ret = rv_uprobe_pmu_type(s->root, &plan->uprobe, err);
	if (!ret && filter)
		ret = add_gate(plan, s, RV_GATE_START, &sites->start, pause, RV_UPROBE_AUX_RESUME,
			       err);
	if (!ret && filter)
		ret = add_gate(plan, s, RV_GATE_STOP, &sites->stop, pause, RV_UPROBE_AUX_PAUSE,
			       err);
	if (!ret && filter && opts->min_duration_ns)
		ret = add_gate(plan, s, RV_GATE_STOP_SAMPLE, &sites->stop, true,
			       RV_UPROBE_SAMPLE_AUX, err);
	if (!ret && trigger)
		ret = add_gate(plan, s, RV_GATE_TRIGGER, &sites->at, !plan->trigger_snapshot,
			       RV_UPROBE_SAMPLE_AUX, err);
	return ret;
}

static void tell_plan(const struct rv_pt_plan *plan, const struct rv_options *opts)
{
	for (size_t i = 0; i < plan->warnings.count; i++)
		rv_warn("%s", plan->warnings.text[i]);
	if (plan->ungated)
		rv_note("--filter: this kernel cannot pause Intel PT (aux_pause needs Linux "
			"6.13); recording everything, the windows are applied while decoding");
}

/* ---- slots: threads or CPUs ---- */

struct slots {
	pid_t tids[MAX_SLOTS];
	int cpus[MAX_SLOTS];
	size_t nr_tids, nr_cpus;
	pid_t cpu_pid;
};

/* The threads of pid from /proc/PID/task (the process itself when that is
 * unreadable). */
static int add_threads(struct slots *sl, pid_t pid, struct rv_error *err)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	size_t before = sl->nr_tids;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (sl->nr_tids == MAX_SLOTS) {
			closedir(d);
			return rv_error_set(err, E2BIG,
					    "more than %d threads to trace one by one; record with "
					    "--multi-thread (per CPU)",
					    MAX_SLOTS);
		}
		sl->tids[sl->nr_tids++] = (pid_t)tid;
	}
	if (d)
		closedir(d);
	if (sl->nr_tids == before) {
		if (sl->nr_tids == MAX_SLOTS)
			return rv_error_set(err, E2BIG, "too many processes to trace");
		sl->tids[sl->nr_tids++] = pid;
	}
	return 0;
}

static int make_slots(struct slots *sl, const struct rv_session *s, const struct rv_pt_plan *plan,
		      const pid_t *pids, size_t nr_pids, struct rv_error *err)
{
	memset(sl, 0, sizeof(*sl));
	if (plan->per_cpu) {
		int nr = s->machine.nr_cpus > 0 ? s->machine.nr_cpus : 1;

		if (nr_pids > 1)
			return rv_error_set(err, EINVAL,
					    "--multi-thread with Intel PT follows one process and "
					    "its threads; attach to one (-p PID)");
		for (int c = 0; c < nr && c < MAX_SLOTS; c++)
			sl->cpus[sl->nr_cpus++] = c;
		sl->cpu_pid = nr_pids ? pids[0] : -1;
		return 0;
	}
	for (size_t i = 0; i < nr_pids; i++) {
		int ret = add_threads(sl, pids[i], err);

		if (ret)
			return ret;
	}
	return 0;
}

static size_t nr_slots(const struct slots *sl)
{
	return sl->nr_cpus ? sl->nr_cpus : sl->nr_tids;
}

static pid_t slot_pid(const struct slots *sl, size_t i)
{
	return sl->nr_cpus ? sl->cpu_pid : sl->tids[i];
}

static int slot_cpu(const struct slots *sl, size_t i)
{
	return sl->nr_cpus ? sl->cpus[i] : -1;
}

/* ---- --dry-run ---- */

static int describe_gate_event(struct rv_dry_run_plan *dp, const struct rv_pt_plan_gate *g,
			       const struct perf_event_attr *attr, int group, int cpu, pid_t pid,
			       struct rv_error *err)
{
	char label[400];
	struct rv_dry_run_event ev = {
		.label = label,
		.group = group,
		.cpu = cpu,
		.pid = pid,
		.attr = *attr,
		.uprobe_path = g->site->path,
		.uprobe_offset = g->site->offset,
		.bpf_program = "gate_hit",
		.bpf_program_type = "kprobe (uprobe perf event)",
	};

	snprintf(label, sizeof(label), "%s uprobe at %s", rv_gate_role_name(g->role),
		 g->site->function[0] ? g->site->function : "?");
	return rv_dry_run_add_event(dp, &ev, err);
}

int rv_session_describe_pt(struct rv_session *s, const struct rv_gating_sites *sites, pid_t pid,
			   struct rv_dry_run_plan *plan, struct rv_error *err)
{
	struct rv_pt_plan p;
	struct slots *sl = malloc(sizeof(*sl));
	int ret;

	if (!sl)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_pt_plan_build(&p, s, sites, err);
	if (!ret) {
		tell_plan(&p, s->opts);
		if (pid > 0) {
			ret = make_slots(sl, s, &p, &pid, 1, err);
		} else {
			/* the program is not started: one slot for its first thread */
			ret = make_slots(sl, s, &p, NULL, 0, err);
			if (!ret && !p.per_cpu)
				sl->tids[sl->nr_tids++] = 0;
		}
	}
	if (!ret && p.nr_gate)
		rv_dry_run_set_uprobe_pmu(plan, &p.uprobe);
	for (size_t i = 0; !ret && i < nr_slots(sl); i++) {
		char label[96];
		int leader = (int)plan->nr_events;
		int cpu = slot_cpu(sl, i);
		pid_t who = slot_pid(sl, i);
		struct rv_dry_run_event ev = {
			.label = label, .group = -1, .cpu = cpu, .pid = who
		};

		if (cpu >= 0)
			snprintf(label, sizeof(label), "intel_pt, CPU %d", cpu);
		else if (who > 0)
			snprintf(label, sizeof(label), "intel_pt, thread %d", (int)who);
		else
			snprintf(label, sizeof(label), "intel_pt, the program (pid 0: its own)");
		ev.attr = p.pt;
		ret = rv_dry_run_add_event(plan, &ev, err);
		for (size_t k = 0; !ret && k < p.nr_gate; k++)
			if (p.gate[k].in_group)
				ret = describe_gate_event(plan, &p.gate[k], &p.gate[k].attr, leader,
							  cpu, who, err);
		if (!ret) {
			snprintf(label, sizeof(label), "sideband (%s)",
				 cpu >= 0 ? "mmaps, comms, tasks, context switches"
					  : "mmaps, comms, tasks");
			ev.attr = p.sideband;
			ret = rv_dry_run_add_event(plan, &ev, err);
		}
	}
	for (size_t k = 0; !ret && k < p.nr_gate; k++) {
		struct perf_event_attr attr;

		if (p.gate[k].in_group)
			continue;
		rv_gate_plain_attr(&attr, p.uprobe.type, p.gate[k].site->path,
				   p.gate[k].site->offset);
		ret = describe_gate_event(plan, &p.gate[k], &attr, -1, -1, pid > 0 ? pid : -1, err);
	}
	if (!ret && p.nr_gate) {
		ret = rv_gate_describe_bpf(plan, sites->filter,
					   "decides per hit whether the event fires (and so "
					   "resumes, pauses or samples Intel PT)",
					   err);
	}
	free(sl);
	return ret;
}

/* ---- the kernel, with each slot's PT fd noted ---- */

struct noting_ops {
	const struct rv_pt_ops *inner;
	uint32_t pt_type;
	const struct slots *sl;
	int pt_fds[MAX_SLOTS]; /* by slot; -1 until opened */
	/* the first PT event's perf mmap page (its data ring's first page),
	 * for its TSC conversion; NULL until mapped */
	volatile struct perf_event_mmap_page *page;
};

static int note_open(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		     unsigned long flags)
{
	struct noting_ops *n = ctx;
	int fd = n->inner->perf_event_open(n->inner->ctx, attr, pid, cpu, group_fd, flags);

	if (fd < 0 || attr->type != n->pt_type)
		return fd;
	for (size_t i = 0; i < nr_slots(n->sl); i++) {
		if (n->pt_fds[i] < 0 && slot_pid(n->sl, i) == pid && slot_cpu(n->sl, i) == cpu) {
			n->pt_fds[i] = fd;
			break;
		}
	}
	return fd;
}

static int note_mmap(void *ctx, int fd, size_t length, int prot, off_t offset, void **out)
{
	struct noting_ops *n = ctx;
	const struct rv_pt_ops *o = n->inner;
	int ret = o->mmap(o->ctx, fd, length, prot, offset, out);

	if (!ret && !n->page && offset == 0 && fd >= 0 && fd == n->pt_fds[0])
		n->page = *out;
	return ret;
}

static int note_ioctl(void *ctx, int fd, unsigned long request, unsigned long arg)
{
	const struct rv_pt_ops *o = ((struct noting_ops *)ctx)->inner;

	return o->ioctl(o->ctx, fd, request, arg);
}

static int note_poll(void *ctx, struct pollfd *fds, size_t nr, int timeout_ms)
{
	const struct rv_pt_ops *o = ((struct noting_ops *)ctx)->inner;

	return o->poll(o->ctx, fds, nr, timeout_ms);
}

static int note_munmap(void *ctx, void *addr, size_t length)
{
	struct noting_ops *n = ctx;

	if ((void *)n->page == addr)
		n->page = NULL;
	return n->inner->munmap(n->inner->ctx, addr, length);
}

static int note_close(void *ctx, int fd)
{
	struct noting_ops *n = ctx;

	for (size_t i = 0; i < nr_slots(n->sl); i++)
		if (n->pt_fds[i] == fd)
			n->pt_fds[i] = -1;
	return n->inner->close(n->inner->ctx, fd);
}

static uint64_t note_tsc(void *ctx)
{
	const struct rv_pt_ops *o = ((struct noting_ops *)ctx)->inner;

	return o->read_tsc(o->ctx);
}

static uint64_t note_clock(void *ctx)
{
	const struct rv_pt_ops *o = ((struct noting_ops *)ctx)->inner;

	return o->clock_ns(o->ctx);
}

/* ---- the vdso, for the decoder ---- */

/* Copies process pid's [vdso] into dir/vdso.so, as softpt does; a process
 * without one (or gone) is not an error: the decoder then lists it missing. */
static int save_vdso(pid_t pid, const char *dir, struct rv_error *err)
{
	char path[PATH_MAX + 32], line[512];
	unsigned long long start = 0, end = 0;
	FILE *maps, *mem, *out;
	char *buf;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return 0;
	while (!found && fgets(line, sizeof(line), maps)) {
		size_t len = strlen(line);

		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		found = len > 6 && strstr(line, "[vdso]") &&
			sscanf(line, "%llx-%llx", &start, &end) == 2 && end > start &&
			end - start <= (64ull << 20);
	}
	fclose(maps);
	if (!found)
		return 0;
	buf = malloc(end - start);
	if (!buf)
		return rv_error_set(err, ENOMEM, "out of memory for the vdso");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = fopen(path, "re");
	found = mem && !fseeko(mem, (off_t)start, SEEK_SET) &&
		fread(buf, 1, end - start, mem) == end - start;
	if (mem)
		fclose(mem);
	if (!found) {
		free(buf);
		rv_debug("cannot read the vdso of process %d; its code will be missing", (int)pid);
		return 0;
	}
	snprintf(path, sizeof(path), "%s/vdso.so", dir);
	out = fopen(path, "we");
	found = out && fwrite(buf, 1, end - start, out) == end - start;
	if (out && fclose(out))
		found = false;
	free(buf);
	if (!found)
		return rv_error_set(err, errno ? errno : EIO, "cannot write '%s': %s", path,
				    strerror(errno ? errno : EIO));
	return 0;
}

/* ---- recording ---- */

struct pt_run {
	struct rv_session *s;
	const struct rv_pt_plan *plan;
	struct rv_pt_engine *engine;
	struct rv_gate *gate;
	uint64_t snapshots_fired; /* gate records with a snapshot role fired */
	bool done;
	int error;
	struct rv_error *err;
	/* --filter windows and --trigger hits become marks in the capture */
	struct rv_perf_writer *marks;
	int64_t clock_offset; /* CLOCK_MONOTONIC + this = the capture's clock */
	uint64_t nr_marks;
};

/* ---- the gate's windows and hits as marks in the capture ---- */

/* The perf mmap page's TSC conversion, read under its sequence lock; false
 * when the kernel gives none. */
static bool page_time_conv(volatile struct perf_event_mmap_page *page, struct rv_perf_time_conv *tc)
{
	for (int attempt = 0; page && attempt < 1000; attempt++) {
		uint32_t seq = page->lock;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		tc->time_shift = page->time_shift;
		tc->time_mult = page->time_mult;
		tc->time_zero = page->time_zero;
		tc->time_cycles = page->time_cycles;
		tc->time_mask = page->time_mask;
		tc->cap_user_time_zero = page->cap_user_time_zero;
		tc->cap_user_time_short = page->cap_user_time_short;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (page->lock == seq && !(seq & 1))
			return tc->cap_user_time_zero && tc->time_mult;
	}
	return false;
}

/* Measures the offset from CLOCK_MONOTONIC (the gate's times) to the
 * capture's clock, and declares the marks event in the capture. Without a
 * TSC conversion the windows and hits are only counted, with a warning. */
static int prepare_window_marks(struct pt_run *run, const struct noting_ops *no,
				struct rv_perf_writer *capture, struct rv_error *err)
{
	const struct rv_pt_ops *o = no->inner;
	struct rv_pt_clock_pair pairs[CLOCK_PAIRS];
	struct rv_perf_time_conv tc;
	struct perf_event_attr attr;
	uint64_t id = RV_MARK_ID, spread;
	int ret;

	memset(&tc, 0, sizeof(tc));
	if (!page_time_conv(no->page, &tc)) {
		rv_warn("the kernel gives no TSC conversion (cap_user_time_zero), so the gate's "
			"windows and hits cannot be placed in the trace; they are only counted");
		return 0;
	}
	for (size_t i = 0; i < CLOCK_PAIRS; i++) {
		pairs[i].monotonic_before = o->clock_ns(o->ctx);
		pairs[i].tsc = o->read_tsc(o->ctx);
		pairs[i].monotonic_after = o->clock_ns(o->ctx);
	}
	run->clock_offset = rv_pt_clock_offset(&tc, pairs, CLOCK_PAIRS, &spread);
	if (spread == UINT64_MAX) {
		rv_warn("CLOCK_MONOTONIC went backwards while it was measured against the TSC; "
			"the gate's windows and hits are only counted");
		return 0;
	}
	rv_debug("the capture's clock is CLOCK_MONOTONIC %+lld ns (within %llu ns)",
		 (long long)run->clock_offset, (unsigned long long)(spread / 2 + 1));
	rv_mark_attr(&attr, false, 0);
	ret = rv_perf_writer_add_attr(capture, &attr, RV_MARK_EVENT_NAME, &id, 1, err);
	if (!ret)
		run->marks = capture;
	return ret;
}

/* A window the gate closed (with --min-duration only the longer ones, as the
 * sampling engine keeps them) or a trigger hit, as a mark in the capture's
 * clock. Recorded ungated, a window is one that decoding applies. */
static int write_window_mark(struct pt_run *run, const struct rv_gate_record *r)
{
	uint64_t record[RV_MARK_MAX_RECORD / 8];
	bool window = r->type == RV_GATE_REC_WINDOW_END;
	struct rv_mark mark = {
		.kind = window ? RV_MARK_WINDOW : RV_MARK_TRIGGER,
		.flags = (window && r->slow && run->s->opts->min_duration_ns ? RV_MARK_FLAG_SLOW
									    : 0) |
			 (window && run->plan->ungated ? RV_MARK_FLAG_APPLY : 0) |
			 (!window && r->fired ? RV_MARK_FLAG_SNAPSHOT : 0),
		.pid = r->pid,
		.tid = r->tid,
		.time = rv_pt_clock_from_monotonic(r->time_ns, run->clock_offset),
		.duration_ns = window ? r->duration_ns : 0,
		.name = window ? run->s->opts->filter_start : run->s->opts->trigger,
	};

	if (!run->marks || (!window && r->type != RV_GATE_REC_TRIGGER) ||
	    (window && run->s->opts->min_duration_ns && !r->slow))
		return 0;
	rv_mark_record(record, &mark);
	run->nr_marks++;
	return rv_perf_writer_write(run->marks, (const void *)record, run->err);
}

/* rv_gate_record_fn once recording is over: the last windows' marks only. */
static int on_last_record(const struct rv_gate_record *r, void *ctx)
{
	struct pt_run *run = ctx;

	run->error = write_window_mark(run, r);
	return run->error != 0;
}

static int on_gate_record(const struct rv_gate_record *r, void *ctx)
{
	struct pt_run *run = ctx;
	bool snapshot = r->fired && (r->type == RV_GATE_REC_TRIGGER ||
				     (r->type == RV_GATE_REC_WINDOW_END && r->slow));

	run->error = write_window_mark(run, r);
	if (run->error)
		return 1;
	if (!snapshot)
		return 0;
	run->snapshots_fired++;
	rv_debug("gate: %s by thread %u",
		 r->type == RV_GATE_REC_TRIGGER ? "trigger" : "slow window", r->tid);
	if (r->type == RV_GATE_REC_TRIGGER && run->plan->trigger_snapshot) {
		run->error = rv_pt_engine_snapshot(run->engine, run->err);
		if (run->error)
			return 1;
	}
	if (!run->s->opts->multi_snapshot) {
		run->done = true;
		return 1;
	}
	return 0;
}

/* Reads pending signals; true when one asks us to stop. */
static bool read_stop_signals(int fd, int *which)
{
	struct signalfd_siginfo info;
	bool stop = false;

	if (fd < 0)
		return false;
	while (read(fd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
		if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM ||
		    info.ssi_signo == SIGHUP) {
			stop = true;
			*which = (int)info.ssi_signo;
		}
	}
	return stop;
}

static int record_loop(struct pt_run *run, struct rv_target *target, int *stop_signal,
		       struct rv_error *err)
{
	struct pollfd *fds = calloc(MAX_SLOTS * 4 + 2 + 1024, sizeof(*fds));
	size_t n;
	int ret = 0;

	if (!fds)
		return rv_error_set(err, ENOMEM, "out of memory");
	n = rv_pt_engine_pollfds(run->engine, fds, MAX_SLOTS * 4);
	if (run->s->signal_fd >= 0)
		fds[n++] = (struct pollfd){ .fd = run->s->signal_fd, .events = POLLIN };
	if (run->gate)
		fds[n++] = (struct pollfd){ .fd = rv_gate_records_fd(run->gate), .events = POLLIN };
	for (size_t i = 0; i < target->nr_pids; i++)
		if (target->pidfds[i] >= 0)
			fds[n++] = (struct pollfd){ .fd = target->pidfds[i], .events = POLLIN };
	for (;;) {
		if (poll(fds, n, POLL_MS) < 0 && errno != EINTR) {
			ret = rv_error_set(err, errno, "poll: %s", strerror(errno));
			break;
		}
		ret = rv_pt_engine_drain(run->engine, err);
		if (!ret && run->gate) {
			int got = rv_gate_poll(run->gate, 0, on_gate_record, run, err);

			ret = run->error ? run->error : got < 0 ? got : 0;
		}
		if (ret || run->done)
			break;
		if (read_stop_signals(run->s->signal_fd, stop_signal))
			break;
		if (rv_target_poll_exit(target))
			break;
	}
	free(fds);
	return ret;
}

/* The capture decoded with the PT decoder into the session's trace, as
 * `rearview decode` does. */
static int render_pt(struct rv_session *s, const char *note, struct rv_error *err)
{
	struct rv_render_options ro = {
		.capture_path = s->capture_dir,
		.include_kernel = s->opts->include_kernel,
		.recording_note = note,
	};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char *kallsyms =
		s->opts->include_kernel ? rv_pt_capture_probe_kallsyms(s->capture_dir) : NULL;
	struct rv_symbolizer_options so = { .kallsyms_path = kallsyms };
	struct rv_pt_capture_options co = {
		.path = s->capture_dir,
		.include_kernel = s->opts->include_kernel,
		.jobs = cpus > 0 ? (unsigned)cpus : 1,
		.progress = isatty(STDERR_FILENO),
	};
	struct rv_symbolizer *symbolizer = NULL;
	struct rv_pt_capture *capture = NULL;
	struct rv_builder *builder = NULL;
	struct rv_pt_stats stats;
	int ret;

	memset(&stats, 0, sizeof(stats));
	ret = rv_symbolizer_new(&symbolizer, &so, err);
	if (!ret)
		ret = rv_pt_capture_open(&capture, &co, symbolizer, err);
	if (!ret)
		ret = rv_builder_new(&builder, symbolizer, s->writer, err);
	if (!ret)
		ret = rv_render_pt_capture(capture, builder, &stats, NULL, err);
	if (!ret)
		ret = rv_builder_finish(builder, err);
	if (!ret)
		ret = rv_trace_writer_commit(s->writer, err);
	if (!ret)
		rv_render_summary(builder, s->writer, &ro);
	else
		rv_trace_writer_abort(s->writer);
	rv_builder_free(builder);
	rv_pt_capture_free(capture);
	rv_symbolizer_free(symbolizer);
	free(kallsyms);
	return ret;
}

/* The gate's sites: in-group ones once per slot (after the engine opened the
 * PT events), plain ones once. */
static int attach_gate(struct pt_run *run, const struct slots *sl, const struct noting_ops *no,
		       pid_t pid, struct rv_gate_site *gs, size_t *nr_gs, struct rv_error *err)
{
	const struct rv_pt_plan *p = run->plan;
	struct rv_gate_config config = {
		.pid = pid,
		.min_duration_ns = run->s->opts->min_duration_ns,
		.multi_snapshot = run->s->opts->multi_snapshot,
	};
	size_t n = 0;
	int ret;

	for (size_t k = 0; k < p->nr_gate; k++) {
		const struct rv_pt_plan_gate *g = &p->gate[k];

		for (size_t i = 0; g->in_group && i < nr_slots(sl); i++) {
			if (no->pt_fds[i] < 0)
				return rv_error_set(err, EIO,
						    "the Intel PT event of slot %zu was not seen "
						    "opening; cannot put the gate in its group",
						    i);
			gs[n++] = (struct rv_gate_site){ .role = g->role,
							 .path = g->site->path,
							 .offset = g->site->offset,
							 .attr = &g->attr,
							 .event_pid = slot_pid(sl, i),
							 .cpu = slot_cpu(sl, i),
							 .group_fd = no->pt_fds[i] };
		}
		if (!g->in_group)
			gs[n++] = (struct rv_gate_site){ .role = g->role,
							 .path = g->site->path,
							 .offset = g->site->offset,
							 .group_fd = -1,
							 .cpu = -1 };
	}
	*nr_gs = n;
	ret = rv_gate_open(&run->gate, &config, err);
	if (!ret)
		ret = rv_gate_attach(run->gate, gs, n, err);
	return ret;
}

/* The uprobes that take AUX samples write into their slot's ring, and are
 * declared in the capture, so that their samples are kept and decoded. */
static int keep_aux_samples(struct pt_run *run, const struct slots *sl, const struct noting_ops *no,
			    const struct rv_pt_ops *ops, const struct rv_gate_site *gs,
			    size_t nr_gs, struct rv_perf_writer *capture, struct rv_error *err)
{
	uint64_t *ids = calloc(nr_slots(sl), sizeof(*ids));
	int ret = 0;

	if (!ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t k = 0, at = 0; !ret && k < run->plan->nr_gate; k++) {
		const struct rv_pt_plan_gate *g = &run->plan->gate[k];
		size_t nr_ids = 0;

		if (!g->in_group) {
			at++;
			continue;
		}
		for (size_t i = 0; !ret && i < nr_slots(sl); i++, at++) {
			int fd = rv_gate_site_fd(run->gate, at);

			if (at >= nr_gs || fd < 0)
				ret = rv_error_set(err, EIO, "the gate lost the event of site %zu",
						   at);
			if (!ret && g->uprobe_role == RV_UPROBE_SAMPLE_AUX)
				ret = -ops->ioctl(ops->ctx, fd, PERF_EVENT_IOC_SET_OUTPUT,
						  (unsigned long)no->pt_fds[i]);
			if (!ret)
				ret = -ops->ioctl(ops->ctx, fd, PERF_EVENT_IOC_ID,
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

			attr.type = run->plan->uprobe.type;
			snprintf(name, sizeof(name), "uprobe:%s",
				 g->role == RV_GATE_TRIGGER ? "trigger" : "slow_window");
			ret = rv_perf_writer_add_attr(capture, &attr, name, ids, nr_ids, err);
		}
	}
	free(ids);
	return ret;
}

static void gate_report(struct rv_gate *g, const struct rv_pt_plan *p)
{
	struct rv_gate_counts c;
	struct rv_error ignored = { 0 };

	if (!g || rv_gate_counts(g, &c, &ignored))
		return;
	if (p->nr_gate && (p->gate[0].role == RV_GATE_START))
		rv_note("--filter: %llu window%s (%llu longer than --min-duration)",
			(unsigned long long)c.windows, c.windows == 1 ? "" : "s",
			(unsigned long long)c.slow_windows);
	if (c.triggers)
		rv_note("--trigger: %llu hit%s", (unsigned long long)c.triggers,
			c.triggers == 1 ? "" : "s");
	if (c.record_drops)
		rv_warn("the gate lost %llu records (its ring was full)",
			(unsigned long long)c.record_drops);
}

int rv_session_record_pt_ops(struct rv_session *s, struct rv_target *target,
			     const struct rv_gating_sites *sites, const struct rv_pt_ops *ops,
			     struct rv_error *err)
{
	struct rv_pt_plan *plan = calloc(1, sizeof(*plan));
	struct slots *sl = calloc(1, sizeof(*sl));
	struct noting_ops *no = calloc(1, sizeof(*no));
	struct rv_gate_site *gs = NULL;
	struct rv_perf_writer *capture = NULL;
	struct rv_pt_record_stats stats;
	struct pt_run run = { .s = s, .err = err };
	struct rv_pt_ops wrapped = {
		.ctx = no,
		.perf_event_open = note_open,
		.mmap = note_mmap,
		.munmap = note_munmap,
		.ioctl = note_ioctl,
		.poll = note_poll,
		.close = note_close,
		.read_tsc = note_tsc,
		.clock_ns = note_clock,
	};
	char capture_path[PATH_MAX + 32], note[160];
	size_t nr_gs = 0;
	bool min_duration = sites && sites->filter && s->opts->min_duration_ns;
	int stop_signal = 0, ret;

	if (!plan || !sl || !no) {
		ret = rv_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	run.plan = plan;
	ret = rv_pt_plan_build(plan, s, sites, err);
	if (!ret && plan->nr_gate && ops)
		ret = rv_error_set(err, EINVAL, "the gate needs the real kernel");
	if (!ret && plan->nr_gate && target->nr_pids != 1)
		ret = rv_error_set(err, EINVAL,
				   "--filter and --trigger follow one process; attach to one "
				   "(-p PID)");
	if (!ret)
		ret = make_slots(sl, s, plan, target->pids, target->nr_pids, err);
	if (ret)
		goto out;
	tell_plan(plan, s->opts);
	if (s->backend_note)
		rv_note("%s", s->backend_note);

	no->inner = ops ? ops : &rv_pt_syscall_ops;
	no->pt_type = s->pt_pmu.type;
	no->sl = sl;
	for (size_t i = 0; i < MAX_SLOTS; i++)
		no->pt_fds[i] = -1;
	snprintf(capture_path, sizeof(capture_path), "%s/perf.data", s->capture_dir);
	ret = rv_perf_writer_open(&capture, capture_path, plan->scope != RV_SCOPE_USER, err);
	if (!ret) {
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
			.capture = capture,
			.ops = &wrapped,
		};

		ret = rv_pt_engine_open(&run.engine, &config, err);
	}
	if (!ret && plan->scope != RV_SCOPE_USER)
		ret = rv_pt_engine_copy_kernel_files(NULL, s->capture_dir, err);
	if (!ret && plan->nr_gate) {
		gs = calloc(plan->nr_gate * nr_slots(sl) + plan->nr_gate, sizeof(*gs));
		ret = gs ? attach_gate(&run, sl, no, target->pids[0], gs, &nr_gs, err)
			 : rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!ret && target->nr_pids)
		ret = save_vdso(target->pids[0], s->capture_dir, err);
	if (!ret)
		ret = rv_pt_engine_start(run.engine, err);
	if (!ret && run.gate)
		ret = keep_aux_samples(&run, sl, no, &wrapped, gs, nr_gs, capture, err);
	if (!ret && run.gate)
		ret = prepare_window_marks(&run, no, capture, err);
	if (!ret)
		ret = rv_target_release(target, err);
	if (!ret) {
		rv_debug("recording %zu process%s with Intel PT (%s mode, %llu KiB per %s)",
			 target->nr_pids, target->nr_pids == 1 ? "" : "es",
			 plan->mode == RV_PT_FULL ? "full" : "snapshot",
			 (unsigned long long)(plan->aux_bytes >> 10),
			 plan->per_cpu ? "CPU" : "thread");
		ret = record_loop(&run, target, &stop_signal, err);
	}
	if (!ret && run.marks) {
		/* windows closed since the loop's last poll */
		int got = rv_gate_poll(run.gate, 0, on_last_record, &run, err);

		ret = run.error ? run.error : got < 0 ? got : 0;
		if (!ret)
			rv_debug("%llu --filter windows and --trigger hits written into the "
				 "capture",
				 (unsigned long long)run.nr_marks);
	}
	if (ret)
		goto out;
	s->stop_signal = stop_signal;
	s->snapshot_ended = run.done;
	if (stop_signal)
		rv_note("%s: stopping the recording and writing the trace", strsignal(stop_signal));
	else if (run.done)
		rv_note("snapshot taken: stopping the recording and writing the trace%s",
			target->spawned ? "; the program runs on" : "");
	/* The end is a snapshot of its own unless windows or triggers were the
	 * snapshots asked for (a --trigger that never fired keeps the end). */
	ret = rv_pt_engine_stop(run.engine,
				!min_duration && !(sites && sites->trigger && run.snapshots_fired),
				err);
	if (!ret && sites && sites->trigger && !run.snapshots_fired)
		rv_note("--trigger never fired: the trace is the end of the recording");
	rv_pt_engine_stats(run.engine, &stats);
	gate_report(run.gate, plan);
	rv_gate_free(run.gate); /* the program runs on, unprobed */
	run.gate = NULL;
	rv_pt_engine_free(run.engine);
	run.engine = NULL;
	if (!ret) {
		const char *const *argv = (const char *const *)s->opts->argv;
		struct rv_perf_meta meta = { .argc = s->opts->argc, .argv = argv, .clockid = -1 };

		ret = rv_perf_writer_finish(capture, &meta, err);
	}
	rv_perf_writer_free(capture);
	capture = NULL;
	if (ret)
		goto out;
	if (stats.truncated || stats.lost_records)
		rv_warn("Intel PT lost data while recording (%llu truncated buffers, %llu lost "
			"sideband records); a larger --snapshot-size or --timer-resolution low "
			"loses less",
			(unsigned long long)stats.truncated,
			(unsigned long long)stats.lost_records);
	if (stats.lapped)
		rv_debug("%llu snapshots found the buffer overwritten since the one before",
			 (unsigned long long)stats.lapped);
	if (stats.aux_bytes + stats.aux_sample_bytes == 0 && stats.aux_samples == 0) {
		ret = rv_error_set(err, ENODATA,
				   "Intel PT recorded no trace (%s); nothing to write",
				   min_duration ? "no window lasted longer than --min-duration"
						: "the program ran no traced code while recorded");
		goto out;
	}
	snprintf(note, sizeof(note), "Intel PT, %s, %llu KiB of trace",
		 plan->mode == RV_PT_FULL ? "full execution" : "snapshot",
		 (unsigned long long)((stats.aux_bytes + stats.aux_sample_bytes) >> 10));
	ret = render_pt(s, note, err);
	if (!ret && !s->capture_dir_is_temporary)
		rv_note("the capture is in %s (perf script -i %s --itrace=cr)", capture_path,
			capture_path);
out:
	rv_gate_free(run.gate);
	rv_pt_engine_free(run.engine);
	rv_perf_writer_free(capture);
	free(gs);
	free(no);
	free(sl);
	free(plan);
	return ret;
}

int rv_session_record_pt(struct rv_session *s, struct rv_target *target,
			 const struct rv_gating_sites *sites, struct rv_error *err)
{
	return rv_session_record_pt_ops(s, target, sites, NULL, err);
}
