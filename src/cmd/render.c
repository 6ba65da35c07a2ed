/* render.c: capture -> decoder -> builder -> writer, then the summary; see render.h. */
#define RV_LOG_DOMAIN "render"
#include "cmd/render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "decode/func_decoder.h"
#include "decode/pt_capture.h"
#include "decode/sample_decoder.h"
#include "symbolize/symbolizer.h"
#include "trace/builder.h"
#include "util/log.h"

#define TOP_FUNCTIONS 5

static void human_bytes(uint64_t bytes, char *out, size_t size)
{
	if (bytes >= 10ull << 20)
		snprintf(out, size, "%.0f MiB", bytes / 1048576.0);
	else if (bytes >= 1ull << 20)
		snprintf(out, size, "%.1f MiB", bytes / 1048576.0);
	else if (bytes >= 1ull << 10)
		snprintf(out, size, "%.1f KiB", bytes / 1024.0);
	else
		snprintf(out, size, "%llu bytes", (unsigned long long)bytes);
}

static void human_time(uint64_t ns, char *out, size_t size)
{
	if (ns >= 10000000000ull)
		snprintf(out, size, "%.1f s", ns / 1e9);
	else if (ns >= 1000000000ull)
		snprintf(out, size, "%.3f s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(out, size, "%.1f ms", ns / 1e6);
	else
		snprintf(out, size, "%.1f us", ns / 1e3);
}

enum trace_kind {
	TRACE_SAMPLES,
	TRACE_BRANCHES,
	TRACE_EXACT_CALLS,
};

static void print_summary(const struct rv_builder *b, const struct rv_trace_writer *w,
			  const struct rv_render_options *ro, enum trace_kind kind);

void rv_render_summary(const struct rv_builder *b, const struct rv_trace_writer *w,
		       const struct rv_render_options *ro)
{
	struct rv_builder_stats bs;
	enum trace_kind kind;

	rv_builder_stats(b, &bs);
	if (bs.exact_events)
		kind = TRACE_EXACT_CALLS;
	else if (ro && (bs.samples || !bs.calls))
		kind = TRACE_SAMPLES;
	else
		kind = TRACE_BRANCHES;
	print_summary(b, w, ro, kind);
}

static void print_summary(const struct rv_builder *b, const struct rv_trace_writer *w,
			  const struct rv_render_options *ro, enum trace_kind kind)
{
	struct rv_builder_stats bs;
	struct rv_trace_writer_stats ws;
	struct rv_function_time top[TOP_FUNCTIONS];
	size_t nr_top = rv_builder_top_functions(b, top, TOP_FUNCTIONS);
	uint64_t covered, lost;
	char span_text[32], size_text[32];
	char cwd[4096];
	const char *path = rv_trace_writer_path(w);

	rv_builder_stats(b, &bs);
	rv_trace_writer_stats(w, &ws);
	covered = bs.last_time > bs.first_time ? bs.last_time - bs.first_time : 0;
	human_time(covered, span_text, sizeof(span_text));
	lost = ro && ro->lost_while_recording > bs.lost ? ro->lost_while_recording : bs.lost;
	if (kind == TRACE_EXACT_CALLS) {
		fprintf(stderr, "rearview: the trace covers %s: %llu calls", span_text,
			(unsigned long long)bs.calls);
		if (bs.kernel_spans)
			fprintf(stderr, ", %llu kernel spans", (unsigned long long)bs.kernel_spans);
		if (bs.instants)
			fprintf(stderr, ", %llu page faults", (unsigned long long)bs.instants);
		if (ro && ro->recording_note)
			fprintf(stderr, " (%s)", ro->recording_note);
		fprintf(stderr, ", %llu lost, %llu thread%s\n", (unsigned long long)lost,
			(unsigned long long)bs.threads, bs.threads == 1 ? "" : "s");
		if (bs.inferred)
			rv_debug("%llu spans began before tracing did (inferred_start_time)",
				 (unsigned long long)bs.inferred);
		if (bs.unwinds)
			rv_debug("%llu calls ended without their own exit (longjmp, exceptions, "
				 "lost records)",
				 (unsigned long long)bs.unwinds);
	} else if (kind == TRACE_SAMPLES) {
		fprintf(stderr, "rearview: the trace covers %s: %llu samples", span_text,
			(unsigned long long)bs.samples);
		if (ro && ro->recording_note)
			fprintf(stderr, " (%s)", ro->recording_note);
		fprintf(stderr, ", %llu lost, %llu thread%s\n", (unsigned long long)lost,
			(unsigned long long)bs.threads, bs.threads == 1 ? "" : "s");
	} else {
		fprintf(stderr,
			"rearview: the trace covers %s: %llu calls, %llu returns, %llu "
			"thread%s",
			span_text, (unsigned long long)bs.calls, (unsigned long long)bs.returns,
			(unsigned long long)bs.threads, bs.threads == 1 ? "" : "s");
		if (bs.errors)
			fprintf(stderr,
				", %llu gap%s (decode errors or overflows, marked in the "
				"trace)",
				(unsigned long long)bs.errors, bs.errors == 1 ? "" : "s");
		fprintf(stderr, "\n");
	}
	if (kind == TRACE_EXACT_CALLS && bs.exact_events == 0 && ro)
		fprintf(stderr, "rearview: no calls: none of the traced functions ran while it was "
				"recorded (see which were probed with -v; with --filter, no window "
				"opened)\n");
	else if (bs.samples == 0 && bs.calls == 0 && ro)
		fprintf(stderr, "rearview: no samples: the target did not run on a CPU while it "
				"was recorded (a sleeping or blocked process gives none; kernel "
				"threads need --trace-include-kernel)\n");
	if (nr_top) {
		fprintf(stderr, "rearview: top functions by self time:\n");
		for (size_t i = 0; i < nr_top; i++) {
			char t[32];

			human_time(top[i].self_ns, t, sizeof(t));
			fprintf(stderr, "  %5.1f%%  %10s  %s\n",
				bs.self_ns ? 100.0 * (double)top[i].self_ns / (double)bs.self_ns
					   : 0.0,
				t, top[i].name);
		}
	}
	human_bytes(ws.bytes, size_text, sizeof(size_text));
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)))
		fprintf(stderr, "rearview: wrote %s/%s (%s, %llu spans)\n", cwd, path, size_text,
			(unsigned long long)ws.spans);
	else
		fprintf(stderr, "rearview: wrote %s (%s, %llu spans)\n", path, size_text,
			(unsigned long long)ws.spans);
	fprintf(stderr, "rearview: open it in the Perfetto UI: https://ui.perfetto.dev, then "
			"\"Open trace file\"\n");
}

