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

Test(attach, without_pid_offers_a_numbered_list, .timeout = 60)
{
	char dir[64], out[128], answer[32], needle[32];
	struct proc_result r;
	int pipe_read, status, out_fd, err_fd, number = 0;
	pid_t target = start_forever(&pipe_read), rearview;
	const char *line;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/pick.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"), "attach", "-o", out, NULL };
	char *argv_verbose[] = { (char *)build_path("rearview"), "attach", "-v", "-o", out, NULL };

	/* With no answer, it lists the processes and gives up cleanly. */
	run_process(argv, 30, &r);
	cr_assert_eq(r.exit_code, 1);
	cr_assert(strstr(r.err, "no process chosen"), "%s", r.err);
	cr_assert(!file_exists(out));
	snprintf(needle, sizeof(needle), ") %7d  ", (int)target);
	for (line = r.err; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *hit = strstr(line, needle);
		const char *eol = strchr(line, '\n');

		if (hit && (!eol || hit < eol) && strstr(hit, "forever")) {
			number = atoi(line);
			break;
		}
	}
	cr_assert_gt(number, 0, "forever (pid %d) is not in the list: %.3000s", (int)target, r.err);

	/* Answering with its number records it. */
	snprintf(answer, sizeof(answer), "%d\n", number);
	rearview = start_process_input(argv_verbose, answer, &out_fd, &err_fd);
	wait_until_recording(rearview, err_fd);
	kill(rearview, SIGINT);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(file_exists(out), "choosing from the list records the process");
	kill(target, SIGKILL);
	waitpid(target, &status, 0);
	close(pipe_read);
	cleanup_dir(dir);
}

/* Ctrl-C while the list waits for an answer ends it at once: rearview blocks
 * the stop signals for its session, so the question must watch for them. */
Test(attach, ctrl_c_at_the_list_ends_it, .timeout = 60)
{
	char dir[64], out[128], err_path[96];
	struct proc_result r;
	int in[2], err_fd, out_fd;
	pid_t rearview;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/pick.fxt", dir);
	snprintf(err_path, sizeof(err_path), "%s/err", dir);
	cr_assert_eq(pipe(in), 0);
	err_fd = open(err_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	out_fd = open("/dev/null", O_RDWR);
	cr_assert(err_fd >= 0 && out_fd >= 0);
	rearview = fork();
	cr_assert_geq(rearview, 0);
	if (rearview == 0) {
		setpgid(0, 0);
		default_stop_signals();
		dup2(in[0], 0);
		dup2(out_fd, 1);
		dup2(err_fd, 2);
		execl(build_path("rearview"), "rearview", "attach", "-o", out, (char *)NULL);
		_exit(127);
	}
	setpgid(rearview, rearview);
	close(in[0]); /* in[1] stays open: standard input never ends */
	cr_assert(wait_for_text(err_fd, "Record which process?", 30), "no question asked");
	kill(-rearview, SIGINT);
	finish_process(rearview, out_fd, err_fd, 10, &r);
	close(in[1]);
	cr_assert(!r.timed_out, "Ctrl-C did not end the question");
	cr_assert_eq(r.exit_code, 1, "%s", r.err);
	cr_assert(strstr(r.err, "interrupted: no process chosen"), "%s", r.err);
	cr_assert(!file_exists(out));
	cleanup_dir(dir);
}
