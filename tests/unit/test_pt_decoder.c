/* test_pt_decoder.c: the Intel PT decoder (decode/pt_decoder.h) against its
 * oracles.
 *
 * - The real recordings of ../shared/pt-corpus decode to their reference
 *   instruction counts with no error, for one and two threads and chunk
 *   sizes from 1 KiB to the whole buffer, to identical event sequences
 *   (times, tasks and all); twenty copies of mruby to twenty times its count.
 * - softpt captures of the PT target programs (tests/pt) decode, per thread,
 *   to exactly the branches Linux perf synthesizes for them (`perf script
 *   --itrace=be`): kinds, flags, addresses, order, and times for every timer
 *   setting but cycle-accurate mode, whose differences are printed; with a
 *   PSB every 2 KiB they decode the same whatever the chunks and threads.
 * - Errors: a buffer with no PSB, damage in the middle, code missing from the
 *   image, a sink or resolve hook that fails, max_insns; and the small
 *   functions (CPU parsing, error texts, packet counting, stats merging).
 * - The two walkers (options.decoder): the fast one gives the events libipt's
 *   block decoder gives (times, tasks, errors' offsets and addresses) and the
 *   same counts, on the corpus and every softpt capture above, with every
 *   jump, with function_at and with ignore_jumps, for one and two threads
 *   and several chunk sizes, with a task that changes with time, on the
 *   damaged and the code-less traces, and up to where max_insns stops it;
 *   each walker's bytes add up to the buffer's; and on made-up traces over
 *   made-up code (libipt's encoder): the time after an event in process,
 *   code that leaves 64-bit mode where the fast walker's cache holds
 *   64-bit blocks, and the tick the fast walker takes with a block (at
 *   chunk ends, and call for call against libipt's block decoder).
 *   tests/fuzz/fuzz_pt_fast.c holds them to the same on fuzzed traces.
 * - The sink's batch form: the events the sink takes one by one, field by
 *   field, and the same stats, with every batch's claims (pt_decoder.h)
 *   true, on mruby with times that begin, change and wrap, damage, and a
 *   task for every time.
 *
 * The glue that reads softpt's perf.data (AUXTRACE payloads, AUXTRACE_INFO,
 * TIME_CONV, MMAP2 into an image) lives here, in its simplest form: the real
 * capture reader is decode/pt_capture.h's business.
 *
 * Not here: what the events mean for call stacks (test_builder.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "decode/perf_script.h"
#include "decode/pt_decoder.h"
#include "decode/pt_fast.h"
#include "decode/pt_sections.h"
#include "softpt_reference.h"
#include "test_env.h"
#include "pt_walkers.h"
#include "test_files.h"

/* IA32_RTIT_CTL.ADDR0_CFG: trace only inside [ADDR0_A, ADDR0_B] */
#define ADDR_CFG_FILTER 1

/* ---- events as the sink saw them ---- */

struct ev {
	uint64_t time, from, to;
	uint32_t pid, tid;
	uint8_t type, kind, flags, overflow;
};

struct evlist {
	struct ev *v;
	size_t n, cap;
	size_t fail_after; /* the sink fails with -EIO at this event (0: never) */
	/* Not NULL: the events are compared with these as they come, not kept;
	 * diffs counts those that differ, first_diff is the first's index. */
	const struct evlist *expect;
	size_t diffs, first_diff;
};

static struct ev *evlist_push(struct evlist *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		cr_assert_not_null(l->v);
	}
	struct ev *o = &l->v[l->n++];

	memset(o, 0, sizeof(*o));
	return o;
}

static bool same_event(const struct ev *a, const struct ev *b, bool with_time);

static int record_sink(void *ctx, const struct rv_event *e, struct rv_error *err)
{
	struct evlist *l = ctx;
	struct ev scratch;

	if (l->fail_after && l->n + 1 == l->fail_after)
		return rv_error_set(err, EIO, "the test's sink gives up");

	struct ev *o = l->expect ? &scratch : evlist_push(l);

	memset(o, 0, sizeof(*o));
	o->type = (uint8_t)e->kind;
	o->time = e->time;
	o->pid = e->pid;
	o->tid = e->tid;
	if (e->kind == RV_EVENT_BRANCH) {
		o->kind = (uint8_t)e->branch.kind;
		o->flags = (uint8_t)e->branch.flags;
		o->from = e->branch.from.ip;
		o->to = e->branch.to.ip;
	} else {
		cr_assert_eq(e->kind, RV_EVENT_TRACE_ERROR);
		cr_assert_not_null(e->error.message);
		o->overflow = e->error.overflow;
		o->from = e->error.offset;
		o->to = e->error.ip;
	}
	if (l->expect) {
		if (l->n >= l->expect->n || !same_event(o, &l->expect->v[l->n], true)) {
			if (!l->diffs)
				l->first_diff = l->n;
			l->diffs++;
		}
		l->n++;
	}
	return 0;
}

static void evlist_free(struct evlist *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static const char *kind_name(uint8_t kind, uint8_t flags)
{
	switch (kind) {
	case RV_BRANCH_CALL:
		return "call";
	case RV_BRANCH_RETURN:
		return "return";
	case RV_BRANCH_JUMP:
		return "jmp";
	case RV_BRANCH_COND:
		return "jcc";
	case RV_BRANCH_SYSCALL:
		return "syscall";
	case RV_BRANCH_SYSRET:
		return "sysret";
	case RV_BRANCH_INTERRUPT:
		return "hw int";
	case RV_BRANCH_SOFT_INT:
		return "int";
	case RV_BRANCH_IRET:
		return "iret";
	case RV_BRANCH_TX_ABORT:
		return "tx abrt";
	default:
		return flags & RV_BRANCH_ASYNC ? "async" : "";
	}
}

static void describe(const struct ev *e, char *out, size_t size)
{
	if (e->type == RV_EVENT_TRACE_ERROR) {
		snprintf(out, size, "tid %u time %" PRIu64 " %s error ip %#" PRIx64, e->tid,
			 e->time, e->overflow ? "overflow" : "decode", e->to);
		return;
	}
	snprintf(out, size, "tid %u time %" PRIu64 " %s%s%s%s %#" PRIx64 " => %#" PRIx64, e->tid,
		 e->time, e->flags & RV_BRANCH_TRACE_BEGIN ? "tr strt " : "",
		 e->flags & RV_BRANCH_TRACE_END ? "tr end " : "", kind_name(e->kind, e->flags),
		 e->flags & RV_BRANCH_IN_TX ? " (x)" : "", e->from, e->to);
}

static bool same_event(const struct ev *a, const struct ev *b, bool with_time)
{
	return a->type == b->type && a->kind == b->kind && a->flags == b->flags &&
	       a->from == b->from && a->to == b->to && a->pid == b->pid && a->tid == b->tid &&
	       a->overflow == b->overflow && (!with_time || a->time == b->time);
}

/* Prints both lists' events around index at (the first that differs, or the
 * first one list lacks), to stderr, before the assertion that names it. */
static void print_context(const struct evlist *ref, const struct evlist *got, size_t at,
			  const char *what)
{
	size_t from = at > 4 ? at - 4 : 0;

	fprintf(stderr, "%s: events %zu to %zu (expected | got):\n", what, from, at + 4);
	for (size_t i = from; i <= at + 4; i++) {
		char a[256] = "-", b[256] = "-";

		if (i < ref->n)
			describe(&ref->v[i], a, sizeof(a));
		if (i < got->n)
			describe(&got->v[i], b, sizeof(b));
		fprintf(stderr, "%c %8zu  %s\n%11s| %s\n", i == at ? '>' : ' ', i, a, "", b);
	}
}

/* Asserts that two decodes of one buffer gave the same events. */
static void assert_same_events(const struct evlist *ref, const struct evlist *got, const char *what)
{
	size_t n = ref->n < got->n ? ref->n : got->n;

	for (size_t i = 0; i < n; i++) {
		if (same_event(&ref->v[i], &got->v[i], true))
			continue;
		char a[256], b[256];

		describe(&ref->v[i], a, sizeof(a));
		describe(&got->v[i], b, sizeof(b));
		print_context(ref, got, i, what);
		cr_assert_fail("%s: event %zu differs:\n  expected %s\n  got      %s", what, i, a,
			       b);
	}
	if (ref->n != got->n)
		print_context(ref, got, n, what);
	cr_assert_eq(ref->n, got->n, "%s: %zu events, expected %zu", what, got->n, ref->n);
}

/* ---- the fast walker against libipt's block decoder ---- */

/* Asserts the counts of two decodes of one buffer, one of them by libipt's
 * block decoder (ref), are the same: everything but libipt's blocks, whose
 * cut the fast walker does not share, and the chunks, which follow
 * chunk_bytes; and that each walker accounts for every byte. */
static void assert_same_stats(const struct rv_pt_stats *ref, const struct rv_pt_stats *got,
			      const char *what)
{
	char text[512];

	if (pt_walkers_stats_differ(ref, got, text, sizeof(text)))
		cr_assert_fail("%s: %s", what, text);
}

/* The (jobs, chunk_bytes) the fast walker's decodes are compared at: one
 * thread over the whole buffer, and the chunk seams with one and two. */
static const struct {
	unsigned jobs;
	size_t chunk_bytes;
} fast_settings[] = { { 1, SIZE_MAX }, { 2, 4096 }, { 1, 16384 }, { 2, 0 } };

#define NR_FAST_SETTINGS (sizeof(fast_settings) / sizeof(fast_settings[0]))

/* Functions as the trace's own calls show them: every call's destination
 * starts one, which ends where the next starts; cut further at every
 * FN_GRANULE bytes, so that many jumps leave their "function" (loops
 * included) and the walkers' choice between dropping a jump and handing it
 * on is made both ways often. A jump inside one is dropped by both walkers
 * alike; whether it was right to drop it does not matter here, only that
 * both drop the same. */
#define FN_GRANULE 128
struct fn_map {
	uint64_t *starts;
	size_t n;
	uint64_t window; /* an answer holds for [time - window, time + window) */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void fn_map_from_calls(struct fn_map *m, const struct evlist *events, uint64_t window)
{
	memset(m, 0, sizeof(*m));
	m->window = window;
	m->starts = malloc((events->n + 1) * sizeof(*m->starts));
	cr_assert_not_null(m->starts);
	for (size_t i = 0; i < events->n; i++)
		if (events->v[i].type == RV_EVENT_BRANCH && events->v[i].kind == RV_BRANCH_CALL &&
		    events->v[i].to)
			m->starts[m->n++] = events->v[i].to;
	qsort(m->starts, m->n, sizeof(*m->starts), cmp_u64);

	size_t k = 0;

	for (size_t i = 0; i < m->n; i++)
		if (!k || m->starts[k - 1] != m->starts[i])
			m->starts[k++] = m->starts[i];
	m->n = k;
	cr_assert_gt(m->n, 1, "the trace calls fewer than two functions");
}

static bool fn_map_at(void *ctx, uint32_t pid, uint64_t time, uint64_t addr,
		      struct rv_pt_function_span *out)
{
	struct fn_map *m = ctx;
	size_t lo = 0, hi = m->n;

	(void)pid;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->starts[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || lo == m->n)
		return false; /* before the first start, or in the last (no end) */
	uint64_t granule = addr & ~(uint64_t)(FN_GRANULE - 1);

	out->start = m->starts[lo - 1] > granule ? m->starts[lo - 1] : granule;
	out->end = m->starts[lo] < granule + FN_GRANULE ? m->starts[lo] : granule + FN_GRANULE;
	out->from = m->window && time > m->window ? time - m->window : 0;
	out->until = m->window ? time + m->window : UINT64_MAX;
	return true;
}

static void fn_map_free(struct fn_map *m)
{
	free(m->starts);
	memset(m, 0, sizeof(*m));
}

/* How jumps are treated, both walkers alike: all handed to the sink, those
 * inside a function dropped (options.function_at), none looked at
 * (options.ignore_jumps). */
enum jump_mode { JUMPS_ALL, JUMPS_IN_FUNCTION_DROPPED, JUMPS_IGNORED, NR_JUMP_MODES };

static const char *const jump_mode_names[NR_JUMP_MODES] = { "every jump", "function_at",
							    "ignore_jumps" };

static void set_jump_mode(struct rv_pt_decode_options *o, enum jump_mode mode, struct fn_map *fns)
{
	o->ignore_jumps = mode == JUMPS_IGNORED;
	o->function_at = mode == JUMPS_IN_FUNCTION_DROPPED ? fn_map_at : NULL;
	o->function_at_ctx = mode == JUMPS_IN_FUNCTION_DROPPED ? fns : NULL;
}

/* An answer of function_at holds for a sixty-fourth of the trace's time,
 * so that the walkers ask again as it goes on (forever without times). */
static uint64_t fn_window(const struct rv_pt_stats *st)
{
	return st->last_time > st->first_time ? (st->last_time - st->first_time) / 64 + 1 : 0;
}

/* ---- the raw corpus ---- */

struct corpus {
	const char *name;
	uint64_t base, end, insns;
};

static const struct corpus corpora[] = {
	{ "Unzip", 0x400000, 0x427000, 149576 },
	{ "foo", 0x7ffff7819000, 0x7ffff79ca000, 117967 },
	{ "mruby", 0x400000, 0x4b6000, 6334131 },
};

struct raw {
	uint8_t *trace;
	size_t size;
	char image_path[PATH_MAX];
	uint64_t base;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct rv_pt_decode_options options;
};

/* The corpus image again, for a decoding thread's own section cache. */
static int raw_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct raw *r = ctx;
	int isid = rv_pt_sections_add_file(iscache, r->image_path, 0, UINT64_MAX, r->base);

	if (image != r->image)
		return rv_error_set(err, EINVAL, "an image the test does not know");
	if (isid < 0 || rv_pt_sections_add_cached(copy, iscache, isid) < 0)
		return rv_error_set(err, EIO, "cannot map %s again", r->image_path);
	return 0;
}

static void raw_load(struct raw *r, const struct corpus *c, unsigned copies)
{
	char trace_path[PATH_MAX], image_path[PATH_MAX], rel[64];

	memset(r, 0, sizeof(*r));
	snprintf(rel, sizeof(rel), "%s/trace.pt", c->name);
	corpus_path(trace_path, sizeof(trace_path), rel);
	snprintf(rel, sizeof(rel), "%s/image.bin", c->name);
	corpus_path(image_path, sizeof(image_path), rel);

	size_t size;
	uint8_t *one = read_whole(trace_path, &size);

	r->size = size * copies;
	r->trace = malloc(r->size);
	cr_assert_not_null(r->trace);
	for (unsigned i = 0; i < copies; i++)
		memcpy(r->trace + i * size, one, size);
	free(one);

	r->iscache = pt_iscache_alloc(c->name);
	r->image = rv_pt_image_alloc(c->name);
	cr_assert(r->iscache && r->image);

	int isid = rv_pt_sections_add_file(r->iscache, image_path, 0, UINT64_MAX, c->base);

	cr_assert_geq(isid, 0, "cannot add %s: %s", image_path, pt_errstr(pt_errcode(isid)));
	snprintf(r->image_path, sizeof(r->image_path), "%s", image_path);
	r->base = c->base;
	cr_assert_geq(rv_pt_sections_add_cached(r->image, r->iscache, isid), 0);

	struct rv_pt_decode_options *o = &r->options;

	pt_config_init(&o->config);
	o->config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
	o->config.addr_filter.addr0_a = c->base;
	o->config.addr_filter.addr0_b = c->end;
	o->image = r->image;
	o->iscache = r->iscache;
	o->populate = raw_populate;
	o->populate_ctx = r;
	o->pid = 7;
	o->tid = 8;
}

static void raw_free(struct raw *r)
{
	rv_pt_image_free(r->image);
	rv_pt_sections_forget_iscache(r->iscache);
	pt_iscache_free(r->iscache);
	free(r->trace);
}

static void decode_raw(struct raw *r, unsigned jobs, size_t chunk_bytes, struct evlist *out,
		       struct rv_pt_stats *stats)
{
	struct rv_error err = { 0 };

	r->options.jobs = jobs;
	r->options.chunk_bytes = chunk_bytes;
	int ret = rv_pt_decode(r->trace, r->size, &r->options, record_sink, out, stats, &err);

	cr_assert_eq(ret, 0, "rv_pt_decode: %s", err.message);
}

/* The chunk sizes a buffer is decoded with: 1 KiB up to the whole of it. */
static const size_t chunk_sizes[] = { 1024, 2048, 4096, 16384, 65536, 0, SIZE_MAX };

/* r decoded by libipt's decoder at every chunk size and thread count, then
 * by the fast walker: the events of ref (errors with their offset, address
 * and code; tasks), and the counts of st. */
static void assert_every_chunking(struct raw *r, const struct evlist *ref,
				  const struct rv_pt_stats *st, const char *name)
{
	for (size_t s = 0; s < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); s++) {
		for (unsigned k = 0; k < 4; k++) {
			unsigned jobs = 1 + k % 2;
			struct evlist got = { 0 };
			struct rv_pt_stats gst;
			char what[128];

			r->options.decoder = k < 2 ? RV_PT_DECODER_LIBIPT : RV_PT_DECODER_FAST;
			decode_raw(r, jobs, chunk_sizes[s], &got, &gst);
			snprintf(what, sizeof(what), "%s, %s, %zu-byte chunks, %u jobs", name,
				 k < 2 ? "libipt" : "fast walker", chunk_sizes[s], jobs);
			assert_same_events(ref, &got, what);
			cr_assert_eq(gst.insns, st->insns, "%s", what);
			cr_assert_eq(gst.errors, st->errors, "%s", what);
			cr_assert_eq(gst.skipped_bytes, st->skipped_bytes, "%s", what);
			if (k >= 2)
				assert_same_stats(st, &gst, what);
			evlist_free(&got);
		}
	}
}

