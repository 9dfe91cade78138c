#include "proto/pfc.h"

#include <algorithm>
#include <cstring>

#include "proto/bytes.h"
#include "proto/headers.h"

namespace fg::proto {
namespace {
size_t Header(uint8_t* p, const MacAddr& src, uint16_t opcode) {
  std::memset(p, 0, kMacControlFrameLen);
  size_t off = WriteEthernet(p, Ethernet{kMacControlDst, src, std::nullopt, kEtherTypeMacControl, 0});
  Store16(p + off, opcode);
  return off + 2;
}
}  // namespace

size_t WritePause(uint8_t* p, const MacAddr& src, uint16_t quanta) {
  const size_t off = Header(p, src, kOpcodePause);
  Store16(p + off, quanta);
  return kMacControlFrameLen;
}

size_t WritePfc(uint8_t* p, const MacAddr& src, const MacControl& pfc) {
  size_t off = Header(p, src, kOpcodePfc);
  Store16(p + off, pfc.class_enable);
  off += 2;
  for (int i = 0; i < 8; ++i) Store16(p + off + 2 * i, pfc.quanta[i]);
  return kMacControlFrameLen;
}

std::optional<MacControl> ParseMacControl(std::span<const uint8_t> frame) {
  auto eth = ParseEthernet(frame);
  if (!eth || eth->ethertype != kEtherTypeMacControl) return std::nullopt;
  const size_t off = eth->header_len;
  if (frame.size() < off + 2) return std::nullopt;
  MacControl m;
  m.src = eth->src;
  m.opcode = Load16(frame.data() + off);
  if (m.opcode == kOpcodePause) {
    if (frame.size() < off + 4) return std::nullopt;
    m.quanta[0] = Load16(frame.data() + off + 2);
    return m;
  }
  if (m.opcode == kOpcodePfc) {
    if (frame.size() < off + 4 + 16) return std::nullopt;
    m.class_enable = Load16(frame.data() + off + 2);
    for (int i = 0; i < 8; ++i) m.quanta[i] = Load16(frame.data() + off + 4 + 2 * i);
    return m;
  }
  return std::nullopt;
}

uint8_t PriorityOf(std::span<const uint8_t> frame) {
  auto eth = ParseEthernet(frame);
  if (!eth) return 0;
  if (eth->vlan) return eth->vlan->pcp & 7;
  const size_t ip = eth->header_len;
  if (eth->ethertype == kEtherTypeIpv4 && frame.size() >= ip + 2) return frame[ip + 1] >> 5;
  if (eth->ethertype == kEtherTypeIpv6 && frame.size() >= ip + 2) {
    const uint8_t traffic_class = static_cast<uint8_t>((frame[ip] & 0x0F) << 4 | frame[ip + 1] >> 4);
    return traffic_class >> 5;
  }
  return 0;
}

}  // namespace fg::proto
