/* fn_engine.c: the function tracer's BPF object: what this kernel has for
 * it (from its BTF), opening and loading only the programs a recording needs,
 * arming, the counts, and freeing; see fn_engine.h.
 *
 * Not here: placing the probes (fn_attach.c), recorder mode
 * (fn_recorder.c), --dry-run (fn_describe.c), the kernel-function
 * capability and plan (kfunc.c).
 */
#include "record/fn_engine_internal.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/kernel_btf.h"
#include "util/bpf_log.h"
#include "util/bpf_map.h"

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

/* The kernel's types (btf__load_vmlinux_btf, or --btf's file), or NULL when
 * none can be read. */
static struct btf *kernel_types(const struct rv_kernel_btf *kb)
{
	struct btf *btf = kb ? rv_kernel_btf_load(kb) : btf__load_vmlinux_btf();

	return !btf || libbpf_get_error(btf) ? NULL : btf;
}

/* btf: the kernel's types; NULL: none known. */
static bool uprobe_multi_in(const struct btf *btf)
{
	return btf && btf_enum_has(btf, "bpf_attach_type", "BPF_TRACE_UPROBE_MULTI");
}

bool rv_fn_uprobe_multi_supported(void)
{
	struct btf *btf = kernel_types(NULL);
	bool has = uprobe_multi_in(btf);

	btf__free(btf);
	return has;
}

/* Whether sched_switch's tracepoint passes prev_state (Linux 5.18+): its
 * btf_trace_ typedef has five parameters then; assumed so without BTF. */
static bool switch_has_prev_state(const struct btf *btf)
{
	const struct btf_type *t;
	bool has = true;
	int id;

	if (!btf)
		return true;
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type); /* pointer */
	if (t && btf_kind(t) == BTF_KIND_PTR)
		t = btf__type_by_id(btf, t->type);
	if (t && btf_kind(t) == BTF_KIND_FUNC_PROTO)
		has = btf_vlen(t) >= 5;
	return has;
}

/* ---- loading ---- */

size_t rv_fn_event_programs(struct functions_bpf *skel, unsigned groups,
			    struct bpf_program *out[RV_FN_MAX_EVENT_PROGRAMS])
{
	size_t n = 0;

	if (groups & RV_FN_EVENTS_SYSCALLS) {
		out[n++] = skel->progs.fn_sys_enter;
		out[n++] = skel->progs.fn_sys_exit;
	}
	if (groups & RV_FN_EVENTS_SCHED)
		out[n++] = skel->progs.fn_sched_switch;
	if (groups & RV_FN_EVENTS_FAULTS)
		out[n++] = skel->progs.fn_page_fault;
	if (groups & RV_FN_EVENTS_IRQ) {
		out[n++] = skel->progs.fn_irq_entry;
		out[n++] = skel->progs.fn_irq_exit;
	}
	return n;
}

int rv_fn_engine_check_btf(const struct rv_kernel_btf *btf, bool follow_children,
			   struct rv_error *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	size_t size;
	const void *elf = functions_bpf__elf_bytes(&size);
	int ret = rv_kernel_btf_open_opts(btf,
					  "--backend uprobe (its BPF programs read kernel "
					  "structs through CO-RE)",
					  elf, size, &opts, err);

	if (ret || btf->kernel || !follow_children)
		return ret;
	return rv_error_set(err, ENOENT,
			    "following the target's children needs the kernel's own BTF "
			    "(tp_btf programs), and this kernel shows none (no %s); record "
			    "with --no-follow",
			    RV_KERNEL_BTF_PATH);
}

struct functions_bpf *rv_fn_skel_open(const struct rv_fn_engine_config *c, bool prev_state)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct functions_bpf *skel;
	size_t relos = 0, size;
	const void *elf = functions_bpf__elf_bytes(&size);
	size_t nr_kfuncs = rv_fn_has_kfuncs(c) ? c->kfuncs->count : 0;
	uint32_t slots = c->recorder_slots ? c->recorder_slots : 1;

	/* rv_fn_engine_check_btf has said whether BTF is there. */
	if (c->btf && c->btf->custom_path && !rv_bpf_core_relo_count(elf, size, &relos, NULL) &&
	    relos)
		opts.btf_custom_path = c->btf->custom_path;
	skel = functions_bpf__open_opts(&opts);

	if (!skel)
		return NULL;
	skel->rodata->all_threads = c->all_threads;
	skel->rodata->follow_children = c->follow_children;
	skel->rodata->gated = c->gate_windows_fd >= 0;
	skel->rodata->switch_has_prev_state = prev_state;
	skel->rodata->recorder = c->recorder_slots > 0;
	skel->rodata->nr_slots = slots;
	bpf_map__set_max_entries(skel->maps.fn_slots, slots);
	bpf_map__set_max_entries(skel->maps.fn_slot_of, slots);
	bpf_map__set_max_entries(skel->maps.fn_slot_owner, slots);
	bpf_map__set_max_entries(skel->maps.fn_entry_addrs,
				 c->nr_funcs ? (uint32_t)c->nr_funcs : 1);
	bpf_map__set_max_entries(skel->maps.kfunc_addrs, nr_kfuncs ? (uint32_t)nr_kfuncs : 1);
	bpf_map__set_max_entries(skel->maps.fn_rings, c->nr_rings ? (uint32_t)c->nr_rings : 1);
	return skel;
}

