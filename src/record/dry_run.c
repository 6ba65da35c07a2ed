/* dry_run.c: the --dry-run plan and its printer; see dry_run.h. */
#include "record/dry_run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "record/perf_attr_ext.h"
#include "util/array.h"

void rv_dry_run_plan_init(struct rv_dry_run_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	rv_intern_init(&plan->text);
}

void rv_dry_run_plan_destroy(struct rv_dry_run_plan *plan)
{
	free(plan->events);
	free(plan->bpf);
	free(plan->probes);
	free(plan->snapshots);
	rv_intern_destroy(&plan->text);
	rv_dry_run_plan_init(plan);
}

/* The plan's copy of s (NULL stays NULL); *failed is set when it could not
 * be made. */
static const char *keep(struct rv_dry_run_plan *plan, const char *s, bool *failed)
{
	const char *kept = s ? rv_intern(&plan->text, s) : NULL;

	*failed |= s && !kept;
	return kept;
}

/* The same for a field that is never NULL: "" for NULL. */
static const char *keep_text(struct rv_dry_run_plan *plan, const char *s, bool *failed)
{
	return keep(plan, s ? s : "", failed);
}

static int plan_out_of_memory(struct rv_error *err)
{
	return rv_error_set(err, ENOMEM, "out of memory for the dry-run plan");
}

int rv_dry_run_add_event(struct rv_dry_run_plan *plan, const struct rv_dry_run_event *event,
			 struct rv_error *err)
{
	struct rv_dry_run_event copied = *event;
	bool failed = false;

	if (event->group >= 0 &&
	    ((size_t)event->group >= plan->nr_events || plan->events[event->group].group != -1))
		return rv_error_set(err, EINVAL,
				    "dry-run event '%s' names group leader %d, which is not an "
				    "earlier event leading its own group",
				    event->label ? event->label : "", event->group);
	if (event->group < -1)
		return rv_error_set(err, EINVAL, "dry-run event '%s' has group %d",
				    event->label ? event->label : "", event->group);
	if (rv_array_grow(&plan->events, &plan->events_capacity, plan->nr_events,
			  sizeof(*plan->events), 8))
		return plan_out_of_memory(err);
	copied.label = keep_text(plan, event->label, &failed);
	copied.address_filter = keep(plan, event->address_filter, &failed);
	copied.uprobe_path = keep(plan, event->uprobe_path, &failed);
	copied.bpf_program = keep(plan, event->bpf_program, &failed);
	copied.bpf_program_type = keep(plan, event->bpf_program_type, &failed);
	if (failed)
		return plan_out_of_memory(err);
	plan->events[plan->nr_events++] = copied;
	return 0;
}

int rv_dry_run_add_bpf(struct rv_dry_run_plan *plan, const char *kind, const char *name,
		       const char *type, const char *detail, struct rv_error *err)
{
	struct rv_dry_run_bpf b;
	bool failed = false;

	if (rv_array_grow(&plan->bpf, &plan->bpf_capacity, plan->nr_bpf, sizeof(*plan->bpf), 8))
		return plan_out_of_memory(err);
	b.kind = keep_text(plan, kind, &failed);
	b.name = keep_text(plan, name, &failed);
	b.type = keep_text(plan, type, &failed);
	b.detail = keep(plan, detail, &failed);
	if (!failed)
		plan->bpf[plan->nr_bpf++] = b;
	return failed ? plan_out_of_memory(err) : 0;
}

int rv_dry_run_add_probe(struct rv_dry_run_plan *plan, const char *kind, const char *where,
			 const char *detail, struct rv_error *err)
{
	struct rv_dry_run_probe p;
	bool failed = false;

	if (rv_array_grow(&plan->probes, &plan->probes_capacity, plan->nr_probes,
			  sizeof(*plan->probes), 8))
		return plan_out_of_memory(err);
	p = (struct rv_dry_run_probe){ keep_text(plan, kind, &failed),
				       keep_text(plan, where, &failed),
				       keep(plan, detail, &failed) };
	if (failed)
		return plan_out_of_memory(err);
	plan->probes[plan->nr_probes++] = p;
	return 0;
}

int rv_dry_run_add_snapshot(struct rv_dry_run_plan *plan, const char *what, uint64_t bytes,
			    const char *how, struct rv_error *err)
{
	struct rv_dry_run_snapshot sn;
	bool failed = false;

	if (rv_array_grow(&plan->snapshots, &plan->snapshots_capacity, plan->nr_snapshots,
			  sizeof(*plan->snapshots), 4))
		return plan_out_of_memory(err);
	sn = (struct rv_dry_run_snapshot){ keep_text(plan, what, &failed), bytes,
					   keep_text(plan, how, &failed) };
	if (failed)
		return plan_out_of_memory(err);
	plan->snapshots[plan->nr_snapshots++] = sn;
	return 0;
}

