/* fn_backend.c: the function tracer's backend of a recording session
 * (--backend uprobe): the functions --functions selects get a probe at entry
 * and return each, the --kernel-events tracepoints and --kernel-functions
 * probes are attached for the target's threads, and every record goes
 * through the tracer's per-CPU BPF ring buffers, drained every
 * POLL_INTERVAL_MS (the programs never wake anyone: a timer does), into a
 * flight recorder of records or, with --full-execution, merged by time into
 * the perf.data capture (samples of the bpf-output event RV_FN_EVENT_NAME,
 * whose per-CPU events carry the sideband), the gate's marks as for
 * sampling. When snapshots are wanted (--trigger, --min-duration, not
 * --full-execution) records are kept instead in the tracer's per-thread
 * flight recorder in BPF maps, and each snapshot takes its records from
 * there (recorder mode; -v says which mode). See backend.h.
 *
 * Not here: the loop (session.c), the BPF side (bpf/functions.bpf.c), the
 * tracer's loader (record/fn_engine.c), decoding the records (src/decode).
 */
#define RV_LOG_DOMAIN "functions"
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "functions.h"

#include "capture/perf_data.h"
#include "record/fn_engine.h"
#include "record/fn_exits.h"
#include "record/fn_plan.h"
#include "record/fn_select.h"
#include "record/probe_cost.h"
#include "record/fn_stream.h"
#include "record/hold.h"
#include "record/sample_engine.h"
#include "session/backend.h"
#include "session/fn_live.h"
#include "symbolize/symbolizer.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/count_text.h"

/* Functions below which attaching is quick enough to need no progress. */
#define PROGRESS_THRESHOLD 512
/* Functions above which the run is told what each of their calls costs. */
#define MANY_FUNCTIONS 500

/* How often the rings are drained: at a few million records a second, a
 * few hundred KiB of each CPU's ring, far below RV_FN_RING_BYTES. */
#define POLL_INTERVAL_MS 4
/* Children followed that are held with the target while probes are released,
 * and named when still running at the end. */
#define RV_FN_HELD_CHILDREN 64

/* The functions of one traced process: a range of the session's table. */
struct fn_process {
	pid_t pid;
	size_t first, count;
	char exe[PATH_MAX];
};

struct rv_backend_state {
	uint64_t children_not_followed; /* --no-follow: the target's children left out */
	struct rv_session *s;
	struct rv_target *target;
	struct rv_fn_list funcs;
	struct rv_kfunc_plan kfuncs;
	struct fn_process *processes;
	size_t nr_processes;
	struct rv_gating *gating;
	struct rv_perf_writer *capture;
	struct rv_sample_engine *engine;
	struct rv_fn_engine *tracer;
	struct rv_fn_stream *stream;   /* the rings drained (not in recorder mode) */
	int timer_fd;		       /* fires every POLL_INTERVAL_MS while recording */
	bool recorder;		       /* records wait in the tracer's BPF maps for snapshots */
	double probe_ns;	       /* a probe pair's cost a call; 0: not measured */
	uint64_t armed_ns, stopped_ns; /* when recording began and ended */
	/* the calibration's probes, released in the background, waited for
	 * with the tracer's (release_held) */
	struct rv_probe_cost_probes *calibration;
	struct rv_fn_live *live; /* the status line on a terminal, or NULL */
	char **live_names;	 /* the functions' names, demangled, for it */
	/* The kernel had not released the probes when rearview stopped
	 * waiting: the tracer is left to its releasing thread, never freed. */
	bool tracer_releasing;
	uint64_t lost;
	/* For a live status: calls drained so far per function index of funcs
	 * (funcs.count of them), and in all; the stream counts them as it
	 * drains, one increment a call, so they are cheap to keep and a
	 * reader sees the counts as of the last drain: the status line
	 * (fn_live) and the summary's overhead use them. Outside recorder mode
	 * only (the summary then estimates no overhead). */
	uint64_t *calls;
	uint64_t calls_total;
	struct rv_render_skip *skips; /* funcs.skipped, for the summary */
	char capture_path[PATH_MAX + 32];
	char note[128];
};

static bool no_uprobe_multi(void)
{
	const char *v = getenv(RV_UPROBE_MULTI_ENV);

	return v && !strcmp(v, "0");
}

/* A ring per possible CPU (indexed by the CPU a program runs on). */
static size_t nr_rings(void)
{
	int n = libbpf_num_possible_cpus();

	if (n > (int)RV_FN_MAX_CPUS)
		n = (int)RV_FN_MAX_CPUS; /* records of CPUs beyond find no ring */
	return n > 0 ? (size_t)n : 1;
}

/* RV_FN_RING_ENV: each ring's bytes (tests); 0: the default. */
static uint32_t ring_bytes(void)
{
	const char *v = getenv(RV_FN_RING_ENV);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 0;
	n = strtoull(v, &end, 10);
	if (*end || n > (1ull << 30))
		return 0;
	return (uint32_t)n;
}

/* run follows COMMAND's children unless --no-follow, or unless the kernel
 * lacks the BTF their programs attach by (session.h's follow_blocked). */
