/* func_engine.c: loading the function tracer's BPF object and placing its
 * probes; see func_engine.h.
 *
 * uprobe_multi links are made with bpf(BPF_LINK_CREATE) and our own copy of
 * the kernel's link_create layout for them (include/uapi/linux/bpf.h, Linux
 * 6.6+), because Debian's libbpf 1.1 and its 6.1 headers know neither the
 * attach type nor the fields.
 */
#define RV_LOG_DOMAIN "functions"
#include "record/func_engine.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "functions.skel.h"
#include "util/array.h"
#include "util/bpf_log.h"
#include "util/log.h"

/* enum bpf_attach_type's BPF_TRACE_UPROBE_MULTI (Linux 6.6+). */
#define ATTACH_UPROBE_MULTI   48
#define UPROBE_MULTI_RETURN   1u /* BPF_F_UPROBE_MULTI_RETURN */
#define KPROBE_PMU_TYPE	      "/sys/bus/event_source/devices/kprobe/type"
#define PROBE_KERNEL_FUNCTION "vfs_read"

/* bpf_attr's link_create for uprobe_multi, as the kernel lays it out. */
struct uprobe_multi_attr {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t uprobe_flags;
	uint32_t pid;
	uint32_t reserved;
};

struct refused {
	size_t index;
	int error;
};

struct rv_func_engine {
	struct rv_func_engine_config config;
	struct functions_bpf *skel;
	bool multi; /* uprobe_multi programs loaded and to be tried */
	int *multi_links;
	size_t nr_multi_links, cap_multi_links;
	struct bpf_link **links; /* perf links, tracepoints, kprobes */
	size_t nr_links, cap_links;
	struct functions_bpf **fentry_copies; /* one object per kernel function */
	size_t nr_fentry_copies, cap_fentry_copies;
	struct refused *refused;
	size_t nr_refused, cap_refused;
	struct rv_func_attach_report report;
	/* Recorder mode: per slot, the records already handed on (an index in
	 * the slot's sequence); and room to read one slot. */
	uint64_t *consumed;
	uint64_t *missed; /* per slot: overwritten before a snapshot read them */
	struct rv_fn_slot *slot_copy;
};

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- what the kernel has, from its BTF ---- */

static bool btf_enum_has(const struct btf *btf, const char *type, const char *value)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_ENUM);
	const struct btf_type *t;
	const struct btf_enum *e;

	if (id < 0 || !(t = btf__type_by_id(btf, id)))
		return false;
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++, e++) {
		const char *name = btf__name_by_offset(btf, e->name_off);

		if (name && !strcmp(name, value))
			return true;
	}
	return false;
}

bool rv_func_uprobe_multi_supported(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool has;

	if (libbpf_get_error(btf))
		return false;
	has = btf_enum_has(btf, "bpf_attach_type", "BPF_TRACE_UPROBE_MULTI");
	btf__free(btf);
	return has;
}

/* Whether sched_switch's tracepoint passes prev_state (Linux 5.18+): its
 * btf_trace_ typedef has five parameters then. */
static bool switch_has_prev_state(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	bool has = true;
	int id;

	if (libbpf_get_error(btf))
		return true;
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type); /* pointer */
	if (t && btf_kind(t) == BTF_KIND_PTR)
		t = btf__type_by_id(btf, t->type);
	if (t && btf_kind(t) == BTF_KIND_FUNC_PROTO)
		has = btf_vlen(t) >= 5;
	btf__free(btf);
	return has;
}

/* ---- kernel functions: capability ---- */

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

/* ---- kernel functions: plan ---- */

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

void rv_kfunc_plan_free(struct rv_kfunc_plan *plan)
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

		rv_kfunc_plan_free(plan);
		plan->method = method;
	}
	return ret;
}

/* ---- loading ---- */

/* The programs of a kernel event group. */
static size_t group_programs(struct functions_bpf *skel, unsigned group, struct bpf_program *out[2])
{
	switch (group) {
	case RV_FN_EVENTS_SYSCALLS:
		out[0] = skel->progs.fn_sys_enter;
		out[1] = skel->progs.fn_sys_exit;
		return 2;
	case RV_FN_EVENTS_SCHED:
		out[0] = skel->progs.fn_sched_switch;
		return 1;
	case RV_FN_EVENTS_FAULTS:
		out[0] = skel->progs.fn_page_fault;
		return 1;
	case RV_FN_EVENTS_IRQ:
		out[0] = skel->progs.fn_irq_entry;
		out[1] = skel->progs.fn_irq_exit;
		return 2;
	}
	return 0;
}

static const unsigned all_groups[] = { RV_FN_EVENTS_SYSCALLS, RV_FN_EVENTS_SCHED,
				       RV_FN_EVENTS_FAULTS, RV_FN_EVENTS_IRQ };

static bool has_kfuncs(const struct rv_func_engine_config *c)
{
	return c->kfuncs && c->kfuncs->count;
}

