/* ptwalk.c: the bare libipt block-decoder walk that the PT decoder's speed is
 * measured against: sync forward, pt_blk_next until the end, every pending
 * event drained, every block's ninsn summed, resync at the next PSB after an
 * error. Nothing is done with the blocks.
 *
 *   ptwalk [--end-on-branch] [--copies N] [--decode JOBS [--chunk BYTES]]
 *          TRACE IMAGE BASE END
 *
 * TRACE is a raw PT stream, IMAGE the code bytes mapped flat at BASE, and
 * [BASE, END) the address filter 0 the trace was recorded with. Prints
 * `insns N blocks N seconds S bytes_per_s X cpu_seconds C` (C: the CPU time
 * all threads used meanwhile; and the errors when there were some).
 * --end-on-branch ends blocks at direct calls and jumps too, as
 * rv_pt_decode asks libipt to; the default is libipt's own block size.
 * --copies decodes N copies of the trace one after the other (a larger real
 * input: the corpus traces concatenate cleanly). --decode runs rearview's
 * rv_pt_decode with JOBS threads and a sink that only counts, instead of the
 * bare walk, over the same bytes and image, for the ratio of the two.
 *
 * Not a test and not part of rearview: a yardstick for `make bench`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <intel-pt.h>

#include "decode/pt_decoder.h"

/* IA32_RTIT_CTL.ADDR0_CFG: 1 traces only inside [ADDR0_A, ADDR0_B] (libipt 2.0
 * has no name for it). */
#define ADDR_CFG_FILTER 1

struct walk_result {
	uint64_t insns, blocks, errors;
};

static int read_file(const char *path, uint8_t **out, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	size_t used = 0, capacity = 0;

	if (!f)
		return -errno;
	for (;;) {
		if (used == capacity) {
			size_t grown = capacity ? capacity * 2 : 1 << 20;
			uint8_t *p = realloc(data, grown);

			if (!p) {
				free(data);
				fclose(f);
				return -ENOMEM;
			}
			data = p;
			capacity = grown;
		}
		size_t n = fread(data + used, 1, capacity - used, f);

		used += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(data);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*out = data;
	*size = used;
	return 0;
}

static int drain_events(struct pt_block_decoder *decoder, int status)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event event;

		status = pt_blk_event(decoder, &event, sizeof(event));
	}
	return status;
}

static void walk(struct pt_block_decoder *decoder, struct walk_result *r)
{
	int status = pt_blk_sync_forward(decoder);

	while (status != -pte_eos) {
		if (status < 0) {
			r->errors++;
			status = pt_blk_sync_forward(decoder);
			continue;
		}
		status = drain_events(decoder, status);
		if (status < 0)
			continue;

		struct pt_block block;

		memset(&block, 0, sizeof(block));
		status = pt_blk_next(decoder, &block, sizeof(block));
		r->insns += block.ninsn;
		r->blocks++;
	}
}

static int count_sink(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	(void)ev;
	(void)err;
	++*(uint64_t *)ctx;
	return 0;
}

/* The image again, for a decoding thread's own section cache. */
struct image_source {
	const char *path;
	uint64_t base;
};

static int populate_image(void *ctx, const struct pt_image *image, struct pt_image *copy,
			  struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct image_source *src = ctx;
	int isid = pt_iscache_add_file(iscache, src->path, 0, UINT64_MAX, src->base);

	(void)image;
	if (isid < 0 || pt_image_add_cached(copy, iscache, isid, NULL) < 0)
		return rv_error_set(err, EIO, "cannot map %s again", src->path);
	return 0;
}

static uint64_t parse_address(const char *text)
{
	char *end;
	unsigned long long v = strtoull(text, &end, 0);

	if (*text == '\0' || *end != '\0') {
		fprintf(stderr, "ptwalk: '%s' is not an address\n", text);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ptwalk [--end-on-branch] [--copies N] [--decode JOBS [--chunk BYTES]] "
		"TRACE IMAGE BASE END\n");
	exit(2);
}

static unsigned long parse_count(const char *text)
{
	char *end;
	unsigned long v = strtoul(text, &end, 0);

	if (*text == '\0' || *end != '\0')
		usage();
	return v;
}

