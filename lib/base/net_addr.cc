#include "base/net_addr.h"

#include <arpa/inet.h>

#include "absl/strings/str_format.h"

namespace fg {

absl::StatusOr<MacAddr> ParseMac(std::string_view text) {
  MacAddr mac;
  unsigned b[6];
  char tail;
  std::string s(text);
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6 ||
      s.size() != 17) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not a MAC address; expected six hex bytes like 02:00:00:00:00:01", s));
  }
  for (int i = 0; i < 6; ++i) mac.bytes[i] = static_cast<uint8_t>(b[i]);
  return mac;
}

absl::StatusOr<Ipv4Addr> ParseIpv4(std::string_view text) {
  std::string s(text);
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not an IPv4 address; expected dotted quad like 198.18.0.1", s));
  }
  return Ipv4Addr{ntohl(a.s_addr)};
}

absl::StatusOr<Ipv6Addr> ParseIpv6(std::string_view text) {
  std::string s(text);
  Ipv6Addr ip;
  if (inet_pton(AF_INET6, s.c_str(), ip.bytes.data()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("'%s' is not an IPv6 address; expected a form like 2001:db8::1", s));
  }
  return ip;
}

std::string FormatIpv6(const Ipv6Addr& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, ip.bytes.data(), buf, sizeof buf);
  return buf;
}

std::string FormatMac(const MacAddr& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m.bytes[0], m.bytes[1], m.bytes[2], m.bytes[3], m.bytes[4],
                         m.bytes[5]);
}

std::string FormatIpv4(Ipv4Addr ip) {
  return absl::StrFormat("%d.%d.%d.%d", ip.value >> 24, (ip.value >> 16) & 0xFF, (ip.value >> 8) & 0xFF,
                         ip.value & 0xFF);
}

absl::StatusOr<IpAddr> ParseIp(std::string_view text) {
  if (auto v4 = ParseIpv4(text); v4.ok()) return IpAddr{.ipv6 = false, .v4 = *v4, .v6 = {}};
  if (auto v6 = ParseIpv6(text); v6.ok()) return IpAddr{.ipv6 = true, .v4 = {}, .v6 = *v6};
  return absl::InvalidArgumentError(absl::StrFormat("'%s' is not an IPv4 or IPv6 address", text));
}

std::string FormatIp(const IpAddr& ip) { return ip.ipv6 ? FormatIpv6(ip.v6) : FormatIpv4(ip.v4); }

IpAddr IpPlus(const IpAddr& ip, uint32_t k) {
  IpAddr r = ip;
  if (!ip.ipv6) {
    r.v4.value += k;
    return r;
  }
  const uint32_t low = IpLow32(ip) + k;
  for (int i = 0; i < 4; ++i) r.v6.bytes[12 + i] = static_cast<uint8_t>(low >> (24 - 8 * i));
  return r;
}

}  // namespace fg
