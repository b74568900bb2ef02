#!/usr/bin/env python3
"""Checks the RoCEv2 ICRC of every RoCEv2 frame in pcap files, computed from the standard (IBA Annex
A17, as Linux rxe computes it), independently of fabriclab's Go code: CRC-32 (zlib's) over 8 bytes of
0xff standing in for the LRH, the IPv4 header as its IHL gives it with ToS, TTL and header checksum set
to ones, the UDP header with its checksum set to ones, the BTH with its byte 4 (FECN/BECN/resv8a) set
to ones, and the rest of the packet up to the ICRC, which is stored least significant byte first.
Prints "frames N roce N bad N" and the first bad frames.

    python3 icrc_check.py FILE.pcap...
"""
import struct
import sys
import zlib


def frames(path):
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            endian = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            endian = ">"
        else:
            raise SystemExit("%s: not a pcap file" % path)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            _, _, incl, _ = struct.unpack(endian + "IIII", rec)
            yield f.read(incl)


def icrc(frame):
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    tot = struct.unpack(">H", ip[2:4])[0]
    pseudo = bytearray(b"\xff" * 8)
    hdr = bytearray(ip[:ihl])
    hdr[1] = 0xFF          # ToS (DSCP + ECN)
    hdr[8] = 0xFF          # TTL
    hdr[10:12] = b"\xff\xff"  # header checksum
    pseudo += hdr
    udp = bytearray(ip[ihl:ihl + 8])
    udp[6:8] = b"\xff\xff"  # UDP checksum
    pseudo += udp
    bth = bytearray(ip[ihl + 8:ihl + 20])
    bth[4] = 0xFF          # FECN, BECN, resv6 / resv8a
    pseudo += bth
    pseudo += ip[ihl + 20:tot - 4]
    return zlib.crc32(bytes(pseudo)) & 0xFFFFFFFF, struct.unpack("<I", ip[tot - 4:tot])[0]


def main():
    n = roce = bad = 0
    shown = []
    for path in sys.argv[1:]:
        for i, fr in enumerate(frames(path)):
            n += 1
            if len(fr) < 14 + 20 or fr[12:14] != b"\x08\x00":
                continue
            ip = fr[14:]
            ihl = (ip[0] & 15) * 4
            if ip[9] != 17 or len(ip) < ihl + 8 + 12 + 4:
                continue
            if struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] != 4791:
                continue
            roce += 1
            want, got = icrc(fr)
            if want != got:
                bad += 1
                if len(shown) < 5:
                    shown.append("%s frame %d: ICRC 0x%08x, standard 0x%08x" % (path, i + 1, got, want))
    print("frames %d roce %d bad %d" % (n, roce, bad))
    for s in shown:
        print(s)


if __name__ == "__main__":
    main()
