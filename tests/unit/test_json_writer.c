/* test_json_writer.c: the Chrome JSON writer, read back with jansson.
 *
 * Drives the writer's public API (write/trace_writer.h) with a ".json" or
 * ".json.gz" path and parses the file with jansson, which refuses invalid
 * JSON and invalid UTF-8, so a successful parse is itself the first check.
 * Then the Trace Event Format's rules: "X" events with ts and dur in
 * microseconds (fractional, so that nanoseconds survive), "M" events naming
 * processes and threads, instants, args, and names escaped so that they come
 * back unchanged.
 *
 * Not here: the FXT writer (test_fxt_writer.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>

#include <jansson.h>
#include <zlib.h>

#include "test_files.h"
#include "write/trace_writer.h"

struct json_file {
	unsigned char *bytes;
	size_t len;
	bool gzip;
};

/* The file's contents, gunzipped when it starts with the gzip magic. */
static struct json_file read_json_file(const char *path)
{
	struct json_file f = { 0 };
	unsigned char head[2] = { 0 };
	size_t cap = 1 << 16;
	FILE *raw = fopen(path, "rb");
	gzFile gz;
	int n;

	cr_assert_not_null(raw, "%s: %s", path, strerror(errno));
	f.gzip = fread(head, 1, 2, raw) == 2 && head[0] == 0x1f && head[1] == 0x8b;
	fclose(raw);
	gz = gzopen(path, "rb"); /* reads plain files unchanged */
	cr_assert_not_null(gz);
	f.bytes = malloc(cap);
	while ((n = gzread(gz, f.bytes + f.len, (unsigned)(cap - f.len))) > 0) {
		f.len += (size_t)n;
		if (f.len == cap) {
			cap *= 2;
			f.bytes = realloc(f.bytes, cap);
			cr_assert_not_null(f.bytes);
		}
	}
	cr_assert_eq(n, 0, "%s: gzip error", path);
	cr_assert_eq(gzclose(gz), Z_OK, "%s: gzip stream is damaged", path);
	return f;
}

static json_t *parse(const struct json_file *f, size_t flags)
{
	json_error_t error;
	json_t *root = json_loadb((const char *)f->bytes, f->len, flags, &error);

	cr_assert_not_null(root, "the writer's output is not valid JSON: %s at line %d column %d",
			   error.text, error.line, error.column);
	return root;
}

/* The array of events: the root itself, or its "traceEvents". */
static json_t *events_of(json_t *root)
{
	json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");

	cr_assert(json_is_array(events), "no traceEvents array");
	return events;
}

static const char *str_field(json_t *event, const char *key)
{
	json_t *v = json_object_get(event, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool is_instant(const char *ph)
{
	return ph && (!strcmp(ph, "i") || !strcmp(ph, "I"));
}

/* The nth event with this phase (any instant phase for "i") and name. */
static json_t *find_event(json_t *events, const char *ph, const char *name, size_t nth)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e)
	{
		const char *eph = str_field(e, "ph");
		const char *ename = str_field(e, "name");

		if (!eph || !ename || strcmp(ename, name) != 0)
			continue;
		if (strcmp(ph, "i") == 0 ? !is_instant(eph) : strcmp(eph, ph) != 0)
			continue;
		if (nth-- == 0)
			return e;
	}
	return NULL;
}

static size_t count_phase(json_t *events, const char *ph)
{
	size_t i, n = 0;
	json_t *e;

	json_array_foreach(events, i, e)
	{
		const char *eph = str_field(e, "ph");

		n += eph && (strcmp(ph, "i") == 0 ? is_instant(eph) : strcmp(eph, ph) == 0);
	}
	return n;
}

static json_int_t int_field(json_t *event, const char *key)
{
	json_t *v = json_object_get(event, key);

	cr_assert(json_is_integer(v), "field %s is not an integer", key);
	return json_integer_value(v);
}

/* A time in microseconds read the way Perfetto's JSON tokenizer reads it:
 * rounded to the nearest nanosecond, llround(us * 1000). */
static uint64_t perfetto_ns(json_t *event, const char *key)
{
	json_t *v = json_object_get(event, key);

	cr_assert(json_is_number(v), "field %s is missing or not a number", key);
	return (uint64_t)llround(json_number_value(v) * 1000.0);
}

