#!/usr/bin/env bash
# Provision a machine (the Vagrant VM, CI, or a developer box) to build fabriclab and run its suites.
# Idempotent: every step checks first and says whether it did something or found it done.
# Installs: iproute2 and ethtool (the netns backend and people debugging it use them), Go when `go` is
# missing (Debian's golang-go; GOTOOLCHAIN=auto then fetches the go.mod toolchain through the module
# proxy), the ginkgo CLI at the version go.mod pins, and the module dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'provision: %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else say "not root and no sudo: package installs will fail"; fi
fi

# --- system packages: apt-get update at most once, and only when something is missing.
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v git >/dev/null 2>&1 || need+=(git)
# Go: a system go found on PATH or in the usual places is good enough; GOTOOLCHAIN handles the version.
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
command -v go >/dev/null 2>&1 || need+=(golang-go ca-certificates)
if [ "${#need[@]}" -gt 0 ]; then
	if command -v apt-get >/dev/null 2>&1; then
		say "installing with apt-get: ${need[*]}"
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
	else
		say "missing ${need[*]} and no apt-get: install them by hand"; exit 1
	fi
else
	say "iproute2, ethtool, git and go already present"
fi

# --- Go toolchain: go.mod pins a newer Go than Debian ships; let the go command fetch it (module proxy).
gomod_go=$(awk '$1=="go"{print $2; exit}' go.mod)
if [ "$(go env GOTOOLCHAIN)" = "local" ]; then
	# A local-only toolchain older than go.mod would refuse to build; switch to auto only then.
	if ! go list -m >/dev/null 2>&1; then
		say "go $(go env GOVERSION) is older than go.mod's $gomod_go; using GOTOOLCHAIN=auto"
		export GOTOOLCHAIN=auto
	fi
else
	export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
fi
say "go: $(go version) (go.mod wants $gomod_go)"
GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$PATH:$GOBIN_DIR"

# --- modules first: the ginkgo CLI must match the library version go.mod pins.
say "downloading modules (go mod download)"
go mod download

ginkgo_ver=$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
have_ver=""
if command -v ginkgo >/dev/null 2>&1; then
	have_ver=$(ginkgo version 2>/dev/null | awk '{print $NF}')
fi
if [ "v${have_ver#v}" = "$ginkgo_ver" ]; then
	say "ginkgo $ginkgo_ver already installed ($(command -v ginkgo))"
else
	say "installing ginkgo CLI $ginkgo_ver (had: ${have_ver:-none})"
	go install "github.com/onsi/ginkgo/v2/ginkgo@$ginkgo_ver"
	# Put it where root's and users' PATH finds it without profile edits.
	if [ -w /usr/local/bin ] || [ -n "$SUDO" ]; then
		$SUDO ln -sf "$GOBIN_DIR/ginkgo" /usr/local/bin/ginkgo 2>/dev/null || true
	fi
fi
say "done"
