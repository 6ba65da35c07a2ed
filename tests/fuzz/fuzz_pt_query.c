/* fuzz_pt_query.c: rearview's packet layer (decode/pt_query.h) against
 * libipt's query decoder, in lock step (tests/support/pt_query_lockstep.h)
 * over the fuzzed bytes as one chunk: from its start, without BDM70's
 * workaround nor a timing configuration (libipt's defaults), and with both
 * (softpt's CPUID 0x15 ratio and nominal frequency, an MTC frequency of the
 * input's size modulo 16), the queries chosen by two seeds, the chunk
 * checked whole first by the layer or not. Any answer that differs where
 * the layer did not decline first aborts, naming it. Seeds: chunks of
 * ../shared/pt-corpus's recordings (a PSB to the next), the first 4 KiB of
 * softpt captures of tests/pt/recursion with timing packets (MTC, CYC, TSC
 * only, high resolution, an overflow) and a few made-up traces (an
 * overflow, MODE.TSX, events bound to a TIP).
 *
 * Not here: the walk over the answers (fuzz_pt_fast.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "pt_query_lockstep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* what the layer took, said at exit: all declined would test nothing */
static uint64_t runs, declined;

static void say_share(void)
{
	fprintf(stderr,
		"fuzz: pt_query: rearview's layer declined %" PRIu64 " of %" PRIu64 " runs\n",
		declined, runs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool said;
	struct pt_config config;

	if (!said) {
		atexit(say_share);
		said = true;
	}
	pt_config_init(&config);
	config.begin = (uint8_t *)data;
	config.end = (uint8_t *)data + size;
	for (int bdm70 = 0; bdm70 < 2; bdm70++) {
		for (uint64_t seed = 1; seed <= 2; seed++) {
			struct pq_lockstep r;

			config.errata.bdm70 = bdm70;
			config.cpuid_0x15_eax = bdm70 ? 1 : 0;
			config.cpuid_0x15_ebx = bdm70 ? 100 : 0;
			config.nom_freq = bdm70 ? 24 : 0;
			config.mtc_freq = bdm70 ? (uint8_t)(size % 16) : 0;
			/* seed 1: checked whole first; 2: its PSB+ only */
			if (!pq_lockstep_run(&config, 0, seed == 1, seed, 1u << 20, &r))
				abort();
			if (r.differ) {
				fprintf(stderr, "fuzz: pt_query: bdm70 %d, seed %" PRIu64 ": %s\n",
					bdm70, seed, r.text);
				abort();
			}
			runs++;
			declined += r.declined;
		}
	}
	return 0;
}
