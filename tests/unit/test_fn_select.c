/* test_fn_select.c: --functions patterns to the functions probed, on the
 * test targets and libc, checked against probe_site.c's resolution (libdwfl,
 * an independent reader) and the targets' known symbols. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/fn_exits.h"
#include "record/fn_select.h"
#include "record/probe_site.h"
#include "test_env.h"

static const struct rv_fn_probe *find(const struct rv_fn_list *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (!strcmp(l->items[i].name, name))
			return &l->items[i];
	return NULL;
}

static const struct rv_fn_skipped *find_skipped(const struct rv_fn_list *l, const char *name)
{
	for (size_t i = 0; i < l->nr_skipped; i++)
		if (!strcmp(l->skipped[i].name, name))
			return &l->skipped[i];
	return NULL;
}

/* The function's offset as probe_site.c (libdwfl) resolves it. */
static uint64_t resolved_offset(const char *exe, const char *spec)
{
	struct rv_probe_site site;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_probe_site_resolve(spec, exe, 0, &site, &err), 0, "%s", err.message);
	return site.offset;
}

Test(fn_select, default_is_every_function_of_the_executable_but_the_entry_point)
{
	const char *exe = built_target("workload");
	struct rv_fn_list l;
	struct rv_error err = { 0 };
	const struct rv_fn_skipped *start;

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, NULL, exe, 0, 1000, &err), 0, "%s", err.message);
	cr_assert_not_null(find(&l, "main"));
	cr_assert_not_null(find(&l, "level"));
	cr_assert_not_null(find(&l, "leaf"));
	cr_assert_null(find(&l, "_start"), "the entry point gets no return probe");
	start = find_skipped(&l, "_start");
	cr_assert_not_null(start, "_start is listed as skipped");
	cr_assert(strstr(start->reason, "entry point"), "%s", start->reason);
	for (size_t i = 0; i < l.count; i++) {
		cr_assert_str_eq(l.items[i].path, exe);
		cr_assert_gt(l.items[i].size, 0);
		for (size_t j = i + 1; j < l.count; j++)
			cr_assert_neq(l.items[i].address, l.items[j].address, "%s and %s",
				      l.items[i].name, l.items[j].name);
	}
	cr_assert_eq(find(&l, "leaf")->offset, resolved_offset(exe, "leaf"));
	cr_assert_eq(find(&l, "level")->offset, resolved_offset(exe, "level"));
	cr_assert_eq(find(&l, "main")->offset, resolved_offset(exe, "main"));
	rv_fn_list_destroy(&l);
}

Test(fn_select, globs_select_by_name_and_patterns_merge)
{
	const char *exe = built_target("workload");
	const char *patterns[] = { "le*", "leaf", "ma?n" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 3 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 3, "level, leaf (once), main");
	cr_assert_not_null(find(&l, "level"));
	cr_assert_not_null(find(&l, "leaf"));
	cr_assert_not_null(find(&l, "main"));
	rv_fn_list_destroy(&l);
}

Test(fn_select, a_pattern_that_matches_nothing_is_named_with_nm)
{
	const char *exe = built_target("workload");
	const char *patterns[] = { "leaf", "no_such_*" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_lt(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 2 },
				  exe, 0, 1000, &err),
		     0);
	cr_assert(strstr(err.message, "no_such_*"), "%s", err.message);
	cr_assert(strstr(err.message, "nm"), "%s", err.message);
	rv_fn_list_destroy(&l);
}

/* In a stripped file, nm finds nothing to list: the error says the file is
 * stripped, and what --functions needs. */
Test(fn_select, a_pattern_in_a_stripped_file_says_it_is_stripped)
{
	const char *exe = built_target("workload.stripped");
	const char *patterns[] = { "leaf" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_lt(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0);
	cr_assert(strstr(err.message, "it is stripped"), "%s", err.message);
	cr_assert(strstr(err.message, "not stripped"), "%s", err.message);
	cr_assert_null(strstr(err.message, "`nm --defined-only"), "%s", err.message);
	rv_fn_list_destroy(&l);
}

Test(fn_select, too_many_functions_is_an_error)
{
	const char *exe = built_target("workload");
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, NULL, exe, 0, 2, &err), -E2BIG);
	cr_assert(strstr(err.message, "narrow"), "%s", err.message);
	rv_fn_list_destroy(&l);
}

