/* gate.c: loading the gate program, opening and attaching its uprobe events,
 * and reading its records and counts; see gate.h. */
#define RV_LOG_DOMAIN "gate"
#include "record/gate.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gate.skel.h"
#include "record/dry_run.h"
#include "record/kernel_btf.h"
#include "util/bpf_log.h"
#include "util/bpf_map.h"
#include "util/log.h"

#define UPROBE_TYPE_PATH "/sys/bus/event_source/devices/uprobe/type"

struct gate_event {
	int fd;		       /* perf event, owned by link once attached */
	struct bpf_link *link; /* NULL until attached */
	uint32_t probe;
};

struct gate_probe_key {
	dev_t dev;
	ino_t ino;
	uint64_t offset;
};

struct rv_gate {
	struct rv_gate_config config;
	struct gate_bpf *skel;
	struct ring_buffer *ring;
	struct gate_event *events;
	size_t nr_events;
	struct gate_probe_key probes[RV_GATE_MAX_PROBES];
	struct rv_gate_probe probe_config[RV_GATE_MAX_PROBES];
	uint32_t nr_probes;
	bool attached;
	/* Set while rv_gate_poll runs: where records go. */
	rv_gate_record_fn fn;
	void *fn_ctx;
	int delivered;
	bool malformed, stopped;
};

int rv_gate_describe_bpf(struct rv_dry_run_plan *plan, bool windows, const char *note,
			 struct rv_error *err)
{
	char detail[64];
	int ret = rv_dry_run_add_bpf(plan, "program", "gate_hit", "kprobe", note, err);

	snprintf(detail, sizeof(detail), "max_entries %u, per thread", RV_GATE_MAX_WINDOWS);
	if (!ret && windows)
		ret = rv_dry_run_add_bpf(plan, "map", "gate_windows", "hash", detail, err);
	snprintf(detail, sizeof(detail), "%u bytes: window and trigger records",
		 RV_GATE_RING_BYTES);
	if (!ret)
		ret = rv_dry_run_add_bpf(plan, "map", "gate_records", "ringbuf", detail, err);
	return ret;
}

const char *rv_gate_role_name(enum rv_gate_role role)
{
	switch (role) {
	case RV_GATE_START:
		return "START";
	case RV_GATE_STOP:
		return "STOP";
	case RV_GATE_STOP_SAMPLE:
		return "STOP (--min-duration sample)";
	case RV_GATE_TRIGGER:
		return "TRIGGER";
	case RV_GATE_NR_ROLES:
		break;
	}
	return "?";
}

int rv_gate_uprobe_type(uint32_t *type, struct rv_error *err)
{
	FILE *f = fopen(UPROBE_TYPE_PATH, "r");
	unsigned value;
	int ok;

	if (!f)
		return rv_error_set(err, errno,
				    "cannot read %s: %s; this kernel has no uprobe PMU (needs "
				    "CONFIG_UPROBE_EVENTS, Linux 4.17+)",
				    UPROBE_TYPE_PATH, strerror(errno));
	ok = fscanf(f, "%u", &value) == 1;
	fclose(f);
	if (!ok)
		return rv_error_set(err, EINVAL, "cannot parse %s: expected a number",
				    UPROBE_TYPE_PATH);
	*type = value;
	return 0;
}

void rv_gate_plain_attr(struct perf_event_attr *attr, uint32_t uprobe_type, const char *path,
			uint64_t offset)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = uprobe_type;
	attr->config1 = (uint64_t)(uintptr_t)path;
	attr->config2 = offset;
	attr->sample_period = 1;
	attr->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr->wakeup_events = 1;
	attr->disabled = 1;
}

int rv_gate_record_parse(const void *data, size_t size, struct rv_gate_record *out)
{
	struct rv_gate_event e;

	if (size < sizeof(e))
		return -EINVAL;
	memcpy(&e, data, sizeof(e));
	if (e.type < RV_GATE_REC_WINDOW_BEGIN || e.type > RV_GATE_REC_TRIGGER)
		return -EINVAL;
	out->type = (enum rv_gate_record_type)e.type;
	out->time_ns = e.time_ns;
	out->duration_ns = e.duration_ns;
	out->pid = e.pid;
	out->tid = e.tid;
	out->probe = e.probe;
	out->cpu = e.cpu;
	out->slow = e.flags & RV_GATE_REC_FLAG_SLOW;
	out->fired = e.flags & RV_GATE_REC_FLAG_FIRED;
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct rv_gate *g = ctx;
	struct rv_gate_record r;

	if (rv_gate_record_parse(data, size, &r)) {
		g->malformed = true;
		return -EINVAL;
	}
	g->delivered++;
	if (g->fn && g->fn(&r, g->fn_ctx)) {
		/* libbpf stops only on a negative return; the record is consumed. */
		g->stopped = true;
		return -ECANCELED;
	}
	return 0;
}

