/* program_counts.c: the PT target programs' own counts against a trace; see
 * program_counts.h. */
#include "program_counts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolizer.h"

/* Up to "+0x" (perf) or "(" (demangled C++ arguments, which the two may
 * spell differently). */
static size_t function_len(const char *name)
{
	size_t n = 0;

	while (name[n] && name[n] != '(' && strncmp(name + n, "+0x", 3))
		n++;
	return n;
}

bool pc_same_function(const char *a, const char *b)
{
	char *demangled = NULL, plain[512];
	size_t la, lb;
	bool same;

	if (!a || !b)
		return false;
	if (!strncmp(b, "_Z", 2)) {
		/* rv_demangle wants the bare symbol, without perf's "+0x..". */
		snprintf(plain, sizeof(plain), "%.*s", (int)strcspn(b, "+"), b);
		demangled = rv_demangle(plain);
		if (demangled)
			b = demangled;
	}
	la = function_len(a);
	lb = function_len(b);
	same = la == lb && !strncmp(a, b, la);
	free(demangled);
	return same;
}

long pc_check_trace(const char *program_output, const struct fxt_trace *t, char *why,
		    size_t why_size)
{
	char *text = strdup(program_output), *save = NULL;
	long checked = 0;

	if (!text) {
		snprintf(why, why_size, "out of memory");
		return -1;
	}
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char function[128];
		unsigned long expected;
		size_t spans = 0;

		if (sscanf(line, "count %127s %lu", function, &expected) != 2 &&
		    sscanf(line, "entered %127s %lu", function, &expected) != 2)
			continue;
		for (size_t i = 0; i < t->nr_spans; i++)
			spans += pc_same_function(t->spans[i].name, function);
		if (spans != expected) {
			snprintf(why, why_size,
				 "the program counted %lu for %s, the trace has %zu spans of it",
				 expected, function, spans);
			checked = -1;
			break;
		}
		checked++;
	}
	free(text);
	return checked;
}
