/* gating.c: the gate in a recording session, for every backend; see gating.h. */
#define RV_LOG_DOMAIN "gate"
#include "session/gating.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/marks.h"
#include "record/gate.h"
#include "record/picker.h"
#include "util/array.h"
#include "util/log.h"

struct rv_gating {
	const struct rv_options *opts;
	struct rv_gate_sites sites;
	struct rv_gating_gate_ops gate; /* NULL ctx: none (rv_gating_new failed) */
	struct rv_gate_record *queue;
	size_t nr_queue, cap_queue;
	uint64_t windows, slow_windows, kept_windows, triggers, snapshots, snapshot_samples;
	uint64_t last_snapshot; /* the time of the last --trigger snapshot */
	uint64_t held_back;	/* slow windows the gate did not keep (a copy was held) */
	bool pt_pause;		/* see rv_gating_new */
	bool done;
};

bool rv_gating_wanted(const struct rv_options *opts)
{
	return opts->filter_start || opts->trigger;
}

/* The user's choice for a '?' site: what resolves it, resolved into out. */
static int pick_one(const char *what, const char *spec, const char *exe, pid_t pid, int stop_fd,
		    struct rv_probe_site *out, struct rv_error *err)
{
	struct rv_probe_spec *parsed = malloc(sizeof(*parsed));
	struct rv_probe_choice *choices = NULL;
	struct rv_pick_question question = { .otherwise = "name the site instead" };
	const char **labels = NULL;
	char prompt[64], text[96];
	size_t nr = 0, chosen = 0;
	int ret;

	if (!parsed)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_probe_spec_parse(spec, parsed, err);
	if (!ret)
		ret = rv_probe_site_choices(parsed->kind, exe, pid, &choices, &nr, err);
	if (!ret) {
		bool line = parsed->kind == RV_PROBE_PICK_LINE;

		question.noun = line ? "source line" : "function";
		snprintf(text, sizeof(text), "%s at which %s?", what, question.noun);
		snprintf(prompt, sizeof(prompt), "%s %s> ", what, question.noun);
		question.question = text;
		question.fzf_prompt = prompt;
		labels = malloc(nr * sizeof(*labels));
		if (!labels)
			ret = rv_error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; !ret && i < nr; i++)
			labels[i] = choices[i].label;
	}
	if (!ret)
		ret = rv_pick(&question, labels, nr, stop_fd, &chosen, err);
	if (!ret) {
		rv_note("%s: %s (%s)", what, choices[chosen].label, choices[chosen].spec);
		ret = rv_probe_site_resolve(choices[chosen].spec, exe, pid, out, err);
	}
	free(labels);
	rv_probe_choices_free(choices, nr);
	free(parsed);
	return ret;
}

static int resolve_one(const char *what, const char *spec, const char *exe, pid_t pid, int stop_fd,
		       struct rv_probe_site *out, struct rv_error *err)
{
	int ret = rv_probe_spec_is_pick(spec) ? pick_one(what, spec, exe, pid, stop_fd, out, err)
					      : rv_probe_site_resolve(spec, exe, pid, out, err);

	return ret ? rv_error_prefix(err, what) : 0;
}

int rv_gating_resolve(const struct rv_options *opts, const char *exe, pid_t pid, int stop_fd,
		      struct rv_gate_sites *out, struct rv_error *err)
{
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (opts->filter_start) {
		out->filter = true;
		ret = resolve_one("--filter START", opts->filter_start, exe, pid, stop_fd,
				  &out->start, err);
		if (!ret)
			ret = resolve_one("--filter STOP", opts->filter_stop, exe, pid, stop_fd,
					  &out->stop, err);
		if (!ret && out->start.offset == out->stop.offset &&
		    !strcmp(out->start.path, out->stop.path))
			return rv_error_set(
				err, EINVAL,
				"--filter %s,%s: START and STOP are the same instruction; "
				"a window needs two places (a function and its end, or "
				"two functions)",
				opts->filter_start, opts->filter_stop);
	}
	if (!ret && opts->trigger) {
		out->trigger = true;
		ret = resolve_one("--trigger", opts->trigger, exe, pid, stop_fd, &out->at, err);
	}
	return ret;
}

/* The gate's sites, plain per-process uprobe events (the sampling engine's
 * case: their only job is to run the gate). */
static size_t build_sites(const struct rv_gate_sites *s, struct rv_gate_site *out)
{
	size_t n = 0;

	if (s->filter) {
		out[n++] = (struct rv_gate_site){ .role = RV_GATE_START,
						  .path = s->start.path,
						  .offset = s->start.offset };
		out[n++] = (struct rv_gate_site){ .role = RV_GATE_STOP,
						  .path = s->stop.path,
						  .offset = s->stop.offset };
	}
	if (s->trigger)
		out[n++] = (struct rv_gate_site){ .role = RV_GATE_TRIGGER,
						  .path = s->at.path,
						  .offset = s->at.offset };
	return n;
}

