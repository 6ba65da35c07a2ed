/* pt_pmu.c: intel_pt discovery from sysfs, and perf's PMU format syntax; see
 * pt_pmu.h. */
#include "record/pt_pmu.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PT_DIR "/sys/bus/event_source/devices/intel_pt"

static const char *const cap_names[RV_PT_CAP_COUNT] = {
	[RV_PT_CAP_MAX_SUBLEAF] = "max_subleaf",
	[RV_PT_CAP_CR3_FILTERING] = "cr3_filtering",
	[RV_PT_CAP_PSB_CYC] = "psb_cyc",
	[RV_PT_CAP_IP_FILTERING] = "ip_filtering",
	[RV_PT_CAP_MTC] = "mtc",
	[RV_PT_CAP_PTWRITE] = "ptwrite",
	[RV_PT_CAP_POWER_EVENT_TRACE] = "power_event_trace",
	[RV_PT_CAP_EVENT_TRACE] = "event_trace",
	[RV_PT_CAP_TNT_DISABLE] = "tnt_disable",
	[RV_PT_CAP_TOPA_OUTPUT] = "topa_output",
	[RV_PT_CAP_TOPA_MULTIPLE_ENTRIES] = "topa_multiple_entries",
	[RV_PT_CAP_SINGLE_RANGE_OUTPUT] = "single_range_output",
	[RV_PT_CAP_OUTPUT_SUBSYS] = "output_subsys",
	[RV_PT_CAP_PAYLOADS_LIP] = "payloads_lip",
	[RV_PT_CAP_NUM_ADDRESS_RANGES] = "num_address_ranges",
	[RV_PT_CAP_MTC_PERIODS] = "mtc_periods",
	[RV_PT_CAP_CYCLE_THRESHOLDS] = "cycle_thresholds",
	[RV_PT_CAP_PSB_PERIODS] = "psb_periods",
};

/* The fields rv_pt_attr_build always sets (perf's defaults). */
static const char *const required_formats[] = { "pt", "tsc", "branch" };

const char *rv_pt_cap_name(enum rv_pt_cap cap)
{
	return (unsigned)cap < RV_PT_CAP_COUNT ? cap_names[cap] : "?";
}

/* ROOT + PATH; "/" as root means the real one. */
static int join(char *out, size_t size, const char *root, const char *path)
{
	int n = snprintf(out, size, "%s%s", strcmp(root, "/") ? root : "", path);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Reads a small text file whole. -errno when it cannot be opened, -EFBIG when
 * it does not fit (sysfs attributes here are a few bytes). */
static int read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;
	int rc = 0;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	if (ferror(f))
		rc = -EIO;
	else if (n == size - 1 && fgetc(f) != EOF)
		rc = -EFBIG;
	fclose(f);
	buf[n] = '\0';
	return rc;
}

/* Drops the trailing newline (and spaces) sysfs prints. */
static void chomp(char *text)
{
	size_t n = strlen(text);

	while (n && isspace((unsigned char)text[n - 1]))
		text[--n] = '\0';
}

static int parse_u32(const char *text, int base, uint32_t *value)
{
	unsigned long long v;
	char *end;

	if (!isxdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, base);
	if (errno || end == text || *end || v > UINT32_MAX)
		return -EINVAL;
	*value = (uint32_t)v;
	return 0;
}

static const char *word_name(enum rv_pmu_config_word word)
{
	static const char *const names[] = { "config", "config1", "config2", "config3" };

	return (unsigned)word < 4 ? names[word] : "config?";
}

static int parse_bit(const char **p, unsigned *bit)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v > 63)
		return -ERANGE;
	*bit = (unsigned)v;
	*p = end;
	return 0;
}

int rv_pmu_format_parse(const char *text, struct rv_pmu_format *format, struct rv_error *err)
{
	static const struct {
		const char *name;
		enum rv_pmu_config_word word;
	} words[] = {
		/* longest first: "config" is a prefix of the others */
		{ "config1", RV_PMU_CONFIG1 },
		{ "config2", RV_PMU_CONFIG2 },
		{ "config3", RV_PMU_CONFIG3 },
		{ "config", RV_PMU_CONFIG },
	};
	enum rv_pmu_config_word word = RV_PMU_CONFIG;
	const char *p = text;
	uint64_t bits = 0;
	size_t i, shown = strlen(text);

	/* Messages quote the text without sysfs's newline, and not too much of it. */
	while (shown && isspace((unsigned char)text[shown - 1]))
		shown--;
	if (shown > 40)
		shown = 40;

	while (isspace((unsigned char)*p))
		p++;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t len = strlen(words[i].name);

		if (!strncmp(p, words[i].name, len) && p[len] == ':') {
			word = words[i].word;
			p += len + 1;
			break;
		}
	}
	if (i == sizeof(words) / sizeof(words[0]))
		return rv_error_set(err, EINVAL,
				    "'%.*s' does not start with config:, config1:, config2: or "
				    "config3:",
				    (int)shown, text);
	for (;;) {
		unsigned lo, hi;
		int rc = parse_bit(&p, &lo);

		if (rc)
			return rv_error_set(err, EINVAL,
					    "'%.*s' has a bad bit number (want 0-63, as in "
					    "config:14-17)",
					    (int)shown, text);
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_bit(&p, &hi) || hi < lo)
				return rv_error_set(err, EINVAL,
						    "'%.*s' has a bad bit range (want LO-HI with "
						    "LO <= HI <= 63)",
						    (int)shown, text);
		}
		for (unsigned b = lo; b <= hi; b++)
			bits |= 1ULL << b;
		if (*p != ',')
			break;
		p++;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p)
		return rv_error_set(err, EINVAL,
				    "'%.*s' has unexpected text '%.20s' after the bits (fields "
				    "spanning two config words are not supported)",
				    (int)shown, text, p);
	format->word = word;
	format->bits = bits;
	return 0;
}

