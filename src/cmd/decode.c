/* decode.c: `rearview decode [OPTIONS] CAPTURE`: a capture (Intel PT, stack
 * samples or the function tracer's records, told apart by the decoder), a
 * raw PT dump with flat images (--raw-pt), or perf script branch text
 * (--perf-script) turned into a trace.
 *
 * Not here: decoding, call stacks or the summary (render/render.h); this
 * file turns the command line into a render request and reports errors.
 */
#define RV_LOG_DOMAIN "decode"
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "record/flight_rescue.h"
#include "render/render.h"
#include "util/leftovers.h"
#include "util/log.h"

/* The trace being written, for a stop signal to remove before rearview
 * ends (the command's one piece of global state: a signal handler's). */
static const char *volatile partial_trace;

static void remove_partial_trace(int sig)
{
	const char *path = partial_trace;

	if (path)
		unlink(path);
	raise(sig); /* SA_RESETHAND: the default action, once this returns */
}

/* Ctrl-C, SIGTERM and SIGHUP remove the unfinished trace, then end rearview
 * as they would have; a signal ignored by whoever started us stays so. */
static void catch_stop_signals(void)
{
	static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = remove_partial_trace;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		struct sigaction before;

		if (!sigaction(signals[i], NULL, &before) && before.sa_handler != SIG_IGN)
			sigaction(signals[i], &sa, NULL);
	}
}

/* Whether others cannot read path (a file: its mode; a directory: its mode
 * and that of the perf.data or data it holds). "-" is standard input. */
static bool unreadable_by_others(const char *path)
{
	static const char *const inside[] = { "perf.data", "data", "kcore_dir" };
	struct stat st;

	if (!strcmp(path, "-"))
		return !fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode) && !(st.st_mode & S_IROTH);
	if (stat(path, &st))
		return false; /* the decoder says what is wrong with it */
	if (!S_ISDIR(st.st_mode))
		return !(st.st_mode & S_IROTH);
	if ((st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))
		return true;
	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		char file[4200];
		struct stat in;

		snprintf(file, sizeof(file), "%s/%s", path, inside[i]);
		if (!stat(file, &in) && !(in.st_mode & S_IROTH))
			return true;
	}
	return false;
}

/* The trace is private (0600) when it shows what others could not read:
 * kernel data, or a capture (or raw PT, or its images) they cannot read. */
static bool trace_is_private(const struct rv_options *opts, const char *input)
{
	if (opts->include_kernel || unreadable_by_others(input))
		return true;
	for (size_t i = 0; i < opts->nr_images; i++)
		if (unreadable_by_others(opts->images[i].path))
			return true;
	return false;
}

/* Whether path lies in a temporary capture directory ($TMPDIR/rearview-*):
 * one a killed run left, which the sweep would remove before it is read. */
static bool in_temporary_capture(const char *path)
{
	char real[PATH_MAX], tmp[PATH_MAX];
	size_t n;

	if (!realpath(path, real) || !realpath(rv_leftovers_tmpdir(), tmp))
		return false;
	n = strlen(tmp);
	return !strncmp(real, tmp, n) && !strncmp(real + n, "/rearview-", 10);
}

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
			.decoder = opts->decoder,
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
	sigset_t stop_signals, before;
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
	if (!in_temporary_capture(ro.decode.path))
		rv_leftovers_sweep(opts->output, rv_leftovers_note_removed, NULL);
	catch_stop_signals();
	/* held back until the handler knows the file the writer makes */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGHUP);
	sigprocmask(SIG_BLOCK, &stop_signals, &before);
	ret = rv_trace_writer_open(&writer, opts->output, &err);
	if (!ret)
		partial_trace = rv_trace_writer_temp_path(writer);
	sigprocmask(SIG_SETMASK, &before, NULL);
	if (!ret && trace_is_private(opts, ro.decode.path))
		rv_trace_writer_set_private(writer);
	if (!ret)
		ret = rv_render(&ro, writer, &err);
	if (ret)
		rv_error_msg("%s", err.message);
	partial_trace = NULL;
	rv_trace_writer_free(writer);
	return ret ? 1 : 0;
}