/* PLANNED SNAPSHOT SIZES: "  --trigger: 4194304 bytes (4 MiB) per buffer: how". */
static void print_snapshots(FILE *out, const struct rv_dry_run_plan *plan)
{
	if (plan->nr_snapshots)
		fprintf(out, "\nplanned snapshot sizes:\n");
	for (size_t i = 0; i < plan->nr_snapshots; i++) {
		const struct rv_dry_run_snapshot *sn = &plan->snapshots[i];

		if (!sn->bytes)
			fprintf(out, "  %s: unbounded: %s\n", sn->what, sn->how);
		else if (sn->bytes >= (1u << 20) && !(sn->bytes & ((1u << 20) - 1)))
			fprintf(out, "  %s: %" PRIu64 " bytes (%" PRIu64 " MiB) per buffer: %s\n",
				sn->what, sn->bytes, sn->bytes >> 20, sn->how);
		else
			fprintf(out, "  %s: %" PRIu64 " bytes (%.1f KiB) per buffer: %s\n",
				sn->what, sn->bytes, (double)sn->bytes / 1024, sn->how);
	}
}

void rv_dry_run_set_uprobe_pmu(struct rv_dry_run_plan *plan, const struct rv_uprobe_pmu *pmu)
{
	plan->uprobe_pmu = *pmu;
	plan->has_uprobe_pmu = true;
}

struct named_bit {
	uint64_t bit;
	const char *name;
};

/* "0xVALUE (NAME|NAME|0x...)" with perf's full names for the set bits. */
static void print_bits(FILE *out, uint64_t value, const struct named_bit *names, size_t count)
{
	bool first = true;

	fprintf(out, "0x%" PRIx64 " (", value);
	for (size_t i = 0; i < count; i++) {
		if (!(value & names[i].bit))
			continue;
		fprintf(out, "%s%s", first ? "" : "|", names[i].name);
		value &= ~names[i].bit;
		first = false;
	}
	if (value || first)
		fprintf(out, "%s0x%" PRIx64, first ? "" : "|", value);
	fputc(')', out);
}

#define BIT_NAME(prefix, name)                                                                     \
	{                                                                                          \
		prefix##name, #prefix #name                                                        \
	}

static const struct named_bit sample_type_names[] = {
	BIT_NAME(PERF_SAMPLE_, IP),
	BIT_NAME(PERF_SAMPLE_, TID),
	BIT_NAME(PERF_SAMPLE_, TIME),
	BIT_NAME(PERF_SAMPLE_, ADDR),
	BIT_NAME(PERF_SAMPLE_, READ),
	BIT_NAME(PERF_SAMPLE_, CALLCHAIN),
	BIT_NAME(PERF_SAMPLE_, ID),
	BIT_NAME(PERF_SAMPLE_, CPU),
	BIT_NAME(PERF_SAMPLE_, PERIOD),
	BIT_NAME(PERF_SAMPLE_, STREAM_ID),
	BIT_NAME(PERF_SAMPLE_, RAW),
	BIT_NAME(PERF_SAMPLE_, BRANCH_STACK),
	BIT_NAME(PERF_SAMPLE_, REGS_USER),
	BIT_NAME(PERF_SAMPLE_, STACK_USER),
	BIT_NAME(PERF_SAMPLE_, WEIGHT),
	BIT_NAME(PERF_SAMPLE_, DATA_SRC),
	BIT_NAME(PERF_SAMPLE_, IDENTIFIER),
	BIT_NAME(PERF_SAMPLE_, TRANSACTION),
	BIT_NAME(PERF_SAMPLE_, REGS_INTR),
	BIT_NAME(PERF_SAMPLE_, PHYS_ADDR),
	BIT_NAME(PERF_SAMPLE_, AUX),
	BIT_NAME(PERF_SAMPLE_, CGROUP),
	BIT_NAME(PERF_SAMPLE_, DATA_PAGE_SIZE),
	BIT_NAME(PERF_SAMPLE_, CODE_PAGE_SIZE),
	BIT_NAME(PERF_SAMPLE_, WEIGHT_STRUCT),
};

