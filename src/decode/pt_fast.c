/* pt_fast.c: libipt's block decoder's walk over a query decoder (libipt's,
 * or rearview's packet layer: pt_query.h), with a basic-block cache (see
 * pt_fast.h for the contract).
 *
 * The state and the order of the queries follow libipt's block decoder
 * (libipt/src/pt_block_decoder.c of libipt 2.0): the current IP, the
 * execution mode, whether tracing is enabled, the last query status, the
 * event in process, and the return-address stack for compressed returns.
 * What differs is how the code between two queries is found: a basic block
 * looked up by address in this thread's cache (decoded once with Zydis from
 * the section's bytes), not an instruction at a time.
 *
 * Not here: what the blocks and events mean (pt_walk.c), which section
 * holds an address (pt_sections.c), instruction classes (pt_code.c).
 */
#include "decode/pt_fast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "decode/pt_code.h"
#include "decode/pt_query.h"
#include "decode/pt_sections.h"
#include "util/array.h"

/* Instructions in one basic block at most: a longer straight run is cut
 * (without a transfer; the walker sees nothing of the cut). */
#define MAX_BB_INSNS 4096u
/* Bytes read from a section at a time while decoding a block. */
#define READ_BYTES    512u
#define INITIAL_SLOTS (1u << 12)
/* libipt's return-address stack: the last 64 calls. */
#define RETSTACK 64u

/* How a basic block ends. */
enum bb_end {
	BB_FALL,      /* no transfer: the section ended or the block was cut */
	BB_COND,      /* jcc, loop, jrcxz */
	BB_JUMP,      /* direct near jmp */
	BB_CALL,      /* direct near call */
	BB_CALL_NEXT, /* one to the next instruction: libipt pushes nothing */
	BB_JUMP_IND,  /* indirect near jmp */
	BB_CALL_IND,  /* indirect near call */
	BB_RETURN,    /* near ret */
	BB_FAR,	      /* far transfers, syscalls, interrupts and their returns */
	BB_SPECIAL,   /* an instruction events bind to (RV_PT_INSN_SPECIAL) */
};

/* What the walk reads of a block at every step comes first. A block is
 * one cache line, and the array is aligned to them (grow_bbs): the walk
 * reads one line per block, and finds it with a shift. */
struct bb {
	_Alignas(64) uint64_t ip; /* the first instruction */
	uint64_t end_ip;	  /* the last one (the transfer) */
	/* Where it goes: [0] the address after its last instruction (the
	 * fall-through, a call's return address), [1] the target of a direct
	 * transfer (a conditional branch's taken side). */
	uint64_t to[2];
	/* The blocks that follow (their number, 0: not looked up yet): [0]
	 * after a direct transfer or the fall-through, or the last target of
	 * an indirect one; [1] a conditional branch's taken side, or where a
	 * call returns to. Checked against the address before use. */
	uint32_t succ[2];
	uint32_t ninsn;
	uint8_t end;	/* enum bb_end */
	uint8_t iclass; /* libipt's class of the last instruction */
	int isid;
	uint32_t image; /* the id of the image snapshot it was decoded from */
};

_Static_assert(sizeof(struct bb) == 64, "a block is one cache line");

/* A snapshot of one image's sections, with an id for the blocks' keys. */
struct snapshot {
	const struct pt_image *image;
	uint64_t generation;
	uint32_t id;
	struct rv_pt_section_list list;
};

/* A block's number is where it lies in the array: bbs[i]'s is
 * (i + 1) * sizeof(struct bb), its offset in bytes from bbs[-1], and 0 is
 * none (bb_of). Found from its number with an add the load takes in its
 * address, where an index would need a shift as well: the walk's loop
 * goes from block to block through their numbers (succ), one load after
 * the other. */
struct rv_fast_cache {
	struct bb *bbs; /* block n is bb_of(bbs, n) */
	size_t nr_bbs, cap_bbs;
	uint32_t *slots; /* open addressing on (image, ip): block numbers, 0: empty */
	size_t mask;
	struct snapshot *snaps;
	size_t nr_snaps, cap_snaps;
	uint32_t next_id;
	/* rearview's packet layer met a packet it does not model: later
	 * chunks are checked whole before it takes them (pt_query.h) */
	bool check_whole;
};

struct rv_fast {
	/* The packets: rearview's own layer when it models the chunk (own),
	 * else libipt's query decoder. */
	bool own;
	struct rv_pq pq;
	struct pt_query_decoder *qry;
	struct rv_fast_cache *cache;
	struct pt_config config;
	bool ticks;
	/* own and ticks in one, for the walk's first test (a timed trace
	 * on rearview's packet layer first: the softpt captures) */
	enum { WALK_OWN_TIMED = 1, WALK_OWN_UNTIMED, WALK_LIBIPT } walk;
	const struct snapshot *snap;
	/* The image id of the blocks that may be used at f->ip: snap's id
	 * when there is a snapshot and the mode is 64-bit, else 0, which no
	 * block has (ids start at 1). set_key keeps it so, called wherever
	 * snap or mode change: one compare with a block's image then says
	 * all three. */
	uint32_t key;
	/* cache->bbs, as the last lookup left it (bb_number, the only place
	 * that moves it; one decoder at a time uses a cache: pt_fast.h) */
	struct bb *bbs;

	uint64_t ip;
	enum pt_exec_mode mode;
	int status; /* the last query status */
	bool enabled, process_event;
	struct pt_event event;
	uint64_t retstack[RETSTACK];
	/* Calls pushed less returns popped: the stack holds the last
	 * min(ret_nr, RETSTACK) return addresses (a push only counts, and 64
	 * bits do not wrap). */
	uint64_t ret_nr;
	uint32_t ret_from[RETSTACK]; /* the call's block (0: unknown), for its succ[1] */
	uint32_t ret_top;
	uint32_t pop_from; /* ret_from of the last return address popped */
	/* The block thought to start at ip (0: none): one of key's image
	 * (expect_call, set_key), as the blocks it is linked from are. */
	uint32_t hint;
	/* The block whose succ[side] is the block at ip (0: none), with side
	 * in its low bit (a block's number has none: struct bb's size). */
	uint32_t link;
};

/* ---- the cache ---- */

struct rv_fast_cache *rv_fast_cache_new(void)
{
	struct rv_fast_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->slots = calloc(INITIAL_SLOTS, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	c->mask = INITIAL_SLOTS - 1;
	c->next_id = 1;
	return c;
}

void rv_fast_cache_free(struct rv_fast_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_snaps; i++)
		free(c->snaps[i].list.sections);
	free(c->snaps);
	free(c->slots);
	free(c->bbs);
	free(c);
}

size_t rv_fast_cache_bytes(const struct rv_fast_cache *c)
{
	size_t n = sizeof(*c) + (c->mask + 1) * sizeof(*c->slots) + c->cap_bbs * sizeof(*c->bbs) +
		   c->cap_snaps * sizeof(*c->snaps);

	for (size_t i = 0; i < c->nr_snaps; i++)
		n += c->snaps[i].list.nr * sizeof(*c->snaps[i].list.sections);
	return n;
}

/* Block n (not 0) of the array bbs. */
static inline struct bb *bb_of(struct bb *bbs, uint32_t n)
{
	return (struct bb *)((char *)bbs + n) - 1;
}

