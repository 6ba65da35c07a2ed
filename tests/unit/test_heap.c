/* test_heap.c: the heap on transparent huge pages (util/heap.h): the range
 * advised starts at the heap's front on a huge-page boundary, the blocks
 * malloc serves next come from it, its mapping carries the advice, and
 * touching megabytes of it takes a handful of faults, not one per 4 KiB.
 *
 * Criterion runs each test in a process of its own, so each prepares a heap
 * of its own. Under AddressSanitizer the heap is not glibc's: the contract
 * there is that nothing is advised.
 */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util/heap.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The VmFlags line of the mapping that holds addr, from /proc/self/smaps. */
static bool vm_flags_of(uintptr_t addr, char *flags, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	bool inside = false, found = false;

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;

		/* only a mapping's first line starts with "lo-hi" */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2)
			inside = lo <= addr && addr < hi;
		else if (inside && !strncmp(line, "VmFlags:", 8)) {
			snprintf(flags, size, "%s", line + 8);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static long minor_faults(void)
{
	struct rusage ru;

	cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_minflt;
}

static bool huge_pages_off(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char line[128] = "";
	bool off;

	if (!f)
		return true;
	off = !fgets(line, sizeof(line), f) || strstr(line, "[never]");
	fclose(f);
	return off;
}

Test(heap, advises_the_front_of_the_heap)
{
	struct rv_heap_range range = rv_heap_prepare();
	char flags[512];
	void *block;

	if (UNDER_ASAN) {
		cr_assert_eq(range.lo, range.hi, "nothing is advised under ASan");
		return;
	}
	cr_assert_gt(range.hi, range.lo);
	cr_assert_eq(range.lo % RV_HEAP_HUGE_PAGE, 0);
	cr_assert_eq(range.hi % RV_HEAP_HUGE_PAGE, 0);
	cr_assert_geq(range.hi - range.lo, RV_HEAP_RESERVE - 2 * RV_HEAP_HUGE_PAGE);
	/* a block larger than glibc's default mapping threshold comes from
	 * the advised heap, not a mapping of its own */
	block = malloc((size_t)1 << 20);
	cr_assert_not_null(block);
	cr_assert_geq((uintptr_t)block + 4096, range.lo);
	cr_assert_lt((uintptr_t)block, range.hi);
	cr_assert(vm_flags_of(range.lo, flags, sizeof(flags)));
	cr_assert(strstr(flags, " hg"), "VmFlags:%s", flags);
	free(block);
}

Test(heap, touching_megabytes_takes_few_faults)
{
	const size_t size = (size_t)8 << 20;
	struct rv_heap_range range;
	long before;
	char *block;

	if (UNDER_ASAN || huge_pages_off())
		cr_skip("no transparent huge pages for glibc's heap here");
	range = rv_heap_prepare();
	cr_assert_gt(range.hi, range.lo);
	before = minor_faults();
	block = malloc(size);
	cr_assert_not_null(block);
	memset(block, 1, size);
	/* 2048 faults in 4 KiB pages; 4 or 5 in huge ones (the kernel may
	 * lack a free huge page now and then: half is the bound) */
	cr_assert_lt(minor_faults() - before, (long)(size / 4096 / 2));
	free(block);
}
