/* fxt_reader.c: the strict FXT reader for tests; see fxt_reader.h.
 *
 * Written from the Fuchsia trace format specification alone; it must never
 * borrow from src/write/, or tests that use it would only prove that the
 * writer agrees with itself. Every field named below by its bit range is
 * quoted from the specification's record layouts.
 */
#include "fxt_reader.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#define FXT_MAGIC_WORD	    0x0016547846040010ull
#define MAX_STRING_INDEX    0x7fff
#define MAX_STRING_LENGTH   32000 /* the specification's conservative limit */
#define NR_THREAD_SLOTS	    256
#define ARENA_CHUNK	    (64 * 1024)
#define TICKS_PER_SECOND_NS 1000000000ull

enum record_type {
	REC_METADATA = 0,
	REC_INITIALIZATION = 1,
	REC_STRING = 2,
	REC_THREAD = 3,
	REC_EVENT = 4,
	REC_BLOB = 5,
	REC_USERSPACE_OBJECT = 6,
	REC_KERNEL_OBJECT = 7,
	REC_SCHEDULING = 8,
	REC_LOG = 9,
	REC_PROFILER = 10,
	REC_LARGE = 15,
};

static const char *const record_names[16] = {
	[REC_METADATA] = "metadata",
	[REC_INITIALIZATION] = "initialization",
	[REC_STRING] = "string",
	[REC_THREAD] = "thread",
	[REC_EVENT] = "event",
	[REC_BLOB] = "blob",
	[REC_USERSPACE_OBJECT] = "userspace object",
	[REC_KERNEL_OBJECT] = "kernel object",
	[REC_SCHEDULING] = "scheduling",
	[REC_LOG] = "log",
	[REC_PROFILER] = "profiler",
	[REC_LARGE] = "large",
};

/* Arena: everything the model points to (strings, argument arrays) lives
 * here, so that fxt_trace_free is one walk and the model never dangles when
 * a string index is redefined. */
struct fxt_arena {
	struct fxt_arena *next;
	size_t used, cap;
	max_align_t data[];
};

struct string_slot {
	const char *s;
	size_t len;
	bool defined;
};

struct thread_slot {
	uint64_t pid, tid;
	bool defined;
};

/* Duration begins still open on one thread, as indices into trace->events. */
struct open_stack {
	uint64_t pid, tid;
	bool used;
	size_t *begins;
	size_t nr, cap;
};

struct reader {
	const unsigned char *data;
	size_t size;
	struct fxt_trace *t;
	char *err;
	size_t err_len;

	size_t rec_off; /* offset of the record being read, for messages */
	unsigned rec_type;

	struct string_slot strings[MAX_STRING_INDEX + 1];
	struct thread_slot threads[NR_THREAD_SLOTS];
	bool have_init;
	bool have_provider;
	uint64_t provider_id;

	size_t cap_events, cap_spans, cap_instants, cap_counters, cap_objects;
	size_t cap_processes, cap_threads, cap_unterminated;

	struct open_stack *stacks; /* open addressing, power-of-two size */
	size_t nr_stacks, cap_stacks;
};

/* A bounded view of a record (or of one argument inside it), in words. */
struct cursor {
	struct reader *r;
	const unsigned char *base;
	size_t nwords, pos;
	const char *unit; /* "record" or "argument", for messages */
};

static void set_error(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !err_len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
}

static int fail(struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Every format error: where (the record's offset and type) and what. */
static int fail(struct reader *r, const char *fmt, ...)
{
	char detail[768];
	const char *kind = record_names[r->rec_type & 15];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	set_error(r->err, r->err_len, "%s record at offset %zu (0x%zx): %s",
		  kind ? kind : "unknown", r->rec_off, r->rec_off, detail);
	return -EINVAL;
}

static int fail_nomem(struct reader *r)
{
	set_error(r->err, r->err_len, "out of memory reading the trace");
	return -ENOMEM;
}

static void *arena_alloc(struct fxt_arena **arena, size_t n)
{
	struct fxt_arena *a = *arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!a || a->cap - a->used < n) {
		size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;

		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->next = *arena;
		a->used = 0;
		a->cap = cap;
		*arena = a;
	}
	p = (unsigned char *)a->data + a->used;
	a->used += n;
	return p;
}

static char *arena_strdup(struct fxt_arena **arena, const unsigned char *s, size_t len)
{
	char *copy = arena_alloc(arena, len + 1);

	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	return copy;
}

/* Makes room for one more element; returns the (possibly moved) array or NULL. */
static void *reserve(void *array, size_t *cap, size_t nr, size_t elem)
{
	size_t new_cap;
	void *p;

	if (nr < *cap)
		return array;
	new_cap = *cap ? *cap * 2 : 64;
	p = realloc(array, new_cap * elem);
	if (!p)
		return NULL;
	*cap = new_cap;
	return p;
}

static uint64_t load_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t fxt_ticks_to_ns(const struct fxt_trace *trace, uint64_t ticks)
{
	uint64_t tps = trace->ticks_per_second;

	if (tps == 0 || tps == TICKS_PER_SECOND_NS)
		return ticks;
	return (uint64_t)((unsigned __int128)ticks * TICKS_PER_SECOND_NS / tps);
}

/* Returns the offset of the first byte that breaks UTF-8 (or is NUL), or len. */
static size_t utf8_error_at(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		uint32_t cp, min;

		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			need = 2;
			cp = c & 0x0f;
			min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
			min = 0x10000;
		} else {
			return i;
		}
		if (len - i - 1 < need)
			return i;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += need + 1;
	}
	return len;
}

static int take_word(struct cursor *c, uint64_t *value, const char *what)
{
	if (c->pos >= c->nwords)
		return fail(c->r, "no room for the %s: the %s has only %zu words", what, c->unit,
			    c->nwords);
	*value = load_le64(c->base + 8 * c->pos);
	c->pos++;
	return 0;
}

/* A stream of len bytes, zero-padded to a whole number of words. */
static int take_stream(struct cursor *c, size_t len, const unsigned char **bytes, const char *what)
{
	size_t words = len / 8 + (len % 8 != 0);
	const unsigned char *p = c->base + 8 * c->pos;

	if (c->nwords - c->pos < words)
		return fail(c->r,
			    "no room for the %s (%zu bytes, %zu words): the %s has %zu words "
			    "and %zu are left",
			    what, len, words, c->unit, c->nwords, c->nwords - c->pos);
	for (size_t i = len; i < words * 8; i++) {
		if (p[i] != 0) {
			size_t off = (size_t)(p + i - c->r->data);

			return fail(c->r,
				    "padding byte of the %s at offset %zu is 0x%02x, not zero",
				    what, off, p[i]);
		}
	}
	*bytes = p;
	c->pos += words;
	return 0;
}

static int check_end(struct cursor *c, const char *what)
{
	if (c->pos != c->nwords)
		return fail(c->r, "the %s has %zu words but its fields take %zu%s%s", c->unit,
			    c->nwords, c->pos, what ? " " : "", what ? what : "");
	return 0;
}

static int check_reserved(struct reader *r, uint64_t word, int lo, const char *where)
{
	uint64_t bits = word >> lo;

	if (bits)
		return fail(r, "reserved bits [%d..63] of the %s are 0x%llx, not zero", lo, where,
			    (unsigned long long)bits);
	return 0;
}

enum string_kind {
	STRING_UTF8,  /* names, categories, values: UTF-8 without NUL */
	STRING_BYTES, /* kernel object names: any bytes */
};

static int check_string(struct reader *r, const unsigned char *s, size_t len, enum string_kind kind,
			const char *what)
{
	size_t bad;

	if (kind == STRING_BYTES)
		return 0;
	bad = utf8_error_at(s, len);
	if (bad < len)
		return fail(r,
			    "the %s is not valid UTF-8 (or holds a NUL byte): byte %zu of %zu "
			    "is 0x%02x",
			    what, bad, len, s[bad]);
	return 0;
}

