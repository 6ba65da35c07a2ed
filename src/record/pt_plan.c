/* pt_plan.c: what an Intel PT recording opens; see pt_plan.h. */
#define RV_LOG_DOMAIN "record"
#include "record/pt_plan.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the plan ---- */

int rv_pt_plan_timing(const struct rv_options *opts, enum rv_pt_timing *out, struct rv_error *err)
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
	return rv_error_set(err, EINVAL,
			    "--timer-resolution sample:%llu sets a sampling rate; Intel PT takes "
			    "low, normal, high or custom:... (or use --backend sample)",
			    (unsigned long long)opts->sample_hz);
}

static int add_gate(struct rv_pt_plan *plan, const struct rv_pt_pmu *pmu, enum rv_gate_role role,
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
			ret = rv_aux_rules_check(&g->attr, &plan->pt, pmu, err);
		if (ret)
			return ret;
	}
	plan->nr_gate++;
	return 0;
}

int rv_pt_plan_build(struct rv_pt_plan *plan, const struct rv_options *opts,
		     const struct rv_pt_pmu *pmu, const char *root,
		     const struct rv_gate_sites *sites, struct rv_error *err)
{
	bool pause = rv_pt_pmu_has_aux_pause(pmu);
	bool filter = sites && sites->filter, trigger = sites && sites->trigger;
	struct rv_pt_request req = { 0 };
	struct rv_sideband_request sb = { 0 };
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = rv_pt_plan_timing(opts, &plan->timing, err);
	if (ret)
		return ret;
	plan->scope = opts->kernel_only	     ? RV_SCOPE_KERNEL
		      : opts->include_kernel ? RV_SCOPE_USER_KERNEL
					     : RV_SCOPE_USER;
	plan->mode = opts->full_execution ? RV_PT_FULL : RV_PT_SNAPSHOT;
	plan->aux_bytes = opts->snapshot_size_bytes ? opts->snapshot_size_bytes : RV_PT_DEFAULT_AUX;
	/* Following children takes per-CPU events: a per-task event that children
	 * inherit cannot be mapped (the kernel refuses, so that they do not all
	 * write one buffer), so it is perf's way for a workload too. */
	plan->follow = opts->command == RV_CMD_RUN && !opts->no_follow;
	plan->per_cpu = opts->multi_thread || plan->follow;
	plan->start_paused = filter && pause;
	plan->ungated = filter && !pause;
	plan->trigger_snapshot = trigger && !pause && plan->mode == RV_PT_SNAPSHOT;
	/* The PERF_SAMPLE_AUX path (one sample of at most RV_AUX_SAMPLE_MAX
	 * bytes at the hit) is not planned where PT can be paused: pausing and
	 * copying keeps --snapshot-size whatever it is, and a sample could
	 * never hold more than 60 KiB. It stays for --min-duration on kernels
	 * that cannot pause. */
	plan->pause_snapshots = (trigger || (filter && opts->min_duration_ns)) && pause &&
				plan->mode == RV_PT_SNAPSHOT;
	plan->resume = plan->pause_snapshots && trigger && opts->multi_snapshot;
	plan->snapshot_bytes = plan->aux_bytes;

	req.timing = plan->timing;
	req.custom_terms = opts->timer_custom;
	req.scope = plan->scope;
	req.start_paused = plan->start_paused;
	ret = rv_pt_attr_build(&plan->pt, pmu, &req, &plan->warnings, err);
	if (ret)
		return ret;
	sb.scope = plan->scope;
	sb.context_switch = plan->per_cpu;
	rv_sideband_attr(&plan->sideband, &sb);
	if (plan->per_cpu) {
		/* per-CPU events on the process follow the threads it creates, and
		 * the processes it forks (and what they exec): an inherited event
		 * writes into its parent's buffers. The gate's grouped uprobes are
		 * inherited with their group. */
		plan->pt.inherit = 1;
		plan->sideband.inherit = 1;
	}
	if (!filter && !trigger)
		return 0;
	ret = rv_uprobe_pmu_type(root, &plan->uprobe, err);
	if (!ret && filter)
		ret = add_gate(plan, pmu, RV_GATE_START, &sites->start, pause, RV_UPROBE_AUX_RESUME,
			       err);
	if (!ret && filter)
		ret = add_gate(plan, pmu, RV_GATE_STOP, &sites->stop, pause, RV_UPROBE_AUX_PAUSE,
			       err);
	if (!ret && filter && opts->min_duration_ns && !plan->pause_snapshots) {
		ret = add_gate(plan, pmu, RV_GATE_STOP_SAMPLE, &sites->stop, true,
			       RV_UPROBE_SAMPLE_AUX, err);
		/* rv_uprobe_attr's clamp, as the kernel will apply it */
		if (!ret)
			plan->snapshot_bytes = plan->gate[plan->nr_gate - 1].attr.aux_sample_size;
	}
	if (!ret && trigger)
		ret = add_gate(plan, pmu, RV_GATE_TRIGGER, &sites->at, !plan->trigger_snapshot,
			       plan->pause_snapshots ? RV_UPROBE_AUX_PAUSE : RV_UPROBE_SAMPLE_AUX,
			       err);
	if (!ret && trigger && !plan->pause_snapshots && !plan->trigger_snapshot)
		plan->snapshot_bytes = plan->gate[plan->nr_gate - 1].attr.aux_sample_size;
	if (!ret && plan->resume)
		rv_pt_resume_attr(&plan->resume_attr, plan->scope, plan->per_cpu);
	return ret;
}

