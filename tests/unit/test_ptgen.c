/* test_ptgen.c: softpt's packet generator writes streams that libipt decodes
 * back to exactly the instruction flow it was fed, under every option, and
 * its packets follow the SDM's rules.
 *
 * The programs are hand-assembled x86-64 bytes; a small interpreter for the
 * few instructions they use gives the flow (what single-stepping would
 * see), and libipt's instruction decoder reads the same bytes through an
 * image callback. Not here: perf's decoder (the softpt end-to-end tests run
 * it on real captures).
 */
#include <criterion/criterion.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/softpt/ptgen.h"

/* ---- Programs ---------------------------------------------------------- */

enum { CODE_BYTES = 1 << 16 };

struct program {
	uint64_t base;
	uint8_t code[CODE_BYTES];
	size_t size;
};

enum reg { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI };

static struct program *program_new(uint64_t base)
{
	struct program *p = calloc(1, sizeof(*p));

	cr_assert_not_null(p);
	p->base = base;
	return p;
}

static uint64_t here(const struct program *p)
{
	return p->base + p->size;
}

static void put(struct program *p, const uint8_t *bytes, size_t n)
{
	cr_assert_leq(p->size + n, sizeof(p->code));
	memcpy(p->code + p->size, bytes, n);
	p->size += n;
}

static void put_u32(struct program *p, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	put(p, b, 4);
}

static void put_u64(struct program *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p, (uint32_t)(v >> 32));
}

static void op1(struct program *p, uint8_t a)
{
	put(p, &a, 1);
}

static void op2(struct program *p, uint8_t a, uint8_t b)
{
	uint8_t bytes[2] = { a, b };

	put(p, bytes, 2);
}

static void nop(struct program *p)
{
	op1(p, 0x90);
}

static void mov_r32_imm(struct program *p, enum reg r, uint32_t v)
{
	op1(p, (uint8_t)(0xb8 + r));
	put_u32(p, v);
}

static void mov_rax_imm64(struct program *p, uint64_t v)
{
	op2(p, 0x48, 0xb8);
	put_u64(p, v);
}

/* Returns where the 64-bit immediate is, to patch in a later label. */
static size_t mov_rax_label(struct program *p)
{
	size_t at = p->size + 2;

	mov_rax_imm64(p, 0);
	return at;
}

static void patch_u64(struct program *p, size_t at, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p->code[at + i] = (uint8_t)(v >> (8 * i));
}

static void dec_r32(struct program *p, enum reg r)
{
	op2(p, 0xff, (uint8_t)(0xc8 + r));
}

static void and_r32_imm8(struct program *p, enum reg r, uint8_t v)
{
	uint8_t bytes[3] = { 0x83, (uint8_t)(0xe0 + r), v };

	put(p, bytes, 3);
}

static void push_r64(struct program *p, enum reg r)
{
	op1(p, (uint8_t)(0x50 + r));
}

static void pop_r64(struct program *p, enum reg r)
{
	op1(p, (uint8_t)(0x58 + r));
}

/* mov [rsp], rax: overwrite the return address. */
static void store_rax_at_rsp(struct program *p)
{
	uint8_t bytes[4] = { 0x48, 0x89, 0x04, 0x24 };

	put(p, bytes, 4);
}

static void ret(struct program *p)
{
	op1(p, 0xc3);
}

static void syscall_insn(struct program *p)
{
	op2(p, 0x0f, 0x05);
}

static void hlt(struct program *p)
{
	op1(p, 0xf4);
}

static void call_r64(struct program *p, enum reg r)
{
	op2(p, 0xff, (uint8_t)(0xd0 + r));
}

static void jmp_r64(struct program *p, enum reg r)
{
	op2(p, 0xff, (uint8_t)(0xe0 + r));
}

static void rel32_to(struct program *p, uint64_t target)
{
	put_u32(p, (uint32_t)(target - (here(p) + 4)));
}

static void call_to(struct program *p, uint64_t target)
{
	op1(p, 0xe8);
	rel32_to(p, target);
}

static void jmp_to(struct program *p, uint64_t target)
{
	op1(p, 0xe9);
	rel32_to(p, target);
}

/* Forward branches: emit now, patch the rel32 once the target is known. */
enum cond { JZ = 0x84, JNZ = 0x85 };

static size_t jcc_forward(struct program *p, enum cond cc)
{
	op2(p, 0x0f, (uint8_t)cc);
	put_u32(p, 0);
	return p->size - 4;
}

static void jcc_back(struct program *p, enum cond cc, uint64_t target)
{
	op2(p, 0x0f, (uint8_t)cc);
	rel32_to(p, target);
}

static void jcc_short_back(struct program *p, enum cond cc, uint64_t target)
{
	op2(p, (uint8_t)(cc - 0x10), (uint8_t)(int8_t)(target - (here(p) + 2)));
}

static size_t call_forward(struct program *p)
{
	op1(p, 0xe8);
	put_u32(p, 0);
	return p->size - 4;
}

static void patch_rel32(struct program *p, size_t at, uint64_t target)
{
	uint32_t rel = (uint32_t)(target - (p->base + at + 4));

	for (int i = 0; i < 4; i++)
		p->code[at + i] = (uint8_t)(rel >> (8 * i));
}

/* ---- The flow: what a single-stepper sees ------------------------------ */

struct step {
	uint64_t ip;
	unsigned size;
	enum ptgen_class cls;
	uint64_t next_ip;
};

struct flow {
	struct step *steps;
	size_t count, capacity;
};

enum { STACK_SLOTS = 4096 };
static const uint64_t STACK_TOP = 0x7ffe00000000ull;

struct machine {
	uint64_t reg[8];
	bool zf;
	uint64_t stack[STACK_SLOTS];
};

static uint64_t *stack_slot(struct machine *m, uint64_t addr)
{
	uint64_t base = STACK_TOP - 8ull * STACK_SLOTS;

	cr_assert(addr >= base && addr < STACK_TOP && !(addr & 7), "stack address %#lx",
		  (unsigned long)addr);
	return &m->stack[(addr - base) / 8];
}

static void push(struct machine *m, uint64_t v)
{
	m->reg[RSP] -= 8;
	*stack_slot(m, m->reg[RSP]) = v;
}

static uint64_t pop(struct machine *m)
{
	uint64_t v = *stack_slot(m, m->reg[RSP]);

	m->reg[RSP] += 8;
	return v;
}

static uint32_t read_u32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void flow_add(struct flow *f, struct step s)
{
	if (f->count == f->capacity) {
		f->capacity = f->capacity ? 2 * f->capacity : 1024;
		f->steps = realloc(f->steps, f->capacity * sizeof(*f->steps));
		cr_assert_not_null(f->steps);
	}
	f->steps[f->count++] = s;
}

/* Runs the program from entry until HLT; SYSCALL returns to the next
 * instruction. Every retired instruction becomes a step. */
static struct flow run_program(const struct program *p, uint64_t entry)
{
	struct machine *m = calloc(1, sizeof(*m));
	struct flow f = { 0 };
	uint64_t ip = entry;

