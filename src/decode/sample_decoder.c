/* sample_decoder.c: sampling captures into stack events; see sample_decoder.h. */
#define RV_LOG_DOMAIN "decode"
#include "decode/sample_decoder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/callchain.h"
#include "capture/marks.h"
#include "capture/perf_data.h"
#include "decode/extra.h"
#include "decode/off_cpu.h"
#include "decode/sideband.h"
#include "sample_filter.h"
#include "symbolize/unwind.h"
#include "util/log.h"

#define MAX_FRAMES 512
/* CPUs whose switch reasons are paired (a reason on a higher CPU is not) */
#define MAX_CPUS 4096

/* The last switch reason a CPU reported (RV_SWITCH_STATE_EVENT), for the
 * switch-out record that follows it there. */
struct cpu_reason {
	uint32_t tid, state;
	bool valid;
};

struct rv_sample_decoder {
	struct rv_perf_reader *reader;
	struct rv_symbolizer *symbolizer;
	struct rv_unwinder *unwinder;
	struct rv_frame frames[MAX_FRAMES];
	uint64_t unwound[MAX_FRAMES];
	struct rv_sideband sb;
	struct rv_sample_decoder_stats stats;
	struct cpu_reason *reasons; /* by CPU, MAX_CPUS of them once one is seen */
	/* whether the capture has an RV_SWITCH_STATE_EVENT attribute, as of
	 * attrs_seen attributes (a pipe brings them as it goes) */
	bool switch_state_attr;
	size_t attrs_seen;
	char off_cpu_name[48];
	struct rv_event_arg args[1];
};

int rv_sample_decoder_open(struct rv_sample_decoder **out, struct rv_perf_reader *reader,
			   struct rv_symbolizer *symbolizer, struct rv_error *err)
{
	struct rv_sample_decoder *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return rv_error_set(err, ENOMEM, "out of memory");
	d->symbolizer = symbolizer;
	d->reader = reader;
	rv_sideband_init(&d->sb, reader, symbolizer, &d->stats.records, &d->stats.lost);
	d->sb.switches = true;
	*out = d;
	return 0;
}

static uint64_t nominal_interval(const struct perf_event_attr *attr)
{
	if (attr->freq && attr->sample_freq)
		return 1000000000ull / attr->sample_freq;
	if (!attr->freq && attr->type == PERF_TYPE_SOFTWARE &&
	    (attr->config == PERF_COUNT_SW_CPU_CLOCK || attr->config == PERF_COUNT_SW_TASK_CLOCK))
		return attr->sample_period; /* clock events count nanoseconds */
	return 1000000;			    /* unknown: call it a millisecond */
}

/* Splits a kernel call chain into frames: PERF_CONTEXT_* markers say whether
 * the addresses that follow are kernel or user ones. A user part that ends
 * with rearview's cut marker (capture/callchain.h) sets *cut_bytes. */
static size_t frames_from_callchain(struct rv_sample_decoder *d, const struct rv_perf_sample *s,
				    uint32_t *cut_bytes)
{
	size_t n = 0;
	bool kernel = false, next_is_ip = true;

	*cut_bytes = 0;
	for (uint64_t i = 0; i < s->nr_callchain && n < MAX_FRAMES; i++) {
		uint64_t addr = s->callchain[i];

		if (!kernel && i + 1 == s->nr_callchain && rv_stack_cut_parse(addr, cut_bytes))
			break;

		if (addr >= PERF_CONTEXT_MAX) {
			if (addr == PERF_CONTEXT_KERNEL) {
				kernel = true;
				next_is_ip = true;
			} else if (addr == PERF_CONTEXT_USER) {
				kernel = false;
				next_is_ip = true;
			} else {
				/* hypervisor and guest contexts are not ours */
				kernel = true;
			}
			continue;
		}
		d->frames[n].addr = addr;
		d->frames[n].kernel = kernel;
		d->frames[n].is_ip = next_is_ip;
		next_is_ip = false;
		n++;
	}
	return n;
}

