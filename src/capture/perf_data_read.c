/* perf_data_read.c: perf.data read, in file mode and pipe mode; see
 * perf_data.h.
 *
 * The reader maps the file (or reads a pipe into memory), checks every offset
 * and length in the header, the attributes and the features, and walks the
 * records with a record stream that knows nothing of the file layout: file
 * mode hands it the data section, pipe mode (perf_data_pipe.c) everything
 * after the 16-byte header.
 *
 * Not here: samples split into their fields (perf_data_sample.c), or what any
 * record means for a trace (the decoders).
 */
#define RV_LOG_DOMAIN "perf-data"

#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "util/array.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The largest attribute accepted, far above any perf_event_attr so far. */
#define MAX_ATTR_BYTES 4096

/* ---- the record stream ---- */

static int stream_fail(struct pd_stream *s, struct rv_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int stream_fail(struct pd_stream *s, struct rv_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->failure_message, sizeof(s->failure_message), fmt, ap);
	va_end(ap);
	s->failure = -EINVAL;
	return rv_error_set(err, EINVAL, "%s", s->failure_message);
}

/* Why a record runs past the end of the records: the file was cut short
 * (its header declares more), a pipe-mode stream ended (it declares no end,
 * so a capture cut short ends so), or the record's size is corrupt. */
static const char *past_the_end(const struct pd_stream *s)
{
	if (s->declared_end > s->end)
		return " (the file was truncated)";
	if (s->open_ended)
		return " (the stream ends inside it: the capture was cut short)";
	return "; the file is corrupt";
}

/* Where the records are: a file's data section, or a pipe's stream. */
static const char *records_name(const struct pd_stream *s)
{
	return s->open_ended ? "stream" : "data section";
}

static int stream_next(struct pd_stream *s, struct rv_perf_record *rec, struct rv_error *err)
{
	struct perf_event_header h;
	uint64_t left = s->end - s->pos, offset = s->base_offset + s->pos, payload_size = 0;
	const uint8_t *p = s->base + s->pos;
	unsigned int width;

	memset(rec, 0, sizeof(*rec));
	if (s->failure)
		return rv_error_set(err, -s->failure, "%s", s->failure_message);
	if (left == 0) {
		if (s->cut[0] && s->declared_end <= s->end)
			return stream_fail(s, err, "%s", s->cut);
		if (s->declared_end > s->end)
			return stream_fail(s, err,
					   "the data section is cut short at file offset %llu, "
					   "%llu bytes before its declared end (the file was "
					   "truncated; the records before are intact)",
					   (unsigned long long)offset,
					   (unsigned long long)(s->declared_end - s->end));
		return 0;
	}
	if (left < sizeof(h))
		return stream_fail(
			s, err,
			"truncated record header at file offset %llu: only %llu of its 8 "
			"bytes are in the %s%s",
			(unsigned long long)offset, (unsigned long long)left, records_name(s),
			s->open_ended ? " (the capture was cut short)" : "");
	memcpy(&h, p, sizeof(h));
	if (h.size < sizeof(h) && s->cut[0])
		return stream_fail(s, err,
				   "%s; the records from file offset %llu on were being flushed "
				   "when it stopped, and are lost",
				   s->cut, (unsigned long long)offset);
	if (h.size < sizeof(h))
		return stream_fail(s, err,
				   "corrupt record at file offset %llu: its size is %u, less than "
				   "its own 8-byte header",
				   (unsigned long long)offset, h.size);
	if (h.size > left)
		return stream_fail(
			s, err,
			"record at file offset %llu (type %u) is %u bytes long, but only "
			"%llu bytes of the %s remain%s",
			(unsigned long long)offset, h.type, h.size, (unsigned long long)left,
			records_name(s), past_the_end(s));
	if (pd_record_has_payload(h.type, &width)) {
		if (pd_payload_size_field(p, h.size, width, &payload_size))
			return stream_fail(s, err,
					   "record at file offset %llu (type %u) is too short (%u "
					   "bytes) to hold the size of its data",
					   (unsigned long long)offset, h.type, h.size);
		if (payload_size > left - h.size)
			return stream_fail(
				s, err,
				"record at file offset %llu (type %u) carries %llu bytes of data, "
				"but only %llu bytes of the %s remain after it%s",
				(unsigned long long)offset, h.type,
				(unsigned long long)payload_size,
				(unsigned long long)(left - h.size), records_name(s),
				past_the_end(s));
		rec->payload = p + h.size;
		rec->payload_size = payload_size;
	}
	if ((uintptr_t)p % 8) {
		if (s->bounce_cap < h.size) {
			uint8_t *bounce = NULL;

			if (posix_memalign((void **)&bounce, 8, 65536))
				return rv_error_set(err, ENOMEM, "out of memory reading records");
			free(s->bounce);
			s->bounce = bounce;
			s->bounce_cap = 65536;
		}
		memcpy(s->bounce, p, h.size);
		rec->header = (const struct perf_event_header *)(const void *)s->bounce;
	} else {
		rec->header = (const struct perf_event_header *)(const void *)p;
	}
	rec->file_offset = offset;
	s->pos += h.size + payload_size;
	return 1;
}

