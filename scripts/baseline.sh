#!/usr/bin/env bash
# Builds the lab command of an earlier commit outside this tree, for `lab bench --baseline`, and prints
# the binary's path. Usage: bash scripts/baseline.sh [REV] (default 26274ad, the agent issue 26 measures
# against). The source comes from `git archive` (the checkout and its worktrees are left alone); the
# binary is cached under ${FABRICLAB_BASELINE_DIR:-/tmp/fabriclab-baseline}/REV/lab.
#   sudo bin/lab bench --fabric ndc n=4 k=1 --baseline "$(bash scripts/baseline.sh)" --repeat 3
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${1:-26274ad}"
full=$(git rev-parse --verify --quiet "$rev^{commit}") || { echo "baseline.sh: $rev is not a commit of this repository" >&2; exit 2; }
dir="${FABRICLAB_BASELINE_DIR:-/tmp/fabriclab-baseline}/${full:0:12}"
if [ ! -x "$dir/lab" ]; then
	rm -rf "$dir/src" && mkdir -p "$dir/src"
	git archive "$full" | tar -x -C "$dir/src"
	export PATH="$PATH:/usr/local/go/bin"
	(cd "$dir/src" && go build -o "$dir/lab" ./cmd/lab) >&2
	rm -rf "$dir/src"
fi
echo "$dir/lab"
