/* perf_script.h: the import of Intel PT branches as `perf script` prints
 * them, for traces decoded on another machine:
 *
 *   perf script --itrace=be -F pid,tid,time,flags,ip,addr,sym,symoff,dso
 *
 * (the form magic-trace consumes; --ns times, a cpu field, and the extra
 * fields magic-trace asks for, synth, event and period, are accepted too, as
 * are --itrace=bep's power events). Each branch line becomes an
 * RV_EVENT_BRANCH with both ends' symbol names, function starts
 * (ip - symoff) and DSOs taken from the text; "instruction trace error" lines
 * become RV_EVENT_TRACE_ERROR; "psb", cbr and other synthesized lines, and
 * samples of events other than "branches", are skipped; lines that continue
 * a sample's call chain (tab-led lines) and blank lines are skipped. A line
 * that cannot be parsed is an error naming its line number and what was
 * expected.
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
 * importer is freed (names are interned: one pointer per distinct name).
 *
 * After a line that cannot be parsed, the next call goes on with the line
 * after it, so a caller may count bad lines and continue; a read error or a
 * line longer than 16 MiB ends the import (every later call returns it).
 *
 * What a branch line gives:
 * - pid, tid from "PID/TID" (-1 becomes UINT32_MAX); time in nanoseconds
 *   from "SECONDS.FRACTION:" (6 or 9 digits: with or without --ns).
 * - branch.kind from the flags word (call, return, jcc, jmp, syscall,
 *   sysret, int, hw int, iret, tx abrt; RV_BRANCH_NONE for "tr strt",
 *   "tr end", "tr strt tr end" and "async" alone); branch.flags: "tr strt"
 *   TRACE_BEGIN, "tr end" TRACE_END, "async" and "hw int" ASYNC, "(x)" IN_TX.
 * - from = the ip side, to = the addr side. On each: ip; sym the name
 *   without "+0xOFF" and sym_start = ip - OFF; when the text says
 *   "[unknown]" or gives no offset, sym is that text ("[unknown]") and
 *   sym_start = ip; sym NULL and sym_start 0 when there is no symbol field.
 *   dso is the text in the final parentheses, NULL when absent or
 *   "[unknown]".
 * An error line gives pid, tid, time (0 when perf printed "time 0"),
 * error.ip, error.message (perf's text after "code N: "), error.offset
 * UINT64_MAX, and error.overflow when the message says "Overflow packet". */
int rv_perf_script_next(struct rv_perf_script *p, struct rv_event *ev, struct rv_error *err);

/* lines: every line read, including skipped and rejected ones; branches and
 * errors: the events returned; skipped: lines that held no event. */
struct rv_perf_script_stats {
	uint64_t lines, branches, errors, skipped;
};
void rv_perf_script_stats(const struct rv_perf_script *p, struct rv_perf_script_stats *out);

void rv_perf_script_free(struct rv_perf_script *p);

#endif