/* Read-only settings and map sizes shared by the main object and every
 * fentry copy. */
static void configure(struct functions_bpf *skel, const struct rv_func_engine_config *c,
		      bool prev_state)
{
	size_t nr_kfuncs = has_kfuncs(c) ? c->kfuncs->count : 0;

	skel->rodata->all_threads = c->all_threads;
	skel->rodata->gated = c->gate_windows_fd >= 0;
	skel->rodata->switch_has_prev_state = prev_state;
	skel->rodata->recorder = c->recorder_slots > 0;
	skel->rodata->nr_slots = c->recorder_slots ? c->recorder_slots : 1;
	bpf_map__set_max_entries(skel->maps.fn_slots, c->recorder_slots ? c->recorder_slots : 1);
	bpf_map__set_max_entries(skel->maps.fn_slot_of, c->recorder_slots ? c->recorder_slots : 1);
	bpf_map__set_max_entries(skel->maps.fn_slot_owner,
				 c->recorder_slots ? c->recorder_slots : 1);
	bpf_map__set_max_entries(skel->maps.fn_entry_addrs,
				 c->nr_funcs ? (uint32_t)c->nr_funcs : 1);
	bpf_map__set_max_entries(skel->maps.kfunc_addrs, nr_kfuncs ? (uint32_t)nr_kfuncs : 1);
}

int rv_func_engine_open(struct rv_func_engine **out, const struct rv_func_engine_config *config,
			struct rv_error *err)
{
	struct rv_func_engine *e = calloc(1, sizeof(*e));
	struct bpf_program *progs[2];
	struct bpf_program *prog;
	int ret;

