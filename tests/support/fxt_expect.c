/* fxt_expect.c: assertions on a trace read back (fxt_expect.h). For
 * Criterion tests only. */
#include "fxt_expect.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

const struct fxt_span *trace_span(const struct fxt_trace *t, const char *name, size_t nth)
{
	const struct fxt_span *s = fxt_find_span(t, FXT_ANY, FXT_ANY, name, nth);

	if (!s)
		fxt_trace_dump(t, stderr);
	cr_assert(s, "no span %s #%zu", name, nth);
	return s;
}

void expect_span(const struct fxt_trace *t, const char *name, size_t nth, uint64_t begin,
		 uint64_t end, const char *parent)
{
	const struct fxt_span *s = trace_span(t, name, nth);
	const struct fxt_span *p = fxt_span_parent(t, s);

	if (s->begin_ns != begin || s->end_ns != end ||
	    (parent ? !p || strcmp(p->name, parent) : p != NULL))
		fxt_trace_dump(t, stderr);
	cr_assert_eq(s->begin_ns, begin, "%s #%zu begins at %llu, not %llu", name, nth,
		     (unsigned long long)s->begin_ns, (unsigned long long)begin);
	cr_assert_eq(s->end_ns, end, "%s #%zu ends at %llu, not %llu", name, nth,
		     (unsigned long long)s->end_ns, (unsigned long long)end);
	if (parent) {
		cr_assert_not_null(p, "%s #%zu has no parent, not %s", name, nth, parent);
		cr_assert_str_eq(p->name, parent, "%s #%zu is in %s, not %s", name, nth, p->name,
				 parent);
	} else {
		cr_assert_null(p, "%s #%zu is in %s, not at the top", name, nth, p ? p->name : "");
	}
}
