/* kallsyms.h: the kernel's function symbols, from /proc/kallsyms or a copy of
 * it (private to src/symbolize/).
 *
 * Only text symbols (types t, T, w, W) are kept, sorted by address; a symbol
 * ends where the next one starts. Symbols of loadable modules keep just their
 * name ("ext4_readdir", not "ext4_readdir [ext4]").
 *
 * This is not: a reader of vmlinux or of kernel modules' ELF files.
 */
#ifndef RV_SYMBOLIZE_KALLSYMS_H
#define RV_SYMBOLIZE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct rv_ksym {
	uint64_t addr;
	uint64_t size;
	const char *name;    /* points into the table's copy of the file */
	const char *display; /* the caller's pooled copy of name, once it made one */
};

struct rv_kallsyms {
	struct rv_ksym *syms;
	size_t nr;
	char *text; /* the file's contents, names terminated in place */
};

/* Fails when the file cannot be read or hides every address (kptr_restrict). */
int rv_kallsyms_load(struct rv_kallsyms *table, const char *path, struct rv_error *err);

/* The symbol covering addr, or NULL. */
struct rv_ksym *rv_kallsyms_find(const struct rv_kallsyms *table, uint64_t addr);

void rv_kallsyms_destroy(struct rv_kallsyms *table);

#endif
