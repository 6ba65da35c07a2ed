/* test_run.c: `rearview run` end to end, on target programs that count their
 * own calls: time ratios, threads, output formats, the capture, exit status. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fxt_reader.h"
#include "harness.h"

static struct fxt_trace *read_trace(const char *path)
{
	struct fxt_trace *trace = NULL;
	char err[512];

	cr_assert_eq(fxt_read_file(path, &trace, err, sizeof(err)), 0, "%s: %s", path, err);
	return trace;
}

static bool has_ancestor(const struct fxt_trace *t, const struct fxt_span *s, const char *name)
{
	for (const struct fxt_span *p = fxt_span_parent(t, s); p; p = fxt_span_parent(t, p))
		if (!strcmp(p->name, name))
			return true;
	return false;
}

/* Every span called `name` sits somewhere under a span called `ancestor`. */
static void assert_all_under(const struct fxt_trace *t, const char *name, const char *ancestor)
{
	size_t n = fxt_count_spans(t, FXT_ANY, FXT_ANY, name);

	cr_assert_gt(n, 0, "no span named %s", name);
	for (size_t i = 0; i < n; i++) {
		const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, name, i);

		cr_assert(has_ancestor(t, s, ancestor), "%s at %llu ns is not under %s", name,
			  (unsigned long long)s->begin_ns, ancestor);
	}
}

static void check_ratio(const char *callgraph)
{
	char dir[64], out[128], *argv[16];
	struct proc_result r;
	struct fxt_trace *t;
	double ratio;
	uint64_t long_ns, short_ns;
	int a = 0;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/ratio.fxt", dir);
	argv[a++] = (char *)build_path("rearview");
	argv[a++] = "run";
	argv[a++] = "-o";
	argv[a++] = out;
	argv[a++] = "--full-execution";
	argv[a++] = "--callgraph-mode";
	argv[a++] = (char *)callgraph;
	argv[a++] = "--";
	argv[a++] = (char *)build_path("tests/targets/ratio");
	argv[a++] = "150";
	argv[a++] = "1500000";
	argv[a] = NULL;
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "rearview failed: %s", r.err);
	cr_assert(strstr(r.out, "work_long calls: 150"), "the program's stdout passes through: %s",
		  r.out);
	cr_assert(strstr(r.err, "the trace covers"), "a summary is printed: %s", r.err);
	cr_assert(strstr(r.err, "ui.perfetto.dev"), "it says how to open the trace");
	cr_assert(strstr(r.err, out), "it says where the trace is");

	t = read_trace(out);
	long_ns = fxt_sum_durations_ns(t, FXT_ANY, FXT_ANY, "work_long");
	short_ns = fxt_sum_durations_ns(t, FXT_ANY, FXT_ANY, "work_short");
	cr_assert_gt(short_ns, 0);
	ratio = (double)long_ns / (double)short_ns;
	cr_assert(ratio > 1.5 && ratio < 2.5, "work_long/work_short = %.3f (%llu / %llu ns)", ratio,
		  (unsigned long long)long_ns, (unsigned long long)short_ns);
	assert_all_under(t, "work_long", "main");
	assert_all_under(t, "work_short", "main");
	cr_assert_eq(t->nr_threads, 1, "one track: the main thread");
	cr_assert(strstr(fxt_thread_name(t, t->threads[0].pid, t->threads[0].koid), "ratio ["),
		  "the track is named after the program: %s", t->threads[0].name);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(run, time_ratio_with_frame_pointers, .timeout = 180)
{
	check_ratio("fp");
}

Test(run, time_ratio_with_dwarf_unwinding, .timeout = 180)
{
	check_ratio("dwarf");
}

