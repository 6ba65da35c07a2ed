/* test_pt_kernel_spans.c: Intel PT captures with kernel packets, decoded
 * through to a trace (decoder, trace builder, FXT writer), as rearview
 * decode does: issue 17's kernel entries.
 *
 * The captures are made here: a user program (an ELF with main and do_read)
 * and a kernel (kcore_dir: its code as kcore, its names as kallsyms), the
 * packets from softpt's generator, the records from synth.h. With the
 * kernel traced, a system call and its sysret, a page fault that the trace
 * leaves in the kernel (PGD) and resumes from in user code (PGE), and an
 * interrupt with a page fault nested in it must give one main, each kernel
 * entry a child of the user function it interrupted, named by kallsyms, in
 * the "kernel" category. Tracing user space only, the same program's
 * system calls must be "[syscall read]" and "[syscall write]" (their
 * numbers read from the code) and the fault "[kernel]".
 *
 * Not here: the decoding of captures in general (test_pt_capture.c), the
 * builder's rules one by one (test_builder_branch.c).
 */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../tools/softpt/ptgen.h"
#include "builder_fixture.h"
#include "capture/auxtrace.h"
#include "capture/perf_data.h"
#include "capture/synth.h"
#include "decode/decoder.h"
#include "test_elf.h"
#include "test_files.h"

#define PMU_TYPE 8
#define PT_ID	 1
#define SB_ID	 2
#define PID	 4242

/* ---- the program and the kernel ---- */

#define USER_BASE   0x400000ull
#define MAIN	    USER_BASE
#define DO_READ	    (USER_BASE + 0x100)
#define KERNEL_BASE 0xffffffff83e00000ull
#define K_ENTRY	    (KERNEL_BASE + 0x000) /* entry_SYSCALL_64 */
#define K_SYSCALL   (KERNEL_BASE + 0x100) /* do_syscall_64 */
#define K_FAULT	    (KERNEL_BASE + 0x200) /* asm_exc_page_fault */
#define K_FAULT_C   (KERNEL_BASE + 0x300) /* exc_page_fault */
#define K_IRQ	    (KERNEL_BASE + 0x400) /* asm_common_interrupt */
#define K_IRQ_C	    (KERNEL_BASE + 0x500) /* handle_irq */

struct image {
	uint8_t code[0x600];
};

static void put(struct image *im, uint64_t base, uint64_t at, const uint8_t *bytes, size_t n)
{
	cr_assert_leq(at - base + n, sizeof(im->code));
	memcpy(im->code + (at - base), bytes, n);
}

#define PUT(im, base, at, ...)                                                                     \
	do {                                                                                       \
		static const uint8_t insn_[] = { __VA_ARGS__ };                                    \
		put((im), (base), (at), insn_, sizeof(insn_));                                     \
	} while (0)

static void put_call(struct image *im, uint64_t base, uint64_t at, uint64_t to)
{
	uint8_t call[5] = { 0xe8 };
	int32_t rel = (int32_t)(to - (at + 5));

	memcpy(call + 1, &rel, 4);
	put(im, base, at, call, sizeof(call));
}

/* main: call do_read; nop; nop; mov eax, 1; syscall; nop; nop; nop
 * do_read: xor eax, eax; syscall; ret */
static void user_code(struct image *u)
{
	memset(u->code, 0xcc, sizeof(u->code));
	put_call(u, USER_BASE, MAIN, DO_READ);
	PUT(u, USER_BASE, MAIN + 5, 0x90, 0x90, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x90,
	    0x90, 0x90);
	PUT(u, USER_BASE, DO_READ, 0x31, 0xc0, 0x0f, 0x05, 0xc3);
}

/* entry_SYSCALL_64: call do_syscall_64; sysretq. do_syscall_64: nop; ret.
 * asm_exc_page_fault: call exc_page_fault; iretq. exc_page_fault: nop;
 * ret. asm_common_interrupt: call handle_irq; iretq. handle_irq: nop; nop;
 * ret. */
