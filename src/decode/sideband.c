/* sideband.c: COMM, EXIT, LOST and mapping records; see sideband.h. */
#include "decode/sideband.h"

#include <stdio.h>
#include <string.h>

#include "capture/marks.h"
#include "capture/synth.h"

/* A record's time from its sample_id (0 when it has none, or no reader
 * says how to find it). */
static uint64_t record_time(const struct rv_sideband *sb, const struct perf_event_header *h)
{
	struct rv_perf_sample_id id;
	struct rv_error ignored = { 0 };

	if (!sb->reader || rv_perf_reader_parse_sample_id(sb->reader, h, &id, &ignored) ||
	    !id.valid)
		return 0;
	return id.time;
}

static int on_mmap(struct rv_sideband *sb, const struct perf_event_header *h, struct rv_error *err)
{
	struct rv_perf_mmap m;

	/* a damaged record is skipped; the kernel's MMAPs place its names
	 * (perf's kernel map gives the KASLR offset, its modules' say where
	 * they are) */
	if (rv_perf_mmap_parse(h, &m))
		return 0;
	return rv_symbolizer_add_mapping(sb->symbolizer, m.pid, m.start, m.len, m.pgoff,
					 m.executable, m.filename, err);
}

#define NR_NAMES                                                                                   \
	(sizeof(((struct rv_sideband *)0)->names) / sizeof(((struct rv_sideband *)0)->names[0]))

static void remember_name(struct rv_sideband *sb, uint32_t pid, const char *name)
{
	size_t at = pid % NR_NAMES;

	sb->names[at].pid = pid;
	snprintf(sb->names[at].name, sizeof(sb->names[at].name), "%.15s", name);
}

static const char *name_of(const struct rv_sideband *sb, uint32_t pid)
{
	size_t at = pid % NR_NAMES;

	return pid && sb->names[at].pid == pid && sb->names[at].name[0] ? sb->names[at].name : NULL;
}

/* A FORK of a new process: its parent's mappings, and its parent's name as
 * a thread-name event of its main thread (1) when that is known. */
static int on_fork(struct rv_sideband *sb, const struct perf_event_header *h, uint32_t pid,
		   uint32_t ppid, struct rv_event *ev, struct rv_error *err)
{
	const char *parent = name_of(sb, ppid);
	int ret = rv_symbolizer_fork(sb->symbolizer, ppid, pid, err);

	if (ret || !parent)
		return ret;
	snprintf(sb->comm, sizeof(sb->comm), "%s", parent);
	remember_name(sb, pid, sb->comm);
	ev->kind = RV_EVENT_THREAD_NAME;
	ev->pid = pid;
	ev->tid = pid;
	ev->time = record_time(sb, h);
	ev->thread.name = sb->comm;
	return 1;
}

int rv_sideband_record(struct rv_sideband *sb, const struct perf_event_header *h,
		       struct rv_event *ev, struct rv_error *err)
{
	const uint8_t *body = (const uint8_t *)h + sizeof(*h);
	size_t room = h->size > sizeof(*h) ? h->size - sizeof(*h) : 0;

	switch (h->type) {
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_MMAP:
		return on_mmap(sb, h, err);
	case PERF_RECORD_COMM:
		/* pid, tid, then the name (at least its NUL) */
		if (room < 9)
			return 0;
		memcpy(&ev->pid, body, 4);
		memcpy(&ev->tid, body + 4, 4);
		room -= 8;
		if (room > sizeof(sb->comm) - 1)
			room = sizeof(sb->comm) - 1;
		memcpy(sb->comm, body + 8, room);
		sb->comm[room] = '\0';
		/* exec replaced the process's image: its old mappings are gone,
		 * and the new image's MMAP2 records follow this one */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && ev->pid == ev->tid)
			rv_symbolizer_forget_process(sb->symbolizer, ev->pid);
		if (ev->pid == ev->tid)
			remember_name(sb, ev->pid, sb->comm);
		ev->kind = RV_EVENT_THREAD_NAME;
		ev->time = record_time(sb, h);
		ev->thread.name = sb->comm;
		return 1;
	case PERF_RECORD_FORK: {
		/* pid, ppid, tid, ptid, time: a new thread is known (for the
		 * threads the summary says were left out); a new process has its
		 * parent's mappings */
		struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} body_fork;

		if (room < sizeof(body_fork))
			return 0;
		memcpy(&body_fork, body, sizeof(body_fork));
		if (body_fork.pid != body_fork.ppid)
			return on_fork(sb, h, body_fork.pid, body_fork.ppid, ev, err);
		ev->kind = RV_EVENT_THREAD_START;
		ev->pid = body_fork.pid;
		ev->tid = body_fork.tid;
		ev->time = body_fork.time;
		return 1;
	}
	case PERF_RECORD_EXIT: {
		struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} body_exit;

		if (room < sizeof(body_exit))
			return 0;
		memcpy(&body_exit, body, sizeof(body_exit));
		ev->kind = RV_EVENT_THREAD_EXIT;
		ev->pid = body_exit.pid;
		ev->tid = body_exit.tid;
		ev->time = body_exit.time;
		return 1;
	}
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: {
		/* LOST: id, lost; LOST_SAMPLES: lost */
		size_t at = h->type == PERF_RECORD_LOST ? 8 : 0;
		uint64_t lost;

		if (room < at + sizeof(lost))
			return 0;
		memcpy(&lost, body + at, sizeof(lost));
		*sb->lost += lost;
		ev->kind = RV_EVENT_LOST;
		ev->time = record_time(sb, h);
		ev->lost.count = lost;
		return 1;
	}
	default:
		return 0;
	}
}

int rv_sideband_next(struct rv_sideband *sb, struct rv_perf_record *rec, struct rv_event *ev,
		     struct rv_error *err)
{
	for (;;) {
		int ret = rv_perf_reader_next(sb->reader, rec, err);

		if (ret <= 0)
			return ret;
		(*sb->records)++;
		memset(ev, 0, sizeof(*ev));
		if (rec->header->type == PERF_RECORD_SAMPLE)
			return RV_SIDEBAND_SAMPLE;
		if (sb->switches && (rec->header->type == PERF_RECORD_SWITCH ||
				     rec->header->type == PERF_RECORD_SWITCH_CPU_WIDE))
			return RV_SIDEBAND_SWITCH;
		ret = rv_sideband_record(sb, rec->header, ev, err);
		if (ret)
			return ret;
	}
}

int rv_sideband_mark(const struct rv_perf_sample *s, struct rv_event *ev, struct rv_error *err)
{
	struct rv_mark mark;
	int ret;

	if (!rv_sample_is_mark(s))
		return 0;
	ret = rv_mark_parse(s, &mark, err);
	if (ret)
		return ret;
	ev->kind = mark.kind == RV_MARK_WINDOW ? RV_EVENT_WINDOW : RV_EVENT_TRIGGER;
	ev->pid = mark.pid;
	ev->tid = mark.tid;
	ev->time = mark.time;
	ev->gate.name = mark.name;
	ev->gate.duration_ns = mark.duration_ns;
	ev->gate.slow = mark.flags & RV_MARK_FLAG_SLOW;
	ev->gate.snapshot = mark.flags & RV_MARK_FLAG_SNAPSHOT;
	return 1;
}

void rv_sideband_init(struct rv_sideband *sb, struct rv_perf_reader *reader,
		      struct rv_symbolizer *symbolizer, uint64_t *records, uint64_t *lost)
{
	memset(sb, 0, sizeof(*sb));
	sb->reader = reader;
	sb->symbolizer = symbolizer;
	sb->records = records;
	sb->lost = lost;
}
