package netns

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fabriclab/fabriclab/clock"
)

// TestHungErrorNamesTheAgents: a local run whose slowest clock stood still names the agents that
// stood (pid and devices, a long device list cut short) and where their messages went; it said only
// "agents hung".
func TestHungErrorNamesTheAgents(t *testing.T) {
	proc := func(pid int, devices ...string) *agentProc {
		return &agentProc{cmd: &exec.Cmd{Process: &os.Process{Pid: pid}}, devices: devices}
	}
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, fmt.Sprintf("h%d", i))
	}
	procs := []*agentProc{proc(101, "s0", "h0"), proc(102, "s1", "h1"), proc(103, many...)}
	err := hungError(procs, []clock.Time{5, 3, 3}, 3, time.Minute)
	msg := err.Error()
	for _, want := range []string{"agents hung", "stood at", "agent pid 102 (devices s1,h1)", "agent pid 103 (devices h0,h1,h2,h3,h4,h5,... 40 in all)", "of 3 agents", "above on stderr"} {
		if !strings.Contains(msg, want) {
			t.Errorf("lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "pid 101") || strings.Contains(msg, "h39") {
		t.Errorf("names an agent that moved, or every device: %s", msg)
	}
	if len(procs[2].devices) != 40 {
		t.Error("hungError changed the agent's own device list")
	}
}
