/* probe_site.c: probe specs to (file, file offset); see probe_site.h.
 *
 * One libdwfl session per resolution, over the one file concerned (reported
 * offline, so addresses are link-time addresses plus the bias libdwfl chose).
 * Symbol tables, separate debug files (symbolize/debuginfo.h: where libdwfl
 * looks) and line tables all come from libdwfl;
 * only the program headers and the dynamic section are read with libelf.
 */
#define RV_LOG_DOMAIN "probe"
#include "record/probe_site.h"

#include <ctype.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/ifunc.h"
#include "record/library.h"
#include "symbolize/debuginfo.h"
#include "symbolize/symbolizer.h"
#include "symbolize/symtab.h"
#include "util/elf.h"
#include "util/proc.h"
#include "util/suggest.h"

/* Functions an "unknown symbol" error suggests at most. */
#define MAX_SUGGESTIONS 3
/* Distinct addresses an "ambiguous symbol" error lists at most. */
#define MAX_AMBIGUOUS 4

struct module {
	struct rv_debuginfo debuginfo; /* where separate debug files are found */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;
	GElf_Addr bias; /* libdwfl address = link-time address + bias */
	const char *path;
};

static int open_module(struct module *m, const char *path, struct rv_error *err)
{
	memset(m, 0, sizeof(*m));
	m->path = path;
	if (access(path, R_OK))
		return rv_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
	if (rv_debuginfo_init(&m->debuginfo))
		return rv_error_set(err, ENOMEM, "out of memory");
	m->dwfl = dwfl_begin(&m->debuginfo.callbacks);
	if (!m->dwfl) {
		rv_debuginfo_destroy(&m->debuginfo);
		return rv_error_set(err, ENOMEM, "cannot start libdwfl: %s", dwfl_errmsg(-1));
	}
	dwfl_report_begin(m->dwfl);
	m->mod = dwfl_report_offline(m->dwfl, path, path, -1);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (m->mod)
		m->elf = dwfl_module_getelf(m->mod, &m->bias);
	if (!m->mod || !m->elf) {
		int ret = rv_error_set(err, ENOEXEC, "cannot read '%s' as an ELF file: %s", path,
				       dwfl_errmsg(-1));

		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		rv_debuginfo_destroy(&m->debuginfo);
		return ret;
	}
	return 0;
}

static void close_module(struct module *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	m->dwfl = NULL;
	rv_debuginfo_destroy(&m->debuginfo);
}

static int outside_error(struct rv_error *err, const char *path, uint64_t addr)
{
	return rv_error_set(err, EFAULT,
			    "address 0x%llx is outside every executable segment of '%s'; give "
			    "a link-time code address (as 'nm' or 'objdump -d' show it)",
			    (unsigned long long)addr, path);
}

int rv_probe_site_file_offset(const char *path, uint64_t addr, uint64_t *offset,
			      struct rv_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	bool found;

	if (fd < 0)
		return rv_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return rv_error_set(err, ENOEXEC, "'%s' is not an ELF file", path);
	}
	found = rv_elf_code_offset(elf, addr, offset);
	elf_end(elf);
	close(fd);
	return found ? 0 : outside_error(err, path, addr);
}

static void fill_site(struct rv_probe_site *out, struct module *m, uint64_t addr, uint64_t offset,
		      const char *function)
{
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	out->address = addr;
	out->offset = offset;
	if (!function)
		function = dwfl_module_addrname(m->mod, addr + m->bias);
	snprintf(out->function, sizeof(out->function), "%s", function ? function : "");
}

static int resolve_executable(const char *exe, pid_t pid, char *path, size_t size,
			      struct rv_error *err)
{
	if (exe) {
		if (!strchr(exe, '/')) {
			/* A bare name: the caller resolved PATH already or means ./exe. */
			snprintf(path, size, "./%s", exe);
		} else {
			snprintf(path, size, "%s", exe);
		}
		return 0;
	}
	if (pid <= 0)
		return rv_error_set(err, EINVAL, "no executable to resolve probes in");
	return rv_proc_exe(pid, path, size, err);
}

