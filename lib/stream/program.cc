#include "stream/program.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_format.h"
#include "base/status.h"
#include "proto/checksum.h"
#include "proto/headers.h"
#include "proto/lbn.h"
#include "proto/pfc.h"
#include "proto/roce.h"
#include "proto/uet.h"

namespace fg::stream {
namespace {

using config::FrameKind;
using config::FrameSpec;
using config::RoceSpec;
using config::UetSpec;
namespace roce = proto::roce;
namespace uet = proto::uet;

// Registers every stamped byte (inside the ICRC coverage) with the
// incremental ICRC and turns it on.
void ArmIcrc(PacketKind& k, bool sprayed) {
  // (the per-flow address fields are set on k before this runs)
  if (k.t.icrc_offset < 0) return;
  std::vector<uint32_t> pos;
  auto add = [&](int32_t off, int n) {
    if (off < 0) return -1;
    const int32_t first = static_cast<int32_t>(pos.size());
    for (int i = 0; i < n; ++i) pos.push_back(static_cast<uint32_t>(off + i));
    return first;
  };
  if (k.t.signature_offset >= 0) {
    k.icrc_seq = add(k.t.signature_offset + 6, 4);
    k.icrc_ts = add(k.t.signature_offset + 10, 6);
  }
  // The ICRC is RoCE's: its PSN is the BTH's 24 bits (Stamp's Field<3>).
  if (k.psn_len == 3) k.icrc_psn = add(k.psn_off, 3);
  k.icrc_msn = add(k.msn_off, 3);
  if (sprayed) k.icrc_entropy = add(k.entropy_off, 2);
  const proto::IcrcLayout layout{k.t.l3_offset, k.t.ipv6, static_cast<uint32_t>(k.t.icrc_offset)};
  k.icrc = proto::IcrcDelta(k.t.bytes.data(), layout, pos);
  // Per-flow constants, in the order FoldFlowIcrc supplies their values.
  pos.clear();
  if (k.t.signature_offset >= 0) add(k.t.signature_offset + 3, 3);  // flow id
  add(k.key_off, k.key_len);
  if (!sprayed) add(k.entropy_off, 2);
  add(k.src_ip_off, 4);
  add(k.dst_ip_off, 4);
  k.flow_icrc = proto::IcrcDelta(k.t.bytes.data(), layout, pos);
  k.icrc_on = true;
}

PacketKind FromTemplate(proto::FrameTemplate t) {
  PacketKind k;
  k.t = std::move(t);
  if (k.t.udp) k.entropy_off = static_cast<int32_t>(k.t.l4_offset);
  return k;
}

// A non-IP frame made by a writer (PFC, PAUSE, LBN).
PacketKind Raw(std::vector<uint8_t> bytes) {
  PacketKind k;
  k.t.bytes = std::move(bytes);
  k.t.udp = false;
  return k;
}

absl::StatusOr<std::vector<PacketKind>> RoceKinds(const FrameSpec& f, Program& p, uint32_t& msg_packets,
                                                  uint32_t& psn_step, std::string& desc) {
  const RoceSpec& r = f.roce;
  std::vector<PacketKind> kinds;
  auto build = [&](uint8_t opcode, uint32_t payload, uint8_t pad, bool last, bool with_aeth_nak = false) {
    const roce::OpcodeInfo info = roce::Describe(opcode);
    uint8_t hdr[roce::kBthLen + 64] = {};
    roce::Bth bth;
    bth.opcode = opcode;
    bth.pad_count = pad;
    bth.pkey = r.pkey;
    bth.dest_qp = r.dest_qp;
    bth.psn = r.start_psn;
    bth.becn = opcode == roce::kOpcodeCnp;
    bth.ack_req = r.ack_req == RoceSpec::AckReq::kEvery || (r.ack_req == RoceSpec::AckReq::kLast && last);
    if (opcode == roce::kOpcodeCnp || info.aeth) bth.ack_req = false;
    size_t n = roce::WriteBth(hdr, bth);
    int32_t msn_rel = -1;
    if (info.deth) n += roce::WriteDeth(hdr + n, roce::Deth{r.qkey, r.src_qp});
    if (info.reth) n += roce::WriteReth(hdr + n, roce::Reth{r.va, r.rkey, static_cast<uint32_t>(r.message)});
    if (info.aeth) {
      const uint8_t syn = with_aeth_nak ? roce::NakSyndrome(r.nak_code) : roce::AckSyndrome(r.ack_credits);
      msn_rel = static_cast<int32_t>(n + 1);
      n += roce::WriteAeth(hdr + n, roce::Aeth{syn, 0});
    }
    if (info.immdt) {
      proto::Store32(hdr + n, r.imm);
      n += roce::kImmDtLen;
    }
    if (opcode == roce::kOpcodeCnp) n += roce::kCnpReservedLen;
    PacketKind k = FromTemplate(proto::BuildFrame(f.encap, std::span<const uint8_t>(hdr, n), payload, pad,
                                                  r.bad_icrc ? proto::Trailer::kBadIcrc : proto::Trailer::kIcrc));
    if (opcode != roce::kOpcodeCnp) {
      k.psn_off = static_cast<int32_t>(k.t.transport_offset + 9);
      k.psn_len = 3;
    }
    k.key_off = static_cast<int32_t>(k.t.transport_offset + 5);  // BTH destination QP
    k.key_len = 3;
    if (msn_rel >= 0) k.msn_off = static_cast<int32_t>(k.t.transport_offset) + msn_rel;
    k.icrc_xor = r.bad_icrc ? 0xFFFFFFFFu : 0;
    return k;
  };
  using Op = RoceSpec::Op;
  const char* transport = r.transport == roce::Transport::kRc   ? "RC"
                          : r.transport == roce::Transport::kUc ? "UC"
                                                                : "UD";
  switch (r.op) {
    case Op::kCnp:
      kinds.push_back(build(roce::kOpcodeCnp, 0, 0, true));
      desc = absl::StrFormat("RoCEv2 CNP to QP 0x%06x", r.dest_qp);
      return kinds;
    case Op::kAck:
    case Op::kNak:
      kinds.push_back(build(static_cast<uint8_t>(0x11), 0, 0, true, r.op == Op::kNak));
      desc = absl::StrFormat("RoCEv2 RC %s to QP 0x%06x", r.op == Op::kAck ? "ACK" : "NAK", r.dest_qp);
      return kinds;
    case Op::kReadRequest:
      kinds.push_back(build(static_cast<uint8_t>(0x0C), 0, 0, true));
      psn_step = static_cast<uint32_t>((r.message + r.pmtu - 1) / r.pmtu);
      desc = absl::StrFormat("RoCEv2 RC READ_REQUEST of %d B at PMTU %d to QP 0x%06x", r.message, r.pmtu, r.dest_qp);
      return kinds;
    default: break;
  }
  const roce::Verb verb = r.op == Op::kWrite      ? roce::Verb::kWrite
                          : r.op == Op::kWriteImm ? roce::Verb::kWriteImm
                          : r.op == Op::kSend     ? roce::Verb::kSend
                          : r.op == Op::kSendImm  ? roce::Verb::kSendImm
                                                  : roce::Verb::kReadResponse;
  FG_ASSIGN_OR_RETURN(roce::MessagePlan m, roce::PlanMessage(verb, r.transport, r.message, r.pmtu));
  msg_packets = m.packets;
  if (m.packets == 1) {
    kinds.push_back(build(m.only.opcode, m.only.payload_len, m.only.pad, true));
  } else {
    kinds.push_back(build(m.first.opcode, m.first.payload_len, m.first.pad, false));
    kinds.push_back(build(m.middle.opcode, m.middle.payload_len, m.middle.pad, false));
    kinds.push_back(build(m.last.opcode, m.last.payload_len, m.last.pad, true));
  }
  desc = absl::StrFormat("RoCEv2 %s %s of %d B at PMTU %d to QP 0x%06x: %d packet(s) per message", transport,
                         roce::VerbName(verb), r.message, r.pmtu, r.dest_qp, m.packets);
  (void)p;
  return kinds;
}

absl::StatusOr<std::vector<PacketKind>> UetKinds(const FrameSpec& f, uint32_t& msg_packets, uint32_t& psn_mask,
                                                 uint32_t& msg_offset_unit, std::string& desc) {
  const UetSpec& u = f.uet;
  const uet::UetProfile& prof = u.profile;
  psn_mask = 0xFFFFFFFF;
  std::vector<PacketKind> kinds;
  const char* service = u.service == UetSpec::Service::kRud    ? "RUD"
                        : u.service == UetSpec::Service::kRod  ? "ROD"
                        : u.service == UetSpec::Service::kRudi ? "RUDI"
                                                               : "UUD";
  // Native-IP mode: the 4-byte entropy header starts the transport bytes.
  const size_t pre = u.native_ip ? uet::kEntropyHeaderLen : 0;
  auto finish = [&](const uint8_t* hdr, size_t n, uint32_t payload, int32_t psn_rel, uint8_t psn_len) {
    PacketKind k =
        FromTemplate(proto::BuildFrame(f.encap, std::span<const uint8_t>(hdr, n), payload, 0, proto::Trailer::kNone));
    if (u.native_ip) k.entropy_off = static_cast<int32_t>(k.t.transport_offset);
    if (psn_rel >= 0) {
      k.psn_off = static_cast<int32_t>(k.t.transport_offset) + psn_rel;
      k.psn_len = psn_len;
    }
    if (u.service != UetSpec::Service::kUud) {
      k.key_off = static_cast<int32_t>(k.t.transport_offset + pre + 8);  // PDS SPDCID
      k.key_len = 2;
    }
    return k;
  };
  uint8_t hdr[256] = {};
  if (u.native_ip) uet::WriteEntropyHeader(hdr, f.encap.udp_src);

  if (u.packet != UetSpec::Packet::kRequest) {
    uet::PdsHeader h;
    h.spdcid = u.spdcid;
    h.dpdcid = u.dpdcid;
    if (u.packet == UetSpec::Packet::kAck) {
      h.type = uet::PdsType::kAck;
      h.cack_psn = u.start_psn;
    } else if (u.packet == UetSpec::Packet::kNack) {
      h.type = uet::PdsType::kNack;
      h.nack_code = u.nack_code;
      h.nack_psn = u.start_psn;
    } else {
      h.type = uet::PdsType::kCp;
      h.ctl_type = u.ctl_type;
      h.psn = u.start_psn;
    }
    const size_t n = pre + uet::WritePds(hdr + pre, h, prof);
    kinds.push_back(finish(hdr, n, 0, static_cast<int32_t>(pre + 4), 4));
    desc = absl::StrFormat("UET %s %s", service,
                           u.packet == UetSpec::Packet::kAck ? "ACK"
                           : u.packet == UetSpec::Packet::kNack
                               ? absl::StrFormat("NACK %s", uet::NackCodeName(u.nack_code))
                               : "control packet");
    return kinds;
  }

  FG_ASSIGN_OR_RETURN(uet::UetMessagePlan m, uet::PlanUetMessage(u.message, u.max_payload));
  if (m.packets > 1 && u.ses != uet::NextHdr::kReqStd) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a %d B message needs %d packets; small and medium SES requests carry one-packet messages (use ses: "
        "standard or raise max_payload)",
        u.message, m.packets));
  }
  msg_packets = m.packets;
  msg_offset_unit = u.max_payload;
  uet::PdsType type;
  switch (u.service) {
    case UetSpec::Service::kRud: type = u.cc ? uet::PdsType::kRudCcReq : uet::PdsType::kRudReq; break;
    case UetSpec::Service::kRod: type = u.cc ? uet::PdsType::kRodCcReq : uet::PdsType::kRodReq; break;
    case UetSpec::Service::kRudi: type = uet::PdsType::kRudiReq; break;
    default: type = uet::PdsType::kUudReq; break;
  }
  const bool reliable_pdc = u.service == UetSpec::Service::kRud || u.service == UetSpec::Service::kRod;
  const bool syn = reliable_pdc && u.dpdcid == 0;
  auto build = [&](uint32_t i) {
    uet::PdsHeader h;
    h.type = type;
    h.next_hdr = u.ses;
    h.flags = static_cast<uint8_t>((syn ? uet::kReqSyn : 0) | (i + 1 == m.packets && reliable_pdc ? uet::kReqAr : 0));
    h.psn = u.start_psn;
    h.spdcid = u.spdcid;
    h.dpdcid = u.dpdcid;
    h.pdc_info = 0;
    size_t n = pre + uet::WritePds(hdr + pre, h, prof);
    const size_t ses_at = n;
    uet::SesRequest s;
    s.format = u.ses;
    s.opcode = u.opcode;
    s.flags = m.som_eom(i);
    s.job_id = u.job_id;
    s.resource_index = u.resource_index;
    s.request_length = static_cast<uint32_t>(u.message);
    s.request_length14 = static_cast<uint16_t>(std::min<uint64_t>(u.message, 0x3FFF));
    s.payload_length = static_cast<uint16_t>(m.payload(i) & 0x3FFF);
    s.buffer_offset = 0;
    n += uet::WriteSesRequest(hdr + n, s, prof);
    int32_t psn_rel = -1;
    if (type != uet::PdsType::kUudReq) psn_rel = static_cast<int32_t>(pre + 4);  // PSN or RUDI pkt_id
    PacketKind k = finish(hdr, n, m.payload(i), psn_rel, 4);
    const int32_t ses_off = static_cast<int32_t>(k.t.transport_offset + ses_at);
    if (u.ses == uet::NextHdr::kReqStd) {
      k.msg_id_off = ses_off + 2;
      if (!(s.flags & uet::kSesSom)) k.msg_offset_off = ses_off + 36;
    }
    if (syn) {
      k.syn_off = static_cast<int32_t>(k.t.transport_offset + pre + 10);
      k.syn_high = static_cast<uint16_t>(h.pdc_info << 12);
    }
    return k;
  };
  if (m.packets == 1) {
    kinds.push_back(build(0));
  } else {
    kinds.push_back(build(0));
    kinds.push_back(build(1));
    kinds.push_back(build(m.packets - 1));
  }
  desc = absl::StrFormat("UET %s%s request, %d B messages in %d packet(s) of <= %d B%s%s", service, u.cc ? "_CC" : "",
                         u.message, m.packets, u.max_payload, syn ? ", SYN (no PDC yet)" : "",
                         u.native_ip ? ", native IP" : "");
  return kinds;
}

}  // namespace

