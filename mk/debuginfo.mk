# Copies of tests/targets/sym_c whose names are somewhere other than their
# own symbol table, for the symbolizer's tests (tests/unit/test_symbolizer.c):
#
# build/tests/targets/sym_c.minidebug: stripped of .symtab, with MiniDebugInfo
#   instead, as Fedora ships its programs: a .gnu_debugdata section holding an
#   xz-compressed ELF file with the symbol table (and no DWARF, no code). The
#   build fails unless it has .gnu_debugdata and no .symtab.
# build/tests/targets/sym_c.debugroot/.build-id/xx/yyyy.debug: sym_c's symbols
#   and DWARF under its build ID (xx: the ID's first byte, yyyy: the rest), as
#   Debian's -dbgsym packages install them under /usr/lib/debug; the debug
#   file of sym_c.stripped (the same build ID) when REARVIEW_DEBUG_DIRS names
#   the directory.

$(BUILD)/tests/targets/sym_c.minidebug: $(BUILD)/tests/targets/sym_c
	objcopy --only-keep-debug $< $@.debug
	objcopy --strip-debug --remove-section .comment $@.debug $@.mini
	rm -f $@.mini.xz && xz $@.mini
	objcopy --strip-all --add-section .gnu_debugdata=$@.mini.xz $< $@
	rm -f $@.debug $@.mini.xz
	readelf -S $@ | grep -q ' \.gnu_debugdata '
	! readelf -S $@ | grep -q ' \.symtab '

$(BUILD)/tests/targets/sym_c.debugroot: $(BUILD)/tests/targets/sym_c
	rm -rf $@
	id=$$(readelf -n $< | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p') && \
		test $${#id} -gt 2 && \
		dir=$@/.build-id/$$(echo $$id | cut -c1-2) && mkdir -p $$dir && \
		objcopy --only-keep-debug $< $$dir/$$(echo $$id | cut -c3-).debug

TEST_DEPS += $(BUILD)/tests/targets/sym_c.minidebug $(BUILD)/tests/targets/sym_c.debugroot

# build/tests/pt/recursion.stripped: a PT target stripped, whose softpt
# capture tests/e2e/test_stripped.c decodes (the decoder's stretches of
# stripped code are its FDEs).
$(BUILD)/tests/pt/recursion.stripped: $(BUILD)/tests/pt/recursion
	strip -o $@ $<

TEST_DEPS += $(BUILD)/tests/pt/recursion.stripped
