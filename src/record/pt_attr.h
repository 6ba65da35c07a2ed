/* pt_attr.h: the perf_event_attrs of a PT recording: the intel_pt event, the
 * uprobe events in its group (the gate's START, STOP and trigger), the
 * sideband event, and PT address filters.
 *
 * The intel_pt config is built from the PMU's format NAMES (record/pt_pmu.h),
 * never from hard-coded bit numbers, and checked against the caps exactly as
 * the kernel's pt_event_valid() will, so that a bad value is refused with a
 * sentence naming it and the values this CPU allows, not with EINVAL from
 * perf_event_open.
 *
 * --timer-resolution as magic-trace maps it onto perf's intel_pt terms, applied
 * over perf's own defaults (tsc, mtc with the mtc_period nearest 3, the
 * psb_period nearest 3, pt, branch; tools/perf/arch/x86/util/intel-pt.c):
 *   low     nothing more;
 *   normal  cyc=1,cyc_thresh=1,mtc_period=0;
 *   high    normal plus noretcomp=1;
 *   custom  the user's terms ("cyc=1,psb_period=3"; "name" alone means 1).
 * Without caps/psb_cyc, normal and high fall back to low with a warning; a
 * custom value the CPU cannot do is an error, because the user asked for it.
 *
 * Snapshot and full-execution mode use the same attr. What differs is the AUX
 * mmap: read-only makes the kernel overwrite the buffer (snapshot mode),
 * PROT_WRITE makes it stop at aux_tail (full mode); see record/pt_engine.h.
 *
 * Not here: opening anything, or deciding which events a recording needs.
 */
#ifndef RV_RECORD_PT_ATTR_H
#define RV_RECORD_PT_ATTR_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/perf_attr_ext.h"
#include "record/pt_pmu.h"
#include "util/error.h"

/* What every event of a PT recording samples, so that the sideband records
 * (sample_id_all) of all of them parse alike; the same as tools/softpt writes. */
#define RV_PT_SAMPLE_TYPE                                                                          \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |                   \
	 PERF_SAMPLE_IDENTIFIER)

/* perf refuses AUX samples above 60 KiB (a record is at most 64 KiB). */
#define RV_AUX_SAMPLE_MAX (60u * 1024)

enum rv_pt_timing {
	RV_PT_TIMING_LOW,
	RV_PT_TIMING_NORMAL,
	RV_PT_TIMING_HIGH,
	RV_PT_TIMING_CUSTOM,
};

enum rv_trace_scope {
	RV_SCOPE_USER,	      /* exclude_kernel */
	RV_SCOPE_USER_KERNEL, /* --trace-include-kernel */
	RV_SCOPE_KERNEL,      /* --trace-kernel-only: exclude_user */
};

struct rv_pt_request {
	enum rv_pt_timing timing;
	const char *custom_terms; /* RV_PT_TIMING_CUSTOM: the text after "custom:" */
	enum rv_trace_scope scope;
	bool start_paused;   /* aux_start_paused: the gate's START event resumes it */
	bool enable_on_exec; /* for a spawned target; else the caller enables it */
};

#define RV_PT_MAX_WARNINGS 4

/* Things the caller should tell the user; static strings, never printed here. */
struct rv_pt_warnings {
	const char *text[RV_PT_MAX_WARNINGS];
	size_t count;
};

/* perf's default intel_pt config for this PMU (what `perf record -e
 * intel_pt//` opens): tsc; mtc with mtc_period nearest 3 when caps/mtc and
 * mtc_periods allow it; psb_period nearest 3 with psb_cyc; pt and branch. */
int rv_pt_default_config(const struct rv_pt_pmu *pmu, uint64_t *config, struct rv_error *err);

/* Applies "name=value,name,..." to *config by the PMU's format names. Values
 * are decimal or 0x-hex. Unknown names, values wider than the field and
 * fields outside `config` are errors naming the term. */
int rv_pt_apply_terms(const struct rv_pt_pmu *pmu, const char *terms, uint64_t *config,
		      struct rv_error *err);

/* The kernel's pt_event_valid() on a config, by field names: every set bit
 * belongs to a format field; cyc, cyc_thresh and psb_period need caps/psb_cyc
 * and a non-zero value's bit in caps/cycle_thresholds or caps/psb_periods;
 * mtc (or a non-zero mtc_period) needs caps/mtc and mtc_period's bit in
 * caps/mtc_periods; pwr_evt needs power_event_trace; ptw and fup_on_ptw need
 * ptwrite, fup_on_ptw needs ptw; event needs event_trace; notnt needs
 * tnt_disable; branch needs pt. Errors name the value and the allowed ones. */
int rv_pt_config_check(const struct rv_pt_pmu *pmu, uint64_t config, struct rv_error *err);

/* The intel_pt event: type, size (the whole struct, >= 120 so aux_action is
 * read), config from the timing, sample_period 1, RV_PT_SAMPLE_TYPE,
 * sample_id_all, disabled, exclude_hv, exclude_kernel/exclude_user from the
 * scope, enable_on_exec if asked, aux_start_paused if asked (refused with
 * EOPNOTSUPP before Linux 6.13). warnings may be NULL (they are dropped). */
int rv_pt_attr_build(struct perf_event_attr *attr, const struct rv_pt_pmu *pmu,
		     const struct rv_pt_request *req, struct rv_pt_warnings *warnings,
		     struct rv_error *err);

