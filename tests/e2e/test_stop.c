/* test_stop.c: stopping is bounded. With every function probed (main
 * included) on a target that keeps calling a function on two threads, a
 * SIGINT or SIGTERM to rearview ends it within 2 s with the trace written
 * and ending at the signal, for `run` and `attach`; an attached target runs
 * on, untraced, with its code byte-identical and no link of rearview's left;
 * a second Ctrl-C ends rearview at once.
 *
 * Releasing a uprobe link can block in the kernel beyond SIGKILL while the
 * target is busy: every wait here is bounded, and a rearview that does not
 * end is freed by stopping its target (SIGSTOP) before the test fails. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "record/hold.h"
#include "test_files.h"

#define ROUNDS 5
/* After the signal, a written trace may hold records made before rearview
 * read it: the end of the trace is the signal give or take this. */
#define SIGNAL_SLACK_NS (100ull * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The bound on signal-to-exit: 2 s, 3 s under the sanitizers' build. */
static uint64_t stop_limit_ns(void)
{
	return strstr(build_dir(), "asan") ? 3000000000ull : 2000000000ull;
}

/* A rearview that did not end: stop its target, which frees a release the
 * kernel holds, and make sure both are gone before the test fails. */
static void recover(pid_t rearview, pid_t target)
{
	int status;

	if (target > 0)
		kill(target, SIGSTOP);
	if (!wait_child_exit(rearview, 10000, &status)) {
		kill(rearview, SIGKILL);
		wait_child_exit(rearview, 10000, &status);
	}
	if (target > 0)
		kill(target, SIGCONT);
}

/* The busy target, its stdout on a pipe, once it said "PID ready";
 * exit_after: its "exit-after MS" argument, or NULL to run until killed. */
static pid_t start_busy_for(int *pipe_read, const char *exit_after)
{
	char line[64];
	int fds[2];
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* never outlives a test that failed */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		default_stop_signals();
		dup2(fds[1], 1);
		close(fds[0]);
		if (exit_after)
			execl(build_path("tests/targets/busy2"), "busy2", "exit-after", exit_after,
			      (char *)NULL);
		else
			execl(build_path("tests/targets/busy2"), "busy2", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	cr_assert(read_line_timeout(fds[0], line, sizeof(line), 10), "busy2 did not start");
	cr_assert(strstr(line, "ready"), "busy2 said '%s'", line);
	*pipe_read = fds[0];
	return pid;
}

static pid_t start_busy(int *pipe_read)
{
	return start_busy_for(pipe_read, NULL);
}

/* The ids of the BPF links process pid holds (from its fdinfo). */
static size_t link_ids_of(pid_t pid, unsigned *ids, size_t max)
{
	char path[64];
	struct dirent *de;
	size_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		char file[512], line[256];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "link_id: %u", &ids[n]) == 1) {
				n++;
				break;
			}
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* Asserts that none of the links is still in the kernel's list. */
static void assert_links_gone(const unsigned *ids, size_t n)
{
	int status;
	char *list = run_command(&status, NULL, "bpftool link list -j 2>&1");

	cr_assert_eq(status, 0, "bpftool link list failed: %s", list);
	for (size_t i = 0; i < n; i++) {
		char needle[32];

		snprintf(needle, sizeof(needle), "\"id\":%u,", ids[i]);
		cr_assert_null(strstr(list, needle), "link %u of rearview's is still there: %s",
			       ids[i], list);
	}
	free(list);
}

static void assert_no_tracefs_uprobe(const char *exe)
{
	const char *files[] = { "/sys/kernel/tracing/uprobe_events",
				"/sys/kernel/debug/tracing/uprobe_events" };

	for (size_t i = 0; i < 2; i++) {
		size_t size = 0;
		char *text = access(files[i], R_OK) ? NULL : read_whole(files[i], &size);

		if (text)
			cr_assert_null(strstr(text, exe), "a uprobe on %s is left in %s:\n%s", exe,
				       files[i], text);
		free(text);
	}
}

/* Compares the target's executable code in memory with its file: no probe
 * left behind (a uprobe shows as an int3 in the process's copy). */
