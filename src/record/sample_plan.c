/* sample_plan.c: a sampling recording's settings; see sample_plan.h. */
#include "record/sample_plan.h"

#include <errno.h>
#include <string.h>

static int plan_frequency(struct rv_sample_plan *plan, const struct rv_options *opts,
			  const struct rv_machine *m, struct rv_error *err)
{
	switch (opts->timer) {
	case RV_TIMER_LOW:
		plan->frequency = 1000;
		break;
	case RV_TIMER_NORMAL:
		plan->frequency = 10000;
		break;
	case RV_TIMER_HIGH:
		plan->frequency = m->max_sample_rate ? m->max_sample_rate : 10000;
		break;
	case RV_TIMER_SAMPLE:
		plan->frequency = opts->sample_hz;
		break;
	case RV_TIMER_CUSTOM:
		return rv_error_set(err, EINVAL,
				    "--timer-resolution custom:%s configures Intel PT; stack "
				    "sampling takes low, normal, high or sample:HZ",
				    opts->timer_custom);
	}
	if (m->max_sample_rate && plan->frequency > m->max_sample_rate)
		return rv_error_set(
			err, EINVAL,
			"--timer-resolution: %llu Hz is above the kernel's limit of %llu "
			"Hz (kernel.perf_event_max_sample_rate); ask for less, or use "
			"high",
			(unsigned long long)plan->frequency,
			(unsigned long long)m->max_sample_rate);
	return 0;
}

static int plan_callgraph(struct rv_sample_plan *plan, const struct rv_options *opts,
			  const struct rv_machine *m, struct rv_error *err)
{
	switch (opts->callgraph) {
	case RV_CALLGRAPH_LBR:
		if (!m->has_lbr)
			return rv_error_set(err, ENODEV,
					    "--callgraph-mode lbr: this CPU has no last branch "
					    "records (LBR) that perf can use; use fp or dwarf");
		return rv_error_set(err, ENOTSUP,
				    "--callgraph-mode lbr: LBR call stacks are not supported by "
				    "this version; use fp or dwarf");
	case RV_CALLGRAPH_FP:
		plan->dwarf = false;
		if (opts->keep_raw_stacks)
			return rv_error_set(
				err, EINVAL,
				"--keep-raw-stacks keeps DWARF mode's stack copies; with "
				"--callgraph-mode fp there are none");
		break;
	case RV_CALLGRAPH_DWARF:
	case RV_CALLGRAPH_DEFAULT:
		plan->dwarf = true;
		break;
	}
	if (plan->dwarf) {
		plan->stack_bytes =
			opts->dwarf_stack_bytes ? opts->dwarf_stack_bytes : RV_DWARF_STACK_BYTES;
		plan->keep_raw_stacks = opts->keep_raw_stacks;
	}
	if (plan->keep_raw_stacks && !opts->full_execution)
		return rv_error_set(
			err, EINVAL,
			"--keep-raw-stacks keeps %u bytes of stack a sample, so the flight "
			"recorder would hold about a second of one busy thread; use it with "
			"--full-execution (for perf report --call-graph dwarf on the capture)",
			plan->stack_bytes);
	plan->snapshot_size_bytes = opts->snapshot_size_bytes;
	if (!plan->snapshot_size_bytes)
		plan->snapshot_size_bytes = plan->dwarf ? RV_SAMPLE_DEFAULT_SNAPSHOT_DWARF
							: RV_SAMPLE_DEFAULT_SNAPSHOT_FP;
	return 0;
}

int rv_sample_plan_build(struct rv_sample_plan *plan, const struct rv_options *opts,
			 const struct rv_machine *machine, struct rv_error *err)
{
	int ret;

	memset(plan, 0, sizeof(*plan));
	ret = plan_frequency(plan, opts, machine, err);
	return ret ? ret : plan_callgraph(plan, opts, machine, err);
}

struct rv_sample_config rv_sample_plan_config(const struct rv_sample_plan *plan,
					      const struct rv_options *opts, const pid_t *pids,
					      size_t nr_pids)
{
	return (struct rv_sample_config){
		.pids = pids,
		.nr_pids = nr_pids,
		.follow_children = opts->command == RV_CMD_RUN && !opts->no_follow,
		.all_threads = opts->multi_thread,
		.include_kernel = opts->include_kernel,
		.dwarf = plan->dwarf,
		.dwarf_stack_bytes = plan->stack_bytes,
		.keep_raw_stacks = plan->keep_raw_stacks,
		.full_execution = opts->full_execution,
		.frequency = plan->frequency,
		.snapshot_size_bytes = plan->snapshot_size_bytes,
		.gate_windows_fd = -1,
	};
}
