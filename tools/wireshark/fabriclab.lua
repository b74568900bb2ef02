-- fabriclab.lua: Wireshark/tshark dissectors for the frames fabriclab adds to RoCEv2 and PFC
-- (wire/doc.go is the reference for every byte below).
--
--   PortFC      EtherType 0x88B5 (IEEE 802 local experimental 1), sent to 03:66:6c:00:00:01:
--               version(4 bits)=1 | type(4 bits: 1 pause, 2 resume), hops, queue (16), port (16), via (16: relaying node's ingress port + 1, 0 unrelayed)
--   route       IPv4 option 0x9E (RFC 4727 experimental option 30, copy bit set): type, length (3+n),
--               hop index, n egress port bytes, EOL padding; shown under "fabriclab source route"
--   probe       UDP destination port 4792: version/type, flags, reserved, flow, seq, sent_at, delay
--
-- Install: `lab wireshark-plugin` copies this file into Wireshark's personal plugin folder
-- (~/.local/lib/wireshark/plugins/), or copy it there by hand, or pass it for one run:
--   tshark -X lua_script:tools/wireshark/fabriclab.lua -r capture.pcap
-- Display filters: portfc, portfc.type == 1, fabriclab_route.hop, fabriclab_probe.flow.

-- PortFC ---------------------------------------------------------------------------------------
local portfc = Proto("portfc", "fabriclab PortFC per-port flow control")
local pf = {
	version = ProtoField.uint8("portfc.version", "Version", base.DEC, nil, 0xF0),
	type    = ProtoField.uint8("portfc.type", "Type", base.DEC, { [1] = "Pause", [2] = "Resume" }, 0x0F),
	hops    = ProtoField.uint8("portfc.hops", "Hops", base.DEC),
	queue   = ProtoField.int16("portfc.queue", "Queue", base.DEC),
	port    = ProtoField.int16("portfc.port", "Port", base.DEC),
	via     = ProtoField.uint16("portfc.via", "Via (relaying node port + 1)", base.DEC),
}
portfc.fields = { pf.version, pf.type, pf.hops, pf.queue, pf.port, pf.via }
local ef_portfc_bad = ProtoExpert.new("portfc.bad", "Malformed PortFC frame", expert.group.MALFORMED, expert.severity.ERROR)
portfc.experts = { ef_portfc_bad }

function portfc.dissector(tvb, pinfo, tree)
	pinfo.cols.protocol = "PortFC"
	local t = tree:add(portfc, tvb(0, math.min(8, tvb:len())))
	if tvb:len() < 8 then
		t:add_proto_expert_info(ef_portfc_bad, "PortFC header truncated")
		return tvb:len()
	end
	local vt = tvb(0, 1):uint()
	local version, typ = bit.rshift(vt, 4), bit.band(vt, 15)
	t:add(pf.version, tvb(0, 1))
	t:add(pf.type, tvb(0, 1))
	t:add(pf.hops, tvb(1, 1))
	t:add(pf.queue, tvb(2, 2))
	t:add(pf.port, tvb(4, 2))
	t:add(pf.via, tvb(6, 2))
	if version ~= 1 or (typ ~= 1 and typ ~= 2) then
		t:add_proto_expert_info(ef_portfc_bad, "PortFC version " .. version .. " type " .. typ)
	end
	local what = ({ [1] = "Pause", [2] = "Resume" })[typ] or ("type " .. typ)
	pinfo.cols.info = string.format("PortFC %s queue %d port %d", what, tvb(2, 2):int(), tvb(4, 2):int())
	return 8
end
DissectorTable.get("ethertype"):add(0x88B5, portfc)

-- probe ----------------------------------------------------------------------------------------
local probe = Proto("fabriclab_probe", "fabriclab telemetry probe")
local pr = {
	vt     = ProtoField.uint8("fabriclab_probe.version_type", "Version/type", base.HEX),
	last   = ProtoField.bool("fabriclab_probe.last", "Last", 8, nil, 0x01),
	flow   = ProtoField.uint32("fabriclab_probe.flow", "Flow", base.DEC),
	seq    = ProtoField.uint32("fabriclab_probe.seq", "Sequence", base.DEC),
	sentat = ProtoField.int64("fabriclab_probe.sent_at", "Sent at (ps)", base.DEC),
	delay  = ProtoField.int64("fabriclab_probe.delay", "Delay (ps)", base.DEC),
}
probe.fields = { pr.vt, pr.last, pr.flow, pr.seq, pr.sentat, pr.delay }

function probe.dissector(tvb, pinfo, tree)
	if tvb:len() < 28 then return 0 end
	pinfo.cols.protocol = "fabriclab probe"
	local t = tree:add(probe, tvb(0, 28))
	t:add(pr.vt, tvb(0, 1))
	t:add(pr.last, tvb(1, 1))
	t:add(pr.flow, tvb(4, 4))
	t:add(pr.seq, tvb(8, 4))
	t:add(pr.sentat, tvb(12, 8))
	t:add(pr.delay, tvb(20, 8))
	pinfo.cols.info = string.format("probe flow %d seq %d", tvb(4, 4):uint(), tvb(8, 4):uint())
	return 28
end
DissectorTable.get("udp.port"):add(4792, probe)

-- source route option (a postdissector: Wireshark's IPv4 dissector shows it only as "Unknown (0x9e)") ----
local route = Proto("fabriclab_route", "fabriclab source route")
local rf = {
	len  = ProtoField.uint8("fabriclab_route.length", "Length", base.DEC),
	hop  = ProtoField.uint8("fabriclab_route.hop", "Hop index", base.DEC),
	hops = ProtoField.uint8("fabriclab_route.hops", "Hops", base.DEC),
	port = ProtoField.uint8("fabriclab_route.port", "Egress port", base.DEC),
}
route.fields = { rf.len, rf.hop, rf.hops, rf.port }
local ef_route_bad = ProtoExpert.new("fabriclab_route.bad", "Malformed fabriclab source route", expert.group.MALFORMED, expert.severity.ERROR)
route.experts = { ef_route_bad }
local f_ip_hdr_len = Field.new("ip.hdr_len")

function route.dissector(tvb, pinfo, tree)
	for _, fi in ipairs({ f_ip_hdr_len() }) do
		local ip, ihl = fi.offset, fi.value
		local o, stop = ip + 20, ip + ihl
		while o < stop and stop <= tvb:len() do
			local typ = tvb(o, 1):uint()
			if typ == 0 then break end
			if typ == 1 then
				o = o + 1
			else
				if o + 1 >= stop then break end
				local l = tvb(o + 1, 1):uint()
				if typ == 0x9E then
					local t = tree:add(route, tvb(o, math.max(1, math.min(l, stop - o))))
					if l < 3 or o + l > stop then
						t:add_proto_expert_info(ef_route_bad, "option length " .. l)
						break
					end
					local n = l - 3
					t:add(rf.len, tvb(o + 1, 1))
					t:add(rf.hop, tvb(o + 2, 1))
					t:add(rf.hops, n)
					local ports = {}
					for k = 0, n - 1 do
						t:add(rf.port, tvb(o + 3 + k, 1))
						ports[#ports + 1] = tostring(tvb(o + 3 + k, 1):uint())
					end
					local hop = tvb(o + 2, 1):uint()
					t:append_text(string.format(": hop %d of [%s]", hop, table.concat(ports, ",")))
					if hop > n then
						t:add_proto_expert_info(ef_route_bad, "hop index " .. hop .. " beyond " .. n .. " hops")
					end
				end
				if l < 2 then break end
				o = o + l
			end
		end
	end
end
register_postdissector(route)