	cr_assert_not_null(m);
	m->reg[RSP] = STACK_TOP - 64;
	for (;;) {
		const uint8_t *b;
		struct step s = { .ip = ip, .cls = PTGEN_OTHER };
		int32_t rel;

		cr_assert(ip >= p->base && ip < p->base + p->size, "ip %#lx outside the program",
			  (unsigned long)ip);
		cr_assert_lt(f.count, 10000000, "the program does not halt");
		b = p->code + (ip - p->base);
		if (b[0] == 0xf4)
			break;
		if (b[0] == 0x90) {
			s.size = 1;
		} else if (b[0] >= 0xb8 && b[0] <= 0xbf) {
			m->reg[b[0] - 0xb8] = read_u32(b + 1);
			s.size = 5;
		} else if (b[0] == 0x48 && b[1] == 0xb8) {
			m->reg[RAX] = read_u32(b + 2) | (uint64_t)read_u32(b + 6) << 32;
			s.size = 10;
		} else if (b[0] == 0x48 && b[1] == 0x89 && b[2] == 0x04 && b[3] == 0x24) {
			*stack_slot(m, m->reg[RSP]) = m->reg[RAX];
			s.size = 4;
		} else if (b[0] == 0xff && b[1] >= 0xc8 && b[1] <= 0xcf) {
			m->reg[b[1] - 0xc8] = (uint32_t)(m->reg[b[1] - 0xc8] - 1);
			m->zf = m->reg[b[1] - 0xc8] == 0;
			s.size = 2;
		} else if (b[0] == 0x83 && b[1] >= 0xe0 && b[1] <= 0xe7) {
			m->reg[b[1] - 0xe0] = (uint32_t)(m->reg[b[1] - 0xe0] & b[2]);
			m->zf = m->reg[b[1] - 0xe0] == 0;
			s.size = 3;
		} else if (b[0] >= 0x50 && b[0] <= 0x57) {
			push(m, m->reg[b[0] - 0x50]);
			s.size = 1;
		} else if (b[0] >= 0x58 && b[0] <= 0x5f) {
			m->reg[b[0] - 0x58] = pop(m);
			s.size = 1;
		} else if (b[0] == 0x74 || b[0] == 0x75) {
			s.size = 2;
			s.cls = PTGEN_JCC;
			rel = (int8_t)b[1];
			s.next_ip = ip + 2 + ((b[0] == 0x74) == m->zf ? (uint64_t)(int64_t)rel : 0);
		} else if (b[0] == 0x0f && (b[1] == 0x84 || b[1] == 0x85)) {
			s.size = 6;
			s.cls = PTGEN_JCC;
			rel = (int32_t)read_u32(b + 2);
			s.next_ip = ip + 6 + ((b[1] == 0x84) == m->zf ? (uint64_t)(int64_t)rel : 0);
		} else if (b[0] == 0xe9) {
			s.size = 5;
			s.cls = PTGEN_JMP;
			s.next_ip = ip + 5 + (uint64_t)(int64_t)(int32_t)read_u32(b + 1);
		} else if (b[0] == 0xe8) {
			s.size = 5;
			s.cls = PTGEN_CALL;
			s.next_ip = ip + 5 + (uint64_t)(int64_t)(int32_t)read_u32(b + 1);
			push(m, ip + 5);
		} else if (b[0] == 0xff && b[1] >= 0xd0 && b[1] <= 0xd7) {
			s.size = 2;
			s.cls = PTGEN_CALL_IND;
			s.next_ip = m->reg[b[1] - 0xd0];
			push(m, ip + 2);
		} else if (b[0] == 0xff && b[1] >= 0xe0 && b[1] <= 0xe7) {
			s.size = 2;
			s.cls = PTGEN_JMP_IND;
			s.next_ip = m->reg[b[1] - 0xe0];
		} else if (b[0] == 0xc3) {
			s.size = 1;
			s.cls = PTGEN_RET;
			s.next_ip = pop(m);
		} else if (b[0] == 0x0f && b[1] == 0x05) {
			s.size = 2;
			s.cls = PTGEN_SYSCALL;
			s.next_ip = ip + 2;
		} else {
			cr_assert_fail("the interpreter does not know opcode %02x at %#lx", b[0],
				       (unsigned long)ip);
		}
		if (s.cls == PTGEN_OTHER)
			s.next_ip = ip + s.size;
		flow_add(&f, s);
		ip = s.next_ip;
	}
	free(m);
	return f;
}

/* ---- Feeding ptgen ----------------------------------------------------- */

enum { NONE = -1 };

struct feed_plan {
	uint64_t tsc_start, tsc_per_insn, tsc_in_kernel;
	/* An interrupt before these instructions retire; tracing resumes at
	 * the same instruction. */
	const size_t *async_at;
	size_t async_count;
	/* Packets are lost from before flow[overflow_begin] until before
	 * flow[overflow_end]. */
	long overflow_begin, overflow_end;
};

struct fed {
	uint64_t *tsc;	       /* the time each step was fed at */
	size_t *psb_next_step; /* for each PSB, the step fed after it */
	size_t psb_count;
};

static bool async_point(const struct feed_plan *plan, size_t i)
{
	for (size_t k = 0; k < plan->async_count; k++)
		if (plan->async_at[k] == i)
			return true;
	return false;
}

static void note_new_psbs(struct ptgen *g, struct fed *fed, size_t next_step)
{
	while (fed->psb_count < ptgen_psb_count(g))
		fed->psb_next_step[fed->psb_count++] = next_step;
}

static struct fed feed(struct ptgen *g, const struct flow *f, const struct feed_plan *plan)
{
	struct fed fed = { 0 };
	uint64_t tsc = plan->tsc_start;

	fed.tsc = calloc(f->count + 1, sizeof(*fed.tsc));
	fed.psb_next_step = calloc(f->count + 64, sizeof(*fed.psb_next_step));
	cr_assert(fed.tsc && fed.psb_next_step);
	cr_assert_eq(ptgen_enable(g, f->steps[0].ip, tsc), 0);
	note_new_psbs(g, &fed, 0);
	for (size_t i = 0; i < f->count; i++) {
		const struct step *s = &f->steps[i];

		tsc += plan->tsc_per_insn;
		if (async_point(plan, i)) {
			cr_assert_eq(ptgen_async_disable(g, s->ip, tsc), 0);
			tsc += plan->tsc_in_kernel;
			cr_assert_eq(ptgen_enable(g, s->ip, tsc), 0);
			tsc += plan->tsc_per_insn;
		}
		if ((long)i == plan->overflow_begin)
			cr_assert_eq(ptgen_overflow_begin(g, tsc), 0);
		if ((long)i == plan->overflow_end)
			cr_assert_eq(ptgen_overflow_end(g, s->ip, tsc), 0);
		note_new_psbs(g, &fed, i);
		cr_assert_eq(ptgen_insn(g, s->ip, s->size, s->cls, s->next_ip, tsc), 0, "step %zu",
			     i);
		fed.tsc[i] = tsc;
		note_new_psbs(g, &fed, i);
		if (s->cls == PTGEN_SYSCALL && i + 1 < f->count) {
			tsc += plan->tsc_in_kernel;
			cr_assert_eq(ptgen_enable(g, s->next_ip, tsc), 0);
			note_new_psbs(g, &fed, i + 1);
		}
	}
	cr_assert_eq(ptgen_flush(g), 0);
	return fed;
}

static void fed_free(struct fed *fed)
{
	free(fed->tsc);
	free(fed->psb_next_step);
}

/* feed, for callers that need only the trace. */
static void feed_only(struct ptgen *g, const struct flow *f, const struct feed_plan *plan)
{
	struct fed fed = feed(g, f, plan);

	fed_free(&fed);
}

/* ---- Decoding with libipt ---------------------------------------------- */

struct decoded_insn {
	uint64_t ip;
	enum pt_insn_class iclass;
	uint64_t time;
	bool have_time;
};

struct decoded {
	struct decoded_insn *insns;
	size_t count, capacity;
	int error;	  /* 0, or the libipt error that stopped decoding */
	size_t overflows; /* overflow events */
	uint64_t overflow_ip;
	size_t insns_before_overflow;
	size_t disables, enables;
};

static int read_code(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *context)
{
	const struct program *p = context;
	size_t n;

	if (ip < p->base || ip >= p->base + p->size)
		return -pte_nomap;
	n = p->base + p->size - ip;
	if (n > size)
		n = size;
	memcpy(buffer, p->code + (ip - p->base), n);
	return (int)n;
}

static void decoder_config(struct pt_config *c, const uint8_t *data, size_t size,
			   const struct ptgen_config *gc)
{
	pt_config_init(c);
	c->begin = (uint8_t *)data;
	c->end = (uint8_t *)data + size;
	c->cpuid_0x15_eax = gc->tsc_ctc_ratio_d;
	c->cpuid_0x15_ebx = gc->tsc_ctc_ratio_n;
	c->mtc_freq = (uint8_t)gc->mtc_period;
	c->nom_freq = gc->max_nonturbo_ratio;
}

static void record(struct decoded *out, const struct pt_insn *insn, struct pt_insn_decoder *d)
{
	struct decoded_insn *di;

	if (out->count == out->capacity) {
		out->capacity = out->capacity ? 2 * out->capacity : 1024;
		out->insns = realloc(out->insns, out->capacity * sizeof(*out->insns));
		cr_assert_not_null(out->insns);
	}
	di = &out->insns[out->count++];
	di->ip = insn->ip;
	di->iclass = insn->iclass;
	di->have_time = pt_insn_time(d, &di->time, NULL, NULL) == 0;
}

/* More than any flow here: the decoder went astray. */
enum { MAX_DECODED = 4000000 };

/* Decodes from the first PSB at or after sync_offset (or the start). */
static struct decoded decode(const uint8_t *data, size_t size, const struct program *p,
			     const struct ptgen_config *gc, uint64_t sync_offset)
{
	struct decoded out = { 0 };
	struct pt_insn_decoder *d;
	struct pt_config c;
	int status;

	decoder_config(&c, data, size, gc);
	d = pt_insn_alloc_decoder(&c);
	cr_assert_not_null(d);
	cr_assert_eq(pt_image_set_callback(pt_insn_get_image(d), read_code, (void *)p), 0);
	status = sync_offset ? pt_insn_sync_set(d, sync_offset) : pt_insn_sync_forward(d);
	for (;;) {
		struct pt_insn insn;

		while (status >= 0 && (status & pts_event_pending)) {
			struct pt_event ev;

			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
			if (ev.type == ptev_overflow) {
				out.overflows++;
				out.overflow_ip = ev.variant.overflow.ip;
				out.insns_before_overflow = out.count;
			} else if (ev.type == ptev_disabled || ev.type == ptev_async_disabled) {
				out.disables++;
			} else if (ev.type == ptev_enabled) {
				out.enables++;
			}
		}
		/* pts_eos: the trace has ended, yet instructions that need no
		 * trace still follow; -pte_eos comes when trace is needed. */
		if (status < 0)
			break;
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (status < 0)
			break;
		record(&out, &insn, d);
		/* A wrong turn can end in a loop that needs no trace. */
		if (out.count > MAX_DECODED) {
			status = -pte_internal;
			break;
		}
	}
	if (status < 0 && status != -pte_eos)
		out.error = status;
	pt_insn_free_decoder(d);
	return out;
}

