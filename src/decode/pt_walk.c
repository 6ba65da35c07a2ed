/* pt_walk.c: one chunk of an Intel PT buffer walked with libipt's block
 * decoder, from the PSB it begins at to the next chunk's first address, into
 * records (see pt_decoder_internal.h for how chunks fit together).
 *
 * libipt is asked to end a block at every direct call and jump too, so that a
 * block's last instruction is its only transfer; the destination of that
 * transfer is where the next block (or event) starts. The walk tells a taken
 * conditional branch from a fall-through, drops the jumps that stay inside a
 * function (options.function_at), stops past the chunk's last packet where
 * the next chunk begins, and reports errors and overflows, resuming at the
 * next PSB.
 *
 * The blocks and events come from libipt's block decoder or, by default,
 * from the fast walker (pt_fast.h), which keeps libipt's contract over its
 * query decoder and runs its blocks on through the branches this walk would
 * drop. A chunk the fast walker hands over (RV_FAST_HANDOFF) is walked again
 * from its PSB with libipt's decoder, past the records already emitted.
 *
 * Not here: instruction lengths and classes (pt_code.c), PSB+ headers
 * (pt_psb.c), the fast walker (pt_fast.c), the chunks, threads and the sink
 * (pt_pool.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "decode/pt_code.h"
#include "decode/pt_decoder.h"
#include "decode/pt_decoder_internal.h"
#include "decode/pt_fast.h"
#include "decode/pt_sections.h"
#include "util/array.h"

/* Blocks walked past a chunk's last packet without reaching the next PSB's
 * address: more means code that loops without trace (the end of a snapshot
 * in a spin loop), which would otherwise never end. */
#define MAX_TAIL_BLOCKS (1u << 16)
#define STALL_CHECK	(1u << 8) /* blocks between two looks for a stall */
/* Instructions walked without reading a packet, at most: libipt's block of a
 * loop of direct jumps holds up to 65535 of them, so MAX_TAIL_BLOCKS blocks
 * alone could take billions (minutes; the raw PT fuzz harness found it). */
#define MAX_STALL_INSNS	    (1u << 22)
#define MAX_RESYNC_FAILURES 64

/* ---- what each decoding thread keeps ---- */

/* libipt's image lookup moves the section it finds to the front of the
 * image's list, so an image must not serve two threads at once: threads
 * decode with their own copies, with sections of their own when the caller
 * can build them (options.populate, into the thread's section cache), else
 * sharing the sections (rv_pt_sections_copy), which lock themselves. */
struct image_copy {
	struct pt_image *source, *copy;
};

/* Lengths of conditional branches by address, in front of pt_code's cache:
 * most blocks end in one, and most of those need their length. */
#define LENGTH_CACHE_SIZE 4096

struct length_slot {
	uint64_t ip;
	int isid;
	uint8_t size;
};

struct ptd_thread {
	struct length_slot lengths[LENGTH_CACHE_SIZE];
	struct rv_pt_code *code;
	struct rv_fast_cache *fast; /* the fast walker's blocks; NULL: libipt's only */
	uint64_t *cache_bytes;	    /* the stats' cache_bytes, added to at the end */
	const struct rv_pt_decode_options *options;
	struct pt_image_section_cache *iscache; /* the thread's, with populate */
	bool copy_images;
	struct image_copy *images;
	size_t nr_images, images_size;
};

/* The image this thread decodes `source` with. */
static struct pt_image *thread_image(struct ptd_thread *t, struct pt_image *source,
				     struct rv_error *err)
{
	if (!source || !t->copy_images)
		return source;
	for (size_t i = 0; i < t->nr_images; i++) {
		if (t->images[i].source == source)
			return t->images[i].copy;
	}
	if (rv_array_grow(&t->images, &t->images_size, t->nr_images, sizeof(*t->images), 8)) {
		rv_error_set(err, ENOMEM, "out of memory for the decoding threads' images");
		return NULL;
	}

	struct pt_image *copy = rv_pt_image_alloc(pt_image_name(source));

	if (!copy) {
		rv_error_set(err, ENOMEM, "out of memory for the decoding threads' images");
		return NULL;
	}
	if (t->iscache) {
		if (t->options->populate(t->options->populate_ctx, source, copy, t->iscache, err) <
		    0) {
			rv_pt_image_free(copy);
			return NULL;
		}
	} else {
		int r = rv_pt_sections_copy(copy, source);

		if (r < 0) {
			rv_pt_image_free(copy);
			rv_error_set(err, ENOMEM,
				     "cannot copy the image '%s' for a decoding thread: %s",
				     pt_image_name(source) ? pt_image_name(source) : "",
				     pt_errstr(pt_errcode(r)));
			return NULL;
		}
	}
	t->images[t->nr_images++] = (struct image_copy){ source, copy };
	return copy;
}

/* ---- one chunk's decoding ---- */

enum begin_state { BEGIN_NONE, BEGIN_SEAM, BEGIN_REAL };

/* pend.valid: a pending branch (true), or one resolve_pending_at_block
 * emits as it is, a call, return or jump nothing drops (PEND_PLAIN). */
#define PEND_PLAIN 2

struct pending {
	uint8_t valid; /* false, true or PEND_PLAIN */
	uint8_t kind;  /* enum rv_branch_kind */
	uint8_t flags; /* RV_BRANCH_IN_TX */
	uint8_t size;  /* the instruction's length, 0 if unknown */
	bool decoded;  /* size, direct and disp are known */
	bool direct;   /* target = from + size + disp */
	bool dropped;  /* a jump to be dropped wherever it goes (options->ignore_jumps) */
	int32_t disp;
	/* the block's end_ip, isid and mode, laid out as in struct pt_block */
	uint64_t from;
	int isid;
	enum pt_exec_mode mode;
	uint64_t time;
	uint64_t tail; /* PEND_PLAIN: its record's tail (ptd_record_tail) */
};

struct walker {
	struct ptd_decode *d;
	struct ptd_thread *thread;
	struct rv_pt_code *code;
	struct ptd_chunk *ch;
	struct pt_block_decoder *dec; /* libipt's, or ... */
	struct rv_fast *fast;	      /* ... the fast walker's (pt_fast.h) */
	struct ptd_page *page;
	/* put()'s next slot in page, and how far it may fill without
	 * put_slot: the page's end, or next itself when there is no page, it
	 * is full or records are skipped. */
	struct ptd_record *next, *limit;
	/* Records of this chunk on pages published, and how many to skip: a
	 * chunk the fast walker hands over is decoded again from its start by
	 * libipt's decoder, whose first records are those already emitted. */
	uint64_t published, skip;
	bool handoff; /* the fast walker handed the chunk over */

