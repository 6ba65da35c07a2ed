/* test_suggest.c: the edit distance behind "did you mean". */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "util/suggest.h"

Test(suggest, edit_distance_counts_single_byte_edits)
{
	cr_assert_eq(rv_edit_distance("", ""), 0);
	cr_assert_eq(rv_edit_distance("", "abc"), 3);
	cr_assert_eq(rv_edit_distance("abc", ""), 3);
	cr_assert_eq(rv_edit_distance("multi-thread", "multi-thread"), 0);
	/* a swap of two neighbours is two substitutions */
	cr_assert_eq(rv_edit_distance("mutli-thread", "multi-thread"), 2);
	cr_assert_eq(rv_edit_distance("atach", "attach"), 1);
	cr_assert_eq(rv_edit_distance("kitten", "sitting"), 3);
	cr_assert_eq(rv_edit_distance("sitting", "kitten"), 3);
}

Test(suggest, long_names_are_not_compared)
{
	char longest[RV_SUGGEST_MAX_LEN + 2];

	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	cr_assert_eq(rv_edit_distance(longest, "a"), SIZE_MAX);
	cr_assert_eq(rv_edit_distance("a", longest), SIZE_MAX);
	longest[RV_SUGGEST_MAX_LEN] = '\0';
	cr_assert_eq(rv_edit_distance(longest, ""), RV_SUGGEST_MAX_LEN);
}

Test(suggest, the_limit_grows_with_the_typed_length)
{
	cr_assert_eq(rv_suggest_limit("fo"), 1);
	cr_assert_eq(rv_suggest_limit("atach"), 2);
	cr_assert_eq(rv_suggest_limit("mutli-thread"), 5);
}
