/* synth.c: sideband records laid out as the kernel lays them out; see synth.h.
 *
 * Every builder appends fields to the caller's buffer (bytes.h) and gives up
 * (size 0) as soon as one does not fit, so a short buffer is never overrun.
 * Not here: what the records say (the caller's values are written as given).
 */
#include "capture/synth.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>

#include "capture/bytes.h"
#include "capture/perf_data.h"

/* The kernel's TASK_COMM_LEN, NUL included. */
#define COMM_MAX_BYTES	16
#define KSYM_NAME_BYTES 512 /* the kernel's KSYM_NAME_LEN */

/* The string's first max_chars characters, a NUL, zeros to the next 8 bytes. */
static void put_padded_string(struct rv_bytes *b, const char *s, size_t max_chars)
{
	size_t len = s ? strnlen(s, max_chars) : 0;
	size_t padded = (len + 1 + 7) & ~(size_t)7;

	rv_bytes_put(b, s, len);
	rv_bytes_put(b, NULL, padded - len);
}

static void put_sample_id(struct rv_bytes *b, const struct rv_synth *s,
			  const struct rv_synth_id *id)
{
	static const struct rv_synth_id zero;
	uint64_t type = s->sample_type;

	if (!s->sample_id_all)
		return;
	if (!id)
		id = &zero;
	if (type & PERF_SAMPLE_TID) {
		rv_bytes_put_u32(b, id->pid);
		rv_bytes_put_u32(b, id->tid);
	}
	if (type & PERF_SAMPLE_TIME)
		rv_bytes_put_u64(b, id->time);
	if (type & PERF_SAMPLE_ID)
		rv_bytes_put_u64(b, id->id);
	if (type & PERF_SAMPLE_STREAM_ID)
		rv_bytes_put_u64(b, id->id);
	if (type & PERF_SAMPLE_CPU) {
		rv_bytes_put_u32(b, id->cpu);
		rv_bytes_put_u32(b, 0);
	}
	if (type & PERF_SAMPLE_IDENTIFIER)
		rv_bytes_put_u64(b, id->id);
}

/* The fields MMAP and MMAP2 begin with. */
static void put_mapping(struct rv_bytes *b, uint32_t pid, uint32_t tid, uint64_t start,
			uint64_t len, uint64_t pgoff)
{
	rv_bytes_put_u32(b, pid);
	rv_bytes_put_u32(b, tid);
	rv_bytes_put_u64(b, start);
	rv_bytes_put_u64(b, len);
	rv_bytes_put_u64(b, pgoff);
}

size_t rv_synth_mmap(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *filename, uint16_t misc, const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_MMAP, misc);
	put_mapping(&b, pid, tid, start, len, pgoff);
	put_padded_string(&b, filename, RV_RECORD_MAX_BYTES);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_mmap2(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		      uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff, uint32_t maj,
		      uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags,
		      const char *filename, uint16_t misc, const struct rv_synth_id *id)
{
	struct rv_bytes b;

	/* The build-id form would reinterpret maj/min/ino: refuse it. */
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
		return 0;
	rv_record_begin(&b, buf, buf_size, PERF_RECORD_MMAP2, misc);
	put_mapping(&b, pid, tid, start, len, pgoff);
	rv_bytes_put_u32(&b, maj);
	rv_bytes_put_u32(&b, min);
	rv_bytes_put_u64(&b, ino);
	rv_bytes_put_u64(&b, 0); /* ino_generation */
	rv_bytes_put_u32(&b, prot);
	rv_bytes_put_u32(&b, flags);
	put_padded_string(&b, filename, RV_RECORD_MAX_BYTES);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_comm(const struct rv_synth *s, void *buf, size_t buf_size, uint32_t pid,
		     uint32_t tid, const char *comm, bool exec, const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	rv_bytes_put_u32(&b, pid);
	rv_bytes_put_u32(&b, tid);
	put_padded_string(&b, comm, COMM_MAX_BYTES - 1);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

static size_t task_record(uint32_t type, const struct rv_synth *s, void *buf, size_t buf_size,
			  uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time,
			  const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, type, 0);
	rv_bytes_put_u32(&b, pid);
	rv_bytes_put_u32(&b, ppid);
	rv_bytes_put_u32(&b, tid);
	rv_bytes_put_u32(&b, ptid);
	rv_bytes_put_u64(&b, time);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
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
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_ITRACE_START, 0);
	rv_bytes_put_u32(&b, pid);
	rv_bytes_put_u32(&b, tid);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_aux(const struct rv_synth *s, void *buf, size_t buf_size, uint64_t aux_offset,
		    uint64_t aux_size, uint64_t flags, const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_AUX, 0);
	rv_bytes_put_u64(&b, aux_offset);
	rv_bytes_put_u64(&b, aux_size);
	rv_bytes_put_u64(&b, flags);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
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
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_SWITCH, switch_misc(out, preempt));
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_switch_cpu_wide(const struct rv_synth *s, void *buf, size_t buf_size, bool out,
				bool preempt, uint32_t next_prev_pid, uint32_t next_prev_tid,
				const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_SWITCH_CPU_WIDE, switch_misc(out, preempt));
	rv_bytes_put_u32(&b, next_prev_pid);
	rv_bytes_put_u32(&b, next_prev_tid);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_finished_round(void *buf, size_t buf_size)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, RV_PERF_RECORD_FINISHED_ROUND, 0);
	return rv_record_end(&b);
}

