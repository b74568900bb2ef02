package nslink

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// seedState is a state file as the recorder writes it.
func seedState() []byte {
	st := State{Lab: "demo", PID: 42, Created: time.Unix(1700000000, 0).UTC(), Family: "ndc", MTU: 1500, TxQueueLen: 1000,
		Complete: true, Token: "abc", Namespaces: []NSEntry{{Name: NSName("demo", "h0"), Device: "h0", Ino: 7},
			{Name: NSName("demo", "s0"), Device: "s0"}},
		Links: []LinkEntry{{Index: 0, A: LinkEnd{NS: NSName("demo", "h0"), Ifname: "p0"}, B: LinkEnd{NS: NSName("demo", "s0"), Ifname: "p0"}}}}
	b, _ := json.MarshalIndent(st, "", "  ")
	return b
}

// FuzzParseState: an accepted state file names only the lab's own namespaces and links (Check), and
// writing it again parses to the same state.
func FuzzParseState(f *testing.F) {
	f.Add(seedState())
	f.Add([]byte(`{"lab":"demo","namespaces":[{"name":"../etc","device":"h0"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data, "demo", "state.json")
		if err != nil {
			return
		}
		if err := st.Check(); err != nil {
			t.Fatalf("accepted a state that fails Check: %v", err)
		}
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		st2, err := ParseState(b, "demo", "state.json")
		if err != nil {
			t.Fatalf("written state does not parse: %v", err)
		}
		b2, _ := json.MarshalIndent(st2, "", "  ")
		if !bytes.Equal(b, b2) {
			t.Fatalf("write -> parse -> write differs:\n%s\n%s", b, b2)
		}
	})
}