/* Resolves a 16-bit string ref; an inline string's stream is taken from c. */
static int read_string_ref(struct cursor *c, unsigned ref, enum string_kind kind, const char *what,
			   const char **out, size_t *out_len)
{
	struct reader *r = c->r;
	const unsigned char *bytes;
	size_t len;
	int ret;

	if (ref == 0) {
		*out = "";
		if (out_len)
			*out_len = 0;
		return 0;
	}
	if (ref & 0x8000) {
		len = ref & 0x7fff;
		ret = take_stream(c, len, &bytes, what);
		if (ret)
			return ret;
		ret = check_string(r, bytes, len, kind, what);
		if (ret)
			return ret;
		*out = arena_strdup(&r->t->arena, bytes, len);
		if (!*out)
			return fail_nomem(r);
		r->t->stats.inline_string_refs++;
	} else {
		if (!r->strings[ref].defined)
			return fail(r,
				    "the %s refers to string index %u, which no earlier string "
				    "record defines",
				    what, ref);
		*out = r->strings[ref].s;
		len = r->strings[ref].len;
		r->t->stats.indexed_string_refs++;
	}
	if (out_len)
		*out_len = len;
	return 0;
}

/* Resolves an 8-bit thread ref; an inline thread's two words come from c. */
static int read_thread_ref(struct cursor *c, unsigned ref, const char *what, uint64_t *pid,
			   uint64_t *tid)
{
	struct reader *r = c->r;
	int ret;

	if (ref == 0) {
		ret = take_word(c, pid, "inline process koid");
		if (!ret)
			ret = take_word(c, tid, "inline thread koid");
		return ret;
	}
	if (!r->threads[ref].defined)
		return fail(r,
			    "the %s refers to thread index %u, which no earlier thread record "
			    "defines",
			    what, ref);
	*pid = r->threads[ref].pid;
	*tid = r->threads[ref].tid;
	return 0;
}

/* Only the process koid of a thread ref (userspace object records). */
static int read_process_ref(struct cursor *c, unsigned ref, uint64_t *pid)
{
	struct reader *r = c->r;

	if (ref == 0)
		return take_word(c, pid, "inline process koid");
	if (!r->threads[ref].defined)
		return fail(r,
			    "the process refers to thread index %u, which no earlier thread "
			    "record defines",
			    ref);
	*pid = r->threads[ref].pid;
	return 0;
}

const char *fxt_arg_type_name(enum fxt_arg_type type)
{
	static const char *const names[] = {
		"null",	  "int32",   "uint32", "int64", "uint64", "double",
		"string", "pointer", "koid",   "bool",	"blob",
	};

	if ((unsigned)type < sizeof(names) / sizeof(names[0]))
		return names[type];
	return "unknown";
}

const char *fxt_event_type_name(enum fxt_event_type type)
{
	static const char *const names[] = {
		"instant",	     "counter",	    "duration begin", "duration end",
		"duration complete", "async begin", "async instant",  "async end",
		"flow begin",	     "flow step",   "flow end",
	};

	if ((unsigned)type < sizeof(names) / sizeof(names[0]))
		return names[type];
	return "unknown";
}

/* Expected words of an argument after its header and name stream. */
static int read_arg_value(struct cursor *sub, struct fxt_arg *a, uint64_t header, size_t index)
{
	struct reader *r = sub->r;
	uint64_t value = header >> 32;
	char where[64];
	uint64_t word;
	int ret;

	snprintf(where, sizeof(where), "header of argument %zu", index);
	switch (a->type) {
	case FXT_ARG_NULL:
		return check_reserved(r, header, 32, where);
	case FXT_ARG_INT32:
		a->i = (int32_t)(uint32_t)value;
		return 0;
	case FXT_ARG_UINT32:
		a->u = (uint32_t)value;
		return 0;
	case FXT_ARG_INT64:
	case FXT_ARG_UINT64:
	case FXT_ARG_DOUBLE:
	case FXT_ARG_POINTER:
	case FXT_ARG_KOID:
		ret = check_reserved(r, header, 32, where);
		if (!ret)
			ret = take_word(sub, &word, "argument value");
		if (ret)
			return ret;
		if (a->type == FXT_ARG_INT64)
			a->i = (int64_t)word;
		else if (a->type == FXT_ARG_DOUBLE)
			memcpy(&a->d, &word, sizeof(a->d));
		else
			a->u = word;
		return 0;
	case FXT_ARG_STRING:
		ret = check_reserved(r, header, 48, where);
		if (!ret)
			ret = read_string_ref(sub, (unsigned)(value & 0xffff), STRING_UTF8,
					      "string argument value", &a->s, &a->s_len);
		return ret;
	case FXT_ARG_BOOL:
		ret = check_reserved(r, header, 33, where);
		a->b = value & 1;
		return ret;
	case FXT_ARG_BLOB:
		a->blob_size = (uint32_t)value;
		return take_stream(sub, a->blob_size, &a->blob, "blob argument payload");
	}
	return fail(r, "argument %zu ('%s') has unknown type %u (known: 0 to 10)", index, a->name,
		    (unsigned)a->type);
}

static int read_args(struct cursor *c, unsigned nr_args, const struct fxt_arg **out)
{
	struct reader *r = c->r;
	struct fxt_arg *args;

	*out = NULL;
	if (nr_args == 0)
		return 0;
	args = arena_alloc(&r->t->arena, nr_args * sizeof(*args));
	if (!args)
		return fail_nomem(r);
	memset(args, 0, nr_args * sizeof(*args));
	for (unsigned i = 0; i < nr_args; i++) {
		struct fxt_arg *a = &args[i];
		size_t arg_off = (size_t)(c->base + 8 * c->pos - r->data);
		struct cursor sub;
		uint64_t header;
		size_t size;
		char what[64];
		int ret;

		snprintf(what, sizeof(what), "header of argument %u of %u", i, nr_args);
		ret = take_word(c, &header, what);
		if (ret)
			return ret;
		a->type = (enum fxt_arg_type)(header & 0xf);
		size = (header >> 4) & 0xfff;
		if (size == 0)
			return fail(r,
				    "argument %u at offset %zu has size 0; the size includes the "
				    "header word",
				    i, arg_off);
		if (size - 1 > c->nwords - c->pos)
			return fail(r,
				    "argument %u at offset %zu declares %zu words but only %zu are "
				    "left in the record",
				    i, arg_off, size, c->nwords - c->pos + 1);
		sub = (struct cursor){ .r = r,
				       .base = c->base + 8 * (c->pos - 1),
				       .nwords = size,
				       .pos = 1,
				       .unit = "argument" };
		ret = read_string_ref(&sub, (unsigned)((header >> 16) & 0xffff), STRING_UTF8,
				      "argument name", &a->name, NULL);
		if (!ret)
			ret = read_arg_value(&sub, a, header, i);
		if (ret)
			return ret;
		if (sub.pos != sub.nwords)
			return fail(r,
				    "argument %u ('%s', %s) at offset %zu declares %zu words but "
				    "its fields take %zu",
				    i, a->name, fxt_arg_type_name(a->type), arg_off, size, sub.pos);
		c->pos += size - 1;
	}
	*out = args;
	return 0;
}

static struct open_stack *find_stack(struct reader *r, uint64_t pid, uint64_t tid, bool create)
{
	uint64_t h;
	size_t i;

	if (create && (r->nr_stacks + 1) * 2 > r->cap_stacks) {
		size_t new_cap = r->cap_stacks ? r->cap_stacks * 2 : 64;
		struct open_stack *n = calloc(new_cap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t k = 0; k < r->cap_stacks; k++) {
			struct open_stack *old = &r->stacks[k];

			if (!old->used)
				continue;
			h = (old->pid * 0x9e3779b97f4a7c15ull) ^ (old->tid * 0xc2b2ae3d27d4eb4full);
			for (i = (h >> 17) & (new_cap - 1); n[i].used; i = (i + 1) & (new_cap - 1))
				;
			n[i] = *old;
		}
		free(r->stacks);
		r->stacks = n;
		r->cap_stacks = new_cap;
	}
	if (!r->cap_stacks)
		return NULL;
	h = (pid * 0x9e3779b97f4a7c15ull) ^ (tid * 0xc2b2ae3d27d4eb4full);
	for (i = (h >> 17) & (r->cap_stacks - 1); r->stacks[i].used;
	     i = (i + 1) & (r->cap_stacks - 1)) {
		if (r->stacks[i].pid == pid && r->stacks[i].tid == tid)
			return &r->stacks[i];
	}
	if (!create)
		return NULL;
	r->stacks[i].used = true;
	r->stacks[i].pid = pid;
	r->stacks[i].tid = tid;
	r->nr_stacks++;
	return &r->stacks[i];
}

static struct fxt_span *new_span(struct reader *r)
{
	struct fxt_trace *t = r->t;
	struct fxt_span *spans = reserve(t->spans, &r->cap_spans, t->nr_spans, sizeof(*spans));
	struct fxt_span *s;

