/* raw_pt.c: a raw PT dump over flat images; see raw_pt.h. */
#include "decode/raw_pt.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* IA32_RTIT_CTL.ADDR0_CFG: trace only inside [ADDR0_A, ADDR0_B] (libipt 2.0
 * has no name for the value). */
#define ADDR_CFG_FILTER 1

/* ---- a mapped input file ---- */

struct mapped_file {
	void *data;
	size_t size;
};

static int map_file(const char *path, const char *what, struct mapped_file *out,
		    struct rv_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out->data = NULL;
	out->size = 0;
	if (fd < 0)
		return rv_error_set(err, errno, "cannot open %s '%s': %s", what, path,
				    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return rv_error_set(err, EINVAL, "%s '%s' is not a regular file", what, path);
	}
	out->size = (size_t)st.st_size;
	if (out->size) {
		out->data = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (out->data == MAP_FAILED) {
			int e = errno;

			close(fd);
			out->data = NULL;
			return rv_error_set(err, e, "cannot map %s '%s': %s", what, path,
					    strerror(e));
		}
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
		int isid = pt_iscache_add_file(iscache, im->path, 0, r->sizes[i], im->addr);

		if (isid >= 0)
			isid = pt_image_add_cached(copy, iscache, isid, NULL);
		if (isid < 0)
			return rv_error_set(err, EIO, "cannot read --image '%s' again: %s",
					    im->path, rv_pt_strerror(isid));
	}
	return 0;
}

/* Loads every image; [*lowest, *highest) is their span. */
static int load_images(const struct rv_raw_pt_options *o, struct pt_image *image,
		       struct pt_image_section_cache *iscache, uint64_t *sizes, uint64_t *lowest,
		       uint64_t *highest, struct rv_error *err)
{
	*lowest = UINT64_MAX;
	*highest = 0;
	for (size_t i = 0; i < o->nr_images; i++) {
		const struct rv_raw_pt_image *im = &o->images[i];
		struct stat st;
		int status;

		errno = 0;
		if (stat(im->path, &st) || !S_ISREG(st.st_mode) || st.st_size == 0)
			return rv_error_set(err, ENOENT,
					    "cannot read --image '%s': %s; give an existing, "
					    "non-empty file",
					    im->path, errno ? strerror(errno) : "empty");
		status = pt_iscache_add_file(iscache, im->path, 0, (uint64_t)st.st_size, im->addr);
		if (status >= 0)
			status = pt_image_add_cached(image, iscache, status, NULL);
		if (status < 0)
			return rv_error_set(err, EINVAL,
					    "cannot load --image '%s' at %#" PRIx64
					    ": %s (do two images overlap?)",
					    im->path, im->addr, rv_pt_strerror(status));
		sizes[i] = (uint64_t)st.st_size;
		if (im->addr < *lowest)
			*lowest = im->addr;
		if (im->addr + (uint64_t)st.st_size > *highest)
			*highest = im->addr + (uint64_t)st.st_size;
	}
	return 0;
}

int rv_raw_pt_decode(const struct rv_raw_pt_options *o, rv_pt_sink_fn sink, void *ctx,
		     struct rv_pt_stats *stats, uint64_t *packets, struct rv_error *err)
{
	struct rv_pt_decode_options d = { 0 };
	struct mapped_file trace;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct raw_images loaded = { .options = o };
	uint64_t lowest, highest;
	int ret;

	memset(stats, 0, sizeof(*stats));
	ret = map_file(o->path, "raw PT trace", &trace, err);
	if (ret)
		return ret;
	image = pt_image_alloc("raw");
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
	if (!ret) {
		/* Tracing was filtered to the code the images hold (TraceEn in
		 * filter mode on IA32_RTIT_ADDR0), unless told otherwise. */
		d.config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
		d.config.addr_filter.addr0_a = o->addr_filter[1] ? o->addr_filter[0] : lowest;
		d.config.addr_filter.addr0_b =
			o->addr_filter[1] ? o->addr_filter[1] - 1 : highest - 1;
		d.image = image;
		d.iscache = iscache;
		d.populate = raw_populate;
		d.populate_ctx = &loaded;
		d.ignore_jumps = true;
		d.pid = 1;
		d.tid = 1;
		d.jobs = o->jobs ? o->jobs : 1;
		d.chunk_bytes = o->chunk_bytes;
		if (o->count_packets && packets)
			*packets = rv_pt_count_packets(trace.data, trace.size, &d.config);
		ret = rv_pt_decode(trace.data, trace.size, &d, sink, ctx, stats, err);
	}
	free(loaded.sizes);
	pt_image_free(image);
	pt_iscache_free(iscache);
	unmap_file(&trace);
	return ret;
}
