/* backend.h: the one interface a recording session drives, and the three
 * backends that provide it: stack sampling (sample_backend.c), exact function
 * tracing through BPF uprobes (fn_backend.c) and Intel PT (pt_backend.c).
 *
 * The session (session.c) calls, in this order:
 *   check     before any target exists: what the machine refuses (optional)
 *   describe  --dry-run only: every event, probe and program it would set up
 *   open      everything around the target, which is stopped at its first
 *             instruction (or attached): events, the capture, the gate's
 *             uprobes through rv_gating_attach
 *   start     enables recording; the session then lets the target go
 *   poll      drains what the kernel has (once per round of the session's
 *             loop, between the gate's collect and apply); pollfds says what
 *             to wait on
 *   mark, snapshot
 *             the gate's decisions (gating.h), applied to the capture
 *   disarm    the moment a stop signal comes: records nothing from here
 *             (optional; the loop's last round then drains the rest)
 *   stop      disables recording and drains the rest, keeping the end of the
 *             recording (keep_rest) or not; releases the probes without
 *             waiting on the target (record/hold.h)
 *   finish    completes the capture, says what the kernel lost, and fills
 *             the request to render it
 *   free      closes everything (called whenever open set *out, even when
 *             open failed after that)
 * Each returns 0 or a negative code with err set, and prints only notes and
 * warnings on stderr (never the error).
 *
 * Not here: the loop, signals and the target (session.c), the gate's policy
 * (gating.c), the engines themselves (src/record).
 */
#ifndef RV_SESSION_BACKEND_H
#define RV_SESSION_BACKEND_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture/marks.h"
#include "record/dry_run.h"
#include "capture/perf_data.h"
#include "record/probe_site.h"
#include "record/sample_engine.h"
#include "record/target.h"
#include "render/render.h"
#include "session/gating.h"
#include "session/session.h"
#include "util/error.h"

struct rv_backend_state;

struct rv_backend_ops {
	const char *description; /* "stack sampling", for --dry-run */
	int (*check)(struct rv_session *s, struct rv_error *err);
	/* exe: the program's executable; pid 0 when it is not started; sites:
	 * the resolved --filter/--trigger sites, or NULL. */
	int (*describe)(struct rv_session *s, const char *exe, pid_t pid,
			const struct rv_gate_sites *sites, struct rv_dry_run_plan *plan,
			struct rv_error *err);
	/* gating: NULL without --filter or --trigger; the backend attaches it. */
	int (*open)(struct rv_session *s, struct rv_target *target, struct rv_gating *gating,
		    struct rv_backend_state **out, struct rv_error *err);
	int (*start)(struct rv_backend_state *b, struct rv_error *err);
	size_t (*pollfds)(const struct rv_backend_state *b, struct pollfd *fds, size_t max);
	int (*poll)(struct rv_backend_state *b, struct rv_error *err);
	int (*mark)(struct rv_backend_state *b, const struct rv_mark *mark, struct rv_error *err);
	int (*snapshot)(struct rv_backend_state *b, const struct rv_gating_snapshot *what,
			size_t *taken, struct rv_error *err);
	void (*disarm)(struct rv_backend_state *b);
	int (*stop)(struct rv_backend_state *b, bool keep_rest, struct rv_error *err);
	/* out->capture_path and out->recording_note point into the backend,
	 * which must not be freed before the render. */
	int (*finish)(struct rv_backend_state *b, struct rv_render_options *out,
		      struct rv_error *err);
	void (*free)(struct rv_backend_state *b);
	/* What --filter left out, for the gate's report ("samples outside them
	 * were dropped"), and the command that opens a kept capture, its path
	 * to follow ("perf report -i"). */
	const char *outside_windows;
	const char *capture_hint;
};

extern const struct rv_backend_ops rv_sample_backend;
extern const struct rv_backend_ops rv_fn_backend;
extern const struct rv_backend_ops rv_pt_backend;

/* ---- shared by the backends ---- */

/* Finishes a capture's header: the command line, and the clock its times
 * are on (clockid; -1: none recorded, as for Intel PT's TSC-based times). */
int rv_session_finish_capture(const struct rv_session *s, struct rv_perf_writer *capture,
			      int clockid, struct rv_error *err);

/* With --full-execution, makes a capture just opened flush as it grows
 * (perf_data.h), with the header finish will write, so that a recorder
 * killed leaves what it had flushed; otherwise nothing. */
int rv_session_flush_capture(const struct rv_session *s, struct rv_perf_writer *capture,
			     int clockid, struct rv_error *err);

/* ---- shared by the backends that record through the sampling engine ---- */

/* --dry-run: the engine's event on every CPU of the machine, labelled
 * "WHAT, CPU n" and the note, with BPF program `program` (NULL: none). */
int rv_session_describe_engine(const struct rv_session *s, const struct rv_sample_config *config,
			       bool hardware, const char *what, const char *note,
			       const char *program, struct rv_dry_run_plan *plan,
			       struct rv_error *err);

/* Says which children of the target were still running when the recording
 * ended with the target (their trace stops there), by name. */
void rv_session_note_running_children(const pid_t *pids, size_t n);

/* Puts a gate mark into the engine, written with the samples in time order. */
int rv_session_engine_mark(struct rv_sample_engine *e, const struct rv_mark *mark,
			   struct rv_error *err);

#endif
