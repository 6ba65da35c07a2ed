/* test_no_btf.c: `rearview run` on a kernel that shows no BTF. Each run is
 * made in a child with a private mount namespace in which an empty file is
 * bind-mounted over /sys/kernel/btf/vmlinux, as a kernel built without
 * CONFIG_DEBUG_INFO_BTF looks to libbpf; nothing of it leaks out of the
 * child. Then --filter and --trigger on the sampling backend keep exactly
 * what they keep with BTF (the gate and the sample filter carry no CO-RE relocation), the
 * uprobe backend refuses in one line naming --btf, and --btf with a copy of
 * the kernel's BTF (made before hiding it) makes it work again.
 *
 * Not here: which objects carry CO-RE relocations (tests/unit/test_kernel_btf.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "test_env.h"

#define KERNEL_BTF "/sys/kernel/btf/vmlinux"
#define WINDOW	   "[window request_begin]"
#define SNAPSHOT   "[snapshot at on_trigger]"

/* What the child says when it could not hide the BTF (exit codes of its own). */
#define HIDE_FAILED   200
#define STILL_VISIBLE 201

static bool kernel_btf_visible(void)
{
	struct stat st;

	return !stat(KERNEL_BTF, &st) && st.st_size > 0;
}

/* In the child: a private mount namespace with KERNEL_BTF covered by the
 * empty file `empty`. Returns 0 or HIDE_FAILED (printed on stderr). */
static int hide_kernel_btf(const char *empty)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		perror("private mount namespace");
		return HIDE_FAILED;
	}
	if (access(KERNEL_BTF, F_OK))
		return 0; /* this kernel shows none anyway */
	if (mount(empty, KERNEL_BTF, NULL, MS_BIND, NULL)) {
		perror("bind mount over " KERNEL_BTF);
		return HIDE_FAILED;
	}
	return kernel_btf_visible() ? STILL_VISIBLE : 0;
}

/* `rearview run OPTIONS... -o DIR/t.fxt -- gated MODE N` with the kernel's
 * BTF hidden; the result in *r (which a forked child fills through shared
 * memory). Asserts that the hiding worked and did not leak. */
static void run_hidden(const char *dir, const char *const *options, const char *mode, const char *n,
		       struct proc_result *r)
{
	bool visible_before = kernel_btf_visible();
	struct proc_result *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char empty[PATH_MAX], out[PATH_MAX];
	char *argv[32];
	size_t a = 0;
	int status = 0, fd;
	pid_t child;

	cr_assert_neq(shared, MAP_FAILED);
	snprintf(empty, sizeof(empty), "%s/empty", dir);
	fd = open(empty, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s: %s", empty, strerror(errno));
	close(fd);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	for (; options && *options; options++) {
		cr_assert_lt(a, 24);
		argv[a++] = (char *)*options;
	}
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--";
	argv[a++] = (char *)build_path("tests/targets/gated");
	argv[a++] = (char *)mode;
	argv[a++] = (char *)n;
	argv[a] = NULL;

	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		int ret = hide_kernel_btf(empty);

		if (ret)
			_exit(ret);
		run_process(argv, 120, shared);
		_exit(0);
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status), "the child died (status %d)", status);
	cr_assert_neq(WEXITSTATUS(status), HIDE_FAILED, "could not hide " KERNEL_BTF);
	cr_assert_neq(WEXITSTATUS(status), STILL_VISIBLE,
		      KERNEL_BTF " still shows BTF under the bind mount");
	cr_assert_eq(WEXITSTATUS(status), 0);
	cr_assert_eq(kernel_btf_visible(), visible_before,
		     "hiding " KERNEL_BTF " leaked out of the child's namespace");
	*r = *shared;
	munmap(shared, sizeof(*shared));
	cr_assert(!r->timed_out, "rearview did not finish:\n%s", r->err);
}

static struct fxt_trace *read_trace(const char *dir)
{
	char path[PATH_MAX], err[512];
	struct fxt_trace *t = NULL;

	snprintf(path, sizeof(path), "%s/t.fxt", dir);
	cr_assert_eq(fxt_read_file(path, &t, err, sizeof(err)), 0, "%s", err);
	return t;
}

static bool inside_window(const struct fxt_trace *t, const struct fxt_span *s)
{
	for (const struct fxt_span *p = fxt_span_parent(t, s); p; p = fxt_span_parent(t, p))
		if (!strcmp(p->name, WINDOW))
			return true;
	return false;
}

/* No line of libbpf's own reaches the user. */
static void assert_no_libbpf_lines(const char *err)
{
	cr_assert(!strstr(err, "libbpf"), "a raw libbpf line:\n%s", err);
}

