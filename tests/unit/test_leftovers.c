/* test_leftovers.c: owner records and the sweep of what a killed rearview
 * left (util/leftovers.h): a live owner's capture and partial trace are
 * kept, a dead owner's removed, a pid reused by a process with another start
 * time (or another boot) counts as gone, one of another pid namespace is
 * kept, and entries without a record, with a malformed one, of another name
 * or of another user are never touched.
 *
 * The entries rearview makes get their record before their name: a partial
 * trace unnamed first (O_TMPFILE), a capture directory under a staging name
 * that is the record; where a filesystem refuses either, the old way
 * (inotify tells which happened). Staging directories of a dead owner are
 * removed, of a live one kept, and lookalikes never touched.
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
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>
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

/* ---- making entries with their record ---- */

/* inotify events on dir: what happened to which name, in order. */
struct events {
	size_t n;
	uint32_t mask[64];
	char name[64][NAME_MAX + 1];
};

static int watch_dir(const char *dir)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	cr_assert_geq(fd, 0);
	cr_assert_geq(
		inotify_add_watch(fd, dir, IN_CREATE | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO), 0);
	return fd;
}

/* The events the watch got so far (then closed). */
static void read_events(int fd, struct events *ev)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	ev->n = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (ev->n < 64) {
				ev->mask[ev->n] = e->mask;
				snprintf(ev->name[ev->n], sizeof(ev->name[0]), "%s",
					 e->len ? e->name : "");
				ev->n++;
			}
			p += sizeof(*e) + e->len;
		}
	}
	close(fd);
}

/* The position of the first event of mask on name; -1 when none. */
static int event_at(const struct events *ev, uint32_t mask, const char *name)
{
	for (size_t i = 0; i < ev->n; i++)
		if ((ev->mask[i] & mask) && !strcmp(ev->name[i], name))
			return (int)i;
	return -1;
}

/* The owner record on path (the extended attribute) is this process's. */
static void assert_marked_by_us(const char *path)
{
	char record[128];
	struct rv_owner owner;
	ssize_t n = getxattr(path, RV_OWNER_XATTR, record, sizeof(record));

	cr_assert_gt(n, 0, "%s has its record: %s", path, strerror(errno));
	cr_assert(rv_owner_parse(record, (size_t)n, &owner));
	cr_assert_eq(owner.pid, getpid());
}

/* A partial trace made by rv_leftovers_create_file in dir: its name has
 * the template's form, it is private, marked and the descriptor's. */
static void assert_partial_trace(const char *dir, const char *template, int fd)
{
	char expected[PATH_MAX], buf[8];
	struct stat st, by_fd;
	int reader;

	snprintf(expected, sizeof(expected), "%s/.t.fxt.", dir);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	cr_assert_eq(strncmp(template, expected, strlen(expected)), 0, "%s", template);
	cr_assert_eq(strlen(template), strlen(expected) + 6, "%s", template);
	cr_assert_eq(lstat(template, &st), 0, "%s is there", template);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 0077, 0, "private");
	cr_assert_eq(fstat(fd, &by_fd), 0);
	cr_assert_eq(st.st_ino, by_fd.st_ino, "the name is the descriptor's file");
	cr_assert_eq(st.st_nlink, 1);
	assert_marked_by_us(template);
	cr_assert_eq(write(fd, "trace", 5), 5);
	reader = open(template, O_RDONLY);
	cr_assert_geq(reader, 0);
	cr_assert_eq(read(reader, buf, sizeof(buf)), 5);
	close(reader);
}

