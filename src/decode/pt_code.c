/* pt_code.c: instruction length and transfer class by address, with Zydis
 * over bytes from libipt's image section cache, in an open-addressing cache. */
#include "decode/pt_code.h"

#include <Zydis/Zydis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t ip;
	int isid; /* 0: the slot is empty (sections without an id are never cached) */
	uint8_t mode;
	struct rv_pt_insn insn;
};

struct rv_pt_code {
	struct pt_image_section_cache *iscache;
	struct slot *slots;
	size_t mask, used;
	uint64_t decoded;
};

#define INITIAL_SLOTS (1u << 14)

/* Zydis's decoders hold only their settings: one set, made once, serves
 * every cache and thread. */
static struct {
	ZydisDecoder decoder64, decoder32, decoder16;
	bool ok;
} zydis;
static pthread_once_t zydis_once = PTHREAD_ONCE_INIT;

static void zydis_init(void)
{
	zydis.ok =
		ZYAN_SUCCESS(ZydisDecoderInit(&zydis.decoder64, ZYDIS_MACHINE_MODE_LONG_64,
					      ZYDIS_STACK_WIDTH_64)) &&
		ZYAN_SUCCESS(ZydisDecoderInit(&zydis.decoder32, ZYDIS_MACHINE_MODE_LONG_COMPAT_32,
					      ZYDIS_STACK_WIDTH_32)) &&
		ZYAN_SUCCESS(ZydisDecoderInit(&zydis.decoder16, ZYDIS_MACHINE_MODE_LONG_COMPAT_16,
					      ZYDIS_STACK_WIDTH_16));
	/* Minimal decoding has all this module reads (length, mnemonic,
	 * category, branch type, opcode and map, the raw immediate) without
	 * the attributes and AVX details. */
	ZydisDecoder *all[] = { &zydis.decoder64, &zydis.decoder32, &zydis.decoder16 };

	for (size_t i = 0; zydis.ok && i < sizeof(all) / sizeof(all[0]); i++)
		zydis.ok = ZYAN_SUCCESS(
			ZydisDecoderEnableMode(all[i], ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE));
}

static size_t slot_of(uint64_t ip, int isid, size_t mask)
{
	uint64_t h = ip ^ ((uint64_t)(uint32_t)isid << 47);

	h ^= h >> 31;
	h *= 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	return (size_t)h & mask;
}

struct rv_pt_code *rv_pt_code_new(struct pt_image_section_cache *iscache)
{
	struct rv_pt_code *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->iscache = iscache;
	pthread_once(&zydis_once, zydis_init);
	if (!zydis.ok) {
		free(c);
		return NULL;
	}
	c->mask = INITIAL_SLOTS - 1;
	c->slots = calloc(INITIAL_SLOTS, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	return c;
}

void rv_pt_code_free(struct rv_pt_code *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

uint64_t rv_pt_code_decoded(const struct rv_pt_code *c)
{
	return c->decoded;
}

static bool grow(struct rv_pt_code *c)
{
	size_t mask = c->mask * 2 + 1;
	struct slot *slots = calloc(mask + 1, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i <= c->mask; i++) {
		const struct slot *s = &c->slots[i];

		if (!s->isid)
			continue;
		size_t j = slot_of(s->ip, s->isid, mask);

		while (slots[j].isid)
			j = (j + 1) & mask;
		slots[j] = *s;
	}
	free(c->slots);
	c->slots = slots;
	c->mask = mask;
	return true;
}

static enum rv_pt_insn_class classify(const ZydisDecodedInstruction *insn)
{
	bool far = insn->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;
	bool direct = insn->raw.imm[0].is_relative;

	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
		return RV_PT_INSN_SYSCALL;
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_SYSEXIT:
		return RV_PT_INSN_SYSRET;
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		return RV_PT_INSN_SOFT_INT;
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
		return RV_PT_INSN_IRET;
	case ZYDIS_MNEMONIC_RET:
		return far ? RV_PT_INSN_FAR_RETURN : RV_PT_INSN_RETURN;
	case ZYDIS_MNEMONIC_JMP:
		if (far)
			return RV_PT_INSN_FAR_JUMP;
		return direct ? RV_PT_INSN_JUMP : RV_PT_INSN_JUMP_IND;
	case ZYDIS_MNEMONIC_CALL:
		if (far)
			return RV_PT_INSN_FAR_CALL;
		return direct ? RV_PT_INSN_CALL : RV_PT_INSN_CALL_IND;
	default:
		break;
	}
	/* XBEGIN's relative operand is where an abort goes, not a branch:
	 * libipt does not count it as one either */
	if (insn->meta.category == ZYDIS_CATEGORY_COND_BR &&
	    insn->mnemonic != ZYDIS_MNEMONIC_XBEGIN)
		return RV_PT_INSN_COND;
	return RV_PT_INSN_OTHER;
}

static unsigned special(const ZydisDecodedInstruction *insn)
{
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_PTWRITE:
	case ZYDIS_MNEMONIC_VMLAUNCH:
	case ZYDIS_MNEMONIC_VMRESUME:
	case ZYDIS_MNEMONIC_VMCALL:
	case ZYDIS_MNEMONIC_VMPTRLD:
		return RV_PT_INSN_SPECIAL;
	case ZYDIS_MNEMONIC_MOV:
		/* mov cr3, reg: the only MOV with a control register's
		 * encoding (0f 22) that writes CR3 */
		if (insn->opcode_map == ZYDIS_OPCODE_MAP_0F && insn->opcode == 0x22)
			return RV_PT_INSN_SPECIAL;
		return 0;
	default:
		return 0;
	}
}

