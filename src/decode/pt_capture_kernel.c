/* pt_capture_kernel.c: the kernel's code for decoding an Intel PT capture
 * that traced it: the executable segments of DIR/kcore_dir/kcore (which
 * holds the modules too), or of --vmlinux moved by the KASLR offset, added
 * to the capture's section cache and to every image; the kernel's and the
 * modules' MMAPs, listed as missing when their code was not read, with
 * why, and handed to the symbolizer, which places the kernel's names by
 * them.
 *
 * Not here: user code and the sideband (pt_capture_sideband.c), kernel
 * symbols (symbolize/kernel_syms.h).
 */
#define RV_LOG_DOMAIN "pt-capture"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/pt_capture_internal.h"
#include "decode/pt_sections.h"
#include "util/array.h"
#include "util/log.h"

static int add_kernel_section(struct rv_pt_capture *c, const char *file, uint64_t offset,
			      uint64_t size, uint64_t vaddr)
{
	int isid = ptc_add_section(c, file, offset, size, vaddr);

	if (isid < 0)
		return isid;
	if (rv_array_grow(&c->kernel_isids, &c->cap_kernel_isids, c->nr_kernel_isids,
			  sizeof(*c->kernel_isids), 8))
		return -pte_nomem;
	c->kernel_isids[c->nr_kernel_isids++] = isid;
	return 0;
}

/* Adds the executable kernel-half PT_LOAD segments of an ELF file, moved by
 * `shift`; returns how many, or a negative errno with *why set. */
static int add_elf_code(struct rv_pt_capture *c, const char *file, uint64_t shift, const char **why)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	int added = 0;
	size_t n;

	if (fd < 0) {
		*why = strerror(errno);
		return -errno;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n)) {
		*why = "not an ELF file";
		added = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz ||
		    !(ph.p_flags & PF_X) || ph.p_vaddr + shift < PTC_KERNEL_START)
			continue;
		int rc = add_kernel_section(c, file, ph.p_offset, ph.p_filesz, ph.p_vaddr + shift);
		if (rc < 0) {
			*why = pt_errstr(pt_errcode(rc));
			added = rc == -pte_nomem ? -ENOMEM : -EINVAL;
			goto out;
		}
		added++;
	}
	if (!added) {
		*why = "it has no executable kernel segment";
		added = -EINVAL;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return added;
}

/* The value of symbol `name` in an ELF file's symbol table. */
static bool elf_symbol(const char *file, const char *name, uint64_t *value)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool found = false;

	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		size_t count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*value = sym.st_value;
				found = true;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* The address of a text symbol in a kallsyms file. */
