#!/usr/bin/env bash
# Provision a machine (the Vagrant VM, CI, or a developer box) to build fabriclab and run its suites.
# Idempotent: every step checks first and says whether it did something or found it done.
# Installs: iproute2 and ethtool (the netns backend and people debugging it use them); tshark (with
# mergecap), python3 and graphviz (the interop suite runs Wireshark's dissectors and HPCC's analysis
# arithmetic on our outputs; lab report draws the topology picture with dot); Go when `go` is
# missing (Debian's golang-go; GOTOOLCHAIN=auto then fetches the go.mod toolchain through the module
# proxy), the ginkgo CLI at the version go.mod pins, the module dependencies, and a running Docker engine
# (the cluster suite's machines are containers built from the tree).
# Without network (the VM scripts/vm.sh makes: GOPROXY=off, GOTOOLCHAIN=local, the module cache synced
# in from the host, everything else already in the box) it fetches nothing, and when something is
# missing it says what and where it should have come from.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'provision: %s\n' "$*"; }
# indent prints a command's (multi-line) error under the line that says what failed.
indent() { printf '%s\n' "$1" | sed 's/^/provision:   /'; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else say "not root and no sudo: package installs will fail"; fi
fi

# --- system packages: apt-get update at most once, and only when something is missing. Every apt-get
# waits up to 5 minutes for another's lock (an unattended upgrade at boot) instead of failing at once.
need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v git >/dev/null 2>&1 || need+=(git)
command -v tshark >/dev/null 2>&1 || need+=(tshark)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v dot >/dev/null 2>&1 || need+=(graphviz)
# Live labs (`lab up`, `lab exec`): ping and iperf3 on the kernel hosts, tcpdump for `lab capture` users.
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
# Go: any go >= 1.21 is enough, because from 1.21 on the go command fetches the toolchain go.mod asks
# for (GOTOOLCHAIN=auto, through the module proxy). Debian bookworm's golang-go is 1.19, too old for
# that, so on bookworm Go comes from bookworm-backports; newer Debian releases ship >= 1.21 directly.
export PATH="$PATH:/usr/local/go/bin:/usr/lib/go/bin"
go_minor() { go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
go_pkgs=()
apt_target=()
if ! command -v go >/dev/null 2>&1 || [ "$(go_minor)" = "" ] || [ "$(go_minor)" -lt 21 ]; then
	go_pkgs=(golang-go ca-certificates)
	codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
	if [ "$codename" = "bookworm" ]; then
		bp=/etc/apt/sources.list.d/bookworm-backports.list
		if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
			say "adding bookworm-backports ($bp) for a Go new enough to fetch go.mod's toolchain"
			echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$bp" >/dev/null
		fi
		apt_target=(-t bookworm-backports)
	fi
fi
if [ "${#need[@]}" -gt 0 ] || [ "${#go_pkgs[@]}" -gt 0 ]; then
	if command -v apt-get >/dev/null 2>&1; then
		say "installing with apt-get: ${need[*]} ${go_pkgs[*]}"
		apt_failed() {
			say "cannot install ${need[*]} ${go_pkgs[*]}: apt-get failed (above). Without network (the VM of" \
				"scripts/vm.sh), they belong in the box: rebuild it (vagrant box remove debian/bookworm64; bash scripts/vm.sh box)"
			exit 1
		}
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q || apt_failed
		if [ "${#need[@]}" -gt 0 ]; then
			$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${need[@]}" || apt_failed
		fi
		if [ "${#go_pkgs[@]}" -gt 0 ]; then
			$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${apt_target[@]}" "${go_pkgs[@]}" || apt_failed
		fi
	else
		say "missing ${need[*]} ${go_pkgs[*]} and no apt-get: install them by hand"; exit 1
	fi
else
	say "iproute2, ethtool, git, tshark, python3, graphviz, ping, iperf3 and go (>= 1.21) already present"
fi

# --- Go toolchain: go.mod pins a newer Go than Debian ships; let the go command fetch it (module proxy).
gomod_go=$(awk '$1=="go"{print $2; exit}' go.mod)
# The installed toolchain's own version: with GOTOOLCHAIN=local the go command reports it even where
# go.mod asks for another it cannot get (otherwise `go env GOVERSION` itself fails and says nothing).
local_go=$(GOTOOLCHAIN=local go env GOVERSION 2>/dev/null || true)
offline=""
[ "$(GOTOOLCHAIN=local go env GOPROXY 2>/dev/null)" = off ] && offline=1
if ! err=$(go list -m 2>&1 >/dev/null); then
	if [ -n "$offline" ]; then
		say "go ${local_go:-?} cannot build go.mod's go $gomod_go, and GOPROXY=off (no network) forbids fetching it:"
		indent "$err"
		say "  the box must carry go$gomod_go in /usr/local/go (scripts/vm.sh box copies the host's, or the"
		say "  module proxy's golang.org/toolchain@v0.0.1-go$gomod_go.linux-amd64); rebuild the box"
		exit 1
	fi
	# Debian's Go sets GOTOOLCHAIN=local in its go.env, so it refuses go.mod's newer version instead of
	# fetching it. Switch this user's go env to auto (persisted with go env -w, so scripts/test.sh and
	# later shells see it too).
	say "go ${local_go:-?} cannot build go.mod's go $gomod_go with GOTOOLCHAIN=$(GOTOOLCHAIN= go env GOTOOLCHAIN 2>/dev/null); setting GOTOOLCHAIN=auto (go env -w)"
	go env -w GOTOOLCHAIN=auto
	export GOTOOLCHAIN=auto # an inherited GOTOOLCHAIN=local would beat go env -w
	if ! err=$(go list -m 2>&1 >/dev/null); then
		say "cannot get the Go toolchain go$gomod_go (GOTOOLCHAIN=auto, GOPROXY=$(GOTOOLCHAIN=local go env GOPROXY 2>/dev/null)):"
		indent "$err"
		exit 1
	fi
fi
say "go: $(go version) (go.mod wants $gomod_go)"
GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$PATH:$GOBIN_DIR"

# --- modules first: the ginkgo CLI must match the library version go.mod pins.
# Offline, `go mod download` only checks the module cache and names the first module it lacks.
if [ -n "$offline" ]; then
	say "checking the module cache $(go env GOMODCACHE) (GOPROXY=off: no network)"
else
	say "downloading modules (go mod download)"
fi
for mod in . deploy/k8s/manifestcheck; do
	if ! err=$(cd "$mod" && go mod download 2>&1); then
		say "modules missing for $mod:"
		indent "$err"
		if [ -n "$offline" ]; then
			say "  GOPROXY=off: the module cache is synced from the host; there run \`bash scripts/vm.sh gomod\`, then \`vagrant rsync\`"
		fi
		exit 1
	fi
done

ginkgo_ver=$(go list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
have_ver=""
if command -v ginkgo >/dev/null 2>&1; then
	have_ver=$(ginkgo version 2>/dev/null | awk '{print $NF}')
fi
if [ "v${have_ver#v}" = "$ginkgo_ver" ]; then
	say "ginkgo $ginkgo_ver already installed ($(command -v ginkgo))"
else
	# From the main module, not @version: the version go.mod pins, built with go.mod's toolchain from the
	# module cache (`go install pkg@version` ignores go.mod, so it wants a toolchain and modules of its own).
	say "installing ginkgo CLI $ginkgo_ver (had: ${have_ver:-none})"
	go install github.com/onsi/ginkgo/v2/ginkgo
	# Put it where root's and users' PATH finds it without profile edits.
	if [ -w /usr/local/bin ] || [ -n "$SUDO" ]; then
		$SUDO ln -sf "$GOBIN_DIR/ginkgo" /usr/local/bin/ginkgo 2>/dev/null || true
	fi
fi
# --- Docker engine: the cluster suite runs agent machines as containers built from this tree (nothing is
# pulled; no registry is needed). Install the engine when missing, and start it when it is installed but
# not running (a machine without systemd, such as a container or a fresh CI box, starts no daemon).
if ! command -v docker >/dev/null 2>&1; then
	if command -v apt-get >/dev/null 2>&1; then
		say "installing the Docker engine (docker.io) for the cluster suite"
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends docker.io
	else
		say "no docker and no apt-get: the cluster suite will say it needs a Docker engine"
	fi
fi
if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1; then
	if command -v systemctl >/dev/null 2>&1 && $SUDO systemctl start docker 2>/dev/null; then
		say "started the Docker engine (systemctl)"
	elif command -v dockerd >/dev/null 2>&1; then
		say "starting dockerd (log: /var/log/fabriclab-dockerd.log)"
		$SUDO sh -c 'nohup dockerd >/var/log/fabriclab-dockerd.log 2>&1 &'
	fi
	for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
	docker info >/dev/null 2>&1 && say "Docker engine up" || say "the Docker engine did not start: see /var/log/fabriclab-dockerd.log"
else
	command -v docker >/dev/null 2>&1 && say "Docker engine already running"
fi
say "done"