/* ---- corpus tests ---- */

Test(pt_decoder, corpus_reference_counts)
{
	for (size_t c = 0; c < sizeof(corpora) / sizeof(corpora[0]); c++) {
		struct raw r;
		struct evlist ref = { 0 };
		struct rv_pt_stats ref_stats;

		raw_load(&r, &corpora[c], 1);
		decode_raw(&r, 1, SIZE_MAX, &ref, &ref_stats);
		cr_assert_eq(ref_stats.insns, corpora[c].insns, "%s: %" PRIu64 " instructions",
			     corpora[c].name, ref_stats.insns);
		cr_assert_eq(ref_stats.errors, 0, "%s: %" PRIu64 " errors", corpora[c].name,
			     ref_stats.errors);
		cr_assert_eq(ref_stats.bytes, r.size);
		cr_assert_eq(ref_stats.skipped_bytes, 0);
		cr_assert_gt(ref_stats.calls, 0);
		cr_assert_gt(ref_stats.returns, 0);
		cr_assert_gt(ref.n, 1000);
		/* buffer start: tracing begins at the first PSB's address */
		cr_assert(ref.v[0].flags & RV_BRANCH_TRACE_BEGIN);
		cr_assert_eq(ref.v[0].pid, 7);
		cr_assert_eq(ref.v[0].tid, 8);

		for (size_t s = 0; s < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); s++) {
			for (unsigned jobs = 1; jobs <= 2; jobs++) {
				struct evlist got = { 0 };
				struct rv_pt_stats st;
				char what[128];

				decode_raw(&r, jobs, chunk_sizes[s], &got, &st);
				snprintf(what, sizeof(what), "%s, %zu-byte chunks, %u jobs",
					 corpora[c].name, chunk_sizes[s], jobs);
				cr_assert_eq(st.insns, corpora[c].insns,
					     "%s: %" PRIu64 " instructions", what, st.insns);
				cr_assert_eq(st.errors, 0, "%s: %" PRIu64 " errors", what,
					     st.errors);
				cr_assert_eq(st.overflows, ref_stats.overflows, "%s", what);
				cr_assert_eq(st.calls, ref_stats.calls, "%s", what);
				cr_assert_eq(st.returns, ref_stats.returns, "%s", what);
				cr_assert_eq(st.jumps, ref_stats.jumps, "%s", what);
				assert_same_events(&ref, &got, what);
				evlist_free(&got);
			}
		}
		evlist_free(&ref);
		raw_free(&r);
	}
}

/* With ignore_jumps (images without symbols) blocks run through direct
 * jumps: the same instructions, calls and returns as when every jump is
 * looked at, the same events but for the jumps, and only the jumps that
 * end tracing counted, at every chunk size and with threads. */
Test(pt_decoder, corpus_ignore_jumps)
{
	for (size_t c = 0; c < sizeof(corpora) / sizeof(corpora[0]); c++) {
		struct raw r;
		struct evlist all = { 0 }, ref = { 0 };
		struct rv_pt_stats all_stats;
		uint64_t ending = 0; /* jumps that end tracing: still counted */

		raw_load(&r, &corpora[c], 1);
		decode_raw(&r, 1, SIZE_MAX, &all, &all_stats);
		cr_assert_gt(all_stats.jumps, 0, "%s", corpora[c].name);
		for (size_t i = 0; i < all.n; i++) {
			const struct ev *e = &all.v[i];

			bool jump = e->type == RV_EVENT_BRANCH &&
				    (e->kind == RV_BRANCH_JUMP || e->kind == RV_BRANCH_COND);

			if (jump && !e->flags)
				continue;
			ending += jump;
			*evlist_push(&ref) = *e;
		}
		r.options.ignore_jumps = true;
		for (size_t s = 0; s < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); s++) {
			for (unsigned jobs = 1; jobs <= 2; jobs++) {
				struct evlist got = { 0 };
				struct rv_pt_stats st;
				char what[128];

				decode_raw(&r, jobs, chunk_sizes[s], &got, &st);
				snprintf(what, sizeof(what),
					 "%s ignoring jumps, %zu-byte chunks, %u jobs",
					 corpora[c].name, chunk_sizes[s], jobs);
				cr_assert_eq(st.insns, corpora[c].insns,
					     "%s: %" PRIu64 " instructions", what, st.insns);
				cr_assert_eq(st.errors, 0, "%s", what);
				cr_assert_eq(st.calls, all_stats.calls, "%s", what);
				cr_assert_eq(st.returns, all_stats.returns, "%s", what);
				cr_assert_eq(st.jumps, ending, "%s", what);
				/* Blocks end at jumps either way (pt_decoder.h: libipt
				 * recursed through loops of direct jumps), so ignoring
				 * jumps saves the events, not the blocks. */
				cr_assert_leq(st.blocks, all_stats.blocks + all_stats.blocks / 8,
					      "%s", what);
				cr_assert_eq(got.n, ref.n, "%s: %zu events, not %zu", what, got.n,
					     ref.n);
				assert_same_events(&ref, &got, what);
				evlist_free(&got);
			}
		}
		evlist_free(&all);
		evlist_free(&ref);
		raw_free(&r);
	}
}

Test(pt_decoder, corpus_mruby_twenty_copies, .timeout = 600)
{
	struct raw r;
	struct evlist one = { 0 };

	uint64_t fast_cache = 0;

	raw_load(&r, &corpora[2], 20);
	/* libipt on one thread, then on two, then the fast walker on two (its
	 * caches over a long trace) */
	for (unsigned k = 0; k < 3; k++) {
		unsigned jobs = k ? 2 : 1;
		struct evlist got = { 0 };
		struct rv_pt_stats st;

		r.options.decoder = k < 2 ? RV_PT_DECODER_LIBIPT : RV_PT_DECODER_FAST;
		if (jobs == 2)
			got.expect = &one; /* compared as they come: 7 million events */
		decode_raw(&r, jobs, 0, &got, &st);
		cr_assert_eq(st.insns, 20 * corpora[2].insns, "%u jobs: %" PRIu64 " instructions",
			     jobs, st.insns);
		cr_assert_eq(st.errors, 0);
		cr_assert_eq(st.skipped_bytes, 0);
		cr_assert_gt(st.chunks, 20, "the default chunks are smaller than one copy");
		cr_assert_eq(st.fast_bytes + st.libipt_bytes, st.bytes);
		if (jobs == 1) {
			one = got;
		} else if (got.diffs) {
			char a[256] = "none: the trace has ended";

			if (got.first_diff < one.n)
				describe(&one.v[got.first_diff], a, sizeof(a));
			cr_assert_fail("two jobs, %s: %zu events differ, the first at %zu "
				       "(expected %s)",
				       k < 2 ? "libipt" : "fast walker", got.diffs, got.first_diff,
				       a);
		}
		if (jobs == 2)
			cr_assert_eq(got.n, one.n, "%s", k < 2 ? "libipt" : "fast walker");
		if (k == 2)
			fast_cache = st.cache_bytes;
	}
	evlist_free(&one);
	raw_free(&r);

	/* The fast walker's caches hold code, not trace: one copy of mruby
	 * fills them as twenty do (each of the two threads holds at most all
	 * of the code it met) */
	struct evlist once = { 0 };
	struct rv_pt_stats st1;

	raw_load(&r, &corpora[2], 1);
	r.options.decoder = RV_PT_DECODER_FAST;
	decode_raw(&r, 2, 0, &once, &st1);
	cr_assert_gt(st1.cache_bytes, 0);
	cr_assert_leq(fast_cache, 2 * st1.cache_bytes,
		      "the caches grew with the trace: %" PRIu64 " bytes for 20 copies, %" PRIu64
		      " for one",
		      fast_cache, st1.cache_bytes);
	evlist_free(&once);
	raw_free(&r);
}

/* The fast walker against libipt's block decoder on the corpus: the same
 * events (times, tasks and all) and counts, with every jump handed on, with
 * jumps inside functions dropped and with jumps ignored, on one thread and
 * two, whole and in chunks. */
