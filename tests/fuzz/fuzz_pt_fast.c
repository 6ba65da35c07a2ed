/* fuzz_pt_fast.c: the fast PT walker against libipt's block decoder
 * (decode/pt_decoder.h's two walkers, options.decoder), differentially: the
 * fuzzed bytes as a raw PT trace over the raw_pt harness's image (the
 * executable segment of tests/pt/recursion at its address, made by
 * mk/fuzz.mk: its trace starts in .plt, and with .text alone the fast walker
 * handed every seed to libipt at the first block), decoded on one
 * thread by each walker in each way jumps are treated (every jump handed
 * on; jumps inside made-up 64-byte functions dropped, options.function_at;
 * options.ignore_jumps), the first in one chunk through every PSB (the
 * default chunk size, as a capture's), the others in a chunk from each PSB
 * (starting inside the program, as a capture's later chunks do; a chunk
 * handed over leaves the others to the fast walker). Any difference in the
 * events (kind, flags, addresses, time, task; errors' offsets and
 * addresses) or in the counts
 * (instructions, branches, errors and where they were, the bytes each
 * walker took) aborts, naming the first one. Each decode has a section
 * cache and image of its own: libipt keeps its block caches in the
 * sections, and on some inconsistent traces its cached and uncached flows
 * disagree (a fuzzed trace found it), so a decode over warm sections can
 * differ from one over cold ones, libipt's with libipt's; the fast
 * walker's handing a chunk over must be compared with the same start. The
 * image is built through pt_sections.h, as the fast walker needs. Seeds:
 * the raw_pt harness's (softpt's packets of that program), copied by
 * tools/fuzz-seeds, and one the fast walker hands over at its end (a bad
 * packet after the whole trace), after emitting all it decoded.
 *
 * A comparison where libipt decodes both sides tests nothing, so the
 * harness says at exit what share of the bytes the fast walker decoded, and
 * on a run over its seeds alone (RV_FUZZ_SEED_CHECK set, as tools/fuzz-run
 * does before fuzzing) exits with 1 when that share is under
 * MIN_FAST_PERCENT or no chunk was handed over (libipt's side of a handoff
 * untested).
 *
 * Not here: whether the events are right (test_pt_decoder.c holds libipt's
 * against perf's); the raw dump's own checks and coverage count (raw_pt). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <intel-pt.h>

#include "common.h"
#include "decode/pt_decoder.h"
#include "decode/pt_sections.h"
#include "pt_walkers.h"

#ifndef RV_FUZZ_DIR
#error "RV_FUZZ_DIR (the harnesses' build directory) is set by mk/fuzz.mk"
#endif

#define IMAGE_PATH	RV_FUZZ_DIR "/raw_pt.image"
#define ADDR_CFG_FILTER 1    /* IA32_RTIT_CTL.ADDR0_CFG: trace only inside ADDR0 */
#define FUNCTION_BYTES	64   /* the made-up functions' size */
#define TIME_WINDOW	4096 /* an answer of function_at holds this many ticks */
/* The seeds' bytes the fast walker must decode, in percent: they are
 * softpt's traces of a program in the image, which it models (some 78%
 * now: the rest are a seed it hands over on purpose, one it hands over as
 * a stall, one without a PSB). */
#define MIN_FAST_PERCENT 50

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ev {
	uint64_t time, from, to;
	uint32_t pid, tid;
	uint8_t type, kind, flags, overflow;
};

struct evlist {
	struct ev *v;
	size_t n, cap;
};

static uint64_t image_addr, image_size;
/* kept from run to run (reachable, so no leak): libipt's and ours */
static struct evlist runs[2];
/* what the fast walker took of all it was given, said at exit: all of it
 * handed to libipt would make the comparison one of libipt with itself */
static uint64_t fast_bytes, all_bytes, handoffs;

static void say_share(void)
{
	fprintf(stderr,
		"fuzz: pt_fast: the fast walker decoded %" PRIu64 " of %" PRIu64 " bytes (%" PRIu64
		" chunks handed to libipt)\n",
		fast_bytes, all_bytes, handoffs);
	if (!getenv("RV_FUZZ_SEED_CHECK"))
		return;
	if (!all_bytes || fast_bytes * 100 < all_bytes * MIN_FAST_PERCENT || !handoffs) {
		fprintf(stderr,
			"fuzz: pt_fast: seed check FAILED: the fast walker must decode at least "
			"%d%% of the seeds' bytes and hand at least one chunk to libipt\n",
			MIN_FAST_PERCENT);
		/* exit's handlers are running: _exit leaves them */
		_exit(1);
	}
	fprintf(stderr, "fuzz: pt_fast: seed check ok (at least %d%% wanted)\n", MIN_FAST_PERCENT);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t size;
	uint8_t *text = fuzz_read_build_file(RV_FUZZ_DIR "/raw_pt.addr", &size);
	char *addr = strndup((const char *)text, size);

	if (!addr || sscanf(addr, "%" SCNx64, &image_addr) != 1) {
		fprintf(stderr, "fuzz: %s/raw_pt.addr holds no address\n", RV_FUZZ_DIR);
		abort();
	}
	free(addr);
	free(text);
	free(fuzz_read_build_file(IMAGE_PATH, &size));
	image_size = size;

	if (!image_size)
		abort();
	atexit(say_share);
	return 0;
}

