/* test_fn_exits.c: the function tracer's exit finder (record/fn_exits.h) on
 * hand-assembled x86-64 code, the pieces of functions and clones by name
 * (symtab.h's rv_symtab_piece_of), the symbolizer's name for a piece, and
 * the bpf_cookie's encoding with its condition test (bpf/functions.h).
 *
 * Not here: placing probes (tests/e2e/test_functions_unwind.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/functions.h"
#include "record/fn_exits.h"
#include "symbolize/symtab.h"
#include "util/intern.h"

#define MAIN 0x1000
#define COLD 0x2000

/* Finds the exits of one or two pieces: code at MAIN, cold (if any) at COLD. */
static void find(const uint8_t *code, size_t size, const uint8_t *cold, size_t cold_size,
		 struct rv_fn_exits *x)
{
	struct rv_fn_code pieces[2] = {
		{ .address = MAIN, .bytes = code, .size = size },
		{ .address = COLD, .bytes = cold, .size = cold_size },
	};

	rv_fn_exits_init(x);
	cr_assert_eq(rv_fn_exits_find(pieces, cold ? 2 : 1, x), 0);
}

static void assert_site(const struct rv_fn_exits *x, size_t i, uint64_t address,
			enum rv_fn_site_kind kind, uint8_t condition)
{
	cr_assert_lt(i, x->nr_sites, "site %zu of %zu", i, x->nr_sites);
	cr_assert_eq(x->sites[i].address, address, "site %zu at 0x%llx", i,
		     (unsigned long long)x->sites[i].address);
	cr_assert_eq(x->sites[i].kind, kind, "site %zu's kind", i);
	cr_assert_eq(x->sites[i].condition, condition, "site %zu's condition", i);
}

