/* test_sites.c: choosing the gate's sites as magic-trace users do: '?',
 * 'symbol:?' and 'line:?' through the numbered list on a pseudo-terminal (and
 * fzf when it is installed), '--filter ?,?', '.' for the stop indicator,
 * addr:, symbol: and FILE:LINE:COL, and --dry-run's gate thresholds. Each
 * site is proved by the uprobe --dry-run places (against the same site
 * named plainly) or by the snapshot a recording takes there. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "test_env.h"

/* ---- rearview on a pseudo-terminal ---- */

struct pty_run {
	pid_t pid;
	int master;
	char text[1 << 20]; /* everything it wrote (stdout and stderr), NUL-ended */
	size_t len;
	size_t mark; /* where the next wait_for starts looking */
	int exit_code;
};

/* PATH without the directories that hold fzf: the numbered list is what
 * these tests drive, wherever fzf is installed. */
static void path_without_fzf(char *out, size_t size)
{
	const char *path = getenv("PATH");
	char copy[4096], *save = NULL;
	size_t used = 0;

	snprintf(copy, sizeof(copy), "%s", path ? path : "/usr/bin:/bin");
	out[0] = '\0';
	for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char fzf[4200];

		snprintf(fzf, sizeof(fzf), "%s/fzf", dir);
		if (access(fzf, X_OK) == 0)
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ":" : "", dir);
		if (used >= size)
			break;
	}
}

/* Starts argv on a new pseudo-terminal (its standard input, output and
 * error) with PATH set to path (NULL: left as it is). */