	struct pending pend;
	bool pend_fresh; /* pend is the block's just returned: no event since */
	/* set_pending's pending branch for a block that ends in a near call,
	 * return or jump, by iclass (valid false for the others), but for
	 * what the block gives: set by set_in_tx, as in_tx changes */
	struct pending near[ptic_jump + 1];
	/* The time of the decoder's position: of the last event (libipt's tick
	 * events say when it changed at a TNT or TIP). pt_blk_time() alone
	 * would not do: when an event follows a block, libipt has read up to
	 * that event, and its timing packets, before it returns the block. */
	uint64_t time;
	enum begin_state begin;
	bool direct;	       /* the chunk the sink is at: pages go to it at once */
	bool stream;	       /* pages go to another thread's sink (put streams them) */
	bool ignore_jumps;     /* options->ignore_jumps */
	bool drop_in_function; /* options->function_at is set: jumps inside one are dropped */
	bool at_eos, in_tx, stop;
	uint32_t tail_blocks;
	uint64_t stall_offset; /* the decoder's offset, and blocks walked since it moved */
	uint32_t stall_blocks, stall_tick;
	uint64_t stall_insns;
	uint64_t stall_max_insns; /* the pass's limit (stalled) */
	uint64_t last_ip;	  /* where the decoder was last seen, for errors */
	uint32_t pid;		  /* the task decoded, for options->function_at */
	struct function_cache {
		bool valid;
		uint32_t pid;
		uint64_t start, end;  /* the code of one function ... */
		uint64_t from, until; /* ... over these decoder times */
	} function;		      /* function_at's last answer */
	struct rv_fast_drop drop;     /* fast_next's (set_drop) */
	uint64_t dropped_jumps;	      /* jumps inside one function, counted but not emitted */
	uint64_t insns, blocks;	      /* walked, added to the chunk's at its end */
	struct pt_image *image;
	uint64_t image_until; /* decoder time from which resolve must be asked again */
	int status;	      /* negative: a failure that stops decoding */
	struct rv_error *err;
	/* 1 + the buffer offset of the last overflow event that left no IP
	 * (0: none): a failure there, at a PSB, is that overflow's (on_error) */
	uint64_t lost_ip_at;
};

/* The branch a block ends with when libipt's class of its last instruction
 * says it all (RV_BRANCH_NONE: it does not). A table, not a switch: blocks
 * end in calls, returns and jumps in no order a branch predictor learns. */
static const uint8_t near_kind[] = {
	[ptic_call] = RV_BRANCH_CALL,
	[ptic_return] = RV_BRANCH_RETURN,
	[ptic_jump] = RV_BRANCH_JUMP,
};

/* Sets in_tx, and the pending branches of set_pending that depend on it. */
static void set_in_tx(struct walker *w, bool in_tx)
{
	uint8_t flags = in_tx ? RV_BRANCH_IN_TX : 0;

	_Static_assert(sizeof(near_kind) == sizeof(w->near) / sizeof(w->near[0]),
		       "a pending branch for each near_kind");
	w->in_tx = in_tx;
	for (size_t i = 0; i < sizeof(near_kind); i++) {
		uint8_t kind = near_kind[i];
		/* what emit_branch would look at (and resolve_pending drop) */
		bool checked = kind == RV_BRANCH_JUMP && !flags &&
			       (w->ignore_jumps || w->drop_in_function);

		w->near[i] = (struct pending){
			.valid = kind == RV_BRANCH_NONE ? false
				 : checked		? true
							: PEND_PLAIN,
			.kind = kind,
			.flags = flags,
			.dropped = w->ignore_jumps && kind == RV_BRANCH_JUMP && !flags,
			.tail = ptd_record_tail(PTD_REC_BRANCH, kind, flags, 0, 0),
		};
	}
}

/* Records on the walker's page. */
static size_t page_fill(const struct walker *w)
{
	return w->page ? (size_t)(w->next - w->page->records) : 0;
}

/* Hands the walker's page over to the sink's side. */
static int publish(struct walker *w)
{
	struct ptd_page *p = w->page;

	if (!p)
		return 0;
	p->nr = page_fill(w);
	w->published += p->nr;
	w->page = NULL;
	w->next = w->limit = NULL;
	return ptd_publish(w->d, w->ch, p, w->direct, w->err);
}

/* put()'s slot when it reaches its limit: NULL when the record is skipped
 * or decoding must stop (w->stop set, and w->status). */
static struct ptd_record *put_slot(struct walker *w)
{
	if (w->skip) {
		/* the limit stays: the record after the last skipped one
		 * comes here too, and sets it */
		w->skip--;
		return NULL;
	}
	if (page_fill(w) == PTD_PAGE_RECORDS) {
		int r = publish(w);

		if (r < 0) {
			w->status = r;
			w->stop = true;
			return NULL;
		}
	}
	if (!w->page) {
		w->page = ptd_page_get(w->d);
		if (!w->page) {
			w->status = rv_error_set(w->err, ENOMEM,
						 "out of memory while decoding Intel PT");
			w->stop = true;
			return NULL;
		}
		w->next = w->page->records;
	}
	w->limit = w->page->records + PTD_PAGE_RECORDS;
	return w->next;
}

/* put() streams records in 16-byte stores (malloc aligns pages to 16), built
 * from this layout. */
_Static_assert(offsetof(struct ptd_page, records) % 16 == 0 && sizeof(struct ptd_record) % 16 == 0,
	       "records can be stored 16 bytes at a time");
_Static_assert(offsetof(struct ptd_record, a) == 0 && offsetof(struct ptd_record, b) == 8 &&
		       offsetof(struct ptd_record, time) == 16 &&
		       offsetof(struct ptd_record, kind) == 24,
	       "put() knows where each field is (the tail: ptd_record_tail)");

/* Appends a record (its tail from ptd_record_tail) to the walker's page, unless
 * it is skipped or decoding must stop (w->stop set). A page that another
 * thread's sink will read is written around the cache (non-temporal
 * stores): otherwise every line of it would first be fetched from the
 * sink's core, which last read it, and then go back there, and that traffic
 * costs more than decoding the branch. */
static inline void put(struct walker *w, uint64_t tail, uint64_t a, uint64_t b, uint64_t time)
{
	struct ptd_record *r = w->next;

	/* one test for a full page, no page and records to skip */
	if (__builtin_expect(r == w->limit, 0)) {
		r = put_slot(w);
		if (!r)
			return;
	}
	w->next = r + 1;
#ifdef __SSE2__
	/* The record's bytes in registers, stored 16 at a time: fewer
	 * stores than fields, and none of a byte (which may alias the
	 * walker's state, so that the compiler would load it again). The
	 * sink reads the fields in narrower loads, each inside one store,
	 * and a page later: nothing waits on a store there. */
	__m128i lo = _mm_set_epi64x((long long)b, (long long)a);
	__m128i hi = _mm_set_epi64x((long long)tail, (long long)time);

	if (w->stream) {
		_mm_stream_si128((__m128i *)r, lo);
		_mm_stream_si128((__m128i *)r + 1, hi);
	} else {
		_mm_store_si128((__m128i *)r, lo);
		_mm_store_si128((__m128i *)r + 1, hi);
	}
#else
	r->a = a;
	r->b = b;
	r->time = time;
	memcpy(&r->kind, &tail, sizeof(tail));
#endif
}

/* ---- the decoder: libipt's block decoder or the fast walker ---- */

