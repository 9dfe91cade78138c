#include "proto/signature.h"

#include "proto/headers.h"
#include "proto/roce.h"
#include "proto/uet.h"

namespace fg::proto {
namespace {

// Length of the UET PDS + SES headers of a data packet at `p`, 0 if not one.
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

}  // namespace

int FindSignatureOffset(const uint8_t* frame, size_t len, const SignatureParse& opt, uint8_t* ecn,
                        uint32_t* payload_end) {
  size_t off = 12;
  if (len < off + 2) return -1;
  uint16_t type = Load16(frame + off);
  for (int tags = 0; tags < 2 && (type == kEtherTypeVlan || type == kEtherTypeQinQ); ++tags) {
    off += 4;
    if (len < off + 2) return -1;
    type = Load16(frame + off);
  }
  off += 2;
  uint8_t proto;
  size_t l4_end;  // end of the IP packet (frames may carry Ethernet padding)
  if (type == kEtherTypeIpv4) {
    if (len < off + kIpv4HeaderLen) return -1;
    const uint8_t* ip = frame + off;
    const size_t ihl = (ip[0] & 0x0F) * 4u;
    if ((ip[0] >> 4) != 4 || ihl < kIpv4HeaderLen) return -1;
    if ((Load16(ip + 6) & 0x3FFF) != 0) return -1;  // a fragment (MF set or offset != 0)
    proto = ip[9];
    l4_end = off + Load16(ip + 2);
    if (ecn != nullptr) *ecn = ip[1] & 3;
    off += ihl;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + kIpv6HeaderLen) return -1;
    const uint8_t* ip = frame + off;
    if ((ip[0] >> 4) != 6) return -1;
    proto = ip[6];
    if (ecn != nullptr) *ecn = (ip[1] >> 4) & 3;
    off += kIpv6HeaderLen;
    l4_end = off + Load16(ip + 4);
  } else {
    return -1;
  }
  if (l4_end > len) l4_end = len;  // truncated capture: bound by what we have
  size_t payload;
  size_t trailer = 0;
  if (proto == kIpProtoUdp) {
    if (l4_end < off + kUdpHeaderLen) return -1;
    const uint16_t dport = Load16(frame + off + 2);
    off += kUdpHeaderLen;
    if (dport == opt.roce_port) {
      if (l4_end < off + roce::kBthLen) return -1;
      const int at = roce::PayloadOffset(frame[off]);
      if (at < 0) return -1;
      payload = off + static_cast<size_t>(at);
      trailer = roce::kIcrcLen + ((frame[off + 1] >> 4) & 3);  // ICRC + pad
    } else if (dport == opt.uet_port) {
      const size_t h = UetHeadersLen(frame + off, l4_end - off, opt);
      if (h == 0) return -1;
      payload = off + h;
    } else {
      payload = off;
    }
  } else if (proto == opt.uet_ip_protocol) {
    off += uet::kEntropyHeaderLen;
    if (l4_end < off) return -1;
    const size_t h = UetHeadersLen(frame + off, l4_end - off, opt);
    if (h == 0) return -1;
    payload = off + h;
  } else {
    return -1;
  }
  if (l4_end < payload + kSignatureLen + trailer) return -1;
  if (Load16(frame + payload) != kSignatureMagic) return -1;
  if (payload_end != nullptr) *payload_end = static_cast<uint32_t>(l4_end - trailer);
  return static_cast<int>(payload);
}

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
  if (type == kEtherTypeIpv4) {
    if (len < off + kIpv4HeaderLen || frame[off + 9] != kIpProtoUdp) return fb;
    off += (frame[off] & 0x0F) * 4u;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + kIpv6HeaderLen || frame[off + 6] != kIpProtoUdp) return fb;
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
    } else if (op == 0x11 && len >= off + roce::kBthLen + roce::kAethLen) {
      const uint8_t syndrome = frame[off + roce::kBthLen];
      if ((syndrome & 0x60) == 0x60) {
        fb.kind = Feedback::Kind::kRoceNak;
        fb.key = Load24(frame + off + 5);
        fb.code = syndrome & 0x1F;
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