static bool follows(const struct rv_session *s)
{
	return rv_fn_plan_follows(s->opts) && !s->follow_blocked;
}

static int fn_check(struct rv_session *s, struct rv_error *err)
{
	struct rv_kfunc_ops ops;
	int ret = rv_fn_engine_check_btf(&s->kernel_btf, follows(s), err);

	if (ret || !s->opts->nr_kernel_functions)
		return ret;
	if (geteuid() != 0)
		return rv_error_set(err, EPERM,
				    "--kernel-functions needs root: only root may attach programs "
				    "to kernel functions, or even ask whether the kernel allows "
				    "fentry or kprobes; run rearview as root");
	rv_kfunc_system_ops(&ops);
	return rv_kfunc_choose(&ops, &s->kfunc_method, err);
}

/* How returns are seen (--exits): each function's return sites, found in
 * its code, or uretprobes; -v says which, and lists the functions that get
 * uretprobes because their code could not be decoded. */
static int plan_exits(struct rv_session *s, struct rv_fn_list *funcs, struct rv_error *err)
{
	bool sites = !s->opts->exits_uretprobe;
	size_t fallbacks = 0, nr_sites = 0, pieces = 0;
	int ret = rv_fn_exits_plan(funcs, sites, err);

	if (ret)
		return ret;
	if (!sites) {
		rv_debug("returns: uretprobes (--exits uretprobe), which replace return addresses "
			 "on the stack: C++ exceptions and longjmp over a traced function break");
		return 0;
	}
	for (size_t i = 0; i < funcs->count; i++) {
		const struct rv_fn_probe *f = &funcs->items[i];

		pieces += f->nr_pieces;
		if (f->exits == RV_FN_EXITS_SITES) {
			nr_sites += f->nr_sites;
			if (!f->nr_sites)
				rv_debug("%s in %s never returns (no instruction leaves it): a "
					 "probe at its entry only",
					 f->name, f->path);
			continue;
		}
		fallbacks++;
		rv_debug("a uretprobe on %s in %s: its code could not be decoded (%s, at "
			 "0x%" PRIx64 ")",
			 f->name, f->path, f->exits_problem ? f->exits_problem : "unknown",
			 f->problem_address);
	}
	rv_debug("returns: a uprobe at each return site (%zu site%s in %zu function%s, %zu "
		 "out-of-line piece%s included)%s",
		 nr_sites, nr_sites == 1 ? "" : "s", funcs->count - fallbacks,
		 funcs->count - fallbacks == 1 ? "" : "s", pieces, pieces == 1 ? "" : "s",
		 fallbacks ? "; uretprobes on the functions above" : "");
	if (fallbacks)
		rv_note("%zu function%s traced with uretprobes: their code could not be decoded "
			"(see them with -v)",
			fallbacks, fallbacks == 1 ? "" : "s");
	return 0;
}

/* Selects the functions of every process; processes running the same
 * executable share one range of the table. */
static int select_functions(struct rv_session *s, const pid_t *pids, size_t nr_pids,
			    const char *exe, struct rv_backend_state *run, struct rv_error *err)
{
	const struct rv_options *o = s->opts;
	int ret = 0;

	run->processes = calloc(nr_pids ? nr_pids : 1, sizeof(*run->processes));
	if (!run->processes)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < nr_pids || (i == 0 && !nr_pids); i++) {
		struct fn_process *p = &run->processes[run->nr_processes];
		bool shared = false;

		p->pid = nr_pids ? pids[i] : 0;
		if (exe)
			snprintf(p->exe, sizeof(p->exe), "%s", exe);
		else
			ret = rv_proc_exe(p->pid, p->exe, sizeof(p->exe), err);
		if (ret)
			return ret;
		for (size_t j = 0; j < run->nr_processes && !shared; j++) {
			if (!strcmp(run->processes[j].exe, p->exe)) {
				p->first = run->processes[j].first;
				p->count = run->processes[j].count;
				shared = true;
			}
		}
		if (!shared) {
			p->first = run->funcs.count;
			struct rv_fn_patterns patterns = {
				.include = (const char *const *)o->functions,
				.nr_include = o->nr_functions,
				.exclude = (const char *const *)o->exclude,
				.nr_exclude = o->nr_exclude,
			};

			ret = rv_fn_select(&run->funcs, &patterns, p->exe, p->pid,
					   RV_FN_MAX_FUNCTIONS - run->funcs.count, err);
			if (ret)
				return ret;
			p->count = run->funcs.count - p->first;
		}
		run->nr_processes++;
		if (!nr_pids)
			break;
	}
	for (size_t i = 0; i < run->funcs.nr_skipped; i++)
		rv_debug("not probing %s in %s: %s%s%s", run->funcs.skipped[i].name,
			 run->funcs.skipped[i].path, run->funcs.skipped[i].reason,
			 run->funcs.skipped[i].note ? "; " : "",
			 run->funcs.skipped[i].note ? run->funcs.skipped[i].note : "");
	if (!run->funcs.count && run->funcs.nr_skipped)
		return rv_error_set(err, ENOENT,
				    "--functions: every function that matches cannot be probed "
				    "(%s: %s%s%s); choose others",
				    run->funcs.skipped[0].name, run->funcs.skipped[0].reason,
				    run->funcs.skipped[0].note ? "; " : "",
				    run->funcs.skipped[0].note ? run->funcs.skipped[0].note : "");
	rv_debug("%zu function%s selected", run->funcs.count, run->funcs.count == 1 ? "" : "s");
	if (run->funcs.nr_excluded)
		rv_debug("%zu function%s excluded by --exclude", run->funcs.nr_excluded,
			 run->funcs.nr_excluded == 1 ? "" : "s");
	return plan_exits(s, &run->funcs, err);
}

