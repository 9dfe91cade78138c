#include "proto/udp_frame.h"

#include <gtest/gtest.h>

#include "proto/checksum.h"
#include "proto/signature.h"

namespace fg::proto {
namespace {

// A 64 B default frame, byte for byte (without FCS). The IPv4 checksum 0xae97
// was computed independently (Python one's-complement sum over the header).
TEST(UdpFrame, DefaultSixtyFourByteFrameIsByteExact) {
  UdpFrameSpec spec;
  FrameTemplate t = BuildUdpFrame(spec);
  ASSERT_EQ(t.bytes.size(), 60u);
  EXPECT_EQ(t.signature_offset, 42u);
  const uint8_t expect_headers[42] = {
      0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,  // Ethernet
      0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xae, 0x97,              // IPv4
      0xc6, 0x12, 0x00, 0x01, 0xc6, 0x13, 0x00, 0x01,                                      //
      0xc0, 0x00, 0x13, 0x89, 0x00, 0x1a, 0x00, 0x00,                                      // UDP
  };
  for (int i = 0; i < 42; ++i) EXPECT_EQ(t.bytes[i], expect_headers[i]) << "byte " << i;
  EXPECT_EQ(InternetChecksum(t.bytes.data() + 14, 20), 0);
}

TEST(UdpFrame, VlanTagAndFieldsLandWhereExpected) {
  UdpFrameSpec spec;
  spec.size = 128;
  spec.vlan = VlanTag{.id = 100, .pcp = 3, .dei = true};
  spec.dscp = 26;
  spec.ecn = 1;
  FrameTemplate t = BuildUdpFrame(spec);
  ASSERT_EQ(t.bytes.size(), 124u);
  EXPECT_EQ(Load16(&t.bytes[12]), 0x8100);
  EXPECT_EQ(Load16(&t.bytes[14]), 3 << 13 | 1 << 12 | 100);
  EXPECT_EQ(Load16(&t.bytes[16]), 0x0800);
  EXPECT_EQ(t.bytes[19], 26 << 2 | 1);
  EXPECT_EQ(Load16(&t.bytes[20]), 124 - 18);  // IPv4 total length
  EXPECT_EQ(InternetChecksum(t.bytes.data() + 18, 20), 0);
  EXPECT_EQ(t.signature_offset, 46u);
  EXPECT_EQ(MinUdpFrameSize(spec), 46u + 16 + 4);
}

}  // namespace
}  // namespace fg::proto
