/* session.c: a recording session from options to trace, with its one loop;
 * see session.h. */
#define RV_LOG_DOMAIN "record"
#include "session/session.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record/dry_run.h"
#include "record/pt_attr.h"
#include "record/pt_plan.h"
#include "render/render.h"
#include "session/backend.h"
#include "session/gating.h"
#include "symbolize/kernel_syms.h"
#include "util/leftovers.h"
#include "util/log.h"
#include "util/proc.h"

#define DEFAULT_SNAPSHOT_UPROBE (64ull << 20)
#define POLL_MS			100
#define MAX_POLL_FDS		(4 * RV_PT_MAX_SLOTS + 2 + 1024) /* rings, signals, gate, pidfds */

static const struct rv_backend_ops *backend_of(const struct rv_session *s)
{
	switch (s->engine) {
	case RV_ENGINE_PT:
		return &rv_pt_backend;
	case RV_ENGINE_UPROBE:
		return &rv_fn_backend;
	case RV_ENGINE_SAMPLE:
		break;
	}
	return &rv_sample_backend;
}

static int choose_backend(struct rv_session *s, const struct rv_options *opts,
			  const struct rv_machine *m, struct rv_error *err)
{
	int ret;

	s->engine = RV_ENGINE_SAMPLE;
	switch (opts->backend) {
	case RV_BACKEND_PT:
	case RV_BACKEND_AUTO:
		if (!m->has_intel_pt) {
			if (opts->backend == RV_BACKEND_PT)
				return rv_error_set(
					err, ENODEV,
					"--backend pt: this machine has no Intel PT (no "
					"/sys/bus/event_source/devices/intel_pt); use --backend "
					"sample");
			s->backend_note = "Intel PT is unavailable on this machine (no intel_pt "
					  "PMU); sampling stacks instead";
			return 0;
		}
		ret = rv_pt_pmu_discover(&s->pt_pmu, s->root, err);
		if (ret)
			return ret;
		s->engine = RV_ENGINE_PT;
		return 0;
	case RV_BACKEND_SAMPLE:
		return 0;
	case RV_BACKEND_UPROBE:
		s->engine = RV_ENGINE_UPROBE;
		return 0;
	}
	return 0;
}

/* What each backend needs decided from the options before anything runs. */
static int plan_backend(struct rv_session *s, struct rv_error *err)
{
	const struct rv_options *opts = s->opts;

	switch (s->engine) {
	case RV_ENGINE_UPROBE:
		/* every call is timed: options.c refuses a timer */
		s->snapshot_size_bytes = opts->snapshot_size_bytes ? opts->snapshot_size_bytes
								   : DEFAULT_SNAPSHOT_UPROBE;
		return 0;
	case RV_ENGINE_PT: {
		enum rv_pt_timing timing;

		return rv_pt_plan_timing(opts, &timing, err);
	}
	case RV_ENGINE_SAMPLE:
		break;
	}
	return rv_sample_plan_build(&s->sample, opts, &s->machine, err);
}

/* --working-directory: a directory others can write to lets them replace
 * what rearview writes there (a link in place of perf.data, which root would
 * then write through) or remove it; a sticky one of the user's (or root's)
 * lets them do neither. */
static int check_working_directory(const char *dir, const struct stat *st, struct rv_error *err)
{
	bool sticky_and_ours =
		(st->st_mode & S_ISVTX) && (st->st_uid == geteuid() || st->st_uid == 0);

	if (!(st->st_mode & (S_IWOTH | S_IWGRP)) || sticky_and_ours)
		return 0;
	return rv_error_set(err, EPERM,
			    "--working-directory: '%s' is writable by %s (mode %04o)%s: they "
			    "could read or replace the capture, which holds the program's memory; "
			    "use a directory only you can write to (rearview creates it 0700 when "
			    "it does not exist), or chmod %s '%s'",
			    dir, (st->st_mode & S_IWOTH) ? "others" : "its group",
			    (unsigned)(st->st_mode & 07777),
			    (st->st_mode & S_ISVTX) ? " and owned by someone else" : "",
			    (st->st_mode & S_IWOTH) ? "o-w" : "g-w", dir);
}

