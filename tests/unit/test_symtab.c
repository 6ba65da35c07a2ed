/* test_symtab.c: the rules of symbolize/symtab.h, which say which symbols
 * are functions and what they are called, for the PT decoder's stretches of
 * code, --functions and the symbolizer's names: on an ELF file written here
 * with one symbol of each kind (read with libelf and through libdwfl alike),
 * and, for the decoder's stretches, on this very process: its executable
 * (with .symtab) and libc (.dynsym only), mapped as /proc/self/maps says,
 * against functions whose addresses the compiler knows. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/intern.h"
#include "symbolize/sorted.h"
#include "symbolize/symtab.h"
#include "test_env.h"

/* Whether a and b are inside one and the same function, as the decoding
 * threads decide it: b within the stretch of code around a. */
static bool same_function(const struct rv_symtab_ranges *f, uint64_t a, uint64_t b)
{
	uint64_t start, end;

	return rv_symtab_around(f, a, &start, &end) && b >= start && b < end;
}

/* Adds every executable mapping of this process whose path contains `name`. */
static size_t add_own_mappings(struct rv_symtab_ranges *f, const char *name)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[1024];
	size_t added = 0;

	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		uint64_t start, end, pgoff;
		char perms[8], path[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %511s", &start,
			   &end, perms, &pgoff, path) < 4)
			continue;
		if (perms[2] != 'x' || !strstr(path, name))
			continue;
		cr_assert_eq(rv_symtab_ranges_add_file(f, path, pgoff, start, end - start), 0);
		added++;
	}
	fclose(maps);
	return added;
}

static int local_function(int x)
{
	return x * 3 + 1;
}

Test(symtab_ranges, the_executable_with_its_symbol_table)
{
	struct rv_symtab_ranges f = { 0 };
	uint64_t a = (uint64_t)(uintptr_t)&rv_symtab_around;
	uint64_t b = (uint64_t)(uintptr_t)&rv_symtab_ranges_add_file;
	uint64_t local = (uint64_t)(uintptr_t)&local_function;

	cr_assert_gt(add_own_mappings(&f, "unit-tests"), 0, "no executable mapping of the tests");
	rv_symtab_ranges_sort(&f);
	cr_assert_gt(f.nr, 100, "only %zu functions", f.nr);
	cr_assert(same_function(&f, a, a + 1), "a function's first two bytes");
	cr_assert(!same_function(&f, a, b), "two functions");
	cr_assert(!same_function(&f, b, a));
	cr_assert(same_function(&f, local, local + 1), "a static function (.symtab)");
	cr_assert(!same_function(&f, local, 0x10), "an address outside any mapping");
	cr_assert(!same_function(&f, 0x10, 0x11), "outside any mapping");
	rv_symtab_ranges_destroy(&f);
	cr_assert_eq(f.nr, 0);
}

Test(symtab_ranges, a_shared_library_with_dynamic_symbols_only)
{
	struct rv_symtab_ranges f = { 0 };
	/* libc's own functions, not a sanitizer's interceptors of them */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	uint64_t q, g;

	cr_assert_not_null(libc, "%s", dlerror());
	q = (uint64_t)(uintptr_t)dlsym(libc, "qsort");
	g = (uint64_t)(uintptr_t)dlsym(libc, "getenv");
	cr_assert(q && g);

	cr_assert_gt(add_own_mappings(&f, "libc.so"), 0, "no libc mapping");
	rv_symtab_ranges_sort(&f);
	cr_assert(same_function(&f, q, q + 1));
	cr_assert(same_function(&f, g, g + 2));
	cr_assert(!same_function(&f, q, g));
	rv_symtab_ranges_destroy(&f);
	dlclose(libc);
}

Test(symtab_ranges, files_that_are_not_elf_add_nothing)
{
	struct rv_symtab_ranges f = { 0 };

	cr_assert_eq(rv_symtab_ranges_add_file(&f, "/nonexistent/file", 0, 0x1000, 0x1000), 0);
	cr_assert_eq(rv_symtab_ranges_add_file(&f, "/proc/self/maps", 0, 0x1000, 0x1000), 0);
	cr_assert_eq(rv_symtab_ranges_add_file(&f, "/etc/passwd", 0, 0x1000, 0x1000), 0);
	rv_symtab_ranges_sort(&f);
	cr_assert_eq(f.nr, 0);
	cr_assert(!same_function(&f, 0x1000, 0x1001));
	rv_symtab_ranges_destroy(&f);
}

