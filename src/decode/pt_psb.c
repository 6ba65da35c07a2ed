/* pt_psb.c: PSB+ headers in an Intel PT buffer, read with libipt's packet
 * decoder: where they are, and the FUP and TSC they hold. The decoder cuts
 * chunks at them and resumes at them after an error (see
 * pt_decoder_internal.h).
 *
 * Not here: decoding the trace between them (pt_walk.c), chunks (pt_pool.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "decode/pt_decoder.h"
#include "decode/pt_decoder_internal.h"

/* How far back from an error's position a PSB+ read ahead may start. */
#define MAX_PSB_HEADER 512

_Static_assert(RV_PT_PSB_BYTES == 16, "a PSB packet is 16 bytes");

static const uint8_t psb_pattern[RV_PT_PSB_BYTES] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						      0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						      0x02, 0x82, 0x02, 0x82 };

uint64_t ptd_apply_ip(uint64_t last, const struct pt_packet_ip *p, bool *valid)
{
	*valid = true;
	switch (p->ipc) {
	case pt_ipc_update_16:
		return (last & ~0xffffull) | (p->ip & 0xffffull);
	case pt_ipc_update_32:
		return (last & ~0xffffffffull) | (p->ip & 0xffffffffull);
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(p->ip << 16) >> 16);
	case pt_ipc_update_48:
		return (last & ~0xffffffffffffull) | (p->ip & 0xffffffffffffull);
	case pt_ipc_full:
		return p->ip;
	default:
		*valid = false;
		return last;
	}
}

/* Reads the PSB+ at offset (which must hold the PSB pattern): true when it
 * parses up to its PSBEND. */
bool ptd_parse_psb(const uint8_t *buf, size_t size, size_t offset, const struct pt_config *base,
		   struct ptd_psb *out)
{
	struct pt_config config = *base;
	struct pt_packet_decoder *dec;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	if (offset >= size || size - offset < sizeof(psb_pattern))
		return false;
	config.begin = (uint8_t *)buf + offset;
	config.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return false;
	if (pt_pkt_sync_set(dec, 0) < 0)
		goto out;

	struct pt_packet pkt;

	if (pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0 || pkt.type != ppt_psb)
		goto out;
	for (int i = 0; i < 64; i++) {
		uint64_t pos;

		if (pt_pkt_get_offset(dec, &pos) < 0 || pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0)
			goto out;
		switch (pkt.type) {
		case ppt_psbend:
			out->end = offset + (size_t)pos;
			ok = true;
			goto out;
		case ppt_fup: {
			bool valid;
			uint64_t ip = ptd_apply_ip(0, &pkt.payload.ip, &valid);

			out->has_ip = valid;
			out->ip = ip;
			break;
		}
		case ppt_tsc:
			out->has_tsc = true;
			out->tsc = pkt.payload.tsc.tsc;
			break;
		case ppt_pad:
		case ppt_tma:
		case ppt_cbr:
		case ppt_mode:
		case ppt_pip:
		case ppt_vmcs:
		case ppt_mtc:
		case ppt_cyc:
		case ppt_mnt:
			break;
		default:
			goto out; /* not a PSB+ header: a pattern inside other packets */
		}
	}
out:
	pt_pkt_free_decoder(dec);
	return ok;
}

/* A PSB's 16 bytes hold a whole 8-byte word at an offset that is a
 * multiple of 8 (counted from buf), which reads as one of these two: the
 * search looks at those words alone, and at the bytes around a hit (the
 * words read little-endian: PT is x86's). */
#define PSB_WORD_EVEN 0x8202820282028202ull /* 02 82 02 82 ... in memory */
#define PSB_WORD_ODD  0x0282028202820282ull /* 82 02 82 02 ... */

#ifdef __SSE2__
/* Whether the 16 bytes at p hold a 32-bit half of either word. */
static inline __m128i psb_halves(const uint8_t *p)
{
	const __m128i even = _mm_set1_epi32((int)(uint32_t)PSB_WORD_EVEN);
	const __m128i odd = _mm_set1_epi32((int)(uint32_t)PSB_WORD_ODD);
	__m128i v = _mm_loadu_si128((const __m128i *)p);

	return _mm_or_si128(_mm_cmpeq_epi32(v, even), _mm_cmpeq_epi32(v, odd));
}

