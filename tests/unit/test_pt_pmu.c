/* test_pt_pmu.c: intel_pt discovery from the fake sysfs trees in
 * tests/data/sysfs (see the README there), perf's format syntax, and the
 * kernel version that gates aux pause/resume. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/pt_pmu.h"
#include "sysfs_root.h"

/* The driver's format list, the same on every CPU (arch/x86/events/intel/pt.c);
 * the trees hold these exact strings. */
static void assert_classic_formats(const struct rv_pt_pmu *pmu)
{
	static const struct {
		const char *name;
		uint64_t bits;
	} expected[] = {
		{ "pt", 1ULL << 0 },
		{ "cyc", 1ULL << 1 },
		{ "pwr_evt", 1ULL << 4 },
		{ "fup_on_ptw", 1ULL << 5 },
		{ "mtc", 1ULL << 9 },
		{ "tsc", 1ULL << 10 },
		{ "noretcomp", 1ULL << 11 },
		{ "ptw", 1ULL << 12 },
		{ "branch", 1ULL << 13 },
		{ "mtc_period", 0xfULL << 14 },
		{ "cyc_thresh", 0xfULL << 19 },
		{ "psb_period", 0xfULL << 24 },
	};

	for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
		const struct rv_pmu_format *f = rv_pmu_format_find(&pmu->formats, expected[i].name);

		cr_assert_not_null(f, "format/%s", expected[i].name);
		cr_assert_eq(f->word, RV_PMU_CONFIG, "format/%s", expected[i].name);
		cr_assert_eq(f->bits, expected[i].bits, "format/%s: 0x%llx", expected[i].name,
			     (unsigned long long)f->bits);
	}
}

Test(pt_pmu, broadwell_has_no_cyc_mtc_or_ranges)
{
	struct rv_pt_pmu pmu;

	sysfs_discover(&pmu, "broadwell");
	cr_assert_eq(pmu.type, 7);
	assert_classic_formats(&pmu);
	cr_assert_eq(pmu.formats.count, 12, "Linux 5.10 has no event or notnt format");
	cr_assert_null(rv_pmu_format_find(&pmu.formats, "event"));
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PSB_CYC), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MTC), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_IP_FILTERING), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_CR3_FILTERING), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_TOPA_OUTPUT), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MTC_PERIODS), 0);
	cr_assert_eq(rv_pt_pmu_address_ranges(&pmu), 0);
	cr_assert_eq(pmu.caps_missing,
		     (1u << RV_PT_CAP_EVENT_TRACE) | (1u << RV_PT_CAP_TNT_DISABLE),
		     "5.10 lacks exactly the two caps of 5.18: 0x%x", pmu.caps_missing);
	cr_assert(pmu.has_max_nonturbo_ratio && pmu.has_tsc_art_ratio && pmu.has_nr_addr_filters);
	cr_assert_eq(pmu.max_nonturbo_ratio, 26);
	cr_assert_eq(pmu.tsc_art_num, 0);
	cr_assert_eq(pmu.tsc_art_den, 0);
	cr_assert_eq(pmu.kernel_major, 5);
	cr_assert_eq(pmu.kernel_minor, 10);
	cr_assert_not(rv_pt_pmu_has_aux_pause(&pmu));
}

Test(pt_pmu, skylake_values)
{
	struct rv_pt_pmu pmu;

	sysfs_discover(&pmu, "skylake");
	cr_assert_eq(pmu.type, 8);
	assert_classic_formats(&pmu);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MAX_SUBLEAF), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PSB_CYC), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MTC), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PTWRITE), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MTC_PERIODS), 0x249, "read as hex");
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_CYCLE_THRESHOLDS), 0x3fff);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PSB_PERIODS), 0x3f);
	cr_assert_eq(rv_pt_pmu_address_ranges(&pmu), 2);
	cr_assert_eq(pmu.nr_addr_filters, 2);
	cr_assert_eq(pmu.max_nonturbo_ratio, 40);
	cr_assert_eq(pmu.tsc_art_num, 334);
	cr_assert_eq(pmu.tsc_art_den, 2);
	cr_assert_eq(pmu.kernel_major, 5);
	cr_assert_eq(pmu.kernel_minor, 15);
	cr_assert_not(rv_pt_pmu_has_aux_pause(&pmu));
}

