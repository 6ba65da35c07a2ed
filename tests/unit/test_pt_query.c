/* test_pt_query.c: rearview's packet layer (decode/pt_query.h) against
 * libipt's query decoder, in lock step (tests/support/pt_query_lockstep.h):
 * every answer alike.
 *
 * - The real recordings of ../shared/pt-corpus, each chunk (a PSB to the
 *   next, as the PT decoder cuts them) and the whole trace, with and
 *   without the BDM70 workaround rearview turns on: the layer takes every
 *   chunk and answers every call as libipt does.
 * - The same recordings damaged at every 97th byte (the byte flipped, or
 *   the chunk cut there): the layer answers as libipt does or declines
 *   first.
 * - softpt captures of tests/pt/recursion in every timing setting
 *   test_pt_decoder.c makes (TSC only, MTC, CYC, a PSB every 2 KiB, an
 *   overflow, a snapshot), whole and chunk by chunk, with the capture's
 *   timing configuration and with parts of it taken away (no CPUID 0x15
 *   ratio, no nominal frequency, other MTC frequencies); and damaged: the
 *   layer takes them (time included) and answers as libipt does, or
 *   declines first when damaged.
 * - Made-up traces: an overflow with and without a FUP after it, a
 *   MODE.TSX, TIP.PGD after a FUP, a cut TIP at the end, a CBR between
 *   packets, timing packets in and out of a PSB+; TNT-64s of every length;
 *   TIPs and TNTs each followed by a run of timing packets, in several
 *   timing configurations.
 *
 * Not here: the walk over the answers (test_pt_decoder.c); fuzzed bytes
 * (tests/fuzz/fuzz_pt_query.c).
 */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/pt_capture.h"
#include "decode/pt_capture_internal.h"
#include "decode/pt_query.h"
#include "pt_query_lockstep.h"
#include "softpt_reference.h"
#include "test_env.h"
#include "test_files.h"

/* IA32_RTIT_CTL.ADDR0_CFG: trace only inside [ADDR0_A, ADDR0_B] */
#define ADDR_CFG_FILTER 1
#define MAX_CALLS	(1ull << 32)
#define PSB_BYTES	16
#define DAMAGE_STRIDE	97

struct corpus {
	const char *name;
	uint64_t base, end;
};

static const struct corpus corpora[] = {
	{ "Unzip", 0x400000, 0x427000 },
	{ "foo", 0x7ffff7819000, 0x7ffff79ca000 },
	{ "mruby", 0x400000, 0x4b6000 },
};

static const uint8_t psb[PSB_BYTES] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };

static uint8_t *load(const struct corpus *c, size_t *size)
{
	char path[PATH_MAX], rel[64];

	snprintf(rel, sizeof(rel), "%s/trace.pt", c->name);
	corpus_path(path, sizeof(path), rel);
	return read_whole(path, size);
}

/* config as the PT decoder sets it for the corpus: its address filter,
 * and BDM70's workaround when bdm70. */
static void config_for(struct pt_config *config, const struct corpus *c, const uint8_t *begin,
		       const uint8_t *end, bool bdm70)
{
	pt_config_init(config);
	config->begin = (uint8_t *)begin;
	config->end = (uint8_t *)end;
	config->addr_filter.config.ctl.addr0_cfg = ADDR_CFG_FILTER;
	config->addr_filter.addr0_a = c->base;
	config->addr_filter.addr0_b = c->end;
	config->errata.bdm70 = bdm70;
}

/* The chunks' starts: every PSB, then size. Returns their count. */
static size_t psb_offsets(const uint8_t *trace, size_t size, size_t **out)
{
	size_t n = 0, *v = malloc((size / PSB_BYTES + 2) * sizeof(*v));

	cr_assert_not_null(v);
	for (size_t i = 0; i + PSB_BYTES <= size; i++) {
		if (!memcmp(trace + i, psb, PSB_BYTES)) {
			v[n++] = i;
			i += PSB_BYTES - 1;
		}
	}
	v[n] = size;
	*out = v;
	return n;
}

/* Lock step over [begin, end) from its start; returns whether the layer
 * declined, failing on any difference. */
static bool step(const struct corpus *c, const uint8_t *begin, const uint8_t *end, bool bdm70,
		 uint64_t seed, const char *what, size_t at)
{
	struct pt_config config;
	struct pq_lockstep r;

	config_for(&config, c, begin, end, bdm70);
	/* the layer checks the chunk whole first, or its PSB+ only */
	cr_assert(pq_lockstep_run(&config, 0, seed & 1, seed, MAX_CALLS, &r));
	cr_assert_not(r.differ, "%s, %s at %#zx: %s", c->name, what, at, r.text);
	return r.declined;
}

