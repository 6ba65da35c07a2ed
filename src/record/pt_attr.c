/* pt_attr.c: building and checking the attrs of a PT recording; see pt_attr.h. */
#include "record/perf_attr_ext.h"
#include "record/pt_attr.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A field of intel_pt's config word, or NULL when the PMU has no such field
 * there (a field in config1.. is not something pt_event_valid() knows). */
static const struct rv_pmu_format *pt_field(const struct rv_pt_pmu *pmu, const char *name)
{
	const struct rv_pmu_format *f = rv_pmu_format_find(&pmu->formats, name);

	return f && f->word == RV_PMU_CONFIG ? f : NULL;
}

static uint64_t pt_get(const struct rv_pt_pmu *pmu, uint64_t config, const char *name)
{
	const struct rv_pmu_format *f = pt_field(pmu, name);

	return f ? rv_pmu_format_get(f, config) : 0;
}

static bool value_allowed(uint32_t bitmap, uint64_t value)
{
	return value < 32 && (bitmap & (1u << value));
}

static int set_field(const struct rv_pt_pmu *pmu, uint64_t *config, const char *name,
		     uint64_t value, struct rv_error *err)
{
	const struct rv_pmu_format *f = rv_pmu_format_find(&pmu->formats, name);
	char where[96];

	if (!f)
		return rv_error_set(err, ENOENT,
				    "intel_pt has no format/%s, which this needs; the kernel is "
				    "older than rearview supports",
				    name);
	rv_pmu_format_describe(f, where, sizeof(where));
	if (f->word != RV_PMU_CONFIG)
		return rv_error_set(err, EINVAL,
				    "cannot set %s: it is in %s, and the PT event's fields are in "
				    "config",
				    name, where);
	if (value > rv_pmu_format_max(f))
		return rv_error_set(
			err, ERANGE,
			"cannot set %s=%" PRIu64 ": the field is %u bit%s (%s), so 0-%" PRIu64,
			name, value, rv_pmu_format_width(f), rv_pmu_format_width(f) == 1 ? "" : "s",
			where, rv_pmu_format_max(f));
	*config = rv_pmu_format_put(f, *config, value);
	return 0;
}

/* perf's intel_pt_pick_bit(): the valid value nearest target, the lower one
 * when two are as near. */
static unsigned pick_value(uint32_t bitmap, unsigned target)
{
	int pick = -1;

	for (unsigned v = 0; v < 32; v++) {
		if (!(bitmap & (1u << v)))
			continue;
		if (v <= target || pick < 0)
			pick = (int)v;
		if (v >= target)
			break;
	}
	return pick < 0 ? 0 : (unsigned)pick;
}

int rv_pt_default_config(const struct rv_pt_pmu *pmu, uint64_t *config, struct rv_error *err)
{
	uint32_t mtc_periods = pmu->caps[RV_PT_CAP_MTC] ? pmu->caps[RV_PT_CAP_MTC_PERIODS] : 0;
	uint32_t psb_periods = pmu->caps[RV_PT_CAP_PSB_PERIODS];
	uint64_t c = 0;
	int rc;

	if ((rc = set_field(pmu, &c, "tsc", 1, err)))
		return rc;
	if (mtc_periods) {
		if ((rc = set_field(pmu, &c, "mtc", 1, err)) ||
		    (rc = set_field(pmu, &c, "mtc_period", pick_value(mtc_periods, 3), err)))
			return rc;
	}
	if (pmu->caps[RV_PT_CAP_PSB_CYC] && mtc_periods && psb_periods) {
		if ((rc = set_field(pmu, &c, "psb_period", pick_value(psb_periods, 3), err)))
			return rc;
	}
	if ((rc = set_field(pmu, &c, "pt", 1, err)) || (rc = set_field(pmu, &c, "branch", 1, err)))
		return rc;
	*config = c;
	return 0;
}

static int parse_term_value(const char *text, size_t len, uint64_t *value)
{
	char buf[32], *end;

	if (!len || len >= sizeof(buf) || !isdigit((unsigned char)text[0]))
		return -EINVAL;
	memcpy(buf, text, len);
	buf[len] = '\0';
	errno = 0;
	*value = strtoull(buf, &end, 0);
	return errno || *end ? -EINVAL : 0;
}

static void format_names(const struct rv_pt_pmu *pmu, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < pmu->formats.count && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
					 pmu->formats.items[i].name);
}

