/* pt_query.c: libipt 2.0's query decoder over the packets the fast walker's
 * traces hold (see pt_query.h for the contract).
 *
 * The shape is libipt's (libipt/src/pt_query_decoder.c of libipt 2.0): the
 * kind of the packet at the current position is fetched ahead ("next"),
 * a read-ahead decodes the packets that only update the state until one
 * that answers a query or makes an event, events wait in queues for the
 * packet they bind to (the PSBEND, a TIP, a FUP), and a packet that
 * publishes an event is decoded again, as often as events bound to it
 * wait, before it is consumed. Keeping that shape is what makes the
 * answers the same, on odd traces too.
 *
 * Time is libipt's pt_time and pt_time_cal done again: the packets update
 * q->time and q->tcal where libipt's decoder functions apply them (in a
 * PSB+ too, where a TSC calibrates and a CBR does not start the calibration
 * over), and a query's answer copies q->time into q->last, which is what
 * rv_pq_time reports (libipt's last_time).
 *
 * Not here: errata but BDM70 (SKD022 and SKL014 are the instruction flow
 * decoders' alone), power and PTWRITE packets (rv_pq_init leaves chunks
 * with them to libipt), the walk (pt_fast.c).
 */
#include "decode/pt_query.h"

#include <string.h>

/* Packet kinds; kind_flags has libipt's decoder-function flags of each. */
enum {
	K_PAD = 1,
	K_PSB,
	K_PSBEND,
	K_TNT8,
	K_TNT64,
	K_TIP,
	K_PGE,
	K_PGD,
	K_FUP,
	K_MODE,
	K_PIP,
	K_VMCS,
	K_STOP,
	K_CBR,
	K_OVF,
	K_TSC,
	K_TMA,
	K_MTC,
	K_CYC,
};

enum { F_TNT = 1, F_TIP = 2, F_EVENT = 4, F_PSBEND = 8, F_FUP = 16 };

_Static_assert((int)K_TIP == (int)RV_PQ_KIND_TIP && (int)K_TNT8 == (int)RV_PQ_KIND_TNT8 &&
		       (int)K_TNT64 == (int)RV_PQ_KIND_TNT64,
	       "pt_query.h knows a TIP's, a TNT-8's and a TNT-64's kind");

static const uint8_t kind_flags[K_CYC + 1] = {
	[K_PSBEND] = F_PSBEND,
	[K_TNT8] = F_TNT,
	[K_TNT64] = F_TNT,
	[K_TIP] = F_TIP,
	[K_PGE] = F_EVENT,
	[K_PGD] = F_EVENT,
	[K_FUP] = F_FUP,
	[K_MODE] = F_EVENT,
	[K_PIP] = F_EVENT,
	[K_VMCS] = F_EVENT,
	[K_STOP] = F_EVENT,
	[K_CBR] = F_EVENT,
	[K_OVF] = F_EVENT | F_PSBEND,
};

#define PSB_BYTES 16

/* ---- packets ---- */

/* TNT-8: every even opcode but PAD's and the extended opcodes'. */
static inline bool is_tnt8(uint8_t opc)
{
	return !(opc & 1) && opc > 2;
}

static inline bool is_tip(uint8_t opc)
{
	return (opc & 0x1f) == 0x0d;
}

/* What the read-ahead makes of a packet's first byte, one load instead of
 * a test after another: the kind of a packet it stops at (a TNT-8, a TIP,
 * a TIP.PGE or a TIP.PGD, all below B_RUN), or one of these: */
enum {
	B_RUN = 16,
	B_PAD = B_RUN,
	B_CYC, /* a CYC with extension bytes */
	B_MTC,
	B_EXT,	     /* 0x02: a TNT-64 when 0xa3 follows */
	B_OTHER,     /* read_ahead_slow's */
	B_CYC1 = 32, /* and up: a CYC without extension bytes, of b - B_CYC1 cycles */
};

#define BYTE_CLASS(c)                                                                              \
	((c) == 0	      ? B_PAD                                                              \
	 : (c) == 2	      ? B_EXT                                                              \
	 : !((c)&1)	      ? K_TNT8                                                             \
	 : ((c)&7) == 3	      ? B_CYC1 + ((c) >> 3)                                                \
	 : ((c)&7) == 7	      ? B_CYC                                                              \
	 : ((c)&0x1f) == 0x0d ? K_TIP                                                              \
	 : ((c)&0x1f) == 0x11 ? K_PGE                                                              \
	 : ((c)&0x1f) == 0x01 ? K_PGD                                                              \
	 : (c) == 0x59	      ? B_MTC                                                              \
			      : B_OTHER)
#define BYTE_CLASS4(c) BYTE_CLASS(c), BYTE_CLASS((c) + 1), BYTE_CLASS((c) + 2), BYTE_CLASS((c) + 3)
#define BYTE_CLASS16(c)                                                                            \
	BYTE_CLASS4(c), BYTE_CLASS4((c) + 4), BYTE_CLASS4((c) + 8), BYTE_CLASS4((c) + 12)
#define BYTE_CLASS64(c)                                                                            \
	BYTE_CLASS16(c), BYTE_CLASS16((c) + 16), BYTE_CLASS16((c) + 32), BYTE_CLASS16((c) + 48)

static const uint8_t byte_class[256] = { BYTE_CLASS64(0), BYTE_CLASS64(64), BYTE_CLASS64(128),
					 BYTE_CLASS64(192) };

/* The kind of the packet at pos, as libipt's pt_df_fetch finds it: 0 and
 * -pte_eos at the end, 0 and RV_PQ_UNMODELLED for a kind not modelled. */
static int fetch_slow(const uint8_t *pos, const uint8_t *end, uint8_t *kind)
{
	uint8_t opc;

	*kind = 0;
	if (pos >= end)
		return -pte_eos;
	opc = pos[0];
	if (opc == 0x00) {
		*kind = K_PAD;
		return 0;
	}
	if (opc == 0x02) {
		if (end - pos < 2)
			return -pte_eos;
		switch (pos[1]) {
		case 0x82:
			*kind = K_PSB;
			return 0;
		case 0x23:
			*kind = K_PSBEND;
			return 0;
		case 0xa3:
			*kind = K_TNT64;
			return 0;
		case 0x43:
			*kind = K_PIP;
			return 0;
		case 0xc8:
			*kind = K_VMCS;
			return 0;
		case 0x83:
			*kind = K_STOP;
			return 0;
		case 0x03:
			*kind = K_CBR;
			return 0;
		case 0xf3:
			*kind = K_OVF;
			return 0;
		case 0x73:
			*kind = K_TMA;
			return 0;
		default:
			return RV_PQ_UNMODELLED;
		}
	}
	if (opc == 0x99) {
		*kind = K_MODE;
		return 0;
	}
	if (opc == 0x19) {
		*kind = K_TSC;
		return 0;
	}
	if (opc == 0x59) {
		*kind = K_MTC;
		return 0;
	}
	if (!(opc & 1)) {
		*kind = K_TNT8;
		return 0;
	}
	if ((opc & 3) == 3) {
		*kind = K_CYC;
		return 0;
	}
	switch (opc & 0x1f) {
	case 0x0d:
		*kind = K_TIP;
		return 0;
	case 0x11:
		*kind = K_PGE;
		return 0;
	case 0x01:
		*kind = K_PGD;
		return 0;
	case 0x1d:
		*kind = K_FUP;
		return 0;
	default:
		/* what libipt does not know */
		return RV_PQ_UNMODELLED;
	}
}

/* fetch_slow, the common kinds first. */
static inline int fetch_kind(const uint8_t *pos, const uint8_t *end, uint8_t *kind)
{
	if (pos < end) {
		if (is_tnt8(pos[0])) {
			*kind = K_TNT8;
			return 0;
		}
		if (is_tip(pos[0])) {
			*kind = K_TIP;
			return 0;
		}
	}
	return fetch_slow(pos, end, kind);
}

static uint64_t read_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

/* read_le of 8 bytes, in one load where the order is the same. */
static inline uint64_t read_le64(const uint8_t *p)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
#else
	return read_le(p, 8);
#endif
}

/* A CYC packet's size and (when value is not NULL) its cycles; -pte_eos
 * when cut, RV_PQ_UNMODELLED for one of more than 8 extension bytes (whose
 * bits libipt shifts past 64). */
