/* perf_script.c: `perf script` text into branch, trace-error, stack-sample
 * and extra events; see perf_script.h.
 *
 * The text is read in large blocks and cut into lines in place; each line is
 * taken apart with a cursor over [p, end) that never reads past the line's
 * end (a line may hold any bytes, NUL included). No scanf and no regular
 * expressions: this runs over hundreds of megabytes of text.
 *
 * The layouts it reads are perf 6.1's (tools/perf/builtin-script.c and
 * util/auxtrace.c), checked against captures decoded by perf 6.1:
 *
 *   [COMM] PID/TID [CPU] TIME: [PERIOD] [EVENT:] FLAGS  IP SYM+0xOFF (DSO) =>  ADDR SYM+0xOFF (DSO)
 *   [COMM] PID/TID [CPU] TIME: [PERIOD] EVENT:                  (a call chain follows)
 *   \t    ADDR SYM+0xOFF (DSO)                                  (one per frame, leaf first)
 *   <blank line>                                                (the call chain's end)
 *   [COMM] PID/TID [CPU] TIME: [PERIOD] EVENT: [IP SYM+0xOFF (DSO) | payload]
 *    instruction trace error type N [time S.NS] [machine_pid M vcpu V] cpu C pid P tid T
 *        ip 0xX code N: MESSAGE                                     (one line)
 *
 * COMM is perf's %16s and may hold spaces: the header is found by its
 * PID[/TID] [CPU] TIME: fields, whatever comes before them.
 *
 * Not here: what the events mean for call stacks (trace/builder.c).
 */
#include "decode/perf_script.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/intern.h"
#include "util/map.h"

#define READ_BLOCK    (1u << 20)
#define MAX_LINE      (16u << 20)
#define MAX_FRAMES    1024
#define NS_PER_SECOND 1000000000ull
#define RECENT_SLOTS  64 /* a power of two */
/* where x86-64 kernel addresses begin */
#define KERNEL_START 0xffff800000000000ull
/* a sample's interval when its period does not say (not a clock event) */
#define DEFAULT_INTERVAL_NS 1000000ull
/* COMM is at most 16 bytes, padded: the PID field starts before this */
#define MAX_COMM_FIELD 64

/* What parse_line made of a line. */
enum line_result {
	LINE_FATAL = -2, /* p->fatal says why: the import ends */
	LINE_BAD = -1,	 /* p->expected says what was expected */
	LINE_SKIP = 0,	 /* blank or comment: nothing */
	LINE_EVENT = 1,	 /* *ev is an event */
	LINE_NOT_DRAWN,	 /* an event rearview does not draw (p->not_drawn_name) */
	LINE_STACK,	 /* a sample header: its call chain follows */
};

/* A thread's latest time, for keeping times from going back. */
/* A thread's last time and name, in rv_perf_script.threads by tid. */
struct thread_time {
	uint64_t time;
	const char *comm; /* the name it was last given (pooled), or NULL */
};

struct rv_perf_script {
	FILE *in;
	char *name;
	char *buf; /* [start, end) is read and not yet cut into lines */
	size_t capacity, start, end;
	bool eof;
	uint64_t line_no;
	struct rv_error fatal; /* a read error, an overlong line or no memory */
	struct rv_intern pool;
	/* Names met lately, in front of the pool: consecutive lines repeat
	 * the same DSOs and functions, and hashing every name was the largest
	 * cost of an import. */
	struct {
		const char *str;
		size_t len;
	} recent[RECENT_SLOTS];
	const char *unknown;  /* the pooled "[unknown]" */
	const char *expected; /* a bad line: what was expected */
	const char *not_drawn_name;
	/* a line read but not taken yet (it ended a call chain) */
	bool have_pending, pending_whole;
	const char *pending;
	size_t pending_len;
	/* the call chain being read: its header's event, frames */
	bool in_stack, stack_sampling;
	struct rv_event stack;
	uint64_t stack_line, stack_period, stack_interval;
	uint32_t stack_cpu;
	const char *stack_event;
	struct rv_frame *frames;
	size_t nr_frames;
	uint64_t last_time;		    /* the last time a line gave */
	const char *line_comm, *stack_comm; /* the comm field, pooled; NULL: none */
	/* an event held back while its thread's new name is returned */
	bool have_queued;
	struct rv_event queued;
	struct rv_map threads; /* tid -> struct thread_time (owned) */
	struct rv_perf_script_stats stats;
};

