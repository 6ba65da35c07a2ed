/* test_attach.c: `rearview attach` records a running process until Ctrl-C and
 * leaves it running, unharmed and untraced. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"

static size_t uprobes_and_perf_fds_of(pid_t pid)
{
	/* After detaching nothing of rearview's may point at the target: no perf
	 * event of ours still open (rearview has exited, so its fds are closed),
	 * which we check by the target's own fd table having only what it had. */
	char cmd[128];
	FILE *p;
	size_t n = 0;
	char line[256];

	snprintf(cmd, sizeof(cmd), "ls -l /proc/%d/fd 2>/dev/null | grep -c perf_event", (int)pid);
	p = popen(cmd, "r");
	if (p && fgets(line, sizeof(line), p))
		n = strtoul(line, NULL, 10);
	if (p)
		pclose(p);
	return n;
}

/* Waits until rearview attach, run with -v, says its events are enabled
 * ("recording 1 process", after the note on how to stop it), or exits (what
 * it said is then the caller's to check). */
static void wait_until_recording(pid_t rearview, int err_fd)
{
	char text[4096];
	ssize_t n;

	if (wait_for_output(rearview, err_fd, "recording 1 process", 30) >= 0)
		return;
	n = pread(err_fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	cr_assert_fail("rearview attach did not start recording within 30 s:\n%s", text);
}

Test(attach, records_until_ctrl_c_and_leaves_the_process_running, .timeout = 60)
{
	char dir[64], out[128], pidtext[32];
	struct proc_result r;
	struct fxt_trace *t = NULL;
	int pipe_read, out_fd, err_fd, tracer, status;
	pid_t target = start_forever(&pipe_read), rearview;
	char state;
	char errbuf[256];

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/attach.fxt", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "-v",
			 "-o",
			 out,
			 "--callgraph-mode",
			 "fp",
			 NULL };
	rearview = start_process(argv, &out_fd, &err_fd);
	wait_until_recording(rearview, err_fd);
	/* samples of the target while it runs 100 ms under the recording */
	cr_assert(wait_for_cpu(target, 100, 30), "the target did not run");
	kill(rearview, SIGINT);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.err, "Ctrl-C"), "attach says how to stop: %s", r.err);

	cr_assert_eq(fxt_read_file(out, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, (uint64_t)target, "busy_loop_body"), 0);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, (uint64_t)target, "main"), 0);
	fxt_trace_free(t);

	/* Still running, not stopped, not traced, and still responsive to signals. */
	state = wait_until_running_untraced(target, &tracer, 10);
	cr_assert(state == 'R' || state == 'S', "the target is in state %c", state);
	cr_assert_eq(tracer, 0, "the target is still being traced by %d", tracer);
	cr_assert_eq(uprobes_and_perf_fds_of(target), 0);
	cr_assert_eq(waitpid(target, &status, WNOHANG), 0, "the target exited");
	kill(target, SIGTERM);
	cr_assert_eq(waitpid(target, &status, 0), target);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	close(pipe_read);
	cleanup_dir(dir);
}

Test(attach, stops_when_the_process_exits, .timeout = 60)
{
	char dir[64], out[128], pidtext[32];
	struct proc_result r;
	int pipe_read, out_fd, err_fd, status;
	pid_t target = start_forever(&pipe_read), rearview;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/attach.fxt", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = {
		(char *)build_path("rearview"), "attach", "-p", pidtext, "-v", "-o", out, NULL
	};
	rearview = start_process(argv, &out_fd, &err_fd);
	wait_until_recording(rearview, err_fd);
	kill(target, SIGKILL);
	waitpid(target, &status, 0);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert(!r.timed_out, "attach did not notice the exit");
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(file_exists(out));
	close(pipe_read);
	cleanup_dir(dir);
}

/* Waits until rearview attach asks which process to record; fails the test
 * with what it said when it does not. */
