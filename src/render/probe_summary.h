/* probe_summary.h: what the summary of a traced run (--backend uprobe) says
 * about the probes' own cost, which every traced call's time includes:
 *
 *   rearview: probe overhead: at least 2.910 s, 58% of the 5.012 s recorded
 *     (100,000 calls x 29.1 us, what a bare probe pair costs on this machine,
 *     measured at start; recording each call adds more); the times below
 *     include it
 *   rearview: warning: the probes took at least 58% of this run: ... (with
 *     return-site probes, also: --exits uretprobe may cost less a call)
 *   rearview: hint: fib was called 312,000 times a second: narrow
 *     --functions, or leave it out with --exclude 'fib'
 *
 * (each one line). The overhead is calls x the calibration's cost
 * (record/probe_cost.h), a floor: the tracer's programs do more than the
 * calibration's. Its share is of the recording's time; with several threads
 * the overhead is summed over them and the line says so. The warning comes when
 * the share is over RV_PROBE_SUMMARY_DOMINANT_PERCENT, the hint for each of
 * the most-called functions (up to three) called more than
 * RV_PROBE_SUMMARY_HOT_RATE times a second over the span, and at least
 * RV_PROBE_SUMMARY_HOT_CALLS times (a short run's rate says little).
 *
 * Not here: measuring the cost (record/probe_cost.h), counting calls (the
 * builder), the rest of the summary (render.c).
 */
#ifndef RV_RENDER_PROBE_SUMMARY_H
#define RV_RENDER_PROBE_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include "trace/builder.h"

#define RV_PROBE_SUMMARY_HOT_RATE	  100000.0 /* calls a second */
#define RV_PROBE_SUMMARY_DOMINANT_PERCENT 50.0	   /* of the span */
#define RV_PROBE_SUMMARY_HOT_CALLS	  10000
#define RV_PROBE_SUMMARY_MAX_HINTS	  3

struct rv_probe_summary {
	uint64_t calls;	      /* calls probed while recording (a flight recorder keeps fewer) */
	double ns_per_call;   /* the calibration's cost of a probe pair; 0: not measured */
	uint64_t recorded_ns; /* how long it recorded: the share's whole */
	uint64_t covered_ns;  /* the trace's span: the hints' rates are over it */
	uint64_t threads;
	/* exits probed at the return sites: the warning then also names
	 * --exits uretprobe, cheaper where the kernel's single steps are slow */
	bool return_sites;
	/* the most-called functions, most first (rv_builder_most_called) */
	const struct rv_top_function *most_called;
	size_t nr_most_called;
};

/* The overhead in ns: calls x ns_per_call (0 when not measured). */
double rv_probe_summary_overhead_ns(const struct rv_probe_summary *s);

/* Writes the lines above to out: nothing about the overhead when the cost
 * was not measured or there were no calls; the hints whenever a function is
 * hot (they need no calibration). */
void rv_probe_summary_print(FILE *out, const struct rv_probe_summary *s);

#endif
