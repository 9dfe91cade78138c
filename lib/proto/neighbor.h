// proto/neighbor.h: ARP, IPv6 neighbour discovery and ICMP / ICMPv6 echo on
// the wire: what a received frame is, the answers a host sends, and the
// requests that resolve a gateway.
//
// ARP as RFC 826 for Ethernet and IPv4 (28 bytes after the Ethernet header);
// neighbour solicitation and advertisement as RFC 4861 (hop limit 255, the
// source / target link-layer address options); echo as RFC 792 and RFC 4443.
// Checksums are verified on what is parsed and computed on what is written.
// Frames are without FCS and padded to 60 bytes; one 802.1Q tag is kept
// from a request into its answer. No DPDK types.
//
//   const fg::proto::NeighborFrame f = fg::proto::ParseNeighbor(frame);
//   if (f.kind == fg::proto::NeighborFrame::Kind::kArpRequest && mine(f.target4))
//     len = fg::proto::WriteArpReply(f, my_mac, out);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/net_addr.h"
#include "proto/headers.h"

namespace fg::proto {

inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr size_t kArpLen = 28;
// The largest answer WriteNeighborAdvertisement writes (a tag, IPv6, 32 B of ICMPv6).
inline constexpr size_t kNeighborAdvertisementMax = kEthHeaderLen + kVlanTagLen + kIpv6HeaderLen + 32;

struct NeighborFrame {
  enum class Kind : uint8_t {
    kNone,                   // none of these protocols
    kArpRequest,             // ARP, operation 1
    kArpReply,               // ARP, operation 2
    kNeighborSolicitation,   // ICMPv6 135
    kNeighborAdvertisement,  // ICMPv6 136
    kEchoRequest,            // ICMP 8 or ICMPv6 128, to a unicast address
    kOther,                  // ARP, ICMP or ICMPv6 of another kind (replies, router and listener messages...)
    kInvalid,                // shaped as one of these but not one: truncated, a bad checksum, a hop limit not 255
  };
  Kind kind = Kind::kNone;
  Ethernet eth;
  bool ipv6 = false;
  // ARP: sender and target protocol addresses; ICMP: the IP source and destination.
  Ipv4Addr src4, dst4;
  // ICMPv6: the IPv6 source and destination; ND: the target address.
  Ipv6Addr src6, dst6, target6;
  // ARP: the sender's hardware address; ND: the link-layer address option
  // (source in a solicitation, target in an advertisement), if present.
  MacAddr lladdr;
  bool has_lladdr = false;
  // Echo: where the ICMP message starts and its length (up to the IP packet's end).
  size_t icmp_offset = 0, icmp_len = 0;
};

NeighborFrame ParseNeighbor(std::span<const uint8_t> frame);

// Answers into `out`; each returns the frame's length (padded to 60), or 0
// when it needs more than `cap` bytes.
size_t WriteArpReply(const NeighborFrame& request, const MacAddr& mac, uint8_t* out, size_t cap);
size_t WriteNeighborAdvertisement(const NeighborFrame& solicitation, const MacAddr& mac, uint8_t* out, size_t cap);
size_t WriteEchoReply(std::span<const uint8_t> request, const NeighborFrame& f, const MacAddr& mac, uint8_t* out,
                      size_t cap);

// Requests that resolve `target` from (`mac`, `sender`): a broadcast ARP
// request (60 B) and a neighbour solicitation to the target's
// solicited-node multicast address (86 B, 90 B tagged). `out` has room for 90 B.
size_t WriteArpRequest(const MacAddr& mac, Ipv4Addr sender, Ipv4Addr target, std::optional<VlanTag> vlan,
                       uint8_t* out);
size_t WriteNeighborSolicitation(const MacAddr& mac, const Ipv6Addr& sender, const Ipv6Addr& target,
                                 std::optional<VlanTag> vlan, uint8_t* out);
// The MAC a parsed frame gives `target`: an ARP frame whose sender it is,
// or a neighbour advertisement for it; nullopt otherwise.
std::optional<MacAddr> ResolvedBy(const NeighborFrame& f, Ipv4Addr target);
std::optional<MacAddr> ResolvedBy(const NeighborFrame& f, const Ipv6Addr& target);

}  // namespace fg::proto
