/* fn_decoder.c: function-tracer captures into call and kernel events; see
 * fn_decoder.h. */
#define RV_LOG_DOMAIN "decode"
#include "decode/fn_decoder.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/marks.h"
#include "capture/perf_data.h"
#include "decode/extra.h"
#include "decode/off_cpu.h"
#include "decode/sideband.h"
#include "decode/syscall_names.h"
#include "util/intern.h"

static const char NAME_PAGE_FAULT[] = "[page fault]";
static const char NAME_OFF_CPU[] = "[off-cpu]";

struct rv_fn_decoder {
	struct rv_perf_reader *reader;
	struct rv_symbolizer *symbolizer;
	struct rv_intern names; /* "syscall N", "[irq N]", "[off-cpu: state 0xN]" */
	struct rv_event_arg args[3];
	struct rv_sideband sb;
	struct rv_fn_decoder_stats stats;
};

static bool is_functions_attr(const struct rv_perf_attr *a)
{
	return a && a->name && !strcmp(a->name, RV_FN_EVENT_NAME);
}

static bool has_functions_attr(const struct rv_perf_reader *r)
{
	for (size_t i = 0; i < rv_perf_reader_nr_attrs(r); i++)
		if (is_functions_attr(rv_perf_reader_attr(r, i)))
			return true;
	return false;
}

/* The file to read: a capture directory's perf.data (rearview's layout),
 * else the path itself (a file, or perf's DIR/data, which the reader finds). */
bool rv_fn_decoder_recognises(const struct rv_perf_reader *reader)
{
	return has_functions_attr(reader);
}

int rv_fn_decoder_open(struct rv_fn_decoder **out, struct rv_perf_reader *reader,
		       struct rv_symbolizer *symbolizer, struct rv_error *err)
{
	struct rv_fn_decoder *d;

	*out = NULL;
	if (!has_functions_attr(reader))
		return rv_error_set(err, EINVAL,
				    "the capture holds no function records (no event named %s); "
				    "it was not recorded with --backend uprobe",
				    RV_FN_EVENT_NAME);
	d = calloc(1, sizeof(*d));
	if (!d)
		return rv_error_set(err, ENOMEM, "out of memory");
	d->symbolizer = symbolizer;
	rv_intern_init(&d->names);
	d->reader = reader;
	rv_sideband_init(&d->sb, reader, symbolizer, &d->stats.records, &d->stats.lost);
	*out = d;
	return 0;
}

const char *rv_fn_record_type_name(unsigned type)
{
	static const char *const names[RV_FN_NR_RECORD_TYPES] = {
		[RV_FN_ENTER] = "enter",
		[RV_FN_EXIT] = "exit",
		[RV_FN_SYSCALL_ENTER] = "syscall enter",
		[RV_FN_SYSCALL_EXIT] = "syscall exit",
		[RV_FN_SWITCH_OUT] = "switch out",
		[RV_FN_SWITCH_IN] = "switch in",
		[RV_FN_PAGE_FAULT] = "page fault",
		[RV_FN_IRQ_ENTER] = "irq enter",
		[RV_FN_IRQ_EXIT] = "irq exit",
		[RV_FN_KFUNC_ENTER] = "kernel function enter",
		[RV_FN_KFUNC_EXIT] = "kernel function exit",
	};

	return type < RV_FN_NR_RECORD_TYPES ? names[type] : NULL;
}

/* A name made from a number, kept for as long as the decoder. */
static const char *intern_name(struct rv_fn_decoder *d, const char *fmt, uint64_t n,
			       struct rv_error *err)
{
	char buf[48];
	const char *name;

	snprintf(buf, sizeof(buf), fmt, n);
	name = rv_intern(&d->names, buf);
	if (!name)
		rv_error_set(err, ENOMEM, "out of memory");
	return name;
}

static const char *off_cpu_name(struct rv_fn_decoder *d, uint32_t state, struct rv_error *err)
{
	char buf[48];
	const char *name = rv_off_cpu_name(state, buf, sizeof(buf));

	if (name != buf)
		return name;
	name = rv_intern(&d->names, buf);
	if (!name)
		rv_error_set(err, ENOMEM, "out of memory");
	return name;
}

