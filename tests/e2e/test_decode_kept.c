/* test_decode_kept.c: `rearview decode DIR` (and DIR/perf.data) of a capture
 * that `rearview run --working-directory DIR` kept, for the sampling and
 * the uprobe backends, on fncalls (a target built with -g that counts its
 * own calls):
 *
 * - the decode writes the spans the run wrote, event for event, with the
 *   same arguments, and its summary names the same top functions;
 * - function spans carry magic-trace's arguments: "address" (a pointer, the
 *   function's entry: the ELF symbol's value moved by the load bias, the
 *   same for every span of the function) and, from DWARF, "file" (the
 *   target's source) and "line" (the line of the function's first
 *   instruction: clang puts it at the opening brace after the signature),
 *   in FXT and in JSON.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fxt_expect.h"
#include "fxt_reader.h"
#include "harness.h"
#include "test_files.h"

#define TARGET	      "tests/targets/fncalls"
#define TARGET_SOURCE "tests/targets/fncalls.c"

/* The value of symbol name in the ELF file at path; asserts it is there. */
static uint64_t elf_symbol(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	uint64_t value = 0;
	bool found = false;

	cr_assert_geq(fd, 0, "cannot open %s", path);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf, "%s is not ELF", path);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name) && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
				value = sym.st_value;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert(found, "%s has no function %s", path, name);
	return value;
}

/* The line of the opening brace of the definition whose signature line
 * contains `signature` in the source file at path (1-based). */
static int brace_line(const char *path, const char *signature)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0, at = 0;

	cr_assert_not_null(f, "cannot read %s", path);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (at && n == at + 1) {
			cr_assert_eq(line[0], '{', "%s:%d: the definition's brace, not '%s'", path,
				     n, line);
			fclose(f);
			return n;
		}
		if (!at && strstr(line, signature) && !strchr(line, ';'))
			at = n;
	}
	fclose(f);
	cr_assert_fail("%s has no definition '%s'", path, signature);
	return 0;
}

static const char *string_arg(const struct fxt_span *s, const char *name)
{
	const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, name);

	cr_assert_not_null(a, "span %s has no argument %s", s->name, name);
	cr_assert_eq(a->type, FXT_ARG_STRING, "%s of %s is a %s", name, s->name,
		     fxt_arg_type_name(a->type));
	return a->s;
}

/* Every span named fn has the address, file and line the ELF file and the
 * source give; returns its address. */
static uint64_t expect_function_args(const struct fxt_trace *t, const char *fn,
				     const char *signature)
{
	const struct fxt_span *s;
	uint64_t addr = 0;
	size_t n = 0;
	int line = brace_line(TARGET_SOURCE, signature);

	for (; (s = fxt_find_span(t, FXT_ANY, FXT_ANY, fn, n)); n++) {
		const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, "address");
		const struct fxt_arg *l = fxt_find_arg(s->args, s->nr_args, "line");
		const char *file = string_arg(s, "file");
		size_t len = strlen(file);

		cr_assert_not_null(a, "%s #%zu has no address", fn, n);
		cr_assert_eq(a->type, FXT_ARG_POINTER, "its address is a %s",
			     fxt_arg_type_name(a->type));
		cr_assert(!n || a->u == addr, "%s #%zu at %#" PRIx64 ", #0 at %#" PRIx64, fn, n,
			  a->u, addr);
		addr = a->u;
		cr_assert(len >= strlen(TARGET_SOURCE) &&
				  !strcmp(file + len - strlen(TARGET_SOURCE), TARGET_SOURCE),
			  "%s is in %s", fn, file);
		cr_assert_not_null(l, "%s has no line", fn);
		cr_assert_eq(l->i, line, "%s at line %lld, the source has it at %d", fn,
			     (long long)l->i, line);
	}
	cr_assert_gt(n, 0, "no span %s", fn);
	return addr;
}

/* The lines of the summary's top functions ("  12.3%  1.0 ms  fib"). */
static void top_functions(const char *err, char *out, size_t size)
{
	const char *p = strstr(err, "top functions by self time");

	out[0] = '\0';
	cr_assert_not_null(p, "no top functions in:\n%s", err);
	p = strchr(p, '\n');
	while (p && !strncmp(p + 1, "  ", 2)) {
		const char *end = strchr(p + 1, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (strlen(out) + len + 1 < size)
			strncat(out, p, len);
		p = end;
	}
	cr_assert_neq(out[0], '\0', "no top function lines in:\n%s", err);
}

static struct fxt_trace *decode_with(const char *option, const char *input, const char *output,
				     struct proc_result *r)
{
	char err[512];
	struct fxt_trace *t = NULL;
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 (char *)input,
			 "-o",
			 (char *)output,
			 (char *)option,
			 NULL };

	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "rearview decode %s failed:\n%s", input, r->err);
	if (strstr(output, ".json"))
		return NULL;
	cr_assert_eq(fxt_read_file(output, &t, err, sizeof(err)), 0, "%s", err);
	return t;
}

