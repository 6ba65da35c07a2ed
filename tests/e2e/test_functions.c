/* test_functions.c: `rearview run|attach --backend uprobe`, the function
 * tracer, on tests/targets/fncalls, which counts its own calls (recursion,
 * calls through pointers, a longjmp over three frames, a signal handler,
 * threads, reads and sleeps, --filter windows) and prints them. A trace of a
 * whole run must hold exactly those calls, nested as they were made, per
 * thread; the kernel's system calls and sleeps nest under the user call that
 * made them; `rearview decode` of the kept capture gives the same trace; an
 * attached process is left running and unprobed.
 *
 * Not here: the engine's or the decoder's units (tests/unit), timing (bench/run).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "functions.h"
#include "fxt_reader.h"
#include "harness.h"
#include "program_counts.h"

#define FIB_N	     12
#define THREADS	     3
#define THREAD_CALLS 50
#define WINDOW	     "[window window_start]"
#define OFF_CPU_S    "[off-cpu: sleeping]"

/* The number on the program's line "PREFIX N" (e.g. "count fib"); asserts
 * that there is one. */
static unsigned long program_value(const char *out, const char *prefix)
{
	size_t len = strlen(prefix);
	const char *line = out;

	while (*line) {
		const char *next = strchr(line, '\n');

		if (!strncmp(line, prefix, len) && line[len] == ' ')
			return strtoul(line + len + 1, NULL, 10);
		if (!next)
			break;
		line = next + 1;
	}
	cr_assert_fail("the program printed no \"%s N\" line:\n%s", prefix, out);
	return 0;
}

/* rearview run --backend uprobe OPTIONS... -o DIR/t.fxt -- fncalls ARGS...;
 * asserts success and returns the trace. */
static struct fxt_trace *record(const char *dir, const char *const *options,
				const char *const *args, struct proc_result *r)
{
	/* --multi-thread: fncalls's threads are checked too */
	static const char *const uprobe[] = { "--backend", "uprobe", "--multi-thread", NULL };

	return rearview_run(dir, uprobe, options, "tests/targets/fncalls", args, 180, r);
}

/* The nearest ancestor of s named `name`, or NULL. */
static const struct fxt_span *ancestor(const struct fxt_trace *t, const struct fxt_span *s,
				       const char *name)
{
	for (const struct fxt_span *p = fxt_span_parent(t, s); p; p = fxt_span_parent(t, p))
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

static const char *parent_name(const struct fxt_trace *t, const struct fxt_span *s)
{
	const struct fxt_span *p = fxt_span_parent(t, s);

	return p ? p->name : "(none: top level)";
}

static bool is_span(const struct fxt_span *s, const char *name)
{
	return !strcmp(s->name, name);
}

/* Every count line holds, and there were `expected` of them. */
static void assert_program_counts(const struct fxt_trace *t, const struct proc_result *r,
				  long expected)
{
	char why[256] = "";
	long checked = pc_check_trace(r->out, t, why, sizeof(why));

	if (checked < 0)
		fxt_trace_dump(t, stderr);
	cr_assert_geq(checked, 0, "%s\nprogram output:\n%s\nrearview:\n%s", why, r->out, r->err);
	cr_assert_eq(checked, expected, "%ld count lines checked, %ld expected:\n%s", checked,
		     expected, r->out);
}

/* fib(FIB_N) recursed FIB_N deep (the chain of fib spans under the top one),
 * each fib calling fib twice or not at all. */
static void assert_recursion(const struct fxt_trace *t)
{
	unsigned deepest = 0, tops = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];
		unsigned chain = 1;

		if (!is_span(s, "fib"))
			continue;
		if (!ancestor(t, s, "fib"))
			tops++;
		for (const struct fxt_span *p = fxt_span_parent(t, s); p && is_span(p, "fib");
		     p = fxt_span_parent(t, p))
			chain++;
		cr_assert(fxt_span_nr_children(t, s) == 0 || fxt_span_nr_children(t, s) == 2,
			  "a fib span with %zu children", fxt_span_nr_children(t, s));
		if (chain > deepest)
			deepest = chain;
	}
	cr_assert_eq(tops, 1, "%u top-level fib spans", tops);
	cr_assert_eq(deepest, FIB_N, "fib(%d) is %u calls deep in the trace", FIB_N, deepest);
}

