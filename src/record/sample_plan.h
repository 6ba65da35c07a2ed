/* sample_plan.h: what a sampling recording asks of the sampling engine,
 * decided from the command line and the machine before anything is opened:
 * the rate (--timer-resolution against the kernel's limit), the call graphs
 * (frame pointers or DWARF with the stack copy's size; LBR refused in words),
 * whether DWARF samples keep their raw stacks (--keep-raw-stacks, only with
 * --full-execution: a raw stack is 8 KiB, a call chain a few hundred bytes),
 * and the flight recorder's size (--snapshot-size, or the default of the
 * call-graph mode).
 *
 * Not here: opening the events (sample_engine.h), the function tracer's use
 * of the engine (session/fn_backend.c).
 */
#ifndef RV_RECORD_SAMPLE_PLAN_H
#define RV_RECORD_SAMPLE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/options.h"
#include "record/machine.h"
#include "record/sample_engine.h"
#include "util/error.h"

#define RV_SAMPLE_DEFAULT_SNAPSHOT_FP	 (4ull << 20)
#define RV_SAMPLE_DEFAULT_SNAPSHOT_DWARF (64ull << 20)

struct rv_sample_plan {
	uint64_t frequency;	      /* samples per second per CPU */
	bool dwarf;		      /* registers and a stack copy, unwound */
	uint32_t stack_bytes;	      /* dwarf: the copy's size (--callgraph-mode dwarf,SIZE) */
	bool keep_raw_stacks;	      /* dwarf: keep the copies, not the unwound chains */
	uint64_t snapshot_size_bytes; /* the flight recorder's size */
};

/* Refuses what the machine cannot do, in words that say what to ask for. */
int rv_sample_plan_build(struct rv_sample_plan *plan, const struct rv_options *opts,
			 const struct rv_machine *machine, struct rv_error *err);

/* The engine's configuration for the plan, recording pids (NULL, 0 for
 * --dry-run, before there are any); capture and gate_windows_fd are the
 * caller's to set. */
struct rv_sample_config rv_sample_plan_config(const struct rv_sample_plan *plan,
					      const struct rv_options *opts, const pid_t *pids,
					      size_t nr_pids);

#endif
