/* symbolizer.h: addresses to function names, for user code (elfutils libdwfl
 * over the mappings the capture recorded) and for the kernel (its modules'
 * .ko files, vmlinux and kallsyms: kernel_syms.h says in which order and
 * how each is placed).
 *
 * The caller reports each process's file mappings as the capture lists them
 * (MMAP2 records, synthesized ones included); lookups then go through a cache
 * by (pid, address), because the trace builder asks for the same addresses
 * constantly. Names are demangled (C++ and Rust legacy mangling; Rust's hash
 * suffix is dropped). Symbols come from the file, a separate debug file or
 * MiniDebugInfo (debuginfo.h says where libdwfl looks). In a stripped file
 * without those, code its exported symbols do not cover is named after its
 * function's FDE (symtab.h): "module!fn_HEX", HEX the function's link-time
 * start, with `known` true and the FDE's start and size, so that the code of
 * one function has one name. Where nothing covers an address, the result
 * still names something useful: "module+0xOFFSET" when a mapping covers it,
 * or "0xADDRESS" otherwise, with `known` false.
 *
 * Every string returned is owned by the symbolizer and lives until it is freed,
 * so callers may keep and compare the pointers (same function, same pointer).
 *
 * This module is not: an unwinder (see symbolize/unwind.h, which borrows the
 * per-process Dwfl) nor a reader of the capture.
 */
#ifndef RV_SYMBOLIZE_SYMBOLIZER_H
#define RV_SYMBOLIZE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct Dwfl Dwfl;

struct rv_symbolizer_options {
	/* Kernel names (kernel_syms.h); all NULL: no kernel symbols. The
	 * caller passes them only when the kernel is in scope. */
	const char *kallsyms_path; /* a kallsyms file: "/proc/kallsyms", a capture's copy */
	const char *vmlinux;	   /* --vmlinux: its symbol table, moved by KASLR */
	const char *modules;	   /* a /proc/modules list: where modules are */
	const char *modules_dir;   /* where their .ko files are: /lib/modules/RELEASE */
	bool kernel;		   /* kernel code is in scope, even without those: say so */
	/* Look up DWARF file and line for each symbol (costs time on first lookup). */
	bool want_lines;
};

struct rv_symbol {
	const char *name;   /* demangled; never NULL */
	const char *module; /* file name of the DSO, "[kernel.kallsyms]", "[module]", or "" */
	const char *file;   /* source file (want_lines and DWARF present), else NULL */
	uint64_t start; /* address of the function's first byte; the address itself when !known */
	uint64_t size;	/* function size in bytes, 0 if unknown */
	int line;	/* source line, 0 if unknown */
	bool known;	/* a symbol covers the address */
	bool kernel;	/* the address is a kernel address */
};

struct rv_symbolizer;

int rv_symbolizer_new(struct rv_symbolizer **out, const struct rv_symbolizer_options *options,
		      struct rv_error *err);

/* A file mapping of process pid: [start, start+len) maps `path` from file
 * offset pgoff. Only executable mappings matter; others may be passed and are
 * ignored. Mappings of files that cannot be opened (deleted, missing) are
 * kept so their addresses are named after the file. Fails only on
 * allocation failure. "[vdso]" and other special names are accepted as
 * names. The kernel's mappings (pid UINT32_MAX, perf's -1: its
 * "[kernel.kallsyms]_text" and its modules') place the kernel's symbols
 * instead, when they come before the first kernel lookup. */
int rv_symbolizer_add_mapping(struct rv_symbolizer *s, uint32_t pid, uint64_t start, uint64_t len,
			      uint64_t pgoff, bool executable, const char *path,
			      struct rv_error *err);

/* Forgets process pid's mappings (exec replaced its image). */
void rv_symbolizer_forget_process(struct rv_symbolizer *s, uint32_t pid);

/* Process child was forked from parent: it starts with parent's mappings (what
 * it had before is forgotten). Fails only on allocation failure. */
int rv_symbolizer_fork(struct rv_symbolizer *s, uint32_t parent, uint32_t child,
		       struct rv_error *err);

/* Kernel code [addr, addr + size) is `name` (a BPF program's function, as
 * PERF_RECORD_KSYMBOL names it), before the kernel's other sources; the
 * latest added wins where they overlap. Add them before the first lookup
 * (lookups are cached). Fails only on allocation failure. */
int rv_symbolizer_add_kernel_symbol(struct rv_symbolizer *s, uint64_t addr, uint64_t size,
				    const char *name, struct rv_error *err);

/* Names addr in process pid, where the symbolizer keeps the answer (its
 * cache), for a caller that reads a field or two: valid until the next call
 * on the symbolizer; never NULL. Kernel addresses (high half) use the
 * kernel's sources; module is then "[kernel.kallsyms]" or the module's
 * "[name]". */
const struct rv_symbol *rv_symbolizer_find(struct rv_symbolizer *s, uint32_t pid, uint64_t addr);

/* rv_symbolizer_find's answer, copied to *out. */
static inline void rv_symbolizer_lookup(struct rv_symbolizer *s, uint32_t pid, uint64_t addr,
					struct rv_symbol *out)
{
	*out = *rv_symbolizer_find(s, pid, addr);
}

/* Where code is in its source, from DWARF's line table: for a span's
 * arguments (the trace builder asks it of each function's first byte). */
struct rv_source {
	const char *file; /* as DWARF names it (usually absolute); owned by the symbolizer */
	int line;	  /* 1-based */
	int column;	  /* 1-based; 0 when DWARF does not record it */
};

/* The source file, line and column of user code at addr in process pid,
 * whatever want_lines says; false (and *out zeroed) for kernel addresses,
 * unmapped ones and files without DWARF (a separate debug file found as
 * debuginfo.h says counts). Answers are cached by (pid's mappings,
 * address), failures too: each address costs libdw's line lookup once. */
bool rv_symbolizer_source(struct rv_symbolizer *s, uint32_t pid, uint64_t addr,
			  struct rv_source *out);

/* The libdwfl session holding process pid's modules (created on first use),
 * for the DWARF unwinder; NULL when pid has no mappings. */
Dwfl *rv_symbolizer_dwfl(struct rv_symbolizer *s, uint32_t pid);

/* Copies up to len bytes of the code at addr in process pid from the mapped
 * file's section (SHT_NOBITS and unmapped addresses give 0). Returns the bytes
 * copied. */
size_t rv_symbolizer_read_code(struct rv_symbolizer *s, uint32_t pid, uint64_t addr, void *buf,
			       size_t len);

struct rv_symbolizer_stats {
	uint64_t lookups, cache_hits;
	uint64_t modules;	/* ELF files opened */
	uint64_t missing_files; /* mapped files that could not be opened */
	uint64_t kernel_symbols;
};

void rv_symbolizer_stats(const struct rv_symbolizer *s, struct rv_symbolizer_stats *out);

/* What the kernel's names lack, once a kernel address was named (see
 * kernel_syms.h: rv_kernel_syms_problems), for the caller to tell the user;
 * NULL when nothing. Valid until the symbolizer is freed. */
const char *rv_symbolizer_kernel_problems(struct rv_symbolizer *s);

void rv_symbolizer_free(struct rv_symbolizer *s);

/* Demangles C++ (_Z...) and Rust legacy (_ZN...17h<hash>E) names into a
 * malloc'd string with the Rust hash dropped; NULL if name is not mangled. */
char *rv_demangle(const char *name);

#endif
