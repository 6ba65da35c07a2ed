/* online_unwind.c: raw DWARF samples unwound on a thread of their own into
 * call-chain samples; see online_unwind.h.
 *
 * Items pushed wait in `pending` (push order, which is time order within
 * each stream) until the engine releases a time: everything stamped before
 * it then moves to the input queue in time order, a mapping before a sample
 * of the same time. So the thread applies every mapping made before a sample
 * (whichever CPU's ring it came from) and none made after it, though the
 * engine drains the rings one after another. One queue out. All lists of
 * malloc'd items under one mutex. A sample that finds the queues full is
 * converted at once (IP only) but still queued behind the others.
 */
#define RV_LOG_DOMAIN "unwind"
#include "record/online_unwind.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/callchain.h"
#include "capture/synth.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"
#include "util/log.h"

#define DEFAULT_MAX_QUEUED (32u << 20)

/* Offsets in the engine's sample layout (see sample_engine.c). */
#define RAW_PID	  24
#define RAW_TID	  28
#define RAW_TIME  32
#define RAW_CHAIN 56 /* the u64 nr, then nr addresses */

enum item_kind { ITEM_SAMPLE, ITEM_DONE, ITEM_SIDEBAND };

struct item {
	struct item *next;
	enum item_kind kind;
	size_t stream;
	uint64_t time;
	size_t size;	/* of the record */
	uint64_t rec[]; /* the record, 8-byte aligned */
};

struct queue {
	struct item *head, *tail;
};

struct rv_online_unwind {
	struct rv_online_unwind_config config;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t work, idle;
	struct queue pending, in, out;
	size_t queued_bytes; /* raw samples in `pending` and `in` */
	bool busy, stopping;
	uint64_t busy_time; /* the time of the sample the thread holds */
	struct rv_online_unwind_stats stats;
	/* the thread's alone */
	struct rv_symbolizer *symbolizer;
	struct rv_unwinder *unwinder;
	uint64_t frames[RV_ONLINE_UNWIND_MAX_FRAMES];
	uint8_t chain_buf[65536];
};

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void queue_add(struct queue *q, struct item *it)
{
	it->next = NULL;
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
}

static struct item *queue_pop(struct queue *q)
{
	struct item *it = q->head;

	if (it) {
		q->head = it->next;
		if (!q->head)
			q->tail = NULL;
	}
	return it;
}

static void queue_free(struct queue *q)
{
	struct item *it;

	while ((it = queue_pop(q)))
		free(it);
}

static uint64_t read_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int rv_raw_dwarf_sample_parse(const struct perf_event_header *rec, uint64_t regs_mask,
			      struct rv_raw_dwarf_sample *out)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	uint64_t at = RAW_CHAIN, size = rec->size,
		 nr_regs = (uint64_t)__builtin_popcountll(regs_mask);

	memset(out, 0, sizeof(*out));
	if (rec->type != PERF_RECORD_SAMPLE || size < at + 8)
		return -EINVAL;
	memcpy(&out->pid, bytes + RAW_PID, 4);
	memcpy(&out->tid, bytes + RAW_TID, 4);
	out->time = read_u64(bytes + RAW_TIME);
	out->nr_chain = read_u64(bytes + at);
	at += 8;
	if (out->nr_chain > (size - at) / 8)
		return -EINVAL;
	out->chain = (const uint64_t *)(const void *)(bytes + at);
	at += out->nr_chain * 8;
	if (size - at < 8)
		return -EINVAL;
	out->regs_abi = read_u64(bytes + at);
	at += 8;
	if (out->regs_abi) {
		if (nr_regs > (size - at) / 8)
			return -EINVAL;
		out->regs = bytes + at;
		at += nr_regs * 8;
	}
	if (size - at < 8)
		return -EINVAL;
	{
		uint64_t copied = read_u64(bytes + at);

		at += 8;
		if (copied) {
			if (copied > size - at || size - at - copied < 8)
				return -EINVAL;
			out->stack = bytes + at;
			out->stack_asked = copied;
			out->stack_size = read_u64(bytes + at + copied);
			if (out->stack_size > copied)
				return -EINVAL;
		}
	}
	return 0;
}

