/* test_pt_capture.c: Intel PT captures opened and decoded (pt_capture.h).
 *
 * softpt captures of the tests/pt programs must decode to exactly the calls
 * their ground truth lists, per thread, with no error and the threads named
 * as the sideband names them; read from a FIFO and from standard input too;
 * and as a snapshot. The real Skylake capture (pt-corpus/perf-4.14, file and
 * pipe mode) must open, decode both CPUs' buffers, give the echo process its
 * own tid, and list the binaries it maps (its .buildids file) and the kernel
 * as missing, with what their absence cost. Hand-made per-CPU captures (the
 * packets from softpt's generator, the records from synth.h) check the
 * attribution around context switches and an exec, the merge of two CPUs,
 * kernel code from kcore or a relocated vmlinux, and several snapshots of one
 * buffer. Bad input (not a perf.data, samples only, every truncation, flipped
 * bytes) gives a clear error or a partial decode, never a crash.
 *
 * Not here: the packet decoding itself (test_pt_decoder.c), the perf.data
 * layout (test_perf_data*.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tools/softpt/ptgen.h"
#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/pt_capture.h"
#include "fxt_reader.h"
#include "render/render.h"
#include "symbolize/kernel_syms.h"
#include "symbolize/symbolizer.h"
#include "test_elf.h"
#include "test_env.h"
#include "test_files.h"

#define MAX_TIDS 64

/* ---- the environment ---- */

/* Runs argv with stdout and stderr to /dev/null (stdin from in_fd if >= 0);
 * the exit status. */
static int run(char *const argv[], int in_fd)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDWR);

		if (in_fd >= 0)
			dup2(in_fd, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- what the sink saw ---- */

struct tid_events {
	uint32_t tid, pid;
	uint64_t calls, returns, branches, errors, events;
	uint64_t names;
	char name[64];	     /* the last THREAD_NAME */
	char first_name[64]; /* the first */
	bool named_before_events;
	bool exited, events_after_exit;
	bool time_went_back;
	uint64_t last_time, first_time;
	uint64_t call_targets[512]; /* distinct, the first ones */
	size_t nr_targets;
};

struct seen {
	struct tid_events t[MAX_TIDS];
	size_t nr;
	uint64_t total;
	uint64_t min_time, max_time;
};

static struct tid_events *seen_tid(struct seen *s, uint32_t tid)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->t[i].tid == tid)
			return &s->t[i];
	cr_assert_lt(s->nr, MAX_TIDS, "too many threads");
	struct tid_events *t = &s->t[s->nr++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->named_before_events = true;
	return t;
}

static const struct tid_events *find_tid(const struct seen *s, uint32_t tid)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->t[i].tid == tid)
			return &s->t[i];
	return NULL;
}

static int collect(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct seen *s = ctx;
	struct tid_events *t = seen_tid(s, ev->tid);

	s->total++;
	t->pid = ev->pid;
	if (t->events && ev->time < t->last_time)
		t->time_went_back = true;
	if (!t->events)
		t->first_time = ev->time;
	t->events++;
	t->last_time = ev->time;
	if (t->exited)
		t->events_after_exit = true;
	if (!s->min_time || ev->time < s->min_time)
		s->min_time = ev->time;
	if (ev->time > s->max_time)
		s->max_time = ev->time;
	switch (ev->kind) {
	case RV_EVENT_THREAD_NAME:
		t->names++;
		snprintf(t->name, sizeof(t->name), "%s", ev->thread.name);
		if (t->names == 1)
			snprintf(t->first_name, sizeof(t->first_name), "%s", ev->thread.name);
		break;
	case RV_EVENT_THREAD_EXIT:
		t->exited = true;
		break;
	case RV_EVENT_BRANCH:
		if (!t->names)
			t->named_before_events = false;
		t->branches++;
		if (ev->branch.kind == RV_BRANCH_CALL) {
			bool known = false;

			t->calls++;
			for (size_t i = 0; i < t->nr_targets; i++)
				known |= t->call_targets[i] == ev->branch.to.ip;
			if (!known && t->nr_targets < 512)
				t->call_targets[t->nr_targets++] = ev->branch.to.ip;
		}
		if (ev->branch.kind == RV_BRANCH_RETURN)
			t->returns++;
		break;
	case RV_EVENT_TRACE_ERROR:
		if (!t->names)
			t->named_before_events = false;
		t->errors++;
		break;
	default:
		break;
	}
	return 0;
}

static uint64_t errors_seen(const struct seen *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nr; i++)
		n += s->t[i].errors;
	return n;
}

struct decoded {
	struct seen seen;
	struct rv_pt_stats stats;
	struct rv_pt_capture_info info;
	struct rv_pt_missing missing[128];
	char missing_paths[128][256];
	size_t nr_missing;
	char damage[1024];
};

static int open_with(struct rv_pt_capture **c, const char *path, bool kernel, const char *vmlinux,
		     struct rv_symbolizer *symbolizer, struct rv_error *err)
{
	struct rv_pt_capture_options o = {
		.path = path,
		.include_kernel = kernel,
		.vmlinux = vmlinux,
		.jobs = 2,
	};

	return rv_pt_capture_open(c, &o, symbolizer, err);
}

static int open_capture(struct rv_pt_capture **c, const char *path, bool kernel,
			const char *vmlinux, struct rv_error *err)
{
	return open_with(c, path, kernel, vmlinux, NULL, err);
}

/* Opens (reporting mappings to symbolizer, which may be NULL) and decodes;
 * the capture must open. */
static void decode_with(struct decoded *d, const char *path, bool kernel, const char *vmlinux,
			struct rv_symbolizer *symbolizer)
{
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	const struct rv_pt_missing *m;

	memset(d, 0, sizeof(*d));
	cr_assert_eq(open_with(&c, path, kernel, vmlinux, symbolizer, &err), 0, "opening %s: %s",
		     path, err.message);
	cr_assert_eq(rv_pt_capture_decode(c, collect, &d->seen, &d->stats, &err), 0,
		     "decoding %s: %s", path, err.message);
	rv_pt_capture_info(c, &d->info);
	d->nr_missing = rv_pt_capture_missing(c, &m);
	cr_assert_leq(d->nr_missing, 128);
	for (size_t i = 0; i < d->nr_missing; i++) {
		d->missing[i] = m[i];
		snprintf(d->missing_paths[i], sizeof(d->missing_paths[i]), "%s", m[i].path);
		d->missing[i].path = d->missing_paths[i];
		d->missing[i].reason = NULL;
	}
	if (rv_pt_capture_damage(c))
		snprintf(d->damage, sizeof(d->damage), "%s", rv_pt_capture_damage(c));
	rv_pt_capture_free(c);
}

static void decode_capture(struct decoded *d, const char *path, bool kernel, const char *vmlinux)
{
	decode_with(d, path, kernel, vmlinux, NULL);
}

static const struct rv_pt_missing *find_missing(const struct decoded *d, const char *path)
{
	for (size_t i = 0; i < d->nr_missing; i++)
		if (!strcmp(d->missing[i].path, path))
			return &d->missing[i];
	return NULL;
}

/* Every thread's events in time order, named before its first branch, and
 * nothing after its exit. */
static void assert_well_formed(const struct seen *s)
{
	for (size_t i = 0; i < s->nr; i++) {
		const struct tid_events *t = &s->t[i];

		cr_assert_not(t->time_went_back, "thread %u: events not in time order", t->tid);
		cr_assert(t->named_before_events, "thread %u: an event before its THREAD_NAME",
			  t->tid);
		cr_assert_not(t->events_after_exit, "thread %u: events after THREAD_EXIT", t->tid);
	}
}

/* ---- softpt captures and their ground truth ---- */

struct truth {
	struct {
		uint32_t tid, pid;
		uint64_t calls;
		bool exited;
	} t[MAX_TIDS];
	size_t nr;
};

static size_t truth_tid(struct truth *g, uint32_t tid)
{
	for (size_t i = 0; i < g->nr; i++)
		if (g->t[i].tid == tid)
			return i;
	cr_assert_lt(g->nr, MAX_TIDS);
	memset(&g->t[g->nr], 0, sizeof(g->t[0]));
	g->t[g->nr].tid = tid;
	return g->nr++;
}

static void read_truth(struct truth *g, const char *dir)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/ground-truth.txt", dir);
	f = fopen(path, "re");
	cr_assert_not_null(f, "softpt wrote no %s", path);
	while (fgets(line, sizeof(line), f)) {
		unsigned tid, pid;

		if (sscanf(line, "thread %u %u", &tid, &pid) == 2)
			g->t[truth_tid(g, tid)].pid = pid;
		else if (sscanf(line, "call %u", &tid) == 1)
			g->t[truth_tid(g, tid)].calls++;
		else if (sscanf(line, "exit %u", &tid) == 1)
			g->t[truth_tid(g, tid)].exited = true;
	}
	fclose(f);
	cr_assert_gt(g->nr, 0, "%s lists no thread", path);
}

/* Runs build/softpt OPTIONS -o dir[0] [-o dir[1] ...] -- build/tests/pt/target,
 * with an empty environment (the loader's start-up is what stepping costs). */
static void softpt(const char *target, const char *const *options, const char *const *dirs)
{
	char exe[PATH_MAX], prog[PATH_MAX];
	char *argv[32];
	size_t a = 0;
	pid_t pid;
	int status;

	snprintf(exe, sizeof(exe), "%s", build_path("softpt"));
	snprintf(prog, sizeof(prog), "%s/tests/pt/%s", build_dir(), target);
	cr_assert_eq(access(exe, X_OK), 0, "%s is not built (make %s)", exe, exe);
	cr_assert_eq(access(prog, X_OK), 0, "%s is not built (make %s)", prog, prog);
	argv[a++] = exe;
	argv[a++] = "-q";
	for (size_t d = 0; dirs[d]; d++) {
		for (size_t i = 0; options && options[i] && d == 0; i++)
			argv[a++] = (char *)options[i];
		argv[a++] = "-o";
		argv[a++] = (char *)dirs[d];
	}
	argv[a++] = "--";
	argv[a++] = prog;
	argv[a] = NULL;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *const envp[] = { NULL };
		int devnull = open("/dev/null", O_RDWR);

		dup2(devnull, 1);
		execve(exe, argv, envp);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "softpt %s failed (status %d)",
		  target, status);
}

/* The decode matches the ground truth: per thread the same calls, no error,
 * named `comm`, and ended where softpt saw it end. */