/* The capture directory: a temporary one (0700) with the owner record that
 * lets a later run remove it if this one is killed (made so that no kill
 * leaves it without one: util/leftovers.h), or
 * --working-directory, made 0700 when it does not exist. Every file the
 * backends make in it is 0600, so an existing directory that others can
 * read does not show them the capture either. */
static int make_capture_dir(struct rv_session *s, struct rv_error *err)
{
	const char *dir = s->opts->working_directory;
	struct stat st;
	int ret;

	if (!dir) {
		const char *tmp = rv_leftovers_tmpdir();
		char why[sizeof(err->message)];

		ret = rv_leftovers_create_dir(tmp, s->capture_dir, sizeof(s->capture_dir), err);
		if (ret) {
			snprintf(why, sizeof(why), "%s", err->message);
			return rv_error_set(err, -ret,
					    "cannot create a temporary directory for the capture "
					    "in %s: %s; set TMPDIR or use --working-directory",
					    tmp, why);
		}
		s->capture_dir_is_temporary = true;
		return 0;
	}
	if (strlen(dir) >= sizeof(s->capture_dir) - 16)
		return rv_error_set(err, ENAMETOOLONG, "--working-directory: path too long");
	if (mkdir(dir, 0700) && errno != EEXIST)
		return rv_error_set(err, errno, "--working-directory: cannot create '%s': %s", dir,
				    strerror(errno));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return rv_error_set(err, ENOTDIR, "--working-directory: '%s' is not a directory",
				    dir);
	ret = check_working_directory(dir, &st, err);
	if (ret)
		return ret;
	if (access(dir, W_OK))
		return rv_error_set(err, errno, "--working-directory: cannot write to '%s': %s",
				    dir, strerror(errno));
	snprintf(s->capture_dir, sizeof(s->capture_dir), "%s", dir);
	return 0;
}

/* Before any BPF object is opened: where the kernel's BTF is, and what the
 * engine loses without it. The gate and the sample filter need none; the
 * programs that follow a run's children attach by the kernel's own BTF
 * (tp_btf), which --btf cannot stand in for; the uprobe backend's object
 * needs BTF for its CO-RE relocations (fn_check refuses it without). */
static int check_btf(struct rv_session *s, struct rv_error *err)
{
	const struct rv_options *opts = s->opts;
	int ret = rv_kernel_btf_probe(&s->kernel_btf, opts->btf, err);

	if (ret || s->kernel_btf.kernel || s->engine == RV_ENGINE_PT)
		return ret;
	if (opts->command == RV_CMD_RUN && !opts->no_follow) {
		s->follow_blocked = true;
		s->btf_note = s->engine == RV_ENGINE_SAMPLE && !opts->btf
				      ? "no kernel BTF (" RV_KERNEL_BTF_PATH
					", CONFIG_DEBUG_INFO_BTF): COMMAND's children are not "
					"followed, and off-CPU spans say only preempted or "
					"blocked; --btf FILE gives the reasons, --no-follow "
					"records COMMAND alone without this note"
				      : "no kernel BTF (" RV_KERNEL_BTF_PATH
					", CONFIG_DEBUG_INFO_BTF), which following COMMAND's "
					"children needs (--btf cannot stand in for it): they are "
					"not followed; --no-follow records COMMAND alone without "
					"this note";
	} else if (s->engine == RV_ENGINE_SAMPLE && !opts->btf) {
		s->btf_note = "no kernel BTF (" RV_KERNEL_BTF_PATH
			      ", CONFIG_DEBUG_INFO_BTF): off-CPU spans say only preempted or "
			      "blocked; --btf FILE gives the reasons";
	}
	return 0;
}

/* --events: checked against the machine (hardware events need a CPU PMU,
 * tracepoints their ids). */
