#include "proto/signature.h"

#include "proto/roce.h"
#include "proto/uet.h"

namespace fg::proto {
namespace internal {

const std::array<int16_t, 256> kRocePayloadOffset = [] {
  std::array<int16_t, 256> o{};
  for (int op = 0; op < 256; ++op) o[op] = static_cast<int16_t>(roce::PayloadOffset(static_cast<uint8_t>(op)));
  return o;
}();

size_t UetHeadersLen(const uint8_t* p, size_t avail, const SignatureParse& opt) {
  if (avail < 2) return 0;
  const uint16_t prologue = Load16(p);
  const auto type = static_cast<uet::PdsType>(prologue >> 11);
  const auto next = static_cast<uet::NextHdr>((prologue >> 7) & 0x0F);
  size_t pds = 0;
  switch (type) {
    case uet::PdsType::kRudReq:
    case uet::PdsType::kRodReq: pds = 12; break;
    case uet::PdsType::kRudCcReq:
    case uet::PdsType::kRodCcReq: pds = 16; break;
    case uet::PdsType::kRudiReq:
    case uet::PdsType::kRudiResp: pds = 8; break;
    case uet::PdsType::kUudReq: pds = 4; break;
    default: return 0;  // ACK, NACK, CP, TSS: no signed payload
  }
  size_t ses = 0;
  switch (next) {
    case uet::NextHdr::kReqStd: ses = uet::kSesStdLen; break;
    case uet::NextHdr::kReqSmall: ses = uet::kSesSmallLen; break;
    case uet::NextHdr::kReqMedium: ses = uet::kSesMediumLen; break;
    case uet::NextHdr::kResponseData: ses = uet::kSesResponseDataLen; break;
    case uet::NextHdr::kResponseDataSmall: ses = opt.uet_resp_data_small_len; break;
    default: return 0;
  }
  return pds + ses;
}

}  // namespace internal

uint32_t CountPayloadErrors(const uint8_t* frame, uint32_t sig, uint32_t end) {
  uint32_t errors = 0;
  for (uint32_t i = sig + kSignatureLen; i < end; ++i) errors += frame[i] != static_cast<uint8_t>(i - sig) ? 1 : 0;
  return errors;
}

Feedback ClassifyFeedback(const uint8_t* frame, size_t len, const SignatureParse& opt) {
  Feedback fb;
  size_t off = 12;
  if (len < off + 2) return fb;
  uint16_t type = Load16(frame + off);
  if (type == kEtherTypeVlan) {
    off += 4;
    if (len < off + 2) return fb;
    type = Load16(frame + off);
  }
  off += 2;
  uint8_t ecn = 0;
  if (type == kEtherTypeIpv4) {
    if (len < off + kIpv4HeaderLen || frame[off + 9] != kIpProtoUdp) return fb;
    ecn = frame[off + 1] & 3;
    off += (frame[off] & 0x0F) * 4u;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + kIpv6HeaderLen || frame[off + 6] != kIpProtoUdp) return fb;
    ecn = (frame[off + 1] >> 4) & 3;
    off += kIpv6HeaderLen;
  } else {
    return fb;
  }
  if (len < off + kUdpHeaderLen) return fb;
  const uint16_t dport = Load16(frame + off + 2);
  off += kUdpHeaderLen;
  if (dport == opt.roce_port && len >= off + roce::kBthLen) {
    const uint8_t op = frame[off];
    if (op == roce::kOpcodeCnp) {
      fb.kind = Feedback::Kind::kRoceCnp;
      fb.key = Load24(frame + off + 5);
    } else if (op == 0x0C && len >= off + roce::kBthLen + roce::kRethLen) {  // RC RDMA READ request
      fb.kind = Feedback::Kind::kRoceReadRequest;
      fb.key = Load24(frame + off + 5);
      fb.psn = Load24(frame + off + 9);
      fb.ce = ecn == 3;
    } else if (op == 0x11 && len >= off + roce::kBthLen + roce::kAethLen) {
      const uint8_t syndrome = frame[off + roce::kBthLen];
      if ((syndrome & 0x60) == 0x60 || (syndrome & 0x60) == 0) {
        fb.kind = (syndrome & 0x60) == 0 ? Feedback::Kind::kRoceAck : Feedback::Kind::kRoceNak;
        fb.key = Load24(frame + off + 5);
        fb.code = syndrome & 0x1F;
        fb.psn = Load24(frame + off + 9);
        fb.msn = Load24(frame + off + roce::kBthLen + 1);
      }
    }
  } else if (dport == opt.uet_port && len >= off + 16) {
    const uint8_t pds_type = frame[off] >> 3;
    if (pds_type == static_cast<uint8_t>(uet::PdsType::kNack) ||
        pds_type == static_cast<uint8_t>(uet::PdsType::kNackCcx)) {
      fb.kind = Feedback::Kind::kUetNack;
      fb.code = frame[off + 2];
      fb.key = Load16(frame + off + 10);  // DPDCID: the initiator's PDC
    }
  }
  return fb;
}

}  // namespace fg::proto
static_assert(fg::proto::kRoceBthLen == fg::proto::roce::kBthLen &&
              fg::proto::kRoceIcrcLen == fg::proto::roce::kIcrcLen &&
              fg::proto::kUetEntropyHeaderLen == fg::proto::uet::kEntropyHeaderLen);
