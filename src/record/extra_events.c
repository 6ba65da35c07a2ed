/* extra_events.c: --events LIST parsed, checked against the machine and
 * opened beside an engine's per-CPU events; see extra_events.h.
 *
 * Not here: reading their records (the engine's rings carry them).
 */
#define RV_LOG_DOMAIN "events"
#include "record/extra_events.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/array.h"
#include "util/log.h"

struct known_event {
	const char *name;
	const char *alias; /* perf's other name, or NULL */
	enum rv_extra_kind kind;
	uint32_t type;
	uint64_t config;
	uint64_t period; /* the default */
};

static const struct known_event known[] = {
	{ "page-faults", "faults", RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS,
	  1 },
	{ "minor-faults", NULL, RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MIN, 1 },
	{ "major-faults", NULL, RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1 },
	{ "context-switches", "cs", RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES, 1 },
	{ "cpu-migrations", "migrations", RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_MIGRATIONS, 1 },
	{ "alignment-faults", NULL, RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_ALIGNMENT_FAULTS, 1 },
	{ "emulation-faults", NULL, RV_EXTRA_SOFTWARE, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_EMULATION_FAULTS, 1 },
	/* magic-trace's two, with its periods */
	{ "branch-misses", NULL, RV_EXTRA_HARDWARE, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
	  50 },
	{ "cache-misses", NULL, RV_EXTRA_HARDWARE, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
	  1 },
};

#define KNOWN_LIST                                                                                 \
	"page-faults, minor-faults, major-faults, context-switches, cpu-migrations, "              \
	"alignment-faults, emulation-faults, a tracepoint SUBSYS:NAME (sched:sched_switch), or "   \
	"where the CPU has a PMU branch-misses and cache-misses; each with an optional "           \
	"/period=N"

static const struct known_event *find_known(const char *name)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].name, name) ||
		    (known[i].alias && !strcmp(known[i].alias, name)))
			return &known[i];
	return NULL;
}

/* A tracefs directory name: letters, digits, '_' (and '-', which a few
 * subsystems use); never '/' or "..". */
