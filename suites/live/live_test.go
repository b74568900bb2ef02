package live_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/nslink"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/live"
)

func lab(args ...string) string {
	out, err := exec.Command(labBin, args...).CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "lab %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

var lossRE = regexp.MustCompile(`(\d+) packets transmitted, (\d+) received`)
var rttRE = regexp.MustCompile(`rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)`)

// ping runs ping in src's namespace and returns how many replies came back and the smallest RTT (ms).
func ping(name, src, dst string, n int) (int, float64) {
	out, _ := exec.Command(labBin, "exec", name, src, "--", "ping", "-n", "-q", "-c", fmt.Sprint(n), "-i", "0.2", "-W", "2", dst).CombinedOutput()
	m := lossRE.FindStringSubmatch(string(out))
	ExpectWithOffset(1, m).NotTo(BeNil(), "ping %s -> %s:\n%s", src, dst, out)
	got, _ := strconv.Atoi(m[2])
	min := 0.0
	if r := rttRE.FindStringSubmatch(string(out)); r != nil {
		min, _ = strconv.ParseFloat(r[1], 64)
	}
	return got, min
}

func inspect(name string) *live.Inspect {
	var in live.Inspect
	ExpectWithOffset(1, json.Unmarshal([]byte(lab("inspect", name, "--json")), &in)).To(Succeed())
	return &in
}

func port(in *live.Inspect, dev string, p int) lockstep.LivePort {
	for _, d := range in.Devices {
		if d.Name == dev {
			return d.Ports[p]
		}
	}
	Fail("no device " + dev)
	return lockstep.LivePort{}
}

// allPairs pings every unordered host pair (8 at a time) and returns the failures and each pair's
// smallest RTT.
func allPairs(name string, hosts int) ([]string, map[[2]int]float64) {
	var mu sync.Mutex
	var bad []string
	rtt := map[[2]int]float64{}
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for a := 0; a < hosts; a++ {
		for b := a + 1; b < hosts; b++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				got, min := ping(name, fmt.Sprintf("h%d", a), fmt.Sprintf("h%d", b), 3)
				mu.Lock()
				defer mu.Unlock()
				rtt[[2]int{a, b}] = min
				if got != 3 {
					bad = append(bad, fmt.Sprintf("h%d->h%d: %d of 3 replies", a, b, got))
				}
			}()
		}
	}
	wg.Wait()
	return bad, rtt
}

// pcapRecords counts the records of a classic pcap file.
func pcapRecords(path string) int {
	b, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, len(b)).To(BeNumerically(">=", 24), "no pcap header")
	n := 0
	for off := 24; off+16 <= len(b); n++ {
		off += 16 + int(binary.LittleEndian.Uint32(b[off+8:]))
	}
	return n
}

// leavesNothing checks that `lab down` removed the namespaces, the state directory with the control
// socket, the hosts files, and the supervisor and agent processes.
func leavesNothing(name string, pids []int) {
	lab("down", name)
	left, _ := filepath.Glob(filepath.Join(nslink.NetnsDir, nslink.NSName(name, "*")))
	Expect(left).To(BeEmpty(), "namespaces left")
	left, _ = filepath.Glob(filepath.Join(live.EtcNetns, nslink.NSName(name, "*")))
	Expect(left).To(BeEmpty(), "hosts files left")
	_, err := os.Stat(nslink.StateDir(name))
	Expect(os.IsNotExist(err)).To(BeTrue(), "state directory left")
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		Expect(err != nil || strings.Contains(string(b), ") Z ")).To(BeTrue(), "process %d still running", pid)
	}
}

// labPids are the supervisor's and agent's PIDs from the lab's agents file.
func labPids(name string) []int {
	b, err := os.ReadFile(filepath.Join(nslink.StateDir(name), "agents"))
	Expect(err).NotTo(HaveOccurred())
	var pids []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		p, _ := strconv.Atoi(f[0])
		pids = append(pids, p)
	}
	Expect(pids).To(HaveLen(2), "a supervisor and one agent")
	return pids
}

