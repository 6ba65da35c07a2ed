/* test_probe_summary.c: what a traced run's summary says of the probes'
 * cost (render/probe_summary.h): the overhead line with calls x the measured
 * cost and its share, the warning when the probes took most of the run, and
 * a hint naming each function called more than 100k times a second, none
 * below.
 *
 * Not here: measuring the cost (test_probe_cost.c), a whole run's summary
 * (tests/e2e/test_functions.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/probe_summary.h"

/* The summary's text for s, malloc'd. */
static char *summary_text(const struct rv_probe_summary *s)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	cr_assert_not_null(out);
	rv_probe_summary_print(out, s);
	cr_assert_eq(fclose(out), 0);
	return text;
}

static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0;

	for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
		cr_assert_not_null(strchr(line, '\n'), "every line ends: %s", text);
		n += !strncmp(line, prefix, strlen(prefix));
	}
	return n;
}

Test(probe_summary, says_calls_times_the_cost_and_its_share)
{
	struct rv_top_function most[] = { { "work", 0, 40000, false } }; /* 20k a second */
	struct rv_probe_summary s = {
		.calls = 100000,
		.ns_per_call = 1500,
		.recorded_ns = 2000000000ull,
		.covered_ns = 2000000000ull, /* 2 s: 150 ms is 7.5% of it */
		.threads = 1,
		.most_called = most,
		.nr_most_called = 1,
	};
	char *text = summary_text(&s);

	cr_assert_float_eq(rv_probe_summary_overhead_ns(&s), 1.5e8, 1);
	cr_assert_str_eq(text,
			 "rearview: probe overhead: at least 150.0 ms, 8% of the 2.000 s recorded "
			 "(100,000 calls x 1.5 us, what a bare probe pair costs on this machine, "
			 "measured at start; recording each call adds more); the times below "
			 "include it\n");
	free(text);
}

Test(probe_summary, names_the_threads_it_sums_over)
{
	struct rv_probe_summary s = { .calls = 4000000,
				      .ns_per_call = 1000,
				      .recorded_ns = 1000000000ull,
				      .covered_ns = 1000000000ull,
				      .threads = 4 };
	char *text = summary_text(&s);

	cr_assert(strstr(text, "at least 4.000 s, 400% of the 1.000 s recorded (summed over 4 "
			       "threads) (4,000,000 calls x 1.0 us"),
		  "%s", text);
	free(text);
}

Test(probe_summary, warns_when_the_probes_took_most_of_the_run)
{
	struct rv_probe_summary s = { .calls = 1000,
				      .ns_per_call = 30000,
				      .recorded_ns = 50000000ull,
				      .covered_ns = 50000000ull,
				      .threads = 1 };
	char *text = summary_text(&s);

	/* 1000 x 30 us = 30 ms of 50 ms */
	cr_assert(strstr(text, "at least 30.0 ms, 60% of the 50.0 ms recorded"), "%s", text);
	cr_assert_eq(count_lines(text, "rearview: warning: the probes took at least 60% of this "
				       "run"),
		     1, "%s", text);
	cr_assert(!strstr(text, "--exits uretprobe"), "uretprobes already: %s", text);
	free(text);
	s.return_sites = true; /* single-stepped returns: the cheaper way is named */
	text = summary_text(&s);
	cr_assert(strstr(text, "trace fewer functions, or, if the program neither throws C++ "
			       "exceptions"),
		  "%s", text);
	cr_assert(strstr(text, "try --exits uretprobe"), "%s", text);
	free(text);
	s.ns_per_call = 20000; /* 40%: no warning */
	text = summary_text(&s);
	cr_assert_eq(count_lines(text, "rearview: warning:"), 0, "%s", text);
	free(text);
}

Test(probe_summary, hints_at_functions_called_over_100k_times_a_second)
{
	struct rv_top_function most[] = {
		{ "std::mt19937::operator()", 0, 3000000, false }, /* 1.5M a second */
		{ "fib", 0, 200002, false },			   /* just over 100k */
		{ "work", 0, 199998, false },			   /* just under */
		{ "main", 0, 1, false },
	};
	struct rv_probe_summary s = {
		.calls = 3400001,
		.ns_per_call = 1200,
		.recorded_ns = 2000000000ull,
		.covered_ns = 2000000000ull,
		.threads = 1,
		.most_called = most,
		.nr_most_called = 4,
	};
	char *text = summary_text(&s);

	cr_assert(strstr(text, "rearview: hint: std::mt19937::operator() was called 1,500,000 "
			       "times a second: narrow --functions, or leave it out with "
			       "--exclude 'std::mt19937::operator()'\n"),
		  "%s", text);
	cr_assert(strstr(text, "rearview: hint: fib was called 100,001 times a second: narrow "
			       "--functions, or leave it out with --exclude 'fib'\n"),
		  "%s", text);
	cr_assert_eq(count_lines(text, "rearview: hint:"), 2, "%s", text);
	cr_assert_null(strstr(text, "work"), "%s", text);
	free(text);
}

Test(probe_summary, no_hint_below_the_rate_or_in_a_short_run)
{
	struct rv_top_function most[] = { { "fib", 0, 9999, false } }; /* 10M a second, 1 ms */
	struct rv_probe_summary s = {
		.calls = 9999,
		.ns_per_call = 1000,
		.recorded_ns = 1000000ull,
		.covered_ns = 1000000ull,
		.threads = 1,
		.most_called = most,
		.nr_most_called = 1,
	};
	char *text = summary_text(&s);

	cr_assert_eq(count_lines(text, "rearview: hint:"), 0, "%s", text);
	free(text);
	most[0].calls = 100000; /* exactly 100k a second over 1 s: not more */
	s.covered_ns = 1000000000ull;
	text = summary_text(&s);
	cr_assert_eq(count_lines(text, "rearview: hint:"), 0, "%s", text);
	free(text);
}

Test(probe_summary, a_quote_in_a_name_stays_one_shell_word)
{
	struct rv_top_function most[] = { { "it's", 0, 1000000, false } };
	struct rv_probe_summary s = { .recorded_ns = 1000000000ull,
				      .covered_ns = 1000000000ull,
				      .threads = 1,
				      .most_called = most,
				      .nr_most_called = 1 };
	char *text = summary_text(&s);

	cr_assert(strstr(text, "--exclude 'it'\\''s'\n"), "%s", text);
	free(text);
}

Test(probe_summary, nothing_of_the_overhead_when_it_was_not_measured)
{
	struct rv_probe_summary s = { .calls = 5000,
				      .recorded_ns = 1000000000ull,
				      .covered_ns = 1000000000ull,
				      .threads = 1 };
	char *text = summary_text(&s);

	cr_assert_str_eq(text, "");
	cr_assert_eq(rv_probe_summary_overhead_ns(&s), 0);
	free(text);
}
