package netns

import (
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/harness/nslink/nstest"
)

// fatTree8 is fat-tree k=8 (208 devices, 768 ports) under WebSearch 0.5, as lab bench runs it.
const fatTree8 = `name: ca
backend: netns
seed: 1
topology: {family: fattree, k: 8, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
workload: [{kind: poisson, cdf: websearch, load: 0.5, duration: 2ms}]
duration: 3ms
`

func TestUsableCPUs(t *testing.T) {
	for _, c := range []struct {
		cpus CPUs
		want int
	}{
		{CPUs{2, 0.2}, 2}, {CPUs{2, 0.6}, 1}, {CPUs{2, 16}, 1}, {CPUs{8, 3.4}, 5}, {CPUs{0, 0}, 1},
	} {
		if got := c.cpus.Usable(); got != c.want {
			t.Errorf("%+v: %d usable, want %d", c.cpus, got, c.want)
		}
	}
	if s := (CPUs{2, 15.04}).String(); s != "1 of 2 CPUs usable at load average 15.0" {
		t.Errorf("%q", s)
	}
}

func TestChooseAgents(t *testing.T) {
	l := nstest.Lab(t, fatTree8)
	need, ports := FrameRate(l), AgentPorts(l)
	if ports != 768 {
		t.Fatalf("fat-tree k=8 serves %d ports, want 768", ports)
	}
	idle, busy := CPUs{N: 2, Load: 0.2}, CPUs{N: 2, Load: 15}
	// At D=1000 one agent is far behind: two, each on half the ports at the lockstep's cost, are
	// forecast faster by more than agentGain.
	c := ChooseAgents(l, need, ports, testModel, idle, 1000)
	one := ForecastRun(need, ports, 1, testModel, 1000)
	two := ForecastRun(need, ports, 2, testModel, 1000)
	if two.Pace >= agentGain*one.Pace {
		t.Fatalf("the test's premise: two agents' pace %g is not below %g x one's %g", two.Pace, agentGain, one.Pace)
	}
	if c.N != 2 || c.D != 1000 || c.Forecast != two || !strings.HasPrefix(c.Why, "2 agents: ") || !strings.Contains(c.Why, "2 of 2 CPUs usable") {
		t.Errorf("idle machine, D=1000: %+v", c)
	}
	// A busy machine leaves one CPU: one agent, and the reason says so.
	if c := ChooseAgents(l, need, ports, testModel, busy, 1000); c.N != 1 || c.Forecast != one || !strings.Contains(c.Why, "1 of 2 CPUs usable at load average 15.0") {
		t.Errorf("busy machine: %+v", c)
	}
	// With the dilation chosen too, each count gets its own D; where both get the same, one agent.
	c = ChooseAgents(l, need, ports, testModel, idle, 0)
	d1, d2 := ChooseDilationFor(need, ports, 1, testModel).D, ChooseDilationFor(need, ports, 2, testModel).D
	switch {
	case d2 < agentGain*d1:
		if c.N != 2 || c.D != d2 {
			t.Errorf("automatic D (one agent %g, two %g): %+v", d1, d2, c)
		}
	default:
		if c.N != 1 || c.D != d1 || !strings.Contains(c.Why, "two would not be faster") {
			t.Errorf("automatic D (one agent %g, two %g): %+v", d1, d2, c)
		}
	}
	// A small fabric stays in one agent whatever the CPUs.
	small := nstest.Lab(t, strings.Replace(fatTree8, "k: 8", "k: 4", 1)) // 36 devices: 2 allowed
	if c := ChooseAgents(small, FrameRate(small), AgentPorts(small), testModel, CPUs{N: 64}, 1000); c.N > 2 {
		t.Errorf("fat-tree k=4 on 64 CPUs: %d agents, more than %d devices each allows", c.N, MinDevicesPerAgent)
	}
	tiny := nstest.Lab(t, strings.Replace(strings.Replace(fatTree8, "family: fattree, k: 8", "family: ndc, n: 2, k: 1", 1), "load: 0.5", "load: 0.9", 1))
	if c := ChooseAgents(tiny, FrameRate(tiny), AgentPorts(tiny), testModel, CPUs{N: 64}, 100000); c.N != 1 || !strings.Contains(c.Why, "8 devices") {
		t.Errorf("NDC(2,1): %+v", c)
	}
	// No calibration, kernel hosts, flows that wait for others: one agent, said why.
	if c := ChooseAgents(l, need, ports, CostModel{}, idle, 1000); c.N != 1 || !strings.Contains(c.Why, "no calibration") {
		t.Errorf("no calibration: %+v", c)
	}
	kernel := nstest.Lab(t, `name: ck
backend: netns
dilation: 2000
topology: {family: fattree, k: 8, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: lossy}
host: {transport: kernel-tcp}
workload: [{kind: flows, list: [{src: h0, dst: h100, size: 1MB, at: 0s}]}]
duration: 3ms
`)
	if c := ChooseAgents(kernel, FrameRate(kernel), AgentPorts(kernel), testModel, idle, 1000); c.N != 1 || !strings.Contains(c.Why, "kernel-tcp") {
		t.Errorf("kernel hosts: %+v", c)
	}
	ps := nstest.Lab(t, `name: cp
backend: netns
dilation: 1000
topology: {family: fattree, k: 8, link: {rate: 100Gbps, delay: 1us}}
switch: {flow_control: pfc}
host: {transport: lossless}
workload: [{kind: ps, server: h0, workers: 100, push_size: 2MB, broadcast_size: 1MB, rounds: 2}]
duration: 50ms
`)
	if c := ChooseAgents(ps, FrameRate(ps), AgentPorts(ps), testModel, idle, 1000); c.N != 1 || !strings.Contains(c.Why, "wait for others") {
		t.Errorf("dependencies: %+v", c)
	}
}
