/* test_fn_decoder.c: function-tracer captures, written here with the
 * project's perf.data writer as the uprobe engine lays them out (samples of a
 * bpf-output event named RV_FN_EVENT_NAME whose raw data is a struct
 * rv_fn_record, the gate's marks, sideband), decoded into events, rendered
 * into traces read back with the strict FXT reader, damaged at every byte,
 * and shown by `perf script` (the oracle for the file's layout). */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/marks.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/decoder.h"
#include "decode/fn_decoder.h"
#include "decode/syscall_names.h"
#include "functions.h"
#include "fxt_expect.h"
#include "fxt_reader.h"
#include "render/render.h"
#include "trace/builder.h"
#include "test_env.h"
#include "test_files.h"
#include "write/trace_writer.h"

#define FN_ID	0x51ull
#define SIDE_ID 0x52ull
#define PID	4242
#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_RAW)

/* ---- writing captures ---- */

struct capture {
	char path[64];
	struct rv_perf_writer *w;
	struct rv_error err;
	bool marks; /* the marks event is declared */
};

static void capture_open(struct capture *c, bool marks)
{
	struct perf_event_attr attr;
	uint64_t id = FN_ID, side = SIDE_ID, mark_id = RV_MARK_ID;
	int fd;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "/tmp/rv-fn-XXXXXX");
	fd = mkstemp(c->path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&c->w, c->path, &c->err), 0, "%s", c->err.message);
	/* the bpf-output event, as the engine opens it (one per CPU) */
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = SAMPLE_TYPE;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	cr_assert_eq(rv_perf_writer_add_attr(c->w, &attr, RV_FN_EVENT_NAME, &id, 1, &c->err), 0,
		     "%s", c->err.message);
	/* the sideband's dummy event */
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.comm = attr.mmap = attr.mmap2 = attr.task = 1;
	cr_assert_eq(rv_perf_writer_add_attr(c->w, &attr, "dummy:u", &side, 1, &c->err), 0, "%s",
		     c->err.message);
	if (marks) {
		rv_mark_attr(&attr, true, CLOCK_MONOTONIC);
		cr_assert_eq(rv_perf_writer_add_attr(c->w, &attr, RV_MARK_EVENT_NAME, &mark_id, 1,
						     &c->err),
			     0, "%s", c->err.message);
		c->marks = true;
	}
}

static void put(uint8_t *buf, size_t *at, const void *v, size_t n)
{
	memcpy(buf + *at, v, n);
	*at += n;
}

/* A sample of the functions event with `raw_len` bytes of the record as raw
 * data (sizeof(struct rv_fn_record) for a whole one). The sample's own TID
 * is the CPU's current thread, which a switch-in record is not about. */
static void put_sample(struct capture *c, const struct rv_fn_record *r, size_t raw_len,
		       uint64_t time)
{
	uint8_t buf[256];
	size_t at = 8;
	uint64_t id = FN_ID, ip = 0xffffffff81000000ull; /* the kernel's, where BPF ran */
	uint32_t pid_tid[2] = { r->pid, r->tid + (r->type == RV_FN_SWITCH_IN ? 1000 : 0) };
	uint32_t cpu_res[2] = { 1, 0 };
	/* raw: u32 size, then the data, padded so that both end 8-aligned */
	uint32_t raw_size = (uint32_t)(((raw_len + 4 + 7) & ~(size_t)7) - 4);
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 0 };

	memset(buf, 0, sizeof(buf));
	put(buf, &at, &id, 8);
	put(buf, &at, &ip, 8);
	put(buf, &at, pid_tid, 8);
	put(buf, &at, &time, 8);
	put(buf, &at, cpu_res, 8);
	put(buf, &at, &raw_size, 4);
	put(buf, &at, r, raw_len);
	at += raw_size - raw_len;
	h.size = (uint16_t)at;
	memcpy(buf, &h, sizeof(h));
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)buf, &c->err), 0,
		     "%s", c->err.message);
}

/* Whether record() writes the 40-byte layout of captures made before the
 * ring buffers (struct rv_fn_record_v1, the time only in the sample). */
static bool write_v1;

static void record(struct capture *c, uint16_t type, uint32_t tid, uint64_t time, uint32_t arg,
		   uint64_t addr, uint64_t sp, uint64_t value)
{
	struct rv_fn_record r = {
		.time = time,
		.type = type,
		.flags = RV_FN_FLAG_IN_WINDOW,
		.tid = tid,
		.pid = PID,
		.arg = arg,
		.addr = addr,
		.sp = sp,
		.value = value,
	};
	struct rv_fn_record_v1 v1 = {
		.type = type,
		.flags = RV_FN_FLAG_IN_WINDOW,
		.tid = tid,
		.pid = PID,
		.arg = arg,
		.addr = addr,
		.sp = sp,
		.value = value,
	};

	if (write_v1)
		put_sample(c, (const struct rv_fn_record *)(const void *)&v1, sizeof(v1), time);
	else
		put_sample(c, &r, sizeof(r), time);
}

static const struct rv_synth side_synth = { SAMPLE_TYPE, true };

static void sideband_id(struct rv_synth_id *id, uint32_t tid, uint64_t time)
{
	*id = (struct rv_synth_id){ .pid = PID, .tid = tid, .cpu = 0, .time = time, .id = SIDE_ID };
}

static void comm(struct capture *c, uint32_t tid, const char *name, uint64_t time)
{
	uint8_t buf[512];
	struct rv_synth_id id;
	size_t n;

	sideband_id(&id, tid, time);
	n = rv_synth_comm(&side_synth, buf, sizeof(buf), PID, tid, name, false, &id);
	cr_assert_gt(n, 0);
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)buf, &c->err), 0);
}

