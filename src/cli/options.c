/* options.c: parsing and help for rearview's command line; see options.h. */
#include "cli/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/suggest.h"

enum {
	OPT_BACKEND = 1000,
	OPT_SAMPLING,
	OPT_TIMER,
	OPT_CALLGRAPH,
	OPT_KERNEL,
	OPT_MULTI_THREAD,
	OPT_NO_FOLLOW,
	OPT_FULL,
	OPT_KEEP_RAW_STACKS,
	OPT_SNAPSHOT_SIZE,
	OPT_WORKDIR,
	OPT_HELP,
	OPT_VERSION,
	OPT_RAW_PT,
	OPT_IMAGE,
	OPT_CPU,
	OPT_ADDR_FILTER,
	OPT_STATS,
	OPT_PERF_SCRIPT,
	OPT_VMLINUX,
	OPT_CHUNK_SIZE,
	OPT_KERNEL_ONLY,
	OPT_DRY_RUN,
	OPT_FILTER,
	OPT_TRIGGER,
	OPT_MIN_DURATION,
	OPT_MULTI_SNAPSHOT,
	OPT_FUNCTIONS,
	OPT_KERNEL_EVENTS,
	OPT_KERNEL_FUNCTIONS,
	OPT_EXCLUDE,
	OPT_EXITS,
	OPT_BTF,
	OPT_DURATION,
	OPT_EVENTS,
	OPT_DECODER,
};

static const struct option long_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "sampling", no_argument, NULL, OPT_SAMPLING },
	{ "timer-resolution", required_argument, NULL, OPT_TIMER },
	{ "callgraph-mode", required_argument, NULL, OPT_CALLGRAPH },
	{ "trace-include-kernel", no_argument, NULL, OPT_KERNEL },
	{ "trace-kernel-only", no_argument, NULL, OPT_KERNEL_ONLY },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "filter", required_argument, NULL, OPT_FILTER },
	{ "trigger", required_argument, NULL, OPT_TRIGGER },
	{ "min-duration", required_argument, NULL, OPT_MIN_DURATION },
	{ "multi-snapshot", no_argument, NULL, OPT_MULTI_SNAPSHOT },
	{ "functions", required_argument, NULL, OPT_FUNCTIONS },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "exits", required_argument, NULL, OPT_EXITS },
	{ "kernel-events", required_argument, NULL, OPT_KERNEL_EVENTS },
	{ "kernel-functions", required_argument, NULL, OPT_KERNEL_FUNCTIONS },
	{ "multi-thread", no_argument, NULL, OPT_MULTI_THREAD },
	{ "no-follow", no_argument, NULL, OPT_NO_FOLLOW },
	{ "full-execution", no_argument, NULL, OPT_FULL },
	{ "keep-raw-stacks", no_argument, NULL, OPT_KEEP_RAW_STACKS },
	{ "snapshot-size", required_argument, NULL, OPT_SNAPSHOT_SIZE },
	{ "working-directory", required_argument, NULL, OPT_WORKDIR },
	{ "pid", required_argument, NULL, 'p' },
	{ "raw-pt", required_argument, NULL, OPT_RAW_PT },
	{ "image", required_argument, NULL, OPT_IMAGE },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "addr-filter", required_argument, NULL, OPT_ADDR_FILTER },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "perf-script", required_argument, NULL, OPT_PERF_SCRIPT },
	{ "vmlinux", required_argument, NULL, OPT_VMLINUX },
	{ "btf", required_argument, NULL, OPT_BTF },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "events", required_argument, NULL, OPT_EVENTS },
	{ "jobs", required_argument, NULL, 'j' },
	{ "chunk-size", required_argument, NULL, OPT_CHUNK_SIZE },
	{ "decoder", required_argument, NULL, OPT_DECODER },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

const char *rv_command_name(enum rv_command command)
{
	switch (command) {
	case RV_CMD_RUN:
		return "run";
	case RV_CMD_ATTACH:
		return "attach";
	case RV_CMD_DECODE:
		return "decode";
	case RV_CMD_NONE:
		break;
	}
	return "";
}

static const char overview_help[] =
	"Usage: rearview COMMAND [OPTIONS]\n"
	"\n"
	"Record what a program was doing in the moments before now, and write a trace\n"
	"that opens in the Perfetto UI (https://ui.perfetto.dev).\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] -- COMMAND [ARGS...]   start COMMAND and record it\n"
	"  attach [OPTIONS] [-p PID[,PID...]]   record running processes until Ctrl-C\n"
	"                                       or until they exit (-- COMMAND: while\n"
	"                                       COMMAND runs)\n"
	"  decode [OPTIONS] CAPTURE             turn a capture (Intel PT, samples or\n"
	"                                       function records: perf.data or a\n"
	"                                       capture directory) into a trace\n"
	"\n"
	"  rearview COMMAND --help   shows the options of a command.\n"
	"  rearview --version        prints the version.\n"
	"\n"
	"Options may be spelt with one dash or two (-output or --output).\n";

