/* bpf_log.h: libbpf's messages (the verifier's log among them) routed to
 * rearview's debug log, shown with -vv.
 *
 * Not here: loading programs; each loader calls this before it opens its
 * object.
 */
#ifndef RV_UTIL_BPF_LOG_H
#define RV_UTIL_BPF_LOG_H

void rv_bpf_log_setup(void);

#endif
