/* pt_query.h: rearview's own packet layer under the fast PT walker: the
 * calls of libipt 2.0's query decoder (pt_qry_*) that pt_fast.c makes,
 * answered from the raw bytes. Private to the fast walker (pt_fast.c).
 *
 * The contract is libipt 2.0.5's query decoder's, answer for answer: the
 * same statuses (pts_event_pending, pts_ip_suppressed, pts_eos), taken
 * bits, IPs, events (struct pt_event byte for byte), offsets, sync offsets
 * and time, for the traces it models. It models a chunk when rv_pq_init
 * says so: no erratum the query decoder works around but BDM70 (whose
 * workaround it has), and only PAD, PSB, PSBEND, TNT-8, TNT-64, TIP,
 * TIP.PGE, TIP.PGD, FUP, MODE (exec and TSX), PIP, VMCS, CBR, STOP, OVF,
 * TSC, TMA, MTC and CYC packets.
 *
 * Time is libipt's to the tick: its TSC, TMA and MTC arithmetic over
 * pt_config's mtc_freq and CPUID 0x15 ratio, CYC scaled by its calibration
 * (from MTC periods, from TSCs in PSB+ when there are no MTCs, or from
 * nom_freq and CBR), the lost MTC and CYC counts, the time each event
 * carries (has_tsc) when it is made, and rv_pq_time's answer: the time
 * when the last query that answered had decoded its packet, before the
 * read-ahead after it (a query refused, -pte_bad_query, leaves it), and
 * -pte_no_time before a TSC or after rv_pq_sync_set until a query answers.
 *
 * What it meets that it does not model (a packet kind it does not know, a
 * malformed packet, any error of libipt's but the end of the trace and a
 * query the trace does not answer, -pte_bad_query), it answers with
 * RV_PQ_UNMODELLED, at or before the first call libipt would answer
 * differently; the caller hands the chunk to libipt then. -pte_eos and
 * -pte_bad_query are libipt's, at the same calls.
 *
 * Not here: the walk (pt_fast.c); power, PTWRITE and MNT packets and the
 * other errata's workarounds (SKD007, SKD010, SKL168, ...): rv_pq_init
 * leaves chunks with them to libipt's query decoder.
 *
 * Thread safety: a decoder belongs to one thread.
 */
#ifndef RV_DECODE_PT_QUERY_H
#define RV_DECODE_PT_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include <intel-pt.h>

/* Not a pte_* code (those are small and negative). */
#define RV_PQ_UNMODELLED (-1001)

/* Events waiting for the packet they bind to, in the order they came. */
struct rv_pq_queue {
	struct pt_event ev[8];
	uint8_t begin, end; /* ev[begin, end); both 0 when empty */
};

/* What rv_pq_time reports of the time: a query's answer copies it whole. */
struct rv_pq_stamp {
	uint64_t tsc;
	uint32_t lost_mtc, lost_cyc;
	bool have_tsc;
};

/* libipt's time (struct pt_time): TSC units. */
struct rv_pq_time {
	struct rv_pq_stamp now;
	uint64_t base, fc;
	uint32_t ctc, ctc_cyc; /* CTC at the last MTC (or TMA), and the last reset of fc */
	bool have_tma, have_mtc;
};

/* libipt's calibration (struct pt_time_cal): fcr is fast-counter ticks per
 * cycle, shifted left by 8 (0: none; libipt's min_fcr and max_fcr, which
 * it checks for one, are apart only when fcr is 0). The cycles since the
 * last TSC and since the last MTC are one count, cyc, less its value then. */
struct rv_pq_tcal {
	uint64_t fcr;
	uint64_t tsc, cyc, cyc_at_tsc, cyc_at_mtc;
	uint32_t ctc;
	bool have_mtc;
};