static const char record_options_help[] =
	"Output:\n"
	"  -o, --output FILE          the trace: FILE.fxt (default trace.fxt), .json,\n"
	"                             compressed by the ending .gz or .zst (.fxt.zst,\n"
	"                             .json.gz); an existing file is replaced. -o -\n"
	"                             writes FXT to standard output, for a pipe (not\n"
	"                             with a COMMAND, whose output it is too)\n"
	"      --working-directory DIR\n"
	"                             keep the capture (DIR/perf.data, which perf report\n"
	"                             opens) there, its files 0600; by default it goes to\n"
	"                             a temporary directory that is removed afterwards.\n"
	"                             Refused if others or its group may write to DIR\n"
	"                             (unless it is sticky and yours)\n"
	"\n"
	"Recording:\n"
	"      --backend auto|pt|sample|uprobe\n"
	"                             how to record. auto uses Intel PT where the\n"
	"                             intel_pt PMU exists and stack sampling otherwise,\n"
	"                             with a note saying so; uprobe records every call\n"
	"                             and return of chosen functions exactly, through\n"
	"                             BPF uprobes (root only; see below)\n"
	"      --sampling             same as --backend sample (context switches are\n"
	"                             recorded too: off-CPU time is drawn as\n"
	"                             [off-cpu: REASON] spans, never as running)\n"
	"      --timer-resolution R   sampling: low (1 kHz), normal (10 kHz, the\n"
	"                             default), high (the kernel's\n"
	"                             perf_event_max_sample_rate) or sample:HZ.\n"
	"                             Intel PT: low (TSC only), normal (CYC and MTC,\n"
	"                             the default), high (normal without return\n"
	"                             compression) or custom:NAME=VALUE,... with the\n"
	"                             PMU's format names (custom:cyc=1,mtc_period=3)\n"
	"      --callgraph-mode fp|dwarf[,SIZE]|lbr\n"
	"                             how stacks are taken: fp walks frame pointers in the\n"
	"                             kernel; dwarf copies registers and SIZE bytes of\n"
	"                             stack per sample (default 8192, at most 65528) and\n"
	"                             unwinds them with the binaries' CFI as they arrive,\n"
	"                             keeping each as its call chain (works without frame\n"
	"                             pointers; the default); a stack deeper than the\n"
	"                             copy shows under [stack cut]. lbr needs last branch\n"
	"                             records, which few CPUs expose\n"
	"      --keep-raw-stacks      dwarf with --full-execution: keep each sample's\n"
	"                             registers and stack copy in the capture (8 KiB or\n"
	"                             SIZE a sample, not a few hundred bytes), for perf\n"
	"                             report --call-graph dwarf on it\n"
	"      --trace-include-kernel also record the kernel (root only)\n"
	"      --trace-kernel-only    only the kernel (Intel PT, root only)\n"
	"      --vmlinux FILE         the running kernel's image with its symbols: names\n"
	"                             kernel code (before kallsyms), and is Intel PT's\n"
	"                             kernel code where /proc/kcore is absent; refused\n"
	"                             unless it is an ELF file with the running kernel's\n"
	"                             build id\n"
	"      --decoder fast|libipt  how Intel PT is decoded once recorded: fast (the\n"
	"                             default), a cached walk on libipt's query layer\n"
	"                             that hands what it does not model to libipt's\n"
	"                             block decoder; libipt, that block decoder alone.\n"
	"                             The trace is the same either way\n"
	"      --multi-thread         every thread of each recorded process, not only\n"
	"                             its main thread\n"
	"      --no-follow            run: record only COMMAND's own process. By default\n"
	"                             the processes it forks and what they exec are\n"
	"                             recorded too (sampling, Intel PT; the uprobe\n"
	"                             backend follows forks but not execs), each on a\n"
	"                             process track of its own; recording ends when\n"
	"                             COMMAND exits, as perf record's does\n"
	"      --snapshot-size SIZE   keep the last SIZE of trace (a flight recorder,\n"
	"                             written at exit, Ctrl-C or a snapshot), e.g. 512K,\n"
	"                             16M; rounded up to a power-of-two number of pages.\n"
	"                             Sampling: default 4M with fp, 64M with dwarf;\n"
	"                             uprobe: default 64M (48 bytes a record, two\n"
	"                             records a call)\n"
	"                             Intel PT: default 4M per buffer; a --trigger or\n"
	"                             --min-duration snapshot keeps all of it\n"
	"      --full-execution       keep everything from start to end instead,\n"
	"                             flushed to the capture every second (a killed\n"
	"                             recording decodes up to its last flush)\n"
	"      --duration DUR         stop recording after DUR (500ms, 5s, 1.5s) and\n"
	"                             write the trace; the program runs on (run waits\n"
	"                             for it and exits with its status). Exit and Ctrl-C\n"
	"                             still end it sooner\n"
	"      --events LIST          also record these perf events and draw each as an\n"
	"                             instant on the thread that took it, named after\n"
	"                             the event, with its ip, symbol, count and addr:\n"
	"                             page-faults, minor-faults, major-faults,\n"
	"                             context-switches, cpu-migrations, any tracepoint\n"
	"                             SUBSYS:NAME (sched:sched_switch), and where the CPU\n"
	"                             has a PMU branch-misses (every 50th) and\n"
	"                             cache-misses; NAME/period=N samples every N-th.\n"
	"                             Comma-separated; every backend. Hardware events\n"
	"                             are refused on a machine without a CPU PMU (most\n"
	"                             VMs)\n"
	"      --btf FILE             the kernel's BTF, for a kernel without\n"
	"                             /sys/kernel/btf/vmlinux (built without\n"
	"                             CONFIG_DEBUG_INFO_BTF): a BTF file for this very\n"
	"                             kernel (btfhub, or pahole --btf_encode_detached).\n"
	"                             Only --backend uprobe needs one. Without BTF,\n"
	"                             sampling and --filter/--trigger work, but\n"
	"                             off-CPU spans say only preempted or blocked, and\n"
	"                             run does not follow COMMAND's children (which\n"
	"                             needs the kernel's own BTF, not --btf's)\n"
	"\n"
	"Functions (--backend uprobe):\n"
	"      --functions PAT[,PAT...]\n"
	"                             the functions to trace: shell globs over the\n"
	"                             executable's function symbols ('parse_*',\n"
	"                             'ns::Class::*'), or LIB:GLOB for a library\n"
	"                             ('libc:mall*', 'libfoo.so.1:*'); repeatable.\n"
	"                             Default: every function of the executable. A\n"
	"                             pattern that matches nothing is an error; what\n"
	"                             cannot be probed is skipped (listed with -v)\n"
	"      --exclude PAT[,PAT...] do not trace the functions these patterns match\n"
	"                             (same globs as --functions; repeatable), such as\n"
	"                             a tiny function called millions of times\n"
	"      --exits return-sites|uretprobe\n"
	"                             how returns are seen. return-sites (the default):\n"
	"                             a plain uprobe on every instruction that leaves a\n"
	"                             function (ret, tail-call jumps), found by decoding\n"
	"                             its code, .cold parts included; nothing on the\n"
	"                             program's stack changes, so C++ exceptions,\n"
	"                             longjmp and stack switches work as without\n"
	"                             tracing. uretprobe: the kernel's return probes,\n"
	"                             which replace return addresses and so make a\n"
	"                             throwing C++ program terminate; used anyway for\n"
	"                             a function whose code cannot be decoded (-v\n"
	"                             lists them), and much cheaper where the kernel's\n"
	"                             single steps of a probed ret are slow (a VM:\n"
	"                             tens of us a call; see the summary's overhead)\n"
	"      --kernel-events LIST   also record the kernel's work for the traced\n"
	"                             threads, nested in the calls that caused it:\n"
	"                             syscalls (a span per system call), sched (off-CPU\n"
	"                             spans with their reason), faults (page faults),\n"
	"                             irq (interrupt handlers); comma-separated\n"
	"      --kernel-functions PAT[,PAT...]\n"
	"                             also trace these kernel functions (globs over\n"
	"                             /proc/kallsyms) through fentry/fexit, or kprobes\n"
	"                             where fentry is refused; refused up front on\n"
	"                             kernels that allow neither\n"
	"      Without --multi-thread only the main thread is recorded, as with the\n"
	"      other backends. run follows the processes COMMAND forks but not what\n"
	"      they exec (it says when a child exec'd): the probes then go on every\n"
	"      process that maps the probed files, and others running a probed\n"
	"      function pay its trap (--no-follow keeps them on COMMAND alone).\n"
	"\n"
	"When (the gate, decided in the kernel by BPF on uprobes). A SITE is a place in\n"
	"the program (run: COMMAND; attach: the first PID's executable):\n"
	"      FUNCTION, symbol:FUNCTION   a function (C++ names demangled or not)\n"
	"      LIB:FUNCTION                a function of a library (libc.so.6:malloc)\n"
	"      0xADDR, addr:0xADDR         a link-time code address (as nm shows it)\n"
	"      FILE:LINE[:COL], line:FILE:LINE[:COL]\n"
	"                                  a source line (DWARF); COL picks the line\n"
	"                                  table's row of that column\n"
	"      ?, symbol:?, line:?         choose a function or source line from a list\n"
	"                                  (fzf when installed; needs a terminal)\n"
	"      .                           the program's magic_trace_stop_indicator or\n"
	"                                  rearview_stop_indicator function\n"
	"      --filter START,STOP    record only between a call of START and the next\n"
	"                             call of STOP, per thread; each window is a span\n"
	"                             (--filter ?,? asks for both)\n"
	"      --min-duration DUR     with --filter: keep only windows longer than DUR\n"
	"                             (300us, 2ms): the first one ends the recording\n"
	"      --trigger SITE         take the snapshot when SITE runs: the trace holds\n"
	"                             what came before it, and recording ends\n"
	"      --multi-snapshot       a snapshot at every --trigger hit (or every window\n"
	"                             longer than --min-duration), each a segment of the\n"
	"                             trace; recording goes on\n"
	"      --dry-run              print the perf events, uprobes and BPF programs\n"
	"                             that would be set up, and the gate's thresholds\n"
	"                             (which hits fire, --min-duration), and exit\n"
	"\n"
	"General:\n"
	"  -v, --verbose              more detail on stderr (repeat for more)\n"
	"      --help                 this text\n";