static int dec_offset(const struct walker *w, uint64_t *offset)
{
	return w->fast ? rv_fast_get_offset(w->fast, offset) : pt_blk_get_offset(w->dec, offset);
}

static int dec_sync_offset(const struct walker *w, uint64_t *offset)
{
	return w->fast ? rv_fast_get_sync_offset(w->fast, offset)
		       : pt_blk_get_sync_offset(w->dec, offset);
}

static uint64_t now(const struct walker *w)
{
	uint64_t t = 0;
	uint32_t lost_mtc, lost_cyc;

	/* -pte_no_time still gives libipt's relative time. */
	if (w->fast)
		(void)rv_fast_time(w->fast, &t, &lost_mtc, &lost_cyc);
	else
		(void)pt_blk_time(w->dec, &t, &lost_mtc, &lost_cyc);
	return t;
}

/* The first decoder time (TSC, or libipt's) whose capture time is at or after
 * `until`: the end of a function_at answer's time, in the walker's clock. */
static uint64_t time_bound(const struct rv_perf_time_conv *tc, uint64_t until, uint64_t floor)
{
	uint64_t t;

	if (!tc || until == UINT64_MAX)
		return until;
	/* The inverse, then stepped to the exact bound (the conversions round):
	 * every time before the bound must convert to before `until`; a
	 * bound short of the exact one only makes the answer hold less long,
	 * and the floor, for a conversion that does not get there in a few
	 * steps (a damaged capture's), not at all. */
	t = rv_perf_time_to_tsc(tc, until);
	for (int i = 0; i < 64 && t > floor && rv_perf_tsc_to_time(tc, t - 1) >= until; i++)
		t--;
	if (t <= floor || rv_perf_tsc_to_time(tc, t - 1) >= until)
		return floor;
	for (int i = 0; i < 64 && t < UINT64_MAX && rv_perf_tsc_to_time(tc, t) < until; i++)
		t++;
	return t;
}

/* fast_next's drop, from the function cache and the task (every jump with
 * ignore_jumps): set again wherever either changes, so that a block costs
 * only the time's copy (the fast walker checks it when a jump comes). */
static void set_drop(struct walker *w)
{
	const struct function_cache *c = &w->function;

	w->drop =
		(struct rv_fast_drop){ .all = w->ignore_jumps,
				       .span = w->drop_in_function && c->valid && c->pid == w->pid,
				       .start = c->start,
				       .end = c->end,
				       .from = c->from,
				       .until = c->until };
}

/* Whether a jump from `from` to `to` at `time` stays inside one function,
 * through the walker's last answer from options->function_at while it holds
 * (the same task, the same stretch of code, a time it covers). */
static bool stays_in_function(struct walker *w, uint64_t time, uint64_t from, uint64_t to)
{
	struct function_cache *c = &w->function;

	if (!c->valid || c->pid != w->pid || time < c->from || time >= c->until ||
	    from - c->start >= c->end - c->start) {
		const struct rv_pt_decode_options *o = w->d->options;
		const struct rv_perf_time_conv *tc = o->time_conv;
		struct rv_pt_function_span span;

		c->valid = false;
		if (!o->function_at(o->function_at_ctx, w->pid,
				    tc ? rv_perf_tsc_to_time(tc, time) : time, from, &span) ||
		    span.end <= span.start || from < span.start || from >= span.end) {
			set_drop(w);
			return false;
		}
		/* Times before this one may have had other code: the answer
		 * holds from now on, as decoding goes forward. */
		*c = (struct function_cache){ .valid = true,
					      .pid = w->pid,
					      .start = span.start,
					      .end = span.end,
					      .from = time,
					      .until = time_bound(tc, span.until, time) };
		if (time >= c->until)
			c->valid = false;
		set_drop(w);
	}
	return to - c->start < c->end - c->start;
}

static inline void emit_branch(struct walker *w, uint8_t kind, uint8_t flags, uint64_t from,
			       uint64_t to, uint64_t time)
{
	/* A jump that stays in its function cannot change a call stack: it is
	 * counted here, in parallel, instead of reaching the sink. Jumps that
	 * begin or end tracing, and those at a seam (which the sink may drop),
	 * go on. */
	if ((kind == RV_BRANCH_JUMP || kind == RV_BRANCH_COND) && !flags && w->drop_in_function &&
	    stays_in_function(w, time, from, to)) {
		w->dropped_jumps++;
		return;
	}
	put(w, ptd_record_tail(PTD_REC_BRANCH, kind, flags, 0, 0), from, to, time);
}

static void emit_error(struct walker *w, int code, bool overflow, uint64_t offset, uint64_t ip,
		       uint64_t time)
{
	put(w, ptd_record_tail(PTD_REC_ERROR, 0, 0, overflow ? PTD_REC_OVERFLOW : 0, code), offset,
	    ip, time);
}

static void emit_task(struct walker *w, uint32_t pid, uint32_t tid)
{
	w->pid = pid;
	set_drop(w);
	put(w, ptd_record_tail(PTD_REC_TASK, 0, 0, 0, 0), pid, tid, w->time);
}

static void emit_begin_now(struct walker *w, uint64_t to, uint64_t time)
{
	uint8_t flags = RV_BRANCH_TRACE_BEGIN;

	if (w->begin == BEGIN_SEAM)
		flags |= PTD_REC_SEAM;
	if (w->in_tx)
		flags |= RV_BRANCH_IN_TX;
	w->begin = BEGIN_NONE;
	emit_branch(w, RV_BRANCH_NONE, flags, 0, to, time);
}

/* The trace begin owed since a (re)start, if there is one. */
static inline void emit_begin(struct walker *w, uint64_t to, uint64_t time)
{
	if (__builtin_expect(w->begin != BEGIN_NONE, 0))
		emit_begin_now(w, to, time);
}

/* The pending branch went to `to` (0: unknown). */
static void decode_pending(struct walker *w);
static uint8_t pending_cond_length(struct walker *w);

static void resolve_pending_slow(struct walker *w, uint64_t to)
{
	struct pending *p = &w->pend;

	p->valid = false;
	if (p->kind == RV_BRANCH_COND) {
		uint64_t delta = to - p->from;

		if (!to)
			return; /* taken or not, nobody knows */
		/* Only a destination right after it can be the fall-through:
		 * the instruction's length is needed then only. */
		if (delta >= 1 && delta <= pt_max_insn_size) {
			uint8_t size;

			p->valid = true;
			size = p->decoded ? p->size : pending_cond_length(w);
			p->valid = false;
			if (size ? delta == size : delta == 2 || delta == 6)
				return; /* fell through */
		}
	}
	emit_branch(w, p->kind, p->flags, p->from, to, p->time);
}

/* The pending branch went to `to` (0: unknown): emitted, unless it fell
 * through or is dropped. Inline for the block loop's sake, where most are
 * dropped or there is none. */
static inline void resolve_pending(struct walker *w, uint64_t to)
{
	struct pending *p = &w->pend;

	if (!p->valid)
		return;
	if (p->dropped) {
		p->valid = false;
		return;
	}
	resolve_pending_slow(w, to);
}

