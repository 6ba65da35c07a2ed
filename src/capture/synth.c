/* synth.c: sideband records laid out as the kernel lays them out; see synth.h.
 *
 * Every builder appends fields to a bounded buffer and gives up (size 0) as
 * soon as one does not fit, so a short buffer is never overrun. Not here:
 * what the records say (the caller's values are written as given).
 */
#include "capture/synth.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "capture/perf_data.h"

/* The kernel's TASK_COMM_LEN, NUL included. */
#define COMM_MAX_BYTES 16

/* A record's size is a u16 and a multiple of 8. */
#define RECORD_MAX_BYTES 65528

struct record_builder {
	unsigned char *buf;
	size_t cap;
	size_t len;
	bool overflow;
};

static void put(struct record_builder *b, const void *p, size_t n)
{
	if (b->overflow || n > b->cap - b->len || n > RECORD_MAX_BYTES - b->len) {
		b->overflow = true;
		return;
	}
	if (p)
		memcpy(b->buf + b->len, p, n);
	else
		memset(b->buf + b->len, 0, n);
	b->len += n;
}

static void put_u32(struct record_builder *b, uint32_t v)
{
	put(b, &v, sizeof(v));
}

static void put_u64(struct record_builder *b, uint64_t v)
{
	put(b, &v, sizeof(v));
}

/* The string's first max_chars characters, a NUL, zeros to the next 8 bytes. */
static void put_padded_string(struct record_builder *b, const char *s, size_t max_chars)
{
	size_t len = s ? strnlen(s, max_chars) : 0;
	size_t padded = (len + 1 + 7) & ~(size_t)7;

	put(b, s, len);
	put(b, NULL, padded - len);
}

static void begin(struct record_builder *b, void *buf, size_t buf_size, uint32_t type,
		  uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	b->buf = buf;
	b->cap = buf ? buf_size : 0;
	b->len = 0;
	b->overflow = false;
	put(b, &h, sizeof(h));
}

static void put_sample_id(struct record_builder *b, const struct rv_synth *s,
			  const struct rv_synth_id *id)
{
	static const struct rv_synth_id zero;
	uint64_t type = s->sample_type;

	if (!s->sample_id_all)
		return;
	if (!id)
		id = &zero;
	if (type & PERF_SAMPLE_TID) {
		put_u32(b, id->pid);
		put_u32(b, id->tid);
	}
	if (type & PERF_SAMPLE_TIME)
		put_u64(b, id->time);
	if (type & PERF_SAMPLE_ID)
		put_u64(b, id->id);
	if (type & PERF_SAMPLE_STREAM_ID)
		put_u64(b, id->id);
	if (type & PERF_SAMPLE_CPU) {
		put_u32(b, id->cpu);
		put_u32(b, 0);
	}
	if (type & PERF_SAMPLE_IDENTIFIER)
		put_u64(b, id->id);
}

/* Sets header.size; every field is a multiple of 8 long, so the record is. */
static size_t finish(struct record_builder *b)
{
	uint16_t size;

	if (b->overflow)
		return 0;
	size = (uint16_t)b->len;
	memcpy(b->buf + offsetof(struct perf_event_header, size), &size, sizeof(size));
	return b->len;
}

