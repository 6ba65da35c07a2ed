/* pt_capture_decode.c: decoding an open Intel PT capture's buffers into the
 * sink; see pt_capture.h.
 *
 * A lane is the buffers of one thread (per-thread captures) or of one CPU
 * (per-CPU captures), decoded in file order. Per-thread lanes are decoded one
 * after another on the calling thread. Per-CPU lanes run at once, one
 * producer thread each, into queues of a few fixed blocks of events; the
 * calling thread merges the queues' heads by time (a k-way merge), so that a
 * thread that moved between CPUs still reaches the sink in time order, with
 * memory bounded by the queues whatever the trace's length.
 *
 * On the way to the sink, in the calling thread: a THREAD_NAME before a
 * thread's first event and at each rename, errors charged to the missing file
 * that covers their address, THREAD_EXIT once a thread's events are over, and
 * the --filter windows of an ungated recording: a thread's branches and
 * errors outside its windows left out, a WINDOW event at each window's end.
 *
 * Not here: the sideband and images (pt_capture.c), the packets
 * (pt_decoder.c).
 */
#define RV_LOG_DOMAIN "pt-capture"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/marks.h"
#include "decode/pt_capture.h"
#include "decode/pt_capture_internal.h"
#include "decode/pt_sections.h"
#include "util/array.h"
#include "util/log.h"

/* A queue block: events of one lane, handed over as a whole. */
#define BLOCK_EVENTS 2048
/* Blocks a lane may have queued before its producer waits. */
#define MAX_QUEUED_BLOCKS 2
/* Room for the messages of a block's errors (copied: the decoder's may not
 * outlive its call); a block that has no more is handed over early. */
#define BLOCK_MESSAGES 4096
#define MESSAGE_MAX    256
/* Events between two updates of a lane's progress estimate. */
#define PROGRESS_EVERY 1024
/* The kernel schedules a task's PT event in (TraceEn 0 -> 1, with an exact
 * TSC) before it writes the task's SWITCH IN record, some hundreds of
 * nanoseconds later (465 ns in the Skylake capture); its OUT record comes
 * before the event is scheduled out. So trace that begins at t belongs to
 * the task that is in at t + SWITCH_SLACK, and trace that goes on after an
 * OUT record belongs to the task before it, until the next IN. Capture
 * clock units: nanoseconds, or TSC ticks without TIME_CONV. */
#define SWITCH_SLACK 1000

/* Where a buffer's PSBs are and the time each one's TSC gives: for the bytes
 * an error skipped (to the next PSB) and for progress (the bytes before the
 * PSB whose time an event has reached). */
struct psb_index {
	uint64_t *offsets;
	uint64_t *times; /* UINT64_MAX: that PSB+ has no TSC */
	size_t nr, cap;
};

struct queued {
	struct rv_event ev;
	uint64_t skipped; /* errors: bytes to the next PSB */
};

struct block {
	struct block *next;
	size_t n;
	size_t messages_used;
	struct queued items[BLOCK_EVENTS];
	char messages[BLOCK_MESSAGES];
};

struct capture_decode;

struct buffer_lane_image {
	struct pt_image *source, *copy;
};

/* A stream of buffers decoded in order: a CPU's (per-CPU captures, merged
 * with the others by time) or a thread's. */
struct buffer_lane {
	struct capture_decode *run;
	size_t index;
	uint32_t cpu; /* per-CPU lanes; PTC_NONE for a thread's */
	const struct ptc_cpu *timeline;
	uint32_t pid, tid; /* per-thread lanes */
	size_t *bufs;	   /* indices into c->buffers, in file order */
	size_t nr_bufs, cap_bufs;
	unsigned jobs;

	/* the producer's */
	const struct ptc_buffer *buf;
	struct psb_index psb;
	uint64_t done_bytes; /* of the buffers finished */
	uint64_t since_progress;
	uint64_t est_offset;
	struct rv_pt_stats stats;
	bool have_interval; /* the task of [iv_start, iv_end) on this CPU */
	uint64_t iv_start, iv_end;
	uint32_t iv_pid, iv_tid;
	uint64_t span_floor; /* the lookup time of the trace's last begin */
	struct block *filling;

	/* shared with the consumer, under run->lock */
	struct block *head, *tail;
	size_t queued;
	bool done;
	int rc;
	struct rv_error err;
	_Atomic uint64_t progress; /* bytes decoded, estimated */

	/* Per-CPU lanes decode at the same time, and libipt's lookups reorder
	 * an image's sections: each lane decodes with its own copies. */
	pthread_mutex_t images_lock;
	struct buffer_lane_image *images;
	size_t nr_images, cap_images;

	/* the consumer's */
	struct block *consuming;
	size_t pos;
	bool exhausted;
	pthread_t thread;
	bool started;
};

/* One rv_pt_capture_decode: its lanes, the queues between their producers
 * and the consumer, and the sink. */
struct capture_decode {
	struct rv_pt_capture *c;
	rv_pt_sink_fn sink;
	rv_event_batch_fn sink_batch; /* NULL: the sink only */
	void *sink_ctx;
	struct buffer_lane *lanes;
	size_t nr_lanes, cap_lanes;
	bool merged; /* per-CPU lanes: producers and queues */

	pthread_mutex_t lock;
	pthread_cond_t data, space;
	bool abort;
	struct block *free_blocks;

