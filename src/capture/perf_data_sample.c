/* perf_data_sample.c: samples and the sample_id trailers of other records,
 * split into their fields as their attribute's sample_type lays them out;
 * see perf_data.h.
 *
 * Every field is taken through a cursor that checks it fits in the record.
 * Not here: the file or the record stream (perf_data_read.c), or what a
 * sample means for a trace (the decoders).
 */
#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef PERF_SAMPLE_BRANCH_COUNTERS
#define PERF_SAMPLE_BRANCH_COUNTERS (1ULL << 19)
#endif

#define KNOWN_SAMPLE_TYPES ((uint64_t)PERF_SAMPLE_WEIGHT_STRUCT * 2 - 1)
#define SAMPLE_ID_TRAILER_TYPES                                                                    \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* Records of perf's own types (HEADER_ATTR and after) never carry a sample_id. */
#define RECORD_USER_TYPE_START RV_PERF_RECORD_HEADER_ATTR

/* ---- where the id is ---- */

/* The u64 word holding the id: IDENTIFIER's fixed word `identifier_at`, else
 * ID's, after one word for each field of `before_id` present; -1 when the
 * records carry no id. */
static int id_position(uint64_t type, int identifier_at, uint64_t before_id)
{
	if (type & PERF_SAMPLE_IDENTIFIER)
		return identifier_at;
	if (!(type & PERF_SAMPLE_ID))
		return -1;
	return identifier_at + __builtin_popcountll(type & before_id);
}

/* In a sample, counted from its first word. */
static int sample_id_position(uint64_t type)
{
	return id_position(type, 0,
			   PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR);
}

/* In a sample_id trailer, counted back from the record's end (1: its last word). */
static int trailer_id_position(uint64_t type)
{
	return id_position(type, 1, PERF_SAMPLE_CPU | PERF_SAMPLE_STREAM_ID);
}

void pd_reader_locate_ids(struct rv_perf_reader *r)
{
	r->sample_id_pos = sample_id_position(r->attrs[0].attr.sample_type);
	r->trailer_id_pos = trailer_id_position(r->attrs[0].attr.sample_type);
	for (size_t i = 0; i < r->nr_attrs; i++) {
		uint64_t type = r->attrs[i].attr.sample_type;

		if (sample_id_position(type) != r->sample_id_pos)
			r->sample_id_pos = -1;
		if (trailer_id_position(type) != r->trailer_id_pos)
			r->trailer_id_pos = -1;
		if (r->attrs[i].attr.sample_id_all)
			r->any_sample_id_all = true;
	}
}

/* ---- taking fields ---- */

struct cursor {
	const uint8_t *p, *end;
};

static bool take_u64(struct cursor *c, uint64_t *v)
{
	if (c->end - c->p < 8)
		return false;
	*v = rv_load_u64(c->p);
	c->p += 8;
	return true;
}

static bool take_u32_pair(struct cursor *c, uint32_t *a, uint32_t *b)
{
	if (c->end - c->p < 8)
		return false;
	*a = rv_load_u32(c->p);
	*b = rv_load_u32(c->p + 4);
	c->p += 8;
	return true;
}

/* Takes `count` u64 values; false when they do not fit (count may be
 * anything: it came from the file). */
static bool take_u64_array(struct cursor *c, uint64_t count, const uint64_t **values)
{
	if (count > (uint64_t)(c->end - c->p) / 8)
		return false;
	*values = (const uint64_t *)(const void *)c->p;
	c->p += count * 8;
	return true;
}

static bool take_bytes(struct cursor *c, uint64_t count, const uint8_t **bytes)
{
	if (count > (uint64_t)(c->end - c->p))
		return false;
	*bytes = c->p;
	c->p += count;
	return true;
}

static void describe_record(const struct rv_perf_reader *r, const struct perf_event_header *record,
			    char *buf, size_t size)
{
	const uint8_t *p = (const uint8_t *)record;

	if (p >= r->data && p < r->data + r->size)
		snprintf(buf, size, "at file offset %llu", (unsigned long long)(p - r->data));
	else
		snprintf(buf, size, "of %u bytes", record->size);
}

