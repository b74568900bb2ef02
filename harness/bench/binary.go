package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

// BinaryResult is one `lab run` of a netns spec by some fabriclab binary, measured from outside: the
// way to hold today's agent against an older build (26274ad's, say) whose code we cannot change.
type BinaryResult struct {
	Binary   string
	Frames   uint64        // frames the agents wrote, from the run's fidelity line (framesWritten)
	CPU      time.Duration // the agent processes' user + system CPU over their whole lives
	Wall     time.Duration // run.json's wall_s
	Faithful bool          // run.json's faithful
}

// FramesPerCPUSecond is the agents' frame-hops per second of their CPU.
func (r BinaryResult) FramesPerCPUSecond() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Frames) / r.CPU.Seconds()
}

// framesWritten reads the frames the agents wrote from a netns run's fidelity line, as every fabriclab
// since 26274ad prints it: "in wall time L of N left late" when frames are taken at their scheduled
// arrival (one agent, or lockstep), else "L of N frames (P%) left more than ...".
func framesWritten(out string) (uint64, bool) {
	for _, re := range framesLines {
		if m := re.FindStringSubmatch(out); m != nil {
			n, err := strconv.ParseUint(m[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

var framesLines = []*regexp.Regexp{
	regexp.MustCompile(`in wall time \d+ of (\d+) left late`),
	regexp.MustCompile(`\d+ of (\d+) frames \([0-9.]+%\) left more than`),
}

// RunBinary runs `BIN run SPEC -o DIR` (plus args) and measures its agents: the children of BIN's
// process that carry nslink.AgentEnv, whose CPU (processCPU: every thread, dead ones included) is read
// every 2 ms while they live. An agent's last 2 ms can be missed, which is noise
// below 0.1% of a run of seconds; the same measure is taken of both sides of a comparison, setup and
// teardown included, unlike RunAgents, which counts the agents' CPU from their start to their records.
func RunBinary(ctx context.Context, bin, specPath, dir string, args ...string) (BinaryResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return BinaryResult{}, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"run", specPath, "-o", filepath.Join(dir, "out")}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return BinaryResult{}, fmt.Errorf("%s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	cpu := map[int]time.Duration{}
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	var werr error
poll:
	for {
		select {
		case werr = <-done:
			break poll
		case <-tick.C:
			for _, pid := range childPIDs(cmd.Process.Pid) {
				// Asked again until it says yes: a child between fork and exec still has its
				// parent's environment.
				if _, agent := cpu[pid]; !agent && !nslink.IsAgent(pid) {
					continue
				}
				if d, err := processCPU(pid); err == nil {
					cpu[pid] = d
				}
			}
		}
	}
	if werr != nil {
		return BinaryResult{}, fmt.Errorf("%s run %s: %w\n%s", bin, specPath, werr, tail(out.String(), 2000))
	}
	r := BinaryResult{Binary: bin}
	for _, d := range cpu {
		r.CPU += d
	}
	if len(cpu) == 0 {
		return r, fmt.Errorf("%s run %s: no agent process (%s=1 in its environment) was seen", bin, specPath, nslink.AgentEnv)
	}
	var ok bool
	if r.Frames, ok = framesWritten(out.String()); !ok {
		return r, fmt.Errorf("%s run %s: its output has no fidelity line with the frames written:\n%s", bin, specPath, tail(out.String(), 2000))
	}
	var run struct {
		Wall     float64 `json:"wall_s"`
		Faithful bool    `json:"faithful"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "run.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return r, fmt.Errorf("%s: run.json: %w", bin, err)
	}
	r.Wall, r.Faithful = time.Duration(run.Wall*float64(time.Second)), run.Faithful
	return r, nil
}

// childPIDs lists pid's children (every thread's; Go starts processes from any thread).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
