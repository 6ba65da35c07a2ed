/* test_unwind.c: the DWARF unwinder on real stacks.
 *
 * The target (tests/targets/sym_c.c) stops itself with SIGSTOP at the bottom of
 * main -> sym_c_outer -> sym_c_middle -> inner_static -> sym_c_deepest -> raise.
 * Under ptrace, the test takes what a perf DWARF-mode sample carries: the user
 * registers (in perf_regs order) and a copy of the stack from SP upwards. The
 * unwound, symbolized chain must be that call chain, with return addresses
 * exactly where the target says its calls return.
 *
 * Not here: symbol naming details (test_symbolizer.c).
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize/unwind.h"
#include "symbolize/symbolizer.h"

#define STACK_COPY     16384
#define MAX_FRAMES     64
#define NR_SAMPLE_REGS 20 /* popcount(RV_UNWIND_X86_64_REGS_MASK) */

/* A stopped, traced target and a perf-like sample of it. */
struct stopped {
	pid_t pid;
	uint64_t call_site; /* where sym_c_deepest returns to, as it said */
	uint64_t regs[NR_SAMPLE_REGS];
	uint8_t stack[STACK_COPY];
	uint64_t stack_size;
};

static void target_path(char *buf, size_t len, const char *name)
{
	const char *build = getenv("RV_BUILD");

	snprintf(buf, len, "%s/tests/targets/%s", build && *build ? build : "build", name);
}

/* perf_regs order for RV_UNWIND_X86_64_REGS_MASK: AX BX CX DX SI DI BP SP IP
 * FLAGS CS SS, then R8..R15. */
static void regs_in_perf_order(const struct user_regs_struct *r, uint64_t *out)
{
	const uint64_t ordered[NR_SAMPLE_REGS] = {
		r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi, r->rbp, r->rsp, r->rip, r->eflags,
		r->cs,	r->ss,	r->r8,	r->r9,	r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
	};

	memcpy(out, ordered, sizeof(ordered));
}

static void take_sample(struct stopped *t, const char *path)
{
	char line[256], mem_path[64];
	struct user_regs_struct regs;
	int fds[2], status, mem;
	ssize_t got;
	FILE *out;

	memset(t, 0, sizeof(*t));
	cr_assert_eq(access(path, X_OK), 0, "%s is missing: run make first", path);
	cr_assert_eq(pipe(fds), 0);
	t->pid = fork();
	cr_assert_geq(t->pid, 0);
	if (t->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	/* The exec stops the tracee once; let it run to its own SIGSTOP. */
	cr_assert_eq(waitpid(t->pid, &status, 0), t->pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP);
	cr_assert_eq(ptrace(PTRACE_CONT, t->pid, NULL, NULL), 0);
	out = fdopen(fds[0], "r");
	cr_assert(out);
	while (fgets(line, sizeof(line), out) && strcmp(line, "end\n") != 0) {
		if (strncmp(line, "call_site ", 10) == 0)
			t->call_site = strtoull(line + 10, NULL, 16);
	}
	fclose(out);
	cr_assert(t->call_site, "the target did not say where its call returns");
	cr_assert_eq(waitpid(t->pid, &status, 0), t->pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "status 0x%x", status);
	cr_assert_eq(ptrace(PTRACE_GETREGS, t->pid, NULL, &regs), 0);
	regs_in_perf_order(&regs, t->regs);
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", (int)t->pid);
	mem = open(mem_path, O_RDONLY);
	cr_assert_geq(mem, 0);
	/* As perf does: as much as fits, or up to the top of the stack. */
	got = pread(mem, t->stack, sizeof(t->stack), (off_t)regs.rsp);
	close(mem);
	cr_assert_gt(got, 512, "cannot read the target's stack: %s", strerror(errno));
	t->stack_size = (uint64_t)got;
}

static void end_target(struct stopped *t)
{
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
}

/* Reports pid's mappings as a capture would; mappings of the file whose base
 * name is rename_from are reported as mappings of rename_to. */
static void report_maps(struct rv_symbolizer *s, pid_t pid, const char *rename_from,
			const char *rename_to)
{
	char path[64], line[1024], perms[8], name[512];
	struct rv_error err = { 0 };
	uint64_t start, end, pgoff;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "r");
	cr_assert(maps);
	while (fgets(line, sizeof(line), maps)) {
		int used = 0;

		cr_assert_geq(sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
				     &start, &end, perms, &pgoff, &used),
			      4);
		snprintf(name, sizeof(name), "%s", used ? line + used : "");
		name[strcspn(name, "\n")] = '\0';
		if (rename_from && strrchr(name, '/') &&
		    strcmp(strrchr(name, '/') + 1, rename_from) == 0)
			snprintf(name, sizeof(name), "%s", rename_to);
		cr_assert_eq(rv_symbolizer_add_mapping(s, (uint32_t)pid, start, end - start, pgoff,
						       perms[2] == 'x', name, &err),
			     0, "%s", err.message);
	}
	fclose(maps);
}

