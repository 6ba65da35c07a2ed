/* symbolizer.c: addresses to names for user code and the kernel; see
 * symbolizer.h.
 *
 * Per process, the executable file mappings the capture reported; on first
 * use, a libdwfl session with one module per (file, load bias), which also
 * finds separate .debug files (debuginfo.h) and, where DEBUGINFOD_URLS is
 * set, debuginfod. Symbol names come from a sorted per-file index
 * (symtab.c), in stripped files also from its FDEs, file and line from
 * libdwfl, kernel names from modules' .ko files, vmlinux and kallsyms
 * (kernel_syms.c). In front of all of it, a cache by (process generation,
 * address).
 *
 * This is not: an unwinder (symbolize/unwind.c borrows the per-process Dwfl), a
 * reader of the capture, or thread-safe: one decoding thread owns a symbolizer.
 */
#define RV_LOG_DOMAIN "symbolize"

#include "symbolize/symbolizer.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/kernel_syms.h"
#include "symbolize/sorted.h"
#include "symbolize/symtab.h"
#include "util/array.h"
#include "util/intern.h"
#include "util/log.h"
#include "util/map.h"

/* The lowest kernel address on x86-64 (the canonical high half). */
#define KERNEL_START 0xffff800000000000ull
/* perf's pid of the kernel's own mappings (-1) */
#define KERNEL_PID UINT32_MAX

/* Cache keys pair an address with a generation: the kernel's, that of
 * processes with no mappings, or one per process and per change of its
 * mappings (so a change makes its old entries unreachable at once). */
#define GENERATION_EMPTY	 0
#define GENERATION_KERNEL	 1
#define GENERATION_NO_PROCESS	 2
#define GENERATION_FIRST_PROCESS 3

/* Small to start with (4 KiB of answers, 2 KiB of sources), doubling as
 * it fills: a short decode names a handful of functions, and 4096 slots
 * (384 KiB zeroed for both tables) were a tenth of the heap a 200 KB
 * capture's decode grows to, enough to fault one more huge page. */
#define CACHE_MIN_SLOTS 64u
/* 64-byte slots: at most 64 MiB of cache, then it starts again empty. */
#define CACHE_MAX_SLOTS (1u << 20)

enum file_state { FILE_UNKNOWN, FILE_ELF, FILE_MISSING };

/* One file on disk, shared by every process that maps it. */
struct file_info {
	const char *path; /* pooled */
	enum file_state state;
	uint16_t e_type;
	struct rv_symtab_segment *loads;
	size_t nr_loads;
	struct rv_symtab *symtab; /* built on first lookup in the file */
	/* Its FDEs, for names in a stripped file: read on first need, from
	 * the file opened again (a Dwfl's ELF goes with its process). */
	struct rv_symtab_file cfi_file;
	struct rv_symtab_fdes fdes;
	bool fdes_read;
};

/* One file at one load bias in one process: a Dwfl module. */
struct module {
	struct file_info *file;
	uint64_t bias;
	Dwfl_Module *dwmod; /* NULL until reported, or if libdwfl refused it */
	bool reported;
};

enum mapping_kind { MAP_FILE, MAP_SPECIAL, MAP_ANON };

struct mapping {
	uint64_t start, end, pgoff;
	const char *path;     /* pooled, as the capture named it */
	const char *basename; /* pooled */
	enum mapping_kind kind;
	bool resolved;		/* file and module looked up */
	struct file_info *file; /* MAP_FILE, once resolved */
	struct module *module;	/* MAP_FILE of an ELF file, once resolved */
};

struct jit_symbol {
	uint64_t start, size;
	const char *name; /* pooled */
};

struct process {
	uint32_t pid;
	uint64_t generation;
	bool cached;	      /* the cache may hold entries of this generation */
	bool sourced;	      /* so may the source table (rv_symbolizer_source) */
	struct mapping *maps; /* sorted by start, not overlapping */
	size_t nr_maps, cap_maps;
	struct module **modules;
	size_t nr_modules, cap_modules;
	Dwfl *dwfl;
	bool unresolved;	/* mappings were added since the last sync */
	bool stale_dwfl;	/* a mapping replaced one of a reported module */
	struct jit_symbol *jit; /* from /tmp/perf-PID.map */
	size_t nr_jit;
	bool jit_loaded;
	const char *jit_module;
};

/* What both caches (names, source lines) are keyed by; the first member
 * of their entries, so that one probe and one rehash serve both. */
struct cache_key {
	uint64_t addr;
	uint64_t generation; /* GENERATION_EMPTY: free slot */
};

/* 64 bytes: the key and the answer as rv_symbolizer_find returns it */
struct cache_entry {
	struct cache_key key;
	struct rv_symbol sym;
};
_Static_assert(sizeof(struct cache_entry) == 64, "a cache entry is 64 bytes");

/* What `last` points to when there is no last entry: its generation is
 * GENERATION_EMPTY, which no lookup asks for. */
static const struct cache_entry no_entry;

struct rv_symbolizer {
	bool want_lines;
	struct rv_intern strings;
	const char *empty, *kernel_module, *out_of_memory;

	struct rv_map procs; /* by pid */
	/* The last pid asked for, plus one (0: none), and its process (NULL:
	 * it has none), so that a run of lookups in one process, or in one
	 * that has no mappings, asks the map once. */
	uint64_t last_pid_key;
	struct process *last_proc;
	uint64_t next_generation;

