/* sample_filter.h: what the sampling filter's BPF side and user side share. */
#ifndef RV_BPF_SAMPLE_FILTER_H
#define RV_BPF_SAMPLE_FILTER_H

/* Most processes one recording can follow (-p PID,PID,...). */
#define RV_FILTER_MAX_PROCESSES 1024

/* Slots of the per-CPU statistics array. */
enum rv_filter_stat {
	RV_FILTER_KEPT = 0,   /* samples of a target thread, passed on */
	RV_FILTER_OTHER = 1,  /* samples of other processes, dropped */
	RV_FILTER_THREAD = 2, /* samples of a target's non-main thread without --multi-thread */
	RV_FILTER_WINDOW = 3, /* samples of a thread outside every --filter window */
	RV_FILTER_NR_STATS = 4,
};

/* What the switch_state program writes, per switch of a target thread that
 * was not preempted, into its CPU's bpf-output event (sample_engine.h): the
 * thread leaving and why (prev_state's TASK_* bits with its exit_state, as
 * the function tracer records them). */
struct rv_switch_state {
	unsigned int pid, tid;
	unsigned int state;
	unsigned int reserved;
};

#endif
