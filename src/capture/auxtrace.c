/* auxtrace.c: Intel PT's records in perf.data, built and parsed; see auxtrace.h.
 *
 * Records are built in a local buffer and handed to the perf.data writer,
 * which keeps the HEADER_AUXTRACE index and the PMU mapping. Parsers copy
 * fields out with memcpy, so records need no alignment, and check each
 * record's size before reading a field.
 *
 * Not here: the file layout (perf_data_write.c, perf_data_read.c) or the PT
 * packets (the decoder).
 */
#include "capture/auxtrace.h"
#include "capture/bytes.h"
#include "capture/perf_data_internal.h"

#include <errno.h>
#include <string.h>

/* struct perf_record_auxtrace_info: header, u32 type, u32 reserved, u64 priv[]. */
#define AUXTRACE_INFO_PRIV_OFFSET 16
/* perf refuses an Intel PT AUXTRACE_INFO with fewer private words than this
 * (sizeof(u64) * INTEL_PT_PER_CPU_MMAPS in intel_pt_process_auxtrace_info). */
#define INTEL_PT_PRIV_MIN 9
/* Where the filter string's length sits among the private words. */
#define INTEL_PT_FILTER_STR_LEN 16

/* struct perf_record_auxtrace: header, size, offset, reference, idx, tid, cpu, reserved. */
#define AUXTRACE_RECORD_BYTES 48
/* struct perf_record_time_conv, without and with time_cycles and after. */
#define TIME_CONV_BASE_BYTES 32
#define TIME_CONV_FULL_BYTES 56

/* The longest filter perf accepts on its command line is far shorter; this
 * bounds the record to one perf_event_header can describe. */
#define FILTER_MAX_BYTES 4096

static int too_short(const struct perf_event_header *rec, const char *name, size_t needed,
		     struct rv_error *err)
{
	return rv_error_set(err, EINVAL,
			    "corrupt %s record: %u bytes long, less than the %zu its fields need",
			    name, rec->size, needed);
}

/* That rec is a record of this type, at least min_size bytes long. */
static int check_record(const struct perf_event_header *rec, uint32_t type, const char *name,
			size_t min_size, struct rv_error *err)
{
	if (!rec)
		return rv_error_set(err, EINVAL, "no %s record given", name);
	if (rec->type != type)
		return rv_error_set(err, EINVAL, "a record of type %u is not a %s record",
				    rec->type, name);
	if (rec->size < min_size)
		return too_short(rec, name, min_size, err);
	return 0;
}

/* ---- AUXTRACE_INFO ---- */

int rv_perf_writer_write_intel_pt_info(struct rv_perf_writer *w,
				       const struct rv_intel_pt_info *info, struct rv_error *err)
{
	uint64_t record[(AUXTRACE_INFO_PRIV_OFFSET + 8 * RV_INTEL_PT_PRIV_MAX + FILTER_MAX_BYTES) /
			8];
	uint64_t *priv = record + AUXTRACE_INFO_PRIV_OFFSET / 8;
	struct perf_event_header *h = (struct perf_event_header *)(void *)record;
	size_t filter_len = info && info->filter ? strlen(info->filter) : 0;
	size_t filter_bytes = filter_len ? (filter_len + 1 + 7) & ~(size_t)7 : 0;
	uint32_t type = RV_PERF_AUXTRACE_INTEL_PT;

	if (!info)
		return rv_error_set(err, EINVAL, "no Intel PT information given");
	if (filter_bytes > FILTER_MAX_BYTES)
		return rv_error_set(err, EINVAL,
				    "the Intel PT address filter is %zu characters long; at most "
				    "%d fit in a perf.data record",
				    filter_len, FILTER_MAX_BYTES - 1);
	memset(record, 0, sizeof(record));
	h->type = RV_PERF_RECORD_AUXTRACE_INFO;
	h->size = (uint16_t)(AUXTRACE_INFO_PRIV_OFFSET + 8 * RV_INTEL_PT_PRIV_MAX + filter_bytes);
	memcpy((uint8_t *)record + 8, &type, sizeof(type));
	priv[0] = info->pmu_type;
	priv[1] = info->time_shift;
	priv[2] = info->time_mult;
	priv[3] = info->time_zero;
	priv[4] = info->cap_user_time_zero;
	priv[5] = info->tsc_bit;
	priv[6] = info->noretcomp_bit;
	priv[7] = info->have_sched_switch;
	priv[8] = info->snapshot_mode;
	priv[9] = info->per_cpu_mmaps;
	priv[10] = info->mtc_bit;
	priv[11] = info->mtc_freq_bits;
	priv[12] = info->tsc_ctc_ratio_n;
	priv[13] = info->tsc_ctc_ratio_d;
	priv[14] = info->cyc_bit;
	priv[15] = info->max_non_turbo_ratio;
	priv[INTEL_PT_FILTER_STR_LEN] = filter_len;
	if (filter_len)
		memcpy(priv + RV_INTEL_PT_PRIV_MAX, info->filter, filter_len);
	return rv_perf_writer_write(w, h, err);
}

