package kernelhost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/records"
	"github.com/fabriclab/fabriclab/wire"
)

// Flow is one TCP transfer: Size bytes from host Src to host Dst, starting At after the run's epoch.
type Flow struct {
	ID       uint32
	Src, Dst int // host indices
	Size     int64
	At       time.Duration
	Ideal    clock.Time // standalone FCT, passed through to the record (0 if unknown)
	Class    string
}

// Options tune Run. The zero value means defaults.
type Options struct {
	// Device names host i's namespace device; default "h<i>".
	Device func(host int) string
	// Port is the receivers' TCP port (default 5201, iperf3's).
	Port uint16
	// Lead is how long after every connection is up the schedule's epoch lies (default 20 ms): flows
	// start on time instead of waiting for the setup of later ones.
	Lead time.Duration
	// Timeout bounds the whole run after the epoch (default 60 s + the last start).
	Timeout time.Duration
	// CC is set on every socket (TCP_CONGESTION), listeners included so accepted sockets inherit it
	// (DCTCP's receiver echoes CE differently from RFC 3168). Empty: the namespace default.
	CC string
	// Epoch, if non-zero, is the schedule's time zero as a CLOCK_MONOTONIC reading in nanoseconds,
	// shared with other processes (agents) of the same run. It must lie in the future once connections
	// are up; 0 picks now + Lead.
	Epoch int64
}

// Stat is what the sender's kernel says about a flow once it is done (TCP_INFO).
type Stat struct {
	ID          uint32
	Retransmits int64 // segments retransmitted (tcpi_total_retrans)
	DeliveredCE int64 // segments acknowledged with ECE: the receiver saw CE marks (tcpi_delivered_ce)
	Delivered   int64 // segments delivered (tcpi_delivered)
	CC          string
}

// Result is a run's outcome. Record times are nanoseconds-as-clock.Time after Epoch: real time, which
// on the netns backend is dilated engine time.
type Result struct {
	Epoch int64 // CLOCK_MONOTONIC ns
	Flows []records.Flow
	Stats []Stat
}

// Monotonic is CLOCK_MONOTONIC in nanoseconds: the time base every process of a run shares.
func Monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

const hdrLen = 16 // flow id (8), size (8): sent when the connection is made, before the clock starts

// Run makes one TCP connection per flow (before the epoch, so handshakes are not part of an FCT),
// then at each flow's start writes its bytes and closes; the receiver records the moment the last byte
// arrives. FCT = receiver's last byte - scheduled start, both on CLOCK_MONOTONIC. Sockets are created in
// their host's namespace (inside nslink.Lab.Do) and used from ordinary goroutines afterwards.
func Run(ctx context.Context, l *nslink.Lab, flows []Flow, opts Options) (*Result, error) {
	opts.setDefaults()
	last, err := checkFlows(flows)
	if err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60*time.Second + last
	}
	r := &run{opts: opts, flows: map[uint32]*Flow{}, done: map[uint32]int64{}, allIn: make(chan struct{})}
	for i := range flows {
		r.flows[flows[i].ID] = &flows[i]
	}
	defer r.closeAll()
	if err := r.listen(l, flows); err != nil {
		return nil, err
	}
	conns, err := r.dial(l, flows)
	if err != nil {
		return nil, err
	}
	if err := r.waitHeaders(ctx, len(flows)); err != nil {
		return nil, err
	}
	epoch := opts.Epoch
	if epoch == 0 {
		epoch = Monotonic() + opts.Lead.Nanoseconds()
	} else if epoch < Monotonic() {
		return nil, fmt.Errorf("epoch lies %v in the past once connections are up", time.Duration(Monotonic()-epoch))
	}
	r.epoch = epoch
	stats, runErr := r.sendAll(ctx, conns, flows)
	res := r.result(flows, stats)
	if runErr == nil {
		runErr = r.firstErr()
	}
	return res, runErr
}

func (o *Options) setDefaults() {
	if o.Device == nil {
		o.Device = func(h int) string { return fmt.Sprintf("h%d", h) }
	}
	if o.Port == 0 {
		o.Port = 5201
	}
	if o.Lead <= 0 {
		o.Lead = 20 * time.Millisecond
	}
}

// checkFlows refuses a schedule the driver cannot carry, naming the flow, and returns the last start.
func checkFlows(flows []Flow) (last time.Duration, err error) {
	ids := map[uint32]bool{}
	for i, f := range flows {
		switch {
		case f.Src == f.Dst:
			return 0, fmt.Errorf("flow %d: source and destination are both h%d", f.ID, f.Src)
		case f.Size <= 0:
			return 0, fmt.Errorf("flow %d: size %d must be positive", f.ID, f.Size)
		case f.At < 0:
			return 0, fmt.Errorf("flow %d: start %v is negative", f.ID, f.At)
		case ids[f.ID]:
			return 0, fmt.Errorf("flow %d (entry %d): duplicate id", f.ID, i)
		case !wire.HostIP(f.Src).IsValid() || !wire.HostIP(f.Dst).IsValid():
			return 0, fmt.Errorf("flow %d: host index out of range", f.ID)
		}
		ids[f.ID] = true
		last = max(last, f.At)
	}
	return last, nil
}