/* A time must give back the nanoseconds it came from, in Perfetto. */
static void check_us(json_t *event, const char *key, uint64_t ns)
{
	cr_assert_eq(perfetto_ns(event, key), ns, "%s is %.10f us; %" PRIu64 " ns is %.3f us", key,
		     json_number_value(json_object_get(event, key)), ns, (double)ns / 1000);
}

/* ts + dur, as a reader computes it in doubles. */
static double end_us(json_t *event)
{
	return json_number_value(json_object_get(event, "ts")) +
	       json_number_value(json_object_get(event, "dur"));
}

/* Perfetto ends a span at its rounded ts plus its rounded dur. */
static void check_end(json_t *event, uint64_t ns)
{
	uint64_t end = perfetto_ns(event, "ts") + perfetto_ns(event, "dur");

	cr_assert_eq(end, ns, "ends at %" PRIu64 " ns in Perfetto (%.10f us), not %" PRIu64 " ns",
		     end, end_us(event), ns);
}

static struct rv_trace_writer *json_open(const char *path)
{
	struct rv_trace_writer *w = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_open(&w, path, &err), 0, "open %s: %s", path, err.message);
	return w;
}

static void json_commit(struct rv_trace_writer *w)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_commit(w, &err), 0, "commit: %s", err.message);
}

static void json_span(struct rv_trace_writer *w, uint32_t pid, uint32_t tid, const char *name,
		      uint64_t begin, uint64_t end, const struct rv_arg *args, size_t nr_args)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_span(w, pid, tid, name, begin, end, args, nr_args, &err), 0,
		     "span: %s", err.message);
}

/* Writes, commits and parses; the caller frees the root and path. */
static json_t *write_and_parse(char *dir, const char *file, void (*fill)(struct rv_trace_writer *w),
			       size_t flags)
{
	char *path = path_join(dir, file);
	struct rv_trace_writer *w = json_open(path);
	struct json_file f;
	json_t *root;

	fill(w);
	json_commit(w);
	rv_trace_writer_free(w);
	f = read_json_file(path);
	root = parse(&f, flags);
	free(f.bytes);
	free(path);
	return root;
}

static void fill_basic(struct rv_trace_writer *w)
{
	struct rv_error err = { 0 };

	cr_assert_eq(rv_trace_writer_process(w, 100, "myproc", &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_thread(w, 100, 101, "worker", &err), 0, "%s", err.message);
	json_span(w, 100, 101, "outer", 1234567, 9876543, NULL, 0);
	json_span(w, 100, 101, "inner", 1234567, 1234568, NULL, 0);
	json_span(w, 100, 102, "late", 1000000000123ull, 1000000005000ull, NULL, 0);
	json_span(w, 100, 102, "zero", 5, 5, NULL, 0);
}

Test(json_writer, writes_complete_events_in_microseconds)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_basic, 0);
	json_t *events = events_of(root), *e;

	cr_assert_eq(count_phase(events, "X"), 4);
	e = find_event(events, "X", "outer", 0);
	cr_assert_not_null(e);
	check_us(e, "ts", 1234567);
	check_end(e, 9876543);
	cr_assert_eq(int_field(e, "pid"), 100);
	cr_assert_eq(int_field(e, "tid"), 101);
	e = find_event(events, "X", "inner", 0);
	cr_assert_not_null(e);
	check_us(e, "ts", 1234567);
	check_end(e, 1234568);
	e = find_event(events, "X", "late", 0);
	cr_assert_not_null(e);
	check_us(e, "ts", 1000000000123ull);
	check_end(e, 1000000005000ull);
	cr_assert_eq(int_field(e, "tid"), 102);
	e = find_event(events, "X", "zero", 0);
	cr_assert_not_null(e);
	cr_assert_eq(json_number_value(json_object_get(e, "dur")), 0);
	json_decref(root);
	free_temp_dir(dir);
}

/* Spans that end together, at every nanosecond offset: a reader's ts + dur
 * in doubles (speedscope's, after it subtracts the first ts) gives bit for
 * bit the same end for all of them, and distinct ends stay in order. With
 * three decimals, 1.001 + 2.002 != 3.003 in doubles. */