int rv_intel_pt_info_parse(const struct perf_event_header *rec, struct rv_intel_pt_info *out,
			   struct rv_error *err)
{
	uint64_t priv[RV_INTEL_PT_PRIV_MAX] = { 0 };
	const uint8_t *bytes = (const uint8_t *)rec;
	size_t nr_priv;
	uint32_t type;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = check_record(rec, RV_PERF_RECORD_AUXTRACE_INFO, "AUXTRACE_INFO",
			   AUXTRACE_INFO_PRIV_OFFSET, err);
	if (ret)
		return ret;
	type = rv_load_u32(bytes + 8);
	if (type != RV_PERF_AUXTRACE_INTEL_PT)
		return rv_error_set(err, ENOTSUP,
				    "the AUXTRACE_INFO is of type %u, not Intel PT (%u): the "
				    "capture holds another kind of trace",
				    type, RV_PERF_AUXTRACE_INTEL_PT);
	nr_priv = (rec->size - AUXTRACE_INFO_PRIV_OFFSET) / 8;
	if (nr_priv > RV_INTEL_PT_PRIV_MAX)
		nr_priv = RV_INTEL_PT_PRIV_MAX; /* the rest is the filter string */
	if (nr_priv < INTEL_PT_PRIV_MIN)
		return too_short(rec, "Intel PT AUXTRACE_INFO",
				 AUXTRACE_INFO_PRIV_OFFSET + 8 * INTEL_PT_PRIV_MIN, err);
	for (size_t i = 0; i < nr_priv; i++)
		priv[i] = rv_load_u64(bytes + AUXTRACE_INFO_PRIV_OFFSET + 8 * i);
	out->nr_priv = nr_priv;
	out->pmu_type = priv[0];
	out->time_shift = priv[1];
	out->time_mult = priv[2];
	out->time_zero = priv[3];
	out->cap_user_time_zero = priv[4];
	out->tsc_bit = priv[5];
	out->noretcomp_bit = priv[6];
	out->have_sched_switch = priv[7];
	out->snapshot_mode = priv[8];
	out->per_cpu_mmaps = priv[9];
	out->mtc_bit = priv[10];
	out->mtc_freq_bits = priv[11];
	out->tsc_ctc_ratio_n = priv[12];
	out->tsc_ctc_ratio_d = priv[13];
	out->cyc_bit = priv[14];
	out->max_non_turbo_ratio = priv[15];
	if (nr_priv > INTEL_PT_FILTER_STR_LEN && priv[INTEL_PT_FILTER_STR_LEN]) {
		uint64_t len = priv[INTEL_PT_FILTER_STR_LEN];
		size_t at = AUXTRACE_INFO_PRIV_OFFSET + 8 * RV_INTEL_PT_PRIV_MAX;
		size_t room = rec->size - at;

		/* perf pads the string (and its NUL) to 8 bytes */
		if (len >= room || bytes[at + len] != '\0' || memchr(bytes + at, '\0', len))
			return rv_error_set(err, EINVAL,
					    "corrupt Intel PT AUXTRACE_INFO: its filter string of "
					    "%llu characters does not fit its %u bytes",
					    (unsigned long long)len, rec->size);
		out->filter = (const char *)bytes + at;
	}
	return 0;
}

/* ---- AUXTRACE ---- */