int rv_render(const struct rv_render_options *ro, struct rv_trace_writer *writer,
	      struct rv_error *err)
{
	struct rv_symbolizer_options so = {
		.kallsyms_path = ro->include_kernel ? "/proc/kallsyms" : NULL,
		.want_lines = false,
	};
	struct rv_symbolizer *symbolizer = NULL;
	struct rv_sample_decoder *decoder = NULL;
	struct rv_builder *builder = NULL;
	bool functions = rv_func_decoder_detect(ro->capture_path);
	struct rv_event ev;
	int ret;

	ret = rv_symbolizer_new(&symbolizer, &so, err);
	if (!ret && functions) {
		ret = rv_builder_new(&builder, symbolizer, writer, err);
		if (!ret)
			ret = rv_render_function_capture(ro->capture_path, symbolizer, builder,
							 NULL, err);
		if (!ret)
			ret = rv_trace_writer_commit(writer, err);
		if (!ret)
			print_summary(builder, writer, ro, TRACE_EXACT_CALLS);
		else
			rv_trace_writer_abort(writer);
		rv_builder_free(builder);
		rv_symbolizer_free(symbolizer);
		return ret;
	}
	if (!ret)
		ret = rv_sample_decoder_open(&decoder, ro->capture_path, symbolizer, err);
	if (!ret)
		ret = rv_builder_new(&builder, symbolizer, writer, err);
	if (!ret) {
		/* --filter windows begin before their first sample */
		uint64_t first = rv_sample_decoder_first_time(ro->capture_path);

		if (first)
			rv_builder_set_base(builder, first);
	}
	while (!ret) {
		int got = rv_sample_decoder_next(decoder, &ev, err);

		if (got == 0)
			break;
		if (got < 0) {
			/* A damaged capture: keep what came before the damage, and say so. */
			rv_warn("%s; the trace holds what was read before that point",
				err->message);
			rv_error_clear(err);
			break;
		}
		ret = rv_builder_add(builder, &ev, err);
	}
	if (!ret)
		ret = rv_builder_finish(builder, err);
	if (!ret)
		ret = rv_trace_writer_commit(writer, err);
	if (!ret) {
		struct rv_sample_decoder_stats ds;

		rv_sample_decoder_stats(decoder, &ds);
		{
			struct rv_builder_stats bs;

			rv_builder_stats(builder, &bs);
			if (bs.skipped_callers)
				rv_debug("%llu samples in a prologue or at a return had the caller "
					 "their frame-pointer walk skipped restored",
					 (unsigned long long)bs.skipped_callers);
			if (bs.grafted)
				rv_debug("%llu stacks cut short by unwinding were completed from "
					 "the stack before them",
					 (unsigned long long)bs.grafted);
			if (bs.late_samples)
				rv_debug("%llu samples came after later ones of their thread, and "
					 "were taken at its last time",
					 (unsigned long long)bs.late_samples);
		}
		if (ds.unwind_failures)
			rv_debug("%llu of %llu samples could not be unwound past their IP",
				 (unsigned long long)ds.unwind_failures,
				 (unsigned long long)ds.samples);
		rv_render_summary(builder, writer, ro);
	} else {
		rv_trace_writer_abort(writer);
	}
	rv_builder_free(builder);
	rv_sample_decoder_free(decoder);
	rv_symbolizer_free(symbolizer);
	return ret;
}

