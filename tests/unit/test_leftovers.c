/* test_leftovers.c: owner records and the sweep of what a killed rearview
 * left (util/leftovers.h): a live owner's capture and partial trace are
 * kept, a dead owner's removed, a pid reused by a process with another start
 * time (or another boot) counts as gone, one of another pid namespace is
 * kept, and entries without a record, with a malformed one, of another name
 * or of another user are never touched.
 *
 * The owners are real processes: this test's own (alive), a child that has
 * exited and been reaped (gone).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "test_env.h"
#include "test_files.h"
#include "util/leftovers.h"

static bool present(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* The owner record of a child that has exited and been reaped. */
static struct rv_owner dead_owner(void)
{
	struct rv_owner owner;
	struct rv_error err = { 0 };
	int pipe_fds[2], status;
	char c;
	pid_t pid;

	cr_assert_eq(pipe(pipe_fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(pipe_fds[1]);
		/* waits until the parent has read its record */
		while (read(pipe_fds[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(pipe_fds[0]);
	cr_assert_eq(rv_owner_of(pid, &owner, &err), 0, "%s", err.message);
	close(pipe_fds[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return owner;
}

static struct rv_owner self_owner(void)
{
	struct rv_owner owner;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_owner_of(getpid(), &owner, &err), 0, "%s", err.message);
	return owner;
}

/* DIR/NAME as a capture directory with a file in it and, unless owner is
 * NULL, the owner record; its path in out. */
static void make_capture(const char *dir, const char *name, const struct rv_owner *owner, char *out,
			 size_t size)
{
	char path[PATH_MAX + 64], record[128];

	snprintf(out, size, "%s/%s", dir, name);
	cr_assert_eq(mkdir(out, 0700), 0, "%s: %s", out, strerror(errno));
	snprintf(path, sizeof(path), "%s/perf.data", out);
	write_file(path, "PERFILE2", 8);
	if (owner) {
		size_t len = rv_owner_format(owner, record, sizeof(record));

		cr_assert_gt(len, 0);
		snprintf(path, sizeof(path), "%s/%s", out, RV_OWNER_FILE);
		write_file(path, record, len);
	}
}

/* DIR/NAME as a partial trace with, unless owner is NULL, its record. */
static void make_partial(const char *dir, const char *name, const struct rv_owner *owner, char *out,
			 size_t size)
{
	char record[128];

	snprintf(out, size, "%s/%s", dir, name);
	write_file(out, "trace bytes", 11);
	if (owner) {
		size_t len = rv_owner_format(owner, record, sizeof(record));

		cr_assert_eq(setxattr(out, RV_OWNER_XATTR, record, len, 0), 0, "%s: %s", out,
			     strerror(errno));
	}
}

struct removed {
	size_t n;
	char paths[8][PATH_MAX];
	pid_t pids[8];
};

static void note(void *ctx, const char *path, const struct rv_owner *owner)
{
	struct removed *r = ctx;

	if (r->n < 8) {
		snprintf(r->paths[r->n], sizeof(r->paths[r->n]), "%s", path);
		r->pids[r->n] = owner->pid;
	}
	r->n++;
}

Test(leftovers, owner_record_round_trips_and_names_this_process)
{
	struct rv_owner self = self_owner(), back;
	char text[128];
	size_t len = rv_owner_format(&self, text, sizeof(text));

	cr_assert_gt(len, 0);
	cr_assert_eq(text[len - 1], '\n');
	cr_assert(rv_owner_parse(text, len, &back), "'%s'", text);
	cr_assert_eq(back.pid, getpid());
	cr_assert_eq(back.start_ticks, self.start_ticks);
	cr_assert_str_eq(back.boot_id, self.boot_id);
	cr_assert_eq(back.pid_ns, self.pid_ns);
	cr_assert_neq(self.boot_id[0], '\0', "this kernel has a boot id");
	cr_assert_neq(self.pid_ns, 0, "this kernel shows pid namespaces");
	cr_assert(rv_owner_alive(&self), "this process is alive");
	/* without its newline too */
	cr_assert(rv_owner_parse(text, len - 1, &back));
	cr_assert_eq(rv_owner_format(&self, text, 10), 0, "no room: nothing");
}

Test(leftovers, malformed_records_are_refused)
{
	static const char *const bad[] = {
		"",
		"rearview",
		"rearview ",
		"rearview 12",
		"rearview 12 34",
		"rearview 12 34 ",
		"rearview 12 34 -",
		"rearview 12 34 - ",
		"rearview 0 34 - 5",
		"rearview -3 34 - 5",
		"rearview 2147483648 34 - 5",
		"rearview 12 99999999999999999999999 - 5",
		"rearview 12 34 NOT-HEX 5",
		"rearview 12 34 0123456789abcdef0123456789abcdef012345678 5",
		"rearview 12 34 - 5 extra",
		"rearview 12 34 - 18446744073709551616",
		"rearview 12 34 - x",
		"rearviex 12 34 - 5",
		"rearview  12 34 - 5",
		"rearview 12 34  5",
		"rearview 12 34 - 5\n\n",
	};
	struct rv_owner owner;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!rv_owner_parse(bad[i], strlen(bad[i]), &owner), "'%s' is refused",
			  bad[i]);
	cr_assert(rv_owner_parse("rearview 12 34 - 0", 18, &owner));
	cr_assert_eq(owner.pid, 12);
	cr_assert_eq(owner.start_ticks, 34);
	cr_assert_str_eq(owner.boot_id, "");
	cr_assert_eq(owner.pid_ns, 0);
	/* a length that stops short of what follows is all that is read */
	cr_assert(rv_owner_parse("rearview 12 34 abc 77garbage", 21, &owner));
	cr_assert_str_eq(owner.boot_id, "abc");
	cr_assert_eq(owner.pid_ns, 77);
}

Test(leftovers, reaped_reused_and_rebooted_owners_are_gone)
{
	struct rv_owner dead = dead_owner(), reused = self_owner(), rebooted = self_owner();

	cr_assert(!rv_owner_alive(&dead), "a reaped child is gone");
	reused.start_ticks++;
	cr_assert(!rv_owner_alive(&reused), "our pid with another start time is not us");
	snprintf(rebooted.boot_id, sizeof(rebooted.boot_id), "%s",
		 "00000000-0000-0000-0000-000000000000");
	cr_assert(!rv_owner_alive(&rebooted), "our pid and start time in another boot");
}

Test(leftovers, an_owner_in_another_pid_namespace_is_not_judged)
{
	struct rv_owner dead = dead_owner();

	dead.pid_ns++;
	cr_assert(rv_owner_alive(&dead), "its pid is not ours to look up: kept");
	dead.pid_ns = 0;
	cr_assert(!rv_owner_alive(&dead), "a record without a namespace is judged here");
}

Test(leftovers, a_zombie_owner_is_gone)
{
	struct rv_owner owner;
	struct rv_error err = { 0 };
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	cr_assert_eq(rv_owner_of(pid, &owner, &err), 0, "%s", err.message);
	cr_assert(rv_owner_alive(&owner));
	kill(pid, SIGKILL);
	/* dead, not yet reaped */
	cr_assert_eq(waitid(P_PID, (id_t)pid, NULL, WEXITED | WNOWAIT), 0);
	cr_assert(!rv_owner_alive(&owner), "a zombie's work is over");
	waitpid(pid, &status, 0);
}

Test(leftovers, mark_dir_and_mark_file_write_this_process_record)
{
	char *dir = new_temp_dir("rv-leftovers"), path[PATH_MAX], record[128];
	struct rv_error err = { 0 };
	struct rv_owner owner;
	struct stat st;
	ssize_t n;
	int fd;

	cr_assert_eq(rv_leftovers_mark_dir(dir, &err), 0, "%s", err.message);
	snprintf(path, sizeof(path), "%s/%s", dir, RV_OWNER_FILE);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "the record is private too");
	char *text = read_whole(path, NULL);
	cr_assert(rv_owner_parse(text, strlen(text), &owner));
	cr_assert_eq(owner.pid, getpid());
	free(text);
	cr_assert_neq(rv_leftovers_mark_dir(dir, &err), 0, "an existing record is not rewritten");

	snprintf(path, sizeof(path), "%s/.t.fxt.Ab12Cd", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(rv_leftovers_mark_file(fd, &err), 0, "%s (this machine's filesystem)",
		     err.message);
	close(fd);
	n = getxattr(path, RV_OWNER_XATTR, record, sizeof(record));
	cr_assert_gt(n, 0);
	cr_assert(rv_owner_parse(record, (size_t)n, &owner));
	cr_assert_eq(owner.pid, getpid());
	free_temp_dir(dir);
}

Test(leftovers, sweep_removes_dead_owners_captures_and_keeps_the_rest)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner(), alive = self_owner(), reused = self_owner();
	char gone[PATH_MAX], live[PATH_MAX], recycled[PATH_MAX], unmarked[PATH_MAX];
	char other_name[PATH_MAX], broken[PATH_MAX], path[PATH_MAX + 16];
	struct removed r = { 0 };

	reused.start_ticks += 7;
	make_capture(dir, "rearview-Ab12Cd", &dead, gone, sizeof(gone));
	make_capture(dir, "rearview-Live01", &alive, live, sizeof(live));
	make_capture(dir, "rearview-Reu5ed", &reused, recycled, sizeof(recycled));
	make_capture(dir, "rearview-NoRec1", NULL, unmarked, sizeof(unmarked));
	make_capture(dir, "rearview-e2e-Ab12Cd", &dead, other_name, sizeof(other_name));
	make_capture(dir, "rearview-Broken", NULL, broken, sizeof(broken));
	snprintf(path, sizeof(path), "%s/%s", broken, RV_OWNER_FILE);
	write_file(path, "rearview twelve", 15);

	cr_assert_eq(rv_leftovers_sweep_captures(dir, note, &r), 2);
	cr_assert_eq(r.n, 2);
	cr_assert(!present(gone), "a dead owner's capture is removed");
	cr_assert(!present(recycled), "a reused pid's capture is removed");
	for (size_t i = 0; i < 2; i++) {
		cr_assert(!strcmp(r.paths[i], gone) || !strcmp(r.paths[i], recycled), "%s",
			  r.paths[i]);
		cr_assert_eq(r.pids[i], !strcmp(r.paths[i], gone) ? dead.pid : reused.pid);
	}
	cr_assert(present(live), "a live owner's capture is kept");
	cr_assert(present(unmarked), "a directory without a record is never touched");
	cr_assert(present(other_name), "another name is never touched");
	cr_assert(present(broken), "a malformed record is never trusted");
	free_temp_dir(dir);
}

Test(leftovers, sweep_removes_dead_owners_partial_traces_and_keeps_the_rest)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner(), alive = self_owner();
	char gone[PATH_MAX], live[PATH_MAX], unmarked[PATH_MAX], trace[PATH_MAX];
	char short_name[PATH_MAX], link[PATH_MAX + 16], subdir[PATH_MAX + 16];
	struct removed r = { 0 };

	make_partial(dir, ".t.fxt.Ab12Cd", &dead, gone, sizeof(gone));
	make_partial(dir, ".t.fxt.Live01", &alive, live, sizeof(live));
	make_partial(dir, ".t.fxt.NoRec1", NULL, unmarked, sizeof(unmarked));
	make_partial(dir, "t.fxt.Ab12Cd", &dead, trace, sizeof(trace));
	make_partial(dir, ".t.fxt.Ab12C", &dead, short_name, sizeof(short_name));
	/* a link named like a partial trace, to a dead owner's file: not followed */
	snprintf(link, sizeof(link), "%s/.u.fxt.Ln1234", dir);
	cr_assert_eq(symlink(trace, link), 0);
	snprintf(subdir, sizeof(subdir), "%s/.v.fxt.Dir123", dir);
	cr_assert_eq(mkdir(subdir, 0700), 0);

	cr_assert_eq(rv_leftovers_sweep_traces(dir, note, &r), 1);
	cr_assert_str_eq(r.paths[0], gone);
	cr_assert_eq(r.pids[0], dead.pid);
	cr_assert(!present(gone));
	cr_assert(present(live), "a live owner's partial trace is kept");
	cr_assert(present(unmarked), "a file without the record is never touched");
	cr_assert(present(trace), "a name without the leading dot is never touched");
	cr_assert(present(short_name), "a name without six template characters neither");
	cr_assert(present(subdir));
	cr_assert(present(trace), "the link's target is left");
	free_temp_dir(dir);
}

Test(leftovers, other_users_leftovers_are_never_touched)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner();
	char capture[PATH_MAX], partial[PATH_MAX], record[PATH_MAX + 16];

	if (geteuid() != 0) {
		cr_assert(!under_ci(), "under CI=true the leftovers test must run as root");
		cr_skip_test("giving a file to another user needs root");
	}
	make_capture(dir, "rearview-Other1", &dead, capture, sizeof(capture));
	make_partial(dir, ".t.fxt.Other1", &dead, partial, sizeof(partial));
	cr_assert_eq(chown(capture, 65534, 65534), 0);
	cr_assert_eq(chown(partial, 65534, 65534), 0);
	cr_assert_eq(rv_leftovers_sweep_captures(dir, NULL, NULL), 0);
	cr_assert_eq(rv_leftovers_sweep_traces(dir, NULL, NULL), 0);
	cr_assert(present(capture), "another user's directory is kept");
	cr_assert(present(partial), "another user's file is kept");
	/* a directory of ours whose record another user wrote is not trusted */
	cr_assert_eq(chown(capture, 0, 0), 0);
	snprintf(record, sizeof(record), "%s/%s", capture, RV_OWNER_FILE);
	cr_assert_eq(chown(record, 65534, 65534), 0);
	cr_assert_eq(rv_leftovers_sweep_captures(dir, NULL, NULL), 0);
	cr_assert(present(capture));
	free_temp_dir(dir);
}

Test(leftovers, sweep_looks_in_tmpdir_and_the_output_directory)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner();
	char capture[PATH_MAX], partial[PATH_MAX], output[PATH_MAX + 16];
	const char *before = getenv("TMPDIR");
	char *saved = before ? strdup(before) : NULL;
	struct removed r = { 0 };

	make_capture(dir, "rearview-Tmp123", &dead, capture, sizeof(capture));
	make_partial(dir, ".out.fxt.Tmp123", &dead, partial, sizeof(partial));
	setenv("TMPDIR", dir, 1);
	cr_assert_str_eq(rv_leftovers_tmpdir(), dir);
	cr_assert_eq(rv_leftovers_sweep("-", note, &r), 1, "standard output: captures only");
	cr_assert(!present(capture));
	cr_assert(present(partial));
	snprintf(output, sizeof(output), "%s/out.fxt", dir);
	cr_assert_eq(rv_leftovers_sweep(output, note, &r), 1);
	cr_assert(!present(partial));
	setenv("TMPDIR", "", 1);
	cr_assert_str_eq(rv_leftovers_tmpdir(), "/tmp", "an empty TMPDIR is /tmp");
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	free_temp_dir(dir);
}
