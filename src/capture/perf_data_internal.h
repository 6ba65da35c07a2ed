/* perf_data_internal.h: what the files of the perf.data module share, and
 * entry points that are not part of its public contract, for its own tests
 * and its own other files (auxtrace.c).
 *
 * The module's files: perf_data_write.c (the writer and its header
 * features), build_id.c (the files a capture maps and their build ids, for
 * HEADER_BUILD_ID), perf_data_read.c (the reader: the file, its attributes
 * and features, the record stream), perf_data_pipe.c (pipe mode's stream
 * scanned for attributes and features) and perf_data_sample.c (samples and
 * sample_id trailers parsed by their attribute).
 *
 * Opening from memory lets the robustness tests hand the reader a buffer of
 * exactly the file's length, so that AddressSanitizer sees any read past its
 * end (a read past the end of an mmap'd file inside its last page is silent).
 */
#ifndef RV_CAPTURE_PERF_DATA_INTERNAL_H
#define RV_CAPTURE_PERF_DATA_INTERNAL_H

#include <string.h>

#include "capture/bytes.h"
#include "capture/perf_data.h"

/* Unaligned little-endian loads from records (perf.data is read on the
 * machine that wrote it or one of the same byte order). */
static inline uint64_t rv_load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t rv_load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Like rv_perf_reader_open, over `size` bytes at `data`, which the caller keeps
 * valid and unchanged until rv_perf_reader_free. `name` is used in messages. */
int rv_perf_reader_open_buffer(struct rv_perf_reader **out, const void *data, size_t size,
			       const char *name, struct rv_error *err);

/* Calls hook with every write the writer makes to its file, in order (the
 * tests replay a flush's writes cut at every byte). */
void pd_writer_watch_writes(struct rv_perf_writer *w,
			    void (*hook)(void *ctx, uint64_t offset, const void *data, size_t size),
			    void *ctx);

/* Whether an AUXTRACE_INFO record has been written: AUXTRACE buffers may only
 * follow one (auxtrace.c). */
bool rv_perf_writer_has_auxtrace_info(const struct rv_perf_writer *w);

/* ---- the file layout (perf.data-file-format.txt) ---- */

#define PD_MAGIC	 "PERFILE2"
#define PD_MAGIC_SWAPPED "2ELIFREP"
#define PD_MAGIC_V1	 "PERFFILE"
#define PD_NAME_ALIGN	 64 /* perf_header_string and build id names are padded to it */

/* Pipe mode's header: the magic and a size of 16, then only records. */
#define PD_PIPE_HEADER_SIZE 16

struct pd_file_section {
	uint64_t offset;
	uint64_t size;
};

struct pd_file_header {
	char magic[8];
	uint64_t size;
	uint64_t attr_size;
	struct pd_file_section attrs;
	struct pd_file_section data;
	struct pd_file_section event_types;
	uint64_t features[RV_FEAT_MAX / 64];
};

_Static_assert(sizeof(struct pd_file_header) == 104, "perf_file_header is 104 bytes");

/* Headers of perf before the feature bitmap existed end here. */
#define PD_FILE_HEADER_NO_FEATURES_SIZE offsetof(struct pd_file_header, features)

struct pd_file_attr {
	struct perf_event_attr attr;
	struct pd_file_section ids;
};

static inline uint64_t pd_align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) / alignment * alignment;
}

static inline int pd_feature_test(const uint64_t *bitmap, unsigned int feature)
{
	return (bitmap[feature / 64] >> (feature % 64)) & 1;
}

static inline void pd_feature_set(uint64_t *bitmap, unsigned int feature)
{
	bitmap[feature / 64] |= 1ULL << (feature % 64);
}

/* The records whose header is followed by data that header.size does not
 * count: the size of that data (padding included) is a field at byte 8 of the
 * record, `*width` bytes wide. */
static inline bool pd_record_has_payload(uint32_t type, unsigned int *width)
{
	if (type == RV_PERF_RECORD_AUXTRACE) {
		*width = 8;
		return true;
	}
	if (type == RV_PERF_RECORD_HEADER_TRACING_DATA) {
		*width = 4;
		return true;
	}
	return false;
}