Test(run, four_threads_give_four_tracks, .timeout = 180)
{
	char dir[64], out[128];
	struct proc_result r;
	struct fxt_trace *t;
	int seen[4] = { 0 };

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/threads.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--multi-thread",
			 "--full-execution",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/threads4"),
			 "100",
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	t = read_trace(out);
	for (int w = 0; w < 4; w++) {
		char name[32], line[64];
		const struct fxt_span *s;
		const char *p;
		unsigned long tid;

		snprintf(name, sizeof(name), "worker_%d", w);
		snprintf(line, sizeof(line), "worker_%d tid ", w);
		p = strstr(r.out, line);
		cr_assert(p, "the program reports its threads: %s", r.out);
		tid = strtoul(p + strlen(line), NULL, 10);
		cr_assert_gt(fxt_count_spans(t, FXT_ANY, tid, name), 0, "no %s on thread %lu", name,
			     tid);
		/* That thread runs its own worker and no other. */
		for (int other = 0; other < 4; other++) {
			char other_name[32];

			snprintf(other_name, sizeof(other_name), "worker_%d", other);
			if (other != w)
				cr_assert_eq(fxt_count_spans(t, FXT_ANY, tid, other_name), 0);
		}
		s = fxt_find_span(t, FXT_ANY, tid, name, 0);
		cr_assert(strstr(fxt_thread_name(t, s->pid, tid), "threads4 ["));
		seen[w] = 1;
	}
	cr_assert(seen[0] && seen[1] && seen[2] && seen[3]);
	cr_assert_eq(t->nr_processes, 1);
	cr_assert_str_eq(t->processes[0].name, "threads4", "the process is named");
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(run, main_thread_only_without_multi_thread, .timeout = 120)
{
	char dir[64], out[128];
	struct proc_result r;
	struct fxt_trace *t;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/main.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/threads4"),
			 "40",
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	t = read_trace(out);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "worker_0"), 0,
		     "worker threads are not recorded without --multi-thread");
	cr_assert_leq(t->nr_threads, 1);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(run, json_and_gzip_outputs, .timeout = 120)
{
	const char *names[] = { "t.json", "t.json.gz", "t.fxt.gz" };

	for (size_t i = 0; i < 3; i++) {
		char dir[64], out[128];
		struct proc_result r;

		make_test_dir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/%s", dir, names[i]);
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "--callgraph-mode",
				 "fp",
				 "-o",
				 out,
				 "--",
				 (char *)build_path("tests/targets/ratio"),
				 "40",
				 "1000000",
				 NULL };
		run_process(argv, 120, &r);
		cr_assert_eq(r.exit_code, 0, "%s: %s", names[i], r.err);
		if (strstr(names[i], ".json")) {
			json_error_t jerr;
			json_t *root = json_load_file(out, 0, &jerr);
			size_t index, found = 0;
			json_t *ev;

			if (!root && strstr(names[i], ".gz")) {
				char cmd[256];

				snprintf(cmd, sizeof(cmd), "gzip -dc %s > %s/plain.json", out, dir);
				cr_assert_eq(system(cmd), 0);
				snprintf(out, sizeof(out), "%s/plain.json", dir);
				root = json_load_file(out, 0, &jerr);
			}
			cr_assert(root, "%s is not JSON: %s (line %d)", names[i], jerr.text,
				  jerr.line);
			json_array_foreach(json_object_get(root, "traceEvents"), index, ev)
			{
				const char *name = json_string_value(json_object_get(ev, "name"));
				const char *ph = json_string_value(json_object_get(ev, "ph"));

				if (name && ph && !strcmp(name, "work_long") && !strcmp(ph, "X"))
					found++;
			}
			cr_assert_gt(found, 0, "no work_long span in %s", names[i]);
			json_decref(root);
		} else {
			struct fxt_trace *t = read_trace(out);

			cr_assert(t->compressed);
			cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work_long"), 0);
			fxt_trace_free(t);
		}
		cleanup_dir(dir);
	}
}