Test(pt_decoder, corpus_fast_walker_same_events)
{
	for (size_t c = 0; c < sizeof(corpora) / sizeof(corpora[0]); c++) {
		struct raw r;
		struct evlist all = { 0 };
		struct rv_pt_stats all_stats;
		struct fn_map fns;
		uint64_t fast_blocks_all[NR_FAST_SETTINGS] = { 0 };

		raw_load(&r, &corpora[c], 1);
		r.options.decoder = RV_PT_DECODER_LIBIPT;
		decode_raw(&r, 1, SIZE_MAX, &all, &all_stats);
		cr_assert_eq(all_stats.insns, corpora[c].insns, "%s: %" PRIu64 " instructions",
			     corpora[c].name, all_stats.insns);
		fn_map_from_calls(&fns, &all, fn_window(&all_stats));
		for (int mode = 0; mode < NR_JUMP_MODES; mode++) {
			struct evlist ref = { 0 };
			struct rv_pt_stats ref_stats = all_stats;

			set_jump_mode(&r.options, mode, &fns);
			if (mode == JUMPS_ALL) {
				ref = all;
			} else {
				r.options.decoder = RV_PT_DECODER_LIBIPT;
				decode_raw(&r, 1, SIZE_MAX, &ref, &ref_stats);
				cr_assert_eq(ref_stats.insns, corpora[c].insns, "%s, %s",
					     corpora[c].name, jump_mode_names[mode]);
				cr_assert_lt(ref.n, all.n, "%s, %s: no jump was left out",
					     corpora[c].name, jump_mode_names[mode]);
			}
			if (mode == JUMPS_IN_FUNCTION_DROPPED)
				cr_assert_eq(ref_stats.jumps, all_stats.jumps,
					     "%s: dropped jumps are counted", corpora[c].name);
			for (size_t s = 0; s < NR_FAST_SETTINGS; s++) {
				struct evlist got = { 0 };
				struct rv_pt_stats st;
				char what[160];

				snprintf(what, sizeof(what),
					 "%s, %s, fast walker, %zu-byte chunks, %u jobs",
					 corpora[c].name, jump_mode_names[mode],
					 fast_settings[s].chunk_bytes, fast_settings[s].jobs);
				r.options.decoder = RV_PT_DECODER_FAST;
				decode_raw(&r, fast_settings[s].jobs, fast_settings[s].chunk_bytes,
					   &got, &st);
				assert_same_events(&ref, &got, what);
				assert_same_stats(&ref_stats, &st, what);
				/* The jumps it drops, the fast walker runs
				 * through: fewer blocks than with every jump
				 * (the function's span reaches it, pt_fast.h's
				 * struct rv_fast_drop). */
				if (mode == JUMPS_ALL)
					fast_blocks_all[s] = st.blocks;
				else if (mode == JUMPS_IN_FUNCTION_DROPPED)
					cr_assert_lt(st.blocks,
						     fast_blocks_all[s] - fast_blocks_all[s] / 16,
						     "%s: %" PRIu64
						     " blocks, with every jump %" PRIu64,
						     what, st.blocks, fast_blocks_all[s]);
				if (mode == JUMPS_ALL && s == 0)
					fprintf(stderr,
						"pt_decoder: %s: the fast walker decoded %" PRIu64
						" of %" PRIu64 " bytes (%" PRIu64
						" chunks handed to libipt)\n",
						corpora[c].name, st.fast_bytes, st.bytes,
						st.handoffs);
				/* the corpus is all code the fast walker models:
				 * none of it goes back to libipt (the bytes
				 * before the first PSB are nobody's) */
				cr_assert_eq(st.handoffs, 0, "%s: chunks handed to libipt", what);
				cr_assert_eq(st.fast_bytes + st.skipped_bytes, st.bytes,
					     "%s: the fast walker decoded %" PRIu64 " of %" PRIu64
					     " bytes",
					     what, st.fast_bytes, st.bytes);
				evlist_free(&got);
			}
			if (mode != JUMPS_ALL)
				evlist_free(&ref);
		}
		fn_map_free(&fns);
		evlist_free(&all);
		raw_free(&r);
	}
}

/* ---- softpt captures: perf.data read just enough ---- */

#define CAP_MAX_BUFS 16

struct cap_buf {
	uint32_t tid;
	uint8_t *data;
	size_t size;
};

#define CAP_MAX_MAPS 64

struct cap_map {
	char path[1024];
	uint64_t addr, len, pgoff;
};

struct capture {
	struct cap_map maps[CAP_MAX_MAPS]; /* the image's, for populate */
	size_t nr_maps;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct rv_perf_time_conv tc;
	bool has_tc;
	struct pt_config config;
	struct cap_buf bufs[CAP_MAX_BUFS];
	size_t nr_bufs;
	uint32_t pid;
	/* how cap_decode decodes: the walker, and what it does with jumps */
	enum rv_pt_decoder_choice decoder;
	enum jump_mode jumps;
	struct fn_map *fns;
	/* Not 0: a resolve hook names the task, another one every period
	 * from first_time on (cap_resolve); buf_tid is the buffer's. */
	uint64_t task_period, first_time;
	uint32_t buf_tid;
};

static uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* PERF_RECORD_MMAP2: pid, tid, addr, len, pgoff, maj, min, ino, ino_generation,
 * prot, flags, filename. Executable mappings go into the image; "[vdso]" is
 * DIR/vdso.so. */
static void cap_add_mmap2(struct capture *c, const char *dir, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	char path[PATH_MAX];

	cr_assert_geq(h->size, 80, "an MMAP2 record of %u bytes", h->size);

	const char *name = (const char *)p + 72;

	cr_assert_not_null(memchr(name, '\0', h->size - 72u), "an MMAP2 name without its NUL");
	if (!(load32(p + 64) & PROT_EXEC))
		return;

	uint64_t addr = load64(p + 16), len = load64(p + 24), pgoff = load64(p + 32);

	c->pid = load32(p + 8);
	if (strcmp(name, "[vdso]") == 0) {
		snprintf(path, sizeof(path), "%s/vdso.so", dir);
		pgoff = 0;
	} else if (name[0] == '/') {
		snprintf(path, sizeof(path), "%s", name);
	} else {
		return;
	}

	int isid = rv_pt_sections_add_file(c->iscache, path, pgoff, len, addr);

	cr_assert_geq(isid, 0, "cannot map %s: %s", path, pt_errstr(pt_errcode(isid)));
	cr_assert_geq(rv_pt_sections_add_cached(c->image, c->iscache, isid), 0);
	cr_assert_lt(c->nr_maps, CAP_MAX_MAPS);
	cr_assert_lt(strlen(path), sizeof(c->maps[0].path));
	c->maps[c->nr_maps] = (struct cap_map){ .addr = addr, .len = len, .pgoff = pgoff };
	memcpy(c->maps[c->nr_maps++].path, path, strlen(path) + 1);
}

/* The capture's image again, mapping for mapping, for a decoding thread. */
static int cap_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct capture *c = ctx;

	if (image != c->image)
		return rv_error_set(err, EINVAL, "an image the test does not know");
	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct cap_map *m = &c->maps[i];
		int isid = rv_pt_sections_add_file(iscache, m->path, m->pgoff, m->len, m->addr);

		if (isid < 0 || rv_pt_sections_add_cached(copy, iscache, isid) < 0)
			return rv_error_set(err, EIO, "cannot map %s again", m->path);
	}
	return 0;
}

static void cap_load(struct capture *c, const char *dir)
{
	char path[PATH_MAX];
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_intel_pt_info info;
	struct rv_error err = { 0 };
	bool has_info = false;
	int ret;

	memset(c, 0, sizeof(*c));
	c->iscache = pt_iscache_alloc(NULL);
	c->image = rv_pt_image_alloc(NULL);
	cr_assert(c->iscache && c->image);
	pt_config_init(&c->config);
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while ((ret = rv_perf_reader_next(r, &rec, &err)) > 0) {
		const struct perf_event_header *h = rec.header;

		switch (h->type) {
		case PERF_RECORD_MMAP2:
			cap_add_mmap2(c, dir, h);
			break;
		case RV_PERF_RECORD_TIME_CONV:
			cr_assert_eq(rv_perf_time_conv_parse(h, &c->tc, &err), 0, "%s",
				     err.message);
			c->has_tc = true;
			break;
		case RV_PERF_RECORD_AUXTRACE_INFO:
			cr_assert_eq(rv_intel_pt_info_parse(h, &info, &err), 0, "%s", err.message);
			has_info = true;
			break;
		case RV_PERF_RECORD_AUXTRACE: {
			struct rv_perf_auxtrace a;

			cr_assert_eq(rv_perf_auxtrace_parse(h, &a, &err), 0, "%s", err.message);
			cr_assert_lt(c->nr_bufs, CAP_MAX_BUFS);
			cr_assert_geq(rec.payload_size, a.size);

			struct cap_buf *b = &c->bufs[c->nr_bufs++];

			b->tid = a.tid;
			b->size = a.size;
			b->data = malloc(a.size ? a.size : 1);
			cr_assert_not_null(b->data);
			memcpy(b->data, rec.payload, a.size);
			break;
		}
		default:
			break;
		}
	}
	cr_assert_eq(ret, 0, "%s: %s", path, err.message);
	cr_assert(has_info, "%s has no AUXTRACE_INFO", path);

	const char *cpuid = rv_perf_reader_feature_string(r, RV_FEAT_CPUID);

	cr_assert_not_null(cpuid, "%s has no cpuid", path);
	cr_assert_eq(rv_pt_cpu_parse(cpuid, &c->config, &err), 0, "%s", err.message);
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if (a->attr.type == info.pmu_type && info.mtc_freq_bits)
			c->config.mtc_freq = (uint8_t)((a->attr.config & info.mtc_freq_bits) >>
						       __builtin_ctzll(info.mtc_freq_bits));
	}
	c->config.cpuid_0x15_eax = (uint32_t)info.tsc_ctc_ratio_d;
	c->config.cpuid_0x15_ebx = (uint32_t)info.tsc_ctc_ratio_n;
	c->config.nom_freq = (uint8_t)info.max_non_turbo_ratio;
	cr_assert(c->has_tc, "%s has no TIME_CONV", path);
	rv_perf_reader_free(r);
}

static void cap_free(struct capture *c)
{
	for (size_t i = 0; i < c->nr_bufs; i++)
		free(c->bufs[i].data);
	rv_pt_image_free(c->image);
	rv_pt_sections_forget_iscache(c->iscache);
	pt_iscache_free(c->iscache);
}

/* The buffer's thread renamed every task_period: tid + 1000 * k in the
 * k-th period, until the next. */
static int cap_resolve(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid,
		       struct pt_image **image, uint64_t *until, struct rv_error *err)
{
	const struct capture *c = ctx;
	uint64_t k = time > c->first_time ? (time - c->first_time) / c->task_period : 0;

	(void)err;
	*pid = c->pid;
	*tid = c->buf_tid + 1000 * (uint32_t)k;
	*image = c->image;
	*until = c->first_time + (k + 1) * c->task_period;
	return 0;
}

/* Every buffer of the capture, one after the other (each its thread's). */
static void cap_decode(struct capture *c, unsigned jobs, size_t chunk_bytes, struct evlist *out,
		       struct rv_pt_stats *total)
{
	struct rv_pt_decode_options o;

	memset(&o, 0, sizeof(o));
	memset(total, 0, sizeof(*total));
	o.config = c->config;
	o.time_conv = &c->tc;
	o.image = c->image;
	o.iscache = c->iscache;
	o.populate = cap_populate;
	o.populate_ctx = c;
	o.jobs = jobs;
	o.chunk_bytes = chunk_bytes;
	o.decoder = c->decoder;
	set_jump_mode(&o, c->jumps, c->fns);
	if (c->task_period) {
		o.resolve = cap_resolve;
		o.resolve_ctx = c;
	}
	for (size_t i = 0; i < c->nr_bufs; i++) {
		struct rv_pt_stats st;
		struct rv_error err = { 0 };

		o.pid = c->pid;
		o.tid = c->bufs[i].tid;
		c->buf_tid = c->bufs[i].tid;
		cr_assert_eq(rv_pt_decode(c->bufs[i].data, c->bufs[i].size, &o, record_sink, out,
					  &st, &err),
			     0, "%s", err.message);
		rv_pt_stats_merge(total, &st);
	}
}

/* ---- perf script, the oracle ---- */

/* `perf script --itrace=be -F pid,tid,time,flags,ip,addr --ns` of
 * dir/perf.data, read by rearview's own import of perf script text
 * (decode/perf_script.h), which test_perf_script.c checks line by line. */