	int last_percent;
	int progress_width;
	uint64_t consumed;

	/* the thread of the last event, and until when its name holds */
	struct ptc_thread *cur;
	uint32_t cur_tid;
	uint64_t cur_until;

	uint64_t outside_windows; /* events left out: outside their thread's windows */
};

/* ---- PSB index ---- */

static bool psb_add(struct psb_index *x, uint64_t offset, uint64_t time)
{
	size_t cap = x->cap;

	/* two arrays of one capacity: x->cap moves once both have grown */
	if (rv_array_grow(&x->offsets, &cap, x->nr, sizeof(*x->offsets), 64) ||
	    rv_array_grow(&x->times, &x->cap, x->nr, sizeof(*x->times), 64))
		return false;
	x->offsets[x->nr] = offset;
	x->times[x->nr] = time;
	x->nr++;
	return true;
}

static int psb_build(const struct rv_pt_capture *c, const struct ptc_buffer *b, struct psb_index *x)
{
	struct pt_packet_decoder *d;

	x->nr = 0;
	if (!b->size)
		return 0;
	d = ptc_packet_decoder(c, b);
	if (!d)
		return -ENOMEM;
	for (size_t at = 0; (at = rv_pt_next_psb_pattern(b->data, b->size, at)) < b->size;
	     at += RV_PT_PSB_BYTES) {
		if (!psb_add(x, at, ptc_psb_time(c, d, at))) {
			pt_pkt_free_decoder(d);
			return -ENOMEM;
		}
	}
	pt_pkt_free_decoder(d);
	return 0;
}

/* Bytes from an error at offset to the next PSB (or the end). */
static uint64_t psb_skipped(const struct psb_index *x, uint64_t offset, uint64_t size)
{
	size_t lo = 0, hi = x->nr;

	if (offset >= size)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->offsets[mid] <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < x->nr ? x->offsets[lo] : size) - offset;
}

/* The offset of the last PSB whose time is at or before `time`. */
static uint64_t psb_offset_at(const struct psb_index *x, uint64_t time)
{
	uint64_t best = 0;

	for (size_t lo = 0, hi = x->nr; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->times[mid] == UINT64_MAX || x->times[mid] <= time) {
			best = x->offsets[mid];
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return best;
}

static void psb_free(struct psb_index *x)
{
	free(x->offsets);
	free(x->times);
	memset(x, 0, sizeof(*x));
}

/* ---- attribution ---- */

/* The lane's own copy of an image (per-CPU lanes only). */
static int lane_image(struct buffer_lane *l, struct pt_image *source, struct pt_image **out,
		      struct rv_error *err)
{
	int ret = 0;

	pthread_mutex_lock(&l->images_lock);
	for (size_t i = 0; i < l->nr_images; i++) {
		if (l->images[i].source == source) {
			*out = l->images[i].copy;
			goto out;
		}
	}
	if (rv_array_reserve(&l->images, &l->cap_images, l->nr_images + 1, sizeof(*l->images), 8)) {
		ret = rv_error_set(err, ENOMEM, "out of memory for a CPU's images");
		goto out;
	}
	struct pt_image *copy = rv_pt_image_alloc(pt_image_name(source));
	if (!copy || rv_pt_sections_copy(copy, source) < 0) {
		rv_pt_image_free(copy);
		ret = rv_error_set(err, ENOMEM, "cannot copy an image for a CPU's decoding");
		goto out;
	}
	l->images[l->nr_images++] = (struct buffer_lane_image){ source, copy };
	*out = copy;
out:
	pthread_mutex_unlock(&l->images_lock);
	return ret;
}

/* rv_pt_populate_fn: a decoding thread's own copy of one of the capture's
 * images (or of a CPU's copy of one), from the same files, through the
 * thread's section cache. */
static int lane_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			 struct pt_image_section_cache *iscache, struct rv_error *err)
{
	struct buffer_lane *l = ctx;
	const struct rv_pt_capture *c = l->run->c;
	int stack_isids[256], *isids = stack_isids;
	size_t n;
	int ret = 0;

	pthread_mutex_lock(&l->images_lock);
	for (size_t i = 0; i < l->nr_images; i++)
		if (l->images[i].copy == image)
			image = l->images[i].source;
	pthread_mutex_unlock(&l->images_lock);
	n = ptc_image_sections(c, image, stack_isids, 256);
	if (n > 256) {
		isids = malloc(n * sizeof(*isids));
		if (!isids)
			return rv_error_set(err, ENOMEM, "out of memory for a thread's image");
		ptc_image_sections(c, image, isids, n);
	}
	for (size_t i = 0; i < n && !ret; i++) {
		const struct ptc_section *s = &c->sections[isids[i]];
		int isid = rv_pt_sections_add_file(iscache, s->file, s->offset, s->size, s->vaddr);

		if (isid >= 0)
			isid = rv_pt_sections_add_cached(copy, iscache, isid);
		if (isid < 0)
			ret = rv_error_set(err, EIO,
					   "cannot read %s again for a decoding thread: %s",
					   s->file, pt_errstr(pt_errcode(isid)));
	}
	if (isids != stack_isids)
		free(isids);
	return ret;
}

/* rv_pt_function_at_fn, from the function ranges of the process's image at
 * that time, which hold until its next exec. */
