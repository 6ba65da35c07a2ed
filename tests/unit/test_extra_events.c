/* test_extra_events.c: --events LIST: the parser, the check against the
 * machine (a fake sysfs and tracefs tree made here), the attributes, a
 * capture with an extra event written with the project's perf.data writer
 * and decoded into RV_EVENT_EXTRA, and what the builder and both writers
 * draw for them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "builder_fixture.h"
#include "capture/perf_data.h"
#include "cli/options.h"
#include "decode/sample_decoder.h"
#include "record/extra_events.h"
#include "record/sample_engine.h"
#include "test_files.h"

static struct rv_extra_events parse_ok(const char *list)
{
	struct rv_extra_events set = { 0 };
	struct rv_error err = { 0 };

	cr_assert_eq(rv_extra_events_parse(list, &set, &err), 0, "'%s': %s", list, err.message);
	return set;
}

static void parse_fails(const char *list, const char *words)
{
	struct rv_extra_events set = { 0 };
	struct rv_error err = { 0 };

	cr_assert_lt(rv_extra_events_parse(list, &set, &err), 0, "'%s' is refused", list);
	cr_assert(strstr(err.message, words), "'%s': the message says '%s': %s", list, words,
		  err.message);
}

Test(extra_events, names_aliases_and_periods)
{
	struct rv_extra_events set = parse_ok("page-faults,cs,sched:sched_switch/period=3,"
					      "branch-misses,cache-misses/period=7,major-faults");

	cr_assert_eq(set.nr, 6);
	cr_assert_str_eq(set.events[0].name, "page-faults");
	cr_assert_eq(set.events[0].type, PERF_TYPE_SOFTWARE);
	cr_assert_eq(set.events[0].config, PERF_COUNT_SW_PAGE_FAULTS);
	cr_assert_eq(set.events[0].period, 1);
	cr_assert_str_eq(set.events[1].name, "context-switches", "perf's alias is named in full");
	cr_assert_eq(set.events[1].config, PERF_COUNT_SW_CONTEXT_SWITCHES);
	cr_assert_eq(set.events[2].kind, RV_EXTRA_TRACEPOINT);
	cr_assert_str_eq(set.events[2].name, "sched:sched_switch");
	cr_assert_eq(set.events[2].period, 3);
	cr_assert_eq(set.events[2].config, 0, "the id is the machine's question");
	cr_assert_eq(set.events[3].kind, RV_EXTRA_HARDWARE);
	cr_assert_eq(set.events[3].period, 50, "magic-trace's period for branch-misses");
	cr_assert_eq(set.events[4].period, 7);
	cr_assert_eq(set.events[5].config, PERF_COUNT_SW_PAGE_FAULTS_MAJ);
}

Test(extra_events, the_option_may_be_repeated)
{
	struct rv_extra_events set = parse_ok("page-faults");
	struct rv_error err = { 0 };

	cr_assert_eq(rv_extra_events_parse("minor-faults", &set, &err), 0);
	cr_assert_eq(set.nr, 2);
	cr_assert_lt(rv_extra_events_parse("faults", &set, &err), 0);
	cr_assert(strstr(err.message, "twice"), "%s", err.message);
}

Test(extra_events, bad_lists_are_refused_with_what_is_accepted)
{
	parse_fails("", "page-faults");
	parse_fails("nosuch", "unknown --events event 'nosuch'");
	parse_fails("nosuch", "sched:sched_switch");
	parse_fails("page-faults,", "empty item");
	parse_fails(",page-faults", "empty item");
	parse_fails("page-faults,,cs", "empty item");
	parse_fails("page-faults/period=0", "from 1");
	parse_fails("page-faults/period=x", "whole number");
	parse_fails("page-faults/period=-1", "whole number");
	parse_fails("page-faults/freq=10", "/period=N");
	parse_fails("/period=2", "no event name");
	parse_fails("../x:y", "SUBSYS:NAME");
	parse_fails("sched:", "SUBSYS:NAME");
	parse_fails(":sched_switch", "SUBSYS:NAME");
	parse_fails("sched:a/b", "/period=N");
	parse_fails("page-faults,page-faults", "twice");
	parse_fails("a:a,a:b,a:c,a:d,a:e,a:f,a:g,a:h,a:i,a:j,a:k,a:l,a:m,a:n,a:o,a:p,a:q",
		    "at most 16");
}

/* A fake machine: event sources, and tracefs with sched:sched_switch (id
 * 317) under sys/kernel/tracing, or under debugfs with debugfs. */