static int prepare_extra_events(struct rv_session *s, const struct rv_options *opts,
				struct rv_error *err)
{
	if (!opts->events.nr)
		return 0;
	s->extra_events = opts->events;
	return rv_extra_events_resolve(&s->extra_events, s->root, s->machine.has_cpu_pmu, err);
}

int rv_session_prepare(struct rv_session *s, const struct rv_options *opts, struct rv_error *err)
{
	const char *root = getenv(RV_SYSFS_ROOT_ENV);
	const struct rv_backend_ops *backend;
	int ret;

	memset(s, 0, sizeof(*s));
	s->opts = opts;
	s->signal_fd = -1;
	s->root = root && *root ? root : "/";
	/* From here on a stop signal waits for the session (signal_fd, made
	 * below): a Ctrl-C during the checks and set-up (loading the kernel's
	 * BTF takes a while) stops the recording as soon as it starts, and
	 * never ends rearview with a temporary file or directory left. A dry
	 * run records nothing and keeps the default actions. */
	sigemptyset(&s->waited_signals);
	sigaddset(&s->waited_signals, SIGINT);
	sigaddset(&s->waited_signals, SIGTERM);
	sigaddset(&s->waited_signals, SIGHUP);
	sigaddset(&s->waited_signals, SIGCHLD);
	if (!opts->dry_run)
		sigprocmask(SIG_BLOCK, &s->waited_signals, NULL);
	/* what a killed rearview left (util/leftovers.h); a dry run changes nothing */
	if (!opts->dry_run)
		rv_leftovers_sweep(opts->output, rv_leftovers_note_removed, NULL);
	rv_machine_probe(&s->machine, s->root);

	if (opts->include_kernel && geteuid() != 0 && !opts->dry_run)
		return rv_error_set(err, EPERM,
				    "--trace-include-kernel needs root: kernel addresses and "
				    "kernel samples are only shown to root; run rearview as root");
	if (opts->vmlinux) {
		uint8_t id[RV_BUILD_ID_MAX];
		size_t size = rv_kernel_running_build_id(id);

		ret = rv_vmlinux_check(opts->vmlinux, id, size, "the running kernel", err);
		if (ret)
			return ret;
	}
	ret = choose_backend(s, opts, &s->machine, err);
	if (!ret)
		ret = plan_backend(s, err);
	if (!ret && opts->kernel_only && s->engine != RV_ENGINE_PT)
		ret = rv_error_set(err, EINVAL,
				   "--trace-kernel-only traces the kernel with Intel PT, which "
				   "this machine lacks; --trace-include-kernel samples both");
	if (!ret)
		ret = check_btf(s, err);
	if (!ret)
		ret = prepare_extra_events(s, opts, err);
	backend = backend_of(s);
	if (!ret && backend->check)
		ret = backend->check(s, err);
	if (ret || opts->dry_run)
		return ret;
	if (geteuid() != 0 && s->engine == RV_ENGINE_UPROBE)
		return rv_error_set(err, EPERM,
				    "--backend uprobe places uprobes with BPF programs and per-CPU "
				    "perf events, which need root (kernel.perf_event_paranoid is "
				    "%d); run it as root",
				    s->machine.perf_event_paranoid);
	if (geteuid() != 0)
		return rv_error_set(err, EPERM,
				    "rearview samples with per-CPU perf events and a BPF filter, "
				    "which need root (kernel.perf_event_paranoid is %d); run it as "
				    "root",
				    s->machine.perf_event_paranoid);

	/* The output is checked (and its temporary file made) before anything runs. */
	ret = rv_trace_writer_open(&s->writer, opts->output, err);
	if (ret)
		return ret;
	/* A recording shows what only root could see (the target's memory, its
	 * code's names and timings; with --trace-include-kernel, the kernel's):
	 * the trace is the invoking user's alone. */
	rv_trace_writer_set_private(s->writer);
	ret = make_capture_dir(s, err);
	if (ret)
		return ret;

	s->signal_fd = signalfd(-1, &s->waited_signals, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->signal_fd < 0)
		return rv_error_set(err, errno, "cannot create a signalfd: %s", strerror(errno));
	return 0;
}