Test(run, perf_report_opens_the_capture, .timeout = 180)
{
	char dir[64], out[128], capture[128];
	struct proc_result r;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	snprintf(capture, sizeof(capture), "%s/work", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--callgraph-mode",
			 "fp",
			 "--working-directory",
			 capture,
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/ratio"),
			 "60",
			 "1000000",
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	strcat(capture, "/perf.data");
	cr_assert(file_exists(capture), "the capture is kept in --working-directory");
	cr_assert(strstr(r.err, capture), "the summary says where the capture is: %s", r.err);

	char *report[] = { "/usr/bin/perf", "report", "-i",  capture,
			   "--stdio",	    "--sort", "sym", NULL };
	run_process(report, 120, &r);
	cr_assert_eq(r.exit_code, 0, "perf report failed: %s", r.err);
	cr_assert(strstr(r.out, "work_long"), "perf report shows the samples: %.2000s", r.out);
	cr_assert(strstr(r.out, "cpu-clock") || strstr(r.out, "cycles"));
	cleanup_dir(dir);
}

Test(run, exits_with_the_programs_status, .timeout = 60)
{
	char dir[64], out[128];
	struct proc_result r;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/forever"),
			 "exit-after",
			 "300",
			 NULL };
	run_process(argv, 60, &r);
	cr_assert_eq(r.exit_code, 3, "%s", r.err);
	cr_assert(file_exists(out), "a trace is written even when the program fails");
	cleanup_dir(dir);
}

Test(run, flight_recorder_keeps_only_the_end, .timeout = 120)
{
	char dir[64], out[128];
	struct proc_result r;
	struct fxt_trace *t;
	uint64_t last_end = 0, first_begin = UINT64_MAX;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	/* About 1.5 s of work, and room for a few hundred samples. */
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--callgraph-mode",
			 "fp",
			 "--snapshot-size",
			 "64K",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/ratio"),
			 "300",
			 "1500000",
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	t = read_trace(out);
	for (size_t i = 0; i < t->nr_spans; i++) {
		if (t->spans[i].begin_ns < first_begin)
			first_begin = t->spans[i].begin_ns;
		if (t->spans[i].end_ns > last_end)
			last_end = t->spans[i].end_ns;
	}
	cr_assert_gt(last_end, 0);
	cr_assert_lt(last_end - first_begin, 800000000ull,
		     "a 64K flight recorder keeps well under the whole 1.5 s run (%llu ns)",
		     (unsigned long long)(last_end - first_begin));
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "work_long"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(run, kernel_frames_nest_under_the_caller, .timeout = 120)
{
	char dir[64], out[128];
	struct proc_result r;
	struct fxt_trace *t;
	size_t kernel_spans = 0;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/t.fxt", dir);
	/* DWARF unwinding: libc's read() has no frame pointer, so a frame-pointer
	 * walk from the kernel would skip read_zeros. */
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--trace-include-kernel",
			 "--callgraph-mode",
			 "dwarf",
			 "--full-execution",
			 "-o",
			 out,
			 "--",
			 (char *)build_path("tests/targets/syscalls"),
			 "3000",
			 NULL };
	run_process(argv, 120, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	t = read_trace(out);
	for (size_t i = 0; i < t->nr_spans; i++) {
		const struct fxt_span *s = &t->spans[i];

		/* The kernel's read path, under the user function that called read(). */
		if ((strstr(s->name, "sys_read") || strstr(s->name, "vfs_read")) &&
		    has_ancestor(t, s, "read_zeros"))
			kernel_spans++;
	}
	cr_assert_gt(kernel_spans, 0, "no kernel read spans under read_zeros");
	{
		struct stat st;

		cr_assert_eq(stat(out, &st), 0);
		cr_assert_eq(st.st_mode & 0777, 0600, "a trace with kernel data is private: %o",
			     st.st_mode & 0777);
	}
	fxt_trace_free(t);
	cleanup_dir(dir);
}

/* The target's pid, from the "PID ready" line it printed into fd (its
 * output file, shared with rearview's), once it is there. */
static pid_t target_ready(pid_t rearview, int fd)
{
	char text[4096];
	const char *ready;
	ssize_t n;

	cr_assert_eq(wait_for_output(rearview, fd, " ready\n", 30), 1,
		     "the target did not start under rearview run");
	n = pread(fd, text, sizeof(text) - 1, 0);
	text[n > 0 ? n : 0] = '\0';
	ready = strstr(text, " ready\n");
	cr_assert_not_null(ready);
	while (ready > text && ready[-1] != '\n')
		ready--;
	return (pid_t)atoi(ready);
}

/* Ctrl-C at any moment of the start, the window between rearview's fork and
 * the program's exec included: the program never dies as rearview's code
 * (which said "ended before it started"); it gets the signal once it runs,
 * and rearview exits with its status and a valid trace. */
Test(run, ctrl_c_during_the_start_is_passed_to_the_program, .timeout = 120)
{
	for (int delay_ms = 0; delay_ms <= 50; delay_ms += 5) {
		char dir[64], out[128];
		struct proc_result r;
		struct fxt_trace *t;
		int out_fd, err_fd;
		pid_t pid;

		make_test_dir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/t.fxt", dir);
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "-o",
				 out,
				 "--",
				 (char *)build_path("tests/targets/forever"),
				 NULL };
		pid = start_process(argv, &out_fd, &err_fd);
		usleep((useconds_t)delay_ms * 1000);
		kill(-pid, SIGINT);
		finish_process(pid, out_fd, err_fd, 30, &r);
		cr_assert(!r.timed_out, "%d ms: rearview did not stop at Ctrl-C: %s", delay_ms,
			  r.err);
		cr_assert_eq(r.exit_code, 128 + SIGINT, "%d ms: exit %d: %s", delay_ms, r.exit_code,
			     r.err);
		cr_assert_null(strstr(r.err, "before it started"), "%d ms: %s", delay_ms, r.err);
		/* (a Ctrl-C before rearview blocked it ends rearview as any
		 * program, before it started the program: no trace then) */
		if (access(out, F_OK) == 0) {
			t = read_trace(out);
			fxt_trace_free(t);
		} else {
			cr_assert_null(strstr(r.err, "recording"), "%d ms: recorded, no trace: %s",
				       delay_ms, r.err);
		}
		cleanup_dir(dir);
	}
}

