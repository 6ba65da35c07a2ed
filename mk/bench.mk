# Benchmark tools: yardsticks that `make bench` measures rearview against.
#
# build/bench/ptwalk: the bare libipt block-decoder walk over a raw PT trace
# (tools/bench/ptwalk.c), the speed the PT decoder is held to.

BENCH_TOOLS := $(BUILD)/bench/ptwalk

all: $(BENCH_TOOLS)
