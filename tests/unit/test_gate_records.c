/* test_gate_records.c: the gate's ring-buffer records as its poll parses
 * them (rv_gate_record_parse, which the fuzz harness also calls): every
 * field of a whole record, and short records and unknown types refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "../../bpf/gate.h"
#include "record/gate.h"

static struct rv_gate_event event(uint32_t type, uint32_t flags)
{
	return (struct rv_gate_event){ .time_ns = 1000,
				       .duration_ns = 250,
				       .type = type,
				       .flags = flags,
				       .pid = 7,
				       .tid = 8,
				       .probe = 3,
				       .cpu = 1 };
}

Test(gate_records, a_whole_record_gives_every_field)
{
	struct rv_gate_event e = event(RV_GATE_REC_WINDOW_END, RV_GATE_REC_FLAG_SLOW);
	struct rv_gate_record r;

	cr_assert_eq(rv_gate_record_parse(&e, sizeof(e), &r), 0);
	cr_assert_eq(r.type, RV_GATE_REC_WINDOW_END);
	cr_assert_eq(r.time_ns, 1000);
	cr_assert_eq(r.duration_ns, 250);
	cr_assert_eq(r.pid, 7);
	cr_assert_eq(r.tid, 8);
	cr_assert_eq(r.probe, 3);
	cr_assert_eq(r.cpu, 1);
	cr_assert(r.slow);
	cr_assert_not(r.fired);
	e = event(RV_GATE_REC_TRIGGER, RV_GATE_REC_FLAG_FIRED);
	cr_assert_eq(rv_gate_record_parse(&e, sizeof(e) + 8, &r), 0,
		     "longer: the rest is not read");
	cr_assert(r.fired);
	cr_assert_not(r.slow);
}

Test(gate_records, short_records_and_unknown_types_are_refused)
{
	struct rv_gate_event e = event(RV_GATE_REC_WINDOW_BEGIN, 0);
	struct rv_gate_record r;

	for (size_t size = 0; size < sizeof(e); size++)
		cr_assert_eq(rv_gate_record_parse(&e, size, &r), -EINVAL, "%zu bytes", size);
	e.type = 0;
	cr_assert_eq(rv_gate_record_parse(&e, sizeof(e), &r), -EINVAL);
	e.type = RV_GATE_REC_TRIGGER + 1;
	cr_assert_eq(rv_gate_record_parse(&e, sizeof(e), &r), -EINVAL);
}