static void thread_exit(struct capture *c, uint32_t tid, uint64_t time)
{
	uint8_t buf[512];
	struct rv_synth_id id;
	size_t n;

	sideband_id(&id, tid, time);
	n = rv_synth_exit(&side_synth, buf, sizeof(buf), PID, PID, tid, PID, time, &id);
	cr_assert_gt(n, 0);
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)buf, &c->err), 0);
}

static void mmap2(struct capture *c, uint64_t start, uint64_t len, const char *path)
{
	uint8_t buf[4096 + 512];
	struct rv_synth_id id;
	size_t n;

	sideband_id(&id, PID, 0);
	n = rv_synth_mmap2(&side_synth, buf, sizeof(buf), PID, PID, start, len, 0, 0, 0, 0,
			   5 /* PROT_READ|PROT_EXEC */, 2 /* MAP_PRIVATE */, path,
			   PERF_RECORD_MISC_USER, &id);
	cr_assert_gt(n, 0);
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)buf, &c->err), 0);
}

static void lost(struct capture *c, uint64_t count, uint64_t time)
{
	uint64_t rec[7];
	struct perf_event_header h = { PERF_RECORD_LOST, 0, sizeof(rec) };
	uint32_t pid_tid[2] = { PID, PID }, cpu_res[2] = { 0, 0 };

	memcpy(&rec[0], &h, 8);
	rec[1] = FN_ID;
	rec[2] = count;
	memcpy(&rec[3], pid_tid, 8); /* trailer: TID, TIME, CPU, IDENTIFIER */
	rec[4] = time;
	memcpy(&rec[5], cpu_res, 8);
	rec[6] = FN_ID;
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)rec, &c->err), 0);
}

static void mark(struct capture *c, enum rv_mark_kind kind, uint32_t tid, uint64_t time,
		 uint64_t duration, const char *name)
{
	uint8_t buf[RV_MARK_MAX_RECORD];
	struct rv_mark m = { .kind = kind,
			     .pid = PID,
			     .tid = tid,
			     .time = time,
			     .duration_ns = duration,
			     .name = name };

	cr_assert(c->marks);
	rv_mark_record(buf, &m);
	cr_assert_eq(rv_perf_writer_write(c->w, (const struct perf_event_header *)buf, &c->err), 0);
}

static void capture_finish(struct capture *c)
{
	struct rv_perf_meta meta = { .clockid = CLOCK_MONOTONIC };

	cr_assert_eq(rv_perf_writer_finish(c->w, &meta, &c->err), 0, "%s", c->err.message);
	rv_perf_writer_free(c->w);
	c->w = NULL;
}

/* A program's calls and kernel activity on two threads: main -> work ->
 * read (a syscall with a sleep in it and a page fault), an interrupt, a
 * worker thread, an exit without its entry, a --filter window. */
static void write_program(struct capture *c)
{
	comm(c, PID, "prog", 100);
	comm(c, PID + 1, "worker", 100);
	record(c, RV_FN_ENTER, PID, 1000, 0, 0x401000, 0x7ffc1000, 0);
	record(c, RV_FN_ENTER, PID, 1010, 1, 0x401100, 0x7ffc0f00, 0);
	record(c, RV_FN_SYSCALL_ENTER, PID, 1020, 0, 0, 0, 0);
	record(c, RV_FN_PAGE_FAULT, PID, 1025, 6, 0x7f0000001000, 0, 0x401234);
	record(c, RV_FN_SWITCH_OUT, PID, 1030, 1, 0, 0, 0);
	record(c, RV_FN_ENTER, PID + 1, 1035, 2, 0x401200, 0x7f001000, 0);
	record(c, RV_FN_SWITCH_IN, PID, 1040, 0, 0, 0, 0);
	record(c, RV_FN_IRQ_ENTER, PID, 1042, 24, 0, 0, 0);
	record(c, RV_FN_IRQ_EXIT, PID, 1044, 24, 0, 0, 1);
	record(c, RV_FN_SYSCALL_EXIT, PID, 1050, 0, 0, 0, 4096);
	record(c, RV_FN_EXIT, PID, 1060, 1, 0x401100, 0x7ffc0f08, 0);
	lost(c, 3, 1065);
	record(c, RV_FN_EXIT, PID + 1, 1070, 2, 0x401200, 0x7f001008, 0);
	record(c, RV_FN_EXIT, PID + 1, 1075, 3, 0, 0x7f002008, 0); /* entered before tracing */
	thread_exit(c, PID + 1, 1080);
	record(c, RV_FN_EXIT, PID, 1090, 0, 0x401000, 0x7ffc1008, 0);
	if (c->marks)
		mark(c, RV_MARK_WINDOW, PID, 1095, 100, "work");
	record(c, RV_FN_SYSCALL_ENTER, PID, 1100, 231, 0, 0, 0);
	thread_exit(c, PID, 1110);
}

/* ---- decoding ---- */

struct decoded {
	struct rv_event ev;
	char name[64];
	struct rv_event_arg args[4];
	size_t nr_args;
};

/* The function decoder over the capture at path, through a reader of its
 * own (the decoder borrows it). */
struct fn_capture {
	struct rv_perf_reader *reader;
	struct rv_fn_decoder *d;
};

static int fn_open(struct fn_capture *f, const char *path, struct rv_symbolizer *sym,
		   struct rv_error *err)
{
	int ret = rv_perf_reader_open(&f->reader, path, err);

	f->d = NULL;
	if (!ret)
		ret = rv_fn_decoder_open(&f->d, f->reader, sym, err);
	if (ret) {
		rv_perf_reader_free(f->reader);
		f->reader = NULL;
	}
	return ret;
}

static void fn_close(struct fn_capture *f)
{
	rv_fn_decoder_free(f->d);
	rv_perf_reader_free(f->reader);
}