static int compare_formats(const void *a, const void *b)
{
	return strcmp(((const struct rv_pmu_format *)a)->name,
		      ((const struct rv_pmu_format *)b)->name);
}

int rv_pmu_formats_read(struct rv_pmu_formats *formats, const char *dir, struct rv_error *err)
{
	char path[PATH_MAX], text[256];
	struct dirent *entry;
	DIR *d;
	int rc = 0;

	formats->count = 0;
	d = opendir(dir);
	if (!d)
		return rv_error_set(err, errno, "cannot list %s: %s", dir, strerror(errno));
	while ((entry = readdir(d))) {
		struct rv_pmu_format *format;
		size_t name_len = strlen(entry->d_name);

		if (entry->d_name[0] == '.')
			continue;
		if (name_len >= RV_PMU_FORMAT_NAME_MAX) {
			rc = rv_error_set(err, ENAMETOOLONG,
					  "%s/%s: format name longer than %d characters", dir,
					  entry->d_name, RV_PMU_FORMAT_NAME_MAX - 1);
			break;
		}
		if (formats->count == RV_PMU_MAX_FORMATS) {
			rc = rv_error_set(err, E2BIG, "%s has more than %d format files", dir,
					  RV_PMU_MAX_FORMATS);
			break;
		}
		if (snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name) >=
		    (int)sizeof(path)) {
			rc = rv_error_set(err, ENAMETOOLONG, "path too long: %s/%s", dir,
					  entry->d_name);
			break;
		}
		rc = read_text(path, text, sizeof(text));
		if (rc) {
			rc = rv_error_set(err, -rc, "cannot read %s: %s", path, strerror(-rc));
			break;
		}
		format = &formats->items[formats->count];
		memcpy(format->name, entry->d_name, name_len + 1);
		rc = rv_pmu_format_parse(text, format, err);
		if (rc) {
			rv_error_prefix(err, "malformed PMU format file %s", path);
			break;
		}
		formats->count++;
	}
	closedir(d);
	if (!rc)
		qsort(formats->items, formats->count, sizeof(formats->items[0]), compare_formats);
	return rc;
}

const struct rv_pmu_format *rv_pmu_format_find(const struct rv_pmu_formats *formats,
					       const char *name)
{
	for (size_t i = 0; i < formats->count; i++)
		if (!strcmp(formats->items[i].name, name))
			return &formats->items[i];
	return NULL;
}

unsigned rv_pmu_format_width(const struct rv_pmu_format *format)
{
	return (unsigned)__builtin_popcountll(format->bits);
}

uint64_t rv_pmu_format_max(const struct rv_pmu_format *format)
{
	unsigned width = rv_pmu_format_width(format);

	return width >= 64 ? UINT64_MAX : (1ULL << width) - 1;
}

uint64_t rv_pmu_format_get(const struct rv_pmu_format *format, uint64_t word)
{
	uint64_t value = 0;
	unsigned out = 0;

	for (unsigned b = 0; b < 64; b++) {
		if (!(format->bits & (1ULL << b)))
			continue;
		if (word & (1ULL << b))
			value |= 1ULL << out;
		out++;
	}
	return value;
}

uint64_t rv_pmu_format_put(const struct rv_pmu_format *format, uint64_t word, uint64_t value)
{
	unsigned in = 0;

	for (unsigned b = 0; b < 64; b++) {
		if (!(format->bits & (1ULL << b)))
			continue;
		if (in < 64 && (value & (1ULL << in)))
			word |= 1ULL << b;
		else
			word &= ~(1ULL << b);
		in++;
	}
	return word;
}

/* Appends the bits set in bits, below nbits, to buf (size bytes, used of
 * them taken) as ranges: "0-3,6,9". Returns the new used, which passes size
 * when the text was cut. */
