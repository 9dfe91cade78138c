// proto/signature.h: the test signature carried in every test frame.
//
// 16 bytes, big-endian, at the start of the payload: right after the UDP
// header for plain UDP frames, after BTH and its extension headers for
// RoCEv2 (inside the RDMA payload, so the ICRC covers it), after the PDS and
// SES headers for UET:
//
//   offset  bits  field
//   0       16    magic 0xFA6E
//   2        8    flags (kSigFlag*)
//   3       24    flow id (unique across the streams of a run)
//   6       32    sequence number, per flow, wrapping
//   10      48    TX timestamp, ns in the TX clock's timebase, wrapping
//
// The analyzer looks for it only at the offset the headers lead to (see
// FindSignatureOffset), so payload bytes that happen to equal the magic
// elsewhere are never taken for a signature.
//
//   fg::proto::Signature s{.flags = 0, .flow_id = 7, .seq = 1, .tx_ns = now};
//   fg::proto::WriteSignature(frame + off, s);
//   int off = fg::proto::FindSignatureOffset(frame, len);   // -1 when none
//   fg::proto::Signature r = fg::proto::ReadSignature(frame + off);
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "proto/bytes.h"
#include "proto/rx_kind.h"
#include "proto/headers.h"

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

namespace fg::proto {

inline constexpr uint16_t kSignatureMagic = 0xFA6E;
inline constexpr uint32_t kSignatureLen = 16;
inline constexpr uint32_t kMaxFlowId = (1u << 24) - 1;
inline constexpr uint64_t kTimestampMask = (uint64_t{1} << 48) - 1;

// The TX timestamp field holds a valid time.
inline constexpr uint8_t kSigFlagTimestamp = 0x01;

struct Signature {
  uint8_t flags = 0;
  uint32_t flow_id = 0;  // 24 bits
  uint32_t seq = 0;
  uint64_t tx_ns = 0;  // 48 bits kept
};

inline void WriteSignature(uint8_t* p, const Signature& s) {
  Store16(p, kSignatureMagic);
  p[2] = s.flags;
  Store24(p + 3, s.flow_id);
  Store32(p + 6, s.seq);
  Store48(p + 10, s.tx_ns & kTimestampMask);
}

// The per-packet part only: sequence and timestamp (the TX hot path).
inline void StampSignature(uint8_t* p, uint32_t seq, uint64_t tx_ns) {
  Store32(p + 6, seq);
  Store48(p + 10, tx_ns & kTimestampMask);
}

inline Signature ReadSignature(const uint8_t* p) {
  return Signature{p[2], Load24(p + 3), Load32(p + 6), Load48(p + 10)};
}

// Where the test frames of a run put their transport headers.
struct SignatureParse {
  uint16_t roce_port = 4791;
  uint16_t uet_port = 4793;
  uint8_t uet_ip_protocol = 253;  // UET native-IP mode
  uint8_t uet_resp_data_small_len = 12;
  // ClassifyFeedback: a RoCEv2 CNP, ACK, NAK or READ request is taken only
  // with a valid ICRC. False: not read (frames this process built itself,
  // on the built-in loopback: rx::PortDispatch::check_feedback_icrc).
  bool feedback_icrc = true;
};

// Walks Ethernet / up to two VLAN tags / IPv4 (unfragmented) or IPv6 / UDP
// (or UET native IP) / RoCEv2 BTH and extension headers, or UET PDS and SES
// headers, to the start of the payload, and returns the offset of a signature
// there, or -1 when the frame is not a test frame (other protocol, truncated,
// payload too short, no magic) or its headers are none a stream writes: they
// must agree with each other and with the frame's length (the IP packet ends
// inside the frame, followed by Ethernet's padding at most; the UDP length is
// the IP payload's; IPv4 without options; BTH version 0).
//
// What a frame without a signature may still be: congestion and loss
// feedback addressed to one of our flows, or a READ request; or a frame
// whose headers contradict each other or its length, or that is shaped as
// feedback or a signed frame and is not one (kInvalid: counted apart, never
// taken for feedback or for a stream's frame).
struct Feedback {
  // kRoceReadRequest: an RC READ request, which has no payload and so no
  // signature; the responder knows it by its QP and PSN.
  // kInvalid: an IP frame whose lengths contradict each other or the frame
  // (IPv4 total length or IPv6 payload length beyond the frame or short of
  // it, a UDP length other than the IP payload's, a header cut short), a
  // RoCEv2 CNP, ACK, NAK or READ request not shaped as the spec shapes it
  // (its exact length, the CNP's 16 reserved bytes zero, no pad, BTH version
  // 0, a known syndrome, a valid ICRC), or a frame carrying the signature's
  // magic where a payload starts that the walk did not take (IPv4 options,
  // another BTH version, lengths that disagree).
  using Kind = RxKind;  // (kData is never returned: a signed frame is kNone here)
  Kind kind = Kind::kNone;
  uint32_t key = 0;  // RoCEv2: destination QP; UET: DPDCID (the initiator's PDC)
  uint8_t code = 0;  // NAK syndrome code or UET NACK code
  uint32_t psn = 0;  // RoCEv2 ACK, NAK: the BTH PSN (the last PSN acknowledged; a NAK's expected PSN); READ: its PSN
  uint32_t msn = 0;  // RoCEv2 ACK, NAK: the AETH MSN
  bool ce = false;   // the IP header's ECN bits are CE (11)
};
// Off the fast path (frames without a signature): parses the headers again,
// and checks a RoCEv2 answer's ICRC (a CRC over its ~60 bytes).
Feedback ClassifyFeedback(const uint8_t* frame, size_t len, const SignatureParse& opt = {});

// Whether a frame the walk took (its headers consistent) carries a valid
// RoCEv2 ICRC; true for a frame that is not RoCEv2 (nothing to check). A
// responder (endpoint/responder.h) takes no data with a bad one, as a RoCE
// NIC drops it. A CRC over the frame: ~0.1-0.3 TSC cycles a byte with
// PCLMULQDQ, and a copy (proto::IcrcFull).
bool RoceIcrcValid(const uint8_t* frame, size_t len, const SignatureParse& opt = {});

// With `ecn`, also returns the IP header's ECN bits (IPv4 or IPv6); with
// `payload_end`, where the payload ends (before pad and ICRC).
inline int FindSignatureOffset(const uint8_t* frame, size_t len, const SignatureParse& opt = {}, uint8_t* ecn = nullptr,
                               uint32_t* payload_end = nullptr);

// Test payloads after the signature hold a counting pattern: byte i of the
// payload is (i & 0xFF). Returns the number of bytes in [sig + 16, end) that
// differ from it.
uint32_t CountPayloadErrors(const uint8_t* frame, uint32_t sig, uint32_t end);

inline constexpr size_t kRoceBthLen = 12;  // roce::kBthLen, roce::kIcrcLen (roce.h is not needed here)
inline constexpr size_t kRoceIcrcLen = 4;
inline constexpr size_t kUetEntropyHeaderLen = 4;  // uet::kEntropyHeaderLen

namespace internal {
// Whether an IP packet ending at `ip_end` fits a frame of `len` bytes: it
// ends inside the frame. Bytes after it are Ethernet's, not the packet's:
// the padding of a frame under 60 bytes, or a trailer a switch or a tap adds
// (timestamp trailers); a frame with one is as genuine as without (a copy of
// a frame is a duplicate whatever follows it). `tags` is kept for callers.
inline bool IpLengthFits(size_t ip_end, size_t len, size_t /*tags*/) { return ip_end <= len; }
// Offset of the payload from the BTH per RoCEv2 opcode, -1 for none (roce::PayloadOffset).
extern const std::array<int16_t, 256> kRocePayloadOffset;
// Length of the UET PDS + SES headers of a data packet at `p`, 0 if not one.
size_t UetHeadersLen(const uint8_t* p, size_t avail, const SignatureParse& opt);
}  // namespace internal

namespace internal {
// What a walk that records nothing records (FindSignatureOffset).
struct NoLayoutRecord {
  void Byte(size_t, uint8_t) {}
  void Ecn(size_t, uint8_t) {}
  void Uncacheable() {}
  void NoSignature() {}
};
}  // namespace internal

// The walk, telling `rec` every header bit it decided on (Byte(at, mask)),
// where the ECN bits are (Ecn(at, shift)), or that the layout depends on
// more than bytes it can name (Uncacheable: UET's headers). NoSignature:
// the frame has no room for one (a RoCEv2 opcode without a payload, or a
// payload shorter than a signature: ACKs, NAKs, CNPs, READ requests), a
// verdict the recorded bits and the length decide alone.
template <class Rec>
[[gnu::always_inline]] inline int WalkToSignature(const uint8_t* frame, size_t len, const SignatureParse& opt,
                                                  uint8_t* ecn, uint32_t* payload_end, Rec& rec) {
  size_t off = 12;
  if (len < off + 2) return -1;
  uint16_t type = Load16(frame + off);
  rec.Byte(off, 0xFF);
  rec.Byte(off + 1, 0xFF);
  size_t tags = 0;
  for (; tags < 2 && (type == kEtherTypeVlan || type == kEtherTypeQinQ); ++tags) {
    off += 4;
    if (len < off + 2) return -1;
    type = Load16(frame + off);
    rec.Byte(off, 0xFF);
    rec.Byte(off + 1, 0xFF);
  }
  off += 2;
  uint8_t proto;
  size_t l4_end;  // end of the IP packet (frames may carry Ethernet padding)
  if (type == kEtherTypeIpv4) {
    if (len < off + kIpv4HeaderLen) return -1;
    const uint8_t* ip = frame + off;
    rec.Byte(off, 0xFF);
    // Version 4 and no options (IHL 5): no stream of fabricgen sends options,
    // so a header with any (or an IHL that claims some) is none it sent.
    if (ip[0] != 0x45) return -1;
    rec.Byte(off + 6, 0x3F);
    rec.Byte(off + 7, 0xFF);
    if ((Load16(ip + 6) & 0x3FFF) != 0) return -1;  // a fragment (MF set or offset != 0)
    proto = ip[9];
    rec.Byte(off + 9, 0xFF);
    l4_end = off + Load16(ip + 2);
    rec.Byte(off + 2, 0xFF);
    rec.Byte(off + 3, 0xFF);
    if (ecn != nullptr) *ecn = ip[1] & 3;
    rec.Ecn(off + 1, 0);
    off += kIpv4HeaderLen;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + kIpv6HeaderLen) return -1;
    const uint8_t* ip = frame + off;
    rec.Byte(off, 0xF0);
    if ((ip[0] >> 4) != 6) return -1;
    proto = ip[6];
    rec.Byte(off + 6, 0xFF);
    if (ecn != nullptr) *ecn = (ip[1] >> 4) & 3;
    rec.Ecn(off + 1, 4);
    l4_end = off + kIpv6HeaderLen + Load16(ip + 4);
    rec.Byte(off + 4, 0xFF);
    rec.Byte(off + 5, 0xFF);
    off += kIpv6HeaderLen;
  } else {
    return -1;
  }
  // The IP packet ends inside the frame, and what follows it is at most
  // Ethernet's padding to 60 bytes: an IP length beyond the frame (65535, a
  // cut frame) or short of it is no header a stream wrote.
  if (!internal::IpLengthFits(l4_end, len, tags)) return -1;
  size_t payload;
  size_t trailer = 0;
  if (proto == kIpProtoUdp) {
    if (l4_end < off + kUdpHeaderLen) return -1;
    const uint16_t dport = Load16(frame + off + 2);
    rec.Byte(off + 2, 0xFF);
    rec.Byte(off + 3, 0xFF);
    // The UDP length is the IP payload's, exactly (0, under 8 or beyond it: not a datagram anyone sent).
    if (size_t{Load16(frame + off + 4)} != l4_end - off) return -1;
    rec.Byte(off + 4, 0xFF);
    rec.Byte(off + 5, 0xFF);
    off += kUdpHeaderLen;
    if (dport == opt.roce_port) {
      if (l4_end < off + kRoceBthLen) return -1;
      const int at = internal::kRocePayloadOffset[frame[off]];
      rec.Byte(off, 0xFF);
      if (at < 0) {
        rec.NoSignature();
        return -1;
      }
      payload = off + static_cast<size_t>(at);
      trailer = kRoceIcrcLen + ((frame[off + 1] >> 4) & 3);  // ICRC + pad
      rec.Byte(off + 1, 0x3F);
      if ((frame[off + 1] & 0x0F) != 0) return -1;  // BTH TVer: 0 is the only version
    } else if (dport == opt.uet_port) {
      rec.Uncacheable();
      const size_t h = internal::UetHeadersLen(frame + off, l4_end - off, opt);
      if (h == 0) return -1;
      payload = off + h;
    } else {
      payload = off;
    }
  } else if (proto == opt.uet_ip_protocol) {
    rec.Uncacheable();
    off += kUetEntropyHeaderLen;
    if (l4_end < off) return -1;
    const size_t h = internal::UetHeadersLen(frame + off, l4_end - off, opt);
    if (h == 0) return -1;
    payload = off + h;
  } else {
    return -1;
  }
  if (l4_end < payload + kSignatureLen + trailer) {
    rec.NoSignature();
    return -1;
  }
  if (Load16(frame + payload) != kSignatureMagic) return -1;
  if (payload_end != nullptr) *payload_end = static_cast<uint32_t>(l4_end - trailer);
  return static_cast<int>(payload);
}