int rv_perf_writer_write_auxtrace(struct rv_perf_writer *w, const struct rv_perf_auxtrace *a,
				  const void *data, struct rv_error *err)
{
	uint8_t record[AUXTRACE_RECORD_BYTES];
	struct rv_bytes b;
	uint64_t padded;

	if (!a)
		return rv_error_set(err, EINVAL, "no AUXTRACE buffer given");
	if (!rv_perf_writer_has_auxtrace_info(w))
		return rv_error_set(err, EINVAL,
				    "an AUXTRACE buffer was written before the AUXTRACE_INFO "
				    "record; perf cannot decode a trace it has no information on");
	if (a->size > UINT64_MAX - 7)
		return rv_error_set(err, EINVAL, "an AUXTRACE buffer of %llu bytes is too large",
				    (unsigned long long)a->size);
	/* perf record counts the padding in the size field (__auxtrace_mmap__read). */
	padded = (a->size + 7) & ~(uint64_t)7;
	rv_record_begin(&b, record, sizeof(record), RV_PERF_RECORD_AUXTRACE, 0);
	rv_bytes_put_u64(&b, padded);
	rv_bytes_put_u64(&b, a->offset);
	rv_bytes_put_u64(&b, a->reference);
	rv_bytes_put_u32(&b, a->idx);
	rv_bytes_put_u32(&b, a->tid);
	rv_bytes_put_u32(&b, a->cpu);
	rv_bytes_put_u32(&b, 0); /* reserved */
	rv_record_end(&b);
	return rv_perf_writer_write_payload(w, (const struct perf_event_header *)(void *)record,
					    data, a->size, err);
}

int rv_perf_auxtrace_parse(const struct perf_event_header *rec, struct rv_perf_auxtrace *out,
			   struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = check_record(rec, RV_PERF_RECORD_AUXTRACE, "AUXTRACE", AUXTRACE_RECORD_BYTES, err);
	if (ret)
		return ret;
	out->size = rv_load_u64(bytes + 8);
	out->offset = rv_load_u64(bytes + 16);
	out->reference = rv_load_u64(bytes + 24);
	out->idx = rv_load_u32(bytes + 32);
	out->tid = rv_load_u32(bytes + 36);
	out->cpu = rv_load_u32(bytes + 40);
	return 0;
}

/* ---- TIME_CONV and the conversions ---- */

int rv_perf_writer_write_time_conv(struct rv_perf_writer *w, const struct rv_perf_time_conv *tc,
				   struct rv_error *err)
{
	uint8_t record[TIME_CONV_FULL_BYTES];
	struct rv_bytes b;

	if (!tc)
		return rv_error_set(err, EINVAL, "no time conversion given");
	rv_record_begin(&b, record, sizeof(record), RV_PERF_RECORD_TIME_CONV, 0);
	rv_bytes_put_u64(&b, tc->time_shift);
	rv_bytes_put_u64(&b, tc->time_mult);
	rv_bytes_put_u64(&b, tc->time_zero);
	rv_bytes_put_u64(&b, tc->time_cycles);
	rv_bytes_put_u64(&b, tc->time_mask);
	rv_bytes_put_u8(&b, tc->cap_user_time_zero);
	rv_bytes_put_u8(&b, tc->cap_user_time_short);
	rv_bytes_pad_to(&b, 8);
	rv_record_end(&b);
	return rv_perf_writer_write(w, (const struct perf_event_header *)(void *)record, err);
}

int rv_perf_time_conv_parse(const struct perf_event_header *rec, struct rv_perf_time_conv *out,
			    struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = check_record(rec, RV_PERF_RECORD_TIME_CONV, "TIME_CONV", TIME_CONV_BASE_BYTES, err);
	if (ret)
		return ret;
	out->time_shift = rv_load_u64(bytes + 8);
	out->time_mult = rv_load_u64(bytes + 16);
	out->time_zero = rv_load_u64(bytes + 24);
	if (rec->size >= TIME_CONV_FULL_BYTES) {
		out->time_cycles = rv_load_u64(bytes + 32);
		out->time_mask = rv_load_u64(bytes + 40);
		out->cap_user_time_zero = bytes[48] != 0;
		out->cap_user_time_short = bytes[49] != 0;
	} else {
		/* perf synthesized the short form only with cap_user_time_zero set */
		out->cap_user_time_zero = true;
	}
	return 0;
}

uint64_t rv_perf_tsc_to_time(const struct rv_perf_time_conv *tc, uint64_t tsc)
{
	struct rv_perf_tsc_conv c = rv_perf_tsc_conv_prepare(tc);

	return rv_perf_tsc_conv(&c, tsc);
}

uint64_t rv_perf_time_to_tsc(const struct rv_perf_time_conv *tc, uint64_t ns)
{
	uint64_t shift = tc->time_shift < 64 ? tc->time_shift : 63;
	uint64_t t = ns - tc->time_zero, quot, rem;

	if (!tc->time_mult)
		return 0;
	quot = t / tc->time_mult;
	rem = t % tc->time_mult;
	return (quot << shift) + (rem << shift) / tc->time_mult;
}

