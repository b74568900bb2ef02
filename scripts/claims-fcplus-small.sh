#!/usr/bin/env bash
# Regenerates the small FC+ analyses behind docs/claims.json (rows fcplus-1, 2, 4, 6.2, 10, 14.1, 14.2):
# lab analyze --json of lab/experiments/fcplus-deadlock/<ksp|dfksp-1l|dfksp-2l>.yaml at N = 16 (s = 6)
# and N = 24 (s = 10), and of FC's own routing on the same N = 24 fabric (FC cannot wire N = 16, s = 6),
# topology seeds 1-3:
#   OUT/fcplus-small/<scheme>-n<N>-t<seed>.json                paths, classes, CBD cycles (--tm none)
#   OUT/fcplus-small-lp/<scheme>-n<N>-<tm>-t<seed>.json        the LP (--lp-only) under uniform, random, near-worst
# Usage: scripts/claims-fcplus-small.sh [OUT] (default docs/claims-data; bin/lab must be built).
# A few seconds of CPU in all; then bin/lab claims OUT refreshes the rows.
set -euo pipefail
out=${1:-docs/claims-data}
lab=${LAB:-bin/lab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/fcplus-small" "$out/fcplus-small-lp"

# spec SCHEME N SEED: the spec at that switch count and topology seed, on stdout.
spec() {
	local s=6
	[ "$2" = 24 ] && s=10
	if [ "$1" = fc ]; then
		printf 'name: fc\nseed: 1\ntopology: {family: fc, switches: %s, s: %s, hosts_per_switch: 2, seed: %s, link: {rate: 100Gbps, delay: 1us}}\nrouting: {algorithm: fc}\nduration: 1ms\n' "$2" "$s" "$3"
		return
	fi
	# The shipped specs are N = 16, s = 6, seed 1: refuse silently wrong output if that line changes.
	grep -q 'switches: 16, s: 6, hosts_per_switch: 2, seed: 1,' "lab/experiments/fcplus-deadlock/$1.yaml" ||
		{ echo "lab/experiments/fcplus-deadlock/$1.yaml: topology line not as expected" >&2; exit 1; }
	sed -e "s/switches: 16, s: 6, hosts_per_switch: 2, seed: 1,/switches: $2, s: $s, hosts_per_switch: 2, seed: $3,/" \
		"lab/experiments/fcplus-deadlock/$1.yaml"
}

for n in 16 24; do
	for scheme in ksp dfksp-1l dfksp-2l fc; do
		[ "$scheme" = fc ] && [ "$n" = 16 ] && continue
		for t in 1 2 3; do
			f="$tmp/$scheme-n$n-t$t.yaml"
			spec "$scheme" "$n" "$t" >"$f"
			"$lab" analyze --json --tm none "$f" >"$out/fcplus-small/$scheme-n$n-t$t.json"
			for tm in uniform random near-worst; do
				"$lab" analyze --json --lp-only --tm "$tm" "$f" >"$out/fcplus-small-lp/$scheme-n$n-$tm-t$t.json"
			done
		done
	done
done
