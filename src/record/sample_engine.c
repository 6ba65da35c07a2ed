/* sample_engine.c: per-CPU sampling events with a BPF filter, or bpf-output
 * events, drained into a flight recorder or the capture; see sample_engine.h.
 *
 * Record layout: every sampling event has sample_type IDENTIFIER|IP|TID|TIME|
 * CPU|PERIOD|CALLCHAIN (plus REGS_USER|STACK_USER for DWARF, which the online
 * unwinder turns into the first layout, with the same offsets), every bpf-output
 * event IDENTIFIER|IP|TID|TIME|CPU|RAW, and both sample_id_all, so each
 * non-sample record ends with the trailer {pid,tid}{time}{cpu,res}{id}. The
 * engine relies on exactly these layouts to find times and pids quickly; the
 * capture module parses them generally when the capture is read back. Marks
 * (capture/marks.h) have their own fixed layout, with the time at MARK_TIME.
 * The target's context switches are the switch-state samples of the
 * bpf-output events that share the sampling rings (IDENTIFIER|IP|TID|TIME|CPU|
 * RAW: time where a sample has it; the thread is the raw data's, not always
 * the one running). Where switch_state cannot run, the sampling events have
 * context_switch instead: the target's PERF_RECORD_SWITCH records are kept
 * with the samples (their thread and time in the trailer). --events samples
 * share the rings too
 * (RV_EXTRA_SAMPLE_TYPE, record/extra_events.h: tid and time at the same
 * offsets), told apart by their ids.
 */
#define RV_LOG_DOMAIN "sample"
#include "record/sample_engine.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/synth.h"
#include "decode/off_cpu.h"
#include "symbolize/unwind.h"
#include "record/flight_recorder.h"
#include "record/online_unwind.h"
#include "record/kernel_btf.h"
#include "record/perf_attr_ext.h"
#include "record/perf_ring.h"
#include "record/proc_synth.h"
#include "record/reorder.h"
#include "sample_filter.h"
#include "sample_filter.skel.h"
#include "sample_tasks.skel.h"
#include "util/array.h"
#include "util/bpf_log.h"
#include "util/bpf_map.h"
#include "util/log.h"
#include "util/map.h"

#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
/* IP is not needed (records carry their addresses) but perf script refuses
 * samples without one. */
#define OUTPUT_SAMPLE_TYPE                                                                         \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)

/* Where fields sit in a sample: header, identifier, ip, {pid, tid}, time, ...
 * and, for bpf-output samples, {cpu, res}, raw size (u32), raw data. */
#define SAMPLE_TID	28
#define SAMPLE_TIME	32
#define OUTPUT_TID	28
#define OUTPUT_TIME	32
#define OUTPUT_RAW_SIZE 48
#define OUTPUT_RAW	52
#define MARK_TIME	32

/* The sample_id_all trailer for SAMPLE_TYPE. */
struct id_trailer {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

struct ring {
	int fd;
	int cpu;
	uint64_t id;
	void *base;
	size_t mmap_bytes;
	/* sampling: the bpf-output event the switch_state program writes into
	 * (its output set to this ring), -1 when none */
	int switch_fd;
	uint64_t switch_id;
};

/* A switch-state sample: OUTPUT_RAW, then struct rv_switch_state in a raw
 * area padded to 8 bytes. */
#define SWITCH_STATE_SIZE (OUTPUT_RAW + ((sizeof(struct rv_switch_state) + 4 + 7) / 8 * 8 - 4))

/* Sideband kept whole in flight-recorder mode, in time order. */
struct record_list {
	uint8_t *data;
	size_t used, cap;
};

struct rv_sample_engine {
	struct rv_sample_config config;
	struct perf_event_attr attr;
	const char *clock_name;
	struct ring *rings;
	size_t nr_rings;
	size_t page_size;
	struct sample_filter_bpf *filter;
	/* switch_state and the follow programs, sharing the filter's maps;
	 * NULL where the kernel's BTF they need is missing */
	struct sample_tasks_bpf *tasks;
	struct bpf_link *switch_link; /* switch_state on sched_switch, or NULL */
	struct perf_event_attr switch_attr;
	size_t nr_switch_events;
	struct rv_reorder reorder;
	/* when the previous two drains began: what is released (see
	 * rv_sample_engine_drain) */
	uint64_t previous_pass_start, pass_before_previous_start;
	struct rv_flight_recorder flight;
	struct record_list sideband;
	size_t sideband_written;  /* bytes of sideband already in the capture (snapshots) */
	struct record_list marks; /* the caller's records (gate marks) not yet written */
	uint8_t *wrap_copy;	  /* a record split by the ring's end, made contiguous */
	struct rv_sample_stats stats;
	struct rv_error *sink_err;	/* where sink failures are described */
	size_t draining;		/* the reorder stream of the ring being drained */
	struct rv_output_source source; /* bpf_output, flight recorder: the caller's records */
	uint64_t first_time, last_time; /* of the samples and marks written */
	bool started;
	size_t time_offset, tid_offset;	   /* of the engine's samples (see the top) */
	struct rv_online_unwind *unwinder; /* DWARF mode without keep_raw_stacks */
	/* follow_children: the children recorded, by pid (CHILD_RUNNING or
	 * CHILD_EXITED), and the links of the filter's fork and exit programs */
	struct rv_map children;
	struct bpf_link *follow_links[2];
	/* --events, their records in the rings; NULL: none */
	struct rv_extra_open *extra;
	struct rv_extra_events extra_set;
	/* the events declared in the capture and the rescue capture
	 * (declare_attrs): all but the marks', and the marks' */
	struct declared {
		bool attrs, mark_attr;
	} declared, rescue_declared;
};

#define CHILD_RUNNING ((void *)1)
#define CHILD_EXITED  ((void *)2)

/* The reorder stream of the records the engine makes itself (synthesized,
 * marks, losses): the one after the rings'. */
#define MISC_STREAM(e) ((e)->nr_rings)

static int declare_attrs(struct rv_sample_engine *e, struct rv_perf_writer *w, struct declared *d,
			 struct rv_error *err);

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			   unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

static bool is_target(const struct rv_sample_engine *e, uint32_t pid)
{
	for (size_t i = 0; i < e->config.nr_pids; i++)
		if ((uint32_t)e->config.pids[i] == pid)
			return true;
	return false;
}

/* What both kinds of event have: they start disabled, carry the sideband
 * that follows the processes, stamp times on the clock the other records
 * use, and wake the reader by bytes. */
static void sideband_and_clock(struct perf_event_attr *a)
{
	rv_attr_follow_tasks(a);
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
}

void rv_sample_engine_attr(const struct rv_sample_config *c, bool hardware,
			   struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	if (c->bpf_output) {
		/* Written only by BPF programs: every write is a sample. */
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_BPF_OUTPUT;
		a->sample_period = 1;
		a->sample_type = OUTPUT_SAMPLE_TYPE;
		sideband_and_clock(a);
		return;
	}
	if (hardware) {
		a->type = PERF_TYPE_HARDWARE;
		a->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		a->type = PERF_TYPE_SOFTWARE;
		a->config = PERF_COUNT_SW_CPU_CLOCK;
	}
	a->freq = 1;
	a->sample_freq = c->frequency;
	a->sample_type = SAMPLE_TYPE;
	if (c->dwarf) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = RV_UNWIND_X86_64_REGS_MASK;
		a->sample_stack_user =
			c->dwarf_stack_bytes ? c->dwarf_stack_bytes : RV_DWARF_STACK_BYTES;
		/* the user part comes from unwinding, as perf asks for it */
		a->exclude_callchain_user = 1;
		/* perf's own unwinder (perf report on raw stacks) needs the
		 * read-only segments too: .eh_frame_hdr lives there. */
		a->mmap_data = 1;
	}
	a->exclude_kernel = !c->include_kernel;
	a->exclude_callchain_kernel = !c->include_kernel;
	a->exclude_hv = 1;
	a->exclude_idle = 1;
	/* When each thread leaves the CPU and comes back, so that a sample does
	 * not stand for the time its thread was off the CPU: from switch_state,
	 * the target's alone, or else from these events (every task's, per CPU:
	 * the target's are kept, but a busy neighbour's fill the rings). */
	a->context_switch = !c->bpf_switches;
	sideband_and_clock(a);
}