Test(pt_query, corpus_alike, .timeout = 600)
{
	for (size_t i = 0; i < sizeof(corpora) / sizeof(corpora[0]); i++) {
		const struct corpus *c = &corpora[i];
		size_t size, *starts, n;
		uint8_t *trace = load(c, &size);

		n = psb_offsets(trace, size, &starts);
		cr_assert_gt(n, 1, "%s: no PSBs", c->name);
		for (int bdm70 = 0; bdm70 < 2; bdm70++) {
			for (uint64_t seed = 1; seed <= 2; seed++)
				cr_assert_not(step(c, trace, trace + size, bdm70, seed,
						   "the whole trace", 0),
					      "%s: the whole trace declined", c->name);
			for (size_t k = 0; k < n; k++)
				cr_assert_not(step(c, trace + starts[k], trace + starts[k + 1],
						   bdm70, k + 1, "the chunk", starts[k]),
					      "%s: the chunk at %#zx declined", c->name, starts[k]);
		}
		free(starts);
		free(trace);
	}
}

Test(pt_query, damaged_alike_or_declined, .timeout = 600)
{
	for (size_t i = 0; i < sizeof(corpora) / sizeof(corpora[0]); i++) {
		const struct corpus *c = &corpora[i];
		size_t size, *starts, n, k = 0, declined = 0, runs = 0;
		uint8_t *trace = load(c, &size), *copy = malloc(size);

		cr_assert_not_null(copy);
		memcpy(copy, trace, size);
		n = psb_offsets(trace, size, &starts);
		for (size_t at = 0; at < size; at += DAMAGE_STRIDE) {
			while (k + 1 < n && starts[k + 1] <= at)
				k++;
			const uint8_t *begin = copy + starts[k], *end = copy + starts[k + 1];

			copy[at] ^= 0xff;
			declined += step(c, begin, end, true, at + 1, "a byte flipped", at);
			copy[at] ^= 0xff;
			declined += step(c, begin, copy + at, true, at + 1, "cut", at);
			runs += 2;
		}
		/* most damage is taken, not declined */
		cr_assert_lt(declined, runs / 2, "%s: %zu of %zu declined", c->name, declined,
			     runs);
		free(starts);
		free(copy);
		free(trace);
	}
}

/* A made-up trace: a PSB+ with a FUP at 0x401000 (tracing on), then
 * body, in buf; returns its size. */
static size_t made_up(uint8_t *buf, const uint8_t *body, size_t body_size)
{
	static const uint8_t header[] = { 0x99, 0x01,		  /* MODE.Exec 64-bit */
					  0x02, 0x03, 0x20, 0x00, /* CBR */
					  0x5d, 0x00, 0x10, 0x40, 0x00, 0x00, 0x00, /* FUP */
					  0x02, 0x23 };				    /* PSBEND */
	size_t n = 0;

	memcpy(buf, psb, PSB_BYTES);
	n += PSB_BYTES;
	memcpy(buf + n, header, sizeof(header));
	n += sizeof(header);
	memcpy(buf + n, body, body_size);
	return n + body_size;
}

static bool made_up_step(const uint8_t *body, size_t body_size, const char *what)
{
	uint8_t buf[256];
	size_t size = made_up(buf, body, body_size);
	bool declined = false;

	for (uint64_t seed = 1; seed <= 16; seed++)
		declined |= step(&corpora[0], buf, buf + size, seed & 2, seed, what, 0);
	return declined;
}

