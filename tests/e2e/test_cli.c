/* test_cli.c: the command line's forms and the output's destinations, end to
 * end with the sampling backend: --duration, attach -- COMMAND, duplicate
 * PIDs, run PROG -- ARGS, -o - on a pipe, .fxt.zst, the size on the "wrote"
 * line, and an output that cannot be written refused before anything runs. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "fxt_reader.h"
#include "harness.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits (5 ms steps) until pid has exited, without reaping it; the time it
 * was seen gone, or -1 after timeout_s. */
static double exit_time(pid_t pid, int timeout_s)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	double until = now_s() + timeout_s;

	while (now_s() < until) {
		siginfo_t info = { 0 };

		if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    info.si_pid == pid)
			return now_s();
		nanosleep(&pause, NULL);
	}
	return -1;
}

/* The test's tests/targets/forever, killed by the test's .fini whether its
 * assertions held or not (a target left running would keep the runner's
 * output open). */
static pid_t forever_pid;
static int forever_pipe = -1;

static pid_t start_target(void)
{
	forever_pid = start_forever(&forever_pipe);
	return forever_pid;
}

static void stop_target(void)
{
	int status;

	if (forever_pid > 0) {
		kill(forever_pid, SIGKILL);
		waitpid(forever_pid, &status, 0);
	}
	forever_pid = 0;
	if (forever_pipe >= 0)
		close(forever_pipe);
	forever_pipe = -1;
}

/* The size the "wrote" line gives, as the range of byte counts its rounding
 * covers ("1.2 KiB": 1178 to 1280 bytes). */
static void wrote_size(const char *err, const char *after, double *low, double *high)
{
	const char *line = strstr(err, after);
	double value;
	char number[32], unit[8];

	cr_assert_not_null(line, "no '%s' in:\n%s", after, err);
	line += strlen(after);
	cr_assert_eq(sscanf(line, " (%31[0-9.] %7[a-zA-Z]", number, unit), 2, "wrote line: %.80s",
		     line);
	value = strtod(number, NULL);
	if (!strcmp(unit, "bytes")) {
		*low = *high = value;
	} else {
		double scale = !strcmp(unit, "KiB") ? 1024.0 : 1048576.0;
		double half = strchr(number, '.') ? 0.05 : 0.5;

		cr_assert(!strcmp(unit, "KiB") || !strcmp(unit, "MiB"), "unit %s", unit);
		*low = (value - half) * scale;
		*high = (value + half) * scale;
	}
}

/* A .zst file decompressed with libzstd, NUL-terminated (malloc'd). */
static char *unzstd_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	static unsigned char in[1 << 16];
	size_t cap = 1 << 16, used = 0, n;
	char *text = malloc(cap + 1);
	ZSTD_DStream *zs = ZSTD_createDStream();
	size_t left = 0;

	cr_assert_not_null(f, "%s", path);
	while ((n = fread(in, 1, sizeof(in), f)) > 0) {
		ZSTD_inBuffer zin = { in, n, 0 };

		while (zin.pos < zin.size) {
			ZSTD_outBuffer zout;

			if (cap - used < 4096)
				text = realloc(text, (cap *= 2) + 1);
			zout = (ZSTD_outBuffer){ text + used, cap - used, 0 };
			left = ZSTD_decompressStream(zs, &zout, &zin);
			cr_assert(!ZSTD_isError(left), "%s: %s", path, ZSTD_getErrorName(left));
			used += zout.pos;
		}
	}
	cr_assert_eq(left, 0, "%s: the zstd frame is cut short", path);
	fclose(f);
	ZSTD_freeDStream(zs);
	text[used] = '\0';
	return text;
}

/* How long after the recording stopped rearview may take to symbolize and
 * write the trace and exit: 0.55 to 0.7 s here for 1.5 s of samples (the
 * code before --duration took as long), so 1.5 s; under AddressSanitizer
 * (make check-asan) this runs many times slower (seen 1.6 to 3.7 s under
 * load), so the bound there only catches a run that does not end. */
#ifdef __SANITIZE_ADDRESS__
#define WRITE_ALLOWANCE_S 10.0
#else
#define WRITE_ALLOWANCE_S 1.5
#endif

static off_t file_size(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_size;
}

