# make check-viewers: the traces opened where users open them.
#
# Four runs of the e2e targets, each written as Chrome JSON and as FXT:
#   sample   the sampling backend on tests/targets/workload
#   uprobe   the function tracer (--backend uprobe) on tests/targets/fncalls
#   pt       `rearview decode` of a softpt capture of tests/pt/recursion
#   cxx      the function tracer on the C++ exception target unwind_throw
# Each JSON trace is loaded into speedscope (npm, pinned in
# tools/viewers/package-lock.json) in Debian's headless Chromium by
# tools/viewers/check.mjs, which fails on any console warning or error and
# checks the target's functions among the frames speedscope imported; a
# screenshot of each goes to $(VIEWERS_DIR). Each FXT trace goes through
# tools/fxtcheck (the project's strict reader: records, string and thread
# references, nesting per track). Run as root (uprobes, perf events).
#
# VIEWERS_READY says whether the packages are there (make deps installs
# them); `make test` runs check-viewers when they are, and always under
# CI=true, where their absence is a failure.

VIEWERS_DIR := $(BUILD)/viewers
comma := ,
VIEWERS_NODE := tools/viewers/node_modules
VIEWERS_READY := $(and $(wildcard /usr/bin/chromium),$(wildcard $(VIEWERS_NODE)/speedscope/package.json),$(wildcard $(VIEWERS_NODE)/playwright-core/package.json))
VIEWERS_TARGETS := $(BUILD)/tests/targets/workload $(BUILD)/tests/targets/fncalls \
	$(BUILD)/tests/targets/unwind_throw $(PT_TARGET_DIR)/recursion

FXTCHECK := $(BUILD)/fxtcheck

TEST_DEPS += $(FXTCHECK)

.PHONY: check-viewers check-viewers-if-ready

# tools/fxtcheck: the strict reader of tests/support as a command.
$(BUILD)/obj/tools/fxtcheck/%.o: ALL_CFLAGS += -Itests/support

$(FXTCHECK): $(BUILD)/obj/tools/fxtcheck/fxtcheck.o $(BUILD)/obj/tests/support/fxt_reader.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

# A command whose output goes to $(VIEWERS_DIR)/NAME.log, shown when it fails.
viewers_quiet = $(1) > $(VIEWERS_DIR)/$(2).log 2>&1 || { cat $(VIEWERS_DIR)/$(2).log >&2; exit 1; }

check-viewers: all $(VIEWERS_TARGETS) $(FXTCHECK)
	@test -n "$(VIEWERS_READY)" || { echo "check-viewers: Debian's chromium or the npm packages" \
		"in $(VIEWERS_NODE) are missing: run 'make deps'" >&2; exit 1; }
	@rm -rf $(VIEWERS_DIR) && mkdir -p $(VIEWERS_DIR)
	@$(call viewers_quiet,$(BUILD)/rearview run --backend sample \
		--working-directory $(VIEWERS_DIR)/sample.capture -o $(VIEWERS_DIR)/sample.fxt \
		-- $(BUILD)/tests/targets/workload 20000,sample)
	@$(call viewers_quiet,$(BUILD)/rearview decode -o $(VIEWERS_DIR)/sample.json \
		$(VIEWERS_DIR)/sample.capture,sample-json)
	@$(call viewers_quiet,$(BUILD)/rearview run --backend uprobe \
		--functions 'fib$(comma)op_*$(comma)apply_op$(comma)jump_*$(comma)after_jump' \
		--working-directory $(VIEWERS_DIR)/uprobe.capture -o $(VIEWERS_DIR)/uprobe.fxt \
		-- $(BUILD)/tests/targets/fncalls --only fib$(comma)ops$(comma)jumps,uprobe)
	@$(call viewers_quiet,$(BUILD)/rearview decode -o $(VIEWERS_DIR)/uprobe.json \
		$(VIEWERS_DIR)/uprobe.capture,uprobe-json)
	@$(call viewers_quiet,env -i $(BUILD)/softpt -o $(VIEWERS_DIR)/pt.capture \
		-- $(PT_TARGET_DIR)/recursion,softpt)
	@$(call viewers_quiet,$(BUILD)/rearview decode -o $(VIEWERS_DIR)/pt.fxt \
		$(VIEWERS_DIR)/pt.capture,pt)
	@$(call viewers_quiet,$(BUILD)/rearview decode -o $(VIEWERS_DIR)/pt.json \
		$(VIEWERS_DIR)/pt.capture,pt-json)
	@$(call viewers_quiet,$(BUILD)/rearview run --backend uprobe \
		--functions 'catcher*$(comma)level*$(comma)check*$(comma)on_caught*$(comma)scale*' \
		--working-directory $(VIEWERS_DIR)/cxx.capture -o $(VIEWERS_DIR)/cxx.fxt \
		-- $(BUILD)/tests/targets/unwind_throw 300,cxx)
	@$(call viewers_quiet,$(BUILD)/rearview decode -o $(VIEWERS_DIR)/cxx.json \
		$(VIEWERS_DIR)/cxx.capture,cxx-json)
	@rm -rf $(VIEWERS_DIR)/*.capture
	$(FXTCHECK) $(VIEWERS_DIR)/sample.fxt $(VIEWERS_DIR)/uprobe.fxt $(VIEWERS_DIR)/pt.fxt \
		$(VIEWERS_DIR)/cxx.fxt
	node tools/viewers/check.mjs $(VIEWERS_DIR) \
		sample=$(VIEWERS_DIR)/sample.json:main$(comma)level$(comma)leaf \
		uprobe=$(VIEWERS_DIR)/uprobe.json:fib$(comma)apply_op$(comma)op_add$(comma)jump_around$(comma)after_jump \
		pt=$(VIEWERS_DIR)/pt.json:main$(comma)descend$(comma)bottom \
		cxx=$(VIEWERS_DIR)/cxx.json:catcher$(comma)level1$(comma)level3$(comma)check$(comma)on_caught

# What `make test` runs: check-viewers when its packages are there, and
# always under CI=true (where missing packages fail it).
check-viewers-if-ready:
ifneq ($(or $(VIEWERS_READY),$(filter true,$(CI))),)
	$(MAKE) --no-print-directory check-viewers
else
	@echo "check-viewers: skipped: Debian's chromium or the npm packages in $(VIEWERS_NODE)" \
		"are missing ('make deps' installs them)"
endif