static void pty_start_path(struct pty_run *p, char *const argv[], const char *path)
{
	struct winsize size = { .ws_row = 40, .ws_col = 200 };

	memset(p, 0, sizeof(*p));
	p->pid = forkpty(&p->master, NULL, NULL, &size);
	cr_assert_geq(p->pid, 0, "forkpty: %s", strerror(errno));
	if (p->pid == 0) {
		default_stop_signals();
		if (path)
			setenv("PATH", path, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	fcntl(p->master, F_SETFL, fcntl(p->master, F_GETFL) | O_NONBLOCK);
}

/* pty_start_path; with_fzf false hides fzf from it. */
static void pty_start(struct pty_run *p, char *const argv[], bool with_fzf)
{
	char path[4096];

	path_without_fzf(path, sizeof(path));
	pty_start_path(p, argv, with_fzf ? NULL : path);
}

/* Reads what is there, waiting up to timeout_ms; false at the end (EIO once
 * the terminal's last user is gone). */
static bool pty_read(struct pty_run *p, int timeout_ms)
{
	struct pollfd fd = { .fd = p->master, .events = POLLIN };
	ssize_t n;

	if (poll(&fd, 1, timeout_ms) <= 0)
		return true;
	n = read(p->master, p->text + p->len, sizeof(p->text) - 1 - p->len);
	if (n <= 0)
		return n < 0 && errno == EAGAIN;
	p->len += (size_t)n;
	p->text[p->len] = '\0';
	return true;
}

/* Waits up to timeout_s for needle after the last mark, and moves the mark
 * past it; returns where it starts. */
static const char *pty_wait_for(struct pty_run *p, const char *needle, int timeout_s)
{
	time_t end = time(NULL) + timeout_s;
	const char *hit;

	while (!(hit = strstr(p->text + p->mark, needle))) {
		cr_assert(time(NULL) < end && pty_read(p, 200),
			  "no '%s' on the terminal; it shows:\n%.4000s", needle,
			  p->text + (p->len > 4000 ? p->len - 4000 : 0));
	}
	p->mark = (size_t)(hit - p->text) + strlen(needle);
	return hit;
}

static void pty_type(struct pty_run *p, const char *text)
{
	cr_assert_eq(write(p->master, text, strlen(text)), (ssize_t)strlen(text));
}

/* Reads to the end and reaps it within timeout_s (killed after it). */
static void pty_finish(struct pty_run *p, int timeout_s)
{
	time_t end = time(NULL) + timeout_s;
	int status = 0;
	pid_t done = 0;

	while (time(NULL) < end && !(done = waitpid(p->pid, &status, WNOHANG)))
		pty_read(p, 100);
	if (!done) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	}
	while (pty_read(p, 50) && strlen(p->text) < sizeof(p->text) - 1 &&
	       poll(&(struct pollfd){ .fd = p->master, .events = POLLIN }, 1, 0) > 0)
		;
	close(p->master);
	cr_assert(done, "rearview did not end within %d s:\n%.4000s", timeout_s, p->text);
	p->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The number the list gives the line "N) label" (whole label), in the list
 * that ends at the question just waited for. */
static int number_of(const struct pty_run *p, const char *label)
{
	char needle[1024];
	const char *hit, *line;

	snprintf(needle, sizeof(needle), ") %s\r\n", label);
	hit = strstr(p->text, needle);
	cr_assert(hit, "'%s' is not in the list:\n%.6000s", label, p->text);
	for (line = hit; line > p->text && line[-1] != '\n'; line--)
		;
	return atoi(line);
}

/* The same for the first line whose label contains part. */
static int number_containing(const struct pty_run *p, const char *part)
{
	const char *hit = strstr(p->text, part), *line;

	cr_assert(hit, "no line with '%s' in the list:\n%.6000s", part, p->text);
	for (line = hit; line > p->text && line[-1] != '\n'; line--)
		;
	return atoi(line);
}

static void answer(struct pty_run *p, int number)
{
	char text[32];

	snprintf(text, sizeof(text), "%d\n", number);
	pty_type(p, text);
}

/* ---- the uprobes --dry-run places ---- */

/* The "uprobe = PATH+0xOFF" line of the event labelled "ROLE uprobe at ...". */
static void uprobe_of(const char *out, const char *role, char *line, size_t size)
{
	char label[64];
	const char *event, *uprobe;

	snprintf(label, sizeof(label), ": %s uprobe at ", role);
	event = strstr(out, label);
	cr_assert(event, "no %s uprobe in:\n%.4000s", role, out);
	uprobe = strstr(event, "uprobe = ");
	cr_assert(uprobe, "the %s event has no uprobe line", role);
	snprintf(line, size, "%.*s", (int)strcspn(uprobe, "\r\n"), uprobe);
}

/* `rearview run --dry-run --backend BACKEND OPTIONS -- TARGET ARGS`, no terminal. */
static void dry_run(const char *backend, const char *const *options, const char *target,
		    const char *const *args, struct proc_result *r)
{
	char *argv[32];
	size_t n = 0;

	argv[n++] = (char *)build_path("rearview");
	argv[n++] = "run";
	argv[n++] = "--dry-run";
	argv[n++] = "--backend";
	argv[n++] = (char *)backend;
	for (size_t i = 0; options[i]; i++)
		argv[n++] = (char *)options[i];
	argv[n++] = "--";
	argv[n++] = (char *)built_target(target);
	for (size_t i = 0; args && args[i]; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
}

static int line_of(const char *source, const char *text)
{
	char line[512], path[4096];
	FILE *f;
	int n = 0;

	project_root(path, sizeof(path));
	strncat(path, "/", sizeof(path) - strlen(path) - 1);
	strncat(path, source, sizeof(path) - strlen(path) - 1);
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, text)) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	cr_assert_fail("no '%s' in %s", text, source);
	return 0;
}

/* ---- '?' ---- */

Test(sites, trigger_question_mark_picks_a_function_from_the_numbered_list, .timeout = 120)
{
	static struct pty_run p;
	static struct proc_result plain;
	const char *const named[] = { "--trigger", "on_trigger", NULL };
	const char *const args[] = { "trigger", "3", NULL };
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--backend",
			 "sample",
			 "--trigger",
			 "?",
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "3",
			 NULL };
	char picked[512], want[512];

	pty_start(&p, argv, false);
	pty_wait_for(&p, "--trigger at which function? Enter its number (1-", 30);
	cr_expect(strstr(p.text, ") main\r\n") && strstr(p.text, ") request_begin\r\n"),
		  "the list lacks the program's functions:\n%.3000s", p.text);
	cr_expect_null(strstr(p.text, ") pthread_create"), "imports are not the program's");
	answer(&p, number_of(&p, "on_trigger"));
	pty_finish(&p, 60);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);
	cr_expect(strstr(p.text, "rearview: --trigger: on_trigger (addr:0x"), "%s", p.text);
	uprobe_of(p.text, "TRIGGER", picked, sizeof(picked));

	dry_run("sample", named, "gated", args, &plain);
	uprobe_of(plain.out, "TRIGGER", want, sizeof(want));
	cr_expect_str_eq(picked, want);
	cr_expect(strstr(p.text, "TRIGGER at on_trigger: fires on the first hit"), "%s", p.text);
}

