/* insn.h: what softpt needs to know of an x86-64 instruction (its length and
 * how PT sees its control flow), decoded with Zydis and cached by address,
 * because a single-stepped program executes the same instructions again and
 * again.
 *
 * Not here: reading the tracee's memory (the caller hands in the bytes), or
 * deciding which packets an instruction produces (ptgen does).
 */
#ifndef SOFTPT_INSN_H
#define SOFTPT_INSN_H

#include <stddef.h>
#include <stdint.h>

#include "ptgen.h"

struct insn_info {
	uint8_t size;	    /* 1..15 */
	uint8_t cls;	    /* enum ptgen_class */
	uint8_t rep_string; /* a REP-prefixed string instruction: it stays at its IP
			     * for as many steps as it iterates */
	uint8_t trap;	    /* INT n, INT3, INTO, INT1: enters the kernel like a
			     * system call, but PT reports it as an interrupt */
};

struct insn_cache;

/* NULL when the decoder cannot be set up or memory is short. */
struct insn_cache *insn_cache_new(void);
void insn_cache_free(struct insn_cache *c);

/* The instruction at ip from the cache, or NULL if it is not there. */
const struct insn_info *insn_cache_find(const struct insn_cache *c, uint64_t ip);

/* Decodes code[0..len) at ip, caches and returns it; NULL when the bytes are
 * not a valid instruction or memory is short. */
const struct insn_info *insn_cache_decode(struct insn_cache *c, uint64_t ip, const uint8_t *code,
					  size_t len);

/* Forgets everything: code may have changed (mmap, munmap, mprotect, exec). */
void insn_cache_clear(struct insn_cache *c);

/* Instructions decoded since creation (cache misses). */
uint64_t insn_cache_decoded(const struct insn_cache *c);

#endif
