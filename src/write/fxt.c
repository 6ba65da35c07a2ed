/* fxt.c: encodes spans, instants and process and thread names as records of
 * the Fuchsia trace format (fuchsia.dev/fuchsia-src/reference/tracing/
 * trace-format; notes in shared/reference/formats.md), which Perfetto reads.
 *
 * Everything it can, it refers to by index: strings through the string table
 * (32,767 entries), threads through the thread table (255 entries), so that a
 * span without arguments is exactly three words. When the string table is
 * full, new strings are written inline in the records that use them; when the
 * thread table is full, the least recently used slot is given to the new
 * thread by writing its thread record again.
 *
 * This is not a reader, and it neither orders nor checks the nesting of what
 * it is given: that is the trace builder's job.
 */
#include "write/writer_internal.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum record_type {
	RECORD_METADATA = 0,
	RECORD_INITIALIZATION = 1,
	RECORD_STRING = 2,
	RECORD_THREAD = 3,
	RECORD_EVENT = 4,
	RECORD_KERNEL_OBJECT = 7,
};

enum event_type {
	EVENT_INSTANT = 0,
	EVENT_DURATION_COMPLETE = 4,
};

enum argument_type {
	ARGUMENT_INT32 = 1,
	ARGUMENT_UINT32 = 2,
	ARGUMENT_INT64 = 3,
	ARGUMENT_UINT64 = 4,
	ARGUMENT_STRING = 6,
	ARGUMENT_POINTER = 7,
	ARGUMENT_KOID = 8,
};

enum zx_object_type {
	ZX_OBJ_TYPE_PROCESS = 1,
	ZX_OBJ_TYPE_THREAD = 2,
};

/* Metadata record, trace info type 0, magic 0x16547846: "FxT" and a byte. */
#define FXT_MAGIC_RECORD 0x0016547846040010ULL
#define TICKS_PER_SECOND 1000000000ULL
/* The specification's own conservative limit, which keeps a record with
 * one such string under the 4095-word record limit. */
#define MAX_STRING_BYTES  32000
#define MAX_STRING_INDEX  0x7fff
#define INLINE_STRING_REF 0x8000
#define MAX_THREAD_INDEX  255
#define MAX_RECORD_WORDS  4095
#define MAX_ARGS	  15

/* Linear probing; at most half full, since it never grows past 32,767 keys. */
#define STRING_TABLE_MIN_SLOTS 1024
/* Twice the thread table, so probes stay short. */
#define THREAD_MAP_SLOTS 512

struct string_slot {
	size_t key_offset; /* of the caller's original bytes in key_bytes */
	uint32_t key_length;
	uint32_t hash;
	uint16_t index; /* 0: empty slot */
};

/* A string the table holds, by the address the caller passed it at: callers
 * pass the same few names again and again (interned symbol names), and a
 * compare against the stored bytes is cheaper than measuring and hashing. */
struct recent_string {
	const char *ptr;
	size_t key_offset;
	uint32_t key_length;
	uint16_t index;
};

#define RECENT_STRINGS 512

/* A string a caller keeps at its address with the same bytes (an interned
 * name: rv_fxt_span's `interned`), by that address: its ref in the string
 * table, trusted without reading the string. Open addressing, at most half
 * full; past INTERNED_MAX_SLOTS it starts again empty. */
struct interned_slot {
	const char *ptr; /* NULL: empty slot */
	uint16_t ref;
};

/* The words of interned spans, by their name's address (direct-mapped):
 * see shape_record. The trace builder's spans have up to six arguments. */
#define SHAPE_SLOTS    256
#define SHAPE_MAX_ARGS 6

struct span_shape {
	const char *category, *name; /* name NULL: empty */
	size_t nr_args;
	size_t words;
	bool has_end;
	uint64_t header; /* the record's first word, with thread index 0 */
	struct shape_arg {
		const char *name;
		enum rv_arg_kind kind;
		const char *value; /* RV_ARG_STRING: the string's address */
		uint64_t header;   /* the argument's first word */
		bool has_value_word;
	} args[SHAPE_MAX_ARGS];
};

#define INTERNED_MIN_SLOTS 1024
#define INTERNED_MAX_SLOTS (1u << 17)

struct thread_map_slot {
	uint64_t key;  /* pid << 32 | tid */
	uint8_t index; /* 0: empty slot */
};

struct thread_slot {
	uint64_t key;
	uint64_t last_use;
};

struct rv_fxt {
	/* what the writer's inline path reads, in the writer (rv_fxt_open) */
	struct rv_fxt_fast *fast;

	struct string_slot *string_slots;
	size_t string_slots_mask;
	unsigned nr_strings;
	char *key_bytes;
	size_t key_bytes_used;
	size_t key_bytes_capacity;
	struct recent_string recent[RECENT_STRINGS];
	struct span_shape shapes[SHAPE_SLOTS];
	struct interned_slot *interned;
	size_t interned_mask; /* slots - 1; 0 before the first */
	size_t nr_interned;

