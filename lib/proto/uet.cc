#include "proto/uet.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "proto/bytes.h"

namespace fg::proto::uet {
namespace {

bool IsRequest(PdsType t) {
  return t == PdsType::kRudReq || t == PdsType::kRodReq || t == PdsType::kRudCcReq || t == PdsType::kRodCcReq;
}
bool IsCcRequest(PdsType t) { return t == PdsType::kRudCcReq || t == PdsType::kRodCcReq; }

uint16_t SynField(const PdsHeader& h) {
  return static_cast<uint16_t>((h.pdc_info & 0x0F) << 12 | (h.psn_offset & 0x0FFF));
}

}  // namespace

const char* NackCodeName(NackCode c) {
  switch (c) {
    case NackCode::kTrimmed: return "TRIMMED";
    case NackCode::kTrimmedLastHop: return "TRIMMED_LASTHOP";
    case NackCode::kNoPdcAvail: return "NO_PDC_AVAIL";
    case NackCode::kNoCccAvail: return "NO_CCC_AVAIL";
    case NackCode::kNoBitmap: return "NO_BITMAP";
    case NackCode::kNoPktBuffer: return "NO_PKT_BUFFER";
    case NackCode::kNoGtdDelAvail: return "NO_GTD_DEL_AVAIL";
    case NackCode::kNoSesMsgAvail: return "NO_SES_MSG_AVAIL";
    case NackCode::kNoResource: return "NO_RESOURCE";
    case NackCode::kPsnOorWindow: return "PSN_OOR_WINDOW";
    case NackCode::kRodOoo: return "ROD_OOO";
    case NackCode::kInvDpdcid: return "INV_DPDCID";
    case NackCode::kPdcHdrMismatch: return "PDC_HDR_MISMATCH";
    case NackCode::kClosing: return "CLOSING";
    case NackCode::kClosingInErr: return "CLOSING_IN_ERR";
    case NackCode::kPktNotRcvd: return "PKT_NOT_RCVD";
    case NackCode::kGtdRespUnavail: return "GTD_RESP_UNAVAIL";
    case NackCode::kAckWithData: return "ACK_WITH_DATA";
    case NackCode::kInvalidSyn: return "INVALID_SYN";
    case NackCode::kPdcModeMismatch: return "PDC_MODE_MISMATCH";
    case NackCode::kNewStartPsn: return "NEW_START_PSN";
    case NackCode::kRcvdSesProcg: return "RCVD_SES_PROCG";
    case NackCode::kUnexpEvent: return "UNEXP_EVENT";
    case NackCode::kRcvrInferLoss: return "RCVR_INFER_LOSS";
  }
  return "?";
}

size_t PdsLen(PdsType type, const UetProfile& profile) {
  switch (type) {
    case PdsType::kTss: return 12;
    case PdsType::kRudReq:
    case PdsType::kRodReq: return 12;
    case PdsType::kRudiReq:
    case PdsType::kRudiResp: return 8;
    case PdsType::kUudReq: return 4;
    case PdsType::kAck: return 12;
    case PdsType::kAckCc: return 32;
    case PdsType::kAckCcx: return profile.ack_ccx_len;
    case PdsType::kNack: return 16;
    case PdsType::kCp: return 16;
    case PdsType::kNackCcx: return profile.nack_ccx_len;
    case PdsType::kRudCcReq:
    case PdsType::kRodCcReq: return 16;
  }
  return 0;
}

size_t WritePds(uint8_t* p, const PdsHeader& h, const UetProfile& profile) {
  const size_t len = PdsLen(h.type, profile);
  if (h.type == PdsType::kTss || len == 0) return 0;  // TSS (encryption) is not built
  std::memset(p, 0, len);
  const uint8_t nh = h.type == PdsType::kCp ? static_cast<uint8_t>(h.ctl_type) : static_cast<uint8_t>(h.next_hdr);
  Store16(p, Prologue(h.type, nh, h.flags));
  switch (h.type) {
    case PdsType::kRudReq:
    case PdsType::kRodReq:
    case PdsType::kRudCcReq:
    case PdsType::kRodCcReq:
      Store16(p + 2, static_cast<uint16_t>(h.clear_psn_offset));
      Store32(p + 4, h.psn);
      Store16(p + 8, h.spdcid);
      Store16(p + 10, (h.flags & kReqSyn) ? SynField(h) : h.dpdcid);
      if (IsCcRequest(h.type)) {
        p[12] = h.ccc_id;
        Store24(p + 13, h.credit_target & 0xFFFFFF);
      }
      break;
    case PdsType::kRudiReq:
    case PdsType::kRudiResp:
      Store32(p + 4, h.psn);  // pkt_id
      break;
    case PdsType::kUudReq: break;
    case PdsType::kAck:
    case PdsType::kAckCc:
    case PdsType::kAckCcx:
      Store16(p + 2, (h.flags & kAckP) ? h.probe_opaque : static_cast<uint16_t>(h.ack_psn_offset));
      Store32(p + 4, h.cack_psn);
      Store16(p + 8, h.spdcid);
      Store16(p + 10, h.dpdcid);
      if (h.type != PdsType::kAck) {
        p[12] = static_cast<uint8_t>((h.cc_type & 0x0F) << 4 | (h.cc_flags & 0x0F));
        p[13] = h.mpr;
        Store16(p + 14, h.sack_psn_offset);
        Store64(p + 16, h.sack_bitmap);
        if (h.type == PdsType::kAckCc) {
          Store64(p + 24, h.ack_cc_state);
        } else {
          std::memcpy(p + 24, h.ack_ccx_state, std::min<size_t>(16, len - 24));
        }
      }
      break;
    case PdsType::kNack:
    case PdsType::kNackCcx:
      p[2] = static_cast<uint8_t>(h.nack_code);
      p[3] = h.vendor_code;
      Store32(p + 4, h.nack_psn);
      Store16(p + 8, h.spdcid);
      Store16(p + 10, h.dpdcid);
      Store32(p + 12, h.nack_payload);
      if (h.type == PdsType::kNackCcx && len >= 32) {
        std::memcpy(p + 16, h.nccx_state, 16);
        p[16] = static_cast<uint8_t>((h.nccx_type & 0x0F) << 4 | (h.nccx_state[0] & 0x0F));
      }
      break;
    case PdsType::kCp:
      Store16(p + 2, h.probe_opaque);
      Store32(p + 4, h.psn);
      Store16(p + 8, h.spdcid);
      Store16(p + 10, (h.flags & kCpSyn) ? SynField(h) : h.dpdcid);
      Store32(p + 12, h.cp_payload);
      break;
    case PdsType::kTss: break;
  }
  return len;
}

std::optional<PdsHeader> ParsePds(std::span<const uint8_t> b, const UetProfile& profile) {
  if (b.size() < 2) return std::nullopt;
  const uint8_t* p = b.data();
  const uint16_t prologue = Load16(p);
  const uint8_t type = static_cast<uint8_t>(prologue >> 11);
  if (type < 2 || type > 14) return std::nullopt;  // reserved, or TSS (not parsed here)
  PdsHeader h;
  h.type = static_cast<PdsType>(type);
  const size_t len = PdsLen(h.type, profile);
  if (b.size() < len) return std::nullopt;
  const uint8_t nh = (prologue >> 7) & 0x0F;
  h.flags = prologue & 0x7F;
  if (h.type == PdsType::kCp) {
    if (nh > static_cast<uint8_t>(CtlType::kCreditReq)) return std::nullopt;
    h.ctl_type = static_cast<CtlType>(nh);
  } else {
    if (nh > static_cast<uint8_t>(NextHdr::kResponseDataSmall)) return std::nullopt;
    h.next_hdr = static_cast<NextHdr>(nh);
  }
  auto syn_or_dpdcid = [&](bool syn) {
    const uint16_t v = Load16(p + 10);
    if (syn) {
      h.pdc_info = static_cast<uint8_t>(v >> 12);
      h.psn_offset = v & 0x0FFF;
    } else {
      h.dpdcid = v;
    }
  };
  if (IsRequest(h.type)) {
    h.clear_psn_offset = static_cast<int16_t>(Load16(p + 2));
    h.psn = Load32(p + 4);
    h.spdcid = Load16(p + 8);
    syn_or_dpdcid(h.flags & kReqSyn);
    if (IsCcRequest(h.type)) {
      h.ccc_id = p[12];
      h.credit_target = Load24(p + 13);
    }
  } else if (h.type == PdsType::kRudiReq || h.type == PdsType::kRudiResp) {
    h.psn = Load32(p + 4);
  } else if (h.type == PdsType::kAck || h.type == PdsType::kAckCc || h.type == PdsType::kAckCcx) {
    const uint16_t v = Load16(p + 2);
    if (h.flags & kAckP) {
      h.probe_opaque = v;
    } else {
      h.ack_psn_offset = static_cast<int16_t>(v);
    }
    h.cack_psn = Load32(p + 4);
    h.spdcid = Load16(p + 8);
    h.dpdcid = Load16(p + 10);
    if (h.type != PdsType::kAck) {
      h.cc_type = p[12] >> 4;
      h.cc_flags = p[12] & 0x0F;
      h.mpr = p[13];
      h.sack_psn_offset = Load16(p + 14);
      h.sack_bitmap = Load64(p + 16);
      if (h.type == PdsType::kAckCc) {
        h.ack_cc_state = Load64(p + 24);
      } else {
        std::memcpy(h.ack_ccx_state, p + 24, std::min<size_t>(16, len - 24));
      }
    }
  } else if (h.type == PdsType::kNack || h.type == PdsType::kNackCcx) {
    h.nack_code = static_cast<NackCode>(p[2]);
    h.vendor_code = p[3];
    h.nack_psn = Load32(p + 4);
    h.spdcid = Load16(p + 8);
    h.dpdcid = Load16(p + 10);
    h.nack_payload = Load32(p + 12);
    if (h.type == PdsType::kNackCcx && len >= 32) {
      h.nccx_type = p[16] >> 4;
      std::memcpy(h.nccx_state, p + 16, 16);
      h.nccx_state[0] &= 0x0F;
    }
  } else if (h.type == PdsType::kCp) {
    h.probe_opaque = Load16(p + 2);
    h.psn = Load32(p + 4);
    h.spdcid = Load16(p + 8);
    syn_or_dpdcid(h.flags & kCpSyn);
    h.cp_payload = Load32(p + 12);
  }
  return h;
}

uint64_t PackNsccState(uint16_t service_time, bool restore_cwnd, uint8_t rcv_cwnd_pend, uint32_t rcvd_bytes_256,
                       uint16_t ooo_count) {
  return uint64_t{service_time} << 48 | uint64_t{restore_cwnd ? 1u : 0u} << 47 | uint64_t{rcv_cwnd_pend & 0x7Fu} << 40 |
         uint64_t{rcvd_bytes_256 & 0xFFFFFFu} << 16 | ooo_count;
}

uint64_t PackCreditState(uint32_t credit, uint16_t ooo_count) { return uint64_t{credit & 0xFFFFFFu} << 40 | ooo_count; }

size_t SesLen(NextHdr format, const UetProfile& profile) {
  switch (format) {
    case NextHdr::kNone: return 0;
    case NextHdr::kReqSmall: return kSesSmallLen;
    case NextHdr::kReqMedium: return kSesMediumLen;
    case NextHdr::kReqStd: return kSesStdLen;
    case NextHdr::kResponse: return kSesResponseLen;
    case NextHdr::kResponseData: return kSesResponseDataLen;
    case NextHdr::kResponseDataSmall: return profile.resp_data_small_len;
  }
  return 0;
}

size_t WriteSesRequest(uint8_t* p, const SesRequest& r, const UetProfile& profile) {
  const size_t len = SesLen(r.format, profile);
  if (len == 0 || r.format == NextHdr::kResponse || r.format == NextHdr::kResponseData ||
      r.format == NextHdr::kResponseDataSmall) {
    return 0;
  }
  std::memset(p, 0, len);
  p[0] = static_cast<uint8_t>(r.opcode) & 0x3F;
  p[1] = static_cast<uint8_t>((r.version & 3) << 6 | (r.flags & 0x3F));
  const bool id16 =
      r.format == NextHdr::kReqStd || (r.format == NextHdr::kReqSmall && profile.small_req_has_message_id);
  Store16(p + 2, id16 ? r.message_id : static_cast<uint16_t>(r.request_length14 & 0x3FFF));
  p[4] = r.ri_generation;
  Store24(p + 5, r.job_id & 0xFFFFFF);
  Store16(p + 8, r.pid_on_fep & 0x0FFF);
  Store16(p + 10, r.resource_index & 0x0FFF);
  switch (r.format) {
    case NextHdr::kReqStd:
      Store64(p + 12, r.buffer_offset);
      Store32(p + 20, r.initiator);
      Store64(p + 24, r.match_bits);
      if (r.flags & kSesSom) {
        Store64(p + 32, r.header_data);
      } else {
        Store16(p + 34, r.payload_length & 0x3FFF);
        Store32(p + 36, r.message_offset);
      }
      Store32(p + 40, r.request_length);
      break;
    case NextHdr::kReqSmall: Store64(p + 12, r.buffer_offset); break;
    case NextHdr::kReqMedium:
      Store64(p + 12, (r.flags & kSesHd) ? r.header_data : r.buffer_offset);
      Store32(p + 20, r.initiator);
      Store64(p + 24, r.match_bits);
      break;
    default: break;
  }
  return len;
}

size_t WriteSesResponse(uint8_t* p, const SesResponse& r, const UetProfile& profile) {
  const size_t len = SesLen(r.format, profile);
  if (r.format != NextHdr::kResponse && r.format != NextHdr::kResponseData && r.format != NextHdr::kResponseDataSmall) {
    return 0;
  }
  std::memset(p, 0, len);
  p[0] = static_cast<uint8_t>((r.list & 3) << 6 | (static_cast<uint8_t>(r.opcode) & 0x3F));
  p[1] = static_cast<uint8_t>((r.version & 3) << 6 | (r.return_code & 0x3F));
  const uint16_t plen_mask = static_cast<uint16_t>((1u << profile.resp_data_payload_len_bits) - 1);
  switch (r.format) {
    case NextHdr::kResponse:
      Store16(p + 2, r.message_id);
      p[4] = r.ri_generation;
      Store24(p + 5, r.job_id & 0xFFFFFF);
      Store32(p + 8, r.modified_length);
      break;
    case NextHdr::kResponseData:
      Store16(p + 2, r.message_id);
      Store24(p + 5, r.job_id & 0xFFFFFF);
      Store16(p + 8, static_cast<uint16_t>(r.read_request_message_id));
      Store16(p + 10, r.payload_length & plen_mask);
      Store32(p + 12, r.modified_length);
      Store32(p + 16, r.message_offset);
      break;
    case NextHdr::kResponseDataSmall: Store16(p + 2, r.payload_length & plen_mask); break;
    default: break;
  }
  return len;
}

std::optional<SesRequest> ParseSesRequest(std::span<const uint8_t> b, NextHdr format, const UetProfile& profile) {
  const size_t len = SesLen(format, profile);
  if (len == 0 || format == NextHdr::kResponse || format == NextHdr::kResponseData ||
      format == NextHdr::kResponseDataSmall || b.size() < len) {
    return std::nullopt;
  }
  const uint8_t* p = b.data();
  SesRequest r;
  r.format = format;
  r.opcode = static_cast<SesOpcode>(p[0] & 0x3F);
  r.version = p[1] >> 6;
  r.flags = p[1] & 0x3F;
  const bool id16 = format == NextHdr::kReqStd || (format == NextHdr::kReqSmall && profile.small_req_has_message_id);
  if (id16) {
    r.message_id = Load16(p + 2);
  } else {
    r.request_length14 = Load16(p + 2) & 0x3FFF;
  }
  r.ri_generation = p[4];
  r.job_id = Load24(p + 5);
  r.pid_on_fep = Load16(p + 8) & 0x0FFF;
  r.resource_index = Load16(p + 10) & 0x0FFF;
  if (format == NextHdr::kReqStd) {
    r.buffer_offset = Load64(p + 12);
    r.initiator = Load32(p + 20);
    r.match_bits = Load64(p + 24);
    if (r.flags & kSesSom) {
      r.header_data = Load64(p + 32);
    } else {
      r.payload_length = Load16(p + 34) & 0x3FFF;
      r.message_offset = Load32(p + 36);
    }
    r.request_length = Load32(p + 40);
  } else if (format == NextHdr::kReqSmall) {
    r.buffer_offset = Load64(p + 12);
  } else {
    ((r.flags & kSesHd) ? r.header_data : r.buffer_offset) = Load64(p + 12);
    r.initiator = Load32(p + 20);
    r.match_bits = Load64(p + 24);
  }
  return r;
}

std::optional<SesResponse> ParseSesResponse(std::span<const uint8_t> b, NextHdr format, const UetProfile& profile) {
  const size_t len = SesLen(format, profile);
  if ((format != NextHdr::kResponse && format != NextHdr::kResponseData && format != NextHdr::kResponseDataSmall) ||
      b.size() < len || len < 4) {
    return std::nullopt;
  }
  const uint8_t* p = b.data();
  SesResponse r;
  r.format = format;
  r.list = p[0] >> 6;
  r.opcode = static_cast<SesRespOpcode>(p[0] & 0x3F);
  r.version = p[1] >> 6;
  r.return_code = p[1] & 0x3F;
  const uint16_t plen_mask = static_cast<uint16_t>((1u << profile.resp_data_payload_len_bits) - 1);
  if (format == NextHdr::kResponse) {
    r.message_id = Load16(p + 2);
    r.ri_generation = p[4];
    r.job_id = Load24(p + 5);
    r.modified_length = Load32(p + 8);
  } else if (format == NextHdr::kResponseData) {
    r.message_id = Load16(p + 2);
    r.job_id = Load24(p + 5);
    r.read_request_message_id = Load16(p + 8);
    r.payload_length = Load16(p + 10) & plen_mask;
    r.modified_length = Load32(p + 12);
    r.message_offset = Load32(p + 16);
  } else {
    r.payload_length = Load16(p + 2) & plen_mask;
  }
  return r;
}

size_t WriteEntropyHeader(uint8_t* p, uint16_t entropy) {
  Store16(p, entropy);
  Store16(p + 2, 0);
  return kEntropyHeaderLen;
}

absl::StatusOr<UetMessagePlan> PlanUetMessage(uint64_t size, uint32_t max_payload) {
  if (size == 0) return absl::OutOfRangeError("UET message size must be at least 1 B");
  if (max_payload == 0) return absl::InvalidArgumentError("UET packet payload must be at least 1 B");
  UetMessagePlan m;
  m.size = size;
  m.max_payload = max_payload;
  const uint64_t packets = (size + max_payload - 1) / max_payload;
  if (packets > 0xFFFFFFFFull) {
    return absl::OutOfRangeError(absl::StrFormat("a %d B message needs more than 2^32 packets", size));
  }
  m.packets = static_cast<uint32_t>(packets);
  return m;
}

}  // namespace fg::proto::uet
