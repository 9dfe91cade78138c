#include "proto/cm.h"

#include <cstring>

#include "proto/headers.h"
#include "proto/icrc.h"
#include "proto/roce.h"

namespace fg::proto::cm {

namespace {

void Put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
void Put32(uint8_t* p, uint32_t v) {
  Put16(p, static_cast<uint16_t>(v >> 16));
  Put16(p + 2, static_cast<uint16_t>(v));
}
void Put64(uint8_t* p, uint64_t v) {
  Put32(p, static_cast<uint32_t>(v >> 32));
  Put32(p + 4, static_cast<uint32_t>(v));
}
uint32_t Get24(const uint8_t* p) { return uint32_t{p[0]} << 16 | uint32_t{p[1]} << 8 | p[2]; }
uint32_t Get32(const uint8_t* p) { return Get24(p) << 8 | p[3]; }
uint64_t Get64(const uint8_t* p) { return uint64_t{Get32(p)} << 32 | Get32(p + 4); }

// A GID for an address: IPv6 as it is, IPv4 mapped (::ffff:a.b.c.d).
void PutGid(uint8_t* p, const L3Spec& l3, bool src) {
  if (l3.ipv6) {
    std::memcpy(p, (src ? l3.src6 : l3.dst6).bytes.data(), 16);
    return;
  }
  std::memset(p, 0, 10);
  p[10] = p[11] = 0xFF;
  Put32(p + 12, (src ? l3.src4 : l3.dst4).value);
}

// The CM message after the MAD header (IBA 12.6.5, 12.6.8, 12.6.9): offsets
// from the start of the message data.
void WriteMessage(uint8_t* d, const Encap& e, const Message& m) {
  Put32(d + 0, m.local_comm_id);
  if (m.attr == kReq) {
    Put64(d + 8, m.service_id);
    Put64(d + 16, m.local_ca_guid);
    Put32(d + 28, 0);  // local Q_Key (RC: unused)
    Put24(d + 32, m.local_qpn);
    d[35] = 1;  // responder resources
    d[39] = 1;  // initiator depth
    // remote EECN 0; remote CM response timeout 20 | transport RC (0) | end-to-end flow control 1
    d[43] = static_cast<uint8_t>(20 << 3 | 0 << 1 | 1);
    Put24(d + 44, m.start_psn);
    d[47] = static_cast<uint8_t>(20 << 3 | 7);  // local CM response timeout 20 | retry count 7
    Put16(d + 48, m.pkey);                      // partition key
    d[50] = static_cast<uint8_t>(m.pmtu_code << 4 | 0 << 3 | 7);  // path MTU | RDC exists 0 | RNR retry 7
    d[51] = static_cast<uint8_t>(15 << 4);                        // max CM retries 15 | SRQ 0 | ext 0
    // Primary path: LIDs permissive (RoCE routes by GID), the GIDs, the IP header's class and hop limit.
    Put16(d + 52, 0xFFFF);
    Put16(d + 54, 0xFFFF);
    PutGid(d + 56, e.l3, true);
    PutGid(d + 72, e.l3, false);
    Put32(d + 88, (e.l3.flow_label & 0xFFFFF) << 12 | 0x03);  // flow label | packet rate 3 (10 Gb/s)
    d[92] = static_cast<uint8_t>(e.l3.dscp << 2);              // traffic class
    d[93] = e.l3.ttl;                                          // hop limit
    d[94] = 0;                                                 // SL 0 | subnet local 0
    d[95] = static_cast<uint8_t>(18 << 3);                     // local ACK timeout 18 (1 s)
  } else if (m.attr == kRep) {
    Put32(d + 4, m.remote_comm_id);
    Put32(d + 8, 0);  // local Q_Key
    Put24(d + 12, m.local_qpn);
    Put24(d + 20, m.start_psn);
    d[24] = 1;                             // responder resources
    d[25] = 1;                             // initiator depth
    d[26] = static_cast<uint8_t>(15 << 3 | 0 << 1 | 1);  // target ACK delay 15 | failover 0 | end-to-end flow control 1
    d[27] = static_cast<uint8_t>(7 << 5);  // RNR retry 7 | SRQ 0
    Put64(d + 28, m.local_ca_guid);
  } else {  // RTU
    Put32(d + 4, m.remote_comm_id);
  }
}

}  // namespace

uint8_t MtuCode(uint32_t pmtu) {
  switch (pmtu) {
    case 256: return 1;
    case 512: return 2;
    case 1024: return 3;
    case 2048: return 4;
    case 4096: return 5;
    default: return 0;
  }
}

uint64_t GuidOfMac(const MacAddr& mac) {
  const auto& b = mac.bytes;
  return uint64_t{static_cast<uint8_t>(b[0] ^ 0x02)} << 56 | uint64_t{b[1]} << 48 | uint64_t{b[2]} << 40 |
         uint64_t{0xFF} << 32 | uint64_t{0xFE} << 24 | uint64_t{b[3]} << 16 | uint64_t{b[4]} << 8 | b[5];
}

std::vector<uint8_t> BuildFrame(const Encap& e, const Message& m, uint32_t psn) {
  Encap enc = e;
  enc.udp = true;
  enc.udp_dst = roce::kUdpPort;
  enc.udp_checksum = false;
  uint8_t transport[20];
  roce::Bth bth;
  bth.opcode = kUdSendOnly;
  bth.dest_qp = kGsiQp;
  bth.psn = psn & roce::kPsnMask;
  size_t n = roce::WriteBth(transport, bth);
  n += roce::WriteDeth(transport + n, roce::Deth{kGsiQkey, kGsiQp});
  FrameTemplate t = proto::BuildFrame(enc, std::span<const uint8_t>(transport, n), kMadLen, 0, Trailer::kIcrc);
  uint8_t* mad = t.bytes.data() + t.payload_offset;
  std::memset(mad, 0, kMadLen);
  mad[0] = 1;  // base version
  mad[1] = kClassCm;
  mad[2] = kClassVersion;
  mad[3] = kMethodSend;
  Put64(mad + 8, m.transaction_id);
  Put16(mad + 16, m.attr);
  WriteMessage(mad + kMadHeaderLen, enc, m);
  const IcrcLayout layout{.l3_offset = t.l3_offset, .ipv6 = t.ipv6, .icrc_offset = static_cast<uint32_t>(t.icrc_offset)};
  StoreIcrc(t.bytes.data() + t.icrc_offset, IcrcFull(t.bytes.data(), layout));
  return std::move(t.bytes);
}

std::optional<Message> Parse(std::span<const uint8_t> f) {
  const auto eth = ParseEthernet(f);
  if (!eth) return std::nullopt;
  size_t off = eth->header_len;
  if (eth->ethertype == kEtherTypeIpv4) {
    const auto ip = ParseIpv4(f.subspan(off));
    if (!ip || ip->protocol != kIpProtoUdp) return std::nullopt;
    off += ip->header_len;
  } else if (eth->ethertype == kEtherTypeIpv6) {
    const auto ip = ParseIpv6(f.subspan(off));
    if (!ip || ip->next_header != kIpProtoUdp) return std::nullopt;
    off += kIpv6HeaderLen;
  } else {
    return std::nullopt;
  }
  const auto udp = ParseUdp(f.subspan(std::min(off, f.size())));
  if (!udp || udp->dst_port != roce::kUdpPort) return std::nullopt;
  off += 8;
  if (f.size() < off + 20 + kMadLen) return std::nullopt;
  const auto bth = roce::ParseBth(f.subspan(off));
  if (!bth || bth->opcode != kUdSendOnly || bth->dest_qp != kGsiQp) return std::nullopt;
  const uint8_t* mad = f.data() + off + 20;
  if (mad[0] != 1 || mad[1] != kClassCm || mad[2] != kClassVersion) return std::nullopt;
  Message m;
  m.attr = static_cast<uint16_t>(mad[16] << 8 | mad[17]);
  m.transaction_id = Get64(mad + 8);
  const uint8_t* d = mad + kMadHeaderLen;
  m.local_comm_id = Get32(d);
  switch (m.attr) {
    case kReq:
      m.service_id = Get64(d + 8);
      m.local_ca_guid = Get64(d + 16);
      m.local_qpn = Get24(d + 32);
      m.start_psn = Get24(d + 44);
      m.pkey = static_cast<uint16_t>(d[48] << 8 | d[49]);
      m.pmtu_code = static_cast<uint8_t>(d[50] >> 4);
      break;
    case kRep:
      m.remote_comm_id = Get32(d + 4);
      m.local_qpn = Get24(d + 12);
      m.start_psn = Get24(d + 20);
      m.local_ca_guid = Get64(d + 28);
      break;
    case kRtu: m.remote_comm_id = Get32(d + 4); break;
    default: return std::nullopt;
  }
  return m;
}

}  // namespace fg::proto::cm
