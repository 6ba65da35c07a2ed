/* symtab.h: which address ranges of an ELF file are functions, and what they
 * are called. The one reader of function symbols, for the PT decoder (the
 * stretches of code it drops jumps inside), --functions (the symbols it
 * probes, record/fn_select) and the symbolizer (names).
 *
 * Symbols come from a file read with libelf (its .symtab, else its .dynsym)
 * or from a libdwfl module (its .symtab, a separate .debug file's,
 * MiniDebugInfo, or .dynsym as a last resort), through one reader that
 * judges each by these rules:
 *
 * - A function is a FUNC or IFUNC symbol that is defined (its section index
 *   is not SHN_UNDEF). With a size (st_size) its extent is certain:
 *   RV_SYMTAB_SIZED takes those.
 * - Names (RV_SYMTAB_NAMING) take functions without a size too, and bare
 *   labels (NOTYPE) in code (a section with SHF_EXECINSTR), as hand-written
 *   assembly has them; but only symbols with a name, in a loaded section of
 *   the file (not SHN_ABS, SHN_COMMON or another reserved index, nor a
 *   section that is not loaded). A symbol without a size covers the code up
 *   to the next symbol, within its section (its span).
 * - Aliases, symbols at one address, are one function. For names: the name a
 *   reader expects (a function over a bare label, fewer leading underscores,
 *   "malloc" over "__libc_malloc", global over weak over local, one with a
 *   size, then the smaller name) and its size, else the first alias's size in
 *   that order. For the decoder's stretches: the longest of them.
 * - Nested and overlapping symbols: an address is named by the innermost
 *   symbol that covers it (the last to begin at or before it; failing that,
 *   the nearest of the 8 before that which encloses it). The stretch of
 *   code one function holds around an address (rv_symtab_around) ends where
 *   the next symbol begins, and the tail of a function after a symbol nested
 *   in it is held by none: a stretch is never a guess.
 * - Names are raw as in the table but without any "@VERSION"; the readable
 *   one is rv_demangle's, pooled, except that a piece of a function
 *   (rv_symtab_piece_of: "foo.cold") is shown as its parent ("foo"), so that
 *   code GCC moved out of line is named as the function it belongs to.
 *
 * Where the readers still differ, kept so that traces and --functions do
 * not change (the decoder must only drop a jump that the builder, naming
 * code through the symbolizer, would see stay in one function):
 * - the decoder and --functions read the file's own table with libelf, the
 *   symbolizer reads through libdwfl: for a file whose .symtab is in a
 *   separate debug file (libc with libc6-dbg), the first two have .dynsym's
 *   functions, the names have the debug file's;
 * - stretches have no unsized functions and no labels: a label inside a
 *   sized function names the code after it, where the stretch goes on;
 * - aliases of different sizes: the longest makes the stretch, the chosen
 *   name's size the span;
 * - functions with a size that are absolute, not loaded or unnamed make
 *   stretches but name nothing (and --functions may probe absolute ones);
 * - stretches of a stripped file's FDEs are added where libdwfl's symbols
 *   name none of the FDE, judged on libdwfl's reading, so they agree with
 *   the names; in files with symbols, FDEs make no stretches;
 * - the load bias of a mapping: the stretches take the first PT_LOAD that
 *   holds the mapped offset, the symbolizer an executable one first (they
 *   differ where a read-only and an executable segment share a file page,
 *   as lld lays files out).
 *
 * Not here: file and line (libdwfl, symbolizer.c), the kernel's symbols
 * (kallsyms.h), which functions --functions may probe (fn_select.h).
 */
#ifndef RV_SYMBOLIZE_SYMTAB_H
#define RV_SYMBOLIZE_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/intern.h"
#include "util/error.h"

typedef struct Elf Elf;
typedef struct Dwfl_Module Dwfl_Module;

/* ---- reading symbols ---- */

/* Where symbols come from: a file read with libelf (elf), or else a libdwfl
 * module (mod) that was reported with load bias `bias`. */
struct rv_symtab_source {
	Elf *elf;
	Dwfl_Module *mod;
	uint64_t bias;
};

/* Which symbols a reader is given (see the rules above). */
enum rv_symtab_select {
	RV_SYMTAB_SIZED,  /* functions with a size */
	RV_SYMTAB_NAMING, /* what names code: sized or not, labels, with a name */
};

/* Where a symbol lies. */
enum rv_symtab_place {
	RV_SYMTAB_UNDEFINED,  /* SHN_UNDEF: another file's */
	RV_SYMTAB_SPECIAL,    /* SHN_ABS, SHN_COMMON or another reserved index */
	RV_SYMTAB_UNLOADED,   /* a section that is not loaded (no SHF_ALLOC) */
	RV_SYMTAB_NO_SECTION, /* a section whose header cannot be read */
	RV_SYMTAB_DATA,	      /* a loaded section without code */
	RV_SYMTAB_CODE,	      /* a loaded section of code (SHF_EXECINSTR) */
};

