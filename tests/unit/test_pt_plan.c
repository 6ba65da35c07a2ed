/* test_pt_plan.c: the Intel PT recording's plan (record/pt_plan.h) for the
 * fake sysfs trees of tests/data/sysfs and the option combinations of issue
 * 5: the PT group, the gate's roles and aux_action bits, sample types,
 * warnings, the slots, and what --dry-run lists.
 *
 * Not here: the attrs' own rules (test_pt_attr.c), the printer
 * (test_dry_run.c), the engine's ring handling (test_pt_engine.c), a whole
 * session (test_session.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "record/pt_plan.h"
#include "sysfs_root.h"

struct world {
	struct rv_options opts;
	struct rv_pt_pmu pmu;
	const char *root;
	int nr_cpus;
	struct rv_gate_sites sites;
	struct rv_pt_plan plan;
	struct rv_error err;
};

static void world_init(struct world *w, const char *cpu)
{
	memset(w, 0, sizeof(*w));
	w->opts.timer = RV_TIMER_NORMAL;
	w->root = sysfs_tree(cpu);
	w->nr_cpus = 4;
	cr_assert_eq(rv_pt_pmu_discover(&w->pmu, w->root, &w->err), 0, "%s: %s", cpu,
		     w->err.message);
	snprintf(w->sites.start.path, sizeof(w->sites.start.path), "/usr/bin/server");
	w->sites.start.offset = 0x1130;
	snprintf(w->sites.start.function, sizeof(w->sites.start.function), "request_begin");
	w->sites.stop = w->sites.start;
	w->sites.stop.offset = 0x1190;
	snprintf(w->sites.stop.function, sizeof(w->sites.stop.function), "request_end");
	w->sites.at = w->sites.start;
	w->sites.at.offset = 0x1200;
	snprintf(w->sites.at.function, sizeof(w->sites.at.function), "on_trigger");
}

static void build(struct world *w, bool filter, bool trigger)
{
	w->sites.filter = filter;
	w->sites.trigger = trigger;
	cr_assert_eq(rv_pt_plan_build(&w->plan, &w->opts, &w->pmu, w->root,
				      filter || trigger ? &w->sites : NULL, &w->err),
		     0, "%s", w->err.message);
}

/* What --dry-run shows of the plan for process pid (0: not started). */
static int describe(struct world *w, pid_t pid, struct rv_dry_run_plan *dp)
{
	static struct rv_pt_slots slots;
	int ret = rv_pt_plan_build(&w->plan, &w->opts, &w->pmu, w->root, &w->sites, &w->err);

	if (!ret)
		ret = rv_pt_slots_build(&slots, &w->plan, w->nr_cpus, pid > 0 ? &pid : NULL,
					pid > 0 ? 1 : 0, &w->err);
	return ret ? ret : rv_pt_plan_describe(&w->plan, &slots, &w->sites, pid, dp, &w->err);
}

static const struct rv_pt_plan_gate *role(const struct rv_pt_plan *p, enum rv_gate_role r)
{
	for (size_t i = 0; i < p->nr_gate; i++)
		if (p->gate[i].role == r)
			return &p->gate[i];
	return NULL;
}

static uint64_t field(const struct world *w, const char *name, uint64_t config)
{
	const struct rv_pmu_format *f = rv_pmu_format_find(&w->pmu.formats, name);

	cr_assert_not_null(f, "no format %s", name);
	return rv_pmu_format_get(f, config);
}

Test(pt_plan, no_gate_is_one_pt_event_and_its_sideband_per_thread)
{
	struct world w;

	world_init(&w, "icelake");
	build(&w, false, false);
	cr_assert_eq(w.plan.nr_gate, 0);
	cr_assert_eq(w.plan.pt.type, w.pmu.type);
	cr_assert_eq(rv_attr_aux_action(&w.plan.pt), 0, "nothing paused without --filter");
	cr_assert(w.plan.pt.exclude_kernel && !w.plan.pt.exclude_user);
	cr_assert(!w.plan.pt.inherit && !w.plan.per_cpu);
	cr_assert(!w.plan.sideband.context_switch);
	cr_assert(w.plan.sideband.mmap2 && w.plan.sideband.comm && w.plan.sideband.task);
	cr_assert_eq(w.plan.sideband.sample_type, RV_PT_SAMPLE_TYPE);
	cr_assert_eq(w.plan.pt.sample_type, RV_PT_SAMPLE_TYPE);
	cr_assert_eq(w.plan.mode, RV_PT_SNAPSHOT);
	cr_assert_eq(w.plan.aux_bytes, RV_PT_DEFAULT_AUX);
	/* normal: cyc=1, mtc_period=0 over perf's defaults */
	cr_assert_eq(field(&w, "cyc", w.plan.pt.config), 1);
	cr_assert_eq(field(&w, "mtc_period", w.plan.pt.config), 0);
	cr_assert_eq(w.plan.warnings.count, 0);
}

