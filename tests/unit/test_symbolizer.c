/* test_symbolizer.c: the symbolizer against the truth of real processes.
 *
 * Target programs (tests/targets/sym_c.c, sym_cpp.cpp) print where their
 * functions are and stop themselves; the tests then report the stopped
 * process's /proc/PID/maps, as a capture would, and check names, starts,
 * sizes, modules, DWARF lines and demangling against what the target said.
 * Kernel names are checked against a kallsyms file written here and against
 * the running kernel's /proc/kallsyms (the tests run as root), and a
 * module's against its .ko, compiled here.
 *
 * Not here: unwinding (test_unwind.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/symbolizer.h"
#include "symbolize/symtab.h"
#include "test_env.h"

#define MAX_TRUTHS 32

struct truth {
	char name[160];
	uint64_t addr;
};

/* A target program, stopped, and what it printed. */
struct target {
	pid_t pid;
	struct truth truths[MAX_TRUTHS];
	size_t nr_truths;
};

static void target_path(char *buf, size_t len, const char *name)
{
	const char *build = getenv("RV_BUILD");

	snprintf(buf, len, "%s/tests/targets/%s", build && *build ? build : "build", name);
}

/* Parses "name 0xADDR" (C target) or "0xADDR name with spaces" (C++ target). */
static void parse_truth(struct target *t, const char *line)
{
	struct truth *tr;
	const char *space = strchr(line, ' ');

	cr_assert(space, "unexpected target output '%s'", line);
	cr_assert(t->nr_truths < MAX_TRUTHS);
	tr = &t->truths[t->nr_truths++];
	if (strncmp(line, "0x", 2) == 0) {
		tr->addr = strtoull(line, NULL, 16);
		snprintf(tr->name, sizeof(tr->name), "%s", space + 1);
	} else {
		snprintf(tr->name, sizeof(tr->name), "%.*s", (int)(space - line), line);
		tr->addr = strtoull(space + 1, NULL, 16);
	}
	tr->name[strcspn(tr->name, "\n")] = '\0';
	cr_assert(tr->addr, "no address in '%s'", line);
}

/* Runs path (argv[0] = path), reads its lines up to "end", waits until it has
 * stopped itself. */