static char *fake_root(bool debugfs, bool cpu_pmu)
{
	char *root = new_temp_dir("rv-extra");
	char path[4096];
	const char *sources[] = { "software", "tracepoint", "cpu" };

	for (size_t i = 0; i < (cpu_pmu ? 3u : 2u); i++) {
		snprintf(path, sizeof(path), "mkdir -p %s/sys/bus/event_source/devices/%s", root,
			 sources[i]);
		cr_assert_eq(system(path), 0);
	}
	snprintf(path, sizeof(path), "mkdir -p %s/sys/kernel/%s/events/sched/sched_switch", root,
		 debugfs ? "debug/tracing" : "tracing");
	cr_assert_eq(system(path), 0);
	snprintf(path, sizeof(path), "%s/sys/kernel/%s/events/sched/sched_switch/id", root,
		 debugfs ? "debug/tracing" : "tracing");
	write_file(path, "317\n", 4);
	return root;
}

Test(extra_events, tracepoint_ids_come_from_tracefs)
{
	for (int debugfs = 0; debugfs < 2; debugfs++) {
		char *root = fake_root(debugfs, false);
		struct rv_extra_events set = parse_ok("sched:sched_switch,page-faults");
		struct rv_error err = { 0 };

		cr_assert_eq(rv_extra_events_resolve(&set, root, false, &err), 0, "%s",
			     err.message);
		cr_assert_eq(set.events[0].config, 317);
		cr_assert_eq(set.events[1].config, PERF_COUNT_SW_PAGE_FAULTS);
		free_temp_dir(root);
	}
}

Test(extra_events, an_unknown_tracepoint_is_named_with_where_to_look)
{
	char *root = fake_root(false, false);
	struct rv_extra_events set = parse_ok("sched:sched_nothing");
	struct rv_error err = { 0 };

	cr_assert_lt(rv_extra_events_resolve(&set, root, false, &err), 0);
	cr_assert(strstr(err.message, "no tracepoint 'sched:sched_nothing'"), "%s", err.message);
	cr_assert(strstr(err.message, "/sys/kernel/tracing/events/sched"), "%s", err.message);
	free_temp_dir(root);
}

Test(extra_events, a_garbled_id_file_is_an_error)
{
	char *root = fake_root(false, false);
	struct rv_extra_events set = parse_ok("sched:sched_switch");
	struct rv_error err = { 0 };
	char path[4096];

	snprintf(path, sizeof(path), "%s/sys/kernel/tracing/events/sched/sched_switch/id", root);
	write_file(path, "x17\n", 4);
	cr_assert_lt(rv_extra_events_resolve(&set, root, false, &err), 0);
	cr_assert(strstr(err.message, "holds no id"), "%s", err.message);
	free_temp_dir(root);
}

Test(extra_events, hardware_events_need_a_cpu_pmu_and_the_refusal_names_what_there_is)
{
	char *root = fake_root(false, false);
	struct rv_extra_events set = parse_ok("page-faults,branch-misses");
	struct rv_error err = { 0 };

	cr_assert_lt(rv_extra_events_resolve(&set, root, false, &err), 0);
	cr_assert(strstr(err.message, "--events branch-misses is a hardware event"), "%s",
		  err.message);
	cr_assert(strstr(err.message, "no CPU PMU"), "%s", err.message);
	cr_assert(strstr(err.message, "software") && strstr(err.message, "tracepoint"),
		  "the machine's event sources are named: %s", err.message);
	cr_assert(strstr(err.message, "page-faults"), "what works is said: %s", err.message);
	free_temp_dir(root);

	root = fake_root(false, true);
	cr_assert_eq(rv_extra_events_resolve(&set, root, true, &err), 0, "%s", err.message);
	free_temp_dir(root);
}

