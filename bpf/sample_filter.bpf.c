// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* sample_filter.bpf.c: decides, in the kernel, which samples of a per-CPU
 * sampling event reach the ring buffer.
 *
 * The sampling engine opens one event per CPU, so that every thread of the
 * target is covered from the moment it exists, without racing thread creation
 * from user space. This program, attached to each of those events, keeps the
 * samples whose process is a target (and, unless all threads are wanted, whose
 * thread is the process's main thread) and drops every other sample before it
 * is written. Returning 0 from a perf_event program suppresses the sample.
 *
 * With --filter it also drops the samples of threads outside every window:
 * the gate (gate.bpf.c) keeps, per thread, whether one is open, in a map this
 * object shares. Not here: deciding windows.
 *
 * The object reads no kernel struct, so it carries no CO-RE relocation and
 * loads on kernels without BTF. What needs the kernel's BTF (following the
 * targets' children, why threads leave the CPU) is sample_tasks.bpf.c, which
 * shares this object's maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "gate.h"
#include "sample_filter.h"

/* Set by the loader before load. */
const volatile bool all_threads = false;
/* --filter: keep only the samples of threads inside a window, as the gate's
 * window map (reused from the gate's object) says. */
const volatile bool gated = false;

RV_GATE_WINDOWS_MAP(gate_windows);

RV_FILTER_TARGETS_MAP(target_processes);
RV_FILTER_STATS_MAP(filter_stats);

static __always_inline void count(u32 slot)
{
	u64 *value = bpf_map_lookup_elem(&filter_stats, &slot);

	if (value)
		*value += 1;
}

SEC("perf_event")
int filter_sample(struct bpf_perf_event_data *ctx)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32;
	u32 tid = (u32)pid_tgid;

	if (!bpf_map_lookup_elem(&target_processes, &tgid)) {
		count(RV_FILTER_OTHER);
		return 0;
	}
	if (!all_threads && tid != tgid) {
		count(RV_FILTER_THREAD);
		return 0;
	}
	if (gated && !bpf_map_lookup_elem(&gate_windows, &tid)) {
		count(RV_FILTER_WINDOW);
		return 0;
	}
	count(RV_FILTER_KEPT);
	return 1;
}

/* Processes of the set that exited lately, for user space: their sideband
 * may be read after they left the set (sample_tasks.bpf.c moves them here). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RV_FILTER_MAX_PROCESSES);
	__type(key, u32);  /* tgid */
	__type(value, u8); /* unused */
} recent_exits SEC(".maps");

char LICENSE[] SEC("license") = "Dual MIT/GPL";
