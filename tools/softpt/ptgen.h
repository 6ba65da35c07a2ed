/* ptgen.h: the Intel PT packet stream that PT hardware, tracing user space
 * only (IA32_RTIT_CTL.USER=1, OS=0), would have written for one thread's
 * instruction flow. softpt's tracer feeds it every retired user-space
 * instruction with its outcome; ptgen decides which packets the hardware
 * emits (TNT, TIP, FUP, TIP.PGE/PGD, PSB+, MODE.Exec, timing) and encodes
 * them with libipt's encoder. Tests model kernel tracing (OS=1) with it too:
 * ptgen_async_branch for an interrupt, indirect transfers for the syscall
 * entry, sysret and iret.
 *
 * Not here: ptrace, instruction decoding (the caller classifies), files.
 */
#ifndef SOFTPT_PTGEN_H
#define SOFTPT_PTGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What kind of control flow an instruction is, as PT sees it. */
enum ptgen_class {
	PTGEN_OTHER,	/* not a branch */
	PTGEN_JCC,	/* Jcc, JrCXZ, LOOP, LOOPcc: one TNT bit */
	PTGEN_JMP,	/* direct near jmp: no packet */
	PTGEN_JMP_IND,	/* indirect near jmp: TIP */
	PTGEN_CALL,	/* direct near call: no packet, pushes the return address */
	PTGEN_CALL_IND, /* indirect near call: TIP, pushes the return address */
	PTGEN_RET,	/* near ret: a TNT bit if compressed, else TIP */
	PTGEN_SYSCALL,	/* syscall/sysenter: leaves user space, TIP.PGD without IP.
			 * Not INT n/INT3: those send FUP(their IP) + TIP.PGD, so
			 * report them with ptgen_async_disable at their IP. */
};

/* Timing and format knobs, as the intel_pt PMU config would set them. */
struct ptgen_config {
	bool noretcomp;	     /* IA32_RTIT_CTL.DisRETC */
	unsigned psb_period; /* a PSB+ every 2^(11 + psb_period) bytes of trace */
	bool tsc;	     /* TSCEn: TSC packets in PSB+ */
	bool mtc;	     /* MTCEn: MTC packets, TMA in PSB+ */
	unsigned mtc_period; /* an MTC each time CTC bit mtc_period toggles */
	bool cyc;	     /* CYCEn: cycle-accurate mode, CYC packets */
	unsigned cyc_thresh; /* CYC threshold (0: a CYC with every eligible packet) */
	/* CTC runs at TSC * tsc_ctc_ratio_d / tsc_ctc_ratio_n (CPUID 0x15 EBX:EAX = n:d). */
	uint32_t tsc_ctc_ratio_n, tsc_ctc_ratio_d;
	uint8_t cbr;		    /* core:bus ratio put in CBR packets */
	uint8_t max_nonturbo_ratio; /* core cycles per TSC tick are cbr / max_nonturbo_ratio */
};

struct ptgen;

/* Returns NULL when out of memory or when the config is invalid: psb_period
 * above 16, mtc_period or cyc_thresh above 15, mtc without a TSC:CTC ratio
 * or with more than 511 TSC ticks per CTC tick (TMA's fast counter has 9
 * bits), cyc without cbr and max_nonturbo_ratio. */
struct ptgen *ptgen_new(const struct ptgen_config *config);
void ptgen_free(struct ptgen *g);

/* All functions below return 0, or a negative libipt error code (pte_*):
 * -pte_nomem, -pte_invalid for bad arguments or a `tsc` smaller than the
 * previous call's, -pte_bad_context for a call that does not fit the state
 * (ptgen_insn while tracing is off, ptgen_enable while it is on, ...), or
 * what libipt's encoder returned.
 *
 * `tsc` is the time of the event in TSC ticks; it never decreases from one
 * call to the next. With mtc, an MTC is written every 2^mtc_period CTC ticks
 * of that time, also while tracing is off (MTC depends on TriggerEn only), so
 * the stream grows with the time that passes: feed a clock that advances as
 * fast as the traced thread would run, not the stepper's wall clock. */

