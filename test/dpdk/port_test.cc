#include "port/port.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rte_ethdev.h>

#include "dpdk_test_env.h"

namespace fg::port {
namespace {

using fg::testing::NewVdev;
using ::testing::HasSubstr;

TEST(Port, LoopbackOpensStartsAndReportsCapabilities) {
  std::string dev = NewVdev("net_ring");
  auto p = Port::Open(PortOptions{.name = "a", .dpdk_name = dev, .rx_queues = 2, .tx_queues = 2});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Start().ok());
  const Capabilities& c = (*p)->capabilities();
  EXPECT_EQ(c.driver, "net_ring");
  EXPECT_EQ(c.device, dev);
  EXPECT_TRUE(c.link_up);
  EXPECT_EQ(c.link_speed_mbps, 10000u);
  EXPECT_EQ(c.line_bps(), 10e9);
  EXPECT_FALSE(c.rx_hw_timestamp);  // no virtual PMD advertises it (dpdk.md)
  EXPECT_FALSE(c.read_clock);
  EXPECT_EQ((*p)->options().mbufs, MbufsNeeded((*p)->options()));
  EXPECT_EQ((*p)->stats().tx_packets, 0u);
  // net_ring has no RSS: two queues are filled as the PMD does, the owners' handoff does the rest.
  EXPECT_EQ(c.rss_offloads, 0u);
  EXPECT_EQ((*p)->rx_spread().rss_hf, 0u);
  EXPECT_THAT((*p)->rx_spread().description, HasSubstr("none: the PMD offers no RSS over IP/UDP"));
  (*p)->Stop();
}

// ports[].link_speed: the line rate loads refer to, instead of the PMD's nominal one, and said so.
TEST(Port, ThePlansLinkSpeedIsTheLineRate) {
  auto p = Port::Open(PortOptions{.name = "n", .dpdk_name = NewVdev("net_null"), .link_speed_mbps = 400'000});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->capabilities().line_bps(), 400e9);
  bool said = false;
  for (const std::string& n : (*p)->notes()) said = said || n.find("line rate 400.000 Gbit/s as the plan sets it") != n.npos;
  EXPECT_TRUE(said);
  ASSERT_TRUE((*p)->Start().ok());
  EXPECT_EQ((*p)->capabilities().line_bps(), 400e9);  // after the link is read again at start
  (*p)->Stop();
}

// What a NIC offers decides the hash asked for: IP and UDP where it can, nothing else.
TEST(Port, RssHashesWhatStreamsDifferByWhereThePmdOffersIt) {
  const uint64_t mlx5_like = RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP;
  const RxSpread four = ChooseRxSpread(mlx5_like, 4);
  EXPECT_EQ(four.rss_hf, RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
                             RTE_ETH_RSS_NONFRAG_IPV6_UDP);
  EXPECT_EQ(four.description, "rss: ipv4, ipv6, ipv4-udp, ipv6-udp (4 queues)");
  const RxSpread v4 = ChooseRxSpread(RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP, 2);
  EXPECT_EQ(v4.rss_hf, RTE_ETH_RSS_IPV4);
  EXPECT_EQ(v4.description, "rss: ipv4 (2 queues)");
  EXPECT_EQ(ChooseRxSpread(RTE_ETH_RSS_NONFRAG_IPV4_TCP, 2).rss_hf, 0u);  // nothing a stream varies
  EXPECT_EQ(ChooseRxSpread(mlx5_like, 1).rss_hf, 0u);                    // one queue: no RSS asked
  EXPECT_EQ(ChooseRxSpread(mlx5_like, 1).description, "one queue");
}

TEST(Port, JumboMtuGetsJumboMbufs) {
  std::string dev = NewVdev("net_ring");
  auto p = Port::Open(PortOptions{.name = "j", .dpdk_name = dev, .mtu = 9000});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(MbufDataRoom(9000), 9000u + 26 + 128);
}

TEST(Port, TooManyQueuesIsRefusedNotClamped) {
  std::string dev = NewVdev("net_ring");
  auto p = Port::Open(PortOptions{.name = "q", .dpdk_name = dev, .rx_queues = 17});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("port 'q'"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("at most 16 / 16"));
}

TEST(Port, UnknownDeviceListsThePortsPresent) {
  auto p = Port::Open(PortOptions{.name = "x", .dpdk_name = "net_nothing9"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("no DPDK port named 'net_nothing9'"));
}

TEST(Port, TooSmallPoolFailsWithAdvice) {
  std::string dev = NewVdev("net_ring");
  // 16 M mbufs of 2 KiB cannot fit in the test's 512 MB.
  auto p = Port::Open(PortOptions{.name = "big", .dpdk_name = dev, .mbufs = 16u << 20});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("give EAL more memory"));
}

}  // namespace
}  // namespace fg::port