static const struct named_bit read_format_names[] = {
	BIT_NAME(PERF_FORMAT_, TOTAL_TIME_ENABLED),
	BIT_NAME(PERF_FORMAT_, TOTAL_TIME_RUNNING),
	BIT_NAME(PERF_FORMAT_, ID),
	BIT_NAME(PERF_FORMAT_, GROUP),
#ifdef PERF_FORMAT_LOST
	BIT_NAME(PERF_FORMAT_, LOST),
#endif
};

static const char *type_name(const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu,
			     uint32_t type)
{
	static const char *const builtin[] = { "hardware", "software", "tracepoint",
					       "hw_cache", "raw",      "breakpoint" };

	if (pmu && type == pmu->type)
		return "intel_pt";
	if (plan->has_uprobe_pmu && type == plan->uprobe_pmu.type)
		return "uprobe";
	if (type < sizeof(builtin) / sizeof(builtin[0]))
		return builtin[type];
	return "unknown PMU";
}

static const char *builtin_config_name(uint32_t type, uint64_t config)
{
	static const char *const sw[] = {
		"cpu-clock",	    "task-clock",   "page-faults",  "context-switches",
		"cpu-migrations",   "minor-faults", "major-faults", "alignment-faults",
		"emulation-faults", "dummy",	    "bpf-output",   "cgroup-switches"
	};
	static const char *const hw[] = { "cycles",
					  "instructions",
					  "cache-references",
					  "cache-misses",
					  "branch-instructions",
					  "branch-misses",
					  "bus-cycles",
					  "stalled-cycles-frontend",
					  "stalled-cycles-backend",
					  "ref-cycles" };

	if (type == PERF_TYPE_SOFTWARE && config < sizeof(sw) / sizeof(sw[0]))
		return sw[config];
	if (type == PERF_TYPE_HARDWARE && config < sizeof(hw) / sizeof(hw[0]))
		return hw[config];
	return NULL;
}

/* " (name=v name=v ...)" by the formats of the config word, fields in order of
 * their lowest bit; bits no field covers are shown raw. */
static void print_named_config(FILE *out, const struct rv_pmu_format *formats, size_t count,
			       uint64_t config)
{
	uint64_t covered = 0;
	bool first = true;

	for (size_t i = 0; i < count; i++)
		if (formats[i].word == RV_PMU_CONFIG)
			covered |= formats[i].bits;
	/* Fields in order of their lowest bit, whatever their names. */
	for (unsigned b = 0; b < 64; b++) {
		for (size_t i = 0; i < count; i++) {
			const struct rv_pmu_format *f = &formats[i];
			uint64_t v;

			if (f->word != RV_PMU_CONFIG || (f->bits & -f->bits) != (1ULL << b))
				continue;
			v = rv_pmu_format_get(f, config);
			if (!v)
				continue;
			fprintf(out, "%s%s=%" PRIu64, first ? " (" : " ", f->name, v);
			first = false;
		}
	}
	if (config & ~covered) {
		fprintf(out, "%sunnamed=0x%" PRIx64, first ? " (" : " ", config & ~covered);
		first = false;
	}
	if (!first)
		fputc(')', out);
}

static void print_config(FILE *out, const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu,
			 const struct perf_event_attr *a)
{
	const char *name;

	fprintf(out, "  config = 0x%" PRIx64, (uint64_t)a->config);
	if (pmu && a->type == pmu->type) {
		print_named_config(out, pmu->formats.items, pmu->formats.count, a->config);
	} else if (plan->has_uprobe_pmu && a->type == plan->uprobe_pmu.type) {
		if (plan->uprobe_pmu.has_retprobe)
			print_named_config(out, &plan->uprobe_pmu.retprobe, 1, a->config);
	} else if ((name = builtin_config_name(a->type, a->config))) {
		fprintf(out, " (%s)", name);
	}
	fputc('\n', out);
}

