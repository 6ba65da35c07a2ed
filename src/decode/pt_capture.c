/* pt_capture.c: opening an Intel PT capture; see pt_capture.h.
 *
 * One pass over the records keeps what decoding needs: the PT configuration
 * (AUXTRACE_INFO, TIME_CONV, the cpuid), where each AUXTRACE payload is (full
 * mode's pieces of one buffer joined), the window marks of an ungated
 * --filter recording, and the sideband, parsed into small records
 * (pt_capture_sideband.c). Kernel code (pt_capture_kernel.c) is read before
 * the sideband is replayed, so that every image starts with it. This file
 * also keeps the capture's strings, its missing list and its section cache,
 * and answers the public questions about an open capture.
 *
 * Not here: the sideband's replay (pt_capture_sideband.c), kernel code
 * (pt_capture_kernel.c), decoding (pt_capture_decode.c), the packets
 * (pt_decoder.c), the perf.data layout (capture/).
 */
#define RV_LOG_DOMAIN "pt-capture"

#include "decode/pt_capture.h"

#include <errno.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/marks.h"
#include "decode/extra.h"
#include "decode/off_cpu.h"
#include "decode/pt_capture_internal.h"
#include "decode/pt_sections.h"
#include "util/array.h"
#include "util/log.h"

/* The libipt section cache keeps this much code mapped (plus its block caches). */
#define ISCACHE_LIMIT (512ull << 20)

/* ---- small helpers ---- */

struct ptc_arena_block {
	struct ptc_arena_block *next;
	char text[];
};

