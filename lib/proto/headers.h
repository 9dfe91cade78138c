// proto/headers.h: Ethernet, 802.1Q, IPv4, IPv6 and UDP headers.
//
// Builders write a header into a byte buffer (the caller guarantees room:
// each header's size is known) and return the bytes written; parsers take a
// span, check every length before reading, and return std::nullopt for
// anything truncated or malformed. No DPDK types: these work on mbuf data,
// on a pcap record or on a test vector alike.
//
//   uint8_t frame[64] = {};
//   size_t off = fg::proto::WriteEthernet(frame, {.dst = d, .src = s, .ethertype = fg::proto::kEtherTypeIpv4});
//   off += fg::proto::WriteIpv4(frame + off, {.total_length = 46, .protocol = 17, .src = a, .dst = b});
//   auto eth = fg::proto::ParseEthernet(std::span(frame, 64));   // eth->header_len == 14
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/net_addr.h"

namespace fg::proto {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88A8;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;  // PAUSE, PFC
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr size_t kEthHeaderLen = 14;
inline constexpr size_t kVlanTagLen = 4;
inline constexpr size_t kIpv4HeaderLen = 20;
inline constexpr size_t kIpv6HeaderLen = 40;
inline constexpr size_t kUdpHeaderLen = 8;
// Ethernet's shortest frame without FCS: a shorter one is padded with zeros after its IP packet.
inline constexpr size_t kEthMinFrameNoFcs = 60;

struct VlanTag {
  uint16_t id = 0;  // 12 bits
  uint8_t pcp = 0;  // 3 bits
  bool dei = false;
};

struct Ethernet {
  MacAddr dst;
  MacAddr src;
  std::optional<VlanTag> vlan;  // one 802.1Q tag
  uint16_t ethertype = kEtherTypeIpv4;
  size_t header_len = 0;  // set by the parser: 14 or 18
};

struct Ipv4 {
  uint8_t dscp = 0;  // 6 bits
  uint8_t ecn = 0;   // 2 bits
  uint16_t total_length = 0;
  uint16_t id = 0;
  bool df = true;
  bool mf = false;
  uint16_t fragment_offset = 0;  // in 8-byte units
  uint8_t ttl = 64;
  uint8_t protocol = kIpProtoUdp;
  uint16_t checksum = 0;  // written by WriteIpv4; as received by the parser
  Ipv4Addr src;
  Ipv4Addr dst;
  size_t header_len = kIpv4HeaderLen;  // parser: IHL * 4 (options are skipped, not kept)
};

struct Ipv6 {
  uint8_t traffic_class = 0;  // DSCP << 2 | ECN
  uint32_t flow_label = 0;    // 20 bits
  uint16_t payload_length = 0;
  uint8_t next_header = kIpProtoUdp;
  uint8_t hop_limit = 64;
  Ipv6Addr src;
  Ipv6Addr dst;
};

struct Udp {
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint16_t length = 0;
  uint16_t checksum = 0;
};

size_t WriteEthernet(uint8_t* p, const Ethernet& h);  // 14 or 18
size_t WriteIpv4(uint8_t* p, const Ipv4& h);          // 20; computes the header checksum
size_t WriteIpv6(uint8_t* p, const Ipv6& h);          // 40
size_t WriteUdp(uint8_t* p, const Udp& h);            // 8; checksum as given

std::optional<Ethernet> ParseEthernet(std::span<const uint8_t> b);
std::optional<Ipv4> ParseIpv4(std::span<const uint8_t> b);  // checks version, IHL, length
std::optional<Ipv6> ParseIpv6(std::span<const uint8_t> b);
std::optional<Udp> ParseUdp(std::span<const uint8_t> b);

// UDP checksum over the pseudo-header and `udp` (header with checksum field
// zeroed by the caller, then payload). 0 is returned as 0xFFFF (RFC 768).
uint16_t UdpChecksumIpv4(Ipv4Addr src, Ipv4Addr dst, std::span<const uint8_t> udp);
uint16_t UdpChecksumIpv6(const Ipv6Addr& src, const Ipv6Addr& dst, std::span<const uint8_t> udp);

}  // namespace fg::proto
