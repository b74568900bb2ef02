package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/fabriclab/fabriclab/units"
	"github.com/spf13/cobra"
)

// lab flow: a TCP flow and round trips between two hosts of a live lab, with nothing but the lab
// binary. An agent container is that binary alone (no ping, no iperf3), and `lab exec` on a machine
// runs `lab` as the server's own binary, so `lab exec LAB h5 -- lab flow serve` and `lab exec LAB h0
// -- lab flow send h5` work on any machine of a lab. The server counts what it read and sends the
// count back, so the sender's time covers the last byte's arrival (a flow completion time).

const (
	flowPing = 'P' // echo every byte back until EOF
	flowData = 'D' // read to EOF, answer with the 8-byte count
)

func init() {
	flow := &cobra.Command{Use: "flow", Short: "A TCP flow and round trips between hosts of a live lab, with only the lab binary (run it with lab exec)"}
	var port, count, pings int
	var size string
	serve := &cobra.Command{
		Use:   "serve [--port P] [--count N]",
		Short: "Accept flows (and round-trip probes) on --port until --count flows have been received",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
			if err != nil {
				return err
			}
			defer ln.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "flow server listening on :%d\n", port)
			for n := 0; count <= 0 || n < count; {
				c, err := ln.Accept()
				if err != nil {
					return err
				}
				if flowServe(cmd.OutOrStdout(), c) {
					n++
				}
			}
			return nil
		},
	}
	serve.Flags().IntVarP(&port, "port", "p", 5301, "TCP port")
	serve.Flags().IntVarP(&count, "count", "c", 1, "flows to receive before exiting (0: forever)")
	send := &cobra.Command{
		Use:   "send HOST [--size BYTES] [--pings N] [--port P]",
		Short: "Measure round trips to HOST's flow server, then send it one flow of --size bytes and time it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := units.ParseBytes(size)
			if err != nil || n <= 0 {
				return usage(fmt.Errorf("--size %q: want a size such as 2MB", size))
			}
			addr := net.JoinHostPort(args[0], strconv.Itoa(port))
			out := cmd.OutOrStdout()
			if pings > 0 {
				rtts, err := flowPings(addr, pings)
				if err != nil {
					return err
				}
				slices.Sort(rtts)
				var sum time.Duration
				for _, r := range rtts {
					sum += r
				}
				fmt.Fprintf(out, "rtt min/avg/max %.3f/%.3f/%.3f ms (%d round trips of 1 byte over TCP)\n", ms(rtts[0]),
					ms(sum/time.Duration(len(rtts))), ms(rtts[len(rtts)-1]), len(rtts))
			}
			d, err := flowSend(addr, n)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "flow %s to %s in %.3f s: %.2f Mb/s (from connect to the receiver's count of the last byte)\n",
				units.FormatBytes(n), args[0], d.Seconds(), float64(n)*8/d.Seconds()/1e6)
			return nil
		},
	}
	send.Flags().IntVarP(&port, "port", "p", 5301, "the server's TCP port")
	send.Flags().StringVarP(&size, "size", "s", "1MB", "bytes to send")
	send.Flags().IntVar(&pings, "pings", 5, "1-byte round trips to time first (0: none)")
	flow.AddCommand(serve, send)
	root.AddCommand(flow)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// flowServe answers one connection; it says whether it was a flow (not a round-trip probe).
func flowServe(w io.Writer, c net.Conn) bool {
	defer c.Close()
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		return false
	}
	if kind[0] == flowPing {
		c.(*net.TCPConn).SetNoDelay(true)
		io.Copy(c, c)
		return false
	}
	t0 := time.Now()
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		fmt.Fprintf(w, "flow from %s: %v after %d bytes\n", c.RemoteAddr(), err, n)
		return true
	}
	binary.Write(c, binary.BigEndian, uint64(n))
	d := time.Since(t0)
	fmt.Fprintf(w, "flow from %s: %s in %.3f s (%.2f Mb/s)\n", c.RemoteAddr(), units.FormatBytes(n), d.Seconds(), float64(n)*8/d.Seconds()/1e6)
	return true
}

func flowPings(addr string, n int) ([]time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	c.SetDeadline(time.Now().Add(time.Duration(n)*5*time.Second + 10*time.Second))
	if _, err := c.Write([]byte{flowPing}); err != nil {
		return nil, err
	}
	var rtts []time.Duration
	b := []byte{0}
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(t0))
	}
	return rtts, nil
}

func flowSend(addr string, n int64) (time.Duration, error) {
	t0 := time.Now()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte{flowData}); err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for left := n; left > 0; {
		k := min(left, int64(len(buf)))
		if _, err := c.Write(buf[:k]); err != nil {
			return 0, err
		}
		left -= k
	}
	c.(*net.TCPConn).CloseWrite()
	var got uint64
	if err := binary.Read(c, binary.BigEndian, &got); err != nil {
		return 0, fmt.Errorf("no count from the receiver: %w", err)
	}
	d := time.Since(t0)
	if got != uint64(n) {
		return d, errors.New("the receiver counted " + strconv.FormatUint(got, 10) + " bytes, not " + strconv.FormatInt(n, 10))
	}
	return d, nil
}
