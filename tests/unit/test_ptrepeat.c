/* test_ptrepeat.c: ptshift, the half of build/bench/ptrepeat that repeats a PT
 * stream with each copy later in time. A repeated stream is the original's
 * packets K times over, byte for byte, except that copy k's TSC packets say k
 * periods later; the period keeps every TMA (CTC[15:0], fast counter) and MTC
 * payload true for the moved TSC; streams that cannot be repeated safely are
 * refused with a reason.
 *
 * The streams are written here with libipt's encoder and read back with its
 * packet decoder. Not here: perf.data and perf's decoder (ptrepeat's output is
 * checked against `perf script` by bench/run's capture step).
 */
#include <criterion/criterion.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/bench/ptshift.h"

enum { RATIO_N = 100, MTC_PERIOD = 3, STREAM_CAP = 4096 };

struct stream {
	uint8_t bytes[STREAM_CAP];
	size_t size;
	struct pt_encoder *enc;
};

static void put(struct stream *s, struct pt_packet pkt)
{
	int rc = pt_enc_next(s->enc, &pkt);

	cr_assert_gt(rc, 0, "libipt could not encode packet type %d: %s", pkt.type,
		     pt_errstr(pt_errcode(rc)));
}

/* A PSB+ as PT writes it with TSC and MTC on: TSC, and TMA relating it to
 * the CTC (= TSC / RATIO_N), then CBR, MODE.Exec and FUP. */
static void put_psb_plus(struct stream *s, uint64_t tsc, uint64_t ip)
{
	put(s, (struct pt_packet){ .type = ppt_psb });
	put(s, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = tsc });
	put(s, (struct pt_packet){ .type = ppt_tma,
				   .payload.tma = { .ctc = (uint16_t)(tsc / RATIO_N),
						    .fc = (uint16_t)(tsc % RATIO_N) } });
	put(s, (struct pt_packet){ .type = ppt_cbr, .payload.cbr.ratio = 40 });
	put(s, (struct pt_packet){
		       .type = ppt_mode,
		       .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csl = 1 } } });
	put(s, (struct pt_packet){ .type = ppt_fup,
				   .payload.ip = { .ipc = pt_ipc_sext_48, .ip = ip } });
	put(s, (struct pt_packet){ .type = ppt_psbend });
}

static void put_mtc(struct stream *s, uint64_t tsc)
{
	put(s, (struct pt_packet){ .type = ppt_mtc,
				   .payload.mtc.ctc = (uint8_t)((tsc / RATIO_N) >> MTC_PERIOD) });
}

/* Two PSB+ periods of branches and timing, then PAD to 8 bytes, as perf's
 * AUXTRACE records carry it. TSCs from first_tsc to first_tsc + 5000. */
static struct stream *make_stream(uint64_t first_tsc)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct pt_config config;

	cr_assert_not_null(s);
	pt_config_init(&config);
	config.begin = s->bytes;
	config.end = s->bytes + sizeof(s->bytes);
	s->enc = pt_alloc_encoder(&config);
	cr_assert_not_null(s->enc);

	put_psb_plus(s, first_tsc, 0x401000);
	put(s, (struct pt_packet){ .type = ppt_tip_pge,
				   .payload.ip = { .ipc = pt_ipc_sext_48, .ip = 0x401000 } });
	for (int i = 0; i < 20; i++) {
		put(s, (struct pt_packet){ .type = ppt_cyc, .payload.cyc.value = 7 + i });
		put(s, (struct pt_packet){ .type = ppt_tnt_8,
					   .payload.tnt = { .bit_size = 5, .payload = 0x15 } });
		put(s, (struct pt_packet){ .type = ppt_tip,
					   .payload.ip = { .ipc = pt_ipc_update_16,
							   .ip = 0x1000 + 16 * (uint64_t)i } });
		put_mtc(s, first_tsc + 100 * (uint64_t)i);
	}
	put_psb_plus(s, first_tsc + 4000, 0x401234);
	put(s, (struct pt_packet){ .type = ppt_tnt_64,
				   .payload.tnt = { .bit_size = 40, .payload = 0x123456789aULL } });
	put(s, (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = first_tsc + 5000 });
	put(s,
	    (struct pt_packet){ .type = ppt_tip_pgd, .payload.ip = { .ipc = pt_ipc_suppressed } });

	uint64_t offset = 0;
	cr_assert_geq(pt_enc_get_offset(s->enc, &offset), 0);
	while (offset % 8) {
		put(s, (struct pt_packet){ .type = ppt_pad });
		cr_assert_geq(pt_enc_get_offset(s->enc, &offset), 0);
	}
	s->size = (size_t)offset;
	pt_free_encoder(s->enc);
	s->enc = NULL;
	return s;
}

