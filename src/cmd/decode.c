/* decode.c: `rearview decode`: an Intel PT capture, a function-tracer
 * capture, a raw PT dump or perf script branch text turned into a trace.
 *
 * Four producers feed one builder: the capture reader (pt_capture.h, which
 * decodes every AUXTRACE buffer with the capture's sideband), the function
 * record decoder (func_decoder.h, for captures of --backend uprobe, told by
 * their event's name), the raw decoder (pt_decoder.h over flat images given
 * on the command line) and the perf script import (perf_script.h). The
 * builder and writer are those of every other command.
 *
 * Not here: decoding or call-stack rules; this file wires and reports.
 */
#define RV_LOG_DOMAIN "decode"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "cmd/render.h"
#include "decode/func_decoder.h"
#include "decode/perf_script.h"
#include "decode/pt_capture.h"
#include "decode/pt_decoder.h"
#include "symbolize/symbolizer.h"
#include "trace/builder.h"
#include "util/log.h"

/* IA32_RTIT_CTL.ADDR0_CFG: trace only inside [ADDR0_A, ADDR0_B] (libipt 2.0
 * has no name for the value). */
#define ADDR_CFG_FILTER 1

struct decode_run {
	const struct rv_options *opts;
	struct rv_symbolizer *symbolizer;
	struct rv_builder *builder;
	struct rv_trace_writer *writer;
	struct rv_perf_script *perf_script; /* its names live until the builder is done */
	FILE *perf_script_in;
	struct rv_pt_stats stats;
	uint64_t packets;
	bool have_pt_stats;
	bool functions; /* a function-tracer capture */
	struct rv_func_decoder_stats fn_stats;
	bool jumps_ignored; /* raw images: the decoder never looked at jumps */
	double seconds;
};

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned default_jobs(const struct rv_options *opts)
{
	long cpus;

	if (opts->jobs)
		return opts->jobs;
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	return cpus > 0 ? (unsigned)cpus : 1;
}

static int to_builder(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	return rv_builder_add(ctx, ev, err);
}

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

/* ---- --raw-pt ---- */

/* The images as loaded, for the decoding threads' own copies. */
struct raw_images {
	const struct rv_options *opts;
	uint64_t sizes[RV_MAX_IMAGES];
};

/* rv_pt_populate_fn: the same files through a decoding thread's own section
 * cache (libipt locks a section for each read; threads sharing one wait). */
static int raw_populate(void *ctx, const struct pt_image *image, struct pt_image *copy,
			struct pt_image_section_cache *iscache, struct rv_error *err)
{
	const struct raw_images *r = ctx;

	(void)image;
	for (size_t i = 0; i < r->opts->nr_images; i++) {
		const struct rv_raw_image *im = &r->opts->images[i];
		int isid = pt_iscache_add_file(iscache, im->path, 0, r->sizes[i], im->addr);

		if (isid >= 0)
			isid = pt_image_add_cached(copy, iscache, isid, NULL);
		if (isid < 0)
			return rv_error_set(err, EIO, "cannot read --image '%s' again: %s",
					    im->path, rv_pt_strerror(isid));
	}
	return 0;
}

