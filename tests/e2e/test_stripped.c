/* test_stripped.c: a stripped program under sampling is traced by function,
 * not by instruction address: each span of its code is named FILE!fn_HEX
 * after the FDE of the function it is in, and HEX is that function's start
 * in the unstripped twin's symbol table (same code, same addresses). */
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

Test(stripped, sampling_names_one_span_per_function, .timeout = 120)
{
	static const char *const options[] = { "--sampling", "--full-execution", NULL };
	static const char *const args[] = { "20000", NULL };
	static const char module[] = "workload.stripped";
	struct function fns[MAX_FUNCTIONS];
	size_t nr, fn_spans = 0;
	struct proc_result r;
	struct fxt_trace *t;
	char dir[64];

	nr = read_functions(built_target("workload"), fns, MAX_FUNCTIONS);
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, options, "tests/targets/workload.stripped", args, 90, &r);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const char *name = t->spans[i].name;
		struct function *f;
		uint64_t addr;
		char *end;

		if (strncmp(name, module, sizeof(module) - 1))
			continue;
		name += sizeof(module) - 1;
		if (!strncmp(name, "+0x", 3)) {
			/* Code without call frame information: crtstuff's, no function's. */
			addr = strtoull(name + 3, &end, 16);
			cr_assert_null(holding(fns, nr, addr), "%s is inside %s", t->spans[i].name,
				       holding(fns, nr, addr)->name);
			continue;
		}
		cr_assert(!strncmp(name, "!fn_", 4), "span '%s'", t->spans[i].name);
		addr = strtoull(name + 4, &end, 16);
		cr_assert(*end == '\0' && end != name + 4, "span '%s'", t->spans[i].name);
		f = holding(fns, nr, addr);
		cr_assert(f && f->addr == addr, "%s is not the start of a function (%s)",
			  t->spans[i].name, f ? f->name : "none holds it");
		f->spans++;
		fn_spans++;
	}
	/* The program's work: leaf, called by level's recursion, under main. */
	cr_assert_gt(named(fns, nr, "leaf")->spans, 0, "no leaf span:\n%s", r.err);
	cr_assert_gt(named(fns, nr, "level")->spans, 0, "no level span");
	cr_assert_gt(named(fns, nr, "main")->spans, 0, "no main span");
	cr_assert(strstr(r.err, "workload.stripped!fn_"), "the summary names them: %s", r.err);
	cr_assert_gt(fn_spans, 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}
