/* perf_walk.c: every record of a perf.data through its parser (perf_walk.h). */
#include "perf_walk.h"

#include <string.h>

#include "capture/auxtrace.h"
#include "capture/marks.h"
#include "capture/synth.h"

/* Keeps the compiler from dropping what a parse produced. */
static volatile uint64_t sink;

static void use_bytes(const void *p, uint64_t size)
{
	const uint8_t *b = p;

	/* The first and last bytes: ASan reports a pointer or size that lies. */
	if (b && size)
		sink += b[0] + b[size - 1];
}

static void walk_sample(struct rv_perf_reader *r, const struct perf_event_header *h)
{
	struct rv_perf_sample s;
	struct rv_error err = { 0 };
	struct rv_mark mark;

	if (rv_perf_reader_parse_sample(r, h, &s, &err))
		return;
	sink += s.ip + s.time + s.pid;
	for (uint64_t i = 0; i < s.nr_callchain; i++)
		sink += s.callchain[i];
	use_bytes(s.raw, s.raw_size);
	use_bytes(s.regs_user, __builtin_popcountll(s.regs_user_mask) * sizeof(uint64_t) *
				       (s.regs_user_abi != 0));
	use_bytes(s.stack_user, s.stack_user_size);
	use_bytes(s.aux, s.aux_size);
	if (rv_sample_is_mark(&s) && !rv_mark_parse(&s, &mark, &err))
		sink += strlen(mark.name) + mark.duration_ns;
}

static void walk_sideband(struct rv_perf_reader *r, const struct rv_perf_record *rec)
{
	const struct perf_event_header *h = rec->header;
	struct rv_error err = { 0 };
	struct rv_perf_sample_id id;

	if (!rv_perf_reader_parse_sample_id(r, h, &id, &err))
		sink += id.time + id.pid;
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct rv_perf_mmap m;

		if (!rv_perf_mmap_parse(h, &m))
			sink += strlen(m.filename) + m.start;
		break;
	}
	case PERF_RECORD_KSYMBOL: {
		struct rv_perf_ksymbol k;

		if (!rv_perf_ksymbol_parse(h, &k))
			sink += k.addr;
		break;
	}
	case PERF_RECORD_TEXT_POKE: {
		struct rv_perf_text_poke t;

		if (!rv_perf_text_poke_parse(h, &t)) {
			use_bytes(t.old_bytes, t.old_len);
			use_bytes(t.new_bytes, t.new_len);
		}
		break;
	}
	case PERF_RECORD_AUX: {
		struct rv_perf_aux a;

		if (!rv_perf_aux_parse(h, &a, &err))
			sink += a.aux_size;
		break;
	}
	case PERF_RECORD_ITRACE_START: {
		struct rv_perf_itrace_start s;

		if (!rv_perf_itrace_start_parse(h, &s, &err))
			sink += s.pid;
		break;
	}
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		struct rv_perf_switch s;

		if (!rv_perf_switch_parse(h, &s, &err))
			sink += s.next_prev_pid;
		break;
	}
	case RV_PERF_RECORD_AUXTRACE_INFO: {
		struct rv_intel_pt_info info;

		if (!rv_intel_pt_info_parse(h, &info, &err) && info.filter)
			sink += strlen(info.filter);
		break;
	}
	case RV_PERF_RECORD_AUXTRACE: {
		struct rv_perf_auxtrace a;

		if (!rv_perf_auxtrace_parse(h, &a, &err))
			sink += a.size;
		use_bytes(rec->payload, rec->payload_size);
		break;
	}
	case RV_PERF_RECORD_TIME_CONV: {
		struct rv_perf_time_conv tc;

		if (!rv_perf_time_conv_parse(h, &tc, &err))
			sink += rv_perf_tsc_to_time(&tc, 12345) + rv_perf_time_to_tsc(&tc, 12345);
		break;
	}
	default:
		use_bytes(rec->payload, rec->payload_size);
		break;
	}
}

static void walk_features(struct rv_perf_reader *r)
{
	static const enum rv_perf_feature strings[] = { RV_FEAT_HOSTNAME, RV_FEAT_OSRELEASE,
							RV_FEAT_VERSION,  RV_FEAT_ARCH,
							RV_FEAT_CPUDESC,  RV_FEAT_CPUID };
	const char *const *argv;
	int argc;

	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const char *s = rv_perf_reader_feature_string(r, strings[i]);

		if (s)
			sink += strlen(s);
	}
	argc = rv_perf_reader_cmdline(r, &argv);
	for (int i = 0; i < argc; i++)
		sink += strlen(argv[i]);
	for (int f = 0; f < RV_FEAT_MAX; f++) {
		uint64_t size = 0;
		const void *data;

		if (!rv_perf_reader_has_feature(r, (enum rv_perf_feature)f))
			continue;
		data = rv_perf_reader_feature_data(r, (enum rv_perf_feature)f, &size);
		use_bytes(data, size);
	}
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++) {
		const struct rv_perf_attr *a = rv_perf_reader_attr(r, i);

		if (a->name)
			sink += strlen(a->name);
		for (size_t j = 0; j < a->nr_ids; j++)
			sink += a->ids[j] + (rv_perf_reader_attr_for_id(r, a->ids[j]) != NULL);
	}
}

static size_t walk_once(struct rv_perf_reader *r)
{
	struct rv_perf_record rec;
	struct rv_error err = { 0 };
	size_t n = 0;

	while (rv_perf_reader_next(r, &rec, &err) > 0) {
		n++;
		if (rec.header->type == PERF_RECORD_SAMPLE)
			walk_sample(r, rec.header);
		else
			walk_sideband(r, &rec);
	}
	return n;
}

size_t fuzz_perf_walk(struct rv_perf_reader *r)
{
	size_t n;

	walk_features(r);
	sink += rv_marks_first_time(r);
	n = walk_once(r);
	rv_perf_reader_rewind(r);
	return n + walk_once(r);
}
