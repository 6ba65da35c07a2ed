/* ptgen.c: the packets Intel PT hardware would write for a user-space-only
 * trace (IA32_RTIT_CTL.USER=1, OS=0) of one thread, decided instruction by
 * instruction and encoded with libipt's encoder.
 *
 * Each rule below names its source: the SDM, volume 3C, chapter "Intel
 * Processor Trace" (section and table numbers of the edition that numbers the
 * chapter 36), libipt's decoder and its test traces, Linux perf's decoder
 * (tools/perf/util/intel-pt-decoder), or a real Skylake capture
 * (../shared/pt-corpus/perf-4.14). Where hardware and the two decoders cannot
 * all be satisfied, the choice that both decoders read correctly wins and the
 * comment says so.
 *
 * Not here: which instruction ran (the caller single-steps and classifies),
 * kernel tracing, PIP/VMCS, TSX, power events, PTWRITE, address filters, and
 * the perf.data around the stream.
 */
#include "ptgen.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

/* SDM 36.4.2.2, "Indirect Transfer Compression for Returns": the decoder (and
 * so the processor) keeps the 64 youngest return addresses. */
enum { RET_STACK_DEPTH = 64 };

/* A long TNT holds up to 47 branch results, a short one up to 6 (SDM Table
 * 36-16). The modelled TNT buffer is as deep as a long TNT; a buffer forced
 * out with 6 bits or fewer is written in the short form. */
enum { TNT_LONG_BITS = 47, TNT_SHORT_BITS = 6 };

/* Room for the largest packet libipt encodes (PSB, 16 bytes). */
enum { SCRATCH_BYTES = 32 };

struct ptgen {
	struct ptgen_config config;
	struct pt_encoder *encoder;
	uint8_t scratch[SCRATCH_BYTES];

	uint8_t *data;
	size_t size, capacity;
	uint64_t *psb_offsets;
	size_t psb_count, psb_capacity;
	uint64_t packet_count;

	/* PacketEn: tracing is on between TIP.PGE and TIP.PGD. */
	bool packet_en;
	bool in_overflow;
	/* TraceEn cleared: the thread is scheduled out (ptgen_switch_out). */
	bool switched_out;
	/* Table 36-50: MODE.Exec precedes TIP.PGE "if no MODE.Exec since last
	 * PSB" (the mode itself never changes here: 64-bit user code). */
	bool mode_exec_since_psb;

	/* IP compression reference (SDM 36.4.2.2, "IP Compression"). */
	uint64_t last_ip;
	/* After OVF the next IP packet is written without compression, see
	 * overflow_end(). */
	bool last_ip_unreliable;

	/* Pending branch results, oldest in the highest bit. */
	uint64_t tnt_bits;
	unsigned tnt_count;
	/* The CYC that times the first branch in the TNT buffer, written just
	 * before the TNT packet (SDM 36.3.6.2). */
	bool tnt_cyc_pending;
	uint64_t tnt_cyc_value;

	/* The processor's return-compression stack: a ring of the youngest
	 * RET_STACK_DEPTH return addresses. */
	uint64_t ret_stack[RET_STACK_DEPTH];
	unsigned ret_top;   /* index of the next push */
	unsigned ret_depth; /* valid entries, at most RET_STACK_DEPTH */

	/* Timing. */
	uint64_t last_tsc;
	uint64_t next_mtc_ctc; /* CTC value at which the next MTC is due */
	uint64_t next_mtc_tsc; /* and the TSC at which CTC reaches it */
	uint64_t cyc_reference;
	uint64_t cyc_min_cycles;
};

static uint64_t mul_div_floor(uint64_t value, uint64_t mul, uint64_t div)
{
	return (uint64_t)((unsigned __int128)value * mul / div);
}

static uint64_t mul_div_ceil(uint64_t value, uint64_t mul, uint64_t div)
{
	unsigned __int128 product = (unsigned __int128)value * mul;

	return (uint64_t)((product + div - 1) / div);
}

/* The crystal clock (CTC) at TSC time tsc. Both counters are taken to start
 * at zero together. */
static uint64_t ctc_at(const struct ptgen *g, uint64_t tsc)
{
	return mul_div_floor(tsc, g->config.tsc_ctc_ratio_d, g->config.tsc_ctc_ratio_n);
}

