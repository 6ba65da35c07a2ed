/* render.c: capture -> decoder -> builder -> writer, then what it found and
 * the summary; see render.h. */
#define RV_LOG_DOMAIN "render"
#include "render/render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode/decoder.h"
#include "render/probe_summary.h"
#include "render/short_name.h"
#include "symbolize/symbolizer.h"
#include "trace/builder.h"
#include "util/log.h"
#include "util/count_text.h"

#define TOP_FUNCTIONS 5
/* A top function's name as the summary shows it (short_name.h). */
#define SHORT_NAME_BYTES 160
/* The most-called functions the probe summary looks at for its hints. */
#define MOST_CALLED 8

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

static enum trace_kind trace_kind(enum rv_capture_kind kind)
{
	switch (kind) {
	case RV_CAPTURE_SAMPLES:
		return TRACE_SAMPLES;
	case RV_CAPTURE_FUNCTIONS:
		return TRACE_EXACT_CALLS;
	default:
		return TRACE_BRANCHES;
	}
}

/* perf script text that held sampled stacks and no branches is a sampling
 * trace */
static enum trace_kind report_kind(const struct rv_decoder_report *r)
{
	if (r->kind == RV_CAPTURE_PERF_SCRIPT && !r->perf_script.branches && r->perf_script.samples)
		return TRACE_SAMPLES;
	return trace_kind(r->kind);
}

static void print_probe_cost(const struct rv_builder *b, const struct rv_render_options *ro,
			     const struct rv_builder_stats *bs, uint64_t covered)
{
	struct rv_top_function most[MOST_CALLED];
	struct rv_probe_summary ps = {
		.calls = ro->probed_calls ? ro->probed_calls : bs->calls,
		.ns_per_call = ro->probe_ns_per_call,
		.return_sites = ro->probe_exits_at_sites,
		.recorded_ns = ro->recording_ns ? ro->recording_ns : covered,
		.covered_ns = covered,
		.threads = bs->threads,
		.most_called = most,
		.nr_most_called = rv_builder_most_called(b, most, MOST_CALLED),
	};

	rv_probe_summary_print(stderr, &ps);
}

/* The processes in the trace when there are several, and the children not
 * recorded: "3 processes: make [4100], cc1 [4101], as [4102]". */
static void summary_processes(const struct rv_builder *b, const struct rv_render_options *ro)
{
	enum { SHOWN = 8 };
	struct rv_builder_process p[SHOWN];
	size_t n = rv_builder_processes(b, p, SHOWN);

	if (n > 1) {
		fprintf(stderr, "rearview: %zu processes: ", n);
		for (size_t i = 0; i < n && i < SHOWN; i++)
			fprintf(stderr, "%s%s [%u]", i ? ", " : "", p[i].name, p[i].pid);
		if (n > SHOWN)
			fprintf(stderr, " and %zu more", n - SHOWN);
		fprintf(stderr, "\n");
	}
	if (ro->children_not_recorded)
		fprintf(stderr, "rearview: %llu child process%s not recorded%s%s%s\n",
			(unsigned long long)ro->children_not_recorded,
			ro->children_not_recorded == 1 ? "" : "es",
			ro->children_not_recorded_why ? " (" : "",
			ro->children_not_recorded_why ? ro->children_not_recorded_why : "",
			ro->children_not_recorded_why ? ")" : "");
}

/* A sampled recording: what the trace holds of it (the flight recorder keeps
 * the last of it), and the stacks it could not show whole (also in a
 * decode of a kept capture, which shows them the same). */
static void print_coverage(const struct rv_render_options *ro, const struct rv_builder_stats *bs,
			   uint64_t covered)
{
	char held[32], recorded[32], count[32];

	/* what the capture shows (a decode of a kept one says it too) */
	if (ro->recorded && ro->recording_ns) {
		human_time(covered, held, sizeof(held));
		human_time(ro->recording_ns, recorded, sizeof(recorded));
		if (ro->aged_out)
			fprintf(stderr,
				"rearview: the trace holds the last %s of %s recorded (%s older "
				"samples aged out of the flight recorder); --snapshot-size for "
				"more\n",
				held, recorded, rv_count_text(ro->aged_out, count, sizeof(count)));
		else
			fprintf(stderr, "rearview: the trace holds all %s recorded\n", recorded);
	}
	if (bs->stacks_cut)
		fprintf(stderr,
			"rearview: %s samples had stacks deeper than the copy (drawn under "
			"[stack cut]); --callgraph-mode dwarf,SIZE copies more\n",
			rv_count_text(bs->stacks_cut, count, sizeof(count)));
	if (bs->stacks_stopped)
		fprintf(stderr,
			"rearview: %s samples' stacks could not be unwound past a function "
			"without call frame information (drawn under [unwinding stopped])\n",
			rv_count_text(bs->stacks_stopped, count, sizeof(count)));
	if (ro->not_unwound)
		fprintf(stderr,
			"rearview: %s samples show their leaf alone: the unwinder fell behind "
			"(lower --timer-resolution for whole stacks)\n",
			rv_count_text(ro->not_unwound, count, sizeof(count)));
}

