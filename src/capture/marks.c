/* marks.c: rearview's gate marks as perf.data samples; see marks.h. */
#include "capture/marks.h"

#include <errno.h>
#include <string.h>

#define MARK_SAMPLE_TYPE                                                                           \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)

void rv_mark_attr(struct perf_event_attr *attr, bool use_clockid, int clockid)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_BPF_OUTPUT;
	attr->sample_period = 1;
	attr->sample_type = MARK_SAMPLE_TYPE;
	attr->sample_id_all = 1;
	attr->use_clockid = use_clockid;
	attr->clockid = use_clockid ? clockid : 0;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

size_t rv_mark_record(void *buf, const struct rv_mark *mark)
{
	uint8_t *p = buf;
	size_t name_len = mark->name ? strnlen(mark->name, RV_MARK_MAX_NAME) : 0;
	/* raw: its u32 size, the fixed part, the name and its NUL, padded so
	 * that size + 4 is a multiple of 8 */
	size_t raw = sizeof(struct rv_mark_raw) + name_len + 1;
	size_t raw_padded = ((raw + 4 + 7) & ~(size_t)7) - 4;
	size_t size = 8 + 8 * 5 + 4 + raw_padded;
	struct rv_mark_raw fixed = { (uint32_t)mark->kind, mark->flags, mark->duration_ns };
	struct perf_event_header header = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
					    (uint16_t)size };

	memset(p, 0, size);
	memcpy(p, &header, sizeof(header));
	put_u64(p + 8, RV_MARK_ID);
	put_u64(p + 16, 0); /* ip */
	put_u32(p + 24, mark->pid);
	put_u32(p + 28, mark->tid);
	put_u64(p + 32, mark->time);
	put_u32(p + 40, 0); /* cpu, res */
	put_u32(p + 48, (uint32_t)raw_padded);
	memcpy(p + 52, &fixed, sizeof(fixed));
	if (name_len)
		memcpy(p + 52 + sizeof(fixed), mark->name, name_len);
	return size;
}

bool rv_sample_is_mark(const struct rv_perf_sample *sample)
{
	return sample->id == RV_MARK_ID && (sample->sample_type & PERF_SAMPLE_RAW);
}

int rv_mark_parse(const struct rv_perf_sample *sample, struct rv_mark *out, struct rv_error *err)
{
	struct rv_mark_raw fixed;
	const char *name;
	size_t room;

	if (!rv_sample_is_mark(sample) || sample->raw_size < sizeof(fixed) + 1)
		return rv_error_set(err, EINVAL, "a rearview:gate sample too short to be a mark");
	memcpy(&fixed, sample->raw, sizeof(fixed));
	name = (const char *)sample->raw + sizeof(fixed);
	room = sample->raw_size - sizeof(fixed);
	if (!memchr(name, '\0', room))
		return rv_error_set(err, EINVAL, "a rearview:gate mark whose name has no end");
	if (fixed.kind != RV_MARK_WINDOW && fixed.kind != RV_MARK_TRIGGER)
		return rv_error_set(err, EINVAL, "a rearview:gate mark of unknown kind %u",
				    fixed.kind);
	*out = (struct rv_mark){
		.kind = (enum rv_mark_kind)fixed.kind,
		.flags = fixed.flags,
		.pid = sample->pid,
		.tid = sample->tid,
		.time = sample->time,
		.duration_ns = fixed.duration_ns,
		.name = name,
	};
	return 0;
}

uint64_t rv_marks_first_time(struct rv_perf_reader *r)
{
	struct rv_perf_record rec;
	struct rv_error ignored = { 0 };
	uint64_t first = 0;

	if (!rv_perf_reader_attr_for_id(r, RV_MARK_ID))
		return 0;
	while (rv_perf_reader_next(r, &rec, &ignored) > 0) {
		struct rv_perf_sample s;
		struct rv_mark mark;
		uint64_t t;

		if (rec.header->type != PERF_RECORD_SAMPLE ||
		    rv_perf_reader_parse_sample(r, rec.header, &s, &ignored) ||
		    !(s.sample_type & PERF_SAMPLE_TIME))
			continue;
		t = s.time;
		if (rv_sample_is_mark(&s) && !rv_mark_parse(&s, &mark, &ignored) &&
		    mark.kind == RV_MARK_WINDOW && mark.time > mark.duration_ns)
			t = mark.time - mark.duration_ns;
		if (t && (!first || t < first))
			first = t;
	}
	rv_perf_reader_rewind(r);
	return first;
}