/* The first TSC value at which CTC reads ctc. */
static uint64_t tsc_of_ctc(const struct ptgen *g, uint64_t ctc)
{
	return mul_div_ceil(ctc, g->config.tsc_ctc_ratio_n, g->config.tsc_ctc_ratio_d);
}

/* Core cycles at TSC time tsc: the core runs cbr / max_nonturbo_ratio times
 * as fast as the TSC (what perf's decoder assumes from CBR). */
static uint64_t cycles_at(const struct ptgen *g, uint64_t tsc)
{
	return mul_div_floor(tsc, g->config.cbr, g->config.max_nonturbo_ratio);
}

static bool config_is_valid(const struct ptgen_config *c)
{
	if (c->psb_period > 16 || c->mtc_period > 15 || c->cyc_thresh > 15)
		return false;
	if (c->mtc) {
		if (!c->tsc_ctc_ratio_n || !c->tsc_ctc_ratio_d)
			return false;
		/* TMA's fast counter has 9 bits and counts the TSC ticks
		 * since the last CTC tick. */
		if (c->tsc_ctc_ratio_n > 511ull * c->tsc_ctc_ratio_d)
			return false;
	}
	if (c->cyc && (!c->cbr || !c->max_nonturbo_ratio))
		return false;
	return true;
}

struct ptgen *ptgen_new(const struct ptgen_config *config)
{
	struct pt_config encoder_config;
	struct ptgen *g;

	if (!config || !config_is_valid(config))
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->config = *config;
	pt_config_init(&encoder_config);
	encoder_config.begin = g->scratch;
	encoder_config.end = g->scratch + sizeof(g->scratch);
	g->encoder = pt_alloc_encoder(&encoder_config);
	if (!g->encoder) {
		free(g);
		return NULL;
	}
	g->cyc_min_cycles = config->cyc_thresh ? 1ull << (config->cyc_thresh - 1) : 1;
	return g;
}

void ptgen_free(struct ptgen *g)
{
	if (!g)
		return;
	pt_free_encoder(g->encoder);
	free(g->data);
	free(g->psb_offsets);
	free(g);
}

static int reserve(struct ptgen *g, size_t more)
{
	size_t capacity = g->capacity ? g->capacity : 4096;
	uint8_t *data;

	if (g->size + more <= g->capacity)
		return 0;
	while (capacity < g->size + more)
		capacity *= 2;
	data = realloc(g->data, capacity);
	if (!data)
		return -pte_nomem;
	g->data = data;
	g->capacity = capacity;
	return 0;
}

static int emit(struct ptgen *g, const struct pt_packet *packet)
{
	int bytes, err;

	err = pt_enc_sync_set(g->encoder, 0);
	if (err < 0)
		return err;
	bytes = pt_enc_next(g->encoder, packet);
	if (bytes < 0)
		return bytes;
	err = reserve(g, (size_t)bytes);
	if (err < 0)
		return err;
	memcpy(g->data + g->size, g->scratch, (size_t)bytes);
	g->size += (size_t)bytes;
	g->packet_count++;
	return 0;
}

static int emit_simple(struct ptgen *g, enum pt_packet_type type)
{
	struct pt_packet packet = { .type = type };

	return emit(g, &packet);
}

/* Picks the IP compression the way the Skylake capture shows it: the fewest
 * bytes that reproduce ip from the last IP (16 then 32 bits), else a 48-bit
 * payload sign-extended (how every canonical address is sent there), and
 * only an address that is not canonical needs more. After an overflow the
 * reference is not trusted, see overflow_end(). */
static enum pt_ip_compression choose_compression(const struct ptgen *g, uint64_t ip)
{
	uint64_t sign_extended = (uint64_t)((int64_t)(ip << 16) >> 16);

	if (!g->last_ip_unreliable) {
		if ((ip >> 16) == (g->last_ip >> 16))
			return pt_ipc_update_16;
		if ((ip >> 32) == (g->last_ip >> 32))
			return pt_ipc_update_32;
	}
	if (sign_extended == ip)
		return pt_ipc_sext_48;
	if (!g->last_ip_unreliable && (ip >> 48) == (g->last_ip >> 48))
		return pt_ipc_update_48;
	return pt_ipc_full;
}

