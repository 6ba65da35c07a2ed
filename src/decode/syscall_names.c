/* syscall_names.c: the generated x86-64 system call table; see syscall_names.h. */
#include "decode/syscall_names.h"

#include <stddef.h>

/* syscall_table.inc: "[0] = "read"," lines made by mk/syscalls.mk from
 * <asm/unistd_64.h>; numbers the header skips stay NULL. */
static const char *const syscall_names[] = {
#include "syscall_table.inc"
};

const char *rv_syscall_name(uint64_t nr)
{
	if (nr >= sizeof(syscall_names) / sizeof(syscall_names[0]))
		return NULL;
	return syscall_names[nr];
}

uint64_t rv_syscall_table_size(void)
{
	return sizeof(syscall_names) / sizeof(syscall_names[0]);
}
