/* bpf_images.c: the JIT code of BPF programs saved for decoding, and the
 * machine-wide watch for kernel code that changes; see bpf_images.h. */
#define RV_LOG_DOMAIN "record"
#include "record/bpf_images.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/bpf_images.h"
#include "record/perf_ring.h"
#include "util/array.h"
#include "util/log.h"
#include "util/private_file.h"

#define WATCH_PAGES 16 /* per CPU: 64 KiB of KSYMBOL/BPF_EVENT/TEXT_POKE records */

struct watch_cpu {
	int fd;
	struct rv_perf_ring ring;
	size_t map_bytes;
};

struct rv_bpf_saver {
	char *path;
	int fd;
	bool header_written;
	uint32_t *saved; /* program ids */
	size_t nr_saved, cap_saved;
	struct watch_cpu *cpus;
	int nr_cpus;
	uint8_t *copy; /* a record split by a ring's end, made whole */
	rv_bpf_record_fn fn;
	void *fn_ctx;
	struct rv_bpf_saver_stats stats;
};

int rv_bpf_saver_open(struct rv_bpf_saver **out, const char *dir, struct rv_error *err)
{
	struct rv_bpf_saver *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || asprintf(&s->path, "%s/%s", dir, RV_BPF_IMAGES_FILE) < 0) {
		free(s);
		return rv_error_set(err, ENOMEM, "out of memory");
	}
	s->fd = rv_private_file_create(s->path, err);
	if (s->fd < 0) {
		int ret = s->fd;

		free(s->path);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

static bool was_saved(const struct rv_bpf_saver *s, uint32_t id)
{
	for (size_t i = 0; i < s->nr_saved; i++)
		if (s->saved[i] == id)
			return true;
	return false;
}

/* What the kernel calls function i of the program in kallsyms. */
static void function_name(char *out, size_t size, const uint8_t *tag,
			  const struct bpf_prog_info *info, const struct btf *btf,
			  const struct bpf_func_info *finfo, uint32_t nr_finfo, uint32_t i)
{
	const char *short_name = info->name[0] ? info->name : NULL;
	size_t n = (size_t)snprintf(out, size, "bpf_prog_");

	for (int k = 0; k < 8 && n + 2 < size; k++)
		n += (size_t)snprintf(out + n, size - n, "%02x", tag[k]);
	if (btf && i < nr_finfo) {
		const struct btf_type *t = btf__type_by_id(btf, finfo[i].type_id);
		const char *name = t ? btf__name_by_offset(btf, t->name_off) : NULL;

		if (name && name[0])
			short_name = name;
	}
	if (short_name && n < size)
		snprintf(out + n, size - n, "_%s", short_name);
}

/* The program's code and functions, from a second bpf_obj_get_info_by_fd
 * with room for them; then an entry per function. */
static int save_fd(struct rv_bpf_saver *s, int fd, uint32_t id, struct rv_error *err)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info), nr_funcs, nr_finfo;
	uint8_t *code = NULL, *tags = NULL;
	uint64_t *ksyms = NULL;
	uint32_t *lens = NULL;
	struct bpf_func_info *finfo = NULL;
	struct btf *btf = NULL;
	int ret = 0;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		goto gone;
	nr_funcs = info.nr_jited_ksyms;
	if (!info.jited_prog_len || !nr_funcs || info.nr_jited_func_lens != nr_funcs ||
	    info.nr_prog_tags != nr_funcs) {
		s->stats.not_jited++;
		return 0;
	}
	nr_finfo = info.func_info_rec_size == sizeof(*finfo) ? info.nr_func_info : 0;
	uint32_t jited_len = info.jited_prog_len, btf_id = info.btf_id;

	code = malloc(jited_len);
	ksyms = calloc(nr_funcs, sizeof(*ksyms));
	lens = calloc(nr_funcs, sizeof(*lens));
	tags = calloc(nr_funcs, BPF_TAG_SIZE);
	finfo = nr_finfo ? calloc(nr_finfo, sizeof(*finfo)) : NULL;
	if (!code || !ksyms || !lens || !tags || (nr_finfo && !finfo)) {
		ret = rv_error_set(err, ENOMEM, "out of memory saving BPF program %u", id);
		goto out;
	}
	memset(&info, 0, sizeof(info));
	info.jited_prog_len = jited_len;
	info.jited_prog_insns = (uint64_t)(uintptr_t)code;
	info.nr_jited_ksyms = nr_funcs;
	info.jited_ksyms = (uint64_t)(uintptr_t)ksyms;
	info.nr_jited_func_lens = nr_funcs;
	info.jited_func_lens = (uint64_t)(uintptr_t)lens;
	info.nr_prog_tags = nr_funcs;
	info.prog_tags = (uint64_t)(uintptr_t)tags;
	info.nr_func_info = nr_finfo;
	info.func_info_rec_size = sizeof(*finfo);
	info.func_info = (uint64_t)(uintptr_t)finfo;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		free(code);
		free(ksyms);
		free(lens);
		free(tags);
		free(finfo);
		goto gone;
	}
	if (btf_id && nr_finfo)
		btf = btf__load_from_kernel_by_id(btf_id);
	if (btf && libbpf_get_error(btf))
		btf = NULL;
	/* the functions' code, one after another, as the lengths say */
	uint64_t at = 0;
	for (uint32_t i = 0; i < nr_funcs && !ret; i++) {
		char name[RV_BPF_NAME_BYTES];
		struct rv_bpf_image im = {
			.prog_id = id,
			.func = (uint16_t)i,
			.addr = ksyms[i],
			.len = lens[i],
			.name = name,
			.code = code + at,
		};

		if (at + lens[i] > jited_len || !ksyms[i]) {
			s->stats.not_jited++; /* lengths that do not add up, or hidden addresses */
			break;
		}
		memcpy(im.tag, tags + (size_t)i * BPF_TAG_SIZE, BPF_TAG_SIZE);
		function_name(name, sizeof(name), im.tag, &info, btf, finfo, nr_finfo, i);
		ret = rv_bpf_images_append(s->fd, s->path, !s->header_written, &im, err);
		if (!ret) {
			s->header_written = true;
			s->stats.functions++;
			s->stats.bytes += lens[i];
		}
		at += lens[i];
	}
	if (!ret)
		s->stats.programs++;