static struct rv_unwind_input input_of(const struct stopped *t)
{
	struct rv_unwind_input in = {
		.pid = (uint32_t)t->pid,
		.tid = (uint32_t)t->pid,
		.regs_mask = RV_UNWIND_X86_64_REGS_MASK,
		.regs = t->regs,
		.stack = t->stack,
		.stack_size = t->stack_size,
	};

	return in;
}

static size_t unwind(struct rv_unwinder *u, const struct rv_unwind_input *in, uint64_t *frames,
		     size_t max)
{
	struct rv_error err = { 0 };
	size_t n = 0;

	cr_assert_eq(rv_unwind(u, in, frames, max, &n, &err), 0, "%s", err.message);
	return n;
}

/* Index of the frame named name, as the trace builder would look it up
 * (return addresses minus one, so a call at a function's end stays in it). */
static size_t find_frame(struct rv_symbolizer *s, pid_t pid, const uint64_t *frames, size_t n,
			 const char *name)
{
	for (size_t i = 0; i < n; i++) {
		struct rv_symbol sym;

		rv_symbolizer_lookup(s, (uint32_t)pid, i ? frames[i] - 1 : frames[i], &sym);
		if (strcmp(sym.name, name) == 0)
			return i;
	}
	return n;
}

static const char *frame_name(struct rv_symbolizer *s, pid_t pid, const uint64_t *frames, size_t i)
{
	struct rv_symbol sym;

	rv_symbolizer_lookup(s, (uint32_t)pid, i ? frames[i] - 1 : frames[i], &sym);
	return sym.name;
}

/* frames hold ... sym_c_deepest, inner_static, sym_c_middle, sym_c_outer, main ... */
static void expect_call_chain(struct rv_symbolizer *s, const struct stopped *t,
			      const uint64_t *frames, size_t n)
{
	static const char *const chain[] = { "sym_c_deepest", "inner_static", "sym_c_middle",
					     "sym_c_outer", "main" };
	size_t deepest = find_frame(s, t->pid, frames, n, chain[0]);

	cr_assert_eq(frames[0], t->regs[8], "frames[0] must be the sampled IP");
	cr_assert_lt(deepest, n, "sym_c_deepest not among %zu frames (frame 0 is %s)", n,
		     frame_name(s, t->pid, frames, 0));
	cr_assert_geq(deepest, 1, "raise (in libc) should be below sym_c_deepest");
	for (size_t i = 1; i < sizeof(chain) / sizeof(chain[0]); i++) {
		cr_assert_lt(deepest + i, n, "the chain stops at %s", chain[i - 1]);
		cr_assert_str_eq(frame_name(s, t->pid, frames, deepest + i), chain[i]);
	}
	/* Return addresses, not adjusted: exactly where the call returns. */
	cr_assert_eq(frames[deepest + 1], t->call_site, "0x%" PRIx64 " vs 0x%" PRIx64,
		     frames[deepest + 1], t->call_site);
}

static struct rv_symbolizer *new_symbolizer(void)
{
	struct rv_symbolizer_options options = { 0 };
	struct rv_symbolizer *s = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_symbolizer_new(&s, &options, &err), 0, "%s", err.message);
	return s;
}

static struct rv_unwinder *new_unwinder(struct rv_symbolizer *s)
{
	struct rv_unwinder *u = NULL;
	struct rv_error err = { 0 };

	cr_assert_eq(rv_unwinder_new(&u, s, &err), 0, "%s", err.message);
	return u;
}

Test(unwind, follows_the_call_chain_through_libc_to_main)
{
	static struct stopped t;
	struct rv_symbolizer *s = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	struct rv_unwind_input in;
	uint64_t frames[MAX_FRAMES];
	char path[256];
	size_t n;

	target_path(path, sizeof(path), "sym_c");
	take_sample(&t, path);
	report_maps(s, t.pid, NULL, NULL);
	in = input_of(&t);
	n = unwind(u, &in, frames, MAX_FRAMES);
	expect_call_chain(s, &t, frames, n);
	end_target(&t);
	rv_unwinder_free(u);
	rv_symbolizer_free(s);
}

