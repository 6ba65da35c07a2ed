/* bpf_map.c: per-CPU counters summed; see bpf_map.h. */
#include "util/bpf_map.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rv_bpf_percpu_sums(const struct bpf_map *map, uint64_t *sums, uint32_t nr_slots,
		       const char *what, struct rv_error *err)
{
	int nr_cpus = libbpf_num_possible_cpus();
	uint64_t *values;
	int ret = 0;

	memset(sums, 0, nr_slots * sizeof(*sums));
	if (nr_cpus <= 0)
		return rv_error_set(err, -nr_cpus, "cannot count the CPUs: %s", strerror(-nr_cpus));
	values = calloc((size_t)nr_cpus, sizeof(*values));
	if (!values)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (uint32_t slot = 0; slot < nr_slots && !ret; slot++) {
		ret = bpf_map__lookup_elem(map, &slot, sizeof(slot), values,
					   (size_t)nr_cpus * sizeof(*values), 0);
		if (ret)
			ret = rv_error_set(err, -ret, "cannot read %s: %s", what, strerror(-ret));
		for (int cpu = 0; !ret && cpu < nr_cpus; cpu++)
			sums[slot] += values[cpu];
	}
	free(values);
	return ret;
}