/* An empty table has no array (NULL): the search must not offset it (the
 * fuzz harness of `rearview decode` found it, UBSan's pointer-overflow check
 * under clang: "applying zero offset to null pointer"; make check-asan and
 * make fuzz run this with UBSan). */
Test(symtab_ranges, an_empty_set_is_searched_without_its_array)
{
	struct rv_symtab_ranges empty = { 0 };
	uint64_t start = 1, end = 1;

	cr_assert_eq(rv_sorted_upper(NULL, 0, sizeof(struct rv_symtab_range),
				     offsetof(struct rv_symtab_range, end), 0x1000),
		     0);
	cr_assert_not(rv_symtab_around(&empty, 0x1000, &start, &end));
	cr_assert_eq(start, 1);
	cr_assert_eq(end, 1);
}

static int by_start_then_end(const void *a, const void *b)
{
	const struct rv_symtab_range *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* The index of the range that byte x belongs to, or -1, by a linear scan of
 * the nr ranges v sorted by start, then end. */
static int owner(const struct rv_symtab_range *v, size_t nr, uint64_t x)
{
	int last = -1;

	for (size_t i = 0; i < nr; i++)
		if (v[i].start <= x)
			last = (int)i;
	return last >= 0 && x < v[last].end ? last : -1;
}

/* A symbol nested in another (a local label with a size, an alias of part of
 * a function) takes the rest of the outer one's code: a jump across the
 * inner one's start is not inside one function, whichever side it starts. */
Test(symtab_ranges, nested_symbols_cut_the_outer_range)
{
	struct rv_symtab_range v[] = {
		{ 0x1000, 0x1100 }, /* outer */
		{ 0x1040, 0x1060 }, /* nested */
		{ 0x1000, 0x1100 }, /* an alias of outer, same range */
		{ 0x2000, 0x2010 },
	};
	struct rv_symtab_ranges f = { 0 };
	uint64_t start = 0, end = 0;

	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(rv_symtab_ranges_add(&f, v[i].start, v[i].end), 0);
	rv_symtab_ranges_sort(&f);
	qsort(v, 4, sizeof(v[0]), by_start_then_end);
	cr_assert(rv_symtab_around(&f, 0x1000, &start, &end));
	cr_assert_eq(start, 0x1000);
	cr_assert_eq(end, 0x1040, "cut where the nested symbol begins, not %#" PRIx64, end);
	cr_assert(rv_symtab_around(&f, 0x1050, &start, &end));
	cr_assert(start == 0x1040 && end == 0x1060);
	cr_assert(!rv_symtab_around(&f, 0x1070, &start, &end),
		  "after the nested symbol's end: none, rather than a guess");
	cr_assert(!rv_symtab_around(&f, 0x1800, &start, &end), "between functions");
	cr_assert(!rv_symtab_around(&f, 0x0fff, &start, &end), "before the first");
	cr_assert(rv_symtab_around(&f, 0x200f, &start, &end));
	cr_assert(start == 0x2000 && end == 0x2010);
	cr_assert(!rv_symtab_around(&f, 0x2010, &start, &end), "one past the last");

	cr_assert(same_function(&f, 0x1000, 0x103f));
	cr_assert(!same_function(&f, 0x1000, 0x1040));
	cr_assert(!same_function(&f, 0x1050, 0x1030));
	cr_assert(!same_function(&f, 0x1050, 0x1070));
	cr_assert(!same_function(&f, 0x1070, 0x1071));
	/* against a linear scan: a byte belongs to the last range (in sorted
	 * order) that starts at or before it, if that range covers it */
	for (uint64_t a = 0xff0; a < 0x2020; a += 3) {
		int owner_a = owner(v, 4, a);
		bool in = rv_symtab_around(&f, a, &start, &end);

		cr_assert_eq(in, owner_a >= 0, "%#" PRIx64, a);
		for (uint64_t b = 0xff0; b < 0x2020; b += 5) {
			bool same = owner_a >= 0 && owner(v, 4, b) == owner_a;

			cr_assert_eq(same_function(&f, a, b), same, "%#" PRIx64 " %#" PRIx64, a, b);
			cr_assert_eq(in && b >= start && b < end, same);
		}
	}
	rv_symtab_ranges_destroy(&f);
}

/* ---- the rules, on a file of every kind of symbol ---- */

enum { SEC_UNDEF, SEC_TEXT, SEC_DATA, SEC_NOTE, SEC_ABS };

struct test_symbol {
	const char *name;
	uint64_t value, size;
	unsigned char type, bind;
	int section;
};

#define TEXT_ADDR 0x1000
#define TEXT_SIZE 0x1000
#define DATA_ADDR 0x3000

/* In table order. */
static const struct test_symbol symbols[] = {
	{ "f", 0x1000, 0x40, STT_FUNC, STB_GLOBAL, SEC_TEXT },
	{ "f_weak", 0x1000, 0x40, STT_FUNC, STB_WEAK, SEC_TEXT },
	{ "__f_longer", 0x1000, 0x80, STT_FUNC, STB_GLOBAL, SEC_TEXT },
	{ "unsized", 0x1100, 0, STT_FUNC, STB_LOCAL, SEC_TEXT },
	{ "label", 0x1180, 0, STT_NOTYPE, STB_LOCAL, SEC_TEXT },
	{ "outer", 0x1200, 0x100, STT_FUNC, STB_GLOBAL, SEC_TEXT },
	{ "inner", 0x1240, 0x20, STT_FUNC, STB_LOCAL, SEC_TEXT },
	{ "data_label", 0x3000, 0, STT_NOTYPE, STB_LOCAL, SEC_DATA },
	{ "object", 0x3010, 0x10, STT_OBJECT, STB_GLOBAL, SEC_DATA },
	{ "resolver", 0x1400, 0x10, STT_GNU_IFUNC, STB_GLOBAL, SEC_TEXT },
	{ "imported", 0, 0, STT_FUNC, STB_GLOBAL, SEC_UNDEF },
	{ "absolute", 0x1500, 0x10, STT_FUNC, STB_GLOBAL, SEC_ABS },
	{ "", 0x1600, 0x10, STT_FUNC, STB_LOCAL, SEC_TEXT },
	{ "versioned@@VERS_1", 0x1700, 0x10, STT_FUNC, STB_GLOBAL, SEC_TEXT },
	{ "_Z3fooi", 0x1800, 0x10, STT_FUNC, STB_GLOBAL, SEC_TEXT },
	{ "unloaded", 0x10, 0x10, STT_FUNC, STB_LOCAL, SEC_NOTE },
	{ "last", 0x1f00, 0, STT_FUNC, STB_GLOBAL, SEC_TEXT },
};
#define NR_SYMBOLS (sizeof(symbols) / sizeof(symbols[0]))

static Elf_Scn *new_section(Elf *e, const char *name_table, size_t names_size, const char *name,
			    uint32_t type, uint64_t flags, uint64_t addr, void *buf, size_t size,
			    uint64_t *offset, size_t align, Elf_Type data_type)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf_Data *d = elf_newdata(scn);
	Elf64_Shdr *sh = elf64_getshdr(scn);

	*offset = (*offset + align - 1) & ~(uint64_t)(align - 1);
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = data_type;
	d->d_align = align;
	sh->sh_name =
		(Elf64_Word)((const char *)memmem(name_table, names_size, name, strlen(name) + 1) -
			     name_table);
	sh->sh_type = type;
	sh->sh_flags = flags;
	sh->sh_addr = addr;
	sh->sh_offset = *offset;
	sh->sh_size = size;
	sh->sh_addralign = align;
	*offset += size;
	return scn;
}

