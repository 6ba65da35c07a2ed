/* options.h: the command line of rearview, parsed into one struct.
 *
 * GNU long options and magic-trace's single-dash spellings (getopt_long_only),
 * values validated here so that a bad value is refused before anything is set
 * up. Help texts live here too, next to the options they describe, so that
 * --help cannot drift from what is parsed.
 *
 * Not here: any decision that needs the machine (which backend, which clock);
 * see session/session.c (with record/machine.h and record/pt_pmu.h).
 */
#ifndef RV_CLI_OPTIONS_H
#define RV_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "decode/pt_decoder.h"
#include "record/extra_events.h"
#include "util/error.h"

enum rv_command {
	RV_CMD_NONE,
	RV_CMD_RUN,
	RV_CMD_ATTACH,
	RV_CMD_DECODE,
};

enum rv_backend {
	RV_BACKEND_AUTO,
	RV_BACKEND_PT,
	RV_BACKEND_SAMPLE,
	RV_BACKEND_UPROBE, /* exact function entries and exits through BPF uprobes */
};

/* --kernel-events groups, as bits. */
enum rv_kernel_event_group {
	RV_KERNEL_EVENTS_SYSCALLS = 1,
	RV_KERNEL_EVENTS_SCHED = 2,
	RV_KERNEL_EVENTS_FAULTS = 4,
	RV_KERNEL_EVENTS_IRQ = 8,
};

#define RV_MAX_FUNCTION_PATTERNS 256 /* --functions and --kernel-functions patterns each */

#define RV_MAX_PROBE_SPEC 4096 /* bytes of one --filter / --trigger site */

enum rv_callgraph_mode {
	RV_CALLGRAPH_DEFAULT, /* decided by the engine: see rv_callgraph_resolve */
	RV_CALLGRAPH_FP,
	RV_CALLGRAPH_DWARF,
	RV_CALLGRAPH_LBR,
};

enum rv_timer_kind {
	RV_TIMER_LOW,	 /* sampling: 1 kHz */
	RV_TIMER_NORMAL, /* sampling: 10 kHz */
	RV_TIMER_HIGH,	 /* sampling: kernel.perf_event_max_sample_rate */
	RV_TIMER_SAMPLE, /* sampling at sample_hz */
	RV_TIMER_CUSTOM, /* Intel PT: timer_custom holds "cyc=1,mtc_period=0,..." */
};

#define RV_MAX_PIDS	  1024
#define RV_MAX_IMAGES	  64
#define RV_DEFAULT_OUTPUT "trace.fxt"

struct rv_options {
	enum rv_command command;
	/* never NULL after parsing; "-" is standard output (FXT; refused with
	 * run's COMMAND and attach's, whose standard output is their own) */
	const char *output;
	enum rv_backend backend;
	enum rv_timer_kind timer;
	uint64_t sample_hz;	  /* RV_TIMER_SAMPLE only */
	const char *timer_custom; /* RV_TIMER_CUSTOM only: the terms after "custom:" */
	enum rv_callgraph_mode callgraph;
	uint32_t dwarf_stack_bytes; /* --callgraph-mode dwarf,SIZE (0: the default) */
	bool keep_raw_stacks;	    /* --keep-raw-stacks */
	bool include_kernel;
	bool kernel_only; /* --trace-kernel-only (sets include_kernel too) */
	bool multi_thread;
	bool no_follow; /* run: record the command's process only, not its children */
	bool full_execution;
	uint64_t snapshot_size_bytes; /* 0: the engine's default; else a power-of-two of pages */
	const char *working_directory;
	bool dry_run;	 /* --dry-run: print what would be set up, and exit */
	const char *btf; /* --btf FILE: the kernel's BTF for CO-RE (run, attach); NULL: none */

	/* The gate: probe sites as given (SYMBOL, LIB:SYMBOL, 0xADDR or
	 * FILE:LINE, checked when the target's binaries are known). */
	char *filter_start, *filter_stop; /* --filter START,STOP; owned (rv_options_destroy) */
	const char *trigger;		  /* --trigger WHAT */
	uint64_t min_duration_ns;	  /* --min-duration DUR; 0: none */
	bool multi_snapshot;		  /* --multi-snapshot */

	/* --backend uprobe: globs as given, checked against the binaries and
	 * /proc/kallsyms when recording; owned (rv_options_destroy). */
	char **functions; /* --functions PAT[,PAT...]; none: every function */
	size_t nr_functions;
	char **exclude; /* --exclude PAT[,PAT...]; none: nothing excluded */
	size_t nr_exclude;
	bool exits_uretprobe;	/* --exits uretprobe; default: return-sites */
	bool exits_given;	/* --exits was given */
	unsigned kernel_events; /* --kernel-events LIST: RV_KERNEL_EVENTS_* bits */
	/* --events LIST (run, attach; repeatable): names checked, not yet
	 * against the machine (rv_extra_events_resolve does that) */
	struct rv_extra_events events;
	char **kernel_functions; /* --kernel-functions PAT[,PAT...] */
	size_t nr_kernel_functions;