static void start_target(struct target *t, const char *path)
{
	char line[512];
	int fds[2], status;
	FILE *out;

	memset(t, 0, sizeof(*t));
	cr_assert_eq(access(path, X_OK), 0, "%s is missing: run make first", path);
	cr_assert_eq(pipe(fds), 0);
	t->pid = fork();
	cr_assert_geq(t->pid, 0);
	if (t->pid == 0) {
		/* A failed assertion ends the test process: take the target along. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	out = fdopen(fds[0], "r");
	cr_assert(out);
	while (fgets(line, sizeof(line), out) && strcmp(line, "end\n") != 0)
		parse_truth(t, line);
	fclose(out);
	cr_assert_eq(waitpid(t->pid, &status, WUNTRACED), t->pid);
	cr_assert(WIFSTOPPED(status), "%s did not stop itself", path);
}

static void stop_target(struct target *t)
{
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
}

static uint64_t truth_of(const struct target *t, const char *name)
{
	for (size_t i = 0; i < t->nr_truths; i++) {
		if (strcmp(t->truths[i].name, name) == 0)
			return t->truths[i].addr;
	}
	cr_assert_fail("the target did not print '%s'", name);
	return 0;
}

struct map_line {
	uint64_t start, end, pgoff;
	bool executable;
	char path[512];
};

static bool next_map_line(FILE *maps, struct map_line *m)
{
	char line[1024], perms[8];
	int used = 0;

	if (!fgets(line, sizeof(line), maps))
		return false;
	cr_assert_geq(sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &m->start,
			     &m->end, perms, &m->pgoff, &used),
		      4, "bad maps line '%s'", line);
	m->executable = perms[2] == 'x';
	snprintf(m->path, sizeof(m->path), "%s", used ? line + used : "");
	m->path[strcspn(m->path, "\n")] = '\0';
	return true;
}

/* Reports pid's mappings as a capture would. Mappings of `skip` are left out;
 * paths equal to `rename_from` are reported as `rename_to`. */
static void report_maps_as(struct rv_symbolizer *s, pid_t pid, const char *skip,
			   const char *rename_from, const char *rename_to)
{
	char path[64];
	struct map_line m;
	struct rv_error err = { 0 };
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	cr_assert(maps);
	while (next_map_line(maps, &m)) {
		const char *name = m.path;

		if (skip && strstr(m.path, skip))
			continue;
		if (rename_from && strcmp(m.path, rename_from) == 0)
			name = rename_to;
		cr_assert_eq(rv_symbolizer_add_mapping(s, (uint32_t)pid, m.start, m.end - m.start,
						       m.pgoff, m.executable, name, &err),
			     0, "%s", err.message);
	}
	fclose(maps);
}

static void report_maps(struct rv_symbolizer *s, pid_t pid)
{
	report_maps_as(s, pid, NULL, NULL, NULL);
}

/* The mapping of pid that holds addr. */
static struct map_line mapping_of(pid_t pid, uint64_t addr)
{
	char path[64];
	struct map_line m;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	cr_assert(maps);
	while (next_map_line(maps, &m)) {
		if (m.start <= addr && addr < m.end) {
			fclose(maps);
			return m;
		}
	}
	fclose(maps);
	cr_assert_fail("no mapping of pid %d holds 0x%" PRIx64, (int)pid, addr);
	return m;
}

static struct rv_symbolizer *new_symbolizer(bool want_lines, const char *kallsyms)
{
	struct rv_symbolizer_options options = { .kallsyms_path = kallsyms,
						 .want_lines = want_lines };
	struct rv_symbolizer *s = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_symbolizer_new(&s, &options, &err), 0, "%s", err.message);
	cr_assert(s);
	return s;
}

/* The line of tests/targets/NAME carrying the comment LINE:<tag>. */
static int marked_line(const char *source, const char *tag)
{
	char path[256], line[512], marker[128];
	int number = 0;
	FILE *f;

	snprintf(path, sizeof(path), "tests/targets/%s", source);
	snprintf(marker, sizeof(marker), "LINE:%s ", tag);
	f = fopen(path, "r");
	cr_assert(f, "cannot read %s (run the tests from the repository root)", path);
	while (fgets(line, sizeof(line), f)) {
		number++;
		if (strstr(line, marker)) {
			fclose(f);
			return number;
		}
	}
	fclose(f);
	cr_assert_fail("no LINE:%s in %s", tag, path);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void expect_function(struct rv_symbolizer *s, pid_t pid, uint64_t addr, const char *name,
			    const char *module)
{
	struct rv_symbol sym;

	/* At its first byte and inside it. */
	for (uint64_t delta = 0; delta <= 3; delta += 3) {
		rv_symbolizer_lookup(s, (uint32_t)pid, addr + delta, &sym);
		cr_assert(sym.known, "0x%" PRIx64 " (%s) not known: got '%s'", addr + delta, name,
			  sym.name);
		cr_assert_str_eq(sym.name, name);
		cr_assert_eq(sym.start, addr, "%s starts at 0x%" PRIx64 ", not 0x%" PRIx64, name,
			     sym.start, addr);
		cr_assert_str_eq(sym.module, module);
		cr_assert_not(sym.kernel);
	}
	cr_assert_gt(sym.size, 3, "%s: size %" PRIu64, name, sym.size);
	/* Its end is where it ends: the next byte belongs to someone else. */
	rv_symbolizer_lookup(s, (uint32_t)pid, addr + sym.size, &sym);
	cr_assert(sym.start != addr, "%s extends past its size", name);
}

static uint16_t elf_type_of(const char *path)
{
	unsigned char header[18];
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(read(fd, header, sizeof(header)), (ssize_t)sizeof(header));
	close(fd);
	return (uint16_t)(header[16] | header[17] << 8);
}

Test(symbolizer, names_c_functions_of_an_aslr_pie_process)
{
	static const char *const functions[] = { "sym_c_deepest", "inner_static", "sym_c_middle",
						 "sym_c_outer", "main" };
	struct rv_symbolizer_stats stats;
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct target t;
	char path[256];

	target_path(path, sizeof(path), "sym_c");
	cr_assert_eq(elf_type_of(path), 3 /* ET_DYN */, "the target should be a PIE");
	start_target(&t, path);
	report_maps(s, t.pid);
	/* ASLR placed it far from its link-time addresses (which start at 0). */
	cr_assert_gt(truth_of(&t, "main"), 0x100000);
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
		expect_function(s, t.pid, truth_of(&t, functions[i]), functions[i], "sym_c");
	/* A shared library whose code is not in its first PT_LOAD. */
	expect_function(s, t.pid, truth_of(&t, "strerror"), "strerror", "libc.so.6");
	rv_symbolizer_stats(s, &stats);
	cr_assert_geq(stats.modules, 2);
	cr_assert_eq(stats.missing_files, 0);
	stop_target(&t);
	rv_symbolizer_free(s);
}

Test(symbolizer, finds_dwarf_file_and_line)
{
	struct rv_symbolizer *s = new_symbolizer(true, NULL);
	struct rv_symbol sym;
	struct target t;
	char path[256];
	int expected_line = marked_line("sym_c.c", "call_deepest");

	target_path(path, sizeof(path), "sym_c");
	start_target(&t, path);
	report_maps(s, t.pid);
	/* Inside the call instruction that returns to call_site. */
	rv_symbolizer_lookup(s, (uint32_t)t.pid, truth_of(&t, "call_site") - 1, &sym);
	cr_assert_str_eq(sym.name, "inner_static");
	cr_assert(sym.file, "no source file for inner_static");
	cr_assert(ends_with(sym.file, "sym_c.c"), "file is '%s'", sym.file);
	cr_assert_eq(sym.line, expected_line);
	stop_target(&t);
	rv_symbolizer_free(s);
}

/* rv_symbolizer_source, what a span's arguments show: the line-table row of
 * a function's first byte (gcc puts it at the opening brace), with or without
 * want_lines, cached; nothing for kernel and unmapped addresses. */
Test(symbolizer, source_line_of_a_function_start)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_source src, again;
	struct target t;
	char path[256];
	int expected_line = marked_line("sym_c.c", "middle_start");

	target_path(path, sizeof(path), "sym_c");
	start_target(&t, path);
	report_maps(s, t.pid);
	cr_assert(rv_symbolizer_source(s, (uint32_t)t.pid, truth_of(&t, "sym_c_middle"), &src));
	cr_assert(ends_with(src.file, "sym_c.c"), "file is '%s'", src.file);
	cr_assert_eq(src.line, expected_line, "line %d, the source has it at %d", src.line,
		     expected_line);
	cr_assert(rv_symbolizer_source(s, (uint32_t)t.pid, truth_of(&t, "sym_c_middle"), &again));
	cr_assert_eq(again.file, src.file, "the same string, kept once");
	cr_assert_eq(again.line, src.line);
	cr_assert_eq(again.column, src.column);
	cr_assert_not(rv_symbolizer_source(s, (uint32_t)t.pid, 0xffffffff81000000ull, &src));
	cr_assert_null(src.file);
	cr_assert_not(rv_symbolizer_source(s, (uint32_t)t.pid, 0x1000, &src), "unmapped");
	cr_assert_not(rv_symbolizer_source(s, (uint32_t)t.pid + 1000000, 0x1000, &src),
		      "no such process");
	/* the last answer is its process's: not another's at the same
	 * address, nor the process's once it is forgotten */
	cr_assert(rv_symbolizer_source(s, (uint32_t)t.pid, truth_of(&t, "sym_c_middle"), &src));
	cr_assert_not(rv_symbolizer_source(s, (uint32_t)t.pid + 1000000,
					   truth_of(&t, "sym_c_middle"), &again));
	cr_assert_null(again.file);
	cr_assert(rv_symbolizer_source(s, (uint32_t)t.pid, truth_of(&t, "sym_c_middle"), &again));
	cr_assert_eq(again.file, src.file);
	rv_symbolizer_forget_process(s, (uint32_t)t.pid);
	cr_assert_not(rv_symbolizer_source(s, (uint32_t)t.pid, truth_of(&t, "sym_c_middle"), &src),
		      "a forgotten process");
	stop_target(&t);
	rv_symbolizer_free(s);
}

Test(symbolizer, without_lines_gives_no_file)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symbol sym;
	struct target t;
	char path[256];

	target_path(path, sizeof(path), "sym_c");
	start_target(&t, path);
	report_maps(s, t.pid);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, truth_of(&t, "call_site") - 1, &sym);
	cr_assert_str_eq(sym.name, "inner_static");
	cr_assert_null(sym.file);
	cr_assert_eq(sym.line, 0);
	stop_target(&t);
	rv_symbolizer_free(s);
}

Test(symbolizer, demangles_cpp_names)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct target t;
	char path[256];

	target_path(path, sizeof(path), "sym_cpp");
	start_target(&t, path);
	cr_assert_eq(t.nr_truths, 6);
	report_maps(s, t.pid);
	for (size_t i = 0; i < t.nr_truths; i++)
		expect_function(s, t.pid, t.truths[i].addr, t.truths[i].name, "sym_cpp");
	stop_target(&t);
	rv_symbolizer_free(s);
}