static int record(void *ctx, const struct rv_event *e, struct rv_error *err)
{
	struct evlist *l = ctx;

	(void)err;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}

	struct ev *o = &l->v[l->n++];

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
		o->overflow = e->error.overflow;
		o->from = e->error.offset;
		o->to = e->error.ip;
	}
	return 0;
}

/* Every FUNCTION_BYTES of the image a function of its own. */
static bool function_at(void *ctx, uint32_t pid, uint64_t time, uint64_t addr,
			struct rv_pt_function_span *out)
{
	(void)ctx;
	(void)pid;
	if (addr < image_addr || addr - image_addr >= image_size)
		return false;
	out->start = addr & ~(uint64_t)(FUNCTION_BYTES - 1);
	out->end = out->start + FUNCTION_BYTES;
	out->from = time & ~(uint64_t)(TIME_WINDOW - 1);
	out->until = out->from + TIME_WINDOW;
	return true;
}

static const char *const modes[] = { "every jump", "function_at", "ignore_jumps" };

static void describe(const struct evlist *l, size_t i, char *out, size_t size)
{
	if (i >= l->n) {
		snprintf(out, size, "(none)");
		return;
	}

	const struct ev *e = &l->v[i];

	snprintf(out, size,
		 "type %u kind %u flags %#x overflow %u from %#" PRIx64 " to %#" PRIx64
		 " time %" PRIu64 " pid %u tid %u",
		 e->type, e->kind, e->flags, e->overflow, e->from, e->to, e->time, e->pid, e->tid);
}

static bool same(const struct ev *a, const struct ev *b)
{
	return a->type == b->type && a->kind == b->kind && a->flags == b->flags &&
	       a->overflow == b->overflow && a->from == b->from && a->to == b->to &&
	       a->time == b->time && a->pid == b->pid && a->tid == b->tid;
}

static void differ(const char *mode, const char *what)
{
	fprintf(stderr, "fuzz: pt_fast (%s): the fast walker differs from libipt's: %s\n", mode,
		what);
	abort();
}

static void compare(const char *mode, const struct rv_pt_stats *a, const struct rv_pt_stats *b)
{
	const struct evlist *ref = &runs[0], *got = &runs[1];
	char text[768], x[256], y[256];
	size_t n = ref->n < got->n ? ref->n : got->n, i = 0;

	while (i < n && same(&ref->v[i], &got->v[i]))
		i++;
	if (i < n || ref->n != got->n) {
		describe(ref, i, x, sizeof(x));
		describe(got, i, y, sizeof(y));
		snprintf(text, sizeof(text),
			 "event %zu of %zu (fast: %zu):\n  libipt %s\n  fast   %s", i, ref->n,
			 got->n, x, y);
		differ(mode, text);
	}
	if (pt_walkers_stats_differ(a, b, text, sizeof(text)))
		differ(mode, text);
}

/* A cold section cache and the image over it, through the section
 * registry (an image built otherwise is unknown to the fast walker, which
 * would leave every chunk to libipt). */
static void image_new(struct pt_image_section_cache **iscache, struct pt_image **image)
{
	int isid;

	*iscache = pt_iscache_alloc("pt_fast");
	*image = rv_pt_image_alloc("pt_fast");
	if (!*iscache || !*image)
		abort();
	isid = rv_pt_sections_add_file(*iscache, IMAGE_PATH, 0, image_size, image_addr);
	if (isid < 0 || rv_pt_sections_add_cached(*image, *iscache, isid) < 0) {
		fprintf(stderr, "fuzz: cannot map %s\n", IMAGE_PATH);
		abort();
	}
}

static void image_free(struct pt_image_section_cache *iscache, struct pt_image *image)
{
	rv_pt_image_free(image);
	rv_pt_sections_forget_iscache(iscache);
	pt_iscache_free(iscache);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_pt_decode_options o;

	memset(&o, 0, sizeof(o));
	pt_config_init(&o.config);
	o.config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
	o.config.addr_filter.addr0_a = image_addr;
	o.config.addr_filter.addr0_b = image_addr + image_size - 1;
	o.pid = 1;
	o.tid = 1;
	o.jobs = 1;
	for (size_t mode = 0; mode < sizeof(modes) / sizeof(modes[0]); mode++) {
		struct rv_pt_stats stats[2];

		o.function_at = mode == 1 ? function_at : NULL;
		o.ignore_jumps = mode == 2;
		o.chunk_bytes = mode == 0 ? 0 : 1;
		for (int k = 0; k < 2; k++) {
			struct rv_error err = { 0 };

			runs[k].n = 0;
			image_new(&o.iscache, &o.image);
			o.decoder = k ? RV_PT_DECODER_FAST : RV_PT_DECODER_LIBIPT;
			if (rv_pt_decode(data, size, &o, record, &runs[k], &stats[k], &err) < 0) {
				fprintf(stderr, "fuzz: pt_fast: rv_pt_decode failed: %s\n",
					err.message);
				abort();
			}
			image_free(o.iscache, o.image);
		}
		compare(modes[mode], &stats[0], &stats[1]);
		fast_bytes += stats[1].fast_bytes;
		all_bytes += stats[1].bytes;
		handoffs += stats[1].handoffs;
	}
	return 0;
}
