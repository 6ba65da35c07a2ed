/* test_elf.h: small x86-64 ELF files written for the tests with libelf: one
 * executable PT_LOAD of given code at a given address, and a symbol table.
 * What the PT capture tests need for a user binary, a vmlinux or a kcore.
 *
 * Failures are Criterion assertions.
 *
 * Not here: ELF files with notes or several sections (the tests that need
 * them write their own), reading ELF (src/util/elf.h).
 */
#ifndef RV_TESTS_TEST_ELF_H
#define RV_TESTS_TEST_ELF_H

#include <stddef.h>
#include <stdint.h>

struct test_elf_symbol {
	const char *name;
	uint64_t value, size;
	unsigned char type; /* STT_FUNC, STT_NOTYPE, ... */
};

/* Writes path: an ELF file of type e_type (ET_EXEC, ET_CORE, ...) whose
 * .text holds code[0..size) at vaddr, with one PF_R|PF_X PT_LOAD over it
 * and the nr global symbols given (all in .text; nr may be 0). Returns the
 * code's offset in the file. */
uint64_t test_elf_write(const char *path, uint16_t e_type, uint64_t vaddr, const uint8_t *code,
			size_t size, const struct test_elf_symbol *symbols, size_t nr);

#endif
