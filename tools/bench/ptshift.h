/* ptshift.h: one Intel PT packet stream repeated K times, every copy moved
 * later in time than the one before, so that the result reads as one long
 * trace of a program that ran K times in a row. This is how the decode
 * benchmarks get tens of MB of genuine PT from softpt, which cannot single-step
 * that much in reasonable time.
 *
 * Only TSC packets carry absolute time; they are the only bytes changed: copy
 * k's TSC packets get k * period added. MTC and CYC packets are relative.
 * TMA relates the TSC to the crystal clock (CTC) through CTC[15:0] and the
 * fast counter, and MTC carries CTC[mtc_period + 7 : mtc_period]: a period
 * that moves the CTC by a multiple of 2^16 and of 2^(mtc_period + 8) leaves
 * every TMA and MTC payload true as it stands, so ptshift_period rounds up to
 * that.
 *
 * Packets are read with libipt's packet decoder and the TSC packets written
 * back with its encoder. The stream must begin with a PSB (a whole trace, not
 * a snapshot that starts mid-packet), so that every copy starts in sync.
 *
 * Not here: perf.data (tools/bench/ptrepeat.c moves the sideband records),
 * instruction flow, or any other change to the packets.
 */
#ifndef BENCH_PTSHIFT_H
#define BENCH_PTSHIFT_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The largest value a TSC packet holds (it carries 56 bits). */
#define PTSHIFT_TSC_MAX ((UINT64_C(1) << 56) - 1)

/* What ptshift_scan found in a stream. The stream itself is not copied:
 * `data` points at the caller's bytes, which must outlive the scan. */
struct ptshift_scan {
	const uint8_t *data;
	size_t size;
	size_t nr_packets, nr_psb, nr_tma;
	size_t nr_tsc;
	size_t *tsc_offsets;	   /* where each TSC packet begins */
	uint64_t *tsc_values;	   /* and what it says */
	uint64_t min_tsc, max_tsc; /* of the TSC packets; 0, 0 when there are none */
};

/* Reads every packet of data[0, size). Fails (with the offset in err) when the
 * stream does not begin with a PSB or a packet cannot be decoded; trailing
 * PAD bytes are packets like any other. Release the scan with
 * ptshift_scan_release, also after a failure. */
int ptshift_scan(struct ptshift_scan *out, const uint8_t *data, size_t size, struct rv_error *err);
void ptshift_scan_release(struct ptshift_scan *scan);

/* The smallest period >= min_ticks (TSC ticks) that moves the CTC by a whole
 * number of 2^max(16, mtc_period + 8) ticks: a multiple of ratio_n times that,
 * ratio_n being the TSC:CTC ratio's numerator (AUXTRACE_INFO's
 * tsc_ctc_ratio_n; 0 when the capture has no CTC relation, and then any period
 * will do). mtc_period is the MTC frequency field of the PT config (0..15).
 * Fails when the period does not fit a TSC packet. */
int ptshift_period(uint64_t *out, uint64_t min_ticks, uint64_t ratio_n, unsigned mtc_period,
		   struct rv_error *err);

/* Writes `copies` copies of the scanned stream one after the other to dst
 * (dst_size must be copies * scan->size), the TSC packets of copy k (from 0)
 * increased by k * period. Fails when the period is not longer than the
 * stream's span of TSC values (the copies would overlap in time), or a shifted
 * TSC would not fit 56 bits. */
int ptshift_repeat(uint8_t *dst, size_t dst_size, const struct ptshift_scan *scan, unsigned copies,
		   uint64_t period, struct rv_error *err);

#endif
