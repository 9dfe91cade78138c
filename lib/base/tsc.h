// base/tsc.h: the CPU timestamp counter as a clock in nanoseconds.
//
// Converting ticks to ns takes one 64x64->128 multiply and a shift, no
// division, so the TX hot path can stamp ns per packet.
//
//   fg::TscClock clk(rte_get_tsc_hz());
//   uint64_t ns = clk.ToNs(fg::ReadTsc());
//   uint64_t ticks = clk.FromNs(1'000'000);  // 1 ms in ticks
#pragma once

#include <x86intrin.h>

#include <cstdint>

namespace fg {

inline uint64_t ReadTsc() { return __rdtsc(); }

class TscClock {
 public:
  explicit TscClock(uint64_t hz = 1'000'000'000)
      : hz_(hz), mult_(static_cast<uint64_t>((static_cast<unsigned __int128>(1'000'000'000) << 32) / hz)) {}
  uint64_t hz() const { return hz_; }
  uint64_t ToNs(uint64_t ticks) const {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(ticks) * mult_) >> 32);
  }
  uint64_t FromNs(uint64_t ns) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * hz_ / 1'000'000'000);
  }

 private:
  uint64_t hz_;
  uint64_t mult_;  // ns per tick in 32.32 fixed point
};

}  // namespace fg
