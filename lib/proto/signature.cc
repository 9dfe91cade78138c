#include "proto/signature.h"

#include "proto/icrc.h"
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

namespace {

// A frame's headers down to its transport, parsed again off the fast path
// for a frame the walk did not take: where each starts and whether they
// agree with each other and with the frame's length.
struct Headers {
  enum class Verdict { kOther, kInvalid, kUdp, kUetNative };
  Verdict verdict = Verdict::kOther;
  size_t l3 = 0, l4 = 0, end = 0;  // the IP header, the UDP (or UET entropy) header, the end of the IP packet
  bool ipv6 = false;
  uint8_t ecn = 0;
  uint16_t dport = 0;
};

Headers ParseHeaders(const uint8_t* frame, size_t len, const SignatureParse& opt) {
  using V = Headers::Verdict;
  Headers h;
  size_t off = 12;
  if (len < off + 2) {
    h.verdict = V::kInvalid;  // shorter than an Ethernet header
    return h;
  }
  uint16_t type = Load16(frame + off);
  size_t tags = 0;
  for (; tags < 2 && (type == kEtherTypeVlan || type == kEtherTypeQinQ); ++tags) {
    off += 4;
    if (len < off + 2) {
      h.verdict = V::kInvalid;  // a VLAN tag cut short
      return h;
    }
    type = Load16(frame + off);
  }
  off += 2;
  h.l3 = off;
  uint8_t proto = 0;
  if (type == kEtherTypeIpv4) {
    const uint8_t* ip = frame + off;
    const size_t ihl = len < off + kIpv4HeaderLen ? 0 : size_t{(ip[0] & 0x0Fu) * 4u};
    const size_t total = ihl == 0 ? 0 : size_t{Load16(ip + 2)};
    if (ihl < kIpv4HeaderLen || (ip[0] >> 4) != 4 || total < ihl ||
        !internal::IpLengthFits(off + total, len, tags)) {
      h.verdict = V::kInvalid;
      return h;
    }
    if ((Load16(ip + 6) & 0x3FFF) != 0) return h;  // a fragment: IP, not ours
    h.end = off + total;
    h.ecn = ip[1] & 3;
    proto = ip[9];
    off += ihl;
  } else if (type == kEtherTypeIpv6) {
    const uint8_t* ip = frame + off;
    if (len < off + kIpv6HeaderLen || (ip[0] >> 4) != 6 ||
        !internal::IpLengthFits(off + kIpv6HeaderLen + size_t{Load16(ip + 4)}, len, tags)) {
      h.verdict = V::kInvalid;
      return h;
    }
    h.ipv6 = true;
    h.end = off + kIpv6HeaderLen + size_t{Load16(ip + 4)};
    h.ecn = (ip[1] >> 4) & 3;
    proto = ip[6];
    off += kIpv6HeaderLen;
  } else {
    return h;  // not IP (ARP, LLDP, PAUSE...)
  }
  h.l4 = off;
  if (proto == opt.uet_ip_protocol) {
    h.verdict = h.end < off + kUetEntropyHeaderLen ? V::kInvalid : V::kUetNative;
    return h;
  }
  if (proto != kIpProtoUdp) return h;
  if (h.end < off + kUdpHeaderLen || size_t{Load16(frame + off + 4)} != h.end - off) {
    h.verdict = V::kInvalid;  // a UDP length of 0, under 8, or other than the IP payload's
    return h;
  }
  h.dport = Load16(frame + off + 2);
  h.verdict = V::kUdp;
  return h;
}

// The RoCEv2 ICRC of an IP packet [l3, end) whose last 4 bytes hold it.
bool IcrcMatches(const uint8_t* frame, const Headers& h) {
  const IcrcLayout layout{static_cast<uint32_t>(h.l3), h.ipv6, static_cast<uint32_t>(h.end - roce::kIcrcLen)};
  return IcrcFull(frame, layout) == LoadIcrc(frame + layout.icrc_offset);
}

// Whether the payload at `p` (the IP packet ending at `end`) starts with the
// signature's magic in a frame the walk does not take: a signed frame whose
// headers are none a stream writes (IPv4 options, another BTH version...).
bool SignedButNotTaken(const uint8_t* frame, size_t len, size_t p, size_t end, const SignatureParse& opt) {
  return p + kSignatureLen <= end && Load16(frame + p) == kSignatureMagic && FindSignatureOffset(frame, len, opt) < 0;
}

// A RoCEv2 frame without a signature the walk could take: feedback, a READ
// request, or a frame shaped as one of them (or as a signed frame) that is
// not (kInvalid). What the spec shapes (roce.md): a CNP is BTH + 16 reserved
// zero bytes + ICRC; an ACK or NAK BTH + AETH + ICRC; a READ request BTH +
// RETH + ICRC; none carries pad; every one BTH version 0.
Feedback ClassifyRoce(const uint8_t* frame, size_t len, const Headers& h, const SignatureParse& opt) {
  Feedback fb;
  const size_t bth = h.l4 + kUdpHeaderLen;
  const size_t n = h.end - bth;  // BTH, extension headers, payload, pad, ICRC
  if (n < roce::kBthLen + roce::kIcrcLen) {
    fb.kind = Feedback::Kind::kInvalid;  // no room for a BTH and its ICRC
    return fb;
  }
  const uint8_t op = frame[bth];
  const bool plain = (frame[bth + 1] & 0x3F) == 0;  // no pad, TVer 0
  auto checked = [&](size_t want, Feedback::Kind kind) {
    fb.kind = n == want && plain && (!opt.feedback_icrc || IcrcMatches(frame, h)) ? kind : Feedback::Kind::kInvalid;
    fb.key = Load24(frame + bth + 5);
    fb.psn = Load24(frame + bth + 9);
    return fb.kind != Feedback::Kind::kInvalid;
  };
  if (op == roce::kOpcodeCnp) {
    if (checked(roce::kBthLen + roce::kCnpReservedLen + roce::kIcrcLen, Feedback::Kind::kRoceCnp)) {
      for (size_t i = 0; i < roce::kCnpReservedLen; ++i) {
        if (frame[bth + roce::kBthLen + i] != 0) fb.kind = Feedback::Kind::kInvalid;  // reserved: zero
      }
    }
    return fb;
  }
  if (op == 0x0C) {  // RC RDMA READ request
    checked(roce::kBthLen + roce::kRethLen + roce::kIcrcLen, Feedback::Kind::kRoceReadRequest);
    fb.ce = h.ecn == 3;
    return fb;
  }
  if (op == 0x11) {  // RC ACKNOWLEDGE: an ACK, or a NAK
    if (!checked(roce::kBthLen + roce::kAethLen + roce::kIcrcLen, Feedback::Kind::kRoceAck)) return fb;
    const uint8_t syndrome = frame[bth + roce::kBthLen];
    fb.code = syndrome & 0x1F;
    fb.msn = Load24(frame + bth + roce::kBthLen + 1);
    switch (syndrome & 0x60) {
      case 0x00: fb.kind = Feedback::Kind::kRoceAck; break;
      // NAK codes 0-4 (PSN sequence error, invalid request, remote access
      // error, remote operational error, invalid RD request); 5-31 are reserved.
      case 0x60: fb.kind = fb.code <= 4 ? Feedback::Kind::kRoceNak : Feedback::Kind::kInvalid; break;
      case 0x20: fb.kind = Feedback::Kind::kNone; break;  // RNR NAK: valid, not one fabricgen acts on
      default: fb.kind = Feedback::Kind::kInvalid; break;  // 10: reserved
    }
    return fb;
  }
  // Any other opcode: a signed frame the walk did not take (its headers are
  // none a stream writes) is counted apart; the rest is RoCEv2 traffic that
  // is not ours.
  const int at = internal::kRocePayloadOffset[op];
  if (at >= 0 && SignedButNotTaken(frame, len, bth + static_cast<size_t>(at), h.end, opt)) {
    fb.kind = Feedback::Kind::kInvalid;
  }
  return fb;
}

}  // namespace