bool rv_fp_walk_skips_caller(const uint8_t *code, size_t len)
{
	if (len >= 1 && (code[0] == 0x55 || code[0] == 0xc3 || code[0] == 0xc2))
		return true; /* push %rbp; ret; ret $n */
	if (len >= 3 && code[0] == 0x48 && code[1] == 0x89 && code[2] == 0xe5)
		return true; /* mov %rsp,%rbp */
	return len >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e &&
	       code[3] == 0xfa; /* endbr64 */
}

/* Whether the frame-pointer walk of a sample at ip (of process pid) skipped
 * the leaf's caller: decided from the code bytes there. */
static bool walk_skips_caller(struct rv_sample_decoder *d, uint32_t pid, uint64_t ip)
{
	uint8_t code[4];
	size_t got = rv_symbolizer_read_code(d->symbolizer, pid, ip, code, sizeof(code));

	return rv_fp_walk_skips_caller(code, got);
}

/* DWARF mode: the kernel part (if any) comes from the call chain, the user part
 * from unwinding the copied registers and stack (*cut_bytes: the copy's size
 * when unwinding stopped at its end). */
static size_t frames_from_dwarf(struct rv_sample_decoder *d, const struct rv_perf_sample *s,
				uint32_t *cut_bytes)
{
	size_t n = 0, nr_unwound = 0;
	struct rv_unwind_input in;
	struct rv_error ignored = { 0 };

	*cut_bytes = 0;

	for (uint64_t i = 0; i < s->nr_callchain && n < MAX_FRAMES; i++) {
		uint64_t addr = s->callchain[i];

		if (addr == PERF_CONTEXT_USER)
			break;
		if (addr >= PERF_CONTEXT_MAX)
			continue;
		d->frames[n].addr = addr;
		d->frames[n].kernel = true;
		d->frames[n].is_ip = n == 0;
		n++;
	}
	if (s->regs_user_abi == PERF_SAMPLE_REGS_ABI_NONE || !s->regs_user)
		return n; /* a kernel thread, or a sample taken in the kernel without user state */
	if (!d->unwinder && rv_unwinder_new(&d->unwinder, d->symbolizer, &ignored))
		return n;
	in = (struct rv_unwind_input){ .pid = s->pid,
				       .tid = s->tid,
				       .regs_mask = s->regs_user_mask,
				       .regs = s->regs_user,
				       .stack = s->stack_user,
				       .stack_size = s->stack_user_size };
	if (rv_unwind(d->unwinder, &in, d->unwound, MAX_FRAMES - n, &nr_unwound, &ignored) ||
	    nr_unwound <= 1)
		d->stats.unwind_failures++;
	if (nr_unwound && rv_unwind_cut(d->unwinder) &&
	    s->stack_user_size == s->attr->attr.sample_stack_user)
		*cut_bytes = s->stack_user_size ? (uint32_t)s->stack_user_size : 1;
	else if (nr_unwound >= 2 && rv_unwind_stopped(d->unwinder))
		*cut_bytes = RV_STACK_UNWIND_STOPPED;
	for (size_t i = 0; i < nr_unwound && n < MAX_FRAMES; i++) {
		d->frames[n].addr = d->unwound[i];
		d->frames[n].kernel = false;
		d->frames[n].is_ip = i == 0;
		n++;
	}
	return n;
}

/* A switch: the thread left the CPU (out: an off-CPU span begins, named by
 * state, 0 when preempted) or came back (it ends). */