/* ---- slots: threads or CPUs ---- */

/* The threads of pid from /proc/PID/task (the process itself when that is
 * unreadable). */
static int add_threads(struct rv_pt_slots *slots, pid_t pid, struct rv_error *err)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	size_t before = slots->nr_tids;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (slots->nr_tids == RV_PT_MAX_SLOTS) {
			closedir(d);
			return rv_error_set(err, E2BIG,
					    "more than %d threads to trace one by one; record with "
					    "--multi-thread (per CPU)",
					    RV_PT_MAX_SLOTS);
		}
		slots->tids[slots->nr_tids++] = (pid_t)tid;
	}
	if (d)
		closedir(d);
	if (slots->nr_tids == before) {
		if (slots->nr_tids == RV_PT_MAX_SLOTS)
			return rv_error_set(err, E2BIG, "too many processes to trace");
		slots->tids[slots->nr_tids++] = pid;
	}
	return 0;
}

int rv_pt_slots_build(struct rv_pt_slots *slots, const struct rv_pt_plan *plan, int nr_cpus,
		      const pid_t *pids, size_t nr_pids, struct rv_error *err)
{
	memset(slots, 0, sizeof(*slots));
	if (plan->per_cpu) {
		int nr = nr_cpus > 0 ? nr_cpus : 1;

		if (nr_pids > 1)
			return rv_error_set(err, EINVAL,
					    "--multi-thread with Intel PT follows one process and "
					    "its threads; attach to one (-p PID)");
		for (int c = 0; c < nr && c < RV_PT_MAX_SLOTS; c++)
			slots->cpus[slots->nr_cpus++] = c;
		slots->cpu_pid = nr_pids ? pids[0] : -1;
		return 0;
	}
	if (!nr_pids) {
		/* the program is not started: one slot for its first thread */
		slots->tids[slots->nr_tids++] = 0;
		return 0;
	}
	for (size_t i = 0; i < nr_pids; i++) {
		int ret = add_threads(slots, pids[i], err);

		if (ret)
			return ret;
	}
	return 0;
}

size_t rv_pt_slots_count(const struct rv_pt_slots *slots)
{
	return slots->nr_cpus ? slots->nr_cpus : slots->nr_tids;
}

pid_t rv_pt_slot_pid(const struct rv_pt_slots *slots, size_t i)
{
	return slots->nr_cpus ? slots->cpu_pid : slots->tids[i];
}

