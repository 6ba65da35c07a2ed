/* test_raw_pt.c: a raw PT dump over flat images (decode/raw_pt.h), on the
 * real-hardware traces of ../shared/pt-corpus: how much of the trace
 * decoded with the right image, the wrong address, another program's image
 * and bytes flipped in the trace; and the inputs refused before decoding
 * (an empty or missing dump, one without a PSB, empty and directory images,
 * an image that wraps past 2^64, overlapping images), each with its
 * message.
 */
#include <criterion/criterion.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/raw_pt.h"
#include "test_env.h"
#include "test_files.h"

static int count_events(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	(void)ev;
	(void)err;
	(*(uint64_t *)ctx)++;
	return 0;
}

struct raw_run {
	struct rv_pt_stats stats;
	struct rv_raw_pt_coverage coverage;
	uint64_t events;
	int ret;
	struct rv_error err;
};

static int count_batch(void *ctx, const struct rv_event *evs, size_t n, struct rv_error *err)
{
	(void)evs;
	(void)err;
	*(uint64_t *)ctx += n;
	return 0;
}

/* batches: the sink's batch form is given too */
static void decode_as(const char *trace, const char *image, uint64_t addr, bool batches,
		      struct raw_run *run)
{
	struct rv_raw_pt_image im = { .path = image, .addr = addr };
	struct rv_raw_pt_options o = {
		.path = trace,
		.images = &im,
		.nr_images = 1,
		.jobs = 2,
		.sink_batch = batches ? count_batch : NULL,
	};

	memset(run, 0, sizeof(*run));
	run->ret = rv_raw_pt_decode(&o, count_events, &run->events, &run->stats, NULL,
				    &run->coverage, &run->err);
}

static void decode(const char *trace, const char *image, uint64_t addr, struct raw_run *run)
{
	decode_as(trace, image, addr, false, run);
}

static unsigned undecoded_percent(const struct raw_run *run)
{
	cr_assert_gt(run->coverage.branch_packets, 0);
	return (unsigned)(100 * run->coverage.undecoded_packets / run->coverage.branch_packets);
}

Test(raw_pt, right_image_decodes_all)
{
	char trace[4096], image[4096];
	struct raw_run run;

	corpus_path(trace, sizeof(trace), "Unzip/trace.pt");
	corpus_path(image, sizeof(image), "Unzip/image.bin");
	decode(trace, image, 0x400000, &run);
	cr_assert_eq(run.ret, 0, "%s", run.err.message);
	cr_assert_eq(run.stats.insns, 149576);
	cr_assert_eq(run.stats.errors, 0);
	cr_assert_eq(run.coverage.undecoded_packets, 0);
}

/* One page off: the code decodes as garbage for a while, then errors at
 * every stretch. */
Test(raw_pt, wrong_address_loses_most)
{
	char trace[4096], image[4096];
	struct raw_run run;

	corpus_path(trace, sizeof(trace), "Unzip/trace.pt");
	corpus_path(image, sizeof(image), "Unzip/image.bin");
	decode(trace, image, 0x401000, &run);
	cr_assert_eq(run.ret, 0, "%s", run.err.message);
	cr_assert_gt(run.stats.errors, 0);
	cr_assert_geq(undecoded_percent(&run), 95, "%" PRIu64 " of %" PRIu64,
		      run.coverage.undecoded_packets, run.coverage.branch_packets);

	/* beyond the code: not an instruction decodes (the stretches with
	 * nothing to decode, a TIP.PGE and its TIP.PGD, count as decoded) */
	decode(trace, image, 0x500000, &run);
	cr_assert_eq(run.ret, 0, "%s", run.err.message);
	cr_assert_eq(run.stats.insns, 0);
	cr_assert_eq(run.stats.nomap, run.stats.errors);
	cr_assert_geq(undecoded_percent(&run), 99, "%" PRIu64 " of %" PRIu64,
		      run.coverage.undecoded_packets, run.coverage.branch_packets);
}

/* mruby's image where Unzip's was: it covers the same addresses, and
 * decodes longer (more instructions than Unzip's own) before each error. */
