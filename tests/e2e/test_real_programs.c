/* test_real_programs.c: rearview on programs nobody wrote for it (Debian's
 * own sqlite3, python3, gzip, coreutils, and a shell script that runs
 * children) changes nothing the program does: traced by each backend this
 * machine has, its standard output, its exit status and its own error
 * messages are those of the bare run, and a trace is written.
 *
 * The uprobe backend probes what each program has to probe: every function
 * of python3's executable; the library functions of the others, whose
 * executables are stripped (a shell script's children are not followed, so
 * only the shell is probed).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define TIMEOUT_S 120

struct real_program {
	const char *what;
	const char *argv[12];	      /* argv[0] an absolute path */
	const char *uprobe_functions; /* --functions for the uprobe backend */
};

/* Files the programs read, written into dir. */
static void write_inputs(const char *dir)
{
	char path[256];
	FILE *f;
	int status;
	char *out;

	snprintf(path, sizeof(path), "%s/numbers.txt", dir);
	f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "%d\n", (i * 7919) % 20011);
	fclose(f);
	out = run_command(&status, NULL, "gzip -9 -c %s/numbers.txt > %s/numbers.gz", dir, dir);
	free(out);
	cr_assert_eq(status, 0, "gzip could not make the test's input");

	snprintf(path, sizeof(path), "%s/script.py", dir);
	f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	fputs("import json, sys\n"
	      "d = {str(i): [i, i * i] for i in range(3000)}\n"
	      "try:\n"
	      "    json.loads('{bad')\n"
	      "except ValueError as e:\n"
	      "    print('caught', type(e).__name__)\n"
	      "print(len(json.dumps(d)))\n"
	      "sys.exit(3)\n",
	      f);
	fclose(f);

	snprintf(path, sizeof(path), "%s/children.sh", dir);
	f = fopen(path, "w");
	cr_assert(f, "cannot write %s", path);
	fprintf(f,
		"for word in one two three; do\n"
		"    printf '%%s\\n' \"$word\" | gzip -c | gzip -dc\n"
		"done\n"
		"sort -n -r %s/numbers.txt | head -3\n"
		"ls %s/nothing-here 2>&1 | wc -l\n"
		"exit 5\n",
		dir, dir);
	fclose(f);
}

/* Fills p's argv with dir's inputs. */
static size_t programs(const char *dir, struct real_program *p, char paths[][256])
{
	size_t n = 0;

	snprintf(paths[0], 256, "%s/script.py", dir);
	snprintf(paths[1], 256, "%s/numbers.gz", dir);
	snprintf(paths[2], 256, "%s/numbers.txt", dir);
	snprintf(paths[3], 256, "%s/children.sh", dir);

	p[n++] = (struct real_program){
		"sqlite3 with a failing statement",
		{ "/usr/bin/sqlite3", ":memory:",
		  "create table t(a); insert into t values (1), (2), (40); "
		  "select sum(a) from t; select a from missing;",
		  NULL },
		"libsqlite3:sqlite3_*",
	};
	p[n++] = (struct real_program){
		"python3 catching an exception",
		{ "/usr/bin/python3", paths[0], NULL },
		NULL, /* every function of the executable */
	};
	p[n++] = (struct real_program){
		"gzip decompressing",
		{ "/usr/bin/gzip", "-dc", paths[1], NULL },
		"libc:read,libc:write,libc:malloc",
	};
	p[n++] = (struct real_program){
		"sort (coreutils)",
		{ "/usr/bin/sort", "-n", paths[2], NULL },
		"libc:strcoll,libc:malloc,libc:free",
	};
	p[n++] = (struct real_program){
		"a shell script running children",
		{ "/bin/sh", paths[3], NULL },
		"libc:malloc,libc:free",
	};
	return n;
}

/* Runs p bare and under `rearview run OPTIONS`, and compares. */
static void same_traced_and_bare(const char *dir, const struct real_program *p,
				 const char *const *options)
{
	static struct proc_result bare, traced;
	char out[256], *argv[32];
	struct fxt_trace *t;
	char why[256];
	size_t a = 0;

	for (size_t i = 0; p->argv[i]; i++)
		argv[a++] = (char *)p->argv[i];
	argv[a] = NULL;
	run_process(argv, TIMEOUT_S, &bare);
	cr_assert(!bare.timed_out, "%s: the bare run timed out", p->what);

	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	remove(out);
	a = 0;
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	for (size_t i = 0; options[i]; i++)
		argv[a++] = (char *)options[i];
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--";
	for (size_t i = 0; p->argv[i]; i++)
		argv[a++] = (char *)p->argv[i];
	argv[a] = NULL;
	run_process(argv, TIMEOUT_S, &traced);

	cr_assert(!traced.timed_out, "%s (%s): rearview timed out: %s", p->what, options[0],
		  traced.err);
	cr_assert_eq(traced.exit_code, bare.exit_code,
		     "%s (%s): exit status %d traced, %d bare; rearview said: %s", p->what,
		     options[0], traced.exit_code, bare.exit_code, traced.err);
	cr_assert_str_eq(traced.out, bare.out, "%s (%s): the output differs; rearview said: %s",
			 p->what, options[0], traced.err);
	cr_assert(strstr(traced.err, bare.err),
		  "%s (%s): the program's own stderr (%s) is lost: %s", p->what, options[0],
		  bare.err, traced.err);
	cr_assert(strstr(traced.err, "rearview: wrote"), "%s (%s): no trace written: %s", p->what,
		  options[0], traced.err);
	cr_assert_eq(fxt_read_file(out, &t, why, sizeof(why)), 0, "%s (%s): %s", p->what,
		     options[0], why);
	cr_assert_gt(t->nr_spans, 0, "%s (%s): the trace has no span", p->what, options[0]);
	fxt_trace_free(t);
}

static void each_program(const char *backend)
{
	struct real_program p[8];
	char dir[64], paths[4][256], functions[512];
	size_t n;

	require_root("real programs");
	require_tool("sqlite3", "sqlite3");
	require_tool("python3", "python3");
	make_test_dir(dir, sizeof(dir));
	write_inputs(dir);
	n = programs(dir, p, paths);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(backend, "uprobe")) {
			const char *options[] = { "--backend", "uprobe", "--functions", functions,
						  NULL };

			if (!p[i].uprobe_functions) {
				options[2] = NULL;
			} else {
				snprintf(functions, sizeof(functions), "%s", p[i].uprobe_functions);
			}
			same_traced_and_bare(dir, &p[i], options);
		} else {
			const char *options[] = { "--backend", backend, NULL };

			same_traced_and_bare(dir, &p[i], options);
		}
	}
	cleanup_dir(dir);
}

Test(real_programs, unchanged_under_sampling, .timeout = 600)
{
	each_program("sample");
}

Test(real_programs, unchanged_under_uprobes, .timeout = 600)
{
	each_program("uprobe");
}
