"""The plan's `lab:` section, validated: errors name file:line:column and field."""
import ipaddress
import re

import yaml

INNER4 = ipaddress.ip_network("198.19.128.0/17")
INNER6 = ipaddress.ip_network("2001:db8:ffff::/48")
ALLOWED = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("2001:db8::/32")]
UDP_MATCH = "meta l4proto udp"


class LabError(Exception):
    pass


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
            psn = "%s udp dport 4791 @th,136,24 & 0x%06x == 0x%06x" % (sel, p["mask"], p["value"])
            if p["once"]:
                # The first copy of each (QP, PSN) only: its key (BTH bytes
                # 4..7, the destination QP, and the PSN) goes into the set
                # `dropN` as it is dropped; a resend finds it there and passes.
                key = "@th,96,32 . @th,136,24"
                return "%s %s != @%s add @%s { %s } counter drop %s" % (psn, key, self.set_name(), self.set_name(),
                                                                         key, tag)
            return "%s counter drop %s" % (psn, tag)
        if self.kind == "ecn_ce":
            mark = "ip ecn set ce" if p["family"] == 4 else "ip6 ecn set ce"
            fam = "meta nfproto ipv4" if p["family"] == 4 else "meta nfproto ipv6"
            return "%s %s %s counter %s %s" % (fam, sel, per_million(p["ratio"]), mark, tag)
        if self.kind == "police":
            return "%s limit rate over %d/second burst %d packets counter drop %s" % (
                sel, p["pps"], p["burst"], tag)
        return None

    def set_name(self):
        return "drop%d" % self.index

    def nft_set(self):
        """The set a rule fills (drop_psn once: the (QP, PSN) keys dropped), or None."""
        if self.kind == "drop_psn" and self.params["once"]:
            return "typeof @th,96,32 . @th,136,24; flags dynamic; size 1048576;"
        return None

    def dup_rule(self):
        # nft_dup_ipv4/6: a copy of the packet sent through the egress device.
        # IPv4: to any address (the lab's links resolve no neighbours, and an
        # IPv4 route with an output device falls back to on-link). IPv6 needs a
        # route via that device: the packet's own destination has one.
        tag = 'comment "imp%d"' % self.index
        sel = "%s %s" % (UDP_MATCH, self.match) if self.match else UDP_MATCH
        to = "198.18.0.1" if self.params["family"] == 4 else "ip6 daddr"
        return "%s numgen random mod 1000000 < %d counter dup to %s device \"%s\" %s" % (
            sel, round(self.params["ratio"] * 1e6), to, self.peer, tag)


class Host:
    def __init__(self, port, iface, leaf, prefixes):
        self.port, self.iface, self.leaf, self.prefixes = port, iface, leaf, prefixes

    def gateways(self):
        """With `resolve: true`, the leaf's address in each prefix (the last but one: a port's gateway)."""
        return [(p[-2], p.prefixlen) for p in self.prefixes]


