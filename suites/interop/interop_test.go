package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/netns"
	_ "github.com/fabriclab/fabriclab/harness/netns/agent" // the agents run inside this test binary
	"github.com/fabriclab/fabriclab/harness/virtual"
	"github.com/fabriclab/fabriclab/lab"
	"github.com/fabriclab/fabriclab/lab/spec"
	"github.com/fabriclab/fabriclab/report"
)

// need fails (never skips) when a tool the suite runs is missing: scripts/provision.sh installs them.
func need(tools ...string) {
	for _, t := range tools {
		_, err := exec.LookPath(t)
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s is needed (sudo bash scripts/provision.sh installs it)", t)
	}
}

func run(name string, args ...string) string {
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ExpectWithOffset(1, cmd.Run()).To(Succeed(), "%s %v: %s", name, args, errb.String())
	return out.String()
}

var _ = Describe("outputs the field's tools read", Ordered, Label("interop"), func() {
	var dir, pcapDir string
	var lines []report.FCTLine

	BeforeAll(func() {
		need("python3", "awk", "sort", "tshark", "mergecap")
		dir = GinkgoT().TempDir()
		pcapDir = filepath.Join(dir, "pcap")
		s, err := spec.Load("testdata/portfc-ndc31.yaml")
		Expect(err).NotTo(HaveOccurred())
		l, err := lab.Build(s)
		Expect(err).NotTo(HaveOccurred())
		f, err := virtual.New(l)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.CapturePorts("all", pcapDir)).To(Succeed())
		res := f.Run(context.Background())
		Expect(f.ClosePcaps()).To(Succeed())
		Expect(res.AllDone).To(BeTrue())
		_, err = report.WriteRunDir(dir, f.Log, report.Meta{Dilation: 1, Duration: res.End, Graph: l.Graph})
		Expect(err).NotTo(HaveOccurred())
		b, err := os.ReadFile(filepath.Join(dir, report.FCTFile))
		Expect(err).NotTo(HaveOccurred())
		lines, err = report.ReadFCT(bytes.NewReader(b))
		Expect(err).NotTo(HaveOccurred())
	})

	It("fct.txt carries HPCC's classes in dport: 100 normal, 200 incast, as flow.txt", func() {
		class := map[int]int{}
		for _, l := range lines {
			class[l.DPort]++
		}
		Expect(class).To(HaveLen(2))
		Expect(class[100]).To(BeNumerically(">", 100))
		Expect(class[200]).To(Equal(16))
	})

	// bins parses the transcription's --repr output: pct size p50 p95 p99 per line.
	bins := func(out string) [][5]float64 {
		var bs [][5]float64
		for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(ln)
			ExpectWithOffset(1, f).To(HaveLen(5), ln)
			var b [5]float64
			for i, x := range f {
				v, err := strconv.ParseFloat(x, 64)
				ExpectWithOffset(1, err).NotTo(HaveOccurred())
				b[i] = v
			}
			bs = append(bs, b)
		}
		return bs
	}

	for _, c := range []struct{ typ, step int }{{0, 5}, {1, 25}, {0, 10}} {
		It(fmt.Sprintf("fct_analysis.py -t %d -s %d (Python 3 transcription, real awk and sort) gives our bins: 0 bins differ", c.typ, c.step), func() {
			out := run("python3", "testdata/fct_analysis3.py", filepath.Join(dir, report.FCTFile), "-t", strconv.Itoa(c.typ), "-s", strconv.Itoa(c.step), "--repr")
			theirs := bins(out)
			ours, err := report.HPCCBins(lines, report.HPCCBinOptions{Type: c.typ, Step: c.step})
			Expect(err).NotTo(HaveOccurred())
			Expect(ours).To(HaveLen(100 / c.step))
			differ := 0
			for i, b := range ours {
				if theirs[i] != [5]float64{b.Pct, float64(b.MaxSize), b.P50, b.P95, b.P99} {
					differ++
					GinkgoWriter.Printf("bin %d: script %v, ours %+v\n", i, theirs[i], b)
				}
			}
			Expect(theirs).To(HaveLen(len(ours)))
			Expect(differ).To(Equal(0), "bins that differ")
		})
	}

	It("slowdown_bins.txt is the script's printed table, line for line", func() {
		out := run("python3", "testdata/fct_analysis3.py", filepath.Join(dir, report.FCTFile))
		b, err := os.ReadFile(filepath.Join(dir, report.BinsFile))
		Expect(err).NotTo(HaveOccurred())
		var ours []string
		for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			f := strings.Split(ln, "\t")
			ours = append(ours, f[0]+"\t"+f[1])
		}
		Expect(ours).To(Equal(strings.Split(strings.TrimSpace(out), "\n")))
	})

	It("tshark with the Lua dissector decodes every frame: PortFC decoded, 0 malformed, 0 MAD, messages SEND_FIRST..SEND_LAST", func() {
		ops := checkTshark(dir, pcapDir, 10000, 1000)
		Expect(ops["4"]).To(BeNumerically(">", 0), "SEND_ONLY (one-packet flows)")
	})

	It("every RoCEv2 frame's ICRC is the standard's (computed independently in Python): 0 bad", func() {
		checkICRC(pcapDir, 10000)
	})
})

