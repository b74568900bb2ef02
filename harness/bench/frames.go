// Package bench measures the netns substrate and the agent: frame-hops per CPU-second and pace of the
// agents on a fabric (`lab bench`), frames per second through the agent's Go switch against a Linux
// bridge and kernel forwarding on the same veths, and kernel-TCP runs through the agents as `lab run`
// makes them (suites/kernel).
package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fabriclab/fabriclab/harness/liveagent"
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/harness/portio"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/lab/topo"
	"github.com/fabriclab/fabriclab/wire"
)

// FramesOptions tune FramesPerSecond. The zero value means defaults.
type FramesOptions struct {
	Lab      string        // lab name (default "bench")
	Size     int           // frame bytes without FCS (default 64; at least 60)
	Duration time.Duration // per measurement (default 2 s)
}

// FramesResult compares one forwarding device between two veths: the kernel's bridge, the kernel's IPv4
// forwarding and the agent's Go switch.
type FramesResult struct {
	Size                            int
	BridgeFPS, RouterFPS, SwitchFPS float64 // frames/s counted at the receiver
	BridgeOffered                   float64 // frames/s the generator wrote during the bridge run
	RouterOffered, SwitchOffered    float64
	Ratio                           float64 // SwitchFPS / BridgeFPS
	// Frames received per CPU-second of the whole path: the generator's and the receiver's threads
	// (the kernel's forwarding runs in the generator's softirq) and, for the Go switch, the agent process.
	BridgePerCPU, RouterPerCPU, SwitchPerCPU float64
	// The agent's own counters of s0 (lab inspect's): frames it read, frames that did not decode, and
	// frames its switch dropped.
	SwitchRx, Malformed, SwitchDrops uint64
	// Where the Go switch's frames went, when a run needs explaining: frames its engine sent onto the
	// link toward h1, frames the kernel counted leaving s0's veth toward h1 and arriving at h1's end
	// (and dropped there), over the switch run.
	SwitchTx, WireTx, SinkRx, SinkDropped uint64
	KernelFull                            uint64 // frames the agent's sockets refused (lab inspect)
	Datapath                              string // the agent's data path
}

// framesLab is h0 - s0 - h1 as a live lab: kernel-stack hosts, so the agent hosts s0 alone, and
// dilation 1, so s0's 100 Gb/s ports never pace the flood (the 1 us cables stay: the agent applies a
// kernel host's uplink delay on arrival, as in every live lab). The graph goes to the spec through a
// topology file (switch-centric: NDC(2,0) would make the hosts relays in the agent).
func framesLab(name string) (*lab.Lab, error) {
	b := topo.NewBuilder("bench", nil, 100e9, clock.Microsecond)
	h0, h1, s0 := b.AddHost(), b.AddHost(), b.AddSwitch()
	b.Connect(h0, s0)
	b.Connect(h1, s0)
	js, err := b.G.MarshalJSON()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fabriclab-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "topology.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		return nil, err
	}
	s, err := spec.Parse([]byte(fmt.Sprintf(`name: %s
backend: netns
dilation: 1
topology: {family: file, path: %q}
switch: {buffer: 4MB, flow_control: lossy}
host: {transport: kernel-tcp, mtu: %d}
routing: {algorithm: shortest}
duration: 1s
`, name, path, nslink.DefaultMTU)))
	if err != nil {
		return nil, err
	}
	return lab.Build(s)
}

