// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* functions.bpf.c: the function tracer's kernel side: a record (functions.h)
 * for every entry and exit of the user functions it is attached to, and for
 * the kernel activity of the traced threads that the loader asked for.
 *
 * Records go out through a BPF ring buffer per CPU (fn_rings, filled by
 * the loader), reserved and committed with BPF_RB_NO_WAKEUP: user space
 * polls on a timer, so no record pays for a wakeup. Each is stamped here
 * (bpf_ktime_get_ns) right after it is reserved, so a ring is in time order
 * unless a program was preempted in between (see functions.h). A record a
 * full ring refuses is counted in fn_lost[cpu] (.bss, read by user space
 * without a system call), the only count of losses. Programs:
 *
 * - fn_enter_multi: user functions through uprobe_multi links (the loader
 *   sets the expected attach type, BPF_TRACE_UPROBE_MULTI), one plain uprobe
 *   at each function's entry and one at each of its return sites (every
 *   instruction that leaves it); the bpf_cookie (functions.h) says which, the
 *   function's index, the entry's distance from the site and, for a
 *   conditional tail call, the condition, which the program tests in the
 *   flags; fn_enter: the same through one uprobe perf link per site, on
 *   kernels without uprobe_multi or where a batch is refused.
 *   fn_exit_multi/fn_exit: uretprobes, for --exits uretprobe and for the
 *   functions whose code cannot be decoded (cookie: the index alone).
 * - fn_sys_enter/fn_sys_exit, fn_sched_switch, fn_page_fault, fn_irq_entry/
 *   fn_irq_exit: tracepoints (raw_tp for sched_switch, which names both
 *   tasks), attached only for the groups asked for; they keep the traced
 *   processes' threads (fn_targets) and drop the rest.
 * - fn_follow_fork, fn_follow_exec, fn_follow_exit (tp_btf, when children
 *   are followed): a process forked by a traced one joins fn_targets before
 *   it runs; a child that execs or exits leaves it (execs are not followed:
 *   the probes are on the files of the program that forked, and the count
 *   RV_FN_STAT_EXEC says how many left so). The user-function links are then
 *   placed without a pid (on every process that maps the files), and
 *   user_record keeps the calls of fn_targets' processes alone.
 * - fn_kprobe/fn_kretprobe (cookie = index) and fn_fentry/fn_fexit (index in
 *   kfunc_index, one loaded copy per kernel function): kernel functions,
 *   where the kernel permits them.
 *
 * Nothing is recorded until the loader arms the programs (fn_armed, a
 * global user space writes through the mapped .bss: no map lookup), once
 * every probe is in place, nor after it disarms them: a process attached to
 * while it runs then shows only the calls that were already under way when
 * recording began as returns without entries, not every call made while the
 * probes were being placed.
 *
 * In recorder mode (recorder, set by the loader when snapshots are wanted)
 * records do not leave the kernel: each goes into its thread's slot of the
 * per-thread flight recorder (fn_slots, functions.h), overwriting the
 * oldest, and user space reads the slots when it takes a snapshot. A thread
 * claims a slot on its first record (fn_slot_owner: an atomic BPF_NOEXIST
 * insert, since this BPF target has no fetching atomics); records of threads
 * beyond the slots are counted (RV_FN_STAT_NO_SLOT). A thread's records are
 * written one at a time (by the thread itself, or for a switch-in by the CPU
 * it is about to run on), so its head needs no atomic increment; each entry's
 * seq, written last, lets the reader reject one caught half-written.
 *
 * With --filter, every record of a thread outside the gate's windows is
 * dropped here (the gate's window map is shared, as sample_filter.bpf.c
 * shares it). Drops are counted in fn_stats; records made are not (user
 * space counts what it drains), so the hot path makes no map update.
 *
 * Not here: which functions are probed, or what records mean for a trace.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "functions.h"
#include "gate.h"

/* Set by the loader before load. */
const volatile bool all_threads = false; /* --multi-thread: not only main threads */
const volatile bool gated = false;	 /* --filter: only threads inside a window */
/* sched_switch's raw tracepoint passes prev_state (Linux 5.18+); older
 * kernels have it only in the task. */
const volatile bool switch_has_prev_state = true;
/* fentry/fexit: this copy's kernel function index. */
const volatile __u32 kfunc_index = 0;
/* Children followed: the user-function links have no pid, fn_targets says
 * whose calls are recorded. */
const volatile bool follow_children = false;
/* Recorder mode: records go into fn_slots, of which there are nr_slots. */
const volatile bool recorder = false;
const volatile __u32 nr_slots = 1;