Test(cli, attach_duration_ends_the_recording_on_time, .timeout = 90, .fini = stop_target)
{
	char dir[64], out[128], pidtext[32], errbuf[256];
	struct proc_result r;
	struct fxt_trace *t = NULL;
	int out_fd, err_fd, status;
	pid_t target = start_target(), rearview;
	double started, stopped, ended;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/duration.fxt", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "sample",
			 "--duration",
			 "1500ms",
			 "-v",
			 "-o",
			 out,
			 NULL };
	rearview = start_process(argv, &out_fd, &err_fd);
	/* the duration counts from here: the events are enabled */
	cr_assert_eq(wait_for_output(rearview, err_fd, "recording 1 process", 30), 1,
		     "attach did not start recording");
	started = now_s();
	/* the recording stops at the deadline (the note comes then) */
	cr_assert_eq(wait_for_output(rearview, err_fd, "--duration is up", 30), 1,
		     "attach --duration 1500ms did not stop");
	stopped = now_s();
	ended = exit_time(rearview, 30);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert_gt(ended, 0, "attach --duration 1500ms did not end:\n%s", r.err);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	/* seen 0-20 ms late by wait_for_output: the lower bound allows for it */
	cr_assert_geq(stopped - started, 1.5 - 0.05, "stopped after %.3f s, before --duration",
		      stopped - started);
	cr_assert_leq(stopped - started, 1.5 + 0.5, "stopped %.3f s after recording began",
		      stopped - started);
	cr_assert_leq(ended - stopped, WRITE_ALLOWANCE_S,
		      "exited %.3f s after the recording stopped", ended - stopped);

	cr_assert_eq(fxt_read_file(out, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, (uint64_t)target, "busy_loop_body"), 0);
	fxt_trace_free(t);
	cr_assert_eq(waitpid(target, &status, WNOHANG), 0, "the target did not run on");
	cleanup_dir(dir);
}

Test(cli, attach_duration_ends_early_when_the_process_exits, .timeout = 90, .fini = stop_target)
{
	char dir[64], out[128], pidtext[32];
	struct proc_result r;
	int out_fd, err_fd;
	pid_t target = start_target(), rearview;
	double killed, ended;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/early.fxt", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "sample",
			 "--duration",
			 "60s",
			 "-v",
			 "-o",
			 out,
			 NULL };
	rearview = start_process(argv, &out_fd, &err_fd);
	cr_assert_eq(wait_for_output(rearview, err_fd, "recording 1 process", 30), 1);
	stop_target();
	killed = now_s();
	ended = exit_time(rearview, 30);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert_gt(ended, 0, "attach did not notice the exit:\n%s", r.err);
	cr_assert_lt(ended - killed, 10, "took %.1f s", ended - killed);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert(file_exists(out));
	cleanup_dir(dir);
}

Test(cli, run_duration_writes_the_trace_and_waits_for_the_program, .timeout = 90)
{
	char dir[64], out[128], errbuf[256];
	struct proc_result r;
	struct fxt_trace *t = NULL;
	int out_fd, err_fd;
	pid_t rearview;
	struct stat st;
	double started, wrote, ended;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/run.fxt", dir);
	char *argv[] = { (char *)build_path("rearview"),
			 "run",
			 "--backend",
			 "sample",
			 "--duration",
			 "500ms",
			 "-v",
			 "-o",
			 out,
			 "--",
			 (char *)built_target("forever"),
			 "exit-after",
			 "2500",
			 NULL };
	rearview = start_process(argv, &out_fd, &err_fd);
	cr_assert_eq(wait_for_output(rearview, err_fd, "recording 1 process", 30), 1);
	started = now_s();
	cr_assert_eq(wait_for_output(rearview, err_fd, "--duration is up", 30), 1,
		     "the recording did not stop");
	wrote = now_s();
	cr_assert_eq(wait_for_output(rearview, err_fd, "rearview: wrote ", 30), 1,
		     "no trace written");
	cr_assert_eq(stat(out, &st), 0, "the trace is in place once said");
	ended = exit_time(rearview, 30);
	finish_process(rearview, out_fd, err_fd, 30, &r);
	cr_assert_geq(wrote - started, 0.5 - 0.05, "stopped %.3f s after recording began",
		      wrote - started);
	cr_assert_leq(wrote - started, 0.5 + 0.5, "stopped %.3f s after recording began",
		      wrote - started);
	cr_assert_eq(r.exit_code, 3, "rearview exits with the program's status: %d\n%s",
		     r.exit_code, r.err);
	cr_assert_gt(ended - wrote, 0.5, "rearview did not wait for the program");
	cr_assert(strstr(r.err, "the program runs on"), "%s", r.err);
	cr_assert_eq(fxt_read_file(out, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "busy_loop_body"), 0);
	fxt_trace_free(t);
	cleanup_dir(dir);
}

