/* test_pt_attr.c: the intel_pt attr for each --timer-resolution on each fake
 * CPU, the kernel's validation, the uprobe and sideband attrs, the AUX rules
 * and address filters.
 *
 * Expected configs are computed here by hand from the trees' format files,
 * which are the same on every tree:
 *   pt=config:0 cyc=config:1 pwr_evt=config:4 fup_on_ptw=config:5 mtc=config:9
 *   tsc=config:10 noretcomp=config:11 ptw=config:12 branch=config:13
 *   mtc_period=config:14-17 cyc_thresh=config:19-22 psb_period=config:24-27
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/pt_attr.h"
#include "sysfs_root.h"

#define PT	      (1ULL << 0)
#define CYC	      (1ULL << 1)
#define PWR_EVT	      (1ULL << 4)
#define MTC	      (1ULL << 9)
#define TSC	      (1ULL << 10)
#define NORETCOMP     (1ULL << 11)
#define PTW	      (1ULL << 12)
#define BRANCH	      (1ULL << 13)
#define MTC_PERIOD(v) ((uint64_t)(v) << 14)
#define CYC_THRESH(v) ((uint64_t)(v) << 19)
#define PSB_PERIOD(v) ((uint64_t)(v) << 24)

/* perf's default where mtc_periods=249 and psb_periods=3f: the valid values
 * nearest 3 are 3 and 3. */
#define SKL_DEFAULT (TSC | MTC | MTC_PERIOD(3) | PSB_PERIOD(3) | PT | BRANCH)
/* magic-trace's normal: cyc=1,cyc_thresh=1,mtc_period=0 over the default. */
#define SKL_NORMAL (TSC | MTC | MTC_PERIOD(0) | PSB_PERIOD(3) | PT | BRANCH | CYC | CYC_THRESH(1))
/* Without mtc and psb_cyc, perf's default is tsc,pt,branch. */
#define BDW_DEFAULT (TSC | PT | BRANCH)

static struct perf_event_attr build(const char *cpu, enum rv_pt_timing timing, const char *custom,
				    struct rv_pt_warnings *warnings)
{
	struct rv_pt_pmu pmu;
	struct rv_pt_request req = { .timing = timing, .custom_terms = custom };
	struct perf_event_attr attr;
	struct rv_error err = { 0 };

	sysfs_discover(&pmu, cpu);
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, warnings, &err), 0, "%s: %s", cpu,
		     err.message);
	return attr;
}

static void assert_config(const char *cpu, enum rv_pt_timing timing, const char *custom,
			  uint64_t expected, size_t nr_warnings)
{
	struct rv_pt_warnings warnings = { 0 };
	struct perf_event_attr attr = build(cpu, timing, custom, &warnings);

	cr_assert_eq(attr.config, expected, "%s timing %d: config 0x%llx, expected 0x%llx", cpu,
		     (int)timing, (unsigned long long)attr.config, (unsigned long long)expected);
	cr_assert_eq(warnings.count, nr_warnings, "%s timing %d: %zu warnings (first: %s)", cpu,
		     (int)timing, warnings.count, warnings.count ? warnings.text[0] : "");
}

Test(pt_attr, timer_resolutions_on_skylake)
{
	assert_config("skylake", RV_PT_TIMING_LOW, NULL, SKL_DEFAULT, 0);
	assert_config("skylake", RV_PT_TIMING_NORMAL, NULL, SKL_NORMAL, 0);
	assert_config("skylake", RV_PT_TIMING_HIGH, NULL, SKL_NORMAL | NORETCOMP, 0);
	cr_assert_eq(SKL_DEFAULT, 0x300e601ULL, "the hand-written sum itself");
}

Test(pt_attr, timer_resolutions_on_icelake_match_skylake)
{
	assert_config("icelake", RV_PT_TIMING_LOW, NULL, SKL_DEFAULT, 0);
	assert_config("icelake", RV_PT_TIMING_NORMAL, NULL, SKL_NORMAL, 0);
	assert_config("icelake", RV_PT_TIMING_HIGH, NULL, SKL_NORMAL | NORETCOMP, 0);
}

