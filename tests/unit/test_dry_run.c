/* test_dry_run.c: --dry-run's text for the PT group that --filter START,STOP
 * with --min-duration sets up on the fake Ice Lake (tests/data/sysfs/icelake),
 * compared line by line with text written by hand. And the planned snapshot
 * sizes of --trigger and --min-duration on every fake sysfs tree
 * (record/pt_plan.h's plan, printed). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>

#include "cli/options.h"
#include "record/dry_run.h"
#include "record/pt_plan.h"
#include "sysfs_root.h"

static char *print_plan(const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	cr_assert_not_null(out);
	rv_dry_run_print(out, plan, pmu);
	cr_assert_eq(fclose(out), 0);
	return text;
}

/* Compares text with expected lines one by one, naming the first that differs. */
static void assert_lines(const char *text, const char *const *expected, size_t count)
{
	const char *line = text;

	for (size_t i = 0; i < count; i++) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		cr_assert(nl, "output ends at line %zu; expected '%s'", i + 1, expected[i]);
		cr_assert(len == strlen(expected[i]) && !strncmp(line, expected[i], len),
			  "line %zu:\n  got      '%.*s'\n  expected '%s'", i + 1, (int)len, line,
			  expected[i]);
		line = nl + 1;
	}
	cr_assert_str_eq(line, "", "output has more lines than expected:\n%s", line);
}

/* The block of event N: from "event N:" to the blank line. */
static char *event_block(const char *text, int index)
{
	char head[32], *start, *end;

	snprintf(head, sizeof(head), "\nevent %d:", index);
	start = strstr(text, head);
	cr_assert_not_null(start, "no %s", head + 1);
	end = strstr(start + 1, "\n\n");
	return strndup(start + 1, end ? (size_t)(end - start - 1) : strlen(start + 1));
}

static const char target[] = "/usr/bin/target";

static void add_uprobe(struct rv_dry_run_plan *plan, const struct rv_uprobe_pmu *upmu,
		       const char *label, enum rv_uprobe_role role, uint64_t offset,
		       const char *program)
{
	struct rv_uprobe_request req = { .path = target,
					 .file_offset = offset,
					 .role = role,
					 .aux_sample_size = 8192,
					 .aux_buffer_size = 4 << 20 };
	struct rv_dry_run_event ev = { .label = label,
				       .group = 0,
				       .cpu = -1,
				       .pid = 4242,
				       .uprobe_path = target,
				       .uprobe_offset = offset,
				       .bpf_program = program,
				       .bpf_program_type = "kprobe" };
	struct rv_error err = { 0 };

	cr_assert_eq(rv_uprobe_attr(&ev.attr, upmu, &req, &err), 0, "%s", err.message);
	cr_assert_eq(rv_dry_run_add_event(plan, &ev, &err), 0, "%s", err.message);
}

