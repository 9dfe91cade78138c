#include "proto/headers.h"

#include <gtest/gtest.h>

#include "proto/checksum.h"
#include "proto/frame.h"

namespace fg::proto {
namespace {

TEST(Headers, Ipv6FrameFieldsAndRoundTrip) {
  Encap e;
  e.l3.ipv6 = true;
  e.l3.dscp = 26;
  e.l3.ecn = 2;
  e.l3.flow_label = 0xABCDE;
  e.l3.ttl = 17;
  e.udp_checksum = true;
  FrameTemplate t = BuildFrame(e, {}, 100, 0, Trailer::kNone);
  auto eth = ParseEthernet(t.bytes);
  ASSERT_TRUE(eth);
  EXPECT_EQ(eth->ethertype, kEtherTypeIpv6);
  auto ip = ParseIpv6(std::span(t.bytes).subspan(t.l3_offset));
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->traffic_class, 26 << 2 | 2);
  EXPECT_EQ(ip->flow_label, 0xABCDEu);
  EXPECT_EQ(ip->hop_limit, 17);
  EXPECT_EQ(ip->payload_length, 108);
  EXPECT_TRUE(IsDocumentationIpv6(ip->src));
  auto udp = ParseUdp(std::span(t.bytes).subspan(t.l4_offset));
  ASSERT_TRUE(udp);
  EXPECT_EQ(udp->length, 108);
  EXPECT_NE(udp->checksum, 0);
  // The checksum verifies: summing pseudo-header + UDP (with checksum) gives 0.
  std::vector<uint8_t> seg(t.bytes.begin() + t.l4_offset, t.bytes.end());
  const uint16_t stored = udp->checksum;
  seg[6] = seg[7] = 0;
  EXPECT_EQ(UdpChecksumIpv6(ip->src, ip->dst, seg), stored);
}

TEST(Headers, Ipv4ParseRejectsMalformed) {
  Encap e;
  FrameTemplate t = BuildFrame(e, {}, 30, 0, Trailer::kNone);
  std::span<const uint8_t> ip(t.bytes.data() + t.l3_offset, 20);
  auto h = ParseIpv4(ip);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->total_length, 20 + 8 + 30);
  EXPECT_TRUE(h->df);
  EXPECT_EQ(InternetChecksum(ip.data(), 20), 0);
  std::vector<uint8_t> bad(ip.begin(), ip.end());
  bad[0] = 0x44;  // IHL 4
  EXPECT_FALSE(ParseIpv4(bad));
  bad[0] = 0x65;  // version 6
  EXPECT_FALSE(ParseIpv4(bad));
  EXPECT_FALSE(ParseIpv4(ip.subspan(0, 19)));
}

TEST(Headers, ShortFramesArePaddedToTheEthernetMinimum) {
  Encap e;
  FrameTemplate t = BuildFrame(e, {}, 0, 0, Trailer::kNone);
  EXPECT_EQ(t.bytes.size(), 60u);
  auto ip = ParseIpv4(std::span(t.bytes).subspan(14));
  EXPECT_EQ(ip->total_length, 28);  // the padding is not part of the IP packet
}

}  // namespace
}  // namespace fg::proto