	struct rv_map files; /* by pooled path pointer */

	struct cache_entry *cache;
	size_t cap_cache, nr_cache;
	/* The last entry found or added (&no_entry: none), compared before
	 * the probe: a trace asks for one address many times in a row (a
	 * recursion's calls, a loop's). It points into `cache`, so whatever
	 * moves or empties the entries resets it. */
	const struct cache_entry *last;
	struct rv_symbol uncached; /* an answer the cache had no room for */

	/* rv_symbolizer_source's answers, by (generation, address) */
	struct source_entry {
		struct cache_key key;
		const char *file; /* pooled; NULL: DWARF does not say */
		int32_t line, column;
	} * sources;
	size_t cap_sources, nr_sources;
	struct source_entry last_source; /* as `last`, for the source table */

	struct rv_kernel_syms *kernel; /* NULL: no kernel names */
	/* kernel code the capture named (BPF programs), before `kernel` */
	struct kernel_extra {
		uint64_t addr, size;
		const char *name; /* pooled */
	} * kextra;
	size_t nr_kextra, cap_kextra;

	/* Offline-style callbacks: we report modules ourselves, with their
	 * biases; libdwfl finds separate debug information (debuginfo.h). */
	struct rv_debuginfo debuginfo;

	struct rv_symbolizer_stats stats;
};

static const char *pool(struct rv_symbolizer *s, const char *str)
{
	const char *pooled = rv_intern(&s->strings, str);

	return pooled ? pooled : s->out_of_memory;
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* ---- processes ---- */

static __attribute__((noinline)) struct process *find_other_process(struct rv_symbolizer *s,
								    uint32_t pid)
{
	s->last_pid_key = (uint64_t)pid + 1;
	s->last_proc = rv_map_get(&s->procs, pid);
	return s->last_proc;
}

static inline struct process *find_process(struct rv_symbolizer *s, uint32_t pid)
{
	if (s->last_pid_key == (uint64_t)pid + 1)
		return s->last_proc;
	return find_other_process(s, pid);
}

static struct process *get_process(struct rv_symbolizer *s, uint32_t pid)
{
	struct process *p = find_process(s, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || rv_map_put(&s->procs, pid, p)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->generation = s->next_generation++;
	s->last_pid_key = (uint64_t)pid + 1;
	s->last_proc = p;
	return p;
}

static void free_modules(struct process *p)
{
	for (size_t i = 0; i < p->nr_modules; i++)
		free(p->modules[i]);
	p->nr_modules = 0;
}

static void free_process(struct process *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	free_modules(p);
	free(p->modules);
	free(p->maps);
	free(p->jit);
	free(p);
}

/* ---- files ---- */

static struct file_info *get_file(struct rv_symbolizer *s, const char *pooled_path)
{
	struct file_info *f = rv_map_get(&s->files, (uintptr_t)pooled_path);

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f || rv_map_put(&s->files, (uintptr_t)pooled_path, f)) {
		free(f);
		return NULL;
	}
	f->path = pooled_path;
	f->cfi_file.fd = -1;
	return f;
}

static bool read_load_segments(struct file_info *f, Elf *elf)
{
	GElf_Ehdr ehdr;
	size_t phnum;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) || elf_getphdrnum(elf, &phnum) != 0)
		return false;
	f->e_type = ehdr.e_type;
	f->loads = calloc(phnum ? phnum : 1, sizeof(*f->loads));
	if (!f->loads)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_LOAD || !phdr.p_filesz)
			continue;
		f->loads[f->nr_loads].offset = phdr.p_offset;
		f->loads[f->nr_loads].vaddr = phdr.p_vaddr;
		f->loads[f->nr_loads].filesz = phdr.p_filesz;
		f->loads[f->nr_loads].executable = (phdr.p_flags & PF_X) != 0;
		f->nr_loads++;
	}
	return f->nr_loads > 0;
}

/* Opens the file once to learn its type and PT_LOAD layout. */
static void examine_file(struct rv_symbolizer *s, struct file_info *f)
{
	int fd;
	Elf *elf;
	bool ok;

	if (f->state != FILE_UNKNOWN)
		return;
	fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rv_debug("cannot open '%s' (%s); its addresses are named by offset", f->path,
			 strerror(errno));
		f->state = FILE_MISSING;
		s->stats.missing_files++;
		return;
	}
	/* read, not mapped: the headers are all it wants */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ok = elf && read_load_segments(f, elf);
	if (elf)
		elf_end(elf);
	close(fd);
	if (!ok) {
		rv_debug("'%s' is not an ELF executable or library; its addresses are named by "
			 "offset",
			 f->path);
		f->state = FILE_MISSING;
		s->stats.missing_files++;
		return;
	}
	f->state = FILE_ELF;
	s->stats.modules++;
}

/* The load bias of a file mapped by m: process address minus link-time
 * address. It comes from the PT_LOAD segment that holds the mapped file
 * offset, which need not be the first one (text often is the second). */
static uint64_t mapping_bias(const struct file_info *f, const struct mapping *m)
{
	uint64_t bias;

	if (f->e_type == ET_EXEC)
		return 0;
	/* A layout we do not understand: take file offsets for addresses. */
	if (!rv_symtab_load_bias(f->loads, f->nr_loads, m->pgoff, m->start, &bias))
		return m->start - m->pgoff;
	return bias;
}

/* ---- mappings and the libdwfl session ---- */