/* ---- the summary, a function a line ---- */

/* How many of the skipped functions' names a reason's line gives. */
#define SKIPPED_NAMES 3

/* "the trace covers ...": its span, and what it holds. */
static void summary_covers(const struct rv_builder_stats *bs, const struct rv_render_options *ro,
			   enum trace_kind kind, uint64_t covered)
{
	uint64_t lost = ro->lost_while_recording > bs->lost ? ro->lost_while_recording : bs->lost;
	char span_text[32];

	human_time(covered, span_text, sizeof(span_text));
	if (kind == TRACE_EXACT_CALLS) {
		char calls[32];

		fprintf(stderr, "rearview: the trace covers %s: %s call%s", span_text,
			rv_count_text(bs->calls, calls, sizeof(calls)), bs->calls == 1 ? "" : "s");
		if (bs->kernel_spans)
			fprintf(stderr, ", %llu kernel spans",
				(unsigned long long)bs->kernel_spans);
		if (bs->instants)
			fprintf(stderr, ", %llu page faults", (unsigned long long)bs->instants);
		if (ro->recording_note)
			fprintf(stderr, " (%s)", ro->recording_note);
		fprintf(stderr, ", %llu lost, %llu thread%s\n", (unsigned long long)lost,
			(unsigned long long)bs->threads, bs->threads == 1 ? "" : "s");
		if (bs->inferred)
			rv_debug("%llu spans began before tracing did (inferred_start_time)",
				 (unsigned long long)bs->inferred);
		if (bs->unwinds)
			rv_debug("%llu calls ended without their own exit (longjmp, exceptions, "
				 "lost records)",
				 (unsigned long long)bs->unwinds);
	} else if (kind == TRACE_SAMPLES) {
		fprintf(stderr, "rearview: the trace covers %s: %llu samples", span_text,
			(unsigned long long)bs->samples);
		if (ro->recording_note)
			fprintf(stderr, " (%s)", ro->recording_note);
		fprintf(stderr, ", %llu lost, %llu thread%s\n", (unsigned long long)lost,
			(unsigned long long)bs->threads, bs->threads == 1 ? "" : "s");
		print_coverage(ro, bs, covered);
	} else {
		fprintf(stderr,
			"rearview: the trace covers %s: %llu calls, %llu returns, %llu "
			"thread%s",
			span_text, (unsigned long long)bs->calls, (unsigned long long)bs->returns,
			(unsigned long long)bs->threads, bs->threads == 1 ? "" : "s");
		if (bs->errors)
			fprintf(stderr,
				", %llu gap%s (decode errors or overflows, marked in the "
				"trace)",
				(unsigned long long)bs->errors, bs->errors == 1 ? "" : "s");
		fprintf(stderr, "\n");
	}
}

/* A recording that holds nothing says why that may be. */
static void summary_nothing(const struct rv_builder_stats *bs, const struct rv_render_options *ro,
			    enum trace_kind kind)
{
	if (kind == TRACE_EXACT_CALLS && bs->exact_events == 0 && ro->recorded)
		fprintf(stderr, "rearview: no calls: none of the traced functions ran while it was "
				"recorded (see which were probed with -v; with --filter, no window "
				"opened)\n");
	else if (kind != TRACE_EXACT_CALLS && bs->samples == 0 && bs->calls == 0 && ro->recorded)
		fprintf(stderr, "rearview: no samples: the target did not run on a CPU while it "
				"was recorded (a sleeping or blocked process gives none; kernel "
				"threads need --trace-include-kernel)\n");
}

/* Without --multi-thread only each process's main thread is recorded: the
 * others the capture names (COMM, FORK) were left out. */
