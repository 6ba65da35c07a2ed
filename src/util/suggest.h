/* suggest.h: how far a misspelt name is from a known one, for the "did you
 * mean" of error messages (unknown functions, options and commands).
 *
 * Not here: the candidates (each caller has its own: a symbol table, the
 * option table) or the wording of the message.
 */
#ifndef RV_UTIL_SUGGEST_H
#define RV_UTIL_SUGGEST_H

#include <stddef.h>

/* Longest name compared, in bytes: the distance costs a row of this many
 * entries on the stack and time quadratic in the lengths. */
#define RV_SUGGEST_MAX_LEN 96

/* The number of single-byte insertions, deletions and substitutions that
 * turn a into b (Levenshtein; a swap of two neighbours counts 2); SIZE_MAX
 * when either is longer than RV_SUGGEST_MAX_LEN. */
size_t rv_edit_distance(const char *a, const char *b);

/* The most edits a name may be from what was typed and still be offered:
 * a third of the typed length, plus one ("mutli-thread" may be 5 edits
 * away, "fo" 1). */
size_t rv_suggest_limit(const char *typed);

#endif
