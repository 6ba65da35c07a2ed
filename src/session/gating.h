/* gating.h: --filter, --trigger, --min-duration and --multi-snapshot in a
 * recording session, the same for every backend.
 *
 * The sites the user named are resolved in the target's binaries, the gate
 * (record/gate.h) is loaded and set on them, and what it reports while the
 * target runs becomes, through the backend (struct rv_gating_actions), marks
 * in the capture (windows, trigger hits) and snapshots:
 *
 * - --filter START,STOP alone: the kernel keeps only what ran inside a
 *   window (the sampling filter and the function tracer drop the rest, Intel
 *   PT is paused outside them); every window is marked, and the end of the
 *   recording is written as without a filter.
 * - --min-duration DUR (with --filter): a window longer than DUR is a
 *   snapshot of its own, taken when it ends; the first one ends the
 *   recording, or, with --multi-snapshot, every one is kept. Shorter windows
 *   are not marked.
 * - --trigger WHAT: the first hit takes a snapshot of what came before it and
 *   ends the recording; with --multi-snapshot every hit takes one, each a
 *   segment of the trace. If it never fires, the end of the recording is
 *   written, with a note.
 *
 * Marks carry CLOCK_MONOTONIC times (the gate's clock); a backend whose
 * capture has another clock converts them.
 *
 * Not here: the BPF side (bpf/gate.bpf.c), the engines, or the trace.
 */
#ifndef RV_SESSION_GATING_H
#define RV_SESSION_GATING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture/marks.h"
#include "cli/options.h"
#include "record/dry_run.h"
#include "record/gate.h"
#include "record/probe_site.h"
#include "record/sample_engine.h"
#include "util/error.h"

/* Whether the options ask for the gate at all. */
bool rv_gating_wanted(const struct rv_options *opts);

/* Resolves the options' sites in exe (the target's executable; pid, when it
 * runs, for the libraries it has mapped). Nothing to resolve is not an error.
 * A '?' site (probe_site.h) is first chosen by the user from exe's functions
 * or source lines (record/picker.h; stop_fd as there), and the choice said on
 * stderr; options.c refused it already when there is no terminal. */
int rv_gating_resolve(const struct rv_options *opts, const char *exe, pid_t pid, int stop_fd,
		      struct rv_gate_sites *out, struct rv_error *err);

/* The gate's plain uprobe events and its program for --dry-run (the sampling
 * engine's and the function tracer's case). */
int rv_gating_describe(const struct rv_gate_sites *sites, pid_t pid, struct rv_dry_run_plan *plan,
		       struct rv_error *err);

struct rv_gating;

/* Loads the gate for process pid (nothing is probed yet), so that its window
 * map can be shared (rv_gating_windows_fd) before the backend's own BPF
 * objects load. pt_pause: Intel PT snapshots taken by pausing PT in the
 * kernel (record/pt_plan.h pause_snapshots): STOP keeps slow windows, and
 * each snapshot holds the gate until the backend copied it (the backend
 * calls rv_gating_release); only the windows the gate kept
 * (fired) are snapshots, each marked RV_MARK_FLAG_SNAPSHOT. */
int rv_gating_new(struct rv_gating **out, const struct rv_options *opts,
		  const struct rv_kernel_btf *btf, const struct rv_gate_sites *sites, pid_t pid,
		  bool pt_pause, struct rv_error *err);

/* The gate as gating drives it: record/gate.h's loader on the real kernel
 * (rv_gating_new), or one that keeps the same contract on a simulated
 * kernel (rv_gating_new_on: a test's, whose events are that kernel's and
 * whose records the test writes). Each function is the record/gate.h one
 * of the same name, ctx standing for the gate; free detaches and frees. */
