/* private_file.h: creating the files of a capture so that only their owner
 * can read them, whatever the umask and whatever was there before.
 *
 * A capture holds the traced program's memory (stack bytes, code, the
 * vdso), so each of its files is created 0600 and an existing file at the
 * path is truncated and made 0600 too (O_CREAT keeps an existing file's
 * mode). A symbolic link at the path is refused, never written through.
 *
 * Not here: the capture directory itself (session.c), the trace (its writer).
 */
#ifndef RV_UTIL_PRIVATE_FILE_H
#define RV_UTIL_PRIVATE_FILE_H

#include "util/error.h"

/* Opens path for reading and writing (so that it can be mapped too),
 * created or truncated, mode 0600, close-on-exec; the descriptor, or a
 * negative errno with err naming the path. */
int rv_private_file_create(const char *path, struct rv_error *err);

#endif
