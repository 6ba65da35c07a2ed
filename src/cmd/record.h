/* record.h: one recording session, shared by `run` and `attach`: check the
 * options against the machine, set up the engine around a target, record
 * until the target exits or the user interrupts, keep the capture, render it.
 * The sampling session lives in record.c; the Intel PT one in record_pt.c and
 * the function tracer's in record_fn.c, which share the pieces at the end.
 *
 * Not here: how the target came to be (run.c spawns, attach.c attaches).
 */
#ifndef RV_CMD_RECORD_H
#define RV_CMD_RECORD_H

#include <signal.h>

#include "cli/options.h"
#include "cmd/gating.h"
#include "record/func_engine.h"
#include "record/machine.h"
#include "record/pt_pmu.h"
#include "record/target.h"
#include "write/trace_writer.h"

/* The environment variable that points sysfs and procfs reads (PMU discovery,
 * kernel version) at another root, for tests; "/" when unset. */
#define RV_SYSFS_ROOT_ENV "REARVIEW_SYSFS_ROOT"

enum rv_engine {
	RV_ENGINE_SAMPLE,
	RV_ENGINE_PT,
	RV_ENGINE_UPROBE, /* the function tracer (record_fn.h) */
};

struct rv_session {
	const struct rv_options *opts;
	const char *root; /* "/" or $REARVIEW_SYSFS_ROOT */
	struct rv_machine machine;
	enum rv_engine engine;
	struct rv_pt_pmu pt_pmu; /* RV_ENGINE_PT: the intel_pt PMU */
	struct rv_trace_writer *writer; /* opened before the target starts */
	sigset_t waited_signals;	/* blocked, read through a signalfd */
	int signal_fd;
	char capture_dir[4096];
	bool capture_dir_is_temporary;
	uint64_t frequency;
	bool dwarf;
	uint64_t snapshot_size_bytes;
	const char *backend_note; /* said once recording starts, e.g. why we sample */
	int stop_signal; /* the signal that ended the recording, 0 if the target ended it */
	bool snapshot_ended; /* a --trigger or --min-duration snapshot ended it */
	enum rv_kfunc_method kfunc_method; /* --kernel-functions: what this kernel allows */
};

/* Everything that can be refused before a target exists: option combinations
 * the machine cannot do, the output path, the capture directory. Blocks the
 * signals the session waits for. Prints nothing; err says what is wrong. */
int rv_session_prepare(struct rv_session *s, const struct rv_options *opts, struct rv_error *err);

/* Records the target (a spawned child is released once recording is set
 * up), then writes the capture and the trace. Returns 0 or a negative code
 * with err set. */
int rv_session_record(struct rv_session *s, struct rv_target *target, struct rv_error *err);

/* --dry-run: prints every event, filter, uprobe and BPF program the session
 * would set up for the program at exe (process pid, or 0 when it is not
 * started; exe NULL: the running process's), and sets up nothing. */
int rv_session_dry_run(struct rv_session *s, const char *exe, pid_t pid, struct rv_error *err);

/* Removes a temporary capture directory, closes what is open. */
void rv_session_cleanup(struct rv_session *s);

/* ---- shared by the sessions of the engines ---- */

/* The executable of a running process (/proc/PID/exe). */
int rv_session_target_exe(pid_t pid, char *out, size_t size, struct rv_error *err);

/* Resolves the --filter/--trigger sites in the target (one process) and, with
 * gating non-NULL, loads the gate on them. */
int rv_session_open_gating(struct rv_session *s, struct rv_target *target,
			   struct rv_gating_sites *sites, struct rv_gating **gating,
			   struct rv_error *err);

/* Drains engine (and the gate's records, applied through it) until the
 * target exits, a stop signal comes (*stop_signal) or a snapshot ends the
 * recording (s->snapshot_ended). */
int rv_session_loop(struct rv_session *s, struct rv_target *target, struct rv_sample_engine *engine,
		    struct rv_gating *gating, int *stop_signal, struct rv_error *err);

/* Writes the capture's header: the command line, the clock. */
int rv_session_finish_capture(struct rv_session *s, struct rv_perf_writer *capture,
			      struct rv_error *err);

#endif