/* A file's functions with a size, from its symbol table. */
struct functions {
	struct {
		char name[64];
		uint64_t addr, size;
	} v[64];
	size_t nr;
};

static int add_function(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct functions *f = ctx;

	cr_assert_lt(f->nr, sizeof(f->v) / sizeof(f->v[0]));
	snprintf(f->v[f->nr].name, sizeof(f->v[f->nr].name), "%s", sym->name);
	f->v[f->nr].addr = sym->addr;
	f->v[f->nr].size = sym->size;
	f->nr++;
	return 0;
}

static void read_functions(const char *path, struct functions *out)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };

	memset(out, 0, sizeof(*out));
	cr_assert_eq(rv_symtab_file_open(&f, path, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	rv_symtab_read(&src, RV_SYMTAB_SIZED, add_function, out);
	rv_symtab_file_close(&f);
}

static uint64_t function_addr(const struct functions *f, const char *name)
{
	for (size_t i = 0; i < f->nr; i++)
		if (!strcmp(f->v[i].name, name))
			return f->v[i].addr;
	cr_assert_fail("no function %s", name);
	return 0;
}

/* A stripped file's functions are named after their call frame information,
 * one name per function: checked against the unstripped file's symbols
 * (same code, same addresses), at each function's first, middle and last
 * byte. */
Test(symbolizer, names_stripped_code_by_function)
{
	static const char *const own[] = { "sym_c_deepest", "inner_static", "sym_c_middle",
					   "sym_c_outer",   "main",	    "_start" };
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	const char *names[64] = { 0 };
	struct functions functions;
	struct rv_symtab_fdes fdes;
	struct rv_symtab_file file;
	struct rv_error err = { 0 };
	struct rv_symbol sym, again;
	char path[256], unstripped[256], expected[128];
	uint64_t bias, addr;
	struct map_line m;
	struct target t;
	size_t named = 0;

	target_path(path, sizeof(path), "sym_c.stripped");
	target_path(unstripped, sizeof(unstripped), "sym_c");
	read_functions(unstripped, &functions);
	start_target(&t, path);
	report_maps(s, t.pid);
	bias = truth_of(&t, "main") - function_addr(&functions, "main");
	for (size_t i = 0; i < functions.nr; i++) {
		const uint64_t offsets[] = { 0, functions.v[i].size / 2, functions.v[i].size - 1 };
		bool is_own = false;

		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
			is_own |= !strcmp(functions.v[i].name, own[k]);
		snprintf(expected, sizeof(expected), "sym_c.stripped!fn_%" PRIx64,
			 functions.v[i].addr);
		for (size_t k = 0; k < 3; k++) {
			rv_symbolizer_lookup(s, (uint32_t)t.pid,
					     bias + functions.v[i].addr + offsets[k], &sym);
			if (!is_own && strncmp(sym.name, "sym_c.stripped!fn_", 18))
				continue; /* code without call frame information */
			cr_assert_str_eq(sym.name, expected, "%s+%" PRIu64, functions.v[i].name,
					 offsets[k]);
			cr_assert(sym.known);
			cr_assert_eq(sym.start, bias + functions.v[i].addr, "%s", sym.name);
			cr_assert_eq(sym.size, functions.v[i].size, "%s", functions.v[i].name);
			cr_assert_str_eq(sym.module, "sym_c.stripped");
			if (k == 0)
				names[named++] = sym.name;
		}
	}
	cr_assert_geq(named, sizeof(own) / sizeof(own[0]));
	for (size_t i = 0; i < named; i++)
		for (size_t j = i + 1; j < named; j++)
			cr_assert_neq(names[i], names[j], "two functions named %s", names[i]);

	/* Code without call frame information (crtstuff's frame_dummy, built
	 * without unwind tables) is still named by its file offset. */
	addr = bias + nm_symbol(unstripped, "frame_dummy", NULL);
	cr_assert_eq(rv_symtab_file_open(&file, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_symtab_fdes_open(&fdes, file.elf), 0);
	cr_assert_geq(fdes.nr, sizeof(own) / sizeof(own[0]));
	cr_assert_null(rv_symtab_fde_find(&fdes, addr - bias), "frame_dummy has an FDE");
	rv_symtab_fdes_close(&fdes);
	rv_symtab_file_close(&file);
	m = mapping_of(t.pid, addr);
	snprintf(expected, sizeof(expected), "sym_c.stripped+0x%" PRIx64, addr - m.start + m.pgoff);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, addr, &sym);
	cr_assert_str_eq(sym.name, expected);
	cr_assert_not(sym.known);
	cr_assert_eq(sym.start, addr);
	cr_assert_eq(sym.size, 0);
	/* Stripped of .symtab, libc still has its dynamic symbols (and maybe a .debug file). */
	expect_function(s, t.pid, truth_of(&t, "strerror"), "strerror", "libc.so.6");
	/* The cache gives the same answer, pointer for pointer. */
	addr = truth_of(&t, "sym_c_middle") + 2;
	rv_symbolizer_lookup(s, (uint32_t)t.pid, addr, &sym);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, addr, &again);
	cr_assert_eq(again.name, sym.name);
	stop_target(&t);
	rv_symbolizer_free(s);
}

/* A file with symbols of its own is named as before: code that no symbol
 * names there (the PLT, whose FDE the linker wrote) keeps its offset name,
 * not an FDE's. */
Test(symbolizer, code_without_symbols_in_an_unstripped_file_is_named_by_offset)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symtab_fdes fdes;
	struct rv_symtab_file file;
	struct rv_symtab *table;
	struct rv_error err = { 0 };
	const struct rv_symtab_range *unnamed = NULL;
	struct functions functions;
	struct rv_symbol sym;
	struct map_line m;
	struct target t;
	char path[256], expected[128];
	uint64_t bias, addr;

	target_path(path, sizeof(path), "sym_c");
	read_functions(path, &functions);
	cr_assert_eq(rv_symtab_file_open(&file, path, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = file.elf };

	cr_assert_eq(rv_symtab_build(&table, &src), 0);
	cr_assert_eq(rv_symtab_fdes_open(&fdes, file.elf), 0);
	for (size_t i = 0; i < fdes.nr && !unnamed; i++) {
		const struct rv_symtab_range *fde = rv_symtab_fde_find(&fdes, fdes.v[i].start);

		if (fde && !rv_symtab_names_any(table, fde->start, fde->end))
			unnamed = fde;
	}
	cr_assert(unnamed, "every FDE of sym_c is named (no PLT?)");
	start_target(&t, path);
	report_maps(s, t.pid);
	bias = truth_of(&t, "main") - function_addr(&functions, "main");
	addr = bias + unnamed->start + 1;
	m = mapping_of(t.pid, addr);
	snprintf(expected, sizeof(expected), "sym_c+0x%" PRIx64, addr - m.start + m.pgoff);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, addr, &sym);
	cr_assert_str_eq(sym.name, expected);
	cr_assert_not(sym.known);
	stop_target(&t);
	rv_symtab_fdes_close(&fdes);
	rv_symtab_file_close(&file);
	rv_symtab_free(table);
	rv_symbolizer_free(s);
}