Test(pt_query, made_up_alike)
{
	/* TSC, TMA, MTC, CYC, a TNT, CBR (a frequency change), CYC, TIP */
	static const uint8_t timing[] = { 0x19, 1,    2,    3,	  4,	5,    6,    7,	  0x02,
					  0x73, 0x34, 0x12, 0,	  0x21, 0x01, 0x59, 0x13, 0x07,
					  0x05, 0x0c, 0x02, 0x03, 0x10, 0x00, 0x2b, 0x0d, 0x10 };
	static const uint8_t ovf_fup[] = { 0x0c, 0x02, 0xf3, 0x00, 0x02, 0x03, 0x21, 0x00,
					   0x3d, 0x20, 0x10, 0x0c, 0x0d, 0x30, 0x10 };
	static const uint8_t ovf_psb[] = { 0x0c, 0x02, 0xf3, 0x00, 0x00, 2,    0x82, 2,
					   0x82, 2,    0x82, 2,	   0x82, 2,    0x82, 2,
					   0x82, 2,    0x82, 2,	   0x82, 0x5d, 0x00, 0x20,
					   0x40, 0,    0,    0,	   0x02, 0x23, 0x06 };
	static const uint8_t ovf_pge[] = { 0x02, 0xf3, 0x99, 0x01, 0x31, 0x00, 0x11, 0x0a };
	static const uint8_t tsx[] = { 0x0c, 0x99, 0x21, 0x3d, 0x20, 0x10, 0x0a,
				       0x99, 0x20, 0x3d, 0x40, 0x10, 0x06 };
	static const uint8_t async[] = {
		0x3d, 0x20, 0x10, 0x02, 0x43, 0x02, 0,	  0,	0,    0,
		0,    0x02, 0xc8, 0,	0x10, 0,    0,	  0,	0x99, 0x01,
		0x2d, 0x30, 0x10, 0x0a, 0x3d, 0x50, 0x10, 0x21, 0x60, 0x10
	};
	static const uint8_t cbr_mid[] = { 0x0a, 0x02, 0x03, 0x22, 0x00, 0x0c, 0x02, 0x83 };
	static const uint8_t cut_tip[] = { 0x0a, 0x4d, 0x00, 0x10 };
	static const uint8_t tnt64[] = { 0x02, 0xa3, 0x55, 0x55, 0x55, 0x55, 0x55, 0x01, 0x00, 0x00,
					 0x02, 0xa3, 0,	   0,	 0,    0,    0,	   0,	 0x0d };

	cr_assert_not(made_up_step(timing, sizeof(timing), "TSC, TMA, MTC, CYC, CBR"));
	cr_assert_not(made_up_step(ovf_fup, sizeof(ovf_fup), "OVF, FUP"));
	cr_assert_not(made_up_step(ovf_psb, sizeof(ovf_psb), "OVF, PSB"));
	cr_assert_not(made_up_step(ovf_pge, sizeof(ovf_pge), "OVF, TIP.PGE"));
	cr_assert_not(made_up_step(tsx, sizeof(tsx), "MODE.TSX"));
	cr_assert_not(made_up_step(async, sizeof(async), "FUP, PIP, VMCS, MODE, TIP"));
	cr_assert_not(made_up_step(cbr_mid, sizeof(cbr_mid), "CBR and STOP"));
	cr_assert_not(made_up_step(cut_tip, sizeof(cut_tip), "a cut TIP"));
	made_up_step(tnt64, sizeof(tnt64), "TNT-64");
}

/* TNT-8 packets of every length and bit pattern, each followed (past a
 * few PADs or none) by what decides the status of its last bit and the
 * packet layer's refill: another TNT, a TIP, a TIP an asynchronous branch
 * waits for (after a FUP), TIP.PGD, timing packets, a PSB+, the end. */
Test(pt_query, made_up_tnt_refills, .timeout = 120)
{
	static const struct {
		const char *what;
		uint8_t bytes[24];
		uint8_t size;
		bool fup; /* a FUP before the TNT: an asynchronous branch waits for the TIP */
	} after[] = {
		{ "TNT-8", { 0x0a }, 1, false },
		{ "TIP", { 0x2d, 0x30, 0x10 }, 3, false },
		{ "TIP bound to a FUP", { 0x2d, 0x30, 0x10 }, 3, true },
		{ "FUP and TIP", { 0x3d, 0x20, 0x10, 0x0c, 0x2d, 0x30, 0x10 }, 7, false },
		{ "TIP.PGD", { 0x21, 0x60, 0x10 }, 3, false },
		{ "MTC", { 0x59, 0x13, 0x0a }, 3, false },
		{ "CYC", { 0x07, 0x05, 0x0a }, 3, false },
		{ "TNT-64", { 0x02, 0xa3, 0x55, 0x01, 0, 0, 0, 0 }, 8, false },
		{ "PSB+",
		  { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 0x02,
		    0x23, 0x0a },
		  19,
		  false },
		{ "the end", { 0 }, 0, false },
	};

	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		for (unsigned pads = 0; pads <= 3; pads += 3) {
			for (unsigned bits = 1; bits <= 6; bits++) {
				unsigned patterns = 1u << bits, stride = bits > 3 ? 5 : 1;

				for (unsigned pattern = 0; pattern < patterns; pattern += stride) {
					uint8_t body[64];
					size_t n = 0;
					char what[96];
					bool declined;

					/* a TNT and a TIP before: the refill comes
					 * after a bit or an IP was asked for */
					body[n++] = 0x06;
					body[n++] = 0x2d;
					body[n++] = 0x10;
					body[n++] = 0x10;
					if (after[i].fup) {
						body[n++] = 0x3d;
						body[n++] = 0x20;
						body[n++] = 0x10;
					}
					body[n++] = (uint8_t)(((1u << bits) | pattern) << 1);
					for (unsigned k = 0; k < pads; k++)
						body[n++] = 0;
					memcpy(body + n, after[i].bytes, after[i].size);
					n += after[i].size;
					snprintf(what, sizeof(what),
						 "TNT-8 of %u bits %#x, %u PADs, %s", bits, pattern,
						 pads, after[i].what);
					declined = made_up_step(body, n, what);
					cr_assert_not(declined, "%s: declined", what);
				}
			}
		}
	}
}