static void perf_events(const char *dir, struct evlist *out)
{
	char cmd[PATH_MAX + 128];
	struct rv_perf_script *script;
	struct rv_error err = { 0 };
	struct rv_event ev;
	FILE *p;
	int ret;

	snprintf(cmd, sizeof(cmd),
		 "perf script -i '%s/perf.data' --itrace=be -F pid,tid,time,flags,ip,addr --ns "
		 "2>/dev/null",
		 dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_eq(rv_perf_script_open(&script, p, "perf script", &err), 0, "%s", err.message);
	while ((ret = rv_perf_script_next(script, &ev, &err)) == 1) {
		struct ev e;

		memset(&e, 0, sizeof(e));
		e.type = ev.kind;
		e.time = ev.time;
		e.tid = ev.tid;
		if (ev.kind == RV_EVENT_TRACE_ERROR) {
			e.to = ev.error.ip;
			e.overflow = ev.error.overflow;
		} else {
			e.kind = ev.branch.kind;
			e.flags = (uint8_t)ev.branch.flags;
			e.from = ev.branch.from.ip;
			e.to = ev.branch.to.ip;
		}
		*evlist_push(out) = e;
	}
	cr_assert_eq(ret, 0, "perf script's output on %s: %s", dir, err.message);
	rv_perf_script_free(script);
	cr_assert_eq(pclose(p), 0, "perf script failed on %s", dir);
}

/* Per thread, perf's events and ours in the same order. perf does not begin
 * a trace at a PSB it synchronises on (a snapshot's first); rearview does,
 * at a buffer's start, and that one is left out. Times must be equal when
 * exact_time, else their differences are counted. */
static void compare_with_perf(const struct evlist *perf, const struct evlist *mine,
			      const char *what, bool exact_time)
{
	uint32_t tids[64];
	size_t nr_tids = 0, time_diffs = 0, total = 0;
	uint64_t max_diff = 0;

	for (size_t i = 0; i < perf->n; i++) {
		size_t t = 0;

		while (t < nr_tids && tids[t] != perf->v[i].tid)
			t++;
		if (t == nr_tids) {
			cr_assert_lt(nr_tids, 64);
			tids[nr_tids++] = perf->v[i].tid;
		}
	}
	cr_assert_gt(nr_tids, 0, "%s: perf printed nothing", what);
	for (size_t t = 0; t < nr_tids; t++) {
		size_t a = 0, b = 0, count = 0;
		bool first = true;

		for (;;) {
			while (a < perf->n && perf->v[a].tid != tids[t])
				a++;
			while (b < mine->n && mine->v[b].tid != tids[t])
				b++;
			if (first && b < mine->n && a < perf->n &&
			    (mine->v[b].flags & RV_BRANCH_TRACE_BEGIN) &&
			    !(perf->v[a].flags & RV_BRANCH_TRACE_BEGIN)) {
				b++;
				continue;
			}
			first = false;
			if (a == perf->n || b == mine->n)
				break;

			const struct ev *p = &perf->v[a], *m = &mine->v[b];
			char pe[256], me[256];

			describe(p, pe, sizeof(pe));
			describe(m, me, sizeof(me));
			cr_assert(p->type == m->type && p->kind == m->kind &&
					  p->flags == m->flags &&
					  (p->type == RV_EVENT_TRACE_ERROR || p->from == m->from) &&
					  p->to == m->to && p->overflow == m->overflow,
				  "%s: thread %u event %zu differs:\n  perf     %s\n  rearview %s",
				  what, tids[t], count, pe, me);
			if (p->time != m->time) {
				cr_assert(
					!exact_time,
					"%s: thread %u event %zu at another time:\n  perf     %s\n"
					"  rearview %s",
					what, tids[t], count, pe, me);
				uint64_t d =
					p->time > m->time ? p->time - m->time : m->time - p->time;

				time_diffs++;
				if (d > max_diff)
					max_diff = d;
			}
			a++;
			b++;
			count++;
		}
		while (a < perf->n && perf->v[a].tid != tids[t])
			a++;
		while (b < mine->n && mine->v[b].tid != tids[t])
			b++;
		cr_assert(a == perf->n && b == mine->n,
			  "%s: thread %u: perf and rearview differ in length after %zu events",
			  what, tids[t], count);
		total += count;
	}
	if (!exact_time)
		fprintf(stderr,
			"pt_decoder: %s: %zu of %zu events at other times than perf's, by %" PRIu64
			" ns at most\n",
			what, time_diffs, total, max_diff);
}

/* ---- softpt runs ---- */

struct softpt_config {
	struct softpt_setting run; /* first: the table is softpt_run_settings' */
	bool exact_time;	   /* perf's times are ours */
	bool psb_2k;		   /* a PSB every 2 KiB: chunked decoding is checked */
};

static const struct softpt_config softpt_configs[] = {
	{ { "low", "--timer-resolution low" }, true, false },
	{ { "tsc-only", "--timer-resolution custom:tsc=1,mtc=0,cyc=0" }, true, false },
	{ { "psb-2k", "--timer-resolution low --psb-period 0" }, true, true },
	{ { "psb-2k-tsc", "--timer-resolution custom:tsc=1,mtc=0,cyc=0 --psb-period 0" },
	  true,
	  true },
	{ { "noretcomp", "--timer-resolution low --noretcomp" }, true, false },
	{ { "overflow", "--timer-resolution low --inject-overflow 20000" }, true, false },
	{ { "snapshot", "--timer-resolution low --psb-period 0 --snapshot-size 4K" }, true, true },
	{ { "cyc", "--timer-resolution normal" }, false, false },
	{ { "cyc-noretcomp", "--timer-resolution high" }, false, false },
};

#define NR_SOFTPT_CONFIGS (sizeof(softpt_configs) / sizeof(softpt_configs[0]))

/* softpt's captures of tests/pt/TARGET, one per setting, in dir; perf is
 * their oracle. */
static void run_softpt(const char *target, char *dir, size_t dir_size)
{
	require_executable("perf (Debian's linux-perf)", "/usr/bin/perf");
	softpt_run_settings(target, &softpt_configs[0].run, NR_SOFTPT_CONFIGS,
			    sizeof(softpt_configs[0]), "rv-pt-decoder", dir, dir_size);
}

/* Of fast_settings, those the captures are decoded at: the first two (the
 * captures with a PSB every 2 KiB are decoded at every chunk size too). */
#define NR_CAPTURE_FAST_SETTINGS 2

/* The fast walker against libipt's block decoder on one capture, whose
 * events libipt's decode with every jump handed on gave in all: the same
 * events and counts in each jump mode, for each of fast_settings. */
static void compare_walkers(struct capture *c, const struct evlist *all,
			    const struct rv_pt_stats *all_stats, const char *what,
			    struct rv_pt_stats *fast_share)
{
	struct fn_map fns;

	fn_map_from_calls(&fns, all, fn_window(all_stats));
	c->fns = &fns;
	for (int mode = 0; mode < NR_JUMP_MODES; mode++) {
		struct evlist ref = { 0 };
		struct rv_pt_stats ref_stats = *all_stats;

		c->jumps = mode;
		if (mode == JUMPS_ALL) {
			ref = *all;
		} else {
			c->decoder = RV_PT_DECODER_LIBIPT;
			cap_decode(c, 1, SIZE_MAX, &ref, &ref_stats);
		}
		c->decoder = RV_PT_DECODER_FAST;
		for (size_t s = 0; s < NR_CAPTURE_FAST_SETTINGS; s++) {
			struct evlist got = { 0 };
			struct rv_pt_stats st;
			char how[192];

			snprintf(how, sizeof(how), "%s, %s, fast walker, %zu-byte chunks, %u jobs",
				 what, jump_mode_names[mode], fast_settings[s].chunk_bytes,
				 fast_settings[s].jobs);
			cap_decode(c, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &got,
				   &st);
			assert_same_events(&ref, &got, how);
			assert_same_stats(&ref_stats, &st, how);
			if (mode == JUMPS_ALL && s == 0)
				rv_pt_stats_merge(fast_share, &st);
			evlist_free(&got);
		}
		if (mode != JUMPS_ALL)
			evlist_free(&ref);
	}
	c->jumps = JUMPS_ALL;
	c->fns = NULL;
	fn_map_free(&fns);

	/* A task that changes as time goes on: both walkers ask resolve at the
	 * same times (chunk starts, trace starts, the end of its answer). */
	struct evlist ref = { 0 };
	struct rv_pt_stats ref_stats;

	c->first_time = all_stats->first_time;
	c->task_period = all_stats->last_time > all_stats->first_time
				 ? (all_stats->last_time - all_stats->first_time) / 16 + 1
				 : 0;
	if (!c->task_period) {
		c->decoder = RV_PT_DECODER_LIBIPT;
		return;
	}
	c->decoder = RV_PT_DECODER_LIBIPT;
	cap_decode(c, 1, SIZE_MAX, &ref, &ref_stats);

	size_t renamed = 0;

	cr_assert_eq(ref.n, all->n, "%s: tasks by time change the events", what);
	for (size_t i = 0; i < ref.n; i++)
		renamed += ref.v[i].tid != all->v[i].tid;
	cr_assert_gt(renamed, 0, "%s: the task never changed", what);
	c->decoder = RV_PT_DECODER_FAST;
	for (size_t s = 0; s < NR_CAPTURE_FAST_SETTINGS; s++) {
		struct evlist got = { 0 };
		struct rv_pt_stats st;
		char how[192];

		snprintf(how, sizeof(how),
			 "%s, tasks by time, fast walker, %zu-byte chunks, %u jobs", what,
			 fast_settings[s].chunk_bytes, fast_settings[s].jobs);
		cap_decode(c, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &got, &st);
		assert_same_events(&ref, &got, how);
		assert_same_stats(&ref_stats, &st, how);
		evlist_free(&got);
	}
	evlist_free(&ref);
	c->task_period = 0;
	c->decoder = RV_PT_DECODER_LIBIPT;
}

/* perf's branches for every configuration (decoded by libipt's block
 * decoder), the fast walker's the same; then, with a PSB every 2 KiB, the
 * same events for every chunk size and thread count, from both walkers. */
static void check_target(const char *target)
{
	char dir[64];
	struct rv_pt_stats fast_share = { 0 };

	run_softpt(target, dir, sizeof(dir));
	for (size_t i = 0; i < NR_SOFTPT_CONFIGS; i++) {
		const struct softpt_config *cfg = &softpt_configs[i];
		char cdir[128], what[128];
		struct capture c;
		struct evlist perf = { 0 }, mine = { 0 };
		struct rv_pt_stats st;

		snprintf(cdir, sizeof(cdir), "%s/%s", dir, cfg->run.name);
		snprintf(what, sizeof(what), "%s (%s)", target, cfg->run.name);
		cap_load(&c, cdir);
		c.decoder = RV_PT_DECODER_LIBIPT;
		cap_decode(&c, 1, SIZE_MAX, &mine, &st);
		cr_assert_eq(st.errors, 0, "%s: %" PRIu64 " decode errors", what, st.errors);
		cr_assert_gt(st.insns, 1000, "%s", what);
		if (strcmp(cfg->run.name, "overflow") == 0)
			cr_assert_gt(st.overflows, 0, "%s: no overflow", what);
		perf_events(cdir, &perf);
		compare_with_perf(&perf, &mine, what, cfg->exact_time);
		compare_walkers(&c, &mine, &st, what, &fast_share);

		if (cfg->psb_2k) {
			for (size_t s = 0; s < sizeof(chunk_sizes) / sizeof(chunk_sizes[0]); s++) {
				for (unsigned k = 0; k < 4; k++) {
					unsigned jobs = 1 + k % 2;
					struct evlist got = { 0 };
					struct rv_pt_stats gst;
					char how[192];

					c.decoder =
						k < 2 ? RV_PT_DECODER_LIBIPT : RV_PT_DECODER_FAST;
					cap_decode(&c, jobs, chunk_sizes[s], &got, &gst);
					snprintf(how, sizeof(how),
						 "%s, %s, %zu-byte chunks, %u jobs", what,
						 k < 2 ? "libipt" : "fast walker", chunk_sizes[s],
						 jobs);
					assert_same_events(&mine, &got, how);
					cr_assert_eq(gst.insns, st.insns, "%s", how);
					if (k >= 2)
						assert_same_stats(&st, &gst, how);
					evlist_free(&got);
				}
			}
		}
		evlist_free(&perf);
		evlist_free(&mine);
		cap_free(&c);
	}
	fprintf(stderr,
		"pt_decoder: %s: the fast walker decoded %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64
		" chunks handed to libipt)\n",
		target, fast_share.fast_bytes, fast_share.bytes, fast_share.handoffs);
	/* user-space code of 64-bit programs: nothing the fast walker hands
	 * back (snapshots' bytes before their first PSB are libipt's count) */
	cr_assert_eq(fast_share.handoffs, 0, "%s: chunks handed to libipt", target);
	cr_assert_gt(fast_share.fast_bytes, fast_share.bytes * 9 / 10,
		     "%s: the fast walker decoded only %" PRIu64 " of %" PRIu64 " bytes", target,
		     fast_share.fast_bytes, fast_share.bytes);
	remove_tree(dir);
}

Test(pt_decoder, softpt_recursion, .timeout = 600)
{
	check_target("recursion");
}

Test(pt_decoder, softpt_tailcall, .timeout = 600)
{
	check_target("tailcall");
}

Test(pt_decoder, softpt_signals, .timeout = 600)
{
	check_target("signals");
}

Test(pt_decoder, softpt_syscall_loop, .timeout = 600)
{
	check_target("syscall_loop");
}

Test(pt_decoder, softpt_longjmp, .timeout = 600)
{
	check_target("longjmp");
}

Test(pt_decoder, softpt_two_threads, .timeout = 600)
{
	check_target("two_threads");
}

Test(pt_decoder, softpt_exceptions, .timeout = 600)
{
	check_target("exceptions");
}

Test(pt_decoder, softpt_dlopen_main, .timeout = 600)
{
	check_target("dlopen_main");
}

/* ---- errors and edges ---- */

Test(pt_decoder, no_psb_no_events)
{
	uint8_t junk[4096];
	struct evlist got = { 0 };
	struct rv_pt_stats st;
	struct rv_pt_decode_options o;
	struct rv_error err = { 0 };

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 1);
	memset(&o, 0, sizeof(o));
	pt_config_init(&o.config);
	for (unsigned jobs = 1; jobs <= 2; jobs++) {
		o.jobs = jobs;
		cr_assert_eq(rv_pt_decode(junk, sizeof(junk), &o, record_sink, &got, &st, &err), 0);
		cr_assert_eq(got.n, 0);
		cr_assert_eq(st.skipped_bytes, sizeof(junk));
		cr_assert_eq(st.insns, 0);
		cr_assert_eq(st.chunks, 0);
	}
	cr_assert_eq(rv_pt_decode(junk, 0, &o, record_sink, &got, &st, &err), 0);
	cr_assert_eq(got.n, 0);
	evlist_free(&got);
}

/* Damage in the middle of mruby: an error event where it is, the bytes up to
 * the next PSB skipped, a trace begin where decoding resumes; the same for
 * any chunks and threads. */
Test(pt_decoder, damage_resyncs_at_next_psb)
{
	struct raw r;
	struct evlist ref = { 0 };
	struct rv_pt_stats st;
	size_t at = 300000;

	raw_load(&r, &corpora[2], 1);
	memset(r.trace + at, 0xd9, 64); /* not a PT opcode's start, repeated */
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &st);
	cr_assert_geq(st.errors, 1);
	cr_assert_lt(st.insns, corpora[2].insns);
	cr_assert_gt(st.insns, corpora[2].insns / 2);
	cr_assert_gt(st.skipped_bytes, 0);
	cr_assert_lt(st.skipped_bytes, 8192, "resumed at the next PSB");
	cr_assert_geq(st.nr_sites, 1);
	cr_assert_geq(st.sites[0].offset, at - 4096);
	cr_assert_lt(st.sites[0].offset, at + 4096);

	size_t e = 0;

	while (e < ref.n && ref.v[e].type != RV_EVENT_TRACE_ERROR)
		e++;
	cr_assert_lt(e, ref.n);
	cr_assert_not(ref.v[e].overflow);
	size_t b = e + 1;

	while (b < ref.n && ref.v[b].type == RV_EVENT_TRACE_ERROR)
		b++;
	cr_assert_lt(b, ref.n);
	cr_assert(ref.v[b].flags & RV_BRANCH_TRACE_BEGIN, "decoding restarts with a trace begin");

	assert_every_chunking(&r, &ref, &st, "damaged mruby");
	evlist_free(&ref);
	raw_free(&r);
}

/* buf[at, size) moved up to make room for an OVF packet (02 f3) at at. */
static void insert_ovf(struct raw *r, size_t at)
{
	uint8_t *bigger = realloc(r->trace, r->size + 2);

	cr_assert_not_null(bigger);
	r->trace = bigger;
	memmove(r->trace + at + 2, r->trace + at, r->size - at);
	r->trace[at] = 0x02;
	r->trace[at + 1] = 0xf3;
	r->size += 2;
}

/* The offset of the first TNT packet at or after from. */
static size_t tnt_packet_at(const struct raw *r, size_t from)
{
	struct pt_config c = r->options.config;
	struct pt_packet_decoder *d;
	struct pt_packet pkt;
	uint64_t offset = 0;

	c.begin = r->trace;
	c.end = r->trace + r->size;
	d = pt_pkt_alloc_decoder(&c);
	cr_assert_not_null(d);
	cr_assert_geq(pt_pkt_sync_set(d, rv_pt_next_psb_pattern(r->trace, r->size, from)), 0);
	for (;;) {
		cr_assert_geq(pt_pkt_get_offset(d, &offset), 0);
		cr_assert_gt(pt_pkt_next(d, &pkt, sizeof(pkt)), 0, "no TNT after %zu", from);
		if (pkt.type == ppt_tnt_8 || pkt.type == ppt_tnt_64)
			break;
	}
	pt_pkt_free_decoder(d);
	return (size_t)offset;
}

/* An OVF packet just before a PSB in mruby: decoding resumes at the PSB+'s
 * FUP, with one overflow event and no decode error, whether the PSB begins a
 * chunk or not (the whole buffer's walk, libipt's and the fast walker's,
 * once reported an error there that a chunk ending at the PSB did not). */
Test(pt_decoder, overflow_before_psb_same_for_every_chunking)
{
	struct raw r;
	struct evlist ref = { 0 };
	struct rv_pt_stats base, st;

	raw_load(&r, &corpora[2], 1);
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &base);
	evlist_free(&ref);
	insert_ovf(&r, rv_pt_next_psb_pattern(r.trace, r.size, r.size / 3));
	decode_raw(&r, 1, SIZE_MAX, &ref, &st);
	cr_assert_eq(st.overflows, base.overflows + 1, "%" PRIu64 " overflows, %" PRIu64 " before",
		     st.overflows, base.overflows);
	cr_assert_eq(st.errors, base.errors, "%" PRIu64 " errors, %" PRIu64 " before", st.errors,
		     base.errors);
	cr_assert_eq(st.skipped_bytes, base.skipped_bytes);
	cr_assert_gt(st.insns, base.insns - base.insns / 100, "decoding resumes at the PSB");
	assert_every_chunking(&r, &ref, &st, "mruby with OVF before a PSB");
	evlist_free(&ref);
	raw_free(&r);
}

/* Overflows in mruby: an OVF packet just before a PSB (decoding resumes at
 * its FUP) and one between two TNT packets (no FUP or TIP.PGE to resume at);
 * both walkers give the same events and counts. Each fast decode is held to
 * libipt's with the same chunks. */
Test(pt_decoder, overflow_same_for_both_walkers)
{
	struct raw r;

	raw_load(&r, &corpora[2], 1);
	insert_ovf(&r, tnt_packet_at(&r, 2 * r.size / 3));
	insert_ovf(&r, rv_pt_next_psb_pattern(r.trace, r.size, r.size / 3));
	for (size_t s = 0; s < NR_FAST_SETTINGS; s++) {
		struct evlist ref = { 0 }, got = { 0 };
		struct rv_pt_stats ref_stats, st;
		size_t overflows = 0;
		char what[128];

		snprintf(what, sizeof(what),
			 "mruby with OVF, fast walker, %zu-byte chunks, %u jobs",
			 fast_settings[s].chunk_bytes, fast_settings[s].jobs);
		r.options.decoder = RV_PT_DECODER_LIBIPT;
		decode_raw(&r, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &ref,
			   &ref_stats);
		cr_assert_geq(ref_stats.overflows, 2, "%s: %" PRIu64 " overflows", what,
			      ref_stats.overflows);
		cr_assert_lt(ref_stats.insns, corpora[2].insns, "%s", what);
		cr_assert_gt(ref_stats.insns, corpora[2].insns / 2, "%s", what);
		for (size_t i = 0; i < ref.n; i++)
			overflows += ref.v[i].type == RV_EVENT_TRACE_ERROR && ref.v[i].overflow;
		cr_assert_geq(overflows, 2, "%s: %zu overflow events", what, overflows);

		r.options.decoder = RV_PT_DECODER_FAST;
		decode_raw(&r, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &got, &st);
		assert_same_events(&ref, &got, what);
		assert_same_stats(&ref_stats, &st, what);
		evlist_free(&ref);
		evlist_free(&got);
	}
	raw_free(&r);
}

/* Code missing from the image: no-map errors, counted as such, with the
 * address the trace went to. */
Test(pt_decoder, missing_code_is_nomap)
{
	struct raw r;
	struct evlist got = { 0 };
	struct rv_pt_stats st;
	struct pt_image *empty = rv_pt_image_alloc("empty");

	raw_load(&r, &corpora[0], 1);
	r.options.image = empty;
	r.options.populate = NULL;
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 2, 4096, &got, &st);
	cr_assert_gt(st.errors, 0);
	cr_assert_eq(st.nomap, st.errors);
	cr_assert_eq(st.insns, 0);
	cr_assert_gt(st.nr_sites, 0);
	cr_assert_eq(st.sites[0].code, -pte_nomap);

	/* the fast walker, which has no code to walk either: the same errors
	 * at the same offsets, each decode against libipt's at its setting */
	for (size_t s = 0; s < NR_FAST_SETTINGS; s++) {
		struct evlist ref = { 0 }, fast = { 0 };
		struct rv_pt_stats ref_stats, fast_stats;
		char what[128];

		snprintf(what, sizeof(what), "no code, fast walker, %zu-byte chunks, %u jobs",
			 fast_settings[s].chunk_bytes, fast_settings[s].jobs);
		r.options.decoder = RV_PT_DECODER_LIBIPT;
		decode_raw(&r, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &ref,
			   &ref_stats);
		r.options.decoder = RV_PT_DECODER_FAST;
		decode_raw(&r, fast_settings[s].jobs, fast_settings[s].chunk_bytes, &fast,
			   &fast_stats);
		cr_assert_gt(ref_stats.nomap, 0, "%s", what);
		assert_same_events(&ref, &fast, what);
		assert_same_stats(&ref_stats, &fast_stats, what);
		evlist_free(&ref);
		evlist_free(&fast);
	}
	/* where the trace went, which is not mapped */
	cr_assert_geq(st.sites[0].ip, corpora[0].base);
	cr_assert_lt(st.sites[0].ip, corpora[0].end);
	cr_assert_leq(st.nr_sites, RV_PT_MAX_ERROR_SITES);
	rv_pt_image_free(empty);
	evlist_free(&got);
	raw_free(&r);
}

Test(pt_decoder, sink_failure_stops_decoding)
{
	struct raw r;

	raw_load(&r, &corpora[2], 4);
	for (unsigned jobs = 1; jobs <= 3; jobs++) {
		struct evlist got = { .fail_after = 100000 };
		struct rv_pt_stats st;
		struct rv_error err = { 0 };

		r.options.jobs = jobs;
		r.options.chunk_bytes = 16384;
		int ret = rv_pt_decode(r.trace, r.size, &r.options, record_sink, &got, &st, &err);

		cr_assert_eq(ret, -EIO, "%u jobs: %d", jobs, ret);
		cr_assert_str_eq(err.message, "the test's sink gives up");
		cr_assert_eq(got.n, 100000 - 1);
		evlist_free(&got);
	}
	raw_free(&r);
}

struct resolve_ctx {
	struct pt_image *image;
	size_t calls;
	bool fail;
	pthread_mutex_t lock;
};

static int test_resolve(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid,
			struct pt_image **image, uint64_t *until, struct rv_error *err)
{
	struct resolve_ctx *c = ctx;

	(void)time;
	(void)until;
	pthread_mutex_lock(&c->lock);
	c->calls++;
	pthread_mutex_unlock(&c->lock);
	if (c->fail)
		return rv_error_set(err, ENOENT, "no such task");
	*pid = 42;
	*tid = 43;
	*image = c->image;
	return 0;
}

Test(pt_decoder, resolve_names_the_task_and_image)
{
	struct raw r;
	struct resolve_ctx ctx = { .lock = PTHREAD_MUTEX_INITIALIZER };

	raw_load(&r, &corpora[0], 1);
	ctx.image = r.image;
	r.options.image = NULL;
	r.options.resolve = test_resolve;
	r.options.resolve_ctx = &ctx;
	r.options.populate = NULL; /* threads share the sections (rv_pt_sections_copy) */
	for (unsigned jobs = 1; jobs <= 2; jobs++) {
		struct evlist got = { 0 };
		struct rv_pt_stats st;

		ctx.calls = 0;
		decode_raw(&r, jobs, 2048, &got, &st);
		cr_assert_eq(st.insns, corpora[0].insns);
		cr_assert_gt(ctx.calls, st.chunks, "at each chunk and each trace start");
		for (size_t i = 0; i < got.n; i++)
			cr_assert(got.v[i].pid == 42 && got.v[i].tid == 43);
		evlist_free(&got);
	}

	struct evlist got = { 0 };
	struct rv_pt_stats st;
	struct rv_error err = { 0 };

	ctx.fail = true;
	r.options.jobs = 2;
	cr_assert_eq(rv_pt_decode(r.trace, r.size, &r.options, record_sink, &got, &st, &err),
		     -ENOENT);
	cr_assert_str_eq(err.message, "no such task");
	evlist_free(&got);
	raw_free(&r);
}

/* A TSC packet (19, then 7 bytes of time) after every PSB of r's trace, its
 * time 1000 times the PSB's number: the corpus traces have no timing. */
static void add_psb_tsc(struct raw *r)
{
	size_t n = 0, used = 0;
	uint8_t *out;

	for (size_t at = 0; (at = rv_pt_next_psb_pattern(r->trace, r->size, at)) < r->size;
	     at += RV_PT_PSB_BYTES)
		n++;
	out = malloc(r->size + 8 * n);
	cr_assert_not_null(out);
	n = 0;
	for (size_t from = 0; from < r->size;) {
		size_t at = rv_pt_next_psb_pattern(r->trace, r->size, from);
		size_t upto = at < r->size ? at + RV_PT_PSB_BYTES : r->size;
		uint64_t tsc = 1000 * ++n;

		memcpy(out + used, r->trace + from, upto - from);
		used += upto - from;
		from = upto;
		if (at < r->size) {
			out[used++] = 0x19;
			for (int i = 0; i < 7; i++)
				out[used++] = (uint8_t)(tsc >> (8 * i));
		}
	}
	free(r->trace);
	r->trace = out;
	r->size = used;
}

/* A task for every decoder time: tid is the time's low bits, until the next
 * one. */
static int task_per_time(void *ctx, uint64_t time, uint32_t *pid, uint32_t *tid,
			 struct pt_image **image, uint64_t *until, struct rv_error *err)
{
	const struct raw *r = ctx;

	(void)err;
	*pid = 42;
	*tid = (uint32_t)time;
	*image = r->image;
	*until = time + 1;
	return 0;
}

