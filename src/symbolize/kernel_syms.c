/* kernel_syms.c: kernel names from modules' .ko files, vmlinux and kallsyms;
 * see kernel_syms.h.
 *
 * vmlinux goes through symtab.h's index (the rules every reader of function
 * symbols applies), looked up at the address less the KASLR offset. A
 * module's .ko is relocatable: its symbols are offsets into their sections,
 * so they are placed here, section by section, into one sorted table per
 * module. libdwfl opens the .ko files (dwfl_report_offline), because it
 * reads compressed ones too.
 */
#define RV_LOG_DOMAIN "symbolize"

#include "symbolize/kernel_syms.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symtab.h"
#include "util/array.h"
#include "util/intern.h"
#include "util/log.h"

#define KERNEL_NAME "[kernel.kallsyms]"
/* /sys/kernel/notes is a few hundred bytes. */

struct module_sym {
	uint64_t addr, size;
	const char *name; /* pooled */
	uint8_t bind;
};

struct module {
	char *name;	   /* normalized: '-' as '_' */
	const char *label; /* pooled "[name]" */
	char *path;	   /* the MMAP's, or NULL */
	bool read;	   /* its .ko was looked for (on the first lookup in it) */
	uint64_t start, end;
	struct module_sym *syms; /* sorted by addr, aliases merged */
	size_t nr_syms;
};

struct ko_file {
	char *name; /* normalized */
	char *path;
};

struct ko_index;

struct rv_kernel_syms {
	struct rv_kernel_syms_options o; /* strings owned */
	struct rv_intern pool;
	const char *kernel_label;

	struct rv_kallsyms kallsyms;
	bool have_kallsyms;

	char *ref_sym; /* perf's kernel MMAP: ref_sym is at ref_addr */
	uint64_t ref_addr;

	struct module *modules; /* by start, once loaded */
	size_t nr_modules, cap_modules;

	bool loaded;
	struct rv_symtab *vmlinux; /* at link-time addresses */
	uint64_t shift;		   /* KASLR: run-time minus link-time */
	uint64_t vm_start, vm_end; /* its code, at run-time addresses */
	size_t count;

	/* for the modules' .ko files, read as lookups reach them */
	struct ko_index *ko_files;
	struct rv_debuginfo debuginfo;
	bool have_debuginfo;

	/* what was left out, for the user */
	char problems[1024];	   /* at load */
	char report[1536];	   /* problems and the modules' */
	size_t modules_not_found;  /* no .ko */
	size_t modules_unreadable; /* a .ko elfutils could not read */
	const char *first_not_found, *first_unreadable;
	bool zstd; /* one of them is zstd-compressed */
};

/* Appends a sentence to what the user is told was left out. */
__attribute__((format(printf, 2, 3))) static void note_problem(struct rv_kernel_syms *ks,
							       const char *fmt, ...)
{
	size_t len = strlen(ks->problems);
	va_list ap;

	if (len)
		len += (size_t)snprintf(ks->problems + len, sizeof(ks->problems) - len, "; ");
	if (len >= sizeof(ks->problems))
		return;
	va_start(ap, fmt);
	vsnprintf(ks->problems + len, sizeof(ks->problems) - len, fmt, ap);
	va_end(ap);
}

/* ---- module names and files ---- */

/* NAME from "/path/NAME.ko[.xz]", "[NAME]" or "NAME", '-' as '_'; NULL
 * when memory is short. */
static char *module_name(const char *s)
{
	const char *base = strrchr(s, '/');
	size_t len;
	char *name;

	base = base ? base + 1 : s;
	if (*base == '[')
		base++;
	len = strcspn(base, ".]");
	name = strndup(base, len);
	for (char *p = name; p && *p; p++)
		if (*p == '-')
			*p = '_';
	return name;
}

static struct module *find_module_named(struct rv_kernel_syms *ks, const char *name)
{
	for (size_t i = 0; i < ks->nr_modules; i++)
		if (!strcmp(ks->modules[i].name, name))
			return &ks->modules[i];
	return NULL;
}

/* The module called `display` at [start, start + len); path: its .ko, or
 * NULL. A module already known keeps what it had and gains a path. */