static bool tracefs_word(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

static int parse_period(const char *text, size_t len, const char *item, uint64_t *period,
			struct rv_error *err)
{
	static const char prefix[] = "period=";
	char digits[32];
	char *end;
	unsigned long long v;

	if (len <= sizeof(prefix) - 1 || strncmp(text, prefix, sizeof(prefix) - 1) ||
	    len - (sizeof(prefix) - 1) >= sizeof(digits))
		return rv_error_set(err, EINVAL,
				    "invalid --events item '%s': the only suffix is /period=N "
				    "(a sample every N events)",
				    item);
	memcpy(digits, text + sizeof(prefix) - 1, len - (sizeof(prefix) - 1));
	digits[len - (sizeof(prefix) - 1)] = '\0';
	errno = 0;
	v = strtoull(digits, &end, 10);
	if (!isdigit((unsigned char)digits[0]) || *end || errno || v == 0 || v > (1ull << 40))
		return rv_error_set(err, EINVAL,
				    "invalid --events item '%s': the period must be a whole number "
				    "from 1 (every event)",
				    item);
	*period = v;
	return 0;
}

/* One item: NAME[/period=N]. */
static int parse_item(const char *item, struct rv_extra_events *set, struct rv_error *err)
{
	const char *slash = strchr(item, '/');
	size_t name_len = slash ? (size_t)(slash - item) : strlen(item);
	struct rv_extra_event ev = { 0 };
	const struct known_event *k;
	const char *colon;
	int ret;

	if (!name_len)
		return rv_error_set(err, EINVAL, "invalid --events item '%s': no event name", item);
	if (name_len >= sizeof(ev.name))
		return rv_error_set(err, ENAMETOOLONG, "--events name too long: '%s'", item);
	memcpy(ev.name, item, name_len);
	ev.name[name_len] = '\0';
	colon = strchr(ev.name, ':');
	if (colon) {
		size_t sys_len = (size_t)(colon - ev.name);

		if (!tracefs_word(ev.name, sys_len) || !tracefs_word(colon + 1, strlen(colon + 1)))
			return rv_error_set(err, EINVAL,
					    "invalid --events tracepoint '%s': give SUBSYS:NAME as "
					    "tracefs names them (sched:sched_switch)",
					    ev.name);
		ev.kind = RV_EXTRA_TRACEPOINT;
		ev.type = PERF_TYPE_TRACEPOINT;
		ev.period = 1;
	} else {
		k = find_known(ev.name);
		if (!k)
			return rv_error_set(err, EINVAL, "unknown --events event '%s': use %s",
					    ev.name, KNOWN_LIST);
		snprintf(ev.name, sizeof(ev.name), "%s", k->name);
		ev.kind = k->kind;
		ev.type = k->type;
		ev.config = k->config;
		ev.period = k->period;
	}
	if (slash) {
		ret = parse_period(slash + 1, strlen(slash + 1), item, &ev.period, err);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < set->nr; i++)
		if (!strcmp(set->events[i].name, ev.name))
			return rv_error_set(err, EINVAL, "--events names '%s' twice", ev.name);
	if (set->nr >= RV_MAX_EXTRA_EVENTS)
		return rv_error_set(err, E2BIG, "--events takes at most %d events",
				    RV_MAX_EXTRA_EVENTS);
	set->events[set->nr++] = ev;
	return 0;
}

int rv_extra_events_parse(const char *list, struct rv_extra_events *set, struct rv_error *err)
{
	const char *p = list;

	if (!*list)
		return rv_error_set(err, EINVAL, "--events needs a list of events: %s", KNOWN_LIST);
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[RV_EXTRA_NAME_MAX + 64];
		int ret;

		if (len >= sizeof(item))
			return rv_error_set(err, ENAMETOOLONG, "--events item too long: '%.*s...'",
					    40, p);
		memcpy(item, p, len);
		item[len] = '\0';
		if (!len)
			return rv_error_set(err, EINVAL, "invalid --events '%s': an empty item",
					    list);
		ret = parse_item(item, set, err);
		if (ret)
			return ret;
		if (!comma)
			break;
		p = comma + 1;
		if (!*p)
			return rv_error_set(err, EINVAL, "invalid --events '%s': an empty item",
					    list);
	}
	return 0;
}

/* root and "sys/..." joined by one slash ("/" and a fake tree alike). */
static const char *root_sep(const char *root)
{
	size_t len = strlen(root);

	return len && root[len - 1] == '/' ? "" : "/";
}

/* The PMUs the machine lists, for the message refusing a hardware event. */
static void list_pmus(const char *root, char *buf, size_t size)
{
	char path[4096];
	struct dirent *d;
	size_t used = 0;
	DIR *dir;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s%ssys/bus/event_source/devices", root, root_sep(root));
	dir = opendir(path);
	if (!dir) {
		snprintf(buf, size, "none listed");
		return;
	}
	while ((d = readdir(dir)) && used + 1 < size) {
		int n;

		if (d->d_name[0] == '.')
			continue;
		n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", d->d_name);
		if (n < 0)
			break;
		used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
	closedir(dir);
	if (!used)
		snprintf(buf, size, "none listed");
}

static int read_tracepoint_id(const char *root, const char *name, uint64_t *id,
			      struct rv_error *err)
{
	static const char *const bases[] = { "sys/kernel/tracing", "sys/kernel/debug/tracing" };
	const char *colon = strchr(name, ':');
	char path[4096], text[32];
	size_t sys_len = (size_t)(colon - name);

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		FILE *f;
		size_t n;
		char *end;
		unsigned long long v;

		snprintf(path, sizeof(path), "%s%s%s/events/%.*s/%s/id", root, root_sep(root),
			 bases[i], (int)sys_len, name, colon + 1);
		f = fopen(path, "re");
		if (!f) {
			if (errno == EACCES || errno == EPERM)
				return rv_error_set(err, errno,
						    "cannot read the id of tracepoint '%s' (%s): "
						    "tracefs needs root; run rearview as root",
						    name, path);
			continue;
		}
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
		text[n] = '\0';
		errno = 0;
		v = strtoull(text, &end, 10);
		if (!n || end == text || errno || (*end && *end != '\n'))
			return rv_error_set(err, EINVAL, "tracepoint '%s': %s holds no id", name,
					    path);
		*id = v;
		return 0;
	}
	snprintf(path, sizeof(path), "%s%ssys/kernel/tracing/events/%.*s", root, root_sep(root),
		 (int)sys_len, name);
	return rv_error_set(err, ENOENT,
			    "no tracepoint '%s' on this kernel (no %s/%s/id); the subsystem's "
			    "are listed in %s (perf list tracepoint lists them all)",
			    name, path, colon + 1, path);
}