	struct thread_map_slot thread_map[THREAD_MAP_SLOTS];
	struct thread_slot threads[MAX_THREAD_INDEX + 1]; /* by index; 0 unused */
	unsigned nr_threads;
	/* Counts runs of spans on one thread: a thread's last_use is the
	 * clock when its latest run began, which orders the threads as their
	 * last spans do, without a store per span. */
	uint64_t clock;

	uint64_t inline_strings;
	uint64_t thread_evictions;
};

/* A string as a record refers to it: by index, or inline with the length of
 * its stream (after UTF-8 repair and truncation). */
struct string_ref {
	const char *bytes;
	size_t length;
	size_t inline_length;
	uint16_t ref;
};

/* One argument, laid out: its header's upper 32 bits, and either a value
 * word or an inline value string. */
struct argument_plan {
	unsigned type;
	struct string_ref name;
	struct string_ref value; /* ARGUMENT_STRING */
	uint32_t header_value;
	bool has_value_word;
	uint64_t value_word;
};

static const unsigned char replacement_character[] = { 0xef, 0xbf, 0xbd };

static void put_word(unsigned char *p, uint64_t word)
{
	rv_put_word(p, word);
}

static size_t stream_words(size_t bytes)
{
	return (bytes + 7) / 8;
}

static bool is_inline(const struct string_ref *s)
{
	return s->ref & INLINE_STRING_REF;
}

/* Copies s[0..length) to out (when out is not NULL), replacing each byte that
 * is not part of well-formed UTF-8 with U+FFFD, and stopping at the last whole
 * character that fits in max bytes. Returns the number of bytes produced. */
static size_t copy_utf8(char *out, const char *s, size_t length, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t in = 0, produced = 0;

	while (in < length) {
		size_t consumed = rv_utf8_sequence_length(p + in, length - in);
		const unsigned char *from = p + in;
		size_t emitted = consumed;

		if (consumed == 0) {
			from = replacement_character;
			emitted = sizeof(replacement_character);
			consumed = 1;
		}
		if (emitted > max - produced)
			break;
		if (out)
			memcpy(out + produced, from, emitted);
		produced += emitted;
		in += consumed;
	}
	return produced;
}

/* Writes the stream of s (inline_length bytes) zero-padded to whole words at
 * p; returns the bytes written. */
static size_t write_stream(unsigned char *p, const char *bytes, size_t length, size_t inline_length)
{
	size_t padded = stream_words(inline_length) * 8;

	if (padded)
		memset(p + padded - 8, 0, 8);
	copy_utf8((char *)p, bytes, length, inline_length);
	return padded;
}

static uint64_t hash_bytes(const char *s, size_t length)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ length;
	uint64_t word;

	while (length >= 8) {
		memcpy(&word, s, 8);
		h = (h ^ word) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		s += 8;
		length -= 8;
	}
	if (length) {
		word = 0;
		memcpy(&word, s, length);
		h = (h ^ word) * 0xff51afd7ed558ccdULL;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 32;
	return h;
}

static void write_string_record(struct rv_fxt *fxt, uint16_t index, const char *s, size_t length)
{
	size_t stored = copy_utf8(NULL, s, length, MAX_STRING_BYTES);
	size_t words = 1 + stream_words(stored);
	unsigned char *p = rv_out_take(fxt->fast->out, words * 8);

	put_word(p, RECORD_STRING | (uint64_t)words << 4 | (uint64_t)index << 16 |
			    (uint64_t)stored << 32);
	write_stream(p + 8, s, length, stored);
}

static int grow_string_slots(struct rv_fxt *fxt, struct rv_error *err)
{
	size_t old_count = fxt->string_slots_mask + 1;
	size_t new_count = old_count * 2;
	struct string_slot *slots = calloc(new_count, sizeof(*slots));
	size_t i;

	if (!slots)
		return rv_error_set(err, ENOMEM, "out of memory for the trace's string table");
	for (i = 0; i < old_count; i++) {
		const struct string_slot *old = &fxt->string_slots[i];
		size_t j;

		if (!old->index)
			continue;
		for (j = old->hash & (new_count - 1); slots[j].index; j = (j + 1) & (new_count - 1))
			;
		slots[j] = *old;
	}
	free(fxt->string_slots);
	fxt->string_slots = slots;
	fxt->string_slots_mask = new_count - 1;
	return 0;
}

static int store_key(struct rv_fxt *fxt, const char *s, size_t length, size_t *offset,
		     struct rv_error *err)
{
	if (fxt->key_bytes_capacity - fxt->key_bytes_used < length) {
		size_t capacity = fxt->key_bytes_capacity ? fxt->key_bytes_capacity : 64 * 1024;
		char *bytes;

		while (capacity - fxt->key_bytes_used < length)
			capacity *= 2;
		bytes = realloc(fxt->key_bytes, capacity);
		if (!bytes)
			return rv_error_set(err, ENOMEM,
					    "out of memory for the trace's string table");
		fxt->key_bytes = bytes;
		fxt->key_bytes_capacity = capacity;
	}
	memcpy(fxt->key_bytes + fxt->key_bytes_used, s, length);
	*offset = fxt->key_bytes_used;
	fxt->key_bytes_used += length;
	return 0;
}

