# compare-traces: this tree's traces against a baseline revision's, byte for
# byte (tests/identical/run, which says what is compared and how).
#
#   make compare-traces             baseline: the merge-base of HEAD and main
#   make compare-traces BASE=REV    baseline: REV
#
# Not here: the comparison itself (tests/identical/run).

.PHONY: compare-traces

compare-traces:
	RV_BUILD=$(BUILD) tests/identical/run $(if $(BASE),--base $(BASE))
