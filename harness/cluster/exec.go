package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// `lab exec` on a device of a lab over several machines: the coordinator asks the machine that hosts
// the device, over the authenticated control channel, and the server runs the command in the device's
// namespace and streams its output back. The server starts its own binary with NSExecEnv set; that
// process enters the namespace (and mounts the lab's hosts file over /etc/hosts, as `ip netns exec`
// does) on one thread and replaces itself with the command, so no `ip` is needed on the machine (an
// agent container is the lab binary alone).

// NSExecEnv and NSExecHostsEnv tell this binary to run its arguments in a namespace (nsexec): the
// descriptor, inherited from the server, of the namespace, and "DESCRIPTOR:PATH" of the hosts file to
// mount.
const (
	NSExecEnv      = "FABRICLAB_NSEXEC"
	NSExecHostsEnv = "FABRICLAB_NSEXEC_HOSTS"
)

func init() {
	if ns := os.Getenv(NSExecEnv); ns != "" {
		if err := nsexec(ns, os.Getenv(NSExecHostsEnv), os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "lab exec:", err)
			os.Exit(127)
		}
	}
}

// nsexec enters the network namespace open at descriptor ns, mounts the hosts file over /etc/hosts in
// a mount namespace of its own, and executes argv. The server opened and checked the namespace, so what
// it checked is what is entered, whatever is mounted at its name by now. A bind mount takes a path in
// the caller's mount namespace (a descriptor opened in the server's is refused), so the hosts file is
// mounted by path and must then be the file the server opened. setns and unshare act on the calling
// thread, and exec keeps that thread's namespaces for the whole new program.
func nsexec(ns, hosts string, argv []string) error {
	runtime.LockOSThread()
	if len(argv) == 0 {
		return errors.New("no command")
	}
	fd, err := strconv.Atoi(ns)
	if err != nil {
		return fmt.Errorf("%s=%q: want a descriptor number", NSExecEnv, ns)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	unix.Close(fd)
	if hosts != "" {
		n, path, _ := strings.Cut(hosts, ":")
		hfd, err := strconv.Atoi(n)
		if err != nil || path == "" {
			return fmt.Errorf("%s=%q: want DESCRIPTOR:PATH", NSExecHostsEnv, hosts)
		}
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("unshare mount namespace: %w", err)
		}
		// Our mounts stay ours: none propagates back to the machine's mount namespace.
		if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make / a slave mount: %w", err)
		}
		if err := unix.Mount(path, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s over /etc/hosts: %w", path, err)
		}
		var want, got unix.Stat_t
		if unix.Fstat(hfd, &want) != nil || unix.Stat("/etc/hosts", &got) != nil || want.Dev != got.Dev || want.Ino != got.Ino {
			return fmt.Errorf("%s is no longer the lab's hosts file", path)
		}
		unix.Close(hfd)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, NSExecEnv+"=") || strings.HasPrefix(kv, NSExecHostsEnv+"=")
	})
	return syscall.Exec(path, argv, env)
}

// exec runs r's command on this machine (server side) and streams its output; it answers at once and
// the command runs until it exits. A command named lab is this server's binary. The command runs in a
// process group of its own, which is ended (execProc.stop) when the connection ends or the lab is
// removed, children included.
func (ss *session) exec(r *ExecReq) error {
	if r == nil || len(r.Argv) == 0 {
		return errors.New("exec: no command")
	}
	if ss.capture != nil {
		return errors.New("exec: this connection runs a capture")
	}
	if !ss.execing.CompareAndSwap(false, true) {
		return errors.New("exec: this connection already runs a command")
	}
	p, err := ss.startExec(r)
	if err != nil {
		ss.execing.Store(false)
		return err
	}
	ss.proc = p // the one it runs (execing): a finished one is stopped and released already
	ss.s.logf("lab %s: exec on %s: %s", r.Lab, r.Device, strings.Join(r.Argv, " "))
	go func() {
		<-p.exited
		p.output.Wait()
		// The command is over once its leader has exited and its output is drained: what is left of
		// its group is ended and the leader reaped now, not when the connection closes (a reused
		// connection kept every finished command's leader a zombie until then).
		p.stop()
		ss.s.releaseExec(r.Lab, p)
		ss.execing.Store(false)
		ss.c.Send(Msg{Type: "exit", Code: p.code})
	}()
	return nil
}

// startExec starts r's command in the device's namespace, held by the lab (Server.holdExec) so that
// removing the lab ends it.
func (ss *session) startExec(r *ExecReq) (*execProc, error) {
	// Only in a lab this server made and holds for a coordinator: not in labs others made on the machine.
	gen, ours := ss.s.labGen(r.Lab)
	if !ours {
		return nil, fmt.Errorf("no lab %q made by this agent server is up here", r.Lab)
	}
	nl, err := nslink.Open(r.Lab)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(nl.Devices(), r.Device) {
		return nil, fmt.Errorf("no device %q of lab %s here", r.Device, r.Lab)
	}
	// The namespace must be the one the lab made (its inode or mark), as for everything the lab does in
	// it; the command enters this very handle.
	nsf, err := nl.NSFile(r.Device)
	if err != nil {
		return nil, err
	}
	defer nsf.Close()
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	files := []*os.File{nsf} // descriptor 3 in the child
	env := append(os.Environ(), NSExecEnv+"=3")
	h := filepath.Join("/etc/netns", nl.NSName(r.Device), "hosts")
	switch hf, err := os.Open(h); {
	case err == nil:
		defer hf.Close()
		files = append(files, hf)
		env = append(env, NSExecHostsEnv+"=4:"+h)
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	argv := slices.Clone(r.Argv)
	if argv[0] == "lab" {
		// This server's own binary, wherever it is (an agent container's is /lab, on no PATH): so
		// `lab flow` runs on any machine.
		argv[0] = exe
	}
	p, err := startExec(exe, append([]string{exe}, argv...), env, files, &streamWriter{c: ss.c, stream: 1}, &streamWriter{c: ss.c, stream: 2})
	if err != nil {
		return nil, err
	}
	if !ss.s.holdExec(r.Lab, gen, p) {
		p.stop()
		return nil, fmt.Errorf("lab %s was removed while the command started", r.Lab)
	}
	return p, nil
}

// streamWriter sends what a command writes as out messages (exec.Cmd copies its pipes through it).
type streamWriter struct {
	c      *Conn
	stream int
}

func (w *streamWriter) Write(p []byte) (int, error) {
	if err := w.c.Send(Msg{Type: "out", Stream: w.stream, Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Exec runs argv in device's namespace of lab on the machine (client side), copying its output to
// stdout and stderr as it comes, and returns its exit status. Cancelling ctx closes the connection,
// which ends the command there.
func (r *Remote) Exec(ctx context.Context, lab, device string, argv []string, stdout, stderr io.Writer) (int, error) {
	if err := r.c.Send(Msg{Type: "exec", Exec: &ExecReq{Lab: lab, Device: device, Argv: argv}}); err != nil {
		return -1, fmt.Errorf("machine %s: %w", r.Machine.Name, err)
	}
	for {
		select {
		case m, ok := <-r.in:
			if !ok {
				return -1, fmt.Errorf("machine %s: connection lost during exec: %v", r.Machine.Name, r.err)
			}
			switch m.Type {
			case "out":
				w := stdout
				if m.Stream == 2 {
					w = stderr
				}
				w.Write(m.Data)
			case "exit":
				return m.Code, nil
			case "error":
				return -1, fmt.Errorf("machine %s: %s", r.Machine.Name, m.Err)
			}
		case <-ctx.Done():
			r.Close()
			return -1, ctx.Err()
		}
	}
}