static inline int read_cyc(const uint8_t *pos, const uint8_t *end, uint64_t *value)
{
	uint64_t cyc = pos[0] >> 3;
	const uint8_t *p = pos + 1;

	if (pos[0] & 4) {
		for (unsigned shift = 5;; shift += 7) {
			if (p >= end)
				return -pte_eos;
			if (shift > 57)
				return RV_PQ_UNMODELLED;
			cyc |= (uint64_t)(*p >> 1) << shift;
			if (!(*p++ & 1))
				break;
		}
	}
	if (value)
		*value = cyc;
	return (int)(p - pos);
}

/* An IP packet's compression and payload (libipt's pt_pkt_read_ip):
 * returns its size, -pte_eos when cut, RV_PQ_UNMODELLED when malformed. */
static inline int read_ip(const struct rv_pq *q, unsigned *ipc, uint64_t *ip)
{
	static const int8_t bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };
	int n;

	*ipc = q->pos[0] >> 5;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (q->pos < q->end8) {
		/* one load of the 8 bytes after the opcode, all in the
		 * buffer, masked to the packet's payload */
		static const uint64_t payload[8] = {
			0, 0xffff, 0xffffffff, 0xffffffffffff, 0xffffffffffff, 0, ~0ull, 0
		};
		uint64_t v;

		n = bytes[*ipc];
		if (n < 0)
			return RV_PQ_UNMODELLED;
		memcpy(&v, q->pos + 1, sizeof(v));
		*ip = v & payload[*ipc];
		return 1 + n;
	}
#endif
	n = bytes[*ipc];
	if (n < 0)
		return RV_PQ_UNMODELLED;
	if (q->end - q->pos < 1 + n)
		return -pte_eos;
	*ip = read_le(q->pos + 1, (unsigned)n);
	return 1 + n;
}

/* libipt's pt_last_ip_update_ip. */
static inline void update_ip(struct rv_pq *q, unsigned ipc, uint64_t ip)
{
	switch (ipc) {
	case 0:
		q->have_ip = false; /* suppressed */
		return;
	case 1:
		q->last_ip = (q->last_ip & ~0xffffull) | ip;
		break;
	case 2:
		q->last_ip = (q->last_ip & ~0xffffffffull) | ip;
		break;
	case 3:
		q->last_ip = (uint64_t)((int64_t)(ip << 16) >> 16);
		break;
	case 4:
		q->last_ip = (q->last_ip & ~0xffffffffffffull) | ip;
		break;
	default:
		q->last_ip = ip;
		break;
	}
	q->have_ip = true;
}

/* libipt's pt_last_ip_query: 0 when there is an IP; *ip is 0 when not. */
static int query_ip(const struct rv_pq *q, uint64_t *ip)
{
	if (!q->have_ip) {
		if (ip)
			*ip = 0;
		return -1;
	}
	if (ip)
		*ip = q->last_ip;
	return 0;
}

/* Decodes an IP packet into the last IP; returns its size, or an error. */
static inline int decode_ip(struct rv_pq *q)
{
	unsigned ipc;
	uint64_t ip;
	int size = read_ip(q, &ipc, &ip);

	if (size > 0)
		update_ip(q, ipc, ip);
	return size;
}

/* A fixed-size packet's bytes are all there: 0, or -pte_eos. */
static inline int whole(const struct rv_pq *q, long size)
{
	return q->end - q->pos < size ? -pte_eos : 0;
}

/* The size of the packet of kind at pos, checked as libipt's packet
 * decoder reads it: -pte_eos when cut, RV_PQ_UNMODELLED when malformed. */
static int packet_size(const uint8_t *pos, const uint8_t *end, uint8_t kind)
{
	static const int8_t ip_bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };
	long left = end - pos;
	int size;

	switch (kind) {
	case K_PAD:
	case K_TNT8:
		return 1;
	case K_PSBEND:
	case K_STOP:
	case K_OVF:
		return 2;
	case K_MTC:
		return left < 2 ? -pte_eos : 2;
	case K_TMA:
		if (left < 7)
			return -pte_eos;
		/* libipt refuses reserved bits set */
		return pos[4] || (pos[6] & ~1) ? RV_PQ_UNMODELLED : 7;
	case K_TSC:
		return left < 8 ? -pte_eos : 8;
	case K_CYC:
		return read_cyc(pos, end, NULL);
	case K_MODE:
		if (left < 2)
			return -pte_eos;
		return (pos[1] & 0xe0) > 0x20 ? RV_PQ_UNMODELLED : 2;
	case K_CBR:
		return left < 4 ? -pte_eos : 4;
	case K_VMCS:
		return left < 7 ? -pte_eos : 7;
	case K_PIP:
		return left < 8 ? -pte_eos : 8;
	case K_TNT64:
		if (left < 8)
			return -pte_eos;
		return read_le(pos + 2, 6) ? 8 : RV_PQ_UNMODELLED;
	case K_PSB:
		if (left < PSB_BYTES)
			return -pte_eos;
		for (int i = 0; i < PSB_BYTES; i += 2)
			if (pos[i] != 0x02 || pos[i + 1] != 0x82)
				return RV_PQ_UNMODELLED;
		return PSB_BYTES;
	default: /* TIP, TIP.PGE, TIP.PGD, FUP */
		size = ip_bytes[pos[0] >> 5];
		if (size < 0)
			return RV_PQ_UNMODELLED;
		return left < 1 + size ? -pte_eos : 1 + size;
	}
}

/* ---- the event queues (libipt's pt_event_queue) ---- */

/* An empty queue is at its start (dequeue puts it back there), so its end
 * alone says whether it holds an event: one load, where the TIP's checks
 * ask for every TIP. */
static inline bool pending(const struct rv_pq_queue *qu)
{
	return qu->end != 0;
}

static struct pt_event *enqueue(struct rv_pq_queue *qu)
{
	struct pt_event *ev;

	/* libipt's queue holds fewer; a full one is handed on */
	if (qu->end == sizeof(qu->ev) / sizeof(qu->ev[0]) - 2)
		return NULL;
	ev = &qu->ev[qu->end++];
	memset(ev, 0, sizeof(*ev));
	return ev;
}

static struct pt_event *dequeue(struct rv_pq_queue *qu)
{
	struct pt_event *ev;

	if (!pending(qu))
		return NULL;
	ev = &qu->ev[qu->begin++];
	if (qu->begin == qu->end)
		qu->begin = qu->end = 0; /* ev stays valid until the next enqueue */
	return ev;
}

static struct pt_event *find(struct rv_pq_queue *qu, enum pt_event_type type)
{
	for (uint8_t i = qu->begin; i < qu->end; i++)
		if (qu->ev[i].type == type)
			return &qu->ev[i];
	return NULL;
}

static struct pt_event *standalone(struct rv_pq *q)
{
	memset(&q->standalone, 0, sizeof(q->standalone));
	return &q->standalone;
}

/* ---- time (libipt's pt_time and pt_time_cal, as its query decoder
 * applies them: a configuration error is ignored, any other is not
 * modelled) ---- */

#define FCR_SHR 8

/* The distance from last_ctc to ctc, past one wrap of the bits MTC gives;
 * false when more than one. */
static bool ctc_delta(const struct rv_pq *q, uint32_t *delta, uint32_t ctc, uint32_t last_ctc)
{
	if (ctc < last_ctc) {
		ctc += 1u << (q->mtc_freq + 8);
		if (ctc < last_ctc)
			return false;
	}
	*delta = ctc - last_ctc;
	return true;
}

/* CTC ticks in TSC units; false without the CPUID 0x15 ratio. The last
 * answer is kept for the next question: an MTC asks twice, and most ask
 * for one MTC period. */
static bool ctc_fc(struct rv_pq *q, uint64_t *fc, uint32_t ctc)
{
	if (!q->ctc_eax || !q->ctc_ebx)
		return false;
	if (ctc != q->memo.ctc) {
		q->memo.ctc = ctc;
		q->memo.fc = ((uint64_t)ctc * q->ctc_ebx) / q->ctc_eax;
		q->memo.step_cyc = q->memo.fc == q->memo.cal_fc ? q->memo.cal_cyc : 0;
	}
	*fc = q->memo.fc;
	return true;
}

static void tcal_init(struct rv_pq_tcal *tcal)
{
	memset(tcal, 0, sizeof(*tcal));
}

static void time_tsc(struct rv_pq *q, uint64_t tsc)
{
	struct rv_pq_time *t = &q->time;

	t->now.have_tsc = true;
	t->have_tma = t->have_mtc = false;
	t->now.tsc = t->base = tsc;
	t->ctc = 0;
	t->fc = 0;
	t->now.lost_mtc = t->now.lost_cyc = 0;
}

/* A TSC packet (tsc: its 56 bits), in a PSB+ or not. */
static int apply_tsc(struct rv_pq *q, uint64_t tsc, bool header)
{
	struct rv_pq_tcal *tcal = &q->tcal;
	uint64_t last_tsc = tcal->tsc, cyc = tcal->cyc - tcal->cyc_at_tsc;

	tcal->tsc = tsc;
	tcal->cyc_at_tsc = tcal->cyc;
	if (header && last_tsc && cyc && !tcal->have_mtc) {
		uint64_t now = tsc, delta;

		if (now < last_tsc) {
			now += 1ull << 56;
			if (now < last_tsc)
				return RV_PQ_UNMODELLED;
		}
		delta = now - last_tsc;
		if (delta & ~(~0ull >> FCR_SHR))
			return RV_PQ_UNMODELLED;
		tcal->fcr = (delta << FCR_SHR) / cyc;
	}
	time_tsc(q, tsc);
	return 0;
}

/* A CBR packet's ratio (not 0), in a PSB+ or not: one out of a PSB+ is a
 * change of frequency, which starts the calibration over. */
static void apply_cbr(struct rv_pq *q, uint8_t ratio, bool header)
{
	if (!header)
		tcal_init(&q->tcal);
	if (q->nom_freq)
		q->tcal.fcr = ((uint64_t)q->nom_freq << FCR_SHR) / ratio;
}

static int apply_tma(struct rv_pq *q, uint32_t ctc, uint64_t fc)
{
	struct rv_pq_time *t = &q->time;
	uint32_t mtc_hi = q->mtc_freq + 8u;

	if (!t->now.have_tsc || t->have_tma || t->have_mtc)
		return RV_PQ_UNMODELLED;
	t->have_tma = true;
	t->base -= fc;
	t->fc += fc;
	if (mtc_hi <= 16)
		t->have_mtc = true;
	t->ctc = t->ctc_cyc = ctc & ((1u << mtc_hi) - 1u);
	return 0;
}

static int tcal_mtc(struct rv_pq *q, uint32_t ctc)
{
	struct rv_pq_tcal *tcal = &q->tcal;
	uint32_t last_ctc = tcal->ctc, delta;
	uint64_t cyc = tcal->cyc - tcal->cyc_at_mtc, fc;

	if (!tcal->have_mtc) {
		tcal->cyc_at_mtc = tcal->cyc;
		tcal->ctc = ctc;
		tcal->have_mtc = true;
		return 0;
	}
	if (!cyc)
		return 0;
	tcal->cyc_at_mtc = tcal->cyc;
	tcal->ctc = ctc;
	if (!ctc_delta(q, &delta, ctc, last_ctc))
		return RV_PQ_UNMODELLED;
	if (!ctc_fc(q, &fc, delta))
		return 0;
	if (fc & ~(~0ull >> FCR_SHR))
		return RV_PQ_UNMODELLED;
	/* the last quotient again when asked again (periods of as many
	 * cycles are the rule) */
	if (fc != q->memo.cal_fc || cyc != q->memo.cal_cyc) {
		q->memo.cal_fc = fc;
		q->memo.cal_cyc = cyc;
		q->memo.cal_fcr = (fc << FCR_SHR) / cyc;
		q->memo.step_cyc = fc == q->memo.fc ? cyc : 0;
	}
	tcal->fcr = q->memo.cal_fcr;
	return 0;
}

static int time_mtc(struct rv_pq *q, uint32_t ctc)
{
	struct rv_pq_time *t = &q->time;
	uint32_t last_ctc = t->ctc, delta;
	bool have_mtc = t->have_mtc;
	uint64_t fc;

	if (t->now.have_tsc && !t->have_tma)
		return 0;
	if (t->fc || t->now.lost_cyc || !have_mtc)
		t->ctc_cyc = ctc;
	t->have_mtc = true;
	t->fc = 0;
	t->ctc = ctc;
	t->now.lost_cyc = 0;
	if (!have_mtc) {
		uint32_t lo = ctc & 0xffffu, hi = ctc & ~0xffffu;

		if (!t->have_tma)
			return 0;
		if (last_ctc & ~0xffffu)
			return RV_PQ_UNMODELLED;
		if (lo < last_ctc) {
			hi -= 1u << 16;
			hi &= 0xffu << q->mtc_freq;
		}
		last_ctc |= hi;
	}
	if (!ctc_delta(q, &delta, ctc, last_ctc))
		return RV_PQ_UNMODELLED;
	if (!ctc_fc(q, &fc, delta))
		return 0;
	t->now.tsc = t->base = t->base + fc;
	return 0;
}

/* An MTC packet's 8 bits of CTC. */
static int apply_mtc(struct rv_pq *q, uint8_t payload)
{
	uint32_t ctc = (uint32_t)payload << q->mtc_freq;
	int status = tcal_mtc(q, ctc);

	return status < 0 ? status : time_mtc(q, ctc);
}

static inline int apply_cyc(struct rv_pq *q, uint64_t cyc)
{
	struct rv_pq_time *t = &q->time;
	uint64_t fcr, fc;

	q->tcal.cyc += cyc;
	fcr = q->tcal.fcr;
	if (!fcr) {
		t->now.lost_cyc++;
		return 0;
	}
	fc = t->fc;
	if (!fc && t->ctc != t->ctc_cyc) {
		/* a CYC over several MTC periods: the earlier ones' share off */
		uint32_t delta;
		uint64_t old;

		if (!ctc_delta(q, &delta, t->ctc, t->ctc_cyc))
			return RV_PQ_UNMODELLED;
		/* without the CPUID 0x15 ratio, libipt drops the CYC */
		if (!ctc_fc(q, &old, delta))
			return 0;
		old = (old << FCR_SHR) / fcr;
		cyc = cyc < old ? 0 : cyc - old;
	}
	fc += (cyc * fcr) >> FCR_SHR;
	t->fc = fc;
	t->now.tsc = t->base + fc;
	return 0;
}

/* apply_cyc when it is a product and a sum (calibrated, and no earlier
 * MTC periods' share to take off): false, and nothing done, when not. */
static inline bool apply_cyc_calibrated(struct rv_pq *q, uint64_t cyc)
{
	struct rv_pq_time *t = &q->time;
	uint64_t fcr = q->tcal.fcr, fc = t->fc;

	if (!fcr || (!fc && t->ctc != t->ctc_cyc))
		return false;
	q->tcal.cyc += cyc;
	fc += (cyc * fcr) >> FCR_SHR;
	t->fc = fc;
	t->now.tsc = t->base + fc;
	return true;
}

/* libipt's pt_qry_add_event_time: the time goes in whether known or not. */
static void add_event_time(const struct rv_pq *q, struct pt_event *ev)
{
	ev->tsc = q->time.now.tsc;
	ev->lost_mtc = q->time.now.lost_mtc;
	ev->lost_cyc = q->time.now.lost_cyc;
	if (q->time.now.have_tsc)
		ev->has_tsc = 1;
}

/* A timing packet at pos (TSC, TMA, MTC, CYC) applied, in a PSB+ or not;
 * pos moves past it. */
static int decode_timing(struct rv_pq *q, uint8_t kind, bool header)
{
	const uint8_t *p = q->pos;
	uint64_t cyc = 0; /* (set by read_cyc when it is read: for the compiler) */
	int size, status;

	size = kind == K_CYC ? read_cyc(p, q->end, &cyc) : packet_size(p, q->end, kind);
	if (size < 0)
		return size;
	switch (kind) {
	case K_TSC:
		status = apply_tsc(q, read_le(p + 1, 7), header);
		break;
	case K_TMA:
		status =
			apply_tma(q, (uint32_t)read_le(p + 2, 2), p[5] | (uint64_t)(p[6] & 1) << 8);
		break;
	case K_MTC:
		status = apply_mtc(q, p[1]);
		break;
	default:
		status = apply_cyc(q, cyc);
		break;
	}
	if (status < 0)
		return status;
	q->pos += size;
	return 0;
}