static void kernel_code(struct image *k)
{
	memset(k->code, 0xcc, sizeof(k->code));
	put_call(k, KERNEL_BASE, K_ENTRY, K_SYSCALL);
	PUT(k, KERNEL_BASE, K_ENTRY + 5, 0x48, 0x0f, 0x07);
	PUT(k, KERNEL_BASE, K_SYSCALL, 0x90, 0xc3);
	put_call(k, KERNEL_BASE, K_FAULT, K_FAULT_C);
	PUT(k, KERNEL_BASE, K_FAULT + 5, 0x48, 0xcf);
	PUT(k, KERNEL_BASE, K_FAULT_C, 0x90, 0xc3);
	put_call(k, KERNEL_BASE, K_IRQ, K_IRQ_C);
	PUT(k, KERNEL_BASE, K_IRQ + 5, 0x48, 0xcf);
	PUT(k, KERNEL_BASE, K_IRQ_C, 0x90, 0x90, 0xc3);
}

/* ---- the capture ---- */

struct capture {
	char dir[PATH_MAX];
	char user[PATH_MAX + 16];
	uint64_t code_offset; /* of the user code in its file */
	struct rv_perf_writer *w;
	struct rv_synth synth;
	struct ptgen *g;
	uint64_t tsc;
};

static void syn_write(struct capture *c, const uint8_t *rec, size_t size)
{
	struct rv_error err = { 0 };

	cr_assert_gt(size, 0, "a record did not fit");
	cr_assert_eq(rv_perf_writer_write(c->w, (const void *)rec, &err), 0, "%s", err.message);
}

static struct rv_synth_id syn_id(uint64_t time, uint64_t id)
{
	return (struct rv_synth_id){ .pid = PID, .tid = PID, .cpu = 0, .time = time, .id = id };
}

/* A per-thread capture of PID running the user program, the kernel traced
 * too when `kernel`, up to the packets. */
