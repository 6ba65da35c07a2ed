/* extra.c: --events samples (RV_EVENT_EXTRA) drawn as instants on the
 * thread that took them; see builder.h.
 *
 * Not here: stacks. An extra event never opens or ends a frame.
 */
#include <string.h>

#include "trace/builder_internal.h"

/* The slot that counts the event's name (the last one once the table is
 * full); NULL when memory runs out. */
static struct rv_builder_extra_count *count_slot(struct rv_builder *b, const char *name)
{
	const char *kept;

	for (size_t i = 0; i < b->nr_extra; i++)
		if (!strcmp(b->extra[i].name, name))
			return &b->extra[i];
	if (b->nr_extra == RV_BUILDER_MAX_EXTRA) {
		b->extra[RV_BUILDER_MAX_EXTRA - 1].name = "other events";
		return &b->extra[RV_BUILDER_MAX_EXTRA - 1];
	}
	kept = rv_intern(&b->names, name);
	if (!kept)
		return NULL;
	b->extra[b->nr_extra] = (struct rv_builder_extra_count){ .name = kept };
	return &b->extra[b->nr_extra++];
}

int builder_add_extra(struct rv_builder *b, const struct rv_event *ev, struct rv_error *err)
{
	const char *name = ev->extra.name && *ev->extra.name ? ev->extra.name : "event";
	struct thread_state *t = builder_thread(b, ev->pid, ev->tid);
	struct rv_builder_extra_count *slot;
	struct rv_arg args[6];
	size_t n = 0;
	int ret;

	if (!t)
		return builder_out_of_memory(err);
	slot = count_slot(b, name);
	if (!slot)
		return builder_out_of_memory(err);
	ret = builder_ensure_track(b, t, err);
	if (ret)
		return ret;
	if (ev->extra.ip) {
		struct rv_symbol sym;

		/* A kernel address is shown by name only, and only when the
		 * symbolizer knows the kernel (it was traced): the trace file
		 * is readable by others otherwise. */
		rv_symbolizer_lookup(b->symbolizer, ev->pid, ev->extra.ip, &sym);
		if (!ev->extra.kernel)
			args[n++] = (struct rv_arg){ .name = "ip",
						     .kind = RV_ARG_POINTER,
						     .u = ev->extra.ip };
		if (sym.known)
			args[n++] = (struct rv_arg){ .name = "symbol",
						     .kind = RV_ARG_STRING,
						     .s = sym.name };
	}
	if (ev->extra.addr)
		args[n++] = (struct rv_arg){ .name = "addr",
					     .kind = RV_ARG_POINTER,
					     .u = ev->extra.addr };
	args[n++] = (struct rv_arg){ .name = "count", .kind = RV_ARG_UINT, .u = ev->extra.count };
	args[n++] = (struct rv_arg){ .name = "cpu", .kind = RV_ARG_UINT, .u = ev->extra.cpu };
	args[n++] = (struct rv_arg){ .name = "tid", .kind = RV_ARG_UINT, .u = ev->tid };
	slot->samples++;
	slot->events += ev->extra.count;
	b->stats.extra_events++;
	if (ev->time > b->stats.last_time)
		b->stats.last_time = ev->time;
	return rv_trace_writer_instant(b->writer, t->pid, t->tid, name, builder_rel(b, ev->time),
				       args, n, err);
}

size_t rv_builder_extra_counts(const struct rv_builder *b, struct rv_builder_extra_count *out,
			       size_t n)
{
	for (size_t i = 0; i < b->nr_extra && i < n; i++)
		out[i] = b->extra[i];
	return b->nr_extra;
}