Test(fn_select, demangled_names_and_globs_over_them)
{
	const char *exe = built_target("sym_cpp");
	const char *patterns[] = { "ns::Widget::frob" };
	const char *qualified[] = { "ns::Widget::frob(int)" };
	const char *mangled[] = { "_ZN2ns5inner*" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 2, "both overloads of frob");
	rv_fn_list_destroy(&l);
	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = qualified, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1);
	cr_assert_str_eq(l.items[0].name, "_ZN2ns6Widget4frobEi");
	rv_fn_list_destroy(&l);
	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = mangled, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1);
	cr_assert_str_eq(l.items[0].name, "_ZN2ns5inner9free_funcEPKc");
	rv_fn_list_destroy(&l);

	cr_assert(rv_fn_name_matches("ns::*", "_ZN2ns6Widget4frobEd"));
	cr_assert(rv_fn_name_matches("malloc", "malloc@@GLIBC_2.2.5"));
	cr_assert_not(rv_fn_name_matches("ns::Widget", "_ZN2ns6Widget4frobEd"));
}

Test(fn_select, library_functions_with_aliases_probed_once)
{
	const char *exe = built_target("workload");
	const char *both[] = { "libc:__libc_malloc", "libc.so.6:malloc" };
	const char *glob[] = { "libc:*malloc" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };
	const char *base;

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, &(struct rv_fn_patterns){ .include = both, .nr_include = 2 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1, "malloc and __libc_malloc are one function");
	cr_assert_str_eq(l.items[0].name, "__libc_malloc", "named by the pattern that came first");
	base = strrchr(l.items[0].path, '/');
	cr_assert_str_eq(base, "/libc.so.6");
	cr_assert_null(strstr(l.items[0].path, "32"), "a 64-bit program's libc, not %s",
		       l.items[0].path);
	{
		char spec[600];

		snprintf(spec, sizeof(spec), "%s:malloc", l.items[0].path);
		cr_assert_eq(l.items[0].offset, resolved_offset(exe, spec));
	}
	rv_fn_list_destroy(&l);

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, &(struct rv_fn_patterns){ .include = glob, .nr_include = 1 },
				  exe, 0, 100000, &err),
		     0, "%s", err.message);
	cr_assert_not_null(find(&l, "malloc"), "the first alias in the table names it");
	cr_assert_null(find(&l, "__libc_malloc"));
	rv_fn_list_destroy(&l);
}

Test(fn_select, functions_a_return_probe_would_break_are_skipped)
{
	const char *exe = built_target("workload");
	const char *patterns[] = { "libc:*setjmp", "libc:vfork", "libc:malloc" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };
	const struct rv_fn_skipped *s;

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l,
				  &(struct rv_fn_patterns){ .include = patterns, .nr_include = 3 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1, "only malloc");
	s = find_skipped(&l, "_setjmp");
	cr_assert_not_null(s);
	cr_assert(strstr(s->reason, "returns twice"), "%s", s->reason);
	cr_assert_not_null(find_skipped(&l, "vfork"));
	rv_fn_list_destroy(&l);
}

