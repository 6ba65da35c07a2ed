/* fn_engine.h: the function tracer's loader: loads bpf/functions.bpf.c,
 * places its probes on the traced processes' functions and on the kernel
 * events asked for, and reads its counts.
 *
 * Records leave through a BPF ring buffer per CPU that the engine creates
 * (nr_rings of ring_bytes each) and the caller drains (fn_stream.h); the
 * records the rings refused are counted per CPU (rv_fn_engine_lost). In
 * recorder mode (recorder_slots > 0, for snapshots) they stay instead in
 * the per-thread flight recorder in BPF maps (bpf/functions.h), and
 * rv_fn_engine_snapshot hands the sampling engine, as the samples those
 * events would have carried, the ones a snapshot selects.
 *
 * User functions: a plain uprobe at each function's entry and at each of
 * its return sites (rv_fn_probe's sites, from fn_exits.h), or, for a
 * function whose exits are RV_FN_EXITS_URETPROBE, a uprobe at its entry and
 * a uretprobe. Per process and file, uprobe_multi links (Linux 6.6+; per
 * batch of functions one for every entry and return site together, and one
 * for the uretprobes if any), made with the raw bpf(BPF_LINK_CREATE) syscall
 * since libbpf 1.1 cannot; where the kernel has no uprobe_multi, or refuses
 * a batch, one perf link per probe, and a function the kernel refuses then
 * is skipped and listed (rv_fn_engine_refused). The bpf_cookie of every
 * probe says the function's index in the table given at open, and what the
 * probe is (bpf/functions.h).
 *
 * Kernel functions (--kernel-functions): an fentry/fexit copy of the object
 * per function, or a kprobe and a kretprobe, as the plan says (kfunc.h, which
 * decides what this kernel allows and which functions match; included here).
 *
 * Library-like: nothing is printed; progress goes to the caller's callback.
 * Implemented in fn_engine.c (loading, arming, counts), fn_attach.c
 * (probes), fn_recorder.c (recorder mode) and fn_describe.c (--dry-run),
 * which share fn_engine_internal.h.
 *
 * Not here: which functions (fn_select.h), which kernel functions and by
 * which method (kfunc.h), the perf events and their rings (sample_engine.h),
 * what records mean (src/decode).
 */
#ifndef RV_RECORD_FN_ENGINE_H
#define RV_RECORD_FN_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../bpf/functions.h" /* enum rv_fn_stat, RV_FN_* */
#include "record/dry_run.h"
#include "record/fn_exits.h"
#include "record/fn_select.h"
#include "record/kfunc.h"
#include "record/sample_engine.h"
#include "util/error.h"

/* Kernel event groups (--kernel-events), as bits. */
enum rv_fn_kernel_events {
	RV_FN_EVENTS_SYSCALLS = 1, /* raw_syscalls:sys_enter, sys_exit */
	RV_FN_EVENTS_SCHED = 2,	   /* sched_switch (raw tracepoint) */
	RV_FN_EVENTS_FAULTS = 4,   /* exceptions:page_fault_user */
	RV_FN_EVENTS_IRQ = 8,	   /* irq:irq_handler_entry, irq_handler_exit */
};

/* Functions one uprobe_multi link holds at most: progress is said between
 * links. */
#define RV_FN_BATCH 1024

/* The environment variable that, set to 0, makes the engine use one perf
 * link per function even where the kernel has uprobe_multi (tests). */
#define RV_UPROBE_MULTI_ENV "REARVIEW_UPROBE_MULTI"

/* ---- the engine ---- */

