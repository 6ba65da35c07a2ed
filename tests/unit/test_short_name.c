/* test_short_name.c: the summary's short function names
 * (render/short_name.h): templates folded once at the outermost level, long
 * parameter lists folded and short ones kept, operators never taken for
 * brackets, other names and unbalanced ones as they are, and a full buffer
 * cut at a character boundary.
 *
 * Not here: the summary that prints them (tests/e2e/test_run.c).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "render/short_name.h"

static void expect(const char *name, const char *want)
{
	char out[256];

	rv_short_name(name, out, sizeof(out));
	cr_assert_str_eq(out, want, "'%s' became '%s', not '%s'", name, out, want);
}

Test(short_name, templates_fold_at_the_outermost_level)
{
	expect("std::vector<std::pair<int, int>, std::allocator<std::pair<int, int> > "
	       ">::push_back",
	       "std::vector<…>::push_back");
	expect("std::map<int, std::vector<int> >::find<int>", "std::map<…>::find<…>");
	expect("Box<Box<int>>::get", "Box<…>::get");
	expect("f<>", "f<>");
}

Test(short_name, short_parameter_lists_are_kept_long_ones_folded)
{
	expect("ns::sum(int, int)", "ns::sum(int, int)");
	expect("compute(std::vector<double, std::allocator<double> > const&)",
	       "compute(std::vector<…> const&)");
	expect("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
	       ">::_M_construct<char const*>(char const*, char const*, "
	       "std::forward_iterator_tag)",
	       "std::__cxx11::basic_string<…>::_M_construct<…>(…)");
	expect("run()", "run()");
	expect("(anonymous namespace)::worker(int)", "(anonymous namespace)::worker(int)");
	expect("main::{lambda(int)#1}::operator()(int) const",
	       "main::{lambda(int)#1}::operator()(int) const");
}

Test(short_name, operators_are_not_brackets)
{
	expect("std::operator<< <std::char_traits<char> >(std::basic_ostream<char, "
	       "std::char_traits<char> >&, char const*)",
	       "std::operator<< <…>(…)");
	expect("Point::operator<(Point const&) const", "Point::operator<(Point const&) const");
	expect("Iter<int>::operator->()", "Iter<…>::operator->()");
	expect("V::operator<=>(V const&) const", "V::operator<=>(V const&) const");
	expect("Matrix<3>::operator()(int, int)", "Matrix<…>::operator()(int, int)");
	expect("my_operator<int>", "my_operator<…>");
}

Test(short_name, other_names_are_as_they_are)
{
	expect("main", "main");
	expect("gzip+0x4330", "gzip+0x4330");
	expect("[unknown]", "[unknown]");
	expect("broken<int", "broken<int");
	expect("unclosed(int", "unclosed(int");
	expect("", "");
}

Test(short_name, a_full_buffer_is_cut_at_a_character_boundary)
{
	char out[8];

	rv_short_name("abcdefghij", out, sizeof(out));
	cr_assert_str_eq(out, "abcdefg");
	/* "ab<…>" is 7 bytes: a 6-byte buffer holds "ab<" and no part of the "…" */
	rv_short_name("ab<int>::c", out, 6);
	cr_assert_str_eq(out, "ab<");
	rv_short_name("x", out, 1);
	cr_assert_str_eq(out, "");
}
