package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The netns suite's 8->1 PFC incast on NDC(4,1), without congestion control: queues and pauses (42),
// and links between machines whichever way the fabric is split. Without a dilation (incastAuto) a run
// takes the one its machines keep pace at, chosen from their own calibrations as on one machine, so
// that it is faithful on a slow machine too (a VM under emulation); the results, in the paper's units,
// are the same at any whole D. At D=5000 (incast: 20 Mb/s links, 5 ms of dilated delay) for what is
// about that D: the clock tolerance it gives (2.5 ms), the wall time of the long runs, and refusals
// made before any run.
const incastAuto = `name: cl-incast
backend: netns
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: pfc}
host: {transport: lossless, cc: none}
workload: [{kind: incast, senders: 8, size: 200KB, receiver: h0, at: 0s}]
duration: 100ms
`

var incast = strings.Replace(incastAuto, "backend: netns\n", "backend: netns\ndilation: 5000\n", 1)

type summary struct {
	Flows struct{ Completed int }       `json:"flows"`
	FCT   struct{ Avg float64 }         `json:"fct_s"`
	Drops struct{ Lossless, Lossy int } `json:"drops"`
	Pause struct{ Sent, Received int }  `json:"pauses"`
}

type runInfo struct {
	Faithful bool     `json:"faithful"`
	Partial  bool     `json:"partial"`
	Lost     []string `json:"lost"`
	// MeasuredUntil: a partial run's records end at the last lockstep window every machine reached.
	MeasuredUntil float64 `json:"measured_until_s"`
	// Against is --check-against virtual's finding (run.json check_against_virtual).
	Against *struct {
		Identical bool `json:"identical"`
		Reused    bool `json:"reused_cross_check"`
	} `json:"check_against_virtual"`
	dir string // the run directory (faithfulRun)
	// DilationChosen is why the run took its D when the spec gave none (run.json dilation_chosen).
	DilationChosen string `json:"dilation_chosen"`
	Cluster        *struct {
		Machines []struct {
			Name  string `json:"name"`
			Clock struct {
				Offset      int64 `json:"offset_ns"`
				Uncertainty int64 `json:"uncertainty_ns"`
			} `json:"clock"`
		} `json:"machines"`
	} `json:"cluster"`
}

func readJSON(path string, v any) {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	Expect(json.Unmarshal(b, v)).To(Succeed(), "%s", path)
}

var seq int

// run runs lab with args (a spec written to the temp dir first) and returns its combined output and
// error; out is the run directory.
func run(spec string, args ...string) (out, dirOut string, err error) {
	seq++
	p := filepath.Join(dir, fmt.Sprintf("spec%d.yaml", seq))
	Expect(os.WriteFile(p, []byte(spec), 0o644)).To(Succeed())
	dirOut = filepath.Join(dir, fmt.Sprintf("run%d", seq))
	name := fmt.Sprintf("cl%d-%s", seq, tag[len(tag)-4:])
	cmd := exec.Command(labBin, append([]string{"run", p, "-o", dirOut, "--name", name}, args...)...)
	b, err := cmd.CombinedOutput()
	GinkgoWriter.Printf("lab run %s: %s\n", strings.Join(args, " "), b)
	return string(b), dirOut, err
}

// faithfulRun runs until faithful (3 tries: a loaded machine can make a run late, and suites never
// assert on an unfaithful run).
func faithfulRun(spec string, args ...string) (summary, runInfo) {
	var reasons []string
	for try := 0; try < 3; try++ {
		out, d, err := run(spec, args...)
		Expect(err).NotTo(HaveOccurred(), out)
		var s summary
		var ri runInfo
		readJSON(filepath.Join(d, "summary.json"), &s)
		readJSON(filepath.Join(d, "run.json"), &ri)
		ri.dir = d
		if ri.Faithful {
			return s, ri
		}
		reasons = append(reasons, out)
	}
	Fail("no faithful run in 3 tries:\n" + strings.Join(reasons, "\n---\n"))
	return summary{}, runInfo{}
}

