/* test_faults.c: the faults of issue 20 that are about stopping and
 * stderr, end to end with the sampling backend:
 * - a program that ignores Ctrl-C: once the trace is written rearview says
 *   it waits for it, with its pid; one more Ctrl-C ends rearview within a
 *   second with the program running on; two more kill it; a program that
 *   ends on Ctrl-C gets no such message;
 * - stderr on a pipe whose reader is gone (`2>&1 | tee`, then Ctrl-C, which
 *   ends tee too): the trace is written, nothing temporary is left, and the
 *   exit status is 0; a closed stderr neither ends up in the trace nor
 *   reaches the program; SIGPIPE's disposition and the signal mask reach the
 *   program as rearview got them;
 * - `attach -p 2` (a kernel thread) is refused before anything is set up;
 *   a misspelt option gets a suggestion.
 *
 * Every wait is bounded; the test's .fini kills whatever it started, and the
 * test process is a child subreaper, so that a program rearview leaves
 * running becomes its child and is reaped. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "test_files.h"

#define WAIT_NOTE                                                                                  \
	"to exit (Ctrl-C again to stop waiting and leave it running; twice more to kill it)"

/* What a test started, for its .fini to end whatever happened. */
static struct {
	pid_t rearview; /* leads its own process group (start_process) */
	pid_t target;
	int out_fd, err_fd;
	char dir[64];
} started = { .out_fd = -1, .err_fd = -1 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void kill_and_reap(pid_t pid, bool group)
{
	int status;

	if (pid <= 0)
		return;
	kill(group ? -pid : pid, SIGKILL);
	kill(pid, SIGKILL);
	wait_child_exit(pid, 10000, &status);
}

static void end_started(void)
{
	kill_and_reap(started.rearview, true);
	kill_and_reap(started.target, false);
	started.rearview = started.target = 0;
	if (started.out_fd >= 0)
		close(started.out_fd);
	if (started.err_fd >= 0)
		close(started.err_fd);
	started.out_fd = started.err_fd = -1;
	if (started.dir[0])
		cleanup_dir(started.dir);
	started.dir[0] = '\0';
}

/* What a process wrote so far to fd (an output file of start_process). */
static void read_output(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

/* Whether process pid is there and not a zombie. */
static bool alive(pid_t pid)
{
	int tracer;
	char state = proc_state(pid, &tracer);

	return state != '?' && state != 'Z' && state != 'X';
}

/* Whether sig is pending for process pid as a whole (ShdPnd): sent, not yet
 * read. */
static bool signal_pending(pid_t pid, int sig)
{
	char path[64], line[256];
	bool pending = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long mask;

		if (sscanf(line, "ShdPnd: %llx", &mask) == 1)
			pending = (mask >> (sig - 1)) & 1;
	}
	fclose(f);
	return pending;
}

/* `rearview run --backend sample -o DIR/t.fxt -- PROGRAM ARGS` (PROGRAM in
 * tests/targets), its target once it said "PID ready"; both in started. */
static void start_run(const char *program, const char *arg)
{
	char out[128], line[256] = "", program_path[4096];
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "sample",
			 "-o",
			 out,
			 "--",
			 program_path,
			 (char *)arg,
			 NULL };

	make_test_dir(started.dir, sizeof(started.dir));
	snprintf(out, sizeof(out), "%s/t.fxt", started.dir);
	snprintf(program_path, sizeof(program_path), "%s",
		 build_path(strcmp(program, "forever") ? "tests/targets/ignores_int"
						       : "tests/targets/forever"));
	started.rearview = start_process(argv, &started.out_fd, &started.err_fd);
	cr_assert_eq(wait_for_output(started.rearview, started.out_fd, "ready", 30), 1,
		     "%s did not start under rearview", program);
	read_output(started.out_fd, line, sizeof(line));
	started.target = (pid_t)atoi(line);
	cr_assert_gt(started.target, 0, "no pid in '%s'", line);
	cr_assert(wait_until_polling(started.rearview, 30), "rearview did not record");
	cr_assert(wait_for_cpu(started.target, 50, 10), "%s did not run", program);
}

/* Ctrl-C to rearview alone, then its message that it waits for the target,
 * with the trace written by then. */