Test(pt_pmu, icelake_has_ptwrite_power_events_and_aux_pause)
{
	struct rv_pt_pmu pmu;
	const struct rv_pmu_format *f;
	char notes[256];

	sysfs_discover(&pmu, "icelake");
	cr_assert_eq(pmu.type, 9);
	assert_classic_formats(&pmu);
	cr_assert_eq(pmu.formats.count, 14);
	f = rv_pmu_format_find(&pmu.formats, "event");
	cr_assert(f && f->bits == 1ULL << 31);
	f = rv_pmu_format_find(&pmu.formats, "notnt");
	cr_assert(f && f->bits == 1ULL << 55);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PTWRITE), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_POWER_EVENT_TRACE), 1);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_EVENT_TRACE), 0);
	cr_assert_eq(pmu.caps_missing, 0);
	cr_assert_eq(rv_pt_pmu_address_ranges(&pmu), 2);
	cr_assert_eq(pmu.tsc_art_num, 78);
	cr_assert_eq(pmu.tsc_art_den, 2);
	cr_assert_eq(pmu.max_nonturbo_ratio, 15);
	cr_assert_eq(pmu.kernel_major, 6);
	cr_assert_eq(pmu.kernel_minor, 13);
	cr_assert(rv_pt_pmu_has_aux_pause(&pmu));
	cr_assert_eq(rv_pt_pmu_notes(&pmu, notes, sizeof(notes)), 0);
	cr_assert_str_eq(notes, "");
}

Test(pt_pmu, no_cyc_no_mtc_and_kernel_6_1)
{
	struct rv_pt_pmu pmu;

	sysfs_discover(&pmu, "no-cyc-no-mtc");
	cr_assert_eq(pmu.type, 10);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PSB_CYC), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_MTC), 0);
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_IP_FILTERING), 1);
	cr_assert_eq(rv_pt_pmu_address_ranges(&pmu), 1);
	cr_assert_eq(pmu.kernel_major, 6);
	cr_assert_eq(pmu.kernel_minor, 8);
	cr_assert_not(rv_pt_pmu_has_aux_pause(&pmu));

	sysfs_discover(&pmu, "kernel-6.1");
	cr_assert_eq(pmu.kernel_major, 6);
	cr_assert_eq(pmu.kernel_minor, 1);
	cr_assert_not(rv_pt_pmu_has_aux_pause(&pmu));
	cr_assert_eq(rv_pt_pmu_cap(&pmu, RV_PT_CAP_PSB_CYC), 1);
}

Test(pt_pmu, missing_caps_are_noted)
{
	struct rv_pt_pmu pmu;
	char notes[256];
	size_t len;

	sysfs_discover(&pmu, "broadwell");
	len = rv_pt_pmu_notes(&pmu, notes, sizeof(notes));
	cr_assert_eq(len, strlen(notes));
	cr_assert(strstr(notes, "caps/event_trace"), "%s", notes);
	cr_assert(strstr(notes, "caps/tnt_disable"), "%s", notes);
	cr_assert(strstr(notes, "treated as 0"), "%s", notes);
	cr_assert_null(strstr(notes, "psb_cyc"), "present caps are not noted: %s", notes);

	/* Truncation still reports the whole length. */
	cr_assert_eq(rv_pt_pmu_notes(&pmu, notes, 8), len);
	cr_assert_eq(strlen(notes), 7);
}