/* ---- the temporary capture ---- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_temporary_capture(struct rv_session *s)
{
	if (s->capture_dir_is_temporary && s->capture_dir[0])
		nftw(s->capture_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	s->capture_dir[0] = '\0';
}

/* ---- recording ---- */

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000;
}

struct recording {
	const struct rv_backend_ops *ops;
	struct rv_backend_state *backend;
	struct rv_gating *gating;
};

static int act_mark(void *ctx, const struct rv_mark *mark, struct rv_error *err)
{
	struct recording *r = ctx;

	return r->ops->mark(r->backend, mark, err);
}

static int act_snapshot(void *ctx, const struct rv_gating_snapshot *what, size_t *taken,
			struct rv_error *err)
{
	struct recording *r = ctx;

	return r->ops->snapshot(r->backend, what, taken, err);
}

/* Polls until the target exits, a stop signal comes (s->stop_signal), a
 * snapshot ends the recording (s->snapshot_ended), --duration elapses
 * (s->duration_ended) or attach's COMMAND exits (s->command_ended). Each round reads the
 * gate's records first: what ran before them is then in the rings, and the
 * drain brings it in before they are acted on. After the end, one more
 * round takes what the gate said last. */
static int record_loop(struct rv_session *s, struct recording *r, struct rv_target *target,
		       struct rv_error *err)
{
	struct pollfd *fds = calloc(MAX_POLL_FDS, sizeof(*fds));
	struct rv_gating_actions actions = { .ctx = r, .mark = act_mark, .snapshot = act_snapshot };
	unsigned long long deadline_ms = 0;
	size_t n;
	int ret = 0;

	if (!fds)
		return rv_error_set(err, ENOMEM, "out of memory");
	n = r->ops->pollfds(r->backend, fds, MAX_POLL_FDS - 2 - target->nr_pids);
	if (s->signal_fd >= 0)
		fds[n++] = (struct pollfd){ .fd = s->signal_fd, .events = POLLIN };
	if (r->gating)
		fds[n++] = (struct pollfd){ .fd = rv_gating_fd(r->gating), .events = POLLIN };
	for (size_t i = 0; i < target->nr_pids; i++)
		if (target->pidfds[i] >= 0)
			fds[n++] = (struct pollfd){ .fd = target->pidfds[i], .events = POLLIN };
	if (s->opts->duration_ns)
		deadline_ms = now_ms() + (s->opts->duration_ns + 999999) / 1000000;
	for (bool last = false;;) {
		int timeout_ms = POLL_MS;
		bool done = false;

		if (deadline_ms) {
			unsigned long long now = now_ms();

			timeout_ms = now >= deadline_ms		   ? 0
				     : deadline_ms - now < POLL_MS ? (int)(deadline_ms - now)
								   : POLL_MS;
		}
		if (!last && poll(fds, n, timeout_ms) < 0 && errno != EINTR) {
			ret = rv_error_set(err, errno, "poll: %s", strerror(errno));
			break;
		}
		ret = r->gating ? rv_gating_collect(r->gating, err) : 0;
		if (!ret)
			ret = r->ops->poll(r->backend, err);
		if (!ret && r->gating)
			ret = rv_gating_apply(r->gating, &actions, &done, err);
		if (ret || done || last) {
			s->snapshot_ended = done;
			break;
		}
		if (rv_target_read_stop_signals(s->signal_fd, &s->stop_signal)) {
			/* the recording ends now, not once the probes are gone */
			target->stop_signal_ms = now_ms();
			if (r->ops->disarm)
				r->ops->disarm(r->backend);
			last = true;
		}
		if (!last && deadline_ms && now_ms() >= deadline_ms) {
			s->duration_ended = true;
			if (r->ops->disarm)
				r->ops->disarm(r->backend);
			last = true;
		}
		if (!last && s->command && rv_target_poll_exit(s->command)) {
			s->command_ended = true;
			last = true;
		}
		last = last || rv_target_poll_exit(target);
	}
	free(fds);
	return ret;
}