Test(pt_attr, normal_and_high_fall_back_to_low_without_psb_cyc)
{
	static const char *const cpus[] = { "broadwell", "no-cyc-no-mtc" };

	for (size_t i = 0; i < 2; i++) {
		struct rv_pt_warnings w = { 0 };
		struct perf_event_attr attr;

		assert_config(cpus[i], RV_PT_TIMING_LOW, NULL, BDW_DEFAULT, 0);
		attr = build(cpus[i], RV_PT_TIMING_NORMAL, NULL, &w);
		cr_assert_eq(attr.config, BDW_DEFAULT, "%s", cpus[i]);
		cr_assert_eq(w.count, 1);
		cr_assert(strstr(w.text[0], "psb_cyc"), "%s", w.text[0]);
		cr_assert(strstr(w.text[0], "~1us") && strstr(w.text[0], "~10ns"), "%s", w.text[0]);
		attr = build(cpus[i], RV_PT_TIMING_HIGH, NULL, &w);
		cr_assert_eq(attr.config, BDW_DEFAULT, "high falls back whole, noretcomp too");
		cr_assert_eq(w.count, 1);
	}
}

/* A CPU with psb_cyc whose caps lack cyc_thresh=1 and mtc_period=0: normal
 * keeps what it can, one warning per dropped term. */
Test(pt_attr, normal_drops_terms_the_cpu_lacks)
{
	struct rv_pt_pmu pmu;
	struct rv_pt_request req = { .timing = RV_PT_TIMING_NORMAL };
	struct rv_pt_warnings w = { 0 };
	struct perf_event_attr attr;
	struct rv_error err = { 0 };

	sysfs_discover(&pmu, "skylake");
	pmu.caps[RV_PT_CAP_CYCLE_THRESHOLDS] = 0x1; /* only 0 */
	pmu.caps[RV_PT_CAP_MTC_PERIODS] = 0x8;	    /* only 3 */
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, &w, &err), 0, "%s", err.message);
	cr_assert_eq(attr.config, TSC | MTC | MTC_PERIOD(3) | PSB_PERIOD(3) | PT | BRANCH | CYC);
	cr_assert_eq(w.count, 2);
	cr_assert(strstr(w.text[0], "cycle_thresholds"), "%s", w.text[0]);
	cr_assert(strstr(w.text[1], "mtc_periods"), "%s", w.text[1]);
}

/* perf picks the valid period nearest 3, the lower one first. */
Test(pt_attr, default_periods_follow_perf_pick)
{
	struct rv_pt_pmu pmu;
	uint64_t config;
	struct rv_error err = { 0 };

	sysfs_discover(&pmu, "skylake");
	pmu.caps[RV_PT_CAP_MTC_PERIODS] = 0x6;	/* 1, 2: highest below 3 */
	pmu.caps[RV_PT_CAP_PSB_PERIODS] = 0x30; /* 4, 5: lowest above 3 */
	cr_assert_eq(rv_pt_default_config(&pmu, &config, &err), 0, "%s", err.message);
	cr_assert_eq(config, TSC | MTC | MTC_PERIOD(2) | PSB_PERIOD(4) | PT | BRANCH);

	pmu.caps[RV_PT_CAP_MTC] = 0; /* periods listed but no mtc: neither mtc nor psb */
	cr_assert_eq(rv_pt_default_config(&pmu, &config, &err), 0);
	cr_assert_eq(config, BDW_DEFAULT);
}

Test(pt_attr, custom_terms_over_perf_defaults)
{
	assert_config("skylake", RV_PT_TIMING_CUSTOM,
		      "cyc=1,mtc_period=0,psb_period=3,cyc_thresh=2,mtc=1,noretcomp=1",
		      TSC | MTC | MTC_PERIOD(0) | PSB_PERIOD(3) | PT | BRANCH | CYC |
			      CYC_THRESH(2) | NORETCOMP,
		      0);
	/* a bare name means 1; hex values; mtc=0 switches the default off */
	assert_config("icelake", RV_PT_TIMING_CUSTOM, "ptw,pwr_evt=0x1,mtc=0,mtc_period=0",
		      TSC | PSB_PERIOD(3) | PT | BRANCH | PTW | PWR_EVT, 0);
	assert_config("broadwell", RV_PT_TIMING_CUSTOM, "noretcomp=1", BDW_DEFAULT | NORETCOMP, 0);
}

