#include "proto/signature.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "proto/frame.h"
#include "proto/icrc.h"
#include "proto/roce.h"
#include "proto/uet.h"

namespace fg::proto {
namespace {

TEST(Signature, WriteReadRoundTripAndLayout) {
  uint8_t buf[16] = {};
  WriteSignature(
      buf,
      Signature{.flags = kSigFlagTimestamp, .flow_id = 0xABCDEF, .seq = 0x01020304, .tx_ns = 0x1122334455667788ull});
  const uint8_t expect[16] = {0xFA, 0x6E, 0x01, 0xAB, 0xCD, 0xEF, 0x01, 0x02,
                              0x03, 0x04, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(buf[i], expect[i]) << "byte " << i;
  Signature s = ReadSignature(buf);
  EXPECT_EQ(s.flow_id, 0xABCDEFu);
  EXPECT_EQ(s.seq, 0x01020304u);
  EXPECT_EQ(s.tx_ns, 0x334455667788ull);  // 48 bits kept
  StampSignature(buf, 9, 10);
  EXPECT_EQ(ReadSignature(buf).seq, 9u);
  EXPECT_EQ(ReadSignature(buf).tx_ns, 10u);
  EXPECT_EQ(ReadSignature(buf).flow_id, 0xABCDEFu);
}

// The signature is found where each frame kind puts its payload.
TEST(Signature, FoundAtThePayloadOfEveryFrameKind) {
  for (bool v6 : {false, true}) {
    for (bool vlan : {false, true}) {
      Encap e;
      e.l3.ipv6 = v6;
      if (vlan) e.vlan = VlanTag{.id = 5};
      FrameTemplate udp = BuildFrame(e, {}, 40, 0, Trailer::kNone);
      EXPECT_EQ(FindSignatureOffset(udp.bytes.data(), udp.bytes.size()), udp.signature_offset);

      e.udp_dst = roce::kUdpPort;
      uint8_t hdr[64];
      size_t n = roce::WriteBth(hdr, roce::Bth{.opcode = 0x0B, .pad_count = 2});  // WRITE_ONLY_IMM
      n += roce::WriteReth(hdr + n, roce::Reth{});
      n += 4;  // ImmDt
      FrameTemplate rc = BuildFrame(e, std::span<const uint8_t>(hdr, n), 18, 2, Trailer::kIcrc);
      EXPECT_EQ(FindSignatureOffset(rc.bytes.data(), rc.bytes.size()), rc.signature_offset);
      EXPECT_EQ(rc.signature_offset, static_cast<int32_t>(rc.transport_offset + 12 + 16 + 4));

      e.udp_dst = uet::kUdpPort;
      uet::UetProfile prof;
      n = uet::WritePds(hdr, uet::PdsHeader{.type = uet::PdsType::kRodReq, .next_hdr = uet::NextHdr::kReqSmall}, prof);
      n += uet::WriteSesRequest(hdr + n, uet::SesRequest{.format = uet::NextHdr::kReqSmall}, prof);
      FrameTemplate ue = BuildFrame(e, std::span<const uint8_t>(hdr, n), 64, 0, Trailer::kNone);
      EXPECT_EQ(FindSignatureOffset(ue.bytes.data(), ue.bytes.size()), ue.signature_offset);
      EXPECT_EQ(ue.signature_offset, static_cast<int32_t>(ue.transport_offset + 12 + 20));
    }
  }
}

// The layout cache of an RX queue answers as the walk does, frame by frame:
// a stream of frames of every kind (IPv4/IPv6, VLAN or not, RoCEv2 with
// several opcodes and pads, UDP, UET), most of them copies of a few
// templates and the rest with 1-3 random bytes changed (in the headers
// mostly, so layouts change, and in the magic), or cut short, with frames
// that have no room for a signature (ACKs, NAKs, CNPs, READ requests: the
// finder keeps their layout too) every 9th, as a closed loop's queue sees
// them. Every answer (offset, ECN bits, payload end) must be the walk's.
// Both compares: the SSE4.1 one the build uses, and the 64-bit word one of
// targets without it.
template <class Finder>
void ExpectTheLayoutCacheAnswersAsTheWalk() {
  std::vector<std::vector<uint8_t>> templates, unsigned_templates;
  for (bool v6 : {false, true}) {
    for (bool vlan : {false, true}) {
      Encap e;
      e.l3.ipv6 = v6;
      if (vlan) e.vlan = VlanTag{.id = 5};
      {
        Encap a = e;
        a.udp_dst = roce::kUdpPort;
        a.l3.ecn = 1;
        uint8_t hdr[64] = {};
        // ACK (BTH + AETH), CNP (BTH + 16 zero bytes), READ request (BTH + RETH).
        const size_t ack = roce::WriteBth(hdr, roce::Bth{.opcode = 0x11, .dest_qp = 0x123, .psn = 5});
        roce::WriteAeth(hdr + ack, roce::Aeth{roce::AckSyndrome(31), 9});
        unsigned_templates.push_back(
            BuildFrame(a, std::span<const uint8_t>(hdr, ack + roce::kAethLen), 0, 0, Trailer::kIcrc).bytes);
        uint8_t cnp[64] = {};
        const size_t c = roce::WriteBth(cnp, roce::Bth{.opcode = roce::kOpcodeCnp, .dest_qp = 0x77});
        unsigned_templates.push_back(
            BuildFrame(a, std::span<const uint8_t>(cnp, c + roce::kCnpReservedLen), 0, 0, Trailer::kIcrc).bytes);
        uint8_t rd[64] = {};
        const size_t r = roce::WriteBth(rd, roce::Bth{.opcode = 0x0C, .dest_qp = 0x300, .psn = 7});
        roce::WriteReth(rd + r, roce::Reth{});
        unsigned_templates.push_back(
            BuildFrame(a, std::span<const uint8_t>(rd, r + roce::kRethLen), 0, 0, Trailer::kIcrc).bytes);
      }
      templates.push_back(BuildFrame(e, {}, 40, 0, Trailer::kNone).bytes);
      e.udp_dst = roce::kUdpPort;
      for (uint8_t op : {uint8_t{0x04}, uint8_t{0x0A}, uint8_t{0x0B}}) {  // SEND_ONLY, WRITE_ONLY, WRITE_ONLY_IMM
        uint8_t hdr[64];
        size_t n = roce::WriteBth(hdr, roce::Bth{.opcode = op, .pad_count = static_cast<uint8_t>(op & 3)});
        if (op != 0x04) n += roce::WriteReth(hdr + n, roce::Reth{});
        if (op == 0x0B) n += 4;
        templates.push_back(
            BuildFrame(e, std::span<const uint8_t>(hdr, n), 18, static_cast<uint8_t>(op & 3), Trailer::kIcrc).bytes);
      }
      e.udp_dst = uet::kUdpPort;
      uint8_t hdr[64];
      size_t n =
          uet::WritePds(hdr, uet::PdsHeader{.type = uet::PdsType::kRodReq, .next_hdr = uet::NextHdr::kReqSmall}, {});
      n += uet::WriteSesRequest(hdr + n, uet::SesRequest{.format = uet::NextHdr::kReqSmall}, {});
      templates.push_back(BuildFrame(e, std::span<const uint8_t>(hdr, n), 64, 0, Trailer::kNone).bytes);
    }
  }
  Finder finder;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  size_t found = 0, mutated = 0;
  for (int i = 0; i < 200000; ++i) {
    // Runs of one template, as a queue sees them, then another; every 9th
    // frame one without room for a signature, of the run's family mostly.
    const std::vector<uint8_t>& t =
        i % 9 == 8 ? unsigned_templates[(i / 16 + (i / 9) % 2) % unsigned_templates.size()]
                   : templates[(i / 16) % templates.size()];
    std::vector<uint8_t> f = t;
    const uint64_t r = rnd();
    if (r % 4 == 0) {
      ++mutated;
      for (uint64_t k = 0, nk = 1 + (r >> 8) % 3; k < nk; ++k) {
        const uint64_t q = rnd();
        const size_t at = q % 3 == 0 ? q % f.size() : 12 + (q >> 4) % std::min<size_t>(60, f.size() - 12);
        f[at] ^= static_cast<uint8_t>(1u << ((q >> 20) % 8));
      }
    }
    size_t len = f.size();
    if (r % 97 == 1) len = 14 + (r >> 12) % (f.size() - 14);  // cut short
    uint8_t ecn_walk = 0, ecn_cache = 0;
    uint32_t end_walk = 0, end_cache = 0;
    const int walk = FindSignatureOffset(f.data(), len, {}, &ecn_walk, &end_walk);
    const typename Finder::At at = finder.Find(f.data(), len);
    const int cache = at.offset;
    ecn_cache = at.ecn;
    end_cache = at.payload_end;
    ASSERT_EQ(cache, walk) << "frame " << i;
    ASSERT_EQ(ecn_cache, ecn_walk) << "frame " << i;
    if (walk >= 0) {
      ++found;
      ASSERT_EQ(end_cache, end_walk) << "frame " << i;
    }
  }
  EXPECT_GT(found, 100000u);
  EXPECT_GT(mutated, 40000u);
}

TEST(Signature, TheLayoutCacheAnswersAsTheWalkOnMutatedFrames) {
  ExpectTheLayoutCacheAnswersAsTheWalk<SignatureFinder>();
}

TEST(Signature, TheLayoutCacheAnswersAsTheWalkOnMutatedFramesInItsScalarCompare) {
  ExpectTheLayoutCacheAnswersAsTheWalk<BasicSignatureFinder<false>>();
}

// A closed loop's queue: its data and, between them, its ACKs. The finder
// keeps both layouts, so only the first of each walks; an ACK of another
// QP (bytes the walk did not decide on) does not walk either, while a CNP
// (another opcode) and a frame of another length do.
TEST(Signature, TheLayoutOfFramesWithoutASignatureIsKeptBesideTheDatas) {
  Encap e;
  e.udp_dst = roce::kUdpPort;
  uint8_t hdr[64] = {};
  size_t n = roce::WriteBth(hdr, roce::Bth{.opcode = 0x04, .dest_qp = 0x100});
  const std::vector<uint8_t> data = BuildFrame(e, std::span<const uint8_t>(hdr, n), 64, 0, Trailer::kIcrc).bytes;
  auto ack = [&e](uint32_t qp) {
    uint8_t a[64] = {};
    const size_t k = roce::WriteBth(a, roce::Bth{.opcode = 0x11, .dest_qp = qp, .psn = qp});
    roce::WriteAeth(a + k, roce::Aeth{roce::AckSyndrome(31), qp});
    return BuildFrame(e, std::span<const uint8_t>(a, k + roce::kAethLen), 0, 0, Trailer::kIcrc).bytes;
  };
  const std::vector<uint8_t> ack1 = ack(0x100), ack2 = ack(0x101);
  SignatureFinder f;
  for (int i = 0; i < 10; ++i) {
    EXPECT_GE(f.Find(data.data(), data.size()).offset, 0);
    EXPECT_EQ(f.Find(ack1.data(), ack1.size()).offset, -1);
    EXPECT_EQ(f.Find(ack2.data(), ack2.size()).offset, -1);
  }
  EXPECT_EQ(f.walks(), 2u);
  uint8_t c[64] = {};
  const size_t k = roce::WriteBth(c, roce::Bth{.opcode = roce::kOpcodeCnp, .dest_qp = 0x100});
  const std::vector<uint8_t> cnp =
      BuildFrame(e, std::span<const uint8_t>(c, k + roce::kCnpReservedLen), 0, 0, Trailer::kIcrc).bytes;
  EXPECT_EQ(f.Find(cnp.data(), cnp.size()).offset, -1);
  EXPECT_EQ(f.walks(), 3u);
  EXPECT_EQ(f.Find(ack1.data(), ack1.size() - 1).offset, -1);  // another length
  EXPECT_EQ(f.walks(), 4u);
}

TEST(Signature, PayloadCheckCoversThePayloadOnly) {
  Encap e;
  e.udp_dst = roce::kUdpPort;
  uint8_t hdr[roce::kBthLen];
  roce::WriteBth(hdr, roce::Bth{.opcode = 0x04, .pad_count = 2});  // SEND_ONLY, 18 B payload + 2 B pad
  FrameTemplate t = BuildFrame(e, hdr, 18, 2, Trailer::kIcrc);
  uint32_t end = 0;
  const int off = FindSignatureOffset(t.bytes.data(), t.bytes.size(), {}, nullptr, &end);
  ASSERT_EQ(off, t.signature_offset);
  EXPECT_EQ(end, t.payload_offset + 18);  // before the pad and the ICRC
  EXPECT_EQ(CountPayloadErrors(t.bytes.data(), off, end), 0u);
  t.bytes[t.icrc_offset] ^= 1;  // not payload
  t.bytes[end] ^= 1;            // the pad: not payload
  EXPECT_EQ(CountPayloadErrors(t.bytes.data(), off, end), 0u);
  t.bytes[end - 1] ^= 0x10;
  t.bytes[off + 16] ^= 0x01;
  EXPECT_EQ(CountPayloadErrors(t.bytes.data(), off, end), 2u);
}

TEST(Signature, UetNativeIpMode) {
  Encap e;
  e.udp = false;
  e.ip_protocol = 253;
  uint8_t hdr[64];
  size_t n = uet::WriteEntropyHeader(hdr, 0x1234);
  n += uet::WritePds(hdr + n, uet::PdsHeader{.type = uet::PdsType::kUudReq, .next_hdr = uet::NextHdr::kReqSmall},
                     uet::UetProfile{});
  n += uet::WriteSesRequest(hdr + n, uet::SesRequest{.format = uet::NextHdr::kReqSmall}, uet::UetProfile{});
  FrameTemplate t = BuildFrame(e, std::span<const uint8_t>(hdr, n), 32, 0, Trailer::kNone);
  EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), t.signature_offset);
}

TEST(Signature, MagicElsewhereInPayloadIsIgnored) {
  Encap e;
  FrameTemplate t = BuildFrame(e, {}, 200, 0, Trailer::kNone);
  t.bytes[t.signature_offset] = 0;                              // no signature at the payload start...
  Store16(&t.bytes[t.signature_offset + 60], kSignatureMagic);  // ...but the magic further in
  EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), -1);
}

