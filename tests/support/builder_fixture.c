/* builder_fixture.c: the trace builder with its writer and reader, for the
 * builder's unit tests (builder_fixture.h). For Criterion tests only:
 * failures are test assertions. */
#include "builder_fixture.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void builder_fixture_open(struct builder_fixture *f)
{
	struct rv_symbolizer_options so = { 0 };
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/rv-builder-XXXXXX");
	fd = mkstemp(f->path);
	cr_assert_geq(fd, 0);
	close(fd);
	unlink(f->path);
	strcat(f->path, ".fxt");
	cr_assert_eq(rv_symbolizer_new(&f->sym, &so, &f->err), 0, "%s", f->err.message);
	cr_assert_eq(rv_trace_writer_open(&f->w, f->path, &f->err), 0, "%s", f->err.message);
	cr_assert_eq(rv_builder_new(&f->b, f->sym, f->w, &f->err), 0);
}

void builder_fixture_add(struct builder_fixture *f, const struct rv_event *ev)
{
	cr_assert_eq(rv_builder_add(f->b, ev, &f->err), 0, "%s", f->err.message);
}

struct fxt_trace *builder_fixture_finish(struct builder_fixture *f)
{
	struct fxt_trace *t = NULL;
	char err[256];

	cr_assert_eq(rv_builder_finish(f->b, &f->err), 0, "%s", f->err.message);
	cr_assert_eq(rv_trace_writer_commit(f->w, &f->err), 0, "%s", f->err.message);
	cr_assert_eq(fxt_read_file(f->path, &t, err, sizeof(err)), 0, "%s", err);
	return t;
}

uint64_t builder_fixture_self_ns(struct builder_fixture *f, const char *name)
{
	struct rv_top_function top[8];
	size_t n = rv_builder_top_functions(f->b, top, 8);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(top[i].name, name))
			return top[i].self_ns;
	return 0;
}

void builder_fixture_close(struct builder_fixture *f, struct fxt_trace *t)
{
	fxt_trace_free(t);
	rv_builder_free(f->b);
	rv_trace_writer_free(f->w);
	rv_symbolizer_free(f->sym);
	unlink(f->path);
}
