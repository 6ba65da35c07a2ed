/* probe_summary.c: the probes' cost in a traced run's summary; see
 * probe_summary.h. */
#include "render/probe_summary.h"
#include "util/count_text.h"

#include <inttypes.h>
#include <string.h>

static const char *time_text(double ns, char *buf, size_t size)
{
	if (ns >= 1e10)
		snprintf(buf, size, "%.1f s", ns / 1e9);
	else if (ns >= 1e9)
		snprintf(buf, size, "%.3f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, size, "%.1f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, size, "%.1f us", ns / 1e3);
	else
		snprintf(buf, size, "%.0f ns", ns);
	return buf;
}

/* name as one shell word: in single quotes, a quote in it as '\'' */
static void print_quoted(FILE *out, const char *name)
{
	fputc('\'', out);
	for (const char *c = name; *c; c++) {
		if (*c == '\'')
			fputs("'\\''", out);
		else
			fputc(*c, out);
	}
	fputc('\'', out);
}

double rv_probe_summary_overhead_ns(const struct rv_probe_summary *s)
{
	return s->ns_per_call > 0 ? (double)s->calls * s->ns_per_call : 0;
}

static void print_overhead(FILE *out, const struct rv_probe_summary *s)
{
	double overhead = rv_probe_summary_overhead_ns(s);
	double percent = s->recorded_ns ? 100.0 * overhead / (double)s->recorded_ns : 0;
	char total[32], span[32], calls[32], each[32];

	time_text(overhead, total, sizeof(total));
	time_text((double)s->recorded_ns, span, sizeof(span));
	rv_count_text(s->calls, calls, sizeof(calls));
	time_text(s->ns_per_call, each, sizeof(each));
	fprintf(out, "rearview: probe overhead: at least %s", total);
	if (s->recorded_ns)
		fprintf(out, ", %.0f%% of the %s recorded", percent, span);
	if (s->threads > 1)
		fprintf(out, " (summed over %" PRIu64 " threads)", s->threads);
	fprintf(out,
		" (%s calls x %s, what a bare probe pair costs on this machine, measured at start; "
		"recording each call adds more); the times below include it\n",
		calls, each);
	if (percent > RV_PROBE_SUMMARY_DOMINANT_PERCENT)
		fprintf(out,
			"rearview: warning: the probes took at least %.0f%% of this run: the "
			"functions' times say more about the probes than about the program; "
			"trace fewer functions%s\n",
			percent,
			s->return_sites
				? ", or, if the program neither throws C++ exceptions nor walks or "
				  "switches its own stack, try --exits uretprobe, whose returns "
				  "the "
				  "kernel does not single-step (on a VM a single step can cost "
				  "tens of "
				  "microseconds)"
				: "");
}

static void print_hints(FILE *out, const struct rv_probe_summary *s)
{
	size_t hints = 0;

	if (!s->covered_ns)
		return;
	for (size_t i = 0; i < s->nr_most_called && hints < RV_PROBE_SUMMARY_MAX_HINTS; i++) {
		const struct rv_top_function *f = &s->most_called[i];
		double rate = (double)f->calls * 1e9 / (double)s->covered_ns;
		char per_second[32];

		if (rate <= RV_PROBE_SUMMARY_HOT_RATE || f->calls < RV_PROBE_SUMMARY_HOT_CALLS)
			continue;
		rv_count_text((uint64_t)rate, per_second, sizeof(per_second));
		fprintf(out,
			"rearview: hint: %s was called %s times a second: narrow --functions, or "
			"leave it out with --exclude ",
			f->name, per_second);
		print_quoted(out, f->name);
		fputc('\n', out);
		hints++;
	}
}

void rv_probe_summary_print(FILE *out, const struct rv_probe_summary *s)
{
	if (s->calls && s->ns_per_call > 0)
		print_overhead(out, s);
	print_hints(out, s);
}