static void build_attr(struct rv_sample_engine *e, bool hardware)
{
	rv_sample_engine_attr(&e->config, hardware, &e->attr);
}

static size_t ring_data_pages(const struct rv_sample_config *c)
{
	/* A DWARF sample carries 8 KiB of stack: give each CPU room for a few
	 * hundred of them between two drains. A traced function call is two
	 * 96-byte records, and programs make millions a second: 4 MiB holds
	 * about 24,000 calls a CPU between two drains. */
	if (c->bpf_output)
		return 1024;
	return c->dwarf ? 1024 : 128;
}

static int open_ring(struct rv_sample_engine *e, int cpu, struct ring *r, struct rv_error *err)
{
	size_t data_bytes = ring_data_pages(&e->config) * e->page_size;
	int fd;

	e->attr.wakeup_watermark = (uint32_t)(data_bytes / 4);
	fd = perf_event_open(&e->attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r->fd = fd;
	r->cpu = cpu;
	r->switch_fd = -1;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &r->id)) {
		int saved = errno;

		close(fd);
		return rv_error_set(err, saved, "cannot read the id of a perf event: %s",
				    strerror(saved));
	}
	r->mmap_bytes = data_bytes + e->page_size;
	r->base = mmap(NULL, r->mmap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		int saved = errno;

		r->base = NULL;
		close(fd);
		return rv_error_set(err, saved,
				    "cannot map the sample buffer of CPU %d (%zu KiB): %s; check "
				    "ulimit -l and kernel.perf_event_mlock_kb",
				    cpu, r->mmap_bytes / 1024, strerror(saved));
	}
	return 0;
}

static int explain_open_failure(int error, const struct rv_sample_engine *e, struct rv_error *err)
{
	if (error == EACCES || error == EPERM)
		return rv_error_set(
			err, error,
			"not allowed to open perf events on every CPU: rearview samples "
			"with per-CPU events and a BPF filter, which need root (or "
			"CAP_PERFMON and CAP_BPF); run it as root");
	return rv_error_set(err, error, "cannot open the %s event: %s", e->clock_name,
			    strerror(error));
}

static int open_rings(struct rv_sample_engine *e, struct rv_error *err)
{
	long nr_cpus = sysconf(_SC_NPROCESSORS_CONF);
	int ret = 0;

	if (nr_cpus < 1)
		nr_cpus = 1;
	e->rings = calloc((size_t)nr_cpus, sizeof(*e->rings));
	if (!e->rings)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (int pass = 0; pass < 2; pass++) {
		/* First pass: hardware cycles; if the machine has no hardware PMU
		 * (VMs often do not), cpu-clock. */
		bool hardware = pass == 0 && !e->config.bpf_output;

		build_attr(e, hardware);
		e->clock_name = e->config.bpf_output ? "bpf-output"
				: hardware	     ? "cycles"
						     : "cpu-clock";
		for (int cpu = 0; cpu < nr_cpus; cpu++) {
			ret = open_ring(e, cpu, &e->rings[e->nr_rings], err);
			if (ret == -ENODEV || ret == -ENXIO) {
				ret = 0; /* an offline CPU */
				continue;
			}
			if (ret)
				break;
			e->nr_rings++;
		}
		if (!ret && e->nr_rings > 0)
			break;
		for (size_t i = 0; i < e->nr_rings; i++) {
			munmap(e->rings[i].base, e->rings[i].mmap_bytes);
			close(e->rings[i].fd);
		}
		e->nr_rings = 0;
		if (hardware && (ret == -ENOENT || ret == -EOPNOTSUPP || ret == -EINVAL)) {
			rv_debug("no hardware cycles event (%s); sampling on cpu-clock",
				 strerror(-ret));
			continue;
		}
		if (ret == 0)
			return rv_error_set(err, ENODEV, "no online CPU could be sampled");
		if (err->code == 0) /* perf_event_open itself failed */
			return explain_open_failure(-ret, e, err);
		return ret;
	}
	if (e->config.bpf_output)
		rv_debug("bpf-output events on %zu CPUs", e->nr_rings);
	else
		rv_debug("sampling %zu CPUs on %s at %llu Hz", e->nr_rings, e->clock_name,
			 (unsigned long long)e->config.frequency);
	return 0;
}

/* follow_children: the filter's programs on sched_process_fork and
 * sched_process_exit, attached before the targets run, so that no child of
 * theirs is born unseen. */
static int attach_follow(struct rv_sample_engine *e, struct rv_error *err)
{
	struct bpf_program *progs[2] = { e->tasks->progs.follow_fork, e->tasks->progs.follow_exit };

	if (!e->config.follow_children)
		return 0;
	for (size_t i = 0; i < 2; i++) {
		e->follow_links[i] = bpf_program__attach(progs[i]);
		if (!e->follow_links[i]) {
			int saved = errno;

			e->follow_links[i] = NULL;
			return rv_error_set(err, saved,
					    "cannot attach the BPF program that follows the "
					    "target's children (%s, on tp_btf/%s): %s; use "
					    "--no-follow to record the target's process only",
					    bpf_program__name(progs[i]),
					    i == 0 ? "sched_process_fork" : "sched_process_exit",
					    strerror(saved));
		}
	}
	return 0;
}

/* The programs that need the kernel's BTF (sample_tasks.bpf.c), on the
 * filter's maps. Following children needs the kernel's own BTF (tp_btf);
 * switch reasons only CO-RE (--btf will do). Without BTF and without
 * following, they are left out: switches then have no reason. */
static int load_tasks(struct rv_sample_engine *e, struct rv_error *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	const struct rv_kernel_btf *btf = e->config.btf;
	struct sample_tasks_bpf *t;
	struct bpf_map *shared[4][2];
	size_t size;
	const void *elf = sample_tasks_bpf__elf_bytes(&size);
	int ret;

	if (btf && !btf->kernel && e->config.follow_children)
		return rv_error_set(err, ENOENT,
				    "following the target's children needs the kernel's own BTF "
				    "(tp_btf programs), and this kernel shows none (no %s); "
				    "record with --no-follow",
				    RV_KERNEL_BTF_PATH);
	if (btf && rv_kernel_btf_none(btf)) {
		rv_debug("no kernel BTF for switch_state");
		return 0;
	}
	if (btf) {
		ret = rv_kernel_btf_open_opts(btf, "the sampling engine's task programs", elf, size,
					      &opts, err);
		if (ret)
			return ret;
	}
	t = e->tasks = sample_tasks_bpf__open_opts(&opts);
	if (!t)
		return rv_error_set(err, errno, "cannot open the BPF task programs: %s",
				    strerror(errno));
	t->rodata->all_threads = e->config.all_threads;
	t->rodata->gated = e->config.gate_windows_fd >= 0;
	shared[0][0] = t->maps.target_processes, shared[0][1] = e->filter->maps.target_processes;
	shared[1][0] = t->maps.recent_exits, shared[1][1] = e->filter->maps.recent_exits;
	shared[2][0] = t->maps.filter_stats, shared[2][1] = e->filter->maps.filter_stats;
	shared[3][0] = t->maps.gate_windows, shared[3][1] = e->filter->maps.gate_windows;
	for (size_t i = 0; i < 4; i++) {
		ret = bpf_map__reuse_fd(shared[i][0], bpf_map__fd(shared[i][1]));
		if (ret)
			return rv_error_set(err, -ret,
					    "cannot share the sample filter's map %s with its "
					    "task programs: %s",
					    bpf_map__name(shared[i][1]), strerror(-ret));
	}
	if (!e->config.follow_children) {
		bpf_program__set_autoload(t->progs.follow_fork, false);
		bpf_program__set_autoload(t->progs.follow_exit, false);
	}
	ret = sample_tasks_bpf__load(t);
	if (ret)
		return rv_bpf_load_error(err, ret, "the BPF task programs of the sampling engine");
	/* Before the rings open: whether it runs decides their context_switch.
	 * Until its events are in switch_states it writes nothing. */
	e->switch_link = bpf_program__attach_raw_tracepoint(t->progs.switch_state, "sched_switch");
	if (!e->switch_link)
		rv_debug("switch_state cannot be attached to sched_switch (%s)", strerror(errno));
	return attach_follow(e, err);
}