/* Whether the capture at path is a function capture, as the decoder tells. */
static bool is_function_capture(const char *path)
{
	struct rv_perf_reader *r;
	struct rv_error err = { 0 };
	bool yes;

	if (rv_perf_reader_open(&r, path, &err))
		return false;
	yes = rv_fn_decoder_recognises(r);
	rv_perf_reader_free(r);
	return yes;
}

static size_t decode_all(const char *path, struct decoded *out, size_t max,
			 struct rv_fn_decoder_stats *stats)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct fn_capture f;
	struct rv_error err = { 0 };
	struct rv_event ev;
	size_t n = 0;
	int got;

	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(fn_open(&f, path, sym, &err), 0, "%s", err.message);
	while ((got = rv_fn_decoder_next(f.d, &ev, &err)) > 0) {
		const char *name = NULL;
		const struct rv_event_arg *args = NULL;
		size_t nr = 0;

		cr_assert_lt(n, max);
		out[n].ev = ev;
		if (ev.kind == RV_EVENT_KERNEL_BEGIN || ev.kind == RV_EVENT_KERNEL_END) {
			name = ev.kernel.name;
			args = ev.kernel.args;
			nr = ev.kernel.nr_args;
		} else if (ev.kind == RV_EVENT_INSTANT) {
			name = ev.instant.name;
			args = ev.instant.args;
			nr = ev.instant.nr_args;
		} else if (ev.kind == RV_EVENT_THREAD_NAME) {
			name = ev.thread.name;
		} else if (ev.kind == RV_EVENT_WINDOW || ev.kind == RV_EVENT_TRIGGER) {
			name = ev.gate.name;
		}
		snprintf(out[n].name, sizeof(out[n].name), "%s", name ? name : "");
		cr_assert_leq(nr, 4);
		if (nr)
			memcpy(out[n].args, args, nr * sizeof(*args));
		out[n].nr_args = nr;
		n++;
	}
	cr_assert_eq(got, 0, "%s", err.message);
	if (stats)
		rv_fn_decoder_stats(f.d, stats);
	fn_close(&f);
	rv_symbolizer_free(sym);
	return n;
}

static const struct rv_event_arg *arg(const struct decoded *d, const char *name)
{
	for (size_t i = 0; i < d->nr_args; i++)
		if (!strcmp(d->args[i].name, name))
			return &d->args[i];
	cr_assert_fail("no argument %s on %s", name, d->name);
	return NULL;
}

Test(fn_decoder, every_record_type_becomes_its_event)
{
	struct capture c;
	struct decoded ev[64];
	struct rv_fn_decoder_stats st;
	size_t n, i = 0;

	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	cr_assert(is_function_capture(c.path));
	n = decode_all(c.path, ev, 64, &st);
	cr_assert_eq(n, 21);

	cr_assert_eq(ev[i].ev.kind, RV_EVENT_THREAD_NAME);
	cr_assert_str_eq(ev[i].name, "prog");
	cr_assert_eq(ev[i].ev.time, 100);
	i += 2;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_CALL_ENTER);
	cr_assert_eq(ev[i].ev.pid, PID);
	cr_assert_eq(ev[i].ev.tid, PID);
	cr_assert_eq(ev[i].ev.time, 1000);
	cr_assert_eq(ev[i].ev.call.addr, 0x401000);
	cr_assert_eq(ev[i].ev.call.sp, 0x7ffc1000);
	cr_assert_null(ev[i].ev.call.sym);
	i += 2;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_eq(ev[i].ev.kernel.kind, RV_KERNEL_SYSCALL);
	cr_assert_str_eq(ev[i].name, "read");
	cr_assert_eq(ev[i].nr_args, 1);
	cr_assert_eq(arg(&ev[i], "nr")->value, 0);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_INSTANT);
	cr_assert_str_eq(ev[i].name, "[page fault]");
	cr_assert_eq(arg(&ev[i], "address")->value, 0x7f0000001000);
	cr_assert_eq(arg(&ev[i], "ip")->value, 0x401234);
	cr_assert_eq(arg(&ev[i], "error_code")->value, 6);
	cr_assert_eq(arg(&ev[i], "ip")->kind, RV_EVENT_ARG_HEX);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_KERNEL_BEGIN);
	cr_assert_eq(ev[i].ev.kernel.kind, RV_KERNEL_OFF_CPU);
	cr_assert_str_eq(ev[i].name, "[off-cpu: sleeping]");
	cr_assert_eq(arg(&ev[i], "state")->value, 1);
	i++;
	cr_assert_eq(ev[i].ev.tid, PID + 1);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_KERNEL_END);
	cr_assert_eq(ev[i].ev.kernel.kind, RV_KERNEL_OFF_CPU);
	cr_assert_eq(ev[i].ev.tid, PID, "the record's thread, not the sample's");
	cr_assert_str_eq(ev[i].name, "[off-cpu]");
	i++;
	cr_assert_eq(ev[i].ev.kernel.kind, RV_KERNEL_IRQ);
	cr_assert_str_eq(ev[i].name, "[irq 24]");
	cr_assert_eq(ev[i].nr_args, 0);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_KERNEL_END);
	cr_assert_str_eq(ev[i].name, "[irq 24]");
	cr_assert_eq(arg(&ev[i], "ret")->value, 1);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_KERNEL_END);
	cr_assert_str_eq(ev[i].name, "read");
	cr_assert_eq(arg(&ev[i], "nr")->value, 0);
	cr_assert_eq(arg(&ev[i], "ret")->value, 4096);
	cr_assert_eq(arg(&ev[i], "ret")->kind, RV_EVENT_ARG_INT);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_CALL_EXIT);
	cr_assert_eq(ev[i].ev.call.addr, 0x401100);
	cr_assert_eq(ev[i].ev.call.sp, 0x7ffc0f08);
	i++;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_LOST);
	cr_assert_eq(ev[i].ev.lost.count, 3);
	cr_assert_eq(ev[i].ev.time, 1065);
	i += 3;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_THREAD_EXIT);
	cr_assert_eq(ev[i].ev.tid, PID + 1);
	cr_assert_eq(ev[i].ev.time, 1080);
	i += 2;
	cr_assert_eq(ev[i].ev.kind, RV_EVENT_WINDOW);
	cr_assert_str_eq(ev[i].name, "work");
	cr_assert_eq(ev[i].ev.gate.duration_ns, 100);
	i++;
	cr_assert_str_eq(ev[i].name, "exit_group");
	cr_assert_eq(arg(&ev[i], "nr")->value, 231);

	cr_assert_eq(st.by_type[RV_FN_ENTER], 3);
	cr_assert_eq(st.by_type[RV_FN_EXIT], 4);
	cr_assert_eq(st.by_type[RV_FN_SYSCALL_ENTER], 2);
	cr_assert_eq(st.by_type[RV_FN_SWITCH_IN], 1);
	cr_assert_eq(st.lost, 3);
	cr_assert_eq(st.marks, 1);
	cr_assert_eq(st.first_time, 1000);
	cr_assert_eq(st.last_time, 1100);
	unlink(c.path);
}

