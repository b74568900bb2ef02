package lockstep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/fabriclab/fabriclab/clock"
	"github.com/fabriclab/fabriclab/nodes"
)

// FuzzAgentProtocol reads a stream of protocol lines as the agent and the backend do: every message
// either fails Check or prints and parses back to the same message.
func FuzzAgentProtocol(f *testing.F) {
	setup := AgentMsg{Type: "setup", Setup: &AgentSetup{Lab: "demo", MTU: 1500, FrameBytes: 1078,
		Devices: []AgentDevice{{Name: "h0", Node: 0, NSPath: "/run/netns/fl-demo-h0", Host: &nodes.Config{},
			Ports: []AgentPort{{Ifname: "p0", RateBps: 100e6, Delay: clock.Millisecond, PeerNode: 1}}}},
		Flows: []AgentFlow{{Node: 0, At: clock.Microsecond, Flow: nodes.Flow{ID: 1, Size: 1000}}}}}
	var seed bytes.Buffer
	enc := json.NewEncoder(&seed)
	for _, m := range []AgentMsg{setup, {Type: "ready"}, {Type: "start", Epoch: 123, End: clock.Second},
		{Type: "progress", Now: clock.Millisecond, Done: 3}, {Type: "completed", Flows: []uint32{1, 2}}, {Type: "stop"}} {
		enc.Encode(m)
	}
	f.Add(seed.Bytes())
	f.Add([]byte(`{"type":"setup","setup":{"mtu":1500,"frame_bytes":1,"devices":[{"ports":[{"rate_bps":-1}]}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; i < 64; i++ {
			var m AgentMsg
			if err := dec.Decode(&m); err != nil {
				return
			}
			if m.Check() != nil {
				continue
			}
			b1, err := json.Marshal(&m)
			if err != nil {
				t.Fatalf("accepted message does not print: %v", err)
			}
			var m2 AgentMsg
			if err := json.Unmarshal(b1, &m2); err != nil {
				t.Fatalf("printed message does not parse: %v\n%s", err, b1)
			}
			if err := m2.Check(); err != nil {
				t.Fatalf("printed message fails Check: %v", err)
			}
			b2, _ := json.Marshal(&m2)
			if !bytes.Equal(b1, b2) {
				t.Fatalf("print -> parse -> print differs:\n%s\n%s", b1, b2)
			}
		}
	})
}
