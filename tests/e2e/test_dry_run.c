/* test_dry_run.c: `rearview run --dry-run` end to end: on the fake Ice Lake
 * (REARVIEW_SYSFS_ROOT=tests/data/sysfs/icelake, Linux 6.13) the Intel PT
 * group that --filter with --min-duration sets up, its uprobes where
 * rv_probe_site_resolve (and perf probe) put them, and the BPF gate; on this
 * machine (no intel_pt) the sampling plan with the gate's uprobes.
 *
 * Not here: the plan's construction in detail (tests/unit/test_pt_plan.c).
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "record/probe_site.h"
#include "sysfs_root.h"

/* The text of the event block that has line `label` ("event N: LABEL"). */
static const char *block(const char *out, const char *label, char *buf, size_t size)
{
	const char *at = strstr(out, label), *end;

	cr_assert_not_null(at, "no '%s' in:\n%s", label, out);
	end = strstr(at, "\n\n");
	if (!end)
		end = at + strlen(at);
	cr_assert_lt((size_t)(end - at), size);
	memcpy(buf, at, (size_t)(end - at));
	buf[end - at] = '\0';
	return buf;
}

static void expect(const char *text, const char *what)
{
	cr_assert_not_null(strstr(text, what), "expected '%s' in:\n%s", what, text);
}

/* rearview run --dry-run --filter request_begin,request_end --min-duration
 * 300us -- target */
static void dry_run(const char *target, struct proc_result *r)
{
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--filter",
			 "request_begin,request_end",
			 "--min-duration",
			 "300us",
			 "--",
			 (char *)target,
			 NULL };

	run_process(argv, 30, r);
}

static void resolve(const char *spec, const char *exe, struct rv_probe_site *site)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, site, &err), 0, "%s", err.message);
}

Test(dry_run, pt_group_with_pause_resume_and_the_gate, .timeout = 60)
{
	const char *target = build_path("tests/targets/windows"), *tree = sysfs_tree("icelake");
	char exe[PATH_MAX], b[8192], want[PATH_MAX + 64];
	struct rv_probe_site begin, end;
	struct proc_result *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	cr_assert(file_exists(target), "build %s first", target);
	cr_assert_not_null(realpath(target, exe));
	resolve("request_begin", exe, &begin);
	resolve("request_end", exe, &end);
	cr_assert_eq(access(tree, R_OK), 0, "no fake sysfs tree at %s (run from the project root)",
		     tree);
	setenv("REARVIEW_SYSFS_ROOT", tree, 1);
	dry_run(target, r);
	unsetenv("REARVIEW_SYSFS_ROOT");
	cr_assert_eq(r->exit_code, 0, "stderr: %s", r->err);
	expect(r->out, "with Intel PT");
	expect(r->out, "aux pause/resume yes");

	block(r->out, ": intel_pt", b, sizeof(b));
	expect(b, "(intel_pt)");
	expect(b, "aux_start_paused");
	expect(b, "group = leader of 1 2");

	block(r->out, ": START uprobe at request_begin", b, sizeof(b));
	expect(b, "aux_resume");
	expect(b, "group = member of event 0");
	snprintf(want, sizeof(want), "uprobe = %s+%#llx", begin.path,
		 (unsigned long long)begin.offset);
	expect(b, want);
	expect(b, "bpf_program = gate_hit");

	block(r->out, ": STOP uprobe at request_end", b, sizeof(b));
	expect(b, "aux_pause");
	cr_assert_null(strstr(b, "PERF_SAMPLE_AUX"), "pausing takes no sample:\n%s", b);
	snprintf(want, sizeof(want), "uprobe = %s+%#llx", end.path, (unsigned long long)end.offset);
	expect(b, want);

	/* a slow window is kept whole: STOP pauses, user space copies */
	cr_assert_null(strstr(r->out, "--min-duration sample"), "no AUX sample:\n%s", r->out);
	expect(r->out, "\nplanned snapshot sizes:\n  --min-duration window: 4194304 bytes "
		       "(4 MiB) per buffer: the whole AUX area");
	expect(r->out, "STOP (--min-duration, Intel PT paused): pauses Intel PT at every "
		       "window's close");

	block(r->out, ": sideband", b, sizeof(b));
	expect(b, "mmap2");
	expect(r->out, "program gate_hit (kprobe)");
	expect(r->out, "map gate_windows");
	free(r);
}

Test(dry_run, this_machine_samples_with_the_gates_uprobes, .timeout = 60)
{
	const char *target = build_path("tests/targets/windows");
	char exe[PATH_MAX], b[8192], want[PATH_MAX + 64];
	struct rv_probe_site begin;
	struct proc_result *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	if (!access("/sys/bus/event_source/devices/intel_pt", F_OK)) {
		free(r);
		cr_skip_test("this machine has Intel PT: the sampling plan is not what it runs");
	}
	cr_assert_not_null(realpath(target, exe));
	resolve("request_begin", exe, &begin);
	unsetenv("REARVIEW_SYSFS_ROOT");
	dry_run(target, r);
	cr_assert_eq(r->exit_code, 0, "stderr: %s", r->err);
	expect(r->out, "with stack sampling");
	cr_assert_null(strstr(r->out, "(intel_pt)"), "%s", r->out);
	expect(r->out, "sampling, CPU 0");
	block(r->out, ": START uprobe at request_begin", b, sizeof(b));
	snprintf(want, sizeof(want), "uprobe = %s+%#llx", begin.path,
		 (unsigned long long)begin.offset);
	expect(b, want);
	expect(b, "bpf_program = gate_hit");
	expect(r->out, "program filter_sample");
	expect(r->out, "map gate_windows");
	free(r);
}

/* rearview run --dry-run --trigger on_trigger --snapshot-size 16M on a fake
 * tree: the planned size, and before Linux 6.13 the note that the snapshot
 * is taken in user space, and how late. */
static void trigger_dry_run(const char *tree_name, struct proc_result *r)
{
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--trigger",
			 "on_trigger",
			 "--snapshot-size",
			 "16M",
			 "--",
			 (char *)build_path("tests/targets/windows"),
			 NULL };

	setenv("REARVIEW_SYSFS_ROOT", sysfs_tree(tree_name), 1);
	run_process(argv, 30, r);
	unsetenv("REARVIEW_SYSFS_ROOT");
	cr_assert_eq(r->exit_code, 0, "%s: stderr: %s", tree_name, r->err);
}

Test(dry_run, trigger_snapshot_size_and_the_pre_613_note, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	trigger_dry_run("icelake", r);
	expect(r->out, "  --trigger: 16777216 bytes (16 MiB) per buffer: the whole AUX area");
	expect(r->out, "aux_pause on the trigger uprobe");
	cr_assert_null(strstr(r->err, "taken in user space"), "6.13 pauses: %s", r->err);

	trigger_dry_run("kernel-6.1", r);
	expect(r->out, "  --trigger: 16777216 bytes (16 MiB) per buffer: the whole AUX area");
	expect(r->err, "--trigger: this kernel cannot pause Intel PT at the hit (aux_pause "
		       "needs Linux 6.13), so the snapshot is taken in user space");
	expect(r->err, "usually well under a millisecond");
	free(r);
}
