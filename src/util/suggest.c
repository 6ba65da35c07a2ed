/* suggest.c: edit distance for "did you mean"; see suggest.h. */
#include "util/suggest.h"

#include <stdint.h>
#include <string.h>

size_t rv_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[RV_SUGGEST_MAX_LEN + 1];

	if (la > RV_SUGGEST_MAX_LEN || lb > RV_SUGGEST_MAX_LEN)
		return SIZE_MAX;
	/* one row of the distance table at a time: row[j] is the distance
	 * from a's first i bytes to b's first j */
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diagonal = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t above = row[j];
			size_t best = diagonal + (a[i - 1] != b[j - 1]);

			if (above + 1 < best)
				best = above + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diagonal = above;
		}
	}
	return row[lb];
}

size_t rv_suggest_limit(const char *typed)
{
	return strlen(typed) / 3 + 1;
}
