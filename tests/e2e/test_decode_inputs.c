/* test_decode_inputs.c: `rearview decode` given the wrong input says so, in
 * one line that names the input and what to do, and the exit status tells
 * whether a trace was written:
 *
 * - the real-hardware raw traces of ../shared/pt-corpus with a wrong load
 *   address or another program's image: most of the trace not decoded is a
 *   warning naming every image and its address (exit 0, a trace); nothing
 *   decoded is an error (exit 1, no trace);
 * - --image files refused before decoding: empty, a directory, an address
 *   whose end wraps past 2^64, two images that overlap (both named), bad
 *   address syntax; a --raw-pt dump that is empty, a directory or not PT;
 * - captures cut short (perf-4.14, file and pipe mode, a file and standard
 *   input): in the header, in a record, inside the first AUX payload (an
 *   error, nothing before it) and inside the second (a warning, the trace
 *   before it kept): each exact message, its prefix given once;
 * - things that are not captures: a directory without perf.data, gzip and
 *   zstd files, an ELF program, a raw PT dump, a trace rearview wrote.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "test_files.h"

#define ERROR	    "rearview: error: "
#define WARNING	    "rearview: warning: "
#define CHECK_IMAGE "check --image (the file, and the address it was loaded at)"

struct decode_case {
	char dir[64];
	char out[128];
	char corpus[1024];
	struct proc_result *r;
};

static void setup(struct decode_case *c)
{
	c->r = calloc(1, sizeof(*c->r));
	cr_assert_not_null(c->r);
	make_test_dir(c->dir, sizeof(c->dir));
	snprintf(c->out, sizeof(c->out), "%s/out.fxt", c->dir);
	corpus_path(c->corpus, sizeof(c->corpus), "README.md");
	*strrchr(c->corpus, '/') = '\0';
}

static void teardown(struct decode_case *c)
{
	cleanup_dir(c->dir);
	free(c->r);
}

/* `rearview decode ARGS... -o OUT` (args NULL-terminated). */
static void decode(struct decode_case *c, const char *const *args)
{
	char *argv[24];
	int n = 0;

	argv[n++] = (char *)build_path("rearview");
	argv[n++] = "decode";
	for (; *args && n < 20; args++)
		argv[n++] = (char *)*args;
	argv[n++] = "-o";
	argv[n++] = c->out;
	argv[n] = NULL;
	unlink(c->out);
	run_process(argv, 120, c->r);
}

/* Exit 1, nothing written, and stderr exactly one line: ERROR message. */
static void expect_refused(struct decode_case *c, const char *message)
{
	char want[4096];

	snprintf(want, sizeof(want), ERROR "%s\n", message);
	cr_assert_eq(c->r->exit_code, 1, "exit %d: %s", c->r->exit_code, c->r->err);
	cr_assert_str_eq(c->r->err, want);
	cr_assert(!file_exists(c->out), "a trace was written");
}

/* ---- raw traces with the wrong image or address ---- */

Test(decode_inputs, raw_wrong_address_decodes_nothing, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], image[1200], want_start[2048], want_end[2048];
	const char *line;

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/Unzip/trace.pt", c.corpus);
	snprintf(image, sizeof(image), "%s/Unzip/image.bin@0x500000", c.corpus);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", image, NULL });
	/* "nothing in T decoded (N decode errors, N for code outside the
	 * images): the image I at 0x500000 does not fit the trace; check ..." */
	cr_assert_eq(c.r->exit_code, 1, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_eq(count_lines(c.r->err), 1, "%s", c.r->err);
	snprintf(want_start, sizeof(want_start), ERROR "nothing in '%s' decoded (", trace);
	snprintf(want_end, sizeof(want_end),
		 " for code outside the images): the image '%s/Unzip/image.bin' at 0x500000 "
		 "does not fit the trace; " CHECK_IMAGE "\n",
		 c.corpus);
	line = c.r->err;
	cr_assert(!strncmp(line, want_start, strlen(want_start)), "%s", line);
	cr_assert(strlen(line) > strlen(want_end) &&
			  !strcmp(line + strlen(line) - strlen(want_end), want_end),
		  "%s", line);
	cr_assert(!file_exists(c.out), "nothing decoded, yet a trace was written");
	teardown(&c);
}

