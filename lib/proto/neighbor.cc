#include "proto/neighbor.h"

#include <algorithm>
#include <cstring>

#include "proto/bytes.h"
#include "proto/checksum.h"

namespace fg::proto {

namespace {

using Kind = NeighborFrame::Kind;

constexpr uint8_t kIcmpEchoRequest = 8, kIcmpEchoReply = 0;
constexpr uint8_t kIcmp6EchoRequest = 128, kIcmp6EchoReply = 129;
constexpr uint8_t kNdSolicitation = 135, kNdAdvertisement = 136;
constexpr uint8_t kNdOptSourceLl = 1, kNdOptTargetLl = 2;
constexpr uint8_t kNdHopLimit = 255;
constexpr uint16_t kArpOpRequest = 1, kArpOpReply = 2;
constexpr uint8_t kIpProtoHopByHop = 0;

uint32_t Sum16(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += Load16(p + i);
  if (n & 1) s += uint32_t{p[n - 1]} << 8;
  return s;
}

// ICMPv6's checksum over the pseudo-header and the message (its checksum
// field included: 0 when verifying a good one, zeroed when writing).
uint16_t Icmp6Checksum(const Ipv6Addr& src, const Ipv6Addr& dst, const uint8_t* msg, size_t len) {
  uint32_t s = Sum16(src.bytes.data(), 16) + Sum16(dst.bytes.data(), 16);
  s += static_cast<uint32_t>(len >> 16) + static_cast<uint32_t>(len & 0xFFFF) + kIpProtoIcmpv6;
  return InternetChecksum(msg, len, s);
}

Ipv4Addr Ip4At(const uint8_t* p) { return Ipv4Addr{Load32(p)}; }
Ipv6Addr Ip6At(const uint8_t* p) {
  Ipv6Addr a;
  std::copy_n(p, 16, a.bytes.begin());
  return a;
}
MacAddr MacAt(const uint8_t* p) {
  MacAddr m;
  std::copy_n(p, 6, m.bytes.begin());
  return m;
}
bool Multicast6(const Ipv6Addr& a) { return a.bytes[0] == 0xFF; }
bool Unspecified6(const Ipv6Addr& a) {
  return std::all_of(a.bytes.begin(), a.bytes.end(), [](uint8_t b) { return b == 0; });
}

NeighborFrame ParseArp(std::span<const uint8_t> b, NeighborFrame f) {
  const size_t o = f.eth.header_len;
  if (b.size() < o + kArpLen) {
    f.kind = Kind::kInvalid;
    return f;
  }
  const uint8_t* a = b.data() + o;
  // Ethernet and IPv4 only (hardware type 1, protocol 0x0800, lengths 6 and 4).
  if (Load16(a) != 1 || Load16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4) {
    f.kind = Kind::kOther;
    return f;
  }
  const uint16_t op = Load16(a + 6);
  f.kind = op == kArpOpRequest ? Kind::kArpRequest : op == kArpOpReply ? Kind::kArpReply : Kind::kOther;
  f.lladdr = MacAt(a + 8);
  f.has_lladdr = true;
  f.src4 = Ip4At(a + 14);
  f.dst4 = Ip4At(a + 24);
  return f;
}

NeighborFrame ParseIcmp4(std::span<const uint8_t> b, NeighborFrame f) {
  const size_t o = f.eth.header_len;
  const std::optional<Ipv4> ip = ParseIpv4(b.subspan(o));
  if (!ip || ip->protocol != kIpProtoIcmp) return f;  // kNone: not ICMP
  const uint8_t* h = b.data() + o;
  if (o + ip->total_length > b.size() || InternetChecksum(h, ip->header_len) != 0) {
    f.kind = Kind::kInvalid;
    return f;
  }
  f.src4 = ip->src;
  f.dst4 = ip->dst;
  if (ip->mf || ip->fragment_offset != 0) {
    f.kind = Kind::kOther;  // a fragment: not answered
    return f;
  }
  f.icmp_offset = o + ip->header_len;
  f.icmp_len = ip->total_length - ip->header_len;
  if (f.icmp_len < 8 || InternetChecksum(b.data() + f.icmp_offset, f.icmp_len) != 0) {
    f.kind = Kind::kInvalid;
    return f;
  }
  const uint8_t* m = b.data() + f.icmp_offset;
  f.kind = m[0] == kIcmpEchoRequest && m[1] == 0 ? Kind::kEchoRequest : Kind::kOther;
  return f;
}

NeighborFrame ParseIcmp6(std::span<const uint8_t> b, NeighborFrame f) {
  const size_t o = f.eth.header_len;
  const std::optional<Ipv6> ip = ParseIpv6(b.subspan(o));
  if (!ip) return f;
  f.ipv6 = true;
  f.src6 = ip->src;
  f.dst6 = ip->dst;
  if (ip->next_header == kIpProtoHopByHop) {
    // Multicast listener messages come behind a hop-by-hop header: ICMPv6,
    // none of a host's business here.
    if (b.size() > o + kIpv6HeaderLen && b[o + kIpv6HeaderLen] == kIpProtoIcmpv6) f.kind = Kind::kOther;
    return f;
  }
  if (ip->next_header != kIpProtoIcmpv6) return f;
  f.icmp_offset = o + kIpv6HeaderLen;
  f.icmp_len = ip->payload_length;
  if (f.icmp_offset + f.icmp_len > b.size() || f.icmp_len < 8 ||
      Icmp6Checksum(ip->src, ip->dst, b.data() + f.icmp_offset, f.icmp_len) != 0) {
    f.kind = Kind::kInvalid;
    return f;
  }
  const uint8_t* m = b.data() + f.icmp_offset;
  if (m[0] == kIcmp6EchoRequest && m[1] == 0) {
    f.kind = Multicast6(ip->dst) ? Kind::kOther : Kind::kEchoRequest;
    return f;
  }
  if (m[0] != kNdSolicitation && m[0] != kNdAdvertisement) {
    f.kind = Kind::kOther;
    return f;
  }
  // RFC 4861 7.1.1 / 7.1.2: hop limit 255, code 0, 24 bytes or more.
  if (ip->hop_limit != kNdHopLimit || m[1] != 0 || f.icmp_len < 24) {
    f.kind = Kind::kInvalid;
    return f;
  }
  f.kind = m[0] == kNdSolicitation ? Kind::kNeighborSolicitation : Kind::kNeighborAdvertisement;
  f.target6 = Ip6At(m + 8);
  const uint8_t want = m[0] == kNdSolicitation ? kNdOptSourceLl : kNdOptTargetLl;
  for (size_t p = 24; p + 2 <= f.icmp_len;) {
    const size_t len = size_t{m[p + 1]} * 8;
    if (len == 0 || p + len > f.icmp_len) {
      f.kind = Kind::kInvalid;  // an option of length 0 (RFC 4861 4.6) or past the message
      return f;
    }
    if (m[p] == want && len >= 8) {
      f.lladdr = MacAt(m + p + 2);
      f.has_lladdr = true;
    }
    p += len;
  }
  return f;
}

// Ethernet back to the asker: its source, from `mac`, its tag kept.
size_t WriteEthBack(const NeighborFrame& req, const MacAddr& to, const MacAddr& mac, uint16_t type, uint8_t* out) {
  return WriteEthernet(out, Ethernet{.dst = to, .src = mac, .vlan = req.eth.vlan, .ethertype = type});
}

size_t Pad(uint8_t* out, size_t len, size_t cap) {
  if (len >= kEthMinFrameNoFcs) return len;
  if (cap < kEthMinFrameNoFcs) return 0;
  std::memset(out + len, 0, kEthMinFrameNoFcs - len);
  return kEthMinFrameNoFcs;
}

size_t HeaderRoom(const NeighborFrame& f) { return kEthHeaderLen + (f.eth.vlan ? kVlanTagLen : 0); }

void WriteIcmp6Header(uint8_t* p, const Ipv6Addr& src, const Ipv6Addr& dst, size_t len, uint8_t hop) {
  WriteIpv6(p, Ipv6{.payload_length = static_cast<uint16_t>(len), .next_header = kIpProtoIcmpv6, .hop_limit = hop,
                    .src = src, .dst = dst});
}

// An Ethernet/IPv4 ARP body (RFC 826): hardware type 1, protocol IPv4, 6 B
// and 4 B addresses, then the operation and the two (MAC, IPv4) pairs.
size_t WriteArpBody(uint8_t* a, uint16_t op, const MacAddr& sender_mac, Ipv4Addr sender, const MacAddr& target_mac,
                    Ipv4Addr target) {
  Store16(a, 1);
  Store16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  Store16(a + 6, op);
  std::copy(sender_mac.bytes.begin(), sender_mac.bytes.end(), a + 8);
  Store32(a + 14, sender.value);
  std::copy(target_mac.bytes.begin(), target_mac.bytes.end(), a + 18);
  Store32(a + 24, target.value);
  return kArpLen;
}

}  // namespace

NeighborFrame ParseNeighbor(std::span<const uint8_t> frame) {
  NeighborFrame f;
  const std::optional<Ethernet> eth = ParseEthernet(frame);
  if (!eth) return f;
  f.eth = *eth;
  switch (eth->ethertype) {
    case kEtherTypeArp:
      return ParseArp(frame, f);
    case kEtherTypeIpv4:
      return ParseIcmp4(frame, f);
    case kEtherTypeIpv6:
      return ParseIcmp6(frame, f);
    default:
      return f;
  }
}

size_t WriteArpReply(const NeighborFrame& req, const MacAddr& mac, uint8_t* out, size_t cap) {
  const size_t need = std::max(HeaderRoom(req) + kArpLen, kEthMinFrameNoFcs);
  if (cap < need) return 0;
  size_t n = WriteEthBack(req, req.lladdr, mac, kEtherTypeArp, out);
  // From the address asked for, to the asker.
  n += WriteArpBody(out + n, kArpOpReply, mac, req.dst4, req.lladdr, req.src4);
  return Pad(out, n, cap);
}

size_t WriteNeighborAdvertisement(const NeighborFrame& ns, const MacAddr& mac, uint8_t* out, size_t cap) {
  constexpr size_t kMsg = 32;  // 24 + a target link-layer address option
  const size_t l3 = HeaderRoom(ns);
  if (cap < l3 + kIpv6HeaderLen + kMsg) return 0;
  // RFC 4861 7.2.4: to the solicitation's source, solicited; to all nodes
  // (and unsolicited) when the source is unspecified (duplicate address detection).
  const bool dad = Unspecified6(ns.src6);
  Ipv6Addr dst = ns.src6;
  MacAddr to = ns.has_lladdr ? ns.lladdr : ns.eth.src;
  if (dad) {
    dst = Ipv6Addr{{0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
    to = MacAddr{{0x33, 0x33, 0, 0, 0, 1}};
  }
  WriteEthBack(ns, to, mac, kEtherTypeIpv6, out);
  WriteIcmp6Header(out + l3, ns.target6, dst, kMsg, kNdHopLimit);
  uint8_t* m = out + l3 + kIpv6HeaderLen;
  std::memset(m, 0, kMsg);
  m[0] = kNdAdvertisement;
  m[4] = dad ? 0x20 : 0x60;  // S (solicited) unless for DAD, O (override)
  std::copy(ns.target6.bytes.begin(), ns.target6.bytes.end(), m + 8);
  m[24] = kNdOptTargetLl;
  m[25] = 1;
  std::copy(mac.bytes.begin(), mac.bytes.end(), m + 26);
  Store16(m + 2, Icmp6Checksum(ns.target6, dst, m, kMsg));
  return l3 + kIpv6HeaderLen + kMsg;
}

size_t WriteEchoReply(std::span<const uint8_t> request, const NeighborFrame& f, const MacAddr& mac, uint8_t* out,
                      size_t cap) {
  const size_t l3 = HeaderRoom(f);
  const size_t ip_len = f.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen;
  if (cap < std::max(l3 + ip_len + f.icmp_len, kEthMinFrameNoFcs)) return 0;
  WriteEthBack(f, f.eth.src, mac, f.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4, out);
  uint8_t* m = out + l3 + ip_len;
  std::memcpy(m, request.data() + f.icmp_offset, f.icmp_len);
  Store16(m + 2, 0);
  if (f.ipv6) {
    WriteIcmp6Header(out + l3, f.dst6, f.src6, f.icmp_len, 64);
    m[0] = kIcmp6EchoReply;
    Store16(m + 2, Icmp6Checksum(f.dst6, f.src6, m, f.icmp_len));
  } else {
    WriteIpv4(out + l3, Ipv4{.total_length = static_cast<uint16_t>(kIpv4HeaderLen + f.icmp_len),
                             .id = Load16(request.data() + f.eth.header_len + 4),
                             .df = false,
                             .ttl = 64,
                             .protocol = kIpProtoIcmp,
                             .src = f.dst4,
                             .dst = f.src4});
    m[0] = kIcmpEchoReply;
    Store16(m + 2, InternetChecksum(m, f.icmp_len));
  }
  return Pad(out, l3 + ip_len + f.icmp_len, cap);
}

size_t WriteArpRequest(const MacAddr& mac, Ipv4Addr sender, Ipv4Addr target, std::optional<VlanTag> vlan,
                       uint8_t* out) {
  size_t n = WriteEthernet(out, Ethernet{.dst = MacAddr{{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
                                         .src = mac,
                                         .vlan = vlan,
                                         .ethertype = kEtherTypeArp});
  n += WriteArpBody(out + n, kArpOpRequest, mac, sender, MacAddr{}, target);  // target MAC: unknown, zero
  return Pad(out, n, kEthMinFrameNoFcs);
}

size_t WriteNeighborSolicitation(const MacAddr& mac, const Ipv6Addr& sender, const Ipv6Addr& target,
                                 std::optional<VlanTag> vlan, uint8_t* out) {
  constexpr size_t kMsg = 32;  // 24 + a source link-layer address option
  // The target's solicited-node multicast address ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX.
  Ipv6Addr dst{{0xFF, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF, target.bytes[13], target.bytes[14], target.bytes[15]}};
  const MacAddr to{{0x33, 0x33, 0xFF, target.bytes[13], target.bytes[14], target.bytes[15]}};
  const size_t l3 = WriteEthernet(out, Ethernet{.dst = to, .src = mac, .vlan = vlan, .ethertype = kEtherTypeIpv6});
  WriteIcmp6Header(out + l3, sender, dst, kMsg, kNdHopLimit);
  uint8_t* m = out + l3 + kIpv6HeaderLen;
  std::memset(m, 0, kMsg);
  m[0] = kNdSolicitation;
  std::copy(target.bytes.begin(), target.bytes.end(), m + 8);
  m[24] = kNdOptSourceLl;
  m[25] = 1;
  std::copy(mac.bytes.begin(), mac.bytes.end(), m + 26);
  Store16(m + 2, Icmp6Checksum(sender, dst, m, kMsg));
  return l3 + kIpv6HeaderLen + kMsg;
}

std::optional<MacAddr> ResolvedBy(const NeighborFrame& f, Ipv4Addr target) {
  if ((f.kind == Kind::kArpReply || f.kind == Kind::kArpRequest) && f.src4 == target) return f.lladdr;
  return std::nullopt;
}

std::optional<MacAddr> ResolvedBy(const NeighborFrame& f, const Ipv6Addr& target) {
  if (f.kind != Kind::kNeighborAdvertisement || f.target6 != target) return std::nullopt;
  return f.has_lladdr ? f.lladdr : f.eth.src;
}

}  // namespace fg::proto