// Off the fast path: frames without a signature are few (feedback, READ
// requests, the network's own traffic).
Feedback ClassifyFeedback(const uint8_t* frame, size_t len, const SignatureParse& opt) {
  Feedback fb;
  const Headers h = ParseHeaders(frame, len, opt);
  switch (h.verdict) {
    case Headers::Verdict::kOther: return fb;
    case Headers::Verdict::kInvalid: fb.kind = Feedback::Kind::kInvalid; return fb;
    case Headers::Verdict::kUetNative: {
      const size_t pds = h.l4 + kUetEntropyHeaderLen;
      const size_t sh = internal::UetHeadersLen(frame + pds, h.end - pds, opt);
      if (sh != 0 && SignedButNotTaken(frame, len, pds + sh, h.end, opt)) fb.kind = Feedback::Kind::kInvalid;
      return fb;
    }
    case Headers::Verdict::kUdp: break;
  }
  const size_t p = h.l4 + kUdpHeaderLen;
  if (h.dport == opt.roce_port) return ClassifyRoce(frame, len, h, opt);
  if (h.dport == opt.uet_port) {
    if (h.end >= p + 16) {
      const uint8_t pds_type = frame[p] >> 3;
      if (pds_type == static_cast<uint8_t>(uet::PdsType::kNack) ||
          pds_type == static_cast<uint8_t>(uet::PdsType::kNackCcx)) {
        fb.kind = Feedback::Kind::kUetNack;
        fb.code = frame[p + 2];
        fb.key = Load16(frame + p + 10);  // DPDCID: the initiator's PDC
        return fb;
      }
    }
    const size_t sh = internal::UetHeadersLen(frame + p, h.end - p, opt);
    if (sh != 0 && SignedButNotTaken(frame, len, p + sh, h.end, opt)) fb.kind = Feedback::Kind::kInvalid;
    return fb;
  }
  if (SignedButNotTaken(frame, len, p, h.end, opt)) fb.kind = Feedback::Kind::kInvalid;  // plain UDP
  return fb;
}

bool RoceIcrcValid(const uint8_t* frame, size_t len, const SignatureParse& opt) {
  const Headers h = ParseHeaders(frame, len, opt);
  if (h.verdict != Headers::Verdict::kUdp || h.dport != opt.roce_port) return true;
  if (h.end < h.l4 + kUdpHeaderLen + roce::kBthLen + roce::kIcrcLen) return false;
  return IcrcMatches(frame, h);
}

}  // namespace fg::proto
static_assert(fg::proto::kRoceBthLen == fg::proto::roce::kBthLen &&
              fg::proto::kRoceIcrcLen == fg::proto::roce::kIcrcLen &&
              fg::proto::kUetEntropyHeaderLen == fg::proto::uet::kEntropyHeaderLen);
