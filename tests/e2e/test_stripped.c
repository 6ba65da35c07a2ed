/* test_stripped.c: a stripped program is traced by function, not by
 * instruction address: each span of its code is named FILE!fn_HEX after the
 * FDE of the function it is in, and HEX is that function's start in the
 * unstripped twin's symbol table (same code, same addresses). Under
 * sampling, and decoded from Intel PT (a softpt capture), where the calls
 * must also be as many as the program counted. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fxt_reader.h"
#include "harness.h"

#define MAX_FUNCTIONS 64

struct function {
	char name[64];
	uint64_t addr, size;
	size_t spans;
};

/* The sized functions of binary, as `nm -S` lists them. */
static size_t read_functions(const char *binary, struct function *out, size_t max)
{
	char *text, *line, *save = NULL;
	size_t n = 0;
	int status;

	require_tool("nm", "binutils");
	text = run_command(&status, NULL, "nm -S --defined-only '%s'", binary);
	cr_assert_eq(status, 0, "nm failed on %s", binary);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct function f = { 0 };
		char type;

		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %c %63s", &f.addr, &f.size, &type,
			   f.name) != 4 ||
		    (type != 't' && type != 'T') || !f.size)
			continue;
		cr_assert_lt(n, max);
		out[n++] = f;
	}
	free(text);
	return n;
}

/* Checks that every span of module's code in t named FILE!fn_HEX is named
 * after the start of a function, and counts them in fns[].spans; with
 * offsets_outside, that the spans named by offset are of code outside every
 * function. Returns the FDE-named spans. */
static size_t check_names(const struct fxt_trace *t, const char *module, struct function *fns,
			  size_t nr, bool offsets_outside);

/* The function of fns that holds link-time address addr, or NULL. */
static struct function *holding(struct function *fns, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= fns[i].addr && addr - fns[i].addr < fns[i].size)
			return &fns[i];
	return NULL;
}

static struct function *named(struct function *fns, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(fns[i].name, name))
			return &fns[i];
	cr_assert_fail("no function %s", name);
	return NULL;
}

/* The function of fns that starts at addr, or NULL. */
static struct function *starting(struct function *fns, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (fns[i].addr == addr)
			return &fns[i];
	return NULL;
}

static size_t check_names(const struct fxt_trace *t, const char *module, struct function *fns,
			  size_t nr, bool offsets_outside)
{
	size_t len = strlen(module), fn_spans = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const char *name = t->spans[i].name;
		struct function *f;
		uint64_t addr;
		char *end;

		if (strncmp(name, module, len))
			continue;
		name += len;
		if (!strncmp(name, "+0x", 3)) {
			/* Code without call frame information: crtstuff's, no function's. */
			addr = strtoull(name + 3, &end, 16);
			if (offsets_outside)
				cr_assert_null(holding(fns, nr, addr), "%s is inside %s",
					       t->spans[i].name, holding(fns, nr, addr)->name);
			continue;
		}
		cr_assert(!strncmp(name, "!fn_", 4), "span '%s'", t->spans[i].name);
		addr = strtoull(name + 4, &end, 16);
		cr_assert(*end == '\0' && end != name + 4, "span '%s'", t->spans[i].name);
		f = starting(fns, nr, addr);
		cr_assert(f, "%s is not the start of a function (%s holds it)", t->spans[i].name,
			  holding(fns, nr, addr) ? holding(fns, nr, addr)->name : "none");
		f->spans++;
		fn_spans++;
	}
	return fn_spans;
}

Test(stripped, sampling_names_one_span_per_function, .timeout = 120)
{
	static const char *const options[] = { "--sampling", "--full-execution", NULL };
	static const char *const args[] = { "20000", NULL };
	struct function fns[MAX_FUNCTIONS];
	struct proc_result r;
	struct fxt_trace *t;
	size_t nr;
	char dir[64];

	nr = read_functions(built_target("workload"), fns, MAX_FUNCTIONS);
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/workload.stripped", args, 90, &r);
	cr_assert_gt(check_names(t, "workload.stripped", fns, nr, true), 0);
	/* The program's work: leaf, called by level's recursion, under main. */
	cr_assert_gt(named(fns, nr, "leaf")->spans, 0, "no leaf span:\n%s", r.err);
	cr_assert_gt(named(fns, nr, "level")->spans, 0, "no level span");
	cr_assert_gt(named(fns, nr, "main")->spans, 0, "no main span");
	cr_assert(strstr(r.err, "workload.stripped!fn_"), "the summary names them: %s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* Intel PT on a stripped static program (libc's functions stripped too):
 * the decoder drops the jumps inside one FDE's code, the builder names it
 * by that FDE, and every call the program counted is a span of its
 * function. */
Test(stripped, pt_decodes_calls_of_stripped_functions, .timeout = 240)
{
	static struct function fns[4096]; /* a static program: libc's too */
	char dir[64], out[128], line[160], expected[64];
	const char *p;
	struct proc_result r;
	struct fxt_trace *t;
	size_t nr, counts = 0;
	char err[256];

	nr = read_functions(build_path("tests/pt/recursion"), fns, sizeof(fns) / sizeof(fns[0]));
	make_test_dir(dir, sizeof(dir));
	char *softpt[] = { "/usr/bin/env",
			   "-i",
			   (char *)build_path("softpt"),
			   "-q",
			   "-o",
			   dir,
			   "--",
			   (char *)build_path("tests/pt/recursion.stripped"),
			   "20",
			   NULL };
	run_process(softpt, 180, &r);
	cr_assert_eq(r.exit_code, 0, "softpt failed: %s", r.err);
	cr_assert(strstr(r.out, "count descend 60"), "%s", r.out);
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *decode[] = { (char *)build_path("rearview"), "decode", dir, "-o", out, NULL };
	struct proc_result d;

	run_process(decode, 120, &d);
	cr_assert_eq(d.exit_code, 0, "rearview decode failed: %s", d.err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(check_names(t, "recursion.stripped", fns, nr, false), 0);
	for (p = r.out; (p = strstr(p, "count ")); p++) {
		char function[64];
		unsigned long n;

		if (sscanf(p, "count %63s %lu", function, &n) != 2)
			continue;
		snprintf(expected, sizeof(expected), "recursion.stripped!fn_%" PRIx64,
			 named(fns, nr, function)->addr);
		snprintf(line, sizeof(line), "%s (%s)", expected, function);
		cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, expected), n,
			     "%s: %zu spans, the program counted %lu", line,
			     fxt_count_spans(t, FXT_ANY, FXT_ANY, expected), n);
		counts++;
	}
	cr_assert_eq(counts, 2, "the program's counts: %s", r.out);
	cr_assert_gt(named(fns, nr, "main")->spans, 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
