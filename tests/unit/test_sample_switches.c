/* test_sample_switches.c: context switch records in sampling captures, written
 * here with the project's perf.data writer and the synth helpers as the
 * sampling engine lays them out (the switches themselves as samples of the
 * RV_SWITCH_STATE_EVENT bpf-output event, built as the engine builds them;
 * where switch_state cannot run, and in captures made before,
 * PERF_RECORD_SWITCH_CPU_WIDE of per-CPU events with context_switch, and the
 * reasons as that event's samples),
 * and as `perf record --switch-events` writes them (PERF_RECORD_SWITCH),
 * decoded into off-CPU events. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/off_cpu.h"
#include "decode/sample_decoder.h"
#include "record/sample_engine.h"
#include "sample_filter.h"

#define CLOCK_ID  0x61ull
#define SWITCH_ID 0x62ull
#define PID	  700
#define STACK_TYPE                                                                                 \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct capture {
	char path[64];
	struct rv_perf_writer *w;
	struct rv_error err;
	struct rv_synth synth;
};

/* The clock's attribute has context_switch (the engine's fallback, and
 * captures made before switch_state wrote the switches), or not. */
static void capture_open_with(struct capture *c, bool switch_states, bool context_switch)
{
	struct perf_event_attr attr;
	uint64_t id = CLOCK_ID, sid = SWITCH_ID;
	int fd;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "/tmp/rv-switch-XXXXXX");
	fd = mkstemp(c->path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&c->w, c->path, &c->err), 0, "%s", c->err.message);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = 1000;
	attr.sample_type = STACK_TYPE;
	attr.sample_id_all = 1;
	attr.context_switch = context_switch;
	cr_assert_eq(rv_perf_writer_add_attr(c->w, &attr, "cpu-clock", &id, 1, &c->err), 0);
	if (switch_states) {
		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_BPF_OUTPUT;
		attr.sample_period = 1;
		attr.sample_type = STACK_TYPE & ~PERF_SAMPLE_PERIOD;
		attr.sample_type |= PERF_SAMPLE_RAW;
		attr.sample_id_all = 1;
		cr_assert_eq(rv_perf_writer_add_attr(c->w, &attr, RV_SWITCH_STATE_EVENT, &sid, 1,
						     &c->err),
			     0);
	}
	c->synth = (struct rv_synth){ .sample_type = STACK_TYPE, .sample_id_all = true };
}

static void capture_open(struct capture *c, bool switch_states)
{
	capture_open_with(c, switch_states, true);
}

static void write_rec(struct capture *c, const void *buf, size_t size)
{
	cr_assert_gt(size, 0);
	cr_assert_eq(rv_perf_writer_write(c->w, buf, &c->err), 0, "%s", c->err.message);
}

static void stack_sample(struct capture *c, uint32_t tid, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period;
	} s = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, sizeof(s) },
		CLOCK_ID,
		0x401000,
		PID,
		tid,
		time,
		1,
		0,
		1000000 };

	write_rec(c, &s, sizeof(s));
}

/* What the engine's BPF program writes on CPU cpu about thread tid of
 * process pid, while thread running (of process running_pid) runs. */
static void switch_sample(struct capture *c, uint32_t running_pid, uint32_t running,
			  const struct rv_switch_state *raw, size_t raw_size, uint32_t cpu,
			  uint64_t time)
{
	uint64_t buf[32];
	struct rv_output_sample s = {
		.time = time,
		.ip = 0,
		.cpu = cpu,
		.pid = running_pid,
		.tid = running,
		.raw = raw,
		.raw_size = (uint32_t)raw_size,
	};

	write_rec(c, buf, rv_output_sample_build(buf, sizeof(buf), SWITCH_ID, &s));
}

/* The reason the engine's BPF program gave, on CPU cpu, for thread tid, in
 * captures with context_switch. */
static void switch_state(struct capture *c, uint32_t tid, uint32_t cpu, uint32_t state,
			 uint64_t time)
{
	struct rv_switch_state raw = { PID, tid, state, RV_SWITCH_REASON };

	switch_sample(c, PID, tid, &raw, sizeof(raw), cpu, time);
}

/* A switch the engine's BPF program wrote (kind RV_SWITCH_OUT, _OUT_PREEMPT
 * or _IN) about thread tid, while thread `running` ran. */
static void bpf_switch(struct capture *c, uint32_t running, uint32_t tid, uint32_t kind,
		       uint32_t state, uint32_t cpu, uint64_t time)
{
	struct rv_switch_state raw = { PID, tid, state, kind };

	switch_sample(c, running == tid ? PID : 4242, running, &raw, sizeof(raw), cpu, time);
}

