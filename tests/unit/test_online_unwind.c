/* test_online_unwind.c: DWARF samples turned into call chains
 * (record/online_unwind.h): the raw layout read with bounds, the chain built
 * (kernel part, PERF_CONTEXT_USER, user frames, the cut marker), the chain
 * read back by the sample decoder, the queue's order, its release in time
 * order across streams and its bound, and
 * --callgraph-mode dwarf,SIZE. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/callchain.h"
#include "capture/perf_data.h"
#include "cli/options.h"
#include "decode/events.h"
#include "decode/sample_decoder.h"
#include "record/online_unwind.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"

#define SAMPLE_TYPE                                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |            \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
#define NR_REGS	    20 /* popcount of RV_UNWIND_X86_64_REGS_MASK */
#define STACK_ROOM  64
#define KERNEL_ADDR 0xffffffff81000000ull

/* A raw DWARF sample as the engine's events write it: a kernel chain
 * (PERF_CONTEXT_KERNEL and two addresses, no user part), registers (IP and
 * SP among them) unless regs_abi is 0, and a STACK_ROOM-byte copy of which
 * dyn bytes are valid. Returns the record's size. */
static size_t raw_sample(uint64_t *buf, uint64_t time, uint64_t ip, uint64_t regs_abi, uint64_t dyn)
{
	size_t n = 0;
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER };

	buf[n++] = 0;		       /* header, below */
	buf[n++] = 1;		       /* id */
	buf[n++] = ip;		       /* ip */
	buf[n++] = 100 | 101ull << 32; /* pid 100, tid 101 */
	buf[n++] = time;
	buf[n++] = 1;	   /* cpu 1 */
	buf[n++] = 100000; /* period */
	buf[n++] = 3;	   /* chain */
	buf[n++] = PERF_CONTEXT_KERNEL;
	buf[n++] = KERNEL_ADDR + 0x10;
	buf[n++] = KERNEL_ADDR + 0x20;
	buf[n++] = regs_abi;
	if (regs_abi)
		for (int i = 0; i < NR_REGS; i++)
			buf[n++] = i == 8 ? ip : 0x7ffc0000 + (uint64_t)i;
	buf[n++] = STACK_ROOM;
	for (int i = 0; i < STACK_ROOM / 8; i++)
		buf[n++] = 0x1111111111111111ull * (uint64_t)(i + 1);
	buf[n++] = dyn;
	h.size = (uint16_t)(n * 8);
	memcpy(buf, &h, sizeof(h));
	return n * 8;
}

Test(online_unwind, a_raw_sample_is_read_with_its_parts)
{
	uint64_t buf[128];
	struct rv_raw_dwarf_sample s;

	raw_sample(buf, 5000, 0x401000, PERF_SAMPLE_REGS_ABI_64, 48);
	cr_assert_eq(rv_raw_dwarf_sample_parse((void *)buf, RV_UNWIND_X86_64_REGS_MASK, &s), 0);
	cr_assert_eq(s.pid, 100);
	cr_assert_eq(s.tid, 101);
	cr_assert_eq(s.time, 5000);
	cr_assert_eq(s.nr_chain, 3);
	cr_assert_eq(s.regs_abi, PERF_SAMPLE_REGS_ABI_64);
	cr_assert_eq(s.stack_size, 48);
	cr_assert_eq(s.stack_asked, STACK_ROOM);
	cr_assert_eq(s.stack[0], 0x11);
}

Test(online_unwind, a_raw_sample_that_runs_past_its_end_is_refused)
{
	uint64_t buf[128];
	struct perf_event_header *h = (void *)buf;
	struct rv_raw_dwarf_sample s;
	size_t size = raw_sample(buf, 5000, 0x401000, PERF_SAMPLE_REGS_ABI_64, 48);

	/* every shorter length is refused: nothing is read past the record */
	for (size_t cut = 8; cut < size; cut += 8) {
		h->size = (uint16_t)cut;
		cr_assert_eq(rv_raw_dwarf_sample_parse(h, RV_UNWIND_X86_64_REGS_MASK, &s), -EINVAL,
			     "%zu of %zu bytes", cut, size);
	}
	h->size = (uint16_t)size;
	buf[7] = 1000; /* a chain longer than the record */
	cr_assert_eq(rv_raw_dwarf_sample_parse(h, RV_UNWIND_X86_64_REGS_MASK, &s), -EINVAL);
	raw_sample(buf, 5000, 0x401000, PERF_SAMPLE_REGS_ABI_64, STACK_ROOM + 8);
	cr_assert_eq(rv_raw_dwarf_sample_parse(h, RV_UNWIND_X86_64_REGS_MASK, &s), -EINVAL,
		     "a dyn_size above the copy");
}

