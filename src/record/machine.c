/* machine.c: probing the machine's recording capabilities; see machine.h. */
#include "record/machine.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void join(char *out, size_t size, const char *root, const char *path)
{
	snprintf(out, size, "%s%s", strcmp(root, "/") ? root : "", path);
}

static bool path_exists(const char *root, const char *path)
{
	char full[PATH_MAX];
	struct stat st;

	join(full, sizeof(full), root, path);
	return stat(full, &st) == 0;
}

bool rv_read_sysfs_u64(const char *root, const char *path, uint64_t *value)
{
	char full[PATH_MAX], line[64], *end;
	FILE *f;
	bool ok = false;

	join(full, sizeof(full), root, path);
	f = fopen(full, "re");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f)) {
		errno = 0;
		*value = strtoull(line, &end, 0);
		ok = !errno && end != line && (*end == '\n' || *end == '\0');
	}
	fclose(f);
	return ok;
}

/* LBR call stacks need the CPU to advertise PDCM on every CPU, as perf and
 * magic-trace both check, and a hardware PMU to sample with. */
static bool cpuinfo_all_have_flag(const char *root, const char *flag)
{
	char full[PATH_MAX], line[8192];
	FILE *f;
	int cpus = 0, with_flag = 0;
	size_t flag_len = strlen(flag);

	join(full, sizeof(full), root, "/proc/cpuinfo");
	f = fopen(full, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *p;

		if (strncmp(line, "flags", 5))
			continue;
		cpus++;
		p = strchr(line, ':');
		while (p && (p = strstr(p, flag))) {
			if ((p[-1] == ' ' || p[-1] == ':') &&
			    (p[flag_len] == ' ' || p[flag_len] == '\n' || p[flag_len] == '\0')) {
				with_flag++;
				break;
			}
			p += flag_len;
		}
	}
	fclose(f);
	return cpus > 0 && cpus == with_flag;
}

void rv_machine_probe(struct rv_machine *m, const char *root)
{
	uint64_t value;
	long cpus;

	memset(m, 0, sizeof(*m));
	m->has_intel_pt = path_exists(root, "/sys/bus/event_source/devices/intel_pt");
	m->has_cpu_pmu = path_exists(root, "/sys/bus/event_source/devices/cpu") ||
			 path_exists(root, "/sys/bus/event_source/devices/cpu_core");
	m->has_lbr = m->has_cpu_pmu && cpuinfo_all_have_flag(root, "pdcm");
	m->perf_event_paranoid = 2;
	/* The value may be negative, which strtoull would wrap: read it as signed. */
	{
		char full[PATH_MAX];
		FILE *f;
		int paranoid;

		join(full, sizeof(full), root, "/proc/sys/kernel/perf_event_paranoid");
		f = fopen(full, "re");
		if (f) {
			if (fscanf(f, "%d", &paranoid) == 1)
				m->perf_event_paranoid = paranoid;
			fclose(f);
		}
	}
	if (rv_read_sysfs_u64(root, "/proc/sys/kernel/perf_event_max_sample_rate", &value))
		m->max_sample_rate = value;
	cpus = sysconf(_SC_NPROCESSORS_CONF);
	m->nr_cpus = cpus > 0 ? (int)cpus : 1;
}