const char *ptc_arena_strndup(struct ptc_arena *a, const char *s, size_t len)
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

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static bool is_regular_file(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- the missing list ---- */

size_t ptc_missing_add(struct rv_pt_capture *c, const char *path, const char *reason, bool kernel)
{
	for (size_t i = 0; i < c->nr_missing; i++) {
		if (!strcmp(c->missing[i].pub.path, path)) {
			c->missing[i].pub.mappings++;
			return i;
		}
	}
	if (rv_array_reserve(&c->missing, &c->cap_missing, c->nr_missing + 1, sizeof(*c->missing),
			     8))
		return SIZE_MAX;
	const char *p = ptc_arena_strndup(&c->arena, path, strlen(path));
	const char *r = ptc_arena_strndup(&c->arena, reason, strlen(reason));
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

/* ---- the pass over the records ---- */

/* What the pass over the records saw besides the sideband. */
struct scan {
	struct ptc_sideband sb;
	bool have_info;
	uint64_t samples;
	/* the first sample's event name, but for the sampling engine's context
	 * switches (which may come before its first sample) */
	const char *sample_event;
};

int ptc_nomem(struct rv_error *err)
{
	return rv_error_set(err, ENOMEM, "out of memory reading the capture");
}

static int add_buffer(struct rv_pt_capture *c, const struct rv_perf_record *rec,
		      struct rv_error *err)
{
	struct rv_perf_auxtrace a;
	struct rv_error ignored;

	if (rv_perf_auxtrace_parse(rec->header, &a, &ignored))
		return 0; /* too short to say what it holds: nothing to decode */
	if (rv_array_reserve(&c->buffers, &c->cap_buffers, c->nr_buffers + 1, sizeof(*c->buffers),
			     8))
		return ptc_nomem(err);
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
	if (rv_array_reserve(&c->buffers, &c->cap_buffers, c->nr_buffers + 1, sizeof(*c->buffers),
			     8))
		return ptc_nomem(err);
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
		ret = ptc_nomem(err);
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
	if (rv_array_reserve(&c->windows, &c->cap_windows, c->nr_windows + 1, sizeof(*c->windows),
			     8))
		return ptc_nomem(err);
	w = &c->windows[c->nr_windows];
	*w = (struct ptc_window){
		.pid = mark.pid,
		.tid = mark.tid,
		.begin = mark.time > mark.duration_ns ? mark.time - mark.duration_ns : 0,
		.end = mark.time,
		.flags = mark.flags,
		.trigger = mark.kind == RV_MARK_TRIGGER,
		.name = ptc_arena_strndup(&c->arena, mark.name, strlen(mark.name)),
	};
	if (!w->name)
		return ptc_nomem(err);
	c->nr_windows++;
	return 0;
}

/* An --events sample, kept for the decode with the thread's marks. */
static int add_extra(struct rv_pt_capture *c, const struct rv_perf_sample *sample,
		     const struct perf_event_header *h, struct rv_error *err)
{
	struct rv_event ev;
	struct ptc_window *w;

	rv_extra_event_from_sample(sample, h, &ev);
	if (rv_array_reserve(&c->windows, &c->cap_windows, c->nr_windows + 1, sizeof(*c->windows),
			     8))
		return ptc_nomem(err);
	w = &c->windows[c->nr_windows];
	*w = (struct ptc_window){
		.pid = ev.pid,
		.tid = ev.tid,
		.begin = ev.time,
		.end = ev.time,
		.extra = true,
		.name = ptc_arena_strndup(&c->arena, ev.extra.name, strlen(ev.extra.name)),
		.sample = { ev.extra.ip, ev.extra.addr, ev.extra.count, ev.extra.cpu,
			    ev.extra.kernel },
	};
	if (!w->name)
		return ptc_nomem(err);
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
	if (rv_extra_is_sample(&sample))
		return add_extra(c, &sample, h, err);
	if (sample.attr && sample.attr->name &&
	    (!s->sample_event || (!strcmp(s->sample_event, RV_SWITCH_STATE_EVENT) &&
				  strcmp(sample.attr->name, RV_SWITCH_STATE_EVENT))))
		s->sample_event =
			ptc_arena_strndup(&c->arena, sample.attr->name, strlen(sample.attr->name));
	return add_aux_sample(c, &sample, err);
}

/* One record of the capture: its part in the decode. Errors do not name
 * the file (read_records does). */
static int read_record(struct rv_pt_capture *c, struct scan *s, const struct rv_perf_record *rec,
		       uint64_t order, struct rv_error *err)
{
	const struct perf_event_header *h = rec->header;
	int ret = 0;

	switch (h->type) {
	case RV_PERF_RECORD_AUXTRACE_INFO:
		if (s->have_info)
			break; /* perf writes one; a second says nothing new */
		ret = rv_intel_pt_info_parse(h, &c->info, err);
		s->have_info = !ret;
		break;
	case RV_PERF_RECORD_TIME_CONV:
		if (rv_perf_time_conv_parse(h, &c->time_conv, err) == 0)
			c->have_time_conv = true;
		rv_error_clear(err);
		break;
	case RV_PERF_RECORD_AUXTRACE:
		return add_buffer(c, rec, err);
	case PERF_RECORD_SAMPLE:
		return note_sample(c, s, h, err);
	default:
		return ptc_sideband_add(c, &s->sb, h, order, err);
	}
	return ret;
}

static int read_records(struct rv_pt_capture *c, struct scan *s, struct rv_error *err)
{
	struct rv_perf_record rec;
	uint64_t order = 0;

	for (;; order++) {
		int got = rv_perf_reader_next(c->reader, &rec, err);

		if (got == 0)
			return 0;
		if (got < 0) {
			if (!c->nr_buffers)
				return got; /* the reader's message names the file */
			/* Damage after some trace: keep what came before it. */
			c->damage = strdup(err->message);
			rv_error_clear(err);
			if (!c->damage)
				return ptc_nomem(err);
			return 0;
		}
		if (read_record(c, s, &rec, order, err))
			return rv_error_prefix(err, "reading '%s'", c->path);
	}
}

/* A capture without AUXTRACE_INFO: say what it holds instead. */
static int refuse_not_pt(struct rv_pt_capture *c, const struct scan *s, struct rv_error *err)
{
	if (s->samples)
		return rv_error_set(err, ENOTSUP,
				    "'%s' holds %" PRIu64 " %s samples and no Intel PT trace "
				    "(no AUXTRACE_INFO record): nothing of Intel PT to decode; "
				    "record it again with Intel PT (rearview decode reads a "
				    "capture that names no Intel PT event as samples)",
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
/* ---- the section cache ---- */

int ptc_add_section(struct rv_pt_capture *c, const char *file, uint64_t offset, uint64_t size,
		    uint64_t vaddr)
{
	int isid = rv_pt_sections_add_file(c->iscache, file, offset, size, vaddr);
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
	const struct pt_image *base = NULL;
	size_t nr_changes = ptc_kcode_sections(c, image, &base, NULL, 0);

	if (base) {
		/* an image of a stretch of changed kernel code: its base's
		 * sections, then the changes' */
		n = ptc_image_sections(c, base, isids, max);
		if (n < max)
			ptc_kcode_sections(c, image, &base, isids + n, max - n);
		return n + nr_changes;
	}
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

/* ---- the public face ---- */

/* The capture's directory, where its side files are: path itself, or the
 * directory of the file path names; none for standard input. */
static int locate(struct rv_pt_capture *c, const char *path, struct rv_error *err)
{
	struct stat st;
	const char *slash = strrchr(path, '/');

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		c->dir = strdup(path);
	else
		c->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
			       : strdup(".");
	return c->dir ? 0 : ptc_nomem(err);
}

/* *out: DIR/name when it is a regular file, else left NULL. */
static int side_file(const struct rv_pt_capture *c, const char *name, char **out,
		     struct rv_error *err)
{
	char *p = path_join(c->dir, name);

	if (!p)
		return ptc_nomem(err);
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
					return ptc_nomem(err);
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
		return ptc_nomem(err);
	memset(&s, 0, sizeof(s));
	c->symbolizer = symbolizer;
	c->include_kernel = options->include_kernel;
	c->jobs = options->jobs;
	c->chunk_bytes = options->chunk_bytes;
	c->decoder = options->decoder;
	c->progress = options->progress;
	elf_version(EV_CURRENT);
	ret = locate(c, options->path, err);
	if (!ret)
		ret = find_side_files(c, err);
	if (!ret && options->vmlinux && !(c->vmlinux = strdup(options->vmlinux)))
		ret = ptc_nomem(err);
	if (!ret && options->reader) {
		c->reader = options->reader;
		c->reader_borrowed = true;
	} else if (!ret) {
		ret = rv_perf_reader_open(&c->reader, options->path, err);
	}
	if (!ret && !(c->path = strdup(rv_perf_reader_name(c->reader))))
		ret = ptc_nomem(err);
	if (!ret)
		ret = read_records(c, &s, err);
	if (!ret && !s.have_info)
		ret = refuse_not_pt(c, &s, err);
	if (!ret)
		ret = join_pieces(c, err);
	if (!ret) {
		setup_config(c);
		c->iscache = pt_iscache_alloc(NULL);
		if (!c->iscache || pt_iscache_set_limit(c->iscache, ISCACHE_LIMIT) < 0)
			ret = ptc_nomem(err);
	}
	if (!ret)
		ret = ptc_kernel_load(c, s.sb.kernel_ref_sym, s.sb.kernel_ref_addr, err);
	if (!ret)
		ret = ptc_kcode_load(c, err);
	if (!ret)
		ret = ptc_sideband_replay(c, &s.sb, err);
	if (!ret)
		ret = read_functions(c, err);
	ptc_sideband_destroy(&s.sb);
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
	for (size_t i = 0; i < c->nr_missing; i++) {
		m->missing_pub[i] = c->missing[i].pub;
		m->missing_pub[i].kernel = c->missing[i].kernel;
	}
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
struct pt_packet_decoder *ptc_packet_decoder(const struct rv_pt_capture *c,
					     const struct ptc_buffer *b)
{
	struct pt_config config = c->config;

	config.begin = (uint8_t *)b->data;
	config.end = (uint8_t *)b->data + b->size;
	return pt_pkt_alloc_decoder(&config);
}

static uint64_t first_tsc_time(const struct rv_pt_capture *c, const struct ptc_buffer *b)
{
	struct pt_packet_decoder *d;
	uint64_t offset, time = UINT64_MAX;

	if (!b->size)
		return 0;
	d = ptc_packet_decoder(c, b);
	if (!d)
		return 0;
	if (pt_pkt_sync_forward(d) >= 0 && pt_pkt_get_sync_offset(d, &offset) >= 0)
		time = ptc_psb_time(c, d, offset);
	pt_pkt_free_decoder(d);
	return time == UINT64_MAX ? 0 : time;
}

uint64_t ptc_trace_start(const struct rv_pt_capture *c)
{
	uint64_t first = 0;

	for (size_t i = 0; i < c->nr_buffers; i++) {
		uint64_t t = first_tsc_time(c, &c->buffers[i]);

		if (t && (!first || t < first))
			first = t;
	}
	return first;
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
	out->first_time = ptc_trace_start(c);
	/* the trace's zero is no later than the first window's begin */
	for (size_t i = 0; i < c->nr_windows; i++)
		if (out->first_time && !c->windows[i].trigger && !c->windows[i].extra &&
		    c->windows[i].begin < out->first_time)
			out->first_time = c->windows[i].begin;
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
			rv_pt_image_free(p->gens[j].image);
			free_mappings(&p->gens[j].maps);
			rv_symtab_ranges_destroy(&p->gens[j].functions);
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
	ptc_kcode_free(c);
	rv_pt_image_free(c->kernel_image);
	free(c->kernel_isids);
	for (size_t i = 0; i < c->nr_sections; i++)
		free(c->sections[i].file);
	free(c->sections);
	/* images first: they hold references into the section cache */
	rv_pt_sections_forget_iscache(c->iscache);
	pt_iscache_free(c->iscache);
	for (size_t i = 0; i < c->nr_buffers; i++)
		free(c->buffers[i].joined);
	free(c->buffers);
	free(c->windows);
	free(c->missing);
	free(c->missing_pub);
	if (!c->reader_borrowed)
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
