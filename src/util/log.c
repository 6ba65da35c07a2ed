/* log.c: the one place that writes diagnostics to stderr; see log.h. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static int verbosity; /* set once from the command line, before any thread starts */

void rv_log_set_verbosity(int level)
{
	verbosity = level;
}

int rv_log_verbosity(void)
{
	return verbosity;
}

void rv_log_print(int level, const char *domain, const char *kind, const char *fmt, ...)
{
	va_list ap;

	if (level > verbosity)
		return;
	if (domain)
		fprintf(stderr, "rearview[%s]: %s", domain, kind);
	else
		fprintf(stderr, "rearview: %s", kind);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
