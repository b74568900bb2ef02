package wire

// The gopacket cross-checks live in the external test package wire_test (they import wire/dissect,
// which imports wire); they draw on the same sample frames and constants as the codec tests.
var (
	Samples    = samples
	TCPFrame   = tcpFrame
	HexFrame   = hexFrame
	FinishIPv4 = finishIPv4
)

const (
	ConnectXCNP = connectXCNP
	AethAck     = aethAck
	AethNakSeq  = aethNakSeq
)
