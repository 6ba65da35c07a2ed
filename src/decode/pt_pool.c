/* pt_pool.c: a buffer decoded chunk by chunk, by one thread or by a pool of
 * them, and the sink's side: each chunk's records turned into rv_events in
 * buffer order, with the seams between chunks stitched (see
 * pt_decoder_internal.h).
 *
 * Chunks [consumed, created) are in a ring of 2 * jobs. The calling thread
 * decodes the chunk the sink is at itself when nobody has taken it, feeding
 * the sink as it goes; the other threads take chunks ahead of it and queue
 * their pages. A queued chunk holds its whole output until the sink gets to
 * it, so memory is bounded by the ring.
 *
 * Not here: walking a chunk (pt_walk.c), PSB+ headers (pt_psb.c), the
 * decoding's configuration (pt_decoder.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "decode/pt_decoder.h"
#include "decode/pt_decoder_internal.h"

/* Free pages kept for reuse. */
#define MAX_FREE_PAGES 128

/* The decoding threads and the ring of chunks they share. */
struct ptd_pool {
	pthread_mutex_t lock;
	pthread_cond_t work, progress;
	pthread_t *threads;
	unsigned nr_threads;
	struct ptd_chunk *ring;
	size_t ring_size;
	uint64_t created, consumed; /* chunk counts */
	bool no_more, abort;
};

/* ---- pages ---- */