RV_GATE_WINDOWS_MAP(gate_windows);

/* The traced processes, for the tracepoints, and for the user functions when
 * children are followed (otherwise user-function links are placed per
 * process by the kernel already). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RV_FN_MAX_PROCESSES);
	__type(key, u32);  /* tgid */
	__type(value, u8); /* RV_FN_TARGET or RV_FN_CHILD */
} fn_targets SEC(".maps");

/* The ring buffer of each CPU (the loader sizes both and fills the array). */
struct fn_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RV_FN_RING_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, u32);
	__array(values, struct fn_ring);
} fn_rings SEC(".maps");

/* Nonzero while recording (set by the loader through the mapped .bss). */
__u32 fn_armed = 0;

/* Records each CPU's ring refused (full), read by user space. */
__u64 fn_lost[RV_FN_MAX_CPUS] = {};

/* Function index -> the first runtime entry address seen (exit records of
 * the perf-link programs, which cannot ask the kernel). Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} fn_entry_addrs SEC(".maps");

/* Kernel function index -> its address (kallsyms), filled by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} kfunc_addrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RV_FN_NR_STATS);
	__type(key, u32);
	__type(value, u64);
} fn_stats SEC(".maps");

/* The per-thread flight recorder (recorder mode; sized by the loader). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct rv_fn_slot);
} fn_slots SEC(".maps");

/* tid -> its slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, u32);   /* tid */
	__type(value, u32); /* slot */
} fn_slot_of SEC(".maps");

/* slot -> the thread that claimed it: claiming is inserting here. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, u32);   /* slot */
	__type(value, u32); /* tid */
} fn_slot_owner SEC(".maps");

/* Slots claimed so far (a hint where to look for a free one). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} fn_slot_count SEC(".maps");

static __always_inline void count(u32 slot)
{
	u64 *value = bpf_map_lookup_elem(&fn_stats, &slot);

	if (value)
		*value += 1;
}

static __always_inline bool armed(void)
{
	return *(volatile u32 *)&fn_armed != 0;
}

/* Whether thread tid may be recorded as far as --filter is concerned;
 * counts the drop when not. */
static __always_inline bool in_window(u32 tid)
{
	if (gated && !bpf_map_lookup_elem(&gate_windows, &tid)) {
		count(RV_FN_STAT_OUTSIDE);
		return false;
	}
	return true;
}

/* Whether thread tid of process tgid is traced (tracepoints see every task). */
static __always_inline bool traced_thread(u32 tgid, u32 tid)
{
	if (!bpf_map_lookup_elem(&fn_targets, &tgid))
		return false;
	return all_threads || tid == tgid;
}

/* Tries to claim a free slot for thread tid: up to this many candidates
 * after the hint (others racing for the same ones). */
#define SLOT_TRIES 8

/* Thread tid's slot, claimed on its first record; NULL when every slot is
 * taken. */
static __always_inline struct rv_fn_slot *thread_slot(u32 tid, u32 pid)
{
	u32 *index = bpf_map_lookup_elem(&fn_slot_of, &tid);
	u32 zero = 0, *hint, first;
	struct rv_fn_slot *s;

	if (index)
		return bpf_map_lookup_elem(&fn_slots, index);
	hint = bpf_map_lookup_elem(&fn_slot_count, &zero);
	if (!hint)
		return NULL;
	first = *hint;
	for (u32 i = 0; i < SLOT_TRIES; i++) {
		u32 slot = first + i;

		if (slot >= nr_slots)
			return NULL;
		if (bpf_map_update_elem(&fn_slot_owner, &slot, &tid, BPF_NOEXIST))
			continue;
		__sync_fetch_and_add(hint, 1);
		s = bpf_map_lookup_elem(&fn_slots, &slot);
		if (!s)
			return NULL;
		s->tid = tid;
		s->pid = pid;
		s->head = 0;
		bpf_map_update_elem(&fn_slot_of, &tid, &slot, BPF_ANY);
		return s;
	}
	return NULL;
}

/* Recorder mode: r into its thread's slot. */
static __always_inline bool record_in_slot(const struct rv_fn_record *r)
{
	struct rv_fn_slot *s = thread_slot(r->tid, r->pid);
	struct rv_fn_slot_entry *e;
	u64 index;

	if (!s)
		return false;
	index = s->head;
	e = &s->records[index & (RV_FN_RECORDER_RECORDS - 1)];
	e->seq = 0; /* being written */
	asm volatile("" ::: "memory");
	e->cpu = bpf_get_smp_processor_id();
	e->record = *r;
	asm volatile("" ::: "memory");
	e->seq = (u32)(index + 1);
	s->head = index + 1;
	return true;
}