struct packets {
	struct pt_packet *p;
	size_t n;
};

static struct packets decode_all(const uint8_t *bytes, size_t size)
{
	struct pt_config config;
	struct packets out = { .p = calloc(size, sizeof(struct pt_packet)) };

	cr_assert_not_null(out.p);
	pt_config_init(&config);
	config.begin = (uint8_t *)bytes;
	config.end = (uint8_t *)bytes + size;
	struct pt_packet_decoder *dec = pt_pkt_alloc_decoder(&config);
	cr_assert_not_null(dec);
	cr_assert_geq(pt_pkt_sync_set(dec, 0), 0);
	for (;;) {
		int rc = pt_pkt_next(dec, &out.p[out.n], sizeof(out.p[0]));

		if (rc == -pte_eos)
			break;
		cr_assert_gt(rc, 0, "packet %zu does not decode: %s", out.n,
			     pt_errstr(pt_errcode(rc)));
		out.n++;
	}
	pt_pkt_free_decoder(dec);
	return out;
}

Test(ptrepeat, scan_finds_every_timing_packet)
{
	struct stream *s = make_stream(1000000);
	struct ptshift_scan scan;
	struct rv_error err = { 0 };

	cr_assert_eq(ptshift_scan(&scan, s->bytes, s->size, &err), 0, "%s", err.message);
	cr_expect_eq(scan.nr_psb, 2);
	cr_expect_eq(scan.nr_tma, 2);
	cr_expect_eq(scan.nr_tsc, 3);
	cr_expect_eq(scan.min_tsc, 1000000);
	cr_expect_eq(scan.max_tsc, 1005000);
	struct packets p = decode_all(s->bytes, s->size);
	cr_expect_eq(scan.nr_packets, p.n);
	for (size_t i = 0; i < scan.nr_tsc; i++)
		cr_expect_eq(s->bytes[scan.tsc_offsets[i]], 0x19, "TSC %zu is not at a TSC opcode",
			     i);
	free(p.p);
	ptshift_scan_release(&scan);
	free(s);
}

/* The heart of it: K copies, packet for packet the original, TSCs moved, and
 * each moved TSC still agreeing with its TMA and the MTCs after it. */
Test(ptrepeat, copies_are_the_original_moved_in_time)
{
	enum { K = 5 };
	struct stream *s = make_stream(0x7d7c8629d2fb3ULL);
	struct ptshift_scan scan;
	struct rv_error err = { 0 };
	uint64_t period;

	cr_assert_eq(ptshift_scan(&scan, s->bytes, s->size, &err), 0, "%s", err.message);
	cr_assert_eq(
		ptshift_period(&period, scan.max_tsc - scan.min_tsc + 1, RATIO_N, MTC_PERIOD, &err),
		0, "%s", err.message);
	uint8_t *out = malloc(K * s->size);
	cr_assert_not_null(out);
	cr_assert_eq(ptshift_repeat(out, K * s->size, &scan, K, period, &err), 0, "%s",
		     err.message);

	struct packets orig = decode_all(s->bytes, s->size);
	struct packets rep = decode_all(out, K * s->size);
	cr_assert_eq(rep.n, K * orig.n);
	uint64_t prev_tsc = 0;
	for (size_t k = 0; k < K; k++) {
		uint64_t tsc = 0;

		for (size_t i = 0; i < orig.n; i++) {
			const struct pt_packet *o = &orig.p[i], *r = &rep.p[k * orig.n + i];

			cr_assert_eq(r->type, o->type, "copy %zu packet %zu", k, i);
			if (o->type != ppt_tsc) {
				cr_assert_eq(memcmp(r, o, sizeof(*r)), 0, "copy %zu packet %zu", k,
					     i);
			} else {
				cr_assert_eq(r->payload.tsc.tsc, o->payload.tsc.tsc + k * period,
					     "copy %zu packet %zu", k, i);
				tsc = r->payload.tsc.tsc;
				cr_assert_gt(tsc, prev_tsc, "time goes back at copy %zu", k);
				prev_tsc = tsc;
			}
			if (r->type == ppt_tma) {
				cr_expect_eq(r->payload.tma.ctc, (uint16_t)(tsc / RATIO_N));
				cr_expect_eq(r->payload.tma.fc, tsc % RATIO_N);
			}
		}
		/* Bytes too: only the TSC packets' payloads differ. */
		size_t differ = 0;
		for (size_t b = 0; b < s->size; b++)
			differ += out[k * s->size + b] != s->bytes[b];
		cr_expect_leq(differ, k ? 7 * scan.nr_tsc : 0, "copy %zu", k);
	}
	free(orig.p);
	free(rep.p);
	free(out);
	ptshift_scan_release(&scan);
	free(s);
}

