// Fuzz target: Ethernet/IPv4/IPv6/UDP parsers and the Internet checksum.
#include <cstddef>
#include <cstdint>
#include <span>

#include "proto/checksum.h"
#include "proto/headers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> b(data, size);
  if (auto eth = fg::proto::ParseEthernet(b)) {
    if (eth->header_len > size) __builtin_trap();
    b = b.subspan(eth->header_len);
  }
  if (auto ip = fg::proto::ParseIpv4(b)) {
    if (ip->header_len > b.size()) __builtin_trap();
    fg::proto::InternetChecksum(b.data(), ip->header_len);
    fg::proto::ParseUdp(b.subspan(ip->header_len));
  }
  if (auto ip6 = fg::proto::ParseIpv6(b)) fg::proto::ParseUdp(b.subspan(40));
  fg::proto::InternetChecksum(data, size);
  return 0;
}