static int plan_kernel_functions(struct rv_session *s, struct rv_backend_state *run,
				 struct rv_error *err)
{
	struct rv_kfunc_ops ops;
	int ret;

	if (!s->opts->nr_kernel_functions)
		return 0;
	rv_kfunc_system_ops(&ops);
	ret = rv_kfunc_plan_build(&run->kfuncs, (const char *const *)s->opts->kernel_functions,
				  s->opts->nr_kernel_functions, &ops, err);
	if (ret)
		return ret;
	for (size_t i = 0; i < run->kfuncs.nr_skipped; i++)
		rv_debug("not tracing kernel function %s: %s", run->kfuncs.skipped[i].name,
			 run->kfuncs.skipped[i].reason);
	rv_debug("%zu kernel function%s through %s", run->kfuncs.count,
		 run->kfuncs.count == 1 ? "" : "s", rv_kfunc_method_name(run->kfuncs.method));
	return 0;
}

static struct rv_sample_config engine_config(const struct rv_session *s,
					     const struct rv_target *target)
{
	struct rv_sample_config c = rv_fn_plan_engine_config(s->opts, s->snapshot_size_bytes,
							     target ? target->pids : NULL,
							     target ? target->nr_pids : 0);

	if (c.full_execution)
		c.nr_output_streams = nr_rings();
	c.follow_children = follows(s);
	c.btf = &s->kernel_btf;
	c.extra_events = &s->extra_events;
	c.all_threads = s->opts->multi_thread; /* which threads' --events are kept */
	return c;
}

static struct rv_fn_engine_config tracer_config(const struct rv_session *s,
						const struct rv_backend_state *run)
{
	return (struct rv_fn_engine_config){
		.funcs = run->funcs.items,
		.nr_funcs = run->funcs.count,
		.kfuncs = run->kfuncs.count ? &run->kfuncs : NULL,
		.kernel_events = rv_fn_plan_kernel_events(s->opts),
		.all_threads = s->opts->multi_thread,
		.follow_children = follows(s),
		.btf = &s->kernel_btf,
		.gate_windows_fd = run->gating ? rv_gating_windows_fd(run->gating) : -1,
		.no_uprobe_multi = no_uprobe_multi(),
		.recorder_slots = rv_fn_plan_recorder_slots(s->opts, run->nr_processes),
		.nr_rings = nr_rings(),
		.ring_bytes = ring_bytes(),
	};
}

struct progress {
	bool shown;
	size_t before, total;
};

static void show_progress(void *ctx, size_t done, size_t total)
{
	struct progress *p = ctx;

	(void)total;
	if (p->total < PROGRESS_THRESHOLD || !isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\rrearview: attaching function probes: %zu of %zu", p->before + done,
		p->total);
	fflush(stderr);
	p->shown = true;
}

static const char *method_text(const struct rv_fn_attach_report *r, char *buf, size_t size)
{
	char n[32];

	if (r->by_multi && r->by_perf_links)
		snprintf(buf, size, "uprobe_multi; %s by one link per probe",
			 rv_count_text(r->by_perf_links, n, sizeof(n)));
	else if (r->by_multi)
		snprintf(buf, size, "uprobe_multi");
	else
		snprintf(buf, size, "one uprobe link per probe");
	return buf;
}

/* Following children, the probes of a library are on every process that maps
 * it: say so once, naming the library, and how to keep them on the target. */
static void note_shared_probes(const struct rv_session *s, const struct rv_backend_state *run)
{
	for (size_t i = 0; follows(s) && i < run->funcs.count; i++) {
		const char *path = run->funcs.items[i].path;
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

		if (!strstr(base, ".so"))
			continue;
		rv_note("to follow the program's children, the probes in %s are on every process "
			"that maps it: others calling those functions pay a probe's trap while "
			"this "
			"runs (--no-follow keeps them on the program alone)",
			base);
		return;
	}
}

static int attach_everything(struct rv_session *s, struct rv_target *target,
			     struct rv_backend_state *run, struct rv_error *err)
{
	struct progress progress = { .total = 0 };
	struct rv_fn_attach_report report;
	char attached[32], method[96], secs[32];
	int ret = 0;