void Program::FoldFlowIcrc(FlowVars& v) const {
  for (size_t i = 0; i < kinds_.size() && i < 3; ++i) {
    const PacketKind& k = kinds_[i];
    v.icrc[i] = 0;
    if (!k.icrc_on) continue;
    uint8_t b[16];
    size_t n = 0;
    if (k.t.signature_offset >= 0) {
      proto::Store24(b, v.flow_id);
      n = 3;
    }
    if (k.key_off >= 0) {
      if (k.key_len == 3) {
        proto::Store24(b + n, v.key & 0xFFFFFF);
      } else {
        proto::Store16(b + n, static_cast<uint16_t>(v.key));
      }
      n += k.key_len;
    }
    if (entropy_count_ <= 1 && k.entropy_off >= 0) {
      proto::Store16(b + n, v.entropy_base);
      n += 2;
    }
    if (k.src_ip_off >= 0) {
      proto::Store32(b + n, v.src_ip);
      n += 4;
    }
    if (k.dst_ip_off >= 0) {
      proto::Store32(b + n, v.dst_ip);
      n += 4;
    }
    v.icrc[i] = k.flow_icrc.Delta(std::span<const uint8_t>(b, n));
  }
}

void Program::FlowAddresses(FlowVars& v, uint32_t index) const {
  const PacketKind& k0 = kinds_[0];
  if (k0.src_ip_off >= 0) v.src_ip = proto::Load32(&k0.t.bytes[k0.src_ip_off]) + index;
  if (k0.dst_ip_off >= 0) v.dst_ip = proto::Load32(&k0.t.bytes[k0.dst_ip_off]) + index;
}