Test(sites, line_question_mark_picks_a_source_line, .timeout = 120)
{
	static struct pty_run p;
	static struct proc_result plain;
	const char *const args[] = { "trigger", "3", NULL };
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--backend",
			 "uprobe",
			 "--trigger",
			 "line:?",
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "3",
			 NULL };
	int line = line_of("tests/targets/gated.c", "void on_trigger(void)") + 2;
	char label[64], spec[64], picked[512], want[512];

	pty_start(&p, argv, false);
	pty_wait_for(&p, "--trigger at which source line? Enter its number", 30);
	snprintf(label, sizeof(label), "gated.c:%d  (on_trigger)\r\n", line);
	answer(&p, number_containing(&p, label));
	pty_finish(&p, 60);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);
	uprobe_of(p.text, "TRIGGER", picked, sizeof(picked));

	snprintf(spec, sizeof(spec), "gated.c:%d", line);
	dry_run("uprobe", (const char *const[]){ "--trigger", spec, NULL }, "gated", args, &plain);
	uprobe_of(plain.out, "TRIGGER", want, sizeof(want));
	cr_expect_str_eq(picked, want);
}

/* --filter ?,? asks twice, START then STOP; the gate section shows both with
 * --min-duration's threshold. */
Test(sites, filter_asks_for_start_and_stop, .timeout = 120)
{
	static struct pty_run p;
	static struct proc_result plain;
	const char *const named[] = { "--filter", "request_begin,request_end", "--min-duration",
				      "2ms", NULL };
	const char *const args[] = { "windows", "3", NULL };
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--backend",
			 "sample",
			 "--filter",
			 "?,symbol:?",
			 "--min-duration",
			 "2ms",
			 "--",
			 (char *)built_target("gated"),
			 "windows",
			 "3",
			 NULL };
	char picked[512], want[512];

	pty_start(&p, argv, false);
	pty_wait_for(&p, "--filter START at which function? Enter its number", 30);
	answer(&p, number_of(&p, "request_begin"));
	pty_wait_for(&p, "--filter STOP at which function? Enter its number", 30);
	answer(&p, number_of(&p, "request_end"));
	pty_finish(&p, 60);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);

	dry_run("sample", named, "gated", args, &plain);
	uprobe_of(p.text, "START", picked, sizeof(picked));
	uprobe_of(plain.out, "START", want, sizeof(want));
	cr_expect_str_eq(picked, want);
	uprobe_of(p.text, "STOP", picked, sizeof(picked));
	uprobe_of(plain.out, "STOP", want, sizeof(want));
	cr_expect_str_eq(picked, want);
	cr_expect(strstr(p.text, "START at request_begin: fires"), "%s", p.text);
	cr_expect(strstr(p.text, "STOP at request_end: fires"), "%s", p.text);
	cr_expect(strstr(p.text, "min_duration = 2000000 ns (2ms)"), "%s", p.text);
	cr_expect(strstr(p.text, "windows of 2ms or less are dropped"), "%s", p.text);
}

/* A recording, not a dry run: the program waits, stopped, while the user
 * picks; the snapshot is taken at the function picked. */
