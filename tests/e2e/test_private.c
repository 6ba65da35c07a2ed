/* test_private.c: captures and traces are private. With the umask at 022
 * and as root, a recording's capture directory is 0700 and every file in it
 * 0600, for each backend that runs here (sampling and uprobes; Intel PT's
 * through the simulated kernel: tests/unit/test_session.c), the temporary
 * one as well as --working-directory; its trace (and the partial trace while
 * it is written, with its owner record) 0600. A working directory others or
 * the group may write to is refused unless it is sticky and ours. An
 * unprivileged user reads nothing of a capture kept in a world-readable
 * place. `decode` makes a private trace of a private capture, and a trace
 * with the umask's mode of one anybody may read. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"
#include "util/leftovers.h"

static const char *const backends[] = { "sample", "uprobe" };

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

/* Asserts dir is 0700 and every file under it 0600 (directories 0700);
 * returns how many files. */
static size_t assert_private_tree(const char *dir)
{
	struct dirent *de;
	size_t files = 0;
	DIR *d;

	cr_assert_eq(mode_of(dir), 0700, "%s is %04o, not 0700", dir, mode_of(dir));
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		cr_assert_eq(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			files += assert_private_tree(path);
			continue;
		}
		cr_assert(S_ISREG(st.st_mode), "%s is a regular file", path);
		cr_assert_eq(st.st_mode & 07777, 0600, "%s is %04o, not 0600", path,
			     (unsigned)(st.st_mode & 07777));
		files++;
	}
	closedir(d);
	return files;
}

/* `rearview run --backend BACKEND [--working-directory WD] -o OUT --
 * fncalls`, asserted to succeed. */
static void record_fncalls(const char *backend, const char *wd, const char *out)
{
	struct proc_result r;
	char *argv[16];
	size_t a = 0;

	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	argv[a++] = "--backend";
	argv[a++] = (char *)backend;
	if (wd) {
		argv[a++] = "--working-directory";
		argv[a++] = (char *)wd;
	}
	argv[a++] = "-o";
	argv[a++] = (char *)out;
	argv[a++] = "--";
	argv[a++] = (char *)built_target("fncalls");
	argv[a] = NULL;
	run_process(argv, 60, &r);
	cr_assert_eq(r.exit_code, 0, "rearview run --backend %s failed:\n%s", backend, r.err);
}

Test(private, kept_captures_and_traces_are_private_for_each_backend, .timeout = 180)
{
	char dir[PATH_MAX], wd[PATH_MAX + 32], out[PATH_MAX + 32];

	require_root("private");
	umask(022);
	make_test_dir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		snprintf(wd, sizeof(wd), "%s/kept-%s", dir, backends[i]);
		snprintf(out, sizeof(out), "%s/%s.fxt", dir, backends[i]);
		record_fncalls(backends[i], wd, out);
		cr_assert_geq(assert_private_tree(wd), 1, "%s: the capture is there", backends[i]);
		cr_assert_eq(mode_of(out), 0600, "the %s trace is %04o, not 0600", backends[i],
			     mode_of(out));
	}
	cleanup_dir(dir);
}

/* While a recording runs: its temporary capture directory (in TMPDIR) and
 * its partial trace are private and carry this run's owner record. */