int rv_extra_events_resolve(struct rv_extra_events *set, const char *root, bool has_cpu_pmu,
			    struct rv_error *err)
{
	for (size_t i = 0; i < set->nr; i++) {
		struct rv_extra_event *ev = &set->events[i];
		int ret;

		if (ev->kind == RV_EXTRA_HARDWARE && !has_cpu_pmu) {
			char pmus[512];

			list_pmus(root, pmus, sizeof(pmus));
			return rv_error_set(err, EOPNOTSUPP,
					    "--events %s is a hardware event, and this machine has "
					    "no CPU PMU (a VM often has none; its event sources: "
					    "%s): use software events (page-faults, "
					    "context-switches, major-faults, ...) or tracepoints "
					    "(sched:sched_switch)",
					    ev->name, pmus);
		}
		if (ev->kind == RV_EXTRA_TRACEPOINT) {
			ret = read_tracepoint_id(root, ev->name, &ev->config, err);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- perf's tracing data ---- */

struct blob {
	uint8_t *data;
	size_t used, cap;
	bool failed;
};

static void blob_put(struct blob *b, const void *bytes, size_t n)
{
	if (b->failed || rv_array_reserve(&b->data, &b->cap, b->used + n, 1, 4096)) {
		b->failed = true;
		return;
	}
	memcpy(b->data + b->used, bytes, n);
	b->used += n;
}

static void blob_u32(struct blob *b, uint32_t v)
{
	blob_put(b, &v, sizeof(v));
}

static void blob_u64(struct blob *b, uint64_t v)
{
	blob_put(b, &v, sizeof(v));
}

/* A tracefs file under the first base that has it: malloc'd, *size its bytes
 * (files in tracefs report size 0, so it is read to its end). */
static void *read_tracefs(const char *root, const char *rel, size_t *size)
{
	static const char *const bases[] = { "sys/kernel/tracing", "sys/kernel/debug/tracing" };

	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		char path[4096];
		struct blob b = { 0 };
		char chunk[4096];
		size_t n;
		FILE *f;

		snprintf(path, sizeof(path), "%s%s%s/%s", root, root_sep(root), bases[i], rel);
		f = fopen(path, "re");
		if (!f)
			continue;
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.used < (16u << 20))
			blob_put(&b, chunk, n);
		fclose(f);
		if (b.failed) {
			free(b.data);
			return NULL;
		}
		*size = b.used;
		return b.data ? b.data : calloc(1, 1);
	}
	return NULL;
}

/* A tracefs file as perf's tracing data holds it: its size (size_bytes
 * wide), then its bytes. */
static int put_file(struct blob *b, const char *root, const char *rel, size_t size_bytes,
		    struct rv_error *err)
{
	size_t size = 0;
	void *data = read_tracefs(root, rel, &size);

