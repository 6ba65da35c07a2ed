# The uprobe function tracer's target and yardsticks.
#
# build/tests/targets/fncalls (tests/targets/fncalls.c): counts its own calls
# for tests/e2e/test_functions.c and times a tight loop for bench/run. -O2 as a
# real program is built, frame pointers, and no sibling calls, so that every
# call in the source is a call and a return in the binary. The build fails if
# the compiler made a clone of a function (.isra, .constprop, .part, ...): a
# uprobe on the symbol would then miss the calls that go to the clone.
# build/tests/targets/fncalls-pg: the same with -pg, for `uftrace record`.
# build/tests/targets/fncalls-nop: the same with GCC's -pg -mfentry
# -mnop-mcount (GCC only: clang has no -mnop-mcount on x86; and only outside
# PIC: -fno-pie), linked without -pg (no gmon profiling timer), so that every
# function starts with a 5-byte nop, the instruction that Linux 6.17+ turns a
# uprobe on into a call to a trampoline instead of an int3 trap; the build
# fails unless tiny() starts with that nop (0f 1f 44 00 00) and has no clone.
# build/bench/uprobe_bare (tools/bench/uprobe_bare.c, bpf/bench_count.bpf.c):
# the bare probe pairs that only count, for bench/run: a uprobe+uretprobe, or
# (--exits sites) plain uprobes at the entry and at the return sites.

FNCALLS_CFLAGS := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -pthread

$(BUILD)/tests/targets/fncalls: tests/targets/fncalls.c
	@mkdir -p $(@D)
	$(TARGET_CC) $(FNCALLS_CFLAGS) -o $@ $<
	! nm $@ | grep -E ' [tT] [a-z_0-9]+\.[a-z]'

$(BUILD)/tests/targets/fncalls-pg: tests/targets/fncalls.c
	@mkdir -p $(@D)
	$(TARGET_CC) $(FNCALLS_CFLAGS) -pg -o $@ $<
	! nm $@ | grep -E ' [tT] [a-z_0-9]+\.[a-z]'

FNCALLS_NOP_CC := gcc

$(BUILD)/tests/targets/fncalls-nop: tests/targets/fncalls.c
	@mkdir -p $(@D)
	$(FNCALLS_NOP_CC) $(FNCALLS_CFLAGS) -fno-pie -pg -mfentry -mnop-mcount -c -o $@.o $<
	$(FNCALLS_NOP_CC) -no-pie -pthread -o $@ $@.o
	rm -f $@.o
	objdump -d $@ | awk '/<tiny>:/ { getline; print; exit }' | grep -q '0f 1f 44 00 00 '
	! nm $@ | grep -E ' [tT] tiny\.'

$(BUILD)/bench/uprobe_bare: $(BUILD)/bpf/bench_count.skel.h

all: $(BUILD)/bench/uprobe_bare

bench: $(BUILD)/bench/uprobe_bare $(BUILD)/tests/targets/fncalls $(BUILD)/tests/targets/fncalls-pg \
	$(BUILD)/tests/targets/fncalls-nop