Test(leftovers, create_file_names_the_partial_trace_only_once_it_is_marked)
{
	char *dir = new_temp_dir("rv-leftovers"), template[PATH_MAX];
	const char *name;
	struct rv_error unmarked = { 0 };
	struct events ev;
	int watch = watch_dir(dir), fd;

	snprintf(template, sizeof(template), "%s/.t.fxt.XXXXXX", dir);
	fd = rv_leftovers_create_file(template, &unmarked);
	read_events(watch, &ev);
	assert_partial_trace(dir, template, fd);
	cr_assert_eq(unmarked.code, 0, "%s", unmarked.message);
	name = strrchr(template, '/') + 1;
	/* linked under its name (IN_CREATE) with its record set before: no
	 * IN_ATTRIB on that name ever */
	cr_assert_geq(event_at(&ev, IN_CREATE, name), 0, "%s appeared", name);
	cr_assert_eq(event_at(&ev, IN_ATTRIB, name), -1,
		     "%s got its record after it had its name (%zu events)", name, ev.n);
	cr_assert_eq(dir_entries(dir), 1, "nothing else made");
	close(fd);
	free_temp_dir(dir);
}

Test(leftovers, create_file_falls_back_where_o_tmpfile_is_refused)
{
	static const int refusals[] = { EOPNOTSUPP, EINVAL, EISDIR };
	char *dir = new_temp_dir("rv-leftovers"), template[PATH_MAX];
	struct rv_error unmarked = { 0 };
	struct events ev;

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		int watch = watch_dir(dir), fd, created, attrib;
		const char *name;

		snprintf(template, sizeof(template), "%s/.t.fxt.XXXXXX", dir);
		rv_leftovers_simulate_refusal(refusals[i], 0);
		fd = rv_leftovers_create_file(template, &unmarked);
		rv_leftovers_simulate_refusal(0, 0);
		read_events(watch, &ev);
		assert_partial_trace(dir, template, fd);
		cr_assert_eq(unmarked.code, 0, "%s", unmarked.message);
		/* made named, then marked: the window the header states */
		name = strrchr(template, '/') + 1;
		created = event_at(&ev, IN_CREATE, name);
		attrib = event_at(&ev, IN_ATTRIB, name);
		cr_assert_geq(created, 0);
		cr_assert_gt(attrib, created, "%s: named first, marked after",
			     strerror(refusals[i]));
		close(fd);
		cr_assert_eq(unlink(template), 0);
	}
	/* any other error is the caller's, with nothing made */
	snprintf(template, sizeof(template), "%s/.t.fxt.XXXXXX", dir);
	rv_leftovers_simulate_refusal(EACCES, 0);
	cr_assert_eq(rv_leftovers_create_file(template, &unmarked), -EACCES);
	rv_leftovers_simulate_refusal(0, 0);
	cr_assert_eq(dir_entries(dir), 0);
	free_temp_dir(dir);
}

Test(leftovers, create_file_refuses_what_it_cannot_make)
{
	char *dir = new_temp_dir("rv-leftovers"), template[PATH_MAX];
	struct rv_error unmarked = { 0 };

	snprintf(template, sizeof(template), "%s/.t.fxt.XXXXX", dir);
	cr_assert_eq(rv_leftovers_create_file(template, &unmarked), -EINVAL, "no XXXXXX");
	snprintf(template, sizeof(template), "%s/missing/.t.fxt.XXXXXX", dir);
	cr_assert_eq(rv_leftovers_create_file(template, &unmarked), -ENOENT);
	cr_assert_eq(dir_entries(dir), 0);
	free_temp_dir(dir);
}

Test(leftovers, create_file_gives_each_file_a_name_of_its_own)
{
	char *dir = new_temp_dir("rv-leftovers"), template[PATH_MAX];
	struct rv_error unmarked = { 0 };
	int fds[50];

	for (size_t i = 0; i < 50; i++) {
		snprintf(template, sizeof(template), "%s/.t.fxt.XXXXXX", dir);
		fds[i] = rv_leftovers_create_file(template, &unmarked);
		cr_assert_geq(fds[i], 0);
	}
	cr_assert_eq(dir_entries(dir), 50);
	for (size_t i = 0; i < 50; i++)
		close(fds[i]);
	free_temp_dir(dir);
}

