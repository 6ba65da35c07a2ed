/* fn_select.c: --functions patterns to the functions to probe; see
 * fn_select.h.
 *
 * Each file is read once with libelf, its symbols through symtab.h (which
 * ones are functions, in which kind of section) and its program headers for
 * file offsets. The library search mirrors what probe_site.c does for
 * LIB:SYMBOL, whose search is private to it.
 */
#define RV_LOG_DOMAIN "functions"
#include "record/fn_select.h"

#include <errno.h>
#include <fnmatch.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/ifunc.h"
#include "record/library.h"
#include "symbolize/symbolizer.h"
#include "symbolize/symtab.h"
#include "util/array.h"
#include "util/elf.h"
#include "util/proc.h"

void rv_fn_list_init(struct rv_fn_list *list)
{
	memset(list, 0, sizeof(*list));
}

void rv_fn_list_destroy(struct rv_fn_list *list)
{
	for (size_t i = 0; i < list->nr_strings; i++)
		free(list->strings[i]);
	free(list->strings);
	free(list->items);
	free(list->skipped);
	free(list->sites);
	rv_fn_list_init(list);
}

/* A copy of s that the list owns, or NULL. */
static const char *own(struct rv_fn_list *list, const char *s)
{
	char *copy;

	if (rv_array_grow(&list->strings, &list->strings_capacity, list->nr_strings,
			  sizeof(*list->strings), 64))
		return NULL;
	copy = strdup(s);
	if (copy)
		list->strings[list->nr_strings++] = copy;
	return copy;
}

void rv_fn_pattern_split(const char *pattern, size_t *lib_len)
{
	const char *p = pattern;

	*lib_len = 0;
	while ((p = strchr(p, ':'))) {
		if (p[1] == ':') {
			p += 2;
			continue;
		}
		if (p > pattern)
			*lib_len = (size_t)(p - pattern);
		return;
	}
}

bool rv_fn_name_matches(const char *glob, const char *raw_name)
{
	char name[1024], *demangled;
	size_t len = strcspn(raw_name, "@");
	bool match;

	if (len >= sizeof(name))
		return false;
	memcpy(name, raw_name, len);
	name[len] = '\0';
	if (!fnmatch(glob, name, 0))
		return true;
	demangled = rv_demangle(name); /* NULL unless it is a mangled name */
	if (!demangled)
		return false;
	match = !fnmatch(glob, demangled, 0);
	if (!match) {
		char *paren = strchr(demangled, '(');

		if (paren) {
			*paren = '\0';
			match = !fnmatch(glob, demangled, 0);
		}
	}
	free(demangled);
	return match;
}

/* ---- one file's symbols ---- */

/* A symbol that matched, before aliases are merged. */
struct match {
	uint64_t address, size;
	const char *name;
	const char *skip; /* why it cannot be probed, or NULL */
	uint64_t offset;
	size_t order; /* in the symbol table: the first alias names the function */
};

struct matches {
	struct match *items;
	size_t count, capacity;
};

/* Functions a return probe would break. A uretprobe replaces the return
 * address at [rsp] on entry: code entered by a jump has none there (the
 * program's entry point finds argc, the lazy binder a link map, a signal
 * return the signal frame), and a function that returns twice comes back the
 * second time to a probe the kernel has already retired, which kills the
 * program. */
static const struct {
	const char *glob;
	const char *reason;
} unprobeable[] = {
	{ "_start", "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "_dl_start", "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "_dl_start_user",
	  "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "__restore_rt", "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "_dl_runtime_resolve*",
	  "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "_dl_runtime_profile*",
	  "entered by a jump, not a call: a return probe would corrupt its stack" },
	{ "*setjmp", "returns twice: a return probe would kill the program at the second return" },
	{ "*getcontext",
	  "returns twice: a return probe would kill the program at the second return" },
	{ "savectx", "returns twice: a return probe would kill the program at the second return" },
	{ "*vfork", "returns twice: a return probe would kill the program at the second return" },
	{ "*swapcontext",
	  "returns twice: a return probe would kill the program at the second return" },
};

