/* extra_events.h: --events LIST (magic-trace's -events), perf events recorded
 * beside the trace and drawn on the thread that took them.
 *
 * A LIST is comma-separated names, each with an optional "/period=N" suffix
 * (sample every N-th occurrence; N >= 1):
 * - software events, on every machine: page-faults (also "faults"),
 *   minor-faults, major-faults, context-switches ("cs"), cpu-migrations
 *   ("migrations"), alignment-faults, emulation-faults; period 1 by default
 *   (every occurrence);
 * - tracepoints: SUBSYS:NAME ("sched:sched_switch"), the id read from
 *   tracefs (ROOT/sys/kernel/tracing/events/SUBSYS/NAME/id, else
 *   ROOT/sys/kernel/debug/tracing/...); period 1 by default;
 * - hardware events, where the machine has a CPU PMU: branch-misses (period
 *   50 by default, as magic-trace) and cache-misses (period 1). Refused up
 *   front on a machine without one (a VM often has none), with the PMUs it
 *   does have named.
 * At most RV_MAX_EXTRA_EVENTS names; a name given twice is refused.
 *
 * For the sampling and uprobe engines (rv_extra_events_open) each is opened
 * per CPU for each recorded thread (inherit: the threads and processes they
 * make later are counted too, and the engine keeps the records of the
 * threads it records), disabled, its records going to the ring of the CPU's
 * own event (PERF_EVENT_IOC_SET_OUTPUT), so that they share that ring's
 * order, flight recorder and snapshots with the samples: they age out with
 * the trace. For Intel PT (rv_extra_event_attr_in_group) the PT engine opens
 * each as a sibling in every slot's PT group, writing into the slot's ring. Samples carry
 * RV_EXTRA_SAMPLE_TYPE (56 bytes each: header, id, ip, pid/tid, time, addr, cpu/res) and
 * sample_id_all. Software events and tracepoints count in the kernel as well as in user space (a
 * tracepoint fires in the kernel; exclude_kernel would drop every sample), so a sample's ip may be
 * a kernel address; hardware events count user space only unless the kernel is traced.
 *
 * In a capture, an extra event's attribute is named as given ("page-faults",
 * "sched:sched_switch"), and is told from the sampling clock by
 * rv_extra_event_attr_is_extra: one of the events above or a tracepoint,
 * with a fixed period (never freq) and no call chain, stack, registers or
 * raw data. So `perf record -c 1 -e page-faults` captures (no -g) decode the
 * same way, and a profile every N instructions stays a profile.
 *
 * Not here: what the engines do with the records (record/sample_engine.c),
 * or how they are drawn (trace/extra.c).
 */
#ifndef RV_RECORD_EXTRA_EVENTS_H
#define RV_RECORD_EXTRA_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"

#define RV_MAX_EXTRA_EVENTS 16
#define RV_EXTRA_NAME_MAX   128

/* No PERF_SAMPLE_PERIOD: with it the kernel samples every occurrence of a
 * software event or tracepoint whatever the period (perf_swevent_event); a
 * sample stands for the attribute's sample_period events. */
#define RV_EXTRA_SAMPLE_TYPE                                                                       \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU)
#define RV_EXTRA_SAMPLE_SIZE 56 /* bytes of one such sample, header included */

enum rv_extra_kind {
	RV_EXTRA_SOFTWARE,
	RV_EXTRA_HARDWARE,
	RV_EXTRA_TRACEPOINT,
};

struct rv_extra_event {
	char name[RV_EXTRA_NAME_MAX]; /* without the /period suffix */
	enum rv_extra_kind kind;
	uint32_t type;	 /* PERF_TYPE_* */
	uint64_t config; /* tracepoints: 0 until rv_extra_events_resolve reads the id */
	uint64_t period; /* a sample every period occurrences */
};

struct rv_extra_events {
	struct rv_extra_event events[RV_MAX_EXTRA_EVENTS];
	size_t nr;
};

/* Parses LIST (appending to *set, so that the option may be repeated). Names
 * are checked here (an unknown one is refused with the known ones listed);
 * whether the machine has them is rv_extra_events_resolve's question. */
int rv_extra_events_parse(const char *list, struct rv_extra_events *set, struct rv_error *err);

/* Checks the set against the machine under root ("/" or a fake sysfs tree):
 * hardware events need a CPU PMU (has_cpu_pmu: record/machine.h), and each
 * tracepoint's id is read from tracefs. Errors name the event and say what
 * the machine has. */
int rv_extra_events_resolve(struct rv_extra_events *set, const char *root, bool has_cpu_pmu,
			    struct rv_error *err);

/* The attribute an event is opened with (disabled, CLOCK_MONOTONIC as the
 * engines' events, inherit); include_kernel: hardware events count in the
 * kernel too. */
void rv_extra_event_attr(const struct rv_extra_event *ev, bool include_kernel,
			 struct perf_event_attr *attr);

/* The same for a sibling in the group of leader whose ring it writes into
 * (Intel PT: record/pt_engine.h's siblings): the leader's clock (use_clockid,
 * clockid) and inherit, which the kernel requires of events sharing a ring
 * and of an inherited group. */
void rv_extra_event_attr_in_group(const struct rv_extra_event *ev, bool include_kernel,
				  const struct perf_event_attr *leader,
				  struct perf_event_attr *attr);

/* Whether an attribute of a capture is an extra event's (see the top). */
bool rv_extra_event_attr_is_extra(const struct perf_event_attr *attr);

/* "page-faults, sched:sched_switch/period=2" into buf (for --dry-run and
 * the summary). */
void rv_extra_events_describe(const struct rv_extra_events *set, char *buf, size_t size);

/* perf's tracing data (HEADER_TRACING_DATA, version 0.6: tracefs's
 * header_page and header_event, and the format file of each tracepoint in
 * the set, by subsystem; no ftrace formats, kallsyms, printk formats or
 * saved command lines), read under root, for the capture's rv_perf_meta:
 * perf script reads a tracepoint's samples only with it. *out is malloc'd
 * (NULL, size 0 when the set has no tracepoint). */
int rv_extra_events_tracing_data(const struct rv_extra_events *set, const char *root, void **out,
				 size_t *size, struct rv_error *err);

/* The events as opened for a recording. */
struct rv_extra_open;

/* For each event, each thread and each CPU cpus[i]: opens the event on
 * (thread, cpus[i]) and sends its records to output_fds[i] (the engine's
 * event of that CPU). Threads: pids themselves, and with all_threads every
 * thread /proc lists for each (a thread made between the listing and the
 * opening is missed unless one listed made it). A thread that exited
 * meanwhile is skipped. Errors say which event could not be opened and why. */
int rv_extra_events_open(struct rv_extra_open **out, const struct rv_extra_events *set,
			 const pid_t *pids, size_t nr_pids, bool all_threads, bool include_kernel,
			 const int *cpus, const int *output_fds, size_t nr_cpus,
			 struct rv_error *err);

/* Enables (or disables) every event opened. */
void rv_extra_open_enable(struct rv_extra_open *o, bool enable);

/* The index in the set of the event a sample's id belongs to; -1: none. */
int rv_extra_open_find(const struct rv_extra_open *o, uint64_t id);

/* The kernel ids of event `index` (for the capture's attribute); *ids lives
 * as long as o. */
size_t rv_extra_open_ids(const struct rv_extra_open *o, size_t index, const uint64_t **ids);

/* The attribute event `index` was opened with. */
const struct perf_event_attr *rv_extra_open_attr(const struct rv_extra_open *o, size_t index);

/* Closes everything; NULL is fine. */
void rv_extra_open_free(struct rv_extra_open *o);

#endif
