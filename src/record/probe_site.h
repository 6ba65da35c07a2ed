/* probe_site.h: where a uprobe goes for a --filter/--trigger spec: a file and
 * the file offset of the instruction.
 *
 * Specs:
 *   SYMBOL            a function of the target's executable ("main", "ns::f")
 *   LIB:SYMBOL        a function of a library the target maps or will map
 *                     ("libc.so.6:malloc", "libfoo.so:f", "/path/libfoo.so:f")
 *   0xADDR            a link-time virtual address in the executable
 *   FILE:LINE         the first is_stmt address of that source line (DWARF)
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

/* Resolves spec for a target whose executable is exe (NULL with pid > 0: the
 * process's /proc/PID/exe); pid > 0 also lets libraries be found where the
 * process maps them. Errors name the problem and what to do: unknown symbol
 * (with close names when there are any), ambiguous symbol, not a function, no
 * debug info or no code for FILE:LINE, address outside executable segments,
 * library not found. */
int rv_probe_site_resolve(const char *spec, const char *exe, pid_t pid, struct rv_probe_site *out,
			  struct rv_error *err);

/* The file offset of link-time address addr in the ELF file at path, through
 * its executable PT_LOAD segments; -EFAULT (with err) when no such segment
 * holds addr. */
int rv_probe_site_file_offset(const char *path, uint64_t addr, uint64_t *offset,
			      struct rv_error *err);

#endif
