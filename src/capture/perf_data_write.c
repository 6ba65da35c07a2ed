/* perf_data_write.c: perf.data written in perf's file mode; see perf_data.h.
 *
 * Records are streamed into the data section right after the file header
 * (buffered, written with pwrite). When the capture is finished the header
 * features (which perf looks for immediately after the data section), the
 * ids and the attributes are appended, and the header is written over the
 * zeroed one an unfinished file keeps. The writer notes what the features
 * need as records go by: the files MMAP records name (build_id.c), the
 * AUXTRACE records' offsets (HEADER_AUXTRACE), Intel PT's PMU type.
 *
 * Flushing as it grows (rv_perf_writer_flush_as_it_grows): records are then
 * written only at a flush, and every flush leaves a valid perf.data, in an
 * order such that a SIGKILL at any instant leaves one too. A flush of the
 * chunk [D0, D1) when the header on disk has its feature table at D0 (the old
 * data's end) and its feature bodies, ids and attributes (the "bodies") at Y0:
 *   1. the chunk but its first T0 bytes (T0: the old table's size), at D0+T0;
 *   2. the new bodies at Y1, a place the old header does not reference;
 *   3. the new feature table at D1;
 *   4. the new header (data up to D1, bodies at Y1);
 *   5. the chunk's first T0 bytes over the old table: bytes 8 to T0, then
 *      its first 8 bytes, last.
 * Until 4 the old header holds and everything it references is untouched:
 * the chunk stops short of Y0 because Y0 was placed at least a chunk's
 * bytes (plus the largest table) past D0, and a chunk shorter than T0 is
 * padded with FINISHED_ROUND records. Between 4 and the last write of 5, the
 * new data section starts at D0 with the old table's first entry, whose
 * offset (below 2^48) reads as a record header of size 0: the reader stops
 * there, with the records up to D0 and all the features (one chunk lost,
 * never a wrong record). Each write of 5 is no larger than a table and the
 * last is 8 aligned bytes, which a SIGKILL cannot cut in half. While
 * recording, the features carry RV_FEAT_REARVIEW_FLUSH (when and how many
 * flushes); finish's flush keeps it in its table's last entry and its first
 * header, and then writes one without it (the same table but for that
 * entry), packs the bodies after the table and cuts the file there. Bodies
 * sit apart from the table only while flushing, with a gap past the data
 * that the next chunks fill.
 *
 * Not here: reading (perf_data_read.c), the records' contents (synth.c,
 * auxtrace.c, the recorders).
 */
#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "util/array.h"
#include "util/private_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef RV_VERSION
#define RV_VERSION "unknown"
#endif

/* PERF_RECORD_AUXTRACE_INFO: u32 type at 8; Intel PT's PMU type is priv[0]. */
#define AUXTRACE_TYPE_INTEL_PT	      1
#define AUXTRACE_INFO_PMU_TYPE_OFFSET 16

/* ---- writer ---- */

#define WRITE_BUFFER_SIZE (1u << 20)

/* The largest feature table: one 16-byte entry per feature bit. */
#define FEATURE_TABLE_MAX (RV_FEAT_MAX * 16)

/* A copy of the caller's rv_perf_meta for flushing, owning its strings. */
struct meta_copy {
	struct rv_perf_meta meta;
	char **strings; /* everything below, freed together */
	size_t nr_strings;
	char **argv;
	struct rv_perf_pmu_mapping *pmus;
	void *tracing_data;
};

struct writer_attr {
	struct perf_event_attr attr;
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

struct aux_index_entry {
	uint64_t file_offset;
	uint64_t size;
};

struct rv_perf_writer {
	int fd;
	char *path;
	bool finished;
	int write_failure; /* negative errno once a write has failed; sticky */
	uint8_t *buffer;
	size_t buffered;
	uint64_t flushed; /* bytes of the data section already in the file */
	struct writer_attr *attrs;
	size_t nr_attrs, attrs_cap;
	struct pd_build_ids build_ids;
	struct aux_index_entry *aux_index;
	size_t nr_aux_index, aux_index_cap;
	bool have_auxtrace_info;
	bool have_intel_pt_pmu; /* an Intel PT AUXTRACE_INFO named this PMU type */
	uint32_t intel_pt_pmu_type;
	uint64_t time_first, time_last; /* rv_perf_writer_set_time_range */

	/* flushing as it grows (see the top) */
	bool flushing;
	struct meta_copy flush_meta;
	size_t buffer_cap; /* WRITE_BUFFER_SIZE, or RV_PERF_FLUSH_BYTES when flushing */
	uint64_t flush_interval_ns;
	uint64_t last_flush_ns; /* CLOCK_MONOTONIC */
	uint64_t nr_flushes;
	bool attrs_changed; /* since the last flush */
	/* what the header on disk references past the data; table_bytes 0
	 * while the header is the zeroed one */
	uint64_t table_bytes;
	uint64_t bodies_offset, bodies_end;
	/* for the tests: every write to the file, in order */
	void (*write_hook)(void *ctx, uint64_t offset, const void *data, size_t size);
	void *write_hook_ctx;
};

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t offset)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

/* Every write to the file goes through here (the tests watch them). */
static int writer_pwrite(struct rv_perf_writer *w, const void *buf, size_t len, uint64_t offset)
{
	if (w->write_hook && len)
		w->write_hook(w->write_hook_ctx, offset, buf, len);
	return pwrite_all(w->fd, buf, len, offset);
}

/* A chunk of the data section: pieces laid end to end. */
struct chunk {
	struct {
		const uint8_t *data;
		uint64_t size;
	} piece[4];
	unsigned int nr;
	uint64_t size;
};

static void chunk_add(struct chunk *c, const void *data, uint64_t size)
{
	if (!size)
		return;
	c->piece[c->nr].data = data;
	c->piece[c->nr].size = size;
	c->nr++;
	c->size += size;
}

