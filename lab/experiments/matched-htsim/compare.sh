#!/usr/bin/env bash
# Reruns the "Performance" comparison of docs/performance.md: each matched scenario on fabriclab's virtual backend
# and on htsim (built outside the repo, README.md here), from the same flow.cm, alternating, and prints
# per scenario the agreement (last completion, average FCT) and the median CPU (user+sys) and peak RSS
# of both over REPS alternating pairs, with ratios fabriclab/htsim.
# Usage: bash lab/experiments/matched-htsim/compare.sh HTSIM_ROCE [REPS] [SCENARIO...]
#   LIKE_FOR_LIKE=1 runs fabriclab with --meters=false --check-frames=false (htsim does neither).
#   WORKERS=N runs fabriclab with --workers N (default: lab run's own choice, which it prints without -q).
#   ACKS=data runs fabriclab with switch.acks: data (ACKs FIFO with data at switches, as htsim's; README.md here).
#   HTSIM_Q sets htsim's -q (default 1000000: quiet; the table in docs/performance.md used 500, see README.md here).
set -euo pipefail
htsim=$(realpath "${1:?usage: compare.sh HTSIM_ROCE [REPS] [SCENARIO...]}")
cd "$(dirname "$0")/../../.."
reps=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(incast-k4 incast-k8 incast-k12 perm-k4 perm-k8 perm-k12 perm-k16)
[ -x "$htsim" ] || { echo "compare.sh: $htsim is not an executable (build htsim_roce: README.md here)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "compare.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
extra=()
[ "${LIKE_FOR_LIKE:-0}" = 1 ] && extra=(--meters=false --check-frames=false)
[ -n "${WORKERS:-}" ] && extra+=(--workers "$WORKERS")
q=${HTSIM_Q:-1000000}

go build -o bin/lab ./cmd/lab
# CPU seconds depend on what else the machine runs: the load average goes with them.
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for s in "${scenarios[@]}"; do
	spec=lab/experiments/matched-htsim/$s.yaml
	[ -f "$spec" ] || { echo "compare.sh: no scenario $spec" >&2; exit 2; }
	if [ -n "${ACKS:-}" ]; then
		# A copy of the spec, not --set: a swept field would put the run one directory deeper.
		sed "s/switch: {flow_control: pfc}/switch: {flow_control: pfc, acks: $ACKS}/" "$spec" >"$work/$s.yaml"
		grep -q "acks: $ACKS" "$work/$s.yaml" || { echo "compare.sh: could not set acks in $spec" >&2; exit 2; }
		spec=$work/$s.yaml
	fi
	# k from the spec: k^3/4 hosts, what htsim's -nodes takes.
	k=$(sed -n 's/.*family: fattree, k: \([0-9]*\).*/\1/p' "$spec")
	nodes=$(( k * k * k / 4 ))
	for i in $(seq 1 "$reps"); do
		rm -rf "$work/$s"
		/usr/bin/time -f "%U %S %M" -o "$work/lab-$s-$i.time" bin/lab run "$spec" -o "$work/$s" -q "${extra[@]}" >/dev/null
		# htsim writes logout.dat and idmap.txt into its working directory: run it in the scratch one.
		(cd "$work" && /usr/bin/time -f "%U %S %M" -o "htsim-$s-$i.time" "$htsim" -tm "$s/flow.cm" -nodes "$nodes" \
			-strat ecmp_host -paths 64 -q "$q" -pfc_thresholds 47 70 -hop_latency 1 -linkspeed 100000 \
			-mtu 1000 -end 1000000 >"htsim-$s-$i.out")
	done
	cp "$work/$s/summary.json" "$work/summary-$s.json"
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$reps" "${scenarios[@]}" <<'PY'
import json, statistics, sys
work, reps, scen = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def cpu_mb(prefix, s):
    cpu, mb = [], []
    for i in range(1, reps + 1):
        u, sy, m = open(f"{work}/{prefix}-{s}-{i}.time").read().split()[-3:]
        cpu.append(float(u) + float(sy)); mb.append(int(m) / 1024)
    return statistics.median(cpu), statistics.median(mb)
print("scenario     | htsim last us | lab last us | htsim avg us | lab avg us | htsim CPU s | lab CPU s | ratio | htsim MB | lab MB | ratio")
for s in scen:
    fin = [float(l.split()[5]) for l in open(f"{work}/htsim-{s}-{reps}.out") if " finished at " in l]
    f = json.load(open(f"{work}/summary-{s}.json"))["fct_s"]
    hc, hm = cpu_mb("htsim", s); lc, lm = cpu_mb("lab", s)
    print(f"{s:12} | {max(fin):13.3f} | {f['max']*1e6:11.3f} | {sum(fin)/len(fin):12.1f} | {f['avg']*1e6:10.1f} | "
          f"{hc:11.2f} | {lc:9.2f} | {lc/hc if hc else float('nan'):5.2f} | {hm:8.0f} | {lm:6.0f} | {lm/hm:5.2f}")
PY