/* Writes an ET_DYN file with symbols[] in its .symtab: .text (code) at
 * TEXT_ADDR, file offset 0x1000, in an executable PT_LOAD; .data at
 * DATA_ADDR, file offset 0x2000; .note.rv, not loaded. */
static void write_test_elf(const char *path)
{
	static const char shstr[] = "\0.text\0.data\0.note.rv\0.strtab\0.symtab\0.shstrtab";
	static uint8_t text[TEXT_SIZE], data[0x100], note[0x20];
	char strtab[1024] = "";
	size_t strtab_len = 1;
	Elf64_Sym syms[NR_SYMBOLS + 1];
	uint64_t offset = 0x1000;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	Elf *e;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf_Scn *scn_text, *scn_data, *scn_note, *scn_str, *scn_sym, *scn_shstr;

	cr_assert_geq(fd, 0);
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	cr_assert_not_null(e);
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = ET_DYN;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	ph = elf64_newphdr(e, 2);
	cr_assert_not_null(ph);

	scn_text = new_section(e, shstr, sizeof(shstr), ".text", SHT_PROGBITS,
			       SHF_ALLOC | SHF_EXECINSTR, TEXT_ADDR, text, sizeof(text), &offset,
			       16, ELF_T_BYTE);
	scn_data =
		new_section(e, shstr, sizeof(shstr), ".data", SHT_PROGBITS, SHF_ALLOC | SHF_WRITE,
			    DATA_ADDR, data, sizeof(data), &offset, 16, ELF_T_BYTE);
	scn_note = new_section(e, shstr, sizeof(shstr), ".note.rv", SHT_PROGBITS, 0, 0, note,
			       sizeof(note), &offset, 1, ELF_T_BYTE);
	memset(syms, 0, sizeof(syms));
	for (size_t i = 0; i < NR_SYMBOLS; i++) {
		const struct test_symbol *t = &symbols[i];
		Elf64_Sym *sym = &syms[i + 1];
		size_t len = strlen(t->name);

		if (len) {
			cr_assert_lt(strtab_len + len + 1, sizeof(strtab));
			memcpy(strtab + strtab_len, t->name, len + 1);
			sym->st_name = (Elf64_Word)strtab_len;
			strtab_len += len + 1;
		}
		sym->st_value = t->value;
		sym->st_size = t->size;
		sym->st_info = ELF64_ST_INFO(t->bind, t->type);
		sym->st_shndx = t->section == SEC_TEXT	 ? (Elf64_Section)elf_ndxscn(scn_text)
				: t->section == SEC_DATA ? (Elf64_Section)elf_ndxscn(scn_data)
				: t->section == SEC_NOTE ? (Elf64_Section)elf_ndxscn(scn_note)
				: t->section == SEC_ABS	 ? SHN_ABS
							 : SHN_UNDEF;
	}
	scn_str = new_section(e, shstr, sizeof(shstr), ".strtab", SHT_STRTAB, 0, 0, strtab,
			      strtab_len, &offset, 1, ELF_T_BYTE);
	scn_sym = new_section(e, shstr, sizeof(shstr), ".symtab", SHT_SYMTAB, 0, 0, syms,
			      sizeof(syms), &offset, 8, ELF_T_SYM);
	elf64_getshdr(scn_sym)->sh_link = (Elf64_Word)elf_ndxscn(scn_str);
	elf64_getshdr(scn_sym)->sh_info = 1;
	elf64_getshdr(scn_sym)->sh_entsize = sizeof(Elf64_Sym);
	scn_shstr = new_section(e, shstr, sizeof(shstr), ".shstrtab", SHT_STRTAB, 0, 0,
				(void *)shstr, sizeof(shstr), &offset, 1, ELF_T_BYTE);
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(scn_shstr);
	eh->e_shoff = (offset + 7) & ~7ull;

	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_X,
			      .p_offset = 0x1000,
			      .p_vaddr = TEXT_ADDR,
			      .p_paddr = TEXT_ADDR,
			      .p_filesz = TEXT_SIZE,
			      .p_memsz = TEXT_SIZE,
			      .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD,
			      .p_flags = PF_R | PF_W,
			      .p_offset = 0x2000,
			      .p_vaddr = DATA_ADDR,
			      .p_paddr = DATA_ADDR,
			      .p_filesz = sizeof(data),
			      .p_memsz = sizeof(data),
			      .p_align = 0x1000 };
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