Test(no_btf, filter_on_the_sampling_backend_keeps_only_windows, .timeout = 180)
{
	const char *options[] = { "--backend", "sample", "--filter", "request_begin,request_end",
				  NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	size_t slow = 0;

	require_root("no_btf");
	make_test_dir(dir, sizeof(dir));
	run_hidden(dir, options, "windows", "12", &r);
	cr_assert_eq(r.exit_code, 0, "rearview failed without BTF:\n%s", r.err);
	cr_assert(strstr(r.out, "windows=12 slow=3"), "%s", r.out);
	assert_no_libbpf_lines(r.err);
	cr_assert(strstr(r.err, "no kernel BTF"), "no note says the BTF is missing:\n%s", r.err);
	cr_assert(strstr(r.err, "12 windows"), "%s", r.err);
	t = read_trace(dir);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), 12, "%s", r.err);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (strcmp(s->name, "slow_work") && strcmp(s->name, "fast_work"))
			continue;
		slow += !strcmp(s->name, "slow_work");
		cr_assert(inside_window(t, s), "%s at %llu ns is outside every window", s->name,
			  (unsigned long long)s->begin_ns);
	}
	cr_assert_gt(slow, 0, "no sample of slow_work (3 x 20 ms) was kept");
	/* 13 calls of outside_work burn CPU outside every window: not one sample */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(no_btf, trigger_on_the_sampling_backend_keeps_what_came_before, .timeout = 180)
{
	const char *options[] = { "--backend", "sample", "--trigger", "on_trigger", NULL };
	const struct fxt_instant *hit;
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_root("no_btf");
	make_test_dir(dir, sizeof(dir));
	run_hidden(dir, options, "trigger", "4", &r);
	cr_assert_eq(r.exit_code, 0, "rearview failed without BTF:\n%s", r.err);
	cr_assert(strstr(r.out, "triggers=4"), "%s", r.out);
	assert_no_libbpf_lines(r.err);
	t = read_trace(dir);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, SNAPSHOT), 1, "%s", r.err);
	hit = fxt_find_instant(t, FXT_ANY, FXT_ANY, SNAPSHOT, 0);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "before_trigger"), 0);
	/* 30 ms of CPU right after the first hit, none of it kept */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "after_first_trigger"), 0);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert_leq(t->spans[i].end_ns, hit->ts_ns, "%s ends after the snapshot",
			      t->spans[i].name);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(no_btf, uprobe_backend_refuses_in_one_line_naming_btf, .timeout = 120)
{
	const char *options[] = { "--backend", "uprobe", "--functions", "*_work", NULL };
	char dir[64];
	struct proc_result r;

	require_root("no_btf");
	make_test_dir(dir, sizeof(dir));
	run_hidden(dir, options, "windows", "4", &r);
	cr_assert_neq(r.exit_code, 0, "the uprobe backend ran without BTF:\n%s", r.err);
	cr_assert_eq(count_lines(r.err), 1, "not one line:\n%s", r.err);
	cr_assert(!strncmp(r.err, "rearview: error: ", 17), "%s", r.err);
	cr_assert(strstr(r.err, "--btf FILE"), "%s", r.err);
	cr_assert(strstr(r.err, "CONFIG_DEBUG_INFO_BTF"), "%s", r.err);
	cr_assert(!strstr(r.out, "windows="), "the target ran:\n%s", r.out);
	cleanup_dir(dir);
}

Test(no_btf, uprobe_backend_works_with_btf_file, .timeout = 180)
{
	char dir[64], copy[PATH_MAX], command[2 * PATH_MAX];
	const char *options[] = { "--backend", "uprobe", "--functions", "*_work",
				  "--btf",     copy,	 NULL };
	struct proc_result r;
	struct fxt_trace *t;

	require_root("no_btf");
	if (!kernel_btf_visible()) {
		cr_assert(!under_ci(), "CI's kernel must show its BTF (" KERNEL_BTF ")");
		cr_skip_test("this kernel shows no BTF (" KERNEL_BTF "): nothing to copy");
	}
	make_test_dir(dir, sizeof(dir));
	/* The kernel's BTF, copied while it can still be seen. */
	snprintf(copy, sizeof(copy), "%s/vmlinux.btf", dir);
	snprintf(command, sizeof(command), "cp %s %s", KERNEL_BTF, copy);
	cr_assert_eq(system(command), 0, "%s failed", command);
	run_hidden(dir, options, "windows", "12", &r);
	cr_assert_eq(r.exit_code, 0, "rearview --btf failed:\n%s", r.err);
	cr_assert(strstr(r.out, "windows=12 slow=3"), "%s", r.out);
	assert_no_libbpf_lines(r.err);
	/* Children cannot be followed without the kernel's own BTF: said once. */
	cr_assert(strstr(r.err, "--btf cannot stand in"), "%s", r.err);
	t = read_trace(dir);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "slow_work"), 3, "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fast_work"), 9, "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 13, "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
