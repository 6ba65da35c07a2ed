/* test_leftovers.c: nothing a killed rearview left stays. For each backend
 * that runs here, rearview is SIGKILLed at ten random moments (seeded; the
 * seed is printed, and RV_LEFTOVERS_SEED repeats a run) between its start
 * and the end of writing its trace; the next rearview (`run`, or `decode`
 * every other round) removes the killed one's temporary capture directory
 * and partial trace, says so for each, and leaves nothing else touched.
 * A kill between creating an entry and writing its owner record (leftovers.h
 * says that moment is not covered: a few hundred microseconds at start)
 * leaves an entry without a record: the next run must leave that one alone,
 * and the test removes it.
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"

#define ROUNDS	    10
#define MAX_ENTRIES 16

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
	cr_assert_eq(r->exit_code, 0, "the next rearview (%s) failed:\n%s",
		     decode ? "decode" : "run", r->err);
	unlink(next);
}

/* Whether dir/name carries an owner record (leftovers.h): a capture
 * directory's owner file with its line, a partial trace's extended
 * attribute. */
static bool has_owner_record(const char *dir, const char *name)
{
	char path[PATH_MAX + NAME_MAX + 16], value[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st))
		return false;
	if (S_ISDIR(st.st_mode)) {
		FILE *f;
		bool whole;

		snprintf(path, sizeof(path), "%s/%s/owner", dir, name);
		f = fopen(path, "r");
		if (!f)
			return false;
		whole = fgets(value, sizeof(value), f) && strchr(value, '\n');
		fclose(f);
		return whole;
	}
	return getxattr(path, "user.rearview.owner", value, sizeof(value)) > 0;
}

/* An entry the killed run left without its owner record: the next run must
 * not have named or removed it; the test removes it. */
static void assert_left_alone(const char *err, const char *dir, const char *name)
{
	char path[PATH_MAX + NAME_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_null(strstr(err, path), "the next run named %s, which has no owner record:\n%s",
		       path, err);
	cr_assert_eq(lstat(path, &st), 0, "the next run removed %s, which has no owner record",
		     path);
	if (S_ISDIR(st.st_mode))
		cleanup_dir(path);
	else
		cr_assert_eq(unlink(path), 0);
}

/* Asserts that the next run's stderr says it removed dir/name, left by pid. */
static void assert_said_removed(const char *err, const char *dir, const char *name, pid_t pid)
{
	char line[PATH_MAX + 600];

	snprintf(line, sizeof(line), "removed %s/%s, left by rearview [%d], which is gone", dir,
		 name, (int)pid);
	cr_assert_not_null(strstr(err, line), "the next run did not say '%s':\n%s", line, err);
}

static void killed_runs(const char *backend)
{
	static char tmp_names[MAX_ENTRIES][NAME_MAX + 1], out_names[MAX_ENTRIES][NAME_MAX + 1];
	bool tmp_marked[MAX_ENTRIES], out_marked[MAX_ENTRIES];
	struct place p;
	struct proc_result r;
	const char *seed_text = getenv("RV_LEFTOVERS_SEED");
	unsigned seed = seed_text ? (unsigned)strtoul(seed_text, NULL, 10)
				  : (unsigned)time(NULL) ^ (unsigned)getpid();
	size_t rounds_with_leftovers = 0;
	long long began, whole_ms;
	int out_fd, err_fd;
	pid_t pid;

	require_root("leftovers");
	fprintf(stderr, "test_leftovers: --backend %s: seed %u (RV_LEFTOVERS_SEED=%u repeats it)\n",
		backend, seed, seed);
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	make_place(&p);

	/* a whole run: how long killing may wait, and a capture to decode */
	began = now_ms();
	pid = start_recording(&p, backend, true, &out_fd, &err_fd);
	finish_process(pid, out_fd, err_fd, 60, &r);
	whole_ms = now_ms() - began;
	cr_assert_eq(r.exit_code, 3, "a whole run (busy2 exits with 3):\n%s", r.err);
	end_group(pid);
	cr_assert_eq(unlink(p.trace), 0);

	for (int round = 0; round < ROUNDS; round++) {
		long delay_ms = (long)(rand_r(&seed) % (unsigned)whole_ms);
		size_t nr_tmp, nr_out, nr_partial, nr_unmarked;
		bool decode = round % 2;

		pid = start_recording(&p, backend, false, &out_fd, &err_fd);
		sleep_ms(delay_ms);
		kill(pid, SIGKILL);
		if (!wait_child_exit(pid, 10000, NULL)) {
			/* a uprobe link's release waits for the busy target */
			kill(-pid, SIGSTOP);
			if (!wait_child_exit(pid, 10000, NULL)) {
				kill(-pid, SIGKILL);
				wait_child_exit(pid, 10000, NULL);
			}
			end_group(pid);
			cr_assert_fail("--backend %s: rearview did not end within 10 s of SIGKILL "
				       "(round %d, %ld ms in)",
				       backend, round, delay_ms);
		}
		close(out_fd);
		close(err_fd);
		end_group(pid);

		nr_tmp = list(p.tmp, tmp_names);
		nr_out = list(p.out, out_names);
		nr_partial = 0;
		for (size_t i = 0; i < nr_out; i++)
			nr_partial += strcmp(out_names[i], "t.fxt") != 0;
		for (size_t i = 0; i < nr_tmp; i++)
			tmp_marked[i] = has_owner_record(p.tmp, tmp_names[i]);
		for (size_t i = 0; i < nr_out; i++)
			out_marked[i] = has_owner_record(p.out, out_names[i]);
		next_run(&p, decode, &r);
		nr_unmarked = 0;
		for (size_t i = 0; i < nr_tmp; i++) {
			if (tmp_marked[i]) {
				assert_said_removed(r.err, p.tmp, tmp_names[i], pid);
			} else {
				assert_left_alone(r.err, p.tmp, tmp_names[i]);
				nr_unmarked++;
			}
		}
		for (size_t i = 0; i < nr_out; i++) {
			if (!strcmp(out_names[i], "t.fxt")) /* written whole before the kill */
				continue;
			if (out_marked[i]) {
				assert_said_removed(r.err, p.out, out_names[i], pid);
			} else {
				assert_left_alone(r.err, p.out, out_names[i]);
				nr_unmarked++;
			}
		}
		cr_assert_eq(list(p.tmp, tmp_names), 0,
			     "--backend %s, round %d (%ld ms in): a capture is left in %s", backend,
			     round, delay_ms, p.tmp);
		nr_out = list(p.out, out_names);
		cr_assert(nr_out == 0 || (nr_out == 1 && !strcmp(out_names[0], "t.fxt")),
			  "--backend %s, round %d (%ld ms in): %s is left in %s", backend, round,
			  delay_ms, out_names[0], p.out);
		unlink(p.trace);
		if (nr_tmp + nr_partial > nr_unmarked)
			rounds_with_leftovers++;
		fprintf(stderr,
			"test_leftovers: --backend %s, round %d: killed %ld ms in (of %lld), "
			"%zu left in TMPDIR, %zu partial traces, %zu of them without an owner "
			"record (killed before it was written; left alone)\n",
			backend, round, delay_ms, whole_ms, nr_tmp, nr_partial, nr_unmarked);
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