/* Waits (up to 10 s) until pid's blocked signals include SIGINT. */
static bool blocks_sigint(pid_t pid)
{
	char path[64], line[256];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		unsigned long long mask = 0;
		bool found = false;

		if (!f)
			return false;
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, "SigBlk: %llx", &mask) == 1;
		fclose(f);
		if (found && (mask & (1ull << (SIGINT - 1))))
			return true;
		usleep(1000);
	}
	return false;
}

Test(run, ctrl_c_mid_run_writes_a_valid_trace, .timeout = 60)
{
	/* Early: as soon as rearview blocks the stop signals (its set-up:
	 * checks, BPF, perf events, still to come), which is the earliest a
	 * Ctrl-C can be its own to handle (before that, the default action
	 * ends any process; under ASan and load, start-up alone takes longer
	 * than a fixed 60 ms). Late: once the program has run 100 ms under
	 * the recording. */
	for (int late = 0; late < 2; late++) {
		char dir[64], out[128];
		struct proc_result r;
		struct fxt_trace *t;
		int out_fd, err_fd;
		pid_t pid;

		make_test_dir(dir, sizeof(dir));
		snprintf(out, sizeof(out), "%s/t.fxt", dir);
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "-o",
				 out,
				 "--",
				 (char *)build_path("tests/targets/forever"),
				 NULL };
		pid = start_process(argv, &out_fd, &err_fd);
		if (late)
			cr_assert(wait_for_cpu(target_ready(pid, out_fd), 100, 30),
				  "the target did not run");
		else
			cr_assert(blocks_sigint(pid), "rearview never blocked SIGINT");
		kill(-pid, SIGINT); /* as the terminal does: the whole process group */
		finish_process(pid, out_fd, err_fd, 30, &r);
		cr_assert(!r.timed_out, "rearview did not stop at Ctrl-C: %s", r.err);
		cr_assert_eq(r.exit_code, 128 + SIGINT,
			     "the exit status is the interrupted program's (%d): %s", r.exit_code,
			     r.err);
		t = read_trace(out);
		if (late)
			cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "busy_loop_body"), 0,
				     "%s", r.err);
		fxt_trace_free(t);
		cleanup_dir(dir);
	}
}
