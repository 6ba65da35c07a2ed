/* gate.h: the BPF gate's loader: uprobe perf events on the --filter START/STOP
 * and --trigger sites, each with the gate program (bpf/gate.bpf.c) deciding per
 * hit whether the event fires, and the window/trigger records it emits.
 *
 * Usage: rv_gate_open (loads the program with the target and options), then
 * optionally share rv_gate_windows_fd() with another BPF object, then
 * rv_gate_attach once with every site, then rv_gate_poll in the recording loop,
 * rv_gate_counts at the end, rv_gate_free (which detaches everything).
 *
 * Events are per process (pid = target tgid, cpu = -1) unless the caller
 * prepares its own attr (PT: aux_resume on START, aux_pause on STOP,
 * PERF_SAMPLE_AUX on STOP_SAMPLE/TRIGGER, in a group led by intel_pt). A
 * per-process uprobe event runs the gate for every thread of the process,
 * threads created later included; its samples, though, go only to the task it
 * was opened on. One hit of a site runs the program once per event on that
 * site (file and offset), so every event on a site must watch the target: the
 * gate counts the events per site and changes its state once per hit.
 *
 * Times in records are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns), the
 * clock clock_gettime(CLOCK_MONOTONIC) reads. perf's sample times are
 * local_clock unless an event sets use_clockid with CLOCK_MONOTONIC; a caller
 * mixing both must either do that or measure the offset between the clocks.
 *
 * Not here: resolving probe specs to (path, offset) (probe_site.h), building PT
 * attrs (pt_attr.h), reading the events' rings.
 */
#ifndef RV_RECORD_GATE_H
#define RV_RECORD_GATE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/gate.h" /* bpf/gate.h: enum rv_gate_role and the shared layouts */
#include "util/error.h"

struct rv_kernel_btf;

struct rv_gate_config {
	pid_t pid;		  /* the target process (tgid); the gate ignores others */
	uint64_t min_duration_ns; /* STOP_SAMPLE fires for windows longer than this */
	bool multi_snapshot;	  /* snapshot roles fire on every hit, not only the first */
	/* Intel PT with aux_pause: a slow window is kept (FIRED) at its STOP
	 * without a STOP_SAMPLE event */
	bool keep_slow_windows;
	/* a fired snapshot holds START and trigger hits off until
	 * rv_gate_release (bpf/gate.h: the hold) */
	bool hold_after_snapshot;
	/* The kernel's BTF and --btf (kernel_btf.h), borrowed; NULL: libbpf's
	 * defaults. The gate's object needs none: it loads without BTF. */
	const struct rv_kernel_btf *btf;
};

struct rv_gate_site {
	enum rv_gate_role role;
	const char *path; /* file the uprobe goes into */
	uint64_t offset;  /* file offset of the probed instruction */
	/* NULL: a plain per-process event (rv_gate_plain_attr, pid = config pid,
	 * cpu -1, no group). Else the caller's event: copied, with type, config1
	 * (path), config2 (offset) and, when 0, sample_period (1) set by the
	 * gate, and opened with event_pid, cpu and group_fd below. */
	const struct perf_event_attr *attr;
	pid_t event_pid;
	int cpu;
	int group_fd;
};

/* A record from the gate's ring buffer. */
struct rv_gate_record {
	enum rv_gate_record_type type;
	uint64_t time_ns;     /* CLOCK_MONOTONIC */
	uint64_t duration_ns; /* WINDOW_END: from the outermost START */
	uint32_t pid, tid;
	uint32_t probe; /* index of the probe hit: rv_gate_site_probe() of its sites */
	uint32_t cpu;	/* the CPU the hit ran on */
	bool slow;	/* WINDOW_END: longer than min_duration_ns */
	bool fired;	/* a snapshot role (STOP_SAMPLE, TRIGGER) fired on this hit */
};

/* A record as the ring hands it over (size bytes at data, unchecked):
 * 0 and *out set, or -EINVAL when it is short or of no known type (the
 * poll then stops, saying the ring is corrupt). Public for the fuzz
 * harness (tests/fuzz), which has no ring. */
int rv_gate_record_parse(const void *data, size_t size, struct rv_gate_record *out);

