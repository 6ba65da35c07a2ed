/* count_text.h: a count as the messages write it, with thousands separated
 * by commas ("1,398,101"), for the summary, notes and the status line.
 *
 * Not here: times and sizes (each message says them its own way).
 */
#ifndef RV_UTIL_COUNT_TEXT_H
#define RV_UTIL_COUNT_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Writes n into buf (size bytes, cut short to fit, always NUL-terminated
 * when size > 0) and returns buf. 27 bytes hold any uint64_t. */
const char *rv_count_text(uint64_t n, char *buf, size_t size);

#endif