/* Tracing (re)starts at ip: the first instruction of a thread, or the first
 * user instruction after the kernel returned to user space (after a syscall,
 * at a signal handler, after sigreturn). The first call writes the PSB+ that
 * starts the trace (TSC, TMA, CBR; no FUP, as packets are still off); each
 * call then writes MODE.Exec if no PSB+ since the last one carried it, and
 * TIP.PGE(ip). No TSC: a far transfer back to user space sends none. */
int ptgen_enable(struct ptgen *g, uint64_t ip, uint64_t tsc);

/* One retired instruction at ip, `size` bytes long, and next_ip, where the
 * thread went next (the branch outcome or target; for PTGEN_SYSCALL ignored).
 * Writes a PSB+ (with MODE.Exec and FUP(ip)) before the instruction once
 * 2^(11 + psb_period) bytes have passed since the last one.
 * PTGEN_SYSCALL disables tracing; the next call is ptgen_enable. */
int ptgen_insn(struct ptgen *g, uint64_t ip, unsigned size, enum ptgen_class cls, uint64_t next_ip,
	       uint64_t tsc);

/* An asynchronous event (interrupt, exception, signal delivery, the thread
 * being killed) took the thread to the kernel before the instruction at ip
 * retired: FUP(ip) then TIP.PGD. The next call is ptgen_enable (or nothing).
 * Also for INT n/INT3 at ip (decoders then show the INT as not executed, as
 * they do for real traces). */
int ptgen_async_disable(struct ptgen *g, uint64_t ip, uint64_t tsc);

/* With the kernel traced too (OS=1): an interrupt or exception took the
 * thread from before the instruction at ip to `to` (the kernel's handler)
 * without leaving traced code: FUP(ip) then TIP(to) (SDM Table 36-50,
 * asynchronous events with packets on). The return (iret, sysret, a
 * syscall's entry) is an indirect transfer: ptgen_insn with PTGEN_JMP_IND
 * and its target, which sends the TIP the hardware sends for it. */
int ptgen_async_branch(struct ptgen *g, uint64_t ip, uint64_t to, uint64_t tsc);

/* The thread is scheduled out while it is in the kernel (tracing is off).
 * With per-thread tracing the kernel then clears TraceEn, so nothing at all is
 * written, timing packets included, until ptgen_switch_in: time spent away
 * no longer grows the stream. */
int ptgen_switch_out(struct ptgen *g, uint64_t tsc);

/* Scheduled back in: TraceEn 0 -> 1 restarts timing with TSC, TMA and CBR
 * (SDM: a TSC packet follows TraceEn 0 -> 1), and the MTC and cycle counters
 * start from tsc. ptgen_enable follows when user code resumes. */
int ptgen_switch_in(struct ptgen *g, uint64_t tsc);

/* An internal buffer overflow: overflow_begin writes the pending TNT, then
 * packets are lost (the caller keeps feeding instructions and enables/
 * disables, ptgen drops them and forgets the return stack), until
 * overflow_end writes OVF, TSC/TMA/CBR, and FUP(ip) with an uncompressed IP
 * when tracing is on at that moment; when it is off, the next ptgen_enable's
 * TIP.PGE follows the OVF (ip is then ignored). */
int ptgen_overflow_begin(struct ptgen *g, uint64_t tsc);
int ptgen_overflow_end(struct ptgen *g, uint64_t ip, uint64_t tsc);

/* Writes what is pending (TNT bits) at the end of the trace. */
int ptgen_flush(struct ptgen *g);

/* The trace so far. Valid until the next call that writes. */
const uint8_t *ptgen_data(const struct ptgen *g, size_t *size);

/* PSBs written so far, and the offset of the i-th (0-based) one
 * (UINT64_MAX past the last). */
size_t ptgen_psb_count(const struct ptgen *g);
uint64_t ptgen_psb_offset(const struct ptgen *g, size_t index);

/* Packets written so far, for softpt's statistics. */
uint64_t ptgen_packet_count(const struct ptgen *g);

#endif
