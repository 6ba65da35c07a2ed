/* test_probe_site.c: probe specs to (file, offset), checked against Linux
 * perf's own resolver (`perf probe -x FILE -D SPEC` prints the uprobe it would
 * place) on the test targets, a fixed-address (non-PIE) build, and libc. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/probe_site.h"
#include "test_env.h"
#include "test_files.h"

/* perf's file offset for spec in file, from "p:GROUP/EVENT /path:0xOFFSET". */
static uint64_t perf_offset(const char *file, const char *spec)
{
	char cmd[1024], line[1024] = "";
	char *colon;
	FILE *p;

	require_tool("perf", "linux-perf");
	snprintf(cmd, sizeof(cmd), "perf probe -x '%s' -D '%s' 2>/dev/null", file, spec);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_not_null(fgets(line, sizeof(line), p), "perf probe printed nothing for %s", spec);
	pclose(p);
	line[strcspn(line, "\n")] = '\0';
	colon = strrchr(line, ':');
	cr_assert(colon && colon[1] == '0' && colon[2] == 'x', "unexpected perf output: %s", line);
	return strtoull(colon + 1, NULL, 16);
}

static int line_of(const char *source, const char *text)
{
	char line[512];
	FILE *f = fopen(source, "r");
	int n = 0;

	cr_assert_not_null(f, "cannot open %s", source);
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

/* A fixed-address program of two files, each with a static function "twin",
 * built into dir. */
static void build_fixed_address_program(char *dir, size_t size, char *exe, size_t exe_size)
{
	char cmd[2048];
	FILE *f;

	require_tool("cc", "gcc");
	make_temp_dir(dir, size, "rv-probe-site");
	snprintf(cmd, sizeof(cmd), "%s/a.c", dir);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs("int counter;\n"
	      "static __attribute__((noinline)) int twin(int x) { return x + counter; }\n"
	      "int other(int);\n"
	      "__attribute__((noinline)) int work(int x) { return twin(x) * 3; }\n"
	      "int main(int argc, char **argv) { return work(argc) + other(argc); }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/b.c", dir);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs("static __attribute__((noinline)) int twin(int x) { return x * 7; }\n"
	      "int other(int x) { return twin(x); }\n",
	      f);
	fclose(f);
	snprintf(exe, exe_size, "%s/fixed", dir);
	snprintf(cmd, sizeof(cmd), "cc -O1 -g -no-pie -o '%s' '%s/a.c' '%s/b.c'", exe, dir, dir);
	cr_assert_eq(system(cmd), 0, "cannot compile the fixed-address program");
}

Test(probe_site, symbol_in_pie_executable_matches_perf)
{
	const char *exe = built_target("windows");
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_site_resolve("request_begin", exe, 0, &site, &err), 0, "%s",
		     err.message);
	cr_expect_str_eq(site.path, exe);
	cr_expect_str_eq(site.function, "request_begin");
	cr_expect_eq(site.address, nm_symbol(exe, "request_begin", NULL));
	cr_expect_eq(site.offset, perf_offset(exe, "request_begin"), "offset 0x%llx",
		     (unsigned long long)site.offset);
}

Test(probe_site, fixed_address_executable_offsets_differ_from_addresses)
{
	char dir[64], exe[128];
	struct rv_probe_site site, by_address;
	struct rv_error err = { 0 };
	char spec[64];

	build_fixed_address_program(dir, sizeof(dir), exe, sizeof(exe));
	cr_assert_eq(rv_probe_site_resolve("work", exe, 0, &site, &err), 0, "%s", err.message);
	cr_expect_eq(site.address, nm_symbol(exe, "work", NULL));
	cr_expect_neq(site.address, site.offset, "a fixed-address file maps code above 0");
	cr_expect_eq(site.offset, perf_offset(exe, "work"));

	/* The same instruction named by its address. */
	snprintf(spec, sizeof(spec), "0x%llx", (unsigned long long)site.address);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &by_address, &err), 0, "%s", err.message);
	cr_expect_eq(by_address.offset, site.offset);
	cr_expect_str_eq(by_address.function, "work");

	/* Two static functions share the name "twin". */
	cr_expect_eq(rv_probe_site_resolve("twin", exe, 0, &site, &err), -EINVAL);
	cr_expect(strstr(err.message, "ambiguous"), "%s", err.message);
	remove_tree(dir);
}

