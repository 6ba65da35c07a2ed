/* raw_pt.c: a raw PT dump over flat images; see raw_pt.h. */
#include "decode/raw_pt.h"
#include "decode/pt_sections.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/array.h"

/* IA32_RTIT_CTL.ADDR0_CFG: trace only inside [ADDR0_A, ADDR0_B] (libipt 2.0
 * has no name for the value). */
#define ADDR_CFG_FILTER 1

/* ---- a mapped input file ---- */

struct mapped_file {
	void *data;
	size_t size;
};

/* Why a file that exists cannot serve as an input, or NULL when it can. */
static const char *file_problem(const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return "is a directory";
	if (!S_ISREG(st->st_mode))
		return "is not a regular file";
	if (st->st_size == 0)
		return "is empty";
	return NULL;
}

static int map_file(const char *path, const char *what, struct mapped_file *out,
		    struct rv_error *err)
{
	struct stat st;
	const char *problem;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out->data = NULL;
	out->size = 0;
	if (fd < 0)
		return rv_error_set(err, errno, "cannot open %s '%s': %s", what, path,
				    strerror(errno));
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return rv_error_set(err, e, "cannot examine %s '%s': %s", what, path, strerror(e));
	}
	problem = file_problem(&st);
	if (problem) {
		close(fd);
		return rv_error_set(err, EINVAL, "%s '%s' %s; give the file of raw PT packets",
				    what, path, problem);
	}
	out->size = (size_t)st.st_size;
	out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (out->data == MAP_FAILED) {
		int e = errno;

		close(fd);
		out->data = NULL;
		return rv_error_set(err, e, "cannot map %s '%s': %s", what, path, strerror(e));
	}
	close(fd);
	return 0;
}

static void unmap_file(struct mapped_file *f)
{
	if (f->data)
		munmap(f->data, f->size);
	f->data = NULL;
}

/* ---- the images ---- */

/* The images as loaded, for the decoding threads' own copies. */
struct raw_images {
	const struct rv_raw_pt_options *options;
	uint64_t *sizes;
};

/* rv_pt_populate_fn: the same files through a decoding thread's own section
 * cache (libipt locks a section for each read; threads sharing one wait). */
static int raw_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct raw_images *r = ctx;

	(void)image;
	for (size_t i = 0; i < r->options->nr_images; i++) {
		const struct rv_raw_pt_image *im = &r->options->images[i];
		int isid = rv_pt_sections_add_file(iscache, im->path, 0, r->sizes[i], im->addr);

		if (isid >= 0)
			isid = rv_pt_sections_add_cached(copy, iscache, isid);
		if (isid < 0)
			return rv_error_set(err, EIO, "cannot read --image '%s' again: %s",
					    im->path, rv_pt_strerror(isid));
	}
	return 0;
}

int rv_raw_pt_check_images(const struct rv_raw_pt_image *images, size_t nr_images, uint64_t *sizes,
			   struct rv_error *err)
{
	for (size_t i = 0; i < nr_images; i++) {
		const struct rv_raw_pt_image *im = &images[i];
		const char *problem;
		struct stat st;
		int fd = open(im->path, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || fstat(fd, &st)) {
			int e = errno;

			if (fd >= 0)
				close(fd);
			return rv_error_set(err, e, "cannot read --image '%s': %s", im->path,
					    strerror(e));
		}
		close(fd);
		problem = file_problem(&st);
		if (problem)
			return rv_error_set(err, EINVAL,
					    "--image '%s' %s; give the file of the code's bytes as "
					    "they were in memory",
					    im->path, problem);
		sizes[i] = (uint64_t)st.st_size;
		if (sizes[i] - 1 > UINT64_MAX - im->addr)
			return rv_error_set(
				err, EINVAL,
				"--image '%s' at %#" PRIx64 " would end past the top of "
				"the address space (it is %" PRIu64 " bytes); check its "
				"address",
				im->path, im->addr, sizes[i]);
		for (size_t j = 0; j < i; j++) {
			const struct rv_raw_pt_image *other = &images[j];
			uint64_t last = im->addr + (sizes[i] - 1);
			uint64_t other_last = other->addr + (sizes[j] - 1);

			if (im->addr <= other_last && other->addr <= last)
				return rv_error_set(
					err, EINVAL,
					"--image '%s' at [%#" PRIx64 ", %#" PRIx64 "] overlaps "
					"--image '%s' at [%#" PRIx64 ", %#" PRIx64 "]; give each "
					"image the address it was loaded at",
					im->path, im->addr, last, other->path, other->addr,
					other_last);
		}
	}
	return 0;
}

