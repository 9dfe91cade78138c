#include "config/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fg::config {
namespace {

using ::testing::HasSubstr;

constexpr char kGood[] = R"(version: 1
name: two streams
duration: 2 s
ports:
  - name: p0
    device: net_null0
    mtu: 9000
  - name: p1
streams:
  - name: small
    port: p0
    rx_port: p1
    rate: 10 kpps
    count: 1000
    frame:
      size: 68 B   # 64 B + the 802.1Q tag
      vlan: {id: 10, pcp: 3}
      dst_ip: 198.19.0.9
  - name: big
    rate: 40%
    frame: {size: 9018}
)";

TEST(Plan, ParsesATypicalPlan) {
  auto plan = ParsePlan("good.yaml", kGood);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->name, "two streams");
  EXPECT_EQ(plan->duration_ns, 2'000'000'000);
  ASSERT_EQ(plan->ports.size(), 2u);
  EXPECT_EQ(plan->ports[0].device, "net_null0");
  EXPECT_EQ(plan->ports[0].mtu, 9000u);
  EXPECT_EQ(plan->ports[1].device, kLoopbackDevice);
  ASSERT_EQ(plan->streams.size(), 2u);
  const StreamSpec& s = plan->streams[0];
  EXPECT_EQ(s.port, 0u);
  EXPECT_EQ(s.rx_port, 1u);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.rate.kind, Rate::Kind::kPps);
  ASSERT_TRUE(s.frame.vlan.has_value());
  EXPECT_EQ(s.frame.vlan->id, 10);
  EXPECT_EQ(s.frame.vlan->pcp, 3);
  EXPECT_EQ(s.frame.dst_ip.value, 0xC6130009u);
  EXPECT_EQ(plan->streams[1].port, 0u);  // defaults to the first port
  EXPECT_EQ(plan->streams[1].frame.size, 9018u);
}

TEST(Plan, NoPortsMeansTheBuiltInLoopback) {
  auto plan = ParsePlan("p.yaml", "streams:\n  - {name: s, rate: 1 kpps}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->ports.size(), 1u);
  EXPECT_EQ(plan->ports[0].device, kLoopbackDevice);
}

// Each invalid plan gives exactly one error naming file:line:column and field.
struct BadCase {
  const char* name;
  const char* yaml;
  const char* expect;  // substring of the message
};

class BadPlan : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadPlan, NamesFileLineColumnAndField) {
  auto plan = ParsePlan("bad.yaml", GetParam().yaml);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(GetParam().expect));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadPlan,
    ::testing::Values(
        BadCase{"misspelt_key", "streams:\n  - name: s\n    rtae: 1 kpps\n",
                "bad.yaml:3:5: streams[0].rtae: unknown field 'rtae' (did you mean 'rate'?)"},
        BadCase{"negative_rate", "streams:\n  - name: s\n    rate: -5 kpps\n",
                "bad.yaml:3:11: streams[0].rate: rate '-5 kpps' must be greater than zero"},
        BadCase{"missing_rate", "streams:\n  - name: s\n",
                "bad.yaml:2:5: streams[0]: missing required field 'streams[0].rate'"},
        BadCase{"missing_streams", "name: x\n", "bad.yaml:1:1: : missing required field 'streams'"},
        BadCase{"wrong_type", "streams:\n  - name: s\n    rate: 1 kpps\n    count: lots\n",
                "bad.yaml:4:12: streams[0].count: 'lots' is not an integer"},
        BadCase{"out_of_range_mtu", "ports:\n  - {name: p, mtu: 9001}\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:2:20: ports[0].mtu: 9001 B is out of range; expected 68 B to 9000 B"},
        BadCase{"frame_too_small", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 60}}\n",
                "streams[0].frame.size: 60 B is too small"},
        BadCase{"tagged_frame_too_small", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 64, vlan: {id: 1}}}\n",
                "bad.yaml:2:43: streams[0].frame.size: 64 B is too small: headers and the 16 B test signature need "
                "at least 66 B"},
        BadCase{"frame_over_mtu", "streams:\n  - {name: s, rate: 1 kpps, frame: {size: 1600}}\n",
                "streams[0].frame.size: a 1600 B frame carries 1582 B of IP packet, more than port 'loop0' MTU"},
        BadCase{"unknown_port", "streams:\n  - {name: s, port: p9, rate: 1 kpps}\n",
                "streams[0].port: unknown port 'p9'; ports in this plan: loop0"},
        BadCase{"duplicate_stream", "streams:\n  - {name: s, rate: 1 kpps}\n  - {name: s, rate: 1 kpps}\n",
                "bad.yaml:3:12: streams[1].name: stream name 's' is used twice"},
        BadCase{"bad_ip", "streams:\n  - {name: s, rate: 1 kpps, frame: {src_ip: 10.0.0}}\n",
                "streams[0].frame.src_ip: '10.0.0' is not an IPv4 address"},
        BadCase{"yaml_syntax", "streams: [\n", "bad.yaml:2:1: YAML syntax error"},
        BadCase{"not_a_list", "streams: {name: s}\n", "bad.yaml:1:10: streams: expected a list, found a map"},
        BadCase{"wrong_version", "version: 2\nstreams: [{name: s, rate: 1 kpps}]\n",
                "bad.yaml:1:10: version: 2 is out of range"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Plan, MissingFileNamesTheFile) {
  auto plan = LoadPlan("/nonexistent/plan.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("/nonexistent/plan.yaml: cannot open plan"));
}

}  // namespace
}  // namespace fg::config