static const char run_help[] =
	"Usage: rearview run [OPTIONS] -- COMMAND [ARGS...]\n"
	"       rearview run [OPTIONS] COMMAND [ARGS...] [-- ARGS...]\n"
	"\n"
	"Starts COMMAND stopped before its first instruction, sets up recording, lets it\n"
	"run, and writes the trace when it exits or at Ctrl-C. COMMAND's standard input\n"
	"and output are its own; rearview exits with COMMAND's exit status. The\n"
	"processes COMMAND starts are recorded too, each on its own process track\n"
	"(--no-follow: COMMAND's process alone). A COMMAND still running once the trace\n"
	"is written (it ignores Ctrl-C) is waited for, as rearview says: Ctrl-C again\n"
	"leaves it running (rearview exits 130), twice more kills it.\n"
	"\n"
	"rearview's options end at the first -- or at COMMAND, the first argument that\n"
	"is not an option. After -- every argument following COMMAND is passed to it\n"
	"unchanged, a later -- included (run -- echo -- x prints \"-- x\"). Without a\n"
	"-- before COMMAND, the first -- after it only separates COMMAND's arguments,\n"
	"as in magic-trace, and is not passed (run echo -- hello prints \"hello\").\n"
	"\n";

static const char attach_help[] =
	"Usage: rearview attach [OPTIONS] [-p PID[,PID...]] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Records running processes until Ctrl-C or until they all exit, then writes the\n"
	"trace; the processes keep running, unharmed. Without -p, offers the running\n"
	"processes to choose from (through fzf where it is installed, else as a\n"
	"numbered list).\n"
	"\n"
	"With -- COMMAND, starts COMMAND once recording is set up (COMMAND itself is not\n"
	"recorded) and records the processes while it runs: the trace is written when\n"
	"COMMAND exits (or sooner: the processes exit, Ctrl-C, --duration), then\n"
	"rearview waits for COMMAND and exits with its exit status (1 when recording\n"
	"failed; Ctrl-C again stops waiting and leaves it running, twice more kills\n"
	"it, as for run). COMMAND's standard input and output are its own.\n"
	"\n"
	"  -p, --pid PID[,PID...]     the processes to record, each once; a kernel\n"
	"                             thread only with --trace-include-kernel\n"
	"\n";

static const char decode_help[] =
	"Usage: rearview decode [OPTIONS] CAPTURE\n"
	"       rearview decode [OPTIONS] --raw-pt FILE --image FILE@ADDR[,FILE@ADDR...]\n"
	"       rearview decode [OPTIONS] --perf-script FILE\n"
	"\n"
	"Decodes an Intel PT capture into a trace of every call and return. CAPTURE is\n"
	"a perf.data (file or pipe mode, \"-\" for standard input) or a directory\n"
	"holding one (DIR/perf.data or perf's DIR/data), as written by rearview,\n"
	"softpt or `perf record -e intel_pt//`. Code comes from the binaries the\n"
	"capture names, which must still be there (a missing one is reported with\n"
	"how much trace it left undecoded); the vdso from DIR/vdso.so; kernel code\n"
	"from DIR/kcore_dir or --vmlinux, BPF programs' from DIR/bpf_images, and\n"
	"kernel code patched while recording from its TEXT_POKE records, each from\n"
	"its time on. A capture of stack samples (kept by\n"
	"`rearview run --working-directory`, or perf record -g's) or of the function\n"
	"tracer's records decodes too, told apart by the events it declares.\n"
	"\n"
	"Output:\n"
	"  -o, --output FILE          the trace: FILE.fxt (default trace.fxt), .json,\n"
	"                             compressed by the ending .gz or .zst (.fxt.zst,\n"
	"                             .json.gz); an existing file is replaced. -o -\n"
	"                             writes FXT to standard output, for a pipe\n"
	"      --stats                print what was decoded: packets, instructions,\n"
	"                             blocks, calls, returns, errors with their offsets,\n"
	"                             which walker decoded how much (--decoder), the\n"
	"                             time the trace covers and the decoding speed\n"
	"\n"
	"Input:\n"
	"      --trace-include-kernel decode and name kernel code too (root only)\n"
	"      --vmlinux FILE         the recorded kernel's image with its symbols: its\n"
	"                             names (before kallsyms), and its code for captures\n"
	"                             without kcore_dir; moved by the KASLR offset the\n"
	"                             capture records; refused unless it is an ELF file\n"
	"                             with the build id the capture gives its kernel\n"
	"      --raw-pt FILE          a raw PT packet stream instead of a capture (like\n"
	"                             ptxed --raw), with its code given by --image\n"
	"      --image FILE@ADDR[,FILE@ADDR...]\n"
	"                             flat memory images loaded at ADDR (repeatable;\n"
	"                             no two may overlap)\n"
	"      --cpu FAMILY/MODEL/STEPPING\n"
	"                             the CPU that recorded a raw trace, for its errata\n"
	"                             (e.g. 6/142/10)\n"
	"      --addr-filter BEGIN-END\n"
	"                             the address filter the raw trace was recorded with\n"
	"                             (default: from the lowest to the highest image byte)\n"
	"      --perf-script FILE     import the text `perf script` printed on another\n"
	"                             machine (\"-\" for standard input): Intel PT\n"
	"                             branches of `perf script --itrace=be -F pid,tid,\n"
	"                             time,flags,ip,addr,sym,symoff,dso`, or the call\n"
	"                             stacks of a `perf record -g` capture; other\n"
	"                             events' samples become instants\n"
	"\n"
	"Speed:\n"
	"  -j, --jobs N               decoding threads (default: one per CPU); the trace\n"
	"                             is the same whatever N is\n"
	"      --chunk-size SIZE      cut PT buffers at PSB packets into pieces of at\n"
	"                             least SIZE for parallel decoding (default 256K)\n"
	"      --decoder fast|libipt  fast (the default): a cached walk on libipt's\n"
	"                             query layer that hands what it does not model\n"
	"                             to libipt's block decoder; libipt: that block\n"
	"                             decoder alone, to compare or if fast is\n"
	"                             suspected. The events are the same either way\n"
	"\n"
	"General:\n"
	"  -v, --verbose              more detail on stderr (repeat for more)\n"
	"      --help                 this text\n";

static void free_list(char ***list, size_t *count)
{
	for (size_t i = 0; i < *count; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*count = 0;
}

void rv_options_destroy(struct rv_options *opts)
{
	for (size_t i = 0; i < opts->nr_images; i++)
		free(opts->images[i].path);
	opts->nr_images = 0;
	free(opts->filter_start);
	free(opts->filter_stop);
	opts->filter_start = opts->filter_stop = NULL;
	free_list(&opts->functions, &opts->nr_functions);
	free_list(&opts->exclude, &opts->nr_exclude);
	free_list(&opts->kernel_functions, &opts->nr_kernel_functions);
	free(opts->owned_argv);
	opts->owned_argv = NULL;
}

int rv_parse_patterns(const char *text, const char *option, char ***list, size_t *count,
		      struct rv_error *err)
{
	const char *p = text;

	for (;;) {
		size_t len = strcspn(p, ",");
		char **grown;

		if (len == 0 || len > 1024)
			return rv_error_set(err, EINVAL,
					    "invalid %s '%s': give shell patterns separated by "
					    "commas, none empty, e.g. 'parse_*,lex_*'",
					    option, text);
		if (*count == RV_MAX_FUNCTION_PATTERNS)
			return rv_error_set(err, E2BIG, "more than %d %s patterns",
					    RV_MAX_FUNCTION_PATTERNS, option);
		grown = realloc(*list, (*count + 1) * sizeof(**list));
		if (!grown)
			return rv_error_set(err, ENOMEM, "out of memory");
		*list = grown;
		(*list)[*count] = strndup(p, len);
		if (!(*list)[*count])
			return rv_error_set(err, ENOMEM, "out of memory");
		(*count)++;
		p += len;
		if (!*p)
			return 0;
		p++;
	}
}

int rv_parse_kernel_events(const char *text, unsigned *groups, struct rv_error *err)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "syscalls", RV_KERNEL_EVENTS_SYSCALLS },
		{ "sched", RV_KERNEL_EVENTS_SCHED },
		{ "faults", RV_KERNEL_EVENTS_FAULTS },
		{ "irq", RV_KERNEL_EVENTS_IRQ },
	};
	const char *p = text;

	for (;;) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (len == strlen(names[i].name) && !strncmp(p, names[i].name, len))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return rv_error_set(err, EINVAL,
					    "invalid --kernel-events '%s': use syscalls, sched, "
					    "faults and irq, separated by commas (e.g. "
					    "syscalls,sched)",
					    text);
		*groups |= names[i].bit;
		p += len;
		if (!*p)
			return 0;
		p++;
	}
}

