/* json.c: encodes spans, instants and process and thread names in the Chrome
 * trace event format ({"traceEvents":[...]}), the legacy format that Perfetto
 * and chrome://tracing both read: "X" events for spans (with "cat" when the
 * span has a category), "i" events for instants, "M" events for names.
 *
 * Nesting survives any reader's arithmetic and tie-breaking: times are
 * microseconds on a grid of 2^-20 us, exact in binary floating point, so a
 * reader that computes an end as ts + dur gets it exactly (with three
 * decimals, ends that should have been equal came out a few ulps apart:
 * speedscope 1.25.0 warned 1,888 times on a sampling trace and drew
 * impossible stacks); and the grid's spare points below a nanosecond put a
 * child that begins or ends with its parent strictly inside it (below).
 * Perfetto, which rounds ts and dur to whole nanoseconds, gets the
 * nanoseconds given. Events come in the builder's order (a parent before a
 * child that begins with it). The encoder keeps no span and reorders
 * nothing: its memory does not grow with the trace.
 *
 * Zero-length spans ("dur":0) are written as one point. Perfetto nests one
 * inside the slice open at its time (also one at its parent's begin: the
 * builder writes the parent first), but takes one at its parent's end for
 * the parent's next sibling, and a zero-length sibling at the same time for
 * a child of the first. speedscope ends the spans that end at a time before
 * it begins those that begin then, so one inside a span that begins at its
 * point would make it warn; at depth d it begins d points after its parent.
 *
 * Every string goes through one escaper that turns control characters into
 * \u00XX and invalid UTF-8 into U+FFFD, so the document is valid JSON
 * whatever the symbol names contain.
 *
 * This is not a JSON library: it only ever writes this one document shape.
 */
#include "write/writer_internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Input bytes escaped per reservation; an input byte becomes at most six. */
#define ESCAPE_CHUNK 4096
/* Longer than any run of punctuation and numbers written between strings. */
#define FIELDS_MAX 192

#define put_literal(out, literal) rv_out_write((out), (literal), sizeof(literal) - 1)

static const char hex_digits[] = "0123456789abcdef";

/* "00" to "99": numbers two digits at a time. */
static const char two_digits[] = "00010203040506070809"
				 "10111213141516171819"
				 "20212223242526272829"
				 "30313233343536373839"
				 "40414243444546474849"
				 "50515253545556575859"
				 "60616263646566676869"
				 "70717273747576777879"
				 "80818283848586878889"
				 "90919293949596979899";

/* v in decimal at p; returns its length. It writes twenty bytes at p
 * whatever the length (a copy of fixed size): the callers' reservations
 * hold them. */
