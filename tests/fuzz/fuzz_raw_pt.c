/* fuzz_raw_pt.c: a raw Intel PT dump (rearview decode --raw-pt) over a
 * fixed image: the fuzzed bytes written as the dump in the harness's
 * scratch directory and decoded by rv_raw_pt_decode, on one thread, over
 * the code of tests/pt/recursion (a static program: its executable
 * segment, .init to .fini, cut out by mk/fuzz.mk into
 * build-fuzz/fuzz/raw_pt.image, at the address written beside it in
 * raw_pt.addr). Seeds: softpt's packets of that program
 * (tools/fuzz-seeds takes them out of its capture). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "decode/raw_pt.h"

#ifndef RV_FUZZ_DIR
#error "RV_FUZZ_DIR (the harnesses' build directory) is set by mk/fuzz.mk"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct rv_raw_pt_image image = { .path = RV_FUZZ_DIR "/raw_pt.image" };

static volatile uint64_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t size;
	uint8_t *text = fuzz_read_build_file(RV_FUZZ_DIR "/raw_pt.addr", &size);
	char *addr = strndup((const char *)text, size);

	if (!addr || sscanf(addr, "%" SCNx64, &image.addr) != 1) {
		fprintf(stderr, "fuzz: %s/raw_pt.addr holds no address\n", RV_FUZZ_DIR);
		abort();
	}
	free(addr);
	free(text);
	fuzz_scratch_dir();
	return 0;
}

static int count(void *ctx, const struct rv_event *ev, struct rv_error *err)
{
	sink++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dump[4096];
	struct rv_raw_pt_options o = {
		.path = dump, .images = &image, .nr_images = 1, .jobs = 1, .count_packets = true
	};
	struct rv_raw_pt_coverage coverage = { 0 };
	struct rv_pt_stats stats = { 0 };
	struct rv_error err = { 0 };
	uint64_t packets = 0;

	fuzz_write_file(dump, sizeof(dump), "trace.pt", data, size);
	rv_raw_pt_decode(&o, count, NULL, &stats, &packets, &coverage, &err);
	sink += packets + coverage.undecoded_packets;
	unlink(dump);
	return 0;
}
