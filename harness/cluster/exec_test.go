package cluster

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fabriclab/fabriclab/lab/topo"
)

// TestExecOnlyInOwnLabs: an authenticated coordinator may run commands only in a lab this server made
// and holds (not in another lab on the machine), and a live lab's kernel hosts need a server that can
// set them up; either refusal leaves the connection usable.
func TestExecOnlyInOwnLabs(t *testing.T) {
	addr, _ := startServer(t, 0)
	r, err := ConnectMachine(context.Background(), Machine{Name: "m1", Control: addr, Underlay: "127.0.0.1"}, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out, errb bytes.Buffer
	code, err := r.Exec(context.Background(), "other", "h0", []string{"true"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), `no lab "other" made by this agent server`) || code != -1 {
		t.Fatalf("exec in a lab the server did not make: code %d, %v", code, err)
	}
	params, err := topo.ParseParams([]string{"k=2"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := topo.Build("fattree", params)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Up(context.Background(), &UpReq{Lab: "lv", Graph: g, Nodes: []int{0}, MTU: 1500, Live: &LiveHosts{}})
	if err == nil || !strings.Contains(err.Error(), "cannot set up a live lab's kernel hosts") {
		t.Fatalf("live up on a server without HostSetup: %v", err)
	}
	if _, err := r.MeasureClock(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}