/* ---- symbols ---- */

/* name without its symbol version ("malloc@@GLIBC_2.2.5"), compared to want. */
static bool raw_name_matches(const char *name, const char *want)
{
	size_t len = strlen(want);

	return strncmp(name, want, len) == 0 && (name[len] == '\0' || name[len] == '@');
}

/* want against a symbol's raw name, its demangled name, or the demangled name
 * without its parameter list ("ns::f" matches "ns::f(int)"). */
static bool symbol_matches(const char *name, const char *want)
{
	char *demangled;
	bool match;
	size_t len;

	if (raw_name_matches(name, want))
		return true;
	demangled = rv_demangle(name); /* NULL unless it is a mangled name */
	if (!demangled)
		return false;
	len = strlen(want);
	match = strncmp(demangled, want, len) == 0 &&
		(demangled[len] == '\0' || demangled[len] == '(');
	free(demangled);
	return match;
}

struct suggestions {
	char names[MAX_SUGGESTIONS][128];
	size_t distance[MAX_SUGGESTIONS];
	size_t nr;
};

static void consider_suggestion(struct suggestions *s, const char *name, const char *want)
{
	size_t len = strcspn(name, "@"), d, limit = rv_suggest_limit(want), worst = 0;
	char bare[128];

	if (len >= sizeof(bare))
		return;
	memcpy(bare, name, len);
	bare[len] = '\0';
	d = rv_edit_distance(bare, want);
	if (d > limit && !strstr(bare, want))
		return;
	if (d > limit)
		d = limit + 1; /* substring matches rank after close spellings */
	for (size_t i = 0; i < s->nr; i++) {
		if (strcmp(s->names[i], bare) == 0)
			return;
		if (s->distance[i] > s->distance[worst])
			worst = i;
	}
	if (s->nr < MAX_SUGGESTIONS) {
		worst = s->nr++;
	} else if (s->distance[worst] <= d) {
		return;
	}
	snprintf(s->names[worst], sizeof(s->names[worst]), "%s", bare);
	s->distance[worst] = d;
}

struct symbol_search {
	uint64_t addrs[MAX_AMBIGUOUS]; /* distinct link-time addresses of matching functions */
	size_t nr_addrs;
	const char *name; /* the first match's name (for messages) */
	bool non_function, ifunc, undefined;
	uint64_t ifunc_addr; /* an IFUNC's value (its resolver), link-time */
	struct suggestions suggestions;
};

static void search_symbols(struct module *m, const char *want, struct symbol_search *s)
{
	int nr = dwfl_module_getsymtab(m->mod);

	memset(s, 0, sizeof(*s));
	for (int i = 1; i < nr; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr sym_bias = 0;
		const char *name =
			dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, &elf, &sym_bias);
		unsigned type;
		uint64_t link_addr;
		size_t k;

		if (!name || !name[0])
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (!symbol_matches(name, want)) {
			if (type == STT_FUNC && shndx != SHN_UNDEF)
				consider_suggestion(&s->suggestions, name, want);
			continue;
		}
		if (shndx == SHN_UNDEF) {
			s->undefined = true;
			continue;
		}
		if (type == STT_GNU_IFUNC) {
			s->ifunc = true;
			s->ifunc_addr = addr - m->bias;
			continue;
		}
		if (type != STT_FUNC) {
			s->non_function = true;
			continue;
		}
		link_addr = addr - m->bias;
		for (k = 0; k < s->nr_addrs; k++)
			if (s->addrs[k] == link_addr)
				break;
		if (k == s->nr_addrs && s->nr_addrs < MAX_AMBIGUOUS)
			s->addrs[s->nr_addrs++] = link_addr;
		if (!s->name)
			s->name = name;
	}
}

