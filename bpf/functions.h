/* functions.h: what the function tracer's BPF side (functions.bpf.c), its
 * loader (src/record/fn_engine.c) and its decoder (src/decode/fn_decoder.c)
 * share: the record every program emits, and the numbers all three agree on.
 *
 * Records leave the kernel through BPF ring buffers, one per CPU (the
 * array of maps fn_rings, indexed by the CPU the program runs on), reserved
 * and committed without waking anyone (user space polls them every few ms).
 * Each record is stamped in the kernel (time: bpf_ktime_get_ns, that is
 * CLOCK_MONOTONIC) and is 48 bytes; a CPU's ring is in time order except
 * for a program preempted between reserving and stamping (uprobe programs
 * run with migration, not preemption, disabled), which user space's merge
 * allows for (src/record/fn_merge.h). The capture keeps each record as the
 * raw data of a sample of a bpf-output event (RV_FN_EVENT_NAME), so `perf
 * script` shows them. A record names the thread it is about (tid): a sched
 * switch-in is emitted while another thread runs. Records a full ring
 * refuses are counted per CPU (fn_lost in the program's .bss), never twice.
 *
 * In recorder mode (when snapshots are wanted) records stay in the kernel
 * instead, in a per-thread flight recorder: a slot per thread (struct
 * rv_fn_slot) keeps its last RV_FN_RECORDER_RECORDS records, each with what
 * perf would have stamped on it (struct rv_fn_slot_entry); user space reads
 * the slots only when it takes a snapshot, and turns the entries into the
 * samples the bpf-output events would have carried.
 *
 * Not here: which functions are probed, or what the trace makes of records.
 */
#ifndef RV_BPF_FUNCTIONS_H
#define RV_BPF_FUNCTIONS_H

#ifndef __bpf__
#include <stdint.h>
typedef uint16_t rv_fn_u16;
typedef uint32_t rv_fn_u32;
typedef uint64_t rv_fn_u64;
#else
typedef u16 rv_fn_u16;
typedef u32 rv_fn_u32;
typedef u64 rv_fn_u64;
#endif

/* The bpf-output event's name in the capture (HEADER_EVENT_DESC). */
#define RV_FN_EVENT_NAME "rearview:functions"

enum rv_fn_record_type {
	RV_FN_ENTER = 1,	 /* addr: function entry (runtime); sp: at entry; arg: fn index */
	RV_FN_EXIT = 2,		 /* addr: the function returned from (runtime, 0 if unknown);
				  * sp: after the return (at a return site: the sp
				  * there + 8, the entry sp when the function's
				  * stack is balanced; even for `ret imm16`); arg:
				  * fn index */
	RV_FN_SYSCALL_ENTER = 3, /* arg: syscall number */
	RV_FN_SYSCALL_EXIT = 4,	 /* arg: syscall number; value: return value */
	RV_FN_SWITCH_OUT = 5,	 /* arg: prev_state (TASK_* bits, 0 = preempted) */
	RV_FN_SWITCH_IN = 6,	 /* the thread runs again */
	RV_FN_PAGE_FAULT = 7,	 /* addr: faulting address; value: ip; arg: error code */
	RV_FN_IRQ_ENTER = 8,	 /* arg: irq number */
	RV_FN_IRQ_EXIT = 9,	 /* arg: irq number; value: handler's return (IRQ_HANDLED...) */
	RV_FN_KFUNC_ENTER = 10,	 /* addr: kernel function; arg: index */
	RV_FN_KFUNC_EXIT = 11,	 /* addr: kernel function; arg: index */
};

/* The record (48 bytes), in the byte order of the machine that recorded. */
struct rv_fn_record {
	rv_fn_u64 time;	 /* ns, CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	rv_fn_u16 type;	 /* enum rv_fn_record_type */
	rv_fn_u16 flags; /* RV_FN_FLAG_* */
	rv_fn_u32 tid;	 /* the thread the record is about (kernel tid) */
	rv_fn_u32 pid;	 /* its process (tgid) */
	rv_fn_u32 arg;
	rv_fn_u64 addr;
	rv_fn_u64 sp;
	rv_fn_u64 value;
};

/* The record as captures before the ring buffers carried it (40 bytes, the
 * time only in the sample's TIME): still read by the decoder. */
