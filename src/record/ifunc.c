/* ifunc.c: an IFUNC's choice read from the GOT slots of a running process;
 * see ifunc.h. */
#define RV_LOG_DOMAIN "ifunc"
#include "record/ifunc.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/symbolizer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/proc.h"

/* Objects and code mappings looked at, at most. */
#define MAX_OBJECTS 512
#define MAX_CODE    16

struct object {
	char path[PATH_MAX];
	uint64_t start, pgoff; /* its mapping of the lowest file offset */
};

struct code {
	uint64_t start, end, pgoff;
};

struct process_view {
	struct object *objects;
	size_t nr_objects;
	struct code code[MAX_CODE]; /* the library's executable mappings */
	size_t nr_code;
	const char *lib; /* the library's real path */
};

static void add_object(struct process_view *v, const char *path, uint64_t start, uint64_t pgoff)
{
	for (size_t i = 0; i < v->nr_objects; i++) {
		if (strcmp(v->objects[i].path, path))
			continue;
		if (pgoff < v->objects[i].pgoff) {
			v->objects[i].start = start;
			v->objects[i].pgoff = pgoff;
		}
		return;
	}
	if (v->nr_objects == MAX_OBJECTS || strlen(path) >= PATH_MAX)
		return;
	snprintf(v->objects[v->nr_objects].path, PATH_MAX, "%s", path);
	v->objects[v->nr_objects].start = start;
	v->objects[v->nr_objects].pgoff = pgoff;
	v->nr_objects++;
}

/* The process's mapped files, and the library's code; false when the
 * process cannot be read. */
static bool read_maps(pid_t pid, struct process_view *v)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perms[8];
		int at = 0;
		char *file;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &pgoff,
			   &at) < 4 ||
		    at <= 0)
			continue;
		file = line + at;
		file[strcspn(file, "\n")] = '\0';
		if (file[0] != '/')
			continue;
		add_object(v, file, start, pgoff);
		if (!strcmp(file, v->lib) && perms[2] == 'x' && v->nr_code < MAX_CODE)
			v->code[v->nr_code++] = (struct code){ start, end, pgoff };
	}
	fclose(f);
	return true;
}

static bool in_code(const struct process_view *v, uint64_t addr)
{
	for (size_t i = 0; i < v->nr_code; i++)
		if (addr >= v->code[i].start && addr < v->code[i].end)
			return true;
	return false;
}

/* The object's load bias, from the segment its lowest mapping maps. */
static bool load_bias(Elf *elf, const struct object *o, uint64_t *bias)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (o->pgoff < (ph.p_offset & ~0xfffull) || o->pgoff > ph.p_offset + ph.p_filesz)
			continue;
		*bias = o->start + ph.p_offset - ph.p_vaddr - o->pgoff;
		return true;
	}
	return false;
}

/* The name of symbol index `index` of the symbol table section symtab, or
 * NULL. */
static const char *symbol_name(Elf *elf, Elf_Scn *symtab, size_t index)
{
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *data;

	if (!symtab || !gelf_getshdr(symtab, &sh) || !sh.sh_entsize ||
	    index >= sh.sh_size / sh.sh_entsize)
		return NULL;
	data = elf_getdata(symtab, NULL);
	if (!data || !gelf_getsym(data, (int)index, &sym))
		return NULL;
	return elf_strptr(elf, sh.sh_link, sym.st_name);
}

/* Whether a symbol's name (perhaps "name@VERSION") is name. */
static bool same_name(const char *symbol, const char *name)
{
	size_t len = strcspn(name, "@");

	return symbol && !strncmp(symbol, name, len) && (symbol[len] == '\0' || symbol[len] == '@');
}

/* Looks through one object's relocations for a slot of the IFUNC that
 * holds an address of the library's code: true and *target then. */
static bool search_object(pid_t pid, const struct process_view *v, const struct object *o,
			  uint64_t resolver, const char *name, uint64_t *target)
{
	bool is_lib = !strcmp(o->path, v->lib), found = false;
	int fd = open(o->path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	uint64_t bias;
	Elf *elf;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !load_bias(elf, o, &bias))
		goto out;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; data && i < count && !found; i++) {
			GElf_Rela r;
			unsigned type;
			uint64_t slot, value;
			struct rv_error err = { 0 };

			if (!gelf_getrela(data, (int)i, &r))
				break;
			type = (unsigned)GELF_R_TYPE(r.r_info);
			if (type == R_X86_64_IRELATIVE) {
				if (!is_lib || (uint64_t)r.r_addend != resolver)
					continue;
			} else if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) {
				if (!same_name(symbol_name(elf, elf_getscn(elf, sh.sh_link),
							   GELF_R_SYM(r.r_info)),
					       name))
					continue;
			} else {
				continue;
			}
			slot = bias + r.r_offset;
			if (rv_proc_read_memory(pid, slot, &value, sizeof(value), &err))
				continue;
			if (in_code(v, value)) {
				*target = value;
				found = true;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* The symbolizer's name of addr in the library's code. */
static void name_target(pid_t pid, const struct process_view *v, uint64_t addr, char *out,
			size_t size)
{
	struct rv_symbolizer_options options = { 0 };
	struct rv_symbolizer *s = NULL;
	struct rv_error err = { 0 };
	struct rv_symbol sym;

	snprintf(out, size, "0x%" PRIx64, addr);
	if (rv_symbolizer_new(&s, &options, &err))
		return;
	for (size_t i = 0; i < v->nr_code; i++)
		if (rv_symbolizer_add_mapping(s, (uint32_t)pid, v->code[i].start,
					      v->code[i].end - v->code[i].start, v->code[i].pgoff,
					      true, v->lib, &err))
			break;
	rv_symbolizer_lookup(s, (uint32_t)pid, addr, &sym);
	if (sym.known)
		snprintf(out, size, "%s", sym.name);
	rv_symbolizer_free(s);
}

enum rv_ifunc_answer rv_ifunc_resolve(pid_t pid, const char *lib_path, uint64_t resolver,
				      const char *name, char *out, size_t size)
{
	char lib[PATH_MAX];
	struct process_view v = { .lib = lib };
	enum rv_ifunc_answer answer = RV_IFUNC_NOT_BOUND;
	uint64_t target = 0;

	if (size)
		out[0] = '\0';
	if (pid <= 0 || !realpath(lib_path, lib))
		return RV_IFUNC_NOT_LOADED;
	v.objects = calloc(MAX_OBJECTS, sizeof(*v.objects));
	if (!v.objects)
		return RV_IFUNC_NOT_BOUND;
	elf_version(EV_CURRENT);
	if (!read_maps(pid, &v) || !v.nr_code) {
		free(v.objects);
		return RV_IFUNC_NOT_LOADED;
	}
	/* the library's own IRELATIVE slots first, then its users' */
	for (size_t i = 0; i < v.nr_objects; i++)
		if (!strcmp(v.objects[i].path, lib) &&
		    search_object(pid, &v, &v.objects[i], resolver, name, &target))
			answer = RV_IFUNC_RESOLVED;
	for (size_t i = 0; answer != RV_IFUNC_RESOLVED && i < v.nr_objects; i++)
		if (strcmp(v.objects[i].path, lib) &&
		    search_object(pid, &v, &v.objects[i], resolver, name, &target))
			answer = RV_IFUNC_RESOLVED;
	if (answer == RV_IFUNC_RESOLVED)
		name_target(pid, &v, target, out, size);
	rv_debug("IFUNC %s of %s in process %d: %s", name, lib, (int)pid,
		 answer == RV_IFUNC_RESOLVED ? out : "no slot holds its choice");
	free(v.objects);
	return answer;
}