/* Writes bytes [from, to) of the chunk, which starts at file offset at. */
static int chunk_write(struct rv_perf_writer *w, const struct chunk *c, uint64_t from, uint64_t to,
		       uint64_t at)
{
	uint64_t pos = 0;

	for (unsigned int i = 0; i < c->nr && pos < to; i++) {
		uint64_t start = from > pos ? from - pos : 0;
		uint64_t end = to - pos < c->piece[i].size ? to - pos : c->piece[i].size;
		int ret;

		if (start < end) {
			ret = writer_pwrite(w, c->piece[i].data + start, (size_t)(end - start),
					    at + pos + start);
			if (ret)
				return ret;
		}
		pos += c->piece[i].size;
	}
	return 0;
}

static int writer_io_error(struct rv_perf_writer *w, int code, struct rv_error *err);
static int writer_checkpoint(struct rv_perf_writer *w, const struct chunk *extra, bool final,
			     const struct rv_perf_meta *meta, struct rv_error *err);
static int writer_make_room(struct rv_perf_writer *w, uint64_t chunk_size, struct rv_error *err);

static int writer_flush(struct rv_perf_writer *w, struct rv_error *err)
{
	int ret;

	if (!w->buffered)
		return 0;
	if (w->flushing)
		return writer_checkpoint(w, NULL, false, &w->flush_meta.meta, err);
	ret = writer_pwrite(w, w->buffer, w->buffered, sizeof(struct pd_file_header) + w->flushed);
	if (ret)
		return writer_io_error(w, ret, err);
	w->flushed += w->buffered;
	w->buffered = 0;
	return 0;
}

/* Appends one record, in pieces (a payload's record: its header, payload
 * and padding; a NULL piece is zeros). While flushing, a record is never
 * split across flushes: every flush ends on a record's end. */
static int writer_append(struct rv_perf_writer *w, const struct chunk *record, struct rv_error *err)
{
	if (record->size > w->buffer_cap - w->buffered) {
		int ret = writer_flush(w, err);

		if (ret)
			return ret;
	}
	if (record->size > w->buffer_cap) {
		int ret;

		if (w->flushing) {
			ret = writer_make_room(w, record->size, err);
			return ret ? ret
				   : writer_checkpoint(w, record, false, &w->flush_meta.meta, err);
		}
		ret = chunk_write(w, record, 0, record->size,
				  sizeof(struct pd_file_header) + w->flushed);
		if (ret)
			return writer_io_error(w, ret, err);
		w->flushed += record->size;
		return 0;
	}
	for (unsigned int i = 0; i < record->nr; i++) {
		if (record->piece[i].data)
			memcpy(w->buffer + w->buffered, record->piece[i].data,
			       (size_t)record->piece[i].size);
		else
			memset(w->buffer + w->buffered, 0, (size_t)record->piece[i].size);
		w->buffered += (size_t)record->piece[i].size;
	}
	return 0;
}

static int writer_io_error(struct rv_perf_writer *w, int code, struct rv_error *err)
{
	w->write_failure = code;
	return rv_error_set(err, -code, "cannot write '%s': %s%s", w->path, strerror(-code),
			    code == -ENOSPC ? "; free some space or write the capture elsewhere"
					    : "");
}

static int writer_check_usable(const struct rv_perf_writer *w, struct rv_error *err)
{
	if (w->finished)
		return rv_error_set(err, EINVAL, "'%s' is already finished; no more records",
				    w->path);
	if (w->write_failure)
		return rv_error_set(
			err, -w->write_failure,
			"an earlier write to '%s' failed (%s); the capture is incomplete", w->path,
			strerror(-w->write_failure));
	return 0;
}

int rv_perf_writer_open(struct rv_perf_writer **out, const char *path, struct rv_error *err)
{
	struct rv_perf_writer *w;
	struct pd_file_header placeholder;
	int ret;

	/* Every capture is private: kernel data, and in sampling captures the
	 * target's raw stack (8 KiB a sample in DWARF mode), as perf record's. */
	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
	w->fd = -1;
	w->path = strdup(path);
	w->buffer_cap = WRITE_BUFFER_SIZE;
	w->buffer = malloc(w->buffer_cap);
	if (!w->path || !w->buffer) {
		rv_perf_writer_free(w);
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
	}
	/* 0600 over an existing file's mode too; a symbolic link refused */
	w->fd = rv_private_file_create(path, err);
	if (w->fd < 0) {
		ret = w->fd;
		free(w->buffer);
		free(w->path);
		free(w);
		return ret;
	}
	/* A zeroed header until finish: an unfinished file fails the magic check. */
	memset(&placeholder, 0, sizeof(placeholder));
	ret = writer_pwrite(w, &placeholder, sizeof(placeholder), 0);
	if (ret) {
		rv_perf_writer_free(w);
		return rv_error_set(err, -ret, "cannot write '%s': %s", path, strerror(-ret));
	}
	*out = w;
	return 0;
}

int rv_perf_writer_add_attr(struct rv_perf_writer *w, const struct perf_event_attr *attr,
			    const char *name, const uint64_t *ids, size_t nr_ids,
			    struct rv_error *err)
{
	struct writer_attr *a;
	int ret = writer_check_usable(w, err);

	if (ret)
		return ret;
	if (!attr || (nr_ids && !ids))
		return rv_error_set(err, EINVAL, "perf.data writer: an event needs an attribute%s",
				    nr_ids ? " and its ids" : "");
	if (nr_ids > (UINT32_MAX / sizeof(uint64_t)))
		return rv_error_set(err, EINVAL,
				    "perf.data writer: %zu ids is too many for one event", nr_ids);
	if (rv_array_grow(&w->attrs, &w->attrs_cap, w->nr_attrs, sizeof(*w->attrs), 4))
		return rv_error_set(err, ENOMEM, "out of memory adding an event");
	a = &w->attrs[w->nr_attrs];
	memset(a, 0, sizeof(*a));
	a->attr = *attr;
	a->attr.size = sizeof(a->attr);
	a->name = name ? strdup(name) : NULL;
	a->ids = nr_ids ? malloc(nr_ids * sizeof(*ids)) : NULL;
	if ((name && !a->name) || (nr_ids && !a->ids)) {
		free(a->name);
		free(a->ids);
		return rv_error_set(err, ENOMEM, "out of memory adding an event");
	}
	if (nr_ids)
		memcpy(a->ids, ids, nr_ids * sizeof(*ids));
	a->nr_ids = nr_ids;
	w->nr_attrs++;
	w->attrs_changed = true;
	return 0;
}