struct rv_fn_record_v1 {
	rv_fn_u16 type;
	rv_fn_u16 flags;
	rv_fn_u32 tid;
	rv_fn_u32 pid;
	rv_fn_u32 arg;
	rv_fn_u64 addr;
	rv_fn_u64 sp;
	rv_fn_u64 value;
};

/* CPUs the tracer has a ring for at most (fn_rings, fn_lost). */
#define RV_FN_MAX_CPUS 1024u

/* Bytes of each CPU's ring buffer by default (a power of two of pages),
 * halved on machines of many CPUs until all of them take no more than
 * RV_FN_RINGS_TOTAL_BYTES, down to RV_FN_RING_MIN_BYTES (records are drained
 * every few ms: a busy CPU fills about 300 KiB in 4 ms); and the environment
 * variable that overrides it (a number of bytes, rounded up to a power of
 * two of at least a page; tests force losses with a tiny ring). */
#define RV_FN_RING_BYTES	(8u << 20)
#define RV_FN_RINGS_TOTAL_BYTES (64ull << 20)
#define RV_FN_RING_MIN_BYTES	(1u << 20)
#define RV_FN_RING_ENV		"REARVIEW_FN_RING_BYTES"

/* Set when the thread was inside a --filter window (the gate's map) as the
 * record was made; without --filter every record has it. */
#define RV_FN_FLAG_IN_WINDOW 1u
/* Bits the kernel leaves 0, where user space keeps a record's CPU while it
 * waits in its flight recorder (src/record/fn_stream.h), so that it stays
 * 48 bytes there; 0 again in captures. */
#define RV_FN_FLAG_CPU_SHIFT 6
#define RV_FN_FLAG_CPU_MASK  (0x3ffu << RV_FN_FLAG_CPU_SHIFT) /* RV_FN_MAX_CPUS */

/* Set on the ENTER record of a function whose exits are probed where they
 * happen (its return sites, not a uretprobe): every direct way it leaves is
 * recorded, so a later entry at its entry sp means it left by an indirect
 * jump (a tail call through a pointer) that no probe saw. Without it (a
 * uretprobe, or an old capture) an entry at the same sp is a tail callee
 * whose exit comes first. */
#define RV_FN_FLAG_EXIT_SITES 2u

/* ---- the bpf_cookie of user-function probes ----
 *
 * bits 0-19   the function's index in the engine's table
 * bits 20-21  what the probe is (enum rv_fn_probe_kind)
 * bits 24-28  exits: 0 always; else 1 + the x86 condition code (the low
 *             nibble of a Jcc opcode, 0 = O ... 15 = G) under which the
 *             instruction leaves the function (a conditional tail call):
 *             the probe fires before it runs, so the program tests the
 *             flags itself
 * bits 32-63  the function's entry less the probed address, as a signed
 *             32-bit number, so that the program finds the entry's run-time
 *             address from the probed one: for exits, and for an entry
 *             probe placed past an endbr64 (-4; src/record/fn_exits.h)
 *
 * uretprobes carry the index alone (kind RV_FN_PROBE_ENTRY). */
#define RV_FN_MAX_FUNCTIONS (1u << 20)

enum rv_fn_probe_kind {
	RV_FN_PROBE_ENTRY = 0,	     /* entry; exits by uretprobe (or none known) */
	RV_FN_PROBE_EXIT = 1,	     /* a return site: ret, or a jump out (tail call) */
	RV_FN_PROBE_ENTRY_SITES = 2, /* entry; exits probed at the return sites */
	RV_FN_PROBE_ENTRY_EXIT = 3,  /* entry whose first instruction also leaves */
};

#define RV_FN_COOKIE_INDEX_MASK	     (RV_FN_MAX_FUNCTIONS - 1)
#define RV_FN_COOKIE_KIND_SHIFT	     20
#define RV_FN_COOKIE_KIND_MASK	     3u
#define RV_FN_COOKIE_CONDITION_SHIFT 24
#define RV_FN_COOKIE_CONDITION_MASK  0x1fu
#define RV_FN_COOKIE_DELTA_SHIFT     32

static inline rv_fn_u64 rv_fn_cookie(rv_fn_u32 index, enum rv_fn_probe_kind kind,
				     rv_fn_u32 condition, long long entry_less_site)
{
	return (rv_fn_u64)(index & RV_FN_COOKIE_INDEX_MASK) |
	       ((rv_fn_u64)(kind & RV_FN_COOKIE_KIND_MASK) << RV_FN_COOKIE_KIND_SHIFT) |
	       ((rv_fn_u64)(condition & RV_FN_COOKIE_CONDITION_MASK)
		<< RV_FN_COOKIE_CONDITION_SHIFT) |
	       ((rv_fn_u64)(rv_fn_u32)(int)entry_less_site << RV_FN_COOKIE_DELTA_SHIFT);
}