static char test_elf[64];

static void make_test_elf(void)
{
	int fd;

	snprintf(test_elf, sizeof(test_elf), "/tmp/rv-symtab-XXXXXX");
	fd = mkstemp(test_elf);
	cr_assert_geq(fd, 0);
	close(fd);
	write_test_elf(test_elf);
}

static void remove_test_elf(void)
{
	unlink(test_elf);
}

/* What a reading saw: the names, in order, joined by spaces. */
struct seen {
	char names[1024];
	struct rv_symtab_symbol last[NR_SYMBOLS];
	size_t nr;
};

static int see(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct seen *s = ctx;

	cr_assert_lt(s->nr, NR_SYMBOLS);
	s->last[s->nr++] = *sym;
	strcat(s->names, s->nr > 1 ? " " : "");
	strcat(s->names, sym->name[0] ? sym->name : "(none)");
	return 0;
}

static const struct rv_symtab_symbol *seen_named(const struct seen *s, const char *name)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->last[i].name, name))
			return &s->last[i];
	return NULL;
}

static int stop_at_third(void *ctx, const struct rv_symtab_symbol *sym)
{
	return ++*(int *)ctx == 3 ? 42 : 0;
}

TestSuite(symtab, .init = make_test_elf, .fini = remove_test_elf);