static void assert_matches_truth(const struct decoded *d, const struct truth *g, const char *comm)
{
	assert_well_formed(&d->seen);
	cr_assert_eq(d->stats.errors, 0, "%" PRIu64 " decode errors", d->stats.errors);
	cr_assert_eq(errors_seen(&d->seen), 0);
	cr_assert_eq(d->nr_missing, 0, "missing: %s", d->nr_missing ? d->missing[0].path : "");
	for (size_t i = 0; i < g->nr; i++) {
		const struct tid_events *t = find_tid(&d->seen, g->t[i].tid);

		cr_assert_not_null(t, "thread %u has no events", g->t[i].tid);
		cr_assert_eq(t->calls, g->t[i].calls,
			     "thread %u: %" PRIu64 " calls, the truth %" PRIu64, t->tid, t->calls,
			     g->t[i].calls);
		cr_assert_str_eq(t->name, comm, "thread %u named '%s'", t->tid, t->name);
		cr_assert_eq(t->pid, g->t[i].pid, "thread %u in process %u, not %u", t->tid, t->pid,
			     g->t[i].pid);
		cr_assert_eq(t->exited, g->t[i].exited, "thread %u: exit %d, the truth %d", t->tid,
			     t->exited, g->t[i].exited);
	}
	for (size_t i = 0; i < d->seen.nr; i++) {
		bool in_truth = false;

		for (size_t j = 0; j < g->nr; j++)
			in_truth |= g->t[j].tid == d->seen.t[i].tid;
		cr_assert(in_truth, "events for thread %u, which softpt did not trace",
			  d->seen.t[i].tid);
	}
}

/* softpt's run of target decodes to its ground truth, and the symbolizer the
 * capture reported its mappings to names the functions in `called`. */
static void check_target(const char *target, const char *comm, const char *const *called)
{
	char dir[PATH_MAX], cap[PATH_MAX + 8];
	const char *dirs[] = { cap, NULL };
	struct decoded *d = calloc(1, sizeof(*d));
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct rv_error err = { 0 };
	struct truth g;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(cap, sizeof(cap), "%s/cap", dir);
	softpt(target, NULL, dirs);
	read_truth(&g, cap);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	decode_with(d, cap, false, NULL, sym);
	cr_assert_eq(d->info.buffers, g.nr, "one buffer per thread");
	cr_assert_not(d->info.per_cpu);
	cr_assert_not(d->info.snapshot);
	cr_assert_not(d->info.kernel);
	assert_matches_truth(d, &g, comm);
	for (size_t i = 0; called && called[i]; i++) {
		bool found = false;

		for (size_t j = 0; j < d->seen.nr && !found; j++) {
			const struct tid_events *t = &d->seen.t[j];

			for (size_t k = 0; k < t->nr_targets && !found; k++) {
				struct rv_symbol s;

				rv_symbolizer_lookup(sym, t->pid, t->call_targets[k], &s);
				found = s.known && !strcmp(s.name, called[i]);
			}
		}
		cr_assert(found, "no call to %s was named", called[i]);
	}
	rv_symbolizer_free(sym);
	free(d);
	remove_tree(dir);
}

Test(pt_capture, softpt_recursion, .timeout = 300)
{
	const char *called[] = { "descend", "bottom", NULL };

	check_target("recursion", "recursion", called);
}

Test(pt_capture, softpt_two_threads, .timeout = 300)
{
	const char *called[] = { "work_a", "work_b", NULL };

	check_target("two_threads", "two_threads", called);
}

Test(pt_capture, softpt_lazy_plt, .timeout = 300)
{
	check_target("lazy_plt", "lazy_plt", NULL);
}

/* libptplugin.so is mapped in the middle of the run: its code must be in the
 * image by the time the trace reaches it, and in the symbolizer. */
Test(pt_capture, softpt_dlopen, .timeout = 300)
{
	const char *called[] = { "plugin_work", "plugin_step", NULL };

	check_target("dlopen_main", "dlopen_main", called);
}

Test(pt_capture, softpt_exceptions, .timeout = 300)
{
	check_target("exceptions", "exceptions", NULL);
}

/* The capture's perf.data fed through a FIFO (in the capture's directory,
 * where vdso.so is) and through standard input, as `cat perf.data |` would. */
