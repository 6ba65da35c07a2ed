/* fn_exits.c: the instructions that leave a function (fn_exits.h), and, for
 * a selection of functions, their code read from their files with libelf and
 * its pieces found by name.
 *
 * Not here: which functions (fn_select.c), the probes (fn_attach.c).
 */
#define RV_LOG_DOMAIN "functions"
#include "record/fn_exits.h"

#include <Zydis/Zydis.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/fn_select.h"
#include "symbolize/symtab.h"
#include "util/array.h"
#include "util/elf.h"

void rv_fn_exits_init(struct rv_fn_exits *x)
{
	memset(x, 0, sizeof(*x));
}

void rv_fn_exits_destroy(struct rv_fn_exits *x)
{
	free(x->sites);
	rv_fn_exits_init(x);
}

static bool inside(const struct rv_fn_code *pieces, size_t nr, uint64_t addr)
{
	for (size_t i = 0; i < nr; i++)
		if (addr >= pieces[i].address && addr - pieces[i].address < pieces[i].size)
			return true;
	return false;
}

/* The condition code (0-15) of a Jcc, or -1 for another conditional branch
 * (jrcxz, loop), whose condition is not in the flags. */
static int jcc_condition(ZydisMnemonic m)
{
	static const ZydisMnemonic by_code[16] = {
		ZYDIS_MNEMONIC_JO, ZYDIS_MNEMONIC_JNO, ZYDIS_MNEMONIC_JB,  ZYDIS_MNEMONIC_JNB,
		ZYDIS_MNEMONIC_JZ, ZYDIS_MNEMONIC_JNZ, ZYDIS_MNEMONIC_JBE, ZYDIS_MNEMONIC_JNBE,
		ZYDIS_MNEMONIC_JS, ZYDIS_MNEMONIC_JNS, ZYDIS_MNEMONIC_JP,  ZYDIS_MNEMONIC_JNP,
		ZYDIS_MNEMONIC_JL, ZYDIS_MNEMONIC_JNL, ZYDIS_MNEMONIC_JLE, ZYDIS_MNEMONIC_JNLE,
	};

	for (int cc = 0; cc < 16; cc++)
		if (by_code[cc] == m)
			return cc;
	return -1;
}

static int add_site(struct rv_fn_exits *x, uint64_t address, enum rv_fn_site_kind kind,
		    uint8_t length, uint8_t condition)
{
	if (rv_array_grow(&x->sites, &x->cap_sites, x->nr_sites, sizeof(*x->sites), 8))
		return -ENOMEM;
	x->sites[x->nr_sites++] = (struct rv_fn_site){
		.address = address, .kind = (uint8_t)kind, .length = length, .condition = condition
	};
	return 0;
}

static void set_problem(struct rv_fn_exits *x, const char *problem, uint64_t address)
{
	if (!x->problem) {
		x->problem = problem;
		x->problem_address = address;
	}
}

/* One instruction at address: an exit, an indirect jump, or neither. */
static int classify(const ZydisDecodedInstruction *insn, uint64_t address,
		    const struct rv_fn_code *pieces, size_t nr, struct rv_fn_exits *x)
{
	bool far = insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	uint64_t target;
	int cc;

	if (insn->mnemonic == ZYDIS_MNEMONIC_RET) {
		if (far) {
			set_problem(x, "it has a far return", address);
			return 0;
		}
		return add_site(x, address, RV_FN_SITE_RETURN, insn->length, 0);
	}
	if (insn->mnemonic != ZYDIS_MNEMONIC_JMP && insn->meta.category != ZYDIS_CATEGORY_COND_BR)
		return 0;
	if (far) {
		set_problem(x, "it has a far jump", address);
		return 0;
	}
	if (!insn->raw.imm[0].is_relative) {
		x->indirect_jumps++;
		return 0;
	}
	target = address + insn->length + (uint64_t)insn->raw.imm[0].value.s;
	if (target == pieces[0].address + RV_FN_ENDBR64_SIZE)
		x->jumps_after_endbr = true;
	if (inside(pieces, nr, target))
		return 0;
	if (insn->mnemonic == ZYDIS_MNEMONIC_JMP)
		return add_site(x, address, RV_FN_SITE_TAIL_JUMP, insn->length, 0);
	cc = jcc_condition(insn->mnemonic);
	if (cc < 0) {
		set_problem(x,
			    "it leaves by a jrcxz or loop instruction, whose condition a probe "
			    "cannot test",
			    address);
		return 0;
	}
	return add_site(x, address, RV_FN_SITE_TAIL_JUMP, insn->length, (uint8_t)(cc + 1));
}

