// Fuzz target: RoCEv2 header parsers, the opcode table, and the two ICRC
// computations against each other (differential).
#include <cstddef>
#include <cstdint>
#include <span>

#include "proto/icrc.h"
#include "proto/roce.h"

namespace roce = fg::proto::roce;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> b(data, size);
  if (auto bth = roce::ParseBth(b)) {
    const roce::OpcodeInfo info = roce::Describe(bth->opcode);
    size_t off = roce::kBthLen;
    if (info.deth && roce::ParseDeth(b.subspan(std::min(off, size)))) off += roce::kDethLen;
    if (info.reth && roce::ParseReth(b.subspan(std::min(off, size)))) off += roce::kRethLen;
    if (info.aeth) roce::ParseAeth(b.subspan(std::min(off, size)));
  }
  // Treat the input as a frame: Ethernet 14 B, then IPv4 or IPv6 by the
  // version nibble, ICRC in the last 4 bytes.
  if (size >= 14 + 40 + 8 + 12 + 4 && size <= 9000) {
    const bool v6 = (data[14] >> 4) == 6;
    const fg::proto::IcrcLayout l{14, v6, static_cast<uint32_t>(size - 4)};
    if (!v6 && ((data[14] & 0x0F) * 4u + 14 + 8 + 13 > size - 4)) return 0;  // IHL beyond the frame
    if (fg::proto::IcrcFull(data, l) != fg::proto::IcrcReference(data, l)) __builtin_trap();
  }
  return 0;
}