static enum pt_insn_class expected_class(enum ptgen_class cls)
{
	switch (cls) {
	case PTGEN_OTHER:
		return ptic_other;
	case PTGEN_JCC:
		return ptic_cond_jump;
	case PTGEN_JMP:
	case PTGEN_JMP_IND:
		return ptic_jump;
	case PTGEN_CALL:
	case PTGEN_CALL_IND:
		return ptic_call;
	case PTGEN_RET:
		return ptic_return;
	case PTGEN_SYSCALL:
		return ptic_far_call;
	}
	return ptic_error;
}

/* decoded[from_decoded ...] equals flow[from_step ...] for count steps. */
static void assert_same_flow(const struct decoded *dec, size_t from_decoded, const struct flow *f,
			     size_t from_step, size_t count)
{
	cr_assert_leq(from_decoded + count, dec->count, "decoded %zu instructions, want %zu",
		      dec->count, from_decoded + count);
	for (size_t k = 0; k < count; k++) {
		const struct decoded_insn *di = &dec->insns[from_decoded + k];
		const struct step *s = &f->steps[from_step + k];

		cr_assert_eq(di->ip, s->ip, "instruction %zu: decoded %#lx, executed %#lx",
			     from_step + k, (unsigned long)di->ip, (unsigned long)s->ip);
		cr_assert_eq(di->iclass, expected_class(s->cls), "instruction %zu at %#lx: class",
			     from_step + k, (unsigned long)s->ip);
	}
}

static void assert_decodes_to_flow(const struct decoded *dec, const struct flow *f)
{
	cr_assert_eq(dec->error, 0, "libipt: %s after %zu instructions",
		     pt_errstr(pt_errcode(dec->error)), dec->count);
	cr_assert_eq(dec->count, f->count, "decoded %zu instructions, executed %zu", dec->count,
		     f->count);
	assert_same_flow(dec, 0, f, 0, f->count);
}

/* ---- Packets ----------------------------------------------------------- */

struct packets {
	struct pt_packet *list;
	uint64_t *offset;
	size_t count;
};

static struct packets read_packets(const uint8_t *data, size_t size, const struct ptgen_config *gc)
{
	struct packets out = { 0 };
	size_t capacity = 1024;
	struct pt_packet_decoder *d;
	struct pt_config c;
	int status;

	decoder_config(&c, data, size, gc);
	d = pt_pkt_alloc_decoder(&c);
	cr_assert_not_null(d);
	cr_assert_eq(pt_pkt_sync_set(d, 0), 0);
	out.list = malloc(capacity * sizeof(*out.list));
	out.offset = malloc(capacity * sizeof(*out.offset));
	for (;;) {
		uint64_t offset;

		cr_assert_eq(pt_pkt_get_offset(d, &offset), 0);
		if (out.count == capacity) {
			capacity *= 2;
			out.list = realloc(out.list, capacity * sizeof(*out.list));
			out.offset = realloc(out.offset, capacity * sizeof(*out.offset));
		}
		cr_assert(out.list && out.offset);
		status = pt_pkt_next(d, &out.list[out.count], sizeof(out.list[0]));
		if (status == -pte_eos)
			break;
		cr_assert_geq(status, 0, "packet decoder: %s at %#lx",
			      pt_errstr(pt_errcode(status)), (unsigned long)offset);
		out.offset[out.count++] = offset;
	}
	pt_pkt_free_decoder(d);
	return out;
}

static size_t count_type(const struct packets *pk, enum pt_packet_type type)
{
	size_t n = 0;

	for (size_t i = 0; i < pk->count; i++)
		n += pk->list[i].type == type;
	return n;
}

static bool is_tnt(enum pt_packet_type type)
{
	return type == ppt_tnt_8 || type == ppt_tnt_64;
}

static size_t tnt_bits(const struct packets *pk)
{
	size_t n = 0;

	for (size_t i = 0; i < pk->count; i++)
		if (is_tnt(pk->list[i].type))
			n += pk->list[i].payload.tnt.bit_size;
	return n;
}

/* The full IP an IP packet stands for, given the last IP (SDM Table 36-18). */
static uint64_t full_ip(const struct pt_packet_ip *ip, uint64_t last_ip)
{
	switch (ip->ipc) {
	case pt_ipc_update_16:
		return (last_ip & ~0xffffull) | ip->ip;
	case pt_ipc_update_32:
		return (last_ip & ~0xffffffffull) | ip->ip;
	case pt_ipc_sext_48:
		return (uint64_t)((int64_t)(ip->ip << 16) >> 16);
	case pt_ipc_update_48:
		return (last_ip & ~0xffffffffffffull) | ip->ip;
	case pt_ipc_full:
		return ip->ip;
	case pt_ipc_suppressed:
		break;
	}
	return last_ip;
}

static bool has_ip(enum pt_packet_type type)
{
	return type == ppt_tip || type == ppt_fup || type == ppt_tip_pge || type == ppt_tip_pgd;
}

static void packets_free(struct packets *pk)
{
	free(pk->list);
	free(pk->offset);
}

/* ---- Configurations and programs used by several tests ------------------ */

static struct ptgen_config tsc_only(void)
{
	struct ptgen_config c = {
		.tsc = true,
		.psb_period = 3,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 2,
		.mtc_period = 3,
		.cbr = 29,
		.max_nonturbo_ratio = 12,
	};

	return c;
}

static struct ptgen_config with_mtc(void)
{
	struct ptgen_config c = tsc_only();

	c.mtc = true;
	return c;
}

static struct ptgen_config with_cyc(void)
{
	struct ptgen_config c = with_mtc();

	c.cyc = true;
	return c;
}

static const uint64_t USER_BASE = 0x7f3a1c200000ull;

/* main calls f 300 times in a loop; f branches on the counter's low bits, so
 * its JCC goes both ways; then an indirect call, an indirect jump and a
 * syscall; a second loop calls through a function pointer. */
static struct program *mixed_program(uint64_t base, uint32_t iterations)
{
	struct program *p = program_new(base);
	uint64_t loop, f, g, loop2;
	size_t call_f, skip, to_g, to_after, call_f2;

	mov_r32_imm(p, RCX, iterations);
	loop = here(p);
	call_f = call_forward(p);
	dec_r32(p, RCX);
	jcc_back(p, JNZ, loop);
	to_g = mov_rax_label(p);
	call_r64(p, RAX);
	to_after = mov_rax_label(p);
	jmp_r64(p, RAX);
	nop(p);
	patch_u64(p, to_after, here(p));
	syscall_insn(p);
	mov_r32_imm(p, RCX, 40);
	loop2 = here(p);
	call_f2 = call_forward(p);
	push_r64(p, RCX);
	mov_r32_imm(p, RAX, 0);
	pop_r64(p, RCX);
	dec_r32(p, RCX);
	jcc_short_back(p, JNZ, loop2);
	nop(p);
	/* The last syscall (exit) ends the trace with TIP.PGD, so decoding
	 * stops exactly at the end of the flow. */
	syscall_insn(p);
	hlt(p);

	f = here(p);
	patch_rel32(p, call_f, f);
	patch_rel32(p, call_f2, f);
	mov_r32_imm(p, RDX, 0);
	push_r64(p, RCX);
	pop_r64(p, RDX);
	and_r32_imm8(p, RDX, 3);
	skip = jcc_forward(p, JZ);
	nop(p);
	nop(p);
	patch_rel32(p, skip, here(p));
	ret(p);

	g = here(p);
	patch_u64(p, to_g, g);
	nop(p);
	ret(p);
	return p;
}

/* rec calls itself until RCX reaches zero: depth 100, beyond the 64 return
 * addresses PT keeps; main descends three times. */
static struct program *deep_recursion_program(uint64_t base)
{
	struct program *p = program_new(base);
	size_t call_rec[3], base_case;
	uint64_t rec;

	for (int k = 0; k < 3; k++) {
		mov_r32_imm(p, RCX, 100);
		call_rec[k] = call_forward(p);
	}
	syscall_insn(p);
	hlt(p);
	rec = here(p);
	for (int k = 0; k < 3; k++)
		patch_rel32(p, call_rec[k], rec);
	dec_r32(p, RCX);
	base_case = jcc_forward(p, JZ);
	call_to(p, rec);
	patch_rel32(p, base_case, here(p));
	ret(p);
	return p;
}

/* Calls through a retpoline-style thunk: the thunk's RET goes to the
 * target, not to its call's next instruction. */
static struct program *thunk_program(uint64_t base)
{
	struct program *p = program_new(base);
	size_t to_target, call_thunk, call_setup, call_leaf;
	uint64_t loop, thunk, spec, setup, target, leaf;

	mov_r32_imm(p, RCX, 50);
	loop = here(p);
	to_target = mov_rax_label(p);
	call_thunk = call_forward(p);
	dec_r32(p, RCX);
	jcc_back(p, JNZ, loop);
	syscall_insn(p);
	hlt(p);