	for (size_t i = 0; i < target->nr_pids && !ret; i++)
		ret = rv_fn_engine_add_process(run->tracer, target->pids[i], err);
	if (!ret)
		ret = rv_fn_engine_attach_kernel(run->tracer, err);
	for (size_t i = 0; i < run->nr_processes; i++)
		progress.total += run->processes[i].count;
	for (size_t i = 0; i < run->nr_processes && !ret; i++) {
		const struct fn_process *p = &run->processes[i];

		ret = rv_fn_engine_attach_functions(run->tracer, p->pid, p->first, p->count,
						    show_progress, &progress, err);
		progress.before += p->count;
	}
	if (progress.shown)
		fprintf(stderr, "\r\033[K");
	if (ret)
		return ret;
	rv_fn_engine_report(run->tracer, &report);
	for (size_t i = 0; i < rv_fn_engine_nr_refused(run->tracer); i++) {
		size_t index;
		int error;

		rv_fn_engine_refused(run->tracer, i, &index, &error);
		rv_debug("not probing %s in %s: the kernel refused the uprobe (%s)",
			 run->funcs.items[index].name, run->funcs.items[index].path,
			 error == 524 ? "ENOTSUPP: it cannot step over the first instruction"
				      : strerror(error));
	}
	if (!report.multi_available)
		rv_debug("this kernel has no uprobe_multi links: one link per function");
	rv_debug("function probes: %s", method_text(&report, method, sizeof(method)));
	if (report.kfuncs_refused)
		rv_warn("%zu of the kernel functions could not be attached (see them with -v)",
			report.kfuncs_refused);
	if (run->funcs.count && !report.attached)
		return rv_error_set(err, EPERM,
				    "the kernel refused a uprobe on every function selected (see "
				    "why with -v)");
	snprintf(secs, sizeof(secs), "%.2f", (double)report.attach_ns / 1e9);
	if (run->funcs.count)
		rv_note("attached %s function%s in %s s (%s)",
			rv_count_text(report.attached, attached, sizeof(attached)),
			report.attached == 1 ? "" : "s", secs,
			method_text(&report, method, sizeof(method)));
	if (report.refused)
		rv_note("%zu function%s could not be probed (see them with -v)", report.refused,
			report.refused == 1 ? "" : "s");
	note_shared_probes(s, run);
	return 0;
}

/* What is released with the target held: the tracer's probes, and the
 * calibration's, whose release (begun in the background) may still wait in
 * the kernel, on the target's hits as the tracer's does (hold.h). */
struct fn_release {
	struct rv_fn_engine *tracer;
	struct rv_probe_cost_probes *calibration;
};

static void release_probes(void *ctx)
{
	struct fn_release *job = ctx;

	rv_fn_engine_release(job->tracer);
	rv_probe_cost_probes_free(job->calibration);
	job->calibration = NULL;
}

/* Releases both with the target held (hold.h), and the children followed
 * (nr_children of them: they keep hitting the probes too); stop_fd as there.
 * A release the kernel had not finished when rearview stopped waiting is left
 * to its thread: the tracer and the calibration are then never freed. */
static void release_held(struct rv_backend_state *run, const pid_t *children, size_t nr_children,
			 int stop_fd, struct rv_hold_result *held)
{
	struct fn_release *job = malloc(sizeof(*job));
	struct fn_release inline_job = { run->tracer, run->calibration };

	run->calibration = NULL;
	if (!job) {
		/* no memory for the job: released here, unguarded */
		memset(held, 0, sizeof(*held));
		release_probes(&inline_job);
		held->finished = true;
		return;
	}
	*job = inline_job;
	rv_hold_release_also(run->target, children, nr_children,
			     rv_fn_engine_nr_probes(run->tracer), release_probes, job, stop_fd,
			     held);
	run->tracer_releasing = !held->finished;
	if (held->finished)
		free(job);
}

static void fn_free(struct rv_backend_state *run)
{
	if (!run)
		return;
	/* after an error, the probes may still be there: released as a stop
	 * releases them, without waiting on the target */
	if (run->tracer && !run->tracer_releasing && run->target &&
	    rv_fn_engine_nr_probes(run->tracer)) {
		struct rv_hold_result held;
		pid_t children[RV_FN_HELD_CHILDREN];
		size_t nr_children =
			rv_fn_engine_children(run->tracer, children, RV_FN_HELD_CHILDREN);

		rv_fn_engine_disarm(run->tracer);
		release_held(run, children, nr_children, -1, &held);
	}
	if (!run->tracer_releasing)
		rv_fn_engine_free(run->tracer); /* detaches first */
	rv_probe_cost_probes_free(run->calibration);
	rv_fn_live_free(run->live);
	for (size_t i = 0; run->live_names && i < run->funcs.count; i++)
		free(run->live_names[i]);
	free(run->live_names);
	rv_fn_stream_free(run->stream);
	if (run->timer_fd >= 0)
		close(run->timer_fd);
	free(run->calls);
	free(run->skips);
	rv_sample_engine_free(run->engine);
	rv_perf_writer_free(run->capture);
	free(run->processes);
	rv_kfunc_plan_destroy(&run->kfuncs);
	rv_fn_list_destroy(&run->funcs);
	free(run);
}

static struct rv_backend_state *fn_new(struct rv_session *s, struct rv_target *target)
{
	struct rv_backend_state *run = calloc(1, sizeof(*run));