Test(pt_plan, filter_on_613_pauses_pt_and_resumes_it_in_windows)
{
	struct world w;
	const struct rv_pt_plan_gate *start, *stop;

	world_init(&w, "icelake");
	build(&w, true, false);
	cr_assert(w.plan.start_paused && !w.plan.ungated);
	cr_assert(rv_attr_aux_start_paused(&w.plan.pt));
	cr_assert_geq(w.plan.pt.size, RV_ATTR_SIZE_AUX_ACTION);
	cr_assert_eq(w.plan.nr_gate, 2);
	start = role(&w.plan, RV_GATE_START);
	stop = role(&w.plan, RV_GATE_STOP);
	cr_assert(start && stop);
	cr_assert(start->in_group && stop->in_group);
	cr_assert_eq(rv_attr_aux_action(&start->attr), RV_AUX_RESUME);
	cr_assert_eq(rv_attr_aux_action(&stop->attr), RV_AUX_PAUSE);
	cr_assert_eq(start->attr.type, w.plan.uprobe.type);
	cr_assert_eq(start->attr.type, 7, "icelake's uprobe PMU");
	cr_assert_eq(start->attr.config2, 0x1130);
	cr_assert_eq(stop->attr.config2, 0x1190);
	cr_assert_str_eq((const char *)(uintptr_t)start->attr.config1, "/usr/bin/server");
	cr_assert_eq(start->attr.sample_period, 1, "actions fire on overflow only");
	cr_assert_eq(start->attr.sample_type & PERF_SAMPLE_AUX, 0);
	cr_assert(!start->attr.disabled, "group members are enabled with their leader");
	cr_assert_eq(rv_aux_rules_check(&stop->attr, &w.plan.pt, &w.pmu, &w.err), 0);
}

/* Linux 6.13+: every window's STOP pauses PT, and a slow one's snapshot is
 * the whole AUX area, copied; no AUX sample, whose 16-bit record would cap
 * it at 60 KiB. */
Test(pt_plan, min_duration_keeps_the_whole_area_by_pausing_at_stop)
{
	struct world w;
	const struct rv_pt_plan_gate *g;

	world_init(&w, "icelake");
	w.opts.min_duration_ns = 300000;
	build(&w, true, false);
	cr_assert_eq(w.plan.nr_gate, 2, "START and STOP, no STOP sample");
	cr_assert_null(role(&w.plan, RV_GATE_STOP_SAMPLE));
	g = role(&w.plan, RV_GATE_STOP);
	cr_assert(g && g->in_group && g->uprobe_role == RV_UPROBE_AUX_PAUSE);
	cr_assert(!(g->attr.sample_type & PERF_SAMPLE_AUX));
	cr_assert(w.plan.pause_snapshots && !w.plan.resume);
	cr_assert_eq(w.plan.snapshot_bytes, 4u << 20, "--snapshot-size, not 60 KiB");
}

/* Before 6.13 nothing pauses: the STOP sample is the kernel's AUX sample,
 * capped as the kernel caps it. */
