/* stepper.h: runs a command under ptrace and single-steps every user-space
 * instruction of every thread it creates, reporting the control flow PT
 * would see: instructions retiring with their outcome, entries to the kernel
 * (system calls, signal delivery) and returns from it, threads beginning and
 * ending, and moments when the process's code mappings may have changed.
 *
 * Threads run concurrently but are stepped one instruction at a time, and
 * their reports arrive one at a time, so the callbacks need no locking.
 *
 * Not here: what to make of the flow (PT packets, perf.data, ground truth).
 */
#ifndef SOFTPT_STEPPER_H
#define SOFTPT_STEPPER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "insn.h"
#include "util/error.h"

struct stepper_ops {
	/* A thread is about to execute its first traced instruction at ip:
	 * the command's first thread right after exec (parent_tid 0), or a
	 * thread created by clone. */
	int (*thread_begin)(void *ctx, pid_t pid, pid_t tid, pid_t parent_tid, uint64_t ip);
	/* The instruction at ip retired; next_ip is the instruction the thread
	 * executes next. For system calls (insn->cls == PTGEN_SYSCALL) next_ip
	 * is 0, the thread is in the kernel until `resume`, and syscall_ns is
	 * the wall time the call took. */
	int (*retire)(void *ctx, pid_t tid, uint64_t ip, const struct insn_info *insn,
		      uint64_t next_ip, uint64_t syscall_ns);
	/* A caught signal is delivered before the instruction at ip executed:
	 * the thread enters the kernel asynchronously. */
	int (*async)(void *ctx, pid_t tid, uint64_t ip);
	/* The thread is back in user space at ip (after a system call, at a
	 * signal handler, after sigreturn). */
	int (*resume)(void *ctx, pid_t tid, uint64_t ip);
	/* The process's executable mappings may have changed; exec is true
	 * for a new program image. Called while its threads are stopped. */
	int (*maps_changed)(void *ctx, pid_t pid, bool exec);
	/* The thread is gone (it exited or was killed). */
	int (*thread_end)(void *ctx, pid_t pid, pid_t tid);
};

struct stepper_stats {
	uint64_t steps;	  /* single steps taken */
	uint64_t decoded; /* instructions decoded (cache misses) */
	uint64_t signals; /* signals delivered to the tracee */
	uint64_t threads; /* threads traced */
};

/* Runs argv (resolved through PATH) to completion. *exit_status is set to the
 * command's exit status, or 128 + its signal. Returns 0, or -1 with err set
 * when the command could not be started or tracing failed (the command is
 * then killed). */
int stepper_run(char *const argv[], const struct stepper_ops *ops, void *ctx, int *exit_status,
		struct stepper_stats *stats, struct rv_error *err);

#endif
