package cluster

import (
	"github.com/fabriclab/fabriclab/harness/lockstep"
	"github.com/fabriclab/fabriclab/harness/netns"
	"github.com/fabriclab/fabriclab/harness/nslink"
	"github.com/fabriclab/fabriclab/lab/topo"
)

// Msg is every message on the control channel; Type says which fields matter:
//
//	server -> coordinator   hello (right after the handshake)
//	coordinator -> server   ping          <- pong    (clock probe, clock.go)
//	coordinator -> server   calibrate     <- calibration (the machine's agent calibration, measured if
//	                                                  none is cached: a run over machines whose spec sets
//	                                                  no dilation chooses it from every machine's)
//	coordinator -> server   up            <- upok    (make this machine's part of a lab)
//	coordinator -> server   agent ...     <- agent   (the agent protocol, lockstep.AgentMsg, relayed to the
//	                                                  machine's agent process; its first is setup)
//	coordinator -> server   down          <- downok  (remove a lab this server made)
//	coordinator -> server   exec          <- out ... <- exit (run a command in a device's namespace of a
//	                                                  lab on this machine; its output streamed back)
//	coordinator -> server   capture       <- capturing, pcap ... (capture a switch port of a lab on this
//	                                                  machine; the pcap file's bytes streamed back as the
//	                                                  agent writes them)
//	coordinator -> server   stop          <- pcap ... <- captured (the rest, then the end; captured also
//	                                                  comes unasked, with Err, when the lab goes down here)
//	either                  error
//
// A lab made by up lives as long as the connection that made it: when it closes (the run ended, the
// coordinator died, the network failed) the server kills the lab's agent and removes the lab. A live
// lab (up with Live set) is no different: the coordinator's supervisor holds its connections while the
// lab is up. An exec's command ends with its connection too, and so does a capture (the agent stops
// writing and the server removes its file).
type Msg struct {
	Type  string             `json:"type"`
	Hello *Hello             `json:"hello,omitempty"`
	Clock *Stamps            `json:"clock,omitempty"`
	Up    *UpReq             `json:"up,omitempty"`
	Lab   string             `json:"lab,omitempty"`
	Agent *lockstep.AgentMsg `json:"agent,omitempty"`
	Err   string             `json:"err,omitempty"`
	Exec  *ExecReq           `json:"exec,omitempty"`
	// Capture is a capture's port (capture).
	Capture *CaptureReq `json:"capture,omitempty"`
	// Calibration is the machine's agent calibration (calibration).
	Calibration *netns.Calibration `json:"calibration,omitempty"`
	// Stream (1 stdout, 2 stderr) and Data are one piece of an exec's output (out), or Data the next
	// bytes of a capture's pcap file (pcap); Code its exit status (exit).
	Stream int    `json:"stream,omitempty"`
	Data   []byte `json:"data,omitempty"`
	Code   int    `json:"code,omitempty"`
}

// ExecReq runs Argv in Device's namespace of Lab, with the lab's hosts file as /etc/hosts where the
// machine has one (a live lab's hosts). No stdin, no terminal.
type ExecReq struct {
	Lab    string   `json:"lab"`
	Device string   `json:"device"`
	Argv   []string `json:"argv"`
}

// CaptureReq captures port Port of switch Device of Lab (every frame the port sends and receives, as
// `lab capture` on one machine: the agent writes the pcap, stamped with the lab's start plus engine time).
type CaptureReq struct {
	Lab    string `json:"lab"`
	Device string `json:"device"`
	Port   int    `json:"port"`
}

// Hello is what a server says about its machine.
type Hello struct {
	Name        string `json:"name"` // the server's --name (default: host name)
	Underlay    string `json:"underlay"`
	UnderlayIf  string `json:"underlay_if"`
	UnderlayMTU int    `json:"underlay_mtu"`
	Version     int    `json:"version"`
}

// ProtocolVersion changes whenever Msg or its parts change incompatibly, or a coordinator asks for
// something an older server cannot do (3: capture; 4: heartbeats, conn.go;
// 5: calibrate), so that it is refused at the
// hello, naming both.
const ProtocolVersion = 5

// UpReq is one machine's part of a lab: the whole graph (so node and link indices mean the same on
// every machine), which of its nodes this machine hosts, and its links to the other machines.
type UpReq struct {
	Lab   string             `json:"lab"`
	Graph *topo.Graph        `json:"graph"`
	Nodes []int              `json:"nodes"`
	MTU   int                `json:"mtu"`
	VXLAN []nslink.VXLANLink `json:"vxlan,omitempty"`
	// Live, for a live lab (`lab up --cluster`), sets up the machine's kernel hosts after the
	// namespaces are made.
	Live *LiveHosts `json:"live,omitempty"`
}

// LiveHosts is how a live lab's kernel hosts are set up (harness/live SetupHosts): every host of the
// graph is a kernel host; those among Nodes are this machine's.
type LiveHosts struct {
	Transit bool   `json:"transit,omitempty"` // server-centric: a relay engine in front of each host's kernel
	CC      string `json:"cc,omitempty"`
	ECN     bool   `json:"ecn,omitempty"`
}

// Stamps are one clock probe's four timestamps (CLOCK_REALTIME ns): T1 the coordinator sent the ping,
// T2 the server received it, T3 the server sent the pong, T4 the coordinator received it.
type Stamps struct {
	T1 int64 `json:"t1"`
	T2 int64 `json:"t2,omitempty"`
	T3 int64 `json:"t3,omitempty"`
	T4 int64 `json:"-"`
}