/* With a new task at every PSB+ (each has a TSC), a branch that the walk
 * resolves at a chunk's seam (it goes to the next PSB+'s address) comes
 * after that PSB+'s time in the whole buffer's walk: it is on the next
 * task in every chunking too, with either walker. */
Test(pt_decoder, seam_branch_on_the_next_psbs_task)
{
	struct raw r;
	struct evlist ref = { 0 };
	struct rv_pt_stats st;
	size_t tasks = 0;

	raw_load(&r, &corpora[2], 1);
	add_psb_tsc(&r);
	r.options.resolve = task_per_time;
	r.options.resolve_ctx = &r;
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &st);
	cr_assert_eq(st.insns, corpora[2].insns);
	for (size_t i = 1; i < ref.n; i++)
		tasks += ref.v[i].tid != ref.v[i - 1].tid;
	cr_assert_gt(tasks, 300, "a task per PSB+");
	assert_every_chunking(&r, &ref, &st, "a task per PSB+");
	evlist_free(&ref);
	raw_free(&r);
}

/* ---- made-up traces ---- */

#define MADE_BASE 0x400000

/* r set up as raw_load does, but over code (at MADE_BASE, written to a file
 * in dir) and the trace libipt's encoder makes of pkts. Times are TSC
 * ticks, and the nominal frequency makes both walkers' tick events on (as
 * for a capture with timing, pt_decoder.c). */
static void made_load(struct raw *r, const char *dir, const uint8_t *code, size_t code_size,
		      struct pt_packet *pkts, size_t n)
{
	struct pt_config c;
	struct pt_encoder *enc;
	uint64_t end = 0;
	int isid;

	memset(r, 0, sizeof(*r));
	snprintf(r->image_path, sizeof(r->image_path), "%s/code.bin", dir);
	write_file(r->image_path, code, code_size);
	r->base = MADE_BASE;
	r->size = 4096;
	r->trace = calloc(1, r->size);
	cr_assert_not_null(r->trace);
	pt_config_init(&c);
	c.begin = r->trace;
	c.end = r->trace + r->size;
	enc = pt_alloc_encoder(&c);
	cr_assert_not_null(enc);
	for (size_t i = 0; i < n; i++)
		cr_assert_geq(pt_enc_next(enc, &pkts[i]), 0, "packet %zu", i);
	cr_assert_geq(pt_enc_get_offset(enc, &end), 0);
	pt_free_encoder(enc);
	r->size = (size_t)end;

	r->iscache = pt_iscache_alloc("made");
	r->image = rv_pt_image_alloc("made");
	cr_assert(r->iscache && r->image);
	isid = rv_pt_sections_add_file(r->iscache, r->image_path, 0, UINT64_MAX, r->base);
	cr_assert_geq(isid, 0, "cannot add %s", r->image_path);
	cr_assert_geq(rv_pt_sections_add_cached(r->image, r->iscache, isid), 0);

	struct rv_pt_decode_options *o = &r->options;

	pt_config_init(&o->config);
	o->config.nom_freq = 4;
	o->image = r->image;
	o->iscache = r->iscache;
	o->populate = raw_populate;
	o->populate_ctx = r;
	o->pid = 7;
	o->tid = 8;
}

static struct pt_packet pkt_tnt(uint8_t bits, uint64_t payload)
{
	return (struct pt_packet){ .type = ppt_tnt_64,
				   .payload.tnt = { .bit_size = bits, .payload = payload } };
}

static struct pt_packet pkt_tsc(uint64_t tsc)
{
	return (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc };
}

static struct pt_packet pkt_mode_64(void)
{
	return (struct pt_packet){
		.type = ppt_mode, .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csl = 1 } }
	};
}

static struct pt_packet pkt_ip(enum pt_packet_type type, uint64_t ip)
{
	return (struct pt_packet){ .type = type,
				   .payload.ip = { .ipc = pt_ipc_sext_48, .ip = ip } };
}

/* The time after an event in process: a MODE.exec binds to the next TIP,
 * which the walkers read while the event is in process (libipt's tick
 * makes no tick event then), and the time moves between the MODE.exec (the
 * event's time) and the TIP, and again before a TNT. The TNT read next
 * makes a tick (its time is not the last event's): also the fast walker's
 * refill of its TNT bits, and the bits of that TNT left when a call stops
 * the walk are taken in the next walk. Both walkers alike, times included. */
Test(pt_decoder, made_time_after_an_event_in_process)
{
	/* four jz to the next instruction, a call over three nops, four more
	 * jz, jmp *%rax: eight TNT bits and a TIP a round */
	static const uint8_t code[] = { 0x74, 0, 0x74, 0, 0x74, 0,    0x74, 0,	  0xe8,
					3,    0, 0,    0, 0x90, 0x90, 0x90, 0x74, 0,
					0x74, 0, 0x74, 0, 0x74, 0,    0xff, 0xe0 };
	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		pkt_tsc(1000),
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_tnt(8, 0xa5),
		pkt_tsc(2000),
		pkt_mode_64(), /* binds to the TIP after the TSC */
		pkt_tsc(3000),
		pkt_ip(ppt_tip, MADE_BASE),
		pkt_tnt(8, 0x5a), /* a tick at 3000, then half of it after the call */
		pkt_ip(ppt_tip, MADE_BASE),
		pkt_tsc(4000),
		pkt_tnt(8, 0x33),
		pkt_tsc(5000),
		pkt_ip(ppt_tip, MADE_BASE),
		{ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
	};
	char *dir = new_temp_dir("rv-made");
	struct raw r;
	struct evlist ref = { 0 }, got = { 0 };
	struct rv_pt_stats ref_stats, got_stats;

	made_load(&r, dir, code, sizeof(code), pkts, sizeof(pkts) / sizeof(pkts[0]));
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &ref_stats);
	cr_assert_eq(ref_stats.errors, 0);
	cr_assert_eq(ref_stats.insns, 31);
	/* the second round's call comes at the tick of its first TNT bit */
	cr_assert_geq(ref.n, 4);
	cr_assert_eq(ref.v[3].kind, RV_BRANCH_CALL);
	cr_assert_eq(ref.v[3].time, 3000);
	r.options.decoder = RV_PT_DECODER_FAST;
	decode_raw(&r, 1, SIZE_MAX, &got, &got_stats);
	assert_same_events(&ref, &got, "an event in process, fast walker");
	assert_same_stats(&ref_stats, &got_stats, "an event in process, fast walker");
	cr_assert_eq(got_stats.fast_bytes, got_stats.bytes, "the fast walker took it all");
	evlist_free(&ref);
	evlist_free(&got);
	raw_free(&r);
	free_temp_dir(dir);
}

/* The last TNT bit of a packet with an asynchronous branch (a FUP) bound
 * to the TIP after it: libipt reports the event once that bit is used,
 * and so must the fast walker's loop, which answers a last bit itself
 * when nothing follows it but a TNT or a TIP no event waits for. */
Test(pt_decoder, made_last_bit_before_an_asynchronous_branch)
{
	/* four jz over a two-byte nop, jmp *%rax */
	static const uint8_t code[] = { 0x74, 2,    0x66, 0x90, 0x74, 2,    0x66, 0x90, 0x74,
					2,    0x66, 0x90, 0x74, 2,    0x66, 0x90, 0xff, 0xe0 };
	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		{ .type = ppt_tnt_8, .payload.tnt = { .bit_size = 4, .payload = 0x5 } },
		pkt_ip(ppt_fup, MADE_BASE + 16), /* an interrupt before the jmp ... */
		pkt_ip(ppt_tip, MADE_BASE),	 /* ... goes back to the start */
		pkt_tnt(4, 0xa),
		pkt_ip(ppt_tip, MADE_BASE), /* the jmp */
		{ .type = ppt_tnt_8, .payload.tnt = { .bit_size = 4, .payload = 0x3 } },
		pkt_ip(ppt_tip, MADE_BASE),
		{ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
	};
	char *dir = new_temp_dir("rv-made");
	struct raw r;
	struct evlist ref = { 0 }, got = { 0 };
	struct rv_pt_stats ref_stats, got_stats;

	made_load(&r, dir, code, sizeof(code), pkts, sizeof(pkts) / sizeof(pkts[0]));
	r.options.config.nom_freq = 0; /* no time: no tick events */
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &ref_stats);
	cr_assert_eq(ref_stats.errors, 0);
	cr_assert_eq(ref_stats.interrupts, 1);
	r.options.decoder = RV_PT_DECODER_FAST;
	decode_raw(&r, 1, SIZE_MAX, &got, &got_stats);
	assert_same_events(&ref, &got, "the last bit before an interrupt, fast walker");
	assert_same_stats(&ref_stats, &got_stats, "the last bit before an interrupt, fast walker");
	cr_assert_eq(got_stats.fast_bytes, got_stats.bytes, "the fast walker took it all");
	evlist_free(&ref);
	evlist_free(&got);
	raw_free(&r);
	free_temp_dir(dir);
}

static struct pt_packet pkt_mode_32(void)
{
	return (struct pt_packet){
		.type = ppt_mode, .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csd = 1 } }
	};
}

/* The fast walker's decode of r against libipt's at chunk_bytes, events
 * and counts; and how many chunks it handed to libipt's decoder. */
static uint64_t assert_fast_as_libipt(struct raw *r, size_t chunk_bytes, const char *what)
{
	struct evlist ref = { 0 }, got = { 0 };
	struct rv_pt_stats ref_stats, got_stats;

	r->options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(r, 1, chunk_bytes, &ref, &ref_stats);
	cr_assert_eq(ref_stats.errors, 0, "%s", what);
	r->options.decoder = RV_PT_DECODER_FAST;
	decode_raw(r, 1, chunk_bytes, &got, &got_stats);
	assert_same_events(&ref, &got, what);
	assert_same_stats(&ref_stats, &got_stats, what);
	evlist_free(&ref);
	evlist_free(&got);
	return got_stats.handoffs;
}

/* Code that leaves 64-bit mode and comes back to a block the fast walker's
 * cache holds from 64-bit mode, where the bytes are other instructions:
 * in the middle of a chunk (a MODE.exec), and at the next chunk's PSB+.
 * The walker's blocks are 64-bit code (its key says the mode: pt_fast.c's
 * set_key) and it hands 32-bit code to libipt's decoder. Both walkers
 * alike, one chunk or a chunk at every PSB. */
Test(pt_decoder, made_block_cached_in_64_bit_mode_not_used_in_32)
{
	/* 64-bit: jmp *%rax; 32-bit: dec %eax, jmp *%eax */
	static const uint8_t code[] = { 0x48, 0xff, 0xe0 };
	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_ip(ppt_tip, MADE_BASE), /* the block is cached ... */
		pkt_ip(ppt_tip, MADE_BASE), /* ... and links to itself */
		pkt_mode_32(),		    /* binds to the TIP after it */
		pkt_ip(ppt_tip, MADE_BASE),
		pkt_ip(ppt_tip, MADE_BASE),
		{ .type = ppt_psb },
		pkt_mode_32(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_ip(ppt_tip, MADE_BASE),
		{ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
	};
	char *dir = new_temp_dir("rv-made");
	struct raw r;
	struct evlist ref = { 0 };
	struct rv_pt_stats st;
	size_t last = 0;

	made_load(&r, dir, code, sizeof(code), pkts, sizeof(pkts) / sizeof(pkts[0]));
	r.options.config.nom_freq = 0;
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &ref, &st);
	/* the 32-bit code's jmp ends the trace (libipt 2.0's own block cache
	 * gives the rounds after the MODE.exec as 64-bit blocks still; the
	 * disable's walk, an instruction at a time, decodes 32-bit code) */
	while (last < ref.n && !(ref.v[last].flags & RV_BRANCH_TRACE_END))
		last++;
	cr_assert_lt(last, ref.n);
	cr_assert_eq(ref.v[last].from, MADE_BASE + 1);
	evlist_free(&ref);
	cr_assert_gt(assert_fast_as_libipt(&r, SIZE_MAX, "32-bit code after 64-bit, fast walker"),
		     0, "the 32-bit code is libipt's");
	cr_assert_gt(assert_fast_as_libipt(&r, RV_PT_PSB_BYTES + 1,
					   "32-bit code after 64-bit, fast walker, a chunk at "
					   "every PSB"),
		     0, "the 32-bit code is libipt's");
	raw_free(&r);
	free_temp_dir(dir);
}

/* The tick a block ends with, which the fast walker takes with the block
 * (pt_fast.h's struct rv_fast_tick), at the ends of chunks, where the
 * status after it says whether the trace has ended: the walker's tail walk
 * looks for the next chunk's first address from there on, and stops at it.
 * - chunk 1 ends with a tick and, behind it, tracing stopping at an
 *   address past the next chunk's first (the tick is not taken);
 * - chunk 2 has a tick in its middle (the trace goes on: no tail walk
 *   there, which would stop at chunk 3's first address), and one with its
 *   end; chunk 3 begins inside the first block after that one, where the
 *   tail walk stops.
 * Both walkers alike, times included, the fast walker taking it all. */
