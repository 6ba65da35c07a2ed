/* proc_synth.h: the sideband of a process that existed before recording
 * began, read from /proc as perf synthesizes it: a COMM record per thread
 * (/proc/PID/task/TID/comm) and an MMAP2 record per mapping of code
 * (/proc/PID/maps), each with the sample_id trailer the caller's events use.
 *
 * Mappings kept: every executable one; nameless ones are named "//anon" as
 * perf names them (or left out with code_files_only, together with
 * [vsyscall], for consumers that can only use code they can read); with
 * data_mappings also the other mappings of files, marked
 * PERF_RECORD_MISC_MMAP_DATA, as attr.mmap_data reports them live.
 * A process or thread that is gone is skipped, not an error: its exit ends
 * the recording anyway.
 *
 * Used by the sampling engine and the Intel PT engine. Not here: the kernel's
 * own mapping, where records go (the caller's emit), record layouts (synth.h).
 */
#ifndef RV_RECORD_PROC_SYNTH_H
#define RV_RECORD_PROC_SYNTH_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/synth.h"
#include "util/error.h"

/* Receives each record (valid only during the call); 0 to go on, or a
 * negative errno with err set to stop. */
typedef int (*rv_proc_synth_fn)(void *ctx, const struct perf_event_header *rec,
				struct rv_error *err);

struct rv_proc_synth {
	const char *root;      /* the directory /proc is under; NULL or "" for the real one */
	struct rv_synth synth; /* the trailer's layout (sample_type, sample_id_all) */
	uint64_t id;	       /* the trailer's sample id */
	uint64_t time;	       /* the trailer's time */
	bool data_mappings;    /* also non-executable mappings of files */
	bool code_files_only;  /* leave out nameless mappings and [vsyscall] */
	rv_proc_synth_fn emit;
	void *ctx;
};

/* A COMM record (not an exec) for each thread of pid. Returns 0, emit's
 * failure, or -EOVERFLOW (err set) if a record did not fit. */
int rv_proc_synth_threads(const struct rv_proc_synth *p, uint32_t pid, struct rv_error *err);

/* An MMAP2 record (pid and tid = pid) for each mapping of pid kept by the
 * rules above, with the mapping's protection, device, inode and flags.
 * Returns as rv_proc_synth_threads. */
int rv_proc_synth_mmaps(const struct rv_proc_synth *p, uint32_t pid, struct rv_error *err);

/* Both, for each process in pids, in order: its threads, then its mappings.
 * Returns 0 or the first failure. */
int rv_proc_synth_processes(const struct rv_proc_synth *p, const pid_t *pids, size_t nr_pids,
			    struct rv_error *err);

#endif
