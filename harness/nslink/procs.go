package nslink

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/bounded"
)

// Agent processes are recorded in the lab's state directory (agents file: one "pid starttime token exe"
// line each, appended and fsynced before the agent is sent anything) so that `lab down` after a crash can
// kill them. Before a recorded PID is signalled it must still be the process we started, checked three
// ways: its start time (field 22 of /proc/<pid>/stat) tells our agent from a process that reused its PID
// later; its executable (/proc/<pid>/exe) is the binary recorded; and its environment (/proc/<pid>/environ,
// fixed at exec) carries the random token recorded beside it. A tampered or stale file naming another
// process (its PID and even its start time copied) fails the last two: that process never had the token.

func agentsPath(lab string) string { return filepath.Join(stateDir(lab), "agents") }

// AgentEnv is the environment variable that turns a binary linking package agent into an agent.
const AgentEnv = "FABRICLAB_AGENT"

// AgentParentEnv carries the starting process's PID to the agent, which exits at once if its parent
// is already another (the starter died before the agent could arm its death signal).
const AgentParentEnv = "FABRICLAB_AGENT_PARENT"

// TokenEnv carries a lab process's token: set in the environment of every process a lab starts and
// records (agents, a live lab's supervisor).
const TokenEnv = "FABRICLAB_LAB_TOKEN"

// ProcessToken returns a fresh token for a process lab is about to start and the environment entry
// that gives it to the process (append it to exec.Cmd.Env before Start, then RecordProcess).
func ProcessToken(lab string) (token, env string) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	token = lab + ":" + hex.EncodeToString(b[:])
	return token, TokenEnv + "=" + token
}

func procStartTime(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may contain spaces
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return f[19], nil // field 22 overall; fields after ')' start at 3
}

// RecordProcess adds a process of ours (an agent, a live lab's supervisor) to the lab's agents file, so `lab down`
// ends it as it ends agents; token is ProcessToken's, given to the process in its environment.
func RecordProcess(lab string, pid int, token string) error {
	st, err := procStartTime(pid)
	if err != nil {
		return fmt.Errorf("agent pid %d: %w", pid, err)
	}
	exe, err := procExe(pid)
	if err != nil {
		return fmt.Errorf("agent pid %d: %w", pid, err)
	}
	f, err := os.OpenFile(agentsPath(lab), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%d %s %s %s\n", pid, st, token, exe); err != nil {
		return err
	}
	return f.Sync()
}

// procExe is the binary pid runs, without the " (deleted)" Linux adds once the file is replaced (a
// rebuilt bin/lab: still the binary that was recorded).
func procExe(pid int) (string, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return strings.TrimSuffix(exe, " (deleted)"), err
}

// HasToken says whether process pid runs with token (ProcessToken) in its environment: a process a lab
// started, not another that took its PID since.
func HasToken(pid int, token string) bool { return procHasEnv(pid, TokenEnv+"="+token) }

// IsAgent says whether pid is an agent process (of any fabriclab build since AgentEnv was named).
func IsAgent(pid int) bool { return procHasEnv(pid, AgentEnv+"=1") }

// procHasEnv says whether pid's environment (as it was at exec) has the entry kv. Right after exec
// (exec.Cmd.Start has returned: vfork released the parent) the kernel may not have laid out the new
// environment yet, and /proc/PID/environ reads empty for an instant: a lab down racing a lab up then
// took the new supervisor for someone else's and left it running. An empty read of a process that is
// not a zombie is read again for up to envSettle; every process a lab starts has an environment (its
// token), so one that stays empty is still not taken for the lab's.
func procHasEnv(pid int, kv string) bool {
	var b []byte
	for deadline := time.Now().Add(envSettle); ; time.Sleep(2 * time.Millisecond) {
		var err error
		if b, err = readEnviron(pid); err != nil {
			return false
		}
		if len(b) > 0 || procZombie(pid) || time.Now().After(deadline) {
			break
		}
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// envSettle bounds how long procHasEnv reads an empty environment again (a variable for the tests).
var envSettle = 500 * time.Millisecond

// readEnviron reads pid's environment as the kernel shows it (a variable for the tests: the window in
// which a new process's reads empty is too short to hit on purpose).
var readEnviron = func(pid int) ([]byte, error) { return os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)) }

// ourProcess says whether the agents-file line fs (pid, start time, token, exe) names a process that is
// running now and is the one lab recorded. foreign says why not when the line names a running process
// with the recorded start time that is not ours (a tampered file); it is empty for a process gone.
func ourProcess(fs []string) (pid int, foreign string) {
	if len(fs) < 2 {
		return 0, ""
	}
	pid, err := strconv.Atoi(fs[0])
	if err != nil || pid <= 1 {
		return 0, ""
	}
	if st, err := procStartTime(pid); err != nil || st != fs[1] {
		return 0, "" // gone, or the PID now belongs to a later process
	}
	if len(fs) < 4 {
		// A line without token and binary (an older lab's, or forged): nothing proves it is ours.
		return 0, "was recorded without the lab's token (by an older lab?): not verifiable; stop it yourself if it is this lab's"
	}
	exe, err := procExe(pid)
	if err != nil {
		return 0, "" // exiting (a zombie has no executable): it holds nothing and needs no signal
	}
	if exe != strings.Join(fs[3:], " ") {
		return 0, "runs another binary"
	}
	if !procHasEnv(pid, TokenEnv+"="+fs[2]) {
		return 0, "does not carry the lab's token"
	}
	return pid, ""
}

// LabProcesses are the PIDs of the lab's recorded processes that are running now and verifiably the
// lab's (ourProcess), in the order recorded (a live lab: its supervisor first).
func LabProcesses(lab string) []int {
	pids, _ := labProcesses(lab)
	return pids
}

// labProcesses is LabProcesses and how many processes the agents file records, running or not: a lab
// that recorded some and has none running has lost them (a bare lab records none).
func labProcesses(lab string) (pids []int, recorded int) {
	pids = []int{}
	b, err := bounded.ReadFile(agentsPath(lab), bounded.State)
	if err != nil {
		return pids, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) == 0 {
			continue
		}
		recorded++
		if pid, _ := ourProcess(fs); pid != 0 && !procZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, recorded
}

func procZombie(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return strings.Contains(string(b), ") Z ")
}

// KillAgents kills the agent processes recorded for lab that are still running (and still the same
// processes: ourProcess), waiting briefly for them to go. It returns how many it signalled. A line
// naming a running process that is not ours is reported on stderr and left alone.
func KillAgents(lab string) (int, error) {
	f, err := os.Open(agentsPath(lab))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		pid, foreign := ourProcess(fs)
		if foreign != "" {
			fmt.Fprintf(os.Stderr, "netns: %s: the agents file names pid %s, which %s: not ours, left alone\n", lab, fs[0], foreign)
		}
		if pid == 0 {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids { // a killed process keeps its sockets until it is reaped or gone
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if strings.Contains(string(b), ") Z ") {
				break // a zombie holds nothing; its parent reaps it
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return len(pids), sc.Err()
}