Test(sites, picked_trigger_takes_the_snapshot_there, .timeout = 180)
{
	static struct pty_run p;
	char dir[64], out[128], err[256];
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "sample",
			 "--trigger",
			 "?",
			 "-o",
			 out,
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "4",
			 NULL };
	struct fxt_trace *t = NULL;

	require_root("the gate");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	pty_start(&p, argv, false);
	pty_wait_for(&p, "--trigger at which function? Enter its number", 30);
	answer(&p, number_of(&p, "on_trigger"));
	pty_finish(&p, 120);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);
	cr_expect(strstr(p.text, "windows=0 slow=0 triggers=4"), "%s", p.text);
	cr_expect(strstr(p.text, "--trigger on_trigger: "), "the report names the pick:\n%s",
		  p.text);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at on_trigger]"), 1);
	cr_expect_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "before_trigger"), 0);
	cr_expect_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "after_first_trigger"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* fzf, where it is installed, on the terminal: its choice is the trigger.
 * The choice is made by fzf's own options (FZF_DEFAULT_OPTS: the exact
 * name as its query, and --select-1 to take the only match once the list
 * is read): typed keys race fzf's matcher (an Enter that comes before the
 * matcher has filtered takes the first line of the list). */
Test(sites, fzf_picks_when_installed, .timeout = 120)
{
	static struct pty_run p;
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--backend",
			 "sample",
			 "--trigger",
			 "?",
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "3",
			 NULL };

	if (system("command -v fzf >/dev/null 2>&1") != 0) {
		/* make deps installs it */
		cr_assert(!under_ci(),
			  "under CI=true fzf must be installed (make deps installs it)");
		cr_skip_test("fzf is not installed: the numbered list is what '?' shows here "
			     "(the other sites tests drive it; make deps installs fzf)");
	}
	cr_assert_eq(setenv("FZF_DEFAULT_OPTS", "--query=^on_trigger$ --select-1", 1), 0);
	pty_start(&p, argv, true);
	pty_finish(&p, 60);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);
	cr_expect(strstr(p.text, "TRIGGER uprobe at on_trigger"), "%s", p.text);
}

/* The list fzf reads has no name while fzf runs, so that a kill then leaves
 * nothing behind; and fzf's answer chooses. A stand-in fzf first on PATH
 * keeps what it was given (its standard input's name in /proc, its
 * arguments, the list) and answers with the list's on_trigger line. With
 * refuse_tmpfile, rearview runs under no_tmpfile (tests/targets), as on a
 * temporary directory whose filesystem has no unnamed files: the list is
 * then a file unlinked as soon as it is made, in TMPDIR. */
static void stand_in_fzf_chooses(bool refuse_tmpfile)
{
	static struct pty_run p;
	char dir[64], script[128], path[4200], file[160], text[4096], tmp[96];
	const char *old_path = getenv("PATH");
	char *argv[] = { (char *)built_target("no_tmpfile"),
			 (char *)build_path("rearview"),
			 "run",
			 "--dry-run",
			 "--backend",
			 "sample",
			 "--trigger",
			 "?",
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "3",
			 NULL };
	FILE *f;
	size_t n;
	DIR *d;
	struct dirent *entry;

	make_test_dir(dir, sizeof(dir));
	snprintf(script, sizeof(script), "%s/fzf", dir);
	f = fopen(script, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"#!/bin/sh\n"
		"readlink /proc/self/fd/0 > '%s/stdin'\n"
		"echo \"$@\" > '%s/args'\n"
		"cat > '%s/list'\n"
		"grep '	'on_trigger'$' '%s/list'\n",
		dir, dir, dir, dir);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(script, 0700), 0);
	snprintf(path, sizeof(path), "%s:%s", dir, old_path ? old_path : "/usr/bin:/bin");
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(setenv("TMPDIR", tmp, 1), 0);

	pty_start_path(&p, refuse_tmpfile ? argv : argv + 1, path);
	pty_finish(&p, 60);
	cr_assert_eq(p.exit_code, 0, "%s", p.text);
	cr_expect(strstr(p.text, "TRIGGER uprobe at on_trigger"), "%s", p.text);

	snprintf(file, sizeof(file), "%s/stdin", dir);
	f = fopen(file, "r");
	cr_assert_not_null(f, "the stand-in fzf did not run:\n%s", p.text);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	cr_expect(strstr(text, " (deleted)"),
		  "fzf read a file with a name, which a kill would leave: %s", text);
	/* O_TMPFILE's files are named '#INODE' in /proc; the fallback's keep
	 * the name mkstemp gave them */
	if (refuse_tmpfile)
		cr_expect(strstr(text, "/rearview-pick-"),
			  "with O_TMPFILE refused, the list is not mkstemp's file: %s", text);
	else
		cr_expect(!strstr(text, "/rearview-pick-"), "the list is not an O_TMPFILE file: %s",
			  text);
	snprintf(file, sizeof(file), "%s/list", dir);
	f = fopen(file, "r");
	cr_assert_not_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	cr_expect(strstr(text, "\tmain\n") && strstr(text, "\ton_trigger\n"),
		  "the list lacks the program's functions:\n%s", text);
	d = opendir(tmp);
	cr_assert_not_null(d);
	while ((entry = readdir(d)))
		cr_expect(strncmp(entry->d_name, "rearview-pick-", 14),
			  "the list was left in TMPDIR: %s/%s", tmp, entry->d_name);
	closedir(d);
	cleanup_dir(dir);
}

