// The plan's `ranks:` section: placement, addresses, MACs, the QPs' frame,
// and every error located at its key.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fg::config {
namespace {

using ::testing::HasSubstr;

constexpr char kTwoPorts[] = R"(
ports:
  - {name: a, device: "net_null0"}
  - {name: b, device: "net_null1"}
)";

// A plan with two ports, these ranks and one stream (the ranks answer ARP,
// ND and echo while it runs).
absl::StatusOr<Plan> Ranks(const std::string& ranks) {
  return ParsePlan("r.yaml",
                   std::string(kTwoPorts) + "ranks: " + ranks + "\nstreams: [{name: s, port: a, rx_port: b, rate: 1 kpps}]\n");
}

// A kind that moves only the ranks' data (as the collective kinds will).
struct RanksOnlyKind : TestKindParser {
  std::string_view key() const override { return "ranks_only"; }
  std::vector<std::string_view> own_keys() const override { return {}; }
  bool needs_streams() const override { return false; }
  absl::StatusOr<std::shared_ptr<const TestParams>> Parse(const Plan&, const Node&, const TestSpec&) const override {
    return std::make_shared<TestParams>();
  }
};
struct StreamsKind : RanksOnlyKind {
  std::string_view key() const override { return "with_streams"; }
  bool needs_streams() const override { return true; }
};

TEST(Ranks, APlanWithRanksNeedsNoStreamsButSomethingToRun) {
  const RanksOnlyKind ranks_only;
  const StreamsKind with_streams;
  const std::string base = std::string(kTwoPorts) + "ranks: {count: 4}\n";
  auto plan = ParsePlan("r.yaml", base + "tests: [{ranks_only: {}}]\n", {&ranks_only, &with_streams});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->streams.empty());
  plan = ParsePlan("r.yaml", base, {&ranks_only, &with_streams});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "r.yaml:5:8: ranks: a plan without streams runs only tests over its ranks (tests: [...]); it has no tests, "
            "so there is nothing to run");
  plan = ParsePlan("r.yaml", base + "tests: [{with_streams: {}}]\n", {&ranks_only, &with_streams});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().message(),
            "r.yaml:6:24: tests[0].with_streams: a with_streams test sends the plan's streams, and this plan has none "
            "(its ranks exchange data in collective tests)");
}

TEST(Ranks, EveryPortByDefaultBlockPlacement) {
  auto plan = Ranks("{count: 5}");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(plan->ranks.has_value());
  const RanksSpec& r = *plan->ranks;
  EXPECT_EQ(r.count, 5u);
  EXPECT_EQ(r.ports, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(r.qps_per_pair, 1u);
  EXPECT_EQ(r.message, 65536u);
  EXPECT_EQ(r.pmtu, 1024u);
  EXPECT_TRUE(r.go_back_n);
  // block: 3 ranks on a (the first 5 % 2 ports one more), 2 on b.
  const std::vector<Rank> placed = PlaceRanks(r);
  ASSERT_EQ(placed.size(), 5u);
  const std::vector<std::string> ips = {"198.18.0.1", "198.18.0.2", "198.18.0.3", "198.18.16.1", "198.18.16.2"};
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(placed[i].port, i < 3 ? 0u : 1u) << i;
    EXPECT_EQ(FormatIp(placed[i].ip), ips[i]) << i;
    EXPECT_EQ(placed[i].index_on_port, i < 3 ? i : i - 3) << i;
  }
  EXPECT_EQ(FormatMac(placed[4].mac), "02:fa:6e:00:00:04");
  EXPECT_EQ(FormatMac(RankMac(1023)), "02:fa:6e:00:03:ff");
}