Test(online_unwind, the_chain_keeps_the_kernel_part_then_the_user_frames_and_the_cut)
{
	uint64_t raw[128], out[64];
	const uint64_t user[] = { 0x401000, 0x402000, 0x403000 };
	struct rv_raw_dwarf_sample s;
	size_t size;

	raw_sample(raw, 5000, 0x401000, PERF_SAMPLE_REGS_ABI_64, STACK_ROOM);
	cr_assert_eq(rv_raw_dwarf_sample_parse((void *)raw, RV_UNWIND_X86_64_REGS_MASK, &s), 0);
	size = rv_chain_sample_build(out, sizeof(out), (void *)raw, &s, user, 3, 8192);
	cr_assert_eq(size, 64 + 8 * 8, "fixed fields, nr, 3 kernel, context, 3 user, marker");
	{
		struct perf_event_header h;

		memcpy(&h, out, sizeof(h));
		cr_assert_eq(h.size, size);
		cr_assert_eq(h.type, PERF_RECORD_SAMPLE);
	}
	cr_assert_eq(memcmp((uint8_t *)out + 8, (uint8_t *)raw + 8, 48), 0,
		     "id, ip, pid/tid, time, cpu and period as they were");
	cr_assert_eq(out[7], 8);
	cr_assert_eq(out[8], PERF_CONTEXT_KERNEL);
	cr_assert_eq(out[10], KERNEL_ADDR + 0x20);
	cr_assert_eq(out[11], PERF_CONTEXT_USER);
	cr_assert_eq(out[12], 0x401000);
	cr_assert_eq(out[14], 0x403000);
	cr_assert_eq(out[15], rv_stack_cut_marker(8192));
	/* not cut: no marker; no user frames (a kernel thread): no user part */
	cr_assert_eq(rv_chain_sample_build(out, sizeof(out), (void *)raw, &s, user, 3, 0),
		     64 + 7 * 8);
	cr_assert_eq(rv_chain_sample_build(out, sizeof(out), (void *)raw, &s, user, 0, 0),
		     64 + 3 * 8);
	cr_assert_eq(out[7], 3);
	/* too small a buffer */
	cr_assert_eq(rv_chain_sample_build(out, 64, (void *)raw, &s, user, 3, 0), 0);
}

Test(online_unwind, the_cut_marker_is_no_address_and_says_what_was_copied)
{
	uint32_t bytes = 0;

	cr_assert(rv_stack_cut_parse(rv_stack_cut_marker(4096), &bytes));
	cr_assert_eq(bytes, 4096);
	cr_assert(rv_stack_cut_parse(rv_stack_cut_marker(65528), &bytes));
	cr_assert_eq(bytes, 65528);
	/* user and kernel addresses are never taken for it, nor perf's contexts */
	cr_assert_not(rv_stack_cut_parse(0x7ffff7a00000ull, &bytes));
	cr_assert_not(rv_stack_cut_parse(0x401000, &bytes));
	cr_assert_not(rv_stack_cut_parse(KERNEL_ADDR, &bytes));
	cr_assert_not(rv_stack_cut_parse(PERF_CONTEXT_USER, &bytes));
	/* below perf's contexts, so perf takes it for an address, not a context
	 * (an unknown context would make it drop the whole chain) */
	cr_assert_lt(rv_stack_cut_marker(UINT32_MAX), PERF_CONTEXT_MAX);
	/* not canonical on x86-64: bits 47..63 differ */
	cr_assert_neq(rv_stack_cut_marker(4096) >> 47, 0);
	cr_assert_neq(rv_stack_cut_marker(4096) >> 47, 0x1ffff);
}

/* The chain written into a capture of the engine's call-chain attribute and
 * read back by the sample decoder. */
