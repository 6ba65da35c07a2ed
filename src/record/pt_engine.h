/* pt_engine.h: the Intel PT recording engine at run time: opens the PT
 * event, its group siblings and a sideband event per thread or per CPU, maps
 * the data ring and the AUX area, drains the sideband into the capture, takes
 * snapshots of the AUX area (snapshot mode) or drains it continuously (full
 * mode), and writes everything through the capture module in the layout
 * softpt writes and `perf record -e intel_pt//` writes: TIME_CONV,
 * AUXTRACE_INFO, the target's synthesized threads and mappings, then what the
 * kernel gives (MMAP2, COMM, FORK, EXIT, SWITCH, ITRACE_START, AUX, samples)
 * and PERF_RECORD_AUXTRACE records with the trace, in drain rounds closed by
 * FINISHED_ROUND.
 *
 * Every kernel interaction goes through an ops table (rv_pt_syscall_ops by
 * default), so that tests run the engine against a simulated kernel.
 *
 * The engine builds no attributes: it takes them prepared (pt_attr.h), and
 * only forces disabled=1 on what it opens. Siblings (uprobe events of the
 * gate) join the PT event's group; the caller's attach callback attaches its
 * BPF programs to each sibling's fd. Samples the siblings take (PERF_SAMPLE_AUX
 * in-kernel snapshots) are written to the capture as the kernel wrote them.
 *
 * Events per slot: one slot per thread (per-thread events, cpu -1) or per CPU
 * (cpu_pid on that CPU, with context-switch sideband). Each slot has one data
 * ring on its PT event; the sideband and sibling events write into it
 * (PERF_EVENT_IOC_SET_OUTPUT), or into rings of their own where the kernel
 * refuses that.
 *
 * Kernel scope: rv_pt_engine_copy_kernel_files writes DIR/kcore_dir/{kallsyms,
 * modules} (and kcore's kernel text segments when ROOT/proc/kcore exists),
 * mode 0600.
 *
 * Pausing and resuming (Linux 6.13+), as the kernel does it (read in
 * kernel/events/core.c and arch/x86/events/intel/pt.c; the simulated kernel,
 * tests/support/fake_kernel.h, models exactly this):
 *   - a sibling with aux_pause pauses the PT event at its overflow, before
 *     the BPF-perf-event check; one with aux_resume resumes it at the end of
 *     the overflow (__perf_event_overflow). A uprobe's BPF program that
 *     returns 0 stops the hit before any of that, so the gate decides both.
 *     __perf_event_aux_pause changes hw.aux_paused and calls the driver's
 *     stop(PERF_EF_PAUSE) / start(PERF_EF_RESUME) only when the state
 *     changes.
 *   - A pause does NOT publish aux_head: pt_event_stop's PERF_EF_PAUSE path
 *     only clears TraceEn (pt_config_stop). Disabling does: DISABLE ->
 *     event_sched_out -> pt_event_del -> pt_event_stop(PERF_EF_UPDATE) ->
 *     perf_aux_output_end, which in overwrite (snapshot) mode sets aux_head
 *     to the hardware's position. So user space reads a paused event's
 *     trace by disabling it (as perf's own snapshot mode does).
 *   - hw.aux_paused is kept across DISABLE/ENABLE: ENABLE -> pt_event_start
 *     -> pt_config -> pt_config_start returns while hw.aux_paused; only
 *     __perf_event_aux_pause (and perf_event_alloc, for aux_start_paused)
 *     writes it. So a paused event re-enabled after the copy stays paused.
 *   - The only way to resume it is the overflow of an aux_resume sibling in
 *     the traced task's context (the driver resumes this CPU's PT). User
 *     space cannot overflow a uprobe, but it can arm a cpu-clock sibling
 *     with aux_resume: PERF_EVENT_IOC_REFRESH 1 enables it for exactly one
 *     overflow (the one that takes event_limit to 0 disables it again, and
 *     still resumes). _perf_event_refresh refuses inherited events (EINVAL),
 *     so a per-CPU (inherit) group's resume event is ENABLEd instead and
 *     DISABLEd by the engine when the sample of the paused thread comes
 *     (its sample precedes its resume in the same overflow). Closing and
 *     reopening the group would also start PT afresh, but loses the AUX
 *     area and the gate's attachments.
 *   - A per-CPU (inherit) group pauses per thread and CPU: each inherited
 *     child is an event of its own (inherit_event -> perf_event_alloc with
 *     the parent's attr, so a child starts paused only with
 *     aux_start_paused), and the trigger pauses the child of the thread
 *     that hit it, on the CPU it ran on. Its resume must come from that
 *     thread on that CPU: rv_pt_engine_resume takes both.
 *
 * Not here: attribute construction (pt_attr.h), the gate (gate.h), the
 * command line, decoding.
 */
