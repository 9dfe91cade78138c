// proto/icrc.h: the RoCEv2 invariant CRC, computed two ways.
//
// ICRC = CRC-32 (IEEE 802.3, as zlib) over 8 bytes of 0xFF, then the IP
// header with its variant fields set to ones (IPv4: TOS, TTL, checksum;
// IPv6: traffic class, flow label, hop limit), the UDP header with checksum
// 0xFFFF, the BTH with byte 4 (FECN, BECN, reserved) 0xFF, and everything
// after it up to the ICRC. Stored least-significant byte first.
//
// 1. IcrcFull: the whole pass, through DPDK's rte_net_crc (PCLMULQDQ or AVX512
//    folding). Needs no EAL.
// 2. IcrcDelta: CRC is affine, so for frames of one template that differ only
//    at a few known byte positions, ICRC(frame) = ICRC(template) xor the
//    contribution of each changed byte, read from a 256-entry table per
//    position: a handful of loads per packet instead of a pass over it.
//    Field<N>() takes the new value itself, so a writer that knows what it
//    stores never reads the frame back.
//
//   fg::proto::IcrcLayout l{.l3_offset = 14, .ipv6 = false, .icrc_offset = len - 4};
//   uint32_t crc = fg::proto::IcrcFull(frame, l);
//   fg::proto::IcrcDelta delta(frame, l, {psn_off, psn_off + 1, psn_off + 2});
//   ... change the PSN bytes ...
//   fg::proto::StoreIcrc(frame + l.icrc_offset, delta.Compute(frame));
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace fg::proto {

struct IcrcLayout {
  uint32_t l3_offset = 14;   // where the IP header starts in the frame
  bool ipv6 = false;         // selects the masked fields
  uint32_t icrc_offset = 0;  // where the 4 ICRC bytes go (end of payload + pad)
};

// Full computation (rte_net_crc, fastest path the CPU allows).
uint32_t IcrcFull(const uint8_t* frame, const IcrcLayout& layout);
// Bit-by-bit reference, independent of DPDK and zlib: for tests and fuzzers.
uint32_t IcrcReference(const uint8_t* frame, const IcrcLayout& layout);

inline void StoreIcrc(uint8_t* p, uint32_t crc) {
  // Least-significant byte first: one store on a little-endian host.
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &crc, 4);
  } else {
    p[0] = static_cast<uint8_t>(crc);
    p[1] = static_cast<uint8_t>(crc >> 8);
    p[2] = static_cast<uint8_t>(crc >> 16);
    p[3] = static_cast<uint8_t>(crc >> 24);
  }
}
inline uint32_t LoadIcrc(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

class IcrcDelta {
 public:
  IcrcDelta() = default;
  // `positions` are frame offsets inside the ICRC coverage (and not masked)
  // whose bytes may differ from `tmpl` in later frames.
  IcrcDelta(const uint8_t* tmpl, const IcrcLayout& layout, std::span<const uint32_t> positions);

  // ICRC of `frame`, equal to the template outside the registered positions.
  // Four independent accumulators keep the table loads from queueing behind
  // one XOR chain (measured: docs/benchmarks.md).
  uint32_t Compute(const uint8_t* frame) const {
    uint32_t a = base_, b = 0, c = 0, d = 0;
    const uint32_t* t = tables_.data();
    const size_t n = pos_.size();
    size_t i = 0;
    for (; i + 4 <= n; i += 4, t += 1024) {
      a ^= t[frame[pos_[i]]];
      b ^= t[256 + frame[pos_[i + 1]]];
      c ^= t[512 + frame[pos_[i + 2]]];
      d ^= t[768 + frame[pos_[i + 3]]];
    }
    for (; i < n; ++i, t += 256) a ^= t[frame[pos_[i]]];
    return a ^ b ^ c ^ d;
  }
  // The raw contribution of new values at the registered positions, given in
  // registration order (no frame needed): the ICRC change those bytes make.
  uint32_t Delta(std::span<const uint8_t> values) const {
    uint32_t x = 0;
    for (size_t i = 0; i < pos_.size() && i < values.size(); ++i) x ^= tables_[i * 256 + values[i]];
    return x;
  }
  // The change an N-byte big-endian field makes when it holds `value` at the
  // registered positions first .. first+N-1: N table loads, no frame read
  // (the TX path knows the values it writes).
  template <int N>
  uint32_t Field(size_t first, uint64_t value) const {
    const uint32_t* t = tables_.data() + first * 256;
    uint32_t x = 0;
    for (int j = 0; j < N; ++j) x ^= t[j * 256 + ((value >> (8 * (N - 1 - j))) & 0xFF)];
    return x;
  }
  uint32_t base() const { return base_; }
  const uint32_t* tables() const { return tables_.data(); }
  size_t num_positions() const { return pos_.size(); }

 private:
  uint32_t base_ = 0;
  std::vector<uint32_t> pos_;
  // 256 per position: the change byte value v makes there in place of the
  // template's byte (0 for the template's own value; all 0 where the byte is
  // masked or outside the coverage).
  std::vector<uint32_t> tables_;
};

}  // namespace fg::proto