inline int FindSignatureOffset(const uint8_t* frame, size_t len, const SignatureParse& opt, uint8_t* ecn,
                               uint32_t* payload_end) {
  internal::NoLayoutRecord none;
  return WalkToSignature(frame, len, opt, ecn, payload_end, none);
}

// FindSignatureOffset for a stream of frames, one RX queue's: it remembers
// the header layout of the last test frame it walked (every header bit the
// walk decided on, all within the frame's first 64 bytes, and the frame's
// length) and, for a frame of the same length whose bits are the same,
// gives the same answer from one masked compare of those 64 bytes and the
// magic, instead of the walk. Any other frame is walked (and, if it is a
// test frame, its layout remembered). The answer is always the walk's
// (test/unit/proto/signature_test.cc compares them on mutated frames).
// UET layouts, and frames under 64 bytes, are always walked.
// kVector: the compare in SSE4.1 (the build's default where the target has
// it), else in 64-bit words; the test runs both.
#if defined(__SSE4_1__)
inline constexpr bool kSignatureVector = true;
#else
inline constexpr bool kSignatureVector = false;
#endif
template <bool kVector = kSignatureVector>
class BasicSignatureFinder {
  static_assert(!kVector || kSignatureVector, "the vector compare needs SSE4.1");

 public:
  static constexpr size_t kWindow = 64;
  static constexpr size_t kNoWindow = 48;  // the kept layout of a frame without room for a signature
  explicit BasicSignatureFinder(const SignatureParse& opt = {}) : opt_(opt) {}