static int check_record(const struct perf_event_header *record, struct rv_error *err)
{
	if (!record)
		return rv_error_set(err, EINVAL, "perf.data writer: no record given");
	if (record->size < sizeof(*record) || record->size % 8)
		return rv_error_set(
			err, EINVAL,
			"perf.data writer: a record of type %u has size %u; records must "
			"be at least 8 bytes and a multiple of 8",
			record->type, record->size);
	return 0;
}

/* perf sets up its trace decoder when it meets AUXTRACE_INFO: a second one
 * would start over, and the PMU type it names must be in the PMU mappings. */
static int writer_note_auxtrace_info(struct rv_perf_writer *w,
				     const struct perf_event_header *record, struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)record;

	if (w->have_auxtrace_info)
		return rv_error_set(err, EINVAL,
				    "perf.data writer: a second AUXTRACE_INFO record; a capture "
				    "has one");
	if (record->size < AUXTRACE_INFO_PMU_TYPE_OFFSET + 8)
		return rv_error_set(err, EINVAL,
				    "perf.data writer: an AUXTRACE_INFO record of %u bytes is too "
				    "short to say what it describes",
				    record->size);
	if (rv_load_u32(bytes + 8) == AUXTRACE_TYPE_INTEL_PT) {
		uint64_t type = rv_load_u64(bytes + AUXTRACE_INFO_PMU_TYPE_OFFSET);

		/* A fixed type would make perf take the sideband's software
		 * events for the trace's. */
		if (type < PERF_TYPE_MAX || type > UINT32_MAX)
			return rv_error_set(err, EINVAL,
					    "perf.data writer: Intel PT's PMU type %llu is not a "
					    "dynamic PMU type (%d or more)",
					    (unsigned long long)type, PERF_TYPE_MAX);
		w->have_intel_pt_pmu = true;
		w->intel_pt_pmu_type = (uint32_t)type;
	}
	w->have_auxtrace_info = true;
	return 0;
}

int rv_perf_writer_write(struct rv_perf_writer *w, const struct perf_event_header *record,
			 struct rv_error *err)
{
	int ret = writer_check_usable(w, err);

	if (!ret)
		ret = check_record(record, err);
	if (!ret && record->type == RV_PERF_RECORD_AUXTRACE_INFO)
		ret = writer_note_auxtrace_info(w, record, err);
	if (ret)
		return ret;
	if (record->type == PERF_RECORD_MMAP2 || record->type == PERF_RECORD_MMAP)
		pd_build_ids_note_mapping(&w->build_ids, record);
	{
		struct chunk c = { .nr = 0 };

		chunk_add(&c, record, record->size);
		return writer_append(w, &c, err);
	}
}

bool rv_perf_writer_has_auxtrace_info(const struct rv_perf_writer *w)
{
	return w->have_auxtrace_info;
}

int rv_perf_writer_write_payload(struct rv_perf_writer *w, const struct perf_event_header *record,
				 const void *payload, uint64_t size, struct rv_error *err)
{
	static const uint8_t zeros[8];
	uint64_t padded = pd_align_up(size, 8), declared, offset;
	struct chunk c = { .nr = 0 };
	unsigned int width;
	int ret = writer_check_usable(w, err);

	if (!ret)
		ret = check_record(record, err);
	if (ret)
		return ret;
	if (size && !payload)
		return rv_error_set(err, EINVAL, "perf.data writer: payload of %llu bytes missing",
				    (unsigned long long)size);
	if (!pd_record_has_payload(record->type, &width))
		return rv_error_set(err, EINVAL,
				    "perf.data writer: records of type %u carry no payload (only "
				    "PERF_RECORD_AUXTRACE and HEADER_TRACING_DATA do)",
				    record->type);
	if (pd_payload_size_field((const uint8_t *)record, record->size, width, &declared))
		return rv_error_set(err, EINVAL,
				    "perf.data writer: a record of type %u needs at least %u bytes "
				    "to say how long its payload is",
				    record->type, 8 + width);
	/* perf reads exactly the record's size field past the header, so the
	 * field must count the padding that keeps the next record aligned. */
	if (declared != padded)
		return rv_error_set(
			err, EINVAL,
			"perf.data writer: the record's size field says %llu bytes but the "
			"payload is %llu bytes (%llu once padded to 8); set it to %llu",
			(unsigned long long)declared, (unsigned long long)size,
			(unsigned long long)padded, (unsigned long long)padded);
	/* A record that does not fit in the buffer's room goes after what the
	 * buffer holds is written (and, flushing, after the room it needs is
	 * made), so its offset is known only then. */
	if (record->size + padded > w->buffer_cap - w->buffered) {
		ret = writer_flush(w, err);
		if (!ret && w->flushing && record->size + padded > w->buffer_cap)
			ret = writer_make_room(w, record->size + padded, err);
		if (ret)
			return ret;
	}
	offset = sizeof(struct pd_file_header) + w->flushed + w->buffered;
	if (record->type == RV_PERF_RECORD_AUXTRACE) {
		if (rv_array_grow(&w->aux_index, &w->aux_index_cap, w->nr_aux_index,
				  sizeof(*w->aux_index), 64))
			return rv_error_set(err, ENOMEM, "out of memory writing '%s'", w->path);
		/* perf's entry holds the record's size without the trace
		 * (auxtrace_index__auxtrace_event), and its reader insists. */
		w->aux_index[w->nr_aux_index].file_offset = offset;
		w->aux_index[w->nr_aux_index].size = record->size;
		w->nr_aux_index++;
	}
	chunk_add(&c, record, record->size);
	chunk_add(&c, payload, size);
	chunk_add(&c, zeros, padded - size);
	ret = writer_append(w, &c, err);
	if (ret && record->type == RV_PERF_RECORD_AUXTRACE)
		w->nr_aux_index--;
	return ret;
}

void rv_perf_writer_set_time_range(struct rv_perf_writer *w, uint64_t first, uint64_t last)
{
	w->time_first = first;
	w->time_last = last;
}

uint64_t rv_perf_writer_data_size(const struct rv_perf_writer *w)
{
	return w->flushed + w->buffered;
}

/* ---- writer: header features ---- */

