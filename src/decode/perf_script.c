/* perf_script.c: `perf script` branch text into branch and trace-error
 * events; see perf_script.h.
 *
 * The text is read in large blocks and cut into lines in place; each line is
 * taken apart with a cursor over [p, end) that never reads past the line's
 * end (a line may hold any bytes, NUL included). No scanf and no regular
 * expressions: this runs over hundreds of megabytes of text.
 *
 * The layouts it reads are perf 6.1's (tools/perf/builtin-script.c and
 * util/auxtrace.c), checked against captures decoded by perf 6.1:
 *
 *   PID/TID [CPU] TIME: [PERIOD] [EVENT:] FLAGS  IP SYM+0xOFF (DSO) =>  ADDR SYM+0xOFF (DSO)
 *   PID/TID [CPU] TIME: [PERIOD] [EVENT:] <anything without flags and " => ">  (skipped)
 *    instruction trace error type N time S.NS [machine_pid M vcpu V] cpu C pid P tid T
 *        ip 0xX code N: MESSAGE                                     (one line)
 *
 * Not here: what the branches mean for call stacks (trace/builder.c).
 */
#include "decode/perf_script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/intern.h"

#define READ_BLOCK    (1u << 20)
#define MAX_LINE      (16u << 20)
#define QUOTED_MAX    80
#define NS_PER_SECOND 1000000000ull
#define RECENT_SLOTS  64 /* a power of two */

struct rv_perf_script {
	FILE *in;
	char *name;
	char *buf; /* [start, end) is read and not yet cut into lines */
	size_t capacity, start, end;
	bool eof;
	uint64_t line_no;
	struct rv_error fatal; /* a read error or overlong line ends the import */
	struct rv_intern pool;
	/* Names met lately, in front of the pool: consecutive lines repeat
	 * the same DSOs and functions, and hashing every name was the largest
	 * cost of an import. */
	struct {
		const char *str;
		size_t len;
	} recent[RECENT_SLOTS];
	const char *unknown; /* the pooled "[unknown]" */
	struct rv_perf_script_stats stats;
};

/* The line being parsed, for error messages. */
struct line {
	const char *start, *end;
};

struct cursor {
	const char *p, *end;
};

int rv_perf_script_open(struct rv_perf_script **out, FILE *in, const char *name,
			struct rv_error *err)
{
	struct rv_perf_script *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return rv_error_set(err, ENOMEM, "out of memory opening %s", name);
	p->in = in;
	p->name = strdup(name ? name : "perf script output");
	p->capacity = READ_BLOCK;
	p->buf = malloc(p->capacity);
	rv_intern_init(&p->pool);
	p->unknown = rv_intern(&p->pool, "[unknown]");
	if (!p->name || !p->buf || !p->unknown) {
		rv_perf_script_free(p);
		return rv_error_set(err, ENOMEM, "out of memory opening %s", name);
	}
	*out = p;
	return 0;
}

void rv_perf_script_free(struct rv_perf_script *p)
{
	if (!p)
		return;
	rv_intern_destroy(&p->pool);
	free(p->buf);
	free(p->name);
	free(p);
}

void rv_perf_script_stats(const struct rv_perf_script *p, struct rv_perf_script_stats *out)
{
	*out = p->stats;
}

/* ---- Lines ---- */

static int fail_fatal(struct rv_perf_script *p, struct rv_error *err, int code)
{
	p->fatal.code = code;
	if (err)
		*err = p->fatal;
	return -code;
}

/* 1 with the next line (without its newline) in [*line, *line + *len), 0 at
 * the end of the input, negative on a read error or a line too long. */