static void summary_threads_left_out(const struct rv_builder_stats *bs,
				     const struct rv_render_options *ro)
{
	if (!ro->main_thread_only || !bs->untracked_threads)
		return;
	fprintf(stderr,
		"rearview: %llu other thread%s not recorded: --multi-thread records every "
		"thread\n",
		(unsigned long long)bs->untracked_threads, bs->untracked_threads == 1 ? "" : "s");
}

/* The functions --functions matched but did not probe: their count, then a
 * line per reason with a few of their names. */
static void summary_skipped(const struct rv_render_options *ro)
{
	if (!ro->nr_skipped)
		return;
	fprintf(stderr, "rearview: %zu matching function%s not probed%s:\n", ro->nr_skipped,
		ro->nr_skipped == 1 ? "" : "s",
		ro->nr_skipped > SKIPPED_NAMES ? " (-v lists them)" : "");
	for (size_t i = 0; i < ro->nr_skipped; i++) {
		const char *reason = ro->skipped[i].reason;
		size_t named = 0, more = 0;
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(ro->skipped[j].reason, reason);
		if (seen)
			continue; /* its reason's line was printed */
		fprintf(stderr, "  ");
		for (size_t j = i; j < ro->nr_skipped; j++) {
			const struct rv_render_skip *k = &ro->skipped[j];

			if (strcmp(k->reason, reason))
				continue;
			if (named == SKIPPED_NAMES) {
				more++;
				continue;
			}
			fprintf(stderr, "%s%s", named ? ", " : "", k->name);
			if (k->note)
				fprintf(stderr, " (%s)", k->note);
			named++;
		}
		if (more)
			fprintf(stderr, " and %zu more", more);
		fprintf(stderr, ": %s\n", reason);
	}
}

/* The functions with the most self time; names shortened, kernel code
 * marked. */
static void summary_top_functions(const struct rv_builder *b, const struct rv_builder_stats *bs,
				  const struct rv_render_options *ro, enum trace_kind kind)
{
	struct rv_top_function top[TOP_FUNCTIONS];
	size_t nr_top = rv_builder_top_functions(b, top, TOP_FUNCTIONS);

	if (!nr_top)
		return;
	fprintf(stderr, "rearview: top functions by self time%s, CPU time only:\n",
		kind == TRACE_EXACT_CALLS && ro->probe_ns_per_call > 0
			? " (their probes' cost included)"
			: "");
	for (size_t i = 0; i < nr_top; i++) {
		char t[32], name[SHORT_NAME_BYTES];

		human_time(top[i].self_ns, t, sizeof(t));
		fprintf(stderr, "  %5.1f%%  %10s  %s%s\n",
			bs->self_ns ? 100.0 * (double)top[i].self_ns / (double)bs->self_ns : 0.0, t,
			rv_short_name(top[i].name, name, sizeof(name)),
			top[i].kernel ? " [k]" : "");
	}
}

/* The --events samples drawn, by event: "page-faults 1,024". */
static void summary_extra_events(const struct rv_builder *b)
{
	struct rv_builder_extra_count counts[RV_BUILDER_MAX_EXTRA];
	size_t n = rv_builder_extra_counts(b, counts, RV_BUILDER_MAX_EXTRA);

	if (!n)
		return;
	fprintf(stderr, "rearview: events (instants on the threads that took them): ");
	for (size_t i = 0; i < n && i < RV_BUILDER_MAX_EXTRA; i++) {
		char samples[32], events[32];

		fprintf(stderr, "%s%s %s", i ? ", " : "", counts[i].name,
			rv_count_text(counts[i].samples, samples, sizeof(samples)));
		if (counts[i].events != counts[i].samples)
			fprintf(stderr, " (standing for %s)",
				rv_count_text(counts[i].events, events, sizeof(events)));
	}
	fprintf(stderr, "\n");
}

