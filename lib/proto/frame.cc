#include "proto/frame.h"

#include <algorithm>

#include "proto/bytes.h"
#include "proto/icrc.h"
#include "proto/signature.h"

namespace fg::proto {

uint32_t EncapLen(const Encap& e) {
  return static_cast<uint32_t>(kEthHeaderLen + (e.vlan ? kVlanTagLen : 0) +
                               (e.l3.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen) + (e.udp ? kUdpHeaderLen : 0));
}

FrameTemplate BuildFrame(const Encap& e, std::span<const uint8_t> transport, uint32_t payload_len, uint32_t pad_len,
                         Trailer trailer) {
  FrameTemplate t;
  t.ipv6 = e.l3.ipv6;
  t.udp = e.udp;
  t.udp_checksum = e.udp && e.udp_checksum;
  const uint32_t trailer_len = trailer == Trailer::kNone ? 0 : 4;
  const uint32_t l4_len =
      static_cast<uint32_t>((e.udp ? kUdpHeaderLen : 0) + transport.size()) + payload_len + pad_len + trailer_len;
  const uint32_t ip_len = l4_len + static_cast<uint32_t>(e.l3.ipv6 ? kIpv6HeaderLen : kIpv4HeaderLen);
  const uint32_t total = static_cast<uint32_t>(kEthHeaderLen + (e.vlan ? kVlanTagLen : 0)) + ip_len;
  t.bytes.assign(std::max(total, kMinFrameNoFcs), 0);
  uint8_t* p = t.bytes.data();

  Ethernet eth{e.dst_mac, e.src_mac, e.vlan, e.l3.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4, 0};
  t.l3_offset = static_cast<uint32_t>(WriteEthernet(p, eth));
  const uint8_t proto = e.udp ? kIpProtoUdp : e.ip_protocol;
  if (e.l3.ipv6) {
    Ipv6 ip;
    ip.traffic_class = static_cast<uint8_t>(e.l3.dscp << 2 | e.l3.ecn);
    ip.flow_label = e.l3.flow_label;
    ip.payload_length = static_cast<uint16_t>(l4_len);
    ip.next_header = proto;
    ip.hop_limit = e.l3.ttl;
    ip.src = e.l3.src6;
    ip.dst = e.l3.dst6;
    t.l4_offset = t.l3_offset + static_cast<uint32_t>(WriteIpv6(p + t.l3_offset, ip));
  } else {
    Ipv4 ip;
    ip.dscp = e.l3.dscp;
    ip.ecn = e.l3.ecn;
    ip.total_length = static_cast<uint16_t>(ip_len);
    ip.id = e.l3.ip_id;
    ip.df = e.l3.df;
    ip.ttl = e.l3.ttl;
    ip.protocol = proto;
    ip.src = e.l3.src4;
    ip.dst = e.l3.dst4;
    t.l4_offset = t.l3_offset + static_cast<uint32_t>(WriteIpv4(p + t.l3_offset, ip));
  }
  t.transport_offset = t.l4_offset;
  if (e.udp) {
    t.transport_offset +=
        static_cast<uint32_t>(WriteUdp(p + t.l4_offset, Udp{e.udp_src, e.udp_dst, static_cast<uint16_t>(l4_len), 0}));
  }
  std::copy(transport.begin(), transport.end(), p + t.transport_offset);
  t.payload_offset = t.transport_offset + static_cast<uint32_t>(transport.size());
  t.payload_len = payload_len;
  for (uint32_t i = 0; i < payload_len; ++i) p[t.payload_offset + i] = static_cast<uint8_t>(i);
  if (payload_len >= kSignatureLen) {
    t.signature_offset = static_cast<int32_t>(t.payload_offset);
    WriteSignature(p + t.payload_offset, Signature{.flags = kSigFlagTimestamp});
  }
  if (trailer != Trailer::kNone) {
    t.icrc_offset = static_cast<int32_t>(t.payload_offset + payload_len + pad_len);
    const IcrcLayout layout{t.l3_offset, t.ipv6, static_cast<uint32_t>(t.icrc_offset)};
    uint32_t crc = IcrcFull(p, layout);
    if (trailer == Trailer::kBadIcrc) crc = ~crc;
    StoreIcrc(p + t.icrc_offset, crc);
  }
  if (t.udp_checksum) UpdateUdpChecksum(p, t);
  return t;
}

void UpdateUdpChecksum(uint8_t* frame, const FrameTemplate& t) {
  uint8_t* udp = frame + t.l4_offset;
  const uint16_t len = Load16(udp + 4);
  Store16(udp + 6, 0);
  const std::span<const uint8_t> s(udp, len);
  uint16_t c;
  if (t.ipv6) {
    Ipv6Addr src, dst;
    std::copy_n(frame + t.l3_offset + 8, 16, src.bytes.begin());
    std::copy_n(frame + t.l3_offset + 24, 16, dst.bytes.begin());
    c = UdpChecksumIpv6(src, dst, s);
  } else {
    c = UdpChecksumIpv4(Ipv4Addr{Load32(frame + t.l3_offset + 12)}, Ipv4Addr{Load32(frame + t.l3_offset + 16)}, s);
  }
  Store16(udp + 6, c);
}

}  // namespace fg::proto
