/* test_elf.c: small ELF files for the tests; see test_elf.h. */
#include "test_elf.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Section name offsets in SHSTRTAB. */
#define SHSTRTAB      "\0.text\0.strtab\0.symtab\0.shstrtab"
#define NAME_TEXT     1
#define NAME_STRTAB   7
#define NAME_SYMTAB   15
#define NAME_SHSTRTAB 23

static Elf_Scn *add_section(Elf *e, const void *bytes, size_t size, Elf_Type type, size_t align,
			    uint32_t name, uint32_t sh_type)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d;
	Elf64_Shdr *sh;

	cr_assert_not_null(scn, "%s", elf_errmsg(-1));
	d = elf_newdata(scn);
	cr_assert_not_null(d, "%s", elf_errmsg(-1));
	d->d_buf = (void *)bytes;
	d->d_size = size;
	d->d_type = type;
	d->d_align = align;
	sh = elf64_getshdr(scn);
	sh->sh_name = name;
	sh->sh_type = sh_type;
	return scn;
}

uint64_t test_elf_write(const char *path, uint16_t e_type, uint64_t vaddr, const uint8_t *code,
			size_t size, const struct test_elf_symbol *symbols, size_t nr)
{
	static const char shstr[] = SHSTRTAB;
	size_t strtab_len = 1;
	char *strtab;
	Elf64_Sym *syms = calloc(nr + 1, sizeof(*syms));
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	Elf_Scn *text, *str, *sym, *shs;
	uint64_t offset;
	Elf *e;
	int fd;

	for (size_t i = 0; i < nr; i++)
		strtab_len += strlen(symbols[i].name) + 1;
	strtab = calloc(1, strtab_len);
	cr_assert(syms && strtab);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	cr_assert_not_null(e, "%s", elf_errmsg(-1));
	eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = e_type;
	eh->e_version = EV_CURRENT;
	cr_assert_not_null(elf64_newphdr(e, 1));

	text = add_section(e, code, size, ELF_T_BYTE, 16, NAME_TEXT, SHT_PROGBITS);
	sh = elf64_getshdr(text);
	sh->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh->sh_addr = vaddr;

	strtab_len = 1;
	for (size_t i = 0; i < nr; i++) {
		size_t len = strlen(symbols[i].name) + 1;

		memcpy(strtab + strtab_len, symbols[i].name, len);
		syms[i + 1].st_name = (Elf64_Word)strtab_len;
		syms[i + 1].st_value = symbols[i].value;
		syms[i + 1].st_size = symbols[i].size;
		syms[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, symbols[i].type);
		syms[i + 1].st_shndx = (Elf64_Section)elf_ndxscn(text);
		strtab_len += len;
	}
	str = add_section(e, strtab, strtab_len, ELF_T_BYTE, 1, NAME_STRTAB, SHT_STRTAB);
	sym = add_section(e, syms, (nr + 1) * sizeof(*syms), ELF_T_SYM, 8, NAME_SYMTAB, SHT_SYMTAB);
	sh = elf64_getshdr(sym);
	sh->sh_link = (Elf64_Word)elf_ndxscn(str);
	sh->sh_info = 1;
	sh->sh_entsize = sizeof(Elf64_Sym);
	shs = add_section(e, shstr, sizeof(shstr), ELF_T_BYTE, 1, NAME_SHSTRTAB, SHT_STRTAB);
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shs);

	cr_assert_geq(elf_update(e, ELF_C_NULL), 0, "%s", elf_errmsg(-1));
	ph = elf64_getphdr(e);
	ph->p_type = PT_LOAD;
	ph->p_offset = elf64_getshdr(text)->sh_offset;
	ph->p_vaddr = ph->p_paddr = vaddr;
	ph->p_filesz = ph->p_memsz = size;
	ph->p_flags = PF_R | PF_X;
	ph->p_align = 16;
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	offset = ph->p_offset;
	elf_end(e);
	close(fd);
	free(strtab);
	free(syms);
	return offset;
}