static void assert_custom_refused(const char *cpu, const char *terms, int code,
				  const char *mention1, const char *mention2)
{
	struct rv_pt_pmu pmu;
	struct rv_pt_request req = { .timing = RV_PT_TIMING_CUSTOM, .custom_terms = terms };
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	int rc;

	sysfs_discover(&pmu, cpu);
	rc = rv_pt_attr_build(&attr, &pmu, &req, NULL, &err);
	cr_assert_eq(rc, -code, "%s custom:%s: rc %d (%s)", cpu, terms, rc, err.message);
	cr_assert(strstr(err.message, mention1), "%s: '%s' lacks '%s'", terms, err.message,
		  mention1);
	if (mention2)
		cr_assert(strstr(err.message, mention2), "%s: '%s' lacks '%s'", terms, err.message,
			  mention2);
	cr_assert(strstr(err.message, "--timer-resolution custom:"), "%s", err.message);
}

Test(pt_attr, custom_values_the_cpu_cannot_do_are_refused)
{
	/* value named, allowed values listed (caps 3fff, 3f, 249) */
	assert_custom_refused("skylake", "cyc=1,cyc_thresh=14", EINVAL, "cyc_thresh=14", "0-13");
	assert_custom_refused("skylake", "psb_period=6", EINVAL, "psb_period=6", "0-5");
	assert_custom_refused("skylake", "mtc_period=1", EINVAL, "mtc_period=1", "0,3,6,9");
	assert_custom_refused("broadwell", "cyc=1", EOPNOTSUPP, "cyc=1", "caps/psb_cyc is 0");
	assert_custom_refused("broadwell", "psb_period=2", EOPNOTSUPP, "psb_period=2", "psb_cyc");
	assert_custom_refused("broadwell", "mtc=1", EOPNOTSUPP, "mtc=1", "caps/mtc is 0");
	assert_custom_refused("broadwell", "mtc_period=3", EOPNOTSUPP, "mtc_period=3",
			      "caps/mtc is 0");
	assert_custom_refused("skylake", "ptw=1", EOPNOTSUPP, "ptw=1", "caps/ptwrite is 0");
	assert_custom_refused("skylake", "pwr_evt", EOPNOTSUPP, "pwr_evt=1",
			      "caps/power_event_trace");
	assert_custom_refused("icelake", "fup_on_ptw=1", EINVAL, "fup_on_ptw=1", "ptw=1");
	assert_custom_refused("icelake", "notnt=1", EOPNOTSUPP, "notnt=1", "caps/tnt_disable");
	assert_custom_refused("icelake", "event=1", EOPNOTSUPP, "event=1", "caps/event_trace");
	assert_custom_refused("skylake", "event=1", EINVAL, "unknown term 'event=1'", "psb_period");
}

Test(pt_attr, custom_syntax_errors)
{
	assert_custom_refused("skylake", "bogus=1", EINVAL, "unknown term 'bogus=1'",
			      "branch, cyc, cyc_thresh");
	assert_custom_refused("skylake", "mtc_period=16", ERANGE, "mtc_period=16",
			      "4 bits (config:14-17), so 0-15");
	assert_custom_refused("skylake", "cyc=abc", EINVAL, "bad value in 'cyc=abc'", NULL);
	assert_custom_refused("skylake", "cyc=1,,mtc=1", EINVAL, "empty term", NULL);
	assert_custom_refused("skylake", "", EINVAL, "no terms", NULL);
	assert_custom_refused("skylake", "cyc=", EINVAL, "bad value", NULL);
	assert_custom_refused("skylake", "pt=0", EINVAL, "pt=0 or branch=0", NULL);
	assert_custom_refused("skylake", "branch=0", EINVAL, "pt=0 or branch=0", NULL);
}

