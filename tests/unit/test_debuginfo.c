/* test_debuginfo.c: where symbolize/debuginfo.h's search finds a file's
 * separate debug file and its dwz file, in debug trees made up here from
 * tests/targets/sym_c: by build ID, by .gnu_debuglink (beside the file, in
 * .debug/, under a debug root), by a made-up NAME.debug, through a symlink,
 * with the build ID or CRC check, and each time where libdwfl's own
 * dwfl_standard_find_debuginfo finds it. And that libdebuginfod stays
 * unloaded unless DEBUGINFOD_URLS asks for it.
 */
#include <criterion/criterion.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "test_env.h"
#include "test_files.h"

static void shell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void shell(const char *fmt, ...)
{
	char command[2048];
	char *out;
	va_list ap;
	int status;

	va_start(ap, fmt);
	vsnprintf(command, sizeof(command), fmt, ap);
	va_end(ap);
	out = run_command(&status, NULL, "%s", command);
	free(out);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "'%s' failed", command);
}

static void make_dirs(const char *dir)
{
	shell("mkdir -p '%s'", dir);
}

/* What one libdwfl session found for a file. */
struct found {
	char *debug_file;	  /* the separate debug file's path; NULL: none */
	bool has_alt;		  /* the DWARF's dwz file was found */
	unsigned char alt_id[64]; /* its build ID */
	ssize_t alt_id_len;
};

/* Reports file to a libdwfl session with callbacks cb and asks for its
 * symbol table, then (dwarf) its DWARF and the DWARF's dwz file. */
static struct found find_with(const Dwfl_Callbacks *cb, const char *file, bool dwarf)
{
	Dwfl *dwfl = dwfl_begin(cb);
	struct found f = { 0 };
	const char *debug_file = NULL;
	Dwfl_Module *mod;
	Dwarf_Addr bias;

	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, file, file, -1, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	cr_assert_not_null(mod, "%s: %s", file, dwfl_errmsg(-1));
	dwfl_module_getsymtab(mod);
	if (dwarf) {
		Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
		Dwarf *alt = dw ? dwarf_getalt(dw) : NULL;
		const void *id;

		if (alt) {
			f.alt_id_len = dwelf_elf_gnu_build_id(dwarf_getelf(alt), &id);
			cr_assert(f.alt_id_len > 0 && f.alt_id_len <= 64);
			memcpy(f.alt_id, id, (size_t)f.alt_id_len);
			f.has_alt = true;
		}
	}
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug_file);
	if (debug_file)
		f.debug_file = realpath(debug_file, NULL);
	dwfl_end(dwfl);
	return f;
}

/* What rearview's search finds for file, asserted the same as what libdwfl's
 * standard search finds. */
static struct found find(const char *file, bool dwarf)
{
	struct rv_debuginfo d;
	Dwfl_Callbacks standard;
	struct found ours, theirs;

	cr_assert_eq(rv_debuginfo_init(&d), 0);
	cr_assert(d.callbacks.find_debuginfo != dwfl_standard_find_debuginfo,
		  "DEBUGINFOD_URLS is set: nothing to compare");
	standard = d.callbacks;
	standard.find_debuginfo = dwfl_standard_find_debuginfo;
	ours = find_with(&d.callbacks, file, dwarf);
	theirs = find_with(&standard, file, dwarf);
	rv_debuginfo_destroy(&d);
	cr_assert_str_eq(ours.debug_file ? ours.debug_file : "(none)",
			 theirs.debug_file ? theirs.debug_file : "(none)",
			 "rearview and libdwfl disagree on %s's debug file", file);
	cr_assert_eq(ours.has_alt, theirs.has_alt, "and on its dwz file");
	cr_assert_eq(ours.alt_id_len, theirs.alt_id_len);
	cr_assert_arr_eq(ours.alt_id, theirs.alt_id, sizeof(ours.alt_id));
	free(theirs.debug_file);
	return ours;
}