Test(sites, fzf_reads_a_list_without_a_name, .timeout = 120)
{
	stand_in_fzf_chooses(false);
}

Test(sites, fzf_reads_a_list_without_a_name_where_tmpfile_is_refused, .timeout = 120)
{
	stand_in_fzf_chooses(true);
}

Test(sites, question_mark_without_a_terminal_is_refused, .timeout = 60)
{
	static struct proc_result r;
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "sample",
			 "--trigger",
			 "line:?",
			 "--",
			 (char *)built_target("gated"),
			 "trigger",
			 "1",
			 NULL };
	char *filter[] = {
		(char *)build_path("rearview"), "attach", "-p", "1", "--filter", "main,?", NULL
	};

	run_process(argv, 30, &r);
	cr_expect_eq(r.exit_code, 2, "%s", r.err); /* a usage error */
	cr_expect(strstr(r.err, "--trigger '?' chooses the site from a list, which needs a "
				"terminal"),
		  "%s", r.err);
	cr_expect(strstr(r.err, "name the site"), "%s", r.err);
	cr_expect_null(strstr(r.out, "triggers="), "the program ran:\n%s", r.out);

	run_process(filter, 30, &r);
	cr_expect_eq(r.exit_code, 2, "%s", r.err);
	cr_expect(strstr(r.err, "--filter STOP '?'"), "%s", r.err);
}

/* ---- '.' ---- */

Test(sites, dot_triggers_at_the_stop_indicator, .timeout = 180)
{
	static struct proc_result r;
	const char *const options[] = { "--backend", "sample", "--trigger", ".", NULL };
	const char *const args[] = { "4", NULL };
	char dir[64];
	struct fxt_trace *t;

	require_root("the gate");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/stop_magic", args, 120, &r);
	cr_expect(strstr(r.out, "stops=4 "), "%s", r.out);
	cr_expect(strstr(r.err, "--trigger magic_trace_stop_indicator: 1 hit"), "%s", r.err);
	cr_expect_eq(
		fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at magic_trace_stop_indicator]"),
		1);
	cr_expect_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "before_stop"), 0);
	cr_expect_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "after_stop"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(sites, dot_with_the_function_tracer, .timeout = 180)
{
	static struct proc_result r;
	const char *const options[] = { "--backend", "uprobe", "--trigger", ".", NULL };
	const char *const args[] = { "3", NULL };
	char dir[64];
	struct fxt_trace *t;

	require_root("the gate and the function tracer");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/stop_own", args, 120, &r);
	cr_expect(strstr(r.err, "--trigger rearview_stop_indicator: 1 hit"), "%s", r.err);
	/* every call before the first stop, none after it */
	cr_expect_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "before_stop"), 1);
	cr_expect_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "first_call"), 1);
	cr_expect_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "after_stop"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(sites, dot_without_a_stop_indicator_names_both, .timeout = 60)
{
	static struct proc_result r;
	char *argv[] = {
		(char *)build_path("rearview"), "run",	   "--dry-run", "--trigger", ".", "--",
		(char *)built_target("gated"),	"trigger", "1",		NULL
	};

	run_process(argv, 30, &r);
	cr_expect_eq(r.exit_code, 1);
	cr_expect(strstr(r.err, "magic_trace_stop_indicator") &&
			  strstr(r.err, "rearview_stop_indicator"),
		  "%s", r.err);
}

