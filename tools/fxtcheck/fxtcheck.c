/* fxtcheck: checks FXT files with the project's strict reader
 * (tests/support/fxt_reader.c), for make check-viewers.
 *
 *   fxtcheck FILE.fxt...
 *
 * The reader was written from the format's specification, not from
 * rearview's writer, and refuses what Perfetto would misread: records whose
 * size disagrees with their fields, string and thread references to entries
 * not defined earlier in the file, spans of one thread that overlap without
 * nesting (a child before its parent at the same begin included). For each
 * file it prints one line: the records' counts and the deepest nesting; it
 * exits 1 when any file was refused (with the reader's message: the byte
 * offset and what is wrong), 2 on a usage error.
 *
 * Not here: a second implementation of the format (none is packaged for
 * Debian or npm that reads FXT offline), or checks of what the spans mean.
 */
#include <stdio.h>

#include "fxt_reader.h"

static int check_file(const char *path)
{
	struct fxt_trace *t = NULL;
	char err[512];
	unsigned depth = 0;
	size_t threads = 0;

	if (fxt_read_file(path, &t, err, sizeof(err)) < 0) {
		printf("fxtcheck: %s: FAILED: %s\n", path, err);
		return 1;
	}
	for (size_t i = 0; i < t->nr_spans; i++)
		if (t->spans[i].depth + 1 > depth)
			depth = t->spans[i].depth + 1;
	threads = t->nr_threads;
	printf("fxtcheck: %s: ok: %zu events, %zu spans (nested, %u deep at most), %zu threads, "
	       "%zu string and %zu thread references, all defined before use\n",
	       path, t->nr_events, t->nr_spans, depth, threads,
	       t->stats.indexed_string_refs + t->stats.inline_string_refs,
	       t->stats.indexed_thread_refs + t->stats.inline_thread_refs);
	fxt_trace_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: fxtcheck FILE.fxt...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		failed |= check_file(argv[i]);
	return failed;
}
