/* gate.h: what the gate's BPF side (gate.bpf.c) and user side (src/record/gate.c)
 * share, and the window-state map that other BPF programs consult.
 *
 * Not here: the loader's API (src/record/gate.h) or any policy beyond the
 * layouts and numbers both sides must agree on.
 */
#ifndef RV_BPF_GATE_H
#define RV_BPF_GATE_H

#ifndef __bpf__
#include <stdint.h>
typedef uint32_t rv_gate_u32;
typedef uint64_t rv_gate_u64;
#else
typedef u32 rv_gate_u32;
typedef u64 rv_gate_u64;
#endif

/* What a perf event on a probe does when the gate lets it fire. */
enum rv_gate_role {
	RV_GATE_START = 0,	 /* opens the thread's window (outermost call only) */
	RV_GATE_STOP = 1,	 /* closes it (the matching outermost return of START) */
	RV_GATE_STOP_SAMPLE = 2, /* fires when the closing window lasted > min_duration_ns */
	RV_GATE_TRIGGER = 3,	 /* fires on a trigger hit (first only unless multi_snapshot) */
	RV_GATE_NR_ROLES = 4,
};

/* The bpf_cookie of each attached event: its probe's index and its role. */
#define RV_GATE_COOKIE(probe, role)  (((rv_gate_u64)(probe) << 8) | (rv_gate_u64)(role))
#define RV_GATE_COOKIE_PROBE(cookie) ((rv_gate_u32)((cookie) >> 8))
#define RV_GATE_COOKIE_ROLE(cookie)  ((rv_gate_u32)((cookie)&0xff))

/* Distinct (file, offset) probe sites one gate can hold. */
#define RV_GATE_MAX_PROBES 64
/* Threads that can be inside a window at once. */
#define RV_GATE_MAX_WINDOWS 65536
/* Threads whose last hit is remembered (an LRU: stale entries are harmless). */
#define RV_GATE_MAX_THREADS 65536
/* Bytes of the record ring buffer (a power of two, a multiple of the page size). */
#define RV_GATE_RING_BYTES (1u << 20)

/* Per-probe configuration, written by user space once every event on the probe
 * is attached. One hit of a probe runs the program once per event on it (each
 * PMU uprobe event has its own consumer); runs_per_hit says how many, so the
 * state changes once per hit whatever the order of the runs. 0: not ready. */
struct rv_gate_probe {
	rv_gate_u32 runs_per_hit;
	rv_gate_u32 roles; /* bit per enum rv_gate_role present on the probe */
};

/* The window-state map's value: present exactly while the thread (the key, a
 * kernel tid) is inside a window. */
struct rv_gate_window {
	rv_gate_u64 start_ns; /* bpf_ktime_get_ns() at the outermost START */
	rv_gate_u32 depth;    /* START calls not yet matched by a STOP, >= 1 */
	rv_gate_u32 pid;      /* tgid */
};

/* Slots of the per-CPU statistics array. Per role: program runs (one per hit
 * and event), of which fired and suppressed. Then counts of hits (once each). */
enum rv_gate_stat {
	RV_GATE_STAT_RUNS = 0,						 /* + role */
	RV_GATE_STAT_FIRED = RV_GATE_STAT_RUNS + RV_GATE_NR_ROLES,	 /* + role */
	RV_GATE_STAT_SUPPRESSED = RV_GATE_STAT_FIRED + RV_GATE_NR_ROLES, /* + role */
	RV_GATE_STAT_HITS = RV_GATE_STAT_SUPPRESSED + RV_GATE_NR_ROLES,	 /* probe hits */
	RV_GATE_STAT_WINDOWS,	      /* windows opened and closed */
	RV_GATE_STAT_SLOW_WINDOWS,    /* of which longer than min_duration_ns */
	RV_GATE_STAT_NESTED_STARTS,   /* START hits inside an open window */
	RV_GATE_STAT_UNMATCHED_STOPS, /* STOP hits outside any window */
	RV_GATE_STAT_TRIGGERS,	      /* trigger hits */
	RV_GATE_STAT_SNAPSHOTS,	      /* snapshot roles fired (STOP_SAMPLE, TRIGGER) */
	RV_GATE_STAT_OTHER_PROCESS,   /* runs in a process that is not the target */
	RV_GATE_STAT_NOT_READY,	      /* runs on a probe not yet configured */
	RV_GATE_STAT_RECORD_DROPS,    /* records lost: the ring buffer was full */
	RV_GATE_STAT_WINDOW_MAP_FULL, /* START hits that found the window map full */
	RV_GATE_STAT_RUN_MISMATCH,    /* runs that did not fit the expected runs per hit */
	RV_GATE_STAT_HELD,	      /* START and trigger hits refused while a copy was held */
	RV_GATE_NR_STATS,
};

/* Records in the ring buffer. Times are bpf_ktime_get_ns(): CLOCK_MONOTONIC. */
enum rv_gate_record_type {
	RV_GATE_REC_WINDOW_BEGIN = 1,
	RV_GATE_REC_WINDOW_END = 2,
	RV_GATE_REC_TRIGGER = 3,
};

#define RV_GATE_REC_FLAG_SLOW  1u /* WINDOW_END: longer than min_duration_ns */
#define RV_GATE_REC_FLAG_FIRED 2u /* a snapshot role on this hit fired */

struct rv_gate_event {
	rv_gate_u64 time_ns;
	rv_gate_u64 duration_ns; /* WINDOW_END only */
	rv_gate_u32 type;	 /* enum rv_gate_record_type */
	rv_gate_u32 flags;	 /* RV_GATE_REC_FLAG_* */
	rv_gate_u32 pid, tid;
	rv_gate_u32 probe; /* index of the probe that was hit */
	rv_gate_u32 cpu;   /* bpf_get_smp_processor_id() of the hit */
};

/* The hold (hold_after_snapshot, Intel PT with aux_pause): set by the
 * program when a snapshot role fires, cleared by user space when it has
 * copied the AUX area (and, for a trigger, PT ran again). While it is set,
 * START and trigger hits are refused: a START would resume PT over the
 * trace being copied, a trigger would pause nothing new. */
#define RV_GATE_HOLD_FREE 0
#define RV_GATE_HOLD_HELD 1

#ifdef __bpf__
/* The window-state map, for any BPF object that must know whether a thread is
 * inside a window: declare it with this macro, then, before loading that
 * object, bpf_map__reuse_fd() it onto the gate's map (rv_gate_windows_fd()). */
#define RV_GATE_WINDOWS_MAP(name)                                                                  \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__uint(max_entries, RV_GATE_MAX_WINDOWS);                                          \
		__type(key, u32); /* tid */                                                        \
		__type(value, struct rv_gate_window);                                              \
	} name SEC(".maps")
#endif

#endif
