/* kernel_btf.c: finding the kernel's BTF, --btf, and what a BPF object needs
 * of them; see kernel_btf.h. */
#define RV_LOG_DOMAIN "btf"
#include "record/kernel_btf.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "util/bpf_log.h"
#include "util/log.h"

#define BTF_EXT_MAGIC 0xeB9F

/* .BTF.ext's header (linux/btf.h has none for it: libbpf's btf.h, private). */
struct btf_ext_header {
	uint16_t magic;
	uint8_t version;
	uint8_t flags;
	uint32_t hdr_len;
	uint32_t func_info_off, func_info_len;
	uint32_t line_info_off, line_info_len;
	uint32_t core_relo_off, core_relo_len; /* present when hdr_len covers them */
};

/* One section's CO-RE records in the CO-RE part: the section's name and how
 * many records of record_size follow. */
struct btf_ext_info_sec {
	uint32_t sec_name_off;
	uint32_t num_info;
};

static bool sysfs_btf_present(void)
{
	struct stat st;

	/* An empty file (what a bind mount hiding it leaves) is no BTF. */
	return !stat(RV_KERNEL_BTF_PATH, &st) && S_ISREG(st.st_mode) && st.st_size > 0;
}

static int check_custom(const char *path, struct rv_error *err)
{
	struct btf *btf = btf__parse(path, NULL);
	long ret = libbpf_get_error(btf);
	bool kernel_types;

	if (ret)
		return rv_error_set(
			err, (int)-ret,
			"--btf %s: cannot read BTF from it (%s); give a raw BTF file for "
			"this kernel (as /sys/kernel/btf/vmlinux is on kernels "
			"that have one) or an ELF file with a .BTF section",
			path, strerror((int)-ret));
	kernel_types = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT) > 0;
	btf__free(btf);
	if (!kernel_types)
		return rv_error_set(err, EINVAL,
				    "--btf %s: no struct task_struct in it, so it does not "
				    "describe a kernel; give the BTF of the running kernel",
				    path);
	return 0;
}

int rv_kernel_btf_probe(struct rv_kernel_btf *kb, const char *custom_path, struct rv_error *err)
{
	int ret;

	memset(kb, 0, sizeof(*kb));
	rv_bpf_log_setup();
	kb->kernel = sysfs_btf_present();
	if (!kb->kernel) {
		/* libbpf also looks in /boot and /usr/lib/debug: as it does. */
		struct btf *btf = btf__load_vmlinux_btf();

		kb->kernel = !libbpf_get_error(btf);
		btf__free(libbpf_get_error(btf) ? NULL : btf);
	}
	if (custom_path) {
		ret = check_custom(custom_path, err);
		if (ret)
			return ret;
		kb->custom_path = custom_path;
	}
	rv_debug("kernel BTF: %s%s%s", kb->kernel ? "present" : "absent",
		 custom_path ? "; --btf " : "", custom_path ? custom_path : "");
	return 0;
}

struct btf *rv_kernel_btf_load(const struct rv_kernel_btf *kb)
{
	struct btf *btf = NULL;

	if (kb->custom_path)
		btf = btf__parse(kb->custom_path, NULL);
	else if (kb->kernel)
		btf = btf__load_vmlinux_btf();
	return libbpf_get_error(btf) ? NULL : btf;
}

/* The .BTF.ext section's bytes in an object, or NULL when it has none. */
static int find_btf_ext(Elf *elf, const uint8_t **data, size_t *size, struct rv_error *err)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	*data = NULL;
	*size = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return rv_error_set(err, EINVAL, "no section names: %s", elf_errmsg(-1));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &shdr))
			return rv_error_set(err, EINVAL, "bad section header: %s", elf_errmsg(-1));
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".BTF.ext"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return rv_error_set(err, EINVAL, ".BTF.ext has no data");
		*data = d->d_buf;
		*size = d->d_size;
		return 0;
	}
	return 0;
}