struct rv_symtab_symbol {
	const char *name;	  /* as in the table, "@VERSION" included; "" if none */
	uint64_t addr;		  /* link-time address of its first byte */
	uint64_t size;		  /* st_size; 0 when it has none */
	unsigned char type, bind; /* STT_*, STB_* */
	enum rv_symtab_place place;
	uint64_t section_end; /* link-time end of its section (DATA, CODE) */
	size_t section;	      /* its section's index (DATA, CODE); in a relocatable
			       * file (ET_REL), addr is an offset into it */
};

/* Called for each symbol taken; a nonzero return stops the reading. */
typedef int (*rv_symtab_visit_fn)(void *ctx, const struct rv_symtab_symbol *sym);

/* Calls visit for each symbol of src that `select` takes, in table order.
 * A source without symbols has none. Returns 0, or visit's nonzero return. */
int rv_symtab_read(const struct rv_symtab_source *src, enum rv_symtab_select select,
		   rv_symtab_visit_fn visit, void *ctx);

/* A file opened with libelf for its symbols and headers. */
struct rv_symtab_file {
	int fd;
	Elf *elf;
};

/* Opens path, which must be an ELF file. Returns 0, or negative with err set
 * ("cannot open 'P': ..." or "'P' is not an ELF file"). */
int rv_symtab_file_open(struct rv_symtab_file *f, const char *path, struct rv_error *err);

void rv_symtab_file_close(struct rv_symtab_file *f);

/* Whether elf is stripped: it has no symbol table of its own (.symtab), so
 * only the functions it exports (.dynsym) are named in it. *mini_debuginfo
 * (may be NULL): it carries MiniDebugInfo (.gnu_debugdata), the compressed
 * symbol table that libdwfl reads for the names .dynsym lacks. */
bool rv_symtab_stripped(Elf *elf, bool *mini_debuginfo);

/* Whether the only names libdwfl has for mod are those its file exports:
 * the file is stripped, has no MiniDebugInfo, and libdwfl found no separate
 * debug file for it (it looks when the symbols are first read, which this
 * makes happen). */
bool rv_symtab_module_stripped(Dwfl_Module *mod);

/* ---- pieces of functions ---- */

/* Whether name (raw, "@VERSION" allowed) is an out-of-line piece of another
 * function rather than a function: GCC's "PARENT.cold" and "PARENT.cold.N"
 * (N decimal), the unlikely code it moves away from PARENT and reaches only
 * by jumps from it. *parent_len: the length of PARENT's raw name, which is a
 * symbol of the same file. Clones ("foo.isra.0", "foo.constprop.1",
 * "foo.part.0") are not pieces: they are called, and are functions of their
 * own; "foo.constprop.0.cold" is a piece of the clone "foo.constprop.0". */
bool rv_symtab_piece_of(const char *name, size_t *parent_len);

/* ---- names: a file's index for lookups by address ---- */

struct rv_symtab_entry {
	uint64_t addr;	      /* link-time address of the first byte */
	uint64_t size;	      /* st_size; 0 when the symbol has none */
	uint64_t span;	      /* bytes it covers: size, or up to the next symbol */
	const char *display;  /* the readable, pooled name, once made */
	uint32_t name_offset; /* of the raw (mangled) name in the table's names */
};

/* One file's naming symbols (aliases merged), sorted by address. Built once
 * per file, then shared by every process that maps it: addresses are the
 * file's link-time ones, to which a process adds its load bias. (It exists
 * because dwfl_module_addrinfo scans the whole table on every call, which is
 * far too slow for a tracer that names millions of addresses.) */
struct rv_symtab {
	struct rv_symtab_entry *entries;
	size_t nr;
	char *names;
	size_t names_len;
};

/* Builds the index of src's RV_SYMTAB_NAMING symbols. A source without
 * symbols gives an empty index. Returns 0 or -ENOMEM. */
int rv_symtab_build(struct rv_symtab **out, const struct rv_symtab_source *src);

/* The innermost symbol covering link-time address addr, or NULL. */
struct rv_symtab_entry *rv_symtab_find(const struct rv_symtab *table, uint64_t addr);

static inline const char *rv_symtab_raw_name(const struct rv_symtab *table,
					     const struct rv_symtab_entry *entry)
{
	return table->names + entry->name_offset;
}

/* The readable name (demangled) of entry, interned in pool and kept in the
 * entry (so an index is one thread's); NULL when memory runs out. */
const char *rv_symtab_display_name(const struct rv_symtab *table, struct rv_symtab_entry *entry,
				   struct rv_intern *pool);

/* Whether a symbol of table names any address of [start, end) (link-time):
 * whether rv_symtab_find finds something for one of them. */
bool rv_symtab_names_any(const struct rv_symtab *table, uint64_t start, uint64_t end);

void rv_symtab_free(struct rv_symtab *table);