TEST(Signature, RoceFrameWithoutDataIsNotATestFrame) {
  Encap e;
  e.udp_dst = roce::kUdpPort;
  uint8_t hdr[roce::kBthLen + roce::kCnpReservedLen] = {};
  roce::WriteBth(hdr, roce::Bth{.opcode = roce::kOpcodeCnp});
  FrameTemplate t = BuildFrame(e, hdr, 0, 0, Trailer::kIcrc);
  EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), -1);
}

// An RC READ request has no payload, hence no signature: it is classified
// with its QP, its PSN and whether it is CE-marked (IPv4 and IPv6).
TEST(Signature, ReadRequestIsClassifiedByItsQpPsnAndCe) {
  for (const bool v6 : {false, true}) {
    Encap e;
    e.udp_dst = roce::kUdpPort;
    e.l3.ipv6 = v6;
    e.l3.ecn = 3;
    uint8_t hdr[roce::kBthLen + roce::kRethLen] = {};
    roce::Bth b;
    b.opcode = 0x0C;
    b.dest_qp = 0x123456;
    b.psn = 0xABCDEF;
    roce::WriteBth(hdr, b);
    FrameTemplate t = BuildFrame(e, hdr, 0, 0, Trailer::kIcrc);
    EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), -1);
    const Feedback fb = ClassifyFeedback(t.bytes.data(), t.bytes.size());
    EXPECT_EQ(fb.kind, Feedback::Kind::kRoceReadRequest) << v6;
    EXPECT_EQ(fb.key, 0x123456u);
    EXPECT_EQ(fb.psn, 0xABCDEFu);
    EXPECT_TRUE(fb.ce);
    e.l3.ecn = 2;
    FrameTemplate ect = BuildFrame(e, hdr, 0, 0, Trailer::kIcrc);
    EXPECT_FALSE(ClassifyFeedback(ect.bytes.data(), ect.bytes.size()).ce);
    // Cut inside its RETH: its IP length claims bytes the frame lacks (invalid, not a READ request).
    EXPECT_EQ(ClassifyFeedback(t.bytes.data(), t.bytes.size() - 4 - 8).kind, Feedback::Kind::kInvalid);
  }
}