/* perf_header_string: u32 length (NUL included, padded to PD_NAME_ALIGN),
 * then the string and zeros. */
static void put_header_string(struct rv_bytes *b, const char *s)
{
	size_t len = strlen(s) + 1;
	size_t padded = pd_align_up(len, PD_NAME_ALIGN);

	rv_bytes_put_u32(b, (uint32_t)padded);
	rv_bytes_put(b, s, len);
	rv_bytes_put(b, NULL, padded - len);
}

/* The value of "key : value" in /proc/cpuinfo's first processor, with runs
 * of white space squeezed as perf does for the model name. */
static char *cpuinfo_value(const char *key)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *line = NULL, *result = NULL;
	size_t cap = 0, key_len = strlen(key);

	if (!f)
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		char *p = line, *colon, *src, *dst;

		if (line[0] == '\n')
			break; /* end of the first processor */
		if (strncmp(line, key, key_len) != 0)
			continue;
		p = line + key_len;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != ':')
			continue;
		colon = p;
		p = colon + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		for (src = dst = p; *src && *src != '\n'; src++) {
			if ((*src == ' ' || *src == '\t') && dst > p && dst[-1] == ' ')
				continue;
			*dst++ = (*src == '\t') ? ' ' : *src;
		}
		while (dst > p && dst[-1] == ' ')
			dst--;
		*dst = '\0';
		result = strdup(p);
		break;
	}
	free(line);
	fclose(f);
	return result;
}

/* perf's x86 CPUID string: vendor,family,model,stepping. */
static char *default_cpuid(void)
{
	char *vendor = cpuinfo_value("vendor_id");
	char *family = cpuinfo_value("cpu family");
	char *model = cpuinfo_value("model");
	char *stepping = cpuinfo_value("stepping");
	char *result = NULL;

	if (vendor && family && model && stepping &&
	    asprintf(&result, "%s,%s,%s,%s", vendor, family, model, stepping) < 0)
		result = NULL;
	free(vendor);
	free(family);
	free(model);
	free(stepping);
	return result;
}

static bool total_memory_kib(uint64_t *kib)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long value;

		if (sscanf(line, "MemTotal: %llu", &value) == 1) {
			*kib = value;
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

/* A name for HEADER_EVENT_DESC when the caller gave none, in perf's words. */
static const char *default_event_name(const struct perf_event_attr *attr, char *buf, size_t size)
{
	static const struct {
		uint32_t type;
		uint64_t config;
		const char *name;
	} names[] = {
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, "cache-references" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, "cache-misses" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "branches" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "branch-misses" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, "bus-cycles" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
		  "stalled-cycles-frontend" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
		  "stalled-cycles-backend" },
		{ PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, "ref-cycles" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "cpu-clock" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "task-clock" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "context-switches" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, "cpu-migrations" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, "minor-faults" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "major-faults" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, "alignment-faults" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, "emulation-faults" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, "dummy" },
		{ PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, "bpf-output" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].type == attr->type && names[i].config == attr->config)
			return names[i].name;
	snprintf(buf, size, "event-%u:0x%llx", attr->type, (unsigned long long)attr->config);
	return buf;
}

/* HEADER_PMU_MAPPINGS entries, owned. */
struct pmu_list {
	struct {
		char *name;
		uint32_t type;
	} * entries;
	size_t nr, cap;
	bool failed;
};

static void pmu_list_add(struct pmu_list *l, const char *name, uint32_t type)
{
	char *copy;

	if (l->failed)
		return;
	if (rv_array_grow(&l->entries, &l->cap, l->nr, sizeof(*l->entries), 16)) {
		l->failed = true;
		return;
	}
	copy = strdup(name);
	if (!copy) {
		l->failed = true;
		return;
	}
	l->entries[l->nr].name = copy;
	l->entries[l->nr].type = type;
	l->nr++;
}

static void pmu_list_free(struct pmu_list *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->entries[i].name);
	free(l->entries);
	memset(l, 0, sizeof(*l));
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* This machine's PMUs, as perf lists them: every directory of
 * /sys/bus/event_source/devices with a type, by name. */
static void local_pmus(struct pmu_list *l)
{
	static const char dir_path[] = "/sys/bus/event_source/devices";
	DIR *dir = opendir(dir_path);
	struct dirent *de;
	char **names = NULL;
	size_t nr = 0, cap = 0;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (rv_array_grow(&names, &cap, nr, sizeof(*names), 32))
			break;
		names[nr] = strdup(de->d_name);
		if (names[nr])
			nr++;
	}
	closedir(dir);
	if (nr)
		qsort(names, nr, sizeof(*names), compare_names);
	for (size_t i = 0; i < nr; i++) {
		char path[PATH_MAX], text[32];
		unsigned long type;
		char *end;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/type", dir_path, names[i]);
		f = fopen(path, "re");
		if (f && fgets(text, sizeof(text), f)) {
			type = strtoul(text, &end, 10);
			if (end != text && type <= UINT32_MAX)
				pmu_list_add(l, names[i], (uint32_t)type);
		}
		if (f)
			fclose(f);
		free(names[i]);
	}
	free(names);
}

/* The PMU mappings to record: the caller's or this machine's, with the Intel
 * PT PMU of the capture's AUXTRACE_INFO in place of whatever had its type. */
static void put_pmu_mappings(struct rv_bytes *b, const struct rv_perf_writer *w,
			     const struct rv_perf_meta *meta)
{
	struct pmu_list l = { 0 };
	size_t kept = 0;

	if (meta->pmu_mappings) {
		for (size_t i = 0; i < meta->nr_pmu_mappings; i++)
			if (meta->pmu_mappings[i].name)
				pmu_list_add(&l, meta->pmu_mappings[i].name,
					     meta->pmu_mappings[i].type);
	} else {
		local_pmus(&l);
	}
	if (w->have_intel_pt_pmu) {
		for (size_t i = 0; i < l.nr; i++) {
			if (l.entries[i].type == w->intel_pt_pmu_type ||
			    !strcmp(l.entries[i].name, "intel_pt")) {
				free(l.entries[i].name);
				continue;
			}
			l.entries[kept++] = l.entries[i];
		}
		l.nr = kept;
		pmu_list_add(&l, "intel_pt", w->intel_pt_pmu_type);
	}
	if (l.failed) {
		b->failed = true;
	} else if (l.nr) {
		rv_bytes_put_u32(b, (uint32_t)l.nr);
		for (size_t i = 0; i < l.nr; i++) {
			rv_bytes_put_u32(b, l.entries[i].type);
			put_header_string(b, l.entries[i].name);
		}
	}
	pmu_list_free(&l);
}