int rv_render_function_capture(const char *capture_path, struct rv_symbolizer *symbolizer,
			       struct rv_builder *builder, struct rv_func_decoder_stats *stats,
			       struct rv_error *err)
{
	struct rv_func_decoder *decoder = NULL;
	struct rv_func_decoder_stats ds;
	struct rv_event ev;
	/* --filter windows begin before their first record */
	uint64_t first = rv_func_decoder_first_time(capture_path);
	int ret = rv_func_decoder_open(&decoder, capture_path, symbolizer, err);

	if (!ret && first)
		rv_builder_set_base(builder, first);
	while (!ret) {
		int got = rv_func_decoder_next(decoder, &ev, err);

		if (got == 0)
			break;
		if (got < 0) {
			/* A damaged capture: keep what came before the damage, and say so. */
			rv_warn("%s; the trace holds what was read before that point",
				err->message);
			rv_error_clear(err);
			break;
		}
		ret = rv_builder_add(builder, &ev, err);
	}
	if (decoder) {
		rv_func_decoder_stats(decoder, &ds);
		if (stats)
			*stats = ds;
		if (ds.unknown_types)
			rv_warn("%" PRIu64 " function records of a type this rearview does not "
				"know were skipped; decode with the rearview that recorded them",
				ds.unknown_types);
		if (ds.outside_windows)
			rv_debug("%" PRIu64 " function records made outside every --filter "
				 "window were skipped",
				 ds.outside_windows);
		if (ds.other_samples)
			rv_debug("%" PRIu64 " samples of other events were skipped",
				 ds.other_samples);
	}
	/* Open and held spans point to the decoder's names ("[irq 24]"): the
	 * builder finishes while they live. */
	if (!ret)
		ret = rv_builder_finish(builder, err);
	rv_func_decoder_free(decoder);
	return ret;
}

static int to_builder(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	return rv_builder_add(ctx, ev, err);
}

int rv_render_pt_capture(struct rv_pt_capture *capture, struct rv_builder *builder,
			 struct rv_pt_stats *stats, uint64_t *packets, struct rv_error *err)
{
	const struct rv_pt_missing *missing;
	struct rv_pt_capture_info info;
	size_t nr_missing;
	int ret;

	rv_pt_capture_info(capture, &info);
	if (info.first_time)
		rv_builder_set_base(builder, info.first_time);
	if (packets)
		*packets = rv_pt_capture_count_packets(capture);
	ret = rv_pt_capture_decode(capture, to_builder, builder, stats, err);
	if (ret)
		return ret;
	if (info.windows)
		rv_note("--filter windows applied while decoding: %" PRIu64
			" window%s, the kernel could not pause Intel PT",
			info.windows, info.windows == 1 ? "" : "s");
	if (rv_pt_capture_damage(capture))
		rv_warn("%s; the trace holds what was decoded before that point",
			rv_pt_capture_damage(capture));
	nr_missing = rv_pt_capture_missing(capture, &missing);
	for (size_t i = 0; i < nr_missing; i++) {
		const struct rv_pt_missing *m = &missing[i];

		rv_warn("%s is missing: %" PRIu64 " decode error%s and %" PRIu64
			" bytes of trace left undecoded because of it",
			m->path, m->errors, m->errors == 1 ? "" : "s", m->skipped_bytes);
	}
	if (nr_missing)
		rv_warn("the trace has gaps where that code ran; decode on the machine that "
			"recorded the capture, or copy the files to the same paths");
	return 0;
}