static int count_core_relos(const uint8_t *ext, size_t size, size_t *count, struct rv_error *err)
{
	struct btf_ext_header h = { 0 };
	uint32_t record_size;
	size_t pos, end;

	*count = 0;
	if (size < offsetof(struct btf_ext_header, core_relo_off))
		return rv_error_set(err, EINVAL, ".BTF.ext is shorter than its header");
	memcpy(&h, ext, offsetof(struct btf_ext_header, core_relo_off));
	if (h.magic != BTF_EXT_MAGIC)
		return rv_error_set(err, EINVAL, ".BTF.ext has magic 0x%x, not 0x%x", h.magic,
				    BTF_EXT_MAGIC);
	if (h.hdr_len > size)
		return rv_error_set(err, EINVAL, ".BTF.ext's header runs past the section");
	if (h.hdr_len < sizeof(h))
		return 0; /* written before CO-RE existed: none */
	memcpy(&h, ext, sizeof(h));
	if (!h.core_relo_len)
		return 0;
	/* Offsets count from the end of the header. */
	pos = (size_t)h.hdr_len + h.core_relo_off;
	end = pos + h.core_relo_len;
	if (pos < h.hdr_len || end < pos || end > size || h.core_relo_len < sizeof(record_size))
		return rv_error_set(err, EINVAL, ".BTF.ext's CO-RE part lies outside the section");
	memcpy(&record_size, ext + pos, sizeof(record_size));
	pos += sizeof(record_size);
	if (record_size == 0)
		return rv_error_set(err, EINVAL, ".BTF.ext's CO-RE records have size 0");
	while (pos < end) {
		struct btf_ext_info_sec sec;

		if (end - pos < sizeof(sec))
			return rv_error_set(err, EINVAL, ".BTF.ext's CO-RE part ends mid-section");
		memcpy(&sec, ext + pos, sizeof(sec));
		pos += sizeof(sec);
		if ((uint64_t)sec.num_info * record_size > end - pos)
			return rv_error_set(err, EINVAL,
					    ".BTF.ext: %u CO-RE records run past the section",
					    sec.num_info);
		pos += (size_t)sec.num_info * record_size;
		*count += sec.num_info;
	}
	return 0;
}

int rv_bpf_core_relo_count(const void *elf_bytes, size_t size, size_t *count, struct rv_error *err)
{
	const uint8_t *ext;
	size_t ext_size;
	Elf *elf;
	int ret;

	*count = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return rv_error_set(err, EINVAL, "libelf is too old");
	elf = elf_memory((char *)elf_bytes, size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		return rv_error_set(err, EINVAL, "not an ELF object");
	}
	ret = find_btf_ext(elf, &ext, &ext_size, err);
	if (!ret && ext)
		ret = count_core_relos(ext, ext_size, count, err);
	elf_end(elf);
	return ret;
}

int rv_kernel_btf_missing(struct rv_error *err, const char *what)
{
	return rv_error_set(err, ENOENT,
			    "%s needs the kernel's BTF, and this kernel shows none (no %s: it "
			    "was built without CONFIG_DEBUG_INFO_BTF); give a BTF file for this "
			    "kernel with --btf FILE (from btfhub, or made from its vmlinux with "
			    "pahole --btf_encode_detached FILE vmlinux)",
			    what, RV_KERNEL_BTF_PATH);
}

int rv_kernel_btf_open_opts(const struct rv_kernel_btf *kb, const char *what, const void *elf,
			    size_t size, struct bpf_object_open_opts *opts, struct rv_error *err)
{
	size_t relos = 0;
	int ret = rv_bpf_core_relo_count(elf, size, &relos, err);

	if (ret)
		return rv_error_prefix(err, "%s's BPF object", what);
	rv_debug("%s: %zu CO-RE relocations", what, relos);
	if (!relos)
		return 0;
	if (kb->custom_path) {
		opts->btf_custom_path = kb->custom_path;
		return 0;
	}
	if (!kb->kernel)
		return rv_kernel_btf_missing(err, what);
	return 0;
}