int rv_gating_describe(const struct rv_gate_sites *sites, pid_t pid, struct rv_dry_run_plan *plan,
		       struct rv_error *err)
{
	struct rv_gate_site gs[3];
	size_t n = build_sites(sites, gs);
	uint32_t uprobe_type;
	int ret;

	if (!n)
		return 0;
	ret = rv_gate_uprobe_type(&uprobe_type, err);
	for (size_t i = 0; !ret && i < n; i++) {
		struct rv_dry_run_event ev = {
			.group = -1,
			.cpu = -1,
			.pid = pid > 0 ? pid : -1,
			.uprobe_path = gs[i].path,
			.uprobe_offset = gs[i].offset,
			.bpf_program = "gate_hit",
			.bpf_program_type = "kprobe (uprobe perf event)",
		};
		char label[320];
		const struct rv_probe_site *site = gs[i].role == RV_GATE_START	? &sites->start
						   : gs[i].role == RV_GATE_STOP ? &sites->stop
										: &sites->at;

		snprintf(label, sizeof(label), "%s uprobe at %s", rv_gate_role_name(gs[i].role),
			 site->function[0] ? site->function : "?");
		ev.label = label;
		rv_gate_plain_attr(&ev.attr, uprobe_type, gs[i].path, gs[i].offset);
		ret = rv_dry_run_add_event(plan, &ev, err);
	}
	if (!ret)
		ret = rv_gate_describe_bpf(plan, sites->filter,
					   "decides per hit whether the event fires", err);
	return ret;
}

/* ---- the BPF gate (record/gate.h) as rv_gating_gate_ops ---- */

static int real_attach(void *ctx, const struct rv_gate_site *sites, size_t nr_sites,
		       struct rv_error *err)
{
	return rv_gate_attach(ctx, sites, nr_sites, err);
}

static int real_site_fd(const void *ctx, size_t i)
{
	return rv_gate_site_fd(ctx, i);
}

static int real_windows_fd(const void *ctx)
{
	return rv_gate_windows_fd(ctx);
}

static int real_records_fd(const void *ctx)
{
	return rv_gate_records_fd(ctx);
}

static int real_poll(void *ctx, int timeout_ms, rv_gate_record_fn fn, void *fn_ctx,
		     struct rv_error *err)
{
	return rv_gate_poll(ctx, timeout_ms, fn, fn_ctx, err);
}

static int real_release(void *ctx, struct rv_error *err)
{
	return rv_gate_release(ctx, err);
}

static int real_counts(const void *ctx, struct rv_gate_counts *out, struct rv_error *err)
{
	return rv_gate_counts(ctx, out, err);
}

static void real_free(void *ctx)
{
	rv_gate_detach(ctx);
	rv_gate_free(ctx);
}

int rv_gating_new_on(struct rv_gating **out, const struct rv_options *opts,
		     const struct rv_gate_sites *sites, bool pt_pause,
		     const struct rv_gating_gate_ops *gate, struct rv_error *err)
{
	struct rv_gating *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g) {
		gate->free(gate->ctx);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	g->opts = opts;
	g->sites = *sites;
	g->pt_pause = pt_pause;
	g->gate = *gate;
	*out = g;
	return 0;
}

int rv_gating_new(struct rv_gating **out, const struct rv_options *opts,
		  const struct rv_kernel_btf *btf, const struct rv_gate_sites *sites, pid_t pid,
		  bool pt_pause, struct rv_error *err)
{
	struct rv_gate *gate;
	struct rv_gate_config config = {
		.pid = pid,
		.min_duration_ns = opts->min_duration_ns,
		.multi_snapshot = opts->multi_snapshot,
		.keep_slow_windows = pt_pause && opts->min_duration_ns,
		.hold_after_snapshot = pt_pause,
		.btf = btf,
	};
	struct rv_gating_gate_ops ops = {
		.attach = real_attach,
		.site_fd = real_site_fd,
		.windows_fd = real_windows_fd,
		.records_fd = real_records_fd,
		.poll = real_poll,
		.release = real_release,
		.counts = real_counts,
		.free = real_free,
	};
	int ret;

	*out = NULL;
	ret = rv_gate_open(&gate, &config, err);
	if (ret)
		return ret;
	ops.ctx = gate;
	return rv_gating_new_on(out, opts, sites, pt_pause, &ops, err);
}

int rv_gating_attach(struct rv_gating *g, const struct rv_gate_site *sites, size_t nr_sites,
		     struct rv_error *err)
{
	const struct rv_options *opts = g->opts;
	struct rv_gate_site plain[3];
	int ret;

