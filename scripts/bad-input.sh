#!/usr/bin/env bash
# Feeds issue 12's bad inputs to bin/lab (or the binary given) and prints, per input, the wall time,
# the exit status and the first line of output: docs/bad-input.md's "after" column comes from this.
# Each run is capped at 20 s and 4 GB of address space, so an old binary that hangs or grows without
# bound shows as "timeout" or an allocation failure instead of taking the machine.
# Usage: bash scripts/bad-input.sh [LAB-BINARY]
set -uo pipefail
cd "$(dirname "$0")/.."
labbin="${1:-bin/lab}"
if [ "$labbin" = bin/lab ]; then
	go build -o bin/lab ./cmd/lab || exit 1
fi
labbin=$(realpath "$labbin")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

spec() { # name, extra YAML (the base is a small NDC(4,1) lab)
	printf 'name: %s\ntopology: {family: ndc, n: 4, k: 1}\nduration: 20ms\n%s\n' "$1" "$2" >"$dir/$1.yaml"
	# A case may give its own topology or duration: keep the last of each.
	python3 - "$dir/$1.yaml" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().splitlines()
last = {}
for i, l in enumerate(lines):
    k = l.split(":", 1)[0]
    if k in ("topology", "duration"):
        last[k] = i
out = [l for i, l in enumerate(lines) if l.split(":", 1)[0] not in last or last[l.split(":", 1)[0]] == i]
open(p, "w").write("\n".join(out) + "\n")
PY
}

printf '0 0\n10000 50\n+Inf 100\n' >"$dir/inf.cdf"
printf '2\n0 1 3 100 10000 2.000000000\n2 3 3 100 10000 2.000010000\n' >"$dir/hpcc2s.txt"
printf '1\n0 1 3 100 10000 1e12\n' >"$dir/late.txt"

spec size 'workload: [{kind: flows, list: [{src: h0, dst: h1, size: 1e30}]}]'
spec duration 'duration: 1e30s'
spec dilation $'backend: netns\ndilation: .inf'
spec alpha 'switch: {flow_control: pfc, alpha: .inf}'
spec dcqcn 'host: {cc: dcqcn, dcqcn: {rate_ai: 1e400}}'
spec poisson 'workload: [{kind: poisson, cdf: websearch, load: 1e-12}]'
spec tracestart "workload: [{kind: trace, format: hpcc, path: $dir/late.txt}]"
spec cdfinf "workload: [{kind: poisson, cdf: 'file:$dir/inf.cdf', load: 0.3}]"
spec incast 'workload: [{kind: incast, senders: 1, size: 1KB, count: 100000000, interval: 1ps}]'
spec moe 'workload: [{kind: moe, experts: 16, top_k: 2, tokens: 100000000, token_size: 4KB}]'
spec moeok 'workload: [{kind: moe, experts: 8, top_k: 2, tokens: 256, token_size: 4KB, zipf: 1.0, layers: 2}]'
spec ndc104 'topology: {family: ndc, n: 10, k: 4}'
spec hpcc2s "workload: [{kind: trace, format: hpcc, path: $dir/hpcc2s.txt}]"
spec hpcc2srebase "workload: [{kind: trace, format: hpcc, path: $dir/hpcc2s.txt, rebase: true}]"
spec buffer $'switch: {flow_control: pfc, buffer: 60000}\nworkload: [{kind: incast, senders: 3, size: 64KB}]'
spec headroom $'switch: {flow_control: pfc, buffer: 1MB, headroom: 10KB}\nworkload: [{kind: incast, senders: 3, size: 64KB}]'
spec xoff $'switch: {flow_control: pfc, buffer: 1MB, xoff: 990KB, xon: 500KB}\nworkload: [{kind: incast, senders: 3, size: 64KB}]'

