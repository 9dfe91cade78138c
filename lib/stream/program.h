// stream/program.h: the per-packet program of one flow: templates + stamping.
//
// A Program holds one frame template per packet kind of a message (ONLY, or
// FIRST / MIDDLE / LAST) and the offsets of every field that changes from
// packet to packet: signature sequence and TX time, PSN, RoCE MSN, UET
// message id / offset / SYN psn_offset, and the entropy (UDP source port or
// UET entropy header). Emit() copies the template, writes those fields and
// updates the RoCE ICRC incrementally. The TX lcore and `fabricgen craft`
// both call Emit(), so what craft writes is what TX sends.
//
//   auto p = fg::stream::Program::Compile(plan.streams[0].frame, /*flow_id=*/0);
//   fg::stream::Cursor c = p->Start();
//   uint8_t buf[9216];
//   uint32_t len = p->Emit(buf, c, /*tx_ns=*/0);   // first packet; c now points at the second
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "config/frame_spec.h"
#include "proto/bytes.h"
#include "proto/frame.h"
#include "proto/icrc.h"
#include "proto/signature.h"

namespace fg::stream {

// Copies a template in 32-byte blocks, inline: may write up to 31 bytes past
// `len` into `dst` (mbufs and craft buffers have that room: kCopySlack) and
// reads past the template's bytes (templates are padded by as much).
inline constexpr uint32_t kCopySlack = 32;
// Large frames go through the C library's memcpy (wider vectors than the
// SSE4.2 baseline DPDK's pkg-config flags allow here).
inline void CopyTemplate(uint8_t* dst, const uint8_t* src, uint32_t len) {
  if (len > 256) {
    std::memcpy(dst, src, len);
    return;
  }
  for (uint32_t i = 0; i < len; i += 32) __builtin_memcpy(dst + i, src + i, 32);
}

struct PacketKind {
  proto::FrameTemplate t;
  proto::IcrcDelta icrc;          // per-packet fields (sequence, timestamp, PSN, MSN, sprayed entropy)
  proto::IcrcDelta flow_icrc;     // per-flow constants (flow id, key, fixed entropy), folded into FlowVars
  std::vector<uint8_t> copy_src;  // t.bytes + kCopySlack zero bytes, for CopyTemplate
  bool icrc_on = false;
  uint32_t icrc_xor = 0;  // 0xFFFFFFFF: deliberately wrong ICRC
  int32_t psn_off = -1;
  uint8_t psn_len = 0;                       // 3 (BTH) or 4 (PDS)
  int32_t msn_off = -1;                      // AETH MSN, 24 bits: message number
  int32_t msg_id_off = -1;                   // UET SES message_id, 16 bits: message number
  int32_t msg_offset_off = -1;               // UET SES message_offset, 32 bits
  int32_t syn_off = -1;                      // UET pdc_info | psn_offset, 16 bits
  int32_t entropy_off = -1;                  // UDP source port or UET entropy header, 16 bits
  uint16_t syn_high = 0;                     // pdc_info << 12
  int32_t key_off = -1;                      // the field that tells flows apart: RoCE dest QP (24 bits),
  uint8_t key_len = 0;                       // UET SPDCID (16), UDP destination port (16)
  int32_t src_ip_off = -1, dst_ip_off = -1;  // last 4 bytes of an address that varies per flow
  int32_t ip_csum_off = -1;                  // IPv4 header checksum, when an address varies
  bool vary_addresses = false;               // any of the three above
  // Where each per-packet field's bytes sit among `icrc`'s positions (-1: not stamped).
  int32_t icrc_seq = -1, icrc_ts = -1, icrc_psn = -1, icrc_msn = -1, icrc_entropy = -1;
  uint8_t index = 0;  // in Program::kinds()
  uint32_t shape = 0;  // the shape:: bits of the fields above that are set
  uint8_t key_lead = 0, psn_lead = 0, fid_lead = 0;  // the template's byte before the key, PSN, flow id
};

// The part of a stamp shared by a burst: the TX time and, per packet kind,
// the ICRC change it makes (6 table loads per burst, not per packet).
struct StampTime {
  uint64_t ns = 0;
  uint32_t icrc[3] = {};
  // The signature's 48-bit TX time as its bytes go into the frame (two
  // stores, no byte swap per packet): bytes 0-1 and 2-5.
  uint16_t ts_hi_be = 0;
  uint32_t ts_lo_be = 0;
};

// Everything Stamp reads of a packet kind and of its program, by value. A
// store into a frame (a uint8_t*) may alias any memory the compiler cannot
// prove apart, so Stamp reading these through `k` or `this` loads them again
// for every frame; a caller stamping a burst of one kind keeps them in a local
// (Program::Consts), which no frame store can alias, and they stay in
// registers. Table pointers are taken when the consts are made: valid while
// the Program lives.
struct StampConsts {
  const uint32_t* icrc_tables = nullptr;  // the kind's IcrcDelta tables, 256 per position
  uint32_t icrc_fixed = 0;                // IcrcDelta::base() ^ icrc_xor ^ the TX time's share
  int32_t sig_off = -1, key_off = -1, psn_off = -1, msn_off = -1, msg_id_off = -1, msg_offset_off = -1,
          syn_off = -1, entropy_off = -1, icrc_off = -1, src_ip_off = -1, dst_ip_off = -1, ip_csum_off = -1;
  int32_t icrc_seq = -1, icrc_psn = -1, icrc_msn = -1, icrc_entropy = -1;
  uint32_t shape = 0;
  uint16_t syn_high = 0;
  uint8_t index = 0;
  // The template's byte before the QP, the PSN and the flow id (BTH bytes 4
  // and 8, the signature's version): rewritten with them (Store24Lead).
  uint8_t key_lead = 0, psn_lead = 0, fid_lead = 0;
  bool entropy_random = false;
  uint32_t msg_packets = 1, psn_start = 0, psn_step = 1, psn_mask = 0, entropy_count = 1, msg_offset_unit = 0;
  uint64_t flowlet_gap_ns = 0;
};

// What a flow's key is (Program::key_base): a RoCEv2 QP, a UET PDC or a UDP
// port; the feedback that names one (CNP, ACK, NAK: a QP; NACK: a PDC) is
// routed by (kind, key) to the flow's owner (rx::PortDispatch).
enum class KeyKind : uint8_t { kNone, kRoceQp, kUetPdc, kUdpPort };

// Which per-packet fields a packet kind stamps: Stamp<kShape> is compiled
// once per common shape with only those fields (no per-frame test of every
// optional field), and once as kAnyShape testing each at run time.
namespace shape {
inline constexpr uint32_t kSig = 1u << 0, kKey3 = 1u << 1, kKey2 = 1u << 2, kPsn3 = 1u << 3, kPsn4 = 1u << 4,
                          kMsn = 1u << 5, kMsgId = 1u << 6, kMsgOffset = 1u << 7, kSyn = 1u << 8,
                          kEntropy = 1u << 9, kVary = 1u << 10, kIcrc = 1u << 11, kIcrcSeq = 1u << 12,
                          kIcrcPsn = 1u << 13, kIcrcMsn = 1u << 14, kIcrcEntropy = 1u << 15, kUdpCsum = 1u << 16;
// RoCEv2 (always UDP, so its source port, the entropy, is stamped per flow or
// per packet), one packet per message or several (when every kind of the
// message has the same shape); sprayed: the entropy changes per packet.
inline constexpr uint32_t kRoceEntropy = kSig | kKey3 | kPsn3 | kEntropy | kIcrc | kIcrcSeq | kIcrcPsn;
inline constexpr uint32_t kRoceSprayed = kRoceEntropy | kIcrcEntropy;
// A collective's QPs (stream/cell_frames.h): the same with the ranks'
// addresses stamped per QP.
inline constexpr uint32_t kRoceCell = kRoceEntropy | kVary;
inline constexpr uint32_t kRoceCellSprayed = kRoceSprayed | kVary;
// A responder's ACK or NAK (stream/answers.h): no signature, the requester's
// QP, PSN and MSN (AETH) per answer.
inline constexpr uint32_t kRoceAnswer = kKey3 | kPsn3 | kMsn | kEntropy | kIcrc | kIcrcPsn | kIcrcMsn;
inline constexpr uint32_t kRoceCellAnswer = kRoceAnswer | kVary;  // a collective's (the ranks' addresses per QP)
inline constexpr uint32_t kAnyShape = ~0u;  // test each field at run time
}  // namespace shape

// What differs between the flows of one stream (fixed per flow).
struct FlowVars {
  uint32_t flow_id = 0;             // in the signature
  uint32_t key = 0;                 // QP, PDC id or UDP port
  uint16_t entropy_base = 0;        // the flow's UDP source port (first of its spray set)
  uint32_t src_ip = 0, dst_ip = 0;  // last 32 bits of the addresses, when they vary per flow
  uint16_t ip_csum[3] = {};         // per packet kind: the IPv4 header checksum with those addresses
  uint32_t icrc[3] = {};            // per packet kind: the ICRC change the flow's constants make
};

// Where a flow stands; the TX lcore keeps one per flow.
struct Cursor {
  uint32_t seq = 0;  // signature sequence number
  uint32_t psn = 0;
  uint32_t pos = 0;           // packet index inside the current message
  uint32_t entropy = 0;       // index of the entropy value
  uint64_t message = 0;       // messages completed
  uint32_t rng = 0x9E3779B9;  // xorshift32 state for random entropy
  uint32_t flowlet = 0;       // flowlet entropy: the current value's index
  uint64_t last_ns = 0;       // flowlet entropy: when the flow last sent
  // The ICRC change of the sequence's and the PSN's bytes but their lowest,
  // for the packet kind and high bytes in icrc_key: the fixed shapes then
  // look up only the two low bytes per packet (Stamp). Checked against the
  // values on every use, so whatever moves seq or psn (Seek) needs no care.
  uint64_t icrc_key = ~uint64_t{0};
  uint32_t icrc_high = 0;
};

class Program {
 public:
  static absl::StatusOr<Program> Compile(const config::FrameSpec& frame, uint32_t flow_id);