	thunk = here(p);
	patch_rel32(p, call_thunk, thunk);
	call_setup = call_forward(p);
	spec = here(p);
	jmp_to(p, spec);
	setup = here(p);
	patch_rel32(p, call_setup, setup);
	store_rax_at_rsp(p);
	ret(p);

	target = here(p);
	patch_u64(p, to_target, target);
	call_leaf = call_forward(p);
	ret(p);
	leaf = here(p);
	patch_rel32(p, call_leaf, leaf);
	nop(p);
	ret(p);
	return p;
}

/* A signal: main calls f, whose second instruction is interrupted; the
 * kernel runs the handler, which returns (RET) to the restorer, whose
 * rt_sigreturn resumes f where it was interrupted. */
struct signal_program {
	struct program *p;
	uint64_t interrupted, handler, restorer;
};

static struct signal_program signal_program(uint64_t base)
{
	struct signal_program sp = { .p = program_new(base) };
	struct program *p = sp.p;
	size_t call_f, call_h;

	call_f = call_forward(p);
	syscall_insn(p);
	hlt(p);
	patch_rel32(p, call_f, here(p));
	nop(p);
	sp.interrupted = here(p);
	nop(p);
	nop(p);
	ret(p);
	/* The handler calls a helper, so that a compressed return follows
	 * the one that goes elsewhere. */
	sp.handler = here(p);
	call_h = call_forward(p);
	ret(p);
	patch_rel32(p, call_h, here(p));
	nop(p);
	ret(p);
	sp.restorer = here(p);
	syscall_insn(p);
	hlt(p);
	return sp;
}

/* The steps of that run, and the ptgen calls a tracer makes for it. */
static struct flow feed_signal(struct ptgen *g, const struct signal_program *sp)
{
	const uint64_t h = sp->handler, restorer = sp->restorer;
	struct flow main_part = run_program(sp->p, sp->p->base);
	struct flow handler = { 0 }, all = { 0 };
	uint64_t tsc = 1000;
	size_t k = 0;

	/* call helper; helper: nop, ret; the handler's RET goes to the
	 * restorer the kernel put in its frame; rt_sigreturn. */
	flow_add(&handler, (struct step){ h, 5, PTGEN_CALL, h + 6 });
	flow_add(&handler, (struct step){ h + 6, 1, PTGEN_OTHER, h + 7 });
	flow_add(&handler, (struct step){ h + 7, 1, PTGEN_RET, h + 5 });
	flow_add(&handler, (struct step){ h + 5, 1, PTGEN_RET, restorer });
	flow_add(&handler, (struct step){ restorer, 2, PTGEN_SYSCALL, restorer + 2 });
	cr_assert_eq(ptgen_enable(g, main_part.steps[0].ip, tsc), 0);
	for (size_t i = 0; i < main_part.count; i++) {
		const struct step *s = &main_part.steps[i];

		if (s->ip == sp->interrupted && k == 0) {
			cr_assert_eq(ptgen_async_disable(g, s->ip, tsc += 10), 0);
			cr_assert_eq(ptgen_enable(g, sp->handler, tsc += 1000), 0);
			for (k = 0; k < handler.count; k++) {
				const struct step *hs = &handler.steps[k];

				cr_assert_eq(ptgen_insn(g, hs->ip, hs->size, hs->cls, hs->next_ip,
							tsc += 10),
					     0);
				flow_add(&all, *hs);
			}
			cr_assert_eq(ptgen_enable(g, s->ip, tsc += 1000), 0);
		}
		cr_assert_eq(ptgen_insn(g, s->ip, s->size, s->cls, s->next_ip, tsc += 10), 0);
		flow_add(&all, *s);
		if (s->cls == PTGEN_SYSCALL && i + 1 < main_part.count)
			cr_assert_eq(ptgen_enable(g, s->next_ip, tsc += 1000), 0);
	}
	cr_assert_eq(ptgen_flush(g), 0);
	free(main_part.steps);
	free(handler.steps);
	return all;
}

static struct ptgen *new_generator(const struct ptgen_config *c)
{
	struct ptgen *g = ptgen_new(c);

	cr_assert_not_null(g);
	return g;
}

static const struct feed_plan PLAIN = {
	.tsc_start = 1000000,
	.tsc_per_insn = 37,
	.tsc_in_kernel = 5000,
	.overflow_begin = NONE,
	.overflow_end = NONE,
};

/* Feeds the whole flow and checks libipt gives it back. */
static void round_trip(const struct program *p, const struct ptgen_config *c,
		       const struct feed_plan *plan)
{
	struct flow f = run_program(p, p->base);
	struct ptgen *g = new_generator(c);
	struct decoded dec;
	const uint8_t *data;
	size_t size;

	feed_only(g, &f, plan);
	data = ptgen_data(g, &size);
	dec = decode(data, size, p, c, 0);
	assert_decodes_to_flow(&dec, &f);
	free(dec.insns);
	free(f.steps);
	ptgen_free(g);
}

/* ---- Round trips ------------------------------------------------------- */

Test(ptgen, decodes_to_the_flow_with_return_compression)
{
	struct program *p = mixed_program(USER_BASE, 300);
	struct ptgen_config c = tsc_only();

	round_trip(p, &c, &PLAIN);
	free(p);
}

Test(ptgen, decodes_to_the_flow_without_return_compression)
{
	struct program *p = mixed_program(USER_BASE, 300);
	struct ptgen_config c = tsc_only();

	c.noretcomp = true;
	round_trip(p, &c, &PLAIN);
	free(p);
}

Test(ptgen, decodes_to_the_flow_in_each_timing_mode)
{
	struct ptgen_config configs[] = { tsc_only(), with_mtc(), with_cyc() };
	struct program *p = mixed_program(USER_BASE, 300);

	configs[2].cyc_thresh = 3;
	for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); k++)
		round_trip(p, &configs[k], &PLAIN);
	free(p);
}

Test(ptgen, decodes_low_addresses_compressed_against_zero)
{
	/* A non-PIE executable: after each PSB the IPs fit in 32 bits. */
	struct program *p = mixed_program(0x401000, 2000);
	struct ptgen_config c = with_mtc();

	c.psb_period = 0;
	round_trip(p, &c, &PLAIN);
	free(p);
}

Test(ptgen, decodes_returns_that_go_elsewhere)
{
	struct program *p = thunk_program(USER_BASE);
	struct ptgen_config c = tsc_only();

	round_trip(p, &c, &PLAIN);
	c.noretcomp = true;
	round_trip(p, &c, &PLAIN);
	free(p);
}

Test(ptgen, decodes_a_signal_handler_and_its_return)
{
	struct signal_program sp = signal_program(USER_BASE);
	struct ptgen_config c = with_cyc();
	struct ptgen *g = new_generator(&c);
	struct flow f = feed_signal(g, &sp);
	struct decoded dec;
	const uint8_t *data;
	size_t size;

	data = ptgen_data(g, &size);
	dec = decode(data, size, sp.p, &c, 0);
	assert_decodes_to_flow(&dec, &f);
	{
		/* The helper's return is compressed; the handler's return to
		 * the restorer and f's return after sigreturn are TIPs. */
		struct packets pk = read_packets(data, size, &c);

		cr_assert_eq(count_type(&pk, ppt_tip), 2);
		cr_assert_eq(tnt_bits(&pk), 1);
		packets_free(&pk);
	}
	free(dec.insns);
	free(f.steps);
	ptgen_free(g);
	free(sp.p);
}

Test(ptgen, decodes_with_many_psbs_and_recursion_deeper_than_the_return_stack)
{
	struct program *p = deep_recursion_program(USER_BASE);
	struct ptgen_config c = with_cyc();
	struct flow f = run_program(p, p->base);
	struct ptgen *g;
	const uint8_t *data;
	size_t size;

	c.psb_period = 0;
	round_trip(p, &c, &PLAIN);

	/* 3 descents of 100 calls: per descent the 64 youngest returns are
	 * compressed, the 36 oldest are TIPs, as are no others. */
	c.psb_period = 16;
	g = new_generator(&c);
	feed_only(g, &f, &PLAIN);
	data = ptgen_data(g, &size);
	{
		struct packets pk = read_packets(data, size, &c);
		size_t jcc = 0;

		for (size_t i = 0; i < f.count; i++)
			jcc += f.steps[i].cls == PTGEN_JCC;
		cr_assert_eq(count_type(&pk, ppt_tip), 3 * 36);
		cr_assert_eq(tnt_bits(&pk), jcc + 3 * 64);
		packets_free(&pk);
	}
	ptgen_free(g);
	free(f.steps);
	free(p);
}

Test(ptgen, decodes_across_async_disables)
{
	struct program *p = mixed_program(USER_BASE, 200);
	struct flow f = run_program(p, p->base);
	size_t at[] = { 1, 7, 8, 100, 555, 556, f.count - 1 };
	struct feed_plan plan = PLAIN;
	struct ptgen_config c = with_cyc();
	struct ptgen *g = new_generator(&c);
	struct decoded dec;
	const uint8_t *data;
	size_t size;

	plan.async_at = at;
	plan.async_count = sizeof(at) / sizeof(at[0]);
	feed_only(g, &f, &plan);
	data = ptgen_data(g, &size);
	dec = decode(data, size, p, &c, 0);
	assert_decodes_to_flow(&dec, &f);
	/* 7 interrupts and 2 syscalls leave user space; all but the last
	 * syscall (exit) come back, and the start enables too. */
	cr_assert_eq(dec.disables, 9);
	cr_assert_eq(dec.enables, 9);
	free(dec.insns);
	free(f.steps);
	ptgen_free(g);
	free(p);
}

