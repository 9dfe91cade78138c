// proto/udp_frame.h: Ethernet / [802.1Q] / IPv4 / UDP test frames.
//
// The frame template holds every header with valid lengths and checksum and
// a payload whose first bytes are the test signature (proto/signature.h);
// the rest of the payload is a counting byte pattern. The TX path copies the
// template and only rewrites the signature fields per packet (the UDP checksum
// is zero, which IPv4 allows, so it needs no update).
//
//   fg::proto::UdpFrameSpec spec;            // defaults: 64 B, 198.18.0.1 -> 198.19.0.1
//   spec.size = 128;
//   fg::proto::FrameTemplate t = fg::proto::BuildUdpFrame(spec);
//   // t.bytes.size() == 124 (the NIC appends the 4-byte FCS); t.signature_offset == 42
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/net_addr.h"

namespace fg::proto {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint8_t kIpProtoUdp = 17;

struct VlanTag {
  uint16_t id = 0;
  uint8_t pcp = 0;
  bool dei = false;
};

struct UdpFrameSpec {
  uint32_t size = 64;  // Ethernet frame bytes including the 4-byte FCS
  MacAddr src_mac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
  MacAddr dst_mac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
  std::optional<VlanTag> vlan;
  Ipv4Addr src_ip{0xC6120001};  // 198.18.0.1
  Ipv4Addr dst_ip{0xC6130001};  // 198.19.0.1
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;
  uint16_t udp_src = 49152;
  uint16_t udp_dst = 5001;
};

// Header bytes before the UDP payload: Ethernet 14 (+4 VLAN) + IPv4 20 + UDP 8.
uint32_t UdpHeadersLen(const UdpFrameSpec& spec);
// The smallest frame size (FCS included) that holds headers and signature.
uint32_t MinUdpFrameSize(const UdpFrameSpec& spec);

struct FrameTemplate {
  std::vector<uint8_t> bytes;     // the frame without FCS
  uint32_t signature_offset = 0;  // where the signature starts in `bytes`
};

// Requires spec.size >= MinUdpFrameSize(spec) (the plan validates it).
FrameTemplate BuildUdpFrame(const UdpFrameSpec& spec);

}  // namespace fg::proto