/* Block n's succ[side], by one load at an address that adds bbs and side
 * (known before the load: the trace's bit, not the block, says which side)
 * to n: in the walk's loop, where each block's number comes from the one
 * before, the step from one to the next is that load alone. */
static inline uint32_t succ_of(const struct bb *bbs, uint32_t n, int side)
{
	const char *at = (const char *)bbs + (size_t)side * sizeof(uint32_t);

	return *(const uint32_t *)(at + (n - sizeof(struct bb) + offsetof(struct bb, succ)));
}

/* The number of bbs[i]. */
static inline uint32_t bb_number_of(size_t i)
{
	return (uint32_t)((i + 1) * sizeof(struct bb));
}

static inline size_t slot_of(uint64_t ip, uint32_t image, size_t mask)
{
	uint64_t h = ip ^ ((uint64_t)image << 48);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (size_t)h & mask;
}

static bool grow(struct rv_fast_cache *c)
{
	size_t mask = c->mask * 2 + 1;
	uint32_t *slots = calloc(mask + 1, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i < c->nr_bbs; i++) {
		const struct bb *b = &c->bbs[i];
		size_t j = slot_of(b->ip, b->image, mask);

		while (slots[j])
			j = (j + 1) & mask;
		slots[j] = bb_number_of(i);
	}
	free(c->slots);
	c->slots = slots;
	c->mask = mask;
	return true;
}

/* Room for one more block, in memory aligned as struct bb is (malloc's
 * is not enough); false when memory is short. */
static bool grow_bbs(struct rv_fast_cache *c)
{
	size_t cap = c->cap_bbs ? c->cap_bbs * 2 : 1024;
	struct bb *bbs;

	if (cap > SIZE_MAX / sizeof(*bbs))
		return false;
	bbs = aligned_alloc(_Alignof(struct bb), cap * sizeof(*bbs));
	if (!bbs)
		return false;
	if (c->nr_bbs)
		memcpy(bbs, c->bbs, c->nr_bbs * sizeof(*bbs));
	free(c->bbs);
	c->bbs = bbs;
	c->cap_bbs = cap;
	return true;
}

/* The snapshot of image, taken now if the cache has none that is current;
 * NULL when the image is unknown to the registry or memory is short. */
static const struct snapshot *snapshot_of(struct rv_fast_cache *c, const struct pt_image *image)
{
	uint64_t generation = rv_pt_sections_generation(image);

	if (!generation)
		return NULL;
	for (size_t i = 0; i < c->nr_snaps; i++) {
		if (c->snaps[i].image == image && c->snaps[i].generation == generation)
			return &c->snaps[i];
	}
	if (rv_array_grow(&c->snaps, &c->cap_snaps, c->nr_snaps, sizeof(*c->snaps), 4))
		return NULL;

	struct snapshot *s = &c->snaps[c->nr_snaps];

	memset(s, 0, sizeof(*s));
	if (rv_pt_sections_get(image, &s->list) < 0)
		return NULL;
	s->image = image;
	s->generation = rv_pt_sections_generation(image);
	s->id = c->next_id++;
	c->nr_snaps++;
	return s;
}

static uint8_t iclass_of(uint8_t cls)
{
	switch (cls) {
	case RV_PT_INSN_COND:
		return ptic_cond_jump;
	case RV_PT_INSN_JUMP:
	case RV_PT_INSN_JUMP_IND:
		return ptic_jump;
	case RV_PT_INSN_CALL:
	case RV_PT_INSN_CALL_IND:
		return ptic_call;
	case RV_PT_INSN_RETURN:
		return ptic_return;
	case RV_PT_INSN_SYSCALL:
	case RV_PT_INSN_SOFT_INT:
	case RV_PT_INSN_FAR_CALL:
		return ptic_far_call;
	case RV_PT_INSN_SYSRET:
	case RV_PT_INSN_IRET:
	case RV_PT_INSN_FAR_RETURN:
		return ptic_far_return;
	case RV_PT_INSN_FAR_JUMP:
		return ptic_far_jump;
	default:
		return ptic_other;
	}
}

static uint8_t end_of(uint8_t cls)
{
	switch (cls) {
	case RV_PT_INSN_COND:
		return BB_COND;
	case RV_PT_INSN_JUMP:
		return BB_JUMP;
	case RV_PT_INSN_CALL:
		return BB_CALL;
	case RV_PT_INSN_JUMP_IND:
		return BB_JUMP_IND;
	case RV_PT_INSN_CALL_IND:
		return BB_CALL_IND;
	case RV_PT_INSN_RETURN:
		return BB_RETURN;
	case RV_PT_INSN_OTHER:
		return BB_FALL;
	default:
		return BB_FAR;
	}
}

/* Decodes the basic block at ip of snapshot s into *out; false when it
 * cannot be (no section, unreadable or undecodable bytes, an instruction
 * cut by the section's end): libipt's block decoder then has an error to
 * report, which is its business. */
static bool decode_bb(struct rv_fast_cache *c, const struct snapshot *s, uint64_t ip,
		      struct bb *out)
{
	uint64_t end;
	const struct rv_pt_section *sec = rv_pt_section_at(&s->list, ip, &end);
	uint8_t buf[READ_BYTES];
	size_t have = 0, at = 0;
	uint64_t base = ip, cur = ip;

	if (!sec || !sec->iscache)
		return false;
	memset(out, 0, sizeof(*out));
	out->ip = ip;
	out->image = s->id;
	out->isid = sec->isid;
	for (;;) {
		if (cur >= end) {
			/* the section (or the part of it this image shows)
			 * ends: the block does too, as libipt's */
			out->end = BB_FALL;
			out->iclass = ptic_other;
			return out->ninsn > 0;
		}
		if (have - at < pt_max_insn_size && base + have < end) {
			/* refill from cur */
			uint64_t want = end - cur < READ_BYTES ? end - cur : READ_BYTES;
			int n = pt_iscache_read(sec->iscache, buf, want, sec->isid, cur);

			if (n <= 0)
				return false;
			base = cur;
			have = (size_t)n;
			at = 0;
		}

		struct rv_pt_insn insn;
		unsigned flags = 0;

		if (!rv_pt_insn_decode(buf + at, have - at, ptem_64bit, &insn, &flags))
			return false; /* not an instruction, or cut by the end */
		out->ninsn++;
		out->end_ip = cur;
		out->to[0] = cur + insn.size;
		out->to[1] = out->to[0] + (uint64_t)(int64_t)insn.disp;
		if (flags & RV_PT_INSN_SPECIAL) {
			out->end = BB_SPECIAL;
			out->iclass = ptic_error;
			return true;
		}
		if (insn.cls != RV_PT_INSN_OTHER) {
			out->end = end_of(insn.cls);
			/* (position-independent code reading its address) */
			if (out->end == BB_CALL && out->to[1] == out->to[0])
				out->end = BB_CALL_NEXT;
			out->iclass = iclass_of(insn.cls);
			return true;
		}
		cur += insn.size;
		at += insn.size;
		if (out->ninsn >= MAX_BB_INSNS) {
			out->end = BB_FALL;
			out->iclass = ptic_other;
			return true;
		}
	}
}

/* The number of the basic block at ip in the current image (decoded now
 * if the cache has none); 0 when there is none. Adding a block moves the
 * others: pointers into the cache do not outlive a lookup. */