struct ptd_page *ptd_page_get(struct ptd_decode *d)
{
	struct ptd_page *p = NULL;

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
static void page_put_locked(struct ptd_decode *d, struct ptd_page *p)
{
	if (d->nr_free_pages < MAX_FREE_PAGES) {
		p->next = d->free_pages;
		d->free_pages = p;
		d->nr_free_pages++;
	} else {
		free(p);
	}
}

void ptd_page_put(struct ptd_decode *d, struct ptd_page *p)
{
	if (d->pool)
		pthread_mutex_lock(&d->pool->lock);
	page_put_locked(d, p);
	if (d->pool)
		pthread_mutex_unlock(&d->pool->lock);
}

/* Frees a list of pages. */
static void free_pages(struct ptd_page *p)
{
	while (p) {
		struct ptd_page *next = p->next;

		free(p);
		p = next;
	}
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

/* Events handed to the sink's batch form at a time: enough that the call
 * costs nothing per event, few enough to stay in the cache (96 bytes each). */
#define SINK_BATCH 256

/* What a page adds to the stats as its records become events. */
struct page_state {
	uint64_t first, last;	       /* the events' times, as stats.first/last_time */
	uint64_t kinds[UINT8_MAX + 1]; /* branches by rv_branch_kind (a record's byte) */
};

/* An event's time into the page's first and last. */
static inline void page_time(struct page_state *ps, uint64_t time)
{
	if (!ps->first || time < ps->first)
		ps->first = time;
	if (time > ps->last)
		ps->last = time;
}

/* Record r, a PTD_REC_ERROR, as an event (all of it: the rest zero). */
static void error_event(struct ptd_decode *d, const struct ptd_record *r, struct rv_event *ev)
{
	bool overflow = r->extra & PTD_REC_OVERFLOW;

	memset(ev, 0, sizeof(*ev));
	ev->kind = RV_EVENT_TRACE_ERROR;
	ev->pid = d->pid;
	ev->tid = d->tid;
	ev->error.message = overflow ? "overflow" : rv_pt_strerror(r->code);
	ev->error.offset = r->a;
	ev->error.ip = r->b;
	ev->error.overflow = overflow;
	stats_add_error(d->stats, r->a, r->b, r->code, overflow);
}

/* Whether a PTD_REC_BRANCH with PTD_REC_SEAM makes no event: the seam's
 * begin that the previous chunk already gave. */
static bool seam_dropped(const struct ptd_decode *d, const struct ptd_chunk *ch)
{
	return ch->index > 0 && d->prev_passed;
}

/* The page's records one by one into the sink. */
static int consume_one_by_one(struct ptd_decode *d, const struct ptd_chunk *ch,
			      const struct ptd_page *p, struct page_state *ps, struct rv_error *err)
{
	const struct rv_perf_tsc_conv tc = rv_perf_tsc_conv_prepare(d->options->time_conv);
	/* Records come in runs of one stamp: each run is converted once. */
	uint64_t stamp = 0, time = rv_perf_tsc_conv(&tc, 0);
	int ret = 0;

	for (size_t i = 0; i < p->nr; i++) {
		const struct ptd_record *r = &p->records[i];
		struct rv_event ev;

		/* Pages from another thread come from another core's cache. */
		__builtin_prefetch(r + 16);
		if (r->type == PTD_REC_BRANCH) {
			if ((r->flags & PTD_REC_SEAM) && seam_dropped(d, ch))
				continue;
			ev.kind = RV_EVENT_BRANCH;
			ev.pid = d->pid;
			ev.tid = d->tid;
			ev.branch.kind = (enum rv_branch_kind)r->kind;
			ev.branch.flags = r->flags & (uint8_t)~PTD_REC_SEAM;
			ev.branch.from = (struct rv_branch_end){ .ip = r->a };
			ev.branch.to = (struct rv_branch_end){ .ip = r->b };
			ps->kinds[r->kind]++;
		} else if (r->type == PTD_REC_TASK) {
			d->pid = (uint32_t)r->a;
			d->tid = (uint32_t)r->b;
			continue;
		} else {
			error_event(d, r, &ev);
		}
		if (r->time != stamp) {
			stamp = r->time;
			time = rv_perf_tsc_conv(&tc, stamp);
		}
		ev.time = time;
		page_time(ps, time);
		ret = d->sink(d->sink_ctx, &ev, err);
		if (ret < 0)
			break;
	}
	return ret;
}

/* consume_batches' batch as a branch of d's task would have it but for its
 * kind, flags, addresses and time: what those write is all that changes
 * from one branch to the next. */
static void batch_reset(struct ptd_decode *d)
{
	memset(d->batch, 0, SINK_BATCH * sizeof(*d->batch));
	for (size_t i = 0; i < SINK_BATCH; i++) {
		d->batch[i].kind = RV_EVENT_BRANCH;
		d->batch[i].pid = d->pid;
		d->batch[i].tid = d->tid;
	}
}

/* Hands the sink b (its events in d->batch), takes its times into ps, and
 * sets the batch up again if an error's event changed it. */
static int hand_batch(struct ptd_decode *d, struct rv_pt_batch *b, struct page_state *ps,
		      struct rv_error *err)
{
	const struct rv_event *evs = d->batch;
	int ret = d->sink_batch(d->sink_ctx, b, err);

	/* The times into first and last as page_time takes them one by one:
	 * of times in order, only the first, the first that is not 0 (after
	 * a 0, first starts again) and the last can change them. */
	if (b->ordered) {
		size_t lo = 0, hi = b->n - 1;

		page_time(ps, evs[0].time);
		if (!evs[0].time && evs[hi].time) {
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (evs[mid].time)
					hi = mid;
				else
					lo = mid + 1;
			}
			page_time(ps, evs[lo].time);
		}
		page_time(ps, evs[b->n - 1].time);
	} else {
		for (size_t i = 0; i < b->n; i++)
			page_time(ps, evs[i].time);
	}
	if (!b->branches_only)
		batch_reset(d);
	return ret;
}

/* A record's tail (pt_decoder_internal.h: its last 8 bytes as one word,
 * its kind lowest): a branch's event takes it as it is (its branch.kind and
 * branch.flags) when no bit of PLAIN_BRANCH_MASK is set, that is, when the
 * record is a PTD_REC_BRANCH (0) without PTD_REC_SEAM (the top bit of
 * flags), its extra and pad 0. */
_Static_assert(PTD_REC_BRANCH == 0 && PTD_REC_SEAM == 0x80, "a plain branch's bits");
_Static_assert(offsetof(struct rv_event, branch.flags) ==
			       offsetof(struct rv_event, branch.kind) + 4 &&
		       sizeof(enum rv_branch_kind) == 4 &&
		       sizeof(((struct rv_event *)0)->branch.flags) == 4,
	       "an event's branch kind and flags are one word");
#define PLAIN_BRANCH_MASK (~(uint64_t)0 << 39)
#define SEAM_BIT	  ((uint64_t)PTD_REC_SEAM << 32)

static inline uint64_t tail_of(const struct ptd_record *r)
{
	uint64_t w;

	memcpy(&w, &r->kind, sizeof(w));
	return w;
}

/* The ends of the branches of a batch ORed together (rv_pt_batch.ip_bits),
 * as they are gathered: with SSE2 a record's two ends are one 16-byte load
 * (records are 16-byte aligned: pt_walk.c), stored into the event and ORed
 * in from there. */
#ifdef __SSE2__
typedef __m128i ends_acc;

static inline ends_acc take_ends(struct rv_event *ev, const struct ptd_record *r, ends_acc acc)
{
	__m128i ends = _mm_load_si128((const __m128i *)r);

	_mm_storel_epi64((__m128i *)&ev->branch.from.ip, ends);
	_mm_storeh_pd((double *)&ev->branch.to.ip, _mm_castsi128_pd(ends));
	return _mm_or_si128(acc, ends);
}

static inline uint64_t ends_bits(ends_acc acc)
{
	return (uint64_t)_mm_cvtsi128_si64(_mm_or_si128(acc, _mm_unpackhi_epi64(acc, acc)));
}

#define ENDS_NONE _mm_setzero_si128()
#else
typedef uint64_t ends_acc;

static inline ends_acc take_ends(struct rv_event *ev, const struct ptd_record *r, ends_acc acc)
{
	ev->branch.from.ip = r->a;
	ev->branch.to.ip = r->b;
	return acc | r->a | r->b;
}

static inline uint64_t ends_bits(ends_acc acc)
{
	return acc;
}

#define ENDS_NONE 0
#endif

/* The batch consume_batches fills, and what it knows of it so far. */
struct filling {
	struct rv_event *ev; /* the next event's place in d->batch */
	bool branches_only, ordered;
	ends_acc ends;
};

/* Hands the sink the events filled so far, and starts the next batch. */
static int hand_filled(struct ptd_decode *d, struct filling *f, struct page_state *ps,
		       struct rv_error *err)
{
	struct rv_pt_batch b = {
		.events = d->batch,
		.n = (size_t)(f->ev - d->batch),
		.branches_only = f->branches_only,
		.ordered = f->ordered,
		.ip_bits = ends_bits(f->ends),
	};

