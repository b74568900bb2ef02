#!/usr/bin/env bash
# The Vagrant VM on a Linux host with libvirt (docs/vm.md): everything from a machine that has only
# Debian's package archive and the Go module proxy, no Vagrant Cloud and no network in the guest.
# Usage: bash scripts/vm.sh COMMAND   (as root: it installs packages and runs libvirt)
#   deps      install vagrant, vagrant-libvirt, libvirt, qemu, debootstrap (apt-get) and start libvirtd
#   box       build the box debian/bookworm64 for libvirt from Debian's archive, unless `vagrant box
#             list` has it already (a machine with internet may have Vagrant Cloud's; then that one is used)
#   gomod     gather the module cache the guest builds from ($WORK/gomod), synced in at `vagrant up`
#   up        box, gomod, then `vagrant up` and provisioning (scripts/provision.sh; no network needed)
#   test [LABELS]  up, then the test command inside the VM (default labels: "smoke || vm"); the JUnit
#             file and the logs are copied out to $RESULTS (default vm-results/); each phase's time and
#             the load average go to $RESULTS/phases.txt; STEPS (scripts/test.sh) is passed on;
#             by default gofmt,vet,unit,unit_harness,k8s,ginkgo (race and fuzz: STEPS=all)
#   ssh       a shell in the VM
#   destroy   remove the VM: its domain, its volumes, the box's volume in the pool and the management
#             network (the box stays in `vagrant box list`; `vagrant box remove debian/bookworm64` drops it)
# Environment: FABRICLAB_VM_ACCEL=kvm|tcg (default: kvm when /dev/kvm works with vmx/svm, else tcg),
# FABRICLAB_CPUS (2), FABRICLAB_MEMORY (6144), FABRICLAB_VM_WORK (/var/tmp/fabriclab-vm: rootfs, box,
# module cache), FABRICLAB_VM_MIRROR (http://deb.debian.org/debian), RESULTS (vm-results).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

