/* softpt_reference.h: a softpt run of tests/pt/recursion, read back as what
 * the PT engine's simulated-kernel tests replay: its one trace buffer, the
 * PT and sideband attrs, the AUXTRACE_INFO and TIME_CONV records, the CPUID
 * feature and the executable mappings as /proc/PID/maps lines. For
 * Criterion tests only: failures are test assertions.
 *
 * Not here: the simulated kernel (fake_kernel.h), decoding.
 */
#ifndef RV_TESTS_SOFTPT_REFERENCE_H
#define RV_TESTS_SOFTPT_REFERENCE_H

#include <limits.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"

struct softpt_reference {
	char dir[PATH_MAX]; /* softpt's output: perf.data, ground-truth.txt */
	uint8_t *trace;	    /* the one AUXTRACE buffer (malloc'd) */
	size_t trace_size;
	uint32_t pid; /* the traced thread */
	struct perf_event_attr pt_attr, sb_attr;
	struct rv_intel_pt_info info;
	struct rv_perf_time_conv tc;
	char cpuid[64];
	char maps[8192]; /* /proc/PID/maps lines from its MMAP2 records */
};

/* Runs build/softpt -q on build/tests/pt/recursion into a new directory
 * /tmp/PREFIX-XXXXXX (stdout and stderr in softpt.out and softpt.err there)
 * and reads its capture into *ref. */
void softpt_reference_make(struct softpt_reference *ref, const char *prefix);

/* Removes the directory and frees the trace. */
void softpt_reference_free(struct softpt_reference *ref);

#endif