/* libipt's pt_qry_add_event_ip. */
static void add_event_ip(const struct rv_pq *q, struct pt_event *ev, uint64_t *ip)
{
	if (query_ip(q, ip) < 0)
		ev->ip_suppressed = 1;
}

/* libipt's pt_qry_reset (the position and the next packet stay). */
static void reset_state(struct rv_pq *q)
{
	q->tnt = q->tnt_index = 0;
	q->last_ip = 0;
	q->have_ip = false;
	q->enabled = q->consume_packet = false;
	q->event = NULL;
	q->psbend.begin = q->psbend.end = 0;
	q->tip.begin = q->tip.end = 0;
	q->fup.begin = q->fup.end = 0;
	tcal_init(&q->tcal);
}

/* ---- the packets' decoders (libipt's pt_qry_decode_*) ---- */

static int decode_tnt(struct rv_pq *q, int kind)
{
	uint64_t bits;
	int size, nbits;

	if (kind == K_TNT8) {
		bits = q->pos[0] >> 1;
		size = 1;
	} else {
		if (whole(q, 8) < 0)
			return -pte_eos;
		bits = read_le(q->pos + 2, 6);
		size = 8;
	}
	if (!bits)
		return RV_PQ_UNMODELLED;
	nbits = 63 - __builtin_clzll(bits);
	if (q->tnt_index || !nbits)
		return RV_PQ_UNMODELLED;
	q->tnt = bits;
	q->tnt_index = 1ull << (nbits - 1);
	q->pos += size;
	return 0;
}

static int decode_tip(struct rv_pq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	ev = dequeue(&q->tip);
	if (ev) {
		switch (ev->type) {
		case ptev_async_branch:
			add_event_ip(q, ev, &ev->variant.async_branch.to);
			q->consume_packet = true;
			break;
		case ptev_async_paging:
			add_event_ip(q, ev, &ev->variant.async_paging.ip);
			break;
		case ptev_async_vmcs:
			add_event_ip(q, ev, &ev->variant.async_vmcs.ip);
			break;
		case ptev_exec_mode:
			add_event_ip(q, ev, &ev->variant.exec_mode.ip);
			break;
		default:
			return RV_PQ_UNMODELLED;
		}
		q->event = ev;
		if (pending(&q->tip) || !q->consume_packet)
			return 0;
		q->consume_packet = false;
	}
	q->pos += size;
	return 0;
}

static int decode_pge(struct rv_pq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	if (!q->consume_packet) {
		uint64_t ip;

		if (query_ip(q, &ip) < 0)
			return RV_PQ_UNMODELLED;
		ev = standalone(q);
		ev->type = ptev_enabled;
		ev->variant.enabled.ip = ip;
		add_event_time(q, ev);
		q->tnt = q->tnt_index = 0;
		q->consume_packet = true;
		q->enabled = true;
	} else {
		ev = dequeue(&q->tip);
		if (!ev || ev->type != ptev_exec_mode)
			return RV_PQ_UNMODELLED;
		add_event_ip(q, ev, &ev->variant.exec_mode.ip);
	}
	q->event = ev;
	if (pending(&q->tip))
		return 0;
	q->consume_packet = false;
	q->pos += size;
	return 0;
}

static int decode_pgd(struct rv_pq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	ev = dequeue(&q->tip);
	if (ev) {
		uint64_t at = ev->variant.async_branch.from;

		switch (ev->type) {
		case ptev_async_branch:
			ev->type = ptev_async_disabled;
			ev->variant.async_disabled.at = at;
			add_event_ip(q, ev, &ev->variant.async_disabled.ip);
			break;
		case ptev_async_paging:
		case ptev_async_vmcs:
		case ptev_exec_mode:
			/* applied with tracing off: libipt gives them no IP */
			ev->ip_suppressed = 1;
			break;
		default:
			return RV_PQ_UNMODELLED;
		}
	} else {
		ev = standalone(q);
		ev->type = ptev_disabled;
		add_event_ip(q, ev, &ev->variant.disabled.ip);
		add_event_time(q, ev);
	}
	q->event = ev;
	if (pending(&q->tip))
		return 0;
	q->enabled = false;
	q->pos += size;
	return 0;
}

static int decode_fup(struct rv_pq *q)
{
	struct pt_event *ev;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	ev = dequeue(&q->fup);
	if (ev) {
		switch (ev->type) {
		case ptev_overflow:
			q->consume_packet = true;
			if (query_ip(q, &ev->variant.overflow.ip) < 0)
				return RV_PQ_UNMODELLED;
			break;
		case ptev_tsx:
			if (!ev->variant.tsx.aborted)
				q->consume_packet = true;
			add_event_ip(q, ev, &ev->variant.tsx.ip);
			break;
		default:
			return RV_PQ_UNMODELLED;
		}
		q->event = ev;
		if (pending(&q->fup) || !q->consume_packet)
			return 0;
		q->consume_packet = false;
	} else {
		uint64_t ip;

		/* an asynchronous branch, bound to the next TIP */
		if (query_ip(q, &ip) < 0)
			return RV_PQ_UNMODELLED;
		ev = enqueue(&q->tip);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_async_branch;
		ev->variant.async_branch.from = ip;
		add_event_time(q, ev);
	}
	q->pos += size;
	return 0;
}

/* MODE's leaf and bits: 0 (exec) or 1 (TSX), or an error. */
static int read_mode(const struct rv_pq *q, uint8_t *bits)
{
	if (whole(q, 2) < 0)
		return -pte_eos;
	*bits = q->pos[1];
	switch (*bits & 0xe0) {
	case 0x00:
		return 0;
	case 0x20:
		return 1;
	default:
		return RV_PQ_UNMODELLED;
	}
}

static enum pt_exec_mode exec_mode(uint8_t bits)
{
	if (bits & 1)
		return (bits & 2) ? ptem_unknown : ptem_64bit;
	return (bits & 2) ? ptem_32bit : ptem_16bit;
}

static int decode_mode(struct rv_pq *q)
{
	struct pt_event *ev;
	uint8_t bits;
	int leaf = read_mode(q, &bits);

	if (leaf < 0)
		return leaf;
	if (leaf == 0) {
		ev = enqueue(&q->tip);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_exec_mode;
		ev->variant.exec_mode.mode = exec_mode(bits);
		add_event_time(q, ev);
	} else {
		if (!q->enabled) {
			ev = standalone(q);
			ev->variant.tsx.ip = 0;
			ev->ip_suppressed = 1;
			q->event = ev;
		} else {
			ev = enqueue(&q->fup);
			if (!ev)
				return RV_PQ_UNMODELLED;
		}
		ev->type = ptev_tsx;
		ev->variant.tsx.speculative = bits & 1;
		ev->variant.tsx.aborted = (bits >> 1) & 1;
		add_event_time(q, ev);
	}
	q->pos += 2;
	return 0;
}

static void read_pip(const struct rv_pq *q, uint64_t *cr3, bool *non_root)
{
	uint64_t payload = read_le(q->pos + 2, 6);

	*non_root = payload & 1;
	*cr3 = (payload >> 1) << 5;
}

static int decode_pip(struct rv_pq *q)
{
	struct pt_event *ev;
	uint64_t cr3;
	bool non_root;

	if (whole(q, 8) < 0)
		return -pte_eos;
	read_pip(q, &cr3, &non_root);
	if (!find(&q->tip, ptev_async_branch)) {
		ev = standalone(q);
		ev->type = ptev_paging;
		ev->variant.paging.cr3 = cr3;
		ev->variant.paging.non_root = non_root;
		add_event_time(q, ev);
		q->event = ev;
	} else {
		ev = enqueue(&q->tip);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_async_paging;
		ev->variant.async_paging.cr3 = cr3;
		ev->variant.async_paging.non_root = non_root;
		add_event_time(q, ev);
	}
	q->pos += 8;
	return 0;
}