Test(probe_site, library_symbol_through_dt_needed_and_through_maps)
{
	const char *exe = built_target("windows");
	struct rv_probe_site site, short_name, mapped;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_site_resolve("libc.so.6:malloc", exe, 0, &site, &err), 0, "%s",
		     err.message);
	cr_expect(strstr(site.path, "/libc.so.6"), "%s", site.path);
	/* the 64-bit libc a 64-bit program loads, not /lib32's (a multilib
	 * machine has both, and /lib32 may come first in the search) */
	cr_expect(!strstr(site.path, "lib32"), "%s", site.path);
	cr_expect_eq(site.offset, perf_offset(site.path, "malloc"));

	/* "libc" names the same file. */
	cr_assert_eq(rv_probe_site_resolve("libc:malloc", exe, 0, &short_name, &err), 0, "%s",
		     err.message);
	cr_expect_eq(short_name.offset, site.offset);

	/* A running process (this one) maps libc: found through its maps. */
	cr_assert_eq(rv_probe_site_resolve("libc.so.6:free", NULL, getpid(), &mapped, &err), 0,
		     "%s", err.message);
	cr_expect(strstr(mapped.path, "libc.so.6"), "%s", mapped.path);
	cr_expect_eq(mapped.offset, perf_offset(mapped.path, "free"));

	cr_expect_eq(rv_probe_site_resolve("libnothere.so:f", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "cannot find library 'libnothere.so'"), "%s", err.message);
}

Test(probe_site, file_and_line_gives_first_statement_of_the_line)
{
	const char *exe = built_target("windows");
	struct rv_probe_site site;
	struct rv_error err = { 0 };
	int line = line_of("tests/targets/windows.c", "mine->triggers++;");
	char spec[64];

	snprintf(spec, sizeof(spec), "windows.c:%d", line);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &site, &err), 0, "%s", err.message);
	cr_expect_str_eq(site.function, "on_trigger");
	cr_expect_eq(site.offset, perf_offset(exe, spec), "offset 0x%llx",
		     (unsigned long long)site.offset);
	cr_expect_gt(site.address, nm_symbol(exe, "on_trigger", NULL), "after the prologue's push");

	/* A line without code: the comment at the top of the file. */
	cr_expect_eq(rv_probe_site_resolve("windows.c:2", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "no code"), "%s", err.message);
}

Test(probe_site, file_and_line_without_debug_info)
{
	const char *exe = built_target("windows.stripped");
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	cr_expect_eq(rv_probe_site_resolve("windows.c:60", exe, 0, &site, &err), -ENODATA);
	cr_expect(strstr(err.message, "no debug information"), "%s", err.message);
}

/* A function a stripped file does not name: the error says it is stripped
 * and what to do (debug symbols, an address, FILE:LINE), not to try nm. */
Test(probe_site, unknown_names_in_a_stripped_file)
{
	const char *exe = built_target("windows.stripped");
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	cr_expect_eq(rv_probe_site_resolve("on_trigger", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "it is stripped"), "%s", err.message);
	cr_expect(strstr(err.message, "-dbgsym"), "%s", err.message);
	cr_expect(strstr(err.message, "0xADDR"), "%s", err.message);
	cr_expect(strstr(err.message, "FILE:LINE"), "%s", err.message);
	cr_expect_null(strstr(err.message, "'nm"), "%s", err.message);

	/* The same name in the unstripped file is found; a misspelt one there
	 * gets the usual hint. */
	exe = built_target("windows");
	cr_expect_eq(rv_probe_site_resolve("on_trigger", exe, 0, &site, &err), 0, "%s",
		     err.message);
	cr_expect_eq(rv_probe_site_resolve("no_such_function_here", exe, 0, &site, &err), -ENOENT);
	cr_expect_null(strstr(err.message, "stripped"), "%s", err.message);
}

Test(probe_site, errors_name_the_problem)
{
	const char *exe = built_target("windows");
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	cr_expect_eq(rv_probe_site_resolve("request_begn", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "did you mean 'request_begin'"), "%s", err.message);

	cr_expect_eq(rv_probe_site_resolve("threshold_ns", exe, 0, &site, &err), -EINVAL);
	cr_expect(strstr(err.message, "not a function"), "%s", err.message);

	cr_expect_eq(rv_probe_site_resolve("pthread_create", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "imported from a shared library"), "%s", err.message);

	cr_expect_eq(rv_probe_site_resolve("0x10", exe, 0, &site, &err), -EFAULT);
	cr_expect(strstr(err.message, "outside every executable segment"), "%s", err.message);

	cr_expect_eq(rv_probe_site_resolve("0xzz", exe, 0, &site, &err), -EINVAL);
	cr_expect_eq(rv_probe_site_resolve("", exe, 0, &site, &err), -EINVAL);
}