int rv_gate_open(struct rv_gate **out, const struct rv_gate_config *config, struct rv_error *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	struct rv_gate *g = calloc(1, sizeof(*g));
	int ret;

	*out = NULL;
	if (!g)
		return rv_error_set(err, ENOMEM, "out of memory");
	g->config = *config;
	rv_bpf_log_setup();
	if (config->btf) {
		size_t size;
		const void *elf = gate_bpf__elf_bytes(&size);

		ret = rv_kernel_btf_open_opts(config->btf, "the BPF gate", elf, size, &opts, err);
		if (ret) {
			free(g);
			return ret;
		}
	}
	g->skel = gate_bpf__open_opts(&opts);
	if (!g->skel) {
		ret = errno;
		free(g);
		return rv_error_set(err, ret, "cannot open the BPF gate: %s", strerror(ret));
	}
	g->skel->rodata->target_tgid = config->pid > 0 ? (uint32_t)config->pid : 0;
	g->skel->rodata->min_duration_ns = config->min_duration_ns;
	g->skel->rodata->multi_snapshot = config->multi_snapshot;
	g->skel->rodata->keep_slow_windows = config->keep_slow_windows;
	g->skel->rodata->hold_after_snapshot = config->hold_after_snapshot;
	ret = gate_bpf__load(g->skel);
	if (ret) {
		rv_gate_free(g);
		return rv_bpf_load_error(err, ret, "the BPF gate");
	}
	g->ring = ring_buffer__new(bpf_map__fd(g->skel->maps.gate_records), on_record, g, NULL);
	if (!g->ring) {
		ret = errno;
		rv_gate_free(g);
		return rv_error_set(err, ret, "cannot map the BPF gate's ring buffer: %s",
				    strerror(ret));
	}
	*out = g;
	return 0;
}

int rv_gate_windows_fd(const struct rv_gate *g)
{
	return bpf_map__fd(g->skel->maps.gate_windows);
}

int rv_gate_records_fd(const struct rv_gate *g)
{
	return ring_buffer__epoll_fd(g->ring);
}

/* The probe index of (path, offset), adding it if new. The same file under
 * two names is one uprobe, so files are compared by device and inode. */
static int find_probe(struct rv_gate *g, const struct rv_gate_site *site, uint32_t *index,
		      struct rv_error *err)
{
	struct stat st;
	uint32_t i;

	if (stat(site->path, &st))
		return rv_error_set(err, errno, "cannot probe '%s': %s", site->path,
				    strerror(errno));
	for (i = 0; i < g->nr_probes; i++) {
		if (g->probes[i].dev == st.st_dev && g->probes[i].ino == st.st_ino &&
		    g->probes[i].offset == site->offset)
			break;
	}
	if (i == g->nr_probes) {
		if (g->nr_probes == RV_GATE_MAX_PROBES)
			return rv_error_set(err, E2BIG,
					    "too many probe sites: the gate holds at most %d",
					    RV_GATE_MAX_PROBES);
		g->probes[i] = (struct gate_probe_key){ st.st_dev, st.st_ino, site->offset };
		g->nr_probes++;
	}
	*index = i;
	return 0;
}

