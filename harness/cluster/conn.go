package cluster

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The control channel is TCP, authenticated both ways by the shared secret and protected message by
// message (integrity, not confidentiality: a lab's specs and records are not secret, who may drive an
// agent that makes namespaces as root is). The handshake is a challenge-response, so the secret never
// crosses the wire:
//
//	server -> client   magic, Ns (32 random bytes)
//	client -> server   magic, Nc, HMAC(K, "client" Ns Nc)
//	server -> client   HMAC(K, "server" Nc Ns)          (or nothing: a wrong MAC closes the connection)
//
// after which each message is a frame: its length (4 bytes), its JSON, and HMAC(Kdir, seq JSON) where
// Kdir = HMAC(K, "c2s"|"s2c" Ns Nc) and seq counts that direction's frames: a frame replayed,
// reordered, dropped or altered breaks the MAC and ends the connection.
//
// Either side of a connection finds the other gone within LostAfter, whatever went wrong (docs/
// architecture.md §Several machines, "Failure detection"). TCP alone does not: a cable cut while
// bytes are unacknowledged keeps a socket retransmitting for about 15 minutes (keepalive probes only an
// idle connection), and a frozen process (SIGSTOP, docker pause) has a kernel that still acknowledges
// what is sent to it. So each side sends a heartbeat, an empty frame (no JSON is empty, so it cannot
// be taken for a message; Recv skips it), whenever it has sent nothing for Heartbeat; a read that waits
// LostAfter for a byte, or a write that makes no progress for LostAfter, ends the connection
// (ErrSilent); and TCP_USER_TIMEOUT makes the kernel give up on unacknowledged bytes after LostAfter too,
// so a socket closed with bytes in flight does not linger.

const (
	magic     = "fabclab1"
	nonceLen  = 32
	macLen    = sha256.Size
	handshake = 10 * time.Second
	// MaxFrame bounds one message: an agent's records of a long run are the largest (tens of MB).
	MaxFrame = 1 << 30
	// dialTimeout bounds a connect (a machine cut off answers no SYN: the kernel would retry for 2 min).
	dialTimeout = 10 * time.Second
)

// Heartbeat and LostAfter are the failure detector's two bounds (see above): a peer silent for
// LostAfter is gone. Variables so that the package's tests can shorten them.
var (
	Heartbeat = time.Second
	LostAfter = 5 * time.Second
)

// ErrSilent is the error of a connection whose peer sent nothing, not even a heartbeat, for LostAfter,
// or took nothing it was sent for as long: the peer is frozen, cut off or gone.
var ErrSilent = errors.New("silent: no message or heartbeat")

// ErrAuth is the error of a handshake whose MAC did not verify (wrong or missing secret).
var ErrAuth = errors.New("authentication failed: the peer does not hold the cluster's secret")

// Conn is one authenticated control connection. Send is safe for concurrent use; Recv has one reader.
type Conn struct {
	c                net.Conn
	wc               *watched
	r                *bufio.Reader
	wmu              sync.Mutex
	w                *bufio.Writer
	sendKey, recvKey []byte
	sendSeq, recvSeq uint64
	lastSend         atomic.Int64 // when the last frame went out (UnixNano), for beat
	Remote           string       // the peer's address, for messages
	rbuf             []byte
	closed           chan struct{}
	closeOnce        sync.Once
}

// watched is the connection under a Conn's buffers: each read and write, once the handshake is done,
// must make progress within lostAfter.
type watched struct {
	net.Conn
	lostAfter time.Duration // 0 during the handshake, which sets its own deadline
}

func (w *watched) Read(p []byte) (int, error) {
	if w.lostAfter > 0 {
		w.SetReadDeadline(time.Now().Add(w.lostAfter))
	}
	n, err := w.Conn.Read(p)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && w.lostAfter > 0 {
		err = fmt.Errorf("%w for %v", ErrSilent, w.lostAfter)
	}
	return n, err
}

// Write writes p in pieces of at most 1 MiB, each given lostAfter: a large message (an agent's
// records) on a slow link takes as long as it takes, a peer that takes nothing does not.
func (w *watched) Write(p []byte) (int, error) {
	if w.lostAfter == 0 {
		return w.Conn.Write(p)
	}
	done := 0
	for done < len(p) {
		end := min(len(p), done+1<<20)
		w.SetWriteDeadline(time.Now().Add(w.lostAfter))
		n, err := w.Conn.Write(p[done:end])
		done += n
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w: the peer took nothing for %v", ErrSilent, w.lostAfter)
			}
			return done, err
		}
	}
	return done, nil
}

