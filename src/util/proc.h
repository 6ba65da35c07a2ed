/* proc.h: what /proc says about a running process, asked the same way
 * everywhere: its executable, where its vdso is, and its memory.
 *
 * Not here: its mappings as sideband records (record/proc_synth.h) or its
 * threads.
 */
#ifndef RV_UTIL_PROC_H
#define RV_UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

/* The executable of process pid (/proc/PID/exe's target) into out (size
 * bytes). An error naming the process when it is gone or not ours to see. */
int rv_proc_exe(pid_t pid, char *out, size_t size, struct rv_error *err);

/* The name of process pid (/proc/PID/comm, without its newline) into out
 * (size bytes); false when it is gone. */
bool rv_proc_comm(pid_t pid, char *out, size_t size);

/* Calls fn for each mapping in /proc/PID/maps, with its range and what it
 * maps (a path, "[vdso]", ..., or "" for anonymous memory), until fn returns
 * true. Returns whether one did; false when the process is gone. */
bool rv_proc_maps_find(pid_t pid,
		       bool (*fn)(void *ctx, uint64_t start, uint64_t end, const char *what),
		       void *ctx);

/* Where process pid maps its [vdso]: [*start, *end). False when it has none
 * (or is gone), or the mapping is implausibly large (over 64 MiB). */
bool rv_proc_find_vdso(pid_t pid, uint64_t *start, uint64_t *end);

/* Reads len bytes of process pid's memory at addr (/proc/PID/mem): all of
 * them, or an error. */
int rv_proc_read_memory(pid_t pid, uint64_t addr, void *buf, size_t len, struct rv_error *err);

#endif
