package netns_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fabriclab/fabriclab/suites/internal/labbin"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
)

// behind is a lab one agent cannot run in real time: at D=10 its links are 10 Gb/s (about a million
// frames a second per link), so the agent keeps the schedule in catch-up steps, ever further behind the
// wall clock. Its 100 MB flow needs 8 ms; the spec lasts 2 ms. Before the fix the agent played the run
// on to the flow's completion: duration_s 134 ms for this 2 ms spec, the flow "completed" at 8.5 ms.
const behind = `
name: ns-behind
dilation: 10
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 100MB, at: 0s}, {src: h2, dst: h3, size: 10KB, at: 1ms}]}]
duration: 2ms`

// labBinary gives the lab command once (the test command's shared binary, or one built here), for the
// specs that drive it as a user would (and signal it).
var labBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "fl-netns-suite-")
	if err != nil {
		return "", err
	}
	return labbin.Path(dir)
})

var _ = Describe("netns backend: a run ends when its spec ends", Label("netns"), func() {
	It("ends a lab behind the wall clock at its duration in engine time, with no completion after it", func() {
		r := runNetns(behind, netns.RunOptions{})
		end := 2 * clock.Millisecond
		GinkgoWriter.Printf("duration_s %.6g (spec %v), wall %v, catch-up steps %d, completed %d/%d\n",
			r.sum.DurationS, end, r.res.Wall, r.res.Monitor.CatchUpSteps, r.sum.Flows.Completed, r.sum.Flows.Total)
		// It really was behind: the loop caught up in steps, and 20 ms of dilated run took longer.
		Expect(r.res.Monitor.CatchUpSteps).To(BeNumerically(">", 0))
		Expect(r.res.Wall).To(BeNumerically(">", 20*time.Millisecond))
		Expect(within(r.sum.DurationS, end.Seconds())).To(BeNumerically("<=", 0.01))
		Expect(r.res.End).To(BeNumerically("<=", clock.Time(float64(end)*r.res.Dilation)))
		for _, f := range r.log.Flows {
			if f.Completed {
				Expect(f.Finish).To(BeNumerically("<=", r.res.End), "flow %d completed after the run's end", f.ID)
			}
		}
		Expect(r.sum.Flows.Completed).To(Equal(1), "the 100 MB flow cannot complete in 2 ms")
	})

	It("stops on SIGINT mid-catch-up within 2 s and writes the partial results, marked as such", func() {
		bin, err := labBinary()
		Expect(err).NotTo(HaveOccurred())
		dir := GinkgoT().TempDir()
		spec := filepath.Join(dir, "long.yaml")
		// Two 1 GB flows over 100 ms: at D=10 about half a minute of wall time behind the clock.
		Expect(os.WriteFile(spec, []byte(`
name: ns-long
backend: netns
dilation: 10
topology: {family: ndc, n: 2, k: 1, link: {rate: 100Gbps, delay: 1us}}
host: {transport: lossless, cc: none}
workload: [{kind: flows, list: [{src: h0, dst: h1, size: 1GB, at: 0s}, {src: h2, dst: h3, size: 1GB, at: 0s}]}]
duration: 100ms`), 0o644)).To(Succeed())
		out := filepath.Join(dir, "run")
		cmd := exec.Command(bin, "run", spec, "-o", out, "--name", "nsint"+runTag())
		buf := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = buf, buf
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { cmd.Process.Kill() })
		time.Sleep(4 * time.Second)
		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		sent := time.Now()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var werr error
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&werr))
		took := time.Since(sent)
		GinkgoWriter.Printf("returned %v after SIGINT (%v):\n%s\n", took, werr, buf.String())
		Expect(took).To(BeNumerically("<", 2*time.Second))
		Expect(buf.String()).To(ContainSubstring("interrupted"))
		var info map[string]any
		b, err := os.ReadFile(filepath.Join(out, "run.json"))
		Expect(err).NotTo(HaveOccurred(), "no run.json: %s", buf.String())
		Expect(json.Unmarshal(b, &info)).To(Succeed())
		Expect(info["partial"]).To(BeTrue())
		Expect(info["engine_s"]).To(BeNumerically(">", 0))
		Expect(info["engine_s"]).To(BeNumerically("<", 0.1))
		b, err = os.ReadFile(filepath.Join(out, "summary.json"))
		Expect(err).NotTo(HaveOccurred())
		var sum struct {
			DurationS float64             `json:"duration_s"`
			Flows     struct{ Total int } `json:"flows"`
		}
		Expect(json.Unmarshal(b, &sum)).To(Succeed())
		Expect(sum.DurationS).To(BeNumerically("~", info["engine_s"], 1e-9))
		Expect(lines(filepath.Join(out, "flows.csv"))).To(BeNumerically(">=", 3), "the unfinished flows' records are kept")
		left, _ := filepath.Glob(filepath.Join(nslink.NetnsDir, "fl-nsint"+runTag()+"-*"))
		Expect(left).To(BeEmpty())
	})
})

