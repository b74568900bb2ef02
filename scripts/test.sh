#!/usr/bin/env bash
# The test command (README, .ci/run and the Vagrant VM all call this). It installs what it needs, then:
# gofmt, go vet, unit tests, the race detector on the engines, and the Ginkgo suites labelled smoke.
# Usage: bash scripts/test.sh [LABEL-FILTER] [GINKGO-FLAGS...]   (default filter: smoke)
# Flags after the filter go to ginkgo as they are (e.g. --json-report=r.json -v --focus=PortFC); a first
# argument starting with "-" is a flag and the filter stays smoke. Ginkgo writes a JUnit report of the
# suites to $TEST_RESULTS_DIR/junit.xml (default test-results/junit.xml); a --junit-report flag wins.
set -euo pipefail
cd "$(dirname "$0")/.."
labels=smoke
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	labels="$1"
	shift
fi
extra=("$@")
results="${TEST_RESULTS_DIR:-test-results}"

bash scripts/provision.sh
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH)/bin"

step() { printf '\n=== %s\n' "$*"; }

step "gofmt"
# A check that finds no files cannot fail: git lists none when it refuses the tree ("dubious ownership"
# from a root shell in a tree owned by another user), so no files is an error, not a pass.
gofiles=$(git ls-files '*.go' || true)
if [ -z "$gofiles" ]; then
	echo "gofmt: git lists no .go files here (as root in a tree owned by another user, run: git config --global --add safe.directory $PWD)" >&2
	exit 1
fi
unformatted=$(gofmt -l $gofiles)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
go vet ./...

# Packages whose tests run real namespaces and time real frames (harness/...) run one at a time after
# the others: next to another package's CPU-bound tests their agents lose the CPU and their runs turn
# unfaithful (seen in CI: a kernel TCP flow at 86% of the emulated link while lab/bound solved LPs).
step "unit tests"
go test -count=1 $(go list ./... | grep -v -e /suites/ -e /harness/)
go test -count=1 -p 1 ./harness/...

step "fuzz targets, 2s each (scripts/fuzz.sh DURATION runs them longer)"
bash scripts/fuzz.sh 2s

step "race detector on the engines"
go test -race -count=1 ./clock/... ./egress/... ./switchsw/... ./nodes/... ./wire/... ./harness/virtual/...

step "ginkgo suites (label: $labels)"
if [ "$(id -u)" -ne 0 ]; then
	echo "note: the namespace suites need root; run as root (sudo bash scripts/test.sh) for them to pass" >&2
fi
# Compile every suite first, then run the binaries: `ginkgo -r` compiles the next suite while the
# current one runs, and a compiler next to the namespace suites made their agents late.
ginkgo build -r ./suites >/dev/null
# A relative report path: ginkgo writes each suite's report under the suite's directory at that path
# first (an absolute path would be re-rooted there), then merges them into this one.
mkdir -p "$results"
ginkgo --no-color --label-filter="$labels" --timeout=40m --junit-report="$results/junit.xml" \
	${extra[@]+"${extra[@]}"} $(find suites -name '*.test' -type f | sort)
echo "JUnit report: $results/junit.xml"
