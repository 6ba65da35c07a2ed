/* perf_names.h: the names `perf report -D` gives record types, for tests
 * that compare our reader with perf's dump. */
#ifndef RV_TESTS_PERF_NAMES_H
#define RV_TESTS_PERF_NAMES_H

#include <stdint.h>

/* "MMAP2", "AUXTRACE", ...; NULL for a type perf does not name. */
const char *perf_record_type_name(uint32_t type);

#endif