static uint32_t bb_number(struct rv_fast *f, uint64_t ip)
{
	struct rv_fast_cache *c = f->cache;
	uint32_t id;
	size_t i;

	if (__builtin_expect(!f->key, 0))
		return 0; /* no snapshot, or not 64-bit code */
	id = f->key;
	for (i = slot_of(ip, id, c->mask);; i = (i + 1) & c->mask) {
		uint32_t n = c->slots[i];

		if (!n)
			break;
		if (bb_of(c->bbs, n)->ip == ip && bb_of(c->bbs, n)->image == id)
			return n;
	}

	struct bb fresh;

	/* every number fits in 32 bits */
	if (c->nr_bbs >= UINT32_MAX / sizeof(struct bb) - 1 || !decode_bb(c, f->snap, ip, &fresh))
		return 0;
	if (c->nr_bbs == c->cap_bbs) {
		if (!grow_bbs(c))
			return 0;
		f->bbs = c->bbs;
	}
	if ((c->nr_bbs + 1) * 2 > c->mask) {
		if (!grow(c))
			return 0;
		i = slot_of(ip, id, c->mask);
		while (c->slots[i])
			i = (i + 1) & c->mask;
	}
	c->bbs[c->nr_bbs] = fresh;
	c->slots[i] = bb_number_of(c->nr_bbs++);
	return c->slots[i];
}

static inline const struct bb *bb_at(struct rv_fast *f, uint64_t ip)
{
	uint32_t n = bb_number(f, ip);

	return n ? bb_of(f->bbs, n) : NULL;
}

/* ---- the decoder: libipt's block decoder's state and flow ---- */

/* The block at f->ip is thought to be block `from`'s succ[side]: the next
 * lookup (bb_here) checks, and links it when it is not. Every move of f->ip
 * says what it expects, or that it expects nothing (forget). Returns 0. */
static inline int expect(struct rv_fast *f, uint32_t from, int side)
{
	f->hint = bb_of(f->bbs, from)->succ[side];
	f->link = from | (uint32_t)side;
	return 0;
}

static inline void forget(struct rv_fast *f)
{
	f->hint = f->link = 0;
}

/* expect(f, from, 1) for a call's block from the return stack, pushed
 * maybe in another image or mode than f->key's: then nothing is expected,
 * as the block there is not one of from's image. Returns 0. */
static inline int expect_call(struct rv_fast *f, uint32_t from)
{
	if (bb_of(f->bbs, from)->image != f->key) {
		forget(f);
		return 0;
	}
	return expect(f, from, 1);
}

/* Return addresses near the top of the return stack that expect_return
 * looks at. */
#define RETURN_GUESSES 4u

/* After a return the trace spells out (from: its block), or where tracing
 * resumes (from: 0): where f->ip is one of the last few return addresses
 * on the return stack, the block there is thought to be the succ[1] of
 * that call (libipt pops the stack for compressed returns only, and so
 * does this guess: the stack stays as it is); else block `from`'s succ[0],
 * the return's last target (0: nothing is expected). Returns 0. */
static inline int expect_return(struct rv_fast *f, uint32_t from)
{
	for (uint32_t k = 0; k < RETURN_GUESSES && k < f->ret_nr; k++) {
		uint32_t at = (f->ret_top + RETSTACK - 1 - k) % RETSTACK;

		if (f->retstack[at] == f->ip && f->ret_from[at])
			return expect_call(f, f->ret_from[at]);
	}
	if (from)
		return expect(f, from, 0);
	forget(f);
	return 0;
}

/* bb_here's lookup, where the block expected is not the one at f->ip: out
 * of line, for the registers of the walk's loop. */
static __attribute__((noinline)) uint32_t bb_here_slow(struct rv_fast *f)
{
	struct rv_fast_cache *c = f->cache;
	uint32_t n = bb_number(f, f->ip), from = f->link & ~1u;

	if (from && n && bb_of(c->bbs, from)->image == bb_of(c->bbs, n)->image)
		bb_of(c->bbs, from)->succ[f->link & 1] = n;
	return n;
}

/* The number of the block at f->ip (0: none): the one expected when it is
 * that one, else looked up and linked from where it was expected. */
static inline uint32_t bb_here(struct rv_fast *f)
{
	uint32_t n = f->hint;

	/* (the block expected is of f->key's image: see struct rv_fast) */
	if (!n || bb_of(f->bbs, n)->ip != f->ip)
		n = bb_here_slow(f);
	forget(f);
	return n;
}

/* f->key from f->snap and f->mode: after every change of either. The
 * block expected, of the key's image, is forgotten when the key changes. */
static inline void set_key(struct rv_fast *f)
{
	uint32_t key = f->snap && f->mode == ptem_64bit ? f->snap->id : 0;

	if (key != f->key)
		forget(f);
	f->key = key;
}

static void retstack_push(struct rv_fast *f, uint64_t ip, uint32_t from)
{
	f->ret_from[f->ret_top] = from;
	f->retstack[f->ret_top] = ip;
	f->ret_top = (f->ret_top + 1) % RETSTACK;
	f->ret_nr++;
}

static bool retstack_pop(struct rv_fast *f, uint64_t *ip)
{
	if (!f->ret_nr)
		return false;
	if (f->ret_nr > RETSTACK)
		f->ret_nr = RETSTACK;
	f->ret_top = (f->ret_top + RETSTACK - 1) % RETSTACK;
	f->ret_nr--;
	*ip = f->retstack[f->ret_top];
	f->pop_from = f->ret_from[f->ret_top];
	return true;
}

struct rv_fast *rv_fast_alloc(const struct pt_config *config, struct rv_fast_cache *cache)
{
	struct rv_fast *f;
	struct pt_config qconfig;

	if (!config->flags.variant.block.end_on_call || !config->flags.variant.block.end_on_jump)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->config = *config;
	f->cache = cache;
	f->bbs = cache->bbs;
	f->ticks = config->flags.variant.block.enable_tick_events;
	f->own = rv_pq_init(&f->pq, config, cache->check_whole);
	f->walk = !f->own ? WALK_LIBIPT : f->ticks ? WALK_OWN_TIMED : WALK_OWN_UNTIMED;
	if (f->own)
		return f;
	/* libipt 2.0's query decoder has no flags of its own. */
	qconfig = *config;
	memset(&qconfig.flags, 0, sizeof(qconfig.flags));
	f->qry = pt_qry_alloc_decoder(&qconfig);
	if (!f->qry) {
		free(f);
		return NULL;
	}
	return f;
}

void rv_fast_free(struct rv_fast *f)
{
	if (!f)
		return;
	if (!f->own)
		pt_qry_free_decoder(f->qry);
	free(f);
}

int rv_fast_get_offset(const struct rv_fast *f, uint64_t *offset)
{
	return f->own ? rv_pq_get_offset(&f->pq, offset) : pt_qry_get_offset(f->qry, offset);
}

int rv_fast_get_sync_offset(const struct rv_fast *f, uint64_t *offset)
{
	return f->own ? rv_pq_get_sync_offset(&f->pq, offset)
		      : pt_qry_get_sync_offset(f->qry, offset);
}

int rv_fast_time(struct rv_fast *f, uint64_t *time, uint32_t *lost_mtc, uint32_t *lost_cyc)
{
	return f->own ? rv_pq_time(&f->pq, time, lost_mtc, lost_cyc)
		      : pt_qry_time(f->qry, time, lost_mtc, lost_cyc);
}