static void print_flags(FILE *out, const struct perf_event_attr *a)
{
	const struct {
		const char *name;
		bool set;
	} flags[] = {
		{ "disabled", a->disabled },
		{ "inherit", a->inherit },
		{ "pinned", a->pinned },
		{ "exclusive", a->exclusive },
		{ "exclude_user", a->exclude_user },
		{ "exclude_kernel", a->exclude_kernel },
		{ "exclude_hv", a->exclude_hv },
		{ "exclude_idle", a->exclude_idle },
		{ "mmap", a->mmap },
		{ "comm", a->comm },
		{ "freq", a->freq },
		{ "inherit_stat", a->inherit_stat },
		{ "enable_on_exec", a->enable_on_exec },
		{ "task", a->task },
		{ "watermark", a->watermark },
		{ "mmap_data", a->mmap_data },
		{ "sample_id_all", a->sample_id_all },
		{ "exclude_host", a->exclude_host },
		{ "exclude_guest", a->exclude_guest },
		{ "exclude_callchain_kernel", a->exclude_callchain_kernel },
		{ "exclude_callchain_user", a->exclude_callchain_user },
		{ "mmap2", a->mmap2 },
		{ "comm_exec", a->comm_exec },
		{ "use_clockid", a->use_clockid },
		{ "context_switch", a->context_switch },
		{ "write_backward", a->write_backward },
		{ "namespaces", a->namespaces },
		{ "ksymbol", a->ksymbol },
		{ "bpf_event", a->bpf_event },
		{ "aux_output", a->aux_output },
		{ "cgroup", a->cgroup },
		{ "text_poke", a->text_poke },
		{ "build_id", a->build_id },
		{ "inherit_thread", a->inherit_thread },
		{ "remove_on_exec", a->remove_on_exec },
		{ "sigtrap", a->sigtrap },
		{ "aux_start_paused", rv_attr_aux_start_paused(a) },
		{ "aux_pause", rv_attr_aux_pause(a) },
		{ "aux_resume", rv_attr_aux_resume(a) },
	};
	bool any = false;

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (!flags[i].set)
			continue;
		fprintf(out, "%s%s", any ? " " : "  flags = ", flags[i].name);
		any = true;
	}
	if (a->precise_ip) {
		fprintf(out, "%sprecise_ip=%u", any ? " " : "  flags = ", (unsigned)a->precise_ip);
		any = true;
	}
	if (any)
		fputc('\n', out);
}