static inline rv_fn_u32 rv_fn_cookie_index(rv_fn_u64 cookie)
{
	return (rv_fn_u32)cookie & RV_FN_COOKIE_INDEX_MASK;
}

static inline enum rv_fn_probe_kind rv_fn_cookie_kind(rv_fn_u64 cookie)
{
	return (enum rv_fn_probe_kind)((cookie >> RV_FN_COOKIE_KIND_SHIFT) &
				       RV_FN_COOKIE_KIND_MASK);
}

static inline rv_fn_u32 rv_fn_cookie_condition(rv_fn_u64 cookie)
{
	return (rv_fn_u32)(cookie >> RV_FN_COOKIE_CONDITION_SHIFT) & RV_FN_COOKIE_CONDITION_MASK;
}

static inline long long rv_fn_cookie_delta(rv_fn_u64 cookie)
{
	return (long long)(int)(rv_fn_u32)(cookie >> RV_FN_COOKIE_DELTA_SHIFT);
}

/* Whether x86 condition code cc (0-15) holds in the flags register. */
static inline int rv_fn_condition_holds(rv_fn_u32 cc, rv_fn_u64 flags)
{
	int cf = flags & 1, pf = (flags >> 2) & 1, zf = (flags >> 6) & 1;
	int sf = (flags >> 7) & 1, of = (flags >> 11) & 1, holds;

	switch ((cc >> 1) & 7) {
	case 0:
		holds = of;
		break;
	case 1:
		holds = cf;
		break;
	case 2:
		holds = zf;
		break;
	case 3:
		holds = cf | zf;
		break;
	case 4:
		holds = sf;
		break;
	case 5:
		holds = pf;
		break;
	case 6:
		holds = sf != of;
		break;
	default:
		holds = zf | (sf != of);
		break;
	}
	return (cc & 1) ? !holds : holds;
}

/* Processes traced at once (the target map). */
#define RV_FN_MAX_PROCESSES 1024

/* Values of the target map: a process given (it stays), or a child followed
 * (it leaves at its exec or exit). */
#define RV_FN_TARGET 1
#define RV_FN_CHILD  2

/* Slots of the per-CPU statistics array. */
enum rv_fn_stat {
	RV_FN_STAT_OUTSIDE = 0,	  /* records dropped: the thread was outside every window */
	RV_FN_STAT_OTHER_PROCESS, /* tracepoint hits of processes that are not traced */
	RV_FN_STAT_NO_SLOT,	  /* recorder mode: records of threads beyond the slots */
	RV_FN_STAT_RECORDED,	  /* recorder mode: records kept in the slots */
	RV_FN_STAT_EXEC,	  /* children followed that exec'd, and so were no longer */
	RV_FN_STAT_UNFOLLOWED,	  /* children the full target map could not take */
	RV_FN_NR_STATS,
};
/* Records made (and lost) in ring mode are counted from the rings by user
 * space, and in fn_lost: no per-record map update on the hot path. */

/* ---- recorder mode ---- */

/* Records a thread's slot keeps (a power of two): the last ones made. */
#define RV_FN_RECORDER_RECORDS 4096u

/* Slots (threads) at most; the loader sizes the slot map. */
#define RV_FN_RECORDER_MAX_SLOTS 1024u

/* A record as the recorder keeps it (56 bytes), with the CPU it was made
 * on; its time is the record's. seq is the record's index in its slot plus
 * one, written last: a reader takes the entry only when seq is the index it
 * expects (not torn, not overwritten). */
struct rv_fn_slot_entry {
	rv_fn_u32 seq;
	rv_fn_u32 cpu;
	struct rv_fn_record record;
};

/* One thread's slot: record i is records[i & (RV_FN_RECORDER_RECORDS - 1)];
 * head counts every record made, so head - RV_FN_RECORDER_RECORDS (when
 * positive) were overwritten. */
struct rv_fn_slot {
	rv_fn_u64 head;
	rv_fn_u32 tid, pid;
	struct rv_fn_slot_entry records[RV_FN_RECORDER_RECORDS];
};

#endif
