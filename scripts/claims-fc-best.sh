#!/usr/bin/env bash
# Best of N random topologies per Fibre Channel topology class at S = 12 switches of 16 ports, N = 100
# terminals (rows fibre-channel-7.1-7.4): the paper's values are the best topology its search found,
# ours (scripts/claims-fc-classes.sh) random members of each class over topology seeds 1-5. This draws
# topology seeds 1..COUNT of each class's spec, runs lab analyze --json on each (uniform all-to-all LP),
# and keeps the best by the paper's metric (the LP throughput), as a search by random sampling.
#   OUT/fc-best/<class>.tsv   seed and lp_throughput of every draw
#   OUT/fc-best/summary.tsv   per class: draws, best, its seed, median, published value
# Besides the classes' specs, two fabrics the random families do not make:
#   star          the best tree with one link per switch pair: a hub with 11 trunks and 5 terminals, 11
#                 leaves with the other 95 (9 or 8 each); one fixed fabric (no draws)
#   free-full, updown-full
#                 random 12-switch fabrics that use every port: 4 switches with 9 terminals and 7 trunks,
#                 8 with 8 terminals and 8 trunks (46 trunks; jellyfish degree 7 has 42 and leaves 8
#                 ports idle), drawn uniformly link by link (restarted until every port is used and the
#                 fabric is connected), routed free or up*/down*
# Usage: scripts/claims-fc-best.sh [COUNT [COUNT_JF [OUT]]]   (COUNT draws of tree and chordal, default
# 200; COUNT_JF of updown, free and the -full classes, default COUNT; OUT default docs/claims-data;
# LAB: the lab binary, default bin/lab). A tree or chordal draw takes a fraction of a second, a free or
# updown one (jellyfish; up*/down* tries 10 roots) about two seconds of CPU.
set -euo pipefail
count=${1:-200}
count_jf=${2:-$count}
out=${3:-docs/claims-data}
lab=${LAB:-bin/lab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out/fc-best"

# fabric KIND SEED FILE: a fabric of the kinds above as lab's topology JSON (topology family file).
fabric() {
	python3 - "$@" <<'PY'
import json, random, sys
kind, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if kind == "star":
    hosts = [5] + [9] * 7 + [8] * 4
    edges = {(0, i) for i in range(1, 12)}
else:
    hosts = [9] * 4 + [8] * 8
    rng = random.Random(seed)
    for attempt in range(100000):
        free, edges = [16 - h for h in hosts], set()
        while True:
            cand = [(a, b) for a in range(12) for b in range(a + 1, 12) if free[a] and free[b] and (a, b) not in edges]
            if not cand:
                break
            a, b = rng.choice(cand)
            edges.add((a, b))
            free[a] -= 1
            free[b] -= 1
        if any(free):
            continue
        seen, todo = {0}, [0]
        while todo:
            n = todo.pop()
            for a, b in edges:
                for x, y in ((a, b), (b, a)):
                    if x == n and y not in seen:
                        seen.add(y)
                        todo.append(y)
        if len(seen) == 12:
            break
    else:
        sys.exit("no fabric using every port in 100000 draws")
nodes = [{"name": f"s{i}", "kind": "switch"} for i in range(12)]
links, port = [], {}
def p(n):
    port[n] = port.get(n, -1) + 1
    return port[n]
h = 0
for s, k in enumerate(hosts):
    for _ in range(k):
        nodes.append({"name": f"h{h}", "kind": "host"})
        links.append({"a": f"h{h}", "b": f"s{s}", "rate_bps": 100e9, "delay_s": 1e-6, "a_port": 0, "b_port": p(f"s{s}"), "class": "host"})
        h += 1
for a, b in sorted(edges):
    links.append({"a": f"s{a}", "b": f"s{b}", "rate_bps": 100e9, "delay_s": 1e-6, "a_port": p(f"s{a}"), "b_port": p(f"s{b}"), "class": "trunk"})
assert h == 100 and max(port.values()) <= 15
json.dump({"family": "file", "params": {}, "nodes": nodes, "links": links}, open(out, "w"))
PY
}

# The class, its spec (or the fabric kind and routing), the paper's value (Figs. 6 and 8) and the draws.
classes="tree:lab/experiments/fibre-channel-classes/tree.yaml:0.25:$count
star:star shortest:0.25:1
chordal:lab/experiments/fibre-channel-classes/chordal.yaml:0.57:$count
updown:lab/experiments/fibre-channel-efficiency/updown.yaml:0.67:$count_jf
updown-full:full updown:0.67:$count_jf
free:lab/experiments/fibre-channel-efficiency/free.yaml:0.77:$count_jf
free-full:full free:0.77:$count_jf"

printf 'class\tdraws\tbest\tbest_seed\tmedian\tpublished\n' >"$tmp/summary.tsv"
while IFS=: read -r name f pub n; do
	if [ -f "$f" ]; then
		[ "$(grep -c '^topology: {.*, seed: 1}$' "$f")" = 1 ] ||
			{ echo "$f: topology line not as expected (one line ending in 'seed: 1}')" >&2; exit 1; }
	fi
	printf 'seed\tlp_throughput\n' >"$tmp/$name.tsv"
	for ((t = 1; t <= n; t++)); do
		if [ -f "$f" ]; then
			sed -e "/^topology: /s/seed: 1}\$/seed: $t}/" "$f" >"$tmp/spec.yaml"
		else
			fabric "${f% *}" "$t" "$tmp/fabric.json"
			printf 'name: fc-best\nseed: 1\ntopology: {family: file, path: %s}\nrouting: {algorithm: %s}\nduration: 1ms\n' "$tmp/fabric.json" "${f#* }" >"$tmp/spec.yaml"
		fi
		v=$("$lab" analyze --json "$tmp/spec.yaml" | grep -o '"lp_throughput": *[0-9.eE+-]*' | sed 's/.*: *//')
		[ -n "$v" ] || { echo "$name seed $t: no lp_throughput" >&2; exit 1; }
		printf '%s\t%s\n' "$t" "$v" >>"$tmp/$name.tsv"
	done
	python3 - "$tmp/$name.tsv" "$name" "$pub" >>"$tmp/summary.tsv" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n')[1:] if l]
v = [(float(x), int(s)) for s, x in rows]
best = max(v)
print(f"{sys.argv[2]}\t{len(v)}\t{best[0]:.4f}\t{best[1]}\t{statistics.median(x for x, _ in v):.4f}\t{sys.argv[3]}")
PY
	cp "$tmp/$name.tsv" "$out/fc-best/$name.tsv"
done <<<"$classes"
cp "$tmp/summary.tsv" "$out/fc-best/summary.tsv"
column -t "$out/fc-best/summary.tsv"
