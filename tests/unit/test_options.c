/* test_options.c: the command line, parsed strictly. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"

static int parse(struct rv_options *o, struct rv_error *err, int argc, const char **argv)
{
	return rv_options_parse(o, argc, (char **)argv, err);
}

Test(options, run_with_command_and_single_dash_spellings)
{
	const char *argv[] = { "rearview",
			       "run",
			       "-output",
			       "x.json.gz",
			       "-multi-thread",
			       "--timer-resolution",
			       "sample:4000",
			       "-callgraph-mode",
			       "fp",
			       "--",
			       "prog",
			       "-o",
			       "arg",
			       NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 13, argv), 0, "%s", err.message);
	cr_assert_eq(o.command, RV_CMD_RUN);
	cr_assert_str_eq(o.output, "x.json.gz");
	cr_assert(o.multi_thread);
	cr_assert_eq(o.timer, RV_TIMER_SAMPLE);
	cr_assert_eq(o.sample_hz, 4000);
	cr_assert_eq(o.callgraph, RV_CALLGRAPH_FP);
	cr_assert_eq(o.argc, 3);
	cr_assert_str_eq(o.argv[0], "prog");
	cr_assert_str_eq(o.argv[1], "-o", "options after the command belong to it");
}

Test(options, command_without_double_dash_stops_option_parsing)
{
	const char *argv[] = { "rearview", "run", "-v", "ls", "-l", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 5, argv), 0, "%s", err.message);
	cr_assert_eq(o.verbose, 1);
	cr_assert_eq(o.argc, 2);
	cr_assert_str_eq(o.argv[1], "-l");
}

Test(options, defaults)
{
	const char *argv[] = { "rearview", "run", "true", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 3, argv), 0);
	cr_assert_str_eq(o.output, "trace.fxt");
	cr_assert_eq(o.backend, RV_BACKEND_AUTO);
	cr_assert_eq(o.timer, RV_TIMER_NORMAL);
	cr_assert_eq(o.snapshot_size_bytes, 0);
	cr_assert(!o.multi_thread && !o.full_execution && !o.include_kernel);
}

Test(options, no_follow_is_for_run)
{
	const char *run[] = { "rearview", "run", "--no-follow", "true", NULL };
	const char *attach[] = { "rearview", "attach", "-p", "12", "--no-follow", NULL };
	const char *decode[] = { "rearview", "decode", "--no-follow", "perf.data", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 3, (const char *[]){ "rearview", "run", "true", NULL }), 0);
	cr_assert(!o.no_follow, "children are followed by default");
	cr_assert_eq(parse(&o, &err, 4, run), 0, "%s", err.message);
	cr_assert(o.no_follow);
	cr_assert_neq(parse(&o, &err, 5, attach), 0);
	cr_assert(strstr(err.message, "'rearview run'"), "%s", err.message);
	rv_options_destroy(&o);
	memset(&err, 0, sizeof(err));
	cr_assert_neq(parse(&o, &err, 4, decode), 0);
	cr_assert(strstr(err.message, "no effect on 'rearview decode'"), "%s", err.message);
	rv_options_destroy(&o);
}

Test(options, attach_pid_list)
{
	const char *argv[] = { "rearview", "attach", "-p", "12,34,56", "--sampling", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 5, argv), 0, "%s", err.message);
	cr_assert_eq(o.command, RV_CMD_ATTACH);
	cr_assert_eq(o.nr_pids, 3);
	cr_assert_eq(o.pids[2], 56);
	cr_assert_eq(o.backend, RV_BACKEND_SAMPLE);
}

Test(options, bad_values_are_refused_with_a_useful_message)
{
	struct {
		const char *argv[6];
		int argc;
		const char *says;
	} cases[] = {
		{ { "rearview", "run", "--snapshot-size", "3x", "true" }, 5, "512K" },
		{ { "rearview", "run", "--timer-resolution", "fast", "true" }, 5, "sample:HZ" },
		{ { "rearview", "run", "--backend", "magic", "true" }, 5, "auto, pt or sample" },
		{ { "rearview", "run", "--callgraph-mode", "x", "true" }, 5, "dwarf,SIZE or lbr" },
		{ { "rearview", "attach", "-p", "12,abc" }, 4, "process IDs" },
		{ { "rearview", "attach", "-p", "0" }, 4, "process IDs" },
		{ { "rearview", "run", "--bogus", "true" }, 4, "unknown option" },
		{ { "rearview", "run" }, 2, "no command to run" },
		{ { "rearview", "frobnicate" }, 2, "unknown command" },
		{ { "rearview", "run", "-o" }, 3, "needs a value" },
		{ { "rearview", "run", "-p", "1", "true" }, 5, "attach" },
		{ { "rearview", "run", "--full-execution", "--snapshot-size", "1M", "true" },
		  6,
		  "one or the other" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rv_options o;
		struct rv_error err = { 0 };

		cr_assert_neq(parse(&o, &err, cases[i].argc, (const char **)cases[i].argv), 0,
			      "case %zu", i);
		cr_assert(strstr(err.message, cases[i].says), "case %zu: '%s' lacks '%s'", i,
			  err.message, cases[i].says);
	}
}

Test(options, sizes)
{
	uint64_t v;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_parse_size("4096", &v, &err), 0);
	cr_assert_eq(v, 4096);
	cr_assert_eq(rv_parse_size("512K", &v, &err), 0);
	cr_assert_eq(v, 512 * 1024);
	cr_assert_eq(rv_parse_size("16MiB", &v, &err), 0);
	cr_assert_eq(v, 16ull << 20);
	cr_assert_eq(rv_parse_size("1g", &v, &err), 0);
	cr_assert_eq(v, 1ull << 30);
	cr_assert_neq(rv_parse_size("", &v, &err), 0);
	cr_assert_neq(rv_parse_size("0", &v, &err), 0);
	cr_assert_neq(rv_parse_size("-1", &v, &err), 0);
	cr_assert_neq(rv_parse_size("1.5M", &v, &err), 0);
	cr_assert_neq(rv_parse_size("99999999999999999999", &v, &err), 0);
	cr_assert_neq(rv_parse_size("1000000T", &v, &err), 0);
}

Test(options, snapshot_size_rounds_up_to_power_of_two_pages)
{
	cr_assert_eq(rv_round_pow2_pages(1, 4096), 4096);
	cr_assert_eq(rv_round_pow2_pages(4096, 4096), 4096);
	cr_assert_eq(rv_round_pow2_pages(4097, 4096), 8192);
	cr_assert_eq(rv_round_pow2_pages(3 * 4096, 4096), 4 * 4096);
	cr_assert_eq(rv_round_pow2_pages(5u << 20, 4096), 8u << 20);

	const char *argv[] = { "rearview", "run", "--snapshot-size", "3M", "true", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 5, argv), 0);
	cr_assert_eq(o.snapshot_size_bytes, 4u << 20);
}

Test(options, timer_resolutions)
{
	enum rv_timer_kind k;
	uint64_t hz = 0;
	const char *custom = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_parse_timer_resolution("Low", &k, &hz, &custom, &err), 0);
	cr_assert_eq(k, RV_TIMER_LOW);
	cr_assert_eq(rv_parse_timer_resolution("high", &k, &hz, &custom, &err), 0);
	cr_assert_eq(k, RV_TIMER_HIGH);
	cr_assert_eq(rv_parse_timer_resolution("(Sample (freq 250))", &k, &hz, &custom, &err), 0);
	cr_assert_eq(k, RV_TIMER_SAMPLE);
	cr_assert_eq(hz, 250);
	cr_assert_neq(rv_parse_timer_resolution("sample:0", &k, &hz, &custom, &err), 0);
	cr_assert_neq(rv_parse_timer_resolution("sample:12x", &k, &hz, &custom, &err), 0);
	cr_assert_eq(rv_parse_timer_resolution("custom:cyc=1,mtc_period=3", &k, &hz, &custom, &err),
		     0);
	cr_assert_eq(k, RV_TIMER_CUSTOM);
	cr_assert_str_eq(custom, "cyc=1,mtc_period=3");
	cr_assert_neq(rv_parse_timer_resolution("custom:", &k, &hz, &custom, &err), 0);
	cr_assert_neq(rv_parse_timer_resolution("custom:cyc", &k, &hz, &custom, &err), 0);
	cr_assert(strstr(err.message, "NAME=VALUE"), "%s", err.message);
	cr_assert_neq(rv_parse_timer_resolution("custom:cyc=1,", &k, &hz, &custom, &err), 0);
	cr_assert_neq(rv_parse_timer_resolution("custom:=1", &k, &hz, &custom, &err), 0);
	cr_assert_neq(rv_parse_timer_resolution("fast", &k, &hz, &custom, &err), 0);
	cr_assert(strstr(err.message, "custom:NAME=VALUE"), "%s", err.message);
}

Test(options, filter_sites)
{
	char *start, *stop;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_parse_filter("request_begin,request_end", &start, &stop, &err), 0);
	cr_assert_str_eq(start, "request_begin");
	cr_assert_str_eq(stop, "request_end");
	free(start);
	free(stop);
	cr_assert_eq(rv_parse_filter("(libfoo.so:go  main.c:42)", &start, &stop, &err), 0);
	cr_assert_str_eq(start, "libfoo.so:go");
	cr_assert_str_eq(stop, "main.c:42");
	free(start);
	free(stop);
	cr_assert_eq(rv_parse_filter("0x401000, 0x401200", &start, &stop, &err), 0);
	cr_assert_str_eq(stop, "0x401200");
	free(start);
	free(stop);
	cr_assert_neq(rv_parse_filter("only_one", &start, &stop, &err), 0);
	cr_assert(strstr(err.message, "START,STOP"), "%s", err.message);
	cr_assert_null(start);
	cr_assert_neq(rv_parse_filter("a,", &start, &stop, &err), 0);
	cr_assert_neq(rv_parse_filter(",b", &start, &stop, &err), 0);
	cr_assert_neq(rv_parse_filter("a,b,c", &start, &stop, &err), 0);
	cr_assert(strstr(err.message, "exactly two"), "%s", err.message);
	cr_assert_null(stop);
}

Test(options, durations)
{
	uint64_t ns = 0;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_parse_duration("300us", &ns, &err), 0);
	cr_assert_eq(ns, 300000);
	cr_assert_eq(rv_parse_duration("2ms", &ns, &err), 0);
	cr_assert_eq(ns, 2000000);
	cr_assert_eq(rv_parse_duration("1.5s", &ns, &err), 0);
	cr_assert_eq(ns, 1500000000);
	cr_assert_eq(rv_parse_duration("750ns", &ns, &err), 0);
	cr_assert_eq(ns, 750);
	cr_assert_neq(rv_parse_duration("300", &ns, &err), 0);
	cr_assert(strstr(err.message, "unit"), "%s", err.message);
	cr_assert_neq(rv_parse_duration("-1ms", &ns, &err), 0);
	cr_assert_neq(rv_parse_duration("0.1ns", &ns, &err), 0);
	cr_assert_neq(rv_parse_duration("2 ms", &ns, &err), 0);
	cr_assert_neq(rv_parse_duration("ms", &ns, &err), 0);
}

Test(options, gate_options_together)
{
	const char *ok[] = { "rearview",
			     "run",
			     "--filter",
			     "a,b",
			     "--min-duration",
			     "300us",
			     "--multi-snapshot",
			     "--dry-run",
			     "--",
			     "prog",
			     NULL };
	const char *trig[] = { "rearview", "run", "-trigger", "main.c:12", "prog", NULL };
	const char *min_alone[] = { "rearview", "run", "--min-duration", "1ms", "prog", NULL };
	const char *multi_alone[] = { "rearview", "run", "--multi-snapshot", "prog", NULL };
	const char *both[] = { "rearview", "run",	"--filter", "a,b",  "--min-duration",
			       "1ms",	   "--trigger", "t",	    "prog", NULL };
	const char *full[] = {
		"rearview", "run", "--trigger", "t", "--full-execution", "prog", NULL
	};
	const char *decode[] = { "rearview", "decode", "d", "--filter", "a,b", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 10, ok), 0, "%s", err.message);
	cr_assert_str_eq(o.filter_start, "a");
	cr_assert_str_eq(o.filter_stop, "b");
	cr_assert_eq(o.min_duration_ns, 300000);
	cr_assert(o.multi_snapshot);
	cr_assert(o.dry_run);
	cr_assert_str_eq(o.argv[0], "prog");
	rv_options_destroy(&o);
	cr_assert_eq(parse(&o, &err, 5, trig), 0, "%s", err.message);
	cr_assert_str_eq(o.trigger, "main.c:12");
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 5, min_alone), 0);
	cr_assert(strstr(err.message, "give --filter"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 4, multi_alone), 0);
	cr_assert(strstr(err.message, "--multi-snapshot"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 9, both), 0);
	cr_assert(strstr(err.message, "use one of them"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 6, full), 0);
	cr_assert(strstr(err.message, "--full-execution"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 5, decode), 0);
	cr_assert(strstr(err.message, "no effect on 'rearview decode'"), "%s", err.message);
	rv_options_destroy(&o);
}

Test(options, help_and_version)
{
	const char *a1[] = { "rearview", "--version", NULL };
	const char *a2[] = { "rearview", "run", "-help", NULL };
	const char *a3[] = { "rearview", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 2, a1), 0);
	cr_assert(o.version);
	cr_assert_eq(parse(&o, &err, 3, a2), 0);
	cr_assert(o.help);
	cr_assert_eq(o.command, RV_CMD_RUN);
	cr_assert_eq(parse(&o, &err, 1, a3), 0);
	cr_assert(o.help);
}

Test(options, decode_raw_pt_with_images_and_filter)
{
	const char *argv[] = { "rearview",
			       "decode",
			       "-raw-pt",
			       "t.pt",
			       "--image",
			       "a.bin@0x400000,b.bin@4096",
			       "--image",
			       "/x/c@d.bin@0x10",
			       "--addr-filter",
			       "0x400000-0x427000",
			       "--cpu",
			       "6/142/10",
			       "--stats",
			       "-j",
			       "3",
			       "--chunk-size",
			       "64K",
			       NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 17, argv), 0, "%s", err.message);
	cr_assert_eq(o.command, RV_CMD_DECODE);
	cr_assert_str_eq(o.raw_pt, "t.pt");
	cr_assert_eq(o.nr_images, 3);
	cr_assert_str_eq(o.images[0].path, "a.bin");
	cr_assert_eq(o.images[0].addr, 0x400000);
	cr_assert_str_eq(o.images[1].path, "b.bin");
	cr_assert_eq(o.images[1].addr, 4096);
	cr_assert_str_eq(o.images[2].path, "/x/c@d.bin", "the last @ separates the address");
	cr_assert_eq(o.addr_filter[0], 0x400000);
	cr_assert_eq(o.addr_filter[1], 0x427000);
	cr_assert_str_eq(o.cpu, "6/142/10");
	cr_assert(o.stats);
	cr_assert_eq(o.jobs, 3);
	cr_assert_eq(o.chunk_bytes, 65536);
	rv_options_destroy(&o);
}

Test(options, decode_capture_and_mistakes)
{
	const char *ok[] = { "rearview", "decode",    "dir", "-o",
			     "t.json",	 "--vmlinux", "vm",  "--trace-include-kernel",
			     NULL };
	const char *none[] = { "rearview", "decode", NULL };
	const char *two_inputs[] = { "rearview", "decode",  "a",   "--raw-pt",
				     "b",	 "--image", "i@1", NULL };
	const char *two_captures[] = { "rearview", "decode", "a", "b", NULL };
	const char *image_alone[] = { "rearview", "decode", "a", "--image", "i@1", NULL };
	const char *bad_image[] = {
		"rearview", "decode", "--raw-pt", "t", "--image", "i@zz", NULL
	};
	const char *recording[] = { "rearview", "decode", "a", "--snapshot-size", "1M", NULL };
	const char *not_decode[] = { "rearview", "attach", "-p", "1", "--raw-pt", "x", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 8, ok), 0, "%s", err.message);
	cr_assert_eq(o.argc, 1);
	cr_assert_str_eq(o.argv[0], "dir");
	cr_assert_str_eq(o.vmlinux, "vm");
	cr_assert(o.include_kernel);
	cr_assert_neq(parse(&o, &err, 2, none), 0);
	cr_assert(strstr(err.message, "nothing to decode"), "%s", err.message);
	cr_assert_neq(parse(&o, &err, 7, two_inputs), 0);
	cr_assert(strstr(err.message, "give one input"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 4, two_captures), 0);
	cr_assert(strstr(err.message, "takes one capture"), "%s", err.message);
	cr_assert_neq(parse(&o, &err, 5, image_alone), 0);
	cr_assert(strstr(err.message, "describe a --raw-pt trace"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 6, bad_image), 0);
	cr_assert(strstr(err.message, "'zz' is not an address"), "%s", err.message);
	cr_assert_neq(parse(&o, &err, 5, recording), 0);
	cr_assert(strstr(err.message, "no effect on 'rearview decode'"), "%s", err.message);
	cr_assert_neq(parse(&o, &err, 6, not_decode), 0);
	cr_assert(strstr(err.message, "belong to 'rearview decode'"), "%s", err.message);
	rv_options_destroy(&o);
}

/* --image FILE@ADDRESS: each malformed spelling refused with its reason. */
Test(options, image_address_syntax)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "i@", "invalid --image 'i@': use FILE@ADDRESS, e.g. image.bin@0x400000" },
		{ "@0x1", "invalid --image '@0x1': use FILE@ADDRESS, e.g. image.bin@0x400000" },
		{ "i", "invalid --image 'i': use FILE@ADDRESS, e.g. image.bin@0x400000" },
		{ "i@0x", "invalid --image 'i@0x': '0x' is not an address (decimal or 0x hex)" },
		{ "i@-1", "invalid --image 'i@-1': '-1' is not an address (decimal or 0x hex)" },
		{ "i@+1", "invalid --image 'i@+1': '+1' is not an address (decimal or 0x hex)" },
		{ "i@ 0x10",
		  "invalid --image 'i@ 0x10': ' 0x10' is not an address (decimal or 0x hex)" },
		{ "i@0x1g", "invalid --image 'i@0x1g': '0x1g' is not an address (decimal or 0x "
			    "hex)" },
		{ "i@0x10000000000000000", "invalid --image 'i@0x10000000000000000': "
					   "'0x10000000000000000' is past the top of the "
					   "64-bit address space" },
	};
	struct rv_raw_image image;
	struct rv_error err = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_neq(rv_parse_image(bad[i].text, &image, &err), 0, "%s", bad[i].text);
		cr_assert_str_eq(err.message, bad[i].says);
	}
	cr_assert_eq(rv_parse_image("a@b@0xffffffffffffffff", &image, &err), 0, "%s", err.message);
	cr_assert_str_eq(image.path, "a@b");
	cr_assert_eq(image.addr, UINT64_MAX);
	free(image.path);
}

