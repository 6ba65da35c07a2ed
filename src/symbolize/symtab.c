/* symtab.c: function symbols read and judged in one place; from them, a
 * file's index for names and a process's stretches of code for the PT
 * decoder. See symtab.h.
 */
#include "symbolize/symtab.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/sorted.h"
#include "symbolize/symbolizer.h"
#include "util/array.h"
#include "util/elf.h"

/* The rows of one FDE's rules followed to find its end; a function with more
 * (none that a compiler writes) ends where the next FDE begins. */
#define MAX_FDE_ROWS 4096

/* How many earlier symbols a lookup examines for one that encloses the address
 * (nested symbols are rare and shallow). */
#define NESTED_LOOKBACK 8

/* ---- the rules ---- */

static bool is_function(const struct rv_symtab_symbol *sym)
{
	return (sym->type == STT_FUNC || sym->type == STT_GNU_IFUNC) &&
	       sym->place != RV_SYMTAB_UNDEFINED;
}

/* Whether `select` takes sym (symtab.h's rules). */
static bool takes(enum rv_symtab_select select, const struct rv_symtab_symbol *sym)
{
	if (select == RV_SYMTAB_SIZED)
		return is_function(sym) && sym->size;
	/* Undefined, absolute, common or not loaded: not code of this file. */
	if (!sym->name[0] || sym->place == RV_SYMTAB_UNDEFINED || sym->place == RV_SYMTAB_SPECIAL ||
	    sym->place == RV_SYMTAB_UNLOADED)
		return false;
	/* Bare labels count only in code: data labels would otherwise name the
	 * gaps between functions. */
	if (sym->type == STT_NOTYPE)
		return sym->place == RV_SYMTAB_CODE;
	/* Without a size, the span needs the section's end. */
	return is_function(sym) && (sym->size || sym->place != RV_SYMTAB_NO_SECTION);
}

/* ---- reading ---- */

/* The place of a symbol in section ndx of elf, and the section's end
 * (link-time, plus shift). */
static enum rv_symtab_place section_place(Elf *elf, size_t ndx, uint64_t shift, uint64_t *end)
{
	Elf_Scn *scn = elf && ndx ? elf_getscn(elf, ndx) : NULL;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh))
		return RV_SYMTAB_NO_SECTION;
	if (!(sh.sh_flags & SHF_ALLOC))
		return RV_SYMTAB_UNLOADED;
	*end = sh.sh_addr + sh.sh_size + shift;
	return sh.sh_flags & SHF_EXECINSTR ? RV_SYMTAB_CODE : RV_SYMTAB_DATA;
}

/* The SHT_SYMTAB_SHNDX section of symbol table scn (the section indices that
 * do not fit st_shndx), or NULL. */
static Elf_Data *extended_indices(Elf *elf, Elf_Scn *symbols)
{
	size_t ndx = elf_ndxscn(symbols);
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB_SHNDX && sh.sh_link == ndx)
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

static int read_elf(Elf *elf, enum rv_symtab_select select, rv_symtab_visit_fn visit, void *ctx)
{
	GElf_Shdr sh;
	Elf_Scn *scn = rv_elf_symbol_table(elf, &sh);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	Elf_Data *xndx_data;
	int ret = 0;

	if (!data || !sh.sh_entsize)
		return 0;
	xndx_data = extended_indices(elf, scn);
	for (size_t i = 0, n = sh.sh_size / sh.sh_entsize; i < n && !ret; i++) {
		struct rv_symtab_symbol s = { 0 };
		Elf32_Word xndx = 0;
		GElf_Sym sym;

		if (!gelf_getsymshndx(data, xndx_data, (int)i, &sym, &xndx))
			break;
		s.name = elf_strptr(elf, sh.sh_link, sym.st_name);
		if (!s.name)
			s.name = "";
		s.addr = sym.st_value;
		s.size = sym.st_size;
		s.type = GELF_ST_TYPE(sym.st_info);
		s.bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF)
			s.place = RV_SYMTAB_UNDEFINED;
		else if (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX)
			s.place = RV_SYMTAB_SPECIAL;
		else {
			s.section = sym.st_shndx == SHN_XINDEX ? xndx : sym.st_shndx;
			s.place = section_place(elf, s.section, 0, &s.section_end);
		}
		if (takes(select, &s))
			ret = visit(ctx, &s);
	}
	return ret;
}