	*out = NULL;
	if (!e)
		return rv_error_set(err, ENOMEM, "out of memory");
	if (config->nr_funcs > RV_FN_MAX_FUNCTIONS) {
		free(e);
		return rv_error_set(err, E2BIG, "too many functions to trace (at most %u)",
				    RV_FN_MAX_FUNCTIONS);
	}
	if (config->recorder_slots > RV_FN_RECORDER_MAX_SLOTS) {
		free(e);
		return rv_error_set(err, E2BIG,
				    "the function tracer's recorder has at most %u thread slots",
				    RV_FN_RECORDER_MAX_SLOTS);
	}
	if (config->recorder_slots) {
		e->consumed = calloc(config->recorder_slots, sizeof(*e->consumed));
		e->missed = calloc(config->recorder_slots, sizeof(*e->missed));
		e->slot_copy = malloc(sizeof(*e->slot_copy));
		if (!e->consumed || !e->missed || !e->slot_copy) {
			free(e->consumed);
			free(e->missed);
			free(e->slot_copy);
			free(e);
			return rv_error_set(err, ENOMEM, "out of memory");
		}
	}
	e->config = *config;
	e->report.multi_available = rv_func_uprobe_multi_supported();
	e->multi = e->report.multi_available && !config->no_uprobe_multi;
	rv_bpf_log_setup();
	e->skel = functions_bpf__open();
	if (!e->skel) {
		ret = errno;
		free(e);
		return rv_error_set(err, ret, "cannot open the function tracer's BPF object: %s",
				    strerror(ret));
	}
	configure(e->skel, config, switch_has_prev_state());
	if (config->gate_windows_fd >= 0)
		ret = bpf_map__reuse_fd(e->skel->maps.gate_windows, config->gate_windows_fd);
	else
		ret = bpf_map__set_max_entries(e->skel->maps.gate_windows, 1); /* unused */
	if (ret) {
		rv_func_engine_free(e);
		return rv_error_set(err, -ret,
				    "cannot share the gate's window map with the function "
				    "tracer: %s",
				    strerror(-ret));
	}
	/* Only what this recording uses is loaded. */
	bpf_object__for_each_program(prog, e->skel->obj) bpf_program__set_autoload(prog, false);
	if (config->nr_funcs) {
		bpf_program__set_autoload(e->skel->progs.fn_enter, true);
		bpf_program__set_autoload(e->skel->progs.fn_exit, true);
	}
	if (config->nr_funcs && e->multi) {
		bpf_program__set_autoload(e->skel->progs.fn_enter_multi, true);
		bpf_program__set_autoload(e->skel->progs.fn_exit_multi, true);
		bpf_program__set_expected_attach_type(e->skel->progs.fn_enter_multi,
						      (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(e->skel->progs.fn_exit_multi,
						      (enum bpf_attach_type)ATTACH_UPROBE_MULTI);
	}
	for (size_t g = 0; g < sizeof(all_groups) / sizeof(all_groups[0]); g++) {
		size_t n = config->kernel_events & all_groups[g]
				   ? group_programs(e->skel, all_groups[g], progs)
				   : 0;

		for (size_t i = 0; i < n; i++)
			bpf_program__set_autoload(progs[i], true);
	}
	if (has_kfuncs(config) && config->kfuncs->method == RV_KFUNC_KPROBE) {
		bpf_program__set_autoload(e->skel->progs.fn_kprobe, true);
		bpf_program__set_autoload(e->skel->progs.fn_kretprobe, true);
	}
	ret = functions_bpf__load(e->skel);
	if (ret) {
		rv_func_engine_free(e);
		return rv_bpf_load_error(err, ret, "the function tracer's BPF programs");
	}
	for (size_t i = 0; i < config->nr_outputs; i++) {
		uint32_t cpu = (uint32_t)config->output_cpus[i];
		uint32_t fd = (uint32_t)config->output_fds[i];

		ret = bpf_map__update_elem(e->skel->maps.fn_events, &cpu, sizeof(cpu), &fd,
					   sizeof(fd), BPF_ANY);
		if (ret) {
			rv_func_engine_free(e);
			return rv_error_set(err, -ret,
					    "cannot give CPU %u's bpf-output event to the function "
					    "tracer: %s",
					    cpu, strerror(-ret));
		}
	}
	for (uint32_t i = 0; has_kfuncs(config) && i < config->kfuncs->count; i++) {
		uint64_t addr = config->kfuncs->funcs[i].addr;

		ret = bpf_map__update_elem(e->skel->maps.kfunc_addrs, &i, sizeof(i), &addr,
					   sizeof(addr), BPF_ANY);
		if (ret) {
			rv_func_engine_free(e);
			return rv_error_set(err, -ret, "cannot fill the kernel function table: %s",
					    strerror(-ret));
		}
	}
	*out = e;
	return 0;
}

int rv_func_engine_add_process(struct rv_func_engine *e, pid_t pid, struct rv_error *err)
{
	uint32_t tgid = (uint32_t)pid;
	uint8_t one = 1;
	int ret = bpf_map__update_elem(e->skel->maps.fn_targets, &tgid, sizeof(tgid), &one,
				       sizeof(one), BPF_ANY);

	if (ret)
		return rv_error_set(err, -ret, "cannot add process %d to the function tracer: %s",
				    (int)pid, strerror(-ret));
	return 0;
}

static int keep_link(struct rv_func_engine *e, struct bpf_link *link)
{
	if (rv_array_grow(&e->links, &e->cap_links, e->nr_links, sizeof(*e->links), 16)) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	e->links[e->nr_links++] = link;
	return 0;
}

static int add_refused(struct rv_func_engine *e, size_t index, int error)
{
	if (rv_array_grow(&e->refused, &e->cap_refused, e->nr_refused, sizeof(*e->refused), 16))
		return -ENOMEM;
	e->refused[e->nr_refused++] = (struct refused){ index, error };
	return 0;
}

/* ---- kernel events and functions ---- */

static int attach_fentry_copy(struct rv_func_engine *e, uint32_t index, struct rv_error *err)
{
	const struct rv_kfunc *k = &e->config.kfuncs->funcs[index];
	struct functions_bpf *copy = functions_bpf__open();
	struct bpf_program *prog;
	struct bpf_link *entry = NULL, *exit = NULL;
	struct {
		struct bpf_map *map, *shared;
	} maps[] = {
		{ copy ? copy->maps.fn_targets : NULL, e->skel->maps.fn_targets },
		{ copy ? copy->maps.fn_events : NULL, e->skel->maps.fn_events },
		{ copy ? copy->maps.fn_stats : NULL, e->skel->maps.fn_stats },
		{ copy ? copy->maps.kfunc_addrs : NULL, e->skel->maps.kfunc_addrs },
		{ copy ? copy->maps.fn_entry_addrs : NULL, e->skel->maps.fn_entry_addrs },
		{ copy ? copy->maps.gate_windows : NULL, e->skel->maps.gate_windows },
		{ copy ? copy->maps.fn_armed : NULL, e->skel->maps.fn_armed },
		{ copy ? copy->maps.fn_in_probe_syscall : NULL, e->skel->maps.fn_in_probe_syscall },
		{ copy ? copy->maps.fn_slots : NULL, e->skel->maps.fn_slots },
		{ copy ? copy->maps.fn_slot_of : NULL, e->skel->maps.fn_slot_of },
		{ copy ? copy->maps.fn_slot_owner : NULL, e->skel->maps.fn_slot_owner },
		{ copy ? copy->maps.fn_slot_count : NULL, e->skel->maps.fn_slot_count },
	};
	int ret = 0;

	if (!copy)
		return -errno;
	configure(copy, &e->config, e->skel->rodata->switch_has_prev_state);
	copy->rodata->kfunc_index = index;
	bpf_object__for_each_program(prog, copy->obj) bpf_program__set_autoload(prog, false);
	bpf_program__set_autoload(copy->progs.fn_fentry, true);
	bpf_program__set_autoload(copy->progs.fn_fexit, true);
	for (size_t i = 0; !ret && i < sizeof(maps) / sizeof(maps[0]); i++)
		ret = bpf_map__reuse_fd(maps[i].map, bpf_map__fd(maps[i].shared));
	if (!ret)
		ret = bpf_program__set_attach_target(copy->progs.fn_fentry, 0, k->name);
	if (!ret)
		ret = bpf_program__set_attach_target(copy->progs.fn_fexit, 0, k->name);
	if (!ret)
		ret = functions_bpf__load(copy);
	if (!ret) {
		entry = bpf_program__attach(copy->progs.fn_fentry);
		exit = entry ? bpf_program__attach(copy->progs.fn_fexit) : NULL;
		if (!entry || !exit)
			ret = -errno;
	}
	if (!ret && (keep_link(e, entry) || keep_link(e, exit)))
		ret = rv_error_set(err, ENOMEM, "out of memory");
	else if (ret) {
		bpf_link__destroy(exit);
		bpf_link__destroy(entry);
	}
	if (!ret && !rv_array_grow(&e->fentry_copies, &e->cap_fentry_copies, e->nr_fentry_copies,
			  sizeof(*e->fentry_copies), 16)) {
		e->fentry_copies[e->nr_fentry_copies++] = copy;
		return 0;
	}
	if (!ret)
		ret = -ENOMEM;
	functions_bpf__destroy(copy);
	return ret;
}

static int attach_kprobe_pair(struct rv_func_engine *e, uint32_t index)
{
	LIBBPF_OPTS(bpf_kprobe_opts, opts, .bpf_cookie = index);
	const char *name = e->config.kfuncs->funcs[index].name;
	struct bpf_link *entry, *exit;

	opts.retprobe = true;
	exit = bpf_program__attach_kprobe_opts(e->skel->progs.fn_kretprobe, name, &opts);
	if (!exit)
		return -errno;
	opts.retprobe = false;
	entry = bpf_program__attach_kprobe_opts(e->skel->progs.fn_kprobe, name, &opts);
	if (!entry) {
		int ret = -errno;

		bpf_link__destroy(exit);
		return ret;
	}
	if (keep_link(e, exit))
		return -ENOMEM;
	return keep_link(e, entry);
}

int rv_func_engine_attach_kernel(struct rv_func_engine *e, struct rv_error *err)
{
	struct bpf_program *progs[2];
	int ret;

	for (size_t g = 0; g < sizeof(all_groups) / sizeof(all_groups[0]); g++) {
		size_t n;

		if (!(e->config.kernel_events & all_groups[g]))
			continue;
		n = group_programs(e->skel, all_groups[g], progs);
		for (size_t i = 0; i < n; i++) {
			struct bpf_link *link = bpf_program__attach(progs[i]);

			if (!link)
				return rv_error_set(
					err, errno, "cannot attach %s to its tracepoint (%s): %s",
					bpf_program__name(progs[i]),
					bpf_program__section_name(progs[i]), strerror(errno));
			if (keep_link(e, link))
				return rv_error_set(err, ENOMEM, "out of memory");
		}
	}
	for (uint32_t i = 0; has_kfuncs(&e->config) && i < e->config.kfuncs->count; i++) {
		ret = e->config.kfuncs->method == RV_KFUNC_FENTRY ? attach_fentry_copy(e, i, err)
								  : attach_kprobe_pair(e, i);
		if (ret == -ENOMEM)
			return rv_error_set(err, ENOMEM, "out of memory");
		if (ret) {
			e->report.kfuncs_refused++;
			rv_debug("kernel function %s not attached: %s",
				 e->config.kfuncs->funcs[i].name, strerror(-ret));
			continue;
		}
		e->report.kfuncs++;
	}
	return 0;
}

/* ---- user functions ---- */

static int link_multi(int prog_fd, pid_t pid, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n, bool exits)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = ATTACH_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)n;
	attr.uprobe_flags = exits ? UPROBE_MULTI_RETURN : 0;
	attr.pid = (uint32_t)pid;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static int keep_multi(struct rv_func_engine *e, int fd)
{
	if (rv_array_grow(&e->multi_links, &e->cap_multi_links, e->nr_multi_links,
		 sizeof(*e->multi_links), 16)) {
		close(fd);
		return -ENOMEM;
	}
	e->multi_links[e->nr_multi_links++] = fd;
	return 0;
}

/* One batch of functions of one file through two uprobe_multi links:
 * returns first. 0, -ENOMEM, or the kernel's refusal (nothing kept). */
static int attach_batch_multi(struct rv_func_engine *e, pid_t pid, size_t first, size_t n)
{
	uint64_t *offsets = malloc(n * sizeof(*offsets)), *cookies = malloc(n * sizeof(*cookies));
	const char *path = e->config.funcs[first].path;
	int exits = -ENOMEM, entries = -ENOMEM;

	if (offsets && cookies) {
		for (size_t i = 0; i < n; i++) {
			offsets[i] = e->config.funcs[first + i].offset;
			cookies[i] = first + i;
		}
		exits = link_multi(bpf_program__fd(e->skel->progs.fn_exit_multi), pid, path,
				   offsets, cookies, n, true);
		if (exits >= 0)
			entries = link_multi(bpf_program__fd(e->skel->progs.fn_enter_multi), pid,
					     path, offsets, cookies, n, false);
	}
	free(offsets);
	free(cookies);
	if (exits < 0)
		return exits;
	if (entries < 0) {
		close(exits);
		return entries;
	}
	if (keep_multi(e, exits)) {
		close(entries);
		return -ENOMEM;
	}
	return keep_multi(e, entries);
}

/* One function through a uprobe and a uretprobe perf link: the return
 * first. 0, -ENOMEM, or the kernel's refusal (nothing kept). */
static int attach_one_perf(struct rv_func_engine *e, pid_t pid, size_t index)
{
	const struct rv_func *f = &e->config.funcs[index];
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = index, .retprobe = true);
	struct bpf_link *exit, *entry;
	int ret;