Test(leftovers, create_file_tries_another_name_when_one_is_taken)
{
	char *dir = new_temp_dir("rv-leftovers"), template[PATH_MAX], taken[PATH_MAX + 16];
	struct rv_error unmarked = { 0 };
	char *text;
	int fd;

	snprintf(taken, sizeof(taken), "%s/.t.fxt.Taken1", dir);
	write_file(taken, "someone's", 9);
	snprintf(template, sizeof(template), "%s/.t.fxt.XXXXXX", dir);
	rv_leftovers_simulate_names("Taken1Free01");
	fd = rv_leftovers_create_file(template, &unmarked);
	rv_leftovers_simulate_names(NULL);
	assert_partial_trace(dir, template, fd);
	cr_assert_str_eq(strrchr(template, '.'), ".Free01");
	text = read_whole(taken, NULL);
	cr_assert_str_eq(text, "someone's", "the taken name's file is untouched");
	free(text);
	cr_assert_lt(getxattr(taken, RV_OWNER_XATTR, NULL, 0), 0, "and unmarked");
	close(fd);
	free_temp_dir(dir);
}

/* dir's only entry is a capture directory rearview-XXXXXX at path, 0700,
 * holding our record and nothing else. */
static void assert_capture_dir(const char *dir, const char *path)
{
	char expected[PATH_MAX], record_path[PATH_MAX + 16];
	struct rv_owner owner;
	struct stat st;
	char *text;

	snprintf(expected, sizeof(expected), "%s/" RV_CAPTURE_PREFIX, dir);
	cr_assert_eq(strncmp(path, expected, strlen(expected)), 0, "%s", path);
	cr_assert_eq(strlen(path), strlen(expected) + 6, "%s", path);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0700);
	cr_assert_eq(dir_entries(dir), 1, "no staging directory is left");
	cr_assert_eq(dir_entries(path), 1, "only the record");
	snprintf(record_path, sizeof(record_path), "%s/%s", path, RV_OWNER_FILE);
	text = read_whole(record_path, NULL);
	cr_assert(rv_owner_parse(text, strlen(text), &owner), "'%s'", text);
	cr_assert_eq(owner.pid, getpid());
	free(text);
}

Test(leftovers, create_dir_names_the_capture_directory_only_once_its_record_is_in)
{
	char *dir = new_temp_dir("rv-leftovers"), path[PATH_MAX];
	const char *name;
	struct rv_error err = { 0 };
	struct rv_owner staged, self = self_owner();
	struct events ev;
	int watch = watch_dir(dir), made, left, came;

	cr_assert_eq(rv_leftovers_create_dir(dir, path, sizeof(path), &err), 0, "%s", err.message);
	read_events(watch, &ev);
	assert_capture_dir(dir, path);
	name = strrchr(path, '/') + 1;
	cr_assert_eq(event_at(&ev, IN_CREATE, name), -1, "never made under its final name");
	came = event_at(&ev, IN_MOVED_TO, name);
	cr_assert_geq(came, 0, "renamed to it");
	/* made under a staging name that is our record, left for the final one */
	made = event_at(&ev, IN_CREATE, ev.name[0]);
	cr_assert_eq(made, 0);
	cr_assert(ev.mask[0] & IN_ISDIR);
	cr_assert(rv_leftovers_parse_staging_name(ev.name[0], &staged), "'%s'", ev.name[0]);
	cr_assert_eq(staged.pid, self.pid);
	cr_assert_eq(staged.start_ticks, self.start_ticks);
	cr_assert_str_eq(staged.boot_id, self.boot_id);
	cr_assert_eq(staged.pid_ns, self.pid_ns);
	left = event_at(&ev, IN_MOVED_FROM, ev.name[0]);
	cr_assert(left > made && left < came, "staged, then renamed");
	free_temp_dir(dir);
}

