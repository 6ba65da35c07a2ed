/* heap.c: see heap.h. */
#include "util/heap.h"

#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE ((uintptr_t)4096)

struct rv_heap_range rv_heap_prepare(void)
{
	struct rv_heap_range range = { 0, 0 };
	uintptr_t before, start, end;
	void *volatile block;

	before = (uintptr_t)sbrk(0);
	if (before == (uintptr_t)-1 || !mallopt(M_MMAP_THRESHOLD, (int)RV_HEAP_MMAP_THRESHOLD) ||
	    !mallopt(M_TRIM_THRESHOLD, (int)RV_HEAP_TRIM_THRESHOLD))
		return range;
	/* A huge page can only back a 2 MiB extent none of whose pages was
	 * touched before the advice; malloc writes chunk headers where the
	 * heap grows and where a block ends. So the break moves to one page
	 * short of a huge-page boundary first (glibc takes that for another's
	 * sbrk and starts its new top chunk there, on that page), then one
	 * block of the whole reserve grows the heap: its header is on that
	 * page, its end's in the last extent, both outside the advised range.
	 * Freed, the block goes back to the top chunk (far below the trim
	 * threshold), which serves the next blocks. */
	start = ((before + PAGE + RV_HEAP_HUGE_PAGE) & ~(RV_HEAP_HUGE_PAGE - 1)) - PAGE;
	/* start > before, always: grown in place, malloc would put the block
	 * at the old top chunk, below the break */
	if (sbrk((intptr_t)(start - before)) == (void *)-1)
		return range;
	block = malloc(RV_HEAP_RESERVE);
	if (!block)
		return range;
	end = (uintptr_t)block + RV_HEAP_RESERVE;
	range.lo = start + PAGE;
	range.hi = end & ~(RV_HEAP_HUGE_PAGE - 1);
	/* not the heap's front (the break could not move, or malloc took the
	 * block from a mapping or free memory of its own): nothing to advise */
	if ((uintptr_t)block < start || (uintptr_t)block >= range.lo || range.hi <= range.lo ||
	    madvise((void *)range.lo, range.hi - range.lo, MADV_HUGEPAGE))
		range.lo = range.hi = 0;
	free(block);
	return range;
}
