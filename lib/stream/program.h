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

struct PacketKind {
  proto::FrameTemplate t;
  proto::IcrcDelta icrc;
  bool icrc_on = false;
  uint32_t icrc_xor = 0;  // 0xFFFFFFFF: deliberately wrong ICRC
  int32_t psn_off = -1;
  uint8_t psn_len = 0;          // 3 (BTH) or 4 (PDS)
  int32_t msn_off = -1;         // AETH MSN, 24 bits: message number
  int32_t msg_id_off = -1;      // UET SES message_id, 16 bits: message number
  int32_t msg_offset_off = -1;  // UET SES message_offset, 32 bits
  int32_t syn_off = -1;         // UET pdc_info | psn_offset, 16 bits
  int32_t entropy_off = -1;     // UDP source port or UET entropy header, 16 bits
  uint16_t syn_high = 0;        // pdc_info << 12
};

// Where a flow stands; the TX lcore keeps one per flow.
struct Cursor {
  uint32_t seq = 0;  // signature sequence number
  uint32_t psn = 0;
  uint32_t pos = 0;      // packet index inside the current message
  uint32_t entropy = 0;  // index of the entropy value
  uint64_t message = 0;  // messages completed
};

class Program {
 public:
  static absl::StatusOr<Program> Compile(const config::FrameSpec& frame, uint32_t flow_id);

  Cursor Start() const {
    Cursor c;
    c.psn = psn_start_;
    return c;
  }

  // Writes the next packet of `c` into `dst` (room for max_frame_len()),
  // advances `c`, and returns the packet's length without FCS.
  inline uint32_t Emit(uint8_t* dst, Cursor& c, uint64_t tx_ns) const;
  // The template of the packet `c` points at.
  const PacketKind& KindAt(const Cursor& c) const {
    return kinds_[ppm_ == 1 ? 0 : (c.pos == 0 ? 0 : (c.pos + 1 == ppm_ ? 2 : 1))];
  }
  // Emit() without the template copy: rewrites the per-packet fields and the
  // ICRC of `dst`, which must already hold KindAt(c)'s template bytes.
  inline void Stamp(uint8_t* dst, const PacketKind& k, Cursor& c, uint64_t tx_ns) const;

  uint32_t packets_per_message() const { return ppm_; }
  double mean_frame_size() const { return mean_frame_size_; }  // FCS included, over one message
  uint32_t max_frame_len() const { return max_frame_len_; }    // without FCS
  const std::vector<PacketKind>& kinds() const { return kinds_; }
  bool signed_frames() const { return kinds_[0].t.signature_offset >= 0; }
  const std::string& description() const { return description_; }

 private:
  std::vector<PacketKind> kinds_;  // [only] when one packet per message, else [first, middle, last]
  uint32_t ppm_ = 1;
  uint32_t psn_start_ = 0;
  uint32_t psn_mask_ = 0xFFFFFF;
  uint32_t psn_step_ = 1;  // READ_REQUEST advances the PSN by its response's packets
  uint32_t entropy_base_ = 0;
  uint32_t entropy_count_ = 1;
  uint32_t msg_offset_unit_ = 0;
  bool udp_checksum_ = false;
  double mean_frame_size_ = 0;
  uint32_t max_frame_len_ = 0;
  std::string description_;
};

inline uint32_t Program::Emit(uint8_t* dst, Cursor& c, uint64_t tx_ns) const {
  const PacketKind& k = KindAt(c);
  const uint32_t len = static_cast<uint32_t>(k.t.bytes.size());
  std::memcpy(dst, k.t.bytes.data(), len);
  Stamp(dst, k, c, tx_ns);
  return len;
}

inline void Program::Stamp(uint8_t* dst, const PacketKind& k, Cursor& c, uint64_t tx_ns) const {
  if (k.t.signature_offset >= 0) proto::StampSignature(dst + k.t.signature_offset, c.seq, tx_ns);
  if (k.psn_off >= 0) {
    if (k.psn_len == 3) {
      proto::Store24(dst + k.psn_off, c.psn);
    } else {
      proto::Store32(dst + k.psn_off, c.psn);
    }
  }
  if (k.msn_off >= 0) proto::Store24(dst + k.msn_off, static_cast<uint32_t>(c.message) & 0xFFFFFF);
  if (k.msg_id_off >= 0) proto::Store16(dst + k.msg_id_off, static_cast<uint16_t>(c.message));
  if (k.msg_offset_off >= 0) proto::Store32(dst + k.msg_offset_off, c.pos * msg_offset_unit_);
  if (k.syn_off >= 0) {
    proto::Store16(dst + k.syn_off, static_cast<uint16_t>(k.syn_high | ((c.psn - psn_start_) & 0x0FFF)));
  }
  if (entropy_count_ > 1) proto::Store16(dst + k.entropy_off, static_cast<uint16_t>(entropy_base_ + c.entropy));
  if (k.icrc_on) proto::StoreIcrc(dst + k.t.icrc_offset, k.icrc.Compute(dst) ^ k.icrc_xor);
  if (udp_checksum_) proto::UpdateUdpChecksum(dst, k.t);
  // Advance: no division, no modulo.
  ++c.seq;
  c.psn = (c.psn + psn_step_) & psn_mask_;
  if (++c.entropy == entropy_count_) c.entropy = 0;
  if (++c.pos == ppm_) {
    c.pos = 0;
    ++c.message;
  }
}

}  // namespace fg::stream
