// proto/frame.h: whole test frames: Ethernet / [802.1Q] / IPv4|IPv6 / [UDP] /
// transport headers / payload / [pad, ICRC].
//
// The transport headers (BTH and its extensions, UET PDS/SES, or nothing for
// plain UDP) come in as bytes from their own builders; this file adds the
// encapsulation around them with correct lengths and checksums, fills the
// payload with a counting pattern, and, for RoCEv2, computes the ICRC (or a
// deliberately wrong one for negative tests). The template records where
// every per-packet field is, so TX and `fabricgen craft` rewrite only those.
//
//   fg::proto::Encap e;                      // defaults: 198.18.0.1 -> 198.19.0.1, UDP 49152 -> 5001
//   e.udp_dst = fg::proto::roce::kUdpPort;
//   fg::proto::FrameTemplate t = fg::proto::BuildFrame(e, bth_and_reth, /*payload=*/1024, /*pad=*/0,
//                                                      fg::proto::Trailer::kIcrc);
//   // t.signature_offset == payload start; t.icrc_offset == t.bytes.size() - 4
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/net_addr.h"
#include "proto/headers.h"

namespace fg::proto {

struct L3Spec {
  bool ipv6 = false;
  Ipv4Addr src4{0xC6120001};                                                    // 198.18.0.1
  Ipv4Addr dst4{0xC6130001};                                                    // 198.19.0.1
  Ipv6Addr src6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};  // 2001:db8::1
  Ipv6Addr dst6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}};  // 2001:db8::2
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 64;  // hop limit for IPv6
  uint32_t flow_label = 0;
  uint16_t ip_id = 0;
  bool df = true;
};

struct Encap {
  MacAddr src_mac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
  MacAddr dst_mac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
  std::optional<VlanTag> vlan;
  L3Spec l3;
  bool udp = true;  // false: native IP, protocol `ip_protocol`
  uint8_t ip_protocol = kIpProtoUdp;
  uint16_t udp_src = 49152;
  uint16_t udp_dst = 5001;
  bool udp_checksum = false;  // false: zero (IPv4, and RoCEv2 on either IP version)
};

enum class Trailer { kNone, kIcrc, kBadIcrc };

inline constexpr uint32_t kMinFrameNoFcs = kEthMinFrameNoFcs;  // shorter frames are padded with zeros after the IP packet

struct FrameTemplate {
  std::vector<uint8_t> bytes;  // the frame without FCS
  uint32_t l3_offset = 0, l4_offset = 0, transport_offset = 0, payload_offset = 0, payload_len = 0;
  int32_t signature_offset = -1;  // payload start when the payload holds a signature (>= 16 B)
  int32_t icrc_offset = -1;
  bool ipv6 = false;
  bool udp = true;
  bool udp_checksum = false;
  uint32_t frame_size() const { return static_cast<uint32_t>(bytes.size()) + 4; }  // FCS included
};

// Bytes of encapsulation before the transport headers.
uint32_t EncapLen(const Encap& e);

FrameTemplate BuildFrame(const Encap& e, std::span<const uint8_t> transport, uint32_t payload_len, uint32_t pad_len,
                         Trailer trailer);

// Recomputes the UDP checksum of a frame built from `t` (for udp_checksum).
void UpdateUdpChecksum(uint8_t* frame, const FrameTemplate& t);

}  // namespace fg::proto
