/* bpf_log.c: libbpf's messages into rearview's debug log; see bpf_log.h. */
#define RV_LOG_DOMAIN "bpf"
#include "util/bpf_log.h"

#include <bpf/libbpf.h>
#include <errno.h>
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
	/* most of libbpf's messages name it already */
	rv_debug2("%s%s", strncmp(line, "libbpf: ", 8) ? "libbpf: " : "", line);
	return 0;
}

void rv_bpf_log_setup(void)
{
	libbpf_set_print(print_debug);
}

int rv_bpf_load_error(struct rv_error *err, int ret, const char *what)
{
	if (ret == -EPERM || ret == -EACCES)
		return rv_error_set(err, -ret,
				    "not allowed to load BPF programs: run rearview as root (or "
				    "with CAP_BPF and CAP_PERFMON)");
	return rv_error_set(err, -ret,
			    "cannot load %s: %s (run with -vv to see the verifier's log)", what,
			    strerror(-ret));
}
