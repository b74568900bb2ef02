package live_test

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"

	"github.com/fabriclab/fabriclab/harness/nslink"
)

var timeRE = regexp.MustCompile(`time=([\d.]+) ms`)

// agentPid is the live lab's agent (the process of its agents file started as an agent).
func agentPid(name string) int {
	for _, pid := range labPids(name) {
		if nslink.IsAgent(pid) {
			return pid
		}
	}
	Fail("no agent among the lab's processes")
	return 0
}

// A live agent that falls behind (no SCHED_FIFO, as in a container, and stopped now and then) catches
// up later, but never delivers a frame before its modelled time: a kernel host's frame read while it
// catches up was taken at the time the catch-up had reached, before the host sent it, and round trips
// came back under the model (46 of 300 pings here, as low as 0.25 ms on 12).
var _ = Describe("a stalled live agent", func() {
	It("answers no ping h0 -> h15 faster than the modelled 12 ms while stopped for 2-21 ms every 10-60 ms", func() {
		name := labName("stall")
		lab("up", "fattree", "k=4", "--name", name, "-q")
		DeferCleanup(func() { exec.Command(labBin, "down", name).Run() })
		agent := agentPid(name)
		// The default scheduler for every thread of the agent, as where it cannot have SCHED_FIFO.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", agent))
		for _, t := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(t))
			attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
			Expect(unix.SchedSetAttr(tid, &attr, 0)).To(Succeed())
		}
		// Traffic elsewhere keeps the agent busy and timers pending, so a stop often lands mid-loop.
		bg := exec.Command(labBin, "exec", name, "h1", "--", "ping", "-q", "-i", "0.002", "-w", "60", "h14")
		Expect(bg.Start()).To(Succeed())
		DeferCleanup(func() { bg.Process.Kill(); bg.Wait() })
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		stalls := 0
		go func() {
			defer wg.Done()
			defer syscall.Kill(agent, syscall.SIGCONT)
			for {
				select {
				case <-stop:
					return
				default:
				}
				syscall.Kill(agent, syscall.SIGSTOP)
				time.Sleep(time.Duration(2+rand.IntN(20)) * time.Millisecond)
				syscall.Kill(agent, syscall.SIGCONT)
				stalls++
				time.Sleep(time.Duration(10+rand.IntN(50)) * time.Millisecond)
			}
		}()
		out, _ := exec.Command(labBin, "exec", name, "h0", "--", "ping", "-n", "-c", "300", "-i", "0.02", "-W", "2", "h15").CombinedOutput()
		close(stop)
		wg.Wait()
		var below []string
		replies := 0
		for _, m := range timeRE.FindAllStringSubmatch(string(out), -1) {
			replies++
			if v, _ := strconv.ParseFloat(m[1], 64); v < 12 {
				below = append(below, m[1])
			}
		}
		r := rttRE.FindStringSubmatch(string(out))
		Expect(r).NotTo(BeNil(), "ping h0 -> h15:\n%s", out)
		minRTT, _ := strconv.ParseFloat(r[1], 64)
		maxRTT, _ := strconv.ParseFloat(r[3], 64)
		AddReportEntry("ping h0 -> h15, agent stalled", fmt.Sprintf("%d replies of 300 over %d stalls: min %.3f ms, max %.3f ms (model 12 ms), %d under the model",
			replies, stalls, minRTT, maxRTT, len(below)))
		Expect(replies).To(BeNumerically(">=", 250), "ping h0 -> h15:\n%s", out)
		Expect(maxRTT).To(BeNumerically(">", 14), "no round trip was late: the stalls did not reach the agent")
		Expect(below).To(BeEmpty(), "round trips under the model")
		Expect(minRTT).To(BeNumerically(">=", 12))
	})
})