static void expect_debug_file(const char *file, const char *expected)
{
	struct found f = find(file, false);
	char *want = expected ? realpath(expected, NULL) : NULL;

	cr_assert(!expected || want, "%s is missing", expected);
	cr_assert_str_eq(f.debug_file ? f.debug_file : "(none)", want ? want : "(none)",
			 "%s's debug file", file);
	free(f.debug_file);
	free(want);
}

static char *tree;

static void make_tree(void)
{
	unsetenv("DEBUGINFOD_URLS");
	unsetenv(RV_DEBUG_DIRS_ENV);
	tree = new_temp_dir("rv-debuginfo");
}

static void remove_made_tree(void)
{
	unsetenv(RV_DEBUG_DIRS_ENV);
	free_temp_dir(tree);
}

/* tree/NAME: sym_c stripped of every symbol, with a .gnu_debuglink to
 * LINK (none when NULL) whose CRC is debug's; debug: its debug file. */
static char *stripped_copy(const char *name, const char *debug, const char *link)
{
	char *path = path_join(tree, name);
	const char *sym_c = built_target("sym_c");

	make_dirs(tree);
	shell("objcopy --only-keep-debug '%s' '%s'", sym_c, debug);
	if (link) {
		/* objcopy names the link after the file it reads the CRC from. */
		char *named = path_join(tree, link);

		if (strcmp(named, debug))
			shell("cp '%s' '%s'", debug, named);
		shell("objcopy --strip-all --add-gnu-debuglink='%s' '%s' '%s'", named, sym_c, path);
		if (strcmp(named, debug))
			unlink(named);
		free(named);
	} else {
		shell("objcopy --strip-all '%s' '%s'", sym_c, path);
	}
	return path;
}

TestSuite(debuginfo, .init = make_tree, .fini = remove_made_tree);

Test(debuginfo, by_build_id_under_the_debug_dirs)
{
	char *root = path_join(tree, "root"), *bin, id_dir[512], debug[600], *dbg;
	char *id, *out;
	int status;

	out = run_command(&status, NULL,
			  "readelf -n '%s' | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p'",
			  built_target("sym_c"));
	id = strtok(out, "\n");
	cr_assert(id && strlen(id) > 2);
	snprintf(id_dir, sizeof(id_dir), "%s/.build-id/%.2s", root, id);
	make_dirs(id_dir);
	snprintf(debug, sizeof(debug), "%s/%s.debug", id_dir, id + 2);
	dbg = path_join(tree, "unused.debug");
	bin = stripped_copy("prog", dbg, NULL);
	shell("mv '%s' '%s'", dbg, debug);
	expect_debug_file(bin, NULL);
	cr_assert_eq(setenv(RV_DEBUG_DIRS_ENV, root, 1), 0);
	expect_debug_file(bin, debug);
	free(out);
	free(bin);
	free(dbg);
	free(root);
}

Test(debuginfo, by_debuglink_beside_the_file)
{
	char *debug = path_join(tree, "prog.debug"),
	     *bin = stripped_copy("prog", debug, "prog.debug");

	expect_debug_file(bin, debug);
	free(bin);
	free(debug);
}

Test(debuginfo, by_debuglink_in_the_debug_subdirectory)
{
	char *debug = path_join(tree, "prog.debug"),
	     *bin = stripped_copy("prog", debug, "prog.debug");
	char *sub = path_join(tree, ".debug"), *moved = path_join(sub, "prog.debug");

	make_dirs(sub);
	shell("mv '%s' '%s'", debug, moved);
	expect_debug_file(bin, moved);
	free(bin);
	free(debug);
	free(sub);
	free(moved);
}

/* Under a debug root: ROOT/<the file's directory>/LINK, then the same with
 * the directory's leading components taken off, down to ROOT/LINK. */