/* The uprobe PMU: its type and its format/retprobe field. */
struct rv_uprobe_pmu {
	uint32_t type;
	struct rv_pmu_format retprobe;
	bool has_retprobe;
};

/* Reads ROOT/sys/bus/event_source/devices/uprobe/{type,format/retprobe}.
 * -ENODEV with a sentence when the kernel has no uprobe PMU. */
int rv_uprobe_pmu_type(const char *root, struct rv_uprobe_pmu *pmu, struct rv_error *err);

enum rv_uprobe_role {
	RV_UPROBE_PLAIN,      /* a sampling uprobe event of its own (the gate without PT) */
	RV_UPROBE_AUX_RESUME, /* in the PT group: each hit resumes PT (the gate's START) */
	RV_UPROBE_AUX_PAUSE,  /* in the PT group: each hit pauses PT (the gate's STOP) */
	RV_UPROBE_SAMPLE_AUX, /* in the PT group: each hit copies the AUX tail (a snapshot) */
};

struct rv_uprobe_request {
	const char *path; /* absolute; config1 points at it until perf_event_open */
	uint64_t file_offset;
	bool retprobe;
	enum rv_uprobe_role role;
	uint64_t aux_sample_size; /* SAMPLE_AUX: bytes wanted */
	uint64_t aux_buffer_size; /* SAMPLE_AUX: the PT event's AUX area size */
};

/* A uprobe perf event: config1 = (u64)(uintptr_t)path, config2 = file offset,
 * the retprobe field set for a return probe; sample_period 1 (an action fires
 * only on a sampling event's overflow), RV_PT_SAMPLE_TYPE, sample_id_all.
 * PLAIN is disabled (attaching a BPF program enables it); the group roles are
 * enabled with their leader. SAMPLE_AUX adds PERF_SAMPLE_AUX with
 * aux_sample_size clamped as perf and the kernel do: at most
 * RV_AUX_SAMPLE_MAX, at most aux_buffer_size, rounded down to 8; a result of
 * 0 is an error. */
int rv_uprobe_attr(struct perf_event_attr *attr, const struct rv_uprobe_pmu *pmu,
		   const struct rv_uprobe_request *req, struct rv_error *err);

/* The resume sibling's period: cpu-clock nanoseconds of the traced thread
 * between the arming of the event and the resume (pt_engine.h). */
#define RV_PT_RESUME_PERIOD_NS 100000ull

/* The resume sibling of a PT group (record/pt_engine.h): a cpu-clock
 * software event with aux_resume, sample_period RV_PT_RESUME_PERIOD_NS,
 * RV_PT_SAMPLE_TYPE, sample_id_all, disabled, exclude_hv, exclude_kernel
 * for a user-only scope, inherit as asked (a per-CPU group's members must
 * all inherit). Only a sampling event's overflow resumes; user space arms
 * it, never the target. */
void rv_pt_resume_attr(struct perf_event_attr *attr, enum rv_trace_scope scope, bool inherit);

/* perf_event_open's AUX rules (kernel-interfaces §1, §2) on one event whose
 * group leader is `leader` (NULL: it leads or is alone); pmu may be NULL when
 * there is no intel_pt. Refused: aux_pause with aux_resume (EINVAL); aux_output
 * with pause or resume (EOPNOTSUPP) or with aux_sample_size (EINVAL); an
 * aux_action bit with attr.size < 120 (EINVAL); pause, resume, aux_output or
 * an AUX sample outside a group led by intel_pt (EINVAL); aux_start_paused on
 * anything but intel_pt, or any action before Linux 6.13 (EOPNOTSUPP); and,
 * rearview's own rules, PERF_SAMPLE_AUX without aux_sample_size or the
 * reverse, and pause/resume on a non-sampling event, which would never fire. */
int rv_aux_rules_check(const struct perf_event_attr *attr, const struct perf_event_attr *leader,
		       const struct rv_pt_pmu *pmu, struct rv_error *err);

struct rv_sideband_request {
	enum rv_trace_scope scope;
	bool context_switch; /* per-CPU recording: which thread ran when */
	bool enable_on_exec;
};

/* The sideband event: PERF_COUNT_SW_DUMMY with mmap, mmap2, comm, comm_exec,
 * task, sample_id_all, RV_PT_SAMPLE_TYPE, disabled, exclude_hv; context_switch
 * if asked; with kernel scope text_poke and ksymbol (perf opens that one
 * system-wide, on every CPU), else exclude_kernel. */
void rv_sideband_attr(struct perf_event_attr *attr, const struct rv_sideband_request *req);

enum rv_pt_filter_action {
	RV_PT_FILTER_TRACE, /* "filter": trace only inside the range */
	RV_PT_FILTER_STOP,  /* "stop": stop tracing on entering the range */
};

/* Appends one PT address filter in the kernel's syntax, "filter
 * 0xSTART/0xSIZE@PATH" (START is a FILE OFFSET in PATH; the kernel maps it
 * through each mapping's vm_pgoff), to buf, separated from what is there by a
 * space; buf must hold a string ("" to start). PT refuses "start" filters and
 * size 0, so neither is offered. The path must be absolute and free of
 * spaces, commas and newlines, which separate filters. */
int rv_pt_address_filter(char *buf, size_t size, enum rv_pt_filter_action action, const char *path,
			 uint64_t file_offset, uint64_t range_size, struct rv_error *err);

/* Refuses more filters than the PMU has address ranges. */
int rv_pt_address_filters_fit(const struct rv_pt_pmu *pmu, size_t count, struct rv_error *err);

#endif