/* Room for a record in this CPU's ring, stamped; NULL (counted as lost)
 * when the ring is full. The caller fills the rest and commits it. */
static __always_inline struct rv_fn_record *reserve(void)
{
	u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&fn_rings, &cpu);
	struct rv_fn_record *r = ring ? bpf_ringbuf_reserve(ring, sizeof(*r), 0) : NULL;

	if (!r) {
		if (cpu < RV_FN_MAX_CPUS)
			__sync_fetch_and_add(&fn_lost[cpu], 1);
		return NULL;
	}
	r->time = bpf_ktime_get_ns();
	return r;
}

static __always_inline void commit(struct rv_fn_record *r)
{
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* Recorder mode: the record r (on the stack) into its thread's slot. */
static __always_inline void keep(struct rv_fn_record *r)
{
	r->time = bpf_ktime_get_ns();
	count(record_in_slot(r) ? RV_FN_STAT_RECORDED : RV_FN_STAT_NO_SLOT);
}

/* ---- user functions ---- */

static __always_inline void fill_user(struct rv_fn_record *r, u16 type, u16 flags, u32 index,
				      u64 addr, u64 sp, u32 tgid, u32 tid)
{
	r->type = type;
	r->flags = RV_FN_FLAG_IN_WINDOW | flags;
	r->tid = tid;
	r->pid = tgid;
	r->arg = index;
	r->addr = addr;
	r->sp = sp;
	r->value = 0;
}

static __always_inline void user_record(struct pt_regs *ctx, u16 type, u16 flags, u32 index,
					u64 addr, u64 sp)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32, tid = (u32)pid_tgid;
	struct rv_fn_record *r, kept;

	/* The links are per process (unless children are followed): only the
	 * thread rule is left to check. */
	if (!all_threads && tid != tgid)
		return;
	if (follow_children && !bpf_map_lookup_elem(&fn_targets, &tgid))
		return;
	if (!armed())
		return;
	if (!in_window(tid))
		return;
	if (recorder) {
		fill_user(&kept, type, flags, index, addr, sp, tgid, tid);
		keep(&kept);
		return;
	}
	r = reserve();
	if (!r)
		return;
	fill_user(r, type, flags, index, addr, sp, tgid, tid);
	commit(r);
}

/* A probe at a function's entry or at one of its return sites (the cookie
 * says which, functions.h); ip: the probed instruction's address. */
static __always_inline void site_hit(struct pt_regs *ctx, u64 ip)
{
	u64 cookie = bpf_get_attach_cookie(ctx);
	u32 index = rv_fn_cookie_index(cookie);
	enum rv_fn_probe_kind kind = rv_fn_cookie_kind(cookie);
	u32 condition = rv_fn_cookie_condition(cookie);
	u64 sp = PT_REGS_SP(ctx);

	if (kind != RV_FN_PROBE_EXIT) {
		/* delta: an entry probe placed past an endbr64 names the entry */
		user_record(ctx, RV_FN_ENTER, kind == RV_FN_PROBE_ENTRY ? 0 : RV_FN_FLAG_EXIT_SITES,
			    index, ip + rv_fn_cookie_delta(cookie), sp);
		if (kind != RV_FN_PROBE_ENTRY_EXIT)
			return;
	}
	/* A conditional tail call leaves only when its jump is taken. */
	if (condition && !rv_fn_condition_holds(condition - 1, ctx->flags))
		return;
	/* The return address is at sp: the stack pointer after the return is
	 * 8 above, whether a ret or a jump to another function leaves. */
	user_record(ctx, RV_FN_EXIT, 0, index, ip + rv_fn_cookie_delta(cookie), sp + 8);
}

SEC("uprobe")
int fn_enter_multi(struct pt_regs *ctx)
{
	site_hit(ctx, bpf_get_func_ip(ctx));
	return 0;
}

SEC("uretprobe")
int fn_exit_multi(struct pt_regs *ctx)
{
	/* uprobe_multi knows the function a return probe belongs to. */
	user_record(ctx, RV_FN_EXIT, 0, rv_fn_cookie_index(bpf_get_attach_cookie(ctx)),
		    bpf_get_func_ip(ctx), PT_REGS_SP(ctx));
	return 0;
}

