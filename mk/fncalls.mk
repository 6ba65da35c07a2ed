# The uprobe function tracer's target and yardsticks.
#
# build/tests/targets/fncalls (tests/targets/fncalls.c): counts its own calls
# for tests/e2e/test_functions.c and times a tight loop for bench/run. -O2 as a
# real program is built, frame pointers, and no sibling calls, so that every
# call in the source is a call and a return in the binary. The build fails if
# the compiler made a clone of a function (.isra, .constprop, .part, ...): a
# uprobe on the symbol would then miss the calls that go to the clone.
# build/tests/targets/fncalls-pg: the same with -pg, for `uftrace record`.
# build/bench/uprobe_bare (tools/bench/uprobe_bare.c, bpf/bench_count.bpf.c):
# the bare uprobe+uretprobe pair that only counts, for bench/run.

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

$(BUILD)/bench/uprobe_bare: $(BUILD)/bpf/bench_count.skel.h

all: $(BUILD)/bench/uprobe_bare

bench: $(BUILD)/bench/uprobe_bare $(BUILD)/tests/targets/fncalls $(BUILD)/tests/targets/fncalls-pg
