/* ptrepeat.c: a large Intel PT capture made from a small one, for the decode
 * benchmarks (bench/run).
 *
 *     ptrepeat SRC_DIR DST_DIR K
 *
 * reads SRC_DIR/perf.data, a softpt capture of a single-threaded program
 * (per-thread, one AUXTRACE buffer, a whole trace rather than a snapshot), and
 * writes DST_DIR/perf.data, in which the program seems to have run K times in a
 * row: the AUXTRACE payload is the PT stream repeated K times, each copy's TSC
 * packets moved later (ptshift.h), and every other record copied, except that
 * the records of the run's end (timed after the stream's last TSC packet: the
 * EXIT and AUX records) move after the last copy. DST_DIR/vdso.so is copied,
 * so that decoders find the vdso's code as in the source.
 *
 * What the copies share is what the first one set up: the process's COMM and
 * mappings appear once, before copy 0, and stay valid since each copy is the
 * same run at the same addresses. `perf script --itrace=cr` decodes the result
 * to K times the calls and returns of the original.
 *
 * Not here: multi-threaded captures (the threads' sideband would have to be
 * repeated too), snapshots, pipe-mode perf.data, or changing any packet
 * besides TSC.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "ptshift.h"
#include "util/error.h"

/* The pause left between the end of one copy and the start of the next
 * (before rounding the period up to whole CTC wraps). */
#define GAP_NS 1000000ULL

#define SAMPLE_ID_TRAILER_TYPES                                                                    \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |             \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

/* PERF_RECORD_FORK and EXIT: pid, ppid, tid, ptid (u32 each), then time. */
#define TASK_TIME_OFFSET 24
/* PERF_RECORD_AUX: aux_offset, aux_size, flags (u64 each). */
#define AUX_OFFSET_OFFSET 8
#define AUX_SIZE_OFFSET	  16

enum { RECORD_MAX_BYTES = 1 << 16 };

struct repeat {
	const char *src_dir, *dst_dir;
	unsigned copies;
	struct rv_error *err;

	/* What the first pass found in the source. */
	uint8_t *trace; /* the one AUXTRACE payload, copied */
	size_t trace_size;
	size_t nr_auxtrace, nr_aux;
	bool aux_in_parts; /* an AUX record not at offset 0 */
	struct rv_perf_time_conv time_conv;
	bool have_time_conv;
	struct rv_intel_pt_info info;
	bool have_info;
	unsigned mtc_period;
	uint64_t last_record_time; /* perf time of the latest timed record */
	size_t nr_records;

	/* What the second pass writes. */
	struct ptshift_scan scan;
	uint64_t period;      /* TSC ticks between copies */
	uint8_t *repeated;    /* copies * trace_size bytes */
	uint64_t moved_after; /* records timed after this (perf time) move */
	uint64_t shift_ns;    /* by this much */
	size_t nr_moved;
	uint64_t record[RECORD_MAX_BYTES / 8]; /* the record being patched */
};

static uint64_t load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void store_u64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static uint32_t load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int open_source(struct repeat *rp, struct rv_perf_reader **r)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/perf.data", rp->src_dir) >= (int)sizeof(path))
		return rv_error_set(rp->err, ENAMETOOLONG, "the path '%s' is too long",
				    rp->src_dir);
	int rc = rv_perf_reader_open(r, path, rp->err);
	if (rc)
		return rc;
	if (rv_perf_reader_is_pipe(*r))
		return rv_error_set(rp->err, ENOTSUP,
				    "'%s' is a pipe-mode perf.data; ptrepeat reads file mode "
				    "(convert it with `perf inject -i - -o FILE`)",
				    path);
	return 0;
}

/* The attribute a record's sample_id trailer (or a sample) belongs to. */
static const struct rv_perf_attr *attr_of(const struct rv_perf_reader *r, uint64_t id)
{
	const struct rv_perf_attr *a = rv_perf_reader_attr_for_id(r, id);

	if (!a && rv_perf_reader_nr_attrs(r) > 0)
		a = rv_perf_reader_attr(r, 0); /* perf's synthesized sideband has id 0 */
	return a;
}

/* Where the time of a record is, and its value: the sample's TIME field or the
 * sample_id trailer's. Returns 0 with *offset = 0 when the record has none. */
