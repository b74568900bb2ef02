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
	"sync"
	"time"
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

const (
	magic     = "fabclab1"
	nonceLen  = 32
	macLen    = sha256.Size
	handshake = 10 * time.Second
	// MaxFrame bounds one message: an agent's records of a long run are the largest (tens of MB).
	MaxFrame = 1 << 30
)

// ErrAuth is the error of a handshake whose MAC did not verify (wrong or missing secret).
var ErrAuth = errors.New("authentication failed: the peer does not hold the cluster's secret")

// Conn is one authenticated control connection. Send is safe for concurrent use; Recv has one reader.
type Conn struct {
	c                net.Conn
	r                *bufio.Reader
	wmu              sync.Mutex
	w                *bufio.Writer
	sendKey, recvKey []byte
	sendSeq, recvSeq uint64
	Remote           string // the peer's address, for messages
	rbuf             []byte
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
	var d net.Dialer
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
	r := bufio.NewReader(c)
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
	return newConn(c, r, mac(secret, []byte("c2s"), ns, nc), mac(secret, []byte("s2c"), ns, nc)), nil
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
	r := bufio.NewReader(c)
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
	return newConn(c, r, mac(secret, []byte("s2c"), ns, nc), mac(secret, []byte("c2s"), ns, nc)), nil
}

func newConn(c net.Conn, r *bufio.Reader, sendKey, recvKey []byte) *Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true) // grants and clock probes are small and latency-bound
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(5 * time.Second)
	}
	return &Conn{c: c, r: r, w: bufio.NewWriterSize(c, 64<<10), sendKey: sendKey, recvKey: recvKey,
		Remote: c.RemoteAddr().String()}
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
	return c.w.Flush()
}

// Recv reads the next frame into v; a frame whose MAC fails is an error and the connection is unusable.
func (c *Conn) Recv(v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", n, MaxFrame)
	}
	if cap(c.rbuf) < int(n)+macLen {
		c.rbuf = make([]byte, int(n)+macLen)
	}
	buf := c.rbuf[:int(n)+macLen]
	if _, err := io.ReadFull(c.r, buf); err != nil {
		return fmt.Errorf("truncated frame: %w", err)
	}
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], c.recvSeq)
	c.recvSeq++
	if !hmac.Equal(buf[n:], mac(c.recvKey, seq[:], buf[:n])) {
		return errors.New("frame failed authentication (altered, replayed or out of order)")
	}
	return json.Unmarshal(buf[:n], v)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }
