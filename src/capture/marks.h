/* marks.h: rearview's own records in a perf.data: what the gate decided
 * (--filter windows and --trigger hits) while recording, kept in the capture
 * so that the trace can show it and `perf script` still reads the file.
 *
 * Each mark is a PERF_RECORD_SAMPLE of one extra event, a software
 * bpf-output event named "rearview:gate" with a fixed id, whose raw data is a
 * struct rv_mark_raw followed by the mark's name (NUL-terminated, padded as
 * perf pads raw data). perf script shows them as bpf-output samples.
 *
 * Not here: when marks are taken (session/gating.c) or what
 * the trace makes of them (the trace builder).
 */
#ifndef RV_CAPTURE_MARKS_H
#define RV_CAPTURE_MARKS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/perf_data.h"
#include "util/error.h"

#define RV_MARK_EVENT_NAME "rearview:gate"
/* The marks event's id: far above the kernel's ids, which count from 1. */
#define RV_MARK_ID 0x7276676174650001ull
/* Longest name a mark carries (the window's or trigger's probe site). */
#define RV_MARK_MAX_NAME 255
/* Bytes a mark record takes at most. */
#define RV_MARK_MAX_RECORD 384

enum rv_mark_kind {
	RV_MARK_WINDOW = 1,  /* a --filter window ended: it began duration_ns before */
	RV_MARK_TRIGGER = 2, /* a --trigger hit */
};

#define RV_MARK_FLAG_SLOW     1u /* window: longer than --min-duration */
#define RV_MARK_FLAG_SNAPSHOT 2u /* a snapshot was taken here: the trace's segment ends */
/* window: the recording ran ungated (Intel PT without aux_pause), so decoding
 * keeps only what ran inside the windows */
#define RV_MARK_FLAG_APPLY 4u
/* window: the time Intel PT stayed paused after a snapshot (a gap in the
 * trace, not a --filter window): from the trigger's hit to the resume */
#define RV_MARK_FLAG_PAUSED 8u
/* The name a PAUSED window carries (the trace shows "[window NAME]"). */
#define RV_MARK_PAUSED_NAME "Intel PT paused: snapshot copy"

/* The raw data's fixed part, in the byte order of the machine that recorded. */
struct rv_mark_raw {
	uint32_t kind;	/* enum rv_mark_kind */
	uint32_t flags; /* RV_MARK_FLAG_* */
	uint64_t duration_ns;
};

struct rv_mark {
	enum rv_mark_kind kind;
	uint32_t flags;
	uint32_t pid, tid;
	uint64_t time;	      /* ns, the capture's clock: when the window ended, or the hit */
	uint64_t duration_ns; /* window: its length */
	const char *name;     /* points into the record */
};

/* The attribute of the marks event (PERF_SAMPLE_IDENTIFIER|IP|TID|TIME|CPU|RAW,
 * the clock the samples use), for rv_perf_writer_add_attr with RV_MARK_ID. */
void rv_mark_attr(struct perf_event_attr *attr, bool use_clockid, int clockid);

/* Lays out a mark as a sample record in buf (RV_MARK_MAX_RECORD bytes); names
 * longer than RV_MARK_MAX_NAME are cut. Returns the record's size. */
size_t rv_mark_record(void *buf, const struct rv_mark *mark);

/* Whether a parsed sample is a mark: its attribute is the marks event. */
bool rv_sample_is_mark(const struct rv_perf_sample *sample);

/* Reads a mark from a parsed sample of the marks event. */
int rv_mark_parse(const struct rv_perf_sample *sample, struct rv_mark *out, struct rv_error *err);

/* The earliest time of the capture r reads when it holds marks: a window's
 * mark comes after the records taken in it, so the window's begin (its
 * mark's time less its duration) may be the earliest. 0 when it has no marks
 * (its first record is its earliest). A capture whose writer knew it
 * (HEADER_SAMPLE_TIME, written by rearview's recorders) is not read;
 * others are read through once when they have marks, and left rewound to
 * their first record. */
uint64_t rv_marks_first_time(struct rv_perf_reader *r);

#endif
