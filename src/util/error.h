/* error.h: how modules report failure to their caller.
 *
 * A module never prints. It returns a negative errno-style code and fills a
 * struct rv_error with one sentence a user can act on ("cannot open 'x': no
 * such file; check the path"). The top of the program prints it once.
 */
#ifndef RV_UTIL_ERROR_H
#define RV_UTIL_ERROR_H

#include <stdarg.h>

struct rv_error {
	int code; /* positive errno value, or 0 when no error is set */
	char message[1024];
};

/* Records the error and returns -code (or -EINVAL when code is 0), so that
 * `return rv_error_set(err, ENOENT, "...")` reads naturally. err may be NULL. */
int rv_error_set(struct rv_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefixes context to an existing message: "reading perf.data: <old message>". */
int rv_error_prefix(struct rv_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void rv_error_clear(struct rv_error *err);

#endif