/* Where the trace is, and how to open it. */
static void summary_written(const struct rv_trace_writer *w)
{
	struct rv_trace_writer_stats ws;
	const char *path = rv_trace_writer_path(w);
	char size_text[32], cwd[4096];

	rv_trace_writer_stats(w, &ws);
	/* the file's size, compressed as it is */
	human_bytes(ws.file_bytes, size_text, sizeof(size_text));
	if (!strcmp(path, RV_TRACE_STDOUT)) {
		fprintf(stderr, "rearview: wrote the trace to standard output (%s, %llu spans)\n",
			size_text, (unsigned long long)ws.spans);
		return;
	}
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)))
		fprintf(stderr, "rearview: wrote %s/%s (%s, %llu spans)\n", cwd, path, size_text,
			(unsigned long long)ws.spans);
	else
		fprintf(stderr, "rearview: wrote %s (%s, %llu spans)\n", path, size_text,
			(unsigned long long)ws.spans);
	fprintf(stderr, "rearview: open it in the Perfetto UI: https://ui.perfetto.dev, then "
			"\"Open trace file\"\n");
	if (strlen(path) > 4 && !strcmp(path + strlen(path) - 4, ".zst"))
		fprintf(stderr, "rearview: (a Perfetto built without zstd refuses a .zst file: "
				"zstd -d it first, or write .gz)\n");
}

static void print_summary(const struct rv_builder *b, const struct rv_trace_writer *w,
			  const struct rv_render_options *ro, enum trace_kind kind)
{
	struct rv_builder_stats bs;
	uint64_t covered;

	rv_builder_stats(b, &bs);
	covered = bs.last_time > bs.first_time ? bs.last_time - bs.first_time : 0;
	summary_covers(&bs, ro, kind, covered);
	summary_processes(b, ro);
	summary_nothing(&bs, ro, kind);
	summary_threads_left_out(&bs, ro);
	summary_skipped(ro);
	if (kind == TRACE_EXACT_CALLS && ro->recorded)
		print_probe_cost(b, ro, &bs, covered);
	summary_top_functions(b, &bs, ro, kind);
	summary_extra_events(b);
	summary_written(w);
}

/* ---- what decoding found ---- */

/* What perf script text held that the trace does not show, or shows
 * otherwise than the text says: said whether a trace was written or not. */
static void warn_perf_script(const struct rv_perf_script_stats *s)
{
	char where[256];
	size_t used = 0;

	for (uint64_t i = 0; i < s->bad && i < RV_PERF_SCRIPT_NOTED && used < sizeof(where); i++)
		used += (size_t)snprintf(where + used, sizeof(where) - used, "%sline %" PRIu64,
					 i ? ", " : "", s->bad_at[i].line);
	if (s->bad) {
		rv_warn("%s: %" PRIu64 " line%s could not be read and %s skipped (%s%s)", s->name,
			s->bad, s->bad == 1 ? "" : "s", s->bad == 1 ? "was" : "were", where,
			s->bad > RV_PERF_SCRIPT_NOTED ? ", ..." : "");
		for (uint64_t i = 0; i < s->bad && i < RV_PERF_SCRIPT_NOTED; i++)
			rv_warn("  line %" PRIu64 ": expected %s", s->bad_at[i].line,
				s->bad_at[i].expected);
	}
	if (s->cut)
		rv_warn("%s: the last line (%" PRIu64 ") ends without a newline, cut short, and "
			"was left out; was the text cut (a pipe closed early)?",
			s->name, s->cut_line);
	used = 0;
	where[0] = '\0';
	for (uint64_t i = 0; i < s->backwards && i < RV_PERF_SCRIPT_NOTED && used < sizeof(where);
	     i++)
		used += (size_t)snprintf(where + used, sizeof(where) - used, "%s%" PRIu64,
					 i ? ", " : "", s->backwards_at[i]);
	if (s->backwards)
		rv_warn("%s: time goes back %" PRIu64 " time%s on a thread (line%s %s%s): the "
			"text is not in perf script's order. Each such event was taken at its "
			"thread's latest time; %s. Give perf script's output as it printed it",
			s->name, s->backwards, s->backwards == 1 ? "" : "s",
			s->backwards == 1 ? "" : "s", where,
			s->backwards > RV_PERF_SCRIPT_NOTED ? ", ..." : "",
			s->branches ? "branches out of order give wrong call stacks"
				    : "the stacks before it last until then");
	if (s->bad_offsets)
		rv_debug("%" PRIu64 " symbol offsets were larger than their address (a perf "
			 "bug): those functions are told apart by name only",
			 s->bad_offsets);
	if (s->untimed_errors)
		rv_debug("%" PRIu64 " trace errors without a time took the time of the line "
			 "before them",
			 s->untimed_errors);
	rv_debug("%" PRIu64 " lines: %" PRIu64 " branches, %" PRIu64 " errors, %" PRIu64
		 " samples (%" PRIu64 " frames), %" PRIu64 " other events, %" PRIu64
		 " not drawn, %" PRIu64 " blank or comments, %" PRIu64 " unreadable",
		 s->lines, s->branches, s->errors, s->samples, s->frames, s->extra, s->not_drawn,
		 s->skipped, s->bad + s->cut);
}