/* sym_c.minidebug has no .symtab but MiniDebugInfo (mk/debuginfo.mk):
 * libdwfl reads the compressed symbol table, and its functions have their
 * names. */
Test(symbolizer, reads_mini_debuginfo)
{
	static const char *const functions[] = { "sym_c_deepest", "inner_static", "sym_c_middle",
						 "sym_c_outer", "main" };
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symtab_file file;
	struct rv_error err = { 0 };
	struct target t;
	char path[256];
	bool mini_debuginfo = false;

	target_path(path, sizeof(path), "sym_c.minidebug");
	cr_assert_eq(rv_symtab_file_open(&file, path, &err), 0, "%s", err.message);
	cr_assert(rv_symtab_stripped(file.elf, &mini_debuginfo), "it has a .symtab");
	cr_assert(mini_debuginfo, "it has no .gnu_debugdata");
	rv_symtab_file_close(&file);
	start_target(&t, path);
	report_maps(s, t.pid);
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
		expect_function(s, t.pid, truth_of(&t, functions[i]), functions[i],
				"sym_c.minidebug");
	stop_target(&t);
	rv_symbolizer_free(s);
}

/* A debug file found by build ID in a debug directory, as Debian's -dbgsym
 * packages install them in /usr/lib/debug: here REARVIEW_DEBUG_DIRS names
 * build/tests/targets/sym_c.debugroot (mk/debuginfo.mk), which holds
 * sym_c's under .build-id/; sym_c.stripped has the same build ID and no
 * debuglink. Names and lines come from it; without it, none. */
Test(symbolizer, finds_debug_files_by_build_id_in_the_debug_dirs)
{
	struct rv_symbolizer *s, *without;
	struct rv_symbol sym;
	struct target t;
	char path[256], root[256], *absolute;

	target_path(path, sizeof(path), "sym_c.stripped");
	target_path(root, sizeof(root), "sym_c.debugroot");
	absolute = realpath(root, NULL);
	cr_assert(absolute, "%s is missing: run make first", root);
	without = new_symbolizer(false, NULL);
	cr_assert_eq(setenv("REARVIEW_DEBUG_DIRS", absolute, 1), 0);
	s = new_symbolizer(true, NULL);
	start_target(&t, path);
	report_maps(s, t.pid);
	report_maps(without, t.pid);
	expect_function(s, t.pid, truth_of(&t, "inner_static"), "inner_static", "sym_c.stripped");
	expect_function(s, t.pid, truth_of(&t, "main"), "main", "sym_c.stripped");
	rv_symbolizer_lookup(s, (uint32_t)t.pid, truth_of(&t, "call_site") - 1, &sym);
	cr_assert_str_eq(sym.name, "inner_static");
	cr_assert(sym.file && ends_with(sym.file, "sym_c.c"));
	cr_assert_eq(sym.line, marked_line("sym_c.c", "call_deepest"));
	rv_symbolizer_lookup(without, (uint32_t)t.pid, truth_of(&t, "inner_static"), &sym);
	cr_assert(strncmp(sym.name, "sym_c.stripped!fn_", 18) == 0,
		  "named without the debug directory: %s", sym.name);
	stop_target(&t);
	rv_symbolizer_free(s);
	rv_symbolizer_free(without);
	unsetenv("REARVIEW_DEBUG_DIRS");
	free(absolute);
}

static void run_shell(const char *command)
{
	int status = system(command);

	cr_assert(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "'%s' failed",
		  command);
}

Test(symbolizer, uses_a_separate_debug_file)
{
	struct rv_symbolizer *s = new_symbolizer(true, NULL);
	char dir[] = "/tmp/rv-symbolizer-XXXXXX", original[256], stripped[300], command[1024];
	struct rv_symbol sym;
	struct target t;

	cr_assert(mkdtemp(dir));
	target_path(original, sizeof(original), "sym_c");
	snprintf(stripped, sizeof(stripped), "%s/sym_c_split", dir);
	/* The classic split: symbols and DWARF in NAME.debug beside the binary,
	 * found through the binary's .gnu_debuglink. */
	snprintf(command, sizeof(command),
		 "objcopy --only-keep-debug %s %s/sym_c_split.debug && "
		 "objcopy --strip-all --add-gnu-debuglink=%s/sym_c_split.debug %s %s",
		 original, dir, dir, original, stripped);
	run_shell(command);
	start_target(&t, stripped);
	report_maps(s, t.pid);
	expect_function(s, t.pid, truth_of(&t, "inner_static"), "inner_static", "sym_c_split");
	rv_symbolizer_lookup(s, (uint32_t)t.pid, truth_of(&t, "call_site") - 1, &sym);
	cr_assert_str_eq(sym.name, "inner_static");
	cr_assert(sym.file && ends_with(sym.file, "sym_c.c"));
	cr_assert_eq(sym.line, marked_line("sym_c.c", "call_deepest"));
	stop_target(&t);
	rv_symbolizer_free(s);
	snprintf(command, sizeof(command), "rm -rf %s", dir);
	run_shell(command);
}

/* clang emits no .debug_aranges and DWARF 5 units, which elfutils 0.188's own
 * lookup cannot place; lines must still be found. */
Test(symbolizer, finds_lines_in_a_clang_binary)
{
	struct rv_symbolizer *s = new_symbolizer(true, NULL);
	char dir[] = "/tmp/rv-symbolizer-XXXXXX", binary[300], command[1024];
	struct rv_symbol sym;
	struct target t;

	cr_assert(mkdtemp(dir));
	snprintf(binary, sizeof(binary), "%s/sym_c_clang", dir);
	snprintf(command, sizeof(command),
		 "clang -O1 -g -fno-omit-frame-pointer -o %s tests/targets/sym_c.c 2>/dev/null",
		 binary);
	run_shell(command);
	start_target(&t, binary);
	report_maps(s, t.pid);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, truth_of(&t, "call_site") - 1, &sym);
	cr_assert_str_eq(sym.name, "inner_static");
	cr_assert(sym.file && ends_with(sym.file, "sym_c.c"), "file is '%s'",
		  sym.file ? sym.file : "(none)");
	cr_assert_eq(sym.line, marked_line("sym_c.c", "call_deepest"));
	stop_target(&t);
	rv_symbolizer_free(s);
	snprintf(command, sizeof(command), "rm -rf %s", dir);
	run_shell(command);
}