Test(pt_attr, config_check_like_pt_event_valid)
{
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };

	sysfs_discover(&pmu, "skylake");
	cr_assert_eq(rv_pt_config_check(&pmu, SKL_NORMAL | NORETCOMP, &err), 0, "%s", err.message);
	/* bit 3 is no field (the kernel's PT_CONFIG_MASK lacks it) */
	cr_assert_eq(rv_pt_config_check(&pmu, SKL_DEFAULT | (1ULL << 3), &err), -EINVAL);
	cr_assert(strstr(err.message, "0x8"), "%s", err.message);
	/* branch without pt is the legacy encoding the kernel refuses */
	cr_assert_eq(rv_pt_config_check(&pmu, TSC | BRANCH, &err), -EINVAL);
	cr_assert(strstr(err.message, "branch=1 without pt=1"), "%s", err.message);
	/* psb_period and cyc_thresh of 0 need no bit; mtc_period 0 needs bit 0 */
	cr_assert_eq(rv_pt_config_check(&pmu, PT | BRANCH | CYC, &err), 0, "%s", err.message);
	pmu.caps[RV_PT_CAP_MTC_PERIODS] = 0x8;
	cr_assert_eq(rv_pt_config_check(&pmu, PT | BRANCH | MTC, &err), -EINVAL);
	cr_assert(strstr(err.message, "mtc_period=0"), "%s", err.message);
	pmu.caps[RV_PT_CAP_MTC_PERIODS] = 0;
	cr_assert_eq(rv_pt_config_check(&pmu, PT | BRANCH | MTC, &err), -EOPNOTSUPP);
	cr_assert(strstr(err.message, "caps/mtc_periods is 0"), "%s", err.message);
}

Test(pt_attr, attr_fields_and_scope)
{
	struct rv_pt_pmu pmu;
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	struct rv_pt_request req = { .timing = RV_PT_TIMING_LOW, .scope = RV_SCOPE_USER };

	sysfs_discover(&pmu, "skylake");
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(attr.type, 8);
	cr_assert_eq(attr.size, sizeof(attr));
	cr_assert_geq(attr.size, 120);
	cr_assert_eq(attr.sample_period, 1);
	cr_assert_eq(attr.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					       PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
	cr_assert(attr.disabled && attr.sample_id_all && attr.exclude_hv);
	cr_assert(attr.exclude_kernel && !attr.exclude_user);
	cr_assert_not(attr.enable_on_exec);
	cr_assert_eq(rv_attr_aux_action(&attr), 0);

	req.scope = RV_SCOPE_KERNEL;
	req.enable_on_exec = true;
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, NULL, &err), 0);
	cr_assert(!attr.exclude_kernel && attr.exclude_user && attr.enable_on_exec);
	req.scope = RV_SCOPE_USER_KERNEL;
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, NULL, &err), 0);
	cr_assert(!attr.exclude_kernel && !attr.exclude_user);
}

Test(pt_attr, start_paused_needs_linux_6_13)
{
	struct rv_pt_pmu pmu;
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	struct rv_pt_request req = { .timing = RV_PT_TIMING_NORMAL, .start_paused = true };

	sysfs_discover(&pmu, "icelake");
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(attr.__reserved_3, 1, "aux_start_paused is bit 0 of the u32 at 116");
	cr_assert(rv_attr_aux_start_paused(&attr));
	cr_assert_not(rv_attr_aux_pause(&attr) || rv_attr_aux_resume(&attr));
	cr_assert_eq(((const uint32_t *)&attr)[116 / 4], 1, "the raw word at offset 116");

	sysfs_discover(&pmu, "kernel-6.1");
	cr_assert_eq(rv_pt_attr_build(&attr, &pmu, &req, NULL, &err), -EOPNOTSUPP);
	cr_assert(strstr(err.message, "6.1"), "%s", err.message);
	cr_assert(strstr(err.message, "6.13"), "%s", err.message);
}

Test(pt_attr, aux_action_accessors)
{
	struct perf_event_attr attr = { .size = 112 };

	rv_attr_set_aux_action(&attr, RV_AUX_RESUME);
	cr_assert_eq(attr.__reserved_3, 4);
	cr_assert_not(rv_attr_aux_action_size_ok(&attr), "size 112 stops before offset 116");
	attr.size = 120;
	cr_assert(rv_attr_aux_action_size_ok(&attr));
	rv_attr_set_aux_action(&attr, RV_AUX_PAUSE | (1u << 7));
	cr_assert_eq(rv_attr_aux_action(&attr), RV_AUX_PAUSE | RV_AUX_RESUME,
		     "unknown bits are not set");
	attr = (struct perf_event_attr){ .size = 64 };
	cr_assert(rv_attr_aux_action_size_ok(&attr), "no action, any size");
}