/* FUP, TIP, TIP.PGE or TIP.PGD with ip; the last IP follows it. */
static int emit_ip_packet(struct ptgen *g, enum pt_packet_type type, uint64_t ip)
{
	struct pt_packet packet = { .type = type };

	packet.payload.ip.ipc = choose_compression(g, ip);
	packet.payload.ip.ip = ip;
	g->last_ip = ip;
	g->last_ip_unreliable = false;
	return emit(g, &packet);
}

/* TIP.PGD whose target is in the kernel: the IP is suppressed so as not to
 * expose it, and a suppressed IP leaves the last IP alone (SDM 36.4.2.2). */
static int emit_pgd_suppressed(struct ptgen *g)
{
	struct pt_packet packet = { .type = ppt_tip_pgd };

	packet.payload.ip.ipc = pt_ipc_suppressed;
	return emit(g, &packet);
}

/* The CYC that goes before the first CYC-eligible packet of a cycle: core
 * cycles since the previous CYC, if the threshold has passed (SDM 36.3.6.3),
 * and none when no cycle has passed (one CYC covers every packet of its
 * cycle). Here it precedes TNT (timing its first branch, SDM 36.3.6.2), TIP,
 * MODE.Exec + TIP.PGE, FUP + TIP.PGD, TIP.PGD and MTC; not PSB+, whose
 * packets are status, nor OVF, at which the cycle counter restarts. perf's
 * decoder calibrates CYC against the MTC or TSC right after a CYC. */
static bool cyc_due(struct ptgen *g, uint64_t tsc, uint64_t *value)
{
	uint64_t now;

	if (!g->config.cyc)
		return false;
	now = cycles_at(g, tsc);
	if (now - g->cyc_reference < g->cyc_min_cycles)
		return false;
	*value = now - g->cyc_reference;
	g->cyc_reference = now;
	return true;
}

static int emit_cyc_value(struct ptgen *g, uint64_t value)
{
	struct pt_packet packet = { .type = ppt_cyc };

	packet.payload.cyc.value = value;
	return emit(g, &packet);
}

static int emit_cyc_if_due(struct ptgen *g, uint64_t tsc)
{
	uint64_t value;

	if (!cyc_due(g, tsc, &value))
		return 0;
	return emit_cyc_value(g, value);
}

/* Forces out the pending TNT as a (partial) packet. The SDM lets partial
 * TNTs go "at any time, as a result of other packets being generated"
 * (Table 36-16); callers do it before every packet that must stay in order
 * with the branches: TIP, FUP, TIP.PGD, PSB, MTC (the Skylake capture ends a
 * partial TNT before each of its MTCs), and at the end of the trace. */
static int flush_tnt(struct ptgen *g)
{
	struct pt_packet packet = { 0 };
	int err;

	if (!g->tnt_count)
		return 0;
	if (g->tnt_cyc_pending) {
		err = emit_cyc_value(g, g->tnt_cyc_value);
		if (err < 0)
			return err;
		g->tnt_cyc_pending = false;
	}
	packet.type = g->tnt_count <= TNT_SHORT_BITS ? ppt_tnt_8 : ppt_tnt_64;
	packet.payload.tnt.bit_size = (uint8_t)g->tnt_count;
	packet.payload.tnt.payload = g->tnt_bits;
	g->tnt_bits = 0;
	g->tnt_count = 0;
	return emit(g, &packet);
}

static int add_tnt_bit(struct ptgen *g, bool taken, uint64_t tsc)
{
	if (!g->tnt_count)
		g->tnt_cyc_pending = cyc_due(g, tsc, &g->tnt_cyc_value);
	g->tnt_bits = (g->tnt_bits << 1) | (taken ? 1 : 0);
	g->tnt_count++;
	if (g->tnt_count == TNT_LONG_BITS)
		return flush_tnt(g);
	return 0;
}

static void ret_stack_clear(struct ptgen *g)
{
	g->ret_depth = 0;
}

/* A full stack forgets its oldest entry (SDM 36.4.2.2). */
static void ret_stack_push(struct ptgen *g, uint64_t return_ip)
{
	g->ret_stack[g->ret_top] = return_ip;
	g->ret_top = (g->ret_top + 1) % RET_STACK_DEPTH;
	if (g->ret_depth < RET_STACK_DEPTH)
		g->ret_depth++;
}