size_t rv_chain_sample_build(void *out, size_t size, const struct perf_event_header *raw,
			     const struct rv_raw_dwarf_sample *parsed, const uint64_t *user,
			     size_t nr_user, uint32_t cut_bytes)
{
	uint8_t *o = out;
	uint64_t nr_kernel = 0, nr, total;
	struct perf_event_header header = *raw;

	while (nr_kernel < parsed->nr_chain &&
	       read_u64((const uint8_t *)(parsed->chain + nr_kernel)) != PERF_CONTEXT_USER)
		nr_kernel++;
	nr = nr_kernel + (nr_user ? 1 + nr_user + (cut_bytes ? 1 : 0) : 0);
	total = RAW_CHAIN + 8 + nr * 8;
	if (total > size || total > UINT16_MAX)
		return 0;
	memcpy(o, raw, RAW_CHAIN);
	header.size = (uint16_t)total;
	memcpy(o, &header, sizeof(header));
	memcpy(o + RAW_CHAIN, &nr, 8);
	o += RAW_CHAIN + 8;
	memcpy(o, parsed->chain, nr_kernel * 8);
	o += nr_kernel * 8;
	if (nr_user) {
		uint64_t context = PERF_CONTEXT_USER;

		memcpy(o, &context, 8);
		o += 8;
		memcpy(o, user, nr_user * 8);
		o += nr_user * 8;
		if (cut_bytes) {
			uint64_t marker = rv_stack_cut_marker(cut_bytes);

			memcpy(o, &marker, 8);
		}
	}
	return (size_t)total;
}

/* ---- the thread ---- */

static void apply_sideband(struct rv_online_unwind *u, const struct perf_event_header *rec)
{
	struct rv_error err = { 0 };
	struct rv_perf_mmap m;

	if (rec->type == PERF_RECORD_MMAP2) {
		if (rv_perf_mmap_parse(rec, &m))
			return;
		if (rv_symbolizer_add_mapping(u->symbolizer, m.pid, m.start, m.len, m.pgoff,
					      m.executable, m.filename, &err))
			rv_debug("pid %u: mapping of %s not kept: %s", m.pid, m.filename,
				 err.message);
	} else if (rec->type == PERF_RECORD_COMM && (rec->misc & PERF_RECORD_MISC_COMM_EXEC) &&
		   rec->size >= 16) {
		uint32_t pid_tid[2];

		memcpy(pid_tid, (const uint8_t *)rec + 8, sizeof(pid_tid));
		if (pid_tid[0] == pid_tid[1])
			rv_symbolizer_forget_process(u->symbolizer, pid_tid[0]);
	}
}

/* Replaces the raw sample of it with its chain; false when it was unreadable. */
static struct item *unwind_item(struct rv_online_unwind *u, struct item *it, bool *failed,
				bool *cut, bool *stopped)
{
	const struct perf_event_header *raw = (const void *)it->rec;
	struct rv_raw_dwarf_sample s;
	struct rv_unwind_input in;
	struct rv_error err = { 0 };
	size_t nr = 0, size;
	uint32_t cut_bytes = 0;
	struct item *done;

	*failed = *cut = *stopped = false;
	if (rv_raw_dwarf_sample_parse(raw, u->config.regs_mask, &s))
		return NULL;
	if (s.regs_abi) {
		in = (struct rv_unwind_input){ .pid = s.pid,
					       .tid = s.tid,
					       .regs_mask = u->config.regs_mask,
					       .regs = (const uint64_t *)(const void *)s.regs,
					       .stack = s.stack,
					       .stack_size = s.stack_size };
		if (rv_unwind(u->unwinder, &in, u->frames, RV_ONLINE_UNWIND_MAX_FRAMES, &nr, &err))
			nr = 0;
		*failed = nr <= 1;
		if (nr && rv_unwind_cut(u->unwinder) && s.stack_size == s.stack_asked) {
			*cut = true;
			cut_bytes = (uint32_t)s.stack_size;
			if (!cut_bytes)
				cut_bytes = 1;
		} else if (nr >= 2 && rv_unwind_stopped(u->unwinder)) {
			/* its root is no root: drawn as incomplete, like a cut */
			*stopped = true;
			cut_bytes = RV_STACK_UNWIND_STOPPED;
		}
	}
	size = rv_chain_sample_build(u->chain_buf, sizeof(u->chain_buf), raw, &s, u->frames, nr,
				     cut_bytes);
	if (!size)
		return NULL;
	done = malloc(sizeof(*done) + size);
	if (!done)
		return NULL;
	done->kind = ITEM_DONE;
	done->stream = it->stream;
	done->time = it->time;
	done->size = size;
	memcpy(done->rec, u->chain_buf, size);
	return done;
}