// FramesPerSecond measures, in one lab (h0 - s0 - h1), how many frames per second reach h1 when a
// sendmmsg generator on h0 floods UDP frames through s0: with s0 a Linux bridge, then a kernel IPv4
// router, then the agent that `lab run` and `lab up` use, hosting s0's switch engine on the same veths.
// The lab is torn down before it returns.
func FramesPerSecond(ctx context.Context, o FramesOptions) (res *FramesResult, err error) {
	if o.Lab == "" {
		o.Lab = "bench"
	}
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Size < 60 || o.Size > nslink.DefaultMTU+14 {
		return nil, fmt.Errorf("size: %d bytes outside [60, %d]", o.Size, nslink.DefaultMTU+14)
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	ll, err := framesLab(o.Lab)
	if err != nil {
		return nil, err
	}
	l, err := nslink.Up(ctx, o.Lab, ll.Graph, nslink.Options{MTU: netns.LabMTU(ll)})
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := nslink.Down(o.Lab); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	gen, err := portio.OpenPacketPort(l.NSPath("h0"), "p0", 0)
	if err != nil {
		return nil, err
	}
	defer gen.Close()
	sink, err := portio.OpenPacketPort(l.NSPath("h1"), "p0", 0)
	if err != nil {
		return nil, err
	}
	defer sink.Close()
	frame := udpFrame(0, 1, o.Size)
	res = &FramesResult{Size: o.Size}
	nl, err := l.Handle("s0")
	if err != nil {
		return nil, err
	}
	defer nl.Close()
	bl, err := bridgeRun(ctx, nl, gen, sink, frame, o.Duration)
	if err != nil {
		return nil, fmt.Errorf("bridge run: %w", err)
	}
	res.BridgeOffered, res.BridgeFPS, res.BridgePerCPU = bl.offered, bl.got, bl.perCPU(0)
	rt, err := routerRun(ctx, l, nl, gen, sink, o)
	if err != nil {
		return nil, fmt.Errorf("kernel forwarding run: %w", err)
	}
	res.RouterOffered, res.RouterFPS, res.RouterPerCPU = rt.offered, rt.got, rt.perCPU(0)
	sw, agentCPU, err := switchRun(ctx, ll, l, gen, sink, frame, o.Duration, res)
	if err != nil {
		return nil, fmt.Errorf("Go switch run: %w", err)
	}
	res.SwitchOffered, res.SwitchFPS, res.SwitchPerCPU = sw.offered, sw.got, sw.perCPU(agentCPU)
	if res.BridgeFPS > 0 {
		res.Ratio = res.SwitchFPS / res.BridgeFPS
	}
	return res, nil
}

// bridgeRun measures s0 as a Linux bridge of its two ports, made inside s0's namespace (ours) and
// removed again before the next device takes the ports.
func bridgeRun(ctx context.Context, nl *netlink.Handle, gen, sink *portio.PacketPort, frame []byte, d time.Duration) (blasted, error) {
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
	if err := nl.LinkAdd(br); err != nil {
		return blasted{}, fmt.Errorf("bridge in s0: %w", err)
	}
	for _, p := range []string{"p0", "p1"} {
		lk, err := nl.LinkByName(p)
		if err == nil {
			err = nl.LinkSetMaster(lk, br)
		}
		if err != nil {
			return blasted{}, fmt.Errorf("bridge port %s: %w", p, err)
		}
	}
	if err := nl.LinkSetUp(br); err != nil {
		return blasted{}, err
	}
	bl, err := blast(ctx, gen, sink, frame, d)
	if err != nil {
		return blasted{}, err
	}
	if err := nl.LinkDel(br); err != nil {
		return blasted{}, fmt.Errorf("remove bridge: %w", err)
	}
	return bl, nil
}

// switchRun measures s0 as the agent's switch: the agent process a live lab runs (liveagent.StartLive),
// hosting s0's engine on the same veths. It returns the blast, the agent's CPU over the blast's
// window (every thread, the kernel work its sends do included) and fills in the agent's counters.
func switchRun(ctx context.Context, ll *lab.Lab, l *nslink.Lab, gen, sink *portio.PacketPort, frame []byte, d time.Duration, res *FramesResult) (blasted, time.Duration, error) {
	lv, err := liveagent.StartLive(ctx, ll, l)
	if err != nil {
		return blasted{}, 0, err
	}
	defer lv.Stop()
	wire0, sink0 := vethStats(l, "s0", "p1"), vethStats(l, "h1", "p0")
	c0, err := processCPU(lv.Pid())
	if err != nil {
		return blasted{}, 0, err
	}
	sw, err := blast(ctx, gen, sink, frame, d)
	c1, cerr := processCPU(lv.Pid())
	if err = errors.Join(err, cerr); err != nil {
		return blasted{}, 0, err
	}
	wire1, sink1 := vethStats(l, "s0", "p1"), vethStats(l, "h1", "p0")
	res.WireTx, res.SinkRx, res.SinkDropped = wire1.TxPackets-wire0.TxPackets, sink1.RxPackets-sink0.RxPackets, sink1.RxDropped-sink0.RxDropped
	in, err := lv.Request(lockstep.LiveMsg{Op: "inspect"})
	if err != nil {
		return blasted{}, 0, err
	}
	res.KernelFull, res.Datapath = in.KernelFull, in.Datapath
	for _, dev := range in.Devices {
		if dev.Name != "s0" {
			continue
		}
		res.SwitchRx, res.SwitchDrops = dev.RxFrames, dev.Drops
		for _, p := range dev.Ports {
			res.Malformed += p.Malformed
		}
		if len(dev.Ports) > 1 {
			res.SwitchTx = dev.Ports[1].TxFrames
		}
	}
	return sw, c1 - c0, nil
}

// vethStats are the kernel's counters of device dev's interface ifname (zero when they cannot be read:
// they only explain a run).
func vethStats(l *nslink.Lab, dev, ifname string) netlink.LinkStatistics {
	nl, err := l.Handle(dev)
	if err != nil {
		return netlink.LinkStatistics{}
	}
	defer nl.Close()
	lk, err := nl.LinkByName(ifname)
	if err != nil || lk.Attrs().Statistics == nil {
		return netlink.LinkStatistics{}
	}
	return netlink.LinkStatistics(*lk.Attrs().Statistics)
}

// processCPU is process pid's CPU so far: every thread's time on a CPU, the threads that have exited
// included. Summing /proc/PID/task/*/schedstat, as this did, reads only the threads alive at that
// moment: one that ran during the window and exited before its end (the Go runtime ends a thread whose
// goroutine exits locked; it starts threads for blocking system calls and drops them) took its CPU
// with it, and one alive at the start and gone at the end even had its earlier CPU subtracted. The
// process's CPU-time clock (clock_getcpuclockid(3): CPUCLOCK_SCHED of the thread group) counts the
// exited threads' run time as well, in nanoseconds; /proc/PID/stat's utime and stime count them too,
// but in 10 ms ticks, 1% of a 1 s blast.
func processCPU(pid int) (time.Duration, error) {
	if pid <= 0 || pid >= 1<<28 { // the clock id keeps 29 bits of ^pid and must stay negative
		return 0, fmt.Errorf("CPU time of process %d: not a process id", pid)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(processClock(pid), &ts); err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	return time.Duration(ts.Nano()), nil
}

// processClock is the clock id of process pid's CPU time (glibc's clock_getcpuclockid: the pid
// complemented, shifted left by 3, or CPUCLOCK_SCHED, 2: run time of the whole thread group).
func processClock(pid int) int32 {
	return int32(^uint32(pid)<<3 | 2)
}

// blasted is what one blast measured: frames/s offered and received over its window, frames received
// and the CPU of the generator's and receiver's threads over it.
type blasted struct {
	offered, got float64
	frames       uint64
	cpu          time.Duration
}

// perCPU is frames received per CPU-second of the generator, receiver and extra (the agent's).
func (b blasted) perCPU(extra time.Duration) float64 {
	if c := (b.cpu + extra).Seconds(); c > 0 {
		return float64(b.frames) / c
	}
	return 0
}

// threadCPU is the calling thread's CPU (user + system); the goroutine must be locked to it.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// blast floods frame from gen for d while counting arrivals at sink; it returns offered and received
// frames per second over the same window, and the two threads' CPU over it.
func blast(ctx context.Context, gen, sink *portio.PacketPort, frame []byte, d time.Duration) (res blasted, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	drain(sink)
	var stop atomic.Bool
	var rx atomic.Uint64
	var wg sync.WaitGroup
	var rerr error
	var sinkCPU time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0 := threadCPU()
		fds := []unix.PollFd{{Fd: int32(sink.Fd()), Events: unix.POLLIN}}
		for !stop.Load() {
			n, err := sink.Recv(func([]byte) {})
			if err != nil {
				rerr = err
				return
			}
			rx.Add(uint64(n))
			if n == 0 {
				unix.Poll(fds, 10)
			}
		}
		sinkCPU = threadCPU() - c0
	}()
	batch := make([][]byte, portio.PortBatch)
	for i := range batch {
		batch[i] = frame
	}
	// Let the receiver start, then count over exactly the window the generator runs.
	time.Sleep(10 * time.Millisecond)
	start, rx0, c0 := time.Now(), rx.Load(), threadCPU()
	var sent uint64
	for time.Since(start) < d && ctx.Err() == nil {
		n, serr := gen.Send(batch)
		sent += uint64(n)
		if serr != nil && !errors.Is(serr, portio.ErrPortFull) {
			err = serr
			break
		}
	}
	el := time.Since(start).Seconds()
	genCPU := threadCPU() - c0
	rxN := rx.Load() - rx0
	time.Sleep(20 * time.Millisecond) // frames in flight at the end are not counted: the window is closed
	stop.Store(true)
	wg.Wait()
	return blasted{offered: float64(sent) / el, got: float64(rxN) / el, frames: rxN, cpu: genCPU + sinkCPU},
		errors.Join(err, rerr, ctx.Err())
}

func drain(p *portio.PacketPort) {
	for {
		if n, err := p.Recv(func([]byte) {}); n == 0 || err != nil {
			return
		}
	}
}

// udpFrame is a size-byte Ethernet/IPv4/UDP frame from host src to host dst (lab addresses, UDP
// checksum 0, which IPv4 allows). It is not RoCEv2 (port 9, discard), so switches see pkt.IP.
func udpFrame(src, dst, size int) []byte {
	f := make([]byte, size)
	copy(f[0:], wire.HostMAC(dst))
	copy(f[6:], wire.HostMAC(src))
	binary.BigEndian.PutUint16(f[12:], wire.EtherTypeIPv4)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	s, d := wire.HostIP(src).As4(), wire.HostIP(dst).As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], 9)
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	return f
}