static int record_time(struct repeat *rp, const struct rv_perf_reader *r,
		       const struct perf_event_header *h, size_t *offset, uint64_t *time)
{
	*offset = 0;
	*time = 0;
	if (h->type >= RV_PERF_RECORD_HEADER_ATTR)
		return 0; /* perf's own records carry no sample_id */
	if (h->type == PERF_RECORD_SAMPLE) {
		struct rv_perf_sample s;
		int rc = rv_perf_reader_parse_sample(r, h, &s, rp->err);

		if (rc)
			return rc;
		if (!(s.sample_type & PERF_SAMPLE_TIME))
			return 0;
		/* IDENTIFIER, IP, TID come before TIME (perf_event_open(2)). */
		*offset = sizeof(*h) + 8 * !!(s.sample_type & PERF_SAMPLE_IDENTIFIER) +
			  8 * !!(s.sample_type & PERF_SAMPLE_IP) +
			  8 * !!(s.sample_type & PERF_SAMPLE_TID);
		*time = s.time;
	} else {
		struct rv_perf_sample_id sid;
		int rc = rv_perf_reader_parse_sample_id(r, h, &sid, rp->err);

		if (rc)
			return rc;
		const struct rv_perf_attr *a = sid.valid ? attr_of(r, sid.id) : NULL;
		if (!a || !(a->attr.sample_type & PERF_SAMPLE_TIME))
			return 0;
		uint64_t type = a->attr.sample_type;
		size_t trailer = 8 * (size_t)__builtin_popcountll(type & SAMPLE_ID_TRAILER_TYPES);

		*offset = h->size - trailer + 8 * !!(type & PERF_SAMPLE_TID);
		*time = sid.time;
	}
	if (*offset + 8 > h->size || load_u64((const uint8_t *)h + *offset) != *time)
		return rv_error_set(rp->err, EINVAL,
				    "cannot find the time of a record of type %u (%u bytes) in "
				    "'%s'; its attribute's sample_type does not describe it",
				    h->type, h->size, rp->src_dir);
	return 0;
}

static int note_auxtrace(struct repeat *rp, const struct rv_perf_record *rec)
{
	struct rv_perf_auxtrace a;
	int rc = rv_perf_auxtrace_parse(rec->header, &a, rp->err);

	if (rc)
		return rc;
	if (++rp->nr_auxtrace > 1)
		return 0; /* refused once all are counted */
	if (rec->payload_size != a.size || a.size == 0 || a.size > SIZE_MAX / rp->copies)
		return rv_error_set(rp->err, EINVAL,
				    "the AUXTRACE buffer of '%s' holds %llu bytes where its record "
				    "says %llu; the capture is damaged or too large to repeat "
				    "%u times",
				    rp->src_dir, (unsigned long long)rec->payload_size,
				    (unsigned long long)a.size, rp->copies);
	rp->trace = malloc(a.size);
	if (!rp->trace)
		return rv_error_set(rp->err, ENOMEM, "out of memory for %llu bytes of PT",
				    (unsigned long long)a.size);
	memcpy(rp->trace, rec->payload, a.size);
	rp->trace_size = a.size;
	return 0;
}

static int note_aux(struct repeat *rp, const struct perf_event_header *h)
{
	struct rv_perf_aux aux;
	int rc = rv_perf_aux_parse(h, &aux, rp->err);

	if (rc)
		return rc;
	rp->nr_aux++;
	rp->aux_in_parts |= aux.aux_offset != 0;
	return 0;
}

static int note_info(struct repeat *rp, const struct perf_event_header *h)
{
	int rc = rv_intel_pt_info_parse(h, &rp->info, rp->err);

	if (rc)
		return rc;
	if (rp->info.snapshot_mode)
		return rv_error_set(rp->err, ENOTSUP,
				    "'%s' is a snapshot capture, whose trace starts mid-stream; "
				    "ptrepeat repeats whole traces only",
				    rp->src_dir);
	rp->have_info = true;
	return 0;
}

