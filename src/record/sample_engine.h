/* sample_engine.h: the sampling engine, which records stacks on any Linux
 * machine, and carries the records of BPF programs (the function tracer's).
 *
 * One perf event per CPU samples at a fixed frequency on the best clock the
 * machine has (hardware cycles, else cpu-clock), with call chains by frame
 * pointers (the kernel walks them) or with a copy of registers and user stack
 * for DWARF unwinding. In DWARF mode each sample is unwound as it arrives, on
 * a thread of its own (record/online_unwind.h), and kept as its call chain,
 * a few hundred bytes instead of the copy: the capture's attribute then says
 * CALLCHAIN without REGS_USER and STACK_USER, and perf report shows its
 * stacks. keep_raw_stacks keeps the copies instead (today's perf --call-graph
 * dwarf capture). A BPF program on every event keeps only the
 * target's samples (bpf/sample_filter.bpf.c). Samples drained from the per-CPU
 * rings go either into a flight recorder holding the last snapshot_size bytes
 * (sorted by time when it is written), or, with full_execution, through a
 * reorder buffer into the capture in time order.
 * The target's context switches (its threads leaving the CPU, and why, and
 * coming back) come from a BPF program on sched_switch
 * (bpf/sample_tasks.bpf.c, struct rv_switch_state) writing into a bpf-output
 * event per CPU, named RV_SWITCH_STATE_EVENT (decode/off_cpu.h), whose output
 * goes to the CPU's sampling ring; they are kept with the samples (in the
 * flight recorder, aging out with them and taken by snapshots by thread and
 * time, or in time order into the capture). Only the target's: a busy
 * neighbour's do not fill the rings. Where the kernel refuses that program,
 * or there is no BTF for its CO-RE reads (btf below), the sampling events
 * record the switches instead (context_switch: PERF_RECORD_SWITCH_CPU_WIDE of
 * every task, the recorded threads' kept), without reasons, and a neighbour
 * that switches constantly can fill the rings (stats.lost).
 * Sideband (MMAP2, COMM, FORK, EXIT) of the target is always kept whole, and
 * the target's existing threads and mappings are synthesized from /proc at
 * start, as perf does, so that nothing mapped before recording is unknown.
 *
 * With follow_children, the processes the targets fork (and their children,
 * and what they exec) are recorded too, from their first instant: the BPF
 * filter's companion programs (bpf/sample_tasks.bpf.c, tp_btf: the kernel's
 * own BTF) add each to its target set at the fork, and the engine keeps their
 * sideband as the targets'. Without it, the targets' new children are only
 * counted (from the FORK records the per-CPU events see anyway).
 *
 * With bpf_output, the per-CPU events are software bpf-output events instead
 * (PERF_COUNT_SW_BPF_OUTPUT, sample_type IDENTIFIER|IP|TID|TIME|CPU|RAW): they
 * sample nothing themselves, and carry what BPF programs write into them
 * with bpf_perf_event_output() (the caller puts their fds, from
 * rv_sample_engine_output_fds, into its BPF_MAP_TYPE_PERF_EVENT_ARRAY). No
 * sample filter is loaded: those programs choose what they write. Rings,
 * flight recorder, snapshots, marks and sideband work as for samples.
 *
 * Not here: what the samples mean. The engine fills a perf.data capture.
 */
#ifndef RV_RECORD_SAMPLE_ENGINE_H
#define RV_RECORD_SAMPLE_ENGINE_H

#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/perf_data.h"
#include "record/extra_events.h"
#include "util/error.h"

struct rv_kernel_btf;

/* Bytes of user stack copied per sample in DWARF mode, by default (the
 * kernel copies at most 65528: cli/options.c checks --callgraph-mode). */
#define RV_DWARF_STACK_BYTES 8192

struct rv_sample_config {
	const pid_t *pids;
	size_t nr_pids;
	bool follow_children;	      /* record the processes the targets fork (not --no-follow) */
	bool all_threads;	      /* --multi-thread */
	bool include_kernel;	      /* kernel samples and kernel call chains */
	bool dwarf;		      /* registers and stack instead of frame-pointer chains */
	bool full_execution;	      /* keep everything instead of a flight recorder */
	uint64_t frequency;	      /* samples per second per CPU */
	uint64_t snapshot_size_bytes; /* flight recorder capacity */

	/* dwarf: the stack copied per sample (0: RV_DWARF_STACK_BYTES) */
	uint32_t dwarf_stack_bytes;
	/* dwarf: each sample is kept as its unwound call chain (see above);
	 * this keeps the registers and stack copy instead, for perf report
	 * --call-graph dwarf on the capture. */
	bool keep_raw_stacks;

	/* The kernel's BTF and --btf (kernel_btf.h), borrowed; NULL: libbpf's
	 * defaults. Without BTF the filter still loads, but switches have no
	 * reason; follow_children needs the kernel's own BTF. */
	const struct rv_kernel_btf *btf;