Test(cli, attach_records_while_the_command_runs, .timeout = 90, .fini = stop_target)
{
	char dir[64], out[128], pidtext[32], errbuf[256];
	struct proc_result r;
	struct fxt_trace *t = NULL;
	int status, command_pid = 0;
	pid_t target = start_target();

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/cmd.fxt", dir);
	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	/* COMMAND: forever again, which prints its pid, works 800 ms and exits 3 */
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "sample",
			 "-o",
			 out,
			 "--",
			 (char *)built_target("forever"),
			 "exit-after",
			 "800",
			 NULL };
	run_process(argv, 60, &r);
	cr_assert(!r.timed_out, "attach -- COMMAND did not end:\n%s", r.err);
	cr_assert_eq(r.exit_code, 3, "rearview exits with COMMAND's status: %d\n%s", r.exit_code,
		     r.err);
	cr_assert(strstr(r.err, "the command exited"), "%s", r.err);
	cr_assert_eq(sscanf(r.out, "%d ready", &command_pid), 1,
		     "COMMAND's output is its own: '%s'", r.out);
	cr_assert_neq(command_pid, target);

	cr_assert_eq(fxt_read_file(out, &t, errbuf, sizeof(errbuf)), 0, "%s", errbuf);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, (uint64_t)target, "busy_loop_body"), 0,
		     "the attached process is recorded");
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, (uint64_t)command_pid, NULL), 0,
		     "COMMAND itself is not recorded");
	/* recorded while COMMAND ran (800 ms of its CPU time): not much longer */
	{
		uint64_t first, last;

		fxt_spans_extent(t, &first, &last);
		cr_assert_gt(last, first);
		cr_assert_lt(last - first, 20ull * 1000000000ull, "the trace covers %.1f s",
			     (double)(last - first) / 1e9);
	}
	fxt_trace_free(t);
	cr_assert_eq(waitpid(target, &status, WNOHANG), 0, "the attached process runs on");
	cleanup_dir(dir);
}

Test(cli, attach_refuses_a_pid_given_twice, .timeout = 30, .fini = stop_target)
{
	char dir[64], out[128], pids[64];
	struct proc_result r;
	pid_t target = start_target();

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/twice.fxt", dir);
	snprintf(pids, sizeof(pids), "%d,%d", (int)target, (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pids,
			 "--backend",
			 "sample",
			 "-o",
			 out,
			 NULL };
	run_process(argv, 20, &r);
	cr_assert_eq(r.exit_code, 2, "a usage error: %s", r.err);
	cr_assert(strstr(r.err, "given twice"), "%s", r.err);
	cr_assert(!file_exists(out));
	cleanup_dir(dir);
}

Test(cli, run_prog_double_dash_args_passes_the_args_alone, .timeout = 60)
{
	char dir[64], out[128];
	struct proc_result r;

	make_test_dir(dir, sizeof(dir));
	snprintf(out, sizeof(out), "%s/echo.fxt", dir);
	/* magic-trace's form: the -- after the program is not the program's */
	char *magic[] = { (char *)build_path("rearview"),
			  "run",
			  "--backend",
			  "sample",
			  "-o",
			  out,
			  "echo",
			  "--",
			  "hello",
			  "world",
			  NULL };
	run_process(magic, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "hello world\n");
	cr_assert(file_exists(out));

	/* -- before the program: everything after it is the program's */
	char *plain[] = { (char *)build_path("rearview"),
			  "run",
			  "--backend",
			  "sample",
			  "-o",
			  out,
			  "--",
			  "echo",
			  "--",
			  "x",
			  NULL };
	run_process(plain, 30, &r);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "-- x\n");
	cleanup_dir(dir);
}

/* rearview with its standard output on a pipe, read whole as it comes;
 * *data (malloc'd) and *size what came through it. */
