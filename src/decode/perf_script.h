/* perf_script.h: the import of `perf script` text, for traces recorded on
 * another machine. What is read:
 *
 * - Intel PT branches, as magic-trace asks for them:
 *
 *     perf script --itrace=be -F pid,tid,time,flags,ip,addr,sym,symoff,dso
 *
 *   (--ns times or not, a comm and a cpu field, and the event, period and
 *   synth fields are accepted too, as are --itrace=bep's power events). Each
 *   line of the "branches" event becomes an RV_EVENT_BRANCH with both ends'
 *   symbol names, function starts (ip - symoff) and DSOs taken from the text;
 *   "instruction trace error" lines become RV_EVENT_TRACE_ERROR.
 * - Sampled call stacks, what `perf script` prints for `perf record -g`
 *   (--call-graph fp, dwarf or lbr): a header line "COMM PID/TID [CPU]
 *   TIME: PERIOD EVENT:" (each field optional but TIME), then one line per
 *   frame, leaf first, "\t ADDR SYM+0xOFF (DSO)", then a blank line. A sample
 *   of a sampling event (cpu-clock, task-clock, cycles, cpu-cycles,
 *   ref-cycles, with any ":u"-like modifiers) becomes an RV_EVENT_STACK_SAMPLE
 *   whose frames carry the names the text gives (the addresses are another
 *   machine's: frame.sym is always set); one printed without a call chain
 *   (ip, sym and dso on the header line) is a stack of that one frame.
 * - Samples of other events (branch-misses, cache-misses, instructions,
 *   tracepoints, ...) and power events (cbr, mwait, pwre, exstop, pwrx)
 *   become RV_EVENT_EXTRA instants named after the event as perf prints it,
 *   without the colon ("branch-misses:u", "cbr"); ip is the first address
 *   the line (or the first frame) gives, 0 when none.
 *
 * A file may hold all of these: "branches" samples are branches, samples of
 * the sampling events stacks, the rest instants. A thread with both branches
 * and stacks gets both, one after the other, on its track.
 *
 * Not drawn, counted: "psb" lines, samples of a sampling event whose call
 * chain is empty (perf printed no frame), blank lines, "#" comment lines.
 *
 * perf's quirks, read as perf meant them:
 * - an offset larger than its address ("memcpy@plt+0xffffffffff22f000",
 *   perf's garbage-offset bug) is an unknown offset: sym is kept and
 *   sym_start is 0 (trace/builder.h then tells the function by its name),
 *   as for a name printed without its offset;
 * - an "instruction trace error" without "time" (or with "time 0") takes the
 *   time of the last line before it that had one (0 when none had);
 * - a symbol name holding " => " (C++ operators, lambdas, Rust closures):
 *   the branch's sides are split at perf's own separator, the " => " that is
 *   followed by the address field (printed %16 wide) and preceded by the
 *   source's "(DSO)";
 * - a last line that ends without a newline and cannot be read is counted as
 *   cut (stats.cut), not as a bad line.
 *
 * A line that cannot be read (and is not the cut last line) is skipped and
 * counted (stats.bad); the first RV_PERF_SCRIPT_NOTED of them are noted
 * with their line number and what was expected there. Only a read error, a
 * line longer than 16 MiB or memory running out end the import.
 *
 * Time: events come out in the file's order, with their times clamped so
 * that each thread's never go back: an event older than its thread's last
 * one (a shuffled or merged file) is given that last time and counted
 * (stats.backwards, the first lines noted). Nothing is reordered: stacks so
 * taken make the thread's earlier sample last until then, and branches
 * taken out of order make wrong call stacks whatever their time, so the
 * count is there to be reported.
 *
 * Not here: call stacks (trace/builder.h).
 */
#ifndef RV_DECODE_PERF_SCRIPT_H
#define RV_DECODE_PERF_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "decode/events.h"
#include "util/error.h"

struct rv_perf_script;

/* Reads from `in` (not closed); `name` is for messages ("branches.txt"). */
int rv_perf_script_open(struct rv_perf_script **out, FILE *in, const char *name,
			struct rv_error *err);

