# Sourced by scripts/bad-input.sh and scripts/bad-input-37.sh: one line per case, the columns
# docs/bad-input.md's tables show. BI_WIDTH (default 16) is the label column's width.
#
# run LABEL COMMAND...: runs the command capped at 20 s and 4 GB of address space, with a SIGKILL 5 s
# after the timeout's SIGTERM (an old binary's FIFO open and its planning of an unbounded sweep ignored
# SIGTERM: the script must not hang), and prints the wall time, the exit status and the first line of
# output; for a failure, its own "lab: ..." line rather than the progress printed before it.
run() {
	local label=$1
	shift
	local start end out rc
	start=$(date +%s%N)
	out=$( (ulimit -v 4000000; timeout -k 5 20 "$@") 2>&1)
	rc=$?
	end=$(date +%s%N)
	[ $rc -eq 124 ] && out="timeout after 20 s"
	[ $rc -eq 137 ] && out="timeout after 20 s; still running 5 s after SIGTERM (killed)"
	if [ $rc -ne 0 ] && echo "$out" | grep -q '^lab: '; then
		out=$(echo "$out" | grep '^lab: ')
	fi
	printf "%-${BI_WIDTH:-16}s %7.2f s  exit %-3d %s\n" "$label" "$(echo "($end - $start) / 1000000000" | bc -l)" "$rc" \
		"$(echo "$out" | grep -v '^\s*$' | head -1 | cut -c1-220 | grep . || echo '(no output)')"
}

# say LABEL WHAT [EXIT]: a line in the same columns for a case whose outcome is a state (a file kept, a
# process alive) rather than a command's message.
say() { printf "%-${BI_WIDTH:-16}s %7s    exit %-3s %s\n" "$1" "-" "${3:--}" "$2"; }