static size_t append_bit_ranges(char *buf, size_t size, size_t used, uint64_t bits, unsigned nbits)
{
	const char *separator = "";

	for (unsigned b = 0; b < nbits && used < size; b++) {
		unsigned lo = b;

		if (!(bits & (1ULL << b)))
			continue;
		while (b + 1 < nbits && (bits & (1ULL << (b + 1))))
			b++;
		if (lo == b)
			used += (size_t)snprintf(buf + used, size - used, "%s%u", separator, lo);
		else
			used += (size_t)snprintf(buf + used, size - used, "%s%u-%u", separator, lo,
						 b);
		separator = ",";
	}
	return used;
}

void rv_pmu_format_describe(const struct rv_pmu_format *format, char *buf, size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "%s:", word_name(format->word));

	append_bit_ranges(buf, size, used, format->bits, 64);
}

/* Reads ROOT/PT_DIR/NAME as a number in BASE. 0 when read, -ENOENT when the
 * file is absent, otherwise an error naming the file. */
static int read_pt_number(const char *root, const char *name, int base, uint32_t *value,
			  struct rv_error *err)
{
	char rel[128], path[PATH_MAX], text[64];
	int rc;

	snprintf(rel, sizeof(rel), PT_DIR "/%s", name);
	if (join(path, sizeof(path), root, rel))
		return rv_error_set(err, ENAMETOOLONG, "path too long: %s%s", root, rel);
	rc = read_text(path, text, sizeof(text));
	if (rc == -ENOENT)
		return rc;
	if (rc)
		return rv_error_set(err, -rc, "cannot read %s: %s", path, strerror(-rc));
	chomp(text);
	if (parse_u32(text, base, value))
		return rv_error_set(err, EINVAL,
				    "malformed %s: '%.32s' is not a %s number; is this really the "
				    "intel_pt PMU?",
				    path, text, base == 16 ? "hexadecimal" : "decimal");
	return 0;
}

static int read_tsc_art_ratio(struct rv_pt_pmu *pmu, const char *root, struct rv_error *err)
{
	char path[PATH_MAX], text[64], *colon;
	int rc;

	if (join(path, sizeof(path), root, PT_DIR "/tsc_art_ratio"))
		return rv_error_set(err, ENAMETOOLONG, "path too long under %s", root);
	rc = read_text(path, text, sizeof(text));
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rv_error_set(err, -rc, "cannot read %s: %s", path, strerror(-rc));
	chomp(text);
	colon = strchr(text, ':');
	if (colon)
		*colon = '\0';
	if (!colon || parse_u32(text, 10, &pmu->tsc_art_num) ||
	    parse_u32(colon + 1, 10, &pmu->tsc_art_den))
		return rv_error_set(
			err, EINVAL,
			"malformed %s: want NUMERATOR:DENOMINATOR (CPUID 0x15 EBX:EAX), "
			"as in 216:2",
			path);
	pmu->has_tsc_art_ratio = true;
	return 0;
}

static int read_formats(struct rv_pt_pmu *pmu, const char *root, struct rv_error *err)
{
	char path[PATH_MAX];
	int rc;

	if (join(path, sizeof(path), root, PT_DIR "/format"))
		return rv_error_set(err, ENAMETOOLONG, "path too long under %s", root);
	rc = rv_pmu_formats_read(&pmu->formats, path, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(required_formats) / sizeof(required_formats[0]); i++) {
		const struct rv_pmu_format *f =
			rv_pmu_format_find(&pmu->formats, required_formats[i]);

		if (!f)
			return rv_error_set(err, ENOENT,
					    "%s/%s is missing: this kernel's intel_pt driver is "
					    "too old to record with (it needs pt, tsc and branch)",
					    path, required_formats[i]);
		if (f->word != RV_PMU_CONFIG)
			return rv_error_set(err, EINVAL,
					    "%s/%s is not in config: not an intel_pt PMU we know",
					    path, required_formats[i]);
	}
	return 0;
}

