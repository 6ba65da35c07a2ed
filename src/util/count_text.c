/* count_text.c: see count_text.h. */
#include "util/count_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rv_count_text(uint64_t n, char *buf, size_t size)
{
	char digits[32];
	size_t len, out = 0;

	if (!size)
		return buf;
	snprintf(digits, sizeof(digits), "%" PRIu64, n);
	len = strlen(digits);
	for (size_t i = 0; i < len && out + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[out++] = ',';
		buf[out++] = digits[i];
	}
	buf[out] = '\0';
	return buf;
}
