/* program_counts.h: the counts the PT target programs (tests/pt) print about
 * themselves, checked against a trace.
 *
 * A program prints "count F N" when it called F N times, and "entered F N"
 * when F was entered N times without a call (a signal handler). A trace of a
 * whole run must hold exactly N spans of F either way.
 */
#ifndef RV_TESTS_PROGRAM_COUNTS_H
#define RV_TESTS_PROGRAM_COUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "fxt_reader.h"

/* Whether a span named trace_name (demangled) is function `name` (as the
 * program prints it, or as perf prints it: mangled, "+0x.." after it). */
bool pc_same_function(const char *trace_name, const char *name);

/* Checks every count line of program_output against t's spans. Returns the
 * lines checked (0: the output had none), or -1 with the first mismatch
 * described in why. */
long pc_check_trace(const char *program_output, const struct fxt_trace *t, char *why,
		    size_t why_size);

#endif
