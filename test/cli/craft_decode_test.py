#!/usr/bin/python3
"""What `fabricgen craft` writes, checked by independent decoders.

- tshark decodes every RoCEv2 frame with the BTH fields the plan set
  (opcode sequence of a segmented message, destination QP, PSN, AckReq,
  P_Key, RETH DMA length), and PFC/PAUSE frames with their class vector and
  quanta.
- The ICRC of every RoCEv2 frame matches scapy's contrib/roce (it rebuilds
  the frame from its fields and recomputes the ICRC; IPv4, as scapy only
  handles IPv4) and a few lines of zlib over the masked pseudo-header written
  here from roce.md (IPv4 and IPv6). The stream marked `icrc: bad` must fail
  both.

usage: craft_decode_test.py FABRICGEN SOURCE_ROOT
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

from scapy.all import Ether, IP, IPv6, UDP, rdpcap, raw, load_contrib  # noqa: E402

load_contrib("roce")
from scapy.contrib.roce import BTH  # noqa: E402

FABRICGEN = ""
ROOT = ""


# Every capture goes in one directory, removed when the tests end (pass or fail).
WORK = tempfile.TemporaryDirectory(prefix="fabricgen-craft-")


def craft(plan, count):
    tmp = tempfile.mkdtemp(dir=WORK.name)
    pcap = os.path.join(tmp, "out.pcap")
    r = subprocess.run([FABRICGEN, "craft", os.path.join(ROOT, plan), "--pcap", pcap, "--count", str(count)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return pcap


def tshark_fields(pcap, fields):
    r = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|"] +
                       [a for f in fields for a in ("-e", f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line.split("|") for line in r.stdout.splitlines()]


def zlib_icrc(frame):
    """ICRC per roce.md, independent of fabricgen: masks, 8 x 0xFF, CRC-32, LSB first."""
    eth = Ether(frame)
    off = 14 + (4 if frame[12:14] == b"\x81\x00" else 0)
    body = bytearray(frame[off:])
    if eth.haslayer(IP):
        ihl = (body[0] & 0x0F) * 4
        ip_len = struct.unpack("!H", body[2:4])[0]
        body = body[:ip_len]
        for i in (1, 8, 10, 11):
            body[i] = 0xFF
        udp = ihl
    else:
        ip_len = 40 + struct.unpack("!H", body[4:6])[0]
        body = body[:ip_len]
        body[0] |= 0x0F
        for i in (1, 2, 3, 7):
            body[i] = 0xFF
        udp = 40
    body[udp + 6] = body[udp + 7] = 0xFF
    body[udp + 8 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(body[:-4])) & 0xFFFFFFFF
    return struct.pack("<I", crc), bytes(body[-4:])


def scapy_icrc_matches(frame):
    """scapy rebuilds the frame with its own ICRC: equal bytes means equal ICRC."""
    pkt = Ether(frame)
    pkt[BTH].icrc = None
    return raw(pkt) == frame[:len(raw(pkt))]


class ResponderDecode(unittest.TestCase):
    """The ACKs a responding port sends (ports[].respond), captured on the
    built-in loopback where they come back beside the data they answer."""

    def test_acks_decode_with_their_qp_psn_msn_and_a_valid_icrc(self):
        tmp = tempfile.mkdtemp(dir=WORK.name)
        plan = os.path.join(tmp, "plan.yaml")
        with open(plan, "w") as f:
            f.write("duration: 10 s\n"
                    "ports: [{name: loop0, respond: {ack_every: 4}}]\n"
                    "streams: [{name: s, rate: 20 kpps, flows: 2,\n"
                    "           frame: {roce: {op: WRITE, message: 65536, pmtu: 1024, dest_qp: 0x40}}}]\n")
        pcap = os.path.join(tmp, "rx.pcap")
        script = os.path.join(tmp, "session.txt")
        with open(script, "w") as f:
            f.write("start\nwait 100 ms\ncapture loop0 600 %s\nstop\n" % pcap)
        r = subprocess.run([FABRICGEN, "cli", plan, "--script", script], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        rows = tshark_fields(pcap, ["infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
                                    "infiniband.aeth.syndrome", "infiniband.aeth.msn", "ip.src", "ip.dst",
                                    "ip.dsfield.ecn", "udp.dstport"])
        frames = [bytes(p) for p in rdpcap(pcap)]
        self.assertEqual(len(rows), 600)
        acks = [(row, f) for row, f in zip(rows, frames) if int(row[0]) == 0x11]
        data = [row for row in rows if int(row[0]) in (6, 7, 8)]
        # 20 kpps of 64-packet messages, an ACK at least every 4 packets of
        # each QP (fewer when a burst holds several of a QP's: coalesced).
        self.assertGreater(len(acks), 20)
        self.assertEqual(len(acks) + len(data), 600)
        last = {}
        for (op, qp, psn, syndrome, msn, src, dst, ecn, dport), f in acks:
            qp, psn = int(qp, 0), int(psn)
            self.assertIn(qp, (0x40, 0x41))
            self.assertEqual(int(syndrome), 31)  # ACK with 31 credits
            self.assertEqual((src, dst), ("198.19.0.1", "198.18.0.1"))  # from the data's destination to its source
            self.assertEqual(int(ecn), 0)
            self.assertEqual(int(dport), 4791)
            # MSN: the messages completed up to this PSN (64 packets each, PSN from 0).
            self.assertEqual(int(msn), (psn + 1) // 64, "QP %#x PSN %d" % (qp, psn))
            self.assertGreater(psn, last.get(qp, -1))
            last[qp] = psn
            ours, stored = zlib_icrc(f)
            self.assertEqual(ours, stored, "ACK PSN %d: zlib ICRC" % psn)
            self.assertTrue(scapy_icrc_matches(f), "ACK PSN %d: scapy ICRC" % psn)
        self.assertEqual(set(last), {0x40, 0x41})


class RoceDecode(unittest.TestCase):
    def test_write_1mib_segments_decode_with_our_fields_and_valid_icrc(self):
        pcap = craft("configs/roce/write-1MB-mtu4096.yaml", 300)  # one message and 44 packets of the next
        rows = tshark_fields(pcap, ["infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn",
                                    "infiniband.bth.a", "infiniband.bth.p_key", "infiniband.reth.dmalen",
                                    "udp.dstport", "ip.dsfield.dscp", "ip.dsfield.ecn"])
        self.assertEqual(len(rows), 300)
        for i, (op, qp, psn, ackreq, pkey, dmalen, dport, dscp, ecn) in enumerate(rows):
            pos = i % 256
            want = 6 if pos == 0 else (8 if pos == 255 else 7)
            self.assertEqual(int(op), want, f"frame {i}")
            self.assertEqual(int(qp, 0), 0x12)
            self.assertEqual(int(psn), i)
            self.assertEqual(ackreq in ("1", "True"), pos == 255, f"frame {i} AckReq {ackreq}")
            self.assertEqual(int(pkey), 0xFFFF)
            self.assertEqual(dmalen, "1048576" if pos == 0 else "")
            self.assertEqual(int(dport), 4791)
            self.assertEqual((int(dscp), int(ecn)), (26, 2))
        frames = [bytes(p) for p in rdpcap(pcap)]
        for i, f in enumerate(frames):
            ours, expect = zlib_icrc(f)
            self.assertEqual(ours, expect, f"frame {i}: zlib ICRC")
            self.assertTrue(scapy_icrc_matches(f), f"frame {i}: scapy ICRC")

    def test_every_opcode_stream_over_ipv4_and_ipv6(self):
        pcap = craft("configs/roce/opcodes-ipv4-ipv6.yaml", 3)
        rows = tshark_fields(pcap, ["ip.version", "ipv6.version", "infiniband.bth.opcode", "infiniband.bth.destqp",
                                    "infiniband.bth.psn", "infiniband.aeth.syndrome", "infiniband.deth.srcqp",
                                    "infiniband.immdt", "ipv6.flow"])
        frames = [bytes(p) for p in rdpcap(pcap)]
        self.assertEqual(len(rows), len(frames))
        seen = {}
        for row, f in zip(rows, frames):
            v4, v6, op, qp, psn, syndrome, srcqp, imm, flow = row
            op = int(op)
            seen.setdefault(op, []).append(row)
            ours, stored = zlib_icrc(f)
            bad = op == 0x0A and len(f) == 14 + 20 + 8 + 12 + 16 + 256 + 4  # the bad-icrc stream
            self.assertEqual(ours != stored, bad, f"opcode {op:#x}: ICRC {'should' if bad else 'should not'} fail")
            if f[12:14] == b"\x08\x00":  # scapy computes the ICRC for IPv4 only
                self.assertEqual(scapy_icrc_matches(f), not bad, f"opcode {op:#x}: scapy ICRC")
        # SEND_IMM of 5000 B at 2048: FIRST, MIDDLE, LAST_IMM with the immediate.
        self.assertIn(0x00, seen)
        self.assertIn(0x01, seen)
        # tshark 4.0 lists ImmDt twice for SEND_LAST_IMM (one header on the wire: checked by bytes in unit tests).
        self.assertEqual(int(seen[0x03][0][7].split(",")[0], 16), 0xC0FFEE)
        # READ response over IPv6 with our flow label and QP.
        self.assertEqual([int(r[4]) for r in seen[0x0D]], [0])
        self.assertEqual(int(seen[0x0D][0][3], 0), 0x55)
        self.assertEqual(int(seen[0x0D][0][8], 16), 0x12345)
        self.assertIn(0x0C, seen)  # READ_REQUEST
        syndromes = sorted(set(int(r[5]) for r in seen[0x11]))  # tshark prints it in decimal
        self.assertEqual(syndromes, [0x10, 0x60])  # ACK with 16 credits, NAK PSN sequence error
        self.assertEqual(int(seen[0x64][0][6], 0), 0x77)  # UD SEND_ONLY: DETH source QP
        self.assertIn(0x2A, seen)  # UC WRITE_ONLY

    def test_cnp(self):
        pcap = craft("configs/roce/cnp.yaml", 5)
        frames = [bytes(p) for p in rdpcap(pcap)]
        self.assertEqual(len(frames), 5)
        for f in frames:
            self.assertEqual(len(f), 14 + 60)
            bth = f[14 + 20 + 8:]
            self.assertEqual(bth[0], 0x81)
            self.assertEqual(bth[4], 0x40)  # BECN
            self.assertEqual(bth[5:8], b"\x00\x00\xd2")
            ours, stored = zlib_icrc(f)
            self.assertEqual(ours, stored)
            self.assertTrue(scapy_icrc_matches(f))


class MacControlDecode(unittest.TestCase):
    def test_pfc_and_pause(self):
        pcap = craft("configs/pfc/pfc-pause.yaml", 1)
        rows = tshark_fields(pcap, ["macc.opcode", "macc.cbfc.enbv", "macc.cbfc.pause_time.c3", "macc.pause_time",
                                    "frame.len"])
        self.assertEqual(rows[0][:3], ["0x0101", "0x0008", "65535"])
        self.assertEqual(rows[1][0], "0x0001")
        self.assertEqual(rows[1][3], "1000")
        self.assertEqual([r[4] for r in rows], ["60", "60"])


if __name__ == "__main__":
    FABRICGEN = os.path.abspath(sys.argv.pop(1))
    ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
