#!/usr/bin/env bash
# Re-measures the rows of docs/claims.json on the current build, one command group at a time, and
# records in each row the build (`commit`: the short hash of HEAD, which bin/lab is built from here)
# and what ran it (`provenance`). Rows are refreshed by `lab claims --rebuild --rows ...`: a row at
# another commit is replaced, one on more samples than the re-run is refused (lab claims' own rule),
# and then the whole group fails, naming the rows.
#
# Usage: scripts/claims-rerun.sh [-n] GROUP...      (-n: print what each group runs, run nothing)
#        scripts/claims-rerun.sh -l                 (the groups, cheapest first)
# Environment: OUT (analyze outputs, default docs/claims-data), RUNS (run trees, default a temporary
# directory under $TMPDIR), DEADLINE (HH:MM UTC, default 01:10): an experiment group first times its first
# and last run, and is skipped, with its estimated cost, when the rest would not end by then. NICE
# (default 19) is the niceness every measurement runs at.
# Each group prints its wall and CPU time and the load average; skipped groups are appended to
# $RUNS/skipped.txt.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out=${OUT:-docs/claims-data}
runs=${RUNS:-${TMPDIR:-/tmp}/claims-rerun}
nice=${NICE:-19}
dry=0

# The rows must name the build that measured them: refuse a modified tree (outside docs/).
if [ -n "$(git status --porcelain -- . ':!docs' ':!bin')" ]; then
	echo "claims-rerun: the tree has changes outside docs/: commit them first (rows would name a build that is not HEAD)" >&2
	exit 1
fi
commit=$(git rev-parse --short=7 HEAD)
# Its own binary, so that a bin/lab rebuilt meanwhile (another change being tried) cannot mix builds.
lab=$runs/lab-$commit

groups_cheap="fc-regular fcplus-small fcplus-table1 fcplus-k2 fcplus-lp-n100 fc fcplus-lp-t8 fcplus-lp-n400 fcplus-paths"
groups_exp="portfc-rail-moe expander-hybrid-steps expander-uniform dragonfly-adv1-64 dragonfly-scale-d1 dragonfly-scale-d23 expander-cheaper-ecmp06 expander-cheaper-vlb expander-cheaper-ecmp08 dragonfly-t1-16 dragonfly-t1-64 dragonfly-scale-d2-heavy dragonfly-scale-d3-heavy dragonfly-t1-small dragonfly-unf-512 dragonfly-adv2-d1 dragonfly-adv1 dragonfly-adv1-shortest dragonfly-adv2-256 expander-mid19 portfc-ndc81-gbn dragonfly-t1 dragonfly-adv1-1024 dragonfly-unf-2048 portfc-ndc81 expander-low expander-torratio expander-projector portfc-ndc41-hadoop portfc-ndc41-storage"
# Rows without a source (their numbers come from go tests or from commands whose output lab claims does not
# read): no group can refresh them; their commands are in the rows, and a re-run is compared by hand.
groups_manual="expander-10.* expander-11 expander-12 expander-15.4 (go test ./nodes, ./lab/bound/dynamic; lab dynamic, lab topo), dragonfly-3 (go test ./lab/deadlock and two UNF runs), fibre-channel-2.1 (go test ./suites/routing), fcplus-3 (lab report of fcplus-deadlock), fcplus-13.* and expander-9.* (not judged)"
groups_never="fcplus-t8-ur (one UR LP at N = 120 with 32 paths per pair ran 17 min without finishing)"

run() {
	echo "+ nice -n $nice $*" >&2
	[ "$dry" = 1 ] || nice -n "$nice" "$@"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }

# claims GROUP ROWS DIR...: refresh ROWS (comma list of patterns) from DIR on this build.
claims() {
	local g=$1 rows=$2
	shift 2
	# One writer of docs/claims.json at a time: drivers of other groups may run beside this one.
	mkdir -p "$runs"
	run flock "$runs/claims.lock" "$lab" claims "$@" --rows "$rows" --rebuild --commit "$commit" \
		--provenance "re-run $(date -u +%F) at $commit by scripts/claims-rerun.sh $g (virtual backend, nice $nice, load $(load))"
}

