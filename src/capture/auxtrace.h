/* auxtrace.h: the records of an Intel PT capture in perf.data, written and
 * parsed exactly as perf lays them out (tools/perf/util/intel-pt.c,
 * auxtrace.c, include/uapi/linux/perf_event.h): PERF_RECORD_AUXTRACE_INFO of
 * type Intel PT, PERF_RECORD_AUXTRACE with its trace, TIME_CONV, and the
 * kernel's AUX, ITRACE_START and SWITCH records; with perf's conversions
 * between TSC and perf time, and the offset from CLOCK_MONOTONIC to that
 * time (for the gate's marks in a PT capture).
 *
 * perf record writes TIME_CONV first, then AUXTRACE_INFO, then the sideband it
 * synthesizes, then what the kernel gives; the writer insists only on what
 * perf cannot do without (one AUXTRACE_INFO, before any AUXTRACE).
 *
 * Not here: the PT packets themselves (the decoder's business) or the
 * sideband records' layout (synth.h). Parsers check every length and point
 * into the record they were given.
 */
#ifndef RV_CAPTURE_AUXTRACE_H
#define RV_CAPTURE_AUXTRACE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/perf_data.h"
#include "util/error.h"

/* PERF_RECORD_AUXTRACE_INFO's type for Intel PT (perf's PERF_AUXTRACE_INTEL_PT). */
#define RV_PERF_AUXTRACE_INTEL_PT 1

/* The private words of PERF_RECORD_AUXTRACE_INFO for Intel PT, in perf's
 * order (enum INTEL_PT_PMU_TYPE ... INTEL_PT_FILTER_STR_LEN). */
#define RV_INTEL_PT_PRIV_MAX 17

struct rv_intel_pt_info { /* PERF_RECORD_AUXTRACE_INFO, type PERF_AUXTRACE_INTEL_PT */
	uint64_t pmu_type;
	uint64_t time_shift, time_mult, time_zero, cap_user_time_zero;
	uint64_t tsc_bit, noretcomp_bit, have_sched_switch, snapshot_mode, per_cpu_mmaps;
	uint64_t mtc_bit, mtc_freq_bits, tsc_ctc_ratio_n, tsc_ctc_ratio_d, cyc_bit;
	uint64_t max_non_turbo_ratio;
	const char *filter; /* NULL or "" when none; reader: points into the record */
	size_t nr_priv;	    /* reader: private u64s the record had (older perf wrote fewer) */
};

/* Writes PERF_RECORD_AUXTRACE_INFO (all 17 private words, then the filter
 * string NUL-terminated and padded to 8). Once per capture, before any
 * AUXTRACE record; its pmu_type becomes "intel_pt" in HEADER_PMU_MAPPINGS. */
int rv_perf_writer_write_intel_pt_info(struct rv_perf_writer *w,
				       const struct rv_intel_pt_info *info, struct rv_error *err);

/* Parses an AUXTRACE_INFO of type Intel PT. Fields the record is too old to
 * have read as 0 (nr_priv says how many it had; perf needs at least 9);
 * filter points at the NUL-terminated string in the record, or is NULL. */
int rv_intel_pt_info_parse(const struct perf_event_header *rec, struct rv_intel_pt_info *out,
			   struct rv_error *err);

/* PERF_RECORD_AUXTRACE: `size` bytes of trace for buffer `idx` (the CPU's or
 * thread's AUX area), taken at `offset` of that area; reference is the TSC or
 * a sequence number perf uses to order snapshots. Parsing gives the record's
 * size field, which counts the padding to 8 bytes the trace was written with. */
struct rv_perf_auxtrace {
	uint64_t size, offset, reference;
	uint32_t idx, tid, cpu;
};

/* Writes PERF_RECORD_AUXTRACE followed by `size` bytes of trace, and remembers it for the
 * HEADER_AUXTRACE index that rv_perf_writer_finish writes (as perf record does). */
int rv_perf_writer_write_auxtrace(struct rv_perf_writer *w, const struct rv_perf_auxtrace *a,
				  const void *data, struct rv_error *err);
int rv_perf_auxtrace_parse(const struct perf_event_header *rec, struct rv_perf_auxtrace *out,
			   struct rv_error *err);

/* PERF_RECORD_TIME_CONV: the perf_event_mmap_page's TSC conversion. Records
 * of perf before 5.12 stop after time_zero; they were only written when
 * cap_user_time_zero was set, so parsing says so. */
struct rv_perf_time_conv {
	uint64_t time_shift, time_mult, time_zero, time_cycles, time_mask;
	bool cap_user_time_zero, cap_user_time_short;
};
int rv_perf_writer_write_time_conv(struct rv_perf_writer *w, const struct rv_perf_time_conv *tc,
				   struct rv_error *err);
int rv_perf_time_conv_parse(const struct perf_event_header *rec, struct rv_perf_time_conv *out,
			    struct rv_error *err);

/* perf's conversions (tsc_to_perf_time / perf_time_to_tsc in tools/perf/util/tsc.c),
 * from the formulas in struct perf_event_mmap_page's documentation. time_to_tsc
 * gives 0 when time_mult is 0. */
uint64_t rv_perf_tsc_to_time(const struct rv_perf_time_conv *tc, uint64_t tsc);
uint64_t rv_perf_time_to_tsc(const struct rv_perf_time_conv *tc, uint64_t ns);

/* tsc_to_time's terms worked out once, for a loop that converts many times
 * (a PT decoder converts at almost every other branch): prepare(NULL) is
 * the identity, for times that are TSC ticks already. */
