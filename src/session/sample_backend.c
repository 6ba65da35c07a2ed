/* sample_backend.c: the sampling backend of a recording session: per-CPU
 * sampling events with the BPF filter (record/sample_engine.h), the gate's
 * plain uprobes sharing their window map with the filter, snapshots and
 * marks through the engine's flight recorder. See backend.h.
 *
 * Not here: the loop (session.c), the engine (src/record/sample_engine.c).
 */
#define RV_LOG_DOMAIN "record"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/perf_data.h"
#include "decode/off_cpu.h"
#include "record/flight_rescue.h"
#include "record/sample_plan.h"
#include "session/backend.h"
#include "util/log.h"
#include "util/proc.h"

struct rv_backend_state {
	struct rv_session *s;
	struct rv_target *target;
	struct rv_perf_writer *capture;
	/* the flight recorder's rescue (record/flight_rescue.h): its file and
	 * the capture of the sideband flushed as it grows */
	struct rv_perf_writer *rescue;
	char rescue_path[PATH_MAX + 32], ring_path[PATH_MAX + 32];
	struct rv_sample_engine *engine;
	struct rv_sample_stats stats;
	char capture_path[PATH_MAX + 32];
	char note[128];
	uint64_t started_ns, stopped_ns; /* CLOCK_MONOTONIC */
	pid_t running[16]; /* children still running at the end (a few, to name them) */
	size_t nr_running;
};

#define RUNNING_SHOWN 16

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The capture's header features (the command line, the clock, the
 * tracepoints' formats for perf script), given to the writer to finish it
 * now (finish) or at every flush from now on. */
static int with_capture_meta(const struct rv_session *s, struct rv_perf_writer *capture,
			     int clockid, bool finish, struct rv_error *err)
{
	const char *const *argv = (const char *const *)s->opts->argv;
	struct rv_perf_meta meta = {
		.argc = s->opts->argc,
		.argv = argv,
		.clockid = clockid,
	};
	void *tracing = NULL;
	int ret;

	/* --events tracepoints: their formats, for perf script */
	ret = rv_extra_events_tracing_data(&s->extra_events, s->root, &tracing,
					   &meta.tracing_data_size, err);
	meta.tracing_data = tracing;
	if (!ret)
		ret = finish ? rv_perf_writer_finish(capture, &meta, err)
			     : rv_perf_writer_flush_as_it_grows(capture, &meta, 0, 0, err);
	free(tracing);
	return ret;
}

int rv_session_finish_capture(const struct rv_session *s, struct rv_perf_writer *capture,
			      int clockid, struct rv_error *err)
{
	return with_capture_meta(s, capture, clockid, true, err);
}

/* The header of the capture at finish, from now on at every flush. */
static int start_flushing(const struct rv_session *s, struct rv_perf_writer *capture, int clockid,
			  struct rv_error *err)
{
	return with_capture_meta(s, capture, clockid, false, err);
}

int rv_session_flush_capture(const struct rv_session *s, struct rv_perf_writer *capture,
			     int clockid, struct rv_error *err)
{
	return s->opts->full_execution ? start_flushing(s, capture, clockid, err) : 0;
}

int rv_session_describe_engine(const struct rv_session *s, const struct rv_sample_config *config,
			       bool hardware, const char *what, const char *note,
			       const char *program, struct rv_dry_run_plan *plan,
			       struct rv_error *err)
{
	int nr_cpus = s->machine.nr_cpus > 0 ? s->machine.nr_cpus : 1;
	int ret = 0;

	for (int cpu = 0; !ret && cpu < nr_cpus; cpu++) {
		char label[128];
		struct rv_dry_run_event ev = {
			.label = label,
			.group = -1,
			.cpu = cpu,
			.pid = -1,
			.bpf_program = program,
			.bpf_program_type = program ? "perf_event" : NULL,
		};

		snprintf(label, sizeof(label), "%s, CPU %d%s", what, cpu, note);
		rv_sample_engine_attr(config, hardware, &ev.attr);
		ret = rv_dry_run_add_event(plan, &ev, err);
	}
	return ret;
}

/* The target's context switches: a bpf-output event per CPU into that CPU's
 * sampling ring, written by switch_state on sched_switch (where it cannot be
 * attached, the sampling events record every task's, without reasons). */
