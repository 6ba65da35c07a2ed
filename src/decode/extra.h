/* extra.h: a sample of an --events event (record/extra_events.h) as the
 * RV_EVENT_EXTRA of events.h, for every decoder whose captures carry them
 * (samples, function records).
 *
 * Not here: telling such samples apart (rv_extra_event_attr_is_extra), or
 * drawing them (trace/extra.c).
 */
#ifndef RV_DECODE_EXTRA_H
#define RV_DECODE_EXTRA_H

#include <stdbool.h>

#include "capture/perf_data.h"
#include "decode/events.h"

/* Whether the sample is of an --events event. */
bool rv_extra_is_sample(const struct rv_perf_sample *s);

/* Fills ev from the sample s (header h) of an --events event: named after
 * its attribute ("event" when the capture names none; the name lives as long
 * as the reader), count the sample's period, else its attribute's
 * sample_period, else 1. */
void rv_extra_event_from_sample(const struct rv_perf_sample *s, const struct perf_event_header *h,
				struct rv_event *ev);

#endif