Test(pt_pmu, no_intel_pt_is_enodev_with_advice)
{
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_pt_pmu_discover(&pmu, sysfs_tree("no-pt"), &err), -ENODEV);
	cr_assert_eq(err.code, ENODEV);
	cr_assert(strstr(err.message, "no Intel PT"), "%s", err.message);
	cr_assert(strstr(err.message, "--backend sample"), "%s", err.message);
	cr_assert(strstr(err.message, "--backend uprobe"), "%s", err.message);
}

/* The real machine: discovery agrees with whether the directory exists (this
 * development machine has none, a PT machine has one). */
Test(pt_pmu, real_root_agrees_with_sysfs)
{
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };
	struct stat st;
	bool has_pt = stat("/sys/bus/event_source/devices/intel_pt", &st) == 0;
	int rc = rv_pt_pmu_discover(&pmu, "/", &err);

	if (has_pt)
		cr_assert_eq(rc, 0, "%s", err.message);
	else
		cr_assert_eq(rc, -ENODEV, "%s", err.message);
}

static void assert_broken(const char *name, int code, const char *file_mention)
{
	struct rv_pt_pmu pmu;
	struct rv_error err = { 0 };
	int rc = rv_pt_pmu_discover(&pmu, sysfs_tree(name), &err);

	cr_assert_eq(rc, -code, "%s: rc %d (%s)", name, rc, err.message);
	cr_assert(strstr(err.message, file_mention), "%s: '%s' does not name %s", name, err.message,
		  file_mention);
}

Test(pt_pmu, broken_trees_name_the_file)
{
	assert_broken("broken-no-type", ENOENT, "intel_pt/type");
	assert_broken("broken-garbage-type", EINVAL, "intel_pt/type");
	assert_broken("broken-bad-format", EINVAL, "format/cyc_thresh");
	assert_broken("broken-bad-cap", EINVAL, "caps/psb_periods");
	assert_broken("broken-bad-art", EINVAL, "intel_pt/tsc_art_ratio");
	assert_broken("broken-no-tsc-format", ENOENT, "format/tsc");
}

Test(pt_pmu, format_syntax)
{
	struct rv_pmu_format f;
	struct rv_error err = { 0 };
	char text[64];

	cr_assert_eq(rv_pmu_format_parse("config:0\n", &f, &err), 0, "%s", err.message);
	cr_assert_eq(f.word, RV_PMU_CONFIG);
	cr_assert_eq(f.bits, 1);
	cr_assert_eq(rv_pmu_format_parse("config:14-17", &f, &err), 0);
	cr_assert_eq(f.bits, 0x3c000);
	cr_assert_eq(rv_pmu_format_width(&f), 4);
	cr_assert_eq(rv_pmu_format_max(&f), 15);
	cr_assert_eq(rv_pmu_format_parse("config1:0,2-5", &f, &err), 0);
	cr_assert_eq(f.word, RV_PMU_CONFIG1);
	cr_assert_eq(f.bits, 0x3d);
	rv_pmu_format_describe(&f, text, sizeof(text));
	cr_assert_str_eq(text, "config1:0,2-5");
	cr_assert_eq(rv_pmu_format_parse("config2:63", &f, &err), 0);
	cr_assert_eq(f.word, RV_PMU_CONFIG2);
	cr_assert_eq(f.bits, 1ULL << 63);
	cr_assert_eq(rv_pmu_format_parse("config3:0-63", &f, &err), 0);
	cr_assert_eq(f.word, RV_PMU_CONFIG3);
	cr_assert_eq(f.bits, UINT64_MAX);
	cr_assert_eq(rv_pmu_format_max(&f), UINT64_MAX);
	cr_assert_eq(rv_pmu_format_parse("config:32-63", &f, &err), 0);
	cr_assert_eq(f.bits, 0xffffffff00000000ULL);

	static const char *const bad[] = { "conf:1",	 "config:",	"config:5-3", "config:64",
					   "config:1 x", "config:1-",	"config1 0",  "",
					   "config:-1",	 "config:1,,2", "config4:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rv_error_clear(&err);
		cr_assert_eq(rv_pmu_format_parse(bad[i], &f, &err), -EINVAL, "'%s' accepted",
			     bad[i]);
		cr_assert_neq(err.message[0], '\0');
	}
}