  // What Find returns: the signature's offset (-1: none), where the payload
  // ends, the IP header's ECN bits (0 when the frame has no IP header).
  struct At {
    int32_t offset = -1;
    uint32_t payload_end = 0;
    uint8_t ecn = 0;
  };
  // By value, not through pointers: a store through a uint8_t* may alias
  // anything, and the RX loop's other loads would be repeated after it.
  [[gnu::always_inline]] At Find(const uint8_t* frame, size_t len) {
    if (len == len_ && SameLayout(frame)) {
      const auto ecn = static_cast<uint8_t>((frame[ecn_at_] >> ecn_shift_) & 3);
      if (Load16(frame + sig_) != kSignatureMagic) return At{-1, 0, ecn};
      return At{sig_, end_, ecn};
    }
    return FindOther(frame, len);
  }
  // Frames that took the walk (neither kept layout answered): tests.
  uint64_t walks() const { return walks_; }

 private:
  struct Record {
    uint8_t mask[kWindow] = {};
    size_t ecn_at = 0;
    uint8_t ecn_shift = 0;
    bool cacheable = true;
    void Byte(size_t at, uint8_t m) {
      if (at < kWindow) {
        mask[at] |= m;
      } else {
        cacheable = false;
      }
    }
    void Ecn(size_t at, uint8_t shift) {
      ecn_at = at;
      ecn_shift = shift;
      if (at >= kWindow) cacheable = false;
    }
    void Uncacheable() { cacheable = false; }
    void NoSignature() { no_signature = true; }
    bool no_signature = false;
  };

