// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* sample_tasks.bpf.c: the sampling engine's programs that need the kernel's
 * BTF, beside the sample filter (sample_filter.bpf.c), whose maps they share
 * (target_processes, recent_exits, filter_stats, gate_windows: reused by the
 * loader before load).
 *
 * Unless --no-follow, it follows the targets' children: a program on the
 * sched_process_fork tracepoint (tp_btf, which hands it the parent's and the
 * child's task_struct) adds a new process to the target set when its parent
 * is in it, in the fork itself, before the child runs, so the child's first
 * samples are kept. New threads (same tgid) need nothing: the set is by tgid.
 * A child leaves the set when it exits, into the small map of recent exits that
 * user space asks about the sideband it reads late. tp_btf programs attach by
 * the kernel's own BTF ids: without /sys/kernel/btf/vmlinux they cannot be
 * loaded, and children are not followed.
 *
 * switch_state, on the sched_switch raw tracepoint, writes the target's
 * switches into its CPU's bpf-output event, which shares that CPU's ring with
 * the sampling event (struct rv_switch_state, sample_filter.h): a target
 * thread leaving the CPU, preempted or why not, and one coming back. Only the
 * target's: the rings do not fill with every task's switches, as they would
 * with the sampling events' context_switch (PERF_RECORD_SWITCH_CPU_WIDE of
 * every task on the CPU, which no BPF filter sees: the engine's fallback
 * where this program cannot run). Captures made before wrote only why a
 * thread that was not preempted left (RV_SWITCH_REASON), beside those switch
 * records. It reads task_struct's exit_state, tgid and pid through
 * CO-RE: the kernel's BTF, or --btf's file.
 *
 * Not here: which samples are kept (the filter).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gate.h"
#include "sample_filter.h"

/* Set by the loader before load, as the filter's. */
const volatile bool all_threads = false;
const volatile bool gated = false;

/* The filter's maps (reused). */
RV_GATE_WINDOWS_MAP(gate_windows);

RV_FILTER_TARGETS_MAP(target_processes);
RV_FILTER_STATS_MAP(filter_stats);

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RV_FILTER_MAX_PROCESSES);
	__type(key, u32);  /* tgid */
	__type(value, u8); /* unused */
} recent_exits SEC(".maps");

static __always_inline void count(u32 slot)
{
	u64 *value = bpf_map_lookup_elem(&filter_stats, &slot);

	if (value)
		*value += 1;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} switch_states SEC(".maps");

/* Whether thread tid of process tgid is one whose switches are recorded: as
 * the filter keeps samples, but whatever the --filter windows (the snapshots
 * take a thread's switches by time, with its samples). */
static __always_inline bool recorded(u32 tgid, u32 tid)
{
	if (!tid || !bpf_map_lookup_elem(&target_processes, &tgid))
		return false;
	return all_threads || tid == tgid;
}

static __always_inline void output(void *ctx, u32 tgid, u32 tid, u32 state, u32 kind)
{
	struct rv_switch_state rec = { .pid = tgid, .tid = tid, .state = state, .kind = kind };

	bpf_perf_event_output(ctx, &switch_states, BPF_F_CURRENT_CPU, &rec, sizeof(rec));
}

/* raw_tp/sched_switch's arguments: preempt, prev, next, prev_state (Linux
 * 5.18+). It runs in prev's context, before the switch: next's switch in is
 * stamped a little before next runs. */
SEC("raw_tp/sched_switch")
int switch_state(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32;
	u32 tid = (u32)pid_tgid;

	if (recorded(tgid, tid)) {
		if (ctx->args[0])
			output(ctx, tgid, tid, 0, RV_SWITCH_OUT_PREEMPT);
		else
			output(ctx, tgid, tid,
			       ((u32)ctx->args[3] & 0xff) | (u32)BPF_CORE_READ(prev, exit_state),
			       RV_SWITCH_OUT);
	}
	tgid = BPF_CORE_READ(next, tgid);
	tid = BPF_CORE_READ(next, pid);
	if (recorded(tgid, tid))
		output(ctx, tgid, tid, 0, RV_SWITCH_IN);
	return 0;
}

/* Attached only when children are followed: a new process whose parent is in
 * the set joins it. A child the full set cannot take is counted
 * (RV_FILTER_UNFOLLOWED), and its samples are dropped. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 parent_tgid = parent->tgid;
	u32 child_tgid = child->tgid;
	u8 kind = RV_FILTER_CHILD;

	if (child_tgid == parent_tgid)
		return 0; /* a thread */
	if (!bpf_map_lookup_elem(&target_processes, &parent_tgid))
		return 0;
	bpf_map_delete_elem(&recent_exits, &child_tgid); /* a pid used again */
	if (bpf_map_update_elem(&target_processes, &child_tgid, &kind, BPF_ANY))
		count(RV_FILTER_UNFOLLOWED);
	else
		count(RV_FILTER_FOLLOWED);
	return 0;
}

/* A followed child whose last thread exits leaves the set (so that the set
 * holds the children alive, and a pid used again is not taken for one). The
 * targets themselves stay: recording ends with them. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(follow_exit, struct task_struct *task, bool group_dead)
{
	u32 tgid = task->tgid;
	u8 *kind, one = 1;

	if (!group_dead)
		return 0;
	kind = bpf_map_lookup_elem(&target_processes, &tgid);
	if (!kind || *kind != RV_FILTER_CHILD)
		return 0;
	bpf_map_update_elem(&recent_exits, &tgid, &one, BPF_ANY);
	bpf_map_delete_elem(&target_processes, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