Test(private, temporary_capture_and_partial_trace_are_private_while_recording, .timeout = 180)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 16], out[PATH_MAX + 16];

	require_root("private");
	umask(022);
	make_test_dir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	cr_assert_eq(mkdir(tmp, 0755), 0);
	setenv("TMPDIR", tmp, 1);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "--backend",
				 (char *)backends[i],
				 "-o",
				 out,
				 "--",
				 (char *)built_target("busy2"),
				 NULL };
		char capture[PATH_MAX + 300] = "", partial[PATH_MAX + 300] = "", record[128];
		struct rv_owner owner;
		struct proc_result r;
		struct dirent *de;
		int out_fd, err_fd;
		ssize_t n;
		pid_t pid = start_process(argv, &out_fd, &err_fd);
		DIR *d;

		if (!wait_until_polling(pid, 30)) {
			finish_process(pid, out_fd, err_fd, 1, &r);
			cr_assert_fail("rearview --backend %s did not start recording:\n%s",
				       backends[i], r.err);
		}
		d = opendir(tmp);
		while (d && (de = readdir(d)))
			if (!strncmp(de->d_name, RV_CAPTURE_PREFIX, strlen(RV_CAPTURE_PREFIX)))
				snprintf(capture, sizeof(capture), "%s/%s", tmp, de->d_name);
		closedir(d);
		d = opendir(dir);
		while (d && (de = readdir(d)))
			if (!strncmp(de->d_name, ".t.fxt.", 7))
				snprintf(partial, sizeof(partial), "%s/%s", dir, de->d_name);
		closedir(d);
		cr_assert(capture[0], "a temporary capture directory in %s", tmp);
		cr_assert(partial[0], "a partial trace in %s", dir);
		cr_assert_geq(assert_private_tree(capture), 2, "perf.data and the owner record");
		cr_assert_eq(mode_of(partial), 0600);
		n = getxattr(partial, RV_OWNER_XATTR, record, sizeof(record));
		cr_assert_gt(n, 0, "the partial trace has its owner record: %s", strerror(errno));
		cr_assert(rv_owner_parse(record, (size_t)n, &owner));
		cr_assert_eq(owner.pid, pid, "the owner is the recording rearview");
		kill(pid, SIGINT);
		finish_process(pid, out_fd, err_fd, 60, &r);
		cr_assert(!r.timed_out && file_exists(out), "--backend %s wrote its trace: %s",
			  backends[i], r.err);
		cr_assert_eq(mode_of(out), 0600, "the trace is private");
		cr_assert(!file_exists(capture), "the capture went with the run");
		cr_assert(!file_exists(partial));
		unlink(out);
	}
	cleanup_dir(dir);
}

/* Runs `rearview run --working-directory WD -o DIR/t.fxt -- true`. */
static void run_in(const char *dir, const char *wd, struct proc_result *r)
{
	char out[PATH_MAX + 16];
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--working-directory",
			 (char *)wd,
			 "-o",
			 out,
			 "--",
			 "/bin/true",
			 NULL };

	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	run_process(argv, 60, r);
}

Test(private, a_working_directory_others_may_write_is_refused, .timeout = 120)
{
	char dir[PATH_MAX], shared[PATH_MAX + 16];
	struct proc_result r;

	require_root("private");
	make_test_dir(dir, sizeof(dir));
	snprintf(shared, sizeof(shared), "%s/shared-dir", dir);
	cr_assert_eq(mkdir(shared, 0700), 0);

	cr_assert_eq(chmod(shared, 0777), 0);
	run_in(dir, shared, &r);
	cr_assert_eq(r.exit_code, 1, "refused: %s", r.err);
	cr_assert(strstr(r.err, "writable by others") && strstr(r.err, "chmod o-w"), "%s", r.err);
	cr_assert_eq(dir_entries(shared), 0, "nothing was written there");
	cr_assert_eq(dir_entries(dir), 1, "no trace either");

	cr_assert_eq(chmod(shared, 0770), 0);
	run_in(dir, shared, &r);
	cr_assert_eq(r.exit_code, 1, "group-writable is refused too: %s", r.err);
	cr_assert(strstr(r.err, "writable by its group"), "%s", r.err);
	cr_assert_eq(dir_entries(shared), 0);

	cr_assert_eq(chown(shared, 65534, 65534), 0);
	cr_assert_eq(chmod(shared, 01777), 0);
	run_in(dir, shared, &r);
	cr_assert_eq(r.exit_code, 1, "sticky but someone else's: refused: %s", r.err);
	cr_assert(strstr(r.err, "owned by someone else"), "%s", r.err);

	cr_assert_eq(chown(shared, 0, 0), 0);
	cr_assert_eq(chmod(shared, 01777), 0);
	run_in(dir, shared, &r);
	cr_assert_eq(r.exit_code, 0, "sticky and ours, as /tmp is: accepted: %s", r.err);
	cr_assert_eq(mode_of(shared), 01777, "an existing directory keeps its mode");
	cr_assert_geq(dir_entries(shared), 1);
	cleanup_dir(dir);
}