SEC("uprobe")
int fn_enter(struct pt_regs *ctx)
{
	u64 cookie = bpf_get_attach_cookie(ctx);
	u32 index = rv_fn_cookie_index(cookie);
	u64 ip = PT_REGS_IP(ctx); /* the kernel points it at the probed instruction */

	if (rv_fn_cookie_kind(cookie) == RV_FN_PROBE_ENTRY) {
		/* for the uretprobe of the same function (fn_exit) */
		u64 *first = bpf_map_lookup_elem(&fn_entry_addrs, &index);

		if (first && !*first)
			*first = ip;
	}
	site_hit(ctx, ip);
	return 0;
}

SEC("uretprobe")
int fn_exit(struct pt_regs *ctx)
{
	u32 index = rv_fn_cookie_index(bpf_get_attach_cookie(ctx));
	u64 *first = bpf_map_lookup_elem(&fn_entry_addrs, &index);

	user_record(ctx, RV_FN_EXIT, 0, index, first ? *first : 0, PT_REGS_SP(ctx));
	return 0;
}

/* ---- kernel events ---- */

/* A kernel record about thread tid of process tgid, when it is traced and
 * in a window. */
static __always_inline void fill_thread(struct rv_fn_record *r, u32 tgid, u32 tid, u16 type,
					u32 arg, u64 addr, u64 value)
{
	r->type = type;
	r->flags = RV_FN_FLAG_IN_WINDOW;
	r->tid = tid;
	r->pid = tgid;
	r->arg = arg;
	r->addr = addr;
	r->sp = 0;
	r->value = value;
}

static __always_inline void thread_record(void *ctx, u32 tgid, u32 tid, u16 type, u32 arg, u64 addr,
					  u64 value)
{
	struct rv_fn_record *r, kept;

	if (!armed())
		return;
	if (!traced_thread(tgid, tid)) {
		count(RV_FN_STAT_OTHER_PROCESS);
		return;
	}
	if (!in_window(tid))
		return;
	if (recorder) {
		fill_thread(&kept, tgid, tid, type, arg, addr, value);
		keep(&kept);
		return;
	}
	r = reserve();
	if (!r)
		return;
	fill_thread(r, tgid, tid, type, arg, addr, value);
	commit(r);
}

/* A kernel record about the current thread. */
static __always_inline void kernel_record(void *ctx, u16 type, u32 arg, u64 addr, u64 value)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();

	thread_record(ctx, pid_tgid >> 32, (u32)pid_tgid, type, arg, addr, value);
}

/* The system calls the kernel's own uprobe code makes on x86-64 (the
 * uretprobe trampoline, Linux 6.11+, and optimized uprobes, 6.18+): our
 * probes, not the program's work. Their exit reports no number (-1). */
#define NR_UPROBE_SYSCALL_LOW  335
#define NR_UPROBE_SYSCALL_HIGH 336

/* Threads inside one of those system calls, so that its exit is dropped too. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, u32);  /* tid */
	__type(value, u8); /* unused */
} fn_in_probe_syscall SEC(".maps");

SEC("tracepoint/raw_syscalls/sys_enter")
int fn_sys_enter(struct trace_event_raw_sys_enter *ctx)
{
	long id = BPF_CORE_READ(ctx, id);

	if (id == NR_UPROBE_SYSCALL_LOW || id == NR_UPROBE_SYSCALL_HIGH) {
		u32 tid = (u32)bpf_get_current_pid_tgid();
		u8 one = 1;

		bpf_map_update_elem(&fn_in_probe_syscall, &tid, &one, BPF_ANY);
		return 0;
	}
	kernel_record(ctx, RV_FN_SYSCALL_ENTER, (u32)id, 0, 0);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int fn_sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	long id = BPF_CORE_READ(ctx, id);

	if (id < 0 || id == NR_UPROBE_SYSCALL_LOW || id == NR_UPROBE_SYSCALL_HIGH) {
		u32 tid = (u32)bpf_get_current_pid_tgid();

		if (!bpf_map_delete_elem(&fn_in_probe_syscall, &tid))
			return 0;
	}
	kernel_record(ctx, RV_FN_SYSCALL_EXIT, (u32)id, 0, (u64)BPF_CORE_READ(ctx, ret));
	return 0;
}

/* The page_fault_user tracepoint's fields, a layout stable since it exists
 * (its struct has had two names in vmlinux.h). */
struct page_fault_args {
	u64 common;
	unsigned long address;
	unsigned long ip;
	unsigned long error_code;
};