int rv_fast_set_image(struct rv_fast *f, struct pt_image *image)
{
	/* No image, or one the registry does not know: every block lookup
	 * fails, and the chunk goes to libipt's decoder at the first. */
	f->snap = image ? snapshot_of(f->cache, image) : NULL;
	set_key(f);
	forget(f);
	return 0;
}

/* An answer of rearview's packet layer: one it could not give makes this
 * thread check its later chunks whole first. */
static inline int own_answer(struct rv_fast *f, int status)
{
	if (status == RV_PQ_UNMODELLED)
		f->cache->check_whole = true;
	return status;
}

static int status_flags(const struct rv_fast *f, int flags)
{
	if (!f->enabled)
		flags |= pts_ip_suppressed;
	if ((f->status & pts_eos) && !f->process_event)
		flags |= pts_eos;
	return flags;
}

/* memset(ev, 0, sizeof(*ev)) in 16-byte stores: the compiler makes that
 * memset a string store (rep stos), whose start-up took 2% of the time on
 * the softpt captures, where most TIPs make a tick. */
static inline void zero_event(struct pt_event *ev)
{
#ifdef __SSE2__
	_Static_assert(sizeof(*ev) % 16 == 0, "an event is whole 16-byte stores");
	for (size_t i = 0; i < sizeof(*ev); i += 16)
		_mm_storeu_si128((__m128i *)((char *)ev + i), _mm_setzero_si128());
#else
	memset(ev, 0, sizeof(*ev));
#endif
}

/* The tick event at ip, in process: the time moved since the last event
 * to tsc (has_tsc: the trace has a time), with lost_mtc and lost_cyc. */
static inline __attribute__((always_inline)) void make_tick(struct rv_fast *f, uint64_t ip,
							    bool has_tsc, uint64_t tsc,
							    uint32_t lost_mtc, uint32_t lost_cyc)
{
	/* a tick's fields but these are 0 (ticks come one after the other,
	 * where the trace has time) */
	if (f->event.type != ptev_tick)
		zero_event(&f->event);
	f->event.type = ptev_tick;
	f->event.variant.tick.ip = ip;
	f->event.has_tsc = has_tsc;
	f->event.tsc = tsc;
	f->event.lost_mtc = lost_mtc;
	f->event.lost_cyc = lost_cyc;
	f->process_event = true;
}

/* libipt's pt_blk_tick: after a TNT or TIP, a tick event when the time
 * moved since the last event. */
static inline int tick(struct rv_fast *f, uint64_t ip)
{
	uint64_t tsc = 0;
	uint32_t lost_mtc = 0, lost_cyc = 0;
	int r;

	if (!f->enabled)
		return RV_FAST_HANDOFF;
	if (f->process_event)
		return 0;
	if (f->own) {
		r = rv_pq_time(&f->pq, &tsc, &lost_mtc, &lost_cyc);
	} else {
		/* rv_fast_time's libipt side through variables of its own:
		 * the pointers libipt takes would keep tsc and the counts in
		 * memory on the side above too */
		uint64_t t = 0;
		uint32_t mtc = 0, cyc = 0;

		r = pt_qry_time(f->qry, &t, &mtc, &cyc);
		tsc = t;
		lost_mtc = mtc;
		lost_cyc = cyc;
	}
	if (r < 0 && r != -pte_no_time)
		return RV_FAST_HANDOFF;
	if (tsc == f->event.tsc)
		return 0;
	make_tick(f, ip, r != -pte_no_time, tsc, lost_mtc, lost_cyc);
	return 1;
}

/* Any error but the end of the trace is libipt's to report. */
static inline int failed(int status)
{
	return status == -pte_eos ? status : RV_FAST_HANDOFF;
}

/* A query's status, after the tick event it may make (libipt's
 * pt_blk_cond_branch and pt_blk_indirect_branch). */
static inline int after_query(struct rv_fast *f, int status, uint64_t ip)
{
	if (status >= 0 && f->ticks) {
		int r = tick(f, ip);

		if (r < 0)
			return r;
	}
	return status;
}

static int query_cond(struct rv_fast *f, int *taken, uint64_t ip)
{
	int status = f->own ? own_answer(f, rv_pq_cond_branch(&f->pq, taken))
			    : pt_qry_cond_branch(f->qry, taken);

	return after_query(f, status, ip);
}

static int query_indirect(struct rv_fast *f, uint64_t *to, uint64_t ip)
{
	int status = f->own ? own_answer(f, rv_pq_indirect_branch(&f->pq, to))
			    : pt_qry_indirect_branch(f->qry, to);

	return after_query(f, status, ip);
}

/* proceed_with_trace for a block whose transfer takes its target from the
 * trace (an indirect jump or call, a far transfer, a return that is not
 * compressed), inline in the walk's loop. */
static inline int proceed_indirect(struct rv_fast *f, const struct bb *b)
{
	int status = query_indirect(f, &f->ip, b->end_ip);

	if (status < 0)
		return failed(status);
	f->status = status;
	/* libipt's two flows disagree on a suppressed IP here (one fails,
	 * one goes on): not modelled */
	if (status & pts_ip_suppressed)
		return RV_FAST_HANDOFF;
	return 0;
}

/* proceed_indirect for a return the trace's TIP spells out, in the walk's
 * loop on rearview's packet layer, where tracing is on and no event is in
 * process (ticks: f->ticks). The tick the TIP makes, when no event waits
 * behind it, is taken here (into *took) as rv_fast_next would take it
 * after the block, and the answer is then pts_event_pending (rv_fast_next's
 * for that block): f->event keeps of it what the next tick reads, its type
 * and time, as no other field is read before an event is made again. */
static inline __attribute__((always_inline)) int
proceed_tip_return(struct rv_fast *f, const struct bb *b, bool ticks, struct rv_fast_tick *took)
{
	const struct rv_pq *q = &f->pq;
	int status = rv_pq_indirect_branch(&f->pq, &f->ip);

	/* (own_answer's check, among the errors) */
	if (status < 0)
		return failed(own_answer(f, status));
	f->status = status;
	if (status & pts_ip_suppressed)
		return RV_FAST_HANDOFF;
	if (!ticks || q->last.tsc == f->event.tsc)
		return 0;
	if (status & pts_event_pending) {
		/* the tick waits in process, as tick() leaves it */
		make_tick(f, b->end_ip, q->last.have_tsc, q->last.tsc, q->last.lost_mtc,
			  q->last.lost_cyc);
		return 0;
	}
	if (f->event.type != ptev_tick) {
		zero_event(&f->event);
		f->event.type = ptev_tick;
	}
	f->event.tsc = q->last.tsc;
	took->taken = true;
	took->has_tsc = q->last.have_tsc;
	took->tsc = q->last.tsc;
	took->status = status & pts_eos;
	return pts_event_pending;
}

/* The transfer that ends basic block b, which needs the trace (libipt's
 * pt_blk_next_ip and the cached flow's queries): sets f->ip and f->status.
 * The near calls' return addresses are pushed by the caller. Returns 0,
 * or a negative status. */
