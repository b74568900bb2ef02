#!/usr/bin/env bash
# Regression test of the working tree against BASE (default: the last tag, else main): builds BASE's
# lab outside the tree (scripts/baseline.sh: git archive, cached by commit) and this tree's lab, runs
# the regression set (lab/experiments/regression: one small spec per mechanism, docs/regression.md)
# with both on the same seeds, and compares them with lab compare. Exit status is lab compare's:
# 0 nothing changed, 3 something did (the summary names the spec and metric), 1 it could not decide
# (a run missing, failed or unreadable), 2 bad usage.
#
#   bash scripts/regress.sh              # against the last tag or main
#   bash scripts/regress.sh HEAD         # against the last commit: what do my uncommitted edits change?
#   SEED=11 SEEDS=2 JOBS=2 OUT=results/regress bash scripts/regress.sh main
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"

if [ $# -gt 1 ]; then
	echo "usage: bash scripts/regress.sh [BASE]  (a commit, branch or tag; default the last tag, else main)" >&2
	exit 2
fi
base="${1:-$(git describe --tags --abbrev=0 2>/dev/null || echo main)}"
seed=${SEED:-1}
seeds=${SEEDS:-2}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
out=${OUT:-results/regress}
case "$seed$seeds$jobs" in *[!0-9]*) echo "regress.sh: SEED, SEEDS and JOBS are whole numbers" >&2; exit 2 ;; esac
start=$(date +%s)

base_lab=$(bash scripts/baseline.sh "$base") || { echo "regress.sh: could not build BASE $base" >&2; exit 1; }
tmp=$(mktemp -d /tmp/fabriclab-regress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/lab" ./cmd/lab || { echo "regress.sh: this tree does not build" >&2; exit 1; }
echo "regress.sh: built BASE $base ($(git rev-parse --short "$base")) and this tree in $(( $(date +%s) - start )) s"

# Both binaries run the same copy of this tree's regression specs, each given the first seed (lab run
# --seeds N then runs seeds SEED..SEED+N-1).
cp -r lab/experiments/regression "$tmp/specs"
for f in "$tmp"/specs/*.yaml; do
	if grep -q '^seed:' "$f"; then
		echo "regress.sh: $(basename "$f") sets seed: (regress.sh gives every spec SEED)" >&2
		exit 2
	fi
	sed -i "0,/^name:/s//seed: $seed\n&/" "$f"
done
specs=("$tmp"/specs/*.yaml)
rm -rf "$out/base" "$out/new" "$out/compare"
mkdir -p "$out"
t=$(date +%s)
# A run that fails is left to lab compare, which names it (exit 1) rather than passing without it.
nice -n 10 "$base_lab" run "${specs[@]}" -o "$out/base" --seeds "$seeds" -j "$jobs" -q || echo "regress.sh: BASE: some runs failed (lab compare names them)" >&2
nice -n 10 "$tmp/lab" run "${specs[@]}" -o "$out/new" --seeds "$seeds" -j "$jobs" -q || echo "regress.sh: NEW: some runs failed (lab compare names them)" >&2
echo "regress.sh: ${#specs[@]} specs x $seeds seeds (from $seed) on each build in $(( $(date +%s) - t )) s"

status=0
"$tmp/lab" compare "$out/base" "$out/new" -o "$out/compare" > "$out/compare.txt" || status=$?
# The table is long (every metric of every point): print the verdicts that matter, keep the rest.
# (the pairing header, the notes under the table, and the summary from "N metrics:" on).
grep -E '^(paired across|note:)' "$out/compare.txt" || true
sed -n '/^[0-9]* metrics:/,$p' "$out/compare.txt"
echo "regress.sh: the full table is in $out/compare.txt, plots in $out/compare; $(( $(date +%s) - start )) s in all; exit $status"
exit "$status"