Test(ptgen, decodes_from_every_later_psb_to_the_rest_of_the_flow)
{
	struct program *p = mixed_program(USER_BASE, 8000);
	struct flow f = run_program(p, p->base);
	struct ptgen_config c = with_mtc();
	struct ptgen *g;
	const uint8_t *data;
	size_t size, checked = 0;
	struct fed fed;

	c.psb_period = 0;
	g = new_generator(&c);
	fed = feed(g, &f, &PLAIN);
	data = ptgen_data(g, &size);
	cr_assert_eq(fed.psb_count, ptgen_psb_count(g));
	cr_assert_gt(fed.psb_count, 5, "only %zu PSBs", fed.psb_count);
	for (size_t k = 1; k < fed.psb_count; k++) {
		size_t from = fed.psb_next_step[k];
		struct decoded dec = decode(data, size, p, &c, ptgen_psb_offset(g, k));

		cr_assert_eq(dec.error, 0, "from PSB %zu: %s", k, pt_errstr(pt_errcode(dec.error)));
		cr_assert_eq(dec.count, f.count - from, "from PSB %zu", k);
		assert_same_flow(&dec, 0, &f, from, f.count - from);
		free(dec.insns);
		checked++;
	}
	cr_assert_eq(checked, fed.psb_count - 1);
	fed_free(&fed);
	free(f.steps);
	ptgen_free(g);
	free(p);
}

/* Returns whether the step needs trace to be followed. */
static bool needs_trace(enum ptgen_class cls)
{
	return cls != PTGEN_OTHER && cls != PTGEN_JMP && cls != PTGEN_CALL;
}

static void check_overflow(const struct ptgen_config *c, long begin, long end)
{
	struct program *p = mixed_program(USER_BASE, 200);
	struct flow f = run_program(p, p->base);
	struct feed_plan plan = PLAIN;
	struct ptgen *g = new_generator(c);
	struct decoded dec;
	const uint8_t *data;
	size_t size, before, last_traced = 0;

	plan.overflow_begin = begin;
	plan.overflow_end = end;
	feed_only(g, &f, &plan);
	data = ptgen_data(g, &size);
	dec = decode(data, size, p, c, 0);
	cr_assert_eq(dec.error, 0, "libipt: %s", pt_errstr(pt_errcode(dec.error)));
	cr_assert_eq(dec.overflows, 1);
	cr_assert_eq(dec.overflow_ip, f.steps[end].ip, "resumes at %#lx",
		     (unsigned long)dec.overflow_ip);

	/* Before the overflow: every step up to the last traced one before it
	 * is decoded, and nothing past the first step that needed lost trace. */
	before = dec.insns_before_overflow;
	for (long i = 0; i < begin; i++)
		if (needs_trace(f.steps[i].cls))
			last_traced = (size_t)i + 1;
	cr_assert_geq(before, last_traced);
	for (size_t i = (size_t)begin; i < before; i++)
		cr_assert(!needs_trace(f.steps[i].cls), "decoded step %zu from lost trace", i);
	assert_same_flow(&dec, 0, &f, 0, before);

	/* After it: exactly the rest of the flow. */
	cr_assert_eq(dec.count - before, f.count - (size_t)end);
	assert_same_flow(&dec, before, &f, (size_t)end, f.count - (size_t)end);
	free(dec.insns);
	ptgen_free(g);
	free(f.steps);
	free(p);
}

Test(ptgen, decodes_an_overflow_and_resumes_at_its_ip)
{
	struct ptgen_config configs[] = { tsc_only(), with_mtc(), with_cyc() };

	for (size_t k = 0; k < sizeof(configs) / sizeof(configs[0]); k++) {
		check_overflow(&configs[k], 300, 420);
		check_overflow(&configs[k], 301, 302);
	}
}

Test(ptgen, decodes_an_overflow_that_ends_while_tracing_is_off)
{
	struct program *p = mixed_program(USER_BASE, 200);
	struct flow f = run_program(p, p->base);
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);
	size_t syscall_at = 0, size;
	uint64_t tsc = 1000;
	struct decoded dec;
	const uint8_t *data;
	struct packets pk;

	while (f.steps[syscall_at].cls != PTGEN_SYSCALL)
		syscall_at++;
	/* Overflow from step 500 to the syscall; it resolves in the kernel. */
	cr_assert_eq(ptgen_enable(g, f.steps[0].ip, tsc), 0);
	for (size_t i = 0; i <= syscall_at; i++) {
		const struct step *s = &f.steps[i];

		tsc += 20;
		if (i == 500)
			cr_assert_eq(ptgen_overflow_begin(g, tsc), 0);
		cr_assert_eq(ptgen_insn(g, s->ip, s->size, s->cls, s->next_ip, tsc), 0);
	}
	cr_assert_eq(ptgen_overflow_end(g, 0, tsc + 100), 0);
	cr_assert_eq(ptgen_enable(g, f.steps[syscall_at].next_ip, tsc + 200), 0);
	for (size_t i = syscall_at + 1; i < f.count; i++) {
		const struct step *s = &f.steps[i];

		tsc += 20;
		cr_assert_eq(ptgen_insn(g, s->ip, s->size, s->cls, s->next_ip, tsc + 200), 0);
		if (s->cls == PTGEN_SYSCALL && i + 1 < f.count)
			cr_assert_eq(ptgen_enable(g, s->next_ip, tsc + 300), 0);
		if (s->cls == PTGEN_SYSCALL)
			tsc += 300;
	}
	cr_assert_eq(ptgen_flush(g), 0);
	data = ptgen_data(g, &size);

	/* OVF, TSC, TMA, CBR, then the TIP.PGE it binds to, with a full IP. */
	pk = read_packets(data, size, &c);
	for (size_t i = 0; i < pk.count; i++) {
		if (pk.list[i].type != ppt_ovf)
			continue;
		cr_assert_eq(pk.list[i + 1].type, ppt_tsc);
		cr_assert_eq(pk.list[i + 2].type, ppt_tma);
		cr_assert_eq(pk.list[i + 3].type, ppt_cbr);
		cr_assert_eq(pk.list[i + 4].type, ppt_tip_pge);
		cr_assert_eq(pk.list[i + 4].payload.ip.ipc, pt_ipc_sext_48);
	}
	cr_assert_eq(count_type(&pk, ppt_ovf), 1);

	dec = decode(data, size, p, &c, 0);
	cr_assert_eq(dec.error, 0, "libipt: %s", pt_errstr(pt_errcode(dec.error)));
	cr_assert_eq(dec.overflows, 1);
	cr_assert_eq(dec.count - dec.insns_before_overflow, f.count - syscall_at - 1);
	assert_same_flow(&dec, dec.insns_before_overflow, &f, syscall_at + 1,
			 f.count - syscall_at - 1);
	packets_free(&pk);
	free(dec.insns);
	free(f.steps);
	ptgen_free(g);
	free(p);
}

/* ---- Packet rules ------------------------------------------------------ */

/* A flow without a program: ptgen needs only what the caller tells it. */
static void insn(struct ptgen *g, uint64_t ip, unsigned size, enum ptgen_class cls,
		 uint64_t next_ip, uint64_t tsc)
{
	cr_assert_eq(ptgen_insn(g, ip, size, cls, next_ip, tsc), 0);
}

static struct packets packets_of(struct ptgen *g, const struct ptgen_config *c)
{
	const uint8_t *data;
	size_t size;

	data = ptgen_data(g, &size);
	return read_packets(data, size, c);
}