TEST(Signature, RejectsTruncatedOtherProtocolsAndFragments) {
  Encap e;
  FrameTemplate t = BuildFrame(e, {}, 16, 0, Trailer::kNone);
  const size_t end = static_cast<size_t>(t.signature_offset) + kSignatureLen;
  for (size_t len = 0; len < end; ++len) EXPECT_EQ(FindSignatureOffset(t.bytes.data(), len), -1) << len;
  auto tcp = t.bytes;
  tcp[23] = 6;
  EXPECT_EQ(FindSignatureOffset(tcp.data(), tcp.size()), -1);
  auto frag = t.bytes;
  frag[20] = 0x20;  // MF
  EXPECT_EQ(FindSignatureOffset(frag.data(), frag.size()), -1);
  auto arp = t.bytes;
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(FindSignatureOffset(arp.data(), arp.size()), -1);
  // An IP total length that claims less than the signature needs.
  auto shortip = t.bytes;
  shortip[17] = 20 + 8 + 8;
  EXPECT_EQ(FindSignatureOffset(shortip.data(), shortip.size()), -1);
}

// Hostile input (issue 26): frames injected at a running port. Each case is a
// known byte vector (a frame fabricgen builds, or roce.md's known-good CNP)
// with named bytes changed; each must be neither a test frame nor feedback,
// but invalid (counted apart: report.json ports[].rx_invalid_packets).