int rv_pt_apply_terms(const struct rv_pt_pmu *pmu, const char *terms, uint64_t *config,
		      struct rv_error *err)
{
	const char *p = terms;
	uint64_t c = *config;

	if (!terms || !*terms)
		return rv_error_set(err, EINVAL,
				    "no terms given; write them as name=value,... such as "
				    "cyc=1,mtc_period=0");
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t name_len = eq ? (size_t)(eq - p) : len;
		char name[RV_PMU_FORMAT_NAME_MAX];
		uint64_t value = 1;
		int rc;

		if (!name_len)
			return rv_error_set(err, EINVAL,
					    "empty term in '%s'; write name=value,... such as "
					    "cyc=1,mtc_period=0",
					    terms);
		if (name_len < sizeof(name)) {
			memcpy(name, p, name_len);
			name[name_len] = '\0';
		}
		if (name_len >= sizeof(name) || !rv_pmu_format_find(&pmu->formats, name)) {
			char known[512];

			format_names(pmu, known, sizeof(known));
			return rv_error_set(err, EINVAL,
					    "unknown term '%.*s': intel_pt's fields are %s",
					    (int)(len > 64 ? 64 : len), p, known);
		}
		if (eq && parse_term_value(eq + 1, len - name_len - 1, &value))
			return rv_error_set(err, EINVAL,
					    "bad value in '%.*s': want a number, decimal or 0x-hex",
					    (int)(len > 64 ? 64 : len), p);
		rc = set_field(pmu, &c, name, value, err);
		if (rc)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	*config = c;
	return 0;
}

/* Refuses a value whose bit the cap bitmap lacks. */
static int check_value(const struct rv_pt_pmu *pmu, const char *name, uint64_t value,
		       enum rv_pt_cap cap, bool zero_always_valid, struct rv_error *err)
{
	uint32_t bitmap = pmu->caps[cap];
	char allowed[160];

	if ((zero_always_valid && !value) || value_allowed(bitmap, value))
		return 0;
	rv_pt_cap_values(bitmap | (zero_always_valid ? 1u : 0u), allowed, sizeof(allowed));
	return rv_error_set(err, EINVAL,
			    "cannot use %s=%" PRIu64 ": this CPU allows %s %s (caps/%s is %x); "
			    "pick one of those",
			    name, value, name, allowed, rv_pt_cap_name(cap), bitmap);
}

static int need_cap(const struct rv_pt_pmu *pmu, const char *term, enum rv_pt_cap cap,
		    const char *what, struct rv_error *err)
{
	if (pmu->caps[cap])
		return 0;
	return rv_error_set(err, EOPNOTSUPP, "cannot use %s: this CPU has no %s (caps/%s is 0)",
			    term, what, rv_pt_cap_name(cap));
}