static int add_module(struct rv_kernel_syms *ks, const char *display, const char *path,
		      uint64_t start, uint64_t len)
{
	char *name = module_name(display);
	struct module *m;

	if (!name)
		return -ENOMEM;
	if (!*name || !len || start + len < start) {
		free(name);
		return 0;
	}
	m = find_module_named(ks, name);
	if (m) {
		free(name);
		if (path && !m->path && !(m->path = strdup(path)))
			return -ENOMEM;
		return 0;
	}
	if (rv_array_grow(&ks->modules, &ks->cap_modules, ks->nr_modules, sizeof(*ks->modules),
			  16)) {
		free(name);
		return -ENOMEM;
	}
	m = &ks->modules[ks->nr_modules];
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->start = start;
	m->end = start + len;
	if (path && !(m->path = strdup(path))) {
		free(name);
		return -ENOMEM;
	}
	ks->nr_modules++;
	return 0;
}

/* /proc/modules: "name size refcount deps state 0xaddress [taints]". */
static int read_modules_list(struct rv_kernel_syms *ks, const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int ret = 0;

	if (!f) {
		rv_debug("cannot read the module list '%s': %s", path, strerror(errno));
		return 0;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		char name[256];
		unsigned long long size, addr;

		if (sscanf(line, "%255s %llu %*s %*s %*s %llx", name, &size, &addr) == 3 && addr)
			ret = add_module(ks, name, NULL, addr, size);
	}
	fclose(f);
	return ret;
}

struct ko_index {
	struct ko_file *v;
	size_t nr, cap;
	bool searched;
};

/* Every NAME.ko[.EXT] under dir, walked once (fts: no callback, no global
 * state). */
static void index_ko_files(struct ko_index *x, const char *dir)
{
	char *const roots[] = { (char *)dir, NULL };
	FTS *fts = fts_open(roots, FTS_PHYSICAL | FTS_NOSTAT, NULL);
	FTSENT *e;

	x->searched = true;
	if (!fts) {
		rv_debug("cannot search '%s' for kernel modules: %s", dir, strerror(errno));
		return;
	}
	while ((e = fts_read(fts))) {
		const char *ko = strstr(e->fts_name, ".ko");

		if ((e->fts_info != FTS_F && e->fts_info != FTS_NSOK) || !ko ||
		    (ko[3] && ko[3] != '.'))
			continue;
		if (rv_array_grow(&x->v, &x->cap, x->nr, sizeof(*x->v), 256))
			break;
		x->v[x->nr].name = module_name(e->fts_name);
		x->v[x->nr].path = strdup(e->fts_path);
		if (!x->v[x->nr].name || !x->v[x->nr].path) {
			free(x->v[x->nr].name);
			free(x->v[x->nr].path);
			break;
		}
		x->nr++;
	}
	fts_close(fts);
}

static void ko_index_destroy(struct ko_index *x)
{
	for (size_t i = 0; i < x->nr; i++) {
		free(x->v[i].name);
		free(x->v[i].path);
	}
	free(x->v);
}

/* ---- a module's symbols ---- */

struct module_layout {
	struct module *m;
	struct rv_intern *pool;
	uint64_t *section_addr; /* by section index; 0: not laid out */
	uint64_t *section_end;
	size_t nr_sections;
	size_t cap;
	bool nomem;
};

/* Where the module loader puts each section of code: the allocated
 * executable sections but .init ones, in file order, each aligned, from the
 * module's base (its MOD_TEXT memory, or before 6.4 its core layout, which
 * begins with them). */
static bool lay_out(Elf *elf, struct module_layout *l)
{
	size_t shstrndx, n;
	uint64_t offset = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) || elf_getshdrnum(elf, &n))
		return false;
	l->section_addr = calloc(n ? n : 1, sizeof(*l->section_addr));
	l->section_end = calloc(n ? n : 1, sizeof(*l->section_end));
	if (!l->section_addr || !l->section_end)
		return false;
	l->nr_sections = n;
	for (size_t i = 1; i < n; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		const char *name;
		uint64_t align;

		if (!scn || !gelf_getshdr(scn, &sh) ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || !strncmp(name, ".init", 5))
			continue;
		align = sh.sh_addralign ? sh.sh_addralign : 1;
		if (align & (align - 1))
			continue; /* not a power of two: not a file the loader takes */
		offset = (offset + align - 1) & ~(align - 1);
		l->section_addr[i] = l->m->start + offset;
		l->section_end[i] = l->m->start + offset + sh.sh_size;
		offset += sh.sh_size;
	}
	return true;
}

