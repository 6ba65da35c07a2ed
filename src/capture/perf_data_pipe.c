/* perf_data_pipe.c: pipe mode, the stream scanned for what file mode keeps
 * in sections.
 *
 * `perf record -o -` writes a 16-byte header (magic, size 16) and then only
 * records: the attributes as HEADER_ATTR records, the features as
 * HEADER_FEATURE records (the same bodies as file mode's sections), event
 * names as EVENT_UPDATE records, then the recording. The whole stream is in
 * memory, so one scan at open finds the attributes and features wherever they
 * are; the walk (perf_data_read.c) then returns every record, these included,
 * as perf counts them.
 *
 * Not here: opening, the record stream, reading the features' bodies
 * (perf_data_read.c).
 */
#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "util/array.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* EVENT_UPDATE: u64 type, u64 id, then the name for PERF_EVENT_UPDATE__NAME. */
#define EVENT_UPDATE_NAME 2

/* HEADER_ATTR: the attribute (its own size field says how long), then ids. */
static int pipe_attr(struct rv_perf_reader *r, const uint8_t *p, uint16_t size, uint64_t offset,
		     struct pd_attr_source *src, struct rv_error *err)
{
	uint64_t body = size - sizeof(struct perf_event_header);
	uint32_t declared;

	if (body < PERF_ATTR_SIZE_VER0)
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt: the event attribute record at offset %llu is "
				    "%u bytes, too short for an attribute",
				    r->name, (unsigned long long)offset, size);
	declared = rv_load_u32(p + 8 + offsetof(struct perf_event_attr, size));
	if (declared == 0)
		declared = PERF_ATTR_SIZE_VER0;
	if (declared < PERF_ATTR_SIZE_VER0 || declared > body || declared % 8 ||
	    (body - declared) % 8)
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt: the event attribute record at offset %llu "
				    "says its attribute is %u bytes, in a record of %u",
				    r->name, (unsigned long long)offset, declared, size);
	src->attr = p + 8;
	src->attr_bytes = declared;
	src->ids = p + 8 + declared;
	src->nr_ids = (body - declared) / 8;
	return 0;
}

/* An EVENT_UPDATE naming the event of an id, kept until the ids are known. */
struct pipe_name {
	uint64_t id;
	const char *name;
	size_t max_len;
};

static void apply_pipe_names(struct rv_perf_reader *r, const struct pipe_name *names, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const struct rv_perf_attr *a = pd_reader_lookup_id(r, names[i].id);
		size_t index, len = strnlen(names[i].name, names[i].max_len);
		char *name;

		if (!a || len == names[i].max_len)
			continue; /* an unknown id, or no NUL within the record */
		index = (size_t)(a - r->attrs);
		name = strndup(names[i].name, len);
		if (!name)
			continue;
		/* perf lets an update override the name it had */
		free(r->names[index]);
		r->names[index] = name;
		r->attrs[index].name = name;
	}
}

int pd_reader_parse_pipe(struct rv_perf_reader *r, struct rv_error *err)
{
	struct pd_attr_source *src = NULL;
	struct pipe_name *names = NULL;
	size_t nr_src = 0, src_cap = 0, nr_names = 0, names_cap = 0;
	uint64_t pos = PD_PIPE_HEADER_SIZE;
	bool cut = false;
	int ret = 0;

	r->pipe_mode = true;
	r->stream.base = r->data + PD_PIPE_HEADER_SIZE;
	r->stream.base_offset = PD_PIPE_HEADER_SIZE;
	r->stream.end = r->size - PD_PIPE_HEADER_SIZE;
	r->stream.declared_end = r->stream.end;
	r->stream.open_ended = true;

	/* Stops quietly at the first record that does not fit: the walk reports
	 * it when it gets there, after the good records. */
	while (r->size - pos >= sizeof(struct perf_event_header)) {
		const uint8_t *p = r->data + pos;
		struct perf_event_header h;
		uint64_t payload = 0;
		unsigned int width;

		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h))
			break; /* corrupt: the walk says so */
		if (h.size > r->size - pos) {
			cut = true;
			break;
		}
		if (pd_record_has_payload(h.type, &width)) {
			if (pd_payload_size_field(p, h.size, width, &payload))
				break;
			if (payload > r->size - pos - h.size) {
				cut = true;
				break;
			}
		}
		if (h.type == RV_PERF_RECORD_HEADER_ATTR) {
			if (rv_array_grow(&src, &src_cap, nr_src, sizeof(*src), 8)) {
				ret = rv_error_set(err, ENOMEM, "out of memory reading '%s'",
						   r->name);
				break;
			}
			ret = pipe_attr(r, p, h.size, pos, &src[nr_src], err);
			if (ret)
				break;
			nr_src++;
		} else if (h.type == RV_PERF_RECORD_HEADER_FEATURE && h.size >= 16) {
			uint64_t feature = rv_load_u64(p + 8);

			if (feature < RV_FEAT_MAX) {
				r->features[feature].offset = pos + 16;
				r->features[feature].size = h.size - 16u;
				r->features[feature].present = true;
				pd_feature_set(r->feature_bits, (unsigned int)feature);
			}
		} else if (h.type == RV_PERF_RECORD_EVENT_UPDATE && h.size > 24 &&
			   rv_load_u64(p + 8) == EVENT_UPDATE_NAME) {
			if (rv_array_grow(&names, &names_cap, nr_names, sizeof(*names), 8)) {
				ret = rv_error_set(err, ENOMEM, "out of memory reading '%s'",
						   r->name);
				break;
			}
			names[nr_names].id = rv_load_u64(p + 16);
			names[nr_names].name = (const char *)p + 24;
			names[nr_names].max_len = h.size - 24u;
			nr_names++;
		}
		pos += h.size + payload;
	}
	/* a stream that ends inside a record's header was cut short too */
	cut |= pos < r->size && r->size - pos < sizeof(struct perf_event_header);
	if (!ret && !nr_src && cut)
		ret = rv_error_set(err, EINVAL,
				   "'%s' was cut short: it ends inside the record at file offset "
				   "%llu, before it declared any event; nothing to read",
				   r->name, (unsigned long long)pos);
	if (!ret)
		ret = pd_reader_build_attrs(r, src, nr_src, err);
	if (!ret) {
		pd_reader_read_features(r);
		apply_pipe_names(r, names, nr_names);
	}
	free(src);
	free(names);
	return ret;
}