run() { # label, command...
	local label=$1
	shift
	local start end out rc
	start=$(date +%s%N)
	out=$( (ulimit -v 4000000; timeout 20 "$@") 2>&1)
	rc=$?
	end=$(date +%s%N)
	[ $rc -eq 124 ] && out="timeout after 20 s"
	printf '%-14s %7.2f s  exit %-3d %s\n' "$label" "$(echo "($end - $start) / 1000000000" | bc -l)" "$rc" \
		"$(echo "$out" | grep -v '^\s*$' | head -1 | cut -c1-220)"
}

for s in size duration dilation alpha dcqcn poisson tracestart cdfinf incast moe moeok ndc104 hpcc2s hpcc2srebase buffer headroom xoff; do
	run "$s" "$labbin" run "$dir/$s.yaml" -o "$dir/out-$s"
done
run topo-rate-nan "$labbin" topo ndc n=2 k=1 rate=nan --json
run topo-ndc317 "$labbin" topo ndc n=317 k=1
run topo-devzero "$labbin" topo file path=/dev/zero

# --- begin: sweeps, sampling and --set (issue 23, defects 1, 2 and 7) ---
# runk is run with a SIGKILL 5 s after the timeout's SIGTERM: a lab that ignores SIGTERM (the planning
# of an unbounded sweep did) must not hang the script. runterm starts a command, sends it SIGTERM after
# 2 s and reports how long it took to exit after the signal.
runk() {
	local label=$1
	shift
	local start end out rc
	start=$(date +%s%N)
	out=$( (ulimit -v 4000000; timeout -k 5 20 "$@") 2>&1)
	rc=$?
	end=$(date +%s%N)
	[ $rc -eq 124 ] && out="timeout after 20 s"
	[ $rc -eq 137 ] && out="timeout after 20 s; still running 5 s after SIGTERM (killed)"
	printf '%-14s %7.2f s  exit %-3d %s\n' "$label" "$(echo "($end - $start) / 1000000000" | bc -l)" "$rc" \
		"$(echo "$out" | grep -v '^\s*$' | head -1 | cut -c1-220)"
}
runterm() {
	local label=$1
	shift
	local pid sig end rc
	(ulimit -v 4000000; exec "$@") >"$dir/$label.out" 2>&1 &
	pid=$!
	sleep 2
	kill -TERM $pid
	sig=$(date +%s%N)
	for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	if kill -0 $pid 2>/dev/null; then
		kill -KILL $pid
		wait $pid 2>/dev/null
		printf '%-14s %7s    exit %-3s %s\n' "$label" "-" "-" "still running 10 s after SIGTERM (killed)"
		return
	fi
	wait $pid
	rc=$?
	end=$(date +%s%N)
	printf '%-14s %7.2f s  exit %-3d %s\n' "$label" "$(echo "($end - $sig) / 1000000000" | bc -l)" "$rc" \
		"after SIGTERM: $(grep -v '^\s*$' "$dir/$label.out" | head -1 | cut -c1-200)"
}
spec sweep $'duration: 2ms\nworkload: [{kind: flows, list: [{src: h0, dst: h1, size: 10KB}]}]'
sizes=$(seq -s, -f '%gKB' 1 1000)
runk sweep-1e6 "$labbin" run "$dir/sweep.yaml" -o "$dir/out-sweep1" --set "workload.0.list.0.size=$sizes" --seeds 1000
runk seeds-1e9 "$labbin" run "$dir/sweep.yaml" -o "$dir/out-sweep2" --seeds 1000000000
runterm sweep-sigterm "$labbin" run "$dir/sweep.yaml" -o "$dir/out-sweep3" --set "workload.0.list.0.size=$sizes" --seeds 1000 --budget runs=1e7
runk sample-1ps "$labbin" run "$dir/sweep.yaml" -o "$dir/out-sweep4" --sample-every 1ps
runk set-twice "$labbin" run "$dir/sweep.yaml" -o "$dir/out-sweep5" --set duration=1ms,2ms --set duration=3ms
# --- end: sweeps, sampling and --set ---