static struct module *get_module(struct process *p, struct file_info *f, uint64_t bias)
{
	struct module *mod;

	for (size_t i = 0; i < p->nr_modules; i++) {
		if (p->modules[i]->file == f && p->modules[i]->bias == bias)
			return p->modules[i];
	}
	if (rv_array_grow(&p->modules, &p->cap_modules, p->nr_modules, sizeof(*p->modules), 16))
		return NULL;
	mod = calloc(1, sizeof(*mod));
	if (!mod)
		return NULL;
	mod->file = f;
	mod->bias = bias;
	p->modules[p->nr_modules++] = mod;
	return mod;
}

static void resolve_mapping(struct rv_symbolizer *s, struct process *p, struct mapping *m)
{
	m->resolved = true;
	if (m->kind != MAP_FILE)
		return;
	m->file = get_file(s, m->path);
	if (!m->file)
		return;
	examine_file(s, m->file);
	if (m->file->state == FILE_ELF)
		m->module = get_module(p, m->file, mapping_bias(m->file, m));
}

static void report_modules(struct rv_symbolizer *s, struct process *p)
{
	bool pending = false;

	for (size_t i = 0; i < p->nr_modules; i++)
		pending |= !p->modules[i]->reported;
	if (!pending)
		return;
	if (!p->dwfl) {
		p->dwfl = dwfl_begin(&s->debuginfo.callbacks);
		if (!p->dwfl) {
			rv_debug("pid %" PRIu32 ": cannot start a libdwfl session: %s", p->pid,
				 dwfl_errmsg(-1));
			return;
		}
	}
	dwfl_report_begin_add(p->dwfl);
	for (size_t i = 0; i < p->nr_modules; i++) {
		struct module *mod = p->modules[i];

		if (mod->reported)
			continue;
		mod->reported = true;
		/* add_p_vaddr: the base we pass is the bias itself. */
		mod->dwmod = dwfl_report_elf(p->dwfl, mod->file->path, mod->file->path, -1,
					     mod->bias, true);
		if (!mod->dwmod)
			rv_debug("pid %" PRIu32 ": libdwfl refused '%s' at bias 0x%" PRIx64 ": %s",
				 p->pid, mod->file->path, mod->bias, dwfl_errmsg(-1));
	}
	dwfl_report_end(p->dwfl, NULL, NULL);
}

/* Brings the process's modules and Dwfl up to date with its mappings. */
static void sync_process(struct rv_symbolizer *s, struct process *p)
{
	if (!p->unresolved && !p->stale_dwfl)
		return;
	if (p->stale_dwfl) {
		/* A module's range now belongs to another file: start over,
		 * since libdwfl cannot take a module back out of a session. */
		if (p->dwfl)
			dwfl_end(p->dwfl);
		p->dwfl = NULL;
		free_modules(p);
		for (size_t i = 0; i < p->nr_maps; i++) {
			p->maps[i].resolved = false;
			p->maps[i].module = NULL;
		}
	}
	for (size_t i = 0; i < p->nr_maps; i++) {
		if (!p->maps[i].resolved)
			resolve_mapping(s, p, &p->maps[i]);
	}
	report_modules(s, p);
	p->unresolved = false;
	p->stale_dwfl = false;
}

static enum mapping_kind classify_path(const char *path)
{
	if (path[0] == '[')
		return MAP_SPECIAL; /* [vdso], [vsyscall], [uprobes], ... */
	if (!path[0] || strncmp(path, "//anon", 6) == 0 || strncmp(path, "anon_inode:", 11) == 0)
		return MAP_ANON;
	return MAP_FILE;
}

/* Index of the first mapping that ends above addr. */
static size_t first_ending_above(const struct process *p, uint64_t addr)
{
	return rv_sorted_upper(p->maps, p->nr_maps, sizeof(*p->maps), offsetof(struct mapping, end),
			       addr);
}

static struct mapping *find_mapping(struct process *p, uint64_t addr)
{
	size_t i = first_ending_above(p, addr);

	return i < p->nr_maps && p->maps[i].start <= addr ? &p->maps[i] : NULL;
}

/* Makes room for [start, end) by trimming or dropping what it overlaps. */
static void carve_out(struct process *p, uint64_t start, uint64_t end,
		      const struct mapping *incoming)
{
	size_t i = first_ending_above(p, start);

	while (i < p->nr_maps && p->maps[i].start < end) {
		struct mapping *m = &p->maps[i];
		bool same_layout = m->path == incoming->path &&
				   m->start - m->pgoff == incoming->start - incoming->pgoff;

		if (!same_layout && m->module && m->module->reported)
			p->stale_dwfl = true;
		if (m->start < start && m->end > end) {
			/* The new mapping punches a hole: keep both sides (room was reserved). */
			struct mapping tail = *m;

			tail.pgoff += end - m->start;
			tail.start = end;
			m->end = start;
			memmove(&p->maps[i + 2], &p->maps[i + 1],
				(p->nr_maps - i - 1) * sizeof(*p->maps));
			p->maps[i + 1] = tail;
			p->nr_maps++;
			return;
		}
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
			i++;
		} else {
			memmove(m, m + 1, (p->nr_maps - i - 1) * sizeof(*p->maps));
			p->nr_maps--;
		}
	}
}