static int proceed_with_trace(struct rv_fast *f, const struct bb *b)
{
	int status, taken;

	switch (b->end) {
	case BB_COND:
		status = query_cond(f, &taken, b->end_ip);
		if (status < 0)
			return failed(status);
		f->ip = b->to[taken != 0];
		f->status = status;
		return 0;
	case BB_RETURN:
		/* query_cond's refusal, without asking (walk_blocks makes
		 * this check too, before it calls here) */
		if (f->own && rv_pq_tip_next(&f->pq))
			break;
		status = query_cond(f, &taken, b->end_ip);
		if (status >= 0) {
			f->status = status;
			if (!taken || !retstack_pop(f, &f->ip))
				return RV_FAST_HANDOFF;
			return 0;
		}
		if (status != -pte_bad_query)
			return failed(status);
		break;
	case BB_JUMP_IND:
	case BB_CALL_IND:
	case BB_FAR:
		break;
	default:
		return RV_FAST_HANDOFF;
	}
	return proceed_indirect(f, b);
}

/* Fills block with basic block b (the block is empty: one basic block per
 * block). */
static inline void take_bb(struct pt_block *block, const struct bb *b)
{
	block->isid = b->isid;
	block->ninsn = (uint16_t)b->ninsn;
	block->end_ip = b->end_ip;
	block->iclass = (enum pt_insn_class)b->iclass;
}

/* Walks basic block n whole and through its transfer when that needs no
 * trace. Returns 1 when it did (f->ip is where the transfer went), 0 when
 * it ends without a transfer (f->ip is the next instruction), and
 * -pte_bad_query when its transfer needs the trace (f->ip is unchanged);
 * RV_FAST_HANDOFF for an instruction not modelled. */
static int walk_bb(struct rv_fast *f, uint32_t n)
{
	const struct bb *b = bb_of(f->bbs, n);

	switch (b->end) {
	case BB_FALL:
		f->ip = b->to[0];
		return expect(f, n, 0);
	case BB_CALL:
		retstack_push(f, b->to[0], n);
		/* fall through */
	case BB_CALL_NEXT:
	case BB_JUMP:
		f->ip = b->to[1];
		expect(f, n, 0);
		return 1;
	case BB_CALL_IND:
		retstack_push(f, b->to[0], n);
		return -pte_bad_query;
	case BB_SPECIAL:
		return RV_FAST_HANDOFF;
	default:
		return -pte_bad_query;
	}
}

/* Whether target is one of b's instructions after its first: then *n is
 * the count of those before it and *prev the address of the last of them. */
static bool inside_bb(const struct rv_fast *f, const struct bb *b, uint64_t target, uint32_t *n,
		      uint64_t *prev)
{
	uint64_t ip = b->ip, end;
	const struct rv_pt_section *sec;

	if (target <= b->ip || target > b->end_ip)
		return false;
	sec = rv_pt_section_at(&f->snap->list, ip, &end);
	if (!sec)
		return false;
	for (uint32_t i = 0; i < b->ninsn && ip < target; i++) {
		uint8_t bytes[pt_max_insn_size];
		struct rv_pt_insn insn;
		unsigned flags;
		int got = pt_iscache_read(sec->iscache, bytes, sizeof(bytes), sec->isid, ip);

		if (got <= 0 || !rv_pt_insn_decode(bytes, (size_t)got, f->mode, &insn, &flags))
			return false;
		*prev = ip;
		ip += insn.size;
		if (ip == target) {
			*n = i + 1;
			return true;
		}
	}
	return false;
}

/* libipt's pt_blk_proceed_to_ip: walks the block towards target. Returns 1
 * when f->ip reached it, 0 when the block ended first (a direct call or
 * jump, the end of a section), -pte_bad_query when a transfer that needs
 * the trace came first (*last is the number of its basic block),
 * RV_FAST_HANDOFF. */
static int proceed_to_ip(struct rv_fast *f, struct pt_block *block, uint64_t target, uint32_t *last)
{
	const struct bb *b;
	uint32_t n, before;
	uint64_t prev;
	int r;

	if (f->ip == target)
		return 1;
	n = bb_here(f);
	if (!n)
		return RV_FAST_HANDOFF;
	b = bb_of(f->bbs, n);
	if (inside_bb(f, b, target, &before, &prev)) {
		/* the block holds the instructions before target */
		block->isid = b->isid;
		block->ninsn = (uint16_t)before;
		block->end_ip = prev;
		block->iclass = ptic_other;
		f->ip = target;
		return 1;
	}
	take_bb(block, b);
	*last = n;
	r = walk_bb(f, n);
	if (r == 1)
		return f->ip == target ? 1 : 0;
	return r;
}

/* libipt's pt_blk_fetch_event, handing back the events not modelled. */
static int fetch_event_slow(struct rv_fast *f)
{
	int status;

	status = f->own ? own_answer(f, rv_pq_event(&f->pq, &f->event))
			: pt_qry_event(f->qry, &f->event, sizeof(f->event));
	if (status < 0)
		return failed(status);
	f->process_event = true;
	f->status = status;
	switch (f->event.type) {
	case ptev_enabled:
	case ptev_disabled:
	case ptev_async_disabled:
	case ptev_async_branch:
	case ptev_exec_mode:
	case ptev_async_paging:
	case ptev_async_vmcs:
	case ptev_overflow:
	case ptev_stop:
	case ptev_exstop:
	case ptev_mwait:
	case ptev_pwre:
	case ptev_pwrx:
	case ptev_cbr:
	case ptev_mnt:
		return 1;
	case ptev_tsx:
		/* the PSB+'s "not in a transaction" only */
		if (f->event.status_update && !f->event.variant.tsx.speculative &&
		    !f->event.variant.tsx.aborted)
			return 1;
		return RV_FAST_HANDOFF;
	default:
		return RV_FAST_HANDOFF;
	}
}

/* fetch_event_slow, inline where no event is in process or pending: most
 * blocks. */
static inline int fetch_event(struct rv_fast *f)
{
	if (f->process_event)
		return 1;
	if (!(f->status & pts_event_pending))
		return 0;
	return fetch_event_slow(f);
}

/* Erratum SKD022 turns an asynchronous disable on VMLAUNCH or VMRESUME
 * into a synchronous one: not modelled, so such a place is handed back. */
static bool skd022_may_apply(struct rv_fast *f, uint64_t at)
{
	const struct bb *b;

	if (!f->config.errata.skd022)
		return false;
	b = bb_at(f, at);
	return !b || (b->end == BB_SPECIAL && b->ninsn == 1);
}