static int load_filter(struct rv_sample_engine *e, struct rv_error *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	int ret;
	uint8_t one = RV_FILTER_TARGET;

	rv_bpf_log_setup();
	if (e->config.btf) {
		size_t size;
		const void *elf = sample_filter_bpf__elf_bytes(&size);

		ret = rv_kernel_btf_open_opts(e->config.btf, "the BPF sample filter", elf, size,
					      &opts, err);
		if (ret)
			return ret;
	}
	e->filter = sample_filter_bpf__open_opts(&opts);
	if (!e->filter)
		return rv_error_set(err, errno, "cannot open the BPF sample filter: %s",
				    strerror(errno));
	e->filter->rodata->all_threads = e->config.all_threads;
	e->filter->rodata->gated = e->config.gate_windows_fd >= 0;
	if (e->config.gate_windows_fd >= 0)
		ret = bpf_map__reuse_fd(e->filter->maps.gate_windows, e->config.gate_windows_fd);
	else
		ret = bpf_map__set_max_entries(e->filter->maps.gate_windows, 1); /* unused */
	if (ret)
		return rv_error_set(err, -ret,
				    "cannot share the gate's window map with the "
				    "sample filter: %s",
				    strerror(-ret));
	ret = sample_filter_bpf__load(e->filter);
	if (ret)
		return rv_bpf_load_error(err, ret, "the BPF sample filter");
	for (size_t i = 0; i < e->config.nr_pids; i++) {
		uint32_t pid = (uint32_t)e->config.pids[i];

		ret = bpf_map__update_elem(e->filter->maps.target_processes, &pid, sizeof(pid),
					   &one, sizeof(one), BPF_ANY);
		if (ret)
			return rv_error_set(err, -ret,
					    "cannot add process %u to the BPF filter: %s", pid,
					    strerror(-ret));
	}
	return load_tasks(e, err);
}

/* The filter on every ring's event. */
static int attach_filter(struct rv_sample_engine *e, struct rv_error *err)
{
	int prog_fd = bpf_program__fd(e->filter->progs.filter_sample);

	for (size_t i = 0; i < e->nr_rings; i++) {
		if (ioctl(e->rings[i].fd, PERF_EVENT_IOC_SET_BPF, prog_fd))
			return rv_error_set(
				err, errno,
				"cannot attach the BPF sample filter to CPU %d's event: "
				"%s",
				e->rings[i].cpu, strerror(errno));
	}
	return 0;
}

/* The target's context switches (sampling only): a bpf-output event per
 * CPU, writing into that CPU's sampling ring, which the switch_state program
 * (attached to sched_switch) fills. Where the program cannot run, the
 * sampling events record every task's switches (context_switch), without
 * reasons (-v says why). */
void rv_sample_engine_switch_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_BPF_OUTPUT;
	a->sample_period = 1;
	a->sample_type = OUTPUT_SAMPLE_TYPE;
	a->disabled = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

/* With switch_state attached the rings were opened without context_switch:
 * a CPU whose switches it cannot write would have none, so that fails. */
static int open_switch_events(struct rv_sample_engine *e, struct rv_error *err)
{
	struct perf_event_attr *a = &e->switch_attr;

	if (!e->switch_link)
		return 0; /* load_tasks said why */
	rv_sample_engine_switch_attr(a);
	for (size_t i = 0; i < e->nr_rings; i++) {
		struct ring *r = &e->rings[i];
		uint32_t key = (uint32_t)r->cpu;
		int fd = perf_event_open(a, -1, r->cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0)
			return rv_error_set(
				err, errno,
				"cannot open the bpf-output event that carries CPU %d's "
				"context switches: %s",
				r->cpu, strerror(errno));
		r->switch_fd = fd;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &r->switch_id) ||
		    ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) ||
		    bpf_map__update_elem(e->tasks->maps.switch_states, &key, sizeof(key), &fd,
					 sizeof(fd), BPF_ANY))
			return rv_error_set(err, errno,
					    "cannot send CPU %d's context switches to its sample "
					    "buffer: %s",
					    r->cpu, strerror(errno));
		e->nr_switch_events++;
	}
	return 0;
}

/* A switch-state sample of one of the engine's bpf-output events (never a
 * stack: those are longer or carry another id). */
static bool is_switch_state(const struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	uint64_t id;

	if (!e->nr_switch_events || rec->type != PERF_RECORD_SAMPLE ||
	    rec->size != SWITCH_STATE_SIZE)
		return false;
	memcpy(&id, (const uint8_t *)rec + 8, sizeof(id));
	for (size_t i = 0; i < e->nr_rings; i++)
		if (e->rings[i].switch_id == id && e->rings[i].switch_fd >= 0)
			return true;
	return false;
}

/* A sample of an --events event (never a stack: those carry another id). */
static bool is_extra(const struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	uint64_t id;

	if (!e->extra || rec->type != PERF_RECORD_SAMPLE || rec->size != RV_EXTRA_SAMPLE_SIZE)
		return false;
	memcpy(&id, (const uint8_t *)rec + 8, sizeof(id));
	return rv_extra_open_find(e->extra, id) >= 0;
}

/* A sample the capture counts as one: a stack, or a bpf-output record. */
static bool is_counted_sample(const struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	return rec->type == PERF_RECORD_SAMPLE && !is_switch_state(e, rec) && !is_extra(e, rec);
}

/* --events on the targets' threads, per CPU, into the CPU's ring. */
static int open_extra(struct rv_sample_engine *e, struct rv_error *err)
{
	int *cpus, *fds;
	int ret;

	if (!e->config.extra_events || !e->config.extra_events->nr)
		return 0;
	e->extra_set = *e->config.extra_events;
	e->config.extra_events = &e->extra_set;
	cpus = calloc(e->nr_rings ? e->nr_rings : 1, sizeof(*cpus));
	fds = calloc(e->nr_rings ? e->nr_rings : 1, sizeof(*fds));
	if (!cpus || !fds) {
		free(cpus);
		free(fds);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < e->nr_rings; i++) {
		cpus[i] = e->rings[i].cpu;
		fds[i] = e->rings[i].fd;
	}
	ret = rv_extra_events_open(&e->extra, &e->extra_set, e->config.pids, e->config.nr_pids,
				   e->config.all_threads, e->config.include_kernel, cpus, fds,
				   e->nr_rings, err);
	free(cpus);
	free(fds);
	return ret;
}

int rv_sample_engine_open(struct rv_sample_engine **out, const struct rv_sample_config *config,
			  struct rv_error *err)
{
	struct rv_sample_engine *e = calloc(1, sizeof(*e));
	int ret;