Test(pt_capture, softpt_through_pipes, .timeout = 300)
{
	char dir[PATH_MAX], cap[PATH_MAX + 8], fifo[PATH_MAX + 32], file[PATH_MAX + 32];
	const char *dirs[] = { cap, NULL };
	struct decoded *d = calloc(1, sizeof(*d)), *from_file = calloc(1, sizeof(*d));
	char cat[] = "/bin/cat";
	struct truth g;
	int fds[2];

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(cap, sizeof(cap), "%s/cap", dir);
	softpt("two_threads", NULL, dirs);
	read_truth(&g, cap);
	snprintf(file, sizeof(file), "%s/perf.data", cap);
	decode_capture(from_file, file, false, NULL);
	assert_matches_truth(from_file, &g, "two_threads");

	/* a FIFO: cat writes it while the capture reads it */
	snprintf(fifo, sizeof(fifo), "%s/pipe.data", cap);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	pid_t writer = fork();
	cr_assert_geq(writer, 0);
	if (writer == 0) {
		int out = open(fifo, O_WRONLY);

		dup2(out, 1);
		execl(cat, cat, file, (char *)NULL);
		_exit(127);
	}
	decode_capture(d, fifo, false, NULL);
	int status;
	cr_assert_eq(waitpid(writer, &status, 0), writer);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_matches_truth(d, &g, "two_threads");
	cr_assert_eq(d->stats.insns, from_file->stats.insns);

	/* standard input: a pipe that cat fills */
	cr_assert_eq(pipe(fds), 0);
	writer = fork();
	cr_assert_geq(writer, 0);
	if (writer == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		execl(cat, cat, file, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	cr_assert_geq(dup2(fds[0], 0), 0);
	close(fds[0]);
	memset(d, 0, sizeof(*d));
	{
		/* no directory: vdso.so is not found, the rest must decode */
		struct rv_pt_capture *c;
		struct rv_error err = { 0 };

		cr_assert_eq(open_capture(&c, "-", false, NULL, &err), 0, "%s", err.message);
		cr_assert_eq(rv_pt_capture_decode(c, collect, &d->seen, &d->stats, &err), 0);
		rv_pt_capture_info(c, &d->info);
		const struct rv_pt_missing *m;
		size_t n = rv_pt_capture_missing(c, &m);
		for (size_t i = 0; i < n; i++)
			cr_assert_str_eq(m[i].path, "[vdso]", "only the vdso may be missing");
		rv_pt_capture_free(c);
	}
	cr_assert_eq(waitpid(writer, &status, 0), writer);
	cr_assert_eq(d->info.buffers, g.nr);
	for (size_t i = 0; i < g.nr; i++) {
		const struct tid_events *t = find_tid(&d->seen, g.t[i].tid);

		cr_assert_not_null(t);
		cr_assert_eq(t->calls, g.t[i].calls, "thread %u from stdin", t->tid);
		cr_assert_str_eq(t->name, "two_threads");
	}
	free(d);
	free(from_file);
	remove_tree(dir);
}

/* A snapshot (the end of a wrapped AUX buffer, from its first PSB) and the
 * whole trace of the same run. */
Test(pt_capture, softpt_snapshot, .timeout = 300)
{
	char dir[PATH_MAX], snap[PATH_MAX + 8], full[PATH_MAX + 8];
	const char *dirs[] = { snap, full, NULL };
	const char *options[] = { "--psb-period", "0", "--snapshot-size", "3000", NULL };
	struct decoded *d = calloc(1, sizeof(*d));
	struct truth g;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	snprintf(full, sizeof(full), "%s/full", dir);
	softpt("recursion", options, dirs);
	read_truth(&g, snap);
	decode_capture(d, snap, false, NULL);
	cr_assert(d->info.snapshot);
	cr_assert_eq(d->info.trace_bytes, 3000);
	assert_matches_truth(d, &g, "recursion");
	cr_assert_gt(d->stats.skipped_bytes, 0, "the bytes before the first PSB are skipped");

	read_truth(&g, full);
	decode_capture(d, full, false, NULL);
	cr_assert_not(d->info.snapshot);
	assert_matches_truth(d, &g, "recursion");
	free(d);
	remove_tree(dir);
}

/* ---- the real Skylake capture ---- */

/* The paths of the .buildids file: what perf says the capture maps. */
static size_t read_buildids(char paths[][256], size_t max)
{
	char file[PATH_MAX], line[512];
	size_t n = 0;
	FILE *f;

	corpus_path(file, sizeof(file), "perf-4.14/perf.data.intel_pt-4.14.buildids");
	f = fopen(file, "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char id[64], path[256];

		if (sscanf(line, "%63s %255s", id, path) == 2) {
			cr_assert_lt(n, max);
			snprintf(paths[n++], 256, "%s", path);
		}
	}
	fclose(f);
	return n;
}

static void check_skylake(const char *file, bool piped)
{
	char path[PATH_MAX], ids[128][256];
	struct decoded *d = calloc(1, sizeof(*d));
	const struct tid_events *echo = NULL;
	uint64_t missing_errors = 0, missing_skipped = 0;
	size_t nr_ids = read_buildids(ids, 128);

	corpus_path(path, sizeof(path), file);
	decode_capture(d, path, false, NULL);
	cr_assert_eq(d->info.buffers, 2, "idx 0 (CPU 0) and idx 3 (CPU 3)");
	cr_assert(d->info.per_cpu);
	cr_assert(d->info.kernel);
	cr_assert_not(d->info.snapshot);
	cr_assert_eq(d->stats.bytes, d->info.trace_bytes, "both buffers decoded");
	cr_assert_gt(d->stats.nomap, 0, "no binary is here: code is missing");
	assert_well_formed(&d->seen);

	/* The workload's thread: named perf, then echo after its exec. */
	for (size_t i = 0; i < d->seen.nr; i++)
		if (!strcmp(d->seen.t[i].name, "echo"))
			echo = &d->seen.t[i];
	cr_assert_not_null(echo, "no thread named echo");
	if (!piped)
		cr_assert_eq(echo->tid, 3174);
	cr_assert_eq(echo->pid, echo->tid);
	cr_assert(echo->exited, "its EXIT record");
	/* The intel_pt event follows the workload only: everything is its. */
	for (size_t i = 0; i < d->seen.nr; i++) {
		const struct tid_events *t = &d->seen.t[i];

		if (t != echo)
			cr_assert_eq(t->branches + t->errors, 0, "events for thread %u", t->tid);
	}
	cr_assert_gt(echo->errors, 0);
	if (!piped) {
		/* CPU 0 traced the end (ITRACE_START there at 641257926901 ns),
		 * CPU 3 what came before: both reached the sink, in time order */
		cr_assert_geq(echo->last_time, 641257926901ull);
		cr_assert_lt(echo->first_time, 641257900000ull);
	}

	/* Missing: exactly what perf lists, and the kernel; what it cost adds up. */
	cr_assert_eq(d->nr_missing, nr_ids, "%zu missing, %zu in .buildids", d->nr_missing, nr_ids);
	for (size_t i = 0; i < nr_ids; i++) {
		const char *want =
			strncmp(ids[i], "[kernel.kallsyms]", 17) ? ids[i] : "[kernel.kallsyms]";
		cr_assert_not_null(find_missing(d, want), "%s is not listed as missing", want);
	}
	cr_assert_geq(find_missing(d, "[kernel.kallsyms]")->mappings, 1);
	for (size_t i = 0; i < d->nr_missing; i++) {
		missing_errors += d->missing[i].errors;
		missing_skipped += d->missing[i].skipped_bytes;
	}
	cr_assert_gt(find_missing(d, "[kernel.kallsyms]")->errors, 0);
	cr_assert_eq(missing_errors, d->stats.nomap, "every error is at a missing file's address");
	cr_assert_gt(missing_skipped, 0);
	cr_assert_eq(missing_skipped, d->stats.skipped_bytes,
		     "%" PRIu64 " bytes skipped for missing files, %" PRIu64 " in all",
		     missing_skipped, d->stats.skipped_bytes);
	free(d);
}

Test(pt_capture, skylake_file, .timeout = 120)
{
	check_skylake("perf-4.14/perf.data.intel_pt-4.14", false);
}

Test(pt_capture, skylake_piped, .timeout = 120)
{
	check_skylake("perf-4.14/perf.data.piped.intel_pt-4.14", true);
}

/* Progress on stderr while decoding, cleared at the end. */
Test(pt_capture, progress_line, .timeout = 120)
{
	char path[PATH_MAX], log[] = "/tmp/rv-ptcap-progress-XXXXXX";
	struct rv_pt_capture_options o = { .jobs = 1, .progress = true };
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	struct seen *seen = calloc(1, sizeof(*seen));
	struct rv_pt_stats stats;
	int fd = mkstemp(log), saved = dup(2);
	size_t size;

	corpus_path(path, sizeof(path), "perf-4.14/perf.data.intel_pt-4.14");
	o.path = path;
	cr_assert_geq(fd, 0);
	cr_assert_eq(rv_pt_capture_open(&c, &o, NULL, &err), 0, "%s", err.message);
	fflush(stderr);
	dup2(fd, 2);
	int ret = rv_pt_capture_decode(c, collect, seen, &stats, &err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	rv_pt_capture_free(c);
	cr_assert_eq(ret, 0);
	char *text = read_whole(log, &size);
	unlink(log);
	cr_assert_not_null(strstr(text, "\rrearview: decoding 0% (0.0 of 0.1 MiB)"), "%s", text);
	cr_assert_gt(size, 2);
	cr_assert_eq(text[size - 1], '\r', "the line is cleared at the end");
	cr_assert_eq(text[size - 2], ' ');
	free(text);
	free(seen);
}

/* The kernel's entry says why it is missing. */
Test(pt_capture, skylake_kernel_reasons, .timeout = 120)
{
	char path[PATH_MAX];
	const struct rv_pt_missing *m;
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	const char *reason = NULL;

	corpus_path(path, sizeof(path), "perf-4.14/perf.data.intel_pt-4.14");
	for (int kernel = 0; kernel < 2; kernel++) {
		cr_assert_eq(open_capture(&c, path, kernel, NULL, &err), 0, "%s", err.message);
		size_t n = rv_pt_capture_missing(c, &m);
		for (size_t i = 0; i < n; i++)
			if (!strcmp(m[i].path, "[kernel.kallsyms]"))
				reason = m[i].reason;
		cr_assert_not_null(reason);
		if (kernel)
			cr_assert_not_null(strstr(reason, "no kcore_dir/kcore and no --vmlinux"),
					   "%s", reason);
		else
			cr_assert_not_null(strstr(reason, "not asked for"), "%s", reason);
		cr_assert_null(rv_pt_capture_kallsyms(c));
		rv_pt_capture_free(c);
	}
}

/* ---- hand-made captures: programs, kernels, records ---- */

#define SYN_PMU_TYPE 8
#define SYN_PT_ID    1
#define SYN_SB_ID    2
#define USER_BASE    0x400000ull
/* The "kernel": linked at KERNEL_LINKED, running KASLR_SHIFT higher. */
#define KERNEL_LINKED 0xffffffff81000000ull
#define KASLR_SHIFT   0x2e00000ull
#define KERNEL_BASE   (KERNEL_LINKED + KASLR_SHIFT)

/* A program of `ncalls` direct calls to a one-instruction function, then a
 * system call (user code) or nothing (kernel code, left asynchronously). */
struct prog {
	uint64_t base, callee;
	unsigned ncalls;
	bool kernel;
	uint8_t code[1024];
	size_t size;
};

static void prog_make(struct prog *p, uint64_t base, unsigned ncalls, uint64_t callee_off,
		      bool kernel)
{
	memset(p, 0, sizeof(*p));
	memset(p->code, 0xcc, sizeof(p->code));
	p->base = base;
	p->callee = base + callee_off;
	p->ncalls = ncalls;
	p->kernel = kernel;
	cr_assert_gt(callee_off, 5 * ncalls + 2);
	for (unsigned i = 0; i < ncalls; i++) {
		int32_t rel = (int32_t)(callee_off - (5 * i + 5));

		p->code[5 * i] = 0xe8;
		memcpy(&p->code[5 * i + 1], &rel, 4);
	}
	if (kernel) {
		p->code[5 * ncalls] = 0x90;
	} else {
		p->code[5 * ncalls] = 0x0f;
		p->code[5 * ncalls + 1] = 0x05;
	}
	p->code[callee_off] = 0xc3;
	p->size = callee_off + 1;
}

/* The packets of one run of the program, from tsc on. */
static void prog_feed(struct ptgen *g, const struct prog *p, uint64_t *tsc)
{
	uint64_t end = p->base + 5 * p->ncalls;

	cr_assert_eq(ptgen_enable(g, p->base, *tsc), 0);
	for (unsigned i = 0; i < p->ncalls; i++) {
		uint64_t ip = p->base + 5 * i;

		cr_assert_eq(ptgen_insn(g, ip, 5, PTGEN_CALL, p->callee, ++*tsc), 0);
		cr_assert_eq(ptgen_insn(g, p->callee, 1, PTGEN_RET, ip + 5, ++*tsc), 0);
	}
	if (p->kernel)
		cr_assert_eq(ptgen_async_disable(g, end, ++*tsc), 0);
	else
		cr_assert_eq(ptgen_insn(g, end, 2, PTGEN_SYSCALL, 0, ++*tsc), 0);
}

static struct ptgen *gen_new(void)
{
	/* TSC only; the ratios as softpt's captures declare them */
	struct ptgen_config pc = {
		.tsc = true,
		.psb_period = 16,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 1,
		.cbr = 24,
		.max_nonturbo_ratio = 24,
	};
	struct ptgen *g = ptgen_new(&pc);

	cr_assert_not_null(g);
	return g;
}

/* An ELF file with one executable PT_LOAD of `code` at vaddr: a vmlinux
 * (ET_EXEC, with _stext and _text in its symbol table) or a kcore (ET_CORE). */
static void write_elf(const char *path, bool core, uint64_t vaddr, const uint8_t *code, size_t size)
{
	const struct test_elf_symbol text_symbols[] = { { "_stext", vaddr, 0, STT_NOTYPE },
							{ "_text", vaddr, 0, STT_NOTYPE } };

	test_elf_write(path, core ? ET_CORE : ET_EXEC, vaddr, code, size, text_symbols, 2);
}

struct syn {
	struct rv_perf_writer *w;
	struct rv_synth synth;
	struct rv_perf_time_conv tc;
};

static void syn_open(struct syn *s, const char *dir, bool per_cpu, bool snapshot, bool kernel)
{
	char path[PATH_MAX + 16];
	struct rv_error err = { 0 };
	uint64_t pt_id = SYN_PT_ID, sb_id = SYN_SB_ID;
	uint64_t sample_type =
		PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	cr_assert_eq(rv_perf_writer_open(&s->w, path, &err), 0, "%s", err.message);
	s->synth.sample_type = sample_type;
	s->synth.sample_id_all = true;
	struct perf_event_attr pt = {
		.type = SYN_PMU_TYPE,
		.size = sizeof(pt),
		.config = 1ull << 10, /* tsc */
		.sample_period = 1,
		.sample_type = sample_type,
		.exclude_kernel = !kernel,
		.exclude_hv = 1,
		.sample_id_all = 1,
	};
	struct perf_event_attr dummy = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(dummy),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = sample_type,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.context_switch = per_cpu,
		.sample_id_all = 1,
	};
	cr_assert_eq(rv_perf_writer_add_attr(s->w, &pt, "intel_pt//", &pt_id, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(s->w, &dummy, "dummy:u", &sb_id, 1, &err), 0);
	rv_perf_time_conv_from_freq(&s->tc, 1000000000ull, 0, 0); /* 1 GHz: times are ticks */
	cr_assert_eq(rv_perf_writer_write_time_conv(s->w, &s->tc, &err), 0);
	struct rv_intel_pt_info info = {
		.pmu_type = SYN_PMU_TYPE,
		.time_shift = s->tc.time_shift,
		.time_mult = s->tc.time_mult,
		.time_zero = s->tc.time_zero,
		.cap_user_time_zero = 1,
		.tsc_bit = 1ull << 10,
		.noretcomp_bit = 1ull << 11,
		.have_sched_switch = per_cpu ? 3 : 0,
		.snapshot_mode = snapshot,
		.per_cpu_mmaps = per_cpu,
		.mtc_bit = 1ull << 9,
		.mtc_freq_bits = 0xfull << 14,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 1,
		.cyc_bit = 1ull << 1,
		.max_non_turbo_ratio = 24,
		.filter = "",
	};
	cr_assert_eq(rv_perf_writer_write_intel_pt_info(s->w, &info, &err), 0, "%s", err.message);
}

static void syn_write(struct syn *s, const uint8_t *rec, size_t size)
{
	struct rv_error err = { 0 };

	cr_assert_gt(size, 0, "a record did not fit");
	cr_assert_eq(rv_perf_writer_write(s->w, (const void *)rec, &err), 0, "%s", err.message);
}

static struct rv_synth_id syn_id(uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time)
{
	return (struct rv_synth_id){
		.pid = pid, .tid = tid, .cpu = cpu, .time = time, .id = SYN_SB_ID
	};
}

static void syn_comm(struct syn *s, uint32_t pid, const char *name, uint32_t cpu, uint64_t time)
{
	uint8_t rec[512];
	struct rv_synth_id id = syn_id(pid, pid, cpu, time);

	syn_write(s, rec, rv_synth_comm(&s->synth, rec, sizeof(rec), pid, pid, name, true, &id));
}

static void syn_mmap(struct syn *s, uint32_t pid, uint64_t start, uint64_t len, const char *file,
		     uint32_t cpu, uint64_t time)
{
	uint8_t rec[4096 + PATH_MAX];
	struct rv_synth_id id = syn_id(pid, pid, cpu, time);

	syn_write(s, rec,
		  rv_synth_mmap2(&s->synth, rec, sizeof(rec), pid, pid, start, len, 0, 8, 1, 42,
				 PROT_READ | PROT_EXEC, MAP_PRIVATE, file, PERF_RECORD_MISC_USER,
				 &id));
}

/* perf's map of the kernel: pgoff is the address of _text. */
static void syn_kernel_map(struct syn *s, uint64_t start, uint64_t len)
{
	uint8_t rec[512];
	struct rv_synth_id id = syn_id(UINT32_MAX, 0, 0, 0);

	syn_write(s, rec,
		  rv_synth_mmap(&s->synth, rec, sizeof(rec), UINT32_MAX, 0, start, len, start,
				"[kernel.kallsyms]_text", PERF_RECORD_MISC_KERNEL, &id));
}

static void syn_switch(struct syn *s, bool out, uint32_t pid, uint32_t other, uint32_t cpu,
		       uint64_t time)
{
	uint8_t rec[256];
	struct rv_synth_id id = syn_id(pid, pid, cpu, time);

	syn_write(s, rec,
		  rv_synth_switch_cpu_wide(&s->synth, rec, sizeof(rec), out, false, other, other,
					   &id));
}

static void syn_itrace_start(struct syn *s, uint32_t pid, uint32_t cpu, uint64_t time)
{
	uint8_t rec[256];
	struct rv_synth_id id = syn_id(pid, pid, cpu, time);

	id.id = SYN_PT_ID;
	syn_write(s, rec, rv_synth_itrace_start(&s->synth, rec, sizeof(rec), pid, pid, &id));
}

static void syn_exit(struct syn *s, uint32_t pid, uint32_t cpu, uint64_t time)
{
	uint8_t rec[256];
	struct rv_synth_id id = syn_id(pid, pid, cpu, time);

	syn_write(s, rec, rv_synth_exit(&s->synth, rec, sizeof(rec), pid, 1, pid, 1, time, &id));
}

static void syn_trace(struct syn *s, struct ptgen *g, uint32_t idx, uint32_t tid, uint32_t cpu,
		      uint64_t offset)
{
	struct rv_error err = { 0 };
	size_t size;
	const uint8_t *data;

	cr_assert_eq(ptgen_flush(g), 0);
	data = ptgen_data(g, &size);
	struct rv_perf_auxtrace a = {
		.size = size,
		.offset = offset,
		.idx = idx,
		.tid = tid,
		.cpu = cpu,
	};
	cr_assert_eq(rv_perf_writer_write_auxtrace(s->w, &a, data, &err), 0, "%s", err.message);
}

static void syn_finish(struct syn *s)
{
	struct rv_error err = { 0 };
	struct rv_perf_meta meta = {
		.cpuid = "GenuineIntel,6,140,1",
		.clockid = -1,
		.nr_cpus_avail = 4,
		.nr_cpus_online = 4,
	};

	cr_assert_eq(rv_perf_writer_finish(s->w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(s->w);
	s->w = NULL;
}

/* ---- two processes on two CPUs ---- */

struct scenario {
	struct prog a, b, c, k;
	char files[3][PATH_MAX];
};

static void scenario_programs(struct scenario *sc, const char *dir)
{
	const struct prog *user[3] = { &sc->a, &sc->b, &sc->c };
	static const char *const names[3] = { "proc_a.bin", "proc_b.bin", "proc_c.bin" };

	/* the same address, different code: a wrong image cannot go unnoticed */
	prog_make(&sc->a, USER_BASE, 3, 0x100, false);
	prog_make(&sc->b, USER_BASE, 5, 0x200, false);
	prog_make(&sc->c, USER_BASE, 4, 0x300, false);
	prog_make(&sc->k, KERNEL_BASE, 2, 0x80, true);
	for (int i = 0; i < 3; i++) {
		snprintf(sc->files[i], sizeof(sc->files[i]), "%s/%s", dir, names[i]);
		write_file(sc->files[i], user[i]->code, user[i]->size);
	}
}

/* A (pid 100) and B (pid 200) take turns on CPU 0, A execs C between its
 * turns, B enters the kernel at the end of its second turn and then runs on
 * CPU 1. Times are TSC ticks (TIME_CONV is the identity). B's first turn
 * begins before its IN record, as the kernel writes it after scheduling
 * the PT event in. */
static void write_per_cpu(const char *dir, const struct scenario *sc, bool kernel_map)
{
	struct syn s;
	struct ptgen *g0 = gen_new(), *g1 = gen_new();
	uint64_t tsc;

	syn_open(&s, dir, true, false, true);
	if (kernel_map)
		syn_kernel_map(&s, KERNEL_BASE, 0x1000);
	syn_comm(&s, 100, "proc_a", 0, 100);
	syn_mmap(&s, 100, USER_BASE, 0x1000, sc->files[0], 0, 100);
	syn_comm(&s, 200, "proc_b", 1, 200);
	syn_mmap(&s, 200, USER_BASE, 0x1000, sc->files[1], 1, 200);
	syn_itrace_start(&s, 100, 0, 9990);

	tsc = 10000;
	prog_feed(g0, &sc->a, &tsc);
	cr_assert_eq(ptgen_switch_out(g0, 10100), 0);
	syn_switch(&s, true, 100, 200, 0, 15000);
	syn_switch(&s, false, 200, 100, 0, 20300);
	cr_assert_eq(ptgen_switch_in(g0, 20000), 0);
	tsc = 20000;
	prog_feed(g0, &sc->b, &tsc);
	cr_assert_eq(ptgen_switch_out(g0, 20200), 0);
	syn_switch(&s, true, 200, 100, 0, 25000);
	syn_switch(&s, false, 100, 200, 0, 26000);
	syn_comm(&s, 100, "proc_c", 0, 27000);
	syn_mmap(&s, 100, USER_BASE, 0x1000, sc->files[2], 0, 27000);
	cr_assert_eq(ptgen_switch_in(g0, 30000), 0);
	tsc = 30000;
	prog_feed(g0, &sc->c, &tsc);
	cr_assert_eq(ptgen_switch_out(g0, 30200), 0);
	syn_switch(&s, true, 100, 200, 0, 35000);
	syn_switch(&s, false, 200, 100, 0, 36000);
	cr_assert_eq(ptgen_switch_in(g0, 40000), 0);
	tsc = 40000;
	prog_feed(g0, &sc->b, &tsc);
	prog_feed(g0, &sc->k, &tsc);
	syn_switch(&s, true, 200, 0, 0, 48000);
	syn_switch(&s, false, 0, 200, 0, 48500);
	syn_trace(&s, g0, 0, UINT32_MAX, 0, 0);

	syn_switch(&s, false, 200, 0, 1, 49000);
	tsc = 50000;
	prog_feed(g1, &sc->b, &tsc);
	syn_trace(&s, g1, 1, UINT32_MAX, 1, 0);
	syn_exit(&s, 100, 0, 60000);
	syn_exit(&s, 200, 1, 60000);
	syn_finish(&s);
	ptgen_free(g0);
	ptgen_free(g1);
}

static bool has_target(const struct tid_events *t, uint64_t ip)
{
	for (size_t i = 0; i < t->nr_targets; i++)
		if (t->call_targets[i] == ip)
			return true;
	return false;
}

/* What the scenario must decode to; `kernel`: the kernel's code was found. */
static void assert_scenario(const struct decoded *d, const struct scenario *sc, bool kernel)
{
	const struct tid_events *a = find_tid(&d->seen, 100), *b = find_tid(&d->seen, 200);

	assert_well_formed(&d->seen);
	cr_assert(d->info.per_cpu);
	cr_assert(d->info.kernel);
	cr_assert_eq(d->info.buffers, 2);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	/* A: its own code, then C's after the exec, under both names */
	cr_assert_eq(a->calls, sc->a.ncalls + sc->c.ncalls, "A: %" PRIu64 " calls", a->calls);
	cr_assert_eq(a->nr_targets, 2);
	cr_assert(has_target(a, sc->a.callee));
	cr_assert(has_target(a, sc->c.callee));
	cr_assert_str_eq(a->first_name, "proc_a");
	cr_assert_str_eq(a->name, "proc_c");
	cr_assert_eq(a->names, 2);
	cr_assert_eq(a->errors, 0);
	cr_assert(a->exited);
	/* B: three turns on two CPUs, and the kernel */
	cr_assert_eq(b->calls, 3 * sc->b.ncalls + (kernel ? sc->k.ncalls : 0),
		     "B: %" PRIu64 " calls", b->calls);
	cr_assert(has_target(b, sc->b.callee));
	cr_assert_eq(has_target(b, sc->k.callee), kernel);
	cr_assert_eq(b->nr_targets, kernel ? 2 : 1);
	cr_assert_str_eq(b->name, "proc_b");
	cr_assert_eq(b->names, 1);
	cr_assert_eq(b->errors, kernel ? 0 : 1);
	cr_assert(b->exited);
	cr_assert_geq(b->last_time, 50000, "B's turn on CPU 1 came last");
	for (size_t i = 0; i < d->seen.nr; i++)
		if (d->seen.t[i].tid != 100 && d->seen.t[i].tid != 200)
			cr_assert_eq(d->seen.t[i].events, 0, "events for thread %u",
				     d->seen.t[i].tid);
}

Test(pt_capture, per_cpu_switches_and_exec, .timeout = 60)
{
	char dir[PATH_MAX], vmlinux[PATH_MAX + 16];
	struct scenario sc;
	struct decoded *d = calloc(1, sizeof(*d));
	const struct rv_pt_missing *k;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	scenario_programs(&sc, dir);
	write_per_cpu(dir, &sc, true);

	/* No kernel code: the kernel part is an error charged to the kernel. */
	decode_capture(d, dir, false, NULL);
	assert_scenario(d, &sc, false);
	cr_assert_eq(d->nr_missing, 1);
	k = find_missing(d, "[kernel.kallsyms]");
	cr_assert_not_null(k);
	cr_assert_eq(k->mappings, 1);
	cr_assert_eq(k->errors, 1);
	cr_assert_eq(d->stats.nomap, 1);
	cr_assert_gt(k->skipped_bytes, 0);
	cr_assert_eq(k->skipped_bytes, d->stats.skipped_bytes);

	/* vmlinux, moved by the KASLR offset perf's kernel map gives (no kallsyms) */
	snprintf(vmlinux, sizeof(vmlinux), "%s/vmlinux", dir);
	write_elf(vmlinux, false, KERNEL_LINKED, sc.k.code, sc.k.size);
	decode_capture(d, dir, true, vmlinux);
	assert_scenario(d, &sc, true);
	cr_assert_eq(d->nr_missing, 0);
	cr_assert_eq(d->stats.errors, 0);

	/* asked for the kernel without any kernel code */
	decode_capture(d, dir, true, NULL);
	assert_scenario(d, &sc, false);
	free(d);
	remove_tree(dir);
}

/* kcore_dir: kcore holds the running kernel's code, kallsyms its symbols;
 * without kcore, kallsyms gives the KASLR offset for --vmlinux. */
Test(pt_capture, per_cpu_kcore_and_kallsyms, .timeout = 60)
{
	char dir[PATH_MAX], kdir[PATH_MAX + 16], path[PATH_MAX + 32], vmlinux[PATH_MAX + 16];
	struct scenario sc;
	struct decoded *d = calloc(1, sizeof(*d));
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	char kallsyms[256];

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	scenario_programs(&sc, dir);
	write_per_cpu(dir, &sc, false);
	snprintf(kdir, sizeof(kdir), "%s/kcore_dir", dir);
	cr_assert_eq(mkdir(kdir, 0700), 0);
	snprintf(kallsyms, sizeof(kallsyms),
		 "%016llx T _text\n%016llx T _stext\n%016llx t callee\n",
		 (unsigned long long)KERNEL_BASE, (unsigned long long)KERNEL_BASE,
		 (unsigned long long)sc.k.callee);
	snprintf(path, sizeof(path), "%s/kallsyms", kdir);
	write_file(path, kallsyms, strlen(kallsyms));

	char *probed = rv_pt_capture_probe_kallsyms(dir);
	cr_assert_not_null(probed);
	cr_assert_str_eq(probed, path);
	free(probed);
	cr_assert_null(rv_pt_capture_probe_kallsyms("-"));

	/* kallsyms without kcore: vmlinux relocated by kallsyms' _stext */
	snprintf(vmlinux, sizeof(vmlinux), "%s/vmlinux", dir);
	write_elf(vmlinux, false, KERNEL_LINKED, sc.k.code, sc.k.size);
	decode_capture(d, dir, true, vmlinux);
	assert_scenario(d, &sc, true);

	/* kcore: no relocation, vmlinux not needed */
	snprintf(path, sizeof(path), "%s/kcore", kdir);
	write_elf(path, true, KERNEL_BASE, sc.k.code, sc.k.size);
	decode_capture(d, dir, true, NULL);
	assert_scenario(d, &sc, true);
	cr_assert_eq(d->nr_missing, 0);

	cr_assert_eq(open_capture(&c, dir, true, NULL, &err), 0, "%s", err.message);
	cr_assert_not_null(rv_pt_capture_kallsyms(c));
	cr_assert_not_null(strstr(rv_pt_capture_kallsyms(c), "kcore_dir/kallsyms"));
	rv_pt_capture_free(c);

	/* a vmlinux that is not an ELF file: the kernel is missing, and why */
	write_file(vmlinux, "not elf", 7);
	cr_assert_eq(unlink(path), 0);
	decode_capture(d, dir, true, vmlinux);
	assert_scenario(d, &sc, false);
	cr_assert_not_null(find_missing(d, "[kernel.kallsyms]"));

	/* kcore_dir without kcore and no --vmlinux: why is said */
	const struct rv_pt_missing *m;
	const char *reason = NULL;
	cr_assert_eq(open_capture(&c, dir, true, NULL, &err), 0, "%s", err.message);
	for (size_t i = 0, n = rv_pt_capture_missing(c, &m); i < n; i++)
		if (!strcmp(m[i].path, "[kernel.kallsyms]"))
			reason = m[i].reason;
	cr_assert(reason && strstr(reason, "had no /proc/kcore"), "%s", reason);
	rv_pt_capture_free(c);
	free(d);
	remove_tree(dir);
}

/* ---- kernel names: vmlinux moved by KASLR, a module's .ko ---- */

/* A section of a hand-made ELF file: code, at addr (0 in a relocatable
 * file), and a PT_LOAD of it when `load`. */
struct elf_sec {
	const char *name;
	uint64_t addr;
	const uint8_t *code;
	size_t size;
	bool load;
};

/* A symbol in section `sec` (an index into the sections given). */
struct elf_sym {
	const char *name;
	size_t sec;
	uint64_t value, size;
	unsigned char type;
};

static size_t add_string(char *table, size_t *len, size_t cap, const char *s)
{
	size_t at = *len;

	cr_assert_lt(at + strlen(s) + 1, cap);
	memcpy(table + at, s, strlen(s) + 1);
	*len += strlen(s) + 1;
	return at;
}

/* An x86-64 ELF file of `type` (ET_EXEC: a vmlinux, ET_CORE: a kcore,
 * ET_REL: a module's .ko) with those sections of code, a symbol table, and
 * a GNU build-id note when id_size is not 0. */
static void write_elf_of(const char *path, uint16_t type, const struct elf_sec *secs, size_t nsecs,
			 const struct elf_sym *syms, size_t nsyms, const uint8_t *id,
			 size_t id_size)
{
	char shstr[512] = "", str[512] = "";
	size_t shstr_len = 1, str_len = 1, nload = 0;
	Elf64_Sym table[16];
	Elf_Scn *scns[8];
	uint8_t note[12 + 4 + RV_BUILD_ID_MAX];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_leq(nsecs, 8);
	cr_assert_lt(nsyms, 16);
	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	cr_assert_not_null(e);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_machine = EM_X86_64;
	eh->e_type = type;
	eh->e_version = EV_CURRENT;
	for (size_t i = 0; i < nsecs; i++)
		nload += secs[i].load;
	if (nload)
		cr_assert_not_null(elf64_newphdr(e, nload));
	for (size_t i = 0; i < nsecs; i++) {
		scns[i] = elf_newscn(e);
		Elf_Data *d = elf_newdata(scns[i]);
		d->d_buf = (void *)secs[i].code;
		d->d_size = secs[i].size;
		d->d_type = ELF_T_BYTE;
		d->d_align = 16;
		Elf64_Shdr *sh = elf64_getshdr(scns[i]);
		sh->sh_name =
			(Elf64_Word)add_string(shstr, &shstr_len, sizeof(shstr), secs[i].name);
		sh->sh_type = SHT_PROGBITS;
		sh->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
		sh->sh_addr = secs[i].addr;
		sh->sh_addralign = 16;
	}
	if (id_size) {
		uint32_t words[3] = { 4, (uint32_t)id_size, NT_GNU_BUILD_ID };

		memcpy(note, words, 12);
		memcpy(note + 12, "GNU", 4);
		memcpy(note + 16, id, id_size);
		Elf_Scn *n = elf_newscn(e);
		Elf_Data *d = elf_newdata(n);
		d->d_buf = note;
		d->d_size = 16 + ((id_size + 3) & ~3ul);
		d->d_type = ELF_T_BYTE;
		d->d_align = 4;
		Elf64_Shdr *sh = elf64_getshdr(n);
		sh->sh_name = (Elf64_Word)add_string(shstr, &shstr_len, sizeof(shstr),
						     ".note.gnu.build-id");
		sh->sh_type = SHT_NOTE;
		sh->sh_flags = SHF_ALLOC;
	}
	memset(table, 0, sizeof(table));
	for (size_t i = 0; i < nsyms; i++) {
		table[i + 1].st_name =
			(Elf64_Word)add_string(str, &str_len, sizeof(str), syms[i].name);
		table[i + 1].st_value = syms[i].value;
		table[i + 1].st_size = syms[i].size;
		table[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, syms[i].type);
		table[i + 1].st_shndx = (Elf64_Section)elf_ndxscn(scns[syms[i].sec]);
	}
	Elf_Scn *strs = elf_newscn(e);
	Elf_Data *d = elf_newdata(strs);
	d->d_buf = str;
	d->d_size = str_len;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	Elf64_Shdr *sh = elf64_getshdr(strs);
	sh->sh_name = (Elf64_Word)add_string(shstr, &shstr_len, sizeof(shstr), ".strtab");
	sh->sh_type = SHT_STRTAB;
	Elf_Scn *symtab = elf_newscn(e);
	d = elf_newdata(symtab);
	d->d_buf = table;
	d->d_size = (nsyms + 1) * sizeof(Elf64_Sym);
	d->d_type = ELF_T_SYM;
	d->d_align = 8;
	sh = elf64_getshdr(symtab);
	sh->sh_name = (Elf64_Word)add_string(shstr, &shstr_len, sizeof(shstr), ".symtab");
	sh->sh_type = SHT_SYMTAB;
	sh->sh_link = (Elf64_Word)elf_ndxscn(strs);
	sh->sh_info = 1;
	sh->sh_entsize = sizeof(Elf64_Sym);
	Elf_Scn *shs = elf_newscn(e);
	sh = elf64_getshdr(shs);
	sh->sh_name = (Elf64_Word)add_string(shstr, &shstr_len, sizeof(shstr), ".shstrtab");
	sh->sh_type = SHT_STRTAB;
	d = elf_newdata(shs);
	d->d_buf = shstr;
	d->d_size = shstr_len;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shs);

	cr_assert_geq(elf_update(e, ELF_C_NULL), 0, "%s", elf_errmsg(-1));
	Elf64_Phdr *ph = elf64_getphdr(e);
	for (size_t i = 0, p = 0; i < nsecs; i++) {
		if (!secs[i].load)
			continue;
		ph[p].p_type = PT_LOAD;
		ph[p].p_offset = elf64_getshdr(scns[i])->sh_offset;
		ph[p].p_vaddr = ph[p].p_paddr = secs[i].addr;
		ph[p].p_filesz = ph[p].p_memsz = secs[i].size;
		ph[p].p_flags = PF_R | PF_X;
		ph[p].p_align = 16;
		p++;
	}
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "%s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
}

/* A module's MMAP, as perf writes one: its .ko's path. */
static void syn_module_map(struct syn *s, uint64_t start, uint64_t len, const char *ko)
{
	uint8_t rec[4096 + PATH_MAX];
	struct rv_synth_id id = syn_id(UINT32_MAX, 0, 0, 0);

	syn_write(s, rec,
		  rv_synth_mmap(&s->synth, rec, sizeof(rec), UINT32_MAX, 0, start, len, 0, ko,
				PERF_RECORD_MISC_KERNEL, &id));
}

#define MODULE_BASE 0xffffffffc0a01000ull

/* Process 200 runs its code, then the kernel's (two calls of a helper),
 * then a module's (three). kcore holds the code of both; the names are in
 * vmlinux, linked KASLR_SHIFT lower than it ran, and in the module's .ko,
 * whose .init.text the loader drops, so its .text is at the module's base;
 * kallsyms has nothing but _text and _stext (then is not there: perf's
 * kernel map places vmlinux). Decoded, built and written through the real
 * pipeline (render), each span is named as its symbol. */
Test(pt_capture, kernel_names_from_vmlinux_and_module, .timeout = 60)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], vmlinux[PATH_MAX + 16], ko[PATH_MAX + 16];
	char trace_path[PATH_MAX + 16], kallsyms[256], fxt_err[256];
	struct prog user, k, m;
	struct syn s;
	struct ptgen *g = gen_new();
	uint64_t tsc = 10000;
	uint8_t id[RV_BUILD_ID_MAX] = { 0x5a, 0x17 }, zeros[64] = { 0 };
	size_t id_size = rv_kernel_running_build_id(id);

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	prog_make(&user, USER_BASE, 2, 0x100, false);
	prog_make(&k, KERNEL_BASE, 2, 0x80, true);
	prog_make(&m, MODULE_BASE, 3, 0x40, true);
	snprintf(path, sizeof(path), "%s/user.bin", dir);
	write_file(path, user.code, user.size);

	syn_open(&s, dir, true, false, true);
	syn_kernel_map(&s, KERNEL_BASE, 0x1000);
	snprintf(ko, sizeof(ko), "%s/fake-mod.ko", dir);
	syn_module_map(&s, MODULE_BASE, 0x1000, ko);
	syn_comm(&s, 200, "proc_k", 0, 100);
	syn_mmap(&s, 200, USER_BASE, 0x1000, path, 0, 100);
	syn_switch(&s, false, 200, 0, 0, 9000);
	prog_feed(g, &user, &tsc);
	prog_feed(g, &k, &tsc);
	prog_feed(g, &m, &tsc);
	syn_trace(&s, g, 0, UINT32_MAX, 0, 0);
	syn_exit(&s, 200, 0, 60000);
	syn_finish(&s);
	ptgen_free(g);

	/* the code, as the running kernel had it */
	snprintf(path, sizeof(path), "%s/kcore_dir", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	struct elf_sec core[2] = {
		{ "k", KERNEL_BASE, k.code, k.size, true },
		{ "m", MODULE_BASE, m.code, m.size, true },
	};
	snprintf(path, sizeof(path), "%s/kcore_dir/kcore", dir);
	write_elf_of(path, ET_CORE, core, 2, NULL, 0, NULL, 0);
	snprintf(kallsyms, sizeof(kallsyms), "%016llx T _text\n%016llx T _stext\n",
		 (unsigned long long)KERNEL_BASE, (unsigned long long)KERNEL_BASE);
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", dir);
	write_file(path, kallsyms, strlen(kallsyms));

	/* the names: vmlinux at its link-time addresses, the module's .ko */
	struct elf_sec text = { ".text", KERNEL_LINKED, k.code, k.size, true };
	struct elf_sym vsyms[] = {
		{ "_stext", 0, KERNEL_LINKED, 0, STT_NOTYPE },
		{ "_text", 0, KERNEL_LINKED, 0, STT_NOTYPE },
		{ "do_kernel_work", 0, KERNEL_LINKED, 0x80, STT_FUNC },
		{ "kernel_helper", 0, KERNEL_LINKED + 0x80, 1, STT_FUNC },
	};
	snprintf(vmlinux, sizeof(vmlinux), "%s/vmlinux", dir);
	/* the capture's build-id list gives the kernel this machine's id */
	write_elf_of(vmlinux, ET_EXEC, &text, 1, vsyms, 4, id, id_size);
	struct elf_sec ko_secs[] = {
		{ ".init.text", 0, zeros, sizeof(zeros), false },
		{ ".text", 0, m.code, m.size, false },
	};
	struct elf_sym msyms[] = {
		{ "fake_mod_init", 0, 0, sizeof(zeros), STT_FUNC },
		{ "mod_work", 1, 0, 0x40, STT_FUNC },
		{ "mod_helper", 1, 0x40, 1, STT_FUNC },
	};
	write_elf_of(ko, ET_REL, ko_secs, 2, msyms, 3, NULL, 0);

	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };
	struct rv_render_options ro = {
		.decode = { .path = dir, .include_kernel = true, .vmlinux = vmlinux, .jobs = 1 },
	};
	struct fxt_trace *t = NULL;

	snprintf(trace_path, sizeof(trace_path), "%s/trace.fxt", dir);
	cr_assert_eq(rv_trace_writer_open(&w, trace_path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_render(&ro, w, &err), 0, "%s", err.message);
	rv_trace_writer_free(w);
	cr_assert_eq(fxt_read_file(trace_path, &t, fxt_err, sizeof(fxt_err)), 0, "%s", fxt_err);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "kernel_helper"), k.ncalls);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "mod_helper"), m.ncalls);
	cr_assert_geq(fxt_count_spans(t, 200, 200, "do_kernel_work"), 1);
	cr_assert_geq(fxt_count_spans(t, 200, 200, "mod_work"), 1);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "_stext"), 0, "named from kallsyms");
	cr_assert_eq(fxt_count_spans(t, 200, 200, "fake_mod_init"), 0, ".init.text was laid out");
	fxt_trace_free(t);

	/* without kallsyms, perf's kernel map ([kernel.kallsyms]_text at
	 * KERNEL_BASE) gives the KASLR offset */
	snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", dir);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(rv_trace_writer_open(&w, trace_path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_render(&ro, w, &err), 0, "%s", err.message);
	rv_trace_writer_free(w);
	cr_assert_eq(fxt_read_file(trace_path, &t, fxt_err, sizeof(fxt_err)), 0, "%s", fxt_err);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "kernel_helper"), k.ncalls);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "mod_helper"), m.ncalls);
	fxt_trace_free(t);

	/* without kernel scope nothing of the kernel is in the trace */
	ro.decode.include_kernel = false;
	cr_assert_eq(rv_trace_writer_open(&w, trace_path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_render(&ro, w, &err), 0, "%s", err.message);
	rv_trace_writer_free(w);
	cr_assert_eq(fxt_read_file(trace_path, &t, fxt_err, sizeof(fxt_err)), 0, "%s", fxt_err);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "kernel_helper"), 0);
	cr_assert_eq(fxt_count_spans(t, 200, 200, "mod_helper"), 0);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert(strncmp(t->spans[i].name, "0xffff", 6), "a kernel address: %s",
			  t->spans[i].name);
	fxt_trace_free(t);
	remove_tree(dir);
}

