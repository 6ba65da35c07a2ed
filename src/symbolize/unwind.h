/* unwind.h: user-space stacks from register and stack snapshots (perf's
 * PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER), unwound with the call
 * frame information of the mapped ELF files through elfutils libdwfl.
 *
 * This is how --callgraph-mode dwarf gets stacks from programs built without
 * frame pointers. The modules come from the symbolizer's per-process Dwfl.
 * Both stages use it: the recording's online unwinder (record/online_unwind)
 * as samples arrive, and the decoder for captures that kept raw stacks.
 *
 * This module is not: a symbolizer. It returns addresses.
 */
#ifndef RV_SYMBOLIZE_UNWIND_H
#define RV_SYMBOLIZE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/symbolizer.h"
#include "util/error.h"

/* The x86-64 user registers a DWARF-mode sample must carry (perf_regs bit
 * numbering: AX BX CX DX SI DI BP SP IP FLAGS CS SS, R8..R15). */
#define RV_UNWIND_X86_64_REGS_MASK 0xff0fffULL

struct rv_unwind_input {
	uint32_t pid, tid;
	uint64_t regs_mask;   /* the sample's attr.sample_regs_user */
	const uint64_t *regs; /* popcount(regs_mask) values in bit order */
	const uint8_t *stack; /* copy of user memory from the sampled SP upwards */
	uint64_t stack_size;  /* valid bytes at stack */
};

struct rv_unwinder;

int rv_unwinder_new(struct rv_unwinder **out, struct rv_symbolizer *symbolizer,
		    struct rv_error *err);

/* Fills frames[0..*nr_frames) leaf first: frames[0] is the sampled IP, then
 * each caller's return address (not adjusted). Stops at max_frames, at the
 * end of the copied stack, or where CFI runs out; returns 0 with at least the
 * IP whenever the registers are valid, negative only on bad input. */
int rv_unwind(struct rv_unwinder *u, const struct rv_unwind_input *in, uint64_t *frames,
	      size_t max_frames, size_t *nr_frames, struct rv_error *err);

/* Whether the last rv_unwind stopped because it needed stack memory above
 * what the sample copied (a stack deeper than the copy: its outer frames are
 * unknown), rather than at the outermost frame or where CFI ran out. Only
 * true of a copy the kernel cut: callers check that the copy is as large as
 * was asked for (a shorter one reached the top of the stack). */
bool rv_unwind_cut(const struct rv_unwinder *u);

/* Whether the last rv_unwind stopped inside the copy, at a frame whose
 * caller no call frame information described (libdwfl's error), rather than
 * at the outermost frame, at max_frames or at the copy's end. */
bool rv_unwind_stopped(const struct rv_unwinder *u);

void rv_unwinder_free(struct rv_unwinder *u);

#endif