static const ZydisDecoder *decoder_for(enum pt_exec_mode mode)
{
	switch (mode) {
	case ptem_32bit:
		return &zydis.decoder32;
	case ptem_16bit:
		return &zydis.decoder16;
	default:
		return &zydis.decoder64;
	}
}

const struct rv_pt_insn *rv_pt_code_get(struct rv_pt_code *c, int isid, uint64_t ip,
					enum pt_exec_mode mode, const uint8_t *raw,
					uint8_t raw_size)
{
	uint8_t bytes[pt_max_insn_size];
	size_t size;

	if (isid <= 0)
		return NULL;

	size_t i = slot_of(ip, isid, c->mask);

	for (;; i = (i + 1) & c->mask) {
		struct slot *s = &c->slots[i];

		if (!s->isid)
			break;
		if (s->ip == ip && s->isid == isid && s->mode == (uint8_t)mode)
			return &s->insn;
	}

	if (raw && raw_size) {
		size = raw_size < sizeof(bytes) ? raw_size : sizeof(bytes);
		memcpy(bytes, raw, size);
	} else {
		int n = c->iscache ? pt_iscache_read(c->iscache, bytes, sizeof(bytes), isid, ip)
				   : -pte_invalid;

		if (n <= 0)
			return NULL;
		size = (size_t)n;
	}

	struct rv_pt_insn insn;
	unsigned flags;

	if (!rv_pt_insn_decode(bytes, size, mode, &insn, &flags))
		return NULL;
	c->decoded++;

	if ((c->used + 1) * 2 > c->mask) {
		if (!grow(c))
			return NULL;
		i = slot_of(ip, isid, c->mask);
		while (c->slots[i].isid)
			i = (i + 1) & c->mask;
	}

	struct slot *s = &c->slots[i];

	s->ip = ip;
	s->isid = isid;
	s->mode = (uint8_t)mode;
	s->insn = insn;
	c->used++;
	return &s->insn;
}

bool rv_pt_insn_decode(const uint8_t *bytes, size_t size, enum pt_exec_mode mode,
		       struct rv_pt_insn *out, unsigned *flags)
{
	ZydisDecodedInstruction insn;

	pthread_once(&zydis_once, zydis_init);
	if (!zydis.ok || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(decoder_for(mode), NULL, bytes,
								     size, &insn)))
		return false;
	out->size = insn.length;
	out->cls = (uint8_t)classify(&insn);
	out->disp = insn.raw.imm[0].is_relative ? (int32_t)insn.raw.imm[0].value.s : 0;
	*flags = special(&insn);
	return true;
}