static void run_to_pipe(char *const argv[], int timeout_s, struct proc_result *r,
			unsigned char **data, size_t *size)
{
	int fds[2], out_fd = memfd_create("out", MFD_CLOEXEC), err_fd = memfd_create("err", 0);
	size_t cap = 1 << 16;
	double until = now_s() + timeout_s;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	cr_assert_geq(out_fd, 0);
	cr_assert_geq(err_fd, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		default_stop_signals();
		close(fds[0]);
		dup2(open("/dev/null", O_RDONLY), 0);
		dup2(fds[1], 1);
		dup2(err_fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	close(fds[1]);
	*data = malloc(cap);
	*size = 0;
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		ssize_t n;

		if (now_s() > until || poll(&p, 1, 1000) < 0)
			break;
		if (!p.revents)
			continue;
		if (*size == cap)
			*data = realloc(*data, cap *= 2);
		n = read(fds[0], *data + *size, cap - *size);
		if (n <= 0)
			break;
		*size += (size_t)n;
	}
	close(fds[0]);
	finish_process(pid, out_fd, err_fd, timeout_s, r);
}

Test(cli, output_dash_writes_the_trace_to_a_pipe, .timeout = 90, .fini = stop_target)
{
	char pidtext[32], errbuf[256];
	struct proc_result r;
	struct fxt_trace *t = NULL;
	unsigned char *data;
	size_t size;
	pid_t target = start_target();
	double low, high;

	snprintf(pidtext, sizeof(pidtext), "%d", (int)target);
	char *argv[] = { (char *)build_path("rearview"),
			 "attach",
			 "-p",
			 pidtext,
			 "--backend",
			 "sample",
			 "--duration",
			 "500ms",
			 "-o",
			 "-",
			 NULL };
	run_to_pipe(argv, 60, &r, &data, &size);
	cr_assert(!r.timed_out, "%s", r.err);
	cr_assert_eq(r.exit_code, 0, "%s", r.err);
	cr_assert_eq(fxt_read_buffer(data, size, &t, errbuf, sizeof(errbuf)), 0,
		     "what came through the pipe is not a trace: %s", errbuf);
	cr_assert_gt(fxt_count_spans(t, FXT_ANY, (uint64_t)target, "busy_loop_body"), 0);
	fxt_trace_free(t);
	wrote_size(r.err, "wrote the trace to standard output", &low, &high);
	cr_assert((double)size >= low && (double)size <= high,
		  "%zu bytes came, the wrote line says %.0f to %.0f", size, low, high);
	free(data);
}

Test(cli, output_dash_is_refused_where_it_cannot_work, .timeout = 30)
{
	struct proc_result r;
	char *run_argv[] = { (char *)build_path("rearview"),
			     "run",
			     "--backend",
			     "sample",
			     "-o",
			     "-",
			     "echo",
			     "x",
			     NULL };

	/* the program's own output would go into the trace */
	run_process(run_argv, 20, &r);
	cr_assert_eq(r.exit_code, 2, "a usage error: %s", r.err);
	cr_assert(strstr(r.err, "COMMAND writes to as well"), "%s", r.err);
	cr_assert_str_eq(r.out, "", "echo did not run");
}

Test(cli, zst_output_reads_back_and_the_wrote_line_gives_the_file_size, .timeout = 120)
{
	static const char *const endings[] = { "fxt.zst", "fxt.gz", "json.zst", "fxt" };
	char dir[64], out[128], errbuf[256], exact[192];

	make_test_dir(dir, sizeof(dir));
	for (size_t i = 0; i < sizeof(endings) / sizeof(endings[0]); i++) {
		struct proc_result r;
		double low, high;
		off_t size;

		snprintf(out, sizeof(out), "%s/t.%s", dir, endings[i]);
		char *argv[] = { (char *)build_path("rearview"),
				 "run",
				 "--backend",
				 "sample",
				 "-v",
				 "-o",
				 out,
				 "--",
				 (char *)built_target("forever"),
				 "exit-after",
				 "300",
				 NULL };
		run_process(argv, 60, &r);
		cr_assert_eq(r.exit_code, 3, "%s: %s", endings[i], r.err);
		size = file_size(out);
		snprintf(exact, sizeof(exact), "rearview: wrote %s", out);
		wrote_size(r.err, exact, &low, &high);
		cr_assert((double)size >= low && (double)size <= high,
			  "%s: the file has %lld bytes, the wrote line says %.0f to %.0f",
			  endings[i], (long long)size, low, high);
		/* -v gives the exact count */
		snprintf(exact, sizeof(exact), "wrote '%s': ", out);
		cr_assert(strstr(r.err, exact), "%s", r.err);
		{
			unsigned long long spans, instants, bytes;

			cr_assert_eq(sscanf(strstr(r.err, exact) + strlen(exact),
					    "%llu spans, %llu instants, %llu bytes", &spans,
					    &instants, &bytes),
				     3);
			cr_assert_eq(bytes, (unsigned long long)size, "%s", endings[i]);
		}
		if (strstr(endings[i], "fxt")) {
			struct fxt_trace *t = NULL;

			cr_assert_eq(fxt_read_file(out, &t, errbuf, sizeof(errbuf)), 0, "%s: %s",
				     endings[i], errbuf);
			cr_assert_eq(t->compressed, strcmp(endings[i], "fxt") != 0, "%s",
				     endings[i]);
			cr_assert_gt(fxt_count_spans(t, FXT_ANY, FXT_ANY, "busy_loop_body"), 0);
			fxt_trace_free(t);
		} else {
			char *json = unzstd_file(out);

			cr_assert(strstr(json, "\"busy_loop_body\""), "%.200s", json);
			free(json);
		}
	}
	cleanup_dir(dir);
}

Test(cli, an_output_that_cannot_be_written_is_refused_before_the_program_runs, .timeout = 30)
{
	struct proc_result r;
	char *argv[] = { (char *)build_path("rearview"),	"run",	"--backend", "sample", "-o",
			 "/nonexistent-rearview-dir/t.fxt.zst", "echo", "ran",	     NULL };

	run_process(argv, 20, &r);
	cr_assert_eq(r.exit_code, 1, "%s", r.err);
	cr_assert(strstr(r.err, "cannot write the trace to '/nonexistent-rearview-dir/t.fxt.zst'"),
		  "%s", r.err);
	cr_assert_str_eq(r.out, "", "the program ran: %s", r.out);
}