static int switch_event(struct rv_sample_decoder *d, bool out, uint32_t state, uint32_t pid,
			uint32_t tid, uint64_t time, struct rv_event *ev)
{
	d->stats.switches++;
	ev->pid = pid;
	ev->tid = tid;
	ev->time = time;
	ev->kernel.kind = RV_KERNEL_OFF_CPU;
	ev->kernel.sampled = true;
	if (!out) {
		ev->kind = RV_EVENT_KERNEL_END;
		ev->kernel.name = "[off-cpu]";
		return 1;
	}
	ev->kind = RV_EVENT_KERNEL_BEGIN;
	ev->kernel.name = rv_off_cpu_name(state, d->off_cpu_name, sizeof(d->off_cpu_name));
	if (state != RV_OFF_CPU_BLOCKED) {
		d->args[0] = (struct rv_event_arg){ "state", RV_EVENT_ARG_HEX, state };
		ev->kernel.args = d->args;
		ev->kernel.nr_args = 1;
	}
	return 1;
}

/* An RV_SWITCH_STATE_EVENT sample (struct rv_switch_state: pid, tid, state,
 * kind). A switch itself (the thread its raw data names, not the one running
 * when it was written) is an event; a reason (RV_SWITCH_REASON, or a raw
 * area of three fields) is kept for the CPU's next switch out. 0: no event. */
static int on_switch_state(struct rv_sample_decoder *d, const struct rv_perf_sample *s,
			   struct rv_event *ev, struct rv_error *err)
{
	uint32_t fields[4] = { 0 };

	if (s->raw_size < 3 * sizeof(uint32_t))
		return 0;
	memcpy(fields, s->raw,
	       s->raw_size < sizeof(fields) ? 3 * sizeof(uint32_t) : sizeof(fields));
	switch (fields[3]) {
	case RV_SWITCH_OUT:
	case RV_SWITCH_OUT_PREEMPT:
	case RV_SWITCH_IN:
		if (!(s->sample_type & PERF_SAMPLE_TIME) || !fields[1])
			return 0;
		return switch_event(d, fields[3] != RV_SWITCH_IN,
				    fields[3] == RV_SWITCH_OUT ? fields[2] : 0, fields[0],
				    fields[1], s->time, ev);
	case RV_SWITCH_REASON:
		break;
	default:
		return 0; /* a kind of a later rearview */
	}
	if (!(s->sample_type & PERF_SAMPLE_CPU) || s->cpu >= MAX_CPUS)
		return 0;
	if (!d->reasons) {
		d->reasons = calloc(MAX_CPUS, sizeof(*d->reasons));
		if (!d->reasons)
			return rv_error_set(err, ENOMEM, "out of memory");
	}
	d->reasons[s->cpu] =
		(struct cpu_reason){ .tid = fields[1], .state = fields[2], .valid = true };
	return 0;
}

static bool is_switch_state_attr(const struct rv_perf_attr *attr)
{
	return attr && attr->name && !strcmp(attr->name, RV_SWITCH_STATE_EVENT);
}

/* Whether the capture records switches: the samples' attribute has
 * context_switch, or switch_state wrote them (the attribute of its events is
 * there, and rearview's sampling events then have no context_switch). */
static bool switches_recorded(struct rv_sample_decoder *d, const struct perf_event_attr *attr)
{
	size_t n = rv_perf_reader_nr_attrs(d->reader);

	if (attr->context_switch)
		return true;
	for (; d->attrs_seen < n; d->attrs_seen++)
		if (is_switch_state_attr(rv_perf_reader_attr(d->reader, d->attrs_seen)))
			d->switch_state_attr = true;
	return d->switch_state_attr;
}

/* PERF_RECORD_SWITCH (a thread's own, perf record --switch-events) or
 * SWITCH_CPU_WIDE (rearview's per-CPU events where switch_state cannot run,
 * perf record -a): the trailer's thread left the CPU (misc SWITCH_OUT) or came
 * back. Out is named by the reason its CPU reported just before (preempted
 * when the record says so; "blocked" when nothing says why). 0 when the
 * record has no thread or time. */
static int on_switch(struct rv_sample_decoder *d, const struct perf_event_header *h,
		     struct rv_event *ev, struct rv_error *err)
{
	struct rv_perf_sample_id id;
	bool out = h->misc & PERF_RECORD_MISC_SWITCH_OUT;
	uint32_t state = RV_OFF_CPU_BLOCKED;
	int ret = rv_perf_reader_parse_sample_id(d->reader, h, &id, err);