/* resolve_pending and then emit_begin for the block loop's block at `to`,
 * where most pending branches are calls and returns: those are emitted
 * here, without resolve_pending_slow's call or emit_branch's tests
 * (set_pending told them apart). A trace begin is owed only with no
 * branch pending (after_sync, ptev_enabled and ptev_overflow drop it
 * first, and a block's emit_begin comes before its set_pending), so such
 * a branch alone looks for none. */
static inline void resolve_pending_at_block(struct walker *w, uint64_t to)
{
	struct pending *p = &w->pend;

	if (p->valid == PEND_PLAIN) {
		p->valid = false;
		put(w, p->tail, p->from, to, p->time);
	} else {
		resolve_pending(w, to);
		emit_begin(w, to, w->time);
	}
}

static void decode_pending(struct walker *w)
{
	struct pending *p = &w->pend;

	if (!p->valid || p->decoded)
		return;
	p->decoded = true;

	const struct rv_pt_insn *insn = rv_pt_code_get(w->code, p->isid, p->from, p->mode, NULL, 0);

	if (!insn)
		return;
	p->size = insn->size;
	p->disp = insn->disp;
	p->direct = insn->cls == RV_PT_INSN_JUMP || insn->cls == RV_PT_INSN_CALL ||
		    insn->cls == RV_PT_INSN_COND;
}

/* The length of the pending conditional branch (0 if unknown). */
static uint8_t pending_cond_length(struct walker *w)
{
	struct pending *p = &w->pend;
	struct length_slot *slot =
		&w->thread->lengths[(p->from ^ (p->from >> 12)) & (LENGTH_CACHE_SIZE - 1)];

	if (slot->ip == p->from && slot->isid == p->isid && slot->size)
		return slot->size;
	decode_pending(w);
	if (p->size && p->isid > 0 && p->mode == ptem_64bit)
		*slot = (struct length_slot){ p->from, p->isid, p->size };
	return p->size;
}

/* The destination of the pending branch when the trace does not say: that
 * of a direct call or jump. */
static uint64_t pending_target(struct walker *w)
{
	struct pending *p = &w->pend;

	decode_pending(w);
	if (p->valid && p->direct && p->size && p->kind != RV_BRANCH_COND)
		return p->from + p->size + (int64_t)p->disp;
	return 0;
}

/* What the last TNT or TIP before an OVF said. */
struct last_branch {
	enum { LAST_NONE, LAST_TNT, LAST_TIP } kind;
	bool taken;
	uint64_t ip; /* TIP: 0 when suppressed */
};

/* The last TNT or TIP before the last OVF in [from, limit), read from the
 * PSB at `from`. */
static struct last_branch scan_for_overflow(const struct ptd_decode *d, size_t from, size_t limit)
{
	struct last_branch cur = { 0 }, at_ovf = { 0 };
	struct pt_config config = d->config;
	struct pt_packet_decoder *dec;
	uint64_t last_ip = 0;

	config.begin = (uint8_t *)d->buf + from;
	config.end = (uint8_t *)d->buf + limit;
	dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return at_ovf;
	if (pt_pkt_sync_set(dec, 0) >= 0) {
		struct pt_packet pkt;

		while (pt_pkt_next(dec, &pkt, sizeof(pkt)) >= 0) {
			bool valid;
			uint64_t ip;

			switch (pkt.type) {
			case ppt_psb:
				last_ip = 0;
				break;
			case ppt_tnt_8:
			case ppt_tnt_64:
				cur.kind = LAST_TNT;
				cur.taken =
					pkt.payload.tnt.bit_size && (pkt.payload.tnt.payload & 1);
				break;
			case ppt_tip:
				ip = ptd_apply_ip(last_ip, &pkt.payload.ip, &valid);
				if (valid)
					last_ip = ip;
				cur.kind = LAST_TIP;
				cur.ip = valid ? ip : 0;
				break;
			case ppt_fup:
			case ppt_tip_pge:
			case ppt_tip_pgd:
				ip = ptd_apply_ip(last_ip, &pkt.payload.ip, &valid);
				if (valid)
					last_ip = ip;
				if (pkt.type == ppt_tip_pge)
					cur.kind = LAST_NONE;
				break;
			case ppt_ovf:
				at_ovf = cur;
				cur.kind = LAST_NONE;
				break;
			default:
				break;
			}
		}
	}
	pt_pkt_free_decoder(dec);
	return at_ovf;
}

/* The answer to the branch libipt resolved just before an overflow, which it
 * does not pass on: the last TNT or TIP before the OVF, read from the PSB
 * before it (or the one before that, if none came between), up to `limit`,
 * the decoder's position after the overflow event. */
static struct last_branch branch_before_overflow(const struct walker *w, uint64_t limit)
{
	const struct ptd_decode *d = w->d;
	uint64_t sync = 0;
	size_t hi = (size_t)limit;

	(void)dec_sync_offset(w, &sync);
	sync += w->ch->begin;
	if (limit <= sync || limit > w->ch->end)
		return (struct last_branch){ 0 };
	for (int tries = 0; tries < 4; tries++) {
		size_t psb = ptd_last_psb_before(d->buf, d->size, (size_t)sync, hi, &d->config);

		if (psb >= hi)
			break;

		struct last_branch last = scan_for_overflow(d, psb, (size_t)limit);

		if (last.kind != LAST_NONE || psb == sync)
			return last;
		hi = psb;
	}
	return (struct last_branch){ 0 };
}

/* Where the pending branch went, as far as the packets before an overflow
 * tell; 0 when they do not. */
static uint64_t overflow_target(struct walker *w, uint64_t limit)
{
	struct pending *p = &w->pend;

	if (!p->valid)
		return 0;
	decode_pending(w);
	if (p->direct && p->size && p->kind != RV_BRANCH_COND)
		return pending_target(w);

	struct last_branch last = branch_before_overflow(w, limit);

	if (p->kind == RV_BRANCH_COND) {
		if (last.kind != LAST_TNT || !p->size)
			return 0;
		return p->from + p->size + (last.taken ? (int64_t)p->disp : 0);
	}
	/* a compressed return (a TNT) goes where libipt's call stack says,
	 * which is not known here */
	return last.kind == LAST_TIP ? last.ip : 0;
}

/* The decoder's position in the buffer, for error events: libipt's, except
 * that a PSB+ header it has read ahead counts at its PSB, where a chunk
 * ending there would have it. */
static uint64_t position(const struct walker *w)
{
	uint64_t offset = 0;

	(void)dec_offset(w, &offset);
	offset += w->ch->begin;

	size_t psb = ptd_psb_ending_at(w->d->buf, w->ch->end, (size_t)offset, &w->d->config);

	return psb < w->ch->end ? psb : offset;
}

