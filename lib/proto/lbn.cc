#include "proto/lbn.h"

#include <algorithm>

#include "proto/bytes.h"
#include "proto/headers.h"

namespace fg::proto::lbn {

uint8_t LevelForGbps(double gbps) {
  uint8_t level = 0;
  for (uint8_t l = 1; l < 8; ++l) {
    if (gbps >= kLevelGbps[l]) level = l;
  }
  return level;
}

uint8_t Bitmap::Get(int leaf) const {
  if (leaf < 0 || leaf >= kLeaves) return 0;
  const int bit = leaf * 3;  // from the most significant bit of byte 0
  const uint32_t window =
      uint32_t{bytes_[bit / 8]} << 8 | (bit / 8 + 1 < static_cast<int>(kBitmapBytes) ? bytes_[bit / 8 + 1] : 0);
  return static_cast<uint8_t>((window >> (16 - 3 - bit % 8)) & 7);
}

void Bitmap::Set(int leaf, uint8_t level) {
  if (leaf < 0 || leaf >= kLeaves) return;
  for (int k = 0; k < 3; ++k) {
    const int bit = leaf * 3 + k;
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (bit % 8));
    if (level & (4 >> k)) {
      bytes_[bit / 8] |= mask;
    } else {
      bytes_[bit / 8] &= static_cast<uint8_t>(~mask);
    }
  }
}

std::string Bitmap::ToString(int leaves) const {
  std::string s;
  for (int i = 0; i < std::min(leaves, kLeaves); ++i) {
    const uint8_t l = Get(i);
    for (int k = 2; k >= 0; --k) s.push_back((l >> k) & 1 ? '1' : '0');
  }
  return s;
}

size_t WriteMessage(uint8_t* p, const MacAddr& src, const MacAddr& dst, const Message& m, const Settings& s) {
  size_t off = WriteEthernet(p, Ethernet{dst, src, std::nullopt, s.ethertype, 0});
  p[off] = s.opcode;
  p[off + 1] = s.type;
  // R (0) | Msg (2) | Rsv (3, 0) | Dev-Range (6) | reserved (4)
  Store16(p + off + 2, static_cast<uint16_t>((m.msg & 3) << 13 | (m.dev_range & 0x3F) << 4));
  std::copy(m.bitmap.bytes().begin(), m.bitmap.bytes().end(), p + off + kHeaderLen);
  return off + kMessageLen;
}

std::optional<Message> ParseMessage(std::span<const uint8_t> frame, const Settings& s) {
  auto eth = ParseEthernet(frame);
  if (!eth || eth->ethertype != s.ethertype) return std::nullopt;
  const size_t off = eth->header_len;
  if (frame.size() < off + kMessageLen) return std::nullopt;
  const uint8_t* p = frame.data() + off;
  if (p[0] != s.opcode || p[1] != s.type) return std::nullopt;
  Message m;
  const uint16_t w = Load16(p + 2);  // R and Rsv are ignored on receipt
  m.msg = (w >> 13) & 3;
  m.dev_range = (w >> 4) & 0x3F;
  std::copy_n(p + kHeaderLen, kBitmapBytes, m.bitmap.bytes().begin());
  return m;
}

}  // namespace fg::proto::lbn