/* The percentage from the warning "N% of the trace did not decode", or -1
 * when there is none. */
static int undecoded_percent(const char *err)
{
	const char *p = strstr(err, "% of the trace did not decode (");
	const char *digits;

	if (!p)
		return -1;
	for (digits = p; digits > err && digits[-1] >= '0' && digits[-1] <= '9';)
		digits--;
	cr_assert(digits - err >= (ptrdiff_t)strlen(WARNING) &&
			  !strncmp(digits - strlen(WARNING), WARNING, strlen(WARNING)),
		  "not a warning of its own: %s", err);
	return atoi(digits);
}

Test(decode_inputs, raw_wrong_address_decodes_little, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], image[1200], names[2048];

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/Unzip/trace.pt", c.corpus);
	snprintf(image, sizeof(image), "%s/Unzip/image.bin@0x401000", c.corpus);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", image, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_geq(undecoded_percent(c.r->err), 95, "%s", c.r->err);
	snprintf(names, sizeof(names),
		 " decode errors): the image '%s/Unzip/image.bin' at 0x401000 does not fit the "
		 "trace; " CHECK_IMAGE "\n",
		 c.corpus);
	cr_assert(strstr(c.r->err, names), "%s", c.r->err);
	cr_assert(file_exists(c.out), "some of it decoded: the trace is written");
	teardown(&c);
}

/* mruby's image where Unzip's belongs: it covers the same addresses and
 * decodes a while before each error. */
Test(decode_inputs, raw_wrong_image, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], image[1200], names[2048];

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/Unzip/trace.pt", c.corpus);
	snprintf(image, sizeof(image), "%s/mruby/image.bin@0x400000", c.corpus);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", image, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_gt(undecoded_percent(c.r->err), 50, "%s", c.r->err);
	snprintf(
		names, sizeof(names),
		"): the image '%s/mruby/image.bin' at 0x400000 does not fit the trace; " CHECK_IMAGE
		"\n",
		c.corpus);
	cr_assert(strstr(c.r->err, names), "%s", c.r->err);
	teardown(&c);
}

/* Several images: every one named, with its address. */
Test(decode_inputs, raw_wrong_images_all_named, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], images[2400], names[2400];

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/foo/trace.pt", c.corpus);
	snprintf(images, sizeof(images), "%s/Unzip/image.bin@0x400000,%s/mruby/image.bin@%s",
		 c.corpus, c.corpus, "0x7ffff7819000");
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", images, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_gt(undecoded_percent(c.r->err), 50, "%s", c.r->err);
	snprintf(names, sizeof(names),
		 "): the images '%s/Unzip/image.bin' at 0x400000 and '%s/mruby/image.bin' at "
		 "0x7ffff7819000 do not fit the trace; " CHECK_IMAGE "\n",
		 c.corpus, c.corpus);
	cr_assert(strstr(c.r->err, names), "%s", c.r->err);
	teardown(&c);
}

/* The right image and address: not a word about it. */
Test(decode_inputs, raw_right_image_says_nothing, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], image[1200];

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/foo/trace.pt", c.corpus);
	snprintf(image, sizeof(image), "%s/foo/image.bin@0x7ffff7819000", c.corpus);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", image, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_eq(undecoded_percent(c.r->err), -1, "%s", c.r->err);
	cr_assert_null(strstr(c.r->err, "warning"), "%s", c.r->err);
	teardown(&c);
}

/* ---- inputs refused before decoding ---- */

