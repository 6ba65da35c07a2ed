/* record_fn.h: a recording session on the function tracer (--backend
 * uprobe): the functions --functions selects get a uprobe and a uretprobe
 * each, the --kernel-events tracepoints and --kernel-functions probes are
 * attached for the target's threads, and every record goes through the
 * sampling engine's bpf-output events into a perf.data capture (the event
 * RV_FN_EVENT_NAME), with the gate's --filter/--trigger/--min-duration
 * policy applied as for sampling. When snapshots are wanted (--trigger,
 * --min-duration, not --full-execution) records are kept instead in the
 * tracer's per-thread flight recorder in BPF maps, and each snapshot takes
 * its records from there (recorder mode; -v says which mode). The capture is rendered as `rearview
 * decode` renders it.
 *
 * Not here: choosing the engine (record.c), the BPF side (bpf/
 * functions.bpf.c), or decoding the records (src/decode).
 */
#ifndef RV_CMD_RECORD_FN_H
#define RV_CMD_RECORD_FN_H

#include <sys/types.h>

#include "cmd/record.h"
#include "record/dry_run.h"
#include "record/target.h"
#include "util/error.h"

/* What can be refused before a target exists: --kernel-functions on a
 * kernel that allows neither fentry/fexit nor kprobes (one line saying so),
 * or without root. */
int rv_session_check_fn(struct rv_session *s, struct rv_error *err);

/* Records target until it exits, the user interrupts or a snapshot ends it,
 * then writes the trace. */
int rv_session_record_fn(struct rv_session *s, struct rv_target *target, struct rv_error *err);

/* --dry-run: the bpf-output events, every uprobe (file, offset, function),
 * the tracepoints and kernel-function probes, the programs and maps, for
 * the program at exe (pid 0: not started). */
int rv_session_describe_fn(struct rv_session *s, const char *exe, pid_t pid,
			   struct rv_dry_run_plan *plan, struct rv_error *err);

#endif
