#!/usr/bin/env bash
# Best of N random topologies per Fibre Channel topology class at S = 12 switches of 16 ports, N = 100
# terminals (rows fibre-channel-7.1-7.4): the paper's values are the best topology its search found,
# ours (scripts/claims-fc-classes.sh) random members of each class over topology seeds 1-5. This draws
# topology seeds 1..COUNT of each class's spec, runs lab analyze --json on each (uniform all-to-all LP),
# and keeps the best by the paper's metric (the LP throughput), as a search by random sampling.
#   OUT/fc-best/<class>.tsv   seed and lp_throughput of every draw
#   OUT/fc-best/summary.tsv   per class: draws, best, its seed, median, published value
# Usage: scripts/claims-fc-best.sh [COUNT [COUNT_JF [OUT]]]   (COUNT draws of tree and chordal, default
# 200; COUNT_JF of the jellyfish classes updown and free, default COUNT; OUT default docs/claims-data;
# LAB: the lab binary, default bin/lab). A tree or chordal draw takes a fraction of a second, a free or
# updown one (jellyfish; up*/down* tries 10 roots) about two seconds of CPU.
set -euo pipefail
count=${1:-200}
count_jf=${2:-$count}
out=${3:-docs/claims-data}
lab=${LAB:-bin/lab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/fc-best"

# The class, its spec and the paper's value (Figs. 6 and 8).
classes="tree:lab/experiments/fibre-channel-classes/tree.yaml:0.25:$count
chordal:lab/experiments/fibre-channel-classes/chordal.yaml:0.57:$count
updown:lab/experiments/fibre-channel-efficiency/updown.yaml:0.67:$count_jf
free:lab/experiments/fibre-channel-efficiency/free.yaml:0.77:$count_jf"

printf 'class\tdraws\tbest\tbest_seed\tmedian\tpublished\n' >"$tmp/summary.tsv"
while IFS=: read -r name f pub n; do
	[ "$(grep -c '^topology: {.*, seed: 1}$' "$f")" = 1 ] ||
		{ echo "$f: topology line not as expected (one line ending in 'seed: 1}')" >&2; exit 1; }
	printf 'seed\tlp_throughput\n' >"$tmp/$name.tsv"
	for ((t = 1; t <= n; t++)); do
		sed -e "/^topology: /s/seed: 1}\$/seed: $t}/" "$f" >"$tmp/spec.yaml"
		v=$("$lab" analyze --json "$tmp/spec.yaml" | grep -o '"lp_throughput": *[0-9.eE+-]*' | sed 's/.*: *//')
		[ -n "$v" ] || { echo "$f seed $t: no lp_throughput" >&2; exit 1; }
		printf '%s\t%s\n' "$t" "$v" >>"$tmp/$name.tsv"
	done
	python3 - "$tmp/$name.tsv" "$name" "$pub" >>"$tmp/summary.tsv" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n')[1:] if l]
v = [(float(x), int(s)) for s, x in rows]
best = max(v)
print(f"{sys.argv[2]}\t{len(v)}\t{best[0]:.4f}\t{best[1]}\t{statistics.median(x for x, _ in v):.4f}\t{sys.argv[3]}")
PY
	cp "$tmp/$name.tsv" "$out/fc-best/$name.tsv"
done <<<"$classes"
cp "$tmp/summary.tsv" "$out/fc-best/summary.tsv"
column -t "$out/fc-best/summary.tsv"
