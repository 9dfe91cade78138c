#include "proto/udp_frame.h"

#include "base/units.h"
#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/signature.h"

namespace fg::proto {

uint32_t UdpHeadersLen(const UdpFrameSpec& spec) { return 14 + (spec.vlan ? 4 : 0) + 20 + 8; }

uint32_t MinUdpFrameSize(const UdpFrameSpec& spec) { return UdpHeadersLen(spec) + kSignatureLen + kEthFcsLen; }

FrameTemplate BuildUdpFrame(const UdpFrameSpec& spec) {
  FrameTemplate t;
  const uint32_t len = spec.size - kEthFcsLen;
  t.bytes.assign(len, 0);
  uint8_t* p = t.bytes.data();
  std::copy(spec.dst_mac.bytes.begin(), spec.dst_mac.bytes.end(), p);
  std::copy(spec.src_mac.bytes.begin(), spec.src_mac.bytes.end(), p + 6);
  p += 12;
  if (spec.vlan) {
    Store16(p, kEtherTypeVlan);
    Store16(p + 2, static_cast<uint16_t>(spec.vlan->pcp << 13 | (spec.vlan->dei ? 1 : 0) << 12 | spec.vlan->id));
    p += 4;
  }
  Store16(p, kEtherTypeIpv4);
  p += 2;

  uint8_t* ip = p;
  const uint32_t ip_len = len - static_cast<uint32_t>(ip - t.bytes.data());
  ip[0] = 0x45;
  ip[1] = static_cast<uint8_t>(spec.dscp << 2 | spec.ecn);
  Store16(ip + 2, static_cast<uint16_t>(ip_len));
  Store16(ip + 4, 0);       // identification
  Store16(ip + 6, 0x4000);  // DF
  ip[8] = spec.ttl;
  ip[9] = kIpProtoUdp;
  Store32(ip + 12, spec.src_ip.value);
  Store32(ip + 16, spec.dst_ip.value);
  Store16(ip + 10, InternetChecksum(ip, 20));

  uint8_t* udp = ip + 20;
  Store16(udp, spec.udp_src);
  Store16(udp + 2, spec.udp_dst);
  Store16(udp + 4, static_cast<uint16_t>(ip_len - 20));
  Store16(udp + 6, 0);  // no checksum (allowed for IPv4)

  t.signature_offset = static_cast<uint32_t>(udp + 8 - t.bytes.data());
  for (uint32_t i = t.signature_offset + kSignatureLen; i < len; ++i) t.bytes[i] = static_cast<uint8_t>(i);
  return t;
}

}  // namespace fg::proto
