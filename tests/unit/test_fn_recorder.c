/* test_fn_recorder.c: the user-space half of the function tracer's
 * per-thread flight recorder (recorder mode): a kept record becomes the very
 * PERF_RECORD_SAMPLE the bpf-output event would have carried
 * (rv_output_sample_build, read back through the capture module), and a
 * slot's selection (rv_fn_slot_select) takes the last records, by thread and
 * time, each once, skipping entries overwritten while the slot was copied.
 *
 * Not here: the BPF side or live recording (tests/e2e/test_functions_record.c).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../bpf/functions.h"
#include "capture/perf_data.h"
#include "record/fn_engine.h"
#include "record/sample_engine.h"

#define EVENT_ID 0x77ull

static struct rv_fn_record a_record(void)
{
	return (struct rv_fn_record){
		.type = RV_FN_EXIT,
		.flags = RV_FN_FLAG_IN_WINDOW,
		.tid = 1235,
		.pid = 1234,
		.arg = 7,
		.addr = 0x401130,
		.sp = 0x7ffc0000f000,
		.value = 0,
	};
}

Test(fn_recorder, a_kept_record_reads_back_as_a_bpf_output_sample)
{
	struct rv_fn_record rec = a_record();
	struct rv_output_sample s = {
		.time = 123456789,
		.ip = 0x401abc,
		.cpu = 1,
		.pid = 1234,
		.tid = 1236, /* the thread that ran need not be the one the record is about */
		.raw = &rec,
		.raw_size = sizeof(rec),
	};
	struct rv_sample_config config = { .bpf_output = true };
	struct perf_event_attr attr;
	struct perf_event_header h;
	uint64_t buf[32], id = EVENT_ID;
	struct rv_perf_writer *w;
	struct rv_perf_reader *r;
	struct rv_perf_record pr;
	struct rv_perf_sample ps;
	struct rv_perf_meta meta = { .clockid = CLOCK_MONOTONIC };
	struct rv_error err = { 0 };
	char path[] = "/tmp/rv-fnrec-XXXXXX";
	size_t size;
	int fd, samples = 0;

	memset(buf, 0xa5, sizeof(buf));
	size = rv_output_sample_build(buf, sizeof(buf), EVENT_ID, &s);
	/* header, id, ip, pid/tid, time, cpu/res: 48; u32 size + 48 bytes + 4 of padding */
	cr_assert_eq(size, 104);
	memcpy(&h, buf, sizeof(h));
	cr_assert_eq(h.size, 104);
	cr_assert_eq(h.type, PERF_RECORD_SAMPLE);
	cr_assert_eq(h.misc, PERF_RECORD_MISC_USER);
	cr_assert_eq(((const uint8_t *)buf)[100], 0, "the padding is zeroed");
	cr_assert_eq(rv_output_sample_build(buf, 103, EVENT_ID, &s), 0, "103 bytes are too few");

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	rv_sample_engine_attr(&config, false, &attr);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, RV_FN_EVENT_NAME, &id, 1, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_writer_write(w, (const struct perf_event_header *)buf, &err), 0);
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	while (rv_perf_reader_next(r, &pr, &err) == 1) {
		struct rv_fn_record back;

		if (pr.header->type != PERF_RECORD_SAMPLE)
			continue;
		samples++;
		cr_assert_eq(rv_perf_reader_parse_sample(r, pr.header, &ps, &err), 0, "%s",
			     err.message);
		cr_assert_not_null(ps.attr);
		cr_assert_str_eq(ps.attr->name, RV_FN_EVENT_NAME);
		cr_assert_eq(ps.id, EVENT_ID);
		cr_assert_eq(ps.ip, 0x401abc);
		cr_assert_eq(ps.pid, 1234);
		cr_assert_eq(ps.tid, 1236);
		cr_assert_eq(ps.time, 123456789);
		cr_assert_eq(ps.cpu, 1);
		cr_assert_eq(ps.raw_size, 52, "the kernel pads raw data to end 8-aligned");
		memcpy(&back, ps.raw, sizeof(back));
		cr_assert_eq(memcmp(&back, &rec, sizeof(rec)), 0);
	}
	cr_assert_eq(samples, 1);
	rv_perf_reader_free(r);
	unlink(path);

	/* a kernel record (no user ip) is marked as the kernel's */
	s.ip = 0;
	cr_assert_eq(rv_output_sample_build(buf, sizeof(buf), EVENT_ID, &s), 104);
	memcpy(&h, buf, sizeof(h));
	cr_assert_eq(h.misc, PERF_RECORD_MISC_KERNEL);
}

