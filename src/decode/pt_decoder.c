/* pt_decoder.c: Intel PT to branch events (see pt_decoder.h for the
 * contract): rv_pt_decode sets the decoding up (errata, the block decoder's
 * flags, the first PSB) and hands it to the chunks (pt_pool.c); and the
 * contract's helpers: stats, packet counts, --cpu, error texts.
 *
 * How the parts fit together: pt_decoder_internal.h.
 *
 * Not here: walking the trace (pt_walk.c), chunks and threads (pt_pool.c),
 * PSB+ headers (pt_psb.c), instruction lengths and classes (pt_code.c),
 * where the buffer and images come from (pt_capture.h), call stacks.
 */
#include "decode/pt_decoder.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "decode/pt_decoder_internal.h"

#define DEFAULT_CHUNK_BYTES ((size_t)256 << 10)
#define MAX_JOBS	    256

int rv_pt_decode(const void *buf, size_t size, const struct rv_pt_decode_options *options,
		 rv_pt_sink_fn sink, void *sink_ctx, struct rv_pt_stats *stats,
		 struct rv_error *err)
{
	struct ptd_decode d;
	struct ptd_psb first;
	unsigned jobs;

	memset(stats, 0, sizeof(*stats));
	if (!options || !sink || (!buf && size))
		return rv_error_set(err, EINVAL, "rv_pt_decode needs a buffer, options and a sink");
	memset(&d, 0, sizeof(d));
	d.buf = buf;
	d.size = size;
	d.options = options;
	d.sink = sink;
	d.sink_ctx = sink_ctx;
	d.sink_batch = options->sink_batch;
	d.stats = stats;
	d.pid = options->pid;
	d.tid = options->tid;
	d.chunk_bytes = options->chunk_bytes ? options->chunk_bytes : DEFAULT_CHUNK_BYTES;
	d.config = options->config;
	d.config.size = sizeof(d.config);
	/* A CPU newer than libipt's errata table has none libipt knows of. */
	if (d.config.cpu.vendor == pcv_intel && pt_cpu_errata(&d.config.errata, &d.config.cpu) < 0)
		memset(&d.config.errata, 0, sizeof(d.config.errata));
	/* A PSB+ written between TIP.PGD and TIP.PGE may hold a FUP (erratum
	 * BDM70 and its kin; VM entries do it too). Decoding through it, that
	 * FUP is harmless; synchronising on it (a chunk starting there) would
	 * start with tracing on and fail at the TIP.PGE. libipt's workaround
	 * ignores such a FUP when a TIP.PGE follows, whatever the CPU. */
	d.config.errata.bdm70 = 1;
	d.config.flags.variant.block.end_on_call = 1;
	/* Tick events say when the time changed at a TNT or TIP; without MTC
	 * or CYC calibration libipt's time moves at TSC packets only, which
	 * come with events (PSB+, TIP.PGE), and the ticks would cost a time
	 * query per branch for nothing. */
	d.config.flags.variant.block.enable_tick_events = d.config.mtc_freq || d.config.nom_freq ||
							  d.config.cpuid_0x15_eax ||
							  d.config.cpuid_0x15_ebx;
	/* Blocks end at every jump, also when jumps are ignored (the walker
	 * drops them): libipt follows a direct jump inside a block by
	 * recursing, once per jump, so a block through a loop of direct jumps
	 * (`jmp .` reached by a trace that says nothing more) overflows the
	 * stack (the raw PT fuzz harness found it). */
	d.config.flags.variant.block.end_on_jump = 1;
	d.config.begin = (uint8_t *)buf;
	d.config.end = (uint8_t *)buf + size;
	stats->bytes = size;
	stats->libipt_bytes = size; /* a chunk the fast walker decodes moves to fast_bytes */

	d.next_begin = size ? ptd_find_psb(d.buf, size, 0, &d.config, &first) : 0;
	d.next_first = first;
	stats->skipped_bytes = d.next_begin;
	if (d.next_begin >= size)
		return 0;

	jobs = options->jobs > MAX_JOBS ? MAX_JOBS : options->jobs;
	if (options->max_insns)
		jobs = 1; /* the limit is counted in buffer order */
	return ptd_decode_chunks(&d, jobs, err);
}

void rv_pt_stats_merge(struct rv_pt_stats *a, const struct rv_pt_stats *b)
{
	a->bytes += b->bytes;
	a->chunks += b->chunks;
	a->insns += b->insns;
	a->blocks += b->blocks;
	a->calls += b->calls;
	a->returns += b->returns;
	a->jumps += b->jumps;
	a->syscalls += b->syscalls;
	a->interrupts += b->interrupts;
	a->errors += b->errors;
	a->overflows += b->overflows;
	a->nomap += b->nomap;
	a->skipped_bytes += b->skipped_bytes;
	a->fast_bytes += b->fast_bytes;
	a->libipt_bytes += b->libipt_bytes;
	a->handoffs += b->handoffs;
	a->cache_bytes += b->cache_bytes;
	if (b->first_time && (!a->first_time || b->first_time < a->first_time))
		a->first_time = b->first_time;
	if (b->last_time > a->last_time)
		a->last_time = b->last_time;
	for (size_t i = 0; i < b->nr_sites && a->nr_sites < RV_PT_MAX_ERROR_SITES; i++)
		a->sites[a->nr_sites++] = b->sites[i];
}

