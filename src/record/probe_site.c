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

/* Functions an "unknown symbol" error suggests at most. */
#define MAX_SUGGESTIONS 3
/* Distinct addresses an "ambiguous symbol" error lists at most. */
#define MAX_AMBIGUOUS 4
/* Longest name compared for suggestions (edit distance is quadratic). */
#define MAX_SUGGEST_LEN 96

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

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[MAX_SUGGEST_LEN + 1];

	if (la > MAX_SUGGEST_LEN || lb > MAX_SUGGEST_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diagonal = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t above = row[j];
			size_t best = diagonal + (a[i - 1] != b[j - 1]);

			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[lb];
}

struct suggestions {
	char names[MAX_SUGGESTIONS][128];
	size_t distance[MAX_SUGGESTIONS];
	size_t nr;
};

static void consider_suggestion(struct suggestions *s, const char *name, const char *want)
{
	size_t len = strcspn(name, "@"), d, limit = strlen(want) / 3 + 1, worst = 0;
	char bare[128];

	if (len >= sizeof(bare))
		return;
	memcpy(bare, name, len);
	bare[len] = '\0';
	d = edit_distance(bare, want);
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

static int resolve_line(struct module *m, const char *file, int line, struct rv_probe_site *out,
			struct rv_error *err)
{
	Dwarf_Addr dwarf_bias;
	Dwfl_Line **lines = NULL;
	size_t nr_lines = 0;
	uint64_t best = UINT64_MAX, offset;
	int nearest = 0;

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
		int lineno = 0;
		bool is_stmt = false;
		Dwarf_Addr line_bias;
		Dwarf_Line *dl = dwfl_dwarf_line(lines[i], &line_bias);

		if (!dwfl_lineinfo(lines[i], &addr, &lineno, NULL, NULL, NULL))
			continue;
		if (lineno != line) {
			if (!nearest || lineno < nearest)
				nearest = lineno;
			continue;
		}
		if (dl && dwarf_linebeginstatement(dl, &is_stmt) == 0 && !is_stmt)
			continue;
		if (addr - m->bias < best)
			best = addr - m->bias;
	}
	free(lines);
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

/* ---- specs ---- */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
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

int rv_probe_site_resolve(const char *spec, const char *exe, pid_t pid, struct rv_probe_site *out,
			  struct rv_error *err)
{
	char exe_path[PATH_MAX], lib_path[PATH_MAX], prefix[PATH_MAX];
	const char *colon, *sep, *symbol = spec, *module_path = exe_path;
	struct module m;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!spec || !spec[0])
		return rv_error_set(err, EINVAL,
				    "empty probe; give a function, 0xADDR or FILE:LINE");
	ret = resolve_executable(exe, pid, exe_path, sizeof(exe_path), err);
	if (ret)
		return ret;

	if (spec[0] == '0' && (spec[1] == 'x' || spec[1] == 'X')) {
		char *end;
		uint64_t addr;

		errno = 0;
		addr = strtoull(spec + 2, &end, 16);
		if (errno || end == spec + 2 || *end)
			return rv_error_set(err, EINVAL,
					    "cannot read '%s' as an address; write 0x then hex "
					    "digits",
					    spec);
		ret = open_module(&m, exe_path, err);
		if (ret)
			return ret;
		if (!rv_elf_code_offset(m.elf, addr, &out->offset))
			ret = outside_error(err, exe_path, addr);
		else
			fill_site(out, &m, addr, out->offset, NULL);
		close_module(&m);
		return ret;
	}

	colon = strrchr(spec, ':');
	if (colon && colon > spec && colon[-1] != ':' && all_digits(colon + 1)) {
		long line = strtol(colon + 1, NULL, 10);

		if ((size_t)(colon - spec) >= sizeof(prefix) || line <= 0 || line > INT_MAX)
			return rv_error_set(err, EINVAL, "cannot read '%s' as FILE:LINE", spec);
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(colon - spec), spec);
		ret = open_module(&m, exe_path, err);
		if (ret)
			return ret;
		ret = resolve_line(&m, prefix, (int)line, out, err);
		close_module(&m);
		return ret;
	}

	sep = library_separator(spec);
	if (sep) {
		if ((size_t)(sep - spec) >= sizeof(prefix) || !sep[1])
			return rv_error_set(err, EINVAL, "cannot read '%s' as LIBRARY:SYMBOL",
					    spec);
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(sep - spec), spec);
		ret = rv_find_library(prefix, exe_path, pid, NULL, "SYMBOL", lib_path,
				      sizeof(lib_path), err);
		if (ret)
			return ret;
		symbol = sep + 1;
		module_path = lib_path;
	}
	ret = open_module(&m, module_path, err);
	if (ret)
		return ret;
	ret = resolve_symbol(&m, symbol, !sep, pid, sep ? prefix : "", out, err);
	close_module(&m);
	return ret;
}