  // The fixed fields of flow `index` (0-based) of a stream whose first flow id
  // is `first_flow_id`: consecutive keys from the frame's QP / PDC / port, and
  // with entropy mode `fixed` a source port of its own per flow.
  FlowVars Flow(uint32_t first_flow_id, uint32_t index) const {
    FlowVars a;
    FlowAddresses(a, index);
    return FlowWith(first_flow_id + index, key_base_ + index, index, a.src_ip, a.dst_ip);
  }
  // Fills v's addresses: base + index where the frame varies them.
  void FlowAddresses(FlowVars& v, uint32_t index) const;
  // A flow whose fixed fields are given, not counted from flow 0's (a
  // collective's QP between two ranks): flow id, key, the entropy's index
  // (fixed mode: the source port's offset) and the last 32 bits of its
  // addresses where the frame varies them (vary_src_ip / vary_dst_ip).
  FlowVars FlowWith(uint32_t flow_id, uint32_t key, uint32_t entropy_index, uint32_t src_ip, uint32_t dst_ip) const;

  // Fills v.icrc from the flow's constant bytes (flow id, key, fixed entropy).
  void FoldFlowIcrc(FlowVars& v) const;
  // Fills v.ip_csum from v's addresses (IPv4 frames that vary one).
  void FlowChecksums(FlowVars& v) const;

