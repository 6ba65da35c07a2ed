/* elf.c: shared answers about ELF files; see elf.h. */
#include "util/elf.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* /sys/kernel/notes is a few hundred bytes */
#define KERNEL_NOTES_MAX 4096

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

static uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

size_t rv_build_id_in_notes(const uint8_t *notes, size_t size, uint8_t id[RV_BUILD_ID_MAX])
{
	size_t pos = 0;

	while (size - pos >= 12) {
		uint32_t namesz = load_u32(notes + pos), descsz = load_u32(notes + pos + 4);
		uint32_t type = load_u32(notes + pos + 8);
		size_t name_at = pos + 12, desc_at, next;

		if (namesz > size || descsz > size)
			return 0;
		desc_at = name_at + ((namesz + 3u) & ~3u);
		next = desc_at + ((descsz + 3u) & ~3u);
		if (desc_at > size || next > size || desc_at + descsz > size)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(notes + name_at, "GNU", 4) &&
		    descsz) {
			size_t n = descsz < RV_BUILD_ID_MAX ? descsz : RV_BUILD_ID_MAX;

			memcpy(id, notes + desc_at, n);
			return n;
		}
		pos = next;
	}
	return 0;
}

size_t rv_elf_build_id(Elf *elf, uint8_t id[RV_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	size_t n;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t got;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_NOTE &&
		    (data = elf_getdata(scn, NULL)) && data->d_buf &&
		    (got = rv_build_id_in_notes(data->d_buf, data->d_size, id)))
			return got;
	}
	for (size_t i = 0; !elf_getphdrnum(elf, &n) && i < n; i++) {
		GElf_Phdr ph;
		Elf_Data *data;
		size_t got;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
		    (data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ELF_T_BYTE)) &&
		    (got = rv_build_id_in_notes(data->d_buf, data->d_size, id)))
			return got;
	}
	return 0;
}

size_t rv_kernel_running_build_id(uint8_t id[RV_BUILD_ID_MAX])
{
	uint8_t notes[KERNEL_NOTES_MAX];
	size_t len = 0;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < sizeof(notes)) {
		ssize_t n = read(fd, notes + len, sizeof(notes) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return rv_build_id_in_notes(notes, len, id);
}
