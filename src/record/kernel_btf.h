/* kernel_btf.h: the kernel's BTF, which rearview's BPF objects may need, found
 * once before any of them is opened, and what each object needs of it.
 *
 * Two different needs:
 * - CO-RE relocations (a field of a kernel struct read where this kernel has
 *   it) need a description of this kernel's types: the kernel's own BTF
 *   (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF), or a BTF file for this
 *   very kernel given with --btf (libbpf's btf_custom_path), for kernels
 *   built without it.
 * - Programs that attach by the kernel's BTF ids (tp_btf, fentry, fexit) need
 *   the kernel's own BTF; --btf cannot stand in for it.
 * An object with neither (the gate, the sample filter, the calibration's
 * probes) loads anywhere. Whether an object carries CO-RE relocations is read
 * from the object itself (its .BTF.ext section), not assumed.
 *
 * Not here: loading objects (each loader passes rv_kernel_btf_open_opts'
 * options to its skeleton's __open_opts), or the kernel's image and symbols
 * (--vmlinux).
 */
#ifndef RV_RECORD_KERNEL_BTF_H
#define RV_RECORD_KERNEL_BTF_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

struct btf;
struct bpf_object_open_opts;

#define RV_KERNEL_BTF_PATH "/sys/kernel/btf/vmlinux"

struct rv_kernel_btf {
	/* The kernel's own BTF is there: RV_KERNEL_BTF_PATH, or one of the
	 * other places libbpf looks (/boot/vmlinux-RELEASE, ...). */
	bool kernel;
	/* --btf FILE, checked to be a BTF file; NULL without. Borrowed: it
	 * must outlive every object opened with it. */
	const char *custom_path;
};

/* Finds the kernel's BTF and checks custom_path (NULL: none) is a BTF file.
 * Also routes libbpf's messages to the debug log (bpf_log.h), so that no raw
 * libbpf line reaches the user. Errors only for a bad custom_path. */
int rv_kernel_btf_probe(struct rv_kernel_btf *kb, const char *custom_path, struct rv_error *err);

/* Neither the kernel's BTF nor --btf: nothing to relocate CO-RE against. */
static inline bool rv_kernel_btf_none(const struct rv_kernel_btf *kb)
{
	return !kb->kernel && !kb->custom_path;
}

/* The BTF to ask about the kernel's types: --btf's file if given, else the
 * kernel's; NULL when there is none. The caller btf__free()s it. */
struct btf *rv_kernel_btf_load(const struct rv_kernel_btf *kb);

/* How many CO-RE relocations the BPF object file in elf[0, size) carries (a
 * skeleton's __elf_bytes): the records of its .BTF.ext section's CO-RE part;
 * 0 without that section or part. Every length is checked against the
 * section; err says what is malformed. */
int rv_bpf_core_relo_count(const void *elf, size_t size, size_t *count, struct rv_error *err);

/* What one BPF object (what: "the BPF gate", its file in elf[0, size)) needs:
 * nothing without CO-RE relocations; with them, --btf's file (set in
 * opts->btf_custom_path, which opts must already be initialised for) or the
 * kernel's BTF. When it needs BTF and there is none, err says so in one line
 * with what to do: --btf FILE. */
int rv_kernel_btf_open_opts(const struct rv_kernel_btf *kb, const char *what, const void *elf,
			    size_t size, struct bpf_object_open_opts *opts, struct rv_error *err);

/* The one-line error for `what`, which needs BTF, when there is none. */
int rv_kernel_btf_missing(struct rv_error *err, const char *what);

#endif
