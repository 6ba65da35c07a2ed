/* syscall_number.c: the number a `syscall` instruction takes from eax, by
 * decoding the function's code with Zydis; see syscall_number.h. */
#include "decode/syscall_number.h"

#include <Zydis/Zydis.h>

/* What the decoding knows of rax at the instruction being looked at. */
struct rax_state {
	bool known;
	uint64_t value;
	uint64_t set_at; /* the address of the instruction that set it */
};

static bool is_rax(ZydisRegister reg)
{
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg) ==
	       ZYDIS_REGISTER_RAX;
}

static bool writes_rax(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops)
{
	for (uint8_t i = 0; i < insn->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && is_rax(ops[i].reg.value))
			return true;
	return false;
}

/* The value an instruction that writes rax leaves there, if it is one of the
 * forms syscall_number.h names. */
static bool value_set(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops,
		      uint64_t *value)
{
	ZydisRegister dst;

	if (insn->operand_count_visible != 2 || ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	dst = ops[0].reg.value;
	if (dst != ZYDIS_REGISTER_EAX && dst != ZYDIS_REGISTER_RAX)
		return false;
	if (insn->mnemonic == ZYDIS_MNEMONIC_MOV && ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		/* a 32-bit destination zero-extends; Zydis gives the imm32 of
		 * `mov r/m64, imm32` sign-extended already */
		*value = dst == ZYDIS_REGISTER_EAX ? (uint32_t)ops[1].imm.value.u
						   : ops[1].imm.value.u;
		return true;
	}
	if ((insn->mnemonic == ZYDIS_MNEMONIC_XOR || insn->mnemonic == ZYDIS_MNEMONIC_SUB) &&
	    ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].reg.value == dst) {
		*value = 0;
		return true;
	}
	return false;
}

/* An instruction after which the next one is not reached by falling
 * through (jmp, ret), or that leaves rax to someone else (call). */
static bool ends_straight_line(const ZydisDecodedInstruction *insn)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_INTERRUPT:
		return true;
	default:
		return false;
	}
}

/* A direct jump's target (a jcc, jmp, loop or jrcxz with a relative
 * immediate), or 0. */
static uint64_t jump_target(const ZydisDecodedInstruction *insn, uint64_t address)
{
	if (insn->meta.category != ZYDIS_CATEGORY_COND_BR &&
	    insn->meta.category != ZYDIS_CATEGORY_UNCOND_BR)
		return 0;
	if (!insn->raw.imm[0].is_relative)
		return 0;
	return address + insn->length + (uint64_t)insn->raw.imm[0].value.s;
}

bool rv_syscall_number(const uint8_t *code, size_t size, uint64_t start, uint64_t ip, uint64_t *nr)
{
	ZydisDecoder decoder;
	struct rax_state rax = { 0 };
	bool reached = false;
	size_t at = 0;

	if (!code || ip < start || ip - start >= size ||
	    !ZYAN_SUCCESS(
		    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return false;
	/* Up to the syscall: what rax holds there. */
	while (at < size && !reached) {
		ZydisDecodedInstruction insn;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		uint64_t address = start + at, value = 0;

		if (!ZYAN_SUCCESS(
			    ZydisDecoderDecodeFull(&decoder, code + at, size - at, &insn, ops)))
			return false;
		if (address == ip) {
			if (insn.mnemonic != ZYDIS_MNEMONIC_SYSCALL)
				return false;
			reached = true;
		} else if (address > ip) {
			return false; /* ip is inside an instruction */
		} else if (ends_straight_line(&insn)) {
			rax.known = false;
		} else if (writes_rax(&insn, ops)) {
			rax.known = value_set(&insn, ops, &value);
			rax.value = value;
			rax.set_at = address;
		}
		at += insn.length;
	}
	if (!reached || !rax.known)
		return false;
	/* No direct jump of the whole code lands between the value's
	 * instruction and the syscall, or on the syscall. */
	at = 0;
	while (at < size) {
		ZydisDecodedInstruction insn;
		uint64_t target;

		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, NULL, code + at,
								size - at, &insn)))
			break; /* the rest (padding, data) is not code */
		target = jump_target(&insn, start + at);
		if (target > rax.set_at && target <= ip)
			return false;
		at += insn.length;
	}
	*nr = rax.value;
	return true;
}