	f->ev = d->batch;
	f->branches_only = f->ordered = true;
	f->ends = ENDS_NONE;
	return hand_batch(d, &b, ps, err);
}

/* A record's stamp as a time: `high` is tc's, told by the caller, so that
 * the loop that converts is the one for it. */
static inline __attribute__((always_inline)) uint64_t stamp_time(const struct rv_perf_tsc_conv *tc,
								 uint64_t stamp, bool high)
{
	return high ? rv_perf_tsc_conv_high(tc, stamp) : rv_perf_tsc_conv(tc, stamp);
}

/* The page's records into the sink's batch form, SINK_BATCH events at a
 * time: each one's event is written in place in d->batch, which holds the
 * rest of a branch event already (batch_reset), and what is known of the
 * batch (rv_pt_batch) is gathered on the way. A batch is of one task: a
 * task record that changes it ends the batch. Inline in consume_batches
 * for each of its `high` (tc's) and `pooled` (the page comes from another
 * thread). */
static inline __attribute__((always_inline)) int
fill_batches(struct ptd_decode *d, const struct ptd_chunk *ch, const struct ptd_page *p,
	     const struct rv_perf_tsc_conv *tc, bool high, bool pooled, struct page_state *ps,
	     struct rv_error *err)
{
	struct rv_event *const batch = d->batch, *const end = batch + SINK_BATCH;
	struct filling f = { batch, true, true, ENDS_NONE };
	const struct ptd_record *r = p->records, *last = r + p->nr;
	/* Records come in runs of one stamp: each run is converted once. */
	uint64_t stamp = 0, time = stamp_time(tc, 0, high);
	int ret = 0;

