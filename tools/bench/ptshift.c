/* ptshift.c: repeat an Intel PT stream with each copy later in time (see
 * ptshift.h). libipt's packet decoder finds the TSC packets once; each copy is
 * then the original bytes with those packets re-encoded by libipt's encoder.
 *
 * Not here: perf.data, or any packet other than TSC.
 */
#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "ptshift.h"

static int push_tsc(struct ptshift_scan *s, size_t *cap, size_t offset, uint64_t tsc)
{
	if (s->nr_tsc == *cap) {
		size_t cap2 = *cap ? *cap * 2 : 64;
		size_t *offsets = realloc(s->tsc_offsets, cap2 * sizeof(*offsets));

		if (!offsets)
			return -ENOMEM;
		s->tsc_offsets = offsets;
		uint64_t *values = realloc(s->tsc_values, cap2 * sizeof(*values));

		if (!values)
			return -ENOMEM;
		s->tsc_values = values;
		*cap = cap2;
	}
	s->tsc_offsets[s->nr_tsc] = offset;
	s->tsc_values[s->nr_tsc] = tsc;
	s->nr_tsc++;
	return 0;
}

static int scan_packets(struct ptshift_scan *s, struct pt_packet_decoder *dec, struct rv_error *err)
{
	size_t cap = 0;

	int rc = pt_pkt_sync_set(dec, 0);
	if (rc < 0)
		return rv_error_set(err, EINVAL, "cannot start reading the PT stream: %s",
				    pt_errstr(pt_errcode(rc)));
	for (;;) {
		struct pt_packet pkt;
		uint64_t offset = 0;

		pt_pkt_get_offset(dec, &offset);
		rc = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (rc == -pte_eos)
			return 0;
		if (rc < 0)
			return rv_error_set(err, EILSEQ,
					    "the PT stream has a packet libipt cannot decode at "
					    "offset %llu (%s); repeat only whole, valid traces",
					    (unsigned long long)offset, pt_errstr(pt_errcode(rc)));
		if (s->nr_packets == 0 && pkt.type != ppt_psb)
			return rv_error_set(err, EINVAL,
					    "the PT stream does not begin with a PSB (a snapshot "
					    "of a wrapped buffer?); only a whole trace can be "
					    "repeated");
		s->nr_packets++;
		switch (pkt.type) {
		case ppt_psb:
			s->nr_psb++;
			break;
		case ppt_tma:
			s->nr_tma++;
			break;
		case ppt_tsc:
			if (push_tsc(s, &cap, (size_t)offset, pkt.payload.tsc.tsc))
				return rv_error_set(
					err, ENOMEM,
					"out of memory for the PT stream's TSC packets");
			if (s->nr_tsc == 1 || pkt.payload.tsc.tsc < s->min_tsc)
				s->min_tsc = pkt.payload.tsc.tsc;
			if (pkt.payload.tsc.tsc > s->max_tsc)
				s->max_tsc = pkt.payload.tsc.tsc;
			break;
		default:
			break;
		}
	}
}

int ptshift_scan(struct ptshift_scan *out, const uint8_t *data, size_t size, struct rv_error *err)
{
	struct pt_config config;

	memset(out, 0, sizeof(*out));
	out->data = data;
	out->size = size;
	if (!data || size == 0)
		return rv_error_set(err, EINVAL, "the PT stream is empty; nothing to repeat");
	pt_config_init(&config);
	config.begin = (uint8_t *)data;
	config.end = (uint8_t *)data + size;
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return rv_error_set(err, ENOMEM, "out of memory for libipt's packet decoder");
	int rc = scan_packets(out, dec, err);
	pt_pkt_free_decoder(dec);
	return rc;
}

void ptshift_scan_release(struct ptshift_scan *scan)
{
	free(scan->tsc_offsets);
	free(scan->tsc_values);
	memset(scan, 0, sizeof(*scan));
}