	*out = NULL;
	if (!e)
		return rv_error_set(err, ENOMEM, "out of memory");
	e->config = *config;
	e->page_size = (size_t)sysconf(_SC_PAGESIZE);
	e->time_offset = config->bpf_output ? OUTPUT_TIME : SAMPLE_TIME;
	e->tid_offset = config->bpf_output ? OUTPUT_TID : SAMPLE_TID;
	e->wrap_copy = malloc(RV_PERF_RING_MAX_RECORD);
	if (!e->wrap_copy) {
		free(e);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	if (!config->full_execution && config->flight_file) {
		ret = rv_flight_recorder_init_file(&e->flight, config->snapshot_size_bytes,
						   config->flight_file);
		if (ret) {
			rv_sample_engine_free(e);
			return rv_error_set(err, -ret,
					    "cannot make a %llu-byte flight recorder in '%s': %s",
					    (unsigned long long)config->snapshot_size_bytes,
					    config->flight_file, strerror(-ret));
		}
	} else if (!config->full_execution) {
		ret = rv_flight_recorder_init(&e->flight, config->snapshot_size_bytes);
		if (ret) {
			rv_sample_engine_free(e);
			return rv_error_set(err, -ret,
					    "cannot allocate a %llu-byte flight recorder",
					    (unsigned long long)config->snapshot_size_bytes);
		}
	}
	/* The programs first: whether switch_state runs decides what the
	 * sampling events record. */
	ret = config->bpf_output ? 0 : load_filter(e, err);
	e->config.bpf_switches = e->switch_link != NULL;
	if (!ret && !config->bpf_output)
		rv_debug("context switches: %s",
			 e->switch_link ? "the target's, written by switch_state"
					: "every task's on each CPU (the sampling events' "
					  "context_switch), without reasons");
	if (!ret)
		ret = open_rings(e, err);
	/* Streams: each ring, the engine's own records, the caller's outputs. */
	if (!ret && rv_reorder_init(&e->reorder, MISC_STREAM(e) + 1 + config->nr_output_streams))
		ret = rv_error_set(err, ENOMEM, "out of memory");
	if (!ret && !config->bpf_output)
		ret = attach_filter(e, err);
	if (!ret && !config->bpf_output)
		ret = open_switch_events(e, err);
	if (!ret)
		ret = open_extra(e, err);
	if (!ret && config->dwarf && !config->keep_raw_stacks && !config->bpf_output) {
		struct rv_online_unwind_config uc = { .regs_mask = RV_UNWIND_X86_64_REGS_MASK };

		ret = rv_online_unwind_new(&e->unwinder, &uc, err);
		e->stats.online_unwind = !ret;
	}
	if (ret) {
		rv_sample_engine_free(e);
		return ret;
	}
	e->stats.clock_name = e->clock_name;
	e->stats.frequency = config->bpf_output ? 0 : config->frequency;
	*out = e;
	return 0;
}

/* ---- where records go ---- */

/* Notes a written sample's or mark's time for the capture's time range. */
static void note_time(struct rv_sample_engine *e, uint64_t time)
{
	if (!time)
		return;
	if (!e->first_time || time < e->first_time)
		e->first_time = time;
	if (time > e->last_time)
		e->last_time = time;
}

static int list_append(struct record_list *l, const struct perf_event_header *rec)
{
	if (rv_array_reserve(&l->data, &l->cap, l->used + rec->size, 1, 1 << 16))
		return -ENOMEM;
	memcpy(l->data + l->used, rec, rec->size);
	l->used += rec->size;
	return 0;
}

/* Where the reorder buffer releases records to: everything into the capture
 * with --full-execution; otherwise only sideband comes this way (samples go
 * straight to the flight recorder), and it is kept whole until the end. */
static int sink(void *ctx, const struct perf_event_header *rec, uint64_t time)
{
	struct rv_sample_engine *e = ctx;

	if (e->config.full_execution) {
		if (is_counted_sample(e, rec)) {
			e->stats.written_samples++;
			note_time(e, time);
		}
		return rv_perf_writer_write(e->config.capture, rec, e->sink_err);
	}
	if (list_append(&e->sideband, rec))
		return rv_error_set(e->sink_err, ENOMEM, "out of memory keeping sideband");
	/* and into the rescue capture, for a recorder killed */
	if (e->config.rescue)
		return rv_perf_writer_write(e->config.rescue, rec, e->sink_err);
	return 0;
}

static uint64_t sideband_time(const struct perf_event_header *rec)
{
	const struct id_trailer *t = (const void *)((const uint8_t *)rec + rec->size - sizeof(*t));

	return t->time;
}

/* Records shorter than these offsets never reach the functions below:
 * accept_record drops samples shorter than a sample_id trailer's worth. */
static uint64_t sample_time(const struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	uint64_t time;

	if (rec->type != PERF_RECORD_SAMPLE)
		return sideband_time(rec); /* a switch record */
	memcpy(&time, (const uint8_t *)rec + e->time_offset, sizeof(time));
	return time;
}

static uint64_t mark_time(const struct perf_event_header *rec)
{
	uint64_t time;

	memcpy(&time, (const uint8_t *)rec + MARK_TIME, sizeof(time));
	return time;
}

/* The thread a sample is about: perf's TID, or for bpf-output records the
 * one their raw data names. */
static uint32_t sample_tid(const struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	uint32_t tid, raw_size;

	if (rec->type != PERF_RECORD_SAMPLE) {
		/* a switch record: its thread is the trailer's */
		memcpy(&tid, bytes + rec->size - sizeof(struct id_trailer) + 4, sizeof(tid));
		return tid;
	}
	memcpy(&tid, bytes + e->tid_offset, sizeof(tid));
	if (is_switch_state(e, rec)) {
		/* a switch in is written while the task leaving runs */
		memcpy(&tid, bytes + OUTPUT_RAW + offsetof(struct rv_switch_state, tid),
		       sizeof(tid));
		return tid;
	}
	if (!e->config.bpf_output || rec->size < OUTPUT_RAW || is_extra(e, rec))
		return tid;
	memcpy(&raw_size, bytes + OUTPUT_RAW_SIZE, sizeof(raw_size));
	if ((uint64_t)e->config.raw_tid_offset + sizeof(tid) <= raw_size &&
	    OUTPUT_RAW + (uint64_t)raw_size <= rec->size)
		memcpy(&tid, bytes + OUTPUT_RAW + e->config.raw_tid_offset, sizeof(tid));
	return tid;
}

/* ---- the processes recorded ---- */

/* Whether pid is a target or a child followed. The filter adds a child to its
 * set at the fork, before the child runs, but the rings are drained one after
 * the other, so a child's first records can come before its parent's FORK
 * record: a pid not known yet is asked of the filter's set and of its recent
 * exits. */
static bool is_recorded(struct rv_sample_engine *e, uint32_t pid)
{
	uint8_t value;

	if (is_target(e, pid))
		return true;
	if (!e->config.follow_children)
		return false;
	if (rv_map_get(&e->children, pid))
		return true;
	if (!e->filter || (bpf_map__lookup_elem(e->filter->maps.target_processes, &pid, sizeof(pid),
						&value, sizeof(value), 0) &&
			   bpf_map__lookup_elem(e->filter->maps.recent_exits, &pid, sizeof(pid),
						&value, sizeof(value), 0)))
		return false;
	return rv_map_put(&e->children, pid, CHILD_RUNNING) == 0;
}

/* A FORK record of a new process (pid != ppid): whether it is kept. */
static bool on_fork(struct rv_sample_engine *e, uint32_t pid, uint32_t ppid)
{
	if (!is_recorded(e, ppid)) {
		/* a child's pid used again by a process not followed */
		if (e->config.follow_children && rv_map_get(&e->children, pid) == CHILD_EXITED)
			rv_map_remove(&e->children, pid);
		return false;
	}
	if (!e->config.follow_children) {
		e->stats.children_not_followed++;
		return false;
	}
	if (e->filter)
		return is_recorded(e, pid); /* not in the filter's set when it was full */
	/* bpf-output events: the callers' programs choose what they write; every
	 * child's sideband is kept */
	return rv_map_put(&e->children, pid, CHILD_RUNNING) == 0;
}

/* Whether a sideband record (MMAP2, COMM, FORK, EXIT, ...: the first u32
 * after the header is the pid) is about a recorded process; FORK and EXIT
 * keep the set of children up to date. The caller checked that the record
 * holds a sample_id trailer, so the ids of FORK and EXIT are there. */
static bool keep_sideband(struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	uint32_t pid, ppid, tid;

	memcpy(&pid, bytes + 8, sizeof(pid));
	if (rec->type == PERF_RECORD_FORK) {
		memcpy(&ppid, bytes + 12, sizeof(ppid));
		if (pid != ppid)
			return on_fork(e, pid, ppid);
	}
	if (!is_recorded(e, pid))
		return false;
	memcpy(&tid, bytes + 16, sizeof(tid));
	if (rec->type == PERF_RECORD_EXIT && tid == pid && !is_target(e, pid))
		rv_map_put(&e->children, pid, CHILD_EXITED);
	return true;
}

size_t rv_sample_engine_running_children(const struct rv_sample_engine *e, pid_t *pids, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < e->children.cap && n < max; i++)
		if (e->children.slots[i].value == CHILD_RUNNING)
			pids[n++] = (pid_t)e->children.slots[i].key;
	return n;
}

/* A switch record (every task's, per CPU) is kept when it is about a thread
 * whose samples are kept (the trailer's: the task leaving or arriving), with
 * the samples: in the flight recorder, where it ages out with them, or in
 * time order into the capture. */