Test(pt_plan, min_duration_before_613_samples_aux_capped_by_the_kernels_limit)
{
	struct world w;
	const struct rv_pt_plan_gate *g;

	world_init(&w, "kernel-6.1");
	w.opts.min_duration_ns = 300000;
	build(&w, true, false);
	cr_assert(!w.plan.pause_snapshots);
	g = role(&w.plan, RV_GATE_STOP_SAMPLE);
	cr_assert_not_null(g);
	cr_assert(g->in_group);
	cr_assert_eq(g->uprobe_role, RV_UPROBE_SAMPLE_AUX);
	cr_assert_eq(g->attr.config2, 0x1190, "on the STOP site");
	cr_assert(g->attr.sample_type & PERF_SAMPLE_AUX);
	cr_assert_eq(g->attr.aux_sample_size, RV_AUX_SAMPLE_MAX, "4 MiB capped at 60 KiB");
	cr_assert_eq(w.plan.snapshot_bytes, RV_AUX_SAMPLE_MAX);
	cr_assert_eq(rv_attr_aux_action(&g->attr), 0);

	/* a smaller AUX area caps it instead */
	world_init(&w, "kernel-6.1");
	w.opts.min_duration_ns = 300000;
	w.opts.snapshot_size_bytes = 16384;
	build(&w, true, false);
	g = role(&w.plan, RV_GATE_STOP_SAMPLE);
	cr_assert_eq(w.plan.aux_bytes, 16384);
	cr_assert_eq(g->attr.aux_sample_size, 16384);
}