	if (!sites) {
		nr_sites = build_sites(&g->sites, plain);
		sites = plain;
	}
	ret = g->gate.attach(g->gate.ctx, sites, nr_sites, err);
	if (ret)
		return ret;
	if (g->sites.filter)
		rv_debug("--filter: windows from %s (%s+%#" PRIx64 ") to %s (%s+%#" PRIx64 ")",
			 opts->filter_start, g->sites.start.path, g->sites.start.offset,
			 opts->filter_stop, g->sites.stop.path, g->sites.stop.offset);
	if (g->sites.trigger)
		rv_debug("--trigger: %s (%s+%#" PRIx64 ")", opts->trigger, g->sites.at.path,
			 g->sites.at.offset);
	return 0;
}

const struct rv_gate_sites *rv_gating_sites(const struct rv_gating *g)
{
	return &g->sites;
}

int rv_gating_site_fd(const struct rv_gating *g, size_t i)
{
	return g->gate.site_fd(g->gate.ctx, i);
}

int rv_gating_release(struct rv_gating *g, struct rv_error *err)
{
	return g->gate.release(g->gate.ctx, err);
}

int rv_gating_windows_fd(const struct rv_gating *g)
{
	return g && g->sites.filter ? g->gate.windows_fd(g->gate.ctx) : -1;
}

int rv_gating_fd(const struct rv_gating *g)
{
	return g->gate.records_fd(g->gate.ctx);
}

static int queue_record(const struct rv_gate_record *record, void *ctx)
{
	struct rv_gating *g = ctx;

	if (rv_array_grow(&g->queue, &g->cap_queue, g->nr_queue, sizeof(*g->queue), 64))
		return -ENOMEM;
	g->queue[g->nr_queue++] = *record;
	return 0;
}

int rv_gating_collect(struct rv_gating *g, struct rv_error *err)
{
	int ret = g->gate.poll(g->gate.ctx, 0, queue_record, g, err);

	if (ret == -ENOMEM)
		return rv_error_set(err, ENOMEM, "out of memory keeping the gate's records");
	return ret < 0 ? ret : 0;
}

static int snapshot(struct rv_gating *g, const struct rv_gating_actions *a,
		    const struct rv_gating_snapshot *what, struct rv_error *err)
{
	size_t taken = 0;
	int ret = a->snapshot(a->ctx, what, &taken, err);

	if (ret)
		return ret;
	g->snapshots++;
	g->snapshot_samples += taken;
	return 0;
}

/* A site as the user named it, or, for '?' and '.', the function chosen or
 * found (marks and notes name it). */
static const char *site_name(const char *spec, const struct rv_probe_site *site)
{
	if ((rv_probe_spec_is_pick(spec) || !strcmp(spec, ".")) && site->function[0])
		return site->function;
	return spec;
}

static int on_window_end(struct rv_gating *g, const struct rv_gating_actions *a,
			 const struct rv_gate_record *r, struct rv_error *err)
{
	const struct rv_options *o = g->opts;
	struct rv_mark mark = {
		.kind = RV_MARK_WINDOW,
		.flags = r->slow && o->min_duration_ns ? RV_MARK_FLAG_SLOW : 0,
		.pid = r->pid,
		.tid = r->tid,
		.time = r->time_ns,
		.duration_ns = r->duration_ns,
		.name = site_name(o->filter_start, &g->sites.start),
	};
	struct rv_gating_snapshot own = {
		.selection = { .since = r->time_ns > r->duration_ns ? r->time_ns - r->duration_ns
								    : 0,
			       .until = r->time_ns,
			       .tid = r->tid },
		.tid = (pid_t)r->tid,
		.cpu = r->cpu,
		.time_ns = r->time_ns,
	};
	int ret;

	g->windows++;
	g->slow_windows += r->slow;
	if (o->min_duration_ns && !r->slow)
		return 0; /* what ran in it is not kept */
	if (o->min_duration_ns && g->pt_pause) {
		if (!r->fired) {
			/* the gate held it back: another window's copy was made */
			g->held_back++;
			return 0;
		}
		mark.flags |= RV_MARK_FLAG_SNAPSHOT;
	}
	ret = a->mark(a->ctx, &mark, err);
	if (ret || !o->min_duration_ns)
		return ret;
	/* A slow window is a snapshot of its own. */
	ret = snapshot(g, a, &own, err);
	g->kept_windows++;
	if (!ret && !o->multi_snapshot)
		g->done = true;
	return ret;
}