static int accept_switch(struct rv_sample_engine *e, const struct perf_event_header *rec,
			 const struct id_trailer *trailer)
{
	if (!is_recorded(e, trailer->pid) ||
	    (!e->config.all_threads && trailer->tid != trailer->pid))
		return 0;
	e->stats.switches++;
	if (!e->config.full_execution) {
		rv_flight_recorder_push(&e->flight, rec);
		return 0;
	}
	return rv_reorder_push(&e->reorder, e->draining, rec, trailer->time);
}

/* An --events sample: kept when it is about a thread whose samples are kept,
 * as samples are (children the targets made inherit the events whether they
 * are followed or not). */
static int accept_extra(struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	uint32_t pid, tid;

	memcpy(&pid, (const uint8_t *)rec + SAMPLE_TID - 4, sizeof(pid));
	memcpy(&tid, (const uint8_t *)rec + SAMPLE_TID, sizeof(tid));
	if (!is_recorded(e, pid) || (!e->config.all_threads && tid != pid))
		return 0;
	e->stats.extra_samples++;
	if (!e->config.full_execution) {
		rv_flight_recorder_push(&e->flight, rec);
		return 0;
	}
	return rv_reorder_push(&e->reorder, e->draining, rec, sample_time(e, rec));
}

/* Sideband and samples of the targets go on; other processes' sideband (per-CPU
 * events see every task) is dropped here. */
static int accept_record(struct rv_sample_engine *e, const struct perf_event_header *rec)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	const struct id_trailer *trailer;

	if (rec->size < sizeof(*rec) + sizeof(*trailer))
		return 0;
	if (rec->type == PERF_RECORD_SAMPLE && is_extra(e, rec))
		return accept_extra(e, rec);
	if (rec->type == PERF_RECORD_SAMPLE) {
		if (is_switch_state(e, rec)) {
			e->stats.switches++;
		} else {
			e->stats.samples++;
			if (e->unwinder)
				return rv_online_unwind_push_sample(e->unwinder, rec, e->draining,
								    sample_time(e, rec),
								    e->sink_err);
		}
		if (!e->config.full_execution) {
			e->stats.sample_bytes += rec->size;
			/* Straight into the flight recorder, sorted once at the end:
			 * a copy less per sample than going through the reorder
			 * buffer, which matters for 8 KiB DWARF samples. */
			rv_flight_recorder_push(&e->flight, rec);
			return 0;
		}
		return rv_reorder_push(&e->reorder, e->draining, rec, sample_time(e, rec));
	}
	trailer = (const struct id_trailer *)(const void *)(bytes + rec->size - sizeof(*trailer));
	switch (rec->type) {
	case PERF_RECORD_LOST: {
		uint64_t lost;

		memcpy(&lost, bytes + 16, sizeof(lost));
		e->stats.lost += lost;
		break;
	}
	case PERF_RECORD_LOST_SAMPLES: {
		uint64_t lost;

		memcpy(&lost, bytes + 8, sizeof(lost));
		e->stats.lost += lost;
		break;
	}
	case PERF_RECORD_THROTTLE:
		e->stats.throttled++;
		return 0;
	case PERF_RECORD_UNTHROTTLE:
		return 0;
	case PERF_RECORD_MMAP:
		return 0; /* MMAP2 carries the same and more */
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		return accept_switch(e, rec, trailer);
	default:
		if (!keep_sideband(e, rec))
			return 0;
		if (e->unwinder &&
		    rv_online_unwind_push_sideband(e->unwinder, rec, trailer->time, e->sink_err))
			return -ENOMEM;
		break;
	}
	return rv_reorder_push(&e->reorder, e->draining, rec, trailer->time);
}

static int accept_drained(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct rv_sample_engine *e = ctx;

	e->sink_err = err;
	if (accept_record(e, rec))
		return err->code ? -err->code
				 : rv_error_set(err, ENOMEM, "out of memory buffering samples");
	return 0;
}

/* An unwound sample (online_unwind) where a drained sample would go. */
static int keep_unwound(void *ctx, const struct perf_event_header *rec, size_t stream,
			uint64_t time)
{
	struct rv_sample_engine *e = ctx;

	if (!e->config.full_execution) {
		e->stats.sample_bytes += rec->size;
		rv_flight_recorder_push(&e->flight, rec);
		return 0;
	}
	return rv_reorder_push(&e->reorder, stream, rec, time) ? -ENOMEM : 0;
}

/* Takes what the unwinding thread finished (all of it, waiting, with wait). */
static int take_unwound(struct rv_sample_engine *e, bool wait, struct rv_error *err)
{
	if (!e->unwinder)
		return 0;
	if (wait)
		rv_online_unwind_flush(e->unwinder);
	if (rv_online_unwind_take(e->unwinder, keep_unwound, e))
		return rv_error_set(err, ENOMEM, "out of memory keeping unwound samples");
	return 0;
}

static int drain_ring(struct rv_sample_engine *e, struct ring *r, struct rv_error *err)
{
	struct rv_perf_ring ring = { .base = r->base,
				     .page_size = e->page_size,
				     .data_bytes = r->mmap_bytes - e->page_size,
				     .copy = e->wrap_copy };
	char what[64];

	snprintf(what, sizeof(what), "CPU %d's sample buffer", r->cpu);
	e->draining = (size_t)(r - e->rings);
	return rv_perf_ring_drain(&ring, what, accept_drained, e, err);
}

int rv_sample_engine_drain(struct rv_sample_engine *e, struct rv_error *err)
{
	uint64_t pass_start = monotonic_ns(), release;
	int ret;

	for (size_t i = 0; i < e->nr_rings; i++) {
		ret = drain_ring(e, &e->rings[i], err);
		if (ret)
			return ret;
	}
	/* Every ring has been read since the previous pass began: the
	 * unwinding thread may take what is older, in time order (a mapping
	 * read from one ring before the samples read from another) */
	if (e->unwinder)
		rv_online_unwind_release(e->unwinder, e->previous_pass_start);
	ret = take_unwound(e, false, err);
	if (ret)
		return ret;
	/* Everything stamped before the previous pass began has been read from
	 * the rings by now, and unwound but for what the unwinding thread still
	 * holds. The gate's marks come in after each drain (the session reads
	 * the gate's records before it, and hands them over after): a mark
	 * stamped just before the previous pass began may come after this one,
	 * but every mark stamped before the pass before it has come. */
	release = e->pass_before_previous_start;
	if (e->unwinder && e->config.full_execution) {
		uint64_t oldest = rv_online_unwind_oldest(e->unwinder);

		if (oldest < release)
			release = oldest;
	}
	e->sink_err = err;
	ret = rv_reorder_release(&e->reorder, release, sink, e);
	e->pass_before_previous_start = e->previous_pass_start;
	e->previous_pass_start = pass_start;
	if (!ret && e->config.full_execution) {
		/* a capture flushed as it grows: what was released so far */
		rv_perf_writer_set_time_range(e->config.capture, e->first_time, e->last_time);
		ret = rv_perf_writer_flush_if_due(e->config.capture, err);
	}
	if (!ret && !e->config.full_execution && e->config.rescue)
		ret = rv_perf_writer_flush_if_due(e->config.rescue, err);
	return ret;
}

size_t rv_sample_engine_output_fds(const struct rv_sample_engine *e, int *cpus, int *fds,
				   size_t max)
{
	size_t n = 0;

	if (!e->config.bpf_output)
		return 0;
	for (size_t i = 0; i < e->nr_rings && n < max; i++, n++) {
		cpus[n] = e->rings[i].cpu;
		fds[n] = e->rings[i].fd;
	}
	return n;
}

size_t rv_sample_engine_pollfds(const struct rv_sample_engine *e, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < e->nr_rings && n < max; i++, n++) {
		fds[n].fd = e->rings[i].fd;
		fds[n].events = POLLIN;
		fds[n].revents = 0;
	}
	return n;
}

/* ---- synthesizing what existed before recording began ---- */

/* Room for any record synth.h builds (4096 + PATH_MAX bytes). */
struct synth_buffer {
	union {
		struct perf_event_header header;
		uint8_t bytes[8192];
	};
};