// same asserts a run over machines matched the run on one: the same completed flows, FCT and pauses
// within 1%, the same drops. Measured (loaded 2-core VM, agents in containers without SCHED_FIFO):
// identical, FCT avg 8.168e-05 s on 1, 2 and 3 machines, 42 pauses each: frames due at a device at the
// same instant are taken in port order, so where the loop read them, and over which machine they came,
// does not reach the results.
func same(one, many summary) {
	GinkgoWriter.Printf("FCT avg: one machine %.5g s, over machines %.5g s (%+.2f%%); pauses %d vs %d\n",
		one.FCT.Avg, many.FCT.Avg, 100*(many.FCT.Avg/one.FCT.Avg-1), one.Pause.Sent, many.Pause.Sent)
	Expect(many.Flows.Completed).To(Equal(one.Flows.Completed))
	Expect(many.FCT.Avg).To(BeNumerically("~", one.FCT.Avg, one.FCT.Avg*0.01))
	Expect(float64(many.Pause.Sent)).To(BeNumerically("~", float64(one.Pause.Sent), max(float64(one.Pause.Sent)*0.01, 1)))
	Expect(many.Drops).To(Equal(one.Drops))
}

var _ = Describe("A lab over several machines", Ordered, ContinueOnFailure, func() {
	var one summary
	BeforeAll(func() {
		one, _ = faithfulRun(incastAuto) // this host, one agent
		Expect(one.Flows.Completed).To(Equal(8))
		Expect(one.Pause.Sent).To(BeNumerically(">", 0), "the incast must pause for the comparison to mean something")
	})

	It("runs a spec across two machines with the results of one, byte for byte the virtual backend's", Label("smoke"), func() {
		// --check-against virtual exits 3 (faithfulRun fails) on any flow, drop or pause record that differs.
		s, ri := faithfulRun(incastAuto, "--cluster", clusterFile("c2", "secret.key", "m1", "m2"), "--check-against", "virtual")
		same(one, s)
		Expect(ri.Against).NotTo(BeNil(), "run.json has no check_against_virtual")
		Expect(ri.Against.Identical).To(BeTrue())
		Expect(ri.Against.Reused).To(BeTrue(), "the cross-check's virtual run is reported, not run twice")
		Expect(ri.DilationChosen).To(MatchRegexp(`machine m[12] \(the slowest of 2`), "D chosen from the machines' own calibrations")
		// The files themselves, against a run of the same spec on the virtual backend.
		vspec, vdir := filepath.Join(dir, "c2-virtual.yaml"), filepath.Join(dir, "c2-virtual")
		Expect(os.WriteFile(vspec, []byte(strings.Replace(incastAuto, "backend: netns", "backend: virtual", 1)), 0o644)).To(Succeed())
		out, err := exec.Command(labBin, "run", vspec, "-o", vdir, "-q").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		for _, f := range []string{"flows.csv", "fct.txt", "pfc.csv", "drops.csv"} {
			a, err := os.ReadFile(filepath.Join(ri.dir, f))
			Expect(err).NotTo(HaveOccurred())
			b, err := os.ReadFile(filepath.Join(vdir, f))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(a)).To(Equal(string(b)), "%s differs from the virtual backend's", f)
		}
		Expect(ri.Cluster).NotTo(BeNil())
		Expect(ri.Cluster.Machines).To(HaveLen(2))
		for _, m := range ri.Cluster.Machines {
			Expect(m.Clock.Uncertainty).To(BeNumerically(">", 0), "run.json records each machine's clock offset")
		}
		nothingOn("m1")
		nothingOn("m2")
	})

	It("refuses a coordinator without the secret, and makes nothing", Label("smoke"), func() {
		out, _, err := run(incast, "--cluster", clusterFile("wrong", "wrong.key", "m1", "m2"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("authentication failed"))
		// A client that skips the handshake gets the challenge and a closed connection, nothing else.
		c, err := net.Dial("tcp", ips["m1"]+":7070")
		Expect(err).NotTo(HaveOccurred())
		c.Write([]byte(`{"type":"up","up":{"lab":"evil","nodes":[0],"mtu":1500,"graph":{"nodes":[{"name":"x"}]}}}` + "\n"))
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		got, _ := io.ReadAll(c)
		c.Close()
		Expect(len(got)).To(Equal(40), "bytes sent to an unauthenticated client: the 8-byte magic and 32-byte challenge only")
		Eventually(func() string { o, _ := docker("logs", tag+"-m1"); return o }, 15*time.Second).Should(ContainSubstring("refused"))
		nothingOn("m1")
		nothingOn("m2")
	})

	It("refuses an underlay whose MTU cannot carry the lab's links in VXLAN, before anything is made", Label("smoke"), func() {
		startAgent("m4", smallNet)
		// host.mtu 1450: the lab's MTU (its largest frame plus the lockstep stamp) passes 1500 - 50.
		big := strings.Replace(incast, "cc: none}", "cc: none, mtu: 1450}", 1)
		out, _, err := run(big, "--cluster", clusterFile("small", "secret.key", "m1", "m4"))
		Expect(err).To(HaveOccurred())
		Expect(out).To(MatchRegexp(`machine m4: underlay MTU 1500 is below the lab's MTU \d+ \+ 50`))
		Expect(out).To(ContainSubstring("nothing was made"))
		nothingOn("m1")
		nothingOn("m4")
	})

	It("runs a spec across two machines over a 1500-byte underlay with the results of one (host.mtu 1000: the lab's MTU follows it)", func() {
		startAgent("m6", smallNet)
		startAgent("m7", smallNet)
		s, _ := faithfulRun(incastAuto, "--cluster", clusterFile("c1500", "secret.key", "m6", "m7"))
		same(one, s)
		nothingOn("m6")
		nothingOn("m7")
	})

	It("refuses a machine whose clock is further off than the run tolerates", func() {
		startAgent("m5", netName, "--test-clock-offset", "10ms")
		out, _, err := run(incast, "--cluster", clusterFile("skew", "secret.key", "m1", "m5"))
		Expect(err).To(HaveOccurred())
		// 10 ms as measured: within the probe's uncertainty (tens of microseconds), e.g. 9.984ms.
		Expect(out).To(MatchRegexp(`machine m5: clock (10(\.\d+)?|9\.9\d*)ms ± .* more than the 2\.5ms this run tolerates`))
		Expect(out).NotTo(ContainSubstring("machine m1: clock"))
		nothingOn("m1")
		nothingOn("m5")
	})

	It("runs a spec across three machines with the results of one", func() {
		s, ri := faithfulRun(incastAuto, "--cluster", clusterFile("c3", "secret.key", "m1", "m2", "m3"))
		same(one, s)
		Expect(ri.Cluster.Machines).To(HaveLen(3))
		for _, m := range []string{"m1", "m2", "m3"} {
			nothingOn(m)
		}
	})

	It("leaves nothing on any machine when the coordinator is killed mid-run", func() {
		long := strings.Replace(incast, "size: 200KB", "size: 20MB", 1)
		p := filepath.Join(dir, "long-coord.yaml")
		Expect(os.WriteFile(p, []byte(long), 0o644)).To(Succeed())
		cmd := exec.Command(labBin, "run", p, "-o", filepath.Join(dir, "coordkilled"), "--name", "clq-"+tag[len(tag)-4:],
			"--cluster", clusterFile("coord", "secret.key", "m1", "m3"))
		var buf syncBuffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		Expect(cmd.Start()).To(Succeed())
		Eventually(buf.String, 60*time.Second, 100*time.Millisecond).Should(ContainSubstring("running"))
		for _, m := range []string{"m1", "m3"} {
			out, _ := docker("exec", tag+"-"+m, "/lab", "status")
			Expect(out).To(ContainSubstring("clq-"), "machine %s has the lab while it runs", m)
		}
		Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
		cmd.Wait()
		nothingOn("m1")
		nothingOn("m3")
	})

	It("ends with partial results when a machine is lost mid-run, and leaves nothing on the others", func() {
		long := strings.Replace(incast, "size: 200KB", "size: 20MB", 1) // about 30 s of wall time
		seq++
		p := filepath.Join(dir, "long.yaml")
		Expect(os.WriteFile(p, []byte(long), 0o644)).To(Succeed())
		outDir := filepath.Join(dir, "killed")
		cmd := exec.Command(labBin, "run", p, "-o", outDir, "--name", "clk-"+tag[len(tag)-4:], "--cluster", clusterFile("kill", "secret.key", "m1", "m2", "m3"))
		var buf syncBuffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() { cmd.Process.Signal(syscall.SIGKILL) })
		Eventually(buf.String, 60*time.Second, 100*time.Millisecond).Should(ContainSubstring("running"))
		time.Sleep(2 * time.Second)
		mustDocker("kill", tag+"-m2")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		Eventually(done, 90*time.Second).Should(Receive(&err))
		Expect(err).To(HaveOccurred(), buf.String())
		Expect(buf.String()).To(ContainSubstring("partial results"))
		var ri runInfo
		readJSON(filepath.Join(outDir, "run.json"), &ri)
		Expect(ri.Partial).To(BeTrue())
		Expect(ri.Faithful).To(BeFalse())
		Expect(ri.Lost).To(HaveLen(1))
		Expect(ri.Lost[0]).To(ContainSubstring("machine m2"))
		nothingOn("m1")
		nothingOn("m3")
	})
})

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
