#!/usr/bin/env bash
# The test command (README, .ci/run and the Vagrant VM all call this). It installs what it needs, then:
# gofmt, go vet, unit tests, the race detector on the engines, and the Ginkgo suites labelled smoke.
# Usage: bash scripts/test.sh [LABEL-FILTER] [GINKGO-FLAGS...]   (default filter: smoke)
# Flags after the filter go to ginkgo as they are (e.g. --json-report=r.json -v --focus=PortFC); a first
# argument starting with "-" is a flag and the filter stays smoke. Ginkgo writes a JUnit report of the
# suites to $TEST_RESULTS_DIR/junit.xml (default test-results/junit.xml); a --junit-report flag wins.
# Every step runs even after one fails, and ginkgo runs every suite (--keep-going): the summary at the
# end lists each step's result and time, and the exit status is non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
labels=smoke
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	labels="$1"
	shift
fi
extra=("$@")
results="${TEST_RESULTS_DIR:-test-results}"

bash scripts/provision.sh || exit 1
export PATH="$PATH:/usr/local/go/bin:$(go env GOPATH)/bin"

# Bounds that catch a hang, not assertions: go test's own 10 minutes per package, and 40 minutes for
# all the Ginkgo suites of the run together (ginkgo counts one --timeout down over the suites). Under QEMU's emulator (scripts/vm.sh without KVM) everything runs 10-25 times slower and
# a package that takes a minute natively legitimately takes longer than ten; scripts/vm.sh raises them.
go_timeout="${FABRICLAB_GO_TEST_TIMEOUT:-10m}"
suite_timeout="${FABRICLAB_SUITE_TIMEOUT:-40m}"

# step TITLE FUNCTION runs FUNCTION, records pass/fail and its seconds, and goes on. STEPS (e.g.
# STEPS=gofmt,ginkgo) runs only the named steps (the function names without step_); the others are
# listed as skipped.
names=() results_=() secs=()
failed=0
step() {
	local name="$1" fn="$2" start rc
	if [ -n "${STEPS:-}" ] && [[ ",$STEPS," != *",${fn#step_},"* ]]; then
		names+=("$name") secs+=(0) results_+=("skipped (STEPS)")
		return
	fi
	printf '\n=== %s\n' "$name"
	start=$(date +%s)
	"$fn"
	rc=$?
	names+=("$name") secs+=($(( $(date +%s) - start )))
	if [ "$rc" -eq 0 ]; then
		results_+=(pass)
	else
		results_+=("FAIL ($rc)")
		failed=1
	fi
}

step_gofmt() {
	# A check that finds no files cannot fail: git lists none when it refuses the tree ("dubious ownership"
	# from a root shell in a tree owned by another user), so no files is an error, not a pass.
	local gofiles unformatted
	gofiles=$(git ls-files '*.go' || true)
	if [ -z "$gofiles" ]; then
		echo "gofmt: git lists no .go files here (as root in a tree owned by another user, run: git config --global --add safe.directory $PWD)" >&2
		return 1
	fi
	unformatted=$(gofmt -l $gofiles)
	if [ -n "$unformatted" ]; then
		echo "gofmt would change:"; echo "$unformatted"; return 1
	fi
}

step_vet() { go vet ./...; }

# Packages whose tests run real namespaces and time real frames (harness/...) run one at a time after
# the others: next to another package's CPU-bound tests their agents lose the CPU and their runs turn
# unfaithful (seen in CI: a kernel TCP flow at 86% of the emulated link while lab/bound solved LPs).
step_unit() { go test -count=1 -timeout="$go_timeout" $(go list ./... | grep -v -e /suites/ -e /harness/); }
step_unit_harness() { go test -count=1 -timeout="$go_timeout" -p 1 ./harness/...; }

step_fuzz() { bash scripts/fuzz.sh 2s; }

# deploy/k8s/manifestcheck is its own module, so client-go stays out of the lab binary's dependencies.
step_k8s() { (cd deploy/k8s/manifestcheck && go test -count=1 -timeout="$go_timeout" .); }

step_race() { go test -race -count=1 -timeout="$go_timeout" ./clock/... ./egress/... ./switchsw/... ./nodes/... ./wire/... ./harness/virtual/...; }

step_ginkgo() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "note: the namespace suites need root; run as root (sudo bash scripts/test.sh) for them to pass" >&2
	fi
	# Compile every suite first, then run the binaries: `ginkgo -r` compiles the next suite while the
	# current one runs, and a compiler next to the namespace suites made their agents late. A suite that
	# does not compile fails this step; the others still run.
	local rc=0 labdir
	find suites -name '*.test' -type f -delete # a suite that no longer compiles must not run its old binary
	ginkgo build -r ./suites >/dev/null || rc=$?
	# The suites that drive the lab command as a user would (smoke, netns, live, cluster, docs) share one
	# binary built here from this tree (suites/internal/labbin): each linked its own before, a minute a
	# link under QEMU's emulator. If it does not build, they build their own and say why.
	labdir=$(mktemp -d)
	if go build -o "$labdir/lab" ./cmd/lab; then
		export FABRICLAB_LAB_BIN="$labdir/lab"
	else
		rc=1
	fi
	# A relative report path: ginkgo writes each suite's report under the suite's directory at that path
	# first (an absolute path would be re-rooted there), then merges them into this one. --keep-going runs
	# every suite after one fails; the JUnit file lists every spec of every suite, the ones the label
	# filter left out as skipped, with the filter and their labels.
	mkdir -p "$results"
	ginkgo --no-color --keep-going --label-filter="$labels" --timeout="$suite_timeout" --junit-report="$results/junit.xml" \
		${extra[@]+"${extra[@]}"} $(find suites -name '*.test' -type f | sort) || rc=$?
	# Ginkgo says only "skipped" for a spec the filter left out; name the filter and the spec's labels.
	if [ -f "$results/junit.xml" ]; then
		go run ./tools/junitskips "$results/junit.xml" "$labels" || rc=1
	fi
	echo "JUnit report: $results/junit.xml"
	unset FABRICLAB_LAB_BIN
	rm -rf "$labdir"
	return $rc
}

step "gofmt" step_gofmt
step "go vet" step_vet
step "unit tests" step_unit
step "unit tests, harness (one package at a time)" step_unit_harness
step "Kubernetes manifests decode (deploy/k8s)" step_k8s
step "fuzz targets, 2s each (scripts/fuzz.sh DURATION runs them longer)" step_fuzz
step "race detector on the engines" step_race
step "ginkgo suites (label: $labels)" step_ginkgo

printf '\n=== summary\n'
for i in "${!names[@]}"; do
	printf '%-16s %5ss  %s\n' "${results_[$i]}" "${secs[$i]}" "${names[$i]}"
done
if [ "$failed" -ne 0 ]; then
	echo "test.sh: some steps FAILED (above); every step ran"
	exit 1
fi
echo "test.sh: all steps passed"
