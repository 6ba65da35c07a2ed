/* softpt_reference.h: softpt runs for the PT tests. One of tests/pt/recursion
 * read back as what the PT engine's simulated-kernel tests replay: its one
 * trace buffer, the PT and sideband attrs, the AUXTRACE_INFO and TIME_CONV
 * records, the CPUID feature and the executable mappings as /proc/PID/maps
 * lines; and one run of a tests/pt program captured at several settings at
 * once, the decoders' tests' material. For Criterion tests only: failures
 * are test assertions.
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

/* One capture of a multi-setting run. */
struct softpt_setting {
	const char *name; /* its directory in the run's */
	const char *args; /* softpt's options for it (before its -o) */
};

/* Runs build/softpt -q once on build/tests/pt/PROGRAM, writing a capture at
 * each of the n settings to DIR/NAME in a new directory DIR =
 * /tmp/PREFIX-XXXXXX (softpt's output in DIR/out.txt), DIR's path in dir.
 * The settings are each stride bytes after the one before, so that a table
 * of larger structs, each beginning with its softpt_setting, serves as it
 * is. Skips the test (fails it under CI) when softpt or PROGRAM is not
 * built. The caller removes DIR (remove_tree). */
void softpt_run_settings(const char *program, const struct softpt_setting *settings, size_t n,
			 size_t stride, const char *prefix, char *dir, size_t dir_size);

#endif