static int decode_vmcs(struct rv_pq *q)
{
	struct pt_event *ev, *paging;
	uint64_t base;

	if (whole(q, 7) < 0)
		return -pte_eos;
	base = read_le(q->pos + 2, 5) << 12;
	/* before an in-flight paging event (libipt reorders them so) */
	ev = find(&q->tip, ptev_async_paging);
	if (ev) {
		paging = enqueue(&q->tip);
		if (!paging)
			return RV_PQ_UNMODELLED;
		*paging = *ev;
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = base;
	} else if (find(&q->tip, ptev_async_branch)) {
		ev = enqueue(&q->tip);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = base;
	} else {
		ev = standalone(q);
		ev->type = ptev_vmcs;
		ev->variant.vmcs.base = base;
		add_event_time(q, ev);
		q->event = ev;
	}
	q->pos += 7;
	return 0;
}

static int decode_stop(struct rv_pq *q)
{
	struct pt_event *ev = standalone(q);

	ev->type = ptev_stop;
	add_event_time(q, ev);
	q->event = ev;
	q->pos += 2;
	return 0;
}

/* libipt's pt_qry_process_pending_psb_events: 1 when it published one. */
static int psb_events(struct rv_pq *q)
{
	struct pt_event *ev = dequeue(&q->psbend);

	if (!ev)
		return 0;
	switch (ev->type) {
	case ptev_async_paging:
		add_event_ip(q, ev, &ev->variant.async_paging.ip);
		break;
	case ptev_exec_mode:
		add_event_ip(q, ev, &ev->variant.exec_mode.ip);
		break;
	case ptev_tsx:
		add_event_ip(q, ev, &ev->variant.tsx.ip);
		break;
	case ptev_async_vmcs:
		add_event_ip(q, ev, &ev->variant.async_vmcs.ip);
		break;
	case ptev_cbr:
		break;
	default:
		return RV_PQ_UNMODELLED;
	}
	add_event_time(q, ev);
	ev->status_update = 1;
	q->event = ev;
	return 1;
}

static int decode_psbend(struct rv_pq *q)
{
	int status = psb_events(q);

	if (status)
		return status < 0 ? status : 0;
	q->pos += 2;
	return 0;
}

static int decode_cbr(struct rv_pq *q)
{
	struct pt_event *ev;

	if (whole(q, 4) < 0)
		return -pte_eos;
	/* libipt refuses a zero ratio */
	if (!q->pos[2])
		return RV_PQ_UNMODELLED;
	apply_cbr(q, q->pos[2], false);
	ev = standalone(q);
	ev->type = ptev_cbr;
	ev->variant.cbr.ratio = q->pos[2];
	add_event_time(q, ev);
	q->event = ev;
	q->pos += 4;
	return 0;
}

/* libipt's pt_qry_find_ovf_fup: whether a FUP follows the overflow (with
 * only PAD and CBR between), 0 when another packet says tracing is off,
 * RV_PQ_UNMODELLED for one libipt finds out of place, or -pte_eos. */
static int find_ovf_fup(const struct rv_pq *q)
{
	for (const uint8_t *p = q->pos;;) {
		uint8_t kind;
		int size, status = fetch_kind(p, q->end, &kind);

		if (status < 0)
			return status;
		size = packet_size(p, q->end, kind);
		if (size < 0)
			return size;
		switch (kind) {
		case K_FUP:
			return 1;
		case K_PAD:
		case K_CBR:
		case K_TSC:
		case K_TMA:
		case K_MTC:
		case K_CYC:
			p += size;
			break;
		case K_PSB:
		case K_PGE:
		case K_MODE:
		case K_PIP:
		case K_VMCS:
		case K_STOP:
		case K_OVF:
			return 0;
		default:
			return RV_PQ_UNMODELLED;
		}
	}
}

static int decode_ovf(struct rv_pq *q)
{
	struct pt_event *ev;
	int status = psb_events(q);

	if (status)
		return status < 0 ? status : 0;
	/* the decoder starts over but for the time (the calibration too) */
	reset_state(q);
	q->pos += 2;
	status = find_ovf_fup(q);
	if (status > 0) {
		/* resolved with tracing on: the overflow binds to the FUP */
		ev = enqueue(&q->fup);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_overflow;
		q->enabled = true;
		add_event_time(q, ev);
		return 0;
	}
	if (status < 0 && status != -pte_eos)
		return status;
	ev = standalone(q);
	ev->type = ptev_overflow;
	ev->ip_suppressed = 1;
	q->enabled = false;
	add_event_time(q, ev);
	q->event = ev;
	return 0;
}

/* Erratum BDM70 (libipt's check_erratum_bdm70): a FUP in a PSB+ while
 * tracing is off, with a TIP.PGE after it, is not where tracing is. From p
 * (after the FUP): 1 when it applies, 0 when not, or an error. */
static int bdm70_applies(const struct rv_pq *q, const uint8_t *p)
{
	for (;;) {
		uint8_t kind;
		int size, status = fetch_kind(p, q->end, &kind);

		if (status < 0)
			return status == -pte_eos ? 0 : status;
		size = packet_size(p, q->end, kind);
		if (size < 0)
			return size == -pte_eos ? 0 : size;
		switch (kind) {
		case K_PGE:
			return 1;
		case K_PAD:
		case K_CBR:
		case K_TSC:
		case K_TMA:
		case K_MTC:
		case K_CYC:
		case K_PSBEND:
		case K_PIP:
		case K_MODE:
		case K_VMCS:
			p += size;
			break;
		default:
			return 0;
		}
	}
}

/* One packet of a PSB+ (libipt's pt_qry_header_*). */
static int decode_header_packet(struct rv_pq *q, uint8_t kind)
{
	struct pt_event *ev;
	uint64_t ip;
	unsigned ipc;
	uint8_t bits;
	int size;

	switch (kind) {
	case K_PAD:
		q->pos += 1;
		return 0;
	case K_CBR:
		/* libipt refuses a zero ratio */
		if (whole(q, 4) < 0)
			return -pte_eos;
		if (!q->pos[2])
			return RV_PQ_UNMODELLED;
		apply_cbr(q, q->pos[2], true);
		ev = enqueue(&q->psbend);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_cbr;
		ev->variant.cbr.ratio = q->pos[2];
		q->pos += 4;
		return 0;
	case K_FUP:
		size = read_ip(q, &ipc, &ip);
		if (size < 0)
			return size;
		if (q->bdm70 && !q->enabled) {
			int applies = bdm70_applies(q, q->pos + size);

			if (applies < 0)
				return applies;
			if (applies) {
				q->pos += size;
				return 0;
			}
		}
		update_ip(q, ipc, ip);
		if (ipc)
			q->enabled = true;
		q->pos += size;
		return 0;
	case K_MODE:
		size = read_mode(q, &bits);
		if (size < 0)
			return size;
		ev = enqueue(&q->psbend);
		if (!ev)
			return RV_PQ_UNMODELLED;
		if (size == 0) {
			ev->type = ptev_exec_mode;
			ev->variant.exec_mode.mode = exec_mode(bits);
		} else {
			ev->type = ptev_tsx;
			ev->variant.tsx.speculative = bits & 1;
			ev->variant.tsx.aborted = (bits >> 1) & 1;
		}
		q->pos += 2;
		return 0;
	case K_PIP: {
		bool non_root;

		if (whole(q, 8) < 0)
			return -pte_eos;
		ev = enqueue(&q->psbend);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_async_paging;
		read_pip(q, &ev->variant.async_paging.cr3, &non_root);
		ev->variant.async_paging.non_root = non_root;
		q->pos += 8;
		return 0;
	}
	case K_VMCS:
		if (whole(q, 7) < 0)
			return -pte_eos;
		ev = enqueue(&q->psbend);
		if (!ev)
			return RV_PQ_UNMODELLED;
		ev->type = ptev_async_vmcs;
		ev->variant.async_vmcs.base = read_le(q->pos + 2, 5) << 12;
		q->pos += 7;
		return 0;
	case K_TSC:
	case K_TMA:
	case K_MTC:
	case K_CYC:
		return decode_timing(q, kind, true);
	default:
		/* libipt: no header decoder (-pte_bad_context) */
		return RV_PQ_UNMODELLED;
	}
}

