/* off_cpu.h: why a thread left the CPU, named once for every decoder.
 *
 * A state is what the kernel's sched_switch says of the task leaving, as
 * TASK_* bits (include/linux/sched.h): the function tracer's records carry
 * prev_state's low byte with the task's exit_state, 0 when it was preempted;
 * the sampling engine's switch records carry the same value; perf's tracepoint
 * format says preempted with 0x100 alone. The names are the spans' names in
 * every trace: "[off-cpu: sleeping]" (interruptible sleep), "[off-cpu: disk]"
 * (uninterruptible), "[off-cpu: preempted]" (still runnable),
 * "[off-cpu: stopped]" (stopped or traced), "[off-cpu: dead]" (exiting),
 * "[off-cpu: blocked]" (RV_OFF_CPU_BLOCKED: it left of its own accord, the
 * reason was not recorded, as with perf record --switch-events), and
 * "[off-cpu: state 0xN]" for anything else.
 */
#ifndef RV_DECODE_OFF_CPU_H
#define RV_DECODE_OFF_CPU_H

#include <stddef.h>
#include <stdint.h>

/* The sampling engine's bpf-output event that says why a thread left the CPU:
 * each sample's raw data is {u32 pid, tid, state, reserved} (state as above),
 * about the thread that ran (the sample's TID), stamped just before the
 * PERF_RECORD_SWITCH of its switch out, on the same CPU. Only switches that
 * were not preemptions have one. */
#define RV_SWITCH_STATE_EVENT "rearview:sched_switch"

/* Not a kernel state: the thread was not preempted, and nothing says why it
 * left. */
#define RV_OFF_CPU_BLOCKED 0xffffffffu

/* The span's name for state: a constant string, or (an unnamed state) the
 * name written into buf (size bytes), which is returned. */
const char *rv_off_cpu_name(uint32_t state, char *buf, size_t size);

#endif
