/* fn_recorder.c: recorder mode of the function tracer: the per-thread
 * flight recorder in BPF maps (bpf/functions.h), read at snapshots, whose
 * selected records go to the sampling engine as the bpf-output samples the
 * events would have carried; see fn_engine.h.
 *
 * Not here: loading the maps (fn_engine.c), writing the samples
 * (sample_engine.c).
 */
#include "record/fn_engine_internal.h"
#include "record/fn_stream.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rv_fn_recorder_init(struct rv_fn_recorder *r, uint32_t slots)
{
	memset(r, 0, sizeof(*r));
	if (!slots)
		return 0;
	r->consumed = calloc(slots, sizeof(*r->consumed));
	r->missed = calloc(slots, sizeof(*r->missed));
	r->slot_copy = malloc(sizeof(*r->slot_copy));
	if (!r->consumed || !r->missed || !r->slot_copy) {
		rv_fn_recorder_destroy(r);
		return -ENOMEM;
	}
	return 0;
}

void rv_fn_recorder_destroy(struct rv_fn_recorder *r)
{
	free(r->consumed);
	free(r->missed);
	free(r->slot_copy);
	memset(r, 0, sizeof(*r));
}

/* ---- reading the slots ---- */

/* Slots that may have been claimed: the claim count, plus the candidates a
 * claim in progress may be trying (functions.bpf.c's SLOT_TRIES). */
static uint32_t slots_in_use(const struct rv_fn_engine *e)
{
	uint32_t zero = 0, claimed = 0;

	if (bpf_map__lookup_elem(e->skel->maps.fn_slot_count, &zero, sizeof(zero), &claimed,
				 sizeof(claimed), 0))
		return e->config.recorder_slots;
	if ((uint64_t)claimed + 8 >= e->config.recorder_slots)
		return e->config.recorder_slots;
	return claimed + 8;
}

/* The index of the oldest record a slot still holds. */
static uint64_t oldest(const struct rv_fn_slot *s)
{
	return s->head > RV_FN_RECORDER_RECORDS ? s->head - RV_FN_RECORDER_RECORDS : 0;
}

/* Records of s overwritten since the last read of its slot, before any
 * snapshot read them. */
static uint64_t newly_missed(const struct rv_fn_slot *s, uint64_t consumed)
{
	return oldest(s) > consumed ? oldest(s) - consumed : 0;
}

static int read_slot(const struct rv_fn_engine *e, uint32_t slot, struct rv_error *err)
{
	struct rv_fn_slot *copy = e->recorder.slot_copy;
	int ret = bpf_map__lookup_elem(e->skel->maps.fn_slots, &slot, sizeof(slot), copy,
				       sizeof(*copy), 0);

	if (ret)
		return rv_error_set(err, -ret, "cannot read the function tracer's recorder: %s",
				    strerror(-ret));
	return 0;
}

size_t rv_fn_slot_select(const struct rv_fn_slot *slot, uint64_t *consumed,
			 const struct rv_sample_selection *sel, rv_fn_slot_visit visit, void *ctx,
			 int *error)
{
	uint64_t head = slot->head, next, from, taken = 0;
	bool prefix = true;

	*error = 0;
	if (sel && sel->tid && slot->tid != sel->tid)
		return 0;
	from = oldest(slot);
	if (from < *consumed)
		from = *consumed;
	next = from;
	for (uint64_t i = from; i < head && !*error; i++) {
		const struct rv_fn_slot_entry *entry =
			&slot->records[i & (RV_FN_RECORDER_RECORDS - 1)];

		if (entry->seq != (uint32_t)(i + 1)) {
			/* overwritten while the slot was copied */
			if (prefix)
				next = i + 1;
			continue;
		}
		if (sel && entry->record.time > sel->until) {
			prefix = false; /* for a later snapshot */
			continue;
		}
		if (prefix)
			next = i + 1;
		if (sel && entry->record.time < sel->since)
			continue; /* before the snapshot: never asked for */
		*error = visit(ctx, entry);
		taken++;
	}
	if (!*error)
		*consumed = next;
	return (size_t)taken;
}

struct hand_ctx {
	struct rv_sample_engine *engine;
	struct rv_error *err;
};

static int hand_entry(void *ctx, const struct rv_fn_slot_entry *entry)
{
	struct hand_ctx *h = ctx;
	struct rv_output_sample s = {
		.time = entry->record.time,
		.ip = rv_fn_record_ip(&entry->record),
		.cpu = entry->cpu,
		.pid = entry->record.pid,
		.tid = entry->record.tid,
		.raw = &entry->record,
		.raw_size = sizeof(entry->record),
	};

	return rv_sample_engine_add_output(h->engine, &s, h->err);
}

int rv_fn_engine_snapshot(struct rv_fn_engine *e, struct rv_sample_engine *engine,
			  const struct rv_sample_selection *sel, size_t *handed,
			  struct rv_error *err)
{
	struct rv_fn_recorder *r = &e->recorder;
	struct hand_ctx h = { engine, err };
	uint32_t in_use;

	if (handed)
		*handed = 0;
	if (!e->config.recorder_slots)
		return rv_error_set(err, EINVAL, "the function tracer is not in recorder mode");
	in_use = slots_in_use(e);
	for (uint32_t slot = 0; slot < in_use; slot++) {
		int ret = read_slot(e, slot, err), error;
		size_t n;

		if (ret)
			return ret;
		if (!r->slot_copy->head)
			continue;
		r->missed[slot] += newly_missed(r->slot_copy, r->consumed[slot]);
		n = rv_fn_slot_select(r->slot_copy, &r->consumed[slot], sel, hand_entry, &h,
				      &error);
		if (error)
			return error;
		if (handed)
			*handed += n;
	}
	return 0;
}

int rv_fn_engine_recorder_threads(const struct rv_fn_engine *e, struct rv_fn_recorder_thread *out,
				  size_t max, size_t *count, struct rv_error *err)
{
	const struct rv_fn_recorder *r = &e->recorder;
	uint32_t in_use;

	*count = 0;
	if (!e->config.recorder_slots)
		return 0;
	in_use = slots_in_use(e);
	for (uint32_t slot = 0; slot < in_use && *count < max; slot++) {
		int ret = read_slot(e, slot, err);
		const struct rv_fn_slot *s = r->slot_copy;

		if (ret)
			return ret;
		if (!s->head)
			continue;
		out[*count] = (struct rv_fn_recorder_thread){
			.tid = s->tid,
			.pid = s->pid,
			.records = s->head,
			.overwritten = oldest(s),
			.overwritten_unread = r->missed[slot] + newly_missed(s, r->consumed[slot]),
		};
		++*count;
	}
	return 0;
}