#define PRINT_IF_SET(out, a, field, fmt)                                                           \
	do {                                                                                       \
		if ((a)->field)                                                                    \
			fprintf(out, "  " #field " = " fmt "\n", (uint64_t)(a)->field);            \
	} while (0)

static void print_attr(FILE *out, const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu,
		       const struct rv_dry_run_event *e)
{
	const struct perf_event_attr *a = &e->attr;

	fprintf(out, "  type = %" PRIu32 " (%s)\n", a->type, type_name(plan, pmu, a->type));
	fprintf(out, "  size = %" PRIu32 "\n", a->size);
	print_config(out, plan, pmu, a);
	if (e->uprobe_path) {
		/* config1 is a pointer into this process: print what it points at. */
		fprintf(out, "  config1 = path \"%s\"\n", e->uprobe_path);
		fprintf(out, "  config2 = 0x%" PRIx64 " (file offset)\n", (uint64_t)a->config2);
	} else {
		PRINT_IF_SET(out, a, config1, "0x%" PRIx64);
		PRINT_IF_SET(out, a, config2, "0x%" PRIx64);
	}
	if (a->sample_period)
		fprintf(out, "  %s = %" PRIu64 "\n", a->freq ? "sample_freq" : "sample_period",
			(uint64_t)a->sample_period);
	if (a->sample_type) {
		fprintf(out, "  sample_type = ");
		print_bits(out, a->sample_type, sample_type_names,
			   sizeof(sample_type_names) / sizeof(sample_type_names[0]));
		fputc('\n', out);
	}
	if (a->read_format) {
		fprintf(out, "  read_format = ");
		print_bits(out, a->read_format, read_format_names,
			   sizeof(read_format_names) / sizeof(read_format_names[0]));
		fputc('\n', out);
	}
	print_flags(out, a);
	if (a->wakeup_events)
		fprintf(out, "  %s = %" PRIu32 "\n",
			a->watermark ? "wakeup_watermark" : "wakeup_events", a->wakeup_events);
	PRINT_IF_SET(out, a, bp_type, "%" PRIu64);
	PRINT_IF_SET(out, a, branch_sample_type, "0x%" PRIx64);
	PRINT_IF_SET(out, a, sample_regs_user, "0x%" PRIx64);
	PRINT_IF_SET(out, a, sample_stack_user, "%" PRIu64);
	if (a->use_clockid)
		fprintf(out, "  clockid = %" PRId32 "\n", a->clockid);
	PRINT_IF_SET(out, a, sample_regs_intr, "0x%" PRIx64);
	PRINT_IF_SET(out, a, aux_watermark, "%" PRIu64);
	PRINT_IF_SET(out, a, sample_max_stack, "%" PRIu64);
	PRINT_IF_SET(out, a, aux_sample_size, "%" PRIu64);
	if (a->__reserved_3 & ~RV_AUX_ACTIONS)
		fprintf(out, "  aux_action = 0x%" PRIx32 " (unknown bits set)\n", a->__reserved_3);
	PRINT_IF_SET(out, a, sig_data, "0x%" PRIx64);
}

static void print_group(FILE *out, const struct rv_dry_run_plan *plan, size_t index)
{
	const struct rv_dry_run_event *e = &plan->events[index];
	size_t members = 0;

	if (e->group >= 0) {
		fprintf(out, "  group = member of event %d (%s)\n", e->group,
			plan->events[e->group].label);
		return;
	}
	for (size_t i = 0; i < plan->nr_events; i++)
		members += plan->events[i].group == (int)index;
	if (!members)
		return;
	fprintf(out, "  group = leader of");
	for (size_t i = 0; i < plan->nr_events; i++)
		if (plan->events[i].group == (int)index)
			fprintf(out, " %zu", i);
	fputc('\n', out);
}

static void print_pmu(FILE *out, const struct rv_pt_pmu *pmu)
{
	char mtc[64], cyc[64], psb[64];

	rv_pt_cap_values(pmu->caps[RV_PT_CAP_MTC_PERIODS], mtc, sizeof(mtc));
	rv_pt_cap_values(pmu->caps[RV_PT_CAP_CYCLE_THRESHOLDS], cyc, sizeof(cyc));
	rv_pt_cap_values(pmu->caps[RV_PT_CAP_PSB_PERIODS], psb, sizeof(psb));
	fprintf(out, "intel_pt: type %" PRIu32 ", Linux %u.%u, aux pause/resume %s\n", pmu->type,
		pmu->kernel_major, pmu->kernel_minor, rv_pt_pmu_has_aux_pause(pmu) ? "yes" : "no");
	fprintf(out,
		"intel_pt caps: psb_cyc %" PRIu32 ", mtc %" PRIu32 ", ptwrite %" PRIu32
		", power_event_trace %" PRIu32 ", address ranges %" PRIu32 "\n",
		pmu->caps[RV_PT_CAP_PSB_CYC], pmu->caps[RV_PT_CAP_MTC],
		pmu->caps[RV_PT_CAP_PTWRITE], pmu->caps[RV_PT_CAP_POWER_EVENT_TRACE],
		rv_pt_pmu_address_ranges(pmu));
	fprintf(out, "intel_pt values: mtc_period %s, cyc_thresh %s, psb_period %s\n", mtc, cyc,
		psb);
	fprintf(out,
		"intel_pt timing: max_nonturbo_ratio %" PRIu32 ", tsc_art_ratio %" PRIu32
		":%" PRIu32 "\n",
		pmu->max_nonturbo_ratio, pmu->tsc_art_num, pmu->tsc_art_den);
}

void rv_dry_run_print(FILE *out, const struct rv_dry_run_plan *plan, const struct rv_pt_pmu *pmu)
{
	size_t programs = 0, maps = 0;

	for (size_t i = 0; i < plan->nr_bpf; i++) {
		programs += !strcmp(plan->bpf[i].kind, "program");
		maps += !strcmp(plan->bpf[i].kind, "map");
	}
	fprintf(out, "dry run: %zu perf event%s, %zu BPF program%s, %zu BPF map%s", plan->nr_events,
		plan->nr_events == 1 ? "" : "s", programs, programs == 1 ? "" : "s", maps,
		maps == 1 ? "" : "s");
	if (plan->nr_probes)
		fprintf(out, ", %zu probe%s", plan->nr_probes, plan->nr_probes == 1 ? "" : "s");
	fprintf(out, "; nothing was opened\n");
	if (pmu)
		print_pmu(out, pmu);
	for (size_t i = 0; i < plan->nr_events; i++) {
		const struct rv_dry_run_event *e = &plan->events[i];

		fprintf(out, "\nevent %zu: %s\n", i, e->label);
		print_attr(out, plan, pmu, e);
		print_group(out, plan, i);
		if (e->cpu >= 0)
			fprintf(out, "  cpu = %d\n", e->cpu);
		else
			fprintf(out, "  cpu = any\n");
		if (e->pid >= 0)
			fprintf(out, "  pid = %d\n", (int)e->pid);
		else
			fprintf(out, "  pid = all\n");
		if (e->uprobe_path)
			fprintf(out, "  uprobe = %s+0x%" PRIx64 "%s\n", e->uprobe_path,
				e->uprobe_offset,
				plan->has_uprobe_pmu && plan->uprobe_pmu.has_retprobe &&
						rv_pmu_format_get(&plan->uprobe_pmu.retprobe,
								  e->attr.config)
					? " (return)"
					: "");
		if (e->address_filter)
			fprintf(out, "  address_filter = %s\n", e->address_filter);
		if (e->bpf_program)
			fprintf(out, "  bpf_program = %s (%s)\n", e->bpf_program,
				e->bpf_program_type ? e->bpf_program_type : "?");
	}
	if (plan->nr_probes)
		fprintf(out, "\nprobes:\n");
	for (size_t i = 0; i < plan->nr_probes; i++) {
		const struct rv_dry_run_probe *p = &plan->probes[i];

		fprintf(out, "  %s %s%s%s\n", p->kind, p->where, p->detail ? ": " : "",
			p->detail ? p->detail : "");
	}
	if (plan->nr_bpf)
		fprintf(out, "\nBPF:\n");
	for (size_t i = 0; i < plan->nr_bpf; i++) {
		const struct rv_dry_run_bpf *b = &plan->bpf[i];

		fprintf(out, "  %s %s (%s)%s%s\n", b->kind, b->name, b->type, b->detail ? ": " : "",
			b->detail ? b->detail : "");
	}
	print_snapshots(out, plan);
}

/* ---- the gate's thresholds ---- */

/* ns in the largest unit that divides it: "300us", "2ms", "1500ns". */
static void format_duration(char *out, size_t size, uint64_t ns)
{
	static const struct {
		uint64_t scale;
		const char *unit;
	} units[] = { { 1000000000ull, "s" }, { 1000000ull, "ms" }, { 1000ull, "us" } };

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns % units[i].scale == 0) {
			snprintf(out, size, "%" PRIu64 "%s", ns / units[i].scale, units[i].unit);
			return;
		}
	}
	snprintf(out, size, "%" PRIu64 "ns", ns);
}