  // Whether every bit of mask_ is the same in the frame as in value_.
  bool SameLayout(const uint8_t* frame) const {
#if defined(__SSE4_1__)
    if constexpr (kVector) {
      __m128i diff = _mm_setzero_si128();
      for (size_t k = 0; k < kWindow / 16; ++k) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(frame + 16 * k));
        const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(value_ + 16 * k));
        const __m128i m = _mm_load_si128(reinterpret_cast<const __m128i*>(mask_ + 16 * k));
        diff = _mm_or_si128(diff, _mm_and_si128(_mm_xor_si128(v, x), m));
      }
      return _mm_testz_si128(diff, diff) != 0;
    }
#endif
    return MaskedEqual(frame, mask_, value_, kWindow);
  }

  // Whether every bit of `mask` is the same in the frame's first n bytes (a
  // multiple of 8) as in `value`, 64 bits at a time.
  static bool MaskedEqual(const uint8_t* frame, const uint8_t* mask, const uint8_t* value, size_t n) {
    uint64_t diff = 0;
    for (size_t w = 0; w < n / 8; ++w) {
      uint64_t v, m, x;
      std::memcpy(&v, frame + 8 * w, 8);
      std::memcpy(&m, mask + 8 * w, 8);
      std::memcpy(&x, value + 8 * w, 8);
      diff |= (v ^ x) & m;
    }
    return diff == 0;
  }

  // Whether every bit of no_mask_ is the same in the frame as in no_value_
  // (the first kNoWindow bytes: an ACK over IPv4 is 62 B).
  bool SameNoLayout(const uint8_t* frame) const { return MaskedEqual(frame, no_mask_, no_value_, kNoWindow); }

  // Off the fast path: a frame of another layout than the last test
  // frame's. The last frame with no room for a signature (a closed loop's
  // ACKs, between its data) is kept as well: one of its layout has none
  // either, without a walk (the walk was 4.5 % of a collective's lcore time,
  // most of it its ACKs; kept: the collective 1.08x, the open loopback
  // 1.007x: docs/benchmarks.md "The layout of frames without a signature").
  [[gnu::noinline]] At FindOther(const uint8_t* frame, size_t len) {
    if (len == no_len_ && SameNoLayout(frame)) {
      return At{-1, 0, static_cast<uint8_t>((frame[no_ecn_at_] >> no_ecn_shift_) & 3)};
    }
    return Walk(frame, len);
  }

  At Walk(const uint8_t* frame, size_t len) {
    ++walks_;
    Record rec;
    uint32_t end = 0;
    uint8_t ecn = 0;
    const int sig = WalkToSignature(frame, len, opt_, &ecn, &end, rec);
    if (sig < 0) {
      // Not a test frame: the layout kept is the last test frame's; one
      // decided by its header bits and length alone (no room for a
      // signature), within the first kNoWindow bytes, is kept apart.
      if (rec.no_signature && rec.cacheable && len >= kNoWindow && rec.ecn_at < kNoWindow &&
          std::all_of(rec.mask + kNoWindow, rec.mask + kWindow, [](uint8_t m) { return m == 0; })) {
        for (size_t b = 0; b < kNoWindow; ++b) no_value_[b] = frame[b] & rec.mask[b];
        std::memcpy(no_mask_, rec.mask, kNoWindow);
        no_len_ = len;
        no_ecn_at_ = static_cast<uint32_t>(rec.ecn_at);
        no_ecn_shift_ = rec.ecn_shift;
      }
      return At{-1, 0, ecn};
    }
    if (rec.cacheable && len >= kWindow) {
      uint8_t value[kWindow];
      for (size_t b = 0; b < kWindow; ++b) value[b] = frame[b] & rec.mask[b];
      std::memcpy(mask_, rec.mask, kWindow);
      std::memcpy(value_, value, kWindow);
      len_ = len;
      sig_ = sig;
      end_ = end;
      ecn_at_ = static_cast<uint32_t>(rec.ecn_at);
      ecn_shift_ = rec.ecn_shift;
    }
    return At{sig, end, ecn};
  }

  SignatureParse opt_;
  size_t len_ = SIZE_MAX;  // no layout kept: no frame is that long
  alignas(16) uint8_t mask_[kWindow] = {};
  alignas(16) uint8_t value_[kWindow] = {};
  int sig_ = -1;
  uint32_t end_ = 0;
  uint32_t ecn_at_ = 0;
  uint8_t ecn_shift_ = 0;
  // The last frame without room for a signature: its layout (FindOther).
  size_t no_len_ = SIZE_MAX;
  alignas(16) uint8_t no_mask_[kNoWindow] = {};
  alignas(16) uint8_t no_value_[kNoWindow] = {};
  uint32_t no_ecn_at_ = 0;
  uint8_t no_ecn_shift_ = 0;
  uint64_t walks_ = 0;
};

using SignatureFinder = BasicSignatureFinder<>;

}  // namespace fg::proto