struct rv_perf_tsc_conv {
	uint64_t shift, rem_mask, mult, zero;
	bool cycles_short; /* cap_user_time_short: the TSC's low bits from cycles */
	uint64_t cycles, mask;
	/* no short cycles, and no remainder times mult overflows: the
	 * conversion is one 128-bit product (what the formula's two halves
	 * add up to when the remainder's does not wrap) */
	bool wide;
	/* wide, and mult below 1 << shift (a tick shorter than a nanosecond,
	 * as a kernel's conversion has it): the product's high half with
	 * mult shifted up by 64 - shift, which loses no bit of it */
	bool high;
	uint64_t high_mult;
};

static inline struct rv_perf_tsc_conv rv_perf_tsc_conv_prepare(const struct rv_perf_time_conv *tc)
{
	struct rv_perf_tsc_conv c = { .mult = 1 };

	if (tc) {
		c.shift = tc->time_shift < 64 ? tc->time_shift : 63;
		c.rem_mask = (1ULL << c.shift) - 1;
		c.mult = tc->time_mult;
		c.zero = tc->time_zero;
		c.cycles_short = tc->cap_user_time_short;
		c.cycles = tc->time_cycles;
		c.mask = tc->time_mask;
	}
	c.wide = !c.cycles_short && (!c.mult || c.rem_mask <= UINT64_MAX / c.mult);
	c.high = c.wide && c.shift && c.mult <= c.rem_mask;
	if (c.high)
		c.high_mult = c.mult << (64 - c.shift);
	return c;
}

/* rv_perf_tsc_conv for a c that is high: one product, no shift. */
static inline uint64_t rv_perf_tsc_conv_high(const struct rv_perf_tsc_conv *c, uint64_t tsc)
{
	return c->zero + (uint64_t)(((unsigned __int128)tsc * c->high_mult) >> 64);
}

static inline uint64_t rv_perf_tsc_conv(const struct rv_perf_tsc_conv *c, uint64_t tsc)
{
	if (c->high)
		return rv_perf_tsc_conv_high(c, tsc);
	if (c->wide)
		return c->zero + (uint64_t)(((unsigned __int128)tsc * c->mult) >> c->shift);
	if (c->cycles_short)
		tsc = c->cycles + ((tsc - c->cycles) & c->mask);
	return c->zero + (tsc >> c->shift) * c->mult +
	       (((tsc & c->rem_mask) * c->mult) >> c->shift);
}

/* Chooses shift/mult/zero so that tsc_to_time(tsc_at) == ns_at for a TSC of tsc_hz:
 * the largest shift (at most 31, so that no product overflows) whose multiplier
 * fits 32 bits, as the kernel chooses for its cyc2ns. tsc_hz must not be 0. */
void rv_perf_time_conv_from_freq(struct rv_perf_time_conv *tc, uint64_t tsc_hz, uint64_t tsc_at,
				 uint64_t ns_at);

/* PERF_RECORD_AUX: the kernel moved aux_size bytes at aux_offset of the AUX
 * area into the buffer; flags are PERF_AUX_FLAG_* (TRUNCATED, OVERWRITE, ...). */
struct rv_perf_aux {
	uint64_t aux_offset, aux_size, flags;
};
int rv_perf_aux_parse(const struct perf_event_header *rec, struct rv_perf_aux *out,
		      struct rv_error *err);

/* PERF_RECORD_ITRACE_START: tracing began for this task (on the CPU of the
 * record's sample_id). */
struct rv_perf_itrace_start {
	uint32_t pid, tid;
};
int rv_perf_itrace_start_parse(const struct perf_event_header *rec,
			       struct rv_perf_itrace_start *out, struct rv_error *err);

/* PERF_RECORD_SWITCH and SWITCH_CPU_WIDE. `out`: the task of the sample_id
 * is switched out (else in); `preempt`: it was preempted while runnable.
 * CPU-wide records also name the other task: the next one when out, the
 * previous one when in; plain SWITCH records leave them at -1. */
struct rv_perf_switch {
	bool out, preempt, cpu_wide;
	uint32_t next_prev_pid, next_prev_tid;
};
int rv_perf_switch_parse(const struct perf_event_header *rec, struct rv_perf_switch *out,
			 struct rv_error *err);

/* The capture's clock against CLOCK_MONOTONIC, for times a recorder gets in
 * CLOCK_MONOTONIC (the BPF gate's) and writes into a PT capture, whose clock
 * is perf's: the TSC through TIME_CONV. One pair is a TSC read between two
 * CLOCK_MONOTONIC reads, back to back. */
struct rv_pt_clock_pair {
	uint64_t monotonic_before, tsc, monotonic_after;
};

/* The offset to add to a CLOCK_MONOTONIC time to get the capture's time,
 * from the tightest of nr pairs (the TSC taken halfway between its two
 * reads). *spread_ns (may be NULL) is that pair's spread, twice the offset's
 * uncertainty; UINT64_MAX, and 0 returned, when no pair is usable. */
int64_t rv_pt_clock_offset(const struct rv_perf_time_conv *tc, const struct rv_pt_clock_pair *pairs,
			   size_t nr, uint64_t *spread_ns);

/* A CLOCK_MONOTONIC time in the capture's clock (0 rather than below it). */
uint64_t rv_pt_clock_from_monotonic(uint64_t monotonic_ns, int64_t offset);

#endif