	if (!spans)
		return NULL;
	t->spans = spans;
	s = &spans[t->nr_spans++];
	memset(s, 0, sizeof(*s));
	s->parent = s->first_child = s->next_sibling = FXT_NONE;
	return s;
}

static int add_complete_span(struct reader *r, const struct fxt_event *e)
{
	struct fxt_span *s = new_span(r);

	if (!s)
		return fail_nomem(r);
	s->pid = e->pid;
	s->tid = e->tid;
	s->category = e->category;
	s->name = e->name;
	s->begin = e->ts;
	s->end = e->end;
	s->begin_ns = fxt_ticks_to_ns(r->t, e->ts);
	s->end_ns = fxt_ticks_to_ns(r->t, e->end);
	s->args = e->args;
	s->nr_args = e->nr_args;
	s->offset = s->end_offset = e->offset;
	s->complete = true;
	return 0;
}

static int push_begin(struct reader *r, size_t event_index)
{
	const struct fxt_event *e = &r->t->events[event_index];
	struct open_stack *st = find_stack(r, e->pid, e->tid, true);
	size_t *begins;

	if (!st)
		return fail_nomem(r);
	begins = reserve(st->begins, &st->cap, st->nr, sizeof(*begins));
	if (!begins)
		return fail_nomem(r);
	st->begins = begins;
	st->begins[st->nr++] = event_index;
	return 0;
}

static int match_end(struct reader *r, const struct fxt_event *end)
{
	struct open_stack *st = find_stack(r, end->pid, end->tid, false);
	const struct fxt_event *begin;
	struct fxt_arg *args;
	struct fxt_span *s;

	if (!st || st->nr == 0)
		return fail(r, "duration end '%s' on thread %llu/%llu has no open duration begin",
			    end->name, (unsigned long long)end->pid, (unsigned long long)end->tid);
	begin = &r->t->events[st->begins[st->nr - 1]];
	if (end->name[0] && strcmp(end->name, begin->name) != 0)
		return fail(r,
			    "duration end '%s' does not match the innermost open duration begin "
			    "'%s' (offset %zu) of thread %llu/%llu",
			    end->name, begin->name, begin->offset, (unsigned long long)end->pid,
			    (unsigned long long)end->tid);
	if (end->ts < begin->ts)
		return fail(r,
			    "duration end '%s' at %llu ticks is before its begin at %llu ticks "
			    "(offset %zu)",
			    begin->name, (unsigned long long)end->ts, (unsigned long long)begin->ts,
			    begin->offset);
	st->nr--;

	s = new_span(r);
	if (!s)
		return fail_nomem(r);
	/* new_span may have moved nothing that `begin` points into: events
	 * and spans are separate arrays. */
	s->pid = begin->pid;
	s->tid = begin->tid;
	s->category = begin->category;
	s->name = begin->name;
	s->begin = begin->ts;
	s->end = end->ts;
	s->begin_ns = fxt_ticks_to_ns(r->t, begin->ts);
	s->end_ns = fxt_ticks_to_ns(r->t, end->ts);
	s->offset = begin->offset;
	s->end_offset = end->offset;
	s->nr_args = begin->nr_args + end->nr_args;
	if (s->nr_args) {
		args = arena_alloc(&r->t->arena, s->nr_args * sizeof(*args));
		if (!args)
			return fail_nomem(r);
		if (begin->nr_args)
			memcpy(args, begin->args, begin->nr_args * sizeof(*args));
		if (end->nr_args)
			memcpy(args + begin->nr_args, end->args, end->nr_args * sizeof(*args));
		s->args = args;
	}
	return 0;
}

static int add_instant(struct reader *r, const struct fxt_event *e)
{
	struct fxt_trace *t = r->t;
	struct fxt_instant *in =
		reserve(t->instants, &r->cap_instants, t->nr_instants, sizeof(*in));

	if (!in)
		return fail_nomem(r);
	t->instants = in;
	in = &in[t->nr_instants++];
	*in = (struct fxt_instant){ .pid = e->pid,
				    .tid = e->tid,
				    .category = e->category,
				    .name = e->name,
				    .ts = e->ts,
				    .ts_ns = fxt_ticks_to_ns(t, e->ts),
				    .args = e->args,
				    .nr_args = e->nr_args,
				    .offset = e->offset };
	return 0;
}

static int add_counter(struct reader *r, const struct fxt_event *e)
{
	struct fxt_trace *t = r->t;
	struct fxt_counter *cn =
		reserve(t->counters, &r->cap_counters, t->nr_counters, sizeof(*cn));

	if (!cn)
		return fail_nomem(r);
	t->counters = cn;
	cn = &cn[t->nr_counters++];
	*cn = (struct fxt_counter){ .pid = e->pid,
				    .tid = e->tid,
				    .category = e->category,
				    .name = e->name,
				    .ts = e->ts,
				    .ts_ns = fxt_ticks_to_ns(t, e->ts),
				    .id = e->id,
				    .args = e->args,
				    .nr_args = e->nr_args,
				    .offset = e->offset };
	return 0;
}

/* Event record (4): [16..19] event type, [20..23] argument count, [24..31]
 * thread ref, [32..47] category ref, [48..63] name ref; then timestamp,
 * inline pid/tid, category and name streams, arguments, type-specific word. */
static int read_event(struct reader *r, struct cursor *c, uint64_t h)
{
	struct fxt_trace *t = r->t;
	unsigned type = (h >> 16) & 0xf;
	unsigned nr_args = (h >> 20) & 0xf;
	unsigned thread_ref = (h >> 24) & 0xff;
	struct fxt_event e = { 0 }, *events;
	int ret;

	if (type > FXT_EVENT_FLOW_END)
		return fail(r, "unknown event type %u (known: 0 to 10)", type);
	if (!r->have_init)
		return fail(r, "event before the initialization record: ticks per second are "
			       "unknown");
	e.type = (enum fxt_event_type)type;
	e.offset = r->rec_off;
	e.size = c->nwords * 8;
	e.nr_args = nr_args;
	ret = take_word(c, &e.ts, "timestamp");
	if (!ret)
		ret = read_thread_ref(c, thread_ref, "event's thread", &e.pid, &e.tid);
	if (!ret)
		ret = read_string_ref(c, (unsigned)((h >> 32) & 0xffff), STRING_UTF8,
				      "event category", &e.category, NULL);
	if (!ret)
		ret = read_string_ref(c, (unsigned)(h >> 48), STRING_UTF8, "event name", &e.name,
				      NULL);
	if (!ret)
		ret = read_args(c, nr_args, &e.args);
	if (ret)
		return ret;
	switch (e.type) {
	case FXT_EVENT_COUNTER:
		ret = take_word(c, &e.id, "counter id");
		break;
	case FXT_EVENT_DURATION_COMPLETE:
		ret = take_word(c, &e.end, "end timestamp");
		break;
	case FXT_EVENT_ASYNC_BEGIN:
	case FXT_EVENT_ASYNC_INSTANT:
	case FXT_EVENT_ASYNC_END:
		ret = take_word(c, &e.id, "async correlation id");
		break;
	case FXT_EVENT_FLOW_BEGIN:
	case FXT_EVENT_FLOW_STEP:
	case FXT_EVENT_FLOW_END:
		ret = take_word(c, &e.id, "flow correlation id");
		break;
	default:
		break;
	}
	if (!ret)
		ret = check_end(c, "(event of that type and argument count)");
	if (ret)
		return ret;
	if (e.type == FXT_EVENT_DURATION_COMPLETE && e.end < e.ts)
		return fail(r,
			    "duration complete event '%s' ends at %llu ticks, before it begins "
			    "at %llu",
			    e.name, (unsigned long long)e.end, (unsigned long long)e.ts);

	if (thread_ref)
		t->stats.indexed_thread_refs++;
	else
		t->stats.inline_thread_refs++;
	t->stats.events_by_type[type]++;
	events = reserve(t->events, &r->cap_events, t->nr_events, sizeof(*events));
	if (!events)
		return fail_nomem(r);
	t->events = events;
	events[t->nr_events++] = e;

	switch (e.type) {
	case FXT_EVENT_INSTANT:
		return add_instant(r, &e);
	case FXT_EVENT_COUNTER:
		return add_counter(r, &e);
	case FXT_EVENT_DURATION_BEGIN:
		return push_begin(r, t->nr_events - 1);
	case FXT_EVENT_DURATION_END:
		return match_end(r, &e);
	case FXT_EVENT_DURATION_COMPLETE:
		return add_complete_span(r, &e);
	default:
		return 0;
	}
}