Test(decode_inputs, images_refused, .timeout = 120)
{
	struct decode_case c;
	char trace[1100], unzip[1100], mruby[1100], empty[128], spec[2400], want[4096];

	setup(&c);
	snprintf(trace, sizeof(trace), "%s/Unzip/trace.pt", c.corpus);
	snprintf(unzip, sizeof(unzip), "%s/Unzip/image.bin", c.corpus);
	snprintf(mruby, sizeof(mruby), "%s/mruby/image.bin", c.corpus);
	snprintf(empty, sizeof(empty), "%s/empty.bin", c.dir);
	write_file(empty, "", 0);

	snprintf(spec, sizeof(spec), "%s@0x400000", empty);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", spec, NULL });
	snprintf(want, sizeof(want),
		 "--image '%s' is empty; give the file of the code's bytes as they were in "
		 "memory",
		 empty);
	expect_refused(&c, want);

	snprintf(spec, sizeof(spec), "%s@0x400000", c.dir);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", spec, NULL });
	snprintf(want, sizeof(want),
		 "--image '%s' is a directory; give the file of the code's bytes as they were "
		 "in memory",
		 c.dir);
	expect_refused(&c, want);

	/* 159,744 bytes from 2^64 - 4096 */
	snprintf(spec, sizeof(spec), "%s@0xfffffffffffff000", unzip);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", spec, NULL });
	snprintf(want, sizeof(want),
		 "--image '%s' at 0xfffffffffffff000 would end past the top of the address "
		 "space (it is 159744 bytes); check its address",
		 unzip);
	expect_refused(&c, want);

	snprintf(spec, sizeof(spec), "%s@0x400000,%s@0x410000", unzip, mruby);
	decode(&c, (const char *[]){ "--raw-pt", trace, "--image", spec, NULL });
	snprintf(want, sizeof(want),
		 "--image '%s' at [0x410000, 0x4c5fff] overlaps --image '%s' at [0x400000, "
		 "0x426fff]; give each image the address it was loaded at",
		 mruby, unzip);
	expect_refused(&c, want);
	teardown(&c);
}