/* Whether the entry probe can go after the endbr64 that begins the
 * function's code (fn_exits.h, entry_skip). */
static bool may_skip_endbr(const struct rv_fn_code *code, const struct rv_fn_exits *x)
{
	static const uint8_t endbr64[RV_FN_ENDBR64_SIZE] = { 0xf3, 0x0f, 0x1e, 0xfa };

	if (code->size <= RV_FN_ENDBR64_SIZE || memcmp(code->bytes, endbr64, sizeof(endbr64)))
		return false;
	if (x->indirect_jumps || x->jumps_after_endbr)
		return false;
	for (size_t i = 0; i < x->nr_sites; i++)
		if (x->sites[i].address == code->address + RV_FN_ENDBR64_SIZE)
			return false;
	return true;
}

int rv_fn_exits_find(const struct rv_fn_code *pieces, size_t nr, struct rv_fn_exits *x)
{
	ZydisDecoder decoder;

	x->nr_sites = 0;
	x->indirect_jumps = 0;
	x->entry_skip = 0;
	x->jumps_after_endbr = false;
	x->problem = NULL;
	x->problem_address = 0;
	if (!ZYAN_SUCCESS(
		    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
		set_problem(x, "the instruction decoder (Zydis) cannot be set up", 0);
		return 0;
	}
	for (size_t i = 0; i < nr && !x->problem; i++) {
		const struct rv_fn_code *p = &pieces[i];
		size_t at = 0;

		while (at < p->size && !x->problem) {
			ZydisDecodedInstruction insn;
			ZyanStatus status = ZydisDecoderDecodeInstruction(
				&decoder, NULL, p->bytes + at, p->size - at, &insn);
			uint64_t address = p->address + at;
			int ret;

			if (status == ZYDIS_STATUS_NO_MORE_DATA) {
				set_problem(x, "its code ends inside an instruction", address);
				break;
			}
			if (!ZYAN_SUCCESS(status) || !insn.length) {
				set_problem(x, "an instruction in it cannot be decoded", address);
				break;
			}
			ret = classify(&insn, address, pieces, nr, x);
			if (ret)
				return ret;
			at += insn.length;
		}
	}
	if (!x->problem && !x->nr_sites && x->indirect_jumps)
		set_problem(x, "no instruction leaves it but an indirect jump might",
			    pieces[0].address);
	if (!x->problem && nr && may_skip_endbr(&pieces[0], x))
		x->entry_skip = RV_FN_ENDBR64_SIZE;
	return 0;
}

/* ---- a selection's functions, from their files ---- */

/* A piece of a function in a file, found by its name. */
struct piece {
	uint64_t parent_address; /* the parent symbol's (when found) */
	bool orphan;		 /* no symbol of the file has the parent's name */
	uint64_t address, size;
	const char *parent; /* raw name, parent_len bytes (the ELF's string table) */
	size_t parent_len;
};

/* A named function symbol of a file. */
struct named {
	const char *name; /* raw, "@VERSION" cut off by name_len */
	size_t name_len;
	uint64_t address;
};

struct file_symbols {
	struct piece *pieces;
	size_t nr_pieces, cap_pieces;
	struct named *names;
	size_t nr_names, cap_names;
};

static int collect_symbol(void *ctx, const struct rv_symtab_symbol *sym)
{
	struct file_symbols *fs = ctx;
	size_t parent_len;

	if (!*sym->name || (sym->place != RV_SYMTAB_CODE && sym->place != RV_SYMTAB_SPECIAL))
		return 0;
	if (rv_symtab_piece_of(sym->name, &parent_len)) {
		if (!parent_len || sym->addr + sym->size < sym->addr)
			return 0;
		if (rv_array_grow(&fs->pieces, &fs->cap_pieces, fs->nr_pieces, sizeof(*fs->pieces),
				  16))
			return -ENOMEM;
		fs->pieces[fs->nr_pieces++] = (struct piece){ .address = sym->addr,
							      .size = sym->size,
							      .parent = sym->name,
							      .parent_len = parent_len };
		return 0;
	}
	if (rv_array_grow(&fs->names, &fs->cap_names, fs->nr_names, sizeof(*fs->names), 64))
		return -ENOMEM;
	fs->names[fs->nr_names++] = (struct named){ .name = sym->name,
						    .name_len = strcspn(sym->name, "@"),
						    .address = sym->addr };
	return 0;
}

static int compare_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	size_t len = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, len);

	if (c)
		return c;
	return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