Test(pt_decoder, made_tick_taken_with_a_block_at_chunk_ends)
{
	/* two nops, jmp *%rax */
	static const uint8_t code[] = { 0x90, 0x90, 0xff, 0xe0 };
	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		pkt_tsc(1000),
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_tsc(2000),
		pkt_ip(ppt_tip, MADE_BASE),	    /* a tick at 2000 ... */
		pkt_ip(ppt_tip_pgd, MADE_BASE + 1), /* ... tracing stops after a nop */
		{ .type = ppt_psb },
		pkt_tsc(3000),
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_tsc(4000),
		pkt_ip(ppt_tip, MADE_BASE), /* a tick, the trace goes on */
		pkt_tsc(5000),
		pkt_ip(ppt_tip, MADE_BASE), /* a tick, the chunk's end */
		{ .type = ppt_psb },
		pkt_tsc(6000),
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE + 1),
		{ .type = ppt_psbend },
		pkt_tsc(7000),
		pkt_ip(ppt_tip, MADE_BASE),
		{ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
	};
	char *dir = new_temp_dir("rv-made");
	struct raw r;
	struct evlist ref = { 0 };
	struct rv_pt_stats st;

	made_load(&r, dir, code, sizeof(code), pkts, sizeof(pkts) / sizeof(pkts[0]));
	/* a chunk at every PSB (in one chunk, a PSB+ with an address after
	 * tracing stopped is a decode error) */
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, RV_PT_PSB_BYTES + 1, &ref, &st);
	cr_assert_eq(st.chunks, 3);
	evlist_free(&ref);
	cr_assert_eq(
		assert_fast_as_libipt(&r, RV_PT_PSB_BYTES + 1, "ticks at chunk ends, fast walker"),
		0, "the fast walker took it all");
	raw_free(&r);
	free_temp_dir(dir);
}

/* The fast walker (decode/pt_fast.h) and libipt's block decoder driven call
 * for call over r's trace, as pt_walk.c drives them, every answer
 * compared: statuses, blocks (over code whose blocks both cut at the same
 * places: no conditional branch) and events. A tick the fast
 * walker takes with a block (struct rv_fast_tick) is held to libipt's
 * next event, which must be that tick (its time), and to the status
 * after it. Returns the ticks taken so. */
static unsigned fast_lockstep(struct raw *r)
{
	struct pt_config c = r->options.config;
	struct pt_block_decoder *lib;
	struct rv_fast_cache *cache = rv_fast_cache_new();
	struct rv_fast *f;
	static const struct rv_fast_drop keep = { .all = false };
	uint64_t dropped = 0;
	unsigned taken = 0;
	int a, b;

	c.begin = r->trace;
	c.end = r->trace + r->size;
	c.flags.variant.block.end_on_call = 1;
	c.flags.variant.block.end_on_jump = 1;
	c.flags.variant.block.enable_tick_events = 1;
	lib = pt_blk_alloc_decoder(&c);
	f = cache ? rv_fast_alloc(&c, cache) : NULL;
	cr_assert(lib && f);
	cr_assert_geq(pt_blk_set_image(lib, r->image), 0);
	a = pt_blk_sync_set(lib, 0);
	b = rv_fast_sync_set(f, 0);
	cr_assert_geq(rv_fast_set_image(f, r->image), 0);
	for (unsigned step = 0;; step++) {
		struct pt_block bl, bf;
		struct rv_fast_tick tick = { .taken = false };

		cr_assert_eq(b, a, "step %u: status %d, libipt's %d", step, b, a);
		if (a < 0)
			break;
		while (a & pts_event_pending) {
			struct pt_event el, ef;

			a = pt_blk_event(lib, &el, sizeof(el));
			b = rv_fast_event(f, &ef);
			cr_assert_eq(b, a, "step %u: event status %d, libipt's %d", step, b, a);
			cr_assert_eq(ef.type, el.type, "step %u: event %d, libipt's %d", step,
				     ef.type, el.type);
			cr_assert_eq(ef.tsc, el.tsc,
				     "step %u: event at %" PRIu64 ", libipt's at %" PRIu64, step,
				     ef.tsc, el.tsc);
			if (a < 0)
				break;
		}
		if (a < 0)
			break;
		a = pt_blk_next(lib, &bl, sizeof(bl));
		b = rv_fast_next(f, &bf, &keep, &dropped, &tick);
		cr_assert_neq(b, RV_FAST_HANDOFF, "step %u: handed back", step);
		cr_assert_eq(b, a, "step %u: block status %d, libipt's %d", step, b, a);
		cr_assert(bf.ip == bl.ip && bf.ninsn == bl.ninsn && bf.end_ip == bl.end_ip,
			  "step %u: block %#" PRIx64 "-%#" PRIx64 " (%u), libipt's %#" PRIx64
			  "-%#" PRIx64 " (%u)",
			  step, bf.ip, bf.end_ip, bf.ninsn, bl.ip, bl.end_ip, bl.ninsn);
		if (tick.taken) {
			struct pt_event el;

			cr_assert(a >= 0 && (a & pts_event_pending), "step %u: a tick taken", step);
			a = pt_blk_event(lib, &el, sizeof(el));
			cr_assert_eq(el.type, ptev_tick,
				     "step %u: the tick taken, libipt's event %d", step, el.type);
			cr_assert(tick.has_tsc == el.has_tsc && tick.tsc == el.tsc,
				  "step %u: the tick taken at %" PRIu64 ", libipt's at %" PRIu64,
				  step, tick.tsc, el.tsc);
			b = tick.status;
			taken++;
		}
	}
	cr_assert_eq(a, -pte_eos);
	rv_fast_free(f);
	rv_fast_cache_free(cache);
	pt_blk_free_decoder(lib);
	return taken;
}

/* The tick the fast walker takes with a block, call for call as libipt's
 * block decoder gives it: at a TIP with more trace behind it, at the end
 * of the trace, and not at one with an event behind it (tracing stops
 * after a nop). */
Test(pt_decoder, made_tick_taken_with_a_block_call_for_call)
{
	/* two nops, jmp *%rax */
	static const uint8_t code[] = { 0x90, 0x90, 0xff, 0xe0 };
	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		pkt_tsc(1000),
		pkt_mode_64(),
		pkt_ip(ppt_fup, MADE_BASE),
		{ .type = ppt_psbend },
		pkt_tsc(2000),
		pkt_ip(ppt_tip, MADE_BASE), /* a tick, the trace goes on */
		pkt_tsc(3000),
		pkt_ip(ppt_tip, MADE_BASE),	    /* a tick ... */
		pkt_ip(ppt_tip_pgd, MADE_BASE + 1), /* ... and an event behind it */
		pkt_tsc(4000),
		pkt_ip(ppt_tip_pge, MADE_BASE),
		pkt_tsc(5000),
		pkt_ip(ppt_tip, MADE_BASE), /* a tick, the end of the trace */
	};
	char *dir = new_temp_dir("rv-made");
	struct raw r;

	made_load(&r, dir, code, sizeof(code), pkts, sizeof(pkts) / sizeof(pkts[0]));
	cr_assert_eq(fast_lockstep(&r), 2);
	raw_free(&r);
	free_temp_dir(dir);
}

static int failing_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			    struct pt_image_section_cache *iscache, struct rv_error *err)
{
	(void)ctx;
	(void)image;
	(void)copy;
	(void)iscache;
	return rv_error_set(err, EACCES, "the test's files are gone");
}

Test(pt_decoder, populate_failure_stops_decoding)
{
	struct raw r;
	struct evlist got = { 0 };
	struct rv_pt_stats st;
	struct rv_error err = { 0 };

	raw_load(&r, &corpora[2], 1);
	r.options.populate = failing_populate;
	r.options.jobs = 2;
	cr_assert_eq(rv_pt_decode(r.trace, r.size, &r.options, record_sink, &got, &st, &err),
		     -EACCES);
	cr_assert_str_eq(err.message, "the test's files are gone");
	r.options.jobs = 1; /* one thread decodes with the image itself */
	evlist_free(&got);
	cr_assert_eq(rv_pt_decode(r.trace, r.size, &r.options, record_sink, &got, &st, &err), 0);
	cr_assert_eq(st.insns, corpora[2].insns);
	evlist_free(&got);
	raw_free(&r);
}

/* Both walkers stop once they have run max_insns instructions, each where
 * its walk noticed (a libipt block, or a run of the fast walker's, past the
 * limit): the events up to there are the first of the whole trace's. */
Test(pt_decoder, max_insns_stops_early)
{
	struct raw r;
	struct evlist all = { 0 };
	struct rv_pt_stats all_stats;
	const uint64_t max_insns = 100000;

	raw_load(&r, &corpora[2], 1);
	r.options.decoder = RV_PT_DECODER_LIBIPT;
	decode_raw(&r, 1, SIZE_MAX, &all, &all_stats);
	r.options.max_insns = max_insns;
	for (unsigned k = 0; k < 2; k++) {
		struct evlist got = { 0 };
		struct rv_pt_stats st;
		const char *what = k ? "fast walker" : "libipt";

		r.options.decoder = k ? RV_PT_DECODER_FAST : RV_PT_DECODER_LIBIPT;
		decode_raw(&r, 2, 4096, &got, &st);
		cr_assert_geq(st.insns, max_insns, "%s: %" PRIu64 " instructions", what, st.insns);
		cr_assert_lt(st.insns, 2 * max_insns, "%s: %" PRIu64 " instructions", what,
			     st.insns);
		cr_assert_eq(st.errors, 0, "%s", what);
		cr_assert_gt(got.n, 0, "%s", what);
		cr_assert_lt(got.n, all.n, "%s", what);

		struct evlist head = all;

		head.n = got.n; /* the whole trace's first events */
		assert_same_events(&head, &got, what);
		evlist_free(&got);
	}
	evlist_free(&all);
	raw_free(&r);
}

/* ---- the small functions ---- */

Test(pt_decoder, cpu_parse)
{
	struct pt_config c;
	struct rv_error err = { 0 };

	pt_config_init(&c);
	cr_assert_eq(rv_pt_cpu_parse("6/78/3", &c, &err), 0, "%s", err.message);
	cr_assert_eq(c.cpu.vendor, pcv_intel);
	cr_assert_eq(c.cpu.family, 6);
	cr_assert_eq(c.cpu.model, 78);
	cr_assert_eq(c.cpu.stepping, 3);
	cr_assert(c.errata.skl014 && c.errata.bdm70, "Skylake's errata are applied");

	pt_config_init(&c);
	cr_assert_eq(rv_pt_cpu_parse("GenuineIntel,6,78,3", &c, &err), 0, "%s", err.message);
	cr_assert(c.cpu.family == 6 && c.cpu.model == 78 && c.cpu.stepping == 3);
	cr_assert(c.errata.skl014);

	pt_config_init(&c);
	cr_assert_eq(rv_pt_cpu_parse("0x6/0x8c/0x1", &c, &err), 0, "%s", err.message);
	cr_assert(c.cpu.family == 6 && c.cpu.model == 140 && c.cpu.stepping == 1);

	const char *bad[] = { "",
			      "6/78",
			      "6/78/3/1",
			      "six/78/3",
			      "6/300/1",
			      "AuthenticAMD,23,1,2",
			      "GenuineIntel,6,78",
			      "6/78/3x" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		cr_assert_lt(rv_pt_cpu_parse(bad[i], &c, &err), 0, "'%s' was accepted", bad[i]);
		cr_assert_neq(err.message[0], '\0');
	}
}

Test(pt_decoder, strerror_is_words)
{
	cr_assert_not_null(strstr(rv_pt_strerror(-pte_nomap), "no code mapped"));
	cr_assert_str_eq(rv_pt_strerror(-pte_nomap), rv_pt_strerror(pte_nomap));
	cr_assert_not_null(strstr(rv_pt_strerror(-pte_overflow), "overflow"));
	for (int code = 0; code <= pte_bad_cpu; code++) {
		const char *s = rv_pt_strerror(-code);

		cr_assert(s && *s, "no text for %d", code);
	}
	cr_assert_not_null(rv_pt_strerror(-1000));
}

Test(pt_decoder, stats_merge)
{
	struct rv_pt_stats a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.insns = 10;
	a.calls = 1;
	a.first_time = 500;
	a.last_time = 600;
	a.nr_sites = RV_PT_MAX_ERROR_SITES - 1;
	a.errors = RV_PT_MAX_ERROR_SITES - 1;
	b.insns = 5;
	b.calls = 2;
	b.errors = 2;
	b.nomap = 1;
	b.skipped_bytes = 9;
	b.first_time = 400;
	b.last_time = 550;
	b.nr_sites = 2;
	b.sites[0].offset = 77;
	b.sites[1].offset = 78;
	rv_pt_stats_merge(&a, &b);
	cr_assert_eq(a.insns, 15);
	cr_assert_eq(a.calls, 3);
	cr_assert_eq(a.errors, RV_PT_MAX_ERROR_SITES + 1);
	cr_assert_eq(a.nomap, 1);
	cr_assert_eq(a.skipped_bytes, 9);
	cr_assert_eq(a.first_time, 400);
	cr_assert_eq(a.last_time, 600);
	cr_assert_eq(a.nr_sites, RV_PT_MAX_ERROR_SITES, "sites stop at the limit");
	cr_assert_eq(a.sites[RV_PT_MAX_ERROR_SITES - 1].offset, 77);

	memset(&a, 0, sizeof(a));
	rv_pt_stats_merge(&a, &b);
	cr_assert_eq(a.first_time, 400, "an empty side has no first time");
}