// The same checks on captures of real frames: the PortFC incast on the netns backend (needs root).
var _ = Describe("netns captures the field's tools read", Ordered, Label("interop", "netns"), func() {
	var dir, pcapDir string
	var start time.Time

	BeforeAll(func() {
		need("python3", "tshark", "mergecap")
		Expect(os.Geteuid()).To(Equal(0), "the netns backend needs root")
		dir = GinkgoT().TempDir()
		pcapDir = filepath.Join(dir, "pcap")
		Expect(os.MkdirAll(pcapDir, 0o755)).To(Succeed())
		s, err := spec.Parse([]byte(`name: interop-netns-portfc
backend: netns
dilation: 5000
topology: {family: ndc, n: 4, k: 1}
switch: {flow_control: portfc}
host: {transport: lossless, cc: dcqcn}
workload: [{kind: incast, senders: 8, size: 200KB, receiver: h0, at: 0s}]
duration: 100ms
`))
		Expect(err).NotTo(HaveOccurred())
		l, err := lab.Build(s)
		Expect(err).NotTo(HaveOccurred())
		start = time.Now()
		_, res, err := netns.Run(context.Background(), l, netns.RunOptions{Pcap: "all", PcapDir: pcapDir})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.AllDone).To(BeTrue())
	})

	It("tshark with the Lua dissector decodes every captured frame, PortFC included", func() {
		checkTshark(dir, pcapDir, 1000, 0)
	})

	It("every captured RoCEv2 frame's ICRC is the standard's: 0 bad", func() {
		checkICRC(pcapDir, 1000)
	})

	It("capture timestamps are the run's real time", func() {
		out := run("tshark", "-r", filepath.Join(dir, "all.pcap"), "-T", "fields", "-e", "frame.time_epoch", "-c", "1")
		ts, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		Expect(err).NotTo(HaveOccurred())
		first := time.Unix(0, int64(ts*1e9))
		Expect(first).To(BeTemporally(">=", start))
		Expect(first).To(BeTemporally("<=", time.Now()))
	})
})

// checkTshark merges the captures in pcapDir into dir/all.pcap and decodes them with tshark and the
// dissector: at least minFrames frames (minRouted with a decoded source route), PortFC frames decoded,
// no malformed frame, no MAD, no QP below 2, no expert error, and every message SEND_FIRST..SEND_LAST.
func checkTshark(dir, pcapDir string, minFrames, minRouted int) map[string]int {
	files, err := filepath.Glob(filepath.Join(pcapDir, "*.pcap"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	all := filepath.Join(dir, "all.pcap")
	run("mergecap", append([]string{"-F", "pcap", "-a", "-w", all}, files...)...)
	out := run("tshark", "-n", "-X", "lua_script:../../tools/wireshark/fabriclab.lua", "-r", all, "-T", "fields",
		"-E", "separator=|", "-e", "frame.protocols", "-e", "portfc.type", "-e", "infiniband.mad.mgmtclass",
		"-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "fabriclab_route.hops", "-e", "_ws.expert.severity")
	var frames, portfc, malformed, mad, lowQP, routed, experr int
	ops := map[string]int{}
	for _, ln := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(ln, "|")
		Expect(f).To(HaveLen(7), ln)
		frames++
		if strings.Contains(f[0], "_ws.malformed") {
			malformed++
		}
		if f[1] != "" {
			portfc++
		}
		if f[2] != "" {
			mad++
		}
		if f[3] != "" {
			ops[f[3]]++
		}
		if qp, err := strconv.ParseUint(strings.TrimPrefix(f[4], "0x"), 16, 32); f[4] != "" && (err != nil || qp < 2) {
			lowQP++
		}
		if f[5] != "" {
			routed++
		}
		// Expert severities: 0x00800000 error; a PortFC or route expert would be one.
		for _, sev := range strings.Split(f[6], ",") {
			if v, err := strconv.ParseUint(sev, 0, 32); err == nil && v >= 0x00800000 {
				experr++
			}
		}
	}
	GinkgoWriter.Printf("frames %d PortFC %d malformed %d MAD %d QP<2 %d routed %d expert errors %d opcodes %v\n",
		frames, portfc, malformed, mad, lowQP, routed, experr, ops)
	Expect(frames).To(BeNumerically(">", minFrames))
	Expect(portfc).To(BeNumerically(">", 0), "PortFC frames decoded by the dissector")
	Expect(malformed).To(Equal(0), "malformed frames")
	Expect(mad).To(Equal(0), "frames decoded as InfiniBand MADs")
	Expect(lowQP).To(Equal(0), "frames to QP 0 or 1")
	Expect(experr).To(Equal(0), "expert errors")
	Expect(routed).To(BeNumerically(">=", minRouted), "frames whose source route the dissector decoded")
	// Every message opens with SEND_FIRST and closes with SEND_LAST, or is one SEND_ONLY.
	Expect(ops["0"]).To(BeNumerically(">", 0))
	Expect(ops["0"]).To(Equal(ops["2"]), "SEND_FIRST vs SEND_LAST")
	return ops
}

// checkICRC recomputes every RoCEv2 frame's ICRC in Python from the standard: at least minRoCE frames, 0 bad.
func checkICRC(pcapDir string, minRoCE int) {
	files, err := filepath.Glob(filepath.Join(pcapDir, "*.pcap"))
	Expect(err).NotTo(HaveOccurred())
	out := run("python3", append([]string{"testdata/icrc_check.py"}, files...)...)
	var n, roce, bad int
	_, err = fmt.Sscanf(out, "frames %d roce %d bad %d", &n, &roce, &bad)
	Expect(err).NotTo(HaveOccurred(), out)
	GinkgoWriter.Print(out)
	Expect(roce).To(BeNumerically(">", minRoCE))
	Expect(bad).To(Equal(0), out)
}
