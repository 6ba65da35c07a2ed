/* fuzz_decode.c: a whole `rearview decode CAPTURE -o TRACE`: the fuzzed
 * bytes written as a perf.data in the harness's scratch directory, then
 * rv_render (decoder -> builder -> writer, with the summary), as
 * src/cmd/decode.c calls it, into a trace in the same directory, FXT or
 * JSON by the input's last byte. One decoding thread, so that a run is
 * deterministic. The summary render.c prints on stderr is sent to
 * /dev/null while it runs (ASan and libFuzzer write to descriptor 2, not
 * through stdio, and keep reporting). Seeds: sampling, uprobe and softpt
 * captures, small. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "render/render.h"
#include "write/trace_writer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *quiet;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* No debuginfod: a missing binary's build id must not go to the network. */
	unsetenv("DEBUGINFOD_URLS");
	quiet = fopen("/dev/null", "w");
	if (!quiet)
		abort();
	fuzz_scratch_dir();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char capture[4096], trace[4096];
	struct rv_render_options ro = { 0 };
	struct rv_trace_writer *writer = NULL;
	struct rv_error err = { 0 };
	FILE *saved = stderr;
	bool json = size && (data[size - 1] & 1);

	fuzz_write_file(capture, sizeof(capture), "perf.data", data, size);
	fuzz_scratch_path(trace, sizeof(trace), json ? "trace.json" : "trace.fxt");
	ro.decode.path = capture;
	ro.decode.kind = RV_CAPTURE_AUTO;
	ro.decode.jobs = 1;
	if (rv_trace_writer_open(&writer, trace, &err))
		abort(); /* the scratch directory is ours: this cannot fail */
	stderr = quiet;
	rv_render(&ro, writer, &err);
	stderr = saved;
	rv_trace_writer_free(writer);
	unlink(trace);
	unlink(capture);
	return 0;
}
