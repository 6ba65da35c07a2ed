/* bpf_log.c: libbpf's messages into rearview's debug log; see bpf_log.h. */
#define RV_LOG_DOMAIN "bpf"
#include "util/bpf_log.h"

#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

static int print_debug(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];

	(void)level;
	if (rv_log_verbosity() < 2)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	rv_debug2("libbpf: %s", line);
	return 0;
}

void rv_bpf_log_setup(void)
{
	libbpf_set_print(print_debug);
}
