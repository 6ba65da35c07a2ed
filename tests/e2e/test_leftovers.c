/* test_leftovers.c: nothing a killed rearview left stays. For each backend
 * that runs here, rearview is SIGKILLed at ten random moments (seeded; the
 * seed is printed, and RV_LEFTOVERS_SEED repeats a run) between its start
 * and the end of writing its trace, and many more times in its first 8 ms,
 * where it makes its temporary capture directory and its partial trace; the
 * next rearview (`run`, or `decode` every other round) removes every entry
 * the killed one left, says so for each, and leaves nothing else touched.
 *
 * A SIGKILLed recorder may hang in the kernel while its uprobe links are
 * released and a traced thread is busy: every wait is bounded, and a
 * rearview that does not end is freed by stopping its target (SIGSTOP)
 * before anything else. This test is the targets' subreaper, so the target
 * a killed rearview leaves is killed and reaped here, not left running. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"

#define ROUNDS	     10
#define EARLY_ROUNDS 90
#define EARLY_MS     8
#define MAX_ENTRIES  16

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Ends what is left of a killed rearview's process group (its target) and
 * reaps whatever came to us as the subreaper. */
static void end_group(pid_t group)
{
	kill(-group, SIGCONT);
	kill(-group, SIGKILL);
	for (long waited = 0; waited < 10000; waited += 5) {
		pid_t got = waitpid(-1, NULL, WNOHANG);

		if (got < 0 && errno == ECHILD)
			return;
		if (got == 0)
			sleep_ms(5);
	}
	cr_assert_fail("the killed rearview's target did not end");
}

/* The names in dir, "." and ".." aside. */
static size_t list(const char *dir, char names[][NAME_MAX + 1])
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		cr_assert_lt(n, MAX_ENTRIES, "too much in %s", dir);
		snprintf(names[n++], NAME_MAX + 1, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

struct place {
	char dir[PATH_MAX];
	char tmp[PATH_MAX + 16]; /* TMPDIR: the temporary captures */
	char out[PATH_MAX + 16]; /* the traces */
	char trace[PATH_MAX + 32];
	char kept[PATH_MAX + 32]; /* a capture to decode */
};

/* A test's directory with tmp/ (made TMPDIR) and out/ in it. */
static void make_place(struct place *p)
{
	make_test_dir(p->dir, sizeof(p->dir));
	snprintf(p->tmp, sizeof(p->tmp), "%s/tmp", p->dir);
	snprintf(p->out, sizeof(p->out), "%s/out", p->dir);
	snprintf(p->trace, sizeof(p->trace), "%s/t.fxt", p->out);
	snprintf(p->kept, sizeof(p->kept), "%s/kept", p->dir);
	cr_assert_eq(mkdir(p->tmp, 0700), 0);
	cr_assert_eq(mkdir(p->out, 0700), 0);
	setenv("TMPDIR", p->tmp, 1);
}

/* `rearview run --backend BACKEND -o out/t.fxt -- busy2 exit-after 300`
 * (kept: with --working-directory), as a process of its own group. */
static pid_t start_recording(const struct place *p, const char *backend, bool kept, int *out_fd,
			     int *err_fd)
{
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 (char *)backend,
			 "-o",
			 (char *)p->trace,
			 kept ? "--working-directory" : "--",
			 kept ? (char *)p->kept : (char *)built_target("busy2"),
			 kept ? "--" : "exit-after",
			 kept ? (char *)built_target("busy2") : "300",
			 kept ? "exit-after" : NULL,
			 "300",
			 NULL };

	return start_process(argv, out_fd, err_fd);
}

/* The run after a killed one: `run --backend sample -- /bin/true` or
 * `decode KEPT`, writing out/next.fxt. */
static void next_run(const struct place *p, bool decode, struct proc_result *r)
{
	char next[PATH_MAX + 32];
	char *run_argv[] = { (char *)build_path("rearview"),
			     "run",
			     "--backend",
			     "sample",
			     "-o",
			     next,
			     "--",
			     "/bin/true",
			     NULL };
	char *decode_argv[] = {
		(char *)build_path("rearview"), "decode", (char *)p->kept, "-o", next, NULL
	};

	snprintf(next, sizeof(next), "%s/next.fxt", p->out);
	run_process(decode ? decode_argv : run_argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "the next rearview (%s) failed (%d%s):\n%s",
		     decode ? "decode" : "run", r->exit_code, r->timed_out ? ", timed out" : "",
		     r->err);
	unlink(next);
}