  Cursor Start() const {
    Cursor c;
    c.psn = psn_start_;
    return c;
  }
  // Points `c` at the flow's packet `seq` (a go-back-N resend): its PSN, its
  // place in its message and its round-robin entropy follow; random and
  // flowlet entropy go on from where they are.
  void Seek(Cursor& c, uint32_t seq) const {
    c.seq = seq;
    c.psn = (psn_start_ + seq * psn_step_) & psn_mask_;
    c.pos = msg_packets_ == 1 ? 0 : seq % msg_packets_;
    c.message = msg_packets_ == 1 ? seq : seq / msg_packets_;
    c.entropy = entropy_count_ == 1 ? 0 : seq % entropy_count_;
  }
  // Seek() to the flow's packet `index` (its PSN, message place and
  // entropy) keeping `c`'s sequence: a READ responder numbers the responses
  // it sends contiguously whichever requests they answer.
  void SeekPacket(Cursor& c, uint32_t index) const {
    const uint32_t seq = c.seq;
    Seek(c, index);
    c.seq = seq;
  }
  // Frame bytes (FCS included) of a flow's first n packets.
  uint64_t BytesOfFirst(uint64_t n) const {
    if (msg_packets_ == 1) return n * kinds_[0].t.frame_size();
    const uint64_t first = kinds_[0].t.frame_size(), middle = kinds_[1].t.frame_size(), last = kinds_[2].t.frame_size();
    const uint64_t message = first + (msg_packets_ - 2) * middle + last;
    const uint64_t r = n % msg_packets_;  // packets of the message under way: first, then middles (never its last)
    return n / msg_packets_ * message + (r == 0 ? 0 : first + (r - 1) * middle);
  }