static int unknown_symbol_error(struct rv_error *err, const char *want, const char *path,
				const struct symbol_search *s, bool in_executable, bool stripped)
{
	char hint[512] = "";
	size_t used = 0;

	if (s->undefined && in_executable)
		return rv_error_set(err, ENOENT,
				    "'%s' is not defined in '%s' but imported from a shared "
				    "library; name it as LIBRARY:%s (e.g. libc.so.6:%s)",
				    want, path, want, want);
	struct suggestions sorted = s->suggestions;

	/* Closest first (insertion sort of at most MAX_SUGGESTIONS). */
	for (size_t i = 1; i < sorted.nr; i++) {
		for (size_t j = i; j > 0 && sorted.distance[j] < sorted.distance[j - 1]; j--) {
			char name[sizeof(sorted.names[0])];
			size_t d = sorted.distance[j];

			memcpy(name, sorted.names[j], sizeof(name));
			memcpy(sorted.names[j], sorted.names[j - 1], sizeof(name));
			memcpy(sorted.names[j - 1], name, sizeof(name));
			sorted.distance[j] = sorted.distance[j - 1];
			sorted.distance[j - 1] = d;
		}
	}
	for (size_t i = 0; i < sorted.nr && used < sizeof(hint); i++)
		used += (size_t)snprintf(hint + used, sizeof(hint) - used, "%s'%s'",
					 i ? ", " : "; did you mean ", sorted.names[i]);
	if (stripped)
		return rv_error_set(
			err, ENOENT,
			"no function '%s' in '%s': it is stripped (it has no symbol "
			"table; only the functions it exports have names); install its "
			"debug symbols (on Debian, the -dbgsym package of its package, "
			"which puts them in /usr/lib/debug), or give the code as 0xADDR "
			"(a link-time address, as 'objdump -d' shows it), or as "
			"FILE:LINE once it has debug symbols%s%s",
			want, path, hint, s->suggestions.nr ? "?" : "");
	return rv_error_set(err, ENOENT, "no function '%s' in '%s'%s%s", want, path, hint,
			    s->suggestions.nr ? "?" : " (check the name with 'nm -C')");
}

/* An IFUNC named as a site: what it resolves to in process pid (ifunc.h),
 * and the spec that names that (lib: the spec's LIBRARY, may be empty). */
static int ifunc_error(struct rv_error *err, struct module *m, const char *want,
		       const struct symbol_search *s, pid_t pid, const char *lib)
{
	char target[256];
	struct symbol_search t;

	switch (rv_ifunc_resolve(pid, m->path, s->ifunc_addr, want, target, sizeof(target))) {
	case RV_IFUNC_RESOLVED:
		search_symbols(m, target, &t);
		if (t.nr_addrs == 1)
			return rv_error_set(err, EINVAL,
					    "'%s' in '%s' is an IFUNC; here it resolves to %s "
					    "(give '%s%s%s' instead)",
					    want, m->path, target, lib, *lib ? ":" : "", target);
		return rv_error_set(err, EINVAL,
				    "'%s' in '%s' is an IFUNC; here it resolves to %s, which no "
				    "symbol table of the file names: give its address (0xADDR) "
				    "or FILE:LINE instead",
				    want, m->path, target);
	case RV_IFUNC_NOT_LOADED:
		return rv_error_set(err, EINVAL,
				    "'%s' in '%s' is an IFUNC, resolved by its library when it "
				    "loads, and the program had not loaded it: attach to the "
				    "running program to learn what it resolves to, and name that",
				    want, m->path);
	default:
		return rv_error_set(err, EINVAL,
				    "'%s' in '%s' is an IFUNC, and the program has not called "
				    "it yet, so what it resolves to is not known; name the "
				    "function it resolves to instead",
				    want, m->path);
	}
}

