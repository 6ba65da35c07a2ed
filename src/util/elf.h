/* elf.h: two questions every reader of ELF symbol tables asks, answered
 * once with libelf: which symbol table to read, and where in the file the
 * code at a link-time address is.
 *
 * Not here: opening files, or which symbols are functions and what they are
 * called (src/symbolize/symtab.h, for every reader of function symbols).
 */
#ifndef RV_UTIL_ELF_H
#define RV_UTIL_ELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

/* .symtab, or .dynsym when there is no .symtab (a stripped file); NULL when
 * neither. *shdr is the section's header. */
Elf_Scn *rv_elf_symbol_table(Elf *elf, GElf_Shdr *shdr);

/* The file offset of link-time address addr through the executable PT_LOAD
 * segments (what a uprobe is placed by); false when none holds it. */
bool rv_elf_code_offset(Elf *elf, uint64_t addr, uint64_t *offset);

#endif
