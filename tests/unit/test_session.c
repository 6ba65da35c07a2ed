/* test_session.c: a whole recording session (session/session.h) of a real
 * program on the Intel PT backend against a simulated kernel (the engine's
 * ops table, tests/support/fake_kernel), through decoding into a trace file.
 *
 * Not here: the plan (test_pt_plan.c), the engine's ring handling
 * (test_pt_engine.c).
 */
#include <criterion/criterion.h>

#include <dirent.h>
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
#include "session/session.h"
#include "fake_kernel.h"
#include "sysfs_root.h"

/* ---- a whole session on a simulated kernel ---- */

/* The hardware: once the PT event is enabled, a PSB+ lands in its AUX area
 * (pages start zeroed; aux_head is an offset, as the PT driver reports it). */
static const uint8_t psb_plus[] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				    0x02, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };

static bool file_has(const char *path)
{
	struct stat st;

	return !stat(path, &st) && st.st_size > 0;
}

/* Every file in dir is 0600: the capture shows the program's code and
 * branches, the trace its functions (issue 20). */
static void assert_files_private(const char *dir)
{
	struct dirent *de;
	size_t files = 0;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		char path[PATH_MAX + 300];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert_eq(st.st_mode & 07777, 0600, "%s is %04o", path,
			     (unsigned)(st.st_mode & 07777));
		files++;
	}
	closedir(d);
	cr_assert_geq(files, 3, "perf.data, vdso.so and the trace");
}

/* A whole `rearview run /bin/true` on Intel PT (--no-follow when asked). */
static void whole_session(bool no_follow)
{
	struct fake_kernel f = { .time_shift = 10,
				 .time_mult = 1024,
				 .tsc = 1000000,
				 .enable_trace = psb_plus,
				 .enable_trace_size = sizeof(psb_plus) };
	struct rv_pt_ops ops = fake_kernel_ops(&f);
	int opened_pt = 0, opened_other = 0;
	char dir[] = "/tmp/rv-record-pt-XXXXXX", out[PATH_MAX], path[PATH_MAX + 32];
	char *argv[] = { "/bin/true", NULL };
	struct rv_options opts = {
		.command = RV_CMD_RUN,
		.timer = RV_TIMER_LOW,
		.argv = argv,
		.argc = 1,
		.no_follow = no_follow,
	};
	int nr_cpus;
	struct rv_session s;
	struct rv_target target;
	struct rv_error err = { 0 };
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	size_t auxtrace = 0, time_conv = 0, info = 0;
	int ret;

	if (geteuid() != 0) {
		cr_assert(!getenv("CI") || strcmp(getenv("CI"), "true"),
			  "under CI=true the session test must run as root");
		cr_skip_test("a recording session needs root (rv_session_prepare refuses)");
	}
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/trace.json", dir);
	opts.output = out;
	opts.working_directory = dir;
	setenv(RV_SYSFS_ROOT_ENV, sysfs_tree("icelake"), 1);
	/* this machine has no intel_pt: the fake tree says what the PMU is */
	ret = rv_session_prepare(&s, &opts, &err);
	if (ret == 0 && s.engine != RV_ENGINE_PT) {
		/* rv_machine_probe reads the real machine; force the fake PMU */
		ret = rv_pt_pmu_discover(&s.pt_pmu, s.root, &err);
		s.engine = RV_ENGINE_PT;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	f.pt_type = s.pt_pmu.type;
	cr_assert_eq(rv_target_spawn(&target, argv, &err), 0, "%s", err.message);
	s.pt_ops = &ops;
	ret = rv_session_record(&s, &target, &err);
	if (ret)
		rv_target_kill(&target);
	cr_assert_eq(ret, 0, "%s", err.message);
	nr_cpus = s.machine.nr_cpus > 0 ? s.machine.nr_cpus : 1;
	for (int i = 0; i < f.nr; i++) {
		const struct fake_event *ev = &f.ev[i];

		if (ev->attr.type == f.pt_type)
			opened_pt++;
		else
			opened_other++;
		if (no_follow) {
			cr_assert(!ev->attr.inherit && ev->cpu == -1 && ev->pid == target.pids[0],
				  "--no-follow: event %d on the thread alone", i);
		} else {
			/* children inherit per-CPU events on the target, whose
			 * buffers they write into (per-task ones could not be
			 * mapped: the fake refuses, as the kernel) */
			cr_assert(ev->attr.inherit, "event %d is inherited by children", i);
			cr_assert(ev->cpu >= 0 && ev->pid == target.pids[0],
				  "event %d: per CPU on the target (cpu %d, pid %d)", i, ev->cpu,
				  (int)ev->pid);
		}
	}
	if (no_follow)
		cr_assert_eq(opened_pt, 1, "one thread: one PT event");
	else
		cr_assert_eq(opened_pt, nr_cpus, "one PT event per CPU");
	cr_assert_eq(opened_other, opened_pt, "and a sideband event beside each");

	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(r, &rec, &err)) > 0) {
		if (rec.header->type == RV_PERF_RECORD_AUXTRACE)
			auxtrace++;
		else if (rec.header->type == RV_PERF_RECORD_TIME_CONV)
			time_conv++;
		else if (rec.header->type == RV_PERF_RECORD_AUXTRACE_INFO)
			info++;
	}
	cr_assert_eq(ret, 0, "%s", err.message);
	rv_perf_reader_free(r);
	cr_assert_eq(time_conv, 1);
	cr_assert_eq(info, 1);
	cr_assert_eq(auxtrace, (size_t)opened_pt, "the snapshot at exit, one a slot");
	snprintf(path, sizeof(path), "%s/vdso.so", dir);
	cr_assert(file_has(path), "the vdso is kept for the decoder");
	cr_assert(file_has(out), "the trace was written");
	assert_files_private(dir);
	rv_session_destroy(&s);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_assert_eq(system(path), 0);
}

Test(session, a_whole_session_on_a_simulated_kernel_writes_capture_vdso_and_trace, .timeout = 120)
{
	whole_session(true);
}

Test(session, run_follows_children_with_per_cpu_events_they_inherit, .timeout = 120)
{
	whole_session(false);
}
