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
