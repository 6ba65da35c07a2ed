/* test_errors.c: each mistake gives one clear line, a non-zero exit status and
 * no output file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"

/* PATH's name in a fresh scratch directory of its own (world-writable,
 * for the tests that run rearview as nobody), so that no file left in /tmp
 * by anything else can make a check of what was left behind fail. */
static char *scratch(const char *name)
{
	char *dir = new_temp_dir("rv-errors"), *path;

	cr_assert_eq(chmod(dir, 01777), 0);
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	free(dir);
	return path;
}

/* Removes scratch()'s directory (empty: nothing may be left in it). */
static void free_scratch(char *path)
{
	char *slash = strrchr(path, '/');

	*slash = 0;
	cr_assert_eq(rmdir(path), 0, "%s is not empty", path);
	free(path);
}

static void expect_error(char *const argv[], int code, const char *says, const char *output)
{
	struct proc_result r;

	run_process(argv, 30, &r);
	cr_assert_eq(r.exit_code, code, "exit %d, wanted %d: %s", r.exit_code, code, r.err);
	cr_assert_eq(count_lines(r.err), 1, "one line, got: %s", r.err);
	cr_assert(strstr(r.err, says), "'%s' does not say '%s'", r.err, says);
	if (output)
		cr_assert(!file_exists(output), "%s was left behind", output);
}

Test(errors, command_not_found)
{
	char *out = scratch("rv-nf.fxt");
	char *argv[] = { (char *)build_path("rearview"), "run", "-o", out, "--",
			 "no-such-command-anywhere",	 NULL };
	expect_error(argv, 1, "command not found", out);
	free_scratch(out);
}

Test(errors, pid_that_does_not_exist)
{
	char *out = scratch("rv-nopid.fxt");
	char *argv[] = {
		(char *)build_path("rearview"), "attach", "-p", "999999999", "-o", out, NULL
	};
	/* 999999999 is above pid_max on any Linux machine. */
	expect_error(argv, 1, "no process with PID 999999999", out);
	free_scratch(out);
}

Test(errors, bad_option_values)
{
	char *out = scratch("rv-lbr.fxt");
	char *a1[] = {
		(char *)build_path("rearview"), "run", "--snapshot-size", "3x", "true", NULL
	};
	char *a2[] = {
		(char *)build_path("rearview"), "run", "--timer-resolution", "fast", "true", NULL
	};
	char *a3[] = { (char *)build_path("rearview"),
		       "run",
		       "--callgraph-mode",
		       "lbr",
		       "-o",
		       out,
		       "true",
		       NULL };

	expect_error(a1, 2, "invalid size '3x'", NULL);
	expect_error(a2, 2, "invalid --timer-resolution 'fast'", NULL);
	/* This machine has no LBR (an AMD VM); the message says so. */
	expect_error(a3, 1, "lbr", out);
	free_scratch(out);
}

Test(errors, unwritable_output)
{
	char *out = scratch("t.txt");
	char *a1[] = { (char *)build_path("rearview"),
		       "run",
		       "-o",
		       "/no/such/dir/t.fxt",
		       "--",
		       "true",
		       NULL };
	char *a2[] = { (char *)build_path("rearview"), "run", "-o", out, "--", "true", NULL };

	expect_error(a1, 1, "/no/such/dir/t.fxt", "/no/such/dir/t.fxt");
	expect_error(a2, 1, ".fxt", out);
	free_scratch(out);
}

Test(errors, not_root)
{
	char *out = scratch("rv-user.fxt");
	char *a1[] = { "/usr/bin/setpriv",
		       "--reuid=65534",
		       "--regid=65534",
		       "--clear-groups",
		       (char *)build_path("rearview"),
		       "run",
		       "-o",
		       out,
		       "--",
		       "/bin/true",
		       NULL };
	char *a2[] = { "/usr/bin/setpriv",
		       "--reuid=65534",
		       "--regid=65534",
		       "--clear-groups",
		       (char *)build_path("rearview"),
		       "run",
		       "--trace-include-kernel",
		       "-o",
		       out,
		       "--",
		       "/bin/true",
		       NULL };

	cr_assert_eq(geteuid(), 0, "the tests run as root");
	expect_error(a1, 1, "root", out);
	expect_error(a2, 1, "--trace-include-kernel needs root", out);
	free_scratch(out);
}

Test(errors, help_and_version_tell_the_truth)
{
	struct proc_result r;
	char *a1[] = { (char *)build_path("rearview"), "--help", NULL };
	char *a2[] = { (char *)build_path("rearview"), "run", "--help", NULL };
	char *a3[] = { (char *)build_path("rearview"), "-version", NULL };

	run_process(a1, 10, &r);
	cr_assert_eq(r.exit_code, 0);
	cr_assert(strstr(r.out, "run [OPTIONS]") && strstr(r.out, "attach"));
	run_process(a2, 10, &r);
	cr_assert_eq(r.exit_code, 0);
	/* Every option the parser accepts is in the help. */
	const char *options[] = { "--output",	      "--backend",
				  "--sampling",	      "--timer-resolution",
				  "--callgraph-mode", "--trace-include-kernel",
				  "--multi-thread",   "--full-execution",
				  "--snapshot-size",  "--working-directory",
				  "--verbose",	      "--help" };
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		cr_assert(strstr(r.out, options[i]), "run --help lacks %s", options[i]);
	run_process(a3, 10, &r);
	cr_assert_eq(r.exit_code, 0);
	cr_assert(!strncmp(r.out, "rearview ", 9));
}

/* A name a stripped program does not have: the error says it is stripped
 * and what to do instead of pointing at nm, which finds no symbols there. */
Test(errors, unknown_function_in_a_stripped_program)
{
	char *out = scratch("rv-stripped.fxt");
	char *trigger[] = { (char *)build_path("rearview"),
			    "run",
			    "--trigger",
			    "leaf",
			    "-o",
			    out,
			    "--",
			    (char *)build_path("tests/targets/workload.stripped"),
			    NULL };
	char *functions[] = { (char *)build_path("rearview"),
			      "run",
			      "--backend",
			      "uprobe",
			      "--functions",
			      "leaf",
			      "-o",
			      out,
			      "--",
			      (char *)build_path("tests/targets/workload.stripped"),
			      NULL };
	struct proc_result r;

	require_root("--trigger on a stripped program");
	expect_error(trigger, 1, "workload.stripped': it is stripped", out);
	run_process(trigger, 30, &r);
	cr_assert(strstr(r.err, "-dbgsym") && strstr(r.err, "0xADDR") && strstr(r.err, "FILE:LINE"),
		  "%s", r.err);
	cr_assert_null(strstr(r.err, "'nm"), "%s", r.err);
	expect_error(functions, 1, "and it is stripped", out);
	run_process(functions, 30, &r);
	cr_assert(strstr(r.err, "--sampling"), "%s", r.err);
	free_scratch(out);
}