/* run's `--`: before COMMAND it ends rearview's options and every later
 * argument is COMMAND's; after COMMAND (magic-trace's form) the first one
 * only separates COMMAND's arguments and is dropped. */
Test(options, run_double_dash_rules)
{
	static const struct {
		const char *argv[10];
		int argc;
		const char *want[6]; /* COMMAND's argv, NULL-terminated */
	} cases[] = {
		{ { "rearview", "run", "echo", "--", "hello", "world" },
		  6,
		  { "echo", "hello", "world" } },
		{ { "rearview", "run", "--", "echo", "--", "x" }, 6, { "echo", "--", "x" } },
		{ { "rearview", "run", "-v", "echo", "a", "--", "b", "--", "c" },
		  9,
		  { "echo", "a", "b", "--", "c" } },
		{ { "rearview", "run", "echo", "--" }, 4, { "echo" } },
		{ { "rearview", "run", "--", "echo", "--" }, 5, { "echo", "--" } },
		/* an option's value "--" is not the separator */
		{ { "rearview", "run", "-o", "--", "echo", "--", "x" }, 7, { "echo", "x" } },
		{ { "rearview", "run", "ls", "-l" }, 4, { "ls", "-l" } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rv_options o;
		struct rv_error err = { 0 };
		int n = 0;

		cr_assert_eq(parse(&o, &err, cases[i].argc, (const char **)cases[i].argv), 0,
			     "case %zu: %s", i, err.message);
		while (cases[i].want[n])
			n++;
		cr_assert_eq(o.argc, n, "case %zu: %d arguments", i, o.argc);
		for (int a = 0; a < n; a++)
			cr_assert_str_eq(o.argv[a], cases[i].want[a], "case %zu, argument %d", i,
					 a);
		cr_assert_null(o.argv[n], "case %zu: argv is NULL-terminated", i);
		rv_options_destroy(&o);
	}
}

Test(options, attach_command_after_double_dash)
{
	const char *argv[] = {
		"rearview", "attach", "-p", "12", "--", "prog", "-x", "--", "y", NULL
	};
	const char *bare[] = { "rearview", "attach", "-p", "12", "prog", NULL };
	const char *empty[] = { "rearview", "attach", "-p", "12", "--", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(parse(&o, &err, 9, argv), 0, "%s", err.message);
	cr_assert_eq(o.argc, 4);
	cr_assert_str_eq(o.argv[0], "prog");
	cr_assert_str_eq(o.argv[2], "--", "COMMAND's own -- is passed");
	rv_options_destroy(&o);
	cr_assert_eq(parse(&o, &err, 4, (const char *[]){ "rearview", "attach", "-p", "12", NULL }),
		     0);
	cr_assert_eq(o.argc, 0, "no command");
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 5, bare), 0);
	cr_assert(strstr(err.message, "after --"), "%s", err.message);
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 5, empty), 0);
	cr_assert(strstr(err.message, "no command after --"), "%s", err.message);
	rv_options_destroy(&o);
}