void rv_perf_time_conv_from_freq(struct rv_perf_time_conv *tc, uint64_t tsc_hz, uint64_t tsc_at,
				 uint64_t ns_at)
{
	unsigned int shift = 31;
	unsigned __int128 mult = 0;

	memset(tc, 0, sizeof(*tc));
	if (!tsc_hz)
		tsc_hz = 1;
	/* mult / 2^shift = 1e9 / tsc_hz, rounded, with mult below 2^32 */
	for (;; shift--) {
		mult = (((unsigned __int128)1000000000 << shift) + tsc_hz / 2) / tsc_hz;
		if (mult < (1ULL << 32) || shift == 0)
			break;
	}
	tc->time_shift = shift;
	tc->time_mult = (uint64_t)mult;
	tc->time_zero = 0;
	tc->time_zero = ns_at - rv_perf_tsc_to_time(tc, tsc_at);
	tc->cap_user_time_zero = true;
}

/* ---- the kernel's AUX, ITRACE_START and SWITCH records ---- */

int rv_perf_aux_parse(const struct perf_event_header *rec, struct rv_perf_aux *out,
		      struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = check_record(rec, PERF_RECORD_AUX, "AUX", 32, err);
	if (ret)
		return ret;
	out->aux_offset = rv_load_u64(bytes + 8);
	out->aux_size = rv_load_u64(bytes + 16);
	out->flags = rv_load_u64(bytes + 24);
	return 0;
}

int rv_perf_itrace_start_parse(const struct perf_event_header *rec,
			       struct rv_perf_itrace_start *out, struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)rec;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = check_record(rec, PERF_RECORD_ITRACE_START, "ITRACE_START", 16, err);
	if (ret)
		return ret;
	out->pid = rv_load_u32(bytes + 8);
	out->tid = rv_load_u32(bytes + 12);
	return 0;
}

int rv_perf_switch_parse(const struct perf_event_header *rec, struct rv_perf_switch *out,
			 struct rv_error *err)
{
	const uint8_t *bytes = (const uint8_t *)rec;

	memset(out, 0, sizeof(*out));
	if (!rec)
		return rv_error_set(err, EINVAL, "no SWITCH record given");
	if (rec->type != PERF_RECORD_SWITCH && rec->type != PERF_RECORD_SWITCH_CPU_WIDE)
		return rv_error_set(err, EINVAL, "a record of type %u is not a SWITCH record",
				    rec->type);
	if (rec->size < sizeof(*rec))
		return too_short(rec, "SWITCH", sizeof(*rec), err);
	out->out = (rec->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
	out->preempt = (rec->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
	out->cpu_wide = rec->type == PERF_RECORD_SWITCH_CPU_WIDE;
	out->next_prev_pid = UINT32_MAX;
	out->next_prev_tid = UINT32_MAX;
	if (out->cpu_wide) {
		if (rec->size < 16)
			return too_short(rec, "SWITCH_CPU_WIDE", 16, err);
		out->next_prev_pid = rv_load_u32(bytes + 8);
		out->next_prev_tid = rv_load_u32(bytes + 12);
	}
	return 0;
}

int64_t rv_pt_clock_offset(const struct rv_perf_time_conv *tc, const struct rv_pt_clock_pair *pairs,
			   size_t nr, uint64_t *spread_ns)
{
	size_t best = SIZE_MAX;
	uint64_t best_spread = UINT64_MAX;

	for (size_t i = 0; i < nr; i++) {
		const struct rv_pt_clock_pair *p = &pairs[i];

		if (p->monotonic_after < p->monotonic_before)
			continue; /* the clock went back: not a pair */
		if (p->monotonic_after - p->monotonic_before < best_spread) {
			best_spread = p->monotonic_after - p->monotonic_before;
			best = i;
		}
	}
	if (spread_ns)
		*spread_ns = best_spread;
	if (best == SIZE_MAX)
		return 0;
	/* the TSC was read halfway between the two monotonic reads, give or
	 * take half their spread */
	const struct rv_pt_clock_pair *p = &pairs[best];
	uint64_t monotonic = p->monotonic_before + best_spread / 2;
	uint64_t capture = rv_perf_tsc_to_time(tc, p->tsc);

	return capture >= monotonic ? (int64_t)(capture - monotonic)
				    : -(int64_t)(monotonic - capture);
}

uint64_t rv_pt_clock_from_monotonic(uint64_t monotonic_ns, int64_t offset)
{
	if (offset < 0 && monotonic_ns < (uint64_t)-offset)
		return 0;
	return monotonic_ns + (uint64_t)offset;
}
