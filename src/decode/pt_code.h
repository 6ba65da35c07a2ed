/* pt_code.h: what the PT decoder needs to know of one instruction that libipt
 * does not tell it: the length and the kind of transfer of the instruction at
 * an address, read from libipt's image section cache and decoded with Zydis,
 * kept in a cache keyed by (section, address) because a trace runs the same
 * instructions over and over.
 *
 * One cache per decoding thread (nothing here locks, except libipt inside
 * pt_iscache_read on a miss). Not here: following the trace (pt_decoder.c).
 */
#ifndef RV_DECODE_PT_CODE_H
#define RV_DECODE_PT_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

/* How an instruction transfers control, in the terms perf's flags use. */
enum rv_pt_insn_class {
	RV_PT_INSN_OTHER,     /* no transfer */
	RV_PT_INSN_COND,      /* jcc, jrcxz, loop* */
	RV_PT_INSN_JUMP,      /* near jmp rel */
	RV_PT_INSN_JUMP_IND,  /* near jmp r/m */
	RV_PT_INSN_CALL,      /* near call rel */
	RV_PT_INSN_CALL_IND,  /* near call r/m */
	RV_PT_INSN_RETURN,    /* near ret */
	RV_PT_INSN_SYSCALL,   /* syscall, sysenter */
	RV_PT_INSN_SYSRET,    /* sysret, sysexit */
	RV_PT_INSN_SOFT_INT,  /* int n, int3, into, int1 */
	RV_PT_INSN_IRET,      /* iret* */
	RV_PT_INSN_FAR_CALL,  /* call far */
	RV_PT_INSN_FAR_JUMP,  /* jmp far */
	RV_PT_INSN_FAR_RETURN /* ret far */
};

struct rv_pt_insn {
	uint8_t size; /* 1..15 */
	uint8_t cls;  /* enum rv_pt_insn_class */
	int32_t disp; /* direct branches: the target is ip + size + disp */
};

struct rv_pt_code;

/* A cache reading code through iscache (NULL: nothing can be read, every
 * lookup fails). NULL when memory is short or Zydis cannot be set up. */
struct rv_pt_code *rv_pt_code_new(struct pt_image_section_cache *iscache);
void rv_pt_code_free(struct rv_pt_code *c);

/* The instruction at ip in section isid (a block's isid), decoded in mode;
 * NULL when the section has no id (code not from the section cache), the
 * bytes cannot be read or are not an instruction. raw/raw_size, when raw is
 * not NULL, are the instruction's bytes as libipt gave them for a block's
 * truncated last instruction (they are used instead of reading). */
const struct rv_pt_insn *rv_pt_code_get(struct rv_pt_code *c, int isid, uint64_t ip,
					enum pt_exec_mode mode, const uint8_t *raw,
					uint8_t raw_size);

/* What libipt's decoder treats apart from an instruction's transfer: events
 * bind to these (PTWRITE; MOV to CR3 for paging; VMLAUNCH, VMRESUME,
 * VMCALL and VMPTRLD for VMCS), and a walker that does not model those
 * events must not walk past them (pt_fast.c). */
#define RV_PT_INSN_SPECIAL 0x1u

/* Decodes the instruction at the start of bytes[0, size), run in mode,
 * without caching it: true with *out and *flags (RV_PT_INSN_SPECIAL) set,
 * false when the bytes do not begin with a whole instruction. */
bool rv_pt_insn_decode(const uint8_t *bytes, size_t size, enum pt_exec_mode mode,
		       struct rv_pt_insn *out, unsigned *flags);

/* Instructions decoded (cache misses), for tests. */
uint64_t rv_pt_code_decoded(const struct rv_pt_code *c);

#endif
