#!/usr/bin/env bash
# Builds the container image fabriclab/lab:TAG (default: dev) from this tree: a static lab binary in an
# image FROM scratch, nothing pulled. Usage: bash scripts/image.sh [TAG]
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-dev}"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/lab" ./cmd/lab
cp deploy/docker/Dockerfile "$ctx/"
docker build -q -t "fabriclab/lab:$tag" "$ctx" >/dev/null
echo "fabriclab/lab:$tag"
