package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fabriclab/fabriclab/harness/bench"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
)

func init() {
	var (
		size     int
		dur      time.Duration
		dilation float64
		mtu      int
		n        int
		flowSize string
		cc       string
		skipTCP  bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "measure the netns substrate: Go switch vs Linux bridge frames/s, kernel TCP goodput on NDC(n,1)",
		Long: `Measure this machine's netns substrate (needs root; creates and removes labs named bench and benchndc):

 1. frames/s through one Go switch (the switchsw engine on AF_PACKET ports) versus a Linux bridge on the
    same veths, in one run: a sendmmsg generator floods UDP frames, the receiver counts them.
 2. kernel TCP goodput on NDC(n,1) with Go switches at the given dilation: one flow per host to its
    neighbour on the same level-0 switch (every host sends and receives once), 100 Gb/s links / D.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.OutOrStdout()
			fr, err := bench.FramesPerSecond(ctx, bench.FramesOptions{Lab: "bench", Size: size, Duration: dur})
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "frames/s (%d B frames, %v each, counted at the receiver):\n", fr.Size, dur)
			fmt.Fprintf(w, "  linux bridge  %10.0f  (offered %.0f)\n", fr.BridgeFPS, fr.BridgeOffered)
			fmt.Fprintf(w, "  Go switch     %10.0f  (offered %.0f, malformed %d)\n", fr.SwitchFPS, fr.SwitchOffered, fr.Forwarder.Malformed)
			fmt.Fprintf(w, "  ratio Go/bridge %.3f\n", fr.Ratio)
			if skipTCP {
				return nil
			}
			l, err := ndcLab(n, dilation, mtu, cc, flowSize)
			if err != nil {
				return err
			}
			kr, err := bench.RunKernel(ctx, "benchndc", l)
			if err != nil {
				return err
			}
			var sum float64
			done := 0
			for i, f := range kr.Flows {
				if f.Completed {
					done++
					sum += kr.GoodputBps[i]
				}
			}
			fmt.Fprintf(w, "kernel TCP (%s) on NDC(%d,1), %d flows of %s, MTU %d, dilation %g: links %.4g Mb/s\n",
				cc, n, len(kr.Flows), flowSize, mtu, kr.Dilation, kr.LinkBps/1e6)
			if done > 0 {
				avg := sum / float64(done)
				fmt.Fprintf(w, "  per-flow goodput avg %.4g Mb/s = %.3f of the link; aggregate %.4g Mb/s; %d/%d completed\n",
					avg/1e6, avg/kr.LinkBps, kr.AggregateBp/1e6, done, len(kr.Flows))
			}
			ok, why := kr.Forwarder.Faithful(kr.LinkBps, mtu+14)
			fmt.Fprintf(w, "  forwarder: %d frames in, %d out, timer lag mean %v max %v, faithful %v %s\n",
				kr.Forwarder.Rx, kr.Forwarder.Tx, kr.Forwarder.Lag.Mean(), kr.Forwarder.Lag.Max, ok, why)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&size, "size", 64, "frame size in bytes for the frames/s comparison (60-1514)")
	f.DurationVar(&dur, "duration", 2*time.Second, "length of each frames/s measurement")
	f.Float64Var(&dilation, "dilation", 1000, "time dilation D for the TCP run (100 Gb/s links run at 100/D Gb/s)")
	f.IntVar(&mtu, "mtu", 9000, "interface MTU of the TCP run")
	f.IntVar(&n, "n", 4, "NDC(n,1) size for the TCP run")
	f.StringVar(&flowSize, "flow-size", "10MB", "bytes per TCP flow")
	f.StringVar(&cc, "cc", "cubic", "TCP congestion control (cubic, dctcp, ...)")
	f.BoolVar(&skipTCP, "frames-only", false, "only the frames/s comparison")
	root.AddCommand(cmd)
}

// ndcLab is NDC(n,1) with kernel hosts and one flow per host to the next host on its level-0 switch.
func ndcLab(n int, d float64, mtu int, cc, size string) (*lab.Lab, error) {
	if n < 2 {
		return nil, fmt.Errorf("--n: NDC(%d,1) has no host pairs; use n >= 2", n)
	}
	y := fmt.Sprintf(`name: benchndc
backend: netns
dilation: %g
topology: {family: ndc, n: %d, k: 1, link: {rate: 100Gbps, delay: 1us}}
switch: {buffer: 4MB, flow_control: lossy}
host: {transport: kernel-tcp, cc: %s, mtu: %d}
routing: {algorithm: shortest}
duration: 1s
workload:
  - kind: flows
    list:
`, d, n, cc, mtu)
	for g := 0; g < n; g++ {
		for i := 0; i < n; i++ {
			y += fmt.Sprintf("      - {src: h%d, dst: h%d, size: %s, at: 0s}\n", g*n+i, g*n+(i+1)%n, size)
		}
	}
	s, err := spec.Parse([]byte(y))
	if err != nil {
		return nil, err
	}
	return lab.Build(s)
}