static const char *syscall_name(struct rv_fn_decoder *d, uint32_t nr, struct rv_error *err)
{
	const char *name = rv_syscall_name(nr);

	return name ? name : intern_name(d, "syscall %" PRIu64, nr, err);
}

static void set_arg(struct rv_event_arg *a, const char *name, enum rv_event_arg_kind kind,
		    uint64_t value)
{
	a->name = name;
	a->kind = kind;
	a->value = value;
}

static void kernel_event(struct rv_event *ev, bool begin, enum rv_kernel_kind kind,
			 const char *name)
{
	ev->kind = begin ? RV_EVENT_KERNEL_BEGIN : RV_EVENT_KERNEL_END;
	ev->kernel.kind = kind;
	ev->kernel.name = name;
}

/* One function record into ev: 1 when it is an event, 0 when it is skipped. */
static int on_record(struct rv_fn_decoder *d, const struct rv_fn_record *r, uint64_t time,
		     struct rv_event *ev, struct rv_error *err)
{
	struct rv_symbol sym;

	if (r->type >= RV_FN_NR_RECORD_TYPES || !rv_fn_record_type_name(r->type)) {
		d->stats.unknown_types++;
		return 0;
	}
	d->stats.by_type[r->type]++;
	if (!(r->flags & RV_FN_FLAG_IN_WINDOW)) {
		d->stats.outside_windows++;
		return 0;
	}
	ev->pid = r->pid;
	ev->tid = r->tid;
	ev->time = time;
	switch ((enum rv_fn_record_type)r->type) {
	case RV_FN_ENTER:
	case RV_FN_EXIT:
		ev->kind = r->type == RV_FN_ENTER ? RV_EVENT_CALL_ENTER : RV_EVENT_CALL_EXIT;
		ev->call.addr = r->addr;
		ev->call.sym = NULL;
		ev->call.sp = r->sp;
		ev->call.exits_at_sites =
			r->type == RV_FN_ENTER && (r->flags & RV_FN_FLAG_EXIT_SITES);
		break;
	case RV_FN_SYSCALL_ENTER:
	case RV_FN_SYSCALL_EXIT:
		kernel_event(ev, r->type == RV_FN_SYSCALL_ENTER, RV_KERNEL_SYSCALL,
			     syscall_name(d, r->arg, err));
		set_arg(&d->args[0], "nr", RV_EVENT_ARG_UINT, r->arg);
		set_arg(&d->args[1], "ret", RV_EVENT_ARG_INT, r->value);
		ev->kernel.args = d->args;
		ev->kernel.nr_args = r->type == RV_FN_SYSCALL_ENTER ? 1 : 2;
		break;
	case RV_FN_SWITCH_OUT:
		kernel_event(ev, true, RV_KERNEL_OFF_CPU, off_cpu_name(d, r->arg, err));
		set_arg(&d->args[0], "state", RV_EVENT_ARG_HEX, r->arg);
		ev->kernel.args = d->args;
		ev->kernel.nr_args = 1;
		break;
	case RV_FN_SWITCH_IN:
		kernel_event(ev, false, RV_KERNEL_OFF_CPU, NAME_OFF_CPU);
		break;
	case RV_FN_IRQ_ENTER:
	case RV_FN_IRQ_EXIT:
		kernel_event(ev, r->type == RV_FN_IRQ_ENTER, RV_KERNEL_IRQ,
			     intern_name(d, "[irq %" PRIu64 "]", r->arg, err));
		if (r->type == RV_FN_IRQ_EXIT) {
			set_arg(&d->args[0], "ret", RV_EVENT_ARG_INT, r->value);
			ev->kernel.args = d->args;
			ev->kernel.nr_args = 1;
		}
		break;
	case RV_FN_KFUNC_ENTER:
	case RV_FN_KFUNC_EXIT:
		rv_symbolizer_lookup(d->symbolizer, r->pid, r->addr, &sym);
		kernel_event(ev, r->type == RV_FN_KFUNC_ENTER, RV_KERNEL_FUNCTION, sym.name);
		break;
	case RV_FN_PAGE_FAULT:
		ev->kind = RV_EVENT_INSTANT;
		ev->instant.name = NAME_PAGE_FAULT;
		set_arg(&d->args[0], "address", RV_EVENT_ARG_HEX, r->addr);
		set_arg(&d->args[1], "ip", RV_EVENT_ARG_HEX, r->value);
		set_arg(&d->args[2], "error_code", RV_EVENT_ARG_HEX, r->arg);
		ev->instant.args = d->args;
		ev->instant.nr_args = 3;
		break;
	}
	if ((ev->kind == RV_EVENT_KERNEL_BEGIN || ev->kind == RV_EVENT_KERNEL_END) &&
	    !ev->kernel.name)
		return -ENOMEM; /* err is set */
	if (!d->stats.first_time || time < d->stats.first_time)
		d->stats.first_time = time;
	if (time > d->stats.last_time)
		d->stats.last_time = time;
	return 1;
}