	exit = bpf_program__attach_uprobe_opts(e->skel->progs.fn_exit, pid, f->path,
					       (size_t)f->offset, &opts);
	if (!exit)
		return -errno;
	opts.retprobe = false;
	entry = bpf_program__attach_uprobe_opts(e->skel->progs.fn_enter, pid, f->path,
						(size_t)f->offset, &opts);
	if (!entry) {
		ret = -errno;
		bpf_link__destroy(exit);
		return ret ? ret : -EINVAL;
	}
	if (keep_link(e, exit)) {
		bpf_link__destroy(entry);
		return -ENOMEM;
	}
	return keep_link(e, entry);
}

/* The kernel's ENOTSUPP (not in user space's errno.h): it cannot single-step
 * the probed instruction. */
#define KERNEL_ENOTSUPP 524

static int attach_batch_perf(struct rv_func_engine *e, pid_t pid, size_t first, size_t n)
{
	for (size_t i = first; i < first + n; i++) {
		int ret = attach_one_perf(e, pid, i);

		if (ret == -ENOMEM)
			return ret;
		if (ret) {
			if (add_refused(e, i, -ret))
				return -ENOMEM;
			e->report.refused++;
			continue;
		}
		e->report.attached++;
		e->report.by_perf_links++;
	}
	return 0;
}