/* A number as C writes it (decimal, 0x hex, 0 octal), digits only: no sign
 * or space before it (strtoull would take both). -ERANGE when it does not
 * fit in 64 bits, -EINVAL when it is not a number. */
static int parse_u64(const char *text, uint64_t *out)
{
	char *end;

	if (*text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(text, &end, 0);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	return 0;
}

int rv_parse_image(const char *text, struct rv_raw_image *out, struct rv_error *err)
{
	const char *at = strrchr(text, '@');
	int ret;

	if (!at || at == text || !at[1])
		return rv_error_set(
			err, EINVAL,
			"invalid --image '%s': use FILE@ADDRESS, e.g. image.bin@0x400000", text);
	ret = parse_u64(at + 1, &out->addr);
	if (ret == -ERANGE)
		return rv_error_set(err, ERANGE,
				    "invalid --image '%s': '%s' is past the top of the 64-bit "
				    "address space",
				    text, at + 1);
	if (ret)
		return rv_error_set(
			err, EINVAL,
			"invalid --image '%s': '%s' is not an address (decimal or 0x hex)", text,
			at + 1);
	out->path = strndup(text, (size_t)(at - text));
	if (!out->path)
		return rv_error_set(err, ENOMEM, "out of memory");
	return 0;
}

int rv_parse_addr_range(const char *text, uint64_t range[2], struct rv_error *err)
{
	char begin[64];
	const char *dash = strchr(text, '-');

	if (!dash || (size_t)(dash - text) >= sizeof(begin))
		return rv_error_set(
			err, EINVAL,
			"invalid --addr-filter '%s': use BEGIN-END, e.g. 0x400000-0x427000", text);
	memcpy(begin, text, (size_t)(dash - text));
	begin[dash - text] = '\0';
	if (parse_u64(begin, &range[0]) || parse_u64(dash + 1, &range[1]))
		return rv_error_set(err, EINVAL,
				    "invalid --addr-filter '%s': BEGIN and END are addresses "
				    "(decimal or 0x hex)",
				    text);
	if (range[1] <= range[0])
		return rv_error_set(err, EINVAL,
				    "invalid --addr-filter '%s': END must be above BEGIN", text);
	return 0;
}

static int parse_images(struct rv_options *opts, const char *text, struct rv_error *err)
{
	char *copy = strdup(text), *save = NULL;
	int ret = 0;

	if (!copy)
		return rv_error_set(err, ENOMEM, "out of memory");
	for (char *spec = strtok_r(copy, ",", &save); spec && !ret;
	     spec = strtok_r(NULL, ",", &save)) {
		if (opts->nr_images == RV_MAX_IMAGES) {
			ret = rv_error_set(err, E2BIG, "more than %d --image files", RV_MAX_IMAGES);
			break;
		}
		ret = rv_parse_image(spec, &opts->images[opts->nr_images], err);
		if (!ret)
			opts->nr_images++;
	}
	free(copy);
	return ret;
}

void rv_options_print_help(enum rv_command command, FILE *out)
{
	switch (command) {
	case RV_CMD_DECODE:
		fputs(decode_help, out);
		break;
	case RV_CMD_RUN:
		fputs(run_help, out);
		fputs(record_options_help, out);
		break;
	case RV_CMD_ATTACH:
		fputs(attach_help, out);
		fputs(record_options_help, out);
		break;
	default:
		fputs(overview_help, out);
		break;
	}
}

uint64_t rv_round_pow2_pages(uint64_t bytes, uint64_t page_size)
{
	uint64_t pages = (bytes + page_size - 1) / page_size;
	uint64_t pow2 = 1;

	while (pow2 < pages)
		pow2 <<= 1;
	return pow2 * page_size;
}

int rv_parse_size(const char *text, uint64_t *bytes, struct rv_error *err)
{
	const char *p = text;
	uint64_t value = 0, shift = 0;

	if (!isdigit((unsigned char)*p))
		goto bad;
	while (isdigit((unsigned char)*p)) {
		unsigned digit = (unsigned)(*p - '0');

		if (value > (UINT64_MAX - digit) / 10)
			goto bad;
		value = value * 10 + digit;
		p++;
	}
	switch (toupper((unsigned char)*p)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		goto bad;
	}
	if (shift) {
		p++;
		if (*p == 'i' && (p[1] == 'B' || p[1] == 'b'))
			p += 2;
		else if (*p == 'B' || *p == 'b')
			p++;
	}
	if (*p != '\0' || value == 0)
		goto bad;
	if (value > (UINT64_MAX >> shift) || (value << shift) > (1ULL << 48))
		return rv_error_set(err, ERANGE, "size '%s' is too large", text);
	*bytes = value << shift;
	return 0;
bad:
	return rv_error_set(err, EINVAL,
			    "invalid size '%s': use a number of bytes with an optional K, M, G "
			    "or T suffix, such as 512K or 16M",
			    text);
}

int rv_parse_pid_list(const char *text, pid_t *pids, size_t max, size_t *count,
		      struct rv_error *err)
{
	const char *p = text;

	*count = 0;
	while (*p) {
		char *end;
		long value;

		errno = 0;
		if (!isdigit((unsigned char)*p))
			goto bad;
		value = strtol(p, &end, 10);
		if (errno || value <= 0 || value > INT_MAX)
			goto bad;
		if (*count == max)
			return rv_error_set(err, E2BIG, "too many PIDs (at most %zu)", max);
		for (size_t i = 0; i < *count; i++)
			if (pids[i] == (pid_t)value)
				return rv_error_set(err, EINVAL,
						    "PID %ld is given twice in '-p %s': give each "
						    "process once",
						    value, text);
		pids[(*count)++] = (pid_t)value;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			goto bad;
	}
	if (*count == 0)
		goto bad;
	return 0;
bad:
	return rv_error_set(err, EINVAL,
			    "invalid PID list '%s': use process IDs separated by commas, "
			    "such as -p 1234 or -p 1234,5678",
			    text);
}

int rv_parse_timer_resolution(const char *text, enum rv_timer_kind *kind, uint64_t *hz,
			      const char **custom, struct rv_error *err)
{
	char *end;
	unsigned long long value;
	const char *number = NULL;

	if (!strcasecmp(text, "low")) {
		*kind = RV_TIMER_LOW;
		return 0;
	}
	if (!strcasecmp(text, "normal")) {
		*kind = RV_TIMER_NORMAL;
		return 0;
	}
	if (!strcasecmp(text, "high")) {
		*kind = RV_TIMER_HIGH;
		return 0;
	}
	if (!strncasecmp(text, "sample:", 7))
		number = text + 7;
	else if (!strncasecmp(text, "(Sample (freq ", 14))
		number = text + 14; /* magic-trace's sexp spelling */
	if (number && isdigit((unsigned char)*number)) {
		errno = 0;
		value = strtoull(number, &end, 10);
		if (number == text + 14 && strcmp(end, "))") == 0)
			end += 2;
		if (!errno && *end == '\0' && value >= 1 && value <= 10000000) {
			*kind = RV_TIMER_SAMPLE;
			*hz = value;
			return 0;
		}
	}
	if (!strncasecmp(text, "custom:", 7) && text[7]) {
		/* The terms are checked against the PMU's format when the
		 * event is built: only the syntax here. */
		for (const char *t = text + 7; *t;) {
			const char *comma = strchr(t, ',');
			size_t len = comma ? (size_t)(comma - t) : strlen(t);
			const char *eq = memchr(t, '=', len);

			if (!eq || eq == t || eq + 1 == t + len)
				return rv_error_set(
					err, EINVAL,
					"invalid --timer-resolution '%s': custom takes NAME=VALUE "
					"terms separated by commas, e.g. custom:cyc=1,cyc_thresh=2,"
					"mtc_period=3",
					text);
			t += len + (comma ? 1 : 0);
			if (comma && !*t)
				return rv_error_set(err, EINVAL,
						    "invalid --timer-resolution '%s': a comma "
						    "with no term after it",
						    text);
		}
		*kind = RV_TIMER_CUSTOM;
		*custom = text + 7;
		return 0;
	}
	return rv_error_set(err, EINVAL,
			    "invalid --timer-resolution '%s': use low, normal (the default), high, "
			    "sample:HZ (sampling, e.g. sample:4000) or custom:NAME=VALUE,... "
			    "(Intel PT, e.g. custom:cyc=1,mtc_period=0)",
			    text);
}

static char *copy_trimmed(const char *begin, const char *end)
{
	while (begin < end && isspace((unsigned char)*begin))
		begin++;
	while (end > begin && isspace((unsigned char)end[-1]))
		end--;
	return strndup(begin, (size_t)(end - begin));
}

int rv_parse_filter(const char *text, char **start, char **stop, struct rv_error *err)
{
	size_t len = strlen(text);
	const char *split;
	const char *end = text + len;

	*start = *stop = NULL;
	if (len >= 2 && text[0] == '(' && text[len - 1] == ')') {
		/* magic-trace's "(START STOP)" */
		text++;
		end--;
		while (text < end && isspace((unsigned char)*text))
			text++;
		split = text;
		while (split < end && !isspace((unsigned char)*split))
			split++;
	} else {
		split = memchr(text, ',', len);
		if (!split)
			split = end;
	}
	if (split >= end || split == text)
		return rv_error_set(err, EINVAL,
				    "invalid --filter '%s': give two sites, START,STOP (a symbol, "
				    "LIB:SYMBOL, 0xADDR, FILE:LINE[:COL] or '?' each), e.g. "
				    "request_begin,request_end",
				    text);
	*start = copy_trimmed(text, split);
	*stop = copy_trimmed(split + 1, end);
	if (!*start || !*stop || !**start || !**stop || strlen(*start) >= RV_MAX_PROBE_SPEC ||
	    strlen(*stop) >= RV_MAX_PROBE_SPEC || strchr(*stop, ',')) {
		bool nomem = !*start || !*stop;

		free(*start);
		free(*stop);
		*start = *stop = NULL;
		if (nomem)
			return rv_error_set(err, ENOMEM, "out of memory");
		return rv_error_set(err, EINVAL,
				    "invalid --filter '%s': give exactly two sites, START,STOP, "
				    "e.g. request_begin,request_end",
				    text);
	}
	return 0;
}

int rv_parse_duration(const char *text, uint64_t *ns, struct rv_error *err)
{
	static const struct {
		const char *suffix;
		double scale;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	char *end;
	double value;

	errno = 0;
	value = isdigit((unsigned char)*text) ? strtod(text, &end) : -1;
	if (value >= 0 && !errno && end != text) {
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			double v = value * units[i].scale;

			if (strcmp(end, units[i].suffix))
				continue;
			if (v < 1 || v > 1e18)
				break;
			*ns = (uint64_t)(v + 0.5);
			return 0;
		}
	}
	return rv_error_set(err, EINVAL,
			    "invalid duration '%s': a number with its unit, ns, us, ms or s "
			    "(e.g. 300us, 2ms, 1.5s)",
			    text);
}

int rv_parse_decoder(const char *text, enum rv_pt_decoder_choice *decoder, struct rv_error *err)
{
	if (!strcmp(text, "fast")) {
		*decoder = RV_PT_DECODER_FAST;
		return 0;
	}
	if (!strcmp(text, "libipt")) {
		*decoder = RV_PT_DECODER_LIBIPT;
		return 0;
	}
	return rv_error_set(err, EINVAL,
			    "invalid --decoder '%s': use fast (the default) or libipt (libipt's "
			    "block decoder alone, to compare with or if the fast one is suspected)",
			    text);
}

static int parse_backend(const char *text, enum rv_backend *backend, struct rv_error *err)
{
	if (!strcmp(text, "auto")) {
		*backend = RV_BACKEND_AUTO;
		return 0;
	}
	if (!strcmp(text, "sample") || !strcmp(text, "sampling")) {
		*backend = RV_BACKEND_SAMPLE;
		return 0;
	}
	if (!strcmp(text, "pt")) {
		*backend = RV_BACKEND_PT;
		return 0;
	}
	if (!strcmp(text, "uprobe")) {
		*backend = RV_BACKEND_UPROBE;
		return 0;
	}
	return rv_error_set(err, EINVAL,
			    "invalid --backend '%s': use auto, pt or sample, or uprobe to trace "
			    "functions exactly",
			    text);
}

int rv_parse_callgraph(const char *text, enum rv_callgraph_mode *mode, uint32_t *stack_bytes,
		       struct rv_error *err)
{
	*stack_bytes = 0;
	if (!strncmp(text, "dwarf,", 6)) {
		uint64_t size;
		char *end;

		errno = 0;
		size = strtoull(text + 6, &end, 10);
		if (!text[6] || text[6] == '-' || text[6] == '+' || *end || errno)
			return rv_error_set(
				err, EINVAL,
				"invalid --callgraph-mode '%s': SIZE is the bytes of stack "
				"copied per sample, a number such as dwarf,16384",
				text);
		if (size == 0 || size > 65528)
			return rv_error_set(
				err, EINVAL,
				"--callgraph-mode %s: SIZE must be from 8 to 65528 bytes "
				"(the kernel's limit for a sample's stack copy)",
				text);
		*stack_bytes = (uint32_t)((size + 7) / 8 * 8);
		*mode = RV_CALLGRAPH_DWARF;
		return 0;
	}
	if (!strcmp(text, "fp")) {
		*mode = RV_CALLGRAPH_FP;
		return 0;
	}
	if (!strcmp(text, "dwarf")) {
		*mode = RV_CALLGRAPH_DWARF;
		return 0;
	}
	if (!strcmp(text, "lbr")) {
		*mode = RV_CALLGRAPH_LBR;
		return 0;
	}
	return rv_error_set(err, EINVAL,
			    "invalid --callgraph-mode '%s': use fp, dwarf, dwarf,SIZE or lbr",
			    text);
}

static enum rv_command command_from_name(const char *name)
{
	if (!strcmp(name, "run"))
		return RV_CMD_RUN;
	if (!strcmp(name, "attach"))
		return RV_CMD_ATTACH;
	if (!strcmp(name, "decode"))
		return RV_CMD_DECODE;
	return RV_CMD_NONE;
}

/* ---- "did you mean" for unknown commands and options ---- */

#define MAX_SPELLINGS 3

/* The closest names to what was typed, best first: those the typed text
 * abbreviates (an abbreviation getopt found ambiguous), else those within
 * rv_suggest_limit edits, all at the best distance; at most MAX_SPELLINGS. */
struct spellings {
	const char *names[MAX_SPELLINGS];
	size_t nr;
	size_t distance;
	bool abbreviated; /* the typed text begins each of names */
};

static void consider_spelling(struct spellings *sp, const char *typed, const char *name)
{
	size_t len = strlen(typed), d;

	if (len == 0)
		return;
	if (!strncmp(name, typed, len)) {
		d = 0;
	} else {
		d = rv_edit_distance(typed, name);
		if (d == 0 || d > rv_suggest_limit(typed))
			return;
	}
	if (sp->nr && d > sp->distance)
		return;
	if (!sp->nr || d < sp->distance)
		sp->nr = 0;
	sp->distance = d;
	sp->abbreviated = d == 0;
	if (sp->nr < MAX_SPELLINGS)
		sp->names[sp->nr++] = name;
}

/* "; did you mean 'A', 'B' or 'C'?" for sp, each name after prefix, in out
 * (empty when there is none). */
static void spellings_text(const struct spellings *sp, const char *prefix, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sp->nr && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s'%s%s'",
					 i == 0		   ? ": did you mean "
					 : i + 1 == sp->nr ? " or "
							   : ", ",
					 prefix, sp->names[i]);
	if (sp->nr && used < size)
		snprintf(out + used, size - used, "?");
}