int rv_symbolizer_add_mapping(struct rv_symbolizer *s, uint32_t pid, uint64_t start, uint64_t len,
			      uint64_t pgoff, bool executable, const char *path,
			      struct rv_error *err)
{
	struct mapping m = { 0 };
	struct process *p;
	size_t at;

	if (start >= KERNEL_START && pid == KERNEL_PID && s->kernel && path &&
	    rv_kernel_syms_add_mapping(s->kernel, start, len, pgoff, path))
		return rv_error_set(err, ENOMEM, "out of memory recording the kernel's mappings");
	if (!executable || !len || !path || start >= KERNEL_START)
		return 0;
	m.start = start;
	m.end = len > KERNEL_START - start ? KERNEL_START : start + len;
	m.pgoff = pgoff;
	m.path = rv_intern(&s->strings, path);
	m.basename = m.path ? rv_intern(&s->strings, path_basename(path)) : NULL;
	p = m.basename ? get_process(s, pid) : NULL;
	if (!p || rv_array_reserve(&p->maps, &p->cap_maps, p->nr_maps + 2, sizeof(*p->maps), 32))
		return rv_error_set(err, ENOMEM,
				    "out of memory recording the mappings of pid %" PRIu32, pid);
	m.kind = classify_path(path);
	at = first_ending_above(p, m.start);
	if (at < p->nr_maps && p->maps[at].start == m.start && p->maps[at].end == m.end &&
	    p->maps[at].pgoff == m.pgoff && p->maps[at].path == m.path)
		return 0; /* reported twice (synthesized, then by the kernel) */
	carve_out(p, m.start, m.end, &m);
	at = first_ending_above(p, m.start);
	memmove(&p->maps[at + 1], &p->maps[at], (p->nr_maps - at) * sizeof(*p->maps));
	p->maps[at] = m;
	p->nr_maps++;
	p->unresolved = true;
	if (p->cached || p->sourced) {
		p->generation = s->next_generation++;
		p->cached = false;
		p->sourced = false;
	}
	return 0;
}

void rv_symbolizer_forget_process(struct rv_symbolizer *s, uint32_t pid)
{
	struct process *p = find_process(s, pid);

	if (!p)
		return;
	if (s->last_pid_key == (uint64_t)pid + 1)
		s->last_pid_key = 0;
	rv_map_remove(&s->procs, pid);
	/* Its cache entries stay behind under a generation nothing will ask for. */
	free_process(p);
}

int rv_symbolizer_fork(struct rv_symbolizer *s, uint32_t parent, uint32_t child,
		       struct rv_error *err)
{
	struct process *from, *to;

	rv_symbolizer_forget_process(s, child);
	from = find_process(s, parent);
	if (!from || !from->nr_maps)
		return 0;
	to = get_process(s, child);
	if (!to || rv_array_reserve(&to->maps, &to->cap_maps, from->nr_maps, sizeof(*to->maps), 32))
		return rv_error_set(err, ENOMEM,
				    "out of memory recording the mappings of pid %" PRIu32, child);
	/* the same files at the same places; what was looked up for them is
	 * the parent's (its modules, its libdwfl session) */
	for (size_t i = 0; i < from->nr_maps; i++)
		to->maps[i] = (struct mapping){ .start = from->maps[i].start,
						.end = from->maps[i].end,
						.pgoff = from->maps[i].pgoff,
						.path = from->maps[i].path,
						.basename = from->maps[i].basename,
						.kind = from->maps[i].kind };
	to->nr_maps = from->nr_maps;
	to->unresolved = true;
	return 0;
}

Dwfl *rv_symbolizer_dwfl(struct rv_symbolizer *s, uint32_t pid)
{
	struct process *p = find_process(s, pid);

	if (!p || !p->nr_maps)
		return NULL;
	sync_process(s, p);
	return p->dwfl;
}

size_t rv_symbolizer_read_code(struct rv_symbolizer *s, uint32_t pid, uint64_t addr, void *buf,
			       size_t len)
{
	Dwfl *dwfl = rv_symbolizer_dwfl(s, pid);
	Dwfl_Module *mod;
	Elf_Scn *scn;
	Elf_Data *data;
	Dwarf_Addr offset = addr, bias;

	if (!dwfl || !(mod = dwfl_addrmodule(dwfl, addr)))
		return 0;
	scn = dwfl_module_address_section(mod, &offset, &bias);
	if (!scn || !(data = elf_getdata(scn, NULL)) || !data->d_buf || offset >= data->d_size)
		return 0;
	if (len > data->d_size - offset)
		len = data->d_size - offset;
	memcpy(buf, (const char *)data->d_buf + offset, len);
	return len;
}

/* ---- naming ---- */

static void name_raw_address(struct rv_symbolizer *s, uint64_t addr, struct rv_symbol *out)
{
	char text[32];

	snprintf(text, sizeof(text), "0x%" PRIx64, addr);
	out->name = pool(s, text);
	out->start = addr;
}

static void name_by_offset(struct rv_symbolizer *s, const char *module, uint64_t offset,
			   struct rv_symbol *out)
{
	size_t len = strlen(module) + 32;
	char *text = malloc(len);

	if (!text) {
		out->name = s->out_of_memory;
		return;
	}
	snprintf(text, len, "%s+0x%" PRIx64, module, offset);
	out->name = pool(s, text);
	free(text);
}

