/* sysfs_root.h: the fake sysfs trees of tests/data/sysfs (one per CPU and
 * kernel, see the README there) for tests of PMU discovery and what is built
 * on it.
 *
 * The project root is the parent of $RV_BUILD when that exists (RV_BUILD=build
 * or build-asan), else the working directory (tests run from the root).
 *
 * Not here: a tree's contents (tests/data/sysfs), REARVIEW_SYSFS_ROOT (the
 * tests set it themselves).
 */
#ifndef RV_TESTS_SYSFS_ROOT_H
#define RV_TESTS_SYSFS_ROOT_H

#include "record/pt_pmu.h"

/* ROOT/tests/data/sysfs/NAME, in a static buffer (the next call overwrites
 * it). The tree need not exist: tests name missing ones on purpose. */
const char *sysfs_tree(const char *name);

/* rv_pt_pmu_discover on sysfs_tree(name); fails the test, naming the tree
 * and the error, when it does not succeed. */
void sysfs_discover(struct rv_pt_pmu *pmu, const char *name);

#endif
