/* fn_select.h: which functions --functions probes: patterns to a table of
 * {file, file offset, symbol value, name}.
 *
 * A pattern is an fnmatch(3) glob over the FUNC symbols of the executable, or,
 * as LIB:GLOB, of a library (LIB as for a LIB:SYMBOL probe site: a path, or a
 * file name or its prefix up to a '.', "libc" or "libc.so.6", found where the
 * process maps it or where the dynamic linker would look). A glob matches a
 * symbol's raw name (without any "@VERSION"), its demangled name, or the
 * demangled name without its parameter list ("ns::f*" matches "ns::f(int)").
 * No pattern: every function of the executable.
 *
 * Symbols come from the file's .symtab, else its .dynsym: the functions with
 * a size (defined FUNC and IFUNC symbols, symbolize/symtab.h's
 * RV_SYMTAB_SIZED) that have a name. Symbols at the same address (aliases)
 * are one function, named by the first that matched. A function's file
 * offset comes from the executable PT_LOAD segment that holds it. Matches
 * that cannot be probed are skipped and listed with the reason: outside an
 * executable section or segment, IFUNCs (each with what it resolves to in the
 * running process, when there is one: record/ifunc.h), and functions whose probes
 * would break them or lie (entered by a jump, like the entry point or the
 * lazy binder, which have no return address to return to, or returning
 * twice, like setjmp and vfork).
 *
 * Not here: placing the probes (fn_engine.h), naming addresses in the trace
 * (symbolize/).
 */
#ifndef RV_RECORD_FN_SELECT_H
#define RV_RECORD_FN_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* Longest pattern accepted (bytes, the terminating NUL excluded). */
#define RV_FN_MAX_PATTERN 1024

/* How a function's exits are probed (fn_exits.h decides). */
enum rv_fn_exit_method {
	RV_FN_EXITS_URETPROBE = 0, /* a uretprobe: --exits uretprobe, or code not decoded */
	RV_FN_EXITS_SITES = 1,	   /* a uprobe at each return site */
};

struct rv_fn_site;

struct rv_fn_probe {
	const char *path; /* the file to probe (owned by the list, shared per file) */
	uint64_t offset;  /* file offset of the function's first instruction */
	uint64_t address; /* the symbol's value: link-time address */
	uint64_t size;	  /* the symbol's size */
	const char *name; /* the symbol's raw name (owned by the list) */
	/* Set by rv_fn_exits_plan (fn_exits.h); before it, or without it:
	 * uretprobe, no sites. */
	enum rv_fn_exit_method exits;
	const struct rv_fn_site *sites; /* RV_FN_EXITS_SITES: its return sites (the list's) */
	size_t first_site, nr_sites;	/* in list->sites */
	size_t nr_pieces;		/* out-of-line pieces found ("foo.cold") */
	size_t indirect_jumps;		/* in its code: not probed (fn_exits.h) */
	/* RV_FN_EXITS_SITES: bytes after offset where its entry probe goes
	 * (an endbr64 skipped, fn_exits.h's entry_skip), else 0 */
	uint8_t entry_skip;
	const char *exits_problem; /* why its code could not serve (static), or NULL */
	uint64_t problem_address;  /* where (link-time) */
};

/* Why an IFUNC is skipped (a skipped function's reason is this pointer). */
#define RV_FN_SKIP_IFUNC "an IFUNC, resolved by its library when it loads"

/* A match that will not be probed, and why ("an IFUNC: ...", ...). */
struct rv_fn_skipped {
	const char *path;
	const char *name;
	const char *reason; /* a static string, the same for one reason */
	uint64_t address;   /* the symbol's value (an IFUNC's: its resolver) */
	/* of this one, or NULL: an IFUNC's, what it resolves to in the
	 * running process and the pattern that selects that (record/ifunc.h),
	 * or why it could not be resolved (owned by the list) */
	const char *note;
};

struct rv_fn_list {
	struct rv_fn_probe *items;
	size_t count, capacity;
	struct rv_fn_skipped *skipped;
	size_t nr_skipped, skipped_capacity;
	char **strings; /* every string the list owns */
	size_t nr_strings, strings_capacity;
	struct rv_fn_site *sites; /* every function's return sites (rv_fn_exits_plan) */
	size_t nr_sites, sites_capacity;
	size_t nr_excluded; /* functions --exclude took out */
};

void rv_fn_list_init(struct rv_fn_list *list);
void rv_fn_list_destroy(struct rv_fn_list *list);

/* The patterns of a selection: --functions (none: every function of the
 * executable) and --exclude (none: nothing excluded), same syntax. */
struct rv_fn_patterns {
	const char *const *include;
	size_t nr_include;
	const char *const *exclude;
	size_t nr_exclude;
};

/* Adds to list the functions the include patterns select in the program
 * whose executable is exe (pid > 0: the running process, for the libraries
 * it maps), less those an exclude pattern matches (by any of their names, in
 * the pattern's file; list->nr_excluded counts them; an exclude pattern that
 * matches nothing excludes nothing). Every include pattern must match a
 * function (else the error names it and suggests `nm`); what matches but
 * cannot be probed goes to list->skipped. Pieces of functions ("foo.cold",
 * symtab.h's rv_symtab_piece_of) are never selected: they are part of their
 * parent. At most max_functions in all (else an error saying to narrow the
 * patterns). */
int rv_fn_select(struct rv_fn_list *list, const struct rv_fn_patterns *patterns, const char *exe,
		 pid_t pid, size_t max_functions, struct rv_error *err);

/* Splits a pattern "LIB:GLOB" at its library separator (the first ':' that is
 * not part of a C++ "::"): *lib_len is the length of LIB, 0 without one. */
void rv_fn_pattern_split(const char *pattern, size_t *lib_len);

/* Whether glob matches a symbol (raw name, demangled, or demangled without
 * parameters). */
bool rv_fn_name_matches(const char *glob, const char *raw_name);

#endif