/* IP packets of every compression, their payload of distinct bytes, at
 * every distance from the trace's end: the layer reads them in one load
 * when 8 bytes follow the opcode, else byte by byte. After them (past the
 * PADs), the end or a packet where the read-ahead stops or goes on: a
 * PSB+, a TNT-8, a TIP, a TIP.PGE, a TIP.PGD, an MTC. */
Test(pt_query, made_up_ip_packets)
{
	static const uint8_t ipcs[] = { 0, 1, 2, 3, 4, 6 };
	static const uint8_t sizes[] = { 0, 2, 4, 6, 6, 0, 8 };
	/* TIP, and FUP then TIP (an asynchronous branch) */
	static const uint8_t opcodes[] = { 0x0d, 0x1d };
	static const struct {
		const char *what;
		uint8_t bytes[20];
		uint8_t size;
	} after[] = {
		{ "the end", { 0 }, 0 },
		{ "PSB+",
		  { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 0x02,
		    0x23 },
		  18 },
		{ "TNT-8", { 0x0a }, 1 },
		{ "TIP", { 0x2d, 0x30, 0x10 }, 3 },
		{ "TIP.PGE", { 0x31, 0x60, 0x10, 0x0a }, 4 },
		{ "TIP.PGD", { 0x21, 0x60, 0x10 }, 3 },
		{ "MTC", { 0x59, 0x13, 0x0a }, 3 },
	};

	for (size_t o = 0; o < sizeof(opcodes); o++) {
		for (size_t i = 0; i < sizeof(ipcs) * (sizeof(after) / sizeof(after[0])); i++) {
			for (unsigned pads = 0; pads <= 9; pads++) {
				uint8_t body[64];
				size_t n = 0, a = i / sizeof(ipcs);
				char what[96];

				body[n++] = 0x06; /* a TNT first */
				if (opcodes[o] == 0x1d) {
					body[n++] = 0x3d;
					body[n++] = 0x40;
					body[n++] = 0x10;
				}
				uint8_t ipc = ipcs[i % sizeof(ipcs)];

				body[n++] = (uint8_t)(0x0d | ipc << 5);
				for (unsigned k = 0; k < sizes[ipc]; k++)
					body[n++] = (uint8_t)(0x11 * (k + 1));
				for (unsigned k = 0; k < pads; k++)
					body[n++] = 0;
				memcpy(body + n, after[a].bytes, after[a].size);
				n += after[a].size;
				snprintf(what, sizeof(what),
					 "%s with IP compression %u, %u PADs, %s",
					 opcodes[o] == 0x1d ? "FUP and TIP" : "TIP", ipc, pads,
					 after[a].what);
				made_up_step(body, n, what);
				/* cut short: the end of the trace inside the packet */
				for (unsigned cut = 1; cut <= sizes[ipc] && !pads && !a; cut++)
					made_up_step(body, n - cut, what);
			}
		}
	}
}

/* TIP.PGD and TIP.PGE with every IP compression, each followed (past 0
 * to 9 PADs) by what comes next: a TNT, a TIP, the other one, an MTC, a
 * PSB+, the end; on their own (the layer's shortcut for them), or after a
 * FUP or a MODE.Exec that binds to them (its general path); with a time
 * before them (a TSC) or none. */