	if (ret)
		return ret;
	if (!id.valid || !id.tid)
		return 0;
	if (out && d->reasons && id.cpu < MAX_CPUS) {
		struct cpu_reason *r = &d->reasons[id.cpu];

		if (r->valid && r->tid == id.tid)
			state = r->state;
		r->valid = false;
	}
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
		state = 0;
	return switch_event(d, out, state, id.pid, id.tid, id.time, ev);
}

/* 1: an event; 0: a sample that makes none (a switch reason). */
static int on_sample(struct rv_sample_decoder *d, const struct perf_event_header *h,
		     struct rv_event *ev, struct rv_error *err)
{
	struct rv_perf_sample s;
	int ret = rv_perf_reader_parse_sample(d->reader, h, &s, err);

	if (ret)
		return ret;
	if (is_switch_state_attr(s.attr))
		return on_switch_state(d, &s, ev, err);
	ret = rv_sideband_mark(&s, ev, err);
	if (ret < 0)
		return ret;
	if (ret) {
		d->stats.marks++;
		return 1;
	}
	if (rv_extra_is_sample(&s)) {
		rv_extra_event_from_sample(&s, h, ev);
		d->stats.extra++;
		return 1;
	}
	if (!(s.sample_type & PERF_SAMPLE_TID) || !(s.sample_type & PERF_SAMPLE_TIME))
		return rv_error_set(err, EINVAL,
				    "the capture's samples carry no thread or time; record with "
				    "rearview, or with perf record -T");
	ev->kind = RV_EVENT_STACK_SAMPLE;
	ev->pid = s.pid;
	ev->tid = s.tid;
	ev->time = s.time;
	ev->stack.interval_ns = nominal_interval(&s.attr->attr);
	ev->stack.switches_recorded = switches_recorded(d, &s.attr->attr);
	ev->stack.cut_bytes = 0;
	if (s.sample_type & PERF_SAMPLE_STACK_USER)
		ev->stack.nr_frames = frames_from_dwarf(d, &s, &ev->stack.cut_bytes);
	else if (s.sample_type & PERF_SAMPLE_CALLCHAIN) {
		ev->stack.nr_frames = frames_from_callchain(d, &s, &ev->stack.cut_bytes);
		ev->stack.caller_unseen = ev->stack.nr_frames >= 2 && !d->frames[0].kernel &&
					  walk_skips_caller(d, s.pid, d->frames[0].addr);
	} else {
		d->frames[0].addr = s.ip;
		d->frames[0].kernel =
			(h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
		d->frames[0].is_ip = true;
		ev->stack.nr_frames = 1;
	}
	ev->stack.frames = d->frames;
	d->stats.samples++;
	if (!d->stats.first_time || s.time < d->stats.first_time)
		d->stats.first_time = s.time;
	if (s.time > d->stats.last_time)
		d->stats.last_time = s.time;
	return 1;
}

int rv_sample_decoder_next(struct rv_sample_decoder *d, struct rv_event *ev, struct rv_error *err)
{
	struct rv_perf_record rec;

	for (;;) {
		int ret = rv_sideband_next(&d->sb, &rec, ev, err);

		if (ret == RV_SIDEBAND_SAMPLE)
			ret = on_sample(d, rec.header, ev, err);
		else if (ret == RV_SIDEBAND_SWITCH)
			ret = on_switch(d, rec.header, ev, err);
		else
			return ret;
		if (ret)
			return ret;
	}
}

void rv_sample_decoder_stats(const struct rv_sample_decoder *d, struct rv_sample_decoder_stats *out)
{
	*out = d->stats;
}

void rv_sample_decoder_free(struct rv_sample_decoder *d)
{
	if (!d)
		return;
	rv_unwinder_free(d->unwinder);
	free(d->reasons);
	free(d);
}