static void fill_equal_ends(struct rv_trace_writer *w)
{
	for (uint64_t i = 0; i < 2000; i++) {
		uint64_t end = 1000000007ull + 7919 * i;

		json_span(w, 1, 2, "child", end - 1001 - i % 997, end, NULL, 0);
		json_span(w, 1, 2, "parent", end - 3003 - i % 1009, end, NULL, 0);
	}
}

Test(json_writer, ends_that_are_equal_stay_equal_in_doubles)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_equal_ends, 0);
	json_t *events = events_of(root);
	double first =
		json_number_value(json_object_get(find_event(events, "X", "parent", 0), "ts"));
	double last_end = -1;

	for (size_t i = 0; i < 2000; i++) {
		json_t *child = find_event(events, "X", "child", i);
		json_t *parent = find_event(events, "X", "parent", i);
		double c = json_number_value(json_object_get(child, "ts")) - first +
			   json_number_value(json_object_get(child, "dur"));
		double p = json_number_value(json_object_get(parent, "ts")) - first +
			   json_number_value(json_object_get(parent, "dur"));

		cr_assert(c == p, "pair %zu: child ends at %.12f, parent at %.12f", i, c, p);
		cr_assert_gt(p, last_end);
		last_end = p;
		check_end(parent, 1000000007ull + 7919 * i);
		check_us(child, "ts", 1000000007ull + 7919 * i - 1001 - i % 997);
	}
	json_decref(root);
	free_temp_dir(dir);
}

/* Equal nanoseconds at different depths: a child that begins and ends with
 * its parent is strictly inside it in a reader's doubles, and a span that
 * begins as its sibling ends begins after that end; every time still reads
 * as its nanosecond in Perfetto (rounded ts, and ts + rounded dur). */
static void fill_depths(struct rv_trace_writer *w)
{
	struct rv_error err = { 0 };

	json_span(w, 1, 2, "parent", 1000, 3000, NULL, 0);
	cr_assert_eq(
		rv_trace_writer_nested_span(w, 1, 2, NULL, "child", 1000, 3000, 1, NULL, 0, &err),
		0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_nested_span(w, 1, 2, NULL, "grandchild", 1000, 2000, 2, NULL,
						 0, &err),
		     0, "%s", err.message);
	cr_assert_eq(
		rv_trace_writer_nested_span(w, 1, 2, NULL, "sibling", 2000, 3000, 2, NULL, 0, &err),
		0, "%s", err.message);
	cr_assert_eq(
		rv_trace_writer_nested_span(w, 1, 2, NULL, "zero", 2000, 2000, 3, NULL, 0, &err), 0,
		"%s", err.message);
	/* deep stacks: the last depths with an offset of their own, and one
	 * past them */
	cr_assert_eq(
		rv_trace_writer_nested_span(w, 1, 2, NULL, "deep", 5000, 5001, 254, NULL, 0, &err),
		0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_nested_span(w, 1, 2, NULL, "deeper", 5000, 5001, 255, NULL, 0,
						 &err),
		     0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_nested_span(w, 1, 2, NULL, "deepest", 5000, 5001, 4000, NULL,
						 0, &err),
		     0, "%s", err.message);
}

