/* test_syscall_number.c: the number a `syscall` takes from eax, read from
 * generated code (decode/syscall_number.h): the forms that set eax, what
 * breaks the straight line to the syscall (a call, a jmp, another write of
 * rax, a jump landing in between), and addresses that are not a syscall.
 *
 * Not here: real code read through the symbolizer (test_builder_branch.c,
 * libc's wrappers), the names of the numbers.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "decode/syscall_number.h"

#define START 0x401000ull

/* Code assembled by hand: bytes, and the offset of the syscall in them. */
struct code {
	uint8_t bytes[64];
	size_t size;
};

static void put(struct code *c, const uint8_t *bytes, size_t n)
{
	cr_assert_leq(c->size + n, sizeof(c->bytes));
	memcpy(c->bytes + c->size, bytes, n);
	c->size += n;
}

#define PUT(c, ...)                                                                                \
	do {                                                                                       \
		static const uint8_t insn_[] = { __VA_ARGS__ };                                    \
		put((c), insn_, sizeof(insn_));                                                    \
	} while (0)

/* syscall; ret, and the syscall's address */
static uint64_t put_syscall(struct code *c)
{
	uint64_t at = START + c->size;

	PUT(c, 0x0f, 0x05);
	PUT(c, 0xc3);
	return at;
}

static bool number(const struct code *c, uint64_t ip, uint64_t *nr)
{
	return rv_syscall_number(c->bytes, c->size, START, ip, nr);
}

Test(syscall_number, the_forms_that_set_eax)
{
	struct code c = { 0 };
	uint64_t ip, nr = 12345;

	PUT(&c, 0xb8, 0x27, 0x00, 0x00, 0x00); /* mov eax, 39 */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 39);

	memset(&c, 0, sizeof(c));
	PUT(&c, 0x31, 0xc0); /* xor eax, eax */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 0);

	memset(&c, 0, sizeof(c));
	PUT(&c, 0x48, 0xc7, 0xc0, 0x3c, 0x00, 0x00, 0x00); /* mov rax, 60 */
	PUT(&c, 0xbf, 0x01, 0x00, 0x00, 0x00);		   /* mov edi, 1 */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 60);

	memset(&c, 0, sizeof(c));
	PUT(&c, 0x48, 0xb8, 0xe7, 0, 0, 0, 0, 0, 0, 0); /* movabs rax, 231 */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 231);

	memset(&c, 0, sizeof(c));
	PUT(&c, 0x48, 0x29, 0xc0); /* sub rax, rax */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 0);
}

/* glibc's wrappers: a test and a conditional jump before the number, the
 * other path after the syscall's ret. */
Test(syscall_number, a_conditional_jump_before_the_value_keeps_the_straight_line)
{
	struct code c = { 0 };
	uint64_t ip, nr = 0;

	PUT(&c, 0xf3, 0x0f, 0x1e, 0xfa);		   /* endbr64 */
	PUT(&c, 0x80, 0x3d, 0x31, 0x33, 0x0e, 0x00, 0x00); /* cmpb $0, x(%rip) */
	PUT(&c, 0x74, 0x08);				   /* je +8 (past the ret) */
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00);		   /* mov eax, 1 */
	ip = put_syscall(&c);
	PUT(&c, 0x90);			       /* the other path: nop */
	PUT(&c, 0xb8, 0x02, 0x00, 0x00, 0x00); /* mov eax, 2 */
	PUT(&c, 0x0f, 0x05, 0xc3);	       /* syscall; ret */
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 1);
	cr_assert(number(&c, START + c.size - 3, &nr), "the other path's syscall");
	cr_assert_eq(nr, 2);
}

Test(syscall_number, what_breaks_the_straight_line)
{
	struct code c = { 0 };
	uint64_t ip, nr = 0;

	/* a call between: rax is the callee's */
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00);
	PUT(&c, 0xe8, 0x00, 0x00, 0x00, 0x00); /* call +0 */
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));

	/* another write of rax: from a register */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00);
	PUT(&c, 0x89, 0xd8); /* mov eax, ebx */
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));

	/* a write of al only */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0xb8, 0x27, 0x00, 0x00, 0x00);
	PUT(&c, 0xb0, 0x05); /* mov al, 5 */
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));

	/* a jmp: the syscall is reached from elsewhere */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00);
	PUT(&c, 0xeb, 0x00); /* jmp +0 */
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));

	/* a jump landing on the syscall: another eax comes that way */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0x85, 0xff);		       /* test edi, edi */
	PUT(&c, 0x75, 0x05);		       /* jne +5, onto the syscall */
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00); /* mov eax, 1 */
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));

	/* a jump from after the syscall back between the value and it */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0xb8, 0x01, 0x00, 0x00, 0x00); /* mov eax, 1 */
	PUT(&c, 0x90);			       /* nop: the loop's head */
	ip = put_syscall(&c);
	PUT(&c, 0xeb, 0xfa); /* jmp -6: onto the nop */
	cr_assert_not(number(&c, ip, &nr));

	/* nothing sets eax at all */
	memset(&c, 0, sizeof(c));
	PUT(&c, 0x90);
	ip = put_syscall(&c);
	cr_assert_not(number(&c, ip, &nr));
}

Test(syscall_number, addresses_that_are_not_a_syscall)
{
	struct code c = { 0 };
	uint64_t ip, nr = 0;

	PUT(&c, 0xb8, 0x0f, 0x05, 0x00, 0x00); /* mov eax, 0x50f: "0f 05" inside */
	ip = put_syscall(&c);
	cr_assert(number(&c, ip, &nr));
	cr_assert_eq(nr, 0x50f);
	cr_assert_not(number(&c, START + 1, &nr), "inside the mov");
	cr_assert_not(number(&c, START, &nr), "the mov");
	cr_assert_not(number(&c, ip + 1, &nr), "inside the syscall");
	cr_assert_not(number(&c, START - 1, &nr), "before the code");
	cr_assert_not(number(&c, START + c.size, &nr), "after the code");
	cr_assert_not(rv_syscall_number(c.bytes, ip - START + 1, START, ip, &nr),
		      "the code ends inside the syscall");
	cr_assert_not(rv_syscall_number(NULL, 0, START, START, &nr));
}