#ifndef RV_RECORD_PT_ENGINE_H
#define RV_RECORD_PT_ENGINE_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "util/error.h"

/* The kernel, as the engine sees it. Every function returns a negative
 * errno on failure (never -1 with errno). ctx is the table's own. */
struct rv_pt_ops {
	void *ctx;
	/* An fd, or -errno. */
	int (*perf_event_open)(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group_fd, unsigned long flags);
	/* MAP_SHARED mapping of fd at offset: 0 and *out, or -errno. */
	int (*mmap)(void *ctx, int fd, size_t length, int prot, off_t offset, void **out);
	int (*munmap)(void *ctx, void *addr, size_t length);
	/* 0 or -errno; arg as for ioctl(2). */
	int (*ioctl)(void *ctx, int fd, unsigned long request, unsigned long arg);
	/* Ready fds, or -errno. */
	int (*poll)(void *ctx, struct pollfd *fds, size_t nr, int timeout_ms);
	int (*close)(void *ctx, int fd);
	/* The TSC now (rdtsc), for AUXTRACE references and record times. */
	uint64_t (*read_tsc)(void *ctx);
	/* CLOCK_MONOTONIC in ns, for record times when the TSC cannot be
	 * converted to perf time (no cap_user_time_zero). */
	uint64_t (*clock_ns)(void *ctx);
};

/* The real kernel. */
extern const struct rv_pt_ops rv_pt_syscall_ops;

enum rv_pt_mode {
	RV_PT_SNAPSHOT, /* AUX read-only: the hardware overwrites; rv_pt_engine_snapshot reads */
	RV_PT_FULL,	/* AUX writable: drained continuously, nothing overwritten */
};

struct rv_pt_sibling {
	const struct perf_event_attr *attr; /* group member of the PT event */
	const char *name;		    /* for the capture's event list */
};

struct rv_pt_engine_config {
	const struct perf_event_attr *pt_attr;	     /* the intel_pt event (group leader) */
	const char *pt_name;			     /* "intel_pt//u" */
	const struct perf_event_attr *sideband_attr; /* dummy: mmap2, comm, task, switches */
	const char *sideband_name;		     /* "dummy:u" */
	const struct rv_pt_sibling *siblings;
	size_t nr_siblings;
	/* Called for every sibling of every slot after it is opened. */
	int (*attach)(void *ctx, int perf_fd, size_t sibling_index, struct rv_error *err);
	void *attach_ctx;
	/* NULL, or the resume sibling (rv_pt_resume_attr): one per slot, in
	 * the PT group, opened disabled, its samples into the slot's ring; see
	 * rv_pt_engine_resume. */
	const struct perf_event_attr *resume_attr;

	/* Where: per-thread slots (tids) or per-CPU slots (cpus, tracing cpu_pid,
	 * -1 for every task). Exactly one of nr_tids and nr_cpus is non-zero. */
	const pid_t *tids;
	size_t nr_tids;
	const int *cpus;
	size_t nr_cpus;
	pid_t cpu_pid;
	/* Processes whose threads and mappings are synthesized at start. */
	const pid_t *pids;
	size_t nr_pids;

	enum rv_pt_mode mode;
	uint64_t aux_bytes;	     /* per slot: a power-of-two number of pages */
	size_t data_pages;	     /* per slot: a power of two */
	uint64_t snapshot_max_bytes; /* cap per snapshot; 0: the whole area */

	/* AUXTRACE_INFO inputs from the PMU (pt_pmu.h). */
	uint32_t pmu_type;
	uint32_t tsc_ctc_ratio_n, tsc_ctc_ratio_d; /* CPUID 0x15 EBX:EAX */
	uint32_t max_nonturbo_ratio;
	const char *filter; /* the address filter string, or NULL */

	const char *root; /* where /proc is read ("/" or a test's tree); NULL: "/" */
	struct rv_perf_writer *capture;
	const struct rv_pt_ops *ops; /* NULL: rv_pt_syscall_ops */
};

struct rv_pt_record_stats {
	uint64_t aux_bytes;	   /* PT bytes written to the capture */
	uint64_t snapshots;	   /* AUXTRACE records written */
	uint64_t aux_samples;	   /* in-kernel snapshots (PERF_SAMPLE_AUX samples) */
	uint64_t aux_sample_bytes; /* their PT bytes */
	uint64_t truncated;	   /* AUX records flagged TRUNCATED: the hardware lost data */
	uint64_t collisions;	   /* AUX records flagged COLLISION */
	uint64_t lapped;	   /* snapshots whose area had been overwritten past the last */
	uint64_t lost_records;	   /* sideband records the kernel dropped (LOST) */
	uint64_t sideband_records; /* kernel records written */
	uint64_t resume_samples;   /* samples of the resume siblings (not written) */
};