Test(ptgen, first_psb_has_timing_only_and_mode_exec_precedes_tip_pge)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE + 0x10, tsc = 0x123456789ull;
	enum pt_packet_type want[] = { ppt_psb,	   ppt_tsc,  ppt_tma,	 ppt_cbr,
				       ppt_psbend, ppt_mode, ppt_tip_pge };
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, ip, tsc), 0);
	pk = packets_of(g, &c);
	cr_assert_eq(pk.count, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < pk.count; i++)
		cr_assert_eq(pk.list[i].type, want[i], "packet %zu", i);
	cr_assert_eq(pk.list[1].payload.tsc.tsc, tsc);
	cr_assert_eq(pk.list[3].payload.cbr.ratio, c.cbr);
	cr_assert_eq(pk.list[5].payload.mode.leaf, pt_mol_exec);
	cr_assert_eq(pt_get_exec_mode(&pk.list[5].payload.mode.bits.exec), ptem_64bit);
	cr_assert_eq(pk.list[6].payload.ip.ip, ip & 0xffffffffffffull);
	cr_assert_eq(pk.list[6].payload.ip.ipc, pt_ipc_sext_48);
	cr_assert_eq(ptgen_psb_count(g), 1);
	cr_assert_eq(ptgen_psb_offset(g, 0), 0);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, periodic_psb_plus_has_its_state_in_order)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g;
	uint64_t tsc = 5000, ip = USER_BASE, last_ip = 0;
	size_t psbs_checked = 0;
	struct packets pk;

	c.psb_period = 0;
	c.mtc = false;
	g = new_generator(&c);
	cr_assert_eq(ptgen_enable(g, ip, tsc), 0);
	/* Indirect jumps between two libraries far apart: 7-byte TIPs. */
	for (int i = 0; i < 4000; i++) {
		uint64_t next = ((i & 1) ? 0x55d0c0de0000ull : USER_BASE) + (uint64_t)i * 16;

		insn(g, ip, 2, PTGEN_JMP_IND, next, tsc += 10);
		ip = next;
	}
	pk = packets_of(g, &c);
	for (size_t i = 1; i < pk.count; i++) {
		uint64_t prev_psb, tip_target;

		if (has_ip(pk.list[i].type))
			last_ip = full_ip(&pk.list[i].payload.ip, last_ip);
		if (pk.list[i].type != ppt_psb)
			continue;
		tip_target = last_ip;
		last_ip = 0;
		cr_assert_eq(pk.list[i + 1].type, ppt_tsc);
		cr_assert_eq(pk.list[i + 2].type, ppt_cbr);
		cr_assert_eq(pk.list[i + 3].type, ppt_mode);
		cr_assert_eq(pk.list[i + 4].type, ppt_fup);
		cr_assert_eq(pk.list[i + 5].type, ppt_psbend);
		/* The FUP is the instruction about to run: the target of the
		 * TIP before the PSB; compressed against a reset last IP. */
		cr_assert_eq(pk.list[i - 1].type, ppt_tip);
		cr_assert_eq(pk.list[i + 4].payload.ip.ipc, pt_ipc_sext_48);
		cr_assert_eq(full_ip(&pk.list[i + 4].payload.ip, 0), tip_target);
		/* At the first instruction boundary past 2 KiB since the last
		 * PSB: no later than one TIP after it. */
		prev_psb = ptgen_psb_offset(g, psbs_checked);
		cr_assert_eq(pk.offset[i], ptgen_psb_offset(g, psbs_checked + 1));
		cr_assert_geq(pk.offset[i] - prev_psb, 2048);
		cr_assert_lt(pk.offset[i] - prev_psb, 2048 + 7);
		psbs_checked++;
	}
	cr_assert_gt(psbs_checked, 5);
	cr_assert_eq(psbs_checked + 1, ptgen_psb_count(g));
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, compressed_return_is_one_taken_tnt_bit)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t main_ip = USER_BASE, f = USER_BASE + 0x100;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, main_ip, 100), 0);
	insn(g, main_ip, 5, PTGEN_CALL, f, 101);
	insn(g, f, 1, PTGEN_RET, main_ip + 5, 102);
	/* A return elsewhere than the call's next instruction is a TIP. */
	insn(g, main_ip + 5, 5, PTGEN_CALL, f, 103);
	insn(g, f, 1, PTGEN_RET, main_ip + 0x40, 104);
	cr_assert_eq(ptgen_flush(g), 0);
	pk = packets_of(g, &c);
	cr_assert_eq(pk.list[pk.count - 2].type, ppt_tnt_8);
	cr_assert_eq(pk.list[pk.count - 2].payload.tnt.bit_size, 1);
	cr_assert_eq(pk.list[pk.count - 2].payload.tnt.payload, 1);
	cr_assert_eq(pk.list[pk.count - 1].type, ppt_tip);
	cr_assert_eq(pk.list[pk.count - 1].payload.ip.ip & 0xffff, (main_ip + 0x40) & 0xffff);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, zero_length_calls_are_not_pushed)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t main_ip = USER_BASE, f = USER_BASE + 0x100;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, main_ip, 100), 0);
	insn(g, main_ip, 5, PTGEN_CALL, f, 101);
	/* call next; pop: reads the IP, never returns. */
	insn(g, f, 5, PTGEN_CALL, f + 5, 102);
	insn(g, f + 5, 1, PTGEN_OTHER, f + 6, 103);
	insn(g, f + 6, 1, PTGEN_RET, main_ip + 5, 104);
	cr_assert_eq(ptgen_flush(g), 0);
	pk = packets_of(g, &c);
	cr_assert_eq(count_type(&pk, ppt_tip), 0);
	cr_assert_eq(tnt_bits(&pk), 1);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, return_elsewhere_empties_the_return_stack)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t main_ip = USER_BASE, a = USER_BASE + 0x100, b = USER_BASE + 0x200;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, main_ip, 100), 0);
	insn(g, main_ip, 5, PTGEN_CALL, a, 101);
	insn(g, a, 5, PTGEN_CALL, b, 102);
	/* b returns to a+0x10 instead of a+5 (a signal handler's return to
	 * its restorer looks like this) ... */
	insn(g, b, 1, PTGEN_RET, a + 0x10, 103);
	/* ... so a's return to main goes as a TIP even though main+5 was
	 * pushed: decoders disagree on whether b's RET popped. */
	insn(g, a + 0x10, 1, PTGEN_RET, main_ip + 5, 104);
	/* Later calls compress again. */
	insn(g, main_ip + 5, 5, PTGEN_CALL, a, 105);
	insn(g, a, 1, PTGEN_RET, main_ip + 10, 106);
	cr_assert_eq(ptgen_flush(g), 0);
	pk = packets_of(g, &c);
	cr_assert_eq(count_type(&pk, ppt_tip), 2);
	cr_assert_eq(tnt_bits(&pk), 1);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, tnt_is_long_when_full_and_short_when_forced_out_small)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE;
	uint64_t pattern = 0;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, ip, 100), 0);
	/* 99 branches, taken when i % 3 == 0: two full long TNTs of 47, then
	 * 5 forced out by the indirect jump, in the short form. */
	for (int i = 0; i < 99; i++) {
		bool taken = i % 3 == 0;

		insn(g, ip, 2, PTGEN_JCC, taken ? ip : ip + 2, 101 + (uint64_t)i);
		if (i < 47)
			pattern = (pattern << 1) | taken;
	}
	insn(g, ip, 2, PTGEN_JMP_IND, ip + 0x1000, 300);
	pk = packets_of(g, &c);
	cr_assert_eq(count_type(&pk, ppt_tnt_64), 2);
	cr_assert_eq(count_type(&pk, ppt_tnt_8), 1);
	for (size_t i = 0; i < pk.count; i++) {
		if (pk.list[i].type == ppt_tnt_64) {
			cr_assert_eq(pk.list[i].payload.tnt.bit_size, 47);
		} else if (pk.list[i].type == ppt_tnt_8) {
			cr_assert_eq(pk.list[i].payload.tnt.bit_size, 5);
			cr_assert_eq(pk.list[i + 1].type, ppt_tip, "the TNT precedes the TIP");
		}
	}
	/* The oldest branch is the highest payload bit. */
	for (size_t i = 0; i < pk.count; i++) {
		if (pk.list[i].type == ppt_tnt_64) {
			cr_assert_eq(pk.list[i].payload.tnt.payload, pattern);
			break;
		}
	}
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, ip_compression_follows_the_last_ip)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t a = 0x7f3a1c205000ull;
	struct {
		uint64_t target;
		enum pt_ip_compression want;
	} jumps[] = {
		{ a + 0x40, pt_ipc_update_16 },	       /* same upper 48 bits */
		{ a + 0x7f0000, pt_ipc_update_32 },    /* same upper 32 bits */
		{ 0x55d0c0de1000ull, pt_ipc_sext_48 }, /* upper 32 differ */
		{ 0x55d0c0de2000ull, pt_ipc_update_16 }, { 0x401000, pt_ipc_sext_48 },
		{ 0x4ff000, pt_ipc_update_32 },
	};
	uint64_t ip = a;
	size_t k = 0;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, a, 100), 0);
	for (size_t i = 0; i < sizeof(jumps) / sizeof(jumps[0]); i++) {
		insn(g, ip, 2, PTGEN_JMP_IND, jumps[i].target, 101 + i);
		ip = jumps[i].target;
	}
	/* A syscall's TIP.PGD hides its kernel target and keeps the last IP:
	 * the TIP.PGE back to the next instruction is 16-bit. */
	insn(g, ip, 2, PTGEN_SYSCALL, ip + 2, 200);
	cr_assert_eq(ptgen_enable(g, ip + 2, 300), 0);
	pk = packets_of(g, &c);
	for (size_t i = 0; i < pk.count; i++) {
		if (pk.list[i].type != ppt_tip)
			continue;
		cr_assert_eq(pk.list[i].payload.ip.ipc, jumps[k].want, "jump %zu", k);
		k++;
	}
	cr_assert_eq(k, sizeof(jumps) / sizeof(jumps[0]));
	cr_assert_eq(pk.list[pk.count - 2].type, ppt_tip_pgd);
	cr_assert_eq(pk.list[pk.count - 2].payload.ip.ipc, pt_ipc_suppressed);
	cr_assert_eq(pk.list[pk.count - 1].type, ppt_tip_pge);
	cr_assert_eq(pk.list[pk.count - 1].payload.ip.ipc, pt_ipc_update_16);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, syscall_disables_and_reenables_without_tsc)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE;
	struct packets pk;
	size_t pgd = 0;

	cr_assert_eq(ptgen_enable(g, ip, 1000), 0);
	insn(g, ip, 2, PTGEN_JCC, ip + 2, 1001);
	insn(g, ip + 2, 2, PTGEN_SYSCALL, ip + 4, 1002);
	cr_assert_eq(ptgen_enable(g, ip + 4, 1003), 0);
	insn(g, ip + 4, 1, PTGEN_OTHER, ip + 5, 1004);
	pk = packets_of(g, &c);
	while (pk.list[pgd].type != ppt_tip_pgd)
		pgd++;
	/* The not-taken branch goes out before the TIP.PGD. */
	cr_assert_eq(pk.list[pgd - 1].type, ppt_tnt_8);
	cr_assert_eq(pk.list[pgd - 1].payload.tnt.payload, 0);
	cr_assert_eq(pk.list[pgd].payload.ip.ipc, pt_ipc_suppressed);
	/* MODE.Exec went with the PSB's enable; the PGE needs none, and a far
	 * transfer back to user space sends no TSC. */
	cr_assert_eq(pk.list[pgd + 1].type, ppt_tip_pge);
	cr_assert_eq(pgd + 2, pk.count);
	cr_assert_eq(count_type(&pk, ppt_tsc), 1);
	packets_free(&pk);
	ptgen_free(g);
}

