// proto/lbn.h: the link-bandwidth notification message (seed 003,
// "Fast Notification for Link Bandwidth").
//
// The draft leaves EtherType (TBD1), OpCode (TBD2) and Type (TBD3) to IANA
// and its figure with the field widths is not in the text, so the values are
// settings and the layout is ours until the draft fixes it (placeholders;
// docs/protocols.md):
//
//   Ethernet (EtherType = ethertype, default 0x88B5, IEEE 802 local experimental)
//   OpCode (8 bits, default 0x01) | Type (8 bits, default 0x01)
//   R (1) | Msg (2) | Rsv (3) | Dev-Range (6) | reserved (4)       16 bits
//   Bandwidth-Level-Bitmap: 256 leaves x 3 bits = 96 bytes, leaf 0 in the top bits
//
//   fg::proto::lbn::Bitmap b;
//   b.Set(0, 7);                         // leaf 1: 111 (>= 800G)
//   b.ToString(4) == "111000000000";
//   uint8_t frame[128];
//   size_t n = fg::proto::lbn::WriteMessage(frame, src, dst, {.bitmap = b}, fg::proto::lbn::Settings{});
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/net_addr.h"

namespace fg::proto::lbn {

inline constexpr int kLeaves = 256;
inline constexpr size_t kBitmapBytes = kLeaves * 3 / 8;  // 96

// 3-bit level <-> link bandwidth.
inline constexpr double kLevelGbps[8] = {0, 10, 25, 50, 100, 200, 400, 800};
inline double LevelGbps(uint8_t level) { return kLevelGbps[level & 7]; }
// The highest level whose bandwidth does not exceed `gbps` (rounding down is
// the conservative reading for sums between levels, e.g. 150G -> 100G).
uint8_t LevelForGbps(double gbps);

class Bitmap {
 public:
  uint8_t Get(int leaf) const;  // leaf index 0..255 (Leaf1 = 0)
  void Set(int leaf, uint8_t level);
  // The first `leaves` codes as a bit string, Leaf1 first ("111000000000").
  std::string ToString(int leaves) const;
  const std::array<uint8_t, kBitmapBytes>& bytes() const { return bytes_; }
  std::array<uint8_t, kBitmapBytes>& bytes() { return bytes_; }
  bool operator==(const Bitmap&) const = default;

 private:
  std::array<uint8_t, kBitmapBytes> bytes_{};
};

struct Settings {
  uint16_t ethertype = 0x88B5;  // TBD1 placeholder
  uint8_t opcode = 0x01;        // TBD2 placeholder
  uint8_t type = 0x01;          // TBD3 placeholder
};

struct Message {
  uint8_t msg = 0;        // 2 bits
  uint8_t dev_range = 0;  // 6 bits
  Bitmap bitmap;
};

inline constexpr size_t kHeaderLen = 4;  // OpCode, Type, R/Msg/Rsv/Dev-Range/reserved
inline constexpr size_t kMessageLen = kHeaderLen + kBitmapBytes;

// Writes Ethernet + message (no FCS); returns bytes written (14 + 100).
size_t WriteMessage(uint8_t* p, const MacAddr& src, const MacAddr& dst, const Message& m, const Settings& s);
// Parses a frame; nullopt if EtherType, OpCode or Type differ from `s` or it is short.
std::optional<Message> ParseMessage(std::span<const uint8_t> frame, const Settings& s);

}  // namespace fg::proto::lbn