BOX=debian/bookworm64
WORK=${FABRICLAB_VM_WORK:-/var/tmp/fabriclab-vm}
MIRROR=${FABRICLAB_VM_MIRROR:-http://deb.debian.org/debian}
RESULTS=${RESULTS:-vm-results}
# The management network's name and address: the Vagrantfile reads the same variables.
export FABRICLAB_VM_NET=${FABRICLAB_VM_NET:-fabriclab-vm}
export FABRICLAB_CPUS=${FABRICLAB_CPUS:-2}
export FABRICLAB_MEMORY=${FABRICLAB_MEMORY:-6144}
export FABRICLAB_GOMODCACHE=$WORK/gomod
export VAGRANT_DEFAULT_PROVIDER=libvirt
export LIBVIRT_DEFAULT_URI=qemu:///system

# Where the module cache lives in the guest (and in the box): the box's Go build cache was filled with
# the modules at this path, and the compiler's cache keys include a package's directory.
GUEST_GOMODCACHE=/var/cache/fabriclab/gomod

# Each line says the time (UTC), so a log shows where a phase's minutes went.
say() { printf 'vm.sh %s: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { say "$*"; exit 1; }

need_root() { [ "$(id -u)" -eq 0 ] || die "run as root (it installs packages, runs libvirt and builds a disk image)"; }

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "$@"
}

# --- deps: the host's packages and a running libvirtd.
deps() {
	need_root
	local want=()
	command -v vagrant >/dev/null || want+=(vagrant)
	vagrant plugin list 2>/dev/null | grep '^vagrant-libvirt' >/dev/null || want+=(vagrant-libvirt)
	command -v libvirtd >/dev/null || want+=(libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients)
	command -v qemu-system-x86_64 >/dev/null || want+=(qemu-system-x86)
	command -v qemu-img >/dev/null || want+=(qemu-utils)
	command -v debootstrap >/dev/null || want+=(debootstrap)
	command -v sfdisk >/dev/null || want+=(fdisk)
	command -v rsync >/dev/null || want+=(rsync)
	command -v dnsmasq >/dev/null || want+=(dnsmasq-base)
	command -v iptables >/dev/null || want+=(iptables)
	if [ "${#want[@]}" -gt 0 ]; then
		say "installing with apt-get: ${want[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q
		apt_install "${want[@]}"
	fi
	case " ${want[*]} " in *" libvirt-daemon-system "*) fresh_libvirt=1 ;; *) fresh_libvirt=0 ;; esac
	# libvirt's QEMU runs as libvirt-qemu: /dev/kvm must be open to group kvm (it is root-only in some
	# containers), or QEMU cannot use it even where it works.
	if [ -e /dev/kvm ] && getent group kvm >/dev/null; then
		chgrp kvm /dev/kvm 2>/dev/null && chmod 0660 /dev/kvm 2>/dev/null || true
	fi
	if ! virsh version >/dev/null 2>&1; then
		if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
			systemctl start libvirtd virtlogd
		else
			# A container without systemd: start the daemons by hand (virtlogd keeps QEMU's console logs).
			say "starting virtlogd and libvirtd (no systemd here)"
			pgrep -x virtlogd >/dev/null || virtlogd -d
			pgrep -x libvirtd >/dev/null || libvirtd -d
		fi
		for _ in $(seq 1 30); do virsh version >/dev/null 2>&1 && break; sleep 1; done
		virsh version >/dev/null 2>&1 || die "libvirtd did not start"
	fi
	# Debian's libvirt defines a network "default" on a private range when it is installed. The lab's
	# networks live in 198.18.0.0/15 only, so a network this script's install brought in goes again
	# (inactive, before anything could use it); one that was there before is the machine's, and stays.
	if [ "$fresh_libvirt" = 1 ] && virsh net-info default >/dev/null 2>&1 &&
		virsh net-dumpxml default | grep -q "address='192\.168\." &&
		[ "$(virsh net-info default | awk '/^Active:/{print $2}')" = no ]; then
		virsh net-autostart default --disable >/dev/null 2>&1 || true
		virsh net-undefine default >/dev/null && say "removed libvirt's network default (a private range, defined by the install just made; the VM uses $FABRICLAB_VM_NET)"
	fi
	# vagrant-libvirt puts volumes in the pool "default".
	if ! virsh pool-info default >/dev/null 2>&1; then
		say "defining libvirt's storage pool default (/var/lib/libvirt/images)"
		mkdir -p /var/lib/libvirt/images
		virsh pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
		virsh pool-build default >/dev/null 2>&1 || true
	fi
	[ "$(virsh pool-info default | awk '/^State:/{print $2}')" = running ] || virsh pool-start default >/dev/null
}