	if (!data)
		return rv_error_set(err, errno ? errno : EIO,
				    "cannot read %s from tracefs under %s, which perf script needs "
				    "for the tracepoints' samples",
				    rel, root);
	if (size_bytes == 8)
		blob_u64(b, size);
	else
		blob_u32(b, (uint32_t)size);
	blob_put(b, data, size);
	free(data);
	return 0;
}

int rv_extra_events_tracing_data(const struct rv_extra_events *set, const char *root, void **out,
				 size_t *size, struct rv_error *err)
{
	static const uint8_t magic[] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	const char *systems[RV_MAX_EXTRA_EVENTS];
	size_t nr_systems = 0, lens[RV_MAX_EXTRA_EVENTS];
	struct blob b = { 0 };
	int ret = 0;

	*out = NULL;
	*size = 0;
	for (size_t i = 0; i < set->nr; i++) {
		const char *name = set->events[i].name;
		size_t len = strcspn(name, ":");
		bool seen = false;

		if (set->events[i].kind != RV_EXTRA_TRACEPOINT)
			continue;
		for (size_t k = 0; k < nr_systems && !seen; k++)
			seen = lens[k] == len && !strncmp(systems[k], name, len);
		if (!seen) {
			systems[nr_systems] = name;
			lens[nr_systems++] = len;
		}
	}
	if (!nr_systems)
		return 0;
	blob_put(&b, magic, sizeof(magic));
	blob_put(&b, "0.6", 4);
	blob_put(&b, &(uint8_t){ 0 }, 1);		    /* little endian */
	blob_put(&b, &(uint8_t){ sizeof(long) }, 1);	    /* long size */
	blob_u32(&b, (uint32_t)sysconf(_SC_PAGESIZE));	    /* page size */
	blob_put(&b, "header_page", sizeof("header_page")); /* with its NUL */
	ret = put_file(&b, root, "events/header_page", 8, err);
	if (!ret) {
		blob_put(&b, "header_event", sizeof("header_event"));
		ret = put_file(&b, root, "events/header_event", 8, err);
	}
	if (!ret)
		blob_u32(&b, 0); /* ftrace formats */
	if (!ret)
		blob_u32(&b, (uint32_t)nr_systems);
	for (size_t k = 0; !ret && k < nr_systems; k++) {
		uint32_t count = 0;

		blob_put(&b, systems[k], lens[k]);
		blob_put(&b, "", 1);
		for (size_t i = 0; i < set->nr; i++)
			count += set->events[i].kind == RV_EXTRA_TRACEPOINT &&
				 !strncmp(set->events[i].name, systems[k], lens[k]) &&
				 set->events[i].name[lens[k]] == ':';
		blob_u32(&b, count);
		for (size_t i = 0; !ret && i < set->nr; i++) {
			const char *name = set->events[i].name;
			char rel[RV_EXTRA_NAME_MAX + 32];

			if (set->events[i].kind != RV_EXTRA_TRACEPOINT ||
			    strncmp(name, systems[k], lens[k]) || name[lens[k]] != ':')
				continue;
			snprintf(rel, sizeof(rel), "events/%.*s/%s/format", (int)lens[k], name,
				 name + lens[k] + 1);
			ret = put_file(&b, root, rel, 8, err);
		}
	}
	if (!ret) {
		blob_u32(&b, 0); /* kallsyms */
		blob_u32(&b, 0); /* printk formats */
		blob_u64(&b, 0); /* saved command lines */
	}
	if (!ret && b.failed)
		ret = rv_error_set(err, ENOMEM, "out of memory");
	if (ret) {
		free(b.data);
		return ret;
	}
	*out = b.data;
	*size = b.used;
	return 0;
}

void rv_extra_event_attr(const struct rv_extra_event *ev, bool include_kernel,
			 struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->type;
	a->config = ev->config;
	a->sample_period = ev->period;
	a->sample_type = RV_EXTRA_SAMPLE_TYPE;
	a->disabled = 1;
	a->inherit = 1;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->exclude_hv = 1;
	/* Tracepoints fire in the kernel and software events are counted
	 * there: excluding it would drop them. */
	a->exclude_kernel = ev->kind == RV_EXTRA_HARDWARE && !include_kernel;
}

void rv_extra_event_attr_in_group(const struct rv_extra_event *ev, bool include_kernel,
				  const struct perf_event_attr *leader, struct perf_event_attr *a)
{
	rv_extra_event_attr(ev, include_kernel, a);
	a->use_clockid = leader->use_clockid;
	a->clockid = leader->use_clockid ? leader->clockid : 0;
	a->inherit = leader->inherit;
}

bool rv_extra_event_attr_is_extra(const struct perf_event_attr *a)
{
	const uint64_t not_extra = PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_STACK_USER |
				   PERF_SAMPLE_REGS_USER | PERF_SAMPLE_RAW | PERF_SAMPLE_AUX;

	if (a->freq || !a->sample_period || (a->sample_type & not_extra))
		return false;
	if (!(a->sample_type & PERF_SAMPLE_TID) || !(a->sample_type & PERF_SAMPLE_TIME))
		return false;
	if (a->type == PERF_TYPE_TRACEPOINT)
		return true;
	/* the events --events names, and no other: a profile taken every N
	 * instructions or cycles stays a profile */
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].type == a->type && known[i].config == a->config)
			return true;
	return false;
}