static int decode_psb(struct rv_pq *q)
{
	const uint8_t *psb = q->pos;
	int status = 0;

	if (whole(q, PSB_BYTES) < 0)
		return -pte_eos;
	for (int i = 0; i < PSB_BYTES; i += 2)
		if (psb[i] != 0x02 || psb[i + 1] != 0x82)
			return RV_PQ_UNMODELLED;
	q->pos += PSB_BYTES;
	q->have_ip = false;
	q->last_ip = 0;
	for (;;) {
		status = fetch_kind(q->pos, q->end, &q->next);
		if (status < 0)
			break;
		if (q->next == K_PSBEND)
			return 0;
		status = decode_header_packet(q, q->next);
		if (status < 0)
			break;
	}
	/* back to the PSB, without the PSB+'s events (as libipt) */
	q->pos = psb;
	q->psbend.begin = q->psbend.end = 0;
	q->next = K_PSB;
	return status;
}

static int decode(struct rv_pq *q, uint8_t kind)
{
	switch (kind) {
	case K_PAD:
		q->pos += 1;
		return 0;
	case K_PSB:
		return decode_psb(q);
	case K_PSBEND:
		return decode_psbend(q);
	case K_TNT8:
	case K_TNT64:
		return decode_tnt(q, kind);
	case K_TIP:
		return decode_tip(q);
	case K_PGE:
		return decode_pge(q);
	case K_PGD:
		return decode_pgd(q);
	case K_FUP:
		return decode_fup(q);
	case K_MODE:
		return decode_mode(q);
	case K_PIP:
		return decode_pip(q);
	case K_VMCS:
		return decode_vmcs(q);
	case K_STOP:
		return decode_stop(q);
	case K_CBR:
		return decode_cbr(q);
	case K_OVF:
		return decode_ovf(q);
	case K_TSC:
	case K_TMA:
	case K_MTC:
	case K_CYC:
		return decode_timing(q, kind, false);
	default:
		return RV_PQ_UNMODELLED;
	}
}

/* ---- the query decoder's steps ---- */

static int fetch(struct rv_pq *q)
{
	return fetch_kind(q->pos, q->end, &q->next);
}

/* libipt's pt_qry_will_event. */
static inline bool will_event(const struct rv_pq *q)
{
	uint8_t flags = kind_flags[q->next];

	if (flags & F_EVENT)
		return true;
	if (flags & F_PSBEND)
		return pending(&q->psbend);
	if (flags & F_TIP)
		return pending(&q->tip);
	if (flags & F_FUP)
		return pending(&q->fup);
	return false;
}

/* libipt's pt_qry_status_flags. */
static inline int status_flags(const struct rv_pq *q)
{
	int flags = 0;
	uint8_t kind;

	if (q->tnt_index)
		return 0;
	if (will_event(q))
		flags |= pts_event_pending;
	if (!q->next && fetch_kind(q->pos, q->end, &kind) == -pte_eos)
		flags |= pts_eos;
	return flags;
}

/* libipt's pt_qry_read_ahead: decodes the packets that only change the
 * state, up to one that answers a query or makes an event. */
static int read_ahead_slow(struct rv_pq *q)
{
	for (;;) {
		int status = fetch(q);

		if (status)
			return status;
		if ((kind_flags[q->next] & (F_TIP | F_TNT)) || will_event(q))
			return 0;
		status = decode(q, q->next);
		if (status == -pte_eos) {
			/* a status packet cut at the end: libipt skips to it */
			q->pos = q->end;
			q->next = 0;
		}
		if (status)
			return status;
	}
}

/* A read-ahead's stop at the packet p of kind b (byte_class': a TNT-8, a
 * TIP, a TIP.PGE or a TIP.PGD): q->next is its kind, q->pos at it, and the
 * flags returned are what status_flags says there (an event waits after
 * a TIP when no TNT bit is left and one is bound to it; a TIP.PGE and a
 * TIP.PGD are events themselves). */
static inline __attribute__((always_inline)) int stop_at(struct rv_pq *q, const uint8_t *p,
							 unsigned b)
{
	q->pos = p;
	q->next = (uint8_t)b;
	if (b == K_TIP)
		return !q->tnt_index && pending(&q->tip) ? pts_event_pending : 0;
	return b == K_TNT8 || q->tnt_index ? 0 : pts_event_pending;
}

/* libipt's time after an MTC packet (tcal_mtc and time_mtc) where it is a
 * step of one MTC period more like the last: both count from the same CTC,
 * which the new one is not below (no wrap), the period's ticks and the
 * calibration's quotient are the last ones (memo), cycles were counted
 * since, and the time has had its TMA and an MTC. (A quotient kept means
 * there is a CPUID 0x15 ratio.) False, and nothing done, when not so. */
static inline bool apply_mtc_step(struct rv_pq *q, uint8_t payload)
{
	struct rv_pq_tcal *tcal = &q->tcal;
	struct rv_pq_time *t = &q->time;
	uint32_t ctc = (uint32_t)payload << q->mtc_freq;
	uint64_t cyc = tcal->cyc - tcal->cyc_at_mtc;

	if (!tcal->have_mtc || !t->have_mtc || !t->have_tma || t->ctc != tcal->ctc ||
	    ctc < t->ctc || ctc - t->ctc != q->memo.ctc || !cyc || cyc != q->memo.step_cyc)
		return false;
	tcal->cyc_at_mtc = tcal->cyc;
	tcal->ctc = ctc;
	tcal->fcr = q->memo.cal_fcr;
	if (t->fc || t->now.lost_cyc)
		t->ctc_cyc = ctc;
	t->fc = 0;
	t->ctc = ctc;
	t->now.lost_cyc = 0;
	t->now.tsc = t->base = t->base + q->memo.fc;
	return true;
}

/* The read-ahead from p on (what is before it applied), and the flags
 * after it: past PADs, CYCs and MTCs (those whole: the slow path has a
 * cut one's end), applied, to a TNT-8, TNT-64, TIP, TIP.PGE or TIP.PGD,
 * where it stops (q->next is its kind, q->pos at it) and returns
 * status_flags' answer there; anything else, and the end, goes through
 * read_ahead_slow and then status_flags, as finish does. Returns the
 * flags, or an error (RV_PQ_UNMODELLED, after which q is not used). The
 * position is kept in a register: a packet's byte may alias anything, so
 * each read through q->pos would load it again. */
static int __attribute__((noinline)) read_ahead_rest(struct rv_pq *q, const uint8_t *p)
{
	const uint8_t *const end = q->end;
	int status;

	while (p < end) {
		unsigned b = byte_class[p[0]];
		int size;

		if (b >= B_CYC1 || b == B_CYC) {
			uint64_t cyc;

			size = read_cyc(p, end, &cyc);
			if (size < 0)
				break;
			if (apply_cyc_calibrated(q, cyc)) {
				p += size;
				continue;
			}
			status = apply_cyc(q, cyc);
		} else if (b == B_MTC && end - p >= 2) {
			size = 2;
			if (apply_mtc_step(q, p[1])) {
				p += size;
				continue;
			}
			status = apply_mtc(q, p[1]);
		} else if (b == B_PAD) {
			/* PADs are decoded by moving past them */
			p++;
			continue;
		} else if (b < B_RUN) {
			return stop_at(q, p, b);
		} else if (b == B_EXT && end - p >= 2 && p[1] == 0xa3) {
			q->pos = p;
			q->next = K_TNT64;
			return 0;
		} else {
			break;
		}
		if (status < 0) {
			q->pos = p;
			return status;
		}
		p += size;
	}
	q->pos = p;
	status = read_ahead_slow(q);
	if (status < 0 && status != -pte_eos)
		return status;
	return status_flags(q);
}

/* read_ahead_rest, with its common steps alone and no call but the one
 * to it for the rest (so without registers to save): the run a timed
 * trace has after a TNT-64 (a CYC of one or two bytes, calibrated, and an
 * MTC a period like the last one) up to a TNT-64 or where read_ahead_flags
 * stops. Its packets are of two bytes at most, so up to end16 none asks
 * whether its bytes are there; the last 16 bytes are the rest's. */
static int __attribute__((noinline)) read_ahead_at(struct rv_pq *q, const uint8_t *p)
{
	const uint8_t *const end16 = q->end16;

	while (p < end16) {
		unsigned b = byte_class[p[0]];

		if (b < B_RUN)
			return stop_at(q, p, b);
		if (b >= B_CYC1) {
			if (!apply_cyc_calibrated(q, b - B_CYC1))
				break;
			p++;
		} else if (b == B_CYC && !(p[1] & 1)) {
			/* one extension byte */
			if (!apply_cyc_calibrated(q, (p[0] >> 3) | (uint64_t)(p[1] >> 1) << 5))
				break;
			p += 2;
		} else if (b == B_MTC && apply_mtc_step(q, p[1])) {
			p += 2;
		} else if (b == B_PAD) {
			p++;
		} else if (b == B_EXT && p[1] == 0xa3) {
			q->pos = p;
			q->next = K_TNT64;
			return 0;
		} else {
			break;
		}
	}
	return read_ahead_rest(q, p);
}