/* Functions [first, first + n) of one file through uprobe_multi links; a
 * range the kernel refuses is halved until the functions it refuses are
 * found, which then get a perf link each (or are refused). */
static int attach_range_multi(struct rv_func_engine *e, pid_t pid, size_t first, size_t n)
{
	int ret = attach_batch_multi(e, pid, first, n);

	if (!ret) {
		e->report.attached += n;
		e->report.by_multi += n;
		return 0;
	}
	if (ret == -ENOMEM)
		return ret;
	if (!e->report.multi_error) {
		e->report.multi_error = -ret;
		rv_debug("a uprobe_multi link on %zu functions of %s failed (%s); looking for "
			 "the functions the kernel refuses",
			 n, e->config.funcs[first].path,
			 -ret == KERNEL_ENOTSUPP ? "ENOTSUPP" : strerror(-ret));
	}
	if (n == 1)
		return attach_batch_perf(e, pid, first, 1);
	ret = attach_range_multi(e, pid, first, n / 2);
	if (!ret)
		ret = attach_range_multi(e, pid, first + n / 2, n - n / 2);
	return ret;
}

int rv_func_engine_attach_functions(struct rv_func_engine *e, pid_t pid, size_t first, size_t count,
				    rv_func_progress_fn progress, void *ctx, struct rv_error *err)
{
	uint64_t start = monotonic_ns();
	size_t done = 0;
	int ret = 0;

	if (first > e->config.nr_funcs || count > e->config.nr_funcs - first)
		return rv_error_set(err, EINVAL, "functions %zu..%zu are not in the table of %zu",
				    first, first + count, e->config.nr_funcs);
	while (done < count && !ret) {
		size_t at = first + done, n = 1;

		/* A batch: consecutive functions of one file. */
		while (n < RV_FN_BATCH && done + n < count &&
		       !strcmp(e->config.funcs[at + n].path, e->config.funcs[at].path))
			n++;
		ret = e->multi ? attach_range_multi(e, pid, at, n)
			       : attach_batch_perf(e, pid, at, n);
		done += n;
		if (!ret && progress)
			progress(ctx, done, count);
	}
	e->report.attach_ns += monotonic_ns() - start;
	if (ret)
		return rv_error_set(err, -ret, "cannot attach the function probes: %s",
				    strerror(-ret));
	return 0;
}

static int set_armed(struct rv_func_engine *e, uint32_t on)
{
	uint32_t zero = 0;

	return bpf_map__update_elem(e->skel->maps.fn_armed, &zero, sizeof(zero), &on, sizeof(on),
				    BPF_ANY);
}

int rv_func_engine_arm(struct rv_func_engine *e, struct rv_error *err)
{
	int ret = set_armed(e, 1);

	if (ret)
		return rv_error_set(err, -ret, "cannot start the function tracer: %s",
				    strerror(-ret));
	return 0;
}