static void interrupt_until_waiting(void)
{
	char note[256], errtext[16384], path[128];
	struct fxt_trace *t = NULL;
	char why[512];

	snprintf(note, sizeof(note), "waiting for ignores_int [%d] " WAIT_NOTE,
		 (int)started.target);
	kill(started.rearview, SIGINT);
	if (wait_for_output(started.rearview, started.err_fd, note, 30) != 1) {
		read_output(started.err_fd, errtext, sizeof(errtext));
		cr_assert_fail("no \"%s\":\n%s", note, errtext);
	}
	read_output(started.err_fd, errtext, sizeof(errtext));
	cr_assert(strstr(errtext, "rearview: wrote "), "the trace was not written first:\n%s",
		  errtext);
	snprintf(path, sizeof(path), "%s/t.fxt", started.dir);
	cr_assert_eq(fxt_read_file(path, &t, why, sizeof(why)), 0, "%s: %s", path, why);
	cr_assert_gt(fxt_count_spans(t, (uint64_t)started.target, FXT_ANY, "work_round"), 0,
		     "no work_round in the trace");
	fxt_trace_free(t);
	cr_assert(alive(started.target), "the program ended");
	cr_assert_eq(waitpid(started.rearview, NULL, WNOHANG), 0, "rearview did not wait");
}

Test(faults, one_more_ctrl_c_leaves_a_program_that_ignores_it_running, .timeout = 90,
     .fini = end_started)
{
	char errtext[16384], left[128];
	double sent, took;
	int status;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	start_run("ignores_int", "60000");
	interrupt_until_waiting();
	sent = now_s();
	kill(started.rearview, SIGINT);
	cr_assert(wait_child_exit(started.rearview, 10000, &status),
		  "rearview did not end within 10 s of the second Ctrl-C");
	took = now_s() - sent;
	started.rearview = 0;
	read_output(started.err_fd, errtext, sizeof(errtext));
	/* 1 s; 1.5 s under the sanitizers' build, whose exit checks for leaks */
	cr_assert_lt(took, strstr(build_dir(), "asan") ? 1.5 : 1.0,
		     "rearview took %.3f s to stop waiting:\n%s", took, errtext);
	/* the shell's status for an interrupted command: the program has none */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT, "status 0x%x:\n%s",
		  status, errtext);
	snprintf(left, sizeof(left), "not waiting for %d, which runs on", (int)started.target);
	cr_assert(strstr(errtext, left), "no \"%s\":\n%s", left, errtext);
	cr_assert(alive(started.target), "the program did not run on:\n%s", errtext);
	cr_assert(wait_for_cpu(started.target, 20, 10), "the program does not run");
	cr_log_info("rearview stopped waiting %.3f s after the second Ctrl-C", took);
}

Test(faults, two_more_ctrl_c_kill_a_program_that_ignores_it, .timeout = 90, .fini = end_started)
{
	char errtext[16384], killed[64];
	double sent, took, until;
	int status;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	start_run("ignores_int", "60000");
	interrupt_until_waiting();
	sent = now_s();
	kill(started.rearview, SIGINT);
	/* the next once rearview took this one: two pending would be one */
	until = now_s() + 0.4;
	while (signal_pending(started.rearview, SIGINT) && now_s() < until)
		sleep_ms(1);
	kill(started.rearview, SIGINT);
	cr_assert(wait_child_exit(started.rearview, 10000, &status),
		  "rearview did not end within 10 s of two more Ctrl-C");
	took = now_s() - sent;
	started.rearview = 0;
	read_output(started.err_fd, errtext, sizeof(errtext));
	cr_assert_lt(took, 2.0, "rearview took %.3f s to kill the program:\n%s", took, errtext);
	/* rearview reaped it: its status, killed by SIGKILL */
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL, "status 0x%x:\n%s",
		  status, errtext);
	snprintf(killed, sizeof(killed), "killed %d", (int)started.target);
	cr_assert(strstr(errtext, killed), "no \"%s\":\n%s", killed, errtext);
	cr_assert(kill(started.target, 0) && errno == ESRCH, "the program is still there");
	started.target = 0;
}

/* Ctrl-C from a terminal reaches the whole process group: a program that
 * ends on it is gone at once, and rearview says nothing of waiting. */