Test(online_unwind, the_decoder_reads_the_chain_and_its_cut)
{
	struct perf_event_attr attr = { .size = sizeof(attr),
					.type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK,
					.sample_type = SAMPLE_TYPE,
					.sample_id_all = 1 };
	uint64_t raw[128], out[64], id = 1;
	const uint64_t user[] = { 0x401000, 0x402000 };
	struct rv_raw_dwarf_sample s;
	struct rv_perf_writer *w;
	struct rv_perf_reader *r;
	struct rv_symbolizer *sym;
	struct rv_symbolizer_options so = { 0 };
	struct rv_sample_decoder *d;
	struct rv_error err = { 0 };
	struct rv_event ev;
	char path[] = "/tmp/rv-chain-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	raw_sample(raw, 5000, 0x401000, PERF_SAMPLE_REGS_ABI_64, STACK_ROOM);
	cr_assert_eq(rv_raw_dwarf_sample_parse((void *)raw, RV_UNWIND_X86_64_REGS_MASK, &s), 0);
	cr_assert_eq(rv_perf_writer_open(&w, path, &err), 0, "%s", err.message);
	cr_assert_gt(rv_chain_sample_build(out, sizeof(out), (void *)raw, &s, user, 2, 4096), 0);
	cr_assert_eq(rv_perf_writer_write(w, (void *)out, &err), 0, "%s", err.message);
	raw_sample(raw, 6000, 0x402000, PERF_SAMPLE_REGS_ABI_64, 40);
	cr_assert_eq(rv_raw_dwarf_sample_parse((void *)raw, RV_UNWIND_X86_64_REGS_MASK, &s), 0);
	cr_assert_gt(rv_chain_sample_build(out, sizeof(out), (void *)raw, &s, user, 2, 0), 0);
	cr_assert_eq(rv_perf_writer_write(w, (void *)out, &err), 0, "%s", err.message);
	cr_assert_eq(rv_perf_writer_add_attr(w, &attr, "cpu-clock", &id, 1, &err), 0, "%s",
		     err.message);
	cr_assert_eq(rv_perf_writer_finish(w, NULL, &err), 0, "%s", err.message);
	rv_perf_writer_free(w);

	cr_assert_eq(rv_perf_reader_open(&r, path, &err), 0, "%s", err.message);
	cr_assert_eq(rv_symbolizer_new(&sym, &so, &err), 0);
	cr_assert_eq(rv_sample_decoder_open(&d, r, sym, &err), 0);
	while (rv_sample_decoder_next(d, &ev, &err) == 1 && ev.kind != RV_EVENT_STACK_SAMPLE)
		;
	cr_assert_eq(ev.kind, RV_EVENT_STACK_SAMPLE, "%s", err.message);
	cr_assert_eq(ev.time, 5000);
	cr_assert_eq(ev.stack.cut_bytes, 4096, "the marker says the stack was cut");
	cr_assert_eq(ev.stack.nr_frames, 4, "2 kernel and 2 user frames; the marker is none");
	cr_assert(ev.stack.frames[0].kernel);
	cr_assert_eq(ev.stack.frames[2].addr, 0x401000);
	cr_assert_not(ev.stack.frames[2].kernel);
	cr_assert(ev.stack.frames[2].is_ip);
	cr_assert_eq(ev.stack.frames[3].addr, 0x402000);
	while (rv_sample_decoder_next(d, &ev, &err) == 1 && ev.kind != RV_EVENT_STACK_SAMPLE)
		;
	cr_assert_eq(ev.kind, RV_EVENT_STACK_SAMPLE);
	cr_assert_eq(ev.time, 6000);
	cr_assert_eq(ev.stack.cut_bytes, 0);
	cr_assert_eq(ev.stack.nr_frames, 4);
	rv_sample_decoder_free(d);
	rv_symbolizer_free(sym);
	rv_perf_reader_free(r);
	unlink(path);
}

struct taken {
	uint64_t times[64];
	size_t streams[64];
	uint64_t chain_len[64];
	uint64_t last_user[64];
	size_t n;
};

static int take(void *ctx, const struct perf_event_header *rec, size_t stream, uint64_t time)
{
	struct taken *t = ctx;
	uint64_t nr;

	cr_assert_lt(t->n, 64);
	memcpy(&nr, (const uint8_t *)rec + 56, 8);
	t->times[t->n] = time;
	t->streams[t->n] = stream;
	t->chain_len[t->n] = nr;
	memcpy(&t->last_user[t->n], (const uint8_t *)rec + 64 + (nr - 1) * 8, 8);
	t->n++;
	return 0;
}

