/* elf.h: questions every reader of ELF files asks, answered once with
 * libelf: which symbol table to read, where in the file the code at a
 * link-time address is, and what a file's (or the running kernel's) GNU
 * build id is.
 *
 * Not here: opening files, or which symbols are functions and what they are
 * called (src/symbolize/symtab.h, for every reader of function symbols).
 */
#ifndef RV_UTIL_ELF_H
#define RV_UTIL_ELF_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GNU build ids are 20 bytes (SHA-1) at most, as perf keeps them. */
#define RV_BUILD_ID_MAX 20

/* .symtab, or .dynsym when there is no .symtab (a stripped file); NULL when
 * neither. *shdr is the section's header. */
Elf_Scn *rv_elf_symbol_table(Elf *elf, GElf_Shdr *shdr);

/* The file offset of link-time address addr through the executable PT_LOAD
 * segments (what a uprobe is placed by); false when none holds it. */
bool rv_elf_code_offset(Elf *elf, uint64_t addr, uint64_t *offset);

/* NT_GNU_BUILD_ID in a block of ELF notes of size bytes (4-byte aligned, as
 * the kernel's and x86-64 notes are; every size checked against the block):
 * its first RV_BUILD_ID_MAX bytes copied to id, and its size; 0 when there
 * is none. */
size_t rv_build_id_in_notes(const uint8_t *notes, size_t size, uint8_t id[RV_BUILD_ID_MAX]);

/* An ELF file's GNU build id, from its note sections, else its note
 * segments: its size, or 0. */
size_t rv_elf_build_id(Elf *elf, uint8_t id[RV_BUILD_ID_MAX]);

/* The running kernel's GNU build id (/sys/kernel/notes): its size, 0 when
 * it cannot be read. */
size_t rv_kernel_running_build_id(uint8_t id[RV_BUILD_ID_MAX]);

#endif
