/* perf_data.c: perf.data files, written (perf's file mode) and read (file
 * mode and pipe mode).
 *
 * The writer streams records into the data section right after the file
 * header, then, when finished, appends the header features (which perf looks
 * for immediately after the data section), the ids and the attributes, and
 * finally rewrites the header. The reader maps the file (or reads a pipe into
 * memory), checks every offset and length in the header, the attributes and
 * the features, and walks the records with a record stream that knows nothing
 * of the file layout: file mode hands it the data section, pipe mode
 * everything after the 16-byte header, where attributes and features come as
 * records that one scan at open collects.
 *
 * This file does not interpret records beyond their layout: what a sample or
 * an MMAP2 means for a trace is the decoder's business.
 */
#define RV_LOG_DOMAIN "perf-data"

#include "capture/perf_data.h"
#include "capture/perf_data_internal.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef RV_VERSION
#define RV_VERSION "unknown"
#endif

/* ---- the file layout (perf.data-file-format.txt) ---- */

#define PERF_MAGIC	   "PERFILE2"
#define PERF_MAGIC_SWAPPED "2ELIFREP"
#define PERF_MAGIC_V1	   "PERFFILE"
#define NAME_ALIGN	   64
#define BUILD_ID_MAX	   20
#define HOST_KERNEL_PID	   (-1)
#define MAX_ATTR_BYTES	   4096

/* Record types perf adds in user space (tools/perf/util/event.h). */
#define RECORD_USER_TYPE_START	   64
#define RECORD_HEADER_ATTR	   64
#define RECORD_HEADER_TRACING_DATA 66
#define RECORD_AUXTRACE_INFO	   70
#define RECORD_AUXTRACE		   71
#define RECORD_EVENT_UPDATE	   78
#define RECORD_HEADER_FEATURE	   80
#define RECORD_MISC_BUILD_ID_SIZE  (1 << 15)

/* PERF_RECORD_AUXTRACE_INFO: u32 type at 8; Intel PT's PMU type is priv[0]. */
#define AUXTRACE_TYPE_INTEL_PT	      1
#define AUXTRACE_INFO_PMU_TYPE_OFFSET 16

/* EVENT_UPDATE: u64 type, u64 id, then the name for PERF_EVENT_UPDATE__NAME. */
#define EVENT_UPDATE_NAME 2

#ifndef PERF_SAMPLE_BRANCH_COUNTERS
#define PERF_SAMPLE_BRANCH_COUNTERS (1ULL << 19)
#endif

#define KNOWN_SAMPLE_TYPES ((uint64_t)PERF_SAMPLE_WEIGHT_STRUCT * 2 - 1)
#define SAMPLE_ID_TRAILER_TYPES                                                                    \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

struct file_section {
	uint64_t offset;
	uint64_t size;
};

struct file_header {
	char magic[8];
	uint64_t size;
	uint64_t attr_size;
	struct file_section attrs;
	struct file_section data;
	struct file_section event_types;
	uint64_t features[RV_FEAT_MAX / 64];
};

_Static_assert(sizeof(struct file_header) == 104, "perf_file_header is 104 bytes");

/* Headers of perf before the feature bitmap existed end here. */
#define FILE_HEADER_NO_FEATURES_SIZE offsetof(struct file_header, features)

struct file_attr {
	struct perf_event_attr attr;
	struct file_section ids;
};

/* perf's struct perf_record_header_build_id, without the file name. */
struct build_id_entry_header {
	struct perf_event_header header;
	int32_t pid;
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_size;
	uint8_t reserved[3];
};

_Static_assert(sizeof(struct build_id_entry_header) == 36, "build_id_event is 36 bytes");

/* Offsets of the file name in MMAP and MMAP2 records, and of MMAP2's build id. */
#define MMAP_FILENAME_OFFSET	   40
#define MMAP2_FILENAME_OFFSET	   72
#define MMAP2_BUILD_ID_SIZE_OFFSET 40
#define MMAP2_BUILD_ID_OFFSET	   44

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) / alignment * alignment;
}

static int feature_test(const uint64_t *bitmap, unsigned int feature)
{
	return (bitmap[feature / 64] >> (feature % 64)) & 1;
}

static void feature_set(uint64_t *bitmap, unsigned int feature)
{
	bitmap[feature / 64] |= 1ULL << (feature % 64);
}

/* ---- growable byte buffers, for the header features ---- */

struct bytes {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool failed;
};

static void bytes_put(struct bytes *b, const void *p, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (n > b->cap - b->len) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *data;

		while (n > cap - b->len) {
			if (cap > SIZE_MAX / 2) {
				b->failed = true;
				return;
			}
			cap *= 2;
		}
		data = realloc(b->data, cap);
		if (!data) {
			b->failed = true;
			return;
		}
		b->data = data;
		b->cap = cap;
	}
	if (p)
		memcpy(b->data + b->len, p, n);
	else
		memset(b->data + b->len, 0, n);
	b->len += n;
}

static void bytes_put_u32(struct bytes *b, uint32_t v)
{
	bytes_put(b, &v, sizeof(v));
}

static void bytes_put_u64(struct bytes *b, uint64_t v)
{
	bytes_put(b, &v, sizeof(v));
}

static void bytes_pad_to(struct bytes *b, size_t alignment)
{
	bytes_put(b, NULL, align_up(b->len, alignment) - b->len);
}

/* perf_header_string: u32 length (NUL included, padded to NAME_ALIGN), then
 * the string and zeros. */
static void bytes_put_string(struct bytes *b, const char *s)
{
	size_t len = strlen(s) + 1;
	size_t padded = align_up(len, NAME_ALIGN);

	bytes_put_u32(b, (uint32_t)padded);
	bytes_put(b, s, len);
	bytes_put(b, NULL, padded - len);
}