var _ = Describe("live labs", Ordered, func() {
	It("NDC(2,1): every host pair pings through the relay and switch engines at the modelled RTT; a failed link detours and comes back", func() {
		name := labName("ndc")
		lab("up", "ndc", "n=2", "k=1", "--name", name, "-q")
		pids := labPids(name)
		DeferCleanup(func() { exec.Command(labBin, "down", name).Run() })
		bad, rtt := allPairs(name, 4)
		Expect(bad).To(BeEmpty())
		// 1 us links at D=1000 are 1 ms each; every hop, the hosts' own included, is an engine's link:
		// h0-h1 share switch s0 (2 links each way), h0-h3 differ in both digits (4 links each way).
		for pair, links := range map[[2]int]int{{0, 1}: 2, {0, 3}: 4} {
			model := 2 * float64(links)
			AddReportEntry(fmt.Sprintf("ping RTT h%d-h%d", pair[0], pair[1]), fmt.Sprintf("%.3f ms (model %.0f ms + serialization)", rtt[pair], model))
			Expect(rtt[pair]).To(BeNumerically(">=", model), "faster than the links' delay")
			Expect(rtt[pair]).To(BeNumerically("<", model*1.5+2))
		}
		lab("link", name, "h0", "s0", "down")
		got, detour := ping(name, "h0", "h1", 3)
		Expect(got).To(Equal(3), "h0 -> h1 did not fail over to the path through s2, h2 (or h3) and s1")
		AddReportEntry("h0-h1 with h0-s0 down", fmt.Sprintf("%.3f ms (6 links each way: model 12 ms)", detour))
		Expect(detour).To(BeNumerically(">=", 12))
		in := inspect(name)
		Expect(port(in, "s0", 0).Fault).To(Equal("down"))
		Expect(in.Events).To(HaveLen(1))
		lab("link", name, "h0", "s0", "up")
		got, back := ping(name, "h0", "h1", 3)
		Expect(got).To(Equal(3))
		Expect(back).To(BeNumerically("<", 6), "the direct path is not back")
		leavesNothing(name, pids)
	})

	It("fat-tree(4): 120 host pairs ping, iperf3 stays under the link rate, counters match what was sent, ECMP fails over", func() {
		name := labName("ft")
		out := lab("up", "fattree", "k=4", "--name", name, "-q")
		Expect(out).To(ContainSubstring("16 kernel hosts"))
		pids := labPids(name)
		DeferCleanup(func() { exec.Command(labBin, "down", name).Run() })
		bad, rtt := allPairs(name, 16)
		Expect(bad).To(BeEmpty())
		// Between pods: 6 links each way (the edge switch applies a kernel host's uplink delay on arrival).
		AddReportEntry("ping RTT h0-h15", fmt.Sprintf("%.3f ms (model 12 ms + serialization)", rtt[[2]int{0, 15}]))
		Expect(rtt[[2]int{0, 15}]).To(BeNumerically(">=", 12))
		Expect(rtt[[2]int{0, 15}]).To(BeNumerically("<", 20))
		AddReportEntry("ping RTT h0-h1", fmt.Sprintf("%.3f ms (model 4 ms + serialization)", rtt[[2]int{0, 1}]))
		Expect(rtt[[2]int{0, 1}]).To(BeNumerically(">=", 4))

		// A capture of s0:p0 while h0 pings h1 5 times holds the 5 requests it read and the 5 replies it sent.
		pcap := filepath.Join(GinkgoT().TempDir(), "s0p0.pcap")
		capt := exec.Command(labBin, "capture", name, "s0:p0", "-w", pcap, "--for", "3s")
		Expect(capt.Start()).To(Succeed())
		Eventually(func() error { _, err := os.Stat(pcap); return err }).WithTimeout(5 * time.Second).Should(Succeed())
		got, _ := ping(name, "h0", "h1", 5)
		Expect(got).To(Equal(5))
		Expect(capt.Wait()).To(Succeed())
		Expect(pcapRecords(pcap)).To(Equal(10))

		// Counters: 20 echo requests h0 -> h1 cross s0 from p0 to p1, the replies back; nothing else
		// moves on those ports (no ARP, no IPv6). 98-byte frames: 84 of IPv4 + ICMP, 14 of Ethernet.
		before := inspect(name)
		got, _ = ping(name, "h0", "h1", 20)
		Expect(got).To(Equal(20))
		after := inspect(name)
		for _, c := range []struct{ p int }{{0}, {1}} {
			b, a := port(before, "s0", c.p), port(after, "s0", c.p)
			Expect(a.TxFrames-b.TxFrames).To(Equal(uint64(20)), "s0:p%d tx frames", c.p)
			Expect(a.RxFrames-b.RxFrames).To(Equal(uint64(20)), "s0:p%d rx frames", c.p)
			Expect(a.TxBytes-b.TxBytes).To(Equal(uint64(20*98)), "s0:p%d tx bytes", c.p)
		}

		// iperf3 h0 -> h15 (inter-pod): the engines serialize at the dilated 100 Mb/s.
		srv := exec.Command(labBin, "exec", name, "h15", "--", "iperf3", "-s")
		Expect(srv.Start()).To(Succeed())
		stopSrv := func() { srv.Process.Kill(); srv.Wait() }
		defer stopSrv()
		var res struct {
			Error string `json:"error"`
			End   struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
					Bytes         int64   `json:"bytes"`
				} `json:"sum_received"`
			} `json:"end"`
		}
		var js []byte
		// The server may not listen yet: iperf3 then says so in its JSON, and the client is run again.
		Eventually(func() string {
			var err error
			js, err = exec.Command(labBin, "exec", name, "h0", "--", "iperf3", "-c", "h15", "-t", "4", "-J").Output()
			res.Error = ""
			if jerr := json.Unmarshal(js, &res); jerr != nil {
				return fmt.Sprintf("%v %v: %q", err, jerr, js)
			}
			return res.Error
		}).WithTimeout(30*time.Second).WithPolling(500*time.Millisecond).Should(BeEmpty(), "iperf3 client")
		stopSrv()
		gp := res.End.SumReceived.BitsPerSecond
		AddReportEntry("iperf3 h0 -> h15", fmt.Sprintf("%.1f Mb/s of the 100 Mb/s link (%.0f%%)", gp/1e6, 100*gp/100e6))
		Expect(gp).To(BeNumerically(">", 10e6), "iperf3 barely moved:\n%s", js)
		Expect(gp).To(BeNumerically("<=", 100e6), "faster than the emulated link")
		in := inspect(name)
		Expect(port(in, "s0", 0).RxBytes).To(BeNumerically(">=", res.End.SumReceived.Bytes), "s0 saw less than iperf3 delivered")

		// s0's uplinks are s0:p2 (to s8) and s0:p3 (to s9): one down, ECMP keeps h0 -> h15 on the other;
		// both down, h0 is cut off from other pods; repaired, it is back.
		lab("link", name, "s0", "s8", "down")
		got, _ = ping(name, "h0", "h15", 5)
		Expect(got).To(Equal(5), "no failover to s9")
		lab("link", name, "s0", "s9", "down")
		got, _ = ping(name, "h0", "h15", 3)
		Expect(got).To(BeZero(), "h0 reached another pod with both uplinks down")
		in = inspect(name)
		// With both uplinks cut the recomputed tables give s0 no route out of the pod: it drops the
		// requests itself, as no-route, rather than sending them into a dead cable.
		var s0drops uint64
		for _, d := range in.Devices {
			if d.Name == "s0" {
				s0drops = d.Drops
			}
		}
		Expect(s0drops).To(BeNumerically(">=", 3), "s0 dropped none of the pings it could not route")
		Expect(in.Events).To(HaveLen(2))
		lab("link", name, "s0", "s9", "up")
		lab("link", name, "s0", "s8", "up")
		got, _ = ping(name, "h0", "h15", 3)
		Expect(got).To(Equal(3))

		// lab run --lab: a spec's workload on the running lab, as kernel TCP flows, into a run directory.
		dir := GinkgoT().TempDir()
		sp := filepath.Join(dir, "w.yaml")
		Expect(os.WriteFile(sp, []byte(`name: onlab
topology: {family: fattree, k: 4}
workload:
  - {kind: flows, list: [{src: h0, dst: h15, size: 1MB, at: 0s}, {src: h1, dst: h14, size: 1MB, at: 10us}]}
duration: 100ms
`), 0o644)).To(Succeed())
		lab("run", sp, "--lab", name, "-o", filepath.Join(dir, "run"), "-q")
		var sm struct {
			Flows struct{ Completed int } `json:"flows"`
		}
		js, _ = os.ReadFile(filepath.Join(dir, "run", "summary.json"))
		Expect(json.Unmarshal(js, &sm)).To(Succeed())
		Expect(sm.Flows.Completed).To(Equal(2))
		leavesNothing(name, pids)
	})

	It("schedules a spec's faults: on both backends alike (faults.csv), and the flow completes around the failed uplink", func() {
		dir := GinkgoT().TempDir()
		spec := func(backend string) string {
			p := filepath.Join(dir, backend+".yaml")
			Expect(os.WriteFile(p, []byte(`name: lvfault
backend: `+backend+`
dilation: 1000
topology: {family: fattree, k: 4, link: {rate: 10Gbps, delay: 1us}}
switch: {flow_control: lossy}
host: {transport: irn}
routing: {algorithm: shortest}
workload:
  - {kind: flows, list: [{src: h0, dst: h15, size: 2MB, at: 0s}]}
duration: 50ms
faults:
  - {at: 200us, link: [s0, s8], state: down}
  - {at: 1ms, link: [s0, s8], state: up}
`), 0o644)).To(Succeed())
			return p
		}
		var csv []string
		for _, b := range []string{"virtual", "netns"} {
			out := filepath.Join(dir, "run-"+b)
			args := []string{"run", spec(b), "-o", out, "-q"}
			if b == "netns" { // --name names a netns lab; a virtual run refuses it (it would be ignored)
				args = append(args, "--name", labName("sf"))
			}
			lab(args...)
			f, err := os.ReadFile(filepath.Join(out, "faults.csv"))
			Expect(err).NotTo(HaveOccurred(), "%s: no faults.csv", b)
			csv = append(csv, string(f))
			var sm struct {
				Flows struct{ Completed int } `json:"flows"`
			}
			js, _ := os.ReadFile(filepath.Join(out, "summary.json"))
			Expect(json.Unmarshal(js, &sm)).To(Succeed())
			Expect(sm.Flows.Completed).To(Equal(1), "%s: the flow did not complete", b)
		}
		Expect(csv[1]).To(Equal(csv[0]))
		Expect(csv[0]).To(ContainSubstring("0.0002,s0-s8,down,12"))
	})
})
