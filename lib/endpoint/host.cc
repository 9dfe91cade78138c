#include "endpoint/host.h"

#include "config/plan.h"

namespace fg::endpoint {

namespace {

// Flow i of a stream that varies an address takes the address + i (IPv4: the
// whole address, IPv6: its last 32 bits; both wrap), as stream::Program does.
Ipv4Addr Nth(Ipv4Addr a, uint32_t i) { return Ipv4Addr{a.value + i}; }
Ipv6Addr Nth(const Ipv6Addr& a, uint32_t i) { return IpPlus(IpAddr{.ipv6 = true, .v4 = {}, .v6 = a}, i).v6; }

// `note_first`: the port's first host of the family may be this one (a source:
// its gateway is resolved from it).
template <class Addr>
void AddFlows(PortHosts& h, const Addr& first, bool varies, uint32_t flows, const MacAddr& mac, bool note_first) {
  if (note_first) h.NoteFirst(first, mac);
  const uint32_t n = varies ? flows : 1;
  for (uint32_t i = 0; i < n; ++i) h.Add(Nth(first, i), mac);
}

// Frames that carry no IP (PAUSE, PFC, LBN) give no host.
bool HasIp(config::FrameKind k) {
  return k != config::FrameKind::kPfc && k != config::FrameKind::kPause && k != config::FrameKind::kLbn;
}

}  // namespace

std::vector<PortHosts> HostsOfPlan(const config::Plan& plan) {
  std::vector<PortHosts> hosts(plan.ports.size());
  for (const config::StreamSpec& s : plan.streams) {
    const config::FrameSpec& f = s.frame;
    if (!HasIp(f.kind)) continue;
    const proto::L3Spec& l3 = f.encap.l3;
    if (s.port < hosts.size()) {
      if (l3.ipv6) {
        AddFlows(hosts[s.port], l3.src6, f.vary_src_ip, s.flows, f.encap.src_mac, /*note_first=*/true);
      } else {
        AddFlows(hosts[s.port], l3.src4, f.vary_src_ip, s.flows, f.encap.src_mac, /*note_first=*/true);
      }
    }
    // The stream's destination is a host of its RX port: a responding port's
    // answers come from it with the stream's destination MAC; another port
    // that receives the stream answers for it with its own MAC (so a routed
    // switch resolves where to deliver the stream). A stream received on its
    // own TX port goes to a peer: its destination is the peer's, not a host.
    const bool responds = s.rx_port < hosts.size() && plan.ports[s.rx_port].respond.has_value();
    if (s.rx_port < hosts.size() && (responds || s.rx_port != s.port)) {
      // A responding port sends from them (its answers): its gateway may be
      // asked from them.
      const MacAddr mac = responds ? f.encap.dst_mac : kPortMac;
      if (l3.ipv6) {
        AddFlows(hosts[s.rx_port], l3.dst6, f.vary_dst_ip, s.flows, mac, /*note_first=*/responds);
      } else {
        AddFlows(hosts[s.rx_port], l3.dst4, f.vary_dst_ip, s.flows, mac, /*note_first=*/responds);
      }
    }
  }
  // Every rank is a host of its port, with its own MAC (config/ranks.h).
  if (plan.ranks) {
    for (const config::Rank& r : config::PlaceRanks(*plan.ranks)) {
      if (r.port >= hosts.size()) continue;
      if (r.ip.ipv6) {
        AddFlows(hosts[r.port], r.ip.v6, false, 1, r.mac, /*note_first=*/true);
      } else {
        AddFlows(hosts[r.port], r.ip.v4, false, 1, r.mac, /*note_first=*/true);
      }
    }
  }
  return hosts;
}

}  // namespace fg::endpoint
