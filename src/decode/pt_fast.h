/* pt_fast.h: libipt's block decoder, walked again on libipt's query decoder
 * with a cache of basic blocks. Private to the PT decoder (pt_walk.c).
 *
 * libipt's block decoder walks the image instruction by instruction between
 * two branches, looking each one up in its section and block caches; most
 * of the decoding time is spent there. This walker keeps, per decoding
 * thread, the basic blocks it has met (start, instruction count, the
 * instruction that ends it: a conditional, direct or indirect jump or call,
 * a return, a far or system transfer), decoded once with Zydis from the
 * bytes libipt's section cache holds (pt_sections.h says which section),
 * and asks a query decoder only what the trace decides: conditional
 * branches, indirect targets, events and time. The packets are decoded by
 * rearview's own layer (pt_query.h), libipt 2.0's query decoder done again,
 * when it models the chunk (no timing packets among others), else by
 * libipt's query decoder (pt_qry_*); the answers are the same.
 *
 * The contract is libipt's block decoder's, call for call: the same queries
 * in the same order, so the same time, statuses and events (the tick
 * events included), and blocks that hold the same instructions, though cut
 * at other places: libipt's end at every branch (the walker asks for that),
 * these run on through the branches that give the walker nothing to emit
 * (struct rv_fast_drop) and end where libipt's would end with something for
 * the walker. The walker (pt_walk.c) emits the same records from either.
 *
 * What is not modelled here is handed back: RV_FAST_HANDOFF from any call
 * means "decode this chunk with libipt's block decoder instead", and the
 * walker does (skipping the records it already has; they are the same).
 * Handed back: any decode error (libipt's error, its position and its
 * resynchronisation are libipt's business; rearview's packet layer answers
 * RV_PQ_UNMODELLED there, and for what it does not model), synchronous paging and VMCS
 * events (those bound to MOV to CR3 and VMPTRLD; the PSB+'s asynchronous
 * ones are modelled), PTWRITE events, a transaction (TSX) that is not the
 * PSB+'s plain "not in a transaction", executing PTWRITE, MOV to a control
 * register or a VM instruction (RV_PT_INSN_SPECIAL), a return with no call
 * on the return-address stack, an indirect transfer whose target the trace
 * suppresses, code that is not 64-bit, code the registry does not know or
 * cannot read, an instruction cut by a section's end, erratum SKD022 where
 * it may apply, and address filtering with erratum SKL014. Overflows are
 * modelled (the walker reports them as libipt's decoder does).
 *
 * Thread safety: a decoder and its cache belong to one thread, and a cache
 * serves one decoder at a time (from rv_fast_alloc to rv_fast_free): the
 * decoder keeps where the cache's blocks are.
 */
#ifndef RV_DECODE_PT_FAST_H
#define RV_DECODE_PT_FAST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

/* Not a pte_* code (those are small and negative). */
#define RV_FAST_HANDOFF (-1000)
/* rv_fast_tick_event's "the event in process is not a tick". */
#define RV_FAST_NOT_TICK (-1001)

/* One thread's basic blocks and image snapshots, kept from chunk to chunk. */
struct rv_fast_cache;

struct rv_fast_cache *rv_fast_cache_new(void);
void rv_fast_cache_free(struct rv_fast_cache *c);

/* Bytes the cache holds now (blocks, tables and snapshots). */
size_t rv_fast_cache_bytes(const struct rv_fast_cache *c);

struct rv_fast;

/* A decoder over config's [begin, end) with config's block-decoder flags
 * (end_on_call and end_on_jump must be set: every branch ends a block),
 * using cache. NULL when memory is short or the flags are not those. */
struct rv_fast *rv_fast_alloc(const struct pt_config *config, struct rv_fast_cache *cache);
void rv_fast_free(struct rv_fast *f);

/* The taken jumps the walker drops (pt_walk.c's resolve_pending and
 * emit_branch): rv_fast_next goes on through them inside one block
 * instead of ending the block at each, as it does through conditional
 * branches not taken, and counts in *dropped those the walker counts. */
struct rv_fast_drop {
	bool all;  /* every jump (options.ignore_jumps), none counted */
	bool span; /* those from and to [start, end) (a function), counted, */
	uint64_t start, end;
	uint64_t time, from, until; /* ... when time is in [from, until) */
};

/* The tick event rv_fast_next may take with its block (see below). */
struct rv_fast_tick {
	bool taken;   /* false before the call; the rest is set only when true */
	bool has_tsc; /* the tick's has_tsc and tsc */
	uint64_t tsc;
	int status; /* rv_fast_tick_event's status, never negative */
};

/* As pt_blk_sync_set, pt_blk_set_image, pt_blk_next, pt_blk_event,
 * pt_blk_get_offset, pt_blk_get_sync_offset and pt_blk_time, with
 * RV_FAST_HANDOFF in place of every error but -pte_eos (and of the
 * results libipt's decoder would reach by paths this one does not take).
 *
 * rv_fast_next also takes the tick event a block of a timed trace most
 * often ends with, as rv_fast_tick_event would right after it, when that
 * takes nothing from the trace (no event waits behind the tick): then
 * tick->taken, the status returned is the block's from before the take
 * (an event pending), and tick->status the one after it (none pending);
 * else tick->taken is left false (the caller sets it so before the
 * call) and the decoder is as pt_blk_next leaves libipt's. */
int rv_fast_sync_set(struct rv_fast *f, uint64_t offset);
int rv_fast_set_image(struct rv_fast *f, struct pt_image *image);
int rv_fast_next(struct rv_fast *f, struct pt_block *block, const struct rv_fast_drop *drop,
		 uint64_t *dropped, struct rv_fast_tick *tick);
int rv_fast_event(struct rv_fast *f, struct pt_event *event);
/* rv_fast_event for the event most timed traces are made of, without
 * copying it out: when the event in process is a tick (the only ones are
 * made after a TNT or TIP, never a status update), takes it as
 * rv_fast_event would, sets *tsc and *has_tsc to its tsc and has_tsc, and
 * returns rv_fast_event's status; else RV_FAST_NOT_TICK, and nothing
 * changed (rv_fast_event is then the call to make). */
int rv_fast_tick_event(struct rv_fast *f, uint64_t *tsc, bool *has_tsc);
int rv_fast_get_offset(const struct rv_fast *f, uint64_t *offset);
int rv_fast_get_sync_offset(const struct rv_fast *f, uint64_t *offset);
int rv_fast_time(struct rv_fast *f, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc);

#endif