std::vector<uint8_t> Hex(const std::string& hex) {
  const std::string b = absl::HexStringToBytes(hex);
  return std::vector<uint8_t>(b.begin(), b.end());
}

// shared/reference/roce.md's known-good CNP (IPv4 header through ICRC, to QP
// 0xD2) behind an Ethernet header: 74 bytes, the BTH at 42, the 16 reserved
// bytes at 54, the ICRC at 70.
std::vector<uint8_t> GoldenCnpFrame() {
  return Hex("020000000002020000000001" "0800"
             "4589003C98C64000201169271616160816161607DBAE12B7002800008100FFFF400000D2"
             "0000000000000000000000000000000000000000DAFC1BEF");
}

// Writes the ICRC of the untagged frame `f` again (after a change the test
// wants to be the only flaw), by the bit-by-bit reference.
void ReIcrc(std::vector<uint8_t>& f, bool ipv6 = false) {
  const uint32_t end = ipv6 ? 14 + 40 + Load16(&f[18]) : 14 + Load16(&f[16]);
  const IcrcLayout l{14, ipv6, end - 4};
  StoreIcrc(&f[end - 4], IcrcReference(f.data(), l));
}

Feedback::Kind KindOf(const std::vector<uint8_t>& f) { return ClassifyFeedback(f.data(), f.size()).kind; }

