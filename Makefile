# rearview: build, test, install.
#
# make            build/rearview with its BPF objects and skeletons
# make deps       install every Debian package the project needs (idempotent)
# make example    build, then record the bundled example program
# make test       the style check, unit tests (Criterion), end-to-end tests and
#                 check-viewers (mk/viewers.mk) when its packages are installed
# make format     reformat every C file in the kernel's style (.clang-format)
# make check-asan the same tests under AddressSanitizer and UBSan (in build-asan/)
# make fuzz       each libFuzzer harness (tests/fuzz, in build-fuzz/) for FUZZ_SECONDS
#                 (60), then their execs and coverage; make test runs them 10 s each
# make bench      benchmarks, side by side with the reference tools
# make install    PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
BUILD ?= build
CC ?= cc
CXX ?= g++
CLANG ?= clang
BPFTOOL ?= bpftool
VERSION := 0.1.0

# The libraries rearview links, and the stages that use them:
#   libbpf         src/record (the gate, the engines' BPF programs, skeletons)
#   libelf         src/record (symbol tables, code offsets), src/symbolize, src/util/elf
#   libdw          src/symbolize (libdwfl, unwind), src/record/probe_site
#   libipt         src/decode (Intel PT packets, the block decoder, images)
#   Zydis          src/decode/pt_code (instructions at the end of a block)
#   zlib           src/write (.gz traces)
#   libzstd        src/write (.zst traces)
#   libsupc++      src/symbolize/demangle (__cxa_demangle), linked statically: the
#                  shared libstdc++ (with libm and libgcc_s) adds 1700 symbol
#                  relocations to every start, 2 ms of the 35 that decoding a
#                  small capture takes
#   pthread        src/decode (parallel PT decoding)
# The libraries of PKGS are linked statically, from the archives their -dev
# packages ship (with those of liblzma and libbz2, which libdw reads
# compressed files with): each shared library costs every start its
# mapping, its relocations and the faults on the pages they write, which on
# the test machine's VM made a third of the CPU time of decoding a 200 KB
# capture. Debian ships no archives of libipt and Zydis: those stay shared.
PKGS := libbpf libelf libdw zlib libzstd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
PKG_STATIC_LIBS := -Wl,-Bstatic -Wl,--start-group \
	$(filter-out -pthread -lpthread,$(shell pkg-config --libs --static $(PKGS) 2>/dev/null)) \
	-Wl,--end-group -Wl,-Bdynamic
DECODE_LIBS := -lipt -lZydis # Debian ships no pkg-config files for them

ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1
else
SAN_FLAGS :=
OPT := -O2
endif

CFLAGS ?=
WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -DRV_VERSION='"$(VERSION)"' $(OPT) -g $(WARN) \
	-Isrc -I$(BUILD)/bpf -Ibpf $(PKG_CFLAGS) $(SAN_FLAGS) -MMD -MP $(CFLAGS)
ALL_LDFLAGS := $(SAN_FLAGS) $(LDFLAGS)
LIBS := $(PKG_STATIC_LIBS) $(DECODE_LIBS) $(shell $(CC) -print-file-name=libsupc++.a) -lpthread
TEST_LIBS := -lcriterion -ljansson -lm

# The tests' shared fixtures (tests/support) are for the tests alone.
$(BUILD)/obj/tests/%.o: ALL_CFLAGS += -Itests/support

# Target programs are the traced side: frame pointers and symbols, no sanitizers.
# C targets are built with clang, which keeps frame pointers in leaf functions
# when asked (gcc 12 drops them there), so that frame-pointer stacks are whole.
TARGET_CC := $(CLANG)
TARGET_CFLAGS := -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread
# The symbolizer's test programs are gcc's, as most of what it will read is.
$(BUILD)/tests/targets/sym_%: TARGET_CC := $(CC)