void rv_extra_events_describe(const struct rv_extra_events *set, char *buf, size_t size)
{
	size_t used = 0;

	if (!size)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < set->nr && used + 1 < size; i++) {
		const struct rv_extra_event *ev = &set->events[i];
		const struct known_event *k = find_known(ev->name);
		uint64_t usual = k ? k->period : 1;
		int n;

		if (ev->period != usual)
			n = snprintf(buf + used, size - used, "%s%s/period=%" PRIu64, i ? ", " : "",
				     ev->name, ev->period);
		else
			n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", ev->name);
		if (n < 0)
			break;
		used += (size_t)n < size - used ? (size_t)n : size - used - 1;
	}
}

/* ---- opening ---- */

struct opened {
	int fd;
	uint64_t id;
	uint32_t event; /* index in the set */
};

struct rv_extra_open {
	struct perf_event_attr attrs[RV_MAX_EXTRA_EVENTS];
	size_t nr_events;
	struct opened *fds; /* sorted by id once all are open */
	size_t nr, cap;
	uint64_t *ids[RV_MAX_EXTRA_EVENTS]; /* by event */
	size_t nr_ids[RV_MAX_EXTRA_EVENTS];
};

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			   unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

/* The threads to open on: the processes, or with all_threads every thread
 * of each. */
static int list_threads(const pid_t *pids, size_t nr_pids, bool all_threads, pid_t **out,
			size_t *count, struct rv_error *err)
{
	size_t cap = 0, n = 0;
	pid_t *tids = NULL;

	for (size_t i = 0; i < nr_pids; i++) {
		char path[64];
		struct dirent *d;
		DIR *dir = NULL;

		if (all_threads) {
			snprintf(path, sizeof(path), "/proc/%d/task", (int)pids[i]);
			dir = opendir(path);
		}
		if (!dir) {
			if (rv_array_reserve(&tids, &cap, n + 1, sizeof(*tids), 16))
				goto oom;
			tids[n++] = pids[i];
			continue;
		}
		while ((d = readdir(dir))) {
			char *end;
			long tid = strtol(d->d_name, &end, 10);

			if (d->d_name[0] == '.' || *end || tid <= 0)
				continue;
			if (rv_array_reserve(&tids, &cap, n + 1, sizeof(*tids), 16)) {
				closedir(dir);
				goto oom;
			}
			tids[n++] = (pid_t)tid;
		}
		closedir(dir);
	}
	*out = tids;
	*count = n;
	return 0;
oom:
	free(tids);
	return rv_error_set(err, ENOMEM, "out of memory");
}