static uint64_t timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/* Fills the body of every feature the writer records; a feature whose
 * information cannot be found is left out, as perf does. */
static void build_features(const struct rv_perf_writer *w, const struct rv_perf_meta *meta,
			   struct rv_bytes *body, uint64_t *bitmap)
{
	struct utsname uts;
	bool have_uts = uname(&uts) == 0;
	char *cpu_desc = NULL, *cpuid = NULL;
	const char *s;
	uint64_t kib;

#define PUT_STRING_FEATURE(feature, value)                                                         \
	do {                                                                                       \
		const char *value_ = (value);                                                      \
		if (value_) {                                                                      \
			put_header_string(&body[feature], value_);                                 \
			pd_feature_set(bitmap, feature);                                           \
		}                                                                                  \
	} while (0)

	if (meta->tracing_data && meta->tracing_data_size) {
		rv_bytes_put(&body[RV_FEAT_TRACING_DATA], meta->tracing_data,
			     meta->tracing_data_size);
		pd_feature_set(bitmap, RV_FEAT_TRACING_DATA);
	}
	pd_build_ids_put_feature(&w->build_ids, &body[RV_FEAT_BUILD_ID]);
	if (body[RV_FEAT_BUILD_ID].len)
		pd_feature_set(bitmap, RV_FEAT_BUILD_ID);
	PUT_STRING_FEATURE(RV_FEAT_HOSTNAME, meta->hostname ? meta->hostname
					     : have_uts	    ? uts.nodename
							    : NULL);
	PUT_STRING_FEATURE(RV_FEAT_OSRELEASE, meta->os_release ? meta->os_release
					      : have_uts       ? uts.release
							       : NULL);
	PUT_STRING_FEATURE(RV_FEAT_VERSION,
			   meta->perf_version ? meta->perf_version : "rearview " RV_VERSION);
	PUT_STRING_FEATURE(RV_FEAT_ARCH, meta->arch ? meta->arch : have_uts ? uts.machine : NULL);
	{
		long configured = meta->nr_cpus_avail ? (long)meta->nr_cpus_avail
						      : sysconf(_SC_NPROCESSORS_CONF);
		long online = meta->nr_cpus_online ? (long)meta->nr_cpus_online
						   : sysconf(_SC_NPROCESSORS_ONLN);

		if (configured > 0 && online > 0) {
			/* available first, then online: perf's order, not its doc's */
			rv_bytes_put_u32(&body[RV_FEAT_NRCPUS], (uint32_t)configured);
			rv_bytes_put_u32(&body[RV_FEAT_NRCPUS], (uint32_t)online);
			pd_feature_set(bitmap, RV_FEAT_NRCPUS);
		}
	}
	s = meta->cpu_desc;
	if (!s)
		s = cpu_desc = cpuinfo_value("model name");
	PUT_STRING_FEATURE(RV_FEAT_CPUDESC, s);
	s = meta->cpuid;
	if (!s)
		s = cpuid = default_cpuid();
	PUT_STRING_FEATURE(RV_FEAT_CPUID, s);
	if (total_memory_kib(&kib)) {
		rv_bytes_put_u64(&body[RV_FEAT_TOTAL_MEM], kib); /* perf stores kB */
		pd_feature_set(bitmap, RV_FEAT_TOTAL_MEM);
	}
	if (meta->argc > 0 && meta->argv) {
		rv_bytes_put_u32(&body[RV_FEAT_CMDLINE], (uint32_t)meta->argc);
		for (int i = 0; i < meta->argc; i++)
			put_header_string(&body[RV_FEAT_CMDLINE],
					  meta->argv[i] ? meta->argv[i] : "");
		pd_feature_set(bitmap, RV_FEAT_CMDLINE);
	}
	if (w->nr_attrs) {
		struct rv_bytes *b = &body[RV_FEAT_EVENT_DESC];

		rv_bytes_put_u32(b, (uint32_t)w->nr_attrs);
		rv_bytes_put_u32(b, (uint32_t)sizeof(struct perf_event_attr));
		for (size_t i = 0; i < w->nr_attrs; i++) {
			const struct writer_attr *a = &w->attrs[i];
			char fallback[64];

			rv_bytes_put(b, &a->attr, sizeof(a->attr));
			rv_bytes_put_u32(b, (uint32_t)a->nr_ids);
			put_header_string(b, a->name ? a->name
						     : default_event_name(&a->attr, fallback,
									  sizeof(fallback)));
			rv_bytes_put(b, a->ids, a->nr_ids * sizeof(uint64_t));
		}
		pd_feature_set(bitmap, RV_FEAT_EVENT_DESC);
	}
	put_pmu_mappings(&body[RV_FEAT_PMU_MAPPINGS], w, meta);
	if (body[RV_FEAT_PMU_MAPPINGS].len)
		pd_feature_set(bitmap, RV_FEAT_PMU_MAPPINGS);
	if (w->nr_aux_index) {
		struct rv_bytes *b = &body[RV_FEAT_AUXTRACE];

		rv_bytes_put_u64(b, w->nr_aux_index);
		rv_bytes_put(b, w->aux_index, w->nr_aux_index * sizeof(*w->aux_index));
		pd_feature_set(bitmap, RV_FEAT_AUXTRACE);
	}
	if (meta->sample_time_first_ns || meta->sample_time_last_ns) {
		rv_bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], meta->sample_time_first_ns);
		rv_bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], meta->sample_time_last_ns);
		pd_feature_set(bitmap, RV_FEAT_SAMPLE_TIME);
	} else if (w->time_first || w->time_last) {
		rv_bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], w->time_first);
		rv_bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], w->time_last);
		pd_feature_set(bitmap, RV_FEAT_SAMPLE_TIME);
	}
	if (meta->clockid >= 0) {
		struct timespec res, tod, clk;

		/* HEADER_CLOCKID holds the clock's resolution in ns (perf's
		 * clockid_res_ns); the clock itself is in the attributes. */
		if (clock_getres(meta->clockid, &res) == 0) {
			rv_bytes_put_u64(&body[RV_FEAT_CLOCKID], timespec_ns(&res));
			pd_feature_set(bitmap, RV_FEAT_CLOCKID);
		}
		/* HEADER_CLOCK_DATA pairs the clock with wall time (perf script --tod). */
		if (clock_gettime(CLOCK_REALTIME, &tod) == 0 &&
		    clock_gettime(meta->clockid, &clk) == 0) {
			rv_bytes_put_u32(&body[RV_FEAT_CLOCK_DATA], 1);
			rv_bytes_put_u32(&body[RV_FEAT_CLOCK_DATA], (uint32_t)meta->clockid);
			rv_bytes_put_u64(&body[RV_FEAT_CLOCK_DATA], timespec_ns(&tod));
			rv_bytes_put_u64(&body[RV_FEAT_CLOCK_DATA], timespec_ns(&clk));
			pd_feature_set(bitmap, RV_FEAT_CLOCK_DATA);
		}
	}