Test(faults, a_program_that_ends_on_ctrl_c_is_not_waited_for, .timeout = 90, .fini = end_started)
{
	char errtext[16384];
	int status;

	start_run("forever", NULL);
	kill(-started.rearview, SIGINT);
	cr_assert(wait_child_exit(started.rearview, 30000, &status), "rearview did not end");
	started.rearview = 0;
	read_output(started.err_fd, errtext, sizeof(errtext));
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGINT, "status 0x%x:\n%s",
		  status, errtext);
	cr_assert(strstr(errtext, "rearview: wrote "), "no trace:\n%s", errtext);
	cr_assert_null(strstr(errtext, "waiting for"), "a message of waiting:\n%s", errtext);
	cr_assert(kill(started.target, 0) && errno == ESRCH, "the program is still there");
	started.target = 0;
}

/* `rearview attach -p PID 2>&1 | tee log`, then Ctrl-C, which ends tee as
 * well: every note rearview writes after it goes to a pipe without a
 * reader. */
Test(faults, a_stderr_without_reader_does_not_lose_the_trace, .timeout = 90, .fini = end_started)
{
	char outdir[128], out[192], tmp[128], pid_text[32], line[256];
	struct fxt_trace *t = NULL;
	int fds[2], status, forever_pipe;
	char why[512];

	make_test_dir(started.dir, sizeof(started.dir));
	snprintf(outdir, sizeof(outdir), "%s/out", started.dir);
	snprintf(out, sizeof(out), "%s/attach.fxt", outdir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", started.dir);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(mkdir(outdir, 0700), 0);
	started.target = start_forever(&forever_pipe);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)started.target);
	cr_assert_eq(pipe(fds), 0);
	started.rearview = fork();
	cr_assert_geq(started.rearview, 0);
	if (started.rearview == 0) {
		char *argv[] = { (char *)build_path("rearview"),
				 "attach",
				 "--backend",
				 "sample",
				 "-p",
				 pid_text,
				 "-o",
				 out,
				 NULL };

		setpgid(0, 0);
		default_stop_signals();
		setenv("TMPDIR", tmp, 1);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(started.rearview, started.rearview);
	close(fds[1]);
	/* the note that it records, whatever notes come before it */
	for (int lines = 0;; lines++) {
		cr_assert(lines < 20 && read_line_timeout(fds[0], line, sizeof(line), 30),
			  "rearview did not say it records (last: '%s')", line);
		if (strstr(line, "recording forever"))
			break;
	}
	cr_assert(wait_until_polling(started.rearview, 30), "rearview did not record");
	cr_assert(wait_for_cpu(started.target, 50, 10), "the target did not run");
	/* tee is gone */
	close(fds[0]);
	kill(started.rearview, SIGINT);
	cr_assert(wait_child_exit(started.rearview, 30000, &status), "rearview did not end");
	started.rearview = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "status 0x%x (0x%x: killed by SIGPIPE)", status, SIGPIPE);
	cr_assert_eq(fxt_read_file(out, &t, why, sizeof(why)), 0, "%s: %s", out, why);
	cr_assert_gt(fxt_count_spans(t, (uint64_t)started.target, FXT_ANY, "busy_loop_body"), 0,
		     "no busy_loop_body in the trace");
	fxt_trace_free(t);
	cr_assert_eq(dir_entries(outdir), 1, "more than the trace in %s (a temporary file left)",
		     outdir);
	cr_assert_eq(dir_entries(tmp), 0, "the capture directory is left in %s", tmp);
	cr_assert(alive(started.target), "the attached process did not run on");
	close(forever_pipe);
}

/* `sh -c 'SETUP; exec COMMAND'` (COMMAND a shell word list), its stdout. */
static void shell_output(const char *setup, const char *command, char *out, size_t size)
{
	char script[8192];
	struct proc_result *r = malloc(sizeof(*r));
	size_t n;

	cr_assert_not_null(r);
	snprintf(script, sizeof(script), "%s; exec %s", setup, command);
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	run_process(argv, 60, r);
	cr_assert_eq(r->exit_code, 0, "%s: %s", script, r->err);
	n = strnlen(r->out, size - 1);
	memcpy(out, r->out, n);
	out[n] = '\0';
	free(r);
}

/* What the program gets of signals and standard descriptors is what it gets
 * bare: SIGPIPE's disposition (default, or ignored when rearview's was), the
 * signal mask, a closed stderr; and rearview's notes (-v: many, while the
 * trace is open), with no stderr to go to, do not end up in the files it
 * opens (the trace would be the first to take fd 2). */