TEST(Hostile, TheKnownGoodCnpIsACnp) {
  const std::vector<uint8_t> f = GoldenCnpFrame();
  ASSERT_EQ(f.size(), 74u);
  const Feedback fb = ClassifyFeedback(f.data(), f.size());
  EXPECT_EQ(fb.kind, Feedback::Kind::kRoceCnp);
  EXPECT_EQ(fb.key, 0xD2u);
}

// The audit's 300 "CNPs" were a bare BTH (no reserved bytes, no ICRC); each
// of them, and each CNP with one flaw, is invalid: it never reaches a
// reaction point.
TEST(Hostile, CnpsNotShapedAsTheSpecShapesThemAreInvalid) {
  // BTH only: IP total length 40 (bytes 16-17), UDP length 20 (38-39), 54 bytes.
  const std::vector<uint8_t> golden = GoldenCnpFrame();
  std::vector<uint8_t> bare(golden.begin(), golden.begin() + 54);
  bare[16] = 0x00, bare[17] = 0x28;
  bare[38] = 0x00, bare[39] = 0x14;
  EXPECT_EQ(KindOf(bare), Feedback::Kind::kInvalid);
  std::vector<uint8_t> padded = bare;
  padded.resize(60, 0);  // as a NIC pads it on the wire
  EXPECT_EQ(KindOf(padded), Feedback::Kind::kInvalid);

  std::vector<uint8_t> reserved = GoldenCnpFrame();
  reserved[54 + 7] = 0x01;  // a reserved byte set, the ICRC made right for it
  ReIcrc(reserved);
  EXPECT_EQ(KindOf(reserved), Feedback::Kind::kInvalid);

  std::vector<uint8_t> pad = GoldenCnpFrame();
  pad[43] |= 0x10;  // BTH PadCnt 1
  ReIcrc(pad);
  EXPECT_EQ(KindOf(pad), Feedback::Kind::kInvalid);

  std::vector<uint8_t> icrc = GoldenCnpFrame();
  icrc[73] ^= 0x01;
  EXPECT_EQ(KindOf(icrc), Feedback::Kind::kInvalid);

  // Bytes after the IP packet are Ethernet's (a switch's or tap's trailer): the CNP is still one.
  std::vector<uint8_t> trailing = GoldenCnpFrame();
  trailing.insert(trailing.end(), {0xDE, 0xAD, 0xBE, 0xEF});
  EXPECT_EQ(KindOf(trailing), Feedback::Kind::kRoceCnp);

  // A 17th "reserved" byte: the IP and UDP lengths agree with it, the spec's does not.
  std::vector<uint8_t> longer = GoldenCnpFrame();
  longer.insert(longer.begin() + 70, 0x00);
  longer[17] = 0x3D, longer[39] = 0x29;
  ReIcrc(longer);
  EXPECT_EQ(KindOf(longer), Feedback::Kind::kInvalid);
}