Test(probe_site, cxx_names_match_demangled)
{
	const char *exe = built_target("sym_cpp");
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	/* Two overloads of ns::Widget::frob: ambiguous without the parameters. */
	cr_expect_eq(rv_probe_site_resolve("ns::Widget::frob", exe, 0, &site, &err), -EINVAL);
	cr_expect(strstr(err.message, "ambiguous"), "%s", err.message);
	cr_assert_eq(rv_probe_site_resolve("ns::Widget::frob(double)", exe, 0, &site, &err), 0,
		     "%s", err.message);
	cr_expect_eq(site.offset, perf_offset(exe, "_ZN2ns6Widget4frobEd"));
}

Test(probe_site, file_offset_of_address)
{
	const char *exe = built_target("windows");
	struct rv_error err = { 0 };
	uint64_t addr = nm_symbol(exe, "on_trigger", NULL), offset;

	cr_assert_eq(rv_probe_site_file_offset(exe, addr, &offset, &err), 0, "%s", err.message);
	cr_expect_eq(offset, perf_offset(exe, "on_trigger"));
	cr_expect_eq(rv_probe_site_file_offset(exe, 0, &offset, &err), -EFAULT);
	cr_expect_eq(rv_probe_site_file_offset("/nonexistent", 0, &offset, &err), -ENOENT);
}

/* ---- the spec grammar (magic-trace's prefixes, '.', '?') ---- */