int rv_pt_config_check(const struct rv_pt_pmu *pmu, uint64_t config, struct rv_error *err)
{
	static const char *const cyc_psb[] = { "cyc", "cyc_thresh", "psb_period" };
	uint64_t known = 0, mtc, mtc_period;
	int rc;

	for (size_t i = 0; i < pmu->formats.count; i++)
		if (pmu->formats.items[i].word == RV_PMU_CONFIG)
			known |= pmu->formats.items[i].bits;
	if (config & ~known)
		return rv_error_set(err, EINVAL,
				    "config bits 0x%" PRIx64 " are no intel_pt format field; the "
				    "kernel would refuse the event",
				    config & ~known);

	for (size_t i = 0; i < 3; i++) {
		uint64_t v = pt_get(pmu, config, cyc_psb[i]);
		char term[64];

		if (!v)
			continue;
		snprintf(term, sizeof(term), "%s=%" PRIu64, cyc_psb[i], v);
		rc = need_cap(pmu, term, RV_PT_CAP_PSB_CYC,
			      "cycle-accurate mode or configurable PSB period, so cyc, "
			      "cyc_thresh and psb_period are unavailable; use "
			      "--timer-resolution low",
			      err);
		if (rc)
			return rc;
	}
	rc = check_value(pmu, "psb_period", pt_get(pmu, config, "psb_period"),
			 RV_PT_CAP_PSB_PERIODS, true, err);
	if (!rc)
		rc = check_value(pmu, "cyc_thresh", pt_get(pmu, config, "cyc_thresh"),
				 RV_PT_CAP_CYCLE_THRESHOLDS, true, err);
	if (rc)
		return rc;

	mtc = pt_get(pmu, config, "mtc");
	mtc_period = pt_get(pmu, config, "mtc_period");
	if (mtc || mtc_period) {
		char term[64];

		snprintf(term, sizeof(term), mtc ? "mtc=1" : "mtc_period=%" PRIu64, mtc_period);
		if ((rc = need_cap(pmu, term, RV_PT_CAP_MTC, "MTC timing packets", err)))
			return rc;
		if (!pmu->caps[RV_PT_CAP_MTC_PERIODS])
			return rv_error_set(
				err, EOPNOTSUPP,
				"cannot use %s: caps/mtc_periods is 0, so no MTC period "
				"is valid on this CPU",
				term);
		if ((rc = check_value(pmu, "mtc_period", mtc_period, RV_PT_CAP_MTC_PERIODS, false,
				      err)))
			return rc;
	}

	if (pt_get(pmu, config, "pwr_evt") &&
	    (rc = need_cap(pmu, "pwr_evt=1", RV_PT_CAP_POWER_EVENT_TRACE, "power event trace",
			   err)))
		return rc;
	if (pt_get(pmu, config, "ptw") || pt_get(pmu, config, "fup_on_ptw")) {
		if ((rc = need_cap(pmu, pt_get(pmu, config, "ptw") ? "ptw=1" : "fup_on_ptw=1",
				   RV_PT_CAP_PTWRITE, "PTWRITE", err)))
			return rc;
		if (!pt_get(pmu, config, "ptw"))
			return rv_error_set(err, EINVAL,
					    "cannot use fup_on_ptw=1 without ptw=1; add ptw=1");
	}
	if (pt_get(pmu, config, "event") &&
	    (rc = need_cap(pmu, "event=1", RV_PT_CAP_EVENT_TRACE, "event trace", err)))
		return rc;
	if (pt_get(pmu, config, "notnt") &&
	    (rc = need_cap(pmu, "notnt=1", RV_PT_CAP_TNT_DISABLE, "TNT disable", err)))
		return rc;
	if (pt_get(pmu, config, "branch") && !pt_get(pmu, config, "pt"))
		return rv_error_set(err, EINVAL, "cannot use branch=1 without pt=1; add pt=1");
	return 0;
}

/* magic-trace's --timer-resolution normal and high, term by term, each with
 * what the user is told when this CPU cannot do it. */
static const struct timing_term {
	const char *term;
	bool high_only;
	const char *dropped;
} timing_terms[] = {
	{ "cyc=1", false,
	  "this CPU refuses cyc=1 for --timer-resolution normal/high: kept perf's default "
	  "timing (~1us instead of ~10ns)" },
	{ "cyc_thresh=1", false,
	  "caps/cycle_thresholds lacks 1: kept the default cycle threshold, so CYC packets "
	  "come less often" },
	{ "mtc_period=0", false,
	  "caps/mtc_periods lacks 0: kept perf's default MTC period, so MTC packets come "
	  "less often" },
	{ "noretcomp=1", true,
	  "this PMU has no noretcomp field: returns stay compressed with "
	  "--timer-resolution high" },
};

static void warn(struct rv_pt_warnings *warnings, const char *text)
{
	if (warnings && warnings->count < RV_PT_MAX_WARNINGS)
		warnings->text[warnings->count++] = text;
}

static int timing_config(const struct rv_pt_pmu *pmu, const struct rv_pt_request *req,
			 uint64_t *config, struct rv_pt_warnings *warnings, struct rv_error *err)
{
	int rc;

	switch (req->timing) {
	case RV_PT_TIMING_LOW:
		return 0;
	case RV_PT_TIMING_NORMAL:
	case RV_PT_TIMING_HIGH:
		if (!pmu->caps[RV_PT_CAP_PSB_CYC]) {
			warn(warnings, "this CPU has no cycle-accurate mode (caps/psb_cyc is 0): "
				       "--timer-resolution normal and high fall back to low, "
				       "timestamps ~1us apart instead of ~10ns");
			return 0;
		}
		for (size_t i = 0; i < sizeof(timing_terms) / sizeof(timing_terms[0]); i++) {
			const struct timing_term *t = &timing_terms[i];
			uint64_t trial = *config;

			if (t->high_only && req->timing != RV_PT_TIMING_HIGH)
				continue;
			if (!rv_pt_apply_terms(pmu, t->term, &trial, NULL) &&
			    !rv_pt_config_check(pmu, trial, NULL))
				*config = trial;
			else
				warn(warnings, t->dropped);
		}
		return 0;
	case RV_PT_TIMING_CUSTOM:
		rc = rv_pt_apply_terms(pmu, req->custom_terms, config, err);
		if (!rc && (!pt_get(pmu, *config, "pt") || !pt_get(pmu, *config, "branch")))
			rc = rv_error_set(err, EINVAL,
					  "pt=0 or branch=0 would record no branches, which "
					  "rearview needs to rebuild calls; drop it");
		if (!rc)
			rc = rv_pt_config_check(pmu, *config, err);
		if (rc)
			rv_error_prefix(err, "--timer-resolution custom:%s",
					req->custom_terms ? req->custom_terms : "");
		return rc;
	}
	return rv_error_set(err, EINVAL, "unknown PT timer resolution %d", (int)req->timing);
}

