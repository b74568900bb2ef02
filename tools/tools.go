//go:build tools

// Package tools pins the modules the packages are about to use, so that parallel work does not race on go.mod.
package tools

import (
	_ "github.com/containernetworking/plugins/pkg/ns"
	_ "github.com/gopacket/gopacket/layers"
	_ "github.com/gopacket/gopacket/pcapgo"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/vishvananda/netlink"
	_ "github.com/vishvananda/netns"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/gonum/graph/simple"
	_ "gonum.org/v1/gonum/optimize/convex/lp"
	_ "gonum.org/v1/plot"
)