static void bytes_free(struct bytes *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- build ids ---- */

/* Finds NT_GNU_BUILD_ID in a block of ELF notes; returns its size or 0. */
static size_t build_id_from_notes(const uint8_t *notes, size_t size, uint8_t *id)
{
	size_t pos = 0;

	while (size - pos >= 12) {
		uint32_t namesz = rv_load_u32(notes + pos);
		uint32_t descsz = rv_load_u32(notes + pos + 4);
		uint32_t type = rv_load_u32(notes + pos + 8);
		uint64_t name_at = pos + 12;
		uint64_t desc_at = name_at + align_up(namesz, 4);
		uint64_t next = desc_at + align_up(descsz, 4);

		if (next > size)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    memcmp(notes + name_at, "GNU", 4) == 0 && descsz > 0) {
			size_t n = descsz < BUILD_ID_MAX ? descsz : BUILD_ID_MAX;

			memcpy(id, notes + desc_at, n);
			return n;
		}
		pos = (size_t)next;
	}
	return 0;
}

static size_t build_id_from_elf_data(Elf_Data *data, uint8_t *id)
{
	GElf_Nhdr nhdr;
	size_t offset = 0, name_offset, desc_offset, next;

	while ((next = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    memcmp((const char *)data->d_buf + name_offset, "GNU", 4) == 0 &&
		    nhdr.n_descsz > 0) {
			size_t n = nhdr.n_descsz < BUILD_ID_MAX ? nhdr.n_descsz : BUILD_ID_MAX;

			memcpy(id, (const char *)data->d_buf + desc_offset, n);
			return n;
		}
		offset = next;
	}
	return 0;
}

