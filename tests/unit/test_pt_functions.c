/* test_pt_functions.c: function ranges read from mapped ELF files, checked on
 * this very process: its executable (with .symtab) and libc (.dynsym only),
 * mapped as /proc/self/maps says, against functions whose addresses the
 * compiler knows. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/pt_functions.h"

/* Whether a and b are inside one and the same function, as the decoding
 * threads decide it: b within the stretch of code around a. */
static bool same_function(const struct rv_functions *f, uint64_t a, uint64_t b)
{
	uint64_t start, end;

	return rv_functions_around(f, a, &start, &end) && b >= start && b < end;
}

/* Adds every executable mapping of this process whose path contains `name`. */
static size_t add_own_mappings(struct rv_functions *f, const char *name)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[1024];
	size_t added = 0;

	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		uint64_t start, end, pgoff;
		char perms[8], path[512] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %511s", &start,
			   &end, perms, &pgoff, path) < 4)
			continue;
		if (perms[2] != 'x' || !strstr(path, name))
			continue;
		cr_assert_eq(rv_functions_add_file(f, path, pgoff, start, end - start), 0);
		added++;
	}
	fclose(maps);
	return added;
}

static int local_function(int x)
{
	return x * 3 + 1;
}

Test(pt_functions, the_executable_with_its_symbol_table)
{
	struct rv_functions f = { 0 };
	uint64_t a = (uint64_t)(uintptr_t)&rv_functions_around;
	uint64_t b = (uint64_t)(uintptr_t)&rv_functions_add_file;
	uint64_t local = (uint64_t)(uintptr_t)&local_function;

	cr_assert_gt(add_own_mappings(&f, "unit-tests"), 0, "no executable mapping of the tests");
	rv_functions_sort(&f);
	cr_assert_gt(f.nr, 100, "only %zu functions", f.nr);
	cr_assert(same_function(&f, a, a + 1), "a function's first two bytes");
	cr_assert(!same_function(&f, a, b), "two functions");
	cr_assert(!same_function(&f, b, a));
	cr_assert(same_function(&f, local, local + 1), "a static function (.symtab)");
	cr_assert(!same_function(&f, local, 0x10), "an address outside any mapping");
	cr_assert(!same_function(&f, 0x10, 0x11), "outside any mapping");
	rv_functions_free(&f);
	cr_assert_eq(f.nr, 0);
}

Test(pt_functions, a_shared_library_with_dynamic_symbols_only)
{
	struct rv_functions f = { 0 };
	/* libc's own functions, not a sanitizer's interceptors of them */
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	uint64_t q, g;

	cr_assert_not_null(libc, "%s", dlerror());
	q = (uint64_t)(uintptr_t)dlsym(libc, "qsort");
	g = (uint64_t)(uintptr_t)dlsym(libc, "getenv");
	cr_assert(q && g);

	cr_assert_gt(add_own_mappings(&f, "libc.so"), 0, "no libc mapping");
	rv_functions_sort(&f);
	cr_assert(same_function(&f, q, q + 1));
	cr_assert(same_function(&f, g, g + 2));
	cr_assert(!same_function(&f, q, g));
	rv_functions_free(&f);
	dlclose(libc);
}

Test(pt_functions, files_that_are_not_elf_add_nothing)
{
	struct rv_functions f = { 0 };

	cr_assert_eq(rv_functions_add_file(&f, "/nonexistent/file", 0, 0x1000, 0x1000), 0);
	cr_assert_eq(rv_functions_add_file(&f, "/proc/self/maps", 0, 0x1000, 0x1000), 0);
	cr_assert_eq(rv_functions_add_file(&f, "/etc/passwd", 0, 0x1000, 0x1000), 0);
	rv_functions_sort(&f);
	cr_assert_eq(f.nr, 0);
	cr_assert(!same_function(&f, 0x1000, 0x1001));
	rv_functions_free(&f);
}

/* The index of the range that byte x belongs to, or -1, by a linear scan. */
static int owner(const struct rv_functions *f, uint64_t x)
{
	int last = -1;

	for (size_t i = 0; i < f->nr; i++)
		if (f->v[i].start <= x)
			last = (int)i;
	return last >= 0 && x < f->v[last].end ? last : -1;
}

/* A symbol nested in another (a local label with a size, an alias of part of
 * a function) takes the rest of the outer one's code: a jump across the
 * inner one's start is not inside one function, whichever side it starts. */
Test(pt_functions, nested_symbols_cut_the_outer_range)
{
	struct rv_function_range v[] = {
		{ 0x1000, 0x1100 }, /* outer */
		{ 0x1040, 0x1060 }, /* nested */
		{ 0x1000, 0x1100 }, /* an alias of outer, same range */
		{ 0x2000, 0x2010 },
	};
	struct rv_functions f = { .v = v, .nr = 4, .cap = 4 };
	uint64_t start = 0, end = 0;

	rv_functions_sort(&f);
	cr_assert(rv_functions_around(&f, 0x1000, &start, &end));
	cr_assert_eq(start, 0x1000);
	cr_assert_eq(end, 0x1040, "cut where the nested symbol begins, not %#" PRIx64, end);
	cr_assert(rv_functions_around(&f, 0x1050, &start, &end));
	cr_assert(start == 0x1040 && end == 0x1060);
	cr_assert(!rv_functions_around(&f, 0x1070, &start, &end),
		  "after the nested symbol's end: none, rather than a guess");
	cr_assert(!rv_functions_around(&f, 0x1800, &start, &end), "between functions");
	cr_assert(!rv_functions_around(&f, 0x0fff, &start, &end), "before the first");
	cr_assert(rv_functions_around(&f, 0x200f, &start, &end));
	cr_assert(start == 0x2000 && end == 0x2010);
	cr_assert(!rv_functions_around(&f, 0x2010, &start, &end), "one past the last");

	cr_assert(same_function(&f, 0x1000, 0x103f));
	cr_assert(!same_function(&f, 0x1000, 0x1040));
	cr_assert(!same_function(&f, 0x1050, 0x1030));
	cr_assert(!same_function(&f, 0x1050, 0x1070));
	cr_assert(!same_function(&f, 0x1070, 0x1071));
	/* against a linear scan: a byte belongs to the last range (in sorted
	 * order) that starts at or before it, if that range covers it */
	for (uint64_t a = 0xff0; a < 0x2020; a += 3) {
		int owner_a = owner(&f, a);
		bool in = rv_functions_around(&f, a, &start, &end);

		cr_assert_eq(in, owner_a >= 0, "%#" PRIx64, a);
		for (uint64_t b = 0xff0; b < 0x2020; b += 5) {
			bool same = owner_a >= 0 && owner(&f, b) == owner_a;

			cr_assert_eq(same_function(&f, a, b), same, "%#" PRIx64 " %#" PRIx64, a, b);
			cr_assert_eq(in && b >= start && b < end, same);
		}
	}
}