out:
	btf__free(btf);
	free(code);
	free(ksyms);
	free(lens);
	free(tags);
	free(finfo);
	return ret;
gone:
	s->stats.lost++;
	rv_debug("BPF program %u is gone before its code could be saved", id);
	return 0;
}

int rv_bpf_saver_save_id(struct rv_bpf_saver *s, uint32_t id, struct rv_error *err)
{
	int fd, ret;

	if (was_saved(s, id))
		return 0;
	if (rv_array_grow(&s->saved, &s->cap_saved, s->nr_saved, sizeof(*s->saved), 16))
		return rv_error_set(err, ENOMEM, "out of memory");
	s->saved[s->nr_saved++] = id;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		if (errno == EPERM || errno == EACCES)
			return rv_error_set(err, errno,
					    "not allowed to read BPF program %u's code: kernel "
					    "scope needs root (CAP_SYS_ADMIN)",
					    id);
		s->stats.lost++;
		return 0;
	}
	ret = save_fd(s, fd, id, err);
	close(fd);
	return ret;
}

int rv_bpf_saver_save_loaded(struct rv_bpf_saver *s, struct rv_error *err)
{
	uint32_t id = 0;
	int ret = 0;

	while (!ret && !bpf_prog_get_next_id(id, &id))
		ret = rv_bpf_saver_save_id(s, id, err);
	if (!ret && errno != ENOENT)
		return rv_error_set(err, errno, "cannot list the loaded BPF programs: %s",
				    strerror(errno));
	return ret;
}

/* ---- the watch ---- */

void rv_bpf_watch_attr(const struct perf_event_attr *sideband, struct perf_event_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->type = PERF_TYPE_SOFTWARE;
	out->size = sizeof(*out);
	out->config = PERF_COUNT_SW_DUMMY;
	out->sample_period = 1;
	out->sample_type = sideband->sample_type;
	out->sample_id_all = sideband->sample_id_all;
	out->use_clockid = sideband->use_clockid;
	out->clockid = sideband->clockid;
	out->exclude_hv = 1;
	out->ksymbol = 1;
	out->bpf_event = 1;
	out->text_poke = 1;
}