static bool capture_function_at(void *ctx, uint32_t pid, uint64_t time, uint64_t addr,
				struct rv_pt_function_span *out)
{
	const struct rv_pt_capture *c = ctx;
	const struct ptc_process *p = ptc_process_find(c, pid);
	const struct ptc_generation *g = p ? ptc_generation_at(p, time) : NULL;
	size_t k;

	if (!g || !rv_symtab_around(&g->functions, addr, &out->start, &out->end))
		return false;
	k = (size_t)(g - p->gens);
	/* ptc_generation_at's: the first one also for times before it */
	out->from = k ? g->time : 0;
	out->until = k + 1 < p->nr_gens ? p->gens[k + 1].time : UINT64_MAX;
	return true;
}

static int lane_resolve(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid,
			struct pt_image **image, uint64_t *until, struct rv_error *err)
{
	struct buffer_lane *l = ctx;
	struct rv_pt_capture *c = l->run->c;
	const struct ptc_generation *g;
	int ret;

	if (l->cpu != PTC_NONE) {
		if (!ptc_task_at(l->timeline, time + SWITCH_SLACK, pid, tid))
			*pid = *tid = PTC_NONE;
	} else {
		*pid = l->pid;
		*tid = l->tid;
	}
	g = *pid == PTC_NONE ? NULL : ptc_generation_at(ptc_process_find(c, *pid), time);
	*image = g ? g->image : c->kernel_image;
	/* with kernel code as it was at `time` (BPF programs, text pokes) */
	ret = ptc_kcode_image(c, *image, time, image, until, err);
	if (ret)
		return ret;
	return l->run->merged ? lane_image(l, *image, image, err) : 0;
}

/* The task on the lane's CPU at `time`, through a one-interval cache (events
 * come in time order, so most hit it). */
static void lane_task(struct buffer_lane *l, uint64_t time, uint32_t *pid, uint32_t *tid)
{
	const struct ptc_cpu *k = l->timeline;

	if (l->have_interval && time >= l->iv_start && time < l->iv_end) {
		*pid = l->iv_pid;
		*tid = l->iv_tid;
		return;
	}
	size_t lo = k ? ptc_count_until(k->points, k->nr, sizeof(*k->points), time) : 0;

	l->have_interval = true;
	if (lo == 0) {
		l->iv_start = 0;
		l->iv_pid = l->iv_tid = PTC_NONE;
	} else {
		l->iv_start = k->points[lo - 1].time;
		l->iv_pid = k->points[lo - 1].pid;
		l->iv_tid = k->points[lo - 1].tid;
	}
	l->iv_end = k && lo < k->nr ? k->points[lo].time : UINT64_MAX;
	*pid = l->iv_pid;
	*tid = l->iv_tid;
}

/* ---- progress ---- */

static void progress_update(struct buffer_lane *l, uint64_t time)
{
	uint64_t off;

	if (++l->since_progress < PROGRESS_EVERY || !l->buf)
		return;
	l->since_progress = 0;
	off = psb_offset_at(&l->psb, time);
	if (off > l->est_offset)
		l->est_offset = off;
	atomic_store_explicit(&l->progress, l->done_bytes + l->est_offset, memory_order_relaxed);
}

static void progress_print(struct capture_decode *r, bool force)
{
	const struct rv_pt_capture *c = r->c;
	uint64_t done = 0;
	int percent;

	if (!c->progress || !c->trace_bytes)
		return;
	for (size_t i = 0; i < r->nr_lanes; i++)
		done += atomic_load_explicit(&r->lanes[i].progress, memory_order_relaxed);
	if (done > c->trace_bytes)
		done = c->trace_bytes;
	percent = (int)(done * 100 / c->trace_bytes);
	if (percent == r->last_percent && !force)
		return;
	r->last_percent = percent;
	r->progress_width = fprintf(stderr, "\rrearview: decoding %d%% (%.1f of %.1f MiB)", percent,
				    (double)done / (1 << 20), (double)c->trace_bytes / (1 << 20)) -
			    1;
	fflush(stderr);
}

static void progress_clear(struct capture_decode *r)
{
	if (!r->c->progress || r->progress_width <= 0)
		return;
	fprintf(stderr, "\r%*s\r", r->progress_width, "");
	fflush(stderr);
}

/* ---- the consumer: names, missing files, the sink ---- */

static int emit(struct capture_decode *r, const struct rv_event *ev, struct rv_error *err)
{
	return r->sink(r->sink_ctx, ev, err);
}

/* A THREAD_NAME for t when its name at `time` has not been given yet. */
static int name_thread(struct capture_decode *r, struct ptc_thread *t, uint32_t pid, uint32_t tid,
		       uint64_t time, struct rv_error *err)
{
	size_t i = ptc_comm_at(t, time);
	struct rv_event name = {
		.kind = RV_EVENT_THREAD_NAME,
		.pid = pid,
		.tid = tid,
		.time = time,
	};

	if (i == SIZE_MAX || (t->named && i <= t->named_comm))
		return 0;
	name.thread.name = t->comms[i].name;
	t->named = true;
	t->named_comm = i;
	return emit(r, &name, err);
}

/* ---- --filter windows applied while decoding (see pt_capture.h) ---- */

/* Hands the sink t's windows that ended by `time`, each as a WINDOW event at
 * its end. */
