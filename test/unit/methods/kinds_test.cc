// The test kinds' sections of a plan (methods/kinds.cc registers them; each
// kind's Parse reads its own keys).
#include "methods/kinds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "methods/burst.h"
#include "methods/latency.h"
#include "methods/load_balance.h"
#include "methods/throughput.h"

namespace fg::methods {
namespace {

using ::testing::HasSubstr;
using config::FormatLocation;

TEST(TestKinds, EachIsRegisteredOnceAndFoundByItsKey) {
  std::set<std::string_view> keys;
  for (const TestKind* k : TestKinds()) {
    EXPECT_TRUE(keys.insert(k->key()).second) << k->key();
    EXPECT_EQ(FindTestKind(k->key()), k);
    // Its section takes what every test has and its own keys, nothing else.
    auto bad = ParsePlan("k.yaml", "dut_counters: [c]\nstreams: [{name: s, rate: 1 kpps}]\ntests:\n  - " +
                                       std::string(k->key()) + ": {nonsense: 1}\n");
    ASSERT_FALSE(bad.ok()) << k->key();
    EXPECT_THAT(std::string(bad.status().message()),
                HasSubstr("unknown field 'nonsense'; allowed here: name, streams, warmup, tester_limit_retries"))
        << k->key();
  }
  EXPECT_GE(keys.size(), 4u);
  EXPECT_EQ(FindTestKind("soak"), nullptr);
}

TEST(TestKinds, AnItemWithoutAKindNamesEveryKind) {
  auto plan = ParsePlan("k.yaml", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - {}\n");
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_THAT(message, HasSubstr("a test names its kind: throughput, latency, "));
  for (const TestKind* k : TestKinds()) EXPECT_THAT(message, HasSubstr(std::string(k->key()))) << k->key();
}

TEST(TestKinds, EachKindDescribesAndEstimatesItsOwnParameters) {
  auto plan = ParsePlan("k.yaml", R"(
dut_counters: [c]
streams: [{name: a, rate: 1 kpps}, {name: b, rate: 1 kpps}]
tests:
  - throughput: {min: 10 %, max: 100 %, precision: 10 %, trial_duration: 2 s, warmup: none}
  - latency: {load: 20 %, runs: 3, trial_duration: 4 s, warmup: 1 s}
  - burst: {max_frames: 1024, repetitions: 10, gap: 100 ms, incast: [1, 2]}
  - load_balance: {links: [l0, l1], runs: 2, trial_duration: 5 s, warmup: none}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> described;
  std::vector<double> seconds;
  for (const config::TestSpec& t : plan->tests) {
    described.push_back(FindTestKind(t.kind)->Describe(t));
    seconds.push_back(FindTestKind(t.kind)->EstimateSeconds(t, 100'000'000));
  }
  EXPECT_EQ(described, (std::vector<std::string>{
                           "throughput, binary search",
                           "latency, 3 runs of 4.000 s at 20.000 % of line",
                           "burst, 1..1024 frames, 10 repetitions per length",
                           "load balance over 2 links, 2 run(s) of 5.000 s at 50.000 % of line",
                       }));
  // binary: (2 + ceil(log2(0.9 / 0.1))) trials of 2 s + 100 ms drain
  EXPECT_DOUBLE_EQ(seconds[0], 6 * 2.1);
  EXPECT_DOUBLE_EQ(seconds[1], 1 + 3 * 4.1);
  // two incast ratios x (1 + ceil(log2(1024))) trials of 10 x 100 ms + drain
  EXPECT_DOUBLE_EQ(seconds[2], 2 * 11 * 1.1);
  EXPECT_DOUBLE_EQ(seconds[3], 2 * 5.1);
}

TEST(TestKinds, MatrixEntriesKeepWhereTheyAreWritten) {
  auto plan = methods::ParsePlan("m.yaml",
                        "ports: [{name: a}, {name: b}]\n"
                        "streams: [{name: s, port: a, rx_port: b, rate: 1 kpps}]\n"
                        "tests:\n"
                        "  - throughput: {message_sizes: [64, 128], qps: [2], directions: [bi]}\n");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const auto& t = plan->tests[0].As<ThroughputParams>();
  ASSERT_EQ(t.message_sizes_at.size(), 2u);
  EXPECT_EQ(FormatLocation("m.yaml", t.message_sizes_at[1]), "m.yaml:4:38");
  ASSERT_EQ(t.qps_at.size(), 1u);
  EXPECT_EQ(FormatLocation("m.yaml", t.qps_at[0]), "m.yaml:4:50");
  ASSERT_EQ(t.directions_at.size(), 1u);
  EXPECT_EQ(FormatLocation("m.yaml", t.directions_at[0]), "m.yaml:4:67");
  EXPECT_EQ(FormatLocation("m.yaml", plan->streams[0].rate_at), "m.yaml:2:48");
}

TEST(TestKinds, ThroughputTestsWithTheirDefaults) {
  auto plan = methods::ParsePlan("t.yaml", R"(
streams: [{name: a, rate: 1 Mpps}, {name: b, rate: 1 Mpps}]
tests:
  - throughput: {name: rfc2544, streams: [b], precision: 0.1 %, trial_duration: 30 s}
  - throughput:
      search: multi_goal
      min: 5 %
      goals: [{name: NDR, loss: 0 %}, {name: PDR, loss: 0.5 %, final_duration: 120 s, width: 1 %}]
  - throughput: {name: defaults, search: multi_goal}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->tests.size(), 3u);
  EXPECT_EQ(plan->tests[0].name, "rfc2544");
  EXPECT_EQ(plan->tests[0].streams, std::vector<size_t>{1});
  const auto& b = plan->tests[0].As<ThroughputParams>();
  EXPECT_EQ(b.search, ThroughputParams::Search::kBinary);
  EXPECT_DOUBLE_EQ(b.precision, 0.001);
  EXPECT_DOUBLE_EQ(b.min_load, 0.01);
  EXPECT_DOUBLE_EQ(b.max_load, 1.0);
  EXPECT_EQ(b.trial_duration_ns, 30'000'000'000);
  EXPECT_EQ(plan->tests[1].streams, (std::vector<size_t>{0, 1}));  // all by default
  const auto& m = plan->tests[1].As<ThroughputParams>();
  EXPECT_DOUBLE_EQ(m.min_load, 0.05);
  ASSERT_EQ(m.goals.size(), 2u);
  EXPECT_DOUBLE_EQ(m.goals[1].loss_ratio, 0.005);
  EXPECT_EQ(m.goals[1].final_duration_ns, 120'000'000'000);
  EXPECT_DOUBLE_EQ(m.goals[1].width, 0.01);
  EXPECT_EQ(m.goals[0].final_duration_ns, 60'000'000'000);  // the test's trial duration
  const auto& d = plan->tests[2].As<ThroughputParams>();
  ASSERT_EQ(d.goals.size(), 2u);  // NDR 0 %, PDR 0.5 % by default
  EXPECT_EQ(d.goals[1].name, "PDR");
}

TEST(TestKinds, LoadBalanceTestAndDutCounters) {
  auto plan = methods::ParsePlan("t.yaml", R"(
dut_counters: [lab.py, counters]
streams: [{name: a, rate: 1 Mpps}]
lab: {spines: 2}   # tools/lab.py's; fabricgen only checks it is a map
tests:
  - load_balance: {links: [l0, l1, l2], load: 2 %, runs: 3, trial_duration: 5 s}
)");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->dut_counters, (std::vector<std::string>{"lab.py", "counters"}));
  EXPECT_EQ(plan->tests[0].kind, "load_balance");
  EXPECT_EQ(plan->tests[0].name, "load_balance");
  const auto& t = plan->tests[0].As<LoadBalanceParams>();
  EXPECT_EQ(t.links, (std::vector<std::string>{"l0", "l1", "l2"}));
  EXPECT_DOUBLE_EQ(t.load, 0.02);
  EXPECT_EQ(t.runs, 3);
  EXPECT_EQ(t.trial_duration_ns, 5'000'000'000);
}

struct BadCase {
  const char* name;
  const char* yaml;
  const char* expect;  // substring of the message
};

class BadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadTest, NamesFileLineColumnAndField) {
  auto plan = ParsePlan("bad.yaml", GetParam().yaml);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(GetParam().expect));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadTest,
    ::testing::Values(
        BadCase{"percent_without_sign",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - throughput: {search: binary, precision: 0.5}\n",
                "bad.yaml:3:45: tests[0].throughput.precision: '0.5' needs a % sign"},
        BadCase{"goals_need_multi_goal",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - throughput: {goals: [{name: N, loss: 0 %}]}\n",
                "goals belong to search: multi_goal"},
        BadCase{"load_balance_without_dut_counters",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - load_balance: {links: [x, y]}\n",
                "bad.yaml:3:19: tests[0].load_balance: a load_balance test reads the DUT's link counters"},
        BadCase{"load_balance_one_link",
                "dut_counters: [c]\nstreams: [{name: s, rate: 1 kpps}]\ntests:\n  - load_balance: {links: [x]}\n",
                "bad.yaml:4:27: tests[0].load_balance.links: links: name at least two parallel links"},
        BadCase{"nan_percent", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - throughput: {min: nan %}\n",
                "bad.yaml:3:23: tests[0].throughput.min: 'nan %' is not a percentage; expected a finite number"},
        BadCase{"inf_percent", "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - latency: {load: inf %}\n",
                "bad.yaml:3:21: tests[0].latency.load: 'inf %' is not a percentage"},
        BadCase{"bi_without_rx_port",
                "streams: [{name: s, rate: 1 kpps}]\ntests:\n  - throughput: {directions: [uni, bi]}\n",
                "bad.yaml:3:36: tests[0].throughput.directions[1]: 'bi' also runs each stream back from its rx_port "
                "to its port, but stream 's' is received on its own port 'loop0'"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace fg::methods
