/* syscalls.c: spends its time in read() system calls from read_zeros, so that
 * kernel frames appear under it when the kernel is in scope. Prints the number
 * of read calls it made. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char buffer[1 << 20];

__attribute__((noinline)) unsigned long read_zeros(int fd, unsigned long rounds)
{
	unsigned long calls = 0;

	for (unsigned long i = 0; i < rounds; i++) {
		if (read(fd, buffer, sizeof(buffer)) <= 0)
			break;
		calls++;
	}
	__asm__ volatile("" ::: "memory");
	return calls;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0)
		return 1;
	printf("read calls: %lu\n", read_zeros(fd, rounds));
	close(fd);
	return 0;
}