/* ---- the file: attributes and features ---- */

static bool section_in_file(const struct rv_perf_reader *r, uint64_t offset, uint64_t size)
{
	return offset <= r->size && size <= r->size - offset;
}

static int compare_id_map(const void *a, const void *b)
{
	const struct pd_id_map_entry *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->attr_index < y->attr_index ? -1 : x->attr_index > y->attr_index;
}

const struct rv_perf_attr *pd_reader_lookup_id(const struct rv_perf_reader *r, uint64_t id)
{
	size_t lo = 0, hi = r->nr_id_map;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->id_map[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nr_id_map && r->id_map[lo].id == id)
		return &r->attrs[r->id_map[lo].attr_index];
	return NULL;
}

/* A perf_header_string at p (at most avail bytes); NULL when malformed. */
static char *read_header_string(const uint8_t *p, uint64_t avail, uint64_t *consumed)
{
	uint32_t len;
	char *s;

	if (avail < 4)
		return NULL;
	len = rv_load_u32(p);
	if (len > avail - 4)
		return NULL;
	s = strndup((const char *)p + 4, len);
	if (s)
		*consumed = 4 + (uint64_t)len;
	return s;
}

static void read_string_features(struct rv_perf_reader *r)
{
	static const enum rv_perf_feature strings[] = {
		RV_FEAT_HOSTNAME, RV_FEAT_OSRELEASE, RV_FEAT_VERSION,
		RV_FEAT_ARCH,	  RV_FEAT_CPUDESC,   RV_FEAT_CPUID,
	};

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const struct pd_feature_location *loc = &r->features[strings[i]];
		uint64_t consumed;

		if (!loc->present)
			continue;
		r->feature_strings[strings[i]] =
			read_header_string(r->data + loc->offset, loc->size, &consumed);
		if (!r->feature_strings[strings[i]])
			rv_debug("%s: feature %d is not a well-formed string; ignored", r->name,
				 (int)strings[i]);
	}
}

static void read_cmdline(struct rv_perf_reader *r)
{
	const struct pd_feature_location *loc = &r->features[RV_FEAT_CMDLINE];
	const uint8_t *p;
	uint64_t left;
	uint32_t nr;
	char **argv;

	if (!loc->present || loc->size < 4)
		return;
	p = r->data + loc->offset;
	nr = rv_load_u32(p);
	left = loc->size - 4;
	p += 4;
	if (nr > left / 4 || nr > INT_MAX - 1)
		goto bad;
	argv = calloc((size_t)nr + 1, sizeof(*argv));
	if (!argv)
		return;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t consumed;

		argv[i] = read_header_string(p, left, &consumed);
		if (!argv[i]) {
			for (uint32_t j = 0; j < i; j++)
				free(argv[j]);
			free(argv);
			goto bad;
		}
		p += consumed;
		left -= consumed;
	}
	r->cmdline_argv = argv;
	r->cmdline_argc = (int)nr;
	return;