Test(extra_events, attributes_sample_each_event_at_its_period_and_are_told_from_the_clock)
{
	struct rv_extra_events set =
		parse_ok("page-faults,branch-misses,sched:sched_switch/period=4");
	struct rv_sample_config config = { .frequency = 1000 };
	struct perf_event_attr a;

	set.events[2].config = 317;
	rv_extra_event_attr(&set.events[0], false, &a);
	cr_assert_eq(a.sample_type, RV_EXTRA_SAMPLE_TYPE);
	cr_assert_eq(a.sample_type & PERF_SAMPLE_PERIOD, 0,
		     "with PERIOD the kernel samples every software event");
	cr_assert_eq(a.sample_period, 1);
	cr_assert(!a.freq && a.inherit && a.disabled && a.sample_id_all && a.use_clockid);
	cr_assert_eq(a.clockid, CLOCK_MONOTONIC);
	cr_assert(!a.exclude_kernel, "a fault in the kernel counts");
	cr_assert(!a.mmap && !a.comm && !a.task && !a.context_switch,
		  "the engine's own event carries the sideband");
	cr_assert(rv_extra_event_attr_is_extra(&a));
	rv_extra_event_attr(&set.events[1], false, &a);
	cr_assert(a.exclude_kernel, "hardware events count user space unless the kernel is traced");
	cr_assert_eq(a.sample_period, 50);
	cr_assert(rv_extra_event_attr_is_extra(&a));
	rv_extra_event_attr(&set.events[1], true, &a);
	cr_assert(!a.exclude_kernel);
	rv_extra_event_attr(&set.events[2], false, &a);
	cr_assert_eq(a.type, PERF_TYPE_TRACEPOINT);
	cr_assert_eq(a.config, 317);
	cr_assert_eq(a.sample_period, 4);
	cr_assert(!a.exclude_kernel, "tracepoints fire in the kernel");
	cr_assert(rv_extra_event_attr_is_extra(&a));

	/* the sampling engine's clocks and bpf-output events are not extra */
	rv_sample_engine_attr(&config, false, &a);
	cr_assert(!rv_extra_event_attr_is_extra(&a));
	rv_sample_engine_attr(&config, true, &a);
	cr_assert(!rv_extra_event_attr_is_extra(&a));
	config.bpf_output = true;
	rv_sample_engine_attr(&config, false, &a);
	cr_assert(!rv_extra_event_attr_is_extra(&a));
	/* perf record -c 100000 -e instructions: a profile, not instants */
	rv_extra_event_attr(&set.events[0], false, &a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.sample_period = 100000;
	cr_assert(!rv_extra_event_attr_is_extra(&a));
	/* perf record -g -e page-faults: stacks, not instants */
	rv_extra_event_attr(&set.events[0], false, &a);
	a.sample_type |= PERF_SAMPLE_CALLCHAIN;
	cr_assert(!rv_extra_event_attr_is_extra(&a));
}

Test(extra_events, describe_lists_names_and_periods_other_than_the_usual)
{
	struct rv_extra_events set =
		parse_ok("page-faults,branch-misses,cache-misses/period=9,sched:sched_switch");
	char text[256];

	rv_extra_events_describe(&set, text, sizeof(text));
	cr_assert_str_eq(text, "page-faults, branch-misses, cache-misses/period=9, "
			       "sched:sched_switch");
	rv_extra_events_describe(&set, text, 12);
	cr_assert_eq(strlen(text), 11, "cut to the buffer");
}

/* ---- a capture with an extra event, decoded ---- */

#define CLOCK_ID 0x71ull
#define FAULT_ID 0x72ull
#define PID	 900

struct extra_sample {
	struct perf_event_header h;
	uint64_t id, ip;
	uint32_t pid, tid;
	uint64_t time, addr;
	uint32_t cpu, res;
};

Test(extra_events, samples_of_an_extra_attribute_decode_as_extra_events)
{
	char path[64] = "/tmp/rv-extra-XXXXXX";
	struct rv_extra_events set = parse_ok("page-faults/period=5");
	struct rv_perf_writer *w;
	struct rv_perf_reader *reader;
	struct rv_sample_decoder *d;
	struct rv_symbolizer *sym;
	struct rv_symbolizer_options so = { 0 };
	struct rv_sample_decoder_stats st;
	struct rv_perf_meta meta = { .clockid = CLOCK_MONOTONIC };
	struct rv_error err = { 0 };
	struct perf_event_attr attr;
	uint64_t id = CLOCK_ID, fid = FAULT_ID;
	struct rv_event ev;
	int fd = mkstemp(path), got;
	size_t stacks = 0, extras = 0;

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(sizeof(struct extra_sample), RV_EXTRA_SAMPLE_SIZE);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = 1000;
	attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			   PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	attr.sample_id_all = 1;
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", &id, 1, &err), 0);
	rv_extra_event_attr(&set.events[0], false, &attr);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "page-faults", &fid, 1, &err), 0);
	{
		struct {
			struct perf_event_header h;
			uint64_t id, ip;
			uint32_t pid, tid;
			uint64_t time;
			uint32_t cpu, res;
			uint64_t period;
		} stack = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, sizeof(stack) },
			    CLOCK_ID,
			    0x401000,
			    PID,
			    PID,
			    1000,
			    0,
			    0,
			    1000000 };
		struct extra_sample user = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER,
					       sizeof(user) },
					     FAULT_ID,
					     0x401234,
					     PID,
					     PID + 1,
					     1500,
					     0x7f0000001000,
					     1,
					     0 };
		struct extra_sample kernel = user;

		kernel.h.misc = PERF_RECORD_MISC_KERNEL;
		kernel.ip = 0xffffffff81000000ull;
		kernel.time = 1600;
		kernel.addr = 0;
		cr_assert_eq(rv_perf_writer_write(w, &stack.h, &err), 0);
		cr_assert_eq(rv_perf_writer_write(w, &user.h, &err), 0);
		cr_assert_eq(rv_perf_writer_write(w, &kernel.h, &err), 0);
	}
	cr_assert_eq(rv_perf_writer_finish(w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(rv_perf_reader_open(&reader, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_sample_decoder_open(&d, reader, sym, &err), 0, "%s", err.message);
	while ((got = rv_sample_decoder_next(d, &ev, &err)) > 0) {
		if (ev.kind == RV_EVENT_STACK_SAMPLE) {
			stacks++;
			continue;
		}
		if (ev.kind != RV_EVENT_EXTRA)
			continue;
		cr_assert_str_eq(ev.extra.name, "page-faults");
		cr_assert_eq(ev.pid, PID);
		cr_assert_eq(ev.tid, PID + 1);
		cr_assert_eq(ev.extra.count, 5, "a sample stands for the attribute's period");
		cr_assert_eq(ev.extra.cpu, 1);
		if (extras == 0) {
			cr_assert_eq(ev.time, 1500);
			cr_assert_eq(ev.extra.ip, 0x401234);
			cr_assert_eq(ev.extra.addr, 0x7f0000001000);
			cr_assert(!ev.extra.kernel);
		} else {
			cr_assert_eq(ev.time, 1600);
			cr_assert(ev.extra.kernel);
			cr_assert_eq(ev.extra.addr, 0);
		}
		extras++;
	}
	cr_assert_eq(got, 0, "%s", err.message);
	cr_assert_eq(stacks, 1);
	cr_assert_eq(extras, 2);
	rv_sample_decoder_stats(d, &st);
	cr_assert_eq(st.extra, 2);
	cr_assert_eq(st.samples, 1, "extra events are not stack samples");
	rv_sample_decoder_free(d);
	rv_perf_reader_free(reader);
	rv_symbolizer_free(sym);
	unlink(path);
}

/* ---- drawn ---- */

static void extra(struct builder_fixture *f, uint32_t tid, uint64_t time, const char *name,
		  uint64_t ip, bool kernel, uint64_t addr, uint64_t count)
{
	struct rv_event ev = { .kind = RV_EVENT_EXTRA, .pid = PID, .tid = tid, .time = time };

	ev.extra.name = name;
	ev.extra.ip = ip;
	ev.extra.kernel = kernel;
	ev.extra.addr = addr;
	ev.extra.count = count;
	ev.extra.cpu = 3;
	builder_fixture_add(f, &ev);
}

static void stack(struct builder_fixture *f, uint64_t time, uint64_t leaf, uint64_t root)
{
	struct rv_frame frames[2] = { { .addr = leaf, .is_ip = true },
				      { .addr = root, .is_ip = true } };
	struct rv_event ev = {
		.kind = RV_EVENT_STACK_SAMPLE, .pid = PID, .tid = PID, .time = time
	};

	ev.stack.frames = frames;
	ev.stack.nr_frames = 2;
	ev.stack.interval_ns = 10;
	builder_fixture_add(f, &ev);
}

Test(extra_events, each_sample_is_an_instant_on_its_thread_with_its_arguments)
{
	struct builder_fixture f;
	struct fxt_trace *t;
	const struct fxt_instant *in;
	struct rv_builder_extra_count counts[RV_BUILDER_MAX_EXTRA];
	struct rv_builder_stats bs;
	const struct fxt_arg *a;

	builder_fixture_open(&f);
	stack(&f, 1000, 0x1100, 0x1000);
	extra(&f, PID, 1005, "page-faults", 0x1100, false, 0x7000, 1);
	stack(&f, 1010, 0x1100, 0x1000);
	extra(&f, PID + 1, 1012, "sched:sched_switch", 0xffffffff81000000ull, true, 0, 2);
	extra(&f, PID, 1015, "page-faults", 0x1101, false, 0, 1);
	stack(&f, 1020, 0x1200, 0x1000);
	cr_assert_eq(rv_builder_extra_counts(f.b, counts, RV_BUILDER_MAX_EXTRA), 2);
	cr_assert_str_eq(counts[0].name, "page-faults");
	cr_assert_eq(counts[0].samples, 2);
	cr_assert_eq(counts[0].events, 2);
	cr_assert_str_eq(counts[1].name, "sched:sched_switch");
	cr_assert_eq(counts[1].samples, 1);
	cr_assert_eq(counts[1].events, 2);
	rv_builder_stats(f.b, &bs);
	cr_assert_eq(bs.extra_events, 3);
	cr_assert_eq(bs.samples, 3, "extra events are not samples");
	t = builder_fixture_finish(&f);

	cr_assert_eq(fxt_count_instants(t, PID, PID, "page-faults"), 2);
	cr_assert_eq(fxt_count_instants(t, PID, PID + 1, "sched:sched_switch"), 1,
		     "on the thread that took it");
	in = fxt_find_instant(t, PID, PID, "page-faults", 0);
	cr_assert(in);
	cr_assert_eq(in->ts_ns, 5, "at its own time, from the trace's zero");
	a = fxt_find_arg(in->args, in->nr_args, "ip");
	cr_assert(a && a->type == FXT_ARG_POINTER && a->u == 0x1100);
	a = fxt_find_arg(in->args, in->nr_args, "addr");
	cr_assert(a && a->type == FXT_ARG_POINTER && a->u == 0x7000);
	a = fxt_find_arg(in->args, in->nr_args, "count");
	cr_assert(a && a->u == 1);
	a = fxt_find_arg(in->args, in->nr_args, "cpu");
	cr_assert(a && a->u == 3);
	a = fxt_find_arg(in->args, in->nr_args, "tid");
	cr_assert(a && a->u == PID);
	in = fxt_find_instant(t, PID, PID + 1, "sched:sched_switch", 0);
	cr_assert(in);
	cr_assert_null(fxt_find_arg(in->args, in->nr_args, "ip"),
		       "a kernel address is not written into the trace");
	cr_assert_null(fxt_find_arg(in->args, in->nr_args, "addr"), "no address: no argument");
	a = fxt_find_arg(in->args, in->nr_args, "count");
	cr_assert(a && a->u == 2);
	/* the stacks go on as if the instants were not there: one span of the
	 * root from the first sample to the last's end */
	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x1000"), 1);
	expect_span(t, "0x1000", 0, 0, 30, NULL);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "0x1100"), 1);
	builder_fixture_close(&f, t);
}

