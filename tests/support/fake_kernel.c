/* fake_kernel.c: the simulated perf kernel of fake_kernel.h (the PT engine's
 * ops table for tests). Not a model of perf beyond what the engine uses: no
 * real fds, no interrupts, no overwriting of the data ring. Where a
 * behaviour is the kernel's, the kernel function it follows is named. */
#include "fake_kernel.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/perf_attr_ext.h"
#include "record/pt_attr.h"

struct fake_event *fake_kernel_event(struct fake_kernel *k, int fd)
{
	cr_assert(fd >= FAKE_FD0 && fd < FAKE_FD0 + k->nr, "unknown fd %d", fd);
	return &k->ev[fd - FAKE_FD0];
}

static int fake_open(void *ctx, struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
		     unsigned long flags)
{
	struct fake_kernel *k = ctx;

	if (k->fail_errno && k->opens++ == k->fail_at)
		return -k->fail_errno;
	cr_assert_lt(k->nr, FAKE_MAX);
	cr_assert(attr->disabled, "the engine opens events disabled");
	k->ev[k->nr] =
		(struct fake_event){ .open = true,
				     .attr = *attr,
				     .pid = pid,
				     .cpu = cpu,
				     .group_fd = group_fd,
				     .output_fd = -1,
				     .id = FAKE_ID0 + (uint64_t)k->nr,
				     /* perf_event_alloc: aux_start_paused sets hw.aux_paused */
				     .paused = rv_attr_aux_start_paused(attr) };
	if (rv_attr_aux_pause(attr) || rv_attr_aux_resume(attr))
		cr_assert(group_fd >= 0,
			  "aux_pause/aux_resume outside a group (the kernel: EINVAL)");
	return FAKE_FD0 + k->nr++;
}

static int fake_mmap(void *ctx, int fd, size_t length, int prot, off_t offset, void **out)
{
	struct fake_kernel *k = ctx;
	struct fake_event *ev = fake_kernel_event(k, fd);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = NULL;

	/* as the kernel (perf_mmap): a per-task event that children inherit
	 * cannot be mapped, or they would all write one buffer */
	if (ev->cpu == -1 && ev->attr.inherit)
		return -EINVAL;
	cr_assert_eq(posix_memalign(&p, page, length), 0);
	memset(p, 0, length);
	if (offset == 0) {
		struct perf_event_mmap_page *pg = p;

		ev->ring = p;
		ev->ring_bytes = length;
		pg->data_offset = page;
		pg->data_size = length - page;
		pg->time_shift = k->time_shift;
		pg->time_mult = k->time_mult;
		pg->time_zero = k->time_zero;
		pg->cap_user_time_zero = 1;
	} else {
		struct perf_event_mmap_page *pg = ev->ring;

		cr_assert_not_null(pg, "AUX mapped before the ring");
		cr_assert_eq((uint64_t)offset, pg->aux_offset, "AUX offset not announced");
		cr_assert_eq(length, pg->aux_size, "AUX size not announced");
		cr_assert(pg->aux_offset >= ev->ring_bytes);
		ev->aux = p;
		ev->aux_bytes = length;
		ev->aux_prot = prot;
	}
	*out = p;
	return 0;
}

static int fake_munmap(void *ctx, void *addr, size_t length)
{
	free(addr);
	return 0;
}

static void enable(struct fake_kernel *k, struct fake_event *ev)
{
	/* pt_event_start -> pt_config -> pt_config_start: TraceEn only when
	 * !hw.aux_paused, which stays as it was */
	ev->enabled = true;
	k->enables++;
	if (!k->enable_trace || ev->attr.type != k->pt_type || ev->traced || !ev->aux || !ev->ring)
		return;
	fake_kernel_trace(ev, k->enable_trace, k->enable_trace_size);
	ev->traced = true;
}

static bool snapshot_mode(const struct fake_event *ev)
{
	return ev->aux && !(ev->aux_prot & PROT_WRITE);
}

/* pt_event_del -> pt_event_stop(PERF_EF_UPDATE) -> perf_aux_output_end: in
 * overwrite (snapshot) mode aux_head becomes the hardware's position. */
static void disable(struct fake_kernel *k, struct fake_event *ev)
{
	if (ev->enabled && snapshot_mode(ev) && ev->ring) {
		struct perf_event_mmap_page *pg = ev->ring;

		__atomic_store_n(&pg->aux_head, ev->aux_written & (ev->aux_bytes - 1),
				 __ATOMIC_RELEASE);
	}
	ev->enabled = false;
	k->disables++;
}

/* perf_event_for_each: with PERF_IOC_FLAG_GROUP, the leader and its siblings. */
static void for_group(struct fake_kernel *k, int fd, unsigned long flags,
		      void (*fn)(struct fake_kernel *, struct fake_event *))
{
	fn(k, fake_kernel_event(k, fd));
	if (!(flags & PERF_IOC_FLAG_GROUP))
		return;
	for (int i = 0; i < k->nr; i++)
		if (k->ev[i].open && k->ev[i].group_fd == fd)
			fn(k, &k->ev[i]);
}

static int fake_ioctl(void *ctx, int fd, unsigned long request, unsigned long arg)
{
	struct fake_kernel *k = ctx;
	struct fake_event *ev = fake_kernel_event(k, fd);

	switch (request) {
	case PERF_EVENT_IOC_ID:
		*(uint64_t *)arg = ev->id;
		return 0;
	case PERF_EVENT_IOC_ENABLE:
		for_group(k, fd, arg, enable);
		return 0;
	case PERF_EVENT_IOC_DISABLE:
		for_group(k, fd, arg, disable);
		return 0;
	case PERF_EVENT_IOC_REFRESH:
		/* _perf_event_refresh: "not supported on inherited events" */
		if (ev->attr.inherit || !ev->attr.sample_period)
			return -EINVAL;
		ev->event_limit += (int)arg;
		k->refreshes++;
		enable(k, ev);
		return 0;
	case PERF_EVENT_IOC_SET_OUTPUT:
		cr_assert_not_null(fake_kernel_event(k, (int)arg)->ring,
				   "redirected to an unmapped ring");
		ev->output_fd = (int)arg;
		k->set_outputs++;
		return 0;
	default:
		return -ENOTTY;
	}
}

static int fake_poll(void *ctx, struct pollfd *fds, size_t nr, int timeout_ms)
{
	return 0;
}

static int fake_close(void *ctx, int fd)
{
	fake_kernel_event(ctx, fd)->open = false;
	return 0;
}

static uint64_t fake_tsc(void *ctx)
{
	struct fake_kernel *k = ctx;

	return k->tsc += k->tsc_step ? k->tsc_step : 1000;
}

static uint64_t fake_clock(void *ctx)
{
	return 1;
}

struct rv_pt_ops fake_kernel_ops(struct fake_kernel *k)
{
	return (struct rv_pt_ops){ .ctx = k,
				   .perf_event_open = fake_open,
				   .mmap = fake_mmap,
				   .munmap = fake_munmap,
				   .ioctl = fake_ioctl,
				   .poll = fake_poll,
				   .close = fake_close,
				   .read_tsc = fake_tsc,
				   .clock_ns = fake_clock };
}

void fake_kernel_record(struct fake_event *ev, const void *rec)
{
	struct perf_event_mmap_page *pg = ev->ring;
	uint8_t *data = (uint8_t *)ev->ring + pg->data_offset;
	uint16_t size = ((const struct perf_event_header *)rec)->size;

	cr_assert(pg->data_head + size - pg->data_tail <= pg->data_size, "ring full");
	for (uint16_t i = 0; i < size; i++)
		data[(pg->data_head + i) % pg->data_size] = ((const uint8_t *)rec)[i];
	__atomic_store_n(&pg->data_head, pg->data_head + size, __ATOMIC_RELEASE);
}

size_t fake_kernel_trace(struct fake_event *ev, const uint8_t *bytes, size_t n)
{
	struct perf_event_mmap_page *pg = ev->ring;
	bool full = ev->aux_prot & PROT_WRITE;

	if (!ev->enabled || ev->paused) {
		ev->dropped += n;
		return 0;
	}
	if (full)
		cr_assert(ev->aux_written + n - pg->aux_tail <= ev->aux_bytes, "AUX full");
	for (size_t i = 0; i < n; i++, ev->aux_written++)
		ev->aux[ev->aux_written & (ev->aux_bytes - 1)] = bytes[i];
	if (full)
		__atomic_store_n(&pg->aux_head, ev->aux_written, __ATOMIC_RELEASE);
	return n;
}

/* __perf_event_aux_pause: the state and the driver change only together. */
static void aux_pause(struct fake_kernel *k, struct fake_event *pt, bool pause)
{
	if (pause && !pt->paused) {
		pt->paused = true;
		k->pauses++;
	} else if (!pause && pt->paused) {
		pt->paused = false;
		k->resumes++;
	}
}

bool fake_kernel_overflow(struct fake_kernel *k, int fd, pid_t tid, uint64_t time)
{
	struct fake_event *ev = fake_kernel_event(k, fd);
	struct fake_event *leader = ev->group_fd >= 0 ? fake_kernel_event(k, ev->group_fd) : NULL;
	bool disable_after = false;

	/* a sibling counts only while its group is scheduled in */
	if (!ev->open || !ev->enabled || (leader && (!leader->open || !leader->enabled)))
		return false;
	ev->overflows++;
	/* __perf_event_overflow: aux_pause first ... */
	if (rv_attr_aux_pause(&ev->attr) && leader)
		aux_pause(k, leader, true);
	/* ... the refresh limit (perf_event_disable_inatomic at 0) ... */
	if (ev->event_limit && --ev->event_limit == 0)
		disable_after = true;
	/* ... the sample ... */
	if (ev->attr.sample_type == RV_PT_SAMPLE_TYPE) {
		int out_fd = ev->output_fd >= 0 ? ev->output_fd : fd;
		struct fake_event *out = fake_kernel_event(k, out_fd);
		uint64_t s[6] = { 0 };
		struct perf_event_header *h = (void *)s;

		h->type = PERF_RECORD_SAMPLE;
		h->misc = PERF_RECORD_MISC_USER;
		h->size = sizeof(s);
		s[1] = ev->id;
		s[2] = 0x401000;
		s[3] = (uint64_t)(uint32_t)ev->pid | (uint64_t)(uint32_t)tid << 32;
		s[4] = time;
		s[5] = ev->cpu >= 0 ? (uint64_t)ev->cpu : 0;
		if (out->ring)
			fake_kernel_record(out, s);
	}
	/* ... and aux_resume at its end (out:) */
	if (rv_attr_aux_resume(&ev->attr) && leader)
		aux_pause(k, leader, false);
	if (disable_after)
		disable(k, ev);
	return true;
}

void fake_write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	cr_assert_not_null(f, "cannot write %s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

void fake_proc_write(const char *root, pid_t pid, const char *comm, const char *maps)
{
	static const char *const dirs[] = { "%s/proc", "%s/proc/%d", "%s/proc/%d/task",
					    "%s/proc/%d/task/%d" };
	char path[PATH_MAX], text[64];
	int n;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		n = snprintf(path, sizeof(path), dirs[i], root, (int)pid, (int)pid);
		cr_assert(n > 0 && (size_t)n < sizeof(path));
		cr_assert(!mkdir(path, 0755) || errno == EEXIST, "cannot make %s", path);
	}
	n = snprintf(path, sizeof(path), "%s/proc/%d/task/%d/comm", root, (int)pid, (int)pid);
	cr_assert(n > 0 && (size_t)n < sizeof(path));
	snprintf(text, sizeof(text), "%s\n", comm);
	fake_write_text(path, text);
	n = snprintf(path, sizeof(path), "%s/proc/%d/maps", root, (int)pid);
	cr_assert(n > 0 && (size_t)n < sizeof(path));
	fake_write_text(path, maps);
}