static int windows_until(struct capture_decode *r, struct ptc_thread *t, uint64_t time,
			 struct rv_error *err)
{
	while (t->win_next < t->win_nr) {
		const struct ptc_window *w = &r->c->windows[t->win_first + t->win_next];
		struct rv_event ev = {
			.kind = w->trigger ? RV_EVENT_TRIGGER : RV_EVENT_WINDOW,
			.pid = w->pid,
			.tid = w->tid,
			.time = w->end,
		};
		int ret;

		if (w->end > time)
			break;
		t->win_next++;
		if (w->extra) {
			ev.kind = RV_EVENT_EXTRA;
			ev.extra.name = w->name;
			ev.extra.ip = w->sample.ip;
			ev.extra.addr = w->sample.addr;
			ev.extra.count = w->sample.count;
			ev.extra.cpu = w->sample.cpu;
			ev.extra.kernel = w->sample.kernel;
			ret = name_thread(r, t, w->pid, w->tid, w->end, err);
			if (!ret)
				ret = emit(r, &ev, err);
			if (ret)
				return ret;
			continue;
		}
		ev.gate.name = w->name;
		ev.gate.duration_ns = w->end - w->begin;
		ev.gate.slow = w->flags & RV_MARK_FLAG_SLOW;
		ev.gate.snapshot = w->flags & RV_MARK_FLAG_SNAPSHOT;
		ret = name_thread(r, t, w->pid, w->tid, w->end, err);
		if (!ret)
			ret = emit(r, &ev, err);
		if (ret)
			return ret;
	}
	return 0;
}

/* Whether ev (a branch or an error) is kept: strictly inside a window of its
 * thread. The windows that ended before it go to the sink first. */
static int window_keeps(struct capture_decode *r, const struct rv_event *ev, bool *keep,
			struct rv_error *err)
{
	struct ptc_thread *t =
		r->cur && ev->tid == r->cur_tid ? r->cur : ptc_thread_find_mut(r->c, ev->tid);
	const struct ptc_window *w;
	int ret;

	*keep = false;
	if (!t || !t->win_nr)
		return 0; /* a thread without windows: nothing of it is kept */
	ret = windows_until(r, t, ev->time, err);
	if (ret)
		return ret;
	/* the next window to end (trigger hits in between do not count) */
	for (size_t i = t->win_next; i < t->win_nr; i++) {
		w = &r->c->windows[t->win_first + i];
		if (!w->trigger && !w->extra) {
			*keep = ev->time > w->begin; /* and before w->end, not yet come */
			break;
		}
	}
	return 0;
}

/* Every window not yet handed to the sink, thread by thread. */
static int windows_rest(struct capture_decode *r, struct rv_error *err)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < r->c->nr_threads; i++)
		ret = windows_until(r, &r->c->threads[i], UINT64_MAX, err);
	return ret;
}

/* Without kernel scope, the kernel's part of a trace that holds it is
 * untraced time, as in a user-only capture: nothing at a kernel address
 * reaches the sink. An entry into the kernel ends the trace there (to 0,
 * TRACE_END), the return to user space begins it again (from 0,
 * TRACE_BEGIN), and branches inside the kernel are dropped. Returns ev,
 * or `copy` made of it, or NULL to drop it. */
static const struct rv_event *in_scope(const struct rv_pt_capture *c, const struct rv_event *ev,
				       struct rv_event *copy)
{
	bool from_kernel, to_kernel;

	if (c->include_kernel || !c->kernel_traced || ev->kind != RV_EVENT_BRANCH)
		return ev;
	from_kernel = ev->branch.from.ip >= PTC_KERNEL_START;
	to_kernel = ev->branch.to.ip >= PTC_KERNEL_START;
	if (!from_kernel && !to_kernel)
		return ev;
	if ((from_kernel || !ev->branch.from.ip) && (to_kernel || !ev->branch.to.ip))
		return NULL;
	*copy = *ev;
	if (from_kernel) {
		copy->branch.kind = RV_BRANCH_NONE;
		copy->branch.flags = RV_BRANCH_TRACE_BEGIN;
		copy->branch.from = (struct rv_branch_end){ 0 };
	} else {
		copy->branch.flags |= RV_BRANCH_TRACE_END;
		copy->branch.to = (struct rv_branch_end){ 0 };
	}
	return copy;
}

static int consume(struct capture_decode *r, const struct rv_event *in, uint64_t skipped,
		   struct rv_error *err)
{
	struct rv_pt_capture *c = r->c;
	struct rv_event copy;
	const struct rv_event *ev = in_scope(c, in, &copy);
	struct ptc_thread *t;
	int ret;

	if (!ev)
		return 0;

