#include "proto/signature.h"

#include <gtest/gtest.h>

#include "proto/udp_frame.h"

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

TEST(Signature, FoundAtUdpPayloadWithAndWithoutVlan) {
  for (bool vlan : {false, true}) {
    UdpFrameSpec spec;
    spec.size = 100;
    if (vlan) spec.vlan = VlanTag{.id = 5};
    FrameTemplate t = BuildUdpFrame(spec);
    WriteSignature(t.bytes.data() + t.signature_offset, Signature{.flow_id = 3});
    EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), static_cast<int>(t.signature_offset));
  }
}

TEST(Signature, MagicElsewhereInPayloadIsIgnored) {
  UdpFrameSpec spec;
  spec.size = 200;
  FrameTemplate t = BuildUdpFrame(spec);
  // No signature at the payload start, but the magic 60 bytes further in.
  t.bytes[t.signature_offset] = 0;
  Store16(&t.bytes[t.signature_offset + 60], kSignatureMagic);
  EXPECT_EQ(FindSignatureOffset(t.bytes.data(), t.bytes.size()), -1);
}

TEST(Signature, RejectsTruncatedOtherProtocolsAndFragments) {
  UdpFrameSpec spec;
  FrameTemplate t = BuildUdpFrame(spec);
  WriteSignature(t.bytes.data() + t.signature_offset, Signature{});
  // Every truncation shorter than the end of the signature fails cleanly.
  for (size_t len = 0; len < t.signature_offset + kSignatureLen; ++len) {
    EXPECT_EQ(FindSignatureOffset(t.bytes.data(), len), -1) << len;
  }
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
}

}  // namespace
}  // namespace fg::proto