Test(options, duplicate_pids_are_refused)
{
	const char *argv[] = { "rearview", "attach", "-p", "12,34,12", NULL };
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_neq(parse(&o, &err, 4, argv), 0);
	cr_assert(strstr(err.message, "PID 12 is given twice"), "%s", err.message);
	rv_options_destroy(&o);
}

Test(options, duration_for_run_and_attach)
{
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_eq(
		parse(&o, &err, 5,
		      (const char *[]){ "rearview", "run", "--duration", "1.5s", "true", NULL }),
		0, "%s", err.message);
	cr_assert_eq(o.duration_ns, 1500000000ull);
	rv_options_destroy(&o);
	cr_assert_eq(parse(&o, &err, 6,
			   (const char *[]){ "rearview", "attach", "-p", "12", "-duration", "5s",
					     NULL }),
		     0, "%s", err.message);
	cr_assert_eq(o.duration_ns, 5000000000ull);
	rv_options_destroy(&o);
	cr_assert_eq(parse(&o, &err, 3, (const char *[]){ "rearview", "run", "true", NULL }), 0);
	cr_assert_eq(o.duration_ns, 0, "no duration by default");
	rv_options_destroy(&o);
	cr_assert_neq(parse(&o, &err, 5,
			    (const char *[]){ "rearview", "run", "--duration", "5", "true", NULL }),
		      0);
	cr_assert(strstr(err.message, "--duration") && strstr(err.message, "unit"), "%s",
		  err.message);
	rv_options_destroy(&o);
	cr_assert_neq(
		parse(&o, &err, 5,
		      (const char *[]){ "rearview", "decode", "--duration", "5s", "x.data", NULL }),
		0);
	cr_assert(strstr(err.message, "how long to record"), "%s", err.message);
	rv_options_destroy(&o);
}