Test(fn_decoder, syscalls_are_named_from_the_kernels_header)
{
	struct capture c;
	struct decoded ev[8];

	cr_assert_str_eq(rv_syscall_name(0), "read");
	cr_assert_str_eq(rv_syscall_name(1), "write");
	cr_assert_str_eq(rv_syscall_name(60), "exit");
	cr_assert_str_eq(rv_syscall_name(230), "clock_nanosleep");
	cr_assert_str_eq(rv_syscall_name(231), "exit_group");
	cr_assert_geq(rv_syscall_table_size(), 335);
	cr_assert_null(rv_syscall_name(100000));
	cr_assert_null(rv_syscall_name(UINT64_MAX));

	capture_open(&c, false);
	record(&c, RV_FN_SYSCALL_ENTER, PID, 1000, 100000, 0, 0, 0);
	record(&c, RV_FN_SYSCALL_EXIT, PID, 1010, 100000, 0, 0, (uint64_t)-38);
	capture_finish(&c);
	cr_assert_eq(decode_all(c.path, ev, 8, NULL), 2);
	cr_assert_str_eq(ev[0].name, "syscall 100000");
	cr_assert_str_eq(ev[1].name, "syscall 100000");
	cr_assert_eq((int64_t)arg(&ev[1], "ret")->value, -38);
	unlink(c.path);
}

Test(fn_decoder, off_cpu_spans_say_why)
{
	static const struct {
		uint32_t state;
		const char *name;
	} cases[] = {
		{ 0, "[off-cpu: preempted]" },	   { 0x100, "[off-cpu: preempted]" },
		{ 0x1, "[off-cpu: sleeping]" },	   { 0x2, "[off-cpu: disk]" },
		{ 0x102, "[off-cpu: disk]" },	   { 0x4, "[off-cpu: stopped]" },
		{ 0x8, "[off-cpu: stopped]" },	   { 0x10, "[off-cpu: dead]" },
		{ 0x20, "[off-cpu: dead]" },	   { 0x80, "[off-cpu: dead]" },
		{ 0x40, "[off-cpu: state 0x40]" }, { 0x1000, "[off-cpu: state 0x1000]" },
	};
	const size_t nr = sizeof(cases) / sizeof(cases[0]);
	struct capture c;
	struct decoded ev[16];

	capture_open(&c, false);
	for (size_t i = 0; i < nr; i++)
		record(&c, RV_FN_SWITCH_OUT, PID, 1000 + i, cases[i].state, 0, 0, 0);
	capture_finish(&c);
	cr_assert_eq(decode_all(c.path, ev, 16, NULL), nr);
	for (size_t i = 0; i < nr; i++) {
		cr_assert_str_eq(ev[i].name, cases[i].name, "state %#x", cases[i].state);
		cr_assert_eq(arg(&ev[i], "state")->value, cases[i].state);
	}
	unlink(c.path);
}

/* Kernel functions (fentry/kprobe records) are named from kallsyms, and nest
 * in the system call that ran them. */
