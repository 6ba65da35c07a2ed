/* fn_attach.c: placing the function tracer's probes: the tracepoints of the
 * kernel event groups, the kernel functions (an fentry/fexit copy of the
 * object each, or a kprobe pair), and the user functions (uprobe_multi links,
 * or perf links where the kernel has none or refuses a batch: a uprobe at
 * each function's entry and return sites, or a uretprobe for a function
 * whose code could not be decoded or with --exits uretprobe); see
 * fn_engine.h.
 *
 * uprobe_multi links are made with bpf(BPF_LINK_CREATE) and our own copy of
 * the kernel's link_create layout for them (include/uapi/linux/bpf.h, Linux
 * 6.6+), because Debian's libbpf 1.1 and its 6.1 headers know neither the
 * attach type nor the fields.
 *
 * Not here: loading the object and removing the probes (fn_engine.c).
 */
#define RV_LOG_DOMAIN "functions"
#include "record/fn_engine_internal.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/array.h"
#include "util/log.h"

#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

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

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int keep_link(struct rv_fn_engine *e, struct bpf_link *link)
{
	if (rv_array_grow(&e->links, &e->cap_links, e->nr_links, sizeof(*e->links), 16)) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	e->links[e->nr_links++] = link;
	return 0;
}

static int add_refused(struct rv_fn_engine *e, size_t index, int error)
{
	if (rv_array_grow(&e->refused, &e->cap_refused, e->nr_refused, sizeof(*e->refused), 16))
		return -ENOMEM;
	e->refused[e->nr_refused++] = (struct rv_fn_refused){ index, error };
	return 0;
}

/* ---- kernel events and functions ---- */

/* A copy shares every map of the main object, its globals (.bss: armed,
 * the lost counts) too: only its read-only settings (which kernel function
 * it records) are its own. */
static int share_maps(struct functions_bpf *copy, const struct functions_bpf *main_object)
{
	struct bpf_map *map;

	for (map = bpf_object__next_map(copy->obj, NULL); map;
	     map = bpf_object__next_map(copy->obj, map)) {
		const struct bpf_map *shared;
		int ret;

		if (bpf_map__is_internal(map) && !strstr(bpf_map__name(map), ".bss"))
			continue;
		shared = bpf_object__find_map_by_name(main_object->obj, bpf_map__name(map));
		ret = shared ? bpf_map__reuse_fd(map, bpf_map__fd(shared)) : -ENOENT;
		if (ret)
			return ret;
	}
	return 0;
}