	struct rv_perf_writer *capture;
	/* --filter: the gate's window map (rv_gate_windows_fd); samples of
	 * threads outside every window are dropped in the kernel. -1: none. */
	int gate_windows_fd;
	/* The sampling events record no context switches (no context_switch):
	 * switch_state writes the target's. rv_sample_engine_open sets it in
	 * its copy when that program runs; for rv_sample_engine_attr, the
	 * caller's guess (--dry-run: where the kernel has BTF). */
	bool bpf_switches;
	/* bpf-output events instead of sampling (see above); frequency, dwarf,
	 * include_kernel, all_threads and gate_windows_fd are then unused. */
	bool bpf_output;
	const char *event_name; /* bpf_output: the events' name in the capture */
	/* bpf_output: the byte offset, in each record's raw data, of a u32
	 * naming the thread the record is about, which snapshots select by
	 * (a BPF program may write about a thread other than the one running). */
	uint32_t raw_tid_offset;
	/* --events (record/extra_events.h), resolved; NULL or empty: none.
	 * Opened on the targets' threads (inherit) per CPU, their records sent
	 * to the CPU's ring: kept like samples (flight recorder, snapshots,
	 * reorder), for the recorded threads only, and declared in the capture
	 * under their names. Borrowed until rv_sample_engine_open returns. */
	const struct rv_extra_events *extra_events;
	/* bpf_output with full_execution: ordered streams of records the
	 * caller pushes (rv_sample_engine_push_output), one per CPU, merged
	 * with the engine's own in the reorder buffer. */
	size_t nr_output_streams;
	/* Without full_execution, what a recorder killed leaves for
	 * rearview decode (record/flight_rescue.h): flight_file, the flight
	 * recorder in that file (flight_recorder.h), created here and removed
	 * by rv_sample_engine_free; rescue, a capture flushed as it grows
	 * (the caller's, perf_data.h) into which the events are declared at
	 * start and the sideband and marks written as they come. NULL: none. */
	const char *flight_file;
	struct rv_perf_writer *rescue;
};

struct rv_sample_stats {
	uint64_t samples;	  /* target samples (bpf_output: records) read */
	uint64_t lost;		  /* records the kernel could not write (ring full) */
	uint64_t throttled;	  /* times the kernel throttled sampling */
	uint64_t evicted;	  /* samples that aged out of the flight recorder */
	uint64_t written_samples; /* samples in the capture */
	uint64_t filter_kept, filter_other, filter_thread; /* the BPF filter's counts */
	uint64_t filter_window; /* samples outside every --filter window, dropped */
	uint64_t snapshots;	/* rv_sample_engine_snapshot calls that took samples */
	uint64_t marks;		/* rv_sample_engine_add_mark records */
	uint64_t switches;	/* the kept threads' context switch records and reasons read */
	uint64_t extra_samples; /* --events samples of recorded threads read */
	/* children of recorded processes: recorded (follow_children), not
	 * recorded (without it), and not recorded because the filter's set of
	 * processes was full */
	uint64_t children_followed, children_not_followed, children_unfollowed;
	const char *clock_name; /* "cycles", "cpu-clock" or (bpf_output) "bpf-output" */
	uint64_t frequency;

	/* DWARF mode unwound as samples arrive (see online_unwind.h): samples
	 * unwound, kept with their IP alone (the unwinder fell behind), unwound
	 * to their IP only, cut by the copy, stopped inside the copy at a
	 * caller nothing described; the unwinding thread's wall time unwinding
	 * and its CPU time; bytes of the samples kept */
	bool online_unwind;
	uint64_t unwound, not_unwound, unwind_failed, stacks_cut, unwind_stopped;
	uint64_t unwind_ns, unwind_cpu_ns;
	uint64_t sample_bytes;
};

struct rv_sample_engine;

/* The attribute of the per-CPU events (hardware cycles, or cpu-clock where
 * the machine has no hardware PMU; bpf-output with config->bpf_output), for
 * --dry-run. */
void rv_sample_engine_attr(const struct rv_sample_config *config, bool hardware,
			   struct perf_event_attr *attr);

/* The attribute of the per-CPU bpf-output events that carry the target's
 * context switches (RV_SWITCH_STATE_EVENT; sampling only), for --dry-run. */
void rv_sample_engine_switch_attr(struct perf_event_attr *attr);

/* Opens the events (disabled), maps their rings, loads and attaches the BPF
 * filter (not with bpf_output). Errors say what permission or feature is
 * missing. */
int rv_sample_engine_open(struct rv_sample_engine **out, const struct rv_sample_config *config,
			  struct rv_error *err);

/* Enables sampling and synthesizes the targets' threads and mappings. */
int rv_sample_engine_start(struct rv_sample_engine *e, struct rv_error *err);

/* The bpf-output events (bpf_output only): up to max (cpu, fd) pairs, one
 * per CPU that has an event; returns how many. The fds stay the engine's.
 * bpf_perf_event_output() into an event fails until rv_sample_engine_start
 * has enabled it. */
size_t rv_sample_engine_output_fds(const struct rv_sample_engine *e, int *cpus, int *fds,
				   size_t max);