/* Whether `rearview COMMAND` takes the long option name (the table is one
 * for every command; the checks after parsing refuse the others), so that
 * only those are suggested. */
static bool option_of_command(const char *name, enum rv_command command)
{
	static const char *const decode_only[] = { "raw-pt", "image",	    "cpu",  "addr-filter",
						   "stats",  "perf-script", "jobs", "chunk-size" };
	static const char *const also_decode[] = {
		"output", "trace-include-kernel", "vmlinux", "decoder", "verbose", "help", "version"
	};

	if (!strcmp(name, "pid"))
		return command == RV_CMD_ATTACH;
	for (size_t i = 0; i < sizeof(decode_only) / sizeof(decode_only[0]); i++)
		if (!strcmp(name, decode_only[i]))
			return command == RV_CMD_DECODE;
	if (command != RV_CMD_DECODE)
		return true;
	for (size_t i = 0; i < sizeof(also_decode) / sizeof(also_decode[0]); i++)
		if (!strcmp(name, also_decode[i]))
			return true;
	return false;
}

/* The error for an option getopt did not know (arg: as typed, "--name",
 * "-name" or "--name=value"; unknown_char: getopt's optopt, the short
 * option letter it did not know, or 0). */
static int unknown_option_error(const char *arg, int unknown_char, enum rv_command command,
				struct rv_error *err)
{
	struct spellings sp = { .nr = 0 };
	char typed[RV_SUGGEST_MAX_LEN + 1], hint[256];
	size_t dashes = strspn(arg, "-"), len;