#undef PUT_STRING_FEATURE
	free(cpu_desc);
	free(cpuid);
}

#define NR_WRITTEN_FEATURES (RV_FEAT_PMU_CAPS + 1)

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return timespec_ns(&ts);
}

/* The features, ids and attributes of the file as it is now, for a header
 * whose data ends at data_end: the table (for the start of the bodies at
 * 0; tail_place rebases it) and the bodies. */
struct tail {
	struct rv_bytes table, bodies;
	struct pd_file_header header;
	uint64_t attrs_at; /* in bodies */
	uint64_t *ids_at;  /* in bodies, per attribute */
};

static void tail_destroy(struct tail *t)
{
	rv_bytes_destroy(&t->table);
	rv_bytes_destroy(&t->bodies);
	free(t->ids_at);
}

static int tail_build(struct rv_perf_writer *w, const struct rv_perf_meta *meta, bool final,
		      uint64_t data_end, struct tail *t, struct rv_error *err)
{
	struct rv_bytes body[RV_FEAT_MAX];
	bool failed = false;

	memset(t, 0, sizeof(*t));
	memset(body, 0, sizeof(body));
	build_features(w, meta, body, t->header.features);
	if (!final) {
		struct timespec now;

		/* what rv_perf_reader_flush_info reports of an unfinished capture */
		clock_gettime(CLOCK_REALTIME, &now);
		rv_bytes_put_u64(&body[RV_FEAT_REARVIEW_FLUSH], timespec_ns(&now));
		rv_bytes_put_u64(&body[RV_FEAT_REARVIEW_FLUSH], w->nr_flushes + 1);
		rv_bytes_put_u64(&body[RV_FEAT_REARVIEW_FLUSH], data_end - sizeof(t->header));
		pd_feature_set(t->header.features, RV_FEAT_REARVIEW_FLUSH);
	}
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++) {
		struct pd_file_section section;

		if (body[f].failed)
			failed = true;
		if (!pd_feature_test(t->header.features, f))
			continue;
		/* perf reads sections where the table says they are; starting
		 * each at 8 bytes lets readers of a mapped file load its u64s */
		rv_bytes_pad_to(&t->bodies, 8);
		section.offset = t->bodies.len;
		section.size = body[f].len;
		rv_bytes_put(&t->bodies, body[f].data, body[f].len);
		rv_bytes_put(&t->table, &section, sizeof(section));
	}
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++)
		rv_bytes_destroy(&body[f]);
	rv_bytes_pad_to(&t->bodies, 8);
	t->ids_at = calloc(w->nr_attrs ? w->nr_attrs : 1, sizeof(*t->ids_at));
	if (!t->ids_at)
		failed = true;
	for (size_t i = 0; i < w->nr_attrs && t->ids_at; i++) {
		t->ids_at[i] = t->bodies.len;
		rv_bytes_put(&t->bodies, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(uint64_t));
	}
	t->attrs_at = t->bodies.len;
	rv_bytes_put(&t->bodies, NULL, w->nr_attrs * sizeof(struct pd_file_attr));
	if (failed || t->table.failed || t->bodies.failed) {
		tail_destroy(t);
		return rv_error_set(err, ENOMEM, "out of memory writing '%s'", w->path);
	}
	memcpy(t->header.magic, PD_MAGIC, sizeof(t->header.magic));
	t->header.size = sizeof(t->header);
	t->header.attr_size = sizeof(struct pd_file_attr);
	t->header.attrs.size = w->nr_attrs * sizeof(struct pd_file_attr);
	t->header.data.offset = sizeof(t->header);
	t->header.data.size = data_end - sizeof(t->header);
	return 0;
}

/* Puts the bodies at file offset at: the table's sections, the attributes'
 * ids and the header's attributes point there. */
static void tail_place(const struct rv_perf_writer *w, struct tail *t, uint64_t at)
{
	for (size_t k = 0; k < t->table.len / sizeof(struct pd_file_section); k++) {
		struct pd_file_section section;

		memcpy(&section, t->table.data + k * sizeof(section), sizeof(section));
		section.offset += at;
		memcpy(t->table.data + k * sizeof(section), &section, sizeof(section));
	}
	for (size_t i = 0; i < w->nr_attrs; i++) {
		struct pd_file_attr fa;

		memset(&fa, 0, sizeof(fa));
		fa.attr = w->attrs[i].attr;
		fa.ids.offset = at + t->ids_at[i];
		fa.ids.size = w->attrs[i].nr_ids * sizeof(uint64_t);
		memcpy(t->bodies.data + t->attrs_at + i * sizeof(fa), &fa, sizeof(fa));
	}
	t->header.attrs.offset = at + t->attrs_at;
}

static bool overlaps(uint64_t a, uint64_t a_end, uint64_t b, uint64_t b_end)
{
	return a < b_end && b < a_end;
}

