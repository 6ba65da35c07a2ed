/* pt_decoder.c: Intel PT to branch events with libipt's block decoder, cut at
 * PSBs and decoded in parallel (see pt_decoder.h for the contract).
 *
 * The buffer is cut into chunks that begin at a PSB; each chunk gets its own
 * block decoder over [chunk begin, chunk end) and writes compact records into
 * pages, which the calling thread turns into rv_events for the sink in chunk
 * order. The calling thread decodes too: the chunk the sink is at, straight
 * into the sink, when no other thread has taken it; the other threads take
 * chunks ahead and queue their pages. libipt is asked to end a block at every
 * direct call and jump too, so that a block's last instruction is its only
 * transfer; the destination of that transfer is where the next block (or
 * event) starts.
 *
 * The seam between two chunks: the earlier chunk's decoder, out of packets,
 * keeps walking code that needs none until it needs a packet, while the next
 * chunk starts at its PSB's FUP address S. Past the last packet the earlier
 * decoder stops where it reaches S (counting the instructions of a block up
 * to S when S is inside it), and the next chunk's trace-begin at S is dropped
 * then. Where the earlier chunk did not reach S (an error on its way, or
 * tracing off), the next chunk's decoding really restarts at S and keeps its
 * trace begin. An error seen past the last packet before a PSB resumes at
 * that PSB (libipt would skip to the one after it, having read the PSB+
 * ahead), so the whole buffer decodes the same way whatever the cuts.
 *
 * Not here: instruction lengths and classes (pt_code.c), where the buffer
 * and images come from (pt_capture.h), call stacks.
 */
#include "decode/pt_decoder.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "decode/pt_code.h"

#define DEFAULT_CHUNK_BYTES ((size_t)256 << 10)
#define PAGE_RECORDS	    2048
/* Free pages kept for reuse. */
#define MAX_FREE_PAGES 128
/* Blocks walked past a chunk's last packet without reaching the next PSB's
 * address: more means code that loops without trace (the end of a snapshot
 * in a spin loop), which would otherwise never end. */
#define MAX_TAIL_BLOCKS (1u << 16)
#define STALL_CHECK	(1u << 8) /* blocks between two looks for a stall */
/* How far back from an error's position a PSB+ read ahead may start. */
#define MAX_PSB_HEADER	    512
#define MAX_RESYNC_FAILURES 64
#define MAX_JOBS	    256

static const uint8_t psb_pattern[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

/* ---- records: what a chunk's decoder produces, 32 bytes each ---- */

enum record_type {
	REC_BRANCH, /* a: from, b: to */
	REC_ERROR,  /* a: offset in the buffer, b: ip; code */
	REC_TASK,   /* a: pid, b: tid (the records after it are that task's) */
};

/* In a REC_BRANCH's flags next to RV_BRANCH_*: the trace begin of a chunk's
 * first synchronisation, dropped when the previous chunk ran into it. */
#define REC_SEAM 0x80u

/* In a record's extra bits. */
#define REC_OVERFLOW 0x1u /* REC_ERROR: an OVF, not a decode error */

struct record {
	uint64_t time; /* TSC (or libipt's relative time) */
	uint64_t a, b;
	uint8_t type, kind, flags, extra;
	int32_t code;
};

_Static_assert(sizeof(struct record) == 32, "records stay small");

struct page {
	struct page *next;
	size_t nr;
	struct record records[PAGE_RECORDS];
};

/* put() streams records in 16-byte stores (malloc aligns pages to 16), built
 * from this layout. */
_Static_assert(offsetof(struct page, records) % 16 == 0 && sizeof(struct record) % 16 == 0,
	       "records can be stored 16 bytes at a time");
_Static_assert(offsetof(struct record, time) == 0 && offsetof(struct record, a) == 8 &&
		       offsetof(struct record, b) == 16 && offsetof(struct record, type) == 24 &&
		       offsetof(struct record, kind) == 25 && offsetof(struct record, flags) == 26 &&
		       offsetof(struct record, extra) == 27 && offsetof(struct record, code) == 28,
	       "put() knows where each field is");

/* ---- PSB+ headers ---- */

struct psb_info {
	size_t end;  /* offset of the PSBEND */
	bool has_ip; /* the header's FUP: tracing is on, at ip */
	uint64_t ip;
	bool has_tsc;
	uint64_t tsc;
};

static uint64_t apply_ip(uint64_t last, const struct pt_packet_ip *p, bool *valid)
{
	*valid = true;
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffffull);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffffull);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (p->ip & 0xffffffffffffull);
	case pt_ipc_full:
		return p->ip;
	default:
		*valid = false;
		return last;
	}
}

/* Reads the PSB+ at offset (which must hold the PSB pattern): true when it
 * parses up to its PSBEND. */
static bool parse_psb(const uint8_t *buf, size_t size, size_t offset, const struct pt_config *base,
		      struct psb_info *out)
{
	struct pt_config config = *base;
	struct pt_packet_decoder *dec;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	if (offset >= size || size - offset < sizeof(psb_pattern))
		return false;
	config.begin = (uint8_t *)buf + offset;
	config.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return false;
	if (pt_pkt_sync_set(dec, 0) < 0)
		goto out;

	struct pt_packet pkt;

	if (pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0 || pkt.type != ppt_psb)
		goto out;
	for (int i = 0; i < 64; i++) {
		uint64_t pos;

		if (pt_pkt_get_offset(dec, &pos) < 0 || pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0)
			goto out;
		switch (pkt.type) {
		case ppt_psbend:
			out->end = offset + (size_t)pos;
			ok = true;
			goto out;
		case ppt_fup: {
			bool valid;
			uint64_t ip = apply_ip(0, &pkt.payload.ip, &valid);

			out->has_ip = valid;
			out->ip = ip;
			break;
		}
		case ppt_tsc:
			out->has_tsc = true;
			out->tsc = pkt.payload.tsc.tsc;
			break;
		case ppt_pad:
		case ppt_tma:
		case ppt_cbr:
		case ppt_mode:
		case ppt_pip:
		case ppt_vmcs:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_mnt:
			break;
		default:
			goto out; /* not a PSB+ header: a pattern inside other packets */
		}
	}
out:
	pt_pkt_free_decoder(dec);
	return ok;
}

size_t rv_pt_next_psb_pattern(const uint8_t *buf, size_t size, size_t from)
{
	const uint8_t *p;

	if (from >= size || size - from < sizeof(psb_pattern))
		return size;
	p = memmem(buf + from, size - from, psb_pattern, sizeof(psb_pattern));
	return p ? (size_t)(p - buf) : size;
}