static const char *skip_reason(Elf *elf, const struct rv_symtab_symbol *sym, uint64_t *offset)
{
	GElf_Ehdr ehdr;
	char bare[256];
	size_t len = strcspn(sym->name, "@");

	if (sym->type == STT_GNU_IFUNC)
		return RV_FN_SKIP_IFUNC;
	if (gelf_getehdr(elf, &ehdr) && ehdr.e_entry && ehdr.e_entry == sym->addr)
		return "the file's entry point, entered by a jump, not a call: a return probe "
		       "would corrupt its stack";
	if (len < sizeof(bare)) {
		memcpy(bare, sym->name, len);
		bare[len] = '\0';
		for (size_t i = 0; i < sizeof(unprobeable) / sizeof(unprobeable[0]); i++)
			if (!fnmatch(unprobeable[i].glob, bare, 0))
				return unprobeable[i].reason;
	}
	/* SHN_ABS and the other reserved indices name no section to check. */
	if (sym->place != RV_SYMTAB_CODE && sym->place != RV_SYMTAB_SPECIAL)
		return "not in an executable section";
	if (!rv_elf_code_offset(elf, sym->addr, offset))
		return "outside every executable segment";
	return NULL;
}

struct file_matches {
	Elf *elf;
	const char *glob;
	struct matches *out;
};

/* Appends sym when the glob matches it. */
static int match_symbol(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct file_matches *fm = ctx;
	struct matches *out = fm->out;
	struct match m = { 0 };

	size_t parent_len;

	if (!*sym->name || rv_symtab_piece_of(sym->name, &parent_len) ||
	    !rv_fn_name_matches(fm->glob, sym->name))
		return 0;
	m.address = sym->addr;
	m.size = sym->size;
	m.name = sym->name;
	m.skip = skip_reason(fm->elf, sym, &m.offset);
	m.order = out->count;
	if (rv_array_grow(&out->items, &out->capacity, out->count, sizeof(*out->items), 64))
		return -ENOMEM;
	out->items[out->count++] = m;
	return 0;
}