int rv_pt_pmu_discover(struct rv_pt_pmu *pmu, const char *root, struct rv_error *err)
{
	char path[PATH_MAX];
	struct stat st;
	int rc;

	memset(pmu, 0, sizeof(*pmu));
	if (join(path, sizeof(path), root, PT_DIR))
		return rv_error_set(err, ENAMETOOLONG, "path too long under %s", root);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return rv_error_set(err, ENODEV,
				    "this machine has no Intel PT (%s does not exist: an AMD or "
				    "Arm CPU, a VM without PT passthrough, or a kernel without "
				    "CONFIG_PERF_EVENTS_INTEL_PT); record with --backend sample or "
				    "--backend uprobe instead",
				    path);

	rc = read_pt_number(root, "type", 10, &pmu->type, err);
	if (rc == -ENOENT)
		return rv_error_set(err, ENOENT,
				    "%s/type is missing, so the intel_pt event cannot be opened; "
				    "is sysfs mounted whole?",
				    path);
	if (rc)
		return rc;

	rc = read_formats(pmu, root, err);
	if (rc)
		return rc;

	for (int cap = 0; cap < RV_PT_CAP_COUNT; cap++) {
		char name[64];

		snprintf(name, sizeof(name), "caps/%s", cap_names[cap]);
		rc = read_pt_number(root, name, 16, &pmu->caps[cap], err);
		if (rc == -ENOENT) {
			pmu->caps[cap] = 0;
			pmu->caps_missing |= 1u << cap;
		} else if (rc) {
			return rc;
		}
	}

	rc = read_pt_number(root, "max_nonturbo_ratio", 10, &pmu->max_nonturbo_ratio, err);
	if (rc && rc != -ENOENT)
		return rc;
	pmu->has_max_nonturbo_ratio = !rc;

	rc = read_pt_number(root, "nr_addr_filters", 10, &pmu->nr_addr_filters, err);
	if (rc && rc != -ENOENT)
		return rc;
	pmu->has_nr_addr_filters = !rc;

	rc = read_tsc_art_ratio(pmu, root, err);
	if (rc)
		return rc;

	/* Unknown kernel version: treated as lacking every recent feature. */
	if (rv_kernel_version(root, &pmu->kernel_major, &pmu->kernel_minor))
		pmu->kernel_major = pmu->kernel_minor = 0;
	return 0;
}

void rv_pt_cap_values(uint32_t bitmap, char *buf, size_t size)
{
	if (!size)
		return;
	buf[0] = '\0';
	if (!bitmap) {
		snprintf(buf, size, "none");
		return;
	}
	append_bit_ranges(buf, size, 0, bitmap, 32);
}

uint32_t rv_pt_pmu_address_ranges(const struct rv_pt_pmu *pmu)
{
	if (!(pmu->caps_missing & (1u << RV_PT_CAP_NUM_ADDRESS_RANGES)))
		return pmu->caps[RV_PT_CAP_NUM_ADDRESS_RANGES];
	return pmu->nr_addr_filters;
}

size_t rv_pt_pmu_notes(const struct rv_pt_pmu *pmu, char *buf, size_t size)
{
	size_t used = 0;
	bool any = false;

#define NOTE(...)                                                                                  \
	do {                                                                                       \
		int n_ = snprintf(buf + (used < size ? used : size),                               \
				  used < size ? size - used : 0, __VA_ARGS__);                     \
		used += n_ > 0 ? (size_t)n_ : 0;                                                   \
	} while (0)

	if (size)
		buf[0] = '\0';
	for (int cap = 0; cap < RV_PT_CAP_COUNT; cap++) {
		if (!(pmu->caps_missing & (1u << cap)))
			continue;
		NOTE("%scaps/%s", any ? ", " : "intel_pt lacks ", cap_names[cap]);
		any = true;
	}
	if (!pmu->has_max_nonturbo_ratio) {
		NOTE("%smax_nonturbo_ratio", any ? ", " : "intel_pt lacks ");
		any = true;
	}
	if (!pmu->has_tsc_art_ratio) {
		NOTE("%stsc_art_ratio", any ? ", " : "intel_pt lacks ");
		any = true;
	}
	if (!pmu->has_nr_addr_filters) {
		NOTE("%snr_addr_filters", any ? ", " : "intel_pt lacks ");
		any = true;
	}
	if (any)
		NOTE(" (older kernel): treated as 0, not capable");
	if (!pmu->kernel_major)
		NOTE("%sthe kernel version is unknown (proc/sys/kernel/osrelease): treated as "
		     "lacking aux pause/resume",
		     any ? "; " : "");
#undef NOTE
	return used;
}

int rv_kernel_version(const char *root, unsigned *major, unsigned *minor)
{
	char path[PATH_MAX], text[128];
	unsigned long ma, mi;
	char *p, *end;
	int rc;

	if (join(path, sizeof(path), root, "/proc/sys/kernel/osrelease"))
		return -ENAMETOOLONG;
	rc = read_text(path, text, sizeof(text));
	if (rc)
		return rc;
	p = text;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	errno = 0;
	ma = strtoul(p, &end, 10);
	if (errno || *end != '.' || ma > 1000)
		return -EINVAL;
	p = end + 1;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	mi = strtoul(p, &end, 10);
	if (errno || mi > 1000)
		return -EINVAL;
	*major = (unsigned)ma;
	*minor = (unsigned)mi;
	return 0;
}

bool rv_pt_pmu_has_aux_pause(const struct rv_pt_pmu *pmu)
{
	return pmu->kernel_major > 6 || (pmu->kernel_major == 6 && pmu->kernel_minor >= 13);
}
