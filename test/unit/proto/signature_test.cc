#include "proto/signature.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "proto/frame.h"
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
// mostly, so layouts change, and in the magic), or cut short. Every answer
// (offset, ECN bits, payload end) must be the walk's. Both compares: the
// SSE4.1 one the build uses, and the 64-bit word one of targets without it.
template <class Finder>
void ExpectTheLayoutCacheAnswersAsTheWalk() {
  std::vector<std::vector<uint8_t>> templates;
  for (bool v6 : {false, true}) {
    for (bool vlan : {false, true}) {
      Encap e;
      e.l3.ipv6 = v6;
      if (vlan) e.vlan = VlanTag{.id = 5};
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
    // Runs of one template, as a queue sees them, then another.
    const std::vector<uint8_t>& t = templates[(i / 16) % templates.size()];
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
    if (walk >= 0) {
      ++found;
      ASSERT_EQ(ecn_cache, ecn_walk) << "frame " << i;
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
    // Cut inside its RETH: not a READ request.
    EXPECT_EQ(ClassifyFeedback(t.bytes.data(), t.bytes.size() - 4 - 8).kind, Feedback::Kind::kNone);
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

}  // namespace
}  // namespace fg::proto