/* Whether Intel PT snapshots pause PT in the kernel at the hit and copy the
 * whole AUX area (record/pt_plan.h pause_snapshots), as the gate and its
 * dry-run description must know. */
static bool pt_pauses(const struct rv_session *s)
{
	return s->engine == RV_ENGINE_PT && !s->opts->full_execution &&
	       rv_pt_pmu_has_aux_pause(&s->pt_pmu);
}

/* The gate for a target of one process: its sites resolved in the process's
 * executable, the gate loaded (the backend attaches it). */
static int open_gating(struct rv_session *s, struct rv_target *target, struct rv_gating **out,
		       struct rv_error *err)
{
	struct rv_gate_sites *sites;
	char exe[PATH_MAX];
	int ret;

	*out = NULL;
	if (!rv_gating_wanted(s->opts))
		return 0;
	if (target->nr_pids != 1)
		return rv_error_set(err, EINVAL,
				    "--filter and --trigger follow one process; attach to one "
				    "(-p PID)");
	sites = malloc(sizeof(*sites));
	if (!sites)
		return rv_error_set(err, ENOMEM, "out of memory");
	ret = rv_proc_exe(target->pids[0], exe, sizeof(exe), err);
	if (!ret)
		ret = rv_gating_resolve(s->opts, exe, target->pids[0], s->signal_fd, sites, err);
	if (!ret)
		ret = rv_gating_new(out, s->opts, &s->kernel_btf, sites, target->pids[0],
				    pt_pauses(s), err);
	free(sites);
	return ret;
}

/* ---- a second stop signal while the trace is written ---- */

/* Once the probes are gone, a second stop signal ends rearview at once:
 * the capture and the unfinished trace are removed, a spawned program is
 * passed the signal (as rv_target_end would), an attached one runs on. */
struct second_signal_watch {
	struct rv_session *s;
	struct rv_target *target;
	int done_fd; /* eventfd: the trace is written, stop watching */
	pthread_t thread;
	bool running;
};

static void *watch_second_signal(void *arg)
{
	struct second_signal_watch *w = arg;
	const char *temp;
	int which = 0;

	for (;;) {
		struct pollfd fds[2] = { { .fd = w->s->signal_fd, .events = POLLIN },
					 { .fd = w->done_fd, .events = POLLIN } };

		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (fds[1].revents & POLLIN)
			return NULL;
		if ((fds[0].revents & POLLIN) &&
		    rv_target_read_stop_signals(w->s->signal_fd, &which))
			break;
	}
	rv_note("%s again: ending now, without the trace", strsignal(which));
	temp = rv_trace_writer_temp_path(w->s->writer);
	if (temp)
		unlink(temp);
	if (w->s->capture_dir_is_temporary && w->s->capture_dir[0])
		nftw(w->s->capture_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (w->target->spawned && w->target->released && !w->target->exited)
		kill(w->target->pids[0], which);
	_exit(128 + which);
}

static void watch_start(struct second_signal_watch *w, struct rv_session *s,
			struct rv_target *target)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->target = target;
	if (!s->stop_signal || s->signal_fd < 0)
		return;
	w->done_fd = eventfd(0, EFD_CLOEXEC);
	if (w->done_fd < 0)
		return;
	w->running = !pthread_create(&w->thread, NULL, watch_second_signal, w);
	if (!w->running)
		close(w->done_fd);
}

static void watch_end(struct second_signal_watch *w)
{
	uint64_t one = 1;

	if (!w->running)
		return;
	if (write(w->done_fd, &one, sizeof(one)) < 0)
		pthread_cancel(w->thread);
	pthread_join(w->thread, NULL);
	close(w->done_fd);
	w->running = false;
}