/* Pass 1: the trace, the time conversion and the latest record time. */
static int read_source(struct repeat *rp)
{
	struct rv_perf_reader *r = NULL;
	struct rv_perf_record rec;
	int rc = open_source(rp, &r);

	while (!rc && (rc = rv_perf_reader_next(r, &rec, rp->err)) == 1) {
		const struct perf_event_header *h = rec.header;
		size_t offset;
		uint64_t time;

		rp->nr_records++;
		rc = record_time(rp, r, h, &offset, &time);
		if (!rc && offset && time > rp->last_record_time)
			rp->last_record_time = time;
		if (rc)
			break;
		switch (h->type) {
		case RV_PERF_RECORD_TIME_CONV:
			rc = rv_perf_time_conv_parse(h, &rp->time_conv, rp->err);
			rp->have_time_conv = !rc;
			break;
		case RV_PERF_RECORD_AUXTRACE_INFO:
			rc = note_info(rp, h);
			break;
		case RV_PERF_RECORD_AUXTRACE:
			rc = note_auxtrace(rp, &rec);
			break;
		case PERF_RECORD_AUX:
			rc = note_aux(rp, h);
			break;
		default:
			break;
		}
	}
	if (rc > 0)
		rc = 0;
	/* The PT event's MTC period, which the period between copies must respect. */
	for (size_t i = 0; !rc && rp->have_info && i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);
		uint64_t mask = rp->info.mtc_freq_bits;

		if (a->attr.type == rp->info.pmu_type && mask)
			rp->mtc_period =
				(unsigned)((a->attr.config & mask) >> __builtin_ctzll(mask));
	}
	rv_perf_reader_free(r);
	if (rc)
		return rc;
	if (rp->nr_auxtrace > 1)
		return rv_error_set(rp->err, ENOTSUP,
				    "'%s' has %zu AUXTRACE buffers; ptrepeat repeats the trace "
				    "of a single-threaded program recorded whole (softpt of a "
				    "program with one thread)",
				    rp->src_dir, rp->nr_auxtrace);
	if (rp->nr_aux > 1 || rp->aux_in_parts)
		return rv_error_set(rp->err, ENOTSUP,
				    "'%s' fills its AUX area in several parts; ptrepeat repeats "
				    "captures whose trace was read once, whole (as softpt "
				    "writes them)",
				    rp->src_dir);
	if (!rp->have_info || !rp->trace)
		return rv_error_set(rp->err, EINVAL,
				    "'%s/perf.data' holds no Intel PT trace (AUXTRACE_INFO and "
				    "AUXTRACE records); make one with build/softpt",
				    rp->src_dir);
	if (!rp->have_time_conv) { /* perf before 4.x: AUXTRACE_INFO has the same */
		rp->time_conv.time_shift = rp->info.time_shift;
		rp->time_conv.time_mult = rp->info.time_mult;
		rp->time_conv.time_zero = rp->info.time_zero;
		rp->time_conv.cap_user_time_zero = rp->info.cap_user_time_zero;
	}
	if (!rp->time_conv.time_mult)
		return rv_error_set(rp->err, EINVAL,
				    "'%s/perf.data' has no TSC conversion (TIME_CONV); its "
				    "sideband cannot be moved in time",
				    rp->src_dir);
	return 0;
}

/* The period between copies, the repeated stream, and which records move. */
static int plan(struct repeat *rp)
{
	struct rv_perf_time_conv *tc = &rp->time_conv;
	int rc = ptshift_scan(&rp->scan, rp->trace, rp->trace_size, rp->err);

	if (rc)
		return rv_error_prefix(rp->err, "%s: ", rp->src_dir);
	if (!rp->scan.nr_tsc)
		return rv_error_set(rp->err, EINVAL,
				    "the trace of '%s' has no TSC packets (recorded with tsc=0); "
				    "its copies cannot be put one after the other in time",
				    rp->src_dir);
	/* The run ends with its last timed record (EXIT) or TSC packet: MTC and
	 * CYC packets after the last TSC say how much later, not perf.data. */
	uint64_t end_tsc = rv_perf_time_to_tsc(tc, rp->last_record_time);
	if (end_tsc < rp->scan.max_tsc)
		end_tsc = rp->scan.max_tsc;
	uint64_t gap = rv_perf_time_to_tsc(tc, rp->last_record_time + GAP_NS) -
		       rv_perf_time_to_tsc(tc, rp->last_record_time);
	if (end_tsc < rp->scan.min_tsc || end_tsc - rp->scan.min_tsc > PTSHIFT_TSC_MAX - gap)
		return rv_error_set(rp->err, ERANGE,
				    "the trace of '%s' spans TSC %llu to %llu, which cannot be "
				    "repeated within a TSC packet's 56 bits",
				    rp->src_dir, (unsigned long long)rp->scan.min_tsc,
				    (unsigned long long)end_tsc);
	rc = ptshift_period(&rp->period, end_tsc - rp->scan.min_tsc + gap, rp->info.tsc_ctc_ratio_n,
			    rp->mtc_period, rp->err);
	if (rc)
		return rc;
	size_t out_size = rp->trace_size * rp->copies;
	rp->repeated = malloc(out_size);
	if (!rp->repeated)
		return rv_error_set(rp->err, ENOMEM, "out of memory for %zu bytes of PT", out_size);
	rc = ptshift_repeat(rp->repeated, out_size, &rp->scan, rp->copies, rp->period, rp->err);
	if (rc)
		return rc;
	uint64_t last_tsc = rp->scan.max_tsc;
	rp->moved_after = rv_perf_tsc_to_time(tc, last_tsc);
	rp->shift_ns =
		rv_perf_tsc_to_time(tc, last_tsc + rp->period * (rp->copies - 1)) - rp->moved_after;
	return 0;
}