static int compare_opened(const void *a, const void *b)
{
	const struct opened *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int explain(const struct perf_event_attr *attr, const char *name, pid_t tid, int cpu,
		   int error, struct rv_error *err)
{
	if (error == EACCES || error == EPERM)
		return rv_error_set(err, error,
				    "not allowed to open --events %s for thread %d: run rearview "
				    "as root (or with CAP_PERFMON)",
				    name, (int)tid);
	if (error == ENOENT || error == EOPNOTSUPP || error == ENODEV)
		return rv_error_set(err, error,
				    "this machine cannot count --events %s (type %u, config %llu: "
				    "%s)",
				    name, attr->type, (unsigned long long)attr->config,
				    strerror(error));
	return rv_error_set(err, error, "cannot open --events %s for thread %d on CPU %d: %s", name,
			    (int)tid, cpu, strerror(error));
}

int rv_extra_events_open(struct rv_extra_open **out, const struct rv_extra_events *set,
			 const pid_t *pids, size_t nr_pids, bool all_threads, bool include_kernel,
			 const int *cpus, const int *output_fds, size_t nr_cpus,
			 struct rv_error *err)
{
	struct rv_extra_open *o = calloc(1, sizeof(*o));
	pid_t *tids = NULL;
	size_t nr_tids = 0;
	int ret;

	*out = NULL;
	if (!o)
		return rv_error_set(err, ENOMEM, "out of memory");
	o->nr_events = set->nr;
	ret = list_threads(pids, nr_pids, all_threads, &tids, &nr_tids, err);
	for (size_t e = 0; !ret && e < set->nr; e++) {
		struct perf_event_attr *attr = &o->attrs[e];

		rv_extra_event_attr(&set->events[e], include_kernel, attr);
		for (size_t t = 0; !ret && t < nr_tids; t++) {
			for (size_t c = 0; !ret && c < nr_cpus; c++) {
				struct opened op = { .event = (uint32_t)e };

				op.fd = perf_event_open(attr, tids[t], cpus[c], -1,
							PERF_FLAG_FD_CLOEXEC);
				if (op.fd < 0) {
					if (errno == ESRCH)
						break; /* the thread exited meanwhile */
					ret = explain(attr, set->events[e].name, tids[t], cpus[c],
						      errno, err);
					break;
				}
				if (ioctl(op.fd, PERF_EVENT_IOC_ID, &op.id) ||
				    ioctl(op.fd, PERF_EVENT_IOC_SET_OUTPUT, output_fds[c])) {
					int saved = errno;

					close(op.fd);
					ret = rv_error_set(err, saved,
							   "cannot send --events %s's records to "
							   "CPU %d's buffer: %s",
							   set->events[e].name, cpus[c],
							   strerror(saved));
					break;
				}
				if (rv_array_reserve(&o->fds, &o->cap, o->nr + 1, sizeof(*o->fds),
						     16)) {
					close(op.fd);
					ret = rv_error_set(err, ENOMEM, "out of memory");
					break;
				}
				o->fds[o->nr++] = op;
			}
		}
	}
	free(tids);
	if (ret) {
		rv_extra_open_free(o);
		return ret;
	}
	for (size_t i = 0; i < o->nr; i++) {
		uint32_t e = o->fds[i].event;
		uint64_t *grown = realloc(o->ids[e], (o->nr_ids[e] + 1) * sizeof(uint64_t));

		if (!grown) {
			rv_extra_open_free(o);
			return rv_error_set(err, ENOMEM, "out of memory");
		}
		o->ids[e] = grown;
		o->ids[e][o->nr_ids[e]++] = o->fds[i].id;
	}
	if (o->nr)
		qsort(o->fds, o->nr, sizeof(*o->fds), compare_opened);
	rv_debug("%zu --events opened (%zu events, %zu threads, %zu CPUs)", o->nr, set->nr, nr_tids,
		 nr_cpus);
	*out = o;
	return 0;
}

void rv_extra_open_enable(struct rv_extra_open *o, bool enable)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nr; i++)
		ioctl(o->fds[i].fd, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

int rv_extra_open_find(const struct rv_extra_open *o, uint64_t id)
{
	size_t lo = 0, hi;

	if (!o)
		return -1;
	hi = o->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->fds[mid].id == id)
			return (int)o->fds[mid].event;
		if (o->fds[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

size_t rv_extra_open_ids(const struct rv_extra_open *o, size_t index, const uint64_t **ids)
{
	if (!o || index >= o->nr_events) {
		*ids = NULL;
		return 0;
	}
	*ids = o->ids[index];
	return o->nr_ids[index];
}

const struct perf_event_attr *rv_extra_open_attr(const struct rv_extra_open *o, size_t index)
{
	return o && index < o->nr_events ? &o->attrs[index] : NULL;
}

void rv_extra_open_free(struct rv_extra_open *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nr; i++)
		close(o->fds[i].fd);
	for (size_t e = 0; e < RV_MAX_EXTRA_EVENTS; e++)
		free(o->ids[e]);
	free(o->fds);
	free(o);
}
