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
 * Not here: reading (perf_data_read.c), the records' contents (synth.c,
 * auxtrace.c, the recorders).
 */
#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "util/array.h"

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

static int writer_io_error(struct rv_perf_writer *w, int code, struct rv_error *err)
{
	w->write_failure = code;
	return rv_error_set(err, -code, "cannot write '%s': %s%s", w->path, strerror(-code),
			    code == -ENOSPC ? "; free some space or write the capture elsewhere"
					    : "");
}

static int writer_flush(struct rv_perf_writer *w, struct rv_error *err)
{
	int ret;

	if (!w->buffered)
		return 0;
	ret = pwrite_all(w->fd, w->buffer, w->buffered, sizeof(struct pd_file_header) + w->flushed);
	if (ret)
		return writer_io_error(w, ret, err);
	w->flushed += w->buffered;
	w->buffered = 0;
	return 0;
}

static int writer_append(struct rv_perf_writer *w, const void *data, uint64_t size,
			 struct rv_error *err)
{
	const uint8_t *p = data;

	if (size > WRITE_BUFFER_SIZE - w->buffered) {
		int ret = writer_flush(w, err);

		if (ret)
			return ret;
	}
	if (size >= WRITE_BUFFER_SIZE) {
		int ret = pwrite_all(w->fd, p, size, sizeof(struct pd_file_header) + w->flushed);

		if (ret)
			return writer_io_error(w, ret, err);
		w->flushed += size;
		return 0;
	}
	if (p)
		memcpy(w->buffer + w->buffered, p, size);
	else
		memset(w->buffer + w->buffered, 0, size);
	w->buffered += size;
	return 0;
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

int rv_perf_writer_open(struct rv_perf_writer **out, const char *path, bool kernel_data,
			struct rv_error *err)
{
	struct rv_perf_writer *w;
	struct pd_file_header placeholder;
	mode_t mode = kernel_data ? 0600 : 0644;
	int ret;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
	w->fd = -1;
	w->path = strdup(path);
	w->buffer = malloc(WRITE_BUFFER_SIZE);
	if (!w->path || !w->buffer) {
		rv_perf_writer_free(w);
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (w->fd < 0) {
		int e = errno;

		free(w->buffer);
		free(w->path);
		free(w);
		return rv_error_set(err, e, "cannot create '%s': %s", path, strerror(e));
	}
	/* An existing file keeps its mode through O_CREAT: kernel data must not. */
	if (kernel_data && fchmod(w->fd, 0600) != 0) {
		int e = errno;

		rv_perf_writer_free(w);
		return rv_error_set(err, e, "cannot make '%s' private (mode 0600): %s", path,
				    strerror(e));
	}
	/* A zeroed header until finish: an unfinished file fails the magic check. */
	memset(&placeholder, 0, sizeof(placeholder));
	ret = pwrite_all(w->fd, &placeholder, sizeof(placeholder), 0);
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
	return writer_append(w, record, record->size, err);
}

bool rv_perf_writer_has_auxtrace_info(const struct rv_perf_writer *w)
{
	return w->have_auxtrace_info;
}

int rv_perf_writer_write_payload(struct rv_perf_writer *w, const struct perf_event_header *record,
				 const void *payload, uint64_t size, struct rv_error *err)
{
	uint64_t padded = pd_align_up(size, 8), declared, offset;
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
	ret = writer_append(w, record, record->size, err);
	if (!ret)
		ret = writer_append(w, payload, size, err);
	if (!ret)
		ret = writer_append(w, NULL, padded - size, err);
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

int rv_perf_writer_finish(struct rv_perf_writer *w, const struct rv_perf_meta *meta,
			  struct rv_error *err)
{
	static const struct rv_perf_meta no_meta = { .clockid = -1 };
	struct rv_bytes body[NR_WRITTEN_FEATURES];
	struct rv_bytes tail = { 0 };
	struct pd_file_header header;
	uint64_t feat_offset, attrs_offset, *ids_offset = NULL;
	size_t nr_features = 0, table_at;
	int ret = writer_check_usable(w, err);

	if (ret)
		return ret;
	if (!w->nr_attrs)
		return rv_error_set(err, EINVAL,
				    "'%s' has no events: add the attributes of the events recorded "
				    "before finishing it",
				    w->path);
	if (!meta)
		meta = &no_meta;
	ret = writer_flush(w, err);
	if (ret)
		return ret;

	memset(&header, 0, sizeof(header));
	memset(body, 0, sizeof(body));
	build_features(w, meta, body, header.features);

	/* The feature table must sit right after the data section: that is
	 * where perf looks for it. Ids and attributes follow the bodies. */
	feat_offset = sizeof(header) + w->flushed;
	for (unsigned int f = 0; f < NR_WRITTEN_FEATURES; f++)
		nr_features += (size_t)pd_feature_test(header.features, f);
	table_at = 0;
	rv_bytes_put(&tail, NULL, nr_features * sizeof(struct pd_file_section));
	for (unsigned int f = 0; f < NR_WRITTEN_FEATURES; f++) {
		struct pd_file_section section;

		if (!pd_feature_test(header.features, f))
			continue;
		/* perf reads sections where the table says they are; starting
		 * each at 8 bytes lets readers of a mapped file load its u64s */
		rv_bytes_pad_to(&tail, 8);
		section.offset = feat_offset + tail.len;
		section.size = body[f].len;
		rv_bytes_put(&tail, body[f].data, body[f].len);
		if (!tail.failed)
			memcpy(tail.data + table_at, &section, sizeof(section));
		table_at += sizeof(section);
		if (body[f].failed)
			tail.failed = true;
	}
	rv_bytes_pad_to(&tail, 8);
	ids_offset = calloc(w->nr_attrs ? w->nr_attrs : 1, sizeof(*ids_offset));
	if (!ids_offset)
		tail.failed = true;
	for (size_t i = 0; i < w->nr_attrs && ids_offset; i++) {
		ids_offset[i] = feat_offset + tail.len;
		rv_bytes_put(&tail, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(uint64_t));
	}
	attrs_offset = feat_offset + tail.len;
	for (size_t i = 0; i < w->nr_attrs && ids_offset; i++) {
		struct pd_file_attr fa;

		memset(&fa, 0, sizeof(fa));
		fa.attr = w->attrs[i].attr;
		fa.ids.offset = ids_offset[i];
		fa.ids.size = w->attrs[i].nr_ids * sizeof(uint64_t);
		rv_bytes_put(&tail, &fa, sizeof(fa));
	}
	free(ids_offset);
	for (unsigned int f = 0; f < NR_WRITTEN_FEATURES; f++)
		rv_bytes_destroy(&body[f]);
	if (tail.failed) {
		rv_bytes_destroy(&tail);
		return rv_error_set(err, ENOMEM, "out of memory finishing '%s'", w->path);
	}

	memcpy(header.magic, PD_MAGIC, sizeof(header.magic));
	header.size = sizeof(header);
	header.attr_size = sizeof(struct pd_file_attr);
	header.attrs.offset = attrs_offset;
	header.attrs.size = w->nr_attrs * sizeof(struct pd_file_attr);
	header.data.offset = sizeof(header);
	header.data.size = w->flushed;

	ret = pwrite_all(w->fd, tail.data, tail.len, feat_offset);
	rv_bytes_destroy(&tail);
	if (!ret)
		ret = pwrite_all(w->fd, &header, sizeof(header), 0);
	if (ret)
		return writer_io_error(w, ret, err);
	w->finished = true;
	return 0;
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
	free(w->aux_index);
	free(w->buffer);
	free(w->path);
	free(w);
}