static int add_module_sym(void *ctx, const struct rv_symtab_symbol *s)
{
	struct module_layout *l = ctx;
	struct module *m = l->m;
	uint64_t addr;

	if (s->place != RV_SYMTAB_CODE || s->section >= l->nr_sections ||
	    !l->section_addr[s->section])
		return 0;
	addr = l->section_addr[s->section] + s->addr;
	if (addr >= l->section_end[s->section] || addr >= m->end)
		return 0;
	if (rv_array_grow(&m->syms, &l->cap, m->nr_syms, sizeof(*m->syms), 256)) {
		l->nomem = true;
		return 1;
	}
	m->syms[m->nr_syms] = (struct module_sym){
		.addr = addr,
		.size = s->size ? s->size : l->section_end[s->section] - addr,
		.name = rv_intern(l->pool, s->name),
		.bind = s->bind,
	};
	if (!m->syms[m->nr_syms].name) {
		l->nomem = true;
		return 1;
	}
	m->nr_syms++;
	return 0;
}

/* Address order; among aliases, a sized function, then a global one. */
static int compare_module_syms(const void *a, const void *b)
{
	const struct module_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->bind == STB_GLOBAL) != (y->bind == STB_GLOBAL))
		return x->bind == STB_GLOBAL ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Aliases merged; an unsized symbol (its size: to its section's end) ends
 * where the next one begins. */
static void finish_module_syms(struct module *m)
{
	size_t kept = 0;

	if (!m->nr_syms)
		return;
	qsort(m->syms, m->nr_syms, sizeof(*m->syms), compare_module_syms);
	for (size_t i = 0; i < m->nr_syms; i++) {
		if (kept && m->syms[kept - 1].addr == m->syms[i].addr)
			continue;
		m->syms[kept++] = m->syms[i];
	}
	m->nr_syms = kept;
	for (size_t i = 0; i + 1 < m->nr_syms; i++)
		if (m->syms[i].addr + m->syms[i].size > m->syms[i + 1].addr)
			m->syms[i].size = m->syms[i + 1].addr - m->syms[i].addr;
}

static const char *ko_path(struct rv_kernel_syms *ks, struct module *m)
{
	struct ko_index *x;

	if (m->path && m->path[0] == '/' && access(m->path, R_OK) == 0)
		return m->path;
	if (!ks->o.modules_dir)
		return NULL;
	if (!ks->ko_files) {
		ks->ko_files = calloc(1, sizeof(*ks->ko_files));
		if (!ks->ko_files)
			return NULL;
		index_ko_files(ks->ko_files, ks->o.modules_dir);
	}
	x = ks->ko_files;
	for (size_t i = 0; i < x->nr; i++)
		if (!strcmp(x->v[i].name, m->name))
			return x->v[i].path;
	return NULL;
}

/* Reads m's symbols from its .ko, once. */
static void load_module(struct rv_kernel_syms *ks, struct module *m)
{
	const char *path;
	struct module_layout l = { .m = m, .pool = &ks->pool };
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;
	GElf_Addr bias;

	m->read = true;
	path = ko_path(ks, m);
	if (!path) {
		rv_debug("module %s: no %s.ko%s%s; its names come from kallsyms", m->name, m->name,
			 ks->o.modules_dir ? " under " : "",
			 ks->o.modules_dir ? ks->o.modules_dir : "");
		if (!ks->modules_not_found++)
			ks->first_not_found = m->name;
		return;
	}
	if (!ks->have_debuginfo && rv_debuginfo_init(&ks->debuginfo))
		return;
	ks->have_debuginfo = true;
	dwfl = dwfl_begin(&ks->debuginfo.callbacks);
	if (!dwfl)
		return;
	dwfl_report_begin(dwfl);
	mod = dwfl_report_offline(dwfl, m->name, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	if (!elf) {
		size_t len = strlen(path);

		rv_debug("module %s: cannot read '%s': %s", m->name, path, dwfl_errmsg(-1));
		if (!ks->modules_unreadable++)
			ks->first_unreadable = m->name;
		ks->zstd |= len > 4 && !strcmp(path + len - 4, ".zst");
	} else if (lay_out(elf, &l)) {
		struct rv_symtab_source src = { .elf = elf };

		rv_symtab_read(&src, RV_SYMTAB_NAMING, add_module_sym, &l);
		if (l.nomem)
			rv_debug("module %s: out of memory reading its symbols", m->name);
		finish_module_syms(m);
		ks->count += m->nr_syms;
		rv_debug("module %s: %zu symbols from %s", m->name, m->nr_syms, path);
	}
	free(l.section_addr);
	free(l.section_end);
	dwfl_end(dwfl);
}

static int compare_modules(const void *a, const void *b)
{
	const struct module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- vmlinux ---- */

struct ref_search {
	const char *name;
	uint64_t addr;
	bool found;
};

static int find_ref(void *ctx, const struct rv_symtab_symbol *s)
{
	struct ref_search *r = ctx;

	if (strcmp(s->name, r->name))
		return 0;
	r->addr = s->addr;
	r->found = true;
	return 1;
}

/* The address of text symbol name in a kallsyms file. */
static bool kallsyms_address(const char *path, const char *name, uint64_t *addr)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[512];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && a &&
		    (type == 'T' || type == 't') && !strcmp(sym, name)) {
			*addr = a;
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The KASLR offset: a reference symbol's run-time address less vmlinux's. */
static bool kaslr_shift(struct rv_kernel_syms *ks, const struct rv_symtab_source *src)
{
	static const char *const refs[] = { "_stext", "_text" };

	for (size_t i = 0; i < 2; i++) {
		struct ref_search r = { .name = refs[i] };
		uint64_t runtime;

		if (kallsyms_address(ks->o.kallsyms, refs[i], &runtime) &&
		    rv_symtab_read(src, RV_SYMTAB_NAMING, find_ref, &r) && r.found) {
			ks->shift = runtime - r.addr;
			return true;
		}
	}
	if (ks->ref_sym && ks->ref_addr) {
		struct ref_search r = { .name = ks->ref_sym };

		if (rv_symtab_read(src, RV_SYMTAB_NAMING, find_ref, &r) && r.found) {
			ks->shift = ks->ref_addr - r.addr;
			return true;
		}
	}
	return false;
}

static void load_vmlinux(struct rv_kernel_syms *ks)
{
	struct rv_symtab_file f;
	struct rv_error err = { 0 };
	struct rv_symtab_source src;
	size_t n;

	if (rv_symtab_file_open(&f, ks->o.vmlinux, &err)) {
		note_problem(ks, "--vmlinux names nothing: %s", err.message);
		return;
	}
	src = (struct rv_symtab_source){ .elf = f.elf };
	if (!kaslr_shift(ks, &src)) {
		note_problem(ks,
			     "--vmlinux names nothing: neither kallsyms nor perf's kernel map says "
			     "where the kernel's _stext or _text ran, or '%s' lacks both",
			     ks->o.vmlinux);
		rv_symtab_file_close(&f);
		return;
	}
	ks->vm_start = UINT64_MAX;
	for (size_t i = 1; !elf_getshdrnum(f.elf, &n) && i < n; i++) {
		Elf_Scn *scn = elf_getscn(f.elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh) ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR))
			continue;
		if (sh.sh_addr + ks->shift < ks->vm_start)
			ks->vm_start = sh.sh_addr + ks->shift;
		if (sh.sh_addr + sh.sh_size + ks->shift > ks->vm_end)
			ks->vm_end = sh.sh_addr + sh.sh_size + ks->shift;
	}
	if (ks->vm_start < ks->vm_end && !rv_symtab_build(&ks->vmlinux, &src)) {
		ks->count += ks->vmlinux->nr;
		rv_debug("%zu kernel symbols from %s, moved by %#" PRIx64, ks->vmlinux->nr,
			 ks->o.vmlinux, ks->shift);
	}
	rv_symtab_file_close(&f);
}

/* ---- the table ---- */

/* Reads what is read whole: vmlinux and the module list (the modules'
 * .ko files are read as lookups reach them). */
static void load(struct rv_kernel_syms *ks)
{
	ks->loaded = true;
	if (ks->o.vmlinux)
		load_vmlinux(ks);
	if (ks->o.modules && read_modules_list(ks, ks->o.modules))
		rv_debug("out of memory reading the module list");
	if (ks->nr_modules)
		qsort(ks->modules, ks->nr_modules, sizeof(*ks->modules), compare_modules);
	if (!ks->have_kallsyms && !ks->o.vmlinux)
		note_problem(ks, "no kallsyms (kcore_dir/kallsyms) and no --vmlinux: the kernel's "
				 "own code is named by its addresses; give the recorded kernel's "
				 "vmlinux with --vmlinux");
}

const char *rv_kernel_syms_problems(struct rv_kernel_syms *ks)
{
	size_t len;

	if (!ks->loaded)
		return NULL;
	len = (size_t)snprintf(ks->report, sizeof(ks->report), "%s", ks->problems);
	if (ks->modules_not_found && len < sizeof(ks->report))
		len += (size_t)snprintf(
			ks->report + len, sizeof(ks->report) - len,
			"%s%zu module%s (%s%s) with no .ko file here (at the path the capture "
			"gives%s%s), named %s",
			len ? "; " : "", ks->modules_not_found,
			ks->modules_not_found == 1 ? "" : "s", ks->first_not_found,
			ks->modules_not_found > 1 ? ", ..." : "",
			ks->o.modules_dir ? " or under " : "",
			ks->o.modules_dir ? ks->o.modules_dir : "",
			ks->have_kallsyms ? "from kallsyms" : "by address");
	if (ks->modules_unreadable && len < sizeof(ks->report))
		snprintf(ks->report + len, sizeof(ks->report) - len,
			 "%s%zu module%s (%s%s) whose .ko file elfutils cannot read%s",
			 len ? "; " : "", ks->modules_unreadable,
			 ks->modules_unreadable == 1 ? "" : "s", ks->first_unreadable,
			 ks->modules_unreadable > 1 ? ", ..." : "",
			 ks->zstd ? " (this elfutils reads gzip, xz and bzip2, not zstd: "
				    "decompress them with unzstd)"
				  : "");
	return ks->report[0] ? ks->report : NULL;
}

static bool find_in_module(struct rv_kernel_syms *ks, uint64_t addr, struct rv_kernel_sym *out)
{
	size_t lo = 0, hi = ks->nr_modules;
	struct module *m;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->modules[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= ks->modules[lo - 1].end)
		return false;
	m = &ks->modules[lo - 1];
	if (!m->read)
		load_module(ks, m);
	lo = 0;
	hi = m->nr_syms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - m->syms[lo - 1].addr >= m->syms[lo - 1].size)
		return false;
	if (!m->label) {
		size_t len = strlen(m->name) + 3;
		char *label = malloc(len);

		if (label) {
			snprintf(label, len, "[%s]", m->name);
			m->label = rv_intern(&ks->pool, label);
			free(label);
		}
	}
	out->name = m->syms[lo - 1].name;
	out->module = m->label ? m->label : ks->kernel_label;
	out->start = m->syms[lo - 1].addr;
	out->size = m->syms[lo - 1].size;
	return true;
}