static int resolve_task(struct walker *w, uint64_t tsc)
{
	const struct rv_pt_decode_options *o = w->d->options;
	uint32_t pid = o->pid, tid = o->tid;
	struct pt_image *image = o->image;

	w->image_until = UINT64_MAX;
	if (o->resolve) {
		uint64_t time = o->time_conv ? rv_perf_tsc_to_time(o->time_conv, tsc) : tsc;
		uint64_t until = UINT64_MAX;
		int r = o->resolve(o->resolve_ctx, time, &pid, &tid, &image, &until, w->err);

		if (r < 0) {
			w->status = r;
			w->stop = true;
			return r;
		}
		if (until != UINT64_MAX)
			w->image_until =
				until > time ? time_bound(o->time_conv, until, tsc) : tsc + 1;
	}
	if (image != w->image) {
		struct pt_image *own = thread_image(w->thread, image, w->err);
		int r = image && !own ? -pte_nomem
			: w->fast     ? rv_fast_set_image(w->fast, own)
				      : pt_blk_set_image(w->dec, own);

		if (image && !own) {
			w->status = w->err && w->err->code ? -w->err->code : -ENOMEM;
			w->stop = true;
			return w->status;
		}
		if (r < 0) {
			w->status = rv_error_set(w->err, EINVAL, "cannot give libipt the image: %s",
						 pt_errstr(pt_errcode(r)));
			w->stop = true;
			return w->status;
		}
		w->image = image;
	}
	emit_task(w, pid, tid);
	return 0;
}

/* A (re)synchronisation at the PSB at the decoder's sync offset. */
static int after_sync(struct walker *w, int status, enum begin_state begin)
{
	uint64_t sync = 0;
	struct ptd_psb info;
	const struct ptd_decode *d = w->d;

	w->pend.valid = false;
	w->at_eos = false;
	set_in_tx(w, false);
	w->tail_blocks = 0;
	w->begin = (status & pts_ip_suppressed) ? BEGIN_NONE : begin;
	(void)dec_sync_offset(w, &sync);
	sync += w->ch->begin;
	if (sync == w->ch->begin)
		info = w->ch->first;
	else if (!ptd_parse_psb(d->buf, d->size, (size_t)sync, &d->config, &info))
		memset(&info, 0, sizeof(info));
	w->time = info.has_tsc ? info.tsc : now(w);
	return resolve_task(w, w->time);
}

/* set_pending for a block that does not end in a near call, return or
 * jump. */
static void set_pending_slow(struct walker *w, const struct pt_block *b)
{
	struct pending *p = &w->pend;
	const struct rv_pt_insn *insn = NULL;
	uint8_t kind;

	switch (b->iclass) {
	case ptic_cond_jump:
		if (!b->truncated) {
			/* Most blocks end here: the length is looked up if needed. */
			uint8_t flags = w->in_tx ? RV_BRANCH_IN_TX : 0;

			*p = (struct pending){ .valid = true,
					       .kind = RV_BRANCH_COND,
					       .flags = flags,
					       .mode = b->mode,
					       .dropped = w->ignore_jumps && !flags,
					       .isid = b->isid,
					       .from = b->end_ip,
					       .time = w->time };
			w->pend_fresh = true;
			return;
		}
		/* fall through */
	case ptic_far_call:
	case ptic_far_return:
	case ptic_far_jump:
	case ptic_error:
		insn = rv_pt_code_get(w->code, b->isid, b->end_ip, b->mode,
				      b->truncated ? b->raw : NULL, b->truncated ? b->size : 0);
		if (!insn) {
			kind = b->iclass == ptic_cond_jump    ? RV_BRANCH_COND
			       : b->iclass == ptic_far_call   ? RV_BRANCH_CALL
			       : b->iclass == ptic_far_return ? RV_BRANCH_RETURN
							      : RV_BRANCH_JUMP;
			break;
		}
		switch (insn->cls) {
		case RV_PT_INSN_COND:
			kind = RV_BRANCH_COND;
			break;
		case RV_PT_INSN_JUMP:
		case RV_PT_INSN_JUMP_IND:
		case RV_PT_INSN_FAR_JUMP:
			kind = RV_BRANCH_JUMP;
			break;
		case RV_PT_INSN_CALL:
		case RV_PT_INSN_CALL_IND:
		case RV_PT_INSN_FAR_CALL:
			kind = RV_BRANCH_CALL;
			break;
		case RV_PT_INSN_RETURN:
		case RV_PT_INSN_FAR_RETURN:
			kind = RV_BRANCH_RETURN;
			break;
		case RV_PT_INSN_SYSCALL:
			kind = RV_BRANCH_SYSCALL;
			break;
		case RV_PT_INSN_SYSRET:
			kind = RV_BRANCH_SYSRET;
			break;
		case RV_PT_INSN_SOFT_INT:
			kind = RV_BRANCH_SOFT_INT;
			break;
		case RV_PT_INSN_IRET:
			kind = RV_BRANCH_IRET;
			break;
		default:
			return; /* not a transfer after all */
		}
		break;
	default:
		return; /* ptic_other, ptic_ptwrite: the block ended without a transfer */
	}
	p->valid = true;
	p->kind = kind;
	p->flags = w->in_tx ? RV_BRANCH_IN_TX : 0;
	p->dropped =
		w->ignore_jumps && (kind == RV_BRANCH_COND || kind == RV_BRANCH_JUMP) && !p->flags;
	p->from = b->end_ip;
	p->time = w->time;
	w->pend_fresh = true;
	p->isid = b->isid;
	p->mode = b->mode;
	p->decoded = insn != NULL;
	p->size = insn ? insn->size : 0;
	p->direct = insn && (insn->cls == RV_PT_INSN_JUMP || insn->cls == RV_PT_INSN_CALL ||
			     insn->cls == RV_PT_INSN_COND);
	p->disp = insn ? insn->disp : 0;
}

/* The branch block b ends with, pending until the next block or event
 * says where it went. */
static inline void set_pending(struct walker *w, const struct pt_block *b)
{
	struct pending *p = &w->pend;

	if ((unsigned)b->iclass < sizeof(near_kind) && w->near[b->iclass].valid) {
		/* A near call, return or jump: nothing to decode, and the
		 * whole pending branch in one go. */
		*p = w->near[b->iclass];
		p->from = b->end_ip;
		p->isid = b->isid;
		p->mode = b->mode;
		p->time = w->time;
		w->pend_fresh = true;
		return;
	}
	set_pending_slow(w, b);
}

/* Instructions of block b before `target`, walking from its first one; -1
 * when target is not one of its instruction addresses. */
static int64_t insns_before(struct walker *w, const struct pt_block *b, uint64_t target)
{
	uint64_t ip = b->ip;

	for (uint32_t n = 0; n < b->ninsn; n++) {
		if (ip == target)
			return n;
		if (ip == b->end_ip)
			return -1;

		const struct rv_pt_insn *insn =
			rv_pt_code_get(w->code, b->isid, ip, b->mode, NULL, 0);

		if (!insn)
			return -1;
		ip += insn->size;
		/* blocks run through direct jumps when jumps are ignored */
		if (insn->cls == RV_PT_INSN_JUMP)
			ip += (uint64_t)(int64_t)insn->disp;
	}
	return -1;
}