Test(symbolizer, names_a_non_pie_executable)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	char dir[] = "/tmp/rv-symbolizer-XXXXXX", binary[300], command[1024];
	struct target t;

	cr_assert(mkdtemp(dir));
	snprintf(binary, sizeof(binary), "%s/sym_c_exec", dir);
	snprintf(command, sizeof(command),
		 "cc -O1 -g -fno-omit-frame-pointer -fno-pie -no-pie -o %s tests/targets/sym_c.c",
		 binary);
	run_shell(command);
	cr_assert_eq(elf_type_of(binary), 2 /* ET_EXEC */);
	start_target(&t, binary);
	report_maps(s, t.pid);
	expect_function(s, t.pid, truth_of(&t, "sym_c_outer"), "sym_c_outer", "sym_c_exec");
	expect_function(s, t.pid, truth_of(&t, "inner_static"), "inner_static", "sym_c_exec");
	stop_target(&t);
	rv_symbolizer_free(s);
	snprintf(command, sizeof(command), "rm -rf %s", dir);
	run_shell(command);
}

Test(symbolizer, names_what_it_cannot_read)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symbolizer_stats stats;
	struct rv_error err = { 0 };
	struct rv_symbol sym;

	cr_assert_eq(rv_symbolizer_add_mapping(s, 42, 0x7f0000000000, 0x3000, 0x1000, true,
					       "/nonexistent/dir/libgone.so.1", &err),
		     0);
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 42, 0x7ffff7fc1000, 0x2000, 0, true, "[vdso]", &err),
		0);
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 42, 0x500000, 0x1000, 0, false, "/usr/bin/true", &err),
		0);
	rv_symbolizer_lookup(s, 42, 0x7f0000000010, &sym);
	cr_assert_str_eq(sym.name, "libgone.so.1+0x1010");
	cr_assert_str_eq(sym.module, "libgone.so.1");
	cr_assert_not(sym.known);
	cr_assert_eq(sym.start, 0x7f0000000010);
	rv_symbolizer_lookup(s, 42, 0x7f0000002fff, &sym);
	cr_assert_str_eq(sym.name, "libgone.so.1+0x3fff");
	rv_symbolizer_lookup(s, 42, 0x7ffff7fc1a10, &sym);
	cr_assert_str_eq(sym.name, "[vdso]+0xa10");
	cr_assert_str_eq(sym.module, "[vdso]");
	cr_assert_not(sym.known);
	/* Not executable: ignored, so the address is just an address. */
	rv_symbolizer_lookup(s, 42, 0x500010, &sym);
	cr_assert_str_eq(sym.name, "0x500010");
	cr_assert_str_eq(sym.module, "");
	/* Beyond every mapping, and in a process nobody reported. */
	rv_symbolizer_lookup(s, 42, 0x7f0000003000, &sym);
	cr_assert_str_eq(sym.name, "0x7f0000003000");
	rv_symbolizer_lookup(s, 4242, 0xdeadbeef, &sym);
	cr_assert_str_eq(sym.name, "0xdeadbeef");
	cr_assert_not(sym.known);
	cr_assert_eq(sym.start, 0xdeadbeef);
	cr_assert_null(rv_symbolizer_dwfl(s, 4242));
	rv_symbolizer_stats(s, &stats);
	cr_assert_eq(stats.missing_files, 1);
	rv_symbolizer_free(s);
}

Test(symbolizer, mapping_changes_reach_cached_names)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_error err = { 0 };
	struct rv_symbol sym;

	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 7, 0x10000000, 0x1000, 0, true, "/gone/a.so", &err),
		0);
	/* twice: the second answer is the cache's, and the one it keeps as
	 * its last */
	for (int i = 0; i < 2; i++) {
		rv_symbolizer_lookup(s, 7, 0x20000010, &sym);
		cr_assert_str_eq(sym.name, "0x20000010");
	}
	/* A later mmap (dlopen) covers the address looked up before. */
	cr_assert_eq(rv_symbolizer_add_mapping(s, 7, 0x20000000, 0x1000, 0x4000, true, "/gone/b.so",
					       &err),
		     0);
	rv_symbolizer_lookup(s, 7, 0x20000010, &sym);
	cr_assert_str_eq(sym.name, "b.so+0x4010");
	/* Another mapping replaces part of it. */
	rv_symbolizer_lookup(s, 7, 0x20000010, &sym);
	cr_assert_str_eq(sym.name, "b.so+0x4010");
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 7, 0x20000000, 0x800, 0, true, "/gone/c.so", &err), 0);
	rv_symbolizer_lookup(s, 7, 0x20000010, &sym);
	cr_assert_str_eq(sym.name, "c.so+0x10");
	rv_symbolizer_lookup(s, 7, 0x20000810, &sym);
	cr_assert_str_eq(sym.name, "b.so+0x4810");
	/* And one lands in the middle of what is left. */
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 7, 0x20000900, 0x100, 0, true, "/gone/d.so", &err), 0);
	rv_symbolizer_lookup(s, 7, 0x20000850, &sym);
	cr_assert_str_eq(sym.name, "b.so+0x4850");
	rv_symbolizer_lookup(s, 7, 0x20000950, &sym);
	cr_assert_str_eq(sym.name, "d.so+0x50");
	rv_symbolizer_lookup(s, 7, 0x20000a10, &sym);
	cr_assert_str_eq(sym.name, "b.so+0x4a10");
	for (int i = 0; i < 2; i++) {
		rv_symbolizer_lookup(s, 7, 0x10000010, &sym);
		cr_assert_str_eq(sym.name, "a.so+0x10");
	}
	/* exec: everything goes. */
	rv_symbolizer_forget_process(s, 7);
	rv_symbolizer_lookup(s, 7, 0x20000010, &sym);
	cr_assert_str_eq(sym.name, "0x20000010");
	rv_symbolizer_lookup(s, 7, 0x10000010, &sym);
	cr_assert_str_eq(sym.name, "0x10000010");
	cr_assert_null(rv_symbolizer_dwfl(s, 7));
	rv_symbolizer_free(s);
}

/* A process looked up before anything was reported of it (it has none of
 * its names then) is named once its mappings come; rv_symbolizer_find
 * gives what rv_symbolizer_lookup copies. */