/* Loads every image (checked and measured first); [*lowest, *highest] is
 * their span, both ends included (the last byte may be 2^64 - 1). */
static int load_images(const struct rv_raw_pt_options *o, struct pt_image *image,
		       struct pt_image_section_cache *iscache, uint64_t *sizes, uint64_t *lowest,
		       uint64_t *highest, struct rv_error *err)
{
	int ret = rv_raw_pt_check_images(o->images, o->nr_images, sizes, err);

	*lowest = UINT64_MAX;
	*highest = 0;
	for (size_t i = 0; !ret && i < o->nr_images; i++) {
		const struct rv_raw_pt_image *im = &o->images[i];
		uint64_t last = im->addr + (sizes[i] - 1);
		int status = rv_pt_sections_add_file(iscache, im->path, 0, sizes[i], im->addr);

		if (status >= 0)
			status = rv_pt_sections_add_cached(image, iscache, status);
		if (status < 0)
			return rv_error_set(err, EINVAL,
					    "cannot load --image '%s' at %#" PRIx64 ": %s",
					    im->path, im->addr, rv_pt_strerror(status));
		if (im->addr < *lowest)
			*lowest = im->addr;
		if (last > *highest)
			*highest = last;
	}
	return ret;
}

/* ---- what decoded ---- */

/* The offsets of the decode errors, from the events on their way to the
 * caller's sink (in buffer order). */
struct error_offsets {
	rv_pt_sink_fn sink;
	rv_event_batch_fn sink_batch;
	void *ctx;
	uint64_t *offsets;
	size_t nr, cap;
	bool nomem;
};

static void note_error(struct error_offsets *e, const struct rv_event *ev)
{
	if (ev->kind == RV_EVENT_TRACE_ERROR && !ev->error.overflow &&
	    ev->error.offset != UINT64_MAX) {
		if (rv_array_grow(&e->offsets, &e->cap, e->nr, sizeof(*e->offsets), 64))
			e->nomem = true;
		else
			e->offsets[e->nr++] = ev->error.offset;
	}
}

static int note_errors(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct error_offsets *e = ctx;

	note_error(e, ev);
	return e->sink(e->ctx, ev, err);
}

/* note_errors' batch form: the offsets are only read once decoding ended,
 * so the whole batch is noted before the sink takes it (a batch of branches
 * alone has nothing to note). */
static int note_errors_batch(void *ctx, const struct rv_pt_batch *b, struct rv_error *err)
{
	struct error_offsets *e = ctx;

	for (size_t i = 0; !b->branches_only && i < b->n; i++)
		note_error(e, &b->events[i]);
	return e->sink_batch(e->ctx, b->events, b->n, err);
}

static bool is_branch_packet(enum pt_packet_type type)
{
	switch (type) {
	case ppt_tnt_8:
	case ppt_tnt_64:
	case ppt_tip:
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_fup:
		return true;
	default:
		return false;
	}
}

/* The branch packets, and those that did not decode: in a stretch of
 * decoding that ended in an error (from where it began: the first PSB, a
 * TIP.PGE, the PSB it resumed at after an error), and in the stretch skipped
 * after it ([the error's offset, the next PSB)). A stretch that ends where
 * tracing stops (TIP.PGD) or at an overflow decoded. */