uint64_t rv_pt_count_packets(const void *buf, size_t size, const struct pt_config *config)
{
	struct pt_config c;
	struct pt_packet_decoder *dec;
	uint64_t packets = 0;
	int status;

	if (!buf || !size)
		return 0;
	if (config)
		c = *config;
	else
		pt_config_init(&c);
	c.size = sizeof(c);
	c.begin = (uint8_t *)buf;
	c.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&c);
	if (!dec)
		return 0;
	status = pt_pkt_sync_forward(dec);
	while (status != -pte_eos) {
		struct pt_packet pkt;

		if (status < 0) {
			status = pt_pkt_sync_forward(dec);
			continue;
		}
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status >= 0)
			packets++;
	}
	pt_pkt_free_decoder(dec);
	return packets;
}

static int parse_number(const char *text, const char **end, unsigned long *out)
{
	char *e;

	if (*text < '0' || *text > '9')
		return -1;
	errno = 0;
	*out = strtoul(text, &e, 0);
	if (errno || e == text)
		return -1;
	*end = e;
	return 0;
}

int rv_pt_cpu_parse(const char *text, struct pt_config *config, struct rv_error *err)
{
	unsigned long family, model, stepping;
	const char *p = text;
	const char *what =
		"FAMILY/MODEL/STEPPING (6/142/10) or perf's cpuid (GenuineIntel,6,142,10)";

	if (!text || !config)
		return rv_error_set(err, EINVAL, "no CPU given; give %s", what);
	if (strncmp(p, "GenuineIntel,", 13) == 0) {
		p += 13;
		if (parse_number(p, &p, &family) < 0 || *p++ != ',' ||
		    parse_number(p, &p, &model) < 0 || *p++ != ',' ||
		    parse_number(p, &p, &stepping) < 0 || (*p != '\0' && *p != ','))
			return rv_error_set(err, EINVAL, "cannot read the CPU '%s'; give %s", text,
					    what);
	} else if (strchr(p, ',')) {
		return rv_error_set(err, EINVAL,
				    "the CPU '%s' is not Intel's; Intel PT traces come from "
				    "GenuineIntel CPUs",
				    text);
	} else {
		if (parse_number(p, &p, &family) < 0 || *p++ != '/' ||
		    parse_number(p, &p, &model) < 0 || *p++ != '/' ||
		    parse_number(p, &p, &stepping) < 0 || *p != '\0')
			return rv_error_set(err, EINVAL, "cannot read the CPU '%s'; give %s", text,
					    what);
	}
	if (family > UINT16_MAX || model > UINT8_MAX || stepping > UINT8_MAX)
		return rv_error_set(err, ERANGE,
				    "the CPU '%s' is out of range (family < 65536, model and "
				    "stepping < 256)",
				    text);
	config->cpu.vendor = pcv_intel;
	config->cpu.family = (uint16_t)family;
	config->cpu.model = (uint8_t)model;
	config->cpu.stepping = (uint8_t)stepping;
	memset(&config->errata, 0, sizeof(config->errata));
	/* libipt 2.0 refuses models newer than its table (Sapphire Rapids and
	 * later): their trace decodes without errata workarounds. */
	if (pt_cpu_errata(&config->errata, &config->cpu) < 0)
		memset(&config->errata, 0, sizeof(config->errata));
	return 0;
}

const char *rv_pt_strerror(int code)
{
	switch (pt_errcode(code < 0 ? code : -code)) {
	case pte_ok:
		return "no error";
	case pte_nomap:
		return "no code mapped where the trace went (a binary or the vdso is missing, or "
		       "the mappings are incomplete)";
	case pte_bad_opc:
		return "unknown packet (the trace is corrupt)";
	case pte_bad_packet:
		return "unknown packet payload (the trace is corrupt)";
	case pte_bad_context:
		return "unexpected packet (the trace is corrupt)";
	case pte_bad_query:
		return "the trace does not fit the code (a binary changed since the recording, or "
		       "the trace is corrupt)";
	case pte_bad_insn:
		return "cannot decode the instruction there (a binary changed since the "
		       "recording?)";
	case pte_retstack_empty:
		return "a compressed return without a call (the trace does not fit the code)";
	case pte_bad_retcomp:
		return "a bad compressed return (the trace does not fit the code)";
	case pte_nosync:
		return "no PSB to start decoding at";
	case pte_eos:
		return "the trace ends here";
	case pte_overflow:
		return "overflow: the hardware lost trace";
	case pte_no_enable:
		return "trace without a start of tracing (the trace is corrupt)";
	case pte_event_ignored:
		return "an event was skipped (the trace is corrupt)";
	case pte_noip:
	case pte_ip_suppressed:
		return "the trace does not say where execution went";
	case pte_bad_status_update:
		return "a bad PSB+ status (the trace is corrupt)";
	case pte_nomem:
		return "out of memory";
	default:
		return pt_errstr(pt_errcode(code < 0 ? code : -code));
	}
}
