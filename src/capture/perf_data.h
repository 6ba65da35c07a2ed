/* perf_data.h: perf.data, perf's own file format, written and read here and
 * nowhere else (the layout: linux tools/perf/Documentation/
 * perf.data-file-format.txt).
 *
 * What rearview records is kept as perf.data so that `perf report`, `perf
 * script` and `rearview decode` all open it. The writer streams records into
 * the data section and writes the attributes and header features when it is
 * finished, or, flushing as it grows (rv_perf_writer_flush_as_it_grows), at
 * every flush too, so that a recorder killed at any instant leaves a valid
 * perf.data holding what it had flushed (perf_data_write.c says how). Every
 * capture is created 0600: it holds what the target had in memory. The reader walks the data
 * section record by record with every length checked, and parses samples according to their
 * attribute.
 *
 * Designed to grow: records carrying a payload after their header (such as
 * PERF_RECORD_AUXTRACE) go through rv_perf_writer_write_payload and come back
 * from the reader with the payload attached. The reader reads both of perf's
 * layouts: file mode (`perf record -o file`) and pipe mode (`perf record -o -`,
 * where attributes and features travel as records in the stream), from a file
 * or from standard input. Intel PT's records are built and parsed in
 * auxtrace.h, sideband records in synth.h.
 *
 * This module is not: a recorder or a decoder. It knows the file, not what
 * the records mean for a trace.
 */
#ifndef RV_CAPTURE_PERF_DATA_H
#define RV_CAPTURE_PERF_DATA_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Header feature bits (perf's HEADER_* numbering). */
enum rv_perf_feature {
	RV_FEAT_TRACING_DATA = 1,
	RV_FEAT_BUILD_ID = 2,
	RV_FEAT_HOSTNAME = 3,
	RV_FEAT_OSRELEASE = 4,
	RV_FEAT_VERSION = 5,
	RV_FEAT_ARCH = 6,
	RV_FEAT_NRCPUS = 7,
	RV_FEAT_CPUDESC = 8,
	RV_FEAT_CPUID = 9,
	RV_FEAT_TOTAL_MEM = 10,
	RV_FEAT_CMDLINE = 11,
	RV_FEAT_EVENT_DESC = 12,
	RV_FEAT_CPU_TOPOLOGY = 13,
	RV_FEAT_NUMA_TOPOLOGY = 14,
	RV_FEAT_BRANCH_STACK = 15,
	RV_FEAT_PMU_MAPPINGS = 16,
	RV_FEAT_GROUP_DESC = 17,
	RV_FEAT_AUXTRACE = 18,
	RV_FEAT_STAT = 19,
	RV_FEAT_CACHE = 20,
	RV_FEAT_SAMPLE_TIME = 21,
	RV_FEAT_MEM_TOPOLOGY = 22,
	RV_FEAT_CLOCKID = 23,
	RV_FEAT_DIR_FORMAT = 24,
	RV_FEAT_BPF_PROG_INFO = 25,
	RV_FEAT_BPF_BTF = 26,
	RV_FEAT_COMPRESSED = 27,
	RV_FEAT_CPU_PMU_CAPS = 28,
	RV_FEAT_CLOCK_DATA = 29,
	RV_FEAT_HYBRID_TOPOLOGY = 30,
	RV_FEAT_PMU_CAPS = 31,
	/* rearview's own, in the last bit (perf reads only the features it
	 * knows, and finds theirs first in the table): a capture flushed as it
	 * grows and not finished. Three u64: when it was last flushed
	 * (CLOCK_REALTIME, ns), how many flushes, the data section's bytes. */
	RV_FEAT_REARVIEW_FLUSH = 255,
	RV_FEAT_MAX = 256,
};

/* Record types perf defines in user space (tools/perf/util/event.h), after
 * the kernel's PERF_RECORD_*. */