/* Functions with a size: what the decoder's stretches and --functions read.
 * Defined is all they ask (an absolute or unloaded function counts, as it
 * always has for them), and a name is not needed. */
Test(symtab, sized_functions_are_func_and_ifunc_symbols_with_a_size)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	struct seen s = { .names = "" };
	int calls = 0;

	cr_assert_eq(rv_symtab_file_open(&f, test_elf, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	cr_assert_eq(rv_symtab_read(&src, RV_SYMTAB_SIZED, see, &s), 0);
	cr_assert_str_eq(s.names, "f f_weak __f_longer outer inner resolver absolute (none) "
				  "versioned@@VERS_1 _Z3fooi unloaded");
	cr_assert_eq(seen_named(&s, "f")->place, RV_SYMTAB_CODE);
	cr_assert_eq(seen_named(&s, "f")->section_end, TEXT_ADDR + TEXT_SIZE);
	cr_assert_eq(seen_named(&s, "resolver")->type, STT_GNU_IFUNC);
	cr_assert_eq(seen_named(&s, "absolute")->place, RV_SYMTAB_SPECIAL);
	cr_assert_eq(seen_named(&s, "unloaded")->place, RV_SYMTAB_UNLOADED);
	cr_assert_eq(seen_named(&s, "__f_longer")->size, 0x80);

	cr_assert_eq(rv_symtab_read(&src, RV_SYMTAB_SIZED, stop_at_third, &calls), 42,
		     "a visit's return stops the reading");
	cr_assert_eq(calls, 3);
	rv_symtab_file_close(&f);
}

/* Names take what names code: sized or not, labels in code, with a name, in
 * a loaded section. */
Test(symtab, naming_takes_unsized_functions_and_code_labels)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	struct seen s = { .names = "" };

	cr_assert_eq(rv_symtab_file_open(&f, test_elf, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	cr_assert_eq(rv_symtab_read(&src, RV_SYMTAB_NAMING, see, &s), 0);
	cr_assert_str_eq(s.names, "f f_weak __f_longer unsized label outer inner resolver "
				  "versioned@@VERS_1 _Z3fooi last");
	rv_symtab_file_close(&f);
}

Test(symtab, files_that_are_not_elf_are_named_in_the_error)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_symtab_file_open(&f, "/nonexistent/file", &err), -ENOENT);
	cr_assert_str_eq(err.message, "cannot open '/nonexistent/file': No such file or directory");
	cr_assert_eq(rv_symtab_file_open(&f, "/etc/passwd", &err), -ENOEXEC);
	cr_assert_str_eq(err.message, "'/etc/passwd' is not an ELF file");
	cr_assert_eq(f.fd, -1);
	cr_assert_null(f.elf);
}

static struct rv_symtab_entry *entry_at(struct rv_symtab *t, uint64_t addr)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->entries[i].addr == addr)
			return &t->entries[i];
	return NULL;
}

/* The index for names: aliases merged under the name a reader expects, spans
 * for symbols without a size, the innermost symbol for nested ones. */