static int read_line(struct rv_perf_script *p, const char **line, size_t *len, struct rv_error *err)
{
	for (;;) {
		char *at = p->buf + p->start;
		size_t avail = p->end - p->start, n;
		char *newline = memchr(at, '\n', avail);

		if (newline && (size_t)(newline - at) <= MAX_LINE) {
			*line = at;
			*len = (size_t)(newline - at);
			p->start += *len + 1;
			return 1;
		}
		if (newline || avail > MAX_LINE) {
			rv_error_set(&p->fatal, EINVAL,
				     "%s:%" PRIu64 ": line longer than %u MiB; is this "
				     "`perf script` output?",
				     p->name, p->line_no + 1, MAX_LINE >> 20);
			return fail_fatal(p, err, EINVAL);
		}
		if (p->eof) {
			if (!avail)
				return 0;
			*line = at; /* the last line, without a newline */
			*len = avail;
			p->start = p->end;
			return 1;
		}
		if (p->start) {
			memmove(p->buf, at, avail);
			p->start = 0;
			p->end = avail;
		}
		if (p->end == p->capacity) {
			size_t capacity = p->capacity * 2;
			char *buf;

			buf = realloc(p->buf, capacity);
			if (!buf) {
				rv_error_set(&p->fatal, ENOMEM,
					     "out of memory reading line %" PRIu64 " of %s",
					     p->line_no + 1, p->name);
				return fail_fatal(p, err, ENOMEM);
			}
			p->buf = buf;
			p->capacity = capacity;
		}
		n = fread(p->buf + p->end, 1, p->capacity - p->end, p->in);
		p->end += n;
		if (n == 0) {
			if (ferror(p->in)) {
				rv_error_set(&p->fatal, EIO,
					     "cannot read %s after line %" PRIu64
					     ": read error; check the file or pipe",
					     p->name, p->line_no);
				return fail_fatal(p, err, EIO);
			}
			p->eof = true;
		}
	}
}

/* "NAME:LINE: expected WHAT in "<the line, cut to 80 characters>"". */
static int fail(const struct rv_perf_script *p, const struct line *l, struct rv_error *err,
		const char *what)
{
	char quoted[QUOTED_MAX + 4];
	size_t len = (size_t)(l->end - l->start), n = len < QUOTED_MAX ? len : QUOTED_MAX;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)l->start[i];

		quoted[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : (ch == '\t' ? ' ' : '?');
	}
	if (len > n) {
		memcpy(quoted + n, "...", 3);
		n += 3;
	}
	quoted[n] = '\0';
	return rv_error_set(err, EINVAL, "%s:%" PRIu64 ": expected %s in \"%s\"", p->name,
			    p->line_no, what, quoted);
}

/* The pooled copy of s[0..len), NULL when memory runs out. */
static const char *intern(struct rv_perf_script *p, const char *s, size_t len)
{
	size_t slot;
	const char *pooled;

	if (!len)
		return rv_intern_n(&p->pool, s, len);
	slot = (len * 31 + (unsigned char)s[len / 2] * 7 + (unsigned char)s[len - 1]) &
	       (RECENT_SLOTS - 1);
	if (p->recent[slot].len == len && p->recent[slot].str &&
	    memcmp(p->recent[slot].str, s, len) == 0)
		return p->recent[slot].str;
	pooled = rv_intern_n(&p->pool, s, len);
	if (pooled) {
		p->recent[slot].str = pooled;
		p->recent[slot].len = len;
	}
	return pooled;
}

static int out_of_memory(const struct rv_perf_script *p, struct rv_error *err)
{
	return rv_error_set(err, ENOMEM, "out of memory at line %" PRIu64 " of %s", p->line_no,
			    p->name);
}

/* ---- Cursor primitives: none reads at or past c->end ---- */

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static void skip_spaces(struct cursor *c)
{
	while (c->p < c->end && is_space(*c->p))
		c->p++;
}

static bool at_boundary(const struct cursor *c)
{
	return c->p == c->end || is_space(*c->p);
}

/* The literal s, followed by the end, a space or '(' (perf's "(x)"). */
static bool take_word(struct cursor *c, const char *s)
{
	size_t n = strlen(s);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
		return false;
	if (c->p + n < c->end && !is_space(c->p[n]) && c->p[n] != '(')
		return false;
	c->p += n;
	return true;
}