	if (c->nr_applied && (ev->kind == RV_EVENT_BRANCH || ev->kind == RV_EVENT_TRACE_ERROR)) {
		bool keep;

		ret = window_keeps(r, ev, &keep, err);
		if (ret || !keep) {
			r->outside_windows += !keep;
			return ret;
		}
	} else if (c->nr_windows && ev->kind == RV_EVENT_BRANCH) {
		/* marks only drawn: the windows and hits before this event first */
		t = r->cur && ev->tid == r->cur_tid ? r->cur : ptc_thread_find_mut(c, ev->tid);
		if (t && t->win_next < t->win_nr) {
			ret = windows_until(r, t, ev->time, err);
			if (ret)
				return ret;
		}
	}
	/* the same thread as before, its name still current: only the sink
	 * (plain_run finds runs of such events in a batch by the same rules,
	 * in_scope's and the windows' above included, and plain_batch whole
	 * batches of them: change all three) */
	if (r->cur && ev->tid == r->cur_tid && ev->time < r->cur_until &&
	    ev->kind == RV_EVENT_BRANCH) {
		if (ev->time > r->cur->last_time)
			r->cur->last_time = ev->time;
		ret = emit(r, ev, err);
		if (++r->consumed % PROGRESS_EVERY == 0)
			progress_print(r, false);
		return ret;
	}
	t = ptc_thread_find_mut(c, ev->tid);

	if (ev->kind == RV_EVENT_TRACE_ERROR && !ev->error.overflow && ev->error.ip) {
		size_t m = ptc_missing_at(c, ev->pid, ev->time, ev->error.ip);

		if (m != SIZE_MAX) {
			c->missing[m].pub.errors++;
			c->missing[m].pub.skipped_bytes += skipped;
		}
	}
	if (t) {
		ret = name_thread(r, t, ev->pid, ev->tid, ev->time, err);
		if (ret)
			return ret;
		t->has_events = true;
		if (ev->time > t->last_time)
			t->last_time = ev->time;
		r->cur = t;
		r->cur_tid = ev->tid;
		r->cur_until = t->named && t->named_comm + 1 < t->nr_comms
				       ? t->comms[t->named_comm + 1].time
				       : UINT64_MAX;
	}
	ret = emit(r, ev, err);
	if (++r->consumed % PROGRESS_EVERY == 0)
		progress_print(r, false);
	return ret;
}

/* Until when consume hands the current thread's branches straight to the
 * sink: its next rename, or its next window's end if sooner
 * (windows_until hands on nothing before it). */
static uint64_t plain_until(const struct capture_decode *r)
{
	const struct rv_pt_capture *c = r->c;
	const struct ptc_thread *t = r->cur;
	uint64_t until = r->cur_until;

	if (c->nr_windows && t->win_next < t->win_nr &&
	    c->windows[t->win_first + t->win_next].end < until)
		until = c->windows[t->win_first + t->win_next].end;
	return until;
}

/* How many of evs[0, n) consume would hand straight to the sink, changing
 * nothing but the thread's last time: branches in scope of the thread of the
 * last event, before its next rename and its next window's end, without
 * windows applied. *last: the latest of their times and the thread's. */
static size_t plain_run(const struct capture_decode *r, const struct rv_event *evs, size_t n,
			uint64_t *last)
{
	const struct rv_pt_capture *c = r->c;
	const struct ptc_thread *t = r->cur;
	bool all_in_scope = c->include_kernel || !c->kernel_traced;
	uint64_t until;
	size_t i;

	if (!t || c->nr_applied)
		return 0;
	*last = t->last_time;
	until = plain_until(r);
	for (i = 0; i < n; i++) {
		const struct rv_event *ev = &evs[i];

		if (ev->kind != RV_EVENT_BRANCH || ev->tid != r->cur_tid || ev->time >= until)
			break;
		if (!all_in_scope && (ev->branch.from.ip >= PTC_KERNEL_START ||
				      ev->branch.to.ip >= PTC_KERNEL_START))
			break;
		if (ev->time > *last)
			*last = ev->time;
	}
	return i;
}

/* Whether the whole of batch b is a run plain_run would find, told from
 * what the decoder says of it rather than event by event: branches of one
 * task (the current thread's), in time order, the last before plain_until,
 * no address in the kernel unless it is in scope. false: plain_run looks.
 * *last: as plain_run's. */
static bool plain_batch(const struct capture_decode *r, const struct rv_pt_batch *b, uint64_t *last)
{
	const struct rv_pt_capture *c = r->c;
	const struct ptc_thread *t = r->cur;
	uint64_t time = b->events[b->n - 1].time;

	if (!t || c->nr_applied || !b->branches_only || !b->ordered ||
	    b->events[0].tid != r->cur_tid || time >= plain_until(r))
		return false;
	if (!c->include_kernel && c->kernel_traced && b->ip_bits >= PTC_KERNEL_START)
		return false;
	*last = time > t->last_time ? time : t->last_time;
	return true;
}

/* consume for a run plain_run found: one call of the sink's batch form. */
static int consume_plain(struct capture_decode *r, const struct rv_event *evs, size_t n,
			 uint64_t last, struct rv_error *err)
{
	uint64_t before = r->consumed;

	r->cur->last_time = last;
	r->consumed += n;
	if (before / PROGRESS_EVERY != r->consumed / PROGRESS_EVERY)
		progress_print(r, false);
	return r->sink_batch(r->sink_ctx, evs, n, err);
}

static int emit_exit(struct capture_decode *r, struct ptc_thread *t, struct rv_error *err)
{
	struct rv_event ev = {
		.kind = RV_EVENT_THREAD_EXIT,
		.pid = t->pid,
		.tid = t->tid,
		.time = t->exit_time > t->last_time ? t->exit_time : t->last_time,
	};

	int ret;

	if (!t->exited || !t->has_events || t->exit_sent)
		return 0;
	t->exit_sent = true;
	ret = windows_until(r, t, UINT64_MAX, err); /* none comes after its exit */
	return ret ? ret : emit(r, &ev, err);
}