static void *unwind_thread(void *arg)
{
	struct rv_online_unwind *u = arg;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct item *it, *done = NULL;
		bool failed = false, cut = false, stopped = false;
		uint64_t began;

		while (!u->in.head && !u->stopping) {
			u->busy = false;
			pthread_cond_broadcast(&u->idle);
			pthread_cond_wait(&u->work, &u->lock);
		}
		if (u->stopping)
			break;
		it = queue_pop(&u->in);
		u->busy = true;
		u->busy_time = it->kind == ITEM_SIDEBAND ? UINT64_MAX : it->time;
		if (it->kind == ITEM_SAMPLE)
			u->queued_bytes -= it->size;
		if (it->kind == ITEM_DONE) {
			queue_add(&u->out, it);
			continue;
		}
		pthread_mutex_unlock(&u->lock);
		began = now_ns(CLOCK_MONOTONIC);
		if (it->kind == ITEM_SIDEBAND)
			apply_sideband(u, (const void *)it->rec);
		else
			done = unwind_item(u, it, &failed, &cut, &stopped);
		began = now_ns(CLOCK_MONOTONIC) - began;
		pthread_mutex_lock(&u->lock);
		if (it->kind == ITEM_SAMPLE) {
			u->stats.unwind_ns += began;
			if (done) {
				u->stats.unwound++;
				u->stats.failed += failed;
				u->stats.cut += cut;
				u->stats.stopped += stopped;
				queue_add(&u->out, done);
			} else {
				u->stats.bad++;
			}
		}
		free(it);
	}
	u->busy = false;
	pthread_cond_broadcast(&u->idle);
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

int rv_online_unwind_new(struct rv_online_unwind **out, const struct rv_online_unwind_config *c,
			 struct rv_error *err)
{
	struct rv_online_unwind *u = calloc(1, sizeof(*u));
	struct rv_symbolizer_options so = { 0 };
	int ret;

	*out = NULL;
	if (!u)
		return rv_error_set(err, ENOMEM, "out of memory");
	u->config = *c;
	if (!u->config.max_queued_bytes)
		u->config.max_queued_bytes = DEFAULT_MAX_QUEUED;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->work, NULL);
	pthread_cond_init(&u->idle, NULL);
	ret = rv_symbolizer_new(&u->symbolizer, &so, err);
	if (!ret)
		ret = rv_unwinder_new(&u->unwinder, u->symbolizer, err);
	if (!ret) {
		ret = pthread_create(&u->thread, NULL, unwind_thread, u);
		if (ret)
			ret = rv_error_set(err, ret, "cannot start the unwinding thread: %s",
					   strerror(ret));
		else
			u->thread_started = true;
	}
	if (ret) {
		rv_online_unwind_free(u);
		return ret;
	}
	*out = u;
	return 0;
}

static struct item *copy_item(const struct perf_event_header *rec, enum item_kind kind,
			      size_t stream, uint64_t time)
{
	struct item *it = malloc(sizeof(*it) + ((size_t)rec->size + 7) / 8 * 8);

	if (!it)
		return NULL;
	it->kind = kind;
	it->stream = stream;
	it->time = time;
	it->size = rec->size;
	memcpy(it->rec, rec, rec->size);
	return it;
}

/* The sample kept with its IP alone, when the thread is too far behind. */
static struct item *ip_only(const struct perf_event_header *rec, uint64_t regs_mask, size_t stream,
			    uint64_t time)
{
	struct rv_raw_dwarf_sample s;
	uint64_t buf[(RAW_CHAIN + 8 + 8 * 256) / 8], ip;
	size_t size;

	if (rv_raw_dwarf_sample_parse(rec, regs_mask, &s))
		return NULL;
	memcpy(&ip, (const uint8_t *)rec + 16, sizeof(ip));
	size = rv_chain_sample_build(buf, sizeof(buf), rec, &s, &ip, s.regs_abi ? 1 : 0, 0);
	return size ? copy_item((const void *)buf, ITEM_DONE, stream, time) : NULL;
}

