/* test_follow.c: `rearview run` follows the processes the target forks, and
 * what they exec, each on a process track of its own; --no-follow records the
 * target alone and says how many children it left out. The target
 * (tests/targets/forkexec) says which pid each process has and counts its own
 * work. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"
#include "sysfs_root.h"

/* The pid the program printed for process `name` ("process NAME PID"). */
static unsigned long process_pid(const char *out, const char *name)
{
	char needle[64];
	const char *p;

	snprintf(needle, sizeof(needle), "process %s ", name);
	p = strstr(out, needle);
	cr_assert(p, "the program names process %s: %s", name, out);
	return strtoul(p + strlen(needle), NULL, 10);
}

/* The processes' own functions, each only on its own process's track. */
static const struct {
	const char *process, *function;
} work[] = {
	{ "fe-parent", "parent_work" },
	{ "fe-child-a", "child_a_work" },
	{ "fe-child-b", "child_b_work" },
};

Test(follow, sampling_gives_each_process_its_track, .timeout = 300)
{
	static const char *const args[] = { "150", NULL };
	char dir[64], summary[128];
	struct proc_result r;
	struct fxt_trace *t;
	unsigned long pids[3];

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	/* Every record must arrive (a process's name is one), and at 10 kHz
	 * three spinning processes make DWARF stacks faster than a slow build
	 * (check-asan's) drains them; 1 kHz still gives each ~80 samples. The
	 * rings' flood by other tasks' switches is
	 * sampling_loses_nothing_beside_a_busy_neighbour's. */
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--sampling", "--timer-resolution", "low", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	cr_assert_null(strstr(r.err, "the kernel lost"), "%s", r.err);
	for (size_t i = 0; i < 3; i++)
		pids[i] = process_pid(r.out, work[i].process);
	cr_assert_eq(t->nr_processes, 3, "three processes in the trace, not %zu", t->nr_processes);
	for (size_t i = 0; i < 3; i++) {
		const char *name = fxt_process_name(t, pids[i]);

		cr_assert(name && !strcmp(name, work[i].process), "process %lu is named %s, not %s",
			  pids[i], name ? name : "(nothing)", work[i].process);
		cr_assert(fxt_find_thread(t, pids[i], pids[i]), "process %lu has its main thread",
			  pids[i]);
		for (size_t j = 0; j < 3; j++) {
			size_t n = fxt_count_spans(t, pids[i], FXT_ANY, work[j].function);

			if (i == j)
				cr_assert_gt(n, 0, "%s has no %s span", work[i].process,
					     work[j].function);
			else
				cr_assert_eq(n, 0, "%s has %zu %s spans, which are %s's",
					     work[i].process, n, work[j].function, work[j].process);
		}
		/* each spun 150 rounds: its function's time is of that order, not
		 * a stray sample's */
		cr_assert_gt(fxt_sum_durations_ns(t, pids[i], FXT_ANY, work[i].function),
			     20 * 1000 * 1000ull, "%s's %s is under 20 ms", work[i].process,
			     work[i].function);
	}
	snprintf(summary, sizeof(summary), "3 processes: fe-parent [%lu], fe-child-a [%lu]",
		 pids[0], pids[1]);
	if (pids[1] > pids[2])
		snprintf(summary, sizeof(summary), "3 processes: fe-parent [%lu], fe-child-b [%lu]",
			 pids[0], pids[2]);
	cr_assert(strstr(r.err, summary), "the summary names the processes (%s):\n%s", summary,
		  r.err);
	cr_assert_null(strstr(r.err, "not recorded"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* Pipe ping-pong pairs, started by the test and ended by it (and with it,
 * PR_SET_PDEATHSIG): two processes that hand a byte back and forth as fast
 * as they can, so each CPU switches tasks hundreds of thousands of times a
 * second. */
#define PING_PONG_PAIRS 4

static pid_t start_ping_pong(pid_t *partner)
{
	int there[2], back[2];
	pid_t pid;

	cr_assert_eq(pipe(there), 0);
	cr_assert_eq(pipe(back), 0);
	for (int side = 0; side < 2; side++) {
		pid = fork();
		cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
		if (pid == 0) {
			int in = side ? there[0] : back[0], out = side ? back[1] : there[1];
			char byte = 0;

			prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
			if (side == 0 && write(out, &byte, 1) != 1)
				_exit(1);
			while (read(in, &byte, 1) == 1 && write(out, &byte, 1) == 1)
				;
			_exit(0);
		}
		if (side == 0)
			*partner = pid;
	}
	close(there[0]), close(there[1]), close(back[0]), close(back[1]);
	return pid;
}

static void stop_ping_pong(pid_t a, pid_t b)
{
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	cr_assert(wait_child_exit(a, 5000, NULL) && wait_child_exit(b, 5000, NULL),
		  "the ping-pong pair ended");
}

/* Beside a neighbour that switches constantly, the sampling rings hold the
 * target's records, not every task's switches: the kernel loses none, and
 * every child is named (its COMM record came through). */
Test(follow, sampling_loses_nothing_beside_a_busy_neighbour, .timeout = 300)
{
	static const char *const args[] = { "150", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	pid_t ping[PING_PONG_PAIRS], pong[PING_PONG_PAIRS];

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	for (size_t i = 0; i < PING_PONG_PAIRS; i++)
		ping[i] = start_ping_pong(&pong[i]);
	/* 1 kHz: the target's own records are few (see above), and what fills
	 * the rings can only be the neighbour's switches */
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--sampling", "--timer-resolution", "low", NULL },
			 "tests/targets/forkexec", args, 120, &r);
	for (size_t i = 0; i < PING_PONG_PAIRS; i++)
		stop_ping_pong(ping[i], pong[i]);
	cr_assert_null(strstr(r.err, "the kernel lost"), "%s", r.err);
	for (size_t i = 0; i < 3; i++) {
		unsigned long pid = process_pid(r.out, work[i].process);
		const char *name = fxt_process_name(t, pid);

		cr_assert(name && !strcmp(name, work[i].process), "process %lu is named %s, not %s",
			  pid, name ? name : "(nothing)", work[i].process);
	}
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(follow, no_follow_records_the_target_alone, .timeout = 120)
{
	static const char *const args[] = { "60", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	unsigned long parent;

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, (const char *const[]){ "--sampling", "--no-follow", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	parent = process_pid(r.out, "fe-parent");
	cr_assert(strstr(r.out, "count child_b_work 60"), "the children ran: %s", r.out);
	cr_assert_eq(t->nr_processes, 1, "one process in the trace, not %zu", t->nr_processes);
	cr_assert_eq(t->processes[0].koid, parent);
	cr_assert_gt(fxt_count_spans(t, parent, FXT_ANY, "parent_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "child_a_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "child_b_work"), 0);
	cr_assert(strstr(r.err, "2 child processes not recorded (--no-follow)"), "%s", r.err);
	cr_assert_null(strstr(r.err, "processes:"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(follow, children_running_at_the_end_are_named, .timeout = 120)
{
	static const char *const args[] = { "leave", NULL };
	char dir[64], expected[96];
	struct proc_result r;
	struct fxt_trace *t;
	unsigned long linger;

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL, (const char *const[]){ "--sampling", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	linger = process_pid(r.out, "fe-linger");
	/* it outlives its parent by design; end it whatever the checks say */
	kill((pid_t)linger, SIGKILL);
	snprintf(expected, sizeof(expected),
		 "still running and is recorded only until then: "
		 "fe-linger [%lu]",
		 linger);
	cr_assert(strstr(r.err, expected), "the child still running is named (%s):\n%s", expected,
		  r.err);
	cr_assert(fxt_process_name(t, linger), "the child has its track");
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* rearview run --dry-run [--no-follow] [--sampling] -- forkexec, on the fake
 * Ice Lake tree for Intel PT (NULL: this machine). */
static void dry_run(const char *tree, bool no_follow, struct proc_result *r)
{
	char *argv[8];
	int a = 0;

	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	argv[a++] = "--dry-run";
	if (!tree)
		argv[a++] = "--sampling";
	if (no_follow)
		argv[a++] = "--no-follow";
	argv[a++] = "--";
	argv[a++] = (char *)build_path("tests/targets/forkexec");
	argv[a] = NULL;
	if (tree)
		setenv("REARVIEW_SYSFS_ROOT", tree, 1);
	run_process(argv, 30, r);
	unsetenv("REARVIEW_SYSFS_ROOT");
	cr_assert_eq(r->exit_code, 0, "%s", r->err);
}

Test(follow, dry_run_says_how_children_are_followed, .timeout = 60)
{
	struct proc_result *r = calloc(1, sizeof(*r));
	const char *tree = sysfs_tree("icelake");
	const char *event;

	cr_assert_not_null(r);
	dry_run(NULL, false, r);
	cr_assert(strstr(r->out, "program follow_fork (tp_btf/sched_process_fork)"), "%s", r->out);
	cr_assert(strstr(r->out, "program follow_exit (tp_btf/sched_process_exit)"), "%s", r->out);
	cr_assert(strstr(r->out, "the children it forks"), "%s", r->out);
	dry_run(NULL, true, r);
	cr_assert_null(strstr(r->out, "follow_fork"), "%s", r->out);
	cr_assert(strstr(r->out, "--no-follow: the target alone"), "%s", r->out);

	/* Intel PT: per-CPU events on the target, inherited */
	dry_run(tree, false, r);
	event = strstr(r->out, "intel_pt, CPU 0, the target and its children (inherit)");
	cr_assert(event, "%s", r->out);
	cr_assert(strstr(event, "flags = disabled inherit"), "%s", event);
	dry_run(tree, true, r);
	cr_assert(strstr(r->out, "intel_pt, the program"), "%s", r->out);
	cr_assert_null(strstr(r->out, "inherit"), "--no-follow: nothing inherited:\n%s", r->out);
	free(r);
}

/* ---- the uprobe backend: forks followed, execs not ---- */

/* The pid of the line "pid PID count probed_call N" with that N. */
static unsigned long counted_pid(const char *out, unsigned long n)
{
	char needle[64];
	const char *p = out, *line;

	snprintf(needle, sizeof(needle), " count probed_call %lu\n", n);
	line = strstr(p, needle);
	cr_assert(line, "no process counted %lu calls: %s", n, out);
	while (line > out && line[-1] != '\n')
		line--;
	cr_assert(!strncmp(line, "pid ", 4), "%s", out);
	return strtoul(line + 4, NULL, 10);
}

Test(follow, uprobe_backend_traces_a_forked_child_exactly, .timeout = 120)
{
	static const char *const args[] = { "fork", "300", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	unsigned long parent, child;

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--backend", "uprobe", "--functions", "probed_call",
						"--full-execution", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	parent = process_pid(r.out, "fe-fork");
	child = counted_pid(r.out, 300);
	cr_assert_eq(counted_pid(r.out, 150), parent);
	cr_assert_neq(child, parent);
	cr_assert_eq(fxt_count_spans(t, child, FXT_ANY, "probed_call"), 300,
		     "the child's calls, exactly, on its own track");
	cr_assert_eq(fxt_count_spans(t, parent, FXT_ANY, "probed_call"), 150,
		     "the parent's, exactly, on its own");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "probed_call"), 450);
	cr_assert_str_eq(fxt_process_name(t, child), "fe-fork", "the child has its parent's name");
	cr_assert(strstr(r.err, "2 processes: fe-fork"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);

	/* --no-follow: the parent's calls alone, and the child said */
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--backend", "uprobe", "--functions", "probed_call",
						"--full-execution", "--no-follow", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	parent = process_pid(r.out, "fe-fork");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "probed_call"), 150);
	cr_assert_eq(fxt_count_spans(t, parent, FXT_ANY, "probed_call"), 150);
	cr_assert(strstr(r.err, "1 child process not recorded (--no-follow)"), "%s", r.err);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(follow, uprobe_backend_says_execs_are_not_followed, .timeout = 120)
{
	static const char *const args[] = { "fork-exec", "5", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	unsigned long parent;

	require_root("follow");
	make_test_dir(dir, sizeof(dir));
	t = rearview_run(dir, NULL,
			 (const char *const[]){ "--backend", "uprobe", "--functions",
						"probed_call,child_a_work", NULL },
			 "tests/targets/forkexec", args, 90, &r);
	parent = process_pid(r.out, "fe-forkexec");
	cr_assert(strstr(r.out, "count child_a_work 5"), "the child ran: %s", r.out);
	cr_assert(strstr(r.err, "1 child process exec'd another program: the uprobe backend "
				"follows forks but not execs"),
		  "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, parent, FXT_ANY, "probed_call"), 1);
	/* the exec'd program is this same file: its probed calls would be seen
	 * if the child were still traced */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "child_a_work"), 0,
		     "nothing after the exec is traced");
	fxt_trace_free(t);
	cleanup_dir(dir);
}
