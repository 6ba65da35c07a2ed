/* short_name.c: demangled names shortened for the summary; see short_name.h. */
#include "render/short_name.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026, "…" */

struct sink {
	char *buf;
	size_t size, len; /* len < size: buf[len] is the NUL */
	bool full;	  /* something did not fit: nothing more is written */
};

static void put(struct sink *s, const char *text, size_t n)
{
	size_t room = s->size - 1 - s->len;

	if (s->full)
		return;
	if (n > room) {
		s->full = true;
		n = room;
		/* never end inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
	}
	memcpy(s->buf + s->len, text, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

/* Operators whose characters look like brackets, longest first. */
static const char *const operators[] = {
	"<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "<", ">",
};

/* At name[i] begins the word "operator": the length of it and its symbol
 * ("operator<<"), or 0 when it is not an operator there. */
static size_t operator_length(const char *name, size_t i, size_t end)
{
	static const char word[] = "operator";
	size_t n = sizeof(word) - 1;

	if (end - i < n || memcmp(name + i, word, n))
		return 0;
	if (i > 0 && (name[i - 1] == '_' || (name[i - 1] >= 'a' && name[i - 1] <= 'z') ||
		      (name[i - 1] >= 'A' && name[i - 1] <= 'Z') ||
		      (name[i - 1] >= '0' && name[i - 1] <= '9')))
		return 0;
	for (size_t k = 0; k < sizeof(operators) / sizeof(operators[0]); k++) {
		size_t len = strlen(operators[k]);

		if (end - i - n >= len && !memcmp(name + i + n, operators[k], len))
			return n + len;
	}
	return n;
}

/* The index of the bracket that closes the one at name[open] (open '<' or
 * '('), or end when it does not close. Operators inside are skipped; in a
 * template argument list, parentheses hold their own '<' and '>'. */
static size_t closing(const char *name, size_t open, size_t end)
{
	char want = name[open] == '<' ? '>' : ')';
	size_t depth = 0, parens = 0;

	for (size_t i = open; i < end; i++) {
		size_t op = operator_length(name, i, end);
		char c = name[i];

		if (op) {
			i += op - 1;
			continue;
		}
		if (want == '>') {
			if (c == '(')
				parens++;
			else if (c == ')' && parens)
				parens--;
			else if (parens)
				continue;
			else if (c == '<')
				depth++;
			else if (c == '>' && --depth == 0)
				return i;
		} else {
			if (c == '(')
				depth++;
			else if (c == ')' && --depth == 0)
				return i;
		}
	}
	return end;
}

static void fold(const char *name, size_t begin, size_t end, struct sink *out);

/* UTF-8 characters in text. */
static size_t characters(const char *text)
{
	size_t n = 0;

	for (; *text; text++)
		n += ((unsigned char)*text & 0xc0) != 0x80;
	return n;
}

/* A parameter list name[open..close]: kept with its templates folded when
 * short, else "(…)". */
static void fold_params(const char *name, size_t open, size_t close, struct sink *out)
{
	size_t inner = close - open - 1;
	char *folded = malloc(inner * 2 + 8);
	struct sink tmp = { .buf = folded, .size = inner * 2 + 8 };

	if (!folded) {
		put(out, "(" ELLIPSIS ")", strlen("(" ELLIPSIS ")"));
		return;
	}
	folded[0] = '\0';
	fold(name, open + 1, close, &tmp);
	if (characters(folded) + 2 > RV_SHORT_NAME_PARAMS) {
		put(out, "(" ELLIPSIS ")", strlen("(" ELLIPSIS ")"));
	} else {
		put(out, "(", 1);
		put(out, folded, tmp.len);
		put(out, ")", 1);
	}
	free(folded);
}

static void fold(const char *name, size_t begin, size_t end, struct sink *out)
{
	size_t i = begin;

	while (i < end) {
		size_t op = operator_length(name, i, end), close;

		if (op) {
			put(out, name + i, op);
			i += op;
			continue;
		}
		if (name[i] != '<' && name[i] != '(') {
			put(out, name + i, 1);
			i++;
			continue;
		}
		close = closing(name, i, end);
		if (close >= end) {
			put(out, name + i, end - i); /* does not close: as it is */
			return;
		}
		if (close == i + 1)
			put(out, name + i, 2); /* "<>", "()" */
		else if (name[i] == '<')
			put(out, "<" ELLIPSIS ">", strlen("<" ELLIPSIS ">"));
		else
			fold_params(name, i, close, out);
		i = close + 1;
	}
}

char *rv_short_name(const char *name, char *out, size_t size)
{
	struct sink s = { .buf = out, .size = size };

	out[0] = '\0';
	if (size > 1)
		fold(name, 0, strlen(name), &s);
	return out;
}