/* Only what this recording uses is loaded. */
static void choose_programs(struct rv_fn_engine *e)
{
	const struct rv_fn_engine_config *config = &e->config;
	struct bpf_program *progs[RV_FN_MAX_EVENT_PROGRAMS];
	struct bpf_program *prog;
	size_t n;

	bpf_object__for_each_program(prog, e->skel->obj) bpf_program__set_autoload(prog, false);
	if (config->nr_funcs) {
		bpf_program__set_autoload(e->skel->progs.fn_enter, true);
		bpf_program__set_autoload(e->skel->progs.fn_exit, true);
	}
	if (config->nr_funcs && e->multi) {
		bpf_program__set_autoload(e->skel->progs.fn_enter_multi, true);
		bpf_program__set_autoload(e->skel->progs.fn_exit_multi, true);
		bpf_program__set_expected_attach_type(
			e->skel->progs.fn_enter_multi,
			(enum bpf_attach_type)RV_FN_ATTACH_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(
			e->skel->progs.fn_exit_multi,
			(enum bpf_attach_type)RV_FN_ATTACH_UPROBE_MULTI);
	}
	n = rv_fn_event_programs(e->skel, config->kernel_events, progs);
	for (size_t i = 0; i < n; i++)
		bpf_program__set_autoload(progs[i], true);
	if (config->follow_children) {
		bpf_program__set_autoload(e->skel->progs.fn_follow_fork, true);
		bpf_program__set_autoload(e->skel->progs.fn_follow_exec, true);
		bpf_program__set_autoload(e->skel->progs.fn_follow_exit, true);
	}
	if (rv_fn_has_kfuncs(config) && config->kfuncs->method == RV_KFUNC_KPROBE) {
		bpf_program__set_autoload(e->skel->progs.fn_kprobe, true);
		bpf_program__set_autoload(e->skel->progs.fn_kretprobe, true);
	}
}

/* Each CPU's ring buffer, created before the object is loaded: the first
 * is the template of the array's inner maps (libbpf 1.1 cannot resize the
 * template it would make from the BTF definition). */
static int create_rings(struct rv_fn_engine *e, struct rv_error *err)
{
	const struct rv_fn_engine_config *config = &e->config;
	uint32_t bytes = rv_fn_ring_bytes(config);
	int ret;

	if (config->recorder_slots || !config->nr_rings)
		return 0;
	e->ring_fds = calloc(config->nr_rings, sizeof(*e->ring_fds));
	if (!e->ring_fds)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < config->nr_rings; i++)
		e->ring_fds[i] = -1;
	e->nr_ring_fds = config->nr_rings;
	for (size_t cpu = 0; cpu < e->nr_ring_fds; cpu++) {
		e->ring_fds[cpu] =
			bpf_map_create(BPF_MAP_TYPE_RINGBUF, "fn_ring", 0, 0, bytes, NULL);
		if (e->ring_fds[cpu] < 0)
			return rv_error_set(err, errno,
					    "cannot create CPU %zu's %u-byte ring buffer for the "
					    "function tracer: %s",
					    cpu, bytes, strerror(errno));
	}
	ret = bpf_map__set_inner_map_fd(e->skel->maps.fn_rings, e->ring_fds[0]);
	if (ret)
		return rv_error_set(err, -ret, "cannot set up the function tracer's rings: %s",
				    strerror(-ret));
	return 0;
}

/* Each CPU's ring buffer into the array, and the kernel functions'
 * addresses. */
