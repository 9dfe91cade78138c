// base/net_addr.h: Ethernet and IP address values with parsing and printing.
//
//   auto ip = fg::ParseIpv4("198.18.0.1");   // Ipv4Addr{0xC6120001}
//   auto mac = fg::ParseMac("02:00:00:00:00:01");
//   std::string s = fg::FormatIpv4(*ip);
//   auto ip6 = fg::ParseIpv6("2001:db8::1");
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fg {

struct MacAddr {
  std::array<uint8_t, 6> bytes{};
  bool operator==(const MacAddr&) const = default;
};

struct Ipv4Addr {
  uint32_t value = 0;  // host byte order
  bool operator==(const Ipv4Addr&) const = default;
};

struct Ipv6Addr {
  std::array<uint8_t, 16> bytes{};
  bool operator==(const Ipv6Addr&) const = default;
};

absl::StatusOr<MacAddr> ParseMac(std::string_view text);
absl::StatusOr<Ipv6Addr> ParseIpv6(std::string_view text);
std::string FormatIpv6(const Ipv6Addr& ip);
// True when `ip` lies in 2001:db8::/32, the documentation range (RFC 3849).
inline bool IsDocumentationIpv6(const Ipv6Addr& ip) {
  return ip.bytes[0] == 0x20 && ip.bytes[1] == 0x01 && ip.bytes[2] == 0x0d && ip.bytes[3] == 0xb8;
}
absl::StatusOr<Ipv4Addr> ParseIpv4(std::string_view text);
std::string FormatMac(const MacAddr& mac);
std::string FormatIpv4(Ipv4Addr ip);

// True when `ip` lies in 198.18.0.0/15, the benchmarking range of RFC 2544.
inline bool IsBenchmarkingIpv4(Ipv4Addr ip) { return (ip.value & 0xFFFE0000u) == 0xC6120000u; }

// An IPv4 or an IPv6 address (a gateway, a rank's first address).
struct IpAddr {
  bool ipv6 = false;
  Ipv4Addr v4;  // when !ipv6
  Ipv6Addr v6;  // when ipv6
  bool operator==(const IpAddr&) const = default;
};
// "198.18.0.1" or "2001:db8::1"; the error says it is neither.
absl::StatusOr<IpAddr> ParseIp(std::string_view text);
std::string FormatIp(const IpAddr& ip);
// The last 32 bits of an address (IPv4: all of it): what counts up from a
// first address and what a flow stamps.
inline uint32_t IpLow32(const IpAddr& ip) {
  if (!ip.ipv6) return ip.v4.value;
  return uint32_t{ip.v6.bytes[12]} << 24 | uint32_t{ip.v6.bytes[13]} << 16 | uint32_t{ip.v6.bytes[14]} << 8 |
         ip.v6.bytes[15];
}
// The address k after `ip` (its last 32 bits plus k, modulo 2^32; the caller
// keeps k inside its range).
IpAddr IpPlus(const IpAddr& ip, uint32_t k);

}  // namespace fg