Test(fn_select, unknown_library_and_bad_patterns)
{
	const char *exe = built_target("workload");
	const char *nolib[] = { "libnosuchthing:f" };
	const char *empty[] = { "libc:" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_lt(rv_fn_select(&l, &(struct rv_fn_patterns){ .include = nolib, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0);
	cr_assert(strstr(err.message, "libnosuchthing"), "%s", err.message);
	cr_assert_lt(rv_fn_select(&l, &(struct rv_fn_patterns){ .include = empty, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0);
	cr_assert(strstr(err.message, "LIB:PATTERN"), "%s", err.message);
	rv_fn_list_destroy(&l);
}

Test(fn_select, pattern_split_skips_cpp_scopes)
{
	size_t len;

	rv_fn_pattern_split("ns::f*", &len);
	cr_assert_eq(len, 0);
	rv_fn_pattern_split("libc:mall*", &len);
	cr_assert_eq(len, 4);
	rv_fn_pattern_split("/usr/lib/libfoo.so:ns::f", &len);
	cr_assert_eq(len, strlen("/usr/lib/libfoo.so"));
	rv_fn_pattern_split(":f", &len);
	cr_assert_eq(len, 0);
}

Test(fn_select, exclude_takes_out_what_it_matches)
{
	const char *exe = built_target("workload");
	const char *exclude[] = { "le*" };
	const char *everything[] = { "nothing_has_this_name*" };
	struct rv_fn_patterns p = { .exclude = exclude, .nr_exclude = 1 };
	struct rv_fn_list l;
	struct rv_error err = { 0 };

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, &p, exe, 0, 1000, &err), 0, "%s", err.message);
	cr_assert_not_null(find(&l, "main"));
	cr_assert_null(find(&l, "level"));
	cr_assert_null(find(&l, "leaf"));
	cr_assert_eq(l.nr_excluded, 2);
	rv_fn_list_destroy(&l);
	/* a pattern that matches nothing excludes nothing */
	p.exclude = everything;
	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, &p, exe, 0, 1000, &err), 0, "%s", err.message);
	cr_assert_not_null(find(&l, "level"));
	cr_assert_eq(l.nr_excluded, 0);
	rv_fn_list_destroy(&l);
}

/* GCC's unwind_throw: check(int) and catcher(int) have .cold pieces, scale
 * a .constprop clone (mk/unwind.mk). */
Test(fn_select, cold_pieces_are_their_parents_and_clones_are_functions)
{
	const char *exe = built_target("unwind_throw");
	const char *scale[] = { "scale" };
	struct rv_fn_list l;
	struct rv_error err = { 0 };
	const struct rv_fn_probe *check, *catcher;

	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, NULL, exe, 0, 1000, &err), 0, "%s", err.message);
	for (size_t i = 0; i < l.count; i++)
		cr_assert_null(strstr(l.items[i].name, ".cold"), "%s selected", l.items[i].name);
	check = find(&l, "_Z5checki");
	catcher = find(&l, "_Z7catcheri");
	cr_assert_not_null(check);
	cr_assert_not_null(catcher);
	cr_assert_not_null(find(&l, "_ZL5scaleii.constprop.0"));

	/* exits: at the return sites, pieces included */
	cr_assert_eq(rv_fn_exits_plan(&l, true, &err), 0, "%s", err.message);
	for (size_t i = 0; i < l.count; i++) {
		const struct rv_fn_probe *f = &l.items[i];

		cr_assert_eq(f->exits, RV_FN_EXITS_SITES, "%s: %s at %#llx", f->name,
			     f->exits_problem ? f->exits_problem : "",
			     (unsigned long long)f->problem_address);
		for (size_t k = 0; k < f->nr_sites; k++)
			cr_assert_eq(f->sites[k].offset - f->offset,
				     f->sites[k].address - f->address,
				     "%s: a site's offset is its address's (one segment)", f->name);
	}
	cr_assert_eq(check->nr_pieces, 1);
	cr_assert_eq(catcher->nr_pieces, 1);
	cr_assert_geq(check->nr_sites, 1);
	cr_assert_eq(find(&l, "main")->nr_pieces, 0);
	/* without return sites: every function a uretprobe */
	cr_assert_eq(rv_fn_exits_plan(&l, false, &err), 0, "%s", err.message);
	for (size_t i = 0; i < l.count; i++)
		cr_assert_eq(l.items[i].exits, RV_FN_EXITS_URETPROBE);
	rv_fn_list_destroy(&l);

	/* the clone matches its parent's name */
	rv_fn_list_init(&l);
	cr_assert_eq(rv_fn_select(&l, &(struct rv_fn_patterns){ .include = scale, .nr_include = 1 },
				  exe, 0, 1000, &err),
		     0, "%s", err.message);
	cr_assert_eq(l.count, 1);
	cr_assert_str_eq(l.items[0].name, "_ZL5scaleii.constprop.0");
	rv_fn_list_destroy(&l);
}
