/* library.h: the file of a library that a probe site or a function pattern
 * names by its short name (LIB:SYMBOL, LIB:PATTERN), found as the dynamic
 * loader would find it for the target: the process's own mappings when it
 * runs, else the executable's DT_NEEDED entries searched along its RUNPATH,
 * /etc/ld.so.conf.d and the standard directories, keeping only ELF files of
 * the executable's class and machine (a 64-bit program does not load
 * /lib32's libc).
 *
 * Not here: reading the library's symbols.
 */
#ifndef RV_RECORD_LIBRARY_H
#define RV_RECORD_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/error.h"

/* Whether base (a file name) is the library want: equal, or want then '.'
 * ("libc" and "libc.so" are "libc.so.6"). */
bool rv_library_name_matches(const char *base, const char *want);

/* Finds library `want` (a short name, or a path used as it is) of executable
 * exe, run as pid (0: not running yet), into path. When it cannot be found,
 * the error suggests giving its path as "[OPTION ]/path/to/LIB:WHAT". */
int rv_find_library(const char *want, const char *exe, pid_t pid, const char *option,
		    const char *what, char *path, size_t size, struct rv_error *err);

#endif