/* One more block walked past the chunk's last packet: true (and the walk
 * stops) past MAX_TAIL_BLOCKS. The fast walker's blocks are cut at other
 * places than libipt's, so it stops sooner and hands the chunk over:
 * libipt's decoder decides where such a walk ends. */
static bool tail_too_long(struct walker *w)
{
	if (++w->tail_blocks <= (w->fast ? MAX_TAIL_BLOCKS / 4 : MAX_TAIL_BLOCKS))
		return false;
	w->handoff = w->fast != NULL;
	w->stop = true;
	return true;
}

/* A block of instructions (b->ninsn > 0) walked before the trace's end:
 * what most blocks are, all that on_block does for them. Inline (as stalled
 * is) in both of walk's loops, where gcc would not. */
static inline __attribute__((always_inline)) void on_walked_block(struct walker *w,
								  const struct pt_block *b)
{
	resolve_pending_at_block(w, b->ip);
	w->insns += b->ninsn;
	w->blocks++;
	w->last_ip = b->end_ip;
	set_pending(w, b);
}

static void on_block(struct walker *w, const struct pt_block *b, int status)
{
	struct ptd_chunk *ch = w->ch;

	if (!b->ninsn) {
		/* An error before the first instruction: libipt's position is
		 * where the last transfer went (unreadable code, most often). */
		if (status < 0 && status != -pte_eos && b->ip) {
			resolve_pending(w, b->ip);
			w->last_ip = b->ip;
		}
		return;
	}
	if (w->at_eos && ch->has_next && ch->next.has_ip) {
		uint64_t seam = ch->next.ip;
		int64_t n = -1;

		if (b->ip == seam)
			n = 0;
		else if (w->ignore_jumps || (seam > b->ip && seam <= b->end_ip))
			n = insns_before(w, b, seam); /* through jumps, it may be anywhere */
		if (n >= 0) {
			/* A walk on through the next PSB+ reads its time there,
			 * and asks resolve again if due, before the branch that
			 * goes to the seam: that branch is the new task's. */
			if (n == 0 && ch->next.has_tsc) {
				w->time = ch->next.tsc;
				if (w->time >= w->image_until && resolve_task(w, w->time) < 0)
					return;
			}
			resolve_pending(w, b->ip);
			if (n > 0)
				emit_begin(w, b->ip, w->time);
			w->insns += (uint64_t)n;
			ch->passed_next = true;
			w->stop = true;
			return;
		}
		if (tail_too_long(w))
			return;
	} else if (w->at_eos && tail_too_long(w)) {
		return;
	}
	on_walked_block(w, b);
}

/* on_event for a tick event at `time` (the fast walker's, taken by
 * rv_fast_tick_event): the time changed at the TNT or TIP that ended the
 * last block. */
static inline void on_tick(struct walker *w, uint64_t time)
{
	bool fresh = w->pend_fresh;

	w->pend_fresh = false;
	w->time = time;
	/* without a test of pend.valid: the fields of a branch no longer
	 * pending are not read before set_pending sets them again */
	if (fresh)
		w->pend.time = time;
}

/* A tick event the decoder gave with status: its time (has_tsc: tsc, else
 * the walker's), and whether the trace ends after it. drain_events and
 * walk's tick taken with a block (pt_fast.h's struct rv_fast_tick). */
static inline void take_tick(struct walker *w, bool has_tsc, uint64_t tsc, int status)
{
	on_tick(w, has_tsc ? tsc : w->time);
	if (status & pts_eos)
		w->at_eos = true;
}

static void on_event(struct walker *w, const struct pt_event *ev)
{
	/* The event's own time: libipt's current time has moved on to the
	 * next event already when it tells whether one is pending. */
	uint64_t time = ev->has_tsc ? ev->tsc : w->time;

	if (ev->type == ptev_tick && !ev->status_update) {
		on_tick(w, time);
		return;
	}
	w->pend_fresh = false;
	if (ev->status_update) {
		/* A PSB+: its time holds from its FUP's address on, which the
		 * MODE.Exec event binds to; libipt hands out the others (CBR)
		 * before it has walked the code up to there. */
		if (ev->type == ptev_exec_mode || ev->type == ptev_tsx)
			w->time = time;
		return;
	}
	w->time = time;
	switch (ev->type) {
	case ptev_enabled:
		w->pend.valid = false;
		w->begin = BEGIN_REAL;
		if (resolve_task(w, time) < 0)
			return;
		emit_begin(w, ev->variant.enabled.ip, time);
		w->last_ip = ev->variant.enabled.ip;
		break;
	case ptev_disabled:
		if (w->pend.valid) {
			w->pend.valid = false;
			emit_branch(w, w->pend.kind, w->pend.flags | RV_BRANCH_TRACE_END,
				    w->pend.from, 0, time);
		} else {
			emit_branch(w, RV_BRANCH_NONE,
				    RV_BRANCH_TRACE_END | (w->in_tx ? RV_BRANCH_IN_TX : 0),
				    w->last_ip, 0, time);
		}
		w->begin = BEGIN_NONE;
		break;
	case ptev_async_disabled:
		emit_begin(w, ev->variant.async_disabled.at, time);
		resolve_pending(w, ev->variant.async_disabled.at);
		emit_branch(w, RV_BRANCH_NONE,
			    RV_BRANCH_ASYNC | RV_BRANCH_TRACE_END |
				    (w->in_tx ? RV_BRANCH_IN_TX : 0),
			    ev->variant.async_disabled.at, 0, time);
		w->last_ip = ev->variant.async_disabled.at;
		w->begin = BEGIN_NONE;
		break;
	case ptev_async_branch: {
		uint64_t to = ev->ip_suppressed ? 0 : ev->variant.async_branch.to;
		uint8_t flags = RV_BRANCH_ASYNC | (to ? 0 : RV_BRANCH_TRACE_END) |
				(w->in_tx ? RV_BRANCH_IN_TX : 0);

		emit_begin(w, ev->variant.async_branch.from, time);
		resolve_pending(w, ev->variant.async_branch.from);
		emit_branch(w, RV_BRANCH_INTERRUPT, flags, ev->variant.async_branch.from, to, time);
		if (to)
			w->last_ip = to;
		break;
	}
	case ptev_overflow: {
		uint64_t offset = 0, to;

		(void)dec_offset(w, &offset);
		to = overflow_target(w, w->ch->begin + offset);
		resolve_pending(w, to);
		if (to)
			w->last_ip = to;
		emit_error(w, -pte_overflow, true, position(w), w->last_ip, time);
		/* Timing restarts with the packets after the OVF (a TSC). */
		w->time = now(w);
		w->begin = BEGIN_NONE;
		w->lost_ip_at = ev->ip_suppressed ? w->ch->begin + offset + 1 : 0;
		if (!ev->ip_suppressed) {
			w->begin = BEGIN_REAL;
			emit_begin(w, ev->variant.overflow.ip, w->time);
			w->last_ip = ev->variant.overflow.ip;
		}
		break;
	}
	case ptev_tsx:
		if (!ev->ip_suppressed) {
			resolve_pending(w, ev->variant.tsx.ip);
			w->last_ip = ev->variant.tsx.ip;
		}
		set_in_tx(w, ev->variant.tsx.speculative);
		if (ev->variant.tsx.aborted && !ev->ip_suppressed) {
			w->pend = (struct pending){
				.valid = true,
				.kind = RV_BRANCH_TX_ABORT,
				.from = ev->variant.tsx.ip,
				.time = time,
			};
		}
		break;
	default:
		/* paging, vmcs, exec mode, stop, exstop, mwait, power, ptwrite,
		 * cbr, mnt: nothing a branch stream shows */
		break;
	}
}

