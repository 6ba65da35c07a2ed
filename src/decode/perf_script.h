/* perf_script.h: the import of Intel PT branches as `perf script` prints
 * them, for traces decoded on another machine:
 *
 *   perf script --itrace=be -F pid,tid,time,flags,ip,addr,sym,symoff,dso
 *
 * (the form magic-trace consumes; --ns times, and the extra fields magic-trace
 * asks for, synth, event and period, are accepted too). Each branch line
 * becomes an RV_EVENT_BRANCH with both ends' symbol names, function starts
 * (ip - symoff) and DSOs taken from the text; "instruction trace error" lines
 * become RV_EVENT_TRACE_ERROR; "psb" and cbr lines are skipped; lines that
 * start a sample's call chain (tab-led lines) are skipped. A line that cannot
 * be parsed is an error naming its line number and what was expected.
 *
 * Not here: call stacks (trace/builder.h).
 */
#ifndef RV_DECODE_PERF_SCRIPT_H
#define RV_DECODE_PERF_SCRIPT_H

#include <stdint.h>
#include <stdio.h>

#include "decode/events.h"
#include "util/error.h"

struct rv_perf_script;

/* Reads from `in` (not closed); `name` is for messages ("branches.txt"). */
int rv_perf_script_open(struct rv_perf_script **out, FILE *in, const char *name,
			struct rv_error *err);

/* 1 and *ev set; 0 at the end; negative on a line that cannot be parsed (err
 * names the line) or a read error. Strings in *ev stay valid until the
 * importer is freed (names are interned). */
int rv_perf_script_next(struct rv_perf_script *p, struct rv_event *ev, struct rv_error *err);

struct rv_perf_script_stats {
	uint64_t lines, branches, errors, skipped;
};
void rv_perf_script_stats(const struct rv_perf_script *p, struct rv_perf_script_stats *out);

void rv_perf_script_free(struct rv_perf_script *p);

#endif