	len = strcspn(arg + dashes, "=");
	if (dashes > 2 || len >= sizeof(typed))
		len = 0;
	memcpy(typed, arg + dashes, len);
	typed[len] = '\0';
	/* a value given to an option that takes none */
	if (arg[dashes + len] == '=') {
		const struct option *found = NULL;
		size_t matches = 0;

		for (const struct option *o = long_options; len && o->name; o++) {
			if (!strcmp(o->name, typed)) {
				found = o;
				matches = 1;
				break;
			}
			if (!strncmp(o->name, typed, len)) {
				found = o;
				matches++;
			}
		}
		if (matches == 1 && found->has_arg == no_argument)
			return rv_error_set(err, EINVAL,
					    "option '%s%s' takes no value (see rearview %s --help)",
					    dashes == 1 ? "-" : "--", found->name,
					    rv_command_name(command));
	}
	/* a letter getopt did not know in a group of short options (-vx) */
	if (unknown_char > 0 && unknown_char < 128 && isalpha(unknown_char) && dashes == 1)
		return rv_error_set(err, EINVAL, "unknown option '-%c' (see rearview %s --help)",
				    unknown_char, rv_command_name(command));
	for (const struct option *o = long_options; o->name; o++)
		if (option_of_command(o->name, command))
			consider_spelling(&sp, typed, o->name);
	spellings_text(&sp, dashes == 1 ? "-" : "--", hint, sizeof(hint));
	if (sp.abbreviated && sp.nr > 1)
		return rv_error_set(err, EINVAL,
				    "option '%s' is ambiguous%s (see rearview %s --help)", arg,
				    hint, rv_command_name(command));
	return rv_error_set(err, EINVAL, "unknown option '%s'%s (see rearview %s --help)", arg,
			    hint, rv_command_name(command));
}

static int parse_global(struct rv_options *opts, const char *arg, struct rv_error *err)
{
	static const char *const commands[] = { "run", "attach", "decode", "--help", "--version" };
	struct spellings sp = { .nr = 0 };
	char hint[256];

	if (!strcmp(arg, "--help") || !strcmp(arg, "-help") || !strcmp(arg, "-h")) {
		opts->help = true;
		return 0;
	}
	if (!strcmp(arg, "--version") || !strcmp(arg, "-version")) {
		opts->version = true;
		return 0;
	}
	/* the options' spellings only for what looks like an option */
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if ((arg[0] == '-') == (commands[i][0] == '-'))
			consider_spelling(&sp, arg, commands[i]);
	spellings_text(&sp, "", hint, sizeof(hint));
	if (sp.nr)
		return rv_error_set(err, EINVAL, "unknown command '%s'%s (see rearview --help)",
				    arg, hint);
	return rv_error_set(err, EINVAL,
			    "unknown command '%s': use 'rearview run -- COMMAND', 'rearview "
			    "attach -p PID' or 'rearview decode CAPTURE' (see rearview --help)",
			    arg);
}

static int check_decode(struct rv_options *opts, struct rv_error *err)
{
	size_t inputs = (opts->argc > 0) + (opts->raw_pt != NULL) + (opts->perf_script != NULL);

	if (opts->argc > 1)
		return rv_error_set(err, EINVAL,
				    "unexpected argument '%s': 'rearview decode' takes one capture",
				    opts->argv[1]);
	if (opts->btf)
		return rv_error_set(err, EINVAL,
				    "--btf is for 'rearview run' and 'rearview attach', which load "
				    "BPF programs; decoding needs no BTF");
	if (inputs == 0)
		return rv_error_set(err, EINVAL,
				    "nothing to decode: give a capture (perf.data or its "
				    "directory), --raw-pt FILE --image FILE@ADDR, or "
				    "--perf-script FILE");
	if (inputs > 1)
		return rv_error_set(err, EINVAL,
				    "give one input: a capture, --raw-pt or --perf-script");
	if (opts->raw_pt && opts->nr_images == 0)
		return rv_error_set(err, EINVAL,
				    "--raw-pt needs the code it ran: --image FILE@ADDR[,...]");
	if (!opts->raw_pt && (opts->nr_images || opts->cpu || opts->addr_filter[1]))
		return rv_error_set(err, EINVAL,
				    "--image, --cpu and --addr-filter describe a --raw-pt trace");
	if (opts->perf_script && (opts->vmlinux || opts->stats || opts->decoder_given))
		return rv_error_set(err, EINVAL,
				    "--perf-script imports decoded text: --vmlinux, --stats and "
				    "--decoder apply to PT data");
	if (opts->backend != RV_BACKEND_AUTO || opts->snapshot_size_bytes || opts->full_execution ||
	    opts->multi_thread || opts->no_follow || opts->working_directory ||
	    opts->callgraph != RV_CALLGRAPH_DEFAULT || opts->keep_raw_stacks ||
	    opts->filter_start || opts->trigger || opts->min_duration_ns || opts->multi_snapshot ||
	    opts->dry_run || opts->kernel_only || opts->timer != RV_TIMER_NORMAL ||
	    opts->nr_functions || opts->kernel_events || opts->nr_kernel_functions ||
	    opts->nr_exclude || opts->exits_given || opts->events.nr)
		return rv_error_set(err, EINVAL,
				    "recording options have no effect on 'rearview decode' (see "
				    "rearview decode --help)");
	return 0;
}

/* The function tracer's options need its backend, and it has no use for the
 * others' knobs. */
static int check_uprobe(const struct rv_options *opts, struct rv_error *err)
{
	const char *given = opts->nr_functions		? "--functions"
			    : opts->nr_exclude		? "--exclude"
			    : opts->exits_given		? "--exits"
			    : opts->kernel_events	? "--kernel-events"
			    : opts->nr_kernel_functions ? "--kernel-functions"
							: NULL;

	if (opts->backend != RV_BACKEND_UPROBE) {
		if (!given)
			return 0;
		return rv_error_set(err, EINVAL,
				    "%s belongs to the function tracer: add --backend uprobe",
				    given);
	}
	if (opts->include_kernel)
		return rv_error_set(err, EINVAL,
				    "--backend uprobe records the kernel with --kernel-events and "
				    "--kernel-functions, not --trace-include-kernel or "
				    "--trace-kernel-only");
	if (opts->callgraph != RV_CALLGRAPH_DEFAULT || opts->keep_raw_stacks)
		return rv_error_set(err, EINVAL,
				    "%s sets how sampling takes stacks; --backend uprobe records "
				    "every call instead",
				    opts->keep_raw_stacks ? "--keep-raw-stacks"
							  : "--callgraph-mode");
	if (opts->timer != RV_TIMER_NORMAL)
		return rv_error_set(err, EINVAL,
				    "--timer-resolution sets the sampling rate or Intel PT's "
				    "timing; --backend uprobe times every call and return to the "
				    "nanosecond");
	return 0;
}