static int attach_fentry_copy(struct rv_fn_engine *e, uint32_t index, struct rv_error *err)
{
	const struct rv_kfunc *k = &e->config.kfuncs->funcs[index];
	struct functions_bpf *copy =
		rv_fn_skel_open(&e->config, e->skel->rodata->switch_has_prev_state);
	struct bpf_program *prog;
	struct bpf_link *entry = NULL, *exit = NULL;
	int ret;

	if (!copy)
		return -errno;
	copy->rodata->kfunc_index = index;
	bpf_object__for_each_program(prog, copy->obj) bpf_program__set_autoload(prog, false);
	bpf_program__set_autoload(copy->progs.fn_fentry, true);
	bpf_program__set_autoload(copy->progs.fn_fexit, true);
	ret = share_maps(copy, e->skel);
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

static int attach_kprobe_pair(struct rv_fn_engine *e, uint32_t index)
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

/* Children followed: the programs that keep fn_targets up to date, before
 * the target runs. */
static int attach_follow(struct rv_fn_engine *e, struct rv_error *err)
{
	struct bpf_program *progs[] = { e->skel->progs.fn_follow_fork,
					e->skel->progs.fn_follow_exec,
					e->skel->progs.fn_follow_exit };

	for (size_t i = 0; e->config.follow_children && i < 3; i++) {
		struct bpf_link *link = bpf_program__attach(progs[i]);

		if (!link)
			return rv_error_set(err, errno,
					    "cannot attach %s (%s), which follows the target's "
					    "children: %s; use --no-follow to trace the target's "
					    "process only",
					    bpf_program__name(progs[i]),
					    bpf_program__section_name(progs[i]), strerror(errno));
		if (keep_link(e, link))
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int rv_fn_engine_attach_kernel(struct rv_fn_engine *e, struct rv_error *err)
{
	struct bpf_program *progs[RV_FN_MAX_EVENT_PROGRAMS];
	size_t n = rv_fn_event_programs(e->skel, e->config.kernel_events, progs);
	int ret = attach_follow(e, err);

	if (ret)
		return ret;

	for (size_t i = 0; i < n; i++) {
		struct bpf_link *link = bpf_program__attach(progs[i]);

		if (!link)
			return rv_error_set(err, errno,
					    "cannot attach %s to its tracepoint (%s): %s",
					    bpf_program__name(progs[i]),
					    bpf_program__section_name(progs[i]), strerror(errno));
		if (keep_link(e, link))
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; rv_fn_has_kfuncs(&e->config) && i < e->config.kfuncs->count; i++) {
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

/* Where the user-function links go: on pid, or, when children are followed,
 * on every process that maps the files (uprobe_multi's pid 0, a perf
 * link's -1), fn_targets choosing in BPF whose calls are kept. */
static pid_t links_pid(const struct rv_fn_engine *e, pid_t pid, bool multi)
{
	if (!e->config.follow_children)
		return pid;
	return multi ? 0 : -1;
}

/* pid 0: on every process that maps path (children followed). */
static int link_multi(int prog_fd, pid_t pid, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n, bool exits)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = RV_FN_ATTACH_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)n;
	attr.uprobe_flags = exits ? UPROBE_MULTI_RETURN : 0;
	attr.pid = (uint32_t)pid;
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

static int keep_multi(struct rv_fn_engine *e, int fd)
{
	if (rv_array_grow(&e->multi_links, &e->cap_multi_links, e->nr_multi_links,
			  sizeof(*e->multi_links), 16)) {
		close(fd);
		return -ENOMEM;
	}
	e->multi_links[e->nr_multi_links++] = fd;
	return 0;
}

/* The probes of function index at its entry and return sites (none for a
 * function with uretprobe exits): offsets and cookies appended at *n. */
static size_t site_probes(const struct rv_fn_probe *f, size_t index, uint64_t *offsets,
			  uint64_t *cookies)
{
	enum rv_fn_probe_kind entry_kind =
		f->exits == RV_FN_EXITS_SITES ? RV_FN_PROBE_ENTRY_SITES : RV_FN_PROBE_ENTRY;
	uint32_t entry_condition = 0;
	size_t n = 1;

	for (size_t i = 0; f->exits == RV_FN_EXITS_SITES && i < f->nr_sites; i++) {
		const struct rv_fn_site *site = &f->sites[i];

		if (site->address == f->address) {
			/* its first instruction leaves: one probe for both */
			entry_kind = RV_FN_PROBE_ENTRY_EXIT;
			entry_condition = site->condition;
			continue;
		}
		offsets[n] = site->offset;
		cookies[n] = rv_fn_cookie((uint32_t)index, RV_FN_PROBE_EXIT, site->condition,
					  (long long)(f->address - site->address));
		n++;
	}
	if (entry_kind == RV_FN_PROBE_ENTRY_SITES && f->entry_skip) {
		/* past the endbr64 (fn_exits.h): the record still names the entry */
		offsets[0] = f->offset + f->entry_skip;
		cookies[0] =
			rv_fn_cookie((uint32_t)index, entry_kind, 0, -(long long)f->entry_skip);
		return n;
	}
	offsets[0] = f->offset;
	cookies[0] = rv_fn_cookie((uint32_t)index, entry_kind, entry_condition, 0);
	return n;
}

/* Probes function f needs at most (entry and sites). */
static size_t nr_probes(const struct rv_fn_probe *f)
{
	return 1 + (f->exits == RV_FN_EXITS_SITES ? f->nr_sites : 0);
}

/* One batch of functions of one file through uprobe_multi links: one for
 * every entry and return site, and one for the uretprobes of the functions
 * that have them (made first). 0, -ENOMEM, or the kernel's refusal (nothing
 * kept). */
static int attach_batch_multi(struct rv_fn_engine *e, pid_t pid, size_t first, size_t n)
{
	const struct rv_fn_probe *funcs = e->config.funcs;
	const char *path = funcs[first].path;
	size_t total = 0, nr_sites = 0, nr_returns = 0;
	uint64_t *offsets, *cookies, *ret_offsets, *ret_cookies;
	int exits = -1, entries = -ENOMEM;

	for (size_t i = first; i < first + n; i++)
		total += nr_probes(&funcs[i]);
	offsets = malloc(total * sizeof(*offsets));
	cookies = malloc(total * sizeof(*cookies));
	ret_offsets = malloc(n * sizeof(*ret_offsets));
	ret_cookies = malloc(n * sizeof(*ret_cookies));
	if (offsets && cookies && ret_offsets && ret_cookies) {
		for (size_t i = first; i < first + n; i++) {
			nr_sites +=
				site_probes(&funcs[i], i, offsets + nr_sites, cookies + nr_sites);
			if (funcs[i].exits == RV_FN_EXITS_URETPROBE) {
				ret_offsets[nr_returns] = funcs[i].offset;
				ret_cookies[nr_returns++] = i;
			}
		}
		if (nr_returns)
			exits = link_multi(bpf_program__fd(e->skel->progs.fn_exit_multi),
					   links_pid(e, pid, true), path, ret_offsets, ret_cookies,
					   nr_returns, true);
		if (!nr_returns || exits >= 0)
			entries = link_multi(bpf_program__fd(e->skel->progs.fn_enter_multi),
					     links_pid(e, pid, true), path, offsets, cookies,
					     nr_sites, false);
		else
			entries = exits;
	}
	free(offsets);
	free(cookies);
	free(ret_offsets);
	free(ret_cookies);
	if (entries < 0) {
		if (exits >= 0)
			close(exits);
		return entries;
	}
	if (exits >= 0 && keep_multi(e, exits)) {
		close(entries);
		return -ENOMEM;
	}
	return keep_multi(e, entries);
}

/* One function through perf links: a uretprobe (first) or a uprobe at each
 * return site, and a uprobe at its entry. 0, -ENOMEM, or the kernel's
 * refusal (nothing kept). */
static int attach_one_perf(struct rv_fn_engine *e, pid_t pid, size_t index)
{
	const struct rv_fn_probe *f = &e->config.funcs[index];
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = index, .retprobe = true);
	size_t n = nr_probes(f), kept = e->nr_links, made;
	uint64_t *offsets = malloc(n * sizeof(*offsets)), *cookies = malloc(n * sizeof(*cookies));
	struct bpf_link *link;
	int ret = 0;

	if (!offsets || !cookies) {
		free(offsets);
		free(cookies);
		return -ENOMEM;
	}
	made = site_probes(f, index, offsets, cookies);
	if (f->exits == RV_FN_EXITS_URETPROBE) {
		link = bpf_program__attach_uprobe_opts(e->skel->progs.fn_exit,
						       links_pid(e, pid, false), f->path,
						       (size_t)f->offset, &opts);
		ret = link ? keep_link(e, link) : (errno ? -errno : -EINVAL);
	}
	opts.retprobe = false;
	/* the sites, then the entry (made[0]) */
	for (size_t k = 1; k <= made && !ret; k++) {
		size_t i = k % made;

		opts.bpf_cookie = cookies[i];
		link = bpf_program__attach_uprobe_opts(e->skel->progs.fn_enter,
						       links_pid(e, pid, false), f->path,
						       (size_t)offsets[i], &opts);
		ret = link ? keep_link(e, link) : (errno ? -errno : -EINVAL);
	}
	free(offsets);
	free(cookies);
	if (ret && ret != -ENOMEM) {
		while (e->nr_links > kept)
			bpf_link__destroy(e->links[--e->nr_links]);
	}
	return ret;
}

/* The kernel's ENOTSUPP (not in user space's errno.h): it cannot single-step
 * the probed instruction. */
#define KERNEL_ENOTSUPP 524

static int attach_batch_perf(struct rv_fn_engine *e, pid_t pid, size_t first, size_t n)
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
static int attach_range_multi(struct rv_fn_engine *e, pid_t pid, size_t first, size_t n)
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

int rv_fn_engine_attach_functions(struct rv_fn_engine *e, pid_t pid, size_t first, size_t count,
				  rv_fn_progress_fn progress, void *ctx, struct rv_error *err)
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
