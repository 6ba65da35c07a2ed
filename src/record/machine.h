/* machine.h: what this machine can record with, read from sysfs and procfs.
 *
 * Every path is relative to a root directory (normally "/") so that tests can
 * point it at a fake tree.
 *
 * Not here: opening events. This only looks.
 */
#ifndef RV_RECORD_MACHINE_H
#define RV_RECORD_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

struct rv_machine {
	bool has_intel_pt; /* /sys/bus/event_source/devices/intel_pt exists */
	bool has_lbr;	   /* every CPU in /proc/cpuinfo has the pdcm flag and a cpu PMU exists */
	bool has_cpu_pmu;  /* /sys/bus/event_source/devices/cpu: hardware cycles */
	int perf_event_paranoid;  /* kernel.perf_event_paranoid; 2 if unreadable */
	uint64_t max_sample_rate; /* kernel.perf_event_max_sample_rate; 0 if unreadable */
	int nr_cpus;		  /* possible CPUs (0..nr_cpus-1 may be opened) */
};

/* Reads everything; missing files leave conservative values. */
void rv_machine_probe(struct rv_machine *m, const char *root);

/* Reads one unsigned number from root/path; false when absent or malformed. */
bool rv_read_sysfs_u64(const char *root, const char *path, uint64_t *value);

#endif
