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

/* The running state of a page's conversion: the stamp converted last and
 * what the page adds to the stats. */
struct page_state {
	const struct rv_perf_time_conv *tc;
	uint64_t stamp, time;
	uint64_t first, last;
	uint64_t kinds[RV_BRANCH_TX_ABORT + 1];
};

/* Record r as an event in *ev; false when it makes none (a task record, a
 * seam's begin that the previous chunk already gave). Inlined into each of
 * consume_page's loops: a call would cost a fifth of the hand-off. */
static inline __attribute__((always_inline)) bool
record_event(struct ptd_decode *d, const struct ptd_chunk *ch, const struct ptd_record *r,
	     struct page_state *ps, struct rv_event *ev)
{
	if (r->type == PTD_REC_BRANCH) {
		uint8_t flags = r->flags;

		if (__builtin_expect(flags & PTD_REC_SEAM, 0)) {
			if (ch->index > 0 && d->prev_passed)
				return false;
			flags &= (uint8_t)~PTD_REC_SEAM;
		}
		ev->kind = RV_EVENT_BRANCH;
		ev->branch.kind = (enum rv_branch_kind)r->kind;
		ev->branch.flags = flags;
		ev->branch.from = (struct rv_branch_end){ .ip = r->a };
		ev->branch.to = (struct rv_branch_end){ .ip = r->b };
		if (r->kind <= RV_BRANCH_TX_ABORT)
			ps->kinds[r->kind]++;
	} else if (r->type == PTD_REC_TASK) {
		d->pid = (uint32_t)r->a;
		d->tid = (uint32_t)r->b;
		return false;
	} else {
		bool overflow = r->extra & PTD_REC_OVERFLOW;

		memset(ev, 0, sizeof(*ev));
		ev->kind = RV_EVENT_TRACE_ERROR;
		ev->error.message = overflow ? "overflow" : rv_pt_strerror(r->code);
		ev->error.offset = r->a;
		ev->error.ip = r->b;
		ev->error.overflow = overflow;
		stats_add_error(d->stats, r->a, r->b, r->code, overflow);
	}
	ev->pid = d->pid;
	ev->tid = d->tid;
	if (r->time != ps->stamp) {
		ps->stamp = r->time;
		ps->time = ps->tc ? rv_perf_tsc_to_time(ps->tc, ps->stamp) : ps->stamp;
	}
	ev->time = ps->time;
	if (!ps->first || ev->time < ps->first)
		ps->first = ev->time;
	if (ev->time > ps->last)
		ps->last = ev->time;
	return true;
}

static int consume_page(struct ptd_decode *d, struct ptd_chunk *ch, const struct ptd_page *p,
			struct rv_error *err)
{
	struct rv_pt_stats *s = d->stats;
	/* Records come in runs of one stamp: each run is converted once. */
	struct page_state ps = {
		.tc = d->options->time_conv,
		.first = s->first_time,
		.last = s->last_time,
	};
	int ret = 0;

	ps.time = ps.tc ? rv_perf_tsc_to_time(ps.tc, 0) : 0;
	if (d->sink_batch) {
		struct rv_event batch[SINK_BATCH], *out = batch;

		for (size_t i = 0; i < p->nr; i++) {
			/* Pages from another thread come from another core's cache. */
			__builtin_prefetch(&p->records[i] + 16);
			if (!record_event(d, ch, &p->records[i], &ps, out) ||
			    ++out < batch + SINK_BATCH)
				continue;
			out = batch;
			ret = d->sink_batch(d->sink_ctx, batch, SINK_BATCH, err);
			if (ret < 0)
				break;
		}
		if (out > batch && ret >= 0)
			ret = d->sink_batch(d->sink_ctx, batch, (size_t)(out - batch), err);
	} else {
		for (size_t i = 0; i < p->nr; i++) {
			struct rv_event ev;

			__builtin_prefetch(&p->records[i] + 16);
			if (!record_event(d, ch, &p->records[i], &ps, &ev))
				continue;
			ret = d->sink(d->sink_ctx, &ev, err);
			if (ret < 0)
				break;
		}
	}
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
		int r = p->nr ? consume_page(d, ch, p, err) : 0;

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
	int ret =
		jobs <= 1 || one_chunk ? decode_sequential(d, err) : decode_parallel(d, jobs, err);

	free_pages(d->free_pages);
	d->free_pages = NULL;
	d->nr_free_pages = 0;
	return ret;
}