static int resolve_symbol(struct module *m, const char *want, bool in_executable, pid_t pid,
			  const char *lib, struct rv_probe_site *out, struct rv_error *err)
{
	struct symbol_search s;
	uint64_t offset;

	search_symbols(m, want, &s);
	if (s.nr_addrs == 0) {
		if (s.ifunc)
			return ifunc_error(err, m, want, &s, pid, lib);
		if (s.non_function)
			return rv_error_set(err, EINVAL,
					    "'%s' in '%s' is not a function (it is data); give a "
					    "function name",
					    want, m->path);
		return unknown_symbol_error(err, want, m->path, &s, in_executable,
					    rv_symtab_module_stripped(m->mod));
	}
	if (s.nr_addrs > 1) {
		char list[256] = "";
		size_t used = 0;

		for (size_t i = 0; i < s.nr_addrs && used < sizeof(list); i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s0x%llx",
						 i ? ", " : "", (unsigned long long)s.addrs[i]);
		return rv_error_set(err, EINVAL,
				    "'%s' is ambiguous in '%s': functions of that name are at %s "
				    "(static functions of different files); give the address "
				    "instead (0xADDR) or FILE:LINE",
				    want, m->path, list);
	}
	if (!rv_elf_code_offset(m->elf, s.addrs[0], &offset))
		return outside_error(err, m->path, s.addrs[0]);
	fill_site(out, m, s.addrs[0], offset, NULL);
	return 0;
}

/* ---- FILE:LINE ---- */

/* Whether list ("2, 11") holds number. */
static bool has_number(const char *list, int number)
{
	const char *p = list;
	char *end;

	while (*p) {
		if (strtol(p, &end, 10) == number && end != p)
			return true;
		if (end == p)
			return false;
		p = end + strspn(end, ", ");
	}
	return false;
}

static int resolve_line(struct module *m, const char *file, int line, int column,
			struct rv_probe_site *out, struct rv_error *err)
{
	Dwarf_Addr dwarf_bias;
	Dwfl_Line **lines = NULL;
	size_t nr_lines = 0;
	uint64_t best = UINT64_MAX, best_any = UINT64_MAX, offset;
	int nearest = 0;
	char columns[128] = ""; /* the columns the line has, when COL matches none */
	size_t used = 0;

	if (!dwfl_module_getdwarf(m->mod, &dwarf_bias))
		return rv_error_set(err, ENODATA,
				    "'%s' has no debug information, so %s:%d cannot be found; "
				    "build it with -g or install its debug symbols",
				    m->path, file, line);
	if (dwfl_module_getsrc_file(m->mod, file, line, 0, &lines, &nr_lines) < 0 || !nr_lines)
		return rv_error_set(err, ENOENT,
				    "no source file '%s' with code at line %d in the debug "
				    "information of '%s'; check the file name and line",
				    file, line, m->path);
	for (size_t i = 0; i < nr_lines; i++) {
		Dwarf_Addr addr;
		int lineno = 0, col = 0;
		bool is_stmt = false;
		Dwarf_Addr line_bias;
		Dwarf_Line *dl = dwfl_dwarf_line(lines[i], &line_bias);

		if (!dwfl_lineinfo(lines[i], &addr, &lineno, &col, NULL, NULL))
			continue;
		if (lineno != line) {
			if (!nearest || lineno < nearest)
				nearest = lineno;
			continue;
		}
		if (column && col != column) {
			char one[16];

			snprintf(one, sizeof(one), "%d", col);
			if (col > 0 && used < sizeof(columns) - 1 && !has_number(columns, col))
				used += (size_t)snprintf(columns + used, sizeof(columns) - used,
							 "%s%s", used ? ", " : "", one);
			continue;
		}
		if (dl && dwarf_linebeginstatement(dl, &is_stmt) == 0 && !is_stmt) {
			/* a column names its row even when it starts no statement
			 * (a second call on the line) */
			if (column && addr - m->bias < best_any)
				best_any = addr - m->bias;
			continue;
		}
		if (addr - m->bias < best)
			best = addr - m->bias;
	}
	free(lines);
	if (best == UINT64_MAX)
		best = best_any;
	if (best == UINT64_MAX && column && columns[0])
		return rv_error_set(err, ENOENT,
				    "line %d of '%s' has no code at column %d in '%s'; its "
				    "columns with code are %s (or give %s:%d without a column)",
				    line, file, column, m->path, columns, file, line);
	if (best == UINT64_MAX) {
		if (nearest)
			return rv_error_set(err, ENOENT,
					    "line %d of '%s' has no code in '%s'; the next line "
					    "with code is %d",
					    line, file, m->path, nearest);
		return rv_error_set(err, ENOENT, "line %d of '%s' has no code in '%s'", line, file,
				    m->path);
	}
	if (!rv_elf_code_offset(m->elf, best, &offset))
		return outside_error(err, m->path, best);
	fill_site(out, m, best, offset, NULL);
	return 0;
}