/* "?", "symbol:?", "line:?": a site the user picks from a list (probe_site.h). */
static bool site_is_pick(const char *site)
{
	return site && (!strcmp(site, "?") || !strcmp(site, "symbol:?") || !strcmp(site, "line:?"));
}

/* The gate's options, among themselves and with the others. */
static int check_gate(const struct rv_options *opts, struct rv_error *err)
{
	const char *pick = site_is_pick(opts->trigger)	      ? "--trigger"
			   : site_is_pick(opts->filter_start) ? "--filter START"
			   : site_is_pick(opts->filter_stop)  ? "--filter STOP"
							      : NULL;

	if (pick && !(isatty(STDIN_FILENO) && isatty(STDERR_FILENO)))
		return rv_error_set(err, EINVAL,
				    "%s '?' chooses the site from a list, which needs a terminal "
				    "(standard input and error); without one, name the site: a "
				    "function, LIB:SYMBOL, addr:0xADDR or FILE:LINE[:COL]",
				    pick);
	if (opts->min_duration_ns && !opts->filter_start)
		return rv_error_set(
			err, EINVAL,
			"--min-duration keeps the --filter windows longer than it: give "
			"--filter START,STOP too");
	if (opts->multi_snapshot && !opts->trigger && !opts->min_duration_ns)
		return rv_error_set(err, EINVAL,
				    "--multi-snapshot takes a snapshot at every --trigger hit (or "
				    "every window longer than --min-duration): give one of them");
	if (opts->full_execution && (opts->trigger || opts->min_duration_ns))
		return rv_error_set(
			err, EINVAL,
			"--trigger and --min-duration take snapshots of the flight "
			"recorder, and --full-execution keeps everything: use one or the "
			"other");
	if (opts->trigger && opts->min_duration_ns)
		return rv_error_set(err, EINVAL,
				    "--trigger and --min-duration both decide when the snapshot is "
				    "taken: use one of them");
	return 0;
}

/* run's and attach's COMMAND, from the arguments left after the options
 * (args, n); separated: a `--` ended the options, so COMMAND is args[0]
 * with every argument after it unchanged. Without that `--`, the first
 * `--` after COMMAND is magic-trace's separator of the program's arguments
 * and is dropped (run only; attach wants its command after `--`). */
static int take_command(struct rv_options *opts, char **args, int n, bool separated,
			struct rv_error *err)
{
	int dash = 0;

	opts->argv = args;
	opts->argc = n;
	if (opts->command == RV_CMD_ATTACH) {
		if (n > 0 && !separated)
			return rv_error_set(err, EINVAL,
					    "unexpected argument '%s': 'rearview attach' takes "
					    "processes with -p PID[,PID...], and a command to run "
					    "while recording after --: rearview attach -p PID -- "
					    "COMMAND [ARGS...]",
					    args[0]);
		if (n == 0 && separated)
			return rv_error_set(err, EINVAL,
					    "no command after --: use 'rearview attach -p PID -- "
					    "COMMAND [ARGS...]', or leave -- out to record until "
					    "Ctrl-C");
		return 0;
	}
	if (n == 0)
		return rv_error_set(err, EINVAL,
				    "no command to run: use 'rearview run [OPTIONS] -- COMMAND "
				    "[ARGS...]'");
	if (separated)
		return 0;
	for (int i = 1; i < n && !dash; i++)
		if (!strcmp(args[i], "--"))
			dash = i;
	if (!dash)
		return 0;
	opts->owned_argv = calloc((size_t)n, sizeof(*opts->owned_argv));
	if (!opts->owned_argv)
		return rv_error_set(err, ENOMEM, "out of memory");
	memcpy(opts->owned_argv, args, (size_t)dash * sizeof(*args));
	memcpy(opts->owned_argv + dash, args + dash + 1, (size_t)(n - dash - 1) * sizeof(*args));
	opts->argv = opts->owned_argv;
	opts->argc = n - 1;
	return 0;
}

/* `-o -` (the trace on standard output) beside a command whose standard
 * output is its own, and nothing of ours besides the trace. */
static int check_output(const struct rv_options *opts, struct rv_error *err)
{
	if (strcmp(opts->output, "-"))
		return 0;
	if (opts->dry_run)
		return rv_error_set(err, EINVAL,
				    "--dry-run prints its plan on standard output and writes no "
				    "trace: leave out -o -");
	if (opts->command == RV_CMD_RUN || (opts->command == RV_CMD_ATTACH && opts->argc > 0))
		return rv_error_set(err, EINVAL,
				    "-o - writes the trace to standard output, which COMMAND "
				    "writes to as well: write the trace to a file (-o FILE), or "
				    "send COMMAND's output elsewhere through a shell (-- sh -c "
				    "'COMMAND > FILE')");
	if (opts->stats)
		return rv_error_set(err, EINVAL,
				    "--stats prints on standard output, where -o - writes the "
				    "trace: write the trace to a file (-o FILE)");
	return 0;
}

