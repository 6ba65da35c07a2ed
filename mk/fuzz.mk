# fuzz: libFuzzer harnesses (tests/fuzz/fuzz_NAME.c) for every reader of
# outside bytes, built in their own tree (build-fuzz) by clang with
# -fsanitize=fuzzer,address,undefined; the project's sources are rebuilt
# there with the same sanitizers and -fsanitize=fuzzer-no-link, so the
# normal build is untouched. Seeds are committed in tests/fuzz/corpus/NAME
# (tools/fuzz-seeds makes them again); what a run finds goes into
# build-fuzz/corpus/NAME, never into the seeds.
#
# make fuzz         every harness for FUZZ_SECONDS (default 60) each, one
#                   after the other, then a table of execs, exec/s, cov and
#                   ft; fails naming the crash file if any harness crashed,
#                   or failed the check of what its seeds alone reached
#                   (tools/fuzz-run)
# make fuzz-smoke   the same for 10 s each (part of make test)
# make fuzz-build   the harnesses only

FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SUPPORT_SRC := $(filter-out tests/fuzz/fuzz_%.c,$(wildcard tests/fuzz/*.c))
FUZZ_SUPPORT_OBJ := $(FUZZ_SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-harnesses clean-fuzz

# Inside the fuzz tree's own make (SAN=fuzz, CC=clang): every object is
# instrumented for coverage and checked by ASan and UBSan.
ifeq ($(SAN),fuzz)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ALL_CFLAGS += -fsanitize=fuzzer-no-link $(FUZZ_SAN)
ALL_LDFLAGS += $(FUZZ_SAN)
endif

$(BUILD)/obj/tests/fuzz/%.o: ALL_CFLAGS += -DRV_FUZZ_DIR='"$(CURDIR)/$(BUILD)/fuzz"'

$(BUILD)/fuzz/%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(FUZZ_SUPPORT_OBJ) $(BUILD)/librearview.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

# The raw PT harnesses' image: the code of a static PT target at its
# address, its whole executable segment (.init, .plt, .text, .fini): the
# program's trace starts in .plt (the IFUNC stubs), and code the image
# lacks makes the fast walker hand every chunk to libipt. In readelf's
# program headers hex is lower case: an E is the segment's flag.
$(BUILD)/fuzz/raw_pt.image: $(BUILD)/tests/pt/recursion
	@mkdir -p $(@D)
	readelf -lW $< | awk '$$1 == "LOAD" && /E/ { print $$2, $$3, $$5 }' \
		> $(BUILD)/fuzz/raw_pt.load
	test "$$(wc -l < $(BUILD)/fuzz/raw_pt.load)" -eq 1
	read off addr size < $(BUILD)/fuzz/raw_pt.load && \
		dd if=$< of=$@ iflag=skip_bytes,count_bytes skip=$$((off)) count=$$((size)) \
			status=none && \
		echo $$addr > $(BUILD)/fuzz/raw_pt.addr
	test "$$(stat -c %s $@)" -gt 0

fuzz-harnesses: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%) $(BUILD)/fuzz/raw_pt.image

fuzz-build:
	$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) SAN=fuzz CC=$(CLANG) fuzz-harnesses

fuzz: fuzz-build
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
		tools/fuzz-run $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_NAMES)

# make check-asan runs make test again in build-asan: the harnesses already
# ran under both sanitizers in the first make test.
ifeq ($(SAN),1)
fuzz-smoke:
	@echo "fuzz-smoke: not again under check-asan (the harnesses always run with ASan and UBSan)"
else
fuzz-smoke:
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10
endif

clean: clean-fuzz
clean-fuzz:
	rm -rf $(FUZZ_BUILD)
