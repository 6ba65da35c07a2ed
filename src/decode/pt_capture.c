/* pt_capture.c: opening an Intel PT capture; see pt_capture.h.
 *
 * One pass over the records keeps what decoding needs: the PT configuration
 * (AUXTRACE_INFO, TIME_CONV, the cpuid), where each AUXTRACE payload is, and
 * the sideband, parsed into small records. The sideband is then sorted by
 * time (perf writes it per CPU, so the file is not in time order) and
 * replayed: threads and their names, processes and their generations (one per
 * exec), each generation's executable mappings and libipt image, and per CPU
 * the timeline of which task ran. Kernel code (kcore or a relocated vmlinux)
 * is read before the replay, so that every image starts with it. The window
 * marks of an ungated --filter recording are kept per thread, for the decode
 * to apply.
 *
 * Not here: decoding (pt_capture_decode.c), the packets (pt_decoder.c), the
 * perf.data layout (capture/).
 */
#define RV_LOG_DOMAIN "pt-capture"

#include "decode/pt_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/synth.h"
#include "decode/pt_capture_internal.h"
#include "util/array.h"
#include "util/log.h"

/* Limits against corrupt input: a record names at most this many CPUs. */
#define MAX_CPU_ID 65536u

/* The libipt section cache keeps this much code mapped (plus its block caches). */
#define ISCACHE_LIMIT (512ull << 20)

#ifndef PERF_RECORD_MISC_COMM_EXEC
#define PERF_RECORD_MISC_COMM_EXEC (1 << 13)
#endif

#define KERNEL_NAME "[kernel.kallsyms]"

/* ---- small helpers ---- */

struct ptc_arena_block {
	struct ptc_arena_block *next;
	char text[];
};

static const char *arena_strndup(struct ptc_arena *a, const char *s, size_t len)
{
	struct ptc_arena_block *b = malloc(sizeof(*b) + len + 1);

	if (!b)
		return NULL;
	memcpy(b->text, s, len);
	b->text[len] = '\0';
	b->next = a->blocks;
	a->blocks = b;
	return b->text;
}

static void arena_free(struct ptc_arena *a)
{
	while (a->blocks) {
		struct ptc_arena_block *next = a->blocks->next;

		free(a->blocks);
		a->blocks = next;
	}
}

static uint64_t hash_id(uint32_t id)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull;

	return x ^ (x >> 29);
}

/* Index of id, or SIZE_MAX. */
static size_t index_get(const struct ptc_index *ix, uint32_t id)
{
	if (!ix->cap)
		return SIZE_MAX;
	for (size_t i = hash_id(id) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		uint64_t s = ix->slots[i];

		if (!s)
			return SIZE_MAX;
		if ((uint32_t)(s >> 32) == id)
			return (size_t)(uint32_t)s - 1;
	}
}