	while (r < last) {
		/* the records that fill the batch if each makes an event */
		const struct ptd_record *stop = last - r < end - f.ev ? last : r + (end - f.ev);
		struct rv_event *ev = f.ev;
		ends_acc ends = f.ends;

		for (; r < stop; r++) {
			uint64_t tail = tail_of(r);

			/* Pages from another thread come from another core's
			 * cache; this thread's were written just now. */
			if (pooled)
				__builtin_prefetch(r + 16);
			if (__builtin_expect(tail & PLAIN_BRANCH_MASK, 0)) {
				if (r->type == PTD_REC_TASK) {
					uint32_t pid = (uint32_t)r->a, tid = (uint32_t)r->b;

					if (pid == d->pid && tid == d->tid)
						continue;
					f.ev = ev;
					f.ends = ends;
					if (ev > batch && (ret = hand_filled(d, &f, ps, err)) < 0)
						return ret;
					ev = f.ev;
					ends = f.ends;
					d->pid = pid;
					d->tid = tid;
					for (size_t i = 0; i < SINK_BATCH; i++) {
						batch[i].pid = pid;
						batch[i].tid = tid;
					}
					/* the records from here may all make events */
					r++;
					break;
				}
				if (r->type != PTD_REC_BRANCH) {
					error_event(d, r, ev);
					f.branches_only = false;
					goto timed;
				}
				if (seam_dropped(d, ch))
					continue;
				tail &= ~SEAM_BIT;
			}
			memcpy((char *)ev + offsetof(struct rv_event, branch.kind), &tail,
			       sizeof(tail));
			ends = take_ends(ev, r, ends);
			ps->kinds[(uint8_t)tail]++;
		timed:
			if (r->time != stamp) {
				uint64_t t = stamp_time(tc, r->time, high);

				/* against the event before it in the batch */
				if (__builtin_expect(t < time, 0) && ev > batch)
					f.ordered = false;
				stamp = r->time;
				time = t;
			}
			ev->time = time;
			ev++;
		}
		f.ev = ev;
		f.ends = ends;
		if (ev == end && (ret = hand_filled(d, &f, ps, err)) < 0)
			return ret;
	}
	return f.ev > batch ? hand_filled(d, &f, ps, err) : 0;
}

static int consume_batches(struct ptd_decode *d, const struct ptd_chunk *ch,
			   const struct ptd_page *p, bool pooled, struct page_state *ps,
			   struct rv_error *err)
{
	const struct rv_perf_tsc_conv tc = rv_perf_tsc_conv_prepare(d->options->time_conv);

