/* test_killed.c: a killed recording keeps what it had. `rearview run
 * --full-execution` of a target that says how many calls it has made
 * (tests/targets/progress) is SIGKILLed after a few flush intervals; then
 * `rearview decode DIR` of its capture writes a trace holding at least the
 * calls made up to FLUSH_LAG before the kill, and says the capture was cut.
 * For the sampling backend, whose samples are not calls, the trace must
 * cover the target's run up to FLUSH_LAG before the kill (from its first
 * span to its last).
 *
 * Releasing uprobe links can block while a traced thread is busy: the
 * target is stopped (SIGSTOP) before rearview is killed, every wait is
 * bounded, and the target is killed before the test looks at anything.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "fxt_reader.h"
#include "harness.h"
#include "test_files.h"

/* How long before the kill the records may have been, unflushed: a flush
 * interval (1 s), the reorder buffer's two drain passes (100 ms each) and a
 * second of slack for a loaded machine. */
#define FLUSH_LAG_MS 2500
/* How long the recording runs before the kill: several flushes. */
#define RUN_MS 5000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* The last "calls N" the target printed into the output file fd, or -1. */
static long last_calls(int fd)
{
	static char text[1 << 20];
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	long calls = -1;

	if (n <= 0)
		return -1;
	text[n] = '\0';
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');

		if (!next)
			break; /* a line being written */
		if (!strncmp(line, "calls ", 6))
			calls = strtol(line + 6, NULL, 10);
		line = next + 1;
	}
	return calls;
}

/* rearview's child: the target it runs, or -1. */
static pid_t child_of(pid_t pid)
{
	char path[64];
	FILE *f;
	int child = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &child) != 1)
		child = -1;
	fclose(f);
	return child;
}

/* Waits up to limit_ms until pid (not our child) is gone. */
static bool wait_gone(pid_t pid, long limit_ms)
{
	for (long waited = 0; waited <= limit_ms; waited += 5) {
		if (kill(pid, 0) && errno == ESRCH)
			return true;
		sleep_ms(5);
	}
	return false;
}

/* What the target said, when the test read it. */
struct progress {
	uint64_t at; /* now_ms() */
	long calls;
};

struct killed_run {
	char dir[256], capture[300], trace[300], output[300];
	long calls_before;	/* the calls made FLUSH_LAG_MS before the kill */
	uint64_t ran_before_ms; /* the target's run up to then */
};

/* Runs rearview with options (and --full-execution when full) on
 * progress, kills it after RUN_MS of the target's progress, and kills the
 * target. */
static void run_and_kill(struct killed_run *k, bool full, const char *const *options)
{
	struct progress seen[4096];
	size_t nr_seen = 0;
	char *argv[32];
	size_t a = 0;
	int out_fd, err_fd;
	pid_t rearview, target = -1;
	uint64_t first = 0, kill_at, started;
	bool ended_early = false;
	char errors[4096] = "";
	ssize_t n;

	make_test_dir(k->dir, sizeof(k->dir));
	snprintf(k->capture, sizeof(k->capture), "%s/capture", k->dir);
	snprintf(k->trace, sizeof(k->trace), "%s/decoded.fxt", k->dir);
	snprintf(k->output, sizeof(k->output), "%s/never-written.fxt", k->dir);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	if (full)
		argv[a++] = "--full-execution";
	argv[a++] = "--working-directory";
	argv[a++] = k->capture;
	for (size_t i = 0; options && options[i]; i++)
		argv[a++] = (char *)options[i];
	argv[a++] = "-o";
	argv[a++] = k->output;
	argv[a++] = "--";
	argv[a++] = (char *)build_path("tests/targets/progress");
	argv[a++] = "30000";
	argv[a] = NULL;
	rearview = start_process(argv, &out_fd, &err_fd);
	started = now_ms();
	for (;;) {
		long calls = last_calls(out_fd);
		uint64_t now = now_ms();

		if (calls >= 0 && !first)
			first = now;
		if (calls >= 0 && nr_seen < sizeof(seen) / sizeof(seen[0]))
			seen[nr_seen++] = (struct progress){ now, calls };
		if (first && now - first >= RUN_MS)
			break;
		if (now - started > 60000)
			break;
		if (waitpid(rearview, NULL, WNOHANG) == rearview) {
			ended_early = true;
			break;
		}
		sleep_ms(20);
	}
	target = ended_early ? -1 : child_of(rearview);
	kill_at = now_ms();
	/* stopped, the target holds no uprobe busy: rearview's links are
	 * released as it dies */
	if (target > 0)
		kill(target, SIGSTOP);
	if (!ended_early)
		kill(rearview, SIGKILL);
	if (!ended_early && !wait_child_exit(rearview, 20000, NULL)) {
		if (target > 0)
			kill(target, SIGKILL);
		cr_assert(wait_child_exit(rearview, 20000, NULL),
			  "rearview did not end after SIGKILL");
	}
	if (target > 0) {
		kill(target, SIGKILL);
		kill(target, SIGCONT);
		cr_assert(wait_gone(target, 20000), "the target %d did not end", (int)target);
	}
	n = pread(err_fd, errors, sizeof(errors) - 1, 0);
	errors[n > 0 ? n : 0] = '\0';
	close(out_fd);
	close(err_fd);
	cr_assert_not(ended_early, "rearview ended before it was killed:\n%s", errors);
	cr_assert_gt(first, 0, "the target never said how far it got; rearview said:\n%s", errors);
	cr_assert_gt(target, 0, "rearview's target was not found");
	k->calls_before = 0;
	k->ran_before_ms = 0;
	for (size_t i = 0; i < nr_seen; i++) {
		if (seen[i].at + FLUSH_LAG_MS > kill_at)
			break;
		k->calls_before = seen[i].calls;
		k->ran_before_ms = seen[i].at - first;
	}
	cr_assert_gt(k->calls_before, 0, "no progress %d ms before the kill", FLUSH_LAG_MS);
}