static int read_module(Dwfl_Module *mod, uint64_t bias, enum rv_symtab_select select,
		       rv_symtab_visit_fn visit, void *ctx)
{
	int count = dwfl_module_getsymtab(mod), ret = 0;

	for (int i = 0; i < count && !ret; i++) {
		struct rv_symtab_symbol s = { 0 };
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		Elf *elf = NULL;
		Dwarf_Addr sym_bias = 0;

		/* Section indices come resolved (SHN_XINDEX), and -1 for a
		 * section that is not loaded; elf is the file that has it. */
		s.name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, &elf, &sym_bias);
		if (!s.name)
			continue;
		s.addr = addr - bias;
		s.size = sym.st_size;
		s.type = GELF_ST_TYPE(sym.st_info);
		s.bind = GELF_ST_BIND(sym.st_info);
		if (shndx == SHN_UNDEF)
			s.place = RV_SYMTAB_UNDEFINED;
		else if (shndx == (GElf_Word)-1)
			s.place = RV_SYMTAB_UNLOADED;
		else if (shndx >= SHN_LORESERVE && shndx <= SHN_HIRESERVE)
			s.place = RV_SYMTAB_SPECIAL;
		else {
			s.section = shndx;
			s.place = section_place(elf, shndx, sym_bias - bias, &s.section_end);
		}
		if (takes(select, &s))
			ret = visit(ctx, &s);
	}
	return ret;
}

int rv_symtab_read(const struct rv_symtab_source *src, enum rv_symtab_select select,
		   rv_symtab_visit_fn visit, void *ctx)
{
	if (src->elf)
		return read_elf(src->elf, select, visit, ctx);
	if (src->mod)
		return read_module(src->mod, src->bias, select, visit, ctx);
	return 0;
}

/* Opens path with libelf; read_small: a file of at most READ_SMALL_MAX bytes
 * is read (libelf reads the headers and each section asked for into the
 * heap) rather than mapped, for readers that visit all of a file's symbols.
 * Mapped, every 64 KiB of its tables first touched costs a page fault, and
 * closing it an munmap: on the test machine's VM that made 0.2 ms of the
 * 0.3 that a 770 KB executable's stretches took. Read, they land in the
 * heap's huge pages (util/heap.h); a larger file is still mapped, as its
 * tables could outgrow them. */
#define READ_SMALL_MAX ((off_t)16 << 20)

static int open_file(struct rv_symtab_file *f, const char *path, bool read_small,
		     struct rv_error *err)
{
	Elf_Cmd cmd = ELF_C_READ_MMAP;
	struct stat st;

	f->elf = NULL;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return rv_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	if (read_small && !fstat(f->fd, &st) && st.st_size <= READ_SMALL_MAX)
		cmd = ELF_C_READ;
	elf_version(EV_CURRENT);
	f->elf = elf_begin(f->fd, cmd, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		rv_symtab_file_close(f);
		return rv_error_set(err, ENOEXEC, "'%s' is not an ELF file", path);
	}
	return 0;
}

int rv_symtab_file_open(struct rv_symtab_file *f, const char *path, struct rv_error *err)
{
	return open_file(f, path, false, err);
}

void rv_symtab_file_close(struct rv_symtab_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

bool rv_symtab_stripped(Elf *elf, bool *mini_debuginfo)
{
	bool symtab = false, mini = false;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		symtab |= sh.sh_type == SHT_SYMTAB;
		name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		mini |= name && !strcmp(name, ".gnu_debugdata");
	}
	if (mini_debuginfo)
		*mini_debuginfo = mini;
	return !symtab;
}

bool rv_symtab_module_stripped(Dwfl_Module *mod)
{
	const char *debug_file = NULL;
	bool mini_debuginfo;
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	if (!elf || !rv_symtab_stripped(elf, &mini_debuginfo) || mini_debuginfo)
		return false;
	dwfl_module_getsymtab(mod);
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug_file);
	return debug_file == NULL;
}

/* ---- names ----
 *
 * Which symbol names an address when several could: aliases are resolved
 * once, at build time; nested symbols at lookup time, in favour of the
 * innermost.
 */

struct candidate {
	uint64_t addr, size;
	uint64_t section_end; /* link-time end of the symbol's section */
	uint32_t name_offset;
	uint8_t type_rank, bind_rank;
	uint16_t underscores;
};