	if (!run)
		return NULL;
	run->s = s;
	run->target = target;
	run->timer_fd = -1;
	rv_fn_list_init(&run->funcs);
	return run;
}

/* What a probe pair costs a call here, for the summary's overhead; the
 * probes are released while recording goes on. Not measuring is not fatal:
 * the summary then says nothing of the overhead. */
static void measure_probe_cost(struct rv_backend_state *run)
{
	/* The exits are probed as the tracer probes them: at the return
	 * sites, or uretprobes with --exits uretprobe. */
	struct rv_probe_cost_config config = {
		.exit = run->s->opts->exits_uretprobe ? RV_PROBE_COST_EXIT_URETPROBE
						      : RV_PROBE_COST_EXIT_RET,
	};
	struct rv_probe_cost cost;
	struct rv_error err = { 0 };
	char count[32];

	if (!run->funcs.count)
		return;
	if (rv_probe_cost_measure(&config, &cost, &run->calibration, &err)) {
		rv_warn("cannot measure what a probe costs on this machine (%s): the summary "
			"will not estimate the probes' overhead",
			err.message);
		return;
	}
	rv_probe_cost_release(run->calibration);
	run->probe_ns = cost.ns_per_call;
	if (run->funcs.count > MANY_FUNCTIONS)
		rv_note("each call of the %s functions probed costs at least %.1f us here: the "
			"program runs slower by that for every call they make",
			rv_count_text(run->funcs.count, count, sizeof(count)),
			cost.ns_per_call / 1e3);
	rv_debug("a probe pair costs %.0f ns a call here (quartiles %.0f..%.0f "
		 "ns, %u rounds of %u calls, measured in %.0f ms)",
		 cost.ns_per_call, cost.low_ns, cost.high_ns, cost.rounds, cost.calls_per_round,
		 cost.elapsed_ns / 1e6);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The status line while recording, when stderr is a terminal. */
static int open_live(struct rv_backend_state *run, struct rv_error *err)
{
	struct rv_fn_live_config config = {
		.out = stderr,
		.is_terminal = isatty(STDERR_FILENO),
		.nr_functions = run->funcs.count,
		.start_ns = monotonic_ns(),
	};
	struct winsize size;

	if (!config.is_terminal || !run->funcs.count)
		return 0;
	if (!ioctl(STDERR_FILENO, TIOCGWINSZ, &size))
		config.columns = size.ws_col;
	run->live_names = calloc(run->funcs.count, sizeof(*run->live_names));
	if (!run->live_names)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < run->funcs.count; i++) {
		const char *name = run->funcs.items[i].name;

		run->live_names[i] = rv_demangle(name);
		if (!run->live_names[i])
			run->live_names[i] = strdup(name);
		if (!run->live_names[i])
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	config.names = (const char *const *)run->live_names;
	return rv_fn_live_create(&run->live, &config, err);
}

static uint64_t ring_lost(void *ctx, uint32_t cpu)
{
	return rv_fn_engine_lost(ctx, cpu);
}

/* The rings' reader, the per-function counts and the drain timer. */
static int open_stream(struct rv_session *s, struct rv_backend_state *run,
		       const struct rv_fn_engine_config *tc, struct rv_error *err)
{
	const int *fds;
	struct rv_fn_stream_config sc = {
		.nr_rings = rv_fn_engine_rings(run->tracer, &fds),
		.engine = run->engine,
		.full_execution = s->opts->full_execution,
		.flight_bytes = s->snapshot_size_bytes,
		.lost = ring_lost,
		.lost_ctx = run->tracer,
		.nr_funcs = run->funcs.count,
		.calls_total = &run->calls_total,
	};
	struct itimerspec every = {
		.it_interval = { .tv_nsec = POLL_INTERVAL_MS * 1000000L },
		.it_value = { .tv_nsec = POLL_INTERVAL_MS * 1000000L },
	};
	int ret;

	sc.ring_fds = fds;
	run->calls = calloc(run->funcs.count ? run->funcs.count : 1, sizeof(*run->calls));
	if (!run->calls)
		return rv_error_set(err, ENOMEM, "out of memory");
	sc.calls = run->calls;
	ret = rv_fn_stream_open(&run->stream, &sc, err);
	if (ret)
		return ret;
	run->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (run->timer_fd < 0 || timerfd_settime(run->timer_fd, 0, &every, NULL))
		return rv_error_set(err, errno, "cannot set the function tracer's drain timer: %s",
				    strerror(errno));
	rv_debug("records go through a %u-byte ring buffer per CPU (%zu), drained every %d ms "
		 "%s",
		 rv_fn_ring_bytes(tc), sc.nr_rings, POLL_INTERVAL_MS,
		 s->opts->full_execution ? "into the capture"
					 : "into a flight recorder of 48-byte records");
	return 0;
}

/* Opens the capture, the bpf-output events and the tracer, sets the gate,
 * and attaches every probe: the target can be let go. */
static int fn_open(struct rv_session *s, struct rv_target *target, struct rv_gating *gating,
		   struct rv_backend_state **out, struct rv_error *err)
{
	struct rv_backend_state *run = fn_new(s, target);
	struct rv_sample_config config = engine_config(s, target);
	struct rv_fn_engine_config tc;
	int ret;

	*out = run;
	if (!run)
		return rv_error_set(err, ENOMEM, "out of memory");
	run->gating = gating;
	snprintf(run->capture_path, sizeof(run->capture_path), "%s/perf.data", s->capture_dir);
	ret = select_functions(s, target->pids, target->nr_pids, NULL, run, err);
	if (!ret)
		ret = plan_kernel_functions(s, run, err);
	if (!ret && gating)
		ret = rv_gating_attach(gating, NULL, 0, err);
	if (ret)
		return ret;
	/* Kernel function addresses make the capture as private as a kernel trace. */
	ret = rv_perf_writer_open(&run->capture, run->capture_path, err);
	if (!ret)
		ret = rv_session_flush_capture(s, run->capture, CLOCK_MONOTONIC, err);
	if (ret)
		return ret;
	if (run->kfuncs.count)
		rv_trace_writer_set_private(s->writer);
	config.capture = run->capture;
	ret = rv_sample_engine_open(&run->engine, &config, err);
	/* Enabled before the probes exist, so that no record finds its event off. */
	if (!ret)
		ret = rv_sample_engine_start(run->engine, err);
	if (ret)
		return ret;
	tc = tracer_config(s, run);
	ret = rv_fn_engine_open(&run->tracer, &tc, err);
	if (!ret && tc.recorder_slots && gating) {
		rv_debug("records go to a per-thread flight recorder in BPF maps (%u thread%s, "
			 "the last %u records of each), read at each snapshot",
			 tc.recorder_slots, tc.recorder_slots == 1 ? "" : "s",
			 RV_FN_RECORDER_RECORDS);
		run->recorder = true;
	} else if (!ret) {
		ret = open_stream(s, run, &tc, err);
	}
	/* Measured before the target's probes are attached, so that the note
	 * saying they are is followed at once by their arming: a user (or a
	 * test) who stops rearview after that note gets the calls made since,
	 * not an empty trace because the calibration still ran. */
	if (!ret)
		measure_probe_cost(run);
	if (!ret)
		ret = attach_everything(s, target, run, err);
	if (!ret)
		ret = rv_fn_engine_arm(run->tracer, err);
	run->armed_ns = monotonic_ns();
	if (!ret)
		ret = open_live(run, err);
	return ret;
}

/* Everything was started by fn_open: the probes record from the moment
 * they are armed. */
static int fn_start(struct rv_backend_state *run, struct rv_error *err)
{
	return 0;
}

static size_t fn_pollfds(const struct rv_backend_state *run, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	if (run->timer_fd >= 0 && max > 0)
		fds[n++] = (struct pollfd){ .fd = run->timer_fd, .events = POLLIN };
	return n + rv_sample_engine_pollfds(run->engine, fds + n, max - n);
}

/* The status line, from the calls drained so far per function. */
static void tick_live(struct rv_backend_state *run)
{
	uint64_t now = monotonic_ns();

	if (run->live && rv_fn_live_due(run->live, now))
		rv_fn_live_tick(run->live, now, run->calls, run->calls_total);
}

/* The rings first, then the engine's events: the engine's watermark (the
 * start of its previous pass) is then older than every record read. */
static int fn_poll(struct rv_backend_state *run, struct rv_error *err)
{
	uint64_t expirations;
	int ret = 0;

	if (run->timer_fd >= 0 && read(run->timer_fd, &expirations, sizeof(expirations)) < 0 &&
	    errno != EAGAIN)
		return rv_error_set(err, errno, "cannot read the drain timer: %s", strerror(errno));
	if (run->stream)
		ret = rv_fn_stream_drain(run->stream, err);
	if (!ret)
		ret = rv_sample_engine_drain(run->engine, err);
	tick_live(run);
	return ret;
}

static int fn_mark(struct rv_backend_state *run, const struct rv_mark *mark, struct rv_error *err)
{
	return rv_session_engine_mark(run->engine, mark, err);
}

/* In recorder mode a snapshot's records are in the tracer's BPF maps: they
 * are handed to the engine first, which then writes them as any snapshot. */
static int fn_snapshot(struct rv_backend_state *run, const struct rv_gating_snapshot *what,
		       size_t *taken, struct rv_error *err)
{
	int ret = 0;

	if (run->recorder)
		ret = rv_fn_engine_snapshot(run->tracer, run->engine, &what->selection, NULL, err);
	return ret ? ret : rv_sample_engine_snapshot(run->engine, &what->selection, taken, err);
}

/* Recorder mode: how many records each thread made and how many of them
 * newer ones overwrote before a snapshot could take them. */
static void report_recorder(const struct rv_backend_state *run)
{
	struct rv_fn_recorder_thread threads[RV_FN_RECORDER_MAX_SLOTS];
	struct rv_error err = { 0 };
	uint64_t overwritten = 0;
	size_t n = 0, with = 0;

	if (rv_fn_engine_recorder_threads(run->tracer, threads, RV_FN_RECORDER_MAX_SLOTS, &n,
					  &err)) {
		rv_warn("%s", err.message);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rv_debug("recorder: thread %" PRIu32 " (process %" PRIu32 "): %" PRIu64
			 " records, %" PRIu64 " overwritten by newer ones (%" PRIu64
			 " before a snapshot read them)",
			 threads[i].tid, threads[i].pid, threads[i].records, threads[i].overwritten,
			 threads[i].overwritten_unread);
		overwritten += threads[i].overwritten_unread;
		with += threads[i].overwritten_unread > 0;
	}
	if (overwritten)
		rv_note("the per-thread flight recorder kept the last %u records of each thread: "
			"%" PRIu64 " older record%s of %zu thread%s were overwritten before a "
			"snapshot read them",
			RV_FN_RECORDER_RECORDS, overwritten, overwritten == 1 ? "" : "s", with,
			with == 1 ? "" : "s");
}

/* Says what the BPF side counted and the kernel lost. Returns the records
 * lost. */
static uint64_t report_counts(struct rv_backend_state *run, const struct rv_sample_stats *stats)
{
	uint64_t counts[RV_FN_NR_STATS];
	struct rv_error err = { 0 };
	struct rv_fn_stream_stats ss = { 0 };
	/* What the capture says was lost (the rings' counts were written into
	 * it as LOST_SAMPLES records, and any sideband the kernel lost): one
	 * number for the run and for decode --stats. */
	uint64_t lost = stats->lost;

	if (run->stream)
		rv_fn_stream_stats(run->stream, &ss);
	if (!rv_fn_engine_stats(run->tracer, counts, &err)) {
		rv_debug("records: %" PRIu64 " drained (%" PRIu64 " calls), %" PRIu64
			 " lost; %" PRIu64 " kept by the recorder; %" PRIu64
			 " outside --filter windows dropped, %" PRIu64
			 " tracepoint hits of other processes",
			 ss.records, run->calls_total, ss.lost, counts[RV_FN_STAT_RECORDED],
			 counts[RV_FN_STAT_OUTSIDE], counts[RV_FN_STAT_OTHER_PROCESS]);
		if (ss.malformed)
			rv_warn("%" PRIu64 " records of an unexpected size were skipped",
				ss.malformed);
		if (counts[RV_FN_STAT_NO_SLOT])
			rv_warn("%" PRIu64 " records of threads beyond the per-thread flight "
				"recorder's slots were dropped: those threads are missing from "
				"the trace",
				counts[RV_FN_STAT_NO_SLOT]);
	} else {
		rv_warn("%s", err.message);
	}
	if (lost)
		rv_warn("%" PRIu64 " records were lost, because the per-CPU buffers were full: the "
			"trace is missing those calls, returns or kernel events (marked where "
			"they are missing); trace fewer functions to lose fewer",
			lost);
	report_recorder(run);
	if (ss.evicted)
		rv_debug("the flight recorder kept the last %" PRIu64 " records (%" PRIu64
			 " older ones aged out)",
			 ss.kept, ss.evicted);
	return lost;
}

/* What following children left out: the children that exec'd (traced up
 * to their exec), those the target map could not take, and those still
 * running when the target exited. */
static void report_children(struct rv_backend_state *run, const pid_t *running, size_t n)
{
	uint64_t counts[RV_FN_NR_STATS];
	struct rv_error err = { 0 };

	if (!follows(run->s) || rv_fn_engine_stats(run->tracer, counts, &err))
		return;
	if (counts[RV_FN_STAT_EXEC])
		rv_note("%" PRIu64 " child process%s exec'd another program: the uprobe backend "
			"follows forks but not execs, so %s calls after the exec are not in the "
			"trace (sampling, the default backend, follows execs)",
			counts[RV_FN_STAT_EXEC], counts[RV_FN_STAT_EXEC] == 1 ? "" : "es",
			counts[RV_FN_STAT_EXEC] == 1 ? "its" : "their");
	if (counts[RV_FN_STAT_UNFOLLOWED])
		rv_warn("%" PRIu64 " child process%s not traced: more than %d processes were "
			"traced at once",
			counts[RV_FN_STAT_UNFOLLOWED],
			counts[RV_FN_STAT_UNFOLLOWED] == 1 ? " was" : "es were",
			RV_FN_MAX_PROCESSES);
	rv_session_note_running_children(running, n);
}

/* The program runs on unprobed from here; what it did is in the rings, or
 * in recorder mode in the recorder, whose records are wanted when the end is
 * the snapshot (a --trigger that never fired). */
static void fn_disarm(struct rv_backend_state *run)
{
	rv_fn_engine_disarm(run->tracer);
}

static int fn_stop(struct rv_backend_state *run, bool keep_rest, struct rv_error *err)
{
	struct rv_sample_stats stats;
	struct rv_hold_result held;
	pid_t children[RV_FN_HELD_CHILDREN];
	size_t nr_children;
	int ret = 0;

	rv_fn_live_finish(run->live);
	rv_fn_engine_disarm(run->tracer);
	run->stopped_ns = monotonic_ns();
	/* the children followed keep hitting the probes too */
	nr_children = rv_fn_engine_children(run->tracer, children, RV_FN_HELD_CHILDREN);
	release_held(run, children, nr_children, run->s->signal_fd, &held);
	if (held.held)
		rv_debug("the program was held still while the probes were released (%llu ms)",
			 held.elapsed_ms);
	if (held.interrupted) {
		run->s->interrupted_again = true;
		return 0;
	}
	if (run->timer_fd >= 0)
		close(run->timer_fd);
	run->timer_fd = -1;
	/* disarmed: what the rings hold is the rest of the recording */
	if (run->stream)
		ret = rv_fn_stream_finish(run->stream, err);
	if (!ret && run->gating && rv_fn_plan_recorder_mode(run->s->opts) && keep_rest)
		ret = rv_fn_engine_snapshot(run->tracer, run->engine, NULL, NULL, err);
	if (!ret)
		ret = rv_sample_engine_stop(run->engine, keep_rest, err);
	rv_sample_engine_stats(run->engine, &stats);
	run->lost = report_counts(run, &stats);
	run->children_not_followed = stats.children_not_followed;
	report_children(run, children, nr_children);
	return ret;
}

static int fn_finish(struct rv_backend_state *run, struct rv_render_options *out,
		     struct rv_error *err)
{
	struct rv_fn_attach_report report;
	char count[32];
	int ret = rv_session_finish_capture(run->s, run->capture, CLOCK_MONOTONIC, err);

	rv_fn_engine_report(run->tracer, &report);
	run->skips = calloc(run->funcs.nr_skipped ? run->funcs.nr_skipped : 1, sizeof(*run->skips));
	if (!run->skips && !ret)
		ret = rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; run->skips && i < run->funcs.nr_skipped; i++)
		run->skips[i] = (struct rv_render_skip){ .name = run->funcs.skipped[i].name,
							 .reason = run->funcs.skipped[i].reason,
							 .note = run->funcs.skipped[i].note };
	snprintf(run->note, sizeof(run->note), "%s function%s traced exactly",
		 rv_count_text(report.attached, count, sizeof(count)),
		 report.attached == 1 ? "" : "s");
	*out = (struct rv_render_options){
		.decode = { .path = run->capture_path,
			    .include_kernel = run->kfuncs.count > 0,
			    .live = true },
		.recorded = true,
		.recording_note = run->note,
		.lost_while_recording = run->lost,
		.probe_ns_per_call = run->probe_ns,
		.probe_exits_at_sites = !run->s->opts->exits_uretprobe,
		.probed_calls = run->calls_total,
		.recording_ns =
			run->stopped_ns > run->armed_ns ? run->stopped_ns - run->armed_ns : 0,
		.main_thread_only = !run->s->opts->multi_thread,
		.skipped = run->skips,
		.nr_skipped = run->skips ? run->funcs.nr_skipped : 0,
		.children_not_recorded = run->children_not_followed,
		.children_not_recorded_why = !run->children_not_followed ? NULL
					     : run->s->follow_blocked	 ? "the kernel shows no BTF"
									 : "--no-follow",
	};
	/* The tracer's maps and the engine's rings are not needed to render. */
	if (!run->tracer_releasing)
		rv_fn_engine_free(run->tracer);
	run->tracer = NULL;
	rv_fn_stream_free(run->stream);
	run->stream = NULL;
	rv_sample_engine_free(run->engine);
	run->engine = NULL;
	rv_perf_writer_free(run->capture);
	run->capture = NULL;
	return ret;
}

