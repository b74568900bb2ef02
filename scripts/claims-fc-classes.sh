#!/usr/bin/env bash
# Regenerates the Fibre Channel topology-class analyses behind docs/claims.json (rows fibre-channel-2.2,
# 7.1-7.5): lab analyze --json (uniform all-to-all LP, paths, CBD cycles) of, per topology seed 1-5,
#   OUT/fc-classes/tree-t<seed>.json      lab/experiments/fibre-channel-classes/tree.yaml (randomtree)
#   OUT/fc-classes/chordal-t<seed>.json   lab/experiments/fibre-channel-classes/chordal.yaml (chordal)
#   OUT/fc-classes/<free|updown|smart>-t<seed>.json
#                                         lab/experiments/fibre-channel-efficiency/<routing>.yaml (jellyfish)
# all at S = 12 switches of 16 ports, N = 100 terminals, with topology.seed = <seed>.
# Usage: scripts/claims-fc-classes.sh [OUT] (default docs/claims-data; bin/lab must be built).
# About two minutes of CPU (smart routing's path search is most of it); then bin/lab claims OUT
# refreshes the rows.
set -euo pipefail
out=${1:-docs/claims-data}
lab=${LAB:-bin/lab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/fc-classes"

# spec FILE SEED: the spec with that topology seed, on stdout. Every shipped spec here ends its
# topology line with "seed: 1}": refuse silently wrong output if that changes.
spec() {
	[ "$(grep -c '^topology: {.*, seed: 1}$' "$1")" = 1 ] ||
		{ echo "$1: topology line not as expected (one line ending in 'seed: 1}')" >&2; exit 1; }
	sed -e "/^topology: /s/seed: 1}\$/seed: $2}/" "$1"
}

for t in 1 2 3 4 5; do
	for f in lab/experiments/fibre-channel-classes/{tree,chordal}.yaml lab/experiments/fibre-channel-efficiency/{free,updown,smart}.yaml; do
		name=$(basename "$f" .yaml)
		spec "$f" "$t" >"$tmp/$name.yaml"
		"$lab" analyze --json "$tmp/$name.yaml" >"$out/fc-classes/$name-t$t.json"
	done
done