static int plan_probes(struct rv_gate *g, const struct rv_gate_site *sites, size_t nr_sites,
		       struct rv_error *err)
{
	for (size_t i = 0; i < nr_sites; i++) {
		const struct rv_gate_site *site = &sites[i];
		struct rv_gate_probe *pc;
		uint32_t probe = 0;
		int ret;

		if ((unsigned)site->role >= RV_GATE_NR_ROLES || !site->path)
			return rv_error_set(err, EINVAL, "gate site %zu: no such role or no path",
					    i);
		ret = find_probe(g, site, &probe, err);
		if (ret)
			return ret;
		pc = &g->probe_config[probe];
		pc->runs_per_hit++;
		pc->roles |= 1u << site->role;
		if ((pc->roles & (1u << RV_GATE_START)) &&
		    (pc->roles & ((1u << RV_GATE_STOP) | (1u << RV_GATE_STOP_SAMPLE))))
			return rv_error_set(
				err, EINVAL,
				"the same instruction (%s at offset 0x%llx) cannot both "
				"start and stop a window; choose different START and "
				"STOP functions",
				site->path, (unsigned long long)site->offset);
		g->events[i].probe = probe;
	}
	return 0;
}

static int open_event(struct rv_gate *g, const struct rv_gate_site *site, uint32_t uprobe_type,
		      struct rv_error *err)
{
	struct perf_event_attr attr;
	pid_t pid = g->config.pid;
	int cpu = -1, group_fd = -1;
	int fd;

	if (site->attr) {
		attr = *site->attr;
		attr.size = sizeof(attr);
		attr.type = uprobe_type;
		attr.config1 = (uint64_t)(uintptr_t)site->path;
		attr.config2 = site->offset;
		if (!attr.sample_period)
			attr.sample_period = 1;
		pid = site->event_pid;
		cpu = site->cpu;
		group_fd = site->group_fd;
	} else {
		rv_gate_plain_attr(&attr, uprobe_type, site->path, site->offset);
	}
	fd = (int)syscall(SYS_perf_event_open, &attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (e == EACCES || e == EPERM)
			return rv_error_set(err, e,
					    "not allowed to place a uprobe in '%s': run rearview "
					    "as root (or with CAP_PERFMON)",
					    site->path);
		return rv_error_set(err, e, "cannot place a uprobe in '%s' at offset 0x%llx: %s",
				    site->path, (unsigned long long)site->offset, strerror(e));
	}
	return fd;
}

int rv_gate_attach(struct rv_gate *g, const struct rv_gate_site *sites, size_t nr_sites,
		   struct rv_error *err)
{
	uint32_t uprobe_type;
	int ret;

	if (g->attached || g->events)
		return rv_error_set(err, EBUSY, "the gate's sites are already attached");
	if (!nr_sites)
		return rv_error_set(err, EINVAL, "no gate sites to attach");
	g->nr_probes = 0;
	memset(g->probes, 0, sizeof(g->probes));
	memset(g->probe_config, 0, sizeof(g->probe_config));
	ret = rv_gate_uprobe_type(&uprobe_type, err);
	if (ret)
		return ret;
	g->events = calloc(nr_sites, sizeof(*g->events));
	if (!g->events)
		return rv_error_set(err, ENOMEM, "out of memory");
	g->nr_events = nr_sites;
	for (size_t i = 0; i < nr_sites; i++)
		g->events[i].fd = -1;
	ret = plan_probes(g, sites, nr_sites, err);
	if (ret)
		goto fail;

	for (size_t i = 0; i < nr_sites; i++) {
		LIBBPF_OPTS(bpf_perf_event_opts, opts);
		struct gate_event *ev = &g->events[i];

		ret = open_event(g, &sites[i], uprobe_type, err);
		if (ret < 0)
			goto fail;
		ev->fd = ret;
		opts.bpf_cookie = RV_GATE_COOKIE(ev->probe, sites[i].role);
		ev->link =
			bpf_program__attach_perf_event_opts(g->skel->progs.gate_hit, ev->fd, &opts);
		if (!ev->link) {
			ret = rv_error_set(err, errno,
					   "cannot attach the BPF gate to the uprobe in '%s': %s",
					   sites[i].path, strerror(errno));
			goto fail;
		}
	}
	/* Arm the probes last: until runs_per_hit is set, the program suppresses
	 * every hit, so a live target never runs a probe half attached. */
	for (uint32_t p = 0; p < g->nr_probes; p++) {
		ret = bpf_map__update_elem(g->skel->maps.gate_probes, &p, sizeof(p),
					   &g->probe_config[p], sizeof(g->probe_config[p]),
					   BPF_ANY);
		if (ret) {
			ret = rv_error_set(err, -ret, "cannot configure the BPF gate: %s",
					   strerror(-ret));
			goto fail;
		}
	}
	g->attached = true;
	rv_debug("gate: %zu events on %u probes", nr_sites, g->nr_probes);
	return 0;

fail:
	rv_gate_detach(g);
	return ret;
}

