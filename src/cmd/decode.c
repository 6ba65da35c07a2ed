/* decode.c: `rearview decode [OPTIONS] CAPTURE`: a capture (Intel PT, stack
 * samples or the function tracer's records, told apart by the decoder), a
 * raw PT dump with flat images (--raw-pt), or perf script branch text
 * (--perf-script) turned into a trace.
 *
 * Not here: decoding, call stacks or the summary (render/render.h); this
 * file turns the command line into a render request and reports errors.
 */
#define RV_LOG_DOMAIN "decode"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "record/flight_rescue.h"
#include "render/render.h"
#include "util/log.h"

int rv_cmd_decode(const struct rv_options *opts)
{
	struct rv_raw_pt_image images[RV_MAX_IMAGES];
	struct rv_render_options ro = {
		.decode = {
			.path = opts->raw_pt	  ? opts->raw_pt
				: opts->perf_script ? opts->perf_script
						    : opts->argv[0],
			.kind = opts->raw_pt	  ? RV_CAPTURE_RAW_PT
				: opts->perf_script ? RV_CAPTURE_PERF_SCRIPT
						    : RV_CAPTURE_AUTO,
			.include_kernel = opts->include_kernel,
			.vmlinux = opts->vmlinux,
			.jobs = opts->jobs,
			.chunk_bytes = opts->chunk_bytes,
			.progress = isatty(STDERR_FILENO) && !opts->stats,
			.count_packets = opts->stats,
			.images = images,
			.nr_images = opts->nr_images,
			.cpu = opts->cpu,
			.addr_filter = { opts->addr_filter[0], opts->addr_filter[1] },
		},
		.stats = opts->stats,
	};
	struct rv_trace_writer *writer = NULL;
	struct rv_error err = { 0 };
	int ret;

	if (opts->include_kernel && geteuid() != 0) {
		rv_error_msg("--trace-include-kernel shows kernel addresses and code, which only "
			     "root may see: run rearview as root");
		return 1;
	}
	/* a flight recorder's capture whose recorder was killed, made whole */
	if (ro.decode.kind == RV_CAPTURE_AUTO) {
		struct rv_flight_rescue_report rescue;
		char when[64] = "";

		if (rv_flight_rescue(ro.decode.path, &rescue, &err)) {
			rv_error_msg("%s", err.message);
			return 1;
		}
		if (rescue.rescued) {
			time_t seconds = (time_t)(rescue.flushed.realtime_ns / 1000000000ull);
			struct tm tm;

			if (localtime_r(&seconds, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
			rv_warn("the capture in '%s' was cut: its recorder was killed before it "
				"wrote it; its perf.data is rebuilt from what its flight recorder "
				"held (%llu records) and the sideband flushed until %s (last "
				"flush)",
				ro.decode.path, (unsigned long long)rescue.samples,
				when[0] ? when : "an unknown time");
		}
	}
	for (size_t i = 0; i < opts->nr_images; i++)
		images[i] = (struct rv_raw_pt_image){ .path = opts->images[i].path,
						      .addr = opts->images[i].addr };
	ret = rv_trace_writer_open(&writer, opts->output, &err);
	if (!ret && opts->include_kernel)
		rv_trace_writer_set_private(writer);
	if (!ret)
		ret = rv_render(&ro, writer, &err);
	if (ret)
		rv_error_msg("%s", err.message);
	rv_trace_writer_free(writer);
	return ret ? 1 : 0;
}
