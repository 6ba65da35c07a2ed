/* gating.h: --filter, --trigger, --min-duration and --multi-snapshot in a
 * recording session.
 *
 * The sites the user named are resolved in the target's binaries, the gate
 * (record/gate.h) is set on them, and what it reports while the target runs
 * becomes marks in the capture (windows, trigger hits) and snapshots of the
 * sampling engine's flight recorder (filled first, for the function tracer's
 * recorder mode, from a source: rv_gating_set_source):
 *
 * - --filter START,STOP alone: the kernel keeps only samples taken inside a
 *   window; every window is marked, and the flight recorder is written at the
 *   end as without a filter.
 * - --min-duration DUR (with --filter): a window longer than DUR is a
 *   snapshot of its own samples, taken when it ends; the first one ends the
 *   recording, or, with --multi-snapshot, every one is kept. Shorter windows
 *   are dropped.
 * - --trigger WHAT: the first hit takes a snapshot of the flight recorder (the
 *   samples before it) and ends the recording; with --multi-snapshot every hit
 *   takes one, each a segment of the trace. If it never fires, the flight
 *   recorder is written at the end, with a note.
 *
 * Not here: the BPF side (bpf/gate.bpf.c), the engines, or the trace.
 */
#ifndef RV_CMD_GATING_H
#define RV_CMD_GATING_H

#include <stdbool.h>
#include <sys/types.h>

#include "cli/options.h"
#include "record/dry_run.h"
#include "record/probe_site.h"
#include "record/sample_engine.h"
#include "util/error.h"

struct rv_gating_sites {
	bool filter, trigger;
	struct rv_probe_site start, stop, at; /* at: the trigger */
};

/* Resolves the options' sites in exe (the target's executable; pid, when it
 * runs, for the libraries it has mapped). Nothing to resolve is not an error. */
int rv_gating_resolve(const struct rv_options *opts, const char *exe, pid_t pid,
		      struct rv_gating_sites *out, struct rv_error *err);

/* Whether the options ask for the gate at all. */
bool rv_gating_wanted(const struct rv_options *opts);

/* The gate's uprobe events and programs for --dry-run, as the sampling engine
 * would have them. */
int rv_gating_describe(const struct rv_options *opts, const struct rv_gating_sites *sites,
		       pid_t pid, struct rv_dry_run_plan *plan, struct rv_error *err);

struct rv_gating;

/* Loads the gate and arms its uprobes on process pid. */
int rv_gating_open(struct rv_gating **out, const struct rv_options *opts,
		   const struct rv_gating_sites *sites, pid_t pid, struct rv_error *err);

/* The gate's window map for the sampling filter; -1 without --filter. */
int rv_gating_windows_fd(const struct rv_gating *g);

/* A file descriptor that is readable when the gate has records. */
int rv_gating_fd(const struct rv_gating *g);

/* Reads the records the gate has (call it, then drain the engine, then
 * rv_gating_apply: a record's samples are then all in the engine). */
int rv_gating_collect(struct rv_gating *g, struct rv_error *err);

/* Where a snapshot's samples come from when they are not in the engine's
 * flight recorder yet (the function tracer's recorder, which keeps them in
 * BPF maps): called before every snapshot with its selection, to hand the
 * engine the samples it selects (rv_sample_engine_add_output). */
typedef int (*rv_gating_source_fn)(void *ctx, struct rv_sample_engine *e,
				   const struct rv_sample_selection *sel, struct rv_error *err);

void rv_gating_set_source(struct rv_gating *g, rv_gating_source_fn fn, void *ctx);

/* Acts on the collected records through the engine: marks and snapshots.
 * *done: the recording is complete (a snapshot that ends it was taken). */
int rv_gating_apply(struct rv_gating *g, struct rv_sample_engine *e, bool *done,
		    struct rv_error *err);

/* Whether the flight recorder's samples still belong in the capture at the
 * end: yes without snapshots asked for, or when none was ever taken for a
 * --trigger (then the end is the snapshot). */
bool rv_gating_keep_rest(const struct rv_gating *g);

/* Says, on stderr, what the gate saw (windows, hits, snapshots), once
 * recording is over. */
void rv_gating_report(const struct rv_gating *g);

/* Detaches the uprobes (the target keeps running, unprobed) and frees. */
void rv_gating_free(struct rv_gating *g);

#endif
