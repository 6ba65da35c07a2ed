/* syscall_number.h: the system call a `syscall` instruction makes, read from
 * the code around it, for traces that show the instruction but not the
 * kernel (a user-only PT trace: "[syscall read]" instead of "[syscall]").
 *
 * The number is what the code puts in eax on the straight-line path to the
 * instruction: decoding the function from its first byte (x86-64), the last
 * instruction before the `syscall` that writes rax (eax, ax, al) must be
 * `mov eax, imm32`, `mov rax, imm`, or `xor`/`sub` of eax or rax with itself
 * (0), with no unconditional jump, return or call between it and the
 * `syscall`, and no direct jump anywhere in the code given landing after it
 * up to the `syscall` itself (another path would bring another eax). A
 * conditional jump between them is fine: falling through keeps eax, as in
 * glibc's wrappers (`cmpb $0, single_threaded; je 1f; xor eax, eax;
 * syscall`). Indirect jumps into that stretch cannot be seen and are not
 * looked for.
 *
 * Not here: finding the function's code (the caller reads it, e.g. with
 * rv_symbolizer_read_code), naming the number (syscall_names.h), the 32-bit
 * ABIs (int 0x80, sysenter).
 */
#ifndef RV_DECODE_SYSCALL_NUMBER_H
#define RV_DECODE_SYSCALL_NUMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* code holds size bytes of a function's code from its first byte, which is
 * at address start; ip is the address of a `syscall` instruction in it.
 * Returns true and sets *nr when the rule above gives the number; false when
 * it does not, when ip is not the first byte of a `syscall` on the decoding
 * path from start, or when the code up to it cannot be decoded. */
bool rv_syscall_number(const uint8_t *code, size_t size, uint64_t start, uint64_t ip, uint64_t *nr);

#endif
