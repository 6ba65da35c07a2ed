/* test_env.c: the build directory, CI, tools, the shared corpus and command
 * output for the tests (test_env.h). For Criterion tests only: failures are
 * test assertions. */
#include "test_env.h"

#include <criterion/criterion.h>

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool under_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

const char *build_dir(void)
{
	const char *build = getenv("RV_BUILD");

	return build && *build ? build : "build";
}

const char *build_path(const char *rel)
{
	static char buffers[8][PATH_MAX];
	static unsigned next;
	char *out = buffers[next++ % 8];
	int n = snprintf(out, sizeof(buffers[0]), "%s/%s", build_dir(), rel);

	cr_assert(n > 0 && (size_t)n < sizeof(buffers[0]), "the path of %s is too long", rel);
	return out;
}

const char *built_target(const char *name)
{
	char rel[256];
	const char *path;

	snprintf(rel, sizeof(rel), "tests/targets/%s", name);
	path = build_path(rel);
	cr_assert_eq(access(path, R_OK), 0, "%s is missing: run make %s first", path, path);
	return path;
}

void project_root(char *out, size_t size)
{
	char build[PATH_MAX];
	const char *rv_build = getenv("RV_BUILD");

	if (rv_build && realpath(rv_build, build)) {
		char *slash = strrchr(build, '/');

		if (slash && slash != build)
			*slash = '\0';
		cr_assert_lt(strlen(build), size);
		memcpy(out, build, strlen(build) + 1);
		return;
	}
	cr_assert_not_null(getcwd(out, size));
}

void corpus_path(char *out, size_t size, const char *rel)
{
	char root[PATH_MAX];
	struct stat st;
	int n;

	project_root(root, sizeof(root));
	n = snprintf(out, size, "%s/../shared/pt-corpus/%s", root, rel);
	cr_assert(n > 0 && (size_t)n < size, "the corpus path is too long");
	if (stat(out, &st) == 0)
		return;
	if (under_ci())
		cr_assert_fail("%s is missing; CI needs ../shared/pt-corpus", out);
	fprintf(stderr, "skipped: %s is absent (the shared PT corpus)\n", out);
	cr_skip_test("%s is absent (the shared PT corpus)", out);
}

void require_tool(const char *tool, const char *package)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd) == 0)
		return;
	if (under_ci())
		cr_assert_fail("%s is not installed; CI needs Debian's %s package", tool, package);
	fprintf(stderr, "skipped: %s is not installed (Debian package %s)\n", tool, package);
	cr_skip_test("%s is not installed (Debian package %s)", tool, package);
}

void require_executable(const char *what, const char *path)
{
	if (access(path, X_OK) == 0)
		return;
	if (under_ci())
		cr_assert_fail("%s (%s) is missing on CI", what, path);
	fprintf(stderr, "skipped: %s (%s) is missing\n", what, path);
	cr_skip_test("%s (%s) is missing", what, path);
}

char *run_command(int *status, size_t *length, const char *fmt, ...)
{
	char cmd[8192];
	char *out = NULL;
	size_t len = 0, cap = 0;
	va_list ap;
	FILE *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert(n > 0 && (size_t)n < sizeof(cmd), "the command is too long: %s", cmd);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen %s", cmd);
	for (;;) {
		size_t got;

		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			out = realloc(out, cap + 1);
			cr_assert_not_null(out);
		}
		got = fread(out + len, 1, cap - len, p);
		if (got == 0)
			break;
		len += got;
	}
	out[len] = '\0';
	*status = pclose(p);
	if (length)
		*length = len;
	return out;
}

uint64_t nm_symbol(const char *binary, const char *symbol, uint64_t *size)
{
	int status;
	char *out;
	uint64_t value = 0;
	bool found = false;

	require_tool("nm", "binutils");
	out = run_command(&status, NULL, "nm -S '%s'", binary);
	/* "VALUE SIZE TYPE NAME", or "VALUE TYPE NAME" for a symbol without a size */
	for (char *line = strtok(out, "\n"); line && !found; line = strtok(NULL, "\n")) {
		char fields[4][256];
		int n = sscanf(line, "%255s %255s %255s %255s", fields[0], fields[1], fields[2],
			       fields[3]);

		if (n < 3 || strcmp(fields[n - 1], symbol))
			continue;
		value = strtoull(fields[0], NULL, 16);
		if (size)
			*size = n == 4 ? strtoull(fields[1], NULL, 16) : 0;
		found = true;
	}
	free(out);
	cr_assert(found && value, "nm lists no %s in %s", symbol, binary);
	return value;
}
