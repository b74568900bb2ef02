package nslink

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillAgentsOnlyOurs: an agents file naming a process that is not the lab's (its PID and start time
// copied in: a tampered or foreign file) makes KillAgents leave it alone, while a process the lab
// started with its token is killed (lab down used to SIGKILL whatever PID the file named: issue 23,
// defect 4). No root needed: the processes are this test's children.
func TestKillAgentsOnlyOurs(t *testing.T) {
	if os.Getenv("FABRICLAB_TEST_AGENT_SLEEP") != "" {
		time.Sleep(time.Minute)
		return
	}
	old := StateRoot
	StateRoot = t.TempDir()
	defer func() { StateRoot = old }()
	const lab = "agentstest"
	if err := os.MkdirAll(stateDir(lab), 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(env ...string) *exec.Cmd {
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "-test.run=^TestKillAgentsOnlyOurs$")
		cmd.Env = append(os.Environ(), append(env, "FABRICLAB_TEST_AGENT_SLEEP=1")...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	alive := func(cmd *exec.Cmd) bool { return syscall.Kill(cmd.Process.Pid, 0) == nil && !zombie(cmd.Process.Pid) }

	victim := exec.Command("sleep", "60") // another binary, no token
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	sameBinary := start() // our binary, but no token: someone else's run of it
	_, wrongEnv := ProcessToken(lab)
	otherToken := start(wrongEnv) // our binary with another lab process's token
	token, env := ProcessToken(lab)
	ours := start(env)
	time.Sleep(50 * time.Millisecond)

	var lines string
	for _, c := range []*exec.Cmd{victim, sameBinary, otherToken} {
		st, err := procStartTime(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		exe, _ := procExe(c.Process.Pid)
		selfExe, _ := os.Executable()
		// Every form of tampering: the old two-field line, a made-up token, our binary's path.
		lines += fmt.Sprintf("%d %s\n%d %s %s %s\n%d %s %s %s\n", c.Process.Pid, st, c.Process.Pid, st, token, exe, c.Process.Pid, st, token, selfExe)
	}
	if err := os.WriteFile(agentsPath(lab), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RecordProcess(lab, ours.Process.Pid, token); err != nil {
		t.Fatal(err)
	}
	n, err := KillAgents(lab)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*exec.Cmd{"sleep": victim, "our binary without the token": sameBinary, "our binary with another token": otherToken} {
		if !alive(c) {
			t.Errorf("%s (pid %d) was killed: not the lab's", name, c.Process.Pid)
		}
	}
	if alive(ours) || n != 1 {
		t.Errorf("the lab's own agent: alive %v, %d signalled; want killed, 1", alive(ours), n)
	}
	if _, err := os.Stat(filepath.Join(stateDir(lab), "agents")); err != nil {
		t.Fatal(err)
	}
}

func zombie(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return len(b) == 0 || strings.Contains(string(b), ") Z ")
}

// TestStatusJSONSnakeCase: lab status --json has snake_case keys like every other --json output (it
// had Go's field names: PIDAlive), and a lab that does not exist is reported as such, not in down's
// words (issue 23).
func TestStatusJSONSnakeCase(t *testing.T) {
	b, err := json.Marshal(LabStatus{Missing: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for k := range m {
		if k != strings.ToLower(k) {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	if _, ok := m["pid_alive"]; !ok {
		t.Errorf("no pid_alive in %s", b)
	}
	old := StateRoot
	StateRoot = t.TempDir()
	defer func() { StateRoot = old }()
	_, err = ReadState("nosuch")
	if !errors.Is(err, ErrNoLab) || strings.Contains(err.Error(), "remove") {
		t.Errorf("ReadState of no lab: %v", err)
	}
}

// TestOwnerAlive: a lab's owner is alive while its PID runs with the start time the state file
// recorded; a killed owner, a zombie and a later process that took the PID (another start time) are not
// (lab status called a SIGKILLed run's lab "up": issue 8 of the review).
func TestOwnerAlive(t *testing.T) {
	p := exec.Command("sleep", "60")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	pid := p.Process.Pid
	st, err := procStartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !ownerAlive(&State{PID: pid, PIDStart: st}) || !ownerAlive(&State{PID: pid}) {
		t.Fatal("a running owner is not alive")
	}
	if ownerAlive(&State{PID: pid, PIDStart: st + "1"}) {
		t.Error("a process of another start time (a reused PID) taken for the owner")
	}
	p.Process.Kill()
	for i := 0; i < 100 && !zombie(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if ownerAlive(&State{PID: pid, PIDStart: st}) {
		t.Error("a killed owner (a zombie not yet reaped) is alive")
	}
	p.Wait()
	if ownerAlive(&State{PID: pid, PIDStart: st}) {
		t.Error("a killed owner is alive")
	}
}

// TestTokenReadAgainWhileEnvironEmpty: a process whose /proc/PID/environ reads empty (just after exec,
// before the kernel laid out its environment) is read again, so a lab down racing a lab up finds its
// token (it took the new supervisor for another's and left it running); one that stays empty is still
// not the lab's.
func TestTokenReadAgainWhileEnvironEmpty(t *testing.T) {
	p := exec.Command("sleep", "60") // a live, not zombie, process for procZombie to look at
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Process.Kill(); p.Wait() })
	defer func(r func(int) ([]byte, error), d time.Duration) { readEnviron, envSettle = r, d }(readEnviron, envSettle)
	token, env := ProcessToken("envtest")
	reads := 0
	readEnviron = func(int) ([]byte, error) {
		reads++
		if reads <= 3 {
			return nil, nil // exec not done laying out the environment
		}
		return []byte("PATH=/bin\x00" + env + "\x00"), nil
	}
	if !HasToken(p.Process.Pid, token) || reads != 4 {
		t.Fatalf("token after 3 empty reads: not found (%d reads)", reads)
	}
	envSettle = 50 * time.Millisecond
	readEnviron = func(int) ([]byte, error) { return nil, nil }
	start := time.Now()
	if HasToken(p.Process.Pid, token) {
		t.Fatal("an environment that stays empty taken for the lab's")
	}
	if d := time.Since(start); d < envSettle {
		t.Errorf("gave up after %v, before envSettle %v", d, envSettle)
	}
}
