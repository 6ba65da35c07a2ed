/* fn_plan.h: what a function-tracing recording (--backend uprobe) asks of
 * its engines, decided from the command line before anything is opened:
 * whether records wait in the tracer's per-thread flight recorder for
 * snapshots (recorder mode) and for how many threads, the kernel events
 * asked for, and the sampling engine's bpf-output configuration that carries
 * the records (its flight recorder large enough for what a snapshot takes).
 *
 * Not here: which functions (fn_select.h), placing the probes
 * (fn_engine.h), the session (session/fn_backend.c).
 */
#ifndef RV_RECORD_FN_PLAN_H
#define RV_RECORD_FN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/options.h"
#include "record/sample_engine.h"

/* Whether records go to the per-thread flight recorder in BPF maps: when
 * snapshots are wanted (--trigger, --min-duration) and not everything is. */
bool rv_fn_plan_recorder_mode(const struct rv_options *opts);

/* The recorder's slots: one per process, or RV_FN_PLAN_RECORDER_THREADS with
 * --multi-thread, at most RV_FN_RECORDER_MAX_SLOTS; 0 outside recorder mode. */
uint32_t rv_fn_plan_recorder_slots(const struct rv_options *opts, size_t nr_pids);

#define RV_FN_PLAN_RECORDER_THREADS 256

/* --kernel-events as the tracer's RV_FN_EVENTS_* bits. */
unsigned rv_fn_plan_kernel_events(const struct rv_options *opts);

/* Whether the processes the target forks are traced too: `run` without
 * --no-follow (forks only: a child that execs is no longer traced). */
bool rv_fn_plan_follows(const struct rv_options *opts);

/* The bpf-output events' configuration for pids (NULL, 0: --dry-run);
 * snapshot_size_bytes is --snapshot-size or the default. */
struct rv_sample_config rv_fn_plan_engine_config(const struct rv_options *opts,
						 uint64_t snapshot_size_bytes, const pid_t *pids,
						 size_t nr_pids);

#endif