TEST(Ranks, RoundRobinIPv6AndTheQpsFrame) {
  auto plan = Ranks(
      "{count: 4, placement: round_robin, first_address: {a: '2001:db8:a::1', b: '2001:db8:b::1'}, qps_per_pair: 2, "
      "message: 1 MiB, pmtu: 4096, connect: cm, dcqcn: connectx, retransmit: {timeout: 2 ms}, "
      "entropy: {mode: round_robin, values: 8}}");
  ASSERT_FALSE(plan.ok());  // pmtu 4096 needs a jumbo MTU
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("r.yaml:5:"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("ranks.pmtu 4096 on port 'a'"));
  plan = Ranks(
      "{count: 4, placement: round_robin, first_address: {a: '2001:db8:a::1', b: '2001:db8:b::1'}, qps_per_pair: 2, "
      "message: 1 MiB, pmtu: 1024, connect: cm, dcqcn: connectx, retransmit: {timeout: 2 ms}, "
      "entropy: {mode: round_robin, values: 8}}");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const RanksSpec& r = *plan->ranks;
  const std::vector<Rank> placed = PlaceRanks(r);
  EXPECT_EQ(placed[2].port, 0u);
  EXPECT_EQ(FormatIp(placed[2].ip), "2001:db8:a::2");
  EXPECT_EQ(FormatIp(placed[3].ip), "2001:db8:b::2");
  const FrameSpec f = RankQpFrame(r, placed[3], placed[0]);
  EXPECT_EQ(f.kind, FrameKind::kRoce);
  EXPECT_EQ(f.encap.udp_dst, 4791);
  EXPECT_EQ(f.roce.op, RoceSpec::Op::kWrite);
  EXPECT_EQ(f.roce.message, 1u << 20);
  EXPECT_TRUE(f.roce.connect_cm);
  ASSERT_TRUE(f.roce.dcqcn.has_value());
  EXPECT_EQ(f.roce.dcqcn->preset, "connectx");
  EXPECT_EQ(f.roce.retransmit_timeout_ns, 2'000'000);
  EXPECT_EQ(f.entropy.mode, EntropySpec::Mode::kRoundRobin);
  EXPECT_EQ(f.entropy.values, 8u);
  EXPECT_TRUE(f.encap.l3.ipv6);
  EXPECT_EQ(FormatIpv6(f.encap.l3.src6), "2001:db8:b::2");
  EXPECT_EQ(FormatIpv6(f.encap.l3.dst6), "2001:db8:a::1");
  EXPECT_EQ(FormatMac(f.encap.src_mac), "02:fa:6e:00:00:03");
  EXPECT_EQ(FormatMac(f.encap.dst_mac), "02:fa:6e:00:00:00");
}

struct RanksError {
  const char* name;
  const char* ranks;
  const char* expect;
};
class BadRanks : public testing::TestWithParam<RanksError> {};

TEST_P(BadRanks, NameTheLineColumnAndKey) {
  auto plan = Ranks(GetParam().ranks);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(GetParam().expect));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadRanks,
    testing::Values(
        RanksError{"one_rank", "{count: 1}", "r.yaml:5:16: ranks.count: 1 is out of range"},
        RanksError{"too_many", "{count: 1025}", "ranks.count: 1025 is out of range"},
        RanksError{"unknown_port", "{count: 2, ports: [c]}", "r.yaml:5:27: ranks.ports[0]: unknown port 'c'; ports in this plan: a, b"},
        RanksError{"twice", "{count: 2, ports: [a, a]}", "port 'a' is listed twice"},
        RanksError{"placement", "{count: 2, placement: spread}", "ranks.placement: "},
        RanksError{"partial_addresses", "{count: 2, first_address: {a: 198.18.0.1}}",
                   "ranks.first_address: no address for port 'b'"},
        RanksError{"mixed_families", "{count: 2, first_address: {a: 198.18.0.1, b: '2001:db8::1'}}",
                   "ranks.first_address.b: the ranks' addresses are all IPv4 or all IPv6"},
        RanksError{"overlap", "{count: 8, first_address: {a: 198.18.0.1, b: 198.18.0.3}}",
                   "ranks.first_address.b: the ranks of port 'b' (198.18.0.3, 4 addresses) overlap those of port 'a' "
                   "(198.18.0.1, 4)"},
        RanksError{"wraps", "{count: 4, first_address: {a: 255.255.255.255, b: 198.18.0.1}}",
                   "255.255.255.255 + 2 ranks passes the end of the address space"},
        RanksError{"not_an_ip", "{count: 2, first_address: {a: x, b: 198.18.0.1}}",
                   "ranks.first_address.a: 'x' is not an IPv4 or IPv6 address"},
        RanksError{"qps", "{count: 2, qps_per_pair: 65}", "ranks.qps_per_pair: 65 is out of range"},
        RanksError{"pmtu", "{count: 2, pmtu: 1000}", "ranks.pmtu: 1000 is not a path MTU"},
        RanksError{"message", "{count: 2, message: 8}", "ranks.message: "},
        RanksError{"unknown_key", "{count: 2, qps: 2}", "ranks.qps: unknown field 'qps'"},
        RanksError{"retransmit", "{count: 2, retransmit: sometimes}", "ranks.retransmit: "},
        RanksError{"entropy", "{count: 2, entropy: {mode: flowlet}}", "flowlet entropy needs a gap"}),
    [](const testing::TestParamInfo<RanksError>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace fg::config
