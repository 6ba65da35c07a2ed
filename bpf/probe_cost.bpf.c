// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* probe_cost.bpf.c: the calibration's probes (src/record/probe_cost.c): a
 * plain uprobe at a function's entry and one at its `ret` (or a uretprobe),
 * the pair the function tracer places, each only counting its hits, so that what a call
 * costs with them is the kernel's part of a probe pair: the trap, the
 * uprobe's dispatch, running a BPF program, the instruction's emulation.
 *
 * Not here: recording anything (functions.bpf.c); the counts only prove that
 * every probed call was seen.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Read by the loader after the calls (the skeleton's .bss). */
__u64 entries = 0;
__u64 exits = 0;

SEC("uprobe")
int cost_entry(void *ctx)
{
	__sync_fetch_and_add(&entries, 1);
	return 0;
}

SEC("uprobe")
int cost_exit(void *ctx)
{
	__sync_fetch_and_add(&exits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