Test(leftovers, create_dir_never_renames_over_a_taken_name)
{
	char *dir = new_temp_dir("rv-leftovers"), path[PATH_MAX], taken[PATH_MAX + 16];
	struct rv_error err = { 0 };

	/* an empty directory, which a plain rename would replace */
	snprintf(taken, sizeof(taken), "%s/" RV_CAPTURE_PREFIX "Taken1", dir);
	cr_assert_eq(mkdir(taken, 0700), 0);
	rv_leftovers_simulate_names("Stage1Taken1Free01");
	cr_assert_eq(rv_leftovers_create_dir(dir, path, sizeof(path), &err), 0, "%s", err.message);
	rv_leftovers_simulate_names(NULL);
	cr_assert_str_eq(strrchr(path, '-'), "-Free01");
	cr_assert(present(taken), "the taken name's directory is kept");
	cr_assert_eq(dir_entries(taken), 0, "and untouched");
	cr_assert_eq(rmdir(taken), 0);
	assert_capture_dir(dir, path);
	free_temp_dir(dir);
}

Test(leftovers, create_dir_falls_back_where_rename_noreplace_is_refused)
{
	static const int refusals[] = { EINVAL, ENOSYS };
	char *dir = new_temp_dir("rv-leftovers"), path[PATH_MAX];
	struct rv_error err = { 0 };
	struct events ev;

	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		int watch = watch_dir(dir);

		rv_leftovers_simulate_refusal(0, refusals[i]);
		cr_assert_eq(rv_leftovers_create_dir(dir, path, sizeof(path), &err), 0, "%s",
			     err.message);
		rv_leftovers_simulate_refusal(0, 0);
		read_events(watch, &ev);
		assert_capture_dir(dir, path);
		/* made under its final name (mkdtemp), then marked */
		cr_assert_geq(event_at(&ev, IN_CREATE, strrchr(path, '/') + 1), 0, "%s: made named",
			      strerror(refusals[i]));
		remove_tree(path);
	}
	/* any other error: nothing left, the cause said */
	rv_leftovers_simulate_refusal(0, EXDEV);
	cr_assert_eq(rv_leftovers_create_dir(dir, path, sizeof(path), &err), -EXDEV);
	rv_leftovers_simulate_refusal(0, 0);
	cr_assert_str_eq(path, "");
	cr_assert_eq(err.code, EXDEV);
	cr_assert_eq(dir_entries(dir), 0, "the staging directory is removed");
	free_temp_dir(dir);
}

Test(leftovers, staging_names_are_the_owner_record)
{
	struct rv_owner self = self_owner(), back, unknown = { .pid = 12, .start_ticks = 34 };
	char name[NAME_MAX + 1];
	size_t len = rv_leftovers_staging_name(&self, "Ab12Cd", name, sizeof(name));
	char expected[NAME_MAX + 1];

	cr_assert_gt(len, 0);
	snprintf(expected, sizeof(expected), RV_STAGING_PREFIX "%d.%llu.%s.%llu.Ab12Cd",
		 (int)self.pid, self.start_ticks, self.boot_id, self.pid_ns);
	cr_assert_str_eq(name, expected);
	cr_assert(rv_leftovers_parse_staging_name(name, &back));
	cr_assert_eq(back.pid, self.pid);
	cr_assert_eq(back.start_ticks, self.start_ticks);
	cr_assert_str_eq(back.boot_id, self.boot_id);
	cr_assert_eq(back.pid_ns, self.pid_ns);
	/* an unknown boot id and namespace */
	rv_leftovers_staging_name(&unknown, "zzzzzz", name, sizeof(name));
	cr_assert_str_eq(name, RV_STAGING_PREFIX "12.34.-.0.zzzzzz");
	cr_assert(rv_leftovers_parse_staging_name(name, &back));
	cr_assert_str_eq(back.boot_id, "");
	cr_assert_eq(rv_leftovers_staging_name(&self, "Ab12Cd", name, 20), 0, "no room");
}

