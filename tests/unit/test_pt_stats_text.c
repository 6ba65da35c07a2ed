/* test_pt_stats_text.c: --stats' "decoded by" line (render/render.h), on
 * counts made up for each case: which walker decoded how much, its share,
 * and the chunks the fast walker handed over, whatever the counts are
 * (tests/e2e/test_decoder_choice.c runs it on real traces).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "render/render.h"

static const char *walkers(uint64_t fast, uint64_t libipt, uint64_t handoffs,
			   enum rv_pt_decoder_choice decoder)
{
	static char text[256];
	struct rv_pt_stats s;

	memset(&s, 0, sizeof(s));
	s.bytes = fast + libipt;
	s.fast_bytes = fast;
	s.libipt_bytes = libipt;
	s.handoffs = handoffs;
	return rv_pt_walkers_text(&s, decoder, text, sizeof(text));
}

Test(pt_stats_text, both_walkers_with_their_shares)
{
	cr_assert_str_eq(walkers(31247564, 262144, 3, RV_PT_DECODER_FAST),
			 "fast walker 30 MiB (99.2%), libipt's block decoder 256.0 KiB "
			 "(0.8%, 3 chunks handed over)");
	cr_assert_str_eq(walkers(2 << 20, 1 << 20, 1, RV_PT_DECODER_FAST),
			 "fast walker 2.0 MiB (66.7%), libipt's block decoder 1.0 MiB "
			 "(33.3%, 1 chunk handed over)");
}

Test(pt_stats_text, one_walker_alone)
{
	cr_assert_str_eq(walkers(4096, 0, 0, RV_PT_DECODER_FAST),
			 "fast walker 4.0 KiB (100.0%), libipt's block decoder 0 bytes (0.0%)");
	/* fast chosen, every byte libipt's and no chunk counted as handed over */
	cr_assert_str_eq(walkers(0, 16896, 0, RV_PT_DECODER_FAST),
			 "fast walker 0 bytes (0.0%), libipt's block decoder 16.5 KiB (100.0%)");
	cr_assert_str_eq(walkers(0, 16896, 0, RV_PT_DECODER_LIBIPT),
			 "libipt's block decoder 16.5 KiB (all of it: --decoder libipt)");
	/* --decoder libipt, yet the counts say otherwise: said as counted */
	cr_assert_str_eq(walkers(1024, 1024, 0, RV_PT_DECODER_LIBIPT),
			 "fast walker 1.0 KiB (50.0%), libipt's block decoder 1.0 KiB (50.0%)");
}

Test(pt_stats_text, an_empty_trace_divides_by_nothing)
{
	cr_assert_str_eq(walkers(0, 0, 0, RV_PT_DECODER_FAST),
			 "fast walker 0 bytes (0.0%), libipt's block decoder 0 bytes (0.0%)");
}

Test(pt_stats_text, cut_to_the_buffer)
{
	struct rv_pt_stats s;
	char text[16];

	memset(&s, 0, sizeof(s));
	s.bytes = s.fast_bytes = 1 << 20;
	cr_assert_str_eq(rv_pt_walkers_text(&s, RV_PT_DECODER_FAST, text, sizeof(text)),
			 "fast walker 1.0");
}
