/* sample_filter.h: what the sampling filter's BPF side and user side share. */
#ifndef RV_BPF_SAMPLE_FILTER_H
#define RV_BPF_SAMPLE_FILTER_H

/* Most processes one recording can follow at once (-p PID,PID,..., and the
 * children of a run's target alive at one time). */
#define RV_FILTER_MAX_PROCESSES 1024

/* Values of the target set: a process given (it stays until the end), or a
 * child followed (it leaves at its exit). */
#define RV_FILTER_TARGET 1
#define RV_FILTER_CHILD	 2

/* Slots of the per-CPU statistics array. */
enum rv_filter_stat {
	RV_FILTER_KEPT = 0,	  /* samples of a target thread, passed on */
	RV_FILTER_OTHER = 1,	  /* samples of other processes, dropped */
	RV_FILTER_THREAD = 2,	  /* samples of a target's non-main thread without --multi-thread */
	RV_FILTER_WINDOW = 3,	  /* samples of a thread outside every --filter window */
	RV_FILTER_FOLLOWED = 4,	  /* children added to the target set at their fork */
	RV_FILTER_UNFOLLOWED = 5, /* children the full target set could not take */
	RV_FILTER_NR_STATS = 6,
};

/* What the switch_state program writes into its CPU's bpf-output event
 * (sample_engine.h), per switch of a target thread: the thread (not always
 * the one running: a switch in is written in the context of the task
 * leaving), why it left (prev_state's TASK_* bits with its exit_state, as the
 * function tracer records them), and what the record is. */
struct rv_switch_state {
	unsigned int pid, tid;
	unsigned int state;
	unsigned int kind; /* enum rv_switch_kind */
};

/* What a struct rv_switch_state is. RV_SWITCH_REASON: only why a thread that
 * was not preempted left, for the kernel's PERF_RECORD_SWITCH that follows on
 * the same CPU (the sampling events have context_switch: where switch_state
 * cannot be attached, and in captures made before the others existed; 0 was
 * the field's only value then). The others are the switches themselves, and
 * the sampling events then record none: the thread left the CPU (state says
 * why), was preempted (state 0), or came back. */
enum rv_switch_kind {
	RV_SWITCH_REASON = 0,
	RV_SWITCH_OUT = 1,
	RV_SWITCH_OUT_PREEMPT = 2,
	RV_SWITCH_IN = 3,
};

#ifdef __bpf__
/* The maps the filter's object and the task programs' object share (the
 * second object's are bpf_map__reuse_fd()'d onto the first's): the target
 * set, and the per-CPU statistics. */
#define RV_FILTER_TARGETS_MAP(name)                                                                \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_HASH);                                                   \
		__uint(max_entries, RV_FILTER_MAX_PROCESSES);                                      \
		__type(key, u32);  /* tgid */                                                      \
		__type(value, u8); /* RV_FILTER_TARGET or RV_FILTER_CHILD */                       \
	} name SEC(".maps")

#define RV_FILTER_STATS_MAP(name)                                                                  \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                                           \
		__uint(max_entries, RV_FILTER_NR_STATS);                                           \
		__type(key, u32);                                                                  \
		__type(value, u64);                                                                \
	} name SEC(".maps")
#endif

#endif