static int field_error(const struct rv_perf_reader *r, const struct perf_event_header *record,
		       const char *kind, const char *field, struct rv_error *err)
{
	char where[64];

	describe_record(r, record, where, sizeof(where));
	return rv_error_set(
		err, EINVAL,
		"%s %s in '%s' is corrupt: its %s field runs past the end of the record", kind,
		where, r->name, field);
}

/* Which attribute a record belongs to, from the id at word `pos` of `words`
 * (counted from the start, or from the end when from_end). */
static const struct rv_perf_attr *record_attr(const struct rv_perf_reader *r,
					      const struct perf_event_header *record, int pos,
					      bool from_end, const char *kind, struct rv_error *err)
{
	uint64_t words = (record->size - sizeof(*record)) / 8;
	const uint8_t *body = (const uint8_t *)record + sizeof(*record);
	const struct rv_perf_attr *a;
	char where[64];
	uint64_t id;

	if (pos < 0) {
		if (r->nr_attrs == 1)
			return &r->attrs[0];
		describe_record(r, record, where, sizeof(where));
		rv_error_set(err, EINVAL,
			     "cannot tell which event the %s %s in '%s' belongs to: the events "
			     "record no id at a common position",
			     kind, where, r->name);
		return NULL;
	}
	if ((uint64_t)pos + (from_end ? 0 : 1) > words || (from_end && pos == 0)) {
		field_error(r, record, kind, "id", err);
		return NULL;
	}
	id = rv_load_u64(body + 8 * (from_end ? words - (uint64_t)pos : (uint64_t)pos));
	a = rv_perf_reader_attr_for_id(r, id);
	/* perf synthesizes sideband with an id of zero and takes it for its
	 * first event's (evlist__event2evsel) */
	if (!a && id == 0)
		a = &r->attrs[0];
	if (!a) {
		describe_record(r, record, where, sizeof(where));
		rv_error_set(err, EINVAL,
			     "the %s %s in '%s' carries id %llu, which none of its events has",
			     kind, where, r->name, (unsigned long long)id);
	}
	return a;
}

static int skip_read_values(struct cursor *c, uint64_t read_format)
{
	uint64_t nr = 1, per_value = 1, value;
	const uint64_t *values;

	if (read_format & PERF_FORMAT_GROUP) {
		if (!take_u64(c, &nr))
			return -1;
	} else {
		per_value = 0;
		nr = 0;
		if (!take_u64(c, &value)) /* the value */
			return -1;
	}
	if ((read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) && !take_u64(c, &value))
		return -1;
	if ((read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) && !take_u64(c, &value))
		return -1;
	if (read_format & PERF_FORMAT_GROUP) {
		per_value += !!(read_format & PERF_FORMAT_ID);
		per_value += !!(read_format & PERF_FORMAT_LOST);
		if (nr > UINT64_MAX / per_value || !take_u64_array(c, nr * per_value, &values))
			return -1;
	} else {
		if ((read_format & PERF_FORMAT_ID) && !take_u64(c, &value))
			return -1;
		if ((read_format & PERF_FORMAT_LOST) && !take_u64(c, &value))
			return -1;
	}
	return 0;
}

static bool take_regs(struct cursor *c, uint64_t mask, uint64_t *abi, const uint64_t **regs)
{
	if (!take_u64(c, abi))
		return false;
	*regs = NULL;
	if (*abi == PERF_SAMPLE_REGS_ABI_NONE)
		return true;
	return take_u64_array(c, (uint64_t)__builtin_popcountll(mask), regs);
}

int rv_perf_reader_parse_sample(const struct rv_perf_reader *r,
				const struct perf_event_header *record, struct rv_perf_sample *out,
				struct rv_error *err)
{
	const char *kind = "sample";
	const struct rv_perf_attr *a;
	struct cursor c;
	const uint64_t *array;
	const uint8_t *bytes;
	uint64_t type, v, skipped;