/* libipt's pt_blk_proceed_event: to where the event in process binds. */
static int proceed_event(struct rv_fast *f, struct pt_block *block)
{
	struct pt_event *ev = &f->event;
	uint32_t last = 0;
	int status;

	switch (ev->type) {
	case ptev_disabled:
		if (ev->ip_suppressed) {
			if (f->config.addr_filter.config.addr_cfg && f->config.errata.skl014)
				return RV_FAST_HANDOFF;
			/* to the next transfer that needs the trace (one that
			 * changes CR3 is handed back, as BB_SPECIAL) */
			last = bb_here(f);
			if (!last)
				return RV_FAST_HANDOFF;
			take_bb(block, bb_of(f->bbs, last));
			status = walk_bb(f, last);
			if (status == 1)
				return 0;
		} else {
			status = proceed_to_ip(f, block, ev->variant.disabled.ip, &last);
		}
		if (status <= 0) {
			if (status != -pte_bad_query)
				return status;

			/* libipt's pt_blk_set_disable_resume_ip */
			const struct bb *b = bb_of(f->bbs, last);

			if (b->end == BB_CALL || b->end == BB_CALL_NEXT || b->end == BB_CALL_IND ||
			    b->iclass == ptic_far_call) {
				f->ip = b->to[0];
				expect(f, last, 1);
			} else {
				f->ip = 0;
				forget(f);
			}
		}
		break;
	case ptev_async_disabled:
		status = proceed_to_ip(f, block, ev->variant.async_disabled.at, &last);
		if (status <= 0)
			return status == -pte_bad_query ? RV_FAST_HANDOFF : status;
		if (skd022_may_apply(f, ev->variant.async_disabled.at))
			return RV_FAST_HANDOFF;
		break;
	case ptev_async_branch:
		status = proceed_to_ip(f, block, ev->variant.async_branch.from, &last);
		if (status <= 0)
			return status == -pte_bad_query ? RV_FAST_HANDOFF : status;
		break;
	case ptev_exec_mode:
	case ptev_async_paging:
	case ptev_async_vmcs: {
		uint64_t ip = ev->type == ptev_exec_mode      ? ev->variant.exec_mode.ip
			      : ev->type == ptev_async_paging ? ev->variant.async_paging.ip
							      : ev->variant.async_vmcs.ip;

		if (ev->ip_suppressed)
			break;
		/* libipt's pt_blk_proceed_to_ip_with_trace */
		status = proceed_to_ip(f, block, ip, &last);
		if (status == -pte_bad_query) {
			status = proceed_with_trace(f, bb_of(f->bbs, last));
			forget(f);
			if (status < 0)
				return status;
		} else if (status < 0) {
			return status;
		}
		if (f->ip != ip)
			return 0;
		break;
	}
	case ptev_tsx:
		if (ev->ip_suppressed)
			break;
		status = proceed_to_ip(f, block, ev->variant.tsx.ip, &last);
		if (status <= 0)
			return status == -pte_bad_query ? RV_FAST_HANDOFF : status;
		break;
	case ptev_exstop:
	case ptev_mwait: {
		uint64_t ip =
			ev->type == ptev_exstop ? ev->variant.exstop.ip : ev->variant.mwait.ip;

		if (!f->enabled || ev->ip_suppressed)
			break;
		status = proceed_to_ip(f, block, ip, &last);
		if (status <= 0)
			return status == -pte_bad_query ? RV_FAST_HANDOFF : status;
		break;
	}
	default:
		/* enabled, stop, pwre, pwrx, tick, cbr, mnt: nothing to walk */
		break;
	}
	return status_flags(f, pts_event_pending);
}

/* libipt's pt_blk_proceed_trailing_event (no instruction is ever
 * postponed here: the events that postpone one are handed back). */
static int proceed_trailing_event_slow(struct rv_fast *f)
{
	const struct pt_event *ev;
	int status = fetch_event(f);

	if (status <= 0)
		return status < 0 ? status : status_flags(f, 0);
	ev = &f->event;
	switch (ev->type) {
	case ptev_disabled:
		break;
	case ptev_async_disabled:
		if (f->ip != ev->variant.async_disabled.at)
			break;
		if (skd022_may_apply(f, ev->variant.async_disabled.at))
			return RV_FAST_HANDOFF;
		return status_flags(f, pts_event_pending);
	case ptev_async_branch:
		if (f->ip != ev->variant.async_branch.from)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_async_paging:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_paging.ip)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_async_vmcs:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_vmcs.ip)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_exec_mode:
		if (!ev->ip_suppressed && f->ip != ev->variant.exec_mode.ip)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_tsx:
		if (!ev->ip_suppressed && f->ip != ev->variant.tsx.ip)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_exstop:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.exstop.ip)
			break;
		return status_flags(f, pts_event_pending);
	case ptev_mwait:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.mwait.ip)
			break;
		return status_flags(f, pts_event_pending);
	default:
		/* enabled, overflow, stop, pwre, pwrx, tick, cbr, mnt */
		return status_flags(f, pts_event_pending);
	}
	return status_flags(f, 0);
}

/* proceed_trailing_event_slow, inline where no event is in process or
 * pending (fetch_event's 0), and for a tick in process (its fetch_event's
 * 1 and its switch's default: nothing to walk to), which a timed trace
 * has after most TIPs. */
static inline int proceed_trailing_event(struct rv_fast *f)
{
	if (!f->process_event) {
		if (!(f->status & pts_event_pending))
			return status_flags(f, 0);
	} else if (f->event.type == ptev_tick) {
		return status_flags(f, pts_event_pending);
	}
	return proceed_trailing_event_slow(f);
}

int rv_fast_sync_set(struct rv_fast *f, uint64_t offset)
{
	int status;

	f->mode = ptem_unknown;
	set_key(f);
	f->ip = 0;
	f->status = 0;
	f->enabled = false;
	f->process_event = false;
	memset(&f->event, 0, sizeof(f->event));
	f->ret_top = 0;
	f->ret_nr = 0;
	forget(f);
	status = f->own ? own_answer(f, rv_pq_sync_set(&f->pq, &f->ip, offset))
			: pt_qry_sync_set(f->qry, &f->ip, offset);
	if (status < 0)
		return failed(status);
	f->status = status;
	f->enabled = !(status & pts_ip_suppressed);
	return proceed_trailing_event(f);
}

/* Whether the walker drops a taken jump from `from` to `to` when it does
 * not drop them all (drop->all, which the walk's loop has asked already):
 * 1, counting it, or -1, not. */
static inline int droppable(const struct rv_fast_drop *drop, uint64_t from, uint64_t to)
{
	if (drop->span && drop->time >= drop->from && drop->time < drop->until &&
	    from - drop->start < drop->end - drop->start &&
	    to - drop->start < drop->end - drop->start)
		return 1;
	return -1;
}

/* proceed_no_event_walk's loop, for its three settings: own_bits, TNT bits
 * taken from rearview's packet layer without a call; own_refill, its
 * refills without the tick; drop_all, drop->all. Inline in each caller, so
 * that a constant setting costs nothing in the loop. */