static void assert_code_identical(pid_t pid)
{
	char maps_path[64], mem_path[64], exe[4096], line[4608];
	size_t compared = 0;
	ssize_t len;
	FILE *maps;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/exe", (int)pid);
	len = readlink(maps_path, exe, sizeof(exe) - 1);
	cr_assert_gt(len, 0);
	exe[len] = '\0';
	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", (int)pid);
	maps = fopen(maps_path, "re");
	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, offset;
		char perms[8], path[4096] = "";
		FILE *mem, *file;
		char *a, *b;
		size_t size;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perms, &offset,
			   path) < 4 ||
		    strcmp(path, exe) || perms[2] != 'x')
			continue;
		size = (size_t)(end - start);
		a = malloc(size);
		b = calloc(1, size);
		mem = fopen(mem_path, "re");
		file = fopen(exe, "re");
		cr_assert(a && b && mem && file);
		cr_assert_eq(fseeko(mem, (off_t)start, SEEK_SET), 0);
		cr_assert_eq(fread(a, 1, size, mem), size, "cannot read the target's code");
		cr_assert_eq(fseeko(file, (off_t)offset, SEEK_SET), 0);
		/* the mapping's last page may reach past the file's end: zeros */
		if (fread(b, 1, size, file) == 0)
			cr_assert_fail("cannot read %s", exe);
		for (size_t i = 0; i < size; i++)
			cr_assert_eq(a[i], b[i],
				     "the target's code differs from %s at 0x%llx (0x%02x, file "
				     "0x%02x): a probe was left behind",
				     exe, start + i, (unsigned char)a[i], (unsigned char)b[i]);
		compared += size;
		fclose(mem);
		fclose(file);
		free(a);
		free(b);
	}
	fclose(maps);
	cr_assert_gt(compared, 0, "no code mapping of %s found in process %d", exe, (int)pid);
	assert_no_tracefs_uprobe(exe);
}

static void assert_running_untraced(pid_t pid)
{
	int tracer, status;
	char state = wait_until_running_untraced(pid, &tracer, 5);

	cr_assert(state == 'R' || state == 'S', "the target is in state %c", state);
	cr_assert_eq(tracer, 0, "the target is still traced by %d", tracer);
	cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the target exited");
}

/* What a process wrote so far to the file fd refers to (an output file of
 * start_process), as a string in buf. */
static void read_output(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

/* Waits up to timeout_s for needle in what process pid wrote to fd (an
 * output file of start_process); true when it came. *absent_ns: the last time
 * it was not there yet, so that what followed it came after that time
 * however late this (on a busy machine) saw it. */
static bool wait_for_note(pid_t pid, int fd, const char *needle, int timeout_s, uint64_t *absent_ns)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;
	char text[8192];

	for (;;) {
		uint64_t before = now_ns();

		read_output(fd, text, sizeof(text));
		if (strstr(text, needle))
			return true;
		*absent_ns = before;
		if (before > deadline || waitpid(pid, NULL, WNOHANG) == pid)
			return false;
		sleep_ms(2);
	}
}

/* Starts `rearview attach --backend uprobe --multi-thread [-v] -p TARGET -o
 * out` and waits until it records; *ids gets the BPF links it then holds
 * (up to max), *armed_ns a time before it began to record (see
 * wait_for_note). Fails the test, recovering both, when it does not start. */
static pid_t start_attach(pid_t target, const char *out, bool verbose, int *out_fd, int *err_fd,
			  unsigned *ids, size_t max, size_t *nr_ids, uint64_t *armed_ns)
{
	char pidtext[32];
	char *argv[12];
	size_t a = 0;
	pid_t rearview;

	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "attach";
	argv[a++] = "--backend";
	argv[a++] = "uprobe";
	argv[a++] = "--multi-thread";
	if (verbose)
		argv[a++] = "-v";
	argv[a++] = "-p";
	argv[a++] = pidtext;
	argv[a++] = "-o";
	argv[a++] = (char *)out;
	argv[a] = NULL;
	rearview = start_process(argv, out_fd, err_fd);
	if (!wait_for_note(rearview, *err_fd, "functions in", 30, armed_ns)) {
		recover(rearview, target);
		cr_assert_fail("rearview attach did not start recording");
	}
	*nr_ids = link_ids_of(rearview, ids, max);
	return rearview;
}

/* The trace is there, has the busy function's calls, and ends by the
 * signal (with the slack above). The trace's times start at its first
 * record, which came after the probes were armed, right after the note that
 * said they were attached, which was not there yet at seen_ns: its span is
 * at most the time from there to the signal. */
