/* softpt_reference.c: a softpt run read back for the PT engine's tests
 * (softpt_reference.h). */
#include "softpt_reference.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_env.h"
#include "test_files.h"

static void read_capture(struct softpt_reference *ref)
{
	char path[PATH_MAX + 32];
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	size_t used = 0;
	int got;

	snprintf(path, sizeof(path), "%s/perf.data", ref->dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if (a->attr.type == PERF_TYPE_SOFTWARE)
			ref->sb_attr = a->attr;
		else
			ref->pt_attr = a->attr;
	}
	snprintf(ref->cpuid, sizeof(ref->cpuid), "%s",
		 rv_perf_reader_feature_string(r, RV_FEAT_CPUID));
	while ((got = rv_perf_reader_next(r, &rec, &err)) == 1) {
		const struct perf_event_header *h = rec.header;
		struct rv_perf_mmap m;
		struct rv_perf_auxtrace a;

		if (h->type == RV_PERF_RECORD_AUXTRACE_INFO) {
			cr_assert_eq(rv_intel_pt_info_parse(h, &ref->info, &err), 0);
		} else if (h->type == RV_PERF_RECORD_TIME_CONV) {
			cr_assert_eq(rv_perf_time_conv_parse(h, &ref->tc, &err), 0);
		} else if (h->type == RV_PERF_RECORD_AUXTRACE) {
			cr_assert_eq(rv_perf_auxtrace_parse(h, &a, &err), 0);
			cr_assert_null(ref->trace, "softpt writes one buffer per thread");
			ref->trace = malloc(a.size);
			cr_assert_not_null(ref->trace);
			memcpy(ref->trace, rec.payload, a.size);
			ref->trace_size = a.size;
			ref->pid = a.tid;
		} else if (h->type == PERF_RECORD_MMAP2 && rv_perf_mmap_parse(h, &m) == 0 &&
			   m.executable) {
			int n = snprintf(ref->maps + used, sizeof(ref->maps) - used,
					 "%08" PRIx64 "-%08" PRIx64 " r-xp %08" PRIx64
					 " 00:00 0 %s\n",
					 m.start, m.start + m.len, m.pgoff, m.filename);
			cr_assert(n > 0 && (size_t)n < sizeof(ref->maps) - used);
			used += (size_t)n;
		}
	}
	cr_assert_eq(got, 0, "%s", err.message);
	rv_perf_reader_free(r);
	cr_assert_not_null(ref->trace, "softpt wrote no trace");
	cr_assert(used > 0, "softpt wrote no mapping");
}

void softpt_reference_make(struct softpt_reference *ref, const char *prefix)
{
	char exe[PATH_MAX], prog[PATH_MAX], out[PATH_MAX + 16], errs[PATH_MAX + 16];
	pid_t pid;
	int status;

	memset(ref, 0, sizeof(*ref));
	make_temp_dir(ref->dir, sizeof(ref->dir), prefix);
	snprintf(exe, sizeof(exe), "%s/softpt", build_dir());
	snprintf(prog, sizeof(prog), "%s/tests/pt/recursion", build_dir());
	cr_assert_eq(access(exe, X_OK), 0, "%s is not built (make %s)", exe, exe);
	cr_assert_eq(access(prog, X_OK), 0, "%s is not built (make %s)", prog, prog);
	snprintf(out, sizeof(out), "%s/softpt.out", ref->dir);
	snprintf(errs, sizeof(errs), "%s/softpt.err", ref->dir);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { exe, "-q", "-o", ref->dir, "--", prog, NULL };
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errs, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(o, 1);
		dup2(e, 2);
		execv(exe, argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "softpt failed (see %s)", errs);
	read_capture(ref);
}

void softpt_reference_free(struct softpt_reference *ref)
{
	remove_tree(ref->dir);
	free(ref->trace);
	ref->trace = NULL;
}

void softpt_run_settings(const char *program, const struct softpt_setting *settings, size_t n,
			 size_t stride, const char *prefix, char *dir, size_t dir_size)
{
	char softpt[PATH_MAX], target[PATH_MAX], cmd[8192];
	const char *at = (const char *)settings;
	size_t used;

	snprintf(softpt, sizeof(softpt), "%s/softpt", build_dir());
	snprintf(target, sizeof(target), "%s/tests/pt/%s", build_dir(), program);
	require_executable("softpt (make build/softpt)", softpt);
	require_executable("the PT target program", target);
	make_temp_dir(dir, dir_size, prefix);
	used = (size_t)snprintf(cmd, sizeof(cmd), "'%s' -q", softpt);
	for (size_t i = 0; i < n && used < sizeof(cmd); i++, at += stride) {
		const struct softpt_setting *s = (const struct softpt_setting *)at;

		used += (size_t)snprintf(cmd + used, sizeof(cmd) - used, " %s -o '%s/%s'", s->args,
					 dir, s->name);
	}
	cr_assert_lt(used, sizeof(cmd) - 64, "the softpt command is too long");
	snprintf(cmd + used, sizeof(cmd) - used, " -- '%s' >'%s/out.txt' 2>&1", target, dir);
	cr_assert_eq(system(cmd), 0, "softpt failed (see %s/out.txt): %s", dir, cmd);
}