static struct fxt_trace *decode(const char *input, const char *output, struct proc_result *r)
{
	return decode_with(NULL, input, output, r);
}

static void kept_capture(const char *backend, const char *const *args)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	char dir[64], kept[128], data[160], out[160], json[160];
	char run_top[2048], decode_top[2048];
	struct fxt_trace *run, *from_dir, *from_file;
	uint64_t fib, main_fn;

	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(kept, sizeof(kept), "%s/kept", dir);
	snprintf(data, sizeof(data), "%s/perf.data", kept);
	const char *options[] = { "--backend", backend, "--working-directory", kept, NULL };

	run = rearview_run(dir, options, NULL, TARGET, args, 120, r);
	top_functions(r->err, run_top, sizeof(run_top));
	cr_assert(file_exists(data), "no %s", data);

	snprintf(out, sizeof(out), "%s/dir.fxt", dir);
	from_dir = decode(kept, out, r);
	top_functions(r->err, decode_top, sizeof(decode_top));
	cr_assert_str_eq(decode_top, run_top, "the decode's top functions:%s\nthe run's:%s",
			 decode_top, run_top);
	expect_same_events(run, from_dir, "run, then decode DIR");

	snprintf(out, sizeof(out), "%s/file.fxt", dir);
	from_file = decode(data, out, r);
	expect_same_events(run, from_file, "run, then decode DIR/perf.data");

	/* fib and main: one address each, the ELF's symbols moved by one bias */
	fib = expect_function_args(run, "fib", "fib(unsigned n)");
	main_fn = expect_function_args(run, "main", "int main(int argc, char **argv)");
	cr_assert_eq(fib - main_fn,
		     elf_symbol(build_path(TARGET), "fib") - elf_symbol(build_path(TARGET), "main"),
		     "fib and main are %#" PRIx64 " apart in the trace", fib - main_fn);
	cr_assert_eq(fib & 0xfff, elf_symbol(build_path(TARGET), "fib") & 0xfff, "fib at %#" PRIx64,
		     fib);

	/* JSON: the same arguments */
	snprintf(json, sizeof(json), "%s/t.json", dir);
	decode(kept, json, r);
	{
		char *text = read_whole(json, NULL);
		char expect[256];

		cr_assert_not_null(text);
		snprintf(expect, sizeof(expect), "\"address\":\"0x%" PRIx64 "\"", fib);
		cr_assert_not_null(strstr(text, expect), "no %s in the JSON trace", expect);
		snprintf(expect, sizeof(expect), TARGET_SOURCE "\",\"line\":%d",
			 brace_line(TARGET_SOURCE, "fib(unsigned n)"));
		cr_assert_not_null(strstr(text, expect), "no %s in the JSON trace", expect);
		free(text);
	}
	fxt_trace_free(run);
	fxt_trace_free(from_dir);
	fxt_trace_free(from_file);
	cleanup_dir(dir);
	free(r);
}

Test(decode_kept, sampling_capture, .timeout = 300)
{
	/* fib(27): a few hundred thousand calls, tens of milliseconds of CPU:
	 * samples in fib under main */
	const char *args[] = { "--only", "fib", "--fib", "27", NULL };

	kept_capture("sample", args);
}

Test(decode_kept, uprobe_capture, .timeout = 300)
{
	const char *args[] = { "--only", "fib", "--fib", "12", NULL };

	require_root("decode_kept");
	kept_capture("uprobe", args);
}

/* With the kernel: a capture recorded in this boot names kernel code as the
 * run did (by /proc/kallsyms), so the decode's kernel frames are the run's. */
Test(decode_kept, sampling_capture_with_the_kernel, .timeout = 300)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	const char *args[] = { "--only", "reads,sleeps", NULL };
	char dir[64], kept[128], out[160];
	struct fxt_trace *run, *again;
	size_t kernel = 0;

	require_root("decode_kept");
	cr_assert_not_null(r);
	make_test_dir(dir, sizeof(dir));
	snprintf(kept, sizeof(kept), "%s/kept", dir);
	const char *options[] = { "--backend",		 "sample", "--trace-include-kernel",
				  "--working-directory", kept,	   NULL };

	run = rearview_run(dir, options, NULL, TARGET, args, 120, r);
	for (size_t i = 0; i < run->nr_spans; i++)
		kernel += !strcmp(run->spans[i].category, "kernel") &&
			  strncmp(run->spans[i].name, "0x", 2);
	cr_assert_gt(kernel, 0, "no named kernel frames in the run's trace");
	snprintf(out, sizeof(out), "%s/again.fxt", dir);
	again = decode_with("--trace-include-kernel", kept, out, r);
	expect_same_events(run, again, "run, then decode --trace-include-kernel DIR");
	fxt_trace_free(run);
	fxt_trace_free(again);
	cleanup_dir(dir);
	free(r);
}
