package cluster

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// execGrace is how long a command's process group has between SIGTERM and SIGKILL when it is ended.
const execGrace = 2 * time.Second

// execProc is one command run for `lab exec`, in a process group of its own (its ID the command's
// PID). Its leader is not reaped until stop has ended the group: an exited but unreaped leader keeps
// its PID, and so the group's ID, from being reused, so signalling the group never reaches a process
// this server did not start.
type execProc struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // the leader exited (code set); it stays unreaped until stop
	code   int
	output sync.WaitGroup // stdout and stderr copied until every writer closed them
	once   sync.Once
	done   chan struct{} // stop finished
}

// startExec starts exe with argv (argv[0] included) in a new process group, its output copied to
// stdout and stderr; files become descriptors 3, 4, ... of the child.
func startExec(exe string, argv, env []string, files []*os.File, stdout, stderr io.Writer) (*execProc, error) {
	cmd := exec.Command(exe)
	cmd.Args = argv
	cmd.Env = env
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &execProc{cmd: cmd, exited: make(chan struct{}), done: make(chan struct{})}
	// Pipes of our own rather than exec.Cmd's: its Wait would reap the leader.
	var rs, ws []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(rs)
			closeAll(ws)
			return nil, err
		}
		rs, ws = append(rs, r), append(ws, w)
	}
	cmd.Stdout, cmd.Stderr = ws[0], ws[1]
	err := cmd.Start()
	closeAll(ws)
	if err != nil {
		closeAll(rs)
		return nil, err
	}
	p.pid = cmd.Process.Pid
	for i, w := range []io.Writer{stdout, stderr} {
		p.output.Add(1)
		go func() {
			defer p.output.Done()
			io.Copy(w, rs[i])
			rs[i].Close()
		}()
	}
	go p.waitLeader()
	return p, nil
}

// waitLeader waits for the leader to exit without reaping it (WNOWAIT) and records its exit status:
// the code it exited with, -1 if a signal ended it (as exec.ExitError.ExitCode).
func (p *execProc) waitLeader() {
	defer close(p.exited)
	var si unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			p.code = 127
			return
		}
		break
	}
	p.code = -1
	if si.Code == 1 { // CLD_EXITED
		p.code = int(childStatus(&si))
	}
}

// childStatus is si_status of a SIGCHLD siginfo: after si_signo, si_errno, si_code (and, on 64-bit,
// the union's alignment) come si_pid, si_uid, si_status.
func childStatus(si *unix.Siginfo) int32 {
	off := 3*4 + 8
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off += 4
	}
	b := (*[unsafe.Sizeof(*si)]byte)(unsafe.Pointer(si))
	return int32(binary.NativeEndian.Uint32(b[off:]))
}

// stop ends the command's process group, children included: SIGTERM, then SIGKILL once the group has
// no live member or execGrace has passed; then reaps the leader (and members reparented to this
// process, as they are when it is a container's init). Safe to call more than once and concurrently;
// each call returns once the group is gone.
func (p *execProc) stop() {
	p.once.Do(func() {
		defer close(p.done)
		unix.Kill(-p.pid, unix.SIGTERM)
		for end := time.Now().Add(execGrace); groupLive(p.pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		unix.Kill(-p.pid, unix.SIGKILL) // the unreaped leader still holds the group's ID
		<-p.exited
		reapGroup(p.pid, time.Second)
		p.cmd.Wait()
	})
	<-p.done
}

// groupMember is a process of a process group, as /proc shows it.
type groupMember struct {
	pid, ppid int
	zombie    bool
}

// groupMembers lists the processes of group pgid (zombies included) from /proc.
func groupMembers(pgid int) []groupMember {
	ents, _ := os.ReadDir("/proc")
	var out []groupMember
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, groupMember{pid: pid, ppid: ppid, zombie: f[0] == "Z" || f[0] == "X"})
	}
	return out
}

// groupLive says whether group pgid has a member that has not exited.
func groupLive(pgid int) bool {
	for _, m := range groupMembers(pgid) {
		if !m.zombie {
			return true
		}
	}
	return false
}

// reapGroup reaps the exited members of group pgid that are this process's children, the leader
// aside (the caller reaps it last), until none is left or timeout: orphans of the command, reparented
// to this process where it is init (an agent container's server), would stay zombies otherwise.
func reapGroup(pgid int, timeout time.Duration) {
	self := os.Getpid()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		pending := false
		for _, m := range groupMembers(pgid) {
			if m.pid == pgid || m.ppid != self && m.zombie {
				continue // the leader, or someone else's zombie to reap
			}
			if m.ppid == self && m.zombie {
				unix.Wait4(m.pid, nil, unix.WNOHANG, nil)
				continue
			}
			pending = true // still dying after SIGKILL
		}
		if !pending {
			return
		}
	}
}