int rv_bpf_saver_watch(struct rv_bpf_saver *s, const struct perf_event_attr *attr, int nr_cpus,
		       struct perf_event_attr *out_attr, uint64_t *ids, struct rv_error *err)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_attr a;

	rv_bpf_watch_attr(attr, &a);
	*out_attr = a;
	s->cpus = calloc((size_t)nr_cpus, sizeof(*s->cpus));
	s->copy = malloc(RV_PERF_RING_MAX_RECORD);
	if (!s->cpus || !s->copy)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		struct watch_cpu *w = &s->cpus[cpu];
		void *map;

		w->fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (w->fd < 0) {
			int e = errno;

			if (e == ENODEV || e == EINVAL) /* an offline CPU: nothing runs there */
				continue;
			return rv_error_set(err, e,
					    "cannot watch CPU %d for BPF programs and kernel "
					    "text changes: %s%s",
					    cpu, strerror(e),
					    e == EACCES || e == EPERM ? " (kernel scope needs root)"
								      : "");
		}
		s->nr_cpus = cpu + 1;
		w->map_bytes = (size_t)page * (1 + WATCH_PAGES);
		map = mmap(NULL, w->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
		if (map == MAP_FAILED) {
			w->map_bytes = 0;
			return rv_error_set(err, errno, "cannot map the watch of CPU %d: %s", cpu,
					    strerror(errno));
		}
		w->ring = (struct rv_perf_ring){ .base = map,
						 .page_size = (size_t)page,
						 .data_bytes = (size_t)page * WATCH_PAGES,
						 .copy = s->copy };
		if (ioctl(w->fd, PERF_EVENT_IOC_ID, &ids[cpu]))
			return rv_error_set(err, errno, "cannot read the watch's event id: %s",
					    strerror(errno));
	}
	return 0;
}

static int on_record(void *ctx, const struct perf_event_header *rec, struct rv_error *err)
{
	struct rv_bpf_saver *s = ctx;
	const uint8_t *p = (const uint8_t *)rec;
	uint16_t type;
	uint32_t id;
	int ret;

	if (rec->type != PERF_RECORD_KSYMBOL && rec->type != PERF_RECORD_BPF_EVENT &&
	    rec->type != PERF_RECORD_TEXT_POKE && rec->type != PERF_RECORD_LOST)
		return 0;
	if (rec->type == PERF_RECORD_BPF_EVENT && rec->size >= 16) {
		memcpy(&type, p + 8, 2);
		memcpy(&id, p + 12, 4);
		if (type == PERF_BPF_EVENT_PROG_LOAD) {
			ret = rv_bpf_saver_save_id(s, id, err);
			if (ret)
				return ret;
		}
	}
	s->stats.records += rec->type != PERF_RECORD_LOST;
	return s->fn(s->fn_ctx, rec, err);
}

int rv_bpf_saver_drain(struct rv_bpf_saver *s, rv_bpf_record_fn fn, void *ctx, struct rv_error *err)
{
	int ret = 0;

	s->fn = fn;
	s->fn_ctx = ctx;
	for (int cpu = 0; cpu < s->nr_cpus && !ret; cpu++)
		if (s->cpus[cpu].map_bytes)
			ret = rv_perf_ring_drain(&s->cpus[cpu].ring,
						 "the BPF and kernel text watch", on_record, s,
						 err);
	return ret;
}

void rv_bpf_saver_stats(const struct rv_bpf_saver *s, struct rv_bpf_saver_stats *out)
{
	*out = s->stats;
}

void rv_bpf_saver_free(struct rv_bpf_saver *s)
{
	if (!s)
		return;
	for (int cpu = 0; s->cpus && cpu < s->nr_cpus; cpu++) {
		struct watch_cpu *w = &s->cpus[cpu];

		if (w->map_bytes)
			munmap(w->ring.base, w->map_bytes);
		if (w->fd > 0)
			close(w->fd);
	}
	free(s->cpus);
	free(s->copy);
	if (s->fd >= 0)
		close(s->fd);
	free(s->saved);
	free(s->path);
	free(s);
}