/* 1 and *ev set; 0 at the end; negative on a read error, a line longer than
 * 16 MiB or no memory, which end the import (every later call returns the
 * same error). Lines that cannot be read are skipped and counted, never
 * returned as errors. Strings and frames in *ev stay valid until the next
 * call (frames) or until the importer is freed (strings: names are
 * interned, one pointer per distinct name).
 *
 * What a branch line gives:
 * - pid, tid from "PID/TID" (-1 becomes UINT32_MAX; a lone number, perf's
 *   default tid field, is both); time in nanoseconds from
 *   "SECONDS.FRACTION:" (6 or 9 digits: with or without --ns).
 * - branch.kind from the flags word (call, return, jcc, jmp, syscall,
 *   sysret, int, hw int, iret, tx abrt; RV_BRANCH_NONE for "tr strt",
 *   "tr end", "tr strt tr end" and "async" alone); branch.flags: "tr strt"
 *   TRACE_BEGIN, "tr end" TRACE_END, "async" and "hw int" ASYNC, "(x)" IN_TX.
 * - from = the ip side, to = the addr side. On each: ip; sym the name
 *   without "+0xOFF" and sym_start = ip - OFF; sym_start 0 (unknown: the
 *   builder knows the function by its name) when the offset is larger than
 *   ip or the text gives none (-F without symoff, perf's default); when the
 *   text says "[unknown]", sym is "[unknown]" and sym_start = ip; sym NULL
 *   and sym_start 0 when there is no symbol field. dso is the text in the
 *   final parentheses, NULL when absent or "[unknown]".
 * An error line gives pid, tid, time (see above), error.ip, error.message
 * (perf's text after "code N: "), error.offset UINT64_MAX, and
 * error.overflow when the message says "Overflow packet".
 * A stack sample gives pid, tid, time, stack.frames leaf first (addr as
 * printed, sym the name without its offset, "[unknown]" where perf knew
 * none; kernel when the DSO is "[kernel.kallsyms]"-like or addr is a kernel
 * address; is_ip on the leaf), stack.interval_ns = the period for
 * cpu-clock and task-clock (nanoseconds), else 1 ms; switches_recorded
 * false. At most 1024 frames are kept, the outermost dropped.
 * An extra sample gives pid, tid, time, extra.name, ip, kernel, count (the
 * period, 1 when not printed) and cpu (0 when not printed). */
int rv_perf_script_next(struct rv_perf_script *p, struct rv_event *ev, struct rv_error *err);

/* Bad lines and lines that went back in time noted, at most. */
#define RV_PERF_SCRIPT_NOTED 3
/* Names of the events of lines not drawn noted, at most. */
#define RV_PERF_SCRIPT_NAMES 4

struct rv_perf_script_stats {
	const char *name;	 /* the text's, as given to open: lives as long as it */
	uint64_t lines;		 /* every line read, whatever it held */
	uint64_t branches;	 /* RV_EVENT_BRANCH returned */
	uint64_t errors;	 /* RV_EVENT_TRACE_ERROR returned */
	uint64_t samples;	 /* RV_EVENT_STACK_SAMPLE returned */
	uint64_t frames;	 /* frame lines read into them */
	uint64_t extra;		 /* RV_EVENT_EXTRA returned */
	uint64_t not_drawn;	 /* lines of events not drawn (psb, empty call chains) */
	uint64_t skipped;	 /* blank and comment lines */
	uint64_t bad;		 /* lines that could not be read, skipped */
	uint64_t backwards;	 /* events older than their thread's last: given its time */
	uint64_t bad_offsets;	 /* symbol offsets larger than their address */
	uint64_t untimed_errors; /* trace errors that took the previous line's time */
	bool cut;		 /* the last line ended without a newline, unreadable */
	uint64_t cut_line;	 /* its number */
	/* the first bad lines: number and what was expected (a static string) */
	struct {
		uint64_t line;
		const char *expected;
	} bad_at[RV_PERF_SCRIPT_NOTED];
	uint64_t backwards_at[RV_PERF_SCRIPT_NOTED]; /* the first lines back in time */
	/* the events of the lines not drawn, as the text names them ("psb");
	 * they live as long as the importer */
	const char *not_drawn_names[RV_PERF_SCRIPT_NAMES];
	size_t nr_not_drawn_names;
};
void rv_perf_script_stats(const struct rv_perf_script *p, struct rv_perf_script_stats *out);

/* 0 when the import returned an event; else a negative error whose message
 * says what the text held ("'x.txt': 6799 lines: 0 branches, 0 samples, ...")
 * and the perf script command lines whose output it reads. Call at the
 * end. */
int rv_perf_script_check_any(const struct rv_perf_script *p, struct rv_error *err);

void rv_perf_script_free(struct rv_perf_script *p);

#endif