/* ---- the stop indicator ---- */

/* magic_trace_stop_indicator, else rearview_stop_indicator, in the executable. */
static int resolve_stop_indicator(struct module *m, pid_t pid, struct rv_probe_site *out,
				  struct rv_error *err)
{
	static const char *const names[] = { RV_STOP_INDICATOR, RV_STOP_INDICATOR_OWN };
	struct symbol_search s;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		search_symbols(m, names[i], &s);
		if (s.nr_addrs || s.ifunc || s.non_function)
			return resolve_symbol(m, names[i], true, pid, "", out, err);
	}
	return rv_error_set(err, ENOENT,
			    "'.' is the program's stop indicator, and '%s' "
			    "defines neither %s nor %s; define one (an empty noinline function "
			    "the program calls where the trace should end) or name the site",
			    m->path, RV_STOP_INDICATOR, RV_STOP_INDICATOR_OWN);
}

/* ---- what the user may pick ---- */

struct line_row {
	const char *file; /* libdwfl's, valid while the module is open */
	int line;
	uint64_t address; /* link-time */
};

static int compare_rows(const void *a, const void *b)
{
	const struct line_row *x = a, *y = b;
	int c = strcmp(x->file, y->file);

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

static int compare_choices(const void *a, const void *b)
{
	const struct rv_probe_choice *x = a, *y = b;

	return strcmp(x->label, y->label);
}

static int add_choice(struct rv_probe_choice **list, size_t *nr, size_t *cap, const char *label,
		      const char *spec)
{
	if (*nr == *cap) {
		size_t grown_cap = *cap ? *cap * 2 : 256;
		struct rv_probe_choice *grown = realloc(*list, grown_cap * sizeof(**list));

		if (!grown)
			return -ENOMEM;
		*list = grown;
		*cap = grown_cap;
	}
	(*list)[*nr].label = strdup(label);
	(*list)[*nr].spec = strdup(spec);
	if (!(*list)[*nr].label || !(*list)[*nr].spec) {
		free((*list)[*nr].label);
		free((*list)[*nr].spec);
		return -ENOMEM;
	}
	(*nr)++;
	return 0;
}

void rv_probe_choices_free(struct rv_probe_choice *list, size_t nr)
{
	for (size_t i = 0; list && i < nr; i++) {
		free(list[i].label);
		free(list[i].spec);
	}
	free(list);
}

static int list_functions(struct module *m, struct rv_probe_choice **list, size_t *nr,
			  struct rv_error *err)
{
	int nr_syms = dwfl_module_getsymtab(m->mod);
	uint64_t *seen = NULL;
	size_t nr_seen = 0, cap = 0;
	int ret = 0;

	seen = calloc(nr_syms > 0 ? (size_t)nr_syms : 1, sizeof(*seen));
	if (!seen)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (int i = 1; i < nr_syms && !ret; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr sym_bias = 0;
		const char *name =
			dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, &elf, &sym_bias);
		char label[320], spec[64], *demangled;
		uint64_t link_addr, offset;
		size_t k;

		if (!name || !name[0] || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    shndx == SHN_UNDEF)
			continue;
		link_addr = addr - m->bias;
		if (!rv_elf_code_offset(m->elf, link_addr, &offset))
			continue;
		for (k = 0; k < nr_seen && seen[k] != link_addr; k++)
			;
		if (k < nr_seen)
			continue; /* an alias of a function listed already */
		seen[nr_seen++] = link_addr;
		demangled = rv_demangle(name);
		snprintf(label, sizeof(label), "%.*s",
			 (int)strcspn(demangled ? demangled : name, "@"),
			 demangled ? demangled : name);
		free(demangled);
		snprintf(spec, sizeof(spec), "addr:0x%llx", (unsigned long long)link_addr);
		if (add_choice(list, nr, &cap, label, spec))
			ret = rv_error_set(err, ENOMEM, "out of memory");
	}
	free(seen);
	if (!ret && *nr == 0)
		ret = rv_error_set(err, ENOENT,
				   "'%s' has no function symbols to choose from (it is stripped); "
				   "give the site as 0xADDR",
				   m->path);
	if (!ret)
		qsort(*list, *nr, sizeof(**list), compare_choices);
	return ret;
}