static uint64_t ret_stack_top(const struct ptgen *g)
{
	return g->ret_stack[(g->ret_top + RET_STACK_DEPTH - 1) % RET_STACK_DEPTH];
}

static void ret_stack_pop(struct ptgen *g)
{
	g->ret_top = (g->ret_top + RET_STACK_DEPTH - 1) % RET_STACK_DEPTH;
	g->ret_depth--;
}

static int emit_mtc(struct ptgen *g, uint64_t ctc)
{
	struct pt_packet packet = { .type = ppt_mtc };

	packet.payload.mtc.ctc = (uint8_t)(ctc >> g->config.mtc_period);
	return emit(g, &packet);
}

static void schedule_next_mtc(struct ptgen *g, uint64_t tsc)
{
	uint64_t period = 1ull << g->config.mtc_period;

	g->next_mtc_ctc = (ctc_at(g, tsc) / period + 1) * period;
	g->next_mtc_tsc = tsc_of_ctc(g, g->next_mtc_ctc);
}

/* An MTC, carrying CTC[mtc_period + 7 : mtc_period], each time CTC bit
 * mtc_period toggles (SDM, MTC packet), whether or not PacketEn is set: MTC
 * depends on TriggerEn only. Each one is CYC-eligible and forces out the
 * pending TNT first. */
static int emit_due_mtcs(struct ptgen *g, uint64_t tsc)
{
	uint64_t period = 1ull << g->config.mtc_period;
	int err;

	if (!g->config.mtc)
		return 0;
	while (g->next_mtc_tsc <= tsc) {
		if (!g->in_overflow) {
			err = flush_tnt(g);
			if (err < 0)
				return err;
			err = emit_cyc_if_due(g, g->next_mtc_tsc);
			if (err < 0)
				return err;
			err = emit_mtc(g, g->next_mtc_ctc);
			if (err < 0)
				return err;
		}
		g->next_mtc_ctc += period;
		g->next_mtc_tsc = tsc_of_ctc(g, g->next_mtc_ctc);
	}
	return 0;
}

/* TSC, TMA and CBR: where PSB+ has them, and what follows OVF. TMA carries
 * CTC[15:0] at the TSC and the TSC ticks since that CTC value began (its
 * "fast counter"), which is how perf's decoder reads it (ctc_timestamp = tsc
 * - fc). TMA needs both TSCEn and MTCEn (SDM 36.3.7). */
static int emit_timing_state(struct ptgen *g, uint64_t tsc)
{
	struct pt_packet packet = { 0 };
	int err;

	if (g->config.tsc) {
		packet.type = ppt_tsc;
		packet.payload.tsc.tsc = tsc;
		err = emit(g, &packet);
		if (err < 0)
			return err;
		if (g->config.mtc) {
			uint64_t ctc = ctc_at(g, tsc);

			memset(&packet, 0, sizeof(packet));
			packet.type = ppt_tma;
			packet.payload.tma.ctc = (uint16_t)ctc;
			packet.payload.tma.fc = (uint16_t)(tsc - tsc_of_ctc(g, ctc));
			err = emit(g, &packet);
			if (err < 0)
				return err;
		}
	}
	memset(&packet, 0, sizeof(packet));
	packet.type = ppt_cbr;
	packet.payload.cbr.ratio = g->config.cbr;
	return emit(g, &packet);
}

static int emit_mode_exec(struct ptgen *g)
{
	struct pt_packet packet = { .type = ppt_mode };

	packet.payload.mode.leaf = pt_mol_exec;
	packet.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	g->mode_exec_since_psb = true;
	return emit(g, &packet);
}

static int remember_psb_offset(struct ptgen *g)
{
	if (g->psb_count == g->psb_capacity) {
		size_t capacity = g->psb_capacity ? g->psb_capacity * 2 : 64;
		uint64_t *offsets = realloc(g->psb_offsets, capacity * sizeof(*offsets));

		if (!offsets)
			return -pte_nomem;
		g->psb_offsets = offsets;
		g->psb_capacity = capacity;
	}
	g->psb_offsets[g->psb_count++] = g->size;
	return 0;
}