Test(raw_pt, wrong_image_loses_most)
{
	char trace[4096], image[4096];
	struct raw_run run;

	corpus_path(trace, sizeof(trace), "Unzip/trace.pt");
	corpus_path(image, sizeof(image), "mruby/image.bin");
	decode(trace, image, 0x400000, &run);
	cr_assert_eq(run.ret, 0, "%s", run.err.message);
	cr_assert_gt(run.stats.insns, 0);
	cr_assert_gt(run.stats.errors, 0);
	cr_assert_gt(undecoded_percent(&run), 50, "%" PRIu64 " of %" PRIu64,
		     run.coverage.undecoded_packets, run.coverage.branch_packets);
}

/* A damaged trace with the right image loses the stretches of its errors
 * only, whether the sink takes its events one by one or in batches. */
Test(raw_pt, flipped_bytes_lose_little)
{
	char trace[4096], image[4096], *dir = new_temp_dir("rv-rawpt");
	char *copy = path_join(dir, "flipped.pt");
	size_t size;
	uint8_t *bytes;
	struct raw_run run;

	corpus_path(trace, sizeof(trace), "mruby/trace.pt");
	corpus_path(image, sizeof(image), "mruby/image.bin");
	bytes = read_whole(trace, &size);
	srand(3);
	for (int i = 0; i < 5; i++)
		bytes[(size_t)rand() % size] ^= 0x5a;
	write_file(copy, bytes, size);
	decode(copy, image, 0x400000, &run);
	cr_assert_eq(run.ret, 0, "%s", run.err.message);
	cr_assert_gt(run.stats.errors, 0, "the flips were meant to break the trace");
	cr_assert_lt(100 * run.coverage.undecoded_packets, run.coverage.branch_packets,
		     "%" PRIu64 " of %" PRIu64 " lost: more than 1%%",
		     run.coverage.undecoded_packets, run.coverage.branch_packets);
	cr_assert_gt(run.coverage.undecoded_packets, 0);

	/* the errors are noted the same when the sink takes batches */
	struct raw_run batched;

	decode_as(copy, image, 0x400000, true, &batched);
	cr_assert_eq(batched.ret, 0, "%s", batched.err.message);
	cr_assert_eq(batched.events, run.events);
	cr_assert_eq(batched.stats.errors, run.stats.errors);
	cr_assert_eq(batched.coverage.undecoded_packets, run.coverage.undecoded_packets);
	cr_assert_eq(batched.coverage.branch_packets, run.coverage.branch_packets);
	free(bytes);
	free(copy);
	free_temp_dir(dir);
}

static void expect_refused(const char *trace, const struct rv_raw_pt_image *images, size_t nr,
			   const char *says)
{
	struct rv_raw_pt_options o = { .path = trace, .images = images, .nr_images = nr };
	struct rv_pt_stats stats;
	struct rv_error err = { 0 };
	uint64_t events = 0;
	int ret = rv_raw_pt_decode(&o, count_events, &events, &stats, NULL, NULL, &err);

	cr_assert_lt(ret, 0, "'%s' was not refused", says);
	cr_assert_str_eq(err.message, says);
	cr_assert_eq(events, 0);
}