	memset(out, 0, sizeof(*out));
	if (!record || record->type != PERF_RECORD_SAMPLE)
		return rv_error_set(err, EINVAL,
				    "parse_sample: the record is not a sample (type %u)",
				    record ? record->type : 0);
	if (record->size < sizeof(*record))
		return field_error(r, record, kind, "header", err);
	if ((uintptr_t)record % 8)
		return rv_error_set(err, EINVAL,
				    "parse_sample: the record is not 8-byte aligned in memory");
	a = record_attr(r, record, r->sample_id_pos, false, kind, err);
	if (!a)
		return -EINVAL;
	type = a->attr.sample_type;
	if (type & ~KNOWN_SAMPLE_TYPES)
		return rv_error_set(err, ENOTSUP,
				    "'%s' samples carry fields rearview does not know (sample_type "
				    "bits 0x%llx); it was recorded by a newer perf",
				    r->name, (unsigned long long)(type & ~KNOWN_SAMPLE_TYPES));
	out->attr = a;
	out->sample_type = type;
	c.p = (const uint8_t *)record + sizeof(*record);
	c.end = (const uint8_t *)record + record->size;

#define TAKE(cond, call, field)                                                                    \
	do {                                                                                       \
		if ((cond) && !(call))                                                             \
			return field_error(r, record, kind, field, err);                           \
	} while (0)

	TAKE(type & PERF_SAMPLE_IDENTIFIER, take_u64(&c, &out->id), "identifier");
	TAKE(type & PERF_SAMPLE_IP, take_u64(&c, &out->ip), "ip");
	TAKE(type & PERF_SAMPLE_TID, take_u32_pair(&c, &out->pid, &out->tid), "pid/tid");
	TAKE(type & PERF_SAMPLE_TIME, take_u64(&c, &out->time), "time");
	TAKE(type & PERF_SAMPLE_ADDR, take_u64(&c, &out->addr), "addr");
	TAKE(type & PERF_SAMPLE_ID, take_u64(&c, &out->id), "id");
	TAKE(type & PERF_SAMPLE_STREAM_ID, take_u64(&c, &out->stream_id), "stream_id");
	TAKE(type & PERF_SAMPLE_CPU, take_u32_pair(&c, &out->cpu, &out->res), "cpu");
	TAKE(type & PERF_SAMPLE_PERIOD, take_u64(&c, &out->period), "period");
	TAKE(type & PERF_SAMPLE_READ, skip_read_values(&c, a->attr.read_format) == 0, "read");
	if (type & PERF_SAMPLE_CALLCHAIN) {
		TAKE(1, take_u64(&c, &out->nr_callchain), "callchain length");
		TAKE(1, take_u64_array(&c, out->nr_callchain, &out->callchain), "callchain");
	}
	if (type & PERF_SAMPLE_RAW) {
		/* u32 size, then the data; the kernel pads so that both end aligned */
		TAKE(1, (c.end - c.p >= 4), "raw size");
		out->raw_size = rv_load_u32(c.p);
		c.p += 4;
		TAKE(1, take_bytes(&c, out->raw_size, &bytes), "raw");
		out->raw = bytes;
		TAKE(1, ((out->raw_size + 4) % 8 == 0), "raw padding");
	}
	if (type & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr, per_entry = 3;

		TAKE(1, take_u64(&c, &nr), "branch stack length");
		TAKE(a->attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX, take_u64(&c, &v),
		     "branch hw_idx");
		if (a->attr.branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS)
			per_entry++;
		TAKE(1,
		     (nr <= UINT64_MAX / per_entry && take_u64_array(&c, nr * per_entry, &array)),
		     "branch stack");
	}
	if (type & PERF_SAMPLE_REGS_USER) {
		TAKE(1,
		     take_regs(&c, a->attr.sample_regs_user, &out->regs_user_abi, &out->regs_user),
		     "user registers");
		out->regs_user_mask = a->attr.sample_regs_user;
	}
	if (type & PERF_SAMPLE_STACK_USER) {
		uint64_t size;

		TAKE(1, take_u64(&c, &size), "user stack size");
		TAKE(1, (size % 8 == 0 && take_bytes(&c, size, &bytes)), "user stack");
		if (size) {
			TAKE(1, take_u64(&c, &out->stack_user_size), "user stack dyn_size");
			TAKE(1, (out->stack_user_size <= size), "user stack dyn_size");
			out->stack_user = bytes;
		}
	}
	TAKE(type & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT), take_u64(&c, &v), "weight");
	TAKE(type & PERF_SAMPLE_DATA_SRC, take_u64(&c, &v), "data_src");
	TAKE(type & PERF_SAMPLE_TRANSACTION, take_u64(&c, &v), "transaction");
	if (type & PERF_SAMPLE_REGS_INTR)
		TAKE(1, take_regs(&c, a->attr.sample_regs_intr, &skipped, &array),
		     "interrupt registers");
	TAKE(type & PERF_SAMPLE_PHYS_ADDR, take_u64(&c, &v), "phys_addr");
	TAKE(type & PERF_SAMPLE_CGROUP, take_u64(&c, &v), "cgroup");
	TAKE(type & PERF_SAMPLE_DATA_PAGE_SIZE, take_u64(&c, &v), "data_page_size");
	TAKE(type & PERF_SAMPLE_CODE_PAGE_SIZE, take_u64(&c, &v), "code_page_size");
	if (type & PERF_SAMPLE_AUX) {
		TAKE(1, take_u64(&c, &out->aux_size), "aux size");
		TAKE(1, take_bytes(&c, out->aux_size, &bytes), "aux");
		out->aux = bytes;
	}