/* The first PSB at or after from whose PSB+ parses; size if none. */
static size_t find_psb(const uint8_t *buf, size_t size, size_t from, const struct pt_config *base,
		       struct psb_info *info)
{
	for (size_t at; (at = rv_pt_next_psb_pattern(buf, size, from)) < size; from = at + 2)
		if (parse_psb(buf, size, at, base, info))
			return at;
	memset(info, 0, sizeof(*info));
	return size;
}

/* The PSB whose PSB+ header ends at psbend (libipt's read-ahead stops
 * there), or size when psbend is not at the end of one. */
static size_t psb_ending_at(const uint8_t *buf, size_t size, size_t psbend,
			    const struct pt_config *base)
{
	size_t lo = psbend > MAX_PSB_HEADER ? psbend - MAX_PSB_HEADER : 0;
	size_t best = size;

	if (psbend + 2 > size || buf[psbend] != 0x02 || buf[psbend + 1] != 0x23)
		return size;
	for (size_t at = lo; (at = rv_pt_next_psb_pattern(buf, psbend, at)) < psbend; at += 2)
		best = at;
	if (best == size)
		return size;

	struct psb_info info;

	if (!parse_psb(buf, size, best, base, &info) || info.end != psbend)
		return size;
	return best;
}

/* ---- chunks and the shared decoding state ---- */

struct chunk {
	uint64_t index;
	size_t begin, end;
	struct psb_info first; /* the PSB+ at begin */
	bool has_next;	       /* a PSB follows at end ... */
	struct psb_info next;  /* ... with this header */

	/* Written by the decoding thread; read by the sink's thread once
	 * published (under the pool's lock when threads decode). */
	struct page *pages, *last_page;
	bool claimed; /* a thread decodes it */
	bool done;
	bool passed_next; /* the decoder reached next.ip past its last packet */
	uint64_t insns, blocks, skipped_bytes;
	uint64_t dropped_jumps; /* jumps inside one function, not emitted */
	int status;
	struct rv_error err;
};

struct decode;

/* Chunks [consumed, created) are in the ring. The calling thread decodes
 * the chunk the sink is at itself when nobody has taken it, feeding the sink
 * as it goes; the other threads take chunks ahead of it and queue their
 * records. A queued chunk holds its whole output until the sink gets to it,
 * so memory is bounded by the ring: 2 * jobs chunks. */
struct pool {
	pthread_mutex_t lock;
	pthread_cond_t work, progress;
	pthread_t *threads;
	unsigned nr_threads;
	struct chunk *ring;
	size_t ring_size;
	uint64_t created, consumed; /* chunk counts */
	bool no_more, abort;
};

struct decode {
	const uint8_t *buf;
	size_t size;
	const struct rv_pt_decode_options *options;
	struct pt_config config; /* errata applied, blocks end at direct branches */
	size_t chunk_bytes;

	/* chunk boundaries: the next chunk starts at next_begin */
	size_t next_begin;
	struct psb_info next_first;
	uint64_t next_index;

	/* the sink's side */
	rv_pt_sink_fn sink;
	void *sink_ctx;
	struct rv_pt_stats *stats;
	uint32_t pid, tid;
	bool prev_passed;
	uint64_t insns_total; /* for max_insns (sequential decoding only) */
	bool stop;

	struct pool *pool; /* NULL: the calling thread decodes */
	struct page *free_pages;
	size_t nr_free_pages;
};

/* ---- what each decoding thread keeps ---- */

/* libipt's image lookup moves the section it finds to the front of the
 * image's list, so an image must not serve two threads at once: threads
 * decode with their own copies, with sections of their own when the caller
 * can build them (options.populate, into the thread's section cache), else
 * sharing the sections (pt_image_copy), which lock themselves. */
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

struct thread_state {
	struct length_slot lengths[LENGTH_CACHE_SIZE];
	struct rv_pt_code *code;
	const struct rv_pt_decode_options *options;
	struct pt_image_section_cache *iscache; /* the thread's, with populate */
	bool copy_images;
	struct image_copy *images;
	size_t nr_images, images_size;
};

static int thread_state_init(struct thread_state *t, const struct decode *d, bool copy_images,
			     struct rv_error *err);
static void thread_state_fini(struct thread_state *t);

/* The image this thread decodes `source` with. */
static struct pt_image *thread_image(struct thread_state *t, struct pt_image *source,
				     struct rv_error *err)
{
	if (!source || !t->copy_images)
		return source;
	for (size_t i = 0; i < t->nr_images; i++) {
		if (t->images[i].source == source)
			return t->images[i].copy;
	}
	if (t->nr_images == t->images_size) {
		size_t size = t->images_size ? 2 * t->images_size : 8;
		struct image_copy *images = realloc(t->images, size * sizeof(*images));

		if (!images) {
			rv_error_set(err, ENOMEM, "out of memory for the decoding threads' images");
			return NULL;
		}
		t->images = images;
		t->images_size = size;
	}

	struct pt_image *copy = pt_image_alloc(pt_image_name(source));