static void cpu_wide(struct capture *c, uint32_t tid, uint32_t cpu, bool out, bool preempt,
		     uint64_t time)
{
	uint8_t buf[128];
	struct rv_synth_id id = {
		.pid = PID, .tid = tid, .cpu = cpu, .time = time, .id = CLOCK_ID
	};

	write_rec(c, buf,
		  rv_synth_switch_cpu_wide(&c->synth, buf, sizeof(buf), out, preempt, 1, 1, &id));
}

static void per_thread(struct capture *c, uint32_t tid, bool out, bool preempt, uint64_t time)
{
	uint8_t buf[128];
	struct rv_synth_id id = { .pid = PID, .tid = tid, .cpu = 0, .time = time, .id = CLOCK_ID };

	write_rec(c, buf, rv_synth_switch(&c->synth, buf, sizeof(buf), out, preempt, &id));
}

static void capture_finish(struct capture *c)
{
	struct rv_perf_meta meta = { .clockid = CLOCK_MONOTONIC };

	cr_assert_eq(rv_perf_writer_finish(c->w, &meta, &c->err), 0, "%s", c->err.message);
	rv_perf_writer_free(c->w);
	c->w = NULL;
}

struct seen {
	enum rv_event_kind kind;
	uint32_t tid;
	uint64_t time;
	char name[48];
	bool has_state, sampled, switches_recorded;
	uint64_t state;
};

/* Decodes the capture into at most max events; returns how many. */
static size_t decode(const char *path, struct seen *out, size_t max,
		     struct rv_sample_decoder_stats *stats)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct rv_perf_reader *reader;
	struct rv_sample_decoder *d;
	struct rv_error err = { 0 };
	struct rv_event ev;
	size_t n = 0;
	int got;

	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(rv_perf_reader_open(&reader, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_sample_decoder_open(&d, reader, sym, &err), 0, "%s", err.message);
	while ((got = rv_sample_decoder_next(d, &ev, &err)) > 0) {
		struct seen *s = &out[n];

		cr_assert_lt(n, max);
		memset(s, 0, sizeof(*s));
		s->kind = ev.kind;
		s->tid = ev.tid;
		s->time = ev.time;
		if (ev.kind == RV_EVENT_KERNEL_BEGIN || ev.kind == RV_EVENT_KERNEL_END) {
			cr_assert_eq(ev.kernel.kind, RV_KERNEL_OFF_CPU);
			snprintf(s->name, sizeof(s->name), "%s", ev.kernel.name);
			s->sampled = ev.kernel.sampled;
			for (size_t i = 0; i < ev.kernel.nr_args; i++)
				if (!strcmp(ev.kernel.args[i].name, "state")) {
					s->has_state = true;
					s->state = ev.kernel.args[i].value;
				}
		} else if (ev.kind == RV_EVENT_STACK_SAMPLE) {
			s->switches_recorded = ev.stack.switches_recorded;
		}
		n++;
	}
	cr_assert_eq(got, 0, "%s", err.message);
	rv_sample_decoder_stats(d, stats);
	rv_sample_decoder_free(d);
	rv_perf_reader_free(reader);
	rv_symbolizer_free(sym);
	return n;
}