Test(json_writer, equal_times_at_different_depths_nest_strictly)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_depths, 0);
	json_t *events = events_of(root);
	json_t *parent = find_event(events, "X", "parent", 0);
	json_t *child = find_event(events, "X", "child", 0);
	json_t *grandchild = find_event(events, "X", "grandchild", 0);
	json_t *sibling = find_event(events, "X", "sibling", 0);
	json_t *zero = find_event(events, "X", "zero", 0);
	double ts_parent = json_number_value(json_object_get(parent, "ts"));
	double ts_child = json_number_value(json_object_get(child, "ts"));

	cr_assert_gt(ts_child, ts_parent);
	cr_assert_lt(end_us(child), end_us(parent));
	cr_assert_gt(json_number_value(json_object_get(grandchild, "ts")), ts_child);
	cr_assert_lt(end_us(grandchild), json_number_value(json_object_get(sibling, "ts")),
		     "the sibling begins after the grandchild's end");
	cr_assert_lt(end_us(sibling), end_us(child));
	cr_assert_gt(json_number_value(json_object_get(zero, "ts")),
		     json_number_value(json_object_get(sibling, "ts")));
	cr_assert_eq(json_number_value(json_object_get(zero, "dur")), 0);
	check_us(parent, "ts", 1000);
	check_us(child, "ts", 1000);
	check_us(grandchild, "ts", 1000);
	check_us(sibling, "ts", 2000);
	check_us(zero, "ts", 2000);
	check_end(parent, 3000);
	check_end(child, 3000);
	check_end(grandchild, 2000);
	check_end(sibling, 3000);
	/* at any depth, Perfetto's rounding gives the nanoseconds back, and a
	 * 1 ns span keeps its length */
	for (int i = 0; i < 3; i++) {
		json_t *e = find_event(events, "X",
				       (const char *[]){ "deep", "deeper", "deepest" }[i], 0);

		check_us(e, "ts", 5000);
		check_end(e, 5001);
	}
	cr_assert_gt(json_number_value(json_object_get(find_event(events, "X", "deeper", 0), "ts")),
		     json_number_value(json_object_get(find_event(events, "X", "deep", 0), "ts")));
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_categories(struct rv_trace_writer *w)
{
	struct rv_error err = { 0 };
	struct rv_arg arg = { .name = "nr", .kind = RV_ARG_UINT, .u = 0 };

	cr_assert_eq(rv_trace_writer_category_span(w, 1, 2, RV_TRACE_CATEGORY_KERNEL,
						   "entry_SYSCALL_64", 10, 20, NULL, 0, &err),
		     0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_category_span(w, 1, 2, "ker\"nel", "[syscall read]", 30, 40,
						   &arg, 1, &err),
		     0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_category_span(w, 1, 2, "", "work", 50, 60, NULL, 0, &err), 0,
		     "%s", err.message);
	json_span(w, 1, 2, "main", 0, 100, NULL, 0);
}

/* "cat" where a span has a category, escaped like any string; none
 * where it has none. */
Test(json_writer, writes_span_categories)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_categories, 0);
	json_t *events = events_of(root), *e;

	e = find_event(events, "X", "entry_SYSCALL_64", 0);
	cr_assert_not_null(e);
	cr_assert_str_eq(json_string_value(json_object_get(e, "cat")), "kernel");
	e = find_event(events, "X", "[syscall read]", 0);
	cr_assert_not_null(e);
	cr_assert_str_eq(json_string_value(json_object_get(e, "cat")), "ker\"nel");
	cr_assert_not_null(json_object_get(e, "args"));
	cr_assert_null(json_object_get(find_event(events, "X", "work", 0), "cat"));
	cr_assert_null(json_object_get(find_event(events, "X", "main", 0), "cat"));
	json_decref(root);
	free_temp_dir(dir);
}

Test(json_writer, names_processes_and_threads_with_metadata_events)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_basic, 0);
	json_t *events = events_of(root), *e, *args;

	e = find_event(events, "M", "process_name", 0);
	cr_assert_not_null(e, "no process_name metadata event");
	cr_assert_eq(int_field(e, "pid"), 100);
	args = json_object_get(e, "args");
	cr_assert_str_eq(str_field(args, "name"), "myproc");
	e = find_event(events, "M", "thread_name", 0);
	cr_assert_not_null(e, "no thread_name metadata event");
	cr_assert_eq(int_field(e, "pid"), 100);
	cr_assert_eq(int_field(e, "tid"), 101);
	args = json_object_get(e, "args");
	cr_assert_str_eq(str_field(args, "name"), "worker");
	cr_assert_null(find_event(events, "M", "thread_name", 1), "thread 102 was never named");
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_instants(struct rv_trace_writer *w)
{
	struct rv_arg args[] = { { .name = "why", .kind = RV_ARG_STRING, .s = "trigger" } };
	struct rv_error err = { 0 };

	json_span(w, 1, 2, "main", 0, 100000, NULL, 0);
	cr_assert_eq(rv_trace_writer_instant(w, 1, 2, "mark", 1500, args, 1, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_trace_writer_instant(w, 1, 3, "bare", 7, NULL, 0, &err), 0, "%s",
		     err.message);
}

Test(json_writer, writes_thread_instants)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_instants, 0);
	json_t *events = events_of(root), *e;
	const char *scope;

	cr_assert_eq(count_phase(events, "i"), 2);
	e = find_event(events, "i", "mark", 0);
	cr_assert_not_null(e);
	check_us(e, "ts", 1500);
	cr_assert_eq(int_field(e, "pid"), 1);
	cr_assert_eq(int_field(e, "tid"), 2);
	scope = str_field(e, "s");
	cr_assert(!scope || strcmp(scope, "t") == 0, "instant scope '%s' is not the thread's",
		  scope);
	cr_assert_str_eq(str_field(json_object_get(e, "args"), "why"), "trigger");
	e = find_event(events, "i", "bare", 0);
	cr_assert_not_null(e);
	check_us(e, "ts", 7);
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_args(struct rv_trace_writer *w)
{
	struct rv_arg args[] = {
		{ .name = "small", .kind = RV_ARG_INT, .i = -5 },
		{ .name = "min", .kind = RV_ARG_INT, .i = INT64_MIN },
		{ .name = "u", .kind = RV_ARG_UINT, .u = 4000000000u },
		{ .name = "addr", .kind = RV_ARG_POINTER, .u = 0x7f12345678abull },
		{ .name = "file", .kind = RV_ARG_STRING, .s = "main.c:42" },
		{ .name = "empty", .kind = RV_ARG_STRING, .s = "" },
	};

	json_span(w, 1, 2, "f", 10, 20, args, sizeof(args) / sizeof(args[0]));
}