static void check_names(struct rv_symtab *t)
{
	struct rv_symtab_entry *e;
	struct rv_intern pool;

	cr_assert_eq(t->nr, 9, "%zu entries", t->nr);
	for (size_t i = 1; i < t->nr; i++)
		cr_assert_lt(t->entries[i - 1].addr, t->entries[i].addr, "sorted, one per address");

	e = entry_at(t, 0x1000);
	cr_assert_str_eq(rv_symtab_raw_name(t, e), "f", "global over weak, then fewer underscores");
	cr_assert_eq(e->size, 0x40, "the chosen alias's size");
	cr_assert_eq(e->span, 0x40);
	e = entry_at(t, 0x1100);
	cr_assert_eq(e->size, 0);
	cr_assert_eq(e->span, 0x80, "an unsized function reaches the next symbol");
	cr_assert_eq(entry_at(t, 0x1180)->span, 0x80, "so does a label in code");
	cr_assert_eq(entry_at(t, 0x1f00)->span, 0x100, "the last one: up to its section's end");
	cr_assert_str_eq(rv_symtab_raw_name(t, entry_at(t, 0x1700)), "versioned",
			 "names lose their version");

	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x1000)), "f");
	cr_assert_null(rv_symtab_find(t, 0x1040), "past the chosen alias's size");
	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x1150)), "unsized");
	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x11ff)), "label");
	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x1250)), "inner", "innermost");
	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x1260)), "outer",
			 "the enclosing one after the nested one");
	cr_assert_str_eq(rv_symtab_raw_name(t, rv_symtab_find(t, 0x1fff)), "last");
	cr_assert_null(rv_symtab_find(t, 0x2000));
	cr_assert_null(rv_symtab_find(t, 0x1500), "an absolute symbol names nothing");
	cr_assert_null(rv_symtab_find(t, 0x0fff));

	rv_intern_init(&pool);
	e = entry_at(t, 0x1800);
	cr_assert_str_eq(rv_symtab_display_name(t, e, &pool), "foo(int)");
	cr_assert_eq(rv_symtab_display_name(t, e, &pool), e->display, "made once");
	cr_assert_str_eq(rv_symtab_display_name(t, entry_at(t, 0x1200), &pool), "outer");
	rv_intern_destroy(&pool);
}