/* ---- the producers ---- */

/* Appends the block being filled to the lane's queue; under run->lock. */
static void queue_filling(struct buffer_lane *l)
{
	if (l->tail)
		l->tail->next = l->filling;
	else
		l->head = l->filling;
	l->tail = l->filling;
	l->queued++;
	l->filling = NULL;
}
/* An event from the decoder, on the lane's thread. */
static int lane_sink(void *ctx, const struct rv_event *in, struct rv_error *err)
{
	struct buffer_lane *l = ctx;
	struct capture_decode *r = l->run;
	struct rv_event ev;
	uint64_t skipped = 0;

	if (in->kind == RV_EVENT_TRACE_ERROR && in->error.offset != UINT64_MAX)
		skipped = psb_skipped(&l->psb, in->error.offset, l->buf->size);
	progress_update(l, in->time);
	if (l->cpu == PTC_NONE && !r->merged)
		return consume(r, in, skipped, err); /* a thread's lane: as it came */
	ev = *in;
	if (l->cpu != PTC_NONE) {
		/* within a stretch of trace, the task of its beginning until the
		 * sideband says another one came in */
		if (ev.kind == RV_EVENT_BRANCH && (ev.branch.flags & RV_BRANCH_TRACE_BEGIN))
			l->span_floor = ev.time + SWITCH_SLACK;
		lane_task(l, ev.time > l->span_floor ? ev.time : l->span_floor, &ev.pid, &ev.tid);
	}
	if (!r->merged)
		return consume(r, &ev, skipped, err);

	if (!l->filling) {
		pthread_mutex_lock(&r->lock);
		l->filling = r->free_blocks;
		if (l->filling)
			r->free_blocks = l->filling->next;
		pthread_mutex_unlock(&r->lock);
		if (!l->filling && !(l->filling = malloc(sizeof(*l->filling))))
			return rv_error_set(err, ENOMEM, "out of memory for decoded events");
		l->filling->n = 0;
		l->filling->messages_used = 0;
		l->filling->next = NULL;
	}
	struct block *b = l->filling;
	struct queued *q = &b->items[b->n++];
	q->ev = ev;
	q->skipped = skipped;
	if (ev.kind == RV_EVENT_TRACE_ERROR) {
		char *m = b->messages + b->messages_used;
		int n = snprintf(m, MESSAGE_MAX, "%s",
				 ev.error.message ? ev.error.message : "decode error");

		q->ev.error.message = m;
		b->messages_used += (n < MESSAGE_MAX ? (size_t)n : MESSAGE_MAX - 1) + 1;
	}
	if (b->n < BLOCK_EVENTS && b->messages_used + MESSAGE_MAX <= BLOCK_MESSAGES)
		return 0;

	pthread_mutex_lock(&r->lock);
	while (l->queued >= MAX_QUEUED_BLOCKS && !r->abort)
		pthread_cond_wait(&r->space, &r->lock);
	if (r->abort) {
		pthread_mutex_unlock(&r->lock);
		return rv_error_set(err, ECANCELED, "decoding stopped");
	}
	queue_filling(l);
	pthread_cond_broadcast(&r->data);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* Events from the decoder, a batch at a time, on a thread's lane (taken as
 * they come, on this thread): runs that need nothing but the sink go to its
 * batch form, the rest one by one through consume. */
static int lane_sink_batch(void *ctx, const struct rv_pt_batch *b, struct rv_error *err)
{
	struct buffer_lane *l = ctx;
	struct capture_decode *r = l->run;
	const struct rv_event *evs = b->events;
	size_t n = b->n;
	uint64_t last = 0;
	int ret = 0;

	/* progress_update's count, once for the batch */
	l->since_progress += n - 1;
	progress_update(l, evs[n - 1].time);
	if (plain_batch(r, b, &last))
		return consume_plain(r, evs, n, last, err);
	for (size_t i = 0; i < n;) {
		uint64_t skipped = 0;
		size_t run = plain_run(r, evs + i, n - i, &last);

		if (run) {
			ret = consume_plain(r, evs + i, run, last, err);
			i += run;
		} else {
			if (evs[i].kind == RV_EVENT_TRACE_ERROR &&
			    evs[i].error.offset != UINT64_MAX)
				skipped = psb_skipped(&l->psb, evs[i].error.offset, l->buf->size);
			ret = consume(r, &evs[i], skipped, err);
			i++;
		}
		if (ret < 0)
			break;
	}
	return ret;
}