/* Each op_* is called through a pointer from apply_op, once per apply_op. */
static void assert_pointer_calls(const struct fxt_trace *t)
{
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (is_span(s, "apply_op"))
			cr_assert_eq(fxt_span_nr_children(t, s), 1,
				     "apply_op at %llu ns: %zu calls",
				     (unsigned long long)s->begin_ns, fxt_span_nr_children(t, s));
		if (!strncmp(s->name, "op_", 3))
			cr_assert_str_eq(parent_name(t, s), "apply_op");
	}
}

/* jump_around -> jump_deep1 -> jump_deep2 -> jump_deep3, which longjmps
 * back into jump_around; after_jump is then jump_around's child, after the
 * three abandoned frames, not their grandchild. */
static void assert_longjmp(const struct fxt_trace *t)
{
	size_t seen = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i], *around, *deep1 = NULL, *c;

		if (is_span(s, "jump_deep3"))
			cr_assert_str_eq(parent_name(t, s), "jump_deep2");
		if (is_span(s, "jump_deep2"))
			cr_assert_str_eq(parent_name(t, s), "jump_deep1");
		if (is_span(s, "jump_deep1"))
			cr_assert_str_eq(parent_name(t, s), "jump_around");
		if (!is_span(s, "after_jump"))
			continue;
		seen++;
		cr_assert_str_eq(parent_name(t, s), "jump_around",
				 "after the longjmp, after_jump is under %s", parent_name(t, s));
		around = fxt_span_parent(t, s);
		fxt_for_each_child(t, around, c)
		{
			if (is_span(c, "jump_deep1"))
				deep1 = c;
		}
		cr_assert_not_null(deep1, "no jump_deep1 under the jump_around of after_jump");
		cr_assert_leq(deep1->end_ns, s->begin_ns,
			      "the abandoned frames end before after_jump");
		cr_assert_eq(fxt_span_nr_children(t, around), 2, "jump_around has %zu children",
			     fxt_span_nr_children(t, around));
	}
	cr_assert_gt(seen, 0);
}

/* The handler runs inside the call that raised the signal (or, where the
 * trace cannot tell, at the top level); in_handler is called from it. */
static void assert_signals(const struct fxt_trace *t)
{
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		if (is_span(s, "on_signal"))
			cr_assert(!fxt_span_parent(t, s) ||
					  is_span(fxt_span_parent(t, s), "signal_sender"),
				  "the handler is under %s", parent_name(t, s));
		if (is_span(s, "in_handler"))
			cr_assert_str_eq(parent_name(t, s), "on_signal");
	}
}

/* THREADS threads, each its own track (not the main thread's, whose tid is
 * the pid), each with THREAD_CALLS calls of thread_work inside its
 * thread_main. */
static void assert_threads(const struct fxt_trace *t)
{
	uint64_t tids[THREADS];
	size_t n = 0;

	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i], *c;
		size_t work = 0;

		if (is_span(s, "thread_work"))
			cr_assert_str_eq(parent_name(t, s), "thread_main");
		if (!is_span(s, "thread_main"))
			continue;
		cr_assert_lt(n, THREADS, "more thread_main spans than threads");
		cr_assert_neq(s->tid, s->pid, "thread_main on the main thread's track");
		for (size_t j = 0; j < n; j++)
			cr_assert_neq(tids[j], s->tid, "two thread_main spans on thread %llu",
				      (unsigned long long)s->tid);
		tids[n++] = s->tid;
		fxt_for_each_child(t, s, c)
		{
			work += is_span(c, "thread_work");
		}
		cr_assert_eq(work, THREAD_CALLS, "thread %llu: %zu calls of thread_work",
			     (unsigned long long)s->tid, work);
	}
	cr_assert_eq(n, THREADS);
}

