/* test_dry_run_gate.c: the gate's section of --dry-run (rv_dry_run_print_gate):
 * each role, which hits fire, and --min-duration in numbers and words. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/dry_run.h"

static char *print_gate(const struct rv_dry_run_gate *gate)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	cr_assert_not_null(f);
	rv_dry_run_print_gate(f, gate);
	fclose(f);
	return text;
}

Test(dry_run_gate, filter_alone_keeps_every_window)
{
	struct rv_dry_run_gate gate = { .start = "request_begin", .stop = "request_end" };
	char *text = print_gate(&gate);

	cr_expect(strstr(text, "\ngate ("), "%s", text);
	cr_expect(strstr(text, "START at request_begin: fires on a thread's hit outside a window"),
		  "%s", text);
	cr_expect(strstr(text, "STOP at request_end: fires on the hit that closes"), "%s", text);
	cr_expect(strstr(text, "min_duration = 0 (none): every window is kept"), "%s", text);
	cr_expect_null(strstr(text, "TRIGGER"), "%s", text);
	cr_expect_null(strstr(text, "--min-duration sample"), "%s", text);
	free(text);
}

Test(dry_run_gate, min_duration_in_numbers_and_words)
{
	struct rv_dry_run_gate gate = {
		.start = "request_begin",
		.stop = "request_end",
		.min_duration_ns = 300000,
	};
	char *text = print_gate(&gate);

	cr_expect(strstr(text, "min_duration = 300000 ns (300us)\n"), "%s", text);
	cr_expect(strstr(text, "lasted more than 300000 ns (300us), on the first such window "
			       "(only that one in the whole recording)"),
		  "%s", text);
	cr_expect(strstr(text, "recording ends there; windows of 300us or less are dropped"), "%s",
		  text);
	free(text);

	gate.multi_snapshot = true;
	gate.min_duration_ns = 2500;
	text = print_gate(&gate);
	cr_expect(strstr(text, "min_duration = 2500 ns (2500ns)\n"), "%s", text);
	cr_expect(strstr(text, "on every such window: that window is a snapshot, and recording "
			       "goes on (--multi-snapshot)"),
		  "%s", text);
	free(text);

	gate.min_duration_ns = 2000000000;
	text = print_gate(&gate);
	cr_expect(strstr(text, "(2s)"), "%s", text);
	free(text);
}

Test(dry_run_gate, trigger_fires_on_the_first_hit_or_every_hit)
{
	struct rv_dry_run_gate gate = { .trigger = "on_trigger" };
	char *text = print_gate(&gate);

	cr_expect(strstr(text, "TRIGGER at on_trigger: fires on the first hit (only that one in "
			       "the whole recording)"),
		  "%s", text);
	cr_expect(strstr(text, "recording ends there"), "%s", text);
	cr_expect_null(strstr(text, "START"), "%s", text);
	free(text);

	gate.multi_snapshot = true;
	gate.trigger = "";
	text = print_gate(&gate);
	cr_expect(strstr(text, "TRIGGER at ?: fires on every hit, by any thread"), "%s", text);
	cr_expect(strstr(text, "recording goes on (--multi-snapshot)"), "%s", text);
	free(text);
}

Test(dry_run_gate, intel_pt_paused_at_stop_and_at_the_trigger)
{
	struct rv_dry_run_gate gate = {
		.start = "request_begin",
		.stop = "request_end",
		.min_duration_ns = 300000,
		.pt_pause = true,
	};
	char *text = print_gate(&gate);

	cr_expect_null(strstr(text, "--min-duration sample"), "no AUX sample:\n%s", text);
	cr_expect(strstr(text, "pauses Intel PT at every window's close; a window that lasted "
			       "more than 300000 ns (300us) is kept"),
		  "%s", text);
	cr_expect(strstr(text, "the next START resumes over it"), "%s", text);
	free(text);

	gate = (struct rv_dry_run_gate){ .trigger = "on_trigger", .pt_pause = true };
	text = print_gate(&gate);
	cr_expect(strstr(text, "a snapshot of what came before it (Intel PT paused at the hit, "
			       "its buffer copied whole)"),
		  "%s", text);
	free(text);
}