/* With no mappings the thread unwinds nothing past the IP: the samples come
 * out in order with their kernel part, PERF_CONTEXT_USER and the IP. */
Test(online_unwind, samples_come_out_in_the_order_they_went_in)
{
	struct rv_online_unwind_config c = { .regs_mask = RV_UNWIND_X86_64_REGS_MASK };
	struct rv_online_unwind *u;
	struct rv_online_unwind_stats st;
	struct rv_error err = { 0 };
	struct taken t = { 0 };
	uint64_t raw[128];

	cr_assert_eq(rv_online_unwind_new(&u, &c, &err), 0, "%s", err.message);
	for (int i = 0; i < 20; i++) {
		raw_sample(raw, 1000 + (uint64_t)i, 0x401000 + (uint64_t)i,
			   i == 5 ? 0 : PERF_SAMPLE_REGS_ABI_64, 40);
		cr_assert_eq(rv_online_unwind_push_sample(u, (void *)raw, (size_t)i % 2,
							  1000 + (uint64_t)i, &err),
			     0);
	}
	rv_online_unwind_flush(u);
	cr_assert_eq(rv_online_unwind_oldest(u), 1000, "nothing taken yet");
	cr_assert_eq(rv_online_unwind_take(u, take, &t), 0);
	cr_assert_eq(rv_online_unwind_oldest(u), UINT64_MAX);
	cr_assert_eq(t.n, 20);
	for (size_t i = 0; i < 20; i++) {
		cr_assert_eq(t.times[i], 1000 + i);
		cr_assert_eq(t.streams[i], i % 2);
		if (i == 5) {
			cr_assert_eq(t.chain_len[i], 3, "no user registers: the kernel part alone");
		} else {
			cr_assert_eq(t.chain_len[i], 5);
			cr_assert_eq(t.last_user[i], 0x401000 + i);
		}
	}
	rv_online_unwind_stats(u, &st);
	cr_assert_eq(st.queued, 20);
	cr_assert_eq(st.unwound, 20);
	cr_assert_eq(st.not_unwound, 0);
	cr_assert_eq(st.cut, 0);
	rv_online_unwind_free(u);
}

/* The engine drains one CPU's ring, then the next: what it pushes is in
 * time order per stream only. Nothing is unwound before a release; a release
 * hands over what is older than it in time order across the streams, and
 * keeps the rest for later (counted by oldest); flush releases everything. */
Test(online_unwind, a_release_takes_what_is_older_in_time_order)
{
	struct rv_online_unwind_config c = { .regs_mask = RV_UNWIND_X86_64_REGS_MASK };
	struct rv_online_unwind *u;
	struct rv_error err = { 0 };
	struct taken t = { 0 };
	uint64_t raw[128];
	/* stream 1 (read first) has 2000.., stream 0 1000.. and 2500.. */
	const uint64_t times[] = { 2000, 2100, 2200, 1000, 1500, 2150, 2500, 2600 };
	const size_t streams[] = { 1, 1, 1, 0, 0, 0, 0, 0 };
	const uint64_t first[] = { 1000, 1500, 2000, 2100, 2150, 2200 };

	cr_assert_eq(rv_online_unwind_new(&u, &c, &err), 0, "%s", err.message);
	for (size_t i = 0; i < 8; i++) {
		raw_sample(raw, times[i], 0x401000 + times[i], PERF_SAMPLE_REGS_ABI_64, 40);
		cr_assert_eq(
			rv_online_unwind_push_sample(u, (void *)raw, streams[i], times[i], &err),
			0);
	}
	cr_assert_eq(rv_online_unwind_oldest(u), 1000, "what is pending counts");
	cr_assert_eq(rv_online_unwind_take(u, take, &t), 0);
	cr_assert_eq(t.n, 0, "nothing is unwound before a release");
	rv_online_unwind_release(u, 2500);
	/* wait for the thread without releasing the rest: take until six */
	for (int spins = 0; t.n < 6 && spins < 5000; spins++) {
		cr_assert_eq(rv_online_unwind_take(u, take, &t), 0);
		if (t.n < 6)
			usleep(1000);
	}
	cr_assert_eq(t.n, 6, "what is older than the release, and only that");
	for (size_t i = 0; i < 6; i++) {
		cr_assert_eq(t.times[i], first[i], "sample %zu", i);
		cr_assert_eq(t.last_user[i], 0x401000 + first[i]);
	}
	cr_assert_eq(rv_online_unwind_oldest(u), 2500, "the rest waits");
	rv_online_unwind_flush(u);
	cr_assert_eq(rv_online_unwind_take(u, take, &t), 0);
	cr_assert_eq(t.n, 8);
	cr_assert_eq(t.times[6], 2500);
	cr_assert_eq(t.times[7], 2600);
	cr_assert_eq(t.streams[6], 0);
	rv_online_unwind_free(u);
}