enum rv_perf_user_record {
	RV_PERF_RECORD_HEADER_ATTR = 64,
	RV_PERF_RECORD_HEADER_EVENT_TYPE = 65,
	RV_PERF_RECORD_HEADER_TRACING_DATA = 66,
	RV_PERF_RECORD_HEADER_BUILD_ID = 67,
	RV_PERF_RECORD_FINISHED_ROUND = 68,
	RV_PERF_RECORD_ID_INDEX = 69,
	RV_PERF_RECORD_AUXTRACE_INFO = 70,
	RV_PERF_RECORD_AUXTRACE = 71,
	RV_PERF_RECORD_AUXTRACE_ERROR = 72,
	RV_PERF_RECORD_THREAD_MAP = 73,
	RV_PERF_RECORD_CPU_MAP = 74,
	RV_PERF_RECORD_STAT_CONFIG = 75,
	RV_PERF_RECORD_STAT = 76,
	RV_PERF_RECORD_STAT_ROUND = 77,
	RV_PERF_RECORD_EVENT_UPDATE = 78,
	RV_PERF_RECORD_TIME_CONV = 79,
	RV_PERF_RECORD_HEADER_FEATURE = 80,
	RV_PERF_RECORD_COMPRESSED = 81,
	RV_PERF_RECORD_FINISHED_INIT = 82,
};

/* One entry of HEADER_PMU_MAPPINGS: a PMU's name and its perf_event_attr.type. */
struct rv_perf_pmu_mapping {
	const char *name;
	uint32_t type;
};

/* What the writer puts in the header features. Strings may be NULL (the
 * writer then fills what it can find out itself: uname, /proc/cpuinfo,
 * sysconf), except argv, which is the recording's own command line. A
 * capture made for another machine (softpt claims an Intel CPU) sets cpuid,
 * cpu_desc, the CPU counts and the PMU mappings of that machine. */
struct rv_perf_meta {
	const char *hostname;
	const char *os_release;
	const char *perf_version; /* HEADER_VERSION; default "rearview <version>" */
	const char *arch;
	const char *cpu_desc;
	const char *cpuid; /* perf's form, e.g. "GenuineIntel,6,78,3" */
	int argc;
	const char *const *argv;
	int clockid; /* -1: none recorded (HEADER_CLOCKID omitted) */
	uint64_t sample_time_first_ns, sample_time_last_ns; /* 0,0: omitted */
	/* HEADER_NRCPUS; 0: this machine's. perf refuses records of a CPU at or
	 * above nr_cpus_avail. */
	uint32_t nr_cpus_avail, nr_cpus_online;
	/* HEADER_PMU_MAPPINGS; NULL: this machine's (sysfs). Either way an
	 * Intel PT capture's "intel_pt" entry is added with the type its
	 * AUXTRACE_INFO names, replacing any entry of that type. */
	const struct rv_perf_pmu_mapping *pmu_mappings;
	size_t nr_pmu_mappings;
	/* HEADER_TRACING_DATA as perf writes it (the tracepoints' format files,
	 * which perf script needs to read their samples: extra_events.h makes
	 * it), copied as it is; NULL: omitted. */
	const void *tracing_data;
	size_t tracing_data_size;
};

struct rv_perf_writer;

/* Creates (truncates) the file at path, mode 0600 whatever the umask, an
 * existing file's mode included (a capture holds the target's raw stack and
 * data); a symbolic link at path is refused (util/private_file.h). */
int rv_perf_writer_open(struct rv_perf_writer **out, const char *path, struct rv_error *err);

/* Flushing as it grows, by default: a flush when RV_PERF_FLUSH_BYTES of
 * records are buffered, and at rv_perf_writer_flush_if_due once
 * RV_PERF_FLUSH_INTERVAL_NS have passed since the last. */
#define RV_PERF_FLUSH_BYTES	  (4ull << 20)
#define RV_PERF_FLUSH_INTERVAL_NS 1000000000ull

/* From now on records are written to the file only at a flush, and each
 * flush leaves a valid perf.data (the records so far, their attributes,
 * the features of meta, and RV_FEAT_REARVIEW_FLUSH), which a SIGKILL at
 * any instant cannot make invalid: it then holds the records up to the
 * last flush that completed, or up to the one before it. A flush comes when
 * chunk_bytes (0: RV_PERF_FLUSH_BYTES) are buffered, or on request. meta is
 * copied (finish may be given another; NULL there: this one). Only before
 * the first record; attributes may be added at any time, and come into the
 * file at the next flush. */
int rv_perf_writer_flush_as_it_grows(struct rv_perf_writer *w, const struct rv_perf_meta *meta,
				     uint64_t chunk_bytes, uint64_t interval_ns,
				     struct rv_error *err);

/* A flush now (nothing happens without attributes, with nothing new, or
 * for a writer not flushing as it grows). */
