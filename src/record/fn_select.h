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
 * executable section or segment, IFUNC resolvers, and functions a return
 * probe would break (entered by a jump, like the entry point or the lazy
 * binder, or returning twice, like setjmp and vfork).
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

struct rv_fn_probe {
	const char *path; /* the file to probe (owned by the list, shared per file) */
	uint64_t offset;  /* file offset of the function's first instruction */
	uint64_t address; /* the symbol's value: link-time address */
	uint64_t size;	  /* the symbol's size */
	const char *name; /* the symbol's raw name (owned by the list) */
};

/* A match that will not be probed, and why ("an IFUNC resolver", ...). */
struct rv_fn_skipped {
	const char *path;
	const char *name;
	const char *reason; /* a static string */
};

struct rv_fn_list {
	struct rv_fn_probe *items;
	size_t count, capacity;
	struct rv_fn_skipped *skipped;
	size_t nr_skipped, skipped_capacity;
	char **strings; /* every string the list owns */
	size_t nr_strings, strings_capacity;
};

void rv_fn_list_init(struct rv_fn_list *list);
void rv_fn_list_destroy(struct rv_fn_list *list);

/* Adds to list the functions the patterns select in the program whose
 * executable is exe (pid > 0: the running process, for the libraries it
 * maps). nr_patterns 0: every function of the executable. Every pattern must
 * match a function (else the error names it and suggests `nm`); what
 * matches but cannot be probed goes to list->skipped. At most max_functions
 * in all (else an error saying to narrow the patterns). */
int rv_fn_select(struct rv_fn_list *list, const char *const *patterns, size_t nr_patterns,
		 const char *exe, pid_t pid, size_t max_functions, struct rv_error *err);

/* Splits a pattern "LIB:GLOB" at its library separator (the first ':' that is
 * not part of a C++ "::"): *lib_len is the length of LIB, 0 without one. */
void rv_fn_pattern_split(const char *pattern, size_t *lib_len);

/* Whether glob matches a symbol (raw name, demangled, or demangled without
 * parameters). */
bool rv_fn_name_matches(const char *glob, const char *raw_name);

#endif
