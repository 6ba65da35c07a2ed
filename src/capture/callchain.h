/* callchain.h: rearview's mark of a cut stack in a PERF_SAMPLE_CALLCHAIN.
 *
 * A user stack deeper than the sample's copy unwinds only to where the copy
 * ends; its outer frames are unknown. The recorder says so by ending the
 * user part of the chain with one more "address": RV_STACK_CUT_TAG in the
 * top 32 bits and the bytes copied in the low 32. On x86-64 that value is not
 * canonical, so it is never a real address, and perf's tools, which discard a
 * whole chain on an unknown PERF_CONTEXT_* value, take it as an unknown frame
 * ("[unknown]") and keep the chain. The decoder turns it back into the cut.
 *
 * The same marker with RV_STACK_UNWIND_STOPPED as its byte count says the
 * unwinder stopped inside the copy, where no call frame information
 * described a caller (a trampoline, code without CFI): the outer frames are
 * unknown just the same, for another reason.
 */
#ifndef RV_CAPTURE_CALLCHAIN_H
#define RV_CAPTURE_CALLCHAIN_H

#include <stdbool.h>
#include <stdint.h>

#define RV_STACK_CUT_TAG 0x52564354ull /* "RVCT" */

/* The byte count of a stack whose unwinding stopped before the copy ended. */
#define RV_STACK_UNWIND_STOPPED 0xffffffffu

static inline uint64_t rv_stack_cut_marker(uint32_t copied_bytes)
{
	return (RV_STACK_CUT_TAG << 32) | copied_bytes;
}

/* Whether addr is a cut marker; *copied_bytes then says how much was copied. */
static inline bool rv_stack_cut_parse(uint64_t addr, uint32_t *copied_bytes)
{
	if (addr >> 32 != RV_STACK_CUT_TAG)
		return false;
	*copied_bytes = (uint32_t)addr;
	return true;
}

#endif
