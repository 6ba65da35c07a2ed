/* fn_decoder.h: a function-tracer capture (perf.data of the uprobe engine's
 * records) turned into the event stream of events.h.
 *
 * Every struct rv_fn_record (bpf/functions.h) is the raw data of a sample of
 * the bpf-output event named RV_FN_EVENT_NAME. Each becomes one event, for
 * the thread the record names (its tid and pid), at the sample's time:
 * - RV_FN_ENTER, RV_FN_EXIT: RV_EVENT_CALL_ENTER, RV_EVENT_CALL_EXIT with the
 *   record's addr and sp (the builder names the function);
 * - RV_FN_SYSCALL_ENTER/EXIT: a SYSCALL kernel span named from the system
 *   call table ("read"; "syscall N" for a number it lacks), arguments "nr"
 *   (both) and "ret" (the exit, signed);
 * - RV_FN_SWITCH_OUT/IN: an OFF_CPU kernel span named "[off-cpu: REASON]"
 *   from the state the thread was switched out in (argument "state"): 0 (or
 *   perf's "R+" value 0x100) "preempted", TASK_INTERRUPTIBLE "sleeping",
 *   TASK_UNINTERRUPTIBLE "disk", stopped or traced "stopped", a zombie or
 *   dead task "dead", else "state 0xN"; the switch-in, whose record says no
 *   state, is named "[off-cpu]";
 * - RV_FN_IRQ_ENTER/EXIT: an IRQ kernel span "[irq N]" (argument "ret" on
 *   the exit: the handler's IRQ_HANDLED or IRQ_NONE);
 * - RV_FN_KFUNC_ENTER/EXIT: a FUNCTION kernel span named by the symbolizer
 *   (kallsyms) at the record's addr;
 * - RV_FN_PAGE_FAULT: an instant "[page fault]" with arguments "address",
 *   "ip" and "error_code".
 * Samples of an --events event (record/extra_events.h) become RV_EVENT_EXTRA
 * as in the sample decoder (decode/extra.h).
 * Records without RV_FN_FLAG_IN_WINDOW (made while the thread was outside
 * every --filter window) and records of a type this decoder does not know are
 * skipped and counted. The sideband makes the events the sample decoder
 * makes: mappings go to the symbolizer, COMM records name threads, EXIT
 * records end them, LOST records are counted; the gate's marks
 * (capture/marks.h) become window and trigger events.
 *
 * Every length is checked: a function record whose raw data is shorter than
 * the record is an error naming its offset in the file, as is a damaged perf
 * record; the events before it stand.
 *
 * Records are taken in file order, which rearview writes in time order.
 *
 * Not here: spans and call stacks (the trace builder), recording (the uprobe
 * engine).
 */
#ifndef RV_DECODE_FN_DECODER_H
#define RV_DECODE_FN_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/events.h"
#include "capture/perf_data.h"
#include "functions.h"
#include "symbolize/symbolizer.h"
#include "util/error.h"

/* Slots of rv_fn_decoder_stats.by_type: one per enum rv_fn_record_type. */
#define RV_FN_NR_RECORD_TYPES (RV_FN_KFUNC_EXIT + 1)

struct rv_fn_decoder_stats {
	uint64_t records;			 /* perf records read */
	uint64_t by_type[RV_FN_NR_RECORD_TYPES]; /* function records by type */
	uint64_t unknown_types;			 /* function records of another type: skipped */
	uint64_t outside_windows;		 /* without RV_FN_FLAG_IN_WINDOW: skipped */
	uint64_t other_samples;			 /* samples of other events: skipped */
	uint64_t extra;				 /* --events samples (RV_EVENT_EXTRA) */
	uint64_t lost;				 /* records the kernel could not deliver */
	uint64_t marks;				 /* the gate's windows and triggers */
	uint64_t first_time, last_time;		 /* of function records; 0 when none */
};

struct rv_fn_decoder;

/* Whether the capture reader reads declares the functions event (its name
 * in HEADER_EVENT_DESC is RV_FN_EVENT_NAME). */
bool rv_fn_decoder_recognises(const struct rv_perf_reader *reader);

/* Decodes the capture reader reads (borrowed: it must outlive the decoder),
 * from where it stands; an error if it is not a function-tracer capture.
 * Names of kernel functions come from the symbolizer's kallsyms. */
int rv_fn_decoder_open(struct rv_fn_decoder **out, struct rv_perf_reader *reader,
		       struct rv_symbolizer *symbolizer, struct rv_error *err);

/* 1: *event is set; it (and the arguments it points to) stays valid until the
 * next call, its names (and its arguments' names) until the decoder is freed.
 * 0: end of capture. Negative: the capture is damaged from here on (err says
 * where). */
int rv_fn_decoder_next(struct rv_fn_decoder *d, struct rv_event *event, struct rv_error *err);

void rv_fn_decoder_stats(const struct rv_fn_decoder *d, struct rv_fn_decoder_stats *out);

/* "enter", "syscall exit", ...: a record type for --stats; NULL if unknown. */
const char *rv_fn_record_type_name(unsigned type);

void rv_fn_decoder_free(struct rv_fn_decoder *d);

#endif