static int compare_pieces(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->parent_address != y->parent_address)
		return x->parent_address < y->parent_address ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

/* Gives each piece its parent's address (pieces whose parent is not in the
 * file keep 0) and sorts them by it. */
static void find_parents(struct file_symbols *fs)
{
	if (!fs->nr_pieces)
		return;
	if (fs->nr_names)
		qsort(fs->names, fs->nr_names, sizeof(*fs->names), compare_named);
	for (size_t i = 0; i < fs->nr_pieces; i++) {
		struct piece *p = &fs->pieces[i];
		struct named key = { .name = p->parent, .name_len = p->parent_len };
		struct named *found = fs->nr_names ? bsearch(&key, fs->names, fs->nr_names,
							     sizeof(*fs->names), compare_named)
						   : NULL;

		p->parent_address = found ? found->address : 0;
		p->orphan = !found;
	}
	qsort(fs->pieces, fs->nr_pieces, sizeof(*fs->pieces), compare_pieces);
}

/* A file's bytes [offset, offset + size), bounds-checked against its size:
 * a malloc'ed copy, or NULL (*problem says why). */
static uint8_t *read_code(int fd, uint64_t file_size, uint64_t offset, uint64_t size,
			  const char **problem)
{
	uint8_t *bytes;

	if (!size || size > (64u << 20) || offset > file_size || size > file_size - offset) {
		*problem = "its code is not inside its file";
		return NULL;
	}
	bytes = malloc(size);
	if (!bytes) {
		*problem = NULL;
		return NULL;
	}
	if (pread(fd, bytes, size, (off_t)offset) != (ssize_t)size) {
		free(bytes);
		*problem = "its code cannot be read from its file";
		return NULL;
	}
	return bytes;
}

/* The index of the first piece of the function at address (pieces sorted
 * by parent address). */
