/* fn_plan.c: a function-tracing recording's settings; see fn_plan.h. */
#include "record/fn_plan.h"

#include <stddef.h>

#include "functions.h"
#include "record/fn_engine.h"

/* Bytes of a recorder record as a bpf-output sample (sample_engine.h). */
#define RECORDER_SAMPLE_BYTES 104

bool rv_fn_plan_recorder_mode(const struct rv_options *opts)
{
	return !opts->full_execution && (opts->trigger || opts->min_duration_ns);
}

uint32_t rv_fn_plan_recorder_slots(const struct rv_options *opts, size_t nr_pids)
{
	size_t slots = opts->multi_thread ? RV_FN_PLAN_RECORDER_THREADS : (nr_pids ? nr_pids : 1);

	if (!rv_fn_plan_recorder_mode(opts))
		return 0;
	return slots > RV_FN_RECORDER_MAX_SLOTS ? RV_FN_RECORDER_MAX_SLOTS : (uint32_t)slots;
}

unsigned rv_fn_plan_kernel_events(const struct rv_options *opts)
{
	unsigned bits = 0;

	if (opts->kernel_events & RV_KERNEL_EVENTS_SYSCALLS)
		bits |= RV_FN_EVENTS_SYSCALLS;
	if (opts->kernel_events & RV_KERNEL_EVENTS_SCHED)
		bits |= RV_FN_EVENTS_SCHED;
	if (opts->kernel_events & RV_KERNEL_EVENTS_FAULTS)
		bits |= RV_FN_EVENTS_FAULTS;
	if (opts->kernel_events & RV_KERNEL_EVENTS_IRQ)
		bits |= RV_FN_EVENTS_IRQ;
	return bits;
}

bool rv_fn_plan_follows(const struct rv_options *opts)
{
	return opts->command == RV_CMD_RUN && !opts->no_follow;
}

struct rv_sample_config rv_fn_plan_engine_config(const struct rv_options *opts,
						 uint64_t snapshot_size_bytes, const pid_t *pids,
						 size_t nr_pids)
{
	uint64_t size = snapshot_size_bytes;
	uint64_t recorder = (uint64_t)rv_fn_plan_recorder_slots(opts, pids ? nr_pids : 1) *
			    RV_FN_RECORDER_RECORDS * RECORDER_SAMPLE_BYTES;

	/* In recorder mode the engine's flight recorder only holds what a
	 * snapshot takes: room for every slot's records. */
	if (size < recorder)
		size = recorder;
	return (struct rv_sample_config){
		.pids = pids,
		.nr_pids = nr_pids,
		/* the children's FORK, COMM and EXIT records; the calls are the
		 * tracer's (fn_engine.h's follow_children) */
		.follow_children = rv_fn_plan_follows(opts),
		.full_execution = opts->full_execution,
		.snapshot_size_bytes = size,
		.gate_windows_fd = -1,
		.bpf_output = true,
		.event_name = RV_FN_EVENT_NAME,
		.raw_tid_offset = offsetof(struct rv_fn_record, tid),
	};
}