/* read_ahead_at(q, q->pos) for the queries' hot paths, inline and
 * without a call: the run a timed trace has after most TNTs and TIPs,
 * one-byte CYCs (calibrated), and an untimed one's PADs, up to a TNT-8, a
 * TIP, a TIP.PGE or a TIP.PGD; the rest from where it stopped. */
static inline __attribute__((always_inline)) int read_ahead_flags(struct rv_pq *q)
{
	const uint8_t *p = q->pos, *const end = q->end;

	while (p < end) {
		unsigned b = byte_class[p[0]];

		/* TIP.PGE, TIP.PGD: an untimed trace has them where a timed
		 * one has CYCs */
		if (b < B_RUN)
			return stop_at(q, p, b);
		if (b >= B_CYC1) {
			if (!apply_cyc_calibrated(q, b - B_CYC1))
				break;
		} else if (b != B_PAD) {
			break;
		}
		/* past the CYC, or a PAD */
		p++;
	}
	return read_ahead_at(q, p);
}

/* read_ahead_slow, past PADs, CYCs and MTCs first (read_ahead_flags'
 * run, without its flags). */
static int read_ahead(struct rv_pq *q)
{
	int status = read_ahead_flags(q);

	if (status < 0)
		return status;
	/* read_ahead_slow's end of the trace, which status_flags' pts_eos
	 * tells */
	return q->next ? 0 : -pte_eos;
}

/* libipt's pt_qry_provoke_fetch_error: the error the fetch at pos met. */
static int fetch_error(const struct rv_pq *q)
{
	uint8_t kind;
	int status = fetch_kind(q->pos, q->end, &kind);

	return status < 0 ? status : RV_PQ_UNMODELLED;
}

/* The read-ahead after a query: the end of the trace is no error yet. */
static int finish(struct rv_pq *q)
{
	int status = read_ahead(q);

	return status < 0 && status != -pte_eos ? status : 0;
}

/* ---- the calls ---- */

/* Whether every packet of [p, end) is of a kind modelled; past a
 * malformed or cut packet, libipt and this decoder fail alike. */
static bool all_modelled(const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint8_t kind;
		int size;

		/* past TNT-8 and PAD packets (even bytes but 0x02), eight
		 * bytes at a time: the lowest other byte's top bit is exact */
		while (end - p >= 8) {
			uint64_t w, twos, other;

			memcpy(&w, p, sizeof(w));
			twos = w ^ 0x0202020202020202ull;
			other = ((w & 0x0101010101010101ull) << 7) |
				((twos - 0x0101010101010101ull) & ~twos & 0x8080808080808080ull);
			if (other) {
				p += __builtin_ctzll(other) / 8;
				break;
			}
			p += 8;
		}
		if (p < end && is_tnt8(p[0])) {
			p++;
			continue;
		}
		if (p < end && (is_tip(p[0]) || (p[0] & 0x1f) == 0x01 || (p[0] & 0x1f) == 0x11 ||
				(p[0] & 0x1f) == 0x1d)) {
			size = packet_size(p, end, K_TIP);
			if (size < 0)
				return true;
			p += size;
			continue;
		}

		if (fetch_kind(p, end, &kind) == RV_PQ_UNMODELLED)
			return false;
		size = kind ? packet_size(p, end, kind) : -pte_eos;
		if (size < 0)
			return true;
		p += size;
	}
	return true;
}

/* Whether the PSB+ at p (a trace's first: its timing packets are there
 * when the trace has time) holds only kinds modelled. */
static bool header_modelled(const uint8_t *p, const uint8_t *end)
{
	for (;;) {
		uint8_t kind;
		int size;

		if (fetch_kind(p, end, &kind) == RV_PQ_UNMODELLED)
			return false;
		size = kind ? packet_size(p, end, kind) : -pte_eos;
		if (size < 0 || kind == K_PSBEND)
			return true;
		p += size;
	}
}

bool rv_pq_init(struct rv_pq *q, const struct pt_config *config, bool whole)
{
	static const struct pt_errata none;
	struct pt_errata errata = config->errata;
	const uint8_t *end = config->end;

	memset(q, 0, sizeof(*q));
	q->begin = config->begin;
	q->end = end;
	if (!q->begin || end < q->begin || end - q->begin < PSB_BYTES)
		return false;
	q->end8 = end - 8;
	q->end16 = end - 16;
	/* BDM70 is modelled; SKD022 and SKL014 are the instruction flow
	 * decoders' (the query decoder has no workaround for them); no other
	 * erratum */
	q->bdm70 = errata.bdm70;
	errata.bdm70 = 0;
	errata.skd022 = 0;
	errata.skl014 = 0;
	if (memcmp(&errata, &none, sizeof(none)))
		return false;
	if (config->decode.callback)
		return false;
	/* an MTC's CTC, shifted by mtc_freq, and a wrap must fit 32 bits */
	if (config->mtc_freq > 23)
		return false;
	q->mtc_freq = config->mtc_freq;
	q->nom_freq = config->nom_freq;
	q->ctc_eax = config->cpuid_0x15_eax;
	q->ctc_ebx = config->cpuid_0x15_ebx;
	tcal_init(&q->tcal);
	return whole ? all_modelled(q->begin, end) : header_modelled(q->begin, end);
}

int rv_pq_sync_set(struct rv_pq *q, uint64_t *ip, uint64_t offset)
{
	int status, flags;
	bool have;

	reset_state(q);
	memset(&q->time, 0, sizeof(q->time));
	q->last = q->time.now;
	q->next = 0;
	if (offset > (uint64_t)(q->end - q->begin) || q->end - q->begin - offset < PSB_BYTES)
		return RV_PQ_UNMODELLED;
	q->sync = q->pos = q->begin + offset;
	status = fetch(q);
	if (status < 0 || q->next != K_PSB)
		return RV_PQ_UNMODELLED;
	status = decode_psb(q);
	if (status < 0)
		return status == -pte_eos ? status : RV_PQ_UNMODELLED;
	/* the start IP is the PSB+'s (an adjacent PSB+ read ahead may change
	 * the last IP) */
	have = query_ip(q, ip) == 0;
	status = read_ahead(q);
	if (status < 0)
		return status;
	flags = status_flags(q);
	if (query_ip(q, have ? NULL : ip) < 0 && !have)
		flags |= pts_ip_suppressed;
	return flags;
}

int rv_pq_get_offset(const struct rv_pq *q, uint64_t *offset)
{
	if (!q->pos)
		return -pte_nosync;
	*offset = (uint64_t)(q->pos - q->begin);
	return 0;
}

int rv_pq_get_sync_offset(const struct rv_pq *q, uint64_t *offset)
{
	if (!q->sync)
		return -pte_nosync;
	*offset = (uint64_t)(q->sync - q->begin);
	return 0;
}

/* libipt's pt_qry_cache_tnt: on to the next TNT packet. */
static int cache_tnt(struct rv_pq *q)
{
	for (;;) {
		uint8_t kind = q->next;
		int status;

		if (!kind)
			return fetch_error(q);
		if (will_event(q) || (kind_flags[kind] & F_TIP))
			return -pte_bad_query;
		q->event = NULL;
		status = decode(q, kind);
		if (status)
			return status;
		if (q->event)
			return RV_PQ_UNMODELLED; /* libipt: -pte_event_ignored */
		if (kind_flags[kind] & F_TNT)
			break;
		status = read_ahead(q);
		if (status)
			return status;
	}
	q->last = q->time.now;
	return finish(q);
}

/* rv_pq_cond_branch_refill the whole way: bits in hand (taken without the
 * inline query), or a refill that is not the common one. */
static int refill_slow(struct rv_pq *q, int *taken)
{
	if (!q->tnt_index) {
		int status = cache_tnt(q);

		if (status < 0)
			return status;
		if (!q->tnt_index)
			return -pte_bad_query;
	}
	*taken = (q->tnt & q->tnt_index) != 0;
	q->tnt_index >>= 1;
	return status_flags(q);
}

