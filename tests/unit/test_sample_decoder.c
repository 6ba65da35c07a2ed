/* test_sample_decoder.c: what the sample decoder decides from a sample's
 * code bytes: whether a frame-pointer walk skipped the leaf's caller. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "decode/sample_decoder.h"

Test(sample_decoder, a_walk_from_a_prologue_or_a_return_skips_the_caller)
{
	static const uint8_t push_rbp[] = { 0x55, 0x48, 0x89, 0xe5 };
	static const uint8_t mov_rsp_rbp[] = { 0x48, 0x89, 0xe5, 0x48 };
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const uint8_t ret[] = { 0xc3, 0x90, 0x90, 0x90 };
	static const uint8_t ret_n[] = { 0xc2, 0x08, 0x00, 0x90 };

	cr_assert(rv_fp_walk_skips_caller(push_rbp, sizeof(push_rbp)));
	cr_assert(rv_fp_walk_skips_caller(push_rbp, 1));
	cr_assert(rv_fp_walk_skips_caller(mov_rsp_rbp, sizeof(mov_rsp_rbp)));
	cr_assert(rv_fp_walk_skips_caller(endbr64, sizeof(endbr64)));
	cr_assert(rv_fp_walk_skips_caller(ret, 1));
	cr_assert(rv_fp_walk_skips_caller(ret_n, sizeof(ret_n)));
}

Test(sample_decoder, a_walk_from_a_function_body_does_not)
{
	static const uint8_t sub_rsp[] = { 0x48, 0x83, 0xec, 0x10 };
	static const uint8_t call[] = { 0xe8, 0x00, 0x00, 0x00 };
	static const uint8_t mov_rsp_rbp[] = { 0x48, 0x89, 0xe5 };
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };

	cr_assert_not(rv_fp_walk_skips_caller(sub_rsp, sizeof(sub_rsp)));
	cr_assert_not(rv_fp_walk_skips_caller(call, sizeof(call)));
	/* code that could not be read whole is not taken for a prologue */
	cr_assert_not(rv_fp_walk_skips_caller(NULL, 0));
	cr_assert_not(rv_fp_walk_skips_caller(mov_rsp_rbp, 2));
	cr_assert_not(rv_fp_walk_skips_caller(endbr64, 3));
}
