#!/usr/bin/env bash
# The main job: PortFC (ToN 2026) §V-B on the virtual backend at the paper's parameters — NDC(4,1),
# 100 Gb/s, 1 us links, 5 MB buffers, X_OFF/X_ON 6/4 BDP, DCQCN (conweave profile, docs/profiles.md) —
# with WebSearch Poisson traffic plus repeated 8->1 x 1 MB incasts, comparing PortFC, PFC*, IRN,
# go-back-N and plain PFC over SEEDS seeds (default 5). Prints every metric as mean ±95% CI and the
# paper's numbers next to the measured ones (mean and CI over seeds, paired by seed), and writes the
# aggregate and plots to results/portfc-ndc41-websearch/. See docs/experiments.md (The main job) for the time it takes and
# lab/experiments/portfc-ndc41-websearch/README.md for the choices the paper leaves open;
# docs/portfc.md has the claim-by-claim table.
#
#   sudo bash scripts/run.sh            # provision, build, run, report
#   SKIP_PROVISION=1 SEEDS=5 bash scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."

EXP=lab/experiments/portfc-ndc41-websearch
OUT=results/portfc-ndc41-websearch
SEEDS=${SEEDS:-5}
# Order matters only for the wall clock: the slowest (go-back-N) starts first.
SCHEMES=(gbn pfcstar irn portfc pfc)

if [ -z "${SKIP_PROVISION:-}" ]; then
	bash scripts/provision.sh
fi
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
go build -o bin/lab ./cmd/lab

specs=()
for s in "${SCHEMES[@]}"; do specs+=("$EXP/$s.yaml"); done
profile=$(sed -n 's/.*profile: \([a-z0-9]*\).*/\1/p' "$EXP/portfc.yaml" | head -1)
jobs=$(nproc 2>/dev/null || echo 2)
echo "run.sh: ${#SCHEMES[@]} schemes x $SEEDS seeds, $jobs at a time, host.profile $profile (docs/profiles.md), into $OUT"
start=$(date +%s)
rm -rf "$OUT"
bin/lab run "${specs[@]}" -o "$OUT" --seeds "$SEEDS" -j "$jobs" -q
echo "run.sh: runs took $(( $(date +%s) - start )) s"
# --strict: a zero-tolerance claim (lossless, retransmission-free, deadlock-free: expect: ... = 0) holds
# only if every seed counts 0, and the job fails when one does not.
status=0
bin/lab report "$OUT" -o "$OUT" --strict || status=$?
echo "run.sh: profile $profile; $SEEDS seeds; paper numbers and verdicts per claim in docs/portfc.md"
if [ "$status" -ne 0 ]; then
	echo "run.sh: FAILED: a lossless, retransmission-free or deadlock-free claim is broken (above)" >&2
fi
exit "$status"