/* A queue too small for one raw sample: every sample is kept with its IP
 * alone, counted, and none is lost. */
Test(online_unwind, a_full_queue_keeps_the_ip_and_counts)
{
	struct rv_online_unwind_config c = { .regs_mask = RV_UNWIND_X86_64_REGS_MASK,
					     .max_queued_bytes = 64 };
	struct rv_online_unwind *u;
	struct rv_online_unwind_stats st;
	struct rv_error err = { 0 };
	struct taken t = { 0 };
	uint64_t raw[128];

	cr_assert_eq(rv_online_unwind_new(&u, &c, &err), 0, "%s", err.message);
	for (int i = 0; i < 10; i++) {
		raw_sample(raw, 1000 + (uint64_t)i, 0x401000 + (uint64_t)i, PERF_SAMPLE_REGS_ABI_64,
			   40);
		cr_assert_eq(
			rv_online_unwind_push_sample(u, (void *)raw, 0, 1000 + (uint64_t)i, &err),
			0);
	}
	rv_online_unwind_flush(u);
	cr_assert_eq(rv_online_unwind_take(u, take, &t), 0);
	cr_assert_eq(t.n, 10);
	for (size_t i = 0; i < 10; i++) {
		cr_assert_eq(t.times[i], 1000 + i);
		cr_assert_eq(t.chain_len[i], 5);
		cr_assert_eq(t.last_user[i], 0x401000 + i, "the IP is kept");
	}
	rv_online_unwind_stats(u, &st);
	cr_assert_eq(st.not_unwound, 10);
	cr_assert_eq(st.unwound, 0);
	rv_online_unwind_free(u);
}

Test(online_unwind, callgraph_mode_dwarf_takes_a_size_in_bytes)
{
	enum rv_callgraph_mode mode = RV_CALLGRAPH_DEFAULT;
	struct rv_error err = { 0 };
	uint32_t bytes = 1;

	cr_assert_eq(rv_parse_callgraph("dwarf", &mode, &bytes, &err), 0);
	cr_assert_eq(mode, RV_CALLGRAPH_DWARF);
	cr_assert_eq(bytes, 0, "the default size");
	cr_assert_eq(rv_parse_callgraph("dwarf,4096", &mode, &bytes, &err), 0);
	cr_assert_eq(bytes, 4096);
	cr_assert_eq(rv_parse_callgraph("dwarf,1001", &mode, &bytes, &err), 0);
	cr_assert_eq(bytes, 1008, "rounded up to 8");
	cr_assert_eq(rv_parse_callgraph("dwarf,65528", &mode, &bytes, &err), 0);
	cr_assert_eq(bytes, 65528);
	cr_assert_eq(rv_parse_callgraph("fp", &mode, &bytes, &err), 0);
	cr_assert_eq(mode, RV_CALLGRAPH_FP);
	cr_assert_eq(bytes, 0);

	cr_assert_eq(rv_parse_callgraph("dwarf,65529", &mode, &bytes, &err), -EINVAL);
	cr_assert(strstr(err.message, "65528"), "%s", err.message);
	cr_assert_eq(rv_parse_callgraph("dwarf,0", &mode, &bytes, &err), -EINVAL);
	cr_assert(strstr(err.message, "from 8"), "%s", err.message);
	cr_assert_eq(rv_parse_callgraph("dwarf,", &mode, &bytes, &err), -EINVAL);
	cr_assert(strstr(err.message, "dwarf,16384"), "%s", err.message);
	cr_assert_eq(rv_parse_callgraph("dwarf,8k", &mode, &bytes, &err), -EINVAL);
	cr_assert_eq(rv_parse_callgraph("dwarf,-8", &mode, &bytes, &err), -EINVAL);
	cr_assert_eq(rv_parse_callgraph("fp,8", &mode, &bytes, &err), -EINVAL);
}