/* The decoder's state: read only by the inline query below. */
struct rv_pq {
	const uint8_t *begin, *end;
	const uint8_t *end8;	 /* end - 8: the 8 bytes from one at or before it are there */
	const uint8_t *end16;	 /* end - 16 */
	const uint8_t *pos;	 /* the packet the decoder is at (NULL: not synced) */
	const uint8_t *sync;	 /* the PSB it synchronised at */
	uint8_t next;		 /* the kind of packet at pos (0: none, after an error) */
	uint64_t tnt, tnt_index; /* TNT bits, the next one at tnt_index (0: none) */
	uint64_t last_ip;
	bool have_ip; /* last_ip is there: not before an IP nor after a suppressed one */
	bool enabled, consume_packet;
	bool bdm70;		    /* erratum BDM70's workaround is on */
	uint8_t mtc_freq, nom_freq; /* pt_config's */
	uint32_t ctc_eax, ctc_ebx;  /* pt_config's cpuid_0x15_eax, _ebx */
	struct rv_pq_time time;
	struct rv_pq_stamp last; /* time when the last query's packet was decoded */
	struct rv_pq_tcal tcal;
	/* The last answers of time's divisions, kept for the next equal
	 * question (MTC periods are mostly alike): CTC ticks in TSC units
	 * (zero is right for ctc 0), and the calibration's quotient (cal_cyc
	 * 0: none, as it never divides by 0); step_cyc is cal_cyc when cal_fc
	 * is fc, else 0 (the cycles of an MTC period like the last). */
	struct {
		uint32_t ctc;
		uint64_t fc;
		uint64_t cal_fc, cal_cyc, cal_fcr;
		uint64_t step_cyc;
	} memo;
	const struct pt_event *event; /* the event the last packet published */
	struct pt_event standalone;
	struct rv_pq_queue psbend, tip, fup; /* the events bound to each */
};

/* Sets q up for config's [begin, end). Returns whether q models that
 * trace (see above), judging by every packet when whole, else by the first
 * PSB+'s (where timing packets are when the trace has time): a later
 * packet not modelled is then answered RV_PQ_UNMODELLED when it comes,
 * which costs the caller a decode again by libipt, never an answer that
 * differs. When it does not model the trace, q must not be used. */
bool rv_pq_init(struct rv_pq *q, const struct pt_config *config, bool whole);

/* As pt_qry_sync_set, pt_qry_get_offset, pt_qry_get_sync_offset,
 * pt_qry_time, pt_qry_indirect_branch, pt_qry_event (event is a whole
 * struct pt_event) and pt_qry_cond_branch, with RV_PQ_UNMODELLED for what
 * is not modelled. */
int rv_pq_sync_set(struct rv_pq *q, uint64_t *ip, uint64_t offset);
int rv_pq_get_offset(const struct rv_pq *q, uint64_t *offset);
int rv_pq_get_sync_offset(const struct rv_pq *q, uint64_t *offset);
int rv_pq_indirect_branch(struct rv_pq *q, uint64_t *ip);
int rv_pq_event(struct rv_pq *q, struct pt_event *event);
int rv_pq_cond_branch_refill(struct rv_pq *q, int *taken);

/* The kinds of packet struct rv_pq's next names for a TNT-8, a TNT-64
 * and a TIP (pt_query.c has them all). */
enum { RV_PQ_KIND_TNT8 = 4, RV_PQ_KIND_TNT64 = 5, RV_PQ_KIND_TIP = 6 };

/* Whether the status flags once the TNT bits in hand are used say
 * nothing: the packet next is a TNT-8, or a TIP no event waits for. Then
 * rv_pq_cond_branch answers the last bit (tnt_index 1) with status 0. */
static inline bool rv_pq_next_plain(const struct rv_pq *q)
{
	return q->next == RV_PQ_KIND_TNT8 || (q->next == RV_PQ_KIND_TIP && !q->tip.end);
}

/* Whether rv_pq_cond_branch would refuse (-pte_bad_query) having read
 * nothing: no TNT bit in hand and a TIP next (a return that is not
 * compressed asks for a bit first). */
static inline bool rv_pq_tip_next(const struct rv_pq *q)
{
	return !q->tnt_index && q->next == RV_PQ_KIND_TIP;
}

/* The rv_pq_time of the list above, inline: a timed trace asks for the
 * time after every TNT and TIP (pt_fast.c's tick). */
static inline int rv_pq_time(const struct rv_pq *q, uint64_t *time, uint32_t *lost_mtc,
			     uint32_t *lost_cyc)
{
	*time = q->last.tsc;
	if (lost_mtc)
		*lost_mtc = q->last.lost_mtc;
	if (lost_cyc)
		*lost_cyc = q->last.lost_cyc;
	return q->last.have_tsc ? 0 : -pte_no_time;
}

/* A TNT bit from the cache is the common case: no flags while bits are
 * left (libipt reports events and the end only once they are used), nor
 * after the last one when another TNT is next (a timed trace's TNT-64s,
 * one after the other). */
static inline int rv_pq_cond_branch(struct rv_pq *q, int *taken)
{
	uint64_t index = q->tnt_index;

	if (index > 1 || (index && (q->next == RV_PQ_KIND_TNT8 || q->next == RV_PQ_KIND_TNT64))) {
		*taken = (q->tnt & index) != 0;
		q->tnt_index = index >> 1;
		return 0;
	}
	return rv_pq_cond_branch_refill(q, taken);
}

#endif
