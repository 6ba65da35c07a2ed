/* bpf_map.h: reading what rearview's BPF programs count: per-CPU array
 * maps whose slots are counters, summed over the CPUs.
 *
 * Not here: the counters' meanings (each program's header).
 */
#ifndef RV_UTIL_BPF_MAP_H
#define RV_UTIL_BPF_MAP_H

#include <stdint.h>

#include "util/error.h"

struct bpf_map;

/* sums[slot] = the slot's values on every possible CPU, for slots
 * 0..nr_slots-1 (zeroed first). On failure the error names what the map
 * counts ("the BPF gate's counts"). */
int rv_bpf_percpu_sums(const struct bpf_map *map, uint64_t *sums, uint32_t nr_slots,
		       const char *what, struct rv_error *err);

#endif
