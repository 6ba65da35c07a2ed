/* test_pt_session_kernel.c: a kernel-scope recording session on the Intel
 * PT backend (a simulated PT kernel, tests/support/fake_kernel; BPF and
 * CPU-wide perf events of the real one), for what it keeps of the kernel's
 * code: a BPF program loaded before the recording saved in DIR/bpf_images
 * with the name kallsyms gives it, DIR/kcore_dir written after it (its
 * kallsyms names the program), and the capture declaring the watch of every
 * CPU. Root only, as kernel scope is. And kcore_dir on a kernel without
 * loadable modules.
 *
 * Not here: the session's other work (test_session.c), saving and decoding
 * (test_bpf_images.c, test_pt_capture_bpf.c).
 */
#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/bpf_images.h"
#include "capture/perf_data.h"
#include "record/gate.h"
#include "record/pt_engine.h"
#include "record/pt_plan.h"
#include "session/session.h"
#include "fake_kernel.h"
#include "sysfs_root.h"
#include "test_env.h"
#include "test_files.h"

static const uint8_t psb_plus[] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				    0x02, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };

Test(pt_session_kernel, keeps_bpf_programs_and_kcore_dir_after_them, .timeout = 120)
{
	struct fake_kernel f = { .time_shift = 10,
				 .time_mult = 1024,
				 .tsc = 1000000,
				 .enable_trace = psb_plus,
				 .enable_trace_size = sizeof(psb_plus) };
	struct rv_pt_ops ops = fake_kernel_ops(&f);
	char dir[PATH_MAX], out[PATH_MAX + 16], path[PATH_MAX + 32];
	char *argv[] = { "/bin/true", NULL };
	struct rv_options opts = {
		.command = RV_CMD_RUN,
		.timer = RV_TIMER_LOW,
		.argv = argv,
		.argc = 1,
		.no_follow = true,
		.include_kernel = true,
	};
	struct rv_gate_config gc = { .pid = getpid() };
	struct rv_session s;
	struct rv_target target;
	struct rv_error err = { 0 };
	struct rv_gate *gate;
	int ret;

	if (geteuid() != 0) {
		cr_assert(!under_ci(), "under CI=true the kernel session test must run as root");
		cr_skip_test("kernel scope needs root (rv_session_prepare refuses)");
	}
	make_temp_dir(dir, sizeof(dir), "rv-ksession");
	snprintf(out, sizeof(out), "%s/trace.json", dir);
	opts.output = out;
	opts.working_directory = dir;
	setenv(RV_SYSFS_ROOT_ENV, sysfs_tree("icelake"), 1);
	/* a BPF program of the machine's, loaded before the recording */
	cr_assert_eq(rv_gate_open(&gate, &gc, &err), 0, "%s", err.message);
	ret = rv_session_prepare(&s, &opts, &err);
	if (ret == 0 && s.engine != RV_ENGINE_PT) {
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
	rv_session_destroy(&s);

	/* the program's code, named as kallsyms names it ... */
	struct rv_bpf_image *v;
	size_t nr;
	char *names, *kallsyms, *name = NULL;
	bool truncated;

	snprintf(path, sizeof(path), "%s/%s", dir, RV_BPF_IMAGES_FILE);
	{
		struct stat st;

		cr_assert_eq(stat(path, &st), 0);
		cr_assert_eq(st.st_mode & 0777, 0600, "the JIT images are private");
	}
	cr_assert_eq(rv_bpf_images_read(path, &v, &nr, &names, &truncated, &err), 0, "%s",
		     err.message);
	for (size_t i = 0; i < nr && !name; i++)
		if (strstr(v[i].name, "_gate_hit"))
			name = strdup(v[i].name);
	cr_assert_not_null(name, "the gate's program is in bpf_images (%zu functions)", nr);
	/* ... in the copy of kallsyms, made after it was loaded */
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", dir);
	kallsyms = read_whole(path, NULL);
	cr_assert_not_null(kallsyms);
	cr_assert_not_null(strstr(kallsyms, name), "kcore_dir/kallsyms names %s", name);
	free(kallsyms);
	free(name);
	free(v);
	free(names);

	/* the watch: a CPU-wide event per CPU, declared in the capture */
	int watches = 0;
	struct rv_perf_reader *r;
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if (a->attr.ksymbol && a->attr.bpf_event && a->attr.text_poke) {
			watches++;
			cr_assert_geq(a->nr_ids, 1, "its events' ids");
			cr_assert_str_eq(a->name, "dummy:k");
		}
	}
	rv_perf_reader_free(r);
	cr_assert_eq(watches, 1, "the watch's attribute");
	rv_gate_free(gate);
	remove_tree(dir);
}

/* A root (temporary directory) whose proc/kallsyms names _stext alone: 26
 * bytes, and no proc/modules. */
static void make_kallsyms_root(char *root, size_t size)
{
	char path[PATH_MAX + 32];

	make_temp_dir(root, size, "rv-kcoredir");
	snprintf(path, sizeof(path), "%s/proc", root);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/proc/kallsyms", root);
	write_file(path, "ffffffff81000000 T _stext\n", 26);
}

/* A kernel without loadable modules has no /proc/modules: an empty list. */
Test(pt_session_kernel, kcore_dir_of_a_kernel_without_modules)
{
	char root[PATH_MAX], path[PATH_MAX + 32];
	struct rv_error err = { 0 };
	struct stat st;

	make_kallsyms_root(root, sizeof(root));
	cr_assert_eq(rv_pt_engine_copy_kernel_files(root, root, &err), 0, "%s", err.message);
	snprintf(path, sizeof(path), "%s/kcore_dir/modules", root);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", root);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 26);
	cr_assert_eq(st.st_mode & 0777, 0600);
	remove_tree(root);
}

/* A kcore_dir left in --working-directory by an earlier run, readable by
 * anyone, and a link where a copy goes: the copies are private, the
 * directory made 0700, and the link refused, never written through. */
Test(pt_session_kernel, kcore_dir_copies_are_private_over_an_older_one)
{
	char root[PATH_MAX], path[PATH_MAX + 32], victim[PATH_MAX + 32];
	struct rv_error err = { 0 };
	struct stat st;

	make_kallsyms_root(root, sizeof(root));
	snprintf(path, sizeof(path), "%s/kcore_dir", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	cr_assert_eq(chmod(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", root);
	write_file(path, "old", 3);
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(rv_pt_engine_copy_kernel_files(root, root, &err), 0, "%s", err.message);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 26);
	cr_assert_eq(st.st_mode & 0777, 0600, "the older file's mode is not kept");
	snprintf(path, sizeof(path), "%s/kcore_dir", root);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);

	snprintf(victim, sizeof(victim), "%s/victim", root);
	write_file(victim, "keep", 4);
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", root);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_neq(rv_pt_engine_copy_kernel_files(root, root, &err), 0);
	cr_assert(strstr(err.message, "symbolic link"), "%s", err.message);
	cr_assert_eq(stat(victim, &st), 0);
	cr_assert_eq(st.st_size, 4, "the link's target is untouched");
	remove_tree(root);
}
