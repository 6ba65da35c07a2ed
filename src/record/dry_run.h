/* dry_run.h: what --dry-run prints: every perf event rearview would open,
 * with every perf_event_attr field that is set, its address filters, uprobes
 * and BPF programs, the probes BPF programs would be attached to without a
 * perf event of rearview's own (uprobe_multi links, tracepoints, kprobes),
 * and the BPF objects it would load.
 *
 * The recorder fills a plan with the attrs it built (record/pt_attr.h) instead
 * of opening them, and prints it. Output is stable (no pointers, no times) so
 * that tests compare it line by line: one block per event, "name = value"
 * lines, config decoded by the PMU's format names.
 *
 * Not here: deciding the events (the recorder does), or opening anything.
 */
#ifndef RV_RECORD_DRY_RUN_H
#define RV_RECORD_DRY_RUN_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "record/pt_attr.h"
#include "record/pt_pmu.h"
#include "util/error.h"
#include "util/intern.h"

struct rv_dry_run_event {
	const char *label; /* "pt", "START uprobe", ... (copied) */
	struct perf_event_attr attr;
	int group; /* index of this event's group leader in the plan; -1 when it leads or is
		    * alone */
	int cpu;   /* perf_event_open's cpu: -1 any */
	pid_t pid; /* perf_event_open's pid: -1 every task on cpu */
	const char *address_filter;   /* PERF_EVENT_IOC_SET_FILTER text; NULL: none (copied) */
	const char *uprobe_path;      /* NULL: not a uprobe (copied) */
	uint64_t uprobe_offset;	      /* file offset in uprobe_path */
	const char *bpf_program;      /* attached to this event; NULL: none (copied) */
	const char *bpf_program_type; /* "kprobe", "perf_event", ... (copied) */
};

/* A BPF program or map the recorder would load. */
struct rv_dry_run_bpf {
	const char *kind;   /* "program" or "map" */
	const char *name;   /* as in the object */
	const char *type;   /* "kprobe", "hash", "ringbuf", ... */
	const char *detail; /* NULL or a short note, such as "max_entries 4096" */
};

/* A probe a BPF program is attached to by a link: "uprobe", "uretprobe",
 * "tracepoint", "raw_tracepoint", "kprobe", "kretprobe", "fentry", "fexit". */
struct rv_dry_run_probe {
	const char *kind;
	const char *where;  /* "/path+0x1139", "raw_syscalls:sys_enter", "vfs_read" */
	const char *detail; /* NULL or e.g. "main: fn_enter_multi (uprobe_multi link)" */
};

/* PLANNED SNAPSHOT SIZES: what one snapshot keeps. */
struct rv_dry_run_snapshot {
	const char *what; /* "--trigger", "--min-duration window", "the end of the run" */
	uint64_t bytes;	  /* per Intel PT buffer; 0: not bounded (full execution) */
	const char *how;  /* how it is taken */
};

struct rv_dry_run_plan {
	struct rv_dry_run_event *events;
	size_t nr_events, events_capacity;
	struct rv_dry_run_bpf *bpf;
	size_t nr_bpf, bpf_capacity;
	struct rv_dry_run_probe *probes;
	size_t nr_probes, probes_capacity;
	struct rv_uprobe_pmu uprobe_pmu; /* names uprobe events and their config bits */
	bool has_uprobe_pmu;
	struct rv_intern text; /* every string of the plan */
	struct rv_dry_run_snapshot *snapshots;
	size_t nr_snapshots, snapshots_capacity;
};

void rv_dry_run_plan_init(struct rv_dry_run_plan *plan);
void rv_dry_run_plan_destroy(struct rv_dry_run_plan *plan);

/* Copies the event and its strings. A group index that does not name an
 * earlier event that leads its own group is an error. */
int rv_dry_run_add_event(struct rv_dry_run_plan *plan, const struct rv_dry_run_event *event,
			 struct rv_error *err);

/* Copies the strings; detail may be NULL. */
int rv_dry_run_add_bpf(struct rv_dry_run_plan *plan, const char *kind, const char *name,
		       const char *type, const char *detail, struct rv_error *err);

/* Copies the strings; detail may be NULL. */
int rv_dry_run_add_probe(struct rv_dry_run_plan *plan, const char *kind, const char *where,
			 const char *detail, struct rv_error *err);

/* Lets the printer name uprobe events and their config bits. */
/* Adds a planned snapshot size (printed under "planned snapshot sizes"). */
int rv_dry_run_add_snapshot(struct rv_dry_run_plan *plan, const char *what, uint64_t bytes,
			    const char *how, struct rv_error *err);

void rv_dry_run_set_uprobe_pmu(struct rv_dry_run_plan *plan, const struct rv_uprobe_pmu *pmu);

/* The gate's thresholds (record/gate.h, bpf/gate.bpf.c), for --dry-run: which
 * hits of each site fire and what --min-duration keeps. */
struct rv_dry_run_gate {
	/* The functions at the sites ("" when not known); NULL: no such site. */
	const char *start, *stop, *trigger;
	uint64_t min_duration_ns; /* 0: none */
	bool multi_snapshot;
	/* Intel PT snapshots pause PT in the kernel (record/pt_plan.h
	 * pause_snapshots): STOP pauses on every window and the gate keeps the
	 * slow ones, rather than an AUX sample at a slow window's STOP. */
	bool pt_pause;
};

/* Prints the gate's section: "gate:" then one line per role and threshold,
 * each in numbers ("min_duration = 300000 ns (300us)") and in words. */
void rv_dry_run_print_gate(FILE *out, const struct rv_dry_run_gate *gate);

/* Prints the plan. pmu (may be NULL) names intel_pt events and their config
 * bits, and heads the output with what the PMU can do. */
void rv_dry_run_print(FILE *out, const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu);

#endif