static int write_record(struct repeat *rp, struct rv_perf_writer *w, const struct rv_perf_reader *r,
			const struct rv_perf_record *rec)
{
	const struct perf_event_header *h = rec->header;

	if (h->type == RV_PERF_RECORD_AUXTRACE) {
		struct rv_perf_auxtrace a;
		int rc = rv_perf_auxtrace_parse(h, &a, rp->err);

		if (rc)
			return rc;
		/* `reference` orders the buffers of one queue; there is one. */
		a.size = (uint64_t)rp->trace_size * rp->copies;
		return rv_perf_writer_write_auxtrace(w, &a, rp->repeated, rp->err);
	}
	size_t offset;
	uint64_t time;
	int rc = record_time(rp, r, h, &offset, &time);
	if (rc)
		return rc;
	uint8_t *bytes = (uint8_t *)rp->record;
	memcpy(bytes, h, h->size);
	if (offset && time > rp->moved_after) {
		store_u64(bytes + offset, time + rp->shift_ns);
		if ((h->type == PERF_RECORD_EXIT || h->type == PERF_RECORD_FORK) &&
		    h->size >= TASK_TIME_OFFSET + 8 &&
		    load_u64(bytes + TASK_TIME_OFFSET) > rp->moved_after)
			store_u64(bytes + TASK_TIME_OFFSET,
				  load_u64(bytes + TASK_TIME_OFFSET) + rp->shift_ns);
		rp->nr_moved++;
	}
	if (h->type == PERF_RECORD_AUX) {
		/* The copies fill the AUX area one after the other; the last one
		 * ends where the original did. */
		uint64_t size = load_u64(bytes + AUX_SIZE_OFFSET);

		if (load_u64(bytes + AUX_OFFSET_OFFSET) != 0 || size > rp->trace_size)
			return rv_error_set(rp->err, EINVAL,
					    "the AUX record of '%s' says %llu bytes where the "
					    "trace has %zu",
					    rp->src_dir, (unsigned long long)size, rp->trace_size);
		store_u64(bytes + AUX_SIZE_OFFSET,
			  (uint64_t)rp->trace_size * (rp->copies - 1) + size);
	}
	return rv_perf_writer_write(w, (const void *)bytes, rp->err);
}

/* HEADER_PMU_MAPPINGS: u32 count, then per PMU a u32 type and a perf string
 * (u32 length, then that many bytes, NUL-padded). Names point into data. */
static int parse_pmu_mappings(struct repeat *rp, const uint8_t *data, uint64_t size,
			      struct rv_perf_pmu_mapping **out, size_t *nr)
{
	*out = NULL;
	*nr = 0;
	if (!data || size < 4)
		return 0;
	uint32_t count = load_u32(data);
	uint64_t at = 4;
	if (count > size / 8)
		goto bad;
	*out = calloc(count ? count : 1, sizeof(**out));
	if (!*out)
		return rv_error_set(rp->err, ENOMEM, "out of memory for the PMU mappings");
	for (uint32_t i = 0; i < count; i++) {
		if (size - at < 8)
			goto bad;
		uint32_t type = load_u32(data + at);
		uint32_t len = load_u32(data + at + 4);
		at += 8;
		if (len == 0 || len > size - at || !memchr(data + at, '\0', len))
			goto bad;
		(*out)[i] = (struct rv_perf_pmu_mapping){ .name = (const char *)data + at,
							  .type = type };
		at += len;
	}
	*nr = count;
	return 0;
bad:
	return rv_error_set(rp->err, EINVAL,
			    "the PMU mappings of '%s/perf.data' are damaged; the capture cannot "
			    "be copied",
			    rp->src_dir);
}