SRC := $(shell find src -name '*.c' | sort)
LIB_SRC := $(filter-out src/main.c,$(SRC))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
BPF_SRC := $(wildcard bpf/*.bpf.c)
BPF_OBJ := $(BPF_SRC:bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.o)
BPF_SKEL := $(BPF_SRC:bpf/%.bpf.c=$(BUILD)/bpf/%.skel.h)

UNIT_SRC := $(wildcard tests/unit/*.c) $(wildcard tests/support/*.c)
UNIT_OBJ := $(UNIT_SRC:%.c=$(BUILD)/obj/%.o)
E2E_SRC := $(wildcard tests/e2e/*.c) $(wildcard tests/support/*.c)
E2E_OBJ := $(E2E_SRC:%.c=$(BUILD)/obj/%.o)
TARGETS_C := $(wildcard tests/targets/*.c)
TARGETS_CXX := $(wildcard tests/targets/*.cpp)
TARGET_BINS := $(TARGETS_C:tests/targets/%.c=$(BUILD)/tests/targets/%) \
	$(TARGETS_CXX:tests/targets/%.cpp=$(BUILD)/tests/targets/%)
TARGET_STRIPPED := $(TARGET_BINS:%=%.stripped)
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
# Every C file clang-format keeps in the kernel's style (.clang-format).
FORMATTED := $(SRC) $(wildcard src/*/*.h src/*.h tests/*/*.c tests/*/*.h tests/*/*.cpp \
	tools/*/*.c tools/*/*.h bpf/*.c bpf/*.h examples/*.c)

.PHONY: all deps example test unit e2e check-asan bench install uninstall clean vmlinux format \
	format-check

all: $(BUILD)/rearview

.SECONDARY:
.DELETE_ON_ERROR:

-include mk/*.mk

deps:
	tools/install-deps

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/x86/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Ivmlinux/x86 -Ibpf -Wall -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: %.c | $(BPF_SKEL)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/librearview.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/rearview: $(BUILD)/obj/src/main.o $(BUILD)/librearview.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# A tool of one source file, tools/DIR/NAME.c (mk/bench.mk's yardsticks).
$(BUILD)/%: tools/%.c $(BUILD)/librearview.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/librearview.a $(LIBS)

$(BUILD)/tests/unit-tests: $(UNIT_OBJ) $(BUILD)/librearview.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) $(TEST_LIBS)

$(BUILD)/tests/e2e-tests: $(E2E_OBJ) $(BUILD)/librearview.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS) $(TEST_LIBS)

$(BUILD)/tests/targets/%: tests/targets/%.c
	@mkdir -p $(@D)
	$(TARGET_CC) $(TARGET_CFLAGS) -o $@ $< -ldl -lm

$(BUILD)/tests/targets/%: tests/targets/%.cpp
	@mkdir -p $(@D)
	$(CXX) $(TARGET_CFLAGS) -o $@ $<

# The stop indicator targets share their body.
$(BUILD)/tests/targets/stop_magic $(BUILD)/tests/targets/stop_own: tests/targets/stop_indicator.h

$(BUILD)/tests/targets/%.stripped: $(BUILD)/tests/targets/%
	strip -o $@ $<

$(BUILD)/examples/%: examples/%.c
	@mkdir -p $(@D)
	$(TARGET_CC) $(TARGET_CFLAGS) -o $@ $<

example: $(BUILD)/rearview $(EXAMPLES)
	$(BUILD)/rearview run -o $(BUILD)/example.fxt -- $(BUILD)/examples/demo

TEST_DEPS += all $(BUILD)/tests/unit-tests $(BUILD)/tests/e2e-tests $(TARGET_BINS) $(TARGET_STRIPPED)

unit: $(TEST_DEPS)
	RV_BUILD=$(BUILD) tests/run-suite $(BUILD)/tests/unit-tests --jobs 2

e2e: $(TEST_DEPS)
	RV_BUILD=$(BUILD) tests/run-suite $(BUILD)/tests/e2e-tests --jobs 1

test: $(TEST_DEPS) format-check
	RV_BUILD=$(BUILD) tests/run-suite $(BUILD)/tests/unit-tests --jobs 2
	RV_BUILD=$(BUILD) tests/run-suite $(BUILD)/tests/e2e-tests --jobs 1
	$(MAKE) --no-print-directory check-viewers-if-ready
	$(MAKE) --no-print-directory fuzz-smoke

check-asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp ASAN_OPTIONS=detect_leaks=1 \
		$(MAKE) BUILD=build-asan SAN=1 test

bench: all $(TARGET_BINS)
	RV_BUILD=$(BUILD) bench/run

install: $(BUILD)/rearview
	install -D -m 0755 $(BUILD)/rearview $(DESTDIR)$(PREFIX)/bin/rearview
	install -D -m 0644 docs/rearview.1 $(DESTDIR)$(PREFIX)/share/man/man1/rearview.1

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/rearview $(DESTDIR)$(PREFIX)/share/man/man1/rearview.1

# Regenerate the committed CO-RE header from this machine's kernel BTF.
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/x86/vmlinux.h

format:
	clang-format -i $(FORMATTED)

# Fails, naming the file and line, where a file has drifted from the style.
format-check:
	@clang-format --dry-run --Werror $(FORMATTED)
	@echo "format-check: $(words $(FORMATTED)) files in the kernel's style (.clang-format)"

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