  // Writes the next packet of `c` into `dst` (room for max_frame_len()),
  // advances `c`, and returns the packet's length without FCS.
  inline uint32_t Emit(uint8_t* dst, Cursor& c, uint64_t tx_ns) const { return Emit(dst, c, tx_ns, flow0_); }
  inline uint32_t Emit(uint8_t* dst, Cursor& c, uint64_t tx_ns, const FlowVars& v) const;
  // Emit for a program of shape `kShape` (shape() == kShape) that stamps no
  // time (no signature): Stamp<kShape>, and no StampTime to compute.
  template <uint32_t kShape>
  inline uint32_t EmitUntimed(uint8_t* dst, Cursor& c, const FlowVars& v) const;
  // The template of the packet `c` points at.
  const PacketKind& KindAt(const Cursor& c) const {
    return kinds_[msg_packets_ == 1 ? 0 : (c.pos == 0 ? 0 : (c.pos + 1 == msg_packets_ ? 2 : 1))];
  }
  // The TX time every packet of a burst carries.
  StampTime Time(uint64_t tx_ns) const {
    StampTime t;
    t.ns = tx_ns;
    t.ts_hi_be = __builtin_bswap16(static_cast<uint16_t>((tx_ns & proto::kTimestampMask) >> 32));
    t.ts_lo_be = __builtin_bswap32(static_cast<uint32_t>(tx_ns));
    for (size_t i = 0; i < kinds_.size() && i < 3; ++i) {
      const PacketKind& k = kinds_[i];
      if (k.icrc_ts >= 0) t.icrc[i] = k.icrc.Field<6>(k.icrc_ts, tx_ns & proto::kTimestampMask);
    }
    return t;
  }
  // Emit() without the template copy: rewrites the per-packet fields and the
  // ICRC of `dst`, which must already hold KindAt(c)'s template bytes.
  // `kShape`: k.shape (all kinds of this program have it: shape()), or kAnyShape.
  template <uint32_t kShape = shape::kAnyShape>
  inline void Stamp(uint8_t* dst, const PacketKind& k, Cursor& c, const StampTime& t, const FlowVars& v) const {
    StampWith<kShape>(dst, Consts(k, t), k, c, t, v);
  }
  // Stamp with `sc` = Consts(k, t) made by the caller: once per burst of one kind.
  template <uint32_t kShape = shape::kAnyShape>
  inline void StampWith(uint8_t* dst, const StampConsts& sc, const PacketKind& k, Cursor& c, const StampTime& t,
                        const FlowVars& v) const;
  StampConsts Consts(const PacketKind& k, const StampTime& t) const {
    StampConsts sc;
    sc.icrc_tables = k.icrc.tables();
    sc.icrc_fixed = k.icrc.base() ^ k.icrc_xor ^ t.icrc[k.index];
    sc.key_lead = k.key_lead;
    sc.psn_lead = k.psn_lead;
    sc.fid_lead = k.fid_lead;
    sc.sig_off = k.t.signature_offset;
    sc.key_off = k.key_off;
    sc.psn_off = k.psn_off;
    sc.msn_off = k.msn_off;
    sc.msg_id_off = k.msg_id_off;
    sc.msg_offset_off = k.msg_offset_off;
    sc.syn_off = k.syn_off;
    sc.entropy_off = k.entropy_off;
    sc.icrc_off = k.t.icrc_offset;
    sc.src_ip_off = k.src_ip_off;
    sc.dst_ip_off = k.dst_ip_off;
    sc.ip_csum_off = k.ip_csum_off;
    sc.icrc_seq = k.icrc_seq;
    sc.icrc_psn = k.icrc_psn;
    sc.icrc_msn = k.icrc_msn;
    sc.icrc_entropy = k.icrc_entropy;
    sc.shape = k.shape;
    sc.syn_high = k.syn_high;
    sc.index = k.index;
    sc.entropy_random = entropy_random_;
    sc.msg_packets = msg_packets_;
    sc.psn_start = psn_start_;
    sc.psn_step = psn_step_;
    sc.psn_mask = psn_mask_;
    sc.entropy_count = entropy_count_;
    sc.msg_offset_unit = msg_offset_unit_;
    sc.flowlet_gap_ns = flowlet_gap_ns_;
    return sc;
  }
  inline void Stamp(uint8_t* dst, const PacketKind& k, Cursor& c, uint64_t tx_ns) const {
    Stamp(dst, k, c, Time(tx_ns), flow0_);
  }
  // The shape every kind of this program has, or kAnyShape when they differ.
  uint32_t shape() const { return shape_; }

