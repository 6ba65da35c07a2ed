/* kfunc.c: whether this kernel lets the function tracer probe its functions,
 * and by which method; the /proc/kallsyms functions --kernel-functions
 * selects. See kfunc.h.
 *
 * Not here: loading or attaching the function tracer's programs
 * (fn_engine.c, fn_attach.c).
 */
#include "record/kfunc.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fnmatch.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/array.h"

#define KPROBE_PMU_TYPE	      "/sys/bus/event_source/devices/kprobe/type"
#define PROBE_KERNEL_FUNCTION "vfs_read"

/* ---- capability ---- */

static int system_try_fentry(void *ctx, char *why, size_t why_size)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	struct btf *btf = btf__load_vmlinux_btf();
	int id, prog, link, ret;

	(void)ctx;
	if (libbpf_get_error(btf)) {
		snprintf(why, why_size, "no kernel BTF");
		return -ENOENT;
	}
	id = btf__find_by_name_kind(btf, PROBE_KERNEL_FUNCTION, BTF_KIND_FUNC);
	btf__free(btf);
	if (id < 0) {
		snprintf(why, why_size, "no BTF for %s", PROBE_KERNEL_FUNCTION);
		return -ENOENT;
	}
	opts.expected_attach_type = BPF_TRACE_FENTRY;
	opts.attach_btf_id = (uint32_t)id;
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "rv_probe_fentry", "GPL", insns, 2, &opts);
	if (prog < 0) {
		ret = prog;
		snprintf(why, why_size, "loading one fails: %s", strerror(-ret));
		return ret;
	}
	link = bpf_raw_tracepoint_open(NULL, prog);
	ret = link < 0 ? -errno : 0;
	if (link >= 0)
		close(link);
	close(prog);
	if (ret)
		snprintf(why, why_size, "attaching one fails: %s", strerror(-ret));
	return ret;
}

static int system_try_kprobe(void *ctx, char *why, size_t why_size)
{
	struct perf_event_attr attr;
	unsigned type;
	FILE *f = fopen(KPROBE_PMU_TYPE, "re");
	int ok, fd;

	(void)ctx;
	if (!f) {
		if (!access("/sys/kernel/tracing/kprobe_events", W_OK) ||
		    !access("/sys/kernel/debug/tracing/kprobe_events", W_OK))
			return 0; /* libbpf places them through tracefs */
		snprintf(why, why_size, "no kprobe PMU and no kprobe_events in tracefs");
		return -ENOENT;
	}
	ok = fscanf(f, "%u", &type) == 1;
	fclose(f);
	if (!ok) {
		snprintf(why, why_size, "cannot read %s", KPROBE_PMU_TYPE);
		return -EINVAL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config1 = (uint64_t)(uintptr_t)PROBE_KERNEL_FUNCTION;
	fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(why, why_size, "placing one fails: %s", strerror(e));
		return -e;
	}
	close(fd);
	return 0;
}

void rv_kfunc_system_ops(struct rv_kfunc_ops *ops)
{
	*ops = (struct rv_kfunc_ops){
		.try_fentry = system_try_fentry,
		.try_kprobe = system_try_kprobe,
		.kallsyms_path = "/proc/kallsyms",
	};
}

const char *rv_kfunc_method_name(enum rv_kfunc_method method)
{
	switch (method) {
	case RV_KFUNC_FENTRY:
		return "fentry/fexit";
	case RV_KFUNC_KPROBE:
		return "kprobes";
	case RV_KFUNC_NONE:
		break;
	}
	return "none";
}

int rv_kfunc_choose(const struct rv_kfunc_ops *ops, enum rv_kfunc_method *method,
		    struct rv_error *err)
{
	char fentry_why[160] = "", kprobe_why[160] = "";

	*method = RV_KFUNC_NONE;
	if (!ops->try_fentry(ops->ctx, fentry_why, sizeof(fentry_why))) {
		*method = RV_KFUNC_FENTRY;
		return 0;
	}
	if (!ops->try_kprobe(ops->ctx, kprobe_why, sizeof(kprobe_why))) {
		*method = RV_KFUNC_KPROBE;
		return 0;
	}
	return rv_error_set(err, EOPNOTSUPP,
			    "--kernel-functions: this kernel allows neither fentry/fexit programs "
			    "(%s) nor kprobes (%s); use --kernel-events for system calls, "
			    "scheduling, page faults and interrupts",
			    fentry_why[0] ? fentry_why : "refused",
			    kprobe_why[0] ? kprobe_why : "refused");
}

/* ---- plan ---- */

struct ksym {
	char *name;
	uint64_t addr;
};

static int compare_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The text symbols of a kallsyms file: names terminated in place in *text. */
static int read_kallsyms(const char *path, char **text, struct ksym **syms, size_t *nr,
			 struct rv_error *err)
{
	FILE *f = fopen(path, "re");
	size_t cap = 0, used = 0, count = 0, syms_cap = 0;
	char *buf = NULL;
	bool any_address = false;