/* FINISHED_ROUND records, which readers pass over, to pad a chunk. */
static const uint8_t *finished_rounds(void)
{
	static uint64_t rounds[FEATURE_TABLE_MAX / 8];

	if (!rounds[0]) {
		struct perf_event_header h = { .type = RV_PERF_RECORD_FINISHED_ROUND,
					       .size = sizeof(h) };

		for (size_t i = 0; i < FEATURE_TABLE_MAX / 8; i++)
			memcpy(&rounds[i], &h, sizeof(h));
	}
	return (const uint8_t *)rounds;
}

/* Writes the buffer and `extra` as one chunk of the data section, then the
 * features, ids, attributes and header that make the file whole (see the
 * top for the order). final: finish's, packed, without the flush feature. */
static int writer_checkpoint(struct rv_perf_writer *w, const struct chunk *extra, bool final,
			     const struct rv_perf_meta *meta, struct rv_error *err)
{
	struct chunk c = { .nr = 0 };
	struct tail t;
	uint64_t d0 = sizeof(struct pd_file_header) + w->flushed, d1, at,
		 old_table = w->table_bytes;
	int ret;

	if (!w->nr_attrs)
		return rv_error_set(err, EINVAL,
				    "'%s' has no events: add the attributes of the events recorded "
				    "before finishing it",
				    w->path);
	chunk_add(&c, w->buffer, w->buffered);
	for (unsigned int i = 0; extra && i < extra->nr; i++)
		chunk_add(&c, extra->piece[i].data, extra->piece[i].size);
	if (old_table && c.size < old_table)
		chunk_add(&c, finished_rounds(), old_table - c.size);
	d1 = d0 + c.size;
	if (old_table && d1 + FEATURE_TABLE_MAX > w->bodies_offset)
		return rv_error_set(err, EINVAL,
				    "perf.data writer: a chunk of %llu bytes would overwrite the "
				    "features of '%s' (no room was made for it)",
				    (unsigned long long)c.size, w->path);
	/* A flushed file's last header too says it was flushed until the
	 * chunk is whole (5 below); then a header without it, whose table is
	 * the same but for the flush feature's entry, the last. */
	ret = tail_build(w, meta, final && !w->flushing, d1, &t, err);
	if (ret)
		return ret;
	/* The bodies: packed after the table at the end, else past the room
	 * the next chunk and its table need; and never over the old ones. */
	at = pd_align_up(d1 + t.table.len, 8);
	if (!final)
		at = pd_align_up(d1 + w->buffer_cap + FEATURE_TABLE_MAX, 8);
	if (old_table && overlaps(at, at + t.bodies.len, w->bodies_offset, w->bodies_end))
		at = pd_align_up(w->bodies_end, 8);
	tail_place(w, &t, at);

	/* 1 */
	ret = chunk_write(w, &c, old_table, c.size, d0);
	/* 2, 3, 4 */
	if (!ret)
		ret = writer_pwrite(w, t.bodies.data, t.bodies.len, at);
	if (!ret)
		ret = writer_pwrite(w, t.table.data, t.table.len, d1);
	if (!ret)
		ret = writer_pwrite(w, &t.header, sizeof(t.header), 0);
	/* 5 */
	if (!ret && old_table > 8)
		ret = chunk_write(w, &c, 8, old_table, d0);
	if (!ret && old_table)
		ret = chunk_write(w, &c, 0, 8, d0);
	if (!ret && final && w->flushing) {
		t.header.features[RV_FEAT_REARVIEW_FLUSH / 64] &=
			~(1ull << (RV_FEAT_REARVIEW_FLUSH % 64));
		ret = writer_pwrite(w, &t.header, sizeof(t.header), 0);
	}
	if (!ret && final && ftruncate(w->fd, (off_t)(at + t.bodies.len)))
		ret = -errno;
	if (ret) {
		tail_destroy(&t);
		return writer_io_error(w, ret, err);
	}
	w->flushed += c.size;
	w->buffered = 0;
	w->table_bytes = t.table.len;
	w->bodies_offset = at;
	w->bodies_end = at + t.bodies.len;
	w->attrs_changed = false;
	w->last_flush_ns = monotonic_ns();
	if (!final)
		w->nr_flushes++;
	tail_destroy(&t);
	return 0;
}

/* Flushing: before a chunk of chunk_size bytes is written, makes sure it
 * stops short of the bodies the header on disk references, with a flush of
 * padding whose bodies go far enough. */
static int writer_make_room(struct rv_perf_writer *w, uint64_t chunk_size, struct rv_error *err)
{
	uint64_t d0 = sizeof(struct pd_file_header) + w->flushed;
	uint64_t cap = w->buffer_cap;
	int ret;

	if (!w->table_bytes || d0 + chunk_size + FEATURE_TABLE_MAX <= w->bodies_offset)
		return 0;
	ret = writer_flush(w, err);
	if (ret || !w->table_bytes)
		return ret;
	d0 = sizeof(struct pd_file_header) + w->flushed;
	if (d0 + chunk_size + FEATURE_TABLE_MAX <= w->bodies_offset)
		return 0;
	/* a padding chunk, whose bodies are placed as if the buffer held
	 * chunk_size bytes */
	w->buffer_cap = (size_t)(chunk_size + w->table_bytes);
	ret = writer_checkpoint(w, NULL, false, &w->flush_meta.meta, err);
	w->buffer_cap = cap;
	return ret;
}

int rv_perf_writer_finish(struct rv_perf_writer *w, const struct rv_perf_meta *meta,
			  struct rv_error *err)
{
	static const struct rv_perf_meta no_meta = { .clockid = -1 };
	int ret = writer_check_usable(w, err);

	if (ret)
		return ret;
	if (!meta)
		meta = w->flushing ? &w->flush_meta.meta : &no_meta;
	if (!w->nr_attrs)
		return rv_error_set(err, EINVAL,
				    "'%s' has no events: add the attributes of the events recorded "
				    "before finishing it",
				    w->path);
	/* The last chunk, when it is large, leaves room for nothing after it. */
	if (w->flushing) {
		ret = writer_make_room(w, w->buffered, err);
		if (ret)
			return ret;
	}
	ret = writer_checkpoint(w, NULL, true, meta, err);
	if (ret)
		return ret;
	w->finished = true;
	return 0;
}

/* ---- flushing as it grows ---- */