/* ---- addr:, symbol:, FILE:LINE:COL ---- */

Test(sites, prefixes_place_the_same_uprobe, .timeout = 120)
{
	static struct proc_result plain, prefixed;
	const char *const args[] = { "trigger", "1", NULL };
	char addr[64], want[512], got[512];

	dry_run("uprobe", (const char *const[]){ "--trigger", "on_trigger", NULL }, "gated", args,
		&plain);
	uprobe_of(plain.out, "TRIGGER", want, sizeof(want));
	dry_run("uprobe", (const char *const[]){ "--trigger", "symbol:on_trigger", NULL }, "gated",
		args, &prefixed);
	uprobe_of(prefixed.out, "TRIGGER", got, sizeof(got));
	cr_expect_str_eq(got, want);
	snprintf(addr, sizeof(addr), "addr:0x%llx",
		 (unsigned long long)nm_symbol(built_target("gated"), "on_trigger", NULL));
	dry_run("uprobe", (const char *const[]){ "--trigger", addr, NULL }, "gated", args,
		&prefixed);
	uprobe_of(prefixed.out, "TRIGGER", got, sizeof(got));
	cr_expect_str_eq(got, want);
	cr_expect(strstr(prefixed.out, "TRIGGER uprobe at on_trigger"), "%s", prefixed.out);
}

/* The second call of a line, by its column: each round of stop_own calls
 * it once, so --multi-snapshot takes a snapshot per round. */
Test(sites, file_line_column_triggers_at_that_call, .timeout = 180)
{
	static struct proc_result r, first, second;
	const char *const args[] = { "4", NULL };
	int line = line_of("tests/targets/stop_indicator.h", "/* COLUMNS */");
	char spec1[64], spec2[64], dir[64], where1[512], where2[512];
	const char *src = "\t\tfirst_call(); second_call();";
	struct fxt_trace *t;

	/* the line as the target has it (two tabs, then the calls) */
	cr_assert_eq(line_of("tests/targets/stop_indicator.h", src), line);
	snprintf(spec1, sizeof(spec1), "stop_indicator.h:%d:%d", line,
		 (int)(strstr(src, "first_call") - src) + 1);
	snprintf(spec2, sizeof(spec2), "stop_indicator.h:%d:%d", line,
		 (int)(strstr(src, "second_call") - src) + 1);
	dry_run("sample", (const char *const[]){ "--trigger", spec1, NULL }, "stop_own", args,
		&first);
	dry_run("sample", (const char *const[]){ "--trigger", spec2, NULL }, "stop_own", args,
		&second);
	uprobe_of(first.out, "TRIGGER", where1, sizeof(where1));
	uprobe_of(second.out, "TRIGGER", where2, sizeof(where2));
	cr_expect_str_neq(where1, where2, "both columns gave %s", where1);

	require_root("the gate");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--backend", "sample", "--multi-snapshot",
						"--trigger", spec2, NULL },
			 "tests/targets/stop_own", args, 120, &r);
	cr_expect(strstr(r.out, "stops=4 first=4 second=4"), "%s", r.out);
	cr_expect(strstr(r.err, ": 4 hits, 4 snapshots"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(sites, a_column_without_code_is_refused, .timeout = 60)
{
	static struct proc_result r;
	int line = line_of("tests/targets/stop_indicator.h", "/* COLUMNS */");
	char spec[64];
	char *argv[] = {
		(char *)build_path("rearview"),	  "run", "--dry-run", "--trigger", spec, "--",
		(char *)built_target("stop_own"), "1",	 NULL
	};

	snprintf(spec, sizeof(spec), "stop_indicator.h:%d:99", line);
	run_process(argv, 30, &r);
	cr_expect_eq(r.exit_code, 1);
	cr_expect(strstr(r.err, "has no code at column 99"), "%s", r.err);
	cr_expect(strstr(r.err, "its columns with code are 3, 17"), "%s", r.err);
}