/* Packets of a stream libipt's encoder wrote: exactly those, also with
 * garbage in front (skipped up to the PSB). */
Test(pt_decoder, count_packets)
{
	uint8_t buf[4096];
	struct pt_config c;
	struct pt_encoder *enc;
	uint64_t written = 0;
	size_t lead = 100;

	memset(buf, 0x0f, sizeof(buf)); /* garbage before the stream */
	pt_config_init(&c);
	c.begin = buf + lead;
	c.end = buf + sizeof(buf);
	enc = pt_alloc_encoder(&c);
	cr_assert_not_null(enc);

	struct pt_packet pkts[] = {
		{ .type = ppt_psb },
		{ .type = ppt_tsc, .payload.tsc.tsc = 12345 },
		{ .type = ppt_mode,
		  .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csl = 1 } } },
		{ .type = ppt_fup, .payload.ip = { .ipc = pt_ipc_sext_48, .ip = 0x401000 } },
		{ .type = ppt_psbend },
		{ .type = ppt_tnt_8, .payload.tnt = { .bit_size = 3, .payload = 5 } },
		{ .type = ppt_tip, .payload.ip = { .ipc = pt_ipc_update_16, .ip = 0x1234 } },
		{ .type = ppt_pad },
		{ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } },
	};
	for (size_t i = 0; i < sizeof(pkts) / sizeof(pkts[0]); i++) {
		pkts[i].size = 0;
		cr_assert_geq(pt_enc_next(enc, &pkts[i]), 0, "packet %zu", i);
		written++;
	}
	uint64_t end = 0;

	cr_assert_geq(pt_enc_get_offset(enc, &end), 0);
	pt_free_encoder(enc);
	cr_assert_eq(rv_pt_count_packets(buf, lead + end, NULL), written);
	cr_assert_eq(rv_pt_count_packets(buf, lead, NULL), 0, "garbage only");
	cr_assert_eq(rv_pt_count_packets(NULL, 0, NULL), 0);
}

/* The first PSB pattern at or after from, byte by byte: the reference. */
static size_t psb_by_bytes(const uint8_t *buf, size_t size, size_t from)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

	for (size_t at = from; at < size && size - at >= sizeof(psb); at++)
		if (!memcmp(buf + at, psb, sizeof(psb)))
			return at;
	return size;
}

/* rv_pt_next_psb_pattern looks at one word in eight: PSBs at every offset
 * and every start of the search, runs of the pattern longer and shorter
 * than a PSB (odd and even), and PSBs cut by the buffer's end. */
Test(pt_decoder, psb_pattern_search_at_every_alignment)
{
	uint8_t buf[96];
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (unsigned round = 0; round < 4000; round++) {
		size_t size = 16 + round % 80;

		for (size_t i = 0; i < size; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			/* mostly 02 and 82, so that partial patterns abound */
			buf[i] = (seed >> 60) < 12 ? ((seed >> 56) & 1 ? 0x82 : 0x02)
						   : (uint8_t)(seed >> 33);
		}
		if (round % 3 == 0) {
			size_t at = (seed >> 20) % size, len = 12 + (seed >> 40) % 24;

			for (size_t i = 0; i < len && at + i < size; i++)
				buf[at + i] = (i + (round & 1)) % 2 ? 0x82 : 0x02;
		}
		for (size_t from = 0; from <= size; from++)
			cr_assert_eq(rv_pt_next_psb_pattern(buf, size, from),
				     psb_by_bytes(buf, size, from), "round %u, size %zu, from %zu",
				     round, size, from);
	}
}

/* ---- the sink's batch form ---- */

/* Every event as the sink took it, one by one or in batches, and what the
 * batches said of themselves. */
struct full_log {
	struct rv_event *v;
	size_t n, cap;
	size_t batches, plain; /* plain: branches only, in time order */
	size_t with_errors, unordered;
	size_t zero_then_two; /* in order: a 0 time, then two others */
	size_t tasks;	      /* batches of another task than the one before */
	uint32_t last_tid;
};

static int full_sink(void *ctx, const struct rv_event *e, struct rv_error *err)
{
	struct full_log *l = ctx;

	(void)err;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		cr_assert_not_null(l->v);
	}
	l->v[l->n++] = *e;
	return 0;
}

/* Each batch's claims (pt_decoder.h) checked against its events. */
static int full_batch(void *ctx, const struct rv_pt_batch *b, struct rv_error *err)
{
	struct full_log *l = ctx;
	const struct rv_event *e = b->events;
	size_t times = 0;

	cr_assert_gt(b->n, 0, "an empty batch");
	l->batches++;
	l->plain += b->branches_only && b->ordered;
	l->with_errors += !b->branches_only;
	l->unordered += !b->ordered;
	for (size_t i = 0; i < b->n; i++) {
		cr_assert(e[i].pid == e[0].pid && e[i].tid == e[0].tid, "two tasks in a batch");
		cr_assert(!b->branches_only || e[i].kind == RV_EVENT_BRANCH);
		cr_assert(!b->ordered || !i || e[i].time >= e[i - 1].time, "not in time order");
		if (e[i].kind == RV_EVENT_BRANCH)
			cr_assert_eq((e[i].branch.from.ip | e[i].branch.to.ip) & ~b->ip_bits, 0,
				     "an address above ip_bits");
		times += i && e[i].time != e[i - 1].time;
		full_sink(ctx, &e[i], err);
	}
	l->zero_then_two += b->ordered && !e[0].time && times >= 2;
	l->tasks += e[0].tid != l->last_tid;
	l->last_tid = e[0].tid;
	return 0;
}

static bool same_full_end(const struct rv_branch_end *a, const struct rv_branch_end *b)
{
	return a->ip == b->ip && a->sym == b->sym && a->sym_start == b->sym_start &&
	       a->dso == b->dso;
}

/* Field by field (padding is whatever the producer's memory held): every
 * field an event of its kind has, the branch ends' names (none) included. */
static bool same_full_event(const struct rv_event *a, const struct rv_event *b)
{
	if (a->kind != b->kind || a->pid != b->pid || a->tid != b->tid || a->time != b->time)
		return false;
	if (a->kind == RV_EVENT_BRANCH)
		return a->branch.kind == b->branch.kind && a->branch.flags == b->branch.flags &&
		       same_full_end(&a->branch.from, &b->branch.from) &&
		       same_full_end(&a->branch.to, &b->branch.to);
	return a->error.offset == b->error.offset && a->error.ip == b->error.ip &&
	       a->error.overflow == b->error.overflow &&
	       !strcmp(a->error.message, b->error.message);
}

/* A TSC packet (tsc 1000, 2000, ...) before every `every`-th packet from
 * the `from`-th on, outside PSB+ headers: times that change between PSBs,
 * and none (time 0) before the first. */
static void add_tsc_every(struct raw *r, size_t every, size_t from)
{
	struct pt_config c = r->options.config;
	struct pt_packet_decoder *d;
	struct pt_packet pkt;
	uint64_t *at = NULL, offset;
	size_t n = 0, cap = 0, k = 0, used = 0, done = 0;
	bool in_psb = false;
	uint8_t *out;

	c.begin = r->trace;
	c.end = r->trace + r->size;
	d = pt_pkt_alloc_decoder(&c);
	cr_assert_not_null(d);
	cr_assert_geq(pt_pkt_sync_forward(d), 0);
	for (;;) {
		int status = pt_pkt_get_offset(d, &offset);

		if (status >= 0)
			status = pt_pkt_next(d, &pkt, sizeof(pkt));
		if (status == -pte_eos)
			break;
		if (status < 0) {
			if (pt_pkt_sync_forward(d) < 0)
				break;
			in_psb = false;
			continue;
		}
		if (pkt.type == ppt_psb)
			in_psb = true;
		if (!in_psb && k++ >= from && k % every == 0) {
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				at = realloc(at, cap * sizeof(*at));
				cr_assert_not_null(at);
			}
			at[n++] = offset;
		}
		if (pkt.type == ppt_psbend)
			in_psb = false;
	}
	pt_pkt_free_decoder(d);
	out = malloc(r->size + 8 * n);
	cr_assert_not_null(out);
	for (size_t i = 0; i <= n; i++) {
		size_t upto = i < n ? (size_t)at[i] : r->size;
		uint64_t tsc = 1000 * (i + 1);

		memcpy(out + used, r->trace + done, upto - done);
		used += upto - done;
		done = upto;
		if (i == n)
			break;
		out[used++] = 0x19;
		for (int b = 0; b < 7; b++)
			out[used++] = (uint8_t)(tsc >> (8 * b));
	}
	free(at);
	free(r->trace);
	r->trace = out;
	r->size = used;
}

/* r decoded into the sink one by one and into its batch form, for one and
 * two threads and two chunk sizes: the same events, field by field, and the
 * same stats; each batch's claims hold. *out: what the batches said (of
 * the last decode). */
static void assert_batches_one_by_one(struct raw *r, const char *what, struct full_log *out)
{
	static const size_t chunks[] = { 0, 16384 };

	for (unsigned jobs = 1; jobs <= 2; jobs++) {
		for (size_t c = 0; c < 2; c++) {
			struct full_log one = { 0 }, many = { 0 };
			struct rv_pt_stats s1, s2;
			struct rv_error err = { 0 };

			r->options.jobs = jobs;
			r->options.chunk_bytes = chunks[c];
			r->options.sink_batch = NULL;
			cr_assert_eq(rv_pt_decode(r->trace, r->size, &r->options, full_sink, &one,
						  &s1, &err),
				     0, "%s", err.message);
			r->options.sink_batch = full_batch;
			cr_assert_eq(rv_pt_decode(r->trace, r->size, &r->options, full_sink, &many,
						  &s2, &err),
				     0, "%s", err.message);
			r->options.sink_batch = NULL;
			cr_assert_eq(many.n, one.n, "%s: %zu events in batches, %zu one by one",
				     what, many.n, one.n);
			for (size_t i = 0; i < one.n; i++)
				cr_assert(
					same_full_event(&one.v[i], &many.v[i]),
					"%s, %u jobs: event %zu differs (kind %d/%d, time %" PRIu64
					"/%" PRIu64 ")",
					what, jobs, i, one.v[i].kind, many.v[i].kind, one.v[i].time,
					many.v[i].time);
			cr_assert_gt(many.batches, 1, "%s", what);
			cr_assert_eq(s2.first_time, s1.first_time, "%s", what);
			cr_assert_eq(s2.last_time, s1.last_time, "%s", what);
			cr_assert_eq(s2.calls, s1.calls, "%s", what);
			cr_assert_eq(s2.returns, s1.returns, "%s", what);
			cr_assert_eq(s2.jumps, s1.jumps, "%s", what);
			cr_assert_eq(s2.syscalls, s1.syscalls, "%s", what);
			cr_assert_eq(s2.errors, s1.errors, "%s", what);
			cr_assert_eq(s2.nr_sites, s1.nr_sites, "%s", what);
			free(one.v);
			free(many.v);
			many.v = NULL;
			*out = many;
		}
	}
}

/* The sink's batch form (pt_pool.c writes each event in place over the
 * last batch's) takes what the sink would one by one, with every batch's
 * claims true: on mruby as it is (times all 0: every batch is plain, as the
 * claims must say for a sink to take it whole); with damage (errors in
 * batches) and times that change between PSBs and wrap (the capture's
 * short TSC); with times that begin at 0 (stats.first_time is the first
 * that is not); and with a task for every time (a batch ends where the task
 * changes). */
Test(pt_decoder, batches_are_the_events_one_by_one, .timeout = 300)
{
	struct raw r;
	struct full_log got;
	struct rv_perf_time_conv wrap = {
		.time_shift = 10,
		.time_mult = 3000,
		.time_cycles = 0,
		.time_mask = 0x7ffff,
		.cap_user_time_zero = true,
		.cap_user_time_short = true,
	};
	struct rv_perf_time_conv wide = { .time_shift = 10, .time_mult = 3000 };

	raw_load(&r, &corpora[2], 1);
	r.options.decoder = RV_PT_DECODER_FAST;
	assert_batches_one_by_one(&r, "mruby", &got);
	/* its one error (at the end) aside */
	cr_assert_eq(got.unordered, 0);
	cr_assert_leq(got.with_errors, 1, "%zu of %zu batches with errors", got.with_errors,
		      got.batches);

	add_tsc_every(&r, 40, 4000);
	r.options.time_conv = &wide;
	assert_batches_one_by_one(&r, "mruby with times from 0", &got);
	cr_assert_gt(got.zero_then_two, 0, "a batch where the times begin");

	r.options.resolve = task_per_time;
	r.options.resolve_ctx = &r;
	assert_batches_one_by_one(&r, "mruby with a task per time", &got);
	cr_assert_gt(got.tasks, 1000, "%zu batches of another task", got.tasks);
	r.options.resolve = NULL;

	memset(r.trace + 300000, 0xd9, 64); /* as in damage_resyncs_at_next_psb */
	r.options.time_conv = &wrap;
	assert_batches_one_by_one(&r, "mruby with damage and times that wrap", &got);
	cr_assert_gt(got.with_errors, 0);
	cr_assert_gt(got.unordered, 0, "the times wrap in a batch");
	cr_assert_gt(got.plain, got.batches / 2, "%zu of %zu batches plain", got.plain,
		     got.batches);
	raw_free(&r);
}