static bool index_put(struct ptc_index *ix, uint32_t id, size_t index)
{
	if ((ix->count + 1) * 2 > ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		uint64_t *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return false;
		for (size_t i = 0; i < ix->cap; i++) {
			uint64_t s = ix->slots[i];

			if (!s)
				continue;
			size_t j = hash_id((uint32_t)(s >> 32)) & (cap - 1);
			while (slots[j])
				j = (j + 1) & (cap - 1);
			slots[j] = s;
		}
		free(ix->slots);
		ix->slots = slots;
		ix->cap = cap;
	}
	size_t i = hash_id(id) & (ix->cap - 1);
	while (ix->slots[i] && (uint32_t)(ix->slots[i] >> 32) != id)
		i = (i + 1) & (ix->cap - 1);
	if (!ix->slots[i])
		ix->count++;
	ix->slots[i] = (uint64_t)id << 32 | (uint64_t)(index + 1);
	return true;
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static uint32_t load_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Why the file at path cannot be read as code, or NULL when it can. */
static const char *file_problem(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return errno == ENOENT || errno == ENOTDIR ? "no such file" : strerror(errno);
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	if (access(path, R_OK))
		return strerror(errno);
	return NULL;
}

static bool is_regular_file(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- lookups (shared with pt_capture_decode.c) ---- */

const struct ptc_thread *ptc_thread_find(const struct rv_pt_capture *c, uint32_t tid)
{
	size_t i = index_get(&c->thread_index, tid);

	return i == SIZE_MAX ? NULL : &c->threads[i];
}

struct ptc_thread *ptc_thread_find_mut(struct rv_pt_capture *c, uint32_t tid)
{
	size_t i = index_get(&c->thread_index, tid);

	return i == SIZE_MAX ? NULL : &c->threads[i];
}

const struct ptc_process *ptc_process_find(const struct rv_pt_capture *c, uint32_t pid)
{
	size_t i = index_get(&c->process_index, pid);

	return i == SIZE_MAX ? NULL : &c->processes[i];
}

const struct ptc_generation *ptc_generation_at(const struct ptc_process *p, uint64_t time)
{
	size_t lo = 1, hi;

	if (!p || !p->nr_gens)
		return NULL;
	/* the last generation that began at or before time, else the first */
	hi = p->nr_gens;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->gens[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &p->gens[lo - 1];
}

const struct ptc_cpu *ptc_cpu_find(const struct rv_pt_capture *c, uint32_t cpu)
{
	for (size_t i = 0; i < c->nr_cpus; i++)
		if (c->cpus[i].cpu == cpu)
			return &c->cpus[i];
	return NULL;
}

bool ptc_task_at(const struct ptc_cpu *cpu, uint64_t time, uint32_t *pid, uint32_t *tid)
{
	size_t lo = 0, hi;

	if (!cpu || !cpu->nr || cpu->points[0].time > time)
		return false;
	hi = cpu->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cpu->points[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pid = cpu->points[lo - 1].pid;
	*tid = cpu->points[lo - 1].tid;
	return true;
}

size_t ptc_comm_at(const struct ptc_thread *t, uint64_t time)
{
	size_t lo = 0, hi;

	if (!t || !t->nr_comms)
		return SIZE_MAX;
	if (t->comms[0].time > time)
		return 0; /* named before its first COMM: take that one */
	hi = t->nr_comms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->comms[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

static const struct ptc_mapping *mapping_at(const struct ptc_mappings *m, uint64_t ip)
{
	/* newest first: a later mapping replaces what it overlaps */
	for (size_t i = m->nr; i-- > 0;)
		if (ip >= m->v[i].start && ip < m->v[i].end)
			return &m->v[i];
	return NULL;
}

size_t ptc_missing_at(const struct rv_pt_capture *c, uint32_t pid, uint64_t time, uint64_t ip)
{
	const struct ptc_mapping *m;

	if (ip >= PTC_KERNEL_START) {
		m = mapping_at(&c->kernel_maps, ip);
		if (m)
			return m->missing;
		/* kernel code outside every module: the kernel's own entry */
		for (size_t i = 0; i < c->nr_missing; i++)
			if (c->missing[i].kernel && !strcmp(c->missing[i].pub.path, KERNEL_NAME))
				return i;
		return SIZE_MAX;
	}
	const struct ptc_generation *g = ptc_generation_at(ptc_process_find(c, pid), time);
	if (!g)
		return SIZE_MAX;
	m = mapping_at(&g->maps, ip);
	return m ? m->missing : SIZE_MAX;
}

/* ---- the missing list ---- */

static size_t missing_add(struct rv_pt_capture *c, const char *path, const char *reason,
			  bool kernel)
{
	for (size_t i = 0; i < c->nr_missing; i++) {
		if (!strcmp(c->missing[i].pub.path, path)) {
			c->missing[i].pub.mappings++;
			return i;
		}
	}
	if (rv_array_reserve(&c->missing, &c->cap_missing, c->nr_missing + 1, sizeof(*c->missing), 8))
		return SIZE_MAX;
	const char *p = arena_strndup(&c->arena, path, strlen(path));
	const char *r = arena_strndup(&c->arena, reason, strlen(reason));
	if (!p || !r)
		return SIZE_MAX;
	struct ptc_missing *m = &c->missing[c->nr_missing];
	memset(m, 0, sizeof(*m));
	m->pub.path = p;
	m->pub.reason = r;
	m->pub.mappings = 1;
	m->kernel = kernel;
	return c->nr_missing++;
}

/* ---- sideband records, parsed ---- */

/* One sideband record, kept for replay in time order. */
struct sb_rec {
	uint64_t time;
	uint64_t order; /* position in the file, for ties */
	uint32_t type;
	uint16_t misc;
	uint32_t cpu;
	uint32_t pid, tid;   /* the record's task (switches: the sample_id's) */
	uint32_t ppid, ptid; /* FORK/EXIT; switches: the next or previous task */
	uint64_t start, len, pgoff;
	bool flag; /* COMM: exec; SWITCH: out; MMAP: executable */
	const char *name;
};

struct sb_list {
	struct sb_rec *v;
	size_t nr, cap;
};

/* What the pass over the records saw besides the sideband. */
struct scan {
	struct sb_list sb;
	bool have_info;
	uint64_t samples;
	const char *sample_event; /* the first sample's event name */
	uint64_t kernel_ref_addr; /* from the kernel's MMAP: the ref symbol's address */
	const char *kernel_ref_sym;
};

static int nomem(struct rv_error *err)
{
	return rv_error_set(err, ENOMEM, "out of memory reading the capture");
}

/* Copies a NUL-terminated string that must end within [p, p + room). */
static const char *record_string(struct rv_pt_capture *c, const uint8_t *p, size_t room, bool *bad)
{
	size_t n = strnlen((const char *)p, room);

	if (n == room) {
		*bad = true;
		return NULL;
	}
	return arena_strndup(&c->arena, (const char *)p, n);
}

static int parse_sideband(struct rv_pt_capture *c, struct scan *s,
			  const struct perf_event_header *h, uint64_t order, struct rv_error *err)
{
	const uint8_t *b = (const uint8_t *)h;
	struct rv_perf_sample_id sid = { 0 };
	struct rv_error ignored;
	struct sb_rec r;
	bool bad = false;

	memset(&r, 0, sizeof(r));
	r.type = h->type;
	r.misc = h->misc;
	r.order = order;
	r.cpu = PTC_NONE;
	r.pid = r.tid = r.ppid = r.ptid = PTC_NONE;
	bool have_sid =
		rv_perf_reader_parse_sample_id(c->reader, h, &sid, &ignored) == 0 && sid.valid;

	if (have_sid) {
		r.time = sid.time;
		r.cpu = sid.cpu;
		r.pid = sid.pid;
		r.tid = sid.tid;
	}
	switch (h->type) {
	case PERF_RECORD_COMM:
		if (h->size < 17)
			return 0;
		r.pid = load_u32(b + 8);
		r.tid = load_u32(b + 12);
		r.flag = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
		r.name = record_string(c, b + 16, h->size - 16, &bad);
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (h->size < 32)
			return 0;
		r.pid = load_u32(b + 8);
		r.ppid = load_u32(b + 12);
		r.tid = load_u32(b + 16);
		r.ptid = load_u32(b + 20);
		if (!have_sid)
			r.time = load_u64(b + 24);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct rv_perf_mmap m;

		if (rv_perf_mmap_parse(h, &m))
			return 0; /* short, or an unterminated name: skipped */
		r.pid = m.pid;
		r.tid = m.tid;
		r.start = m.start;
		r.len = m.len;
		r.pgoff = m.pgoff;
		r.flag = m.executable;
		r.name = arena_strndup(&c->arena, m.filename, strlen(m.filename));
		break;
	}
	case PERF_RECORD_ITRACE_START: {
		struct rv_perf_itrace_start it;

		if (rv_perf_itrace_start_parse(h, &it, &ignored))
			return 0;
		r.pid = it.pid;
		r.tid = it.tid;
		break;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		struct rv_perf_switch sw;

		if (!have_sid || rv_perf_switch_parse(h, &sw, &ignored))
			return 0; /* a switch without task, CPU and time says nothing */
		r.flag = sw.out;
		r.ppid = sw.next_prev_pid;
		r.ptid = sw.next_prev_tid;
		break;
	}
	default:
		return 0;
	}
	if (bad)
		return 0; /* an unterminated name: skip the record rather than guess */
	if ((h->type == PERF_RECORD_COMM || h->type == PERF_RECORD_MMAP ||
	     h->type == PERF_RECORD_MMAP2) &&
	    !r.name)
		return nomem(err);
	if ((h->type == PERF_RECORD_MMAP || h->type == PERF_RECORD_MMAP2) && r.name &&
	    !strncmp(r.name, KERNEL_NAME, strlen(KERNEL_NAME)) && r.name[strlen(KERNEL_NAME)]) {
		/* perf's kernel map: pgoff is the address of the symbol it names */
		s->kernel_ref_sym = r.name + strlen(KERNEL_NAME);
		s->kernel_ref_addr = r.pgoff;
	}
	if (rv_array_reserve(&s->sb.v, &s->sb.cap, s->sb.nr + 1, sizeof(*s->sb.v), 8))
		return nomem(err);
	s->sb.v[s->sb.nr++] = r;
	return 0;
}

static int compare_sb(const void *a, const void *b)
{
	const struct sb_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* ---- the pass over the records ---- */

static int add_buffer(struct rv_pt_capture *c, const struct rv_perf_record *rec,
		      struct rv_error *err)
{
	struct rv_perf_auxtrace a;
	struct rv_error ignored;

	if (rv_perf_auxtrace_parse(rec->header, &a, &ignored))
		return 0; /* too short to say what it holds: nothing to decode */
	if (rv_array_reserve(&c->buffers, &c->cap_buffers, c->nr_buffers + 1, sizeof(*c->buffers), 8))
		return nomem(err);
	struct ptc_buffer *b = &c->buffers[c->nr_buffers++];
	b->aux = a;
	/* The payload lives in the reader's mapping of the file (or its copy of
	 * a pipe) until the reader is freed; the record's size counts its padding. */
	b->data = rec->payload;
	b->size = a.size < rec->payload_size ? a.size : rec->payload_size;
	b->joined = NULL;
	b->pieces = 1;
	c->trace_bytes += b->size;
	return 0;
}

/* A PERF_SAMPLE_AUX sample (a gate's in-kernel snapshot): its AUX data is a
 * buffer of its thread (and CPU) of its own. */
static int add_aux_sample(struct rv_pt_capture *c, const struct rv_perf_sample *sample,
			  struct rv_error *err)
{
	if (!sample->attr || !(sample->sample_type & PERF_SAMPLE_AUX) || !sample->aux_size ||
	    !sample->aux)
		return 0;
	if (rv_array_reserve(&c->buffers, &c->cap_buffers, c->nr_buffers + 1, sizeof(*c->buffers), 8))
		return nomem(err);
	struct ptc_buffer *b = &c->buffers[c->nr_buffers++];
	memset(b, 0, sizeof(*b));
	b->aux.size = sample->aux_size;
	b->aux.idx = PTC_NONE;
	b->aux.tid = sample->sample_type & PERF_SAMPLE_TID ? sample->tid : PTC_NONE;
	b->aux.cpu = sample->sample_type & PERF_SAMPLE_CPU ? sample->cpu : PTC_NONE;
	b->aux.reference = sample->sample_type & PERF_SAMPLE_TIME ? sample->time : 0;
	b->data = sample->aux;
	b->size = sample->aux_size;
	c->trace_bytes += b->size;
	return 0;
}

/* Whether b goes on where prev (an earlier record of the same buffer) ended:
 * its offset is prev's end, give or take prev's zero padding to 8 bytes (the
 * writer pads AUXTRACE sizes; offsets count trace bytes only). *used is how
 * many of prev's bytes are trace. */
static bool continues(const struct ptc_buffer *prev, const struct ptc_buffer *b, uint64_t *used)
{
	uint64_t gap = b->aux.offset - prev->aux.offset;

	if (b->aux.offset < prev->aux.offset || prev->size != prev->aux.size ||
	    prev->aux.tid != b->aux.tid || prev->aux.cpu != b->aux.cpu || gap > prev->size ||
	    prev->size - gap >= 8)
		return false;
	for (uint64_t k = gap; k < prev->size; k++)
		if (prev->data[k])
			return false;
	*used = gap;
	return true;
}

/* Full mode: the AUXTRACE records of one buffer (idx, and its thread and
 * CPU) where each goes on where the one before ended are one stream, cut
 * only where the engine drained it: joined into one buffer (without the
 * padding between pieces), so that a packet cut in two is whole again and
 * the bytes before each piece's first PSB are decoded rather than skipped. */
static int join_pieces(struct rv_pt_capture *c, struct rv_error *err)
{
	size_t n = c->nr_buffers, kept = 0, *leader, *count;
	uint64_t *used, *total;
	int ret = 0;

	if (c->info.snapshot_mode || n < 2)
		return 0;
	leader = malloc(n * sizeof(*leader));
	count = calloc(n, sizeof(*count));
	used = malloc(n * sizeof(*used));
	total = calloc(n, sizeof(*total));
	if (!leader || !count || !used || !total) {
		ret = nomem(err);
		goto out;
	}
	/* The buffer each record joins (itself when none), and its bytes of trace. */
	for (size_t i = 0; i < n; i++) {
		const struct ptc_buffer *b = &c->buffers[i];

		leader[i] = i;
		used[i] = b->size;
		for (size_t j = i; b->pieces && j-- > 0;) {
			const struct ptc_buffer *prev = &c->buffers[j];

			if (!prev->pieces || prev->aux.idx != b->aux.idx)
				continue; /* a sample's, or another buffer's */
			if (continues(prev, b, &used[j]))
				leader[i] = leader[j];
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		count[leader[i]]++;
		total[leader[i]] += used[i];
	}
	/* One allocation per joined buffer, its pieces copied in order. */
	for (size_t i = 0; i < n && !ret; i++) {
		struct ptc_buffer *l = &c->buffers[i];
		uint64_t at = 0;

		if (leader[i] != i || count[i] < 2)
			continue;
		l->joined = total[i] <= SIZE_MAX ? malloc((size_t)total[i]) : NULL;
		if (!l->joined) {
			ret = rv_error_set(err, ENOMEM,
					   "out of memory joining %zu pieces of trace (%" PRIu64
					   " bytes)",
					   count[i], total[i]);
			break;
		}
		for (size_t k = i; k < n; k++) {
			if (leader[k] != i)
				continue;
			memcpy(l->joined + at, c->buffers[k].data, (size_t)used[k]);
			at += used[k];
		}
		l->data = l->joined;
		l->size = l->aux.size = total[i];
		l->pieces = count[i];
	}
	if (!ret) {
		for (size_t i = 0; i < n; i++)
			if (leader[i] == i)
				c->buffers[kept++] = c->buffers[i];
		if (kept < n)
			rv_debug("joined %zu full-mode pieces of trace into %zu buffers", n, kept);
		c->nr_buffers = kept;
		c->trace_bytes = 0;
		for (size_t i = 0; i < kept; i++)
			c->trace_bytes += c->buffers[i].size;
	}
out:
	free(leader);
	free(count);
	free(used);
	free(total);
	return ret;
}

/* A window or trigger mark (rv_mark), kept for the decode. A mark that does
 * not parse is left out: it changes no trace. */
static int add_window(struct rv_pt_capture *c, const struct rv_perf_sample *sample,
		      struct rv_error *err)
{
	struct rv_mark mark;
	struct rv_error ignored;
	struct ptc_window *w;

	if (rv_mark_parse(sample, &mark, &ignored))
		return 0;
	if (rv_array_reserve(&c->windows, &c->cap_windows, c->nr_windows + 1, sizeof(*c->windows), 8))
		return nomem(err);
	w = &c->windows[c->nr_windows];
	*w = (struct ptc_window){
		.pid = mark.pid,
		.tid = mark.tid,
		.begin = mark.time > mark.duration_ns ? mark.time - mark.duration_ns : 0,
		.end = mark.time,
		.flags = mark.flags,
		.trigger = mark.kind == RV_MARK_TRIGGER,
		.name = arena_strndup(&c->arena, mark.name, strlen(mark.name)),
	};
	if (!w->name)
		return nomem(err);
	c->nr_windows++;
	return 0;
}

static int note_sample(struct rv_pt_capture *c, struct scan *s, const struct perf_event_header *h,
		       struct rv_error *err)
{
	struct rv_perf_sample sample;
	struct rv_error ignored;

	s->samples++;
	if (rv_perf_reader_parse_sample(c->reader, h, &sample, &ignored))
		return 0; /* a sample that cannot be parsed holds nothing to decode */
	if (rv_sample_is_mark(&sample))
		return add_window(c, &sample, err);
	if (!s->sample_event && sample.attr && sample.attr->name)
		s->sample_event =
			arena_strndup(&c->arena, sample.attr->name, strlen(sample.attr->name));
	return add_aux_sample(c, &sample, err);
}

static int read_records(struct rv_pt_capture *c, struct scan *s, struct rv_error *err)
{
	struct rv_perf_record rec;
	uint64_t order = 0;
	int ret;

	for (;; order++) {
		int got = rv_perf_reader_next(c->reader, &rec, err);

		if (got == 0)
			return 0;
		if (got < 0) {
			if (!c->nr_buffers)
				return got;
			/* Damage after some trace: keep what came before it. */
			c->damage = strdup(err->message);
			rv_error_clear(err);
			if (!c->damage)
				return nomem(err);
			return 0;
		}
		const struct perf_event_header *h = rec.header;
		switch (h->type) {
		case RV_PERF_RECORD_AUXTRACE_INFO:
			if (s->have_info)
				break; /* perf writes one; a second says nothing new */
			ret = rv_intel_pt_info_parse(h, &c->info, err);
			if (ret)
				return ret;
			s->have_info = true;
			break;
		case RV_PERF_RECORD_TIME_CONV:
			if (rv_perf_time_conv_parse(h, &c->time_conv, err) == 0)
				c->have_time_conv = true;
			rv_error_clear(err);
			break;
		case RV_PERF_RECORD_AUXTRACE:
			ret = add_buffer(c, &rec, err);
			if (ret)
				return ret;
			break;
		case PERF_RECORD_SAMPLE:
			ret = note_sample(c, s, h, err);
			if (ret)
				return ret;
			break;
		default:
			ret = parse_sideband(c, s, h, order, err);
			if (ret)
				return ret;
			break;
		}
	}
}

/* A capture without AUXTRACE_INFO: say what it holds instead. */
static int refuse_not_pt(struct rv_pt_capture *c, const struct scan *s, struct rv_error *err)
{
	if (s->samples)
		return rv_error_set(err, ENOTSUP,
				    "'%s' holds %" PRIu64 " %s samples and no Intel PT trace: "
				    "decode it with rearview's sampling path",
				    c->path, s->samples,
				    s->sample_event ? s->sample_event : "event");
	return rv_error_set(
		err, ENOTSUP,
		"'%s' holds no Intel PT trace (no AUXTRACE_INFO record) and no samples, "
		"only %zu sideband records: record it again with Intel PT",
		c->path, s->sb.nr);
}

/* The PT configuration libipt needs: CPU (errata) and timing. */
static void setup_config(struct rv_pt_capture *c)
{
	const char *cpuid = rv_perf_reader_feature_string(c->reader, RV_FEAT_CPUID);
	const struct perf_event_attr *pt = NULL;
	struct rv_error e;

	pt_config_init(&c->config);
	if (cpuid && rv_pt_cpu_parse(cpuid, &c->config, &e))
		rv_debug("ignoring the capture's cpuid '%s': %s", cpuid, e.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(c->reader); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(c->reader, i);

		if (a && a->attr.type == c->info.pmu_type) {
			pt = &a->attr;
			break;
		}
	}
	if (pt && c->info.mtc_freq_bits)
		c->config.mtc_freq = (uint8_t)((pt->config & c->info.mtc_freq_bits) >>
					       __builtin_ctzll(c->info.mtc_freq_bits));
	c->config.nom_freq = (uint8_t)c->info.max_non_turbo_ratio;
	c->config.cpuid_0x15_eax = (uint32_t)c->info.tsc_ctc_ratio_d;
	c->config.cpuid_0x15_ebx = (uint32_t)c->info.tsc_ctc_ratio_n;
	c->kernel_traced = pt && !pt->exclude_kernel;

	if (!c->have_time_conv && c->info.time_mult) {
		/* perf before 4.x wrote no TIME_CONV: AUXTRACE_INFO has the same */
		c->time_conv.time_shift = c->info.time_shift;
		c->time_conv.time_mult = c->info.time_mult;
		c->time_conv.time_zero = c->info.time_zero;
		c->time_conv.cap_user_time_zero = c->info.cap_user_time_zero != 0;
		c->have_time_conv = true;
	}
	if (c->have_time_conv && !c->time_conv.time_mult)
		c->have_time_conv = false; /* no conversion: times stay TSC ticks */

	for (size_t i = 0; i < c->nr_buffers; i++)
		if (c->info.per_cpu_mmaps && c->buffers[i].aux.cpu != PTC_NONE)
			c->per_cpu = true;
}

/* ---- kernel code ---- */

int ptc_add_section(struct rv_pt_capture *c, const char *file, uint64_t offset, uint64_t size,
		    uint64_t vaddr)
{
	int isid = pt_iscache_add_file(c->iscache, file, offset, size, vaddr);
	size_t need;

	if (isid <= 0)
		return isid < 0 ? isid : -pte_internal;
	need = (size_t)isid + 1;
	if (need > c->nr_sections) {
		if (rv_array_reserve(&c->sections, &c->cap_sections, need, sizeof(*c->sections), 8))
			return -pte_nomem;
		memset(c->sections + c->nr_sections, 0,
		       (need - c->nr_sections) * sizeof(*c->sections));
		c->nr_sections = need;
	}
	if (!c->sections[isid].file) {
		c->sections[isid] = (struct ptc_section){ strdup(file), offset, size, vaddr };
		if (!c->sections[isid].file)
			return -pte_nomem;
	}
	return isid;
}

size_t ptc_image_sections(const struct rv_pt_capture *c, const struct pt_image *image, int *isids,
			  size_t max)
{
	size_t n = 0;
	const struct ptc_generation *g = NULL;

	for (size_t p = 0; p < c->nr_processes && !g; p++)
		for (size_t i = 0; i < c->processes[p].nr_gens && !g; i++)
			if (c->processes[p].gens[i].image == image)
				g = &c->processes[p].gens[i];
	if (!g && image != c->kernel_image)
		return 0;
	for (size_t i = 0; i < c->nr_kernel_isids; i++, n++)
		if (n < max)
			isids[n] = c->kernel_isids[i];
	for (size_t i = 0; g && i < g->maps.nr; i++) {
		if (g->maps.v[i].isid <= 0)
			continue;
		if (n < max)
			isids[n] = g->maps.v[i].isid;
		n++;
	}
	return n;
}

static int add_kernel_section(struct rv_pt_capture *c, const char *file, uint64_t offset,
			      uint64_t size, uint64_t vaddr)
{
	int isid = ptc_add_section(c, file, offset, size, vaddr);

	if (isid < 0)
		return isid;
	if (rv_array_reserve(&c->kernel_isids, &c->cap_kernel_isids, c->nr_kernel_isids + 1,
		      sizeof(*c->kernel_isids), 8))
		return -pte_nomem;
	c->kernel_isids[c->nr_kernel_isids++] = isid;
	return 0;
}

/* Adds the executable kernel-half PT_LOAD segments of an ELF file, moved by
 * `shift`; returns how many, or a negative errno with *why set. */
static int add_elf_code(struct rv_pt_capture *c, const char *file, uint64_t shift, const char **why)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	int added = 0;
	size_t n;

	if (fd < 0) {
		*why = strerror(errno);
		return -errno;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n)) {
		*why = "not an ELF file";
		added = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz ||
		    !(ph.p_flags & PF_X) || ph.p_vaddr + shift < PTC_KERNEL_START)
			continue;
		int rc = add_kernel_section(c, file, ph.p_offset, ph.p_filesz, ph.p_vaddr + shift);
		if (rc < 0) {
			*why = pt_errstr(pt_errcode(rc));
			added = rc == -pte_nomem ? -ENOMEM : -EINVAL;
			goto out;
		}
		added++;
	}
	if (!added) {
		*why = "it has no executable kernel segment";
		added = -EINVAL;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return added;
}

/* The value of symbol `name` in an ELF file's symbol table. */
static bool elf_symbol(const char *file, const char *name, uint64_t *value)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool found = false;

	if (fd < 0)
		return false;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		size_t count = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < count; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				*value = sym.st_value;
				found = true;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* The address of a text symbol in a kallsyms file. */
static bool kallsyms_symbol(const char *file, const char *name, uint64_t *value)
{
	FILE *f = file ? fopen(file, "re") : NULL;
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, sym[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && !strcmp(sym, name) &&
		    (type == 'T' || type == 't') && addr) {
			*value = addr;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* vmlinux moved by the KASLR offset: the running kernel's address of _stext
 * (or _text) minus vmlinux's, from the capture's kallsyms or else from
 * perf's kernel MMAP, whose pgoff is the address of the symbol it names. */
static void load_vmlinux(struct rv_pt_capture *c, const struct scan *s)
{
	static const char *const refs[] = { "_stext", "_text" };
	uint64_t runtime = 0, linked = 0;
	bool have = false;
	const char *why;

	for (size_t i = 0; !have && i < 2; i++)
		have = kallsyms_symbol(c->kallsyms, refs[i], &runtime) &&
		       elf_symbol(c->vmlinux, refs[i], &linked);
	if (!have && s->kernel_ref_sym && s->kernel_ref_addr)
		have = elf_symbol(c->vmlinux, s->kernel_ref_sym, &linked) &&
		       (runtime = s->kernel_ref_addr, true);
	if (!have) {
		c->kernel_reason = "cannot relocate --vmlinux: the capture has no kallsyms and no "
				   "kernel map naming _stext or _text, or vmlinux lacks the symbol";
		return;
	}
	if (add_elf_code(c, c->vmlinux, runtime - linked, &why) > 0) {
		c->kernel_loaded = true;
		rv_debug("kernel code from %s, moved by %#" PRIx64, c->vmlinux, runtime - linked);
		return;
	}
	char msg[256];
	snprintf(msg, sizeof(msg), "cannot read --vmlinux %s: %s", c->vmlinux, why);
	c->kernel_reason = arena_strndup(&c->arena, msg, strlen(msg));
	if (!c->kernel_reason)
		c->kernel_reason = "cannot read --vmlinux";
}

static void load_kernel(struct rv_pt_capture *c, const struct scan *s)
{
	const char *why = NULL;
	char msg[256];

	c->kernel_reason = "no kcore_dir and no --vmlinux";
	if (!c->kernel_traced)
		return;
	if (!c->include_kernel) {
		c->kernel_reason = "kernel decoding was not asked for";
		return;
	}
	if (c->kcore) {
		if (add_elf_code(c, c->kcore, 0, &why) > 0) {
			c->kernel_loaded = true;
			c->kcore_loaded = true;
			rv_debug("kernel code from %s", c->kcore);
			return;
		}
		snprintf(msg, sizeof(msg), "cannot read %s: %s", c->kcore, why);
		c->kernel_reason = arena_strndup(&c->arena, msg, strlen(msg));
		if (!c->kernel_reason)
			c->kernel_reason = "cannot read kcore_dir/kcore";
		c->nr_kernel_isids = 0;
	}
	if (c->vmlinux)
		load_vmlinux(c, s);
}

/* ---- the replay: threads, processes, images, CPUs ---- */

static struct ptc_thread *thread_get(struct rv_pt_capture *c, uint32_t tid, uint32_t pid)
{
	struct ptc_thread *t = ptc_thread_find_mut(c, tid);

	if (t) {
		if (pid != PTC_NONE)
			t->pid = pid;
		return t;
	}
	if (rv_array_reserve(&c->threads, &c->cap_threads, c->nr_threads + 1, sizeof(*c->threads), 8) ||
	    !index_put(&c->thread_index, tid, c->nr_threads))
		return NULL;
	t = &c->threads[c->nr_threads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid != PTC_NONE ? pid : tid;
	return t;
}

static bool thread_add_comm(struct rv_pt_capture *c, struct ptc_thread *t, uint64_t time,
			    const char *name)
{
	if (!name)
		return true;
	if (t->nr_comms && !strcmp(t->comms[t->nr_comms - 1].name, name))
		return true; /* perf repeats the name after exec; nothing changed */
	if (rv_array_reserve(&t->comms, &t->cap_comms, t->nr_comms + 1, sizeof(*t->comms), 8))
		return false;
	t->comms[t->nr_comms++] = (struct ptc_comm){ .time = time, .name = name };
	return true;
}

static int new_generation(struct rv_pt_capture *c, struct ptc_process *p, uint64_t time,
			  struct rv_error *err)
{
	if (rv_array_reserve(&p->gens, &p->cap_gens, p->nr_gens + 1, sizeof(*p->gens), 8))
		return nomem(err);
	struct ptc_generation *g = &p->gens[p->nr_gens];
	memset(g, 0, sizeof(*g));
	g->time = time;
	g->image = pt_image_alloc(NULL);
	if (!g->image)
		return nomem(err);
	p->nr_gens++;
	for (size_t i = 0; i < c->nr_kernel_isids; i++) {
		int rc = pt_image_add_cached(g->image, c->iscache, c->kernel_isids[i], NULL);

		if (rc < 0)
			return rv_error_set(err, ENOMEM, "cannot add kernel code to an image: %s",
					    pt_errstr(pt_errcode(rc)));
	}
	return 0;
}

static struct ptc_process *process_get(struct rv_pt_capture *c, uint32_t pid, struct rv_error *err)
{
	size_t i = index_get(&c->process_index, pid);

	if (i != SIZE_MAX)
		return &c->processes[i];
	if (rv_array_reserve(&c->processes, &c->cap_processes, c->nr_processes + 1,
		      sizeof(*c->processes), 8) ||
	    !index_put(&c->process_index, pid, c->nr_processes)) {
		nomem(err);
		return NULL;
	}
	struct ptc_process *p = &c->processes[c->nr_processes++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (new_generation(c, p, 0, err))
		return NULL;
	return p;
}

/* Adds a mapping to a generation: its image and, when its code is readable,
 * the section; the symbolizer when `report`. */
static int generation_add(struct rv_pt_capture *c, uint32_t pid, struct ptc_generation *g,
			  const struct ptc_mapping *m, bool report, struct rv_error *err)
{
	if (rv_array_reserve(&g->maps.v, &g->maps.cap, g->maps.nr + 1, sizeof(*g->maps.v), 8))
		return nomem(err);
	g->maps.v[g->maps.nr++] = *m;
	if (m->isid > 0) {
		int rc = pt_image_add_cached(g->image, c->iscache, m->isid, NULL);

		if (rc < 0)
			return rv_error_set(err, ENOMEM,
					    "cannot add %s to the image of process %u: %s", m->path,
					    pid, pt_errstr(pt_errcode(rc)));
	}
	if (report && c->symbolizer) {
		bool vdso = !strcmp(m->path, "[vdso]") && c->vdso;

		return rv_symbolizer_add_mapping(c->symbolizer, pid, m->start, m->end - m->start,
						 vdso ? 0 : m->pgoff, true,
						 vdso ? c->vdso : m->path, err);
	}
	return 0;
}

/* Where a user mapping's code comes from; *missing is set when it cannot be read. */
static int user_mapping(struct rv_pt_capture *c, const struct sb_rec *r, struct ptc_mapping *m,
			struct rv_error *err)
{
	const char *file = r->name, *why = NULL;
	uint64_t offset = r->pgoff;
	char msg[256];

	memset(m, 0, sizeof(*m));
	m->start = r->start;
	m->end = r->start + r->len < r->start ? UINT64_MAX : r->start + r->len;
	m->pgoff = r->pgoff;
	m->path = r->name;
	m->missing = SIZE_MAX;
	if (!strcmp(r->name, "[vdso]")) {
		file = c->vdso;
		offset = 0;
		if (!file)
			why = "no vdso.so in the capture's directory";
	} else if (r->name[0] != '/' || !strncmp(r->name, "//", 2) ||
		   strstr(r->name, " (deleted)")) {
		why = "not backed by a file (anonymous, special or deleted)";
	} else {
		why = file_problem(r->name);
	}
	if (!why) {
		int isid = ptc_add_section(c, file, offset, r->len, r->start);

		if (isid == -pte_nomem)
			return nomem(err);
		if (isid < 0) {
			snprintf(msg, sizeof(msg), "cannot read its code: %s",
				 pt_errstr(pt_errcode(isid)));
			why = msg;
		} else {
			m->isid = isid;
		}
	}
	if (why) {
		m->missing = missing_add(c, r->name, why, false);
		if (m->missing == SIZE_MAX)
			return nomem(err);
	}
	return 0;
}

static int on_mmap(struct rv_pt_capture *c, const struct sb_rec *r, struct rv_error *err)
{
	bool kernel = r->pid == PTC_NONE ||
		      (r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	struct ptc_mapping m;
	int ret;

	if (!r->flag || !r->len)
		return 0; /* data: no code */
	if (kernel) {
		bool is_kernel = !strncmp(r->name, KERNEL_NAME, strlen(KERNEL_NAME));

		if (!c->kernel_traced)
			return 0;
		memset(&m, 0, sizeof(m));
		m.start = r->start;
		m.end = r->start + r->len < r->start ? UINT64_MAX : r->start + r->len;
		m.pgoff = r->pgoff;
		m.path = is_kernel ? KERNEL_NAME : r->name;
		m.missing = SIZE_MAX;
		if (!c->kernel_loaded || (!is_kernel && !c->kcore_loaded)) {
			m.missing =
				missing_add(c, m.path,
					    c->kernel_loaded ? "a kernel module: its code is read "
							       "from kcore_dir/kcore only"
							     : c->kernel_reason,
					    true);
			if (m.missing == SIZE_MAX)
				return nomem(err);
		}
		if (rv_array_reserve(&c->kernel_maps.v, &c->kernel_maps.cap, c->kernel_maps.nr + 1,
			      sizeof(*c->kernel_maps.v), 8))
			return nomem(err);
		c->kernel_maps.v[c->kernel_maps.nr++] = m;
		return 0;
	}
	struct ptc_process *p = process_get(c, r->pid, err);
	if (!p)
		return -ENOMEM;
	ret = user_mapping(c, r, &m, err);
	if (ret)
		return ret;
	return generation_add(c, p->pid, &p->gens[p->nr_gens - 1], &m, true, err);
}

static int on_exec(struct rv_pt_capture *c, const struct sb_rec *r, struct rv_error *err)
{
	struct ptc_process *p = process_get(c, r->pid, err);

	if (!p)
		return -ENOMEM;
	if (c->symbolizer)
		rv_symbolizer_forget_process(c->symbolizer, r->pid);
	/* the first generation, still empty, is this exec's */
	if (p->nr_gens == 1 && !p->gens[0].maps.nr)
		return 0;
	return new_generation(c, p, r->time, err);
}

/* A new process (not a thread) starts with its parent's mappings. */
static int on_fork_process(struct rv_pt_capture *c, const struct sb_rec *r, struct rv_error *err)
{
	bool known = ptc_process_find(c, r->pid) != NULL;
	struct ptc_process *p = process_get(c, r->pid, err);
	int ret;

	if (!p)
		return -ENOMEM;
	if (known) {
		/* the pid was used before: a new process now */
		if (c->symbolizer)
			rv_symbolizer_forget_process(c->symbolizer, r->pid);
		ret = new_generation(c, p, r->time, err);
		if (ret)
			return ret;
	}
	const struct ptc_process *parent = ptc_process_find(c, r->ppid);
	if (!parent || parent == p)
		return 0;
	const struct ptc_generation *pg = &parent->gens[parent->nr_gens - 1];
	for (size_t i = 0; i < pg->maps.nr; i++) {
		ret = generation_add(c, p->pid, &p->gens[p->nr_gens - 1], &pg->maps.v[i], true,
				     err);
		if (ret)
			return ret;
	}
	return 0;
}

static int cpu_point(struct rv_pt_capture *c, uint32_t cpu, uint64_t time, uint32_t pid,
		     uint32_t tid, struct rv_error *err)
{
	struct ptc_cpu *k = (struct ptc_cpu *)ptc_cpu_find(c, cpu);

	if (cpu == PTC_NONE || cpu >= MAX_CPU_ID)
		return 0;
	if (!k) {
		if (rv_array_reserve(&c->cpus, &c->cap_cpus, c->nr_cpus + 1, sizeof(*c->cpus), 8))
			return nomem(err);
		k = &c->cpus[c->nr_cpus++];
		memset(k, 0, sizeof(*k));
		k->cpu = cpu;
	}
	if (k->nr && k->points[k->nr - 1].pid == pid && k->points[k->nr - 1].tid == tid)
		return 0;
	if (rv_array_reserve(&k->points, &k->cap, k->nr + 1, sizeof(*k->points), 8))
		return nomem(err);
	k->points[k->nr++] = (struct ptc_switch){ .time = time, .pid = pid, .tid = tid };
	if (tid != PTC_NONE && !thread_get(c, tid, pid))
		return nomem(err);
	return 0;
}

static int replay_one(struct rv_pt_capture *c, const struct sb_rec *r, struct rv_error *err)
{
	struct ptc_thread *t;
	int ret;

	switch (r->type) {
	case PERF_RECORD_COMM:
		t = thread_get(c, r->tid, r->pid);
		if (!t || !thread_add_comm(c, t, r->time, r->name))
			return nomem(err);
		if (!r->flag)
			return 0;
		ret = on_exec(c, r, err);
		if (ret)
			return ret;
		return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
	case PERF_RECORD_FORK: {
		const struct ptc_thread *parent = ptc_thread_find(c, r->ptid);
		const char *name = NULL;

		if (parent) {
			size_t i = ptc_comm_at(parent, r->time);

			name = i == SIZE_MAX ? NULL : parent->comms[i].name;
		}
		t = thread_get(c, r->tid, r->pid);
		if (!t || !thread_add_comm(c, t, r->time, name))
			return nomem(err);
		t->exited = false;
		return r->pid != r->ppid ? on_fork_process(c, r, err) : 0;
	}
	case PERF_RECORD_EXIT:
		t = thread_get(c, r->tid, r->pid);
		if (!t)
			return nomem(err);
		t->exited = true;
		t->exit_time = r->time;
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(c, r, err);
	case PERF_RECORD_ITRACE_START:
		return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		/* A task's trace runs on until its PT event is scheduled out,
		 * which is after the OUT record: the next task owns the CPU from
		 * its IN record on. An OUT only says who ran before it. */
		if (!r->flag)
			return cpu_point(c, r->cpu, r->time, r->pid, r->tid, err);
		if (!ptc_cpu_find(c, r->cpu))
			return cpu_point(c, r->cpu, 0, r->pid, r->tid, err);
		return 0;
	}
	return 0;
}

/* Threads named by nothing in the sideband get their process's name, or a
 * name that says what is known. */
static int name_threads(struct rv_pt_capture *c, struct rv_error *err)
{
	for (size_t i = 0; i < c->nr_buffers; i++) {
		const struct rv_perf_auxtrace *a = &c->buffers[i].aux;
		bool cpu_buffer = c->info.per_cpu_mmaps && a->cpu != PTC_NONE;

		/* per-CPU buffers may start before the sideband names a task */
		if (!thread_get(c, cpu_buffer ? PTC_NONE : a->tid, PTC_NONE))
			return nomem(err);
	}
	for (size_t i = 0; i < c->nr_threads; i++) {
		struct ptc_thread *t = &c->threads[i];
		const struct ptc_thread *main_thread;
		const char *name;
		char buf[48];

		if (t->nr_comms)
			continue;
		main_thread = ptc_thread_find(c, t->pid);
		if (main_thread && main_thread->nr_comms) {
			name = main_thread->comms[0].name;
		} else {
			if (t->tid == PTC_NONE)
				snprintf(buf, sizeof(buf), "[unknown]");
			else if (t->tid == 0)
				snprintf(buf, sizeof(buf), "swapper");
			else
				snprintf(buf, sizeof(buf), "[thread %u]", t->tid);
			name = arena_strndup(&c->arena, buf, strlen(buf));
		}
		if (!name || !thread_add_comm(c, &c->threads[i], 0, name))
			return nomem(err);
	}
	return 0;
}

static uint64_t first_tsc_time(const struct rv_pt_capture *c, const struct ptc_buffer *b);

/* The earliest time a buffer's trace starts at; 0 when none has a time. */
static uint64_t trace_start(const struct rv_pt_capture *c)
{
	uint64_t first = 0;

	for (size_t i = 0; i < c->nr_buffers; i++) {
		uint64_t t = first_tsc_time(c, &c->buffers[i]);

		if (t && (!first || t < first))
			first = t;
	}
	return first;
}

static int compare_windows(const void *a, const void *b)
{
	const struct ptc_window *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* The window and trigger marks, per thread in time order: those that ended
 * before any trace are left out (a snapshot holds the end of the recording
 * only), and a window that begins before the thread's previous one ended
 * begins at that end, so that the windows of a thread never overlap. */
static int prepare_windows(struct rv_pt_capture *c, struct rv_error *err)
{
	uint64_t start;
	size_t kept = 0;

	if (!c->nr_windows)
		return 0;
	start = trace_start(c);
	for (size_t i = 0; i < c->nr_windows; i++)
		if (!start || c->windows[i].end > start)
			c->windows[kept++] = c->windows[i];
	c->windows_before_trace = c->nr_windows - kept;
	c->nr_windows = kept;
	qsort(c->windows, c->nr_windows, sizeof(*c->windows), compare_windows);
	for (size_t i = 0; i < c->nr_windows;) {
		size_t j;
		struct ptc_thread *t;

		uint64_t last_end = 0;

		for (j = i; j < c->nr_windows && c->windows[j].tid == c->windows[i].tid; j++) {
			struct ptc_window *w = &c->windows[j];

			if (w->trigger)
				continue;
			if (w->begin < last_end)
				w->begin = last_end;
			last_end = w->end;
			c->nr_applied += (w->flags & RV_MARK_FLAG_APPLY) != 0;
		}
		t = thread_get(c, c->windows[i].tid, c->windows[i].pid);
		if (!t)
			return nomem(err);
		t->win_first = i;
		t->win_nr = j - i;
		i = j;
	}
	if (c->windows_before_trace)
		rv_debug("%zu --filter windows ended before the trace begins; left out",
			 c->windows_before_trace);
	return 0;
}

static int replay(struct rv_pt_capture *c, struct scan *s, struct rv_error *err)
{
	int ret;

	qsort(s->sb.v, s->sb.nr, sizeof(*s->sb.v), compare_sb);
	for (size_t i = 0; i < s->sb.nr; i++) {
		ret = replay_one(c, &s->sb.v[i], err);
		if (ret)
			return ret;
	}
	if (c->kernel_traced && !c->kernel_loaded) {
		bool listed = false;

		for (size_t i = 0; i < c->nr_missing; i++)
			listed |= c->missing[i].kernel &&
				  !strcmp(c->missing[i].pub.path, KERNEL_NAME);
		if (!listed) {
			size_t i = missing_add(c, KERNEL_NAME, c->kernel_reason, true);

			if (i == SIZE_MAX)
				return nomem(err);
			c->missing[i].pub.mappings = 0;
		}
	}
	ret = prepare_windows(c, err);
	return ret ? ret : name_threads(c, err);
}

/* ---- the public face ---- */

/* The capture's directory and the file the reader opens. */
static int locate(struct rv_pt_capture *c, const char *path, struct rv_error *err)
{
	struct stat st;

	if (!strcmp(path, "-")) {
		c->path = strdup("-");
		return c->path ? 0 : nomem(err);
	}
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		c->dir = strdup(path);
		c->path = path_join(path, "perf.data");
		if (c->path && !is_regular_file(c->path)) {
			free(c->path);
			c->path = strdup(path); /* perf's layout: the reader opens DIR/data */
		}
	} else {
		const char *slash = strrchr(path, '/');

		c->path = strdup(path);
		c->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
			       : strdup(".");
	}
	return c->path && c->dir ? 0 : nomem(err);
}

/* *out: DIR/name when it is a regular file, else left NULL. */
static int side_file(const struct rv_pt_capture *c, const char *name, char **out,
		     struct rv_error *err)
{
	char *p = path_join(c->dir, name);

	if (!p)
		return nomem(err);
	if (is_regular_file(p))
		*out = p;
	else
		free(p);
	return 0;
}

static int find_side_files(struct rv_pt_capture *c, struct rv_error *err)
{
	if (!c->dir)
		return 0;
	if (side_file(c, "kcore_dir/kallsyms", &c->kallsyms, err) ||
	    side_file(c, "kcore_dir/kcore", &c->kcore, err) ||
	    side_file(c, "vdso.so", &c->vdso, err))
		return -ENOMEM;
	return 0;
}

char *rv_pt_capture_probe_kallsyms(const char *path)
{
	struct rv_pt_capture c;
	struct rv_error err;
	char *found = NULL;

	memset(&c, 0, sizeof(c));
	if (path && locate(&c, path, &err) == 0 && find_side_files(&c, &err) == 0) {
		found = c.kallsyms;
		c.kallsyms = NULL;
	}
	free(c.path);
	free(c.dir);
	free(c.kallsyms);
	free(c.kcore);
	free(c.vdso);
	return found;
}

/* Each generation's function ranges, from the files its image was made of. */
static int read_functions(struct rv_pt_capture *c, struct rv_error *err)
{
	for (size_t p = 0; p < c->nr_processes; p++) {
		for (size_t i = 0; i < c->processes[p].nr_gens; i++) {
			struct ptc_generation *g = &c->processes[p].gens[i];

			for (size_t m = 0; m < g->maps.nr; m++) {
				int isid = g->maps.v[m].isid;
				const struct ptc_section *s;

				if (isid <= 0 || (size_t)isid >= c->nr_sections)
					continue;
				s = &c->sections[isid];
				if (rv_symtab_ranges_add_file(&g->functions, s->file, s->offset,
							      s->vaddr, s->size))
					return nomem(err);
			}
			rv_symtab_ranges_sort(&g->functions);
		}
	}
	return 0;
}

int rv_pt_capture_open(struct rv_pt_capture **out, const struct rv_pt_capture_options *options,
		       struct rv_symbolizer *symbolizer, struct rv_error *err)
{
	struct rv_pt_capture *c;
	struct scan s;
	int ret;

	*out = NULL;
	if (!options || !options->path)
		return rv_error_set(err, EINVAL, "no capture given to decode");
	c = calloc(1, sizeof(*c));
	if (!c)
		return nomem(err);
	memset(&s, 0, sizeof(s));
	c->symbolizer = symbolizer;
	c->include_kernel = options->include_kernel;
	c->jobs = options->jobs;
	c->chunk_bytes = options->chunk_bytes;
	c->progress = options->progress;
	elf_version(EV_CURRENT);
	ret = locate(c, options->path, err);
	if (!ret)
		ret = find_side_files(c, err);
	if (!ret && options->vmlinux && !(c->vmlinux = strdup(options->vmlinux)))
		ret = nomem(err);
	if (!ret)
		ret = rv_perf_reader_open(&c->reader, c->path, err);
	if (!ret) {
		ret = read_records(c, &s, err);
		if (ret)
			rv_error_prefix(err, "reading '%s'", c->path);
	}
	if (!ret && !s.have_info)
		ret = refuse_not_pt(c, &s, err);
	if (!ret)
		ret = join_pieces(c, err);
	if (!ret) {
		setup_config(c);
		c->iscache = pt_iscache_alloc(NULL);
		if (!c->iscache || pt_iscache_set_limit(c->iscache, ISCACHE_LIMIT) < 0)
			ret = nomem(err);
	}
	if (!ret) {
		load_kernel(c, &s);
		c->kernel_image = pt_image_alloc("kernel");
		if (!c->kernel_image)
			ret = nomem(err);
		for (size_t i = 0; !ret && i < c->nr_kernel_isids; i++)
			if (pt_image_add_cached(c->kernel_image, c->iscache, c->kernel_isids[i],
						NULL) < 0)
				ret = nomem(err);
	}
	if (!ret)
		ret = replay(c, &s, err);
	if (!ret)
		ret = read_functions(c, err);
	free(s.sb.v);
	if (ret) {
		rv_pt_capture_free(c);
		return ret;
	}
	*out = c;
	return 0;
}

const char *rv_pt_capture_kallsyms(const struct rv_pt_capture *c)
{
	return c ? c->kallsyms : NULL;
}

const char *rv_pt_capture_damage(const struct rv_pt_capture *c)
{
	return c ? c->damage : NULL;
}

size_t rv_pt_capture_missing(const struct rv_pt_capture *c, const struct rv_pt_missing **out)
{
	struct rv_pt_capture *m = (struct rv_pt_capture *)c;

	*out = NULL;
	if (!c || !c->nr_missing)
		return 0;
	/* a plain array of the public part, refreshed at each call */
	free(m->missing_pub);
	m->missing_pub = calloc(c->nr_missing, sizeof(*m->missing_pub));
	if (!m->missing_pub)
		return 0;
	for (size_t i = 0; i < c->nr_missing; i++)
		m->missing_pub[i] = c->missing[i].pub;
	*out = m->missing_pub;
	return c->nr_missing;
}

uint64_t ptc_psb_time(const struct rv_pt_capture *c, struct pt_packet_decoder *d, uint64_t offset)
{
	struct pt_packet p;

	if (pt_pkt_sync_set(d, offset) < 0)
		return UINT64_MAX;
	for (int i = 0; i < 32; i++) {
		if (pt_pkt_next(d, &p, sizeof(p)) < 0 || p.type == ppt_psbend)
			break;
		if (p.type == ppt_tsc)
			return c->have_time_conv
				       ? rv_perf_tsc_to_time(&c->time_conv, p.payload.tsc.tsc)
				       : p.payload.tsc.tsc;
	}
	return UINT64_MAX;
}

/* The time of a buffer's first PSB+ (its TSC); 0 when it has none: TSC
 * packets are in every PSB+ when TSC is on at all. */
static uint64_t first_tsc_time(const struct rv_pt_capture *c, const struct ptc_buffer *b)
{
	struct pt_config config = c->config;
	struct pt_packet_decoder *d;
	uint64_t offset, time = UINT64_MAX;

	if (!b->size)
		return 0;
	config.begin = (uint8_t *)b->data;
	config.end = (uint8_t *)b->data + b->size;
	d = pt_pkt_alloc_decoder(&config);
	if (!d)
		return 0;
	if (pt_pkt_sync_forward(d) >= 0 && pt_pkt_get_sync_offset(d, &offset) >= 0)
		time = ptc_psb_time(c, d, offset);
	pt_pkt_free_decoder(d);
	return time == UINT64_MAX ? 0 : time;
}

uint64_t rv_pt_capture_count_packets(const struct rv_pt_capture *c)
{
	uint64_t packets = 0;

	for (size_t i = 0; c && i < c->nr_buffers; i++)
		packets += rv_pt_count_packets(c->buffers[i].data, (size_t)c->buffers[i].size,
					       &c->config);
	return packets;
}

void rv_pt_capture_info(const struct rv_pt_capture *c, struct rv_pt_capture_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	out->buffers = c->nr_buffers;
	out->trace_bytes = c->trace_bytes;
	out->per_cpu = c->per_cpu;
	out->snapshot = c->info.snapshot_mode != 0;
	out->kernel = c->kernel_traced;
	out->threads = c->nr_threads;
	out->windows = c->nr_applied;
	out->first_time = trace_start(c);
	/* the trace's zero is no later than the first window's begin */
	for (size_t i = 0; i < c->nr_windows; i++)
		if (out->first_time && !c->windows[i].trigger &&
		    c->windows[i].begin < out->first_time)
			out->first_time = c->windows[i].begin;
}

int64_t rv_pt_clock_offset(const struct rv_perf_time_conv *tc, const struct rv_pt_clock_pair *pairs,
			   size_t nr, uint64_t *spread_ns)
{
	size_t best = SIZE_MAX;
	uint64_t best_spread = UINT64_MAX;

	for (size_t i = 0; i < nr; i++) {
		const struct rv_pt_clock_pair *p = &pairs[i];

		if (p->monotonic_after < p->monotonic_before)
			continue; /* the clock went back: not a pair */
		if (p->monotonic_after - p->monotonic_before < best_spread) {
			best_spread = p->monotonic_after - p->monotonic_before;
			best = i;
		}
	}
	if (spread_ns)
		*spread_ns = best_spread;
	if (best == SIZE_MAX)
		return 0;
	/* the TSC was read halfway between the two monotonic reads, give or
	 * take half their spread */
	const struct rv_pt_clock_pair *p = &pairs[best];
	uint64_t monotonic = p->monotonic_before + best_spread / 2;
	uint64_t capture = rv_perf_tsc_to_time(tc, p->tsc);

	return capture >= monotonic ? (int64_t)(capture - monotonic)
				    : -(int64_t)(monotonic - capture);
}

uint64_t rv_pt_clock_from_monotonic(uint64_t monotonic_ns, int64_t offset)
{
	if (offset < 0 && monotonic_ns < (uint64_t)-offset)
		return 0;
	return monotonic_ns + (uint64_t)offset;
}

static void free_mappings(struct ptc_mappings *m)
{
	free(m->v);
}

void rv_pt_capture_free(struct rv_pt_capture *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_processes; i++) {
		struct ptc_process *p = &c->processes[i];

		for (size_t j = 0; j < p->nr_gens; j++) {
			pt_image_free(p->gens[j].image);
			free_mappings(&p->gens[j].maps);
			rv_symtab_ranges_free(&p->gens[j].functions);
		}
		free(p->gens);
	}
	free(c->processes);
	free(c->process_index.slots);
	for (size_t i = 0; i < c->nr_threads; i++)
		free(c->threads[i].comms);
	free(c->threads);
	free(c->thread_index.slots);
	for (size_t i = 0; i < c->nr_cpus; i++)
		free(c->cpus[i].points);
	free(c->cpus);
	free_mappings(&c->kernel_maps);
	pt_image_free(c->kernel_image);
	free(c->kernel_isids);
	for (size_t i = 0; i < c->nr_sections; i++)
		free(c->sections[i].file);
	free(c->sections);
	/* images first: they hold references into the section cache */
	pt_iscache_free(c->iscache);
	for (size_t i = 0; i < c->nr_buffers; i++)
		free(c->buffers[i].joined);
	free(c->buffers);
	free(c->windows);
	free(c->missing);
	free(c->missing_pub);
	rv_perf_reader_free(c->reader);
	arena_free(&c->arena);
	free(c->path);
	free(c->dir);
	free(c->kallsyms);
	free(c->kcore);
	free(c->vdso);
	free(c->vmlinux);
	free(c->damage);
	free(c);
}
