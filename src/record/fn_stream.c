/* fn_stream.c: the function tracer's rings drained into the capture or its
 * flight recorder; see fn_stream.h. */
#include "record/fn_stream.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rv_fn_stream;

/* What a ring's callback knows: its stream and CPU. */
struct ring_ctx {
	struct rv_fn_stream *s;
	uint32_t cpu;
};

struct rv_fn_stream {
	struct rv_fn_stream_config config;
	struct ring_buffer *rb;
	struct ring_ctx *rings;
	uint64_t *lost_seen; /* per CPU: what the last drain wrote */
	struct rv_fn_flight flight;
	struct rv_fn_stream_stats stats;
	struct rv_fn_record current; /* the source's record being written */
	struct rv_error *err;	     /* where the callback's failures are described */
	int failed;
};

uint64_t rv_fn_record_ip(const struct rv_fn_record *r)
{
	return r->type == RV_FN_ENTER || r->type == RV_FN_EXIT ? r->addr : 0;
}

/* ---- the flight recorder ---- */

int rv_fn_flight_init(struct rv_fn_flight *f, uint64_t capacity_bytes)
{
	uint64_t n = capacity_bytes / sizeof(struct rv_fn_record);

	memset(f, 0, sizeof(*f));
	if (n == 0)
		n = 1;
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	f->records = malloc((size_t)n * sizeof(*f->records));
	if (!f->records) {
		rv_fn_flight_destroy(f);
		return -ENOMEM;
	}
	f->capacity = (size_t)n;
	return 0;
}

void rv_fn_flight_destroy(struct rv_fn_flight *f)
{
	free(f->records);
	free(f->order);
	memset(f, 0, sizeof(*f));
}

void rv_fn_flight_push(struct rv_fn_flight *f, const struct rv_fn_record *r, uint32_t cpu)
{
	size_t at;

	if (f->count == f->capacity) {
		at = f->head;
		f->head = (f->head + 1) % f->capacity;
		f->evicted++;
	} else {
		at = (f->head + f->count) % f->capacity;
		f->count++;
	}
	f->records[at] = *r;
	f->records[at].flags = (uint16_t)((r->flags & ~RV_FN_FLAG_CPU_MASK) |
					  ((cpu << RV_FN_FLAG_CPU_SHIFT) & RV_FN_FLAG_CPU_MASK));
}

static int by_time(const void *a, const void *b, void *ctx)
{
	const struct rv_fn_flight *sorting = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t tx = sorting->records[x].time, ty = sorting->records[y].time;
	/* age: the position from the oldest, which keeps arrival order */
	size_t ax = (x + sorting->capacity - sorting->head) % sorting->capacity;
	size_t ay = (y + sorting->capacity - sorting->head) % sorting->capacity;

	if (tx != ty)
		return tx < ty ? -1 : 1;
	return ax < ay ? -1 : ax > ay;
}

int rv_fn_flight_sort(struct rv_fn_flight *f)
{
	free(f->order);
	f->order = malloc((f->count ? f->count : 1) * sizeof(*f->order));
	if (!f->order)
		return -ENOMEM;
	for (size_t i = 0; i < f->count; i++)
		f->order[i] = (uint32_t)((f->head + i) % f->capacity);
	qsort_r(f->order, f->count, sizeof(*f->order), by_time, f);
	f->next = 0;
	return 0;
}

bool rv_fn_flight_get(const struct rv_fn_flight *f, size_t i, struct rv_fn_record *out,
		      uint32_t *cpu)
{
	if (!f->order || i >= f->count)
		return false;
	*out = f->records[f->order[i]];
	*cpu = (out->flags & RV_FN_FLAG_CPU_MASK) >> RV_FN_FLAG_CPU_SHIFT;
	out->flags &= (uint16_t)~RV_FN_FLAG_CPU_MASK;
	return true;
}

/* ---- draining ---- */

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rv_fn_stream_take(struct rv_fn_stream *s, uint32_t cpu, const void *data, size_t size)
{
	const struct rv_fn_stream_config *c = &s->config;
	struct rv_fn_record r;

	if (size != sizeof(r)) {
		s->stats.malformed++;
		return 0;
	}
	memcpy(&r, data, sizeof(r));
	s->stats.records++;
	/* The live status's counts: what has run so far, per function. */
	if (r.type == RV_FN_ENTER) {
		if (c->calls && r.arg < c->nr_funcs)
			c->calls[r.arg]++;
		if (c->calls_total)
			(*c->calls_total)++;
	}
	if (!c->full_execution) {
		rv_fn_flight_push(&s->flight, &r, cpu);
		return 0;
	}
	{
		struct rv_output_sample out = {
			.time = r.time,
			.ip = rv_fn_record_ip(&r),
			.cpu = cpu,
			.pid = r.pid,
			.tid = r.tid,
			.raw = &r,
			.raw_size = sizeof(r),
		};
		int ret = rv_sample_engine_push_output(c->engine, &out, s->err);

		if (ret) {
			s->failed = ret;
			return ret; /* stops the consumer */
		}
	}
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct ring_ctx *rc = ctx;

	return rv_fn_stream_take(rc->s, rc->cpu, data, size);
}

