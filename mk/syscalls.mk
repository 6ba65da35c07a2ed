# The x86-64 system call names of the function tracer's syscall spans
# (src/decode/syscall_names.c), generated from the kernel's uapi header
# (Debian's linux-libc-dev) rather than written by hand: one designated
# initializer per `#define __NR_name number` line.

SYSCALL_HEADER ?= /usr/include/x86_64-linux-gnu/asm/unistd_64.h
SYSCALL_TABLE := $(BUILD)/gen/syscall_table.inc

$(SYSCALL_TABLE): $(SYSCALL_HEADER) mk/syscalls.mk
	@mkdir -p $(@D)
	awk '$$1 == "#define" && $$2 ~ /^__NR_[A-Za-z0-9_]+$$/ && $$3 ~ /^[0-9]+$$/ \
		{ sub(/^__NR_/, "", $$2); printf "\t[%s] = \"%s\",\n", $$3, $$2; n++ } \
		END { if (n < 300) { print "too few system calls in the header" > "/dev/stderr"; exit 1 } }' \
		$< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/src/decode/syscall_names.o: $(SYSCALL_TABLE)
$(BUILD)/obj/src/decode/syscall_names.o: ALL_CFLAGS += -I$(BUILD)/gen