static bool kallsyms_symbol(const char *file, const char *name, uint64_t *value)
{
	FILE *f = file ? fopen(file, "re") : NULL;
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, name) &&
		    (type == 'T' || type == 't') && addr) {
			*value = addr;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* vmlinux moved by the KASLR offset: the running kernel's address of _stext
 * (or _text) minus vmlinux's, from the capture's kallsyms or else from
 * perf's kernel MMAP, whose pgoff is the address of the symbol it names. */
static void load_vmlinux(struct rv_pt_capture *c, const char *ref_sym, uint64_t ref_addr)
{
	static const char *const refs[] = { "_stext", "_text" };
	uint64_t runtime = 0, linked = 0;
	bool have = false;
	const char *why;

	for (size_t i = 0; !have && i < 2; i++)
		have = kallsyms_symbol(c->kallsyms, refs[i], &runtime) &&
		       elf_symbol(c->vmlinux, refs[i], &linked);
	if (!have && ref_sym && ref_addr)
		have = elf_symbol(c->vmlinux, ref_sym, &linked) && (runtime = ref_addr, true);
	if (!have) {
		c->kernel_reason = "cannot relocate --vmlinux: the capture has no kallsyms and no "
				   "kernel map naming _stext or _text, or vmlinux lacks the symbol";
		return;
	}
	if (add_elf_code(c, c->vmlinux, runtime - linked, &why) > 0) {
		c->kernel_loaded = true;
		rv_debug("kernel code from %s, moved by %#" PRIx64, c->vmlinux, runtime - linked);
		return;
	}
	char msg[256];
	snprintf(msg, sizeof(msg), "cannot read --vmlinux %s: %s", c->vmlinux, why);
	c->kernel_reason = ptc_arena_strndup(&c->arena, msg, strlen(msg));
	if (!c->kernel_reason)
		c->kernel_reason = "cannot read --vmlinux";
}

static void load_code(struct rv_pt_capture *c, const char *ref_sym, uint64_t ref_addr)
{
	const char *why = NULL;
	char msg[256];

	if (!c->kernel_traced)
		return;
	if (!c->include_kernel) {
		c->kernel_reason = "kernel decoding was not asked for: decode with "
				   "--trace-include-kernel (as root)";
		return;
	}
	if (!c->dir)
		c->kernel_reason =
			"no kcore_dir/kcore and no --vmlinux: a capture read from a pipe "
			"holds no kernel code; give the recorded kernel's vmlinux with "
			"--vmlinux";
	else if (c->kallsyms)
		c->kernel_reason =
			"no kcore_dir/kcore and no --vmlinux: the recording machine had "
			"no /proc/kcore to copy; give the recorded kernel's vmlinux with "
			"--vmlinux";
	else
		c->kernel_reason =
			"no kcore_dir/kcore and no --vmlinux: the capture holds no kernel "
			"code (rearview, and perf record --kcore, copy it as root); give "
			"the recorded kernel's vmlinux with --vmlinux";
	if (c->kcore) {
		if (add_elf_code(c, c->kcore, 0, &why) > 0) {
			c->kernel_loaded = true;
			c->kcore_loaded = true;
			rv_debug("kernel code from %s", c->kcore);
			return;
		}
		snprintf(msg, sizeof(msg), "cannot read %s: %s", c->kcore, why);
		c->kernel_reason = ptc_arena_strndup(&c->arena, msg, strlen(msg));
		if (!c->kernel_reason)
			c->kernel_reason = "cannot read kcore_dir/kcore";
		c->nr_kernel_isids = 0;
	}
	if (c->vmlinux)
		load_vmlinux(c, ref_sym, ref_addr);
}

int ptc_kernel_load(struct rv_pt_capture *c, const char *ref_sym, uint64_t ref_addr,
		    struct rv_error *err)
{
	load_code(c, ref_sym, ref_addr);
	c->kernel_image = rv_pt_image_alloc("kernel");
	if (!c->kernel_image)
		return ptc_nomem(err);
	for (size_t i = 0; i < c->nr_kernel_isids; i++)
		if (rv_pt_sections_add_cached(c->kernel_image, c->iscache, c->kernel_isids[i]) < 0)
			return ptc_nomem(err);
	return 0;
}

/* Why a module's code was not read: kcore is its only source (a .ko file's
 * code is not relocated: its calls would lead the decoder astray). */
static const char *module_reason(const struct rv_pt_capture *c)
{
	if (!c->kernel_loaded)
		return c->kernel_reason;
	return c->kcore ? "a kernel module: kcore_dir/kcore could not be read"
			: "a kernel module: its code is read only from the capture's "
			  "kcore_dir/kcore (a .ko file's code is not relocated), and the "
			  "capture has none";
}

int ptc_kernel_mapping(struct rv_pt_capture *c, uint64_t start, uint64_t len, uint64_t pgoff,
		       const char *name, struct rv_error *err)
{
	bool is_kernel = !strncmp(name, PTC_KERNEL_NAME, strlen(PTC_KERNEL_NAME));
	struct ptc_mapping m;

	if (!c->kernel_traced)
		return 0;
	/* names: the kernel's place (KASLR) and its modules' */
	if (c->include_kernel && c->symbolizer &&
	    rv_symbolizer_add_mapping(c->symbolizer, PTC_NONE, start, len, pgoff, true, name, err))
		return -ENOMEM;
	ptc_mapping_init(&m, start, len, pgoff, is_kernel ? PTC_KERNEL_NAME : name);
	if (!c->kernel_loaded || (!is_kernel && !c->kcore_loaded)) {
		m.missing = ptc_missing_add(c, m.path,
					    is_kernel ? c->kernel_reason : module_reason(c), true);
		if (m.missing == SIZE_MAX)
			return ptc_nomem(err);
	}
	if (rv_array_grow(&c->kernel_maps.v, &c->kernel_maps.cap, c->kernel_maps.nr,
			  sizeof(*c->kernel_maps.v), 8))
		return ptc_nomem(err);
	c->kernel_maps.v[c->kernel_maps.nr++] = m;
	return 0;
}

/* The kernel's own missing-list entry, or SIZE_MAX. */
static size_t kernel_entry(const struct rv_pt_capture *c)
{
	for (size_t i = 0; i < c->nr_missing; i++)
		if (c->missing[i].kernel && !strcmp(c->missing[i].pub.path, PTC_KERNEL_NAME))
			return i;
	return SIZE_MAX;
}

size_t ptc_kernel_missing_at(const struct rv_pt_capture *c, uint64_t ip)
{
	const struct ptc_mapping *m = ptc_mapping_at(&c->kernel_maps, ip);

	/* kernel code outside every module: the kernel's own entry */
	return m ? m->missing : kernel_entry(c);
}

int ptc_kernel_note_missing(struct rv_pt_capture *c, struct rv_error *err)
{
	size_t i;

	if (!c->kernel_traced || c->kernel_loaded || kernel_entry(c) != SIZE_MAX)
		return 0;
	i = ptc_missing_add(c, PTC_KERNEL_NAME, c->kernel_reason, true);
	if (i == SIZE_MAX)
		return ptc_nomem(err);
	c->missing[i].pub.mappings = 0;
	return 0;
}