Test(pt_query, made_up_tracing_events, .timeout = 120)
{
	static const uint8_t ipcs[] = { 0, 1, 2, 3, 4, 6 };
	static const uint8_t sizes[] = { 0, 2, 4, 6, 6, 0, 8 };
	static const struct {
		const char *what;
		uint8_t bytes[20];
		uint8_t size;
	} after[] = {
		{ "TNT-8", { 0x0a }, 1 },
		{ "TIP", { 0x2d, 0x30, 0x10 }, 3 },
		{ "TIP.PGD", { 0x21, 0x60, 0x10 }, 3 },
		{ "TIP.PGE", { 0x31, 0x60, 0x10, 0x0a }, 4 },
		{ "MTC", { 0x59, 0x13, 0x0a }, 3 },
		{ "PSB+",
		  { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 0x02,
		    0x23 },
		  18 },
		{ "the end", { 0 }, 0 },
	};
	static const struct {
		const char *what;
		uint8_t bytes[8];
		uint8_t size;
		uint8_t opcode; /* of the packet under test */
	} before[] = {
		{ "TIP.PGD", { 0x06 }, 1, 0x01 },
		{ "TIP.PGD, TIP.PGE", { 0x06, 0x01 }, 2, 0x11 },
		{ "FUP, TIP.PGD", { 0x06, 0x3d, 0x20, 0x10 }, 4, 0x01 },
		{ "TIP.PGD, MODE.Exec, TIP.PGE", { 0x06, 0x01, 0x99, 0x01 }, 4, 0x11 },
	};
	static const uint8_t tsc[] = { 0x19, 1, 2, 3, 4, 5, 6, 7 };

	for (size_t b = 0; b < sizeof(before) / sizeof(before[0]); b++) {
		for (size_t i = 0; i < sizeof(ipcs); i++) {
			for (size_t a = 0; a < sizeof(after) / sizeof(after[0]); a++) {
				for (unsigned pads = 0; pads <= 9; pads++) {
					uint8_t body[96];
					size_t n = 0;
					char what[128];

					if (pads & 1) {
						memcpy(body, tsc, sizeof(tsc));
						n += sizeof(tsc);
					}
					memcpy(body + n, before[b].bytes, before[b].size);
					n += before[b].size;
					body[n++] = (uint8_t)(before[b].opcode | ipcs[i] << 5);
					for (unsigned k = 0; k < sizes[ipcs[i]]; k++)
						body[n++] = (uint8_t)(0x11 * (k + 1));
					for (unsigned k = 0; k < pads; k++)
						body[n++] = 0;
					memcpy(body + n, after[a].bytes, after[a].size);
					n += after[a].size;
					snprintf(what, sizeof(what),
						 "%s with IP compression %u, %u PADs, %s%s",
						 before[b].what, ipcs[i], pads, after[a].what,
						 pads & 1 ? ", a TSC first" : "");
					made_up_step(body, n, what);
					/* cut inside the packet or its PADs */
					if (!after[a].size && n > 1)
						made_up_step(body, n - 1, what);
				}
			}
		}
	}
}

/* ---- timed traces made up ---- */

/* A made-up body of a timed trace, and the CTC its next MTC counts from. */
struct timed_body {
	uint8_t bytes[512];
	size_t n;
	uint8_t ctc;
};

/* Appends bytes; an MTC (0x59) there takes its payload byte as the
 * periods it is after the last one, and becomes that CTC. */
static void timed_put(struct timed_body *t, const uint8_t *bytes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cr_assert_lt(t->n + 2, sizeof(t->bytes));
		t->bytes[t->n++] = bytes[i];
		if (bytes[i] == 0x59 && i + 1 < n) {
			t->ctc = (uint8_t)(t->ctc + bytes[++i]);
			t->bytes[t->n++] = t->ctc;
		}
	}
}

/* Lock step over a made-up timed trace (made_up's PSB+, then body) with
 * timing configuration `variant`; returns whether the layer declined. */
static bool timed_step(const struct timed_body *t, int variant, const char *what)
{
	static const struct {
		uint8_t mtc_freq, nom_freq;
		uint32_t eax, ebx;
	} timing[] = {
		{ 3, 0, 2, 100 }, /* CYCs calibrated by MTC periods */
		{ 3, 8, 2, 100 }, /* and by the PSB+'s CBR first */
		{ 3, 8, 0, 0 },	  /* by the CBR only: MTCs without a ratio */
		{ 0, 0, 1, 3 },	  /* MTC's CTC unshifted */
	};
	uint8_t buf[600];
	size_t size = made_up(buf, t->bytes, t->n);
	bool declined = false;

	for (uint64_t seed = 1; seed <= 16; seed++) {
		struct pt_config config;
		struct pq_lockstep r;

		config_for(&config, &corpora[0], buf, buf + size, seed & 2);
		config.mtc_freq = timing[variant].mtc_freq;
		config.nom_freq = timing[variant].nom_freq;
		config.cpuid_0x15_eax = timing[variant].eax;
		config.cpuid_0x15_ebx = timing[variant].ebx;
		cr_assert(pq_lockstep_run(&config, 0, seed & 1, seed, MAX_CALLS, &r));
		cr_assert_not(r.differ, "%s (timing %d): %s", what, variant, r.text);
		declined |= r.declined;
	}
	return declined;
}