/* What the recorder sets up for `--filter START,STOP --min-duration` with PT. */
static void filter_plan(struct rv_dry_run_plan *plan, struct rv_pt_pmu *pmu)
{
	struct rv_uprobe_pmu upmu;
	struct rv_pt_request req = { .timing = RV_PT_TIMING_NORMAL,
				     .scope = RV_SCOPE_USER,
				     .start_paused = true,
				     .enable_on_exec = true };
	struct rv_sideband_request sreq = { .scope = RV_SCOPE_USER, .enable_on_exec = true };
	struct rv_dry_run_event pt = { .label = "pt", .group = -1, .cpu = -1, .pid = 4242 };
	struct rv_dry_run_event sb = { .label = "sideband", .group = -1, .cpu = -1, .pid = 4242 };
	struct rv_error err = { 0 };
	char filter[128] = "";

	cr_assert_eq(rv_pt_pmu_discover(pmu, sysfs_tree("icelake"), &err), 0, "%s", err.message);
	cr_assert_eq(rv_uprobe_pmu_type(sysfs_tree("icelake"), &upmu, &err), 0, "%s", err.message);
	rv_dry_run_plan_init(plan);
	rv_dry_run_set_uprobe_pmu(plan, &upmu);

	cr_assert_eq(rv_pt_attr_build(&pt.attr, pmu, &req, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_address_filter(filter, sizeof(filter), RV_PT_FILTER_TRACE, target,
					  0x1139, 0x2a0, &err),
		     0);
	pt.address_filter = filter;
	cr_assert_eq(rv_dry_run_add_event(plan, &pt, &err), 0, "%s", err.message);
	add_uprobe(plan, &upmu, "START", RV_UPROBE_AUX_RESUME, 0x1139, "gate_start");
	add_uprobe(plan, &upmu, "STOP", RV_UPROBE_AUX_PAUSE, 0x1200, "gate_stop");
	add_uprobe(plan, &upmu, "STOP snapshot", RV_UPROBE_SAMPLE_AUX, 0x1200, "gate_snapshot");
	rv_sideband_attr(&sb.attr, &sreq);
	cr_assert_eq(rv_dry_run_add_event(plan, &sb, &err), 0, "%s", err.message);

	cr_assert_eq(rv_dry_run_add_bpf(plan, "program", "gate_start", "kprobe", NULL, &err), 0);
	cr_assert_eq(rv_dry_run_add_bpf(plan, "program", "gate_stop", "kprobe", NULL, &err), 0);
	cr_assert_eq(rv_dry_run_add_bpf(plan, "program", "gate_snapshot", "kprobe", NULL, &err), 0);
	cr_assert_eq(
		rv_dry_run_add_bpf(plan, "map", "gate_threads", "hash", "max_entries 4096", &err),
		0);
	cr_assert_eq(rv_dry_run_add_bpf(plan, "map", "gate_events", "ringbuf", "256 KiB", &err), 0);
}

#define SAMPLE_TYPE                                                                                \
	"0x10087 (PERF_SAMPLE_IP|PERF_SAMPLE_TID|PERF_SAMPLE_TIME|PERF_SAMPLE_CPU|"                \
	"PERF_SAMPLE_IDENTIFIER)"

Test(dry_run, filter_group_on_icelake)
{
	/* icelake normal: perf's default (tsc, mtc, mtc_period=3, psb_period=3, pt,
	 * branch) with cyc=1, cyc_thresh=1, mtc_period=0:
	 * 0x1 + 0x2 + 0x200 + 0x400 + 0x2000 + (1 << 19) + (3 << 24) = 0x3082603 */
	static const char *const expected[] = {
		"dry run: 5 perf events, 3 BPF programs, 2 BPF maps; nothing was opened",
		"intel_pt: type 9, Linux 6.13, aux pause/resume yes",
		"intel_pt caps: psb_cyc 1, mtc 1, ptwrite 1, power_event_trace 1, address "
		"ranges 2",
		"intel_pt values: mtc_period 0,3,6,9, cyc_thresh 0-13, psb_period 0-5",
		"intel_pt timing: max_nonturbo_ratio 15, tsc_art_ratio 78:2",
		"",
		"event 0: pt",
		"  type = 9 (intel_pt)",
		"  size = 128",
		"  config = 0x3082603 (pt=1 cyc=1 mtc=1 tsc=1 branch=1 cyc_thresh=1 psb_period=3)",
		"  sample_period = 1",
		"  sample_type = " SAMPLE_TYPE,
		"  flags = disabled exclude_kernel exclude_hv enable_on_exec sample_id_all "
		"aux_start_paused",
		"  group = leader of 1 2 3",
		"  cpu = any",
		"  pid = 4242",
		"  address_filter = filter 0x1139/0x2a0@/usr/bin/target",
		"",
		"event 1: START",
		"  type = 7 (uprobe)",
		"  size = 128",
		"  config = 0x0",
		"  config1 = path \"/usr/bin/target\"",
		"  config2 = 0x1139 (file offset)",
		"  sample_period = 1",
		"  sample_type = " SAMPLE_TYPE,
		"  flags = sample_id_all aux_resume",
		"  group = member of event 0 (pt)",
		"  cpu = any",
		"  pid = 4242",
		"  uprobe = /usr/bin/target+0x1139",
		"  bpf_program = gate_start (kprobe)",
		"",
		"event 2: STOP",
		"  type = 7 (uprobe)",
		"  size = 128",
		"  config = 0x0",
		"  config1 = path \"/usr/bin/target\"",
		"  config2 = 0x1200 (file offset)",
		"  sample_period = 1",
		"  sample_type = " SAMPLE_TYPE,
		"  flags = sample_id_all aux_pause",
		"  group = member of event 0 (pt)",
		"  cpu = any",
		"  pid = 4242",
		"  uprobe = /usr/bin/target+0x1200",
		"  bpf_program = gate_stop (kprobe)",
		"",
		"event 3: STOP snapshot",
		"  type = 7 (uprobe)",
		"  size = 128",
		"  config = 0x0",
		"  config1 = path \"/usr/bin/target\"",
		"  config2 = 0x1200 (file offset)",
		"  sample_period = 1",
		"  sample_type = 0x110087 (PERF_SAMPLE_IP|PERF_SAMPLE_TID|PERF_SAMPLE_TIME|"
		"PERF_SAMPLE_CPU|PERF_SAMPLE_IDENTIFIER|PERF_SAMPLE_AUX)",
		"  flags = sample_id_all",
		"  aux_sample_size = 8192",
		"  group = member of event 0 (pt)",
		"  cpu = any",
		"  pid = 4242",
		"  uprobe = /usr/bin/target+0x1200",
		"  bpf_program = gate_snapshot (kprobe)",
		"",
		"event 4: sideband",
		"  type = 1 (software)",
		"  size = 128",
		"  config = 0x9 (dummy)",
		"  sample_period = 1",
		"  sample_type = " SAMPLE_TYPE,
		"  flags = disabled exclude_kernel exclude_hv mmap comm enable_on_exec task "
		"sample_id_all mmap2 comm_exec",
		"  cpu = any",
		"  pid = 4242",
		"",
		"BPF:",
		"  program gate_start (kprobe)",
		"  program gate_stop (kprobe)",
		"  program gate_snapshot (kprobe)",
		"  map gate_threads (hash): max_entries 4096",
		"  map gate_events (ringbuf): 256 KiB",
	};
	struct rv_dry_run_plan plan;
	struct rv_pt_pmu pmu;
	char *text, *block;

	filter_plan(&plan, &pmu);
	text = print_plan(&plan, &pmu);
	assert_lines(text, expected, sizeof(expected) / sizeof(expected[0]));

	/* What issue 5 asks the dry run to show, event by event. */
	block = event_block(text, 0);
	cr_assert(strstr(block, "aux_start_paused"), "%s", block);
	free(block);
	block = event_block(text, 1);
	cr_assert(strstr(block, "aux_resume") && !strstr(block, "aux_pause"), "%s", block);
	free(block);
	block = event_block(text, 2);
	cr_assert(strstr(block, "aux_pause") && !strstr(block, "aux_resume"), "%s", block);
	free(block);
	block = event_block(text, 3);
	cr_assert(strstr(block, "PERF_SAMPLE_AUX") && strstr(block, "aux_sample_size = 8192"), "%s",
		  block);
	free(block);
	free(text);
	rv_dry_run_plan_destroy(&plan);
}

/* Every attr of the plan passes the AUX rules against its leader. */
Test(dry_run, filter_plan_obeys_aux_rules)
{
	struct rv_dry_run_plan plan;
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };

	filter_plan(&plan, &pmu);
	for (size_t i = 0; i < plan.nr_events; i++) {
		const struct rv_dry_run_event *e = &plan.events[i];
		const struct perf_event_attr *leader =
			e->group >= 0 ? &plan.events[e->group].attr : NULL;

		cr_assert_eq(rv_aux_rules_check(&e->attr, leader, &pmu, &err), 0, "event %zu: %s",
			     i, err.message);
	}
	rv_dry_run_plan_destroy(&plan);
}

