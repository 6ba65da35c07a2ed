# lib.sh: the jobs and the report of tests/identical/run (sourced by it; not a
# script of its own). A job decodes one input with both rearview binaries, or
# decodes a recording's capture, compares the files byte for byte and writes
# one result line per comparison to $OUT/results/ID.tsv:
#
#   SECTION <tab> INPUT <tab> COLUMN <tab> STATUS <tab> COUNTED <tab> DETAIL
#
# STATUS is same, DIFF (the traces differ), MSG (the traces are the same, the
# messages on stderr are not), FAIL (a command failed), n/c (not comparable),
# skip or - (nothing to compare). COUNTED is 0 for the baseline's own checks,
# which are reported but do not decide the exit status.
#
# Not here: making the inputs or building the baseline (run does that).
# shellcheck shell=bash

# The result of one comparison.
result()
{
	local id=$1 line nl=$'\n' us=$'\x1f'
	shift
	local IFS=$'\t'

	line="$*"
	printf '%s\n' "${line//$nl/$us}" >>"$OUT/results/$id.tsv"
}

# One line: the first line of a file, or its only non-empty lines joined.
first_line()
{
	sed -n '/[^[:space:]]/{p;q}' "$1" 2>/dev/null | cut -c1-200
}

# Where two files first differ, in words, with a window of each at that
# place: text shown as text (JSON), anything else as hex (FXT).
first_difference()
{
	local a=$1 b=$2 out offset line from size_a size_b

	size_a=$(stat -c %s "$a")
	size_b=$(stat -c %s "$b")
	out=$(LC_ALL=C cmp -- "$a" "$b" 2>&1)
	if [[ $out =~ EOF\ on\ ([^ ]+)\ after\ byte\ ([0-9]+) ]]; then
		printf 'one file is a prefix of the other: %s ends after byte %s (%s bytes against %s)' \
			"${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$size_a" "$size_b"
		return
	fi
	if [[ ! $out =~ (byte|char)\ ([0-9]+),\ line\ ([0-9]+) ]]; then
		printf '%s' "$out"
		return
	fi
	offset=${BASH_REMATCH[2]}
	line=${BASH_REMATCH[3]}
	printf 'first difference at byte %s (line %s; %s bytes against %s)' "$offset" "$line" \
		"$size_a" "$size_b"
	from=$((offset > 33 ? offset - 33 : 0))
	if [[ $a == *.json ]]; then
		printf '\n      base: %s' "$(tail -c +$((from + 1)) "$a" | head -c 96 | tr -c '[:print:]' '.')"
		printf '\n      cur:  %s' "$(tail -c +$((from + 1)) "$b" | head -c 96 | tr -c '[:print:]' '.')"
	else
		from=$((from / 16 * 16))
		printf '\n      base:\n%s' "$(xxd -s "$from" -l 64 "$a" | sed 's/^/        /')"
		printf '\n      cur:\n%s' "$(xxd -s "$from" -l 64 "$b" | sed 's/^/        /')"
	fi
}

# What rearview printed on stderr, with the output's place taken out, so that
# the two binaries' messages compare.
normalized_stderr()
{
	sed -e "s#$OUT/base/#OUT/#g" -e "s#$OUT/cur/#OUT/#g" "$1"
}

# Compares two traces: sets the caller's status (same or DIFF) and detail
# (where they differ, and where both are kept).
compare_traces()
{
	local a=$1 b=$2

	if cmp -s -- "$a" "$b"; then
		status=same
		detail=""
	else
		status=DIFF
		detail="$(first_difference "$a" "$b")
      kept: $a
            $b"
	fi
}

# Sets the caller's status to MSG, with the difference in detail, when the
# two stderr files differ once the outputs' places are taken out.
compare_messages()
{
	local a=$1 b=$2

	if ! diff -q <(normalized_stderr "$a") <(normalized_stderr "$b") >/dev/null; then
		status=MSG
		detail="the traces are identical, the messages differ:
$(diff <(normalized_stderr "$a") <(normalized_stderr "$b") | head -20 | sed 's/^/      /')
      kept: $a
            $b"
	fi
}