static char *meta_string(struct meta_copy *m, const char *s, bool *failed)
{
	char *copy;

	if (!s)
		return NULL;
	copy = strdup(s);
	if (!copy) {
		*failed = true;
		return NULL;
	}
	m->strings[m->nr_strings++] = copy;
	return copy;
}

static void meta_copy_destroy(struct meta_copy *m)
{
	for (size_t i = 0; i < m->nr_strings; i++)
		free(m->strings[i]);
	free(m->strings);
	free(m->argv);
	free(m->pmus);
	free(m->tracing_data);
	memset(m, 0, sizeof(*m));
}

static int meta_copy_init(struct meta_copy *m, const struct rv_perf_meta *meta)
{
	size_t nr_argv = meta->argc > 0 && meta->argv ? (size_t)meta->argc : 0;
	size_t nr_pmus = meta->pmu_mappings ? meta->nr_pmu_mappings : 0;
	bool failed = false;

	memset(m, 0, sizeof(*m));
	m->meta = *meta;
	m->strings = calloc(6 + nr_argv + nr_pmus, sizeof(*m->strings));
	m->argv = calloc(nr_argv ? nr_argv : 1, sizeof(*m->argv));
	m->pmus = calloc(nr_pmus ? nr_pmus : 1, sizeof(*m->pmus));
	if (meta->tracing_data && meta->tracing_data_size) {
		m->tracing_data = malloc(meta->tracing_data_size);
		if (m->tracing_data)
			memcpy(m->tracing_data, meta->tracing_data, meta->tracing_data_size);
		else
			failed = true;
	}
	if (failed || !m->strings || !m->argv || !m->pmus) {
		meta_copy_destroy(m);
		return -ENOMEM;
	}
	m->meta.hostname = meta_string(m, meta->hostname, &failed);
	m->meta.os_release = meta_string(m, meta->os_release, &failed);
	m->meta.perf_version = meta_string(m, meta->perf_version, &failed);
	m->meta.arch = meta_string(m, meta->arch, &failed);
	m->meta.cpu_desc = meta_string(m, meta->cpu_desc, &failed);
	m->meta.cpuid = meta_string(m, meta->cpuid, &failed);
	for (size_t i = 0; i < nr_argv; i++)
		m->argv[i] = meta_string(m, meta->argv[i] ? meta->argv[i] : "", &failed);
	m->meta.argv = nr_argv ? (const char *const *)m->argv : NULL;
	for (size_t i = 0; i < nr_pmus; i++) {
		m->pmus[i].name = meta_string(m, meta->pmu_mappings[i].name, &failed);
		m->pmus[i].type = meta->pmu_mappings[i].type;
	}
	m->meta.pmu_mappings = nr_pmus ? m->pmus : NULL;
	m->meta.tracing_data = m->tracing_data;
	if (failed) {
		meta_copy_destroy(m);
		return -ENOMEM;
	}
	return 0;
}

int rv_perf_writer_flush_as_it_grows(struct rv_perf_writer *w, const struct rv_perf_meta *meta,
				     uint64_t chunk_bytes, uint64_t interval_ns,
				     struct rv_error *err)
{
	static const struct rv_perf_meta no_meta = { .clockid = -1 };
	struct meta_copy copy;
	uint8_t *buffer;
	int ret = writer_check_usable(w, err);

	if (ret)
		return ret;
	if (w->flushing || w->flushed)
		return rv_error_set(err, EINVAL,
				    "perf.data writer: flushing must be set up before anything is "
				    "written to '%s'",
				    w->path);
	if (!chunk_bytes)
		chunk_bytes = RV_PERF_FLUSH_BYTES;
	if (chunk_bytes < FEATURE_TABLE_MAX || chunk_bytes > SIZE_MAX / 2)
		return rv_error_set(err, EINVAL, "perf.data writer: flushes of %llu bytes",
				    (unsigned long long)chunk_bytes);
	if (chunk_bytes < w->buffered)
		chunk_bytes = w->buffered;
	if (meta_copy_init(&copy, meta ? meta : &no_meta))
		return rv_error_set(err, ENOMEM, "out of memory");
	buffer = realloc(w->buffer, (size_t)chunk_bytes);
	if (!buffer) {
		meta_copy_destroy(&copy);
		return rv_error_set(err, ENOMEM, "out of memory for a %llu-byte flush buffer",
				    (unsigned long long)chunk_bytes);
	}
	w->buffer = buffer;
	w->buffer_cap = (size_t)chunk_bytes;
	w->flush_meta = copy;
	w->flush_interval_ns = interval_ns ? interval_ns : RV_PERF_FLUSH_INTERVAL_NS;
	w->last_flush_ns = monotonic_ns();
	w->flushing = true;
	return 0;
}

int rv_perf_writer_flush(struct rv_perf_writer *w, struct rv_error *err)
{
	int ret = writer_check_usable(w, err);

	if (ret)
		return ret;
	if (!w->flushing)
		return 0;
	if (!w->nr_attrs || (!w->buffered && !w->attrs_changed && w->table_bytes))
		return 0; /* nothing to make whole yet, or nothing new */
	return writer_checkpoint(w, NULL, false, &w->flush_meta.meta, err);
}

int rv_perf_writer_flush_if_due(struct rv_perf_writer *w, struct rv_error *err)
{
	if (!w->flushing || w->finished || monotonic_ns() - w->last_flush_ns < w->flush_interval_ns)
		return 0;
	return rv_perf_writer_flush(w, err);
}

uint64_t rv_perf_writer_flushes(const struct rv_perf_writer *w)
{
	return w->nr_flushes;
}

void pd_writer_watch_writes(struct rv_perf_writer *w,
			    void (*hook)(void *ctx, uint64_t offset, const void *data, size_t size),
			    void *ctx)
{
	w->write_hook = hook;
	w->write_hook_ctx = ctx;
}

void rv_perf_writer_free(struct rv_perf_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0) {
		close(w->fd);
		if (!w->finished)
			unlink(w->path);
	}
	for (size_t i = 0; i < w->nr_attrs; i++) {
		free(w->attrs[i].name);
		free(w->attrs[i].ids);
	}
	free(w->attrs);
	pd_build_ids_destroy(&w->build_ids);
	meta_copy_destroy(&w->flush_meta);
	free(w->aux_index);
	free(w->buffer);
	free(w->path);
	free(w);
}