Test(dry_run, without_pmu_and_odd_fields)
{
	static const char *const expected[] = {
		"dry run: 2 perf events, 0 BPF programs, 0 BPF maps; nothing was opened",
		"",
		"event 0: raw pt",
		"  type = 9 (unknown PMU)",
		"  size = 120",
		"  config = 0x8000000000000401",
		"  read_format = 0x104 (PERF_FORMAT_ID|0x100)",
		"  flags = pinned watermark precise_ip=2",
		"  wakeup_watermark = 4096",
		"  aux_watermark = 65536",
		"  aux_action = 0x10 (unknown bits set)",
		"  cpu = 3",
		"  pid = all",
		"",
		"event 1: ret",
		"  type = 7 (uprobe)",
		"  size = 128",
		"  config = 0x1 (retprobe=1)",
		"  config1 = path \"/usr/bin/target\"",
		"  config2 = 0x40 (file offset)",
		"  sample_period = 1",
		"  sample_type = " SAMPLE_TYPE,
		"  flags = disabled sample_id_all",
		"  cpu = any",
		"  pid = 1",
		"  uprobe = /usr/bin/target+0x40 (return)",
	};
	struct rv_dry_run_plan plan;
	struct rv_uprobe_pmu upmu;
	struct rv_uprobe_request ureq = { .path = target, .file_offset = 0x40, .retprobe = true };
	struct rv_dry_run_event raw = {
		.label = "raw pt",
		.attr = { .type = 9,
			  .size = 120,
			  .config = 0x8000000000000401ULL,
			  .read_format = PERF_FORMAT_ID | 0x100,
			  .pinned = 1,
			  .precise_ip = 2,
			  .watermark = 1,
			  .wakeup_watermark = 4096,
			  .aux_watermark = 65536,
			  .__reserved_3 = 0x10 },
		.group = -1,
		.cpu = 3,
		.pid = -1,
	};
	struct rv_dry_run_event ret = { .label = "ret",
					.group = -1,
					.cpu = -1,
					.pid = 1,
					.uprobe_path = target,
					.uprobe_offset = 0x40 };
	struct rv_error err = { 0 };
	char *text;

	rv_dry_run_plan_init(&plan);
	cr_assert_eq(rv_uprobe_pmu_type(sysfs_tree("icelake"), &upmu, &err), 0, "%s", err.message);
	rv_dry_run_set_uprobe_pmu(&plan, &upmu);
	cr_assert_eq(rv_uprobe_attr(&ret.attr, &upmu, &ureq, &err), 0, "%s", err.message);
	cr_assert_eq(rv_dry_run_add_event(&plan, &raw, &err), 0, "%s", err.message);
	cr_assert_eq(rv_dry_run_add_event(&plan, &ret, &err), 0, "%s", err.message);
	text = print_plan(&plan, NULL);
	assert_lines(text, expected, sizeof(expected) / sizeof(expected[0]));
	free(text);
	rv_dry_run_plan_destroy(&plan);
}