/* What every event of a PT recording has: a sample on each hit, of the one
 * sample type, with sample_id_all, so that the records of all of them parse
 * alike (RV_PT_SAMPLE_TYPE). */
static void recording_event(struct perf_event_attr *attr, uint32_t type, uint64_t config)
{
	attr->type = type;
	attr->size = sizeof(*attr);
	attr->config = config;
	attr->sample_period = 1;
	attr->sample_type = RV_PT_SAMPLE_TYPE;
	attr->sample_id_all = 1;
}

int rv_pt_attr_build(struct perf_event_attr *attr, const struct rv_pt_pmu *pmu,
		     const struct rv_pt_request *req, struct rv_pt_warnings *warnings,
		     struct rv_error *err)
{
	uint64_t config;
	int rc;

	memset(attr, 0, sizeof(*attr));
	if (warnings)
		warnings->count = 0;
	rc = rv_pt_default_config(pmu, &config, err);
	if (!rc)
		rc = rv_pt_config_check(pmu, config, err);
	if (rc)
		return rv_error_prefix(err, "perf's default intel_pt config");
	rc = timing_config(pmu, req, &config, warnings, err);
	if (rc)
		return rc;

	recording_event(attr, pmu->type, config);
	attr->disabled = 1;
	attr->exclude_hv = 1;
	attr->exclude_kernel = req->scope == RV_SCOPE_USER;
	attr->exclude_user = req->scope == RV_SCOPE_KERNEL;
	attr->enable_on_exec = req->enable_on_exec;
	if (req->start_paused) {
		if (!rv_pt_pmu_has_aux_pause(pmu))
			return rv_error_set(
				err, EOPNOTSUPP,
				"cannot start Intel PT paused: Linux %u.%u has no aux "
				"pause/resume (it came in 6.13); record without the gate "
				"and cut the windows while decoding",
				pmu->kernel_major, pmu->kernel_minor);
		rv_attr_set_aux_action(attr, RV_AUX_START_PAUSED);
	}
	return rv_aux_rules_check(attr, NULL, pmu, err);
}

int rv_uprobe_pmu_type(const char *root, struct rv_uprobe_pmu *pmu, struct rv_error *err)
{
	const char *base = strcmp(root, "/") ? root : "";
	char path[PATH_MAX], text[64], *end;
	struct rv_pmu_formats formats;
	const struct rv_pmu_format *retprobe;
	unsigned long long type;
	struct stat st;
	FILE *f;
	int n, rc;

	memset(pmu, 0, sizeof(*pmu));
	n = snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/uprobe", base);
	if (n < 0 || (size_t)n >= sizeof(path) - 16)
		return rv_error_set(err, ENAMETOOLONG, "path too long under %s", root);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return rv_error_set(err, ENODEV,
				    "this kernel has no uprobe PMU (%s does not exist; it needs "
				    "CONFIG_UPROBE_EVENTS), so --filter and --trigger cannot "
				    "place probes",
				    path);
	strcat(path, "/type");
	f = fopen(path, "re");
	if (!f)
		return rv_error_set(err, errno, "cannot read %s: %s", path, strerror(errno));
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	errno = 0;
	type = strtoull(text, &end, 10);
	if (!isdigit((unsigned char)text[0]) || errno || *end || type > UINT32_MAX)
		return rv_error_set(err, EINVAL, "malformed %s: '%.32s' is not a PMU type number",
				    path, text);
	pmu->type = (uint32_t)type;

	snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/uprobe/format", base);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return 0; /* no format/: return probes are unavailable, said when asked */
	rc = rv_pmu_formats_read(&formats, path, err);
	if (rc)
		return rc;
	retprobe = rv_pmu_format_find(&formats, "retprobe");
	if (retprobe) {
		pmu->retprobe = *retprobe;
		pmu->has_retprobe = true;
	}
	return 0;
}