/* Whether uid 65534 can read path (setpriv drops every privilege). */
static bool nobody_reads(const char *path)
{
	char *argv[] = { "/usr/bin/setpriv",
			 "--reuid=65534",
			 "--regid=65534",
			 "--clear-groups",
			 "/usr/bin/head",
			 "-c",
			 "1",
			 (char *)path,
			 NULL };
	struct proc_result r;

	run_process(argv, 10, &r);
	cr_assert_neq(r.exit_code, 127, "setpriv ran: %s", r.err);
	return r.exit_code == 0;
}

Test(private, nobody_reads_a_capture_kept_in_a_world_readable_place, .timeout = 180)
{
	char dir[PATH_MAX], wd[PATH_MAX + 16], out[PATH_MAX + 16], path[PATH_MAX + 300];
	struct dirent *de;
	size_t checked = 0;
	DIR *d;

	require_root("private");
	require_tool("setpriv", "util-linux");
	umask(022);
	make_test_dir(dir, sizeof(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(wd, sizeof(wd), "%s/kept", dir);
	/* an existing directory anybody may read and enter */
	cr_assert_eq(mkdir(wd, 0755), 0);
	snprintf(path, sizeof(path), "%s/canary", dir);
	write_file(path, "x", 1);
	cr_assert(nobody_reads(path), "uid 65534 reads what is world-readable here");
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
		snprintf(out, sizeof(out), "%s/%s.fxt", dir, backends[i]);
		record_fncalls(backends[i], wd, out);
		cr_assert(!nobody_reads(out), "uid 65534 cannot read the %s trace", backends[i]);
		d = opendir(wd);
		cr_assert_not_null(d);
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", wd, de->d_name);
			cr_assert(!nobody_reads(path), "uid 65534 reads %s", path);
			checked++;
		}
		closedir(d);
	}
	cr_assert_geq(checked, 2, "each backend's capture was checked");
	cleanup_dir(dir);
}

/* `rearview decode CAPTURE -o OUT`, asserted to succeed. */
static void decode(const char *capture, const char *out)
{
	char *argv[] = {
		(char *)build_path("rearview"), "decode", (char *)capture, "-o", (char *)out, NULL
	};
	struct proc_result r;

	run_process(argv, 60, &r);
	cr_assert_eq(r.exit_code, 0, "decode failed: %s", r.err);
}

Test(private, decode_keeps_a_private_capture_private_and_follows_the_umask_otherwise,
     .timeout = 120)
{
	char dir[PATH_MAX], wd[PATH_MAX + 16], out[PATH_MAX + 16], data[PATH_MAX + 32];

	require_root("private");
	umask(022);
	make_test_dir(dir, sizeof(dir));
	snprintf(wd, sizeof(wd), "%s/kept", dir);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	snprintf(data, sizeof(data), "%s/perf.data", wd);
	record_fncalls("sample", wd, out);

	decode(wd, out);
	cr_assert_eq(mode_of(out), 0600, "a capture only root reads: a private trace");
	decode(data, out);
	cr_assert_eq(mode_of(out), 0600, "its perf.data alone too");

	/* made readable by everyone, by the user's choice */
	cr_assert_eq(chmod(wd, 0755), 0);
	cr_assert_eq(chmod(data, 0644), 0);
	decode(wd, out);
	cr_assert_eq(mode_of(out), 0644, "the umask's mode (022)");
	umask(027);
	decode(data, out);
	cr_assert_eq(mode_of(out), 0640, "the umask's mode (027)");
	cleanup_dir(dir);
}
