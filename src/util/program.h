/* program.h: which file `execvp` would run for a command name, found up
 * front so that "command not found" is said in words, not by a child that
 * exits 127. Used by `run` to start the program and by `run --dry-run` to
 * name it, so both agree.
 *
 * Not here: starting it (record/target.h).
 */
#ifndef RV_UTIL_PROGRAM_H
#define RV_UTIL_PROGRAM_H

#include <stddef.h>

#include "util/error.h"

/* name itself when it has a slash (it must be executable), else the first
 * regular, executable file name in $PATH (default /usr/local/bin:/usr/bin:
 * /bin; an empty entry is the current directory), into path. */
int rv_program_find(const char *name, char *path, size_t size, struct rv_error *err);

#endif