int rv_uprobe_attr(struct perf_event_attr *attr, const struct rv_uprobe_pmu *pmu,
		   const struct rv_uprobe_request *req, struct rv_error *err)
{
	memset(attr, 0, sizeof(*attr));
	if (!req->path || req->path[0] != '/')
		return rv_error_set(err, EINVAL,
				    "uprobe path '%s' is not absolute; the kernel resolves it "
				    "when the event opens, so give the full path",
				    req->path ? req->path : "(none)");
	if (strnlen(req->path, PATH_MAX) >= PATH_MAX)
		return rv_error_set(err, ENAMETOOLONG, "uprobe path longer than %d bytes",
				    PATH_MAX - 1);
	if (req->retprobe && (!pmu->has_retprobe || pmu->retprobe.word != RV_PMU_CONFIG))
		return rv_error_set(err, EOPNOTSUPP,
				    "cannot place a return probe on %s: the uprobe PMU has no "
				    "format/retprobe in config",
				    req->path);

	recording_event(attr, pmu->type,
			req->retprobe ? rv_pmu_format_put(&pmu->retprobe, 0, 1) : 0);
	attr->config1 = (uint64_t)(uintptr_t)req->path;
	attr->config2 = req->file_offset;
	attr->disabled = req->role == RV_UPROBE_PLAIN;

	switch (req->role) {
	case RV_UPROBE_PLAIN:
		break;
	case RV_UPROBE_AUX_RESUME:
		rv_attr_set_aux_action(attr, RV_AUX_RESUME);
		break;
	case RV_UPROBE_AUX_PAUSE:
		rv_attr_set_aux_action(attr, RV_AUX_PAUSE);
		break;
	case RV_UPROBE_SAMPLE_AUX: {
		uint64_t size = req->aux_sample_size;

		if (!req->aux_buffer_size)
			return rv_error_set(err, EINVAL,
					    "an AUX-sampling uprobe needs the AUX buffer's size, "
					    "which caps the sample");
		if (size > RV_AUX_SAMPLE_MAX)
			size = RV_AUX_SAMPLE_MAX;
		if (size > req->aux_buffer_size)
			size = req->aux_buffer_size;
		size &= ~(uint64_t)7;
		if (!size)
			return rv_error_set(err, EINVAL,
					    "AUX sample size %" PRIu64 " rounds down to 0 bytes; "
					    "ask for at least 8",
					    req->aux_sample_size);
		attr->sample_type |= PERF_SAMPLE_AUX;
		attr->aux_sample_size = (uint32_t)size;
		break;
	}
	default:
		return rv_error_set(err, EINVAL, "unknown uprobe role %d", (int)req->role);
	}
	return 0;
}

int rv_aux_rules_check(const struct perf_event_attr *attr, const struct perf_event_attr *leader,
		       const struct rv_pt_pmu *pmu, struct rv_error *err)
{
	bool pause = rv_attr_aux_pause(attr), resume = rv_attr_aux_resume(attr);
	bool start_paused = rv_attr_aux_start_paused(attr);
	bool aux_sample = attr->aux_sample_size || (attr->sample_type & PERF_SAMPLE_AUX);
	bool pt_leader = pmu && leader && leader->type == pmu->type;

	if (pause && resume)
		return rv_error_set(err, EINVAL,
				    "an event cannot both pause and resume the AUX area "
				    "(aux_pause and aux_resume); use two events");
	if (attr->aux_output && (pause || resume))
		return rv_error_set(err, EOPNOTSUPP,
				    "aux_output cannot be combined with aux_pause or aux_resume");
	if (attr->aux_output && attr->aux_sample_size)
		return rv_error_set(err, EINVAL,
				    "aux_output and aux_sample_size exclude each other");
	if (!rv_attr_aux_action_size_ok(attr))
		return rv_error_set(err, EINVAL,
				    "attr.size %u stops before aux_action; it must be at least %d "
				    "for aux_start_paused, aux_pause or aux_resume",
				    attr->size, RV_ATTR_SIZE_AUX_ACTION);
	if (!attr->aux_sample_size != !(attr->sample_type & PERF_SAMPLE_AUX))
		return rv_error_set(err, EINVAL,
				    "PERF_SAMPLE_AUX and aux_sample_size go together: set both "
				    "or neither");
	if ((pause || resume || attr->aux_output || aux_sample) && !pt_leader)
		return rv_error_set(err, EINVAL,
				    "an event with %s must be a sibling in a group led by the "
				    "intel_pt event",
				    pause	       ? "aux_pause"
				    : resume	       ? "aux_resume"
				    : attr->aux_output ? "aux_output"
						       : "an AUX sample");
	if (start_paused && (!pmu || attr->type != pmu->type))
		return rv_error_set(err, EOPNOTSUPP,
				    "only the intel_pt event can start paused "
				    "(aux_start_paused)");
	if ((pause || resume || start_paused) && pmu && !rv_pt_pmu_has_aux_pause(pmu))
		return rv_error_set(err, EOPNOTSUPP,
				    "Linux %u.%u has no aux pause/resume (it came in 6.13)",
				    pmu->kernel_major, pmu->kernel_minor);
	if ((pause || resume) && (attr->freq || !attr->sample_period))
		return rv_error_set(err, EINVAL,
				    "aux_pause/aux_resume act only on a sampling event's "
				    "overflow; set sample_period (1: every hit)");
	return 0;
}

