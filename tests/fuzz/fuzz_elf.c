/* fuzz_elf.c: the symbolizer's ELF and DWARF paths (symtab, debuginfo,
 * MiniDebugInfo, line tables, call frame information): the fuzzed bytes
 * written as an ELF file in the harness's scratch directory, mapped as a
 * process's code at 0x400000 from offset 0 (where a non-PIE program's
 * first segment is, and a PIE's load base), then names, source lines and
 * code looked up at addresses through its first pages, and a DWARF unwind
 * from a few of them over a small stack. Seeds: small programs of
 * tests/targets, stripped and not, with MiniDebugInfo. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PID  4242
#define BASE 0x400000ull
/* Where code is in small programs: the first pages after the headers. */
#define FIRST 0x401000ull
#define LAST  0x403000ull
#define STEP  0x40

static volatile uint64_t sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsetenv("DEBUGINFOD_URLS");
	fuzz_scratch_dir();
	return 0;
}

static void unwind_from(struct rv_unwinder *u, uint64_t ip)
{
	/* AX..R15 as perf_regs numbers them; SP and BP into the copy. */
	uint64_t regs[20] = { 0 }, frames[16];
	uint8_t stack[256];
	struct rv_unwind_input in = { .pid = PID,
				      .tid = PID,
				      .regs_mask = RV_UNWIND_X86_64_REGS_MASK,
				      .regs = regs,
				      .stack = stack,
				      .stack_size = sizeof(stack) };
	struct rv_error err = { 0 };
	size_t nr = 0;

	for (size_t i = 0; i < sizeof(stack) / 8; i++) {
		uint64_t word = i % 3 ? FIRST + i * 0x21 : 0x7ffc0000ull + i * 8;

		memcpy(stack + i * 8, &word, 8);
	}
	regs[6] = 0x7ffc0000ull + 64; /* BP */
	regs[7] = 0x7ffc0000ull;      /* SP */
	regs[8] = ip;		      /* IP */
	if (!rv_unwind(u, &in, frames, 16, &nr, &err))
		sink += nr + rv_unwind_cut(u) + rv_unwind_stopped(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rv_symbolizer_options options = { .want_lines = true };
	struct rv_symbolizer *s;
	struct rv_unwinder *u;
	struct rv_error err = { 0 };
	char path[4096];
	uint8_t code[16];

	fuzz_write_file(path, sizeof(path), "prog", data, size);
	if (rv_symbolizer_new(&s, &options, &err))
		abort();
	if (rv_symbolizer_add_mapping(s, PID, BASE, 0x100000, 0, true, path, &err))
		abort();
	for (uint64_t addr = FIRST; addr < LAST; addr += STEP) {
		struct rv_symbol sym;
		struct rv_source src;

		rv_symbolizer_lookup(s, PID, addr, &sym);
		sink += strlen(sym.name) + sym.size + (sym.file ? strlen(sym.file) : 0);
		if (rv_symbolizer_source(s, PID, addr, &src))
			sink += strlen(src.file) + (uint64_t)src.line;
		sink += rv_symbolizer_read_code(s, PID, addr, code, sizeof(code));
	}
	if (!rv_unwinder_new(&u, s, &err)) {
		for (uint64_t ip = FIRST; ip < LAST; ip += 0x400)
			unwind_from(u, ip + 0x13);
		rv_unwinder_free(u);
	}
	rv_symbolizer_free(s);
	unlink(path);
	return 0;
}