/* A thread scheduled out in the kernel writes nothing, however long it is
 * away (no MTC); scheduled back in, TraceEn 0 -> 1 writes TSC, TMA and CBR
 * with the time it came back, then TIP.PGE. */
Test(ptgen, switched_out_thread_writes_nothing_and_comes_back_with_tsc)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE;
	struct packets pk;
	size_t pgd = 0;

	cr_assert_eq(ptgen_enable(g, ip, 1000), 0);
	insn(g, ip, 2, PTGEN_SYSCALL, ip + 2, 1001);
	cr_assert_eq(ptgen_switch_out(g, 1002), 0);
	cr_assert_eq(ptgen_enable(g, ip + 2, 1003), -pte_bad_context);
	cr_assert_eq(ptgen_switch_out(g, 1003), -pte_bad_context);
	cr_assert_eq(ptgen_switch_in(g, 5000000), 0);
	cr_assert_eq(ptgen_switch_in(g, 5000001), -pte_bad_context);
	cr_assert_eq(ptgen_enable(g, ip + 2, 5000001), 0);
	insn(g, ip + 2, 1, PTGEN_OTHER, ip + 3, 5000002);
	pk = packets_of(g, &c);
	while (pk.list[pgd].type != ppt_tip_pgd)
		pgd++;
	cr_assert_eq(pk.list[pgd + 1].type, ppt_tsc, "a %d after the PGD", pk.list[pgd + 1].type);
	cr_assert_eq(pk.list[pgd + 1].payload.tsc.tsc, 5000000);
	cr_assert_eq(pk.list[pgd + 2].type, ppt_tma);
	cr_assert_eq(pk.list[pgd + 3].type, ppt_cbr);
	cr_assert_eq(pk.list[pgd + 4].type, ppt_tip_pge);
	cr_assert_eq(pgd + 5, pk.count);
	cr_assert_eq(count_type(&pk, ppt_mtc), 0, "%zu MTCs for 5 million ticks away",
		     count_type(&pk, ppt_mtc));
	packets_free(&pk);
	ptgen_free(g);
}

/* User code never runs scheduled out. */
Test(ptgen, switch_out_only_from_the_kernel)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);

	cr_assert_eq(ptgen_switch_out(g, 10), -pte_bad_context); /* not started */
	cr_assert_eq(ptgen_enable(g, USER_BASE, 100), 0);
	cr_assert_eq(ptgen_switch_out(g, 101), -pte_bad_context); /* in user code */
	cr_assert_eq(ptgen_switch_in(g, 102), -pte_bad_context);  /* not out */
	cr_assert_eq(ptgen_async_disable(g, USER_BASE, 103), 0);
	cr_assert_eq(ptgen_switch_out(g, 104), 0);
	cr_assert_eq(ptgen_switch_in(g, 90), -pte_invalid); /* time went backwards */
	ptgen_free(g);
}

Test(ptgen, async_disable_is_fup_then_suppressed_tip_pgd)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE;
	struct packets pk;

	cr_assert_eq(ptgen_enable(g, ip, 1000), 0);
	insn(g, ip, 2, PTGEN_JCC, ip + 0x20, 1001);
	cr_assert_eq(ptgen_async_disable(g, ip + 0x20, 1002), 0);
	cr_assert_eq(ptgen_insn(g, ip + 0x20, 1, PTGEN_OTHER, ip + 0x21, 1003), -pte_bad_context);
	pk = packets_of(g, &c);
	cr_assert_eq(pk.list[pk.count - 3].type, ppt_tnt_8);
	cr_assert_eq(pk.list[pk.count - 2].type, ppt_fup);
	cr_assert_eq(pk.list[pk.count - 2].payload.ip.ip & 0xffff, (ip + 0x20) & 0xffff);
	cr_assert_eq(pk.list[pk.count - 1].type, ppt_tip_pgd);
	cr_assert_eq(pk.list[pk.count - 1].payload.ip.ipc, pt_ipc_suppressed);
	packets_free(&pk);
	ptgen_free(g);
}

/* With the kernel traced: an interrupt is FUP(where it struck) then TIP(the
 * handler), the pending TNT first; tracing stays on. */
Test(ptgen, async_branch_is_fup_then_tip_to_the_handler)
{
	struct ptgen_config c = tsc_only();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE, handler = 0xffffffff81200000ull;
	struct packets pk;
	uint64_t last_ip = 0;

	cr_assert_eq(ptgen_async_branch(g, ip, handler, 999), -pte_bad_context, "tracing is off");
	cr_assert_eq(ptgen_enable(g, ip, 1000), 0);
	insn(g, ip, 2, PTGEN_JCC, ip + 0x20, 1001);
	cr_assert_eq(ptgen_async_branch(g, ip + 0x20, handler, 1002), 0);
	insn(g, handler, 1, PTGEN_OTHER, handler + 1, 1003);
	pk = packets_of(g, &c);
	cr_assert_eq(pk.list[pk.count - 3].type, ppt_tnt_8);
	cr_assert_eq(pk.list[pk.count - 2].type, ppt_fup);
	cr_assert_eq(pk.list[pk.count - 1].type, ppt_tip);
	for (size_t i = 0; i < pk.count - 1; i++)
		if (has_ip(pk.list[i].type))
			last_ip = full_ip(&pk.list[i].payload.ip, last_ip);
	cr_assert_eq(last_ip, ip + 0x20);
	cr_assert_eq(full_ip(&pk.list[pk.count - 1].payload.ip, last_ip), handler);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, overflow_is_ovf_timing_and_an_uncompressed_fup)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g = new_generator(&c);
	const uint64_t ip = USER_BASE;
	struct packets pk;
	size_t ovf = 0;

	cr_assert_eq(ptgen_enable(g, ip, 1000), 0);
	insn(g, ip, 5, PTGEN_CALL, ip + 0x100, 1001);
	insn(g, ip + 0x100, 2, PTGEN_JCC, ip + 0x102, 1002);
	cr_assert_eq(ptgen_overflow_begin(g, 1003), 0);
	insn(g, ip + 0x102, 2, PTGEN_JMP_IND, ip + 0x200, 1004);
	cr_assert_eq(ptgen_overflow_end(g, ip + 0x200, 5000), 0);
	/* The call's return address did not survive: this RET is a TIP. */
	insn(g, ip + 0x200, 1, PTGEN_RET, ip + 5, 5001);
	cr_assert_eq(ptgen_flush(g), 0);
	pk = packets_of(g, &c);
	while (pk.list[ovf].type != ppt_ovf)
		ovf++;
	/* The branch before the overflow was written, the lost TIP was not. */
	cr_assert_eq(pk.list[ovf - 1].type, ppt_tnt_8);
	cr_assert_eq(pk.list[ovf + 1].type, ppt_tsc);
	cr_assert_eq(pk.list[ovf + 1].payload.tsc.tsc, 5000);
	cr_assert_eq(pk.list[ovf + 2].type, ppt_tma);
	cr_assert_eq(pk.list[ovf + 3].type, ppt_cbr);
	cr_assert_eq(pk.list[ovf + 4].type, ppt_fup);
	/* Same upper 48 bits as the last IP, yet not compressed. */
	cr_assert_eq(pk.list[ovf + 4].payload.ip.ipc, pt_ipc_sext_48);
	cr_assert_eq(pk.list[ovf + 5].type, ppt_tip);
	cr_assert_eq(pk.list[ovf + 5].payload.ip.ipc, pt_ipc_update_16);
	cr_assert_eq(count_type(&pk, ppt_tip), 1);
	packets_free(&pk);
	ptgen_free(g);
}

/* ---- Time -------------------------------------------------------------- */

