"""The fabric in network namespaces: build, impair, run a command, read the truths, remove."""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from .spec import INNER4, INNER6, LabError
from .stalls import CpuStallWatch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tools/: lab.py, and ../build


def sh(*cmd, ns=None, check=True, stdin=None):
    full = (["ip", "netns", "exec", ns] if ns else []) + [str(c) for c in cmd]
    r = subprocess.run(full, capture_output=True, text=True, input=stdin)
    if check and r.returncode != 0:
        raise LabError("%s: %s" % (" ".join(full), (r.stderr or r.stdout).strip()))
    return r


_count = 0


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def nft_tables(ipv6):
    """The tables a router's nftables impairments go in: inet for most, ip (and ip6) for `dup to`."""
    chain = " chain forward {\n  type filter hook forward priority %d; policy accept;\n }\n"
    text = "table inet fglab {\n%s}\ntable ip fglabdup {\n%s}\n" % (chain % 0, chain % 1)
    if ipv6:
        text += "table ip6 fglabdup6 {\n%s}\n" % (chain % 1)
    return text


def cpu_list_mask(text):
    """A CPU list ("0", "0-3,8") as an integer mask."""
    mask = 0
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        for c in range(int(a), int(b or a) + 1):
            mask |= 1 << c
    return mask


def housekeeping_mask():
    try:
        with open("/sys/devices/virtual/workqueue/cpumask") as f:
            wq = int(f.read().strip().replace(",", ""), 16)
        with open("/sys/devices/system/cpu/online") as f:
            online = cpu_list_mask(f.read())
    except (OSError, ValueError):
        return None
    wq &= online
    if wq == 0 or wq == online:
        return None
    # As the kernel writes and reads CPU masks: 32-bit groups of 8 hex digits, comma-separated, highest first.
    groups = []
    while True:
        groups.append("%08x" % (wq & 0xFFFFFFFF))
        wq >>= 32
        if wq == 0:
            break
    return ",".join(reversed(groups))


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
        self.nft_sets = {}  # impairment index -> (namespace, nft set its rule fills)
        self.workdir = workdir  # the stages' decision logs go here

    def ns(self, node):
        return "%s-%s" % (self.name, node)

    @property
    def tester(self):
        return self.ns("tester")

    def __enter__(self):
        # A test runner's timeout (SIGTERM) must still remove the lab: turn it
        # into an exception that unwinds through __exit__.
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            try:
                signal.signal(signal.SIGTERM, _terminate)
            except ValueError:
                pass  # not the main thread: the caller handles signals
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
            # tester's end (fabricgen's af_packet port) keeps its own. With
            # `resolve`, the leaf's end runs ARP/ND with an address in each of
            # the host's prefixes, as a routed switch's port does.
            self._link(leaf, h.port, "tester", h.iface, s.gateway_mac, None, peer_node=h.port, arp=s.resolve)
            if s.resolve:
                for gw, plen in h.gateways():
                    sh("ip", "addr", "add", "%s/%d" % (gw, plen), "dev", h.port,
                       *(["nodad"] if gw.version == 6 else []), ns=self.ns(leaf))
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
                        "net.ipv4.icmp_ratelimit=0",
                        # A frame routed back out the link it came in on (two ranks
                        # behind one tester port) is forwarded, with no ICMP redirect
                        # to its sender, as a switch does.
                        "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.default.send_redirects=0"]
            if self.spec.ipv6:
                # keep_addr_on_down: a link that goes down and up (`down`) keeps its IPv6 addresses, as IPv4 does.
                sysctls += ["net.ipv6.conf.all.forwarding=1", "net.ipv6.fib_multipath_hash_policy=1",
                            "net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1"]
        sh("sysctl", "-qw", *sysctls, ns=ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)

    def _link(self, a, dev_a, b, dev_b, mac_a, mac_b, peer_node=None, arp=False):
        """Link a-b: device dev_a in a's namespace, dev_b in b's (through a stage when one is planned);
        a MAC of None keeps the device's own, a given one comes with ARP/ND off unless `arp`. peer_node names b
        in link names (a tester port)."""
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
            sh("ip", "link", "set", "dev", dev, *((["address", mac] + ([] if arp else ["arp", "off"])) if mac else []),
               "up", ns=self.ns(node))
            # Not a stage's link: the stage process forwards it, and what it sends is best taken in on its own
            # CPU, in its sendto (steered to CPU 0, where the stage often runs too, it waited behind the
            # stage's own polling: StageTest's jitter went from +0.4 % to +84 % in one CI run).
            if not stages:
                self._steer(self.ns(node), dev)
        self.link_ends["%s-%s" % (a, b_name)] = (self.ns(a), dev_a)
        if not peer_node:
            self.link_ends["%s-%s" % (b, a)] = (self.ns(b), dev_b)

    def _steer(self, ns, dev):
        """The lab's own packet work (a frame's receipt by every veth, the routers' forwarding, tbf and htb) to
        the housekeeping CPUs: RPS on the device's receive queues. A veth hands a frame it sends to its peer
        through netif_rx, on the sender's CPU unless RPS names others; without this, frames fabricgen's worker
        lcore sends are forwarded by the kernel on the worker's own CPU (softirq, or ksoftirqd when busy), and
        the worker, held up, falls behind its set rate (pacing_stall), though no tester would carry a lab."""
        if self.rps_mask:
            # Best effort: a kernel without RPS has no rps_cpus (then the lab's work stays where it was).
            r = sh("sh", "-c", "for q in /sys/class/net/%s/queues/rx-*/rps_cpus; do echo %s > $q || exit 1; done"
                   % (dev, self.rps_mask), ns=ns, check=False)
            if r.returncode != 0 and not getattr(self, "_rps_warned", False):
                self._rps_warned = True
                sys.stderr.write("lab: could not steer %s's receive work to CPUs %s (RPS): %s\n"
                                 % (dev, self.rps_mask, (r.stderr or r.stdout).strip()))

    @property
    def rps_mask(self):
        """The housekeeping CPUs as a hex mask: the unbound workqueues' CPUs (tools/isolate_cpus.sh sets them),
        or None when that is every online CPU (no isolation: nothing to steer to) or unreadable."""
        if not hasattr(self, "_rps_mask"):
            self._rps_mask = housekeeping_mask()
        return self._rps_mask

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
        ns, dev = self.link_ends.get(imp.link, (None, None))  # (a stage on a port's egress has no router end)
        if imp.kind == "shape":
            p = imp.params
            if p["qdisc"] == "tbf":
                sh("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", "%dbit" % p["rate_bps"],
                   "burst", p["burst"], "limit", p["limit"], ns=ns)
            else:
                sh("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1", ns=ns)
                sh("tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
                   "rate", "%dbit" % p["rate_bps"], "ceil", "%dbit" % p["rate_bps"], "burst", p["burst"],
                   "cburst", p["burst"], ns=ns)  # both buckets: a class sends only while each has tokens
                sh("tc", "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", "bfifo", "limit", p["limit"],
                   ns=ns)
        elif imp.kind == "stage":
            log = os.path.join(self.workdir, "stage%d.log" % imp.index)
            p = imp.params
            cmd = [self.impair_binary(), "--in", "in", "--out", "out", "--log", log,
                   "--delay-ns", p["delay_ns"], "--jitter-ns", p["jitter_ns"], "--reorder", p["reorder"],
                   "--extent", p["extent"], "--seed", p["seed"]]
            if p.get("rcvbuf"):
                cmd += ["--rcvbuf", p["rcvbuf"]]
            if p["rate_bps"]:
                cmd += ["--rate-bps", p["rate_bps"], "--limit-bytes", p["limit"]]
            if "kmax" in p:
                cmd += ["--ecn-kmin", p["kmin"], "--ecn-kmax", p["kmax"], "--ecn-pmax", p["pmax"]]
            if "pfc_priority" in p:
                cmd += ["--pfc-priority", p["pfc_priority"], "--pfc-xoff", p["pfc_xoff"], "--pfc-xon", p["pfc_xon"],
                        "--pfc-quanta", p["pfc_quanta"], "--pfc-xon-frames", int(p["pfc_xon_frames"])]
                if p["pfc_speed"]:
                    cmd += ["--pfc-speed-bps", p["pfc_speed"]]
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
            sh("nft", "-f", "-", ns=ns, stdin=nft_tables(self.spec.ipv6))
            self._tables.add(ns)
        if imp.kind == "duplicate":
            # `dup to` exists in the ip and ip6 families only (not inet).
            family, table = ("ip", "fglabdup") if imp.params["family"] == 4 else ("ip6", "fglabdup6")
            sh("nft", "add", "rule", family, table, "forward", 'oifname "%s" %s' % (imp.peer, imp.dup_rule()), ns=ns)
        else:
            if imp.nft_set():
                sh("nft", "add set inet fglab %s { %s }" % (imp.set_name(), imp.nft_set()), ns=ns)
                self.nft_sets[imp.index] = (ns, imp.set_name())
            sh("nft", "add", "rule", "inet", "fglab", "forward", 'oifname "%s" %s' % (imp.peer, imp.nft_rule()), ns=ns)

    @staticmethod
    def impair_binary():
        """$FABRICGEN_IMPAIR (the lab suite sets it to the binary meson built), else build/ in the tree, else PATH."""
        given = os.environ.get("FABRICGEN_IMPAIR")
        if given:
            if not os.access(given, os.X_OK):
                raise LabError("FABRICGEN_IMPAIR=%s is not an executable (build fabricgen-impair)" % given)
            return os.path.abspath(given)
        for c in (os.path.join(TOOLS, "..", "build", "app", "fabricgen-impair"), shutil.which("fabricgen-impair")):
            if c and os.access(c, os.X_OK):
                return os.path.abspath(c)
        raise LabError("fabricgen-impair not found (build it, or set FABRICGEN_IMPAIR)")

    def down(self):
        self.stop_stages()
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

    def nft_set_elements(self, index):
        """The elements of impairment `index`'s set, each a list of its key's fields (integers)."""
        ns, name = self.nft_sets[index]
        r = json.loads(sh("nft", "-j", "list", "set", "inet", "fglab", name, ns=ns).stdout)
        s = next(item["set"] for item in r["nftables"] if "set" in item)
        out = []
        for e in s.get("elem", []):
            v = e["elem"]["val"] if isinstance(e, dict) and "elem" in e else e
            out.append([int(x) for x in v["concat"]] if isinstance(v, dict) else [int(v)])
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
        tcpdump's kernel buffer dropped; truth["cpu_stalls"] the times a CPU
        of the host stood still meanwhile (fglab/stalls.py: the lab's links
        stood still with it)."""
        # (node, device) or (node, device, snaplen): 128 bytes of each frame unless asked.
        dumps = [Capture(self.ns(c[0]), c[1], os.path.join(self.workdir, "%s-%s.pcap" % (c[0], c[1])), *c[2:])
                 for c in captures]
        env = dict(os.environ if env is None else env)
        env["FABRICGEN_LAB"] = self.name
        env["PATH"] = TOOLS + os.pathsep + env.get("PATH", "")
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
                                                     os.path.join(TOOLS, "lab.py"), "_flap", arg],
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        watch = CpuStallWatch()
        try:
            with watch:
                result = subprocess.run(["ip", "netns", "exec", self.tester] + list(command), env=env,
                                        capture_output=True, text=True, timeout=timeout)
        finally:
            for _, p in flaps:
                try:
                    p.wait(max(1, timeout))
                except subprocess.TimeoutExpired:
                    p.kill()
        after = self.counters()
        truth = {"lab": self.name, "impairments": [], "captures": {c.name: c.stop() for c in dumps},
                 "cpu_stalls": watch.stalls, "cpu_stall_watch_errors": watch.errors}
        nft = self.nft_counters()
        flap_out = {imp.index: p for imp, p in flaps}
        stage_logs = {imp.index: log for imp, _, log in self.stages}
        for imp in self.spec.impairments:
            t = {"index": imp.index, "link": imp.link, "kind": imp.kind}
            if imp.index in nft:
                t["counter"] = nft[imp.index]
            if imp.index in self.nft_sets:
                t["dropped_keys"] = self.nft_set_elements(imp.index)  # drop_psn once: [BTH bytes 4..7, PSN]
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
                if "pfc_priority" in imp.params:
                    t["pfc_log"] = stage_logs[imp.index] + ".pfc.csv"  # every PFC frame the stage sent or got
            truth["impairments"].append(t)
        truth["links"] = {k: {c: after[k][c] - before[k][c] for c in after[k]} for k in after if k in before}
        if self.spec.resolve:
            # What each leaf learned of its hosts (`resolve`): its neighbour table on the link to each.
            truth["neighbors"] = {"leaf%d-%s" % (h.leaf, h.port): json.loads(
                sh("ip", "-j", "neigh", "show", "dev", h.port, ns=self.ns("leaf%d" % h.leaf)).stdout or "[]")
                for h in self.spec.hosts}
        return result, truth

    def stop_stages(self, truth=None):
        """Stops the stages so their logs are complete; returns the logs' paths. With the `truth` of run(), adds
        each stage's summary (`log_summary`: its own receive drops) to its impairment and `gaps` (truth_gaps) to
        the truth."""
        for imp, proc, log in self.stages:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        if truth is not None:
            for t in truth["impairments"]:
                if "log" in t:
                    try:
                        with open(t["log"] + ".summary.json") as f:
                            t["log_summary"] = json.load(f)
                    except (OSError, ValueError):
                        t["log_summary"] = None
            truth["gaps"] = truth_gaps(truth)
        return {imp.index: log for imp, _, log in self.stages}


def truth_gaps(truth):
    """What the lab's truths missed, one line per truth source that lost frames (empty: every truth is complete).
    A stage's log misses the frames its packet sockets or veths dropped (its summary counts them) and those the
    veth feeding it could not hand over (that device's tx_dropped over the run); a tcpdump capture misses what
    its kernel buffer dropped. A test judges nothing on an incomplete truth: it runs again, and fails naming the
    truth source, never the product, when no run had a complete one."""
    gaps = []
    for t in truth.get("impairments", []):
        if "log" not in t:
            continue
        s = t.get("log_summary")
        if s is None:
            gaps.append("impairment stage on %s: no summary of its log (it did not stop cleanly)" % t["link"])
            continue
        lost = sum(s["socket_drops"].values()) + sum(s["rx_dropped"].values())
        if lost:
            gaps.append("impairment stage on %s: its log misses %d frames (packet socket drops in %d, out %d; veth "
                        "rx_dropped in %d, out %d)" % (t["link"], lost, s["socket_drops"]["in"],
                                                       s["socket_drops"]["out"], s["rx_dropped"]["in"],
                                                       s["rx_dropped"]["out"]))
        feed = truth.get("links", {}).get(t["link"], {}).get("tx_dropped", 0)
        if feed:
            gaps.append("impairment stage on %s: the veth feeding it dropped %d frames (tx_dropped)" % (t["link"], feed))
    gaps.extend(truth.get("cpu_stall_watch_errors", []))
    for name, c in truth.get("captures", {}).items():
        if c.get("kernel_dropped") != 0:
            gaps.append("tcpdump capture %s: %s frames dropped by kernel" % (name, c.get("kernel_dropped", "unknown")))
    return gaps


class Capture:
    """tcpdump on one interface of a namespace, started before the traffic."""

    def __init__(self, ns, iface, pcap, snaplen=128):
        self.iface, self.pcap = iface, pcap
        self.name = os.path.basename(pcap)[:-len(".pcap")]
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", iface, "-n", "-s", str(snaplen),
                                      "--immediate-mode",
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
