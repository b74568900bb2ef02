// Package wireshark ships fabriclab's Wireshark Lua dissector (fabriclab.lua: PortFC frames, the source
// route IPv4 option, telemetry probes) so `lab wireshark-plugin` can install it from the binary.
package wireshark

import _ "embed"

// Dissector is fabriclab.lua.
//
//go:embed fabriclab.lua
var Dissector []byte

// FileName is the name the plugin is installed under.
const FileName = "fabriclab.lua"