struct candidates {
	struct rv_symtab *table;
	size_t names_cap;
	struct candidate *v;
	size_t nr, cap;
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

static int add_candidate(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct candidates *all = ctx;
	struct candidate *c;

	if (rv_array_grow(&all->v, &all->cap, all->nr, sizeof(*all->v), 1024))
		return -ENOMEM;
	c = &all->v[all->nr];
	if (append_name(all->table, &all->names_cap, sym->name, &c->name_offset))
		return -ENOMEM;
	c->addr = sym->addr;
	c->size = sym->size;
	c->section_end = sym->type == STT_NOTYPE || !sym->size ? sym->section_end : UINT64_MAX;
	c->type_rank = type_rank(sym->type);
	c->bind_rank = bind_rank(sym->bind);
	c->underscores = 0;
	while (sym->name[c->underscores] == '_' && c->underscores < UINT16_MAX)
		c->underscores++;
	all->nr++;
	return 0;
}

/* The table's entries from the candidates, sorted: one per address. */
static int merge_aliases(struct rv_symtab *table, struct candidate *candidates, size_t nr)
{
	size_t kept = 0;

	qsort_r(candidates, nr, sizeof(*candidates), compare_candidates, table->names);
	table->entries = malloc(nr * sizeof(*table->entries));
	if (!table->entries)
		return -ENOMEM;
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
	return 0;
}

int rv_symtab_build(struct rv_symtab **out, const struct rv_symtab_source *src)
{
	struct candidates all = { .table = calloc(1, sizeof(*all.table)) };
	int ret;

	*out = NULL;
	if (!all.table)
		return -ENOMEM;
	ret = rv_symtab_read(src, RV_SYMTAB_NAMING, add_candidate, &all);
	if (!ret && all.nr)
		ret = merge_aliases(all.table, all.v, all.nr);
	free(all.v);
	if (ret) {
		rv_symtab_free(all.table);
		return -ENOMEM;
	}
	*out = all.table; /* without symbols, names fall back to offsets */
	return 0;
}

struct rv_symtab_entry *rv_symtab_find(const struct rv_symtab *table, uint64_t addr)
{
	/* lo - 1 is the last symbol starting at or below addr; an enclosing
	 * one may start a little earlier. */
	size_t lo = rv_sorted_upper(table->entries, table->nr, sizeof(*table->entries),
				    offsetof(struct rv_symtab_entry, addr), addr);

