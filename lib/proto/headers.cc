#include "proto/headers.h"

#include <algorithm>

#include "proto/bytes.h"
#include "proto/checksum.h"

namespace fg::proto {

size_t WriteEthernet(uint8_t* p, const Ethernet& h) {
  std::copy(h.dst.bytes.begin(), h.dst.bytes.end(), p);
  std::copy(h.src.bytes.begin(), h.src.bytes.end(), p + 6);
  size_t off = 12;
  if (h.vlan) {
    Store16(p + off, kEtherTypeVlan);
    Store16(p + off + 2,
            static_cast<uint16_t>((h.vlan->pcp & 7) << 13 | (h.vlan->dei ? 1 : 0) << 12 | (h.vlan->id & 0x0FFF)));
    off += kVlanTagLen;
  }
  Store16(p + off, h.ethertype);
  return off + 2;
}

size_t WriteIpv4(uint8_t* p, const Ipv4& h) {
  p[0] = 0x45;
  p[1] = static_cast<uint8_t>((h.dscp & 0x3F) << 2 | (h.ecn & 3));
  Store16(p + 2, h.total_length);
  Store16(p + 4, h.id);
  Store16(p + 6, static_cast<uint16_t>((h.df ? 0x4000 : 0) | (h.mf ? 0x2000 : 0) | (h.fragment_offset & 0x1FFF)));
  p[8] = h.ttl;
  p[9] = h.protocol;
  Store16(p + 10, 0);
  Store32(p + 12, h.src.value);
  Store32(p + 16, h.dst.value);
  Store16(p + 10, InternetChecksum(p, kIpv4HeaderLen));
  return kIpv4HeaderLen;
}

size_t WriteIpv6(uint8_t* p, const Ipv6& h) {
  Store32(p, 6u << 28 | uint32_t{h.traffic_class} << 20 | (h.flow_label & 0xFFFFF));
  Store16(p + 4, h.payload_length);
  p[6] = h.next_header;
  p[7] = h.hop_limit;
  std::copy(h.src.bytes.begin(), h.src.bytes.end(), p + 8);
  std::copy(h.dst.bytes.begin(), h.dst.bytes.end(), p + 24);
  return kIpv6HeaderLen;
}

size_t WriteUdp(uint8_t* p, const Udp& h) {
  Store16(p, h.src_port);
  Store16(p + 2, h.dst_port);
  Store16(p + 4, h.length);
  Store16(p + 6, h.checksum);
  return kUdpHeaderLen;
}

std::optional<Ethernet> ParseEthernet(std::span<const uint8_t> b) {
  if (b.size() < kEthHeaderLen) return std::nullopt;
  Ethernet h;
  std::copy_n(b.data(), 6, h.dst.bytes.begin());
  std::copy_n(b.data() + 6, 6, h.src.bytes.begin());
  size_t off = 12;
  uint16_t type = Load16(b.data() + off);
  if (type == kEtherTypeVlan) {
    if (b.size() < kEthHeaderLen + kVlanTagLen) return std::nullopt;
    const uint16_t tci = Load16(b.data() + off + 2);
    h.vlan = VlanTag{static_cast<uint16_t>(tci & 0x0FFF), static_cast<uint8_t>(tci >> 13), (tci & 0x1000) != 0};
    off += kVlanTagLen;
    type = Load16(b.data() + off);
  }
  h.ethertype = type;
  h.header_len = off + 2;
  return h;
}

std::optional<Ipv4> ParseIpv4(std::span<const uint8_t> b) {
  if (b.size() < kIpv4HeaderLen) return std::nullopt;
  const uint8_t* p = b.data();
  if ((p[0] >> 4) != 4) return std::nullopt;
  const size_t ihl = (p[0] & 0x0F) * 4u;
  if (ihl < kIpv4HeaderLen || b.size() < ihl) return std::nullopt;
  Ipv4 h;
  h.header_len = ihl;
  h.dscp = p[1] >> 2;
  h.ecn = p[1] & 3;
  h.total_length = Load16(p + 2);
  if (h.total_length < ihl) return std::nullopt;
  h.id = Load16(p + 4);
  const uint16_t frag = Load16(p + 6);
  h.df = frag & 0x4000;
  h.mf = frag & 0x2000;
  h.fragment_offset = frag & 0x1FFF;
  h.ttl = p[8];
  h.protocol = p[9];
  h.checksum = Load16(p + 10);
  h.src.value = Load32(p + 12);
  h.dst.value = Load32(p + 16);
  return h;
}

std::optional<Ipv6> ParseIpv6(std::span<const uint8_t> b) {
  if (b.size() < kIpv6HeaderLen) return std::nullopt;
  const uint8_t* p = b.data();
  const uint32_t w = Load32(p);
  if ((w >> 28) != 6) return std::nullopt;
  Ipv6 h;
  h.traffic_class = static_cast<uint8_t>(w >> 20);
  h.flow_label = w & 0xFFFFF;
  h.payload_length = Load16(p + 4);
  h.next_header = p[6];
  h.hop_limit = p[7];
  std::copy_n(p + 8, 16, h.src.bytes.begin());
  std::copy_n(p + 24, 16, h.dst.bytes.begin());
  return h;
}

std::optional<Udp> ParseUdp(std::span<const uint8_t> b) {
  if (b.size() < kUdpHeaderLen) return std::nullopt;
  Udp h{Load16(b.data()), Load16(b.data() + 2), Load16(b.data() + 4), Load16(b.data() + 6)};
  if (h.length < kUdpHeaderLen) return std::nullopt;
  return h;
}

namespace {
uint16_t FinishUdp(uint32_t pseudo_sum, std::span<const uint8_t> udp) {
  const uint16_t c = InternetChecksum(udp.data(), udp.size(), pseudo_sum);
  return c == 0 ? 0xFFFF : c;
}
uint32_t SumBytes(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += Load16(p + i);
  return s;
}
}  // namespace

uint16_t UdpChecksumIpv4(Ipv4Addr src, Ipv4Addr dst, std::span<const uint8_t> udp) {
  uint32_t s = (src.value >> 16) + (src.value & 0xFFFF) + (dst.value >> 16) + (dst.value & 0xFFFF);
  s += kIpProtoUdp + static_cast<uint32_t>(udp.size());
  return FinishUdp(s, udp);
}

uint16_t UdpChecksumIpv6(const Ipv6Addr& src, const Ipv6Addr& dst, std::span<const uint8_t> udp) {
  uint32_t s = SumBytes(src.bytes.data(), 16) + SumBytes(dst.bytes.data(), 16);
  s += static_cast<uint32_t>(udp.size() >> 16) + static_cast<uint32_t>(udp.size() & 0xFFFF) + kIpProtoUdp;
  return FinishUdp(s, udp);
}

}  // namespace fg::proto