/* The common refills: the last bit of the TNT packet (the status says what
 * follows); a TIP next (a return asks for a bit first, and cache_tnt
 * refuses); or a TNT-8 or a whole TNT-64 of at least one bit next, which
 * is all cache_tnt decodes then, and the read-ahead after it
 * (read_ahead_flags). Anything else (other packets, a TNT-64 that libipt
 * refuses or that is cut, the end) goes the whole way. */
int rv_pq_cond_branch_refill(struct rv_pq *q, int *taken)
{
	if (__builtin_expect(!q->tnt_index, 1)) {
		uint64_t bits, index;
		int size;

		if (q->next == K_TNT8) {
			bits = q->pos[0] >> 1; /* at least 2: an even byte above 2 */
			size = 1;
		} else if (q->next == K_TNT64 && q->pos <= q->end8) {
			/* the 6 bytes after the opcode's 2 */
			bits = read_le64(q->pos) >> 16;
			size = 8;
			if (bits < 2)
				return refill_slow(q, taken); /* no bit, or none but the stop bit */
		} else if (q->next == K_TIP) {
			/* cache_tnt's answer: a return that is not compressed */
			return -pte_bad_query;
		} else {
			return refill_slow(q, taken);
		}
		/* the bit below the stop bit first */
		index = 1ull << (62 - __builtin_clzll(bits));
		q->last = q->time.now;
		q->tnt = bits;
		q->pos += size;
		*taken = (bits & index) != 0;
		q->tnt_index = index >> 1;
		/* finish, and status_flags once the bit is taken (an error
		 * leaves q to be dropped); after a TNT-64, in a timed trace
		 * mostly a CYC of two bytes, which read_ahead_at takes */
		return size == 8 ? read_ahead_at(q, q->pos) : read_ahead_flags(q);
	}
	if (q->tnt_index == 1) {
		/* the packet's last bit: the status tells what comes next
		 * (nothing, when it is another TNT) */
		*taken = (int)(q->tnt & 1);
		q->tnt_index = 0;
		return kind_flags[q->next] & F_TNT ? 0 : status_flags(q);
	}
	return refill_slow(q, taken);
}

/* rv_pq_indirect_branch but for its common case. */
static int __attribute__((noinline)) indirect_branch_slow(struct rv_pq *q, uint64_t *ip)
{
	int flags = 0, status;

	if (q->next == K_TIP && !pending(&q->tip)) {
		/* a TIP no event waits for, as in the common case: the loop's
		 * first turn without its dispatch */
		uint64_t to;
		int size = decode_ip(q);

		if (size < 0)
			return size;
		q->pos += size;
		if (query_ip(q, &to) < 0)
			flags |= pts_ip_suppressed;
		else
			*ip = to;
		q->last = q->time.now;
		status = read_ahead_flags(q);
		return status < 0 ? status : flags | status;
	}
	for (;;) {
		uint8_t kind = q->next;

		if (!kind)
			return fetch_error(q);
		if (will_event(q))
			return -pte_bad_query;
		q->event = NULL;
		if ((kind_flags[kind] & F_TNT) && q->tnt_index)
			return -pte_bad_query;
		status = decode(q, kind);
		if (status)
			return status;
		if (q->event)
			return RV_PQ_UNMODELLED;
		if (kind_flags[kind] & F_TIP) {
			uint64_t to;

			if (query_ip(q, &to) < 0)
				flags |= pts_ip_suppressed;
			else
				*ip = to;
			q->last = q->time.now;
			break;
		}
		status = read_ahead(q);
		if (status)
			return status;
	}
	status = finish(q);
	if (status < 0)
		return status;
	return flags | status_flags(q);
}

int rv_pq_indirect_branch(struct rv_pq *q, uint64_t *ip)
{
	const uint8_t *p = q->pos;

	/* The common case: a TIP no event waits for (decode_tip moves past
	 * it), with IP compression 1, 2, 4 or 6 and 8 bytes after the opcode:
	 * the payload's bytes replace the last IP's low ones (update_ip) in
	 * one load, and there is an IP; then finish and status_flags
	 * (read_ahead_flags). No call but to the read-ahead's rest, so no
	 * register to save. */
	if (__builtin_expect(q->next == K_TIP && !pending(&q->tip), 1)) {
		/* the packet's size by its first byte, 0 for the other
		 * compressions, and the last IP's bits kept by each size */
		static const uint8_t sizes[256] = {
			[0x2d] = 3, [0x4d] = 5, [0x8d] = 7, [0xcd] = 9
		};
		static const uint64_t kept[10] = {
			[3] = ~0xffffull, [5] = ~0xffffffffull, [7] = ~0xffffffffffffull
		};
		size_t size = sizes[p[0]];

		if (__builtin_expect(size && p < q->end16, 1)) {
			uint64_t to = (q->last_ip & kept[size]) | (read_le64(p + 1) & ~kept[size]);
			unsigned b;

			q->last_ip = to;
			q->have_ip = true;
			*ip = to;
			q->last = q->time.now;
			/* read_ahead_flags' commonest run, a one-byte CYC and a
			 * stop, without its checks for the end: the 2 bytes
			 * after the TIP are there */
			p += size;
			b = byte_class[p[0]];
			if (b >= B_CYC1 && apply_cyc_calibrated(q, b - B_CYC1))
				b = byte_class[(++p)[0]];
			if (b < B_RUN)
				return stop_at(q, p, b);
			q->pos = p;
			return read_ahead_flags(q);
		}
	}
	return indirect_branch_slow(q, ip);
}

/* The first byte at or after p that is not a PAD (0), or end, eight
 * bytes at a time: the packets after a TIP.PGE or TIP.PGD are padded (in
 * mruby's trace, to the next eight bytes). */
static const uint8_t *past_pads(const uint8_t *p, const uint8_t *end)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (end - p >= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		if (w)
			return p + __builtin_ctzll(w) / 8; /* the lowest byte not 0 */
		p += 8;
	}
#endif
	while (p < end && !p[0])
		p++;
	return p;
}

/* rv_pq_event's common events: a TIP.PGE or TIP.PGD that no event waits
 * for, which makes its own (decode_pge and decode_pgd, written straight
 * into *event). Returns the size of the packet, or an error. */
static int tracing_event(struct rv_pq *q, struct pt_event *event)
{
	uint64_t ip;
	int size = decode_ip(q);

	if (size < 0)
		return size;
	memset(event, 0, sizeof(*event));
	if (q->next == K_PGE) {
		if (query_ip(q, &ip) < 0)
			return RV_PQ_UNMODELLED;
		event->type = ptev_enabled;
		event->variant.enabled.ip = ip;
		q->tnt = q->tnt_index = 0;
		q->enabled = true;
	} else {
		event->type = ptev_disabled;
		add_event_ip(q, event, &event->variant.disabled.ip);
		q->enabled = false;
	}
	add_event_time(q, event);
	return size;
}

/* rv_pq_event but for its common case. */
static int __attribute__((noinline)) event_slow(struct rv_pq *q, struct pt_event *event)
{
	int status;

	for (;;) {
		uint8_t kind = q->next;

		if (!kind)
			return fetch_error(q);
		if ((kind_flags[kind] & (F_TIP | F_TNT)) && !will_event(q))
			return -pte_bad_query;
		q->event = NULL;
		status = decode(q, kind);
		if (status)
			return status;
		if (q->event) {
			memcpy(event, q->event, sizeof(*event));
			q->last = q->time.now;
			break;
		}
		status = read_ahead(q);
		if (status)
			return status;
	}
	status = finish(q);
	if (status < 0)
		return status;
	return status_flags(q);
}

int rv_pq_event(struct rv_pq *q, struct pt_event *event)
{
	int status;

	if (q->tnt_index)
		return -pte_bad_query;
	if ((q->next == K_PGE || q->next == K_PGD) && !pending(&q->tip) && !q->consume_packet) {
		status = tracing_event(q, event);
		if (status < 0)
			return status;
		q->last = q->time.now;
		q->pos = past_pads(q->pos + status, q->end);
		/* finish, then status_flags */
		return read_ahead_flags(q);
	}
	return event_slow(q, event);
}