void rv_dry_run_print_gate(FILE *out, const struct rv_dry_run_gate *gate)
{
	char dur[32];
	const char *ends = gate->multi_snapshot ? "recording goes on (--multi-snapshot)"
						: "recording ends there";
	const char *which = gate->multi_snapshot ? "every" : "the first";
	const char *only = gate->multi_snapshot ? "" : " (only that one in the whole recording)";

	fprintf(out, "\ngate (BPF gate_hit decides each hit in the kernel):\n");
	if (gate->start) {
		fprintf(out,
			"  START at %s: fires on a thread's hit outside a window, which opens "
			"the thread's window; a hit inside it only nests\n",
			gate->start[0] ? gate->start : "?");
		fprintf(out,
			"  STOP at %s: fires on the hit that closes the thread's outermost "
			"window (the window lasts from its first START to this STOP); a hit "
			"outside any window is ignored\n",
			gate->stop && gate->stop[0] ? gate->stop : "?");
	}
	if (gate->start && gate->min_duration_ns) {
		format_duration(dur, sizeof(dur), gate->min_duration_ns);
		fprintf(out, "  min_duration = %" PRIu64 " ns (%s)\n", gate->min_duration_ns, dur);
		if (gate->pt_pause)
			fprintf(out,
				"  STOP (--min-duration, Intel PT paused): pauses Intel PT at "
				"every "
				"window's close; a window that lasted more than %" PRIu64
				" ns (%s) "
				"is kept, on %s such window%s: its trace is copied whole while "
				"START hits are held off, and %s; after a window of %s or less the "
				"next START resumes over it\n",
				gate->min_duration_ns, dur, which, only, ends, dur);
		else
			fprintf(out,
				"  STOP (--min-duration sample): fires when the window it closes "
				"lasted more than %" PRIu64 " ns (%s), on %s such window%s: that "
				"window is a snapshot, and %s; windows of %s or less are dropped\n",
				gate->min_duration_ns, dur, which, only, ends, dur);
	} else if (gate->start) {
		fprintf(out,
			"  min_duration = 0 (none): every window is kept, whatever its length\n");
	}
	if (gate->trigger)
		fprintf(out,
			"  TRIGGER at %s: fires on %s hit%s, by any thread of the program: a "
			"snapshot of what came before it%s, and %s\n",
			gate->trigger[0] ? gate->trigger : "?", which, only,
			gate->pt_pause ? " (Intel PT paused at the hit, its buffer copied whole)"
				       : "",
			ends);
}