/* The header features of the source, for the copy. */
static int fill_meta(struct repeat *rp, const struct rv_perf_reader *r, struct rv_perf_meta *m,
		     struct rv_perf_pmu_mapping **pmus)
{
	uint64_t size;
	const uint8_t *data;
	const char *const *argv;

	*m = (struct rv_perf_meta){
		.hostname = rv_perf_reader_feature_string(r, RV_FEAT_HOSTNAME),
		.os_release = rv_perf_reader_feature_string(r, RV_FEAT_OSRELEASE),
		.perf_version = rv_perf_reader_feature_string(r, RV_FEAT_VERSION),
		.arch = rv_perf_reader_feature_string(r, RV_FEAT_ARCH),
		.cpu_desc = rv_perf_reader_feature_string(r, RV_FEAT_CPUDESC),
		.cpuid = rv_perf_reader_feature_string(r, RV_FEAT_CPUID),
		/* HEADER_CLOCK_DATA would pair the clock with today's wall time. */
		.clockid = -1,
	};
	m->argc = rv_perf_reader_cmdline(r, &argv);
	m->argv = argv;
	data = rv_perf_reader_feature_data(r, RV_FEAT_NRCPUS, &size);
	if (data && size >= 8) {
		m->nr_cpus_avail = load_u32(data);
		m->nr_cpus_online = load_u32(data + 4);
	}
	data = rv_perf_reader_feature_data(r, RV_FEAT_SAMPLE_TIME, &size);
	if (data && size >= 16) {
		m->sample_time_first_ns = load_u64(data);
		m->sample_time_last_ns = load_u64(data + 8);
		if (m->sample_time_last_ns > rp->moved_after)
			m->sample_time_last_ns += rp->shift_ns;
	}
	data = rv_perf_reader_feature_data(r, RV_FEAT_PMU_MAPPINGS, &size);
	int rc = parse_pmu_mappings(rp, data, size, pmus, &m->nr_pmu_mappings);
	if (rc)
		return rc;
	/* None recorded: NULL, and the writer lists this machine's. */
	m->pmu_mappings = m->nr_pmu_mappings ? *pmus : NULL;
	return 0;
}

/* Pass 2: the new perf.data. */
static int write_copy(struct repeat *rp)
{
	struct rv_perf_reader *r = NULL;
	struct rv_perf_writer *w = NULL;
	struct rv_perf_pmu_mapping *pmus = NULL;
	struct rv_perf_record rec;
	struct rv_perf_meta meta;
	char path[PATH_MAX];
	int rc = open_source(rp, &r);

	if (rc)
		goto out;
	if (snprintf(path, sizeof(path), "%s/perf.data", rp->dst_dir) >= (int)sizeof(path)) {
		rc = rv_error_set(rp->err, ENAMETOOLONG, "the path '%s' is too long", rp->dst_dir);
		goto out;
	}
	if ((rc = rv_perf_writer_open(&w, path, rp->err)))
		goto out;
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if ((rc = rv_perf_writer_add_attr(w, &a->attr, a->name, a->ids, a->nr_ids,
						  rp->err)))
			goto out;
	}
	while ((rc = rv_perf_reader_next(r, &rec, rp->err)) == 1)
		if ((rc = write_record(rp, w, r, &rec)))
			goto out;
	if (rc)
		goto out;
	if ((rc = fill_meta(rp, r, &meta, &pmus)))
		goto out;
	rc = rv_perf_writer_finish(w, &meta, rp->err);
out:
	rv_perf_writer_free(w);
	rv_perf_reader_free(r);
	free(pmus);
	return rc;
}

