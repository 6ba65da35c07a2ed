/* no_tmpfile.c: no_tmpfile COMMAND [ARG...] runs COMMAND where every open
 * with O_TMPFILE fails with EOPNOTSUPP, as it does on a filesystem without
 * unnamed files (vfat, older FUSE), whatever the filesystem: a seccomp filter
 * that COMMAND and its children inherit. The tests drive rearview's fallbacks
 * for such filesystems with it (tests/e2e/test_sites.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The flag bit O_TMPFILE adds to O_DIRECTORY. */
#define TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)

int main(int argc, char **argv)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 8),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 2),
		/* openat's flags; the low half of the argument on little-endian x86-64 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JA | BPF_K, 2, 0, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_open, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, TMPFILE_BIT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EOPNOTSUPP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	if (argc < 2) {
		fprintf(stderr, "usage: no_tmpfile COMMAND [ARG...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "no_tmpfile: cannot install the seccomp filter: %s\n",
			strerror(errno));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_tmpfile: cannot run %s: %s\n", argv[1], strerror(errno));
	return 127;
}
