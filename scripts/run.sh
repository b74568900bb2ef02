#!/usr/bin/env bash
# The main job: PortFC (ToN 2026) §V-B on the virtual backend at the paper's parameters — NDC(4,1),
# 100 Gb/s, 1 us links, 5 MB buffers, X_OFF/X_ON 6/4 BDP, DCQCN — with WebSearch Poisson traffic plus
# repeated 8->1 x 1 MB incasts, comparing PortFC, PFC*, IRN, go-back-N and plain PFC. Prints the
# comparison table (measured next to the paper's numbers) and writes plots to
# results/portfc-ndc41-websearch/. About a minute of runs on 2 cores; see
# lab/experiments/portfc-ndc41-websearch/README.md for the choices the paper leaves open.
#
#   sudo bash scripts/run.sh            # provision, build, run, report
#   SKIP_PROVISION=1 bash scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

EXP=lab/experiments/portfc-ndc41-websearch
OUT=results/portfc-ndc41-websearch
# Order matters only for the wall clock: the slowest (go-back-N) starts first.
SCHEMES=(gbn pfcstar irn portfc pfc)

if [ -z "${SKIP_PROVISION:-}" ]; then
	bash scripts/provision.sh
fi
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
go build -o bin/lab ./cmd/lab

mkdir -p "$OUT"
jobs=$(nproc 2>/dev/null || echo 2)
echo "run.sh: ${#SCHEMES[@]} runs, $jobs at a time, into $OUT"
start=$(date +%s)
# Runs are independent and deterministic (seed 1), so they run side by side; each writes its own run
# directory and queue samples every 10 us for the queue-depth plot.
printf '%s\n' "${SCHEMES[@]}" | xargs -P "$jobs" -I{} sh -c \
	'bin/lab run "$0/{}.yaml" -o "$1/{}" -q --sample-every 10us && echo "run.sh: {} done"' "$EXP" "$OUT"
echo "run.sh: runs took $(( $(date +%s) - start )) s"

dirs=()
for s in portfc pfcstar irn gbn pfc; do dirs+=("$OUT/$s"); done
bin/lab report "${dirs[@]}" -o "$OUT"