static int describe_switch_reasons(const struct rv_session *s, struct rv_dry_run_plan *plan,
				   struct rv_error *err)
{
	int nr_cpus = s->machine.nr_cpus > 0 ? s->machine.nr_cpus : 1;
	int ret = 0;

	for (int cpu = 0; !ret && cpu < nr_cpus; cpu++) {
		char label[128];
		struct rv_dry_run_event ev = { .label = label, .group = -1, .cpu = cpu, .pid = -1 };

		snprintf(label, sizeof(label),
			 "the target's context switches (" RV_SWITCH_STATE_EVENT
			 "), CPU %d, output to its sampling event's ring",
			 cpu);
		rv_sample_engine_switch_attr(&ev.attr);
		ret = rv_dry_run_add_event(plan, &ev, err);
	}
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "program", "switch_state", "raw_tracepoint",
					 "writes a target thread leaving the CPU (and why) "
					 "and coming back; where it cannot be attached, the "
					 "sampling events record every task's switches "
					 "(context_switch)",
					 err);
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "map", "switch_states", "perf_event_array",
					 "the context switches' events, by CPU", err);
	if (!ret)
		ret = rv_dry_run_add_probe(plan, "raw_tracepoint", "sched_switch", "switch_state",
					   err);
	return ret;
}

/* The filter's programs that follow the target's children. */
static int describe_follow(struct rv_dry_run_plan *plan, struct rv_error *err)
{
	int ret = rv_dry_run_add_bpf(plan, "program", "follow_fork", "tp_btf/sched_process_fork",
				     "adds a process forked by a recorded one to target_processes, "
				     "before it runs",
				     err);

	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "program", "follow_exit",
					 "tp_btf/sched_process_exit",
					 "takes a child that exits out of target_processes, "
					 "into recent_exits",
					 err);
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "map", "recent_exits", "lru_hash",
					 "children that exited lately, for the sideband read "
					 "after them",
					 err);
	return ret;
}

static int sample_describe(struct rv_session *s, const char *exe, pid_t pid,
			   const struct rv_gate_sites *sites, struct rv_dry_run_plan *plan,
			   struct rv_error *err)
{
	struct rv_sample_config config = rv_sample_plan_config(&s->sample, s->opts, NULL, 0);
	char note[80] = "";
	int ret;

	(void)exe;
	config.follow_children = config.follow_children && !s->follow_blocked;
	config.bpf_switches = !rv_kernel_btf_none(&s->kernel_btf);
	if (config.dwarf)
		snprintf(note, sizeof(note), "; dwarf,%u: %s", config.dwarf_stack_bytes,
			 config.keep_raw_stacks ? "raw stacks kept"
						: "unwound as sampled, kept as call chains");
	ret = rv_session_describe_engine(s, &config, s->machine.has_cpu_pmu, "sampling", note,
					 "filter_sample", plan, err);
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "program", "filter_sample", "perf_event",
					 sites && sites->filter
						 ? "keeps the target's samples taken inside a "
						   "--filter window"
						 : "keeps the target's samples",
					 err);
	if (!ret)
		ret = rv_dry_run_add_bpf(
			plan, "map", "target_processes", "hash",
			config.follow_children ? "the processes recorded: the target, and the "
						 "children it forks while they live"
			: s->follow_blocked    ? "the processes recorded (no kernel BTF to "
						 "follow children with: the target alone)"
					       : "the processes recorded (--no-follow: the "
						 "target alone)",
			err);
	if (!ret && config.follow_children)
		ret = describe_follow(plan, err);
	if (!ret && sites && sites->filter)
		ret = rv_dry_run_add_bpf(plan, "map", "gate_windows", "hash",
					 "the gate's window map, shared", err);
	if (!ret && !rv_kernel_btf_none(&s->kernel_btf))
		ret = describe_switch_reasons(s, plan, err);
	if (!ret && sites)
		ret = rv_gating_describe(sites, pid, plan, err);
	return ret;
}

static int sample_open(struct rv_session *s, struct rv_target *target, struct rv_gating *gating,
		       struct rv_backend_state **out, struct rv_error *err)
{
	struct rv_backend_state *b = calloc(1, sizeof(*b));
	struct rv_sample_config config;
	int ret;