int rv_fn_stream_open(struct rv_fn_stream **out, const struct rv_fn_stream_config *config,
		      struct rv_error *err)
{
	struct rv_fn_stream *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return rv_error_set(err, ENOMEM, "out of memory");
	s->config = *config;
	s->rings = calloc(config->nr_rings ? config->nr_rings : 1, sizeof(*s->rings));
	s->lost_seen = calloc(config->nr_rings ? config->nr_rings : 1, sizeof(*s->lost_seen));
	if (!s->rings || !s->lost_seen) {
		rv_fn_stream_free(s);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!config->full_execution && rv_fn_flight_init(&s->flight, config->flight_bytes)) {
		rv_fn_stream_free(s);
		return rv_error_set(err, ENOMEM, "cannot allocate a %llu-byte flight recorder",
				    (unsigned long long)config->flight_bytes);
	}
	for (size_t i = 0; i < config->nr_rings; i++) {
		int ret;

		s->rings[i] = (struct ring_ctx){ .s = s, .cpu = (uint32_t)i };
		if (!s->rb) {
			s->rb = ring_buffer__new(config->ring_fds[i], on_record, &s->rings[i],
						 NULL);
			ret = s->rb ? 0 : -errno;
		} else {
			ret = ring_buffer__add(s->rb, config->ring_fds[i], on_record, &s->rings[i]);
		}
		if (ret) {
			rv_fn_stream_free(s);
			return rv_error_set(err, -ret,
					    "cannot map CPU %zu's ring buffer of the function "
					    "tracer: %s",
					    i, strerror(-ret));
		}
	}
	*out = s;
	return 0;
}

/* Each CPU's new losses into the capture, stamped now. */
static int note_losses(struct rv_fn_stream *s, struct rv_error *err)
{
	uint64_t now = 0;

	if (!s->config.lost)
		return 0;
	for (size_t cpu = 0; cpu < s->config.nr_rings; cpu++) {
		uint64_t lost = s->config.lost(s->config.lost_ctx, (uint32_t)cpu);
		int ret;

		if (lost <= s->lost_seen[cpu])
			continue;
		if (!now)
			now = monotonic_ns();
		ret = rv_sample_engine_add_lost(s->config.engine, (uint32_t)cpu,
						lost - s->lost_seen[cpu], now, err);
		if (ret)
			return ret;
		s->stats.lost += lost - s->lost_seen[cpu];
		s->lost_seen[cpu] = lost;
	}
	return 0;
}

int rv_fn_stream_drain(struct rv_fn_stream *s, struct rv_error *err)
{
	int ret;

	if (!s->rb)
		return note_losses(s, err);
	s->err = err;
	s->failed = 0;
	ret = ring_buffer__consume(s->rb);
	if (s->failed)
		return s->failed;
	if (ret < 0)
		return rv_error_set(err, -ret, "cannot read the function tracer's ring buffers: %s",
				    strerror(-ret));
	return note_losses(s, err);
}

/* The engine's source: the flight recorder in time order. */
static bool next_kept(void *ctx, struct rv_output_sample *out)
{
	struct rv_fn_stream *s = ctx;
	const struct rv_fn_record *r = &s->current;
	uint32_t cpu = 0;

	if (!rv_fn_flight_get(&s->flight, s->flight.next, &s->current, &cpu))
		return false;
	s->flight.next++;
	*out = (struct rv_output_sample){
		.time = r->time,
		.ip = rv_fn_record_ip(r),
		.cpu = cpu,
		.pid = r->pid,
		.tid = r->tid,
		.raw = r,
		.raw_size = sizeof(*r),
	};
	return true;
}

int rv_fn_stream_finish(struct rv_fn_stream *s, struct rv_error *err)
{
	int ret = rv_fn_stream_drain(s, err);
	struct rv_output_source source = { .next = next_kept, .ctx = s };

	if (ret || s->config.full_execution)
		return ret;
	if (rv_fn_flight_sort(&s->flight))
		return rv_error_set(err, ENOMEM, "out of memory sorting %zu records",
				    s->flight.count);
	s->stats.evicted = s->flight.evicted;
	s->stats.kept = s->flight.count;
	rv_sample_engine_set_source(s->config.engine, &source);
	return 0;
}

void rv_fn_stream_stats(const struct rv_fn_stream *s, struct rv_fn_stream_stats *out)
{
	*out = s->stats;
	if (!s->config.full_execution) {
		out->evicted = s->flight.evicted;
		out->kept = s->flight.count;
	}
}

void rv_fn_stream_free(struct rv_fn_stream *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	rv_fn_flight_destroy(&s->flight);
	free(s->rings);
	free(s->lost_seen);
	free(s);
}