bool rv_kernel_syms_find(struct rv_kernel_syms *ks, uint64_t addr, struct rv_kernel_sym *out)
{
	struct rv_symtab_entry *e;
	struct rv_ksym *k;

	if (!ks->loaded)
		load(ks);
	if (find_in_module(ks, addr, out))
		return true;
	if (ks->vmlinux && addr >= ks->vm_start && addr < ks->vm_end &&
	    (e = rv_symtab_find(ks->vmlinux, addr - ks->shift))) {
		out->name = rv_symtab_display_name(ks->vmlinux, e, &ks->pool);
		if (out->name) {
			out->module = ks->kernel_label;
			out->start = e->addr + ks->shift;
			out->size = e->span;
			return true;
		}
	}
	k = ks->have_kallsyms ? rv_kallsyms_find(&ks->kallsyms, addr) : NULL;
	if (!k)
		return false;
	out->name = k->name;
	out->module = ks->kernel_label;
	out->start = k->addr;
	out->size = k->size;
	return true;
}

int rv_kernel_syms_add_mapping(struct rv_kernel_syms *ks, uint64_t start, uint64_t len,
			       uint64_t pgoff, const char *name)
{
	size_t klen = strlen(KERNEL_NAME);

	if (ks->loaded || !name)
		return 0;
	if (!strncmp(name, KERNEL_NAME, klen)) {
		if (!name[klen] || ks->ref_sym)
			return 0;
		ks->ref_sym = strdup(name + klen);
		ks->ref_addr = pgoff;
		return ks->ref_sym ? 0 : -ENOMEM;
	}
	/* a module: its .ko's path, or "[name]" when perf knew no path; BPF
	 * programs ("[bpf_prog]") are not modules */
	if ((name[0] == '[' && strncmp(name, "[bpf", 4)) || strstr(name, ".ko"))
		return add_module(ks, name, name[0] == '/' ? name : NULL, start, len);
	return 0;
}