Test(ptgen, tsc_tma_and_mtc_agree_with_the_time_fed)
{
	struct ptgen_config c = with_mtc();
	struct ptgen *g;
	uint64_t ip = USER_BASE, tsc = 0x10000123ull, first_tsc = tsc;
	const unsigned period = 1u << 3;
	struct packets pk;
	size_t mtcs = 0;
	uint64_t last_mtc = 0;
	bool have_mtc = false, have_tma = false;

	c.psb_period = 0;
	g = new_generator(&c);
	cr_assert_eq(ptgen_enable(g, ip, tsc), 0);
	for (int i = 0; i < 5000; i++) {
		tsc += 13 + (uint64_t)(i % 7);
		insn(g, ip, 2, PTGEN_JMP_IND, ip + 0x100, tsc);
		ip += 0x100;
	}
	pk = packets_of(g, &c);
	for (size_t i = 0; i < pk.count; i++) {
		const struct pt_packet *p = &pk.list[i];

		if (p->type == ppt_tsc) {
			uint64_t t = p->payload.tsc.tsc;
			uint64_t ctc = t * c.tsc_ctc_ratio_d / c.tsc_ctc_ratio_n;

			/* TMA: CTC[15:0] at the TSC, and the TSC ticks since
			 * that CTC value began. */
			cr_assert_eq(pk.list[i + 1].type, ppt_tma);
			cr_assert_eq(pk.list[i + 1].payload.tma.ctc, (uint16_t)ctc);
			cr_assert_eq(t - pk.list[i + 1].payload.tma.fc,
				     (ctc * c.tsc_ctc_ratio_n + c.tsc_ctc_ratio_d - 1) /
					     c.tsc_ctc_ratio_d);
			cr_assert_lt(pk.list[i + 1].payload.tma.fc,
				     c.tsc_ctc_ratio_n / c.tsc_ctc_ratio_d);
			have_tma = true;
		} else if (p->type == ppt_mtc) {
			/* Each MTC is the next CTC[10:3]. */
			if (have_mtc)
				cr_assert_eq(p->payload.mtc.ctc, (uint8_t)(last_mtc + 1));
			last_mtc = p->payload.mtc.ctc;
			have_mtc = true;
			mtcs++;
		}
	}
	cr_assert(have_tma);
	{
		uint64_t first_ctc = first_tsc * c.tsc_ctc_ratio_d / c.tsc_ctc_ratio_n;
		uint64_t last_ctc = tsc * c.tsc_ctc_ratio_d / c.tsc_ctc_ratio_n;

		cr_assert_eq(mtcs, last_ctc / period - first_ctc / period);
	}
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, cyc_counts_core_cycles_between_eligible_packets)
{
	struct ptgen_config c = with_cyc();
	struct ptgen *g;
	uint64_t ip = USER_BASE, tsc = 12000, start = tsc;
	struct packets pk;
	uint64_t cycles = 0;
	size_t cycs = 0;

	c.mtc = false;
	g = new_generator(&c);
	cr_assert_eq(ptgen_enable(g, ip, tsc), 0);
	for (int i = 0; i < 1000; i++) {
		tsc += 40 + (uint64_t)(i % 5);
		insn(g, ip, 2, PTGEN_JMP_IND, ip + 0x40, tsc);
		ip += 0x40;
	}
	pk = packets_of(g, &c);
	for (size_t i = 0; i < pk.count; i++) {
		if (pk.list[i].type != ppt_cyc)
			continue;
		/* A CYC times the packet right after it. */
		cr_assert(pk.list[i + 1].type == ppt_tip || pk.list[i + 1].type == ppt_mode);
		cycles += pk.list[i].payload.cyc.value;
		cycs++;
	}
	/* One per TIP (the TIP.PGE is in the cycle the trace starts); together
	 * they add up to the core cycles from the start to the last TIP. */
	cr_assert_eq(cycs, 1000);
	cr_assert_eq(cycles,
		     tsc * c.cbr / c.max_nonturbo_ratio - start * c.cbr / c.max_nonturbo_ratio);
	packets_free(&pk);
	ptgen_free(g);
}

Test(ptgen, cyc_threshold_skips_cycs_until_enough_cycles_pass)
{
	struct ptgen_config c = with_cyc();
	struct ptgen *g;
	uint64_t ip = USER_BASE, tsc = 12000;
	struct packets pk;

	c.mtc = false;
	c.cyc_thresh = 8; /* at least 128 cycles */
	g = new_generator(&c);
	cr_assert_eq(ptgen_enable(g, ip, tsc), 0);
	for (int i = 0; i < 1000; i++) {
		tsc += 10; /* 24 cycles */
		insn(g, ip, 2, PTGEN_JMP_IND, ip + 0x40, tsc);
		ip += 0x40;
	}
	pk = packets_of(g, &c);
	for (size_t i = 0; i < pk.count; i++)
		if (pk.list[i].type == ppt_cyc)
			cr_assert_geq(pk.list[i].payload.cyc.value, 128);
	cr_assert_gt(count_type(&pk, ppt_cyc), 100);
	cr_assert_lt(count_type(&pk, ppt_cyc), 300);
	packets_free(&pk);
	ptgen_free(g);
}

/* libipt's own reading of the times: never after the time of the packet
 * it last read, never going back, and close behind the instruction's time
 * with MTC or CYC. */
static void check_decoded_times(const struct ptgen_config *c, uint64_t slack)
{
	struct program *p = mixed_program(USER_BASE, 500);
	struct flow f = run_program(p, p->base);
	struct ptgen *g = new_generator(c);
	struct decoded dec;
	const uint8_t *data;
	size_t size;
	struct fed fed;
	uint64_t previous = 0;

	fed = feed(g, &f, &PLAIN);
	data = ptgen_data(g, &size);
	dec = decode(data, size, p, c, 0);
	assert_decodes_to_flow(&dec, &f);
	for (size_t i = 0; i < dec.count; i++) {
		size_t next_traced = i + 1;

		/* libipt reads timing packets ahead up to the next packet that
		 * carries flow, which belongs to the next step needing trace. */
		while (next_traced < f.count - 1 && !needs_trace(f.steps[next_traced].cls))
			next_traced++;
		if (next_traced >= f.count)
			next_traced = f.count - 1;
		cr_assert(dec.insns[i].have_time, "no time at %zu", i);
		cr_assert_leq(dec.insns[i].time, fed.tsc[next_traced], "time at %zu: %lu, fed %lu",
			      i, (unsigned long)dec.insns[i].time, (unsigned long)fed.tsc[i]);
		cr_assert_geq(dec.insns[i].time, previous, "time goes back at %zu", i);
		if (slack)
			cr_assert_geq(dec.insns[i].time + slack, fed.tsc[i],
				      "time at %zu: %lu, fed %lu", i,
				      (unsigned long)dec.insns[i].time, (unsigned long)fed.tsc[i]);
		previous = dec.insns[i].time;
	}
	free(dec.insns);
	fed_free(&fed);
	free(f.steps);
	ptgen_free(g);
	free(p);
}

Test(ptgen, libipt_reads_times_close_to_the_time_fed)
{
	struct ptgen_config tsc = tsc_only(), mtc = with_mtc(), cyc = with_cyc();

	check_decoded_times(&tsc, 0);
	/* One MTC period is 8 CTC ticks, 400 TSC ticks; plus the gap of a
	 * syscall, when no packets bind time to instructions. */
	check_decoded_times(&mtc, 400 + PLAIN.tsc_in_kernel);
	check_decoded_times(&cyc, 400 + PLAIN.tsc_in_kernel);
}

/* ---- The interface ----------------------------------------------------- */

Test(ptgen, rejects_invalid_configurations_and_calls)
{
	struct ptgen_config c = with_cyc();
	struct ptgen *g;

	c.max_nonturbo_ratio = 0;
	cr_assert_null(ptgen_new(&c));
	c = with_mtc();
	c.tsc_ctc_ratio_d = 0;
	cr_assert_null(ptgen_new(&c));
	c = with_mtc();
	c.tsc_ctc_ratio_n = 1000; /* 1000 TSC ticks per CTC tick: TMA's FC overflows */
	c.tsc_ctc_ratio_d = 1;
	cr_assert_null(ptgen_new(&c));
	cr_assert_null(ptgen_new(NULL));

	c = tsc_only();
	g = new_generator(&c);
	cr_assert_eq(ptgen_insn(g, USER_BASE, 1, PTGEN_OTHER, USER_BASE + 1, 1), -pte_bad_context);
	cr_assert_eq(ptgen_overflow_end(g, USER_BASE, 1), -pte_bad_context);
	cr_assert_eq(ptgen_enable(g, USER_BASE, 10), 0);
	cr_assert_eq(ptgen_enable(g, USER_BASE, 11), -pte_bad_context);
	cr_assert_eq(ptgen_insn(g, USER_BASE, 0, PTGEN_OTHER, USER_BASE, 12), -pte_invalid);
	cr_assert_eq(ptgen_insn(g, USER_BASE, 1, PTGEN_OTHER, USER_BASE + 1, 5), -pte_invalid,
		     "time goes back");
	cr_assert_eq(ptgen_psb_offset(g, 1), UINT64_MAX);
	cr_assert_gt(ptgen_packet_count(g), 0);
	ptgen_free(g);
}