static int compare_jit(const void *a, const void *b)
{
	const struct jit_symbol *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* /tmp/perf-PID.map, written by JIT compilers: "START SIZE name" in hex. */
static void load_jit_map(struct rv_symbolizer *s, struct process *p)
{
	char path[64], line[4096];
	size_t cap = 0;
	FILE *f;

	p->jit_loaded = true;
	snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	p->jit_module = pool(s, path_basename(path));
	while (fgets(line, sizeof(line), f)) {
		char *end, *name;
		uint64_t start = strtoull(line, &end, 16), size;

		if (end == line || *end != ' ')
			continue;
		name = end;
		size = strtoull(name, &end, 16);
		if (end == name || *end != ' ' || !size)
			continue;
		name = end + 1;
		name[strcspn(name, "\n")] = '\0';
		if (rv_array_grow(&p->jit, &cap, p->nr_jit, sizeof(*p->jit), 256))
			break;
		p->jit[p->nr_jit].start = start;
		p->jit[p->nr_jit].size = size;
		p->jit[p->nr_jit].name = pool(s, name);
		p->nr_jit++;
	}
	fclose(f);
	qsort(p->jit, p->nr_jit, sizeof(*p->jit), compare_jit);
	rv_debug("pid %" PRIu32 ": %zu JIT symbols from %s", p->pid, p->nr_jit, path);
}

static bool name_jit(struct rv_symbolizer *s, struct process *p, uint64_t addr,
		     struct rv_symbol *out)
{
	size_t lo;

	if (!p->jit_loaded)
		load_jit_map(s, p);
	lo = rv_sorted_upper(p->jit, p->nr_jit, sizeof(*p->jit), offsetof(struct jit_symbol, start),
			     addr);
	if (!lo || addr - p->jit[lo - 1].start >= p->jit[lo - 1].size)
		return false;
	out->name = p->jit[lo - 1].name;
	out->module = p->jit_module;
	out->start = p->jit[lo - 1].start;
	out->size = p->jit[lo - 1].size;
	out->known = true;
	return true;
}

static struct rv_symtab *module_symtab(struct module *mod)
{
	struct file_info *f = mod->file;

	if (!f->symtab && mod->dwmod) {
		struct rv_symtab_source src = { .mod = mod->dwmod, .bias = mod->bias };

		if (rv_symtab_build(&f->symtab, &src))
			rv_debug("out of memory indexing the symbols of '%s'", f->path);
	}
	return f->symtab;
}

/* Code no symbol names in a stripped file, named after the FDE around it
 * (symtab.h): one name per function, "FILE!fn_HEX" with HEX its link-time
 * start. False when the file has symbols of its own (or found for it), no
 * FDE covers addr, or a symbol names part of it. */
static bool name_by_fde(struct rv_symbolizer *s, const struct mapping *m, struct module *mod,
			const struct rv_symtab *table, uint64_t addr, struct rv_symbol *out)
{
	struct file_info *f = mod->file;
	const struct rv_symtab_range *fde;
	size_t len;
	char *text;

	if (!table || !mod->dwmod)
		return false;
	if (!f->fdes_read) {
		/* Only where the file's only names are those it exports. */
		f->fdes_read = true;
		if (rv_symtab_module_stripped(mod->dwmod) &&
		    !rv_symtab_file_open(&f->cfi_file, f->path, NULL) &&
		    rv_symtab_fdes_open(&f->fdes, f->cfi_file.elf))
			rv_debug("out of memory reading where the functions of '%s' are", f->path);
	}
	fde = rv_symtab_fde_find(&f->fdes, addr - mod->bias);
	if (!fde || rv_symtab_names_any(table, fde->start, fde->end))
		return false;
	len = strlen(m->basename) + 32;
	text = malloc(len);
	if (!text)
		return false;
	snprintf(text, len, "%s!fn_%" PRIx64, m->basename, fde->start);
	out->name = pool(s, text);
	free(text);
	out->start = fde->start + mod->bias;
	out->size = fde->end - fde->start;
	out->known = true;
	return true;
}

/* dwfl_module_getsrc finds the compile unit through .debug_aranges, which
 * clang does not emit; elfutils 0.188 then fails on DWARF 5 units ("address
 * out of range"). This walks the units' own address ranges instead. */
static const char *source_line_by_unit_ranges(Dwfl_Module *dwmod, uint64_t addr, int *lineno,
					      int *column)
{
	Dwarf_Addr bias;
	Dwarf *dwarf = dwfl_module_getdwarf(dwmod, &bias);
	Dwarf_Off offset = 0, next;
	size_t header_size;

	if (!dwarf)
		return NULL;
	addr -= bias;
	while (dwarf_nextcu(dwarf, offset, &next, &header_size, NULL, NULL, NULL) == 0) {
		Dwarf_Die unit;
		Dwarf_Addr base, start, end;
		ptrdiff_t range = 0;

		if (dwarf_offdie(dwarf, offset + header_size, &unit)) {
			while ((range = dwarf_ranges(&unit, range, &base, &start, &end)) > 0) {
				Dwarf_Line *line;

				if (addr < start || addr >= end)
					continue;
				line = dwarf_getsrc_die(&unit, addr);
				if (!line || dwarf_lineno(line, lineno))
					return NULL;
				if (dwarf_linecol(line, column))
					*column = 0;
				return dwarf_linesrc(line, NULL, NULL);
			}
		}
		offset = next;
	}
	return NULL;
}

/* The line table's row for addr in dwmod: its file (libdw's string, valid
 * while the module is), line and column (0 when not recorded); NULL when
 * DWARF does not cover addr. */
static const char *source_line(Dwfl_Module *dwmod, uint64_t addr, int *lineno, int *column)
{
	Dwfl_Line *line = dwfl_module_getsrc(dwmod, addr);

	*lineno = 0;
	*column = 0;
	if (line)
		return dwfl_lineinfo(line, NULL, lineno, column, NULL, NULL);
	return source_line_by_unit_ranges(dwmod, addr, lineno, column);
}

static void add_source_line(struct rv_symbolizer *s, Dwfl_Module *dwmod, uint64_t addr,
			    struct rv_symbol *out)
{
	int lineno, column;
	const char *file = source_line(dwmod, addr, &lineno, &column);

	if (!file)
		return;
	out->file = rv_intern(&s->strings, file);
	out->line = out->file ? lineno : 0;
}

static void resolve_user(struct rv_symbolizer *s, struct process *p, uint64_t addr,
			 struct rv_symbol *out)
{
	struct rv_symtab_entry *entry = NULL;
	struct rv_symtab *table = NULL;
	struct mapping *m;
	struct module *mod;

	if (!p)
		return name_raw_address(s, addr, out);
	sync_process(s, p);
	m = find_mapping(p, addr);
	if (!m || m->kind == MAP_ANON) {
		if (!name_jit(s, p, addr, out))
			name_raw_address(s, addr, out);
		return;
	}
	out->module = m->basename;
	mod = m->module;
	if (mod)
		table = module_symtab(mod);
	if (table)
		entry = rv_symtab_find(table, addr - mod->bias);
	if (entry) {
		out->name = rv_symtab_display_name(table, entry, &s->strings);
		if (!out->name)
			out->name = s->out_of_memory;
		out->start = entry->addr + mod->bias;
		out->size = entry->size;
		out->known = true;
	} else if (!mod || !name_by_fde(s, m, mod, table, addr, out)) {
		name_by_offset(s, m->basename, addr - m->start + m->pgoff, out);
	}
	if (s->want_lines && mod && mod->dwmod)
		add_source_line(s, mod->dwmod, addr, out);
}

static void resolve_kernel(struct rv_symbolizer *s, uint64_t addr, struct rv_symbol *out)
{
	struct rv_kernel_sym sym;

	out->kernel = true;
	out->module = s->kernel_module;
	for (size_t i = s->nr_kextra; i-- > 0;) {
		const struct kernel_extra *x = &s->kextra[i];

		if (addr - x->addr < x->size) {
			out->name = x->name;
			out->start = x->addr;
			out->size = x->size;
			out->known = true;
			return;
		}
	}
	if (!s->kernel || !rv_kernel_syms_find(s->kernel, addr, &sym))
		return name_raw_address(s, addr, out);
	s->stats.kernel_symbols = rv_kernel_syms_count(s->kernel);
	out->name = pool(s, sym.name);
	out->module = pool(s, sym.module);
	out->start = sym.start;
	out->size = sym.size;
	out->known = true;
}

/* ---- the cache ---- */

/* The first slot to probe for (generation, addr) in a table of cap slots
 * (a power of two, at least 2): Fibonacci hashing, one multiply that
 * spreads the low bits telling code addresses apart over the top bits,
 * which pick the slot (splitmix64's finisher put a chain of two multiplies
 * and three shifts in front of every probe). */
static size_t cache_slot(uint64_t generation, uint64_t addr, size_t cap)
{
	uint64_t x = addr ^ (generation * 0x9e3779b97f4a7c15ull);

	return (size_t)((x * 0xbf58476d1ce4e5b9ull) >> (64 - __builtin_ctzll(cap)));
}

/* The slot of (generation, addr) in a table of `cap` entries (a power of
 * two, at least 2) of `size` bytes, each beginning with its struct cache_key:
 * the entry's own, or the free slot where it would go. */
static size_t cache_probe(const void *table, size_t size, size_t cap, uint64_t generation,
			  uint64_t addr)
{
	size_t at;

	for (at = cache_slot(generation, addr, cap);; at = (at + 1) & (cap - 1)) {
		const struct cache_key *k = (const void *)((const char *)table + at * size);

		if (!k->generation || (k->addr == addr && k->generation == generation))
			return at;
	}
}

/* The entries of `table` (`cap` of `size` bytes, cap 0 or a power of two)
 * in a new table of `new_cap`; NULL when out of memory (table unchanged). */
static void *cache_rehash(const void *table, size_t size, size_t cap, size_t new_cap)
{
	char *fresh = calloc(new_cap, size);

	if (!fresh)
		return NULL;
	for (size_t i = 0; i < cap; i++) {
		const struct cache_key *k = (const void *)((const char *)table + i * size);

		if (k->generation)
			memcpy(fresh + cache_probe(fresh, size, new_cap, k->generation, k->addr) *
					       size,
			       k, size);
	}
	return fresh;
}

static void cache_clear(struct rv_symbolizer *s)
{
	memset(s->cache, 0, s->cap_cache * sizeof(*s->cache));
	s->nr_cache = 0;
	s->last = &no_entry;
	for (size_t i = 0; i < s->procs.cap; i++) {
		struct process *p = s->procs.slots[i].value;

		if (p)
			p->cached = false;
	}
}

static bool cache_make_room(struct rv_symbolizer *s)
{
	struct cache_entry *fresh;
	size_t cap;

	if ((s->nr_cache + 1) * 2 <= s->cap_cache)
		return true;
	if (s->cap_cache >= CACHE_MAX_SLOTS) {
		cache_clear(s);
		return true;
	}
	cap = s->cap_cache ? s->cap_cache * 2 : CACHE_MIN_SLOTS;
	fresh = cache_rehash(s->cache, sizeof(*fresh), s->cap_cache, cap);
	if (!fresh) {
		if (s->cap_cache)
			cache_clear(s);
		return s->cap_cache != 0;
	}
	free(s->cache);
	s->cache = fresh;
	s->cap_cache = cap;
	s->last = &no_entry;
	return true;
}

/* The answer for (generation, addr), added to the cache; where it is
 * kept (the cache, or `uncached` when it has no room). */
static const struct rv_symbol *cache_insert(struct rv_symbolizer *s, uint64_t generation,
					    uint64_t addr, const struct rv_symbol *sym)
{
	size_t at;

	if (!cache_make_room(s)) {
		s->uncached = *sym;
		return &s->uncached;
	}
	at = cache_probe(s->cache, sizeof(*s->cache), s->cap_cache, generation, addr);
	s->cache[at] = (struct cache_entry){
		.key = { .addr = addr, .generation = generation },
		.sym = *sym,
	};
	s->nr_cache++;
	s->last = &s->cache[at];
	return &s->cache[at].sym;
}

/* rv_symbolizer_find when the cache does not have the answer. */
static __attribute__((noinline)) const struct rv_symbol *
lookup_uncached(struct rv_symbolizer *s, struct process *p, uint64_t generation, uint64_t addr)
{
	struct rv_symbol sym = {
		.module = s->empty,
		.start = addr,
	};
	const struct rv_symbol *found;

	if (generation == GENERATION_KERNEL)
		resolve_kernel(s, addr, &sym);
	else
		resolve_user(s, p, addr, &sym);
	found = cache_insert(s, generation, addr, &sym);
	/* After the insert: making room may empty the cache, which marks every
	 * process uncached; this answer is cached under p's generation, so a
	 * mapping change must move it. */
	if (p)
		p->cached = true;
	return found;
}

/* The answer for (generation, addr): the last one's, the cache's, or
 * found now. Its calls are all tail calls, so that a hit saves no
 * registers. */
static inline const struct rv_symbol *find_by_generation(struct rv_symbolizer *s, struct process *p,
							 uint64_t generation, uint64_t addr)
{
	const struct cache_entry *hit = s->last;

	s->stats.lookups++;
	if (hit->key.addr != addr || hit->key.generation != generation) {
		if (!s->cap_cache)
			return lookup_uncached(s, p, generation, addr);
		hit = &s->cache[cache_probe(s->cache, sizeof(*hit), s->cap_cache, generation,
					    addr)];
		if (!hit->key.generation)
			return lookup_uncached(s, p, generation, addr);
		s->last = hit;
	}
	s->stats.cache_hits++;
	return &hit->sym;
}

/* rv_symbolizer_find for a user address in another process than the last
 * lookup's. */
static __attribute__((noinline)) const struct rv_symbol *
find_in_other_process(struct rv_symbolizer *s, uint32_t pid, uint64_t addr)
{
	struct process *p = find_other_process(s, pid);

	return find_by_generation(s, p, p ? p->generation : GENERATION_NO_PROCESS, addr);
}

const struct rv_symbol *rv_symbolizer_find(struct rv_symbolizer *s, uint32_t pid, uint64_t addr)
{
	struct process *p;

	if (addr >= KERNEL_START)
		return find_by_generation(s, NULL, GENERATION_KERNEL, addr);
	if (s->last_pid_key != (uint64_t)pid + 1)
		return find_in_other_process(s, pid, addr);
	p = s->last_proc;
	return find_by_generation(s, p, p ? p->generation : GENERATION_NO_PROCESS, addr);
}

/* ---- source lines of functions ---- */

/* Like the cache, at most CACHE_MAX_SLOTS, then it starts again empty. */
static bool sources_make_room(struct rv_symbolizer *s)
{
	struct source_entry *fresh;
	size_t cap;

	if ((s->nr_sources + 1) * 2 <= s->cap_sources)
		return true;
	if (s->cap_sources >= CACHE_MAX_SLOTS) {
		memset(s->sources, 0, s->cap_sources * sizeof(*s->sources));
		s->nr_sources = 0;
		s->last_source.key.generation = GENERATION_EMPTY;
		return true;
	}
	cap = s->cap_sources ? s->cap_sources * 2 : CACHE_MIN_SLOTS;
	fresh = cache_rehash(s->sources, sizeof(*fresh), s->cap_sources, cap);
	if (!fresh)
		return false;
	free(s->sources);
	s->sources = fresh;
	s->cap_sources = cap;
	return true;
}

static void resolve_source(struct rv_symbolizer *s, struct process *p, uint64_t addr,
			   struct rv_source *out)
{
	const char *file;
	struct mapping *m;
	int line, column;

	sync_process(s, p);
	m = find_mapping(p, addr);
	if (!m || m->kind != MAP_FILE || !m->module || !m->module->dwmod)
		return;
	file = source_line(m->module->dwmod, addr, &line, &column);
	if (!file || !*file)
		return;
	out->file = pool(s, file);
	out->line = line;
	out->column = column;
}

/* rv_symbolizer_source when the answer is not the last one's. */
static __attribute__((noinline)) bool source_slow(struct rv_symbolizer *s, uint32_t pid,
						  uint64_t addr, struct rv_source *out)
{
	struct process *p;
	size_t at;

	*out = (struct rv_source){ 0 };
	if (addr >= KERNEL_START || !(p = find_process(s, pid)) || !p->nr_maps)
		return false;
	if (s->last_source.key.generation == p->generation && s->last_source.key.addr == addr) {
		const struct source_entry *e = &s->last_source;

		*out = (struct rv_source){ e->file, e->line, e->column };
		return out->file != NULL;
	}
	if (s->cap_sources) {
		const struct source_entry *e = &s->sources[cache_probe(
			s->sources, sizeof(*e), s->cap_sources, p->generation, addr)];

		if (e->key.generation) {
			s->last_source = *e;
			*out = (struct rv_source){ e->file, e->line, e->column };
			return out->file != NULL;
		}
	}
	resolve_source(s, p, addr, out);
	if (sources_make_room(s)) {
		at = cache_probe(s->sources, sizeof(*s->sources), s->cap_sources, p->generation,
				 addr);
		s->sources[at] = (struct source_entry){
			{ addr, p->generation }, out->file, out->line, out->column
		};
		s->nr_sources++;
		p->sourced = true;
	}
	return out->file != NULL;
}

bool rv_symbolizer_source(struct rv_symbolizer *s, uint32_t pid, uint64_t addr,
			  struct rv_source *out)
{
	const struct source_entry *e = &s->last_source;
	const struct process *p = s->last_proc;

	/* the last answer's process and address (a user address: only
	 * those, of processes with mappings, get an entry; see source_slow) */
	if (s->last_pid_key == (uint64_t)pid + 1 && p && e->key.generation == p->generation &&
	    e->key.addr == addr) {
		*out = (struct rv_source){ e->file, e->line, e->column };
		return out->file != NULL;
	}
	return source_slow(s, pid, addr, out);
}

/* ---- life cycle ---- */

int rv_symbolizer_new(struct rv_symbolizer **out, const struct rv_symbolizer_options *options,
		      struct rv_error *err)
{
	struct rv_symbolizer *s = calloc(1, sizeof(*s));
	int ret;

	*out = NULL;
	if (!s)
		return rv_error_set(err, ENOMEM, "out of memory creating the symbolizer");
	rv_intern_init(&s->strings);
	s->last = &no_entry;
	s->next_generation = GENERATION_FIRST_PROCESS;
	s->want_lines = options && options->want_lines;
	s->empty = rv_intern(&s->strings, "");
	s->kernel_module = rv_intern(&s->strings, "[kernel.kallsyms]");
	s->out_of_memory = rv_intern(&s->strings, "[out of memory]");
	if (!s->empty || !s->kernel_module || !s->out_of_memory ||
	    rv_debuginfo_init(&s->debuginfo)) {
		rv_symbolizer_free(s);
		return rv_error_set(err, ENOMEM, "out of memory creating the symbolizer");
	}
	elf_version(EV_CURRENT);
	if (options &&
	    (options->kernel || options->kallsyms_path || options->vmlinux || options->modules)) {
		struct rv_kernel_syms_options ko = {
			.vmlinux = options->vmlinux,
			.kallsyms = options->kallsyms_path,
			.modules = options->modules,
			.modules_dir = options->modules_dir,
		};

		ret = rv_kernel_syms_new(&s->kernel, &ko, err);
		if (ret) {
			rv_symbolizer_free(s);
			return ret;
		}
		s->stats.kernel_symbols = rv_kernel_syms_count(s->kernel);
	}
	*out = s;
	return 0;
}

void rv_symbolizer_stats(const struct rv_symbolizer *s, struct rv_symbolizer_stats *out)
{
	*out = s->stats;
}

const char *rv_symbolizer_kernel_problems(struct rv_symbolizer *s)
{
	return s->kernel ? rv_kernel_syms_problems(s->kernel) : NULL;
}

int rv_symbolizer_add_kernel_symbol(struct rv_symbolizer *s, uint64_t addr, uint64_t size,
				    const char *name, struct rv_error *err)
{
	const char *pooled = rv_intern(&s->strings, name);

	if (!pooled ||
	    rv_array_grow(&s->kextra, &s->cap_kextra, s->nr_kextra, sizeof(*s->kextra), 8))
		return rv_error_set(err, ENOMEM, "out of memory for kernel symbols");
	s->kextra[s->nr_kextra++] = (struct kernel_extra){ addr, size, pooled };
	return 0;
}

void rv_symbolizer_free(struct rv_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->procs.cap; i++) {
		if (s->procs.slots[i].value)
			free_process(s->procs.slots[i].value);
	}
	rv_map_destroy(&s->procs);
	for (size_t i = 0; i < s->files.cap; i++) {
		struct file_info *f = s->files.slots[i].value;

		if (!f)
			continue;
		rv_symtab_free(f->symtab);
		rv_symtab_fdes_close(&f->fdes);
		rv_symtab_file_close(&f->cfi_file);
		free(f->loads);
		free(f);
	}
	rv_map_destroy(&s->files);
	free(s->cache);
	free(s->sources);
	rv_kernel_syms_free(s->kernel);
	free(s->kextra);
	rv_debuginfo_destroy(&s->debuginfo);
	rv_intern_destroy(&s->strings);
	free(s);
}