/* Several snapshots of one per-thread buffer: each decoded on its own, in
 * order, the thread named once. */
Test(pt_capture, snapshots_of_one_buffer, .timeout = 60)
{
	char dir[PATH_MAX];
	struct scenario sc;
	struct decoded *d = calloc(1, sizeof(*d));
	struct ptgen *g1 = gen_new(), *g2 = gen_new();
	struct syn s;
	uint64_t tsc = 1000;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	scenario_programs(&sc, dir);
	syn_open(&s, dir, false, true, false);
	syn_comm(&s, 300, "proc_s", 0, 10);
	syn_mmap(&s, 300, USER_BASE, 0x1000, sc.files[0], 0, 10);
	syn_itrace_start(&s, 300, 0, 999);
	prog_feed(g1, &sc.a, &tsc);
	tsc = 2000;
	prog_feed(g2, &sc.a, &tsc);
	prog_feed(g2, &sc.a, &tsc);
	syn_trace(&s, g1, 0, 300, UINT32_MAX, 0);
	syn_trace(&s, g2, 0, 300, UINT32_MAX, 4096);
	syn_exit(&s, 300, 0, 3000);
	syn_finish(&s);
	ptgen_free(g1);
	ptgen_free(g2);

	decode_capture(d, dir, false, NULL);
	assert_well_formed(&d->seen);
	cr_assert(d->info.snapshot);
	cr_assert_not(d->info.per_cpu);
	cr_assert_eq(d->info.buffers, 2);
	const struct tid_events *t = find_tid(&d->seen, 300);
	cr_assert_not_null(t);
	cr_assert_eq(t->calls, 3 * sc.a.ncalls);
	cr_assert_eq(t->names, 1);
	cr_assert_str_eq(t->name, "proc_s");
	cr_assert_eq(t->errors, 0);
	cr_assert_eq(t->pid, 300);
	cr_assert(t->exited);
	cr_assert_lt(t->first_time, 2000, "the first snapshot");
	cr_assert_geq(t->last_time, 2000, "the second snapshot");
	free(d);
	remove_tree(dir);
}