func mac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(sha256.New, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func nonce() ([]byte, error) {
	b := make([]byte, nonceLen)
	_, err := rand.Read(b)
	return b, err
}

// Dial connects to an agent server at addr and authenticates both ways with secret.
func Dial(ctx context.Context, addr string, secret []byte) (*Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := clientHandshake(c, secret)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return conn, nil
}

func clientHandshake(c net.Conn, secret []byte) (*Conn, error) {
	c.SetDeadline(time.Now().Add(handshake))
	wc := &watched{Conn: c}
	r := bufio.NewReader(wc)
	hello := make([]byte, len(magic)+nonceLen)
	if _, err := io.ReadFull(r, hello); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if string(hello[:len(magic)]) != magic {
		return nil, errors.New("handshake: not a fabriclab agent server (or another version)")
	}
	ns := hello[len(magic):]
	nc, err := nonce()
	if err != nil {
		return nil, err
	}
	msg := append(append([]byte(magic), nc...), mac(secret, []byte("client"), ns, nc)...)
	if _, err := c.Write(msg); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	proof := make([]byte, macLen)
	if _, err := io.ReadFull(r, proof); err != nil {
		return nil, fmt.Errorf("%w (the server closed the connection: %v)", ErrAuth, err)
	}
	if !hmac.Equal(proof, mac(secret, []byte("server"), nc, ns)) {
		return nil, fmt.Errorf("%w (the server's proof is wrong)", ErrAuth)
	}
	c.SetDeadline(time.Time{})
	return newConn(wc, r, mac(secret, []byte("c2s"), ns, nc), mac(secret, []byte("s2c"), ns, nc)), nil
}

// Accept authenticates a client that connected to an agent server; on any failure the connection is
// closed and nothing has been read but the handshake.
func Accept(c net.Conn, secret []byte) (*Conn, error) {
	conn, err := serverHandshake(c, secret)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", c.RemoteAddr(), err)
	}
	return conn, nil
}

func serverHandshake(c net.Conn, secret []byte) (*Conn, error) {
	c.SetDeadline(time.Now().Add(handshake))
	ns, err := nonce()
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(append([]byte(magic), ns...)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	wc := &watched{Conn: c}
	r := bufio.NewReader(wc)
	reply := make([]byte, len(magic)+nonceLen+macLen)
	if _, err := io.ReadFull(r, reply); err != nil {
		return nil, fmt.Errorf("%w (no complete handshake: %v)", ErrAuth, err)
	}
	if string(reply[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w (not a fabriclab coordinator)", ErrAuth)
	}
	nc := reply[len(magic) : len(magic)+nonceLen]
	if !hmac.Equal(reply[len(magic)+nonceLen:], mac(secret, []byte("client"), ns, nc)) {
		return nil, ErrAuth
	}
	if _, err := c.Write(mac(secret, []byte("server"), nc, ns)); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	c.SetDeadline(time.Time{})
	return newConn(wc, r, mac(secret, []byte("s2c"), ns, nc), mac(secret, []byte("c2s"), ns, nc)), nil
}

func newConn(wc *watched, r *bufio.Reader, sendKey, recvKey []byte) *Conn {
	c := wc.Conn
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true) // grants and clock probes are small and latency-bound
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(5 * time.Second)
		userTimeout(tc, LostAfter)
	}
	wc.lostAfter = LostAfter
	conn := &Conn{c: c, wc: wc, r: r, w: bufio.NewWriterSize(wc, 64<<10), sendKey: sendKey, recvKey: recvKey,
		Remote: c.RemoteAddr().String(), closed: make(chan struct{})}
	go conn.beat(Heartbeat)
	return conn
}

// userTimeout sets TCP_USER_TIMEOUT: bytes unacknowledged for d end the connection in the kernel.
func userTimeout(tc *net.TCPConn, d time.Duration) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}

// beat sends a heartbeat whenever nothing was sent for every, until the connection closes or a send
// fails (the reader finds out too).
func (c *Conn) beat(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, c.lastSend.Load())) < every {
			continue
		}
		if err := c.send(nil); err != nil {
			return
		}
	}
}

// Send writes one message (any JSON value) as an authenticated frame.
func (c *Conn) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("message of %d bytes exceeds the %d-byte frame limit", len(b), MaxFrame)
	}
	return c.send(b)
}

// send writes one frame of payload b (empty: a heartbeat).
func (c *Conn) send(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var hdr [4]byte
	var seq [8]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	binary.BigEndian.PutUint64(seq[:], c.sendSeq)
	c.sendSeq++
	c.w.Write(hdr[:])
	c.w.Write(b)
	c.w.Write(mac(c.sendKey, seq[:], b))
	err := c.w.Flush()
	c.lastSend.Store(time.Now().UnixNano())
	return err
}

// Recv reads the next message into v, past heartbeats; a frame whose MAC fails is an error and the
// connection is unusable, and so is a peer silent for LostAfter (ErrSilent).
func (c *Conn) Recv(v any) error {
	for {
		n, err := c.frame()
		if err != nil {
			return err
		}
		if n > 0 {
			return json.Unmarshal(c.rbuf[:n], v)
		}
	}
}

// frame reads and authenticates the next frame into rbuf and returns its payload's length.
func (c *Conn) frame() (uint32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return 0, fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", n, MaxFrame)
	}
	if cap(c.rbuf) < int(n)+macLen {
		c.rbuf = make([]byte, int(n)+macLen)
	}
	buf := c.rbuf[:int(n)+macLen]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return 0, fmt.Errorf("truncated frame: %w", err)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], c.recvSeq)
	c.recvSeq++
	if !hmac.Equal(buf[n:], mac(c.recvKey, seq[:], buf[:n])) {
		return 0, errors.New("frame failed authentication (altered, replayed or out of order)")
	}
	return n, nil
}

// Close closes the connection (again: nothing).
func (c *Conn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.c.Close()
	})
	return err
}