static void assert_trace_ends_by(const char *path, uint64_t seen_ns, uint64_t signal_ns,
				 pid_t target)
{
	struct fxt_trace *t = NULL;
	uint64_t first = UINT64_MAX, end = 0;
	char err[512];

	cr_assert_eq(fxt_read_file(path, &t, err, sizeof(err)), 0, "%s: %s", path, err);
	cr_assert_gt(fxt_count_spans(t, (uint64_t)target, FXT_ANY, "spin_step"), 0,
		     "no spin_step calls in the trace");
	for (size_t i = 0; i < t->nr_spans; i++) {
		first = t->spans[i].begin_ns < first ? t->spans[i].begin_ns : first;
		end = t->spans[i].end_ns > end ? t->spans[i].end_ns : end;
	}
	cr_assert_leq(end - first, signal_ns - seen_ns + SIGNAL_SLACK_NS,
		      "the trace covers %.3f s, %.3f s more than from the start to the signal: "
		      "recording went on",
		      (double)(end - first) / 1e9,
		      ((double)(end - first) - (double)(signal_ns - seen_ns)) / 1e9);
	fxt_trace_free(t);
}

/* Sends sig to rearview and waits, bounded, for it to end; returns the
 * seconds from the signal to its exit and fills *status. */
static double signal_and_wait(pid_t rearview, pid_t target, int sig, uint64_t *signal_ns,
			      int *status)
{
	*signal_ns = now_ns();
	kill(rearview, sig);
	if (!wait_child_exit(rearview, 10000, status)) {
		recover(rearview, target);
		cr_assert_fail("rearview did not end within 10 s of %s", strsignal(sig));
	}
	return (double)(now_ns() - *signal_ns) / 1e9;
}

static void attach_rounds(int sig)
{
	char dir[64], out[128];
	int pipe_read;
	pid_t target = start_busy(&pipe_read);
	double worst = 0;

	make_test_dir(dir, sizeof(dir));
	for (int round = 0; round < ROUNDS; round++) {
		unsigned ids[64];
		size_t nr_ids;
		uint64_t seen_ns, signal_ns;
		int out_fd, err_fd, status;
		char errtext[4096];
		double took;
		pid_t rearview;

		snprintf(out, sizeof(out), "%s/attach-%d.fxt", dir, round);
		rearview = start_attach(target, out, true, &out_fd, &err_fd, ids, 64, &nr_ids,
					&seen_ns);
		cr_assert_gt(nr_ids, 0, "rearview holds no BPF link while recording");
		cr_assert(wait_for_cpu(target, 150, 10), "the target did not run");
		took = signal_and_wait(rearview, target, sig, &signal_ns, &status);
		read_output(err_fd, errtext, sizeof(errtext));
		close(out_fd);
		close(err_fd);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "round %d: status 0x%x:\n%s", round, status, errtext);
		cr_assert_lt(took * 1e9, (double)stop_limit_ns(),
			     "round %d: rearview took %.3f s to end after %s:\n%s", round, took,
			     strsignal(sig), errtext);
		worst = took > worst ? took : worst;
		assert_trace_ends_by(out, seen_ns, signal_ns, target);
		assert_links_gone(ids, nr_ids);
		assert_running_untraced(target);
		assert_code_identical(target);
	}
	cr_log_info("attach, %s: slowest end %.3f s after the signal", strsignal(sig), worst);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(pipe_read);
	cleanup_dir(dir);
}