Test(fn_decoder, kernel_functions_are_named_from_kallsyms)
{
	struct capture c;
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct rv_trace_writer *w;
	struct rv_builder *b;
	struct fn_capture fc;
	struct rv_error err = { 0 };
	struct rv_event ev;
	struct fxt_trace *t;
	char kallsyms[] = "/tmp/rv-kallsyms-XXXXXX", fxt[96], msg[256];
	const struct fxt_span *s;
	FILE *f;
	int fd = mkstemp(kallsyms);

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	fputs("ffffffff81000000 T _stext\n"
	      "ffffffff81200000 T vfs_read\n"
	      "ffffffff81200400 t ext4_file_read_iter\n"
	      "ffffffff81200800 T vfs_write\n",
	      f);
	fclose(f);
	capture_open(&c, false);
	record(&c, RV_FN_SYSCALL_ENTER, PID, 1000, 0, 0, 0, 0);
	record(&c, RV_FN_KFUNC_ENTER, PID, 1010, 0, 0xffffffff81200000, 0, 0);
	record(&c, RV_FN_KFUNC_ENTER, PID, 1020, 1, 0xffffffff81200400, 0, 0);
	record(&c, RV_FN_KFUNC_EXIT, PID, 1030, 1, 0xffffffff81200400, 0, 0);
	record(&c, RV_FN_KFUNC_EXIT, PID, 1040, 0, 0xffffffff81200000, 0, 0);
	record(&c, RV_FN_SYSCALL_EXIT, PID, 1050, 0, 0, 0, 100);
	capture_finish(&c);

	so.kallsyms_path = kallsyms;
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_open(&w, fxt, &err), 0);
	cr_assert_eq(rv_builder_new(&b, sym, w, &err), 0);
	cr_assert_eq(fn_open(&fc, c.path, sym, &err), 0, "%s", err.message);
	for (int i = 0; rv_fn_decoder_next(fc.d, &ev, &err) > 0; i++) {
		if (i == 1) {
			cr_assert_eq(ev.kind, RV_EVENT_KERNEL_BEGIN);
			cr_assert_eq(ev.kernel.kind, RV_KERNEL_FUNCTION);
			cr_assert_str_eq(ev.kernel.name, "vfs_read");
		}
		cr_assert_eq(rv_builder_add(b, &ev, &err), 0, "%s", err.message);
	}
	cr_assert_eq(rv_builder_finish(b, &err), 0);
	fn_close(&fc);
	cr_assert_eq(rv_trace_writer_commit(w, &err), 0);
	cr_assert_eq(fxt_read_file(fxt, &t, msg, sizeof(msg)), 0, "%s", msg);
	s = fxt_find_span(t, PID, PID, "ext4_file_read_iter", 0);
	cr_assert_not_null(s);
	cr_assert_eq(s->begin_ns, 20);
	cr_assert_eq(s->end_ns, 30);
	cr_assert_str_eq(fxt_span_parent(t, s)->name, "vfs_read");
	cr_assert_str_eq(fxt_span_parent(t, fxt_span_parent(t, s))->name, "read");
	fxt_trace_free(t);
	rv_builder_free(b);
	rv_trace_writer_free(w);
	rv_symbolizer_free(sym);
	unlink(fxt);
	unlink(kallsyms);
	unlink(c.path);
}

Test(fn_decoder, records_outside_windows_and_of_unknown_types_are_skipped)
{
	struct capture c;
	struct decoded ev[8];
	struct rv_fn_decoder_stats st;
	struct rv_fn_record r = { .type = RV_FN_ENTER, .tid = PID, .pid = PID, .sp = 100 };

	capture_open(&c, false);
	put_sample(&c, &r, sizeof(r), 1000); /* no RV_FN_FLAG_IN_WINDOW */
	r.flags = RV_FN_FLAG_IN_WINDOW;
	r.type = 99;
	put_sample(&c, &r, sizeof(r), 1010);
	r.type = 0;
	put_sample(&c, &r, sizeof(r), 1015);
	r.type = RV_FN_EXIT;
	put_sample(&c, &r, sizeof(r), 1020);
	capture_finish(&c);
	cr_assert_eq(decode_all(c.path, ev, 8, &st), 1);
	cr_assert_eq(ev[0].ev.kind, RV_EVENT_CALL_EXIT);
	cr_assert_eq(st.outside_windows, 1);
	cr_assert_eq(st.unknown_types, 2);
	cr_assert_eq(st.by_type[RV_FN_ENTER], 1, "counted by type, then skipped");
	unlink(c.path);
}

/* Every event of a capture, as text: kind, time, thread, and what the
 * event is about. */
static size_t events_of(const char *path, char *out, size_t size)
{
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct fn_capture f;
	struct rv_error err = { 0 };
	struct rv_event ev;
	size_t n = 0, used = 0;

	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(fn_open(&f, path, sym, &err), 0, "%s", err.message);
	out[0] = '\0';
	while (rv_fn_decoder_next(f.d, &ev, &err) == 1) {
		uint64_t about = ev.kind == RV_EVENT_CALL_ENTER || ev.kind == RV_EVENT_CALL_EXIT
					 ? ev.call.addr ^ ev.call.sp
					 : 0;

		used += (size_t)snprintf(out + used, size - used, "%d %" PRIu64 " %u %" PRIx64 "\n",
					 (int)ev.kind, ev.time, ev.tid, about);
		cr_assert_lt(used, size);
		n++;
	}
	fn_close(&f);
	rv_symbolizer_free(sym);
	return n;
}

/* Records of the 48-byte layout (time inside) and of the 40-byte layout of
 * older captures (time only in the sample) decode into the same events. */
Test(fn_decoder, both_record_layouts_decode_alike)
{
	static char now[16384], before[16384];
	struct capture c;
	size_t n_now, n_before;

	cr_assert_eq(sizeof(struct rv_fn_record), 48);
	cr_assert_eq(sizeof(struct rv_fn_record_v1), 40);
	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	n_now = events_of(c.path, now, sizeof(now));
	unlink(c.path);
	write_v1 = true;
	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	write_v1 = false;
	n_before = events_of(c.path, before, sizeof(before));
	unlink(c.path);
	cr_assert_gt(n_now, 10, "%s", now);
	cr_assert_eq(n_now, n_before);
	cr_assert_str_eq(now, before);
}

Test(fn_decoder, a_short_record_is_an_error_naming_its_offset)
{
	struct capture c;
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct fn_capture f;
	struct rv_error err = { 0 };
	struct rv_event ev;
	struct rv_fn_record r = {
		.type = RV_FN_ENTER, .flags = RV_FN_FLAG_IN_WINDOW, .tid = PID, .pid = PID
	};
	uint64_t offset;
	char expect[64];

	capture_open(&c, false);
	put_sample(&c, &r, sizeof(r), 1000);
	offset = rv_perf_writer_data_size(c.w);
	put_sample(&c, &r, 36, 1010); /* less than either layout */
	put_sample(&c, &r, sizeof(r), 1020);
	capture_finish(&c);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(fn_open(&f, c.path, sym, &err), 0, "%s", err.message);
	cr_assert_eq(rv_fn_decoder_next(f.d, &ev, &err), 1);
	cr_assert_lt(rv_fn_decoder_next(f.d, &ev, &err), 0);
	/* the data section follows the file header */
	{
		struct rv_perf_reader *reader;
		struct rv_perf_record rec;

		cr_assert_eq(rv_perf_reader_open(&reader, c.path, &err), 0);
		cr_assert_eq(rv_perf_reader_next(reader, &rec, &err), 1);
		offset += rec.file_offset;
		rv_perf_reader_free(reader);
	}
	snprintf(expect, sizeof(expect), "offset %#" PRIx64, offset);
	cr_assert_not_null(strstr(err.message, expect), "'%s' does not say '%s'", err.message,
			   expect);
	cr_assert_not_null(strstr(err.message, "damaged"), "%s", err.message);
	fn_close(&f);
	rv_symbolizer_free(sym);
	unlink(c.path);
}