	for (size_t k = 0; k < NESTED_LOOKBACK && k < lo; k++) {
		struct rv_symtab_entry *e = &table->entries[lo - 1 - k];

		if (addr - e->addr < e->span)
			return e;
	}
	return NULL;
}

bool rv_symtab_piece_of(const char *name, size_t *parent_len)
{
	static const char suffix[] = ".cold";
	size_t len = strcspn(name, "@"), end = len;

	/* ".cold.N": the digits, then their dot */
	while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
		end--;
	if (end < len) {
		if (end == 0 || name[end - 1] != '.')
			return false;
		end--;
	}
	if (end <= sizeof(suffix) - 1 ||
	    memcmp(name + end - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1))
		return false;
	*parent_len = end - (sizeof(suffix) - 1);
	return true;
}

const char *rv_symtab_display_name(const struct rv_symtab *table, struct rv_symtab_entry *entry,
				   struct rv_intern *pool)
{
	if (!entry->display) {
		const char *raw = rv_symtab_raw_name(table, entry);
		char *parent = NULL, *readable;
		size_t parent_len;

		/* A piece is named as its parent. */
		if (rv_symtab_piece_of(raw, &parent_len) && (parent = strndup(raw, parent_len)))
			raw = parent;
		readable = rv_demangle(raw);
		entry->display = rv_intern(pool, readable ? readable : raw);
		free(readable);
		free(parent);
	}
	return entry->display;
}

bool rv_symtab_names_any(const struct rv_symtab *table, uint64_t start, uint64_t end)
{
	size_t first_after;

	if (!table || start >= end)
		return false;
	/* A symbol that begins inside names its first byte; with none, every
	 * address of the range has the same candidates as start, and a symbol
	 * that covers one of them covers start too. */
	first_after = rv_sorted_upper(table->entries, table->nr, sizeof(*table->entries),
				      offsetof(struct rv_symtab_entry, addr), end - 1);
	if (first_after && table->entries[first_after - 1].addr >= start)
		return true;
	return rv_symtab_find(table, start) != NULL;
}

void rv_symtab_free(struct rv_symtab *table)
{
	if (!table)
		return;
	free(table->entries);
	free(table->names);
	free(table);
}

/* ---- functions without symbols: FDEs ---- */

/* The bytes of a value of DW_EH_PE encoding enc (its format, low nibble);
 * 0 for one this reader does not take. */
static size_t encoded_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	default:
		return 0;
	}
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Where elf's FDEs begin, from its .eh_frame_hdr search table: version 1,
 * the encodings of the .eh_frame pointer, of the count (udata4) and of the
 * table (datarel sdata4: offsets from the table's own address), then the
 * pointer, the count, and (initial location, FDE) pairs. Sorted, once each.
 * *starts is NULL when there are none. Returns 0, or -ENOMEM. */
static int read_fde_starts(Elf *elf, uint64_t **starts, size_t *nr)
{
	GElf_Ehdr ehdr;
	GElf_Phdr ph = { 0 };
	Elf_Data *data = NULL;
	const uint8_t *p;
	size_t phnum, pos, ptr_size, n, kept = 0;
	uint32_t count;
	uint64_t *v;

	*starts = NULL;
	*nr = 0;
	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_ident[EI_DATA] != ELFDATA2LSB ||
	    elf_getphdrnum(elf, &phnum))
		return 0;
	for (size_t i = 0; i < phnum && !data; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME && ph.p_filesz)
			data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						    ELF_T_BYTE);
	}
	if (!data || !data->d_buf || data->d_size < 4)
		return 0;
	p = data->d_buf;
	n = data->d_size;
	ptr_size = encoded_size(p[1]);
	if (p[0] != 1 || !ptr_size || p[2] != DW_EH_PE_udata4 ||
	    p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || n - 4 < ptr_size + 4)
		return 0;
	pos = 4 + ptr_size;
	memcpy(&count, p + pos, sizeof(count));
	count = le32toh(count);
	pos += 4;
	if (!count || count > (n - pos) / 8)
		return 0;
	v = malloc(count * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		int32_t location;

		memcpy(&location, p + pos + 8 * i, sizeof(location));
		v[i] = ph.p_vaddr + (uint64_t)(int64_t)(int32_t)le32toh((uint32_t)location);
	}
	qsort(v, count, sizeof(*v), compare_u64);
	for (size_t i = 0; i < count; i++) {
		if (!kept || v[kept - 1] != v[i])
			v[kept++] = v[i];
	}
	*starts = v;
	*nr = kept;
	return 0;
}

/* Where the FDE that begins at start ends: where its last row of rules
 * does, found row by row (libdw gives the stretch each row covers), at the
 * latest where the next FDE begins (limit). start itself when libdw cannot
 * read it. */
static uint64_t fde_end(Dwarf_CFI *cfi, uint64_t start, uint64_t limit)
{
	uint64_t at = start;

	for (int rows = 0; at < limit; rows++) {
		Dwarf_Frame *frame;
		Dwarf_Addr row_start, row_end;
		int ret;

		if (rows == MAX_FDE_ROWS)
			return limit == UINT64_MAX ? at : limit;
		if (dwarf_cfi_addrframe(cfi, at, &frame))
			break;
		ret = dwarf_frame_info(frame, &row_start, &row_end, NULL);
		free(frame);
		if (ret < 0 || row_end <= at)
			break;
		at = row_end < limit ? row_end : limit;
	}
	return at;
}

int rv_symtab_fdes_open(struct rv_symtab_fdes *out, Elf *elf)
{
	uint64_t *starts;
	size_t nr;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = read_fde_starts(elf, &starts, &nr);
	if (ret || !nr)
		return ret;
	out->cfi = dwarf_getcfi_elf(elf);
	out->v = out->cfi ? malloc(nr * sizeof(*out->v)) : NULL;
	if (!out->v) {
		ret = out->cfi ? -ENOMEM : 0;
		free(starts);
		rv_symtab_fdes_close(out);
		return ret;
	}
	for (size_t i = 0; i < nr; i++)
		out->v[i] = (struct rv_symtab_range){ starts[i], 0 };
	out->nr = nr;
	free(starts);
	return 0;
}

