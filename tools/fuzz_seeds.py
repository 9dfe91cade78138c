#!/usr/bin/python3
"""Seed corpora for the fuzz targets, from frames `fabricgen craft` writes.

usage: tools/fuzz_seeds.py FABRICGEN OUT_DIR
Writes OUT_DIR/<target>/<name> files: whole frames for headers/signature/roce,
BTH and PDS slices for roce/uet, MAC-control and LBN frames, pcap files, and
the example plans.
"""
import glob
import os
import struct
import subprocess
import sys
import tempfile


def frames(pcap):
    with open(pcap, "rb") as f:
        data = f.read()
    at, out = 24, []
    while at + 16 <= len(data):
        caplen = struct.unpack("<I", data[at + 8:at + 12])[0]
        out.append(data[at + 16:at + 16 + caplen])
        at += 16 + caplen
    return out


def main():
    fabricgen, out = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tempfile.mkdtemp(prefix="fabricgen-seeds-")
    for target in ("headers", "roce", "uet", "pfc_lbn", "signature", "pcap", "plan"):
        os.makedirs(os.path.join(out, target), exist_ok=True)

    def put(target, name, data):
        with open(os.path.join(out, target, name), "wb") as f:
            f.write(data)

    for plan in sorted(glob.glob(os.path.join(root, "configs", "**", "*.yaml"), recursive=True)):
        base = os.path.splitext(os.path.basename(plan))[0]
        with open(plan, "rb") as f:
            put("plan", base + ".yaml", f.read())
        pcap = os.path.join(tmp, base + ".pcap")
        subprocess.run([fabricgen, "craft", plan, "--pcap", pcap, "--count", "3"], check=True,
                       capture_output=True)
        with open(pcap, "rb") as f:
            put("pcap", base + ".pcap", f.read())
        for i, fr in enumerate(frames(pcap)):
            name = "%s-%d" % (base, i)
            put("headers", name, fr)
            put("signature", name, fr)
            ethertype = fr[12:14]
            if ethertype in (b"\x08\x00", b"\x86\xdd"):
                l4 = 14 + (20 if ethertype == b"\x08\x00" else 40)
                dport = struct.unpack("!H", fr[l4 + 2:l4 + 4])[0]
                if dport == 4791:
                    put("roce", name + "-frame", fr)
                    put("roce", name + "-bth", fr[l4 + 8:])
                elif dport == 4793:
                    put("uet", name, b"\x00" + fr[l4 + 8:])
            else:
                put("pfc_lbn", name, fr)
    print("seeds written to", out)


if __name__ == "__main__":
    main()