static int render_capture(struct rv_session *s, const struct rv_backend_ops *ops,
			  const struct rv_render_options *ro, struct rv_error *err)
{
	int ret = rv_render(ro, s->writer, err);

	if (!ret && !s->capture_dir_is_temporary)
		rv_note("the capture is in %s (%s %s)", ro->decode.path, ops->capture_hint,
			ro->decode.path);
	return ret;
}

int rv_session_record(struct rv_session *s, struct rv_target *target, struct rv_error *err)
{
	struct recording r = { .ops = backend_of(s) };
	struct second_signal_watch watch = { .running = false };
	struct rv_render_options ro;
	int ret;

	memset(&ro, 0, sizeof(ro));
	ret = open_gating(s, target, &r.gating, err);
	if (!ret && s->backend_note)
		rv_note("%s", s->backend_note);
	if (!ret && s->btf_note)
		rv_note("%s", s->btf_note);
	if (!ret)
		ret = r.ops->open(s, target, r.gating, &r.backend, err);
	if (!ret)
		ret = r.ops->start(r.backend, err);
	if (!ret)
		ret = rv_target_release(target, err);
	if (!ret && s->command)
		ret = rv_target_release(s->command, err);
	if (!ret)
		ret = record_loop(s, &r, target, err);
	if (!ret) {
		if (s->stop_signal)
			rv_note("%s: stopping the recording and writing the trace",
				strsignal(s->stop_signal));
		else if (s->duration_ended)
			rv_note("--duration is up: stopping the recording and writing the trace%s",
				target->spawned ? "; the program runs on" : "");
		else if (s->command_ended)
			rv_note("the command exited: stopping the recording and writing the "
				"trace");
		else if (s->snapshot_ended)
			rv_note("snapshot taken: stopping the recording and writing the trace%s",
				target->spawned ? "; the program runs on" : "");
		ret = r.ops->stop(r.backend, r.gating ? rv_gating_keep_rest(r.gating) : true, err);
	}
	if (!ret && s->interrupted_again)
		ret = rv_error_set(err, EINTR,
				   "interrupted again while the probes were being removed: the "
				   "probes are gone, the trace was not written%s",
				   target->spawned ? "" : "; the program runs on");
	if (!ret && r.gating)
		rv_gating_report(r.gating, r.ops->outside_windows);
	rv_gating_free(r.gating); /* the program runs on, unprobed */
	if (!ret)
		watch_start(&watch, s, target);
	if (!ret)
		ret = r.ops->finish(r.backend, &ro, err);
	if (!ret)
		ret = render_capture(s, r.ops, &ro, err);
	watch_end(&watch);
	if (r.backend)
		r.ops->free(r.backend);
	/* written into the trace: a temporary capture goes now, not once the
	 * program has exited */
	if (!ret)
		remove_temporary_capture(s);
	return ret;
}

/* ---- --dry-run ---- */

/* The gate's thresholds under the plan (record/dry_run.h). */
static void print_gate(const struct rv_session *s, const struct rv_gate_sites *sites)
{
	const struct rv_options *opts = s->opts;
	struct rv_dry_run_gate gate = {
		.pt_pause = pt_pauses(s),
		.start = sites->filter ? sites->start.function : NULL,
		.stop = sites->filter ? sites->stop.function : NULL,
		.trigger = sites->trigger ? sites->at.function : NULL,
		.min_duration_ns = opts->min_duration_ns,
		.multi_snapshot = opts->multi_snapshot,
	};

	rv_dry_run_print_gate(stdout, &gate);
}

/* --events: each event on the target's process (inherit) per CPU, its
 * records sent to that CPU's ring of the engine's event. */
static int describe_extra_events(const struct rv_session *s, pid_t pid,
				 struct rv_dry_run_plan *plan, struct rv_error *err)
{
	int nr_cpus = s->machine.nr_cpus > 0 ? s->machine.nr_cpus : 1;
	int ret = 0;