Test(debuginfo, by_debuglink_under_a_debug_root)
{
	char *debug = path_join(tree, "prog.debug"),
	     *bin = stripped_copy("prog", debug, "prog.debug");
	char *root = path_join(tree, "root"), full[1024], shorter[1024], *last;

	cr_assert_eq(setenv(RV_DEBUG_DIRS_ENV, root, 1), 0);
	/* tree is /tmp/rv-debuginfo-XXXXXX: ROOT/tmp/rv-..., then ROOT/rv-... */
	snprintf(full, sizeof(full), "%s%s", root, tree);
	snprintf(shorter, sizeof(shorter), "%s%s", root, strchr(tree + 1, '/'));
	make_dirs(full);
	make_dirs(shorter);
	strcat(full, "/prog.debug");
	strcat(shorter, "/prog.debug");
	shell("mv '%s' '%s'", debug, full);
	expect_debug_file(bin, full);
	shell("mv '%s' '%s'", full, shorter);
	expect_debug_file(bin, shorter);
	last = path_join(root, "prog.debug");
	shell("mv '%s' '%s'", shorter, last);
	expect_debug_file(bin, last);
	free(last);
	free(root);
	free(bin);
	free(debug);
}

/* Without a .gnu_debuglink: NAME.debug. */
Test(debuginfo, by_a_made_up_name)
{
	char *debug = path_join(tree, "prog.debug"), *bin = stripped_copy("prog", debug, NULL);

	expect_debug_file(bin, debug);
	free(bin);
	free(debug);
}

/* A symlink's debug file may be named after its target. */
Test(debuginfo, through_a_symlink)
{
	char *debug = path_join(tree, "prog.debug"), *bin = stripped_copy("prog", debug, NULL);
	char *links = path_join(tree, "links"), *link = path_join(links, "other");

	make_dirs(links);
	cr_assert_eq(symlink(bin, link), 0);
	expect_debug_file(link, debug);
	free(link);
	free(links);
	free(bin);
	free(debug);
}

/* A debug file with another build ID is not the file's. */
Test(debuginfo, not_with_another_build_id)
{
	char *debug = path_join(tree, "prog.debug"),
	     *bin = stripped_copy("prog", debug, "prog.debug");

	shell("objcopy --only-keep-debug '%s' '%s'", built_target("sym_cpp"), debug);
	expect_debug_file(bin, NULL);
	free(bin);
	free(debug);
}

/* Without a build ID, the CRC decides: a changed debug file is not the
 * file's, unless the debug directory's entry begins with '-'. */
Test(debuginfo, by_crc_without_a_build_id)
{
	char *bin = path_join(tree, "noid"), *debug = path_join(tree, "noid.debug");
	char root_entry[600], *root = path_join(tree, "root"),
			      *moved = path_join(root, "noid.debug");
	char source[512];

	project_root(source, sizeof(source));
	shell("cc -O1 -g -Wl,--build-id=none -o '%s.full' '%s/tests/targets/sym_c.c'", bin, source);
	shell("objcopy --only-keep-debug '%s.full' '%s'", bin, debug);
	shell("objcopy --strip-all --add-gnu-debuglink='%s' '%s.full' '%s'", debug, bin, bin);
	expect_debug_file(bin, debug);
	shell("objcopy --add-section .comment.extra=/dev/null '%s'", debug);
	expect_debug_file(bin, NULL);
	make_dirs(root);
	shell("mv '%s' '%s'", debug, moved);
	snprintf(root_entry, sizeof(root_entry), "-%s", root);
	cr_assert_eq(setenv(RV_DEBUG_DIRS_ENV, root_entry, 1), 0);
	expect_debug_file(bin, moved);
	free(moved);
	free(root);
	free(debug);
	free(bin);
}

/* A dwz file (.gnu_debugaltlink: a name and the file's build ID), asked for
 * once the debug file is open: by its base name in a debug root's .dwz/, or
 * in a .dwz/ beside the file; only with the build ID the link names. */