static void make_inline(struct rv_fxt *fxt, struct string_ref *str)
{
	str->inline_length = copy_utf8(NULL, str->bytes, str->length, MAX_STRING_BYTES);
	str->ref = INLINE_STRING_REF | str->inline_length;
	fxt->inline_strings++;
}

/* Finds s in the string table, adding it (and writing its string record) when
 * there is room, or makes it an inline string when there is not. */
static int resolve_string(struct rv_fxt *fxt, const char *s, struct string_ref *str,
			  struct rv_error *err)
{
	uint32_t hash;
	size_t i;
	int r;

	str->bytes = s;
	str->inline_length = 0;
	str->ref = 0;
	if (!s || !*s) {
		str->length = 0;
		return 0;
	}

	struct recent_string *recent =
		&fxt->recent[((uintptr_t)s * 0x9e3779b97f4a7c15ULL) >> 55 & (RECENT_STRINGS - 1)];

	/* The same address may hold other bytes now (a caller's buffer):
	 * only the same bytes, and their end, make a hit. */
	if (recent->ptr == s &&
	    !memcmp(fxt->key_bytes + recent->key_offset, s, recent->key_length) &&
	    s[recent->key_length] == '\0') {
		str->length = recent->key_length;
		str->ref = recent->index;
		return 0;
	}
	str->length = strlen(s);
	hash = (uint32_t)hash_bytes(s, str->length);
	for (i = hash & fxt->string_slots_mask; fxt->string_slots[i].index;
	     i = (i + 1) & fxt->string_slots_mask) {
		const struct string_slot *slot = &fxt->string_slots[i];

		if (slot->hash == hash && slot->key_length == str->length &&
		    !memcmp(fxt->key_bytes + slot->key_offset, s, str->length)) {
			str->ref = slot->index;
			*recent = (struct recent_string){ s, slot->key_offset, slot->key_length,
							  slot->index };
			return 0;
		}
	}
	if (fxt->nr_strings == MAX_STRING_INDEX || str->length > UINT32_MAX) {
		make_inline(fxt, str);
		return 0;
	}
	if ((fxt->nr_strings + 1) * 2 > fxt->string_slots_mask + 1) {
		r = grow_string_slots(fxt, err);
		if (r < 0)
			return r;
		for (i = hash & fxt->string_slots_mask; fxt->string_slots[i].index;
		     i = (i + 1) & fxt->string_slots_mask)
			;
	}
	r = store_key(fxt, s, str->length, &fxt->string_slots[i].key_offset, err);
	if (r < 0)
		return r;
	fxt->nr_strings++;
	fxt->string_slots[i].key_length = (uint32_t)str->length;
	fxt->string_slots[i].hash = hash;
	fxt->string_slots[i].index = (uint16_t)fxt->nr_strings;
	str->ref = (uint16_t)fxt->nr_strings;
	*recent = (struct recent_string){ s, fxt->string_slots[i].key_offset, (uint32_t)str->length,
					  str->ref };
	write_string_record(fxt, str->ref, s, str->length);
	return 0;
}