Test(pt_plan, trigger_pauses_in_kernel_on_613_and_snapshots_in_user_space_before)
{
	struct world w;
	const struct rv_pt_plan_gate *g;

	world_init(&w, "icelake");
	w.opts.snapshot_size_bytes = 16u << 20;
	build(&w, false, true);
	cr_assert_eq(w.plan.nr_gate, 1);
	g = role(&w.plan, RV_GATE_TRIGGER);
	cr_assert(g && g->in_group && !w.plan.trigger_snapshot);
	cr_assert_eq(g->uprobe_role, RV_UPROBE_AUX_PAUSE);
	cr_assert(rv_attr_aux_pause(&g->attr));
	cr_assert(!(g->attr.sample_type & PERF_SAMPLE_AUX), "no 60 KiB sample");
	cr_assert_eq(g->attr.config2, 0x1200);
	cr_assert(w.plan.pause_snapshots && !w.plan.resume, "one snapshot: nothing resumes");
	cr_assert_eq(w.plan.snapshot_bytes, 16u << 20, "what --snapshot-size asked");
	cr_assert(!rv_attr_aux_start_paused(&w.plan.pt), "--trigger alone records everything");

	/* --multi-snapshot: a cpu-clock sibling resumes after each copy */
	world_init(&w, "icelake");
	w.opts.multi_snapshot = true;
	build(&w, false, true);
	cr_assert(w.plan.resume);
	cr_assert_eq(w.plan.resume_attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(w.plan.resume_attr.config, PERF_COUNT_SW_CPU_CLOCK);
	cr_assert(rv_attr_aux_resume(&w.plan.resume_attr) && w.plan.resume_attr.disabled);
	cr_assert_eq(w.plan.resume_attr.inherit, w.plan.per_cpu);
	cr_assert_eq(w.plan.resume_attr.sample_type, RV_PT_SAMPLE_TYPE);

	world_init(&w, "kernel-6.1");
	build(&w, false, true);
	g = role(&w.plan, RV_GATE_TRIGGER);
	cr_assert(g && !g->in_group && w.plan.trigger_snapshot && !w.plan.pause_snapshots);
	cr_assert_eq(rv_attr_aux_action(&w.plan.pt), 0);
	cr_assert_eq(w.plan.snapshot_bytes, 4u << 20);

	/* full mode has no snapshots to take */
	world_init(&w, "kernel-6.1");
	w.opts.full_execution = true;
	build(&w, false, true);
	cr_assert_eq(w.plan.mode, RV_PT_FULL);
	cr_assert(!w.plan.trigger_snapshot);
}

Test(pt_plan, filter_before_613_records_ungated_with_plain_window_probes)
{
	static const char *const cpus[] = { "kernel-6.1", "skylake" };

	for (size_t i = 0; i < 2; i++) {
		struct world w;

		world_init(&w, cpus[i]);
		build(&w, true, false);
		cr_assert(w.plan.ungated && !w.plan.start_paused, "%s", cpus[i]);
		cr_assert_eq(rv_attr_aux_action(&w.plan.pt), 0, "%s", cpus[i]);
		cr_assert_eq(w.plan.nr_gate, 2);
		for (size_t k = 0; k < w.plan.nr_gate; k++)
			cr_assert(!w.plan.gate[k].in_group, "%s: no pause, no group", cpus[i]);
	}
}

Test(pt_plan, multi_thread_is_per_cpu_with_context_switches_and_inherit)
{
	struct world w;

	world_init(&w, "icelake");
	w.opts.multi_thread = true;
	w.opts.min_duration_ns = 1000;
	build(&w, true, false);
	cr_assert(w.plan.per_cpu);
	cr_assert(w.plan.sideband.context_switch);
	cr_assert(w.plan.pt.inherit && w.plan.sideband.inherit);
	for (size_t k = 0; k < w.plan.nr_gate; k++)
		cr_assert(w.plan.gate[k].attr.inherit, "group members follow their leader");
}

Test(pt_plan, kernel_scopes_set_the_exclude_bits)
{
	struct world w;

	world_init(&w, "icelake");
	w.opts.include_kernel = true;
	build(&w, false, false);
	cr_assert_eq(w.plan.scope, RV_SCOPE_USER_KERNEL);
	cr_assert(!w.plan.pt.exclude_kernel && !w.plan.pt.exclude_user);
	cr_assert(!w.plan.sideband.exclude_kernel);

	world_init(&w, "icelake");
	w.opts.include_kernel = w.opts.kernel_only = true;
	build(&w, false, false);
	cr_assert_eq(w.plan.scope, RV_SCOPE_KERNEL);
	cr_assert(!w.plan.pt.exclude_kernel && w.plan.pt.exclude_user);
}

Test(pt_plan, timer_resolutions_map_to_pt_terms_and_warn_where_the_cpu_cannot)
{
	struct world w;

	world_init(&w, "skylake");
	w.opts.timer = RV_TIMER_CUSTOM;
	w.opts.timer_custom = "cyc=1,cyc_thresh=2,psb_period=1";
	build(&w, false, false);
	cr_assert_eq(w.plan.timing, RV_PT_TIMING_CUSTOM);
	cr_assert_eq(field(&w, "cyc", w.plan.pt.config), 1);
	cr_assert_eq(field(&w, "cyc_thresh", w.plan.pt.config), 2);
	cr_assert_eq(field(&w, "psb_period", w.plan.pt.config), 1);

	world_init(&w, "skylake");
	w.opts.timer = RV_TIMER_HIGH;
	build(&w, false, false);
	cr_assert_eq(field(&w, "noretcomp", w.plan.pt.config), 1);

	/* Broadwell has no psb_cyc: normal falls back to low, with a warning */
	world_init(&w, "broadwell");
	build(&w, false, false);
	cr_assert_geq(w.plan.warnings.count, 1);
	cr_assert_eq(field(&w, "cyc", w.plan.pt.config), 0);

	/* a custom value the CPU cannot do is refused, naming it */
	world_init(&w, "broadwell");
	w.opts.timer = RV_TIMER_CUSTOM;
	w.opts.timer_custom = "cyc=1";
	cr_assert_lt(rv_pt_plan_build(&w.plan, &w.opts, &w.pmu, w.root, NULL, &w.err), 0);
	cr_assert_not_null(strstr(w.err.message, "cyc"), "%s", w.err.message);

	world_init(&w, "icelake");
	w.opts.timer = RV_TIMER_SAMPLE;
	cr_assert_eq(rv_pt_plan_build(&w.plan, &w.opts, &w.pmu, w.root, NULL, &w.err), -EINVAL);
}

Test(pt_plan, describe_lists_the_group_per_thread_and_the_bpf_program)
{
	struct world w;
	struct rv_dry_run_plan dp;
	pid_t child = fork();
	int ret;

	if (child == 0) {
		pause();
		_exit(0);
	}
	cr_assert_gt(child, 0);
	world_init(&w, "icelake");
	w.opts.min_duration_ns = 300000;
	w.sites.filter = true;
	rv_dry_run_plan_init(&dp);
	ret = describe(&w, child, &dp);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	cr_assert_eq(ret, 0, "%s", w.err.message);
	/* a process of one thread: PT, START, STOP (which pauses), sideband */
	cr_assert_eq(dp.nr_events, 4);
	cr_assert_eq(dp.events[0].group, -1);
	cr_assert_eq(dp.events[0].pid, child);
	for (size_t i = 1; i < 3; i++) {
		cr_assert_eq(dp.events[i].group, 0);
		cr_assert_str_eq(dp.events[i].uprobe_path, "/usr/bin/server");
		cr_assert_str_eq(dp.events[i].bpf_program, "gate_hit");
	}
	cr_assert_eq(dp.events[1].uprobe_offset, 0x1130);
	cr_assert_eq(dp.events[2].uprobe_offset, 0x1190);
	cr_assert_eq(dp.events[3].group, -1);
	cr_assert_eq(dp.events[3].attr.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(dp.nr_snapshots, 1);
	cr_assert_str_eq(dp.snapshots[0].what, "--min-duration window");
	cr_assert_eq(dp.snapshots[0].bytes, 4u << 20);
	cr_assert_eq(dp.nr_bpf, 3);
	cr_assert_str_eq(dp.bpf[0].name, "gate_hit");
	rv_dry_run_plan_destroy(&dp);

	/* per CPU: one group per CPU of the machine */
	world_init(&w, "icelake");
	w.opts.multi_thread = true;
	w.sites.filter = true;
	rv_dry_run_plan_init(&dp);
	cr_assert_eq(describe(&w, 0, &dp), 0, "%s", w.err.message);
	cr_assert_eq(dp.nr_events, 4 * 4);
	for (size_t c = 0; c < 4; c++) {
		cr_assert_eq(dp.events[4 * c].cpu, (int)c);
		cr_assert_eq(dp.events[4 * c + 1].group, (int)(4 * c));
		cr_assert(dp.events[4 * c + 3].attr.context_switch);
	}
	rv_dry_run_plan_destroy(&dp);
}

Test(pt_plan, run_follows_children_with_per_cpu_events_they_inherit)
{
	struct world w;
	struct rv_dry_run_plan dp;
	struct rv_pt_slots slots;

	world_init(&w, "icelake");
	w.opts.command = RV_CMD_RUN;
	w.opts.min_duration_ns = 1000;
	build(&w, true, false);
	cr_assert(w.plan.follow && w.plan.per_cpu, "run follows children, per CPU");
	cr_assert(w.plan.pt.inherit && w.plan.sideband.inherit);
	cr_assert(w.plan.sideband.context_switch, "per-CPU PT needs the switches");
	cr_assert_gt(w.plan.nr_gate, 0);
	for (size_t k = 0; k < w.plan.nr_gate; k++)
		if (w.plan.gate[k].in_group)
			cr_assert(w.plan.gate[k].attr.inherit,
				  "the gate's group is inherited whole");
	pid_t pid = 4321;
	cr_assert_eq(rv_pt_slots_build(&slots, &w.plan, w.nr_cpus, &pid, 1, &w.err), 0, "%s",
		     w.err.message);
	cr_assert_eq(rv_pt_slots_count(&slots), (size_t)w.nr_cpus);
	for (size_t i = 0; i < rv_pt_slots_count(&slots); i++) {
		cr_assert_eq(rv_pt_slot_pid(&slots, i), pid, "every CPU's event is on the target");
		cr_assert_eq(rv_pt_slot_cpu(&slots, i), (int)i);
	}
	rv_dry_run_plan_init(&dp);
	cr_assert_eq(describe(&w, pid, &dp), 0, "%s", w.err.message);
	cr_assert(strstr(dp.events[0].label, "the target and its children (inherit)"), "%s",
		  dp.events[0].label);
	rv_dry_run_plan_destroy(&dp);
}

Test(pt_plan, no_follow_and_attach_keep_per_thread_events)
{
	struct world w;

	world_init(&w, "icelake");
	w.opts.command = RV_CMD_RUN;
	w.opts.no_follow = true;
	build(&w, false, false);
	cr_assert(!w.plan.follow && !w.plan.per_cpu && !w.plan.pt.inherit);
	w.opts.no_follow = false;
	w.opts.command = RV_CMD_ATTACH;
	build(&w, false, false);
	cr_assert(!w.plan.follow && !w.plan.per_cpu && !w.plan.pt.inherit,
		  "attach records the processes given");
}
