#!/usr/bin/env bash
# Forecast against measured pace of the netns agent on the three fabrics whose pace the one-number
# calibration forecast 2-3.3x too fast: NDC(8,1), Dragonfly(2,4,2) and fat-tree k=8, one agent,
# WebSearch 0.5 for 2 ms at D=1000 (lab bench's defaults). Calibrates first, in the same window (a
# fresh cache unless FABRICLAB_CALIBRATION names one), so forecast and measurement see the same
# machine; prints the load average before and after, and per run. Needs root; about 4 minutes on the
# 2-core VM. The forecast holds when every "forecast/measured pace" line reads 0.70-1.30.
#   sudo bash scripts/forecast-check.sh [REPEAT]    (LAB=path/to/lab to use another build)
set -euo pipefail
cd "$(dirname "$0")/.."
lab="${LAB:-bin/lab}"
repeat="${1:-1}"
if [ -z "${FABRICLAB_CALIBRATION:-}" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	export FABRICLAB_CALIBRATION="$dir/agent-calibration.json"
fi
[ -x "$lab" ] || go build -o "$lab" ./cmd/lab
echo "$(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?'): load average $(cut -d' ' -f1-3 /proc/loadavg)"
for fabric in "ndc n=8 k=1" "dragonfly p=2 a=4 h=2" "fattree k=8"; do
	# shellcheck disable=SC2086 # the fabric's words are separate arguments
	"$lab" bench --forecast --fabric $fabric --repeat "$repeat" --name fcheck
done
echo "$(date -u +%FT%TZ): load average $(cut -d' ' -f1-3 /proc/loadavg)"