static void run_rounds(int sig)
{
	char dir[64], out[128];
	double worst = 0;

	make_test_dir(dir, sizeof(dir));
	for (int round = 0; round < ROUNDS; round++) {
		unsigned ids[64];
		size_t nr_ids;
		uint64_t seen_ns, signal_ns;
		int out_fd, err_fd, status;
		char errtext[4096], line[256] = "";
		double took;
		pid_t rearview, target = 0;

		snprintf(out, sizeof(out), "%s/run-%d.fxt", dir, round);
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "--backend",
				 "uprobe",
				 "--multi-thread",
				 "-o",
				 out,
				 "--",
				 (char *)build_path("tests/targets/busy2"),
				 NULL };
		rearview = start_process(argv, &out_fd, &err_fd);
		/* The trace's first record comes after the note that the probes
		 * are attached (they are armed right after it), and before the
		 * program's "ready" line, which may come long after (its
		 * start-up runs with every function probed): the note is the
		 * start the trace is measured from. */
		if (!wait_for_note(rearview, err_fd, "functions in", 30, &seen_ns)) {
			recover(rearview, 0);
			cr_assert_fail("rearview run did not start recording");
		}
		if (wait_for_output(rearview, out_fd, "ready", 30) != 1) {
			recover(rearview, 0);
			cr_assert_fail("the target did not start under rearview run");
		}
		read_output(out_fd, line, sizeof(line));
		target = (pid_t)atoi(line);
		cr_assert_gt(target, 0, "no pid in '%s'", line);
		nr_ids = link_ids_of(rearview, ids, 64);
		cr_assert_gt(nr_ids, 0, "rearview holds no BPF link while recording");
		cr_assert(wait_for_cpu(target, 150, 10), "the target did not run");
		took = signal_and_wait(rearview, target, sig, &signal_ns, &status);
		read_output(err_fd, errtext, sizeof(errtext));
		close(out_fd);
		close(err_fd);
		/* only rearview was signalled: it passes the signal on, and
		 * exits as the program did */
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig,
			  "round %d: status 0x%x:\n%s", round, status, errtext);
		/* it ended on the signal passed on: nothing said of waiting */
		cr_assert_null(strstr(errtext, "waiting for"), "round %d:\n%s", round, errtext);
		cr_assert_lt(took * 1e9, (double)stop_limit_ns(),
			     "round %d: rearview took %.3f s to end after %s:\n%s", round, took,
			     strsignal(sig), errtext);
		worst = took > worst ? took : worst;
		cr_assert(kill(target, 0) && errno == ESRCH, "the program is still there");
		assert_trace_ends_by(out, seen_ns, signal_ns, target);
		assert_links_gone(ids, nr_ids);
	}
	cr_log_info("run, %s: slowest end %.3f s after the signal", strsignal(sig), worst);
	cleanup_dir(dir);
}

Test(stop, attach_busy_sigint, .timeout = 120)
{
	require_root("stop");
	attach_rounds(SIGINT);
}

Test(stop, attach_busy_sigterm, .timeout = 120)
{
	require_root("stop");
	attach_rounds(SIGTERM);
}

Test(stop, run_busy_sigint, .timeout = 120)
{
	require_root("stop");
	run_rounds(SIGINT);
}

Test(stop, run_busy_sigterm, .timeout = 120)
{
	require_root("stop");
	run_rounds(SIGTERM);
}

/* A second Ctrl-C while rearview removes its probes or writes the trace
 * ends it within a second, without a trace or a file of it, the target
 * running on with no probe. */
Test(stop, second_ctrl_c_ends_at_once, .timeout = 120)
{
	char dir[64], out[128];
	int pipe_read, out_fd, err_fd, status;
	pid_t target = start_busy(&pipe_read), rearview;
	unsigned ids[64];
	size_t nr_ids;
	char errtext[4096];
	uint64_t second_ns, armed_ns;

	require_root("stop");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/second.fxt", dir);
	rearview = start_attach(target, out, true, &out_fd, &err_fd, ids, 64, &nr_ids, &armed_ns);
	cr_assert(wait_for_cpu(target, 300, 10), "the target did not run");
	kill(rearview, SIGINT);
	/* the second once the first has been read, as a user's would come */
	if (wait_for_output(rearview, err_fd, "stopping the recording", 5) != 1) {
		recover(rearview, target);
		cr_assert_fail("rearview did not stop on the first Ctrl-C");
	}
	second_ns = now_ns();
	kill(rearview, SIGINT);
	if (!wait_child_exit(rearview, 10000, &status)) {
		recover(rearview, target);
		cr_assert_fail("rearview did not end within 10 s of a second Ctrl-C");
	}
	read_output(err_fd, errtext, sizeof(errtext));
	cr_assert_lt(now_ns() - second_ns, 1000000000ull,
		     "rearview took %.3f s to end after the second Ctrl-C:\n%s",
		     (double)(now_ns() - second_ns) / 1e9, errtext);
	/* it came while the probes were removed or the trace was written */
	cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "exit 0:\n%s", errtext);
	cr_assert(strstr(errtext, "again"), "no word of the second Ctrl-C:\n%s", errtext);
	cr_assert(!file_exists(out), "a trace was written after all");
	cr_assert_eq(dir_entries(dir), 0, "files left in %s", dir);
	close(out_fd);
	close(err_fd);
	assert_links_gone(ids, nr_ids);
	assert_running_untraced(target);
	assert_code_identical(target);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(pipe_read);
	cleanup_dir(dir);
}