Test(leftovers, staging_name_lookalikes_are_refused)
{
	static const char *const bad[] = {
		RV_STAGING_PREFIX "12.34.-.0",
		RV_STAGING_PREFIX "12.34.-.0.",
		RV_STAGING_PREFIX "12.34.-.0.Ab12C",
		RV_STAGING_PREFIX "12.34.-.0.Ab12Cd7",
		RV_STAGING_PREFIX "12.34.-.0.Ab-2Cd",
		RV_STAGING_PREFIX "12.34.-.0-Ab12Cd",
		RV_STAGING_PREFIX "012.34.-.0.Ab12Cd",
		RV_STAGING_PREFIX "12.034.-.0.Ab12Cd",
		RV_STAGING_PREFIX "12.34.-.00.Ab12Cd",
		RV_STAGING_PREFIX "12 34.-.0.Ab12Cd",
		RV_STAGING_PREFIX "12.34 - 0.Ab12Cd",
		RV_STAGING_PREFIX "12.34.-.0.9.Ab12Cd",
		RV_STAGING_PREFIX "12.34.-.Ab12Cd",
		RV_STAGING_PREFIX "12.34..0.Ab12Cd",
		RV_STAGING_PREFIX "0.34.-.0.Ab12Cd",
		RV_STAGING_PREFIX "12.34.ABCDEF.0.Ab12Cd",
		RV_STAGING_PREFIX "12.34.-.0.Ab12Cd.",
		RV_STAGING_PREFIX ".12.34.-.0.Ab12Cd",
		RV_STAGING_PREFIX "Ab12Cd",
		RV_STAGING_PREFIX,
		"rearview-New.12.34.-.0.Ab12Cd",
		"rearview-new-12.34.-.0.Ab12Cd",
		".rearview-new.12.34.-.0.Ab12Cd",
		"rearview-Ab12Cd",
		"",
	};
	struct rv_owner owner;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert(!rv_leftovers_parse_staging_name(bad[i], &owner), "'%s' is refused",
			  bad[i]);
	cr_assert(rv_leftovers_parse_staging_name(RV_STAGING_PREFIX "12.34.-.0.Ab12Cd", &owner));
	cr_assert(
		rv_leftovers_parse_staging_name(RV_STAGING_PREFIX "12.34.0a-f.77.Ab12Cd", &owner));
	cr_assert_str_eq(owner.boot_id, "0a-f");
	cr_assert_eq(owner.pid_ns, 77);
}

/* DIR/(owner's staging name with chars) as a staging directory; with_record:
 * its record file in it too. */
static void make_staging(const char *dir, const struct rv_owner *owner, const char *chars,
			 bool with_record, char *out, size_t size)
{
	char name[NAME_MAX + 1], path[PATH_MAX + 16], record[128];

	cr_assert_gt(rv_leftovers_staging_name(owner, chars, name, sizeof(name)), 0);
	snprintf(out, size, "%s/%s", dir, name);
	cr_assert_eq(mkdir(out, 0700), 0, "%s: %s", out, strerror(errno));
	if (with_record) {
		size_t len = rv_owner_format(owner, record, sizeof(record));

		snprintf(path, sizeof(path), "%s/%s", out, RV_OWNER_FILE);
		write_file(path, record, len);
	}
}