/* Spaces, then the word s followed by a space or the end. */
static bool take_keyword(struct cursor *c, const char *s)
{
	struct cursor save = *c;
	size_t n = strlen(s);

	skip_spaces(c);
	if ((size_t)(c->end - c->p) >= n && memcmp(c->p, s, n) == 0 &&
	    (c->p + n == c->end || is_space(c->p[n]))) {
		c->p += n;
		return true;
	}
	*c = save;
	return false;
}

static bool take_char(struct cursor *c, char ch)
{
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool parse_dec(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = c->p;

	while (c->p < c->end && is_digit(*c->p)) {
		unsigned d = (unsigned)(*c->p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		c->p++;
	}
	*out = v;
	return c->p > start;
}

static bool parse_hex(struct cursor *c, uint64_t *out)
{
	uint64_t v = 0;
	const char *start;
	int d;

	if (c->end - c->p >= 2 && c->p[0] == '0' && (c->p[1] == 'x' || c->p[1] == 'X'))
		c->p += 2;
	start = c->p;
	while (c->p < c->end && (d = hex_value(*c->p)) >= 0) {
		if (v >> 60)
			return false;
		v = v << 4 | (uint64_t)d;
		c->p++;
	}
	*out = v;
	return c->p > start;
}

/* A pid or tid as perf prints it (%d); -1, "none", becomes UINT32_MAX. */
static bool parse_id(struct cursor *c, uint32_t *out)
{
	uint64_t v;

	if (take_char(c, '-')) {
		if (!take_char(c, '1') || (c->p < c->end && is_digit(*c->p)))
			return false;
		*out = UINT32_MAX;
		return true;
	}
	if (!parse_dec(c, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* "SECONDS.FRACTION" (6 digits without --ns, 9 with) in nanoseconds; a bare
 * "0" when allow_zero (perf's "time 0" for an error without a time). */
static bool parse_time(struct cursor *c, uint64_t *ns, bool allow_zero)
{
	uint64_t seconds, fraction = 0;
	unsigned digits = 0;

	if (!parse_dec(c, &seconds))
		return false;
	if (!take_char(c, '.')) {
		*ns = 0;
		return allow_zero && seconds == 0;
	}
	while (c->p < c->end && is_digit(*c->p)) {
		if (++digits > 9)
			return false;
		fraction = fraction * 10 + (uint64_t)(*c->p - '0');
		c->p++;
	}
	if (!digits || seconds > (UINT64_MAX - NS_PER_SECOND) / NS_PER_SECOND)
		return false;
	for (; digits < 9; digits++)
		fraction *= 10;
	*ns = seconds * NS_PER_SECOND + fraction;
	return true;
}

/* The first " =>" in the rest of the line, or NULL. */
static const char *find_arrow(const struct cursor *c)
{
	const char *at = c->p;

	while (at < c->end) {
		const char *eq = memchr(at, '=', (size_t)(c->end - at));

		if (!eq)
			return NULL;
		if (eq > c->p && eq[-1] == ' ' && eq + 1 < c->end && eq[1] == '>')
			return eq - 1;
		at = eq + 1;
	}
	return NULL;
}

/* ---- Branch lines ---- */

struct flag_word {
	const char *word;
	enum rv_branch_kind kind;
	uint32_t flags;
};

/* perf's names for the branch types (util/trace-event-scripting.c); "hw int"
 * carries perf's ASYNC bit. */
static const struct flag_word kind_words[] = {
	{ "call", RV_BRANCH_CALL, 0 },
	{ "return", RV_BRANCH_RETURN, 0 },
	{ "jcc", RV_BRANCH_COND, 0 },
	{ "jmp", RV_BRANCH_JUMP, 0 },
	{ "syscall", RV_BRANCH_SYSCALL, 0 },
	{ "sysret", RV_BRANCH_SYSRET, 0 },
	{ "hw int", RV_BRANCH_INTERRUPT, RV_BRANCH_ASYNC },
	{ "int", RV_BRANCH_SOFT_INT, 0 },
	{ "iret", RV_BRANCH_IRET, 0 },
	{ "tx abrt", RV_BRANCH_TX_ABORT, 0 },
	{ "async", RV_BRANCH_NONE, RV_BRANCH_ASYNC },
};

/* The flags field: ["tr strt"] ["tr end"] [KIND] ["(xDt)"]. 1 when there was
 * one, 0 when the text there is not a flags field, negative on a bad "(..)". */
static int parse_flags(struct cursor *c, enum rv_branch_kind *kind, uint32_t *flags)
{
	bool any = false;

	*kind = RV_BRANCH_NONE;
	*flags = 0;
	if (take_word(c, "tr strt")) {
		*flags |= RV_BRANCH_TRACE_BEGIN;
		any = true;
		skip_spaces(c);
	}
	if (take_word(c, "tr end")) {
		*flags |= RV_BRANCH_TRACE_END;
		any = true;
		skip_spaces(c);
	}
	for (size_t i = 0; i < sizeof(kind_words) / sizeof(kind_words[0]); i++) {
		if (take_word(c, kind_words[i].word)) {
			*kind = kind_words[i].kind;
			*flags |= kind_words[i].flags;
			any = true;
			skip_spaces(c);
			break;
		}
	}
	if (!any || !take_char(c, '('))
		return any;
	/* (x): in a transaction; (D), (t): interrupts disabled, toggled */
	while (c->p < c->end && *c->p != ')') {
		if (*c->p == 'x')
			*flags |= RV_BRANCH_IN_TX;
		else if (*c->p != 'D' && *c->p != 't')
			return -1;
		c->p++;
	}
	return take_char(c, ')') ? 1 : -1;
}

static bool equals(const char *s, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

/* One side of a branch, "SYM+0xOFF (DSO)" in [s, e) (any part may be
 * missing), at address ip. */
static int parse_end(struct rv_perf_script *p, const struct line *l, const char *s, const char *e,
		     uint64_t ip, struct rv_branch_end *out, struct rv_error *err)
{
	const char *off;
	uint64_t symoff = 0;

	out->ip = ip;
	out->sym = NULL;
	out->sym_start = 0;
	out->dso = NULL;
	while (s < e && is_space(*s))
		s++;
	while (e > s && is_space(e[-1]))
		e--;

	/* The DSO: the last parenthesised group, opening after a space. A
	 * symbol's own parentheses ("f(int)+0x4") do not follow a space. */
	if (e > s && e[-1] == ')') {
		size_t open = (size_t)(e - s), depth = 0;

		while (open > 0) {
			open--;
			if (s[open] == ')')
				depth++;
			else if (s[open] == '(' && --depth == 0)
				break;
		}
		if (depth == 0 && (open == 0 || is_space(s[open - 1]))) {
			const char *dso = s + open + 1;
			size_t len = (size_t)(e - 1 - dso);

			if (len && !equals(dso, len, "[unknown]")) {
				out->dso = intern(p, dso, len);
				if (!out->dso)
					return out_of_memory(p, err);
			}
			e = s + open;
			while (e > s && is_space(e[-1]))
				e--;
		}
	}
	if (e == s)
		return 0;
	if (equals(s, (size_t)(e - s), "[unknown]")) {
		out->sym = p->unknown;
		out->sym_start = ip;
		return 0;
	}

	/* "+0x" and hex digits to the end: the offset into the symbol. */
	off = e;
	while (off > s && hex_value(off[-1]) >= 0)
		off--;
	if (off < e && off - s > 3 && memcmp(off - 3, "+0x", 3) == 0) {
		struct cursor c = { off, e };

		if (!parse_hex(&c, &symoff))
			return fail(p, l, err, "a symbol offset that fits 64 bits");
		if (symoff > ip)
			return fail(p, l, err, "a symbol offset no larger than its address");
		e = off - 3;
	}
	out->sym = intern(p, s, (size_t)(e - s));
	if (!out->sym)
		return out_of_memory(p, err);
	out->sym_start = ip - symoff;
	return 0;
}

/* After the flags: "IP SYM (DSO) =>  ADDR SYM (DSO)". */
static int parse_branch(struct rv_perf_script *p, const struct line *l, struct cursor *c,
			struct rv_event *ev, struct rv_error *err)
{
	uint64_t ip, addr;
	const char *arrow;
	int ret;

	skip_spaces(c);
	if (!parse_hex(c, &ip) || !at_boundary(c))
		return fail(p, l, err, "the branch's source address (hex) after its flags");
	arrow = find_arrow(c);
	if (!arrow || (arrow + 3 < c->end && !is_space(arrow[3])))
		return fail(p, l, err, "\" => \" between the branch's source and target");
	ret = parse_end(p, l, c->p, arrow, ip, &ev->branch.from, err);
	if (ret)
		return ret;
	c->p = arrow + 3;
	skip_spaces(c);
	if (!parse_hex(c, &addr) || !at_boundary(c))
		return fail(p, l, err, "the branch's target address (hex) after \"=>\"");
	return parse_end(p, l, c->p, c->end, addr, &ev->branch.to, err);
}

/* "PID/TID [CPU] TIME: [PERIOD] [EVENT:] ..." */
static int parse_sample(struct rv_perf_script *p, const struct line *l, struct cursor *c,
			struct rv_event *ev, struct rv_error *err)
{
	const char *event = NULL;
	size_t event_len = 0;
	bool have_period = false;
	int ret;

	ev->kind = RV_EVENT_BRANCH;
	if (!parse_id(c, &ev->pid) || !take_char(c, '/') || !parse_id(c, &ev->tid) ||
	    !at_boundary(c))
		return fail(p, l, err, "PID/TID at the start of a sample");
	skip_spaces(c);
	if (take_char(c, '[')) {
		uint64_t cpu;

		if (!parse_dec(c, &cpu) || !take_char(c, ']'))
			return fail(p, l, err, "[CPU] after PID/TID");
		skip_spaces(c);
	}
	if (!parse_time(c, &ev->time, false) || !take_char(c, ':'))
		return fail(p, l, err, "the sample's time (SECONDS.FRACTION:) after PID/TID");

	/* The period and the event name, in either order. */
	for (int i = 0; i < 2; i++) {
		struct cursor t;
		uint64_t period;

		skip_spaces(c);
		t = *c;
		if (!have_period && parse_dec(&t, &period) && at_boundary(&t)) {
			have_period = true;
			*c = t;
			continue;
		}
		while (t.p < t.end && !is_space(*t.p))
			t.p++;
		if (!event && t.p - c->p >= 2 && t.p[-1] == ':') {
			event = c->p;
			event_len = (size_t)(t.p - c->p - 1);
			*c = t;
			continue;
		}
		break;
	}
	/* psb, cbr, power events, instruction samples: not branches */
	if (event && (event_len < 8 || memcmp(event, "branches", 8) != 0))
		return 0;

	skip_spaces(c);
	if (c->p == c->end)
		return fail(p, l, err, "the sample's fields after its time");
	ret = parse_flags(c, &ev->branch.kind, &ev->branch.flags);
	if (ret < 0)
		return fail(p, l, err, "(x), (D) or (t) after the branch flags");
	if (ret == 0) {
		/* Without the event field, synthesized events (psb, cbr, ...)
		 * show as a sample with no flags and no target. */
		if (!event && !find_arrow(c))
			return 0;
		return fail(p, l, err,
			    "branch flags (call, return, jcc, jmp, syscall, sysret, int, hw int, "
			    "iret, tx abrt, async, tr strt, tr end) after the time");
	}
	ret = parse_branch(p, l, c, ev, err);
	return ret ? ret : 1;
}

/* ---- Trace errors ---- */

/* The error's cpu (%d): -1 for per-thread tracing. */
static bool parse_cpu(struct cursor *c)
{
	uint64_t cpu;

	skip_spaces(c);
	take_char(c, '-');
	return parse_dec(c, &cpu) && cpu <= INT32_MAX;
}

/* "instruction trace error type 1 time 12.345678901 [machine_pid 5 vcpu 0]
 * cpu -1 pid 7 tid 7 ip 0x401000 code 7: Overflow packet" */
static int parse_trace_error(struct rv_perf_script *p, const struct line *l, struct cursor *c,
			     struct rv_event *ev, struct rv_error *err)
{
	uint64_t type, code, vm;
	const char *message, *end;

	ev->kind = RV_EVENT_TRACE_ERROR;
	ev->error.offset = UINT64_MAX;
	if (!take_keyword(c, "type") || (skip_spaces(c), !parse_dec(c, &type)))
		return fail(p, l, err, "\"type N\" after \"error\"");
	if (!take_keyword(c, "time") || (skip_spaces(c), !parse_time(c, &ev->time, true)))
		return fail(p, l, err, "\"time SECONDS.FRACTION\" in the error");
	if (take_keyword(c, "machine_pid")) {
		skip_spaces(c);
		if (!parse_dec(c, &vm) || !take_keyword(c, "vcpu") ||
		    (skip_spaces(c), !parse_dec(c, &vm)))
			return fail(p, l, err, "\"machine_pid M vcpu V\" in the error");
	}
	if (!take_keyword(c, "cpu") || !parse_cpu(c))
		return fail(p, l, err, "\"cpu C\" in the error");
	if (!take_keyword(c, "pid") || (skip_spaces(c), !parse_id(c, &ev->pid)))
		return fail(p, l, err, "\"pid P\" in the error");
	if (!take_keyword(c, "tid") || (skip_spaces(c), !parse_id(c, &ev->tid)))
		return fail(p, l, err, "\"tid T\" in the error");
	if (!take_keyword(c, "ip") || (skip_spaces(c), !parse_hex(c, &ev->error.ip)))
		return fail(p, l, err, "\"ip 0xADDRESS\" in the error");
	if (!take_keyword(c, "code") || (skip_spaces(c), !parse_dec(c, &code)) ||
	    !take_char(c, ':'))
		return fail(p, l, err, "\"code N:\" and the message in the error");
	skip_spaces(c);
	message = c->p;
	end = c->end;
	while (end > message && is_space(end[-1]))
		end--;
	ev->error.message = rv_intern_n(&p->pool, message, (size_t)(end - message));
	if (!ev->error.message)
		return out_of_memory(p, err);
	ev->error.overflow =
		memmem(message, (size_t)(end - message), "Overflow packet", 15) != NULL;
	return 1;
}

/* ---- Lines into events ---- */

/* 1: *ev is an event; 0: the line holds none (skipped); negative: an error. */
static int parse_line(struct rv_perf_script *p, const char *text, size_t len, struct rv_event *ev,
		      struct rv_error *err)
{
	struct line l = { text, text + len };
	struct cursor c;

	if (len && text[len - 1] == '\r')
		l.end--;
	c = (struct cursor){ l.start, l.end };
	if (c.p == c.end || *c.p == '\t')
		return 0; /* a blank line, or a frame of a sample's call chain */
	skip_spaces(&c);
	if (c.p == c.end)
		return 0;
	memset(ev, 0, sizeof(*ev));
	if (is_digit(*c.p) || *c.p == '-')
		return parse_sample(p, &l, &c, ev, err);
	if (take_word(&c, "instruction trace error") || take_word(&c, "unknown AUX error"))
		return parse_trace_error(p, &l, &c, ev, err);
	return fail(p, &l, err,
		    "a branch sample (PID/TID TIME: FLAGS IP ... => ADDR ...) or an "
		    "\"instruction trace error\"");
}

int rv_perf_script_next(struct rv_perf_script *p, struct rv_event *ev, struct rv_error *err)
{
	if (p->fatal.code) {
		if (err)
			*err = p->fatal;
		return -p->fatal.code;
	}
	for (;;) {
		const char *line;
		size_t len;
		int ret = read_line(p, &line, &len, err);

		if (ret <= 0)
			return ret;
		p->line_no++;
		p->stats.lines++;
		ret = parse_line(p, line, len, ev, err);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			p->stats.skipped++;
			continue;
		}
		if (ev->kind == RV_EVENT_BRANCH)
			p->stats.branches++;
		else
			p->stats.errors++;
		return 1;
	}
}