static int fill_maps(struct rv_fn_engine *e, struct rv_error *err)
{
	const struct rv_fn_engine_config *config = &e->config;
	int ret;

	for (uint32_t cpu = 0; cpu < e->nr_ring_fds; cpu++) {
		int fd = e->ring_fds[cpu];

		ret = bpf_map__update_elem(e->skel->maps.fn_rings, &cpu, sizeof(cpu), &fd,
					   sizeof(fd), BPF_ANY);
		if (ret)
			return rv_error_set(err, -ret,
					    "cannot give CPU %u's ring buffer to the function "
					    "tracer: %s",
					    cpu, strerror(-ret));
	}
	for (uint32_t i = 0; rv_fn_has_kfuncs(config) && i < config->kfuncs->count; i++) {
		uint64_t addr = config->kfuncs->funcs[i].addr;

		ret = bpf_map__update_elem(e->skel->maps.kfunc_addrs, &i, sizeof(i), &addr,
					   sizeof(addr), BPF_ANY);
		if (ret)
			return rv_error_set(err, -ret, "cannot fill the kernel function table: %s",
					    strerror(-ret));
	}
	return 0;
}

int rv_fn_engine_open(struct rv_fn_engine **out, const struct rv_fn_engine_config *config,
		      struct rv_error *err)
{
	struct rv_fn_engine *e = calloc(1, sizeof(*e));
	struct btf *kernel;
	bool prev_state;
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
	if (rv_fn_recorder_init(&e->recorder, config->recorder_slots)) {
		free(e);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	e->config = *config;
	rv_bpf_log_setup();
	if (config->btf) {
		ret = rv_fn_engine_check_btf(config->btf, config->follow_children, err);
		if (ret) {
			rv_fn_engine_free(e);
			return ret;
		}
	}
	/* the kernel's types, read once (--btf's file describes this kernel
	 * where it shows no BTF of its own) */
	kernel = kernel_types(config->btf);
	e->report.multi_available = uprobe_multi_in(kernel);
	e->multi = e->report.multi_available && !config->no_uprobe_multi;
	prev_state = switch_has_prev_state(kernel);
	btf__free(kernel);
	e->skel = rv_fn_skel_open(config, prev_state);
	if (!e->skel) {
		ret = errno;
		rv_fn_engine_free(e);
		return rv_error_set(err, ret, "cannot open the function tracer's BPF object: %s",
				    strerror(ret));
	}
	if (config->gate_windows_fd >= 0)
		ret = bpf_map__reuse_fd(e->skel->maps.gate_windows, config->gate_windows_fd);
	else
		ret = bpf_map__set_max_entries(e->skel->maps.gate_windows, 1); /* unused */
	if (ret) {
		rv_fn_engine_free(e);
		return rv_error_set(err, -ret,
				    "cannot share the gate's window map with the function "
				    "tracer: %s",
				    strerror(-ret));
	}
	choose_programs(e);
	ret = create_rings(e, err);
	if (ret) {
		rv_fn_engine_free(e);
		return ret;
	}
	ret = functions_bpf__load(e->skel);
	if (ret) {
		rv_fn_engine_free(e);
		return rv_bpf_load_error(err, ret, "the function tracer's BPF programs");
	}
	ret = fill_maps(e, err);
	if (ret) {
		rv_fn_engine_free(e);
		return ret;
	}
	*out = e;
	return 0;
}

int rv_fn_engine_add_process(struct rv_fn_engine *e, pid_t pid, struct rv_error *err)
{
	uint32_t tgid = (uint32_t)pid;
	uint8_t one = RV_FN_TARGET;
	int ret = bpf_map__update_elem(e->skel->maps.fn_targets, &tgid, sizeof(tgid), &one,
				       sizeof(one), BPF_ANY);

	if (ret)
		return rv_error_set(err, -ret, "cannot add process %d to the function tracer: %s",
				    (int)pid, strerror(-ret));
	return 0;
}

size_t rv_fn_engine_children(const struct rv_fn_engine *e, pid_t *pids, size_t max)
{
	uint32_t key, next, *prev = NULL;
	size_t n = 0;

	while (n < max &&
	       !bpf_map__get_next_key(e->skel->maps.fn_targets, prev, &next, sizeof(next))) {
		uint8_t kind;

		key = next;
		prev = &key;
		if (!bpf_map__lookup_elem(e->skel->maps.fn_targets, &key, sizeof(key), &kind,
					  sizeof(kind), 0) &&
		    kind == RV_FN_CHILD)
			pids[n++] = (pid_t)key;
	}
	return n;
}

/* ---- arming, counts, freeing ---- */

/* The .bss is shared by the fentry copies (fn_attach.c), so one store arms
 * them all. */
static void set_armed(struct rv_fn_engine *e, uint32_t on)
{
	__atomic_store_n(&e->skel->bss->fn_armed, on, __ATOMIC_RELEASE);
}

int rv_fn_engine_arm(struct rv_fn_engine *e, struct rv_error *err)
{
	if (!e->skel->bss)
		return rv_error_set(err, ENOTSUP,
				    "cannot start the function tracer: this kernel cannot map "
				    "a BPF program's globals (Linux 5.5+ can)");
	set_armed(e, 1);
	return 0;
}

uint32_t rv_fn_ring_bytes(const struct rv_fn_engine_config *config)
{
	uint64_t bytes = config->ring_bytes;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pow2 = page;

	/* The default: RV_FN_RING_BYTES a CPU, but no more than
	 * RV_FN_RINGS_TOTAL_BYTES in all on a machine of many CPUs (kernel
	 * memory), nor less than RV_FN_RING_MIN_BYTES. */
	if (!bytes) {
		bytes = RV_FN_RING_BYTES;
		while (bytes > RV_FN_RING_MIN_BYTES &&
		       bytes * (config->nr_rings ? config->nr_rings : 1) > RV_FN_RINGS_TOTAL_BYTES)
			bytes >>= 1;
	}

	while (pow2 < bytes && pow2 < (1ull << 30))
		pow2 <<= 1;
	return (uint32_t)pow2;
}

size_t rv_fn_engine_rings(const struct rv_fn_engine *e, const int **fds)
{
	*fds = e->ring_fds;
	return e->nr_ring_fds;
}

uint64_t rv_fn_engine_lost(const struct rv_fn_engine *e, uint32_t cpu)
{
	if (!e->skel || !e->skel->bss || cpu >= RV_FN_MAX_CPUS)
		return 0;
	return __atomic_load_n(&e->skel->bss->fn_lost[cpu], __ATOMIC_RELAXED);
}

void rv_fn_engine_report(const struct rv_fn_engine *e, struct rv_fn_attach_report *out)
{
	*out = e->report;
}

size_t rv_fn_engine_nr_refused(const struct rv_fn_engine *e)
{
	return e->nr_refused;
}

void rv_fn_engine_refused(const struct rv_fn_engine *e, size_t i, size_t *index, int *error)
{
	*index = i < e->nr_refused ? e->refused[i].index : 0;
	*error = i < e->nr_refused ? e->refused[i].error : 0;
}

int rv_fn_engine_stats(const struct rv_fn_engine *e, uint64_t stats[RV_FN_NR_STATS],
		       struct rv_error *err)
{
	return rv_bpf_percpu_sums(e->skel->maps.fn_stats, stats, RV_FN_NR_STATS,
				  "the function tracer's counts", err);
}

void rv_fn_engine_disarm(struct rv_fn_engine *e)
{
	if (e->skel && e->skel->bss)
		set_armed(e, 0);
}

size_t rv_fn_engine_nr_probes(const struct rv_fn_engine *e)
{
	return e->nr_multi_links || e->nr_links ? 2 * e->report.attached + e->report.kfuncs : 0;
}

void rv_fn_engine_release(struct rv_fn_engine *e)
{
	/* In the order they were made, which places each return probe before
	 * its entry: returns go first, and once no uretprobe is placed any
	 * more, the kernel's wait for those pending on the program's stacks
	 * can end. */
	for (size_t i = 0; i < e->nr_multi_links; i++)
		close(e->multi_links[i]);
	e->nr_multi_links = 0;
	for (size_t i = 0; i < e->nr_links; i++)
		bpf_link__destroy(e->links[i]);
	e->nr_links = 0;
}

void rv_fn_engine_detach(struct rv_fn_engine *e)
{
	rv_fn_engine_disarm(e);
	rv_fn_engine_release(e);
}

void rv_fn_engine_free(struct rv_fn_engine *e)
{
	if (!e)
		return;
	rv_fn_engine_detach(e);
	for (size_t i = 0; i < e->nr_fentry_copies; i++)
		functions_bpf__destroy(e->fentry_copies[i]);
	free(e->fentry_copies);
	free(e->multi_links);
	free(e->links);
	free(e->refused);
	for (size_t i = 0; i < e->nr_ring_fds; i++)
		if (e->ring_fds[i] >= 0)
			close(e->ring_fds[i]);
	free(e->ring_fds);
	rv_fn_recorder_destroy(&e->recorder);
	functions_bpf__destroy(e->skel);
	free(e);
}
