/* target.h: the processes rearview records.
 *
 * `run` starts a command under ptrace so that it stops at its first
 * instruction (right after execve), which lets the recorder set up before the
 * program does anything; rv_target_release then lets it go. `attach` checks
 * that the processes exist and can be recorded. Without -p, rv_target_pick
 * offers the running processes to the user.
 *
 * Not here: recording. A target is only the processes and their lifetimes.
 */
#ifndef RV_RECORD_TARGET_H
#define RV_RECORD_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

struct rv_target {
	pid_t pids[1024];
	size_t nr_pids;
	bool spawned;	  /* started by us (run): pids[0] is our child */
	bool released;	  /* the child was let go */
	bool exited;	  /* every process has exited (spawned: reaped) */
	int exit_status;  /* spawned child's wait status once exited */
	int pidfds[1024]; /* -1 where pidfd_open is unavailable */
	/* When a stop signal reached rearview (CLOCK_MONOTONIC ms; 0: none),
	 * set by the session: rv_target_end counts its grace from there. */
	unsigned long long stop_signal_ms;
	/* rv_target_end stopped waiting for the spawned program, which runs
	 * on (or did not die of SIGKILL in time), at this stop signal; 0:
	 * it did not. */
	int left_running;
};

/* Starts argv[0] (searched in PATH) stopped before its first instruction.
 * Fails cleanly, with nothing left running, when the command does not exist
 * or cannot be executed. */
int rv_target_spawn(struct rv_target *t, char *const argv[], struct rv_error *err);

/* Lets a spawned child run. */
int rv_target_release(struct rv_target *t, struct rv_error *err);

/* Kills and reaps a spawned child that was never released (setup failed). */
void rv_target_kill(struct rv_target *t);

/* Checks that each pid exists and can be recorded, and opens pidfds to follow
 * their exit. */
int rv_target_attach(struct rv_target *t, const pid_t *pids, size_t nr_pids, struct rv_error *err);

/* Whether pid is a kernel thread (PF_KTHREAD in the flags of
 * /proc/PID/stat): it has no program to record, only kernel code. false
 * when it cannot be told (no such process). */
bool rv_target_is_kernel_thread(pid_t pid);

/* EINVAL, saying what a kernel thread is and that --trace-include-kernel
 * records one, for the first kernel thread among pids; 0 when there is
 * none. Reads only /proc: `attach` calls it before anything is set up. */
int rv_target_refuse_kernel_threads(const pid_t *pids, size_t nr_pids, struct rv_error *err);

/* Lets the user choose a running process (picker.h: fzf when it is installed
 * and both stdin and stderr are terminals, else a numbered list on stderr read
 * from stdin). A stop signal on stop_fd (a signalfd of the stop signals, or
 * -1) while the list waits for an answer ends it: ECANCELED. */
int rv_target_pick(pid_t *pid, int stop_fd, struct rv_error *err);

/* Non-blocking check: returns true once every target process has exited
 * (reaping a spawned child and recording its status). */
bool rv_target_poll_exit(struct rv_target *t);

/* Waits for a spawned child to exit and records its status. */
int rv_target_wait(struct rv_target *t);

/* Done with the target. A released spawned program that has not exited is
 * waited for, within reason:
 * - after a stop signal (it got the terminal's Ctrl-C too, as it shares our
 *   process group) it is given until RV_TARGET_GRACE_MS after the signal
 *   (stop_signal_ms) to exit on its own, then passed the signal once (for
 *   when only rearview was signalled);
 * - when it is still there RV_TARGET_QUIET_MS later (or, without a stop
 *   signal, RV_TARGET_QUIET_MS after this call), rearview says on stderr
 *   that it waits for it, and how to stop waiting;
 * - a stop signal on stop_fd (the session's non-blocking signalfd of
 *   SIGINT, SIGTERM, SIGHUP and SIGCHLD, whose other signals it reads and
 *   drops; -1: none, the wait is then without end) stops the wait: a
 *   second one within RV_TARGET_KILL_WINDOW_MS kills the program (SIGKILL;
 *   waited for RV_TARGET_KILL_WAIT_MS at most), else it is left running. Either way it is said on
 * stderr. left_running is then the first of those signals; a program that exited meanwhile is
 * reaped as any other, with its status. Attached processes are never waited for: they are left
 * running, their pidfds closed. */
#define RV_TARGET_GRACE_MS	 1000
#define RV_TARGET_QUIET_MS	 200
#define RV_TARGET_KILL_WINDOW_MS 500
#define RV_TARGET_KILL_WAIT_MS	 2000
void rv_target_end(struct rv_target *t, int stop_signal, int stop_fd);

/* Reads all that is pending on fd, a non-blocking signalfd (-1: nothing);
 * true when a stop signal (SIGINT, SIGTERM, SIGHUP) was among it, *which
 * then the last of them. Other signals (SIGCHLD) are read and dropped. The
 * session's loop, its second-signal watch and rv_target_end share it. */
bool rv_target_read_stop_signals(int fd, int *which);

/* The process's short name (comm), "?" when unknown. */
void rv_target_comm(pid_t pid, char *out, size_t size);

/* rearview's exit code for a child's wait status (the shell's convention). */
int rv_exit_code_from_status(int status);

#endif
