#!/usr/bin/env bash
# Regenerates the Fibre Channel efficiency analyses behind docs/claims.json rows fibre-channel-9.x (the
# paper's §3.4 over all its topologies of at most 12 switches): lab analyze --json (uniform all-to-all
# LP) of lab/experiments/fibre-channel-efficiency/<free|updown|smart>.yaml on random jellyfish fabrics
# of 16-port switches, into
#   OUT/fc-eff/<routing>-s<S>-t<seed>.json
# for S = 8 (degree 6, 72 terminals) and S = 10 (degree 7, 90 terminals), topology seeds 1-4; the
# S = 12 files (degree 7, 100 terminals, seeds 1-5) are scripts/claims-fc-classes.sh's, copied.
# Usage: scripts/claims-fc-efficiency.sh [OUT] (default docs/claims-data; bin/lab must be built).
set -euo pipefail
out=${1:-docs/claims-data}
lab=${LAB:-bin/lab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/fc-eff"
for r in free updown smart; do
	for t in 1 2 3 4 5; do
		cp "$out/fc-classes/$r-t$t.json" "$out/fc-eff/$r-s12-t$t.json"
	done
done
for sd in 8:6:72 10:7:90; do
	IFS=: read -r s d n <<<"$sd"
	for t in 1 2 3 4; do
		for r in free updown smart; do
			f=lab/experiments/fibre-channel-efficiency/$r.yaml
			[ "$(grep -c '^topology: {family: jellyfish, switches: 12, degree: 7, hosts: 100, seed: 1}$' "$f")" = 1 ] ||
				{ echo "$f: topology line not as expected" >&2; exit 1; }
			sed -e "/^topology: /s/.*/topology: {family: jellyfish, switches: $s, degree: $d, hosts: $n, seed: $t}/" "$f" >"$tmp/$r.yaml"
			"$lab" analyze --json --lp-only "$tmp/$r.yaml" >"$tmp/out.json"
			mv "$tmp/out.json" "$out/fc-eff/$r-s$s-t$t.json"
		done
	done
done
