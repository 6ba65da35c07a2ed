// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* gate.bpf.c: the gate, which decides in the kernel, on every hit of a
 * --filter START/STOP or --trigger probe, whether the perf event it runs on
 * fires.
 *
 * The program is attached to uprobe perf events (one per role per probe site;
 * the bpf_cookie names both). Returning 0 from a program on a uprobe perf event
 * drops the hit before the event sees it: no sample, no overflow, no
 * aux_pause/aux_resume, no AUX sample. Returning 1 lets all of them happen. So
 * the same decision drives every engine.
 *
 * Per thread: a window opens at the outermost START and closes at the STOP
 * that matches it (recursive STARTs nest). The window map holds exactly the
 * threads inside a window, and other BPF objects may share it (gate.h).
 * One hit of a probe runs this program once per event on that probe, in an
 * order nobody promises; the first run of a hit changes the state and stores
 * every role's decision, the others read theirs (see struct pending).
 *
 * The object carries no CO-RE relocation, so that it loads on kernels without
 * BTF (src/record/kernel_btf.h): its only look at a kernel struct is the
 * uprobe's registers, read at their fixed place (struct user_regs below).
 *
 * Not here: which probes exist or what the events carry (user side), and any
 * notion of sampling or PT.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gate.h"

/* Set by the loader before load. */
const volatile __u32 target_tgid = 0; /* 0: any process */
const volatile __u64 min_duration_ns = 0;
const volatile bool multi_snapshot = false;
/* Intel PT with aux_pause: every window's STOP pauses, a slow one is kept
 * (the record's FIRED flag) without a STOP_SAMPLE event */
const volatile bool keep_slow_windows = false;
/* a fired snapshot sets the hold (gate.h) until user space clears it */
const volatile bool hold_after_snapshot = false;

RV_GATE_WINDOWS_MAP(gate_windows);

/* A uprobe's context: the user registers as x86-64's struct pt_regs lays them
 * out, which ptrace shows user space and so never changes. vmlinux.h's struct
 * pt_regs is the same, but marked preserve_access_index: reading a field of
 * it would be a CO-RE relocation, and the object would need the kernel's BTF
 * to load. The names are the kernel's, which PT_REGS_SP uses with vmlinux.h. */
struct user_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

/* The hit a thread is in the middle of: which probe (and at which user stack
 * pointer, as a consistency check), how many runs of it are still to come, and
 * the decision of each role (bit per role). */
struct pending {
	u64 sp;
	u32 probe;
	u32 runs_left;
	u32 decisions;
	u32 reserved;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, RV_GATE_MAX_THREADS);
	__type(key, u32); /* tid */
	__type(value, struct pending);
} gate_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RV_GATE_MAX_PROBES);
	__type(key, u32);
	__type(value, struct rv_gate_probe);
} gate_probes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RV_GATE_NR_STATS);
	__type(key, u32);
	__type(value, u64);
} gate_stats SEC(".maps");

/* Snapshots taken so far, for the first-only rule without multi_snapshot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} gate_snapshot_taken SEC(".maps");

/* The hold (gate.h): one u64 (BPF's compare-and-swap is 64-bit), RV_GATE_HOLD_*. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} gate_hold SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RV_GATE_RING_BYTES);
} gate_records SEC(".maps");

#define ROLE_BIT(role) (1u << (role))
#define STOP_ROLES     (ROLE_BIT(RV_GATE_STOP) | ROLE_BIT(RV_GATE_STOP_SAMPLE))

static __always_inline void count(u32 slot)
{
	u64 *value = bpf_map_lookup_elem(&gate_stats, &slot);

	if (value)
		*value += 1;
}

static __always_inline void emit(u32 type, u32 flags, u64 now, u64 duration, u32 pid, u32 tid,
				 u32 probe)
{
	struct rv_gate_event *e = bpf_ringbuf_reserve(&gate_records, sizeof(*e), 0);

	if (!e) {
		count(RV_GATE_STAT_RECORD_DROPS);
		return;
	}
	e->time_ns = now;
	e->duration_ns = duration;
	e->type = type;
	e->flags = flags;
	e->pid = pid;
	e->tid = tid;
	e->probe = probe;
	e->cpu = bpf_get_smp_processor_id();
	bpf_ringbuf_submit(e, 0);
}

/* Whether a snapshot role may fire now: always with multi_snapshot, else only
 * the first time in the whole recording, whichever CPU gets there first. */
static __always_inline bool take_snapshot(void)
{
	u32 zero = 0;
	u64 *taken;
	u64 *hold;

	if (!multi_snapshot) {
		taken = bpf_map_lookup_elem(&gate_snapshot_taken, &zero);
		if (!taken || __sync_val_compare_and_swap(taken, 0, 1) != 0)
			return false;
	}
	if (hold_after_snapshot) {
		/* one snapshot at a time: the first to take the hold wins */
		hold = bpf_map_lookup_elem(&gate_hold, &zero);
		if (!hold || __sync_val_compare_and_swap(hold, RV_GATE_HOLD_FREE,
							 RV_GATE_HOLD_HELD) != RV_GATE_HOLD_FREE)
			return false;
	}
	count(RV_GATE_STAT_SNAPSHOTS);
	return true;
}

/* Whether user space still copies a snapshot (the hold is set). */
static __always_inline bool held(void)
{
	u32 zero = 0;
	u64 *hold;

	if (!hold_after_snapshot)
		return false;
	hold = bpf_map_lookup_elem(&gate_hold, &zero);
	return hold && *hold != RV_GATE_HOLD_FREE;
}