/* PSB+ (SDM 36.3.7): PSB, then the state packets in the order the SDM lists
 * them (the order is not fixed; Skylake writes MODE.Exec and FUP first): TSC,
 * TMA, CBR, and when PacketEn is set MODE.Exec and FUP with the IP of the
 * next instruction; then PSBEND. No MODE.TSX: the modelled CPU has no TSX. The
 * pending TNT goes out first. The last IP is reset at PSB, and only RETs
 * whose CALLs follow the latest PSB may be compressed (SDM 36.2.1.2), so the
 * return stack starts empty. */
static int emit_psb_plus(struct ptgen *g, uint64_t ip, uint64_t tsc)
{
	int err;

	err = flush_tnt(g);
	if (err < 0)
		return err;
	err = remember_psb_offset(g);
	if (err < 0)
		return err;
	err = emit_simple(g, ppt_psb);
	if (err < 0)
		return err;
	g->last_ip = 0;
	g->last_ip_unreliable = false;
	ret_stack_clear(g);
	g->mode_exec_since_psb = false;
	err = emit_timing_state(g, tsc);
	if (err < 0)
		return err;
	if (g->packet_en) {
		err = emit_mode_exec(g);
		if (err < 0)
			return err;
		err = emit_ip_packet(g, ppt_fup, ip);
		if (err < 0)
			return err;
	}
	return emit_simple(g, ppt_psbend);
}

static bool psb_due(const struct ptgen *g)
{
	uint64_t since_psb;

	if (!g->psb_count)
		return true;
	since_psb = g->size - g->psb_offsets[g->psb_count - 1];
	return since_psb >= (1ull << (11 + g->config.psb_period));
}

/* What happens first at time tsc: the MTCs that fell due since the last
 * call. */
static int advance_time(struct ptgen *g, uint64_t tsc)
{
	if (tsc < g->last_tsc)
		return -pte_invalid;
	g->last_tsc = tsc;
	return emit_due_mtcs(g, tsc);
}

/* A PSB+ once the period has passed, at the boundary before the instruction
 * at ip (ptgen_insn) or before user code resumes (ptgen_enable). */
static int emit_psb_if_due(struct ptgen *g, uint64_t ip, uint64_t tsc)
{
	if (g->in_overflow || !psb_due(g))
		return 0;
	return emit_psb_plus(g, ip, tsc);
}

/* Timing (re)starts at tsc: the cycle counter, and the MTC schedule. */
static void restart_timing(struct ptgen *g, uint64_t tsc)
{
	g->cyc_reference = cycles_at(g, tsc);
	if (g->config.mtc)
		schedule_next_mtc(g, tsc);
}

/* The first PSB+ starts the trace: TraceEn is set in the kernel while
 * PacketEn is still clear (user-only tracing), so with PacketByteCnt = 0 the
 * processor writes PSB+ without MODE.Exec or FUP (Table 36-50, case 2b); that
 * PSB+ carries the TSC that TraceEn 0 -> 1 produces (SDM 36.4.2.11). Timing
 * starts there too: the cycle counter and the MTC schedule. */
static int start_trace(struct ptgen *g, uint64_t tsc)
{
	g->last_tsc = tsc;
	restart_timing(g, tsc);
	return emit_psb_plus(g, 0, tsc);
}

/* Returning to user space enables packets with TIP.PGE, after MODE.Exec if
 * none was sent since the last PSB (Table 36-50, case 10b: SYSRET or IRET,
 * a far branch into user code). That case lists no TSC: TSC comes with
 * TraceEn 0 -> 1 (the first enable) and after timing stops (SDM 36.4.2.11). */
int ptgen_enable(struct ptgen *g, uint64_t ip, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (g->packet_en || g->switched_out)
		return -pte_bad_context;
	if (!g->psb_count && !g->in_overflow) {
		err = start_trace(g, tsc);
		if (err < 0)
			return err;
	}
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	err = emit_psb_if_due(g, ip, tsc);
	if (err < 0)
		return err;
	g->packet_en = true;
	if (g->in_overflow)
		return 0;
	err = emit_cyc_if_due(g, tsc);
	if (err < 0)
		return err;
	if (!g->mode_exec_since_psb) {
		err = emit_mode_exec(g);
		if (err < 0)
			return err;
	}
	return emit_ip_packet(g, ppt_tip_pge, ip);
}

