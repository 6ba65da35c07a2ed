/* pt_functions.c: function ranges of mapped ELF files; see pt_functions.h. */
#include "decode/pt_functions.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/elf.h"

/* The load bias of a mapping: run-time address minus link-time address, from
 * the PT_LOAD segment that holds file offset pgoff. False when none does. */
static bool mapping_bias(Elf *elf, uint64_t pgoff, uint64_t start, uint64_t *bias)
{
	size_t nr;

	if (elf_getphdrnum(elf, &nr))
		return false;
	for (size_t i = 0; i < nr; i++) {
		GElf_Phdr ph;
		uint64_t first_page;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		first_page = ph.p_offset & ~(uint64_t)0xfff;
		if (pgoff < first_page || pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		/* file offset o is at link-time address p_vaddr - p_offset + o */
		*bias = start - (ph.p_vaddr - ph.p_offset + pgoff);
		return true;
	}
	return false;
}

static int add_range(struct rv_functions *f, uint64_t start, uint64_t end)
{
	if (f->nr == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		struct rv_function_range *v = realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->nr++] = (struct rv_function_range){ start, end };
	return 0;
}

int rv_functions_add_file(struct rv_functions *f, const char *file, uint64_t pgoff, uint64_t start,
			  uint64_t len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	Elf *elf = NULL;
	Elf_Scn *scn;
	Elf_Data *data;
	GElf_Shdr sh;
	uint64_t bias;
	int ret = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !mapping_bias(elf, pgoff, start, &bias))
		goto out;
	scn = rv_elf_symbol_table(elf, &sh);
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !sh.sh_entsize)
		goto out;
	for (size_t i = 0, n = sh.sh_size / sh.sh_entsize; i < n && !ret; i++) {
		GElf_Sym sym;
		uint64_t at;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    !sym.st_size)
			continue;
		at = sym.st_value + bias;
		if (at < start || at - start >= len || at + sym.st_size < at)
			continue;
		ret = add_range(f, at, at + sym.st_size);
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return ret;
}

static int by_start(const void *a, const void *b)
{
	const struct rv_function_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

void rv_functions_sort(struct rv_functions *f)
{
	if (f->nr)
		qsort(f->v, f->nr, sizeof(*f->v), by_start);
}

/* The index just past the last range with start <= addr (0: none). */
static size_t upper(const struct rv_functions *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* addr belongs to the range with the greatest start <= addr (the longest of
 * those with that start, which sorts last), if that range covers it; so the
 * range's code after a later start belongs to that later one, or to none.
 * Nested or overlapping symbols thus make "not the same function" rather
 * than a guess. */
bool rv_functions_around(const struct rv_functions *f, uint64_t addr, uint64_t *start,
			 uint64_t *end)
{
	size_t i = upper(f, addr);

	if (i == 0 || addr >= f->v[i - 1].end)
		return false;
	*start = f->v[i - 1].start;
	*end = i < f->nr && f->v[i].start < f->v[i - 1].end ? f->v[i].start : f->v[i - 1].end;
	return true;
}

void rv_functions_free(struct rv_functions *f)
{
	free(f->v);
	f->v = NULL;
	f->nr = f->cap = 0;
}