static void count_coverage(const uint8_t *buf, size_t size, const struct pt_config *config,
			   const struct error_offsets *e, struct rv_raw_pt_coverage *out)
{
	struct pt_config c = *config;
	struct pt_packet_decoder *dec;
	size_t next = 0;
	uint64_t skip_end = 0, pending = 0;
	int status;

	c.size = sizeof(c);
	c.begin = (uint8_t *)buf;
	c.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&c);
	if (!dec)
		return;
	status = pt_pkt_sync_forward(dec);
	while (status != -pte_eos) {
		struct pt_packet pkt;
		uint64_t offset = 0;

		if (status < 0) {
			status = pt_pkt_sync_forward(dec);
			continue;
		}
		(void)pt_pkt_get_offset(dec, &offset);
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status < 0)
			continue;
		/* errors before this packet: their stretch did not decode */
		while (next < e->nr && e->offsets[next] <= offset) {
			out->undecoded_packets += pending;
			pending = 0;
			skip_end = rv_pt_next_psb_pattern(buf, size, (size_t)e->offsets[next++]);
		}
		if (offset < skip_end) {
			if (is_branch_packet(pkt.type)) {
				out->branch_packets++;
				out->undecoded_packets++;
			}
			continue;
		}
		if (pkt.type == ppt_tip_pge || pkt.type == ppt_ovf)
			pending = 0; /* a stretch begins: the one before decoded */
		if (is_branch_packet(pkt.type)) {
			out->branch_packets++;
			pending++;
		}
		if (pkt.type == ppt_tip_pgd)
			pending = 0;
	}
	/* errors past the last packet */
	if (next < e->nr)
		out->undecoded_packets += pending;
	pt_pkt_free_decoder(dec);
}

int rv_raw_pt_decode(const struct rv_raw_pt_options *o, rv_pt_sink_fn sink, void *ctx,
		     struct rv_pt_stats *stats, uint64_t *packets,
		     struct rv_raw_pt_coverage *coverage, struct rv_error *err)
{
	struct rv_pt_decode_options d = { 0 };
	struct mapped_file trace;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct raw_images loaded = { .options = o };
	struct error_offsets errors = { .sink = sink, .sink_batch = o->sink_batch, .ctx = ctx };
	uint64_t lowest, highest;
	int ret;

	memset(stats, 0, sizeof(*stats));
	if (coverage)
		memset(coverage, 0, sizeof(*coverage));
	ret = map_file(o->path, "raw PT trace", &trace, err);
	if (ret)
		return ret;
	image = rv_pt_image_alloc("raw");
	iscache = pt_iscache_alloc("raw");
	loaded.sizes = calloc(o->nr_images ? o->nr_images : 1, sizeof(*loaded.sizes));
	if (!image || !iscache || !loaded.sizes)
		ret = rv_error_set(err, ENOMEM, "out of memory");
	if (!ret)
		ret = load_images(o, image, iscache, loaded.sizes, &lowest, &highest, err);
	if (!ret) {
		pt_config_init(&d.config);
		if (o->cpu)
			ret = rv_pt_cpu_parse(o->cpu, &d.config, err);
	}
	if (!ret && rv_pt_next_psb_pattern(trace.data, trace.size, 0) >= trace.size)
		ret = rv_error_set(err, EINVAL,
				   "raw PT trace '%s' holds no PSB packet, where decoding could "
				   "begin: it is not raw Intel PT (perf.data is decoded without "
				   "--raw-pt), or it was cut before its first PSB",
				   o->path);
	if (!ret) {
		/* Tracing was filtered to the code the images hold (TraceEn in
		 * filter mode on IA32_RTIT_ADDR0), unless told otherwise. */
		d.config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
		d.config.addr_filter.addr0_a = o->addr_filter[1] ? o->addr_filter[0] : lowest;
		d.config.addr_filter.addr0_b = o->addr_filter[1] ? o->addr_filter[1] - 1 : highest;
		d.image = image;
		d.iscache = iscache;
		d.populate = raw_populate;
		d.populate_ctx = &loaded;
		d.ignore_jumps = true;
		d.pid = 1;
		d.tid = 1;
		d.jobs = o->jobs ? o->jobs : 1;
		d.chunk_bytes = o->chunk_bytes;
		d.decoder = o->decoder;
		d.sink_batch = o->sink_batch ? note_errors_batch : NULL;
		if (o->count_packets && packets)
			*packets = rv_pt_count_packets(trace.data, trace.size, &d.config);
		ret = rv_pt_decode(trace.data, trace.size, &d, note_errors, &errors, stats, err);
	}
	if (!ret && errors.nomem)
		ret = rv_error_set(err, ENOMEM, "out of memory");
	if (!ret && coverage && errors.nr)
		count_coverage(trace.data, trace.size, &d.config, &errors, coverage);
	free(errors.offsets);
	free(loaded.sizes);
	rv_pt_image_free(image);
	rv_pt_sections_forget_iscache(iscache);
	pt_iscache_free(iscache);
	unmap_file(&trace);
	return ret;
}