/* TIPs, TNT-8s and TNT-64s, each followed by the run of timing packets
 * the read-ahead takes after it (inline for one-byte CYCs when the CYC
 * is calibrated, the whole way for the rest): CYCs of one byte and more,
 * PADs, MTCs one and two periods on, a CYC over MTC periods, a CBR that
 * starts the calibration over, a CYC of 0; after a TSC and a TMA, with
 * MTC periods that calibrate CYCs (of as many cycles, and of others) or
 * none first; ending in a TIP, a TIP.PGD, a PSB+ (with a TSC that
 * calibrates, and a TMA and a CYC after it), or the end. */
Test(pt_query, made_up_timed_runs, .timeout = 300)
{
	static const struct {
		const char *what;
		uint8_t bytes[8];
		uint8_t size;
	} runs[] = {
		{ "CYC", { 0x3b }, 1 },
		{ "CYC, CYC", { 0x0b, 0x13 }, 2 },
		{ "a CYC of 2 bytes", { 0x07, 0x04 }, 2 },
		{ "a CYC of 3 bytes", { 0x0f, 0x03, 0x04 }, 3 },
		{ "PAD, CYC, PAD", { 0x00, 0x3b, 0x00 }, 3 },
		{ "CYC, MTC, CYC", { 0x3b, 0x59, 1, 0x0b }, 4 },
		{ "MTC, CYC", { 0x59, 1, 0x1b }, 3 },
		{ "MTC, MTC, CYC", { 0x59, 1, 0x59, 1, 0x2b }, 5 },
		{ "CYC, MTC two periods on, CYC", { 0x23, 0x59, 2, 0x13 }, 4 },
		{ "nothing", { 0 }, 0 },
		{ "CYC, CBR, CYC", { 0x3b, 0x02, 0x03, 0x18, 0x00, 0x0b }, 6 },
		{ "a CYC of 0", { 0x03 }, 1 },
	};
	static const struct {
		const char *what;
		uint8_t bytes[40];
		uint8_t size;
	} ends[] = {
		{ "TIP", { 0x2d, 0x70, 0x10 }, 3 },
		{ "TIP.PGD", { 0x21, 0x60, 0x10 }, 3 },
		{ "PSB+",
		  { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 0x02,
		    0x23 },
		  18 },
		/* a TSC in a PSB+ calibrates CYCs when there are no MTCs (the
		 * TMA's CTC of 0 lets the CYC after it count) */
		{ "PSB+ with a TSC and a TMA, CYC, TIP",
		  { 2,	  0x82, 2,    0x82, 2,	  0x82, 2, 0x82,
		    2,	  0x82, 2,    0x82, 2,	  0x82, 2, 0x82, /* PSB */
		    0x19, 1,	0x12, 3,    4,	  5,	6, 7,	 /* TSC */
		    0x02, 0x73, 0,    0,    0,	  0,	0,	 /* TMA */
		    0x02, 0x23, 0x3b, 0x2d, 0x70, 0x10 },
		  37 },
		{ "the end", { 0 }, 0 },
	};
	/* the packets that answer queries, a run after each */
	static const uint8_t tip[] = { 0x2d, 0x30, 0x10 }, tnt8[] = { 0x0a },
			     tnt64[] = { 0x02, 0xa3, 0x55, 0x01, 0, 0, 0, 0 };
	/* TSC, then TMA with the CTC of MTC 0x10 (at mtc_freq 3) */
	static const uint8_t start[] = { 0x19, 1,    2,	   3,	 4, 5,	  6, 7,
					 0x02, 0x73, 0x80, 0x00, 0, 0x05, 0 };
	/* MTC periods of 40 cycles, and of 24 */
	static const uint8_t calibrate[] = { 0x59, 1,	 0xa3, 0x43, 0x59, 1,	 0xa3,
					     0x43, 0x59, 1,    0x63, 0x23, 0x59, 1 };

	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		for (size_t e = 0; e < sizeof(ends) / sizeof(ends[0]); e++) {
			for (int first = 0; first < 2; first++) {
				struct timed_body t = { .ctc = 0x10 };
				char what[160];

				timed_put(&t, start, sizeof(start));
				if (first)
					timed_put(&t, calibrate, sizeof(calibrate));
				for (int k = 0; k < 3; k++) {
					timed_put(&t, tip, sizeof(tip));
					timed_put(&t, runs[r].bytes, runs[r].size);
					timed_put(&t, tnt8, sizeof(tnt8));
					timed_put(&t, runs[r].bytes, runs[r].size);
					timed_put(&t, tip, sizeof(tip));
					timed_put(&t, runs[r].bytes, runs[r].size);
					timed_put(&t, tnt64, sizeof(tnt64));
					timed_put(&t, runs[r].bytes, runs[r].size);
				}
				timed_put(&t, ends[e].bytes, ends[e].size);
				snprintf(what, sizeof(what), "%s after each, %s%s", runs[r].what,
					 ends[e].what, first ? ", calibrated first" : "");
				for (int v = 0; v < 4; v++)
					cr_assert_not(timed_step(&t, v, what),
						      "%s (timing %d): declined", what, v);
			}
		}
	}
}