bad:
	rv_debug("%s: HEADER_CMDLINE is malformed; ignored", r->name);
}

/* Event names from HEADER_EVENT_DESC, matched to attributes by id, or by
 * position when an entry has no ids. */
static void read_event_names(struct rv_perf_reader *r)
{
	const struct pd_feature_location *loc = &r->features[RV_FEAT_EVENT_DESC];
	const uint8_t *p;
	uint64_t left;
	uint32_t nr, attr_bytes;

	if (!loc->present || loc->size < 8)
		return;
	p = r->data + loc->offset;
	nr = rv_load_u32(p);
	attr_bytes = rv_load_u32(p + 4);
	p += 8;
	left = loc->size - 8;
	if (attr_bytes < PERF_ATTR_SIZE_VER0 || attr_bytes > MAX_ATTR_BYTES)
		goto bad;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t consumed;
		uint32_t nr_ids;
		size_t target = SIZE_MAX;
		char *name;

		if (left < (uint64_t)attr_bytes + 4)
			goto bad;
		nr_ids = rv_load_u32(p + attr_bytes);
		p += attr_bytes + 4;
		left -= (uint64_t)attr_bytes + 4;
		name = read_header_string(p, left, &consumed);
		if (!name)
			goto bad;
		p += consumed;
		left -= consumed;
		if (nr_ids > left / 8) {
			free(name);
			goto bad;
		}
		for (uint32_t k = 0; k < nr_ids && target == SIZE_MAX; k++) {
			const struct rv_perf_attr *a =
				pd_reader_lookup_id(r, rv_load_u64(p + 8 * (size_t)k));

			if (a)
				target = (size_t)(a - r->attrs);
		}
		if (target == SIZE_MAX && nr_ids == 0 && i < r->nr_attrs)
			target = i;
		if (target != SIZE_MAX && !r->names[target]) {
			r->names[target] = name;
			r->attrs[target].name = name;
		} else {
			free(name);
		}
		p += 8 * (size_t)nr_ids;
		left -= 8 * (uint64_t)nr_ids;
	}
	return;
bad:
	rv_debug("%s: HEADER_EVENT_DESC is malformed; event names may be missing", r->name);
}

void pd_reader_read_features(struct rv_perf_reader *r)
{
	read_string_features(r);
	read_cmdline(r);
	read_event_names(r);
}

int pd_reader_build_attrs(struct rv_perf_reader *r, const struct pd_attr_source *src, size_t nr,
			  struct rv_error *err)
{
	uint64_t total_ids = 0;
	size_t next_id = 0;

	if (nr == 0)
		return rv_error_set(err, EINVAL,
				    "'%s' declares no events; it holds nothing to read", r->name);
	for (size_t i = 0; i < nr; i++)
		total_ids += src[i].nr_ids;
	if (total_ids > SIZE_MAX / sizeof(*r->id_map))
		return rv_error_set(err, ENOMEM, "out of memory reading '%s'", r->name);
	r->nr_attrs = nr;
	r->attrs = calloc(nr, sizeof(*r->attrs));
	r->names = calloc(nr, sizeof(*r->names));
	r->ids = calloc(total_ids ? (size_t)total_ids : 1, sizeof(*r->ids));
	r->id_map = calloc(total_ids ? (size_t)total_ids : 1, sizeof(*r->id_map));
	if (!r->attrs || !r->names || !r->ids || !r->id_map)
		return rv_error_set(err, ENOMEM, "out of memory reading '%s'", r->name);
	for (size_t i = 0; i < nr; i++) {
		struct perf_event_attr *attr = &r->attrs[i].attr;
		size_t n = src[i].attr_bytes < sizeof(*attr) ? src[i].attr_bytes : sizeof(*attr);

		memset(attr, 0, sizeof(*attr));
		memcpy(attr, src[i].attr, n);
		attr->size = sizeof(*attr);
		memcpy(r->ids + next_id, src[i].ids, (size_t)src[i].nr_ids * 8);
		r->attrs[i].ids = r->ids + next_id;
		r->attrs[i].nr_ids = (size_t)src[i].nr_ids;
		for (size_t k = 0; k < src[i].nr_ids; k++) {
			r->id_map[next_id + k].id = r->ids[next_id + k];
			r->id_map[next_id + k].attr_index = i;
		}
		next_id += (size_t)src[i].nr_ids;
	}
	r->nr_id_map = next_id;
	qsort(r->id_map, r->nr_id_map, sizeof(*r->id_map), compare_id_map);
	for (size_t i = 1; i < r->nr_id_map; i++)
		if (r->id_map[i].id == r->id_map[i - 1].id)
			rv_debug("%s: id %llu belongs to more than one event; using the first",
				 r->name, (unsigned long long)r->id_map[i].id);
	pd_reader_locate_ids(r);
	return 0;
}