static int check_provider(struct reader *r, uint64_t id)
{
	if (r->have_provider && r->provider_id != id)
		return fail(r,
			    "provider %llu follows provider %llu: traces from several providers "
			    "are not supported by this reader",
			    (unsigned long long)id, (unsigned long long)r->provider_id);
	r->have_provider = true;
	r->provider_id = id;
	return 0;
}

/* Metadata record (0): [16..19] metadata type. */
static int read_metadata(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned type = (h >> 16) & 0xf;
	uint64_t provider = (h >> 20) & 0xffffffffull;
	const unsigned char *name;
	size_t len;
	int ret;

	switch (type) {
	case 1: /* provider info: [20..51] id, [52..59] name length, [60..63] 0 */
		ret = check_reserved(r, h, 60, "provider info header");
		len = (h >> 52) & 0xff;
		if (!ret)
			ret = take_stream(c, len, &name, "provider name");
		if (!ret)
			ret = check_string(r, name, len, STRING_UTF8, "provider name");
		if (!ret)
			ret = check_end(c, NULL);
		if (!ret)
			ret = check_provider(r, provider);
		return ret;
	case 2: /* provider section: [20..51] id, [52..63] 0 */
		ret = check_reserved(r, h, 52, "provider section header");
		if (!ret)
			ret = check_end(c, NULL);
		if (!ret)
			ret = check_provider(r, provider);
		return ret;
	case 3: /* provider event: [20..51] id, [52..55] event, [56..63] 0 */
		ret = check_reserved(r, h, 56, "provider event header");
		if (!ret && ((h >> 52) & 0xf) != 0)
			ret = fail(r, "unknown provider event %u (known: 0, buffer full)",
				   (unsigned)((h >> 52) & 0xf));
		if (!ret)
			ret = check_end(c, NULL);
		return ret;
	case 4: /* trace info: [20..23] trace info type; 0 is the magic record */
		if (((h >> 20) & 0xf) != 0)
			return fail(r, "unknown trace info type %u (known: 0, magic number)",
				    (unsigned)((h >> 20) & 0xf));
		if (h != FXT_MAGIC_WORD)
			return fail(r, "magic number record is 0x%016llx, not 0x%016llx",
				    (unsigned long long)h, (unsigned long long)FXT_MAGIC_WORD);
		return check_end(c, NULL);
	default:
		return fail(r, "unknown metadata type %u (known: 1 to 4)", type);
	}
}

/* Initialization record (1): [16..63] reserved; one word, ticks per second. */
static int read_initialization(struct reader *r, struct cursor *c, uint64_t h)
{
	uint64_t tps;
	int ret;

	ret = check_reserved(r, h, 16, "header");
	if (!ret)
		ret = take_word(c, &tps, "ticks per second");
	if (!ret)
		ret = check_end(c, NULL);
	if (ret)
		return ret;
	if (tps == 0)
		return fail(r, "ticks per second is 0");
	if (r->have_init && tps != r->t->ticks_per_second)
		return fail(r, "ticks per second changes from %llu to %llu",
			    (unsigned long long)r->t->ticks_per_second, (unsigned long long)tps);
	r->have_init = true;
	r->t->ticks_per_second = tps;
	return 0;
}

/* String record (2): [16..30] index, [31] 0, [32..46] length, [47] 0,
 * [48..63] reserved; then the string stream. */
static int read_string_record(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned index = (h >> 16) & 0x7fff;
	size_t len = (h >> 32) & 0x7fff;
	struct string_slot *slot;
	const unsigned char *bytes;
	char *copy;
	int ret;

	if ((h >> 31) & 1)
		return fail(r, "bit 31 (above the string index) is set; it must be zero");
	if ((h >> 47) & 1)
		return fail(r, "bit 47 (above the string length) is set; it must be zero");
	ret = check_reserved(r, h, 48, "header");
	if (ret)
		return ret;
	if (index == 0)
		return fail(r, "string index 0 is reserved for the empty string");
	if (len > MAX_STRING_LENGTH)
		return fail(r, "string of %zu bytes is longer than the format's limit of %d", len,
			    MAX_STRING_LENGTH);
	ret = take_stream(c, len, &bytes, "string");
	if (!ret)
		ret = check_string(r, bytes, len, STRING_UTF8, "string");
	if (!ret)
		ret = check_end(c, NULL);
	if (ret)
		return ret;
	copy = arena_strdup(&r->t->arena, bytes, len);
	if (!copy)
		return fail_nomem(r);
	slot = &r->strings[index];
	if (slot->defined)
		r->t->stats.string_redefinitions++;
	slot->s = copy;
	slot->len = len;
	slot->defined = true;
	return 0;
}

/* Thread record (3): [16..23] index, [24..63] reserved; pid and tid words. */
static int read_thread_record(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned index = (h >> 16) & 0xff;
	uint64_t pid, tid;
	int ret;

	ret = check_reserved(r, h, 24, "header");
	if (ret)
		return ret;
	if (index == 0)
		return fail(r, "thread index 0 is reserved for inline threads");
	ret = take_word(c, &pid, "process koid");
	if (!ret)
		ret = take_word(c, &tid, "thread koid");
	if (!ret)
		ret = check_end(c, NULL);
	if (ret)
		return ret;
	if (r->threads[index].defined)
		r->t->stats.thread_redefinitions++;
	r->threads[index] = (struct thread_slot){ .pid = pid, .tid = tid, .defined = true };
	return 0;
}

/* Blob record (5): [16..31] name ref, [32..46] payload size, [47] 0,
 * [48..55] blob type, [56..63] reserved; name stream, payload stream. */
