/* extra.c: --events samples as RV_EVENT_EXTRA; see extra.h. */
#include "decode/extra.h"

#include "record/extra_events.h"

bool rv_extra_is_sample(const struct rv_perf_sample *s)
{
	return s->attr && rv_extra_event_attr_is_extra(&s->attr->attr);
}

void rv_extra_event_from_sample(const struct rv_perf_sample *s, const struct perf_event_header *h,
				struct rv_event *ev)
{
	ev->kind = RV_EVENT_EXTRA;
	ev->pid = s->pid;
	ev->tid = s->tid;
	ev->time = s->time;
	ev->extra.name = s->attr && s->attr->name ? s->attr->name : "event";
	ev->extra.ip = s->sample_type & PERF_SAMPLE_IP ? s->ip : 0;
	ev->extra.kernel = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	ev->extra.addr = s->sample_type & PERF_SAMPLE_ADDR ? s->addr : 0;
	/* rearview's samples carry no period (extra_events.h): each stands for
	 * the attribute's */
	if (s->sample_type & PERF_SAMPLE_PERIOD && s->period)
		ev->extra.count = s->period;
	else if (s->attr && !s->attr->attr.freq && s->attr->attr.sample_period)
		ev->extra.count = s->attr->attr.sample_period;
	else
		ev->extra.count = 1;
	ev->extra.cpu = s->sample_type & PERF_SAMPLE_CPU ? s->cpu : 0;
}
