/* symtab.h: one ELF file's function symbols, sorted for binary search
 * (private to src/symbolize/).
 *
 * Built once per file from the symbols libdwfl finds for a module (its
 * .symtab, a separate .debug file's, MiniDebugInfo, or .dynsym as a last
 * resort), then shared by every process that maps the file. Addresses are the
 * file's link-time addresses, so a process adds its load bias. It exists
 * because dwfl_module_addrinfo scans the whole table on every call, which is
 * far too slow for a tracer that names millions of addresses.
 *
 * This is not: a DWARF reader (file and line come from libdwfl directly).
 */
#ifndef RV_SYMBOLIZE_SYMTAB_H
#define RV_SYMBOLIZE_SYMTAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct Dwfl_Module Dwfl_Module;

struct rv_symtab_entry {
	uint64_t addr;	      /* link-time address of the first byte */
	uint64_t size;	      /* st_size; 0 when the symbol has none */
	uint64_t span;	      /* bytes it covers: size, or up to the next symbol */
	const char *display;  /* the caller's readable, pooled name, once made */
	uint32_t name_offset; /* of the raw (mangled) name in the table's names */
};

struct rv_symtab {
	struct rv_symtab_entry *entries;
	size_t nr;
	char *names;
	size_t names_len;
};

/* Collects the function symbols of mod, which was reported with load bias
 * `bias`. A module without symbols gives an empty table. Returns 0 or -ENOMEM. */
int rv_symtab_build(struct rv_symtab **out, Dwfl_Module *mod, uint64_t bias);

/* The innermost symbol covering link-time address addr, or NULL. */
struct rv_symtab_entry *rv_symtab_find(const struct rv_symtab *table, uint64_t addr);

static inline const char *rv_symtab_raw_name(const struct rv_symtab *table,
					     const struct rv_symtab_entry *entry)
{
	return table->names + entry->name_offset;
}

void rv_symtab_free(struct rv_symtab *table);

#endif