Test(json_writer, writes_all_four_argument_kinds)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_args, 0);
	json_t *e = find_event(events_of(root), "X", "f", 0), *args;
	const char *addr;

	cr_assert_not_null(e);
	args = json_object_get(e, "args");
	cr_assert(json_is_object(args), "the span has no args object");
	cr_assert_eq(int_field(args, "small"), -5);
	cr_assert_eq(int_field(args, "min"), INT64_MIN);
	cr_assert_eq(int_field(args, "u"), 4000000000ll);
	addr = str_field(args, "addr");
	cr_assert_not_null(addr, "a pointer is shown as a hex string");
	cr_assert(strncmp(addr, "0x", 2) == 0, "pointer shown as '%s'", addr);
	cr_assert_eq(strtoull(addr, NULL, 16), 0x7f12345678abull, "pointer shown as '%s'", addr);
	cr_assert_str_eq(str_field(args, "file"), "main.c:42");
	cr_assert_str_eq(str_field(args, "empty"), "");
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_huge_uint(struct rv_trace_writer *w)
{
	struct rv_arg arg = { .name = "umax", .kind = RV_ARG_UINT, .u = UINT64_MAX };

	json_span(w, 1, 2, "f", 10, 20, &arg, 1);
}

/* jansson's integers are signed 64-bit, so the document is parsed with
 * integers as reals; a decimal string is accepted too. */
Test(json_writer, writes_the_largest_unsigned_argument)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_huge_uint, JSON_DECODE_INT_AS_REAL);
	json_t *e = find_event(events_of(root), "X", "f", 0);
	json_t *v = json_object_get(json_object_get(e, "args"), "umax");

	cr_assert_not_null(v);
	if (json_is_string(v))
		cr_assert_str_eq(json_string_value(v), "18446744073709551615");
	else
		cr_assert(json_is_number(v) && json_number_value(v) == 18446744073709551615.0,
			  "UINT64_MAX written as something else");
	json_decref(root);
	free_temp_dir(dir);
}

static const char *const tricky_names[] = {
	"quote\"d",
	"back\\slash\\",
	"ctl\x01\x02\x1f\x7f end",
	"nl\n tab\t cr\r bs\b ff\f",
	"slash / and </script>",
	"utf8 é 日本 😀",
	"",
};

static void fill_tricky(struct rv_trace_writer *w)
{
	size_t n = sizeof(tricky_names) / sizeof(tricky_names[0]);
	struct rv_error err = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct rv_arg arg = { .name = tricky_names[i],
				      .kind = RV_ARG_STRING,
				      .s = tricky_names[n - 1 - i] };

		json_span(w, 1, 2, tricky_names[i], 10 * i, 10 * i + 5, &arg, 1);
	}
	cr_assert_eq(rv_trace_writer_process(w, 1, "p\"r\\o\nc", &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_thread(w, 1, 2, "t\x01h\"r", &err), 0, "%s", err.message);
}