Test(sample_switches, cpu_wide_switches_become_off_cpu_spans_named_by_their_reason)
{
	struct capture c;
	struct seen ev[32];
	struct rv_sample_decoder_stats st;
	size_t n;

	capture_open(&c, true);
	stack_sample(&c, 701, 1000);
	switch_state(&c, 701, 1, 0x1, 1990); /* interruptible sleep */
	cpu_wide(&c, 701, 1, true, false, 2000);
	cpu_wide(&c, 701, 0, false, false, 3000);
	stack_sample(&c, 701, 3100);
	cpu_wide(&c, 701, 0, true, true, 4000); /* preempted: no reason sample */
	cpu_wide(&c, 701, 1, false, false, 4500);
	switch_state(&c, 702, 1, 0x2, 4990);	 /* another thread's reason... */
	cpu_wide(&c, 701, 1, true, false, 5000); /* ...does not name this switch */
	switch_state(&c, 701, 0, 0x2, 5990);	 /* disk: on CPU 0 */
	cpu_wide(&c, 701, 1, false, false, 6000);
	cpu_wide(&c, 701, 0, true, false, 6500); /* the reason on CPU 0 is this one's */
	cpu_wide(&c, 701, 0, false, false, 6800);
	switch_state(&c, 701, 1, 0x2, 6900);	 /* on CPU 1... */
	cpu_wide(&c, 701, 0, true, false, 7000); /* ...is not this switch's on CPU 0 */
	capture_finish(&c);

	n = decode(c.path, ev, 32, &st);
	unlink(c.path);
	cr_assert_eq(n, 11, "reasons make no event: %zu", n);
	cr_assert_eq(ev[0].kind, RV_EVENT_STACK_SAMPLE);
	cr_assert(ev[0].switches_recorded, "the clock's attribute records switches");
	cr_assert_eq(ev[1].kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_eq(ev[1].tid, 701);
	cr_assert_eq(ev[1].time, 2000);
	cr_assert(ev[1].sampled);
	cr_assert_str_eq(ev[1].name, "[off-cpu: sleeping]");
	cr_assert(ev[1].has_state && ev[1].state == 0x1);
	cr_assert_eq(ev[2].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[2].time, 3000);
	cr_assert(ev[2].sampled);
	cr_assert_eq(ev[3].kind, RV_EVENT_STACK_SAMPLE);
	cr_assert_str_eq(ev[4].name, "[off-cpu: preempted]");
	cr_assert(ev[4].has_state && ev[4].state == 0);
	cr_assert_eq(ev[5].kind, RV_EVENT_KERNEL_END);
	cr_assert_str_eq(ev[6].name, "[off-cpu: blocked]", "a reason of another thread: %s",
			 ev[6].name);
	cr_assert_not(ev[6].has_state);
	cr_assert_eq(ev[7].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[8].kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_str_eq(ev[8].name, "[off-cpu: disk]");
	cr_assert_eq(ev[9].kind, RV_EVENT_KERNEL_END);
	cr_assert_str_eq(ev[10].name, "[off-cpu: blocked]",
			 "a reason of another CPU is not this switch's");
	cr_assert_eq(st.switches, 9);
	cr_assert_eq(st.samples, 2, "reasons are not stack samples");
}

Test(sample_switches, perf_per_thread_switches_without_reasons_are_blocked_or_preempted)
{
	struct capture c;
	struct seen ev[16];
	struct rv_sample_decoder_stats st;
	size_t n;

	capture_open(&c, false);
	stack_sample(&c, 700, 1000);
	per_thread(&c, 700, true, false, 2000);
	per_thread(&c, 700, false, false, 3000);
	per_thread(&c, 700, true, true, 4000);
	per_thread(&c, 700, false, false, 5000);
	capture_finish(&c);

	n = decode(c.path, ev, 16, &st);
	unlink(c.path);
	cr_assert_eq(n, 5);
	cr_assert_str_eq(ev[1].name, "[off-cpu: blocked]");
	cr_assert_eq(ev[1].kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_eq(ev[1].tid, 700);
	cr_assert_eq(ev[2].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[2].time, 3000);
	cr_assert_str_eq(ev[3].name, "[off-cpu: preempted]");
	cr_assert_eq(ev[4].kind, RV_EVENT_KERNEL_END);
}

Test(sample_switches, reasons_are_named_as_the_function_tracer_names_them)
{
	char buf[48];

	cr_assert_str_eq(rv_off_cpu_name(0, buf, sizeof(buf)), "[off-cpu: preempted]");
	cr_assert_str_eq(rv_off_cpu_name(0x100, buf, sizeof(buf)), "[off-cpu: preempted]");
	cr_assert_str_eq(rv_off_cpu_name(0x1, buf, sizeof(buf)), "[off-cpu: sleeping]");
	cr_assert_str_eq(rv_off_cpu_name(0x2, buf, sizeof(buf)), "[off-cpu: disk]");
	cr_assert_str_eq(rv_off_cpu_name(0x8, buf, sizeof(buf)), "[off-cpu: stopped]");
	cr_assert_str_eq(rv_off_cpu_name(0x20, buf, sizeof(buf)), "[off-cpu: dead]");
	cr_assert_str_eq(rv_off_cpu_name(RV_OFF_CPU_BLOCKED, buf, sizeof(buf)),
			 "[off-cpu: blocked]");
	cr_assert_eq(rv_off_cpu_name(0x40, buf, sizeof(buf)), buf);
	cr_assert_str_eq(buf, "[off-cpu: state 0x40]");
}

Test(sample_switches, switches_written_by_bpf_become_off_cpu_spans_of_the_thread_they_name)
{
	struct capture c;
	struct seen ev[32];
	struct rv_sample_decoder_stats st;
	size_t n;

	capture_open_with(&c, true, false);
	stack_sample(&c, 701, 1000);
	bpf_switch(&c, 701, 701, RV_SWITCH_OUT, 0x1, 1, 2000); /* sleeps */
	bpf_switch(&c, 4243, 701, RV_SWITCH_IN, 0, 0, 3000);   /* while another runs */
	stack_sample(&c, 701, 3100);
	bpf_switch(&c, 701, 701, RV_SWITCH_OUT_PREEMPT, 0, 0, 4000); /* preempted */
	bpf_switch(&c, 4243, 701, RV_SWITCH_IN, 0, 1, 4500);
	bpf_switch(&c, 701, 701, RV_SWITCH_OUT, 0x2, 1, 5000); /* disk */
	bpf_switch(&c, 4243, 701, 7, 0, 1, 5500);	       /* a kind not known: nothing */
	bpf_switch(&c, 4243, 0, RV_SWITCH_IN, 0, 1, 5600);     /* no thread: nothing */
	bpf_switch(&c, 4243, 701, RV_SWITCH_IN, 0, 0, 6000);
	capture_finish(&c);

	n = decode(c.path, ev, 32, &st);
	unlink(c.path);
	cr_assert_eq(n, 8, "%zu events", n);
	cr_assert_eq(ev[0].kind, RV_EVENT_STACK_SAMPLE);
	cr_assert(ev[0].switches_recorded,
		  "a capture whose switches switch_state wrote records them, without "
		  "context_switch");
	cr_assert_eq(ev[1].kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_eq(ev[1].tid, 701);
	cr_assert_eq(ev[1].time, 2000);
	cr_assert(ev[1].sampled);
	cr_assert_str_eq(ev[1].name, "[off-cpu: sleeping]");
	cr_assert(ev[1].has_state && ev[1].state == 0x1);
	cr_assert_eq(ev[2].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[2].tid, 701, "a switch in is the thread the record names, not %u",
		     ev[2].tid);
	cr_assert_eq(ev[2].time, 3000);
	cr_assert(ev[3].switches_recorded);
	cr_assert_eq(ev[4].kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_str_eq(ev[4].name, "[off-cpu: preempted]");
	cr_assert(ev[4].has_state && ev[4].state == 0);
	cr_assert_eq(ev[5].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[5].time, 4500);
	cr_assert_str_eq(ev[6].name, "[off-cpu: disk]");
	cr_assert_eq(ev[7].kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[7].tid, 701);
	cr_assert_eq(ev[7].time, 6000);
	cr_assert_eq(st.switches, 6);
	cr_assert_eq(st.samples, 2, "switches are not stack samples");
}

Test(sample_switches, a_reason_of_three_fields_names_the_next_switch_out)
{
	struct capture c;
	struct seen ev[8];
	struct rv_sample_decoder_stats st;
	struct rv_switch_state raw = { PID, 701, 0x1, 0 };
	size_t n;

	/* the raw area before the kind (a capture of an older rearview whose
	 * struct had three fields) is a reason */
	capture_open(&c, true);
	switch_sample(&c, PID, 701, &raw, 3 * sizeof(uint32_t), 1, 1990);
	cpu_wide(&c, 701, 1, true, false, 2000);
	capture_finish(&c);

	n = decode(c.path, ev, 8, &st);
	unlink(c.path);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(ev[0].name, "[off-cpu: sleeping]");
}

Test(sample_switches, samples_of_a_capture_without_switches_say_so)
{
	struct capture c;
	struct seen ev[4];
	struct rv_sample_decoder_stats st;

	capture_open_with(&c, false, false);
	stack_sample(&c, 701, 1000);
	capture_finish(&c);
	cr_assert_eq(decode(c.path, ev, 4, &st), 1);
	unlink(c.path);
	cr_assert_not(ev[0].switches_recorded);
}

Test(sample_switches, the_sampling_events_record_every_switch_only_without_switch_state)
{
	struct rv_sample_config config = { .frequency = 1000 };
	struct perf_event_attr attr;

	rv_sample_engine_attr(&config, false, &attr);
	cr_assert(attr.context_switch, "the fallback: every task's switches");
	config.bpf_switches = true;
	rv_sample_engine_attr(&config, false, &attr);
	cr_assert_not(attr.context_switch,
		      "switch_state writes the target's: no other task's fill the rings");
}