/* Every thread of process pid is stopped ('T' or 't'). */
static bool all_threads_still(pid_t pid, size_t *threads)
{
	char path[64];
	struct dirent *de;
	bool still = true;
	DIR *dir;

	*threads = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	cr_assert_not_null(dir);
	while ((de = readdir(dir))) {
		char stat_path[384], line[512], *paren;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(stat_path, sizeof(stat_path), "%s/%s/stat", path, de->d_name);
		f = fopen(stat_path, "re");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (paren = strrchr(line, ')'))) {
			(*threads)++;
			still = still && (paren[2] == 'T' || paren[2] == 't');
		}
		fclose(f);
	}
	closedir(dir);
	return still;
}

/* Holds busy2 as `attach` would (ptrace) and as `run` would (SIGSTOP): every
 * thread still while held; afterwards running, untraced, and for ptrace with
 * nothing its parent (this test, waiting with WUNTRACED | WCONTINUED) could
 * see. */
static void check_hold(bool spawned)
{
	struct rv_target t;
	struct rv_hold hold;
	int pipe_read, status;
	pid_t target = start_busy(&pipe_read);
	long long cpu;
	size_t threads;

	memset(&t, 0, sizeof(t));
	t.pids[0] = target;
	t.nr_pids = 1;
	t.spawned = spawned;
	cr_assert(wait_for_cpu(target, 50, 10), "the target did not run");
	cr_assert_eq(rv_hold_begin(&hold, &t, 2000), 1, "the target was not held");
	cr_assert(all_threads_still(target, &threads), "a thread of the target still runs");
	cr_assert_eq(threads, 2, "busy2 has %zu threads", threads);
	cpu = proc_cpu_ms(target);
	sleep_ms(100);
	cr_assert_leq(proc_cpu_ms(target) - cpu, 1, "the held target used CPU time");
	rv_hold_end(&hold);
	assert_running_untraced(target);
	cr_assert(wait_for_cpu(target, 50, 10), "the target did not run on");
	if (!spawned)
		cr_assert_eq(waitpid(target, &status, WNOHANG | WUNTRACED | WCONTINUED), 0,
			     "the parent saw the hold: status 0x%x", status);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	close(pipe_read);
}

Test(stop, hold_attached_by_ptrace_unseen_by_its_parent, .timeout = 60)
{
	require_root("stop");
	check_hold(false);
}

Test(stop, hold_spawned_by_sigstop, .timeout = 60)
{
	require_root("stop");
	check_hold(true);
}

/* The target's own exit ends the recording of a busy target within 2 s
 * too, with the trace written. */
Test(stop, attach_busy_target_exits, .timeout = 60)
{
	char dir[64], out[128];
	int pipe_read, out_fd, err_fd, status;
	pid_t target = start_busy_for(&pipe_read, "1500"), rearview;
	uint64_t exit_ns, armed_ns;
	char errtext[4096];
	unsigned ids[64];
	size_t nr_ids;

	require_root("stop");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/exits.fxt", dir);
	rearview = start_attach(target, out, false, &out_fd, &err_fd, ids, 64, &nr_ids, &armed_ns);
	if (!wait_child_exit(target, 10000, &status)) {
		recover(rearview, target);
		cr_assert_fail("busy2 did not exit by itself");
	}
	exit_ns = now_ns();
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "busy2: status 0x%x", status);
	if (!wait_child_exit(rearview, 10000, &status)) {
		recover(rearview, 0);
		cr_assert_fail("rearview did not end within 10 s of the target's exit");
	}
	read_output(err_fd, errtext, sizeof(errtext));
	cr_assert_lt(now_ns() - exit_ns, stop_limit_ns(),
		     "rearview took %.3f s to end after the target's exit:\n%s",
		     (double)(now_ns() - exit_ns) / 1e9, errtext);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x:\n%s", status,
		  errtext);
	cr_assert(file_exists(out), "no trace:\n%s", errtext);
	assert_links_gone(ids, nr_ids);
	close(out_fd);
	close(err_fd);
	close(pipe_read);
	cleanup_dir(dir);
}
