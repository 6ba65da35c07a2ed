/* pt_functions.h: where functions begin and end in a process's code, read
 * once from the mapped ELF files' symbol tables and then only read, so that
 * PT decoding threads can tell, without locks, whether a jump stays inside
 * its function (such a jump cannot change a call stack; see
 * rv_pt_function_at_fn).
 *
 * A function is a symbol of type FUNC (or IFUNC) with a size, from .symtab,
 * or .dynsym when the file has no .symtab. An address no such symbol covers
 * is in no function, and a jump touching it is never "inside one function":
 * the trace builder, which names code with the symbolizer, decides those.
 *
 * Not here: names (the symbolizer's), the kernel's code.
 */
#ifndef RV_DECODE_PT_FUNCTIONS_H
#define RV_DECODE_PT_FUNCTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rv_function_range {
	uint64_t start, end; /* [start, end), run-time addresses */
};

struct rv_functions {
	struct rv_function_range *v; /* sorted by start once rv_functions_sort ran */
	size_t nr, cap;
};

/* Adds the functions of `file` mapped at [start, start + len) from file offset
 * pgoff (an MMAP2 record's mapping) that begin inside the mapping. A file that
 * cannot be read, or is not ELF, adds nothing. Returns 0, or -ENOMEM. */
int rv_functions_add_file(struct rv_functions *f, const char *file, uint64_t pgoff, uint64_t start,
			  uint64_t len);

/* Sorts the ranges; call once after the last add, before any lookup. */
void rv_functions_sort(struct rv_functions *f);

/* The stretch of code around addr that one function holds: [*start, *end)
 * such that every b in it is inside the same function as addr, and no b
 * outside it is. That is the function's range, cut short where another
 * (nested or overlapping) symbol begins, whose code then counts as that
 * other one's. False when no function holds addr. */
bool rv_functions_around(const struct rv_functions *f, uint64_t addr, uint64_t *start,
			 uint64_t *end);

void rv_functions_free(struct rv_functions *f);

#endif
