// endpoint/host: a port's hosts are its streams' source addresses (each
// flow's when they vary) and the destinations of the streams it receives.
#include "endpoint/host.h"

#include <gtest/gtest.h>

#include "config/plan.h"

namespace fg::endpoint {
namespace {

TEST(Hosts, EveryFlowsSourceIsAHostOfItsTxPortAndAnswersComeFromTheirDestination) {
  auto plan = config::ParsePlan("hosts.yaml", R"(
version: 1
ports:
  - {name: a}
  - {name: b, respond: true}
streams:
  - name: v4
    port: a
    rx_port: b
    flows: 4
    vary: [src_ip]
    frame: {src_mac: "02:00:00:00:00:0a", dst_mac: "02:00:00:00:00:0b",
            src_ip: 198.18.0.10, dst_ip: 198.19.0.1}
    rate: 1 kpps
  - name: v6
    port: b
    rx_port: a
    frame: {size: 128, l3: ipv6, src_mac: "02:00:00:00:00:0b", src_ip: "2001:db8::b", dst_ip: "2001:db8::a"}
    rate: 1 kpps
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<PortHosts> h = HostsOfPlan(*plan);
  ASSERT_EQ(h.size(), 2u);
  const MacAddr a{{0x02, 0, 0, 0, 0, 0x0a}}, b{{0x02, 0, 0, 0, 0, 0x0b}};
  EXPECT_EQ(h[0].ipv4_count(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_NE(h[0].Find(Ipv4Addr{0xC612000A + i}), nullptr) << i;
    EXPECT_EQ(*h[0].Find(Ipv4Addr{0xC612000A + i}), a);
  }
  EXPECT_EQ(h[0].Find(Ipv4Addr{0xC612000E}), nullptr);  // a fifth flow's address: none
  EXPECT_EQ(h[0].first4()->first, Ipv4Addr{0xC612000A});
  // Port b responds to v4: its answers come from v4's destination, with v4's destination MAC.
  ASSERT_NE(h[1].Find(Ipv4Addr{0xC6130001}), nullptr);
  EXPECT_EQ(*h[1].Find(Ipv4Addr{0xC6130001}), b);
  const Ipv6Addr b6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b}};
  ASSERT_NE(h[1].Find(b6), nullptr);
  EXPECT_EQ(h[1].ipv6_count(), 1u);
  // Port a receives v6 without responding: v6's destination is its host, with the port's own MAC.
  const Ipv6Addr a6{{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a}};
  ASSERT_NE(h[0].Find(a6), nullptr);
  EXPECT_EQ(*h[0].Find(a6), kPortMac);
  EXPECT_EQ(h[0].ipv6_count(), 1u);
  EXPECT_FALSE(h[0].first6().has_value());  // a destination is never the source of a gateway's resolution
}

TEST(Hosts, AStreamReceivedOnItsOwnPortGoesToAPeerWhoseAddressIsNoHost) {
  auto plan = config::ParsePlan("peer.yaml", R"(
version: 1
ports:
  - {name: a}
streams:
  - {name: s, port: a, rx_port: a, rate: 1 kpps, frame: {src_ip: 198.18.0.1, dst_ip: 198.18.0.254}}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<PortHosts> h = HostsOfPlan(*plan);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_NE(h[0].Find(Ipv4Addr{0xC6120001}), nullptr);
  EXPECT_EQ(h[0].Find(Ipv4Addr{0xC61200FE}), nullptr);
  EXPECT_EQ(h[0].ipv4_count(), 1u);
}

TEST(Hosts, EveryRankIsAHostOfItsPortWithItsOwnMac) {
  auto plan = config::ParsePlan("ranks.yaml", R"(
version: 1
ports:
  - {name: a}
  - {name: b}
ranks: {count: 3, placement: round_robin, first_address: {a: 198.18.0.1, b: 198.19.0.1}}
streams:
  - {name: s, port: a, rx_port: b, rate: 1 kpps, frame: {src_ip: 198.18.100.1, dst_ip: 198.19.100.1}}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<PortHosts> h = HostsOfPlan(*plan);
  ASSERT_EQ(h.size(), 2u);
  // Ranks 0 and 2 on a (198.18.0.1, .2), rank 1 on b (198.19.0.1).
  ASSERT_NE(h[0].Find(Ipv4Addr{0xC6120002}), nullptr);
  EXPECT_EQ(*h[0].Find(Ipv4Addr{0xC6120002}), config::RankMac(2));
  EXPECT_EQ(*h[0].Find(Ipv4Addr{0xC6120001}), config::RankMac(0));
  EXPECT_EQ(*h[1].Find(Ipv4Addr{0xC6130001}), config::RankMac(1));
  EXPECT_EQ(h[0].ipv4_count(), 3u);  // and the stream's source
  EXPECT_EQ(h[1].ipv4_count(), 2u);  // and the stream's destination
  EXPECT_EQ(h[1].Find(Ipv4Addr{0xC6120001}), nullptr);
  ASSERT_TRUE(h[1].first4().has_value());  // the source of the port's gateway resolution: its first rank
  EXPECT_EQ(h[1].first4()->first, Ipv4Addr{0xC6130001});
}

}  // namespace
}  // namespace fg::endpoint
