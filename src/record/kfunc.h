/* kfunc.h: --kernel-functions before anything is loaded: which way this
 * kernel lets the function tracer probe its functions (fentry/fexit tracing
 * programs, else kprobes, else neither), and the plan: which /proc/kallsyms
 * functions the patterns select, by that method.
 *
 * The kernel is asked through a small ops table, so that the decision and the
 * plan can be tested against a fake kernel (rv_kfunc_system_ops is the
 * running one).
 *
 * Not here: loading and attaching the programs (fn_engine.h), which user
 * functions (fn_select.h).
 */
#ifndef RV_RECORD_KFUNC_H
#define RV_RECORD_KFUNC_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Kernel functions one recording traces at most. */
#define RV_KFUNC_MAX 256

enum rv_kfunc_method {
	RV_KFUNC_NONE = 0,
	RV_KFUNC_FENTRY, /* fentry/fexit tracing programs (BTF) */
	RV_KFUNC_KPROBE, /* kprobes and kretprobes */
};

/* How the kernel is asked. Each try returns 0 when this kernel attaches that
 * kind of program, else a negative code with a short reason in why. */
struct rv_kfunc_ops {
	int (*try_fentry)(void *ctx, char *why, size_t why_size);
	int (*try_kprobe)(void *ctx, char *why, size_t why_size);
	const char *kallsyms_path; /* "/proc/kallsyms" */
	void *ctx;
};

/* The running kernel's ops: loads and attaches a no-op fentry program on
 * vfs_read; opens a kprobe on vfs_read through the kprobe PMU, or finds
 * tracefs's kprobe_events. */
void rv_kfunc_system_ops(struct rv_kfunc_ops *ops);

/* fentry where it works, else kprobes, else an error of one line saying that
 * the kernel allows neither fentry/fexit nor kprobes, and why. */
int rv_kfunc_choose(const struct rv_kfunc_ops *ops, enum rv_kfunc_method *method,
		    struct rv_error *err);

const char *rv_kfunc_method_name(enum rv_kfunc_method method);

struct rv_kfunc {
	const char *name; /* as /proc/kallsyms spells it, without the module */
	uint64_t addr;
};

struct rv_kfunc_skipped {
	const char *name;
	const char *reason; /* a static string */
};

struct rv_kfunc_plan {
	enum rv_kfunc_method method;
	struct rv_kfunc *funcs;
	size_t count;
	struct rv_kfunc_skipped *skipped;
	size_t nr_skipped;
	char *text; /* the names' storage */
};

/* Chooses the method (rv_kfunc_choose), then matches the fnmatch globs
 * against the text symbols of ops->kallsyms_path: each must match a
 * function; names the kernel has more than once (static functions of several
 * files, which cannot be told apart by name) are skipped, as are, for fentry,
 * compiler-made copies ("f.isra.0", which have no BTF of their own). At most
 * RV_KFUNC_MAX. */
int rv_kfunc_plan_build(struct rv_kfunc_plan *plan, const char *const *patterns, size_t nr_patterns,
			const struct rv_kfunc_ops *ops, struct rv_error *err);

void rv_kfunc_plan_destroy(struct rv_kfunc_plan *plan);

#endif