	if (!copy) {
		rv_error_set(err, ENOMEM, "out of memory for the decoding threads' images");
		return NULL;
	}
	if (t->iscache) {
		if (t->options->populate(t->options->populate_ctx, source, copy, t->iscache, err) <
		    0) {
			pt_image_free(copy);
			return NULL;
		}
	} else {
		int r = pt_image_copy(copy, source);

		if (r < 0) {
			pt_image_free(copy);
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

struct pending {
	bool valid;
	uint8_t kind;  /* enum rv_branch_kind */
	uint8_t flags; /* RV_BRANCH_IN_TX */
	uint8_t size;  /* the instruction's length, 0 if unknown */
	bool decoded;  /* size, direct and disp are known */
	bool direct;   /* target = from + size + disp */
	uint8_t mode;  /* enum pt_exec_mode */
	bool dropped;  /* a jump to be dropped wherever it goes (options->ignore_jumps) */
	int isid;
	int32_t disp;
	uint64_t from, time;
};

struct walker {
	struct decode *d;
	struct thread_state *thread;
	struct rv_pt_code *code;
	struct chunk *ch;
	struct pt_block_decoder *dec;
	struct page *page;

	struct pending pend;
	bool pend_fresh; /* pend is the block's just returned: no event since */
	/* The time of the decoder's position: of the last event (libipt's tick
	 * events say when it changed at a TNT or TIP). pt_blk_time() alone
	 * would not do: when an event follows a block, libipt has read up to
	 * that event, and its timing packets, before it returns the block. */
	uint64_t time;
	enum begin_state begin;
	bool direct; /* the chunk the sink is at: pages go to it at once */
	bool ignore_jumps; /* options->ignore_jumps */
	bool at_eos, in_tx, stop;
	uint32_t tail_blocks;
	uint64_t stall_offset; /* the decoder's offset, and blocks walked since it moved */
	uint32_t stall_blocks, stall_tick;
	uint64_t last_ip;	/* where the decoder was last seen, for errors */
	uint32_t pid;		/* the task decoded, for options->function_at */
	struct function_cache {
		bool valid;
		uint32_t pid;
		uint64_t start, end; /* the code of one function ... */
		uint64_t from, until; /* ... over these decoder times */
	} function;		/* function_at's last answer */
	uint64_t dropped_jumps; /* jumps inside one function, counted but not emitted */
	uint64_t insns, blocks; /* walked, added to the chunk's at its end */
	struct pt_image *image;
	int status; /* negative: a failure that stops decoding */
	struct rv_error *err;
};

static struct page *page_get(struct decode *d)
{
	struct page *p = NULL;

	if (d->pool)
		pthread_mutex_lock(&d->pool->lock);
	if (d->free_pages) {
		p = d->free_pages;
		d->free_pages = p->next;
		d->nr_free_pages--;
	}
	if (d->pool)
		pthread_mutex_unlock(&d->pool->lock);
	if (!p)
		p = malloc(sizeof(*p));
	if (p) {
		p->next = NULL;
		p->nr = 0;
	}
	return p;
}

/* Caller holds the pool's lock when there is a pool. */
static void page_put_locked(struct decode *d, struct page *p)
{
	if (d->nr_free_pages < MAX_FREE_PAGES) {
		p->next = d->free_pages;
		d->free_pages = p;
		d->nr_free_pages++;
	} else {
		free(p);
	}
}

static int consume_page(struct decode *d, struct chunk *ch, const struct page *p,
			struct rv_error *err);

/* Hands a full (or the last) page of a chunk over to the sink's side. */
static int publish(struct walker *w)
{
	struct decode *d = w->d;
	struct chunk *ch = w->ch;
	struct page *p = w->page;

	w->page = NULL;
	if (!p)
		return 0;
	if (!d->pool || w->direct) {
		int r = p->nr ? consume_page(d, ch, p, w->err) : 0;

		if (d->pool)
			pthread_mutex_lock(&d->pool->lock);
		page_put_locked(d, p);
		if (d->pool)
			pthread_mutex_unlock(&d->pool->lock);
		return r;
	}
	struct pool *pool = d->pool;

#ifdef __SSE2__
	_mm_sfence(); /* put() streamed this page: its records are out before it is handed over */
#endif
	pthread_mutex_lock(&pool->lock);
	if (ch->last_page)
		ch->last_page->next = p;
	else
		ch->pages = p;
	ch->last_page = p;
	/* Only the chunk the sink is at is waited for. */
	if (ch->index == pool->consumed)
		pthread_cond_broadcast(&pool->progress);
	bool abort = pool->abort;

	pthread_mutex_unlock(&pool->lock);
	return abort ? -ECANCELED : 0;
}

/* put()'s slot when the page is full or there is none yet. */
static struct record *slot_slow(struct walker *w)
{
	if (w->page && w->page->nr == PAGE_RECORDS) {
		int r = publish(w);

		if (r < 0) {
			w->status = r;
			w->stop = true;
			return NULL;
		}
	}
	if (!w->page) {
		w->page = page_get(w->d);
		if (!w->page) {
			w->status = rv_error_set(w->err, ENOMEM,
						 "out of memory while decoding Intel PT");
			w->stop = true;
			return NULL;
		}
	}
	return &w->page->records[w->page->nr++];
}

/* Appends a record to the walker's page; false (with w->status set) when
 * decoding must stop. A page that another thread's sink will read is written
 * around the cache (non-temporal stores): otherwise every line of it would
 * first be fetched from the sink's core, which last read it, and then go
 * back there, and that traffic costs more than decoding the branch. */
static inline bool put(struct walker *w, uint8_t type, uint8_t kind, uint8_t flags, uint8_t extra,
		       int32_t code, uint64_t a, uint64_t b, uint64_t time)
{
	struct page *p = w->page;
	struct record *r;

	if (__builtin_expect(!p || p->nr == PAGE_RECORDS, 0)) {
		r = slot_slow(w);
		if (!r)
			return false;
	} else {
		r = &p->records[p->nr++];
	}
#ifdef __SSE2__
	if (!w->direct && w->d->pool) {
		/* The record's bytes in registers (x86 is little-endian). */
		uint64_t tail = type | (uint64_t)kind << 8 | (uint64_t)flags << 16 |
				(uint64_t)extra << 24 | (uint64_t)(uint32_t)code << 32;

		_mm_stream_si128((__m128i *)r, _mm_set_epi64x((long long)a, (long long)time));
		_mm_stream_si128((__m128i *)r + 1, _mm_set_epi64x((long long)tail, (long long)b));
		return true;
	}
#endif
	/* Field by field: a record built elsewhere and copied whole would be
	 * read back in wider loads than it was written with, which stalls. */
	r->time = time;
	r->a = a;
	r->b = b;
	r->type = type;
	r->kind = kind;
	r->flags = flags;
	r->extra = extra;
	r->code = code;
	return true;
}

static uint64_t now(const struct walker *w)
{
	uint64_t t = 0;
	uint32_t lost_mtc, lost_cyc;

	/* -pte_no_time still gives libipt's relative time. */
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
		    span.end <= span.start || from < span.start || from >= span.end)
			return false;
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
	}
	return to - c->start < c->end - c->start;
}

static void emit_branch(struct walker *w, uint8_t kind, uint8_t flags, uint64_t from, uint64_t to,
			uint64_t time)
{
	const struct rv_pt_decode_options *o = w->d->options;

	/* A jump that stays in its function cannot change a call stack: it is
	 * counted here, in parallel, instead of reaching the sink. Jumps that
	 * begin or end tracing, and those at a seam (which the sink may drop),
	 * go on. */
	if ((kind == RV_BRANCH_JUMP || kind == RV_BRANCH_COND) && !flags && o->function_at &&
	    stays_in_function(w, time, from, to)) {
		w->dropped_jumps++;
		return;
	}
	put(w, REC_BRANCH, kind, flags, 0, 0, from, to, time);
}

static void emit_error(struct walker *w, int code, bool overflow, uint64_t offset, uint64_t ip,
		       uint64_t time)
{
	put(w, REC_ERROR, 0, 0, overflow ? REC_OVERFLOW : 0, code, offset, ip, time);
}

static void emit_task(struct walker *w, uint32_t pid, uint32_t tid)
{
	w->pid = pid;
	put(w, REC_TASK, 0, 0, 0, 0, pid, tid, w->time);
}

static void emit_begin_now(struct walker *w, uint64_t to, uint64_t time)
{
	uint8_t flags = RV_BRANCH_TRACE_BEGIN;

	if (w->begin == BEGIN_SEAM)
		flags |= REC_SEAM;
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

static void decode_pending(struct walker *w)
{
	struct pending *p = &w->pend;

	if (!p->valid || p->decoded)
		return;
	p->decoded = true;

	const struct rv_pt_insn *insn =
		rv_pt_code_get(w->code, p->isid, p->from, (enum pt_exec_mode)p->mode, NULL, 0);

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

/* The last PSB in [lo, hi) whose PSB+ parses; hi if none. */
static size_t last_psb_before(const struct decode *d, size_t lo, size_t hi)
{
	for (size_t at = hi; at-- > lo;) {
		if (d->buf[at] != 0x02 || at + sizeof(psb_pattern) > d->size ||
		    memcmp(d->buf + at, psb_pattern, sizeof(psb_pattern)) != 0)
			continue;
		/* the pattern's first byte: step back over a longer run */
		while (at >= lo + 2 && at - 2 + sizeof(psb_pattern) <= d->size &&
		       memcmp(d->buf + at - 2, psb_pattern, sizeof(psb_pattern)) == 0)
			at -= 2;

		struct psb_info info;

		if (parse_psb(d->buf, d->size, at, &d->config, &info))
			return at;
	}
	return hi;
}

/* The last TNT or TIP before the last OVF in [from, limit), read from the
 * PSB at `from`. */
static struct last_branch scan_for_overflow(const struct decode *d, size_t from, size_t limit)
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
				ip = apply_ip(last_ip, &pkt.payload.ip, &valid);
				if (valid)
					last_ip = ip;
				cur.kind = LAST_TIP;
				cur.ip = valid ? ip : 0;
				break;
			case ppt_fup:
			case ppt_tip_pge:
			case ppt_tip_pgd:
				ip = apply_ip(last_ip, &pkt.payload.ip, &valid);
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
	const struct decode *d = w->d;
	uint64_t sync = 0;
	size_t hi = (size_t)limit;

	(void)pt_blk_get_sync_offset(w->dec, &sync);
	sync += w->ch->begin;
	if (limit <= sync || limit > w->ch->end)
		return (struct last_branch){ 0 };
	for (int tries = 0; tries < 4; tries++) {
		size_t psb = last_psb_before(d, (size_t)sync, hi);

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

	(void)pt_blk_get_offset(w->dec, &offset);
	offset += w->ch->begin;

	size_t psb = psb_ending_at(w->d->buf, w->ch->end, (size_t)offset, &w->d->config);

	return psb < w->ch->end ? psb : offset;
}

static int resolve_task(struct walker *w, uint64_t tsc)
{
	const struct rv_pt_decode_options *o = w->d->options;
	uint32_t pid = o->pid, tid = o->tid;
	struct pt_image *image = o->image;

	if (o->resolve) {
		uint64_t time = o->time_conv ? rv_perf_tsc_to_time(o->time_conv, tsc) : tsc;
		int r = o->resolve(o->resolve_ctx, time, &pid, &tid, &image, w->err);

		if (r < 0) {
			w->status = r;
			w->stop = true;
			return r;
		}
	}
	if (image != w->image) {
		struct pt_image *own = thread_image(w->thread, image, w->err);
		int r = image && !own ? -pte_nomem : pt_blk_set_image(w->dec, own);

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
	struct psb_info info;
	const struct decode *d = w->d;

	w->pend.valid = false;
	w->at_eos = false;
	w->in_tx = false;
	w->tail_blocks = 0;
	w->begin = (status & pts_ip_suppressed) ? BEGIN_NONE : begin;
	(void)pt_blk_get_sync_offset(w->dec, &sync);
	sync += w->ch->begin;
	if (sync == w->ch->begin)
		info = w->ch->first;
	else if (!parse_psb(d->buf, d->size, (size_t)sync, &d->config, &info))
		memset(&info, 0, sizeof(info));
	w->time = info.has_tsc ? info.tsc : now(w);
	return resolve_task(w, w->time);
}

static void set_pending(struct walker *w, const struct pt_block *b)
{
	struct pending *p = &w->pend;
	const struct rv_pt_insn *insn = NULL;
	uint8_t kind;

	switch (b->iclass) {
	case ptic_call:
		kind = RV_BRANCH_CALL;
		break;
	case ptic_return:
		kind = RV_BRANCH_RETURN;
		break;
	case ptic_jump:
		kind = RV_BRANCH_JUMP;
		break;
	case ptic_cond_jump:
		if (!b->truncated) {
			/* Most blocks end here: the length is looked up if needed. */
			uint8_t flags = w->in_tx ? RV_BRANCH_IN_TX : 0;

			*p = (struct pending){ .valid = true,
					       .kind = RV_BRANCH_COND,
					       .flags = flags,
					       .mode = (uint8_t)b->mode,
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
	p->dropped = w->ignore_jumps && (kind == RV_BRANCH_COND || kind == RV_BRANCH_JUMP) &&
		     !p->flags;
	p->from = b->end_ip;
	p->time = w->time;
	w->pend_fresh = true;
	p->isid = b->isid;
	p->mode = (uint8_t)b->mode;
	p->decoded = insn != NULL;
	p->size = insn ? insn->size : 0;
	p->direct = insn && (insn->cls == RV_PT_INSN_JUMP || insn->cls == RV_PT_INSN_CALL ||
			     insn->cls == RV_PT_INSN_COND);
	p->disp = insn ? insn->disp : 0;
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

static void on_block(struct walker *w, const struct pt_block *b, int status)
{
	struct chunk *ch = w->ch;

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
			resolve_pending(w, b->ip);
			if (n > 0)
				emit_begin(w, b->ip, w->time);
			w->insns += (uint64_t)n;
			ch->passed_next = true;
			w->stop = true;
			return;
		}
		if (++w->tail_blocks > MAX_TAIL_BLOCKS) {
			w->stop = true;
			return;
		}
	} else if (w->at_eos && ++w->tail_blocks > MAX_TAIL_BLOCKS) {
		w->stop = true;
		return;
	}
	resolve_pending(w, b->ip);
	emit_begin(w, b->ip, w->time);
	w->insns += b->ninsn;
	w->blocks++;
	w->last_ip = b->end_ip;
	set_pending(w, b);
}

static void on_event(struct walker *w, const struct pt_event *ev)
{
	/* The event's own time: libipt's current time has moved on to the
	 * next event already when it tells whether one is pending. */
	uint64_t time = ev->has_tsc ? ev->tsc : w->time;
	bool fresh = w->pend_fresh;

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
	case ptev_tick:
		/* The time changed at the TNT or TIP that ended the last block. */
		if (fresh && w->pend.valid)
			w->pend.time = time;
		break;
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

		(void)pt_blk_get_offset(w->dec, &offset);
		to = overflow_target(w, w->ch->begin + offset);
		resolve_pending(w, to);
		if (to)
			w->last_ip = to;
		emit_error(w, -pte_overflow, true, position(w), w->last_ip, time);
		/* Timing restarts with the packets after the OVF (a TSC). */
		w->time = now(w);
		w->begin = BEGIN_NONE;
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
		w->in_tx = ev->variant.tsx.speculative;
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
	struct decode *d = w->d;
	struct chunk *ch = w->ch;
	uint64_t offset = 0, sync = 0, abs_offset;
	int status;

	(void)pt_blk_get_offset(w->dec, &offset);
	(void)pt_blk_get_sync_offset(w->dec, &sync);
	abs_offset = ch->begin + offset;
	resolve_pending(w, pending_target(w));
	w->pend.valid = false;
	emit_error(w, code, false, position(w), w->last_ip, w->time);

	for (int tries = 0;; tries++) {
		/* Read ahead into a PSB+ (past the last packet before it):
		 * resume at that PSB, as a chunk boundary there would. */
		size_t psb = psb_ending_at(d->buf, ch->end, (size_t)abs_offset, &d->config);

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
		(void)pt_blk_get_offset(w->dec, &offset);
		emit_error(w, status, false, ch->begin + offset, 0, w->time);
		sync = offset;
	}
}

static int drain_events(struct walker *w, int status)
{
	while (status >= 0 && (status & pts_event_pending) && !w->stop) {
		struct pt_event ev;

		status = pt_blk_event(w->dec, &ev, sizeof(ev));
		if (status < 0)
			break;
		on_event(w, &ev);
		if (status & pts_eos)
			w->at_eos = true;
	}
	return status;
}

/* True when the decoder has walked MAX_TAIL_BLOCKS blocks without reading a
 * packet: code that loops with no branch to record, which real code does not
 * do for long; the image does not fit the trace (a binary mapped at another
 * place, or changed), and decoding it would never end. */
static bool stalled(struct walker *w)
{
	uint64_t offset;

	/* The offset only grows, so looking every STALL_CHECK blocks tells
	 * as well whether it moved in between, at a fraction of the cost. */
	if (++w->stall_tick % STALL_CHECK)
		return false;
	if (pt_blk_get_offset(w->dec, &offset) < 0)
		return false;
	if (offset != w->stall_offset) {
		w->stall_offset = offset;
		w->stall_blocks = 0;
		return false;
	}
	w->stall_blocks += STALL_CHECK;
	return w->stall_blocks > MAX_TAIL_BLOCKS;
}

static void decode_chunk(struct walker *w)
{
	struct decode *d = w->d;
	struct chunk *ch = w->ch;
	struct pt_config config = d->config;
	uint64_t max_insns = d->options->max_insns;
	int status;

	config.begin = (uint8_t *)d->buf + ch->begin;
	config.end = (uint8_t *)d->buf + ch->end;
	w->dec = pt_blk_alloc_decoder(&config);
	if (!w->dec) {
		w->status = rv_error_set(w->err, ENOMEM, "cannot set up libipt's block decoder");
		return;
	}
	w->image = NULL;
	status = pt_blk_sync_set(w->dec, 0);
	if (status >= 0 && after_sync(w, status, BEGIN_SEAM) < 0)
		w->stop = true;

	while (!w->stop) {
		if (status < 0) {
			if (status == -pte_eos)
				break;
			status = on_error(w, status);
			if (status >= 0 && after_sync(w, status, BEGIN_REAL) < 0)
				break;
			continue;
		}
		if (status & pts_event_pending) {
			status = drain_events(w, status);
			if (status < 0 || w->stop)
				continue;
		}

		struct pt_block block;

		/* libipt zeroes the block first, also on errors */
		status = pt_blk_next(w->dec, &block, sizeof(block));
		on_block(w, &block, status);
		if (status >= 0 && (status & pts_eos))
			w->at_eos = true;
		if (status >= 0 && !w->at_eos && stalled(w))
			status = -pte_bad_query;
		if (max_insns && d->insns_total + w->insns >= max_insns) {
			d->stop = true;
			break;
		}
	}
	if (w->status >= 0 && w->page && w->page->nr) {
		int r = publish(w);

		if (r < 0)
			w->status = r;
	}
	if (w->page) {
		if (d->pool)
			pthread_mutex_lock(&d->pool->lock);
		page_put_locked(d, w->page);
		if (d->pool)
			pthread_mutex_unlock(&d->pool->lock);
		w->page = NULL;
	}
	pt_blk_free_decoder(w->dec);
	w->dec = NULL;
	ch->insns += w->insns;
	ch->blocks += w->blocks;
	ch->dropped_jumps += w->dropped_jumps;
	w->insns = w->blocks = w->dropped_jumps = 0;
}

static void walker_init(struct walker *w, struct decode *d, struct thread_state *t,
			struct chunk *ch, struct rv_error *err)
{
	memset(w, 0, sizeof(*w));
	w->d = d;
	w->thread = t;
	w->code = t->code;
	w->ch = ch;
	w->err = err;
	w->pid = d->options->pid;
	w->ignore_jumps = d->options->ignore_jumps;
}

static int thread_state_init(struct thread_state *t, const struct decode *d, bool copy_images,
			     struct rv_error *err)
{
	memset(t, 0, sizeof(*t));
	t->options = d->options;
	t->copy_images = copy_images;
	if (copy_images && d->options->populate) {
		t->iscache = pt_iscache_alloc("rearview decoding thread");
		if (!t->iscache)
			return rv_error_set(err, ENOMEM, "cannot set up a section cache");
	}
	t->code = rv_pt_code_new(t->iscache ? t->iscache : d->options->iscache);
	if (!t->code) {
		pt_iscache_free(t->iscache);
		t->iscache = NULL;
		return rv_error_set(err, ENOMEM, "cannot set up the instruction decoder (Zydis)");
	}
	return 0;
}

static void thread_state_fini(struct thread_state *t)
{
	for (size_t i = 0; i < t->nr_images; i++)
		pt_image_free(t->images[i].copy);
	free(t->images);
	rv_pt_code_free(t->code);
	pt_iscache_free(t->iscache);
	memset(t, 0, sizeof(*t));
}

/* ---- the sink's side ---- */

static void stats_add_error(struct rv_pt_stats *s, uint64_t offset, uint64_t ip, int code,
			    bool overflow)
{
	if (overflow)
		s->overflows++;
	else
		s->errors++;
	if (code == -pte_nomap)
		s->nomap++;
	if (s->nr_sites < RV_PT_MAX_ERROR_SITES) {
		struct rv_pt_error_site *site = &s->sites[s->nr_sites++];

		site->offset = offset;
		site->ip = ip;
		site->code = overflow ? 0 : code;
	}
}

static int consume_page(struct decode *d, struct chunk *ch, const struct page *p,
			struct rv_error *err)
{
	const struct rv_perf_time_conv *tc = d->options->time_conv;
	struct rv_pt_stats *s = d->stats;
	uint64_t kinds[RV_BRANCH_TX_ABORT + 1] = { 0 };
	uint64_t first = s->first_time, last = s->last_time;
	int ret = 0;

	for (size_t i = 0; i < p->nr; i++) {
		const struct record *r = &p->records[i];
		struct rv_event ev;

		/* Pages from another thread come from another core's cache. */
		__builtin_prefetch(r + 16);

		if (r->type == REC_BRANCH) {
			uint8_t flags = r->flags;

			if (__builtin_expect(flags & REC_SEAM, 0)) {
				if (ch->index > 0 && d->prev_passed)
					continue;
				flags &= (uint8_t)~REC_SEAM;
			}
			ev.kind = RV_EVENT_BRANCH;
			ev.branch.kind = (enum rv_branch_kind)r->kind;
			ev.branch.flags = flags;
			ev.branch.from = (struct rv_branch_end){ .ip = r->a };
			ev.branch.to = (struct rv_branch_end){ .ip = r->b };
			if (r->kind <= RV_BRANCH_TX_ABORT)
				kinds[r->kind]++;
		} else if (r->type == REC_TASK) {
			d->pid = (uint32_t)r->a;
			d->tid = (uint32_t)r->b;
			continue;
		} else {
			bool overflow = r->extra & REC_OVERFLOW;

			memset(&ev, 0, sizeof(ev));
			ev.kind = RV_EVENT_TRACE_ERROR;
			ev.error.message = overflow ? "overflow" : rv_pt_strerror(r->code);
			ev.error.offset = r->a;
			ev.error.ip = r->b;
			ev.error.overflow = overflow;
			stats_add_error(s, r->a, r->b, r->code, overflow);
		}
		ev.pid = d->pid;
		ev.tid = d->tid;
		ev.time = tc ? rv_perf_tsc_to_time(tc, r->time) : r->time;
		if (!first || ev.time < first)
			first = ev.time;
		if (ev.time > last)
			last = ev.time;
		ret = d->sink(d->sink_ctx, &ev, err);
		if (ret < 0)
			break;
	}
	s->first_time = first;
	s->last_time = last;
	s->calls += kinds[RV_BRANCH_CALL];
	s->returns += kinds[RV_BRANCH_RETURN];
	s->jumps += kinds[RV_BRANCH_JUMP] + kinds[RV_BRANCH_COND];
	s->syscalls += kinds[RV_BRANCH_SYSCALL];
	s->interrupts += kinds[RV_BRANCH_INTERRUPT] + kinds[RV_BRANCH_SOFT_INT];
	return ret;
}

/* Describes the next chunk; false when the buffer is used up. */
static bool next_chunk(struct decode *d, struct chunk *ch)
{
	size_t from;

	if (d->next_begin >= d->size)
		return false;
	memset(ch, 0, sizeof(*ch));
	ch->index = d->next_index++;
	ch->begin = d->next_begin;
	ch->first = d->next_first;
	from = ch->begin +
	       (d->chunk_bytes > sizeof(psb_pattern) ? d->chunk_bytes : sizeof(psb_pattern));
	if (from < ch->begin || from >= d->size) {
		ch->end = d->size;
	} else {
		ch->end = find_psb(d->buf, d->size, from, &d->config, &ch->next);
		ch->has_next = ch->end < d->size;
	}
	d->next_begin = ch->end;
	d->next_first = ch->next;
	return true;
}

static void finish_chunk_stats(struct decode *d, const struct chunk *ch)
{
	d->stats->chunks++;
	d->stats->insns += ch->insns;
	d->stats->blocks += ch->blocks;
	d->stats->jumps += ch->dropped_jumps;
	d->stats->skipped_bytes += ch->skipped_bytes;
	d->insns_total += ch->insns;
	d->prev_passed = ch->passed_next;
}

static int decode_sequential(struct decode *d, struct rv_error *err)
{
	struct thread_state t;
	struct chunk ch;
	int ret = thread_state_init(&t, d, false, err);

	if (ret < 0)
		return ret;
	while (!d->stop && next_chunk(d, &ch)) {
		struct walker w;

		walker_init(&w, d, &t, &ch, err);
		decode_chunk(&w);
		if (w.status < 0) {
			ret = w.status;
			break;
		}
		finish_chunk_stats(d, &ch);
	}
	thread_state_fini(&t);
	return ret;
}

/* The first chunk nobody decodes yet, from the sink's (caller) or from the
 * one after it; NULL if none. Under the pool's lock. */
static struct chunk *claim_chunk(struct pool *pool, bool caller)
{
	for (uint64_t i = pool->consumed + (caller ? 0 : 1); i < pool->created; i++) {
		struct chunk *ch = &pool->ring[i % pool->ring_size];

		if (!ch->claimed) {
			ch->claimed = true;
			return ch;
		}
	}
	return NULL;
}

/* Decodes a chunk this thread claimed; under the pool's lock, which it
 * drops meanwhile. */
static void decode_claimed(struct decode *d, struct thread_state *t, struct chunk *ch, bool direct,
			   struct rv_error *err)
{
	struct pool *pool = d->pool;
	struct walker w;

	pthread_mutex_unlock(&pool->lock);
	walker_init(&w, d, t, ch, err);
	w.direct = direct;
	decode_chunk(&w);
	pthread_mutex_lock(&pool->lock);
	ch->status = w.status;
	ch->done = true;
	pthread_cond_broadcast(&pool->progress);
}

static void *worker_main(void *arg)
{
	struct decode *d = arg;
	struct pool *pool = d->pool;
	struct thread_state t;
	struct rv_error init_err;
	int init = thread_state_init(&t, d, true, &init_err);

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct chunk *ch = NULL;

		while (!pool->abort && !(ch = claim_chunk(pool, false)) && !pool->no_more)
			pthread_cond_wait(&pool->work, &pool->lock);
		if (pool->abort || !ch)
			break;
		if (init < 0) {
			ch->err = init_err;
			ch->status = init;
			ch->done = true;
			pthread_cond_broadcast(&pool->progress);
			continue;
		}
		decode_claimed(d, &t, ch, false, &ch->err);
	}
	pthread_mutex_unlock(&pool->lock);
	if (init == 0)
		thread_state_fini(&t);
	return NULL;
}

static void pool_stop(struct decode *d)
{
	struct pool *pool = d->pool;

	pthread_mutex_lock(&pool->lock);
	pool->abort = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->nr_threads; i++)
		pthread_join(pool->threads[i], NULL);
	/* pages still queued in the ring */
	for (size_t i = 0; i < pool->ring_size; i++) {
		struct page *p = pool->ring[i].pages;

		while (p) {
			struct page *next = p->next;

			free(p);
			p = next;
		}
		pool->ring[i].pages = NULL;
	}
}

/* The sink's side of parallel decoding, on the calling thread, which
 * decodes too: the chunk the sink is at when nobody has taken it, else one
 * ahead while the chunk the sink is at has nothing to hand over yet. */
static int run_caller(struct decode *d, struct thread_state *t, struct rv_error *err)
{
	struct pool *pool = d->pool;
	int ret = 0;

	pthread_mutex_lock(&pool->lock);
	while (ret == 0 && pool->consumed < pool->created) {
		struct chunk *ch = &pool->ring[pool->consumed % pool->ring_size];

		if (!ch->claimed) {
			ch->claimed = true;
			decode_claimed(d, t, ch, true, err);
			if (ch->status < 0) {
				ret = ch->status;
				break;
			}
			continue;
		}
		if (ch->pages) {
			struct page *p = ch->pages;

			ch->pages = p->next;
			if (!ch->pages)
				ch->last_page = NULL;
			pthread_mutex_unlock(&pool->lock);
			ret = consume_page(d, ch, p, err);
			pthread_mutex_lock(&pool->lock);
			page_put_locked(d, p);
			continue;
		}
		if (ch->done) {
			if (ch->status < 0) {
				ret = ch->status;
				if (err)
					*err = ch->err;
				break;
			}
			finish_chunk_stats(d, ch);
			pool->consumed++;
			if (!pool->no_more) {
				/* The slot is free and no thread looks at it
				 * before `created` counts it. */
				struct chunk *slot = &pool->ring[pool->created % pool->ring_size];

				pthread_mutex_unlock(&pool->lock);
				bool more = next_chunk(d, slot);

				pthread_mutex_lock(&pool->lock);
				if (more)
					pool->created++;
				else
					pool->no_more = true;
			}
			pthread_cond_broadcast(&pool->work);
			continue;
		}
		/* Another thread is at it and has nothing for the sink yet. */
		struct chunk *ahead = claim_chunk(pool, false);

		if (ahead) {
			decode_claimed(d, t, ahead, false, &ahead->err);
			continue;
		}
		pthread_cond_wait(&pool->progress, &pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

static int decode_parallel(struct decode *d, unsigned jobs, struct rv_error *err)
{
	struct pool pool;
	struct thread_state t;
	int ret;

	memset(&pool, 0, sizeof(pool));
	pool.ring_size = 2 * (size_t)jobs;
	pool.ring = calloc(pool.ring_size, sizeof(*pool.ring));
	pool.threads = calloc(jobs, sizeof(*pool.threads));
	if (!pool.ring || !pool.threads) {
		free(pool.ring);
		free(pool.threads);
		return rv_error_set(err, ENOMEM, "out of memory for %u decoding threads", jobs);
	}
	ret = thread_state_init(&t, d, true, err);
	if (ret < 0) {
		free(pool.ring);
		free(pool.threads);
		return ret;
	}
	pthread_mutex_init(&pool.lock, NULL);
	pthread_cond_init(&pool.work, NULL);
	pthread_cond_init(&pool.progress, NULL);
	d->pool = &pool;

	/* Describe the first chunks before any thread starts. */
	while (pool.created < pool.ring_size) {
		if (!next_chunk(d, &pool.ring[pool.created % pool.ring_size])) {
			pool.no_more = true;
			break;
		}
		pool.created++;
	}
	/* jobs threads in all: the calling one and jobs - 1 more */
	for (unsigned i = 0; i + 1 < jobs; i++) {
		if (pthread_create(&pool.threads[i], NULL, worker_main, d) != 0) {
			ret = rv_error_set(err, EAGAIN, "cannot start a decoding thread");
			break;
		}
		pool.nr_threads++;
	}
	if (ret == 0)
		ret = run_caller(d, &t, err);

	pool_stop(d);
	thread_state_fini(&t);
	while (d->free_pages) {
		struct page *p = d->free_pages;

		d->free_pages = p->next;
		free(p);
	}
	d->nr_free_pages = 0;
	pthread_cond_destroy(&pool.progress);
	pthread_cond_destroy(&pool.work);
	pthread_mutex_destroy(&pool.lock);
	free(pool.ring);
	free(pool.threads);
	d->pool = NULL;
	return ret;
}

int rv_pt_decode(const void *buf, size_t size, const struct rv_pt_decode_options *options,
		 rv_pt_sink_fn sink, void *sink_ctx, struct rv_pt_stats *stats,
		 struct rv_error *err)
{
	struct decode d;
	struct psb_info first;
	unsigned jobs;
	int ret;

	memset(stats, 0, sizeof(*stats));
	if (!options || !sink || (!buf && size))
		return rv_error_set(err, EINVAL, "rv_pt_decode needs a buffer, options and a sink");
	memset(&d, 0, sizeof(d));
	d.buf = buf;
	d.size = size;
	d.options = options;
	d.sink = sink;
	d.sink_ctx = sink_ctx;
	d.stats = stats;
	d.pid = options->pid;
	d.tid = options->tid;
	d.chunk_bytes = options->chunk_bytes ? options->chunk_bytes : DEFAULT_CHUNK_BYTES;
	d.config = options->config;
	d.config.size = sizeof(d.config);
	/* A CPU newer than libipt's errata table has none libipt knows of. */
	if (d.config.cpu.vendor == pcv_intel && pt_cpu_errata(&d.config.errata, &d.config.cpu) < 0)
		memset(&d.config.errata, 0, sizeof(d.config.errata));
	/* A PSB+ written between TIP.PGD and TIP.PGE may hold a FUP (erratum
	 * BDM70 and its kin; VM entries do it too). Decoding through it, that
	 * FUP is harmless; synchronising on it (a chunk starting there) would
	 * start with tracing on and fail at the TIP.PGE. libipt's workaround
	 * ignores such a FUP when a TIP.PGE follows, whatever the CPU. */
	d.config.errata.bdm70 = 1;
	d.config.flags.variant.block.end_on_call = 1;
	/* Tick events say when the time changed at a TNT or TIP; without MTC
	 * or CYC calibration libipt's time moves at TSC packets only, which
	 * come with events (PSB+, TIP.PGE), and the ticks would cost a time
	 * query per branch for nothing. */
	d.config.flags.variant.block.enable_tick_events = d.config.mtc_freq || d.config.nom_freq ||
							  d.config.cpuid_0x15_eax ||
							  d.config.cpuid_0x15_ebx;
	d.config.flags.variant.block.end_on_jump = !options->ignore_jumps;
	d.config.begin = (uint8_t *)buf;
	d.config.end = (uint8_t *)buf + size;
	stats->bytes = size;

	d.next_begin = size ? find_psb(d.buf, size, 0, &d.config, &first) : 0;
	d.next_first = first;
	stats->skipped_bytes = d.next_begin;
	if (d.next_begin >= size)
		return 0;

	jobs = options->jobs > MAX_JOBS ? MAX_JOBS : options->jobs;
	if (options->max_insns)
		jobs = 1; /* the limit is counted in buffer order */
	if (jobs <= 1)
		ret = decode_sequential(&d, err);
	else
		ret = decode_parallel(&d, jobs, err);
	while (d.free_pages) {
		struct page *p = d.free_pages;

		d.free_pages = p->next;
		free(p);
	}
	return ret;
}

/* ---- the rest of the contract ---- */

void rv_pt_stats_merge(struct rv_pt_stats *a, const struct rv_pt_stats *b)
{
	a->bytes += b->bytes;
	a->chunks += b->chunks;
	a->insns += b->insns;
	a->blocks += b->blocks;
	a->calls += b->calls;
	a->returns += b->returns;
	a->jumps += b->jumps;
	a->syscalls += b->syscalls;
	a->interrupts += b->interrupts;
	a->errors += b->errors;
	a->overflows += b->overflows;
	a->nomap += b->nomap;
	a->skipped_bytes += b->skipped_bytes;
	if (b->first_time && (!a->first_time || b->first_time < a->first_time))
		a->first_time = b->first_time;
	if (b->last_time > a->last_time)
		a->last_time = b->last_time;
	for (size_t i = 0; i < b->nr_sites && a->nr_sites < RV_PT_MAX_ERROR_SITES; i++)
		a->sites[a->nr_sites++] = b->sites[i];
}

uint64_t rv_pt_count_packets(const void *buf, size_t size, const struct pt_config *config)
{
	struct pt_config c;
	struct pt_packet_decoder *dec;
	uint64_t packets = 0;
	int status;

	if (!buf || !size)
		return 0;
	if (config)
		c = *config;
	else
		pt_config_init(&c);
	c.size = sizeof(c);
	c.begin = (uint8_t *)buf;
	c.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&c);
	if (!dec)
		return 0;
	status = pt_pkt_sync_forward(dec);
	while (status != -pte_eos) {
		struct pt_packet pkt;

		if (status < 0) {
			status = pt_pkt_sync_forward(dec);
			continue;
		}
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status >= 0)
			packets++;
	}
	pt_pkt_free_decoder(dec);
	return packets;
}

static int parse_number(const char *text, const char **end, unsigned long *out)
{
	char *e;

	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	*out = strtoul(text, &e, 0);
	if (errno || e == text)
		return -1;
	*end = e;
	return 0;
}

int rv_pt_cpu_parse(const char *text, struct pt_config *config, struct rv_error *err)
{
	unsigned long family, model, stepping;
	const char *p = text;
	const char *what =
		"FAMILY/MODEL/STEPPING (6/142/10) or perf's cpuid (GenuineIntel,6,142,10)";

	if (!text || !config)
		return rv_error_set(err, EINVAL, "no CPU given; give %s", what);
	if (strncmp(p, "GenuineIntel,", 13) == 0) {
		p += 13;
		if (parse_number(p, &p, &family) < 0 || *p++ != ',' ||
		    parse_number(p, &p, &model) < 0 || *p++ != ',' ||
		    parse_number(p, &p, &stepping) < 0 || (*p != '\0' && *p != ','))
			return rv_error_set(err, EINVAL, "cannot read the CPU '%s'; give %s", text,
					    what);
	} else if (strchr(p, ',')) {
		return rv_error_set(err, EINVAL,
				    "the CPU '%s' is not Intel's; Intel PT traces come from "
				    "GenuineIntel CPUs",
				    text);
	} else {
		if (parse_number(p, &p, &family) < 0 || *p++ != '/' ||
		    parse_number(p, &p, &model) < 0 || *p++ != '/' ||
		    parse_number(p, &p, &stepping) < 0 || *p != '\0')
			return rv_error_set(err, EINVAL, "cannot read the CPU '%s'; give %s", text,
					    what);
	}
	if (family > UINT16_MAX || model > UINT8_MAX || stepping > UINT8_MAX)
		return rv_error_set(err, ERANGE,
				    "the CPU '%s' is out of range (family < 65536, model and "
				    "stepping < 256)",
				    text);
	config->cpu.vendor = pcv_intel;
	config->cpu.family = (uint16_t)family;
	config->cpu.model = (uint8_t)model;
	config->cpu.stepping = (uint8_t)stepping;
	memset(&config->errata, 0, sizeof(config->errata));
	/* libipt 2.0 refuses models newer than its table (Sapphire Rapids and
	 * later): their trace decodes without errata workarounds. */
	if (pt_cpu_errata(&config->errata, &config->cpu) < 0)
		memset(&config->errata, 0, sizeof(config->errata));
	return 0;
}

const char *rv_pt_strerror(int code)
{
	switch (pt_errcode(code < 0 ? code : -code)) {
	case pte_ok:
		return "no error";
	case pte_nomap:
		return "no code mapped where the trace went (a binary or the vdso is missing, or "
		       "the mappings are incomplete)";
	case pte_bad_opc:
		return "unknown packet (the trace is corrupt)";
	case pte_bad_packet:
		return "unknown packet payload (the trace is corrupt)";
	case pte_bad_context:
		return "unexpected packet (the trace is corrupt)";
	case pte_bad_query:
		return "the trace does not fit the code (a binary changed since the recording, or "
		       "the trace is corrupt)";
	case pte_bad_insn:
		return "cannot decode the instruction there (a binary changed since the "
		       "recording?)";
	case pte_retstack_empty:
		return "a compressed return without a call (the trace does not fit the code)";
	case pte_bad_retcomp:
		return "a bad compressed return (the trace does not fit the code)";
	case pte_nosync:
		return "no PSB to start decoding at";
	case pte_eos:
		return "the trace ends here";
	case pte_overflow:
		return "overflow: the hardware lost trace";
	case pte_no_enable:
		return "trace without a start of tracing (the trace is corrupt)";
	case pte_event_ignored:
		return "an event was skipped (the trace is corrupt)";
	case pte_noip:
	case pte_ip_suppressed:
		return "the trace does not say where execution went";
	case pte_bad_status_update:
		return "a bad PSB+ status (the trace is corrupt)";
	case pte_nomem:
		return "out of memory";
	default:
		return pt_errstr(pt_errcode(code < 0 ? code : -code));
	}
}
