/* session.h: one recording session, shared by `run` and `attach`: check the
 * options against the machine, choose the backend, set it up around a
 * target, record until the target exits, the user interrupts or a snapshot
 * ends it, keep the capture and render it into the trace.
 *
 * There is one loop for every backend (backend.h): it waits on the
 * backend's rings, the gate's records, a signalfd and the target's pidfds;
 * each round reads the gate's records, drains the backend, then applies
 * the gate's decisions (gating.h). Recording notes and warnings go to
 * stderr as they happen; errors are returned, for the command to print.
 *
 * Not here: how the target came to be (cmd/run.c spawns, cmd/attach.c
 * attaches), the backends' engines (src/record), decoding (src/render).
 */
#ifndef RV_SESSION_SESSION_H
#define RV_SESSION_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cli/options.h"
#include "record/fn_engine.h"
#include "record/kernel_btf.h"
#include "record/machine.h"
#include "record/pt_engine.h"
#include "record/pt_pmu.h"
#include "record/sample_plan.h"
#include "record/target.h"
#include "util/error.h"
#include "write/trace_writer.h"

/* The environment variable that points sysfs and procfs reads (PMU discovery,
 * kernel version) at another root, for tests; "/" when unset. */
#define RV_SYSFS_ROOT_ENV "REARVIEW_SYSFS_ROOT"

enum rv_engine {
	RV_ENGINE_SAMPLE, /* stack sampling (sample_backend.c) */
	RV_ENGINE_PT,	  /* Intel PT (pt_backend.c) */
	RV_ENGINE_UPROBE, /* exact calls through BPF uprobes (fn_backend.c) */
};

struct rv_session {
	const struct rv_options *opts;
	const char *root; /* "/" or $REARVIEW_SYSFS_ROOT */
	struct rv_machine machine;
	enum rv_engine engine;
	struct rv_pt_pmu pt_pmu;	/* RV_ENGINE_PT: the intel_pt PMU */
	struct rv_sample_plan sample;	/* RV_ENGINE_SAMPLE: rate and call graphs */
	uint64_t snapshot_size_bytes;	/* RV_ENGINE_UPROBE: the flight recorder's */
	struct rv_trace_writer *writer; /* opened before the target starts */
	sigset_t waited_signals;	/* blocked, read through a signalfd */
	int signal_fd;
	char capture_dir[4096];
	bool capture_dir_is_temporary;
	const char *backend_note; /* said once recording starts, e.g. why we sample */
	int stop_signal;     /* the signal that ended the recording, 0 if the target ended it */
	bool snapshot_ended; /* a --trigger or --min-duration snapshot ended it */
	bool duration_ended; /* --duration elapsed */
	/* attach -- COMMAND: spawned stopped by the caller, released once
	 * recording is set up (after the target); its exit ends the recording
	 * (command_ended). NULL: none. Never recorded itself. */
	struct rv_target *command;
	bool command_ended;
	/* A second stop signal came while the probes were being released: the
	 * trace is not written, rearview ends at once. */
	bool interrupted_again;
	enum rv_kfunc_method kfunc_method; /* --kernel-functions: what this kernel allows */
	/* The kernel's BTF and --btf, found before any BPF object is opened. */
	struct rv_kernel_btf kernel_btf;
	/* run would follow COMMAND's children (sampling, uprobe), but cannot:
	 * the programs that follow them attach by the kernel's own BTF, which
	 * it lacks. Said once (btf_note) as recording starts. */
	bool follow_blocked;
	const char *btf_note;
	/* Intel PT's kernel (tests: a simulated one); NULL: the real one. The
	 * gate's in-group events are opened in it too, so a gate on a simulated
	 * kernel is a simulated one (gating.h: rv_gating_new_on). */
	const struct rv_pt_ops *pt_ops;
	/* --events, checked against the machine (tracepoint ids read) */
	struct rv_extra_events extra_events;
};

/* Everything that can be refused before a target exists: option combinations
 * the machine cannot do, the output path, the capture directory. Blocks the
 * signals the session waits for. Prints nothing; err says what is wrong. */
int rv_session_prepare(struct rv_session *s, const struct rv_options *opts, struct rv_error *err);

/* Records the target (a spawned child is released once recording is set
 * up, then s->command), until the target exits, a stop signal, a snapshot
 * that ends it, s->command's exit or --duration (counted from the release;
 * the loop wakes at least every 100 ms, and at the deadline), then writes
 * the capture and the trace. Returns 0 or a negative code with err set. */
int rv_session_record(struct rv_session *s, struct rv_target *target, struct rv_error *err);

/* --dry-run: prints every event, filter, uprobe and BPF program the session
 * would set up for the program at exe (process pid, or 0 when it is not
 * started; exe NULL: the running process's), and sets up nothing. */
int rv_session_dry_run(struct rv_session *s, const char *exe, pid_t pid, struct rv_error *err);

/* Removes a temporary capture directory, closes what is open. */
void rv_session_destroy(struct rv_session *s);

#endif