/* --decoder: fast by default, libipt on asking, on every command that
 * decodes Intel PT; anything else refused naming both, and refused where
 * nothing PT is decoded. */
Test(options, decoder_choice)
{
	static const struct {
		const char *argv[9];
		int argc;
		enum rv_pt_decoder_choice decoder;
		const char *refused; /* NULL: accepted */
	} cases[] = {
		{ { "rearview", "decode", "perf.data" }, 3, RV_PT_DECODER_FAST, NULL },
		{ { "rearview", "decode", "--decoder", "fast", "perf.data" },
		  5,
		  RV_PT_DECODER_FAST,
		  NULL },
		{ { "rearview", "decode", "--decoder", "libipt", "perf.data" },
		  5,
		  RV_PT_DECODER_LIBIPT,
		  NULL },
		{ { "rearview", "decode", "-decoder=libipt", "--raw-pt", "t.pt", "--image", "i@1" },
		  7,
		  RV_PT_DECODER_LIBIPT,
		  NULL },
		{ { "rearview", "run", "--decoder", "libipt", "true" },
		  5,
		  RV_PT_DECODER_LIBIPT,
		  NULL },
		{ { "rearview", "run", "--backend", "pt", "--decoder", "libipt", "true" },
		  7,
		  RV_PT_DECODER_LIBIPT,
		  NULL },
		{ { "rearview", "attach", "-p", "12", "--decoder", "libipt" },
		  6,
		  RV_PT_DECODER_LIBIPT,
		  NULL },
		{ { "rearview", "decode", "--decoder", "bogus", "perf.data" }, 5, 0, "fast" },
		{ { "rearview", "decode", "--decoder", "LIBIPT", "perf.data" }, 5, 0, "libipt" },
		{ { "rearview", "decode", "--decoder", "", "perf.data" },
		  5,
		  0,
		  "invalid --decoder" },
		{ { "rearview", "decode", "--decoder", "fast", "--perf-script", "t.txt" },
		  6,
		  0,
		  "apply to PT data" },
		{ { "rearview", "run", "--sampling", "--decoder", "fast", "true" },
		  6,
		  0,
		  "--backend sample records none" },
		{ { "rearview", "attach", "-p", "12", "--backend", "uprobe", "--decoder",
		    "libipt" },
		  8,
		  0,
		  "--backend uprobe records none" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rv_options o;
		struct rv_error err = { 0 };
		int ret = parse(&o, &err, cases[i].argc, (const char **)cases[i].argv);

		if (!cases[i].refused) {
			cr_assert_eq(ret, 0, "case %zu: %s", i, err.message);
			cr_assert_eq(o.decoder, cases[i].decoder, "case %zu", i);
		} else {
			cr_assert_neq(ret, 0, "case %zu is accepted", i);
			cr_assert(strstr(err.message, cases[i].refused),
				  "case %zu: '%s' lacks '%s'", i, err.message, cases[i].refused);
		}
		rv_options_destroy(&o);
	}
}

/* The error for an unknown --decoder names both choices. */
Test(options, unknown_decoder_names_the_choices)
{
	enum rv_pt_decoder_choice d = RV_PT_DECODER_LIBIPT;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_parse_decoder("fast", &d, &err), 0);
	cr_assert_eq(d, RV_PT_DECODER_FAST);
	cr_assert_neq(rv_parse_decoder("block", &d, &err), 0);
	cr_assert(strstr(err.message, "'block'") && strstr(err.message, "fast") &&
			  strstr(err.message, "libipt"),
		  "%s", err.message);
	cr_assert_eq(d, RV_PT_DECODER_FAST, "a refused value changes nothing");
}