/* With the PMU, config bits no format names are shown raw. */
Test(dry_run, unnamed_config_bits)
{
	struct rv_dry_run_plan plan;
	struct rv_pt_pmu pmu;
	struct rv_dry_run_event ev = { .label = "odd", .group = -1, .cpu = 0, .pid = -1 };
	struct rv_error err = { 0 };
	char *text;

	cr_assert_eq(rv_pt_pmu_discover(&pmu, sysfs_tree("skylake"), &err), 0, "%s", err.message);
	rv_dry_run_plan_init(&plan);
	ev.attr.type = pmu.type;
	ev.attr.config = 0x2409 | (1ULL << 40);
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), 0);
	text = print_plan(&plan, &pmu);
	cr_assert(strstr(text, "  config = 0x10000002409 (pt=1 tsc=1 branch=1 "
			       "unnamed=0x10000000008)\n"),
		  "%s", text);
	free(text);
	rv_dry_run_plan_destroy(&plan);
}

Test(dry_run, group_must_name_an_earlier_leader)
{
	struct rv_dry_run_plan plan;
	struct rv_dry_run_event ev = { .label = "a", .group = -1, .cpu = -1, .pid = 1 };
	struct rv_error err = { 0 };

	rv_dry_run_plan_init(&plan);
	ev.group = 0;
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), -EINVAL, "no event 0 yet");
	cr_assert(strstr(err.message, "group leader 0"), "%s", err.message);
	ev.group = -1;
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), 0);
	ev.group = 0;
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), 0);
	ev.group = 1;
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), -EINVAL,
		     "event 1 is a member, not a leader");
	ev.group = -2;
	cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), -EINVAL);
	cr_assert_eq(plan.nr_events, 2);
	rv_dry_run_plan_destroy(&plan);
	cr_assert_eq(plan.nr_events, 0);
}

/* The plan copies its strings: the caller's buffers may go away. */
Test(dry_run, plan_owns_its_strings)
{
	struct rv_dry_run_plan plan;
	struct rv_error err = { 0 };
	char label[16] = "mine", filter[64] = "filter 0x0/0x10@/bin/x";
	struct rv_dry_run_event ev = {
		.label = label, .group = -1, .cpu = -1, .pid = 1, .address_filter = filter
	};
	char *text;

	rv_dry_run_plan_init(&plan);
	for (int i = 0; i < 20; i++) /* past the first growth */
		cr_assert_eq(rv_dry_run_add_event(&plan, &ev, &err), 0);
	cr_assert_eq(rv_dry_run_add_bpf(&plan, "map", "m", "array", NULL, &err), 0);
	memset(label, 'X', sizeof(label) - 1);
	memset(filter, 'Y', sizeof(filter) - 1);
	text = print_plan(&plan, NULL);
	cr_assert(strstr(text, "\nevent 19: mine\n"), "%s", text);
	cr_assert(strstr(text, "  address_filter = filter 0x0/0x10@/bin/x\n"));
	cr_assert(strstr(text, "\n  map m (array)\n"));
	cr_assert_null(strstr(text, "XXX"));
	free(text);
	rv_dry_run_plan_destroy(&plan);
}