int rv_perf_writer_flush(struct rv_perf_writer *w, struct rv_error *err);

/* A flush when interval_ns (0: RV_PERF_FLUSH_INTERVAL_NS) have passed
 * since the last; a no-op for a writer not flushing. The recorders call it
 * after every drain. */
int rv_perf_writer_flush_if_due(struct rv_perf_writer *w, struct rv_error *err);

/* Flushes done so far (finish's not counted). */
uint64_t rv_perf_writer_flushes(const struct rv_perf_writer *w);

/* Declares an event: its attribute as opened, a name for HEADER_EVENT_DESC
 * ("cpu-clock"), and the kernel's ids for it (PERF_EVENT_IOC_ID) so that
 * samples carrying PERF_SAMPLE_ID/IDENTIFIER map back to it. May be called at
 * any time before rv_perf_writer_finish. */
int rv_perf_writer_add_attr(struct rv_perf_writer *w, const struct perf_event_attr *attr,
			    const char *name, const uint64_t *ids, size_t nr_ids,
			    struct rv_error *err);

/* Appends one record (record->size bytes, a multiple of 8) to the data section. */
int rv_perf_writer_write(struct rv_perf_writer *w, const struct perf_event_header *record,
			 struct rv_error *err);

/* Appends a record followed by a payload of `size` bytes that is not counted in
 * record->size (PERF_RECORD_AUXTRACE). */
int rv_perf_writer_write_payload(struct rv_perf_writer *w, const struct perf_event_header *record,
				 const void *payload, uint64_t size, struct rv_error *err);

/* Writes attributes, ids and features, then the final header, and cuts the
 * file after them. Without flushing the file is a valid perf.data only after
 * this returns 0. */
int rv_perf_writer_finish(struct rv_perf_writer *w, const struct rv_perf_meta *meta,
			  struct rv_error *err);

/* The time range of what the data section holds (HEADER_SAMPLE_TIME), as
 * the writer's caller knows it, for when the meta given to finish has none:
 * a reader learns the capture's first time without a pass over it. */
void rv_perf_writer_set_time_range(struct rv_perf_writer *w, uint64_t first, uint64_t last);

/* Bytes in the data section so far. */
uint64_t rv_perf_writer_data_size(const struct rv_perf_writer *w);

/* Closes the file (removing it if it was not finished, flushed or not: only
 * a recorder killed leaves a flushed capture unfinished) and frees the
 * writer. */
void rv_perf_writer_free(struct rv_perf_writer *w);

/* ---- reading ---- */

struct rv_perf_attr {
	struct perf_event_attr attr; /* normalised to sizeof(struct perf_event_attr) */
	const char *name;	     /* from HEADER_EVENT_DESC, or NULL */
	const uint64_t *ids;
	size_t nr_ids;
};

/* A record from the data section (file mode) or the stream (pipe mode, where
 * perf's HEADER_ATTR, HEADER_FEATURE, EVENT_UPDATE, ... records come too).
 * `header` points at record->size bytes, 8-byte aligned, that stay valid until
 * the next call to rv_perf_reader_next; `file_offset` counts from the start of
 * the file or stream (a pipe's 16-byte header included, which perf's own
 * "offset@pipe" leaves out); `payload` is set for records that carry one
 * (PERF_RECORD_AUXTRACE, HEADER_TRACING_DATA), else NULL with size 0. */
struct rv_perf_record {
	const struct perf_event_header *header;
	uint64_t file_offset;
	const void *payload;
	uint64_t payload_size;
};

/* A PERF_RECORD_SAMPLE split into its fields, as the attribute's sample_type
 * says they are laid out. Pointers point into the record. Absent fields are 0. */
struct rv_perf_sample {
	const struct rv_perf_attr *attr;
	uint64_t sample_type;
	uint64_t id, ip, addr, time, stream_id, period;
	uint32_t pid, tid, cpu, res;
	uint64_t nr_callchain;
	const uint64_t *callchain; /* as the kernel wrote it, PERF_CONTEXT_* markers included */
	uint32_t raw_size;
	const void *raw;
	uint64_t regs_user_abi;	   /* PERF_SAMPLE_REGS_ABI_*; 0 means no registers */
	uint64_t regs_user_mask;   /* attr.sample_regs_user */
	const uint64_t *regs_user; /* popcount(mask) values, in bit order */
	uint64_t stack_user_size;  /* bytes valid at stack_user (dyn_size) */
	const uint8_t *stack_user;
	uint64_t aux_size; /* PERF_SAMPLE_AUX */
	const void *aux;
};

