"""Link down and up by rtnetlink, each acknowledged, with the routes the link lost put back."""
import ipaddress
import json
import os
import socket
import struct
import time


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
    real_minus_mono = time.time_ns() - time.monotonic_ns()
    # The link was down from some time in [t0, t1] to some time in [t2, t3]
    # (down_unix_ns: t0 in CLOCK_REALTIME, to set against the lab's CPU stops).
    print(json.dumps({"down_mono_ns": t0, "down_unix_ns": t0 + real_minus_mono, "down_ns": t3 - t0,
                      "down_ns_min": t2 - t1, "down_uncertainty_ns": (t1 - t0) + (t3 - t2)}))