/* The payload size a record declares, or -1 when it is too short to say. */
static inline int pd_payload_size_field(const uint8_t *record, uint16_t record_size,
					unsigned int width, uint64_t *size)
{
	if (record_size < 8 + width)
		return -1;
	*size = width == 8 ? rv_load_u64(record + 8) : rv_load_u32(record + 8);
	return 0;
}

/* ---- build ids (build_id.c), for the writer ---- */

/* The files that MMAP and MMAP2 records named, each looked up once. */
struct pd_build_id_file;
struct pd_build_ids {
	struct pd_build_id_file *files;
	size_t nr, cap;
	uint32_t *slots; /* open addressing: index + 1, 0 when empty */
	size_t nr_slots;
};

/* Notes the file an MMAP or MMAP2 record names, with its build id. Looked up
 * once per file, when first mapped (the file may be gone by the end of the
 * recording). A name that cannot be looked up is skipped without an error:
 * build ids only help perf find the right binary. */
void pd_build_ids_note_mapping(struct pd_build_ids *ids, const struct perf_event_header *record);

/* HEADER_BUILD_ID's body: the files with a build id, the kernel first;
 * nothing when there are none. */
void pd_build_ids_put_feature(const struct pd_build_ids *ids, struct rv_bytes *body);

/* Frees the table, which a zeroed struct pd_build_ids starts as. */
void pd_build_ids_destroy(struct pd_build_ids *ids);

/* ---- the reader (perf_data_read.c, perf_data_pipe.c, perf_data_sample.c) ---- */

/* Records laid end to end in memory. The stream knows where its bytes sit in
 * the file (for messages) and whether they were cut short, nothing more. */
struct pd_stream {
	const uint8_t *base;   /* first byte of the records */
	uint64_t base_offset;  /* file offset of base */
	uint64_t pos, end;     /* relative to base */
	uint64_t declared_end; /* where the records should end; > end when truncated */
	bool open_ended;       /* pipe mode: no end is declared, the stream's is the end */
	/* a flushed capture never finished: why its records end, as the error
	 * at their end; empty otherwise */
	char cut[sizeof(((struct rv_error *)0)->message)];
	int failure; /* sticky negative code after an error */
	char failure_message[sizeof(((struct rv_error *)0)->message)];
	uint8_t *bounce; /* aligned copy of a record that sits unaligned */
	size_t bounce_cap;
};

struct pd_feature_location {
	uint64_t offset, size;
	bool present;
};

struct pd_id_map_entry {
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
	struct pd_feature_location features[RV_FEAT_MAX];
	char *feature_strings[RV_FEAT_MAX];
	int cmdline_argc;
	char **cmdline_argv;
	struct rv_perf_attr *attrs;
	size_t nr_attrs;
	char **names;
	uint64_t *ids;
	struct pd_id_map_entry *id_map;
	size_t nr_id_map;
	int sample_id_pos;  /* u64 index of the id in every sample, or -1 */
	int trailer_id_pos; /* u64 index of the id counted from the end, or -1 */
	bool any_sample_id_all;
	struct pd_stream stream;
};

/* An attribute as the capture records it, with its ids. */
struct pd_attr_source {
	const uint8_t *attr;
	uint32_t attr_bytes; /* as declared (0 read as PERF_ATTR_SIZE_VER0), validated */
	const uint8_t *ids;  /* nr_ids u64 values, not necessarily aligned */
	uint64_t nr_ids;
};

/* Normalises the attributes and indexes their ids; the sources were checked
 * (perf_data_read.c). */
int pd_reader_build_attrs(struct rv_perf_reader *r, const struct pd_attr_source *src, size_t nr,
			  struct rv_error *err);

/* The features with an accessor (strings, the command line, event names),
 * read from the located sections; a malformed one is left out
 * (perf_data_read.c). */
void pd_reader_read_features(struct rv_perf_reader *r);

/* The attribute of an id, or NULL (perf_data_read.c). */
const struct rv_perf_attr *pd_reader_lookup_id(const struct rv_perf_reader *r, uint64_t id);

/* Pipe mode, after the 16-byte header: sets up the stream and collects the
 * attributes, features and event names (perf_data_pipe.c). */
int pd_reader_parse_pipe(struct rv_perf_reader *r, struct rv_error *err);

/* Where the id sits in samples and in sample_id trailers, when every
 * attribute puts it in the same place, and whether any has sample_id_all
 * (perf_data_sample.c). */
void pd_reader_locate_ids(struct rv_perf_reader *r);

#endif