Test(probe_spec, reads_each_form)
{
	static struct rv_probe_spec spec;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_spec_parse("main", &spec, &err), 0, "%s", err.message);
	cr_expect_eq(spec.kind, RV_PROBE_SYMBOL);
	cr_expect_str_eq(spec.name, "main");
	cr_expect_str_eq(spec.library, "");

	cr_assert_eq(rv_probe_spec_parse("ns::Widget::frob(double)", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_SYMBOL);
	cr_expect_str_eq(spec.name, "ns::Widget::frob(double)");
	cr_expect_str_eq(spec.library, "");

	cr_assert_eq(rv_probe_spec_parse("libc.so.6:malloc", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_SYMBOL);
	cr_expect_str_eq(spec.library, "libc.so.6");
	cr_expect_str_eq(spec.name, "malloc");

	/* symbol: never reads an address or a line */
	cr_assert_eq(rv_probe_spec_parse("symbol:0x10", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_SYMBOL);
	cr_expect_str_eq(spec.name, "0x10");
	cr_assert_eq(rv_probe_spec_parse("symbol:libfoo.so:ns::f", &spec, &err), 0);
	cr_expect_str_eq(spec.library, "libfoo.so");
	cr_expect_str_eq(spec.name, "ns::f");

	cr_assert_eq(rv_probe_spec_parse("0x401234", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_ADDRESS);
	cr_expect_eq(spec.address, 0x401234);
	cr_assert_eq(rv_probe_spec_parse("addr:0x401234", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_ADDRESS);
	cr_expect_eq(spec.address, 0x401234);
	cr_assert_eq(rv_probe_spec_parse("addr:1f", &spec, &err), 0);
	cr_expect_eq(spec.address, 0x1f);

	cr_assert_eq(rv_probe_spec_parse("src/a.c:12", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_LINE);
	cr_expect_str_eq(spec.name, "src/a.c");
	cr_expect_eq(spec.line, 12);
	cr_expect_eq(spec.column, 0);
	cr_assert_eq(rv_probe_spec_parse("src/a.c:12:7", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_LINE);
	cr_expect_str_eq(spec.name, "src/a.c");
	cr_expect_eq(spec.line, 12);
	cr_expect_eq(spec.column, 7);
	cr_assert_eq(rv_probe_spec_parse("line:/abs/b.cc:3:1", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_LINE);
	cr_expect_str_eq(spec.name, "/abs/b.cc");
	cr_expect_eq(spec.line, 3);
	cr_expect_eq(spec.column, 1);
	cr_assert_eq(rv_probe_spec_parse("line:b.c:9", &spec, &err), 0);
	cr_expect_eq(spec.line, 9);
	cr_expect_eq(spec.column, 0);

	cr_assert_eq(rv_probe_spec_parse(".", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_STOP_INDICATOR);
	cr_assert_eq(rv_probe_spec_parse("?", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_PICK_FUNCTION);
	cr_assert_eq(rv_probe_spec_parse("symbol:?", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_PICK_FUNCTION);
	cr_assert_eq(rv_probe_spec_parse("line:?", &spec, &err), 0);
	cr_expect_eq(spec.kind, RV_PROBE_PICK_LINE);

	cr_expect(rv_probe_spec_is_pick("?"));
	cr_expect(rv_probe_spec_is_pick("symbol:?"));
	cr_expect(rv_probe_spec_is_pick("line:?"));
	cr_expect_not(rv_probe_spec_is_pick("."));
	cr_expect_not(rv_probe_spec_is_pick("a?"));
	cr_expect_not(rv_probe_spec_is_pick(NULL));
}

Test(probe_spec, refuses_what_it_cannot_read)
{
	static const char *const bad[] = {
		"",	   "addr:",	      "addr:0x",  "addr:xyz",	"addr:0x12g", "0xzz",
		"symbol:", "line:",	      "line:a.c", "line:a.c:x", "line:a.c:0", "a.c:0",
		"a.c:1:0", "a.c:99999999999", "line::5",  "libfoo.so:",
	};
	static struct rv_probe_spec spec;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rv_error err = { 0 };

		cr_expect_eq(rv_probe_spec_parse(bad[i], &spec, &err), -EINVAL, "'%s' was read",
			     bad[i]);
		cr_expect(err.message[0], "no message for '%s'", bad[i]);
	}
}

/* ---- resolving the new forms ---- */

Test(probe_site, prefixes_resolve_as_the_bare_forms)
{
	const char *exe = built_target("windows");
	struct rv_probe_site bare, prefixed;
	struct rv_error err = { 0 };
	int line = line_of("tests/targets/windows.c", "mine->triggers++;");
	char spec[64];

	cr_assert_eq(rv_probe_site_resolve("on_trigger", exe, 0, &bare, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_probe_site_resolve("symbol:on_trigger", exe, 0, &prefixed, &err), 0, "%s",
		     err.message);
	cr_expect_eq(prefixed.offset, bare.offset);
	snprintf(spec, sizeof(spec), "addr:0x%llx",
		 (unsigned long long)nm_symbol(exe, "on_trigger", NULL));
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &prefixed, &err), 0, "%s", err.message);
	cr_expect_eq(prefixed.offset, bare.offset);
	cr_expect_str_eq(prefixed.function, "on_trigger");

	snprintf(spec, sizeof(spec), "windows.c:%d", line);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &bare, &err), 0, "%s", err.message);
	snprintf(spec, sizeof(spec), "line:windows.c:%d", line);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &prefixed, &err), 0, "%s", err.message);
	cr_expect_eq(prefixed.offset, bare.offset);

	/* a '?' is for the caller to ask the user, never resolved here */
	cr_expect_eq(rv_probe_site_resolve("?", exe, 0, &prefixed, &err), -EINVAL);
	cr_expect(strstr(err.message, "name the site"), "%s", err.message);
}

/* The instruction objdump shows at addr in exe. */
static void instruction_at(const char *exe, uint64_t addr, char *out, size_t size)
{
	char cmd[1024], line[512];
	FILE *p;

	require_tool("objdump", "binutils");
	snprintf(cmd, sizeof(cmd), "objdump -d --start-address=0x%llx --stop-address=0x%llx '%s'",
		 (unsigned long long)addr, (unsigned long long)addr + 16, exe);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	out[0] = '\0';
	while (fgets(line, sizeof(line), p))
		if (!out[0] && strtoull(line, NULL, 16) == addr && strchr(line, '\t'))
			snprintf(out, size, "%s", line);
	pclose(p);
	cr_assert(out[0], "objdump shows no instruction at 0x%llx", (unsigned long long)addr);
}

/* Two calls on one line: each column names its call. */
Test(probe_site, file_line_column_picks_the_row_of_that_column)
{
	const char *exe = built_target("stop_own");
	const char *source = "tests/targets/stop_indicator.h";
	struct rv_probe_site site;
	struct rv_error err = { 0 };
	int line = line_of(source, "/* COLUMNS */");
	char text[512], spec[128], insn[512];
	FILE *f = fopen(source, "r");
	int first_col, second_col;

	cr_assert_not_null(f);
	for (int n = 1; fgets(text, sizeof(text), f) && n < line; n++)
		;
	fclose(f);
	first_col = (int)(strstr(text, "first_call") - text) + 1;
	second_col = (int)(strstr(text, "second_call") - text) + 1;

	snprintf(spec, sizeof(spec), "stop_indicator.h:%d:%d", line, first_col);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &site, &err), 0, "%s", err.message);
	instruction_at(exe, site.address, insn, sizeof(insn));
	cr_expect(strstr(insn, "call") && strstr(insn, "<first_call>"), "%s: %s", spec, insn);

	snprintf(spec, sizeof(spec), "line:stop_indicator.h:%d:%d", line, second_col);
	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &site, &err), 0, "%s", err.message);
	instruction_at(exe, site.address, insn, sizeof(insn));
	cr_expect(strstr(insn, "call") && strstr(insn, "<second_call>"), "%s: %s", spec, insn);

	/* a column no row has: refused, with the columns there are */
	snprintf(spec, sizeof(spec), "stop_indicator.h:%d:%d", line, second_col + 50);
	cr_expect_eq(rv_probe_site_resolve(spec, exe, 0, &site, &err), -ENOENT);
	snprintf(spec, sizeof(spec), "columns with code are %d, %d", first_col, second_col);
	cr_expect(strstr(err.message, spec), "%s", err.message);
}

