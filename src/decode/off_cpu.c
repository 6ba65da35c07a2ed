/* off_cpu.c: the names of the reasons a thread leaves the CPU; see off_cpu.h. */
#include "decode/off_cpu.h"

#include <stdio.h>

/* The kernel's task states in sched_switch's prev_state (include/linux/sched.h). */
#define TASK_INTERRUPTIBLE   0x1u
#define TASK_UNINTERRUPTIBLE 0x2u
#define TASK_STOPPED_BIT     0x4u
#define TASK_TRACED_BIT	     0x8u
#define EXIT_DEAD_BIT	     0x10u
#define EXIT_ZOMBIE_BIT	     0x20u
#define TASK_DEAD_BIT	     0x80u
/* perf's tracepoint format says "preempted" (R+) with this value alone. */
#define TASK_REPORT_PREEMPTED 0x100u

const char *rv_off_cpu_name(uint32_t state, char *buf, size_t size)
{
	if (state == RV_OFF_CPU_BLOCKED)
		return "[off-cpu: blocked]";
	if (state == 0 || state == TASK_REPORT_PREEMPTED)
		return "[off-cpu: preempted]";
	if (state & TASK_INTERRUPTIBLE)
		return "[off-cpu: sleeping]";
	if (state & TASK_UNINTERRUPTIBLE)
		return "[off-cpu: disk]";
	if (state & (TASK_STOPPED_BIT | TASK_TRACED_BIT))
		return "[off-cpu: stopped]";
	if (state & (EXIT_DEAD_BIT | EXIT_ZOMBIE_BIT | TASK_DEAD_BIT))
		return "[off-cpu: dead]";
	snprintf(buf, size, "[off-cpu: state %#x]", state);
	return buf;
}