/* ---- --dry-run ---- */

static int fn_describe(struct rv_session *s, const char *exe, pid_t pid,
		       const struct rv_gate_sites *sites, struct rv_dry_run_plan *plan,
		       struct rv_error *err)
{
	struct rv_sample_config config = engine_config(s, NULL);
	struct rv_fn_engine_config tc;
	struct rv_backend_state *run = fn_new(s, NULL);
	int ret;

	if (!run)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = select_functions(s, pid > 0 ? &pid : NULL, pid > 0 ? 1 : 0, exe, run, err);
	if (!ret)
		ret = plan_kernel_functions(s, run, err);
	if (!ret)
		ret = rv_session_describe_engine(s, &config, false, "bpf-output",
						 " (" RV_FN_EVENT_NAME ")", NULL, plan, err);
	if (!ret) {
		tc = tracer_config(s, run);
		tc.gate_windows_fd = s->opts->filter_start ? 0 : -1; /* only whether */
		ret = rv_fn_engine_describe(plan, &tc, err);
	}
	if (!ret && sites)
		ret = rv_gating_describe(sites, pid, plan, err);
	fn_free(run);
	return ret;
}

const struct rv_backend_ops rv_fn_backend = {
	.description = "function tracing (BPF uprobes)",
	.check = fn_check,
	.describe = fn_describe,
	.open = fn_open,
	.start = fn_start,
	.pollfds = fn_pollfds,
	.poll = fn_poll,
	.mark = fn_mark,
	.snapshot = fn_snapshot,
	.disarm = fn_disarm,
	.stop = fn_stop,
	.finish = fn_finish,
	.free = fn_free,
	.outside_windows = "calls outside them were not recorded",
	.capture_hint = "perf script -i",
};
