/* record.c: a recording session from options to trace; see record.h. */
#define RV_LOG_DOMAIN "record"
#include "cmd/record.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "cmd/gating.h"
#include "cmd/record_fn.h"
#include "cmd/record_pt.h"
#include "cmd/render.h"
#include "record/dry_run.h"
#include "record/machine.h"
#include "record/pt_attr.h"
#include "record/sample_engine.h"
#include "util/log.h"
#include "util/proc.h"

#define DEFAULT_SNAPSHOT_FP	(4ull << 20)
#define DEFAULT_SNAPSHOT_DWARF	(64ull << 20)
#define DEFAULT_SNAPSHOT_UPROBE (64ull << 20)

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

static int choose_frequency(struct rv_session *s, const struct rv_machine *m, struct rv_error *err)
{
	const struct rv_options *opts = s->opts;

	if (s->engine == RV_ENGINE_UPROBE)
		return 0; /* every call is timed: options.c refuses a timer */
	if (s->engine == RV_ENGINE_PT) {
		if (opts->timer == RV_TIMER_SAMPLE)
			return rv_error_set(err, EINVAL,
					    "--timer-resolution sample:%llu sets a sampling rate; "
					    "Intel PT takes low, normal, high or custom:... (or use "
					    "--backend sample)",
					    (unsigned long long)opts->sample_hz);
		return 0;
	}

	switch (opts->timer) {
	case RV_TIMER_LOW:
		s->frequency = 1000;
		break;
	case RV_TIMER_NORMAL:
		s->frequency = 10000;
		break;
	case RV_TIMER_HIGH:
		s->frequency = m->max_sample_rate ? m->max_sample_rate : 10000;
		break;
	case RV_TIMER_SAMPLE:
		s->frequency = opts->sample_hz;
		break;
	case RV_TIMER_CUSTOM:
		return rv_error_set(err, EINVAL,
				    "--timer-resolution custom:%s configures Intel PT; stack "
				    "sampling takes low, normal, high or sample:HZ",
				    opts->timer_custom);
	}
	if (m->max_sample_rate && s->frequency > m->max_sample_rate)
		return rv_error_set(
			err, EINVAL,
			"--timer-resolution: %llu Hz is above the kernel's limit of %llu "
			"Hz (kernel.perf_event_max_sample_rate); ask for less, or use "
			"high",
			(unsigned long long)s->frequency, (unsigned long long)m->max_sample_rate);
	return 0;
}

static int choose_callgraph(struct rv_session *s, const struct rv_machine *m, struct rv_error *err)
{
	if (s->engine == RV_ENGINE_UPROBE) {
		s->snapshot_size_bytes = s->opts->snapshot_size_bytes;
		if (!s->snapshot_size_bytes)
			s->snapshot_size_bytes = DEFAULT_SNAPSHOT_UPROBE;
		return 0;
	}
	switch (s->opts->callgraph) {
	case RV_CALLGRAPH_LBR:
		if (!m->has_lbr)
			return rv_error_set(err, ENODEV,
					    "--callgraph-mode lbr: this CPU has no last branch "
					    "records (LBR) that perf can use; use fp or dwarf");
		return rv_error_set(err, ENOTSUP,
				    "--callgraph-mode lbr: LBR call stacks are not supported by "
				    "this version; use fp or dwarf");
	case RV_CALLGRAPH_FP:
		s->dwarf = false;
		break;
	case RV_CALLGRAPH_DWARF:
	case RV_CALLGRAPH_DEFAULT:
		s->dwarf = true;
		break;
	}
	s->snapshot_size_bytes = s->opts->snapshot_size_bytes;
	if (!s->snapshot_size_bytes)
		s->snapshot_size_bytes = s->dwarf ? DEFAULT_SNAPSHOT_DWARF : DEFAULT_SNAPSHOT_FP;
	return 0;
}

static int make_capture_dir(struct rv_session *s, struct rv_error *err)
{
	const char *dir = s->opts->working_directory;
	struct stat st;

	if (!dir) {
		const char *tmp = getenv("TMPDIR");

		snprintf(s->capture_dir, sizeof(s->capture_dir), "%s/rearview-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(s->capture_dir))
			return rv_error_set(err, errno,
					    "cannot create a temporary directory for the capture "
					    "in %s: %s; set TMPDIR or use --working-directory",
					    tmp && *tmp ? tmp : "/tmp", strerror(errno));
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
	if (access(dir, W_OK))
		return rv_error_set(err, errno, "--working-directory: cannot write to '%s': %s",
				    dir, strerror(errno));
	snprintf(s->capture_dir, sizeof(s->capture_dir), "%s", dir);
	return 0;
}

int rv_session_prepare(struct rv_session *s, const struct rv_options *opts, struct rv_error *err)
{
	const char *root = getenv(RV_SYSFS_ROOT_ENV);
	struct rv_machine machine;
	int ret;

	memset(s, 0, sizeof(*s));
	s->opts = opts;
	s->signal_fd = -1;
	s->root = root && *root ? root : "/";
	rv_machine_probe(&s->machine, s->root);
	machine = s->machine;

	if (opts->include_kernel && geteuid() != 0 && !opts->dry_run)
		return rv_error_set(err, EPERM,
				    "--trace-include-kernel needs root: kernel addresses and "
				    "kernel samples are only shown to root; run rearview as root");
	ret = choose_backend(s, opts, &machine, err);
	if (!ret)
		ret = choose_frequency(s, &machine, err);
	if (!ret)
		ret = choose_callgraph(s, &machine, err);
	if (!ret && opts->kernel_only && s->engine != RV_ENGINE_PT)
		ret = rv_error_set(err, EINVAL,
				   "--trace-kernel-only traces the kernel with Intel PT, which "
				   "this machine lacks; --trace-include-kernel samples both");
	if (!ret && s->engine == RV_ENGINE_UPROBE)
		ret = rv_session_check_fn(s, err);
	if (ret || opts->dry_run)
		return ret;
	if (geteuid() != 0 && s->engine == RV_ENGINE_UPROBE)
		return rv_error_set(err, EPERM,
				    "--backend uprobe places uprobes with BPF programs and per-CPU "
				    "perf events, which need root (kernel.perf_event_paranoid is "
				    "%d); run it as root",
				    machine.perf_event_paranoid);
	if (geteuid() != 0)
		return rv_error_set(err, EPERM,
				    "rearview samples with per-CPU perf events and a BPF filter, "
				    "which need root (kernel.perf_event_paranoid is %d); run it as "
				    "root",
				    machine.perf_event_paranoid);

	/* The output is checked (and its temporary file made) before anything runs. */
	ret = rv_trace_writer_open(&s->writer, opts->output, err);
	if (ret)
		return ret;
	if (opts->include_kernel)
		rv_trace_writer_set_private(s->writer);
	ret = make_capture_dir(s, err);
	if (ret)
		return ret;

	sigemptyset(&s->waited_signals);
	sigaddset(&s->waited_signals, SIGINT);
	sigaddset(&s->waited_signals, SIGTERM);
	sigaddset(&s->waited_signals, SIGHUP);
	sigaddset(&s->waited_signals, SIGCHLD);
	sigprocmask(SIG_BLOCK, &s->waited_signals, NULL);
	s->signal_fd = signalfd(-1, &s->waited_signals, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->signal_fd < 0)
		return rv_error_set(err, errno, "cannot create a signalfd: %s", strerror(errno));
	return 0;
}

/* Reads pending signals; true when one asks us to stop. */
static bool read_stop_signals(int fd, int *which)
{
	struct signalfd_siginfo info;
	bool stop = false;

	while (read(fd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
		if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM ||
		    info.ssi_signo == SIGHUP) {
			stop = true;
			*which = (int)info.ssi_signo;
		}
	}
	return stop;
}

int rv_session_loop(struct rv_session *s, struct rv_target *target, struct rv_sample_engine *engine,
		    struct rv_gating *gating, int *stop_signal, struct rv_error *err)
{
	struct pollfd fds[1024 + 3 + 1024];
	size_t nr_engine = rv_sample_engine_pollfds(engine, fds, 1024);
	size_t n = nr_engine;
	int ret;

	fds[n].fd = s->signal_fd;
	fds[n].events = POLLIN;
	n++;
	if (gating) {
		fds[n].fd = rv_gating_fd(gating);
		fds[n].events = POLLIN;
		n++;
	}
	for (size_t i = 0; i < target->nr_pids; i++) {
		if (target->pidfds[i] < 0)
			continue;
		fds[n].fd = target->pidfds[i];
		fds[n].events = POLLIN;
		n++;
	}
	for (bool last = false;; ) {
		bool done = false;

		if (!last && poll(fds, n, 100) < 0 && errno != EINTR)
			return rv_error_set(err, errno, "poll: %s", strerror(errno));
		/* The gate's records first: the samples before them are then in
		 * the rings, and the drain brings them in. */
		ret = gating ? rv_gating_collect(gating, err) : 0;
		if (!ret)
			ret = rv_sample_engine_drain(engine, err);
		if (!ret && gating)
			ret = rv_gating_apply(gating, engine, &done, err);
		if (ret)
			return ret;
		if (done) {
			s->snapshot_ended = true;
			return 0;
		}
		if (last)
			return 0;
		/* One more round after the end, for what the gate said last. */
		last = read_stop_signals(s->signal_fd, stop_signal) || rv_target_poll_exit(target);
	}
}

int rv_session_finish_capture(struct rv_session *s, struct rv_perf_writer *capture,
			      struct rv_error *err)
{
	const char *const *argv = (const char *const *)s->opts->argv;
	struct rv_perf_meta meta = {
		.argc = s->opts->argc,
		.argv = argv,
		.clockid = CLOCK_MONOTONIC,
	};

	return rv_perf_writer_finish(capture, &meta, err);
}

/* The sampling engine's configuration for this session (target NULL: for
 * --dry-run, before there is one). */
static struct rv_sample_config sample_config(const struct rv_session *s,
					     const struct rv_target *target)
{
	return (struct rv_sample_config){
		.pids = target ? target->pids : NULL,
		.nr_pids = target ? target->nr_pids : 0,
		.all_threads = s->opts->multi_thread,
		.include_kernel = s->opts->include_kernel,
		.dwarf = s->dwarf,
		.full_execution = s->opts->full_execution,
		.frequency = s->frequency,
		.snapshot_size_bytes = s->snapshot_size_bytes,
		.gate_windows_fd = -1,
	};
}

/* The program's executable, for resolving probe sites: /proc/PID/exe of a
 * running process. */
int rv_session_target_exe(pid_t pid, char *out, size_t size, struct rv_error *err)
{
	return rv_proc_exe(pid, out, size, err);
}

int rv_session_open_gating(struct rv_session *s, struct rv_target *target,
			   struct rv_gating_sites *sites, struct rv_gating **gating,
			   struct rv_error *err)
{
	char exe[PATH_MAX];
	int ret;

	if (target->nr_pids != 1)
		return rv_error_set(err, EINVAL,
				    "--filter and --trigger follow one process; attach to one "
				    "(-p PID)");
	ret = rv_session_target_exe(target->pids[0], exe, sizeof(exe), err);
	if (!ret)
		ret = rv_gating_resolve(s->opts, exe, target->pids[0], sites, err);
	if (!ret && gating)
		ret = rv_gating_open(gating, s->opts, sites, target->pids[0], err);
	return ret;
}

int rv_session_record(struct rv_session *s, struct rv_target *target, struct rv_error *err)
{
	char capture_path[PATH_MAX + 32];
	struct rv_perf_writer *capture = NULL;
	struct rv_sample_engine *engine = NULL;
	struct rv_gating *gating = NULL;
	struct rv_gating_sites *sites = NULL;
	struct rv_sample_stats stats;
	struct rv_sample_config config = sample_config(s, target);
	char note[128];
	int stop_signal = 0, ret;

	if (s->engine == RV_ENGINE_UPROBE)
		return rv_session_record_fn(s, target, err);
	if (rv_gating_wanted(s->opts)) {
		sites = malloc(sizeof(*sites));
		if (!sites)
			return rv_error_set(err, ENOMEM, "out of memory");
		ret = rv_session_open_gating(s, target, sites,
					     s->engine == RV_ENGINE_PT ? NULL : &gating, err);
		if (ret) {
			free(sites);
			return ret;
		}
	}
	if (s->engine == RV_ENGINE_PT) {
		ret = rv_session_record_pt(s, target, sites, err);
		free(sites);
		return ret;
	}
	free(sites);
	config.gate_windows_fd = rv_gating_windows_fd(gating);
	if (s->backend_note)
		rv_note("%s", s->backend_note);
	snprintf(capture_path, sizeof(capture_path), "%s/perf.data", s->capture_dir);
	ret = rv_perf_writer_open(&capture, capture_path, s->opts->include_kernel, err);
	if (ret)
		return ret;
	config.capture = capture;
	ret = rv_sample_engine_open(&engine, &config, err);
	if (!ret)
		ret = rv_sample_engine_start(engine, err);
	if (!ret)
		ret = rv_target_release(target, err);
	if (!ret) {
		rv_debug("recording %zu process%s", target->nr_pids,
			 target->nr_pids == 1 ? "" : "es");
		ret = rv_session_loop(s, target, engine, gating, &stop_signal, err);
	}
	if (ret) {
		rv_sample_engine_free(engine);
		rv_gating_free(gating);
		rv_perf_writer_free(capture);
		return ret;
	}
	s->stop_signal = stop_signal;
	if (stop_signal)
		rv_note("%s: stopping the recording and writing the trace", strsignal(stop_signal));
	else if (s->snapshot_ended)
		rv_note("snapshot taken: stopping the recording and writing the trace%s",
			target->spawned ? "; the program runs on" : "");
	ret = rv_sample_engine_stop(engine, gating ? rv_gating_keep_rest(gating) : true, err);
	rv_sample_engine_stats(engine, &stats);
	rv_sample_engine_free(engine);
	if (gating) {
		rv_gating_report(gating);
		rv_gating_free(gating); /* the program runs on, unprobed */
	}
	if (!ret)
		ret = rv_session_finish_capture(s, capture, err);
	rv_perf_writer_free(capture);
	if (ret)
		return ret;
	rv_debug("BPF filter: %llu samples kept, %llu of other processes dropped, %llu of "
		 "other threads dropped",
		 (unsigned long long)stats.filter_kept, (unsigned long long)stats.filter_other,
		 (unsigned long long)stats.filter_thread);
	if (stats.lost)
		rv_warn("the kernel lost %llu samples (its buffers were full); lower "
			"--timer-resolution to lose fewer",
			(unsigned long long)stats.lost);
	if (!s->opts->full_execution && stats.evicted)
		rv_debug("the flight recorder kept the last %llu samples (%llu older ones "
			 "aged out)",
			 (unsigned long long)stats.written_samples,
			 (unsigned long long)stats.evicted);
	snprintf(note, sizeof(note), "%s, %llu Hz on %s", s->dwarf ? "dwarf" : "fp",
		 (unsigned long long)stats.frequency, stats.clock_name);

	{
		struct rv_render_options ro = {
			.capture_path = capture_path,
			.include_kernel = s->opts->include_kernel,
			.recording_note = note,
			.lost_while_recording = stats.lost,
		};

		ret = rv_render(&ro, s->writer, err);
	}
	if (!ret && !s->capture_dir_is_temporary)
		rv_note("the capture is in %s (perf report -i %s)", capture_path, capture_path);
	return ret;
}

/* The sampling engine's events and programs, for --dry-run. */
static int describe_sampling(struct rv_session *s, pid_t pid, struct rv_dry_run_plan *plan,
			     struct rv_error *err)
{
	struct rv_sample_config config = sample_config(s, NULL);
	int nr_cpus = s->machine.nr_cpus > 0 ? s->machine.nr_cpus : 1;
	char detail[96];
	int ret = 0;

	(void)pid;
	for (int cpu = 0; !ret && cpu < nr_cpus; cpu++) {
		char label[64];
		struct rv_dry_run_event ev = {
			.label = label,
			.group = -1,
			.cpu = cpu,
			.pid = -1,
			.bpf_program = "filter_sample",
			.bpf_program_type = "perf_event",
		};

		snprintf(label, sizeof(label), "sampling, CPU %d", cpu);
		rv_sample_engine_attr(&config, s->machine.has_cpu_pmu, &ev.attr);
		ret = rv_dry_run_add_event(plan, &ev, err);
	}
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "program", "filter_sample", "perf_event",
					 rv_gating_wanted(s->opts) && s->opts->filter_start
						 ? "keeps the target's samples taken inside a "
						   "--filter window"
						 : "keeps the target's samples",
					 err);
	snprintf(detail, sizeof(detail), "the processes recorded");
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "map", "target_processes", "hash", detail, err);
	if (!ret && s->opts->filter_start)
		ret = rv_dry_run_add_bpf(plan, "map", "gate_windows", "hash",
					 "the gate's window map, shared", err);
	return ret;
}