// An ACK or NAK is BTH + AETH + ICRC exactly, with a known syndrome: a
// truncated one (the audit's) or a bad ICRC is invalid, never counted.
TEST(Hostile, AcksAndNaksMustBeWholeWithAValidIcrc) {
  auto build = [](uint8_t syndrome, bool aeth, Trailer trailer) {
    Encap e;
    e.udp_dst = roce::kUdpPort;
    uint8_t hdr[roce::kBthLen + roce::kAethLen] = {};
    roce::WriteBth(hdr, roce::Bth{.opcode = 0x11, .dest_qp = 0x123, .psn = 77});
    if (aeth) roce::WriteAeth(hdr + roce::kBthLen, roce::Aeth{syndrome, 9});
    return BuildFrame(e, std::span<const uint8_t>(hdr, aeth ? sizeof hdr : roce::kBthLen), 0, 0, trailer).bytes;
  };
  const std::vector<uint8_t> ack = build(roce::AckSyndrome(31), true, Trailer::kIcrc);
  ASSERT_EQ(ack.size(), 62u);  // 14 + 20 + 8 + 12 + 4 + 4
  const Feedback a = ClassifyFeedback(ack.data(), ack.size());
  EXPECT_EQ(a.kind, Feedback::Kind::kRoceAck);
  EXPECT_EQ(a.key, 0x123u);
  EXPECT_EQ(a.psn, 77u);
  EXPECT_EQ(a.msn, 9u);
  const std::vector<uint8_t> nak = build(0x60, true, Trailer::kIcrc);  // PSN sequence error
  EXPECT_EQ(KindOf(nak), Feedback::Kind::kRoceNak);
  EXPECT_EQ(KindOf(build(0x20, true, Trailer::kIcrc)), Feedback::Kind::kNone);     // RNR NAK: not ours to act on
  EXPECT_EQ(KindOf(build(0x7F, true, Trailer::kIcrc)), Feedback::Kind::kInvalid);  // NAK code 31: reserved
  EXPECT_EQ(KindOf(build(0x40, true, Trailer::kIcrc)), Feedback::Kind::kInvalid);  // syndrome 10: reserved
  EXPECT_EQ(KindOf(build(0, true, Trailer::kBadIcrc)), Feedback::Kind::kInvalid);
  EXPECT_EQ(KindOf(build(0, false, Trailer::kIcrc)), Feedback::Kind::kInvalid);  // no AETH: lengths agree, too short
  EXPECT_EQ(ClassifyFeedback(ack.data(), ack.size() - 6).kind, Feedback::Kind::kInvalid);  // cut short
  // Frames this process built (the built-in loopback): the ICRC is not
  // read, the shape still is.
  SignatureParse own;
  own.feedback_icrc = false;
  const std::vector<uint8_t> bad = build(0, true, Trailer::kBadIcrc);
  EXPECT_EQ(ClassifyFeedback(bad.data(), bad.size(), own).kind, Feedback::Kind::kRoceAck);
  EXPECT_EQ(ClassifyFeedback(ack.data(), ack.size() - 6, own).kind, Feedback::Kind::kInvalid);
  const std::vector<uint8_t> short_one = build(0, false, Trailer::kIcrc);
  EXPECT_EQ(ClassifyFeedback(short_one.data(), short_one.size(), own).kind, Feedback::Kind::kInvalid);
}

