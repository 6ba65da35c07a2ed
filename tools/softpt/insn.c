/* insn.c: instruction classification with Zydis with an open-addressing
 * cache keyed by instruction address. */
#include "insn.h"

#include <Zydis/Zydis.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t ip; /* 0: empty (no instruction lives at address 0) */
	struct insn_info info;
};

struct insn_cache {
	ZydisDecoder decoder;
	struct slot *slots;
	size_t mask, used;
	uint64_t decoded;
};

static size_t slot_of(uint64_t ip, size_t mask)
{
	ip ^= ip >> 29;
	ip *= 0xbf58476d1ce4e5b9ULL;
	ip ^= ip >> 32;
	return (size_t)ip & mask;
}

struct insn_cache *insn_cache_new(void)
{
	struct insn_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&c->decoder, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64))) {
		free(c);
		return NULL;
	}
	c->mask = (1u << 16) - 1;
	c->slots = calloc(c->mask + 1, sizeof(*c->slots));
	if (!c->slots) {
		insn_cache_free(c);
		return NULL;
	}
	return c;
}

void insn_cache_free(struct insn_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c);
}

const struct insn_info *insn_cache_find(const struct insn_cache *c, uint64_t ip)
{
	for (size_t i = slot_of(ip, c->mask);; i = (i + 1) & c->mask) {
		if (c->slots[i].ip == ip)
			return &c->slots[i].info;
		if (c->slots[i].ip == 0)
			return NULL;
	}
}

static bool grow(struct insn_cache *c)
{
	size_t new_mask = c->mask * 2 + 1;
	struct slot *slots = calloc(new_mask + 1, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i <= c->mask; i++) {
		if (!c->slots[i].ip)
			continue;
		size_t j = slot_of(c->slots[i].ip, new_mask);
		while (slots[j].ip)
			j = (j + 1) & new_mask;
		slots[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = slots;
	c->mask = new_mask;
	return true;
}

/* Near branches only: far transfers do not occur in 64-bit user code, and
 * softpt does not model them. */
static enum ptgen_class classify(const ZydisDecodedInstruction *insn)
{
	bool near = insn->meta.branch_type == ZYDIS_BRANCH_TYPE_SHORT ||
		    insn->meta.branch_type == ZYDIS_BRANCH_TYPE_NEAR;
	bool direct = insn->raw.imm[0].is_relative;

	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		return PTGEN_JCC;
	case ZYDIS_CATEGORY_UNCOND_BR:
		if (!near)
			return PTGEN_OTHER;
		return direct ? PTGEN_JMP : PTGEN_JMP_IND;
	case ZYDIS_CATEGORY_CALL:
		if (!near)
			return PTGEN_OTHER;
		return direct ? PTGEN_CALL : PTGEN_CALL_IND;
	case ZYDIS_CATEGORY_RET:
		return insn->mnemonic == ZYDIS_MNEMONIC_RET ? PTGEN_RET : PTGEN_OTHER;
	case ZYDIS_CATEGORY_SYSCALL:
		return PTGEN_SYSCALL;
	case ZYDIS_CATEGORY_INTERRUPT:
		/* int n, int3, into: a trap into the kernel, like a system call. */
		return PTGEN_SYSCALL;
	default:
		return PTGEN_OTHER;
	}
}

const struct insn_info *insn_cache_decode(struct insn_cache *c, uint64_t ip, const uint8_t *code,
					  size_t len)
{
	ZydisDecodedInstruction insn;

	if (ip == 0)
		return NULL;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&c->decoder, NULL, code, len, &insn)))
		return NULL;
	c->decoded++;
	if ((c->used + 1) * 2 > c->mask && !grow(c))
		return NULL;

	size_t i = slot_of(ip, c->mask);
	while (c->slots[i].ip && c->slots[i].ip != ip)
		i = (i + 1) & c->mask;
	if (!c->slots[i].ip)
		c->used++;

	c->slots[i].ip = ip;
	c->slots[i].info.size = insn.length;
	c->slots[i].info.cls = (uint8_t)classify(&insn);
	c->slots[i].info.trap = insn.meta.category == ZYDIS_CATEGORY_INTERRUPT;
	c->slots[i].info.rep_string =
		insn.meta.category == ZYDIS_CATEGORY_STRINGOP &&
		(insn.attributes &
		 (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE));
	return &c->slots[i].info;
}

void insn_cache_clear(struct insn_cache *c)
{
	memset(c->slots, 0, (c->mask + 1) * sizeof(*c->slots));
	c->used = 0;
}

uint64_t insn_cache_decoded(const struct insn_cache *c)
{
	return c->decoded;
}
