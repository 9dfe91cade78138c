// base/units.h: quantities with units, parsed from plan text and printed
// back with their unit, so no number in a report or a summary is bare.
//
// Conventions (docs/plan-reference.md repeats them for users):
//  - Frame sizes are Ethernet frames including the 4-byte FCS (RFC 2544).
//  - Bit rates: "Gbps" counts frame bits (L2, FCS included); "Gbps L1" also
//    counts the 20 bytes of preamble, start delimiter and inter-frame gap per
//    frame. "50%" is a fraction of the port's line rate, which is an L1 rate.
//  - Byte sizes: KB/MB/GB are powers of 1000, KiB/MiB/GiB powers of 1024.
//  - "max" is no pacing at all: bursts as fast as the port accepts them.
//
//   auto r = fg::ParseRate("10 Mpps");        // Rate{kPps, 1e7}
//   auto d = fg::ParseDuration("250ms");      // 250'000'000 ns
//   std::string s = fg::FormatBitRate(9.95e9); // "9.950 Gbit/s"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace fg {

// Per-frame overhead on the wire beyond the frame: preamble 7 + SFD 1 + IFG 12.
// The one L1 overhead of the code base.
inline constexpr uint32_t kEthL1Overhead = 20;
inline constexpr uint32_t kEthFcsLen = 4;

// The one line-rate check: whether an L1 rate is above a port's line rate,
// beyond the rounding of rates derived from that line rate (1 ppm: a stream
// set to 100 % of the line passes, one frame per second more on a 100 Gbit/s
// port of 64 B frames does not).
inline constexpr double kLineRateTolerance = 1e-6;
inline bool AboveLineRate(double l1_bps, double line_bps) { return l1_bps > line_bps * (1 + kLineRateTolerance); }

// The lowest paced rate: the TX pacer keeps one packet's interval in TSC
// ticks << 12 in 64 bits (lib/tx), which 0.001 pps (1000 s per packet) keeps
// far from overflowing at any TSC frequency below 4 THz.
inline constexpr double kMinPps = 0.001;
// The highest rates taken: ports run at most 1.6 Tbit/s (ports[].link_speed),
// 2.4 Gpps of 64 B frames; ten times that is a bound no plan meant to pass,
// below which every figure prints in a few digits.
inline constexpr double kMaxPps = 1e10;  // 10 Gpps
inline constexpr double kMaxBps = 1e13;  // 10 Tbit/s

struct Rate {
  enum class Kind { kPps, kBpsL2, kBpsL1, kPercentLine, kMax };  // kMax: unpaced, as fast as the port takes
  Kind kind = Kind::kPps;
  double value = 0;  // packets/s, bit/s, or percent (0..100]

  // Packets per second for frames of `frame_size` bytes (FCS included) on a
  // port whose line rate is `line_bps` (L1).
  double ToPps(double frame_size, double line_bps) const;
};

absl::StatusOr<Rate> ParseRate(std::string_view text);
// Nanoseconds; accepts ns, us, ms, s, min, h ("1.5 s", "250ms").
absl::StatusOr<int64_t> ParseDuration(std::string_view text);
// Bytes; accepts B, KB, MB, GB (x1000) and KiB, MiB, GiB (x1024).
absl::StatusOr<uint64_t> ParseBytes(std::string_view text);

std::string FormatRate(const Rate& r);
std::string FormatBitRate(double bps);     // "9.950 Gbit/s"
std::string FormatPacketRate(double pps);  // "1.234 Mpps"
std::string FormatDuration(int64_t ns);    // "1.500 s", "250.000 ms"
std::string FormatCount(uint64_t n);       // "1,234,567"

}  // namespace fg