/* Synthesized records carry the trailer of the engine's events, with the
 * first CPU's id, as perf's synthesized records carry its first event's. */
static struct rv_synth engine_synth(const struct rv_sample_engine *e)
{
	struct rv_synth s = { .sample_type = e->attr.sample_type, .sample_id_all = true };

	return s;
}

static struct rv_synth_id engine_id(const struct rv_sample_engine *e, uint32_t pid, uint32_t tid,
				    uint64_t time)
{
	struct rv_synth_id id = {
		.pid = pid, .tid = tid, .cpu = 0, .time = time, .id = e->rings[0].id
	};

	return id;
}

struct synth_ctx {
	struct rv_sample_engine *e;
	uint64_t time;
};

static int push_synthesized(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct synth_ctx *s = ctx;

	if (s->e->unwinder && rv_online_unwind_push_sideband(s->e->unwinder, rec, s->time, err))
		return -err->code;
	if (rv_reorder_push(&s->e->reorder, MISC_STREAM(s->e), rec, s->time))
		return rv_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The targets' threads and mappings; in DWARF mode the mappings of data
 * files too, as mmap_data reports them live. */
static int synth_targets(struct rv_sample_engine *e, uint64_t time, struct rv_error *err)
{
	struct synth_ctx ctx = { e, time };
	struct rv_proc_synth p = { .synth = engine_synth(e),
				   .id = e->rings[0].id,
				   .time = time,
				   .data_mappings = e->config.dwarf,
				   .emit = push_synthesized,
				   .ctx = &ctx };

	return rv_proc_synth_processes(&p, e->config.pids, e->config.nr_pids, err);
}

/* The kernel's text as one mapping, as perf writes it, so that perf report
 * resolves kernel samples: "[kernel.kallsyms]_text" from _text to the end. */
static int synth_kernel_mmap(struct rv_sample_engine *e, uint64_t time)
{
	struct rv_synth synth = engine_synth(e);
	struct rv_synth_id id = engine_id(e, UINT32_MAX, 0, time);
	struct synth_buffer b;
	uint64_t text = 0;
	char line[512];
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, symbol[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, symbol) == 3 &&
		    !strcmp(symbol, "_text")) {
			text = addr;
			break;
		}
	}
	fclose(f);
	if (!text)
		return 0; /* kptr_restrict hides addresses: nothing to map */
	if (!rv_synth_mmap(&synth, b.bytes, sizeof(b.bytes), UINT32_MAX, 0, text, UINT64_MAX - text,
			   text, "[kernel.kallsyms]_text", PERF_RECORD_MISC_KERNEL, &id))
		return 0; /* cannot happen: the name is short */
	return rv_reorder_push(&e->reorder, MISC_STREAM(e), &b.header, time);
}