static void uprobe_pmu(struct rv_uprobe_pmu *pmu, const char *cpu)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_uprobe_pmu_type(sysfs_tree(cpu), pmu, &err), 0, "%s", err.message);
}

Test(pt_attr, uprobe_pmu_from_sysfs)
{
	struct rv_uprobe_pmu pmu;
	struct rv_error err = { 0 };
	unsigned real_type = 0;
	FILE *f;

	uprobe_pmu(&pmu, "icelake");
	cr_assert_eq(pmu.type, 7);
	cr_assert(pmu.has_retprobe);
	cr_assert_eq(pmu.retprobe.word, RV_PMU_CONFIG);
	cr_assert_eq(pmu.retprobe.bits, 1);
	uprobe_pmu(&pmu, "no-pt");
	cr_assert_eq(pmu.type, 8);

	cr_assert_eq(rv_uprobe_pmu_type(sysfs_tree("does-not-exist"), &pmu, &err), -ENODEV);
	cr_assert(strstr(err.message, "no uprobe PMU"), "%s", err.message);

	/* This machine has one (kernel-interfaces §0); so must any machine the
	 * gate runs on. */
	f = fopen("/sys/bus/event_source/devices/uprobe/type", "re");
	cr_assert_not_null(f, "this machine has no uprobe PMU");
	cr_assert_eq(fscanf(f, "%u", &real_type), 1);
	fclose(f);
	cr_assert_eq(rv_uprobe_pmu_type("/", &pmu, &err), 0, "%s", err.message);
	cr_assert_eq(pmu.type, real_type);
	cr_assert(pmu.has_retprobe);
}

static struct perf_event_attr uprobe(enum rv_uprobe_role role, bool retprobe, uint64_t size,
				     uint64_t buffer, int expect_rc)
{
	static const char path[] = "/usr/bin/target";
	struct rv_uprobe_pmu pmu;
	struct rv_uprobe_request req = { .path = path,
					 .file_offset = 0x1139,
					 .retprobe = retprobe,
					 .role = role,
					 .aux_sample_size = size,
					 .aux_buffer_size = buffer };
	struct perf_event_attr attr;
	struct rv_error err = { 0 };

	uprobe_pmu(&pmu, "icelake");
	cr_assert_eq(rv_uprobe_attr(&attr, &pmu, &req, &err), expect_rc, "%s", err.message);
	if (!expect_rc) {
		cr_assert_eq(attr.config1, (uint64_t)(uintptr_t)path);
		cr_assert_eq(attr.config2, 0x1139);
	}
	return attr;
}

Test(pt_attr, uprobe_attrs_by_role)
{
	struct perf_event_attr a;

	a = uprobe(RV_UPROBE_PLAIN, false, 0, 0, 0);
	cr_assert_eq(a.type, 7);
	cr_assert_eq(a.config, 0);
	cr_assert_eq(a.sample_period, 1);
	cr_assert(a.disabled && a.sample_id_all);
	cr_assert_eq(rv_attr_aux_action(&a), 0);
	cr_assert_eq(a.sample_type & PERF_SAMPLE_AUX, 0);

	a = uprobe(RV_UPROBE_PLAIN, true, 0, 0, 0);
	cr_assert_eq(a.config, 1, "retprobe is config:0");

	a = uprobe(RV_UPROBE_AUX_RESUME, false, 0, 0, 0);
	cr_assert_eq(rv_attr_aux_action(&a), RV_AUX_RESUME);
	cr_assert_not(a.disabled, "a group member follows its leader");
	a = uprobe(RV_UPROBE_AUX_PAUSE, false, 0, 0, 0);
	cr_assert_eq(rv_attr_aux_action(&a), RV_AUX_PAUSE);

	a = uprobe(RV_UPROBE_SAMPLE_AUX, false, 4096, 4 << 20, 0);
	cr_assert(a.sample_type & PERF_SAMPLE_AUX);
	cr_assert_eq(a.aux_sample_size, 4096);
	cr_assert_eq(rv_attr_aux_action(&a), 0);
	a = uprobe(RV_UPROBE_SAMPLE_AUX, false, 100000, 4 << 20, 0);
	cr_assert_eq(a.aux_sample_size, 60 * 1024, "perf's 60 KiB limit");
	a = uprobe(RV_UPROBE_SAMPLE_AUX, false, 1001, 4 << 20, 0);
	cr_assert_eq(a.aux_sample_size, 1000, "rounded down to 8");
	a = uprobe(RV_UPROBE_SAMPLE_AUX, false, 8192, 2048, 0);
	cr_assert_eq(a.aux_sample_size, 2048, "no more than the AUX buffer");
	uprobe(RV_UPROBE_SAMPLE_AUX, false, 7, 4096, -EINVAL);
	uprobe(RV_UPROBE_SAMPLE_AUX, false, 4096, 0, -EINVAL);
}