static inline __attribute__((always_inline)) int
walk_blocks(struct rv_fast *f, const struct rv_fast_drop *drop, uint64_t *dropped,
	    struct rv_fast_tick *took, uint32_t *last, uint32_t *total, bool own_bits,
	    bool own_refill, bool drop_all)
{
	struct rv_pq *q = &f->pq;
	uint32_t n = bb_here(f), insns = 0;
	/* The walk's state in registers, written back where the loop calls
	 * out and where it ends: the address (f->ip), the last status
	 * (f->status), the packet layer's TNT bits (q->tnt, q->tnt_index; not
	 * used without own_bits), and the blocks (f->bbs, which a lookup that
	 * adds a block moves). */
	struct bb *bbs = f->bbs;
	uint64_t ip = f->ip, tnt = q->tnt, tnt_index = q->tnt_index;
	int st = f->status, status, taken;

	const struct bb *b;

	*last = n;
	if (__builtin_expect(!n, 0))
		return RV_FAST_HANDOFF;
	b = bb_of(bbs, n);
	for (;;) {
		int drops = 0, side = 0;
		bool indirect = false; /* the transfer's target is the trace's */
		uint32_t next;

		insns += b->ninsn;
		if (__builtin_expect(b->end == BB_COND, 1)) {
			/* most blocks: a bit of the trace says which way */
			if (own_bits && tnt_index > 1) {
				side = (tnt & tnt_index) != 0;
				tnt_index >>= 1;
				st = 0;
				ip = b->to[side];
			} else if (own_refill && tnt_index == 1 && rv_pq_next_plain(q)) {
				/* the last bit, where the refill's answer is the
				 * bit and status 0 (and no tick: no ticks) */
				side = (int)(tnt & 1);
				tnt_index = 0;
				st = 0;
				ip = b->to[side];
			} else {
				/* query_cond on rearview's packet layer (own_bits:
				 * no bit in hand), with the tick after_query makes
				 * when there are ticks (!own_refill), where tracing
				 * is on and no event is in process */
				q->tnt_index = tnt_index;
				f->ip = ip;
				if (own_bits) {
					status = rv_pq_cond_branch_refill(q, &taken);
					if (!own_refill && status >= 0 &&
					    q->last.tsc != f->event.tsc)
						make_tick(f, b->end_ip, q->last.have_tsc,
							  q->last.tsc, q->last.lost_mtc,
							  q->last.lost_cyc);
				} else {
					status = query_cond(f, &taken, b->end_ip);
				}
				tnt = q->tnt;
				tnt_index = q->tnt_index;
				if (status < 0) {
					/* (own_answer's check, among the errors) */
					status = failed(own_bits ? own_answer(f, status) : status);
					goto out_status;
				}
				side = taken != 0;
				st = status;
				ip = b->to[side];
				if (f->process_event || (status & (pts_event_pending | pts_eos))) {
					f->ip = ip;
					status = expect(f, n, side);
					goto out_status;
				}
			}
			if (!drop_all && side) {
				drops = droppable(drop, b->end_ip, ip);
				if (drops < 0) {
					f->ip = ip;
					status = expect(f, n, 1);
					goto out_status;
				}
				*dropped += (uint64_t)drops;
			}
		} else {
			/* the calls below read and write the state in f */
			q->tnt_index = tnt_index;
			f->status = st;
			switch (b->end) {
			case BB_FALL:
				ip = b->to[0];
				break;
			case BB_JUMP:
				ip = b->to[1];
				drops = drop_all ? 0 : droppable(drop, b->end_ip, ip);
				if (drops < 0) {
					f->ip = ip;
					status = expect(f, n, 0);
					goto out_status;
				}
				*dropped += (uint64_t)drops;
				break;
			case BB_JUMP_IND:
				f->ip = ip;
				status = proceed_indirect(f, b);
				ip = f->ip;
				st = f->status;
				tnt = q->tnt;
				tnt_index = q->tnt_index;
				if (status < 0)
					goto out_status;
				if (f->process_event || (st & (pts_event_pending | pts_eos))) {
					status = expect(f, n, 0);
					goto out_status;
				}
				drops = drop_all ? 0 : droppable(drop, b->end_ip, ip);
				if (drops < 0) {
					status = expect(f, n, 0);
					goto out_status;
				}
				*dropped += (uint64_t)drops;
				indirect = true;
				break;
			case BB_CALL:
				retstack_push(f, b->to[0], n);
				/* fall through */
			case BB_CALL_NEXT:
				f->ip = b->to[1];
				status = expect(f, n, 0);
				goto out_status_f;
			case BB_CALL_IND:
				retstack_push(f, b->to[0], n);
				f->ip = ip;
				status = proceed_indirect(f, b);
				if (status >= 0)
					status = expect(f, n, 0);
				goto out_status_f;
			case BB_SPECIAL:
				status = RV_FAST_HANDOFF;
				goto out_status;
			case BB_RETURN:
				f->ip = ip;
				if (own_bits && rv_pq_tip_next(q)) {
					/* not compressed (most returns): the TIP
					 * says where, with the tick it makes (with
					 * own_bits, f->ticks is !own_refill) */
					status = proceed_tip_return(f, b, !own_refill, took);
					if (status >= 0)
						expect_return(f, n);
					goto out_status_f;
				}
				f->pop_from = 0;
				/* proceed_with_trace's first check, here: the
				 * returns that are not compressed (most) go to
				 * proceed_indirect without its call */
				status = f->own && rv_pq_tip_next(q) ? proceed_indirect(f, b)
								     : proceed_with_trace(f, b);
				if (status < 0)
					goto out_status_f;
				/* a compressed return goes where its call said */
				status = f->pop_from ? expect_call(f, f->pop_from)
						     : expect_return(f, n);
				goto out_status_f;
			default: /* BB_FAR */
				f->ip = ip;
				status = proceed_with_trace(f, b);
				if (status >= 0)
					status = expect(f, n, 0);
				goto out_status_f;
			}
		}
		/* On to the next block, unless the trace has ended (the walker
		 * looks for where the next chunk begins then). A transfer the
		 * block ends with is the walker's to drop and count; one it
		 * runs through is counted here: straight into *dropped as it
		 * is dropped (drops; a count of the loop's own would be one
		 * more variable on the stack), and taken back where the block
		 * ends with it after all. */
		if (st & pts_eos) {
			*dropped -= (uint64_t)drops;
			f->ip = ip;
			status = expect(f, n, side);
			goto out_status;
		}
		/* The next block through block n's link on this side, else
		 * looked up and linked: a direct transfer's link is always the
		 * block at its target (only a block's lookup and expect() link
		 * them, both from there), an indirect one's the last target's */
		next = succ_of(bbs, n, side);
		if (__builtin_expect(!next || (indirect && bb_of(bbs, next)->ip != ip), 0)) {
			f->ip = ip;
			next = bb_number(f, ip);
			bbs = f->bbs;
			if (next)
				bb_of(bbs, n)->succ[side] = next;
		}
		if (!next || insns + bb_of(bbs, next)->ninsn > UINT16_MAX - 1) {
			*dropped -= (uint64_t)drops;
			f->hint = next;
			status = 0;
			goto out_status;
		}
		n = next;
		b = bb_of(bbs, n);
	}
out_status:
	/* the state the loop kept in registers */
	f->ip = ip;
	f->status = st;
	q->tnt_index = tnt_index;
out_status_f:
	/* (a block that ends with a call or a return: the state is in f) */
	*last = n;
	*total = insns;
	return status;
}

/* libipt's no-event flow, one basic block and its transfer at a time; and
 * on through the next ones while their transfers give the walker nothing:
 * a conditional branch not taken, a jump the walker drops (see
 * struct rv_fast_drop), the end of a section. The block stops before a
 * call, a return, a far transfer, a jump the walker keeps, at a tick or
 * an event, and at the end of the trace: where libipt's decoder would give
 * the walker something to do. Returns 0, a negative status, or
 * pts_event_pending when the block ends with a return whose tick was taken
 * into *took (proceed_tip_return).
 *
 * The block is filled by the caller, from the last basic block walked
 * (*last, 0: none) and the instructions up to its end (*total), whatever
 * the status: the loop keeps them in registers, not in the block. */