struct rv_fn_engine_config {
	const struct rv_fn_probe *funcs; /* the user functions: cookie = index */
	size_t nr_funcs;
	const struct rv_kfunc_plan *kfuncs; /* NULL or empty: none */
	unsigned kernel_events;		    /* enum rv_fn_kernel_events bits */
	bool all_threads;		    /* --multi-thread */
	/* Follow the processes the targets fork (not what they exec): the
	 * user-function links are placed on every process that maps the
	 * probed files, and BPF keeps the calls of the targets and of their
	 * children (the target map, which BPF keeps up to date at each fork,
	 * exec and exit). What it costs others: a process outside the set that
	 * runs a probed function takes the probe's trap and a BPF run that
	 * returns at once. */
	bool follow_children;
	/* The kernel's BTF and --btf (kernel_btf.h), borrowed; NULL: libbpf's
	 * defaults. The object's CO-RE relocations need one or the other;
	 * follow_children and fentry the kernel's own. */
	const struct rv_kernel_btf *btf;
	int gate_windows_fd;  /* --filter: the gate's window map; -1: none */
	bool no_uprobe_multi; /* one perf link per function regardless */
	/* Ring buffers: one per CPU, of ring_bytes each (0: the default,
	 * functions.h's RV_FN_RING_BYTES within RV_FN_RINGS_TOTAL_BYTES in
	 * all), rounded up to a power of two of pages (not in recorder mode). */
	size_t nr_rings;
	uint32_t ring_bytes;
	/* Recorder mode: threads the per-thread flight recorder has slots
	 * for (at most RV_FN_RECORDER_MAX_SLOTS); 0: records go to the
	 * bpf-output events. */
	uint32_t recorder_slots;
};

/* How the user functions ended up attached, over every attach call. */
struct rv_fn_attach_report {
	size_t attached;      /* functions with both their probes */
	size_t by_multi;      /* of which through uprobe_multi links */
	size_t by_perf_links; /* of which through one perf link per function */
	size_t refused;	      /* functions the kernel refused (skipped) */
	size_t kfuncs;	      /* kernel functions attached */
	size_t kfuncs_refused;
	bool multi_available; /* the kernel has uprobe_multi (vmlinux BTF says so) */
	int multi_error;      /* why a uprobe_multi link failed (errno), 0 if none did */
	uint64_t attach_ns;   /* time spent attaching user functions */
};

typedef void (*rv_fn_progress_fn)(void *ctx, size_t done, size_t total);

struct rv_fn_engine;

/* Whether this kernel has uprobe_multi links (vmlinux BTF knows
 * BPF_TRACE_UPROBE_MULTI). */
bool rv_fn_uprobe_multi_supported(void);

/* Whether the tracer's object can load with this BTF (kernel_btf.h): its
 * CO-RE relocations need the kernel's BTF or --btf; following children the
 * kernel's own. Before anything is set up; err says what to do. */
int rv_fn_engine_check_btf(const struct rv_kernel_btf *btf, bool follow_children,
			   struct rv_error *err);

/* Loads the programs (only those config needs) and fills the bpf-output map.
 * Errors say which permission or feature is missing. */
int rv_fn_engine_open(struct rv_fn_engine **out, const struct rv_fn_engine_config *config,
		      struct rv_error *err);

/* Lets the tracepoints record process pid's threads. */
int rv_fn_engine_add_process(struct rv_fn_engine *e, pid_t pid, struct rv_error *err);

/* follow_children: up to max children in the target map now (alive, not
 * exec'd); returns how many were filled. */
size_t rv_fn_engine_children(const struct rv_fn_engine *e, pid_t *pids, size_t max);

/* Attaches the tracepoints of the kernel event groups (and, following
 * children, the fork, exec and exit programs) and the kernel
 * functions. Kernel functions the kernel refuses are skipped and counted. */
int rv_fn_engine_attach_kernel(struct rv_fn_engine *e, struct rv_error *err);

/* Attaches functions [first, first + count) of the table in process pid
 * (uretprobes first, then entries and return sites). progress (may be NULL) is told how many are
 * done after every batch. */
int rv_fn_engine_attach_functions(struct rv_fn_engine *e, pid_t pid, size_t first, size_t count,
				  rv_fn_progress_fn progress, void *ctx, struct rv_error *err);

/* Starts recording, once every probe is attached (nothing is recorded
 * before). */
int rv_fn_engine_arm(struct rv_fn_engine *e, struct rv_error *err);

void rv_fn_engine_report(const struct rv_fn_engine *e, struct rv_fn_attach_report *out);

