/* marks.c: rearview's gate marks as perf.data samples; see marks.h. */
#include "capture/marks.h"

#include <errno.h>
#include <string.h>

#include "capture/bytes.h"

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

size_t rv_mark_record(void *buf, const struct rv_mark *mark)
{
	size_t name_len = mark->name ? strnlen(mark->name, RV_MARK_MAX_NAME) : 0;
	/* raw: its u32 size, the fixed part, the name and its NUL, padded so
	 * that size + 4 is a multiple of 8 */
	size_t raw = sizeof(struct rv_mark_raw) + name_len + 1;
	size_t raw_padded = ((raw + 4 + 7) & ~(size_t)7) - 4;
	struct rv_mark_raw fixed = { (uint32_t)mark->kind, mark->flags, mark->duration_ns };
	struct rv_bytes b;

	rv_record_begin(&b, buf, RV_MARK_MAX_RECORD, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rv_bytes_put_u64(&b, RV_MARK_ID);
	rv_bytes_put_u64(&b, 0); /* ip */
	rv_bytes_put_u32(&b, mark->pid);
	rv_bytes_put_u32(&b, mark->tid);
	rv_bytes_put_u64(&b, mark->time);
	rv_bytes_put_u64(&b, 0); /* cpu, res */
	rv_bytes_put_u32(&b, (uint32_t)raw_padded);
	rv_bytes_put(&b, &fixed, sizeof(fixed));
	rv_bytes_put(&b, mark->name, name_len);
	rv_bytes_put(&b, NULL, raw_padded - sizeof(fixed) - name_len);
	return rv_record_end(&b);
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
	const struct rv_perf_attr *marks = rv_perf_reader_attr_for_id(r, RV_MARK_ID);
	struct rv_perf_record rec;
	struct rv_error ignored = { 0 };
	uint64_t first = 0;

	const uint64_t *range;
	uint64_t size = 0;

	if (!marks)
		return 0;
	/* Written by rearview's recorder, which knows it: no pass needed. */
	range = rv_perf_reader_feature_data(r, RV_FEAT_SAMPLE_TIME, &size);
	if (range && size >= 2 * sizeof(uint64_t)) {
		memcpy(&first, range, sizeof(first));
		if (first)
			return first;
	}
	while (rv_perf_reader_next(r, &rec, &ignored) > 0) {
		struct rv_perf_sample s;
		struct rv_mark mark;
		uint64_t t;

		if (rec.header->type != PERF_RECORD_SAMPLE ||
		    rv_perf_reader_parse_sample(r, rec.header, &s, &ignored) ||
		    !(s.sample_type & PERF_SAMPLE_TIME))
			continue;
		t = s.time;
		if (s.attr == marks && !rv_mark_parse(&s, &mark, &ignored) &&
		    mark.kind == RV_MARK_WINDOW && mark.time > mark.duration_ns)
			t = mark.time - mark.duration_ns;
		if (t && (!first || t < first))
			first = t;
	}
	rv_perf_reader_rewind(r);
	return first;
}