/* The attribute section of a file-mode perf.data. */
static int read_attrs(struct rv_perf_reader *r, const struct pd_file_header *h,
		      struct rv_error *err)
{
	uint64_t attr_bytes = h->attr_size - sizeof(struct pd_file_section);
	struct pd_attr_source *src;
	size_t nr;
	int ret;

	if (h->attr_size < PERF_ATTR_SIZE_VER0 + sizeof(struct pd_file_section) ||
	    h->attr_size > MAX_ATTR_BYTES + sizeof(struct pd_file_section) || h->attr_size % 8)
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt: its attribute entries are %llu bytes long, "
				    "which no version of perf writes",
				    r->name, (unsigned long long)h->attr_size);
	if (!section_in_file(r, h->attrs.offset, h->attrs.size))
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt or truncated: its attribute section "
				    "(offset %llu, %llu bytes) lies beyond its %zu bytes",
				    r->name, (unsigned long long)h->attrs.offset,
				    (unsigned long long)h->attrs.size, r->size);
	if (h->attrs.size % h->attr_size)
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt: its attribute section (%llu bytes) is not a "
				    "whole number of %llu-byte entries",
				    r->name, (unsigned long long)h->attrs.size,
				    (unsigned long long)h->attr_size);
	nr = (size_t)(h->attrs.size / h->attr_size);
	if (nr == 0)
		return rv_error_set(err, EINVAL,
				    "'%s' declares no events; it holds nothing to read", r->name);
	src = calloc(nr, sizeof(*src));
	if (!src)
		return rv_error_set(err, ENOMEM, "out of memory reading '%s'", r->name);
	for (size_t i = 0; i < nr; i++) {
		const uint8_t *entry = r->data + h->attrs.offset + i * h->attr_size;
		struct pd_file_section ids;
		uint32_t declared = rv_load_u32(entry + offsetof(struct perf_event_attr, size));

		if (declared == 0)
			declared = PERF_ATTR_SIZE_VER0; /* perf's first ABI had no size */
		if (declared < PERF_ATTR_SIZE_VER0 || declared > attr_bytes) {
			free(src);
			return rv_error_set(err, EINVAL,
					    "'%s' is corrupt: event %zu says its attribute is %u "
					    "bytes, in entries of %llu",
					    r->name, i, declared, (unsigned long long)attr_bytes);
		}
		memcpy(&ids, entry + attr_bytes, sizeof(ids));
		if (!section_in_file(r, ids.offset, ids.size) || ids.size % 8) {
			free(src);
			return rv_error_set(err, EINVAL,
					    "'%s' is corrupt or truncated: the ids of event %zu "
					    "(offset %llu, %llu bytes) are not within the file",
					    r->name, i, (unsigned long long)ids.offset,
					    (unsigned long long)ids.size);
		}
		src[i].attr = entry;
		src[i].attr_bytes = declared;
		src[i].ids = r->data + ids.offset;
		src[i].nr_ids = ids.size / 8;
	}
	ret = pd_reader_build_attrs(r, src, nr, err);
	free(src);
	return ret;
}