Test(json_writer, escapes_quotes_backslashes_and_control_characters)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_tricky, 0);
	json_t *events = events_of(root), *e;
	size_t n = sizeof(tricky_names) / sizeof(tricky_names[0]);

	for (size_t i = 0; i < n; i++) {
		e = find_event(events, "X", tricky_names[i], 0);
		cr_assert_not_null(e, "span %zu's name did not come back unchanged", i);
		check_us(e, "ts", 10 * i);
		cr_assert_str_eq(str_field(json_object_get(e, "args"), tricky_names[i]),
				 tricky_names[n - 1 - i], "argument of span %zu", i);
	}
	e = find_event(events, "M", "process_name", 0);
	cr_assert_not_null(e);
	cr_assert_str_eq(str_field(json_object_get(e, "args"), "name"), "p\"r\\o\nc");
	e = find_event(events, "M", "thread_name", 0);
	cr_assert_not_null(e);
	cr_assert_str_eq(str_field(json_object_get(e, "args"), "name"), "t\x01h\"r");
	json_decref(root);
	free_temp_dir(dir);
}

static const char *const invalid_utf8[] = {
	"lone\xff byte",	  /* never valid */
	"cut\xc3",		  /* truncated sequence at the end */
	"overlong\xc0\xaf/",	  /* overlong '/' */
	"surrogate\xed\xa0\x80!", /* UTF-16 surrogate */
	"big\xf4\x90\x80\x80.",	  /* above U+10FFFF */
	"cont\x80\x80 only",	  /* continuation bytes alone */
};

static void fill_invalid_utf8(struct rv_trace_writer *w)
{
	size_t n = sizeof(invalid_utf8) / sizeof(invalid_utf8[0]);
	struct rv_error err = { 0 };

	for (size_t i = 0; i < n; i++) {
		struct rv_arg arg = { .name = "v", .kind = RV_ARG_STRING, .s = invalid_utf8[i] };

		json_span(w, 1, 2, invalid_utf8[i], 10 * i, 10 * i + 5, &arg, 1);
	}
	cr_assert_eq(rv_trace_writer_thread(w, 1, 2, "th\xfe", &err), 0, "%s", err.message);
}

/* The ASCII before the first bad byte and after the last one survive. */
static void check_mangled(const char *got, const char *original)
{
	size_t len = strlen(original), head = 0, tail = 0;

	while (head < len && (unsigned char)original[head] < 0x80)
		head++;
	while (tail < len && (unsigned char)original[len - 1 - tail] < 0x80)
		tail++;
	cr_assert_not_null(got);
	cr_assert_eq(strncmp(got, original, head), 0, "'%s' lost the start of '%.*s'", got,
		     (int)head, original);
	cr_assert_geq(strlen(got), tail);
	cr_assert_eq(strcmp(got + strlen(got) - tail, original + len - tail), 0,
		     "'%s' lost the end of the name", got);
}

Test(json_writer, writes_valid_utf8_for_invalid_names)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_invalid_utf8, 0);
	json_t *events = events_of(root), *e;
	size_t n = sizeof(invalid_utf8) / sizeof(invalid_utf8[0]), i, k = 0;

	/* jansson refused nothing, so every string is valid UTF-8; now check
	 * that the spans are there, in order, with what could be kept. */
	json_array_foreach(events, i, e)
	{
		const char *ph = str_field(e, "ph");

		if (!ph || strcmp(ph, "X") != 0)
			continue;
		cr_assert_lt(k, n);
		check_mangled(str_field(e, "name"), invalid_utf8[k]);
		check_mangled(str_field(json_object_get(e, "args"), "v"), invalid_utf8[k]);
		k++;
	}
	cr_assert_eq(k, n);
	e = find_event(events, "M", "thread_name", 0);
	cr_assert_not_null(e);
	check_mangled(str_field(json_object_get(e, "args"), "name"), "th\xfe");
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_many(struct rv_trace_writer *w)
{
	char name[600];

	for (unsigned i = 0; i < 20000; i++) {
		/* long names full of escapes, to cross any buffer boundary */
		int len = snprintf(name, sizeof(name), "f%u\"\\", i);

		memset(name + len, i % 2 ? '"' : 'a', 500);
		name[len + 500] = '\0';
		json_span(w, 1, 2, name, 10ull * i, 10ull * i + 5, NULL, 0);
	}
}

