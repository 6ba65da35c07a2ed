/* test_summary.c: the summary says what the recording left out, and names
 * functions so that a line holds them:
 * - threads4 recorded without --multi-thread: its 4 worker threads are said
 *   not recorded, for sampling and the function tracer; with it, nothing;
 * - libm's sin, an IFUNC (checked: the messages say so only for one): named
 *   with what it resolves to in the running ifunc_sin, by --functions (its
 *   error, and the summary's line of functions not probed) and by --trigger,
 *   whose suggested site is then accepted;
 * - tmpl_cpp's method of a class template: folded in the summary's table,
 *   whole in the trace;
 * - syscalls' kernel frames, with the kernel in scope: marked [k].
 *
 * Not here: the shortening rules one by one (tests/unit/test_short_name.c).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "test_files.h"

static struct fxt_trace *read_trace(const char *path)
{
	struct fxt_trace *trace = NULL;
	char err[512];

	cr_assert_eq(fxt_read_file(path, &trace, err, sizeof(err)), 0, "%s: %s", path, err);
	return trace;
}

/* `rearview run [--backend uprobe] [--multi-thread] -o DIR/t.fxt -- threads4 40`:
 * its stderr in r. */
static void run_threads4(const char *dir, bool uprobe, bool multi_thread, struct proc_result *r)
{
	char out[128];
	char *argv[12];
	size_t a = 0;

	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	if (uprobe) {
		argv[a++] = "--backend";
		argv[a++] = "uprobe";
	}
	if (multi_thread)
		argv[a++] = "--multi-thread";
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--";
	argv[a++] = (char *)build_path("tests/targets/threads4");
	argv[a++] = "40";
	argv[a] = NULL;
	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
}

Test(summary, threads_left_out_without_multi_thread, .timeout = 240)
{
	static struct proc_result r;
	char dir[64];

	require_root("summary");
	make_test_dir(dir, sizeof(dir));
	for (int uprobe = 0; uprobe <= 1; uprobe++) {
		run_threads4(dir, uprobe, false, &r);
		cr_assert(strstr(r.err, "rearview: 4 other threads not recorded: --multi-thread"),
			  "%s: the 4 workers are not said left out:\n%s",
			  uprobe ? "uprobe" : "sampling", r.err);
		run_threads4(dir, uprobe, true, &r);
		cr_assert_null(strstr(r.err, "not recorded"), "%s, --multi-thread:\n%s",
			       uprobe ? "uprobe" : "sampling", r.err);
	}
	cleanup_dir(dir);
}

/* ifunc_sin, running and past its first call of sin. */
static pid_t start_ifunc_sin(int *out_fd, int *err_fd)
{
	char *argv[] = { (char *)build_path("tests/targets/ifunc_sin"), NULL };
	pid_t pid = start_process(argv, out_fd, err_fd);

	cr_assert(wait_for_text(*out_fd, "ready", 10), "ifunc_sin did not start");
	return pid;
}

/* `rearview attach -p PID OPTIONS... -o out`, stopped with SIGINT once it
 * records (when it gets there); its result in r. */
static void attach_briefly(pid_t target, char *const *options, size_t nr, const char *out,
			   struct proc_result *r)
{
	char pidtext[32];
	char *argv[16];
	size_t a = 0;
	int out_fd, err_fd;
	pid_t rearview;

	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "attach";
	argv[a++] = "-p";
	argv[a++] = pidtext;
	for (size_t i = 0; i < nr && a < 13; i++)
		argv[a++] = options[i];
	argv[a++] = "-o";
	argv[a++] = (char *)out;
	argv[a] = NULL;
	rearview = start_process(argv, &out_fd, &err_fd);
	if (wait_for_output(rearview, err_fd, "press Ctrl-C", 30) == 1) {
		cr_assert(wait_for_cpu(target, 100, 10), "ifunc_sin did not run");
		kill(rearview, SIGINT);
	}
	finish_process(rearview, out_fd, err_fd, 60, r);
}