/* The i-th function the kernel refused: its table index and the error. */
size_t rv_fn_engine_nr_refused(const struct rv_fn_engine *e);
void rv_fn_engine_refused(const struct rv_fn_engine *e, size_t i, size_t *index, int *error);

/* Sums the programs' per-CPU counts (enum rv_fn_stat). */
int rv_fn_engine_stats(const struct rv_fn_engine *e, uint64_t stats[RV_FN_NR_STATS],
		       struct rv_error *err);

/* The bytes of each CPU's ring buffer that config asks for. */
uint32_t rv_fn_ring_bytes(const struct rv_fn_engine_config *config);

/* The ring buffers, indexed by CPU (none in recorder mode); the fds stay the
 * engine's. */
size_t rv_fn_engine_rings(const struct rv_fn_engine *e, const int **fds);

/* Records CPU cpu's ring refused so far because it was full (read from the
 * programs' globals: no system call). */
uint64_t rv_fn_engine_lost(const struct rv_fn_engine *e, uint32_t cpu);

/* Stops recording at once: the programs stay attached but record nothing
 * from here (a program already past its check finishes its record). */
void rv_fn_engine_disarm(struct rv_fn_engine *e);

/* Removes every probe (the processes run on, unprobed); counts stay
 * readable. Can block in the kernel while a thread of a target keeps
 * hitting probes with a uretprobe pending: call it through rv_hold_release
 * (hold.h). Touches only the links, so it may run on its own thread while
 * another reads the maps. */
void rv_fn_engine_release(struct rv_fn_engine *e);

/* The probes rv_fn_engine_release would remove (entries, returns, kernel
 * functions), for messages; 0 once released. */
size_t rv_fn_engine_nr_probes(const struct rv_fn_engine *e);

/* rv_fn_engine_disarm, then rv_fn_engine_release. */
void rv_fn_engine_detach(struct rv_fn_engine *e);

void rv_fn_engine_free(struct rv_fn_engine *e);

/* ---- recorder mode ---- */

/* Hands engine (rv_sample_engine_add_output), as bpf-output samples, the
 * recorder's records that sel selects (NULL: every one) and that no earlier
 * call handed on: those of thread sel->tid (0: every thread) with times in
 * [sel->since, sel->until]. A thread's records older than since are never
 * handed on afterwards (snapshots of one thread come in time order); newer
 * ones than until are kept for later. *handed: records handed on. */
int rv_fn_engine_snapshot(struct rv_fn_engine *e, struct rv_sample_engine *engine,
			  const struct rv_sample_selection *sel, size_t *handed,
			  struct rv_error *err);

/* One thread of the recorder: its records, how many of them the newer ones
 * overwrote (records - RV_FN_RECORDER_RECORDS, when positive), and how many
 * of those no snapshot had read (taken or passed over) before. */
struct rv_fn_recorder_thread {
	uint32_t tid, pid;
	uint64_t records, overwritten, overwritten_unread;
};

/* The recorder's threads, up to max (none outside recorder mode). */
int rv_fn_engine_recorder_threads(const struct rv_fn_engine *e, struct rv_fn_recorder_thread *out,
				  size_t max, size_t *count, struct rv_error *err);

/* The selection in one slot (a copy of it), separate for tests: calls visit
 * for each entry sel selects at or after *consumed, oldest first, skipping
 * entries whose seq shows they were overwritten, and advances *consumed past
 * every entry no later selection can want (those up to the first one newer
 * than sel->until). Returns the entries visited; *error: visit's error. */
typedef int (*rv_fn_slot_visit)(void *ctx, const struct rv_fn_slot_entry *entry);
size_t rv_fn_slot_select(const struct rv_fn_slot *slot, uint64_t *consumed,
			 const struct rv_sample_selection *sel, rv_fn_slot_visit visit, void *ctx,
			 int *error);

/* --dry-run: the probes (every function's entry uprobe and its return-site
 * uprobes or uretprobe, the tracepoints, the kernel functions), programs and maps config would set
 * up. */
int rv_fn_engine_describe(struct rv_dry_run_plan *plan, const struct rv_fn_engine_config *config,
			  struct rv_error *err);

#endif