// routerRun measures s0 as a kernel IPv4 router between the same veths: forwarding on, a /32 route
// and a permanent neighbour for h1, and the generator's frames addressed to s0's p0 (the kernel routes
// only frames sent to its own MAC). Forwarding is turned off again before it returns.
func routerRun(ctx context.Context, l *nslink.Lab, nl *netlink.Handle, gen, sink *portio.PacketPort, o FramesOptions) (blasted, error) {
	forward := func(on string) error {
		return l.Do("s0", func() error {
			for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/conf/all/rp_filter", "/proc/sys/net/ipv4/conf/p0/rp_filter"} {
				v := on
				if f != "/proc/sys/net/ipv4/ip_forward" {
					v = "0"
				}
				if err := os.WriteFile(f, []byte(v), 0o644); err != nil {
					return err
				}
			}
			return nil
		})
	}
	p0, err := nl.LinkByName("p0")
	if err != nil {
		return blasted{}, err
	}
	p1, err := nl.LinkByName("p1")
	if err != nil {
		return blasted{}, err
	}
	h1 := wire.HostIP(1).AsSlice()
	for i, lk := range []netlink.Link{p0, p1} {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(198, 19, 255, byte(1+i)), Mask: net.CIDRMask(32, 32)}}
		if err := nl.AddrAdd(lk, a); err != nil {
			return blasted{}, fmt.Errorf("address on s0 %s: %w", lk.Attrs().Name, err)
		}
	}
	if err := nl.NeighAdd(&netlink.Neigh{LinkIndex: p1.Attrs().Index, IP: h1, HardwareAddr: wire.HostMAC(1),
		State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}); err != nil {
		return blasted{}, fmt.Errorf("neighbour h1 on s0: %w", err)
	}
	if err := nl.RouteAdd(&netlink.Route{LinkIndex: p1.Attrs().Index, Dst: &net.IPNet{IP: h1, Mask: net.CIDRMask(32, 32)}}); err != nil {
		return blasted{}, fmt.Errorf("route to h1 on s0: %w", err)
	}
	if err := forward("1"); err != nil {
		return blasted{}, fmt.Errorf("forwarding on in s0: %w", err)
	}
	frame := udpFrame(0, 1, o.Size)
	copy(frame[0:6], p0.Attrs().HardwareAddr)
	res, err := blast(ctx, gen, sink, frame, o.Duration)
	return res, errors.Join(err, forward("0"))
}
