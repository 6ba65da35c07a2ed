/* elf.c: shared answers about ELF files; see elf.h. */
#include "util/elf.h"

#include <stddef.h>

Elf_Scn *rv_elf_symbol_table(Elf *elf, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL, *dynsym = NULL;
	GElf_Shdr dynsym_shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*shdr = sh;
			return scn;
		}
		if (sh.sh_type == SHT_DYNSYM && !dynsym) {
			dynsym = scn;
			dynsym_shdr = sh;
		}
	}
	if (dynsym)
		*shdr = dynsym_shdr;
	return dynsym;
}

bool rv_elf_code_offset(Elf *elf, uint64_t addr, uint64_t *offset)
{
	size_t nr_phdrs;

	if (elf_getphdrnum(elf, &nr_phdrs))
		return false;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD ||
		    !(phdr.p_flags & PF_X))
			continue;
		if (addr >= phdr.p_vaddr && addr - phdr.p_vaddr < phdr.p_filesz) {
			*offset = phdr.p_offset + (addr - phdr.p_vaddr);
			return true;
		}
	}
	return false;
}