TEST(Hostile, ReadRequestsMustBeWholeWithAValidIcrc) {
  Encap e;
  e.udp_dst = roce::kUdpPort;
  uint8_t hdr[roce::kBthLen + roce::kRethLen] = {};
  roce::WriteBth(hdr, roce::Bth{.opcode = 0x0C, .dest_qp = 0x300, .psn = 0xFFFFFF});
  EXPECT_EQ(KindOf(BuildFrame(e, hdr, 0, 0, Trailer::kIcrc).bytes), Feedback::Kind::kRoceReadRequest);
  EXPECT_EQ(KindOf(BuildFrame(e, hdr, 0, 0, Trailer::kBadIcrc).bytes), Feedback::Kind::kInvalid);
  EXPECT_EQ(KindOf(BuildFrame(e, std::span<const uint8_t>(hdr, roce::kBthLen + 8), 0, 0, Trailer::kIcrc).bytes),
            Feedback::Kind::kInvalid);  // half a RETH
}

// A plain UDP test frame (106 bytes: IPv4 total length 92 at bytes 16-17,
// UDP length 72 at 38-39, the signature at 42) with one header made to
// contradict the frame: none is a test frame, to the walk or to an RX
// queue's layout cache that holds the genuine frame's layout, and each is
// invalid.
TEST(Hostile, HeadersThatContradictTheFramesLengthAreInvalid) {
  const std::vector<uint8_t> good = BuildFrame(Encap{}, {}, 64, 0, Trailer::kNone).bytes;
  ASSERT_EQ(good.size(), 106u);
  ASSERT_EQ(Load16(&good[16]), 92);
  ASSERT_EQ(Load16(&good[38]), 72);
  ASSERT_EQ(Load16(&good[42]), kSignatureMagic);
  ASSERT_EQ(FindSignatureOffset(good.data(), good.size()), 42);
  EXPECT_EQ(KindOf(good), Feedback::Kind::kNone);  // a test frame is no feedback
  struct Case {
    const char* what;
    std::vector<uint8_t> f;
  };
  auto with16 = [&](size_t at, uint16_t v) {
    std::vector<uint8_t> f = good;
    Store16(&f[at], v);
    return f;
  };
  std::vector<Case> cases = {
      {"UDP length 0", with16(38, 0)},
      {"UDP length 7", with16(38, 7)},
      {"UDP length 65535", with16(38, 65535)},
      {"UDP length 71", with16(38, 71)},
      {"IPv4 total length 65535", with16(16, 65535)},
      {"IPv4 total length 91: a byte after the IP packet", with16(16, 91)},
      {"IHL 12 without options", [&] {
         std::vector<uint8_t> f = good;
         f[14] = 0x4C;
         return f;
       }()},
  };
  {
    // A trailer after the IP packet (a switch's timestamp) leaves the frame the stream's.
    std::vector<uint8_t> f = good;
    f.insert(f.end(), 8, 0xAA);
    EXPECT_EQ(FindSignatureOffset(f.data(), f.size()), FindSignatureOffset(good.data(), good.size()));
    cases.push_back({"cut by a byte", std::vector<uint8_t>(good.begin(), good.end() - 1)});
  }
  {
    // IHL 12 whose 28 "option" bytes are zero, the UDP header and the
    // signature where that IHL puts them, every length consistent: a
    // header no stream writes (fabricgen sends no IPv4 options).
    std::vector<uint8_t> f(good.begin(), good.begin() + 34);
    f[14] = 0x4C;
    f.insert(f.end(), 28, 0x00);
    f.insert(f.end(), good.begin() + 34, good.end());
    Store16(&f[16], 92 + 28);
    cases.push_back({"IHL 12, zero options, lengths consistent", f});
  }
  {
    Encap e6;
    e6.l3.ipv6 = true;
    std::vector<uint8_t> f = BuildFrame(e6, {}, 64, 0, Trailer::kNone).bytes;
    ASSERT_EQ(FindSignatureOffset(f.data(), f.size()), 14 + 40 + 8);
    Store16(&f[18], 65535);
    cases.push_back({"IPv6 payload length 65535", f});
  }
  cases.push_back({"a VLAN tag cut short", Hex("020000000002020000000001" "8100")});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(FindSignatureOffset(c.f.data(), c.f.size()), -1);
    SignatureFinder finder;  // holding the genuine frame's layout
    ASSERT_EQ(finder.Find(good.data(), good.size()).offset, 42);
    EXPECT_EQ(finder.Find(c.f.data(), c.f.size()).offset, -1);
    EXPECT_EQ(KindOf(c.f), Feedback::Kind::kInvalid);
  }
  // Ethernet's padding after a short IP packet is no contradiction.
  const std::vector<uint8_t> small = BuildFrame(Encap{}, {}, 16, 0, Trailer::kNone).bytes;
  ASSERT_EQ(small.size(), 60u);  // 58 of IP packet, 2 of padding
  EXPECT_EQ(FindSignatureOffset(small.data(), small.size()), 42);
}