Test(pt_attr, uprobe_refusals)
{
	struct rv_uprobe_pmu pmu;
	struct perf_event_attr attr;
	struct rv_error err = { 0 };
	struct rv_uprobe_request req = { .path = "bin/target", .file_offset = 0x10 };

	uprobe_pmu(&pmu, "icelake");
	cr_assert_eq(rv_uprobe_attr(&attr, &pmu, &req, &err), -EINVAL);
	cr_assert(strstr(err.message, "not absolute"), "%s", err.message);
	req.path = "/bin/target";
	req.retprobe = true;
	pmu.has_retprobe = false;
	cr_assert_eq(rv_uprobe_attr(&attr, &pmu, &req, &err), -EOPNOTSUPP);
	cr_assert(strstr(err.message, "format/retprobe"), "%s", err.message);
}

static void assert_aux_rule(const struct perf_event_attr *attr,
			    const struct perf_event_attr *leader, const char *cpu, int code,
			    const char *mention)
{
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };

	sysfs_discover(&pmu, cpu);
	cr_assert_eq(rv_aux_rules_check(attr, leader, &pmu, &err), -code, "%s: %s", cpu,
		     err.message);
	if (mention)
		cr_assert(strstr(err.message, mention), "'%s' lacks '%s'", err.message, mention);
}

Test(pt_attr, aux_rules)
{
	struct perf_event_attr pt = build("icelake", RV_PT_TIMING_LOW, NULL, NULL);
	struct perf_event_attr pt61 = build("kernel-6.1", RV_PT_TIMING_LOW, NULL, NULL);
	struct perf_event_attr sw = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(sw) };
	struct perf_event_attr a;

	a = uprobe(RV_UPROBE_AUX_RESUME, false, 0, 0, 0);
	assert_aux_rule(&a, &pt, "icelake", 0, NULL);
	assert_aux_rule(&a, NULL, "icelake", EINVAL, "sibling in a group led by the intel_pt");
	assert_aux_rule(&a, &sw, "icelake", EINVAL, "aux_resume must be a sibling");
	assert_aux_rule(&a, &pt61, "kernel-6.1", EOPNOTSUPP, "6.13");

	rv_attr_set_aux_action(&a, RV_AUX_PAUSE);
	assert_aux_rule(&a, &pt, "icelake", EINVAL, "both pause and resume");

	a = uprobe(RV_UPROBE_AUX_PAUSE, false, 0, 0, 0);
	a.aux_output = 1;
	assert_aux_rule(&a, &pt, "icelake", EOPNOTSUPP, "aux_output");

	a = uprobe(RV_UPROBE_AUX_PAUSE, false, 0, 0, 0);
	a.size = 112;
	assert_aux_rule(&a, &pt, "icelake", EINVAL, "at least 120");

	a = uprobe(RV_UPROBE_AUX_PAUSE, false, 0, 0, 0);
	a.sample_period = 0;
	assert_aux_rule(&a, &pt, "icelake", EINVAL, "sampling event");

	a = uprobe(RV_UPROBE_SAMPLE_AUX, false, 4096, 1 << 20, 0);
	assert_aux_rule(&a, &pt, "icelake", 0, NULL);
	assert_aux_rule(&a, &pt61, "kernel-6.1", 0, NULL); /* AUX sampling is 5.5 */
	assert_aux_rule(&a, NULL, "icelake", EINVAL, "an AUX sample must be a sibling");
	a.aux_output = 1;
	assert_aux_rule(&a, &pt, "icelake", EINVAL, "exclude each other");
	a.aux_output = 0;
	a.aux_sample_size = 0;
	assert_aux_rule(&a, &pt, "icelake", EINVAL, "PERF_SAMPLE_AUX and aux_sample_size");

	a = uprobe(RV_UPROBE_PLAIN, false, 0, 0, 0);
	rv_attr_set_aux_action(&a, RV_AUX_START_PAUSED);
	assert_aux_rule(&a, NULL, "icelake", EOPNOTSUPP, "only the intel_pt event");

	a = uprobe(RV_UPROBE_PLAIN, false, 0, 0, 0);
	assert_aux_rule(&a, NULL, "icelake", 0, NULL);
	cr_assert_eq(rv_aux_rules_check(&a, NULL, NULL, NULL), 0, "no PT, no AUX: fine");
}