Test(unwind, unwinds_a_stripped_binary_from_eh_frame)
{
	static struct stopped t;
	struct rv_symbolizer *s = new_symbolizer(), *named = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	char path[256], unstripped[256];
	uint64_t frames[MAX_FRAMES];
	struct rv_unwind_input in;
	struct rv_symbol sym;
	size_t n;

	target_path(path, sizeof(path), "sym_c.stripped");
	target_path(unstripped, sizeof(unstripped), "sym_c");
	take_sample(&t, path);
	report_maps(s, t.pid, NULL, NULL);
	in = input_of(&t);
	n = unwind(u, &in, frames, MAX_FRAMES);
	/* No symbols in the stripped file (its functions are named after
	 * their call frame information)... */
	rv_symbolizer_lookup(s, (uint32_t)t.pid, t.call_site - 1, &sym);
	cr_assert(strncmp(sym.name, "sym_c.stripped!fn_", 18) == 0, "got '%s'", sym.name);
	/* ...but its unstripped twin has the same layout, so it names the frames. */
	report_maps(named, t.pid, "sym_c.stripped", unstripped);
	expect_call_chain(named, &t, frames, n);
	end_target(&t);
	rv_unwinder_free(u);
	rv_symbolizer_free(s);
	rv_symbolizer_free(named);
}

/* The first mapping of pid whose path contains what, with its line parsed. */
static bool find_mapping(pid_t pid, const char *what, uint64_t *start, uint64_t *end,
			 uint64_t *pgoff, char *path, size_t path_len)
{
	char maps_path[64], line[1024], perms[8];
	FILE *maps;
	bool found = false;

	snprintf(maps_path, sizeof(maps_path), "/proc/%d/maps", (int)pid);
	maps = fopen(maps_path, "r");
	cr_assert(maps);
	while (!found && fgets(line, sizeof(line), maps)) {
		int used = 0;

		sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", start, end,
		       perms, pgoff, &used);
		found = perms[2] == 'x' && used && strstr(line + used, what);
		if (found) {
			snprintf(path, path_len, "%s", line + used);
			path[strcspn(path, "\n")] = '\0';
		}
	}
	fclose(maps);
	return found;
}

Test(unwind, follows_modules_added_and_replaced_later)
{
	static struct stopped t;
	struct rv_symbolizer *s = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	uint64_t frames[MAX_FRAMES], early[MAX_FRAMES], start, end, pgoff;
	char path[256], stripped[256], mapped[512];
	size_t n_early;
	struct rv_unwind_input in;
	struct rv_error err = { 0 };
	struct rv_symbol sym;
	size_t n;

	target_path(path, sizeof(path), "sym_c");
	target_path(stripped, sizeof(stripped), "sym_c.stripped");
	take_sample(&t, path);
	/* Only the program at first: the IP is in libc, which nobody reported. */
	cr_assert(find_mapping(t.pid, "/sym_c", &start, &end, &pgoff, mapped, sizeof(mapped)));
	cr_assert_eq(rv_symbolizer_add_mapping(s, (uint32_t)t.pid, start, end - start, pgoff, true,
					       mapped, &err),
		     0);
	in = input_of(&t);
	n_early = unwind(u, &in, early, MAX_FRAMES);
	cr_assert_geq(n_early, 1);
	/* Then libc and the rest (as a late MMAP2 record would bring them). */
	report_maps(s, t.pid, NULL, NULL);
	n = unwind(u, &in, frames, MAX_FRAMES);
	expect_call_chain(s, &t, frames, n);
	/* Only libc's CFI finds raise's return address (frame pointers skip it). */
	cr_assert_str_eq(frame_name(s, t.pid, frames, 1), "raise");
	cr_assert(n_early < 2 || early[1] != frames[1],
		  "libc's CFI was used before libc was reported");
	/* Then the program's code is replaced by another file: the session is
	 * rebuilt, and the unwinder attaches to the new one. */
	cr_assert_eq(rv_symbolizer_add_mapping(s, (uint32_t)t.pid, start, end - start, pgoff, true,
					       stripped, &err),
		     0);
	n = unwind(u, &in, frames, MAX_FRAMES);
	cr_assert_geq(n, 7);
	rv_symbolizer_lookup(s, (uint32_t)t.pid, t.call_site - 1, &sym);
	cr_assert(strncmp(sym.name, "sym_c.stripped!fn_", 18) == 0, "got '%s'", sym.name);
	cr_assert_lt(find_frame(s, t.pid, frames, n, sym.name), n);
	end_target(&t);
	rv_unwinder_free(u);
	rv_symbolizer_free(s);
}

