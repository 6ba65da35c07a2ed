/* record_pt.h: a recording session on the Intel PT engine: the PT event and
 * its sideband, the gate's uprobes in the PT group (resume, pause, AUX
 * samples), the AUX area as a snapshot ring, and the capture decoded into the
 * trace as `rearview decode` does.
 *
 * Not here: choosing the engine (record.c), the gate's decisions (gate.bpf.c).
 */
#ifndef RV_CMD_RECORD_PT_H
#define RV_CMD_RECORD_PT_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cmd/gating.h"
#include "cmd/record.h"
#include "record/dry_run.h"
#include "record/gate.h"
#include "record/pt_attr.h"
#include "record/pt_engine.h"
#include "util/error.h"

/* Adds what the session would open to plan (sites: NULL without --filter or
 * --trigger; pid 0 when the program is not started). */
int rv_session_describe_pt(struct rv_session *s, const struct rv_gating_sites *sites, pid_t pid,
			   struct rv_dry_run_plan *plan, struct rv_error *err);

/* Records target with Intel PT until it exits, the user interrupts or a
 * snapshot ends it, then writes the trace. */
int rv_session_record_pt(struct rv_session *s, struct rv_target *target,
			 const struct rv_gating_sites *sites, struct rv_error *err);

/* The same against another kernel (ops: NULL for the real one), for tests.
 * With ops, the gate (live BPF) cannot be used: sites must be NULL. */
int rv_session_record_pt_ops(struct rv_session *s, struct rv_target *target,
			     const struct rv_gating_sites *sites, const struct rv_pt_ops *ops,
			     struct rv_error *err);

/* ---- the plan both share ---- */

#define RV_PT_PLAN_MAX_GATE 4
#define RV_PT_DEFAULT_AUX   (4ull << 20) /* --snapshot-size when not given */

/* One gate site: in the PT group (one event per slot, attr below) or a plain
 * per-process uprobe of the gate's own (attr unused). */
struct rv_pt_plan_gate {
	enum rv_gate_role role;
	const struct rv_probe_site *site;
	bool in_group;
	enum rv_uprobe_role uprobe_role; /* in_group only */
	struct perf_event_attr attr;	 /* in_group only: rv_uprobe_attr's */
};

struct rv_pt_plan {
	struct perf_event_attr pt, sideband;
	struct rv_pt_warnings warnings; /* from rv_pt_attr_build, to tell the user */
	enum rv_pt_timing timing;
	enum rv_trace_scope scope;
	enum rv_pt_mode mode;
	uint64_t aux_bytes;    /* per slot */
	bool per_cpu;	       /* --multi-thread: per-CPU slots with context switches */
	bool start_paused;     /* --filter with aux pause: PT runs only inside windows */
	bool ungated;	       /* --filter asked, but the kernel cannot pause PT */
	bool trigger_snapshot; /* --trigger without aux pause: the session snapshots */
	struct rv_pt_plan_gate gate[RV_PT_PLAN_MAX_GATE];
	size_t nr_gate;
	struct rv_uprobe_pmu uprobe; /* valid when nr_gate */
};

/* Builds every attr of the session from its options, its PMU (s->pt_pmu) and
 * the resolved sites (NULL: none). Warnings are returned, not printed. The
 * gate attrs point at the sites' paths: sites must outlive the plan's use. */
int rv_pt_plan_build(struct rv_pt_plan *plan, const struct rv_session *s,
		     const struct rv_gating_sites *sites, struct rv_error *err);

#endif