Test(summary, an_ifunc_is_named_with_what_it_resolves_to, .timeout = 180)
{
	static struct proc_result r;
	char dir[64], out[128], site[128];
	char *only_sin[] = { "--backend", "uprobe", "--functions", "libm:sin" };
	char *sin_and_crunch[] = { "--backend", "uprobe",      "--functions",
				   "libm:sin",	"--functions", "crunch" };
	char *trigger[] = { "--trigger", "libm:sin" };
	char *resolved[] = { "--trigger", site };
	int out_fd, err_fd;
	pid_t target;
	const char *at, *end;

	require_root("summary");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	target = start_ifunc_sin(&out_fd, &err_fd);

	/* only the IFUNC: an error that names what it resolves to */
	attach_briefly(target, only_sin, 4, out, &r);
	cr_assert_neq(r.exit_code, 0, "probing only an IFUNC succeeded:\n%s", r.err);
	cr_assert(strstr(r.err, "(sin: an IFUNC, resolved by its library when it loads; here "
				"__sin_"),
		  "sin is not named as an IFUNC with what it resolves to:\n%s", r.err);

	/* with a function that can be probed: the summary's line of those not */
	attach_briefly(target, sin_and_crunch, 6, out, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.err, "rearview: 1 matching function not probed:\n  sin (here __sin_"),
		  "no line of the functions not probed:\n%s", r.err);
	cr_assert(strstr(r.err, "): an IFUNC, resolved by its library when it loads\n"), "%s",
		  r.err);

	/* --trigger: the site it resolves to, which is then accepted */
	attach_briefly(target, trigger, 2, out, &r);
	cr_assert_neq(r.exit_code, 0, "a trigger on an IFUNC was accepted:\n%s", r.err);
	at = strstr(r.err, "is an IFUNC; here it resolves to __sin_");
	cr_assert_not_null(at, "%s", r.err);
	at = strstr(at, "(give '");
	cr_assert_not_null(at, "no site suggested:\n%s", r.err);
	at += strlen("(give '");
	end = strchr(at, '\'');
	cr_assert(end && end - at < (long)sizeof(site) && !strncmp(at, "libm:__sin_", 11), "%s",
		  r.err);
	snprintf(site, sizeof(site), "%.*s", (int)(end - at), at);
	attach_briefly(target, resolved, 2, out, &r);
	cr_assert_eq(r.exit_code, 0, "the suggested --trigger %s was refused:\n%s", site, r.err);

	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(out_fd);
	close(err_fd);
	cleanup_dir(dir);
}

Test(summary, template_names_are_folded_in_the_summary_only, .timeout = 120)
{
	static struct proc_result r;
	char dir[64], out[128];
	struct fxt_trace *t;

	require_root("summary");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/tmpl_cpp"),
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.err, "  Accumulator<…>::add(std::vector<…> const&)\n"),
		  "the template's method is not folded in the summary:\n%s", r.err);
	t = read_trace(out);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY,
				     "Accumulator<std::vector<std::pair<int, long>, "
				     "std::allocator<std::pair<int, long> > > >::add(std::vector<"
				     "std::pair<int, long>, std::allocator<std::pair<int, long> > "
				     "> const&)"),
		     0, "the trace does not keep the whole name");
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(summary, kernel_frames_are_marked, .timeout = 120)
{
	static struct proc_result r;
	char dir[64], out[128];
	const char *top;

	require_root("summary");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--trace-include-kernel",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/syscalls"),
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	top = strstr(r.err, "top functions by self time, CPU time only:\n");
	cr_assert_not_null(top, "%s", r.err);
	cr_assert(strstr(top, " [k]\n"), "no kernel function marked:\n%s", r.err);
	cr_assert_null(strstr(top, "read_zeros [k]"), "a user function marked:\n%s", r.err);
	cleanup_dir(dir);
}