static int list_lines(struct module *m, struct rv_probe_choice **list, size_t *nr,
		      struct rv_error *err)
{
	struct line_row *rows = NULL;
	size_t nr_rows = 0, cap_rows = 0, cap = 0;
	Dwarf_Addr cu_bias, dwarf_bias;
	Dwarf_Die *cu = NULL;
	int ret = 0;

	if (!dwfl_module_getdwarf(m->mod, &dwarf_bias))
		return rv_error_set(err, ENODATA,
				    "'%s' has no debug information, so it has no source lines to "
				    "choose from; build it with -g or install its debug symbols",
				    m->path);
	while ((cu = dwfl_module_nextcu(m->mod, cu, &cu_bias)) && !ret) {
		size_t n = 0;

		if (dwfl_getsrclines(cu, &n))
			continue;
		for (size_t i = 0; i < n; i++) {
			Dwfl_Line *line = dwfl_onesrcline(cu, i);
			Dwarf_Addr addr, line_bias;
			Dwarf_Line *dl = line ? dwfl_dwarf_line(line, &line_bias) : NULL;
			bool is_stmt = false, end = false;
			int lineno = 0;
			const char *file;
			uint64_t offset;

			if (!line || !dl)
				continue;
			file = dwfl_lineinfo(line, &addr, &lineno, NULL, NULL, NULL);
			if (!file || lineno <= 0 || dwarf_linebeginstatement(dl, &is_stmt) ||
			    !is_stmt || dwarf_lineendsequence(dl, &end) || end)
				continue;
			if (!rv_elf_code_offset(m->elf, addr - m->bias, &offset))
				continue;
			if (nr_rows == cap_rows) {
				size_t grown_cap = cap_rows ? cap_rows * 2 : 1024;
				struct line_row *grown = realloc(rows, grown_cap * sizeof(*rows));

				if (!grown) {
					ret = rv_error_set(err, ENOMEM, "out of memory");
					break;
				}
				rows = grown;
				cap_rows = grown_cap;
			}
			rows[nr_rows++] = (struct line_row){ file, lineno, addr - m->bias };
		}
	}
	if (!ret && nr_rows)
		qsort(rows, nr_rows, sizeof(*rows), compare_rows);
	for (size_t i = 0; !ret && i < nr_rows; i++) {
		const char *function;
		char label[PATH_MAX + 320], spec[PATH_MAX + 32];

		if (i && rows[i].line == rows[i - 1].line &&
		    !strcmp(rows[i].file, rows[i - 1].file))
			continue; /* the line's first address is the one resolved */
		function = dwfl_module_addrname(m->mod, rows[i].address + m->bias);
		snprintf(label, sizeof(label), "%s:%d%s%s%s", rows[i].file, rows[i].line,
			 function ? "  (" : "", function ? function : "", function ? ")" : "");
		snprintf(spec, sizeof(spec), "line:%s:%d", rows[i].file, rows[i].line);
		if (add_choice(list, nr, &cap, label, spec))
			ret = rv_error_set(err, ENOMEM, "out of memory");
	}
	free(rows);
	if (!ret && *nr == 0)
		ret = rv_error_set(err, ENOENT,
				   "the debug information of '%s' has no source lines with code "
				   "to choose from; give the site as a function or 0xADDR",
				   m->path);
	return ret;
}

int rv_probe_site_choices(enum rv_probe_spec_kind kind, const char *exe, pid_t pid,
			  struct rv_probe_choice **out, size_t *nr, struct rv_error *err)
{
	char exe_path[PATH_MAX];
	struct module m;
	int ret;