/* A decode error at the decoder's position: report it, then resume at the
 * next PSB. Returns the status of the resynchronisation. */
static int on_error(struct walker *w, int code)
{
	struct ptd_decode *d = w->d;
	struct ptd_chunk *ch = w->ch;
	uint64_t offset = 0, sync = 0, abs_offset;
	int status;

	(void)dec_offset(w, &offset);
	(void)dec_sync_offset(w, &sync);
	abs_offset = ch->begin + offset;
	resolve_pending(w, pending_target(w));
	w->pend.valid = false;
	/* An OVF right before a PSB: libipt reports the overflow without an
	 * IP and then, having none to decode from, fails where it has read
	 * into the PSB+ instead of resuming at it. Nothing but the overflow
	 * was lost there, and it is reported: resuming at the PSB is no
	 * error, as it is none for a chunk that begins there. */
	bool after_overflow =
		w->lost_ip_at == abs_offset + 1 &&
		ptd_psb_ending_at(d->buf, ch->end, (size_t)abs_offset, &d->config) < ch->end;

	w->lost_ip_at = 0;
	if (!after_overflow)
		emit_error(w, code, false, position(w), w->last_ip, w->time);

	for (int tries = 0;; tries++) {
		/* Read ahead into a PSB+ (past the last packet before it):
		 * resume at that PSB, as a chunk boundary there would. */
		size_t psb = ptd_psb_ending_at(d->buf, ch->end, (size_t)abs_offset, &d->config);

		if (psb < ch->end && psb > ch->begin + sync)
			status = pt_blk_sync_set(w->dec, psb - ch->begin);
		else
			status = pt_blk_sync_forward(w->dec);
		if (status >= 0) {
			uint64_t new_sync = 0;

			(void)pt_blk_get_sync_offset(w->dec, &new_sync);
			if (ch->begin + new_sync > abs_offset)
				ch->skipped_bytes += ch->begin + new_sync - abs_offset;
			return status;
		}
		if (status == -pte_eos || tries >= MAX_RESYNC_FAILURES) {
			if (ch->end > abs_offset)
				ch->skipped_bytes += ch->end - abs_offset;
			return -pte_eos;
		}
		/* A damaged PSB+: report it and look for the next one. */
		(void)dec_offset(w, &offset);
		emit_error(w, status, false, ch->begin + offset, 0, w->time);
		sync = offset;
	}
}

static int drain_events(struct walker *w, int status)
{
	while (status >= 0 && (status & pts_event_pending) && !w->stop) {
		struct pt_event ev;

		if (w->fast) {
			/* most events of a timed trace: a tick, taken
			 * without its copy and on_event's dispatch */
			uint64_t tsc;
			bool has_tsc;

			status = rv_fast_tick_event(w->fast, &tsc, &has_tsc);
			if (status != RV_FAST_NOT_TICK) {
				if (status < 0)
					break;
				take_tick(w, has_tsc, tsc, status);
				continue;
			}
		}
		status = w->fast ? rv_fast_event(w->fast, &ev)
				 : pt_blk_event(w->dec, &ev, sizeof(ev));
		if (status < 0)
			break;
		on_event(w, &ev);
		if (status & pts_eos)
			w->at_eos = true;
	}
	return status;
}

/* True when the decoder has walked MAX_TAIL_BLOCKS blocks or
 * MAX_STALL_INSNS instructions without reading a packet: code that loops with no branch to record,
 * which real code does not do for long; the image does not fit the trace (a binary mapped at
 * another place, or changed), and decoding it would never end. */
static inline __attribute__((always_inline)) bool stalled(struct walker *w, uint32_t ninsn)
{
	uint64_t offset;

	w->stall_insns += ninsn;
	/* The offset only grows, so looking every STALL_CHECK blocks tells
	 * as well whether it moved in between, at a fraction of the cost. */
	if (++w->stall_tick % STALL_CHECK && w->stall_insns <= w->stall_max_insns)
		return false;

	uint64_t max_insns = w->stall_max_insns;
	/* the fast walker's limits are lower (see tail_too_long) */
	uint32_t max_blocks = w->fast ? MAX_TAIL_BLOCKS / 4 : MAX_TAIL_BLOCKS;

	if (dec_offset(w, &offset) < 0)
		return false;
	if (offset != w->stall_offset) {
		w->stall_offset = offset;
		w->stall_blocks = 0;
		w->stall_insns = 0;
		return false;
	}
	w->stall_blocks += STALL_CHECK;
	return w->stall_blocks > max_blocks || w->stall_insns > max_insns;
}

/* The fast walker's next block, running through the jumps this walker
 * would drop (those it counts are counted here). */
static int fast_next(struct walker *w, struct pt_block *block, struct rv_fast_tick *tick)
{
	/* the rest of w->drop is kept up to date by set_drop */
	w->drop.time = w->time;
	/* rv_fast_next adds to the count */
	return rv_fast_next(w->fast, block, &w->drop, &w->dropped_jumps, tick);
}

/* One pass over the chunk, with libipt's block decoder or (fast) the fast
 * walker. A fast pass that meets what it does not model stops with
 * w->handoff set, having emitted only records libipt's pass emits too.
 * Inline in walk_fast and walk_libipt, so that neither loop tests which
 * it is. */