	int verbose;
	bool help;
	bool version;

	/* attach */
	pid_t pids[RV_MAX_PIDS];
	size_t nr_pids;

	/* decode */
	const char *raw_pt;   /* --raw-pt FILE */
	struct rv_raw_image { /* --image FILE@ADDR */
		char *path;   /* owned (rv_options_destroy) */
		uint64_t addr;
	} images[RV_MAX_IMAGES];
	size_t nr_images;
	const char *cpu;	 /* --cpu FAMILY/MODEL/STEPPING, checked by the decoder */
	uint64_t addr_filter[2]; /* --addr-filter BEGIN-END; both 0 when not given */
	bool stats;		 /* --stats */
	const char *perf_script; /* --perf-script FILE */
	const char *vmlinux;	 /* --vmlinux FILE */
	unsigned jobs;		 /* --jobs N; 0: one per online CPU */
	uint64_t chunk_bytes;	 /* --chunk-size SIZE; 0: the decoder's default */
	/* --decoder fast|libipt: the walker that decodes Intel PT (decode, and
	 * run and attach when they record PT); decoder_given: it was given */
	enum rv_pt_decoder_choice decoder;
	bool decoder_given;

	/* run: the command and its arguments, NULL-terminated; attach: the
	 * command given after `--` (argc 0: none), run while recording;
	 * decode: the capture. run's rule for `--`: the options end at the
	 * first `--` or the first argument that is not an option (COMMAND).
	 * When `--` came first, every argument after COMMAND is its own, a
	 * later `--` included; otherwise the first `--` after COMMAND
	 * (magic-trace's `run PROG -- ARGS`) is dropped. attach takes its
	 * command only after `--`. */
	char **argv;
	int argc;
	char **owned_argv; /* argv when a `--` was dropped (rv_options_destroy) */

	/* run, attach: stop recording after this long (--duration DUR); 0: at
	 * the target's exit or Ctrl-C */
	uint64_t duration_ns;
};

/* Parses argv (argv[0] is the program, argv[1] the command). On a bad command
 * line returns a negative code with a message that names the option and says
 * what is accepted. --help and --version set the flags and return 0. */
int rv_options_parse(struct rv_options *opts, int argc, char **argv, struct rv_error *err);

/* Frees what parsing allocated (the --image paths, --filter sites, patterns). */
void rv_options_destroy(struct rv_options *opts);

/* The help text for a command (RV_CMD_NONE: the tool's overview). */
void rv_options_print_help(enum rv_command command, FILE *out);

/* Strict parsers, exposed for the tests. */
int rv_parse_size(const char *text, uint64_t *bytes, struct rv_error *err);
/* --callgraph-mode: fp, dwarf, dwarf,SIZE (bytes of stack copied a sample,
 * rounded up to 8, at most the kernel's 65528; *stack_bytes 0 otherwise) or
 * lbr. */
int rv_parse_callgraph(const char *text, enum rv_callgraph_mode *mode, uint32_t *stack_bytes,
		       struct rv_error *err);
int rv_parse_pid_list(const char *text, pid_t *pids, size_t max, size_t *count,
		      struct rv_error *err);
int rv_parse_image(const char *text, struct rv_raw_image *out, struct rv_error *err);
int rv_parse_addr_range(const char *text, uint64_t range[2], struct rv_error *err);
int rv_parse_timer_resolution(const char *text, enum rv_timer_kind *kind, uint64_t *hz,
			      const char **custom, struct rv_error *err);
/* --filter START,STOP (also magic-trace's "(START STOP)"): two sites, newly
 * allocated. */
int rv_parse_filter(const char *text, char **start, char **stop, struct rv_error *err);
/* A duration with its unit: ns, us, ms or s (500us, 2ms, 1.5s). */
int rv_parse_duration(const char *text, uint64_t *ns, struct rv_error *err);
/* PAT[,PAT...] appended to *list (newly allocated copies; *list grows);
 * option names the option in errors. Empty patterns are refused. */
int rv_parse_patterns(const char *text, const char *option, char ***list, size_t *count,
		      struct rv_error *err);
/* --kernel-events: syscalls, sched, faults, irq, comma-separated. */
int rv_parse_kernel_events(const char *text, unsigned *groups, struct rv_error *err);
/* --decoder: fast or libipt; anything else is refused naming both. */
int rv_parse_decoder(const char *text, enum rv_pt_decoder_choice *decoder, struct rv_error *err);

/* Rounds bytes up to a power-of-two number of pages (at least one page). */
uint64_t rv_round_pow2_pages(uint64_t bytes, uint64_t page_size);

const char *rv_command_name(enum rv_command command);

#endif