size_t rv_synth_finished_init(void *buf, size_t buf_size)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, RV_PERF_RECORD_FINISHED_INIT, 0);
	return rv_record_end(&b);
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

size_t rv_synth_ksymbol(const struct rv_synth *s, void *buf, size_t buf_size,
			const struct rv_perf_ksymbol *k, const struct rv_synth_id *id)
{
	struct rv_bytes b;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_KSYMBOL, PERF_RECORD_MISC_KERNEL);
	rv_bytes_put_u64(&b, k->addr);
	rv_bytes_put_u32(&b, k->len);
	rv_bytes_put(&b, &k->ksym_type, 2);
	uint16_t flags = k->unregister ? PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER : 0;
	rv_bytes_put(&b, &flags, 2);
	put_padded_string(&b, k->name, KSYM_NAME_BYTES - 1);
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

size_t rv_synth_text_poke(const struct rv_synth *s, void *buf, size_t buf_size,
			  const struct rv_perf_text_poke *t, const struct rv_synth_id *id)
{
	struct rv_bytes b;
	size_t bytes = 4 + (size_t)t->old_len + t->new_len;

	rv_record_begin(&b, buf, buf_size, PERF_RECORD_TEXT_POKE, PERF_RECORD_MISC_KERNEL);
	rv_bytes_put_u64(&b, t->addr);
	rv_bytes_put(&b, &t->old_len, 2);
	rv_bytes_put(&b, &t->new_len, 2);
	rv_bytes_put(&b, t->old_bytes, t->old_len);
	rv_bytes_put(&b, t->new_bytes, t->new_len);
	rv_bytes_put(&b, NULL, ((bytes + 7) & ~(size_t)7) - bytes); /* the kernel's pad */
	put_sample_id(&b, s, id);
	return rv_record_end(&b);
}

int rv_perf_ksymbol_parse(const struct perf_event_header *rec, struct rv_perf_ksymbol *out)
{
	const uint8_t *p = (const uint8_t *)rec;
	uint16_t flags;

	if (rec->type != PERF_RECORD_KSYMBOL || rec->size < 25 ||
	    !memchr(p + 24, '\0', rec->size - 24u))
		return -EINVAL;
	memcpy(&out->addr, p + 8, 8);
	memcpy(&out->len, p + 16, 4);
	memcpy(&out->ksym_type, p + 20, 2);
	memcpy(&flags, p + 22, 2);
	out->unregister = flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER;
	out->name = (const char *)p + 24;
	return 0;
}

int rv_perf_text_poke_parse(const struct perf_event_header *rec, struct rv_perf_text_poke *out)
{
	const uint8_t *p = (const uint8_t *)rec;

	if (rec->type != PERF_RECORD_TEXT_POKE || rec->size < 20)
		return -EINVAL;
	memcpy(&out->addr, p + 8, 8);
	memcpy(&out->old_len, p + 16, 2);
	memcpy(&out->new_len, p + 18, 2);
	if ((size_t)out->old_len + out->new_len > rec->size - 20u)
		return -EINVAL;
	out->old_bytes = p + 20;
	out->new_bytes = p + 20 + out->old_len;
	return 0;
}
