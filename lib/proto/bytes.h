// proto/bytes.h: big-endian (network order) loads and stores on byte spans.
//
//   uint8_t hdr[4];
//   fg::proto::Store16(hdr, 0x0800);
//   uint16_t type = fg::proto::Load16(hdr);  // 0x0800
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace fg::proto {

// One load or store and a byte swap each (memcpy of a fixed size compiles to
// plain moves): the per-packet stamps and the RX parse use these. The 24- and
// 48-bit ones are built from 16- and 32-bit moves: a 3- or 6-byte memcpy
// into a zeroed local compiles to narrow stores and a wide reload of the
// same stack slot, which store forwarding cannot serve (a 10-15 cycle stall
// each; two per received frame cost the RX loop ~25 cycles a frame).
inline uint16_t Load16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline uint32_t Load24(const uint8_t* p) { return uint32_t{Load16(p)} << 8 | p[2]; }
inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t Load48(const uint8_t* p) { return uint64_t{Load16(p)} << 32 | Load32(p + 2); }
inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

inline void Store16(uint8_t* p, uint16_t v) {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void Store24(uint8_t* p, uint32_t v) {  // the low 24 bits of v
  Store16(p, static_cast<uint16_t>(v >> 8));
  p[2] = static_cast<uint8_t>(v);
}
// The low 24 bits of v big-endian at p, and `lead` (the byte already at
// p - 1) rewritten before them: one 4-byte store instead of two (a field of
// 3 bytes behind a byte that does not change, as the BTH's QP and PSN are).
inline void Store24Lead(uint8_t* p, uint8_t lead, uint32_t v) {
  const uint32_t w = __builtin_bswap32(v & 0xFFFFFF) | lead;  // little-endian memory: lead, then v's 3 bytes
  static_assert(std::endian::native == std::endian::little);
  std::memcpy(p - 1, &w, 4);
}
inline void Store32(uint8_t* p, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void Store48(uint8_t* p, uint64_t v) {  // the low 48 bits of v
  Store16(p, static_cast<uint16_t>(v >> 32));
  Store32(p + 2, static_cast<uint32_t>(v));
}
inline void Store64(uint8_t* p, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

}  // namespace fg::proto