void rv_sideband_attr(struct perf_event_attr *attr, const struct rv_sideband_request *req)
{
	memset(attr, 0, sizeof(*attr));
	recording_event(attr, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
	rv_attr_follow_tasks(attr);
	attr->exclude_hv = 1;
	attr->context_switch = req->context_switch;
	attr->enable_on_exec = req->enable_on_exec;
	if (req->scope == RV_SCOPE_USER) {
		attr->exclude_kernel = 1;
	} else {
		/* Kernel code changes under the trace; the decoder needs to know. */
		attr->text_poke = 1;
		attr->ksymbol = 1;
	}
}

int rv_pt_address_filter(char *buf, size_t size, enum rv_pt_filter_action action, const char *path,
			 uint64_t file_offset, uint64_t range_size, struct rv_error *err)
{
	const char *verb = action == RV_PT_FILTER_STOP ? "stop" : "filter";
	size_t used = strnlen(buf, size);
	int n;

	if (action != RV_PT_FILTER_TRACE && action != RV_PT_FILTER_STOP)
		return rv_error_set(err, EINVAL, "unknown address filter action %d", (int)action);
	if (!path || path[0] != '/' || strpbrk(path, " ,\n\t"))
		return rv_error_set(err, EINVAL,
				    "cannot filter on '%s': the path must be absolute and "
				    "contain no spaces, commas or newlines, which separate "
				    "kernel filters",
				    path ? path : "(none)");
	if (!range_size || file_offset + range_size < file_offset)
		return rv_error_set(err, EINVAL,
				    "address filter on %s at 0x%" PRIx64 " has size 0x%" PRIx64
				    "; Intel PT needs a non-empty range",
				    path, file_offset, range_size);
	if (used == size)
		return rv_error_set(err, EINVAL, "address filter buffer holds no string");
	n = snprintf(buf + used, size - used, "%s%s 0x%" PRIx64 "/0x%" PRIx64 "@%s",
		     used ? " " : "", verb, file_offset, range_size, path);
	if (n < 0 || (size_t)n >= size - used) {
		buf[used] = '\0';
		return rv_error_set(err, ENOSPC, "address filters do not fit in %zu bytes", size);
	}
	return 0;
}

int rv_pt_address_filters_fit(const struct rv_pt_pmu *pmu, size_t count, struct rv_error *err)
{
	uint32_t ranges = rv_pt_pmu_address_ranges(pmu);

	if (count <= ranges)
		return 0;
	if (!ranges)
		return rv_error_set(err, EOPNOTSUPP,
				    "this CPU cannot filter Intel PT by address "
				    "(caps/num_address_ranges is 0); trace without address "
				    "filters");
	return rv_error_set(err, EOPNOTSUPP,
			    "%zu address filters asked, but this CPU has %u address range%s "
			    "(caps/num_address_ranges); use fewer",
			    count, ranges, ranges == 1 ? "" : "s");
}

void rv_pt_resume_attr(struct perf_event_attr *attr, enum rv_trace_scope scope, bool inherit)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->size = sizeof(*attr);
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = RV_PT_RESUME_PERIOD_NS;
	attr->sample_type = RV_PT_SAMPLE_TYPE;
	attr->sample_id_all = 1;
	attr->disabled = 1;
	attr->exclude_hv = 1;
	attr->exclude_kernel = scope == RV_SCOPE_USER;
	attr->inherit = inherit;
	rv_attr_set_aux_action(attr, RV_AUX_RESUME);
}
