# The function tracer's unwinding targets (tests/e2e/test_functions_unwind.c):
# a C++ exception, a longjmp and a ucontext stack switch over traced frames.
# Built by gcc at -O2 as real programs are, so that GCC moves their unlikely
# paths out of line ("check(int) [clone .cold]", "thrower.cold") and makes a
# constant-argument clone ("scale.constprop.0"): the build fails when it did
# not, since the tests would then prove nothing about them.

UNWIND_CFLAGS := -O2 -g

$(BUILD)/tests/targets/unwind_throw: tests/targets/unwind_throw.cpp
	@mkdir -p $(@D)
	$(CXX) $(UNWIND_CFLAGS) -o $@ $<
	nm $@ | grep -q ' _Z5checki\.cold$$'
	nm $@ | grep -q ' _ZL5scaleii\.constprop\.0$$'

$(BUILD)/tests/targets/unwind_longjmp: tests/targets/unwind_longjmp.c
	@mkdir -p $(@D)
	$(CC) $(UNWIND_CFLAGS) -o $@ $<
	nm $@ | grep -q ' thrower\.cold$$'
	nm $@ | grep -q ' scale\.constprop\.0$$'

$(BUILD)/tests/targets/unwind_ucontext: tests/targets/unwind_ucontext.c
	@mkdir -p $(@D)
	$(CC) $(UNWIND_CFLAGS) -o $@ $<
	nm $@ | grep -q ' scale\.constprop\.0$$'
