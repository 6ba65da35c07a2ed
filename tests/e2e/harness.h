/* harness.h: running the real rearview binary and the target programs from
 * end-to-end tests, with their output captured and a time limit, and waiting
 * on what they do (a line they print, CPU time they use) rather than for a
 * while.
 *
 * Not here: the build directory, CI and tools (test_env.h, included), scratch
 * files (test_files.h).
 */
#ifndef RV_TESTS_HARNESS_H
#define RV_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fxt_reader.h"
#include "test_env.h"

struct proc_result {
	int exit_code; /* exit status, or 128+signal */
	bool timed_out;
	char out[65536]; /* stdout, truncated */
	char err[65536]; /* stderr, truncated */
};

/* A fresh temporary directory for one test, removed by cleanup_dir. */
void make_test_dir(char *out, size_t size);
void cleanup_dir(const char *dir);

/* Starts argv (NULL-terminated) in its own process group with stdout and
 * stderr to temporary files. */
pid_t start_process(char *const argv[], int *out_fd, int *err_fd);

/* In a child about to exec: SIGINT, SIGQUIT and SIGTERM as a terminal's
 * programs have them, even when the tests run in a background job (which
 * ignores SIGINT and SIGQUIT, and its programs inherit that). */
void default_stop_signals(void);

/* Same, with stdin_text as the process's standard input. */
pid_t start_process_input(char *const argv[], const char *stdin_text, int *out_fd, int *err_fd);

/* Same, with a pipe as its standard input: *in_write is the write end, for
 * answers written after reading what it asked (closing it is end of input). */
pid_t start_process_piped(char *const argv[], int *in_write, int *out_fd, int *err_fd);

/* Waits up to timeout_s for pid, killing its group on timeout, and fills r. */
void finish_process(pid_t pid, int out_fd, int err_fd, int timeout_s, struct proc_result *r);

/* start_process + finish_process. */
void run_process(char *const argv[], int timeout_s, struct proc_result *r);

/* `rearview run BASE_OPTIONS... OPTIONS... -o DIR/t.fxt -- PROGRAM ARGS...`
 * (each list NULL-terminated, a NULL list empty; PROGRAM relative to the
 * build directory) within timeout_s; asserts that it succeeded and returns
 * the trace, read with the strict reader (fxt_trace_free). */
struct fxt_trace *rearview_run(const char *dir, const char *const *base_options,
			       const char *const *options, const char *program,
			       const char *const *args, int timeout_s, struct proc_result *r);

/* Reads a line from fd (a pipe) within timeout_s; false on timeout or EOF. */
/* Sleeps ms milliseconds. */
void sleep_ms(long ms);

/* Waits up to limit_ms (by the clock) for pid, a child of ours, to exit;
 * its status in *status (may be NULL). False when it did not exit. */
bool wait_child_exit(pid_t pid, long limit_ms, int *status);

bool read_line_timeout(int fd, char *line, size_t size, int timeout_s);

/* Number of lines in text (a last line without newline counts). */
size_t count_lines(const char *text);

bool file_exists(const char *path);

/* Waits up to timeout_s until the file fd refers to (an output file of
 * start_process) holds needle in its first 64 KiB. */
bool wait_for_text(int fd, const char *needle, int timeout_s);

/* The same for the output of process pid, which may exit first: 1 when
 * needle came, 0 when pid exited without it (left to finish_process to
 * reap), -1 on timeout. */
int wait_for_output(pid_t pid, int fd, const char *needle, int timeout_s);

/* The CPU time (user and system) pid has used, in milliseconds, from
 * /proc/PID/stat; -1 when it cannot be read. */
long long proc_cpu_ms(pid_t pid);

/* Waits up to timeout_s until pid has used cpu_ms more milliseconds of CPU
 * than when called: it has made that much progress. */
bool wait_for_cpu(pid_t pid, long long cpu_ms, int timeout_s);

/* Waits up to timeout_s until pid's main thread is blocked in poll or ppoll
 * (from /proc/PID/syscall): for a recorder, set up and waiting for events. */
bool wait_until_polling(pid_t pid, int timeout_s);

/* The state letter of /proc/PID/status ('?' when it cannot be read), and its
 * TracerPid in *tracer (-1 when unknown). */
char proc_state(pid_t pid, int *tracer);

/* Waits up to timeout_s until pid runs or sleeps ('R' or 'S') and nothing
 * traces it; returns its last state, with its tracer in *tracer. */
char wait_until_running_untraced(pid_t pid, int *tracer, int timeout_s);

/* Starts tests/targets/forever with its stdout on a pipe (*pipe_read, to be
 * closed by the caller) and waits for its "PID ready" line. It is killed
 * when the test's process ends, so a failed test leaves none behind. */
pid_t start_forever(int *pipe_read);

/* Skips the test unless it runs as root (under CI, fails it); `tests` says
 * which tests need it ("gate"). */
void require_root(const char *tests);

/* Whether /usr/bin/perf is there; under CI it must be. */
bool perf_available(void);

#endif