/* A TIP for an indirect transfer, after the branches before it. */
static int emit_tip(struct ptgen *g, uint64_t target, uint64_t tsc)
{
	int err;

	err = flush_tnt(g);
	if (err < 0)
		return err;
	err = emit_cyc_if_due(g, tsc);
	if (err < 0)
		return err;
	return emit_ip_packet(g, ppt_tip, target);
}

/* A near RET is compressed to a taken TNT bit when its target is the return
 * address on top of the stack (SDM 36.4.2.2).
 *
 * An uncompressed RET (TIP) also empties the stack when it is not empty.
 * The SDM's decoder recipe and perf's decoder pop an entry for every RET;
 * libipt pops only for compressed ones. After a RET to somewhere else than
 * the top entry (a signal handler returning to its restorer, the unwinder's
 * return to a landing pad), a later compressed RET would therefore be read
 * differently by the two. Emptying the stack, so that only RETs of later
 * CALLs are compressed, is something hardware may always do (any RET may go
 * uncompressed), and it keeps both decoders right. */
static int near_return(struct ptgen *g, uint64_t target, uint64_t tsc)
{
	if (!g->config.noretcomp && g->ret_depth && ret_stack_top(g) == target) {
		ret_stack_pop(g);
		return add_tnt_bit(g, true, tsc);
	}
	ret_stack_clear(g);
	return emit_tip(g, target, tsc);
}

/* Leaving user space by syscall/sysenter: TIP.PGD with the IP suppressed,
 * after the pending TNT (Table 36-50, case 10c; libipt's
 * syscall-sysret-cpl_3.ptt and direct_call-tip_pgd_noip-syscall.ptt). */
static int leave_by_syscall(struct ptgen *g, uint64_t tsc)
{
	int err;

	g->packet_en = false;
	err = flush_tnt(g);
	if (err < 0)
		return err;
	err = emit_cyc_if_due(g, tsc);
	if (err < 0)
		return err;
	return emit_pgd_suppressed(g);
}

static int insn_packets(struct ptgen *g, uint64_t ip, unsigned size, enum ptgen_class cls,
			uint64_t next_ip, uint64_t tsc)
{
	uint64_t fallthrough = ip + size;

	switch (cls) {
	case PTGEN_OTHER:
	case PTGEN_JMP:
		return 0;
	case PTGEN_JCC:
		return add_tnt_bit(g, next_ip != fallthrough, tsc);
	case PTGEN_JMP_IND:
		return emit_tip(g, next_ip, tsc);
	case PTGEN_CALL:
		/* Zero-length calls (to the next instruction, to read the IP)
		 * are not pushed (SDM 36.4.2.2; libipt and perf skip them). */
		if (next_ip != fallthrough)
			ret_stack_push(g, fallthrough);
		return 0;
	case PTGEN_CALL_IND:
		ret_stack_push(g, fallthrough);
		return emit_tip(g, next_ip, tsc);
	case PTGEN_RET:
		return near_return(g, next_ip, tsc);
	case PTGEN_SYSCALL:
		return leave_by_syscall(g, tsc);
	}
	return -pte_invalid;
}

/* While overflowing nothing is written, but the state that later packets
 * depend on (is tracing on?) still follows the thread. */
static int insn_during_overflow(struct ptgen *g, enum ptgen_class cls)
{
	if (cls == PTGEN_SYSCALL)
		g->packet_en = false;
	return 0;
}

int ptgen_insn(struct ptgen *g, uint64_t ip, unsigned size, enum ptgen_class cls, uint64_t next_ip,
	       uint64_t tsc)
{
	int err;

	if (!g || !size || size > 15 || (unsigned)cls > PTGEN_SYSCALL)
		return -pte_invalid;
	if (!g->packet_en)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	err = emit_psb_if_due(g, ip, tsc);
	if (err < 0)
		return err;
	if (g->in_overflow)
		return insn_during_overflow(g, cls);
	return insn_packets(g, ip, size, cls, next_ip, tsc);
}

/* An interrupt, exception or signal before the instruction at ip retired:
 * FUP(ip) binds the event to that instruction, TIP.PGD() without an IP
 * follows as the target is in the kernel (Table 36-50, case 11c; SDM
 * 36.4.2.6). Software interrupts (INT n, INT3) produce the same packets with
 * the IP of the INT instruction (Table 36-22, "INT n"), so they are reported
 * through this function too. */