Test(functions, full_execution_has_every_call_nested, .timeout = 240)
{
	const char *options[] = { "--full-execution", NULL };
	const char *args[] = { "--only", "fib,ops,jumps,signals,threads", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	/* fib; apply_op, op_add/sub/mul; jump_around, deep1-3, after_jump;
	 * signal_sender, on_signal, in_handler; thread_main, thread_work */
	assert_program_counts(t, &r, 15);
	cr_assert_eq(program_value(r.out, "count fib"), 465);
	cr_assert_eq(program_value(r.out, "count thread_work"), THREADS * THREAD_CALLS);
	assert_recursion(t);
	assert_pointer_calls(t);
	assert_longjmp(t);
	assert_signals(t);
	assert_threads(t);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(functions, patterns_select_the_functions, .timeout = 120)
{
	const char *options[] = { "--full-execution", "--functions", "fib,read_*", NULL };
	const char *args[] = { "--only", "fib,ops,reads", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	for (size_t i = 0; i < t->nr_spans; i++)
		cr_assert(is_span(&t->spans[i], "fib") || !fnmatch("read_*", t->spans[i].name, 0),
			  "a span of %s, which --functions 'fib,read_*' does not name",
			  t->spans[i].name);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fib"),
		     program_value(r.out, "count fib"));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "read_chunks"),
		     program_value(r.out, "count read_chunks"));
	cr_assert_gt(program_value(r.out, "count apply_op"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(functions, filter_keeps_only_calls_inside_windows, .timeout = 120)
{
	const char *options[] = { "--full-execution", "--filter", "window_start,window_stop",
				  NULL };
	const char *args[] = { "--only", "fib,windows", "--windows", "5", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	size_t inside = 0;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	cr_assert_eq(program_value(r.out, "windows"), 5);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), 5, "%s", r.err);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];
		bool in_a_window = false;

		if (!is_span(s, "inside_work"))
			continue;
		inside++;
		for (size_t w = 0; w < t->nr_spans; w++) {
			const struct fxt_span *win = &t->spans[w];

			if (is_span(win, WINDOW) && win->tid == s->tid &&
			    win->begin_ns <= s->begin_ns && s->end_ns <= win->end_ns)
				in_a_window = true;
		}
		cr_assert(in_a_window, "inside_work at %llu ns is outside every window",
			  (unsigned long long)s->begin_ns);
	}
	cr_assert_eq(inside, program_value(r.out, "count inside_work"));
	/* every call of these was made outside a window */
	cr_assert_gt(program_value(r.out, "count outside_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fib"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* --trigger: the flight recorder keeps every call before the first hit, and
 * the trace ends there; with --multi-snapshot each hit is a snapshot. */
Test(functions, trigger_keeps_the_calls_before_it, .timeout = 120)
{
	const char *options[] = { "--trigger", "window_stop", NULL };
	const char *args[] = { "--only",	 "fib,windows", "--windows", "3",
			       "--window-calls", "4",		NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	cr_assert_eq(program_value(r.out, "windows"), 3);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at window_stop]"), 1, "%s",
		     r.err);
	/* everything the program did before its first window_stop */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fib"),
		     (size_t)program_value(r.out, "count fib"), "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "window_start"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "inside_work"), 4);
	/* and nothing after it: one outside_work came before the windows, the
	 * other 12 after the first window_stop */
	cr_assert_eq(program_value(r.out, "count outside_work"), 13);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 1);
	fxt_trace_free(t);
	cleanup_dir(dir);

	const char *multi[] = { "--trigger", "window_stop", "--multi-snapshot", NULL };

	make_test_dir(dir, sizeof(dir));
	t = record(dir, multi, args, &r);
	cr_assert_eq(fxt_count_instants(t, FXT_ANY, FXT_ANY, "[snapshot at window_stop]"), 3, "%s",
		     r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "inside_work"), 12);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* --min-duration: each window longer than it is a snapshot of its own
 * calls, taken from the per-thread flight recorder in BPF maps; with
 * --multi-snapshot every one is kept, and nothing outside them. */
Test(functions, min_duration_keeps_the_calls_of_slow_windows, .timeout = 120)
{
	const char *options[] = { "--filter", "window_start,window_stop", "--min-duration",
				  "1us",      "--multi-snapshot",	  NULL };
	const char *args[] = { "--only",	 "fib,windows", "--windows", "5",
			       "--window-calls", "4",		NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	cr_assert_eq(program_value(r.out, "windows"), 5);
	/* a window holds four calls and five uprobe hits: longer than 1 us */
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, WINDOW), 5, "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "inside_work"), 20, "%s", r.err);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "outside_work"), 0);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "fib"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* The sum of the lengths of the children of s named `name`. */
static uint64_t children_ns(const struct fxt_trace *t, const struct fxt_span *s, const char *name,
			    size_t *count)
{
	const struct fxt_span *c;
	uint64_t ns = 0;

	*count = 0;
	fxt_for_each_child(t, s, c)
	{
		if (!is_span(c, name))
			continue;
		ns += c->end_ns - c->begin_ns;
		++*count;
	}
	return ns;
}

static int64_t int_arg(const struct fxt_span *s, const char *name)
{
	const struct fxt_arg *a = fxt_find_arg(s->args, s->nr_args, name);

	cr_assert_not_null(a, "%s has no argument %s", s->name, name);
	switch (a->type) {
	case FXT_ARG_INT32:
	case FXT_ARG_INT64:
		return a->i;
	case FXT_ARG_UINT32:
	case FXT_ARG_UINT64:
		return (int64_t)a->u;
	default:
		cr_assert_fail("%s's argument %s is a %s", s->name, name,
			       fxt_arg_type_name(a->type));
	}
	return 0;
}

Test(functions, kernel_events_nest_under_the_caller, .timeout = 120)
{
	const char *options[] = { "--full-execution", "--kernel-events", "syscalls,sched", NULL };
	const char *args[] = { "--only", "reads,sleeps", "--reads",  "7", "--sleeps",
			       "3",	 "--sleep-ns",	 "20000000", NULL };
	char dir[64];
	struct proc_result r;
	struct fxt_trace *t;
	size_t reads = 0, sleeps = 0;
	unsigned long sleep_ns;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	t = record(dir, options, args, &r);
	assert_program_counts(t, &r, 3); /* write_file, read_chunks, nap */
	sleep_ns = program_value(r.out, "sleep_ns");
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];
		uint64_t off_cpu;
		size_t n;

		if (is_span(s, "read")) {
			/* before main, the dynamic loader reads libc: no user call is open */
			if (!ancestor(t, s, "read_chunks")) {
				cr_assert_null(fxt_span_parent(t, s), "a read under %s",
					       parent_name(t, s));
				continue;
			}
			reads++;
			cr_assert_str_eq(parent_name(t, s), "read_chunks");
			cr_assert_eq(int_arg(s, "nr"), 0); /* __NR_read */
			cr_assert_eq(int_arg(s, "ret"), 4096);
		}
		if (!is_span(s, "clock_nanosleep") && !is_span(s, "nanosleep"))
			continue;
		cr_assert_str_eq(parent_name(t, s), "nap");
		sleeps++;
		off_cpu = children_ns(t, s, OFF_CPU_S, &n);
		cr_assert_geq(n, 1, "no " OFF_CPU_S " span in the sleep at %llu ns",
			      (unsigned long long)s->begin_ns);
		cr_assert_geq(off_cpu, sleep_ns / 2, "%llu ns off the CPU in a sleep of %lu ns",
			      (unsigned long long)off_cpu, sleep_ns);
		cr_assert_leq(off_cpu, s->end_ns - s->begin_ns);
	}
	cr_assert_eq(reads, program_value(r.out, "syscall read"));
	cr_assert_eq(reads, 7);
	cr_assert_eq(sleeps, program_value(r.out, "syscall clock_nanosleep"));
	cr_assert_geq(sleeps, 3);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* rearview run --backend uprobe OPTION VALUE -- fncalls: refused. */
static void run_refused(const char *option, const char *value, struct proc_result *r, char *out,
			size_t out_size)
{
	char dir[64];

	make_test_dir(dir, sizeof(dir));
	snprintf(out, out_size, "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "uprobe",
			 (char *)option,
			 (char *)value,
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/fncalls"),
			 "--only",
			 "fib",
			 NULL };

	run_process(argv, 60, r);
	cr_assert_neq(r->exit_code, 0, "%s %s was accepted:\n%s", option, value, r->err);
	/* the program never ran, and no trace was left */
	cr_assert_null(strstr(r->out, "count fib"), "%s", r->out);
	cr_assert(!file_exists(out));
	cleanup_dir(dir);
}

Test(functions, a_pattern_that_matches_nothing_is_an_error, .timeout = 60)
{
	struct proc_result r;
	char out[128];

	require_root("function tracer");
	run_refused("--functions", "fib,no_such_function_*", &r, out, sizeof(out));
	cr_assert(strstr(r.err, "no_such_function_*"), "the message names the pattern: %s", r.err);
}

Test(functions, kernel_functions_are_refused_in_one_line, .timeout = 60)
{
	struct proc_result r;
	char out[128];
	const char *line;

	require_root("function tracer");
	run_refused("--kernel-functions", "vfs_*", &r, out, sizeof(out));
	line = strstr(r.err, "fentry");
	cr_assert_not_null(line, "%s", r.err);
	while (line > r.err && line[-1] != '\n')
		line--;
	cr_assert(strstr(line, "kprobe") && strstr(line, "kprobe") < line + strcspn(line, "\n"),
		  "the line that names fentry names kprobes too: %s", r.err);
	cr_assert_eq(count_lines(r.err), 1, "one line: %s", r.err);
}

Test(functions, decode_rerenders_the_capture, .timeout = 180)
{
	char dir[64], capture_dir[128], capture[160], decoded[128], err[512];
	const char *args[] = { "--only", "fib,ops,jumps,signals,threads", NULL };
	struct proc_result r, d;
	struct fxt_trace *t, *u = NULL;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	snprintf(capture_dir, sizeof(capture_dir), "%s/work", dir);
	snprintf(capture, sizeof(capture), "%s/perf.data", capture_dir);
	snprintf(decoded, sizeof(decoded), "%s/decoded.fxt", dir);
	const char *options[] = { "--full-execution", "--working-directory", capture_dir, NULL };
	t = record(dir, options, args, &r);
	cr_assert(file_exists(capture), "the capture is kept in --working-directory");

	char *argv[] = { (char *)build_path("rearview"), "decode", capture, "-o", decoded, NULL };
	run_process(argv, 120, &d);
	cr_assert_eq(d.exit_code, 0, "rearview decode failed:\n%s", d.err);
	cr_assert_eq(fxt_read_file(decoded, &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(u->nr_spans, t->nr_spans, "decode: %zu spans, run: %zu", u->nr_spans,
		     t->nr_spans);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const char *name = t->spans[i].name;

		cr_assert_eq(fxt_count_spans(u, FXT_ANY, FXT_ANY, name),
			     fxt_count_spans(t, FXT_ANY, FXT_ANY, name),
			     "%s: %zu spans decoded, %zu in the run's trace", name,
			     fxt_count_spans(u, FXT_ANY, FXT_ANY, name),
			     fxt_count_spans(t, FXT_ANY, FXT_ANY, name));
	}
	assert_program_counts(u, &r, 15);

	/* an ordinary perf.data: perf script shows the records as bpf-output samples */
	char *script[] = { "/usr/bin/perf", "script", "-i", capture, NULL };
	run_process(script, 120, &d);
	cr_assert_eq(d.exit_code, 0, "perf script failed:\n%s", d.err);
	cr_assert(strstr(d.out, RV_FN_EVENT_NAME), "perf script shows no %s samples:\n%.2000s",
		  RV_FN_EVENT_NAME, d.out);
	fxt_trace_free(u);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* --- attach --- */

#define MAX_ADDRESSES 32

/* A running fncalls --wait GO_FILE, with its functions' addresses. */
struct waiting_target {
	pid_t pid;
	int out_fd, err_fd;
	char go_file[160];
	char names[MAX_ADDRESSES][32];
	uint64_t addresses[MAX_ADDRESSES];
	unsigned char first_bytes[MAX_ADDRESSES];
	size_t nr_addresses;
};

/* What the target has written so far (its stdout is a file whose offset it
 * shares, hence pread). */
static void peek_output(const struct waiting_target *w, char *buf, size_t size)
{
	ssize_t n = pread(w->out_fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
}

static unsigned char code_byte(pid_t pid, uint64_t address)
{
	char path[64];
	unsigned char byte = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "cannot open %s", path);
	cr_assert_eq(pread(fd, &byte, 1, (off_t)address), 1, "cannot read %s at 0x%llx", path,
		     (unsigned long long)address);
	close(fd);
	return byte;
}

static void start_waiting(const char *dir, const char *parts, struct waiting_target *w)
{
	char output[8192];

	memset(w, 0, sizeof(*w));
	snprintf(w->go_file, sizeof(w->go_file), "%s/go", dir);
	char *argv[] = { (char *)build_path("tests/targets/fncalls"),
			 "--wait",
			 w->go_file,
			 "--only",
			 (char *)parts,
			 NULL };
	w->pid = start_process(argv, &w->out_fd, &w->err_fd);
	cr_assert(wait_for_text(w->out_fd, "address tiny ", 10), "fncalls --wait did not start");
	peek_output(w, output, sizeof(output));
	for (const char *line = strstr(output, "address "); line && w->nr_addresses < MAX_ADDRESSES;
	     line = strstr(line + 1, "\naddress ")) {
		size_t i = w->nr_addresses;
		unsigned long long address;

		cr_assert_eq(
			sscanf(line + (*line == '\n'), "address %31s %llx", w->names[i], &address),
			2);
		w->addresses[i] = address;
		w->first_bytes[i] = code_byte(w->pid, address);
		w->nr_addresses++;
	}
	cr_assert_gt(w->nr_addresses, 10);
}

/* Whether a uprobe's breakpoint (int3) sits on the first instruction of
 * every counted function (rearview probes every function by default). */
static bool all_probed(const struct waiting_target *w)
{
	for (size_t i = 0; i < w->nr_addresses; i++)
		if (code_byte(w->pid, w->addresses[i]) != 0xcc)
			return false;
	return true;
}

static pid_t start_attach(const char *out, pid_t target, int *out_fd, int *err_fd)
{
	char pidtext[32];

	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "uprobe",
			 "--multi-thread",
			 "--full-execution",
			 "-o",
			 (char *)out,
			 NULL };
	return start_process(argv, out_fd, err_fd);
}

/* Waits until every function has its breakpoint, rearview says it has
 * attached them, and it waits for records (it arms its probes between the
 * two). */
static void wait_until_probed(const struct waiting_target *w, pid_t rearview, int err_fd)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int status;

	for (int waited = 0; !all_probed(w); waited += 20) {
		cr_assert_eq(waitpid(rearview, &status, WNOHANG), 0, "rearview attach exited");
		cr_assert_lt(waited, 60000, "the functions were not probed within 60 s");
		nanosleep(&pause, NULL);
	}
	cr_assert(wait_for_text(err_fd, "attached ", 60), "rearview attach never said it attached");
	cr_assert(wait_until_polling(rearview, 60), "rearview attach does not wait for records");
}

static void let_it_run(const struct waiting_target *w)
{
	int fd = open(w->go_file, O_WRONLY | O_CREAT, 0600);

	cr_assert_geq(fd, 0);
	close(fd);
}

Test(functions, attach_records_every_call_after_attaching, .timeout = 180)
{
	char dir[64], out[128], err[512];
	struct waiting_target w;
	struct proc_result target_r, r;
	struct fxt_trace *t = NULL;
	int out_fd, err_fd;
	pid_t rearview;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/attach.fxt", dir);
	start_waiting(dir, "fib,ops,jumps,signals,threads", &w);
	rearview = start_attach(out, w.pid, &out_fd, &err_fd);
	wait_until_probed(&w, rearview, err_fd);
	let_it_run(&w);
	finish_process(w.pid, w.out_fd, w.err_fd, 60, &target_r);
	cr_assert_eq(target_r.exit_code, 0, "fncalls failed under the probes:\n%s", target_r.err);
	/* rearview stops by itself when the process exits */
	finish_process(rearview, out_fd, err_fd, 60, &r);
	cr_assert(!r.timed_out, "rearview attach did not notice the exit:\n%s", r.err);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert_eq(fxt_read_file(out, &t, err, sizeof(err)), 0, "%s", err);
	assert_program_counts(t, &target_r, 15);
	assert_longjmp(t);
	assert_threads(t);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* No tracefs uprobe event of ours names the target's binary. */
static void assert_no_uprobe_events(void)
{
	char line[512];
	FILE *f = fopen("/sys/kernel/tracing/uprobe_events", "r");

	if (!f)
		f = fopen("/sys/kernel/debug/tracing/uprobe_events", "r");
	if (!f)
		return; /* no tracefs: no tracefs events either */
	while (fgets(line, sizeof(line), f))
		cr_assert_null(strstr(line, "fncalls"), "a uprobe event is left behind: %s", line);
	fclose(f);
}

Test(functions, detaching_leaves_the_process_running_and_unprobed, .timeout = 180)
{
	char dir[64], out[128];
	struct waiting_target w;
	struct proc_result target_r, r;
	int out_fd, err_fd, status;
	pid_t rearview;

	require_root("function tracer");
	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/attach.fxt", dir);
	start_waiting(dir, "fib,ops,jumps,signals,threads", &w);
	rearview = start_attach(out, w.pid, &out_fd, &err_fd);
	wait_until_probed(&w, rearview, err_fd);
	kill(rearview, SIGINT);
	finish_process(rearview, out_fd, err_fd, 60, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(file_exists(out), "no trace after Ctrl-C");

	/* still waiting, every breakpoint gone, the code as it was */
	cr_assert_eq(waitpid(w.pid, &status, WNOHANG), 0, "the target exited");
	for (size_t i = 0; i < w.nr_addresses; i++)
		cr_assert_eq(code_byte(w.pid, w.addresses[i]), w.first_bytes[i],
			     "%s still starts with 0x%02x, not its own 0x%02x", w.names[i],
			     code_byte(w.pid, w.addresses[i]), w.first_bytes[i]);
	assert_no_uprobe_events();

	/* and it runs on, unharmed */
	let_it_run(&w);
	finish_process(w.pid, w.out_fd, w.err_fd, 60, &target_r);
	cr_assert_eq(target_r.exit_code, 0, "fncalls failed after the detach:\n%s", target_r.err);
	cr_assert_eq(program_value(target_r.out, "count fib"), 465);
	cr_assert_eq(program_value(target_r.out, "entered on_signal"), 3);
	cleanup_dir(dir);
}