/* A value spreads over a split field lowest bit first, as perf packs it. */
Test(pt_pmu, split_field_values)
{
	struct rv_pmu_format f;

	cr_assert_eq(rv_pmu_format_parse("config:0,4-6", &f, NULL), 0);
	/* 11 = 0b1011: value bit 0 -> bit 0, bit 1 -> bit 4, bit 2 -> bit 5, bit 3 -> bit 6 */
	cr_assert_eq(rv_pmu_format_put(&f, 0, 11), 0x51);
	cr_assert_eq(rv_pmu_format_get(&f, 0x51), 11);
	/* Other bits of the word stay, the field's own bits are replaced. */
	cr_assert_eq(rv_pmu_format_put(&f, 0xff00 | 0x71, 0), 0xff00);
	cr_assert_eq(rv_pmu_format_get(&f, 0xff00), 0);
}

Test(pt_pmu, kernel_version)
{
	unsigned major = 0, minor = 0;

	cr_assert_eq(rv_kernel_version(sysfs_tree("no-pt"), &major, &minor), 0);
	cr_assert_eq(major, 6);
	cr_assert_eq(minor, 18);
	cr_assert_eq(rv_kernel_version(sysfs_tree("icelake"), &major, &minor), 0);
	cr_assert_eq(major, 6);
	cr_assert_eq(minor, 13);
	cr_assert_eq(rv_kernel_version(sysfs_tree("does-not-exist"), &major, &minor), -ENOENT);
	cr_assert_eq(rv_kernel_version("/", &major, &minor), 0, "this machine has procfs");
	cr_assert_geq(major, 3);
}

Test(pt_pmu, aux_pause_needs_6_13)
{
	struct rv_pt_pmu pmu = { 0 };
	static const struct {
		unsigned major, minor;
		bool has;
	} cases[] = { { 0, 0, false }, { 5, 99, false }, { 6, 12, false },
		      { 6, 13, true }, { 6, 18, true },	 { 7, 0, true } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pmu.kernel_major = cases[i].major;
		pmu.kernel_minor = cases[i].minor;
		cr_assert_eq(rv_pt_pmu_has_aux_pause(&pmu), cases[i].has, "%u.%u", cases[i].major,
			     cases[i].minor);
	}
}

Test(pt_pmu, cap_values_text)
{
	char buf[64];

	rv_pt_cap_values(0x249, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0,3,6,9");
	rv_pt_cap_values(0x3fff, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0-13");
	rv_pt_cap_values(0x4f, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0-3,6");
	rv_pt_cap_values(0x80000001u, buf, sizeof(buf));
	cr_assert_str_eq(buf, "0,31");
	rv_pt_cap_values(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "none");
	rv_pt_cap_values(0x5555, buf, 6);
	cr_assert_str_eq(buf, "0,2,4", "truncated, still a string");
}

Test(pt_pmu, cap_names_match_the_files)
{
	cr_assert_str_eq(rv_pt_cap_name(RV_PT_CAP_PSB_CYC), "psb_cyc");
	cr_assert_str_eq(rv_pt_cap_name(RV_PT_CAP_NUM_ADDRESS_RANGES), "num_address_ranges");
	for (int cap = 0; cap < RV_PT_CAP_COUNT; cap++) {
		char rel[PATH_MAX];
		struct stat st;

		snprintf(rel, sizeof(rel), "%s/sys/bus/event_source/devices/intel_pt/caps/%s",
			 sysfs_tree("icelake"), rv_pt_cap_name(cap));
		cr_assert_eq(stat(rel, &st), 0, "the icelake tree has every cap: %s", rel);
	}
}