/* A resume done: the sample of slot's resume sibling for thread tid, at
 * perf time `time` (the capture's clock); PT of that thread ran again from
 * then. */
struct rv_pt_resume {
	size_t slot;
	pid_t tid;
	uint64_t time;
};

#define RV_PT_MAX_PENDING_RESUMES 16

struct rv_pt_engine;

/* Opens every event (disabled), maps the rings and AUX areas, attaches the
 * siblings. Errors name what the user can change (permissions, kernel
 * version, buffer sizes). */
int rv_pt_engine_open(struct rv_pt_engine **out, const struct rv_pt_engine_config *config,
		      struct rv_error *err);

/* Writes TIME_CONV, AUXTRACE_INFO and the event list to the capture,
 * enables the events and synthesizes the targets' threads and mappings. */
int rv_pt_engine_start(struct rv_pt_engine *e, struct rv_error *err);

/* Descriptors to poll (POLLIN: the data rings). */
size_t rv_pt_engine_pollfds(const struct rv_pt_engine *e, struct pollfd *fds, size_t max);

/* Polls the rings for up to timeout_ms through the ops, then drains. */
int rv_pt_engine_poll(struct rv_pt_engine *e, int timeout_ms, struct rv_error *err);

/* Drains every data ring once (and in full mode every AUX area). */
int rv_pt_engine_drain(struct rv_pt_engine *e, struct rv_error *err);

/* Snapshot mode: disables the PT events (which publishes aux_head), writes
 * what is new in each AUX area as an AUXTRACE record (the whole area when
 * it went round; snapshot_max_bytes caps it), and enables them again if the
 * engine runs. A PT event paused by an aux_pause sibling stays paused (see
 * the top). */
int rv_pt_engine_snapshot(struct rv_pt_engine *e, struct rv_error *err);

/* The slot that traces thread tid (per-thread slots) or CPU cpu (per-CPU
 * slots); SIZE_MAX when none does. */
size_t rv_pt_engine_slot_of(const struct rv_pt_engine *e, pid_t tid, int cpu);

/* Arms slot's resume sibling (config.resume_attr) so that the next
 * overflow of it in thread tid resumes that thread's paused PT event:
 * PERF_EVENT_IOC_REFRESH 1 on a per-thread slot (the kernel disables it
 * after that one overflow), PERF_EVENT_IOC_ENABLE on a per-CPU (inherit)
 * slot (disabled again when tid's sample is drained). The resume is seen in
 * a later drain: rv_pt_engine_take_resume. EINVAL without a resume event. */
int rv_pt_engine_resume(struct rv_pt_engine *e, size_t slot, pid_t tid, struct rv_error *err);

/* The oldest resume seen by a drain and not yet taken: true and *out. */
bool rv_pt_engine_take_resume(struct rv_pt_engine *e, struct rv_pt_resume *out);

/* Disables everything and drains what is left; with snapshot (snapshot mode
 * only) takes a last snapshot first. The caller then finishes the capture. */
int rv_pt_engine_stop(struct rv_pt_engine *e, bool snapshot, struct rv_error *err);

/* Copies ROOT/proc/{kallsyms,modules} (and kcore's kernel text when
 * ROOT/proc/kcore exists) into dir/kcore_dir, mode 0600; an empty modules
 * file where the kernel has no /proc/modules (no loadable modules). Without
 * ROOT/proc/kcore it says so, once, on stderr: the kernel's part of the
 * trace then decodes only with --vmlinux. */
int rv_pt_engine_copy_kernel_files(const char *root, const char *dir, struct rv_error *err);

void rv_pt_engine_stats(const struct rv_pt_engine *e, struct rv_pt_record_stats *out);

/* The intel_pt event of slot i (in the order of the config's tids or cpus),
 * the group leader the gate's uprobes join; -1 when it is not open. */
int rv_pt_engine_pt_fd(const struct rv_pt_engine *e, size_t slot);

/* The perf mmap page's TSC conversion, as rv_pt_engine_start read it (and
 * wrote it as TIME_CONV); false before that, or when the kernel gives none
 * (no cap_user_time_zero). */
bool rv_pt_engine_time_conv(const struct rv_pt_engine *e, struct rv_perf_time_conv *out);

/* The kernel the engine runs on (the config's ops, or rv_pt_syscall_ops). */
const struct rv_pt_ops *rv_pt_engine_ops(const struct rv_pt_engine *e);

void rv_pt_engine_free(struct rv_pt_engine *e);

#endif