/* ---- bad input ---- */

static void expect_refusal(const char *path, int code, const char *words)
{
	struct rv_pt_capture *c = NULL;
	struct rv_error err = { 0 };
	int ret = open_capture(&c, path, false, NULL, &err);

	cr_assert_eq(ret, -code, "%s: %d (%s)", path, ret, err.message);
	cr_assert_null(c);
	cr_assert_gt(strlen(err.message), 10, "a message");
	if (words)
		cr_assert_not_null(strstr(err.message, words), "'%s' lacks '%s'", err.message,
				   words);
}

Test(pt_capture, refuses_what_is_not_pt, .timeout = 120)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], exe[PATH_MAX];
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(path, sizeof(path), "%s/text.data", dir);
	write_file(path, "this is not a perf.data file, only some text\n", 45);
	cr_assert_lt(open_capture(&c, path, false, NULL, &err), 0);
	cr_assert_gt(strlen(err.message), 10);
	snprintf(path, sizeof(path), "%s/empty.data", dir);
	write_file(path, "", 0);
	cr_assert_lt(open_capture(&c, path, false, NULL, &err), 0);
	snprintf(path, sizeof(path), "%s/absent.data", dir);
	cr_assert_lt(open_capture(&c, path, false, NULL, &err), 0);
	cr_assert_not_null(strstr(err.message, "absent.data"), "%s", err.message);

	/* a sampling capture: named for what it holds */
	snprintf(exe, sizeof(exe), "%s", build_path("rearview"));
	cr_assert_eq(access(exe, X_OK), 0, "%s is not built", exe);
	snprintf(path, sizeof(path), "%s/sampling", dir);
	char out[PATH_MAX + 32];
	snprintf(out, sizeof(out), "%s/trace.fxt", dir);
	char *argv[] = { exe,  "run", "--sampling", "--working-directory", path,
			 "-o", out,   "--",	    "/bin/true",	   NULL };
	cr_assert_eq(run(argv, -1), 0, "rearview run --sampling failed");
	expect_refusal(path, ENOTSUP, "cpu-clock samples");
	expect_refusal(path, ENOTSUP, "record it again with Intel PT");
	remove_tree(dir);
}