	if (!tc.high)
		return fill_batches(d, ch, p, &tc, false, true, ps, err);
	return pooled ? fill_batches(d, ch, p, &tc, true, true, ps, err)
		      : fill_batches(d, ch, p, &tc, true, false, ps, err);
}

/* Page p of chunk ch into the sink; `pooled`: another thread wrote it. */
static int consume_page(struct ptd_decode *d, struct ptd_chunk *ch, const struct ptd_page *p,
			bool pooled, struct rv_error *err)
{
	struct rv_pt_stats *s = d->stats;
	struct page_state ps = { .first = s->first_time, .last = s->last_time };
	int ret = d->sink_batch ? consume_batches(d, ch, p, pooled, &ps, err)
				: consume_one_by_one(d, ch, p, &ps, err);

	s->first_time = ps.first;
	s->last_time = ps.last;
	s->calls += ps.kinds[RV_BRANCH_CALL];
	s->returns += ps.kinds[RV_BRANCH_RETURN];
	s->jumps += ps.kinds[RV_BRANCH_JUMP] + ps.kinds[RV_BRANCH_COND];
	s->syscalls += ps.kinds[RV_BRANCH_SYSCALL];
	s->interrupts += ps.kinds[RV_BRANCH_INTERRUPT] + ps.kinds[RV_BRANCH_SOFT_INT];
	return ret;
}

int ptd_publish(struct ptd_decode *d, struct ptd_chunk *ch, struct ptd_page *p, bool direct,
		struct rv_error *err)
{
	if (!d->pool || direct) {
		int r = p->nr ? consume_page(d, ch, p, false, err) : 0;

		ptd_page_put(d, p);
		return r;
	}
	struct ptd_pool *pool = d->pool;

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

/* ---- chunks ---- */

/* Describes the next chunk; false when the buffer is used up. */
/* The least a chunk spans: it ends at the first PSB this far from its start. */
static size_t chunk_step(const struct ptd_decode *d)
{
	return d->chunk_bytes > RV_PT_PSB_BYTES ? d->chunk_bytes : RV_PT_PSB_BYTES;
}

static bool next_chunk(struct ptd_decode *d, struct ptd_chunk *ch)
{
	size_t from;

	if (d->next_begin >= d->size)
		return false;
	memset(ch, 0, sizeof(*ch));
	ch->index = d->next_index++;
	ch->begin = d->next_begin;
	ch->first = d->next_first;
	from = ch->begin + chunk_step(d);
	if (from < ch->begin || from >= d->size) {
		ch->end = d->size;
	} else {
		ch->end = ptd_find_psb(d->buf, d->size, from, &d->config, &ch->next);
		ch->has_next = ch->end < d->size;
	}
	d->next_begin = ch->end;
	d->next_first = ch->next;
	return true;
}

static void finish_chunk_stats(struct ptd_decode *d, const struct ptd_chunk *ch)
{
	d->stats->chunks++;
	d->stats->insns += ch->insns;
	d->stats->blocks += ch->blocks;
	d->stats->jumps += ch->dropped_jumps;
	d->stats->skipped_bytes += ch->skipped_bytes;
	if (ch->fast) {
		d->stats->fast_bytes += ch->end - ch->begin;
		d->stats->libipt_bytes -= ch->end - ch->begin;
	}
	d->stats->handoffs += ch->handoff;
	d->insns_total += ch->insns;
	d->prev_passed = ch->passed_next;
}

static int decode_sequential(struct ptd_decode *d, struct rv_error *err)
{
	struct ptd_thread *t;
	struct ptd_chunk ch;
	int ret = ptd_thread_new(&t, d, false, err);

	if (ret < 0)
		return ret;
	while (!d->stop && next_chunk(d, &ch)) {
		int status = ptd_walk_chunk(d, t, &ch, false, err);

		if (status < 0) {
			ret = status;
			break;
		}
		finish_chunk_stats(d, &ch);
	}
	ptd_thread_free(t);
	return ret;
}

/* The first chunk nobody decodes yet, from the sink's (caller) or from the
 * one after it; NULL if none. Under the pool's lock. */
static struct ptd_chunk *claim_chunk(struct ptd_pool *pool, bool caller)
{
	for (uint64_t i = pool->consumed + (caller ? 0 : 1); i < pool->created; i++) {
		struct ptd_chunk *ch = &pool->ring[i % pool->ring_size];

		if (!ch->claimed) {
			ch->claimed = true;
			return ch;
		}
	}
	return NULL;
}

/* Decodes a chunk this thread claimed; under the pool's lock, which it
 * drops meanwhile. */
static void decode_claimed(struct ptd_decode *d, struct ptd_thread *t, struct ptd_chunk *ch,
			   bool direct, struct rv_error *err)
{
	struct ptd_pool *pool = d->pool;
	int status;

	pthread_mutex_unlock(&pool->lock);
	status = ptd_walk_chunk(d, t, ch, direct, err);
	pthread_mutex_lock(&pool->lock);
	ch->status = status;
	ch->done = true;
	pthread_cond_broadcast(&pool->progress);
}

static void *worker_main(void *arg)
{
	struct ptd_decode *d = arg;
	struct ptd_pool *pool = d->pool;
	struct ptd_thread *t;
	struct rv_error init_err;
	int init = ptd_thread_new(&t, d, true, &init_err);

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct ptd_chunk *ch = NULL;

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
		decode_claimed(d, t, ch, false, &ch->err);
	}
	pthread_mutex_unlock(&pool->lock);
	if (init == 0)
		ptd_thread_free(t);
	return NULL;
}

static void pool_stop(struct ptd_decode *d)
{
	struct ptd_pool *pool = d->pool;

	pthread_mutex_lock(&pool->lock);
	pool->abort = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->nr_threads; i++)
		pthread_join(pool->threads[i], NULL);
	/* pages still queued in the ring */
	for (size_t i = 0; i < pool->ring_size; i++) {
		free_pages(pool->ring[i].pages);
		pool->ring[i].pages = NULL;
	}
}