Test(debuginfo, a_dwz_file)
{
	char *debug = path_join(tree, "prog.debug"),
	     *bin = stripped_copy("prog", debug, "prog.debug");
	char *root = path_join(tree, "root"), *dwz_dir = path_join(root, ".dwz");
	char *alt = path_join(dwz_dir, "shared.debug"), *link = path_join(tree, "altlink");
	char *beside = path_join(tree, ".dwz");
	static const char name[] = "/nonexistent/shared.debug";
	unsigned char content[sizeof(name) + 64];
	const void *id;
	struct found f;
	ssize_t id_len;
	Elf *elf;
	int fd;

	make_dirs(dwz_dir);
	shell("objcopy --only-keep-debug '%s' '%s'", built_target("sym_cpp"), alt);
	elf_version(EV_CURRENT);
	fd = open(alt, O_RDONLY);
	cr_assert_geq(fd, 0);
	elf = dwelf_elf_begin(fd);
	id_len = dwelf_elf_gnu_build_id(elf, &id);
	cr_assert(id_len > 0 && id_len <= 64);
	memcpy(content, name, sizeof(name));
	memcpy(content + sizeof(name), id, (size_t)id_len);
	write_file(link, content, sizeof(name) + (size_t)id_len);
	shell("objcopy --add-section .gnu_debugaltlink='%s' '%s'", link, debug);

	f = find(bin, true);
	cr_assert_not_null(f.debug_file);
	cr_assert_not(f.has_alt, "no debug root, no dwz file");
	free(f.debug_file);
	cr_assert_eq(setenv(RV_DEBUG_DIRS_ENV, root, 1), 0);
	f = find(bin, true);
	cr_assert(f.has_alt, "the dwz file in the debug root's .dwz/");
	cr_assert_eq(f.alt_id_len, id_len);
	cr_assert_arr_eq(f.alt_id, id, (size_t)id_len);
	free(f.debug_file);

	unsetenv(RV_DEBUG_DIRS_ENV);
	shell("mv '%s' '%s'", dwz_dir, beside);
	f = find(bin, true);
	cr_assert(f.has_alt, "the dwz file in .dwz/ beside the file");
	free(f.debug_file);

	shell("objcopy --only-keep-debug '%s' '%s/shared.debug'", built_target("sym_c"), beside);
	f = find(bin, true);
	cr_assert_not(f.has_alt, "a dwz file with another build ID");
	free(f.debug_file);

	elf_end(elf);
	close(fd);
	free(beside);
	free(link);
	free(alt);
	free(dwz_dir);
	free(root);
	free(bin);
	free(debug);
}

static bool debuginfod_mapped(void)
{
	char *maps = read_whole("/proc/self/maps", NULL);
	bool mapped = strstr(maps, "libdebuginfod") != NULL;

	free(maps);
	return mapped;
}

/* libdebuginfod (and curl, gnutls, ...) costs milliseconds to load: not
 * without DEBUGINFOD_URLS. libdwfl's standard search, the same search, loads
 * it (where it is installed), which shows the check can see it. */
Test(debuginfo, loads_no_debuginfod_client_unless_asked)
{
	struct rv_debuginfo d;
	Dwfl_Callbacks standard;
	struct found f;

	cr_assert_eq(rv_debuginfo_init(&d), 0);
	f = find_with(&d.callbacks, built_target("sym_c.stripped"), true);
	cr_assert_null(f.debug_file);
	cr_assert_not(debuginfod_mapped(), "libdebuginfod loaded without DEBUGINFOD_URLS");
	standard = d.callbacks;
	standard.find_debuginfo = dwfl_standard_find_debuginfo;
	f = find_with(&standard, built_target("sym_c.stripped"), true);
	if (!debuginfod_mapped())
		cr_log_warn("libdebuginfod is not installed: nothing to load");
	rv_debuginfo_destroy(&d);

	cr_assert_eq(setenv("DEBUGINFOD_URLS", "", 1), 0);
	cr_assert_eq(rv_debuginfo_init(&d), 0);
	cr_assert_neq(d.callbacks.find_debuginfo, dwfl_standard_find_debuginfo,
		      "an empty DEBUGINFOD_URLS asks for nothing");
	rv_debuginfo_destroy(&d);
	cr_assert_eq(setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9", 1), 0);
	cr_assert_eq(rv_debuginfo_init(&d), 0);
	cr_assert_eq(d.callbacks.find_debuginfo, dwfl_standard_find_debuginfo);
	rv_debuginfo_destroy(&d);
	unsetenv("DEBUGINFOD_URLS");
}