void rv_func_engine_report(const struct rv_func_engine *e, struct rv_func_attach_report *out)
{
	*out = e->report;
}

size_t rv_func_engine_nr_refused(const struct rv_func_engine *e)
{
	return e->nr_refused;
}

void rv_func_engine_refused(const struct rv_func_engine *e, size_t i, size_t *index, int *error)
{
	*index = i < e->nr_refused ? e->refused[i].index : 0;
	*error = i < e->nr_refused ? e->refused[i].error : 0;
}

int rv_func_engine_stats(const struct rv_func_engine *e, uint64_t stats[RV_FN_NR_STATS],
			 struct rv_error *err)
{
	int nr_cpus = libbpf_num_possible_cpus();
	uint64_t *values;

	memset(stats, 0, RV_FN_NR_STATS * sizeof(*stats));
	if (nr_cpus <= 0)
		return rv_error_set(err, -nr_cpus, "cannot count the CPUs: %s", strerror(-nr_cpus));
	values = calloc((size_t)nr_cpus, sizeof(*values));
	if (!values)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (uint32_t slot = 0; slot < RV_FN_NR_STATS; slot++) {
		int ret = bpf_map__lookup_elem(e->skel->maps.fn_stats, &slot, sizeof(slot), values,
					       (size_t)nr_cpus * sizeof(*values), 0);

		if (ret) {
			free(values);
			return rv_error_set(err, -ret,
					    "cannot read the function tracer's counts: %s",
					    strerror(-ret));
		}
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			stats[slot] += values[cpu];
	}
	free(values);
	return 0;
}

void rv_func_engine_detach(struct rv_func_engine *e)
{
	if (e->skel && e->skel->maps.fn_armed && bpf_map__fd(e->skel->maps.fn_armed) >= 0)
		set_armed(e, 0);
	/* Entries go before returns, as they came after them. */
	for (size_t i = e->nr_multi_links; i > 0; i--)
		close(e->multi_links[i - 1]);
	e->nr_multi_links = 0;
	for (size_t i = e->nr_links; i > 0; i--)
		bpf_link__destroy(e->links[i - 1]);
	e->nr_links = 0;
}

void rv_func_engine_free(struct rv_func_engine *e)
{
	if (!e)
		return;
	rv_func_engine_detach(e);
	for (size_t i = 0; i < e->nr_fentry_copies; i++)
		functions_bpf__destroy(e->fentry_copies[i]);
	free(e->fentry_copies);
	free(e->multi_links);
	free(e->links);
	free(e->refused);
	free(e->consumed);
	free(e->missed);
	free(e->slot_copy);
	functions_bpf__destroy(e->skel);
	free(e);
}

/* ---- recorder mode ---- */

/* Slots that may have been claimed: the claim count, plus the candidates a
 * claim in progress may be trying (functions.bpf.c's SLOT_TRIES). */
static uint32_t slots_in_use(const struct rv_func_engine *e)
{
	uint32_t zero = 0, claimed = 0;

	if (bpf_map__lookup_elem(e->skel->maps.fn_slot_count, &zero, sizeof(zero), &claimed,
				 sizeof(claimed), 0))
		return e->config.recorder_slots;
	if ((uint64_t)claimed + 8 >= e->config.recorder_slots)
		return e->config.recorder_slots;
	return claimed + 8;
}

/* The index of the oldest record a slot still holds. */
static uint64_t oldest(const struct rv_fn_slot *s)
{
	return s->head > RV_FN_RECORDER_RECORDS ? s->head - RV_FN_RECORDER_RECORDS : 0;
}

static int read_slot(const struct rv_func_engine *e, uint32_t slot, struct rv_error *err)
{
	int ret = bpf_map__lookup_elem(e->skel->maps.fn_slots, &slot, sizeof(slot), e->slot_copy,
				       sizeof(*e->slot_copy), 0);

	if (ret)
		return rv_error_set(err, -ret, "cannot read the function tracer's recorder: %s",
				    strerror(-ret));
	return 0;
}

size_t rv_fn_slot_select(const struct rv_fn_slot *slot, uint64_t *consumed,
			 const struct rv_sample_selection *sel, rv_fn_slot_visit visit, void *ctx,
			 int *error)
{
	uint64_t head = slot->head, next, from, taken = 0;
	bool prefix = true;

	*error = 0;
	if (sel && sel->tid && slot->tid != sel->tid)
		return 0;
	from = head > RV_FN_RECORDER_RECORDS ? head - RV_FN_RECORDER_RECORDS : 0;
	if (from < *consumed)
		from = *consumed;
	next = from;
	for (uint64_t i = from; i < head && !*error; i++) {
		const struct rv_fn_slot_entry *entry =
			&slot->records[i & (RV_FN_RECORDER_RECORDS - 1)];

		if (entry->seq != (uint32_t)(i + 1)) {
			/* overwritten while the slot was copied */
			if (prefix)
				next = i + 1;
			continue;
		}
		if (sel && entry->time > sel->until) {
			prefix = false; /* for a later snapshot */
			continue;
		}
		if (prefix)
			next = i + 1;
		if (sel && entry->time < sel->since)
			continue; /* before the snapshot: never asked for */
		*error = visit(ctx, entry);
		taken++;
	}
	if (!*error)
		*consumed = next;
	return (size_t)taken;
}