static void wait_for_question(pid_t rearview, int err_fd)
{
	char text[4096];
	int got = wait_for_output(rearview, err_fd, "Record which process?", 30);
	ssize_t n;

	if (got == 1)
		return;
	n = pread(err_fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	cr_assert_fail("rearview attach %s without asking which process:\n%s",
		       got == 0 ? "exited" : "waited 30 s", text);
}

/* The number before forever's line in the list rearview printed on err_fd
 * (0 when it is not there yet). */
static int number_in_list(int err_fd, pid_t target)
{
	static char text[65536];
	char needle[32];
	ssize_t n = pread(err_fd, text, sizeof(text) - 1, 0);

	text[n > 0 ? n : 0] = '\0';
	snprintf(needle, sizeof(needle), ") %7d  ", (int)target);
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		const char *hit = strstr(line, needle);

		if (hit && (!eol || hit < eol) && strstr(hit, "forever"))
			return atoi(line);
		if (!eol)
			break;
		line = eol + 1;
	}
	return 0;
}

/* What the numbered-list test started, ended here however it ends. */
static pid_t list_target = -1, list_rearview = -1;

static void end_list_processes(void)
{
	if (list_rearview > 0) {
		kill(-list_rearview, SIGKILL);
		waitpid(list_rearview, NULL, 0);
	}
	if (list_target > 0) {
		kill(list_target, SIGKILL);
		waitpid(list_target, NULL, 0);
	}
}

/* Answered in the run that asks: the numbers hold for the list it printed,
 * not for another run's, where processes that started or ended in between
 * would move them. */
Test(attach, without_pid_offers_a_numbered_list, .timeout = 60, .fini = end_list_processes)
{
	char dir[64], out[128], answer[32], text[4096];
	struct proc_result r;
	int pipe_read, in_write, out_fd, err_fd, number;
	ssize_t n;

	list_target = start_forever(&pipe_read);
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/pick.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"), "attach", "-o", out, NULL };
	char *argv_verbose[] = { (char *)build_path("rearview"), "attach", "-v", "-o", out, NULL };

	/* With no answer, it lists the processes and gives up cleanly. */
	run_process(argv, 30, &r);
	cr_assert_eq(r.exit_code, 1);
	cr_assert(strstr(r.err, "no process chosen"), "%s", r.err);
	cr_assert(!file_exists(out));

	/* Answering with the number its list gives forever records it. */
	list_rearview = start_process_piped(argv_verbose, &in_write, &out_fd, &err_fd);
	wait_for_question(list_rearview, err_fd);
	number = number_in_list(err_fd, list_target);
	n = pread(err_fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	cr_assert_gt(number, 0, "forever (pid %d) is not in the list: %s", (int)list_target, text);
	snprintf(answer, sizeof(answer), "%d\n", number);
	cr_assert_eq(write(in_write, answer, strlen(answer)), (ssize_t)strlen(answer));
	close(in_write);
	wait_until_recording(list_rearview, err_fd);
	kill(list_rearview, SIGINT);
	finish_process(list_rearview, out_fd, err_fd, 30, &r);
	list_rearview = -1;
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(strstr(r.err, "recording 1 process"), "%s", r.err);
	cr_assert(file_exists(out), "choosing from the list records the process");
	close(pipe_read);
	cleanup_dir(dir);
}

/* Ctrl-C while the list waits for an answer ends it at once: rearview blocks
 * the stop signals for its session, so the question must watch for them. */
Test(attach, ctrl_c_at_the_list_ends_it, .timeout = 60)
{
	char dir[64], out[128];
	struct proc_result r;
	int in_write, err_fd, out_fd;
	pid_t rearview;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/pick.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"), "attach", "-o", out, NULL };

	/* in_write stays open: standard input never ends */
	rearview = start_process_piped(argv, &in_write, &out_fd, &err_fd);
	wait_for_question(rearview, err_fd);
	kill(-rearview, SIGINT);
	finish_process(rearview, out_fd, err_fd, 10, &r);
	close(in_write);
	cr_assert(!r.timed_out, "Ctrl-C did not end the question");
	cr_assert_eq(r.exit_code, 1, "%s", r.err);
	cr_assert(strstr(r.err, "interrupted: no process chosen"), "%s", r.err);
	cr_assert(!file_exists(out));
	cleanup_dir(dir);
}
