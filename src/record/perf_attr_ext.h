/* perf_attr_ext.h: the perf_event_attr fields newer than the uapi header we
 * build against.
 *
 * Debian 12's linux/perf_event.h (6.1) has no aux_action: the u32 at offset
 * 116, where Linux 6.13 put aux_start_paused (bit 0), aux_pause (bit 1) and
 * aux_resume (bit 2), is still called __reserved_3 there. These accessors
 * write the bits into that word so that the attr we pass is the one a 6.13
 * kernel reads. The kernel reads them only when attr.size covers the word
 * (>= 120, PERF_ATTR_SIZE_VER6); kernels before 6.13 refuse any of them with
 * EINVAL because the word was reserved and had to be zero.
 *
 * Also the sideband bits every recording event of rearview's sets, in one
 * place (the sampling engine's events, Intel PT's sideband event).
 *
 * Not here: when to set them or which events may carry them (record/pt_attr.h).
 */
#ifndef RV_RECORD_PERF_ATTR_EXT_H
#define RV_RECORD_PERF_ATTR_EXT_H

#include <assert.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RV_AUX_START_PAUSED (1u << 0) /* the AUX event opens paused */
#define RV_AUX_PAUSE	    (1u << 1) /* this event's overflow pauses its group's AUX event */
#define RV_AUX_RESUME	    (1u << 2) /* this event's overflow resumes it */
#define RV_AUX_ACTIONS	    (RV_AUX_START_PAUSED | RV_AUX_PAUSE | RV_AUX_RESUME)

#define RV_AUX_ACTION_OFFSET 116
/* attr.size must reach past the aux_action word for the kernel to read it. */
#define RV_ATTR_SIZE_AUX_ACTION 120

/* If the header ever gains aux_action, __reserved_3 becomes a bitfield and this
 * stops compiling: use attr->aux_action in the accessors below then. */
static_assert(offsetof(struct perf_event_attr, __reserved_3) == RV_AUX_ACTION_OFFSET,
	      "aux_action lives in the u32 at offset 116 of perf_event_attr");
static_assert(sizeof(((struct perf_event_attr *)0)->__reserved_3) == 4, "aux_action is a u32");

static inline uint32_t rv_attr_aux_action(const struct perf_event_attr *attr)
{
	return attr->__reserved_3 & RV_AUX_ACTIONS;
}

/* Sets the given RV_AUX_* bits, leaving the others as they are. */
static inline void rv_attr_set_aux_action(struct perf_event_attr *attr, uint32_t bits)
{
	attr->__reserved_3 |= bits & RV_AUX_ACTIONS;
}

static inline bool rv_attr_aux_start_paused(const struct perf_event_attr *attr)
{
	return attr->__reserved_3 & RV_AUX_START_PAUSED;
}

static inline bool rv_attr_aux_pause(const struct perf_event_attr *attr)
{
	return attr->__reserved_3 & RV_AUX_PAUSE;
}

static inline bool rv_attr_aux_resume(const struct perf_event_attr *attr)
{
	return attr->__reserved_3 & RV_AUX_RESUME;
}

/* False when an aux_action bit is set but attr.size stops before the word. */
static inline bool rv_attr_aux_action_size_ok(const struct perf_event_attr *attr)
{
	return !rv_attr_aux_action(attr) || attr->size >= RV_ATTR_SIZE_AUX_ACTION;
}

/* Opens disabled and reports what follows the processes: mappings (MMAP,
 * MMAP2), names (COMM, also at exec) and tasks (FORK, EXIT). */
static inline void rv_attr_follow_tasks(struct perf_event_attr *a)
{
	a->disabled = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
}

#endif
