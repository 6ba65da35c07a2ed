/* bpf_log.h: libbpf's messages (the verifier's log among them) routed to
 * rearview's debug log, shown with -vv.
 *
 * Not here: loading programs; each loader calls this before it opens its
 * object.
 */
#ifndef RV_UTIL_BPF_LOG_H
#define RV_UTIL_BPF_LOG_H

#include "util/error.h"

void rv_bpf_log_setup(void);

/* The error for a BPF object that did not load (what: "the BPF gate"):
 * missing privileges said as such, else the reason and where the
 * verifier's log is. Returns the negative code. */
int rv_bpf_load_error(struct rv_error *err, int ret, const char *what);

#endif