const struct rv_symtab_range *rv_symtab_fde_find(struct rv_symtab_fdes *fdes, uint64_t addr)
{
	size_t i = rv_sorted_upper(fdes->v, fdes->nr, sizeof(*fdes->v),
				   offsetof(struct rv_symtab_range, start), addr);
	struct rv_symtab_range *fde;

	if (!i)
		return NULL;
	fde = &fdes->v[i - 1];
	if (!fde->end)
		fde->end = fde_end(fdes->cfi, fde->start,
				   i < fdes->nr ? fdes->v[i].start : UINT64_MAX);
	return addr < fde->end ? fde : NULL;
}

void rv_symtab_fdes_close(struct rv_symtab_fdes *fdes)
{
	if (fdes->cfi)
		dwarf_cfi_end(fdes->cfi);
	free(fdes->v);
	memset(fdes, 0, sizeof(*fdes));
}

/* ---- stretches of code ---- */

int rv_symtab_ranges_add(struct rv_symtab_ranges *r, uint64_t start, uint64_t end)
{
	if (rv_array_grow(&r->v, &r->cap, r->nr, sizeof(*r->v), 1024))
		return -ENOMEM;
	r->v[r->nr++] = (struct rv_symtab_range){ start, end };
	return 0;
}

/* The load bias of a mapping: run-time address minus link-time address, from
 * the PT_LOAD segment that holds file offset pgoff. False when none does. */
bool rv_symtab_load_bias(const struct rv_symtab_segment *segments, size_t nr, uint64_t pgoff,
			 uint64_t start, uint64_t *bias)
{
	const struct rv_symtab_segment *best = NULL;

	for (size_t i = 0; i < nr; i++) {
		const struct rv_symtab_segment *seg = &segments[i];
		uint64_t first_page = seg->offset & ~(uint64_t)0xfff;

		if (pgoff < first_page || pgoff >= seg->offset + seg->filesz)
			continue;
		if (seg->executable) {
			best = seg;
			break;
		}
		if (!best)
			best = seg;
	}
	if (!best)
		return false;
	/* file offset o is at link-time address vaddr - offset + o */
	*bias = start - (best->vaddr - best->offset + pgoff);
	return true;
}

/* The bias of a mapping of the file elf reads, from its PT_LOAD segments. */
static bool mapping_bias(Elf *elf, uint64_t pgoff, uint64_t start, uint64_t *bias)
{
	struct rv_symtab_segment *segments;
	size_t nr, n = 0;
	bool found;

	if (elf_getphdrnum(elf, &nr) || !(segments = calloc(nr ? nr : 1, sizeof(*segments))))
		return false;
	for (size_t i = 0; i < nr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		segments[n++] = (struct rv_symtab_segment){ .offset = ph.p_offset,
							    .vaddr = ph.p_vaddr,
							    .filesz = ph.p_filesz,
							    .executable = ph.p_flags & PF_X };
	}
	found = rv_symtab_load_bias(segments, n, pgoff, start, bias);
	free(segments);
	return found;
}

struct mapped_file {
	struct rv_symtab_ranges *ranges;
	uint64_t bias, start, len;
};

static int add_mapped(void *ctx, const struct rv_symtab_symbol *sym)
{
	const struct mapped_file *m = ctx;
	uint64_t at = sym->addr + m->bias;

	if (at < m->start || at - m->start >= m->len || at + sym->size < at)
		return 0;
	return rv_symtab_ranges_add(m->ranges, at, at + sym->size);
}

/* The index of file's names as the symbolizer builds it (through libdwfl,
 * with separate debug files and MiniDebugInfo), when its only names are the
 * ones it exports (rv_symtab_module_stripped); else, or when libdwfl cannot
 * read the file, *out is NULL. Returns 0, or -ENOMEM. */
static int stripped_naming_index(const char *file, struct rv_symtab **out)
{
	struct rv_debuginfo debuginfo;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwfl *dwfl;
	int ret;

	*out = NULL;
	if (rv_debuginfo_init(&debuginfo))
		return -ENOMEM;
	dwfl = dwfl_begin(&debuginfo.callbacks);
	if (!dwfl) {
		rv_debuginfo_destroy(&debuginfo);
		return -ENOMEM;
	}
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, file, file, -1, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	ret = 0;
	if (mod && dwfl_module_getelf(mod, &bias) && rv_symtab_module_stripped(mod)) {
		struct rv_symtab_source src = { .mod = mod, .bias = bias };

		ret = rv_symtab_build(out, &src);
	}
	dwfl_end(dwfl);
	rv_debuginfo_destroy(&debuginfo);
	return ret;
}

