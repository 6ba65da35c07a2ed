/* fn_exits.h: where a function leaves: every instruction of its code, out-of-
 * line pieces included, that ends it, so that the function tracer can place a
 * plain uprobe there instead of a uretprobe (which replaces the return
 * address on the program's stack, and so breaks C++ exceptions, longjmp
 * over it, and anything else that walks or moves its own stack).
 *
 * A function is the code of its symbol and of its pieces (symtab.h's
 * rv_symtab_piece_of: "foo.cold", the unlikely paths GCC moves out of line
 * and reaches by jumps). Each piece is decoded from its first byte to its
 * last (linear, with Zydis, 64-bit mode); an instruction leaves the function
 * when it is:
 * - a return (ret, ret imm16, with any prefix), in any piece;
 * - a direct jump, conditional or not, to an address outside every piece of
 *   the function (a tail call; GCC makes conditional ones too). A jump
 *   between the function and its pieces, or within one, stays inside.
 * Indirect jumps (jmp *%rax, jmp *mem) are not exits: they are switch tables
 * inside the function far more often than tail calls through a pointer, and
 * their target is not known here. They are counted; when one was a tail
 * call, the function's frame is ended by the trace builder's stack-pointer
 * rule instead (the next entry at its entry sp, or its caller's exit:
 * trace/builder.h), never early.
 *
 * The code cannot serve (rv_fn_exits.problem says why in words, and the
 * tracer falls back to a uretprobe) when an instruction cannot be decoded, a
 * piece ends inside an instruction, a far return or a jrcxz/loop out of the
 * function is met (its condition cannot be tested from the flags), or no
 * instruction leaves the function and an indirect jump might. A function with
 * no way out at all (it ends in a call to a noreturn function, ud2 or hlt) is
 * fine: it has no exit sites.
 *
 * Addresses are link-time ones; file offsets are the caller's business.
 *
 * Not here: which functions (fn_select.h), placing the probes (fn_engine.h).
 */
#ifndef RV_RECORD_FN_EXITS_H
#define RV_RECORD_FN_EXITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

struct rv_fn_list;

/* One piece of a function's code: its bytes, at a link-time address. */
struct rv_fn_code {
	uint64_t address;
	const uint8_t *bytes;
	size_t size;
};

enum rv_fn_site_kind {
	RV_FN_SITE_RETURN = 1,	  /* ret */
	RV_FN_SITE_TAIL_JUMP = 2, /* a direct jump out of the function */
};

/* An instruction that leaves the function. */
struct rv_fn_site {
	uint64_t address; /* link-time address of the instruction */
	uint64_t offset;  /* its file offset (set by rv_fn_exits_plan) */
	uint8_t kind;	  /* enum rv_fn_site_kind */
	uint8_t length;	  /* of the instruction, bytes */
	/* 0: always leaves; else 1 + the condition code of a Jcc (the low
	 * nibble of its opcode), which leaves only when taken. */
	uint8_t condition;
};

struct rv_fn_exits {
	struct rv_fn_site *sites; /* in address order within each piece */
	size_t nr_sites, cap_sites;
	size_t indirect_jumps; /* indirect jumps seen (not exits, see above) */
	/* Bytes the entry probe can skip: 4 when the function begins with an
	 * endbr64 (a no-op to the program; CET builds begin every function with
	 * one) that the kernel would single-step, nothing in the function jumps
	 * to the instruction after it, it has no indirect jump (whose target is
	 * unknown), and that instruction is not an exit; else 0. Every call runs
	 * through the next instruction, at the same sp, so the entry is seen
	 * there as well, and more cheaply when the kernel emulates it (push). */
	uint8_t entry_skip;
	bool jumps_after_endbr; /* a direct jump in it targets entry + 4 */
	/* NULL, or why the sites cannot be trusted (a static string), and
	 * where (link-time address) */
	const char *problem;
	uint64_t problem_address;
};

/* The bytes of endbr64 (F3 0F 1E FA), which entry_skip can skip. */
#define RV_FN_ENDBR64_SIZE 4

void rv_fn_exits_init(struct rv_fn_exits *x);
void rv_fn_exits_destroy(struct rv_fn_exits *x);

/* Finds the exits of the function made of pieces[0..nr) (pieces[0] is the
 * one its entry begins). Appends to x (cleared first). Returns 0 (problem may
 * be set) or -ENOMEM. */
int rv_fn_exits_find(const struct rv_fn_code *pieces, size_t nr, struct rv_fn_exits *x);

/* Decides how the exits of list's functions are probed. With return_sites,
 * each file's code and symbols are read again (its pieces are found by name:
 * "foo.cold" belongs to the function at the address of the symbol "foo") and
 * the exits of each function found (rv_fn_exits_find): a function whose code
 * serves gets RV_FN_EXITS_SITES and its sites (in list->sites, with file
 * offsets), one whose code does not RV_FN_EXITS_URETPROBE and exits_problem.
 * Without return_sites every function gets RV_FN_EXITS_URETPROBE. Returns 0,
 * or negative with err set (a file that can no longer be read, memory). */
int rv_fn_exits_plan(struct rv_fn_list *list, bool return_sites, struct rv_error *err);

/* Pieces a function has at most besides its own symbol's code; one with
 * more cannot be probed at its return sites. */
#define RV_FN_MAX_PIECES 8

#endif