# The name of a job's outputs: ID-SECTION-INPUT-COLUMN, one word.
output_name()
{
	local name="$1-$2-$3${4:+-$4}"

	name=${name// /-}
	printf '%s' "${name//\//-}"
}

# job_decode_pair ID SECTION INPUT COLUMN EXT DECODE-ARGS...: both binaries
# decode the same input to $OUT/{base,cur}/NAME.EXT; the traces and the
# messages must be the same.
job_decode_pair()
{
	local id=$1 section=$2 input=$3 column=$4 ext=$5
	shift 5
	local name base cur status detail rc_base rc_cur

	name=$(output_name "$id" "$section" "$input" "$column")
	base=$OUT/base/$name.$ext
	cur=$OUT/cur/$name.$ext

	"$BASE_RV" decode "$@" -o "$base" >/dev/null 2>"$base.err"
	rc_base=$?
	"$CUR_RV" decode "$@" -o "$cur" >/dev/null 2>"$cur.err"
	rc_cur=$?
	if [ "$rc_base" -ne 0 ] || [ "$rc_cur" -ne 0 ]; then
		result "$id" "$section" "$input" "$column" FAIL 1 \
			"rearview decode $* failed: base exit $rc_base ($(first_line "$base.err")), cur exit $rc_cur ($(first_line "$cur.err"))"
		return
	fi
	compare_traces "$base" "$cur"
	[ "$status" != same ] || compare_messages "$base.err" "$cur.err"
	result "$id" "$section" "$input" "$column" "$status" 1 "$detail"
	if [ "$status" = same ] && [ -z "${KEEP_ALL:-}" ]; then
		rm -f "$base" "$cur" "$base.err" "$cur.err"
	fi
}

# job_recording ID SECTION INPUT EXT RUN-TRACE CAPTURE-DIR: a recording the
# baseline's `rearview run` made (RUN-TRACE, its capture in CAPTURE-DIR),
# against the current tree's `rearview decode` of that capture (run/cur).
# When the baseline can decode the capture too: its decoding against the
# current one (dec/cur), and against its own run (run/dec, reported, not
# counted: it judges the baseline, not the change).
job_recording()
{
	local id=$1 section=$2 input=$3 ext=$4 run=$5 capture=$6
	local name base cur status detail rc_base rc_cur keep=""

	name=$(output_name "$id" "$section" "$input")
	base=$OUT/base/$name.decode.$ext
	cur=$OUT/cur/$name.decode.$ext

	"$BASE_RV" decode "$capture" -o "$base" >/dev/null 2>"$base.err"
	rc_base=$?
	"$CUR_RV" decode "$capture" -o "$cur" >/dev/null 2>"$cur.err"
	rc_cur=$?

	if [ "$rc_cur" -ne 0 ]; then
		if [ "$section" = sample ] && grep -q 'no Intel PT trace' "$cur.err"; then
			result "$id" "$section" "$input" run/cur n/c 1 \
				"not comparable: decode cannot read sampling captures ($(first_line "$cur.err"))"
		else
			result "$id" "$section" "$input" run/cur FAIL 1 \
				"rearview decode $capture failed (exit $rc_cur): $(first_line "$cur.err")"
		fi
		keep=1
	else
		compare_traces "$run" "$cur"
		result "$id" "$section" "$input" run/cur "$status" 1 "$detail"
		[ "$status" = same ] || keep=1
	fi

	if [ "$rc_base" -ne 0 ]; then
		result "$id" "$section" "$input" dec/cur - 0 \
			"the baseline's decode cannot read this capture: $(first_line "$base.err")"
		result "$id" "$section" "$input" run/dec - 0 ""
	else
		if [ "$rc_cur" -ne 0 ]; then
			result "$id" "$section" "$input" dec/cur FAIL 1 \
				"the baseline decodes this capture, the current tree does not (exit $rc_cur): $(first_line "$cur.err")"
		else
			compare_traces "$base" "$cur"
			[ "$status" != same ] || compare_messages "$base.err" "$cur.err"
			result "$id" "$section" "$input" dec/cur "$status" 1 "$detail"
			[ "$status" = same ] || keep=1
		fi
		compare_traces "$run" "$base"
		result "$id" "$section" "$input" run/dec "$status" 0 \
			"${detail:+run and decode of the baseline differ on one capture: $detail}"
		[ "$status" = same ] || keep=1
	fi
	if [ -z "$keep" ] && [ -z "${KEEP_ALL:-}" ]; then
		rm -f "$base" "$cur" "$base.err" "$cur.err"
	fi
}

# print_report [MAX]: the tables, one per section, then the details of every
# comparison that is not "same" (at most MAX of them; "-" ones once per
# section and column); returns 1 unless every counted comparison is "same".
# Reads $OUT/order (SECTION <tab> INPUT, in the order the inputs were made;
# shown section by section) and the columns of each section from
# SECTION_COLUMNS.
print_report()
{
	local max=${1:-} shown=0
	local -A status=() details=() seen=()
	local nl=$'\n' us=$'\x1f'
	local section input column st counted detail failed=0 passed=0 skipped=0 last="" width=34
	local -a lines=()

	while IFS=$'\t' read -r section input column st counted detail; do
		status["$section|$input|$column"]=$st
		details["$section|$input|$column"]=${detail//$us/$nl}
		case "$st:$counted" in
		same:1) passed=$((passed + 1)) ;;
		skip:*) skipped=$((skipped + 1)) ;;
		-:* | *:0) ;;
		*) failed=$((failed + 1)) ;;
		esac
	done < <(cat "$OUT"/results/*.tsv 2>/dev/null)

	while IFS=$'\t' read -r section input; do
		if [ "$section" != "$last" ]; then
			last=$section
			printf '\n%-*s' "$width" "$section"
			for column in ${SECTION_COLUMNS[$section]}; do
				printf ' %-11s' "$column"
			done
			printf '\n'
		fi
		printf '  %-*s' $((width - 2)) "$input"
		for column in ${SECTION_COLUMNS[$section]}; do
			st=${status["$section|$input|$column"]:-?}
			printf ' %-11s' "$st"
			detail=${details["$section|$input|$column"]:-}
			if [ "$st" = "?" ]; then
				failed=$((failed + 1))
				lines+=("  $section $input [$column]: no result (its job did not finish)")
			elif [ "$st" = - ] && [ -n "$detail" ]; then
				[ -z "${seen["$section|$column"]:-}" ] &&
					lines+=("  $section $input [$column]: $st: $detail (and so in every row marked -)")
				seen["$section|$column"]=1
			elif [ "$st" != same ] && [ -n "$detail" ]; then
				lines+=("  $section $input [$column]: $st: $detail")
			fi
		done
		printf '\n'
	done < <(for section in softpt corpus sample uprobe; do
		grep "^$section"$'\t' "$OUT/order"
	done)

	if [ "${#lines[@]}" -gt 0 ]; then
		printf '\nDetails:\n'
		for detail in "${lines[@]}"; do
			if [ -n "$max" ] && [ "$shown" -ge "$max" ]; then
				printf '  ... and %d more: %s\n' $((${#lines[@]} - shown)) "$OUT/report.txt"
				break
			fi
			printf '%s\n' "$detail"
			shown=$((shown + 1))
		done
	fi
	printf '\n'
	if [ "$failed" -eq 0 ]; then
		printf 'identical: all %d counted comparisons gave the same bytes\n' "$passed"
	else
		printf 'NOT identical: %d of %d counted comparisons differ or could not be made\n' \
			"$failed" $((passed + failed))
	fi
	printf 'compare-traces: %d passed, %d failed' "$passed" "$failed"
	[ "$skipped" -eq 0 ] || printf ', %d skipped' "$skipped"
	printf '\n'
	[ "$failed" -eq 0 ]
}

export -f result first_line first_difference normalized_stderr compare_traces compare_messages \
	output_name \
	job_decode_pair job_recording
