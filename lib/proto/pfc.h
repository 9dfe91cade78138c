// proto/pfc.h: IEEE 802.3x PAUSE and 802.1Qbb priority flow control frames.
//
// Both go to 01:80:C2:00:00:01 with EtherType 0x8808 (MAC control) and are
// padded to the 64-byte minimum. One pause quantum is 512 bit times.
//
//   uint8_t f[60];
//   fg::proto::WritePfc(f, src, {.class_enable = 0x08, .quanta = {0, 0, 0, 0xFFFF}});  // pause priority 3
//   auto p = fg::proto::ParseMacControl(std::span(f, 60));   // p->opcode == kOpcodePfc
//   double ns = fg::proto::PauseQuantaNs(0xFFFF, 100e9);      // 335.5 us at 100 Gbit/s
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "base/net_addr.h"

namespace fg::proto {

inline constexpr uint16_t kOpcodePause = 0x0001;
inline constexpr uint16_t kOpcodePfc = 0x0101;
inline constexpr MacAddr kMacControlDst{{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}};
inline constexpr size_t kMacControlFrameLen = 60;  // without FCS

struct MacControl {
  uint16_t opcode = kOpcodePfc;
  uint16_t class_enable = 0;            // PFC: bit i enables priority i
  std::array<uint16_t, 8> quanta = {};  // PFC: per priority; PAUSE: quanta[0]
  MacAddr src;
};

// Write a 60-byte frame (no FCS). A PAUSE uses quanta[0].
size_t WritePause(uint8_t* p, const MacAddr& src, uint16_t quanta);
size_t WritePfc(uint8_t* p, const MacAddr& src, const MacControl& pfc);
std::optional<MacControl> ParseMacControl(std::span<const uint8_t> frame);

// The priority a frame is paused by: its VLAN PCP when it has an 802.1Q
// tag, else its IP DSCP / 8 (the "trust DSCP" mapping of RoCE deployments:
// DSCP 26 is priority 3), else 0.
uint8_t PriorityOf(std::span<const uint8_t> frame);

// Duration of `quanta` pause quanta on a link of `link_bps`.
inline double PauseQuantaNs(uint16_t quanta, double link_bps) { return quanta * 512.0 / link_bps * 1e9; }

}  // namespace fg::proto