/* The sink's side of parallel decoding, on the calling thread, which
 * decodes too: the chunk the sink is at when nobody has taken it, else one
 * ahead while the chunk the sink is at has nothing to hand over yet. */
static int run_caller(struct ptd_decode *d, struct ptd_thread *t, struct rv_error *err)
{
	struct ptd_pool *pool = d->pool;
	int ret = 0;

	pthread_mutex_lock(&pool->lock);
	while (ret == 0 && pool->consumed < pool->created) {
		struct ptd_chunk *ch = &pool->ring[pool->consumed % pool->ring_size];

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
			struct ptd_page *p = ch->pages;

			ch->pages = p->next;
			if (!ch->pages)
				ch->last_page = NULL;
			pthread_mutex_unlock(&pool->lock);
			ret = consume_page(d, ch, p, true, err);
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
				struct ptd_chunk *slot =
					&pool->ring[pool->created % pool->ring_size];

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
		struct ptd_chunk *ahead = claim_chunk(pool, false);

		if (ahead) {
			decode_claimed(d, t, ahead, false, &ahead->err);
			continue;
		}
		pthread_cond_wait(&pool->progress, &pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

static int decode_parallel(struct ptd_decode *d, unsigned jobs, struct rv_error *err)
{
	struct ptd_pool pool;
	struct ptd_thread *t;
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
	ret = ptd_thread_new(&t, d, true, err);
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
		ret = run_caller(d, t, err);

	pool_stop(d);
	ptd_thread_free(t);
	pthread_cond_destroy(&pool.progress);
	pthread_cond_destroy(&pool.work);
	pthread_mutex_destroy(&pool.lock);
	free(pool.ring);
	free(pool.threads);
	d->pool = NULL;
	return ret;
}

int ptd_decode_chunks(struct ptd_decode *d, unsigned jobs, struct rv_error *err)
{
	/* A buffer of one chunk (a small capture's, or a thread's share of
	 * one) leaves the other threads nothing to take: starting them (and
	 * their section caches and arenas) would only add to its cost. */
	bool one_chunk = d->next_begin >= d->size || chunk_step(d) >= d->size - d->next_begin;
	int ret;

	if (d->sink_batch) {
		d->batch = malloc(SINK_BATCH * sizeof(*d->batch));
		if (!d->batch)
			return rv_error_set(err, ENOMEM, "out of memory for decoded events");
		batch_reset(d);
	}
	ret = jobs <= 1 || one_chunk ? decode_sequential(d, err) : decode_parallel(d, jobs, err);
	free(d->batch);
	d->batch = NULL;
	free_pages(d->free_pages);
	d->free_pages = NULL;
	d->nr_free_pages = 0;
	return ret;
}