/* Opens and decodes a damaged capture: an error with a message, or a
 * decode of what is left; never a crash (ASan watches). Whether it opened. */
static bool try_damaged(const char *path)
{
	struct rv_pt_capture *c = NULL;
	struct rv_error err = { 0 };
	struct seen *seen = calloc(1, sizeof(*seen));
	struct rv_pt_stats stats;
	int ret = open_capture(&c, path, true, NULL, &err);

	if (ret) {
		cr_assert_null(c);
		cr_assert_gt(strlen(err.message), 0, "a failure without a message");
	} else {
		const struct rv_pt_missing *m;

		cr_assert_eq(rv_pt_capture_decode(c, collect, seen, &stats, &err), 0, "%s",
			     err.message);
		rv_pt_capture_missing(c, &m);
		rv_pt_capture_free(c);
	}
	free(seen);
	return ret == 0;
}

/* Where a file-mode capture keeps what opening it needs: the end of its
 * attribute section (perf.data's header: attrs.offset at byte 24, its size
 * at 32), of its AUXTRACE_INFO record and of its first AUXTRACE record
 * (header and payload), and where its AUXTRACE payloads lie. */
struct capture_layout {
	uint64_t attrs_end, info_end, first_trace_end;
	uint64_t payload_begin[4096], payload_end[4096];
	size_t nr_payloads;
};