	*text = NULL;
	*syms = NULL;
	*nr = 0;
	if (!f)
		return rv_error_set(err, errno, "cannot read %s: %s", path, strerror(errno));
	for (;;) {
		size_t n;

		if (used + 65536 + 1 > cap) {
			char *grown = realloc(buf, cap = cap ? cap * 2 : 1 << 20);

			if (!grown) {
				free(buf);
				fclose(f);
				return rv_error_set(err, ENOMEM, "out of memory");
			}
			buf = grown;
		}
		n = fread(buf + used, 1, cap - used - 1, f);
		used += n;
		if (n == 0)
			break;
	}
	fclose(f);
	if (!buf)
		return rv_error_set(err, EINVAL, "%s is empty", path);
	buf[used] = '\0';
	for (char *line = buf; line && *line;) {
		char *end = strchr(line, '\n'), *name, *p;
		unsigned long long addr;
		char type;

		if (end)
			*end = '\0';
		addr = strtoull(line, &p, 16);
		while (*p == ' ')
			p++;
		type = *p;
		if (p != line && type && p[1] == ' ' && strchr("tTwW", type)) {
			name = p + 2;
			name[strcspn(name, " \t")] = '\0'; /* drops "[module]" */
			if (*name) {
				if (rv_array_grow(syms, &syms_cap, count, sizeof(**syms), 16)) {
					free(*syms);
					free(buf);
					*syms = NULL;
					return rv_error_set(err, ENOMEM, "out of memory");
				}
				(*syms)[count++] = (struct ksym){ name, addr };
				any_address |= addr != 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	if (count && !any_address) {
		free(*syms);
		free(buf);
		*syms = NULL;
		return rv_error_set(err, EPERM,
				    "%s hides the kernel's addresses (kernel.kptr_restrict); run "
				    "rearview as root",
				    path);
	}
	*text = buf;
	*nr = count;
	return 0;
}

static bool generated_symbol(const char *name)
{
	return !strncmp(name, "__pfx_", 6) || !strncmp(name, "__cfi_", 6);
}

void rv_kfunc_plan_destroy(struct rv_kfunc_plan *plan)
{
	free(plan->funcs);
	free(plan->skipped);
	free(plan->text);
	memset(plan, 0, sizeof(*plan));
}

static int plan_add_skipped(struct rv_kfunc_plan *plan, size_t *cap, const char *name,
			    const char *reason)
{
	if (rv_array_grow(&plan->skipped, cap, plan->nr_skipped, sizeof(*plan->skipped), 16))
		return -ENOMEM;
	plan->skipped[plan->nr_skipped++] = (struct rv_kfunc_skipped){ name, reason };
	return 0;
}

int rv_kfunc_plan_build(struct rv_kfunc_plan *plan, const char *const *patterns, size_t nr_patterns,
			const struct rv_kfunc_ops *ops, struct rv_error *err)
{
	struct ksym *syms = NULL;
	size_t nr = 0, funcs_cap = 0, skipped_cap = 0;
	bool *matched = NULL;
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (!nr_patterns)
		return 0;
	ret = rv_kfunc_choose(ops, &plan->method, err);
	if (ret)
		return ret;
	ret = read_kallsyms(ops->kallsyms_path, &plan->text, &syms, &nr, err);
	if (ret)
		return ret;
	qsort(syms, nr, sizeof(*syms), compare_ksym);
	matched = calloc(nr_patterns, sizeof(*matched));
	if (!matched) {
		ret = rv_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nr;) {
		size_t same = 1;
		bool wanted = false;

		while (i + same < nr && !strcmp(syms[i + same].name, syms[i].name))
			same++;
		for (size_t p = 0; p < nr_patterns; p++) {
			if (!fnmatch(patterns[p], syms[i].name, 0)) {
				matched[p] = true;
				wanted = true;
			}
		}
		if (!wanted || generated_symbol(syms[i].name)) {
			i += same;
			continue;
		}
		if (same > 1 && syms[i].addr != syms[i + same - 1].addr) {
			ret = plan_add_skipped(plan, &skipped_cap, syms[i].name,
					       "several kernel functions have this name");
		} else if (plan->method == RV_KFUNC_FENTRY && strchr(syms[i].name, '.')) {
			ret = plan_add_skipped(plan, &skipped_cap, syms[i].name,
					       "a compiler-made copy, without BTF of its own");
		} else if (plan->count == RV_KFUNC_MAX) {
			ret = rv_error_set(err, E2BIG,
					   "--kernel-functions selects more than %d kernel "
					   "functions; narrow the patterns",
					   RV_KFUNC_MAX);
			goto out;
		} else if (!rv_array_grow(&plan->funcs, &funcs_cap, plan->count,
					  sizeof(*plan->funcs), 16)) {
			plan->funcs[plan->count++] =
				(struct rv_kfunc){ syms[i].name, syms[i].addr };
		} else {
			ret = -ENOMEM;
		}
		if (ret) {
			ret = rv_error_set(err, ENOMEM, "out of memory");
			goto out;
		}
		i += same;
	}
	for (size_t p = 0; p < nr_patterns; p++) {
		if (!matched[p]) {
			ret = rv_error_set(err, ENOENT,
					   "--kernel-functions %s: no kernel function matches it; "
					   "see %s",
					   patterns[p], ops->kallsyms_path);
			goto out;
		}
	}
	if (!plan->count)
		ret = rv_error_set(err, ENOENT,
				   "--kernel-functions: every kernel function that matches was "
				   "skipped (see them with -v)");
out:
	free(matched);
	free(syms);
	if (ret) {
		enum rv_kfunc_method method = plan->method;

		rv_kfunc_plan_destroy(plan);
		plan->method = method;
	}
	return ret;
}