// listen opens one listener per destination host, each inside its namespace, and accepts on it.
func (r *run) listen(l *nslink.Lab, flows []Flow) error {
	for _, f := range flows {
		if _, ok := r.lns[f.Dst]; ok {
			continue
		}
		if r.lns == nil {
			r.lns = map[int]*net.TCPListener{}
		}
		var ln *net.TCPListener
		err := l.Do(r.opts.Device(f.Dst), func() error {
			var err error
			lc := net.ListenConfig{Control: r.opts.control}
			nl, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort(wire.HostIP(f.Dst).String(), fmt.Sprint(r.opts.Port)))
			if err == nil {
				ln = nl.(*net.TCPListener)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("receiver h%d: listen: %w", f.Dst, err)
		}
		r.lns[f.Dst] = ln
		r.wg.Add(1)
		go r.accept(ln)
	}
	return nil
}

// dial makes each flow's connection inside its source's namespace. The header tells the receiver which
// flow it is and how long; it crosses the fabric now, before the clock starts.
func (r *run) dial(l *nslink.Lab, flows []Flow) ([]*net.TCPConn, error) {
	conns := make([]*net.TCPConn, len(flows))
	for i, f := range flows {
		var c net.Conn
		err := l.Do(r.opts.Device(f.Src), func() error {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: wire.HostIP(f.Src).AsSlice()}, Timeout: 5 * time.Second,
				Control: r.opts.control}
			var err error
			c, err = d.Dial("tcp4", net.JoinHostPort(wire.HostIP(f.Dst).String(), fmt.Sprint(r.opts.Port)))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("flow %d h%d->h%d: connect: %w (is the fabric forwarding between them?)", f.ID, f.Src, f.Dst, err)
		}
		conns[i] = c.(*net.TCPConn)
		r.track(conns[i])
		var hdr [hdrLen]byte
		binary.BigEndian.PutUint64(hdr[:], uint64(f.ID))
		binary.BigEndian.PutUint64(hdr[8:], uint64(f.Size))
		if _, err := conns[i].Write(hdr[:]); err != nil {
			return nil, fmt.Errorf("flow %d: header: %w", f.ID, err)
		}
	}
	return conns, nil
}

// waitHeaders waits until every receiver has read its header: then the schedule's clock can start.
func (r *run) waitHeaders(ctx context.Context, n int) error {
	hdrTimeout := time.After(10 * time.Second)
	for r.headers() < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hdrTimeout:
			return fmt.Errorf("only %d of %d flows reached their receiver within 10 s of connecting", r.headers(), n)
		case <-time.After(time.Millisecond):
		}
		if err := r.firstErr(); err != nil {
			return err
		}
	}
	return nil
}

// sendAll sends every flow at its start from its own goroutine and waits until all have arrived, the
// context ends or the timeout after the epoch passes (then it closes every socket, which unblocks the
// senders and receivers).
func (r *run) sendAll(ctx context.Context, conns []*net.TCPConn, flows []Flow) ([]Stat, error) {
	stats := make([]Stat, len(flows))
	var swg sync.WaitGroup
	for i := range flows {
		swg.Add(1)
		go func(i int) {
			defer swg.Done()
			st, err := r.send(ctx, conns[i], &flows[i])
			stats[i] = st
			if err != nil {
				r.fail(fmt.Errorf("flow %d sender: %w", flows[i].ID, err))
			}
		}(i)
	}
	deadline := time.Duration(r.epoch-Monotonic()) + r.opts.Timeout
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	var runErr error
	select {
	case <-r.allIn:
	case <-ctx.Done():
		runErr = ctx.Err()
	case <-timer.C:
		runErr = fmt.Errorf("%d of %d flows did not finish within %v of the epoch", len(flows)-r.finished(), len(flows), r.opts.Timeout)
	}
	if runErr != nil {
		r.closeAll()
	}
	swg.Wait()
	return stats, runErr
}

// result makes the flow records: times after the epoch, the sender's retransmissions, in id order.
func (r *run) result(flows []Flow, stats []Stat) *Result {
	res := &Result{Epoch: r.epoch, Stats: stats}
	r.mu.Lock()
	for _, f := range flows {
		rec := records.Flow{ID: f.ID, Src: int32(f.Src), Dst: int32(f.Dst), DPort: r.opts.Port, Size: f.Size,
			Start: clock.FromDuration(f.At), Ideal: f.Ideal, Class: f.Class}
		if fin, ok := r.done[f.ID]; ok {
			rec.Finish = clock.Time(fin-r.epoch) * clock.Nanosecond
			rec.Completed = true
			rec.Delivered = f.Size
		}
		res.Flows = append(res.Flows, rec)
	}
	r.mu.Unlock()
	for i := range stats {
		res.Flows[i].Retransmits = stats[i].Retransmits
	}
	sort.Slice(res.Flows, func(i, j int) bool { return res.Flows[i].ID < res.Flows[j].ID })
	return res
}