size_t rv_synth_mmap(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *filename, uint16_t misc, const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_MMAP, misc);
	put_u32(&b, pid);
	put_u32(&b, tid);
	put_u64(&b, start);
	put_u64(&b, len);
	put_u64(&b, pgoff);
	put_padded_string(&b, filename, RECORD_MAX_BYTES);
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_mmap2(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		      uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
		      uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags,
		      const char *filename, uint16_t misc, const struct rv_synth_id *id)
{
	struct record_builder b;

	/* The build-id form would reinterpret maj/min/ino: refuse it. */
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
		return 0;
	begin(&b, buf, buf_size, PERF_RECORD_MMAP2, misc);
	put_u32(&b, pid);
	put_u32(&b, tid);
	put_u64(&b, start);
	put_u64(&b, len);
	put_u64(&b, pgoff);
	put_u32(&b, maj);
	put_u32(&b, min);
	put_u64(&b, ino);
	put_u64(&b, 0); /* ino_generation */
	put_u32(&b, prot);
	put_u32(&b, flags);
	put_padded_string(&b, filename, RECORD_MAX_BYTES);
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_comm(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, const char *comm, bool exec, const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	put_u32(&b, pid);
	put_u32(&b, tid);
	put_padded_string(&b, comm, COMM_MAX_BYTES - 1);
	put_sample_id(&b, s, id);
	return finish(&b);
}

static size_t task_record(uint32_t type, const struct rv_synth *s, void *buf, size_t buf_size,
			  uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
			  const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, type, 0);
	put_u32(&b, pid);
	put_u32(&b, ppid);
	put_u32(&b, tid);
	put_u32(&b, ptid);
	put_u64(&b, time);
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_fork(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
		     const struct rv_synth_id *id)
{
	return task_record(PERF_RECORD_FORK, s, buf, buf_size, pid, ppid, tid, ptid, time, id);
}

size_t rv_synth_exit(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
		     const struct rv_synth_id *id)
{
	return task_record(PERF_RECORD_EXIT, s, buf, buf_size, pid, ppid, tid, ptid, time, id);
}

size_t rv_synth_itrace_start(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
			     uint32_t tid, const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_ITRACE_START, 0);
	put_u32(&b, pid);
	put_u32(&b, tid);
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_aux(const struct rv_synth *s, void *buf, size_t buf_size, uint64_t aux_offset,
		    uint64_t aux_size, uint64_t flags, const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_AUX, 0);
	put_u64(&b, aux_offset);
	put_u64(&b, aux_size);
	put_u64(&b, flags);
	put_sample_id(&b, s, id);
	return finish(&b);
}

static uint16_t switch_misc(bool out, bool preempt)
{
	if (!out)
		return 0;
	return PERF_RECORD_MISC_SWITCH_OUT | (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);
}

size_t rv_synth_switch(const struct rv_synth *s, void *buf, size_t buf_size, bool out, bool preempt,
		       const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_SWITCH, switch_misc(out, preempt));
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_switch_cpu_wide(const struct rv_synth *s, void *buf, size_t buf_size, bool out,
				bool preempt, uint32_t next_prev_pid, uint32_t next_prev_tid,
				const struct rv_synth_id *id)
{
	struct record_builder b;

	begin(&b, buf, buf_size, PERF_RECORD_SWITCH_CPU_WIDE, switch_misc(out, preempt));
	put_u32(&b, next_prev_pid);
	put_u32(&b, next_prev_tid);
	put_sample_id(&b, s, id);
	return finish(&b);
}

size_t rv_synth_finished_round(void *buf, size_t buf_size)
{
	struct record_builder b;

	begin(&b, buf, buf_size, RV_PERF_RECORD_FINISHED_ROUND, 0);
	return finish(&b);
}

size_t rv_synth_finished_init(void *buf, size_t buf_size)
{
	struct record_builder b;

	begin(&b, buf, buf_size, RV_PERF_RECORD_FINISHED_INIT, 0);
	return finish(&b);
}

/* PROT_EXEC, without <sys/mman.h>'s other names. */
#define MMAP2_PROT_EXEC 4u

int rv_perf_mmap_parse(const struct perf_event_header *rec, struct rv_perf_mmap *out)
{
	const uint8_t *p = (const uint8_t *)rec;
	size_t name_at;
	uint32_t prot;

	if (rec->type == PERF_RECORD_MMAP)
		name_at = 40; /* header, pid, tid, addr, len, pgoff */
	else if (rec->type == PERF_RECORD_MMAP2)
		name_at = 72; /* ... maj, min, ino, ino_generation (or build id), prot, flags */
	else
		return -EINVAL;
	if (rec->size < name_at + 1 || !memchr(p + name_at, '\0', rec->size - name_at))
		return -EINVAL;
	memcpy(&out->pid, p + 8, 4);
	memcpy(&out->tid, p + 12, 4);
	memcpy(&out->start, p + 16, 8);
	memcpy(&out->len, p + 24, 8);
	memcpy(&out->pgoff, p + 32, 8);
	if (rec->type == PERF_RECORD_MMAP2) {
		memcpy(&prot, p + 64, 4);
		out->executable = (prot & MMAP2_PROT_EXEC) != 0;
	} else {
		out->executable = !(rec->misc & PERF_RECORD_MISC_MMAP_DATA);
	}
	out->filename = (const char *)p + name_at;
	return 0;
}