/* word on, 64 bytes at a time, to the first 64 bytes that may hold a
 * PSB's word (one of their 32-bit halves is half of one), or to where
 * fewer are left: most of a trace is passed at a few instructions for
 * eight words. */
static size_t psb_skip(const uint8_t *buf, size_t size, size_t word)
{
	for (; size - word >= 64; word += 64) {
		const uint8_t *p = buf + word;
		__m128i hits = _mm_or_si128(_mm_or_si128(psb_halves(p), psb_halves(p + 16)),
					    _mm_or_si128(psb_halves(p + 32), psb_halves(p + 48)));

		if (_mm_movemask_epi8(hits))
			break;
	}
	return word;
}
#endif

size_t rv_pt_next_psb_pattern(const uint8_t *buf, size_t size, size_t from)
{
	if (from >= size || size - from < sizeof(psb_pattern))
		return size;
	/* The first PSB at or after from has its word at or after the first
	 * multiple of 8 from there, and no PSB before it has a word at all. */
	for (size_t word = (from + 7) & ~(size_t)7; word <= size - 8; word += 8) {
		uint64_t w;

#ifdef __SSE2__
		word = psb_skip(buf, size, word);
		if (word > size - 8)
			break;
#endif
		memcpy(&w, buf + word, sizeof(w));
		if (__builtin_expect(w != PSB_WORD_EVEN && w != PSB_WORD_ODD, 1))
			continue;
		/* The PSB holding this word begins 0 to 7 bytes before it. */
		for (size_t at = word >= from + 7 ? word - 7 : from; at <= word; at++)
			if (size - at >= sizeof(psb_pattern) &&
			    !memcmp(buf + at, psb_pattern, sizeof(psb_pattern)))
				return at;
	}
	return size;
}

/* The first PSB at or after from whose PSB+ parses; size if none. */
size_t ptd_find_psb(const uint8_t *buf, size_t size, size_t from, const struct pt_config *base,
		    struct ptd_psb *info)
{
	for (size_t at; (at = rv_pt_next_psb_pattern(buf, size, from)) < size; from = at + 2)
		if (ptd_parse_psb(buf, size, at, base, info))
			return at;
	memset(info, 0, sizeof(*info));
	return size;
}

/* The PSB whose PSB+ header ends at psbend (libipt's read-ahead stops
 * there), or size when psbend is not at the end of one. */
size_t ptd_psb_ending_at(const uint8_t *buf, size_t size, size_t psbend,
			 const struct pt_config *base)
{
	size_t lo = psbend > MAX_PSB_HEADER ? psbend - MAX_PSB_HEADER : 0;
	size_t best = size;

	if (psbend + 2 > size || buf[psbend] != 0x02 || buf[psbend + 1] != 0x23)
		return size;
	for (size_t at = lo; (at = rv_pt_next_psb_pattern(buf, psbend, at)) < psbend; at += 2)
		best = at;
	if (best == size)
		return size;

	struct ptd_psb info;

	if (!ptd_parse_psb(buf, size, best, base, &info) || info.end != psbend)
		return size;
	return best;
}

/* The last PSB in [lo, hi) whose PSB+ parses; hi if none. */
size_t ptd_last_psb_before(const uint8_t *buf, size_t size, size_t lo, size_t hi,
			   const struct pt_config *base)
{
	for (size_t at = hi; at-- > lo;) {
		if (buf[at] != 0x02 || at + sizeof(psb_pattern) > size ||
		    memcmp(buf + at, psb_pattern, sizeof(psb_pattern)) != 0)
			continue;
		/* the pattern's first byte: step back over a longer run */
		while (at >= lo + 2 && at - 2 + sizeof(psb_pattern) <= size &&
		       memcmp(buf + at - 2, psb_pattern, sizeof(psb_pattern)) == 0)
			at -= 2;

		struct ptd_psb info;

		if (ptd_parse_psb(buf, size, at, base, &info))
			return at;
	}
	return hi;
}