// RoCEv2 data: BTH version 0 only; the ICRC a responding port checks.
TEST(Hostile, RoceDataOfAnotherBthVersionOrABadIcrc) {
  Encap e;
  e.udp_dst = roce::kUdpPort;
  uint8_t hdr[roce::kBthLen] = {};
  roce::WriteBth(hdr, roce::Bth{.opcode = 0x04, .dest_qp = 0x200});  // SEND_ONLY
  std::vector<uint8_t> f = BuildFrame(e, hdr, 64, 0, Trailer::kIcrc).bytes;
  ASSERT_EQ(FindSignatureOffset(f.data(), f.size()), 14 + 20 + 8 + 12);
  EXPECT_TRUE(RoceIcrcValid(f.data(), f.size()));
  std::vector<uint8_t> tver = f;
  tver[14 + 20 + 8 + 1] |= 0x01;  // TVer 1
  ReIcrc(tver);
  EXPECT_EQ(FindSignatureOffset(tver.data(), tver.size()), -1);
  EXPECT_EQ(KindOf(tver), Feedback::Kind::kInvalid);
  const std::vector<uint8_t> bad = BuildFrame(e, hdr, 64, 0, Trailer::kBadIcrc).bytes;
  EXPECT_EQ(FindSignatureOffset(bad.data(), bad.size()), 14 + 20 + 8 + 12);  // the analysis counts it...
  EXPECT_FALSE(RoceIcrcValid(bad.data(), bad.size()));                       // ...a responder takes nothing from it
  const std::vector<uint8_t> udp = BuildFrame(Encap{}, {}, 64, 0, Trailer::kNone).bytes;
  EXPECT_TRUE(RoceIcrcValid(udp.data(), udp.size()));  // not RoCEv2: nothing to check
}

}  // namespace
}  // namespace fg::proto
