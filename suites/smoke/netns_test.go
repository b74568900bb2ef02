package smoke_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// leftovers lists what of a lab is still on the machine: namespaces named after it and its state dir.
func leftovers(lab string) []string {
	m, _ := filepath.Glob(filepath.Join(nslink.NetnsDir, "fl-"+lab+"-*"))
	if _, err := os.Stat(filepath.Join(nslink.StateRoot, lab)); err == nil {
		m = append(m, filepath.Join(nslink.StateRoot, lab))
	}
	return m
}

// downIfPresent is every spec's cleanup: it removes the lab only through its state file.
func downIfPresent(lab string) {
	if _, err := os.Stat(filepath.Join(nslink.StateRoot, lab, "state.json")); err == nil {
		Expect(nslink.Down(lab)).To(Succeed())
	}
	Expect(leftovers(lab)).To(BeEmpty())
}

var _ = Describe("netns backend", Serial, func() {
	DescribeTable("brings a topology up, every link carries frames both ways and only there, and down leaves nothing",
		func(ctx SpecContext, prefix, family string, params map[string]string) {
			g, err := topo.Build(family, params)
			Expect(err).NotTo(HaveOccurred())
			name := labName(prefix)
			DeferCleanup(downIfPresent, name)

			lab, err := nslink.Up(ctx, name, g, nslink.Options{})
			Expect(err).NotTo(HaveOccurred())

			By("listing the links in every namespace: lo and p0..p(ports-1), nothing else")
			for _, n := range g.Nodes {
				h, err := lab.Handle(n.Name)
				Expect(err).NotTo(HaveOccurred())
				links, err := h.LinkList()
				h.Close()
				Expect(err).NotTo(HaveOccurred())
				var have, want []string
				for _, l := range links {
					have = append(have, l.Attrs().Name)
					if l.Attrs().Name != "lo" {
						Expect(l.Type()).To(Equal("veth"), "%s %s", n.Name, l.Attrs().Name)
						Expect(l.Attrs().MTU).To(Equal(nslink.DefaultMTU), "%s %s", n.Name, l.Attrs().Name)
					}
				}
				want = append(want, "lo")
				for p := range n.Ports {
					want = append(want, nslink.PortName(p))
				}
				sort.Strings(have)
				sort.Strings(want)
				Expect(have).To(Equal(want), "links in %s", lab.NSName(n.Name))
			}

			By("sending a unique raw frame (EtherType 0x88B5) each way on every link")
			socks, err := openPortSockets(lab, g)
			Expect(err).NotTo(HaveOccurred())
			defer closeSockets(socks)
			expect, got, err := exchange(name, g, socks, 5*time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(expect).To(HaveLen(2 * len(g.Links)))
			for payload, want := range expect {
				Expect(got[payload]).To(Equal([]delivery{want}), "frame %q must arrive once, at %s:p%d only", payload, want.device, want.port)
			}
			for payload, where := range got {
				Expect(expect).To(HaveKey(payload), "unexpected frame %q at %v", payload, where)
			}

			By("bringing it down")
			Expect(nslink.Down(name)).To(Succeed())
			Expect(leftovers(name)).To(BeEmpty())
		},
		Entry("NDC(2,1)", "ndc", "ndc", map[string]string{"n": "2", "k": "1"}),
		Entry("Dragonfly(p=1,a=2,h=1)", "df", "dragonfly", map[string]string{"p": "1", "a": "2", "h": "1"}),
		Entry("ring of 4", "ring", "ring", map[string]string{"n": "4"}),
	)

	It("keeps two labs apart and refuses a namespace name it does not own", func(ctx SpecContext) {
		g, err := topo.Build("ring", map[string]string{"n": "3"})
		Expect(err).NotTo(HaveOccurred())
		a, b := labName("a"), labName("b")
		DeferCleanup(downIfPresent, a)
		DeferCleanup(downIfPresent, b)
		_, err = nslink.Up(ctx, a, g, nslink.Options{})
		Expect(err).NotTo(HaveOccurred())
		_, err = nslink.Up(ctx, b, g, nslink.Options{MTU: 9000})
		Expect(err).NotTo(HaveOccurred())
		_, err = nslink.Up(ctx, a, g, nslink.Options{})
		Expect(err).To(MatchError(ContainSubstring("already exists")))

		Expect(nslink.Down(a)).To(Succeed())
		Expect(leftovers(a)).To(BeEmpty())
		sts, errs := nslink.Status()
		Expect(errs).To(BeEmpty())
		var sb *nslink.LabStatus
		for i := range sts {
			if sts[i].Lab == b {
				sb = &sts[i]
			}
		}
		Expect(sb).NotTo(BeNil())
		Expect(sb.NamespacesPresent).To(Equal(len(g.Nodes)))
		Expect(sb.LinksPresent).To(Equal(len(g.Links)))
	})

	// upThenSignal starts `lab up` of NDC(16,1) (288 namespaces, 512 links: about half a second here, so
	// there is time to catch it halfway), waits until some
	// namespaces exist, and sends sig.
	upThenSignal := func(name string, sig syscall.Signal) (*exec.Cmd, string) {
		cmd := exec.Command(labBin, "up", "ndc", "n=16", "k=1", "--name", name, "-q", "--bare")
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		Expect(cmd.Start()).To(Succeed())
		Eventually(func() int {
			m, _ := filepath.Glob(filepath.Join(nslink.NetnsDir, "fl-"+name+"-*"))
			return len(m)
		}).WithTimeout(20*time.Second).WithPolling(time.Millisecond).Should(BeNumerically(">=", 8), "lab up made no namespaces")
		Expect(cmd.Process.Signal(sig)).To(Succeed())
		cmd.Wait()
		return cmd, out.String()
	}

	It("cleans up after a SIGKILLed `lab up` with `lab down NAME`", func() {
		name := labName("kill")
		DeferCleanup(downIfPresent, name)
		cmd, out := upThenSignal(name, syscall.SIGKILL)
		Expect(cmd.ProcessState.Success()).To(BeFalse(), "lab up finished before it was killed:\n%s", out)

		b, err := os.ReadFile(filepath.Join(nslink.StateRoot, name, "state.json"))
		Expect(err).NotTo(HaveOccurred(), "the state file must survive the kill")
		var st nslink.State
		Expect(json.Unmarshal(b, &st)).To(Succeed())
		Expect(st.Complete).To(BeFalse())
		Expect(leftovers(name)).NotTo(BeEmpty())

		status, err := exec.Command(labBin, "status").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", status)
		Expect(string(status)).To(ContainSubstring(name))
		Expect(string(status)).To(ContainSubstring("incomplete"))

		down, err := exec.Command(labBin, "down", name).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "lab down: %s", down)
		Expect(leftovers(name)).To(BeEmpty())
	})

	It("leaves a foreign namespace made under a planned name in a killed `lab up`'s crash window", func() {
		name := labName("win")
		DeferCleanup(downIfPresent, name)
		cmd, out := upThenSignal(name, syscall.SIGKILL)
		Expect(cmd.ProcessState.Success()).To(BeFalse(), "lab up finished before it was killed:\n%s", out)
		b, err := os.ReadFile(filepath.Join(nslink.StateRoot, name, "state.json"))
		Expect(err).NotTo(HaveOccurred())
		var st nslink.State
		Expect(json.Unmarshal(b, &st)).To(Succeed())
		// A name the state file lists (planned) with no inode that the killed lab never made: someone else
		// now makes a namespace there, as `ip netns add` would.
		foreign := ""
		for _, e := range st.Namespaces {
			if _, err := os.Lstat(filepath.Join(nslink.NetnsDir, e.Name)); e.Ino == 0 && err != nil {
				foreign = e.Name
				break
			}
		}
		Expect(foreign).NotTo(BeEmpty(), "the kill came after every namespace was made")
		add, err := exec.Command("ip", "netns", "add", foreign).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "ip netns add: %s", add)
		DeferCleanup(func() { exec.Command("ip", "netns", "del", foreign).Run() })

		down, err := exec.Command(labBin, "down", name).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "lab down: %s", down)
		Expect(string(down)).To(ContainSubstring(foreign))
		Expect(string(down)).To(ContainSubstring("left alone"))
		_, err = os.Stat(filepath.Join(nslink.NetnsDir, foreign))
		Expect(err).NotTo(HaveOccurred(), "lab down removed someone else's namespace")
		left := leftovers(name)
		Expect(left).To(ConsistOf(filepath.Join(nslink.NetnsDir, foreign)), "everything else the lab made is gone")
	})

	It("removes what it made when `lab up` is interrupted (Ctrl-C)", func() {
		name := labName("int")
		DeferCleanup(downIfPresent, name)
		cmd, out := upThenSignal(name, syscall.SIGINT)
		Expect(cmd.ProcessState.Success()).To(BeFalse(), "lab up finished before it was interrupted:\n%s", out)
		Expect(out).To(ContainSubstring("interrupted"))
		Expect(leftovers(name)).To(BeEmpty())
	})

	It("`lab down --all` removes only labs with a state file", func(ctx SpecContext) {
		g, err := topo.Build("ring", map[string]string{"n": "3"})
		Expect(err).NotTo(HaveOccurred())
		name := labName("all")
		DeferCleanup(downIfPresent, name)
		_, err = nslink.Up(ctx, name, g, nslink.Options{})
		Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command(labBin, "down", "--all").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(ContainSubstring(fmt.Sprintf("lab %s down", name)))
		Expect(leftovers(name)).To(BeEmpty())
	})
})