static int read_blob(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned blob_type = (h >> 48) & 0xff;
	const unsigned char *payload;
	const char *name;
	int ret;

	if ((h >> 47) & 1)
		return fail(r, "bit 47 (above the payload size) is set; it must be zero");
	ret = check_reserved(r, h, 56, "header");
	if (ret)
		return ret;
	if (blob_type < 1 || blob_type > 3)
		return fail(r, "unknown blob type %u (known: 1 to 3)", blob_type);
	ret = read_string_ref(c, (unsigned)((h >> 16) & 0xffff), STRING_UTF8, "blob name", &name,
			      NULL);
	if (!ret)
		ret = take_stream(c, (h >> 32) & 0x7fff, &payload, "blob payload");
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

/* Userspace object record (6): [16..23] process (thread ref), [24..39] name,
 * [40..43] argument count, [44..63] reserved; pointer word, [pid word], name
 * stream, arguments. */
static int read_userspace_object(struct reader *r, struct cursor *c, uint64_t h)
{
	const struct fxt_arg *args;
	uint64_t pointer, pid;
	const char *name;
	int ret;

	ret = check_reserved(r, h, 44, "header");
	if (!ret)
		ret = take_word(c, &pointer, "pointer");
	if (!ret)
		ret = read_process_ref(c, (unsigned)((h >> 16) & 0xff), &pid);
	if (!ret)
		ret = read_string_ref(c, (unsigned)((h >> 24) & 0xffff), STRING_UTF8, "object name",
				      &name, NULL);
	if (!ret)
		ret = read_args(c, (unsigned)((h >> 40) & 0xf), &args);
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

static int upsert_process(struct reader *r, const struct fxt_kobject *o)
{
	struct fxt_trace *t = r->t;
	struct fxt_process *p;

	for (size_t i = 0; i < t->nr_processes; i++) {
		if (t->processes[i].koid == o->koid) {
			t->processes[i].name = o->name;
			t->processes[i].offset = o->offset;
			return 0;
		}
	}
	p = reserve(t->processes, &r->cap_processes, t->nr_processes, sizeof(*p));
	if (!p)
		return fail_nomem(r);
	t->processes = p;
	p[t->nr_processes++] =
		(struct fxt_process){ .koid = o->koid, .name = o->name, .offset = o->offset };
	return 0;
}

static int upsert_thread(struct reader *r, const struct fxt_kobject *o)
{
	const struct fxt_arg *process = fxt_find_arg(o->args, o->nr_args, "process");
	struct fxt_trace *t = r->t;
	struct fxt_thread th, *p;

	if (process && process->type != FXT_ARG_KOID)
		return fail(r, "the \"process\" argument of thread %llu is a %s, not a koid",
			    (unsigned long long)o->koid, fxt_arg_type_name(process->type));
	th = (struct fxt_thread){ .koid = o->koid,
				  .pid = process ? process->u : 0,
				  .has_process = process != NULL,
				  .name = o->name,
				  .offset = o->offset };
	for (size_t i = 0; i < t->nr_threads; i++) {
		if (t->threads[i].koid == o->koid) {
			t->threads[i] = th;
			return 0;
		}
	}
	p = reserve(t->threads, &r->cap_threads, t->nr_threads, sizeof(*p));
	if (!p)
		return fail_nomem(r);
	t->threads = p;
	p[t->nr_threads++] = th;
	return 0;
}

/* Kernel object record (7): [16..23] object type, [24..39] name ref, [40..43]
 * argument count, [44..63] reserved; koid word, name stream, arguments. */
static int read_kernel_object(struct reader *r, struct cursor *c, uint64_t h)
{
	struct fxt_trace *t = r->t;
	struct fxt_kobject o = { 0 }, *objects;
	int ret;

	o.obj_type = (h >> 16) & 0xff;
	o.offset = r->rec_off;
	o.nr_args = (h >> 40) & 0xf;
	ret = check_reserved(r, h, 44, "header");
	if (!ret)
		ret = take_word(c, &o.koid, "koid");
	if (!ret)
		ret = read_string_ref(c, (unsigned)((h >> 24) & 0xffff), STRING_BYTES,
				      "kernel object name", &o.name, NULL);
	if (!ret)
		ret = read_args(c, (unsigned)o.nr_args, &o.args);
	if (!ret)
		ret = check_end(c, "(object with that argument count)");
	if (ret)
		return ret;
	objects = reserve(t->objects, &r->cap_objects, t->nr_objects, sizeof(*objects));
	if (!objects)
		return fail_nomem(r);
	t->objects = objects;
	objects[t->nr_objects++] = o;
	if (o.obj_type == 1)
		return upsert_process(r, &o);
	if (o.obj_type == 2)
		return upsert_thread(r, &o);
	return 0;
}

/* Scheduling record (8): [60..63] scheduling record type. */
static int read_scheduling(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned type = (unsigned)(h >> 60);
	const struct fxt_arg *args;
	uint64_t word, pid, tid;
	int ret;

	switch (type) {
	case 0: /* legacy context switch: [24..27] state, [28..35] out, [36..43] in */
		if (((h >> 24) & 0xf) > 5 || ((h >> 24) & 0xf) == 1)
			return fail(r, "outgoing thread state %u is not one of 0, 2 to 5",
				    (unsigned)((h >> 24) & 0xf));
		ret = take_word(c, &word, "timestamp");
		if (!ret)
			ret = read_thread_ref(c, (unsigned)((h >> 28) & 0xff), "outgoing thread",
					      &pid, &tid);
		if (!ret)
			ret = read_thread_ref(c, (unsigned)((h >> 36) & 0xff), "incoming thread",
					      &pid, &tid);
		break;
	case 1: /* context switch: [16..19] args, [36..39] state, [40..59] reserved */
		if ((h >> 40) & 0xfffff)
			return fail(r, "reserved bits [40..59] of the header are not zero");
		if (((h >> 36) & 0xf) > 5)
			return fail(r, "outgoing thread state %u is unknown (known: 0 to 5)",
				    (unsigned)((h >> 36) & 0xf));
		ret = take_word(c, &word, "timestamp");
		if (!ret)
			ret = take_word(c, &word, "outgoing thread koid");
		if (!ret)
			ret = take_word(c, &word, "incoming thread koid");
		if (!ret)
			ret = read_args(c, (unsigned)((h >> 16) & 0xf), &args);
		break;
	case 2: /* thread wakeup: [16..19] args, [36..59] reserved */
		if ((h >> 36) & 0xffffff)
			return fail(r, "reserved bits [36..59] of the header are not zero");
		ret = take_word(c, &word, "timestamp");
		if (!ret)
			ret = take_word(c, &word, "waking thread koid");
		if (!ret)
			ret = read_args(c, (unsigned)((h >> 16) & 0xf), &args);
		break;
	default:
		return fail(r, "unknown scheduling record type %u (known: 0 to 2)", type);
	}
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

/* Log record (9): [16..30] length, [31] 0, [32..39] thread ref, [40..63]
 * reserved; timestamp, [pid, tid], message stream. */
static int read_log(struct reader *r, struct cursor *c, uint64_t h)
{
	size_t len = (h >> 16) & 0x7fff;
	const unsigned char *message;
	uint64_t ts, pid, tid;
	int ret;

	if ((h >> 31) & 1)
		return fail(r, "bit 31 (above the message length) is set; it must be zero");
	ret = check_reserved(r, h, 40, "header");
	if (!ret)
		ret = take_word(c, &ts, "timestamp");
	if (!ret)
		ret = read_thread_ref(c, (unsigned)((h >> 32) & 0xff), "log's thread", &pid, &tid);
	if (!ret)
		ret = take_stream(c, len, &message, "log message");
	if (!ret)
		ret = check_string(r, message, len, STRING_UTF8, "log message");
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

/* Profiler record (10): [16..19] subtype, [20..27] thread ref. */
static int read_profiler(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned subtype = (h >> 16) & 0xf;
	const unsigned char *bytes;
	uint64_t word, pid, tid;
	size_t words = 0;
	int ret;

	if (subtype > 2)
		return fail(r, "unknown profiler record subtype %u (known: 0 to 2)", subtype);
	if (subtype == 0)
		ret = check_reserved(r, h, 60, "module header");
	else if (subtype == 1)
		ret = check_reserved(r, h, 47, "mmap header");
	else
		ret = check_reserved(r, h, 36, "backtrace header");
	if (!ret)
		ret = take_word(c, &word, "timestamp");
	if (!ret)
		ret = read_thread_ref(c, (unsigned)((h >> 20) & 0xff), "profiler record's thread",
				      &pid, &tid);
	if (ret)
		return ret;
	if (subtype == 0) {
		ret = take_stream(c, (h >> 44) & 0xff, &bytes, "module name");
		if (!ret)
			ret = take_stream(c, (h >> 52) & 0xff, &bytes, "build id");
	} else {
		words = subtype == 1 ? 3 : (h >> 28) & 0xff;
		for (size_t i = 0; i < words && !ret; i++)
			ret = take_word(c, &word,
					subtype == 1 ? "mapping word" : "backtrace frame");
	}
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

/* Large record (15): [36..39] large type (0, blob), [40..43] blob format,
 * [44..63] reserved; then a format header word. */
static int read_large(struct reader *r, struct cursor *c, uint64_t h)
{
	unsigned large_type = (h >> 36) & 0xf;
	unsigned format = (h >> 40) & 0xf;
	const struct fxt_arg *args;
	const unsigned char *payload;
	const char *category, *name;
	uint64_t fh, word, pid, tid, blob_size;
	int ret;

	ret = check_reserved(r, h, 44, "header");
	if (ret)
		return ret;
	if (large_type != 0)
		return fail(r, "unknown large record type %u (known: 0, blob)", large_type);
	if (format > 1)
		return fail(r, "unknown large blob format %u (known: 0 and 1)", format);
	ret = take_word(c, &fh, "format header");
	if (ret)
		return ret;
	ret = check_reserved(r, fh, format == 0 ? 44 : 32, "format header");
	if (!ret)
		ret = read_string_ref(c, (unsigned)(fh & 0xffff), STRING_UTF8, "blob category",
				      &category, NULL);
	if (!ret)
		ret = read_string_ref(c, (unsigned)((fh >> 16) & 0xffff), STRING_UTF8, "blob name",
				      &name, NULL);
	if (!ret && format == 0) {
		ret = take_word(c, &word, "timestamp");
		if (!ret)
			ret = read_thread_ref(c, (unsigned)((fh >> 36) & 0xff), "blob's thread",
					      &pid, &tid);
		if (!ret)
			ret = read_args(c, (unsigned)((fh >> 32) & 0xf), &args);
	}
	if (!ret)
		ret = take_word(c, &blob_size, "blob size");
	if (ret)
		return ret;
	if (blob_size > (c->nwords - c->pos) * 8)
		return fail(r, "blob size %llu does not fit the record",
			    (unsigned long long)blob_size);
	ret = take_stream(c, (size_t)blob_size, &payload, "blob payload");
	if (!ret)
		ret = check_end(c, NULL);
	return ret;
}

static int read_record(struct reader *r, struct cursor *c, uint64_t h)
{
	switch (r->rec_type) {
	case REC_METADATA:
		return read_metadata(r, c, h);
	case REC_INITIALIZATION:
		return read_initialization(r, c, h);
	case REC_STRING:
		return read_string_record(r, c, h);
	case REC_THREAD:
		return read_thread_record(r, c, h);
	case REC_EVENT:
		return read_event(r, c, h);
	case REC_BLOB:
		return read_blob(r, c, h);
	case REC_USERSPACE_OBJECT:
		return read_userspace_object(r, c, h);
	case REC_KERNEL_OBJECT:
		return read_kernel_object(r, c, h);
	case REC_SCHEDULING:
		return read_scheduling(r, c, h);
	case REC_LOG:
		return read_log(r, c, h);
	case REC_PROFILER:
		return read_profiler(r, c, h);
	case REC_LARGE:
		return read_large(r, c, h);
	default:
		return fail(r, "unknown record type %u (known: 0 to 10 and 15)", r->rec_type);
	}
}

static int read_records(struct reader *r)
{
	size_t off = 0;

	if (r->size < 8 || load_le64(r->data) != FXT_MAGIC_WORD) {
		char found[3 * 8 + 1] = "";

		for (size_t i = 0; i < 8 && i < r->size; i++)
			snprintf(found + 3 * i, sizeof(found) - 3 * i, "%02x ", r->data[i]);
		set_error(r->err, r->err_len,
			  "not an FXT trace: the first record must be the magic number record "
			  "(bytes 10 00 04 46 78 54 16 00); found %s(%zu bytes in all)",
			  r->size ? found : "nothing ", r->size);
		return -EINVAL;
	}
	while (off < r->size) {
		struct cursor c;
		uint64_t h;
		size_t nwords;
		int ret;

		r->rec_off = off;
		r->rec_type = 0xff;
		if (r->size - off < 8) {
			set_error(
				r->err, r->err_len,
				"truncated record at offset %zu (0x%zx): %zu bytes left, a record "
				"header takes 8",
				off, off, r->size - off);
			return -EINVAL;
		}
		h = load_le64(r->data + off);
		r->rec_type = h & 0xf;
		nwords = r->rec_type == REC_LARGE ? (h >> 4) & 0xffffffffull : (h >> 4) & 0xfff;
		if (nwords == 0)
			return fail(r, "size is 0 words; the size includes the header word");
		if (nwords > (r->size - off) / 8)
			return fail(r,
				    "size is %zu words (%zu bytes) but only %zu bytes are left in "
				    "the file",
				    nwords, nwords * 8, r->size - off);
		c = (struct cursor){
			.r = r, .base = r->data + off, .nwords = nwords, .pos = 1, .unit = "record"
		};
		ret = read_record(r, &c, h);
		if (ret)
			return ret;
		r->t->stats.records++;
		r->t->stats.records_by_type[r->rec_type]++;
		off += nwords * 8;
	}
	return 0;
}

struct span_key {
	uint64_t pid, tid, begin;
	size_t offset;
	long index;
};

static int compare_span_keys(const void *a, const void *b)
{
	const struct span_key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return 0;
}

static int compare_span_offsets(const void *a, const void *b)
{
	const struct fxt_span *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The nesting check described in fxt_read_buffer's comment; it also links
 * the span tree. Roots of one thread are linked as siblings. */
static int check_nesting(struct reader *r)
{
	struct fxt_trace *t = r->t;
	size_t n = t->nr_spans, depth = 0;
	struct span_key *keys;
	long *stack = NULL, *last_child = NULL, last_root = FXT_NONE;
	int ret = 0;

	if (n == 0)
		return 0;
	/* Spans from begin/end pairs were added at their end; file order is
	 * the order of the records that begin them. */
	qsort(t->spans, n, sizeof(*t->spans), compare_span_offsets);
	keys = malloc(n * sizeof(*keys));
	stack = malloc(n * sizeof(*stack));
	last_child = malloc(n * sizeof(*last_child));
	if (!keys || !stack || !last_child) {
		ret = fail_nomem(r);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		keys[i] = (struct span_key){ .pid = t->spans[i].pid,
					     .tid = t->spans[i].tid,
					     .begin = t->spans[i].begin,
					     .offset = t->spans[i].offset,
					     .index = (long)i };
		last_child[i] = FXT_NONE;
	}
	qsort(keys, n, sizeof(*keys), compare_span_keys);
	for (size_t k = 0; k < n; k++) {
		long si = keys[k].index;
		struct fxt_span *s = &t->spans[si];

		if (k == 0 || keys[k].pid != keys[k - 1].pid || keys[k].tid != keys[k - 1].tid) {
			depth = 0;
			last_root = FXT_NONE;
		}
		/* Perfetto's slice tracker: a slice that ended before the new
		 * one begins is over, and so is one that ends as it begins,
		 * unless both took no time (zero-length slices at one time
		 * stack, each inside the one before it). */
		while (depth > 0) {
			const struct fxt_span *top = &t->spans[stack[depth - 1]];

			if (top->end > s->begin ||
			    (top->end == s->begin && top->begin == top->end && s->begin == s->end))
				break;
			depth--;
		}
		if (depth > 0) {
			long pi = stack[depth - 1];
			struct fxt_span *p = &t->spans[pi];

			if (s->end > p->end) {
				set_error(r->err, r->err_len,
					  "improperly nested span '%s' [%llu, %llu] at offset %zu "
					  "(0x%zx) in '%s' [%llu, %llu] at offset %zu (0x%zx) on "
					  "thread %llu/%llu: it begins inside it and ends after it",
					  s->name, (unsigned long long)s->begin,
					  (unsigned long long)s->end, s->offset, s->offset, p->name,
					  (unsigned long long)p->begin, (unsigned long long)p->end,
					  p->offset, p->offset, (unsigned long long)s->pid,
					  (unsigned long long)s->tid);
				ret = -EINVAL;
				goto out;
			}
			s->parent = pi;
			if (last_child[pi] == FXT_NONE)
				p->first_child = si;
			else
				t->spans[last_child[pi]].next_sibling = si;
			last_child[pi] = si;
		} else {
			if (last_root != FXT_NONE)
				t->spans[last_root].next_sibling = si;
			last_root = si;
		}
		s->depth = (unsigned)depth;
		stack[depth++] = si;
	}
out:
	free(keys);
	free(stack);
	free(last_child);
	return ret;
}

/* Begins left open at the end of the file are part of the model, not an
 * error: a trace cut short keeps them. */
static int collect_unterminated(struct reader *r)
{
	struct fxt_trace *t = r->t;

	for (size_t i = 0; i < r->cap_stacks; i++) {
		struct open_stack *st = &r->stacks[i];

		for (size_t k = 0; st->used && k < st->nr; k++) {
			const struct fxt_event *e = &t->events[st->begins[k]];
			struct fxt_span *u = reserve(t->unterminated, &r->cap_unterminated,
						     t->nr_unterminated, sizeof(*u));

			if (!u)
				return fail_nomem(r);
			t->unterminated = u;
			u[t->nr_unterminated++] = (struct fxt_span){
				.pid = e->pid,
				.tid = e->tid,
				.category = e->category,
				.name = e->name,
				.begin = e->ts,
				.end = e->ts,
				.begin_ns = fxt_ticks_to_ns(t, e->ts),
				.end_ns = fxt_ticks_to_ns(t, e->ts),
				.args = e->args,
				.nr_args = e->nr_args,
				.offset = e->offset,
				.end_offset = e->offset,
				.parent = FXT_NONE,
				.first_child = FXT_NONE,
				.next_sibling = FXT_NONE,
			};
		}
	}
	if (t->nr_unterminated)
		qsort(t->unterminated, t->nr_unterminated, sizeof(*t->unterminated),
		      compare_span_offsets);
	return 0;
}

static void free_reader(struct reader *r)
{
	for (size_t i = 0; i < r->cap_stacks; i++)
		free(r->stacks[i].begins);
	free(r->stacks);
	free(r);
}

static int parse_fxt(const unsigned char *data, size_t size, bool compressed,
		     struct fxt_trace **out, char *err, size_t err_len)
{
	struct reader *r = calloc(1, sizeof(*r));
	struct fxt_trace *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!r || !t) {
		free(r);
		free(t);
		set_error(err, err_len, "out of memory reading the trace");
		return -ENOMEM;
	}
	r->data = data;
	r->size = size;
	r->t = t;
	r->err = err;
	r->err_len = err_len;
	t->compressed = compressed;
	t->size = size;

	ret = read_records(r);
	if (!ret)
		ret = check_nesting(r);
	if (!ret)
		ret = collect_unterminated(r);
	free_reader(r);
	if (ret) {
		fxt_trace_free(t);
		return ret;
	}
	*out = t;
	return 0;
}

static int gunzip(const unsigned char *in, size_t in_size, unsigned char **out, size_t *out_size,
		  char *err, size_t err_len)
{
	z_stream zs = { 0 };
	size_t cap = in_size < (SIZE_MAX / 8) ? in_size * 4 + 4096 : in_size;
	size_t consumed = 0, produced = 0;
	unsigned char *buf = malloc(cap);
	int zret, ret = 0;

	*out = NULL;
	if (!buf || inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		set_error(err, err_len, "out of memory starting gzip decompression");
		return -ENOMEM;
	}
	for (;;) {
		size_t in_chunk, out_chunk;

		if (produced == cap) {
			unsigned char *nbuf = realloc(buf, cap * 2);

			if (!nbuf) {
				set_error(err, err_len, "out of memory decompressing the trace");
				ret = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		in_chunk = in_size - consumed < UINT_MAX ? in_size - consumed : UINT_MAX;
		out_chunk = cap - produced < UINT_MAX ? cap - produced : UINT_MAX;
		zs.next_in = (unsigned char *)in + consumed;
		zs.avail_in = (unsigned)in_chunk;
		zs.next_out = buf + produced;
		zs.avail_out = (unsigned)out_chunk;
		zret = inflate(&zs, Z_NO_FLUSH);
		consumed += in_chunk - zs.avail_in;
		produced += out_chunk - zs.avail_out;
		if (zret == Z_STREAM_END) {
			if (consumed == in_size)
				break;
			/* gzip allows several members, one after the other. */
			if (in_size - consumed >= 2 && in[consumed] == 0x1f &&
			    in[consumed + 1] == 0x8b) {
				inflateReset(&zs);
				continue;
			}
			set_error(err, err_len,
				  "gzip: %zu bytes of garbage after the compressed stream at "
				  "compressed offset %zu",
				  in_size - consumed, consumed);
			ret = -EINVAL;
			break;
		}
		if (zret == Z_OK)
			continue;
		if (zret == Z_BUF_ERROR && consumed == in_size) {
			set_error(err, err_len,
				  "gzip: the compressed stream is truncated (%zu bytes read, %zu "
				  "decompressed)",
				  in_size, produced);
			ret = -EINVAL;
			break;
		}
		if (zret == Z_BUF_ERROR)
			continue;
		set_error(err, err_len,
			  "gzip: corrupt compressed data at compressed offset %zu: %s", consumed,
			  zs.msg ? zs.msg : "unknown error");
		ret = zret == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
		break;
	}
	inflateEnd(&zs);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_size = produced;
	return 0;
}

/* zstd frames (one or more, one after the other), whatever their header
 * says of the content's size: rearview streams them without it. */
static int unzstd(const unsigned char *in, size_t in_size, unsigned char **out, size_t *out_size,
		  char *err, size_t err_len)
{
	ZSTD_DStream *zs = ZSTD_createDStream();
	ZSTD_inBuffer zin = { in, in_size, 0 };
	size_t cap = in_size < (SIZE_MAX / 8) ? in_size * 4 + 4096 : in_size;
	size_t produced = 0, left = 1;
	unsigned char *buf = malloc(cap);
	int ret = 0;

	*out = NULL;
	if (!buf || !zs) {
		free(buf);
		ZSTD_freeDStream(zs);
		set_error(err, err_len, "out of memory starting zstd decompression");
		return -ENOMEM;
	}
	while (zin.pos < zin.size || left) {
		ZSTD_outBuffer zout;
		size_t before = zin.pos, made;

		if (produced == cap) {
			unsigned char *nbuf = realloc(buf, cap * 2);

			if (!nbuf) {
				set_error(err, err_len, "out of memory decompressing the trace");
				ret = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		zout = (ZSTD_outBuffer){ buf + produced, cap - produced, 0 };
		left = ZSTD_decompressStream(zs, &zout, &zin);
		if (ZSTD_isError(left)) {
			set_error(err, err_len, "zstd: corrupt compressed data near offset %zu: %s",
				  zin.pos, ZSTD_getErrorName(left));
			ret = -EINVAL;
			break;
		}
		made = zout.pos;
		produced += made;
		if (left && zin.pos == zin.size && made == 0 && before == zin.pos) {
			set_error(err, err_len,
				  "zstd: the compressed stream is truncated (%zu bytes read, %zu "
				  "decompressed)",
				  in_size, produced);
			ret = -EINVAL;
			break;
		}
	}
	ZSTD_freeDStream(zs);
	if (ret) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_size = produced;
	return 0;
}

int fxt_read_buffer(const void *data, size_t size, struct fxt_trace **out, char *err,
		    size_t err_len)
{
	const unsigned char *bytes = data;
	unsigned char *plain;
	size_t plain_size;
	int ret;

	*out = NULL;
	if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
		ret = gunzip(bytes, size, &plain, &plain_size, err, err_len);
		if (ret)
			return ret;
		ret = parse_fxt(plain, plain_size, true, out, err, err_len);
		free(plain);
		return ret;
	}
	/* zstd's frame magic, 0xFD2FB528 little-endian */
	if (size >= 4 && bytes[0] == 0x28 && bytes[1] == 0xb5 && bytes[2] == 0x2f &&
	    bytes[3] == 0xfd) {
		ret = unzstd(bytes, size, &plain, &plain_size, err, err_len);
		if (ret)
			return ret;
		ret = parse_fxt(plain, plain_size, true, out, err, err_len);
		free(plain);
		return ret;
	}
	return parse_fxt(bytes, size, false, out, err, err_len);
}

int fxt_read_file(const char *path, struct fxt_trace **out, char *err, size_t err_len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t size = 0, cap = 0;
	int ret, e;

	*out = NULL;
	if (!f) {
		e = errno;
		set_error(err, err_len, "cannot open '%s': %s", path, strerror(e));
		return -e;
	}
	for (;;) {
		size_t n;

		if (size == cap) {
			unsigned char *nbuf = realloc(buf, cap ? cap * 2 : 1 << 16);

			if (!nbuf) {
				free(buf);
				fclose(f);
				set_error(err, err_len, "out of memory reading '%s'", path);
				return -ENOMEM;
			}
			buf = nbuf;
			cap = cap ? cap * 2 : 1 << 16;
		}
		n = fread(buf + size, 1, cap - size, f);
		size += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		e = errno ? errno : EIO;
		free(buf);
		fclose(f);
		set_error(err, err_len, "cannot read '%s': %s", path, strerror(e));
		return -e;
	}
	fclose(f);
	ret = fxt_read_buffer(buf, size, out, err, err_len);
	free(buf);
	if (ret && err && err_len) {
		char inner[1024];

		snprintf(inner, sizeof(inner), "%s", err);
		set_error(err, err_len, "%s: %s", path, inner);
	}
	return ret;
}

void fxt_trace_free(struct fxt_trace *trace)
{
	struct fxt_arena *a, *next;

	if (!trace)
		return;
	for (a = trace->arena; a; a = next) {
		next = a->next;
		free(a);
	}
	free(trace->events);
	free(trace->spans);
	free(trace->unterminated);
	free(trace->instants);
	free(trace->counters);
	free(trace->objects);
	free(trace->processes);
	free(trace->threads);
	free(trace);
}

static bool matches(uint64_t pid, uint64_t tid, const char *name, uint64_t want_pid,
		    uint64_t want_tid, const char *want_name)
{
	return (want_pid == FXT_ANY || pid == want_pid) &&
	       (want_tid == FXT_ANY || tid == want_tid) &&
	       (!want_name || strcmp(name, want_name) == 0);
}

const char *fxt_process_name(const struct fxt_trace *trace, uint64_t pid)
{
	for (size_t i = 0; i < trace->nr_processes; i++) {
		if (trace->processes[i].koid == pid)
			return trace->processes[i].name;
	}
	return NULL;
}

const struct fxt_thread *fxt_find_thread(const struct fxt_trace *trace, uint64_t pid, uint64_t tid)
{
	for (size_t i = 0; i < trace->nr_threads; i++) {
		const struct fxt_thread *th = &trace->threads[i];

		if (th->koid == tid && (pid == FXT_ANY || (th->has_process && th->pid == pid)))
			return th;
	}
	return NULL;
}

const char *fxt_thread_name(const struct fxt_trace *trace, uint64_t pid, uint64_t tid)
{
	const struct fxt_thread *th = fxt_find_thread(trace, pid, tid);

	return th ? th->name : NULL;
}

void fxt_spans_extent(const struct fxt_trace *trace, uint64_t *first_ns, uint64_t *last_ns)
{
	*first_ns = UINT64_MAX;
	*last_ns = 0;
	for (size_t i = 0; i < trace->nr_spans; i++) {
		if (trace->spans[i].begin_ns < *first_ns)
			*first_ns = trace->spans[i].begin_ns;
		if (trace->spans[i].end_ns > *last_ns)
			*last_ns = trace->spans[i].end_ns;
	}
}

size_t fxt_count_spans(const struct fxt_trace *trace, uint64_t pid, uint64_t tid, const char *name)
{
	size_t count = 0;

	for (size_t i = 0; i < trace->nr_spans; i++) {
		const struct fxt_span *s = &trace->spans[i];

		count += matches(s->pid, s->tid, s->name, pid, tid, name);
	}
	return count;
}

uint64_t fxt_sum_durations_ns(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
			      const char *name)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < trace->nr_spans; i++) {
		const struct fxt_span *s = &trace->spans[i];

		if (matches(s->pid, s->tid, s->name, pid, tid, name))
			sum += s->end_ns - s->begin_ns;
	}
	return sum;
}

const struct fxt_span *fxt_find_span(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
				     const char *name, size_t nth)
{
	for (size_t i = 0; i < trace->nr_spans; i++) {
		const struct fxt_span *s = &trace->spans[i];

		if (matches(s->pid, s->tid, s->name, pid, tid, name) && nth-- == 0)
			return s;
	}
	return NULL;
}

size_t fxt_count_instants(const struct fxt_trace *trace, uint64_t pid, uint64_t tid,
			  const char *name)
{
	size_t count = 0;

	for (size_t i = 0; i < trace->nr_instants; i++) {
		const struct fxt_instant *in = &trace->instants[i];

		count += matches(in->pid, in->tid, in->name, pid, tid, name);
	}
	return count;
}

const struct fxt_instant *fxt_find_instant(const struct fxt_trace *trace, uint64_t pid,
					   uint64_t tid, const char *name, size_t nth)
{
	for (size_t i = 0; i < trace->nr_instants; i++) {
		const struct fxt_instant *in = &trace->instants[i];

		if (matches(in->pid, in->tid, in->name, pid, tid, name) && nth-- == 0)
			return in;
	}
	return NULL;
}

const struct fxt_span *fxt_first_root(const struct fxt_trace *trace, uint64_t pid, uint64_t tid)
{
	const struct fxt_span *first = NULL;

	for (size_t i = 0; i < trace->nr_spans; i++) {
		const struct fxt_span *s = &trace->spans[i];

		if (s->parent != FXT_NONE || s->pid != pid || s->tid != tid)
			continue;
		if (!first || s->begin < first->begin)
			first = s; /* file order breaks ties: keep the earlier */
	}
	return first;
}

static const struct fxt_span *span_at(const struct fxt_trace *trace, long index)
{
	if (index < 0 || (size_t)index >= trace->nr_spans)
		return NULL;
	return &trace->spans[index];
}

const struct fxt_span *fxt_span_parent(const struct fxt_trace *trace, const struct fxt_span *span)
{
	return span_at(trace, span->parent);
}

const struct fxt_span *fxt_span_first_child(const struct fxt_trace *trace,
					    const struct fxt_span *span)
{
	return span_at(trace, span->first_child);
}

const struct fxt_span *fxt_span_next_sibling(const struct fxt_trace *trace,
					     const struct fxt_span *span)
{
	return span_at(trace, span->next_sibling);
}

size_t fxt_span_nr_children(const struct fxt_trace *trace, const struct fxt_span *span)
{
	const struct fxt_span *child;
	size_t n = 0;

	fxt_for_each_child(trace, span, child) n++;
	return n;
}

const struct fxt_arg *fxt_find_arg(const struct fxt_arg *args, size_t nr_args, const char *name)
{
	for (size_t i = 0; i < nr_args; i++) {
		if (args[i].name && strcmp(args[i].name, name) == 0)
			return &args[i];
	}
	return NULL;
}

static void dump_args(const struct fxt_arg *args, size_t nr_args, FILE *out)
{
	for (size_t i = 0; i < nr_args; i++) {
		const struct fxt_arg *a = &args[i];

		fprintf(out, " %s=", a->name);
		switch (a->type) {
		case FXT_ARG_INT32:
		case FXT_ARG_INT64:
			fprintf(out, "%lld", (long long)a->i);
			break;
		case FXT_ARG_UINT32:
		case FXT_ARG_UINT64:
		case FXT_ARG_KOID:
			fprintf(out, "%llu", (unsigned long long)a->u);
			break;
		case FXT_ARG_POINTER:
			fprintf(out, "0x%llx", (unsigned long long)a->u);
			break;
		case FXT_ARG_DOUBLE:
			fprintf(out, "%g", a->d);
			break;
		case FXT_ARG_STRING:
			fprintf(out, "\"%s\"", a->s);
			break;
		case FXT_ARG_BOOL:
			fprintf(out, "%s", a->b ? "true" : "false");
			break;
		case FXT_ARG_BLOB:
			fprintf(out, "<%zu bytes>", a->blob_size);
			break;
		case FXT_ARG_NULL:
			fprintf(out, "null");
			break;
		}
	}
}

static int compare_roots(const void *a, const void *b)
{
	const struct fxt_span *x = *(const struct fxt_span *const *)a;
	const struct fxt_span *y = *(const struct fxt_span *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void fxt_trace_dump(const struct fxt_trace *trace, FILE *out)
{
	const struct fxt_span **roots;
	size_t nr_roots = 0;

	fprintf(out, "FXT trace: %zu bytes%s, %llu ticks/s, %zu records, %zu spans, %zu instants\n",
		trace->size, trace->compressed ? " (compressed)" : "",
		(unsigned long long)trace->ticks_per_second, trace->stats.records, trace->nr_spans,
		trace->nr_instants);
	for (size_t i = 0; i < trace->nr_processes; i++)
		fprintf(out, "process %llu '%s'\n", (unsigned long long)trace->processes[i].koid,
			trace->processes[i].name);
	for (size_t i = 0; i < trace->nr_threads; i++)
		fprintf(out, "thread %llu/%llu '%s'\n", (unsigned long long)trace->threads[i].pid,
			(unsigned long long)trace->threads[i].koid, trace->threads[i].name);
	roots = malloc((trace->nr_spans + 1) * sizeof(*roots));
	if (!roots)
		return;
	for (size_t i = 0; i < trace->nr_spans; i++) {
		if (trace->spans[i].parent == FXT_NONE)
			roots[nr_roots++] = &trace->spans[i];
	}
	qsort(roots, nr_roots, sizeof(*roots), compare_roots);
	for (size_t i = 0; i < nr_roots; i++) {
		const struct fxt_span *s = roots[i];

		/* Pre-order walk of one root's subtree through the links. */
		while (s) {
			const struct fxt_span *next;

			fprintf(out, "%llu/%llu %*s%s [%llu, %llu]", (unsigned long long)s->pid,
				(unsigned long long)s->tid, (int)(2 * s->depth), "", s->name,
				(unsigned long long)s->begin_ns, (unsigned long long)s->end_ns);
			dump_args(s->args, s->nr_args, out);
			fputc('\n', out);
			next = fxt_span_first_child(trace, s);
			while (!next && s != roots[i]) {
				next = fxt_span_next_sibling(trace, s);
				if (!next)
					s = fxt_span_parent(trace, s);
			}
			s = next;
		}
	}
	free(roots);
	for (size_t i = 0; i < trace->nr_instants; i++) {
		const struct fxt_instant *in = &trace->instants[i];

		fprintf(out, "%llu/%llu instant %s at %llu", (unsigned long long)in->pid,
			(unsigned long long)in->tid, in->name, (unsigned long long)in->ts_ns);
		dump_args(in->args, in->nr_args, out);
		fputc('\n', out);
	}
}