static void capture_open(struct capture *c, bool kernel)
{
	char path[PATH_MAX + 32];
	struct rv_error err = { 0 };
	struct rv_perf_time_conv tc;
	uint64_t pt_id = PT_ID, sb_id = SB_ID;
	uint64_t sample_type =
		PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	struct image u, k;
	uint8_t rec[4096 + PATH_MAX];
	struct rv_synth_id id;
	/* MTC every 100 TSC ticks: the times of the events below, multiples
	 * of 100, are exact */
	struct ptgen_config pc = {
		.tsc = true,
		.mtc = true,
		.mtc_period = 0,
		.psb_period = 16,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 1,
		.cbr = 24,
		.max_nonturbo_ratio = 24,
	};

	memset(c, 0, sizeof(*c));
	make_temp_dir(c->dir, sizeof(c->dir), "rv-ptkernel");
	user_code(&u);
	snprintf(c->user, sizeof(c->user), "%s/user.elf", c->dir);
	const struct test_elf_symbol user_symbols[] = { { "main", MAIN, 0x100, STT_FUNC },
							{ "do_read", DO_READ, 0x10, STT_FUNC } };
	/* mapped from the file's start, as the loader maps it */
	c->code_offset = test_elf_write(c->user, ET_EXEC, USER_BASE, u.code, sizeof(u.code),
					user_symbols, 2);
	if (kernel) {
		static const char kallsyms[] = "ffffffff83e00000 T _text\n"
					       "ffffffff83e00000 T _stext\n"
					       "ffffffff83e00000 T entry_SYSCALL_64\n"
					       "ffffffff83e00100 T do_syscall_64\n"
					       "ffffffff83e00200 T asm_exc_page_fault\n"
					       "ffffffff83e00300 T exc_page_fault\n"
					       "ffffffff83e00400 T asm_common_interrupt\n"
					       "ffffffff83e00500 T handle_irq\n"
					       "ffffffff83e00600 T _etext\n";

		kernel_code(&k);
		snprintf(path, sizeof(path), "%s/kcore_dir", c->dir);
		cr_assert_eq(mkdir(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/kcore_dir/kallsyms", c->dir);
		write_file(path, kallsyms, strlen(kallsyms));
		snprintf(path, sizeof(path), "%s/kcore_dir/kcore", c->dir);
		test_elf_write(path, ET_CORE, KERNEL_BASE, k.code, sizeof(k.code), NULL, 0);
	}

	snprintf(path, sizeof(path), "%s/perf.data", c->dir);
	cr_assert_eq(rv_perf_writer_open(&c->w, path, &err), 0, "%s", err.message);
	c->synth.sample_type = sample_type;
	c->synth.sample_id_all = true;
	struct perf_event_attr pt = {
		.type = PMU_TYPE,
		.size = sizeof(pt),
		.config = 1ull << 10 | 1ull << 9, /* tsc, mtc */
		.sample_period = 1,
		.sample_type = sample_type,
		.exclude_kernel = !kernel,
		.exclude_hv = 1,
		.sample_id_all = 1,
	};
	struct perf_event_attr dummy = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(dummy),
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = sample_type,
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.sample_id_all = 1,
	};
	cr_assert_eq(rv_perf_writer_add_attr(c->w, &pt, "intel_pt//", &pt_id, 1, &err), 0);
	cr_assert_eq(rv_perf_writer_add_attr(c->w, &dummy, "dummy:u", &sb_id, 1, &err), 0);
	rv_perf_time_conv_from_freq(&tc, 1000000000ull, 0, 0); /* 1 GHz: times are ticks */
	cr_assert_eq(rv_perf_writer_write_time_conv(c->w, &tc, &err), 0);
	struct rv_intel_pt_info info = {
		.pmu_type = PMU_TYPE,
		.time_shift = tc.time_shift,
		.time_mult = tc.time_mult,
		.time_zero = tc.time_zero,
		.cap_user_time_zero = 1,
		.tsc_bit = 1ull << 10,
		.noretcomp_bit = 1ull << 11,
		.mtc_bit = 1ull << 9,
		.mtc_freq_bits = 0xfull << 14,
		.tsc_ctc_ratio_n = 100,
		.tsc_ctc_ratio_d = 1,
		.cyc_bit = 1ull << 1,
		.max_non_turbo_ratio = 24,
		.filter = "",
	};
	cr_assert_eq(rv_perf_writer_write_intel_pt_info(c->w, &info, &err), 0, "%s", err.message);
	if (kernel) {
		/* perf's map of the kernel: pgoff is the address of _text */
		id = (struct rv_synth_id){ .pid = UINT32_MAX, .id = SB_ID };
		syn_write(c, rec,
			  rv_synth_mmap(&c->synth, rec, sizeof(rec), UINT32_MAX, 0, KERNEL_BASE,
					0x600, KERNEL_BASE, "[kernel.kallsyms]_text",
					PERF_RECORD_MISC_KERNEL, &id));
	}
	id = syn_id(10, SB_ID);
	syn_write(c, rec, rv_synth_comm(&c->synth, rec, sizeof(rec), PID, PID, "kprog", true, &id));
	syn_write(c, rec,
		  rv_synth_mmap2(&c->synth, rec, sizeof(rec), PID, PID, USER_BASE - c->code_offset,
				 0x1000, 0, 8, 1, 42, PROT_READ | PROT_EXEC, MAP_PRIVATE, c->user,
				 PERF_RECORD_MISC_USER, &id));
	id = syn_id(999, PT_ID);
	syn_write(c, rec, rv_synth_itrace_start(&c->synth, rec, sizeof(rec), PID, PID, &id));
	c->g = ptgen_new(&pc);
	cr_assert_not_null(c->g);
}

/* The packets, then the thread's exit at `exit_time`. */
static void capture_finish(struct capture *c, uint64_t exit_time)
{
	struct rv_error err = { 0 };
	uint8_t rec[256];
	size_t size;
	const uint8_t *data;
	struct rv_synth_id id = syn_id(exit_time, SB_ID);
	struct rv_perf_meta meta = {
		.cpuid = "GenuineIntel,6,140,1",
		.clockid = -1,
		.nr_cpus_avail = 4,
		.nr_cpus_online = 4,
	};

	cr_assert_eq(ptgen_flush(c->g), 0);
	data = ptgen_data(c->g, &size);
	struct rv_perf_auxtrace a = { .size = size, .idx = 0, .tid = PID, .cpu = UINT32_MAX };
	cr_assert_eq(rv_perf_writer_write_auxtrace(c->w, &a, data, &err), 0, "%s", err.message);
	syn_write(c, rec,
		  rv_synth_exit(&c->synth, rec, sizeof(rec), PID, PID, PID, PID, exit_time, &id));
	cr_assert_eq(rv_perf_writer_finish(c->w, &meta, &err), 0, "%s", err.message);
	rv_perf_writer_free(c->w);
	ptgen_free(c->g);
}

/* One instruction at time t (TSC ticks). */
static void insn(struct capture *c, uint64_t t, uint64_t ip, unsigned size, enum ptgen_class cls,
		 uint64_t next)
{
	int ret = ptgen_insn(c->g, ip, size, cls, next, t);

	cr_assert_eq(ret, 0, "instruction at %#llx: %d", (unsigned long long)ip, ret);
}

static void check(int ret, const char *what)
{
	cr_assert_eq(ret, 0, "%s: %d", what, ret);
}

/* ---- decoding to a trace ---- */

static int to_builder(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	return rv_builder_add(ctx, ev, err);
}

/* The capture decoded as rearview decode does (--trace-include-kernel when
 * kernel), to an FXT trace read back; the decoding must see no error. */
static struct fxt_trace *decode(const struct capture *c, bool kernel, char *fxt, size_t fxt_size)
{
	struct rv_decoder_options o = { .path = c->dir, .include_kernel = kernel, .jobs = 1 };
	struct rv_decoder *d;
	struct rv_builder *b;
	struct rv_trace_writer *w;
	struct rv_decoder_report report;
	struct rv_error err = { 0 };
	struct fxt_trace *t = NULL;
	char message[256];

	snprintf(fxt, fxt_size, "%s/trace.fxt", c->dir);
	cr_assert_eq(rv_decoder_open(&d, &o, &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_open(&w, fxt, &err), 0, "%s", err.message);
	cr_assert_eq(rv_builder_new(&b, rv_decoder_symbolizer(d), w, &err), 0, "%s", err.message);
	if (rv_decoder_first_time(d))
		rv_builder_set_base(b, rv_decoder_first_time(d));
	cr_assert_eq(rv_decoder_run(d, to_builder, b, &err), 0, "%s", err.message);
	cr_assert_eq(rv_builder_finish(b, &err), 0, "%s", err.message);
	cr_assert_eq(rv_trace_writer_commit(w, &err), 0, "%s", err.message);
	rv_decoder_report(d, &report);
	cr_assert_eq(report.pt.errors, 0, "%llu decode errors, the first at %#llx: %s",
		     (unsigned long long)report.pt.errors,
		     (unsigned long long)report.pt.sites[0].ip,
		     pt_errstr(pt_errcode(report.pt.sites[0].code)));
	cr_assert_eq(report.nr_missing, 0, "missing: %s",
		     report.nr_missing ? report.missing[0].path : "");
	rv_builder_free(b);
	rv_trace_writer_free(w);
	rv_decoder_free(d);
	cr_assert_eq(fxt_read_file(fxt, &t, message, sizeof(message)), 0, "%s", message);
	return t;
}

static void expect_category(const struct fxt_trace *t, const char *name, const char *category)
{
	for (size_t i = 0; i < t->nr_spans; i++)
		if (!strcmp(t->spans[i].name, name))
			cr_assert_str_eq(t->spans[i].category, category, "%s: \"%s\"", name,
					 t->spans[i].category);
}

/* Times are TSC ticks from 1000, the first event: ns from the trace's
 * zero are t - 1000. */
Test(pt_kernel_spans, kernel_entries_nest_under_the_user_code_they_interrupt, .timeout = 60)
{
	struct capture c;
	struct fxt_trace *t;
	char fxt[PATH_MAX + 16];

	capture_open(&c, true);
	check(ptgen_enable(c.g, MAIN, 1000), "enable");
	insn(&c, 1100, MAIN, 5, PTGEN_CALL, DO_READ);
	insn(&c, 1200, DO_READ, 2, PTGEN_OTHER, DO_READ + 2);
	/* a system call, traced into the kernel and back by sysret */
	insn(&c, 1300, DO_READ + 2, 2, PTGEN_JMP_IND, K_ENTRY);
	insn(&c, 1400, K_ENTRY, 5, PTGEN_CALL, K_SYSCALL);
	insn(&c, 1500, K_SYSCALL, 1, PTGEN_OTHER, K_SYSCALL + 1);
	insn(&c, 1600, K_SYSCALL + 1, 1, PTGEN_RET, K_ENTRY + 5);
	insn(&c, 1700, K_ENTRY + 5, 3, PTGEN_JMP_IND, DO_READ + 4);
	insn(&c, 1800, DO_READ + 4, 1, PTGEN_RET, MAIN + 5);
	/* a page fault: the trace stops in the kernel (PGD) and resumes in
	 * user code (PGE) */
	check(ptgen_async_branch(c.g, MAIN + 5, K_FAULT, 2000), "fault");
	insn(&c, 2100, K_FAULT, 5, PTGEN_CALL, K_FAULT_C);
	insn(&c, 2200, K_FAULT_C, 1, PTGEN_OTHER, K_FAULT_C + 1);
	check(ptgen_async_disable(c.g, K_FAULT_C + 1, 2300), "pgd");
	check(ptgen_enable(c.g, MAIN + 5, 3000), "pge");
	insn(&c, 3100, MAIN + 5, 1, PTGEN_OTHER, MAIN + 6);
	insn(&c, 3200, MAIN + 6, 1, PTGEN_OTHER, MAIN + 7);
	insn(&c, 3300, MAIN + 7, 5, PTGEN_OTHER, MAIN + 12);
	/* another system call */
	insn(&c, 3400, MAIN + 12, 2, PTGEN_JMP_IND, K_ENTRY);
	insn(&c, 3500, K_ENTRY, 5, PTGEN_CALL, K_SYSCALL);
	insn(&c, 3600, K_SYSCALL, 1, PTGEN_OTHER, K_SYSCALL + 1);
	insn(&c, 3700, K_SYSCALL + 1, 1, PTGEN_RET, K_ENTRY + 5);
	insn(&c, 3800, K_ENTRY + 5, 3, PTGEN_JMP_IND, MAIN + 14);
	/* an interrupt, and a page fault inside its handler */
	check(ptgen_async_branch(c.g, MAIN + 14, K_IRQ, 4000), "interrupt");
	insn(&c, 4100, K_IRQ, 5, PTGEN_CALL, K_IRQ_C);
	insn(&c, 4200, K_IRQ_C, 1, PTGEN_OTHER, K_IRQ_C + 1);
	check(ptgen_async_branch(c.g, K_IRQ_C + 1, K_FAULT, 4300), "nested fault");
	insn(&c, 4400, K_FAULT, 5, PTGEN_CALL, K_FAULT_C);
	insn(&c, 4500, K_FAULT_C, 1, PTGEN_OTHER, K_FAULT_C + 1);
	insn(&c, 4600, K_FAULT_C + 1, 1, PTGEN_RET, K_FAULT + 5);
	insn(&c, 4700, K_FAULT + 5, 2, PTGEN_JMP_IND, K_IRQ_C + 1);
	insn(&c, 4800, K_IRQ_C + 1, 1, PTGEN_OTHER, K_IRQ_C + 2);
	insn(&c, 4900, K_IRQ_C + 2, 1, PTGEN_RET, K_IRQ + 5);
	insn(&c, 5000, K_IRQ + 5, 2, PTGEN_JMP_IND, MAIN + 14);
	insn(&c, 5100, MAIN + 14, 1, PTGEN_OTHER, MAIN + 15);
	insn(&c, 5200, MAIN + 15, 1, PTGEN_OTHER, MAIN + 16);
	capture_finish(&c, 6000);

	t = decode(&c, true, fxt, sizeof(fxt));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "entry_SYSCALL_64"), 2);
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "asm_exc_page_fault"), 2);
	expect_span(t, "main", 0, 0, 5000, NULL);
	/* A direct call sends no packet: it takes its time from the events
	 * after it, spread over the interval they share (calls at 1100 and
	 * 1400 decode at 1150 and 1450). */
	expect_span(t, "do_read", 0, 150, 800, "main");
	expect_span(t, "entry_SYSCALL_64", 0, 300, 700, "do_read");
	expect_span(t, "do_syscall_64", 0, 450, 600, "entry_SYSCALL_64");
	/* the fault ends where user code resumes */
	expect_span(t, "asm_exc_page_fault", 0, 1000, 2000, "main");
	expect_span(t, "exc_page_fault", 0, 1150, 2000, "asm_exc_page_fault");
	expect_span(t, "[untraced]", 0, 1300, 2000, "exc_page_fault");
	expect_span(t, "entry_SYSCALL_64", 1, 2400, 2800, "main");
	expect_span(t, "asm_common_interrupt", 0, 3000, 4000, "main");
	expect_span(t, "handle_irq", 0, 3150, 3900, "asm_common_interrupt");
	expect_span(t, "asm_exc_page_fault", 1, 3300, 3700, "handle_irq");
	expect_span(t, "exc_page_fault", 1, 3450, 3600, "asm_exc_page_fault");
	expect_category(t, "main", "");
	expect_category(t, "do_read", "");
	expect_category(t, "entry_SYSCALL_64", "kernel");
	expect_category(t, "do_syscall_64", "kernel");
	expect_category(t, "asm_exc_page_fault", "kernel");
	expect_category(t, "exc_page_fault", "kernel");
	expect_category(t, "asm_common_interrupt", "kernel");
	expect_category(t, "handle_irq", "kernel");
	expect_category(t, "[untraced]", "kernel");
	fxt_trace_free(t);
	remove_tree(c.dir);
}