Test(decode_inputs, image_address_syntax, .timeout = 60)
{
	struct decode_case c;

	setup(&c);
	decode(&c, (const char *[]){ "--raw-pt", "t.pt", "--image", "i@ 0x400000", NULL });
	cr_assert_eq(c.r->exit_code, 2, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_str_eq(c.r->err, ERROR "invalid --image 'i@ 0x400000': ' 0x400000' is not an "
					 "address (decimal or 0x hex)\n");
	decode(&c,
	       (const char *[]){ "--raw-pt", "t.pt", "--image", "i@0x1ffffffffffffffff", NULL });
	cr_assert_eq(c.r->exit_code, 2, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_str_eq(c.r->err, ERROR "invalid --image 'i@0x1ffffffffffffffff': "
					 "'0x1ffffffffffffffff' is past the top of the 64-bit "
					 "address space\n");
	teardown(&c);
}

Test(decode_inputs, raw_traces_refused, .timeout = 60)
{
	struct decode_case c;
	char image[1200], empty[128], want[4096];

	setup(&c);
	snprintf(image, sizeof(image), "%s/Unzip/image.bin@0x400000", c.corpus);
	snprintf(empty, sizeof(empty), "%s/empty.pt", c.dir);
	write_file(empty, "", 0);

	decode(&c, (const char *[]){ "--raw-pt", empty, "--image", image, NULL });
	snprintf(want, sizeof(want), "raw PT trace '%s' is empty; give the file of raw PT packets",
		 empty);
	expect_refused(&c, want);

	decode(&c, (const char *[]){ "--raw-pt", c.dir, "--image", image, NULL });
	snprintf(want, sizeof(want),
		 "raw PT trace '%s' is a directory; give the file of raw PT packets", c.dir);
	expect_refused(&c, want);

	decode(&c, (const char *[]){ "--raw-pt", "/bin/true", "--image", image, NULL });
	expect_refused(&c, "raw PT trace '/bin/true' holds no PSB packet, where decoding could "
			   "begin: it is not raw Intel PT (perf.data is decoded without "
			   "--raw-pt), or it was cut before its first PSB");
	teardown(&c);
}

/* ---- captures cut short ---- */

/* path cut to `bytes`, as DIR/NAME. */
static void cut_copy(const char *path, size_t bytes, const char *to)
{
	size_t size;
	void *data = read_whole(path, &size);

	cr_assert_leq(bytes, size);
	write_file(to, data, bytes);
	free(data);
}

/* Decodes `capture` from a file and, in pipe mode, from standard input: the
 * error or warning line names it ('NAME' or 'standard input') once. */
static void expect_cut(struct decode_case *c, const char *capture, bool on_stdin, const char *level,
		       const char *message_fmt)
{
	char message[2048], want[4096];

	snprintf(message, sizeof(message), message_fmt, on_stdin ? "standard input" : capture);
	if (on_stdin) {
		char cmd[2048];
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		snprintf(cmd, sizeof(cmd), "exec %s decode - -o %s < %s", build_path("rearview"),
			 c->out, capture);
		unlink(c->out);
		run_process(argv, 120, c->r);
	} else {
		decode(c, (const char *[]){ capture, NULL });
	}
	if (!strcmp(level, ERROR)) {
		expect_refused(c, message);
		return;
	}
	snprintf(want, sizeof(want),
		 WARNING "%s; the trace holds what was decoded before that "
			 "point\n",
		 message);
	cr_assert_eq(c->r->exit_code, 0, "exit %d: %s", c->r->exit_code, c->r->err);
	cr_assert(!strncmp(c->r->err, want, strlen(want)), "got:\n%swanted:\n%s", c->r->err, want);
	cr_assert(file_exists(c->out));
}

/* perf-4.14's pipe capture: its AUXTRACE records are at 32608 (76,400 bytes
 * of trace) and 116880 (68,192), as `perf report -D` lists them. */
Test(decode_inputs, pipe_capture_cut_short, .timeout = 300)
{
	struct decode_case c;
	char piped[1100], cut[128];

	setup(&c);
	snprintf(piped, sizeof(piped), "%s/perf-4.14/perf.data.piped.intel_pt-4.14", c.corpus);
	snprintf(cut, sizeof(cut), "%s/tp.piped", c.dir);
	for (int on_stdin = 0; on_stdin < 2; on_stdin++) {
		cut_copy(piped, 10, cut);
		expect_cut(&c, cut, on_stdin, ERROR,
			   "'%s' is truncated: it ends inside its header, after 10 bytes");
		cut_copy(piped, 2584, cut);
		expect_cut(&c, cut, on_stdin, ERROR,
			   "'%s' was cut short: it ends inside the record at file offset 2484, "
			   "before it declared any event; nothing to read");
		cut_copy(piped, 32612, cut);
		expect_cut(&c, cut, on_stdin, ERROR,
			   "reading '%s': truncated record header at file offset 32608: only 4 "
			   "of its 8 bytes are in the stream (the capture was cut short)");
		cut_copy(piped, 32608 + 48 + 1000, cut);
		expect_cut(&c, cut, on_stdin, ERROR,
			   "reading '%s': record at file offset 32608 (type 71) carries 76400 "
			   "bytes of data, but only 1000 bytes of the stream remain after it (the "
			   "stream ends inside it: the capture was cut short)");
		cut_copy(piped, 116880 + 48 + 1000, cut);
		expect_cut(&c, cut, on_stdin, WARNING,
			   "reading '%s': record at file offset 116880 (type 71) carries 68192 "
			   "bytes of data, but only 1000 bytes of the stream remain after it (the "
			   "stream ends inside it: the capture was cut short)");
	}
	teardown(&c);
}

/* perf-4.14's file capture: data from 744; AUXTRACE records at 10688
 * (12,240 bytes) and 30600 (137,728); a 152-byte MMAP at 2112. */
Test(decode_inputs, file_capture_cut_short, .timeout = 300)
{
	struct decode_case c;
	char file[1100], cut[128];

	setup(&c);
	snprintf(file, sizeof(file), "%s/perf-4.14/perf.data.intel_pt-4.14", c.corpus);
	snprintf(cut, sizeof(cut), "%s/tp.data", c.dir);
	cut_copy(file, 50, cut);
	expect_cut(&c, cut, false, ERROR, "'%s' is truncated: it ends inside its 104-byte header");
	cut_copy(file, 2162, cut);
	expect_cut(&c, cut, false, ERROR,
		   "reading '%s': record at file offset 2112 (type 1) is 152 bytes long, but "
		   "only 50 bytes of the data section remain (the file was truncated)");
	cut_copy(file, 10692, cut);
	expect_cut(&c, cut, false, ERROR,
		   "reading '%s': truncated record header at file offset 10688: only 4 of its 8 "
		   "bytes are in the data section");
	cut_copy(file, 10688 + 48 + 1000, cut);
	expect_cut(&c, cut, false, ERROR,
		   "reading '%s': record at file offset 10688 (type 71) carries 12240 bytes of "
		   "data, but only 1000 bytes of the data section remain after it (the file was "
		   "truncated)");
	cut_copy(file, 30600 + 48 + 1000, cut);
	expect_cut(&c, cut, false, WARNING,
		   "reading '%s': record at file offset 30600 (type 71) carries 137728 bytes of "
		   "data, but only 1000 bytes of the data section remain after it (the file was "
		   "truncated)");
	teardown(&c);
}

/* ---- things that are not captures ---- */

Test(decode_inputs, not_captures, .timeout = 120)
{
	struct decode_case c;
	char capture[1100], raw[1100], gz[128], zst[128], fxt[128], cmd[4096], want[4096];
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };

	setup(&c);
	snprintf(capture, sizeof(capture), "%s/perf-4.14/perf.data.intel_pt-4.14", c.corpus);
	snprintf(raw, sizeof(raw), "%s/Unzip/trace.pt", c.corpus);
	snprintf(gz, sizeof(gz), "%s/perf.data.gz", c.dir);
	snprintf(zst, sizeof(zst), "%s/perf.data.zst", c.dir);
	snprintf(fxt, sizeof(fxt), "%s/written.fxt", c.dir);

	decode(&c, (const char *[]){ c.dir, NULL });
	snprintf(want, sizeof(want),
		 "'%s' is a directory without a capture: it holds no perf.data (nor perf's "
		 "DIR/data); give the directory a recording kept (--working-directory) or a "
		 "perf.data file",
		 c.dir);
	expect_refused(&c, want);

	snprintf(cmd, sizeof(cmd), "gzip -c %s > %s", capture, gz);
	run_process(sh, 60, c.r);
	cr_assert_eq(c.r->exit_code, 0, "gzip: %s", c.r->err);
	decode(&c, (const char *[]){ gz, NULL });
	snprintf(want, sizeof(want),
		 "'%s' is not a perf.data file (it does not start with PERFILE2); it is "
		 "gzip-compressed: decompress it first (zcat FILE | rearview decode -)",
		 gz);
	expect_refused(&c, want);

	if (access("/usr/bin/zstd", X_OK) == 0) {
		snprintf(cmd, sizeof(cmd), "zstd -q -c %s > %s", capture, zst);
		run_process(sh, 60, c.r);
		cr_assert_eq(c.r->exit_code, 0, "zstd: %s", c.r->err);
		decode(&c, (const char *[]){ zst, NULL });
		snprintf(want, sizeof(want),
			 "'%s' is not a perf.data file (it does not start with PERFILE2); it is "
			 "zstd-compressed: decompress it first (zstdcat FILE | rearview decode -)",
			 zst);
		expect_refused(&c, want);
	} else {
		cr_assert(!under_ci(), "zstd is missing (Debian's zstd): CI has it");
		fprintf(stderr, "decode_inputs: zstd is not installed: its case is skipped\n");
	}

	decode(&c, (const char *[]){ "/bin/true", NULL });
	expect_refused(&c, "'/bin/true' is not a perf.data file (it does not start with "
			   "PERFILE2); it is an ELF file (a program or a library), not a capture");

	decode(&c, (const char *[]){ raw, NULL });
	snprintf(want, sizeof(want),
		 "'%s' is not a perf.data file (it does not start with PERFILE2); it starts with "
		 "a PSB packet, like a raw Intel PT trace: decode that with --raw-pt FILE "
		 "--image FILE@ADDR",
		 raw);
	expect_refused(&c, want);

	/* a trace rearview wrote, given back to it */
	snprintf(cmd, sizeof(cmd),
		 "exec %s decode --raw-pt %s --image %s/Unzip/image.bin@0x400000 -o %s",
		 build_path("rearview"), raw, c.corpus, fxt);
	run_process(sh, 120, c.r);
	cr_assert_eq(c.r->exit_code, 0, "%s", c.r->err);
	decode(&c, (const char *[]){ fxt, NULL });
	snprintf(want, sizeof(want),
		 "'%s' is not a perf.data file (it does not start with PERFILE2); it is a "
		 "Fuchsia trace (a trace already written): open it in the Perfetto UI",
		 fxt);
	expect_refused(&c, want);
	teardown(&c);
}

/* ---- PT captures whose code does not fit ---- */

/* perf-4.14's binaries are not on this machine: nearly nothing decodes, the
 * missing files are named, and so is what it cost the trace. */
Test(decode_inputs, capture_without_its_code, .timeout = 120)
{
	static const char why[] = "): the code it ran could not be read (the files named above)\n";
	struct decode_case c;
	char capture[1100];
	const char *line;

	setup(&c);
	snprintf(capture, sizeof(capture), "%s/perf-4.14/perf.data.intel_pt-4.14", c.corpus);
	decode(&c, (const char *[]){ capture, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_geq(undecoded_percent(c.r->err), 90, "%s", c.r->err);
	line = strstr(c.r->err, "% of the trace did not decode (");
	cr_assert(line && !strncmp(strchr(line, ')'), why, strlen(why)), "%s", c.r->err);
	teardown(&c);
}

/* A softpt capture whose program was replaced by another after it was
 * recorded: the binary at the capture's path is not the one that ran. */
Test(decode_inputs, capture_of_a_replaced_binary, .timeout = 300)
{
	struct decode_case c;
	char prog[128], capture[128];
	const char *line;

	setup(&c);
	snprintf(prog, sizeof(prog), "%s/prog", c.dir);
	snprintf(capture, sizeof(capture), "%s/capture", c.dir);
	{
		size_t size;
		void *code = read_whole(build_path("tests/pt/recursion"), &size);

		write_file(prog, code, size);
		free(code);
		cr_assert_eq(chmod(prog, 0755), 0);
	}
	/* an empty environment: glibc's start-up walks every variable (the
	 * tunables), code both binaries share, and a long environment (a
	 * sanitizers' run's) made that most of the trace */
	char *softpt[] = {
		"/usr/bin/env", "-i", (char *)build_path("softpt"), "-q", "-o", capture, "--", prog,
		"30",		NULL
	};
	run_process(softpt, 240, c.r);
	cr_assert_eq(c.r->exit_code, 0, "softpt: %s", c.r->err);
	{
		size_t size;
		void *other = read_whole(build_path("tests/pt/fnptr"), &size);

		write_file(prog, other, size);
		free(other);
	}
	decode(&c, (const char *[]){ capture, NULL });
	cr_assert_eq(c.r->exit_code, 0, "exit %d: %s", c.r->exit_code, c.r->err);
	cr_assert_gt(undecoded_percent(c.r->err), 50, "%s", c.r->err);
	line = strstr(c.r->err, "% of the trace did not decode (");
	cr_assert(line && strstr(line, " bytes skipped after ") &&
			  strstr(line, "): the binaries at the capture's paths are not the ones "
				       "that ran (rebuilt or updated since?); decode on the "
				       "machine that recorded it\n"),
		  "%s", c.r->err);
	teardown(&c);
}