struct hand_ctx {
	struct rv_sample_engine *engine;
	struct rv_error *err;
};

static int hand_entry(void *ctx, const struct rv_fn_slot_entry *entry)
{
	struct hand_ctx *h = ctx;
	struct rv_output_sample s = {
		.time = entry->time,
		.ip = entry->ip,
		.cpu = entry->cpu,
		.pid = entry->pid,
		.tid = entry->tid,
		.raw = &entry->record,
		.raw_size = sizeof(entry->record),
	};

	return rv_sample_engine_add_output(h->engine, &s, h->err);
}

int rv_func_engine_snapshot(struct rv_func_engine *e, struct rv_sample_engine *engine,
			    const struct rv_sample_selection *sel, size_t *handed,
			    struct rv_error *err)
{
	struct hand_ctx h = { engine, err };
	uint32_t in_use;

	if (handed)
		*handed = 0;
	if (!e->config.recorder_slots)
		return rv_error_set(err, EINVAL, "the function tracer is not in recorder mode");
	in_use = slots_in_use(e);
	for (uint32_t slot = 0; slot < in_use; slot++) {
		int ret = read_slot(e, slot, err), error;
		size_t n;

		if (ret)
			return ret;
		if (!e->slot_copy->head)
			continue;
		if (oldest(e->slot_copy) > e->consumed[slot])
			e->missed[slot] += oldest(e->slot_copy) - e->consumed[slot];
		n = rv_fn_slot_select(e->slot_copy, &e->consumed[slot], sel, hand_entry, &h,
				      &error);
		if (error)
			return error;
		if (handed)
			*handed += n;
	}
	return 0;
}

int rv_func_engine_recorder_threads(const struct rv_func_engine *e,
				    struct rv_fn_recorder_thread *out, size_t max, size_t *count,
				    struct rv_error *err)
{
	uint32_t in_use;

	*count = 0;
	if (!e->config.recorder_slots)
		return 0;
	in_use = slots_in_use(e);
	for (uint32_t slot = 0; slot < in_use && *count < max; slot++) {
		int ret = read_slot(e, slot, err);
		const struct rv_fn_slot *s = e->slot_copy;

		if (ret)
			return ret;
		if (!s->head)
			continue;
		out[*count] = (struct rv_fn_recorder_thread){
			.tid = s->tid,
			.pid = s->pid,
			.records = s->head,
			.overwritten = oldest(s),
			.overwritten_unread =
				e->missed[slot] +
				(oldest(s) > e->consumed[slot] ? oldest(s) - e->consumed[slot] : 0),
		};
		++*count;
	}
	return 0;
}

/* ---- --dry-run ---- */

static int describe_bpf(struct rv_dry_run_plan *plan, const struct rv_func_engine_config *c,
			bool multi, struct rv_error *err)
{
	struct {
		const char *kind, *name, *type, *detail;
		bool wanted;
	} items[] = {
		{ "program", "fn_enter_multi", "kprobe (uprobe_multi)", "records function entries",
		  c->nr_funcs && multi },
		{ "program", "fn_exit_multi", "kprobe (uprobe_multi)", "records function returns",
		  c->nr_funcs && multi },
		{ "program", "fn_enter", "kprobe (uprobe perf link)",
		  multi ? "records function entries where a uprobe_multi link is refused"
			: "records function entries",
		  c->nr_funcs },
		{ "program", "fn_exit", "kprobe (uprobe perf link)",
		  multi ? "records function returns where a uprobe_multi link is refused"
			: "records function returns",
		  c->nr_funcs },
		{ "program", "fn_sys_enter", "tracepoint", "records system call entries",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "program", "fn_sys_exit", "tracepoint", "records system call returns",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "program", "fn_sched_switch", "raw_tracepoint",
		  "records threads leaving and regaining a CPU",
		  c->kernel_events & RV_FN_EVENTS_SCHED },
		{ "program", "fn_page_fault", "tracepoint", "records user page faults",
		  c->kernel_events & RV_FN_EVENTS_FAULTS },
		{ "program", "fn_irq_entry", "tracepoint", "records interrupt handlers starting",
		  c->kernel_events & RV_FN_EVENTS_IRQ },
		{ "program", "fn_irq_exit", "tracepoint", "records interrupt handlers ending",
		  c->kernel_events & RV_FN_EVENTS_IRQ },
		{ "program", "fn_kprobe", "kprobe", "records kernel function entries",
		  has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_KPROBE },
		{ "program", "fn_kretprobe", "kprobe", "records kernel function returns",
		  has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_KPROBE },
		{ "program", "fn_fentry", "tracing (fentry)",
		  "records kernel function entries, one copy per function",
		  has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_FENTRY },
		{ "program", "fn_fexit", "tracing (fexit)",
		  "records kernel function returns, one copy per function",
		  has_kfuncs(c) && c->kfuncs->method == RV_KFUNC_FENTRY },
		{ "map", "fn_events", "perf_event_array", "the bpf-output event of each CPU",
		  true },
		{ "map", "fn_targets", "hash", "the processes recorded", true },
		{ "map", "fn_entry_addrs", "array", "first runtime entry address per function",
		  true },
		{ "map", "kfunc_addrs", "array", "kernel function addresses", true },
		{ "map", "fn_stats", "percpu_array", "records made, dropped and lost", true },
		{ "map", "fn_armed", "array", "whether recording is on", true },
		{ "map", "fn_in_probe_syscall", "lru_hash",
		  "threads in a system call of the kernel's uprobe code",
		  c->kernel_events & RV_FN_EVENTS_SYSCALLS },
		{ "map", "gate_windows", "hash", "the gate's window map, shared",
		  c->gate_windows_fd >= 0 },
		{ "map", "fn_slots", "array",
		  "the per-thread flight recorder: the last records of each thread",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_of", "hash", "each thread's recorder slot",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_owner", "hash", "the thread that claimed each slot",
		  c->recorder_slots > 0 },
		{ "map", "fn_slot_count", "array", "recorder slots claimed",
		  c->recorder_slots > 0 },
	};
	int ret = 0;

	for (size_t i = 0; !ret && i < sizeof(items) / sizeof(items[0]); i++)
		if (items[i].wanted)
			ret = rv_dry_run_add_bpf(plan, items[i].kind, items[i].name, items[i].type,
						 items[i].detail, err);
	return ret;
}