static void capture_layout(const char *capture, const uint8_t *data, size_t size,
			   struct capture_layout *l)
{
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	uint64_t attrs_offset, attrs_size;

	memset(l, 0, sizeof(*l));
	cr_assert_gt(size, 40);
	memcpy(&attrs_offset, data + 24, 8);
	memcpy(&attrs_size, data + 32, 8);
	l->attrs_end = attrs_offset + attrs_size;
	cr_assert_eq(rv_perf_reader_open(&r, capture, &err), 0, "%s", err.message);
	while (rv_perf_reader_next(r, &rec, &err) == 1) {
		uint64_t end = rec.file_offset + rec.header->size + rec.payload_size;

		if (rec.header->type == RV_PERF_RECORD_AUXTRACE_INFO && !l->info_end)
			l->info_end = end;
		if (rec.header->type != RV_PERF_RECORD_AUXTRACE)
			continue;
		if (!l->first_trace_end)
			l->first_trace_end = end;
		cr_assert_lt(l->nr_payloads, 4096);
		l->payload_begin[l->nr_payloads] = end - rec.payload_size;
		l->payload_end[l->nr_payloads++] = end;
	}
	rv_perf_reader_free(r);
	cr_assert_gt(l->info_end, 0, "%s has no AUXTRACE_INFO", capture);
	cr_assert_gt(l->first_trace_end, l->info_end, "%s: AUXTRACE_INFO first", capture);
}

/* The file-mode capture cut at every record boundary (and in the middle of
 * every record), and whole. A cut opens exactly when it keeps the attribute
 * section (which perf writes at the end of the file, the 4.14 one at the
 * start) and the first AUXTRACE record whole: damage after it keeps what came
 * before, damage before it is an error (pt_capture.h). */
static void truncate_everywhere(const char *capture, const char *dir)
{
	struct capture_layout *l = malloc(sizeof(*l));
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	char path[PATH_MAX + 32];
	uint64_t cuts[4096];
	size_t nr = 0, size, opened = 0, expected = 0;
	uint8_t *data = read_whole(capture, &size);

	cr_assert_not_null(l);
	capture_layout(capture, data, size, l);
	cr_assert_eq(rv_perf_reader_open(&r, capture, &err), 0, "%s", err.message);
	while (rv_perf_reader_next(r, &rec, &err) == 1 && nr + 3 < 4096) {
		uint64_t end = rec.file_offset + rec.header->size + rec.payload_size;

		cuts[nr++] = rec.file_offset;
		cuts[nr++] = rec.file_offset + (end - rec.file_offset) / 2;
	}
	rv_perf_reader_free(r);
	cr_assert_gt(nr, 10);
	cuts[nr++] = size;
	snprintf(path, sizeof(path), "%s/cut.data", dir);
	for (size_t i = 0; i < nr; i++) {
		bool can_open = cuts[i] >= l->attrs_end && cuts[i] >= l->first_trace_end;
		bool did_open;

		cr_assert_leq(cuts[i], size);
		write_file(path, data, cuts[i]);
		did_open = try_damaged(path);
		cr_assert_eq(did_open, can_open,
			     "%s cut at %" PRIu64 " of %zu bytes %s (attributes end at %" PRIu64
			     ", the first AUXTRACE record at %" PRIu64 ")",
			     capture, cuts[i], size, did_open ? "opened" : "did not open",
			     l->attrs_end, l->first_trace_end);
		opened += did_open;
		expected += can_open;
	}
	fprintf(stderr, "pt_capture: %s cut at %zu places, %zu opened\n", capture, nr, opened);
	cr_assert_eq(opened, expected);
	free(data);
	free(l);
}

/* One byte flipped at a time, at `count` places spread over the file. A
 * flip in the magic number cannot open; one in the PT bytes of an AUXTRACE
 * record must (opening reads only the records around them). */
static void flip_bytes(const char *capture, const char *dir, size_t count)
{
	struct capture_layout *l = malloc(sizeof(*l));
	char path[PATH_MAX + 32];
	size_t size, opened = 0, in_trace = 0;
	uint8_t *data = read_whole(capture, &size);

	cr_assert_not_null(l);
	capture_layout(capture, data, size, l);
	snprintf(path, sizeof(path), "%s/flipped.data", dir);
	for (size_t i = 0; i < count; i++) {
		size_t at = (size_t)(((uint64_t)i * 7919u * 104729u + i) % size);
		uint8_t saved = data[at];
		bool in_payload = false, did_open;

		for (size_t k = 0; k < l->nr_payloads && !in_payload; k++)
			in_payload = at >= l->payload_begin[k] && at < l->payload_end[k];
		data[at] ^= (uint8_t)(0x5a + i);
		if (data[at] == saved)
			data[at] ^= 0xff;
		write_file(path, data, size);
		did_open = try_damaged(path);
		if (at < 8)
			cr_assert_not(did_open, "%s opened with byte %zu of its magic flipped",
				      capture, at);
		if (in_payload)
			cr_assert(did_open, "%s did not open with byte %zu (in PT data) flipped",
				  capture, at);
		opened += did_open;
		in_trace += in_payload;
		data[at] = saved;
	}
	fprintf(stderr, "pt_capture: %s with %zu flipped bytes, %zu opened\n", capture, count,
		opened);
	cr_assert_gt(in_trace, 0, "no flip fell in PT data");
	cr_assert_geq(opened, in_trace);
	cr_assert_lt(opened, count, "the flip in the magic number opened");
	free(data);
	free(l);
}

Test(pt_capture, damaged_softpt_capture, .timeout = 600)
{
	char dir[PATH_MAX], cap[PATH_MAX + 8], file[PATH_MAX + 32];
	const char *dirs[] = { cap, NULL };

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(cap, sizeof(cap), "%s/cap", dir);
	softpt("two_threads", NULL, dirs);
	snprintf(file, sizeof(file), "%s/perf.data", cap);
	truncate_everywhere(file, dir);
	flip_bytes(file, dir, 600);
	remove_tree(dir);
}

Test(pt_capture, damaged_skylake_capture, .timeout = 600)
{
	char dir[PATH_MAX], file[PATH_MAX];

	corpus_path(file, sizeof(file), "perf-4.14/perf.data.intel_pt-4.14");
	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	truncate_everywhere(file, dir);
	flip_bytes(file, dir, 600);
	remove_tree(dir);
}

/* Damage after the first AUXTRACE record (here the second one's size is
 * corrupt) keeps what came before it and says where reading stopped. */
Test(pt_capture, damage_after_the_trace, .timeout = 300)
{
	char dir[PATH_MAX], cap[PATH_MAX + 8], file[PATH_MAX + 32], cut[PATH_MAX + 32];
	const char *dirs[] = { cap, NULL };
	struct decoded *d = calloc(1, sizeof(*d));
	struct rv_perf_reader *r;
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	uint64_t second = 0;
	size_t size, buffers = 0;
	uint8_t *data;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	snprintf(cap, sizeof(cap), "%s/cap", dir);
	softpt("two_threads", NULL, dirs);
	snprintf(file, sizeof(file), "%s/perf.data", cap);
	cr_assert_eq(rv_perf_reader_open(&r, file, &err), 0);
	while (rv_perf_reader_next(r, &rec, &err) == 1)
		if (rec.header->type == RV_PERF_RECORD_AUXTRACE && ++buffers == 2)
			second = rec.file_offset;
	rv_perf_reader_free(r);
	cr_assert_gt(second, 0);
	data = read_whole(file, &size);
	uint16_t bad_size = 4; /* less than the record's own header */
	memcpy(data + second + offsetof(struct perf_event_header, size), &bad_size, 2);
	snprintf(cut, sizeof(cut), "%s/perf.data", dir);
	write_file(cut, data, size);
	decode_capture(d, dir, false, NULL);
	cr_assert_eq(d->info.buffers, 1, "the buffer before the damage");
	cr_assert_gt(strlen(d->damage), 0, "the damage is reported");
	cr_assert_eq(d->stats.errors, 0);
	cr_assert_gt(d->seen.total, 0);
	free(data);
	free(d);
	remove_tree(dir);
}