/* Locates the feature sections; a table or section outside the file only
 * loses that feature, as in perf. */
static void locate_features(struct rv_perf_reader *r, const struct pd_file_header *h)
{
	uint64_t table = h->data.offset + h->data.size;
	size_t nr = 0, k = 0;

	memcpy(r->feature_bits, h->features, sizeof(r->feature_bits));
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++)
		nr += (size_t)pd_feature_test(h->features, f);
	if (!nr)
		return;
	if (!section_in_file(r, table, nr * sizeof(struct pd_file_section))) {
		rv_debug("%s: the feature table lies beyond the end of the file; features ignored",
			 r->name);
		return;
	}
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++) {
		struct pd_file_section s;

		if (!pd_feature_test(h->features, f))
			continue;
		memcpy(&s, r->data + table + k++ * sizeof(s), sizeof(s));
		if (!section_in_file(r, s.offset, s.size)) {
			rv_debug("%s: feature %u lies beyond the end of the file; ignored", r->name,
				 f);
			continue;
		}
		r->features[f].offset = s.offset;
		r->features[f].size = s.size;
		r->features[f].present = true;
	}
}

bool rv_perf_reader_flush_info(const struct rv_perf_reader *r, struct rv_perf_flush_info *out)
{
	const struct pd_feature_location *loc = &r->features[RV_FEAT_REARVIEW_FLUSH];
	const uint8_t *p = r->data + loc->offset;

	memset(out, 0, sizeof(*out));
	if (!loc->present || loc->size < 24)
		return false;
	out->realtime_ns = rv_load_u64(p);
	out->flushes = rv_load_u64(p + 8);
	out->data_bytes = rv_load_u64(p + 16);
	return true;
}