#undef TAKE
	return 0;
}

int rv_perf_reader_parse_sample_id(const struct rv_perf_reader *r,
				   const struct perf_event_header *record,
				   struct rv_perf_sample_id *out, struct rv_error *err)
{
	const char *kind = "record";
	const struct rv_perf_attr *a;
	struct cursor c;
	uint64_t type, trailer;
	uint32_t res;

	memset(out, 0, sizeof(*out));
	if (!record)
		return rv_error_set(err, EINVAL, "parse_sample_id: no record given");
	if (record->type == PERF_RECORD_SAMPLE)
		return rv_error_set(err, EINVAL,
				    "parse_sample_id: samples have no sample_id trailer; use "
				    "rv_perf_reader_parse_sample");
	if (record->type >= RECORD_USER_TYPE_START || !r->any_sample_id_all)
		return 0; /* perf's own records never carry one */
	if (record->size < sizeof(*record))
		return field_error(r, record, kind, "header", err);
	a = record_attr(r, record, r->trailer_id_pos, true, kind, err);
	if (!a)
		return -EINVAL;
	if (!a->attr.sample_id_all)
		return 0;
	type = a->attr.sample_type;
	trailer = 8 * (uint64_t)__builtin_popcountll(type & SAMPLE_ID_TRAILER_TYPES);
	if (trailer > record->size - sizeof(*record))
		return field_error(r, record, kind, "sample_id", err);
	c.p = (const uint8_t *)record + record->size - trailer;
	c.end = (const uint8_t *)record + record->size;
	/* The trailer fits, so none of these can fail. */
	if (type & PERF_SAMPLE_TID)
		take_u32_pair(&c, &out->pid, &out->tid);
	if (type & PERF_SAMPLE_TIME)
		take_u64(&c, &out->time);
	if (type & PERF_SAMPLE_ID)
		take_u64(&c, &out->id);
	if (type & PERF_SAMPLE_STREAM_ID)
		take_u64(&c, &out->stream_id);
	if (type & PERF_SAMPLE_CPU)
		take_u32_pair(&c, &out->cpu, &res);
	if (type & PERF_SAMPLE_IDENTIFIER)
		take_u64(&c, &out->id);
	out->valid = true;
	return 0;
}