Test(leftovers, sweep_removes_dead_owners_staging_directories_and_keeps_the_rest)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner(), alive = self_owner(), elsewhere = dead_owner();
	char empty[PATH_MAX], recorded[PATH_MAX], live[PATH_MAX], other_ns[PATH_MAX];
	char crowded[PATH_MAX], linked[PATH_MAX], plain[PATH_MAX], odd_record[PATH_MAX];
	char spelt[PATH_MAX], path[PATH_MAX + 16], target[PATH_MAX + 16], name[NAME_MAX + 1];
	struct removed r = { 0 };

	elsewhere.pid_ns++;
	make_staging(dir, &dead, "Empty1", false, empty, sizeof(empty));
	make_staging(dir, &dead, "Recor1", true, recorded, sizeof(recorded));
	make_staging(dir, &alive, "Alive1", false, live, sizeof(live));
	make_staging(dir, &elsewhere, "OtNs01", false, other_ns, sizeof(other_ns));
	/* something rearview never puts in one */
	make_staging(dir, &dead, "Crowd1", true, crowded, sizeof(crowded));
	snprintf(path, sizeof(path), "%s/perf.data", crowded);
	write_file(path, "PERFILE2", 8);
	/* a record file that is a link */
	make_staging(dir, &dead, "OddRe1", false, odd_record, sizeof(odd_record));
	snprintf(path, sizeof(path), "%s/%s", odd_record, RV_OWNER_FILE);
	snprintf(target, sizeof(target), "%s/perf.data", crowded);
	cr_assert_eq(symlink(target, path), 0);
	/* a link named like a dead owner's staging directory, to a directory */
	snprintf(target, sizeof(target), "%s/target", dir);
	cr_assert_eq(mkdir(target, 0700), 0);
	rv_leftovers_staging_name(&dead, "Link01", name, sizeof(name));
	snprintf(linked, sizeof(linked), "%s/%s", dir, name);
	cr_assert_eq(symlink(target, linked), 0);
	/* a regular file with such a name */
	rv_leftovers_staging_name(&dead, "Plain1", name, sizeof(name));
	snprintf(plain, sizeof(plain), "%s/%s", dir, name);
	write_file(plain, "", 0);
	/* the record spelt another way than rearview spells it */
	snprintf(spelt, sizeof(spelt), "%s/" RV_STAGING_PREFIX "0%d.%llu.%s.%llu.Spelt1", dir,
		 (int)dead.pid, dead.start_ticks, dead.boot_id, dead.pid_ns);
	cr_assert_eq(mkdir(spelt, 0700), 0);

	cr_assert_eq(rv_leftovers_sweep_captures(dir, note, &r), 2);
	cr_assert(!present(empty), "killed before its record: removed by its name");
	cr_assert(!present(recorded), "killed before its rename: removed");
	for (size_t i = 0; i < 2; i++) {
		cr_assert(!strcmp(r.paths[i], empty) || !strcmp(r.paths[i], recorded), "%s",
			  r.paths[i]);
		cr_assert_eq(r.pids[i], dead.pid);
	}
	cr_assert(present(live), "a live owner's staging directory is kept");
	cr_assert(present(other_ns), "an owner in another pid namespace is not judged");
	cr_assert(present(crowded), "one holding more than its record is not ours to remove");
	snprintf(path, sizeof(path), "%s/perf.data", crowded);
	cr_assert(present(path));
	cr_assert(present(odd_record), "one whose record file is a link is kept");
	cr_assert(present(linked), "a link is never followed or removed");
	cr_assert(present(target));
	cr_assert(present(plain), "a file is not a staging directory");
	cr_assert(present(spelt), "a name rearview would not make is never touched");
	free_temp_dir(dir);
}

Test(leftovers, other_users_staging_directories_are_never_touched)
{
	char *dir = new_temp_dir("rv-leftovers");
	struct rv_owner dead = dead_owner();
	char staging[PATH_MAX], record[PATH_MAX + 16];

	if (geteuid() != 0) {
		cr_assert(!under_ci(), "under CI=true the leftovers test must run as root");
		cr_skip_test("giving a file to another user needs root");
	}
	make_staging(dir, &dead, "Other1", true, staging, sizeof(staging));
	cr_assert_eq(chown(staging, 65534, 65534), 0);
	cr_assert_eq(rv_leftovers_sweep_captures(dir, NULL, NULL), 0);
	cr_assert(present(staging), "another user's staging directory is kept");
	/* ours, with a record file another user made */
	cr_assert_eq(chown(staging, 0, 0), 0);
	snprintf(record, sizeof(record), "%s/%s", staging, RV_OWNER_FILE);
	cr_assert_eq(chown(record, 65534, 65534), 0);
	cr_assert_eq(rv_leftovers_sweep_captures(dir, NULL, NULL), 0);
	cr_assert(present(staging));
	free_temp_dir(dir);
}