Test(extra_events, json_traces_show_them_as_thread_instants)
{
	char path[64] = "/tmp/rv-extra-XXXXXX.json";
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct rv_trace_writer *w;
	struct rv_builder *b;
	struct rv_error err = { 0 };
	struct rv_event ev = { .kind = RV_EVENT_EXTRA, .pid = PID, .tid = PID, .time = 2000 };
	char *text;
	size_t size;
	int fd = mkstemps(path, 5);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(rv_trace_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_builder_new(&b, sym, w, &err), 0);
	ev.extra.name = "page-faults";
	ev.extra.ip = 0x4010;
	ev.extra.addr = 0x9000;
	ev.extra.count = 1;
	cr_assert_eq(rv_builder_add(b, &ev, &err), 0, "%s", err.message);
	cr_assert_eq(rv_builder_finish(b, &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_commit(w, &err), 0, "%s", err.message);
	text = read_whole(path, &size);
	cr_assert(text);
	cr_assert(strstr(text, "\"ph\":\"i\",\"s\":\"t\",\"name\":\"page-faults\""), "%s", text);
	cr_assert(strstr(text, "\"ip\":\"0x4010\""), "%s", text);
	cr_assert(strstr(text, "\"addr\":\"0x9000\""), "%s", text);
	cr_assert(strstr(text, "\"count\":1"), "%s", text);
	free(text);
	rv_builder_free(b);
	rv_trace_writer_free(w);
	rv_symbolizer_free(sym);
	unlink(path);
}

/* ---- the command line ---- */

static int parse_args(struct rv_options *o, struct rv_error *err, const char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return rv_options_parse(o, argc, (char **)argv, err);
}

Test(extra_events, run_and_attach_take_events_in_either_spelling)
{
	const char *run[] = { "rearview",    "run",	"--events",
			      "page-faults", "-events", "sched:sched_switch/period=2",
			      "--",	     "prog",	NULL };
	const char *attach[] = { "rearview", "attach", "-p", "1", "--events", "cs", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse_args(&o, &err, run), 0, "%s", err.message);
	cr_assert_eq(o.events.nr, 2, "repeated, the lists add up");
	cr_assert_str_eq(o.events.events[1].name, "sched:sched_switch");
	cr_assert_eq(o.events.events[1].period, 2);
	rv_options_destroy(&o);
	cr_assert_eq(parse_args(&o, &err, attach), 0, "%s", err.message);
	cr_assert_eq(o.events.nr, 1);
	cr_assert_str_eq(o.events.events[0].name, "context-switches");
	rv_options_destroy(&o);
}

Test(extra_events, the_command_line_refuses_bad_lists_and_decode)
{
	const char *bad[] = { "rearview", "run", "--events", "page-faults,bogus", "prog", NULL };
	const char *decode[] = { "rearview", "decode", "--events", "page-faults", "cap", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_lt(parse_args(&o, &err, bad), 0);
	cr_assert(strstr(err.message, "unknown --events event 'bogus'"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_lt(parse_args(&o, &err, decode), 0);
	cr_assert(strstr(err.message, "no effect on 'rearview decode'"), "%s", err.message);
	rv_options_destroy(&o);
}

Test(extra_events, tracing_data_holds_the_tracepoints_formats_as_perf_reads_them)
{
	char *root = fake_root(false, false);
	struct rv_extra_events set = parse_ok("page-faults,sched:sched_switch");
	struct rv_error err = { 0 };
	char path[4096];
	const char format[] = "name: sched_switch\nID: 317\nformat:\n";
	uint8_t *data;
	size_t size;
	uint64_t len;

	snprintf(path, sizeof(path), "%s/sys/kernel/tracing/events/header_page", root);
	write_file(path, "hp", 2);
	snprintf(path, sizeof(path), "%s/sys/kernel/tracing/events/header_event", root);
	write_file(path, "hev", 3);
	snprintf(path, sizeof(path), "%s/sys/kernel/tracing/events/sched/sched_switch/format",
		 root);
	write_file(path, format, sizeof(format) - 1);
	cr_assert_eq(rv_extra_events_tracing_data(&set, root, (void **)&data, &size, &err), 0, "%s",
		     err.message);
	cr_assert(data);
	cr_assert_eq(memcmp(data, "\x17\x08\x44tracing0.6", 14), 0);
	cr_assert_eq(data[14], 0, "little endian");
	cr_assert_eq(data[15], sizeof(long));
	cr_assert_eq(memcmp(data + 20, "header_page", 12), 0);
	memcpy(&len, data + 32, 8);
	cr_assert_eq(len, 2);
	cr_assert_eq(memcmp(data + 40, "hp", 2), 0);
	cr_assert_eq(memcmp(data + 42, "header_event", 13), 0);
	/* 42 + 13 + 8 + 3: no ftrace formats, one system */
	cr_assert_eq(memcmp(data + 66, "\0\0\0\0\1\0\0\0sched", 14), 0);
	cr_assert(memmem(data, size, format, sizeof(format) - 1), "the format file is in it");
	cr_assert_eq(size, 66 + 8 + 6 + 4 + 8 + (sizeof(format) - 1) + 4 + 4 + 8);
	free(data);

	set = parse_ok("page-faults");
	cr_assert_eq(rv_extra_events_tracing_data(&set, root, (void **)&data, &size, &err), 0);
	cr_assert_null(data, "no tracepoint, no tracing data");
	cr_assert_eq(size, 0);
	free_temp_dir(root);
}
