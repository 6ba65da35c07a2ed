/* test_pt_windows.c: the clock conversion behind --filter windows applied
 * while decoding: the offset from CLOCK_MONOTONIC (the BPF gate's times) to a
 * PT capture's clock (the TSC through TIME_CONV), from back-to-back reads of
 * both clocks, and times converted with it.
 *
 * Not here: the windows applied to a real capture
 * (tests/e2e/test_decode_windows.c).
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "capture/auxtrace.h"
#include "decode/pt_capture.h"

#define TSC_HZ 3000000000ull

/* A 3 GHz TSC whose tick tsc_at is perf time ns_at. */
static struct rv_perf_time_conv conversion(uint64_t tsc_at, uint64_t ns_at)
{
	struct rv_perf_time_conv tc = { 0 };

	rv_perf_time_conv_from_freq(&tc, TSC_HZ, tsc_at, ns_at);
	return tc;
}

Test(pt_windows, offset_from_the_tightest_pair)
{
	/* perf time = 5 s at TSC 15e9; CLOCK_MONOTONIC runs 1.25 s behind */
	struct rv_perf_time_conv tc = conversion(15000000000ull, 5000000000ull);
	const int64_t truth = 1250000000;
	uint64_t tsc = 15000000000ull + 3000; /* perf time 5 s + 1000 ns */
	uint64_t mono = 5000001000ull - (uint64_t)truth;
	struct rv_pt_clock_pair pairs[] = {
		/* loose: the TSC read late in a 10 us spread */
		{ mono - 1000, tsc, mono + 9000 },
		/* tight: the TSC halfway in a 40 ns spread */
		{ mono - 20, tsc, mono + 20 },
		/* the clock went backwards: not a pair */
		{ mono + 5, tsc, mono - 5 },
	};
	uint64_t spread = 0;
	int64_t offset = rv_pt_clock_offset(&tc, pairs, 3, &spread);

	cr_assert_eq(spread, 40);
	cr_assert(offset >= truth - 1 && offset <= truth + 1, "offset %lld, expected %lld",
		  (long long)offset, (long long)truth);
	/* a gate time converts to the capture's time of the same instant */
	cr_assert_eq(rv_pt_clock_from_monotonic(mono + 777, offset),
		     rv_perf_tsc_to_time(&tc, tsc) + 777);
}

Test(pt_windows, capture_clock_behind_monotonic)
{
	/* perf time 2 s while CLOCK_MONOTONIC says 9 s */
	struct rv_perf_time_conv tc = conversion(6000000000ull, 2000000000ull);
	struct rv_pt_clock_pair pair = { 9000000000ull - 10, 6000000000ull, 9000000000ull + 10 };
	int64_t offset = rv_pt_clock_offset(&tc, &pair, 1, NULL);

	cr_assert_eq(offset, -7000000000ll);
	cr_assert_eq(rv_pt_clock_from_monotonic(9500000000ull, offset), 2500000000ull);
	/* a time from before the capture's clock began stays at its zero */
	cr_assert_eq(rv_pt_clock_from_monotonic(1000, offset), 0);
}

Test(pt_windows, no_usable_pair)
{
	struct rv_perf_time_conv tc = conversion(0, 0);
	struct rv_pt_clock_pair backwards = { 100, 300, 50 };
	uint64_t spread = 0;

	cr_assert_eq(rv_pt_clock_offset(&tc, &backwards, 1, &spread), 0);
	cr_assert_eq(spread, UINT64_MAX);
	cr_assert_eq(rv_pt_clock_offset(&tc, NULL, 0, &spread), 0);
	cr_assert_eq(spread, UINT64_MAX);
}

Test(pt_windows, first_of_equally_tight_pairs)
{
	/* 1 ns per tick from perf time 0 */
	struct rv_perf_time_conv tc = conversion(0, 0);
	struct rv_pt_clock_pair pairs[] = {
		{ 1000, 3000, 1010 }, /* perf time 1000 at monotonic 1005 */
		{ 2000, 9000, 2010 }, /* as tight, later: not taken */
	};
	int64_t offset = rv_pt_clock_offset(&tc, pairs, 2, NULL);

	cr_assert_eq(offset, -5, "offset %lld", (long long)offset);
}