Test(fn_decoder, other_captures_are_not_function_captures)
{
	struct capture c;
	struct rv_perf_writer *w;
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE };
	struct rv_symbolizer_options so = { 0 };
	struct rv_symbolizer *sym;
	struct fn_capture f;
	struct rv_error err = { 0 };
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/rv-fn-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0);
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", NULL, 0, &err), 0);
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);
	cr_assert_not(is_function_capture(path));
	cr_assert_not(is_function_capture("/nonexistent/perf.data"));
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_lt(fn_open(&f, path, sym, &err), 0);
	cr_assert_not_null(strstr(err.message, "--backend uprobe"), "%s", err.message);
	rv_symbolizer_free(sym);
	unlink(path);
	(void)c;
}

/* ---- rendering ---- */

static int add_to_builder(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	return rv_builder_add(ctx, ev, err);
}

/* Decodes the capture at path into a trace at fxt through the builder; the
 * decoder's result (0, or negative for a damaged capture) is returned, and
 * the trace must be readable (and nested) either way. */
static int render(const char *path, const char *fxt, struct fxt_trace **out,
		  struct rv_builder_stats *bs)
{
	struct rv_decoder_options o = { .path = path };
	struct rv_decoder *d = NULL;
	struct rv_trace_writer *w;
	struct rv_builder *b = NULL;
	struct rv_decoder_report report;
	struct rv_error err = { 0 };
	char msg[256];
	int got = -1;

	cr_assert_eq(rv_trace_writer_open(&w, fxt, &err), 0, "%s", err.message);
	/* as rv_render does: --filter windows begin before their first record */
	if (rv_decoder_open(&d, &o, &err) == 0 && rv_decoder_kind(d) != RV_CAPTURE_FUNCTIONS) {
		/* a header damaged so that the event's name is gone */
		rv_decoder_free(d);
		d = NULL;
	}
	if (d) {
		cr_assert_eq(rv_builder_new(&b, rv_decoder_symbolizer(d), w, &err), 0);
		if (rv_decoder_first_time(d))
			rv_builder_set_base(b, rv_decoder_first_time(d));
		cr_assert_eq(rv_decoder_run(d, add_to_builder, b, &err), 0, "%s", err.message);
		cr_assert_eq(rv_builder_finish(b, &err), 0, "%s", err.message);
		rv_decoder_report(d, &report);
		got = report.damage ? -1 : 0;
		if (bs)
			rv_builder_stats(b, bs);
		rv_builder_free(b);
		rv_decoder_free(d);
	} else {
		struct rv_symbolizer_options so = { 0 };
		struct rv_symbolizer *sym;

		cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
		cr_assert_eq(rv_builder_new(&b, sym, w, &err), 0);
		if (bs)
			rv_builder_stats(b, bs);
		rv_builder_free(b);
		rv_symbolizer_free(sym);
	}
	cr_assert_eq(rv_trace_writer_commit(w, &err), 0, "%s", err.message);
	rv_trace_writer_free(w);
	cr_assert_eq(fxt_read_file(fxt, out, msg, sizeof(msg)), 0, "%s: %s", path, msg);
	return got;
}

static const char *parent_name(const struct fxt_trace *t, const struct fxt_span *s)
{
	const struct fxt_span *p = fxt_span_parent(t, s);

	return p ? p->name : "";
}

/* The program's capture with its executable mapped: calls named from its
 * symbols, kernel spans nested in them, the window around them. */