Test(symbolizer, a_process_reported_after_its_first_lookup_is_named)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	const struct rv_symbol *found;
	struct rv_error err = { 0 };
	struct rv_source src;
	struct rv_symbol sym;

	for (int i = 0; i < 2; i++) {
		rv_symbolizer_lookup(s, 9, 0x10000010 + i, &sym);
		cr_assert_not(sym.known);
		cr_assert_not(rv_symbolizer_source(s, 9, 0x10000010, &src));
	}
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 9, 0x10000000, 0x1000, 0, true, "/gone/late.so", &err),
		0);
	rv_symbolizer_lookup(s, 9, 0x10000010, &sym);
	cr_assert_str_eq(sym.name, "late.so+0x10");
	found = rv_symbolizer_find(s, 9, 0x10000011);
	cr_assert_str_eq(found->name, "late.so+0x11");
	cr_assert_str_eq(found->module, "late.so");
	cr_assert_eq(found->start, 0x10000011);
	found = rv_symbolizer_find(s, 9, 0x10000010);
	cr_assert_eq(found->name, sym.name);
	cr_assert_eq(found->module, sym.module);
	cr_assert_eq(found->file, sym.file);
	cr_assert_eq(found->start, sym.start);
	cr_assert_eq(found->size, sym.size);
	cr_assert_eq(found->line, sym.line);
	cr_assert_eq(found->known, sym.known);
	cr_assert_eq(found->kernel, sym.kernel);
	/* and another process, unreported, in between */
	rv_symbolizer_lookup(s, 10, 0x10000010, &sym);
	cr_assert_str_eq(sym.name, "0x10000010");
	rv_symbolizer_lookup(s, 9, 0x10000010, &sym);
	cr_assert_str_eq(sym.name, "late.so+0x10");
	rv_symbolizer_free(s);
}

/* The cache starts again empty when full, marking every process as having
 * nothing cached; the answer whose insert emptied it is cached all the
 * same, so its process must count as cached, or a mapping reported later
 * leaves that answer in place. */
Test(symbolizer, a_mapping_after_the_cache_starts_again_reaches_the_last_answer)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_error err = { 0 };
	struct rv_symbol sym;
	const uint64_t base = 0x10000000, n = 1u << 19; /* the cache holds half its 2^20 slots */
	uint64_t addr = base;

	cr_assert_eq(rv_symbolizer_add_mapping(s, 9, base, 2 * n, 0, true, "/gone/old.so", &err),
		     0);
	for (uint64_t i = 0; i <= n; i++) {
		addr = base + i;
		rv_symbolizer_lookup(s, 9, addr, &sym);
	}
	cr_assert_str_eq(sym.name, "old.so+0x80000");
	cr_assert_eq(rv_symbolizer_add_mapping(s, 9, addr, 0x1000, 0, true, "/gone/new.so", &err),
		     0);
	rv_symbolizer_lookup(s, 9, addr, &sym);
	cr_assert_str_eq(sym.name, "new.so+0x0", "the answer cached as the cache emptied: %s",
			 sym.name);
	rv_symbolizer_free(s);
}

/* The cache keeps its last entry by address, for the next lookup of the
 * same address: another process's (at the same address), and the cache
 * growing under it (its entries move), must not reach it. */
Test(symbolizer, last_cached_name_is_per_process_and_survives_growth)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symbolizer_stats before, after;
	struct rv_error err = { 0 };
	struct rv_symbol sym;
	char expected[64];

	cr_assert_eq(
		rv_symbolizer_add_mapping(s, 1, 0x10000000, 0x10000, 0, true, "/gone/one.so", &err),
		0);
	cr_assert_eq(rv_symbolizer_add_mapping(s, 2, 0x10000000, 0x10000, 0x2000, true,
					       "/gone/two.so", &err),
		     0);
	/* thousands of addresses: the cache grows past its first sizes */
	for (uint64_t i = 0; i < 10000; i++) {
		rv_symbolizer_lookup(s, 1, 0x10000000 + i, &sym);
		snprintf(expected, sizeof(expected), "one.so+0x%" PRIx64, i);
		cr_assert_str_eq(sym.name, expected);
		for (int twice = 0; twice < 2; twice++) {
			rv_symbolizer_lookup(s, 2, 0x10000000 + i, &sym);
			snprintf(expected, sizeof(expected), "two.so+0x%" PRIx64, 0x2000 + i);
			cr_assert_str_eq(sym.name, expected);
			cr_assert_str_eq(sym.module, "two.so");
			cr_assert_eq(sym.start, 0x10000000 + i);
		}
		rv_symbolizer_lookup(s, 1, 0x10000000, &sym);
		cr_assert_str_eq(sym.name, "one.so+0x0");
		cr_assert_str_eq(sym.module, "one.so");
	}
	/* and every answer is still there, from the cache */
	rv_symbolizer_stats(s, &before);
	for (uint64_t i = 0; i < 10000; i++) {
		rv_symbolizer_lookup(s, 1, 0x10000000 + i, &sym);
		snprintf(expected, sizeof(expected), "one.so+0x%" PRIx64, i);
		cr_assert_str_eq(sym.name, expected);
		cr_assert_not(sym.known);
	}
	rv_symbolizer_stats(s, &after);
	cr_assert_eq(after.cache_hits - before.cache_hits, 10000);
	rv_symbolizer_free(s);
}

Test(symbolizer, cache_gives_the_same_pointers)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_symbolizer_stats before, after;
	struct rv_symbol a, b, c;
	struct target t;
	char path[256];
	uint64_t middle;

	target_path(path, sizeof(path), "sym_c");
	start_target(&t, path);
	report_maps(s, t.pid);
	middle = truth_of(&t, "sym_c_middle");
	rv_symbolizer_lookup(s, (uint32_t)t.pid, middle + 1, &a);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, middle + 5, &b);
	cr_assert_eq(a.name, b.name, "one function, one name pointer");
	cr_assert_eq(a.module, b.module);
	rv_symbolizer_stats(s, &before);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, middle + 1, &c);
	rv_symbolizer_stats(s, &after);
	cr_assert_eq(after.lookups, before.lookups + 1);
	cr_assert_eq(after.cache_hits, before.cache_hits + 1);
	cr_assert_eq(c.name, a.name);
	cr_assert_eq(c.start, a.start);
	cr_assert_eq(c.size, a.size);
	cr_assert_eq(c.known, a.known);
	/* The same name in another process is the same pointer too. */
	{
		struct rv_symbol other;
		struct target t2;

		start_target(&t2, path);
		report_maps(s, t2.pid);
		rv_symbolizer_lookup(s, (uint32_t)t2.pid, truth_of(&t2, "sym_c_middle") + 2,
				     &other);
		cr_assert_eq(other.name, a.name);
		stop_target(&t2);
	}
	stop_target(&t);
	rv_symbolizer_free(s);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f);
	fputs(text, f);
	fclose(f);
}