  uint32_t packets_per_message() const { return msg_packets_; }
  // Flow f's packet n carries PSN psn_start() + n x psn_step() (modulo 2^24; UET: 2^32).
  uint32_t psn_start() const { return psn_start_; }
  uint32_t psn_step() const { return psn_step_; }
  double mean_frame_size() const { return mean_frame_size_; }  // FCS included, over one message
  uint32_t max_frame_len() const { return max_frame_len_; }    // without FCS
  // Room a buffer passed to Emit needs: Emit copies in 32-byte blocks.
  uint32_t buffer_len() const { return max_frame_len_ + kCopySlack; }
  const std::vector<PacketKind>& kinds() const { return kinds_; }
  bool signed_frames() const { return kinds_[0].t.signature_offset >= 0; }
  const std::string& description() const { return description_; }
  // The flow key (QP, PDC id or UDP port) of flow 0, and how wide it is.
  uint32_t key_base() const { return key_base_; }
  uint32_t key_bits() const { return kinds_[0].key_len * 8; }
  KeyKind key_kind() const { return key_kind_; }

 private:
  friend struct ProgramPeer;  // test/unit/stream/program_test.cc: the reference Stamp
  std::vector<PacketKind> kinds_;  // [only] when one packet per message, else [first, middle, last]
  uint32_t msg_packets_ = 1;
  uint32_t psn_start_ = 0;
  uint32_t psn_mask_ = 0xFFFFFF;
  uint32_t psn_step_ = 1;  // READ_REQUEST advances the PSN by its response's packets
  uint32_t entropy_base_ = 0;
  uint32_t entropy_count_ = 1;
  bool entropy_random_ = false;
  uint64_t flowlet_gap_ns_ = 0;
  bool per_flow_entropy_ = false;  // fixed mode: each flow its own source port
  uint32_t key_base_ = 0;
  KeyKind key_kind_ = KeyKind::kNone;
  FlowVars flow0_;
  uint32_t msg_offset_unit_ = 0;
  bool udp_checksum_ = false;
  uint32_t shape_ = shape::kAnyShape;
  double mean_frame_size_ = 0;
  uint32_t max_frame_len_ = 0;
  std::string description_;
};

inline uint32_t Program::Emit(uint8_t* dst, Cursor& c, uint64_t tx_ns, const FlowVars& v) const {
  const PacketKind& k = KindAt(c);
  const uint32_t len = static_cast<uint32_t>(k.t.bytes.size());
  CopyTemplate(dst, k.copy_src.data(), len);
  Stamp(dst, k, c, Time(tx_ns), v);
  return len;
}

template <uint32_t kShape>
inline uint32_t Program::EmitUntimed(uint8_t* dst, Cursor& c, const FlowVars& v) const {
  static_assert((kShape & shape::kSig) == 0 && kShape != shape::kAnyShape);
  const PacketKind& k = KindAt(c);
  const uint32_t len = static_cast<uint32_t>(k.t.bytes.size());
  CopyTemplate(dst, k.copy_src.data(), len);
  Stamp<kShape>(dst, k, c, StampTime{}, v);  // no signature: no time, no ICRC of a time
  return len;
}

template <uint32_t kShape>
[[gnu::always_inline]] inline void Program::StampWith(uint8_t* dst, const StampConsts& sc, const PacketKind& k,
                                                      Cursor& c, const StampTime& t, const FlowVars& v) const {
  // A field is stamped when the shape has it: known at compile time for a
  // fixed shape, tested per frame for kAnyShape. Everything of the kind and
  // the program comes from `sc` (a caller's local: see StampConsts).
  auto has = [&sc](uint32_t bit) { return kShape == shape::kAnyShape ? (sc.shape & bit) != 0 : (kShape & bit) != 0; };
  auto field = [&sc](int32_t first, int n, uint32_t value) {  // IcrcDelta::Field<n> from sc's tables
    const uint32_t* tb = sc.icrc_tables + static_cast<size_t>(first) * 256;
    uint32_t x = 0;
    for (int j = 0; j < n; ++j) x ^= tb[j * 256 + ((value >> (8 * (n - 1 - j))) & 0xFF)];
    return x;
  };
  // Read once: every store into the frame (a uint8_t*) may alias anything in
  // memory, so the compiler would read these again after each.
  const uint64_t tx_ns = t.ns;
  const uint32_t seq = c.seq, psn = c.psn;
  if (has(shape::kSig)) {
    // Flow id (3 bytes), sequence (4), TX time (6): the time's bytes were
    // made once per burst (StampTime).
    uint8_t* sig = dst + sc.sig_off;
    proto::Store24Lead(sig + 3, sc.fid_lead, v.flow_id);
    proto::Store32(sig + 6, seq);
    std::memcpy(sig + 10, &t.ts_hi_be, 2);
    std::memcpy(sig + 12, &t.ts_lo_be, 4);
  }
  if (has(shape::kVary)) [[unlikely]] {
    if (sc.src_ip_off >= 0) proto::Store32(dst + sc.src_ip_off, v.src_ip);
    if (sc.dst_ip_off >= 0) proto::Store32(dst + sc.dst_ip_off, v.dst_ip);
    if (sc.ip_csum_off >= 0) proto::Store16(dst + sc.ip_csum_off, v.ip_csum[sc.index]);
  }
  if (has(shape::kKey3)) proto::Store24Lead(dst + sc.key_off, sc.key_lead, v.key);
  if (has(shape::kKey2)) proto::Store16(dst + sc.key_off, static_cast<uint16_t>(v.key));
  if (has(shape::kPsn3)) proto::Store24Lead(dst + sc.psn_off, sc.psn_lead, psn);
  if (has(shape::kPsn4)) proto::Store32(dst + sc.psn_off, psn);
  if (has(shape::kMsn)) proto::Store24(dst + sc.msn_off, static_cast<uint32_t>(c.message) & 0xFFFFFF);
  if (has(shape::kMsgId)) proto::Store16(dst + sc.msg_id_off, static_cast<uint16_t>(c.message));
  if (has(shape::kMsgOffset)) proto::Store32(dst + sc.msg_offset_off, c.pos * sc.msg_offset_unit);
  if (has(shape::kSyn)) {
    proto::Store16(dst + sc.syn_off, static_cast<uint16_t>(sc.syn_high | ((psn - sc.psn_start) & 0x0FFF)));
  }
  uint16_t entropy = 0;
  if (has(shape::kEntropy)) {
    uint32_t e = c.entropy;
    if (sc.entropy_random) {  // xorshift32, scaled to K by a multiply: no division
      c.rng ^= c.rng << 13;
      c.rng ^= c.rng >> 17;
      c.rng ^= c.rng << 5;
      e = static_cast<uint32_t>((uint64_t{c.rng} * sc.entropy_count) >> 32);
    } else if (sc.flowlet_gap_ns != 0) {  // a new value after a pause longer than the gap
      if (c.last_ns != 0 && tx_ns - c.last_ns > sc.flowlet_gap_ns && ++c.flowlet == sc.entropy_count) c.flowlet = 0;
      c.last_ns = tx_ns;
      e = c.flowlet;
    }
    entropy = static_cast<uint16_t>(v.entropy_base + e);
    proto::Store16(dst + sc.entropy_off, entropy);
  }
  if (has(shape::kIcrc)) {
    // The ICRC from the values just written (no read-back of the frame).
    uint32_t x = sc.icrc_fixed ^ v.icrc[sc.index];
    if constexpr (kShape != shape::kAnyShape && (kShape & shape::kIcrcSeq) != 0 && (kShape & shape::kIcrcPsn) != 0) {
      // Both advance by one a packet: their high bytes change once in 256
      // packets, so their share is kept in the cursor (7 table loads -> 2).
      // The key holds the high bytes and the kind (bits 0-7: free).
      const uint64_t key = ((uint64_t{seq} << 32 | psn) & 0xFFFFFF0000FFFF00ull) | sc.index;
      if (key != c.icrc_key) [[unlikely]] {
        c.icrc_key = key;
        c.icrc_high = field(sc.icrc_seq, 3, seq >> 8) ^ field(sc.icrc_psn, 2, (psn >> 8) & 0xFFFF);
      }
      x ^= c.icrc_high ^ sc.icrc_tables[static_cast<size_t>(sc.icrc_seq + 3) * 256 + (seq & 0xFF)] ^
           sc.icrc_tables[static_cast<size_t>(sc.icrc_psn + 2) * 256 + (psn & 0xFF)];
    } else {
      if (has(shape::kIcrcSeq)) x ^= field(sc.icrc_seq, 4, seq);
      if (has(shape::kIcrcPsn)) x ^= field(sc.icrc_psn, 3, psn);
    }
    if (has(shape::kIcrcMsn)) x ^= field(sc.icrc_msn, 3, c.message & 0xFFFFFF);
    if (has(shape::kIcrcEntropy)) x ^= field(sc.icrc_entropy, 2, entropy);
    proto::StoreIcrc(dst + sc.icrc_off, x);
  }
  if (has(shape::kUdpCsum)) proto::UpdateUdpChecksum(dst, k.t);
  // Advance: no division, no modulo; counters that cannot move are not stored.
  c.seq = seq + 1;
  c.psn = (psn + sc.psn_step) & sc.psn_mask;
  if (sc.entropy_count != 1 && ++c.entropy == sc.entropy_count) c.entropy = 0;
  if (sc.msg_packets == 1) {
    ++c.message;
  } else if (++c.pos == sc.msg_packets) {
    c.pos = 0;
    ++c.message;
  }
}

}  // namespace fg::stream