/* ---- PLANNED SNAPSHOT SIZES on every tree ---- */

/* The dry run's text of rv_pt_plan for --snapshot-size 16M and --trigger
 * (or --filter with --min-duration) on tree; NULL when the tree has no
 * usable intel_pt (then recording samples, and no PT snapshot is planned). */
static char *snapshot_plan(const char *tree, bool trigger)
{
	struct rv_options opts = { .command = RV_CMD_RUN,
				   .timer = RV_TIMER_LOW,
				   .snapshot_size_bytes = 16u << 20,
				   .min_duration_ns = trigger ? 0 : 300000 };
	struct rv_gate_sites sites = { .filter = !trigger, .trigger = trigger };
	struct rv_pt_pmu pmu;
	struct rv_pt_plan plan;
	struct rv_pt_slots slots;
	struct rv_dry_run_plan dp;
	struct rv_error err = { 0 };
	char *text;

	if (rv_pt_pmu_discover(&pmu, sysfs_tree(tree), &err))
		return NULL;
	snprintf(sites.start.path, sizeof(sites.start.path), "/usr/bin/server");
	sites.start.offset = 0x1130;
	sites.stop = sites.start;
	sites.stop.offset = 0x1190;
	sites.at = sites.start;
	sites.at.offset = 0x1200;
	cr_assert_eq(rv_pt_plan_build(&plan, &opts, &pmu, sysfs_tree(tree), &sites, &err), 0,
		     "%s: %s", tree, err.message);
	cr_assert_eq(rv_pt_slots_build(&slots, &plan, 2, NULL, 0, &err), 0, "%s", err.message);
	rv_dry_run_plan_init(&dp);
	cr_assert_eq(rv_pt_plan_describe(&plan, &slots, &sites, 0, &dp, &err), 0, "%s: %s", tree,
		     err.message);
	text = print_plan(&dp, &pmu);
	rv_dry_run_plan_destroy(&dp);
	return text;
}

static void expect_text(const char *text, const char *what, const char *tree)
{
	cr_assert_not_null(strstr(text, what), "%s: expected '%s' in:\n%s", tree, what, text);
}

Test(dry_run, planned_snapshot_sizes_on_every_fake_tree)
{
	const char *root = sysfs_tree("");
	DIR *d = opendir(root);
	struct dirent *de;
	size_t pt_trees = 0, pause_trees = 0;

	cr_assert_not_null(d, "no fake sysfs trees at %s", root);
	while ((de = readdir(d))) {
		char name[256], *trig, *win;
		struct rv_pt_pmu pmu;
		struct rv_error err = { 0 };
		bool pause;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "README"))
			continue;
		snprintf(name, sizeof(name), "%s", de->d_name);
		trig = snapshot_plan(name, true);
		if (!trig) {
			cr_assert(!strncmp(name, "broken-", 7) || !strcmp(name, "no-pt"),
				  "%s: no usable intel_pt", name);
			continue;
		}
		pt_trees++;
		cr_assert_eq(rv_pt_pmu_discover(&pmu, sysfs_tree(name), &err), 0);
		pause = rv_pt_pmu_has_aux_pause(&pmu);
		pause_trees += pause;
		win = snapshot_plan(name, false);
		expect_text(trig, "\nplanned snapshot sizes:\n", name);
		/* the trigger keeps what --snapshot-size asked, on every kernel */
		expect_text(trig, "  --trigger: 16777216 bytes (16 MiB) per buffer: ", name);
		if (pause) {
			expect_text(trig,
				    "ending where the kernel paused Intel PT (aux_pause on the "
				    "trigger uprobe)",
				    name);
			expect_text(win,
				    "  --min-duration window: 16777216 bytes (16 MiB) per "
				    "buffer: ",
				    name);
			cr_assert_null(strstr(win, "PERF_SAMPLE_AUX"), "%s: no AUX sample", name);
		} else {
			expect_text(trig,
				    "copied in user space once rearview has read the gate's "
				    "record",
				    name);
			/* before 6.13 a window is still the kernel's 60 KiB sample */
			expect_text(win,
				    "  --min-duration window: 61440 bytes (60.0 KiB) per "
				    "buffer: one PERF_SAMPLE_AUX sample",
				    name);
		}
		free(trig);
		free(win);
	}
	closedir(d);
	cr_assert_geq(pt_trees, 5, "every tree with intel_pt was planned");
	cr_assert_eq(pause_trees, 1, "icelake is the one tree with aux pause");
}
