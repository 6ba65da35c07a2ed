// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* bench_count.bpf.c: the least a BPF program on a uprobe and a uretprobe can
 * do: count its hits. tools/bench/uprobe_bare.c attaches it to one function,
 * so that bench/run can measure what a bare uprobe+uretprobe pair costs a
 * call, the yardstick of the function tracer (functions.bpf.c).
 *
 * Not part of rearview, and not a model for it: it records nothing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Read by the loader after the run (the skeleton's .bss). */
__u64 entries = 0;
__u64 returns = 0;

SEC("uprobe")
int count_entry(void *ctx)
{
	__sync_fetch_and_add(&entries, 1);
	return 0;
}

SEC("uretprobe")
int count_return(void *ctx)
{
	__sync_fetch_and_add(&returns, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