var _ = Describe("netns backend: flows that start when others complete", Label("netns"), func() {
	// D=5000 as the incasts: a round's pushes are a 4->1 incast on the server.
	ps := `
name: ns-ps
dilation: 5000
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: ps, server: h0, workers: 4, push_size: 200KB, broadcast_size: 100KB, rounds: 2}]
duration: 50ms`
	moe := `
name: ns-moe
dilation: 5000
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: moe, experts: 8, top_k: 2, tokens: 64, token_size: 4KB, zipf: 1.0, layers: 2}]
duration: 50ms`
	for _, c := range []struct {
		name, yaml string
		agents     int
	}{{"ps", ps, 1}, {"ps", ps, 2}, {"moe", moe, 1}, {"moe", moe, 2}} {
		It("runs a "+c.name+" workload identical to the virtual backend ("+map[bool]string{true: "one agent", false: "two agents: the split keeps each dependency in one agent"}[c.agents == 1]+")", func() {
			v := runVirtual(c.yaml)
			// A flow released by a completion starts at that instant, a dependency of no delay that
			// lockstep could not carry between agents; the split keeps both NICs in one agent
			// (harness/netns/split.go dependencyGroups), so two agents are exact as one is.
			// Not runFaithful: identity does not depend on the machine's load (identity_test.go).
			r := runNetns(c.yaml, netns.RunOptions{Agents: c.agents})
			Expect(r.sum.Fidelity.Differing).To(BeEmpty())
			Expect(r.sum.Fidelity.Faithful).To(BeTrue(), r.sum.Fidelity.Reason)
			Expect(r.sum.Fidelity.Reason).To(ContainSubstring("identical to the virtual backend's run flow by flow"))
			Expect(r.res.Monitor.LateStarts).To(BeZero(), "a dependency crossed agents")
			GinkgoWriter.Printf("%s, %d agents: %d/%d flows; FCT avg netns %.4g s, virtual %.4g s (%.2f%%)\n", c.name, c.agents,
				r.sum.Flows.Completed, r.sum.Flows.Total, r.sum.FCT.Avg, v.FCT.Avg, 100*within(r.sum.FCT.Avg, v.FCT.Avg))
			Expect(r.sum.Flows.Completed).To(Equal(v.Flows.Completed))
			Expect(r.sum.Flows.Completed).To(Equal(r.sum.Flows.Total))
			Expect(within(r.sum.FCT.Avg, v.FCT.Avg)).To(BeNumerically("<", 0.05))
			// A dependent flow never starts before the flows it waits for have completed.
			byID := map[uint32]float64{}
			for _, f := range r.log.Flows {
				byID[f.ID] = float64(f.Finish)
			}
			for _, f := range r.lab.Flows {
				for _, a := range f.After {
					for _, g := range r.log.Flows {
						if g.ID == f.ID {
							Expect(float64(g.Start)).To(BeNumerically(">=", byID[a]), "flow %d started before flow %d completed", f.ID, a)
						}
					}
				}
			}
		})
	}
})

// runTag keeps this process's lab names apart from a leftover of a crashed earlier run.
func runTag() string { return string(rune('a'+os.Getpid()%26)) + string(rune('a'+os.Getpid()/26%26)) }

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