/* Asserts that the next run's stderr says it removed dir/name, left by pid
 * (killed when). */
static void assert_said_removed(const char *err, const char *dir, const char *name, pid_t pid,
				const char *when)
{
	char line[PATH_MAX + 600];

	snprintf(line, sizeof(line), "removed %s/%s, left by rearview [%d], which is gone", dir,
		 name, (int)pid);
	cr_assert_not_null(strstr(err, line), "killed %s: the next run did not say '%s':\n%s", when,
			   line, err);
}

static void sleep_us(long us)
{
	struct timespec pause = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&pause, NULL);
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* An inotify descriptor told of each entry made in (or renamed into) dir. */
static int watch(const char *dir)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	cr_assert_geq(fd, 0, "inotify: %s", strerror(errno));
	cr_assert_geq(inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO), 0, "%s: %s", dir,
		      strerror(errno));
	return fd;
}

/* Waits (up to limit_ms) until the watched directory gets an entry:
 * spinning, not sleeping in poll, so that the kill can follow within
 * microseconds. */
static bool wait_entry(int fd, int limit_ms)
{
	char events[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	long long until = now_us() + (long long)limit_ms * 1000;

	while (now_us() < until)
		if (read(fd, events, sizeof(events)) > 0)
			return true;
	return false;
}

/* Waits us microseconds: by spinning up to 1 ms (nanosleep's slack is about
 * 50 us), by sleeping beyond. */
static void wait_us(long us)
{
	long long until = now_us() + us;

	if (us > 1000) {
		sleep_us(us);
		return;
	}
	while (now_us() < until)
		;
}

/* When a round's rearview is killed: delay_us after it starts or, with
 * watched set, delay_us after the first entry appears in that directory
 * (its temporary capture directory in TMPDIR, its partial trace next to
 * the trace), when its owner record is being made. */
struct kill_at {
	const char *watched;
	long delay_us;
};

/* What one round found the killed run had left. */
struct left {
	size_t captures; /* in TMPDIR, staging directories included */
	size_t staging;	 /* rearview-new.* of them: killed before their final name */
	size_t partial;	 /* partial traces */
};

/* One round: rearview started, SIGKILLed at `at`, then the next run (decode
 * or run): it must remove every entry the killed one left in TMPDIR and
 * next to the trace, and say so for each. */
static struct left killed_round(const struct place *p, const char *backend, bool decode,
				struct kill_at at, const char *when)
{
	static char tmp_names[MAX_ENTRIES][NAME_MAX + 1], out_names[MAX_ENTRIES][NAME_MAX + 1];
	struct left left = { 0 };
	struct proc_result r;
	size_t nr_tmp, nr_out;
	int out_fd, err_fd, watch_fd = at.watched ? watch(at.watched) : -1;
	bool appeared = true;
	pid_t pid;

	pid = start_recording(p, backend, false, &out_fd, &err_fd);
	if (watch_fd >= 0) {
		appeared = wait_entry(watch_fd, 10000);
		close(watch_fd);
	}
	wait_us(at.delay_us);
	kill(pid, SIGKILL);
	if (!wait_child_exit(pid, 10000, NULL)) {
		/* a uprobe link's release waits for the busy target */
		kill(-pid, SIGSTOP);
		if (!wait_child_exit(pid, 10000, NULL)) {
			kill(-pid, SIGKILL);
			wait_child_exit(pid, 10000, NULL);
		}
		end_group(pid);
		cr_assert_fail("--backend %s: rearview did not end within 10 s of SIGKILL (%s)",
			       backend, when);
	}
	close(out_fd);
	close(err_fd);
	end_group(pid);
	cr_assert(appeared, "--backend %s, %s: nothing appeared in %s within 10 s", backend, when,
		  at.watched);

	nr_tmp = list(p->tmp, tmp_names);
	nr_out = list(p->out, out_names);
	next_run(p, decode, &r);
	for (size_t i = 0; i < nr_tmp; i++) {
		assert_said_removed(r.err, p->tmp, tmp_names[i], pid, when);
		left.captures++;
		left.staging += !strncmp(tmp_names[i], "rearview-new.", 13);
	}
	for (size_t i = 0; i < nr_out; i++) {
		if (!strcmp(out_names[i], "t.fxt")) /* written whole before the kill */
			continue;
		assert_said_removed(r.err, p->out, out_names[i], pid, when);
		left.partial++;
	}
	cr_assert_eq(list(p->tmp, tmp_names), 0, "--backend %s, %s: %s is left in %s", backend,
		     when, tmp_names[0], p->tmp);
	nr_out = list(p->out, out_names);
	cr_assert(nr_out == 0 || (nr_out == 1 && !strcmp(out_names[0], "t.fxt")),
		  "--backend %s, %s: %s is left in %s", backend, when, out_names[0], p->out);
	unlink(p->trace);
	return left;
}

static unsigned leftovers_seed(const char *what)
{
	const char *seed_text = getenv("RV_LEFTOVERS_SEED");
	unsigned seed = seed_text ? (unsigned)strtoul(seed_text, NULL, 10)
				  : (unsigned)time(NULL) ^ (unsigned)getpid();

	fprintf(stderr, "test_leftovers: %s: seed %u (RV_LEFTOVERS_SEED=%u repeats it)\n", what,
		seed, seed);
	return seed;
}

/* The place, a capture kept to decode, and a whole run's length (ms) and
 * how long after its start its partial trace appeared (us). */
static long long prepare(struct place *p, const char *backend, long long *first_entry_us)
{
	struct proc_result r;
	long long began, whole_ms;
	int out_fd, err_fd, watch_fd;
	pid_t pid;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	make_place(p);
	watch_fd = watch(p->out);
	began = now_us();
	pid = start_recording(p, backend, true, &out_fd, &err_fd);
	cr_assert(wait_entry(watch_fd, 10000), "no partial trace appeared in %s", p->out);
	*first_entry_us = now_us() - began;
	close(watch_fd);
	finish_process(pid, out_fd, err_fd, 60, &r);
	whole_ms = (now_us() - began) / 1000;
	cr_assert_eq(r.exit_code, 3, "a whole run (busy2 exits with 3):\n%s", r.err);
	end_group(pid);
	cr_assert_eq(unlink(p->trace), 0);
	return whole_ms;
}

static void killed_runs(const char *backend)
{
	char what[64];
	unsigned seed;
	struct place p;
	size_t rounds_with_leftovers = 0;
	long long whole_ms, first_entry_us;

	require_root("leftovers");
	snprintf(what, sizeof(what), "--backend %s", backend);
	seed = leftovers_seed(what);
	whole_ms = prepare(&p, backend, &first_entry_us);
	for (int round = 0; round < ROUNDS; round++) {
		long delay_ms = (long)(rand_r(&seed) % (unsigned)whole_ms);
		char when[128];
		struct left left;

		snprintf(when, sizeof(when), "round %d (%ld ms in, of %lld)", round, delay_ms,
			 whole_ms);
		left = killed_round(&p, backend, round % 2,
				    (struct kill_at){ .delay_us = delay_ms * 1000 }, when);
		rounds_with_leftovers += left.captures + left.partial > 0;
		fprintf(stderr,
			"test_leftovers: --backend %s, %s: %zu left in TMPDIR (%zu staging), %zu "
			"partial traces, all removed\n",
			backend, when, left.captures, left.staging, left.partial);
	}
	cr_assert_geq(rounds_with_leftovers, 1, "some kill left something to remove");
	unsetenv("TMPDIR");
	cleanup_dir(p.dir);
}

Test(leftovers, a_killed_sampling_recording_leaves_nothing_after_the_next_run, .timeout = 120)
{
	killed_runs("sample");
}

Test(leftovers, a_killed_uprobe_recording_leaves_nothing_after_the_next_run, .timeout = 120)
{
	killed_runs("uprobe");
}

/* Kills where rearview makes its temporary capture directory and its
 * partial trace with their owner records, each round one of three ways: at
 * a moment of its first EARLY_MS ms (or, on a machine so busy that its
 * partial trace came later in the first whole run, of twice that time);
 * 0-200 us after its partial trace appears; 0-200 us after its capture
 * directory appears (inotify). Whatever the kill leaves, the next run
 * removes. A rearview that made an entry and then wrote its record with
 * another system call left one without it within the first 15 rounds here,
 * in each of six runs (killed a few hundred microseconds after the entry
 * appeared). */
Test(leftovers, a_kill_in_the_first_8_ms_leaves_nothing_after_the_next_run, .timeout = 300)
{
	struct place p;
	unsigned seed;
	size_t rounds_with_leftovers = 0, staging = 0;
	long long first_entry_us;
	long range_us;

	require_root("leftovers");
	seed = leftovers_seed("the first 8 ms");
	prepare(&p, "sample", &first_entry_us);
	range_us =
		first_entry_us * 2 > EARLY_MS * 1000 ? (long)first_entry_us * 2 : EARLY_MS * 1000;
	for (int round = 0; round < EARLY_ROUNDS; round++) {
		static const char *const ways[] = { "in", "after the partial trace appeared,",
						    "after the capture directory appeared," };
		int way = round % 3;
		struct kill_at at = {
			.watched = way == 1   ? p.out
				   : way == 2 ? p.tmp
					      : NULL,
			.delay_us = (long)(rand_r(&seed) % (way ? 200u : (unsigned)range_us)),
		};
		char when[160];
		struct left left;

		snprintf(when, sizeof(when), "early round %d (%ld us %s)", round, at.delay_us,
			 ways[way]);
		left = killed_round(&p, "sample", (round / 3) % 2, at, when);
		cr_assert(!at.watched || left.captures + left.partial > 0,
			  "%s: the entry that appeared is gone", when);
		rounds_with_leftovers += left.captures + left.partial > 0;
		staging += left.staging;
	}
	fprintf(stderr,
		"test_leftovers: kills in the first %ld us (the first whole run's partial trace "
		"came at %lld us) and right after an entry appeared: %d kills, %zu left "
		"something (%zu staging directories), all removed\n",
		range_us, first_entry_us, EARLY_ROUNDS, rounds_with_leftovers, staging);
	unsetenv("TMPDIR");
	cleanup_dir(p.dir);
}

/* A stop signal during `decode` ends it as before (by the signal), and its
 * partial trace goes with it: at random moments (seeded, printed) over a
 * decode's length. */
Test(leftovers, a_stop_signal_during_decode_leaves_no_partial_trace, .timeout = 120)
{
	static char names[MAX_ENTRIES][NAME_MAX + 1];
	static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
	const char *seed_text = getenv("RV_LEFTOVERS_SEED");
	unsigned seed = seed_text ? (unsigned)strtoul(seed_text, NULL, 10)
				  : (unsigned)time(NULL) ^ (unsigned)getpid();
	size_t interrupted = 0;
	struct proc_result r;
	long long began, whole_ms;
	struct place p;
	int out_fd, err_fd;
	pid_t pid;

	require_root("leftovers");
	fprintf(stderr, "test_leftovers: decode: seed %u (RV_LEFTOVERS_SEED=%u repeats it)\n", seed,
		seed);
	make_place(&p);
	pid = start_recording(&p, "sample", true, &out_fd, &err_fd);
	finish_process(pid, out_fd, err_fd, 60, &r);
	cr_assert_eq(r.exit_code, 3, "the capture to decode:\n%s", r.err);

	char *argv[] = { (char *)build_path("rearview"), "decode", p.kept, "-o", p.trace, NULL };

	began = now_ms();
	run_process(argv, 60, &r);
	whole_ms = now_ms() - began;
	cr_assert_eq(r.exit_code, 0, "a whole decode:\n%s", r.err);
	for (int round = 0; round < ROUNDS; round++) {
		long delay_ms = (long)(rand_r(&seed) % (unsigned)whole_ms);
		int sig = signals[round % 3];

		cr_assert_eq(unlink(p.trace), 0);
		pid = start_process(argv, &out_fd, &err_fd);
		sleep_ms(delay_ms);
		kill(pid, sig);
		finish_process(pid, out_fd, err_fd, 30, &r);
		cr_assert(!r.timed_out, "decode did not end after %s", strsignal(sig));
		cr_assert(r.exit_code == 0 || r.exit_code == 128 + sig,
			  "decode ends by the signal or had finished (%d):\n%s", r.exit_code,
			  r.err);
		interrupted += r.exit_code == 128 + sig;
		for (size_t i = 0, n = list(p.out, names); i < n; i++)
			cr_assert_str_eq(names[i], "t.fxt",
					 "%s %ld ms into decode (of %lld) left %s/%s",
					 strsignal(sig), delay_ms, whole_ms, p.out, names[i]);
		if (r.exit_code == 0)
			cr_assert(file_exists(p.trace));
		else
			write_file(p.trace, "", 0);
	}
	cr_assert_geq(interrupted, 1, "some signal came before the end");
	unsetenv("TMPDIR");
	cleanup_dir(p.dir);
}