	*out = b;
	if (!b)
		return rv_error_set(err, ENOMEM, "out of memory");
	b->s = s;
	b->target = target;
	config = rv_sample_plan_config(&s->sample, s->opts, target->pids, target->nr_pids);
	config.gate_windows_fd = gating ? rv_gating_windows_fd(gating) : -1;
	config.follow_children = config.follow_children && !s->follow_blocked;
	config.btf = &s->kernel_btf;
	config.extra_events = &s->extra_events;
	ret = gating ? rv_gating_attach(gating, NULL, 0, err) : 0;
	snprintf(b->capture_path, sizeof(b->capture_path), "%s/perf.data", s->capture_dir);
	/* the program's stack bytes and more, whatever the scope: 0600 */
	if (!ret)
		ret = rv_perf_writer_open(&b->capture, b->capture_path, err);
	if (!ret)
		ret = rv_session_flush_capture(s, b->capture, CLOCK_MONOTONIC, err);
	/* Recorder mode: what a SIGKILL must not take, in files from the start */
	if (!ret && !s->opts->full_execution) {
		snprintf(b->rescue_path, sizeof(b->rescue_path), "%s/%s", s->capture_dir,
			 RV_FLIGHT_RESCUE_FILE);
		snprintf(b->ring_path, sizeof(b->ring_path), "%s/%s", s->capture_dir,
			 RV_FLIGHT_RING_FILE);
		ret = rv_perf_writer_open(&b->rescue, b->rescue_path, err);
		if (!ret)
			ret = start_flushing(s, b->rescue, CLOCK_MONOTONIC, err);
		config.flight_file = b->ring_path;
		config.rescue = b->rescue;
	}
	config.capture = b->capture;
	if (!ret)
		ret = rv_sample_engine_open(&b->engine, &config, err);
	return ret;
}

static int sample_start(struct rv_backend_state *b, struct rv_error *err)
{
	int ret = rv_sample_engine_start(b->engine, err);

	b->started_ns = monotonic_ns();
	if (!ret)
		rv_debug("recording %zu process%s", b->target->nr_pids,
			 b->target->nr_pids == 1 ? "" : "es");
	return ret;
}

static size_t sample_pollfds(const struct rv_backend_state *b, struct pollfd *fds, size_t max)
{
	return rv_sample_engine_pollfds(b->engine, fds, max);
}

static int sample_poll(struct rv_backend_state *b, struct rv_error *err)
{
	return rv_sample_engine_drain(b->engine, err);
}

int rv_session_engine_mark(struct rv_sample_engine *e, const struct rv_mark *mark,
			   struct rv_error *err)
{
	uint64_t record[RV_MARK_MAX_RECORD / 8];

	rv_mark_record(record, mark);
	return rv_sample_engine_add_mark(e, (const struct perf_event_header *)record, mark->time,
					 err);
}

static int sample_mark(struct rv_backend_state *b, const struct rv_mark *mark, struct rv_error *err)
{
	return rv_session_engine_mark(b->engine, mark, err);
}

static int sample_snapshot(struct rv_backend_state *b, const struct rv_gating_snapshot *what,
			   size_t *taken, struct rv_error *err)
{
	return rv_sample_engine_snapshot(b->engine, &what->selection, taken, err);
}

static int sample_stop(struct rv_backend_state *b, bool keep_rest, struct rv_error *err)
{
	int ret;

	b->stopped_ns = monotonic_ns();
	ret = rv_sample_engine_stop(b->engine, keep_rest, err);

	rv_sample_engine_stats(b->engine, &b->stats);
	b->nr_running = rv_sample_engine_running_children(b->engine, b->running, RUNNING_SHOWN);
	return ret;
}

void rv_session_note_running_children(const pid_t *pids, size_t n)
{
	char line[1024];
	size_t used = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n && used < sizeof(line); i++) {
		char comm[64];

		if (!rv_proc_comm(pids[i], comm, sizeof(comm)))
			snprintf(comm, sizeof(comm), "?");
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s [%d]",
					 i ? ", " : "", comm, (int)pids[i]);
	}
	rv_note("the recording ended when the target exited; %zu of its child processes "
		"%s still running and %s recorded only until then: %s",
		n, n == 1 ? "was" : "were", n == 1 ? "is" : "are", line);
}

static void note_children(const struct rv_backend_state *b)
{
	rv_session_note_running_children(b->running, b->nr_running);
}