/* A flushed capture never finished: its records end with why. */
static void note_cut(struct rv_perf_reader *r)
{
	struct rv_perf_flush_info info;
	char when[64] = "";
	time_t seconds;
	struct tm tm;

	if (!rv_perf_reader_flush_info(r, &info))
		return;
	seconds = (time_t)(info.realtime_ns / 1000000000ull);
	if (localtime_r(&seconds, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(r->stream.cut, sizeof(r->stream.cut),
		 "the capture was cut: its recorder stopped without finishing it (it was "
		 "killed, or the machine stopped), and it holds what was recorded up to its "
		 "last flush (%s, flush %llu, %.1f MiB of records)",
		 when[0] ? when : "at an unknown time", (unsigned long long)info.flushes,
		 (double)info.data_bytes / (1024.0 * 1024.0));
}

/* What a file that is not a perf.data looks like, by its first bytes, and
 * what to do with it: "; it is gzip-compressed: ...", or "" when unknown.
 * data holds at least 16 bytes. */
static const char *what_it_is(const uint8_t *data, size_t size)
{
	static const uint8_t psb[] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };
	static const uint8_t fxt[] = { 0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00 };

	if (data[0] == 0x1f && data[1] == 0x8b)
		return "; it is gzip-compressed: decompress it first (zcat FILE | rearview "
		       "decode -)";
	if (!memcmp(data, "\x28\xb5\x2f\xfd", 4))
		return "; it is zstd-compressed: decompress it first (zstdcat FILE | rearview "
		       "decode -)";
	if (!memcmp(data,
		    "\x7f"
		    "ELF",
		    4))
		return "; it is an ELF file (a program or a library), not a capture";
	if (!memcmp(data, psb, sizeof(psb)))
		return "; it starts with a PSB packet, like a raw Intel PT trace: decode that "
		       "with --raw-pt FILE --image FILE@ADDR";
	if (!memcmp(data, fxt, sizeof(fxt)))
		return "; it is a Fuchsia trace (a trace already written): open it in the "
		       "Perfetto UI";
	for (size_t i = 0; i < size && i < 16; i++) {
		if (data[i] == '{' || data[i] == '[')
			return "; it looks like JSON text (a trace already written?)";
		if (data[i] != ' ' && data[i] != '\n' && data[i] != '\t' && data[i] != '\r')
			break;
	}
	if (!memcmp(data, "\0\0\0\0\0\0\0\0", 8))
		return "; was the recording stopped before it finished?";
	return "";
}

static int parse_file(struct rv_perf_reader *r, struct rv_error *err)
{
	struct pd_file_header h;
	uint64_t data_end;
	int ret;

	if (r->size < 16 && r->size >= 8 && !memcmp(r->data, PD_MAGIC, 8))
		return rv_error_set(err, EINVAL,
				    "'%s' is truncated: it ends inside its header, after %zu bytes",
				    r->name, r->size);
	if (r->size < 16)
		return rv_error_set(err, EINVAL,
				    "'%s' is not a perf.data file: it is only %zu bytes long",
				    r->name, r->size);
	if (memcmp(r->data, PD_MAGIC_SWAPPED, 8) == 0)
		return rv_error_set(err, ENOTSUP,
				    "'%s' was recorded on a machine of the other byte order, which "
				    "rearview does not read",
				    r->name);
	if (memcmp(r->data, PD_MAGIC_V1, 8) == 0)
		return rv_error_set(err, ENOTSUP,
				    "'%s' uses perf's first file format (PERFFILE), which rearview "
				    "does not read",
				    r->name);
	if (memcmp(r->data, PD_MAGIC, 8) != 0)
		return rv_error_set(err, EINVAL,
				    "'%s' is not a perf.data file (it does not start with "
				    "PERFILE2)%s",
				    r->name, what_it_is(r->data, r->size));
	memset(&h, 0, sizeof(h));
	memcpy(&h, r->data, r->size < sizeof(h) ? r->size : sizeof(h));
	if (h.size == PD_PIPE_HEADER_SIZE)
		return pd_reader_parse_pipe(r, err);
	if (h.size != sizeof(h) && h.size != PD_FILE_HEADER_NO_FEATURES_SIZE)
		return rv_error_set(err, EINVAL,
				    "'%s' is corrupt: its header says it is %llu bytes", r->name,
				    (unsigned long long)h.size);
	if (r->size < h.size)
		return rv_error_set(err, EINVAL,
				    "'%s' is truncated: it ends inside its %llu-byte header",
				    r->name, (unsigned long long)h.size);
	if (h.size != sizeof(h))
		memset(h.features, 0, sizeof(h.features));

	ret = read_attrs(r, &h, err);
	if (ret)
		return ret;

	if (h.data.offset < h.size || h.data.offset > r->size)
		return rv_error_set(
			err, EINVAL,
			"'%s' is corrupt or truncated: its data section starts at %llu, "
			"outside the file's %zu bytes",
			r->name, (unsigned long long)h.data.offset, r->size);
	if (h.data.size > UINT64_MAX - h.data.offset)
		return rv_error_set(err, EINVAL, "'%s' is corrupt: its data section size is %llu",
				    r->name, (unsigned long long)h.data.size);
	data_end = h.data.offset + h.data.size;
	r->stream.base = r->data + h.data.offset;
	r->stream.base_offset = h.data.offset;
	r->stream.declared_end = h.data.size;
	r->stream.end = data_end <= r->size ? h.data.size : r->size - h.data.offset;
	if (data_end > r->size)
		rv_debug("%s: data section ends at %llu, past the end of the file (%zu bytes)",
			 r->name, (unsigned long long)data_end, r->size);
	else if (h.size == sizeof(h))
		locate_features(r, &h);
	pd_reader_read_features(r);
	note_cut(r);
	return 0;
}

/* How a reader holds the bytes it reads: the caller's, mapped, or its own
 * (a pipe's, read into memory). */
enum reader_bytes { BYTES_BORROWED, BYTES_MAPPED, BYTES_OWNED };

/* A reader of the capture in `size` bytes at data. Mapped or owned bytes are
 * released with the reader, or at once when it cannot be opened. */
static int reader_open_bytes(struct rv_perf_reader **out, const char *name, const void *data,
			     size_t size, enum reader_bytes held, struct rv_error *err)
{
	struct rv_perf_reader *r = calloc(1, sizeof(*r));
	int ret;

	*out = NULL;
	if (r)
		r->name = strdup(name);
	if (!r || !r->name) {
		free(r);
		if (held == BYTES_MAPPED)
			munmap((void *)data, size);
		else if (held == BYTES_OWNED)
			free((void *)data);
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", name);
	}
	r->data = data;
	r->size = size;
	r->mapped = held == BYTES_MAPPED;
	r->owned_data = held == BYTES_OWNED ? (uint8_t *)data : NULL;
	r->sample_id_pos = -1;
	r->trailer_id_pos = -1;
	ret = parse_file(r, err);
	if (ret) {
		rv_perf_reader_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

int rv_perf_reader_open_buffer(struct rv_perf_reader **out, const void *data, size_t size,
			       const char *name, struct rv_error *err)
{
	return reader_open_bytes(out, name ? name : "(buffer)", data, size, BYTES_BORROWED, err);
}

/* Reads what a pipe (or FIFO, or terminal) gives until its end. */
static int read_stream(int fd, const char *name, uint8_t **data, size_t *size, struct rv_error *err)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (rv_array_grow(&buf, &cap, len, 1, 1 << 20)) {
			free(buf);
			return rv_error_set(err, ENOMEM,
					    "out of memory reading '%s' (%zu bytes so far)", name,
					    len);
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			return rv_error_set(err, e, "cannot read '%s': %s", name, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*data = buf;
	*size = len;
	return 0;
}

int rv_perf_reader_open(struct rv_perf_reader **out, const char *path, struct rv_error *err)
{
	char *dir_data = NULL;
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "standard input" : path;
	uint8_t *stream = NULL;
	size_t stream_size = 0;
	struct stat st;
	void *map = NULL;
	int fd, ret, e;

	*out = NULL;
	fd = is_stdin ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !is_stdin && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		/* rearview's and softpt's DIR/perf.data, else perf's directory
		 * layout (perf record --kcore): DIR/data */
		close(fd);
		if (asprintf(&dir_data, "%s/perf.data", path) < 0)
			return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
		if (stat(dir_data, &st) || !S_ISREG(st.st_mode)) {
			free(dir_data);
			if (asprintf(&dir_data, "%s/data", path) < 0)
				return rv_error_set(err, ENOMEM, "out of memory opening '%s'",
						    path);
		}
		fd = open(dir_data, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			ret = rv_error_set(
				err, ENOENT,
				"'%s' is a directory without a capture: it holds no "
				"perf.data (nor perf's DIR/data); give the directory a "
				"recording kept (--working-directory) or a perf.data file",
				path);
			free(dir_data);
			return ret;
		}
		name = dir_data;
	}
	if (fd < 0) {
		e = errno;
		ret = rv_error_set(err, e, "cannot open '%s': %s", name, strerror(e));
		free(dir_data);
		return ret;
	}
	if (fstat(fd, &st) != 0) {
		e = errno;
		ret = rv_error_set(err, e, "cannot examine '%s': %s", name, strerror(e));
		goto out_close;
	}
	if (S_ISREG(st.st_mode)) {
		if (st.st_size == 0) {
			ret = rv_error_set(err, EINVAL, "'%s' is empty; it holds no capture", name);
			goto out_close;
		}
		if ((uint64_t)st.st_size > SIZE_MAX) {
			ret = rv_error_set(err, EFBIG, "'%s' is too large to map", name);
			goto out_close;
		}
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			e = errno;
			ret = rv_error_set(err, e, "cannot map '%s': %s", name, strerror(e));
			goto out_close;
		}
		stream_size = (size_t)st.st_size;
	} else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || is_stdin) {
		ret = read_stream(fd, name, &stream, &stream_size, err);
		if (ret)
			goto out_close;
		if (stream_size == 0) {
			free(stream);
			ret = rv_error_set(err, EINVAL, "'%s' is empty; it holds no capture", name);
			goto out_close;
		}
	} else {
		ret = rv_error_set(err, EINVAL, "'%s' is not a regular file or a pipe", name);
		goto out_close;
	}
	close(fd);
	fd = -1;
	if (map)
		ret = reader_open_bytes(out, name, map, stream_size, BYTES_MAPPED, err);
	else
		ret = reader_open_bytes(out, name, stream, stream_size, BYTES_OWNED, err);
out_close:
	if (fd >= 0)
		close(fd);
	free(dir_data);
	return ret;
}

bool rv_perf_reader_is_pipe(const struct rv_perf_reader *r)
{
	return r->pipe_mode;
}

int rv_perf_reader_next(struct rv_perf_reader *r, struct rv_perf_record *rec, struct rv_error *err)
{
	int ret = stream_next(&r->stream, rec, err);

	if (ret < 0)
		rv_error_prefix(err, "reading '%s'", r->name);
	return ret;
}

const char *rv_perf_reader_name(const struct rv_perf_reader *r)
{
	return r->name;
}

void rv_perf_reader_rewind(struct rv_perf_reader *r)
{
	r->stream.pos = 0;
	r->stream.failure = 0;
	r->stream.failure_message[0] = '\0';
}

size_t rv_perf_reader_nr_attrs(const struct rv_perf_reader *r)
{
	return r->nr_attrs;
}

const struct rv_perf_attr *rv_perf_reader_attr(const struct rv_perf_reader *r, size_t index)
{
	return index < r->nr_attrs ? &r->attrs[index] : NULL;
}

const struct rv_perf_attr *rv_perf_reader_attr_for_id(const struct rv_perf_reader *r, uint64_t id)
{
	const struct rv_perf_attr *a = pd_reader_lookup_id(r, id);

	if (!a && r->nr_attrs == 1)
		a = &r->attrs[0];
	return a;
}

bool rv_perf_reader_has_feature(const struct rv_perf_reader *r, enum rv_perf_feature feature)
{
	return (unsigned int)feature < RV_FEAT_MAX && r->features[feature].present;
}

const char *rv_perf_reader_feature_string(const struct rv_perf_reader *r,
					  enum rv_perf_feature feature)
{
	return (unsigned int)feature < RV_FEAT_MAX ? r->feature_strings[feature] : NULL;
}

int rv_perf_reader_cmdline(const struct rv_perf_reader *r, const char *const **argv)
{
	*argv = (const char *const *)r->cmdline_argv;
	return r->cmdline_argc;
}

const void *rv_perf_reader_feature_data(const struct rv_perf_reader *r,
					enum rv_perf_feature feature, uint64_t *size)
{
	if (!rv_perf_reader_has_feature(r, feature)) {
		if (size)
			*size = 0;
		return NULL;
	}
	if (size)
		*size = r->features[feature].size;
	return r->data + r->features[feature].offset;
}

void rv_perf_reader_free(struct rv_perf_reader *r)
{
	if (!r)
		return;
	if (r->mapped)
		munmap((void *)r->data, r->size);
	free(r->owned_data);
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++)
		free(r->feature_strings[f]);
	for (int i = 0; i < r->cmdline_argc; i++)
		free(r->cmdline_argv[i]);
	free(r->cmdline_argv);
	for (size_t i = 0; i < r->nr_attrs && r->names; i++)
		free(r->names[i]);
	free(r->names);
	free(r->attrs);
	free(r->ids);
	free(r->id_map);
	free(r->stream.bounce);
	free(r->name);
	free(r);
}