Test(symtab, names_from_a_file)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	struct rv_symtab *t;

	cr_assert_eq(rv_symtab_file_open(&f, test_elf, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	cr_assert_eq(rv_symtab_build(&t, &src), 0);
	rv_symtab_file_close(&f);
	check_names(t);
	rv_symtab_free(t);
}

/* The same file through libdwfl, loaded at a bias: the same index, in
 * link-time addresses. */
Test(symtab, names_from_a_libdwfl_module_are_the_same)
{
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	const uint64_t bias = 0x7f0000000000ull;
	Dwfl *dwfl = dwfl_begin(&callbacks);
	struct rv_symtab *t;
	Dwfl_Module *mod;

	cr_assert_not_null(dwfl);
	dwfl_report_begin(dwfl);
	mod = dwfl_report_elf(dwfl, "test", test_elf, -1, bias, true);
	cr_assert_not_null(mod, "%s", dwfl_errmsg(-1));
	dwfl_report_end(dwfl, NULL, NULL);

	struct rv_symtab_source src = { .mod = mod, .bias = bias };

	cr_assert_eq(rv_symtab_build(&t, &src), 0);
	check_names(t);
	rv_symtab_free(t);
	dwfl_end(dwfl);
}

Test(symtab, no_source_no_symbols)
{
	struct rv_symtab_source src = { 0 };
	struct rv_symtab *t;

	cr_assert_eq(rv_symtab_build(&t, &src), 0);
	cr_assert_eq(t->nr, 0);
	cr_assert_null(rv_symtab_find(t, 0x1000));
	rv_symtab_free(t);
}

/* The decoder's stretches: sized functions at run-time addresses, aliases as
 * their longest, cut where a nested one begins. */
Test(symtab, stretches_of_a_mapped_file)
{
	const uint64_t base = 0x7f0000000000ull;
	struct rv_symtab_ranges r = { 0 };
	uint64_t start, end;

	cr_assert_eq(rv_symtab_ranges_add_file(&r, test_elf, 0x1000, base + TEXT_ADDR, TEXT_SIZE),
		     0);
	rv_symtab_ranges_sort(&r);
	cr_assert(rv_symtab_around(&r, base + 0x1050, &start, &end));
	cr_assert(start == base + 0x1000 && end == base + 0x1080, "the longest alias");
	cr_assert(!rv_symtab_around(&r, base + 0x1100, &start, &end), "no size: not certain");
	cr_assert(!rv_symtab_around(&r, base + 0x1180, &start, &end), "a label is no function");
	cr_assert(rv_symtab_around(&r, base + 0x1200, &start, &end));
	cr_assert(start == base + 0x1200 && end == base + 0x1240);
	cr_assert(rv_symtab_around(&r, base + 0x125f, &start, &end));
	cr_assert(start == base + 0x1240 && end == base + 0x1260);
	cr_assert(!rv_symtab_around(&r, base + 0x1260, &start, &end), "after the nested one");
	cr_assert(rv_symtab_around(&r, base + 0x1400, &start, &end), "an IFUNC resolver");
	cr_assert(rv_symtab_around(&r, base + 0x1600, &start, &end), "no name is needed");
	cr_assert(!rv_symtab_around(&r, base + 0x10, &start, &end), "outside the mapping");
	rv_symtab_ranges_destroy(&r);

	/* A mapping no PT_LOAD segment holds adds nothing. */
	cr_assert_eq(rv_symtab_ranges_add_file(&r, test_elf, 0x5000, base, 0x1000), 0);
	cr_assert_eq(r.nr, 0);
	rv_symtab_ranges_destroy(&r);
}

/* lld's layout: read-only data and code share file page 0, the code a page
 * higher in addresses. A mapping of that page for the code at 0x7f0000001000
 * has the code segment's bias, not the read-only segment's. */
Test(symtab, a_mappings_load_bias_comes_from_its_code_segment)
{
	const struct rv_symtab_segment lld[] = {
		{ .offset = 0, .vaddr = 0, .filesz = 0x754, .executable = false },
		{ .offset = 0x760, .vaddr = 0x1760, .filesz = 0x1380, .executable = true },
		{ .offset = 0x1ae0, .vaddr = 0x3ae0, .filesz = 0x1e8, .executable = false },
	};
	uint64_t bias = 0;

	cr_assert(rv_symtab_load_bias(lld, 3, 0, 0x7f0000001000, &bias));
	cr_assert_eq(bias, 0x7f0000000000, "the code at 0x1760 runs at 0x7f0000001760");
	/* the read-only mapping of the same page, with no code segment on it */
	cr_assert(rv_symtab_load_bias(lld, 1, 0, 0x7f0000000000, &bias));
	cr_assert_eq(bias, 0x7f0000000000);
	cr_assert_not(rv_symtab_load_bias(lld, 3, 0x9000, 0x7f0000009000, &bias),
		      "no segment holds that offset");
}

/* Whether a symbol names some byte of a range: the test of an FDE before it
 * may name code (symtab.h: symbols or an FDE, never both). */
Test(symtab, names_any_is_whether_a_symbol_names_a_byte_of_the_range)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	struct rv_symtab *t;

	cr_assert_eq(rv_symtab_file_open(&f, test_elf, &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	cr_assert_eq(rv_symtab_build(&t, &src), 0);
	rv_symtab_file_close(&f);
	/* f covers [0x1000, 0x1040); nothing then until "unsized" at 0x1100 */
	cr_assert_not(rv_symtab_names_any(t, 0x1040, 0x1100), "the gap");
	cr_assert(rv_symtab_names_any(t, 0x1040, 0x1101), "a symbol begins at its last byte");
	cr_assert(rv_symtab_names_any(t, 0x103f, 0x1041), "a symbol covers its first byte");
	cr_assert(rv_symtab_names_any(t, 0x1000, 0x1001));
	cr_assert(rv_symtab_names_any(t, 0x1250, 0x1251), "a nested symbol");
	cr_assert_not(rv_symtab_names_any(t, 0x1050, 0x1050), "an empty range");
	cr_assert_not(rv_symtab_names_any(t, 0x0, 0x1000), "before the first");
	cr_assert_not(rv_symtab_names_any(NULL, 0x1000, 0x2000), "no table");
	rv_symtab_free(t);
}

/* The executable segment of path, mapped at base + its page-aligned vaddr. */
static void code_mapping(const char *path, uint64_t base, uint64_t *pgoff, uint64_t *start,
			 uint64_t *len)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	size_t phnum;
	bool found = false;

	cr_assert_eq(rv_symtab_file_open(&f, path, &err), 0, "%s", err.message);
	cr_assert_eq(elf_getphdrnum(f.elf, &phnum), 0);
	for (size_t i = 0; i < phnum && !found; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f.elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		*pgoff = ph.p_offset & ~0xfffull;
		*start = base + (ph.p_vaddr & ~0xfffull);
		*len = (ph.p_vaddr & 0xfff) + ph.p_filesz;
		found = true;
	}
	rv_symtab_file_close(&f);
	cr_assert(found, "no code segment in %s", path);
}

static int sized_function(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct rv_symtab_symbol *want = ctx;

	if (strcmp(sym->name, want->name))
		return 0;
	*want = *sym;
	return 1;
}

/* A function of the unstripped sym_c, by name. */
static struct rv_symtab_symbol sym_c_function(const char *name)
{
	struct rv_symtab_symbol sym = { .name = name };
	struct rv_symtab_file f;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_symtab_file_open(&f, built_target("sym_c"), &err), 0, "%s", err.message);
	struct rv_symtab_source src = { .elf = f.elf };

	cr_assert_eq(rv_symtab_read(&src, RV_SYMTAB_SIZED, sized_function, &sym), 1, "no %s", name);
	rv_symtab_file_close(&f);
	sym.name = name;
	return sym;
}