/* Adds the FDEs of the file elf reads (path file), if it is stripped, that
 * begin inside the mapping and that no symbol names. */
static int add_unnamed_fdes(const struct mapped_file *m, Elf *elf, const char *file)
{
	struct rv_symtab_fdes fdes;
	struct rv_symtab *names = NULL;
	bool mini_debuginfo;
	int ret;

	if (!rv_symtab_stripped(elf, &mini_debuginfo) || mini_debuginfo)
		return 0;
	ret = rv_symtab_fdes_open(&fdes, elf);
	if (!ret && fdes.nr)
		ret = stripped_naming_index(file, &names);
	for (size_t i = 0; !ret && names && i < fdes.nr; i++) {
		uint64_t at = fdes.v[i].start + m->bias;
		const struct rv_symtab_range *fde;

		if (at < m->start || at - m->start >= m->len)
			continue;
		fde = rv_symtab_fde_find(&fdes, fdes.v[i].start);
		if (fde && !rv_symtab_names_any(names, fde->start, fde->end))
			ret = rv_symtab_ranges_add(m->ranges, at, fde->end + m->bias);
	}
	rv_symtab_free(names);
	rv_symtab_fdes_close(&fdes);
	return ret;
}

int rv_symtab_ranges_add_file(struct rv_symtab_ranges *r, const char *file, uint64_t pgoff,
			      uint64_t start, uint64_t len)
{
	struct mapped_file m = { .ranges = r, .start = start, .len = len };
	struct rv_symtab_file f;
	int ret = 0;

	if (open_file(&f, file, true, NULL))
		return 0;
	if (mapping_bias(f.elf, pgoff, start, &m.bias)) {
		struct rv_symtab_source src = { .elf = f.elf };

		ret = rv_symtab_read(&src, RV_SYMTAB_SIZED, add_mapped, &m);
		if (!ret)
			ret = add_unnamed_fdes(&m, f.elf, file);
	}
	rv_symtab_file_close(&f);
	return ret;
}

/* By start, and the longest last among those with one start. */
static int by_start(const void *a, const void *b)
{
	const struct rv_symtab_range *x = a, *y = b;

	if (x->start == y->start)
		return (x->end > y->end) - (x->end < y->end);
	return (x->start > y->start) - (x->start < y->start);
}

/* An address belongs to the range with the greatest start at or below it (the
 * longest of those with that start), if that range covers it; so a range's
 * code after a later start belongs to that later one, or to none. Nested or
 * overlapping symbols thus make "not the same function" rather than a guess.
 * Sorting settles that once: one range per start, the longest, each cut short
 * where the next begins, so that a lookup is one search and one compare. */
void rv_symtab_ranges_sort(struct rv_symtab_ranges *r)
{
	size_t kept = 0;

	if (!r->nr)
		return;
	qsort(r->v, r->nr, sizeof(*r->v), by_start);
	for (size_t i = 0; i < r->nr; i++) {
		if (kept && r->v[kept - 1].start == r->v[i].start)
			kept--;
		r->v[kept++] = r->v[i];
	}
	for (size_t i = 0; i + 1 < kept; i++) {
		if (r->v[i + 1].start < r->v[i].end)
			r->v[i].end = r->v[i + 1].start;
	}
	r->nr = kept;
}

bool rv_symtab_around(const struct rv_symtab_ranges *r, uint64_t addr, uint64_t *start,
		      uint64_t *end)
{
	size_t i = rv_sorted_upper(r->v, r->nr, sizeof(*r->v),
				   offsetof(struct rv_symtab_range, start), addr);

	if (i == 0 || addr >= r->v[i - 1].end)
		return false;
	*start = r->v[i - 1].start;
	*end = r->v[i - 1].end;
	return true;
}

void rv_symtab_ranges_destroy(struct rv_symtab_ranges *r)
{
	free(r->v);
	r->v = NULL;
	r->nr = r->cap = 0;
}