/* TNT-64 packets of 0 to 47 bits (and of none: no stop bit), whole or
 * cut by the end, each followed (past PADs or none) by a TIP, a TNT-8, a
 * one-byte CYC and a TIP, or the end: the layer's refill decodes the
 * whole ones of a bit or more itself. */
Test(pt_query, made_up_tnt64_refills, .timeout = 120)
{
	static const struct {
		const char *what;
		uint8_t bytes[4];
		uint8_t size;
	} after[] = {
		{ "TIP", { 0x2d, 0x30, 0x10 }, 3 },
		{ "TNT-8", { 0x0a }, 1 },
		{ "CYC, TIP", { 0x3b, 0x2d, 0x30, 0x10 }, 4 },
		{ "the end", { 0 }, 0 },
	};

	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		for (int bits = -1; bits <= 47; bits++) {
			for (unsigned cut = 0; cut <= 7; cut += bits % 7 ? 7 : 1) {
				struct timed_body t = { .ctc = 0 };
				/* the stop bit, and bits below it: 0x5a... */
				uint64_t payload = bits < 0 ? 0
							    : 1ull << bits | (0x5a5a5a5a5a5aull &
									      ((1ull << bits) - 1));
				uint8_t tnt[8] = { 0x02, 0xa3 };
				char what[96];

				/* a TNT and a TIP before: the refill comes after a
				 * bit or an IP was asked for */
				timed_put(&t, (const uint8_t[]){ 0x06, 0x2d, 0x10, 0x10 }, 4);
				for (int k = 0; k < 6; k++)
					tnt[2 + k] = (uint8_t)(payload >> (8 * k));
				timed_put(&t, tnt, sizeof(tnt) - cut);
				if (!cut) {
					if (bits & 1)
						timed_put(&t, (const uint8_t[]){ 0, 0 }, 2);
					timed_put(&t, after[i].bytes, after[i].size);
				}
				snprintf(what, sizeof(what), "TNT-64 of %d bits, cut by %u, %s",
					 bits, cut, cut ? "the end" : after[i].what);
				made_up_step(t.bytes, t.n, what);
			}
		}
	}
}

/* ---- softpt captures ---- */

/* softpt's settings, as test_pt_decoder.c makes its captures */
static const struct softpt_setting softpt_configs[] = {
	{ "low", "--timer-resolution low" },
	{ "tsc-only", "--timer-resolution custom:tsc=1,mtc=0,cyc=0" },
	{ "psb-2k", "--timer-resolution low --psb-period 0" },
	{ "psb-2k-tsc", "--timer-resolution custom:tsc=1,mtc=0,cyc=0 --psb-period 0" },
	{ "overflow", "--timer-resolution low --inject-overflow 20000" },
	{ "snapshot", "--timer-resolution low --psb-period 0 --snapshot-size 4K" },
	{ "cyc", "--timer-resolution normal" },
	{ "cyc-noretcomp", "--timer-resolution high" },
};

#define NR_SOFTPT_CONFIGS (sizeof(softpt_configs) / sizeof(softpt_configs[0]))

/* softpt's captures of tests/pt/recursion, one per setting, in dir. */
static void run_softpt(char *dir, size_t dir_size)
{
	softpt_run_settings("recursion", softpt_configs, NR_SOFTPT_CONFIGS,
			    sizeof(softpt_configs[0]), "rv-pt-query", dir, dir_size);
}

/* The capture's timing configuration (0), or parts of it taken away. */
static void vary_timing(struct pt_config *config, int variant)
{
	switch (variant) {
	case 1:
		config->cpuid_0x15_eax = config->cpuid_0x15_ebx = 0;
		break;
	case 2:
		config->nom_freq = 0;
		break;
	case 3:
		/* TMA's 16 bits of CTC hold an MTC's and the period's */
		config->mtc_freq = 8;
		config->nom_freq = 0;
		break;
	case 4:
		/* they do not: the first MTC after it estimates the rest */
		config->mtc_freq = 12;
		break;
	default:
		break;
	}
}

#define TIMING_VARIANTS 5