/* The GNU build id of an ELF file, or 0 when it has none or is not ELF. */
static size_t build_id_of_file(const char *path, uint8_t *id)
{
	Elf_Scn *scn = NULL;
	size_t found = 0;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		while (!found && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr shdr;
			Elf_Data *data;

			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
				continue;
			data = elf_getdata(scn, NULL);
			if (data && data->d_buf)
				found = build_id_from_elf_data(data, id);
		}
		if (!found) {
			size_t phnum = 0;

			if (elf_getphdrnum(elf, &phnum) != 0)
				phnum = 0;
			for (size_t i = 0; i < phnum && !found; i++) {
				GElf_Phdr phdr;
				Elf_Data *data;

				if (!gelf_getphdr(elf, (int)i, &phdr) || phdr.p_type != PT_NOTE)
					continue;
				data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset,
							    phdr.p_filesz, ELF_T_NHDR);
				if (data && data->d_buf)
					found = build_id_from_elf_data(data, id);
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

/* The running kernel's build id, from its notes in sysfs. */
static size_t build_id_of_kernel(uint8_t *id)
{
	uint8_t notes[4096];
	size_t len = 0;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < sizeof(notes)) {
		ssize_t n = read(fd, notes + len, sizeof(notes) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return build_id_from_notes(notes, len, id);
}

/* The files that MMAP/MMAP2 records named, each looked up once. */
struct dso_entry {
	char *name;
	uint16_t misc; /* PERF_RECORD_MISC_KERNEL or _USER, for HEADER_BUILD_ID */
	uint8_t build_id_size;
	uint8_t build_id[BUILD_ID_MAX];
};

struct dso_table {
	struct dso_entry *entries;
	size_t nr, cap;
	uint32_t *slots; /* open addressing: index + 1, 0 when empty */
	size_t nr_slots;
};

static uint64_t hash_string(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

static struct dso_entry *dso_table_find(const struct dso_table *t, const char *name)
{
	if (!t->nr_slots)
		return NULL;
	for (size_t i = hash_string(name) & (t->nr_slots - 1);; i = (i + 1) & (t->nr_slots - 1)) {
		uint32_t slot = t->slots[i];

		if (!slot)
			return NULL;
		if (strcmp(t->entries[slot - 1].name, name) == 0)
			return &t->entries[slot - 1];
	}
}

static int dso_table_rehash(struct dso_table *t, size_t nr_slots)
{
	uint32_t *slots = calloc(nr_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t e = 0; e < t->nr; e++) {
		size_t i = hash_string(t->entries[e].name) & (nr_slots - 1);

		while (slots[i])
			i = (i + 1) & (nr_slots - 1);
		slots[i] = (uint32_t)(e + 1);
	}
	free(t->slots);
	t->slots = slots;
	t->nr_slots = nr_slots;
	return 0;
}

static struct dso_entry *dso_table_add(struct dso_table *t, const char *name)
{
	struct dso_entry *e;
	size_t i;

	if (t->nr >= UINT32_MAX / 2)
		return NULL;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct dso_entry *entries = realloc(t->entries, cap * sizeof(*entries));

		if (!entries)
			return NULL;
		t->entries = entries;
		t->cap = cap;
	}
	if ((t->nr + 1) * 2 > t->nr_slots &&
	    dso_table_rehash(t, t->nr_slots ? t->nr_slots * 2 : 64))
		return NULL;
	e = &t->entries[t->nr];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return NULL;
	t->nr++;
	for (i = hash_string(name) & (t->nr_slots - 1); t->slots[i];
	     i = (i + 1) & (t->nr_slots - 1))
		;
	t->slots[i] = (uint32_t)t->nr;
	return e;
}

static void dso_table_free(struct dso_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free(t->entries[i].name);
	free(t->entries);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

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
	struct dso_table dsos;
	struct aux_index_entry *aux_index;
	size_t nr_aux_index, aux_index_cap;
	bool have_auxtrace_info;
	bool have_intel_pt_pmu; /* an Intel PT AUXTRACE_INFO named this PMU type */
	uint32_t intel_pt_pmu_type;
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
	ret = pwrite_all(w->fd, w->buffer, w->buffered, sizeof(struct file_header) + w->flushed);
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
		int ret = pwrite_all(w->fd, p, size, sizeof(struct file_header) + w->flushed);

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
	struct file_header placeholder;
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
	if (w->nr_attrs == w->attrs_cap) {
		size_t cap = w->attrs_cap ? w->attrs_cap * 2 : 4;
		struct writer_attr *attrs = realloc(w->attrs, cap * sizeof(*attrs));

		if (!attrs)
			return rv_error_set(err, ENOMEM, "out of memory adding an event");
		w->attrs = attrs;
		w->attrs_cap = cap;
	}
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

/* Notes the file an MMAP or MMAP2 record names, with its build id, for
 * HEADER_BUILD_ID. Looked up once per file, when first mapped (the file may be
 * gone by the end of the recording). A name that cannot be looked up is
 * skipped without an error: build ids only help perf find the right binary. */
static void writer_note_mapping(struct rv_perf_writer *w, const struct perf_event_header *record)
{
	const uint8_t *bytes = (const uint8_t *)record;
	size_t name_at =
		record->type == PERF_RECORD_MMAP2 ? MMAP2_FILENAME_OFFSET : MMAP_FILENAME_OFFSET;
	unsigned int cpumode = record->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	const char *name;
	struct dso_entry *dso;
	bool kernel;

	if (record->size <= name_at)
		return;
	if (cpumode != PERF_RECORD_MISC_KERNEL && cpumode != PERF_RECORD_MISC_USER)
		return; /* guests, hypervisor: not this machine's files */
	name = (const char *)bytes + name_at;
	if (!memchr(name, '\0', record->size - name_at) || !name[0])
		return;
	kernel = cpumode == PERF_RECORD_MISC_KERNEL;
	if (kernel && strncmp(name, "[kernel.kallsyms]", 17) == 0)
		name = "[kernel.kallsyms]";
	else if (name[0] != '/')
		return; /* [vdso], [stack], //anon: nothing to look up */
	if (dso_table_find(&w->dsos, name))
		return;
	dso = dso_table_add(&w->dsos, name);
	if (!dso)
		return;
	dso->misc = kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	if (record->type == PERF_RECORD_MMAP2 && (record->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		uint8_t size = bytes[MMAP2_BUILD_ID_SIZE_OFFSET];

		dso->build_id_size = size < BUILD_ID_MAX ? size : BUILD_ID_MAX;
		memcpy(dso->build_id, bytes + MMAP2_BUILD_ID_OFFSET, dso->build_id_size);
	} else if (name[0] == '[') {
		dso->build_id_size = (uint8_t)build_id_of_kernel(dso->build_id);
	} else {
		dso->build_id_size = (uint8_t)build_id_of_file(name, dso->build_id);
	}
	rv_debug2("%s: build id of %zu bytes", name, (size_t)dso->build_id_size);
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
	if (!ret && record->type == RECORD_AUXTRACE_INFO)
		ret = writer_note_auxtrace_info(w, record, err);
	if (ret)
		return ret;
	if (record->type == PERF_RECORD_MMAP2 || record->type == PERF_RECORD_MMAP)
		writer_note_mapping(w, record);
	return writer_append(w, record, record->size, err);
}

bool rv_perf_writer_has_auxtrace_info(const struct rv_perf_writer *w)
{
	return w->have_auxtrace_info;
}

/* The records whose header is followed by data that header.size does not
 * count: the size of that data (padding included) is a field at byte 8 of the
 * record, `*width` bytes wide. */
static bool record_has_payload(uint32_t type, unsigned int *width)
{
	if (type == RECORD_AUXTRACE) {
		*width = 8;
		return true;
	}
	if (type == RECORD_HEADER_TRACING_DATA) {
		*width = 4;
		return true;
	}
	return false;
}

/* The payload size a record declares, or -1 when it is too short to say. */
static int payload_size_field(const uint8_t *record, uint16_t record_size, unsigned int width,
			      uint64_t *size)
{
	if (record_size < 8 + width)
		return -1;
	*size = width == 8 ? rv_load_u64(record + 8) : rv_load_u32(record + 8);
	return 0;
}

int rv_perf_writer_write_payload(struct rv_perf_writer *w, const struct perf_event_header *record,
				 const void *payload, uint64_t size, struct rv_error *err)
{
	uint64_t padded = align_up(size, 8), declared, offset;
	unsigned int width;
	int ret = writer_check_usable(w, err);

	if (!ret)
		ret = check_record(record, err);
	if (ret)
		return ret;
	if (size && !payload)
		return rv_error_set(err, EINVAL, "perf.data writer: payload of %llu bytes missing",
				    (unsigned long long)size);
	if (!record_has_payload(record->type, &width))
		return rv_error_set(err, EINVAL,
				    "perf.data writer: records of type %u carry no payload (only "
				    "PERF_RECORD_AUXTRACE and HEADER_TRACING_DATA do)",
				    record->type);
	if (payload_size_field((const uint8_t *)record, record->size, width, &declared))
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
	offset = sizeof(struct file_header) + w->flushed + w->buffered;
	if (record->type == RECORD_AUXTRACE) {
		if (w->nr_aux_index == w->aux_index_cap) {
			size_t cap = w->aux_index_cap ? w->aux_index_cap * 2 : 64;
			struct aux_index_entry *index = realloc(w->aux_index, cap * sizeof(*index));

			if (!index)
				return rv_error_set(err, ENOMEM, "out of memory writing '%s'",
						    w->path);
			w->aux_index = index;
			w->aux_index_cap = cap;
		}
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

uint64_t rv_perf_writer_data_size(const struct rv_perf_writer *w)
{
	return w->flushed + w->buffered;
}

/* ---- writer: header features ---- */

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
	static const char *const hardware[] = {
		[PERF_COUNT_HW_CPU_CYCLES] = "cycles",
		[PERF_COUNT_HW_INSTRUCTIONS] = "instructions",
		[PERF_COUNT_HW_CACHE_REFERENCES] = "cache-references",
		[PERF_COUNT_HW_CACHE_MISSES] = "cache-misses",
		[PERF_COUNT_HW_BRANCH_INSTRUCTIONS] = "branches",
		[PERF_COUNT_HW_BRANCH_MISSES] = "branch-misses",
		[PERF_COUNT_HW_BUS_CYCLES] = "bus-cycles",
		[PERF_COUNT_HW_STALLED_CYCLES_FRONTEND] = "stalled-cycles-frontend",
		[PERF_COUNT_HW_STALLED_CYCLES_BACKEND] = "stalled-cycles-backend",
		[PERF_COUNT_HW_REF_CPU_CYCLES] = "ref-cycles",
	};
	static const char *const software[] = {
		[PERF_COUNT_SW_CPU_CLOCK] = "cpu-clock",
		[PERF_COUNT_SW_TASK_CLOCK] = "task-clock",
		[PERF_COUNT_SW_PAGE_FAULTS] = "page-faults",
		[PERF_COUNT_SW_CONTEXT_SWITCHES] = "context-switches",
		[PERF_COUNT_SW_CPU_MIGRATIONS] = "cpu-migrations",
		[PERF_COUNT_SW_PAGE_FAULTS_MIN] = "minor-faults",
		[PERF_COUNT_SW_PAGE_FAULTS_MAJ] = "major-faults",
		[PERF_COUNT_SW_ALIGNMENT_FAULTS] = "alignment-faults",
		[PERF_COUNT_SW_EMULATION_FAULTS] = "emulation-faults",
		[PERF_COUNT_SW_DUMMY] = "dummy",
		[PERF_COUNT_SW_BPF_OUTPUT] = "bpf-output",
	};

	if (attr->type == PERF_TYPE_HARDWARE &&
	    attr->config < sizeof(hardware) / sizeof(hardware[0]) && hardware[attr->config])
		return hardware[attr->config];
	if (attr->type == PERF_TYPE_SOFTWARE &&
	    attr->config < sizeof(software) / sizeof(software[0]) && software[attr->config])
		return software[attr->config];
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
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		void *entries = realloc(l->entries, cap * sizeof(*l->entries));

		if (!entries) {
			l->failed = true;
			return;
		}
		l->entries = entries;
		l->cap = cap;
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
		char **grown;

		if (de->d_name[0] == '.')
			continue;
		if (nr == cap) {
			cap = cap ? cap * 2 : 32;
			grown = realloc(names, cap * sizeof(*names));
			if (!grown)
				break;
			names = grown;
		}
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
static void put_pmu_mappings(struct bytes *b, const struct rv_perf_writer *w,
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
		bytes_put_u32(b, (uint32_t)l.nr);
		for (size_t i = 0; i < l.nr; i++) {
			bytes_put_u32(b, l.entries[i].type);
			bytes_put_string(b, l.entries[i].name);
		}
	}
	pmu_list_free(&l);
}

static void put_build_ids(struct bytes *b, const struct dso_table *dsos)
{
	/* perf puts the kernel first (its reader checks the first entry's name). */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < dsos->nr; i++) {
			const struct dso_entry *dso = &dsos->entries[i];
			struct build_id_entry_header h;
			size_t name_len = strlen(dso->name) + 1;
			size_t padded = align_up(name_len, NAME_ALIGN);

			if (!dso->build_id_size || (dso->name[0] == '[') != (pass == 0))
				continue;
			memset(&h, 0, sizeof(h));
			/* header.type stays 0 in the file's table, as perf leaves it */
			h.header.misc = dso->misc | RECORD_MISC_BUILD_ID_SIZE;
			h.header.size = (uint16_t)(sizeof(h) + padded);
			h.pid = HOST_KERNEL_PID;
			memcpy(h.build_id, dso->build_id, dso->build_id_size);
			h.build_id_size = dso->build_id_size;
			bytes_put(b, &h, sizeof(h));
			bytes_put(b, dso->name, name_len);
			bytes_put(b, NULL, padded - name_len);
		}
	}
}

static uint64_t timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/* Fills the body of every feature the writer records; a feature whose
 * information cannot be found is left out, as perf does. */
static void build_features(const struct rv_perf_writer *w, const struct rv_perf_meta *meta,
			   struct bytes *body, uint64_t *bitmap)
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
			bytes_put_string(&body[feature], value_);                                  \
			feature_set(bitmap, feature);                                              \
		}                                                                                  \
	} while (0)

	if (w->dsos.nr) {
		put_build_ids(&body[RV_FEAT_BUILD_ID], &w->dsos);
		if (body[RV_FEAT_BUILD_ID].len)
			feature_set(bitmap, RV_FEAT_BUILD_ID);
	}
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
			bytes_put_u32(&body[RV_FEAT_NRCPUS], (uint32_t)configured);
			bytes_put_u32(&body[RV_FEAT_NRCPUS], (uint32_t)online);
			feature_set(bitmap, RV_FEAT_NRCPUS);
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
		bytes_put_u64(&body[RV_FEAT_TOTAL_MEM], kib); /* perf stores kB */
		feature_set(bitmap, RV_FEAT_TOTAL_MEM);
	}
	if (meta->argc > 0 && meta->argv) {
		bytes_put_u32(&body[RV_FEAT_CMDLINE], (uint32_t)meta->argc);
		for (int i = 0; i < meta->argc; i++)
			bytes_put_string(&body[RV_FEAT_CMDLINE],
					 meta->argv[i] ? meta->argv[i] : "");
		feature_set(bitmap, RV_FEAT_CMDLINE);
	}
	if (w->nr_attrs) {
		struct bytes *b = &body[RV_FEAT_EVENT_DESC];

		bytes_put_u32(b, (uint32_t)w->nr_attrs);
		bytes_put_u32(b, (uint32_t)sizeof(struct perf_event_attr));
		for (size_t i = 0; i < w->nr_attrs; i++) {
			const struct writer_attr *a = &w->attrs[i];
			char fallback[64];

			bytes_put(b, &a->attr, sizeof(a->attr));
			bytes_put_u32(b, (uint32_t)a->nr_ids);
			bytes_put_string(b, a->name ? a->name
						    : default_event_name(&a->attr, fallback,
									 sizeof(fallback)));
			bytes_put(b, a->ids, a->nr_ids * sizeof(uint64_t));
		}
		feature_set(bitmap, RV_FEAT_EVENT_DESC);
	}
	put_pmu_mappings(&body[RV_FEAT_PMU_MAPPINGS], w, meta);
	if (body[RV_FEAT_PMU_MAPPINGS].len)
		feature_set(bitmap, RV_FEAT_PMU_MAPPINGS);
	if (w->nr_aux_index) {
		struct bytes *b = &body[RV_FEAT_AUXTRACE];

		bytes_put_u64(b, w->nr_aux_index);
		bytes_put(b, w->aux_index, w->nr_aux_index * sizeof(*w->aux_index));
		feature_set(bitmap, RV_FEAT_AUXTRACE);
	}
	if (meta->sample_time_first_ns || meta->sample_time_last_ns) {
		bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], meta->sample_time_first_ns);
		bytes_put_u64(&body[RV_FEAT_SAMPLE_TIME], meta->sample_time_last_ns);
		feature_set(bitmap, RV_FEAT_SAMPLE_TIME);
	}
	if (meta->clockid >= 0) {
		struct timespec res, tod, clk;

		/* HEADER_CLOCKID holds the clock's resolution in ns (perf's
		 * clockid_res_ns); the clock itself is in the attributes. */
		if (clock_getres(meta->clockid, &res) == 0) {
			bytes_put_u64(&body[RV_FEAT_CLOCKID], timespec_ns(&res));
			feature_set(bitmap, RV_FEAT_CLOCKID);
		}
		/* HEADER_CLOCK_DATA pairs the clock with wall time (perf script --tod). */
		if (clock_gettime(CLOCK_REALTIME, &tod) == 0 &&
		    clock_gettime(meta->clockid, &clk) == 0) {
			bytes_put_u32(&body[RV_FEAT_CLOCK_DATA], 1);
			bytes_put_u32(&body[RV_FEAT_CLOCK_DATA], (uint32_t)meta->clockid);
			bytes_put_u64(&body[RV_FEAT_CLOCK_DATA], timespec_ns(&tod));
			bytes_put_u64(&body[RV_FEAT_CLOCK_DATA], timespec_ns(&clk));
			feature_set(bitmap, RV_FEAT_CLOCK_DATA);
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
	struct bytes body[NR_WRITTEN_FEATURES];
	struct bytes tail = { 0 };
	struct file_header header;
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
		nr_features += (size_t)feature_test(header.features, f);
	table_at = 0;
	bytes_put(&tail, NULL, nr_features * sizeof(struct file_section));
	for (unsigned int f = 0; f < NR_WRITTEN_FEATURES; f++) {
		struct file_section section;

		if (!feature_test(header.features, f))
			continue;
		/* perf reads sections where the table says they are; starting
		 * each at 8 bytes lets readers of a mapped file load its u64s */
		bytes_pad_to(&tail, 8);
		section.offset = feat_offset + tail.len;
		section.size = body[f].len;
		bytes_put(&tail, body[f].data, body[f].len);
		if (!tail.failed)
			memcpy(tail.data + table_at, &section, sizeof(section));
		table_at += sizeof(section);
		if (body[f].failed)
			tail.failed = true;
	}
	bytes_pad_to(&tail, 8);
	ids_offset = calloc(w->nr_attrs ? w->nr_attrs : 1, sizeof(*ids_offset));
	if (!ids_offset)
		tail.failed = true;
	for (size_t i = 0; i < w->nr_attrs && ids_offset; i++) {
		ids_offset[i] = feat_offset + tail.len;
		bytes_put(&tail, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(uint64_t));
	}
	attrs_offset = feat_offset + tail.len;
	for (size_t i = 0; i < w->nr_attrs && ids_offset; i++) {
		struct file_attr fa;

		memset(&fa, 0, sizeof(fa));
		fa.attr = w->attrs[i].attr;
		fa.ids.offset = ids_offset[i];
		fa.ids.size = w->attrs[i].nr_ids * sizeof(uint64_t);
		bytes_put(&tail, &fa, sizeof(fa));
	}
	free(ids_offset);
	for (unsigned int f = 0; f < NR_WRITTEN_FEATURES; f++)
		bytes_free(&body[f]);
	if (tail.failed) {
		bytes_free(&tail);
		return rv_error_set(err, ENOMEM, "out of memory finishing '%s'", w->path);
	}

	memcpy(header.magic, PERF_MAGIC, sizeof(header.magic));
	header.size = sizeof(header);
	header.attr_size = sizeof(struct file_attr);
	header.attrs.offset = attrs_offset;
	header.attrs.size = w->nr_attrs * sizeof(struct file_attr);
	header.data.offset = sizeof(header);
	header.data.size = w->flushed;

	ret = pwrite_all(w->fd, tail.data, tail.len, feat_offset);
	bytes_free(&tail);
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
	dso_table_free(&w->dsos);
	free(w->aux_index);
	free(w->buffer);
	free(w->path);
	free(w);
}

/* ---- reader: the record stream ----
 *
 * Walks records laid end to end in memory. It knows where its bytes sit in
 * the file (for messages) and whether they were cut short, nothing more. */

struct record_stream {
	const uint8_t *base;   /* first byte of the records */
	uint64_t base_offset;  /* file offset of base */
	uint64_t pos, end;     /* relative to base */
	uint64_t declared_end; /* where the records should end; > end when truncated */
	int failure;	       /* sticky negative code after an error */
	char failure_message[sizeof(((struct rv_error *)0)->message)];
	uint8_t *bounce; /* aligned copy of a record that sits unaligned */
	size_t bounce_cap;
};

static int stream_fail(struct record_stream *s, struct rv_error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int stream_fail(struct record_stream *s, struct rv_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->failure_message, sizeof(s->failure_message), fmt, ap);
	va_end(ap);
	s->failure = -EINVAL;
	return rv_error_set(err, EINVAL, "%s", s->failure_message);
}

static int stream_next(struct record_stream *s, struct rv_perf_record *rec, struct rv_error *err)
{
	struct perf_event_header h;
	uint64_t left = s->end - s->pos, offset = s->base_offset + s->pos, payload_size = 0;
	const uint8_t *p = s->base + s->pos;
	unsigned int width;

	memset(rec, 0, sizeof(*rec));
	if (s->failure)
		return rv_error_set(err, -s->failure, "%s", s->failure_message);
	if (left == 0) {
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
			"bytes are in the data section",
			(unsigned long long)offset, (unsigned long long)left);
	memcpy(&h, p, sizeof(h));
	if (h.size < sizeof(h))
		return stream_fail(s, err,
				   "corrupt record at file offset %llu: its size is %u, less than "
				   "its own 8-byte header",
				   (unsigned long long)offset, h.size);
	if (h.size > left)
		return stream_fail(
			s, err,
			"record at file offset %llu (type %u) is %u bytes long, but only "
			"%llu bytes of the data section remain%s",
			(unsigned long long)offset, h.type, h.size, (unsigned long long)left,
			s->declared_end > s->end ? " (the file was truncated)"
						 : "; the file is corrupt");
	if (record_has_payload(h.type, &width)) {
		if (payload_size_field(p, h.size, width, &payload_size))
			return stream_fail(s, err,
					   "record at file offset %llu (type %u) is too short (%u "
					   "bytes) to hold the size of its data",
					   (unsigned long long)offset, h.type, h.size);
		if (payload_size > left - h.size)
			return stream_fail(
				s, err,
				"record at file offset %llu (type %u) carries %llu bytes of data, "
				"but only %llu bytes of the data section remain after it%s",
				(unsigned long long)offset, h.type,
				(unsigned long long)payload_size,
				(unsigned long long)(left - h.size),
				s->declared_end > s->end ? " (the file was truncated)"
							 : "; the file is corrupt");
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

/* ---- reader: the file ---- */

struct feature_location {
	uint64_t offset, size;
	bool present;
};

struct id_map_entry {
	uint64_t id;
	size_t attr_index;
};

struct rv_perf_reader {
	char *name;
	const uint8_t *data;
	size_t size;
	bool mapped;
	uint8_t *owned_data; /* a pipe's bytes, read into memory */
	bool pipe_mode;
	uint64_t feature_bits[RV_FEAT_MAX / 64];
	struct feature_location features[RV_FEAT_MAX];
	char *feature_strings[RV_FEAT_MAX];
	int cmdline_argc;
	char **cmdline_argv;
	struct rv_perf_attr *attrs;
	size_t nr_attrs;
	char **names;
	uint64_t *ids;
	struct id_map_entry *id_map;
	size_t nr_id_map;
	int sample_id_pos;  /* u64 index of the id in every sample, or -1 */
	int trailer_id_pos; /* u64 index of the id counted from the end, or -1 */
	bool any_sample_id_all;
	struct record_stream stream;
};

static bool section_in_file(const struct rv_perf_reader *r, uint64_t offset, uint64_t size)
{
	return offset <= r->size && size <= r->size - offset;
}

static int compare_id_map(const void *a, const void *b)
{
	const struct id_map_entry *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->attr_index < y->attr_index ? -1 : x->attr_index > y->attr_index;
}

static const struct rv_perf_attr *lookup_id(const struct rv_perf_reader *r, uint64_t id)
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

static int sample_id_pos_of(uint64_t type)
{
	int pos = 0;

	if (type & PERF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(type & PERF_SAMPLE_ID))
		return -1;
	pos += !!(type & PERF_SAMPLE_IP);
	pos += !!(type & PERF_SAMPLE_TID);
	pos += !!(type & PERF_SAMPLE_TIME);
	pos += !!(type & PERF_SAMPLE_ADDR);
	return pos;
}

static int trailer_id_pos_of(uint64_t type)
{
	int pos = 1;

	if (type & PERF_SAMPLE_IDENTIFIER)
		return 1;
	if (!(type & PERF_SAMPLE_ID))
		return -1;
	pos += !!(type & PERF_SAMPLE_CPU);
	pos += !!(type & PERF_SAMPLE_STREAM_ID);
	return pos;
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
		const struct feature_location *loc = &r->features[strings[i]];
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
	const struct feature_location *loc = &r->features[RV_FEAT_CMDLINE];
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
	const struct feature_location *loc = &r->features[RV_FEAT_EVENT_DESC];
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
			const struct rv_perf_attr *a = lookup_id(r, rv_load_u64(p + 8 * (size_t)k));

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

/* An attribute as the capture records it, with its ids. */
struct attr_source {
	const uint8_t *attr;
	uint32_t attr_bytes; /* as declared (0 read as PERF_ATTR_SIZE_VER0), validated */
	const uint8_t *ids;  /* nr_ids u64 values, not necessarily aligned */
	uint64_t nr_ids;
};

/* Normalises the attributes and indexes their ids; the sources were checked. */
static int build_attrs(struct rv_perf_reader *r, const struct attr_source *src, size_t nr,
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

	r->sample_id_pos = sample_id_pos_of(r->attrs[0].attr.sample_type);
	r->trailer_id_pos = trailer_id_pos_of(r->attrs[0].attr.sample_type);
	for (size_t i = 0; i < r->nr_attrs; i++) {
		uint64_t type = r->attrs[i].attr.sample_type;

		if (sample_id_pos_of(type) != r->sample_id_pos)
			r->sample_id_pos = -1;
		if (trailer_id_pos_of(type) != r->trailer_id_pos)
			r->trailer_id_pos = -1;
		if (r->attrs[i].attr.sample_id_all)
			r->any_sample_id_all = true;
	}
	return 0;
}

/* The attribute section of a file-mode perf.data. */
static int read_attrs(struct rv_perf_reader *r, const struct file_header *h, struct rv_error *err)
{
	uint64_t attr_bytes = h->attr_size - sizeof(struct file_section);
	struct attr_source *src;
	size_t nr;
	int ret;

	if (h->attr_size < PERF_ATTR_SIZE_VER0 + sizeof(struct file_section) ||
	    h->attr_size > MAX_ATTR_BYTES + sizeof(struct file_section) || h->attr_size % 8)
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
		struct file_section ids;
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
	ret = build_attrs(r, src, nr, err);
	free(src);
	return ret;
}

/* Locates the feature sections; a table or section outside the file only
 * loses that feature, as in perf. */
static void locate_features(struct rv_perf_reader *r, const struct file_header *h)
{
	uint64_t table = h->data.offset + h->data.size;
	size_t nr = 0, k = 0;

	memcpy(r->feature_bits, h->features, sizeof(r->feature_bits));
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++)
		nr += (size_t)feature_test(h->features, f);
	if (!nr)
		return;
	if (!section_in_file(r, table, nr * sizeof(struct file_section))) {
		rv_debug("%s: the feature table lies beyond the end of the file; features ignored",
			 r->name);
		return;
	}
	for (unsigned int f = 0; f < RV_FEAT_MAX; f++) {
		struct file_section s;

		if (!feature_test(h->features, f))
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

/* ---- reader: pipe mode ----
 *
 * `perf record -o -` writes a 16-byte header (magic, size 16) and then only
 * records: the attributes as HEADER_ATTR records, the features as
 * HEADER_FEATURE records (the same bodies as file mode's sections), event
 * names as EVENT_UPDATE records, then the recording. The whole stream is in
 * memory, so one scan at open finds the attributes and features wherever they
 * are; the walk then returns every record, these included, as perf counts
 * them. */

#define PIPE_HEADER_SIZE 16

/* HEADER_ATTR: the attribute (its own size field says how long), then ids. */
static int pipe_attr(struct rv_perf_reader *r, const uint8_t *p, uint16_t size, uint64_t offset,
		     struct attr_source *src, struct rv_error *err)
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
		const struct rv_perf_attr *a = lookup_id(r, names[i].id);
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

static int parse_pipe(struct rv_perf_reader *r, struct rv_error *err)
{
	struct attr_source *src = NULL;
	struct pipe_name *names = NULL;
	size_t nr_src = 0, src_cap = 0, nr_names = 0, names_cap = 0;
	uint64_t pos = PIPE_HEADER_SIZE;
	int ret = 0;

	r->pipe_mode = true;
	r->stream.base = r->data + PIPE_HEADER_SIZE;
	r->stream.base_offset = PIPE_HEADER_SIZE;
	r->stream.end = r->size - PIPE_HEADER_SIZE;
	r->stream.declared_end = r->stream.end;

	/* Stops quietly at the first record that does not fit: the walk reports
	 * it when it gets there, after the good records. */
	while (r->size - pos >= sizeof(struct perf_event_header)) {
		const uint8_t *p = r->data + pos;
		struct perf_event_header h;
		uint64_t payload = 0;
		unsigned int width;

		memcpy(&h, p, sizeof(h));
		if (h.size < sizeof(h) || h.size > r->size - pos)
			break;
		if (record_has_payload(h.type, &width) &&
		    (payload_size_field(p, h.size, width, &payload) ||
		     payload > r->size - pos - h.size))
			break;
		if (h.type == RECORD_HEADER_ATTR) {
			if (nr_src == src_cap) {
				size_t cap = src_cap ? src_cap * 2 : 8;
				struct attr_source *grown = realloc(src, cap * sizeof(*src));

				if (!grown) {
					ret = rv_error_set(err, ENOMEM,
							   "out of memory reading '%s'", r->name);
					break;
				}
				src = grown;
				src_cap = cap;
			}
			ret = pipe_attr(r, p, h.size, pos, &src[nr_src], err);
			if (ret)
				break;
			nr_src++;
		} else if (h.type == RECORD_HEADER_FEATURE && h.size >= 16) {
			uint64_t feature = rv_load_u64(p + 8);

			if (feature < RV_FEAT_MAX) {
				r->features[feature].offset = pos + 16;
				r->features[feature].size = h.size - 16u;
				r->features[feature].present = true;
				feature_set(r->feature_bits, (unsigned int)feature);
			}
		} else if (h.type == RECORD_EVENT_UPDATE && h.size > 24 &&
			   rv_load_u64(p + 8) == EVENT_UPDATE_NAME) {
			if (nr_names == names_cap) {
				size_t cap = names_cap ? names_cap * 2 : 8;
				struct pipe_name *grown = realloc(names, cap * sizeof(*names));

				if (!grown) {
					ret = rv_error_set(err, ENOMEM,
							   "out of memory reading '%s'", r->name);
					break;
				}
				names = grown;
				names_cap = cap;
			}
			names[nr_names].id = rv_load_u64(p + 16);
			names[nr_names].name = (const char *)p + 24;
			names[nr_names].max_len = h.size - 24u;
			nr_names++;
		}
		pos += h.size + payload;
	}
	if (!ret)
		ret = build_attrs(r, src, nr_src, err);
	if (!ret) {
		read_string_features(r);
		read_cmdline(r);
		read_event_names(r);
		apply_pipe_names(r, names, nr_names);
	}
	free(src);
	free(names);
	return ret;
}

static int parse_file(struct rv_perf_reader *r, struct rv_error *err)
{
	struct file_header h;
	uint64_t data_end;
	int ret;

	if (r->size < 16)
		return rv_error_set(err, EINVAL,
				    "'%s' is not a perf.data file: it is only %zu bytes long",
				    r->name, r->size);
	if (memcmp(r->data, PERF_MAGIC_SWAPPED, 8) == 0)
		return rv_error_set(err, ENOTSUP,
				    "'%s' was recorded on a machine of the other byte order, which "
				    "rearview does not read",
				    r->name);
	if (memcmp(r->data, PERF_MAGIC_V1, 8) == 0)
		return rv_error_set(err, ENOTSUP,
				    "'%s' uses perf's first file format (PERFFILE), which rearview "
				    "does not read",
				    r->name);
	if (memcmp(r->data, PERF_MAGIC, 8) != 0)
		return rv_error_set(
			err, EINVAL,
			"'%s' is not a perf.data file (it does not start with PERFILE2)%s", r->name,
			memcmp(r->data, "\0\0\0\0\0\0\0\0", 8) == 0
				? "; was the recording stopped before it finished?"
				: "");
	memset(&h, 0, sizeof(h));
	memcpy(&h, r->data, r->size < sizeof(h) ? r->size : sizeof(h));
	if (h.size == PIPE_HEADER_SIZE)
		return parse_pipe(r, err);
	if (h.size != sizeof(h) && h.size != FILE_HEADER_NO_FEATURES_SIZE)
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

	read_string_features(r);
	read_cmdline(r);
	read_event_names(r);
	return 0;
}

static int reader_new(struct rv_perf_reader **out, const char *name, struct rv_error *err)
{
	struct rv_perf_reader *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", name);
	r->name = strdup(name);
	if (!r->name) {
		free(r);
		return rv_error_set(err, ENOMEM, "out of memory opening '%s'", name);
	}
	r->sample_id_pos = -1;
	r->trailer_id_pos = -1;
	*out = r;
	return 0;
}

int rv_perf_reader_open_buffer(struct rv_perf_reader **out, const void *data, size_t size,
			       const char *name, struct rv_error *err)
{
	struct rv_perf_reader *r;
	int ret = reader_new(&r, name ? name : "(buffer)", err);

	*out = NULL;
	if (ret)
		return ret;
	r->data = data;
	r->size = size;
	ret = parse_file(r, err);
	if (ret) {
		rv_perf_reader_free(r);
		return ret;
	}
	*out = r;
	return 0;
}

/* Reads what a pipe (or FIFO, or terminal) gives until its end. */
static int read_stream(int fd, const char *name, uint8_t **data, size_t *size, struct rv_error *err)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t grown_cap = cap ? cap * 2 : 1 << 20;
			uint8_t *grown;

			if (grown_cap < cap || !(grown = realloc(buf, grown_cap))) {
				free(buf);
				return rv_error_set(err, ENOMEM,
						    "out of memory reading '%s' (%zu bytes so far)",
						    name, len);
			}
			buf = grown;
			cap = grown_cap;
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
	struct rv_perf_reader *r;
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
		/* perf's directory layout (perf record --kcore): DIR/data */
		close(fd);
		if (asprintf(&dir_data, "%s/data", path) < 0)
			return rv_error_set(err, ENOMEM, "out of memory opening '%s'", path);
		fd = open(dir_data, O_RDONLY | O_CLOEXEC);
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
	ret = reader_new(&r, name, err);
	if (ret) {
		if (map)
			munmap(map, stream_size);
		free(stream);
		goto out_close;
	}
	if (map) {
		r->data = map;
		r->mapped = true;
	} else {
		r->data = stream;
		r->owned_data = stream;
	}
	r->size = stream_size;
	ret = parse_file(r, err);
	if (ret) {
		rv_perf_reader_free(r);
		goto out_close;
	}
	*out = r;
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
	const struct rv_perf_attr *a = lookup_id(r, id);

	if (!a && r->nr_attrs == 1)
		a = &r->attrs[0];
	return a;
}

/* ---- reader: samples ---- */

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