/* Returns nonzero to stop polling (rv_gate_poll then returns what it has). */
typedef int (*rv_gate_record_fn)(const struct rv_gate_record *record, void *ctx);

struct rv_gate_counts {
	/* Per role, indexed by enum rv_gate_role: hits of the role's events (one
	 * per site hit and event), of which fired and suppressed. */
	uint64_t runs[RV_GATE_NR_ROLES], fired[RV_GATE_NR_ROLES], suppressed[RV_GATE_NR_ROLES];
	uint64_t hits;		  /* probe hits by the target, each counted once */
	uint64_t windows;	  /* windows closed */
	uint64_t slow_windows;	  /* of which longer than min_duration_ns */
	uint64_t nested_starts;	  /* START hits inside a window */
	uint64_t unmatched_stops; /* STOP hits outside any window */
	uint64_t triggers;	  /* trigger hits */
	uint64_t snapshots;	  /* snapshot roles fired */
	uint64_t other_process;	  /* hits of other processes (suppressed) */
	uint64_t not_ready;	  /* hits before the site was configured (suppressed) */
	uint64_t record_drops;	  /* records lost to a full ring buffer */
	uint64_t window_map_full; /* windows not opened: too many threads inside one */
	uint64_t run_mismatch;	  /* hits whose runs did not match the site's events */
	uint64_t held;		  /* START and trigger hits refused while a copy was held */
};

struct rv_gate;

/* The uprobe PMU's type from /sys/bus/event_source/devices/uprobe/type. */
struct rv_dry_run_plan;

/* The gate's program and maps, for --dry-run (windows: --filter's window
 * map is used; note: what its decisions drive). */
int rv_gate_describe_bpf(struct rv_dry_run_plan *plan, bool windows, const char *note,
			 struct rv_error *err);

/* "START", "STOP", "STOP (--min-duration sample)", "TRIGGER". */
const char *rv_gate_role_name(enum rv_gate_role role);

int rv_gate_uprobe_type(uint32_t *type, struct rv_error *err);

/* A plain uprobe event on path at offset: sample_period 1, samples with TID and
 * TIME, disabled (attaching the program enables it). path must outlive the
 * perf_event_open call. */
void rv_gate_plain_attr(struct perf_event_attr *attr, uint32_t uprobe_type, const char *path,
			uint64_t offset);

/* Loads the gate program for config. Errors say which permission is missing. */
int rv_gate_open(struct rv_gate **out, const struct rv_gate_config *config, struct rv_error *err);

/* The window-state map (tid -> struct rv_gate_window, present while the thread
 * is inside a window), to bpf_map__reuse_fd() into another object before it
 * is loaded. */
int rv_gate_windows_fd(const struct rv_gate *g);

/* Opens one event per site, attaches the program to each (which enables the
 * events), then arms the sites. Sites with the same file and offset share a
 * probe; a probe cannot hold both START and STOP roles. Call once. On error
 * nothing stays attached. */
int rv_gate_attach(struct rv_gate *g, const struct rv_gate_site *sites, size_t nr_sites,
		   struct rv_error *err);

/* The perf event fd of site i (owned by the gate), or -1. */
int rv_gate_site_fd(const struct rv_gate *g, size_t i);

/* The probe index of site i, as records name it, or -1. */
int rv_gate_site_probe(const struct rv_gate *g, size_t i);

/* An fd that is readable when records wait (for the caller's poll loop). */
int rv_gate_records_fd(const struct rv_gate *g);

/* Waits up to timeout_ms (0: no wait, -1: forever) for records and passes each
 * to fn. Returns the number of records passed, or a negative error. */
int rv_gate_poll(struct rv_gate *g, int timeout_ms, rv_gate_record_fn fn, void *ctx,
		 struct rv_error *err);

/* Clears the hold (hold_after_snapshot): the snapshot is copied, START and
 * trigger hits may fire again. */
int rv_gate_release(struct rv_gate *g, struct rv_error *err);

/* Sums the program's per-CPU counts. */
int rv_gate_counts(const struct rv_gate *g, struct rv_gate_counts *out, struct rv_error *err);

/* Detaches and closes every event (the uprobes go with them); records already
 * in the ring can still be polled. */
void rv_gate_detach(struct rv_gate *g);

void rv_gate_free(struct rv_gate *g);

#endif
