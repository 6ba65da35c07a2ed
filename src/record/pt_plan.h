/* pt_plan.h: what an Intel PT recording opens, decided before anything is
 * opened: the PT event's and the sideband's attributes from the command line
 * and the PMU, the gate's uprobes in the PT group (resume, pause, AUX
 * samples) or beside it, the AUX size and mode, and the slots the events go
 * to (one per thread with `run --no-follow` or `attach`; one per CPU on the
 * target, inherited by its threads and children, with --multi-thread or when
 * `run` follows children, the default: every thread of every process is
 * then traced). --dry-run prints
 * the plan; a recording session opens it (session/pt_backend.c).
 *
 * Warnings (a timer resolution the CPU cannot give, ...) are returned in the
 * plan, not printed.
 *
 * Not here: opening anything (pt_engine.h, gate.h), the gate's decisions
 * (bpf/gate.bpf.c).
 */
#ifndef RV_RECORD_PT_PLAN_H
#define RV_RECORD_PT_PLAN_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/options.h"
#include "record/dry_run.h"
#include "record/gate.h"
#include "record/probe_site.h"
#include "record/pt_attr.h"
#include "record/pt_engine.h"
#include "record/pt_pmu.h"
#include "util/error.h"

#define RV_PT_PLAN_MAX_GATE 4
#define RV_PT_DEFAULT_AUX   (4ull << 20) /* --snapshot-size when not given */
#define RV_PT_MAX_SLOTS	    1024

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
	bool per_cpu;	       /* per-CPU slots with context switches and inherit */
	bool follow;	       /* run without --no-follow: children followed (per_cpu) */
	bool start_paused;     /* --filter with aux pause: PT runs only inside windows */
	bool ungated;	       /* --filter asked, but the kernel cannot pause PT */
	bool trigger_snapshot; /* --trigger without aux pause: user space snapshots */
	/* Linux 6.13+, snapshot mode: --trigger's uprobe pauses PT at the hit
	 * (aux_pause) and --min-duration's STOP pauses it at every window's
	 * end; user space then copies the whole AUX area (snapshot_bytes per
	 * slot) and the gate holds START and trigger hits off meanwhile. */
	bool pause_snapshots;
	/* pause_snapshots with --trigger --multi-snapshot: a cpu-clock sibling
	 * with aux_resume (resume_attr) resumes PT after each copy */
	bool resume;
	struct perf_event_attr resume_attr;
	/* Bytes of trace one snapshot keeps, per slot: the whole AUX area, or
	 * the PERF_SAMPLE_AUX sample's size where the kernel samples it */
	uint64_t snapshot_bytes;
	struct rv_pt_plan_gate gate[RV_PT_PLAN_MAX_GATE];
	size_t nr_gate;
	struct rv_uprobe_pmu uprobe; /* valid when nr_gate */
};

/* The PT timing --timer-resolution asks for; sample:HZ is refused in words
 * (a sampling rate, for the sampling backend). */
int rv_pt_plan_timing(const struct rv_options *opts, enum rv_pt_timing *out, struct rv_error *err);

/* Builds every attr from the options, the PMU and the resolved sites (NULL:
 * no --filter or --trigger); root is where sysfs is read (the uprobe PMU).
 * The gate attrs point at the sites' paths: sites must outlive the plan's
 * use. */
int rv_pt_plan_build(struct rv_pt_plan *plan, const struct rv_options *opts,
		     const struct rv_pt_pmu *pmu, const char *root,
		     const struct rv_gate_sites *sites, struct rv_error *err);

/* Where the events go: threads (per-thread slots) or CPUs tracing one
 * process (per-CPU slots). */
struct rv_pt_slots {
	pid_t tids[RV_PT_MAX_SLOTS];
	int cpus[RV_PT_MAX_SLOTS];
	size_t nr_tids, nr_cpus;
	pid_t cpu_pid;
};

/* Per CPU (the machine's nr_cpus) for a per-CPU plan, else every thread of
 * every process in pids (from /proc/PID/task). With no process (--dry-run
 * before the program starts) a per-thread plan gets one slot, thread 0. */
int rv_pt_slots_build(struct rv_pt_slots *slots, const struct rv_pt_plan *plan, int nr_cpus,
		      const pid_t *pids, size_t nr_pids, struct rv_error *err);

size_t rv_pt_slots_count(const struct rv_pt_slots *slots);
pid_t rv_pt_slot_pid(const struct rv_pt_slots *slots, size_t i);
int rv_pt_slot_cpu(const struct rv_pt_slots *slots, size_t i);

/* Adds every event, uprobe and BPF program of the plan to a --dry-run plan
 * (pid: the process, 0 when the program is not started), and the sizes the
 * snapshots will keep. */
int rv_pt_plan_describe(const struct rv_pt_plan *plan, const struct rv_pt_slots *slots,
			const struct rv_gate_sites *sites, pid_t pid, struct rv_dry_run_plan *dp,
			struct rv_error *err);

#endif
