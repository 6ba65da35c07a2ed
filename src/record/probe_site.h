/* probe_site.h: where a uprobe goes for a --filter/--trigger spec: a file and
 * the file offset of the instruction.
 *
 * Specs (magic-trace's, with its prefixes):
 *   SYMBOL            a function of the target's executable ("main", "ns::f")
 *   LIB:SYMBOL        a function of a library the target maps or will map
 *                     ("libc.so.6:malloc", "libfoo.so:f", "/path/libfoo.so:f")
 *   0xADDR            a link-time virtual address in the executable
 *   FILE:LINE         the first is_stmt address of that source line (DWARF)
 *   FILE:LINE:COL     the same among the line table's rows of that column
 *   symbol:NAME       NAME as SYMBOL or LIB:SYMBOL, never as an address or line
 *   addr:ADDR         ADDR (hex, 0x optional) as an address
 *   line:FILE:LINE[:COL]  as FILE:LINE[:COL]
 *   .                 the program's magic_trace_stop_indicator, else its
 *                     rearview_stop_indicator
 *   ?, symbol:?       a function the user picks (rv_probe_site_choices)
 *   line:?            a source line the user picks
 * A '?' spec is never resolved here: the caller lets the user choose one of
 * rv_probe_site_choices and resolves the choice's spec.
 * A library is found in the running process's /proc/PID/maps when pid > 0 and
 * it is mapped there; else through the executable's DT_NEEDED, RUNPATH/RPATH,
 * /etc/ld.so.conf.d and the standard directories. A name matches a library
 * file exactly or as a prefix followed by '.' ("libc" and "libc.so" match
 * "libc.so.6").
 *
 * Symbols come from libdwfl (.symtab, separate debug files, .dynsym). A symbol's
 * address becomes a file offset through the executable PT_LOAD segment that
 * holds it (p_offset + addr - p_vaddr), for PIE and fixed-address files alike.
 * An IFUNC is refused with what it resolves to in the running process
 * (ifunc.h) and the spec that names that, or why that is not known.
 *
 * Not here: placing the probe (gate.h), symbolizing addresses (symbolize/).
 */
#ifndef RV_RECORD_PROBE_SITE_H
#define RV_RECORD_PROBE_SITE_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

struct rv_probe_site {
	char path[PATH_MAX]; /* the file to probe */
	uint64_t offset;     /* file offset of the instruction */
	uint64_t address;    /* its link-time virtual address in that file */
	char function[256];  /* the function at or containing it, "" if unknown */
};

/* The gate's sites for one target, resolved: --filter START,STOP and
 * --trigger (session/gating.h resolves them from the options). */
struct rv_gate_sites {
	bool filter, trigger;
	struct rv_probe_site start, stop, at; /* at: the trigger */
};

#define RV_STOP_INDICATOR     "magic_trace_stop_indicator"
#define RV_STOP_INDICATOR_OWN "rearview_stop_indicator"

enum rv_probe_spec_kind {
	RV_PROBE_SYMBOL,	 /* library (may be "") and name */
	RV_PROBE_ADDRESS,	 /* address */
	RV_PROBE_LINE,		 /* name (the source file), line, column (0: any) */
	RV_PROBE_STOP_INDICATOR, /* "." */
	RV_PROBE_PICK_FUNCTION,	 /* "?", "symbol:?" */
	RV_PROBE_PICK_LINE,	 /* "line:?" */
};

/* A spec read, not yet resolved against any file. */
struct rv_probe_spec {
	enum rv_probe_spec_kind kind;
	char library[PATH_MAX]; /* RV_PROBE_SYMBOL: LIB of LIB:SYMBOL, "" for the executable */
	char name[4096];	/* RV_PROBE_SYMBOL: the function; RV_PROBE_LINE: the file */
	uint64_t address;	/* RV_PROBE_ADDRESS: link-time address in the executable */
	int line, column;	/* RV_PROBE_LINE: line >= 1; column >= 1, or 0 for any */
};

/* Reads spec (grammar above); errors say what was expected. */
int rv_probe_spec_parse(const char *spec, struct rv_probe_spec *out, struct rv_error *err);

/* Whether spec asks the user to pick (?, symbol:?, line:?). */
bool rv_probe_spec_is_pick(const char *spec);

/* One thing the user may pick for a '?' spec. */
struct rv_probe_choice {
	char *label; /* what the list shows: a demangled name, or FILE:LINE (function) */
	char *spec;  /* what resolves it (rv_probe_site_resolve): addr:0xADDR, line:FILE:LINE */
};

/* What a pick spec offers in the executable (exe, or /proc/PID/exe when exe is
 * NULL): RV_PROBE_PICK_FUNCTION its defined functions (from .symtab, else
 * .dynsym; not its libraries'), by name, one per address; RV_PROBE_PICK_LINE
 * every source line with an is_stmt row in its DWARF line tables, by file then
 * line. *out is malloc'd (free it); an empty list is an error saying why. */
int rv_probe_site_choices(enum rv_probe_spec_kind kind, const char *exe, pid_t pid,
			  struct rv_probe_choice **out, size_t *nr, struct rv_error *err);

void rv_probe_choices_free(struct rv_probe_choice *list, size_t nr);

/* Resolves spec for a target whose executable is exe (NULL with pid > 0: the
 * process's /proc/PID/exe); pid > 0 also lets libraries be found where the
 * process maps them. Errors name the problem and what to do: unknown symbol
 * (with close names when there are any), ambiguous symbol, not a function, no
 * debug info or no code for FILE:LINE, no row of COL, address outside executable
 * segments, library not found, no stop indicator; a pick spec is refused
 * (EINVAL): pick first. */
int rv_probe_site_resolve(const char *spec, const char *exe, pid_t pid, struct rv_probe_site *out,
			  struct rv_error *err);

/* The file offset of link-time address addr in the ELF file at path, through
 * its executable PT_LOAD segments; -EFAULT (with err) when no such segment
 * holds addr. */
int rv_probe_site_file_offset(const char *path, uint64_t addr, uint64_t *offset,
			      struct rv_error *err);

#endif