static inline size_t format_u64(char *p, uint64_t v)
{
	char digits[40];
	size_t n = 20;

	while (v >= 100) {
		n -= 2;
		memcpy(digits + n, two_digits + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		n -= 2;
		memcpy(digits + n, two_digits + v * 2, 2);
	} else {
		digits[--n] = (char)('0' + v);
	}
	memcpy(p, digits + n, 20);
	return 20 - n;
}

static size_t format_i64(char *p, int64_t v)
{
	if (v < 0) {
		*p = '-';
		return 1 + format_u64(p + 1, -(uint64_t)v);
	}
	return format_u64(p, (uint64_t)v);
}

/* Times are written in microseconds (the format's unit) on a grid of
 * 2^-20 us (0.00095 ns). A multiple of 2^-20 below 2^33 us (2.4 hours from
 * the trace's start) is a double exactly, and so are the sums and
 * differences of two of them, so a reader that parses "ts" and "dur" into
 * doubles and computes ts + dur (speedscope, chrome://tracing) gets the end
 * exactly. A nanosecond x is the first grid point at or after it, less
 * than a picosecond late, so equal times stay equal and distinct ones keep
 * their order.
 *
 * The grid's spare points order what the nanosecond cannot: a span at depth
 * d on its thread's track (the builder's stack position) begins d points
 * after its begin's point and ends d points before its end's (d at most
 * DEPTH_POINTS; deeper ones share that offset), so a child that begins or
 * ends with its parent begins after it and ends before it, and a span that
 * begins as a sibling ends begins after that end. Readers that break ties
 * of equal times by rules of their own (speedscope begins a span before it
 * ends another with the same name and arguments, and then ends the wrong
 * one of a chain of frames that began and end together, with a warning for
 * each) see them strictly nested instead.
 *
 * Perfetto rounds "ts" and "dur" each to the nearest nanosecond
 * (llround(us * 1000)) and ends a span at ts + dur. A begin lies within
 * DEPTH_POINTS points (0.244 ns) after its nanosecond and an end within as
 * many before its own, so ts rounds to the nanosecond given and dur (off
 * by less than 0.49 ns) to the span's length: Perfetto shows the
 * nanoseconds the builder gave, at any depth. The cost is a longer number:
 * up to twenty decimals. */
#define GRID_BITS    20
#define DEPTH_POINTS 255

/* The first grid point at or after x ns: ceil(x * 2^20 / 1000). */
static uint64_t grid_from_ns(uint64_t ns)
{
	return (ns / 1000 << GRID_BITS) + ((ns % 1000 << GRID_BITS) + 999) / 1000;
}

/* grid/2^20 us in decimal: the integer part, then the exact binary fraction
 * two digits at a time (times 100, the digits are what passes 2^20),
 * without trailing zeros. f/2^20 = odd/2^k (k = 20 less f's trailing zero
 * bits) has k digits, the last a 5; a pair's second digit past them is a
 * zero the caller's reservation holds and the length leaves out. */
static size_t format_grid_microseconds(char *p, uint64_t grid)
{
	const uint64_t mask = ((uint64_t)1 << GRID_BITS) - 1;
	size_t n = format_u64(p, grid >> GRID_BITS), digits;
	uint64_t frac = grid & mask;
	char *o;

	if (!frac)
		return n;
	p[n++] = '.';
	digits = GRID_BITS - (size_t)__builtin_ctzll(frac);
	for (o = p + n; frac; o += 2) {
		frac *= 100;
		memcpy(o, two_digits + (frac >> GRID_BITS) * 2, 2);
		frac &= mask;
	}
	return n + digits;
}

static size_t format_hex(char *p, uint64_t v)
{
	char digits[16];
	size_t n = 0, i;

	do {
		digits[n++] = hex_digits[v & 0xf];
		v >>= 4;
	} while (v);
	p[0] = '0';
	p[1] = 'x';
	for (i = 0; i < n; i++)
		p[2 + i] = digits[n - 1 - i];
	return 2 + n;
}

static size_t escape_byte(char *p, unsigned char c)
{
	static const char short_escapes[] = {
		['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'
	};

	p[0] = '\\';
	if (c == '"' || c == '\\') {
		p[1] = (char)c;
		return 2;
	}
	if (c < sizeof(short_escapes) && short_escapes[c]) {
		p[1] = short_escapes[c];
		return 2;
	}
	memcpy(p + 1, "u00", 3);
	p[4] = hex_digits[c >> 4];
	p[5] = hex_digits[c & 0xf];
	return 6;
}

/* Whether the eight bytes of w are all printable ASCII other than '"' and
 * '\\': bytes the document takes as they are. Each test is exact for
 * "some byte is" (borrows only mark bytes above one that is). */
static bool plain_word(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	uint64_t quote = w ^ ('"' * ones), backslash = w ^ ('\\' * ones);

	return !((w | ((w - 0x20 * ones) & ~w) | ((quote - ones) & ~quote) |
		  ((backslash - ones) & ~backslash)) &
		 highs);
}

/* Whether s[0..length) needs no escape, eight bytes at a time (most names
 * and paths). */
static bool plain_bytes(const unsigned char *s, size_t length)
{
	uint64_t w;
	size_t i;

	for (i = 0; i + 8 <= length; i += 8) {
		memcpy(&w, s + i, 8);
		if (!plain_word(w))
			return false;
	}
	w = 0x6161616161616161ULL; /* the tail among 'a's */
	memcpy(&w, s + i, length - i);
	return plain_word(w);
}

static void write_string(struct rv_out *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t length = strlen((const char *)p), i = 0;

	put_literal(out, "\"");
	if (length && length <= ESCAPE_CHUNK && plain_bytes(p, length)) {
		/* the loop's first chunk, copied whole (the same reservation, so
		 * the same flushes) */
		memcpy(rv_out_reserve(out, ESCAPE_CHUNK + 8), p, length);
		rv_out_advance(out, length);
		i = length;
	}
	while (i < length) {
		char *o = (char *)rv_out_reserve(out, ESCAPE_CHUNK + 8);
		size_t n = 0;

		while (i < length && n <= ESCAPE_CHUNK) {
			unsigned char c = p[i];
			size_t sequence;

			if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
				o[n++] = (char)c;
				i++;
			} else if (c < 0x80) {
				n += escape_byte(o + n, c);
				i++;
			} else if ((sequence = rv_utf8_sequence_length(p + i, length - i))) {
				memcpy(o + n, p + i, sequence);
				n += sequence;
				i += sequence;
			} else {
				memcpy(o + n, "\\ufffd", 6);
				n += 6;
				i++;
			}
		}
		rv_out_advance(out, n);
	}
	put_literal(out, "\"");
}

static void begin_event(struct rv_json *json)
{
	if (json->wrote_event)
		put_literal(json->out, ",\n");
	else
		put_literal(json->out, "\n");
	json->wrote_event = true;
}

/* ,"pid":P,"tid":T,"ts":TS[,"dur":DUR]: times as grid points (above), the
 * duration their difference, so that ts + dur is the end's grid point. */
static void write_place_and_time(struct rv_out *out, uint32_t pid, uint32_t tid, uint64_t ts_grid,
				 bool has_duration, uint64_t end_grid)
{
	char *p = (char *)rv_out_reserve(out, FIELDS_MAX);
	size_t n = 0;

	memcpy(p + n, ",\"pid\":", 7);
	n += 7;
	n += format_u64(p + n, pid);
	memcpy(p + n, ",\"tid\":", 7);
	n += 7;
	n += format_u64(p + n, tid);
	memcpy(p + n, ",\"ts\":", 6);
	n += 6;
	n += format_grid_microseconds(p + n, ts_grid);
	if (has_duration) {
		memcpy(p + n, ",\"dur\":", 7);
		n += 7;
		n += format_grid_microseconds(p + n, end_grid - ts_grid);
	}
	rv_out_advance(out, n);
}

static void write_arg_value(struct rv_out *out, const struct rv_arg *arg)
{
	char *p;

	switch (arg->kind) {
	case RV_ARG_INT:
		p = (char *)rv_out_reserve(out, 24);
		rv_out_advance(out, format_i64(p, arg->i));
		return;
	case RV_ARG_UINT:
		p = (char *)rv_out_reserve(out, 24);
		rv_out_advance(out, format_u64(p, arg->u));
		return;
	case RV_ARG_POINTER:
		p = (char *)rv_out_reserve(out, 24);
		p[0] = '"';
		rv_out_advance(out, 1 + format_hex(p + 1, arg->u));
		put_literal(out, "\"");
		return;
	case RV_ARG_STRING:
		write_string(out, arg->s);
		return;
	}
	put_literal(out, "null");
}

static void write_args(struct rv_out *out, const struct rv_arg *args, size_t nr_args)
{
	size_t i;

	if (nr_args == 0)
		return;
	put_literal(out, ",\"args\":{");
	for (i = 0; i < nr_args; i++) {
		if (i)
			put_literal(out, ",");
		write_string(out, args[i].name);
		put_literal(out, ":");
		write_arg_value(out, &args[i]);
	}
	put_literal(out, "}");
}

void rv_json_open(struct rv_json *json, struct rv_out *out)
{
	json->out = out;
	json->wrote_event = false;
	put_literal(out, "{\"traceEvents\":[");
}

void rv_json_process(struct rv_json *json, uint32_t pid, const char *name)
{
	char *p;

	begin_event(json);
	put_literal(json->out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	p = (char *)rv_out_reserve(json->out, 24);
	rv_out_advance(json->out, format_u64(p, pid));
	put_literal(json->out, ",\"tid\":0,\"args\":{\"name\":");
	write_string(json->out, name);
	put_literal(json->out, "}}");
}

void rv_json_thread(struct rv_json *json, uint32_t pid, uint32_t tid, const char *name)
{
	char *p;
	size_t n;

	begin_event(json);
	put_literal(json->out, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	p = (char *)rv_out_reserve(json->out, 64);
	n = format_u64(p, pid);
	memcpy(p + n, ",\"tid\":", 7);
	n += 7;
	n += format_u64(p + n, tid);
	rv_out_advance(json->out, n);
	put_literal(json->out, ",\"args\":{\"name\":");
	write_string(json->out, name);
	put_literal(json->out, "}}");
}

void rv_json_span(struct rv_json *json, uint32_t pid, uint32_t tid, const char *category,
		  const char *name, uint64_t begin_ns, uint64_t end_ns, uint32_t depth,
		  const struct rv_arg *args, size_t nr_args)
{
	uint64_t inner = depth < DEPTH_POINTS ? depth : DEPTH_POINTS;
	uint64_t begin = grid_from_ns(begin_ns) + inner, end = begin;

	/* a zero-length span stays one, at its begin's point; a longer one
	 * ends at least a nanosecond (1048 points) after its begin, so its
	 * end stays after its begin */
	if (end_ns > begin_ns)
		end = grid_from_ns(end_ns) - inner;
	begin_event(json);
	put_literal(json->out, "{\"ph\":\"X\",\"name\":");
	write_string(json->out, name);
	if (category && *category) {
		put_literal(json->out, ",\"cat\":");
		write_string(json->out, category);
	}
	write_place_and_time(json->out, pid, tid, begin, true, end);
	write_args(json->out, args, nr_args);
	put_literal(json->out, "}");
}

void rv_json_instant(struct rv_json *json, uint32_t pid, uint32_t tid, const char *name,
		     uint64_t ts_ns, const struct rv_arg *args, size_t nr_args)
{
	begin_event(json);
	put_literal(json->out, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
	write_string(json->out, name);
	write_place_and_time(json->out, pid, tid, grid_from_ns(ts_ns), false, 0);
	write_args(json->out, args, nr_args);
	put_literal(json->out, "}");
}

void rv_json_close(struct rv_json *json)
{
	put_literal(json->out, "\n],\"displayTimeUnit\":\"ns\"}\n");
}