struct rv_gating_gate_ops {
	void *ctx;
	int (*attach)(void *ctx, const struct rv_gate_site *sites, size_t nr_sites,
		      struct rv_error *err);
	int (*site_fd)(const void *ctx, size_t i);
	int (*windows_fd)(const void *ctx);
	int (*records_fd)(const void *ctx);
	int (*poll)(void *ctx, int timeout_ms, rv_gate_record_fn fn, void *fn_ctx,
		    struct rv_error *err);
	int (*release)(void *ctx, struct rv_error *err);
	int (*counts)(const void *ctx, struct rv_gate_counts *out, struct rv_error *err);
	void (*free)(void *ctx);
};

/* As rv_gating_new, with gate (copied; its free is called by
 * rv_gating_free, also when this fails) instead of loading the BPF gate. */
int rv_gating_new_on(struct rv_gating **out, const struct rv_options *opts,
		     const struct rv_gate_sites *sites, bool pt_pause,
		     const struct rv_gating_gate_ops *gate, struct rv_error *err);

/* Sets the gate's uprobes: the backend's events (Intel PT's, in its groups),
 * or with sites NULL one plain per-process event per site. Call once. */
int rv_gating_attach(struct rv_gating *g, const struct rv_gate_site *sites, size_t nr_sites,
		     struct rv_error *err);

const struct rv_gate_sites *rv_gating_sites(const struct rv_gating *g);

/* The perf event fd of the gate's site i (rv_gating_attach's order, owned
 * by the gate), or -1: for a backend that sends its samples elsewhere. */
int rv_gating_site_fd(const struct rv_gating *g, size_t i);

/* Clears the gate's hold (pt_pause): the snapshot is copied, START and
 * trigger hits may fire again (rv_gate_release). */
int rv_gating_release(struct rv_gating *g, struct rv_error *err);

/* The gate's window map for the backend's BPF filter; -1 without --filter. */
int rv_gating_windows_fd(const struct rv_gating *g);

/* A file descriptor that is readable when the gate has records. */
int rv_gating_fd(const struct rv_gating *g);

/* Reads the records the gate has. Call it, then drain the backend, then
 * rv_gating_apply: what ran before a record is then all in the backend. */
int rv_gating_collect(struct rv_gating *g, struct rv_error *err);

/* What a snapshot takes: the window's own samples (its thread, its time), or
 * everything before a trigger hit since the last snapshot. */
struct rv_gating_snapshot {
	bool trigger; /* a --trigger hit; else a --min-duration window */
	struct rv_sample_selection selection;
	pid_t tid;	  /* the thread that hit the trigger or closed the window */
	uint32_t cpu;	  /* the CPU it ran on */
	uint64_t time_ns; /* CLOCK_MONOTONIC of the hit */
};

/* What the backend does with the gate's decisions. */
struct rv_gating_actions {
	void *ctx;
	/* Writes mark (its time CLOCK_MONOTONIC) into the capture. */
	int (*mark)(void *ctx, const struct rv_mark *mark, struct rv_error *err);
	/* Takes a snapshot; *taken: the samples or records it wrote (0 when the
	 * kernel took it already). */
	int (*snapshot)(void *ctx, const struct rv_gating_snapshot *snapshot, size_t *taken,
			struct rv_error *err);
};

/* Acts on the collected records: marks and snapshots. *done: the recording
 * is complete (a snapshot that ends it was taken). */
int rv_gating_apply(struct rv_gating *g, const struct rv_gating_actions *actions, bool *done,
		    struct rv_error *err);

/* Whether the end of the recording still belongs in the capture: yes
 * without snapshots asked for, or when none was ever taken for a --trigger
 * (then the end is the snapshot). */
bool rv_gating_keep_rest(const struct rv_gating *g);

/* Says, on stderr, what the gate saw (windows, hits, snapshots, losses),
 * once recording is over. what_outside: what became of what ran outside the
 * windows ("samples outside them were dropped"). */
void rv_gating_report(const struct rv_gating *g, const char *what_outside);

/* Detaches the uprobes (the target keeps running, unprobed) and frees. */
void rv_gating_free(struct rv_gating *g);

#endif
