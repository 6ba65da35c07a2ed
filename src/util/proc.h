/* proc.h: what /proc says about a running process, asked the same way
 * everywhere.
 *
 * Not here: its mappings (record/proc_synth.h) or its threads.
 */
#ifndef RV_UTIL_PROC_H
#define RV_UTIL_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* The executable of process pid (/proc/PID/exe's target) into out (size
 * bytes). An error naming the process when it is gone or not ours to see. */
int rv_proc_exe(pid_t pid, char *out, size_t size, struct rv_error *err);

#endif
