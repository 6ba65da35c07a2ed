/* test_pt_pool.c: how many threads decode a buffer (decode/pt_pool.c): a
 * buffer of one chunk is decoded by the calling thread alone whatever
 * `jobs` says (the others would have nothing to take), a buffer of many
 * chunks by the pool; the events are the same either way.
 *
 * The threads are counted from the sink, which runs while the pool's are
 * alive: the entries of /proc/self/task then, against those before.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/pt_decoder.h"
#include "decode/pt_sections.h"
#include "test_env.h"
#include "test_files.h"

/* The Unzip corpus (16 KiB of PT), as test_pt_decoder decodes it. */
#define UNZIP_BASE 0x400000
#define UNZIP_END  0x427000

struct count {
	size_t events, most_threads;
	uint64_t digest; /* of the events' kinds and times */
};

static size_t nr_threads(void)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(dir);
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

static int count_sink(void *ctx, const struct rv_event *e, struct rv_error *err)
{
	struct count *c = ctx;

	/* the first event: the pool's threads are all started by then */
	if (!c->events++)
		c->most_threads = nr_threads();
	c->digest = c->digest * 31 + (uint64_t)e->kind * 1000003 + e->time;
	return 0;
}

struct unzip {
	uint8_t *trace;
	size_t size;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	char image_path[PATH_MAX];
};

static int unzip_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			  struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct unzip *u = ctx;
	int isid = rv_pt_sections_add_file(iscache, u->image_path, 0, UINT64_MAX, UNZIP_BASE);

	if (isid < 0 || rv_pt_sections_add_cached(copy, iscache, isid) < 0)
		return rv_error_set(err, EIO, "cannot map %s again", u->image_path);
	return 0;
}

static struct count decode(struct unzip *u, unsigned jobs, size_t chunk_bytes)
{
	struct rv_pt_decode_options o;
	struct rv_pt_stats stats;
	struct rv_error err = { 0 };
	struct count c = { 0 };

	memset(&o, 0, sizeof(o));
	pt_config_init(&o.config);
	o.config.addr_filter.config.ctl.addr0_cfg = 1; /* filter */
	o.config.addr_filter.addr0_a = UNZIP_BASE;
	o.config.addr_filter.addr0_b = UNZIP_END;
	o.image = u->image;
	o.iscache = u->iscache;
	o.populate = unzip_populate;
	o.populate_ctx = u;
	o.jobs = jobs;
	o.chunk_bytes = chunk_bytes;
	cr_assert_eq(rv_pt_decode(u->trace, u->size, &o, count_sink, &c, &stats, &err), 0, "%s",
		     err.message);
	cr_assert_gt(c.events, 100);
	return c;
}

Test(pt_pool, one_chunk_is_decoded_by_the_calling_thread)
{
	char trace_path[PATH_MAX];
	struct count one, sequential, many;
	struct unzip u;
	size_t before;
	int isid;

	memset(&u, 0, sizeof(u));
	corpus_path(trace_path, sizeof(trace_path), "Unzip/trace.pt");
	corpus_path(u.image_path, sizeof(u.image_path), "Unzip/image.bin");
	u.trace = read_whole(trace_path, &u.size);
	u.iscache = pt_iscache_alloc("unzip");
	u.image = rv_pt_image_alloc("unzip");
	cr_assert(u.trace && u.iscache && u.image);
	isid = rv_pt_sections_add_file(u.iscache, u.image_path, 0, UINT64_MAX, UNZIP_BASE);
	cr_assert_geq(isid, 0);
	cr_assert_geq(rv_pt_sections_add_cached(u.image, u.iscache, isid), 0);

	before = nr_threads();
	/* the default chunk (256 KiB) holds the whole 16 KiB buffer */
	one = decode(&u, 4, 0);
	cr_assert_eq(one.most_threads, before, "%zu threads while decoding one chunk, %zu before",
		     one.most_threads, before);
	/* 1 KiB chunks: many, and the pool's threads take them */
	many = decode(&u, 4, 1024);
	cr_assert_gt(many.most_threads, before, "no pool for %zu bytes in 1 KiB chunks", u.size);
	sequential = decode(&u, 1, 0);
	cr_assert_eq(one.events, sequential.events);
	cr_assert_eq(one.digest, sequential.digest);
	cr_assert_eq(many.events, sequential.events);
	cr_assert_eq(many.digest, sequential.digest);

	rv_pt_image_free(u.image);
	rv_pt_sections_forget_iscache(u.iscache);
	pt_iscache_free(u.iscache);
	free(u.trace);
}