static void warn_findings(const struct rv_decoder_report *r, const struct rv_builder *b)
{
	struct rv_builder_stats bs;
	bool user_missing = false;

	if (r->windows_applied)
		rv_note("--filter windows applied while decoding: %" PRIu64
			" window%s, the kernel could not pause Intel PT",
			r->windows_applied, r->windows_applied == 1 ? "" : "s");
	if (r->damage)
		rv_warn("%s; the trace holds what was %s before that point", r->damage,
			r->kind == RV_CAPTURE_PT ? "decoded" : "read");
	/* each image whose absence cost trace, once, with why; those that cost
	 * nothing are not news */
	for (size_t i = 0; i < r->nr_missing; i++) {
		const struct rv_pt_missing *m = &r->missing[i];

		if (!m->errors && !m->skipped_bytes)
			continue;
		rv_warn("%s is missing: %" PRIu64 " decode error%s and %" PRIu64
			" bytes of trace left undecoded because of it: %s",
			m->path, m->errors, m->errors == 1 ? "" : "s", m->skipped_bytes,
			m->reason ? m->reason : "its code could not be read");
		user_missing |= !m->kernel;
	}
	if (user_missing)
		rv_warn("the trace has gaps where that code ran; decode on the machine that "
			"recorded the capture, or copy the files to the same paths");
	if (r->undecoded)
		rv_warn("%s", r->undecoded);
	if (r->kernel_names)
		rv_note("kernel names: %s", r->kernel_names);
	if (r->kind == RV_CAPTURE_FUNCTIONS) {
		const struct rv_fn_decoder_stats *ds = &r->functions;

		if (ds->unknown_types)
			rv_warn("%" PRIu64 " function records of a type this rearview does not "
				"know were skipped; decode with the rearview that recorded them",
				ds->unknown_types);
		if (ds->outside_windows)
			rv_debug("%" PRIu64 " function records made outside every --filter "
				 "window were skipped",
				 ds->outside_windows);
		if (ds->other_samples)
			rv_debug("%" PRIu64 " samples of other events were skipped",
				 ds->other_samples);
	}
	if (r->kind == RV_CAPTURE_PERF_SCRIPT)
		warn_perf_script(&r->perf_script);
	if (r->kind != RV_CAPTURE_SAMPLES)
		return;
	rv_builder_stats(b, &bs);
	if (bs.skipped_callers)
		rv_debug("%llu samples in a prologue or at a return: the caller their "
			 "frame-pointer walk skipped was put back",
			 (unsigned long long)bs.skipped_callers);
	if (bs.grafted)
		rv_debug("%llu stacks cut short by unwinding were completed from the stack "
			 "before them",
			 (unsigned long long)bs.grafted);
	if (bs.late_samples)
		rv_debug("%llu samples came after later ones of their thread, and were taken at "
			 "its last time",
			 (unsigned long long)bs.late_samples);
	if (r->samples.unwind_failures)
		rv_debug("%llu of %llu samples could not be unwound past their IP",
			 (unsigned long long)r->samples.unwind_failures,
			 (unsigned long long)r->samples.samples);
}

/* ---- --stats ---- */

static void print_function_stats(const struct rv_fn_decoder_stats *s, double seconds)
{
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
	printf("decode time      %.3f s\n", seconds);
}

