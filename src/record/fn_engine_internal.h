/* fn_engine_internal.h: what the function tracer's loader shares between
 * its files inside src/record/.
 *
 * fn_engine.c opens and loads the BPF object, arms it, reads its counts and
 * frees it; fn_attach.c places the probes (kernel events and functions, user
 * functions); fn_recorder.c reads the per-thread flight recorder of
 * recorder mode; fn_describe.c says what --dry-run would set up.
 *
 * This is not a public interface: only the func_* files of src/record/
 * include it.
 */
#ifndef RV_RECORD_FN_ENGINE_INTERNAL_H
#define RV_RECORD_FN_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "functions.skel.h"
#include "record/fn_engine.h"

/* enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI (Linux 6.6+), which Debian's
 * libbpf 1.1 headers do not know. */
#define RV_FN_ATTACH_UPROBE_MULTI 48

/* Programs of the kernel event groups, all groups together. */
#define RV_FN_MAX_EVENT_PROGRAMS 6

/* A function the kernel refused: its table index and the error. */
struct rv_fn_refused {
	size_t index;
	int error;
};

/* Recorder mode: per slot, the records already handed on (an index in the
 * slot's sequence) and those overwritten before a snapshot read them; and
 * room to read one slot. */
struct rv_fn_recorder {
	uint64_t *consumed;
	uint64_t *missed;
	struct rv_fn_slot *slot_copy;
};

struct rv_fn_engine {
	struct rv_fn_engine_config config;
	struct functions_bpf *skel;
	bool multi; /* uprobe_multi programs loaded and to be tried */
	int *multi_links;
	size_t nr_multi_links, cap_multi_links;
	struct bpf_link **links; /* perf links, tracepoints, kprobes */
	size_t nr_links, cap_links;
	struct functions_bpf **fentry_copies; /* one object per kernel function */
	size_t nr_fentry_copies, cap_fentry_copies;
	struct rv_fn_refused *refused;
	size_t nr_refused, cap_refused;
	struct rv_fn_attach_report report;
	struct rv_fn_recorder recorder; /* empty outside recorder mode */
	int *ring_fds;			/* each CPU's ring buffer (not in recorder mode) */
	size_t nr_ring_fds;
};

static inline bool rv_fn_has_kfuncs(const struct rv_fn_engine_config *c)
{
	return c->kfuncs && c->kfuncs->count;
}

/* fn_engine.c */

/* Opens a copy of the BPF object with config's read-only settings and map
 * sizes, as the main object and every fentry copy have them; prev_state:
 * whether sched_switch's tracepoint passes prev_state. NULL with errno set
 * when it cannot. */
struct functions_bpf *rv_fn_skel_open(const struct rv_fn_engine_config *config, bool prev_state);

/* The programs of the kernel event groups in the bits of groups, in the
 * order of enum rv_fn_kernel_events; returns how many. */
size_t rv_fn_event_programs(struct functions_bpf *skel, unsigned groups,
			    struct bpf_program *out[RV_FN_MAX_EVENT_PROGRAMS]);

/* fn_recorder.c */

/* Room for the recorder's bookkeeping of slots threads (none when 0):
 * 0 or -ENOMEM. */
int rv_fn_recorder_init(struct rv_fn_recorder *r, uint32_t slots);
void rv_fn_recorder_destroy(struct rv_fn_recorder *r);

#endif