# spec FILE SEED [SED...]: FILE with its topology seed (the line's "seed: 1") set, and any further sed
# expressions applied, on stdout. A spec whose topology line has no "seed: 1" is refused.
spec() {
	local f=$1 t=$2
	shift 2
	grep -q '^topology: {.*seed: 1[,}]' "$f" || { echo "$f: no 'seed: 1' on its topology line" >&2; exit 1; }
	sed -e "/^topology: /s/seed: 1\([,}]\)/seed: $t\1/" "$@" "$f"
}

# analyze OUTFILE SPECFILE FLAGS...: lab analyze --json into OUTFILE (written only when it succeeds).
analyze() {
	local o=$1 s=$2
	shift 2
	if [ "$dry" = 1 ]; then
		run "$lab" analyze --json "$@" "$s"
		return
	fi
	run "$lab" analyze --json "$@" "$s" >"$o.tmp"
	mv "$o.tmp" "$o"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

g_fc-regular() {
	mkdir -p "$out/fc-regular"
	local n a
	for na in "petersen-h130:petersen hosts_per_switch=13" "mesh2x5-h130:torus x=2 y=5 hosts_per_switch=13" \
		"mesh3x3-h100:torus x=3 y=3 hosts=100" "petersen-h100:petersen hosts_per_switch=10"; do
		n=${na%%:*} a=${na#*:}
		# shellcheck disable=SC2086 # the family and its parameters are separate words
		if [ "$dry" = 1 ]; then run "$lab" topo --json $a; else run "$lab" topo --json $a >"$out/fc-regular/$n.json"; fi
	done
	claims fc-regular 'fibre-channel-1.*' "$out"
}

g_fcplus-small() {
	run env LAB="$lab" scripts/claims-fcplus-small.sh "$out"
	claims fcplus-small 'fcplus-1,fcplus-2,fcplus-4,fcplus-6.2,fcplus-10,fcplus-14.*' "$out"
}

g_fc() {
	run env LAB="$lab" scripts/claims-fc-classes.sh "$out"
	run env LAB="$lab" scripts/claims-fc-efficiency.sh "$out"
	claims fc 'fibre-channel-2.2,fibre-channel-5.*,fibre-channel-7.*,fibre-channel-9.*' "$out"
}

# FC+ Table I: FC's up-down paths (N_P) at N = 52, 100, 200 (s = 18) and N = 100 at s = 22.
g_fcplus-table1() {
	mkdir -p "$out/fcplus-table1"
	local f=lab/experiments/fcplus-lp/fc-n100.yaml t n
	for t in 1 2 3; do
		for n in 52 100 200; do
			spec "$f" "$t" -e "/^topology: /s/switches: 100,/switches: $n,/" >"$tmp/fc-n$n.yaml"
			analyze "$out/fcplus-table1/fc-n$n-t$t.json" "$tmp/fc-n$n.yaml" --tm none --updown-paths all
		done
		spec "$f" "$t" -e "/^topology: /s/s: 18, hosts_per_switch: 14/s: 22, hosts_per_switch: 10/" >"$tmp/fc-s22.yaml"
		analyze "$out/fcplus-table1/fc-s22-n100-t$t.json" "$tmp/fc-s22.yaml" --tm none --updown-paths all
	done
	claims fcplus-table1 'fcplus-6.3,fcplus-6.4,fcplus-6.5,fcplus-17.*' "$out"
}

# FC+ Table II's K_2/K at N = 100 (the routing is not used: ksp with one path is the cheap one).
g_fcplus-k2() {
	mkdir -p "$out/fcplus-k2"
	local t
	for t in 1 2 3; do
		spec lab/experiments/fcplus-lp/fcplus-n100-1l.yaml "$t" -e 's/^routing: .*/routing: {algorithm: ksp, k: 1}/' >"$tmp/k2.yaml"
		analyze "$out/fcplus-k2/fcplus-n100-t$t.json" "$tmp/k2.yaml" --lp-only --tm none --k2 20 --tm-seed "$t"
	done
	claims fcplus-k2 'fcplus-15' "$out"
}

# FC+ vs FC at N = 100: FC's paths per pair and near-worst LP, FC+(1L-32)'s near-worst LP.
g_fcplus-lp-n100() {
	mkdir -p "$out/fcplus-lp-n100"
	local t
	for t in 1 2 3; do
		spec lab/experiments/fcplus-lp/fc-n100.yaml "$t" >"$tmp/fc.yaml"
		analyze "$out/fcplus-lp-n100/fc-n100-t$t.json" "$tmp/fc.yaml" --tm near-worst
		spec lab/experiments/fcplus-lp/fcplus-n100-1l.yaml "$t" >"$tmp/fcplus.yaml"
		analyze "$out/fcplus-lp-n100/fcplus-n100-1l-t$t.json" "$tmp/fcplus.yaml" --lp-only --tm near-worst
	done
	claims fcplus-lp-n100 'fcplus-6.1,fcplus-7.1' "$out"
}

# FC+ Table VIII near-worst LPs at N = 120, s = 22: FC and FC+(1L) over topology seeds 1-6, KSP-32 and
# FC+(2L) over 1-3.
g_fcplus-lp-t8() {
	mkdir -p "$out/fcplus-lp-t8"
	local s t
	for s in fc:6 fcplus-1l:6 ksp:3 fcplus-2l:3; do
		for t in $(seq 1 "${s#*:}"); do
			spec "lab/experiments/fcplus-lp/table8-${s%%:*}.yaml" "$t" >"$tmp/t8.yaml"
			analyze "$out/fcplus-lp-t8/table8-${s%%:*}-t$t.json" "$tmp/t8.yaml" --lp-only --tm near-worst
		done
	done
	claims fcplus-lp-t8 'fcplus-7.2,fcplus-8.1,fcplus-8.2,fcplus-8.3,fcplus-8.4,fcplus-8.5,fcplus-9.1,fcplus-9.2,fcplus-9.7' "$out"
}

# FC+(1L-32) at N = 400 over v = 3, 4, 6, 10 (near-worst LP), topology seeds 1-3.
g_fcplus-lp-n400() {
	mkdir -p "$out/fcplus-lp-n400"
	local v t
	for v in 3 4 6 10; do
		for t in 1 2 3; do
			spec lab/experiments/fcplus-lp/fcplus-n400-v4.yaml "$t" -e "/^topology: /s/v: 4,/v: $v,/" >"$tmp/n400.yaml"
			analyze "$out/fcplus-lp-n400/n400-v$v-t$t.json" "$tmp/n400.yaml" --lp-only --tm near-worst
		done
	done
	claims fcplus-lp-n400 'fcplus-11.*' "$out"
}

# FC+ Tables III and IV: up-down path counts of FC (k layers) and FC+ (v) at N = 400-1000, seeds 1-5.
g_fcplus-paths() {
	mkdir -p "$out/fcplus-paths"
	local n x t
	for n in 400 600 800 1000; do
		for t in 1 2 3 4 5; do
			for x in 4 6 8 10; do
				printf 'name: fc\nseed: 1\ntopology: {family: fc, switches: %s, s: 18, k: %s, hosts_per_switch: 1, seed: %s}\nrouting: {algorithm: ksp, k: 1}\nduration: 1ms\n' "$n" "$x" "$t" >"$tmp/p.yaml"
				analyze "$out/fcplus-paths/fc-n$n-k$x-t$t.json" "$tmp/p.yaml" --lp-only --tm none --updown-paths 4,6,all
			done
			for x in 3 4 6 10; do
				printf 'name: fcplus\nseed: 1\ntopology: {family: fcplus, switches: %s, s: 18, v: %s, hosts_per_switch: 1, seed: %s}\nrouting: {algorithm: ksp, k: 1}\nduration: 1ms\n' "$n" "$x" "$t" >"$tmp/p.yaml"
				analyze "$out/fcplus-paths/fcplus-n$n-v$x-t$t.json" "$tmp/p.yaml" --lp-only --tm none --updown-paths 4,6
			done
		done
	done
	claims fcplus-paths 'fcplus-16.*' "$out"
}

# exp GROUP ROWS LABRUNARGS...: a run tree of `lab run LABRUNARGS` under $runs/GROUP, run by run (--index),
# skipped with its estimate when the first and last runs say it would not end by $DEADLINE; then
# lab claims over it.
exp() {
	local g=$1 rows=$2
	shift 2
	tree "$g" "$rows" "$@" || return 0
	claims "$g" "$rows" "$runs/$g"
}

# exp_seeds GROUP ROWS FILE METRICS TREEROWS LABRUNARGS...: as exp, for rows read from a per-seed file:
# the tree's per-seed values of METRICS (comma list) are saved into $out/runs/FILE, then ROWS are
# refreshed from $out (and TREEROWS, if not empty, from the tree itself).
exp_seeds() {
	local g=$1 rows=$2 f=$3 m=$4 trows=$5
	shift 5
	tree "$g" "$rows${trows:+,$trows}" "$@" || return 0
	run "$lab" claims --save-seeds "$out/runs/$f" --seed-metric "$m" --commit "$commit" \
		--provenance "re-run $(date -u +%F) at $commit by scripts/claims-rerun.sh $g: bin/lab run $* (virtual backend, nice $nice, load $(load))" "$runs/$g"
	[ -z "$trows" ] || claims "$g" "$trows" "$runs/$g"
	claims "$g" "$rows" "$out"
}

# tree GROUP ROWS LABRUNARGS...: the run tree of exp, under $runs/GROUP; fails (status 1) when skipped.
tree() {
	local g=$1 rows=$2
	shift 2
	local tree=$runs/$g
	if [ "$dry" = 1 ]; then
		run "$lab" run "$@" -o "$tree"
		return
	fi
	mkdir -p "$runs"
	rm -rf "$tree"
	local n
	n=$("$lab" run "$@" -o "$tree" --list | wc -l)
	local t0 t1 first last est now end
	t0=$(date +%s)
	run "$lab" run "$@" -o "$tree" --index 0 >/dev/null
	t1=$(date +%s)
	first=$((t1 - t0))
	last=$first
	if [ "$n" -gt 1 ]; then
		run "$lab" run "$@" -o "$tree" --index $((n - 1)) >/dev/null
		last=$(($(date +%s) - t1))
	fi
	est=$(((first + last) * (n - 2) / 2))
	now=$(date +%s)
	end=$(date -u -d "${DEADLINE:-01:10}" +%s)
	[ "$end" -lt $((now - 43200)) ] && end=$((end + 86400))
	echo "$g: $n runs, first ${first}s, last ${last}s, about ${est}s more (load $(load))" >&2
	if [ $((now + est)) -gt "$end" ]; then
		echo "$g	rows $rows	$n runs, estimated $(((est + first + last) / 60)) min at load $(load): would not end by ${DEADLINE:-01:10}" | tee -a "$runs/skipped.txt" >&2
		return 1
	fi
	local i
	for ((i = 1; i < n - 1; i++)); do
		run "$lab" run "$@" -o "$tree" --index "$i" >/dev/null
	done
}

g_dragonfly-t1-small() { exp dragonfly-t1-small 'dragonfly-6.12,dragonfly-6.13' lab/experiments/dragonfly-table1/{pfc,lerp}.yaml --set workload.0.connections=8,32 --seeds 3 --meters=false; }
g_dragonfly-unf-512() { exp dragonfly-unf-512 'dragonfly-11.1' lab/experiments/dragonfly-d1/unf-{lerp,benchmark}.yaml --set workload.0.connections=512 --seeds 3 --meters=false; }
g_dragonfly-adv2-d1() { exp dragonfly-adv2-d1 'dragonfly-11.6,dragonfly-11.7' lab/experiments/dragonfly-scale/adv2-d1-{lerp,benchmark}{,-heavy}.yaml --meters=false; }
g_dragonfly-adv1() { exp dragonfly-adv1 'dragonfly-2.8,dragonfly-2.256,dragonfly-9.8,dragonfly-9.256' lab/experiments/dragonfly-d1/adv1-{gbn,lerp}.yaml --set workload.0.connections=8,256 --seeds 3 --meters=false; }
g_dragonfly-adv1-shortest() { exp dragonfly-adv1-shortest 'dragonfly-1' lab/experiments/dragonfly-d1/adv1-shortest.yaml --set workload.0.connections=1024 --seeds 3 --meters=false; }
g_dragonfly-adv2-256() { exp dragonfly-adv2-256 'dragonfly-4.*' lab/experiments/dragonfly-d1/adv2-{lerp,shortest}.yaml --set workload.0.connections=256 --seeds 8 --meters=false; }
g_dragonfly-adv1-1024() { exp dragonfly-adv1-1024 'dragonfly-2.1024,dragonfly-9.1024,dragonfly-10.4' lab/experiments/dragonfly-d1/adv1-{gbn,lerp,benchmark}.yaml --set workload.0.connections=1024 --seeds 10 --meters=false; }
g_dragonfly-unf-2048() { exp dragonfly-unf-2048 'dragonfly-5,dragonfly-12' lab/experiments/dragonfly-d1/unf-{lerp,benchmark}.yaml --set workload.0.connections=2048 --seeds 10 --meters=false; }
g_dragonfly-t1() { exp dragonfly-t1 'dragonfly-6.1,dragonfly-6.4,dragonfly-6.5,dragonfly-6.6,dragonfly-6.7,dragonfly-6.8,dragonfly-6.9,dragonfly-6.10,dragonfly-6.11' lab/experiments/dragonfly-table1/{pfc,lerp}.yaml --seeds 3 --meters=false; }
g_expander-mid19() { exp expander-mid19 'expander-5.2,expander-5.3' lab/experiments/expander-vlb-crossover/mid19-*.yaml --seeds 10 --meters=false; }
g_expander-low() { exp expander-low 'expander-5.1' lab/experiments/expander-vlb-crossover/low-*.yaml --seeds 30 --meters=false; }
g_expander-torratio() { exp expander-torratio 'expander-6' lab/experiments/expander-torratio/*.yaml --seeds 30 --meters=false; }
g_expander-projector() { exp expander-projector 'expander-2.*,expander-3.1' lab/experiments/expander-projector/*.yaml --set workload.0.lambda=3000 --seeds 30 --meters=false; }
g_portfc-ndc81-gbn() { exp portfc-ndc81-gbn 'portfc-8.9,portfc-8.10,portfc-8.11,portfc-8.12' lab/experiments/portfc-ndc81-websearch/{gbn,portfc}.yaml --seeds 5 --meters=false; }
g_portfc-ndc81() { exp portfc-ndc81 'portfc-8.1,portfc-8.2,portfc-8.3,portfc-8.4,portfc-8.5,portfc-8.6,portfc-8.7,portfc-8.8' lab/experiments/portfc-ndc81-websearch/{irn,pfcstar,portfc}.yaml --seeds 20 --meters=false; }
g_portfc-ndc41-hadoop() { exp portfc-ndc41-hadoop 'portfc-6.5,portfc-6.6,portfc-7.1' lab/experiments/portfc-ndc41-hadoop/{irn,portfc}.yaml --seeds 69 --meters=false; }
g_portfc-ndc41-storage() { exp portfc-ndc41-storage 'portfc-6.8,portfc-6.9,portfc-7.3' lab/experiments/portfc-ndc41-storage/{irn,portfc}.yaml --seeds 60 --meters=false; }

# The rows without a group until 2026-12-08 (each row's command says the same runs).
g_portfc-rail-moe() { exp_seeds portfc-rail-moe 'portfc-11.2' portfc-rail-moe.json link_util.hbd 'portfc-11.1' lab/experiments/portfc-rail-moe/{irn,portfc}.yaml --seeds 30; }
g_dragonfly-adv1-64() { exp dragonfly-adv1-64 'dragonfly-2.64,dragonfly-9.64' lab/experiments/dragonfly-d1/adv1-{gbn,lerp}.yaml --set workload.0.connections=64 --seeds 6 --meters=false; }
g_dragonfly-t1-16() { exp dragonfly-t1-16 'dragonfly-6.2' lab/experiments/dragonfly-table1/{pfc,lerp}.yaml --set workload.0.connections=16 --seeds 20 --meters=false; }
g_dragonfly-t1-64() { exp dragonfly-t1-64 'dragonfly-6.3' lab/experiments/dragonfly-table1/{pfc,lerp}.yaml --set workload.0.connections=64 --seeds 20 --meters=false; }
g_dragonfly-scale-d1() { exp dragonfly-scale-d1 'dragonfly-10.1,dragonfly-13' lab/experiments/dragonfly-scale/adv1-d1-{lerp,benchmark}.yaml --seeds 10 --meters=false; }
g_dragonfly-scale-d23() { exp dragonfly-scale-d23 'dragonfly-10.2,dragonfly-10.3' lab/experiments/dragonfly-scale/adv1-d{2,3}-{lerp,benchmark}.yaml --seeds 3 --meters=false; }
g_dragonfly-scale-d2-heavy() { exp dragonfly-scale-d2-heavy 'dragonfly-10.5' lab/experiments/dragonfly-scale/adv1-d2-{lerp,benchmark}-heavy.yaml --seeds 8 --meters=false; }
g_dragonfly-scale-d3-heavy() { exp dragonfly-scale-d3-heavy 'dragonfly-10.6' lab/experiments/dragonfly-scale/adv1-d3-{lerp,benchmark}-heavy.yaml --seeds 3 --meters=false; }
g_expander-uniform() { exp_seeds expander-uniform 'expander-4.1' expander-uniform.json fct_avg_s '' lab/experiments/expander-uniform/{ft100,ft50}-ecmp.yaml lab/experiments/expander-uniform/xpl-{ecmp,vlb,hybrid}.yaml --seeds 20 --meters=false; }
# Two trees: --set routing.threshold would apply to all-vlb and all-shortest as well.
g_expander-hybrid-steps() {
	local h=lab/experiments/expander-vlb-crossover/all-hybrid.yaml a=(lab/experiments/expander-vlb-crossover/all-{vlb,shortest}.yaml)
	tree expander-hybrid-steps 'expander-7' "$h" --set routing.threshold=100KB,2.5MB,10MB --seeds 20 --meters=false || return 0
	tree expander-hybrid-steps-a 'expander-7' "${a[@]}" --seeds 20 --meters=false || return 0
	run "$lab" claims --save-seeds "$out/runs/expander-vlb-crossover.json" --seed-metric fct_avg_s --commit "$commit" \
		--provenance "re-run $(date -u +%F) at $commit by scripts/claims-rerun.sh expander-hybrid-steps: bin/lab run $h --set routing.threshold=100KB,2.5MB,10MB and ${a[*]}, --seeds 20 (virtual backend, nice $nice, load $(load))" \
		"$runs/expander-hybrid-steps" "$runs/expander-hybrid-steps-a"
	claims expander-hybrid-steps 'expander-7' "$out"
}
g_expander-cheaper-vlb() { exp expander-cheaper-vlb 'expander-8.1,expander-8.3' lab/experiments/expander-cheaper/near-xp{s,l}-vlb.yaml --set workload.0.load=0.4,0.8 --seeds 10 --meters=false; }
g_expander-cheaper-ecmp06() { exp expander-cheaper-ecmp06 'expander-8.5' lab/experiments/expander-cheaper/near-xp{s,l}-ecmp.yaml --set workload.0.load=0.6 --seeds 10 --meters=false; }
g_expander-cheaper-ecmp08() { exp expander-cheaper-ecmp08 'expander-8.6' lab/experiments/expander-cheaper/near-xp{s,l}-ecmp.yaml --set workload.0.load=0.8 --seeds 20 --meters=false; }

while getopts nl o; do
	case $o in
	n) dry=1 ;;
	l)
		echo "analyze/topo groups (minutes of CPU): $groups_cheap"
		echo "experiment groups (cheapest first; each estimates itself): $groups_exp"
		echo "rows no group refreshes (no source): $groups_manual"
		echo "not run: $groups_never"
		exit 0
		;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: $0 [-n] GROUP... (-l lists them)" >&2; exit 2; }
for g in "$@"; do
	declare -F "g_$g" >/dev/null || { echo "claims-rerun: no group $g (-l lists them)" >&2; exit 2; }
done
[ "$dry" = 1 ] || { mkdir -p "$runs" && go build -o "$lab" ./cmd/lab; }
for g in "$@"; do
	s=$(date +%s)
	c0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
	"g_$g"
	c1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
	echo "== $g: $(($(date +%s) - s)) s wall, $(((c1 - c0) / $(getconf CLK_TCK))) s CPU (children), load $(load), commit $commit" >&2
done
