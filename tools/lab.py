#!/usr/bin/python3
"""fabricgen lab: a leaf/spine fabric in network namespaces, built from a plan's
`lab:` section, with impairments whose truths the kernel (or our logged
impairment stage) records independently of fabricgen's analyzer.

usage:
  lab.py up PLAN [--name NAME]         build the lab and leave it up
  lab.py down (PLAN | --name NAME)     remove a lab (namespaces, stages)
  lab.py run PLAN [--name NAME] [--truth FILE] [-- COMMAND ...]
        build, run COMMAND in the tester namespace (default: fabricgen run
        PLAN), apply scheduled link events, write the truths (per-rule nft
        counters, qdisc statistics, link counters, link-down intervals, stage
        decision logs) as JSON to FILE (default: truth.json in a new
        temporary directory, with the stage logs), and remove the lab even
        on failure
  lab.py counters [--name NAME]        per-link counters as JSON (NAME defaults
        to $FABRICGEN_LAB, which `run` sets for COMMAND)
  lab.py show PLAN                     print the lab's nodes, links and routes

The lab section and its impairments are described in docs/lab.md. Needs root.
Addresses: only 198.18.0.0/15 and 2001:db8::/32 (inner links from
198.19.128.0/17 and 2001:db8:ffff::/48).
"""
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
INNER4 = ipaddress.ip_network("198.19.128.0/17")
INNER6 = ipaddress.ip_network("2001:db8:ffff::/48")
ALLOWED = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]
UDP_MATCH = "meta l4proto udp"


class LabError(Exception):
    pass