Test(json_writer, stays_valid_over_many_long_escaped_names)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_many, 0);
	json_t *events = events_of(root), *e;
	size_t i, k = 0;
	char prefix[32];

	json_array_foreach(events, i, e)
	{
		const char *ph = str_field(e, "ph"), *name = str_field(e, "name");

		if (!ph || strcmp(ph, "X") != 0)
			continue;
		snprintf(prefix, sizeof(prefix), "f%zu\"\\", k);
		cr_assert_eq(strncmp(name, prefix, strlen(prefix)), 0, "span %zu is '%.20s'", k,
			     name);
		cr_assert_eq(strlen(name), strlen(prefix) + 500);
		check_us(e, "ts", 10ull * k);
		k++;
	}
	cr_assert_eq(k, 20000);
	json_decref(root);
	free_temp_dir(dir);
}

static void fill_nothing(struct rv_trace_writer *w)
{
}

Test(json_writer, writes_a_valid_empty_trace)
{
	char *dir = new_temp_dir("rv-json-writer");
	json_t *root = write_and_parse(dir, "t.json", fill_nothing, 0);

	cr_assert_eq(count_phase(events_of(root), "X"), 0);
	json_decref(root);
	free_temp_dir(dir);
}

Test(json_writer, writes_gzip_for_json_gz)
{
	char *dir = new_temp_dir("rv-json-writer"), *path = path_join(dir, "t.json.gz");
	struct rv_trace_writer *w = json_open(path);
	struct rv_trace_writer_stats stats;
	struct json_file f;
	struct stat st;
	json_t *root;

	fill_basic(w);
	fill_many(w);
	json_commit(w);
	rv_trace_writer_stats(w, &stats);
	rv_trace_writer_free(w);
	f = read_json_file(path);
	cr_assert(f.gzip, "a .json.gz file must be gzip-compressed");
	cr_assert_eq(stats.bytes, f.len, "stats.bytes %" PRIu64 " but %zu bytes of JSON",
		     stats.bytes, f.len);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_lt((size_t)st.st_size, f.len / 4);
	root = parse(&f, 0);
	cr_assert_eq(count_phase(events_of(root), "X"), 4 + 20000);
	cr_assert_not_null(find_event(events_of(root), "X", "outer", 0));
	json_decref(root);
	free(f.bytes);
	free(path);
	free_temp_dir(dir);
}

Test(json_writer, writes_plain_text_for_json)
{
	char *dir = new_temp_dir("rv-json-writer"), *path = path_join(dir, "t.json");
	struct rv_trace_writer *w = json_open(path);
	struct json_file f;
	json_t *root;

	fill_basic(w);
	json_commit(w);
	rv_trace_writer_free(w);
	f = read_json_file(path);
	cr_assert(!f.gzip, "a .json file must not be compressed");
	root = parse(&f, 0);
	json_decref(root);
	free(f.bytes);
	free(path);
	free_temp_dir(dir);
}

Test(json_writer, leaves_nothing_at_the_path_before_commit_or_after_abort)
{
	char *dir = new_temp_dir("rv-json-writer"), *path = path_join(dir, "t.json");
	struct rv_trace_writer *w = json_open(path);
	struct stat st;

	fill_basic(w);
	cr_assert_neq(stat(path, &st), 0, "the output path exists before commit");
	rv_trace_writer_abort(w);
	rv_trace_writer_free(w);
	cr_assert_neq(stat(path, &st), 0, "abort left a file at the output path");
	cr_assert_eq(dir_entries(dir), 0, "abort left a temporary file");

	w = json_open(path);
	fill_basic(w);
	json_commit(w);
	rv_trace_writer_free(w);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(dir_entries(dir), 1, "a temporary file was left beside the trace");
	free(path);
	free_temp_dir(dir);
}

/* What the writer's text of grid points should be, by long double
 * arithmetic (exact below 2^64 points): grid/2^20 us in decimal, without
 * trailing zeros. */