Test(fn_exits, every_form_of_ret_is_an_exit)
{
	/* push rbp; pop rbp; ret; rep ret; ret 0x10; bnd ret */
	static const uint8_t code[] = {
		0x55, 0x5d, 0xc3, 0xf3, 0xc3, 0xc2, 0x10, 0x00, 0xf2, 0xc3
	};
	struct rv_fn_exits x;

	find(code, sizeof(code), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 4);
	assert_site(&x, 0, MAIN + 2, RV_FN_SITE_RETURN, 0);
	assert_site(&x, 1, MAIN + 3, RV_FN_SITE_RETURN, 0);
	assert_site(&x, 2, MAIN + 5, RV_FN_SITE_RETURN, 0);
	assert_site(&x, 3, MAIN + 8, RV_FN_SITE_RETURN, 0);
	cr_assert_eq(x.sites[2].length, 3);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, a_jump_out_is_a_tail_call_and_a_jump_inside_is_not)
{
	static const uint8_t code[] = {
		0xeb, 0x02,		      /* 1000: jmp 1004 (inside) */
		0x90, 0x90,		      /* 1002: nop; nop */
		0xe9, 0xf7, 0x0f, 0x00, 0x00, /* 1004: jmp 2000 (outside: no cold piece) */
		0xe9, 0xf2, 0xff, 0xff, 0xff, /* 1009: jmp 1000 (its own entry: a loop) */
	};
	struct rv_fn_exits x;

	find(code, sizeof(code), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 1);
	assert_site(&x, 0, MAIN + 4, RV_FN_SITE_TAIL_JUMP, 0);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, jumps_into_the_cold_piece_and_back_stay_inside_but_its_ret_leaves)
{
	static const uint8_t code[] = {
		0x0f, 0x86, 0xfa, 0x0f, 0x00, 0x00, /* 1000: jbe 2000 (the cold piece) */
		0xc3,				    /* 1006: ret */
	};
	static const uint8_t cold[] = {
		0xe9, 0x01, 0xf0, 0xff, 0xff, /* 2000: jmp 1006 (back) */
		0xc3,			      /* 2005: ret */
	};
	struct rv_fn_exits x;

	find(code, sizeof(code), cold, sizeof(cold), &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 2);
	assert_site(&x, 0, MAIN + 6, RV_FN_SITE_RETURN, 0);
	assert_site(&x, 1, COLD + 5, RV_FN_SITE_RETURN, 0);
	rv_fn_exits_destroy(&x);
	/* without the piece, the same jbe is a conditional tail call */
	find(code, sizeof(code), NULL, 0, &x);
	cr_assert_eq(x.nr_sites, 2);
	assert_site(&x, 0, MAIN, RV_FN_SITE_TAIL_JUMP, 1 + 6 /* BE */);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, a_conditional_tail_call_carries_its_condition)
{
	static const uint8_t code[] = {
		0x85, 0xff,		      /* 1000: test edi, edi */
		0x74, 0x20,		      /* 1002: je 1024 (outside) */
		0x7f, 0x02,		      /* 1004: jg 1008 (inside) */
		0x0f, 0x85, 0x00, 0x01, 0x00, /* 1006: jne 110c, rel32 cut short... */
	};
	static const uint8_t whole[] = {
		0x85, 0xff,			    /* 1000: test edi, edi */
		0x74, 0x20,			    /* 1002: je 1024 (outside) */
		0x7f, 0x02,			    /* 1004: jg 1008 (inside) */
		0x90, 0x90,			    /* 1006 */
		0x0f, 0x8c, 0x00, 0x01, 0x00, 0x00, /* 1008: jl 110e (outside) */
		0xc3,				    /* 100e: ret */
	};
	struct rv_fn_exits x;

	find(whole, sizeof(whole), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 3);
	assert_site(&x, 0, MAIN + 2, RV_FN_SITE_TAIL_JUMP, 1 + 4 /* E */);
	assert_site(&x, 1, MAIN + 8, RV_FN_SITE_TAIL_JUMP, 1 + 12 /* L */);
	assert_site(&x, 2, MAIN + 14, RV_FN_SITE_RETURN, 0);
	rv_fn_exits_destroy(&x);
	/* the same code, cut inside its last instruction */
	find(code, sizeof(code), NULL, 0, &x);
	cr_assert_not_null(x.problem);
	cr_assert(strstr(x.problem, "ends inside an instruction"), "%s", x.problem);
	cr_assert_eq(x.problem_address, MAIN + 6);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, indirect_jumps_are_counted_not_exits)
{
	static const uint8_t table[] = {
		0xff, 0xe0,			 /* 1000: jmp *rax (a switch table's) */
		0xff, 0x24, 0xc5, 0, 0x20, 0, 0, /* 1002: jmp *0x2000(,rax,8) */
		0xc3,				 /* 1009: ret */
	};
	static const uint8_t only_indirect[] = {
		0x48, 0x8b, 0x07, /* 1000: mov rax, [rdi] */
		0xff, 0xe0,	  /* 1003: jmp *rax (a tail call through a pointer) */
	};
	struct rv_fn_exits x;

	find(table, sizeof(table), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.indirect_jumps, 2);
	cr_assert_eq(x.nr_sites, 1);
	assert_site(&x, 0, MAIN + 9, RV_FN_SITE_RETURN, 0);
	rv_fn_exits_destroy(&x);
	/* no way out but an indirect jump: the sites cannot be trusted */
	find(only_indirect, sizeof(only_indirect), NULL, 0, &x);
	cr_assert_not_null(x.problem);
	cr_assert(strstr(x.problem, "indirect jump"), "%s", x.problem);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, a_function_that_never_returns_has_no_sites_and_no_problem)
{
	static const uint8_t code[] = {
		0x50,			      /* push rax */
		0xe8, 0x00, 0x01, 0x00, 0x00, /* call (abort) */
		0x0f, 0x0b,		      /* ud2 */
	};
	struct rv_fn_exits x;

	find(code, sizeof(code), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 0);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, code_that_cannot_serve_says_why)
{
	static const uint8_t bad[] = { 0x90, 0x0f, 0xff };     /* nop; ud0 without its ModRM */
	static const uint8_t far_ret[] = { 0xcb };	       /* lret */
	static const uint8_t jrcxz_out[] = { 0xe3, 0x40 };     /* jrcxz out */
	static const uint8_t loop_in[] = { 0xe2, 0xfe, 0xc3 }; /* loop self; ret */
	struct rv_fn_exits x;

	find(bad, sizeof(bad), NULL, 0, &x);
	cr_assert_not_null(x.problem);
	cr_assert_eq(x.problem_address, MAIN + 1);
	rv_fn_exits_destroy(&x);
	find(far_ret, sizeof(far_ret), NULL, 0, &x);
	cr_assert_not_null(x.problem);
	cr_assert(strstr(x.problem, "far return"), "%s", x.problem);
	rv_fn_exits_destroy(&x);
	find(jrcxz_out, sizeof(jrcxz_out), NULL, 0, &x);
	cr_assert_not_null(x.problem);
	cr_assert(strstr(x.problem, "jrcxz"), "%s", x.problem);
	rv_fn_exits_destroy(&x);
	/* a loop inside the function is fine */
	find(loop_in, sizeof(loop_in), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.nr_sites, 1);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, cold_pieces_belong_to_their_parent_and_clones_are_functions)
{
	static const struct {
		const char *name;
		long parent_len; /* -1: not a piece */
	} cases[] = {
		{ "foo.cold", 3 },
		{ "_Z5checki.cold", 9 },
		{ "foo.cold.12", 3 },
		{ "foo.constprop.0.cold", 15 },
		{ "foo.cold@GLIBC_2.2.5", 3 },
		{ "foo.constprop.0", -1 },
		{ "foo.isra.0", -1 },
		{ "foo.part.0", -1 },
		{ "foo.colder", -1 },
		{ "foo.cold.", -1 },
		{ "foo.cold.x", -1 },
		{ "foo.cold1", -1 },
		{ ".cold", -1 },
		{ "cold", -1 },
		{ "", -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = 999;
		bool piece = rv_symtab_piece_of(cases[i].name, &len);

		cr_assert_eq(piece, cases[i].parent_len >= 0, "%s", cases[i].name);
		if (piece)
			cr_assert_eq((long)len, cases[i].parent_len, "%s: parent %zu bytes",
				     cases[i].name, len);
	}
}

/* The readable name of the raw symbol `raw` through a one-entry index. */
static const char *display(const char *raw, struct rv_intern *pool)
{
	struct rv_symtab table = { 0 };
	struct rv_symtab_entry entry = { .addr = MAIN, .size = 1, .span = 1 };
	const char *name;

	table.names = strdup(raw);
	cr_assert_not_null(table.names);
	table.names_len = strlen(raw) + 1;
	table.entries = &entry;
	table.nr = 1;
	name = rv_symtab_display_name(&table, &entry, pool);
	free(table.names);
	return name;
}

Test(fn_exits, the_symbolizer_names_a_piece_as_its_parent_and_a_clone_with_its_suffix)
{
	struct rv_intern pool_storage, *pool = &pool_storage;

	rv_intern_init(pool);
	cr_assert_str_eq(display("_Z5checki.cold", pool), "check(int)");
	cr_assert_str_eq(display("thrower.cold", pool), "thrower");
	cr_assert_str_eq(display("thrower.cold.3", pool), "thrower");
	cr_assert_str_eq(display("_ZL5scaleii.constprop.0", pool),
			 "scale(int, int) [clone .constprop.0]");
	cr_assert_str_eq(display("_ZL5scaleii.constprop.0.cold", pool),
			 "scale(int, int) [clone .constprop.0]");
	cr_assert_str_eq(display("scale.constprop.0", pool), "scale.constprop.0");
	cr_assert_str_eq(display("f.isra.0", pool), "f.isra.0");
	rv_intern_destroy(pool);
}

Test(fn_exits, the_cookie_round_trips_and_conditions_follow_the_flags)
{
	uint64_t c = rv_fn_cookie(RV_FN_MAX_FUNCTIONS - 1, RV_FN_PROBE_EXIT, 1 + 15, -0x12345);
	const uint64_t CF = 1, ZF = 1 << 6, SF = 1 << 7, OF = 1 << 11;

	cr_assert_eq(rv_fn_cookie_index(c), RV_FN_MAX_FUNCTIONS - 1);
	cr_assert_eq(rv_fn_cookie_kind(c), RV_FN_PROBE_EXIT);
	cr_assert_eq(rv_fn_cookie_condition(c), 16);
	cr_assert_eq(rv_fn_cookie_delta(c), -0x12345);
	c = rv_fn_cookie(7, RV_FN_PROBE_ENTRY, 0, 0);
	cr_assert_eq(c, 7, "a uretprobe's cookie is the index alone");
	c = rv_fn_cookie(3, RV_FN_PROBE_ENTRY_EXIT, 0, 0x7fffffff);
	cr_assert_eq(rv_fn_cookie_kind(c), RV_FN_PROBE_ENTRY_EXIT);
	cr_assert_eq(rv_fn_cookie_delta(c), 0x7fffffff);
	/* E/NE, B/AE, BE/A, L/GE, LE/G, S, O */
	cr_assert(rv_fn_condition_holds(4, ZF));
	cr_assert_not(rv_fn_condition_holds(5, ZF));
	cr_assert(rv_fn_condition_holds(2, CF));
	cr_assert(rv_fn_condition_holds(3, 0));
	cr_assert(rv_fn_condition_holds(6, ZF));
	cr_assert_not(rv_fn_condition_holds(7, CF));
	cr_assert(rv_fn_condition_holds(7, 0));
	cr_assert(rv_fn_condition_holds(12, SF));
	cr_assert_not(rv_fn_condition_holds(12, SF | OF));
	cr_assert(rv_fn_condition_holds(13, SF | OF));
	cr_assert(rv_fn_condition_holds(14, ZF));
	cr_assert(rv_fn_condition_holds(15, 0));
	cr_assert_not(rv_fn_condition_holds(15, SF));
	cr_assert(rv_fn_condition_holds(8, SF));
	cr_assert(rv_fn_condition_holds(0, OF));
	cr_assert(rv_fn_condition_holds(1, 0));
}

Test(fn_exits, the_entry_probe_skips_an_endbr64_only_where_nothing_lands_after_it)
{
	/* endbr64; push rbp; pop rbp; ret */
	static const uint8_t plain[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x5d, 0xc3 };
	/* endbr64; push rbp; dec edi; jne 1004 (back after the endbr64); pop rbp; ret */
	static const uint8_t loop[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xff,
					0xcf, 0x75, 0xfb, 0x5d, 0xc3 };
	/* endbr64; push rbp; jmp *rax (a switch table: its targets unknown); ret */
	static const uint8_t indirect[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xff, 0xe0, 0xc3 };
	/* endbr64; ret: the instruction after it leaves */
	static const uint8_t leaves[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xc3 };
	/* push rbp; pop rbp; ret: no endbr64 */
	static const uint8_t none[] = { 0x55, 0x5d, 0xc3 };
	/* endbr64 alone, cut short (3 of its 4 bytes) */
	static const uint8_t cut[] = { 0xf3, 0x0f, 0x1e };
	struct rv_fn_exits x;

	find(plain, sizeof(plain), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.entry_skip, RV_FN_ENDBR64_SIZE);
	assert_site(&x, 0, MAIN + 6, RV_FN_SITE_RETURN, 0);
	rv_fn_exits_destroy(&x);

	find(loop, sizeof(loop), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.entry_skip, 0, "a jump lands after the endbr64: the entry stays");
	rv_fn_exits_destroy(&x);

	find(indirect, sizeof(indirect), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.indirect_jumps, 1);
	cr_assert_eq(x.entry_skip, 0, "an indirect jump might land after the endbr64");
	rv_fn_exits_destroy(&x);

	find(leaves, sizeof(leaves), NULL, 0, &x);
	cr_assert_null(x.problem, "%s", x.problem);
	cr_assert_eq(x.entry_skip, 0, "the instruction after the endbr64 is an exit");
	rv_fn_exits_destroy(&x);

	find(none, sizeof(none), NULL, 0, &x);
	cr_assert_eq(x.entry_skip, 0);
	rv_fn_exits_destroy(&x);

	find(cut, sizeof(cut), NULL, 0, &x);
	cr_assert_not_null(x.problem, "code that ends inside an instruction cannot serve");
	cr_assert_eq(x.entry_skip, 0);
	rv_fn_exits_destroy(&x);
}

Test(fn_exits, an_entry_past_an_endbr64_is_named_by_its_cookie)
{
	uint64_t cookie = rv_fn_cookie(7, RV_FN_PROBE_ENTRY_SITES, 0, -RV_FN_ENDBR64_SIZE);

	cr_assert_eq(rv_fn_cookie_index(cookie), 7);
	cr_assert_eq(rv_fn_cookie_kind(cookie), RV_FN_PROBE_ENTRY_SITES);
	cr_assert_eq(rv_fn_cookie_delta(cookie), -4, "the entry is 4 bytes before the probe");
}
