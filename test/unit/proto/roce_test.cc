#include "proto/roce.h"

#include <gtest/gtest.h>

#include <random>

#include "absl/strings/escaping.h"
#include "proto/bytes.h"
#include "proto/frame.h"
#include "proto/icrc.h"

namespace fg::proto::roce {
namespace {

std::vector<uint8_t> Hex(const std::string& hex) {
  std::string bytes = absl::HexStringToBytes(hex);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// The known-good CNP of shared/reference/roce.md, IPv4 header through ICRC.
constexpr char kGoldenCnp[] =
    "4589003C98C64000201169271616160816161607DBAE12B7002800008100FFFF400000D2"
    "0000000000000000000000000000000000000000DAFC1BEF";

FrameTemplate BuildGoldenCnp(Trailer trailer = Trailer::kIcrc) {
  Encap e;
  e.l3.src4 = Ipv4Addr{0x16161608};  // 22.22.22.8
  e.l3.dst4 = Ipv4Addr{0x16161607};
  e.l3.dscp = 0x89 >> 2;
  e.l3.ecn = 0x89 & 3;
  e.l3.ip_id = 0x98C6;
  e.l3.ttl = 0x20;
  e.udp_src = 0xDBAE;
  e.udp_dst = kUdpPort;
  uint8_t hdr[kBthLen + kCnpReservedLen] = {};
  WriteBth(hdr, Bth{.opcode = kOpcodeCnp, .becn = true, .dest_qp = 0xD2, .psn = 0});
  return BuildFrame(e, hdr, 0, 0, trailer);
}

TEST(RoceGolden, CnpReproducesTheKnownGoodFrameBitForBit) {
  FrameTemplate t = BuildGoldenCnp();
  const std::vector<uint8_t> want = Hex(kGoldenCnp);
  ASSERT_EQ(t.icrc_offset + 4 - static_cast<int>(t.l3_offset), static_cast<int>(want.size()));
  std::vector<uint8_t> got(t.bytes.begin() + t.l3_offset, t.bytes.begin() + t.icrc_offset + 4);
  EXPECT_EQ(absl::BytesToHexString(std::string(got.begin(), got.end())), absl::AsciiStrToLower(kGoldenCnp));
  EXPECT_EQ(t.frame_size(), 14u + 60 + 4);
}

TEST(RoceGolden, BadIcrcOptionFlipsOnlyTheIcrc) {
  FrameTemplate good = BuildGoldenCnp();
  FrameTemplate bad = BuildGoldenCnp(Trailer::kBadIcrc);
  ASSERT_EQ(good.bytes.size(), bad.bytes.size());
  for (int i = 0; i < good.icrc_offset; ++i) ASSERT_EQ(good.bytes[i], bad.bytes[i]);
  EXPECT_EQ(LoadIcrc(&bad.bytes[bad.icrc_offset]), ~LoadIcrc(&good.bytes[good.icrc_offset]));
}

TEST(Roce, OpcodeTableCarriesTheRightExtensionHeaders) {
  EXPECT_TRUE(Describe(0x06).reth);   // RC WRITE_FIRST
  EXPECT_FALSE(Describe(0x07).reth);  // RC WRITE_MIDDLE
  EXPECT_TRUE(Describe(0x0A).reth);   // RC WRITE_ONLY
  EXPECT_TRUE(Describe(0x0B).reth && Describe(0x0B).immdt);
  EXPECT_EQ(Describe(0x0B).ext_len(), 20u);
  EXPECT_TRUE(Describe(0x0C).reth && !Describe(0x0C).payload);  // READ_REQUEST
  EXPECT_TRUE(Describe(0x0D).aeth);                             // READ_RESP_FIRST
  EXPECT_FALSE(Describe(0x0E).aeth);                            // READ_RESP_MIDDLE
  EXPECT_TRUE(Describe(0x11).aeth && !Describe(0x11).payload);  // ACK
  EXPECT_TRUE(Describe(0x12).atomic_ack_eth);
  EXPECT_EQ(Describe(0x13).ext_len(), kAtomicEthLen);
  EXPECT_TRUE(Describe(0x64).deth);  // UD SEND_ONLY
  EXPECT_EQ(Describe(0x65).ext_len(), kDethLen + kImmDtLen);
  EXPECT_TRUE(Describe(0x2A).valid && Describe(0x2A).reth);  // UC WRITE_ONLY
  EXPECT_FALSE(Describe(0x2C).valid);                        // UC has no READ_REQUEST
  EXPECT_FALSE(Describe(0x66).valid);
  EXPECT_TRUE(Describe(kOpcodeCnp).valid);
  EXPECT_STREQ(Describe(0x08).name, "RC WRITE_LAST");
}

TEST(Roce, HeadersRoundTrip) {
  uint8_t b[16];
  Bth bth{.opcode = 0x0A,
          .solicited = true,
          .pad_count = 3,
          .pkey = 0x1234,
          .fecn = true,
          .dest_qp = 0xABCDEF,
          .ack_req = true,
          .psn = 0xFFFFFF};
  WriteBth(b, bth);
  auto back = ParseBth(std::span(b, kBthLen));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->opcode, 0x0A);
  EXPECT_TRUE(back->solicited);
  EXPECT_EQ(back->pad_count, 3);
  EXPECT_EQ(back->pkey, 0x1234);
  EXPECT_TRUE(back->fecn);
  EXPECT_FALSE(back->becn);
  EXPECT_EQ(back->dest_qp, 0xABCDEFu);
  EXPECT_TRUE(back->ack_req);
  EXPECT_EQ(back->psn, 0xFFFFFFu);
  EXPECT_FALSE(ParseBth(std::span(b, kBthLen - 1)));

  WriteReth(b, Reth{0x1122334455667788ull, 0xCAFEBABE, 1u << 20});
  auto reth = ParseReth(std::span(b, kRethLen));
  EXPECT_EQ(reth->va, 0x1122334455667788ull);
  EXPECT_EQ(reth->rkey, 0xCAFEBABEu);
  EXPECT_EQ(reth->dma_length, 1u << 20);

  WriteAeth(b, Aeth{NakSyndrome(NakCode::kPsnSequenceError), 77});
  auto aeth = ParseAeth(std::span(b, kAethLen));
  EXPECT_EQ(aeth->syndrome, 0x60);
  EXPECT_EQ(aeth->msn, 77u);
  EXPECT_EQ(RnrNakSyndrome(5), 0x25);
  EXPECT_EQ(AckSyndrome(31), 0x1F);

  WriteDeth(b, Deth{0x11111111, 0x123456});
  auto deth = ParseDeth(std::span(b, kDethLen));
  EXPECT_EQ(deth->qkey, 0x11111111u);
  EXPECT_EQ(deth->src_qp, 0x123456u);
}

TEST(Roce, OneMegabyteWriteAtMtu4096) {
  auto m = PlanMessage(Verb::kWrite, Transport::kRc, 1 << 20, 4096);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->packets, 256u);
  EXPECT_EQ(m->Kind(0).opcode, 0x06);
  EXPECT_EQ(m->Kind(1).opcode, 0x07);
  EXPECT_EQ(m->Kind(254).opcode, 0x07);
  EXPECT_EQ(m->Kind(255).opcode, 0x08);
  EXPECT_EQ(m->Kind(255).payload_len, 4096u);
  EXPECT_TRUE(m->Kind(255).last);
}

TEST(Roce, SegmentationPayloadsSumToTheMessageWithPad) {
  for (uint64_t size : {1ull, 3ull, 255ull, 256ull, 257ull, 4095ull, 10000ull, 65537ull}) {
    for (uint32_t mtu : {256u, 1024u, 4096u}) {
      auto m = PlanMessage(Verb::kSendImm, Transport::kUc, size, mtu);
      ASSERT_TRUE(m.ok());
      uint64_t sum = 0;
      for (uint32_t i = 0; i < m->packets; ++i) {
        const Segment& s = m->Kind(i);
        sum += s.payload_len;
        EXPECT_LE(s.payload_len, mtu);
        EXPECT_EQ((s.payload_len + s.pad) % 4, 0u);
        EXPECT_EQ(s.opcode & 0xE0, 0x20);  // UC
      }
      EXPECT_EQ(sum, size) << size << " @ " << mtu;
      EXPECT_EQ(m->Kind(m->packets - 1).opcode & 0x1F, m->packets == 1 ? 0x05 : 0x03);
    }
  }
}

TEST(Roce, PlanRejectsWhatTheWireCannotCarry) {
  EXPECT_FALSE(PlanMessage(Verb::kWrite, Transport::kRc, 100, 1500).ok());
  EXPECT_FALSE(PlanMessage(Verb::kWrite, Transport::kRc, 0, 1024).ok());
  EXPECT_FALSE(PlanMessage(Verb::kWrite, Transport::kRc, 1ull << 32, 1024).ok());
  EXPECT_FALSE(PlanMessage(Verb::kWrite, Transport::kUd, 100, 1024).ok());
  EXPECT_FALSE(PlanMessage(Verb::kSend, Transport::kUd, 2000, 1024).ok());
  EXPECT_FALSE(PlanMessage(Verb::kReadResponse, Transport::kUc, 100, 1024).ok());
  EXPECT_TRUE(PlanMessage(Verb::kSend, Transport::kUd, 1024, 1024).ok());
}

// The incremental ICRC equals the full computation and the bitwise reference
// for random rewrites of the per-packet fields, on IPv4 and IPv6.
TEST(Icrc, IncrementalEqualsFullOnRandomFieldRewrites) {
  std::mt19937_64 rng(42);
  for (bool v6 : {false, true}) {
    for (uint32_t payload : {16u, 1024u, 4096u}) {
      Encap e;
      e.l3.ipv6 = v6;
      e.udp_dst = kUdpPort;
      uint8_t hdr[kBthLen + kRethLen];
      WriteBth(hdr, Bth{.opcode = 0x0A, .dest_qp = 0x12, .psn = 0});
      WriteReth(hdr + kBthLen, Reth{0x1000, 0x55, payload});
      FrameTemplate t = BuildFrame(e, hdr, payload, 0, Trailer::kIcrc);
      const IcrcLayout layout{t.l3_offset, v6, static_cast<uint32_t>(t.icrc_offset)};
      ASSERT_EQ(LoadIcrc(&t.bytes[t.icrc_offset]), IcrcReference(t.bytes.data(), layout));
      const uint32_t bth = t.transport_offset;
      std::vector<uint32_t> pos = {t.l4_offset, t.l4_offset + 1,              // UDP source port (entropy)
                                   bth + 9, bth + 10, bth + 11};              // PSN
      for (uint32_t k = 6; k < 16; ++k) pos.push_back(t.payload_offset + k);  // signature seq + timestamp
      pos.push_back(t.l3_offset + (v6 ? 7 : 8));  // TTL / hop limit: masked, must be ignored
      IcrcDelta delta(t.bytes.data(), layout, pos);
      EXPECT_EQ(delta.num_positions(), pos.size());  // the masked one with a zero table
      std::vector<uint8_t> f = t.bytes;
      for (int trial = 0; trial < 200; ++trial) {
        for (uint32_t p : pos) f[p] = static_cast<uint8_t>(rng());
        const uint32_t full = IcrcFull(f.data(), layout);
        ASSERT_EQ(delta.Compute(f.data()), full) << "v6=" << v6 << " payload=" << payload;
        ASSERT_EQ(IcrcReference(f.data(), layout), full);
        // The same from the field values (big-endian, as the TX path writes them).
        const uint32_t by_field = delta.base() ^ delta.Field<2>(0, proto::Load16(&f[pos[0]])) ^
                                  delta.Field<3>(2, proto::Load24(&f[pos[2]])) ^
                                  delta.Field<4>(5, proto::Load32(&f[pos[5]])) ^
                                  delta.Field<6>(9, proto::Load48(&f[pos[9]])) ^ delta.Field<1>(15, f[pos[15]]);
        ASSERT_EQ(by_field, full) << "v6=" << v6 << " payload=" << payload;
      }
    }
  }
}

TEST(Icrc, MaskedFieldsDoNotChangeIt) {
  FrameTemplate t = BuildGoldenCnp();
  const IcrcLayout layout{t.l3_offset, false, static_cast<uint32_t>(t.icrc_offset)};
  const uint32_t base = IcrcFull(t.bytes.data(), layout);
  std::vector<uint8_t> f = t.bytes;
  f[t.l3_offset + 1] ^= 0xFF;        // TOS (ECN marking on the path)
  f[t.l3_offset + 8] -= 3;           // TTL
  f[t.l3_offset + 10] ^= 0x5A;       // IP checksum
  f[t.l4_offset + 6] = 0x12;         // UDP checksum
  f[t.transport_offset + 4] = 0x80;  // FECN set by a switch
  EXPECT_EQ(IcrcFull(f.data(), layout), base);
  f[t.l4_offset] ^= 1;  // the UDP source port is covered
  EXPECT_NE(IcrcFull(f.data(), layout), base);
}

}  // namespace
}  // namespace fg::proto::roce