Test(fn_decoder, a_capture_renders_into_nested_calls_and_kernel_spans)
{
	struct capture c;
	struct fxt_trace *t;
	struct rv_builder_stats bs;
	char binary[256], fxt[96];
	const char *build = getenv("RV_BUILD");
	const uint64_t base = 0x555555554000ull;
	uint64_t main_at, long_at, spin_at;

	snprintf(binary, sizeof(binary), "%s/tests/targets/ratio", build ? build : "build");
	cr_assert_eq(access(binary, R_OK), 0, "%s is not built (make %s)", binary, binary);
	main_at = base + nm_symbol(binary, "main", NULL);
	long_at = base + nm_symbol(binary, "work_long", NULL);
	spin_at = base + nm_symbol(binary, "spin", NULL);

	capture_open(&c, true);
	comm(&c, PID, "ratio", 900);
	mmap2(&c, base, 0x10000, binary);
	record(&c, RV_FN_ENTER, PID, 1000, 0, main_at, 0x7ffc1000, 0);
	record(&c, RV_FN_ENTER, PID, 1010, 1, long_at, 0x7ffc0f00, 0);
	record(&c, RV_FN_ENTER, PID, 1020, 2, spin_at, 0x7ffc0e00, 0);
	record(&c, RV_FN_SYSCALL_ENTER, PID, 1030, 230, 0, 0, 0);
	record(&c, RV_FN_SWITCH_OUT, PID, 1035, 1, 0, 0, 0);
	record(&c, RV_FN_SWITCH_IN, PID, 1045, 0, 0, 0, 0);
	record(&c, RV_FN_SYSCALL_EXIT, PID, 1050, 230, 0, 0, 0);
	record(&c, RV_FN_PAGE_FAULT, PID, 1055, 4, 0x1000, 0, spin_at + 4);
	record(&c, RV_FN_EXIT, PID, 1060, 2, spin_at, 0x7ffc0e08, 0);
	record(&c, RV_FN_EXIT, PID, 1070, 1, long_at, 0x7ffc0f08, 0);
	record(&c, RV_FN_EXIT, PID, 1080, 0, main_at, 0x7ffc1008, 0);
	mark(&c, RV_MARK_WINDOW, PID, 1085, 90, "main");
	capture_finish(&c);

	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	cr_assert_eq(render(c.path, fxt, &t, &bs), 0);
	cr_assert_eq(bs.calls, 3);
	cr_assert_eq(bs.returns, 3);
	cr_assert_eq(bs.kernel_spans, 2);
	cr_assert_eq(bs.instants, 1);
	cr_assert_eq(bs.windows, 1);
	cr_assert_str_eq(parent_name(t, trace_span(t, "main", 0)), "[window main]");
	cr_assert_str_eq(parent_name(t, trace_span(t, "work_long", 0)), "main");
	cr_assert_str_eq(parent_name(t, trace_span(t, "spin", 0)), "work_long");
	cr_assert_str_eq(parent_name(t, trace_span(t, "clock_nanosleep", 0)), "spin");
	cr_assert_str_eq(parent_name(t, trace_span(t, "[off-cpu: sleeping]", 0)),
			 "clock_nanosleep");
	cr_assert_eq(trace_span(t, "[off-cpu: sleeping]", 0)->end_ns -
			     trace_span(t, "[off-cpu: sleeping]", 0)->begin_ns,
		     10);
	cr_assert_eq(fxt_count_instants(t, PID, PID, "[page fault]"), 1);
	cr_assert_str_eq(fxt_thread_name(t, PID, PID), "ratio [4242/4242]");
	/* the window began before its first record: the trace's zero */
	cr_assert_eq(trace_span(t, "[window main]", 0)->begin_ns, 0);
	cr_assert_eq(trace_span(t, "main", 0)->begin_ns, 5);
	fxt_trace_free(t);
	unlink(fxt);
	unlink(c.path);
}

/* rv_render (what run, attach and decode call) tells a function capture by
 * its event's name and summarises calls. */
Test(fn_decoder, rv_render_takes_function_captures)
{
	struct capture c;
	struct rv_trace_writer *w;
	struct rv_error err = { 0 };
	struct fxt_trace *t;
	char fxt[96], msg[256];
	struct rv_render_options ro = { 0 };

	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	ro.decode.path = c.path;
	cr_assert_eq(rv_trace_writer_open(&w, fxt, &err), 0);
	cr_assert_eq(rv_render(&ro, w, &err), 0, "%s", err.message);
	rv_trace_writer_free(w);
	cr_assert_eq(fxt_read_file(fxt, &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "read"), 1);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "exit_group"), 1);
	cr_assert_eq(fxt_count_spans(t, PID, PID + 1, "[unknown]"), 1,
		     "the worker's exit without entry or address");
	cr_assert_str_eq(parent_name(t, trace_span(t, "[irq 24]", 0)), "read");
	cr_assert_str_eq(parent_name(t, trace_span(t, "[off-cpu: sleeping]", 0)), "read");
	fxt_trace_free(t);
	unlink(fxt);
	unlink(c.path);
}

/* ---- damage ---- */

/* perf.data's header: the data section's offset and size at bytes 40, 48. */
static void data_section(const uint8_t *file, uint64_t *offset, uint64_t *size)
{
	memcpy(offset, file + 40, 8);
	memcpy(size, file + 48, 8);
}

/* The data section cut at every byte (a recording that stopped mid-write):
 * the records before the cut are decoded, the cut one is an error, and the
 * trace of what was read nests. */
Test(fn_decoder, a_capture_cut_anywhere_keeps_what_came_before)
{
	struct capture c;
	uint8_t *file;
	size_t size;
	uint64_t data_offset, data_size, whole_events = 0;
	char damaged[96], fxt[96];
	struct fxt_trace *t;

	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	file = read_whole(c.path, &size);
	data_section(file, &data_offset, &data_size);
	cr_assert_gt(data_size, 0);
	snprintf(damaged, sizeof(damaged), "%s.cut", c.path);
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	for (uint64_t cut = 0; cut <= data_size; cut++) {
		struct rv_builder_stats bs;
		int got;

		memcpy(file + 48, &cut, 8);
		write_file(damaged, file, size);
		got = render(damaged, fxt, &t, &bs);
		cr_assert_leq(got, 0);
		if (cut == data_size) {
			cr_assert_eq(got, 0, "the whole capture decodes");
			whole_events = bs.exact_events;
		}
		fxt_trace_free(t);
	}
	cr_assert_eq(whole_events, 15);
	free(file);
	unlink(damaged);
	unlink(fxt);
	unlink(c.path);
}

/* Every byte of the data section flipped, one at a time, and every byte of
 * each record's raw data set to patterns that make nonsense of types,
 * threads, times and stack pointers: never a crash, always a nested trace. */
Test(fn_decoder, flipped_bytes_never_crash_and_the_trace_still_nests)
{
	struct capture c;
	uint8_t *file;
	size_t size;
	uint64_t data_offset, data_size, errors = 0;
	char damaged[96], fxt[96];
	static const uint8_t patterns[] = { 0xff, 0x01, 0x80 };
	struct fxt_trace *t;

	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	file = read_whole(c.path, &size);
	data_section(file, &data_offset, &data_size);
	snprintf(damaged, sizeof(damaged), "%s.flip", c.path);
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	for (uint64_t i = 0; i < data_size; i++) {
		for (size_t p = 0; p < sizeof(patterns); p++) {
			file[data_offset + i] ^= patterns[p];
			write_file(damaged, file, size);
			if (render(damaged, fxt, &t, NULL) < 0)
				errors++;
			fxt_trace_free(t);
			file[data_offset + i] ^= patterns[p];
		}
	}
	cr_assert_gt(errors, 0, "some damage is seen as such");
	free(file);
	unlink(damaged);
	unlink(fxt);
	unlink(c.path);
}

