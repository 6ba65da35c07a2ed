/* pt_pmu.h: what the intel_pt PMU of this machine can do, read from sysfs.
 *
 * Every path is relative to a root directory ("/" on a real machine) so that
 * tests point it at a fake tree (tests/data/sysfs/). From
 * ROOT/sys/bus/event_source/devices/intel_pt it reads the PMU type, every
 * format/ file (perf's syntax, "config:14-17", "config1:0,4-7"), so that attrs
 * are built from field NAMES, every caps/ file (hex, as the driver prints
 * them) and the timing files max_nonturbo_ratio and tsc_art_ratio; from
 * ROOT/proc/sys/kernel/osrelease the kernel version, which decides whether
 * aux pause/resume exists.
 *
 * The format helpers are generic: the uprobe PMU's format/ uses them too.
 *
 * Not here: building or checking attrs (record/pt_attr.h), opening events.
 */
#ifndef RV_RECORD_PT_PMU_H
#define RV_RECORD_PT_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Which perf_event_attr word a format field lives in. config3 exists in the
 * kernel (6.3+) but not in the uapi header we build against: a field there is
 * parsed, and refused by rv_pmu_format_put's callers. */
enum rv_pmu_config_word {
	RV_PMU_CONFIG,
	RV_PMU_CONFIG1,
	RV_PMU_CONFIG2,
	RV_PMU_CONFIG3,
};

#define RV_PMU_FORMAT_NAME_MAX 32
#define RV_PMU_MAX_FORMATS     32

/* One format/NAME file: a value is spread over the set bits of `bits`, its
 * lowest bit in the lowest set bit, as perf does for lists like "config:0,4-7". */
struct rv_pmu_format {
	char name[RV_PMU_FORMAT_NAME_MAX];
	enum rv_pmu_config_word word;
	uint64_t bits;
};

struct rv_pmu_formats {
	struct rv_pmu_format items[RV_PMU_MAX_FORMATS]; /* sorted by name */
	size_t count;
};

/* Parses one format file's text ("config:0", "config:14-17\n", "config1:0,2-5")
 * into format->word and format->bits; the name is left alone. Errors say what
 * is wrong with the text; the caller prefixes the file. */
int rv_pmu_format_parse(const char *text, struct rv_pmu_format *format, struct rv_error *err);

/* Reads every file of DIR (a PMU's format/ directory). Errors name the file. */
int rv_pmu_formats_read(struct rv_pmu_formats *formats, const char *dir, struct rv_error *err);

/* NULL when the PMU has no field of that name. */
const struct rv_pmu_format *rv_pmu_format_find(const struct rv_pmu_formats *formats,
					       const char *name);

unsigned rv_pmu_format_width(const struct rv_pmu_format *format);

/* The largest value the field holds (2^width - 1). */
uint64_t rv_pmu_format_max(const struct rv_pmu_format *format);

/* The field's value in a config word. */
uint64_t rv_pmu_format_get(const struct rv_pmu_format *format, uint64_t word);

/* The config word with the field set to value (which must fit: bits beyond
 * the field's width are dropped). */
uint64_t rv_pmu_format_put(const struct rv_pmu_format *format, uint64_t word, uint64_t value);

/* "config:14-17" back from the bits, for messages. */
void rv_pmu_format_describe(const struct rv_pmu_format *format, char *buf, size_t size);

/* The caps/ files of intel_pt (arch/x86/events/intel/pt.c, pt_caps[]). */
enum rv_pt_cap {
	RV_PT_CAP_MAX_SUBLEAF,
	RV_PT_CAP_CR3_FILTERING,
	RV_PT_CAP_PSB_CYC,
	RV_PT_CAP_IP_FILTERING,
	RV_PT_CAP_MTC,
	RV_PT_CAP_PTWRITE,
	RV_PT_CAP_POWER_EVENT_TRACE,
	RV_PT_CAP_EVENT_TRACE,
	RV_PT_CAP_TNT_DISABLE,
	RV_PT_CAP_TOPA_OUTPUT,
	RV_PT_CAP_TOPA_MULTIPLE_ENTRIES,
	RV_PT_CAP_SINGLE_RANGE_OUTPUT,
	RV_PT_CAP_OUTPUT_SUBSYS,
	RV_PT_CAP_PAYLOADS_LIP,
	RV_PT_CAP_NUM_ADDRESS_RANGES,
	RV_PT_CAP_MTC_PERIODS,	    /* bitmap of valid mtc_period values */
	RV_PT_CAP_CYCLE_THRESHOLDS, /* bitmap of valid cyc_thresh values */
	RV_PT_CAP_PSB_PERIODS,	    /* bitmap of valid psb_period values */
	RV_PT_CAP_COUNT,
};

/* The file name under caps/, e.g. "psb_cyc". */
const char *rv_pt_cap_name(enum rv_pt_cap cap);

struct rv_pt_pmu {
	uint32_t type; /* perf_event_attr.type for intel_pt */
	struct rv_pmu_formats formats;
	uint32_t caps[RV_PT_CAP_COUNT];	   /* a missing file reads as 0: not capable */
	uint32_t caps_missing;		   /* bit (1 << cap) for each caps/ file absent */
	uint32_t max_nonturbo_ratio;	   /* MSR_PLATFORM_INFO[15:8]; 0 when absent */
	uint32_t tsc_art_num, tsc_art_den; /* CPUID 0x15 EBX:EAX; 0:0 when absent */
	uint32_t nr_addr_filters;	   /* 0 when absent */
	bool has_max_nonturbo_ratio, has_tsc_art_ratio, has_nr_addr_filters;
	unsigned kernel_major, kernel_minor; /* 0.0 when osrelease is unreadable */
};

/* Reads ROOT/sys/bus/event_source/devices/intel_pt. Without that directory it
 * returns -ENODEV with a sentence saying this machine has no Intel PT and what
 * to record with instead. type and format/{pt,tsc,branch} are required; every
 * other file is optional (missing: 0, and noted in caps_missing and the
 * has_* flags), but any file that is present and malformed is an error
 * naming it. */
int rv_pt_pmu_discover(struct rv_pt_pmu *pmu, const char *root, struct rv_error *err);

static inline uint32_t rv_pt_pmu_cap(const struct rv_pt_pmu *pmu, enum rv_pt_cap cap)
{
	return pmu->caps[cap];
}

/* "0-3,6,9": the values a bitmap cap (mtc_periods, ...) allows; "none" for 0. */
void rv_pt_cap_values(uint32_t bitmap, char *buf, size_t size);

/* How many address filters the PMU takes: caps/num_address_ranges, else
 * nr_addr_filters. */
uint32_t rv_pt_pmu_address_ranges(const struct rv_pt_pmu *pmu);

/* One sentence on what discovery found missing (optional caps and timing
 * files), for --verbose; "" when nothing was. Returns the length wanted. */
size_t rv_pt_pmu_notes(const struct rv_pt_pmu *pmu, char *buf, size_t size);

/* Reads ROOT/proc/sys/kernel/osrelease ("6.13.7-200.fc41.x86_64"). Returns 0,
 * -ENOENT (or the open error) when unreadable, -EINVAL when not "N.M...". */
int rv_kernel_version(const char *root, unsigned *major, unsigned *minor);

/* Whether the kernel has aux_pause/aux_resume/aux_start_paused for intel_pt:
 * Linux 6.13 and later. (The core half was also backported to 6.12.y, the PT
 * driver half maybe not, so 6.12 is treated as lacking it.) */
bool rv_pt_pmu_has_aux_pause(const struct rv_pt_pmu *pmu);

#endif