/* The sample_id trailer of a non-sample record (attr.sample_id_all). */
struct rv_perf_sample_id {
	uint32_t pid, tid, cpu;
	uint64_t time, id, stream_id;
	bool valid;
};

struct rv_perf_reader;

/* Opens a perf.data in file mode or pipe mode, from a file, a FIFO, a
 * capture directory (rearview's DIR/perf.data, else perf's DIR/data) or, for
 * "-", standard input, and validates
 * its header, attributes and section bounds. Files are mapped; a pipe is read
 * whole into memory first. In pipe mode the attributes, event names and
 * features are those of the stream's HEADER_ATTR, EVENT_UPDATE and
 * HEADER_FEATURE records (up to the first corrupt record, which
 * rv_perf_reader_next then reports in its turn). */
int rv_perf_reader_open(struct rv_perf_reader **out, const char *path, struct rv_error *err);

/* True when the capture is in pipe mode. */
bool rv_perf_reader_is_pipe(const struct rv_perf_reader *r);

/* 1 and *rec set: a record; 0: end of data; negative: a truncated or corrupt
 * record, described in err (the records before it were good). */
int rv_perf_reader_next(struct rv_perf_reader *r, struct rv_perf_record *rec, struct rv_error *err);

/* What was opened, for messages: the file (DIR/perf.data for a directory)
 * or "standard input". */
const char *rv_perf_reader_name(const struct rv_perf_reader *r);

/* Back to the first record, for a second pass (the records and their
 * errors come again, as the first time). */
void rv_perf_reader_rewind(struct rv_perf_reader *r);

size_t rv_perf_reader_nr_attrs(const struct rv_perf_reader *r);
const struct rv_perf_attr *rv_perf_reader_attr(const struct rv_perf_reader *r, size_t index);

/* The attribute a record belongs to: by its id when samples carry one, else the
 * only attribute; NULL if it cannot be told. */
const struct rv_perf_attr *rv_perf_reader_attr_for_id(const struct rv_perf_reader *r, uint64_t id);

int rv_perf_reader_parse_sample(const struct rv_perf_reader *r,
				const struct perf_event_header *record, struct rv_perf_sample *out,
				struct rv_error *err);

/* Parses the sample_id trailer of MMAP2, COMM, FORK, EXIT, LOST, ... records;
 * out->valid is false when the attributes have no sample_id_all. A record
 * whose id is 0 (perf's synthesized sideband) is taken for the first event's,
 * as perf takes it. */
int rv_perf_reader_parse_sample_id(const struct rv_perf_reader *r,
				   const struct perf_event_header *record,
				   struct rv_perf_sample_id *out, struct rv_error *err);

bool rv_perf_reader_has_feature(const struct rv_perf_reader *r, enum rv_perf_feature feature);

/* A capture flushed as it grows whose recorder never finished it (killed,
 * or the machine stopped): when it was last flushed, how many times, and
 * the data it holds. Its records then end with an error saying the capture
 * was cut and when (an error, so that a trace made of it says so), after
 * the last record flushed. */
struct rv_perf_flush_info {
	uint64_t realtime_ns; /* CLOCK_REALTIME of the last flush */
	uint64_t flushes;
	uint64_t data_bytes;
};
bool rv_perf_reader_flush_info(const struct rv_perf_reader *r, struct rv_perf_flush_info *out);

/* HEADER_HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID as a string, or
 * NULL when absent. Owned by the reader. */
const char *rv_perf_reader_feature_string(const struct rv_perf_reader *r,
					  enum rv_perf_feature feature);

/* HEADER_CMDLINE: argc and argv owned by the reader; 0 when absent. */
int rv_perf_reader_cmdline(const struct rv_perf_reader *r, const char *const **argv);

/* Raw bytes of a feature section (for the features without an accessor).
 * Sections this writer wrote start 8-byte aligned; perf's need not (in pipe
 * mode they often are not), so copy values out rather than load them in place. */
const void *rv_perf_reader_feature_data(const struct rv_perf_reader *r,
					enum rv_perf_feature feature, uint64_t *size);

void rv_perf_reader_free(struct rv_perf_reader *r);

#endif