size_t rv_kernel_syms_count(const struct rv_kernel_syms *ks)
{
	return ks->count + (ks->have_kallsyms ? ks->kallsyms.nr : 0);
}

static int dup_option(char **to, const char *from)
{
	*to = NULL;
	if (from && !(*to = strdup(from)))
		return -ENOMEM;
	return 0;
}

int rv_kernel_syms_new(struct rv_kernel_syms **out, const struct rv_kernel_syms_options *options,
		       struct rv_error *err)
{
	struct rv_kernel_syms *ks = calloc(1, sizeof(*ks));
	int ret;

	*out = NULL;
	if (!ks)
		return rv_error_set(err, ENOMEM, "out of memory loading kernel symbols");
	rv_intern_init(&ks->pool);
	ks->kernel_label = rv_intern(&ks->pool, KERNEL_NAME);
	if (!ks->kernel_label || dup_option((char **)&ks->o.vmlinux, options->vmlinux) ||
	    dup_option((char **)&ks->o.kallsyms, options->kallsyms) ||
	    dup_option((char **)&ks->o.modules, options->modules) ||
	    dup_option((char **)&ks->o.modules_dir, options->modules_dir)) {
		rv_kernel_syms_free(ks);
		return rv_error_set(err, ENOMEM, "out of memory loading kernel symbols");
	}
	if (options->kallsyms) {
		ret = rv_kallsyms_load(&ks->kallsyms, options->kallsyms, err);
		if (ret) {
			rv_kernel_syms_free(ks);
			return ret;
		}
		ks->have_kallsyms = true;
	}
	*out = ks;
	return 0;
}

