# PT target programs (tests/pt): the programs that tests/e2e/test_softpt.c runs
# under build/softpt, whose calls and returns Linux perf's decoder must find in
# the capture. Each one prints its own call counts.
#
# softpt single-steps every user instruction (some 40 us each on the CI VMs), so
# what the dynamic loader and libc's start-up cost matters: most targets are
# linked statically (12 thousand instructions to main instead of 90 thousand).
# The ones whose subject is dynamic linking (lazy PLT binding, dlopen) and the
# C++ one (libstdc++ linked statically: the shared one costs 1.5 million
# instructions to load) are dynamic.

PT_TARGET_DIR := $(BUILD)/tests/pt
PT_CC := $(CLANG)
PT_CXX := $(CXX)
PT_CFLAGS := -g -O1 -fno-omit-frame-pointer -pthread
PT_CLANG_FLAGS := -mno-omit-leaf-frame-pointer

PT_STATIC := recursion fnptr qsort_callback longjmp signals tailcall syscall_loop two_threads windows_pt
PT_DYNAMIC := lazy_plt dlopen_main exceptions lld_layout
PT_TARGET_BINS := $(addprefix $(PT_TARGET_DIR)/,$(PT_STATIC) $(PT_DYNAMIC) libptplugin.so)

TEST_DEPS += $(PT_TARGET_BINS)

$(addprefix $(PT_TARGET_DIR)/,$(filter-out tailcall,$(PT_STATIC))): $(PT_TARGET_DIR)/%: tests/pt/%.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -static -o $@ $<

# -O2 for sibling calls; the build fails if dispatch() does not end in jumps to
# the tail-called functions, since the test would then prove nothing.
$(PT_TARGET_DIR)/tailcall: tests/pt/tailcall.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -O2 -static -o $@ $<
	objdump -d --no-show-raw-insn $@ | awk '/<dispatch>:/,/^$$/' > $@.dispatch.s
	grep -Eq 'j[a-z]* +[0-9a-f]+ <tail_even>' $@.dispatch.s
	grep -Eq 'j[a-z]* +[0-9a-f]+ <tail_odd>' $@.dispatch.s
	! grep -Eq '[[:space:]]callq? ' $@.dispatch.s
	rm -f $@.dispatch.s

# lld's layout (read-only data and code in one file page), -O2 for the sibling
# call; the build fails unless enter() ends in a jump to finish() and the code
# segment's p_vaddr - p_offset is not the first segment's.
$(PT_TARGET_DIR)/lld_layout: tests/pt/lld_layout.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -O2 -fuse-ld=lld -o $@ $<
	objdump -d --no-show-raw-insn $@ | awk '/<enter>:/,/^$$/' > $@.enter.s
	grep -Eq 'jmp +[0-9a-f]+ <finish>' $@.enter.s
	rm -f $@.enter.s
	readelf -lW $@ | awk '$$1 == "LOAD" { print $$2, $$3, / E / ? "x" : "-" }' | { \
		read off va x; first=$$((va - off)); shifted=0; \
		while read off va x; do \
			[ "$$x" = x ] && [ $$((va - off)) -ne $$first ] && shifted=1; \
		done; [ $$shifted = 1 ]; }

# -z lazy: PLT slots are bound on first call, whatever the toolchain's default.
$(PT_TARGET_DIR)/lazy_plt: tests/pt/lazy_plt.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -Wl,-z,lazy -o $@ $<

$(PT_TARGET_DIR)/dlopen_main: tests/pt/dlopen_main.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -Wl,-rpath,'$$ORIGIN' -o $@ $< -ldl

$(PT_TARGET_DIR)/libptplugin.so: tests/pt/ptplugin.c
	@mkdir -p $(@D)
	$(PT_CC) $(PT_CFLAGS) $(PT_CLANG_FLAGS) -shared -fPIC -o $@ $<

$(PT_TARGET_DIR)/exceptions: tests/pt/exceptions.cpp
	@mkdir -p $(@D)
	$(PT_CXX) $(PT_CFLAGS) -static-libstdc++ -static-libgcc -o $@ $<