/* run, attach and decode --help name --decoder and its two choices; decode's
 * --stats says it names the walkers. */
Test(options, help_documents_the_decoder)
{
	static const enum rv_command commands[] = { RV_CMD_RUN, RV_CMD_ATTACH, RV_CMD_DECODE };

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		char *text = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&text, &size);

		cr_assert_not_null(f);
		rv_options_print_help(commands[i], f);
		fclose(f);
		cr_assert(strstr(text, "--decoder fast|libipt"), "%s --help lacks --decoder",
			  rv_command_name(commands[i]));
		cr_assert(strstr(text, "block decoder"), "%s", rv_command_name(commands[i]));
		if (commands[i] == RV_CMD_DECODE)
			cr_assert(strstr(text, "which walker decoded how much"), "%s", text);
		free(text);
	}
}

Test(options, output_to_standard_output)
{
	static const struct {
		const char *argv[9];
		int argc;
		const char *refused; /* NULL: accepted */
	} cases[] = {
		{ { "rearview", "attach", "-p", "12", "-o", "-" }, 6, NULL },
		{ { "rearview", "decode", "-o", "-", "perf.data" }, 5, NULL },
		{ { "rearview", "run", "-o", "-", "true" }, 5, "COMMAND writes to as well" },
		{ { "rearview", "attach", "-p", "12", "-o", "-", "--", "true" },
		  8,
		  "COMMAND writes to as well" },
		{ { "rearview", "decode", "-o", "-", "--stats", "perf.data" }, 6, "--stats" },
		{ { "rearview", "attach", "-p", "12", "--dry-run", "-o", "-" }, 7, "--dry-run" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct rv_options o;
		struct rv_error err = { 0 };
		int ret = parse(&o, &err, cases[i].argc, (const char **)cases[i].argv);

		if (!cases[i].refused) {
			cr_assert_eq(ret, 0, "case %zu: %s", i, err.message);
			cr_assert_str_eq(o.output, "-");
		} else {
			cr_assert_neq(ret, 0, "case %zu accepted", i);
			cr_assert(strstr(err.message, cases[i].refused), "case %zu: %s", i,
				  err.message);
		}
		rv_options_destroy(&o);
	}
}

/* parse() must fail; err.message must hold says, and not lacks (NULL: no
 * check). */
static void assert_refused(int argc, const char **argv, const char *says, const char *lacks)
{
	struct rv_options o;
	struct rv_error err = { 0 };

	cr_assert_neq(parse(&o, &err, argc, argv), 0, "'%s %s' was accepted", argv[1],
		      argc > 2 ? argv[2] : "");
	cr_assert(strstr(err.message, says), "'%s' lacks \"%s\"", err.message, says);
	if (lacks)
		cr_assert_null(strstr(err.message, lacks), "'%s' has \"%s\"", err.message, lacks);
	rv_options_destroy(&o);
}

Test(options, unknown_options_suggest_the_closest_of_the_command)
{
	const char *mutli[] = { "rearview", "run", "--mutli-thread", "--", "true", NULL };
	const char *single[] = { "rearview", "attach", "-mutli-thread", "-p", "1", NULL };
	const char *with_value[] = { "rearview", "run", "--outptu=x.fxt", "--", "true", NULL };
	const char *pid[] = { "rearview", "attach", "--pdi", "1", NULL };
	const char *stats[] = { "rearview", "decode", "--stast", "perf.data", NULL };
	const char *not_decode[] = { "rearview", "decode", "--mutli-thread", "perf.data", NULL };
	const char *not_run[] = { "rearview", "run", "--stast", "--", "true", NULL };
	const char *far[] = { "rearview", "run", "--zzzzzzzz", "--", "true", NULL };

	assert_refused(5, mutli, "unknown option '--mutli-thread': did you mean '--multi-thread'?",
		       NULL);
	/* one dash typed, one dash suggested (both spellings are accepted) */
	assert_refused(5, single, "did you mean '-multi-thread'?", NULL);
	assert_refused(5, with_value, "did you mean '--output'?", NULL);
	assert_refused(4, pid, "did you mean '--pid'?", NULL);
	assert_refused(4, stats, "did you mean '--stats'?", NULL);
	/* only what the command takes */
	assert_refused(4, not_decode, "unknown option '--mutli-thread'", "did you mean");
	assert_refused(5, not_run, "unknown option '--stast'", "did you mean");
	assert_refused(5, far, "unknown option '--zzzzzzzz' (see rearview run --help)",
		       "did you mean");
}

Test(options, ambiguous_abbreviations_and_values_of_flags_are_named)
{
	const char *multi[] = { "rearview", "run", "--multi", "--", "true", NULL };
	const char *flag_value[] = { "rearview", "run", "--multi-thread=1", "--", "true", NULL };

	assert_refused(5, multi,
		       "option '--multi' is ambiguous: did you mean '--multi-snapshot' or "
		       "'--multi-thread'?",
		       NULL);
	assert_refused(5, flag_value, "option '--multi-thread' takes no value", NULL);
}

Test(options, unknown_commands_suggest_the_closest)
{
	const char *atach[] = { "rearview", "atach", "-p", "1", NULL };
	const char *hlep[] = { "rearview", "--hlep", NULL };
	const char *far[] = { "rearview", "frobnicate", NULL };

	assert_refused(4, atach, "unknown command 'atach': did you mean 'attach'?", NULL);
	assert_refused(2, hlep, "did you mean '--help'?", NULL);
	assert_refused(2, far, "use 'rearview run -- COMMAND'", "did you mean");
}