/* The decoder's stretches in a stripped file are its FDEs, which are its
 * functions (the unstripped file's symbols say where those are), as the
 * symbolizer names them; where a debug file names them, the FDEs make no
 * stretches, since the names come from symbols the decoder does not read. */
Test(symtab, stretches_of_a_stripped_file_are_its_functions)
{
	static const char *const functions[] = { "sym_c_deepest", "inner_static", "sym_c_middle",
						 "sym_c_outer", "main" };
	const uint64_t base = 0x7f0000000000ull;
	struct rv_symtab_ranges r = { 0 };
	uint64_t pgoff, start, end, len;
	char stripped[512], *root;

	/* (built_target's answer lasts until its next call) */
	snprintf(stripped, sizeof(stripped), "%s", built_target("sym_c.stripped"));

	code_mapping(stripped, base, &pgoff, &start, &len);
	cr_assert_eq(rv_symtab_ranges_add_file(&r, stripped, pgoff, start, len), 0);
	rv_symtab_ranges_sort(&r);
	for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++) {
		struct rv_symtab_symbol fn = sym_c_function(functions[i]);

		cr_assert(rv_symtab_around(&r, base + fn.addr + fn.size / 2, &start, &end), "%s",
			  fn.name);
		cr_assert_eq(start, base + fn.addr, "%s", fn.name);
		cr_assert_eq(end, base + fn.addr + fn.size, "%s", fn.name);
	}
	cr_assert_not(same_function(&r, base + sym_c_function("sym_c_middle").addr,
				    base + sym_c_function("inner_static").addr),
		      "two functions side by side are two stretches");
	rv_symtab_ranges_destroy(&r);

	root = realpath(built_target("sym_c.debugroot"), NULL);
	cr_assert(root, "sym_c.debugroot is missing: run make first");
	cr_assert_eq(setenv("REARVIEW_DEBUG_DIRS", root, 1), 0);
	code_mapping(stripped, base, &pgoff, &start, &len);
	cr_assert_eq(rv_symtab_ranges_add_file(&r, stripped, pgoff, start, len), 0);
	rv_symtab_ranges_sort(&r);
	cr_assert_not(
		rv_symtab_around(&r, base + sym_c_function("inner_static").addr, &start, &end),
		"an FDE that the debug file's symbols name");
	rv_symtab_ranges_destroy(&r);
	unsetenv("REARVIEW_DEBUG_DIRS");
	free(root);
}