# --- the Go toolchain go.mod names, as a directory to copy: the host's own when it is that version,
# else the toolchain module golang.org/toolchain from the module proxy (what GOTOOLCHAIN=auto would fetch).
gomod_go() { awk '$1=="go"{print $2; exit}' go.mod; }
host_go() {
	local g
	g=$(command -v go || true)
	[ -n "$g" ] || { [ -x /usr/local/go/bin/go ] && g=/usr/local/go/bin/go; }
	[ -n "$g" ] || die "no Go on the host: install Go >= 1.21 (e.g. Debian's golang-go from bookworm-backports)"
	echo "$g"
}
toolchain_dir() {
	local go want have dir
	go=$(host_go)
	want=go$(gomod_go)
	have=$(GOTOOLCHAIN=local "$go" env GOVERSION)
	if [ "$have" = "$want" ]; then
		GOTOOLCHAIN=local "$go" env GOROOT
		return
	fi
	say "host Go is $have, go.mod wants $want: fetching golang.org/toolchain@v0.0.1-$want.linux-amd64"
	dir=$(GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go" mod download -json "golang.org/toolchain@v0.0.1-$want.linux-amd64" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
	[ -d "$dir" ] || die "could not fetch the Go toolchain $want through the module proxy (see above)"
	echo "$dir"
}

# --- gomod: every module the suites build from (the main module, its tests and the ginkgo CLI,
# deploy/k8s/manifestcheck), in a cache of their own that the Vagrantfile syncs to the guest. Filled
# from the host's module cache first, then the module proxy.
gomod() {
	local go hostcache proxy
	go=$(host_go)
	hostcache=$(GOTOOLCHAIN=local "$go" env GOMODCACHE)
	proxy=$(GOTOOLCHAIN=local "$go" env GOPROXY)
	mkdir -p "$FABRICLAB_GOMODCACHE"
	say "module cache for the guest: $FABRICLAB_GOMODCACHE (from $hostcache, then $proxy)"
	(
		export GOMODCACHE=$FABRICLAB_GOMODCACHE GOFLAGS=-modcacherw GOTOOLCHAIN=local
		export GOPROXY="file://$hostcache/cache/download,$proxy"
		"$go" mod download
		"$go" list -deps -test ./... github.com/onsi/ginkgo/v2/ginkgo >/dev/null
		cd deploy/k8s/manifestcheck
		"$go" mod download
		"$go" list -deps -test ./... >/dev/null
	) || die "could not gather the modules (above: which module, and why)"
	say "module cache: $(du -sh "$FABRICLAB_GOMODCACHE" | cut -f1)"
}

box_present() { vagrant box list 2>/dev/null | grep "^$BOX .*libvirt" >/dev/null; }

# --- box: a raw disk with one partition, debootstrapped, with grub, then qcow2 in a box file.
# No udev here: the partition's node comes from devtmpfs once the kernel knows the partitions (losetup
# -P, or partx -a where the loop driver does not scan), and root= is given by UUID because grub-mkconfig
# would otherwise write the loop device's name.
box() {
	need_root
	if box_present; then
		say "box $BOX (libvirt) already in \`vagrant box list\`: using it"
		return
	fi
	deps
	gomod
	local dir=$WORK/box img mnt loop part uuid goroot keysdir
	mkdir -p "$dir"
	img=$dir/box.img
	mnt=$dir/mnt
	goroot=$(toolchain_dir)
	keysdir=$(dirname "$(find /usr/share/rubygems-integration /usr/lib/ruby /opt/vagrant -path '*/keys/vagrant.pub' 2>/dev/null | head -1)")
	[ -f "$keysdir/vagrant.pub" ] || die "cannot find Vagrant's insecure public key (keys/vagrant.pub of the vagrant package)"

	# A build that was killed may have left its mounts and loop device: undo them first.
	for m in var/cache/apt/archives dev/pts dev proc sys ""; do umount "$mnt/$m" 2>/dev/null || true; done
	losetup -j "$img" 2>/dev/null | cut -d: -f1 | while read -r l; do losetup -d "$l"; done
	rm -f "$img"
	truncate -s 20G "$img"
	echo 'start=2048, type=83, bootable' | sfdisk -q "$img"
	loop=$(losetup -f --show -P "$img")
	part=${loop}p1
	cleanup_box() {
		set +e
		for m in var/cache/apt/archives dev/pts dev proc sys; do umount "$mnt/$m" 2>/dev/null; done
		umount "$mnt" 2>/dev/null
		losetup -d "$loop" 2>/dev/null
	}
	trap cleanup_box EXIT
	trap 'exit 1' INT TERM # so that the EXIT trap runs
	[ -b "$part" ] || partx -a "$loop" 2>/dev/null || true
	for _ in $(seq 1 20); do [ -b "$part" ] && break; sleep 0.2; done
	if [ ! -b "$part" ] && [ -r "/sys/block/${loop#/dev/}/${loop#/dev/}p1/dev" ]; then
		mknod "$part" b $(tr ':' ' ' <"/sys/block/${loop#/dev/}/${loop#/dev/}p1/dev")
	fi
	[ -b "$part" ] || die "the loop device's partition $part did not appear"
	mkfs.ext4 -q -L fabriclab-root "$part"
	uuid=$(blkid -s UUID -o value "$part")
	mkdir -p "$mnt"
	mount "$part" "$mnt"

	say "debootstrap bookworm from $MIRROR"
	mkdir -p "$WORK/debs" "$WORK/apt-archives/partial"
	debootstrap --variant=minbase --cache-dir="$WORK/debs" \
		--include=systemd-sysv,udev,kmod,ifupdown,isc-dhcp-client,iproute2,openssh-server,sudo,rsync,ca-certificates,procps,netbase,less \
		bookworm "$mnt" "$MIRROR"
	mount --bind /dev "$mnt/dev"
	mount --bind /dev/pts "$mnt/dev/pts"
	mount -t proc proc "$mnt/proc"
	mount -t sysfs sys "$mnt/sys"
	# The packages' files are kept on the host for the next build (debootstrap's are, by --cache-dir).
	mount --bind "$WORK/apt-archives" "$mnt/var/cache/apt/archives"
	cp /etc/resolv.conf "$mnt/etc/resolv.conf"
	in_root() { chroot "$mnt" env -i HOME=/root PATH=/usr/local/go/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

	# What scripts/provision.sh would install (so it finds it all present), the Docker engine for the
	# cluster suite, gcc for cgo (the race detector), the kernel and grub.
	cat >"$mnt/etc/apt/sources.list" <<-EOF
		deb $MIRROR bookworm main
		deb $MIRROR bookworm-updates main
	EOF
	say "installing the kernel, grub and what the suites use"
	in_root apt-get update -q
	# Every package that brings an initramfs hook (the kernel, udev, kmod, e2fsprogs, ...) would make the
	# initramfs again (three times in one build): update-initramfs is diverted to true while apt runs,
	# and the initramfs is made once afterwards.
	in_root dpkg-divert --local --rename --divert /usr/sbin/update-initramfs.fabriclab --add /usr/sbin/update-initramfs
	ln -sf /bin/true "$mnt/usr/sbin/update-initramfs"
	in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		linux-image-amd64 grub-pc initramfs-tools e2fsprogs \
		ethtool git tshark python3 graphviz iputils-ping iperf3 docker.io gcc libc6-dev
	umount "$mnt/var/cache/apt/archives"
	rm -f "$mnt/usr/sbin/update-initramfs"
	in_root dpkg-divert --local --rename --remove /usr/sbin/update-initramfs

	# Docker's own bridge and the networks it numbers itself would come from a private range; the
	# guest's take a corner of 198.19.0.0/16 that the cluster suite's networks (198.19.128.0/17) and the
	# management network do not use.
	mkdir -p "$mnt/etc/docker"
	cat >"$mnt/etc/docker/daemon.json" <<-EOF
		{"bip": "198.19.120.1/24", "default-address-pools": [{"base": "198.19.96.0/20", "size": 24}]}
	EOF

	say "configuring: vagrant user, network, ssh, fstab, grub (root=UUID=$uuid)"
	echo fabriclab >"$mnt/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 fabriclab\n' >"$mnt/etc/hosts"
	echo "UUID=$uuid / ext4 errors=remount-ro 0 1" >"$mnt/etc/fstab"
	printf 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet dhcp\n' >"$mnt/etc/network/interfaces"
	echo 'UseDNS no' >"$mnt/etc/ssh/sshd_config.d/vagrant.conf"
	in_root useradd -m -s /bin/bash -G sudo vagrant 2>/dev/null || true
	echo vagrant:vagrant | in_root chpasswd
	echo 'vagrant ALL=(ALL) NOPASSWD: ALL' >"$mnt/etc/sudoers.d/vagrant"
	chmod 0440 "$mnt/etc/sudoers.d/vagrant"
	install -d -m 0700 "$mnt/home/vagrant/.ssh"
	cat "$keysdir"/*.pub >"$mnt/home/vagrant/.ssh/authorized_keys"
	chmod 0600 "$mnt/home/vagrant/.ssh/authorized_keys"
	in_root chown -R vagrant:vagrant /home/vagrant/.ssh
	# DCTCP for kernel-tcp hosts (host.cc: dctcp): the module is in Debian's kernel; load it at boot so
	# tcp_available_congestion_control lists it.
	echo tcp_dctcp >"$mnt/etc/modules-load.d/fabriclab.conf"
	# No network in the guest: nothing at boot should wait for it or for apt.
	in_root systemctl disable apt-daily.timer apt-daily-upgrade.timer >/dev/null 2>&1 || true
	rm -f "$mnt/etc/resolv.conf"

	local kver
	kver=$(basename "$(ls "$mnt"/boot/vmlinuz-* | sort -V | tail -1)" | sed 's/^vmlinuz-//')
	say "the initramfs for $kver (once)"
	in_root update-initramfs -c -k "$kver"
	cat >"$mnt/etc/default/grub" <<-EOF
		GRUB_DEFAULT=0
		GRUB_TIMEOUT=1
		GRUB_DISTRIBUTOR=Debian
		GRUB_CMDLINE_LINUX="console=tty0 console=ttyS0,115200 net.ifnames=0 biosdevname=0"
		GRUB_TERMINAL="console serial"
	EOF
	in_root grub-install --target=i386-pc --modules="part_msdos ext2" "$loop"
	cat >"$mnt/boot/grub/grub.cfg" <<-EOF
		set default=0
		set timeout=1
		serial --unit=0 --speed=115200
		terminal_input console serial
		terminal_output console serial
		insmod part_msdos
		insmod ext2
		search --no-floppy --fs-uuid --set=root $uuid
		menuentry 'Debian GNU/Linux (fabriclab box)' {
			linux /boot/vmlinuz-$kver root=UUID=$uuid ro console=tty0 console=ttyS0,115200 net.ifnames=0 biosdevname=0
			initrd /boot/initrd.img-$kver
		}
	EOF

	say "Go $(gomod_go) from $goroot; module cache at $GUEST_GOMODCACHE; GOPROXY=off, GOTOOLCHAIN=local"
	rm -rf "$mnt/usr/local/go"
	cp -a "$goroot" "$mnt/usr/local/go"
	chmod -R u+w "$mnt/usr/local/go"
	ln -sf /usr/local/go/bin/go "$mnt/usr/local/bin/go"
	ln -sf /usr/local/go/bin/gofmt "$mnt/usr/local/bin/gofmt"
	# The toolchain's own defaults (GOROOT/go.env) hold for every user and every sudo, login shell or
	# not: the guest has no network, so the go command must never try the proxy or another toolchain.
	# The file's first line for a key wins (go.env already says GOPROXY=https://proxy.golang.org,direct
	# and GOTOOLCHAIN=auto), so the toolchain's own lines for these keys go before ours are added.
	sed -i -E '/^(GOPROXY|GOTOOLCHAIN|GOMODCACHE|GOFLAGS)=/d' "$mnt/usr/local/go/go.env"
	cat >>"$mnt/usr/local/go/go.env" <<-EOF

		# fabriclab box: no network in the guest; modules come from the synced cache (scripts/vm.sh).
		GOPROXY=off
		GOTOOLCHAIN=local
		GOMODCACHE=$GUEST_GOMODCACHE
		GOFLAGS=-modcacherw
	EOF
	mkdir -p "$mnt$GUEST_GOMODCACHE"
	rsync -a --delete "$FABRICLAB_GOMODCACHE/" "$mnt$GUEST_GOMODCACHE/"

	# Fill the Go build cache where the guest will use it (same paths, same compiler, same C compiler):
	# under TCG compiling the tree and its modules takes most of an hour, natively here a few minutes.
	# Everything the test command compiles: vet, tests, -race, fuzz targets, the suites, the docs
	# suite's -trimpath builds (trimpath changes every package's cache key), the cluster suite's image
	# (scripts/image.sh: CGO_ENABLED=0 changes package net's files, and so the key of everything above
	# it), and junitskips through go run (whose executable the go command caches).
	say "warming the guest's Go build cache with this tree at /fabriclab (chroot, native speed)"
	mkdir -p "$mnt/fabriclab"
	rsync -a --delete --exclude=/bin/ --exclude=/out/ --exclude=/runs/ --exclude="/$RESULTS/" ./ "$mnt/fabriclab/"
	in_root git config --system --add safe.directory /fabriclab
	# A git worktree's .git names a directory the chroot lacks, and the go command's VCS stamping then
	# fails every main package's build: a repository of its own, as guest_test makes in the VM.
	if [ -f "$mnt/fabriclab/.git" ]; then
		in_root sh -c 'cd /fabriclab && rm .git && git init -q && git add -A &&
			git -c user.name=vm -c user.email=vm@localhost commit -qm "the tree synced from a git worktree"'
	fi
	in_root bash -c 'cd /fabriclab && set -x &&
		go install github.com/onsi/ginkgo/v2/ginkgo && ln -sf /root/go/bin/ginkgo /usr/local/bin/ginkgo &&
		go build ./... && go vet ./... &&
		go test -count=1 -run "^$" -exec /bin/true ./... &&
		go test -race -count=1 -run "^$" -exec /bin/true ./clock/... ./egress/... ./switchsw/... ./nodes/... ./wire/... ./harness/virtual/... &&
		{ go run ./tools/junitskips >/dev/null 2>&1 || true; } &&
		GOFLAGS=-trimpath go build ./... &&
		CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /dev/null ./cmd/lab &&
		ginkgo build -r ./suites >/dev/null && find suites -name "*.test" -type f -delete &&
		for d in $(grep -rl --include="*_test.go" "^func Fuzz" . | xargs -n1 dirname | sort -u); do
			go test -c -fuzz=. -o /tmp/fuzz.test "$d" || exit 1
		done && rm -f /tmp/fuzz.test &&
		(cd deploy/k8s/manifestcheck && go vet . && go test -count=1 -run "^$" -exec /bin/true .)' ||
		say "warning: warming the build cache failed part way (the VM compiles the rest itself)"
	in_root chown -R vagrant:vagrant /fabriclab
	say "box size: $(du -sh --exclude=proc --exclude=sys --exclude=dev "$mnt" 2>/dev/null | cut -f1)"

	cleanup_box
	trap - EXIT INT TERM
	say "converting to qcow2 and adding the box"
	qemu-img convert -O qcow2 "$img" "$dir/box.qcow2"
	rm -f "$img"
	(
		cd "$dir"
		mv box.qcow2 box.img
		printf '{"provider":"libvirt","format":"qcow2","virtual_size":20}\n' >metadata.json
		cat >Vagrantfile <<-'EOF'
			Vagrant.configure("2") do |config|
			  config.vm.provider :libvirt do |lv|
			    lv.disk_bus = "virtio"
			  end
			end
		EOF
		tar -cf box.box metadata.json Vagrantfile box.img
		rm -f box.img
	)
	vagrant box add --force --name "$BOX" "$dir/box.box"
	rm -f "$dir/box.box"
}

# --- phases: each one's wall time and the load average before and after, for docs/vm.md.
phase() {
	local name=$1 start end rc=0
	shift
	mkdir -p "$RESULTS"
	start=$(date +%s)
	local load0
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	say "phase $name: start ($(date -u +%H:%M:%S) UTC, load $load0)"
	"$@" || rc=$?
	end=$(date +%s)
	printf '%-10s %6ss  rc=%s  load before %s, after %s  (%s UTC)\n' "$name" $((end - start)) "$rc" \
		"$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(date -u -d @"$start" +%H:%M:%S)" | tee -a "$RESULTS/phases.txt" >&2
	return $rc
}

vagrant_up() { vagrant up --provider=libvirt --no-provision; }
vagrant_provision() { vagrant provision --provision-with provision; }

up() {
	need_root
	deps
	box_present || phase box box
	phase gomod gomod
	phase up vagrant_up
	phase provision vagrant_provision
}

# The test command as root in the VM. The JUnit file and a log of everything come out to $RESULTS.
guest_test() {
	local labels=$1 rc=0
	# A git worktree's .git is a file naming a directory on the host, which the VM lacks: git, and so
	# gofmt's file list and the suites' VCS-stamped builds, would fail there. Give the VM's copy a
	# repository of its own holding the tree as synced.
	if [ -f .git ]; then
		say "this tree is a git worktree: making /fabriclab a repository of its own in the VM"
		vagrant ssh -c "sudo sh -c 'cd /fabriclab && if [ -f .git ]; then rm .git && git init -q && git add -A &&
			git -c user.name=vm -c user.email=vm@localhost commit -qm \"the tree synced from a git worktree\"; fi'"
	fi
	# Under QEMU's emulator the whole test command takes hours (10-25 times its native 9 minutes): by
	# default the VM runs what proves the machine (formatting, vet, the unit tests, the manifests, the
	# suites) and leaves the race detector and the fuzz targets, which prove the code and run the same
	# on any host, to STEPS=all (or a list: STEPS=race,fuzz).
	local steps=${STEPS-gofmt,vet,unit,unit_harness,k8s,ginkgo}
	[ "$steps" = all ] && steps=
	say "the test command in the VM: labels '$labels', steps ${steps:-all}"
	# The test command's hang bounds (go test's 10 minutes a package, 40 minutes for all the suites) are
	# sized for a native machine; under TCG lab/bound alone took 6 minutes and the cluster suite 15.
	vagrant ssh -c "cd /fabriclab && sudo TEST_RESULTS_DIR=/fabriclab/test-results STEPS='$steps' \
		FABRICLAB_GO_TEST_TIMEOUT=${FABRICLAB_GO_TEST_TIMEOUT:-90m} FABRICLAB_SUITE_TIMEOUT=${FABRICLAB_SUITE_TIMEOUT:-6h} \
		bash scripts/test.sh '$labels' 2>&1" \
		| tee "$RESULTS/test.log" || rc=$?
	vagrant ssh-config >"$WORK/ssh-config"
	rsync -a -e "ssh -F $WORK/ssh-config" --rsync-path="sudo rsync" default:/fabriclab/test-results/ "$RESULTS/" ||
		say "could not copy /fabriclab/test-results out of the VM"
	vagrant ssh -c 'uname -r; cat /proc/sys/net/ipv4/tcp_available_congestion_control; nproc; uptime' >"$RESULTS/guest.txt" 2>&1 || true
	return $rc
}

test_() {
	local labels=${1:-smoke || vm}
	need_root
	mkdir -p "$RESULTS"
	: >"$RESULTS/phases.txt"
	say "results go to $RESULTS/ (phases.txt: time and load of each phase)"
	up
	phase test guest_test "$labels"
}

destroy() {
	need_root
	command -v vagrant >/dev/null || { say "no vagrant: nothing to destroy"; return; }
	virsh version >/dev/null 2>&1 || deps
	vagrant destroy -f || true
	# What vagrant-libvirt may leave: the box's image uploaded to the pool, a domain or volume of a VM
	# whose .vagrant state was lost, the management network.
	local name
	# fabriclabdefault: the name before the Vagrantfile's prefix had its underscore.
	for name in $(virsh list --all --name | grep -E '^fabriclab_?default$' || true); do
		virsh destroy "$name" >/dev/null 2>&1 || true
		virsh undefine "$name" --remove-all-storage >/dev/null 2>&1 || virsh undefine "$name" >/dev/null || true
	done
	for name in $(virsh vol-list default 2>/dev/null | awk 'NR>2 && $1!=""{print $1}' |
		grep -E -e '^fabriclab_?default' -e '^debian-VAGRANTSLASH-bookworm64' || true); do
		virsh vol-delete "$name" --pool default >/dev/null && say "removed volume $name"
	done
	if virsh net-info "$FABRICLAB_VM_NET" >/dev/null 2>&1; then
		virsh net-destroy "$FABRICLAB_VM_NET" >/dev/null 2>&1 || true
		virsh net-undefine "$FABRICLAB_VM_NET" >/dev/null && say "removed network $FABRICLAB_VM_NET"
	fi
	say "left: domains [$(virsh list --all --name | grep -c -E '^fabriclab_?default$' || true)]," \
		"volumes [$(virsh vol-list default 2>/dev/null | grep -c -E -e '^ *fabriclab_?default' -e bookworm64 || true)]," \
		"network $FABRICLAB_VM_NET [$(virsh net-list --all --name | grep -c "^$FABRICLAB_VM_NET\$" || true)]"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
deps) deps ;;
box) box ;;
gomod) gomod ;;
up) up ;;
test) test_ "$@" ;;
ssh) vagrant ssh ;;
destroy) phase destroy destroy ;;
*) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
