#include "config/ranks.h"

#include "proto/roce.h"

namespace fg::config {

MacAddr RankMac(uint32_t id) {
  return MacAddr{{0x02, 0xfa, 0x6e, 0x00, static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id)}};
}

std::vector<Rank> PlaceRanks(const RanksSpec& r) {
  const uint32_t np = static_cast<uint32_t>(r.ports.size());
  std::vector<Rank> ranks(r.count);
  std::vector<uint32_t> on_port(np, 0);
  // block: the first count % P ports take one more rank each.
  const uint32_t per = np == 0 ? 0 : r.count / np, extra = np == 0 ? 0 : r.count % np;
  uint32_t p = 0, left = per + (0 < extra ? 1 : 0);
  for (uint32_t i = 0; i < r.count; ++i) {
    uint32_t k;
    if (r.placement == RanksSpec::Placement::kRoundRobin) {
      k = i % np;
    } else {
      while (left == 0) {
        ++p;
        left = per + (p < extra ? 1 : 0);
      }
      --left;
      k = p;
    }
    Rank& x = ranks[i];
    x.id = i;
    x.port = r.ports[k];
    x.index_on_port = on_port[k]++;
    x.ip = IpPlus(r.first_address[k], x.index_on_port);
    x.mac = RankMac(i);
  }
  return ranks;
}

MacAddr RankNextHop(const RanksSpec& r, const Rank& from, const Rank& to) {
  return from.port < r.next_hop.size() && r.next_hop[from.port] ? *r.next_hop[from.port] : to.mac;
}

FrameSpec RankQpFrame(const RanksSpec& r, const Rank& from, const Rank& to) {
  FrameSpec f;
  f.kind = FrameKind::kRoce;
  f.roce.op = RoceSpec::Op::kWrite;
  f.roce.transport = proto::roce::Transport::kRc;
  f.roce.message = r.message;
  f.roce.pmtu = r.pmtu;
  f.roce.dcqcn = r.dcqcn;
  f.roce.go_back_n = r.go_back_n;
  f.roce.retransmit_timeout_ns = r.retransmit_timeout_ns;
  f.roce.connect_cm = r.connect_cm;
  f.entropy = r.entropy;
  f.encap.udp_dst = proto::roce::kUdpPort;
  f.encap.src_mac = from.mac;
  f.encap.dst_mac = RankNextHop(r, from, to);
  f.encap.l3.ipv6 = from.ip.ipv6;
  if (from.ip.ipv6) {
    f.encap.l3.src6 = from.ip.v6;
    f.encap.l3.dst6 = to.ip.v6;
  } else {
    f.encap.l3.src4 = from.ip.v4;
    f.encap.l3.dst4 = to.ip.v4;
  }
  return f;
}

}  // namespace fg::config