int rv_sample_engine_start(struct rv_sample_engine *e, struct rv_error *err)
{
	uint64_t time = monotonic_ns();

	for (size_t i = 0; i < e->nr_rings; i++) {
		if (ioctl(e->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0))
			return rv_error_set(err, errno, "cannot enable sampling on CPU %d: %s",
					    e->rings[i].cpu, strerror(errno));
		if (e->rings[i].switch_fd >= 0)
			ioctl(e->rings[i].switch_fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	rv_extra_open_enable(e->extra, true);
	e->started = true;
	if (e->config.full_execution || e->config.rescue) {
		int ret = e->config.full_execution
				  ? declare_attrs(e, e->config.capture, &e->declared, err)
				  : declare_attrs(e, e->config.rescue, &e->rescue_declared, err);

		/* a valid file from the start, flushed or not yet */
		if (!ret)
			ret = rv_perf_writer_flush(e->config.full_execution ? e->config.capture
									    : e->config.rescue,
						   err);
		if (ret)
			return ret;
	}
	e->previous_pass_start = e->pass_before_previous_start = time;
	if (e->config.include_kernel && synth_kernel_mmap(e, time))
		return rv_error_set(err, ENOMEM, "out of memory");
	/* After enabling, so that a mapping made in between is seen twice rather
	 * than never. */
	return synth_targets(e, time, err);
}

static void read_filter_stats(struct rv_sample_engine *e)
{
	uint64_t counts[RV_FILTER_NR_STATS];
	struct rv_error ignored = { 0 };

	if (!e->filter ||
	    rv_bpf_percpu_sums(e->filter->maps.filter_stats, counts, RV_FILTER_NR_STATS,
			       "the sampling filter's counts", &ignored))
		return;
	e->stats.filter_kept = counts[RV_FILTER_KEPT];
	e->stats.filter_other = counts[RV_FILTER_OTHER];
	e->stats.filter_thread = counts[RV_FILTER_THREAD];
	e->stats.filter_window = counts[RV_FILTER_WINDOW];
	e->stats.children_unfollowed = counts[RV_FILTER_UNFOLLOWED];
}

struct held_sample {
	uint64_t time;
	size_t arrival;
	const struct perf_event_header *rec;
};

static int compare_held(const void *a, const void *b)
{
	const struct held_sample *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

static bool selected(const struct rv_sample_engine *e, const struct perf_event_header *rec,
		     const struct rv_sample_selection *sel)
{
	uint64_t time = sample_time(e, rec);

	if (!sel)
		return true;
	return time >= sel->since && time <= sel->until &&
	       (!sel->tid || sample_tid(e, rec) == sel->tid);
}

/* The id of CPU cpu's event (the first event's when that CPU has none). */
static const struct ring *output_ring(const struct rv_sample_engine *e, uint32_t cpu)
{
	for (size_t i = 0; i < e->nr_rings; i++)
		if (e->rings[i].cpu == (int)cpu)
			return &e->rings[i];
	return e->nr_rings ? &e->rings[0] : NULL;
}

/* The source's next record as a sample in buf; *rec NULL at its end. */
static int next_from_source(struct rv_sample_engine *e, uint64_t *buf, size_t size,
			    const struct perf_event_header **rec, uint64_t *time,
			    struct rv_error *err)
{
	struct rv_output_sample s;
	const struct ring *ring;

	*rec = NULL;
	if (!e->source.next(e->source.ctx, &s))
		return 0;
	ring = output_ring(e, s.cpu);
	if (!ring)
		return rv_error_set(err, ENODEV, "no bpf-output event to file a record under");
	if (!rv_output_sample_build(buf, size, ring->id, &s))
		return rv_error_set(err, E2BIG, "a record of %u bytes is too large", s.raw_size);
	*rec = (const struct perf_event_header *)(const void *)buf;
	*time = s.time;
	return 0;
}

/* Writes, merged by time, the samples of the flight recorder that sel selects
 * (all with sel NULL, none without `samples`) and the sideband and marks not
 * yet written up to `until`. The recorder holds samples in the order the
 * rings were drained, which is time order per CPU only, so they are sorted
 * here. Marks come in the order the gate reported them, nearly sorted; they
 * are sorted too. *taken: samples written. */
static int write_merged(struct rv_sample_engine *e, bool samples,
			const struct rv_sample_selection *sel, uint64_t until, size_t *taken,
			struct rv_error *err)
{
	size_t cursor = 0, visited = 0, n = 0, next = 0, nr_marks = 0, next_mark = 0;
	size_t side = e->sideband_written;
	uint64_t src_buf[(OUTPUT_RAW + 4 + 256 + 7) / 8];
	const struct perf_event_header *src_rec = NULL;
	bool from_source = samples && !sel && e->source.next;
	uint64_t t_src = UINT64_MAX;
	struct held_sample *held = malloc((e->flight.count ? e->flight.count : 1) * sizeof(*held));
	struct held_sample *marks = NULL;
	const struct perf_event_header *rec;
	int ret = 0;

	if (!held)
		return rv_error_set(err, ENOMEM, "out of memory sorting %zu samples",
				    e->flight.count);
	while (samples && (rec = rv_flight_recorder_next(&e->flight, &cursor, &visited))) {
		if (!selected(e, rec, sel))
			continue;
		held[n] = (struct held_sample){ sample_time(e, rec), n, rec };
		n++;
	}
	if (n)
		qsort(held, n, sizeof(*held), compare_held);
	for (size_t at = 0; at < e->marks.used;) {
		const struct perf_event_header *m = (const void *)(e->marks.data + at);

		if (!(nr_marks % 64)) {
			struct held_sample *grown =
				realloc(marks, (nr_marks + 64) * sizeof(*marks));

			if (!grown) {
				free(marks);
				free(held);
				return rv_error_set(err, ENOMEM, "out of memory sorting marks");
			}
			marks = grown;
		}
		marks[nr_marks] = (struct held_sample){ mark_time(m), nr_marks, m };
		nr_marks++;
		at += m->size;
	}
	if (nr_marks)
		qsort(marks, nr_marks, sizeof(*marks), compare_held);
	for (;;) {
		uint64_t t_side = UINT64_MAX, t_sample = UINT64_MAX, t_mark = UINT64_MAX;
		const struct perf_event_header *sb = NULL;

		if (from_source && !src_rec) {
			ret = next_from_source(e, src_buf, sizeof(src_buf), &src_rec, &t_src, err);
			if (ret)
				break;
			if (!src_rec)
				from_source = false, t_src = UINT64_MAX;
		}

		if (side < e->sideband.used) {
			sb = (const void *)(e->sideband.data + side);
			t_side = sideband_time(sb);
			if (t_side > until)
				sb = NULL, t_side = UINT64_MAX;
		}
		if (next < n)
			t_sample = held[next].time;
		if (next_mark < nr_marks && marks[next_mark].time <= until)
			t_mark = marks[next_mark].time;
		if (!sb && next == n && t_mark == UINT64_MAX && !src_rec)
			break;
		if (sb && t_side <= t_sample && t_side <= t_mark && t_side <= t_src) {
			rec = sb;
			side += sb->size;
		} else if (src_rec && t_src <= t_sample && t_src <= t_mark) {
			rec = src_rec;
			src_rec = NULL;
			e->stats.written_samples++;
			note_time(e, t_src);
		} else if (next < n && t_sample <= t_mark) {
			note_time(e, held[next].time);
			rec = held[next++].rec;
			if (is_counted_sample(e, rec))
				e->stats.written_samples++;
		} else {
			rec = marks[next_mark++].rec;
		}
		ret = rv_perf_writer_write(e->config.capture, rec, err);
		if (ret)
			break;
	}
	e->sideband_written = side;
	if (!ret && next_mark) {
		/* the marks written leave the list; the rest keep their order */
		struct record_list rest = { 0 };

		for (size_t i = next_mark; i < nr_marks && !ret; i++)
			if (list_append(&rest, marks[i].rec))
				ret = rv_error_set(err, ENOMEM, "out of memory keeping marks");
		if (!ret) {
			free(e->marks.data);
			e->marks = rest;
		} else {
			free(rest.data);
		}
	}
	if (taken)
		*taken = next;
	free(marks);
	free(held);
	return ret;
}

/* When a mark's record begins: a window's start (its time less its
 * duration, capture/marks.h's raw layout), else its time. */
static uint64_t mark_start(const struct perf_event_header *rec, uint64_t time)
{
	struct rv_mark_raw raw;

	if (rec->size < OUTPUT_RAW + sizeof(raw))
		return time;
	memcpy(&raw, (const uint8_t *)rec + OUTPUT_RAW, sizeof(raw));
	if (raw.kind == RV_MARK_WINDOW && time > raw.duration_ns)
		return time - raw.duration_ns;
	return time;
}

int rv_sample_engine_add_mark(struct rv_sample_engine *e, const struct perf_event_header *rec,
			      uint64_t time, struct rv_error *err)
{
	int ret;

	e->stats.marks++;
	note_time(e, mark_start(rec, time));
	if (e->config.full_execution && e->declared.attrs) {
		ret = declare_attrs(e, e->config.capture, &e->declared, err);
		if (ret)
			return ret;
	}
	if (!e->config.full_execution && e->config.rescue) {
		ret = declare_attrs(e, e->config.rescue, &e->rescue_declared, err);
		if (!ret)
			ret = rv_perf_writer_write(e->config.rescue, rec, err);
		if (ret)
			return ret;
	}
	if (e->config.full_execution)
		ret = rv_reorder_push(&e->reorder, MISC_STREAM(e), rec, time);
	else
		ret = list_append(&e->marks, rec);
	return ret ? rv_error_set(err, ENOMEM, "out of memory keeping the gate's records") : 0;
}

size_t rv_output_sample_build(void *buf, size_t size, uint64_t id, const struct rv_output_sample *s)
{
	uint8_t *out = buf;
	uint32_t raw_size = (uint32_t)(((uint64_t)s->raw_size + 4 + 7) / 8 * 8 - 4);
	uint64_t total = (uint64_t)OUTPUT_RAW + raw_size;
	struct perf_event_header header = {
		.type = PERF_RECORD_SAMPLE,
		.misc = s->ip ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL,
	};
	uint32_t cpu_res[2] = { s->cpu, 0 };
	uint32_t pid_tid[2] = { s->pid, s->tid };

	if (s->raw_size > UINT16_MAX || total > UINT16_MAX || total > size)
		return 0;
	header.size = (uint16_t)total;
	memset(out, 0, (size_t)total);
	memcpy(out, &header, sizeof(header));
	memcpy(out + 8, &id, 8);
	memcpy(out + 16, &s->ip, 8);
	memcpy(out + OUTPUT_TID - 4, pid_tid, 8);
	memcpy(out + OUTPUT_TIME, &s->time, 8);
	memcpy(out + OUTPUT_TIME + 8, cpu_res, 8);
	memcpy(out + OUTPUT_RAW_SIZE, &raw_size, 4);
	if (s->raw_size)
		memcpy(out + OUTPUT_RAW, s->raw, s->raw_size);
	return (size_t)total;
}

int rv_sample_engine_push_output(struct rv_sample_engine *e, const struct rv_output_sample *s,
				 struct rv_error *err)
{
	uint64_t record[(OUTPUT_RAW + 4 + 256 + 7) / 8];
	const struct ring *ring = output_ring(e, s->cpu);
	size_t stream = MISC_STREAM(e) + 1 + s->cpu;

	if (!e->config.bpf_output || !e->config.full_execution)
		return rv_error_set(err, EINVAL,
				    "streamed records go only to a bpf-output engine's capture");
	if (!ring)
		return rv_error_set(err, ENODEV, "no bpf-output event to file a record under");
	if (!rv_output_sample_build(record, sizeof(record), ring->id, s))
		return rv_error_set(err, E2BIG, "a record of %u bytes is too large", s->raw_size);
	if (stream >= e->reorder.nr_streams)
		stream = MISC_STREAM(e);
	e->stats.samples++;
	if (rv_reorder_push(&e->reorder, stream, (const struct perf_event_header *)record, s->time))
		return rv_error_set(err, ENOMEM, "out of memory buffering records");
	return 0;
}

int rv_sample_engine_add_lost(struct rv_sample_engine *e, uint32_t cpu, uint64_t lost,
			      uint64_t time, struct rv_error *err)
{
	struct {
		struct perf_event_header header;
		uint64_t lost;
		struct id_trailer trailer;
	} rec;
	const struct ring *ring = output_ring(e, cpu);

	if (!lost)
		return 0;
	memset(&rec, 0, sizeof(rec));
	rec.header.type = PERF_RECORD_LOST_SAMPLES;
	rec.header.size = sizeof(rec);
	rec.lost = lost;
	rec.trailer.time = time;
	rec.trailer.cpu = cpu;
	rec.trailer.id = ring ? ring->id : 0;
	e->stats.lost += lost;
	if (rv_reorder_push(&e->reorder, MISC_STREAM(e), &rec.header, time))
		return rv_error_set(err, ENOMEM, "out of memory keeping a count of lost records");
	return 0;
}

void rv_sample_engine_set_source(struct rv_sample_engine *e, const struct rv_output_source *source)
{
	e->source = *source;
}

void rv_sample_engine_time_range(const struct rv_sample_engine *e, uint64_t *first, uint64_t *last)
{
	*first = e->first_time;
	*last = e->last_time;
}

int rv_sample_engine_add_output(struct rv_sample_engine *e, const struct rv_output_sample *s,
				struct rv_error *err)
{
	uint64_t record[(OUTPUT_RAW + 4 + 256 + 7) / 8];
	const struct ring *ring = output_ring(e, s->cpu);
	size_t size;

	if (!e->config.bpf_output || e->config.full_execution)
		return rv_error_set(
			err, EINVAL,
			"kept records go only to a flight recorder of bpf-output events");
	if (!ring)
		return rv_error_set(err, ENODEV, "no bpf-output event to file a kept record under");
	size = rv_output_sample_build(record, sizeof(record), ring->id, s);
	if (!size)
		return rv_error_set(err, E2BIG, "a kept record of %u bytes is too large",
				    s->raw_size);
	e->stats.samples++;
	rv_flight_recorder_push(&e->flight, (const struct perf_event_header *)record);
	return 0;
}

int rv_sample_engine_snapshot(struct rv_sample_engine *e, const struct rv_sample_selection *sel,
			      size_t *taken, struct rv_error *err)
{
	struct rv_flight_recorder rest;
	const struct perf_event_header *rec;
	size_t cursor = 0, visited = 0, written = 0;
	int ret;

	if (taken)
		*taken = 0;
	if (e->config.full_execution)
		return rv_error_set(err, EINVAL, "no snapshots with --full-execution");
	e->sink_err = err;
	ret = take_unwound(e, true, err);
	if (ret)
		return ret;
	/* sideband up to the snapshot's end has left the reorder buffer */
	ret = rv_reorder_release(&e->reorder, sel->until + 1, sink, e);
	if (!ret)
		ret = write_merged(e, true, sel, sel->until, &written, err);
	if (ret)
		return ret;
	if (taken)
		*taken = written;
	if (!written)
		return 0;
	e->stats.snapshots++;
	/* What the snapshot took leaves the recorder; the rest keeps its order. */
	ret = rv_flight_recorder_init(&rest, e->flight.capacity);
	if (ret)
		return rv_error_set(err, -ret, "cannot allocate a %zu-byte flight recorder",
				    e->flight.capacity);
	while ((rec = rv_flight_recorder_next(&e->flight, &cursor, &visited)))
		if (!selected(e, rec, sel))
			rv_flight_recorder_push(&rest, rec);
	rest.evicted_records = e->flight.evicted_records;
	rest.evicted_bytes = e->flight.evicted_bytes;
	rest.oversized_records = e->flight.oversized_records;
	rv_flight_recorder_take(&e->flight, &rest);
	return 0;
}

/* The switch-state events' attribute, named RV_SWITCH_STATE_EVENT. */
static int add_switch_attr(struct rv_sample_engine *e, struct rv_perf_writer *w,
			   struct rv_error *err)
{
	uint64_t *ids = calloc(e->nr_rings, sizeof(*ids));
	size_t n = 0;
	int ret;

	if (!ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < e->nr_rings; i++)
		if (e->rings[i].switch_fd >= 0)
			ids[n++] = e->rings[i].switch_id;
	ret = rv_perf_writer_add_attr(w, &e->switch_attr, RV_SWITCH_STATE_EVENT, ids, n, err);
	free(ids);
	return ret;
}

/* Declares the events in the capture, once: with --full-execution when
 * sampling starts (a capture flushed as it grows is read with them), the
 * marks' at the first mark; otherwise at stop. */
static int declare_attrs(struct rv_sample_engine *e, struct rv_perf_writer *w, struct declared *d,
			 struct rv_error *err)
{
	int ret = 0;

	if (!d->attrs) {
		struct perf_event_attr written = e->attr;
		uint64_t *ids = calloc(e->nr_rings ? e->nr_rings : 1, sizeof(*ids));

		if (!ids)
			return rv_error_set(err, ENOMEM, "out of memory");
		for (size_t i = 0; i < e->nr_rings; i++)
			ids[i] = e->rings[i].id;
		if (e->unwinder) {
			/* the samples are call chains now */
			written.sample_type &=
				~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
			written.sample_regs_user = 0;
			written.sample_stack_user = 0;
			written.exclude_callchain_user = 0; /* the chains hold them */
		}
		ret = rv_perf_writer_add_attr(w, &written,
					      e->config.bpf_output && e->config.event_name
						      ? e->config.event_name
						      : e->clock_name,
					      ids, e->nr_rings, err);
		free(ids);
		if (!ret && e->nr_switch_events)
			ret = add_switch_attr(e, w, err);
		for (size_t i = 0; !ret && e->extra && i < e->extra_set.nr; i++) {
			const uint64_t *extra_ids;
			size_t nr_ids = rv_extra_open_ids(e->extra, i, &extra_ids);

			if (nr_ids)
				ret = rv_perf_writer_add_attr(w, rv_extra_open_attr(e->extra, i),
							      e->extra_set.events[i].name,
							      extra_ids, nr_ids, err);
		}
		if (ret)
			return ret;
		d->attrs = true;
	}
	if (!d->mark_attr && e->stats.marks) {
		struct perf_event_attr attr;
		uint64_t id = RV_MARK_ID;

		rv_mark_attr(&attr, e->attr.use_clockid, e->attr.clockid);
		ret = rv_perf_writer_add_attr(w, &attr, RV_MARK_EVENT_NAME, &id, 1, err);
		if (ret)
			return ret;
		d->mark_attr = true;
	}
	return 0;
}

int rv_sample_engine_stop(struct rv_sample_engine *e, bool keep_samples, struct rv_error *err)
{
	int ret;

	for (size_t i = 0; i < e->nr_rings; i++) {
		ioctl(e->rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		if (e->rings[i].switch_fd >= 0)
			ioctl(e->rings[i].switch_fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	rv_extra_open_enable(e->extra, false);
	ret = rv_sample_engine_drain(e, err);
	if (!ret)
		ret = take_unwound(e, true, err);
	if (ret)
		return ret;
	e->sink_err = err;
	ret = rv_reorder_release(&e->reorder, UINT64_MAX, sink, e);
	if (ret)
		return ret;
	read_filter_stats(e);
	if (!e->config.full_execution) {
		e->stats.evicted = e->flight.evicted_records;
		ret = write_merged(e, keep_samples, NULL, UINT64_MAX, NULL, err);
		if (ret)
			return ret;
	}
	rv_perf_writer_set_time_range(e->config.capture, e->first_time, e->last_time);
	return declare_attrs(e, e->config.capture, &e->declared, err);
}

void rv_sample_engine_stats(const struct rv_sample_engine *e, struct rv_sample_stats *out)
{
	*out = e->stats;
	if (e->unwinder) {
		struct rv_online_unwind_stats us;

		rv_online_unwind_stats(e->unwinder, &us);
		out->unwound = us.unwound;
		out->not_unwound = us.not_unwound;
		out->unwind_failed = us.failed + us.bad;
		out->stacks_cut = us.cut;
		out->unwind_stopped = us.stopped;
		out->unwind_ns = us.unwind_ns;
		out->unwind_cpu_ns = us.thread_cpu_ns;
	}
	out->children_followed = e->children.nr;
}

void rv_sample_engine_free(struct rv_sample_engine *e)
{
	if (!e)
		return;
	rv_extra_open_free(e->extra); /* before the rings their records go to */
	for (size_t i = 0; i < e->nr_rings; i++) {
		if (e->rings[i].base)
			munmap(e->rings[i].base, e->rings[i].mmap_bytes);
		if (e->rings[i].switch_fd >= 0)
			close(e->rings[i].switch_fd);
		close(e->rings[i].fd);
	}
	free(e->rings);
	bpf_link__destroy(e->switch_link);
	rv_online_unwind_free(e->unwinder);
	for (size_t i = 0; i < 2; i++)
		bpf_link__destroy(e->follow_links[i]);
	rv_map_destroy(&e->children);
	sample_tasks_bpf__destroy(e->tasks);
	sample_filter_bpf__destroy(e->filter);
	rv_reorder_destroy(&e->reorder);
	rv_flight_recorder_destroy(&e->flight);
	free(e->sideband.data);
	free(e->marks.data);
	free(e->wrap_copy);
	free(e);
}
