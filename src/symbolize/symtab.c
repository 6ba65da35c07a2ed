/* symtab.c: a sorted index of one ELF file's function symbols; see symtab.h.
 *
 * Which symbol names an address when several could: aliases at one address are
 * resolved once, at build time, in favour of the name a reader expects (a
 * function over a bare label, "malloc" over "__libc_malloc", global over weak
 * over local); nested symbols are resolved at lookup time in favour of the
 * innermost.
 */
#include "symbolize/symtab.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How many earlier symbols a lookup examines for one that encloses the address
 * (nested symbols are rare and shallow). */
#define NESTED_LOOKBACK 8

struct candidate {
	uint64_t addr, size;
	uint64_t section_end; /* link-time end of the symbol's section */
	uint32_t name_offset;
	uint8_t type_rank, bind_rank;
	uint16_t underscores;
};

static uint8_t type_rank(unsigned type)
{
	return type == STT_FUNC ? 2 : type == STT_GNU_IFUNC ? 1 : 0;
}

static uint8_t bind_rank(unsigned bind)
{
	return bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0;
}

static int compare_candidates(const void *a, const void *b, void *names)
{
	const struct candidate *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->type_rank != y->type_rank)
		return x->type_rank > y->type_rank ? -1 : 1;
	if (x->underscores != y->underscores)
		return x->underscores < y->underscores ? -1 : 1;
	if (x->bind_rank != y->bind_rank)
		return x->bind_rank > y->bind_rank ? -1 : 1;
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return strcmp((const char *)names + x->name_offset, (const char *)names + y->name_offset);
}

/* Appends name without its symbol version ("foo@@GLIBC_2.34" is "foo"): the
 * version tells a reader nothing, and aliases differing only by it are one. */
static int append_name(struct rv_symtab *table, size_t *cap, const char *name, uint32_t *offset)
{
	const char *at = strchr(name + 1, '@');
	size_t len = (at ? (size_t)(at - name) : strlen(name)) + 1;

	if (table->names_len + len > UINT32_MAX)
		return -ENOMEM;
	if (table->names_len + len > *cap) {
		size_t grown_cap = *cap ? *cap : 65536;
		char *grown;

		while (grown_cap < table->names_len + len)
			grown_cap *= 2;
		grown = realloc(table->names, grown_cap);
		if (!grown)
			return -ENOMEM;
		table->names = grown;
		*cap = grown_cap;
	}
	memcpy(table->names + table->names_len, name, len - 1);
	table->names[table->names_len + len - 1] = '\0';
	*offset = (uint32_t)table->names_len;
	table->names_len += len;
	return 0;
}

/* Fills c from symbol ndx of mod; false when it is not a function symbol. */
static bool describe_symbol(Dwfl_Module *mod, int ndx, uint64_t bias, struct candidate *c,
			    const char **name_out)
{
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	Elf *elf = NULL;
	Dwarf_Addr sym_bias = 0;
	const char *name = dwfl_module_getsym_info(mod, ndx, &sym, &addr, &shndx, &elf, &sym_bias);
	unsigned type;

	if (!name || !name[0])
		return false;
	type = GELF_ST_TYPE(sym.st_info);
	if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
		return false;
	/* Undefined, absolute, common or not loaded: not code of this file. */
	if (shndx == SHN_UNDEF || shndx == (GElf_Word)-1 ||
	    (shndx >= SHN_LORESERVE && shndx <= SHN_HIRESERVE))
		return false;
	c->section_end = UINT64_MAX;
	if (type == STT_NOTYPE || sym.st_size == 0) {
		Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
		GElf_Shdr shdr;

		if (!scn || !gelf_getshdr(scn, &shdr))
			return false;
		/* Bare labels count only in code: data labels would otherwise
		 * name the gaps between functions. */
		if (type == STT_NOTYPE && !(shdr.sh_flags & SHF_EXECINSTR))
			return false;
		c->section_end = shdr.sh_addr + shdr.sh_size + sym_bias - bias;
	}
	c->addr = addr - bias;
	c->size = sym.st_size;
	c->type_rank = type_rank(type);
	c->bind_rank = bind_rank(GELF_ST_BIND(sym.st_info));
	c->underscores = 0;
	while (name[c->underscores] == '_' && c->underscores < UINT16_MAX)
		c->underscores++;
	*name_out = name;
	return true;
}

int rv_symtab_build(struct rv_symtab **out, Dwfl_Module *mod, uint64_t bias)
{
	struct rv_symtab *table = calloc(1, sizeof(*table));
	struct candidate *candidates = NULL;
	size_t nr = 0, names_cap = 0, kept = 0;
	int count;

	*out = NULL;
	if (!table)
		return -ENOMEM;
	count = dwfl_module_getsymtab(mod);
	if (count <= 0) {
		*out = table; /* no symbols at all: names fall back to offsets */
		return 0;
	}
	candidates = malloc((size_t)count * sizeof(*candidates));
	if (!candidates)
		goto nomem;
	for (int i = 0; i < count; i++) {
		const char *name;

		if (!describe_symbol(mod, i, bias, &candidates[nr], &name))
			continue;
		if (append_name(table, &names_cap, name, &candidates[nr].name_offset))
			goto nomem;
		nr++;
	}
	if (!nr) {
		free(candidates);
		*out = table;
		return 0;
	}
	qsort_r(candidates, nr, sizeof(*candidates), compare_candidates, table->names);
	table->entries = malloc(nr * sizeof(*table->entries));
	if (!table->entries)
		goto nomem;
	for (size_t i = 0; i < nr;) {
		const struct candidate *best = &candidates[i];
		struct rv_symtab_entry *e = &table->entries[kept++];
		uint64_t size = best->size, limit;
		size_t next = i + 1;

		/* Aliases: the best name came first; keep a size if any has one. */
		while (next < nr && candidates[next].addr == best->addr) {
			if (!size)
				size = candidates[next].size;
			next++;
		}
		e->addr = best->addr;
		e->size = size;
		e->name_offset = best->name_offset;
		e->display = NULL;
		if (size) {
			e->span = size;
		} else {
			/* A sizeless symbol reaches the next symbol, within its section. */
			limit = best->section_end;
			if (next < nr && candidates[next].addr < limit)
				limit = candidates[next].addr;
			e->span = limit > e->addr ? limit - e->addr : 1;
		}
		i = next;
	}
	table->nr = kept;
	free(candidates);
	*out = table;
	return 0;

nomem:
	free(candidates);
	rv_symtab_free(table);
	return -ENOMEM;
}

struct rv_symtab_entry *rv_symtab_find(const struct rv_symtab *table, uint64_t addr)
{
	size_t lo = 0, hi = table->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (table->entries[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo - 1 is the last symbol starting at or below addr; an enclosing
	 * one may start a little earlier. */
	for (size_t k = 0; k < NESTED_LOOKBACK && k < lo; k++) {
		struct rv_symtab_entry *e = &table->entries[lo - 1 - k];

		if (addr - e->addr < e->span)
			return e;
	}
	return NULL;
}

void rv_symtab_free(struct rv_symtab *table)
{
	if (!table)
		return;
	free(table->entries);
	free(table->names);
	free(table);
}
