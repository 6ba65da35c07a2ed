/* hold.h: releasing a tracer's probes without waiting on the target.
 *
 * Releasing a uprobe (closing its link or perf event) can block in the
 * kernel, uninterruptibly, for as long as a thread of the target keeps
 * hitting probes while a uretprobe is pending on its stack (the kernel
 * waits for the uretprobe's SRCU lease to expire, and each new hit renews
 * it). A target that stops for a moment lets the release finish within a
 * few tenths of a second. So rv_hold_release runs the release on a thread
 * of its own and, when it has not returned after a short grace
 * (RV_HOLD_GRACE_MS), holds every thread of the target still until it has,
 * then lets the target go:
 *   - a spawned target (our child) with SIGSTOP, then SIGCONT, unless it
 *     was stopped already;
 *   - an attached process with a ptrace seize and interrupt of each of its
 *     threads (new threads are caught as they are made), then a detach that
 *     gives back any signal that came meanwhile: neither its parent nor a
 *     shell's job control sees it stop. Where it cannot be seized (another
 *     tracer has it), SIGSTOP/SIGCONT as for a spawned one.
 * Other processes (a run's children that the function tracer follows) are
 * held with it by ptrace alone: their parent, the target, must not see them
 * stop; one that cannot be seized is left running. A target that has exited
 * is not held. After RV_HOLD_NOTICE_MS the release
 * says "detaching N probes..." on stderr.
 *
 * Ordering: the caller disarms its programs before (nothing is recorded
 * after that) and reads its rings after. Times are CLOCK_MONOTONIC.
 *
 * Not here: what the release does (the engines' detach functions), the
 * target's lifetime (target.h).
 */
#ifndef RV_RECORD_HOLD_H
#define RV_RECORD_HOLD_H

#include <stdbool.h>
#include <stddef.h>

#include "record/target.h"

/* How long a release may take before the target is held. */
#define RV_HOLD_GRACE_MS 50
/* How long a release may take before it is said on stderr. */
#define RV_HOLD_NOTICE_MS 500
/* How long the target stays held at most: a release that still has not
 * returned is left to finish in the background (and said). */
#define RV_HOLD_MAX_MS 3000

typedef void (*rv_hold_release_fn)(void *ctx);

struct rv_hold_result {
	bool held;	  /* the target was held still */
	bool interrupted; /* a stop signal came from stop_fd meanwhile */
	bool finished;	  /* the release returned (else it runs on, unjoined) */
	unsigned long long elapsed_ms;
};

/* Runs release(ctx) (which frees nr_probes probes, for the message) as
 * above. stop_fd: a non-blocking signalfd whose SIGINT, SIGTERM or SIGHUP
 * holds the target at once and sets out->interrupted (-1: none). release
 * and ctx must stay valid until it returns, or, when out->finished is
 * false, for the rest of the process. Prints only the notice and warnings;
 * cannot fail (a target that cannot be held is released unheld). */
void rv_hold_release(const struct rv_target *t, size_t nr_probes, rv_hold_release_fn release,
		     void *ctx, int stop_fd, struct rv_hold_result *out);

/* The same, holding the processes others (nr_others of them) with the target
 * when it holds it. */
void rv_hold_release_also(const struct rv_target *t, const pid_t *others, size_t nr_others,
			  size_t nr_probes, rv_hold_release_fn release, void *ctx, int stop_fd,
			  struct rv_hold_result *out);

/* ---- holding alone (rv_hold_release uses these; tests too) ---- */

struct rv_hold_thread {
	pid_t tid;
	int resume_signal; /* a signal that came while held, given back at the end */
};

struct rv_hold {
	struct rv_hold_thread *threads; /* seized threads */
	size_t nr_threads, cap_threads;
	pid_t stopped[1024]; /* processes stopped with SIGSTOP */
	size_t nr_stopped;
};

/* Stops every thread of the target's processes (see above), waiting at most
 * timeout_ms for them to be still. Returns how many processes are held. */
size_t rv_hold_begin(struct rv_hold *h, const struct rv_target *t, int timeout_ms);

/* The same, with the processes others seized too (see above). */
size_t rv_hold_begin_also(struct rv_hold *h, const struct rv_target *t, const pid_t *others,
			  size_t nr_others, int timeout_ms);

/* Lets every held thread go and frees h's memory. */
void rv_hold_end(struct rv_hold *h);

#endif
