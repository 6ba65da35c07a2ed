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

static bool same_arg(const struct fxt_arg *x, const struct fxt_arg *y)
{
	if (strcmp(x->name, y->name) || x->type != y->type)
		return false;
	switch (x->type) {
	case FXT_ARG_INT32:
	case FXT_ARG_INT64:
		return x->i == y->i;
	case FXT_ARG_UINT32:
	case FXT_ARG_UINT64:
	case FXT_ARG_POINTER:
	case FXT_ARG_KOID:
		return x->u == y->u;
	case FXT_ARG_STRING:
		return x->s_len == y->s_len && !memcmp(x->s, y->s, x->s_len);
	case FXT_ARG_BOOL:
		return x->b == y->b;
	case FXT_ARG_DOUBLE:
		return x->d == y->d;
	default:
		return true;
	}
}

static bool same_args(const struct fxt_arg *x, size_t nx, const struct fxt_arg *y, size_t ny)
{
	if (nx != ny)
		return false;
	for (size_t i = 0; i < nx; i++)
		if (!same_arg(&x[i], &y[i]))
			return false;
	return true;
}

void expect_same_events(const struct fxt_trace *a, const struct fxt_trace *b, const char *what)
{
	cr_assert_eq(a->nr_spans, b->nr_spans, "%s: %zu spans, then %zu", what, a->nr_spans,
		     b->nr_spans);
	for (size_t i = 0; i < a->nr_spans; i++) {
		const struct fxt_span *x = &a->spans[i], *y = &b->spans[i];

		cr_assert(x->pid == y->pid && x->tid == y->tid && !strcmp(x->name, y->name) &&
				  !strcmp(x->category, y->category) && x->begin_ns == y->begin_ns &&
				  x->end_ns == y->end_ns,
			  "%s: span %zu is %s [%llu/%llu] %llu..%llu ns, then %s [%llu/%llu] "
			  "%llu..%llu ns",
			  what, i, x->name, (unsigned long long)x->pid, (unsigned long long)x->tid,
			  (unsigned long long)x->begin_ns, (unsigned long long)x->end_ns, y->name,
			  (unsigned long long)y->pid, (unsigned long long)y->tid,
			  (unsigned long long)y->begin_ns, (unsigned long long)y->end_ns);
		cr_assert(same_args(x->args, x->nr_args, y->args, y->nr_args),
			  "%s: span %zu (%s) has other arguments (%zu, then %zu)", what, i, x->name,
			  x->nr_args, y->nr_args);
	}
	cr_assert_eq(a->nr_instants, b->nr_instants, "%s: %zu instants, then %zu", what,
		     a->nr_instants, b->nr_instants);
	for (size_t i = 0; i < a->nr_instants; i++) {
		const struct fxt_instant *x = &a->instants[i], *y = &b->instants[i];

		cr_assert(x->pid == y->pid && x->tid == y->tid && !strcmp(x->name, y->name) &&
				  x->ts_ns == y->ts_ns &&
				  same_args(x->args, x->nr_args, y->args, y->nr_args),
			  "%s: instant %zu is %s at %llu ns, then %s at %llu ns", what, i, x->name,
			  (unsigned long long)x->ts_ns, y->name, (unsigned long long)y->ts_ns);
	}
}