static void expected_us(char *buf, size_t size, uint64_t grid)
{
	size_t n = (size_t)snprintf(buf, size, "%.20Lf", (long double)grid / 1048576.0L);

	while (buf[n - 1] == '0')
		buf[--n] = '\0';
	if (buf[n - 1] == '.')
		buf[--n] = '\0';
}

static uint64_t grid_of(uint64_t ns)
{
	return (ns / 1000 << 20) + ((ns % 1000 << 20) + 999) / 1000;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* Each number's text, digit for digit: times on the grid at every depth
 * (the fraction's every length), pids, tids and integer arguments of every
 * size, names plain and not. */
Test(json_writer, writes_every_number_digit_for_digit)
{
	enum { SPANS = 20000 };
	char *dir = new_temp_dir("rv-json-writer"), *path = path_join(dir, "t.json");
	struct rv_trace_writer *w = json_open(path);
	struct json_file f;
	const char *at;
	char want[128], name[64];

	for (uint64_t k = 0; k < SPANS; k++) {
		uint64_t x = mix(k + 1), begin = x >> (24 + k % 24), end = begin + (x >> 40) % 5000;
		struct rv_arg args[2] = {
			{ .name = "i", .kind = RV_ARG_INT, .i = (int64_t)mix(x) >> (k % 64) },
			{ .name = "u", .kind = RV_ARG_UINT, .u = mix(x + 1) >> (k % 64) },
		};
		struct rv_error err = { 0 };

		snprintf(name, sizeof(name), k % 3 ? "s%" PRIu64 : "s\"%" PRIu64, k);
		cr_assert_eq(rv_trace_writer_nested_span(w, 1 + (uint32_t)(x >> 8) % 100000,
							 (uint32_t)(x >> 32) >> (k % 32), NULL,
							 name, begin, end, (uint32_t)(k % 300),
							 args, 2, &err),
			     0, "%s", err.message);
	}
	json_commit(w);
	rv_trace_writer_free(w);
	f = read_json_file(path);
	f.bytes = realloc(f.bytes, f.len + 1);
	f.bytes[f.len] = '\0';
	at = (const char *)f.bytes;
	for (uint64_t k = 0; k < SPANS; k++) {
		uint64_t x = mix(k + 1), begin = x >> (24 + k % 24), end = begin + (x >> 40) % 5000;
		uint64_t inner = k % 300 < 255 ? k % 300 : 255;
		uint64_t ts = grid_of(begin) + inner,
			 stop = end > begin ? grid_of(end) - inner : ts;
		size_t len;

		snprintf(name, sizeof(name), k % 3 ? "\"s%" PRIu64 "\"" : "\"s\\\"%" PRIu64 "\"",
			 k);
		at = strstr(at, name);
		cr_assert_not_null(at, "span %" PRIu64 " is missing", k);
		len = (size_t)snprintf(want, sizeof(want), ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32,
				       1 + (uint32_t)(x >> 8) % 100000,
				       (uint32_t)(x >> 32) >> (k % 32));
		cr_assert_eq(strncmp(at + strlen(name), want, len), 0, "span %" PRIu64 ": %.60s", k,
			     at);
		at += strlen(name) + len;
		cr_assert_eq(strncmp(at, ",\"ts\":", 6), 0);
		at += 6;
		expected_us(want, sizeof(want), ts);
		cr_assert_eq(strncmp(at, want, strlen(want)), 0,
			     "span %" PRIu64 ": ts %.30s, not %s", k, at, want);
		at += strlen(want);
		cr_assert_eq(strncmp(at, ",\"dur\":", 7), 0, "span %" PRIu64 ": %.30s", k, at);
		at += 7;
		expected_us(want, sizeof(want), stop - ts);
		cr_assert_eq(strncmp(at, want, strlen(want)), 0,
			     "span %" PRIu64 ": dur %.30s, not %s", k, at, want);
		at += strlen(want);
		len = (size_t)snprintf(want, sizeof(want),
				       ",\"args\":{\"i\":%" PRId64 ",\"u\":%" PRIu64 "}}",
				       (int64_t)mix(x) >> (k % 64), mix(x + 1) >> (k % 64));
		cr_assert_eq(strncmp(at, want, len), 0, "span %" PRIu64 ": %.80s, not %s", k, at,
			     want);
	}
	free(f.bytes);
	free(path);
	free_temp_dir(dir);
}