Test(probe_site, dot_is_the_stop_indicator)
{
	struct rv_probe_site site;
	struct rv_error err = { 0 };
	const char *exe = built_target("stop_magic");

	/* magic-trace's name first, when both are there */
	cr_assert_eq(rv_probe_site_resolve(".", exe, 0, &site, &err), 0, "%s", err.message);
	cr_expect_str_eq(site.function, "magic_trace_stop_indicator");
	cr_expect_eq(site.offset, perf_offset(exe, "magic_trace_stop_indicator"));

	exe = built_target("stop_own");
	cr_assert_eq(rv_probe_site_resolve(".", exe, 0, &site, &err), 0, "%s", err.message);
	cr_expect_str_eq(site.function, "rearview_stop_indicator");
	cr_expect_eq(site.offset, perf_offset(exe, "rearview_stop_indicator"));

	exe = built_target("windows");
	cr_expect_eq(rv_probe_site_resolve(".", exe, 0, &site, &err), -ENOENT);
	cr_expect(strstr(err.message, "magic_trace_stop_indicator") &&
			  strstr(err.message, "rearview_stop_indicator"),
		  "%s", err.message);
}

/* What '?' offers: the executable's functions and its source lines, each with
 * a spec that resolves to it. */
Test(probe_site, choices_resolve_to_what_they_show)
{
	const char *exe = built_target("windows");
	struct rv_probe_choice *choices;
	struct rv_probe_site site, expected;
	struct rv_error err = { 0 };
	int line = line_of("tests/targets/windows.c", "mine->triggers++;");
	char want[64];
	size_t nr, found = 0;

	cr_assert_eq(rv_probe_site_choices(RV_PROBE_PICK_FUNCTION, exe, 0, &choices, &nr, &err), 0,
		     "%s", err.message);
	for (size_t i = 0; i < nr; i++) {
		cr_expect_neq(strcmp(choices[i].label, "pthread_create"), 0, "an import is listed");
		if (i)
			cr_expect_leq(strcmp(choices[i - 1].label, choices[i].label), 0,
				      "unsorted");
		if (strcmp(choices[i].label, "on_trigger") && strcmp(choices[i].label, "main"))
			continue;
		found++;
		cr_assert_eq(rv_probe_site_resolve(choices[i].spec, exe, 0, &site, &err), 0, "%s",
			     err.message);
		cr_expect_str_eq(site.function, choices[i].label);
		cr_expect_eq(site.offset, perf_offset(exe, choices[i].label));
	}
	cr_expect_eq(found, 2, "on_trigger and main are not both listed");
	rv_probe_choices_free(choices, nr);

	cr_assert_eq(rv_probe_site_choices(RV_PROBE_PICK_LINE, exe, 0, &choices, &nr, &err), 0,
		     "%s", err.message);
	snprintf(want, sizeof(want), "windows.c:%d  (on_trigger)", line);
	found = 0;
	for (size_t i = 0; i < nr; i++) {
		if (!strstr(choices[i].label, want))
			continue;
		found++;
		cr_assert_eq(rv_probe_site_resolve(choices[i].spec, exe, 0, &site, &err), 0, "%s",
			     err.message);
		snprintf(want, sizeof(want), "windows.c:%d", line);
		cr_assert_eq(rv_probe_site_resolve(want, exe, 0, &expected, &err), 0);
		cr_expect_eq(site.offset, expected.offset);
		break;
	}
	cr_expect_eq(found, 1, "no choice '%s' among %zu lines", want, nr);
	rv_probe_choices_free(choices, nr);

	/* a stripped file has neither names nor lines to offer */
	exe = built_target("windows.stripped");
	cr_expect_eq(rv_probe_site_choices(RV_PROBE_PICK_LINE, exe, 0, &choices, &nr, &err),
		     -ENODATA);
	cr_expect(strstr(err.message, "no debug information"), "%s", err.message);
}
