/* kernel_syms.h: the kernel's function names from every source there is
 * (private to src/symbolize/, but for the --vmlinux checks at the bottom).
 *
 * Sources, in the order a kernel address is named by:
 *
 * 1. a loadable module's own symbol table: its .ko file (ET_REL; plain, or
 *    compressed as far as elfutils reads it: gzip, xz, bzip2) laid out as
 *    the kernel's module loader lays out its code: the allocated executable
 *    sections that are not .init ones, in file order, each aligned, from the
 *    module's base address. Where a module is and what it is called come
 *    from the capture's kernel MMAPs (perf's, one per module, named by the
 *    .ko's path or "[name]") and from a /proc/modules list (the live one,
 *    or a capture's kcore_dir/modules copy): "name size refs deps state
 *    0xADDRESS". Its .ko is the MMAP's path when that file exists, else the
 *    one of that name under modules_dir (/lib/modules/RELEASE, searched
 *    once, whole), '-' and '_' being one character in module names;
 * 2. vmlinux's symbol table (--vmlinux), moved by the KASLR offset: the
 *    running kernel's address of _stext (or _text) in the kallsyms file,
 *    else the address perf's kernel MMAP ("[kernel.kallsyms]_text", pgoff)
 *    gives its reference symbol, minus vmlinux's. Without either, vmlinux
 *    names nothing (an unmoved guess could name every address wrongly);
 * 3. the kallsyms file (kallsyms.h): the capture's copy, or /proc/kallsyms
 *    for a capture just recorded here. It holds the modules' symbols too.
 *
 * Files are read on the first lookup, so that the MMAPs of a capture are all
 * known by then (a module's .ko on the first lookup in the module: a
 * distribution kernel has a hundred modules loaded, of which a trace
 * reaches few); a source that cannot be read is left out (and said:
 * rv_kernel_syms_problems), and the next one names the address. Names are as the
 * sources give them (kernel symbols are not mangled; GCC's "foo.cold" is
 * named "foo"), and live as long as the table.
 *
 * Not here: kernel code for the PT decoder (decode/pt_capture_kernel.c),
 * user code (symbolizer.c).
 */
#ifndef RV_SYMBOLIZE_KERNEL_SYMS_H
#define RV_SYMBOLIZE_KERNEL_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/elf.h" /* RV_BUILD_ID_MAX, rv_kernel_running_build_id */
#include "util/error.h"

struct rv_kernel_syms_options {
	const char *vmlinux;	 /* --vmlinux, or NULL */
	const char *kallsyms;	 /* a kallsyms file, or NULL */
	const char *modules;	 /* a /proc/modules list, or NULL */
	const char *modules_dir; /* where .ko files are found by name, or NULL */
};

struct rv_kernel_sym {
	const char *name;   /* raw */
	const char *module; /* "[kernel.kallsyms]", or the module's "[name]" */
	uint64_t start, size;
};

struct rv_kernel_syms;

/* Loads the kallsyms file now (its errors are kallsyms.h's, and fail this:
 * a kallsyms file that hides its addresses must be said); the rest is read
 * on the first lookup. */
int rv_kernel_syms_new(struct rv_kernel_syms **out, const struct rv_kernel_syms_options *options,
		       struct rv_error *err);

/* A kernel MMAP of the capture: perf's "[kernel.kallsyms]SYM" (pgoff is
 * SYM's address), or a module's (start, len and its .ko path or "[name]").
 * Others are ignored. Returns 0, or -ENOMEM. Mappings reported after the
 * first lookup are not used. */
int rv_kernel_syms_add_mapping(struct rv_kernel_syms *ks, uint64_t start, uint64_t len,
			       uint64_t pgoff, const char *name);

/* The function at kernel address addr; false when no source names it. */
bool rv_kernel_syms_find(struct rv_kernel_syms *ks, uint64_t addr, struct rv_kernel_sym *out);

/* How many symbols the sources read so far hold. */
size_t rv_kernel_syms_count(const struct rv_kernel_syms *ks);

/* What was left out, once sources were read (after a lookup), for the user:
 * no kallsyms and no vmlinux, a vmlinux that could not be placed, modules
 * reached by lookups without a .ko or whose .ko could not be read;
 * sentences joined by "; ", or NULL. Valid until the next call or until
 * the table is freed. */
const char *rv_kernel_syms_problems(struct rv_kernel_syms *ks);

void rv_kernel_syms_free(struct rv_kernel_syms *ks);

/* ---- --vmlinux: is it the kernel it is given for ---- */

/* Checks that path is an ELF file and, when expected_size is not 0, that its
 * GNU build id is `expected`, the build id of `whose` ("the running kernel",
 * "the kernel the capture recorded"). Fails with a message that says what
 * is wrong and what to give instead. */
int rv_vmlinux_check(const char *path, const uint8_t *expected, size_t expected_size,
		     const char *whose, struct rv_error *err);

#endif