int rv_options_parse(struct rv_options *opts, int argc, char **argv, struct rv_error *err)
{
	const char *last_optarg = NULL;
	bool separated;
	int c, ret;

	memset(opts, 0, sizeof(*opts));
	opts->output = RV_DEFAULT_OUTPUT;
	opts->timer = RV_TIMER_NORMAL;

	if (argc < 2) {
		opts->help = true;
		return 0;
	}
	opts->command = command_from_name(argv[1]);
	if (opts->command == RV_CMD_NONE)
		return parse_global(opts, argv[1], err);

	/* run: '+' stops at the first non-option, which is the command to run;
	 * decode: options may come after the capture, as they do in perf. */
	/* The command stands where getopt expects the program's name, and
	 * optind 0 resets getopt's state (a '+' of an earlier parse, its
	 * permutation) as setting it to 1 does not. */
	argc--;
	argv++;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long_only(argc, argv,
				     opts->command == RV_CMD_DECODE ? ":o:p:j:vh" : "+:o:p:j:vh",
				     long_options, NULL)) != -1) {
		last_optarg = optarg;
		switch (c) {
		case 'o':
			if (!*optarg)
				return rv_error_set(err, EINVAL, "--output needs a file name");
			opts->output = optarg;
			break;
		case 'p':
			if (opts->command != RV_CMD_ATTACH)
				return rv_error_set(err, EINVAL,
						    "-p belongs to 'rearview attach'; 'rearview "
						    "run' starts its own command");
			ret = rv_parse_pid_list(optarg, opts->pids, RV_MAX_PIDS, &opts->nr_pids,
						err);
			if (ret)
				return ret;
			break;
		case 'v':
			opts->verbose++;
			break;
		case 'h':
		case OPT_HELP:
			opts->help = true;
			break;
		case OPT_VERSION:
			opts->version = true;
			break;
		case OPT_BACKEND:
			ret = parse_backend(optarg, &opts->backend, err);
			if (ret)
				return ret;
			break;
		case OPT_SAMPLING:
			opts->backend = RV_BACKEND_SAMPLE;
			break;
		case OPT_TIMER:
			ret = rv_parse_timer_resolution(optarg, &opts->timer, &opts->sample_hz,
							&opts->timer_custom, err);
			if (ret)
				return ret;
			break;
		case OPT_CALLGRAPH:
			ret = rv_parse_callgraph(optarg, &opts->callgraph, &opts->dwarf_stack_bytes,
						 err);
			if (ret)
				return ret;
			break;
		case OPT_KERNEL:
			opts->include_kernel = true;
			break;
		case OPT_KERNEL_ONLY:
			opts->include_kernel = opts->kernel_only = true;
			break;
		case OPT_DRY_RUN:
			opts->dry_run = true;
			break;
		case OPT_FILTER:
			free(opts->filter_start);
			free(opts->filter_stop);
			ret = rv_parse_filter(optarg, &opts->filter_start, &opts->filter_stop, err);
			if (ret)
				return ret;
			break;
		case OPT_TRIGGER:
			if (!*optarg || strlen(optarg) >= RV_MAX_PROBE_SPEC)
				return rv_error_set(err, EINVAL,
						    "--trigger needs a site: a symbol, LIB:SYMBOL, "
						    "0xADDR, FILE:LINE[:COL], '.' or '?'");
			opts->trigger = optarg;
			break;
		case OPT_MIN_DURATION:
			ret = rv_parse_duration(optarg, &opts->min_duration_ns, err);
			if (ret)
				return rv_error_prefix(err, "--min-duration");
			break;
		case OPT_MULTI_SNAPSHOT:
			opts->multi_snapshot = true;
			break;
		case OPT_FUNCTIONS:
			ret = rv_parse_patterns(optarg, "--functions", &opts->functions,
						&opts->nr_functions, err);
			if (ret)
				return ret;
			break;
		case OPT_EXCLUDE:
			ret = rv_parse_patterns(optarg, "--exclude", &opts->exclude,
						&opts->nr_exclude, err);
			if (ret)
				return ret;
			break;
		case OPT_EXITS:
			if (!strcmp(optarg, "return-sites"))
				opts->exits_uretprobe = false;
			else if (!strcmp(optarg, "uretprobe"))
				opts->exits_uretprobe = true;
			else
				return rv_error_set(err, EINVAL,
						    "invalid --exits '%s': use return-sites (the "
						    "default) or uretprobe",
						    optarg);
			opts->exits_given = true;
			break;
		case OPT_KERNEL_EVENTS:
			ret = rv_parse_kernel_events(optarg, &opts->kernel_events, err);
			if (ret)
				return ret;
			break;
		case OPT_KERNEL_FUNCTIONS:
			ret = rv_parse_patterns(optarg, "--kernel-functions",
						&opts->kernel_functions, &opts->nr_kernel_functions,
						err);
			if (ret)
				return ret;
			break;
		case OPT_MULTI_THREAD:
			opts->multi_thread = true;
			break;
		case OPT_NO_FOLLOW:
			opts->no_follow = true;
			break;
		case OPT_FULL:
			opts->full_execution = true;
			break;
		case OPT_KEEP_RAW_STACKS:
			opts->keep_raw_stacks = true;
			break;
		case OPT_SNAPSHOT_SIZE:
			ret = rv_parse_size(optarg, &opts->snapshot_size_bytes, err);
			if (ret)
				return rv_error_prefix(err, "--snapshot-size");
			opts->snapshot_size_bytes =
				rv_round_pow2_pages(opts->snapshot_size_bytes, 4096);
			break;
		case OPT_RAW_PT:
			opts->raw_pt = optarg;
			break;
		case OPT_IMAGE:
			ret = parse_images(opts, optarg, err);
			if (ret)
				return ret;
			break;
		case OPT_CPU:
			opts->cpu = optarg;
			break;
		case OPT_ADDR_FILTER:
			ret = rv_parse_addr_range(optarg, opts->addr_filter, err);
			if (ret)
				return ret;
			break;
		case OPT_STATS:
			opts->stats = true;
			break;
		case OPT_PERF_SCRIPT:
			opts->perf_script = optarg;
			break;
		case OPT_VMLINUX:
			opts->vmlinux = optarg;
			break;
		case OPT_BTF:
			opts->btf = optarg;
			break;
		case OPT_DURATION:
			if (opts->command == RV_CMD_DECODE)
				return rv_error_set(
					err, EINVAL,
					"--duration is for 'rearview run' and 'rearview "
					"attach': it says how long to record");
			ret = rv_parse_duration(optarg, &opts->duration_ns, err);
			if (ret)
				return rv_error_prefix(err, "--duration");
			break;
		case OPT_EVENTS:
			ret = rv_extra_events_parse(optarg, &opts->events, err);
			if (ret)
				return ret;
			break;
		case 'j': {
			uint64_t jobs;

			if (parse_u64(optarg, &jobs) || jobs == 0 || jobs > 1024)
				return rv_error_set(
					err, EINVAL,
					"invalid --jobs '%s': use a number from 1 to 1024", optarg);
			opts->jobs = (unsigned)jobs;
			break;
		}
		case OPT_CHUNK_SIZE:
			ret = rv_parse_size(optarg, &opts->chunk_bytes, err);
			if (ret)
				return rv_error_prefix(err, "--chunk-size");
			break;
		case OPT_DECODER:
			ret = rv_parse_decoder(optarg, &opts->decoder, err);
			if (ret)
				return ret;
			opts->decoder_given = true;
			break;
		case OPT_WORKDIR:
			if (!*optarg)
				return rv_error_set(err, EINVAL,
						    "--working-directory needs a directory");
			opts->working_directory = optarg;
			break;
		case ':':
			return rv_error_set(err, EINVAL,
					    "option '%s' needs a value (see rearview %s --help)",
					    argv[optind - 1], rv_command_name(opts->command));
		default:
			return unknown_option_error(argv[optind - 1], optopt, opts->command, err);
		}
	}
	if (opts->help || opts->version)
		return 0;

	/* getopt consumed a `--` that ended the options (not an option's value
	 * that happens to be "--") */
	separated = optind > 1 && optind <= argc && argv[optind - 1] != last_optarg &&
		    !strcmp(argv[optind - 1], "--");
	if (opts->command == RV_CMD_DECODE) {
		opts->argv = argv + optind;
		opts->argc = argc - optind;
	} else {
		ret = take_command(opts, argv + optind, argc - optind, separated, err);
		if (ret)
			return ret;
	}
	ret = check_output(opts, err);
	if (ret)
		return ret;
	if (opts->command == RV_CMD_ATTACH && opts->no_follow)
		return rv_error_set(err, EINVAL,
				    "--no-follow is for 'rearview run': 'rearview attach' records "
				    "only the processes given, never their children");
	if (opts->command == RV_CMD_DECODE)
		return check_decode(opts, err);
	if (opts->raw_pt || opts->nr_images || opts->cpu || opts->addr_filter[1] || opts->stats ||
	    opts->perf_script || opts->jobs || opts->chunk_bytes)
		return rv_error_set(
			err, EINVAL,
			"--raw-pt, --image, --cpu, --addr-filter, --stats, --perf-script, "
			"--jobs and --chunk-size belong to 'rearview decode'");
	if (opts->decoder_given &&
	    (opts->backend == RV_BACKEND_SAMPLE || opts->backend == RV_BACKEND_UPROBE))
		return rv_error_set(
			err, EINVAL,
			"--decoder chooses how Intel PT is decoded, and --backend %s "
			"records none: leave --decoder out, or record with --backend pt",
			opts->backend == RV_BACKEND_SAMPLE ? "sample" : "uprobe");
	if (opts->vmlinux && !opts->include_kernel)
		return rv_error_set(
			err, EINVAL,
			"--vmlinux names and decodes the kernel, which is recorded only "
			"with --trace-include-kernel or --trace-kernel-only: add one");
	if (opts->full_execution && opts->snapshot_size_bytes)
		return rv_error_set(err, EINVAL,
				    "--snapshot-size sets the flight recorder's size, and "
				    "--full-execution keeps everything: use one or the other");
	ret = check_uprobe(opts, err);
	if (ret)
		return ret;
	return check_gate(opts, err);
}