/* rearview decode DIR: the trace, and a warning that the capture was cut
 * (flushed: up to its last flush; else rebuilt from the flight recorder). */
static struct fxt_trace *decode_killed(const struct killed_run *k, bool flushed)
{
	char *argv[] = { (char *)build_path("rearview"),
			 "decode",
			 (char *)k->capture,
			 "-o",
			 (char *)k->trace,
			 NULL };
	struct proc_result *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = NULL;
	char why[256];

	cr_assert_not_null(r);
	run_process(argv, 120, r);
	cr_assert_eq(r->exit_code, 0, "rearview decode of the killed capture failed:\n%s", r->err);
	cr_assert_not_null(strstr(r->err, "was cut"),
			   "decode does not say the capture was cut:\n%s", r->err);
	cr_assert_not_null(strstr(r->err, flushed ? "up to its last flush" : "its flight recorder"),
			   "%s", r->err);
	cr_assert_eq(fxt_read_file(k->trace, &t, why, sizeof(why)), 0, "%s", why);
	free(r);
	return t;
}

Test(killed, uprobe_full_execution_keeps_the_calls_flushed, .timeout = 240)
{
	static const char *const options[] = { "--backend", "uprobe", "--functions", "tick", NULL };
	struct killed_run k;
	struct fxt_trace *t;
	size_t calls;

	require_root("killed");
	run_and_kill(&k, true, options);
	t = decode_killed(&k, true);
	calls = fxt_count_spans(t, FXT_ANY, FXT_ANY, "tick");
	cr_assert_geq(calls, (size_t)k.calls_before,
		      "the trace holds %zu calls of tick; the target had made %ld of them %d ms "
		      "before rearview was killed",
		      calls, k.calls_before, FLUSH_LAG_MS);
	fxt_trace_free(t);
	cleanup_dir(k.dir);
}

/* A sampling trace covers the target's run up to FLUSH_LAG_MS before the
 * kill, from its first span to its last. */
static void check_sampling_cover(const struct killed_run *k, const struct fxt_trace *t)
{
	uint64_t first, last;

	fxt_spans_extent(t, &first, &last);
	cr_assert_lt(first, last, "no samples in the trace");
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "tick"), 0, "no samples of tick");
	/* the target's first line came at most a poll (20 ms) after it began */
	cr_assert_geq((last - first) / 1000000 + 20, k->ran_before_ms,
		      "the trace covers %llu ms; the target had run %llu ms %d ms before "
		      "rearview was killed",
		      (unsigned long long)((last - first) / 1000000),
		      (unsigned long long)k->ran_before_ms, FLUSH_LAG_MS);
}

Test(killed, sampling_full_execution_keeps_the_time_flushed, .timeout = 240)
{
	static const char *const options[] = { "--backend", "sample", NULL };
	struct killed_run k;
	struct fxt_trace *t;

	require_root("killed");
	run_and_kill(&k, true, options);
	t = decode_killed(&k, true);
	check_sampling_cover(&k, t);
	fxt_trace_free(t);
	cleanup_dir(k.dir);
}

/* The flight recorder (64 MiB: all of a few seconds) is a file: what it held
 * when rearview was killed is decoded, with the sideband flushed. */
Test(killed, sampling_flight_recorder_keeps_what_it_held, .timeout = 240)
{
	static const char *const options[] = { "--backend", "sample", NULL };
	struct killed_run k;
	struct fxt_trace *t;
	char ring[400];

	require_root("killed");
	run_and_kill(&k, false, options);
	snprintf(ring, sizeof(ring), "%s/flight.ring", k.capture);
	cr_assert(file_exists(ring), "no flight recorder's file in the capture directory");
	t = decode_killed(&k, false);
	check_sampling_cover(&k, t);
	cr_assert_not(file_exists(ring), "the rebuilt capture left the ring's file");
	fxt_trace_free(t);
	cleanup_dir(k.dir);
}