int ptgen_async_disable(struct ptgen *g, uint64_t ip, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (!g->packet_en)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	g->packet_en = false;
	if (g->in_overflow)
		return 0;
	err = flush_tnt(g);
	if (err < 0)
		return err;
	err = emit_cyc_if_due(g, tsc);
	if (err < 0)
		return err;
	err = emit_ip_packet(g, ppt_fup, ip);
	if (err < 0)
		return err;
	return emit_pgd_suppressed(g);
}

int ptgen_async_branch(struct ptgen *g, uint64_t ip, uint64_t to, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (!g->packet_en)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	err = emit_psb_if_due(g, ip, tsc);
	if (err < 0 || g->in_overflow)
		return err;
	err = flush_tnt(g);
	if (err < 0)
		return err;
	err = emit_cyc_if_due(g, tsc);
	if (err < 0)
		return err;
	err = emit_ip_packet(g, ppt_fup, ip);
	if (err < 0)
		return err;
	return emit_ip_packet(g, ppt_tip, to);
}

/* The branches decided before the overflow are written; then nothing until
 * overflow_end. The return stack does not survive an overflow (SDM Table
 * 36-35: "no RET compression is allowed across an overflow"). */
int ptgen_overflow_begin(struct ptgen *g, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (g->in_overflow || !g->psb_count)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	err = flush_tnt(g);
	if (err < 0)
		return err;
	g->in_overflow = true;
	ret_stack_clear(g);
	return 0;
}

/* OVF, the timing that was lost with the dropped packets (TSC, TMA, CBR, as
 * in libipt's ovf-timing-fup.ptt), then FUP(ip) if the overflow resolves
 * while tracing is on; otherwise the next TIP.PGE binds to it (SDM Table
 * 36-15, "Overflow"). The cycle counter restarts at OVF (SDM Table 36-35).
 *
 * The SDM lets the IP packet after OVF be compressed against the last IP
 * sent before the overflow, but libipt resets its last IP at OVF while perf
 * keeps it, so that packet is written uncompressed (always allowed) and both
 * read it the same. */
int ptgen_overflow_end(struct ptgen *g, uint64_t ip, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (!g->in_overflow)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	g->in_overflow = false;
	err = emit_simple(g, ppt_ovf);
	if (err < 0)
		return err;
	err = emit_timing_state(g, tsc);
	if (err < 0)
		return err;
	restart_timing(g, tsc);
	g->last_ip_unreliable = true;
	if (!g->packet_en)
		return 0;
	return emit_ip_packet(g, ppt_fup, ip);
}

/* Only while the thread is in the kernel: user code never runs scheduled
 * out. The MTCs due before the switch are written first. */
int ptgen_switch_out(struct ptgen *g, uint64_t tsc)
{
	int err;

	if (!g)
		return -pte_invalid;
	if (g->packet_en || g->switched_out || !g->psb_count)
		return -pte_bad_context;
	err = advance_time(g, tsc);
	if (err < 0)
		return err;
	g->switched_out = true;
	return 0;
}

int ptgen_switch_in(struct ptgen *g, uint64_t tsc)
{
	if (!g)
		return -pte_invalid;
	if (!g->switched_out)
		return -pte_bad_context;
	if (tsc < g->last_tsc)
		return -pte_invalid;
	g->switched_out = false;
	g->last_tsc = tsc;
	restart_timing(g, tsc);
	/* No TNT can be pending: it went out with the TIP.PGD before. */
	if (g->in_overflow)
		return 0;
	return emit_timing_state(g, tsc);
}

int ptgen_flush(struct ptgen *g)
{
	if (!g)
		return -pte_invalid;
	if (g->in_overflow)
		return 0;
	return flush_tnt(g);
}

const uint8_t *ptgen_data(const struct ptgen *g, size_t *size)
{
	*size = g->size;
	return g->data;
}

size_t ptgen_psb_count(const struct ptgen *g)
{
	return g->psb_count;
}

uint64_t ptgen_psb_offset(const struct ptgen *g, size_t index)
{
	return index < g->psb_count ? g->psb_offsets[index] : UINT64_MAX;
}

uint64_t ptgen_packet_count(const struct ptgen *g)
{
	return g->packet_count;
}