/* The line being parsed. */
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
	p->frames = calloc(MAX_FRAMES, sizeof(*p->frames));
	rv_intern_init(&p->pool);
	p->unknown = rv_intern(&p->pool, "[unknown]");
	if (!p->name || !p->buf || !p->frames || !p->unknown) {
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
	for (size_t i = 0; i < p->threads.cap; i++)
		free(p->threads.slots[i].value);
	rv_map_destroy(&p->threads);
	free(p->frames);
	free(p->buf);
	free(p->name);
	free(p);
}

void rv_perf_script_stats(const struct rv_perf_script *p, struct rv_perf_script_stats *out)
{
	*out = p->stats;
	out->name = p->name;
}

/* ---- Lines ---- */

static int fail_fatal(struct rv_perf_script *p, struct rv_error *err, int code)
{
	p->fatal.code = code;
	if (err)
		*err = p->fatal;
	return -code;
}

/* 1 with the next line (without its newline) in [*line, *line + *len) and
 * *whole set when it ended with a newline, 0 at the end of the input,
 * negative on a read error or a line too long. */
static int read_line(struct rv_perf_script *p, const char **line, size_t *len, bool *whole,
		     struct rv_error *err)
{
	for (;;) {
		char *at = p->buf + p->start;
		size_t avail = p->end - p->start, n;
		char *newline = memchr(at, '\n', avail);

		if (newline && (size_t)(newline - at) <= MAX_LINE) {
			*line = at;
			*len = (size_t)(newline - at);
			*whole = true;
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
			*whole = false;
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

/* The line cannot be read: what was expected is noted (a static string). */
static int fail(struct rv_perf_script *p, const char *what)
{
	p->expected = what;
	return LINE_BAD;
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

static int out_of_memory(struct rv_perf_script *p)
{
	rv_error_set(&p->fatal, ENOMEM, "out of memory at line %" PRIu64 " of %s", p->line_no,
		     p->name);
	p->fatal.code = ENOMEM;
	return LINE_FATAL;
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

/* Whether the " =>" at `arrow` is followed by an address field and a
 * boundary: strict, perf's " %16" field exactly; else any spaces and hex
 * digits (*spaces: how many). */
static bool address_follows(const char *arrow, const char *end, bool strict, size_t *spaces)
{
	const char *at = arrow + 3, *digits;

	if (at >= end || *at != ' ')
		return false;
	at++;
	if (strict) {
		if (end - at < 16)
			return false;
		while (at < arrow + 20 && *at == ' ')
			at++;
		digits = at;
		while (at < arrow + 20 && hex_value(*at) >= 0)
			at++;
		return at == arrow + 20 && at > digits && (at == end || is_space(*at));
	}
	while (at < end && *at == ' ')
		at++;
	*spaces = (size_t)(at - arrow - 3);
	digits = at;
	while (at < end && hex_value(*at) >= 0)
		at++;
	return at > digits && (at == end || is_space(*at));
}

/* perf's separator between a branch's source and target: of the " =>" in
 * the rest of the line followed by an address, the first that is most like
 * perf's: followed by the %16 address field, else by more than one space
 * and an address, else by one; preceded by the source's "(DSO)" before
 * one that is not. A symbol name that holds " => " ("operator=>",
 * "{{closure}} => ...") is thereby not split. NULL when there is none. */
static const char *find_arrow(const struct cursor *c)
{
	const char *best = NULL;
	int best_score = 0;

	for (const char *at = c->p; at < c->end;) {
		const char *eq = memchr(at, '=', (size_t)(c->end - at));
		size_t spaces = 0;
		int score;

		if (!eq)
			break;
		at = eq + 1;
		if (eq == c->p || eq[-1] != ' ' || eq + 1 >= c->end || eq[1] != '>')
			continue;
		if (address_follows(eq - 1, c->end, true, &spaces))
			score = 6;
		else if (address_follows(eq - 1, c->end, false, &spaces))
			score = spaces > 1 ? 3 : 1;
		else
			continue;
		if (eq - 1 > c->p && eq[-2] == ')')
			score++;
		if (score > best_score) {
			best = eq - 1;
			best_score = score;
		}
	}
	return best;
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

/* One side of a branch or a frame, "SYM+0xOFF (DSO)" in [s, e) (any part
 * may be missing), at address ip. */
static int parse_end(struct rv_perf_script *p, const char *s, const char *e, uint64_t ip,
		     struct rv_branch_end *out)
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
					return out_of_memory(p);
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

	/* "+0x" and hex digits to the end: the offset into the symbol;
	 * without one (perf's default fields) the start is unknown */
	off = e;
	while (off > s && hex_value(off[-1]) >= 0)
		off--;
	if (off < e && off - s > 3 && memcmp(off - 3, "+0x", 3) == 0) {
		struct cursor c = { off, e };

		if (!parse_hex(&c, &symoff))
			return fail(p, "a symbol offset that fits 64 bits");
		e = off - 3;
	} else {
		symoff = UINT64_MAX;
	}
	out->sym = intern(p, s, (size_t)(e - s));
	if (!out->sym)
		return out_of_memory(p);
	if (symoff == UINT64_MAX) {
		out->sym_start = 0;
	} else if (symoff > ip) {
		/* perf's garbage offset ("memcpy@plt+0xffffffffff22f000"):
		 * the function is known by name only */
		p->stats.bad_offsets++;
		out->sym_start = 0;
	} else {
		out->sym_start = ip - symoff;
	}
	return 0;
}

/* After the flags: "IP SYM (DSO) =>  ADDR SYM (DSO)". */
static int parse_branch(struct rv_perf_script *p, struct cursor *c, struct rv_event *ev)
{
	uint64_t ip, addr;
	const char *arrow;
	int ret;

	skip_spaces(c);
	if (!parse_hex(c, &ip) || !at_boundary(c))
		return fail(p, "the branch's source address (hex) after its flags");
	arrow = find_arrow(c);
	if (!arrow)
		return fail(p, "\" => \" and the target address between the branch's source "
			       "and target");
	ret = parse_end(p, c->p, arrow, ip, &ev->branch.from);
	if (ret)
		return ret;
	c->p = arrow + 3;
	skip_spaces(c);
	if (!parse_hex(c, &addr) || !at_boundary(c))
		return fail(p, "the branch's target address (hex) after \"=>\"");
	ret = parse_end(p, c->p, c->end, addr, &ev->branch.to);
	return ret ? ret : LINE_EVENT;
}

/* ---- Sample headers ---- */

struct header {
	uint32_t pid, tid, cpu;
	uint64_t time, period;
	bool have_period;
	const char *event; /* in the line, event_len long; NULL when absent */
	size_t event_len;
	const char *comm; /* in the line, comm_len long (0: none) */
	size_t comm_len;
};

/* "PID[/TID] [[CPU]] TIME:" at the cursor. */
static bool parse_ids_and_time(struct cursor *c, struct header *h)
{
	if (!parse_id(c, &h->pid))
		return false;
	if (take_char(c, '/')) {
		if (!parse_id(c, &h->tid))
			return false;
	} else {
		h->tid = h->pid; /* perf's tid field alone */
	}
	if (!at_boundary(c))
		return false;
	skip_spaces(c);
	if (take_char(c, '[')) {
		uint64_t cpu;

		if (!parse_dec(c, &cpu) || cpu > UINT32_MAX || !take_char(c, ']'))
			return false;
		h->cpu = (uint32_t)cpu;
		skip_spaces(c);
	}
	return parse_time(c, &h->time, false) && take_char(c, ':') && at_boundary(c);
}

/* The fields up to the time, after the comm if there is one: the first
 * place, at the line's start or after a space within the comm's width,
 * where PID[/TID] [CPU] TIME: reads. */
static bool find_header(struct cursor *c, struct header *h)
{
	const char *at = c->p;

	while (at < c->end && at - c->p <= MAX_COMM_FIELD) {
		struct cursor t = { at, c->end };

		memset(h, 0, sizeof(*h));
		if ((is_digit(*at) || *at == '-') && parse_ids_and_time(&t, h)) {
			const char *comm_end = at;

			while (comm_end > c->p && is_space(comm_end[-1]))
				comm_end--;
			h->comm = c->p;
			h->comm_len = (size_t)(comm_end - c->p);
			*c = t;
			return true;
		}
		while (at < c->end && !is_space(*at))
			at++;
		while (at < c->end && is_space(*at))
			at++;
	}
	return false;
}

/* After the time: the period and the event name, in either order. */
static void parse_period_and_event(struct cursor *c, struct header *h)
{
	for (int i = 0; i < 2; i++) {
		struct cursor t;
		uint64_t period;

		skip_spaces(c);
		t = *c;
		if (!h->have_period && parse_dec(&t, &period) && at_boundary(&t)) {
			h->have_period = true;
			h->period = period;
			*c = t;
			continue;
		}
		while (t.p < t.end && !is_space(*t.p))
			t.p++;
		if (!h->event && t.p - c->p >= 2 && t.p[-1] == ':') {
			h->event = c->p;
			h->event_len = (size_t)(t.p - c->p - 1);
			*c = t;
			continue;
		}
		break;
	}
}

/* The event's name without its modifiers and PMU: "cycles" for
 * "cycles:u", "cpu_core/cycles/u" and "cycles:ppp". */
static void event_base(const char *s, size_t len, const char **base, size_t *base_len)
{
	const char *colon = memchr(s, ':', len), *slash;

	if (colon)
		len = (size_t)(colon - s);
	slash = memchr(s, '/', len);
	if (slash) {
		const char *next;

		len -= (size_t)(slash + 1 - s);
		s = slash + 1;
		next = memchr(s, '/', len);
		if (next)
			len = (size_t)(next - s);
	}
	*base = s;
	*base_len = len;
}

static bool event_is(const struct header *h, const char *name)
{
	const char *base;
	size_t len;

	if (!h->event)
		return false;
	event_base(h->event, h->event_len, &base, &len);
	return equals(base, len, name);
}

/* Events that sample what runs, at a steady rate: their call chains are a
 * sampling profile. */
static bool is_sampling_event(const struct header *h)
{
	static const char *const names[] = { "cpu-clock", "task-clock", "cycles", "cpu-cycles",
					     "ref-cycles" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (event_is(h, names[i]))
			return true;
	return false;
}

static uint64_t interval_of(const struct header *h)
{
	if (h->have_period && h->period && (event_is(h, "cpu-clock") || event_is(h, "task-clock")))
		return h->period; /* clock events count nanoseconds */
	return DEFAULT_INTERVAL_NS;
}

static bool is_kernel(uint64_t addr, const char *dso)
{
	return addr >= KERNEL_START || (dso && !strncmp(dso, "[kernel.", 8)) ||
	       (dso && dso[0] == '[' && strstr(dso, ".ko]"));
}

/* A frame "ADDR SYM+0xOFF (DSO)" into p->frames (dropped past MAX_FRAMES). */
static int parse_frame(struct rv_perf_script *p, struct cursor *c)
{
	struct rv_branch_end end;
	struct rv_frame *f;
	uint64_t addr;
	int ret;

	skip_spaces(c);
	if (!parse_hex(c, &addr) || !at_boundary(c))
		return fail(p, "a call chain frame (a tab, ADDRESS SYMBOL (DSO))");
	ret = parse_end(p, c->p, c->end, addr, &end);
	if (ret)
		return ret;
	p->stats.frames++;
	if (p->nr_frames == MAX_FRAMES)
		return LINE_SKIP;
	f = &p->frames[p->nr_frames];
	f->addr = addr;
	f->sym = end.sym ? end.sym : p->unknown;
	f->kernel = is_kernel(addr, end.dso);
	f->is_ip = p->nr_frames == 0;
	p->nr_frames++;
	return LINE_SKIP;
}

/* An extra event's ip on its line: its first field when that is an
 * address, or the one after a flags word; 0 when the line holds a
 * payload ("cbr: 24 freq: ...") or nothing. */
static uint64_t extra_ip(struct cursor c, bool *kernel)
{
	uint64_t ip = 0;

	*kernel = false;
	for (int field = 0; field < 2; field++) {
		struct cursor t;

		skip_spaces(&c);
		t = c;
		if (parse_hex(&t, &ip) && at_boundary(&t)) {
			*kernel = ip >= KERNEL_START ||
				  (t.end - t.p > 9 &&
				   memmem(t.p, (size_t)(t.end - t.p), "([kernel.", 9));
			return ip;
		}
		if (c.p == c.end)
			return 0;
		while (c.p < c.end && !is_space(*c.p))
			c.p++;
		if (c.p[-1] == ':')
			return 0;
	}
	return 0;
}

static int extra_event(struct rv_perf_script *p, const struct header *h, const char *name,
		       size_t len, struct rv_event *ev)
{
	ev->kind = RV_EVENT_EXTRA;
	ev->pid = h->pid;
	ev->tid = h->tid;
	ev->time = h->time;
	ev->extra.name = intern(p, name, len);
	if (!ev->extra.name)
		return out_of_memory(p);
	ev->extra.count = h->have_period && h->period ? h->period : 1;
	ev->extra.cpu = h->cpu;
	return LINE_EVENT;
}

static int not_drawn(struct rv_perf_script *p, const char *name, size_t len)
{
	p->not_drawn_name = intern(p, name, len);
	return p->not_drawn_name ? LINE_NOT_DRAWN : out_of_memory(p);
}

/* "[COMM] PID/TID [CPU] TIME: [PERIOD] [EVENT:] ..." */
static int parse_sample(struct rv_perf_script *p, struct cursor *c, struct rv_event *ev)
{
	struct header h;
	int ret;

	if (!find_header(c, &h))
		return fail(p, "a sample: [COMM] PID/TID [CPU] SECONDS.FRACTION: at its start, or "
			       "an \"instruction trace error\"");
	parse_period_and_event(c, &h);
	skip_spaces(c);
	if (h.comm_len && !(p->line_comm = intern(p, h.comm, h.comm_len)))
		return out_of_memory(p);
	ev->pid = h.pid;
	ev->tid = h.tid;
	ev->time = h.time;

	if (event_is(&h, "branches") && c->p != c->end) {
		enum rv_branch_kind kind;
		uint32_t flags;
		struct cursor t = *c;

		ret = parse_flags(&t, &kind, &flags);
		if (ret < 0)
			return fail(p, "(x), (D) or (t) after the branch flags");
		if (ret > 0 && find_arrow(&t)) {
			*c = t;
			ev->kind = RV_EVENT_BRANCH;
			ev->branch.kind = kind;
			ev->branch.flags = flags;
			return parse_branch(p, c, ev);
		}
		return fail(p, "branch flags (call, return, jcc, jmp, syscall, sysret, "
			       "int, hw int, iret, tx abrt, async, tr strt, tr end) and "
			       "\"IP ... => ADDR ...\" after a branches sample's time");
	}
	if (!h.event) {
		/* magic-trace's fields: no event name; branches have flags,
		 * synthesized events (psb, cbr, ...) none */
		if (c->p == c->end)
			return fail(p, "the sample's fields after its time");
		ret = parse_flags(c, &ev->branch.kind, &ev->branch.flags);
		if (ret < 0)
			return fail(p, "(x), (D) or (t) after the branch flags");
		if (ret > 0) {
			ev->kind = RV_EVENT_BRANCH;
			return parse_branch(p, c, ev);
		}
		if (find_arrow(c))
			return fail(p, "branch flags (call, return, jcc, jmp, syscall, sysret, "
				       "int, hw int, iret, tx abrt, async, tr strt, tr end) after "
				       "the time");
		if (c->end - c->p > 4 && !memcmp(c->p, "cbr:", 4))
			return extra_event(p, &h, "cbr", 3, ev);
		return not_drawn(p, "synthesized events", 18);
	}
	if (event_is(&h, "psb"))
		return not_drawn(p, h.event, h.event_len);
	if (c->p == c->end) {
		/* a call chain follows */
		p->in_stack = true;
		p->stack_sampling = is_sampling_event(&h);
		p->stack_line = p->line_no;
		p->stack = *ev;
		p->stack_interval = interval_of(&h);
		p->stack_period = h.have_period && h.period ? h.period : 1;
		p->stack_cpu = h.cpu;
		p->nr_frames = 0;
		p->stack_comm = p->line_comm;
		p->stack_event = intern(p, h.event, h.event_len);
		return p->stack_event ? LINE_STACK : out_of_memory(p);
	}
	if (is_sampling_event(&h)) {
		/* a sample without its call chain: the one frame */
		p->nr_frames = 0;
		ret = parse_frame(p, c);
		if (ret < 0)
			return ret;
		ev->kind = RV_EVENT_STACK_SAMPLE;
		ev->stack.frames = p->frames;
		ev->stack.nr_frames = p->nr_frames;
		ev->stack.interval_ns = interval_of(&h);
		return LINE_EVENT;
	}
	ret = extra_event(p, &h, h.event, h.event_len, ev);
	if (ret == LINE_EVENT)
		ev->extra.ip = extra_ip(*c, &ev->extra.kernel);
	return ret;
}

/* The call chain read since its header, as an event (LINE_EVENT), or
 * LINE_NOT_DRAWN when it had no frame. */
static int finish_stack(struct rv_perf_script *p, struct rv_event *ev)
{
	const char *event = p->stack_event;

	p->in_stack = false;
	if (!p->nr_frames) {
		p->not_drawn_name = event;
		return LINE_NOT_DRAWN;
	}
	memset(ev, 0, sizeof(*ev));
	ev->pid = p->stack.pid;
	ev->tid = p->stack.tid;
	ev->time = p->stack.time;
	if (p->stack_sampling) {
		ev->kind = RV_EVENT_STACK_SAMPLE;
		ev->stack.frames = p->frames;
		ev->stack.nr_frames = p->nr_frames;
		ev->stack.interval_ns = p->stack_interval;
		return LINE_EVENT;
	}
	ev->kind = RV_EVENT_EXTRA;
	ev->extra.name = event;
	ev->extra.ip = p->frames[0].addr;
	ev->extra.kernel = p->frames[0].kernel;
	ev->extra.count = p->stack_period;
	ev->extra.cpu = p->stack_cpu;
	return LINE_EVENT;
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

/* "instruction trace error type 1 [time 12.345678901] [machine_pid 5 vcpu 0]
 * cpu -1 pid 7 tid 7 ip 0x401000 code 7: Overflow packet" */
static int parse_trace_error(struct rv_perf_script *p, struct cursor *c, struct rv_event *ev)
{
	uint64_t type, code, vm;
	const char *message, *end;
	bool timed = false;

	ev->kind = RV_EVENT_TRACE_ERROR;
	ev->error.offset = UINT64_MAX;
	if (!take_keyword(c, "type") || (skip_spaces(c), !parse_dec(c, &type)))
		return fail(p, "\"type N\" after \"error\"");
	if (take_keyword(c, "time")) {
		skip_spaces(c);
		if (!parse_time(c, &ev->time, true))
			return fail(p, "\"time SECONDS.FRACTION\" in the error");
		timed = ev->time != 0;
	}
	if (take_keyword(c, "machine_pid")) {
		skip_spaces(c);
		if (!parse_dec(c, &vm) || !take_keyword(c, "vcpu") ||
		    (skip_spaces(c), !parse_dec(c, &vm)))
			return fail(p, "\"machine_pid M vcpu V\" in the error");
	}
	if (!take_keyword(c, "cpu") || !parse_cpu(c))
		return fail(p, "\"cpu C\" in the error");
	if (!take_keyword(c, "pid") || (skip_spaces(c), !parse_id(c, &ev->pid)))
		return fail(p, "\"pid P\" in the error");
	if (!take_keyword(c, "tid") || (skip_spaces(c), !parse_id(c, &ev->tid)))
		return fail(p, "\"tid T\" in the error");
	if (!take_keyword(c, "ip") || (skip_spaces(c), !parse_hex(c, &ev->error.ip)))
		return fail(p, "\"ip 0xADDRESS\" in the error");
	if (!take_keyword(c, "code") || (skip_spaces(c), !parse_dec(c, &code)) ||
	    !take_char(c, ':'))
		return fail(p, "\"code N:\" and the message in the error");
	skip_spaces(c);
	message = c->p;
	end = c->end;
	while (end > message && is_space(end[-1]))
		end--;
	ev->error.message = rv_intern_n(&p->pool, message, (size_t)(end - message));
	if (!ev->error.message)
		return out_of_memory(p);
	ev->error.overflow =
		memmem(message, (size_t)(end - message), "Overflow packet", 15) != NULL;
	if (!timed) {
		ev->time = p->last_time; /* perf printed none: the line before's */
		p->stats.untimed_errors++;
	}
	return LINE_EVENT;
}

/* ---- Lines into events ---- */

static int parse_line(struct rv_perf_script *p, const char *text, size_t len, struct rv_event *ev)
{
	struct line l = { text, text + len };
	struct cursor c;

	if (len && text[len - 1] == '\r')
		l.end--;
	c = (struct cursor){ l.start, l.end };
	skip_spaces(&c);
	if (c.p == c.end || *c.p == '#')
		return LINE_SKIP; /* a blank line, or perf's header comments */
	memset(ev, 0, sizeof(*ev));
	p->line_comm = NULL;
	if (take_word(&c, "instruction trace error") || take_word(&c, "unknown AUX error"))
		return parse_trace_error(p, &c, ev);
	if (*l.start == '\t')
		return LINE_SKIP; /* the call chain of a sample drawn without it */
	return parse_sample(p, &c, ev);
}

/* ---- Time order per thread ---- */

/* Keeps the thread's times from going back: an event older than its
 * thread's last takes that time, and is counted. */
static int keep_order(struct rv_perf_script *p, struct rv_event *ev, uint64_t line,
		      struct thread_time **slot)
{
	struct thread_time *t = rv_map_get(&p->threads, ev->tid);

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || rv_map_put(&p->threads, ev->tid, t) < 0) {
			free(t);
			return out_of_memory(p);
		}
		t->time = ev->time;
	}
	*slot = t;
	if (ev->time < t->time) {
		if (p->stats.backwards < RV_PERF_SCRIPT_NOTED)
			p->stats.backwards_at[p->stats.backwards] = line;
		p->stats.backwards++;
		ev->time = t->time;
	}
	t->time = ev->time;
	return 0;
}

/* The event is returned: counted, and its time kept in order. When the
 * line named its thread (comm) otherwise than before, a THREAD_NAME event
 * comes first and the event at the next call. */
static int take_event(struct rv_perf_script *p, struct rv_event *ev, uint64_t line,
		      const char *comm, struct rv_error *err)
{
	struct thread_time *t;

	if (keep_order(p, ev, line, &t) < 0)
		return fail_fatal(p, err, p->fatal.code);
	p->last_time = ev->time;
	if (comm && t->comm != comm) {
		t->comm = comm;
		p->queued = *ev;
		p->have_queued = true;
		memset(ev, 0, sizeof(*ev));
		ev->kind = RV_EVENT_THREAD_NAME;
		ev->pid = p->queued.pid;
		ev->tid = p->queued.tid;
		ev->time = p->queued.time;
		ev->thread.name = comm;
		ev = &p->queued;
	}
	switch (ev->kind) {
	case RV_EVENT_BRANCH:
		p->stats.branches++;
		break;
	case RV_EVENT_TRACE_ERROR:
		p->stats.errors++;
		break;
	case RV_EVENT_STACK_SAMPLE:
		p->stats.samples++;
		break;
	default:
		p->stats.extra++;
		break;
	}
	return 1;
}

static void note_not_drawn(struct rv_perf_script *p)
{
	struct rv_perf_script_stats *s = &p->stats;

	s->not_drawn++;
	for (size_t i = 0; i < s->nr_not_drawn_names; i++)
		if (s->not_drawn_names[i] == p->not_drawn_name)
			return;
	if (s->nr_not_drawn_names < RV_PERF_SCRIPT_NAMES)
		s->not_drawn_names[s->nr_not_drawn_names++] = p->not_drawn_name;
}

static void note_bad(struct rv_perf_script *p, uint64_t line, bool whole)
{
	struct rv_perf_script_stats *s = &p->stats;

	if (!whole) {
		s->cut = true;
		s->cut_line = line;
		return;
	}
	if (s->bad < RV_PERF_SCRIPT_NOTED) {
		s->bad_at[s->bad].line = line;
		s->bad_at[s->bad].expected = p->expected;
	}
	s->bad++;
}

int rv_perf_script_next(struct rv_perf_script *p, struct rv_event *ev, struct rv_error *err)
{
	if (p->fatal.code)
		return fail_fatal(p, err, p->fatal.code);
	if (p->have_queued) {
		*ev = p->queued;
		p->have_queued = false;
		return 1;
	}
	for (;;) {
		const char *line;
		size_t len;
		bool whole;
		int ret;

		if (p->have_pending) {
			line = p->pending;
			len = p->pending_len;
			whole = p->pending_whole;
			p->have_pending = false;
			ret = 1;
		} else {
			ret = read_line(p, &line, &len, &whole, err);
		}
		if (ret < 0)
			return ret;
		if (ret == 0) {
			if (!p->in_stack)
				return 0;
			ret = finish_stack(p, ev);
			if (ret == LINE_NOT_DRAWN) {
				note_not_drawn(p);
				return 0;
			}
			return take_event(p, ev, p->stack_line, p->stack_comm, err);
		}
		p->line_no++;
		p->stats.lines++;
		if (p->in_stack) {
			struct cursor c = { line, line + len };

			if (len && line[0] == '\t') {
				ret = parse_frame(p, &c);
				if (ret == LINE_FATAL)
					return fail_fatal(p, err, p->fatal.code);
				if (ret == LINE_BAD)
					note_bad(p, p->line_no, whole);
				continue;
			}
			skip_spaces(&c);
			if (c.p != c.end) {
				/* no blank line after the chain: this line is
				 * read again after it */
				p->have_pending = true;
				p->pending = line;
				p->pending_len = len;
				p->pending_whole = whole;
				p->line_no--;
				p->stats.lines--;
			} else {
				p->stats.skipped++;
			}
			ret = finish_stack(p, ev);
			if (ret == LINE_NOT_DRAWN) {
				note_not_drawn(p);
				continue;
			}
			return take_event(p, ev, p->stack_line, p->stack_comm, err);
		}
		ret = parse_line(p, line, len, ev);
		switch (ret) {
		case LINE_FATAL:
			return fail_fatal(p, err, p->fatal.code);
		case LINE_BAD:
			note_bad(p, p->line_no, whole);
			continue;
		case LINE_SKIP:
			p->stats.skipped++;
			continue;
		case LINE_NOT_DRAWN:
			note_not_drawn(p);
			continue;
		case LINE_STACK:
			continue;
		default:
			return take_event(p, ev, p->line_no, p->line_comm, err);
		}
	}
}

int rv_perf_script_check_any(const struct rv_perf_script *p, struct rv_error *err)
{
	const struct rv_perf_script_stats *s = &p->stats;
	char names[160] = "";
	size_t used = 0;

	if (s->branches || s->errors || s->samples || s->extra)
		return 0;
	if (!s->lines)
		return rv_error_set(
			err, ENODATA,
			"%s is empty: nothing to decode. Give it the output of `perf "
			"script --itrace=be -F pid,tid,time,flags,ip,addr,sym,symoff,dso` "
			"(Intel PT), or of `perf script` for a `perf record -g` capture",
			p->name);
	for (size_t i = 0; i < s->nr_not_drawn_names && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
					 i ? ", " : " (", s->not_drawn_names[i]);
	if (s->nr_not_drawn_names && used < sizeof(names))
		snprintf(names + used, sizeof(names) - used, "%s)",
			 s->nr_not_drawn_names == RV_PERF_SCRIPT_NAMES ? ", ..." : "");
	return rv_error_set(
		err, ENODATA,
		"%s holds nothing rearview can draw: %" PRIu64 " line%s: 0 branches, 0 samples, "
		"0 other events, %" PRIu64 " line%s of events rearview does not draw%s, %" PRIu64
		" line%s that could not be read%s. Give it the output of `perf script "
		"--itrace=be -F pid,tid,time,flags,ip,addr,sym,symoff,dso` (Intel PT), or of "
		"`perf script` for a `perf record -g` capture",
		p->name, s->lines, s->lines == 1 ? "" : "s", s->not_drawn,
		s->not_drawn == 1 ? "" : "s", names, s->bad + s->cut,
		s->bad + s->cut == 1 ? "" : "s", s->bad ? " (see the warnings above)" : "");
}