static int decode_raw(struct decode_run *run, struct rv_error *err)
{
	const struct rv_options *opts = run->opts;
	struct rv_pt_decode_options o = { 0 };
	struct mapped_file trace;
	struct pt_image_section_cache *iscache;
	struct pt_image *image;
	struct raw_images loaded = { .opts = opts };
	uint64_t lowest = UINT64_MAX, highest = 0;
	int ret;

	ret = map_file(opts->raw_pt, "raw PT trace", &trace, err);
	if (ret)
		return ret;
	image = pt_image_alloc("raw");
	iscache = pt_iscache_alloc("raw");
	if (!image || !iscache) {
		pt_image_free(image);
		pt_iscache_free(iscache);
		unmap_file(&trace);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < opts->nr_images && !ret; i++) {
		const struct rv_raw_image *im = &opts->images[i];
		struct stat st;
		int status;

		if (stat(im->path, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
			ret = rv_error_set(err, ENOENT,
					   "cannot read --image '%s': %s; give an existing, "
					   "non-empty file",
					   im->path, errno ? strerror(errno) : "empty");
			break;
		}
		status = pt_iscache_add_file(iscache, im->path, 0, (uint64_t)st.st_size, im->addr);
		if (status >= 0)
			status = pt_image_add_cached(image, iscache, status, NULL);
		if (status < 0) {
			ret = rv_error_set(err, EINVAL,
					   "cannot load --image '%s' at %#" PRIx64
					   ": %s (do two images overlap?)",
					   im->path, im->addr, rv_pt_strerror(status));
			break;
		}
		loaded.sizes[i] = (uint64_t)st.st_size;
		if (im->addr < lowest)
			lowest = im->addr;
		if (im->addr + (uint64_t)st.st_size > highest)
			highest = im->addr + (uint64_t)st.st_size;
	}
	if (!ret) {
		pt_config_init(&o.config);
		if (opts->cpu)
			ret = rv_pt_cpu_parse(opts->cpu, &o.config, err);
	}
	if (!ret) {
		/* Tracing was filtered to the code the images hold (TraceEn in
		 * filter mode on IA32_RTIT_ADDR0), unless told otherwise. */
		o.config.addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
		o.config.addr_filter.addr0_a = opts->addr_filter[1] ? opts->addr_filter[0] : lowest;
		o.config.addr_filter.addr0_b =
			opts->addr_filter[1] ? opts->addr_filter[1] - 1 : highest - 1;
		o.image = image;
		o.iscache = iscache;
		o.populate = raw_populate;
		o.populate_ctx = &loaded;
		/* Without symbols all code is one unknown function to the
		 * builder: no jump changes a stack. */
		o.ignore_jumps = true;
		run->jumps_ignored = true;
		o.pid = 1;
		o.tid = 1;
		o.jobs = default_jobs(opts);
		o.chunk_bytes = opts->chunk_bytes;
		if (opts->stats)
			run->packets = rv_pt_count_packets(trace.data, trace.size, &o.config);
		ret = rv_pt_decode(trace.data, trace.size, &o, to_builder, run->builder,
				   &run->stats, err);
		run->have_pt_stats = true;
	}
	pt_image_free(image);
	pt_iscache_free(iscache);
	unmap_file(&trace);
	return ret;
}

/* ---- --perf-script ---- */

static int decode_perf_script(struct decode_run *run, struct rv_error *err)
{
	const char *path = run->opts->perf_script;
	struct rv_event ev;
	int ret;

	run->perf_script_in = strcmp(path, "-") ? fopen(path, "r") : stdin;
	if (!run->perf_script_in)
		return rv_error_set(err, errno, "cannot open '%s': %s", path, strerror(errno));
	ret = rv_perf_script_open(&run->perf_script, run->perf_script_in,
				  strcmp(path, "-") ? path : "standard input", err);
	while (!ret) {
		int got = rv_perf_script_next(run->perf_script, &ev, err);

		if (got <= 0) {
			ret = got;
			break;
		}
		ret = rv_builder_add(run->builder, &ev, err);
	}
	if (!ret) {
		struct rv_perf_script_stats st;

		rv_perf_script_stats(run->perf_script, &st);
		rv_debug("%" PRIu64 " lines: %" PRIu64 " branches, %" PRIu64 " errors, %" PRIu64
			 " skipped",
			 st.lines, st.branches, st.errors, st.skipped);
	}
	return ret;
}

/* ---- a capture ---- */

static int decode_capture(struct decode_run *run, struct rv_pt_capture *capture,
			  struct rv_error *err)
{
	int ret = rv_render_pt_capture(capture, run->builder, &run->stats,
				       run->opts->stats ? &run->packets : NULL, err);

	run->have_pt_stats = true;
	return ret;
}

/* ---- --stats ---- */

static void print_function_stats(const struct decode_run *run)
{
	const struct rv_func_decoder_stats *s = &run->fn_stats;
	double span = s->last_time > s->first_time ? (double)(s->last_time - s->first_time) : 0;
	uint64_t total = s->unknown_types;

	for (unsigned type = 0; type < RV_FN_NR_RECORD_TYPES; type++)
		total += s->by_type[type];
	printf("perf records     %" PRIu64 "\n", s->records);
	printf("function records %" PRIu64 " (%" PRIu64 " outside --filter windows and %" PRIu64
	       " of unknown types, skipped)\n",
	       total, s->outside_windows, s->unknown_types);
	for (unsigned type = 0; type < RV_FN_NR_RECORD_TYPES; type++) {
		const char *name = rv_fn_record_type_name(type);

		if (name)
			printf("  %-22s %" PRIu64 "\n", name, s->by_type[type]);
	}
	printf("other samples    %" PRIu64 "\n", s->other_samples);
	printf("gate marks       %" PRIu64 "\n", s->marks);
	printf("lost             %" PRIu64 "\n", s->lost);
	printf("time covered     %.0f ns (first %" PRIu64 ", last %" PRIu64 ")\n", span,
	       s->first_time, s->last_time);
	printf("decode time      %.3f s\n", run->seconds);
}

static void print_stats(const struct decode_run *run)
{
	const struct rv_pt_stats *s = &run->stats;
	double span = s->last_time > s->first_time ? (double)(s->last_time - s->first_time) : 0;

	printf("trace bytes      %" PRIu64 " (%" PRIu64 " chunks)\n", s->bytes, s->chunks);
	printf("packets          %" PRIu64 "\n", run->packets);
	printf("instructions     %" PRIu64 "\n", s->insns);
	printf("blocks           %" PRIu64 "\n", s->blocks);
	printf("calls            %" PRIu64 "\n", s->calls);
	printf("returns          %" PRIu64 "\n", s->returns);
	if (run->jumps_ignored)
		printf("jumps            %" PRIu64 " that end tracing (no symbols: no other "
		       "jump can change a stack, so none is counted)\n",
		       s->jumps);
	else
		printf("jumps            %" PRIu64 "\n", s->jumps);
	printf("syscalls         %" PRIu64 "\n", s->syscalls);
	printf("interrupts       %" PRIu64 "\n", s->interrupts);
	printf("overflows        %" PRIu64 "\n", s->overflows);
	printf("errors           %" PRIu64 " (%" PRIu64 " for lack of code)\n", s->errors,
	       s->nomap);
	for (size_t i = 0; i < s->nr_sites; i++) {
		const struct rv_pt_error_site *e = &s->sites[i];

		printf("  at offset %#" PRIx64 ": %s", e->offset,
		       e->code ? rv_pt_strerror(e->code) : "overflow");
		if (e->ip)
			printf(" (ip %#" PRIx64 ")", e->ip);
		printf("\n");
	}
	if (s->errors + s->overflows > s->nr_sites)
		printf("  (%" PRIu64 " more not listed)\n",
		       s->errors + s->overflows - (uint64_t)s->nr_sites);
	printf("skipped bytes    %" PRIu64 "\n", s->skipped_bytes);
	printf("time covered     %.0f %s (first %" PRIu64 ", last %" PRIu64 ")\n", span,
	       run->opts->raw_pt ? "TSC ticks" : "ns", s->first_time, s->last_time);
	printf("decode time      %.3f s\n", run->seconds);
	printf("bytes per second %.0f\n", run->seconds > 0 ? (double)s->bytes / run->seconds : 0);
}

int rv_cmd_decode(const struct rv_options *opts)
{
	struct decode_run run = { .opts = opts };
	struct rv_error err = { 0 };
	struct rv_symbolizer_options so = { 0 };
	struct rv_pt_capture *capture = NULL;
	char *kallsyms = NULL;
	double started;
	int ret = 0;

	if (opts->include_kernel && geteuid() != 0) {
		rv_error_msg("--trace-include-kernel shows kernel addresses and code, which only "
			     "root may see: run rearview as root");
		return 1;
	}
	/* Kernel names come from the capture's own kallsyms: this machine's
	 * /proc/kallsyms describes another kernel, or the same one at another
	 * KASLR offset. */
	if (!opts->raw_pt && !opts->perf_script && opts->include_kernel)
		kallsyms = rv_pt_capture_probe_kallsyms(opts->argv[0]);
	so.kallsyms_path = kallsyms;
	run.functions =
		!opts->raw_pt && !opts->perf_script && rv_func_decoder_detect(opts->argv[0]);
	ret = rv_symbolizer_new(&run.symbolizer, &so, &err);
	if (!ret && !opts->raw_pt && !opts->perf_script && !run.functions) {
		struct rv_pt_capture_options co = {
			.path = opts->argv[0],
			.vmlinux = opts->vmlinux,
			.include_kernel = opts->include_kernel,
			.jobs = default_jobs(opts),
			.chunk_bytes = opts->chunk_bytes,
			.progress = isatty(STDERR_FILENO) && !opts->stats,
		};

		ret = rv_pt_capture_open(&capture, &co, run.symbolizer, &err);
	}
	if (!ret)
		ret = rv_trace_writer_open(&run.writer, opts->output, &err);
	if (!ret && opts->include_kernel)
		rv_trace_writer_set_private(run.writer);
	if (!ret)
		ret = rv_builder_new(&run.builder, run.symbolizer, run.writer, &err);
	started = now_seconds();
	if (!ret) {
		if (opts->raw_pt)
			ret = decode_raw(&run, &err);
		else if (opts->perf_script)
			ret = decode_perf_script(&run, &err);
		else if (run.functions)
			ret = rv_render_function_capture(opts->argv[0], run.symbolizer, run.builder,
							 &run.fn_stats, &err);
		else
			ret = decode_capture(&run, capture, &err);
	}
	if (!ret && !run.functions) /* the function decoder finishes its builder */
		ret = rv_builder_finish(run.builder, &err);
	run.seconds = now_seconds() - started;
	if (!ret)
		ret = rv_trace_writer_commit(run.writer, &err);
	if (!ret) {
		if (opts->stats && run.have_pt_stats)
			print_stats(&run);
		else if (opts->stats && run.functions)
			print_function_stats(&run);
		rv_render_summary(run.builder, run.writer, NULL);
	} else {
		if (run.writer)
			rv_trace_writer_abort(run.writer);
		rv_error_msg("%s", err.message);
	}
	rv_builder_free(run.builder);
	rv_trace_writer_free(run.writer);
	rv_pt_capture_free(capture);
	rv_symbolizer_free(run.symbolizer);
	rv_perf_script_free(run.perf_script);
	if (run.perf_script_in && run.perf_script_in != stdin)
		fclose(run.perf_script_in);
	free(kallsyms);
	return ret ? 1 : 0;
}