# ---------------------------------------------------------------- plan reading
class Node:
    """A YAML node with its position, so errors name file:line:column and field."""

    def __init__(self, file, node, path):
        self.file, self.node, self.path = file, node, path

    def error(self, msg):
        m = self.node.start_mark
        return LabError("%s:%d:%d: %s: %s" % (self.file, m.line + 1, m.column + 1, self.path, msg))

    def is_map(self):
        return isinstance(self.node, yaml.MappingNode)

    def items(self):
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.error("expected a list")
        return [Node(self.file, n, "%s[%d]" % (self.path, i)) for i, n in enumerate(self.node.value)]

    def keys(self, allowed):
        if not self.is_map():
            raise self.error("expected a map")
        out = {}
        for k, v in self.node.value:
            if k.value not in allowed:
                raise Node(self.file, k, self.path).error(
                    "unknown field '%s'; allowed here: %s" % (k.value, ", ".join(allowed)))
            out[k.value] = Node(self.file, v, "%s.%s" % (self.path, k.value))
        return out

    def scalar(self):
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.error("expected a value")
        return self.node.value

    def int(self, lo, hi):
        try:
            v = int(self.scalar(), 0)
        except ValueError:
            raise self.error("expected an integer, got '%s'" % self.scalar())
        if not lo <= v <= hi:
            raise self.error("%d is out of range %d..%d" % (v, lo, hi))
        return v

    def bool(self):
        v = self.scalar()
        if v not in ("true", "false"):
            raise self.error("expected true or false, got '%s'" % v)
        return v == "true"

    def _unit(self, table, what):
        s = self.scalar().strip()
        m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/%]+)", s)
        if not m or m.group(2) not in table:
            raise self.error("expected %s with a unit (%s), got '%s'" % (what, ", ".join(table), s))
        return float(m.group(1)) * table[m.group(2)]

    def duration_ns(self):
        return int(round(self._unit({"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9}, "a duration")))

    def size_bytes(self):
        return int(round(self._unit({"B": 1, "KB": 1e3, "MB": 1e6, "KiB": 1024, "MiB": 1 << 20}, "a size")))

    def bit_rate(self):
        return self._unit({"bps": 1, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9}, "a bit rate")

    def packet_rate(self):
        return int(round(self._unit({"pps": 1, "kpps": 1e3, "Mpps": 1e6}, "a packet rate")))

    def ratio(self):
        v = self._unit({"%": 0.01}, "a percentage")
        if not 0 <= v <= 1:
            raise self.error("a percentage is 0 %..100 %")
        return v


def _device_iface(device):
    m = re.search(r"(?:^|,)iface=([^,]+)", device)
    return m.group(1) if device.startswith("net_af_packet") and m else None


class Impairment:
    """One impairment on the egress of `node` towards `peer` (link 'node-peer')."""

    def __init__(self, index, link, node, peer, kind, params, match, where):
        self.index, self.link, self.node, self.peer = index, link, node, peer
        self.kind, self.params, self.match, self.where = kind, params, match, where

    def nft_rule(self):
        p, sel = self.params, "%s %s" % (UDP_MATCH, self.match) if self.match else UDP_MATCH
        tag = 'comment "imp%d"' % self.index
        per_million = lambda r: "numgen random mod 1000000 < %d" % round(r * 1e6)  # noqa: E731
        if self.kind == "loss":
            return "%s %s counter drop %s" % (sel, per_million(p), tag)
        if self.kind == "drop_psn":  # RoCEv2 BTH PSN: UDP header (8 B) + BTH bytes 9..11
            return "%s udp dport 4791 @th,136,24 & 0x%06x == 0x%06x counter drop %s" % (
                sel, p["mask"], p["value"], tag)
        if self.kind == "ecn_ce":
            mark = "ip ecn set ce" if p["family"] == 4 else "ip6 ecn set ce"
            fam = "meta nfproto ipv4" if p["family"] == 4 else "meta nfproto ipv6"
            return "%s %s %s counter %s %s" % (fam, sel, per_million(p["ratio"]), mark, tag)
        if self.kind == "police":
            return "%s limit rate over %d/second burst %d packets counter drop %s" % (
                sel, p["pps"], p["burst"], tag)
        return None

    def dup_rule(self, gateway):
        # nft_dup_ipv4: a copy of the packet sent to `gateway` through the egress
        # device (the lab's links resolve no neighbours, so any address will do).
        tag = 'comment "imp%d"' % self.index
        sel = "%s %s" % (UDP_MATCH, self.match) if self.match else UDP_MATCH
        return "%s numgen random mod 1000000 < %d counter dup to %s device \"%s\" %s" % (
            sel, round(self.params * 1e6), gateway, self.peer, tag)


class Host:
    def __init__(self, port, iface, leaf, prefixes):
        self.port, self.iface, self.leaf, self.prefixes = port, iface, leaf, prefixes


class LabSpec:
    """The plan's `lab:` section, validated."""

    def __init__(self):
        self.spines, self.leaves, self.hosts, self.impairments = 2, 2, [], []
        self.gateway_mac = "02:00:00:00:00:02"
        self.ipv6 = True

    @staticmethod
    def load(plan_file):
        with open(plan_file) as f:
            text = f.read()
        try:
            root = yaml.compose(text)
        except yaml.YAMLError as e:
            raise LabError("%s: %s" % (plan_file, e))
        if root is None or not isinstance(root, yaml.MappingNode):
            raise LabError("%s: a plan is a map" % plan_file)
        top = {k.value: Node(plan_file, v, k.value) for k, v in root.value}
        if "lab" not in top:
            raise LabError("%s: the plan has no `lab:` section" % plan_file)
        ports = {}
        for p in top["ports"].items() if "ports" in top else []:
            if p.is_map():
                f = {k.value: v.value for k, v in p.node.value if isinstance(v, yaml.ScalarNode)}
                ports[f.get("name")] = (f.get("device", ""), p)
        return LabSpec.parse(top["lab"], ports)

    @staticmethod
    def parse(n, ports):
        s = LabSpec()
        f = n.keys(["spines", "leaves", "ipv6", "gateway_mac", "hosts", "impairments"])
        if "spines" in f:
            s.spines = f["spines"].int(0, 64)
        if "leaves" in f:
            s.leaves = f["leaves"].int(1, 64)
        if s.spines == 0 and s.leaves > 1:
            raise f["spines"].error("leaves talk through spines: %d leaves need at least one spine" % s.leaves)
        if "ipv6" in f:
            s.ipv6 = f["ipv6"].bool()
        if "gateway_mac" in f:
            s.gateway_mac = f["gateway_mac"].scalar()
            if not re.fullmatch(r"([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}", s.gateway_mac):
                raise f["gateway_mac"].error("expected a MAC address like 02:00:00:00:00:02")
        if "hosts" not in f:
            raise n.error("missing field 'hosts' (the tester ports and the leaves they attach to)")
        seen = []
        for h in f["hosts"].items():
            hf = h.keys(["port", "leaf", "prefixes"])
            for k in ("port", "leaf", "prefixes"):
                if k not in hf:
                    raise h.error("missing field '%s'" % k)
            port = hf["port"].scalar()
            if port not in ports:
                raise hf["port"].error("no port '%s' in the plan's ports (%s)" % (port, ", ".join(ports) or "none"))
            iface = _device_iface(ports[port][0])
            if not iface:
                raise hf["port"].error("port '%s' must be an af_packet port (device: \"net_af_packetN,iface=NAME\")"
                                       % port)
            if len(iface) > 15 or len(port) > 15:
                raise hf["port"].error("interface and port names are at most 15 characters")
            if port in [x.port for x in s.hosts]:
                raise hf["port"].error("port '%s' is attached twice" % port)
            leaf = hf["leaf"].int(0, s.leaves - 1)
            prefixes = []
            for p in hf["prefixes"].items():
                try:
                    net = ipaddress.ip_network(p.scalar())
                except ValueError as e:
                    raise p.error(str(e))
                if not any(net.subnet_of(a) for a in ALLOWED if a.version == net.version):
                    raise p.error("lab addresses come only from 198.18.0.0/15 and 2001:db8::/32")
                inner = INNER4 if net.version == 4 else INNER6
                if net.overlaps(inner):
                    raise p.error("overlaps the lab's inner links (%s)" % inner)
                for other in seen:
                    if net.overlaps(other):
                        raise p.error("overlaps %s of another host" % other)
                if net.version == 6 and not s.ipv6:
                    raise p.error("an IPv6 prefix needs `ipv6: true`")
                seen.append(net)
                prefixes.append(net)
            s.hosts.append(Host(port, iface, leaf, prefixes))
        if not s.hosts:
            raise f["hosts"].error("attach at least one tester port")
        nodes = set(s.node_names()) | {h.port for h in s.hosts}
        for i, item in enumerate(f["impairments"].items() if "impairments" in f else []):
            s.impairments.append(s._parse_impairment(i, item, nodes))
        return s

    def _parse_impairment(self, i, n, nodes):
        kinds = ["loss", "drop_psn", "duplicate", "ecn_ce", "police", "shape", "down", "stage"]
        f = n.keys(["link", "match", "family"] + kinds)
        if "link" not in f:
            raise n.error("missing field 'link' (NODE-PEER: the egress of NODE towards PEER, e.g. leaf1-b)")
        link = f["link"].scalar()
        parts = link.split("-")
        if len(parts) != 2 or parts[0] not in self.node_names() or parts[1] not in nodes:
            raise f["link"].error("'%s' is not a link of this lab (links: %s)" % (link, ", ".join(self.link_names())))
        if link not in self.link_names():
            raise f["link"].error("'%s' is not a link of this lab (links: %s)" % (link, ", ".join(self.link_names())))
        given = [k for k in kinds if k in f]
        if len(given) != 1:
            raise n.error("an impairment has exactly one kind of: %s" % ", ".join(kinds))
        kind, v = given[0], f[given[0]]
        match = f["match"].scalar() if "match" in f else None
        if kind in ("loss", "duplicate"):
            params = v.ratio()
        elif kind == "drop_psn":
            g = v.keys(["mask", "value"])
            params = {"mask": g["mask"].int(1, 0xFFFFFF), "value": g["value"].int(0, 0xFFFFFF)}
            if params["value"] & ~params["mask"]:
                raise g["value"].error("has bits outside the mask")
        elif kind == "ecn_ce":
            params = {"ratio": v.ratio(), "family": f["family"].int(4, 6) if "family" in f else 4}
            if params["family"] not in (4, 6):
                raise f["family"].error("4 or 6")
        elif kind == "police":
            if v.is_map():
                g = v.keys(["rate", "burst"])
                params = {"pps": g["rate"].packet_rate(), "burst": g["burst"].int(1, 1 << 20) if "burst" in g else 5}
            else:
                params = {"pps": v.packet_rate(), "burst": 5}
        elif kind == "shape":
            g = v.keys(["qdisc", "rate", "burst", "limit"])
            if "rate" not in g:
                raise v.error("missing field 'rate'")
            params = {"qdisc": g["qdisc"].scalar() if "qdisc" in g else "tbf", "rate_bps": g["rate"].bit_rate(),
                      "burst": g["burst"].size_bytes() if "burst" in g else 16000,
                      "limit": g["limit"].size_bytes() if "limit" in g else 100000}
            if params["qdisc"] not in ("tbf", "htb"):
                raise g["qdisc"].error("tbf or htb (with a bfifo queue of `limit` bytes)")
        elif kind == "down":
            g = v.keys(["at", "for"])
            for k in ("at", "for"):
                if k not in g:
                    raise v.error("missing field '%s'" % k)
            params = {"at_ns": g["at"].duration_ns(), "for_ns": g["for"].duration_ns()}
        else:  # stage
            g = v.keys(["delay", "jitter", "reorder", "extent", "seed", "rate", "limit", "ecn"])
            params = {"delay_ns": g["delay"].duration_ns() if "delay" in g else 0,
                      "jitter_ns": g["jitter"].duration_ns() if "jitter" in g else 0,
                      "reorder": g["reorder"].ratio() if "reorder" in g else 0.0,
                      "extent": g["extent"].int(1, 1000) if "extent" in g else 1,
                      "seed": g["seed"].int(0, (1 << 53) - 1) if "seed" in g else 1,
                      "rate_bps": g["rate"].bit_rate() if "rate" in g else 0,
                      "limit": g["limit"].size_bytes() if "limit" in g else 1 << 20}
            if "limit" in g and "rate" not in g:
                raise g["limit"].error("a queue limit needs the queue's `rate`")
            if "ecn" in g:
                e = g["ecn"].keys(["kmin", "kmax", "pmax"])
                for k in ("kmin", "kmax", "pmax"):
                    if k not in e:
                        raise g["ecn"].error("missing field '%s' (RED-style marking: kmin, kmax, pmax)" % k)
                params.update(kmin=e["kmin"].size_bytes(), kmax=e["kmax"].size_bytes(), pmax=e["pmax"].ratio())
                if "rate" not in g:
                    raise g["ecn"].error("marking by queue depth needs the queue's `rate`")
                if params["kmin"] >= params["kmax"]:
                    raise e["kmax"].error("kmax must be above kmin")
        if match is not None and kind in ("shape", "down", "stage"):
            raise f["match"].error("`match` selects frames for nftables impairments only")
        return Impairment(i, link, parts[0], parts[1], kind, params, match, n)

    def node_names(self):
        return ["leaf%d" % i for i in range(self.leaves)] + ["spine%d" % i for i in range(self.spines)]

    def link_names(self):
        out = []
        for l in range(self.leaves):
            for s in range(self.spines):
                out += ["leaf%d-spine%d" % (l, s), "spine%d-leaf%d" % (s, l)]
        for h in self.hosts:
            out.append("leaf%d-%s" % (h.leaf, h.port))
        return out


# ---------------------------------------------------------------- building
def sh(*cmd, ns=None, check=True, stdin=None):
    full = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    r = subprocess.run(full, capture_output=True, text=True, input=stdin)
    if check and r.returncode != 0:
        raise LabError("%s: %s" % (" ".join(full), (r.stderr or r.stdout).strip()))
    return r


_count = 0


def default_name():
    global _count
    _count += 1
    return "fg%d%d" % (os.getpid(), _count)


class Lab:
    """A lab built from a LabSpec. Namespaces are NAME-tester, NAME-leafI,
    NAME-spineJ and NAME-stageK; every one is removed on exit, even on failure.
    Link NODE-PEER is the device named PEER in NODE's namespace."""

    def __init__(self, spec, name=None, workdir=None):
        self.spec = spec
        self.name = name or default_name()
        self.namespaces, self.stages, self.routes = [], [], {}
        self.link_ends = {}  # link name -> (namespace, device)
        self.workdir = workdir  # the stages' decision logs go here

    def ns(self, node):
        return "%s-%s" % (self.name, node)

    @property
    def tester(self):
        return self.ns("tester")

    def __enter__(self):
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    # -- addresses
    def inner_addresses(self, k):
        """Both ends of inner link k: IPv4 /31 and IPv6 /127."""
        a4 = INNER4.network_address + 2 * k
        a6 = INNER6.network_address + 2 * k
        return (a4, a4 + 1), (a6, a6 + 1)

    def up(self):
        s = self.spec
        if self.workdir is None:
            self.workdir = tempfile.mkdtemp(prefix="fabricgen-lab-%s-" % self.name)
        routers = s.node_names()
        for node in ["tester"] + routers:
            self._add_ns(node, router=node != "tester")
        # Inner links: same MAC at both ends and no ARP/ND, so a router sends to
        # its own MAC and the peer takes the frame as its own (no neighbour
        # resolution, nothing but test traffic on the wire).
        k = 0
        uplinks = {}  # leaf -> [(spine, leaf addr4, spine addr4, leaf addr6, spine addr6)]
        for l in range(s.leaves):
            for sp in range(s.spines):
                leaf, spine = "leaf%d" % l, "spine%d" % sp
                mac = "02:fe:%02x:%02x:%02x:%02x" % (l >> 8, l & 255, sp >> 8, sp & 255)
                (a4, b4), (a6, b6) = self.inner_addresses(k)
                k += 1
                self._link(leaf, spine, spine, leaf, mac, mac)
                sh("ip", "addr", "add", "%s/31" % a4, "dev", spine, ns=self.ns(leaf))
                sh("ip", "addr", "add", "%s/31" % b4, "dev", leaf, ns=self.ns(spine))
                if s.ipv6:
                    sh("ip", "-6", "addr", "add", "%s/127" % a6, "dev", spine, "nodad", ns=self.ns(leaf))
                    sh("ip", "-6", "addr", "add", "%s/127" % b6, "dev", leaf, "nodad", ns=self.ns(spine))
                uplinks.setdefault(l, []).append((sp, a4, b4, a6, b6))
        for h in s.hosts:
            leaf = "leaf%d" % h.leaf
            # The leaf's end answers to the streams' destination MAC; the
            # tester's end (fabricgen's af_packet port) keeps its own.
            self._link(leaf, h.port, "tester", h.iface, s.gateway_mac, None, peer_node=h.port)
        # Routes: a host's prefixes on its leaf's port; other leaves over every
        # spine (ECMP, hashed on the UDP source port); spines to the host's leaf.
        for h in s.hosts:
            for p in h.prefixes:
                self._route("leaf%d" % h.leaf, p, [(None, h.port)])
                for l in range(s.leaves):
                    if l != h.leaf:
                        hops = [(b4 if p.version == 4 else b6, "spine%d" % sp)
                                for sp, a4, b4, a6, b6 in uplinks[l]]
                        self._route("leaf%d" % l, p, hops)
                for sp, a4, b4, a6, b6 in uplinks.get(h.leaf, []):
                    self._route("spine%d" % sp, p, [(a4 if p.version == 4 else a6, "leaf%d" % h.leaf)])
        for imp in s.impairments:
            self._impair(imp)
        if s.ipv6:
            time.sleep(0.05)  # the routers' MLD reports (see _add_ns)

    def _add_ns(self, node, router):
        ns = self.ns(node)
        sh("ip", "netns", "add", ns)
        self.namespaces.append(ns)
        sysctls = ["net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0",
                   "net.ipv6.conf.default.router_solicitations=0", "net.ipv6.conf.all.router_solicitations=0",
                   # MLD reports (joins of the routers' own groups) are the only
                   # frames the lab sends by itself: send them within 1 ms of link
                   # up, and up() waits for them before anything is measured.
                   "net.ipv6.conf.default.mldv2_unsolicited_report_interval=1",
                   "net.ipv6.conf.all.mldv2_unsolicited_report_interval=1",
                   "net.ipv6.conf.default.mldv1_unsolicited_report_interval=1",
                   "net.ipv6.conf.all.mldv1_unsolicited_report_interval=1"]
        if not router or not self.spec.ipv6:
            sysctls = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"]
        if router:
            sysctls += ["net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1",
                        "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
                        "net.ipv4.icmp_ratelimit=0"]
            if self.spec.ipv6:
                # keep_addr_on_down: a link that goes down and up (`down`) keeps its IPv6 addresses, as IPv4 does.
                sysctls += ["net.ipv6.conf.all.forwarding=1", "net.ipv6.fib_multipath_hash_policy=1",
                            "net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1"]
        sh("sysctl", "-qw", *sysctls, ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)

    def _link(self, a, dev_a, b, dev_b, mac_a, mac_b, peer_node=None):
        """Link a-b: device dev_a in a's namespace, dev_b in b's (through a stage when one is planned);
        a MAC of None keeps the device's own. peer_node names b in link names (a tester port)."""
        b_name = peer_node or b
        stages = [i for i in self.spec.impairments if i.kind == "stage" and {i.node, i.peer} == {a, b_name}]
        if not stages:
            sh("ip", "link", "add", "name", dev_a, "type", "veth", "peer", "name", dev_b, "netns", self.ns(b),
               ns=self.ns(a))
        else:
            imp = stages[0]
            st = "stage%d" % imp.index
            self._add_ns(st, router=False)
            # node -> [stage: in | out] -> peer; the stage impairs node's egress.
            src, dst = (a, b) if imp.node == a else (b, a)
            dev_src, dev_dst = (dev_a, dev_b) if src == a else (dev_b, dev_a)
            sh("ip", "link", "add", "name", dev_src, "type", "veth", "peer", "name", "in", "netns", self.ns(st),
               ns=self.ns(src))
            sh("ip", "link", "add", "name", dev_dst, "type", "veth", "peer", "name", "out", "netns", self.ns(st),
               ns=self.ns(dst))
            for d in ("in", "out"):
                sh("ip", "link", "set", "dev", d, "up", ns=self.ns(st))
            imp.stage_ns = self.ns(st)
        for node, dev, mac in ((a, dev_a, mac_a), (b, dev_b, mac_b)):
            sh("ip", "link", "set", "dev", dev, *(["address", mac, "arp", "off"] if mac else []), "up",
               ns=self.ns(node))
        self.link_ends["%s-%s" % (a, b_name)] = (self.ns(a), dev_a)
        if not peer_node:
            self.link_ends["%s-%s" % (b, a)] = (self.ns(b), dev_b)

    def _route(self, node, prefix, hops):
        """hops: [(gateway or None, device)]; several hops make an ECMP route."""
        fam = "-6" if prefix.version == 6 else "-4"
        cmd = ["ip", fam, "route", "replace", str(prefix)]
        if len(hops) == 1:
            gw, dev = hops[0]
            cmd += (["via", str(gw)] if gw else []) + ["dev", dev]
        else:
            for gw, dev in hops:
                cmd += ["nexthop", "via", str(gw), "dev", dev]
        sh(*cmd, ns=self.ns(node))
        self.routes.setdefault(node, []).append((prefix, hops))

    def _impair(self, imp):
        ns, dev = self.link_ends[imp.link]
        if imp.kind == "shape":
            p = imp.params
            if p["qdisc"] == "tbf":
                sh("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", "%dbit" % p["rate_bps"],
                   "burst", p["burst"], "limit", p["limit"], ns=ns)
            else:
                sh("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1", ns=ns)
                sh("tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                   "rate", "%dbit" % p["rate_bps"], "ceil", "%dbit" % p["rate_bps"], "burst", p["burst"], ns=ns)
                sh("tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "bfifo", "limit", p["limit"],
                   ns=ns)
        elif imp.kind == "stage":
            log = os.path.join(self.workdir, "stage%d.log" % imp.index)
            p = imp.params
            cmd = [self.impair_binary(), "--in", "in", "--out", "out", "--log", log,
                   "--delay-ns", p["delay_ns"], "--jitter-ns", p["jitter_ns"], "--reorder", p["reorder"],
                   "--extent", p["extent"], "--seed", p["seed"]]
            if p["rate_bps"]:
                cmd += ["--rate-bps", p["rate_bps"], "--limit-bytes", p["limit"]]
            if "kmax" in p:
                cmd += ["--ecn-kmin", p["kmin"], "--ecn-kmax", p["kmax"], "--ecn-pmax", p["pmax"]]
            proc = subprocess.Popen(["ip", "netns", "exec", imp.stage_ns] + [str(c) for c in cmd],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if proc.stdout.readline().strip() != "ready":
                proc.wait()
                raise LabError("impairment stage on %s did not start: %s" % (imp.link, proc.stderr.read()))
            self.stages.append((imp, proc, log))
        elif imp.kind == "down":
            pass  # scheduled by run()
        else:
            self._nft(ns, imp)

    def _nft(self, ns, imp):
        if not getattr(self, "_tables", None):
            self._tables = set()
        if ns not in self._tables:
            sh("nft", "-f", "-", ns=ns, stdin="table inet fglab {\n chain forward {\n"
               "  type filter hook forward priority 0; policy accept;\n }\n}\n"
               "table ip fglabdup {\n chain forward {\n"
               "  type filter hook forward priority 1; policy accept;\n }\n}\n")
            self._tables.add(ns)
        if imp.kind == "duplicate":
            rule = 'oifname "%s" %s' % (imp.peer, imp.dup_rule("198.18.0.1"))
            sh("nft", "add", "rule", "ip", "fglabdup", "forward", rule, ns=ns)
        else:
            sh("nft", "add", "rule", "inet", "fglab", "forward", 'oifname "%s" %s' % (imp.peer, imp.nft_rule()), ns=ns)

    @staticmethod
    def impair_binary():
        for c in (os.environ.get("FABRICGEN_IMPAIR"), os.path.join(HERE, "..", "build", "app", "fabricgen-impair"),
                  shutil.which("fabricgen-impair")):
            if c and os.access(c, os.X_OK):
                return os.path.abspath(c)
        raise LabError("fabricgen-impair not found (build it, or set FABRICGEN_IMPAIR)")

    def down(self):
        for imp, proc, log in self.stages:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        self.stages = []
        remove(self.name, self.namespaces)
        self.namespaces = []

    # -- truths
    def counters(self):
        return read_counters(self.name)

    def nft_counters(self):
        out = {}
        for ns in set(ns for ns, _ in self.link_ends.values()):
            r = sh("nft", "-j", "list", "ruleset", ns=ns, check=False)
            if r.returncode != 0 or not r.stdout.strip():
                continue
            for item in json.loads(r.stdout)["nftables"]:
                rule = item.get("rule")
                if not rule or not rule.get("comment", "").startswith("imp"):
                    continue
                c = next(e["counter"] for e in rule["expr"] if "counter" in e)
                out[int(rule["comment"][3:])] = {"packets": c["packets"], "bytes": c["bytes"]}
        return out

    def qdisc_stats(self, link):
        ns, dev = self.link_ends[link]
        return json.loads(sh("tc", "-s", "-j", "qdisc", "show", "dev", dev, ns=ns).stdout)

    def run(self, command, env=None, timeout=900, captures=()):
        """Runs command in the tester namespace with the scheduled link events,
        capturing the (node, device) pairs in `captures` with tcpdump meanwhile
        (node "tester" for fabricgen's own interfaces: these show what arrives;
        af_packet's transmissions bypass the taps, so capture what a port sends
        on the leaf's end). Returns (CompletedProcess, truth dict);
        truth["captures"]["NODE-DEV"] holds the pcap file and the frames
        tcpdump's kernel buffer dropped."""
        dumps = [Capture(self.ns(node), dev, os.path.join(self.workdir, "%s-%s.pcap" % (node, dev)))
                 for node, dev in captures]
        env = dict(os.environ if env is None else env)
        env["FABRICGEN_LAB"] = self.name
        env["PATH"] = HERE + os.pathsep + env.get("PATH", "")
        before = self.counters()
        flaps = []
        start = time.monotonic_ns()
        for imp in self.spec.impairments:
            if imp.kind == "down":
                ns, dev = self.link_ends[imp.link]
                routes = [(str(p), [(str(g) if g else None, d) for g, d in hops])
                          for p, hops in self.routes.get(imp.node, []) if any(d == dev for _, d in hops)]
                arg = json.dumps({"dev": dev, "at_mono_ns": start + imp.params["at_ns"],
                                  "for_ns": imp.params["for_ns"], "routes": routes})
                flaps.append((imp, subprocess.Popen(["ip", "netns", "exec", ns, sys.executable,
                                                     os.path.abspath(__file__), "_flap", arg],
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        try:
            result = subprocess.run(["ip", "netns", "exec", self.tester] + list(command), env=env,
                                    capture_output=True, text=True, timeout=timeout)
        finally:
            for _, p in flaps:
                try:
                    p.wait(max(1, timeout))
                except subprocess.TimeoutExpired:
                    p.kill()
        after = self.counters()
        truth = {"lab": self.name, "impairments": [], "captures": {c.name: c.stop() for c in dumps}}
        nft = self.nft_counters()
        flap_out = {imp.index: p for imp, p in flaps}
        stage_logs = {imp.index: log for imp, _, log in self.stages}
        for imp in self.spec.impairments:
            t = {"index": imp.index, "link": imp.link, "kind": imp.kind}
            if imp.index in nft:
                t["counter"] = nft[imp.index]
            if imp.kind == "shape":
                t["qdisc"] = self.qdisc_stats(imp.link)
            if imp.index in flap_out:
                p = flap_out[imp.index]
                out, err = p.communicate()
                if p.returncode != 0:
                    raise LabError("link down on %s failed: %s" % (imp.link, err.strip()))
                t.update(json.loads(out))
                t["at_ns_from_command_start"] = t["down_mono_ns"] - start
            if imp.index in stage_logs:
                t["log"] = stage_logs[imp.index]
            truth["impairments"].append(t)
        truth["links"] = {k: {c: after[k][c] - before[k][c] for c in after[k]} for k in after if k in before}
        return result, truth

    def stop_stages(self):
        """Stops the stages so their logs are complete; returns the logs' paths."""
        for imp, proc, log in self.stages:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=10)
        return {imp.index: log for imp, _, log in self.stages}


class Capture:
    """tcpdump on one interface of a namespace, started before the traffic."""

    def __init__(self, ns, iface, pcap):
        self.iface, self.pcap = iface, pcap
        self.name = os.path.basename(pcap)[:-len(".pcap")]
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", iface, "-n", "-s", "128", "--immediate-mode",
                                      "-B", "16384", "-w", pcap], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()  # "tcpdump: listening on IFACE ..." once it captures
        if "listening on" not in line:
            self.proc.kill()
            raise LabError("tcpdump on %s: %s" % (iface, line.strip()))

    def stop(self):
        time.sleep(0.1)  # the last frames reach the socket
        self.proc.send_signal(signal.SIGINT)
        err = self.proc.communicate(timeout=30)[1]
        m = re.search(r"(\d+) packets? dropped by kernel", err)
        return {"pcap": self.pcap, "kernel_dropped": int(m.group(1)) if m else None}


def pcap_frames(path):
    """The frames of a pcap file (libpcap format, as tcpdump -w writes it)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    frames, off = [], 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack_from(endian + "IIII", data, off)
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def remove(name, namespaces=None):
    """Removes a lab's namespaces (all NAME-* ones when none are listed), killing what runs in them."""
    if namespaces is None:
        listed = sh("ip", "netns", "list", check=False).stdout.split("\n")
        namespaces = [l.split()[0] for l in listed if l.split() and l.split()[0].startswith(name + "-")]
    for ns in reversed(namespaces):
        pids = sh("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        sh("ip", "netns", "del", ns, check=False)


def read_counters(name):
    """Per link NODE-PEER: the kernel's tx/rx packet and byte counters of device PEER in NODE's namespace."""
    out = {}
    listed = sh("ip", "netns", "list").stdout.split("\n")
    for l in listed:
        ns = l.split()[0] if l.split() else ""
        if not ns.startswith(name + "-") or ns == name + "-tester" or "-stage" in ns:
            continue
        node = ns[len(name) + 1:]
        for d in json.loads(sh("ip", "-j", "-s", "link", "show", ns=ns).stdout):
            if d["ifname"] == "lo":
                continue
            st = d["stats64"]
            out["%s-%s" % (node, d["ifname"])] = {
                "tx_packets": st["tx"]["packets"], "tx_bytes": st["tx"]["bytes"],
                "tx_dropped": st["tx"]["dropped"], "rx_packets": st["rx"]["packets"],
                "rx_bytes": st["rx"]["bytes"]}
    return out


# ---------------------------------------------------------------- link flaps
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 1, 4, 0x100, 0x400
RTM_NEWLINK, RTM_NEWROUTE, NLMSG_ERROR = 16, 24, 2


def _rta(kind, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, kind) + payload + b"\0" * ((4 - n % 4) % 4)


class Netlink:
    """Just enough rtnetlink to take a link down and up and put its routes back,
    each acknowledged, so the times around them bound the outage to microseconds."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        self.seq = 0

    def request(self, kind, flags, body):
        self.seq += 1
        self.sock.send(struct.pack("=LHHLL", 16 + len(body), kind, NLM_F_REQUEST | NLM_F_ACK | flags, self.seq, 0)
                       + body)
        data = self.sock.recv(65536)
        _, t, _, _, _ = struct.unpack_from("=LHHLL", data)
        err = struct.unpack_from("=i", data, 16)[0] if t == NLMSG_ERROR else 0
        if err:
            raise OSError(-err, os.strerror(-err))

    def set_up(self, ifindex, up):
        self.request(RTM_NEWLINK, 0, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, ifindex, 1 if up else 0, 1))

    def add_route(self, prefix, hops):
        net = ipaddress.ip_network(prefix)
        fam = socket.AF_INET if net.version == 4 else socket.AF_INET6
        scope = 253 if len(hops) == 1 and hops[0][0] is None else 0  # link : universe
        body = struct.pack("=BBBBBBBBI", fam, net.prefixlen, 0, 0, 254, 3, scope, 1, 0)
        body += _rta(1, net.network_address.packed)
        if len(hops) == 1:
            gw, dev = hops[0]
            body += _rta(4, struct.pack("=i", socket.if_nametoindex(dev)))
            if gw:
                body += _rta(5, ipaddress.ip_address(gw).packed)
        else:
            mp = b""
            for gw, dev in hops:
                attr = _rta(5, ipaddress.ip_address(gw).packed)
                mp += struct.pack("=HBBi", 8 + len(attr), 0, 0, socket.if_nametoindex(dev)) + attr
            body += _rta(9, mp)
        self.request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, body)


def flap(arg):
    a = json.loads(arg)
    nl = Netlink()
    index = socket.if_nametoindex(a["dev"])
    while time.monotonic_ns() < a["at_mono_ns"]:
        time.sleep(min(0.01, max(0, (a["at_mono_ns"] - time.monotonic_ns()) / 1e9)))
    t0 = time.monotonic_ns()
    nl.set_up(index, False)
    t1 = time.monotonic_ns()
    time.sleep(max(0, a["for_ns"] - (time.monotonic_ns() - t1)) / 1e9)
    t2 = time.monotonic_ns()
    nl.set_up(index, True)
    for prefix, hops in a["routes"]:  # IPv4 and IPv6 drop the device's routes when it goes down
        nl.add_route(prefix, hops)
    t3 = time.monotonic_ns()
    # The link was down from some time in [t0, t1] to some time in [t2, t3].
    print(json.dumps({"down_mono_ns": t0, "down_ns": t3 - t0, "down_ns_min": t2 - t1,
                      "down_uncertainty_ns": (t1 - t0) + (t3 - t2)}))


# ---------------------------------------------------------------- command line
def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd, args = argv[1], argv[2:]
    if cmd == "_flap":
        flap(args[0])
        return 0
    opts, rest, command = {}, [], None
    i = 0
    while i < len(args):
        if args[i] == "--":
            command = args[i + 1:]
            break
        if args[i] in ("--name", "--truth"):
            if i + 1 >= len(args):
                raise LabError("%s needs a value" % args[i])
            opts[args[i]] = args[i + 1]
            i += 2
            continue
        rest.append(args[i])
        i += 1
    if cmd == "counters":
        name = opts.get("--name") or os.environ.get("FABRICGEN_LAB")
        if not name:
            raise LabError("counters: no --name and no $FABRICGEN_LAB")
        print(json.dumps(read_counters(name), indent=1, sort_keys=True))
        return 0
    if cmd == "down" and "--name" in opts:
        remove(opts["--name"])
        return 0
    if len(rest) != 1:
        raise LabError("%s needs one PLAN (see --help)" % cmd)
    spec = LabSpec.load(rest[0])
    if cmd == "show":
        lab = Lab(spec, "NAME")
        print("nodes: tester, %s" % ", ".join(spec.node_names()))
        print("links: %s" % ", ".join(spec.link_names()))
        for h in spec.hosts:
            print("host %s (iface %s) on leaf%d: %s" % (h.port, h.iface, h.leaf, ", ".join(map(str, h.prefixes))))
        for imp in spec.impairments:
            print("impairment %d on %s: %s %s" % (imp.index, imp.link, imp.kind, imp.params))
        return 0
    if cmd == "up":
        lab = Lab(spec, opts.get("--name"))
        lab.__enter__()
        print(lab.name)
        return 0
    if cmd == "down":
        raise LabError("down needs --name NAME (the name `up` printed)")
    if cmd == "run":
        fabricgen = shutil.which("fabricgen") or os.path.join(HERE, "..", "build", "app", "fabricgen")
        command = command or [os.path.abspath(fabricgen), "run", rest[0]]
        workdir = os.path.dirname(os.path.abspath(opts["--truth"])) if "--truth" in opts else None
        with Lab(spec, opts.get("--name"), workdir) as lab:
            result, truth = lab.run(command)
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
            logs = lab.stop_stages()
            for t in truth["impairments"]:
                if t["index"] in logs:
                    t["log"] = logs[t["index"]]
            path = opts.get("--truth") or os.path.join(lab.workdir, "truth.json")
            with open(path, "w") as f:
                f.write(json.dumps(truth, indent=1) + "\n")
            sys.stderr.write("lab %s: truths in %s\n" % (lab.name, path))
        return result.returncode
    raise LabError("unknown command '%s' (see --help)" % cmd)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except LabError as e:
        sys.stderr.write("lab.py: %s\n" % e)
        sys.exit(2)