Test(ptrepeat, one_copy_is_the_original)
{
	struct stream *s = make_stream(5000);
	struct ptshift_scan scan;
	struct rv_error err = { 0 };
	uint8_t out[STREAM_CAP];

	cr_assert_eq(ptshift_scan(&scan, s->bytes, s->size, &err), 0, "%s", err.message);
	cr_assert_eq(ptshift_repeat(out, s->size, &scan, 1, 1, &err), 0, "%s", err.message);
	cr_expect_eq(memcmp(out, s->bytes, s->size), 0);
	ptshift_scan_release(&scan);
	free(s);
}

/* A period is a whole number of CTC wraps: the CTC's low 16 bits (TMA), the
 * bits an MTC carries and the TSC's phase within a CTC tick (TMA's fast
 * counter) are the same at t and t + period, for any t. */
Test(ptrepeat, period_keeps_tma_and_mtc_true)
{
	static const uint64_t ratios[] = { 1, 3, 100, 133, 511 };
	struct rv_error err = { 0 };

	for (size_t r = 0; r < sizeof(ratios) / sizeof(ratios[0]); r++) {
		for (unsigned mtc_period = 0; mtc_period <= 15; mtc_period++) {
			uint64_t n = ratios[r], period;

			cr_assert_eq(ptshift_period(&period, 12345678, n, mtc_period, &err), 0,
				     "%s", err.message);
			cr_expect_geq(period, 12345678);
			for (uint64_t t = 0x7d7c8629d2fb3ULL; t < 0x7d7c8629d2fb3ULL + 5 * n;
			     t += 1 + n / 3) {
				uint64_t ctc = t / n, ctc2 = (t + period) / n;

				cr_expect_eq(ctc & 0xffff, ctc2 & 0xffff);
				cr_expect_eq((ctc >> mtc_period) & 0xff,
					     (ctc2 >> mtc_period) & 0xff);
				cr_expect_eq(t % n, (t + period) % n);
			}
			/* and it is the smallest such period */
			uint64_t unit = n << (mtc_period + 8 > 16 ? mtc_period + 8 : 16);
			cr_expect_lt(period - 12345678, unit);
		}
	}
	uint64_t period;
	cr_expect_eq(ptshift_period(&period, 777, 0, 3, &err), 0, "%s", err.message);
	cr_expect_eq(period, 777, "without a CTC relation the period is what was asked");
}

Test(ptrepeat, refuses_what_cannot_be_repeated)
{
	struct rv_error err = { 0 };
	struct ptshift_scan scan;
	uint64_t period;

	/* Not beginning with a PSB: a snapshot's cut stream. */
	struct stream *s = make_stream(1000000);
	cr_expect_lt(ptshift_scan(&scan, s->bytes + 1, s->size - 1, &err), 0);
	cr_expect_neq(err.message[0], '\0');
	ptshift_scan_release(&scan);

	/* A byte libipt cannot read as a packet. */
	uint8_t bad[64];
	memcpy(bad, s->bytes, 16); /* the PSB */
	bad[16] = 0x02;		   /* an extended opcode ... */
	bad[17] = 0x01;		   /* ... that does not exist */
	memset(bad + 18, 0, sizeof(bad) - 18);
	rv_error_clear(&err);
	cr_expect_lt(ptshift_scan(&scan, bad, sizeof(bad), &err), 0);
	cr_expect(strstr(err.message, "offset 16") != NULL, "%s", err.message);
	ptshift_scan_release(&scan);

	/* Copies that would overlap in time, or run past 56 bits. */
	cr_assert_eq(ptshift_scan(&scan, s->bytes, s->size, &err), 0, "%s", err.message);
	uint8_t *out = malloc(3 * s->size);
	cr_assert_not_null(out);
	cr_expect_lt(ptshift_repeat(out, 3 * s->size, &scan, 3, 5000, &err), 0);
	cr_expect_lt(ptshift_repeat(out, 3 * s->size, &scan, 3, PTSHIFT_TSC_MAX / 2, &err), 0);
	cr_expect_lt(ptshift_repeat(out, 3 * s->size - 1, &scan, 3, 6000, &err), 0);
	cr_expect_eq(ptshift_repeat(out, 3 * s->size, &scan, 3, 5001, &err), 0, "%s", err.message);
	cr_expect_lt(ptshift_period(&period, 1, RATIO_N, 16, &err), 0);
	cr_expect_lt(ptshift_period(&period, PTSHIFT_TSC_MAX, RATIO_N, 0, &err), 0);
	free(out);
	ptshift_scan_release(&scan);
	free(s);
}