static int sample_finish(struct rv_backend_state *b, struct rv_render_options *out,
			 struct rv_error *err)
{
	const struct rv_sample_stats *stats = &b->stats;
	int ret;

	/* The capture finished first: the flight recorder's file and the
	 * rescue capture go only once it is whole. */
	ret = rv_session_finish_capture(b->s, b->capture, CLOCK_MONOTONIC, err);
	rv_sample_engine_free(b->engine);
	b->engine = NULL;
	rv_perf_writer_free(b->rescue);
	b->rescue = NULL;
	rv_perf_writer_free(b->capture);
	b->capture = NULL;
	if (ret)
		return ret;
	rv_debug("BPF filter: %llu samples kept, %llu of other processes dropped, %llu of "
		 "other threads dropped",
		 (unsigned long long)stats->filter_kept, (unsigned long long)stats->filter_other,
		 (unsigned long long)stats->filter_thread);
	if (stats->lost)
		rv_warn("the kernel lost %llu records (samples, context switches, and the "
			"processes' mappings, names, forks and exits: its buffers were full); "
			"lower --timer-resolution to lose fewer",
			(unsigned long long)stats->lost);
	note_children(b);
	if (b->s->extra_events.nr)
		rv_debug("--events: %llu samples of the recorded threads read",
			 (unsigned long long)stats->extra_samples);
	if (!b->s->opts->full_execution && stats->evicted)
		rv_debug("the flight recorder kept the last %llu samples (%llu older ones "
			 "aged out)",
			 (unsigned long long)stats->written_samples,
			 (unsigned long long)stats->evicted);
	if (stats->online_unwind)
		rv_debug("unwound %llu samples as they arrived (%llu to their IP only, %llu "
			 "cut by the copy, %llu stopped at a caller without call frame "
			 "information, %llu left with their IP: the unwinder fell behind); "
			 "%.1f us a sample, the unwinding thread used %.3f s of CPU; %.0f "
			 "bytes a sample kept",
			 (unsigned long long)stats->unwound,
			 (unsigned long long)stats->unwind_failed,
			 (unsigned long long)stats->stacks_cut,
			 (unsigned long long)stats->unwind_stopped,
			 (unsigned long long)stats->not_unwound,
			 stats->unwound ? (double)stats->unwind_ns / 1e3 / (double)stats->unwound
					: 0.0,
			 (double)stats->unwind_cpu_ns / 1e9,
			 stats->samples ? (double)stats->sample_bytes / (double)stats->samples
					: 0.0);
	snprintf(b->note, sizeof(b->note), "%s, %llu Hz on %s", b->s->sample.dwarf ? "dwarf" : "fp",
		 (unsigned long long)stats->frequency, stats->clock_name);
	*out = (struct rv_render_options){
		.decode = { .path = b->capture_path,
			    .include_kernel = b->s->opts->include_kernel,
			    .vmlinux = b->s->opts->vmlinux,
			    .live = true },
		.recorded = true,
		.recording_note = b->note,
		.lost_while_recording = stats->lost,
		.main_thread_only = !b->s->opts->multi_thread,
		.recording_ns = b->stopped_ns > b->started_ns ? b->stopped_ns - b->started_ns : 0,
		.aged_out = b->s->opts->full_execution ? 0 : stats->evicted,
		.not_unwound = stats->not_unwound,
		.children_not_recorded = stats->children_not_followed + stats->children_unfollowed,
		.children_not_recorded_why =
			stats->children_not_followed
				? (b->s->follow_blocked ? "the kernel shows no BTF" : "--no-follow")
			: stats->children_unfollowed
				? "more alive at once than the filter's set holds"
				: NULL,
	};
	return 0;
}

static void sample_free(struct rv_backend_state *b)
{
	if (!b)
		return;
	rv_sample_engine_free(b->engine);
	rv_perf_writer_free(b->rescue);
	rv_perf_writer_free(b->capture);
	free(b);
}

const struct rv_backend_ops rv_sample_backend = {
	.description = "stack sampling",
	.describe = sample_describe,
	.open = sample_open,
	.start = sample_start,
	.pollfds = sample_pollfds,
	.poll = sample_poll,
	.mark = sample_mark,
	.snapshot = sample_snapshot,
	.stop = sample_stop,
	.finish = sample_finish,
	.free = sample_free,
	.outside_windows = "samples outside them were dropped",
	.capture_hint = "perf report -i",
};