int ptshift_period(uint64_t *out, uint64_t min_ticks, uint64_t ratio_n, unsigned mtc_period,
		   struct rv_error *err)
{
	if (mtc_period > 15)
		return rv_error_set(err, EINVAL,
				    "an MTC period of %u is not one PT allows (0 to 15); check "
				    "the capture's PT config",
				    mtc_period);
	/* TMA anchors CTC[15:0]; MTC carries up to CTC[mtc_period + 7]. */
	unsigned ctc_bits = mtc_period + 8 > 16 ? mtc_period + 8 : 16;
	uint64_t ctc_wrap = UINT64_C(1) << ctc_bits;
	uint64_t unit = ratio_n ? ratio_n * ctc_wrap : 1;

	if (ratio_n > PTSHIFT_TSC_MAX / ctc_wrap || min_ticks > PTSHIFT_TSC_MAX - (unit - 1))
		return rv_error_set(err, ERANGE,
				    "a period of %llu TSC ticks (in steps of %llu) does not fit "
				    "a TSC packet",
				    (unsigned long long)min_ticks, (unsigned long long)unit);
	uint64_t period = (min_ticks + unit - 1) / unit * unit;

	*out = period ? period : unit;
	return 0;
}

int ptshift_repeat(uint8_t *dst, size_t dst_size, const struct ptshift_scan *scan, unsigned copies,
		   uint64_t period, struct rv_error *err)
{
	struct pt_config config;

	if (copies == 0 || scan->size == 0 || dst_size / copies != scan->size || dst_size % copies)
		return rv_error_set(err, EINVAL,
				    "%zu bytes cannot hold %u copies of a %zu-byte PT stream",
				    dst_size, copies, scan->size);
	if (copies > 1 && scan->nr_tsc && period <= scan->max_tsc - scan->min_tsc)
		return rv_error_set(err, EINVAL,
				    "a period of %llu TSC ticks is shorter than the stream's "
				    "%llu; the copies would overlap in time",
				    (unsigned long long)period,
				    (unsigned long long)(scan->max_tsc - scan->min_tsc));
	if (scan->nr_tsc && (copies - 1) > 0 &&
	    (period > PTSHIFT_TSC_MAX / (copies - 1) ||
	     scan->max_tsc > PTSHIFT_TSC_MAX - period * (copies - 1)))
		return rv_error_set(err, ERANGE,
				    "%u copies %llu TSC ticks apart run past the 56 bits of a "
				    "TSC packet; use fewer copies",
				    copies, (unsigned long long)period);
	for (unsigned k = 0; k < copies; k++)
		memcpy(dst + (size_t)k * scan->size, scan->data, scan->size);
	if (!scan->nr_tsc || copies == 1)
		return 0;

	pt_config_init(&config);
	config.begin = dst;
	config.end = dst + dst_size;
	struct pt_encoder *enc = pt_alloc_encoder(&config);
	if (!enc)
		return rv_error_set(err, ENOMEM, "out of memory for libipt's packet encoder");
	int rc = 0;
	for (unsigned k = 1; k < copies && !rc; k++) {
		uint64_t shift = period * k;

		for (size_t i = 0; i < scan->nr_tsc; i++) {
			uint64_t at = (uint64_t)k * scan->size + scan->tsc_offsets[i];
			struct pt_packet pkt = {
				.type = ppt_tsc,
				.payload.tsc.tsc = scan->tsc_values[i] + shift,
			};
			int r = pt_enc_sync_set(enc, at);

			if (r >= 0)
				r = pt_enc_next(enc, &pkt);
			if (r < 0) {
				rc = rv_error_set(err, EIO,
						  "libipt cannot encode the TSC packet of copy %u "
						  "at offset %llu: %s",
						  k, (unsigned long long)at,
						  pt_errstr(pt_errcode(r)));
				break;
			}
		}
	}
	pt_free_encoder(enc);
	return rc;
}
