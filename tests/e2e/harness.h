/* harness.h: running the real rearview binary and the target programs from
 * end-to-end tests, with their output captured and a time limit. */
#ifndef RV_TESTS_HARNESS_H
#define RV_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_result {
	int exit_code; /* exit status, or 128+signal */
	bool timed_out;
	char out[65536]; /* stdout, truncated */
	char err[65536]; /* stderr, truncated */
};

/* build/ (or $RV_BUILD) joined with rel, in a static rotating buffer. */
const char *build_path(const char *rel);

/* A fresh temporary directory for one test, removed by cleanup_dir. */
void make_test_dir(char *out, size_t size);
void cleanup_dir(const char *dir);

/* Starts argv (NULL-terminated) in its own process group with stdout and
 * stderr to temporary files. */
pid_t start_process(char *const argv[], int *out_fd, int *err_fd);

/* Same, with stdin_text as the process's standard input. */
pid_t start_process_input(char *const argv[], const char *stdin_text, int *out_fd, int *err_fd);

/* Waits up to timeout_s for pid, killing its group on timeout, and fills r. */
void finish_process(pid_t pid, int out_fd, int err_fd, int timeout_s, struct proc_result *r);

/* start_process + finish_process. */
void run_process(char *const argv[], int timeout_s, struct proc_result *r);

/* Reads a line from fd (a pipe) within timeout_s; false on timeout or EOF. */
bool read_line_timeout(int fd, char *line, size_t size, int timeout_s);

/* Number of lines in text (a last line without newline counts). */
size_t count_lines(const char *text);

bool file_exists(const char *path);

/* CI=true: tests must not skip anything this machine can do. */
bool under_ci(void);

#endif