FlowVars Program::FlowWith(uint32_t flow_id, uint32_t key, uint32_t entropy_index, uint32_t src_ip,
                           uint32_t dst_ip) const {
  FlowVars v;
  v.flow_id = flow_id;
  v.key = key;
  const uint32_t span = 65536 - entropy_base_;
  v.entropy_base = static_cast<uint16_t>(entropy_base_ + (per_flow_entropy_ ? entropy_index % span : 0));
  v.src_ip = src_ip;
  v.dst_ip = dst_ip;
  FlowChecksums(v);
  FoldFlowIcrc(v);
  return v;
}

void Program::FlowChecksums(FlowVars& v) const {
  for (size_t i = 0; i < kinds_.size() && i < 3; ++i) {
    const PacketKind& k = kinds_[i];
    if (k.src_ip_off < 0 && k.dst_ip_off < 0) return;
    if (k.ip_csum_off >= 0) {
      uint8_t h[proto::kIpv4HeaderLen];
      std::copy_n(&k.t.bytes[k.t.l3_offset], sizeof h, h);
      if (k.src_ip_off >= 0) proto::Store32(h + 12, v.src_ip);
      if (k.dst_ip_off >= 0) proto::Store32(h + 16, v.dst_ip);
      proto::Store16(h + 10, 0);
      v.ip_csum[i] = proto::InternetChecksum(h, sizeof h);
    }
  }
}

