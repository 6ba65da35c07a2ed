/* test_env.h: what the tests find around them: the build directory
 * ($RV_BUILD), CI (where a test may not skip what the machine lacks), the
 * tools and the shared PT corpus they need, and the output of commands they
 * run as oracles. Unit and end-to-end tests share it.
 *
 * Failures are Criterion assertions; a missing tool or corpus skips the test,
 * except under CI=true, where it fails it.
 *
 * Not here: scratch files and directories (test_files.h), running rearview
 * and the target programs (tests/e2e/harness.h).
 */
#ifndef RV_TESTS_TEST_ENV_H
#define RV_TESTS_TEST_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CI=true: tests must not skip anything this machine can do. */
bool under_ci(void);

/* $RV_BUILD, or "build" when it is unset or empty. */
const char *build_dir(void);

/* build_dir() joined with rel, in a static rotating buffer (eight calls
 * before one is reused). */
const char *build_path(const char *rel);

/* build_path("tests/targets/NAME"), asserted readable. */
const char *built_target(const char *name);

/* The project root: the parent of $RV_BUILD when make runs the tests, else
 * the working directory (tests run from the root). */
void project_root(char *out, size_t size);

/* ROOT/../shared/pt-corpus/REL; skips the test (fails it under CI) when it
 * does not exist. */
void corpus_path(char *out, size_t size, const char *rel);

/* Skips the test (fails it under CI) when `tool` is not on the PATH;
 * `package` is the Debian package that has it. */
void require_tool(const char *tool, const char *package);

/* Skips the test (fails it under CI) when path is not executable; what says
 * what it is (and how to get it). */
void require_executable(const char *what, const char *path);

/* The standard output of `sh -c COMMAND` (printf-style), NUL-terminated and
 * malloc'd; *status is pclose's, *length (may be NULL) the bytes read. */
char *run_command(int *status, size_t *length, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A symbol's value in binary, and its size when size is not NULL, as `nm -S`
 * prints them; fails the test when nm does not list it. */
uint64_t nm_symbol(const char *binary, const char *symbol, uint64_t *size);

#endif