int rv_pt_slot_cpu(const struct rv_pt_slots *slots, size_t i)
{
	return slots->nr_cpus ? slots->cpus[i] : -1;
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

/* The sizes the snapshots keep, in the dry run's words. */
static int describe_snapshots(const struct rv_pt_plan *p, const struct rv_pt_slots *slots,
			      struct rv_dry_run_plan *dp, struct rv_error *err)
{
	bool trigger = false, windows = false;
	size_t nr = rv_pt_slots_count(slots);
	char how[320];

	for (size_t k = 0; k < p->nr_gate; k++) {
		trigger |= p->gate[k].role == RV_GATE_TRIGGER;
		windows |= p->gate[k].role == RV_GATE_STOP_SAMPLE;
	}
	windows |= p->pause_snapshots && !trigger;
	if (p->mode == RV_PT_FULL)
		return rv_dry_run_add_snapshot(dp, "the whole run (--full-execution)", 0,
					       "every byte, drained as it is written", err);
	if (p->pause_snapshots) {
		snprintf(how, sizeof(how),
			 "the whole AUX area of each of the %zu Intel PT buffer%s, ending where "
			 "the kernel paused Intel PT (aux_pause on the %s uprobe), copied in "
			 "user space%s",
			 nr, nr == 1 ? "" : "s", trigger ? "trigger" : "STOP",
			 p->resume ? "; PT resumes after each copy (a gap in the trace)"
			 : trigger ? ""
				   : "; the next window's START resumes it");
		return rv_dry_run_add_snapshot(dp, trigger ? "--trigger" : "--min-duration window",
					       p->snapshot_bytes, how, err);
	}
	if (p->trigger_snapshot)
		return rv_dry_run_add_snapshot(
			dp, "--trigger", p->snapshot_bytes,
			"the whole AUX area, copied in user space once rearview has read the "
			"gate's record (this kernel cannot pause Intel PT: the copy ends that "
			"late after the hit, usually well under a millisecond)",
			err);
	if (trigger || windows) {
		snprintf(how, sizeof(how),
			 "one PERF_SAMPLE_AUX sample in the kernel (at most %u bytes: a record's "
			 "size is 16 bits)",
			 RV_AUX_SAMPLE_MAX);
		return rv_dry_run_add_snapshot(dp, trigger ? "--trigger" : "--min-duration window",
					       p->snapshot_bytes, how, err);
	}
	return rv_dry_run_add_snapshot(dp, "the end of the run", p->aux_bytes,
				       "the whole AUX area of each buffer", err);
}

int rv_pt_plan_describe(const struct rv_pt_plan *p, const struct rv_pt_slots *slots,
			const struct rv_gate_sites *sites, pid_t pid, struct rv_dry_run_plan *dp,
			struct rv_error *err)
{
	int ret = 0;

	if (p->nr_gate)
		rv_dry_run_set_uprobe_pmu(dp, &p->uprobe);
	for (size_t i = 0; !ret && i < rv_pt_slots_count(slots); i++) {
		char label[96];
		int leader = (int)dp->nr_events;
		int cpu = rv_pt_slot_cpu(slots, i);
		pid_t who = rv_pt_slot_pid(slots, i);
		struct rv_dry_run_event ev = {
			.label = label, .group = -1, .cpu = cpu, .pid = who
		};

		/* before the program starts, a per-CPU slot's process is the
		 * program (pid 0 in the plan, as for a per-thread slot) */
		if (cpu >= 0 && who < 0)
			ev.pid = who = 0;
		if (cpu >= 0)
			snprintf(label, sizeof(label), "intel_pt, CPU %d%s", cpu,
				 p->follow ? ", the target and its children (inherit)" : "");
		else if (who > 0)
			snprintf(label, sizeof(label), "intel_pt, thread %d", (int)who);
		else
			snprintf(label, sizeof(label), "intel_pt, the program (pid 0: its own)");
		ev.attr = p->pt;
		ret = rv_dry_run_add_event(dp, &ev, err);
		for (size_t k = 0; !ret && k < p->nr_gate; k++)
			if (p->gate[k].in_group)
				ret = describe_gate_event(dp, &p->gate[k], &p->gate[k].attr, leader,
							  cpu, who, err);
		if (!ret && p->resume) {
			struct rv_dry_run_event res = ev;

			res.label = "resume after each snapshot copy (cpu-clock, aux_resume; "
				    "armed by rearview)";
			res.group = leader;
			res.attr = p->resume_attr;
			ret = rv_dry_run_add_event(dp, &res, err);
		}
		if (!ret) {
			snprintf(label, sizeof(label), "sideband (%s)",
				 cpu >= 0 ? "mmaps, comms, tasks, context switches"
					  : "mmaps, comms, tasks");
			ev.attr = p->sideband;
			ret = rv_dry_run_add_event(dp, &ev, err);
		}
	}
	for (size_t k = 0; !ret && k < p->nr_gate; k++) {
		struct perf_event_attr attr;

		if (p->gate[k].in_group)
			continue;
		rv_gate_plain_attr(&attr, p->uprobe.type, p->gate[k].site->path,
				   p->gate[k].site->offset);
		/* the gate's own uprobes are on the target's process alone:
		 * its children's windows are not seen */
		ret = describe_gate_event(dp, &p->gate[k], &attr, -1, -1, pid > 0 ? pid : -1, err);
	}
	if (!ret)
		ret = describe_snapshots(p, slots, dp, err);
	if (!ret && p->nr_gate)
		ret = rv_gate_describe_bpf(dp, sites->filter,
					   "decides per hit whether the event fires (and so "
					   "resumes, pauses or samples Intel PT)",
					   err);
	return ret;
}