class LabSpec:
    """The plan's `lab:` section, validated."""

    def __init__(self):
        self.spines, self.leaves, self.hosts, self.impairments = 2, 2, [], []
        self.gateway_mac = "02:00:00:00:00:02"
        self.resolve = False
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
        f = n.keys(["spines", "leaves", "ipv6", "gateway_mac", "resolve", "hosts", "impairments"])
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
        if "resolve" in f:
            s.resolve = f["resolve"].bool()
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
                if s.resolve and net.num_addresses < 4:
                    raise p.error("with `resolve: true` the leaf takes an address of each prefix: %s has no room "
                                  "(at most /%d)" % (net, net.max_prefixlen - 2))
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
        # A stage may also take a tester port's egress (PORT-leafN): its PFC then reaches that port.
        names = self.link_names() + (self.port_link_names() if "stage" in f else [])
        if len(parts) != 2 or link not in names:
            raise f["link"].error("'%s' is not a link of this lab (links: %s)" % (link, ", ".join(names)))
        given = [k for k in kinds if k in f]
        if len(given) != 1:
            raise n.error("an impairment has exactly one kind of: %s" % ", ".join(kinds))
        kind, v = given[0], f[given[0]]
        match = f["match"].scalar() if "match" in f else None
        if kind == "loss":
            params = v.ratio()
        elif kind == "duplicate":
            params = {"ratio": v.ratio(), "family": self._family(f)}
            # The rule lives in an ip (or ip6) table: a match on the other
            # family's header is an nft error, refused here with its place.
            other = r"\bip6\b" if params["family"] == 4 else r"\bip\b"
            if match is not None and re.search(other, match):
                raise f["match"].error("'%s' matches %s headers but this duplicate is IPv%d (add `family: %d`)" % (
                    match, "IPv6" if params["family"] == 4 else "IPv4", params["family"],
                    6 if params["family"] == 4 else 4))
        elif kind == "drop_psn":
            g = v.keys(["mask", "value", "once"])
            for k in ("mask", "value"):
                if k not in g:
                    raise v.error("missing field '%s'" % k)
            params = {"mask": g["mask"].int(1, 0xFFFFFF), "value": g["value"].int(0, 0xFFFFFF),
                      "once": g["once"].bool() if "once" in g else False}
            if params["value"] & ~params["mask"]:
                raise g["value"].error("has bits outside the mask")
        elif kind == "ecn_ce":
            params = {"ratio": v.ratio(), "family": self._family(f)}
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
            g = v.keys(["delay", "jitter", "reorder", "extent", "seed", "rate", "limit", "ecn", "rcvbuf", "pfc"])
            params = {"delay_ns": g["delay"].duration_ns() if "delay" in g else 0,
                      "jitter_ns": g["jitter"].duration_ns() if "jitter" in g else 0,
                      "reorder": g["reorder"].ratio() if "reorder" in g else 0.0,
                      "extent": g["extent"].int(1, 1000) if "extent" in g else 1,
                      "seed": g["seed"].int(0, (1 << 53) - 1) if "seed" in g else 1,
                      "rate_bps": g["rate"].bit_rate() if "rate" in g else 0,
                      "limit": g["limit"].size_bytes() if "limit" in g else 1 << 20,
                      # the stage's packet sockets' receive buffer (a test makes it too small on purpose)
                      "rcvbuf": g["rcvbuf"].size_bytes() if "rcvbuf" in g else 0}
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
            if "pfc" in g:
                pf = g["pfc"].keys(["xoff", "xon", "priority", "quanta", "xon_frames", "speed"])
                for k in ("xoff", "xon", "priority"):
                    if k not in pf:
                        raise g["pfc"].error("missing field '%s' (a lossless queue: xoff, xon, priority)" % k)
                params.update(pfc_xoff=pf["xoff"].size_bytes(), pfc_xon=pf["xon"].size_bytes(),
                              pfc_priority=pf["priority"].int(0, 7),
                              pfc_quanta=pf["quanta"].int(1, 65535) if "quanta" in pf else 65535,
                              pfc_xon_frames=pf["xon_frames"].bool() if "xon_frames" in pf else True,
                              pfc_speed=pf["speed"].bit_rate() if "speed" in pf else 0)
                if "rate" not in g:
                    raise g["pfc"].error("a lossless queue needs the queue's `rate`")
                if params["pfc_xon"] >= params["pfc_xoff"]:
                    raise pf["xon"].error("xon must be below xoff")
                if params["pfc_xoff"] >= params["limit"]:
                    raise pf["xoff"].error("xoff must be below the queue's limit (%d B)" % params["limit"])
        if match is not None and kind in ("shape", "down", "stage"):
            raise f["match"].error("`match` selects frames for nftables impairments only")
        return Impairment(i, link, parts[0], parts[1], kind, params, match, n)

    def _family(self, f):
        """`family: 4|6` of an impairment (4 when absent); 6 needs the lab's IPv6."""
        if "family" not in f:
            return 4
        family = f["family"].int(4, 6)
        if family not in (4, 6):
            raise f["family"].error("4 or 6")
        if family == 6 and not self.ipv6:
            raise f["family"].error("IPv6 impairments need `ipv6: true`")
        return family

    def node_names(self):
        return ["leaf%d" % i for i in range(self.leaves)] + ["spine%d" % i for i in range(self.spines)]

    def port_link_names(self):
        """The tester ports' egress links (PORT-leafN): a stage's place only."""
        return ["%s-leaf%d" % (h.port, h.leaf) for h in self.hosts]

    def link_names(self):
        out = []
        for l in range(self.leaves):
            for s in range(self.spines):
                out += ["leaf%d-spine%d" % (l, s), "spine%d-leaf%d" % (s, l)]
        for h in self.hosts:
            out.append("leaf%d-%s" % (h.leaf, h.port))
        return out