static int on_trigger(struct rv_gating *g, const struct rv_gating_actions *a,
		      const struct rv_gate_record *r, struct rv_error *err)
{
	const struct rv_options *o = g->opts;
	struct rv_mark mark = {
		.kind = RV_MARK_TRIGGER,
		.flags = r->fired ? RV_MARK_FLAG_SNAPSHOT : 0,
		.pid = r->pid,
		.tid = r->tid,
		.time = r->time_ns,
		.name = site_name(o->trigger, &g->sites.at),
	};
	/* What came before the hit, since the last snapshot. */
	struct rv_gating_snapshot before = {
		.trigger = true,
		.selection = { .since = g->last_snapshot ? g->last_snapshot + 1 : 0,
			       .until = r->time_ns },
		.tid = (pid_t)r->tid,
		.cpu = r->cpu,
		.time_ns = r->time_ns,
	};
	int ret;

	g->triggers++;
	ret = a->mark(a->ctx, &mark, err);
	if (ret || !r->fired)
		return ret;
	ret = snapshot(g, a, &before, err);
	g->last_snapshot = r->time_ns;
	if (!ret && !o->multi_snapshot)
		g->done = true;
	return ret;
}

int rv_gating_apply(struct rv_gating *g, const struct rv_gating_actions *actions, bool *done,
		    struct rv_error *err)
{
	int ret = 0;

	for (size_t i = 0; i < g->nr_queue && !ret && !g->done; i++) {
		const struct rv_gate_record *r = &g->queue[i];

		if (r->type == RV_GATE_REC_WINDOW_END)
			ret = on_window_end(g, actions, r, err);
		else if (r->type == RV_GATE_REC_TRIGGER)
			ret = on_trigger(g, actions, r, err);
	}
	g->nr_queue = 0;
	*done = g->done;
	return ret;
}

bool rv_gating_keep_rest(const struct rv_gating *g)
{
	const struct rv_options *o = g->opts;

	if (o->min_duration_ns)
		return false;
	if (o->trigger)
		return g->snapshots == 0;
	return true;
}

static void format_duration(uint64_t ns, char *buf, size_t size)
{
	if (ns >= 1000000000 && !(ns % 1000000))
		snprintf(buf, size, "%g s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, size, "%g ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, size, "%g us", (double)ns / 1e3);
	else
		snprintf(buf, size, "%" PRIu64 " ns", ns);
}

void rv_gating_report(const struct rv_gating *g, const char *what_outside)
{
	const struct rv_options *o = g->opts;
	struct rv_gate_counts counts;
	struct rv_error err = { 0 };
	char min[32];

	format_duration(o->min_duration_ns, min, sizeof(min));
	if (g->sites.filter && o->min_duration_ns)
		rv_note("--filter: %" PRIu64 " window%s, %" PRIu64 " longer than %s; %" PRIu64
			" kept",
			g->windows, g->windows == 1 ? "" : "s", g->slow_windows, min,
			g->kept_windows);
	else if (g->sites.filter)
		rv_note("--filter: %" PRIu64 " window%s; %s", g->windows,
			g->windows == 1 ? "" : "s", what_outside);
	if (g->held_back)
		rv_note("--min-duration: %" PRIu64 " slow window%s not kept: %s closed while "
			"another window's trace was being copied",
			g->held_back, g->held_back == 1 ? "" : "s",
			g->held_back == 1 ? "it" : "they");
	if (o->min_duration_ns && !g->kept_windows)
		rv_warn("no window lasted longer than %s, so the trace holds nothing; lower "
			"--min-duration",
			min);
	if (g->sites.trigger && !g->triggers)
		rv_note("--trigger %s never ran: the trace holds the end of the recording, as "
			"without a trigger",
			site_name(g->opts->trigger, &g->sites.at));
	else if (g->sites.trigger)
		rv_note("--trigger %s: %" PRIu64 " hit%s, %" PRIu64 " snapshot%s",
			site_name(g->opts->trigger, &g->sites.at), g->triggers,
			g->triggers == 1 ? "" : "s", g->snapshots, g->snapshots == 1 ? "" : "s");
	if (!g->gate.counts(g->gate.ctx, &counts, &err)) {
		if (counts.record_drops)
			rv_warn("the gate lost %" PRIu64 " of its records (its ring buffer was "
				"full): some windows or hits are missing from the trace",
				counts.record_drops);
		if (counts.window_map_full)
			rv_warn("%" PRIu64 " windows were not opened: more threads were inside "
				"one at once than the gate can follow (%u)",
				counts.window_map_full, RV_GATE_MAX_WINDOWS);
		if (counts.held)
			rv_note("the gate refused %" PRIu64 " START or trigger hit%s while Intel "
				"PT was paused for a snapshot copy",
				counts.held, counts.held == 1 ? "" : "s");
		rv_debug("gate: %" PRIu64 " hits, %" PRIu64 " nested starts, %" PRIu64
			 " unmatched stops",
			 counts.hits, counts.nested_starts, counts.unmatched_stops);
	}
}

void rv_gating_free(struct rv_gating *g)
{
	if (!g)
		return;
	g->gate.free(g->gate.ctx);
	free(g->queue);
	free(g);
}