int main(int argc, char **argv)
{
	bool end_on_branch = false, decode = false;
	unsigned long copies = 1, jobs = 1, chunk_bytes = 0;
	int arg = 1;

	for (; arg < argc && strncmp(argv[arg], "--", 2) == 0; arg++) {
		if (strcmp(argv[arg], "--end-on-branch") == 0) {
			end_on_branch = true;
		} else if (strcmp(argv[arg], "--copies") == 0 && arg + 1 < argc) {
			copies = parse_count(argv[++arg]);
		} else if (strcmp(argv[arg], "--decode") == 0 && arg + 1 < argc) {
			decode = true;
			jobs = parse_count(argv[++arg]);
		} else if (strcmp(argv[arg], "--chunk") == 0 && arg + 1 < argc) {
			chunk_bytes = parse_count(argv[++arg]);
		} else {
			usage();
		}
	}
	if (argc - arg != 4 || copies == 0 || copies > 1000)
		usage();

	const char *trace_path = argv[arg], *image_path = argv[arg + 1];
	uint64_t base = parse_address(argv[arg + 2]), end = parse_address(argv[arg + 3]);
	uint8_t *trace = NULL;
	size_t trace_size = 0;
	int err = read_file(trace_path, &trace, &trace_size);

	if (err < 0) {
		fprintf(stderr, "ptwalk: cannot read %s: %s\n", trace_path, strerror(-err));
		return 1;
	}
	if (copies > 1) {
		uint8_t *all = malloc(trace_size * copies);

		if (!all) {
			fprintf(stderr, "ptwalk: out of memory for %lu copies\n", copies);
			return 1;
		}
		for (unsigned long i = 0; i < copies; i++)
			memcpy(all + i * trace_size, trace, trace_size);
		free(trace);
		trace = all;
		trace_size *= copies;
	}

	/* Code through a section cache, as rearview reads it (the decoder
	 * reads instructions back from it), for both walks alike. */
	struct pt_image_section_cache *iscache = pt_iscache_alloc("ptwalk");
	struct pt_image *image = pt_image_alloc("ptwalk");
	int isid = iscache ? pt_iscache_add_file(iscache, image_path, 0, UINT64_MAX, base)
			   : -pte_nomem;

	err = isid < 0 ? isid
	      : image  ? pt_image_add_cached(image, iscache, isid, NULL)
		       : -pte_nomem;
	if (err < 0) {
		fprintf(stderr, "ptwalk: cannot map %s: %s\n", image_path,
			pt_errstr(pt_errcode(err)));
		return 1;
	}

	struct pt_config config;

	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + trace_size;
	config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
	config.addr_filter.addr0_a = base;
	config.addr_filter.addr0_b = end;
	config.flags.variant.block.end_on_call = end_on_branch;
	config.flags.variant.block.end_on_jump = end_on_branch;

	struct walk_result r = { 0 };
	struct timespec t0, t1, c0, c1;
	uint64_t events = 0;

	if (decode) {
		struct rv_pt_decode_options options;
		struct rv_pt_stats stats;
		struct rv_error error = { 0 };

		memset(&options, 0, sizeof(options));
		options.config = config;
		struct image_source source = { image_path, base };

		options.image = image;
		options.iscache = iscache;
		options.populate = populate_image;
		options.populate_ctx = &source;
		options.jobs = (unsigned)jobs;
		options.chunk_bytes = chunk_bytes;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		err = rv_pt_decode(trace, trace_size, &options, count_sink, &events, &stats,
				   &error);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (err < 0) {
			fprintf(stderr, "ptwalk: %s\n", error.message);
			return 1;
		}
		r.insns = stats.insns;
		r.blocks = stats.blocks;
		r.errors = stats.errors;
	} else {
		struct pt_block_decoder *decoder = pt_blk_alloc_decoder(&config);

		if (!decoder || pt_blk_set_image(decoder, image) < 0) {
			fprintf(stderr, "ptwalk: cannot set up libipt's block decoder\n");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		walk(decoder, &r);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		pt_blk_free_decoder(decoder);
	}

	double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;

	printf("insns %" PRIu64 " blocks %" PRIu64 " seconds %.6f bytes_per_s %.0f", r.insns,
	       r.blocks, seconds, seconds > 0 ? (double)trace_size / seconds : 0.0);
	printf(" cpu_seconds %.6f", cpu);
	if (decode)
		printf(" events %" PRIu64, events);
	if (r.errors)
		printf(" errors %" PRIu64, r.errors);
	printf("\n");

	pt_image_free(image);
	pt_iscache_free(iscache);
	free(trace);
	return 0;
}
