/* test_fn_plan.c: the function tracer's settings (record/fn_plan.h). */
#include <criterion/criterion.h>
#include <stddef.h>

#include "functions.h"
#include "record/fn_engine.h"
#include "record/fn_plan.h"

Test(fn_plan, records_wait_in_the_recorder_only_when_snapshots_are_wanted)
{
	struct rv_options o = { 0 };

	cr_assert_not(rv_fn_plan_recorder_mode(&o));
	cr_assert_eq(rv_fn_plan_recorder_slots(&o, 3), 0);
	o.trigger = "on_error";
	cr_assert(rv_fn_plan_recorder_mode(&o));
	cr_assert_eq(rv_fn_plan_recorder_slots(&o, 3), 3, "one slot per process");
	cr_assert_eq(rv_fn_plan_recorder_slots(&o, 0), 1);
	o.multi_thread = true;
	cr_assert_eq(rv_fn_plan_recorder_slots(&o, 3), RV_FN_PLAN_RECORDER_THREADS);
	o.full_execution = true;
	cr_assert_not(rv_fn_plan_recorder_mode(&o), "everything is kept: no snapshots");
	o = (struct rv_options){ .min_duration_ns = 1000 };
	cr_assert(rv_fn_plan_recorder_mode(&o));
}

Test(fn_plan, kernel_event_groups_become_the_tracers_bits)
{
	struct rv_options o = { .kernel_events = RV_KERNEL_EVENTS_SYSCALLS | RV_KERNEL_EVENTS_IRQ };

	cr_assert_eq(rv_fn_plan_kernel_events(&o), RV_FN_EVENTS_SYSCALLS | RV_FN_EVENTS_IRQ);
	o.kernel_events = RV_KERNEL_EVENTS_SCHED | RV_KERNEL_EVENTS_FAULTS;
	cr_assert_eq(rv_fn_plan_kernel_events(&o), RV_FN_EVENTS_SCHED | RV_FN_EVENTS_FAULTS);
}

Test(fn_plan, the_engine_carries_records_and_holds_what_a_snapshot_takes)
{
	struct rv_options o = { 0 };
	pid_t pids[] = { 10, 11 };
	struct rv_sample_config c = rv_fn_plan_engine_config(&o, 1 << 20, pids, 2);

	cr_assert(c.bpf_output);
	cr_assert_str_eq(c.event_name, RV_FN_EVENT_NAME);
	cr_assert_eq(c.raw_tid_offset, offsetof(struct rv_fn_record, tid));
	cr_assert_eq(c.snapshot_size_bytes, 1 << 20, "no recorder: the size asked for");
	cr_assert_eq(c.nr_pids, 2);
	o.trigger = "on_error";
	c = rv_fn_plan_engine_config(&o, 4096, pids, 2);
	cr_assert_geq(c.snapshot_size_bytes,
		      2ull * RV_FN_RECORDER_RECORDS * sizeof(struct rv_fn_record),
		      "room for both slots' records, whatever --snapshot-size says");
}