Test(unwind, short_stack_copy_gives_a_partial_chain)
{
	static struct stopped t;
	struct rv_symbolizer *s = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	uint64_t full[MAX_FRAMES], partial[MAX_FRAMES], again[MAX_FRAMES];
	struct rv_unwind_input in;
	size_t n_full, n_partial, n_again;
	char path[256];

	target_path(path, sizeof(path), "sym_c");
	take_sample(&t, path);
	report_maps(s, t.pid, NULL, NULL);
	in = input_of(&t);
	n_full = unwind(u, &in, full, MAX_FRAMES);
	expect_call_chain(s, &t, full, n_full);
	in.stack_size = 16;
	n_partial = unwind(u, &in, partial, MAX_FRAMES);
	cr_assert_geq(n_partial, 1);
	cr_assert_lt(n_partial, n_full, "%zu frames from 16 bytes of stack", n_partial);
	cr_assert_arr_eq(partial, full, n_partial * sizeof(*full), "a partial chain is a prefix");
	in.stack_size = 0;
	in.stack = NULL;
	cr_assert_geq(unwind(u, &in, partial, MAX_FRAMES), 1);
	cr_assert_eq(partial[0], full[0]);
	/* Nothing of those samples lingers in libdwfl: the whole stack again. */
	in = input_of(&t);
	n_again = unwind(u, &in, again, MAX_FRAMES);
	cr_assert_eq(n_again, n_full);
	cr_assert_arr_eq(again, full, n_full * sizeof(*full));
	/* And at most what the caller has room for. */
	cr_assert_eq(unwind(u, &in, again, 3), 3);
	cr_assert_arr_eq(again, full, 3 * sizeof(*full));
	cr_assert_eq(unwind(u, &in, again, 1), 1);
	cr_assert_eq(again[0], full[0]);
	end_target(&t);
	rv_unwinder_free(u);
	rv_symbolizer_free(s);
}

Test(unwind, garbage_registers_give_a_clean_result)
{
	static struct stopped t;
	struct rv_symbolizer *s = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	uint64_t frames[MAX_FRAMES];
	struct rv_unwind_input in;
	char path[256];
	size_t n;

	target_path(path, sizeof(path), "sym_c");
	take_sample(&t, path);
	report_maps(s, t.pid, NULL, NULL);
	in = input_of(&t);
	for (size_t i = 0; i < NR_SAMPLE_REGS; i++)
		t.regs[i] = 0x4141414141414141ull ^ (i * 0x1010);
	for (size_t i = 0; i < t.stack_size; i++)
		t.stack[i] = (uint8_t)(i * 37 + 11);
	n = unwind(u, &in, frames, MAX_FRAMES);
	cr_assert_geq(n, 1);
	cr_assert_eq(frames[0], t.regs[8]);
	/* An IP inside the program but a stack of noise. */
	t.regs[8] = t.call_site;
	n = unwind(u, &in, frames, MAX_FRAMES);
	cr_assert_geq(n, 1);
	cr_assert_eq(frames[0], t.call_site);
	/* A process the symbolizer never heard of: just the IP. */
	in.pid = in.tid = 999999;
	cr_assert_eq(unwind(u, &in, frames, MAX_FRAMES), 1);
	cr_assert_eq(frames[0], t.call_site);
	end_target(&t);
	rv_unwinder_free(u);
	rv_symbolizer_free(s);
}

Test(unwind, rejects_samples_without_ip_or_sp)
{
	struct rv_symbolizer *s = new_symbolizer();
	struct rv_unwinder *u = new_unwinder(s);
	uint64_t regs[NR_SAMPLE_REGS] = { 0 }, frames[4];
	struct rv_unwind_input in = {
		.pid = 1,
		.tid = 1,
		.regs_mask = RV_UNWIND_X86_64_REGS_MASK & ~(1ull << 8), /* no IP */
		.regs = regs,
	};
	struct rv_error err = { 0 };
	size_t n = 99;

	cr_assert_eq(rv_unwind(u, &in, frames, 4, &n, &err), -EINVAL);
	cr_assert_eq(n, 0);
	cr_assert(strstr(err.message, "IP or SP"), "%s", err.message);
	in.regs_mask = RV_UNWIND_X86_64_REGS_MASK;
	in.regs = NULL;
	cr_assert_eq(rv_unwind(u, &in, frames, 4, &n, &err), -EINVAL);
	/* Only IP and SP: still at least the IP. */
	in.regs_mask = (1ull << 7) | (1ull << 8);
	in.regs = regs;
	regs[1] = 0x1234;
	cr_assert_eq(rv_unwind(u, &in, frames, 4, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(frames[0], 0x1234);
	rv_unwinder_free(u);
	cr_assert_neq(rv_unwinder_new(&u, NULL, &err), 0);
	cr_assert_null(u);
	rv_symbolizer_free(s);
}