Test(faults, the_program_gets_signals_and_stderr_as_rearview_got_them, .timeout = 120,
     .fini = end_started)
{
	static const char *const setups[] = { ":", "trap '' PIPE", "exec 2>&-" };
	/* grep reads its own mask (its shell's changes while the shell forks),
	 * the shell's test builtin the shell's fd 2 */
	static const char probe[] = "/bin/sh -c 'grep -E \"^Sig(Blk|Ign)\" /proc/self/status; "
				    "if [ -e /proc/self/fd/2 ]; then echo fd2 open; else echo fd2 "
				    "closed; fi'";
	char traced_cmd[8192], bare[1024], traced[1024], trace[128];
	unsigned long long ignored;

	make_test_dir(started.dir, sizeof(started.dir));
	snprintf(trace, sizeof(trace), "%s/t.fxt", started.dir);
	snprintf(traced_cmd, sizeof(traced_cmd), "%s run -v --backend sample -o %s -- %s",
		 build_path("rearview"), trace, probe);
	for (size_t i = 0; i < sizeof(setups) / sizeof(setups[0]); i++) {
		struct fxt_trace *t = NULL;
		char why[512];

		shell_output(setups[i], probe, bare, sizeof(bare));
		shell_output(setups[i], traced_cmd, traced, sizeof(traced));
		cr_assert_str_eq(traced, bare, "with '%s': traced\n%s\nbare\n%s", setups[i], traced,
				 bare);
		cr_assert_eq(fxt_read_file(trace, &t, why, sizeof(why)), 0, "with '%s': %s",
			     setups[i], why);
		fxt_trace_free(t);
	}
	/* the cases differ as they should (other signals may come ignored
	 * from whatever started the tests) */
	shell_output("trap '' PIPE", probe, bare, sizeof(bare));
	cr_assert_not_null(strstr(bare, "SigIgn:\t"), "%s", bare);
	ignored = strtoull(strstr(bare, "SigIgn:\t") + 8, NULL, 16);
	cr_assert((ignored >> (SIGPIPE - 1)) & 1, "SIGPIPE is not ignored: %s", bare);
	shell_output("exec 2>&-", probe, bare, sizeof(bare));
	cr_assert(strstr(bare, "fd2 closed"), "%s", bare);
}

Test(faults, attach_refuses_a_kernel_thread_before_anything_is_set_up, .timeout = 30,
     .fini = end_started)
{
	char out[128], tmp[128], comm[64] = "";
	struct proc_result *r = malloc(sizeof(*r));
	double began, took;
	FILE *f = fopen("/proc/2/comm", "re");

	cr_assert_not_null(r);
	cr_assert_not_null(f, "no /proc/2: pid 2 is the kernel's kthreadd on Linux");
	cr_assert_not_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	cr_assert_str_eq(comm, "kthreadd\n");
	make_test_dir(started.dir, sizeof(started.dir));
	snprintf(out, sizeof(out), "%s/k.fxt", started.dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", started.dir);
	cr_assert_eq(mkdir(tmp, 0700), 0);
	cr_assert_eq(setenv("TMPDIR", tmp, 1), 0);
	char *argv[] = { (char *)build_path("rearview"), "attach", "-p", "2", "-o", out, NULL };
	began = now_s();
	run_process(argv, 20, r);
	took = now_s() - began;
	cr_assert_eq(r->exit_code, 1, "exit %d: %s", r->exit_code, r->err);
	cr_assert(strstr(r->err, "2 (kthreadd) is a kernel thread"), "%s", r->err);
	cr_assert(strstr(r->err, "--trace-include-kernel"), "%s", r->err);
	cr_assert_lt(took, 2.0, "refused after %.3f s: something was set up first", took);
	cr_assert_eq(dir_entries(tmp), 0, "a capture directory was made in %s", tmp);
	cr_assert(!file_exists(out), "a trace was written");
	/* nothing but the empty TMPDIR: no temporary trace either */
	cr_assert_eq(dir_entries(started.dir), 1, "files left in %s", started.dir);
	free(r);
}

Test(faults, a_misspelt_option_gets_a_suggestion, .timeout = 30)
{
	struct proc_result *r = malloc(sizeof(*r));
	char *argv[] = {
		(char *)build_path("rearview"), "attach", "--mutli-thread", "-p", "1", NULL
	};

	cr_assert_not_null(r);
	run_process(argv, 20, r);
	cr_assert_eq(r->exit_code, 2, "exit %d: %s", r->exit_code, r->err);
	cr_assert(strstr(r->err, "unknown option '--mutli-thread': did you mean "
				 "'--multi-thread'?"),
		  "%s", r->err);
	free(r);
}
