"""Network-namespace labs for the lab suite (run as root).

Each Lab owns uniquely named namespaces and removes them on exit, even when a
test fails:

    with TbfPath(rate_bps=200e6) as lab:
        lab.run_fabricgen("run", plan, "--out", out)

TbfPath: the tester namespace holds veth ends ta (TX) and tb (RX); the DUT
namespace bridges their peers da and db and shapes db's egress (towards tb)
with tbf: a capacity of `rate_bps` counted on frames without FCS, with a
`burst` of tokens and a queue `limit` (bytes).
"""
import os
import subprocess


def sh(*cmd, ns=None, check=True):
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, capture_output=True, text=True)


class Lab:
    _count = 0

    def __init__(self):
        Lab._count += 1
        tag = "%d%d" % (os.getpid(), Lab._count)
        self.tester = "fgt" + tag
        self.dut = "fgd" + tag
        self.namespaces = []

    def __enter__(self):
        try:
            for ns in (self.tester, self.dut):
                sh("ip", "netns", "add", ns)
                self.namespaces.append(ns)
                sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", ns=ns)
            self.build()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in reversed(self.namespaces):
            sh("ip", "netns", "del", ns, check=False)
        self.namespaces = []
        return False

    def build(self):
        raise NotImplementedError

    def run_fabricgen(self, fabricgen, *args, timeout=600):
        return subprocess.run(["ip", "netns", "exec", self.tester, fabricgen, *args],
                              capture_output=True, text=True, timeout=timeout)


class TbfPath(Lab):
    def __init__(self, rate_bps, burst=16000, limit=16000):
        super().__init__()
        self.rate_bps = rate_bps
        self.burst = burst
        self.limit = limit

    def build(self):
        t, d = self.tester, self.dut
        sh("ip", "link", "add", "ta", "type", "veth", "peer", "name", "da", "netns", d, ns=t)
        sh("ip", "link", "add", "tb", "type", "veth", "peer", "name", "db", "netns", d, ns=t)
        sh("ip", "link", "add", "br0", "type", "bridge", ns=d)
        for dev in ("da", "db"):
            sh("ip", "link", "set", dev, "master", "br0", ns=d)
            sh("ip", "link", "set", dev, "up", ns=d)
        sh("ip", "link", "set", "br0", "up", ns=d)
        for dev in ("ta", "tb"):
            sh("ip", "link", "set", dev, "up", ns=t)
        sh("tc", "qdisc", "add", "dev", "db", "root", "tbf", "rate", "%dbit" % self.rate_bps,
           "burst", str(self.burst), "limit", str(self.limit), ns=d)

    def qdisc_stats(self):
        return sh("tc", "-s", "qdisc", "show", "dev", "db", ns=self.dut).stdout