static size_t interned_home(const char *s, size_t mask)
{
	return (size_t)(((uintptr_t)s * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

/* Makes room for one more interned string; false when out of memory (the
 * string then goes through resolve_string each time). */
static bool interned_make_room(struct rv_fxt *fxt)
{
	size_t slots = fxt->interned_mask + 1, cap;
	struct interned_slot *grown;

	if (fxt->interned_mask && (fxt->nr_interned + 1) * 2 <= slots)
		return true;
	if (fxt->interned_mask && slots >= INTERNED_MAX_SLOTS) {
		memset(fxt->interned, 0, slots * sizeof(*fxt->interned));
		fxt->nr_interned = 0;
		return true;
	}
	cap = fxt->interned_mask ? slots * 2 : INTERNED_MIN_SLOTS;
	grown = calloc(cap, sizeof(*grown));
	if (!grown)
		return false;
	for (size_t i = 0; fxt->interned_mask && i < slots; i++) {
		const struct interned_slot *old = &fxt->interned[i];
		size_t j;

		if (!old->ptr)
			continue;
		for (j = interned_home(old->ptr, cap - 1); grown[j].ptr; j = (j + 1) & (cap - 1))
			;
		grown[j] = *old;
	}
	free(fxt->interned);
	fxt->interned = grown;
	fxt->interned_mask = cap - 1;
	return true;
}

/* resolve_interned's way when the string is not at its home slot: the
 * rest of the probe, else resolve_string, and the string remembered when it
 * got an index. */
static __attribute__((noinline)) int resolve_interned_slow(struct rv_fxt *fxt, const char *s,
							   struct string_ref *str,
							   struct rv_error *err)
{
	size_t i;
	int r;

	for (i = fxt->interned_mask ? interned_home(s, fxt->interned_mask) : 0;
	     fxt->interned_mask && fxt->interned[i].ptr; i = (i + 1) & fxt->interned_mask) {
		if (fxt->interned[i].ptr == s) {
			*str = (struct string_ref){ .bytes = s, .ref = fxt->interned[i].ref };
			return 0;
		}
	}
	r = resolve_string(fxt, s, str, err);
	if (r < 0 || !str->ref || is_inline(str) || !interned_make_room(fxt))
		return r;
	for (i = interned_home(s, fxt->interned_mask); fxt->interned[i].ptr;
	     i = (i + 1) & fxt->interned_mask)
		;
	fxt->interned[i] = (struct interned_slot){ s, str->ref };
	fxt->nr_interned++;
	return 0;
}

/* resolve_string for a string that stays at its address with the same
 * bytes: one that got an index is known by its address from then on (its
 * length is then not needed: only inline strings use it). The refs are
 * resolve_string's, so the records are the same. */
static inline int resolve_interned(struct rv_fxt *fxt, const char *s, struct string_ref *str,
				   struct rv_error *err)
{
	if (!s) {
		*str = (struct string_ref){ 0 };
		return 0;
	}
	if (fxt->interned_mask) {
		const struct interned_slot *home =
			&fxt->interned[interned_home(s, fxt->interned_mask)];

		if (home->ptr == s) {
			*str = (struct string_ref){ .bytes = s, .ref = home->ref };
			return 0;
		}
	}
	return resolve_interned_slow(fxt, s, str, err);
}

/* resolve_interned when the caller says its strings are interned, else
 * resolve_string. */
static inline int resolve_as(struct rv_fxt *fxt, bool interned, const char *s,
			     struct string_ref *str, struct rv_error *err)
{
	return interned ? resolve_interned(fxt, s, str, err) : resolve_string(fxt, s, str, err);
}

static size_t shape_slot(const char *name)
{
	return (size_t)(((uintptr_t)name * 0x9e3779b97f4a7c15ULL) >> 56) & (SHAPE_SLOTS - 1);
}

static size_t thread_map_home(uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 55) & (THREAD_MAP_SLOTS - 1);
}

/* Backward-shift deletion keeps every remaining key reachable from its home
 * slot without tombstones. */
static void thread_map_remove(struct rv_fxt *fxt, uint64_t key)
{
	struct thread_map_slot *map = fxt->thread_map;
	size_t hole = thread_map_home(key), j;

	while (map[hole].index && map[hole].key != key)
		hole = (hole + 1) & (THREAD_MAP_SLOTS - 1);
	if (!map[hole].index)
		return;
	for (j = (hole + 1) & (THREAD_MAP_SLOTS - 1); map[j].index;
	     j = (j + 1) & (THREAD_MAP_SLOTS - 1)) {
		size_t home = thread_map_home(map[j].key);
		bool home_in_gap =
			hole < j ? (home > hole && home <= j) : (home > hole || home <= j);

		if (!home_in_gap) {
			map[hole] = map[j];
			hole = j;
		}
	}
	map[hole].index = 0;
}

static uint8_t assign_thread_index(struct rv_fxt *fxt, uint64_t key)
{
	struct thread_map_slot *map = fxt->thread_map;
	unsigned index, i;
	unsigned char *p;
	size_t j;

	if (fxt->nr_threads < MAX_THREAD_INDEX) {
		index = ++fxt->nr_threads;
	} else {
		index = 1;
		for (i = 2; i <= MAX_THREAD_INDEX; i++)
			if (fxt->threads[i].last_use < fxt->threads[index].last_use)
				index = i;
		thread_map_remove(fxt, fxt->threads[index].key);
		fxt->thread_evictions++;
	}
	fxt->threads[index].key = key;
	for (j = thread_map_home(key); map[j].index; j = (j + 1) & (THREAD_MAP_SLOTS - 1))
		;
	map[j].key = key;
	map[j].index = (uint8_t)index;

	p = rv_out_take(fxt->fast->out, 3 * 8);
	put_word(p, RECORD_THREAD | 3 << 4 | (uint64_t)index << 16);
	put_word(p + 8, key >> 32);
	put_word(p + 16, key & 0xffffffffu);
	return (uint8_t)index;
}

/* resolve_thread for another thread than the last one's: a run begins. */
static __attribute__((noinline)) uint8_t resolve_other_thread(struct rv_fxt *fxt, uint64_t key)
{
	uint8_t index = 0;
	size_t j;

	for (j = thread_map_home(key); fxt->thread_map[j].index;
	     j = (j + 1) & (THREAD_MAP_SLOTS - 1)) {
		if (fxt->thread_map[j].key == key) {
			index = fxt->thread_map[j].index;
			break;
		}
	}
	if (!index)
		index = assign_thread_index(fxt, key);
	fxt->fast->last_thread_key = key;
	fxt->fast->last_thread_index = index;
	fxt->fast->last_thread_bits = rv_fxt_thread_bits(index);
	fxt->threads[index].last_use = ++fxt->clock;
	return index;
}

/* The thread's index in the thread table, writing its thread record first if
 * it has none (inline: once a span, mostly the last one's thread). */
static inline uint8_t resolve_thread(struct rv_fxt *fxt, uint32_t pid, uint32_t tid)
{
	uint64_t key = rv_trace_thread(pid, tid);
	uint8_t index = fxt->fast->last_thread_index;

	if (!index || fxt->fast->last_thread_key != key)
		return resolve_other_thread(fxt, key);
	return index;
}

/* The layout of a number (RV_ARG_INT, RV_ARG_UINT, RV_ARG_POINTER): its
 * type, header value and value word; false for other kinds. */
static inline bool plan_number(const struct rv_arg *arg, struct argument_plan *plan)
{
	plan->header_value = 0;
	plan->has_value_word = false;
	switch (arg->kind) {
	case RV_ARG_INT:
		if (arg->i >= INT32_MIN && arg->i <= INT32_MAX) {
			plan->type = ARGUMENT_INT32;
			plan->header_value = (uint32_t)(int32_t)arg->i;
		} else {
			plan->type = ARGUMENT_INT64;
			plan->has_value_word = true;
			plan->value_word = (uint64_t)arg->i;
		}
		return true;
	case RV_ARG_UINT:
		if (arg->u <= UINT32_MAX) {
			plan->type = ARGUMENT_UINT32;
			plan->header_value = (uint32_t)arg->u;
		} else {
			plan->type = ARGUMENT_UINT64;
			plan->has_value_word = true;
			plan->value_word = arg->u;
		}
		return true;
	case RV_ARG_POINTER:
		plan->type = ARGUMENT_POINTER;
		plan->has_value_word = true;
		plan->value_word = arg->u;
		return true;
	case RV_ARG_STRING:
		break;
	}
	return false;
}

static int plan_argument(struct rv_fxt *fxt, bool interned, const struct rv_arg *arg,
			 struct argument_plan *plan, struct rv_error *err)
{
	int r = resolve_as(fxt, interned, arg->name, &plan->name, err);

	if (r < 0)
		return r;
	plan->value.ref = 0;
	plan->value.inline_length = 0;
	if (plan_number(arg, plan))
		return 0;
	if (arg->kind == RV_ARG_STRING) {
		plan->type = ARGUMENT_STRING;
		/* Its header carries value.ref, read when written: fitting the
		 * record may still shorten an inline value. */
		return resolve_as(fxt, interned, arg->s, &plan->value, err);
	}
	return rv_error_set(err, EINVAL, "argument '%s' has an unknown kind %d",
			    arg->name ? arg->name : "", (int)arg->kind);
}

static size_t argument_words(const struct argument_plan *plan)
{
	return 1 + stream_words(plan->name.inline_length) + plan->has_value_word +
	       stream_words(plan->value.inline_length);
}

/* Inline strings are the only part of a record that can be long; when they
 * would push it past the record size limit, each gets an equal share of the
 * room left, cut at a character boundary. */
static void fit_inline_strings(struct string_ref **strings, size_t count, size_t fixed_words)
{
	size_t words = fixed_words, share, i;

	for (i = 0; i < count; i++)
		words += stream_words(strings[i]->inline_length);
	if (words <= MAX_RECORD_WORDS || count == 0)
		return;
	share = (MAX_RECORD_WORDS - fixed_words) / count * 8;
	for (i = 0; i < count; i++) {
		struct string_ref *s = strings[i];

		if (s->inline_length > share) {
			s->inline_length = copy_utf8(NULL, s->bytes, s->length, share);
			s->ref = INLINE_STRING_REF | s->inline_length;
		}
	}
}

/* A record's words: its fixed words and its inline strings, fitted. */
static size_t record_words(struct string_ref **strings, size_t count, size_t fixed_words)
{
	size_t words = fixed_words;

	fit_inline_strings(strings, count, fixed_words);
	for (size_t i = 0; i < count; i++)
		words += stream_words(strings[i]->inline_length);
	return words;
}

/* Collects the inline strings of a record: its name, then each argument's
 * name and value, and returns the words of everything else. */
static size_t collect_inline(struct string_ref *name, struct argument_plan *plans, size_t nr_args,
			     size_t base_words, struct string_ref **strings, size_t *count)
{
	size_t words = base_words, i;

	*count = 0;
	if (is_inline(name))
		strings[(*count)++] = name;
	for (i = 0; i < nr_args; i++) {
		words += 1 + plans[i].has_value_word;
		if (is_inline(&plans[i].name))
			strings[(*count)++] = &plans[i].name;
		if (plans[i].type == ARGUMENT_STRING && is_inline(&plans[i].value))
			strings[(*count)++] = &plans[i].value;
	}
	return words;
}

static size_t write_arguments(unsigned char *p, const struct argument_plan *plans, size_t nr_args)
{
	unsigned char *start = p;
	size_t i;

	for (i = 0; i < nr_args; i++) {
		const struct argument_plan *a = &plans[i];
		uint32_t header_value = a->type == ARGUMENT_STRING ? a->value.ref : a->header_value;

		put_word(p, a->type | (uint64_t)argument_words(a) << 4 |
				    (uint64_t)a->name.ref << 16 | (uint64_t)header_value << 32);
		p += 8;
		if (is_inline(&a->name))
			p += write_stream(p, a->name.bytes, a->name.length, a->name.inline_length);
		if (a->has_value_word) {
			put_word(p, a->value_word);
			p += 8;
		}
		if (a->type == ARGUMENT_STRING && is_inline(&a->value))
			p += write_stream(p, a->value.bytes, a->value.length,
					  a->value.inline_length);
	}
	return (size_t)(p - start);
}

static int plan_arguments(struct rv_fxt *fxt, bool interned, const struct rv_arg *args,
			  size_t nr_args, struct argument_plan *plans, struct rv_error *err)
{
	size_t i;
	int r;

	for (i = 0; i < nr_args; i++) {
		r = plan_argument(fxt, interned, &args[i], &plans[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool all_indexed(const struct argument_plan *plans, size_t nr_args)
{
	for (size_t i = 0; i < nr_args; i++)
		if (is_inline(&plans[i].name) ||
		    (plans[i].type == ARGUMENT_STRING && is_inline(&plans[i].value)))
			return false;
	return true;
}

/* A record whose strings all have indices, by what decides its words (the
 * same category, name, argument names, kinds, and header values: an int
 * that fits the header, a string value's address), so that a record like
 * it is those words again with its own thread, times and value words. */
static void shape_record(struct span_shape *shape, unsigned type, const char *category,
			 const char *name, uint16_t category_ref, uint16_t name_ref, bool has_end,
			 const struct rv_arg *args, const struct argument_plan *plans,
			 size_t nr_args)
{
	shape->category = category;
	shape->name = name;
	shape->nr_args = nr_args;
	shape->has_end = has_end;
	shape->words = 2 + has_end;
	for (size_t i = 0; i < nr_args; i++) {
		const struct argument_plan *a = &plans[i];
		uint32_t header_value = a->type == ARGUMENT_STRING ? a->value.ref : a->header_value;

		shape->args[i] = (struct shape_arg){
			.name = args[i].name,
			.kind = args[i].kind,
			.value = args[i].kind == RV_ARG_STRING ? args[i].s : NULL,
			.header = a->type | (uint64_t)(1 + a->has_value_word) << 4 |
				  (uint64_t)a->name.ref << 16 | (uint64_t)header_value << 32,
			.has_value_word = a->has_value_word,
		};
		shape->words += 1 + a->has_value_word;
	}
	shape->header = RECORD_EVENT | (uint64_t)shape->words << 4 | (uint64_t)type << 16 |
			(uint64_t)nr_args << 20 | (uint64_t)category_ref << 32 |
			(uint64_t)name_ref << 48;
}

/* Whether a record with these strings (interned: compared by address) and
 * arguments has the shape's words. */
static bool shape_fits(const struct span_shape *shape, const char *category, const char *name,
		       const struct rv_arg *args, size_t nr_args)
{
	if (shape->name != name || !name || shape->category != category ||
	    shape->nr_args != nr_args)
		return false;
	for (size_t i = 0; i < nr_args; i++) {
		const struct shape_arg *sa = &shape->args[i];
		struct argument_plan number;

		if (sa->name != args[i].name || sa->kind != args[i].kind)
			return false;
		if (args[i].kind == RV_ARG_STRING) {
			if (sa->value != args[i].s)
				return false;
		} else if (!plan_number(&args[i], &number) || (sa->header & 0xf) != number.type ||
			   sa->header >> 32 != number.header_value) {
			return false;
		}
	}
	return true;
}

static void write_shaped(struct rv_fxt *fxt, const struct span_shape *shape, uint8_t thread,
			 uint64_t ts, uint64_t end, const struct rv_arg *args)
{
	unsigned char *p = rv_out_take(fxt->fast->out, shape->words * 8);

	put_word(p, shape->header | (uint64_t)thread << 24);
	put_word(p + 8, ts);
	p += 16;
	for (size_t i = 0; i < shape->nr_args; i++) {
		put_word(p, shape->args[i].header);
		p += 8;
		if (shape->args[i].has_value_word) {
			/* INT64's bits are its int's */
			put_word(p, args[i].u);
			p += 8;
		}
	}
	if (shape->has_end)
		put_word(p, end);
}

/* Any event: header, timestamp, [category stream], [name stream], arguments,
 * [end timestamp]. The thread is always indexed; the category is empty
 * (ref 0) unless the caller gives one. A record whose strings all have
 * indices is written through its shape, kept in *keep when keep is given. */
static int write_event(struct rv_fxt *fxt, unsigned type, uint8_t thread,
		       struct string_ref *category, struct string_ref *name, uint64_t ts,
		       bool has_end, uint64_t end, const struct rv_arg *args, size_t nr_args,
		       bool interned, struct span_shape *keep, struct rv_error *err)
{
	struct argument_plan plans[MAX_ARGS];
	struct string_ref *strings[2 + 2 * MAX_ARGS];
	size_t nr_strings, fixed_words, words;
	unsigned char *p;
	int r;

	r = plan_arguments(fxt, interned, args, nr_args, plans, err);
	if (r < 0)
		return r;
	if (nr_args <= SHAPE_MAX_ARGS && !is_inline(category) && !is_inline(name) &&
	    all_indexed(plans, nr_args)) {
		struct span_shape local;

		if (!keep)
			keep = &local;
		shape_record(keep, type, category->bytes, name->bytes, category->ref, name->ref,
			     has_end, args, plans, nr_args);
		write_shaped(fxt, keep, thread, ts, end, args);
		return 0;
	}
	fixed_words = collect_inline(name, plans, nr_args, 2 + has_end, strings + 1, &nr_strings);
	/* The category's stream comes before the name's. */
	if (is_inline(category))
		strings[0] = category;
	else
		memmove(strings, strings + 1, nr_strings * sizeof(*strings));
	nr_strings += is_inline(category);
	words = record_words(strings, nr_strings, fixed_words);

	p = rv_out_take(fxt->fast->out, words * 8);
	put_word(p, RECORD_EVENT | (uint64_t)words << 4 | (uint64_t)type << 16 |
			    (uint64_t)nr_args << 20 | (uint64_t)thread << 24 |
			    (uint64_t)category->ref << 32 | (uint64_t)name->ref << 48);
	put_word(p + 8, ts);
	p += 16;
	if (is_inline(category))
		p += write_stream(p, category->bytes, category->length, category->inline_length);
	if (is_inline(name))
		p += write_stream(p, name->bytes, name->length, name->inline_length);
	p += write_arguments(p, plans, nr_args);
	if (has_end)
		put_word(p, end);
	return 0;
}

static int write_kernel_object(struct rv_fxt *fxt, unsigned object_type, uint64_t koid,
			       const char *name, bool has_process, uint64_t process_koid,
			       struct rv_error *err)
{
	struct argument_plan plan = { .type = ARGUMENT_KOID };
	struct string_ref name_ref;
	struct string_ref *strings[2];
	size_t nr_strings, fixed_words, words;
	unsigned char *p;
	int r;

	r = resolve_string(fxt, name, &name_ref, err);
	if (r < 0)
		return r;
	if (has_process) {
		r = resolve_string(fxt, "process", &plan.name, err);
		if (r < 0)
			return r;
		plan.has_value_word = true;
		plan.value_word = process_koid;
	}
	fixed_words = collect_inline(&name_ref, &plan, has_process, 2, strings, &nr_strings);
	words = record_words(strings, nr_strings, fixed_words);

	p = rv_out_take(fxt->fast->out, words * 8);
	put_word(p, RECORD_KERNEL_OBJECT | (uint64_t)words << 4 | (uint64_t)object_type << 16 |
			    (uint64_t)name_ref.ref << 24 | (uint64_t)has_process << 40);
	put_word(p + 8, koid);
	p += 16;
	if (is_inline(&name_ref))
		p += write_stream(p, name_ref.bytes, name_ref.length, name_ref.inline_length);
	write_arguments(p, &plan, has_process);
	return 0;
}

int rv_fxt_open(struct rv_fxt **out_fxt, struct rv_out *out, struct rv_fxt_fast *fast,
		struct rv_error *err)
{
	struct rv_fxt *fxt = calloc(1, sizeof(*fxt));
	unsigned char *p;

	if (fxt)
		fxt->string_slots = calloc(STRING_TABLE_MIN_SLOTS, sizeof(*fxt->string_slots));
	if (!fxt || !fxt->string_slots) {
		free(fxt);
		return rv_error_set(err, ENOMEM, "out of memory for the trace writer");
	}
	fxt->string_slots_mask = STRING_TABLE_MIN_SLOTS - 1;
	memset(fast, 0, sizeof(*fast));
	fast->out = out;
	fxt->fast = fast;

	p = rv_out_take(out, 3 * 8);
	put_word(p, FXT_MAGIC_RECORD);
	put_word(p + 8, RECORD_INITIALIZATION | 2 << 4);
	put_word(p + 16, TICKS_PER_SECOND);
	*out_fxt = fxt;
	return 0;
}

int rv_fxt_process(struct rv_fxt *fxt, uint32_t pid, const char *name, struct rv_error *err)
{
	return write_kernel_object(fxt, ZX_OBJ_TYPE_PROCESS, pid, name, false, 0, err);
}

int rv_fxt_thread(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *name,
		  struct rv_error *err)
{
	return write_kernel_object(fxt, ZX_OBJ_TYPE_THREAD, tid, name, true, pid, err);
}

int rv_fxt_span(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *category,
		const char *name, uint64_t begin_ns, uint64_t end_ns, const struct rv_arg *args,
		size_t nr_args, bool interned, struct rv_error *err)
{
	uint8_t thread = resolve_thread(fxt, pid, tid);
	struct string_ref name_ref, category_ref;
	struct span_shape *shape = NULL;
	int r;

	if (interned) {
		/* its strings are all in the table: nothing to resolve */
		shape = &fxt->shapes[shape_slot(name)];
		if (shape_fits(shape, category, name, args, nr_args)) {
			write_shaped(fxt, shape, thread, begin_ns, end_ns, args);
			return 0;
		}
	}
	r = resolve_as(fxt, interned, name, &name_ref, err);
	if (r >= 0)
		r = resolve_as(fxt, interned, category, &category_ref, err);
	if (r < 0)
		return r;
	return write_event(fxt, EVENT_DURATION_COMPLETE, thread, &category_ref, &name_ref, begin_ns,
			   true, end_ns, args, nr_args, interned, shape, err);
}

/* Whether the shape, just recorded, is a function span's (rv_function_args)
 * like this one: the arguments' names by address, the file by address, the
 * line in the INT32 header (a line is an int32). */
static bool function_shape_is(const struct span_shape *shape, const struct rv_function_span *span)
{
	const struct shape_arg *a = shape->args;

	if (shape->name != span->name || !span->name || shape->category != span->category)
		return false;
	if (!span->address)
		return shape->nr_args == 0;
	if (a[0].name != rv_arg_address || a[0].kind != RV_ARG_POINTER)
		return false;
	if (!span->file)
		return shape->nr_args == 1;
	return shape->nr_args == 3 && a[1].name == rv_arg_file && a[1].kind == RV_ARG_STRING &&
	       a[1].value == span->file && a[2].name == rv_arg_line && a[2].kind == RV_ARG_INT &&
	       (a[2].header & 0xf) == ARGUMENT_INT32 && a[2].header >> 32 == (uint32_t)span->line;
}

/* The first span of a function's shape: written the interned way, which
 * records the shape when its strings all have indices; it is then kept as
 * the function's. */
static __attribute__((noinline)) int function_span_slow(struct rv_fxt *fxt,
							struct rv_fxt_function_shape *fshape,
							const struct rv_function_span *span,
							struct rv_error *err)
{
	struct span_shape *shape = &fxt->shapes[shape_slot(span->name)];
	struct rv_arg args[RV_FUNCTION_ARGS];
	size_t n = rv_function_args(span, args);
	int r = rv_fxt_span(fxt, span->pid, span->tid, span->category, span->name, span->begin_ns,
			    span->end_ns, n ? args : NULL, n, true, err);

	if (r == 0 && function_shape_is(shape, span))
		*fshape = (struct rv_fxt_function_shape){
			.name = span->name,
			.category = span->category,
			.file = span->file,
			.line = span->file ? span->line : 0,
			.kind = (uint8_t)rv_function_kind(span),
			.words = (uint8_t)shape->words,
			.header = shape->header,
			.address_header = n >= 1 ? shape->args[0].header : 0,
			.file_header = n == 3 ? shape->args[1].header : 0,
			.line_header = n == 3 ? shape->args[2].header : 0,
		};
	return r;
}

int rv_fxt_function_span(struct rv_fxt *fxt, const struct rv_function_span *span,
			 struct rv_error *err)
{
	struct rv_fxt_function_shape *fshape =
		&fxt->fast->function_shapes[rv_fxt_function_shape_slot(span->name)];

	if (rv_fxt_function_shape_fits(fshape, span)) {
		/* The thread first: it may write the thread's record. */
		uint8_t thread = resolve_thread(fxt, span->pid, span->tid);

		rv_fxt_write_function(rv_out_take(fxt->fast->out, (size_t)fshape->words * 8),
				      fshape, thread, span->begin_ns, span->end_ns, span->address);
		return 0;
	}
	return function_span_slow(fxt, fshape, span, err);
}

int rv_fxt_instant(struct rv_fxt *fxt, uint32_t pid, uint32_t tid, const char *name, uint64_t ts_ns,
		   const struct rv_arg *args, size_t nr_args, struct rv_error *err)
{
	uint8_t thread = resolve_thread(fxt, pid, tid);
	struct string_ref name_ref, no_category = { 0 };
	int r;

	r = resolve_string(fxt, name, &name_ref, err);
	if (r < 0)
		return r;
	return write_event(fxt, EVENT_INSTANT, thread, &no_category, &name_ref, ts_ns, false, 0,
			   args, nr_args, false, NULL, err);
}

void rv_fxt_stats(const struct rv_fxt *fxt, struct rv_trace_writer_stats *stats)
{
	stats->strings = fxt->nr_strings;
	stats->inline_strings = fxt->inline_strings;
	stats->thread_evictions = fxt->thread_evictions;
}

void rv_fxt_free(struct rv_fxt *fxt)
{
	if (!fxt)
		return;
	free(fxt->string_slots);
	free(fxt->key_bytes);
	free(fxt->interned);
	free(fxt);
}