/* Lock step over [begin, end) of a capture's buffer with its config. */
static struct pq_lockstep capture_step(const struct pt_config *base, int variant,
				       const uint8_t *begin, const uint8_t *end, uint64_t seed,
				       const char *what, size_t at)
{
	struct pt_config config = *base;
	struct pq_lockstep r;

	vary_timing(&config, variant);
	config.begin = (uint8_t *)begin;
	config.end = (uint8_t *)end;
	cr_assert(pq_lockstep_run(&config, 0, seed & 1, seed, MAX_CALLS, &r));
	cr_assert_not(r.differ, "%s (timing %d) at %#zx: %s", what, variant, at, r.text);
	return r;
}

static struct rv_pt_capture *open_capture(const char *dir, const char *name)
{
	struct rv_pt_capture_options options = { .jobs = 1 };
	struct rv_pt_capture *c;
	struct rv_error err = { 0 };
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/perf.data", dir, name);
	options.path = path;
	cr_assert_geq(rv_pt_capture_open(&c, &options, NULL, &err), 0, "%s: %s", path, err.message);
	return c;
}

static void remove_captures(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(pt_query, softpt_alike, .timeout = 600)
{
	char dir[PATH_MAX];

	run_softpt(dir, sizeof(dir));
	for (size_t i = 0; i < NR_SOFTPT_CONFIGS; i++) {
		struct rv_pt_capture *c = open_capture(dir, softpt_configs[i].name);
		uint64_t timed = 0;

		for (size_t b = 0; b < c->nr_buffers; b++) {
			const struct ptc_buffer *buf = &c->buffers[b];
			size_t *starts, n = psb_offsets(buf->data, buf->size, &starts);
			const uint8_t *end = buf->data + buf->size;

			for (int v = 0; v < TIMING_VARIANTS; v++) {
				struct pq_lockstep r;

				if (!n)
					break;
				for (uint64_t seed = 1; seed <= 2; seed++) {
					r = capture_step(&c->config, v, buf->data + starts[0], end,
							 seed, softpt_configs[i].name, starts[0]);
					cr_assert_not(r.declined, "%s: buffer %zu declined",
						      softpt_configs[i].name, b);
					timed += r.calls;
				}
				for (size_t k = 0; k < n; k++) {
					r = capture_step(&c->config, v, buf->data + starts[k],
							 buf->data + starts[k + 1], k + 1,
							 softpt_configs[i].name, starts[k]);
					cr_assert_not(r.declined, "%s: the chunk at %#zx declined",
						      softpt_configs[i].name, starts[k]);
				}
			}
			free(starts);
		}
		cr_assert_gt(timed, 1000, "%s: %" PRIu64 " calls", softpt_configs[i].name, timed);
		rv_pt_capture_free(c);
	}
	remove_captures(dir);
}

Test(pt_query, softpt_damaged_alike_or_declined, .timeout = 600)
{
	char dir[PATH_MAX];

	run_softpt(dir, sizeof(dir));
	for (size_t i = 0; i < NR_SOFTPT_CONFIGS; i++) {
		struct rv_pt_capture *c = open_capture(dir, softpt_configs[i].name);
		size_t declined = 0, runs = 0;
		char flipped[64], cut[64];

		snprintf(flipped, sizeof(flipped), "%s, a byte flipped", softpt_configs[i].name);
		snprintf(cut, sizeof(cut), "%s, cut", softpt_configs[i].name);

		for (size_t b = 0; b < c->nr_buffers; b++) {
			const struct ptc_buffer *buf = &c->buffers[b];
			uint8_t *copy = malloc(buf->size);
			size_t *starts, n, k = 0;

			if (!buf->size)
				continue;
			cr_assert_not_null(copy);
			memcpy(copy, buf->data, buf->size);
			n = psb_offsets(copy, buf->size, &starts);
			for (size_t at = n ? starts[0] : buf->size; at < buf->size;
			     at += DAMAGE_STRIDE) {
				struct pq_lockstep r;
				int v = (int)(at % TIMING_VARIANTS);

				while (k + 1 < n && starts[k + 1] <= at)
					k++;
				copy[at] ^= 0xff;
				r = capture_step(&c->config, v, copy + starts[k],
						 copy + starts[k + 1], at + 1, flipped, at);
				declined += r.declined;
				copy[at] ^= 0xff;
				r = capture_step(&c->config, v, copy + starts[k], copy + at, at + 1,
						 cut, at);
				declined += r.declined;
				runs += 2;
			}
			free(starts);
			free(copy);
		}
		cr_assert_lt(declined, runs / 2, "%s: %zu of %zu declined", softpt_configs[i].name,
			     declined, runs);
		rv_pt_capture_free(c);
	}
	remove_captures(dir);
}