SEC("tracepoint/exceptions/page_fault_user")
int fn_page_fault(struct page_fault_args *ctx)
{
	kernel_record(ctx, RV_FN_PAGE_FAULT, (u32)ctx->error_code, ctx->address, ctx->ip);
	return 0;
}

SEC("tracepoint/irq/irq_handler_entry")
int fn_irq_entry(struct trace_event_raw_irq_handler_entry *ctx)
{
	kernel_record(ctx, RV_FN_IRQ_ENTER, (u32)BPF_CORE_READ(ctx, irq), 0, 0);
	return 0;
}

SEC("tracepoint/irq/irq_handler_exit")
int fn_irq_exit(struct trace_event_raw_irq_handler_exit *ctx)
{
	kernel_record(ctx, RV_FN_IRQ_EXIT, (u32)BPF_CORE_READ(ctx, irq), 0,
		      (u64)(s64)BPF_CORE_READ(ctx, ret));
	return 0;
}

/* task_struct before Linux 5.14 called __state "state". */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline u32 task_state(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return BPF_CORE_READ(task, __state);
	return (u32)BPF_CORE_READ((struct task_struct___old *)task, state);
}

/* The reason a thread leaves the CPU, as TASK_* bits: 0 when it was
 * preempted (still runnable), else its sleep state and any exit state. */
static __always_inline u32 switch_out_state(bool preempt, struct task_struct *prev, u64 raw_state)
{
	u32 state;

	if (preempt)
		return 0;
	state = switch_has_prev_state ? (u32)raw_state : task_state(prev);
	return (state & 0xff) | (u32)BPF_CORE_READ(prev, exit_state);
}

/* A switch record about task (which need not be the one running). */
static __always_inline void switch_record(void *ctx, struct task_struct *task, u16 type, u32 arg)
{
	thread_record(ctx, BPF_CORE_READ(task, tgid), BPF_CORE_READ(task, pid), type, arg, 0, 0);
}

SEC("raw_tp/sched_switch")
int fn_sched_switch(struct bpf_raw_tracepoint_args *ctx)
{
	bool preempt = (bool)ctx->args[0];
	struct task_struct *prev = (struct task_struct *)ctx->args[1];
	struct task_struct *next = (struct task_struct *)ctx->args[2];

	switch_record(ctx, prev, RV_FN_SWITCH_OUT, switch_out_state(preempt, prev, ctx->args[3]));
	switch_record(ctx, next, RV_FN_SWITCH_IN, 0);
	return 0;
}

/* ---- kernel functions ---- */

static __always_inline void kfunc_record(void *ctx, u16 type, u32 index)
{
	u64 *addr = bpf_map_lookup_elem(&kfunc_addrs, &index);

	kernel_record(ctx, type, index, addr ? *addr : 0, 0);
}

SEC("kprobe")
int fn_kprobe(struct pt_regs *ctx)
{
	kfunc_record(ctx, RV_FN_KFUNC_ENTER, (u32)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("kretprobe")
int fn_kretprobe(struct pt_regs *ctx)
{
	kfunc_record(ctx, RV_FN_KFUNC_EXIT, (u32)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("fentry")
int fn_fentry(void *ctx)
{
	kfunc_record(ctx, RV_FN_KFUNC_ENTER, kfunc_index);
	return 0;
}

SEC("fexit")
int fn_fexit(void *ctx)
{
	kfunc_record(ctx, RV_FN_KFUNC_EXIT, kfunc_index);
	return 0;
}

/* ---- children ---- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fn_follow_fork, struct task_struct *parent, struct task_struct *child)
{
	u32 parent_tgid = parent->tgid;
	u32 child_tgid = child->tgid;
	u8 kind = RV_FN_CHILD;

	if (child_tgid == parent_tgid)
		return 0; /* a thread */
	if (!bpf_map_lookup_elem(&fn_targets, &parent_tgid))
		return 0;
	if (bpf_map_update_elem(&fn_targets, &child_tgid, &kind, BPF_ANY))
		count(RV_FN_STAT_UNFOLLOWED);
	return 0;
}

/* A child that leaves fn_targets (exec, exit); a target stays. */
static __always_inline bool drop_child(u32 tgid)
{
	u8 *kind = bpf_map_lookup_elem(&fn_targets, &tgid);

	if (!kind || *kind != RV_FN_CHILD)
		return false;
	bpf_map_delete_elem(&fn_targets, &tgid);
	return true;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(fn_follow_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	if (drop_child(task->tgid))
		count(RV_FN_STAT_EXEC);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(fn_follow_exit, struct task_struct *task, bool group_dead)
{
	if (group_dead)
		drop_child(task->tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