// control sets the congestion control on a socket before it connects or listens.
func (o *Options) control(_, _ string, c syscall.RawConn) error {
	if o.CC == "" {
		return nil
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.CC)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("host.cc %q on a socket: %w", o.CC, serr)
	}
	return nil
}

type run struct {
	opts  Options
	epoch int64
	flows map[uint32]*Flow
	lns   map[int]*net.TCPListener
	wg    sync.WaitGroup

	mu     sync.Mutex
	conns  []net.Conn
	hdrs   int
	done   map[uint32]int64
	errs   []error
	allIn  chan struct{}
	closed bool
}

func (r *run) track(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return
	}
	r.conns = append(r.conns, c)
}

func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.errs = append(r.errs, err)
	}
}

func (r *run) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return r.errs[0]
	}
	return nil
}

func (r *run) headers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hdrs
}

func (r *run) finished() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

func (r *run) closeAll() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, ln := range r.lns {
		ln.Close()
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *run) accept(ln *net.TCPListener) {
	defer r.wg.Done()
	for {
		c, err := ln.AcceptTCP()
		if err != nil {
			return // closed
		}
		r.track(c)
		r.wg.Add(1)
		go r.receive(c)
	}
}

// receive reads a flow's header, then its bytes; the finish time is taken the moment the last byte is
// read, not at the FIN, which follows it.
func (r *run) receive(c *net.TCPConn) {
	defer r.wg.Done()
	var hdr [hdrLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		r.fail(fmt.Errorf("receiver %v: header: %w", c.RemoteAddr(), err))
		return
	}
	id := uint32(binary.BigEndian.Uint64(hdr[:]))
	size := int64(binary.BigEndian.Uint64(hdr[8:]))
	r.mu.Lock()
	f, ok := r.flows[id]
	r.hdrs++
	r.mu.Unlock()
	if !ok || f.Size != size {
		r.fail(fmt.Errorf("receiver %v: unknown flow %d of %d bytes", c.RemoteAddr(), id, size))
		return
	}
	buf := make([]byte, 256<<10)
	var got int64
	for got < size {
		n, err := c.Read(buf[:min(int64(len(buf)), size-got)])
		got += int64(n)
		if err != nil && got < size {
			r.fail(fmt.Errorf("flow %d receiver: %d of %d bytes: %w", id, got, size, err))
			return
		}
	}
	fin := Monotonic()
	r.mu.Lock()
	r.done[id] = fin
	all := len(r.done) == len(r.flows)
	r.mu.Unlock()
	if all {
		close(r.allIn)
	}
	// Wait for the sender's FIN so the sender's close is orderly; then ours.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, c)
	c.Close()
}

// zeros is what kernel flows send, made on first use: a package variable was a megabyte in every lab
// process, virtual runs included.
var zeros = sync.OnceValue(func() []byte { return make([]byte, 1<<20) })

// send waits for the flow's start, writes its bytes and half-closes, then waits for the receiver's
// close (every byte acknowledged) and reads the kernel's counters.
func (r *run) send(ctx context.Context, c *net.TCPConn, f *Flow) (Stat, error) {
	st := Stat{ID: f.ID}
	start := r.epoch + f.At.Nanoseconds()
	if err := sleepUntil(ctx, start); err != nil {
		return st, err
	}
	left := f.Size
	for left > 0 {
		z := zeros()
		n, err := c.Write(z[:min(left, int64(len(z)))])
		left -= int64(n)
		if err != nil {
			return st, err
		}
	}
	if err := c.CloseWrite(); err != nil {
		return st, err
	}
	c.SetReadDeadline(time.Now().Add(r.opts.Timeout))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil && !errors.Is(err, io.EOF) {
		return st, fmt.Errorf("waiting for the receiver to close: %w", err)
	}
	if raw, err := c.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.SOL_TCP, unix.TCP_INFO); err == nil {
				st.Retransmits = int64(ti.Total_retrans)
				st.DeliveredCE = int64(ti.Delivered_ce)
				st.Delivered = int64(ti.Delivered)
			}
			if cc, err := unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
				st.CC = strings.TrimRight(cc, "\x00")
			}
		})
	}
	c.Close()
	return st, nil
}

// sleepUntil sleeps to within a couple of milliseconds of a CLOCK_MONOTONIC instant with the Go timer
// (granularity ~1 ms here), then finishes with short nanosleeps, so a flow starts within microseconds of
// its schedule instead of a timer tick late.
func sleepUntil(ctx context.Context, at int64) error {
	for {
		left := time.Duration(at - Monotonic())
		if left <= 0 {
			return nil
		}
		if left > 3*time.Millisecond {
			t := time.NewTimer(left - 2*time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		ts := unix.NsecToTimespec(min(left.Nanoseconds(), 50_000))
		if err := unix.Nanosleep(&ts, nil); err != nil && !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