static int on_sample(struct rv_fn_decoder *d, const struct rv_perf_record *rec, struct rv_event *ev,
		     struct rv_error *err)
{
	struct rv_perf_sample s;
	struct rv_fn_record r;
	int ret = rv_perf_reader_parse_sample(d->reader, rec->header, &s, err);

	if (ret)
		return ret;
	ret = rv_sideband_mark(&s, ev, err);
	if (ret < 0)
		return rv_error_prefix(err, "at offset %#" PRIx64, rec->file_offset);
	if (ret) {
		d->stats.marks++;
		return 1;
	}
	if (rv_extra_is_sample(&s)) {
		rv_extra_event_from_sample(&s, rec->header, ev);
		d->stats.extra++;
		return 1;
	}
	if (!is_functions_attr(s.attr)) {
		d->stats.other_samples++;
		return 0;
	}
	if (!(s.sample_type & PERF_SAMPLE_RAW) || !(s.sample_type & PERF_SAMPLE_TIME))
		return rv_error_set(err, EINVAL,
				    "the %s samples of the capture carry no raw data or no time; "
				    "it was not written by rearview's uprobe engine",
				    RV_FN_EVENT_NAME);
	/* The raw data is padded to 8 bytes with its u32 size: 44 bytes hold
	 * the 40-byte record of older captures, 52 today's 48-byte one. */
	if (s.raw_size >= sizeof(r)) {
		memcpy(&r, s.raw, sizeof(r));
	} else if (s.raw_size >= sizeof(struct rv_fn_record_v1)) {
		struct rv_fn_record_v1 v1;

		memcpy(&v1, s.raw, sizeof(v1));
		r = (struct rv_fn_record){ .time = s.time,
					   .type = v1.type,
					   .flags = v1.flags,
					   .tid = v1.tid,
					   .pid = v1.pid,
					   .arg = v1.arg,
					   .addr = v1.addr,
					   .sp = v1.sp,
					   .value = v1.value };
	} else {
		return rv_error_set(err, EINVAL,
				    "the function record at offset %#" PRIx64 " of the capture "
				    "has %" PRIu32 " bytes of %zu; the capture is damaged from "
				    "there on",
				    rec->file_offset, s.raw_size, sizeof(struct rv_fn_record_v1));
	}
	/* The sample's time and the record's are the same; the sample's is the
	 * one both layouts have. */
	return on_record(d, &r, s.time, ev, err);
}

int rv_fn_decoder_next(struct rv_fn_decoder *d, struct rv_event *ev, struct rv_error *err)
{
	struct rv_perf_record rec;
	int ret;

	/* a sample that makes no event (skipped) reads on */
	while ((ret = rv_sideband_next(&d->sb, &rec, ev, err)) == RV_SIDEBAND_SAMPLE) {
		ret = on_sample(d, &rec, ev, err);
		if (ret)
			return ret;
	}
	return ret;
}

void rv_fn_decoder_stats(const struct rv_fn_decoder *d, struct rv_fn_decoder_stats *out)
{
	*out = d->stats;
}

void rv_fn_decoder_free(struct rv_fn_decoder *d)
{
	if (!d)
		return;
	rv_intern_destroy(&d->names);
	free(d);
}