Test(pt_attr, sideband)
{
	struct perf_event_attr a;
	struct rv_sideband_request req = { .scope = RV_SCOPE_USER };

	rv_sideband_attr(&a, &req);
	cr_assert_eq(a.type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(a.config, PERF_COUNT_SW_DUMMY);
	cr_assert(a.mmap && a.mmap2 && a.comm && a.comm_exec && a.task && a.sample_id_all);
	cr_assert(a.exclude_kernel && a.disabled);
	cr_assert_not(a.text_poke || a.ksymbol || a.context_switch || a.enable_on_exec);

	req = (struct rv_sideband_request){ .scope = RV_SCOPE_USER_KERNEL,
					    .context_switch = true,
					    .enable_on_exec = true };
	rv_sideband_attr(&a, &req);
	cr_assert(a.text_poke && a.ksymbol && a.context_switch && a.enable_on_exec);
	cr_assert_not(a.exclude_kernel);
}

Test(pt_attr, address_filters)
{
	char buf[128] = "";
	struct rv_error err = { 0 };
	struct rv_pt_pmu pmu;

	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "/usr/bin/x",
					  0x1139, 0x40, &err),
		     0, "%s", err.message);
	cr_assert_str_eq(buf, "filter 0x1139/0x40@/usr/bin/x");
	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_STOP, "/lib/libc.so.6",
					  0x2000, 0x10, &err),
		     0);
	cr_assert_str_eq(buf, "filter 0x1139/0x40@/usr/bin/x stop 0x2000/0x10@/lib/libc.so.6");

	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "x", 0, 1, &err),
		     -EINVAL);
	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "/a b", 0, 1, &err),
		     -EINVAL);
	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "/a,b", 0, 1, &err),
		     -EINVAL);
	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "/a", 0, 0, &err),
		     -EINVAL);
	cr_assert(strstr(err.message, "non-empty range"), "%s", err.message);
	cr_assert_eq(rv_pt_address_filter(buf, sizeof(buf), RV_PT_FILTER_TRACE, "/a",
					  UINT64_MAX - 1, 4, &err),
		     -EINVAL, "offset + size wraps");
	cr_assert_eq(rv_pt_address_filter(buf, 70, RV_PT_FILTER_TRACE, "/a/long/path", 0, 1, &err),
		     -ENOSPC);
	cr_assert_str_eq(buf, "filter 0x1139/0x40@/usr/bin/x stop 0x2000/0x10@/lib/libc.so.6",
			 "left as it was");

	sysfs_discover(&pmu, "skylake");
	cr_assert_eq(rv_pt_address_filters_fit(&pmu, 2, &err), 0);
	cr_assert_eq(rv_pt_address_filters_fit(&pmu, 3, &err), -EOPNOTSUPP);
	cr_assert(strstr(err.message, "2 address ranges"), "%s", err.message);
	sysfs_discover(&pmu, "broadwell");
	cr_assert_eq(rv_pt_address_filters_fit(&pmu, 0, &err), 0);
	cr_assert_eq(rv_pt_address_filters_fit(&pmu, 1, &err), -EOPNOTSUPP);
	cr_assert(strstr(err.message, "cannot filter"), "%s", err.message);
}