static double percent_of(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

const char *rv_pt_walkers_text(const struct rv_pt_stats *s, enum rv_pt_decoder_choice decoder,
			       char *out, size_t size)
{
	char fast[32], libipt[32], handed[64] = "";

	human_bytes(s->fast_bytes, fast, sizeof(fast));
	human_bytes(s->libipt_bytes, libipt, sizeof(libipt));
	/* (said as counted, should the fast walker have run all the same) */
	if (decoder == RV_PT_DECODER_LIBIPT && !s->fast_bytes) {
		snprintf(out, size, "libipt's block decoder %s (all of it: --decoder libipt)",
			 libipt);
		return out;
	}
	if (s->handoffs)
		snprintf(handed, sizeof(handed), ", %" PRIu64 " chunk%s handed over", s->handoffs,
			 s->handoffs == 1 ? "" : "s");
	snprintf(out, size, "fast walker %s (%.1f%%), libipt's block decoder %s (%.1f%%%s)", fast,
		 percent_of(s->fast_bytes, s->bytes), libipt, percent_of(s->libipt_bytes, s->bytes),
		 handed);
	return out;
}

static void print_pt_stats(const struct rv_decoder_report *r, enum rv_pt_decoder_choice decoder,
			   double seconds)
{
	const struct rv_pt_stats *s = &r->pt;
	double span = s->last_time > s->first_time ? (double)(s->last_time - s->first_time) : 0;
	char walkers[160], caches[40];

	printf("trace bytes      %" PRIu64 " (%" PRIu64 " chunks)\n", s->bytes, s->chunks);
	printf("packets          %" PRIu64 "\n", r->packets);
	printf("instructions     %" PRIu64 "\n", s->insns);
	printf("blocks           %" PRIu64 "\n", s->blocks);
	printf("calls            %" PRIu64 "\n", s->calls);
	printf("returns          %" PRIu64 "\n", s->returns);
	if (r->jumps_ignored)
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
	printf("decoded by       %s\n", rv_pt_walkers_text(s, decoder, walkers, sizeof(walkers)));
	/* the exact count first, as on every line, for scripts (bench/run) */
	caches[0] = '\0';
	if (s->cache_bytes >= 1024) {
		char human[32];

		human_bytes(s->cache_bytes, human, sizeof(human));
		snprintf(caches, sizeof(caches), " (%s)", human);
	}
	if (decoder == RV_PT_DECODER_LIBIPT)
		printf("fast caches      0 bytes (not used: --decoder libipt)\n");
	else
		printf("fast caches      %" PRIu64 " bytes%s at their largest, summed over the "
		       "decoding threads\n",
		       s->cache_bytes, caches);
	printf("time covered     %.0f %s (first %" PRIu64 ", last %" PRIu64 ")\n", span,
	       r->kind == RV_CAPTURE_RAW_PT ? "TSC ticks" : "ns", s->first_time, s->last_time);
	printf("decode time      %.3f s\n", seconds);
	printf("bytes per second %.0f\n", seconds > 0 ? (double)s->bytes / seconds : 0);
}

static void print_stats(const struct rv_decoder_report *r, enum rv_pt_decoder_choice decoder,
			double seconds)
{
	if (r->kind == RV_CAPTURE_PT || r->kind == RV_CAPTURE_RAW_PT)
		print_pt_stats(r, decoder, seconds);
	else if (r->kind == RV_CAPTURE_FUNCTIONS)
		print_function_stats(&r->functions, seconds);
}

/* ---- the pipeline ---- */

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int to_builder(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	return rv_builder_add(ctx, ev, err);
}

static int to_builder_batch(void *ctx, const struct rv_event *evs, size_t n, struct rv_error *err)
{
	return rv_builder_add_batch(ctx, evs, n, err);
}

int rv_render(const struct rv_render_options *ro, struct rv_trace_writer *writer,
	      struct rv_error *err)
{
	struct rv_decoder *decoder = NULL;
	struct rv_builder *builder = NULL;
	struct rv_decoder_report report;
	double started = 0, seconds = 0;
	int ret;

	ret = rv_decoder_open(&decoder, &ro->decode, err);
	if (!ret)
		ret = rv_builder_new(&builder, rv_decoder_symbolizer(decoder), writer, err);
	if (!ret && rv_decoder_first_time(decoder))
		rv_builder_set_base(builder, rv_decoder_first_time(decoder));
	if (!ret) {
		started = now_seconds();
		ret = rv_decoder_run_batches(decoder, to_builder, to_builder_batch, builder, err);
	}
	if (!ret)
		ret = rv_builder_finish(builder, err);
	seconds = now_seconds() - started;
	if (!ret)
		ret = rv_trace_writer_commit(writer, err);
	if (!ret) {
		rv_decoder_report(decoder, &report);
		warn_findings(&report, builder);
		if (ro->stats)
			print_stats(&report, ro->decode.decoder, seconds);
		print_summary(builder, writer, ro, report_kind(&report));
	} else {
		if (decoder && rv_decoder_kind(decoder) == RV_CAPTURE_PERF_SCRIPT) {
			/* the lines skipped, before the error that says nothing
			 * could be drawn */
			rv_decoder_report(decoder, &report);
			warn_perf_script(&report.perf_script);
		}
		rv_trace_writer_abort(writer);
	}
	rv_builder_free(builder);
	rv_decoder_free(decoder);
	return ret;
}
