/* syscall_names.h: x86-64 system call numbers to their names, as the
 * kernel's uapi header <asm/unistd_64.h> spells them without "__NR_"
 * ("read", "clock_nanosleep").
 *
 * The table is generated at build time from that header (mk/syscalls.mk), so
 * it names what the headers the project was built against know.
 *
 * Not here: other architectures, or the 32-bit (ia32, x32) numbering.
 */
#ifndef RV_DECODE_SYSCALL_NAMES_H
#define RV_DECODE_SYSCALL_NAMES_H

#include <stdint.h>

/* The name of system call nr, or NULL when the table has none. The string is
 * static. */
const char *rv_syscall_name(uint64_t nr);

/* One more than the highest number the table names. */
uint64_t rv_syscall_table_size(void);

#endif
