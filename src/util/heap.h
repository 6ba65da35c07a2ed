/* heap.h: the process heap on transparent huge pages.
 *
 * A page fault is the dearest thing a short rearview does: on a VM with
 * paravirtualised paging (the project's test machine) each first touch of
 * a 4 KiB page costs some 10 us, so that decoding a 200 KB capture spent a
 * quarter of its CPU time faulting in the few MB its frames, tables and
 * output buffer grow to (950 faults). One fault maps 2 MiB where the kernel
 * backs the heap with huge pages, which it does where madvise(MADV_HUGEPAGE)
 * asks for it (transparent_hugepage's default "madvise" mode) and a huge
 * page is free.
 *
 * rv_heap_prepare, first thing in main and before any thread starts, makes
 * glibc's allocator serve every block below RV_HEAP_MMAP_THRESHOLD (the
 * most glibc allows) from its main heap (the break) instead of a mapping of
 * its own, grows that heap by RV_HEAP_RESERVE at once (address space: a page
 * is only backed when touched) and advises all of it but its first and last
 * extents huge. Memory is not given back to the kernel until
 * RV_HEAP_TRIM_THRESHOLD is free at the top, so that a freed block does not
 * split a huge page. Threads' arenas (parallel decoding) are untouched.
 *
 * All of it is advice: where the heap is not glibc's (a sanitizer's
 * allocator), the break cannot move, or the kernel has no huge pages,
 * nothing changes but where blocks come from, and nothing is reported. */
#ifndef RV_UTIL_HEAP_H
#define RV_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

#define RV_HEAP_RESERVE	       ((size_t)24 << 20)
#define RV_HEAP_MMAP_THRESHOLD ((size_t)32 << 20)
#define RV_HEAP_TRIM_THRESHOLD ((size_t)256 << 20)
#define RV_HEAP_HUGE_PAGE      ((uintptr_t)2 << 20)

/* The range advised huge ([lo, hi), both multiples of RV_HEAP_HUGE_PAGE);
 * empty (lo == hi) where the heap could not grow or madvise refused. */
struct rv_heap_range {
	uintptr_t lo, hi;
};

struct rv_heap_range rv_heap_prepare(void);

#endif
