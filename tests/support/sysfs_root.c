/* sysfs_root.c: paths of the fake sysfs trees (sysfs_root.h). For Criterion
 * tests only: failures are test assertions. */
#include "sysfs_root.h"

#include <criterion/criterion.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *sysfs_tree(const char *name)
{
	static char path[PATH_MAX];
	char root[PATH_MAX];
	const char *build = getenv("RV_BUILD");
	int n;

	if (build && realpath(build, root)) {
		char *slash = strrchr(root, '/');

		if (slash && slash != root)
			*slash = '\0';
	} else {
		cr_assert_not_null(getcwd(root, sizeof(root)));
	}
	n = snprintf(path, sizeof(path), "%s/tests/data/sysfs/%s", root, name);
	cr_assert(n > 0 && (size_t)n < sizeof(path));
	return path;
}

void sysfs_discover(struct rv_pt_pmu *pmu, const char *name)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_pt_pmu_discover(pmu, sysfs_tree(name), &err), 0, "%s: %s", name,
		     err.message);
}