/* Appends the functions with a size (symtab.h) of elf that glob matches. */
static int match_file(Elf *elf, const char *glob, struct matches *out, struct rv_error *err)
{
	struct rv_symtab_source src = { .elf = elf };
	struct file_matches fm = { .elf = elf, .glob = glob, .out = out };

	if (rv_symtab_read(&src, RV_SYMTAB_SIZED, match_symbol, &fm))
		return rv_error_set(err, ENOMEM, "out of memory");
	return 0;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool already_skipped(const struct rv_fn_list *list, const char *path, const char *name)
{
	for (size_t i = 0; i < list->nr_skipped; i++)
		if (!strcmp(list->skipped[i].name, name) && !strcmp(list->skipped[i].path, path))
			return true;
	return false;
}

static int compare_match(const void *a, const void *b)
{
	const struct match *x = a, *y = b;

	if (x->address != y->address)
		return x->address < y->address ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The addresses of path's functions already in list, sorted (*nr of them). */
static uint64_t *selected_addresses(const struct rv_fn_list *list, const char *path, size_t *nr)
{
	uint64_t *addrs = malloc((list->count ? list->count : 1) * sizeof(*addrs));

	*nr = 0;
	if (!addrs)
		return NULL;
	for (size_t i = 0; i < list->count; i++)
		if (list->items[i].path == path)
			addrs[(*nr)++] = list->items[i].address;
	qsort(addrs, *nr, sizeof(*addrs), compare_u64);
	return addrs;
}

/* Adds the matches of one pattern in one file: aliases once, skips listed.
 * owned_path: the list's copy of the file's path. */
static int add_matches(struct rv_fn_list *list, const char *owned_path, struct matches *m,
		       size_t max_functions, struct rv_error *err)
{
	size_t nr_before;
	uint64_t *before = selected_addresses(list, owned_path, &nr_before);

	if (!before)
		return rv_error_set(err, ENOMEM, "out of memory");
	qsort(m->items, m->count, sizeof(*m->items), compare_match);
	for (size_t i = 0; i < m->count; i++) {
		const struct match *x = &m->items[i];

		if (i > 0 && m->items[i - 1].address == x->address)
			continue;
		if (x->skip) {
			if (already_skipped(list, owned_path, x->name))
				continue;
			if (rv_array_grow(&list->skipped, &list->skipped_capacity, list->nr_skipped,
					  sizeof(*list->skipped), 64))
				goto nomem;
			list->skipped[list->nr_skipped] = (struct rv_fn_skipped){
				.path = owned_path,
				.name = own(list, x->name),
				.reason = x->skip,
				.address = x->address,
			};
			if (!list->skipped[list->nr_skipped].name)
				goto nomem;
			list->nr_skipped++;
			continue;
		}
		if (nr_before &&
		    bsearch(&x->address, before, nr_before, sizeof(*before), compare_u64))
			continue;
		if (list->count >= max_functions) {
			free(before);
			return rv_error_set(err, E2BIG,
					    "--functions selects more than %zu functions; narrow "
					    "the patterns",
					    max_functions);
		}
		if (rv_array_grow(&list->items, &list->capacity, list->count, sizeof(*list->items),
				  64))
			goto nomem;
		list->items[list->count] = (struct rv_fn_probe){ .path = owned_path,
								 .offset = x->offset,
								 .address = x->address,
								 .size = x->size,
								 .name = own(list, x->name) };
		if (!list->items[list->count].name)
			goto nomem;
		list->count++;
	}
	free(before);
	return 0;
nomem:
	free(before);
	return rv_error_set(err, ENOMEM, "out of memory");
}

/* The list's copy of path: the one its functions or skips already share. */
static const char *owned_path(struct rv_fn_list *list, const char *path)
{
	for (size_t i = 0; i < list->count; i++)
		if (!strcmp(list->items[i].path, path))
			return list->items[i].path;
	for (size_t i = 0; i < list->nr_skipped; i++)
		if (!strcmp(list->skipped[i].path, path))
			return list->skipped[i].path;
	return own(list, path);
}

struct exact_name {
	const char *name;
	bool found;
};

static int is_named(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct exact_name *e = ctx;

	if (strcmp(sym->name, e->name))
		return 0;
	e->found = true;
	return 1;
}

/* Says of each IFUNC skipped from index first on what it resolves to in
 * process pid (ifunc.h), and whether the pattern LIB:NAME (the pattern's
 * LIB) would select that. */
static int note_ifuncs(struct rv_fn_list *list, size_t first, Elf *elf, const char *pattern,
		       pid_t pid, struct rv_error *err)
{
	size_t lib_len;

	rv_fn_pattern_split(pattern, &lib_len);
	for (size_t i = first; i < list->nr_skipped; i++) {
		struct rv_fn_skipped *k = &list->skipped[i];
		char target[256], note[768];
		struct rv_symtab_source src = { .elf = elf };
		struct exact_name e = { .name = target };

		if (strcmp(k->reason, RV_FN_SKIP_IFUNC))
			continue;
		switch (rv_ifunc_resolve(pid, k->path, k->address, k->name, target,
					 sizeof(target))) {
		case RV_IFUNC_RESOLVED:
			rv_symtab_read(&src, RV_SYMTAB_SIZED, is_named, &e);
			if (e.found)
				snprintf(note, sizeof(note), "here %s: use --functions '%.*s%s%s'",
					 target, (int)lib_len, pattern, lib_len ? ":" : "", target);
			else
				snprintf(note, sizeof(note),
					 "here %s, which only the library's debug symbols name: "
					 "--functions cannot select it",
					 target);
			break;
		case RV_IFUNC_NOT_LOADED:
			snprintf(note, sizeof(note),
				 "not resolved yet: the program had not loaded its library");
			break;
		default:
			snprintf(note, sizeof(note),
				 "not resolved: the program has not called it yet");
			break;
		}
		k->note = own(list, note);
		if (!k->note)
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* Selects glob's functions in the file at path. */
static int select_in_file(struct rv_fn_list *list, const char *pattern, const char *glob,
			  const char *path, pid_t pid, size_t max_functions, struct rv_error *err)
{
	size_t skipped_before = list->nr_skipped;
	struct matches m = { 0 };
	struct rv_symtab_file f;
	const char *owned;
	int ret;

	ret = rv_symtab_file_open(&f, path, err);
	if (ret)
		return rv_error_prefix(err, "--functions %s", pattern);
	ret = match_file(f.elf, glob, &m, err);
	if (!ret && m.count == 0 && rv_symtab_stripped(f.elf, NULL))
		ret = rv_error_set(
			err, ENOENT,
			"--functions %s: no function of '%s' matches it, and it is "
			"stripped (it has no symbol table; only the functions it exports "
			"have names, which `nm -D --defined-only %s` lists); --functions "
			"reads the names in the file itself: trace a build of it that is "
			"not stripped, or record it with sampling (--sampling names its "
			"functions after their call frame information, as fn_HEX)",
			pattern, path, path);
	else if (!ret && m.count == 0)
		ret = rv_error_set(err, ENOENT,
				   "--functions %s: no function of '%s' matches it; list them "
				   "with `nm --defined-only %s`",
				   pattern, path, path);
	if (!ret) {
		owned = owned_path(list, path);
		ret = owned ? add_matches(list, owned, &m, max_functions, err)
			    : rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!ret)
		ret = note_ifuncs(list, skipped_before, f.elf, pattern, pid, err);
	free(m.items);
	rv_symtab_file_close(&f);
	return ret;
}

static int resolve_exe(const char *exe, pid_t pid, char *path, size_t size, struct rv_error *err)
{
	if (exe) {
		if (strlen(exe) >= size)
			return rv_error_set(err, ENAMETOOLONG, "path too long: %s", exe);
		snprintf(path, size, "%s", exe);
		return 0;
	}
	if (pid <= 0)
		return rv_error_set(err, EINVAL, "no executable to select functions in");
	return rv_proc_exe(pid, path, size, err);
}

/* The file a pattern names (the executable, or LIB's path in lib_path) and
 * its glob. */
static int pattern_file(const char *option, const char *pattern, const char *exe_path, pid_t pid,
			char *lib_path, size_t size, const char **path, const char **glob,
			struct rv_error *err)
{
	char lib[PATH_MAX];
	size_t lib_len;
	int ret;

	*path = exe_path;
	*glob = pattern;
	if (!pattern || !*pattern || strlen(pattern) > RV_FN_MAX_PATTERN)
		return rv_error_set(err, EINVAL,
				    "%s: empty or overlong pattern; give globs such as 'parse_*' "
				    "or 'libc:mall*'",
				    option);
	rv_fn_pattern_split(pattern, &lib_len);
	if (!lib_len)
		return 0;
	if (lib_len >= sizeof(lib) || !pattern[lib_len + 1])
		return rv_error_set(err, EINVAL, "%s %s: give LIB:PATTERN, such as libc:mall*",
				    option, pattern);
	memcpy(lib, pattern, lib_len);
	lib[lib_len] = '\0';
	ret = rv_find_library(lib, exe_path, pid, option, "PATTERN", lib_path, size, err);
	if (ret)
		return rv_error_prefix(err, "%s %s", option, pattern);
	*glob = pattern + lib_len + 1;
	*path = lib_path;
	return 0;
}

/* Whether an alias of function f (a symbol at its address) matches glob. */
struct alias_match {
	const char *glob;
	uint64_t address;
	bool found;
};

static int match_alias(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct alias_match *a = ctx;

	if (sym->addr == a->address && *sym->name && rv_fn_name_matches(a->glob, sym->name)) {
		a->found = true;
		return 1;
	}
	return 0;
}

/* Takes out of list, from index first on, the functions of path that glob
 * matches by any of their names. */
static int exclude_in_file(struct rv_fn_list *list, size_t first, const char *glob,
			   const char *path, struct rv_error *err)
{
	struct rv_symtab_file f;
	struct rv_symtab_source src;
	size_t kept = first;
	int ret = 0;
	bool opened = false;

	for (size_t i = first; i < list->count; i++) {
		struct rv_fn_probe *p = &list->items[i];
		bool excluded = false;

		if (!strcmp(p->path, path)) {
			excluded = rv_fn_name_matches(glob, p->name);
			if (!excluded && !opened) {
				ret = rv_symtab_file_open(&f, path, err);
				if (ret)
					return ret;
				opened = true;
			}
			if (!excluded) {
				struct alias_match a = { .glob = glob, .address = p->address };

				src = (struct rv_symtab_source){ .elf = f.elf };
				rv_symtab_read(&src, RV_SYMTAB_SIZED, match_alias, &a);
				excluded = a.found;
			}
		}
		if (excluded) {
			list->nr_excluded++;
			continue;
		}
		list->items[kept++] = *p;
	}
	list->count = kept;
	if (opened)
		rv_symtab_file_close(&f);
	return 0;
}

int rv_fn_select(struct rv_fn_list *list, const struct rv_fn_patterns *patterns, const char *exe,
		 pid_t pid, size_t max_functions, struct rv_error *err)
{
	static const char *const every[] = { "*" };
	char exe_path[PATH_MAX], lib_path[PATH_MAX];
	const char *const *include = patterns ? patterns->include : NULL;
	size_t nr_include = patterns ? patterns->nr_include : 0, first = list->count;
	int ret;

	ret = resolve_exe(exe, pid, exe_path, sizeof(exe_path), err);
	if (ret)
		return ret;
	if (!nr_include) {
		include = every;
		nr_include = 1;
	}
	for (size_t i = 0; i < nr_include; i++) {
		const char *path, *glob;

		ret = pattern_file("--functions", include[i], exe_path, pid, lib_path,
				   sizeof(lib_path), &path, &glob, err);
		if (!ret)
			ret = select_in_file(list, include[i], glob, path, pid, max_functions, err);
		if (ret)
			return ret;
	}
	for (size_t i = 0; patterns && i < patterns->nr_exclude; i++) {
		const char *path, *glob;

		ret = pattern_file("--exclude", patterns->exclude[i], exe_path, pid, lib_path,
				   sizeof(lib_path), &path, &glob, err);
		if (!ret)
			ret = exclude_in_file(list, first, glob, path, err);
		if (ret)
			return ret;
	}
	return 0;
}
