# softpt: the PT-less machine's source of genuine Intel PT captures (tools/softpt).
# Its packet generator is unit-tested inside build/tests/unit-tests.

SOFTPT_SRC := $(wildcard tools/softpt/*.c)
SOFTPT_LIB_SRC := $(filter-out tools/softpt/main.c,$(SOFTPT_SRC))
SOFTPT_OBJ := $(SOFTPT_SRC:%.c=$(BUILD)/obj/%.o)
SOFTPT_LIB_OBJ := $(SOFTPT_LIB_SRC:%.c=$(BUILD)/obj/%.o)

UNIT_OBJ += $(SOFTPT_LIB_OBJ)

all: $(BUILD)/softpt

$(BUILD)/softpt: $(SOFTPT_OBJ) $(BUILD)/librearview.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)