Test(symbolizer, names_jit_code_from_perf_map)
{
	/* A pid no process has (above the default pid_max), so the map is ours. */
	const uint32_t pid = 4199999;
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	struct rv_error err = { 0 };
	char path[64];
	struct rv_symbol sym, again;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	write_file(path, "7f1200001000 40 LazyCompile:*fib app.js:3\n"
			 "not a line\n"
			 "7f1200001100 80 Builtin:ArgumentsAdaptor\n");
	cr_assert_eq(
		rv_symbolizer_add_mapping(s, pid, 0x7f1200000000, 0x10000, 0, true, "//anon", &err),
		0);
	rv_symbolizer_lookup(s, pid, 0x7f1200001010, &sym);
	cr_assert_str_eq(sym.name, "LazyCompile:*fib app.js:3");
	cr_assert(sym.known);
	cr_assert_eq(sym.start, 0x7f1200001000);
	cr_assert_eq(sym.size, 0x40);
	cr_assert_str_eq(sym.module, "perf-4199999.map");
	rv_symbolizer_lookup(s, pid, 0x7f1200001050, &sym);
	cr_assert_str_eq(sym.name, "0x7f1200001050", "between JIT symbols");
	rv_symbolizer_lookup(s, pid, 0x7f120000117f, &sym);
	cr_assert_str_eq(sym.name, "Builtin:ArgumentsAdaptor");
	rv_symbolizer_lookup(s, pid, 0x7f120000117f, &again);
	cr_assert_eq(again.name, sym.name);
	rv_symbolizer_free(s);
	unlink(path);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

Test(symbolizer, adds_libraries_mapped_later)
{
	struct rv_symbolizer *s = new_symbolizer(false, NULL);
	uint64_t json_array_at = (uint64_t)(uintptr_t)&json_array;
	uint64_t own_function = (uint64_t)(uintptr_t)&target_path;
	struct map_line lib = mapping_of(getpid(), json_array_at);
	struct map_line self_map = mapping_of(getpid(), own_function);
	struct rv_symbol sym;
	pid_t self = getpid();

	cr_assert(strstr(lib.path, "libjansson.so"), "json_array is in '%s'", lib.path);
	/* This test program, without libjansson at first, as if it came by dlopen
	 * (a library the tests alone link, so always shared). */
	report_maps_as(s, self, "libjansson.so", NULL, NULL);
	expect_function(s, self, own_function, "target_path", basename_of(self_map.path));
	cr_assert(rv_symbolizer_dwfl(s, (uint32_t)self));
	rv_symbolizer_lookup(s, (uint32_t)self, json_array_at, &sym);
	cr_assert_not(sym.known, "libjansson is not reported yet, got '%s'", sym.name);
	report_maps(s, self);
	/* libjansson ships stripped: its exported functions come from .dynsym. */
	expect_function(s, self, json_array_at, "json_array", basename_of(lib.path));
	expect_function(s, self, own_function, "target_path", basename_of(self_map.path));
	rv_symbolizer_free(s);
}

Test(symbolizer, names_kernel_addresses_from_a_kallsyms_file)
{
	char path[] = "/tmp/rv-kallsyms-XXXXXX";
	struct rv_symbolizer_stats stats;
	struct rv_symbolizer *s;
	struct rv_symbol sym;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	write_file(path, "ffffffff81000000 T _stext\n"
			 "ffffffff81000100 t helper_local\n"
			 "ffffffff81000180 D some_data\n"
			 "ffffffff81000300 W weak_fn\n"
			 "ffffffff81000300 t __weak_fn_alias\n"
			 "ffffffff81000400 T last_core\n"
			 "ffffffffc0001000 t mod_func\t[mymod]\n"
			 "ffffffffc0001080 T mod_func2\t[mymod]\n"
			 "garbage line\n");
	s = new_symbolizer(false, path);
	rv_symbolizer_lookup(s, 1, 0xffffffff81000150, &sym);
	cr_assert_str_eq(sym.name, "helper_local");
	cr_assert(sym.known && sym.kernel);
	cr_assert_eq(sym.start, 0xffffffff81000100);
	cr_assert_eq(sym.size, 0x200, "data symbols do not end functions");
	cr_assert_str_eq(sym.module, "[kernel.kallsyms]");
	rv_symbolizer_lookup(s, 1, 0xffffffff81000300, &sym);
	cr_assert_str_eq(sym.name, "weak_fn");
	rv_symbolizer_lookup(s, 99, 0xffffffffc0001090, &sym);
	cr_assert_str_eq(sym.name, "mod_func2");
	cr_assert_eq(sym.start, 0xffffffffc0001080);
	rv_symbolizer_lookup(s, 1, 0xffffffffc0001010, &sym);
	cr_assert_str_eq(sym.name, "mod_func");
	cr_assert_eq(sym.size, 0x80);
	/* The last core symbol does not swallow the gap up to the modules. */
	rv_symbolizer_lookup(s, 1, 0xffffffff90000000, &sym);
	cr_assert_not(sym.known);
	cr_assert_str_eq(sym.name, "0xffffffff90000000");
	cr_assert(sym.kernel);
	rv_symbolizer_lookup(s, 1, 0xffff800000001000, &sym);
	cr_assert_str_eq(sym.name, "0xffff800000001000");
	rv_symbolizer_stats(s, &stats);
	cr_assert_eq(stats.kernel_symbols, 6);
	rv_symbolizer_free(s);
	unlink(path);
}

Test(symbolizer, refuses_unusable_kallsyms)
{
	struct rv_symbolizer_options options = { .kallsyms_path = "/nonexistent/kallsyms" };
	char path[] = "/tmp/rv-kallsyms-XXXXXX";
	struct rv_symbolizer *s = NULL;
	struct rv_error err = { 0 };
	int fd;

	cr_assert_eq(rv_symbolizer_new(&s, &options, &err), -ENOENT);
	cr_assert_null(s);
	cr_assert(strstr(err.message, "/nonexistent/kallsyms"), "%s", err.message);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	/* What an unprivileged reader sees with kptr_restrict set. */
	write_file(path, "0000000000000000 T _stext\n0000000000000000 t helper\n");
	options.kallsyms_path = path;
	cr_assert_eq(rv_symbolizer_new(&s, &options, &err), -EPERM);
	cr_assert(strstr(err.message, "kptr_restrict"), "%s", err.message);
	unlink(path);
}

Test(symbolizer, names_the_running_kernel)
{
	struct rv_symbolizer *s = new_symbolizer(false, "/proc/kallsyms");
	struct rv_symbolizer_stats stats;
	char line[512], name[256], type;
	uint64_t addr, ksys_read = 0;
	struct rv_symbol sym;
	FILE *f = fopen("/proc/kallsyms", "r");

	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 &&
		    strcmp(name, "ksys_read") == 0) {
			ksys_read = addr;
			break;
		}
	}
	fclose(f);
	cr_assert(ksys_read, "ksys_read is not in /proc/kallsyms");
	rv_symbolizer_lookup(s, 1, ksys_read + 4, &sym);
	cr_assert_str_eq(sym.name, "ksys_read");
	cr_assert_eq(sym.start, ksys_read);
	cr_assert(sym.known && sym.kernel);
	cr_assert_gt(sym.size, 4);
	rv_symbolizer_stats(s, &stats);
	cr_assert_gt(stats.kernel_symbols, 10000);
	rv_symbolizer_free(s);
}