/* ---- slots ---- */

/* A slot of thread tid in which `made` records were written, record i at
 * time 1000 + 10 * i with arg i. */
static struct rv_fn_slot *make_slot(uint32_t tid, uint64_t made)
{
	struct rv_fn_slot *slot = calloc(1, sizeof(*slot));

	cr_assert_not_null(slot);
	slot->tid = tid;
	slot->pid = tid;
	slot->head = made;
	for (uint64_t i = made > RV_FN_RECORDER_RECORDS ? made - RV_FN_RECORDER_RECORDS : 0;
	     i < made; i++) {
		struct rv_fn_slot_entry *e = &slot->records[i & (RV_FN_RECORDER_RECORDS - 1)];

		e->seq = (uint32_t)(i + 1);
		e->cpu = 0;
		e->record = a_record();
		e->record.time = 1000 + 10 * i;
		e->record.tid = tid;
		e->record.arg = (uint32_t)i;
	}
	return slot;
}

struct visited {
	uint32_t args[RV_FN_RECORDER_RECORDS + 16];
	size_t n;
};

static int visit(void *ctx, const struct rv_fn_slot_entry *entry)
{
	struct visited *v = ctx;

	cr_assert_lt(v->n, sizeof(v->args) / sizeof(v->args[0]));
	v->args[v->n++] = entry->record.arg;
	return 0;
}

Test(fn_recorder, a_full_slot_gives_its_last_records_once)
{
	uint64_t made = RV_FN_RECORDER_RECORDS + 100, consumed = 0;
	struct rv_fn_slot *slot = make_slot(42, made);
	struct visited *v = calloc(1, sizeof(*v));
	int error;

	cr_assert_not_null(v);
	cr_assert_eq(rv_fn_slot_select(slot, &consumed, NULL, visit, v, &error),
		     RV_FN_RECORDER_RECORDS);
	cr_assert_eq(error, 0);
	for (size_t i = 0; i < v->n; i++)
		cr_assert_eq(v->args[i], 100 + i, "the newest, oldest first");
	cr_assert_eq(consumed, made);
	v->n = 0;
	cr_assert_eq(rv_fn_slot_select(slot, &consumed, NULL, visit, v, &error), 0,
		     "nothing twice");
	free(v);
	free(slot);
}

Test(fn_recorder, selections_take_their_thread_and_times_once)
{
	struct rv_fn_slot *slot = make_slot(42, 50); /* times 1000 .. 1490 */
	struct visited *v = calloc(1, sizeof(*v));
	uint64_t consumed = 0;
	int error;

	cr_assert_not_null(v);
	/* another thread's selection takes nothing and consumes nothing */
	cr_assert_eq(rv_fn_slot_select(slot, &consumed,
				       &(struct rv_sample_selection){ 0, UINT64_MAX, 43 }, visit, v,
				       &error),
		     0);
	cr_assert_eq(consumed, 0);
	/* [1100, 1200]: records 10..20 */
	cr_assert_eq(rv_fn_slot_select(slot, &consumed,
				       &(struct rv_sample_selection){ 1100, 1200, 42 }, visit, v,
				       &error),
		     11);
	cr_assert_eq(v->args[0], 10);
	cr_assert_eq(v->args[10], 20);
	cr_assert_eq(consumed, 21, "everything up to the selection's end is done with");
	/* the next one (a later trigger) takes the rest, 21..49 */
	v->n = 0;
	cr_assert_eq(rv_fn_slot_select(slot, &consumed,
				       &(struct rv_sample_selection){ 1201, UINT64_MAX, 0 }, visit,
				       v, &error),
		     29);
	cr_assert_eq(v->args[0], 21);
	cr_assert_eq(consumed, 50);
	free(v);
	free(slot);
}

Test(fn_recorder, an_entry_overwritten_while_copied_is_skipped)
{
	struct rv_fn_slot *slot = make_slot(42, 8);
	struct visited *v = calloc(1, sizeof(*v));
	uint64_t consumed = 0;
	int error;

	cr_assert_not_null(v);
	slot->records[3].seq = 3 + 1 + RV_FN_RECORDER_RECORDS; /* a newer record's */
	slot->records[5].seq = 0;			       /* being written */
	cr_assert_eq(rv_fn_slot_select(slot, &consumed, NULL, visit, v, &error), 6);
	cr_assert_eq(v->args[3], 4);
	cr_assert_eq(v->args[4], 6);
	free(v);
	free(slot);
}
