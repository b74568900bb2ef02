#!/usr/bin/env bash
# Builds the container image fabriclab/lab:TAG (default: dev) from this tree: a static lab binary in an
# image FROM scratch, nothing pulled. Usage: bash scripts/image.sh [--tools] [TAG]
#
# --tools adds this machine's ping and iperf3 with the shared libraries they load (as ldd lists them),
# so that `lab pingall` and `lab iperf` work on a live lab over agent containers (lab up --cluster);
# `lab flow` needs nothing but the lab binary.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=0
if [ "${1:-}" = "--tools" ]; then
	tools=1
	shift
fi
tag="${1:-dev}"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/lab" ./cmd/lab
cp deploy/docker/Dockerfile "$ctx/"
if [ "$tools" = 1 ]; then
	# iperf3 keeps each stream's buffer in a file it makes under /tmp.
	mkdir -p "$ctx/rootfs" && install -d -m 1777 "$ctx/rootfs/tmp"
	for t in ping iperf3; do
		bin=$(command -v "$t") || { echo "image.sh --tools: no $t on this machine (scripts/provision.sh installs it)" >&2; exit 1; }
		bin=$(readlink -f "$bin")
		install -D "$bin" "$ctx/rootfs/usr/bin/$t"
		# Every library the loader resolves, and the loader itself, at the path it is loaded from.
		for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
			install -D "$(readlink -f "$lib")" "$ctx/rootfs$lib"
		done
	done
	echo 'COPY rootfs/ /' >> "$ctx/Dockerfile"
fi
docker build -q -t "fabriclab/lab:$tag" "$ctx" >/dev/null
echo "fabriclab/lab:$tag"