static int copy_vdso(struct repeat *rp)
{
	char src[PATH_MAX], dst[PATH_MAX];
	char buf[65536];
	size_t n;
	int rc = 0;

	if (snprintf(src, sizeof(src), "%s/vdso.so", rp->src_dir) >= (int)sizeof(src) ||
	    snprintf(dst, sizeof(dst), "%s/vdso.so", rp->dst_dir) >= (int)sizeof(dst))
		return rv_error_set(rp->err, ENAMETOOLONG, "a path under '%s' is too long",
				    rp->dst_dir);
	FILE *in = fopen(src, "rbe");
	if (!in)
		return errno == ENOENT ? 0
				       : rv_error_set(rp->err, errno, "cannot open '%s': %s", src,
						      strerror(errno));
	FILE *out = fopen(dst, "wbe");
	if (!out) {
		rc = rv_error_set(rp->err, errno, "cannot create '%s': %s", dst, strerror(errno));
		fclose(in);
		return rc;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (ferror(in) || ferror(out))
		rc = rv_error_set(rp->err, EIO, "cannot copy '%s' to '%s'", src, dst);
	fclose(in);
	if (fclose(out) && !rc)
		rc = rv_error_set(rp->err, EIO, "cannot write '%s': %s", dst, strerror(errno));
	return rc;
}

static int run(struct repeat *rp)
{
	int rc;

	struct stat src, dst;

	if (stat(rp->src_dir, &src))
		return rv_error_set(rp->err, errno, "cannot find the capture '%s': %s", rp->src_dir,
				    strerror(errno));
	if (mkdir(rp->dst_dir, 0755) && errno != EEXIST)
		return rv_error_set(rp->err, errno, "cannot create the directory '%s': %s",
				    rp->dst_dir, strerror(errno));
	if (stat(rp->dst_dir, &dst))
		return rv_error_set(rp->err, errno, "cannot find '%s': %s", rp->dst_dir,
				    strerror(errno));
	if (src.st_dev == dst.st_dev && src.st_ino == dst.st_ino)
		return rv_error_set(rp->err, EINVAL,
				    "'%s' and '%s' are the same directory; the copy would "
				    "overwrite the capture it reads",
				    rp->src_dir, rp->dst_dir);
	if ((rc = read_source(rp)) || (rc = plan(rp)) || (rc = write_copy(rp)) ||
	    (rc = copy_vdso(rp)))
		return rc;
	double ms = (double)(rv_perf_tsc_to_time(&rp->time_conv, rp->period) -
			     rv_perf_tsc_to_time(&rp->time_conv, 0)) /
		    1e6;
	printf("ptrepeat: %s: %u copies of %zu bytes of PT (%zu TSC, %zu PSB packets each): "
	       "%zu bytes; copies %" PRIu64 " TSC ticks (%.3f ms) apart; %zu records, "
	       "%zu moved %.3f ms later\n",
	       rp->dst_dir, rp->copies, rp->trace_size, rp->scan.nr_tsc, rp->scan.nr_psb,
	       rp->trace_size * rp->copies, rp->period, ms, rp->nr_records, rp->nr_moved,
	       (double)rp->shift_ns / 1e6);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ptrepeat SRC_DIR DST_DIR K\n"
		   "  writes DST_DIR/perf.data: the softpt capture SRC_DIR/perf.data with its\n"
		   "  PT trace repeated K times, each copy later in time (and DST_DIR/vdso.so)\n");
}

int main(int argc, char **argv)
{
	struct rv_error err = { 0 };
	char *end = NULL;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc != 4) {
		usage(stderr);
		return 2;
	}
	errno = 0;
	unsigned long k = strtoul(argv[3], &end, 10);
	if (errno || !*argv[3] || *end || k == 0 || k > 1000000) {
		fprintf(stderr,
			"ptrepeat: K must be a number of copies from 1 to 1000000, not "
			"'%s'\n",
			argv[3]);
		return 2;
	}
	struct repeat *rp = calloc(1, sizeof(*rp));
	if (!rp) {
		fprintf(stderr, "ptrepeat: out of memory\n");
		return 1;
	}
	rp->src_dir = argv[1];
	rp->dst_dir = argv[2];
	rp->copies = (unsigned)k;
	rp->err = &err;
	int rc = run(rp);
	if (rc)
		fprintf(stderr, "ptrepeat: %s\n", err.message);
	ptshift_scan_release(&rp->scan);
	free(rp->trace);
	free(rp->repeated);
	free(rp);
	return rc ? 1 : 0;
}