void rv_kernel_syms_free(struct rv_kernel_syms *ks)
{
	if (!ks)
		return;
	for (size_t i = 0; i < ks->nr_modules; i++) {
		free(ks->modules[i].name);
		free(ks->modules[i].path);
		free(ks->modules[i].syms);
	}
	free(ks->modules);
	if (ks->ko_files) {
		ko_index_destroy(ks->ko_files);
		free(ks->ko_files);
	}
	if (ks->have_debuginfo)
		rv_debuginfo_destroy(&ks->debuginfo);
	rv_symtab_free(ks->vmlinux);
	rv_kallsyms_destroy(&ks->kallsyms);
	free(ks->ref_sym);
	free((char *)ks->o.vmlinux);
	free((char *)ks->o.kallsyms);
	free((char *)ks->o.modules);
	free((char *)ks->o.modules_dir);
	rv_intern_destroy(&ks->pool);
	free(ks);
}

static void hex(const uint8_t *id, size_t size, char *out)
{
	for (size_t i = 0; i < size; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * size] = '\0';
}

int rv_vmlinux_check(const char *path, const uint8_t *expected, size_t expected_size,
		     const char *whose, struct rv_error *err)
{
	struct rv_symtab_file f;
	uint8_t id[RV_BUILD_ID_MAX];
	char have[2 * RV_BUILD_ID_MAX + 1], want[2 * RV_BUILD_ID_MAX + 1];
	size_t size;
	int ret = rv_symtab_file_open(&f, path, err);

	if (ret && err->code == ENOEXEC)
		return rv_error_set(
			err, ENOEXEC,
			"--vmlinux '%s' is not an ELF file: give the kernel's "
			"uncompressed image with its symbols (vmlinux, as the "
			"kernel's debug package installs it under /usr/lib/debug/boot), "
			"not a compressed vmlinuz or bzImage",
			path);
	if (ret)
		return rv_error_prefix(err, "--vmlinux");
	size = rv_elf_build_id(f.elf, id);
	rv_symtab_file_close(&f);
	if (!expected_size)
		return 0;
	hex(expected, expected_size, want);
	if (!size)
		return rv_error_set(err, EINVAL,
				    "--vmlinux '%s' has no build id, so it cannot be told to be "
				    "%s (build id %s): give the vmlinux built with that kernel",
				    path, whose, want);
	hex(id, size, have);
	if (size != expected_size || memcmp(id, expected, size))
		return rv_error_set(err, EINVAL,
				    "--vmlinux '%s' is not the image of %s: its build id is %s, "
				    "the kernel's is %s; give the vmlinux built with that kernel",
				    path, whose, have, want);
	return 0;
}
