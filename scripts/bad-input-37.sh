#!/usr/bin/env bash
# Issue 37's bad inputs (bounded inputs and safe outputs): fed to bin/lab or the binary given, printing
# per input the wall time, the exit status and the first line of output, or (for a file kept, a file
# replaced) what was found. docs/bad-input.md's "Inputs, outputs, budgets and flags" table comes from it.
# Each run is capped at 20 s and 4 GB of address space, SIGKILL 5 s after the timeout's SIGTERM (an old
# binary's FIFO open ignored SIGTERM). scripts/bad-input.sh runs it last; alone:
#   bash scripts/bad-input-37.sh [LAB-BINARY]
# The cases marked (root) bring up a lab named bi<pid>c; they are skipped when not root.
set -uo pipefail
cd "$(dirname "$0")/.."
labbin="${1:-bin/lab}"
if [ "$labbin" = bin/lab ] && [ ! -x bin/lab -o -n "${BUILD:-}" ]; then
	go build -o bin/lab ./cmd/lab || exit 1
fi
labbin=$(realpath "$labbin")
. scripts/bad-input-lib.sh # run, say
dir=$(mktemp -d)
lab=bi$$c
cleanup() {
	if [ "$(id -u)" -eq 0 ]; then
		"$labbin" down $lab >/dev/null 2>&1
		# An old binary brings up lab up --name "" under the spec's name.
		[ -d /run/fabriclab/${lab}u ] && "$labbin" down ${lab}u >/dev/null 2>&1
	fi
	rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir"

kept() { # label, file: says whether the user's file still holds "mine"
	[ "$(cat "$2" 2>/dev/null)" = mine ] && say "$1" "the user's file kept" ||
		say "$1" "the user's file REPLACED: $(head -c 60 "$2" 2>/dev/null | tr '\n' ' ' | tr -cd '[:print:]')"
}
perm='workload: [{kind: permutation, size: 10KB}]'
spec() { # name, workload (a small NDC(4,1) run)
	printf 'name: %s\ntopology: {family: ndc, n: 4, k: 1}\nduration: 2ms\n%s\n' "$1" "${2:-$perm}" >"$1.yaml"
}
spec small
spec other
"$labbin" run small.yaml -o run1 -q >/dev/null 2>&1
"$labbin" run small.yaml --seeds 2 -o tree1 -q >/dev/null 2>&1

# 1: lab claims reads only inside the directories given, bounded
printf '[{"id":"portfc-1","paper":"portfc","claim":"c","published":"1","kind":"point","band":[1,1],"metric":"m","definition":"d","measured_mean":null,"ci95":null,"seeds":0,"topology_seeds":0,"command":"c","source":{"seeds":"../../../../../../dev/zero","group":"g","metric":"fct_avg_s"},"verdict":"-","rule":"","why":""}]\n' >escape.json
sed 's#"seeds":"../../../../../../dev/zero","group":"g","metric":"fct_avg_s"#"analyze":"../../../../../../etc/*","field":"x"#' escape.json >etc.json
sed 's#"seeds":"../../../../../../dev/zero","group":"g","metric":"fct_avg_s"#"analyze":"*.json","field":"x"#' escape.json >fifo-claims.json
mkdir -p cdir fdir && mkfifo fdir/x.json
run claims-devzero "$labbin" claims --in /dev/zero --docs -
run claims-dotdot "$labbin" claims --in escape.json -o escape-out.json --docs - cdir
run claims-etc "$labbin" claims --in etc.json -o etc-out.json --docs - cdir
run claims-fifo "$labbin" claims --in fifo-claims.json -o fifo-out.json --docs - fdir
# 2: claims writes atomically, never through a link
cp escape.json c2.json && sed -i 's#"source":{[^}]*},##' c2.json
echo mine >user-claims.txt && ln -s user-claims.txt claims-link.json
run claims-link "$labbin" claims --in c2.json -o claims-link.json --docs -
kept claims-link-kept user-claims.txt
# 3: compare, report and capture outputs
mkdir userdir && echo mine >userdir/notes.txt
run report-userdir "$labbin" report run1 -o userdir --no-plots
[ "$(ls userdir)" = notes.txt ] && say report-userdir "userdir holds only the user's notes.txt" || say report-userdir "userdir now holds: $(ls userdir | tr '\n' ' ')"
mkdir -p cmp && echo mine >user-cmp.txt && ln -s "$dir/user-cmp.txt" cmp/compare.json
run compare-link "$labbin" compare tree1 tree1 -o cmp
kept compare-link-kept user-cmp.txt
echo mine >user.pcap
run capture-user "$labbin" capture nosuch$$ s0:p0 -w user.pcap --for 1s
kept capture-kept user.pcap
run capture-devfull "$labbin" capture nosuch$$ s0:p0 -w /dev/full --for 1s
run cpuprof-user "$labbin" run small.yaml -o r-prof -q --cpuprofile user.pcap
kept cpuprof-kept user.pcap
# 4: a run tree's -o
mkdir usertree && echo mine >usertree/manifest.json
run tree-userdir "$labbin" run small.yaml --seeds 2 -o usertree -q
kept tree-userdir-kept usertree/manifest.json
run tree-in-run "$labbin" run small.yaml --seeds 2 -o tree1/seed-1 -q
run tree-other "$labbin" run other.yaml --seeds 2 -o tree1 -q
# 5: budgets from the topology's parameters
run topo-ft200 "$labbin" topo fattree k=200
run topo-ft200-json "$labbin" topo fattree k=200 --json
printf 'name: ft\ntopology: {family: fattree, k: 200}\nduration: 2ms\nworkload: [{kind: permutation, size: 10KB}]\n' >ft200.yaml
run run-ft200 "$labbin" run ft200.yaml -o out-ft
run analyze-ft200 "$labbin" analyze ft200.yaml
run topo-jf2m "$labbin" topo jellyfish switches=2000000 degree=4
run topo-xp2m "$labbin" topo xpander switches=2000000 degree=4
# 6: a 3 GB sparse summary.json
cp -r run1 sparse && truncate -s 3G sparse/summary.json
run sparse-summary "$labbin" report sparse --no-plots -o sparse-rep
# 7: 20,000 explicit flows (no aliases), 969 KB: inside the 16 MB / 5e6 flows budget
python3 - <<'PY'
with open("flows20k.yaml", "w") as f:
    f.write("name: flows20k\ntopology: {family: ndc, n: 4, k: 1}\nduration: 2ms\nworkload:\n- kind: flows\n  list:\n")
    for i in range(20000):
        f.write("  - {src: h%d, dst: h%d, size: %d, at: %dns}\n" % (i % 16, (i + 1) % 16, 1000 + i, i))
PY
run flows-20k "$labbin" topo flows20k.yaml
# 8: a FIFO spec never blocks before signals are handled
mkfifo fifo.yaml
run fifo-spec "$labbin" run fifo.yaml -o out-fifo
# 9: usage errors exit 2
run budget-bad "$labbin" topo ndc n=2 k=1 --budget banana
mkdir -p secretdir && chmod 755 secretdir
run underlay-bad "$labbin" agent serve --listen :7070 --secret secretdir --underlay banana
run listen-bad "$labbin" agent serve --listen 127.0.0.1:70000 --secret secretdir --underlay 198.18.0.1
run serve-noflags "$labbin" agent serve
run link-sideways "$labbin" link nosuch$$ a b sideways
# 10: explicit values refused or honoured
run agents-0 "$labbin" run small.yaml -o out-a0 --agents 0
run agents-virt "$labbin" run small.yaml -o out-a1 --agents 1000
run name-virt "$labbin" run small.yaml -o out-a2 --name foo
printf 'name: nn\ntopology: {family: ndc, n: 4, k: 1}\nbackend: netns\nduration: 2ms\nworkload: [{kind: permutation, size: 10KB}]\n' >nn.yaml
run keep-netns "$labbin" run nn.yaml -o out-nn --keep-running-on-deadlock
run set-name "$labbin" run small.yaml -o out-sn --set name=renamed
run expect-twice "$labbin" compare tree1 tree1 --no-plots --expect fct_avg_s=up --expect fct_avg_s=down
run docs-missing "$labbin" claims --in c2.json -o c3.json --docs /nonexistent$$
printf 'name: %su\ntopology: {family: ring, n: 3}\n' $lab >upname.yaml
run up-name-empty "$labbin" up upname.yaml --name ""
[ -d /run/fabriclab/${lab}u ] && "$labbin" down ${lab}u >/dev/null 2>&1
run capture-neg "$labbin" capture nosuch$$ s0:p0 --for -1s
run clean-file "$labbin" clean small.yaml
sed 's#"why":""#"why":"","flavour":"x"#' c2.json >unknown.json
run claims-unknown "$labbin" claims --in unknown.json -o u-out.json --docs -
sed 's#"seeds":0#"seeds":-5#' c2.json >neg.json
run claims-neg "$labbin" claims --in neg.json -o n-out.json --docs -
# 11: messages
run dragonfly-p "$labbin" topo dragonfly p=100000 a=4 h=2 --budget off
run secret-dir "$labbin" agent serve --listen :7070 --secret secretdir --underlay 198.18.0.1
"$labbin" run small.yaml --seeds 2 -o tree2 -q >/dev/null 2>&1
python3 - <<'PY'
import json
m = json.load(open("tree2/manifest.json"))
m["runs"][1]["name"] = "other"
json.dump(m, open("tree2/manifest.json", "w"))
PY
run tree-message "$labbin" run small.yaml --seeds 2 -o tree2 -q
# also: lab clean without a results directory
run clean-nothing "$labbin" clean
if [ "$(id -u)" -ne 0 ]; then
	say root-cases "skipped: capture of a live lab and a killed agent need root"
else
	# 3, 12 (root): capture of a live lab over a user's file, a link, and a full device
	"$labbin" up ring n=3 hosts_per_switch=1 --name $lab -q >/dev/null 2>&1
	echo mine >user2.pcap && ln -s "$dir/user2.pcap" link.pcap
	run capture-live "$labbin" capture $lab s0:p0 -w user2.pcap --for 1s
	run capture-lnk "$labbin" capture $lab s0:p0 -w link.pcap --for 1s
	kept capture-live-kept user2.pcap
	run capture-full "$labbin" capture $lab s0:p0 -w /dev/full --for 1s
	run capture-ok "$labbin" capture $lab s0:p0 -w new.pcap --for 1s
	# 11 (root): the agent killed; status and inspect agree
	# The lab's agents, by the PIDs its agents file records (the first line is its supervisor).
	for p in $(tail -n +2 /run/fabriclab/$lab/agents 2>/dev/null | awk '{print $1}'); do kill -KILL "$p" 2>/dev/null; done
	sleep 2
	say status-after "$("$labbin" status 2>&1 | awk -v l=$lab '$1 == l' | tr -s ' ' | cut -c1-150)"
	run inspect-after "$labbin" inspect $lab
	"$labbin" down $lab >/dev/null 2>&1
fi