	*out = NULL;
	*nr = 0;
	if (kind != RV_PROBE_PICK_FUNCTION && kind != RV_PROBE_PICK_LINE)
		return rv_error_set(err, EINVAL, "not a spec to pick");
	ret = resolve_executable(exe, pid, exe_path, sizeof(exe_path), err);
	if (!ret)
		ret = open_module(&m, exe_path, err);
	if (ret)
		return ret;
	if (kind == RV_PROBE_PICK_FUNCTION)
		ret = list_functions(&m, out, nr, err);
	else
		ret = list_lines(&m, out, nr, err);
	close_module(&m);
	if (ret) {
		rv_probe_choices_free(*out, *nr);
		*out = NULL;
		*nr = 0;
	}
	return ret;
}

/* ---- specs ---- */

static bool all_digits(const char *s, const char *end)
{
	if (s >= end)
		return false;
	for (; s < end; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* The ':' separating LIB from SYMBOL, skipping C++ "::". */
static const char *library_separator(const char *spec)
{
	const char *p = spec;

	while ((p = strchr(p, ':'))) {
		if (p[1] == ':') {
			p += 2;
			continue;
		}
		return p > spec ? p : NULL;
	}
	return NULL;
}

/* The last single ':' before end (not part of "::"), or NULL. */
static const char *last_colon(const char *begin, const char *end)
{
	for (const char *p = end; p-- > begin;)
		if (*p == ':' && (p == begin || p[-1] != ':') && p[1] != ':')
			return p;
	return NULL;
}

static int read_number(const char *begin, const char *end, int *out)
{
	long value = 0;

	for (const char *p = begin; p < end; p++) {
		value = value * 10 + (*p - '0');
		if (value > INT_MAX)
			return -1;
	}
	if (value <= 0)
		return -1;
	*out = (int)value;
	return 0;
}

/* FILE:LINE or FILE:LINE:COL: 1 when text is one (filled in), 0 when it is
 * not, -1 when its numbers are out of range. */
static int split_line_spec(const char *text, struct rv_probe_spec *out)
{
	const char *end = text + strlen(text);
	const char *last = last_colon(text, end), *before;

	if (!last || last == text || !all_digits(last + 1, end))
		return 0;
	before = last_colon(text, last);
	out->kind = RV_PROBE_LINE;
	out->column = 0;
	if (before && before > text && all_digits(before + 1, last)) {
		if (read_number(before + 1, last, &out->line) ||
		    read_number(last + 1, end, &out->column))
			return -1;
		last = before;
	} else if (read_number(last + 1, end, &out->line)) {
		return -1;
	}
	if ((size_t)(last - text) >= sizeof(out->name))
		return -1;
	snprintf(out->name, sizeof(out->name), "%.*s", (int)(last - text), text);
	return 1;
}

static int parse_address(const char *text, const char *spec, struct rv_probe_spec *out,
			 struct rv_error *err)
{
	const char *digits = text;
	char *end;

	if (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
		digits += 2;
	errno = 0;
	out->address = strtoull(digits, &end, 16);
	if (errno || end == digits || *end || !isxdigit((unsigned char)digits[0]))
		return rv_error_set(err, EINVAL,
				    "cannot read '%s' as an address; write 0x then hex digits "
				    "(addr:0x401234)",
				    spec);
	out->kind = RV_PROBE_ADDRESS;
	return 0;
}

static int parse_symbol(const char *text, const char *spec, struct rv_probe_spec *out,
			struct rv_error *err)
{
	const char *sep = library_separator(text);

	out->kind = RV_PROBE_SYMBOL;
	if (sep) {
		if ((size_t)(sep - text) >= sizeof(out->library) || !sep[1])
			return rv_error_set(err, EINVAL, "cannot read '%s' as LIBRARY:SYMBOL",
					    spec);
		snprintf(out->library, sizeof(out->library), "%.*s", (int)(sep - text), text);
		text = sep + 1;
	}
	if (!text[0] || strlen(text) >= sizeof(out->name))
		return rv_error_set(err, EINVAL, "cannot read '%s' as a function name", spec);
	snprintf(out->name, sizeof(out->name), "%s", text);
	return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool rv_probe_spec_is_pick(const char *spec)
{
	return spec && (!strcmp(spec, "?") || !strcmp(spec, "symbol:?") || !strcmp(spec, "line:?"));
}

int rv_probe_spec_parse(const char *spec, struct rv_probe_spec *out, struct rv_error *err)
{
	int line;

	memset(out, 0, sizeof(*out));
	if (!spec || !spec[0])
		return rv_error_set(err, EINVAL,
				    "empty probe; give a function, 0xADDR or FILE:LINE");
	if (!strcmp(spec, "?") || !strcmp(spec, "symbol:?")) {
		out->kind = RV_PROBE_PICK_FUNCTION;
		return 0;
	}
	if (!strcmp(spec, "line:?")) {
		out->kind = RV_PROBE_PICK_LINE;
		return 0;
	}
	if (!strcmp(spec, ".")) {
		out->kind = RV_PROBE_STOP_INDICATOR;
		return 0;
	}
	if (has_prefix(spec, "addr:"))
		return parse_address(spec + 5, spec, out, err);
	if (has_prefix(spec, "symbol:"))
		return parse_symbol(spec + 7, spec, out, err);
	if (has_prefix(spec, "line:")) {
		line = split_line_spec(spec + 5, out);
		if (line <= 0)
			return rv_error_set(err, EINVAL,
					    "cannot read '%s' as line:FILE:LINE or "
					    "line:FILE:LINE:COL (lines and columns count from 1)",
					    spec);
		return 0;
	}
	if (spec[0] == '0' && (spec[1] == 'x' || spec[1] == 'X'))
		return parse_address(spec, spec, out, err);
	line = split_line_spec(spec, out);
	if (line < 0)
		return rv_error_set(err, EINVAL,
				    "cannot read '%s' as FILE:LINE or FILE:LINE:COL (lines and "
				    "columns count from 1)",
				    spec);
	if (line > 0)
		return 0;
	return parse_symbol(spec, spec, out, err);
}

int rv_probe_site_resolve(const char *spec_text, const char *exe, pid_t pid,
			  struct rv_probe_site *out, struct rv_error *err)
{
	char exe_path[PATH_MAX], lib_path[PATH_MAX];
	struct rv_probe_spec *spec = malloc(sizeof(*spec));
	const char *module_path = exe_path;
	struct module m;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!spec)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_probe_spec_parse(spec_text, spec, err);
	if (!ret && (spec->kind == RV_PROBE_PICK_FUNCTION || spec->kind == RV_PROBE_PICK_LINE))
		ret = rv_error_set(err, EINVAL,
				   "'%s' asks to choose the site from a list, which needs a "
				   "terminal; name the site instead",
				   spec_text);
	if (!ret)
		ret = resolve_executable(exe, pid, exe_path, sizeof(exe_path), err);
	if (!ret && spec->kind == RV_PROBE_SYMBOL && spec->library[0]) {
		ret = rv_find_library(spec->library, exe_path, pid, NULL, "SYMBOL", lib_path,
				      sizeof(lib_path), err);
		module_path = lib_path;
	}
	if (!ret)
		ret = open_module(&m, module_path, err);
	if (ret) {
		free(spec);
		return ret;
	}
	switch (spec->kind) {
	case RV_PROBE_ADDRESS:
		if (!rv_elf_code_offset(m.elf, spec->address, &out->offset))
			ret = outside_error(err, exe_path, spec->address);
		else
			fill_site(out, &m, spec->address, out->offset, NULL);
		break;
	case RV_PROBE_LINE:
		ret = resolve_line(&m, spec->name, spec->line, spec->column, out, err);
		break;
	case RV_PROBE_STOP_INDICATOR:
		ret = resolve_stop_indicator(&m, pid, out, err);
		break;
	default:
		ret = resolve_symbol(&m, spec->name, !spec->library[0], pid, spec->library, out,
				     err);
		break;
	}
	close_module(&m);
	free(spec);
	return ret;
}