int rv_online_unwind_push_sample(struct rv_online_unwind *u, const struct perf_event_header *rec,
				 size_t stream, uint64_t time, struct rv_error *err)
{
	struct item *it;
	bool full;

	pthread_mutex_lock(&u->lock);
	full = u->queued_bytes + rec->size > u->config.max_queued_bytes;
	pthread_mutex_unlock(&u->lock);
	it = full ? ip_only(rec, u->config.regs_mask, stream, time)
		  : copy_item(rec, ITEM_SAMPLE, stream, time);
	pthread_mutex_lock(&u->lock);
	u->stats.queued++;
	if (!it) {
		if (full)
			u->stats.bad++; /* unreadable: ip_only could not parse it */
		pthread_mutex_unlock(&u->lock);
		if (full)
			return 0;
		return rv_error_set(err, ENOMEM, "out of memory queueing a sample to unwind");
	}
	if (full) {
		u->stats.not_unwound++;
	} else {
		u->queued_bytes += rec->size;
		if (u->queued_bytes > u->stats.max_queued_bytes_seen)
			u->stats.max_queued_bytes_seen = u->queued_bytes;
	}
	queue_add(&u->pending, it);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

int rv_online_unwind_push_sideband(struct rv_online_unwind *u, const struct perf_event_header *rec,
				   uint64_t time, struct rv_error *err)
{
	struct item *it;

	if (rec->type != PERF_RECORD_MMAP2 && rec->type != PERF_RECORD_COMM)
		return 0;
	it = copy_item(rec, ITEM_SIDEBAND, 0, time);
	if (!it)
		return rv_error_set(err, ENOMEM, "out of memory queueing a mapping");
	pthread_mutex_lock(&u->lock);
	queue_add(&u->pending, it);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

/* Time order, a mapping before a sample of the same time, then push order
 * (the sort is not stable: seq keeps it). */
struct released {
	struct item *it;
	size_t seq;
};

static int released_cmp(const void *a, const void *b)
{
	const struct released *x = a, *y = b;
	int xs = x->it->kind != ITEM_SIDEBAND, ys = y->it->kind != ITEM_SIDEBAND;

	if (x->it->time != y->it->time)
		return x->it->time < y->it->time ? -1 : 1;
	if (xs != ys)
		return xs - ys;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Moves the pending items stamped before `until` to the input queue in time
 * order; with the lock held. Without memory for the sort, in push order. */
static void release_locked(struct rv_online_unwind *u, uint64_t until)
{
	struct queue keep = { 0 }, go = { 0 };
	struct released *sorted;
	struct item *it;
	size_t n = 0, i = 0;

	while ((it = queue_pop(&u->pending))) {
		if (it->time < until) {
			queue_add(&go, it);
			n++;
		} else {
			queue_add(&keep, it);
		}
	}
	u->pending = keep;
	if (!n)
		return;
	sorted = malloc(n * sizeof(*sorted));
	if (sorted) {
		while ((it = queue_pop(&go))) {
			sorted[i].it = it;
			sorted[i].seq = i;
			i++;
		}
		qsort(sorted, n, sizeof(*sorted), released_cmp);
		for (i = 0; i < n; i++)
			queue_add(&u->in, sorted[i].it);
		free(sorted);
	} else {
		while ((it = queue_pop(&go)))
			queue_add(&u->in, it);
	}
	pthread_cond_signal(&u->work);
}

void rv_online_unwind_release(struct rv_online_unwind *u, uint64_t until)
{
	pthread_mutex_lock(&u->lock);
	release_locked(u, until);
	pthread_mutex_unlock(&u->lock);
}

int rv_online_unwind_take(struct rv_online_unwind *u, rv_online_unwind_fn fn, void *ctx)
{
	struct queue taken;
	struct item *it;
	int ret = 0;

	pthread_mutex_lock(&u->lock);
	taken = u->out;
	u->out.head = u->out.tail = NULL;
	pthread_mutex_unlock(&u->lock);
	while ((it = queue_pop(&taken))) {
		if (!ret)
			ret = fn(ctx, (const void *)it->rec, it->stream, it->time);
		free(it);
	}
	return ret;
}

uint64_t rv_online_unwind_oldest(struct rv_online_unwind *u)
{
	uint64_t oldest = UINT64_MAX;

	pthread_mutex_lock(&u->lock);
	if (u->busy && u->busy_time < oldest)
		oldest = u->busy_time;
	for (int q = 0; q < 3; q++)
		for (const struct item *it = q == 0   ? u->pending.head
					     : q == 1 ? u->in.head
						      : u->out.head;
		     it; it = it->next)
			if (it->kind != ITEM_SIDEBAND && it->time < oldest)
				oldest = it->time;
	pthread_mutex_unlock(&u->lock);
	return oldest;
}

void rv_online_unwind_flush(struct rv_online_unwind *u)
{
	pthread_mutex_lock(&u->lock);
	release_locked(u, UINT64_MAX);
	while ((u->in.head || u->busy) && u->thread_started && !u->stopping)
		pthread_cond_wait(&u->idle, &u->lock);
	pthread_mutex_unlock(&u->lock);
}

void rv_online_unwind_stats(struct rv_online_unwind *u, struct rv_online_unwind_stats *out)
{
	clockid_t clock;

	pthread_mutex_lock(&u->lock);
	*out = u->stats;
	pthread_mutex_unlock(&u->lock);
	if (u->thread_started && !pthread_getcpuclockid(u->thread, &clock))
		out->thread_cpu_ns = now_ns(clock);
}

void rv_online_unwind_free(struct rv_online_unwind *u)
{
	if (!u)
		return;
	if (u->thread_started) {
		pthread_mutex_lock(&u->lock);
		u->stopping = true;
		pthread_cond_broadcast(&u->work);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
	}
	queue_free(&u->pending);
	queue_free(&u->in);
	queue_free(&u->out);
	rv_unwinder_free(u->unwinder);
	rv_symbolizer_free(u->symbolizer);
	pthread_cond_destroy(&u->work);
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->lock);
	free(u);
}