/* The rest of the file (header, attributes, event names, features) damaged
 * byte by byte: the capture is refused or read, never a crash. */
Test(fn_decoder, a_damaged_header_never_crashes)
{
	struct capture c;
	uint8_t *file;
	size_t size;
	uint64_t data_offset, data_size;
	char damaged[96], fxt[96];
	struct fxt_trace *t;

	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	file = read_whole(c.path, &size);
	data_section(file, &data_offset, &data_size);
	snprintf(damaged, sizeof(damaged), "%s.flip", c.path);
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	for (uint64_t i = 0; i < size; i++) {
		if (i == data_offset)
			i += data_size;
		if (i >= size)
			break;
		file[i] ^= 0xff;
		write_file(damaged, file, size);
		render(damaged, fxt, &t, NULL);
		fxt_trace_free(t);
		file[i] ^= 0xff;
	}
	free(file);
	unlink(damaged);
	unlink(fxt);
	unlink(c.path);
}

/* ---- the oracle ---- */

static size_t count_lines_with(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* perf shows the records as bpf-output samples of the named event, with the
 * record's bytes as their raw data. (perf script refuses samples without
 * PERF_SAMPLE_IP or ADDR unless told which fields to show: the engine's
 * attribute has IP, as this capture's has.) */
Test(fn_decoder, perf_script_reads_the_capture)
{
	struct capture c;
	char *out;
	int status;

	require_tool("perf", "linux-perf");
	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	out = run_command(&status, NULL, "perf script -i '%s' 2>&1", c.path);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_eq(count_lines_with(out, RV_FN_EVENT_NAME ":"), 15, "%s", out);
	cr_assert_eq(count_lines_with(out, RV_MARK_EVENT_NAME ":"), 1, "%s", out);
	cr_assert_eq(count_lines_with(out, "BPF output: 0000:"), 16, "%s", out);
	/* the first record: its time 1000 = 0x3e8, type 1 (enter), flags 1,
	 * tid 4242 = 0x1092, then pid 4242, fn 0, addr 0x401000 */
	cr_assert_not_null(strstr(out, "BPF output: 0000: e8 03 00 00 00 00 00 00"), "%s", out);
	cr_assert_not_null(strstr(out, "0008: 01 00 01 00 92 10 00 00"), "%s", out);
	cr_assert_not_null(strstr(out, "0018: 00 10 40 00 00 00 00 00"), "%s", out);
	/* the worker's three records carry its name and tid */
	cr_assert_eq(count_lines_with(out, "worker  4243 "), 3, "%s", out);
	free(out);
	unlink(c.path);
}

/* The number after a line's label in --stats output. */
static uint64_t stat_value(const char *out, const char *label)
{
	char needle[64];
	const char *p;

	snprintf(needle, sizeof(needle), "\n%s ", label);
	p = strstr(out, needle);
	cr_assert_not_null(p, "no line '%s' in: %s", label, out);
	return strtoull(p + strlen(needle), NULL, 10);
}

/* `rearview decode CAPTURE --stats` renders it and counts the records. */
Test(fn_decoder, rearview_decode_renders_a_function_capture)
{
	struct capture c;
	char *out, fxt[96], binary[256], msg[256], dir[96], in_dir[128];
	const char *build = getenv("RV_BUILD");
	struct fxt_trace *t;
	int status;

	snprintf(binary, sizeof(binary), "%s/rearview", build ? build : "build");
	cr_assert_eq(access(binary, X_OK), 0, "%s is not built", binary);
	capture_open(&c, true);
	write_program(&c);
	capture_finish(&c);
	snprintf(fxt, sizeof(fxt), "%s.fxt", c.path);
	out = run_command(&status, NULL, "'%s' decode --stats -o '%s' '%s' 2>&1", binary, fxt,
			  c.path);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_eq(stat_value(out, "function records"), 15, "%s", out);
	cr_assert_eq(stat_value(out, "  enter"), 3, "%s", out);
	cr_assert_eq(stat_value(out, "  exit"), 4, "%s", out);
	cr_assert_eq(stat_value(out, "  syscall enter"), 2, "%s", out);
	cr_assert_eq(stat_value(out, "  switch in"), 1, "%s", out);
	cr_assert_eq(stat_value(out, "  kernel function enter"), 0, "%s", out);
	cr_assert_eq(stat_value(out, "gate marks"), 1, "%s", out);
	cr_assert_eq(stat_value(out, "lost"), 3, "%s", out);
	cr_assert_not_null(
		strstr(out, ": 3 calls, 4 kernel spans, 1 page faults, 3 lost, 2 threads"), "%s",
		out);
	cr_assert_eq(fxt_read_file(fxt, &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(fxt_count_spans(t, PID, PID, "read"), 1);
	fxt_trace_free(t);
	free(out);
	/* a capture directory, as run and attach keep it */
	snprintf(dir, sizeof(dir), "%s.d", c.path);
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(in_dir, sizeof(in_dir), "%s/perf.data", dir);
	cr_assert_eq(rename(c.path, in_dir), 0);
	out = run_command(&status, NULL, "'%s' decode -o '%s' '%s' 2>&1", binary, fxt, dir);
	cr_assert_eq(status, 0, "%s", out);
	cr_assert_not_null(strstr(out, ": 3 calls, 4 kernel spans"), "%s", out);
	free(out);
	unlink(in_dir);
	rmdir(dir);
	unlink(fxt);
}
