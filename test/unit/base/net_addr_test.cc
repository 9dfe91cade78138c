#include "base/net_addr.h"

#include <gtest/gtest.h>

namespace fg {
namespace {

TEST(NetAddr, Ipv4RoundTrip) {
  auto ip = ParseIpv4("198.18.0.1");
  ASSERT_TRUE(ip.ok());
  EXPECT_EQ(ip->value, 0xC6120001u);
  EXPECT_EQ(FormatIpv4(*ip), "198.18.0.1");
  EXPECT_TRUE(IsBenchmarkingIpv4(*ip));
  EXPECT_TRUE(IsBenchmarkingIpv4(*ParseIpv4("198.19.255.255")));
  EXPECT_FALSE(IsBenchmarkingIpv4(*ParseIpv4("198.20.0.1")));
  EXPECT_FALSE(ParseIpv4("198.18.0").ok());
  EXPECT_FALSE(ParseIpv4("198.18.0.256").ok());
}

TEST(NetAddr, IpOfEitherFamilyAndTheAddressesAfterIt) {
  auto v4 = ParseIp("198.18.0.254");
  ASSERT_TRUE(v4.ok());
  EXPECT_FALSE(v4->ipv6);
  EXPECT_EQ(FormatIp(IpPlus(*v4, 3)), "198.18.1.1");
  auto v6 = ParseIp("2001:db8::fffe");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->ipv6);
  EXPECT_EQ(FormatIp(IpPlus(*v6, 3)), "2001:db8::1:1");
  EXPECT_EQ(ParseIp("198.18.0").status().message(), "'198.18.0' is not an IPv4 or IPv6 address");
}

TEST(NetAddr, MacRoundTrip) {
  auto mac = ParseMac("02:00:0a:0B:00:ff");
  ASSERT_TRUE(mac.ok());
  EXPECT_EQ(FormatMac(*mac), "02:00:0a:0b:00:ff");
  EXPECT_FALSE(ParseMac("02:00:0a:0b:00").ok());
  EXPECT_FALSE(ParseMac("02:00:0a:0b:00:ff:11").ok());
  EXPECT_FALSE(ParseMac("zz:00:0a:0b:00:ff").ok());
}

}  // namespace
}  // namespace fg

namespace fg {
namespace {

TEST(NetAddr, Ipv6RoundTrip) {
  auto ip = ParseIpv6("2001:db8::1");
  ASSERT_TRUE(ip.ok());
  EXPECT_EQ(ip->bytes[0], 0x20);
  EXPECT_EQ(ip->bytes[15], 0x01);
  EXPECT_TRUE(IsDocumentationIpv6(*ip));
  EXPECT_EQ(FormatIpv6(*ip), "2001:db8::1");
  EXPECT_FALSE(IsDocumentationIpv6(*ParseIpv6("2001:db9::1")));
  EXPECT_FALSE(ParseIpv6("2001:db8::g").ok());
  EXPECT_FALSE(ParseIpv6("198.18.0.1").ok());
}

}  // namespace
}  // namespace fg