/* File descriptors to poll for readable data (POLLIN). */
size_t rv_sample_engine_pollfds(const struct rv_sample_engine *e, struct pollfd *fds, size_t max);

/* Drains every ring once. */
int rv_sample_engine_drain(struct rv_sample_engine *e, struct rv_error *err);

/* Adds a record of rearview's own (a gate mark, capture/marks.h) at `time`; it
 * is written with the samples, in time order, when they are. */
int rv_sample_engine_add_mark(struct rv_sample_engine *e, const struct perf_event_header *rec,
			      uint64_t time, struct rv_error *err);

/* A record a BPF program kept itself instead of writing it into a bpf-output
 * event (the function tracer's recorder mode), with what perf would have
 * stamped on it. */
struct rv_output_sample {
	uint64_t time; /* CLOCK_MONOTONIC, as the events' */
	uint64_t ip;   /* 0: a kernel record (misc KERNEL), else a user one */
	uint32_t cpu;
	uint32_t pid, tid; /* the thread that ran */
	const void *raw;
	uint32_t raw_size; /* bytes of raw */
};

/* Fills buf with the PERF_RECORD_SAMPLE the kernel writes when a BPF program
 * passes s->raw to bpf_perf_event_output() on the bpf-output event `id`
 * (sample_type IDENTIFIER|IP|TID|TIME|CPU|RAW; the raw data zero-padded so
 * that its u32 size and it end on 8 bytes). Returns the record's size, or 0
 * when it does not fit in size bytes (or in a record). */
size_t rv_output_sample_build(void *buf, size_t size, uint64_t id,
			      const struct rv_output_sample *s);

/* bpf_output: puts that sample of CPU s->cpu's event (the first event's when
 * that CPU has none) into the flight recorder, as if drained from its ring,
 * for the next snapshot or stop to write. Not with full_execution. */
int rv_sample_engine_add_output(struct rv_sample_engine *e, const struct rv_output_sample *s,
				struct rv_error *err);

/* bpf_output with full_execution: puts that sample into CPU s->cpu's
 * stream of the reorder buffer (each stream must come in time order, but
 * for the rare late record, see reorder.h); it is written into the capture,
 * merged by time with the sideband, at a drain once every ring has been
 * read past its time. */
int rv_sample_engine_push_output(struct rv_sample_engine *e, const struct rv_output_sample *s,
				 struct rv_error *err);

/* Records the caller's rings lost (lost of them, on CPU cpu, noticed at
 * `time`): a PERF_RECORD_LOST_SAMPLES in the capture, counted in the
 * stats' lost, so that the run and the capture say the same number. */
int rv_sample_engine_add_lost(struct rv_sample_engine *e, uint32_t cpu, uint64_t lost,
			      uint64_t time, struct rv_error *err);

/* Records a bpf_output caller keeps itself rather than in the engine's
 * flight recorder (the function tracer's, at 48 bytes a record): at stop,
 * when the samples are kept, next is asked for them in time order until it
 * returns false, and each is written as a sample of its CPU's event, merged
 * with the sideband and marks. Not with full_execution. */
struct rv_output_source {
	bool (*next)(void *ctx, struct rv_output_sample *s);
	void *ctx;
};
void rv_sample_engine_set_source(struct rv_sample_engine *e, const struct rv_output_source *source);

/* The first and last time of the samples and marks written so far (a
 * window mark from its start), 0 before any: the capture's time range
 * (rv_perf_meta's sample_time_*), so that no reader needs a pass to find
 * it. */
void rv_sample_engine_time_range(const struct rv_sample_engine *e, uint64_t *first, uint64_t *last);

/* The samples a snapshot takes from the flight recorder: those of thread tid
 * (0: every thread) with times in [since, until]. */
struct rv_sample_selection {
	uint64_t since, until;
	uint32_t tid;
};

/* Takes a snapshot now (drain first): writes the selected samples, and the
 * sideband and marks up to `until` not yet written, into the capture, in time
 * order, and removes those samples from the flight recorder. Snapshots are
 * written in the order they are taken; the samples of one thread must be
 * taken in time order (a thread's windows end in order). Not with
 * full_execution. *taken: the samples written. */
int rv_sample_engine_snapshot(struct rv_sample_engine *e, const struct rv_sample_selection *sel,
			      size_t *taken, struct rv_error *err);

/* Disables sampling, drains what is left, and writes what is kept into the
 * capture (which the caller then finishes): the sideband and marks, and the
 * flight recorder's samples when keep_samples (after snapshots, what is left
 * in it was not asked for). */
int rv_sample_engine_stop(struct rv_sample_engine *e, bool keep_samples, struct rv_error *err);

void rv_sample_engine_stats(const struct rv_sample_engine *e, struct rv_sample_stats *out);

/* follow_children: up to max children recorded whose exit was not seen (still
 * running when recording stopped); returns how many. */
size_t rv_sample_engine_running_children(const struct rv_sample_engine *e, pid_t *pids, size_t max);

void rv_sample_engine_free(struct rv_sample_engine *e);

#endif