int rv_gate_site_fd(const struct rv_gate *g, size_t i)
{
	return i < g->nr_events ? g->events[i].fd : -1;
}

int rv_gate_site_probe(const struct rv_gate *g, size_t i)
{
	return i < g->nr_events ? (int)g->events[i].probe : -1;
}

int rv_gate_poll(struct rv_gate *g, int timeout_ms, rv_gate_record_fn fn, void *ctx,
		 struct rv_error *err)
{
	int ret;

	g->fn = fn;
	g->fn_ctx = ctx;
	g->delivered = 0;
	g->malformed = false;
	g->stopped = false;
	ret = ring_buffer__poll(g->ring, timeout_ms);
	g->fn = NULL;
	if (g->malformed)
		return rv_error_set(err, EINVAL,
				    "the BPF gate wrote a record this rearview does not know; "
				    "rebuild rearview and its BPF objects together");
	if (ret < 0 && ret != -EINTR && !(ret == -ECANCELED && g->stopped))
		return rv_error_set(err, -ret, "cannot read the BPF gate's records: %s",
				    strerror(-ret));
	return g->delivered;
}

int rv_gate_counts(const struct rv_gate *g, struct rv_gate_counts *out, struct rv_error *err)
{
	uint64_t totals[RV_GATE_NR_STATS];
	int ret;

	memset(out, 0, sizeof(*out));
	ret = rv_bpf_percpu_sums(g->skel->maps.gate_stats, totals, RV_GATE_NR_STATS,
				 "the BPF gate's counts", err);
	if (ret)
		return ret;
	for (int role = 0; role < RV_GATE_NR_ROLES; role++) {
		out->runs[role] = totals[RV_GATE_STAT_RUNS + role];
		out->fired[role] = totals[RV_GATE_STAT_FIRED + role];
		out->suppressed[role] = totals[RV_GATE_STAT_SUPPRESSED + role];
	}
	out->hits = totals[RV_GATE_STAT_HITS];
	out->windows = totals[RV_GATE_STAT_WINDOWS];
	out->slow_windows = totals[RV_GATE_STAT_SLOW_WINDOWS];
	out->nested_starts = totals[RV_GATE_STAT_NESTED_STARTS];
	out->unmatched_stops = totals[RV_GATE_STAT_UNMATCHED_STOPS];
	out->triggers = totals[RV_GATE_STAT_TRIGGERS];
	out->snapshots = totals[RV_GATE_STAT_SNAPSHOTS];
	out->other_process = totals[RV_GATE_STAT_OTHER_PROCESS];
	out->not_ready = totals[RV_GATE_STAT_NOT_READY];
	out->record_drops = totals[RV_GATE_STAT_RECORD_DROPS];
	out->window_map_full = totals[RV_GATE_STAT_WINDOW_MAP_FULL];
	out->run_mismatch = totals[RV_GATE_STAT_RUN_MISMATCH];
	out->held = totals[RV_GATE_STAT_HELD];
	return 0;
}

int rv_gate_release(struct rv_gate *g, struct rv_error *err)
{
	uint32_t zero = 0;
	uint64_t free_ = RV_GATE_HOLD_FREE;
	int ret = bpf_map__update_elem(g->skel->maps.gate_hold, &zero, sizeof(zero), &free_,
				       sizeof(free_), BPF_ANY);

	if (ret)
		return rv_error_set(err, -ret, "cannot let the BPF gate take snapshots again: %s",
				    strerror(-ret));
	return 0;
}

void rv_gate_detach(struct rv_gate *g)
{
	for (size_t i = 0; i < g->nr_events; i++) {
		struct gate_event *ev = &g->events[i];

		/* The link owns the perf event once attached, and closes it. */
		if (ev->link)
			bpf_link__destroy(ev->link);
		else if (ev->fd >= 0)
			close(ev->fd);
		ev->link = NULL;
		ev->fd = -1;
	}
	free(g->events);
	g->events = NULL;
	g->nr_events = 0;
	g->attached = false;
}

void rv_gate_free(struct rv_gate *g)
{
	if (!g)
		return;
	rv_gate_detach(g);
	ring_buffer__free(g->ring);
	gate_bpf__destroy(g->skel);
	free(g);
}
