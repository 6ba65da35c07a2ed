# ptrepeat: a large Intel PT capture from a small softpt one, for the decode
# benchmarks (bench/run, "decoding PT"). Its TSC-shifting half (ptshift) is
# unit-tested inside build/tests/unit-tests.

PTREPEAT_SRC := tools/bench/ptrepeat.c tools/bench/ptshift.c
PTREPEAT_OBJ := $(PTREPEAT_SRC:%.c=$(BUILD)/obj/%.o)
PTSHIFT_OBJ := $(BUILD)/obj/tools/bench/ptshift.o

UNIT_OBJ += $(PTSHIFT_OBJ)

# make bench makes its large captures with softpt, a PT target and ptrepeat.
bench: $(BUILD)/bench/ptrepeat $(BUILD)/softpt $(BUILD)/tests/pt/recursion

$(BUILD)/bench/ptrepeat: $(PTREPEAT_OBJ) $(BUILD)/librearview.a
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