int rv_func_engine_describe(struct rv_dry_run_plan *plan, const struct rv_func_engine_config *c,
			    struct rv_error *err)
{
	static const struct {
		unsigned group;
		const char *kind, *where, *program;
	} tracepoints[] = {
		{ RV_FN_EVENTS_SYSCALLS, "tracepoint", "raw_syscalls:sys_enter", "fn_sys_enter" },
		{ RV_FN_EVENTS_SYSCALLS, "tracepoint", "raw_syscalls:sys_exit", "fn_sys_exit" },
		{ RV_FN_EVENTS_SCHED, "raw_tracepoint", "sched_switch", "fn_sched_switch" },
		{ RV_FN_EVENTS_FAULTS, "tracepoint", "exceptions:page_fault_user",
		  "fn_page_fault" },
		{ RV_FN_EVENTS_IRQ, "tracepoint", "irq:irq_handler_entry", "fn_irq_entry" },
		{ RV_FN_EVENTS_IRQ, "tracepoint", "irq:irq_handler_exit", "fn_irq_exit" },
	};
	bool multi = rv_func_uprobe_multi_supported() && !c->no_uprobe_multi;
	char where[PATH_MAX + 32], detail[512];
	int ret = 0;

	for (size_t i = 0; !ret && i < c->nr_funcs; i++) {
		const struct rv_func *f = &c->funcs[i];

		snprintf(where, sizeof(where), "%s+0x%" PRIx64, f->path, f->offset);
		snprintf(detail, sizeof(detail), "%s (function %zu): %s", f->name, i,
			 multi ? "fn_enter_multi (uprobe_multi link)" : "fn_enter (perf link)");
		ret = rv_dry_run_add_probe(plan, "uprobe", where, detail, err);
		snprintf(detail, sizeof(detail), "%s (function %zu): %s", f->name, i,
			 multi ? "fn_exit_multi (uprobe_multi link)" : "fn_exit (perf link)");
		if (!ret)
			ret = rv_dry_run_add_probe(plan, "uretprobe", where, detail, err);
	}
	for (size_t i = 0; !ret && i < sizeof(tracepoints) / sizeof(tracepoints[0]); i++)
		if (c->kernel_events & tracepoints[i].group)
			ret = rv_dry_run_add_probe(plan, tracepoints[i].kind, tracepoints[i].where,
						   tracepoints[i].program, err);
	for (size_t i = 0; !ret && has_kfuncs(c) && i < c->kfuncs->count; i++) {
		bool fentry = c->kfuncs->method == RV_KFUNC_FENTRY;

		ret = rv_dry_run_add_probe(plan, fentry ? "fentry" : "kprobe",
					   c->kfuncs->funcs[i].name,
					   fentry ? "fn_fentry" : "fn_kprobe", err);
		if (!ret)
			ret = rv_dry_run_add_probe(plan, fentry ? "fexit" : "kretprobe",
						   c->kfuncs->funcs[i].name,
						   fentry ? "fn_fexit" : "fn_kretprobe", err);
	}
	if (!ret)
		ret = describe_bpf(plan, c, multi, err);
	return ret;
}