static __always_inline u32 start_hit(u32 tid, u32 tgid, u32 probe, u64 now)
{
	struct rv_gate_window *w = bpf_map_lookup_elem(&gate_windows, &tid);
	struct rv_gate_window fresh = { .start_ns = now, .depth = 1, .pid = tgid };

	if (w) {
		w->depth += 1;
		count(RV_GATE_STAT_NESTED_STARTS);
		return 0;
	}
	if (held()) {
		/* resuming now would overwrite the window being copied */
		count(RV_GATE_STAT_HELD);
		return 0;
	}
	if (bpf_map_update_elem(&gate_windows, &tid, &fresh, BPF_NOEXIST)) {
		count(RV_GATE_STAT_WINDOW_MAP_FULL);
		return 0;
	}
	emit(RV_GATE_REC_WINDOW_BEGIN, 0, now, 0, tgid, tid, probe);
	return ROLE_BIT(RV_GATE_START);
}

static __always_inline u32 stop_hit(u32 tid, u32 tgid, u32 probe, u32 roles, u64 now)
{
	struct rv_gate_window *w = bpf_map_lookup_elem(&gate_windows, &tid);
	u32 decisions = ROLE_BIT(RV_GATE_STOP), flags = 0;
	u64 duration;

	if (!w) {
		count(RV_GATE_STAT_UNMATCHED_STOPS);
		return 0;
	}
	if (w->depth > 1) {
		w->depth -= 1;
		return 0;
	}
	duration = now - w->start_ns;
	bpf_map_delete_elem(&gate_windows, &tid);
	count(RV_GATE_STAT_WINDOWS);
	if (duration > min_duration_ns) {
		count(RV_GATE_STAT_SLOW_WINDOWS);
		flags |= RV_GATE_REC_FLAG_SLOW;
		if ((keep_slow_windows || (roles & ROLE_BIT(RV_GATE_STOP_SAMPLE))) &&
		    take_snapshot()) {
			decisions |= ROLE_BIT(RV_GATE_STOP_SAMPLE);
			flags |= RV_GATE_REC_FLAG_FIRED;
		}
	}
	emit(RV_GATE_REC_WINDOW_END, flags, now, duration, tgid, tid, probe);
	return decisions;
}

static __always_inline u32 trigger_hit(u32 tid, u32 tgid, u32 probe, u64 now)
{
	bool fired;

	if (held()) {
		/* PT is paused for the copy: this hit would keep nothing new */
		count(RV_GATE_STAT_HELD);
		emit(RV_GATE_REC_TRIGGER, 0, now, 0, tgid, tid, probe);
		count(RV_GATE_STAT_TRIGGERS);
		return 0;
	}
	fired = take_snapshot();

	count(RV_GATE_STAT_TRIGGERS);
	emit(RV_GATE_REC_TRIGGER, fired ? RV_GATE_REC_FLAG_FIRED : 0, now, 0, tgid, tid, probe);
	return fired ? ROLE_BIT(RV_GATE_TRIGGER) : 0;
}

/* The state change of one hit, made once: every role's decision as a bit set. */
static __always_inline u32 apply_hit(u32 tid, u32 tgid, u32 probe, u32 roles)
{
	u64 now = bpf_ktime_get_ns();
	u32 decisions = 0;

	count(RV_GATE_STAT_HITS);
	if (roles & ROLE_BIT(RV_GATE_START))
		decisions |= start_hit(tid, tgid, probe, now);
	else if (roles & STOP_ROLES)
		decisions |= stop_hit(tid, tgid, probe, roles, now);
	if (roles & ROLE_BIT(RV_GATE_TRIGGER))
		decisions |= trigger_hit(tid, tgid, probe, now);
	return decisions;
}

SEC("uprobe")
int gate_hit(struct user_regs *ctx)
{
	u64 cookie = bpf_get_attach_cookie(ctx);
	u32 probe = RV_GATE_COOKIE_PROBE(cookie), role = RV_GATE_COOKIE_ROLE(cookie);
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tgid = pid_tgid >> 32, tid = (u32)pid_tgid;
	u64 sp = PT_REGS_SP(ctx);
	struct rv_gate_probe *config;
	struct pending *p, next = {};
	u32 decision;

	if (role >= RV_GATE_NR_ROLES)
		return 0;
	count(RV_GATE_STAT_RUNS + role);
	if (target_tgid && tgid != target_tgid) {
		count(RV_GATE_STAT_OTHER_PROCESS);
		goto suppress;
	}
	config = bpf_map_lookup_elem(&gate_probes, &probe);
	if (!config || !config->runs_per_hit || !(config->roles & ROLE_BIT(role))) {
		count(RV_GATE_STAT_NOT_READY);
		goto suppress;
	}

	p = bpf_map_lookup_elem(&gate_pending, &tid);
	if (p && p->runs_left > 0) {
		if (p->probe == probe && p->sp == sp) {
			p->runs_left -= 1;
			decision = (p->decisions >> role) & 1;
			goto decided;
		}
		/* A hit whose runs did not all come: count it, start afresh. */
		count(RV_GATE_STAT_RUN_MISMATCH);
	}
	next.sp = sp;
	next.probe = probe;
	next.runs_left = config->runs_per_hit - 1;
	next.decisions = apply_hit(tid, tgid, probe, config->roles);
	if (p)
		*p = next;
	else
		bpf_map_update_elem(&gate_pending, &tid, &next, BPF_ANY);
	decision = (next.decisions >> role) & 1;

decided:
	if (decision) {
		count(RV_GATE_STAT_FIRED + role);
		return 1;
	}
suppress:
	count(RV_GATE_STAT_SUPPRESSED + role);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