static inline int proceed_no_event_walk(struct rv_fast *f, const struct rv_fast_drop *drop,
					uint64_t *dropped, struct rv_fast_tick *took,
					uint32_t *last, uint32_t *total)
{
	const struct rv_pq *q = &f->pq;
	/* A TNT bit rearview's packet layer holds answers the query with
	 * status 0 (rv_pq_cond_branch) and leaves its time (rv_pq_time, the
	 * time of the last query that read a packet) where it was. The
	 * query's tick (after_query) compares that time with the last
	 * event's: no tick when they are equal, and the bit changes neither.
	 * They are equal after every query of this loop that goes on (tick
	 * made none, and an event stops the loop). As the loop begins they
	 * are equal too on every trace tried (the only refill with bits in
	 * hand is query_cond's, with its tick; libipt reports an event only
	 * once the bits are used; a TNT before the TIP an event binds to is
	 * a decode error; the made-up trace of pt_decoder's
	 * made_time_after_an_event_in_process and the softpt captures), but
	 * nothing in the contract says so: the bits are taken here without
	 * a call while bits are left when there are no ticks or the times
	 * are equal as the loop begins, a compare that costs nothing and
	 * makes the argument local. Refills go without the tick only with
	 * no ticks. */
	bool own_bits = (f->walk == WALK_OWN_TIMED && q->last.tsc == f->event.tsc) ||
			f->walk == WALK_OWN_UNTIMED;
	bool own_refill = f->walk == WALK_OWN_UNTIMED;

	/* the common settings, each walked whole or with the jumps inside
	 * functions dropped: a trace without time, and one with time whose
	 * bits are taken without a call (most calls on a timed trace) */
	if (own_bits && own_refill)
		return drop->all
			       ? walk_blocks(f, drop, dropped, took, last, total, true, true, true)
			       : walk_blocks(f, drop, dropped, took, last, total, true, true,
					     false);
	if (own_bits)
		return drop->all
			       ? walk_blocks(f, drop, dropped, took, last, total, true, false, true)
			       : walk_blocks(f, drop, dropped, took, last, total, true, false,
					     false);
	/* (own_refill goes with own_bits) */
	return walk_blocks(f, drop, dropped, took, last, total, false, false, drop->all);
}

static int proceed_no_event(struct rv_fast *f, struct pt_block *block,
			    const struct rv_fast_drop *drop, uint64_t *dropped,
			    struct rv_fast_tick *took)
{
	uint32_t last = 0, total = 0;
	int status = proceed_no_event_walk(f, drop, dropped, took, &last, &total);

	if (last) {
		const struct bb *b = bb_of(f->bbs, last);

		block->isid = b->isid;
		block->end_ip = b->end_ip;
		block->iclass = (enum pt_insn_class)b->iclass;
		block->ninsn = (uint16_t)total;
	}
	return status;
}

/* Whether the event in process is a tick (rv_fast_tick_event's). */
static inline bool tick_in_process(const struct rv_fast *f)
{
	return f->process_event && f->event.type == ptev_tick && !f->event.status_update;
}

int rv_fast_next(struct rv_fast *f, struct pt_block *block, const struct rv_fast_drop *drop,
		 uint64_t *dropped, struct rv_fast_tick *tick)
{
	int status;

	memset(block, 0, sizeof(*block));
	block->ip = f->ip;
	block->mode = f->mode;
	status = fetch_event(f);
	if (status) {
		if (status < 0)
			return status;
		return proceed_event(f, block);
	}
	if (!f->enabled)
		return (f->status & pts_eos) ? -pte_eos : RV_FAST_HANDOFF;
	status = proceed_no_event(f, block, drop, dropped, tick);
	/* an error, or the tick a return took (proceed_tip_return) */
	if (status)
		return status;
	/* proceed_trailing_event's fast cases, where tracing is on (the walk
	 * leaves it so): status_flags adds no pts_ip_suppressed, and
	 * pts_eos only with no event in process */
	if (!f->process_event) {
		if (!(f->status & pts_event_pending))
			return f->status & pts_eos;
	} else if (f->event.type == ptev_tick) {
		if (!f->event.status_update && !(f->status & pts_event_pending)) {
			/* then rv_fast_tick_event's, whose
			 * proceed_trailing_event has nothing to fetch: the
			 * walker's call and loop for the tick saved (a TIP's
			 * return, most often) */
			f->process_event = false;
			tick->taken = true;
			tick->has_tsc = f->event.has_tsc;
			tick->tsc = f->event.tsc;
			tick->status = f->status & pts_eos;
		}
		return pts_event_pending;
	}
	return proceed_trailing_event_slow(f);
}

int rv_fast_tick_event(struct rv_fast *f, uint64_t *tsc, bool *has_tsc)
{
	const struct pt_event *ev = &f->event;

	if (!tick_in_process(f))
		return RV_FAST_NOT_TICK;
	/* rv_fast_event's path for a tick: nothing to check or to move */
	f->process_event = false;
	*tsc = ev->tsc;
	*has_tsc = ev->has_tsc;
	return proceed_trailing_event(f);
}

int rv_fast_event(struct rv_fast *f, struct pt_event *event)
{
	struct pt_event *ev = &f->event;

	if (!f->process_event)
		return RV_FAST_HANDOFF;
	switch (ev->type) {
	case ptev_enabled:
		if (ev->status_update || ev->ip_suppressed || f->enabled)
			return RV_FAST_HANDOFF;
		if (ev->variant.enabled.ip == f->ip)
			ev->variant.enabled.resumed = 1;
		f->ip = ev->variant.enabled.ip;
		f->enabled = true;
		expect_return(f, 0);
		break;
	case ptev_async_disabled:
		if (f->ip != ev->variant.async_disabled.at)
			return RV_FAST_HANDOFF;
		/* fall through */
	case ptev_disabled:
		if (ev->status_update || !f->enabled)
			return RV_FAST_HANDOFF;
		f->enabled = false;
		break;
	case ptev_async_branch:
		if (f->ip != ev->variant.async_branch.from || ev->status_update || !f->enabled)
			return RV_FAST_HANDOFF;
		f->ip = ev->variant.async_branch.to;
		forget(f);
		break;
	case ptev_async_paging:
		/* the address space changes; the images here have none */
		if (!ev->ip_suppressed && f->ip != ev->variant.async_paging.ip)
			return RV_FAST_HANDOFF;
		break;
	case ptev_async_vmcs:
		if (!ev->ip_suppressed && f->ip != ev->variant.async_vmcs.ip)
			return RV_FAST_HANDOFF;
		break;
	case ptev_exec_mode:
		if (!ev->ip_suppressed && f->ip != ev->variant.exec_mode.ip)
			return RV_FAST_HANDOFF;
		if (ev->status_update && f->enabled && f->mode != ptem_unknown &&
		    f->mode != ev->variant.exec_mode.mode)
			return RV_FAST_HANDOFF;
		f->mode = ev->variant.exec_mode.mode;
		set_key(f);
		break;
	case ptev_tsx:
		if (!ev->ip_suppressed && f->ip != ev->variant.tsx.ip)
			return RV_FAST_HANDOFF;
		break;
	case ptev_overflow:
		if (ev->status_update)
			return RV_FAST_HANDOFF;
		/* tracing resumed at ip, or with tracing off */
		f->enabled = !ev->ip_suppressed;
		f->ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
		forget(f);
		break;
	case ptev_stop:
		if (ev->status_update || f->enabled)
			return RV_FAST_HANDOFF;
		break;
	case ptev_exstop:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.exstop.ip)
			return RV_FAST_HANDOFF;
		break;
	case ptev_mwait:
		if (!ev->ip_suppressed && f->enabled && f->ip != ev->variant.mwait.ip)
			return RV_FAST_HANDOFF;
		break;
	default:
		break;
	}
	f->process_event = false;
	memcpy(event, ev, sizeof(*event));
	return proceed_trailing_event(f);
}