absl::StatusOr<Program> Program::Compile(const FrameSpec& f, uint32_t flow_id) {
  Program p;
  p.entropy_base_ = f.encap.udp_src;
  p.entropy_count_ = f.entropy.values;
  p.entropy_random_ = f.entropy.mode == config::EntropySpec::Mode::kRandom;
  p.flowlet_gap_ns_ =
      f.entropy.mode == config::EntropySpec::Mode::kFlowlet ? static_cast<uint64_t>(f.entropy.gap_ns) : 0;
  p.per_flow_entropy_ = f.entropy.mode == config::EntropySpec::Mode::kFixed;
  p.udp_checksum_ = f.encap.udp && f.encap.udp_checksum;
  // Only data flows own their key for feedback attribution: a stream of
  // CNPs, ACKs or NACKs addresses someone else's QP or PDC.
  const bool roce_data = f.roce.op != config::RoceSpec::Op::kCnp && f.roce.op != config::RoceSpec::Op::kAck &&
                         f.roce.op != config::RoceSpec::Op::kNak;
  p.key_kind_ = f.kind == FrameKind::kRoce ? (roce_data ? KeyKind::kRoceQp : KeyKind::kNone)
                : f.kind == FrameKind::kUet
                    ? (f.uet.packet == UetSpec::Packet::kRequest ? KeyKind::kUetPdc : KeyKind::kNone)
                : f.kind == FrameKind::kUdp ? KeyKind::kUdpPort
                                            : KeyKind::kNone;
  p.key_base_ = f.kind == FrameKind::kRoce  ? f.roce.dest_qp
                : f.kind == FrameKind::kUet ? f.uet.spdcid
                                            : f.encap.udp_dst;
  switch (f.kind) {
    case FrameKind::kUdp: {
      const uint32_t payload = f.size - 4 - proto::EncapLen(f.encap);
      PacketKind k = FromTemplate(proto::BuildFrame(f.encap, {}, payload, 0, proto::Trailer::kNone));
      k.key_off = static_cast<int32_t>(k.t.l4_offset + 2);  // UDP destination port
      k.key_len = 2;
      p.kinds_.push_back(std::move(k));
      p.description_ = absl::StrFormat("UDP %d B frames", f.size);
      break;
    }
    case FrameKind::kRoce: {
      p.psn_start_ = f.roce.start_psn;
      FG_ASSIGN_OR_RETURN(p.kinds_, RoceKinds(f, p, p.msg_packets_, p.psn_step_, p.description_));
      break;
    }
    case FrameKind::kUet: {
      p.psn_start_ = f.uet.start_psn;
      FG_ASSIGN_OR_RETURN(p.kinds_, UetKinds(f, p.msg_packets_, p.psn_mask_, p.msg_offset_unit_, p.description_));
      break;
    }
    case FrameKind::kPfc:
    case FrameKind::kPause: {
      std::vector<uint8_t> b(proto::kMacControlFrameLen);
      if (f.kind == FrameKind::kPause) {
        proto::WritePause(b.data(), f.encap.src_mac, f.pfc.quanta[0]);
        p.description_ = absl::StrFormat("802.3x PAUSE, %d quanta", f.pfc.quanta[0]);
      } else {
        proto::MacControl m;
        m.class_enable = f.pfc.class_enable;
        std::copy(std::begin(f.pfc.quanta), std::end(f.pfc.quanta), m.quanta.begin());
        proto::WritePfc(b.data(), f.encap.src_mac, m);
        p.description_ = absl::StrFormat("802.1Qbb PFC, class-enable 0x%02x", f.pfc.class_enable);
      }
      p.kinds_.push_back(Raw(std::move(b)));
      p.entropy_count_ = 1;
      break;
    }
    case FrameKind::kLbn: {
      std::vector<uint8_t> b(14 + proto::lbn::kMessageLen);
      proto::lbn::Message m{f.lbn.msg, f.lbn.dev_range, f.lbn.bitmap};
      proto::lbn::WriteMessage(b.data(), f.encap.src_mac, f.encap.dst_mac, m, f.lbn.settings);
      p.kinds_.push_back(Raw(std::move(b)));
      p.entropy_count_ = 1;
      p.description_ = absl::StrFormat("link-bandwidth notification, EtherType 0x%04x", f.lbn.settings.ethertype);
      break;
    }
  }
  if ((f.vary_src_ip || f.vary_dst_ip) &&
      (f.kind == FrameKind::kPfc || f.kind == FrameKind::kPause || f.kind == FrameKind::kLbn)) {
    return absl::InvalidArgumentError("vary: src_ip / dst_ip need an IP frame (udp, roce or uet)");
  }
  // The flow id is constant: write it into every template before the ICRC
  // tables are built from them.
  for (PacketKind& k : p.kinds_) {
    k.index = static_cast<uint8_t>(&k - p.kinds_.data());
    if (k.t.udp || k.t.l4_offset > k.t.l3_offset) {
      // Address ranges: the last 32 bits of IPv4 (whole) / IPv6 addresses.
      const int32_t l3 = static_cast<int32_t>(k.t.l3_offset);
      if (f.vary_src_ip) k.src_ip_off = l3 + (k.t.ipv6 ? 8 + 12 : 12);
      if (f.vary_dst_ip) k.dst_ip_off = l3 + (k.t.ipv6 ? 24 + 12 : 16);
      if (!k.t.ipv6 && (f.vary_src_ip || f.vary_dst_ip)) k.ip_csum_off = l3 + 10;
      k.vary_addresses = f.vary_src_ip || f.vary_dst_ip;
    }
    if (k.t.signature_offset >= 0) {
      proto::WriteSignature(k.t.bytes.data() + k.t.signature_offset,
                            proto::Signature{.flags = proto::kSigFlagTimestamp, .flow_id = flow_id});
      if (k.t.icrc_offset >= 0) {
        const proto::IcrcLayout layout{k.t.l3_offset, k.t.ipv6, static_cast<uint32_t>(k.t.icrc_offset)};
        proto::StoreIcrc(k.t.bytes.data() + k.t.icrc_offset, proto::IcrcFull(k.t.bytes.data(), layout) ^ k.icrc_xor);
      }
    }
    ArmIcrc(k, p.entropy_count_ > 1);
    p.max_frame_len_ = std::max<uint32_t>(p.max_frame_len_, static_cast<uint32_t>(k.t.bytes.size()));
    // CopyTemplate reads in 32-byte blocks: a copy of the bytes with that much padding.
    k.copy_src = k.t.bytes;
    k.copy_src.resize(k.t.bytes.size() + kCopySlack, 0);
  }
  // Mean size over one message: ONLY, or FIRST + (n-2) MIDDLE + LAST.
  if (p.msg_packets_ == 1) {
    p.mean_frame_size_ = p.kinds_[0].t.frame_size();
  } else {
    const double sum =
        p.kinds_[0].t.frame_size() + double(p.msg_packets_ - 2) * p.kinds_[1].t.frame_size() +
        p.kinds_[2].t.frame_size();
    p.mean_frame_size_ = sum / p.msg_packets_;
  }
  if (p.entropy_count_ > 1) {
    p.description_ += absl::StrFormat(", entropy %s over %d values from %d",
                                      p.entropy_random_ ? "random" : "round-robin", p.entropy_count_, p.entropy_base_);
  }
  // Each kind's shape (which per-packet fields Stamp writes), and the program's when they agree.
  for (PacketKind& k : p.kinds_) {
    using namespace shape;
    const std::pair<bool, uint32_t> fields[] = {
        {k.t.signature_offset >= 0, kSig},
        {k.key_off >= 0 && k.key_len == 3, kKey3},
        {k.key_off >= 0 && k.key_len != 3, kKey2},
        {k.psn_off >= 0 && k.psn_len == 3, kPsn3},
        {k.psn_off >= 0 && k.psn_len != 3, kPsn4},
        {k.msn_off >= 0, kMsn},
        {k.msg_id_off >= 0, kMsgId},
        {k.msg_offset_off >= 0, kMsgOffset},
        {k.syn_off >= 0, kSyn},
        {k.entropy_off >= 0, kEntropy},
        {k.vary_addresses, kVary},
        {k.icrc_on, kIcrc},
        {k.icrc_on && k.icrc_seq >= 0, kIcrcSeq},
        {k.icrc_on && k.icrc_psn >= 0, kIcrcPsn},
        {k.icrc_on && k.icrc_msn >= 0, kIcrcMsn},
        {k.icrc_on && k.icrc_entropy >= 0, kIcrcEntropy},
        {p.udp_checksum_, kUdpCsum},
    };
    k.shape = 0;
    for (const auto& [set, bit] : fields) k.shape |= set ? bit : 0;
    // The template's byte before each 3-byte field (Store24Lead rewrites it);
    // fields sit at byte 3 or later.
    auto lead = [&k](int32_t off) -> uint8_t {
      assert(off != 0);
      return off >= 1 ? k.t.bytes[static_cast<size_t>(off) - 1] : 0;
    };
    k.key_lead = lead(k.key_off);
    k.psn_lead = lead(k.psn_off);
    k.fid_lead = k.t.signature_offset >= 0 ? lead(k.t.signature_offset + 3) : 0;
  }
  p.shape_ = p.kinds_[0].shape;
  for (const PacketKind& k : p.kinds_) {
    if (k.shape != p.shape_) p.shape_ = shape::kAnyShape;
  }
  p.flow0_ = p.Flow(flow_id, 0);
  return p;
}

}  // namespace fg::stream