/* Decodes the lane's buffers, in order. */
static int lane_decode(struct buffer_lane *l, struct rv_error *err)
{
	const struct rv_pt_capture *c = l->run->c;
	int ret = 0;

	for (size_t i = 0; i < l->nr_bufs && !ret; i++) {
		struct rv_pt_decode_options o;
		struct rv_pt_stats s;

		l->buf = &c->buffers[l->bufs[i]];
		l->est_offset = 0;
		l->have_interval = false;
		l->span_floor = 0;
		if (psb_build(c, l->buf, &l->psb))
			return rv_error_set(err, ENOMEM, "out of memory indexing the trace");
		memset(&o, 0, sizeof(o));
		o.config = c->config;
		o.time_conv = c->have_time_conv ? &c->time_conv : NULL;
		o.pid = l->pid;
		o.tid = l->tid;
		o.image = c->kernel_image;
		o.resolve = lane_resolve;
		o.resolve_ctx = l;
		o.iscache = c->iscache;
		o.populate = lane_populate;
		o.populate_ctx = l;
		o.function_at = capture_function_at;
		o.function_at_ctx = (void *)c;
		o.jobs = l->jobs;
		o.chunk_bytes = c->chunk_bytes;
		o.decoder = c->decoder;
		/* a thread's lane takes events as they come: a batch at a time */
		if (l->cpu == PTC_NONE && !l->run->merged && l->run->sink_batch)
			o.sink_batch = lane_sink_batch;
		ret = rv_pt_decode(l->buf->data, (size_t)l->buf->size, &o, lane_sink, l, &s, err);
		rv_pt_stats_merge(&l->stats, &s);
		l->done_bytes += l->buf->size;
		atomic_store_explicit(&l->progress, l->done_bytes, memory_order_relaxed);
	}
	return ret;
}

