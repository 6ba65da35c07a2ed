/* record_pt.h: a recording session on the Intel PT engine: the PT event and
 * its sideband, the gate's uprobes in the PT group (resume, pause, AUX
 * samples), the AUX area as a snapshot ring, and the capture decoded into the
 * trace as `rearview decode` does.
 *
 * Not here: choosing the engine (record.c), the gate's decisions (gate.bpf.c).
 */
#ifndef RV_CMD_RECORD_PT_H
#define RV_CMD_RECORD_PT_H

#include <sys/types.h>

#include "cmd/gating.h"
#include "cmd/record.h"
#include "record/dry_run.h"
#include "util/error.h"

/* Adds what the session would open to plan (sites: NULL without --filter or
 * --trigger; pid 0 when the program is not started). */
int rv_session_describe_pt(struct rv_session *s, const struct rv_gating_sites *sites, pid_t pid,
			   struct rv_dry_run_plan *plan, struct rv_error *err);

/* Records target with Intel PT until it exits, the user interrupts or a
 * snapshot ends it, then writes the trace. */
int rv_session_record_pt(struct rv_session *s, struct rv_target *target,
			 const struct rv_gating_sites *sites, struct rv_error *err);

#endif
