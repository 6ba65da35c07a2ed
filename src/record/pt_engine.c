/* pt_engine.c: the Intel PT engine at run time; see pt_engine.h.
 *
 * Rings are drained by perf_ring.h and the targets' threads and mappings
 * synthesized by proc_synth.h, as the sampling engine does; records go to the
 * capture as the kernel wrote them, in the layout of the caller's attributes.
 */
#define RV_LOG_DOMAIN "pt"
#include "record/pt_engine.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "capture/auxtrace.h"
#include "capture/synth.h"
#include "record/aux_snapshot.h"
#include "record/perf_ring.h"
#include "record/proc_synth.h"
#include "util/log.h"
#include "util/private_file.h"

/* The intel_pt PMU's format bits (arch/x86/events/intel/pt.c), which
 * AUXTRACE_INFO names for the decoder. */
#define PT_CFG_CYC		(1ULL << 1)
#define PT_CFG_MTC		(1ULL << 9)
#define PT_CFG_TSC		(1ULL << 10)
#define PT_CFG_NORETCOMP	(1ULL << 11)
#define PT_CFG_MTC_PERIOD_MASK	(0xfULL << 14)
#define PT_CFG_PSB_PERIOD_SHIFT 24

/* perf_event_attr.aux_action (offset 116), absent from the local uapi header. */
#define ATTR_AUX_ACTION_OFFSET 116

/* perf keeps a reference of two PSB periods, at most this much. */
#define MAX_REF_BYTES (256 * 1024)

/* ---- the real kernel ---- */

static int sys_perf_event_open(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu,
			       int group_fd, unsigned long flags)
{
	int fd = (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);

	return fd < 0 ? -errno : fd;
}

