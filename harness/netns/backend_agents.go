package netns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Agent processes are recorded in the lab's state directory (agents file: one "pid starttime" line
// each, appended and fsynced before the agent is sent anything) so that `lab down` after a crash can
// kill them. The start time (field 22 of /proc/<pid>/stat) tells our agent from a process that reused
// its PID later: a PID whose start time differs is never signalled.

func agentsPath(lab string) string { return filepath.Join(stateDir(lab), "agents") }

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

func recordAgent(lab string, pid int) error {
	st, err := procStartTime(pid)
	if err != nil {
		return fmt.Errorf("agent pid %d: %w", pid, err)
	}
	f, err := os.OpenFile(agentsPath(lab), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%d %s\n", pid, st); err != nil {
		return err
	}
	return f.Sync()
}

// KillAgents kills the agent processes recorded for lab that are still running (and still the same
// processes), waiting briefly for them to go. It returns how many it signalled.
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
		if len(fs) != 2 {
			continue
		}
		pid, err := strconv.Atoi(fs[0])
		if err != nil || pid <= 1 {
			continue
		}
		if st, err := procStartTime(pid); err != nil || st != fs[1] {
			continue // gone, or the PID now belongs to someone else
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