int rv_session_dry_run(struct rv_session *s, const char *exe, pid_t pid, struct rv_error *err)
{
	struct rv_dry_run_plan plan;
	struct rv_gating_sites *sites = NULL;
	char running[PATH_MAX];
	int ret = 0;

	if (!exe) {
		ret = rv_session_target_exe(pid, running, sizeof(running), err);
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
		ret = sites ? rv_gating_resolve(s->opts, exe, pid, sites, err)
			    : rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!ret && s->engine == RV_ENGINE_PT)
		ret = rv_session_describe_pt(s, sites, pid, &plan, err);
	else if (!ret && s->engine == RV_ENGINE_UPROBE)
		ret = rv_session_describe_fn(s, exe, pid, &plan, err);
	else if (!ret)
		ret = describe_sampling(s, pid, &plan, err);
	if (!ret && sites && s->engine != RV_ENGINE_PT)
		ret = rv_gating_describe(s->opts, sites, pid, &plan, err);
	if (!ret) {
		printf("rearview would record %s%s with %s:\n\n", exe,
		       pid > 0 ? "" : " (started by rearview)",
		       s->engine == RV_ENGINE_PT       ? "Intel PT"
		       : s->engine == RV_ENGINE_UPROBE ? "function tracing (BPF uprobes)"
						       : "stack sampling");
		rv_dry_run_print(stdout, &plan, s->engine == RV_ENGINE_PT ? &s->pt_pmu : NULL);
		fflush(stdout);
	}
	rv_dry_run_plan_free(&plan);
	free(sites);
	return ret;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void rv_session_cleanup(struct rv_session *s)
{
	if (s->writer)
		rv_trace_writer_free(s->writer);
	s->writer = NULL;
	if (s->capture_dir_is_temporary && s->capture_dir[0])
		nftw(s->capture_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	s->capture_dir[0] = '\0';
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	s->signal_fd = -1;
}