static void *producer(void *arg)
{
	struct buffer_lane *l = arg;
	struct capture_decode *r = l->run;
	int rc = lane_decode(l, &l->err);

	pthread_mutex_lock(&r->lock);
	if (l->filling && l->filling->n && !r->abort)
		queue_filling(l);
	if (l->filling) {
		l->filling->next = r->free_blocks;
		r->free_blocks = l->filling;
		l->filling = NULL;
	}
	l->rc = rc;
	l->done = true;
	pthread_cond_broadcast(&r->data);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/* ---- lanes ---- */

static struct buffer_lane *lane_for(struct capture_decode *r, uint32_t cpu, uint32_t tid)
{
	for (size_t i = 0; i < r->nr_lanes; i++)
		if (r->lanes[i].cpu == cpu && (cpu != PTC_NONE || r->lanes[i].tid == tid))
			return &r->lanes[i];
	if (rv_array_reserve(&r->lanes, &r->cap_lanes, r->nr_lanes + 1, sizeof(*r->lanes), 8))
		return NULL;
	struct buffer_lane *l = &r->lanes[r->nr_lanes];
	memset(l, 0, sizeof(*l));
	l->index = r->nr_lanes++;
	l->cpu = cpu;
	l->tid = tid;
	pthread_mutex_init(&l->images_lock, NULL);
	return l;
}

static int make_lanes(struct capture_decode *r, bool per_cpu, struct rv_error *err)
{
	struct rv_pt_capture *c = r->c;

	r->nr_lanes = 0;
	for (size_t i = 0; i < c->nr_buffers; i++) {
		const struct rv_perf_auxtrace *a = &c->buffers[i].aux;
		bool cpu_buffer = c->info.per_cpu_mmaps && a->cpu != PTC_NONE;
		struct buffer_lane *l;

		if (cpu_buffer != per_cpu)
			continue;
		l = lane_for(r, per_cpu ? a->cpu : PTC_NONE, per_cpu ? PTC_NONE : a->tid);
		if (!l ||
		    rv_array_reserve(&l->bufs, &l->cap_bufs, l->nr_bufs + 1, sizeof(*l->bufs), 8))
			return rv_error_set(err, ENOMEM, "out of memory");
		l->bufs[l->nr_bufs++] = i;
	}
	for (size_t i = 0; i < r->nr_lanes; i++) {
		struct buffer_lane *l = &r->lanes[i];
		const struct ptc_thread *t = ptc_thread_find(c, l->tid);

		l->run = r;
		if (per_cpu) {
			l->timeline = ptc_cpu_find(c, l->cpu);
			l->pid = l->tid = PTC_NONE;
		} else {
			l->pid = t ? t->pid : l->tid;
		}
	}
	return 0;
}

static void lanes_free(struct capture_decode *r)
{
	for (size_t i = 0; i < r->nr_lanes; i++) {
		struct buffer_lane *l = &r->lanes[i];

		while (l->head) {
			struct block *b = l->head;

			l->head = b->next;
			free(b);
		}
		free(l->consuming);
		free(l->filling);
		free(l->bufs);
		psb_free(&l->psb);
		for (size_t j = 0; j < l->nr_images; j++)
			rv_pt_image_free(l->images[j].copy);
		free(l->images);
		pthread_mutex_destroy(&l->images_lock);
	}
	free(r->lanes);
	r->lanes = NULL;
	r->nr_lanes = r->cap_lanes = 0;
	while (r->free_blocks) {
		struct block *b = r->free_blocks;

		r->free_blocks = b->next;
		free(b);
	}
}

/* Per-thread lanes, one after another on this thread. */
static int decode_threads(struct capture_decode *r, struct rv_pt_stats *stats, struct rv_error *err)
{
	int ret = make_lanes(r, false, err);

	for (size_t i = 0; !ret && i < r->nr_lanes; i++) {
		struct buffer_lane *l = &r->lanes[i];
		struct ptc_thread *t = ptc_thread_find_mut(r->c, l->tid);

		l->jobs = r->c->jobs;
		ret = lane_decode(l, err);
		rv_pt_stats_merge(stats, &l->stats);
		if (!ret && t)
			ret = emit_exit(r, t, err);
	}
	lanes_free(r);
	return ret;
}

/* The next queued event of a lane, waiting for its producer; NULL when the
 * lane has no more. */
static struct queued *lane_head(struct capture_decode *r, struct buffer_lane *l)
{
	if (l->exhausted)
		return NULL;
	if (l->consuming && l->pos < l->consuming->n)
		return &l->consuming->items[l->pos];
	pthread_mutex_lock(&r->lock);
	if (l->consuming) {
		l->consuming->next = r->free_blocks;
		r->free_blocks = l->consuming;
		l->consuming = NULL;
	}
	while (!l->head && !l->done)
		pthread_cond_wait(&r->data, &r->lock);
	if (l->head) {
		l->consuming = l->head;
		l->head = l->head->next;
		if (!l->head)
			l->tail = NULL;
		l->queued--;
		l->pos = 0;
		pthread_cond_broadcast(&r->space);
	} else {
		l->exhausted = true;
	}
	pthread_mutex_unlock(&r->lock);
	return l->exhausted ? NULL : &l->consuming->items[0];
}

static int merge(struct capture_decode *r, struct rv_error *err)
{
	for (;;) {
		struct buffer_lane *best = NULL;
		struct queued *best_q = NULL;

		for (size_t i = 0; i < r->nr_lanes; i++) {
			struct queued *q = lane_head(r, &r->lanes[i]);

			if (q && (!best_q || q->ev.time < best_q->ev.time)) {
				best = &r->lanes[i];
				best_q = q;
			}
		}
		if (!best)
			return 0;
		int ret = consume(r, &best_q->ev, best_q->skipped, err);
		if (ret)
			return ret;
		best->pos++;
	}
}

/* Per-CPU lanes: producers and the merge. */
static int decode_cpus(struct capture_decode *r, struct rv_pt_stats *stats, struct rv_error *err)
{
	int ret = make_lanes(r, true, err);
	unsigned jobs = r->c->jobs ? r->c->jobs : 1;

	if (ret || !r->nr_lanes) {
		lanes_free(r);
		return ret;
	}
	r->merged = true;
	for (size_t i = 0; i < r->nr_lanes; i++) {
		struct buffer_lane *l = &r->lanes[i];

		l->jobs = (unsigned)((jobs + r->nr_lanes - 1) / r->nr_lanes);
		if (pthread_create(&l->thread, NULL, producer, l)) {
			ret = rv_error_set(err, EAGAIN, "cannot start a decoding thread");
			break;
		}
		l->started = true;
	}
	if (!ret)
		ret = merge(r, err);
	pthread_mutex_lock(&r->lock);
	r->abort = ret != 0;
	pthread_cond_broadcast(&r->space);
	pthread_mutex_unlock(&r->lock);
	for (size_t i = 0; i < r->nr_lanes; i++) {
		struct buffer_lane *l = &r->lanes[i];

		if (l->started)
			pthread_join(l->thread, NULL);
		rv_pt_stats_merge(stats, &l->stats);
		if (!ret && l->rc < 0 && l->rc != -ECANCELED) {
			ret = l->rc;
			if (err)
				*err = l->err;
		}
	}
	for (size_t i = 0; !ret && i < r->c->nr_threads; i++)
		ret = emit_exit(r, &r->c->threads[i], err);
	lanes_free(r);
	return ret;
}

int rv_pt_capture_decode(struct rv_pt_capture *c, rv_pt_sink_fn sink, void *sink_ctx,
			 struct rv_pt_stats *stats, struct rv_error *err)
{
	return rv_pt_capture_decode_batches(c, sink, NULL, sink_ctx, stats, err);
}

int rv_pt_capture_decode_batches(struct rv_pt_capture *c, rv_pt_sink_fn sink,
				 rv_event_batch_fn sink_batch, void *sink_ctx,
				 struct rv_pt_stats *stats, struct rv_error *err)
{
	struct capture_decode r;
	int ret;

	memset(stats, 0, sizeof(*stats));
	if (!c || !sink)
		return rv_error_set(err, EINVAL, "no capture or no sink to decode into");
	memset(&r, 0, sizeof(r));
	r.c = c;
	r.sink = sink;
	r.sink_batch = sink_batch;
	r.sink_ctx = sink_ctx;
	r.last_percent = -1;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.data, NULL);
	pthread_cond_init(&r.space, NULL);
	for (size_t i = 0; i < c->nr_missing; i++)
		c->missing[i].pub.errors = c->missing[i].pub.skipped_bytes = 0;
	for (size_t i = 0; i < c->nr_threads; i++) {
		c->threads[i].named = false;
		c->threads[i].has_events = false;
		c->threads[i].last_time = 0;
		c->threads[i].exit_sent = false;
		c->threads[i].win_next = 0;
	}

	progress_print(&r, true);
	ret = decode_threads(&r, stats, err);
	if (!ret)
		ret = decode_cpus(&r, stats, err);
	if (!ret)
		ret = windows_rest(&r, err);
	progress_clear(&r);
	if (c->nr_applied)
		rv_debug("--filter windows: %zu applied, %" PRIu64 " events outside them left out",
			 c->nr_applied, r.outside_windows);
	pthread_cond_destroy(&r.space);
	pthread_cond_destroy(&r.data);
	pthread_mutex_destroy(&r.lock);
	return ret;
}