	if (s->engine == RV_ENGINE_PT)
		return 0; /* the PT backend's siblings: pt_backend.c says */
	for (size_t i = 0; !ret && i < s->extra_events.nr; i++) {
		for (int cpu = 0; !ret && cpu < nr_cpus; cpu++) {
			char label[RV_EXTRA_NAME_MAX + 128];
			struct rv_dry_run_event ev = {
				.label = label, .group = -1, .cpu = cpu, .pid = pid > 0 ? pid : 0
			};

			snprintf(
				label, sizeof(label),
				"--events %s, %s, CPU %d, output to its ring of the engine's event",
				s->extra_events.events[i].name,
				pid > 0 ? "the process and the threads it makes"
					: "the command's process (pid 0 here) and what it makes",
				cpu);
			rv_extra_event_attr(&s->extra_events.events[i], s->opts->include_kernel,
					    &ev.attr);
			ret = rv_dry_run_add_event(plan, &ev, err);
		}
	}
	return ret;
}

/* The --events section: what each becomes in the trace. */
static void print_extra_events(const struct rv_session *s)
{
	char list[1024];

	if (!s->extra_events.nr)
		return;
	rv_extra_events_describe(&s->extra_events, list, sizeof(list));
	printf("\nextra events (--events): %s\n", list);
	for (size_t i = 0; i < s->extra_events.nr; i++) {
		const struct rv_extra_event *ev = &s->extra_events.events[i];

		printf("  %s: %s, %s; a sample every %llu, drawn as an instant \"%s\" on the "
		       "thread that took it\n",
		       ev->name,
		       ev->kind == RV_EXTRA_TRACEPOINT ? "tracepoint"
		       : ev->kind == RV_EXTRA_HARDWARE ? "hardware event"
						       : "software event",
		       ev->kind == RV_EXTRA_TRACEPOINT ? "id from tracefs" : "counted per thread",
		       (unsigned long long)ev->period, ev->name);
	}
}

int rv_session_dry_run(struct rv_session *s, const char *exe, pid_t pid, struct rv_error *err)
{
	const struct rv_backend_ops *ops = backend_of(s);
	struct rv_dry_run_plan plan;
	struct rv_gate_sites *sites = NULL;
	char running[PATH_MAX];
	int ret = 0;

	if (!exe) {
		ret = rv_proc_exe(pid, running, sizeof(running), err);
		if (ret)
			return ret;
		exe = running;
	}

	rv_dry_run_plan_init(&plan);
	{
		struct rv_uprobe_pmu uprobe;
		struct rv_error ignored = { 0 };

		/* names the uprobe events; without a uprobe PMU the gate fails later,
		 * with the reason */
		if (!rv_uprobe_pmu_type(s->root, &uprobe, &ignored))
			rv_dry_run_set_uprobe_pmu(&plan, &uprobe);
	}
	if (rv_gating_wanted(s->opts)) {
		sites = malloc(sizeof(*sites));
		ret = sites ? rv_gating_resolve(s->opts, exe, pid, s->signal_fd, sites, err)
			    : rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!ret)
		ret = ops->describe(s, exe, pid, sites, &plan, err);
	if (!ret)
		ret = describe_extra_events(s, pid, &plan, err);
	if (!ret) {
		printf("rearview would record %s%s with %s:\n\n", exe,
		       pid > 0 ? "" : " (started by rearview)", ops->description);
		rv_dry_run_print(stdout, &plan, s->engine == RV_ENGINE_PT ? &s->pt_pmu : NULL);
		if (sites)
			print_gate(s, sites);
		if (s->btf_note)
			printf("\nnote: %s\n", s->btf_note);
		print_extra_events(s);
		fflush(stdout);
	}
	rv_dry_run_plan_destroy(&plan);
	free(sites);
	return ret;
}

void rv_session_destroy(struct rv_session *s)
{
	if (s->writer)
		rv_trace_writer_free(s->writer);
	s->writer = NULL;
	remove_temporary_capture(s);
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	s->signal_fd = -1;
}