/* ---- functions without symbols: their call frame information ----
 *
 * A stripped file still says where its functions are: the compiler writes
 * call frame information (an FDE in .eh_frame) for each function, for
 * unwinding. In a file whose only names are the ones it exports
 * (rv_symtab_module_stripped), the FDE around an address no symbol names
 * stands for its function: the symbolizer names it "FILE!fn_HEX" (HEX its
 * first byte's link-time address, as objdump -d shows it), and the PT
 * decoder's stretches take the same bounds, so that both see one function.
 * Files with symbols of their own (or found for them) are named as before:
 * what no symbol names there (PLT stubs, crtstuff) is not a function.
 *
 * Where the FDEs begin comes from the linker's sorted table of them
 * (.eh_frame_hdr, through PT_GNU_EH_FRAME: the table libgcc's unwinder and
 * libdw search), the only one that lists them by address; where each ends,
 * from libdw (dwarf_cfi_addrframe gives the stretch of code each row of the
 * FDE's rules covers; an FDE ends where its last row does). A file without
 * that table, or with a table in an encoding other than the one linkers
 * write (DW_EH_PE_datarel | DW_EH_PE_sdata4), has no such functions. An FDE
 * that a symbol names any byte of names nothing: code is named by symbols
 * or by an FDE, never by both.
 */

/* [start, end): link-time addresses in a file's FDEs, run-time ones in a
 * process's stretches. */
struct rv_symtab_range {
	uint64_t start, end;
};

typedef struct Dwarf_CFI_s Dwarf_CFI;

/* A file's FDEs at link-time addresses, sorted, not overlapping. Where each
 * ends is found at the first lookup in it: following the rows costs about a
 * microsecond a row, a second for all of a large library (libLLVM: 98,000
 * FDEs), of which a trace needs few. Lookups write to it: one thread's. */
struct rv_symtab_fdes {
	struct rv_symtab_range *v; /* end 0: not found yet; end == start: unreadable */
	size_t nr;
	Dwarf_CFI *cfi; /* of the Elf given to open, which must outlive it */
};

/* Reads where elf's FDEs begin (none, without a table). Returns 0, or
 * -ENOMEM. */
int rv_symtab_fdes_open(struct rv_symtab_fdes *out, Elf *elf);

/* The FDE covering link-time address addr, or NULL. */
const struct rv_symtab_range *rv_symtab_fde_find(struct rv_symtab_fdes *fdes, uint64_t addr);

void rv_symtab_fdes_close(struct rv_symtab_fdes *fdes);

/* ---- stretches of code: a process's functions for the PT decoder ---- */

/* The RV_SYMTAB_SIZED functions of the files a process maps, and the FDEs
 * that no symbol names (see above), at run-time addresses. Built once (adds,
 * then rv_symtab_ranges_sort), then only read, so that any number of threads
 * may look up in it without locks. */
struct rv_symtab_ranges {
	struct rv_symtab_range *v; /* once sorted: one per start, cut short */
	size_t nr, cap;
};

/* Adds the function [start, end). Returns 0, or -ENOMEM. */
int rv_symtab_ranges_add(struct rv_symtab_ranges *r, uint64_t start, uint64_t end);

/* A PT_LOAD segment of a file, for the load bias of its mappings. */
struct rv_symtab_segment {
	uint64_t offset, vaddr, filesz;
	bool executable;
};

/* The load bias (run-time address less link-time address) of a mapping of
 * code at start of file offset pgoff: through the executable segment that holds
 * pgoff's page, else the first one that does. (A linker may put read-only
 * data and code in one file page at addresses a page apart, as lld does:
 * the code's bias is then not the read-only segment's.) False when no
 * segment holds it. The one rule for the symbolizer and the PT decoder's
 * ranges, which must agree. */
bool rv_symtab_load_bias(const struct rv_symtab_segment *segments, size_t nr, uint64_t pgoff,
			 uint64_t start, uint64_t *bias);

/* Adds the functions of `file` mapped at [start, start + len) from file offset
 * pgoff (an MMAP2 record's mapping) that begin inside the mapping: its sized
 * functions, and in a stripped file the FDEs that no symbol names. Whether
 * a file is stripped and a symbol names an FDE are judged as the symbolizer
 * judges them, on what libdwfl finds (a separate debug file, MiniDebugInfo;
 * debuginfo.h), so that the decoder drops no jump between code the
 * symbolizer names as two functions.
 * A file that cannot be read, or is not ELF, adds nothing. Returns 0, or
 * -ENOMEM. */
int rv_symtab_ranges_add_file(struct rv_symtab_ranges *r, const char *file, uint64_t pgoff,
			      uint64_t start, uint64_t len);

/* Makes the ranges ready for lookups; call once after the last add. */
void rv_symtab_ranges_sort(struct rv_symtab_ranges *r);

/* The stretch of code around addr that one function holds: [*start, *end)
 * such that every b in it is inside the same function as addr, and no b
 * outside it is. That is the function's range, cut short where another
 * (nested or overlapping) symbol begins, whose code then counts as that
 * other one's. False when no function holds addr. */
bool rv_symtab_around(const struct rv_symtab_ranges *r, uint64_t addr, uint64_t *start,
		      uint64_t *end);

void rv_symtab_ranges_destroy(struct rv_symtab_ranges *r);

#endif