/* ---- the sink's batch form ---- */

/* Every event a sink took, in order, with where it came in. */
struct event_log {
	struct logged {
		struct rv_event ev;
		char name[64]; /* THREAD_NAME's, copied: it lives only in the call */
	} * v;
	size_t nr, cap;
	uint64_t batches, in_batches;
};

static int log_event(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	struct event_log *l = ctx;

	if (l->nr == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		cr_assert_not_null(l->v);
	}
	struct logged *e = &l->v[l->nr++];
	memset(e, 0, sizeof(*e));
	e->ev = *ev;
	if (ev->kind == RV_EVENT_THREAD_NAME) {
		snprintf(e->name, sizeof(e->name), "%s", ev->thread.name);
		e->ev.thread.name = NULL;
	}
	if (ev->kind == RV_EVENT_TRACE_ERROR)
		e->ev.error.message = NULL; /* copied in the queue of per-CPU lanes */
	return 0;
}

static int log_batch(void *ctx, const struct rv_event *evs, size_t n, struct rv_error *err)
{
	struct event_log *l = ctx;

	cr_assert_gt(n, 0, "an empty batch");
	l->batches++;
	l->in_batches += n;
	for (size_t i = 0; i < n; i++)
		log_event(ctx, &evs[i], err);
	return 0;
}

static bool same_end(const struct rv_branch_end *a, const struct rv_branch_end *b)
{
	return a->ip == b->ip && a->sym == b->sym && a->sym_start == b->sym_start &&
	       a->dso == b->dso;
}

/* Field by field: padding is whatever the producer's stack held. */
static bool same_event(const struct rv_event *a, const struct rv_event *b)
{
	if (a->kind != b->kind || a->pid != b->pid || a->tid != b->tid || a->time != b->time)
		return false;
	if (a->kind == RV_EVENT_BRANCH)
		return a->branch.kind == b->branch.kind && a->branch.flags == b->branch.flags &&
		       same_end(&a->branch.from, &b->branch.from) &&
		       same_end(&a->branch.to, &b->branch.to);
	if (a->kind == RV_EVENT_TRACE_ERROR)
		return a->error.offset == b->error.offset && a->error.ip == b->error.ip &&
		       a->error.overflow == b->error.overflow;
	return true;
}

static void log_decode_scope(struct event_log *l, const char *dir, bool batches, bool kernel)
{
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	struct rv_pt_stats stats;

	memset(l, 0, sizeof(*l));
	cr_assert_eq(open_capture(&c, dir, kernel, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(rv_pt_capture_decode_batches(c, log_event, batches ? log_batch : NULL, l,
						  &stats, &err),
		     0, "%s", err.message);
	rv_pt_capture_free(c);
}

static void log_decode(struct event_log *l, const char *dir, bool batches)
{
	log_decode_scope(l, dir, batches, false);
}

/* one and many hold the same events, field by field. */
static void assert_same_log(const struct event_log *one, const struct event_log *many)
{
	cr_assert_eq(many->nr, one->nr, "%zu events in batches, %zu one by one", many->nr, one->nr);
	for (size_t i = 0; i < one->nr; i++) {
		const struct logged *a = &one->v[i], *b = &many->v[i];

		cr_assert(same_event(&a->ev, &b->ev),
			  "event %zu differs (kind %d/%d, time %" PRIu64 "/%" PRIu64 ")", i,
			  a->ev.kind, b->ev.kind, a->ev.time, b->ev.time);
		cr_assert_str_eq(a->name, b->name);
	}
}

/* A thread's lane hands the events that need nothing but the sink over in
 * batches, and the rest (its name, its rename in the middle of a batch, its
 * exit, the name of the thread whose lane comes next) one by one: the sink
 * takes the same events in the same order. */
Test(pt_capture, batches_are_the_events_one_by_one, .timeout = 60)
{
	char dir[PATH_MAX];
	struct scenario sc;
	struct ptgen *g1 = gen_new(), *g2 = gen_new(), *g3 = gen_new();
	struct syn s;
	struct event_log one, many;
	uint64_t tsc = 1000, branches = 0;
	size_t names = 0;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	scenario_programs(&sc, dir);
	syn_open(&s, dir, false, true, false);
	syn_comm(&s, 300, "proc_b", 0, 10);
	syn_mmap(&s, 300, USER_BASE, 0x1000, sc.files[0], 0, 10);
	syn_itrace_start(&s, 300, 0, 999);
	/* another process, in a buffer of its own: its lane comes after */
	syn_comm(&s, 400, "proc_c", 0, 10);
	syn_mmap(&s, 400, USER_BASE, 0x1000, sc.files[2], 0, 10);
	syn_itrace_start(&s, 400, 0, 2999);
	for (int i = 0; i < 40; i++)
		prog_feed(g1, &sc.a, &tsc);
	tsc = 2000;
	for (int i = 0; i < 40; i++)
		prog_feed(g2, &sc.a, &tsc);
	uint64_t c_tsc = 3000;
	for (int i = 0; i < 40; i++)
		prog_feed(g3, &sc.c, &c_tsc);
	/* a rename (not an exec: the code stays) between the two snapshots */
	uint8_t rec[512];
	struct rv_synth_id id = syn_id(300, 300, 0, 1500);
	syn_write(&s, rec,
		  rv_synth_comm(&s.synth, rec, sizeof(rec), 300, 300, "proc_b2", false, &id));
	syn_trace(&s, g1, 0, 300, UINT32_MAX, 0);
	syn_trace(&s, g2, 0, 300, UINT32_MAX, 1 << 16);
	syn_trace(&s, g3, 1, 400, UINT32_MAX, 0);
	syn_exit(&s, 300, 0, tsc + 100);
	syn_exit(&s, 400, 0, c_tsc + 100);
	syn_finish(&s);
	ptgen_free(g1);
	ptgen_free(g2);
	ptgen_free(g3);

	log_decode(&one, dir, false);
	log_decode(&many, dir, true);
	cr_assert_eq(one.batches, 0);
	assert_same_log(&one, &many);
	for (size_t i = 0; i < one.nr; i++) {
		const struct logged *a = &one.v[i];

		branches += a->ev.kind == RV_EVENT_BRANCH;
		names += a->ev.kind == RV_EVENT_THREAD_NAME;
	}
	cr_assert_eq(names, 3, "the name, the rename, the other's name: %zu names", names);
	cr_assert_geq(branches, 80 * sc.a.ncalls + 40 * sc.c.ncalls);
	cr_assert_eq(one.v[one.nr - 1].ev.kind, RV_EVENT_THREAD_EXIT);
	/* the plain branches went in batches, not one by one: all but the
	 * first of each thread and the first after the rename */
	cr_assert_gt(many.batches, 1);
	cr_assert_geq(many.in_batches + 3, branches, "%" PRIu64 " of %" PRIu64 " in batches",
		      many.in_batches, branches);
	free(one.v);
	free(many.v);
	remove_tree(dir);
}

/* A thread traced in the kernel too, decoded without kernel scope: a batch
 * of its branches holds kernel addresses, which consume drops (in_scope),
 * so the batch is not taken whole; the sink takes the same events as one by
 * one. (The kernel's code is mapped into the process here, as the decoder
 * reads no kernel code out of scope: with errors in them, the batches
 * would not be taken whole anyway.) */
Test(pt_capture, batches_without_kernel_scope_are_the_events_one_by_one, .timeout = 60)
{
	char dir[PATH_MAX], kfile[PATH_MAX + 16];
	struct scenario sc;
	struct ptgen *g = gen_new();
	struct syn s;
	struct event_log one, many;
	uint64_t tsc = 1000, branches = 0, kernel = 0;

	make_temp_dir(dir, sizeof(dir), "rv-ptcap");
	scenario_programs(&sc, dir);
	snprintf(kfile, sizeof(kfile), "%s/kernel.bin", dir);
	write_file(kfile, sc.k.code, sc.k.size);
	syn_open(&s, dir, false, false, true);
	syn_comm(&s, 300, "proc_a", 0, 10);
	syn_mmap(&s, 300, USER_BASE, 0x1000, sc.files[0], 0, 10);
	syn_mmap(&s, 300, KERNEL_BASE, 0x1000, kfile, 0, 10);
	syn_itrace_start(&s, 300, 0, 999);
	for (int i = 0; i < 200; i++) {
		prog_feed(g, &sc.a, &tsc);
		prog_feed(g, &sc.k, &tsc);
	}
	syn_trace(&s, g, 0, 300, UINT32_MAX, 0);
	syn_exit(&s, 300, 0, tsc + 100);
	syn_finish(&s);
	ptgen_free(g);

	/* in kernel scope, the kernel's calls are there, without an error */
	log_decode_scope(&one, dir, false, true);
	for (size_t i = 0; i < one.nr; i++) {
		const struct rv_event *e = &one.v[i].ev;

		cr_assert_neq(e->kind, RV_EVENT_TRACE_ERROR, "event %zu: an error", i);
		kernel += e->kind == RV_EVENT_BRANCH && e->branch.kind == RV_BRANCH_CALL &&
			  e->branch.to.ip >= KERNEL_BASE;
	}
	cr_assert_eq(kernel, 200 * sc.k.ncalls);
	free(one.v);

	log_decode(&one, dir, false);
	log_decode(&many, dir, true);
	assert_same_log(&one, &many);
	for (size_t i = 0; i < one.nr; i++) {
		const struct rv_event *e = &one.v[i].ev;

		if (e->kind != RV_EVENT_BRANCH)
			continue;
		branches++;
		cr_assert(e->branch.from.ip < KERNEL_BASE && e->branch.to.ip < KERNEL_BASE,
			  "event %zu: a kernel address out of scope", i);
	}
	cr_assert_geq(branches, 200 * 2 * sc.a.ncalls);
	/* the user's branches still go in batches, between the kernel's */
	cr_assert_geq(many.in_batches, branches / 2, "%" PRIu64 " of %" PRIu64 " in batches",
		      many.in_batches, branches);
	free(one.v);
	free(many.v);
	remove_tree(dir);
}