static inline __attribute__((always_inline)) void walk(struct walker *w, bool fast)
{
	struct ptd_decode *d = w->d;
	struct ptd_chunk *ch = w->ch;
	struct pt_config config = d->config;
	uint64_t max_insns = d->options->max_insns;
	/* the tick the fast walker took with its last block (pt_fast.h) */
	struct rv_fast_tick tick = { .taken = false };
	int status;

	config.begin = (uint8_t *)d->buf + ch->begin;
	config.end = (uint8_t *)d->buf + ch->end;
	if (fast) {
		w->fast = rv_fast_alloc(&config, w->thread->fast);
		if (!w->fast) {
			w->status =
				rv_error_set(w->err, ENOMEM, "cannot set up the fast PT walker");
			return;
		}
		status = rv_fast_sync_set(w->fast, 0);
	} else {
		w->dec = pt_blk_alloc_decoder(&config);
		if (!w->dec) {
			w->status = rv_error_set(w->err, ENOMEM,
						 "cannot set up libipt's block decoder");
			return;
		}
		status = pt_blk_sync_set(w->dec, 0);
	}
	w->image = NULL;
	/* the fast walker's limits are lower (see tail_too_long) */
	w->stall_max_insns = fast ? MAX_STALL_INSNS / 4 : MAX_STALL_INSNS;
	if (status >= 0 && after_sync(w, status, BEGIN_SEAM) < 0)
		w->stop = true;

	while (!w->stop) {
		if (status < 0) {
			if (status == -pte_eos)
				break;
			if (fast) {
				w->handoff = true;
				break;
			}
			status = on_error(w, status);
			if (status >= 0 && after_sync(w, status, BEGIN_REAL) < 0)
				break;
			continue;
		}
		if (status & pts_event_pending) {
			if (tick.taken) {
				/* drain_events' only turn, for the tick taken
				 * with the block (no event waits behind it) */
				tick.taken = false;
				status = tick.status;
				take_tick(w, tick.has_tsc, tick.tsc, status);
			} else {
				status = drain_events(w, status);
				if (status < 0 || w->stop)
					continue;
			}
		}

		struct pt_block block;

		/* the image changes (kernel code patched, a BPF program loaded)
		 * from a time the decoder has reached: the next block reads the
		 * new one */
		if (w->time >= w->image_until && resolve_task(w, w->time) < 0)
			break;
		/* libipt zeroes the block first, also on errors */
		status = fast ? fast_next(w, &block, &tick)
			      : pt_blk_next(w->dec, &block, sizeof(block));
		/* most blocks: no error, no end of trace, and instructions; a
		 * status not negative and without pts_eos in one test (of its
		 * sign bit and pts_eos) */
		bool ok = !((uint32_t)status & (UINT32_C(1) << 31 | pts_eos));

		if (__builtin_expect(ok && block.ninsn && !w->at_eos, 1)) {
			on_walked_block(w, &block);
			if (stalled(w, block.ninsn))
				status = -pte_bad_query;
		} else {
			if (fast && status == RV_FAST_HANDOFF) {
				w->handoff = true;
				break;
			}
			on_block(w, &block, status);
			if (status >= 0 && (status & pts_eos))
				w->at_eos = true;
			if (status >= 0 && !w->at_eos && stalled(w, block.ninsn))
				status = -pte_bad_query;
		}
		/* (a thread has the fast walker only without max_insns) */
		if (!fast && max_insns && d->insns_total + w->insns >= max_insns) {
			d->stop = true;
			break;
		}
	}
	if (w->fast) {
		rv_fast_free(w->fast);
		w->fast = NULL;
	} else {
		pt_blk_free_decoder(w->dec);
		w->dec = NULL;
	}
}

static void walk_fast(struct walker *w)
{
	walk(w, true);
}

static void walk_libipt(struct walker *w)
{
	walk(w, false);
}

/* The walker's state as a chunk begins (what it keeps from chunk to chunk
 * and pass to pass: its thread, page, function cache and status). */
static void restart(struct walker *w)
{
	struct walker keep = *w;

	memset(w, 0, sizeof(*w));
	w->d = keep.d;
	w->thread = keep.thread;
	w->code = keep.code;
	w->ch = keep.ch;
	w->err = keep.err;
	w->page = keep.page;
	/* put_slot sets the limit, past the records to skip */
	w->next = w->limit = keep.next;
	w->function = keep.function;
	w->status = keep.status;
	w->direct = keep.direct;
	w->stream = keep.stream;
	w->ignore_jumps = keep.ignore_jumps;
	w->drop_in_function = keep.drop_in_function;
	w->pid = keep.d->options->pid;
	set_drop(w);
	set_in_tx(w, false);
}

static void decode_chunk(struct walker *w)
{
	struct ptd_decode *d = w->d;
	struct ptd_chunk *ch = w->ch;

	if (w->thread->fast) {
		walk_fast(w);
		if (w->handoff && w->status >= 0 && !d->stop) {
			/* libipt's decoder again from the chunk's start, past
			 * the records the fast walker emitted */
			uint64_t emitted = w->published + page_fill(w);

			restart(w);
			w->skip = emitted;
			ch->handoff = true;
			walk_libipt(w);
		} else {
			ch->fast = !w->handoff;
		}
	} else {
		walk_libipt(w);
	}
	if (w->status >= 0 && page_fill(w)) {
		int r = publish(w);

		if (r < 0)
			w->status = r;
	}
	if (w->page) {
		ptd_page_put(d, w->page);
		w->page = NULL;
	}
	ch->insns += w->insns;
	ch->blocks += w->blocks;
	ch->dropped_jumps += w->dropped_jumps;
	w->insns = w->blocks = w->dropped_jumps = 0;
}

/* ---- the contract with pt_pool.c ---- */

int ptd_walk_chunk(struct ptd_decode *d, struct ptd_thread *t, struct ptd_chunk *ch, bool direct,
		   struct rv_error *err)
{
	struct walker w;

	memset(&w, 0, sizeof(w));
	w.d = d;
	w.thread = t;
	w.code = t->code;
	w.ch = ch;
	w.err = err;
	w.pid = d->options->pid;
	w.ignore_jumps = d->options->ignore_jumps;
	w.drop_in_function = d->options->function_at != NULL;
	w.direct = direct;
	w.stream = !direct && d->pool;
	set_drop(&w);
	set_in_tx(&w, false);
	decode_chunk(&w);
	return w.status;
}

int ptd_thread_new(struct ptd_thread **out, const struct ptd_decode *d, bool copy_images,
		   struct rv_error *err)
{
	struct ptd_thread *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return rv_error_set(err, ENOMEM, "out of memory for a decoding thread");
	t->options = d->options;
	t->copy_images = copy_images;
	if (copy_images && d->options->populate) {
		t->iscache = pt_iscache_alloc("rearview decoding thread");
		if (!t->iscache) {
			free(t);
			return rv_error_set(err, ENOMEM, "cannot set up a section cache");
		}
	}
	t->code = rv_pt_code_new(t->iscache ? t->iscache : d->options->iscache);
	t->cache_bytes = &d->stats->cache_bytes;
	/* max_insns stops at a block: libipt's blocks, for tests that count */
	if (t->code && d->options->decoder == RV_PT_DECODER_FAST && !d->options->max_insns) {
		t->fast = rv_fast_cache_new();
		if (!t->fast) {
			rv_pt_code_free(t->code);
			t->code = NULL;
		}
	}
	if (!t->code) {
		pt_iscache_free(t->iscache);
		free(t);
		return rv_error_set(err, ENOMEM, "cannot set up the instruction decoder (Zydis)");
	}
	*out = t;
	return 0;
}

void ptd_thread_free(struct ptd_thread *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_images; i++)
		rv_pt_image_free(t->images[i].copy);
	free(t->images);
	if (t->fast) {
		__atomic_add_fetch(t->cache_bytes, rv_fast_cache_bytes(t->fast), __ATOMIC_RELAXED);
		rv_fast_cache_free(t->fast);
	}
	rv_pt_code_free(t->code);
	rv_pt_sections_forget_iscache(t->iscache);
	pt_iscache_free(t->iscache);
	free(t);
}
