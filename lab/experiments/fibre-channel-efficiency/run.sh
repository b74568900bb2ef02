#!/usr/bin/env bash
# Efficiency of up*/down* and smart routing against the unrestricted LP over random 12-switch fabrics
# (Fibre Channel paper Fig. 9, S = 12: mean up*/down* 79.7%, smart 93.5%). Usage: run.sh [SEEDS [FIRST]]
set -euo pipefail
cd "$(dirname "$0")"
lab=${LAB:-../../../bin/lab}
seeds=${1:-10}
first=${2:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "%-5s %-9s %-9s %-9s %-8s %-8s\n" seed free updown smart eff_ud eff_smart
for s in $(seq "$first" $((first + seeds - 1))); do
  declare -A g
  for a in free updown smart; do
    sed "s/seed: 1}/seed: $s}/" $a.yaml > "$tmp/$a.yaml"
    g[$a]=$("$lab" analyze --lp-only --json "$tmp/$a.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["lp_throughput"])')
  done
  python3 -c "f,u,m=${g[free]},${g[updown]},${g[smart]}; print('%-5d %-9.4f %-9.4f %-9.4f %-8.3f %-8.3f' % ($s,f,u,m,u/f,m/f))"
done