Test(symbolizer, demangles_cpp_and_rust_legacy)
{
	static const struct {
		const char *mangled, *readable;
	} cases[] = {
		{ "_ZN2ns6Widget4frobEi", "ns::Widget::frob(int)" },
		{ "_ZN3foo3barE", "foo::bar" },
		{ "_ZN4core3fmt9Formatter3pad17h0123456789abcdefE", "core::fmt::Formatter::pad" },
		{ "_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops..drop..Drop$GT$"
		  "4drop17h0123456789abcdefE",
		  "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop" },
		{ "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hfedcba9876543210E",
		  "std::rt::lang_start::{{closure}}" },
		{ "_ZN3foo3bar17h0123456789abcdefE.llvm.12345", "foo::bar" },
		{ "_ZN3foo17hzzzzzzzzzzzzzzzzE", "foo::hzzzzzzzzzzzzzzzz" },
	};
	static const char *const not_mangled[] = { "main", "_Z", "_Znotvalid", "",
						   "_ZN3fooE_extra" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *readable = rv_demangle(cases[i].mangled);

		cr_assert(readable, "'%s' not demangled", cases[i].mangled);
		cr_assert_str_eq(readable, cases[i].readable);
		free(readable);
	}
	for (size_t i = 0; i < sizeof(not_mangled) / sizeof(not_mangled[0]); i++) {
		char *readable = rv_demangle(not_mangled[i]);

		cr_assert_null(readable, "'%s' became '%s'", not_mangled[i], readable);
	}
	cr_assert_null(rv_demangle(NULL));
}

/* A module's code named from its own .ko: found by name under the modules
 * directory ('-' in the file's name, '_' in /proc/modules'), compressed
 * with xz, placed where the module list says, its .text at the module's
 * base and a later section of code after it (the .init.text between them
 * is not loaded); kallsyms below it, for the kernel's own code. */
Test(symbolizer, names_module_code_from_its_ko)
{
	static const char source[] =
		"int mod_helper(int x) { return x * 3 + 1; }\n"
		"int mod_work(int x) { return mod_helper(x) + mod_helper(x + 1); }\n"
		"__attribute__((section(\".init.text\"))) int mod_init(void) { return 7; }\n"
		"__attribute__((section(\".noinstr.text\"))) int mod_noinstr(int x) { return x; "
		"}\n";
	const uint64_t base = 0xffffffffc0a01000ull;
	char dir[] = "/tmp/rv-modules-XXXXXX", path[256], cmd[1024];
	struct rv_symbolizer_options o = { 0 };
	struct rv_error err = { 0 };
	struct rv_symbolizer *s;
	struct rv_symbol sym;
	struct functions f;
	struct rv_symtab_file file;
	uint64_t text_size = 0, noinstr_align = 1;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/6.1.0-test/kernel/drivers/misc", dir);
	run_shell(cmd);
	snprintf(path, sizeof(path), "%s/mod.c", dir);
	write_file(path, source);
	snprintf(path, sizeof(path), "%s/6.1.0-test/kernel/drivers/misc/fake-mod.ko", dir);
	snprintf(cmd, sizeof(cmd),
		 "cc -c -O1 -fno-pic -fno-asynchronous-unwind-tables -o %s %s/mod.c", path, dir);
	run_shell(cmd);
	read_functions(path, &f);
	cr_assert_eq(rv_symtab_file_open(&file, path, &err), 0, "%s", err.message);
	size_t shstrndx, n;
	cr_assert_eq(elf_getshdrstrndx(file.elf, &shstrndx), 0);
	cr_assert_eq(elf_getshdrnum(file.elf, &n), 0);
	for (size_t i = 1; i < n; i++) {
		GElf_Shdr sh;
		const char *name;

		cr_assert_not_null(gelf_getshdr(elf_getscn(file.elf, i), &sh));
		name = elf_strptr(file.elf, shstrndx, sh.sh_name);
		if (!strcmp(name, ".text"))
			text_size = sh.sh_size;
		if (!strcmp(name, ".noinstr.text"))
			noinstr_align = sh.sh_addralign ? sh.sh_addralign : 1;
	}
	rv_symtab_file_close(&file);
	cr_assert_gt(text_size, 0);
	snprintf(cmd, sizeof(cmd), "xz %s", path);
	run_shell(cmd);

	snprintf(path, sizeof(path), "%s/modules", dir);
	write_file(path, "fake_mod 16384 0 - Live 0xffffffffc0a01000\n"
			 "gone_mod 4096 0 - Live 0xffffffffc0b00000\n");
	o.modules = path;
	snprintf(cmd, sizeof(cmd), "%s/6.1.0-test", dir);
	o.modules_dir = cmd;
	cr_assert_eq(rv_symbolizer_new(&s, &o, &err), 0, "%s", err.message);

	rv_symbolizer_lookup(s, 1, base + function_addr(&f, "mod_helper") + 1, &sym);
	cr_assert_str_eq(sym.name, "mod_helper");
	cr_assert(sym.known && sym.kernel);
	cr_assert_str_eq(sym.module, "[fake_mod]");
	cr_assert_eq(sym.start, base + function_addr(&f, "mod_helper"));
	rv_symbolizer_lookup(s, 1, base + function_addr(&f, "mod_work"), &sym);
	cr_assert_str_eq(sym.name, "mod_work");
	uint64_t noinstr = base + ((text_size + noinstr_align - 1) & ~(noinstr_align - 1));
	rv_symbolizer_lookup(s, 1, noinstr, &sym);
	cr_assert_str_eq(sym.name, "mod_noinstr", "after .text, .init.text left out");
	/* a module whose .ko is nowhere: nothing names it */
	rv_symbolizer_lookup(s, 1, 0xffffffffc0b00010, &sym);
	cr_assert_not(sym.known);
	/* and the user is told, as what kernel names lack */
	const char *problems = rv_symbolizer_kernel_problems(s);
	cr_assert(problems && strstr(problems, "1 module (gone_mod) with no .ko file"), "%s",
		  problems);
	rv_symbolizer_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run_shell(cmd);
}