Test(raw_pt, bad_inputs_refused_in_words)
{
	char trace[1024], image[1024], mruby[1024], msg[4096];
	char *dir = new_temp_dir("rv-rawpt"), *empty = path_join(dir, "empty");
	char *text = path_join(dir, "text.pt");

	corpus_path(trace, sizeof(trace), "Unzip/trace.pt");
	corpus_path(image, sizeof(image), "Unzip/image.bin");
	corpus_path(mruby, sizeof(mruby), "mruby/image.bin");
	write_file(empty, "", 0);
	write_file(text, "not a trace\n", 12);
	{
		struct rv_raw_pt_image im = { .path = image, .addr = 0x400000 };

		snprintf(msg, sizeof(msg),
			 "raw PT trace '%s' is empty; give the file of raw PT packets", empty);
		expect_refused(empty, &im, 1, msg);
		snprintf(msg, sizeof(msg),
			 "raw PT trace '%s' is a directory; give the file of raw PT packets", dir);
		expect_refused(dir, &im, 1, msg);
		snprintf(msg, sizeof(msg),
			 "raw PT trace '%s' holds no PSB packet, where decoding could begin: it "
			 "is not raw Intel PT (perf.data is decoded without --raw-pt), or it "
			 "was cut before its first PSB",
			 text);
		expect_refused(text, &im, 1, msg);
	}
	{
		struct rv_raw_pt_image im = { .path = empty, .addr = 0x400000 };

		snprintf(msg, sizeof(msg),
			 "--image '%s' is empty; give the file of the code's bytes as they were "
			 "in memory",
			 empty);
		expect_refused(trace, &im, 1, msg);
		im.path = dir;
		snprintf(msg, sizeof(msg),
			 "--image '%s' is a directory; give the file of the code's bytes as they "
			 "were in memory",
			 dir);
		expect_refused(trace, &im, 1, msg);
		im.path = "/nonexistent/image.bin";
		expect_refused(trace, &im, 1,
			       "cannot read --image '/nonexistent/image.bin': No such file or "
			       "directory");
	}
	{
		/* 159,744 bytes: the last one at 2^64 - 1 fits, one more wraps */
		struct rv_raw_pt_image im = { .path = image, .addr = 0xfffffffffffd9001ull };
		uint64_t size;
		struct rv_error err = { 0 };

		snprintf(msg, sizeof(msg),
			 "--image '%s' at 0xfffffffffffd9001 would end past the top of the "
			 "address space (it is 159744 bytes); check its address",
			 image);
		expect_refused(trace, &im, 1, msg);
		im.addr = 0xfffffffffffd9000ull;
		cr_assert_eq(rv_raw_pt_check_images(&im, 1, &size, &err), 0, "%s", err.message);
		cr_assert_eq(size, 159744);
	}
	{
		struct rv_raw_pt_image two[] = { { .path = image, .addr = 0x400000 },
						 { .path = mruby, .addr = 0x426fff } };
		uint64_t sizes[2];
		struct rv_error err = { 0 };

		snprintf(msg, sizeof(msg),
			 "--image '%s' at [0x426fff, 0x4dcffe] overlaps --image '%s' at "
			 "[0x400000, 0x426fff]; give each image the address it was loaded at",
			 mruby, image);
		expect_refused(trace, two, 2, msg);
		/* side by side is no overlap */
		two[1].addr = 0x427000;
		cr_assert_eq(rv_raw_pt_check_images(two, 2, sizes, &err), 0, "%s", err.message);
	}
	free(empty);
	free(text);
	free_temp_dir(dir);
}

/* A trace that enters a loop of one direct jump (`jmp .`) and says nothing
 * more: no packet will ever end the loop. libipt followed the jump by
 * recursing inside one block, once per turn, until the stack overflowed
 * (SIGSEGV: the raw PT fuzz harness found it; blocks now end at jumps),
 * and the stall was counted in blocks only, so longer loops took minutes.
 * Decoding stops it after a bounded number of instructions. */
Test(raw_pt, a_loop_without_packets_stops_after_bounded_instructions, .timeout = 60)
{
	static const uint8_t jump_to_itself[16] = { 0xeb, 0xfe };
	uint8_t trace[256];
	struct pt_config config;
	struct pt_encoder *enc;
	struct pt_packet packets[4] = {
		{ .type = ppt_psb },
		{ .type = ppt_mode,
		  .payload.mode = { .leaf = pt_mol_exec, .bits.exec = { .csl = 1 } } },
		{ .type = ppt_psbend },
		{ .type = ppt_tip_pge, .payload.ip = { .ipc = pt_ipc_sext_48, .ip = 0x1000 } },
	};
	char *dir = new_temp_dir("raw-pt-loop");
	char *trace_path = path_join(dir, "loop.pt"), *image_path = path_join(dir, "loop.bin");
	struct raw_run run;
	uint64_t len;

	memset(trace, 0, sizeof(trace));
	pt_config_init(&config);
	config.begin = trace;
	config.end = trace + sizeof(trace);
	enc = pt_alloc_encoder(&config);
	cr_assert_not_null(enc);
	for (size_t i = 0; i < 4; i++)
		cr_assert_geq(pt_enc_next(enc, &packets[i]), 0, "packet %zu", i);
	cr_assert_eq(pt_enc_get_offset(enc, &len), 0);
	pt_free_encoder(enc);
	write_file(trace_path, trace, len);
	write_file(image_path, jump_to_itself, sizeof(jump_to_itself));

	decode(trace_path, image_path, 0x1000, &run);
	cr_assert_gt(run.stats.insns, 0, "the loop was decoded");
	cr_assert_leq(run.stats.insns, 1u << 22, "and stopped within a bounded count: %" PRIu64,
		      run.stats.insns);
	free(trace_path);
	free(image_path);
	free_temp_dir(dir);
}