static size_t first_piece_of(const struct file_symbols *fs, uint64_t address)
{
	size_t lo = 0, hi = fs->nr_pieces;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fs->pieces[mid].parent_address < address)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether [address, address + size) lies in the executable segment that
 * maps address at file offset `offset` (its last byte at the offset its
 * first byte's says). */
static bool in_one_segment(Elf *elf, uint64_t address, uint64_t size, uint64_t offset)
{
	uint64_t last;

	if (!size || address + size < address)
		return false;
	return rv_elf_code_offset(elf, address + size - 1, &last) && last - offset == size - 1;
}

/* Appends x's sites to the list with their file offsets (through the piece
 * that holds each): f's first site is list->sites[*first]. */
static int keep_sites(struct rv_fn_list *list, struct rv_fn_probe *f, const struct rv_fn_code *code,
		      const uint64_t *offsets, size_t nr, const struct rv_fn_exits *x)
{
	if (rv_array_reserve(&list->sites, &list->sites_capacity, list->nr_sites + x->nr_sites,
			     sizeof(*list->sites), 64))
		return -ENOMEM;
	for (size_t i = 0; i < x->nr_sites; i++) {
		struct rv_fn_site s = x->sites[i];
		size_t piece = 0;

		while (piece < nr && !(s.address >= code[piece].address &&
				       s.address - code[piece].address < code[piece].size))
			piece++;
		if (piece == nr) /* rv_fn_exits_find finds sites only in pieces */
			return -EINVAL;
		s.offset = offsets[piece] + (s.address - code[piece].address);
		list->sites[list->nr_sites + i] = s;
	}
	f->first_site = list->nr_sites;
	f->nr_sites = x->nr_sites;
	list->nr_sites += x->nr_sites;
	return 0;
}

/* Finds f's exits in its file (elf, fd) with the pieces of fs. 0 (f's
 * exits_problem may be set) or -ENOMEM. */
static int plan_function(struct rv_fn_list *list, struct rv_fn_probe *f, Elf *elf, int fd,
			 uint64_t file_size, const struct file_symbols *fs, struct rv_fn_exits *x)
{
	struct rv_fn_code code[1 + RV_FN_MAX_PIECES];
	uint64_t offsets[1 + RV_FN_MAX_PIECES];
	const char *problem = NULL;
	size_t nr = 0;
	int ret = 0;

	f->exits = RV_FN_EXITS_URETPROBE;
	f->nr_sites = 0;
	f->entry_skip = 0;
	code[nr] = (struct rv_fn_code){ .address = f->address, .size = f->size };
	offsets[nr++] = f->offset;
	for (size_t i = first_piece_of(fs, f->address);
	     i < fs->nr_pieces && fs->pieces[i].parent_address == f->address; i++) {
		uint64_t offset;

		if (fs->pieces[i].orphan)
			continue;
		if (nr == 1 + RV_FN_MAX_PIECES) {
			problem = "it has too many out-of-line pieces";
			break;
		}
		if (!rv_elf_code_offset(elf, fs->pieces[i].address, &offset)) {
			problem = "an out-of-line piece of it is outside every executable segment";
			break;
		}
		code[nr] = (struct rv_fn_code){ .address = fs->pieces[i].address,
						.size = fs->pieces[i].size };
		offsets[nr++] = offset;
	}
	f->nr_pieces = nr - 1;
	for (size_t i = 0; i < nr && !problem; i++)
		if (!in_one_segment(elf, code[i].address, code[i].size, offsets[i]))
			problem = "its code is not inside one executable segment";
	for (size_t i = 0; i < nr; i++)
		code[i].bytes = NULL;
	for (size_t i = 0; i < nr && !problem && !ret; i++) {
		code[i].bytes = read_code(fd, file_size, offsets[i], code[i].size, &problem);
		if (!code[i].bytes && !problem)
			ret = -ENOMEM;
	}
	if (!ret && !problem) {
		ret = rv_fn_exits_find(code, nr, x);
		problem = x->problem;
		f->problem_address = x->problem_address;
		f->indirect_jumps = x->indirect_jumps;
		f->entry_skip = x->entry_skip;
	}
	if (!ret && !problem) {
		ret = keep_sites(list, f, code, offsets, nr, x);
		if (ret == -EINVAL) {
			problem = "an exit found is outside its code";
			ret = 0;
		} else if (!ret) {
			f->exits = RV_FN_EXITS_SITES;
		}
	}
	f->exits_problem = problem;
	for (size_t i = 0; i < nr; i++)
		free((void *)code[i].bytes);
	return ret;
}

/* Plans the functions of list that are in the file at path. */
static int plan_file(struct rv_fn_list *list, const char *path, struct rv_fn_exits *x,
		     struct rv_error *err)
{
	struct file_symbols fs = { 0 };
	struct rv_symtab_file f;
	struct rv_symtab_source src;
	struct stat st;
	int ret;

	ret = rv_symtab_file_open(&f, path, err);
	if (ret)
		return ret;
	if (fstat(f.fd, &st)) {
		ret = rv_error_set(err, errno, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	src = (struct rv_symtab_source){ .elf = f.elf };
	if (rv_symtab_read(&src, RV_SYMTAB_SIZED, collect_symbol, &fs)) {
		ret = rv_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	find_parents(&fs);
	for (size_t i = 0; i < list->count; i++) {
		struct rv_fn_probe *p = &list->items[i];

		if (strcmp(p->path, path))
			continue;
		if (plan_function(list, p, f.elf, f.fd, (uint64_t)st.st_size, &fs, x)) {
			ret = rv_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	free(fs.pieces);
	free(fs.names);
	rv_symtab_file_close(&f);
	return ret;
}

int rv_fn_exits_plan(struct rv_fn_list *list, bool return_sites, struct rv_error *err)
{
	struct rv_fn_exits x;
	int ret = 0;

	list->nr_sites = 0;
	for (size_t i = 0; i < list->count; i++) {
		list->items[i].exits = RV_FN_EXITS_URETPROBE;
		list->items[i].sites = NULL;
		list->items[i].nr_sites = 0;
		list->items[i].exits_problem = NULL;
	}
	if (!return_sites)
		return 0;
	rv_fn_exits_init(&x);
	for (size_t i = 0; i < list->count && !ret; i++) {
		bool seen = false;

		/* each file once: at its first function */
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(list->items[j].path, list->items[i].path);
		if (!seen)
			ret = plan_file(list, list->items[i].path, &x, err);
	}
	rv_fn_exits_destroy(&x);
	for (size_t i = 0; i < list->count && !ret; i++)
		if (list->items[i].exits == RV_FN_EXITS_SITES)
			list->items[i].sites = list->sites + list->items[i].first_site;
	return ret;
}