static int sys_mmap(void *ctx, int fd, size_t length, int prot, off_t offset, void **out)
{
	void *p = mmap(NULL, length, prot, MAP_SHARED, fd, offset);

	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

static int sys_munmap(void *ctx, void *addr, size_t length)
{
	return munmap(addr, length) ? -errno : 0;
}

static int sys_ioctl(void *ctx, int fd, unsigned long request, unsigned long arg)
{
	return ioctl(fd, request, arg) ? -errno : 0;
}

static int sys_poll(void *ctx, struct pollfd *fds, size_t nr, int timeout_ms)
{
	int n = poll(fds, (nfds_t)nr, timeout_ms);

	return n < 0 ? -errno : n;
}

static int sys_close(void *ctx, int fd)
{
	return close(fd) ? -errno : 0;
}

static uint64_t sys_read_tsc(void *ctx)
{
	return __rdtsc();
}

static uint64_t sys_clock_ns(void *ctx)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct rv_pt_ops rv_pt_syscall_ops = {
	.perf_event_open = sys_perf_event_open,
	.mmap = sys_mmap,
	.munmap = sys_munmap,
	.ioctl = sys_ioctl,
	.poll = sys_poll,
	.close = sys_close,
	.read_tsc = sys_read_tsc,
	.clock_ns = sys_clock_ns,
};

/* ---- state ---- */

/* A data ring: the PT event's, or a sideband/sibling event's own where the
 * kernel refused to redirect it. */
struct ring {
	int fd;
	size_t slot;
	void *base;
	size_t bytes; /* mmap page + data */
};

struct slot {
	pid_t tid; /* per-thread: the thread; per-CPU: cpu_pid */
	int cpu;   /* -1 per-thread */
	int pt_fd, sb_fd;
	int *sib_fds;
	uint64_t pt_id, sb_id;
	uint64_t *sib_ids;
	void *aux;
	struct rv_aux_snapshot_state snap;
	uint64_t aux_tail; /* full mode: what was drained */
	int resume_fd;	   /* the cpu-clock sibling with aux_resume, or -1 */
	uint64_t resume_id;
	pid_t resume_tid; /* armed: the thread whose PT a resume sample frees; 0 */
	bool resume_armed;
};

struct rv_pt_engine {
	struct rv_pt_engine_config config;
	const struct rv_pt_ops *ops;
	struct perf_event_attr pt_attr, sb_attr, resume_attr;
	struct perf_event_attr *sib_attrs;
	struct slot *slots;
	size_t nr_slots;
	struct ring *rings;
	size_t nr_rings;
	size_t page_size;
	uint8_t *record_copy; /* a record split by a ring's end, made whole */
	uint8_t *aux_copy;    /* a snapshot or full-mode span, made linear */
	struct rv_perf_time_conv time_conv;
	bool running;
	bool round_pending; /* records written since the last FINISHED_ROUND */
	/* resumes done and not yet taken (rv_pt_engine_take_resume) */
	struct rv_pt_resume done[RV_PT_MAX_PENDING_RESUMES];
	size_t nr_done;
	struct rv_pt_record_stats stats;
};

static void init_slot(struct slot *s)
{
	memset(s, 0, sizeof(*s));
	s->pt_fd = s->sb_fd = s->resume_fd = -1;
}

/* ---- errors in the user's words ---- */

static bool attr_has_aux_action(const struct perf_event_attr *attr)
{
	uint32_t action;

	if (attr->size < ATTR_AUX_ACTION_OFFSET + sizeof(action))
		return false;
	memcpy(&action, (const uint8_t *)attr + ATTR_AUX_ACTION_OFFSET, sizeof(action));
	return action != 0;
}

static int explain_open(int error, const char *what, const struct perf_event_attr *attr,
			const struct slot *s, struct rv_error *err)
{
	char where[64];

	if (s->cpu >= 0)
		snprintf(where, sizeof(where), "CPU %d", s->cpu);
	else
		snprintf(where, sizeof(where), "thread %d", (int)s->tid);
	switch (error) {
	case EACCES:
	case EPERM:
		return rv_error_set(
			err, error,
			"not allowed to open the %s event for %s: "
			"kernel.perf_event_paranoid forbids it; run rearview as root, or "
			"lower it (sysctl kernel.perf_event_paranoid=%d)",
			what, where, attr->exclude_kernel ? 1 : -1);
	case EINVAL:
		if (attr_has_aux_action(attr))
			return rv_error_set(
				err, error,
				"the kernel refused the %s event's aux_start_paused/aux_pause/"
				"aux_resume bits: pausing and resuming Intel PT needs Linux 6.13 "
				"or later; record without --filter, or upgrade the kernel",
				what);
		if (attr->aux_sample_size)
			return rv_error_set(
				err, error,
				"the kernel refused to sample the AUX area from the %s "
				"event (PERF_SAMPLE_AUX needs Linux 5.5 and an Intel PT "
				"group leader); record without --trigger",
				what);
		return rv_error_set(
			err, error,
			"the kernel refused the %s event's configuration for %s; run "
			"rearview --dry-run to see it, and check the --timer-resolution "
			"settings against the CPU",
			what, where);
	case EOPNOTSUPP:
		return rv_error_set(err, error,
				    "the %s event asks for something this CPU's Intel PT or this "
				    "kernel does not support (pausing, AUX sampling, address "
				    "filters or a timing mode); run rearview --dry-run to see it",
				    what);
	case ENOENT:
	case ENODEV:
		return rv_error_set(
			err, error,
			"no %s PMU of type %u in this kernel: Intel PT is not available "
			"here; use --backend sample",
			what, attr->type);
	case EBUSY:
		return rv_error_set(err, error,
				    "Intel PT is busy for %s: another tool (perf, a debugger or a "
				    "hypervisor) is using it; stop it and try again",
				    where);
	case ESRCH:
		return rv_error_set(err, error, "cannot trace %s: it no longer exists", where);
	case E2BIG:
		return rv_error_set(err, error,
				    "the kernel does not know the %s event's attribute size %u: "
				    "it is older than the features asked for",
				    what, attr->size);
	case EMFILE:
	case ENFILE:
		return rv_error_set(err, error,
				    "out of file descriptors opening the %s event for %s; raise "
				    "ulimit -n",
				    what, where);
	default:
		return rv_error_set(err, error, "cannot open the %s event for %s: %s", what, where,
				    strerror(error));
	}
}

/* ---- opening ---- */

static bool power_of_two(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int check_config(const struct rv_pt_engine_config *c, size_t page_size, struct rv_error *err)
{
	if (!c->pt_attr || !c->sideband_attr || !c->capture)
		return rv_error_set(err, EINVAL,
				    "the PT engine needs a PT attribute, a sideband attribute and "
				    "a capture");
	if ((c->nr_tids == 0) == (c->nr_cpus == 0))
		return rv_error_set(err, EINVAL,
				    "the PT engine traces either threads or CPUs: give one list");
	if (c->aux_bytes % page_size || !power_of_two(c->aux_bytes / page_size))
		return rv_error_set(err, EINVAL,
				    "the AUX area must be a power-of-two number of pages, not %llu "
				    "bytes; round --snapshot-size up to one",
				    (unsigned long long)c->aux_bytes);
	if (!power_of_two(c->data_pages))
		return rv_error_set(err, EINVAL,
				    "the sideband ring must be a power-of-two number of pages, not "
				    "%zu",
				    c->data_pages);
	if (c->nr_siblings && !c->attach)
		return rv_error_set(err, EINVAL,
				    "the PT engine needs an attach callback for its siblings");
	return 0;
}

static int open_event(struct rv_pt_engine *e, struct perf_event_attr *attr, struct slot *s,
		      int group_fd, const char *what, int *fd_out, uint64_t *id_out,
		      struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	int fd = o->perf_event_open(o->ctx, attr, s->tid, s->cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
	int ret;

	if (fd < 0)
		return explain_open(-fd, what, attr, s, err);
	*fd_out = fd;
	ret = o->ioctl(o->ctx, fd, PERF_EVENT_IOC_ID, (unsigned long)id_out);
	if (ret)
		return rv_error_set(err, -ret, "cannot read the id of the %s event: %s", what,
				    strerror(-ret));
	return 0;
}

static int add_ring(struct rv_pt_engine *e, int fd, size_t slot, struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	size_t bytes = (1 + e->config.data_pages) * e->page_size;
	struct ring *r = &e->rings[e->nr_rings];
	void *base;
	int ret = o->mmap(o->ctx, fd, bytes, PROT_READ | PROT_WRITE, 0, &base);

	if (ret)
		return rv_error_set(err, -ret,
				    "cannot map a %zu KiB sideband ring: %s; check ulimit -l and "
				    "kernel.perf_event_mlock_kb",
				    bytes / 1024, strerror(-ret));
	*r = (struct ring){ .fd = fd, .slot = slot, .base = base, .bytes = bytes };
	e->nr_rings++;
	return 0;
}

static int map_aux(struct rv_pt_engine *e, struct slot *s, struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	struct perf_event_mmap_page *page = e->rings[e->nr_rings - 1].base;
	uint64_t offset = (1 + e->config.data_pages) * e->page_size;
	int prot = e->config.mode == RV_PT_FULL ? PROT_READ | PROT_WRITE : PROT_READ;
	int ret;

	page->aux_offset = offset;
	page->aux_size = e->config.aux_bytes;
	ret = o->mmap(o->ctx, s->pt_fd, e->config.aux_bytes, prot, (off_t)offset, &s->aux);
	if (ret) {
		s->aux = NULL;
		return rv_error_set(err, -ret,
				    "cannot map a %llu KiB Intel PT buffer: %s; use a smaller "
				    "--snapshot-size, or raise ulimit -l and "
				    "kernel.perf_event_mlock_kb",
				    (unsigned long long)(e->config.aux_bytes / 1024),
				    strerror(-ret));
	}
	return 0;
}

/* Sends an event's records to the slot's ring, or gives it its own. */
static int redirect(struct rv_pt_engine *e, int fd, struct slot *s, size_t slot,
		    struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	int ret = o->ioctl(o->ctx, fd, PERF_EVENT_IOC_SET_OUTPUT, (unsigned long)s->pt_fd);

	if (ret == 0)
		return 0;
	rv_debug("no shared ring for an event of slot %zu (%s); mapping its own", slot,
		 strerror(-ret));
	return add_ring(e, fd, slot, err);
}

/* Bytes of reference the snapshot state keeps: two PSB periods, as perf
 * does, when that is small beside the area. */
static size_t snapshot_ref_bytes(const struct rv_pt_engine *e)
{
	unsigned psb = (unsigned)((e->pt_attr.config >> PT_CFG_PSB_PERIOD_SHIFT) & 0xf);
	uint64_t ref = 2ull << (psb + 11);

	if (ref > MAX_REF_BYTES)
		ref = MAX_REF_BYTES;
	return ref <= e->config.aux_bytes / 4 ? (size_t)ref : 0;
}

static int open_slot(struct rv_pt_engine *e, size_t index, struct rv_error *err)
{
	const struct rv_pt_engine_config *c = &e->config;
	struct slot *s = &e->slots[index];
	int ret;

	s->sib_fds = malloc((c->nr_siblings ? c->nr_siblings : 1) * sizeof(*s->sib_fds));
	s->sib_ids = calloc(c->nr_siblings ? c->nr_siblings : 1, sizeof(*s->sib_ids));
	if (!s->sib_fds || !s->sib_ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nr_siblings; i++)
		s->sib_fds[i] = -1;
	if (rv_aux_snapshot_state_init(&s->snap, snapshot_ref_bytes(e)))
		return rv_error_set(err, ENOMEM, "out of memory");

	ret = open_event(e, &e->pt_attr, s, -1, "intel_pt", &s->pt_fd, &s->pt_id, err);
	for (size_t i = 0; !ret && i < c->nr_siblings; i++) {
		const char *name = c->siblings[i].name ? c->siblings[i].name : "sibling";

		ret = open_event(e, &e->sib_attrs[i], s, s->pt_fd, name, &s->sib_fds[i],
				 &s->sib_ids[i], err);
	}
	if (!ret && c->resume_attr)
		ret = open_event(e, &e->resume_attr, s, s->pt_fd, "cpu-clock (aux_resume)",
				 &s->resume_fd, &s->resume_id, err);
	if (!ret)
		ret = open_event(e, &e->sb_attr, s, -1, "sideband", &s->sb_fd, &s->sb_id, err);
	if (!ret)
		ret = add_ring(e, s->pt_fd, index, err);
	if (!ret)
		ret = map_aux(e, s, err);
	if (!ret)
		ret = redirect(e, s->sb_fd, s, index, err);
	for (size_t i = 0; !ret && i < c->nr_siblings; i++)
		ret = redirect(e, s->sib_fds[i], s, index, err);
	if (!ret && s->resume_fd >= 0)
		ret = redirect(e, s->resume_fd, s, index, err);
	for (size_t i = 0; !ret && i < c->nr_siblings; i++)
		ret = c->attach(c->attach_ctx, s->sib_fds[i], i, err);
	return ret;
}

int rv_pt_engine_open(struct rv_pt_engine **out, const struct rv_pt_engine_config *config,
		      struct rv_error *err)
{
	struct rv_pt_engine *e;
	long page = sysconf(_SC_PAGESIZE);
	size_t nr_slots;
	int ret;

	*out = NULL;
	ret = check_config(config, (size_t)page, err);
	if (ret)
		return ret;
	e = calloc(1, sizeof(*e));
	if (!e)
		return rv_error_set(err, ENOMEM, "out of memory");
	e->config = *config;
	e->ops = config->ops ? config->ops : &rv_pt_syscall_ops;
	e->page_size = (size_t)page;
	e->pt_attr = *config->pt_attr;
	e->pt_attr.disabled = 1;
	e->sb_attr = *config->sideband_attr;
	e->sb_attr.disabled = 1;
	if (config->resume_attr) {
		e->resume_attr = *config->resume_attr;
		e->resume_attr.disabled = 1;
	}
	nr_slots = config->nr_tids ? config->nr_tids : config->nr_cpus;
	e->slots = calloc(nr_slots, sizeof(*e->slots));
	e->rings = calloc(nr_slots * (3 + config->nr_siblings), sizeof(*e->rings));
	e->sib_attrs = calloc(config->nr_siblings ? config->nr_siblings : 1, sizeof(*e->sib_attrs));
	e->record_copy = malloc(RV_PERF_RING_MAX_RECORD);
	e->aux_copy = malloc(config->aux_bytes);
	if (!e->slots || !e->rings || !e->sib_attrs || !e->record_copy || !e->aux_copy) {
		rv_pt_engine_free(e);
		return rv_error_set(err, ENOMEM, "out of memory for %zu Intel PT buffers",
				    nr_slots);
	}
	for (size_t i = 0; i < config->nr_siblings; i++) {
		e->sib_attrs[i] = *config->siblings[i].attr;
		e->sib_attrs[i].disabled = 1;
	}
	for (size_t i = 0; i < nr_slots; i++) {
		init_slot(&e->slots[i]);
		e->slots[i].tid = config->nr_tids ? config->tids[i] : config->cpu_pid;
		e->slots[i].cpu = config->nr_tids ? -1 : config->cpus[i];
	}
	e->nr_slots = nr_slots;
	for (size_t i = 0; i < nr_slots; i++) {
		ret = open_slot(e, i, err);
		if (ret) {
			rv_pt_engine_free(e);
			return ret;
		}
	}
	rv_debug("%zu Intel PT slot(s), %llu KiB AUX each, %s mode", nr_slots,
		 (unsigned long long)(config->aux_bytes / 1024),
		 config->mode == RV_PT_FULL ? "full" : "snapshot");
	*out = e;
	return 0;
}

/* ---- time ---- */

/* The mmap page's TSC conversion, read under its sequence lock. */
static int read_time_conv(struct rv_pt_engine *e, struct rv_error *err)
{
	volatile struct perf_event_mmap_page *page = e->rings[0].base;

	for (int attempt = 0; attempt < 1000; attempt++) {
		uint32_t seq = page->lock;
		struct rv_perf_time_conv tc;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		tc.time_shift = page->time_shift;
		tc.time_mult = page->time_mult;
		tc.time_zero = page->time_zero;
		tc.time_cycles = page->time_cycles;
		tc.time_mask = page->time_mask;
		tc.cap_user_time_zero = page->cap_user_time_zero;
		tc.cap_user_time_short = page->cap_user_time_short;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (page->lock == seq && !(seq & 1)) {
			e->time_conv = tc;
			if (!tc.cap_user_time_zero)
				rv_debug("the kernel gives no TSC conversion (cap_user_time_zero "
					 "is 0): trace times cannot be matched to sideband times");
			return 0;
		}
	}
	return rv_error_set(err, EAGAIN,
			    "the kernel kept updating the perf mmap page; cannot read its TSC "
			    "conversion");
}

/* perf time now: from the TSC when it converts, else CLOCK_MONOTONIC. */
static uint64_t now_time(const struct rv_pt_engine *e)
{
	if (e->time_conv.cap_user_time_zero)
		return rv_perf_tsc_to_time(&e->time_conv, e->ops->read_tsc(e->ops->ctx));
	return e->ops->clock_ns(e->ops->ctx);
}

/* ---- writing ---- */

static int write_record(struct rv_pt_engine *e, const void *rec, struct rv_error *err)
{
	e->round_pending = true;
	return rv_perf_writer_write(e->config.capture, rec, err);
}

static int finish_round(struct rv_pt_engine *e, struct rv_error *err)
{
	uint64_t round[2];

	if (!e->round_pending)
		return 0;
	e->round_pending = false;
	if (!rv_synth_finished_round(round, sizeof(round)))
		return rv_error_set(err, EOVERFLOW, "a FINISHED_ROUND record did not fit");
	return rv_perf_writer_write(e->config.capture, (const void *)round, err);
}

static int write_info(struct rv_pt_engine *e, struct rv_error *err)
{
	const struct rv_pt_engine_config *c = &e->config;
	struct rv_intel_pt_info info = {
		.pmu_type = c->pmu_type ? c->pmu_type : e->pt_attr.type,
		.time_shift = e->time_conv.time_shift,
		.time_mult = e->time_conv.time_mult,
		.time_zero = e->time_conv.time_zero,
		.cap_user_time_zero = e->time_conv.cap_user_time_zero,
		.tsc_bit = PT_CFG_TSC,
		.noretcomp_bit = PT_CFG_NORETCOMP,
		/* 2: context switches come from the context_switch attribute flag. */
		.have_sched_switch = e->sb_attr.context_switch ? 2 : 0,
		.snapshot_mode = c->mode == RV_PT_SNAPSHOT,
		.per_cpu_mmaps = c->nr_cpus > 0,
		.mtc_bit = PT_CFG_MTC,
		.mtc_freq_bits = PT_CFG_MTC_PERIOD_MASK,
		.tsc_ctc_ratio_n = c->tsc_ctc_ratio_n,
		.tsc_ctc_ratio_d = c->tsc_ctc_ratio_d,
		.cyc_bit = PT_CFG_CYC,
		.max_non_turbo_ratio = c->max_nonturbo_ratio,
		.filter = c->filter ? c->filter : "",
	};
	int ret = rv_perf_writer_write_time_conv(c->capture, &e->time_conv, err);

	if (!ret)
		ret = rv_perf_writer_write_intel_pt_info(c->capture, &info, err);
	return ret;
}

static int add_attrs(struct rv_pt_engine *e, struct rv_error *err)
{
	const struct rv_pt_engine_config *c = &e->config;
	uint64_t *ids = calloc(e->nr_slots, sizeof(*ids));
	int ret;

	if (!ids)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < e->nr_slots; i++)
		ids[i] = e->slots[i].pt_id;
	ret = rv_perf_writer_add_attr(c->capture, &e->pt_attr,
				      c->pt_name ? c->pt_name : "intel_pt//", ids, e->nr_slots,
				      err);
	for (size_t i = 0; !ret && i < e->nr_slots; i++)
		ids[i] = e->slots[i].sb_id;
	if (!ret)
		ret = rv_perf_writer_add_attr(c->capture, &e->sb_attr,
					      c->sideband_name ? c->sideband_name : "dummy:u", ids,
					      e->nr_slots, err);
	for (size_t k = 0; !ret && k < c->nr_siblings; k++) {
		for (size_t i = 0; i < e->nr_slots; i++)
			ids[i] = e->slots[i].sib_ids[k];
		ret = rv_perf_writer_add_attr(c->capture, &e->sib_attrs[k],
					      c->siblings[k].name ? c->siblings[k].name : "sibling",
					      ids, e->nr_slots, err);
	}
	free(ids);
	return ret;
}

/* ---- what existed before recording ---- */

static int write_synthesized(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	return write_record(ctx, rec, err);
}

/* Only mappings whose code the decoder can read: anonymous ones and
 * [vsyscall] would only be listed as missing. */
static int synthesize(struct rv_pt_engine *e, struct rv_error *err)
{
	struct rv_proc_synth p = { .root = e->config.root,
				   .synth = { .sample_type = e->sb_attr.sample_type,
					      .sample_id_all = e->sb_attr.sample_id_all },
				   .id = e->slots[0].sb_id,
				   .time = now_time(e),
				   .code_files_only = true,
				   .emit = write_synthesized,
				   .ctx = e };

	return rv_proc_synth_processes(&p, e->config.pids, e->config.nr_pids, err);
}

/* ---- running ---- */

static int enable_all(struct rv_pt_engine *e, struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;

	for (size_t i = 0; i < e->nr_slots; i++) {
		struct slot *s = &e->slots[i];
		int ret = o->ioctl(o->ctx, s->sb_fd, PERF_EVENT_IOC_ENABLE, 0);

		/* the siblings one by one and the leader alone, not with
		 * PERF_IOC_FLAG_GROUP, which would enable the resume sibling
		 * too; the gate's siblings, opened enabled, run with it */
		for (size_t k = 0; !ret && k < e->config.nr_siblings; k++)
			ret = o->ioctl(o->ctx, s->sib_fds[k], PERF_EVENT_IOC_ENABLE, 0);
		if (!ret)
			ret = o->ioctl(o->ctx, s->pt_fd, PERF_EVENT_IOC_ENABLE, 0);
		if (ret)
			return rv_error_set(err, -ret, "cannot enable Intel PT: %s",
					    strerror(-ret));
	}
	return 0;
}

int rv_pt_engine_start(struct rv_pt_engine *e, struct rv_error *err)
{
	int ret = read_time_conv(e, err);

	if (!ret)
		ret = add_attrs(e, err);
	if (!ret)
		ret = write_info(e, err);
	if (!ret)
		ret = enable_all(e, err);
	if (ret)
		return ret;
	e->running = true;
	/* After enabling, so that a mapping made in between is seen twice
	 * rather than never. */
	ret = synthesize(e, err);
	if (!ret)
		ret = finish_round(e, err);
	return ret;
}

size_t rv_pt_engine_pollfds(const struct rv_pt_engine *e, struct pollfd *fds, size_t max)
{
	size_t n = 0;

	for (; n < e->nr_rings && n < max; n++)
		fds[n] = (struct pollfd){ .fd = e->rings[n].fd, .events = POLLIN };
	return n;
}

/* The size of a PERF_SAMPLE_AUX sample's trace, when the fields before it
 * have fixed sizes (as the gate's samples do); 0 otherwise. */
static uint64_t aux_sample_bytes(const struct rv_pt_engine *e, const struct perf_event_header *rec)
{
	const uint64_t fixed = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
			       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	const struct perf_event_attr *attr = NULL;
	const uint8_t *bytes = (const uint8_t *)rec;
	uint64_t size;

	if (rec->size >= 16 && e->config.nr_siblings) {
		uint64_t id;

		memcpy(&id, bytes + 8, sizeof(id));
		for (size_t s = 0; s < e->nr_slots && !attr; s++)
			for (size_t k = 0; k < e->config.nr_siblings && !attr; k++)
				if (e->slots[s].sib_ids[k] == id &&
				    (e->sib_attrs[k].sample_type & PERF_SAMPLE_IDENTIFIER))
					attr = &e->sib_attrs[k];
	}
	if (!attr && e->config.nr_siblings == 1)
		attr = &e->sib_attrs[0];
	if (!attr || !(attr->sample_type & PERF_SAMPLE_AUX) ||
	    (attr->sample_type & (PERF_SAMPLE_AUX - 1) & ~fixed))
		return 0;
	size_t at = sizeof(*rec) + 8 * (size_t)__builtin_popcountll(attr->sample_type & fixed);
	if (at + 8 > rec->size)
		return 0;
	memcpy(&size, bytes + at, sizeof(size));
	return size <= rec->size - at - 8 ? size : 0;
}

static void account(struct rv_pt_engine *e, const struct perf_event_header *rec)
{
	const uint8_t *bytes = (const uint8_t *)rec;

	switch (rec->type) {
	case PERF_RECORD_AUX: {
		struct rv_perf_aux aux;
		struct rv_error ignored;

		if (rv_perf_aux_parse(rec, &aux, &ignored))
			break;
		if (aux.flags & PERF_AUX_FLAG_TRUNCATED)
			e->stats.truncated++;
		if (aux.flags & PERF_AUX_FLAG_COLLISION)
			e->stats.collisions++;
		break;
	}
	case PERF_RECORD_LOST:
		if (rec->size >= 24) {
			uint64_t lost;

			memcpy(&lost, bytes + 16, sizeof(lost));
			e->stats.lost_records += lost;
		}
		break;
	case PERF_RECORD_SAMPLE: {
		uint64_t size = aux_sample_bytes(e, rec);

		e->stats.aux_samples++;
		e->stats.aux_sample_bytes += size;
		return;
	}
	default:
		break;
	}
	e->stats.sideband_records++;
}

/* A sample of a slot's resume sibling: {id, ip, pid/tid, time, cpu}
 * (RV_PT_SAMPLE_TYPE). It is the engine's bookkeeping, not written to the
 * capture: the overflow that wrote it resumed the PT event of its thread
 * (__perf_event_overflow's aux_resume comes after the sample). Returns
 * whether rec was one. */
static bool resume_sample(struct rv_pt_engine *e, const struct perf_event_header *rec,
			  struct rv_error *err, int *ret)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	const struct rv_pt_ops *o = e->ops;
	uint64_t id, tids, time;
	struct slot *s = NULL;
	size_t i;

	*ret = 0;
	if (!e->config.resume_attr || rec->type != PERF_RECORD_SAMPLE || rec->size < 40)
		return false;
	memcpy(&id, bytes + 8, sizeof(id));
	for (i = 0; i < e->nr_slots && !s; i++)
		if (e->slots[i].resume_fd >= 0 && e->slots[i].resume_id == id)
			s = &e->slots[i];
	if (!s)
		return false;
	memcpy(&tids, bytes + 24, sizeof(tids));
	memcpy(&time, bytes + 32, sizeof(time));
	e->stats.resume_samples++;
	if (!s->resume_armed || (s->resume_tid && (pid_t)(tids >> 32) != s->resume_tid))
		return true; /* another thread's event: it was not paused */
	s->resume_armed = false;
	if (e->resume_attr.inherit) {
		/* enabled for every thread, not refreshed: off again */
		*ret = o->ioctl(o->ctx, s->resume_fd, PERF_EVENT_IOC_DISABLE, 0);
		if (*ret) {
			*ret = rv_error_set(err, -*ret, "cannot stop the Intel PT resume event: %s",
					    strerror(-*ret));
			return true;
		}
	}
	if (e->nr_done < RV_PT_MAX_PENDING_RESUMES)
		e->done[e->nr_done++] = (struct rv_pt_resume){ .slot = i - 1,
							       .tid = (pid_t)(tids >> 32),
							       .time = time };
	return true;
}

static int drained(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct rv_pt_engine *e = ctx;
	int ret;

	if (resume_sample(e, rec, err, &ret))
		return ret;
	account(e, rec);
	return write_record(e, rec, err);
}

static int drain_ring(struct rv_pt_engine *e, struct ring *r, struct rv_error *err)
{
	struct rv_perf_ring ring = { .base = r->base,
				     .page_size = e->page_size,
				     .data_bytes = r->bytes - e->page_size,
				     .copy = e->record_copy };
	char what[64];

	snprintf(what, sizeof(what), "the Intel PT sideband ring of slot %zu", r->slot);
	return rv_perf_ring_drain(&ring, what, drained, e, err);
}

static int write_auxtrace(struct rv_pt_engine *e, size_t index, const struct rv_aux_snapshot *snap,
			  struct rv_error *err)
{
	struct slot *s = &e->slots[index];
	struct rv_perf_auxtrace a = {
		.size = snap->size,
		.offset = snap->offset,
		.reference = e->ops->read_tsc(e->ops->ctx),
		.idx = (uint32_t)index,
		.tid = s->cpu < 0 ? (uint32_t)s->tid : UINT32_MAX,
		.cpu = s->cpu < 0 ? UINT32_MAX : (uint32_t)s->cpu,
	};

	rv_aux_snapshot_copy(s->aux, snap, e->aux_copy);
	e->stats.aux_bytes += snap->size;
	e->stats.snapshots++;
	e->round_pending = true;
	return rv_perf_writer_write_auxtrace(e->config.capture, &a, e->aux_copy, err);
}

static struct perf_event_mmap_page *slot_page(const struct rv_pt_engine *e, const struct slot *s)
{
	for (size_t i = 0; i < e->nr_rings; i++)
		if (e->rings[i].fd == s->pt_fd)
			return e->rings[i].base;
	return NULL;
}

/* Full mode: everything between aux_tail and aux_head, then the tail moves. */
static int drain_aux(struct rv_pt_engine *e, size_t index, struct rv_error *err)
{
	struct slot *s = &e->slots[index];
	struct perf_event_mmap_page *page = slot_page(e, s);
	struct rv_aux_snapshot span;
	uint64_t head;
	int ret;

	head = __atomic_load_n(&page->aux_head, __ATOMIC_ACQUIRE);
	if (head == s->aux_tail)
		return 0;
	if (rv_aux_span(e->config.aux_bytes, s->aux_tail, head, &span))
		return rv_error_set(err, EIO,
				    "the kernel's AUX head of slot %zu (%llu) is not within one "
				    "buffer of what was read (%llu)",
				    index, (unsigned long long)head,
				    (unsigned long long)s->aux_tail);
	ret = write_auxtrace(e, index, &span, err);
	if (ret)
		return ret;
	s->aux_tail = head;
	__atomic_store_n(&page->aux_tail, head, __ATOMIC_RELEASE);
	return 0;
}

static int drain_rings(struct rv_pt_engine *e, struct rv_error *err)
{
	for (size_t i = 0; i < e->nr_rings; i++) {
		int ret = drain_ring(e, &e->rings[i], err);

		if (ret)
			return ret;
	}
	return 0;
}

int rv_pt_engine_drain(struct rv_pt_engine *e, struct rv_error *err)
{
	int ret = drain_rings(e, err);

	for (size_t i = 0; !ret && e->config.mode == RV_PT_FULL && i < e->nr_slots; i++)
		ret = drain_aux(e, i, err);
	if (!ret)
		ret = finish_round(e, err);
	return ret;
}

int rv_pt_engine_poll(struct rv_pt_engine *e, int timeout_ms, struct rv_error *err)
{
	struct pollfd *fds = calloc(e->nr_rings ? e->nr_rings : 1, sizeof(*fds));
	size_t n;
	int ret;

	if (!fds)
		return rv_error_set(err, ENOMEM, "out of memory");
	n = rv_pt_engine_pollfds(e, fds, e->nr_rings);
	ret = e->ops->poll(e->ops->ctx, fds, n, timeout_ms);
	free(fds);
	if (ret < 0 && ret != -EINTR)
		return rv_error_set(err, -ret, "cannot wait for Intel PT data: %s", strerror(-ret));
	return rv_pt_engine_drain(e, err);
}

static int snapshot_all(struct rv_pt_engine *e, struct rv_error *err)
{
	for (size_t i = 0; i < e->nr_slots; i++) {
		struct slot *s = &e->slots[i];
		struct perf_event_mmap_page *page = slot_page(e, s);
		struct rv_aux_snapshot snap;
		struct rv_aux_snapshot_request req = {
			.area = s->aux,
			.area_size = e->config.aux_bytes,
			.aux_head = __atomic_load_n(&page->aux_head, __ATOMIC_ACQUIRE),
			.since_previous = true,
			.max_bytes = e->config.snapshot_max_bytes,
		};
		int ret = rv_aux_snapshot_find(&s->snap, &req, &snap);

		if (ret)
			return rv_error_set(err, -ret,
					    "cannot work out the Intel PT snapshot of "
					    "slot %zu",
					    i);
		if (snap.lapped)
			e->stats.lapped++;
		if (snap.size == 0)
			continue;
		ret = write_auxtrace(e, i, &snap, err);
		if (ret)
			return ret;
	}
	return 0;
}

static int set_pt(struct rv_pt_engine *e, unsigned long request, unsigned long arg,
		  struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;

	for (size_t i = 0; i < e->nr_slots; i++) {
		int ret = o->ioctl(o->ctx, e->slots[i].pt_fd, request, arg);

		if (ret)
			return rv_error_set(err, -ret, "cannot %s Intel PT: %s",
					    request == PERF_EVENT_IOC_ENABLE ? "enable" : "disable",
					    strerror(-ret));
	}
	return 0;
}

int rv_pt_engine_snapshot(struct rv_pt_engine *e, struct rv_error *err)
{
	int ret;

	if (e->config.mode != RV_PT_SNAPSHOT)
		return rv_error_set(err, EINVAL, "snapshots need the AUX area in snapshot mode");
	/* Disabling makes the driver flush its buffers and publish aux_head. */
	ret = set_pt(e, PERF_EVENT_IOC_DISABLE, 0, err);
	if (!ret)
		ret = drain_rings(e, err);
	if (!ret)
		ret = snapshot_all(e, err);
	if (!ret)
		ret = finish_round(e, err);
	if (!ret && e->running)
		ret = set_pt(e, PERF_EVENT_IOC_ENABLE, 0, err);
	return ret;
}

size_t rv_pt_engine_slot_of(const struct rv_pt_engine *e, pid_t tid, int cpu)
{
	for (size_t i = 0; i < e->nr_slots; i++) {
		const struct slot *s = &e->slots[i];

		if (s->cpu >= 0 ? s->cpu == cpu : s->tid == tid)
			return i;
	}
	return SIZE_MAX;
}

int rv_pt_engine_resume(struct rv_pt_engine *e, size_t slot, pid_t tid, struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	struct slot *s;
	int ret;

	if (slot >= e->nr_slots || e->slots[slot].resume_fd < 0)
		return rv_error_set(err, EINVAL,
				    "no Intel PT resume event in slot %zu (the plan has none)",
				    slot);
	s = &e->slots[slot];
	/* _perf_event_refresh refuses inherited events: those are enabled,
	 * and disabled again at the sample of the thread (resume_sample) */
	ret = e->resume_attr.inherit ? o->ioctl(o->ctx, s->resume_fd, PERF_EVENT_IOC_ENABLE, 0)
				     : o->ioctl(o->ctx, s->resume_fd, PERF_EVENT_IOC_REFRESH, 1);
	if (ret)
		return rv_error_set(err, -ret,
				    "cannot arm the event that resumes Intel PT after a "
				    "snapshot: %s",
				    strerror(-ret));
	s->resume_tid = s->cpu >= 0 ? tid : 0;
	s->resume_armed = true;
	return 0;
}

bool rv_pt_engine_take_resume(struct rv_pt_engine *e, struct rv_pt_resume *out)
{
	if (!e->nr_done)
		return false;
	*out = e->done[0];
	memmove(&e->done[0], &e->done[1], (e->nr_done - 1) * sizeof(e->done[0]));
	e->nr_done--;
	return true;
}

int rv_pt_engine_stop(struct rv_pt_engine *e, bool snapshot, struct rv_error *err)
{
	const struct rv_pt_ops *o = e->ops;
	int ret;

	e->running = false;
	for (size_t i = 0; i < e->nr_slots; i++) {
		o->ioctl(o->ctx, e->slots[i].pt_fd, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
		o->ioctl(o->ctx, e->slots[i].sb_fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	ret = rv_pt_engine_drain(e, err);
	if (!ret && snapshot && e->config.mode == RV_PT_SNAPSHOT)
		ret = snapshot_all(e, err);
	if (!ret)
		ret = finish_round(e, err);
	return ret;
}

void rv_pt_engine_stats(const struct rv_pt_engine *e, struct rv_pt_record_stats *out)
{
	*out = e->stats;
}

int rv_pt_engine_pt_fd(const struct rv_pt_engine *e, size_t slot)
{
	return slot < e->nr_slots ? e->slots[slot].pt_fd : -1;
}

bool rv_pt_engine_time_conv(const struct rv_pt_engine *e, struct rv_perf_time_conv *out)
{
	*out = e->time_conv;
	return e->time_conv.cap_user_time_zero && e->time_conv.time_mult;
}

const struct rv_pt_ops *rv_pt_engine_ops(const struct rv_pt_engine *e)
{
	return e->ops;
}

void rv_pt_engine_free(struct rv_pt_engine *e)
{
	if (!e)
		return;
	const struct rv_pt_ops *o = e->ops;

	for (size_t i = 0; i < e->nr_slots; i++) {
		struct slot *s = &e->slots[i];

		if (s->aux)
			o->munmap(o->ctx, s->aux, e->config.aux_bytes);
		rv_aux_snapshot_state_destroy(&s->snap);
	}
	for (size_t i = 0; i < e->nr_rings; i++)
		o->munmap(o->ctx, e->rings[i].base, e->rings[i].bytes);
	for (size_t i = 0; i < e->nr_slots; i++) {
		struct slot *s = &e->slots[i];

		for (size_t k = 0; s->sib_fds && k < e->config.nr_siblings; k++)
			if (s->sib_fds[k] >= 0)
				o->close(o->ctx, s->sib_fds[k]);
		if (s->resume_fd >= 0)
			o->close(o->ctx, s->resume_fd);
		if (s->sb_fd >= 0)
			o->close(o->ctx, s->sb_fd);
		if (s->pt_fd >= 0)
			o->close(o->ctx, s->pt_fd);
		free(s->sib_fds);
		free(s->sib_ids);
	}
	free(e->slots);
	free(e->rings);
	free(e->sib_attrs);
	free(e->record_copy);
	free(e->aux_copy);
	free(e);
}

/* ---- kernel scope: kcore_dir ---- */

static int open_private(const char *path, struct rv_error *err)
{
	return rv_private_file_create(path, err);
}

static int copy_file(const char *from, const char *to, struct rv_error *err)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, ret = 0;
	ssize_t n;

	if (in < 0)
		return rv_error_set(err, errno, "cannot read '%s': %s", from, strerror(errno));
	out = open_private(to, err);
	if (out < 0) {
		close(in);
		return out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n) {
			ret = rv_error_set(err, errno ? errno : EIO, "cannot write '%s': %s", to,
					   strerror(errno ? errno : EIO));
			break;
		}
	}
	if (n < 0 && !ret)
		ret = rv_error_set(err, errno, "cannot read '%s': %s", from, strerror(errno));
	close(in);
	if (close(out) && !ret)
		ret = rv_error_set(err, errno, "cannot write '%s': %s", to, strerror(errno));
	return ret;
}

/* The kernel's text [_stext or _text, _etext) from a kallsyms file. */
static bool kernel_text(const char *kallsyms, uint64_t *start, uint64_t *end)
{
	FILE *f = fopen(kallsyms, "re");
	char line[512];
	uint64_t text = 0, stext = 0, etext = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (!strcmp(name, "_text"))
			text = addr;
		else if (!strcmp(name, "_stext"))
			stext = addr;
		else if (!strcmp(name, "_etext"))
			etext = addr;
	}
	fclose(f);
	*start = stext ? stext : text;
	*end = etext;
	return *start && *end > *start;
}

/* The modules' extent from a /proc/modules file: "name size refs deps state addr". */
static bool module_range(const char *modules, uint64_t *start, uint64_t *end)
{
	FILE *f = fopen(modules, "re");
	char line[1024];

	*start = UINT64_MAX;
	*end = 0;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long size, addr;

		if (sscanf(line, "%*s %llu %*s %*s %*s %llx", &size, &addr) != 2 || !addr)
			continue;
		if (addr < *start)
			*start = addr;
		if (addr + size > *end)
			*end = addr + size;
	}
	fclose(f);
	return *end > *start;
}

/* kcore's kernel text and module segments as a smaller ELF core file, as
 * perf's kcore_copy keeps them: the ELF header, one PT_LOAD per range kept,
 * and their bytes. */
static int copy_kcore(const char *kcore, const char *kallsyms, const char *modules, const char *to,
		      struct rv_error *err)
{
	uint64_t ranges[2][2];
	size_t nr_ranges = 0;
	Elf64_Ehdr eh;
	int in, out, ret = 0;

	if (kernel_text(kallsyms, &ranges[0][0], &ranges[0][1]))
		nr_ranges++;
	if (module_range(modules, &ranges[nr_ranges][0], &ranges[nr_ranges][1]))
		nr_ranges++;
	if (!nr_ranges)
		return rv_error_set(
			err, ENOENT,
			"cannot find the kernel text in '%s' (kptr_restrict hides it?); "
			"pass --vmlinux instead",
			kallsyms);
	in = open(kcore, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return rv_error_set(err, errno, "cannot read '%s': %s", kcore, strerror(errno));
	if (pread(in, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) {
		close(in);
		return rv_error_set(err, EINVAL, "'%s' is not a 64-bit ELF core file", kcore);
	}
	Elf64_Phdr *ph = calloc(eh.e_phnum, sizeof(*ph));
	Elf64_Phdr *kept = calloc(2 * (size_t)eh.e_phnum, sizeof(*kept));
	Elf64_Phdr *source = calloc(2 * (size_t)eh.e_phnum, sizeof(*source));
	size_t nr_kept = 0;

	if (!ph || !kept || !source) {
		free(ph);
		free(kept);
		free(source);
		close(in);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	if (pread(in, ph, eh.e_phnum * sizeof(*ph), (off_t)eh.e_phoff) !=
	    (ssize_t)(eh.e_phnum * sizeof(*ph))) {
		ret = rv_error_set(err, EIO, "cannot read the program headers of '%s'", kcore);
		goto out;
	}
	for (size_t i = 0; i < eh.e_phnum; i++) {
		for (size_t r = 0; r < nr_ranges && ph[i].p_type == PT_LOAD; r++) {
			uint64_t lo = ph[i].p_vaddr, hi = ph[i].p_vaddr + ph[i].p_filesz;

			if (lo < ranges[r][0])
				lo = ranges[r][0];
			if (hi > ranges[r][1])
				hi = ranges[r][1];
			if (lo >= hi)
				continue;
			kept[nr_kept] = ph[i];
			source[nr_kept].p_offset = ph[i].p_offset + (lo - ph[i].p_vaddr);
			kept[nr_kept].p_offset = ph[i].p_offset + (lo - ph[i].p_vaddr);
			kept[nr_kept].p_vaddr = lo;
			kept[nr_kept].p_paddr = 0;
			kept[nr_kept].p_filesz = kept[nr_kept].p_memsz = hi - lo;
			nr_kept++;
		}
	}
	out = open_private(to, err);
	if (out < 0) {
		ret = out;
		goto out;
	}
	Elf64_Ehdr oh = eh;
	uint64_t at = sizeof(oh) + nr_kept * sizeof(Elf64_Phdr);

	oh.e_phoff = sizeof(oh);
	oh.e_phnum = (Elf64_Half)nr_kept;
	oh.e_shoff = 0;
	oh.e_shnum = 0;
	oh.e_shstrndx = 0;
	for (size_t i = 0; i < nr_kept; i++) {
		at = (at + 4095) & ~(uint64_t)4095;
		kept[i].p_offset = at;
		kept[i].p_align = 4096;
		at += kept[i].p_filesz;
	}
	if (pwrite(out, &oh, sizeof(oh), 0) != (ssize_t)sizeof(oh) ||
	    pwrite(out, kept, nr_kept * sizeof(*kept), sizeof(oh)) !=
		    (ssize_t)(nr_kept * sizeof(*kept)))
		ret = rv_error_set(err, EIO, "cannot write '%s'", to);
	for (size_t i = 0; !ret && i < nr_kept; i++) {
		static const size_t chunk = 1 << 20;
		char *buf = malloc(chunk);

		for (uint64_t done = 0; buf && !ret && done < kept[i].p_filesz;) {
			size_t n =
				kept[i].p_filesz - done < chunk ? kept[i].p_filesz - done : chunk;

			if (pread(in, buf, n, (off_t)(source[i].p_offset + done)) != (ssize_t)n)
				ret = rv_error_set(err, EIO,
						   "cannot read the kernel text from '%s'", kcore);
			else if (pwrite(out, buf, n, (off_t)(kept[i].p_offset + done)) !=
				 (ssize_t)n)
				ret = rv_error_set(err, EIO, "cannot write '%s'", to);
			done += n;
		}
		if (!buf)
			ret = rv_error_set(err, ENOMEM, "out of memory");
		free(buf);
	}
	if (close(out) && !ret)
		ret = rv_error_set(err, errno, "cannot write '%s': %s", to, strerror(errno));
out:
	free(ph);
	free(kept);
	free(source);
	close(in);
	return ret;
}

int rv_pt_engine_copy_kernel_files(const char *root, const char *dir, struct rv_error *err)
{
	char from[4200], to[4200], kallsyms[4200], modules[4200];
	const char *r = root ? root : "";
	int ret;

	snprintf(to, sizeof(to), "%s/kcore_dir", dir);
	if (mkdir(to, 0700) && errno != EEXIST)
		return rv_error_set(err, errno, "cannot create '%s': %s", to, strerror(errno));
	if (chmod(to, 0700)) /* one left in --working-directory keeps its mode */
		return rv_error_set(err, errno, "cannot make '%s' private: %s", to,
				    strerror(errno));
	snprintf(from, sizeof(from), "%s/proc/kallsyms", r);
	snprintf(kallsyms, sizeof(kallsyms), "%s/kcore_dir/kallsyms", dir);
	ret = copy_file(from, kallsyms, err);
	if (ret)
		return ret;
	snprintf(from, sizeof(from), "%s/proc/modules", r);
	snprintf(modules, sizeof(modules), "%s/kcore_dir/modules", dir);
	if (access(from, F_OK) && errno == ENOENT) {
		/* a kernel without loadable modules: none to list */
		ret = open_private(modules, err);
		if (ret < 0)
			return ret;
		close(ret);
	} else {
		ret = copy_file(from, modules, err);
		if (ret)
			return ret;
	}
	snprintf(from, sizeof(from), "%s/proc/kcore", r);
	if (access(from, F_OK)) {
		rv_note("%s is not there: the kernel's code is not copied into the capture (only "
			"BPF programs' code is), so its part of the trace decodes only with "
			"--vmlinux (the running kernel's vmlinux)",
			from);
		return 0;
	}
	snprintf(to, sizeof(to), "%s/kcore_dir/kcore", dir);
	return copy_kcore(from, kallsyms, modules, to, err);
}