/* User space only: the kernel's time between leaving and coming back is a
 * placeholder named after the system call the code makes. */
Test(pt_kernel_spans, untraced_kernel_time_is_named_by_the_system_call, .timeout = 60)
{
	struct capture c;
	struct fxt_trace *t;
	char fxt[PATH_MAX + 16];

	capture_open(&c, false);
	check(ptgen_enable(c.g, MAIN, 1000), "enable");
	insn(&c, 1100, MAIN, 5, PTGEN_CALL, DO_READ);
	insn(&c, 1200, DO_READ, 2, PTGEN_OTHER, DO_READ + 2);
	insn(&c, 1300, DO_READ + 2, 2, PTGEN_SYSCALL, 0);
	check(ptgen_enable(c.g, DO_READ + 4, 2000), "back from read");
	insn(&c, 2100, DO_READ + 4, 1, PTGEN_RET, MAIN + 5);
	check(ptgen_async_disable(c.g, MAIN + 5, 2200), "fault");
	check(ptgen_enable(c.g, MAIN + 5, 2500), "back from the fault");
	insn(&c, 2600, MAIN + 5, 1, PTGEN_OTHER, MAIN + 6);
	insn(&c, 2700, MAIN + 6, 1, PTGEN_OTHER, MAIN + 7);
	insn(&c, 2800, MAIN + 7, 5, PTGEN_OTHER, MAIN + 12);
	insn(&c, 2900, MAIN + 12, 2, PTGEN_SYSCALL, 0);
	check(ptgen_enable(c.g, MAIN + 14, 3500), "back from write");
	insn(&c, 3600, MAIN + 14, 1, PTGEN_OTHER, MAIN + 15);
	insn(&c, 3700, MAIN + 15, 1, PTGEN_OTHER, MAIN + 16);
	capture_finish(&c, 4000);

	t = decode(&c, false, fxt, sizeof(fxt));
	cr_assert_eq(fxt_count_spans(t, FXT_ANY, FXT_ANY, "main"), 1);
	expect_span(t, "do_read", 0, 150, 1100, "main");
	expect_span(t, "[syscall read]", 0, 300, 1000, "do_read");
	expect_span(t, "[kernel]", 0, 1200, 1500, "main");
	expect_span(t, "[syscall write]", 0, 1900, 2500, "main");
	expect_category(t, "[syscall read]", "kernel");
	expect_category(t, "[syscall write]", "kernel");
	expect_category(t, "[kernel]", "kernel");
	expect_category(t, "main", "");
	fxt_trace_free(t);
	remove_tree(c.dir);
}
